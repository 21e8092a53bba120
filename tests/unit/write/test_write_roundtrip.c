/* The fragment writer through the public API, on the in-memory backend:
 * round trips (write, then read with tfs_array_open / tfs_query_*) for
 * every datatype, var-size, nullable and multi-value cells, dense boxes and
 * sparse fragments in every order, string dimensions and every filter the
 * encoder has (AES too); newest-wins across fragments; refusals; sorts
 * spilled to disk; faults injected at every storage call; cleanup; array
 * metadata; arrays of format versions 5 to 22. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "legacy_builder.h"
#include "tfs_alloc.h"
#include "write_test_util.h"

/* ---- Columns of generated cells ----------------------------------------- */

struct gcol {
	struct tfs_column c;
	uint8_t *data;
	uint64_t *offs;
	uint8_t *valid;
};

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* n cells of a field: values depend on the cell index and the seed. */
static void gen_col(struct gcol *g, const char *name, uint8_t type,
		    uint32_t cvn, bool nullable, uint64_t n, bool small)
{
	size_t es = tfs_datatype_size(type);
	bool var = cvn == TFS_VAR_NUM;
	uint64_t total = 0;

	memset(g, 0, sizeof(*g));
	g->offs = calloc(n + 1, 8);
	g->valid = nullable ? calloc(n + 1, 1) : NULL;
	g->data = malloc((var ? 6 * es * n : es * cvn * n) + 1);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t cnt = var ? rnd() % 6 : cvn;

		g->offs[i] = total;
		for (uint64_t k = 0; k < cnt; k++) {
			uint8_t *p = g->data + total;

			if (type == TFS_FLOAT32) {
				float f = (float)((int64_t)(rnd() % 20001) - 10000) / 8;
				memcpy(p, &f, 4);
			} else if (type == TFS_FLOAT64) {
				double f = (double)((int64_t)(rnd() % 200001) - 100000) / 16;
				memcpy(p, &f, 8);
			} else if (type == TFS_BOOL) {
				*p = (uint8_t)(rnd() & 1);
			} else if (tfs_datatype_is_string(type)) {
				*p = (uint8_t)('a' + rnd() % 26);
			} else {
				uint64_t v = small ? rnd() % 100 : rnd();

				for (size_t b = 0; b < es; b++)
					p[b] = (uint8_t)(v >> (8 * b));
			}
			total += es;
		}
		if (nullable)
			g->valid[i] = (uint8_t)(rnd() % 4 != 0);
	}
	g->offs[n] = total;
	g->c.name = name;
	g->c.type = type;
	g->c.cell_val_num = cvn;
	g->c.var = var;
	g->c.nullable = nullable;
	g->c.data = g->data;
	g->c.data_len = total;
	g->c.offsets = var ? g->offs : NULL;
	g->c.validity = g->valid;
}

static void gcol_free(struct gcol *g)
{
	free(g->data);
	free(g->offs);
	free(g->valid);
}

/* Coordinates: a column of distinct values lo + perm(i)·step. */
static void gen_coords(struct gcol *g, const char *name, uint8_t type,
		       const int64_t *vals, uint64_t n)
{
	size_t es = tfs_datatype_size(type);

	memset(g, 0, sizeof(*g));
	g->data = malloc(es * n + 1);
	for (uint64_t i = 0; i < n; i++) {
		if (type == TFS_FLOAT64) {
			double f = (double)vals[i] / 4;
			memcpy(g->data + i * es, &f, 8);
		} else if (type == TFS_FLOAT32) {
			float f = (float)vals[i] / 4;
			memcpy(g->data + i * es, &f, 4);
		} else {
			for (size_t b = 0; b < es; b++)
				g->data[i * es + b] = (uint8_t)((uint64_t)vals[i] >> (8 * b));
		}
	}
	g->c.name = name;
	g->c.type = type;
	g->c.cell_val_num = 1;
	g->c.data = g->data;
	g->c.data_len = es * n;
}

static void gen_str_coords(struct gcol *g, const char *name, uint64_t n,
			   uint64_t seed)
{
	uint64_t total = 0;

	memset(g, 0, sizeof(*g));
	g->offs = calloc(n + 1, 8);
	g->data = malloc(16 * n + 1);
	for (uint64_t i = 0; i < n; i++) {
		/* Distinct: a prefix from the index, then a random tail. */
		int len = snprintf((char *)g->data + total, 16, "k%04" PRIu64 "%c",
				   (i * 7919 + seed) % 10000, (char)('a' + i % 3));

		g->offs[i] = total;
		total += (uint64_t)len;
	}
	g->offs[n] = total;
	g->c.name = name;
	g->c.type = TFS_STRING_ASCII;
	g->c.cell_val_num = TFS_VAR_NUM;
	g->c.var = true;
	g->c.data = g->data;
	g->c.data_len = total;
	g->c.offsets = g->offs;
}

static void batch_of(struct tfs_batch *b, struct tfs_column *cols,
		     struct gcol *g, size_t n, uint64_t cells)
{
	for (size_t i = 0; i < n; i++)
		cols[i] = g[i].c;
	b->cell_num = cells;
	b->column_num = n;
	b->columns = cols;
}

/* ---- Arrays ----------------------------------------------------------------- */

static void create(struct wt_env *e, const char *path, struct tfs_schema *s)
{
	cr_assert_eq(tfs_array_create(path, s, &e->wo, &e->d), TFS_E_OK, "%s",
		     tfs_diag_msg(&e->d));
	tfs_schema_release(s);
}

static enum tfs_err write_batch(struct wt_env *e, const char *path,
				enum tfs_write_layout layout,
				const struct tfs_range *box,
				const struct tfs_batch *b, const uint64_t *tags,
				struct tfs_write_result *res)
{
	struct tfs_writer *w;
	enum tfs_err err;

