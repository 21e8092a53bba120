/* The sparse reader through the public API against what TileDB itself
 * reads from the corpus arrays (NAME.json "reads"): every read, with small
 * and default batches, one and several decode threads, and with the
 * selection forced into many small pieces. Also: field subsets, empty
 * selections and damaged data failing cleanly. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tilefs/tilefs.h"
#include "../support/json_test.h"
#include "../../../core/read/tfs_read.h"
#include "../../../core/read/tfs_sparse.h"
#include "../../../core/read/sparse_reader.h"

#define CORPUS TFS_CORPUS_DIR

/* The expectations (NAME.json), read with json-c. */
static struct jv *load_json(const char *file)
{
	char path[1024];
	struct jv *v;

	snprintf(path, sizeof(path), "%s/%s", CORPUS, file);
	v = json_load(path);
	cr_assert_not_null(v, "%s: cannot read or parse", path);
	return v;
}

/* ---- Comparing batches with expected cells ------------------------------ */

static void num_to_bytes(uint8_t type, const struct jv *v, uint8_t *dst)
{
	cr_assert(v->t == J_NUM, "expected a number");
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_FLOAT:
		if (type == TFS_FLOAT32) {
			float f = strtof(v->text, NULL);

			memcpy(dst, &f, 4);
		} else {
			double x = strtod(v->text, NULL);

			memcpy(dst, &x, 8);
		}
		return;
	case TFS_CLASS_UNSIGNED: {
		uint64_t u = strtoull(v->text, NULL, 10);

		for (size_t i = 0; i < tfs_datatype_size(type); i++)
			dst[i] = (uint8_t)(u >> (8 * i));
		return;
	}
	default: {
		uint64_t u = (uint64_t)strtoll(v->text, NULL, 10);

		for (size_t i = 0; i < tfs_datatype_size(type); i++)
			dst[i] = (uint8_t)(u >> (8 * i));
		return;
	}
	}
}

static bool number_matches(uint8_t type, const struct jv *v, const uint8_t *p)
{
	uint8_t want[8];

	if (v->t == J_STR && tfs_datatype_class(type) == TFS_CLASS_FLOAT) {
		double x = tfs_value_as_f64(type, p);

		if (!strcmp(v->text, "NaN"))
			return x != x;
		if (!strcmp(v->text, "Infinity"))
			return x == INFINITY;
		return !strcmp(v->text, "-Infinity") && x == -INFINITY;
	}
	if (v->t != J_NUM)
		return false;
	num_to_bytes(type, v, want);
	return !memcmp(want, p, tfs_datatype_size(type));
}

static bool value_matches(const struct tfs_column *col, uint64_t i,
			  uint64_t cells, const struct jv *v)
{
	const uint8_t *p;
	uint64_t len;
	size_t size = tfs_datatype_size(col->type);

	if (col->var) {
		p = col->data + col->offsets[i];
		len = col->offsets[i + 1] - col->offsets[i];
	} else {
		len = col->data_len / cells;
		p = col->data + i * len;
	}
	if (v->t == J_NULL)
		return col->validity && !col->validity[i];
	if (col->validity && !col->validity[i])
		return false;
	switch (tfs_datatype_class(col->type)) {
	case TFS_CLASS_STRING:
		return v->t == J_STR && json_str_eq(v, p, (size_t)len);
	case TFS_CLASS_BYTES: {
		char hex[3];

		if (v->t != J_STR || v->len != 2 * len)
			return false;
		for (uint64_t k = 0; k < len; k++) {
			snprintf(hex, sizeof(hex), "%02x", p[k]);
			if (memcmp(hex, v->text + 2 * k, 2))
				return false;
		}
		return true;
	}
	default:
		if (!col->var && col->cell_val_num == 1)
			return number_matches(col->type, v, p);
		if (v->t != J_ARR || v->n * size != len)
			return false;
		for (size_t k = 0; k < v->n; k++)
			if (!number_matches(col->type, &v->items[k], p + k * size))
				return false;
		return true;
	}
}

