/* The decoded-tile cache: reads through it equal reads without it, a
 * second read of the same tiles decodes nothing, a budget too small for
 * any tile caches nothing and still reads right, and concurrent readers
 * of the same tiles share them (one decodes, the others wait or hit), and
 * the table grows past its first buckets. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_test_util.h"
#include "tfs_buf.h"
#include "tilefs/tilefs.h"

#define CORPUS TFS_CORPUS_DIR

/* Every byte of every column of a full read of the array at path, in
 * order. */
static void read_path(const char *path, struct tfs_tile_cache *cache,
		      struct tfs_buf *out)
{
	struct tfs_open_opts oo = {.threads = 2, .cache = cache};
	struct tfs_query_opts qo = {.batch_cells = 97};
	struct tfs_array *a;
	struct tfs_query *q;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(path, &oo, &a, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (;;) {
		const struct tfs_batch *b;

		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		for (size_t c = 0; c < b->column_num; c++) {
			const struct tfs_column *col = &b->columns[c];

			cr_assert_eq(tfs_buf_append(out, col->data, col->data_len),
				     TFS_E_OK);
			if (col->var)
				cr_assert_eq(tfs_buf_append(out, col->offsets,
							    (b->cell_num + 1) * 8),
					     TFS_E_OK);
			if (col->validity)
				cr_assert_eq(tfs_buf_append(out, col->validity,
							    b->cell_num),
					     TFS_E_OK);
		}
	}
	tfs_query_close(q);
	tfs_array_close(a);
}

/* read_path of the corpus array `name`. */
static void read_all(const char *name, struct tfs_tile_cache *cache,
		     struct tfs_buf *out)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", CORPUS, name);
	read_path(path, cache, out);
}

static const char *const arrays[] = {
	"dense_2d_rowmajor", "dense_big_tile", "sparse_2d_int",
	"dense_nullable", "sparse_string_dim", "filters_pipelines",
};

Test(tile_cache, same_bytes_and_second_read_hits)
{
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		struct tfs_tile_cache *c;
		struct tfs_tile_cache_stats s1, s2;
		struct tfs_buf plain, first, second;

		tfs_buf_init(&plain, TFS_BUF_NO_MAX);
		tfs_buf_init(&first, TFS_BUF_NO_MAX);
		tfs_buf_init(&second, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_tile_cache_new(64 << 20, &c), TFS_E_OK);
		read_all(arrays[i], NULL, &plain);
		read_all(arrays[i], c, &first);
		tfs_tile_cache_get_stats(c, &s1);
		read_all(arrays[i], c, &second);
		tfs_tile_cache_get_stats(c, &s2);
		cr_expect(plain.len == first.len &&
			  memcmp(plain.data, first.data, plain.len) == 0,
			  "%s: cached read differs", arrays[i]);
		cr_expect(plain.len == second.len &&
			  memcmp(plain.data, second.data, plain.len) == 0,
			  "%s: second cached read differs", arrays[i]);
		cr_expect_gt(s1.misses, 0, "%s", arrays[i]);
		cr_expect_eq(s2.misses, s1.misses,
			     "%s: the second read decoded again", arrays[i]);
		cr_expect_gt(s2.hits, s1.hits, "%s", arrays[i]);
		cr_expect_gt(s2.bytes, 0, "%s", arrays[i]);
		tfs_tile_cache_free(c);
		tfs_buf_release(&plain);
		tfs_buf_release(&first);
		tfs_buf_release(&second);
	}
}

Test(tile_cache, tiny_budget_keeps_nothing)
{
	struct tfs_tile_cache *c;
	struct tfs_tile_cache_stats s;
	struct tfs_buf plain, got;

	tfs_buf_init(&plain, TFS_BUF_NO_MAX);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_cache_new(16, &c), TFS_E_OK);
	read_all("dense_big_tile", NULL, &plain);
	read_all("dense_big_tile", c, &got);
	read_all("dense_big_tile", c, &got);
	tfs_tile_cache_get_stats(c, &s);
	cr_expect_eq(got.len, 2 * plain.len);
	cr_expect(memcmp(got.data, plain.data, plain.len) == 0 &&
		  memcmp(got.data + plain.len, plain.data, plain.len) == 0);
	cr_expect_eq(s.bytes, 0);
	cr_expect_eq(s.hits, 0);
	tfs_tile_cache_free(c);
	tfs_buf_release(&plain);
	tfs_buf_release(&got);
}

