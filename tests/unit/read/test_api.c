/* Read engine through the public API: dense reads of any subarray must
 * agree cell by cell with the full read, whatever the batch size and the
 * number of decode threads; known values of corpus arrays; clean errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilefs/tilefs.h"
#include "tfs_format.h"

#define CORPUS TFS_CORPUS_DIR

/* All cells of a read, one byte string per cell and field. */
struct cells {
	size_t field_num;
	uint64_t n;
	size_t cap;
	char **vals;      /* n × field_num, heap strings of raw bytes */
	size_t *lens;
};

static void cells_free(struct cells *c)
{
	for (uint64_t i = 0; i < c->n * c->field_num; i++)
		free(c->vals[i]);
	free(c->vals);
	free(c->lens);
	memset(c, 0, sizeof(*c));
}

static void cells_add_batch(struct cells *c, const struct tfs_batch *b)
{
	c->field_num = b->column_num;
	for (uint64_t i = 0; i < b->cell_num; i++) {
		if ((c->n + 1) * c->field_num > c->cap) {
			c->cap = c->cap ? c->cap * 2 : 1024;
			while (c->cap < (c->n + 1) * c->field_num)
				c->cap *= 2;
			c->vals = realloc(c->vals, c->cap * sizeof(*c->vals));
			c->lens = realloc(c->lens, c->cap * sizeof(*c->lens));
		}
		for (size_t f = 0; f < b->column_num; f++) {
			const struct tfs_column *col = &b->columns[f];
			const uint8_t *p;
			size_t len, slot = c->n * c->field_num + f;

			if (col->var) {
				p = col->data + col->offsets[i];
				len = (size_t)(col->offsets[i + 1] - col->offsets[i]);
			} else {
				len = (size_t)(col->data_len / b->cell_num);
				p = col->data + i * len;
			}
			c->vals[slot] = malloc(len + 2);
			if (len)
				memcpy(c->vals[slot], p, len);
			c->vals[slot][len] = col->validity ? (char)col->validity[i] : 1;
			c->lens[slot] = len + 1;
		}
		c->n++;
	}
}

static void read_all(struct tfs_array *a, const struct tfs_range *sub,
		     uint64_t batch_cells, struct cells *out)
{
	struct tfs_query_opts qo = {.subarray = sub, .batch_cells = batch_cells};
	struct tfs_query *q;
	struct tfs_diag d;
	const struct tfs_batch *b;

	tfs_diag_init(&d);
	memset(out, 0, sizeof(*out));
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		cells_add_batch(out, b);
	}
	tfs_query_close(q);
}

static struct tfs_array *open_array(const char *name, unsigned threads)
{
	char path[1024];
	struct tfs_open_opts o = {.threads = threads};
	struct tfs_array *a;
	struct tfs_diag d;

	tfs_diag_init(&d);
	snprintf(path, sizeof(path), "%s/%s", CORPUS, name);
	cr_assert_eq(tfs_array_open(path, &o, &a, &d), TFS_E_OK, "%s: %s",
		     name, tfs_diag_msg(&d));
	return a;
}

static int64_t as_i64(uint8_t type, const uint8_t *p)
{
	return tfs_value_as_i64(type, p);
}

static void put_int(uint8_t type, uint8_t *dst, int64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)((uint64_t)v >> (8 * i));
	memcpy(dst, le, tfs_datatype_size(type));
}

/* Every random subarray must read exactly the matching cells of the full
 * read (row-major positions), with tiny and large batches. */
