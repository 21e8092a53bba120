/* Real TileDB output: every tile of the data files of the corpus filter
 * arrays (written by TileDB 2.29, format version 22), decoded with the
 * pipeline spelled in the corpus JSON, compared cell by cell with what
 * TileDB itself read (golden files made by gen_corpus_golden.py). Covers
 * every filter, multi-chunk tiles, offsets, validity, string mode, WebP
 * and AES-256-GCM. Each tile is also re-encoded: with deterministic
 * filters our writer must reproduce TileDB's bytes exactly. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tfs_alloc.h"

struct corpus_case {
	const char *array;
	const char *field;
	const char *file;     /* fixed data or offsets */
	const char *var_file; /* values of a var-size field */
	const char *validity;
	unsigned type;
	uint64_t cell_size;
	const char *filters[8];
	const char *offsets_filters[8];
	const char *validity_filters[8];
	bool string_mode;
	uint64_t tile_cells;
	uint64_t ncells;
	uint32_t fragment_version;
	uint16_t y_extent, x_extent; /* WebP: tile extents of dims 0, 1 */
	const char *key_hex;
	const char *golden;
};

static const struct corpus_case cases[] = {
#include "corpus_cases.inc"
};

struct golden_cell {
	uint8_t flag; /* 0 null, 1 compare, 2 padding */
	uint32_t len;
	const uint8_t *p;
};

static struct golden_cell *load_golden(const struct corpus_case *c,
				       uint8_t **raw)
{
	char path[512];
	size_t len, pos = 0;
	struct golden_cell *cells = tfs_mallocn(c->ncells, sizeof(*cells));

	snprintf(path, sizeof(path), "%s/golden/%s", TFS_TEST_DATA, c->golden);
	*raw = tu_read_file(path, &len);
	for (uint64_t i = 0; i < c->ncells; i++) {
		cr_assert_leq(pos + 5, len);
		cells[i].flag = (*raw)[pos];
		cells[i].len = tfs_get_u32(*raw + pos + 1);
		cells[i].p = *raw + pos + 5;
		pos += 5 + cells[i].len;
	}
	cr_assert_eq(pos, len);
	return cells;
}

static uint8_t *read_corpus(const struct corpus_case *c, const char *file,
			    size_t *len)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s/%s", TFS_CORPUS_DIR, c->array,
		 file);
	return tu_read_file(path, len);
}

static void hex_key(const char *hex, uint8_t key[32])
{
	cr_assert_eq(strlen(hex), 64);
	for (int i = 0; i < 32; i++) {
		char b[3] = {hex[2 * i], hex[2 * i + 1], 0};

		key[i] = (uint8_t)strtoul(b, NULL, 16);
	}
}

/* Next tile of a data file. */
static const uint8_t *next_tile(const uint8_t *file, size_t file_len,
				size_t *pos, size_t *tile_len,
				uint64_t *orig_total)
{
	const uint8_t *t = file + *pos;

	cr_assert(tu_tile_span(file, file_len, *pos, tile_len, orig_total),
		  "tile at %zu malformed", *pos);
	*pos += *tile_len;
	return t;
}

/* True when the list uses only algorithms implemented here (no zlib, zstd,
 * lz4, bzip2 or libwebp, whose output may change between versions). */
static bool own_algorithms(const char *const *filters)
{
	static const char *const third_party[] = {"GZIP", "ZSTD", "LZ4",
						  "BZIP2", "WEBP"};

	for (; *filters; filters++)
		for (size_t i = 0; i < 5; i++)
			if (strncmp(*filters, third_party[i],
				    strlen(third_party[i])) == 0)
				return false;
	return true;
}

/* Our writer must produce TileDB's bytes (chunking and every filter) when
 * the pipeline is deterministic; otherwise its tile must at least decode
 * back to the same data. */
