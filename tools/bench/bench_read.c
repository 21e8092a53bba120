/* tfs-bench-read: decode throughput and memory of the read engine.
 *
 * Generates (once) a dense 2-D FLOAT32 array of at least 1 GB decoded,
 * compressed with ZSTD, written as a TileDB v22 array with the engine's own
 * format and filter encoders: schema generic tile, one fragment whose tiles
 * span the full column range (a row of tiles is one 4 MiB tile), its
 * fragment metadata with every per-slot tile and the footer of
 * format/fragment.md §4, and the commit file last (format/write.md §3–4).
 * The values are a smooth field plus quantised noise, so ZSTD compresses
 * them about as well as it does real measurements.
 *
 * Then it measures, each in a child process of its own so that peak memory
 * (ru_maxrss from wait4) belongs to one measurement: a full read through
 * tfs_query_next with 1 thread and with one per CPU (GB/s decoded and the
 * speedup), a small slice (latency), and a full read that compares every
 * cell with the generator's formula, so the numbers come from correct
 * reads. The file data is read once beforehand so every run starts from a
 * warm page cache: the figures are decode throughput, not disk speed. The
 * CPU column (user + system time of the measuring process) against the wall
 * time shows how many cores a read kept busy. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tilefs/tilefs.h>
#include "tfs_format.h"

#define FORMAT_VERSION 22
#define ZSTD_LEVEL 3
#define CHUNK 65536
#define FRAGMENT_T UINT64_C(1700000001000)
#define SCHEMA_T UINT64_C(1700000000000)
/* Slots of a v22 dense fragment with one attribute and two dimensions:
 * attribute, __coords, d0, d1 (fragment.md §1). */
#define SLOTS 4
#define MAX_GEN_THREADS 64

struct shape {
	uint64_t rows, cols, tile_rows;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

/* ---- The field: smooth waves plus noise, quantised to 1/256 ------------- */

struct axis_terms {
	double s1, s2, c2; /* sin(u), sin(0.13 u), cos(0.13 u) */
	double c1;         /* cos(0.7 u) */
};

static void axis_terms_of(uint64_t i, struct axis_terms *t)
{
	double u = (double)i / 512.0;

	t->s1 = sin(u);
	t->c1 = cos(0.7 * u);
	t->s2 = sin(0.13 * u);
	t->c2 = cos(0.13 * u);
}

static uint32_t noise_hash(uint64_t r, uint64_t c)
{
	uint64_t z = r * UINT64_C(0x9e3779b97f4a7c15) ^ (c + UINT64_C(0x632be59bd9b4e019));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return (uint32_t)(z ^ (z >> 31));
}

/* The value of cell (r, c) from its row and column terms. */
static float field_value(const struct axis_terms *row,
			 const struct axis_terms *col, uint64_t r, uint64_t c)
{
	double smooth = 40.0 * col->s1 * row->c1 +
			10.0 * (col->s2 * row->c2 + col->c2 * row->s2);
	double noise = ((double)(noise_hash(r, c) & 0xffff) / 65536.0 - 0.5) * 0.5;

	return (float)(round((smooth + noise) * 256.0) / 256.0);
}

/* ---- Writing the array ------------------------------------------------- */

static int fail_errno(const char *what, const char *path)
{
	fprintf(stderr, "tfs-bench-read: %s '%s': %s\n", what, path,
		strerror(errno));
	return -1;
}

static int write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	const uint8_t *p = data;

	if (fd < 0)
		return fail_errno("cannot create", path);
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail_errno("cannot write", path);
			close(fd);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) != 0)
		return fail_errno("cannot close", path);
	return 0;
}

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return fail_errno("cannot create folder", path);
	return 0;
}

static struct tfs_pipeline pipeline_of(uint8_t type, uint8_t compressor,
				       int32_t level)
{
	struct tfs_pipeline p;

	memset(&p, 0, sizeof(p));
	p.max_chunk_size = CHUNK;
	p.count = 1;
	p.filters[0].type = type;
	p.filters[0].compressor = compressor;
	p.filters[0].level = level;
	p.filters[0].reinterpret = TFS_NO_REINTERPRET;
	return p;
}

static void put_i32(uint8_t dst[8], int32_t v)
{
	memset(dst, 0, 8);
	memcpy(dst, &v, sizeof(v));
}

