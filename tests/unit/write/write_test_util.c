/* Helpers of the writer's tests (write_test_util.h). */
#include "write_test_util.h"

#include "tfs_fragment.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wt_dump_release(struct wt_dump *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->lines[i]);
	free(d->lines);
	memset(d, 0, sizeof(*d));
}

static void put_hex(char **s, size_t *len, size_t *cap, const uint8_t *p,
		    size_t n)
{
	static const char hex[] = "0123456789abcdef";

	while (*len + 2 * n + 4 > *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*s = realloc(*s, *cap);
	}
	for (size_t i = 0; i < n; i++) {
		(*s)[(*len)++] = hex[p[i] >> 4];
		(*s)[(*len)++] = hex[p[i] & 15];
	}
	(*s)[*len] = '\0';
}

void wt_dump_batch(struct wt_dump *out, const struct tfs_batch *b)
{
	for (uint64_t i = 0; i < b->cell_num; i++) {
		char *s = NULL;
		size_t len = 0, cap = 0;

		put_hex(&s, &len, &cap, NULL, 0);
		for (size_t f = 0; f < b->column_num; f++) {
			const struct tfs_column *c = &b->columns[f];

			put_hex(&s, &len, &cap, NULL, 0); /* room for "|N" */
			if (f)
				s[len++] = '|';
			if (c->validity && !c->validity[i]) {
				s[len++] = 'N';
				s[len] = '\0';
				continue;
			}
			if (c->var) {
				put_hex(&s, &len, &cap, c->data + c->offsets[i],
					(size_t)(c->offsets[i + 1] - c->offsets[i]));
			} else {
				size_t cs = (size_t)(c->data_len / b->cell_num);

				put_hex(&s, &len, &cap, c->data + i * cs, cs);
			}
		}
		if (out->n == out->cap) {
			out->cap = out->cap ? 2 * out->cap : 256;
			out->lines = realloc(out->lines, out->cap * sizeof(char *));
		}
		out->lines[out->n++] = s;
	}
}

void wt_read(struct tfs_array *a, const struct tfs_range *sub,
	     struct wt_dump *out)
{
	struct tfs_query_opts qo;
	struct tfs_query *q;
	struct tfs_diag d;
	const struct tfs_batch *b;

	memset(out, 0, sizeof(*out));
	memset(&qo, 0, sizeof(qo));
	qo.subarray = sub;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		wt_dump_batch(out, b);
	}
	tfs_query_close(q);
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void wt_dump_sort(struct wt_dump *d)
{
	if (d->n)
		qsort(d->lines, d->n, sizeof(char *), line_cmp);
}

void wt_expect_dump_eq(const struct wt_dump *got, const struct wt_dump *want)
{
	cr_expect_eq(got->n, want->n, "%zu cells read, %zu expected", got->n,
		     want->n);
	for (size_t i = 0, bad = 0; i < got->n && i < want->n && bad < 5; i++)
		if (strcmp(got->lines[i], want->lines[i])) {
			cr_expect_str_eq(got->lines[i], want->lines[i],
					 "cell %zu", i);
			bad++;
		}
}

void wt_expect_same_cells(struct tfs_array *a, struct tfs_array *b)
{
	struct wt_dump da, db;

	wt_read(a, NULL, &da);
	wt_read(b, NULL, &db);
	cr_expect_gt(da.n, 0);
	wt_expect_dump_eq(&db, &da);
	wt_dump_release(&da);
	wt_dump_release(&db);
}

/* Global order of two int32 coordinates (read.md §5, §6), written out
 * here again from the format description rather than shared with the
 * writer, so the two can check each other. */
static int order_cmp(const struct tfs_schema *s, const int32_t *a,
		     const int32_t *b)
{
	if (s->cell_order == TFS_HILBERT) {
		unsigned bits = 63 / 2;
		uint64_t xa[2], xb[2], ha, hb;

		for (int k = 0; k < 2; k++) {
			xa[k] = tfs_hilbert_map_num(TFS_INT32, &a[k], s->dims[k].domain[0],
						    s->dims[k].domain[1], bits);
			xb[k] = tfs_hilbert_map_num(TFS_INT32, &b[k], s->dims[k].domain[0],
						    s->dims[k].domain[1], bits);
		}
		ha = tfs_hilbert_index(xa, 2, bits);
		hb = tfs_hilbert_index(xb, 2, bits);
		if (ha != hb)
			return ha < hb ? -1 : 1;
		for (int k = 0; k < 2; k++)
			if (a[k] != b[k])
				return a[k] < b[k] ? -1 : 1;
		return 0;
	}
	for (int n = 0; n < 2; n++) {
		int k = s->tile_order == TFS_COL_MAJOR ? 1 - n : n;
		int32_t lo, ext;

		memcpy(&lo, s->dims[k].domain[0], 4);
		memcpy(&ext, s->dims[k].extent, 4);
		if ((a[k] - lo) / ext != (b[k] - lo) / ext)
			return (a[k] - lo) / ext < (b[k] - lo) / ext ? -1 : 1;
	}
	for (int n = 0; n < 2; n++) {
		int k = s->cell_order == TFS_COL_MAJOR ? 1 - n : n;

		if (a[k] != b[k])
			return a[k] < b[k] ? -1 : 1;
	}
	return 0;
}