static void check_subarrays(const char *name)
{
	struct tfs_array *a = open_array(name, 2);
	const struct tfs_schema *s = tfs_array_schema(a);
	struct tfs_range ned[8], sub[8];
	uint8_t bounds[8][2][8];
	struct cells full, part;
	int64_t lo[8], hi[8];
	unsigned seed = 12345;

	cr_assert(s->dim_num <= 8);
	cr_assert(tfs_array_non_empty_domain(a, ned), "%s has cells", name);
	read_all(a, NULL, 0, &full);
	for (uint32_t k = 0; k < s->dim_num; k++) {
		lo[k] = as_i64(s->dims[k].type, ned[k].lo);
		hi[k] = as_i64(s->dims[k].type, ned[k].hi);
	}
	for (int round = 0; round < 12; round++) {
		int64_t slo[8], shi[8];
		uint64_t expect = 1;

		for (uint32_t k = 0; k < s->dim_num; k++) {
			uint64_t w = (uint64_t)(hi[k] - lo[k]) + 1;
			int64_t x = lo[k] + (int64_t)(rand_r(&seed) % w);
			int64_t y = lo[k] + (int64_t)(rand_r(&seed) % w);

			slo[k] = x < y ? x : y;
			shi[k] = x < y ? y : x;
			put_int(s->dims[k].type, bounds[k][0], slo[k]);
			put_int(s->dims[k].type, bounds[k][1], shi[k]);
			sub[k].lo = bounds[k][0];
			sub[k].hi = bounds[k][1];
			sub[k].lo_len = sub[k].hi_len = tfs_datatype_size(s->dims[k].type);
			expect *= (uint64_t)(shi[k] - slo[k]) + 1;
		}
		read_all(a, sub, round % 2 ? 7 : 0, &part);
		cr_assert_eq(part.n, expect, "%s: %lu cells, expected %lu", name,
			     (unsigned long)part.n, (unsigned long)expect);
		for (uint64_t i = 0; i < part.n; i++) {
			uint64_t rem = i, pos = 0, mul = 1;
			int64_t c[8];

			for (uint32_t k = s->dim_num; k-- > 0;) {
				uint64_t w = (uint64_t)(shi[k] - slo[k]) + 1;

				c[k] = slo[k] + (int64_t)(rem % w);
				rem /= w;
			}
			for (uint32_t k = s->dim_num; k-- > 0;) {
				pos += (uint64_t)(c[k] - lo[k]) * mul;
				mul *= (uint64_t)(hi[k] - lo[k]) + 1;
			}
			for (size_t f = 0; f < part.field_num; f++) {
				size_t ps = i * part.field_num + f;
				size_t fs = pos * full.field_num + f;

				cr_assert_eq(part.lens[ps], full.lens[fs],
					     "%s: cell %lu field %zu length",
					     name, (unsigned long)i, f);
				cr_assert(memcmp(part.vals[ps], full.vals[fs],
						 part.lens[ps]) == 0,
					  "%s: cell %lu field %zu differs", name,
					  (unsigned long)i, f);
			}
		}
		cells_free(&part);
	}
	cells_free(&full);
	tfs_array_close(a);
}

Test(dense, subarrays_match_full_read)
{
	static const char *const names[] = {
		"dense_1d", "dense_2d_rowmajor", "dense_2d_colmajor",
		"dense_2d_cell_row_tile_col", "dense_2d_cell_col_tile_row",
		"dense_3d", "dense_fragments_overlap", "dense_nullable",
		"dense_fill_values", "dense_cellvalnum", "dense_uint_dims",
		"dense_datetime_dim", "dense_extreme_domains", "filters_pipelines",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		check_subarrays(names[i]);
}

/* One thread and many threads decode to the same bytes. */
Test(dense, thread_count_does_not_change_result)
{
	struct tfs_array *a1 = open_array("dense_big_tile", 1);
	struct tfs_array *a4 = open_array("dense_big_tile", 4);
	struct cells c1, c4;

	read_all(a1, NULL, 0, &c1);
	read_all(a4, NULL, 100, &c4);
	cr_assert_eq(c1.n, c4.n);
	cr_assert_gt(c1.n, 0);
	for (uint64_t i = 0; i < c1.n * c1.field_num; i++) {
		cr_assert_eq(c1.lens[i], c4.lens[i]);
		cr_assert(memcmp(c1.vals[i], c4.vals[i], c1.lens[i]) == 0);
	}
	cells_free(&c1);
	cells_free(&c4);
	tfs_array_close(a1);
	tfs_array_close(a4);
}

/* Reads field `name` of a whole into one buffer: through the query's
 * own columns (dest NULL), or into dest of dest_bytes, checking that each
 * batch's column is the next part of dest exactly when `in_place`. */
static uint8_t *read_field(struct tfs_array *a, const char *name,
			   uint8_t *dest, uint64_t dest_bytes, bool in_place,
			   uint64_t *len)
{
	const char *fields[] = {name};
	struct tfs_query_opts qo = {.fields = fields, .field_num = 1,
				    .batch_cells = 5, .dest = dest,
				    .dest_bytes = dest_bytes};
	const struct tfs_batch *b;
	struct tfs_query *q;
	struct tfs_diag d;
	uint8_t *all = NULL;

	tfs_diag_init(&d);
	*len = 0;
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (;;) {
		const struct tfs_column *c;

		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		c = &b->columns[0];
		cr_assert_eq(c->data == dest + *len, in_place,
			     "%s: batch at %lu %s dest", name,
			     (unsigned long)*len, in_place ? "not in" : "in");
		all = realloc(all, *len + c->data_len);
		memcpy(all + *len, c->data, c->data_len);
		*len += c->data_len;
	}
	tfs_query_close(q);
	return all;
}

/* A dense read into the caller's memory gives the cells of a read through
 * the query's columns, in place batch after batch (fill values and
 * overlapping fragments included); a destination too small is not used. */
Test(dense, dest_gets_the_cells_in_place)
{
	static const char *const names[] = {
		"dense_1d", "dense_2d_colmajor", "dense_fragments_overlap",
		"dense_fill_values", "dense_3d", "dense_big_tile",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct tfs_array *a = open_array(names[i], 2);
		const struct tfs_schema *s = tfs_array_schema(a);
		const struct tfs_attr *at = NULL;
		uint64_t n, n2, n3;
		uint8_t *want, *dest, *got;

		for (uint32_t k = 0; k < s->attr_num && !at; k++)
			if (!s->attrs[k].var && !s->attrs[k].nullable)
				at = &s->attrs[k];
		cr_assert(at, "%s: a fixed-size attribute", names[i]);
		want = read_field(a, at->name, NULL, 0, false, &n);
		cr_assert_gt(n, 0, "%s", names[i]);
		dest = malloc(n);
		memset(dest, 0xAB, n);
		got = read_field(a, at->name, dest, n, true, &n2);
		cr_assert_eq(n2, n, "%s", names[i]);
		cr_assert(memcmp(dest, want, n) == 0, "%s: cells in dest",
			  names[i]);
		free(got);
		got = read_field(a, at->name, dest, n - 1, false, &n3);
		cr_assert_eq(n3, n, "%s", names[i]);
		cr_assert(memcmp(got, want, n) == 0, "%s", names[i]);
		free(got);
		free(want);
		free(dest);
		tfs_array_close(a);
	}
	{
		/* A sparse query ignores it. */
		struct tfs_array *a = open_array("sparse_2d_int", 2);
		uint8_t dest[4096];
		uint64_t n;

		free(read_field(a, "a", dest, sizeof(dest), false, &n));
		cr_expect_gt(n, 0);
		tfs_array_close(a);
	}
}

/* Values from dense_1d.json: d=1 -> a=-739, b=929.3292265413056. */
Test(dense, known_values_dense_1d)
{
	struct tfs_array *a = open_array("dense_1d", 0);
	struct cells c;
	int32_t v;
	double b;

	read_all(a, NULL, 0, &c);
	cr_assert_eq(c.n, 100);
	cr_assert_eq(c.field_num, 3);
	memcpy(&v, c.vals[1], 4);
	cr_assert_eq(v, -739);
	memcpy(&b, c.vals[2], 8);
	cr_assert_eq(b, 929.3292265413056);
	memcpy(&v, c.vals[0], 4);
	cr_assert_eq(v, 1);
	cells_free(&c);
	tfs_array_close(a);
}

Test(errors, missing_array_and_bad_subarray)
{
	struct tfs_array *a;
	struct tfs_query *q;
	struct tfs_diag d;
	struct tfs_range sub;
	int32_t lo = 0, hi = 1000;
	struct tfs_query_opts qo = {.subarray = &sub};

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(CORPUS "/no_such_array", NULL, &a, &d),
		     TFS_E_NOT_FOUND, "%s", tfs_diag_msg(&d));
	a = open_array("dense_1d", 0);
	sub.lo = (const uint8_t *)&lo;
	sub.hi = (const uint8_t *)&hi;
	sub.lo_len = sub.hi_len = 4;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_RANGE);
	cr_assert(strstr(tfs_diag_msg(&d), "outside the domain"));
	tfs_array_close(a);
}