/* The schema of format/schema.md for the benchmark array. */
static void schema_build(struct tfs_schema *s, struct tfs_dim dims[2],
			 struct tfs_attr *attr, const struct shape *sh,
			 uint8_t fill[4])
{
	static char row_name[] = "row", col_name[] = "col", attr_name[] = "v";
	const float nan_fill = NAN;

	memset(s, 0, sizeof(*s));
	memset(dims, 0, 2 * sizeof(*dims));
	memset(attr, 0, sizeof(*attr));
	s->version = FORMAT_VERSION;
	s->array_type = TFS_DENSE;
	s->tile_order = TFS_ROW_MAJOR;
	s->cell_order = TFS_ROW_MAJOR;
	s->capacity = 10000;
	s->coords_filters = pipeline_of(TFS_FILTER_ZSTD, TFS_COMP_ZSTD, -1);
	s->offsets_filters = pipeline_of(TFS_FILTER_ZSTD, TFS_COMP_ZSTD, -1);
	s->validity_filters = pipeline_of(TFS_FILTER_RLE, TFS_COMP_RLE, -1);
	for (int k = 0; k < 2; k++) {
		dims[k].type = TFS_INT32;
		dims[k].cell_val_num = 1;
		dims[k].filters = s->coords_filters;
		dims[k].filters_inherited = true;
		dims[k].has_domain = true;
		dims[k].has_extent = true;
	}
	dims[0].name = row_name;
	put_i32(dims[0].domain[0], 0);
	put_i32(dims[0].domain[1], (int32_t)(sh->rows - 1));
	put_i32(dims[0].extent, (int32_t)sh->tile_rows);
	dims[1].name = col_name;
	put_i32(dims[1].domain[0], 0);
	put_i32(dims[1].domain[1], (int32_t)(sh->cols - 1));
	put_i32(dims[1].extent, (int32_t)sh->cols);
	memcpy(fill, &nan_fill, 4);
	attr->name = attr_name;
	attr->type = TFS_FLOAT32;
	attr->cell_val_num = 1;
	attr->filters = pipeline_of(TFS_FILTER_ZSTD, TFS_COMP_ZSTD, ZSTD_LEVEL);
	attr->fill = fill;
	attr->fill_size = 4;
	s->dim_num = 2;
	s->dims = dims;
	s->attr_num = 1;
	s->attrs = attr;
}

/* One tile in the making: generated, encoded, with its statistics. */
struct gen_tile {
	uint64_t index;
	const struct shape *sh;
	const struct axis_terms *cols;
	float *values;
	struct tfs_buf encoded;
	float min, max;
	double sum;
	struct tfs_diag d;
	enum tfs_err err;
};

static void *gen_tile_run(void *arg)
{
	struct gen_tile *t = arg;
	const struct shape *sh = t->sh;
	uint64_t cells = sh->tile_rows * sh->cols;
	struct tfs_pipeline p = pipeline_of(TFS_FILTER_ZSTD, TFS_COMP_ZSTD,
					    ZSTD_LEVEL);
	struct tfs_tile_ctx ctx;
	float lo = INFINITY, hi = -INFINITY;
	double sum = 0;

	for (uint64_t i = 0; i < sh->tile_rows; i++) {
		uint64_t r = t->index * sh->tile_rows + i;
		struct axis_terms row;
		float *out = t->values + i * sh->cols;

		axis_terms_of(r, &row);
		for (uint64_t c = 0; c < sh->cols; c++) {
			float v = field_value(&row, &t->cols[c], r, c);

			out[c] = v;
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
			sum += (double)v;
		}
	}
	t->min = lo;
	t->max = hi;
	t->sum = sum;
	memset(&ctx, 0, sizeof(ctx));
	ctx.type = TFS_FLOAT32;
	ctx.cell_size = 4;
	ctx.fragment_version = FORMAT_VERSION;
	t->encoded.len = 0;
	tfs_diag_init(&t->d);
	t->err = tfs_tile_encode(&t->encoded, &p, &ctx, (const uint8_t *)t->values,
				 (size_t)cells * 4, NULL, 0, &t->d);
	return NULL;
}

/* Appends `payload` as one generic tile to meta; records its offset. */
static int put_generic(struct tfs_buf *meta, uint64_t *offset,
		       const struct tfs_buf *payload)
{
	struct tfs_diag d;

	*offset = meta->len;
	tfs_diag_init(&d);
	if (tfs_generic_tile_encode(meta, payload->data, payload->len, NULL,
				    &d)) {
		fprintf(stderr, "tfs-bench-read: generic tile: %s\n",
			tfs_diag_msg(&d));
		return -1;
	}
	return 0;
}

/* Per-tile statistics of the attribute slot, for the metadata tiles. */
struct tile_stats {
	uint64_t *offsets; /* start of each tile in a0.tdb */
	float *mins, *maxes;
	double *sums;
	uint64_t num;
	uint64_t file_size;
};

/* Builds __fragment_metadata.tdb: the generic tiles in TileDB's order
 * (fragment.md §3), then the footer (§4) and its length. */
/* Offsets of the generic tiles in __fragment_metadata.tdb, per slot where
 * the footer lists one per slot, in the footer's order (§4). */
struct meta_offsets {
	uint64_t rtree;
	uint64_t slot[8][SLOTS]; /* offsets, var offsets, var sizes, validity
				  * offsets, mins, maxes, sums, null counts */
	uint64_t summary, cond;
};

enum { L_OFF, L_VAR_OFF, L_VAR_SIZE, L_VAL_OFF, L_MIN, L_MAX, L_SUM, L_NULL };

/* Appends the result of call unless an earlier one failed. */
#define P(call)                                   \
	do {                                      \
		if (!e)                           \
			e = (call);               \
	} while (0)

/* A list of st->num tile offsets per slot: vals for slot 0 when given,
 * zeros elsewhere. */
static int put_tile_lists(struct tfs_buf *meta, struct tfs_buf *p,
			  const struct tile_stats *st, const uint64_t *vals,
			  uint64_t off[SLOTS])
{
	enum tfs_err e = TFS_E_OK;

	for (int s = 0; s < SLOTS; s++) {
		p->len = 0;
		P(tfs_buf_append_u64(p, st->num));
		for (uint64_t t = 0; t < st->num; t++)
			P(tfs_buf_append_u64(p, s == 0 && vals ? vals[t] : 0));
		if (e || put_generic(meta, &off[s], p))
			return -1;
	}
	return 0;
}

/* Mins or maxes: the attribute's per tile; __coords zero-filled for
 * dimension 0's type (INT32); dimensions none. */