struct reader {
	struct tfs_tile_cache *cache;
	struct tfs_buf out;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	read_all("dense_big_tile", r->cache, &r->out);
	return NULL;
}

/* Eight threads read the same array through one small cache (a few
 * tiles, so eviction runs while tiles are in use): every thread gets the
 * same bytes. */
Test(tile_cache, concurrent_readers_share)
{
	struct reader r[8];
	pthread_t th[8];
	struct tfs_tile_cache *c;
	struct tfs_tile_cache_stats s;
	struct tfs_buf plain;

	tfs_buf_init(&plain, TFS_BUF_NO_MAX);
	read_all("dense_big_tile", NULL, &plain);
	cr_assert_eq(tfs_tile_cache_new(300 << 10, &c), TFS_E_OK);
	for (int i = 0; i < 8; i++) {
		r[i].cache = c;
		tfs_buf_init(&r[i].out, TFS_BUF_NO_MAX);
		cr_assert_eq(pthread_create(&th[i], NULL, reader_main, &r[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		cr_expect(r[i].out.len == plain.len &&
			  memcmp(r[i].out.data, plain.data, plain.len) == 0,
			  "reader %d got other bytes", i);
		tfs_buf_release(&r[i].out);
	}
	tfs_tile_cache_get_stats(c, &s);
	cr_expect_gt(s.hits + s.waits, 0, "no reader shared a tile");
	cr_expect_leq(s.bytes, 300 << 10);
	tfs_tile_cache_free(c);
	tfs_buf_release(&plain);
}

/* A sparse array of 20 000 cells in tiles of 2 (capacity 2): 20 000
 * tiles of its two fields, five times the table's first 4 096 buckets. */
static void make_many_tiles(const char *path)
{
	static const char schema[] =
		"{\"array_type\":\"sparse\",\"capacity\":2,\"dims\":[{"
		"\"name\":\"d\",\"type\":\"INT64\",\"domain\":[0,19999],"
		"\"tile\":20000}],\"attrs\":[{\"name\":\"v\",\"type\":"
		"\"INT32\"}]}";
	enum { N = 20000 };
	static int64_t dv[N];
	static int32_t v[N];
	struct tfs_column cols[2] = {
		{.name = "d", .type = TFS_INT64, .cell_val_num = 1,
		 .is_dim = true, .data = (uint8_t *)dv, .data_len = sizeof(dv)},
		{.name = "v", .type = TFS_INT32, .cell_val_num = 1,
		 .data = (uint8_t *)v, .data_len = sizeof(v)},
	};
	struct tfs_batch b = {.cell_num = N, .column_num = 2, .columns = cols};

	for (int i = 0; i < N; i++) {
		dv[i] = i;
		v[i] = i * 7;
	}
	at_create(path, schema);
	at_write(path, TFS_WRITE_UNORDERED, NULL, &b);
}

/* The table doubles past its first buckets: every tile is found again. */
Test(tile_cache, table_grows_and_finds_every_tile)
{
	char root[256], path[300];
	struct tfs_tile_cache *c;
	struct tfs_tile_cache_stats s1, s2;
	struct tfs_buf plain, first, second;

	cr_assert_not_null(tfs_temp_template(root, sizeof(root), "/tmp",
					     "tfs_tile_cache_"));
	cr_assert_not_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/a", root);
	make_many_tiles(path);
	tfs_buf_init(&plain, TFS_BUF_NO_MAX);
	tfs_buf_init(&first, TFS_BUF_NO_MAX);
	tfs_buf_init(&second, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_cache_new(256 << 20, &c), TFS_E_OK);
	read_path(path, NULL, &plain);
	read_path(path, c, &first);
	tfs_tile_cache_get_stats(c, &s1);
	read_path(path, c, &second);
	tfs_tile_cache_get_stats(c, &s2);
	cr_expect(plain.len == first.len && plain.len == second.len &&
		  memcmp(plain.data, first.data, plain.len) == 0 &&
		  memcmp(plain.data, second.data, plain.len) == 0);
	cr_expect_geq(s1.misses, 20000, "%" PRIu64 " tiles decoded", s1.misses);
	cr_expect_eq(s2.misses, s1.misses, "the second read decoded again");
	cr_expect_geq(s2.hits - s1.hits, 20000);
	tfs_tile_cache_free(c);
	tfs_buf_release(&plain);
	tfs_buf_release(&first);
	tfs_buf_release(&second);
	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	cr_assert_eq(system(path), 0);
}
