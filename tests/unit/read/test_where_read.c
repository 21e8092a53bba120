/* Reads with a condition and statistics on arrays written for the test:
 * a dense 1-D array of 100 tiles whose values grow tile by tile, and a
 * sparse one. A filter that one tile can satisfy decodes that tile only
 * (the tile cache counts the decodes); whole-array statistics come from
 * fragment metadata, equal to those of a full read; a second fragment
 * over part of the array sends those tiles back to decoding. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tilefs/tilefs.h>

#include "array_test_util.h"

#define TILE 1000
#define TILES 100
#define CELLS (TILE * TILES)

static char root[256];

static void make_dense(const char *path)
{
	static const char schema[] =
		"{\"array_type\":\"dense\",\"dims\":[{\"name\":\"d\","
		"\"type\":\"INT64\",\"domain\":[0,99999],\"tile\":1000}],"
		"\"attrs\":[{\"name\":\"v\",\"type\":\"INT32\","
		"\"filters\":[\"ZSTD(level=1)\"]}]}";

	at_create(path, schema);
}

/* Writes v over [lo, hi]: tile t holds t * 1000 + (i % 1000) / 10 plus
 * `add`, so each tile's values lie in [t * 1000, t * 1000 + 99] + add. */
static void write_dense(const char *path, int64_t lo, int64_t hi, int32_t add)
{
	uint64_t n = (uint64_t)(hi - lo + 1);
	int32_t *v = malloc(n * sizeof(*v));
	struct tfs_range box = {(const uint8_t *)&lo, (const uint8_t *)&hi, 8,
				8};
	struct tfs_column col = {.name = "v",
				 .type = TFS_INT32,
				 .cell_val_num = 1,
				 .data = (uint8_t *)v,
				 .data_len = n * 4};
	struct tfs_batch b = {.cell_num = n, .column_num = 1, .columns = &col};

	cr_assert(v);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t c = (uint64_t)lo + i;

		v[i] = (int32_t)((c / TILE) * 1000 + (c % TILE) / 10) + add;
	}
	at_write(path, TFS_WRITE_DENSE_BOX, &box, &b);
	free(v);
	usleep(2000); /* the next write gets a later time */
}