static int put_bounds(struct tfs_buf *meta, struct tfs_buf *p,
		      const struct tile_stats *st, const float *vals,
		      uint64_t off[SLOTS])
{
	enum tfs_err e = TFS_E_OK;

	for (int s = 0; s < SLOTS; s++) {
		p->len = 0;
		P(tfs_buf_append_u64(p, s < 2 ? st->num * 4 : 0));
		P(tfs_buf_append_u64(p, 0));
		for (uint64_t t = 0; s < 2 && t < st->num; t++) {
			uint32_t bits = 0;

			if (s == 0)
				memcpy(&bits, &vals[t], 4);
			P(tfs_buf_append_u32(p, bits));
		}
		if (e || put_generic(meta, &off[s], p))
			return -1;
	}
	return 0;
}

/* Sums: double for the attribute, int64 zeros for __coords, none for the
 * dimensions of a dense fragment. Then null counts: nothing is
 * nullable. */
static int put_sums_nulls(struct tfs_buf *meta, struct tfs_buf *p,
			  const struct tile_stats *st, struct meta_offsets *o)
{
	enum tfs_err e = TFS_E_OK;

	for (int s = 0; s < SLOTS; s++) {
		p->len = 0;
		P(tfs_buf_append_u64(p, s < 2 ? st->num : 0));
		for (uint64_t t = 0; s < 2 && t < st->num; t++) {
			uint64_t bits = 0;

			if (s == 0)
				memcpy(&bits, &st->sums[t], 8);
			P(tfs_buf_append_u64(p, bits));
		}
		if (e || put_generic(meta, &o->slot[L_SUM][s], p))
			return -1;
	}
	for (int s = 0; s < SLOTS; s++) {
		p->len = 0;
		P(tfs_buf_append_u64(p, 0));
		if (e || put_generic(meta, &o->slot[L_NULL][s], p))
			return -1;
	}
	return 0;
}

/* Fragment summary (v12+), per slot; then the processed delete conditions
 * (v16+): none. */
static int put_summary(struct tfs_buf *meta, struct tfs_buf *p,
		       const struct tile_stats *st, struct meta_offsets *o)
{
	float fmin = INFINITY, fmax = -INFINITY;
	double fsum = 0;
	enum tfs_err e = TFS_E_OK;

	for (uint64_t t = 0; t < st->num; t++) {
		fmin = st->mins[t] < fmin ? st->mins[t] : fmin;
		fmax = st->maxes[t] > fmax ? st->maxes[t] : fmax;
		fsum += st->sums[t];
	}
	p->len = 0;
	for (int s = 0; s < SLOTS; s++) {
		uint32_t lo = 0, hi = 0;
		uint64_t sum = 0;

		if (s == 0) {
			memcpy(&lo, &fmin, 4);
			memcpy(&hi, &fmax, 4);
			memcpy(&sum, &fsum, 8);
		}
		if (s < 2) {
			P(tfs_buf_append_u64(p, 4));
			P(tfs_buf_append_u32(p, lo));
			P(tfs_buf_append_u64(p, 4));
			P(tfs_buf_append_u32(p, hi));
		} else {
			P(tfs_buf_append_u64(p, 0));
			P(tfs_buf_append_u64(p, 0));
		}
		P(tfs_buf_append_u64(p, sum));
		P(tfs_buf_append_u64(p, 0));
	}
	if (e || put_generic(meta, &o->summary, p))
		return -1;
	p->len = 0;
	P(tfs_buf_append_u64(p, 0));
	if (e || put_generic(meta, &o->cond, p))
		return -1;
	return 0;
}

/* The footer (§4) and its length, after the generic tiles. */
static enum tfs_err put_footer(struct tfs_buf *meta, struct tfs_buf *f,
			       const struct shape *sh, const char *schema_name,
			       const struct tile_stats *st,
			       const struct meta_offsets *o)
{
	size_t footer_at = meta->len;
	enum tfs_err e = TFS_E_OK;

	P(tfs_buf_append_u32(f, FORMAT_VERSION));
	P(tfs_buf_append_u64(f, strlen(schema_name)));
	P(tfs_buf_append(f, schema_name, strlen(schema_name)));
	P(tfs_buf_append_u8(f, 1)); /* dense */
	P(tfs_buf_append_u8(f, 0)); /* non-empty domain present */
	P(tfs_buf_append_u32(f, 0));
	P(tfs_buf_append_u32(f, (uint32_t)(sh->rows - 1)));
	P(tfs_buf_append_u32(f, 0));
	P(tfs_buf_append_u32(f, (uint32_t)(sh->cols - 1)));
	P(tfs_buf_append_u64(f, 0));                        /* sparse tiles */
	P(tfs_buf_append_u64(f, sh->tile_rows * sh->cols)); /* cells per tile */
	P(tfs_buf_append_u8(f, 0)); /* no timestamps */
	P(tfs_buf_append_u8(f, 0)); /* no delete metadata */
	for (int s = 0; s < SLOTS; s++)
		P(tfs_buf_append_u64(f, s == 0 ? st->file_size : 0));
	for (int s = 0; s < 2 * SLOTS; s++) /* var and validity file sizes */
		P(tfs_buf_append_u64(f, 0));
	P(tfs_buf_append_u64(f, o->rtree));
	for (int l = L_OFF; l <= L_NULL; l++)
		for (int s = 0; s < SLOTS; s++)
			P(tfs_buf_append_u64(f, o->slot[l][s]));
	P(tfs_buf_append_u64(f, o->summary));
	P(tfs_buf_append_u64(f, o->cond));
	P(tfs_buf_append(meta, f->data, f->len));
	P(tfs_buf_append_u64(meta, meta->len - footer_at));
	return e;
}

