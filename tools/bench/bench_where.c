/* tfs-bench-where: filter pushdown and statistics from fragment metadata.
 *
 * Writes (with the project's writer) a dense 1-D array of SIZE MB of
 * INT32 values, ZSTD-compressed, tiles of 1 Mi cells (4 MiB), whose values
 * are clustered along the dimension: the cells of the k-th thousandth of
 * the array hold values in [1000 k, 1000 k + 999]. Then, with a warm page
 * cache and a fresh decoded-tile cache per measurement (its misses count
 * the tiles decoded):
 *
 *   full      every cell of v (tfs_query_next);
 *   filtered  the cells with v >= 990000, about 1 % (their count checked
 *             against the generator's): tiles whose minimum
 *             and maximum in the fragment metadata exclude a match are
 *             neither read nor decoded;
 *   stats     count, min, max and sum of v over the whole array from a
 *             freshly opened array: from fragment metadata, no tile read;
 *   stats (decoded)  the same with a condition that keeps every cell,
 *             which reads them all (one run); both must agree.
 *
 * Each figure is the best of 3 runs. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tilefs/tilefs.h>

#define TILE_CELLS (UINT64_C(1) << 20)
#define THRESHOLD 990000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t r)
{
	r ^= r >> 33;
	r *= UINT64_C(0xff51afd7ed558ccd);
	r ^= r >> 33;
	return r;
}

static uint64_t g_cells;

static int32_t value_at(uint64_t i)
{
	uint64_t bucket = i / (g_cells / 1000);

	if (bucket > 999)
		bucket = 999;
	return (int32_t)(bucket * 1000 + mix(i) % 1000);
}

static void die(const char *what, const struct tfs_diag *d)
{
	fprintf(stderr, "tfs-bench-where: %s: %s\n", what, tfs_diag_msg(d));
	exit(1);
}

static void make_array(const char *path)
{
	char json[512];
	struct tfs_schema *s;
	struct tfs_write_opts wo = {0};
	struct tfs_write_result res;
	struct tfs_writer *w;
	struct tfs_diag d;
	int64_t lo = 0, hi = (int64_t)g_cells - 1;
	struct tfs_range box = {(const uint8_t *)&lo, (const uint8_t *)&hi, 8,
				8};
	uint64_t chunk = 4 * TILE_CELLS;
	int32_t *v = malloc(chunk * sizeof(*v));

	if (!v)
		exit(1);
	snprintf(json, sizeof(json),
		 "{\"array_type\":\"dense\",\"dims\":[{\"name\":\"d\","
		 "\"type\":\"INT64\",\"domain\":[0,%" PRIu64
		 "],\"tile\":%" PRIu64
		 "}],\"attrs\":[{\"name\":\"v\",\"type\":\"INT32\","
		 "\"filters\":[\"ZSTD(level=1)\"]}]}",
		 g_cells - 1, TILE_CELLS);
	tfs_diag_init(&d);
	if (tfs_schema_from_json_new(json, strlen(json), &s, &d) ||
	    tfs_array_create(path, s, NULL, &d))
		die("create", &d);
	tfs_schema_free(s);
	if (tfs_writer_open(path, &wo, TFS_WRITE_DENSE_BOX, &box, &w, &d))
		die("write", &d);
	for (uint64_t at = 0; at < g_cells; at += chunk) {
		uint64_t n = g_cells - at < chunk ? g_cells - at : chunk;
		struct tfs_column col = {.name = "v",
					 .type = TFS_INT32,
					 .cell_val_num = 1,
					 .data = (const uint8_t *)v,
					 .data_len = n * 4};
		struct tfs_batch b = {.cell_num = n,
				      .column_num = 1,
				      .columns = &col};

		for (uint64_t i = 0; i < n; i++)
			v[i] = value_at(at + i);
		if (tfs_writer_append(w, &b, NULL, &d))
			die("write", &d);
	}
	if (tfs_writer_commit(w, &res, &d))
		die("commit", &d);
	tfs_writer_free(w);
	free(v);
}

struct run {
	double seconds;
	uint64_t cells, decoded, from_meta;
	struct tfs_field_stats st;
};

static struct tfs_array *open_with(const char *path,
				   struct tfs_tile_cache **cache)
{
	struct tfs_open_opts oo = {0};
	struct tfs_array *a;
	struct tfs_diag d;

	tfs_diag_init(&d);
	if (tfs_tile_cache_new(64 << 20, cache))
		exit(1);
	oo.cache = *cache;
	if (tfs_array_open(path, &oo, &a, &d))
		die("open", &d);
	return a;
}

static uint64_t misses(struct tfs_tile_cache *c)
{
	struct tfs_tile_cache_stats st;

	tfs_tile_cache_get_stats(c, &st);
	return st.misses;
}

/* A read of v (with cond, or all of it). */
static struct run read_v(const char *path, const struct tfs_where *cond)
{
	const char *names[2] = {"v", "d"};
	struct tfs_query_opts qo = {.fields = names,
				    .field_num = cond ? 2 : 1,
				    .condition = cond};
	struct tfs_tile_cache *cache;
	struct tfs_array *a;
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	struct run r = {0};
	double t0;