struct run_opts {
	uint64_t batch_cells;
	unsigned threads;
	uint64_t piece_cells; /* 0: the reader's default */
	const char *const *fields;
	size_t field_num;
};

/* Builds the subarray of a read; bytes go to store. */
static void make_subarray(const struct tfs_schema *s, const struct jv *sub,
			  struct tfs_range *out, uint8_t store[][2][8])
{
	cr_assert_eq(sub->n, s->dim_num);
	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct jv *lo = &sub->items[k].items[0];
		const struct jv *hi = &sub->items[k].items[1];

		if (s->dims[k].var) {
			out[k].lo = (const uint8_t *)lo->text;
			out[k].lo_len = lo->len;
			out[k].hi = (const uint8_t *)hi->text;
			out[k].hi_len = hi->len;
			continue;
		}
		num_to_bytes(s->dims[k].type, lo, store[k][0]);
		num_to_bytes(s->dims[k].type, hi, store[k][1]);
		out[k].lo = store[k][0];
		out[k].hi = store[k][1];
		out[k].lo_len = out[k].hi_len = tfs_datatype_size(s->dims[k].type);
	}
}

static struct tfs_array *open_at(const char *name, uint64_t timestamp,
				 unsigned threads)
{
	char path[1024];
	struct tfs_open_opts o = {.timestamp = timestamp, .threads = threads};
	struct tfs_array *a;
	struct tfs_diag d;

	tfs_diag_init(&d);
	snprintf(path, sizeof(path), "%s/%s", CORPUS, name);
	cr_assert_eq(tfs_array_open(path, &o, &a, &d), TFS_E_OK, "%s: %s",
		     name, tfs_diag_msg(&d));
	return a;
}

static struct tfs_query *query_open(struct tfs_array *a,
				    const struct tfs_range *sub,
				    const struct run_opts *ro)
{
	struct tfs_query_opts qo = {.subarray = sub,
				    .batch_cells = ro->batch_cells,
				    .fields = ro->fields,
				    .field_num = ro->field_num};
	struct tfs_query *q;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	if (ro->piece_cells) {
		/* Same query, reader with a tiny piece cap. */
		q->reader_ops->free(q);
		q->reader_ops = NULL;
		cr_assert_eq(tfs_sparse_reader_open_capped(q, ro->piece_cells, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
	}
	return q;
}

/* Runs one expected read and compares every cell and field. */
static void check_read(const char *name, const struct jv *arr,
		       const struct jv *rd, const struct run_opts *ro)
{
	const struct jv *ts = json_get(rd, "timestamp");
	const struct jv *opened = json_get(arr, "opened_at");
	const struct jv *cells = json_get(rd, "cells");
	uint64_t t = 0;
	struct tfs_array *a;
	struct tfs_query *q;
	struct tfs_range sub[8];
	uint8_t store[8][2][8];
	const struct tfs_batch *b;
	struct tfs_diag d;
	uint64_t seen = 0;

	if (ts && ts->t == J_NUM)
		t = strtoull(ts->text, NULL, 10);
	else if (opened && opened->t == J_NUM)
		t = strtoull(opened->text, NULL, 10);
	a = open_at(name, t, ro->threads);
	cr_assert(tfs_array_schema(a)->dim_num <= 8);
	make_subarray(tfs_array_schema(a), json_get(rd, "subarray"), sub, store);
	q = query_open(a, sub, ro);
	tfs_diag_init(&d);
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s: %s", name,
			     tfs_diag_msg(&d));
		if (!b)
			break;
		cr_assert_leq(b->cell_num, ro->batch_cells ? ro->batch_cells
							   : UINT64_MAX);
		for (uint64_t i = 0; i < b->cell_num; i++, seen++) {
			const struct jv *cell;

			cr_assert_lt(seen, cells->n, "%s: more cells than %zu",
				     name, cells->n);
			cell = &cells->items[seen];
			for (size_t f = 0; f < b->column_num; f++) {
				const struct tfs_column *col = &b->columns[f];
				const struct jv *v = json_get(cell, col->name);

				cr_assert_not_null(v, "%s: field %s", name,
						   col->name);
				cr_assert(value_matches(col, i, b->cell_num, v),
					  "%s (t=%" PRIu64 ") cell %" PRIu64
					  " field %s differs",
					  name, t, seen, col->name);
			}
		}
	}
	cr_assert_eq(seen, cells->n, "%s (t=%" PRIu64 "): %" PRIu64
		     " cells, expected %zu", name, t, seen, cells->n);
	tfs_query_close(q);
	tfs_array_close(a);
}