/* Builds __fragment_metadata.tdb: the generic tiles in TileDB's order
 * (fragment.md §3), then the footer (§4) and its length. */
static int fragment_metadata(struct tfs_buf *meta, const struct shape *sh,
			     const char *schema_name,
			     const struct tile_stats *st)
{
	struct meta_offsets o;
	struct tfs_buf p, f;
	int rc = -1;
	enum tfs_err e = TFS_E_OK;

	memset(&o, 0, sizeof(o));
	tfs_buf_init(&p, TFS_BUF_NO_MAX);
	tfs_buf_init(&f, TFS_BUF_NO_MAX);
	/* R-tree of a dense fragment: fanout 10, no levels (§5). */
	P(tfs_buf_append_u32(&p, 10));
	P(tfs_buf_append_u32(&p, 0));
	if (e || put_generic(meta, &o.rtree, &p))
		goto out;
	/* Tile offsets: real ones for the attribute, zeros elsewhere; var
	 * offsets, var sizes, validity offsets: zeros, count = tiles. */
	if (put_tile_lists(meta, &p, st, st->offsets, o.slot[L_OFF]) ||
	    put_tile_lists(meta, &p, st, NULL, o.slot[L_VAR_OFF]) ||
	    put_tile_lists(meta, &p, st, NULL, o.slot[L_VAR_SIZE]) ||
	    put_tile_lists(meta, &p, st, NULL, o.slot[L_VAL_OFF]) ||
	    put_bounds(meta, &p, st, st->mins, o.slot[L_MIN]) ||
	    put_bounds(meta, &p, st, st->maxes, o.slot[L_MAX]) ||
	    put_sums_nulls(meta, &p, st, &o) || put_summary(meta, &p, st, &o))
		goto out;
	e = put_footer(meta, &f, sh, schema_name, st, &o);
	if (e) {
		fprintf(stderr, "tfs-bench-read: fragment metadata: %s\n",
			tfs_strerror(e));
		goto out;
	}
	rc = 0;
out:
	tfs_buf_release(&p);
	tfs_buf_release(&f);
	return rc;
}
#undef P

/* "a/b" in a new string (free with free()); exits when out of memory. */
static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);

	if (!p) {
		fprintf(stderr, "tfs-bench-read: out of memory\n");
		exit(1);
	}
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* Encodes every tile on `threads` threads, appending them in order to
 * the data file; fills st. */
/* Generates and encodes tiles first .. first + n - 1, one thread each (or
 * here, when a thread cannot start). */
static void encode_batch(struct gen_tile *gt, unsigned n, uint64_t first)
{
	pthread_t tid[MAX_GEN_THREADS];
	bool started[MAX_GEN_THREADS];

	for (unsigned i = 0; i < n; i++) {
		gt[i].index = first + i;
		started[i] = pthread_create(&tid[i], NULL, gen_tile_run,
					    &gt[i]) == 0;
		if (!started[i])
			gen_tile_run(&gt[i]);
	}
	for (unsigned i = 0; i < n; i++)
		if (started[i])
			pthread_join(tid[i], NULL);
}

/* Appends the n encoded tiles to the data file in order, noting where
 * each starts and its statistics in st. */
static int store_batch(int fd, const char *data_path,
		       const struct gen_tile *gt, unsigned n, uint64_t first,
		       struct tile_stats *st)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = first + i;

		if (gt[i].err) {
			fprintf(stderr, "tfs-bench-read: tile %" PRIu64 ": %s\n",
				t, tfs_diag_msg(&gt[i].d));
			return -1;
		}
		st->offsets[t] = st->file_size;
		st->mins[t] = gt[i].min;
		st->maxes[t] = gt[i].max;
		st->sums[t] = gt[i].sum;
		if (write(fd, gt[i].encoded.data, gt[i].encoded.len) !=
		    (ssize_t)gt[i].encoded.len)
			return fail_errno("cannot write", data_path);
		st->file_size += gt[i].encoded.len;
	}
	return 0;
}

/* Room for the statistics of every tile. */
static int tile_stats_alloc(struct tile_stats *st, const struct shape *sh)
{
	st->num = sh->rows / sh->tile_rows;
	st->offsets = calloc(st->num, sizeof(*st->offsets));
	st->mins = calloc(st->num, sizeof(*st->mins));
	st->maxes = calloc(st->num, sizeof(*st->maxes));
	st->sums = calloc(st->num, sizeof(*st->sums));
	return st->offsets && st->mins && st->maxes && st->sums ? 0 : -1;
}

/* Encodes every tile on `threads` threads, appending them in order to
 * the data file; fills st. */