static void setup(void)
{
	cr_assert_not_null(tfs_temp_template(root, sizeof(root), "/tmp",
					     "tfs_where_"));
	cr_assert_not_null(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

/* Opens path with a fresh tile cache (its misses count the decodes). */
static struct tfs_array *open_counted(const char *path,
				      struct tfs_tile_cache **cache)
{
	struct tfs_open_opts oo = {.threads = 1};
	struct tfs_array *a;
	struct tfs_diag d;

	cr_assert_eq(tfs_tile_cache_new(64 << 20, cache), TFS_E_OK);
	oo.cache = *cache;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(path, &oo, &a, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	return a;
}

static uint64_t decodes(struct tfs_tile_cache *c)
{
	struct tfs_tile_cache_stats st;

	tfs_tile_cache_get_stats(c, &st);
	return st.misses;
}

/* Cells of field "v" (and "d") matching cond, checked against
 * want(d, v). */
static uint64_t read_where(struct tfs_array *a, const struct tfs_where *cond,
			   bool (*want)(int64_t d, int32_t v))
{
	const char *names[] = {"d", "v"};
	struct tfs_query_opts qo = {.fields = names,
				    .field_num = 2,
				    .condition = cond,
				    .batch_cells = 4096};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	uint64_t n = 0;
	int64_t last = -1;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_query_cell_count(q), UINT64_MAX);
	while (!tfs_query_next(q, &b, &d) && b) {
		const int64_t *dv =
			(const int64_t *)(const void *)b->columns[0].data;
		const int32_t *vv =
			(const int32_t *)(const void *)b->columns[1].data;

		for (uint64_t i = 0; i < b->cell_num; i++) {
			cr_assert(want(dv[i], vv[i]), "cell %ld = %d",
				  (long)dv[i], vv[i]);
			cr_assert_gt(dv[i], last, "row-major order");
			last = dv[i];
		}
		n += b->cell_num;
	}
	tfs_query_close(q);
	return n;
}

static bool want_any(int64_t d, int32_t v)
{
	return (d / TILE) * 1000 + (d % TILE) / 10 == v;
}

static bool want_ge(int64_t d, int32_t v)
{
	return v >= 42000 && (d / TILE) * 1000 + (d % TILE) / 10 == v;
}

Test(where_read, dense_filter_decodes_one_tile, .init = setup, .fini = teardown)
{
	char path[300];
	struct tfs_tile_cache *cache;
	struct tfs_array *a;
	int32_t lo = 42000, hi = 42099;
	struct tfs_where kids[2] = {
		{.op = TFS_WHERE_GE,
		 .field = "v",
		 .value = (uint8_t *)&lo,
		 .value_len = 4,
		 .value_num = 1},
		{.op = TFS_WHERE_LE,
		 .field = "v",
		 .value = (uint8_t *)&hi,
		 .value_len = 4,
		 .value_num = 1},
	};
	struct tfs_where both = {.op = TFS_WHERE_AND,
				 .children = kids,
				 .child_num = 2};

	snprintf(path, sizeof(path), "%s/dense", root);
	make_dense(path);
	write_dense(path, 0, CELLS - 1, 0);
	a = open_counted(path, &cache);
	/* v in [42000, 42099]: tile 42 only. */
	cr_assert_eq(read_where(a, &both, want_ge), TILE);
	cr_assert_eq(decodes(cache), 1, "decoded %lu tiles",
		     (unsigned long)decodes(cache));
	/* v >= 42000: 58 tiles hold matches, the other 42 are skipped. */
	cr_assert_eq(read_where(a, &kids[0], want_ge), 58 * TILE);
	cr_assert_eq(decodes(cache), 58);
	tfs_array_close(a);
	tfs_tile_cache_free(cache);
}

static void stats_of(struct tfs_array *a, const struct tfs_where *cond,
		     struct tfs_field_stats *st)
{
	const char *name = "v";
	struct tfs_query_opts qo = {.fields = &name,
				    .field_num = 1,
				    .condition = cond};
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_stats(a, &qo, st, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
}

static void assert_same(const struct tfs_field_stats *x,
			const struct tfs_field_stats *y)
{
	cr_assert_eq(x->count, y->count);
	cr_assert_eq(x->null_count, y->null_count);
	cr_assert_eq(x->has_bounds, y->has_bounds);
	cr_assert_eq(memcmp(x->min, y->min, 4), 0);
	cr_assert_eq(memcmp(x->max, y->max, 4), 0);
	cr_assert_eq(x->sum_kind, TFS_SUM_INT);
	cr_assert_eq(x->sum_hi, y->sum_hi);
	cr_assert_eq(x->sum_lo, y->sum_lo);
}

Test(where_read, stats_from_metadata, .init = setup, .fini = teardown)
{
	char path[300];
	struct tfs_tile_cache *cache;
	struct tfs_array *a;
	struct tfs_field_stats meta, full;
	struct tfs_where all = {.op = TFS_WHERE_TRUE};
	int32_t v;

	snprintf(path, sizeof(path), "%s/dense", root);
	make_dense(path);
	write_dense(path, 0, CELLS - 1, 0);
	a = open_counted(path, &cache);
	stats_of(a, NULL, &meta);
	cr_assert_eq(meta.tiles_from_metadata, TILES);
	cr_assert_eq(meta.cells_decoded, 0);
	cr_assert_eq(decodes(cache), 0);
	/* A condition that keeps every cell reads them all. */
	stats_of(a, &all, &full);
	cr_assert_eq(full.tiles_from_metadata, 0);
	cr_assert_eq(full.cells_decoded, CELLS);
	assert_same(&meta, &full);
	memcpy(&v, meta.max, 4);
	cr_assert_eq(v, 99099);
	tfs_field_stats_release(&meta);
	tfs_field_stats_release(&full);
	tfs_array_close(a);
	tfs_tile_cache_free(cache);

	/* A newer fragment over cells 10500..12499: tiles 10 and 12 hold
	 * cells of both fragments and are decoded; tile 11, which the new
	 * fragment covers whole, and the 97 others come from metadata. */
	write_dense(path, 10500, 12499, 7);
	a = open_counted(path, &cache);
	stats_of(a, NULL, &meta);
	cr_assert_eq(meta.tiles_from_metadata, TILES - 2);
	cr_assert_eq(meta.cells_decoded, 2 * TILE);
	stats_of(a, &all, &full);
	assert_same(&meta, &full);
	tfs_field_stats_release(&meta);
	tfs_field_stats_release(&full);
	tfs_array_close(a);
	tfs_tile_cache_free(cache);
}

/* Sparse: 100 tiles of 1000 cells (capacity 1000), d = 0..99999 written
 * in one fragment, v growing tile by tile as in the dense array. */
static void make_sparse(const char *path)
{
	static const char schema[] =
		"{\"array_type\":\"sparse\",\"capacity\":1000,\"dims\":[{"
		"\"name\":\"d\",\"type\":\"INT64\",\"domain\":[0,99999],"
		"\"tile\":100000}],\"attrs\":[{\"name\":\"v\",\"type\":\"INT32\"}]}";
	int64_t *dv = malloc(CELLS * sizeof(*dv));
	int32_t *v = malloc(CELLS * sizeof(*v));
	struct tfs_column cols[2] = {
		{.name = "d",
		 .type = TFS_INT64,
		 .cell_val_num = 1,
		 .is_dim = true,
		 .data = (uint8_t *)dv,
		 .data_len = CELLS * 8},
		{.name = "v",
		 .type = TFS_INT32,
		 .cell_val_num = 1,
		 .data = (uint8_t *)v,
		 .data_len = CELLS * 4},
	};
	struct tfs_batch b = {.cell_num = CELLS,
			      .column_num = 2,
			      .columns = cols};

	cr_assert(dv && v);
	for (uint64_t i = 0; i < CELLS; i++) {
		dv[i] = (int64_t)i;
		v[i] = (int32_t)((i / TILE) * 1000 + (i % TILE) / 10);
	}
	at_create(path, schema);
	at_write(path, TFS_WRITE_UNORDERED, NULL, &b);
	free(dv);
	free(v);
}

Test(where_read, sparse_filter_skips_tiles, .init = setup, .fini = teardown)
{
	char path[300];
	struct tfs_tile_cache *cache;
	struct tfs_array *a;
	struct tfs_field_stats meta, full;
	struct tfs_where all = {.op = TFS_WHERE_TRUE};
	int32_t lo = 42000;
	struct tfs_where ge = {.op = TFS_WHERE_GE,
			       .field = "v",
			       .value = (uint8_t *)&lo,
			       .value_len = 4,
			       .value_num = 1};
	uint64_t whole;

	snprintf(path, sizeof(path), "%s/sparse", root);
	make_sparse(path);
	a = open_counted(path, &cache);
	/* Every cell: the coordinates and values of 100 tiles. */
	cr_assert_eq(read_where(a, &all, want_any), CELLS);
	whole = decodes(cache);
	cr_assert_geq(whole, 2 * TILES);
	tfs_array_close(a);
	tfs_tile_cache_free(cache);
	/* v >= 42000: 58 tiles of the 100 are read. */
	a = open_counted(path, &cache);
	cr_assert_eq(read_where(a, &ge, want_ge), 58 * TILE);
	cr_assert_eq(decodes(cache), whole * 58 / TILES, "decoded %lu of %lu",
		     (unsigned long)decodes(cache), (unsigned long)whole);
	/* Statistics: every tile from metadata, equal to a full read. */
	stats_of(a, NULL, &meta);
	cr_assert_eq(meta.tiles_from_metadata, TILES);
	cr_assert_eq(meta.cells_decoded, 0);
	stats_of(a, &all, &full);
	cr_assert_eq(full.cells_decoded, CELLS);
	assert_same(&meta, &full);
	tfs_field_stats_release(&meta);
	tfs_field_stats_release(&full);
	tfs_array_close(a);
	tfs_tile_cache_free(cache);
}