static void check_array(const char *json, const char *name)
{
	static const struct run_opts runs[] = {
		{0, 1, 0, NULL, 0},
		{3, 4, 0, NULL, 0},
		{1, 2, 1, NULL, 0},
		{5, 0, 7, NULL, 0},
	};
	struct jv *arr = load_json(json);
	const struct jv *reads = json_get(arr, "reads");

	cr_assert_not_null(reads);
	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++)
		for (size_t i = 0; i < reads->n; i++)
			check_read(name, arr, &reads->items[i], &runs[r]);
	json_free(arr);
}

Test(sparse, sparse_2d_int) { check_array("sparse_2d_int.json", "sparse_2d_int"); }
Test(sparse, sparse_dups) { check_array("sparse_dups.json", "sparse_dups"); }
Test(sparse, sparse_string_dim)
{
	check_array("sparse_string_dim.json", "sparse_string_dim");
}
Test(sparse, sparse_timetravel)
{
	check_array("sparse_timetravel.json", "sparse_timetravel");
	check_array("sparse_timetravel@1700000001000.json", "sparse_timetravel");
}
Test(sparse, sparse_2d_float)
{
	check_array("sparse_2d_float.json", "sparse_2d_float");
}
Test(sparse, sparse_hilbert) { check_array("sparse_hilbert.json", "sparse_hilbert"); }
Test(sparse, sparse_mixed_dims)
{
	check_array("sparse_mixed_dims.json", "sparse_mixed_dims");
}
Test(sparse, consolidated_fragments)
{
	check_array("consolidated_fragments.json", "consolidated_fragments");
}
Test(sparse, sparse_dtypes) { check_array("sparse_dtypes.json", "sparse_dtypes"); }
Test(sparse, sparse_coords_filters)
{
	check_array("sparse_coords_filters.json", "sparse_coords_filters");
}
Test(sparse, many_fragments)
{
	check_array("many_fragments.json", "many_fragments");
}
Test(sparse, delete_condition)
{
	check_array("delete_condition.json", "delete_condition");
}

/* Only the requested fields, in the requested order. */
Test(sparse, field_subset)
{
	static const char *const fields[] = {"s", "y"};
	struct run_opts ro = {4, 2, 0, fields, 2};
	struct jv *arr = load_json("sparse_2d_int.json");

	check_read("sparse_2d_int", arr, &json_get(arr, "reads")->items[1], &ro);
	json_free(arr);
}

Test(sparse, empty_selection)
{
	struct tfs_array *a = open_at("sparse_2d_int", 0, 1);
	int32_t lo[2] = {99, 0}, hi[2] = {99, 1};
	struct tfs_range sub[2];
	struct run_opts ro = {0, 1, 0, NULL, 0};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;

	for (int k = 0; k < 2; k++) {
		sub[k].lo = (const uint8_t *)&lo[k];
		sub[k].hi = (const uint8_t *)&hi[k];
		sub[k].lo_len = sub[k].hi_len = 4;
	}
	q = query_open(a, sub, &ro);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK);
	cr_assert_null(b);
	cr_assert_eq(tfs_query_cell_count(q), UINT64_MAX);
	tfs_query_close(q);
	tfs_array_close(a);
}