static void check_reencode(const struct corpus_case *c,
			   const struct tfs_pipeline *p,
			   const struct tfs_tile_ctx *ctx,
			   const char *const *filters, const uint8_t *data,
			   size_t len, const uint64_t *offs, uint64_t n,
			   const uint8_t *tile, size_t tile_len)
{
	struct tfs_buf enc;
	struct tfs_diag d;
	uint8_t *back = tfs_malloc(len + 1);

	tfs_diag_init(&d);
	tfs_buf_init(&enc, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&enc, p, ctx, data, len, offs, n, &d),
		     TFS_E_OK, "%s.%s re-encode: %s", c->array, c->field,
		     tfs_diag_msg(&d));
	if (own_algorithms(filters) && !ctx->key) {
		cr_assert_eq(enc.len, tile_len, "%s.%s re-encoded size",
			     c->array, c->field);
		cr_assert_arr_eq(enc.data, tile, tile_len,
				 "%s.%s re-encoded bytes", c->array, c->field);
	}
	cr_assert_eq(tfs_tile_decode(p, ctx, back, len, enc.data, enc.len, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	/* Lossy WebP cannot give back what it was given. */
	if (!(filters[0] && strstr(filters[0], "lossless=0")))
		cr_assert(len == 0 || memcmp(back, data, len) == 0,
			  "%s.%s re-encoded tile decodes differently",
			  c->array, c->field);
	tfs_buf_release(&enc);
	tfs_free(back);
}

#define NCASES (sizeof(cases) / sizeof(*cases))

/* Criterion runs each test in a fresh process: pass indexes, not
 * pointers. */
ParameterizedTestParameters(corpus, decode_file)
{
	static size_t idx[NCASES];

	for (size_t i = 0; i < NCASES; i++)
		idx[i] = i;
	return cr_make_param_array(size_t, idx, NCASES);
}

ParameterizedTest(size_t *ci, corpus, decode_file, .timeout = 120)
{
	const struct corpus_case *c = &cases[*ci];
	struct tfs_pipeline p = tu_pipe_v(c->filters);
	struct tfs_pipeline po = tu_pipe_v(c->offsets_filters);
	struct tfs_pipeline pv = tu_pipe_v(c->validity_filters);
	struct tfs_tile_ctx ctx = tu_ctx(c->type, c->cell_size);
	struct tfs_tile_ctx octx = tu_ctx(TFS_UINT64, 8);
	struct tfs_tile_ctx vctx = tu_ctx(TFS_UINT8, 1);
	uint8_t key[32], *raw, *file, *vfile = NULL, *valfile = NULL;
	size_t flen, vflen = 0, valflen = 0, pos = 0, vpos = 0, valpos = 0;
	struct golden_cell *g = load_golden(c, &raw);
	uint64_t compared = 0;
	struct tfs_diag d;

	if (c->key_hex[0]) {
		hex_key(c->key_hex, key);
		ctx.key = octx.key = vctx.key = key;
		ctx.implicit_aes = octx.implicit_aes = vctx.implicit_aes = true;
	}
	ctx.fragment_version = octx.fragment_version =
		vctx.fragment_version = c->fragment_version;
	ctx.string_mode = c->string_mode;
	for (uint32_t i = 0; i < p.count; i++) {
		if (p.filters[i].type == TFS_FILTER_WEBP) {
			p.filters[i].webp_y_extent = c->y_extent;
			p.filters[i].webp_x_extent = c->x_extent;
		}
	}
	file = read_corpus(c, c->file, &flen);
	if (c->var_file)
		vfile = read_corpus(c, c->var_file, &vflen);
	if (c->validity)
		valfile = read_corpus(c, c->validity, &valflen);
	tfs_diag_init(&d);
	for (uint64_t first = 0; first < c->ncells; first += c->tile_cells) {
		uint64_t n = c->ncells - first < c->tile_cells
				     ? c->ncells - first
				     : c->tile_cells;
		size_t tlen;
		uint64_t orig;
		const uint8_t *t = next_tile(file, flen, &pos, &tlen, &orig);

		if (!c->var_file) {
			size_t size = (size_t)(n * c->cell_size);
			uint8_t *out = tfs_malloc(size + 1);

			cr_assert_eq(tfs_tile_decode(&p, &ctx, out, size, t,
						     tlen, &d),
				     TFS_E_OK, "%s.%s tile at cell %" PRIu64
				     ": %s",
				     c->array, c->field, first,
				     tfs_diag_msg(&d));
			for (uint64_t i = 0; i < n; i++) {
				const struct golden_cell *gc = &g[first + i];

				if (gc->flag != 1)
					continue;
				cr_assert_eq(gc->len, c->cell_size);
				cr_assert_arr_eq(out + i * c->cell_size, gc->p,
						 gc->len, "%s.%s cell %" PRIu64,
						 c->array, c->field, first + i);
				compared++;
			}
			check_reencode(c, &p, &ctx, c->filters, out, size,
				       NULL, 0, t, tlen);
			tfs_free(out);
		} else {
			size_t vtlen;
			uint64_t vsize;
			const uint8_t *vt = next_tile(vfile, vflen, &vpos,
						      &vtlen, &vsize);
			uint8_t *values = tfs_malloc((size_t)vsize + 1);
			uint64_t *offs = tfs_mallocn(n, sizeof(*offs));

			if (c->string_mode) {
				/* Offsets not stored: the 8-byte marker. */
				static const uint8_t marker[8] = {0};

				cr_assert_eq(tlen, 8);
				cr_assert_arr_eq(t, marker, 8);
				cr_assert_eq(tfs_tile_decode_strings(
						     &p, &ctx, values,
						     (size_t)vsize, offs, n, vt,
						     vtlen, &d),
					     TFS_E_OK, "%s.%s: %s", c->array,
					     c->field, tfs_diag_msg(&d));
			} else {
				cr_assert_eq(tfs_tile_decode(&po, &octx,
							     (uint8_t *)offs,
							     n * 8, t, tlen,
							     &d),
					     TFS_E_OK, "%s.%s offsets: %s",
					     c->array, c->field,
					     tfs_diag_msg(&d));
				cr_assert_eq(tfs_tile_decode(&p, &ctx, values,
							     (size_t)vsize, vt,
							     vtlen, &d),
					     TFS_E_OK, "%s.%s values: %s",
					     c->array, c->field,
					     tfs_diag_msg(&d));
			}
			cr_assert_eq(offs[0], 0);
			for (uint64_t i = 0; i < n; i++) {
				const struct golden_cell *gc = &g[first + i];
				uint64_t end = i + 1 < n ? offs[i + 1] : vsize;

				cr_assert_leq(offs[i], end);
				cr_assert_leq(end, vsize);
				if (gc->flag != 1)
					continue;
				cr_assert_eq(end - offs[i], gc->len,
					     "%s.%s cell %" PRIu64, c->array,
					     c->field, first + i);
				cr_assert_arr_eq(values + offs[i], gc->p,
						 gc->len, "%s.%s cell %" PRIu64,
						 c->array, c->field, first + i);
				compared++;
			}
			if (!c->string_mode)
				check_reencode(c, &po, &octx,
					       c->offsets_filters,
					       (const uint8_t *)offs, n * 8,
					       NULL, 0, t, tlen);
			check_reencode(c, &p, &ctx, c->filters, values,
				       (size_t)vsize, offs, n, vt, vtlen);
			tfs_free(values);
			tfs_free(offs);
		}
		if (c->validity) {
			size_t vl;
			uint64_t o;
			const uint8_t *vt = next_tile(valfile, valflen, &valpos,
						      &vl, &o);
			uint8_t *valid = tfs_malloc((size_t)n);

			cr_assert_eq(tfs_tile_decode(&pv, &vctx, valid,
						     (size_t)n, vt, vl, &d),
				     TFS_E_OK, "%s.%s validity: %s", c->array,
				     c->field, tfs_diag_msg(&d));
			for (uint64_t i = 0; i < n; i++) {
				if (g[first + i].flag == 2)
					continue;
				cr_assert_eq(valid[i] != 0,
					     g[first + i].flag == 1,
					     "%s.%s validity of cell %" PRIu64,
					     c->array, c->field, first + i);
			}
			check_reencode(c, &pv, &vctx, c->validity_filters,
				       valid, (size_t)n, NULL, 0, vt, vl);
			tfs_free(valid);
		}
	}
	/* Every byte of every file belongs to a tile we decoded. */
	cr_assert_eq(pos, flen);
	if (vfile)
		cr_assert_eq(vpos, vflen);
	if (valfile)
		cr_assert_eq(valpos, valflen);
	cr_assert_gt(compared, 0);
	tfs_free(file);
	tfs_free(vfile);
	tfs_free(valfile);
	tfs_free(raw);
	tfs_free(g);
}

static uint8_t *read_legacy(const char *rel, size_t *len)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/legacy/%s", TFS_CORPUS_DIR, rel);
	return tu_read_file(path, len);
}