	tfs_diag_init(&e->d);
	err = tfs_writer_open(path, &e->wo, layout, box, &w, &e->d);
	if (err)
		return err;
	err = tfs_writer_append(w, b, tags, &e->d);
	if (!err)
		err = tfs_writer_commit(w, res, &e->d);
	tfs_writer_free(w);
	return err;
}

static struct tfs_array *open_array(struct wt_env *e, const char *path)
{
	struct tfs_array *a;

	tfs_diag_init(&e->d);
	cr_assert_eq(tfs_array_open(path, &e->oo, &a, &e->d), TFS_E_OK, "%s",
		     tfs_diag_msg(&e->d));
	return a;
}

/* Writes the batch unordered and checks the array reads back its cells
 * (as a set). */
static void sparse_roundtrip(struct wt_env *e, const char *path,
			     const struct tfs_batch *b)
{
	struct tfs_write_result res;
	struct wt_dump want, got;
	struct tfs_array *a;

	cr_assert_eq(write_batch(e, path, TFS_WRITE_UNORDERED, NULL, b, NULL,
				 &res),
		     TFS_E_OK, "%s", tfs_diag_msg(&e->d));
	cr_assert_eq(res.cell_num, b->cell_num);
	cr_assert_not(res.dense);
	a = open_array(e, path);
	memset(&want, 0, sizeof(want));
	wt_dump_batch(&want, b);
	wt_read(a, NULL, &got);
	wt_dump_sort(&want);
	wt_dump_sort(&got);
	wt_expect_dump_eq(&got, &want);
	wt_dump_release(&want);
	wt_dump_release(&got);
	tfs_array_close(a);
}