/* Decodes the coordinate files of every fragment of a 2-D int32 sparse
 * array and checks its cells are in strict global order and inside their
 * tile's MBR. */
void wt_check_order_2d_i32(struct tfs_vfs *vfs, const char *path)
{
	struct tfs_diag dd, *d = &dd;
	struct tfs_arraydir *ad;
	/* Every fragment, also those stamped ahead of the clock. */
	struct tfs_arraydir_opts ao = { .t1 = UINT64_MAX - 1 };

	tfs_diag_init(d);
	cr_assert_eq(tfs_arraydir_open(vfs, path, &ao, &ad, d), TFS_E_OK,
		     "%s", tfs_diag_msg(d));
	cr_assert_gt(ad->fragment_num, 0);
	for (size_t fi = 0; fi < ad->fragment_num; fi++) {
		struct tfs_fragment *f = ad->fragments[fi];
		const struct tfs_schema *s = f->schema;
		const struct tfs_rtree *rt;
		int32_t *coords[2] = { NULL, NULL };
		uint64_t n = 0;

		cr_assert_eq(tfs_fragment_rtree(ad, f, &rt, d), TFS_E_OK);
		for (uint32_t k = 0; k < 2; k++) {
			uint32_t slot = tfs_fragment_dim_slot(f, k);
			const struct tfs_slot_tiles *st;
			char *fp = tfs_fragment_file_path(f, slot, TFS_FILE_FIXED);
			uint8_t *file;
			size_t flen;
			struct tfs_tile_ctx ctx = { .type = TFS_INT32, .cell_size = 4,
						    .fragment_version = f->footer.version };

			cr_assert_eq(tfs_fragment_slot_tiles(ad, f, slot, &st, d),
				     TFS_E_OK);
			cr_assert_eq(tfs_vfs_read_all(vfs, fp, 1 << 30, &file, &flen,
						      d),
				     TFS_E_OK);
			coords[k] = malloc(4 * f->cell_num + 4);
			n = 0;
			for (uint64_t t = 0; t < f->tile_num; t++) {
				uint64_t end = t + 1 < f->tile_num ? st->offsets[t + 1]
								   : flen;
				uint64_t cells = t + 1 < f->tile_num
							 ? s->capacity
							 : f->footer.last_tile_cell_num;

				cr_assert_eq(tfs_tile_decode(&s->dims[k].filters, &ctx,
							     (uint8_t *)(coords[k] + n),
							     4 * cells,
							     file + st->offsets[t],
							     end - st->offsets[t],
							     d),
					     TFS_E_OK, "%s", tfs_diag_msg(d));
				/* Every cell inside its tile's MBR. */
				for (uint64_t i = n; i < n + cells; i++) {
					int32_t lo, hi;

					memcpy(&lo, rt->leaves[t * 2 + k].lo, 4);
					memcpy(&hi, rt->leaves[t * 2 + k].hi, 4);
					cr_assert(coords[k][i] >= lo && coords[k][i] <= hi);
				}
				n += cells;
			}
			free(file);
			free(fp);
		}
		cr_assert_eq(n, f->cell_num);
		for (uint64_t i = 1; i < n; i++) {
			int32_t a[2] = { coords[0][i - 1], coords[1][i - 1] };
			int32_t b[2] = { coords[0][i], coords[1][i] };

			cr_assert_lt(order_cmp(s, a, b), 0,
				     "cells %" PRIu64 " and %" PRIu64
				     " out of global order: (%d, %d) then (%d, %d)",
				     i - 1, i, a[0], a[1], b[0], b[1]);
		}
		free(coords[0]);
		free(coords[1]);
	}
	tfs_arraydir_close(ad);
}

void wt_env_init(struct wt_env *e, unsigned read_threads)
{
	memset(e, 0, sizeof(*e));
	cr_assert_eq(tfs_vfs_mem_new(&e->vfs), TFS_E_OK);
	e->wo.vfs = e->vfs;
	e->wo.threads = 2;
	e->oo.vfs = e->vfs;
	/* Writes in quick succession are stamped ahead of the clock (each
	 * after the last, format/write.md §2): read from the future. */
	e->oo.timestamp = UINT64_C(5000000000000);
	e->oo.threads = read_threads;
	tfs_diag_init(&e->d);
}

void wt_env_free(struct wt_env *e)
{
	tfs_vfs_free(e->vfs);
}