	a = open_with(path, &cache);
	t0 = now_s();
	tfs_diag_init(&d);
	if (tfs_query_open(a, &qo, &q, &d))
		die("query", &d);
	while (!tfs_query_next(q, &b, &d) && b) {
		const int32_t *v =
			(const int32_t *)(const void *)b->columns[0].data;

		if (cond) {
			const int64_t *c =
				(const int64_t *)(const void *)b->columns[1]
					.data;

			for (uint64_t i = 0; i < b->cell_num; i++)
				if (v[i] < THRESHOLD ||
				    v[i] != value_at((uint64_t)c[i])) {
					fprintf(stderr,
						"wrong cell %" PRId64 "\n",
						c[i]);
					exit(1);
				}
		}
		r.cells += b->cell_num;
	}
	if (d.code)
		die("read", &d);
	tfs_query_close(q);
	r.seconds = now_s() - t0;
	r.decoded = misses(cache);
	tfs_array_close(a);
	tfs_tile_cache_free(cache);
	return r;
}

/* Whole-array statistics of v from a freshly opened array. */
static struct run stats_v(const char *path, const struct tfs_where *cond)
{
	const char *name = "v";
	struct tfs_query_opts qo = {.fields = &name,
				    .field_num = 1,
				    .condition = cond};
	struct tfs_tile_cache *cache;
	struct tfs_array *a;
	struct tfs_diag d;
	struct run r = {0};
	double t0 = now_s();

	a = open_with(path, &cache);
	tfs_diag_init(&d);
	if (tfs_query_stats(a, &qo, &r.st, &d))
		die("stats", &d);
	r.seconds = now_s() - t0;
	r.decoded = misses(cache);
	r.from_meta = r.st.tiles_from_metadata;
	r.cells = r.st.count;
	tfs_array_close(a);
	tfs_tile_cache_free(cache);
	return r;
}

static struct run best(struct run (*fn)(const char *, const struct tfs_where *),
		       const char *path, const struct tfs_where *cond)
{
	struct run b = {0};

	for (int i = 0; i < 3; i++) {
		struct run r = fn(path, cond);

		if (i == 0 || r.seconds < b.seconds) {
			tfs_field_stats_release(&b.st);
			b = r;
		} else {
			tfs_field_stats_release(&r.st);
		}
	}
	return b;
}

static void usage(void)
{
	fprintf(stderr, "usage: tfs-bench-where [-s SIZE_MB] [-d DIR] [-k]\n"
			"  -s  array size in MB of INT32 values (default 256; "
			"the issue's figure is 1024)\n"
			"  -d  where to write it (default $TMPDIR or /tmp)\n"
			"  -k  keep it\n");
	exit(2);
}