/* zero_var_chunks_v10: a string dimension whose only cell is "": the
 * values tile has 0 chunks (tile.md §1), the offsets tile one zstd chunk. */
Test(corpus, legacy_v10_zero_chunk_values_tile)
{
	static const char dir[] = "zero_var_chunks_v10/__1693562063524_"
				  "1693562063524_0fcdefaa40d34ff2a4b09153472fbd"
				  "c2_10/";
	char rel[256];
	struct tfs_pipeline zstd = tu_pipe("ZSTD(level=-1)", NULL), none;
	struct tfs_tile_ctx octx = tu_ctx(TFS_UINT64, 8);
	struct tfs_tile_ctx vctx = tu_ctx(TFS_STRING_ASCII, 1);
	struct tfs_tile_ctx actx = tu_ctx(TFS_INT32, 0);
	uint64_t offset = 99;
	int32_t a = 0;
	uint8_t *f;
	size_t len;

	octx.fragment_version = vctx.fragment_version = 10;
	tfs_pipeline_init(&none);
	snprintf(rel, sizeof(rel), "%sd0.tdb", dir);
	f = read_legacy(rel, &len);
	cr_assert_eq(tfs_tile_decode(&zstd, &octx, (uint8_t *)&offset, 8, f,
				     len, NULL),
		     TFS_E_OK);
	cr_assert_eq(offset, 0);
	tfs_free(f);
	snprintf(rel, sizeof(rel), "%sd0_var.tdb", dir);
	f = read_legacy(rel, &len);
	cr_assert_eq(len, 8);
	cr_assert_eq(tfs_tile_decode(&zstd, &vctx, NULL, 0, f, len, NULL),
		     TFS_E_OK);
	tfs_free(f);
	snprintf(rel, sizeof(rel), "%sa0.tdb", dir);
	f = read_legacy(rel, &len);
	cr_assert_eq(tfs_tile_decode(&none, &actx, (uint8_t *)&a, 4, f, len,
				     NULL),
		     TFS_E_OK);
	cr_assert_eq(a, 1);
	tfs_free(f);
}