/* Reads every cell of the corpus array `name` with max_tile_bytes at
 * limit; *cells: how many. */
static enum tfs_err read_with_tile_limit(const char *name, uint64_t limit,
					 uint64_t *cells, struct tfs_diag *d)
{
	struct tfs_open_opts o = {.max_tile_bytes = limit};
	struct tfs_query_opts qo = {0};
	const struct tfs_batch *b;
	struct tfs_array *a;
	struct tfs_query *q;
	char path[512];
	enum tfs_err e;

	*cells = 0;
	snprintf(path, sizeof(path), "%s/%s", CORPUS, name);
	tfs_diag_init(d);
	cr_assert_eq(tfs_array_open(path, &o, &a, d), TFS_E_OK);
	cr_assert_eq(tfs_query_open(a, &qo, &q, d), TFS_E_OK);
	while (!(e = tfs_query_next(q, &b, d)) && b)
		*cells += b->cell_num;
	tfs_query_close(q);
	tfs_array_close(a);
	return e;
}

/* dense_1d's largest tile part: 16 FLOAT64 values of 'b', unfiltered, are
 * 128 bytes, stored in 148 (chunk count, one chunk header): over a
 * smaller limit they are read a chunk at a time. A var-size tile cannot
 * be: it is refused, the limit in the message. */
Test(errors, tile_over_max_tile_bytes)
{
	struct tfs_diag d;
	uint64_t cells;

	cr_assert_eq(read_with_tile_limit("dense_1d", 148, &cells, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(cells, 100);
	cr_assert_eq(read_with_tile_limit("dense_1d", 127, &cells, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(cells, 100);
	cr_assert_eq(read_with_tile_limit("dense_2d_rowmajor", 8, &cells, &d),
		     TFS_E_NOMEM);
	cr_assert(strstr(tfs_diag_msg(&d), "over the limit of 8"), "%s",
		  tfs_diag_msg(&d));
}

Test(errors, unknown_field)
{
	struct tfs_array *a = open_array("dense_1d", 0);
	const char *fields[] = {"nope"};
	struct tfs_query_opts qo = {.fields = fields, .field_num = 1};
	struct tfs_query *q;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_NOT_FOUND);
	cr_assert(strstr(tfs_diag_msg(&d), "'nope'"));
	tfs_array_close(a);
}