/* The generator's count of the cells the filter keeps. */
static bool filtered_count_ok(const struct run *filt)
{
	uint64_t want = 0;

	for (uint64_t i = 0; i < g_cells; i++)
		want += value_at(i) >= THRESHOLD;
	if (filt->cells != want) {
		fprintf(stderr, "filtered read: %" PRIu64
				" cells, the generator says %" PRIu64 "\n",
			filt->cells, want);
		return false;
	}
	return true;
}

static void print_runs(const struct run *full, const struct run *filt,
		       const struct run *st, const struct run *st_full,
		       uint64_t tiles)
{
	printf("full read       %8.3f s  %10" PRIu64 " cells  %5" PRIu64
	       " tiles decoded\n",
	       full->seconds, full->cells, full->decoded);
	printf("filtered read   %8.3f s  %10" PRIu64 " cells  %5" PRIu64
	       " tiles decoded (%.1f %% of the tiles, %.1f %% of the cells)"
	       "  %.1fx faster\n",
	       filt->seconds, filt->cells, filt->decoded,
	       100.0 * (double)filt->decoded / (double)tiles,
	       100.0 * (double)filt->cells / (double)g_cells,
	       full->seconds / filt->seconds);
	printf("stats           %8.3f s  %10" PRIu64 " cells  %5" PRIu64
	       " tiles decoded, %" PRIu64 " from metadata\n",
	       st->seconds, st->cells, st->decoded, st->from_meta);
	printf("stats (decoded) %8.3f s  %10" PRIu64 " cells  %5" PRIu64
	       " tiles decoded\n",
	       st_full->seconds, st_full->cells, st_full->decoded);
}

/* Whether the statistics from metadata equal the full computation's. */
static bool stats_equal(const struct run *st, const struct run *st_full)
{
	return st->st.count == st_full->st.count &&
	       st->st.sum_hi == st_full->st.sum_hi &&
	       st->st.sum_lo == st_full->st.sum_lo &&
	       memcmp(st->st.min, st_full->st.min, 4) == 0 &&
	       memcmp(st->st.max, st_full->st.max, 4) == 0;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	uint64_t size_mb = 256, tiles;
	bool keep = false;
	char root[4096], path[4200], cmd[4300];
	int32_t thr = THRESHOLD;
	struct tfs_where cond = {.op = TFS_WHERE_GE,
				 .field = "v",
				 .value = (uint8_t *)&thr,
				 .value_len = 4,
				 .value_num = 1};
	struct tfs_where all = {.op = TFS_WHERE_TRUE};
	struct run full, filt, st, st_full;
	double t0;
	int opt;

	while ((opt = getopt(argc, argv, "s:d:k")) != -1) {
		switch (opt) {
		case 's':
			size_mb = strtoull(optarg, NULL, 10);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keep = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || size_mb == 0)
		usage();
	g_cells = (size_mb << 20) / 4;
	tiles = (g_cells + TILE_CELLS - 1) / TILE_CELLS;
	if (!tfs_temp_template(root, sizeof(root), dir, "tfs-bench-where-") ||
	    !mkdtemp(root)) {
		perror(root);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/array", root);
	t0 = now_s();
	make_array(path);
	printf("wrote %s: %" PRIu64 " MB, %" PRIu64 " cells, %" PRIu64
	       " tiles in %.1f s\n",
	       path, size_mb, g_cells, tiles, now_s() - t0);
	snprintf(cmd, sizeof(cmd), "cat '%s'/__fragments/*/* > /dev/null",
		 path);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not pre-read the array\n");

	full = best(read_v, path, NULL);
	filt = best(read_v, path, &cond);
	if (!filtered_count_ok(&filt))
		return 1;
	st = best(stats_v, path, NULL);
	st_full = stats_v(path, &all); /* the check: one run */
	print_runs(&full, &filt, &st, &st_full, tiles);
	if (!stats_equal(&st, &st_full)) {
		fprintf(stderr, "statistics from metadata differ from the "
				"full computation\n");
		return 1;
	}
	printf("statistics from metadata equal the full computation\n");
	tfs_field_stats_release(&st.st);
	tfs_field_stats_release(&st_full.st);
	if (!keep) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			fprintf(stderr, "warning: could not remove %s\n", root);
	}
	return 0;
}