/* Damaged data files make the read fail with a message, never crash. */
static void damaged(const char *before, const char *file, const char *after)
{
	char dir[] = "/tmp/tfs_sparse_......", cmd[2048], frag[1024];
	struct tfs_array *a;
	struct tfs_open_opts o = {.threads = 2};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	enum tfs_err e = TFS_E_OK;
	FILE *ls;

	memset(dir + sizeof(dir) - 7, 'X', 6); /* mkdtemp template */
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp -r %s/sparse_2d_int %s/a && chmod -R u+w %s",
		 CORPUS, dir, dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "ls -d %s/a/__fragments/*/", dir);
	ls = popen(cmd, "r");
	cr_assert_not_null(fgets(frag, sizeof(frag), ls));
	pclose(ls);
	frag[strcspn(frag, "\n")] = 0;
	snprintf(cmd, sizeof(cmd), "%s%s%s%s", before, frag, file, after);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof(cmd), "%s/a", dir);
	tfs_diag_init(&d);
	if (tfs_array_open(cmd, &o, &a, &d) == TFS_E_OK) {
		if ((e = tfs_query_open(a, NULL, &q, &d)) == TFS_E_OK) {
			do
				e = tfs_query_next(q, &b, &d);
			while (!e && b);
			tfs_query_close(q);
		}
		tfs_array_close(a);
	} else {
		e = d.code;
	}
	cr_assert_neq(e, TFS_E_OK, "damage not noticed: %s%s", before, file);
	cr_assert_neq(strlen(tfs_diag_msg(&d)), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(sparse, damaged_coordinates)
{
	damaged("truncate -s 7 ", "d0.tdb", "");
}

Test(sparse, damaged_attribute)
{
	damaged("dd if=/dev/urandom of=", "a1_var.tdb",
		" bs=1 count=64 conv=notrunc status=none");
}

/* Every allocation failure inside the sparse reader is a clean
 * TFS_E_NOMEM (no crash, no leak: the sanitizer build checks), and once
 * allocations work again the same query reads everything. */
static void oom_sweep(const char *name, uint64_t piece_cells)
{
	struct tfs_array *a = open_at(name, 0, 1);
	struct run_opts ro = {4, 1, 0, NULL, 0};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	uint64_t full = 0;
	bool completed = false;

	/* A first read loads the fragments' lazy metadata. */
	q = query_open(a, NULL, &ro);
	tfs_diag_init(&d);
	while (tfs_query_next(q, &b, &d) == TFS_E_OK && b)
		full += b->cell_num;
	tfs_query_close(q);
	cr_assert_gt(full, 0);
	for (long n = 0; !completed && n < 100000; n++) {
		enum tfs_err e;
		uint64_t got = 0;

		q = query_open(a, NULL, &ro);
		q->reader_ops->free(q);
		q->reader_ops = NULL;
		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs_sparse_reader_open_capped(q, piece_cells, &d);
		while (!e) {
			e = tfs_query_next(q, &b, &d);
			if (e || !b)
				break;
			got += b->cell_num;
		}
		tfs_alloc_fail_after(-1);
		if (e) {
			cr_assert_eq(e, TFS_E_NOMEM, "%s after %ld: %s", name, n,
				     tfs_diag_msg(&d));
		} else {
			cr_assert_eq(got, full);
			completed = true;
		}
		tfs_query_close(q);
	}
	cr_assert(completed);
	tfs_array_close(a);
}

/* Pieces of one cell at most: where the tiles of overlapping fragments
 * hold more than that across every tile bound, a piece is cut inside the
 * tiles (its upper bound a key of no tile's, p_hi.p NULL), and the cells
 * still come out complete. Returns how many pieces were cut so. */
static unsigned narrowed_pieces(const char *name)
{
	struct tfs_array *a = open_at(name, 0, 1);
	struct run_opts ro = {1, 1, 0, NULL, 0};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	uint64_t full = 0, got = 0;
	unsigned narrowed = 0;
	bool was = false;

	q = query_open(a, NULL, &ro);
	tfs_diag_init(&d);
	while (tfs_query_next(q, &b, &d) == TFS_E_OK && b)
		full += b->cell_num;
	tfs_query_close(q);
	q = query_open(a, NULL, &ro);
	q->reader_ops->free(q);
	q->reader_ops = NULL;
	cr_assert_eq(tfs_sparse_reader_open_capped(q, 1, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (;;) {
		const struct sp_reader *r;
		bool now;

		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		got += b->cell_num;
		r = q->reader;
		now = r->p_has_hi && !r->p_hi.p;
		if (now && !was)
			narrowed++;
		was = now;
	}
	cr_assert_eq(got, full, "%s", name);
	tfs_query_close(q);
	tfs_array_close(a);
	return narrowed;
}

Test(sparse, pieces_cut_inside_overlapping_tiles)
{
	cr_expect_gt(narrowed_pieces("sparse_hilbert") +
			     narrowed_pieces("many_fragments"),
		     0);
}

Test(sparse, allocation_failures)
{
	oom_sweep("sparse_2d_int", 7);
	oom_sweep("sparse_dups", 0);
	oom_sweep("delete_condition", 0);
}

/* The values of one fixed- or var-size column of every cell of a query
 * of fields, as text lines "x,y,value" (at most cap bytes). */
static void dup_column(const char *const *fields, size_t field_num,
		       size_t col, char *out, size_t cap)
{
	struct tfs_array *a = open_at("sparse_dups", 0, 2);
	struct run_opts ro = {3, 2, 0, fields, field_num};
	struct tfs_query *q = query_open(a, NULL, &ro);
	const struct tfs_batch *b;
	struct tfs_diag d;
	size_t len = 0;

	out[0] = '\0';
	tfs_diag_init(&d);
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		cr_assert_eq(b->column_num, field_num);
		for (uint64_t i = 0; i < b->cell_num; i++) {
			const struct tfs_column *c = &b->columns[col];
			int32_t x, y;

			memcpy(&x, b->columns[0].data + 4 * i, 4);
			memcpy(&y, b->columns[1].data + 4 * i, 4);
			if (c->var)
				len += (size_t)snprintf(
					out + len, cap - len, "%d,%d,%.*s\n", x, y,
					(int)(c->offsets[i + 1] - c->offsets[i]),
					(const char *)c->data + c->offsets[i]);
			else
				len += (size_t)snprintf(
					out + len, cap - len, "%d,%d,%d\n", x, y,
					((const int32_t *)(const void *)c->data)[i]);
			cr_assert_lt(len, cap);
		}
	}
	tfs_query_close(q);
	tfs_array_close(a);
}

/* Duplicates come in one order whatever the fields asked for: the files
 * of single fields pair the same cells as a read of all of them. */
Test(sparse, duplicates_one_order)
{
	static const char *const all[] = {"x", "y", "a", "s"};
	static const char *const only_a[] = {"x", "y", "a"};
	static const char *const only_s[] = {"x", "y", "s"};
	static const char *const s_first[] = {"x", "y", "s", "a"};
	static char want_a[8192], want_s[8192], got[8192];

	dup_column(all, 4, 2, want_a, sizeof(want_a));
	dup_column(all, 4, 3, want_s, sizeof(want_s));
	cr_assert_gt(strlen(want_a), 0);
	dup_column(only_a, 3, 2, got, sizeof(got));
	cr_expect_str_eq(got, want_a);
	dup_column(only_s, 3, 2, got, sizeof(got));
	cr_expect_str_eq(got, want_s);
	dup_column(s_first, 4, 3, got, sizeof(got));
	cr_expect_str_eq(got, want_a);
	dup_column(s_first, 4, 2, got, sizeof(got));
	cr_expect_str_eq(got, want_s);
}