static int write_tiles(const char *data_path, const struct shape *sh,
		       unsigned threads, struct tile_stats *st)
{
	struct gen_tile gt[MAX_GEN_THREADS];
	struct axis_terms *cols;
	uint64_t cells = sh->tile_rows * sh->cols;
	int fd, rc = -1;

	cols = calloc(sh->cols, sizeof(*cols));
	if (tile_stats_alloc(st, sh) || !cols) {
		fprintf(stderr, "tfs-bench-read: out of memory\n");
		free(cols);
		return -1;
	}
	for (uint64_t c = 0; c < sh->cols; c++)
		axis_terms_of(c, &cols[c]);
	memset(gt, 0, sizeof(gt));
	for (unsigned i = 0; i < threads; i++) {
		gt[i].sh = sh;
		gt[i].cols = cols;
		gt[i].values = malloc((size_t)cells * sizeof(float));
		tfs_buf_init(&gt[i].encoded, TFS_BUF_NO_MAX);
		if (!gt[i].values) {
			fprintf(stderr, "tfs-bench-read: out of memory\n");
			goto out_free;
		}
	}
	fd = open(data_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fail_errno("cannot create", data_path);
		goto out_free;
	}
	st->file_size = 0;
	for (uint64_t first = 0; first < st->num; first += threads) {
		unsigned n = (unsigned)(st->num - first < threads ? st->num - first
								  : threads);

		encode_batch(gt, n, first);
		if (store_batch(fd, data_path, gt, n, first, st))
			goto out_close;
		fprintf(stderr, "\rgenerating: %3" PRIu64 "%%",
			(first + n) * 100 / st->num);
	}
	fputc('\n', stderr);
	rc = 0;
out_close:
	if (close(fd) != 0 && rc == 0)
		rc = fail_errno("cannot close", data_path);
out_free:
	for (unsigned i = 0; i < threads; i++) {
		free(gt[i].values);
		tfs_buf_release(&gt[i].encoded);
	}
	free(cols);
	return rc;
}

/* Writes the whole array into folder `dir` (layout.md §9, write.md §3). */
/* The array folder and its fixed subfolders. */
static int make_layout(const char *dir)
{
	static const char *const subdirs[] = {
		"__schema",   "__schema/__enumerations", "__commits",
		"__fragments", "__meta", "__fragment_meta", "__labels"};
	char *path;
	int rc;

	if (make_dir(dir))
		return -1;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		path = path_join(dir, subdirs[i]);
		rc = make_dir(path);
		free(path);
		if (rc)
			return rc;
	}
	return 0;
}

/* __schema/<schema_name>: the schema as one generic tile. */
static int write_schema(const char *dir, const struct shape *sh,
			const char *schema_name)
{
	struct tfs_schema s;
	struct tfs_dim dims[2];
	struct tfs_attr attr;
	uint8_t fill[4];
	struct tfs_buf payload, file;
	struct tfs_diag d;
	char rel[256];
	char *path;
	int rc = -1;

	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	schema_build(&s, dims, &attr, sh, fill);
	tfs_diag_init(&d);
	if (tfs_schema_serialize(&payload, &s) ||
	    tfs_generic_tile_encode(&file, payload.data, payload.len, NULL, &d)) {
		fprintf(stderr, "tfs-bench-read: schema: %s\n", tfs_diag_msg(&d));
		goto out;
	}
	snprintf(rel, sizeof(rel), "__schema/%s", schema_name);
	path = path_join(dir, rel);
	rc = write_file(path, file.data, file.len);
	free(path);
out:
	tfs_buf_release(&payload);
	tfs_buf_release(&file);
	return rc;
}

/* __fragments/<frag_name>: the data file, then the fragment metadata. */
static int write_fragment(const char *dir, const char *frag_name,
			  const char *schema_name, const struct shape *sh,
			  unsigned threads, struct tile_stats *st)
{
	struct tfs_buf file;
	char rel[256];
	char *path, *data, *meta;
	int rc;

	snprintf(rel, sizeof(rel), "__fragments/%s", frag_name);
	path = path_join(dir, rel);
	if (make_dir(path)) {
		free(path);
		return -1;
	}
	data = path_join(path, "a0.tdb");
	meta = path_join(path, "__fragment_metadata.tdb");
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	rc = write_tiles(data, sh, threads, st);
	if (!rc)
		rc = fragment_metadata(&file, sh, schema_name, st);
	if (!rc)
		rc = write_file(meta, file.data, file.len);
	tfs_buf_release(&file);
	free(data);
	free(meta);
	free(path);
	return rc;
}

/* Writes the whole array into folder `dir` (layout.md §9, write.md §3). */
static int generate(const char *dir, const struct shape *sh, unsigned threads)
{
	char schema_name[80], frag_name[96], rel[256];
	struct tile_stats st;
	char *path;
	int rc = -1;

	memset(&st, 0, sizeof(st));
	snprintf(schema_name, sizeof(schema_name), "__%" PRIu64 "_%" PRIu64
		 "_%08x%08x%08x%08x",
		 SCHEMA_T, SCHEMA_T, noise_hash(sh->rows, 1),
		 noise_hash(sh->cols, 2), noise_hash(sh->tile_rows, 3), 0x5eedu);
	snprintf(frag_name, sizeof(frag_name), "__%" PRIu64 "_%" PRIu64
		 "_%08x%08x%08x%08x_%d",
		 FRAGMENT_T, FRAGMENT_T, noise_hash(sh->rows, 4),
		 noise_hash(sh->cols, 5), noise_hash(sh->tile_rows, 6), 0xf00du,
		 FORMAT_VERSION);
	if (make_layout(dir) || write_schema(dir, sh, schema_name) ||
	    write_fragment(dir, frag_name, schema_name, sh, threads, &st))
		goto out;
	/* The commit file last: before it the fragment does not exist. */
	snprintf(rel, sizeof(rel), "__commits/%s.wrt", frag_name);
	path = path_join(dir, rel);
	rc = write_file(path, "", 0);
	free(path);
out:
	free(st.offsets);
	free(st.mins);
	free(st.maxes);
	free(st.sums);
	return rc;
}