/* non_split_coords_v1_4_0 (TileDB 1.4, format 1): no coordinate filters,
 * the zipped coordinates split over two raw chunks. */
Test(corpus, legacy_v1_raw_chunks)
{
	static const char dir[] = "non_split_coords_v1_4_0/__5dc2cc9cce204a"
				  "189f825fd4919d0c55_1541540586869/";
	static const int32_t coords[] = {1, 10, 2, 10, 3, 10, 4, 10};
	static const int32_t attr[] = {1, 2, 3, 4};
	char rel[256];
	struct tfs_pipeline none;
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 8);
	int32_t out[8];
	uint8_t *f;
	size_t len;

	ctx.fragment_version = 1;
	tfs_pipeline_init(&none);
	snprintf(rel, sizeof(rel), "%s__coords.tdb", dir);
	f = read_legacy(rel, &len);
	cr_assert_eq(tfs_get_u64(f), 2);
	cr_assert_eq(tfs_tile_decode(&none, &ctx, (uint8_t *)out, sizeof(coords),
				     f, len, NULL),
		     TFS_E_OK);
	cr_assert_arr_eq(out, coords, sizeof(coords));
	tfs_free(f);
	snprintf(rel, sizeof(rel), "%sa.tdb", dir);
	f = read_legacy(rel, &len);
	ctx.cell_size = 4;
	cr_assert_eq(tfs_tile_decode(&none, &ctx, (uint8_t *)out, sizeof(attr),
				     f, len, NULL),
		     TFS_E_OK);
	cr_assert_arr_eq(out, attr, sizeof(attr));
	tfs_free(f);
}