static void shuffled(int64_t *v, uint64_t n, int64_t lo, int64_t step)
{
	for (uint64_t i = 0; i < n; i++)
		v[i] = lo + (int64_t)i * step;
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = rnd() % i;
		int64_t t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* ---- Round trips of every datatype ------------------------------------------ */

struct aspec {
	const char *name;
	uint8_t type;
	uint32_t cvn;
	bool nullable;
};

/* threads: encoding threads of the write (1 = all on the caller's). */
static void dtypes_case(const struct aspec *as, size_t an, uint64_t capacity,
			unsigned threads)
{
	struct wt_env e;
	struct tfs_schema s;
	struct gcol g[LB_MAX_ATTRS + 1];
	struct tfs_column cols[LB_MAX_ATTRS + 1];
	struct tfs_batch b;
	int64_t coords[300];
	uint64_t n = 300;

	wt_env_init(&e, 2);
	e.wo.threads = threads;
	lb_schema_init(&s, 22, true, capacity);
	lb_add_dim(&s, "d", TFS_INT64, -1000, 1000, 64);
	for (size_t i = 0; i < an; i++)
		lb_add_attr(&s, as[i].name, as[i].type, as[i].cvn, as[i].nullable);
	create(&e, "/a", &s);
	shuffled(coords, n, -900, 5);
	gen_coords(&g[0], "d", TFS_INT64, coords, n);
	for (size_t i = 0; i < an; i++)
		gen_col(&g[i + 1], as[i].name, as[i].type, as[i].cvn,
			as[i].nullable, n, false);
	batch_of(&b, cols, g, an + 1, n);
	sparse_roundtrip(&e, "/a", &b);
	for (size_t i = 0; i <= an; i++)
		gcol_free(&g[i]);
	wt_env_free(&e);
}

Test(roundtrip, integers)
{
	static const struct aspec as[] = {
		{ "i8", TFS_INT8, 1, false },	{ "u8", TFS_UINT8, 1, true },
		{ "i16", TFS_INT16, 1, false }, { "u16", TFS_UINT16, 1, false },
		{ "i32", TFS_INT32, 1, true },	{ "u32", TFS_UINT32, 1, false },
		{ "i64", TFS_INT64, 1, false }, { "u64", TFS_UINT64, 1, true },
	};
	dtypes_case(as, 8, 16, 2);
}

Test(roundtrip, floats_bool_time)
{
	static const struct aspec as[] = {
		{ "f32", TFS_FLOAT32, 1, false },
		{ "f64", TFS_FLOAT64, 1, true },
		{ "b", TFS_BOOL, 1, false },
		{ "ms", TFS_DATETIME_YEAR + 7, 1, false }, /* DATETIME_MS */
		{ "day", TFS_DATETIME_YEAR + 3, 1, true },
		{ "tns", TFS_TIME_HR + 5, 1, false },
		{ "ch", TFS_CHAR, 1, false },
		{ "any", TFS_ANY, TFS_VAR_NUM, false },
	};
	dtypes_case(as, 8, 7, 1);
}

Test(roundtrip, strings_and_blobs)
{
	static const struct aspec as[] = {
		{ "chv", TFS_CHAR, TFS_VAR_NUM, false },
		{ "asc", TFS_STRING_ASCII, TFS_VAR_NUM, true },
		{ "utf", TFS_STRING_UTF8, TFS_VAR_NUM, true },
		{ "u16s", TFS_STRING_UTF16, TFS_VAR_NUM, false },
		{ "blob", TFS_BLOB, TFS_VAR_NUM, true },
		{ "ch4", TFS_CHAR, 4, true },
		{ "i64v", TFS_INT64, TFS_VAR_NUM, true },
		{ "f32v", TFS_FLOAT32, TFS_VAR_NUM, false },
	};
	dtypes_case(as, 8, 10, 3);
}

Test(roundtrip, multi_value)
{
	static const struct aspec as[] = {
		{ "i32x3", TFS_INT32, 3, false },
		{ "f64x2", TFS_FLOAT64, 2, true },
		{ "u8x5", TFS_UINT8, 5, false },
		{ "b2", TFS_BOOL, 2, true },
		{ "blob8", TFS_BLOB, 8, false },
	};
	dtypes_case(as, 5, 1000, 1);
}

/* ---- Sparse orders and dimensions ------------------------------------------- */

static void sparse2d(uint8_t cell_order, uint8_t tile_order, uint8_t dtype)
{
	struct wt_env e;
	struct tfs_schema s;
	struct gcol g[3];
	struct tfs_column cols[3];
	struct tfs_batch b;
	int64_t xs[500], ys[500];
	uint64_t n = 500;

	wt_env_init(&e, 2);
	lb_schema_init(&s, 22, true, 13);
	s.cell_order = cell_order;
	s.tile_order = tile_order;
	lb_add_dim(&s, "x", dtype, 0, 999, 100);
	lb_add_dim(&s, "y", dtype, 0, 999, 37);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	create(&e, "/a", &s);
	/* Distinct pairs: x random, y = a permutation. */
	shuffled(xs, n, 0, 1);
	shuffled(ys, n, 3, 1);
	gen_coords(&g[0], "x", dtype, xs, n);
	gen_coords(&g[1], "y", dtype, ys, n);
	gen_col(&g[2], "v", TFS_INT32, 1, false, n, false);
	batch_of(&b, cols, g, 3, n);
	sparse_roundtrip(&e, "/a", &b);

	/* Range reads find every cell through the R-tree. */
	struct tfs_array *a = open_array(&e, "/a");
	int32_t lo32 = 100, hi32 = 300;
	int64_t lo64 = 100, hi64 = 300;
	struct tfs_range sub[2];
	struct wt_dump got;
	uint64_t want = 0;

	for (int k = 0; k < 2; k++) {
		sub[k].lo = dtype == TFS_INT32 ? (const uint8_t *)&lo32
					       : (const uint8_t *)&lo64;
		sub[k].hi = dtype == TFS_INT32 ? (const uint8_t *)&hi32
					       : (const uint8_t *)&hi64;
		sub[k].lo_len = sub[k].hi_len = tfs_datatype_size(dtype);
	}
	for (uint64_t i = 0; i < n; i++)
		want += xs[i] >= 100 && xs[i] <= 300 && ys[i] >= 100 && ys[i] <= 300;
	wt_read(a, sub, &got);
	cr_expect_eq(got.n, want);
	wt_dump_release(&got);
	tfs_array_close(a);
	for (int i = 0; i < 3; i++)
		gcol_free(&g[i]);
	wt_env_free(&e);
}

Test(sparse, row_major) { sparse2d(TFS_ROW_MAJOR, TFS_ROW_MAJOR, TFS_INT32); }
Test(sparse, col_major) { sparse2d(TFS_COL_MAJOR, TFS_COL_MAJOR, TFS_INT64); }
Test(sparse, mixed_orders) { sparse2d(TFS_COL_MAJOR, TFS_ROW_MAJOR, TFS_INT32); }
Test(sparse, hilbert) { sparse2d(TFS_HILBERT, TFS_ROW_MAJOR, TFS_INT64); }

Test(sparse, string_dimension)
{
	struct wt_env e;
	struct tfs_schema s;
	struct gcol g[4];
	struct tfs_column cols[4];
	struct tfs_batch b;
	int64_t ys[400];
	uint64_t n = 400;

	for (int hil = 0; hil < 2; hil++) {
		wt_env_init(&e, 2);
		lb_schema_init(&s, 22, true, 9);
		if (hil)
			s.cell_order = TFS_HILBERT;
		lb_add_str_dim(&s, "k");
		lb_add_dim(&s, "y", TFS_UINT16, 0, 1000, 10);
		lb_add_attr(&s, "v", TFS_STRING_UTF8, TFS_VAR_NUM, true);
		create(&e, "/a", &s);
		gen_str_coords(&g[0], "k", n, 11);
		for (uint64_t i = 0; i < n; i++)
			ys[i] = (int64_t)(rnd() % 1000);
		gen_coords(&g[1], "y", TFS_UINT16, ys, n);
		gen_col(&g[2], "v", TFS_STRING_UTF8, TFS_VAR_NUM, true, n, false);
		batch_of(&b, cols, g, 3, n);
		sparse_roundtrip(&e, "/a", &b);
		for (int i = 0; i < 3; i++)
			gcol_free(&g[i]);
		wt_env_free(&e);
	}
}

Test(sparse, float_dimensions)
{
	struct wt_env e;
	struct tfs_schema s;
	struct gcol g[3];
	struct tfs_column cols[3];
	struct tfs_batch b;
	int64_t xs[300], ys[300];
	uint64_t n = 300;
	struct tfs_dim *d;
	double lo = -100, hi = 100, ext = 7.5;
	float flo = 0, fhi = 1000, fext = 64;

	wt_env_init(&e, 2);
	lb_schema_init(&s, 22, true, 8);
	d = lb_add_dim(&s, "x", TFS_FLOAT64, 0, 0, 0);
	memcpy(d->domain[0], &lo, 8);
	memcpy(d->domain[1], &hi, 8);
	memcpy(d->extent, &ext, 8);
	d->has_extent = true;
	d = lb_add_dim(&s, "y", TFS_FLOAT32, 0, 0, 0);
	memcpy(d->domain[0], &flo, 4);
	memcpy(d->domain[1], &fhi, 4);
	memcpy(d->extent, &fext, 4);
	d->has_extent = true;
	lb_add_attr(&s, "v", TFS_INT64, 1, false);
	create(&e, "/a", &s);
	shuffled(xs, n, -399, 2);
	shuffled(ys, n, 0, 3);
	gen_coords(&g[0], "x", TFS_FLOAT64, xs, n);
	gen_coords(&g[1], "y", TFS_FLOAT32, ys, n);
	gen_col(&g[2], "v", TFS_INT64, 1, false, n, false);
	batch_of(&b, cols, g, 3, n);
	sparse_roundtrip(&e, "/a", &b);
	for (int i = 0; i < 3; i++)
		gcol_free(&g[i]);
	wt_env_free(&e);
}

/* ---- Dense ------------------------------------------------------------------- */

/* A dense 2-D array [1,10] x [1,12], extents 3 x 5; attributes int32,
 * nullable var string, nullable float64 pair. */
static void dense_schema(struct wt_env *e, uint8_t tile_order, uint8_t cell_order)
{
	struct tfs_schema s;

	lb_schema_init(&s, 22, false, 10000);
	s.tile_order = tile_order;
	s.cell_order = cell_order;
	lb_add_dim(&s, "r", TFS_INT32, 1, 10, 3);
	lb_add_dim(&s, "c", TFS_INT32, 1, 12, 5);
	lb_add_attr(&s, "a", TFS_INT32, 1, false);
	lb_add_attr(&s, "s", TFS_STRING_UTF8, TFS_VAR_NUM, true);
	lb_add_attr(&s, "p", TFS_FLOAT64, 2, true);
	create(e, "/d", &s);
}

static void box_of(struct tfs_range *box, int32_t *r, int32_t *c)
{
	box[0].lo = (const uint8_t *)&r[0];
	box[0].hi = (const uint8_t *)&r[1];
	box[1].lo = (const uint8_t *)&c[0];
	box[1].hi = (const uint8_t *)&c[1];
	box[0].lo_len = box[0].hi_len = box[1].lo_len = box[1].hi_len = 4;
}

static void dense_box_case(uint8_t tile_order, uint8_t cell_order)
{
	struct wt_env e;
	struct gcol g[3];
	struct tfs_column cols[3];
	struct tfs_batch b;
	struct tfs_range box[2];
	int32_t r[2] = { 2, 8 };
	int32_t c[2] = { 3, 11 };
	uint64_t n = 7 * 9;
	struct tfs_write_result res;
	struct wt_dump want, got;
	struct tfs_array *a;
	struct tfs_query_opts qo;
	const char *fields[] = { "a", "s", "p" };

	wt_env_init(&e, 2);
	dense_schema(&e, tile_order, cell_order);
	box_of(box, r, c);
	gen_col(&g[0], "a", TFS_INT32, 1, false, n, false);
	gen_col(&g[1], "s", TFS_STRING_UTF8, TFS_VAR_NUM, true, n, false);
	gen_col(&g[2], "p", TFS_FLOAT64, 2, true, n, false);
	batch_of(&b, cols, g, 3, n);
	{
		/* Appended 7 cells at a time, rows of tiles split anywhere. */
		struct tfs_writer *w;

		cr_assert_eq(tfs_writer_open("/d", &e.wo, TFS_WRITE_DENSE_BOX, box,
					     &w, &e.d),
			     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
		for (uint64_t at = 0; at < n; at += 7) {
			uint64_t m = n - at < 7 ? n - at : 7;
			struct tfs_column sub[3];
			struct tfs_batch sb = { .cell_num = m, .column_num = 3,
						.columns = sub };

			memcpy(sub, cols, sizeof(sub));
			sub[0].data = cols[0].data + 4 * at;
			sub[0].data_len = 4 * m;
			sub[1].offsets = cols[1].offsets + at;
			sub[1].validity = cols[1].validity + at;
			sub[2].data = cols[2].data + 16 * at;
			sub[2].data_len = 16 * m;
			sub[2].validity = cols[2].validity + at;
			cr_assert_eq(tfs_writer_append(w, &sb, NULL, &e.d), TFS_E_OK,
				     "%s", tfs_diag_msg(&e.d));
		}
		cr_assert_eq(tfs_writer_commit(w, &res, &e.d), TFS_E_OK, "%s",
			     tfs_diag_msg(&e.d));
		tfs_writer_free(w);
	}
	cr_assert(res.dense);
	cr_assert_eq(res.cell_num, n);
	a = open_array(&e, "/d");
	memset(&qo, 0, sizeof(qo));
	qo.subarray = box;
	qo.fields = fields;
	qo.field_num = 3;
	{
		struct tfs_query *q;
		const struct tfs_batch *rb;

		memset(&got, 0, sizeof(got));
		cr_assert_eq(tfs_query_open(a, &qo, &q, &e.d), TFS_E_OK, "%s",
			     tfs_diag_msg(&e.d));
		for (;;) {
			cr_assert_eq(tfs_query_next(q, &rb, &e.d), TFS_E_OK, "%s",
				     tfs_diag_msg(&e.d));
			if (!rb)
				break;
			wt_dump_batch(&got, rb);
		}
		tfs_query_close(q);
	}
	/* Row-major over the box, in the order written. */
	memset(&want, 0, sizeof(want));
	wt_dump_batch(&want, &b);
	wt_expect_dump_eq(&got, &want);
	wt_dump_release(&want);
	wt_dump_release(&got);
	tfs_array_close(a);
	for (int i = 0; i < 3; i++)
		gcol_free(&g[i]);
	wt_env_free(&e);
}

Test(dense, box_row_row) { dense_box_case(TFS_ROW_MAJOR, TFS_ROW_MAJOR); }
Test(dense, box_row_col) { dense_box_case(TFS_ROW_MAJOR, TFS_COL_MAJOR); }
Test(dense, box_col_row) { dense_box_case(TFS_COL_MAJOR, TFS_ROW_MAJOR); }
Test(dense, box_col_col) { dense_box_case(TFS_COL_MAJOR, TFS_COL_MAJOR); }

/* Unordered cells into a dense array: a full box becomes a dense fragment,
 * anything else a sparse one; both read back as written. */
static void dense_unordered(bool full)
{
	struct wt_env e;
	struct gcol g[5];
	struct tfs_column cols[5];
	struct tfs_batch b;
	int64_t rs[80], cs[80], perm[80];
	uint64_t n = 0;
	struct tfs_write_result res;
	struct tfs_array *a;
	struct wt_dump got, want;

	wt_env_init(&e, 2);
	dense_schema(&e, TFS_ROW_MAJOR, TFS_ROW_MAJOR);
	/* Box [3,7] x [2,9] (40 cells), minus one cell when not full. */
	for (int64_t r = 3; r <= 7; r++)
		for (int64_t c = 2; c <= 9; c++)
			if (full || r != 5 || c != 4) {
				rs[n] = r;
				cs[n] = c;
				n++;
			}
	shuffled(perm, n, 0, 1);
	{
		int64_t r2[80], c2[80];

		for (uint64_t i = 0; i < n; i++) {
			r2[i] = rs[perm[i]];
			c2[i] = cs[perm[i]];
		}
		gen_coords(&g[0], "r", TFS_INT32, r2, n);
		gen_coords(&g[1], "c", TFS_INT32, c2, n);
	}
	gen_col(&g[2], "a", TFS_INT32, 1, false, n, false);
	gen_col(&g[3], "s", TFS_STRING_UTF8, TFS_VAR_NUM, true, n, false);
	gen_col(&g[4], "p", TFS_FLOAT64, 2, true, n, false);
	batch_of(&b, cols, g, 5, n);
	cr_assert_eq(write_batch(&e, "/d", TFS_WRITE_UNORDERED, NULL, &b, NULL,
				 &res),
		     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
	cr_assert_eq(res.dense, full);
	a = open_array(&e, "/d");
	{
		/* Read the written cells back one by one (a dense read of
		 * a box also returns fill values for the missing cell). */
		memset(&want, 0, sizeof(want));
		wt_dump_batch(&want, &b);
		memset(&got, 0, sizeof(got));
		for (uint64_t i = 0; i < n; i++) {
			int32_t r = (int32_t)tfs_value_as_i64(TFS_INT32, g[0].data + 4 * i);
			int32_t c = (int32_t)tfs_value_as_i64(TFS_INT32, g[1].data + 4 * i);
			int32_t rr[2] = { r, r };
			int32_t cc[2] = { c, c };
			struct tfs_range sub[2];
			struct wt_dump one;

			box_of(sub, rr, cc);
			wt_read(a, sub, &one);
			cr_assert_eq(one.n, 1);
			if (got.n == got.cap) {
				got.cap = got.cap ? 2 * got.cap : 64;
				got.lines = realloc(got.lines, got.cap * sizeof(char *));
			}
			got.lines[got.n++] = strdup(one.lines[0]);
			wt_dump_release(&one);
		}
		wt_expect_dump_eq(&got, &want);
		wt_dump_release(&got);
		wt_dump_release(&want);
	}
	tfs_array_close(a);
	for (int i = 0; i < 5; i++)
		gcol_free(&g[i]);
	wt_env_free(&e);
}

Test(dense, unordered_full_box) { dense_unordered(true); }
Test(dense, unordered_partial_is_sparse) { dense_unordered(false); }

/* ---- Filters ------------------------------------------------------------------ */

struct fcase {
	const char *name;
	uint8_t filter;
	uint8_t type;
	uint32_t cvn;
	bool sorted; /* values must not decrease (positive delta) */
};

static void filter_case(const struct fcase *fc, const uint8_t *key)
{
	struct wt_env e;
	struct tfs_schema s;
	struct gcol g[3];
	struct tfs_column cols[3];
	struct tfs_batch b;
	int64_t coords[700];
	uint64_t n = 700;
	struct tfs_attr *at;

	wt_env_init(&e, 2);
	e.wo.key = key;
	e.oo.key = key;
	lb_schema_init(&s, 22, true, 256);
	lb_add_dim(&s, "d", TFS_INT32, 0, 100000, 1000);
	at = lb_add_attr(&s, "v", fc->type, fc->cvn, false);
	lb_add_filter(&at->filters, fc->filter);
	if (fc->filter == TFS_FILTER_SCALE_FLOAT) {
		/* Exact for the generated values (multiples of 1/16). */
		at->filters.filters[0].scale = 1.0 / 16;
		at->filters.filters[0].byte_width = 4;
	}
	at = lb_add_attr(&s, "w", TFS_STRING_ASCII, TFS_VAR_NUM, true);
	if (fc->filter != TFS_FILTER_SCALE_FLOAT &&
	    fc->filter != TFS_FILTER_DOUBLE_DELTA &&
	    fc->filter != TFS_FILTER_DELTA &&
	    fc->filter != TFS_FILTER_POSITIVE_DELTA &&
	    fc->filter != TFS_FILTER_BIT_WIDTH_REDUCTION)
		lb_add_filter(&at->filters, fc->filter);
	lb_add_filter(&s.offsets_filters, TFS_FILTER_ZSTD);
	create(&e, "/f", &s);
	/* Cells in coordinate order so that sorted values stay sorted. */
	for (uint64_t i = 0; i < n; i++)
		coords[i] = (int64_t)i * 3;
	gen_coords(&g[0], "d", TFS_INT32, coords, n);
	gen_col(&g[1], "v", fc->type, fc->cvn, false, n, true);
	if (fc->sorted)
		for (uint64_t i = 0; i < n; i++)
			tfs_put_uint(g[1].data + i * tfs_datatype_size(fc->type),
				     tfs_datatype_size(fc->type), i / 3);
	gen_col(&g[2], "w", TFS_STRING_ASCII, TFS_VAR_NUM, true, n, false);
	batch_of(&b, cols, g, 3, n);
	sparse_roundtrip(&e, "/f", &b);
	for (int i = 0; i < 3; i++)
		gcol_free(&g[i]);
	wt_env_free(&e);
}

static const struct fcase fcases[] = {
	{ "gzip", TFS_FILTER_GZIP, TFS_INT32, 1, false },
	{ "zstd", TFS_FILTER_ZSTD, TFS_INT64, 1, false },
	{ "lz4", TFS_FILTER_LZ4, TFS_UINT16, 1, false },
	{ "rle", TFS_FILTER_RLE, TFS_INT32, 1, false },
	{ "bzip2", TFS_FILTER_BZIP2, TFS_FLOAT64, 1, false },
	{ "double_delta", TFS_FILTER_DOUBLE_DELTA, TFS_INT64, 1, false },
	{ "delta", TFS_FILTER_DELTA, TFS_INT32, 1, false },
	{ "bit_width", TFS_FILTER_BIT_WIDTH_REDUCTION, TFS_UINT32, 1, false },
	{ "bitshuffle", TFS_FILTER_BITSHUFFLE, TFS_FLOAT32, 1, false },
	{ "byteshuffle", TFS_FILTER_BYTESHUFFLE, TFS_INT16, 1, false },
	{ "positive_delta", TFS_FILTER_POSITIVE_DELTA, TFS_UINT64, 1, true },
	{ "md5", TFS_FILTER_CHECKSUM_MD5, TFS_INT32, 2, false },
	{ "sha256", TFS_FILTER_CHECKSUM_SHA256, TFS_UINT8, 1, false },
	{ "dictionary", TFS_FILTER_DICTIONARY, TFS_STRING_ASCII, TFS_VAR_NUM, false },
	{ "scale_float", TFS_FILTER_SCALE_FLOAT, TFS_FLOAT64, 1, false },
	{ "xor", TFS_FILTER_XOR, TFS_INT64, 1, false },
};

Test(filters, every_filter)
{
	for (size_t i = 0; i < sizeof(fcases) / sizeof(*fcases); i++) {
		cr_log_info("filter %s", fcases[i].name);
		filter_case(&fcases[i], NULL);
	}
}

static const uint8_t KEY[32] = "0123456789abcdef0123456789abcdef";

Test(filters, aes_with_key)
{
	filter_case(&fcases[1], KEY);
	filter_case(&fcases[13], KEY);
}

Test(filters, webp)
{
	struct wt_env e;
	struct tfs_schema s;
	struct tfs_attr *at;
	struct gcol g;
	struct tfs_column col;
	struct tfs_batch b;
	struct tfs_range box[2];
	int32_t r[2] = { 0, 7 }, c[2] = { 0, 11 };
	struct tfs_write_result res;
	struct tfs_array *a;
	struct wt_dump got, want;

	wt_env_init(&e, 2);
	lb_schema_init(&s, 22, false, 10000);
	lb_add_dim(&s, "y", TFS_INT32, 0, 15, 8);
	lb_add_dim(&s, "x", TFS_INT32, 0, 23, 12);
	at = lb_add_attr(&s, "rgb", TFS_UINT8, 1, false);
	lb_add_filter(&at->filters, TFS_FILTER_WEBP);
	at->filters.filters[0].webp_lossless = 1;
	at->filters.filters[0].webp_format = 1;
	at->filters.filters[0].webp_y_extent = 8;
	at->filters.filters[0].webp_x_extent = 12;
	create(&e, "/w", &s);
	gen_col(&g, "rgb", TFS_UINT8, 1, false, 96, false);
	batch_of(&b, &col, &g, 1, 96);
	box[0].lo = (const uint8_t *)&r[0];
	box[0].hi = (const uint8_t *)&r[1];
	box[1].lo = (const uint8_t *)&c[0];
	box[1].hi = (const uint8_t *)&c[1];
	box[0].lo_len = box[0].hi_len = box[1].lo_len = box[1].hi_len = 4;
	cr_assert_eq(write_batch(&e, "/w", TFS_WRITE_DENSE_BOX, box, &b, NULL,
				 &res),
		     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
	a = open_array(&e, "/w");
	{
		struct tfs_query_opts qo = { .subarray = box };
		const char *f[] = { "rgb" };
		struct tfs_query *q;
		const struct tfs_batch *rb;

		qo.fields = f;
		qo.field_num = 1;
		memset(&got, 0, sizeof(got));
		cr_assert_eq(tfs_query_open(a, &qo, &q, &e.d), TFS_E_OK, "%s",
			     tfs_diag_msg(&e.d));
		while (!tfs_query_next(q, &rb, &e.d) && rb)
			wt_dump_batch(&got, rb);
		tfs_query_close(q);
	}
	memset(&want, 0, sizeof(want));
	wt_dump_batch(&want, &b);
	wt_expect_dump_eq(&got, &want);
	wt_dump_release(&got);
	wt_dump_release(&want);
	tfs_array_close(a);
	gcol_free(&g);
	wt_env_free(&e);
}

Test(filters, encrypted_needs_the_key)
{
	struct wt_env e;
	struct tfs_schema s;
	struct gcol g[2];
	struct tfs_column cols[2];
	struct tfs_batch b;
	int64_t coords[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct tfs_write_result res;
	struct tfs_array *a;
	uint8_t wrong[32];

	wt_env_init(&e, 2);
	e.wo.key = KEY;
	lb_schema_init(&s, 22, true, 4);
	lb_add_dim(&s, "d", TFS_INT32, 0, 100, 10);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	create(&e, "/e", &s);
	gen_coords(&g[0], "d", TFS_INT32, coords, 10);
	gen_col(&g[1], "v", TFS_INT32, 1, false, 10, false);
	batch_of(&b, cols, g, 2, 10);
	cr_assert_eq(write_batch(&e, "/e", TFS_WRITE_UNORDERED, NULL, &b, NULL,
				 &res),
		     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
	/* Without a key, with a wrong key: refused. */
	e.wo.key = NULL;
	cr_assert_eq(write_batch(&e, "/e", TFS_WRITE_UNORDERED, NULL, &b, NULL,
				 &res),
		     TFS_E_KEY);
	memcpy(wrong, KEY, 32);
	wrong[3] ^= 1;
	e.wo.key = wrong;
	cr_assert_eq(write_batch(&e, "/e", TFS_WRITE_UNORDERED, NULL, &b, NULL,
				 &res),
		     TFS_E_KEY);
	e.oo.key = wrong;
	cr_assert_eq(tfs_array_open("/e", &e.oo, &a, &e.d), TFS_E_KEY);
	e.oo.key = KEY;
	a = open_array(&e, "/e");
	{
		struct wt_dump got;

		wt_read(a, NULL, &got);
		cr_assert_eq(got.n, 10);
		wt_dump_release(&got);
	}
	tfs_array_close(a);
	gcol_free(&g[0]);
	gcol_free(&g[1]);
	wt_env_free(&e);
}

/* Overlapping dense boxes: the later write wins where they overlap; cells
 * nobody wrote read as the fill value. */
Test(dense, newest_wins)
{
	struct wt_env e;
	struct tfs_schema s;
	int32_t v1[12], v2[6];
	int32_t r1[2] = { 1, 3 }, c1[2] = { 1, 4 }, r2[2] = { 3, 4 }, c2[2] = { 3, 5 };
	struct tfs_range box[2];
	struct tfs_column col = { .name = "a", .type = TFS_INT32, .cell_val_num = 1 };
	struct tfs_batch b = { .column_num = 1, .columns = &col };
	struct tfs_write_result res;
	struct tfs_array *a;
	struct wt_dump got;
	int32_t all[2] = { 1, 5 };

	wt_env_init(&e, 2);
	lb_schema_init(&s, 22, false, 100);
	lb_add_dim(&s, "r", TFS_INT32, 1, 10, 3);
	lb_add_dim(&s, "c", TFS_INT32, 1, 12, 5);
	lb_add_attr(&s, "a", TFS_INT32, 1, false);
	create(&e, "/d", &s);
	for (int i = 0; i < 12; i++)
		v1[i] = 100 + i;
	for (int i = 0; i < 6; i++)
		v2[i] = 200 + i;
	box_of(box, r1, c1);
	col.data = (const uint8_t *)v1;
	col.data_len = sizeof(v1);
	b.cell_num = 12;
	cr_assert_eq(write_batch(&e, "/d", TFS_WRITE_DENSE_BOX, box, &b, NULL, &res),
		     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
	box_of(box, r2, c2);
	col.data = (const uint8_t *)v2;
	col.data_len = sizeof(v2);
	b.cell_num = 6;
	cr_assert_eq(write_batch(&e, "/d", TFS_WRITE_DENSE_BOX, box, &b, NULL, &res),
		     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
	a = open_array(&e, "/d");
	box_of(box, all, all);
	{
		struct tfs_query_opts qo = { .subarray = box };
		const char *f[] = { "a" };
		struct tfs_query *q;
		const struct tfs_batch *rb;
		int32_t want[25];

		qo.fields = f;
		qo.field_num = 1;
		for (int r = 1; r <= 5; r++)
			for (int c = 1; c <= 5; c++) {
				int32_t v = INT32_MIN;

				if (r <= 3 && c <= 4)
					v = 100 + (r - 1) * 4 + (c - 1);
				if (r >= 3 && r <= 4 && c >= 3)
					v = 200 + (r - 3) * 3 + (c - 3);
				want[(r - 1) * 5 + (c - 1)] = v;
			}
		memset(&got, 0, sizeof(got));
		cr_assert_eq(tfs_query_open(a, &qo, &q, &e.d), TFS_E_OK, "%s",
			     tfs_diag_msg(&e.d));
		uint64_t at = 0;
		while (!tfs_query_next(q, &rb, &e.d) && rb) {
			for (uint64_t i = 0; i < rb->cell_num; i++, at++) {
				int32_t v;

				memcpy(&v, rb->columns[0].data + 4 * i, 4);
				cr_expect_eq(v, want[at], "cell %" PRIu64 ": %d, want %d",
					     at, v, want[at]);
			}
		}
		cr_expect_eq(at, 25);
		tfs_query_close(q);
	}
	tfs_array_close(a);
	wt_env_free(&e);
}

Test(refuse, nan_coordinate)
{
	struct wt_env e;
	struct tfs_schema s;
	struct tfs_dim *d;
	double lo = -10, hi = 10, ext = 5, xs[3] = { 1, 0.0 / 0.0, 2 };
	int32_t v[3] = { 1, 2, 3 };
	struct tfs_column cols[2] = {
		{ .name = "x", .type = TFS_FLOAT64, .cell_val_num = 1,
		  .data = (const uint8_t *)xs, .data_len = sizeof(xs) },
		{ .name = "v", .type = TFS_INT32, .cell_val_num = 1,
		  .data = (const uint8_t *)v, .data_len = sizeof(v) },
	};
	struct tfs_batch b = { .cell_num = 3, .column_num = 2, .columns = cols };
	uint64_t tags[3] = { 10, 11, 12 };
	struct tfs_write_result res;

	wt_env_init(&e, 2);
	lb_schema_init(&s, 22, true, 8);
	d = lb_add_dim(&s, "x", TFS_FLOAT64, 0, 0, 0);
	memcpy(d->domain[0], &lo, 8);
	memcpy(d->domain[1], &hi, 8);
	memcpy(d->extent, &ext, 8);
	d->has_extent = true;
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	create(&e, "/f", &s);
	e.wo.tag_word = "row";
	cr_assert_eq(write_batch(&e, "/f", TFS_WRITE_UNORDERED, NULL, &b, tags, &res),
		     TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d), "row 11: dimension 'x': NaN");
	xs[1] = 10.5;
	cr_assert_eq(write_batch(&e, "/f", TFS_WRITE_UNORDERED, NULL, &b, tags, &res),
		     TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d),
			 "row 11: dimension 'x': 10.5 outside the domain");
	wt_env_free(&e);
}

/* Every datatype of the format as an attribute: fixed (one value a cell)
 * for numbers, dates and times, var-size for strings, blobs, geometries
 * and ANY; every other one nullable. */
Test(roundtrip, every_datatype)
{
	static const char *const names[] = { "a0", "a1", "a2", "a3",
					     "a4", "a5", "a6", "a7" };
	struct aspec as[8];
	size_t an = 0, total = 0;

	for (unsigned t = 0; t <= TFS_DATATYPE_MAX; t++) {
		enum tfs_type_class cl;

		if (!tfs_datatype_valid(t))
			continue;
		cl = tfs_datatype_class(t);
		as[an].name = names[an];
		as[an].type = (uint8_t)t;
		as[an].cvn = (cl == TFS_CLASS_STRING && t != TFS_CHAR) ||
					     cl == TFS_CLASS_BYTES
				     ? TFS_VAR_NUM
				     : 1;
		as[an].nullable = t % 2 == 1;
		an++;
		total++;
		if (an == 8 || t == TFS_DATATYPE_MAX) {
			dtypes_case(as, an, 33, 2);
			an = 0;
		}
	}
	cr_expect_eq(total, 44);
}

/* Two overlapping sparse fragments in each global order: the reader
 * merges fragments assuming that order, so a fragment out of order shows
 * here as missing or doubled cells. The later value must win. */
static void overlap_case(uint8_t cell_order, uint8_t tile_order)
{
	struct wt_env e;
	struct tfs_schema s;
	enum { N = 600, SIDE = 40 };
	int32_t x[2][N], y[2][N], v[2][N];
	int32_t want[SIDE * SIDE];
	struct tfs_write_result res;
	struct tfs_array *a;
	struct wt_dump got;
	uint64_t cells = 0;

	wt_env_init(&e, 2);
	lb_schema_init(&s, 22, true, 17);
	s.cell_order = cell_order;
	s.tile_order = tile_order;
	lb_add_dim(&s, "x", TFS_INT32, 0, SIDE - 1, 7);
	lb_add_dim(&s, "y", TFS_INT32, 0, SIDE - 1, 5);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	create(&e, "/o", &s);
	for (int i = 0; i < SIDE * SIDE; i++)
		want[i] = -1;
	for (int f = 0; f < 2; f++) {
		int64_t perm[SIDE * SIDE];
		struct tfs_column cols[3] = {
			{ .name = "x", .type = TFS_INT32, .cell_val_num = 1,
			  .data = (const uint8_t *)x[f], .data_len = 4 * N },
			{ .name = "y", .type = TFS_INT32, .cell_val_num = 1,
			  .data = (const uint8_t *)y[f], .data_len = 4 * N },
			{ .name = "v", .type = TFS_INT32, .cell_val_num = 1,
			  .data = (const uint8_t *)v[f], .data_len = 4 * N },
		};
		struct tfs_batch b = { .cell_num = N, .column_num = 3, .columns = cols };

		shuffled(perm, SIDE * SIDE, 0, 1);
		for (int i = 0; i < N; i++) {
			x[f][i] = (int32_t)(perm[i] / SIDE);
			y[f][i] = (int32_t)(perm[i] % SIDE);
			v[f][i] = f * 100000 + i;
			want[perm[i]] = v[f][i];
		}
		cr_assert_eq(write_batch(&e, "/o", TFS_WRITE_UNORDERED, NULL, &b,
					 NULL, &res),
			     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
	}
	wt_check_order_2d_i32(e.vfs, "/o");
	a = open_array(&e, "/o");
	wt_read(a, NULL, &got);
	for (int i = 0; i < SIDE * SIDE; i++)
		cells += want[i] >= 0;
	cr_assert_eq(got.n, cells);
	/* Lines are hex x|y|v; check each against the expectation. */
	for (size_t i = 0; i < got.n; i++) {
		unsigned xb[4], yb[4], vb[4];

		cr_assert_eq(sscanf(got.lines[i],
				    "%2x%2x%2x%2x|%2x%2x%2x%2x|%2x%2x%2x%2x", &xb[0],
				    &xb[1], &xb[2], &xb[3], &yb[0], &yb[1], &yb[2],
				    &yb[3], &vb[0], &vb[1], &vb[2], &vb[3]),
			     12);
		int32_t xx = (int32_t)(xb[0] | xb[1] << 8);
		int32_t yy = (int32_t)(yb[0] | yb[1] << 8);
		int32_t vv = (int32_t)(vb[0] | vb[1] << 8 | vb[2] << 16 | vb[3] << 24);

		cr_expect_eq(vv, want[xx * SIDE + yy], "(%d, %d): %d, want %d", xx,
			     yy, vv, want[xx * SIDE + yy]);
	}
	wt_dump_release(&got);
	tfs_array_close(a);
	wt_env_free(&e);
}

Test(sparse, overlap_row_major) { overlap_case(TFS_ROW_MAJOR, TFS_ROW_MAJOR); }
Test(sparse, overlap_col_major) { overlap_case(TFS_COL_MAJOR, TFS_COL_MAJOR); }
Test(sparse, overlap_mixed) { overlap_case(TFS_ROW_MAJOR, TFS_COL_MAJOR); }
Test(sparse, overlap_hilbert) { overlap_case(TFS_HILBERT, TFS_ROW_MAJOR); }