/* Removes a partially generated folder tree (depth ≤ 3). */
static void remove_tree(const char *dir)
{
	pid_t pid = fork();

	if (pid == 0) {
		execlp("rm", "rm", "-rf", "--", dir, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* ---- Measurements ------------------------------------------------------ */

struct result {
	int ok;
	char err[320];
	double seconds;
	uint64_t cells;
	uint64_t checked, mismatches;
	double open_ms, first_ms, median_ms, min_ms;
	long peak_kb;
	double cpu_s; /* user + system time of the measuring process */
};

enum measure_kind { FULL_READ, SLICE_READ, VERIFY };

struct measure {
	enum measure_kind kind;
	const char *array;
	const struct shape *sh;
	unsigned threads;
	unsigned reps;
};

static void set_err(struct result *r, const char *what,
		    const struct tfs_diag *d)
{
	r->ok = 0;
	snprintf(r->err, sizeof(r->err), "%s: %s", what, tfs_diag_msg(d));
}

static const char *const value_field[] = {"v"};

/* Reads the box [sub_lo, sub_hi] and checks every `stride`-th cell (1 =
 * all) against the field. Cells come row-major over the box. */
static int read_cells(struct tfs_array *a, const int32_t sub_lo[2],
		      const int32_t sub_hi[2], uint64_t stride,
		      struct result *r)
{
	struct tfs_range ranges[2];
	struct tfs_query_opts qo = {.fields = value_field, .field_num = 1};
	struct tfs_query *q;
	struct tfs_diag d;
	uint64_t width = (uint64_t)(sub_hi[1] - sub_lo[1]) + 1, k = 0;
	uint64_t cached_row = UINT64_MAX;
	/* Zeroed: gcc 12 -O3 cannot see that cached_row forces a fill first. */
	struct axis_terms row = {0}, *cols;
	int rc = 0;

	cols = calloc(width, sizeof(*cols));
	if (!cols) {
		r->ok = 0;
		snprintf(r->err, sizeof(r->err), "out of memory");
		return -1;
	}
	for (uint64_t c = 0; c < width; c++)
		axis_terms_of((uint64_t)sub_lo[1] + c, &cols[c]);
	for (int i = 0; i < 2; i++) {
		ranges[i].lo = (const uint8_t *)&sub_lo[i];
		ranges[i].hi = (const uint8_t *)&sub_hi[i];
		ranges[i].lo_len = ranges[i].hi_len = 4;
	}
	qo.subarray = ranges;
	tfs_diag_init(&d);
	if (tfs_query_open(a, &qo, &q, &d)) {
		set_err(r, "query", &d);
		free(cols);
		return -1;
	}
	for (;;) {
		const struct tfs_batch *b;
		const float *v;
		uint64_t first;

		if (tfs_query_next(q, &b, &d)) {
			set_err(r, "read", &d);
			rc = -1;
			break;
		}
		if (!b)
			break;
		v = (const float *)(const void *)b->columns[0].data;
		first = (stride - k % stride) % stride;
		for (uint64_t i = first; i < b->cell_num; i += stride) {
			uint64_t cell = k + i;
			uint64_t rr = (uint64_t)sub_lo[0] + cell / width;
			uint64_t cc = cell % width;
			float want;

			if (rr != cached_row) {
				axis_terms_of(rr, &row);
				cached_row = rr;
			}
			want = field_value(&row, &cols[cc], rr,
					   (uint64_t)sub_lo[1] + cc);
			if (memcmp(&want, &v[i], 4) != 0)
				r->mismatches++;
			r->checked++;
		}
		k += b->cell_num;
	}
	tfs_query_close(q);
	free(cols);
	r->cells += k;
	return rc;
}

static void run_measure(const struct measure *m, struct result *r)
{
	struct tfs_open_opts oo = {.threads = m->threads};
	const struct shape *sh = m->sh;
	int32_t lo[2] = {0, 0};
	int32_t hi[2] = {(int32_t)(sh->rows - 1), (int32_t)(sh->cols - 1)};
	struct tfs_array *a;
	struct tfs_diag d;
	double t0 = now_s();

	r->ok = 1;
	tfs_diag_init(&d);
	if (tfs_array_open(m->array, &oo, &a, &d)) {
		set_err(r, "open", &d);
		return;
	}
	r->open_ms = (now_s() - t0) * 1e3;
	switch (m->kind) {
	case FULL_READ:
		/* A sparse sample (a prime stride) proves the data. */
		read_cells(a, lo, hi, 9973, r);
		r->seconds = now_s() - t0;
		break;
	case VERIFY:
		read_cells(a, lo, hi, 1, r);
		r->seconds = now_s() - t0;
		break;
	case SLICE_READ: {
		double *ms = calloc(m->reps, sizeof(double));

		if (!ms) {
			r->ok = 0;
			snprintf(r->err, sizeof(r->err), "out of memory");
			break;
		}
		lo[0] = (int32_t)(sh->rows / 2 + 17);
		lo[1] = (int32_t)(sh->cols / 2 + 29);
		hi[0] = lo[0] + 99;
		hi[1] = lo[1] + 99;
		for (unsigned i = 0; i < m->reps && r->ok; i++) {
			double s = now_s();

			if (read_cells(a, lo, hi, 1, r))
				break;
			ms[i] = (now_s() - s) * 1e3;
		}
		if (r->ok) {
			r->first_ms = r->open_ms + ms[0];
			for (unsigned i = 1; i < m->reps; i++)
				for (unsigned j = i; j > 0 && ms[j - 1] > ms[j];
				     j--) {
					double x = ms[j];

					ms[j] = ms[j - 1];
					ms[j - 1] = x;
				}
			r->min_ms = ms[0];
			r->median_ms = ms[m->reps / 2];
		}
		free(ms);
		break;
	}
	}
	tfs_array_close(a);
}

/* Runs m in a child process; its peak RSS comes from wait4. */
static struct result measure_in_child(const struct measure *m)
{
	struct result r;
	struct rusage ru;
	int fds[2], status = 0;
	pid_t pid;

	memset(&r, 0, sizeof(r));
	fflush(NULL);
	if (pipe(fds) != 0) {
		snprintf(r.err, sizeof(r.err), "pipe: %s", strerror(errno));
		return r;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(r.err, sizeof(r.err), "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	if (pid == 0) {
		close(fds[0]);
		run_measure(m, &r);
		if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &r, sizeof(r)) != (ssize_t)sizeof(r)) {
		memset(&r, 0, sizeof(r));
		snprintf(r.err, sizeof(r.err), "measurement process died");
	}
	close(fds[0]);
	if (wait4(pid, &status, 0, &ru) == pid) {
		r.peak_kb = ru.ru_maxrss;
		r.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
			  ((double)ru.ru_utime.tv_usec +
			   (double)ru.ru_stime.tv_usec) * 1e-6;
	}
	return r;
}

/* Reads every file under path (to depth 4) once, so the runs start from a
 * warm page cache; returns the bytes read. */
static uint64_t warm_cache(const char *path, int depth)
{
	struct stat st;
	uint64_t total = 0;

	if (stat(path, &st) != 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		DIR *dir = depth < 4 ? opendir(path) : NULL;
		struct dirent *e;

		while (dir && (e = readdir(dir)) != NULL) {
			char *sub;

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			sub = path_join(path, e->d_name);
			total += warm_cache(sub, depth + 1);
			free(sub);
		}
		if (dir)
			closedir(dir);
	} else if (S_ISREG(st.st_mode)) {
		static char chunk[1 << 20];
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n;

		while (fd >= 0 && (n = read(fd, chunk, sizeof(chunk))) > 0)
			total += (uint64_t)n;
		if (fd >= 0)
			close(fd);
	}
	return total;
}

/* True when the array at path has a committed fragment (a generation that
 * stopped early has none). */
static bool has_commit(const char *array)
{
	char *commits = path_join(array, "__commits");
	DIR *dir = opendir(commits);
	struct dirent *e;
	bool found = false;

	while (dir && !found && (e = readdir(dir)) != NULL) {
		size_t n = strlen(e->d_name);

		found = n > 4 && !strcmp(e->d_name + n - 4, ".wrt");
	}
	if (dir)
		closedir(dir);
	free(commits);
	return found;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tfs-bench-read [--dir DIR] [--rows N] [--cols N] "
		"[--tile-rows N] [--threads N] [--reps N]\n"
		"                      [--generate-only] [--full-only]\n"
		"  Generates (once, in DIR, default ./tfs-bench-data) a dense "
		"FLOAT32 array of\n"
		"  rows x cols cells (default 16384 x 16384 = 1.07 GB decoded), "
		"ZSTD level %d,\n"
		"  tiles of tile-rows x cols cells, then measures full reads with "
		"1 and N threads\n"
		"  (default N = CPUs), a 100 x 100 slice (reps times) and a full "
		"verification.\n"
		"  --generate-only: generate and print the array's path; "
		"--full-only: only the\n"
		"  full reads.\n",
		ZSTD_LEVEL);
}

static bool parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || !s[0] || strchr(s, '-') || v == 0)
		return false;
	*out = v;
	return true;
}

