/* Box detection: which CSV files for a dense array are exactly one box in
 * row-major order (written as a streamed box), and the box found; and
 * the end-to-end result of a box write. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest_internal.h"
#include "tilefs/tilefs.h"

/* dense_2d_rowmajor: r in [1, 10], c in [1, 12], INT32; a, f, s. */
static bool detect(const char *array, const char *text, int32_t lo[2], int32_t hi[2])
{
	char path[1024], csv[64];
	struct tfs_array *a;
	struct tfs_diag d;
	uint8_t box[2][128][8];
	bool is_box;
	int fd = mkstemp(tfs_temp_template(csv, sizeof(csv), "/tmp", "tfs_box_"));

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(path, sizeof(path), "%s/%s", TFS_CORPUS_DIR, array);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(path, NULL, &a, &d), TFS_E_OK);
	cr_assert_eq(tfs__box_detect(tfs_array_schema(a), csv, NULL, 0, "b.csv", 3, &is_box,
				     box, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	for (uint32_t k = 0; is_box && k < tfs_array_schema(a)->dim_num; k++) {
		memcpy(&lo[k], box[0][k], 4);
		memcpy(&hi[k], box[1][k], 4);
	}
	tfs_array_close(a);
	unlink(csv);
	return is_box;
}

Test(box, row_major_boxes)
{
	int32_t lo[2], hi[2];

	cr_assert(detect("dense_2d_rowmajor",
			 "r,c,a,f,s\n2,3,0,0,x\n2,4,0,0,x\n3,3,0,0,x\n3,4,0,0,x\n", lo, hi));
	cr_assert(lo[0] == 2 && lo[1] == 3 && hi[0] == 3 && hi[1] == 4);
	/* Columns in another order; one row; one row of cells; one column. */
	cr_assert(detect("dense_2d_rowmajor", "s,c,a,r,f\nx,5,0,7,0\nx,6,0,7,0\n", lo, hi));
	cr_assert(lo[0] == 7 && lo[1] == 5 && hi[0] == 7 && hi[1] == 6);
	cr_assert(detect("dense_2d_rowmajor", "r,c,a,f,s\n10,12,0,0,x\n", lo, hi));
	cr_assert(lo[0] == 10 && hi[1] == 12);
	cr_assert(detect("dense_2d_rowmajor", "r,c,a,f,s\n1,1,0,0,x\n2,1,0,0,x\n3,1,0,0,x\n",
			 lo, hi));
	cr_assert(lo[0] == 1 && hi[0] == 3 && lo[1] == 1 && hi[1] == 1);
	cr_assert(detect("dense_1d", "d,a,b\n5,0,0\n6,0,0\n7,0,0\n", lo, hi));
	cr_assert(lo[0] == 5 && hi[0] == 7);
}

Test(box, not_boxes)
{
	int32_t lo[2], hi[2];
	static const char *const texts[] = {
		/* a cell missing, in the middle and at the end */
		"r,c,a,f,s\n2,3,0,0,x\n2,4,0,0,x\n3,4,0,0,x\n",
		"r,c,a,f,s\n2,3,0,0,x\n2,4,0,0,x\n3,3,0,0,x\n",
		/* column-major order */
		"r,c,a,f,s\n2,3,0,0,x\n3,3,0,0,x\n2,4,0,0,x\n3,4,0,0,x\n",
		/* a row twice */
		"r,c,a,f,s\n2,3,0,0,x\n2,3,0,0,x\n",
		/* rows of different widths */
		"r,c,a,f,s\n2,3,0,0,x\n2,4,0,0,x\n3,3,0,0,x\n3,4,0,0,x\n3,5,0,0,x\n",
		/* outside the domain, a bad value, too short for the dimension
		 * columns (other ragged rows are the ingest pass's to refuse),
		 * no dimension column */
		"r,c,a,f,s\n11,1,0,0,x\n",
		"r,c,a,f,s\n1,z,0,0,x\n",
		"r,c,a,f,s\n1\n",
		"c,a,f,s\n1,0,0,x\n",
		/* header only, empty */
		"r,c,a,f,s\n",
		"",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		cr_assert(!detect("dense_2d_rowmajor", texts[i], lo, hi), "%zu", i);
	/* Sparse arrays are never boxes. */
	cr_assert(!detect("sparse_2d_int", "x,y,a,s\n1,1,1,a\n", lo, hi));
}

static void cell_at(struct tfs_array *a, int32_t r, int32_t c, int32_t *av, char *s,
		    size_t cap)
{
	int32_t rc[2] = {r, c};
	struct tfs_range sub[2] = {
		{.lo = (const uint8_t *)&rc[0], .hi = (const uint8_t *)&rc[0], .lo_len = 4, .hi_len = 4},
		{.lo = (const uint8_t *)&rc[1], .hi = (const uint8_t *)&rc[1], .lo_len = 4, .hi_len = 4},
	};
	const char *const fields[] = {"a", "s"};
	struct tfs_query_opts qo = {.subarray = sub, .fields = fields, .field_num = 2};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK);
	cr_assert(b && b->cell_num == 1);
	memcpy(av, b->columns[0].data, 4);
	snprintf(s, cap, "%.*s", (int)(b->columns[1].offsets[1] - b->columns[1].offsets[0]),
		 (const char *)b->columns[1].data);
	tfs_query_close(q);
}

Test(box, written_as_a_dense_box)
{
	char tmp[64], cmd[2048], arr[1100], csv[1100], bad[1100];
	struct tfs_ingest_opts o = {.display_name = "b.csv"};
	struct tfs_ingest_result r;
	struct tfs_array *a;
	struct tfs_diag d;
	int32_t av;
	char s[32];
	FILE *f;

	cr_assert(mkdtemp(tfs_temp_template(tmp, sizeof(tmp), "/tmp", "tfs_boxw_")));
	snprintf(arr, sizeof(arr), "%s/a", tmp);
	snprintf(csv, sizeof(csv), "%s/b.csv", tmp);
	snprintf(bad, sizeof(bad), "%s/c.csv", tmp);
	snprintf(cmd, sizeof(cmd), "cp -r '%s/dense_2d_rowmajor' '%s'", TFS_CORPUS_DIR, arr);
	cr_assert_eq(system(cmd), 0);
	f = fopen(csv, "w");
	cr_assert(f);
	fprintf(f, "c,r,a,f,s\n");
	for (int row = 4; row <= 6; row++)
		for (int col = 2; col <= 11; col++)
			fprintf(f, "%d,%d,%d,0.5,\"v%d,%d\"\n", col, row, row * 100 + col, row, col);
	fclose(f);
	f = fopen(bad, "w");
	cr_assert(f);
	fprintf(f, "r,c,a,f,s\n1,1,1,0,x\n1,2,oops,0,x\n");
	fclose(f);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv(arr, csv, &o, &r, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(r.write.dense);
	cr_assert_eq(r.write.cell_num, 30);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv(arr, bad, &o, &r, &d), TFS_E_INVALID);
	cr_assert_str_eq(d.msg, "b.csv: line 3, column 3 ('a'): not an integer");
	cr_assert_eq(tfs_array_open(arr, NULL, &a, &d), TFS_E_OK);
	for (int row = 4; row <= 6; row++) {
		for (int col = 2; col <= 11; col++) {
			char want[32];

			cell_at(a, row, col, &av, s, sizeof(s));
			snprintf(want, sizeof(want), "v%d,%d", row, col);
			cr_assert_eq(av, row * 100 + col);
			cr_assert_str_eq(s, want);
		}
	}
	tfs_array_close(a);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

/* A file the box check gives up on is reported by the ingest pass with
 * the first problem in the file, not one the check ran into. */
Test(box, first_problem_reported)
{
	char tmp[64], cmd[2048], arr[1100], csv[1100];
	struct tfs_ingest_opts o = {.display_name = "e.csv"};
	struct tfs_ingest_result r;
	struct tfs_diag d;
	FILE *f;

	cr_assert(mkdtemp(tfs_temp_template(tmp, sizeof(tmp), "/tmp", "tfs_boxe_")));
	snprintf(arr, sizeof(arr), "%s/a", tmp);
	snprintf(csv, sizeof(csv), "%s/e.csv", tmp);
	snprintf(cmd, sizeof(cmd), "cp -r '%s/dense_2d_rowmajor' '%s'", TFS_CORPUS_DIR, arr);
	cr_assert_eq(system(cmd), 0);
	f = fopen(csv, "w");
	cr_assert(f);
	/* A bad attribute on line 2 (the check reads only coordinates),
	 * an unterminated quote on line 3 (the check's tokenizer stops
	 * there). */
	fprintf(f, "r,c,a,f,s\n1,1,zz,0,x\n1,2,1,0,\"x\n");
	fclose(f);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv(arr, csv, &o, &r, &d), TFS_E_INVALID);
	cr_assert_str_eq(d.msg, "e.csv: line 2, column 3 ('a'): not an integer");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}