static void print_row(const char *what, unsigned threads, const struct result *r,
		      double gb)
{
	if (!r->ok) {
		printf("%-24s %7u   FAILED: %s\n", what, threads, r->err);
		return;
	}
	printf("%-24s %7u %9.3f s %8.2f GB/s %6.2f s %8.1f MB   %" PRIu64
	       " cells checked, %" PRIu64 " wrong\n",
	       what, threads, r->seconds, gb / r->seconds, r->cpu_s,
	       (double)r->peak_kb / 1024.0, r->checked, r->mismatches);
}

struct bench_args {
	struct shape sh;
	const char *dir;
	uint64_t threads, reps;
	bool generate_only, full_only;
};

/* Parses the command line into a; returns -1 to go on, else the exit
 * status. */
static int parse_args(int argc, char **argv, struct bench_args *a)
{
	static const struct option longopts[] = {
		{"dir", required_argument, NULL, 'd'},
		{"rows", required_argument, NULL, 'r'},
		{"cols", required_argument, NULL, 'c'},
		{"tile-rows", required_argument, NULL, 't'},
		{"threads", required_argument, NULL, 'j'},
		{"reps", required_argument, NULL, 'n'},
		{"generate-only", no_argument, NULL, 'g'},
		{"full-only", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct shape *sh = &a->sh;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': a->dir = optarg; break;
		case 'r': if (!parse_count(optarg, &sh->rows)) goto bad; break;
		case 'c': if (!parse_count(optarg, &sh->cols)) goto bad; break;
		case 't': if (!parse_count(optarg, &sh->tile_rows)) goto bad; break;
		case 'j': if (!parse_count(optarg, &a->threads) || a->threads > 4096) goto bad; break;
		case 'n': if (!parse_count(optarg, &a->reps) || a->reps > 100000) goto bad; break;
		case 'g': a->generate_only = true; break;
		case 'f': a->full_only = true; break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (optind != argc || sh->rows % sh->tile_rows || sh->rows > INT32_MAX ||
	    sh->cols > INT32_MAX || sh->rows < 200 || sh->cols < 200) {
		fprintf(stderr, "tfs-bench-read: rows and cols must be 200.."
				"2^31-1 and rows a multiple of tile-rows\n");
		goto bad;
	}
	return -1;
bad:
	usage(stderr);
	return 2;
}

/* Generates the array unless a complete one is there already. */
static int ensure_array(const char *array, const struct bench_args *a,
			double gb)
{
	double t0 = now_s();

	if (has_commit(array))
		return 0;
	/* Absent, or an earlier generation stopped before its commit. */
	remove_tree(array);
	printf("generating %s (%.2f GB decoded) ...\n", array, gb);
	fflush(stdout);
	if (generate(array, &a->sh, a->threads > MAX_GEN_THREADS
					   ? MAX_GEN_THREADS
					   : (unsigned)a->threads)) {
		remove_tree(array);
		return 1;
	}
	printf("generated in %.1f s\n", now_s() - t0);
	return 0;
}

static void print_header(const char *array, const struct shape *sh, double gb,
			 uint64_t disk)
{
	double load[1];

	printf("\ntilefs read benchmark: %s\n", array);
	printf("  %" PRIu64 " x %" PRIu64 " FLOAT32, tiles %" PRIu64 " x %" PRIu64
	       " (%.1f MiB decoded each), ZSTD level %d\n",
	       sh->rows, sh->cols, sh->tile_rows, sh->cols,
	       (double)(sh->tile_rows * sh->cols * 4) / 1048576.0, ZSTD_LEVEL);
	if (getloadavg(load, 1) != 1)
		load[0] = -1;
	printf("  %.3f GB decoded, %.3f GB on disk (ratio %.2f), %u CPUs "
	       "(load average %.2f), page cache warm\n\n",
	       gb, (double)disk / 1e9, disk ? gb * 1e9 / (double)disk : 0.0,
	       cpu_count(), load[0]);
	printf("%-24s %7s %11s %13s %8s %11s\n", "measurement", "threads",
	       "time", "decoded", "CPU", "peak RSS");
}

/* The slice latency and the full verification; true when both are
 * correct. */
static bool measure_slice_verify(struct measure *m, const struct shape *sh,
				 uint64_t reps, double gb)
{
	struct result slice, verify;

	m->kind = SLICE_READ;
	slice = measure_in_child(m);
	if (slice.ok)
		printf("%-24s %7u   first (with open) %.2f ms, median %.2f ms, "
		       "min %.2f ms over %" PRIu64 " reads; %8.1f MB, %" PRIu64
		       " wrong\n",
		       "slice 100 x 100", m->threads, slice.first_ms,
		       slice.median_ms, slice.min_ms, reps,
		       (double)slice.peak_kb / 1024.0, slice.mismatches);
	else
		printf("%-24s %7u   FAILED: %s\n", "slice 100 x 100",
		       m->threads, slice.err);
	m->kind = VERIFY;
	verify = measure_in_child(m);
	print_row("verify every cell", m->threads, &verify, gb);
	return slice.ok && verify.ok && !slice.mismatches &&
	       !verify.mismatches && verify.cells == sh->rows * sh->cols &&
	       slice.cells == 100 * 100 * reps;
}

int main(int argc, char **argv)
{
	struct bench_args a = {{16384, 16384, 64}, "tfs-bench-data",
			       cpu_count(), 20, false, false};
	const struct shape *sh = &a.sh;
	char name[128], *array;
	struct result one, many;
	struct measure m;
	double gb;
	int st, failed = 0;

	st = parse_args(argc, argv, &a);
	if (st >= 0)
		return st;
	snprintf(name, sizeof(name), "dense_f32_%" PRIu64 "x%" PRIu64 "_t%" PRIu64,
		 sh->rows, sh->cols, sh->tile_rows);
	if (make_dir(a.dir))
		return 1;
	array = path_join(a.dir, name);
	gb = (double)(sh->rows * sh->cols * 4) / 1e9;
	if (ensure_array(array, &a, gb))
		return 1;
	if (a.generate_only) {
		printf("array: %s\n", array);
		free(array);
		return 0;
	}
	print_header(array, sh, gb, warm_cache(array, 0));

	m = (struct measure){FULL_READ, array, sh, 1, (unsigned)a.reps};
	one = measure_in_child(&m);
	print_row("full read", 1, &one, gb);
	m.threads = (unsigned)a.threads;
	many = measure_in_child(&m);
	print_row("full read", (unsigned)a.threads, &many, gb);
	if (one.ok && many.ok)
		printf("%-24s %7s %9.2fx\n", "speedup", "", one.seconds / many.seconds);
	failed = !one.ok || !many.ok || one.mismatches || many.mismatches;
	if (a.full_only) {
		free(array);
		return failed ? 1 : 0;
	}
	failed |= !measure_slice_verify(&m, sh, a.reps, gb);
	printf("\n%s\n", failed ? "RESULT: FAILED (see above)"
				: "RESULT: all reads correct");
	free(array);
	return failed ? 1 : 0;
}
