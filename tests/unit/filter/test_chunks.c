/* Decoding a tile chunk by chunk (tile_codec.c: tfs_tile_chunks, the
 * chunk decoder, tfs_tile_decode_chunks): every run of chunks decodes to
 * the same bytes as that part of the whole tile's decoding, for every
 * filtered fixed-size field of the corpus (TileDB's tiles) and for tiles
 * of several chunks our writer makes under each filter kind, encrypted
 * too; checksums are verified per chunk; damaged chunk headers fail
 * cleanly. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"
#include "tfs_alloc.h"

/* The runs checked: all of them for tiles of up to 12 chunks, else runs
 * of 1 and 2 chunks from every chunk and every run to the end. */
static bool run_checked(uint64_t n, uint64_t i, uint64_t j)
{
	return n <= 12 || j - i <= 2 || j == n;
}

/* Checks every run of chunks of tile against the whole decoding (which
 * must give want_len bytes), and the chunk decoder one chunk at a time
 * from headers parsed one by one. */
static void check_runs(const char *what, const struct tfs_pipeline *p,
		       const struct tfs_tile_ctx *ctx, const uint8_t *tile,
		       size_t tile_len, size_t want_len)
{
	uint8_t *whole = tfs_malloc(want_len + 1);
	struct tfs_tile_chunk *table;
	struct tfs_chunk_decoder *dec;
	uint64_t n, size, at = 8, out_at = 0;
	struct tfs_diag d;

	cr_assert(whole);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_tile_decode(p, ctx, whole, want_len, tile, tile_len,
				     &d),
		     TFS_E_OK, "%s: %s", what, tfs_diag_msg(&d));
	cr_assert_eq(tfs_tile_chunks(tile, tile_len, &table, &n, &size, &d),
		     TFS_E_OK, "%s: %s", what, tfs_diag_msg(&d));
	cr_assert_eq(size, want_len, "%s", what);
	for (uint64_t i = 0; i < n; i++) {
		for (uint64_t j = i + 1; j <= n; j++) {
			uint64_t from = table[i].out_at;
			uint64_t len = table[j - 1].out_at + table[j - 1].orig -
				       from;
			uint8_t *part;

			if (!run_checked(n, i, j))
				continue;
			part = tfs_malloc((size_t)len + 1);
			cr_assert(part);
			cr_assert_eq(tfs_tile_decode_chunks(p, ctx, part,
							    (size_t)len, tile,
							    tile_len, i, j - i,
							    &d),
				     TFS_E_OK, "%s: chunks %" PRIu64 "..%" PRIu64
				     ": %s",
				     what, i, j, tfs_diag_msg(&d));
			cr_assert(len == 0 ||
					  memcmp(part, whole + from, len) == 0,
				  "%s: chunks %" PRIu64 "..%" PRIu64
				  " differ from the whole tile's bytes",
				  what, i, j);
			tfs_free(part);
		}
	}
	/* As a reader that holds one chunk at a time does it. */
	cr_assert_eq(tfs_chunk_decoder_new(p, ctx, &dec, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (uint64_t i = 0; i < n; i++) {
		struct tfs_tile_chunk ch;
		uint8_t *one = tfs_malloc(table[i].orig + 1u);

		cr_assert_eq(tfs_tile_chunk_parse(tile + at, TFS_TILE_CHUNK_HEAD,
						  i, at, out_at, tile_len,
						  want_len, &ch, &d),
			     TFS_E_OK, "%s: %s", what, tfs_diag_msg(&d));
		cr_assert(memcmp(&ch, &table[i], sizeof(ch)) == 0, "%s", what);
		cr_assert_eq(tfs_chunk_decoder_run(dec, &ch, i, one, ch.orig,
						   tile + at,
						   (size_t)tfs_tile_chunk_size(&ch),
						   &d),
			     TFS_E_OK, "%s: chunk %" PRIu64 ": %s", what, i,
			     tfs_diag_msg(&d));
		cr_assert(memcmp(one, whole + out_at, ch.orig) == 0,
			  "%s: chunk %" PRIu64 " alone", what, i);
		at += tfs_tile_chunk_size(&ch);
		out_at += ch.orig;
		tfs_free(one);
	}
	cr_assert_eq(at, tile_len, "%s", what);
	tfs_chunk_decoder_free(dec);
	tfs_free(table);
	tfs_free(whole);
}

/* ---- the corpus ---- */

struct corpus_case {
	const char *array;
	const char *field;
	const char *file;
	const char *var_file;
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
	uint16_t y_extent, x_extent;
	const char *key_hex;
	const char *golden;
};

static const struct corpus_case cases[] = {
#include "corpus_cases.inc"
};

#define NCASES (sizeof(cases) / sizeof(*cases))

static void hex_key(const char *hex, uint8_t key[32])
{
	cr_assert_eq(strlen(hex), 64);
	for (int i = 0; i < 32; i++) {
		char b[3] = {hex[2 * i], hex[2 * i + 1], 0};

		key[i] = (uint8_t)strtoul(b, NULL, 16);
	}
}

/* Every tile of one data or validity file of a case. */
static void check_file(const struct corpus_case *c, const char *file,
		       const struct tfs_pipeline *p,
		       const struct tfs_tile_ctx *ctx, uint64_t cell_size)
{
	char path[1024], what[256];
	size_t len, pos = 0;
	uint8_t *bytes;

	snprintf(path, sizeof(path), "%s/%s/%s", TFS_CORPUS_DIR, c->array,
		 file);
	bytes = tu_read_file(path, &len);
	cr_assert(bytes, "%s", path);
	for (uint64_t first = 0; first < c->ncells; first += c->tile_cells) {
		size_t tile_len;
		uint64_t orig;

		cr_assert(tu_tile_span(bytes, len, pos, &tile_len, &orig),
			  "%s: tile at %zu", path, pos);
		snprintf(what, sizeof(what), "%s.%s %s tile at cell %" PRIu64,
			 c->array, c->field, file, first);
		check_runs(what, p, ctx, bytes + pos, tile_len,
			   (size_t)orig);
		cr_assert_eq(orig % cell_size, 0, "%s", what);
		pos += tile_len;
	}
	tfs_free(bytes);
}

ParameterizedTestParameters(chunks, corpus_fixed)
{
	static size_t idx[NCASES];
	size_t n = 0;

	/* Filtered fixed-size fields. */
	for (size_t i = 0; i < NCASES; i++)
		if (!cases[i].var_file && !cases[i].string_mode &&
		    cases[i].filters[0])
			idx[n++] = i;
	return cr_make_param_array(size_t, idx, n);
}

ParameterizedTest(size_t *ci, chunks, corpus_fixed, .timeout = 120)
{
	const struct corpus_case *c = &cases[*ci];
	struct tfs_pipeline p = tu_pipe_v(c->filters);
	struct tfs_pipeline pv = tu_pipe_v(c->validity_filters);
	struct tfs_tile_ctx ctx = tu_ctx(c->type, c->cell_size);
	struct tfs_tile_ctx vctx = tu_ctx(TFS_UINT8, 1);
	uint8_t key[32];

	if (c->key_hex[0]) {
		hex_key(c->key_hex, key);
		ctx.key = vctx.key = key;
		ctx.implicit_aes = vctx.implicit_aes = true;
	}
	ctx.fragment_version = vctx.fragment_version = c->fragment_version;
	for (uint32_t i = 0; i < p.count; i++) {
		if (p.filters[i].type == TFS_FILTER_WEBP) {
			p.filters[i].webp_y_extent = c->y_extent;
			p.filters[i].webp_x_extent = c->x_extent;
		}
	}
	check_file(c, c->file, &p, &ctx, c->cell_size);
	if (c->validity)
		check_file(c, c->validity, &pv, &vctx, 1);
}

/* ---- tiles of several chunks, each filter kind ---- */

static const uint8_t test_key[32] = {
	0x60, 0x3d, 0xeb, 0x10, 0x15, 0xca, 0x71, 0xbe, 0x2b, 0x73, 0xae,
	0xf0, 0x85, 0x7d, 0x77, 0x81, 0x1f, 0x35, 0x2c, 0x07, 0x3b, 0x61,
	0x08, 0xd7, 0x2d, 0x98, 0x10, 0xa3, 0x09, 0x14, 0xdf, 0xf4};

struct kind {
	const char *filters[4];
	unsigned type;
	size_t size;
	bool encrypted;
};

static const struct kind kinds[] = {
	{{"GZIP(level=1)"}, TFS_INT32, 4, false},
	{{"ZSTD(level=1)"}, TFS_INT32, 4, false},
	{{"LZ4(level=1)"}, TFS_INT32, 4, false},
	{{"RLE(level=-1)"}, TFS_INT32, 4, false},
	{{"BZIP2(level=1)"}, TFS_INT32, 4, false},
	{{"DOUBLE_DELTA(level=-1,reinterpret=ANY)"}, TFS_INT64, 8, false},
	{{"DELTA(level=-1,reinterpret=ANY)"}, TFS_INT64, 8, false},
	{{"BIT_WIDTH_REDUCTION(max_window=256)"}, TFS_UINT32, 4, false},
	{{"BITSHUFFLE"}, TFS_INT32, 4, false},
	{{"BYTESHUFFLE"}, TFS_INT64, 8, false},
	{{"POSITIVE_DELTA(max_window=1024)"}, TFS_UINT32, 4, false},
	{{"CHECKSUM_MD5"}, TFS_INT32, 4, false},
	{{"CHECKSUM_SHA256"}, TFS_INT32, 4, false},
	{{"SCALE_FLOAT(bytewidth=4,factor=0.5,offset=0)"}, TFS_FLOAT64, 8,
	 false},
	{{"XOR"}, TFS_INT64, 8, false},
	{{"BITSHUFFLE", "ZSTD(level=1)", "CHECKSUM_MD5"}, TFS_FLOAT32, 4,
	 false},
	{{"ZSTD(level=1)"}, TFS_INT32, 4, true},
	{{NULL}, TFS_INT32, 4, false},
	{{NULL}, TFS_INT32, 4, true},
};

/* n cells that every kind accepts: increasing (positive delta), whole
 * halves (float scale), with runs (RLE). */
static uint8_t *kind_data(const struct kind *k, size_t n)
{
	uint8_t *v = tfs_malloc(n * k->size);

	cr_assert(v);
	for (size_t i = 0; i < n; i++) {
		uint64_t x = 3 * (uint64_t)(i / 4) + (i / 4) % 2;

		if (k->type == TFS_FLOAT64) {
			double f = (double)x * 0.5;

			memcpy(v + i * 8, &f, 8);
		} else if (k->type == TFS_FLOAT32) {
			float f = (float)x * 0.25f;

			memcpy(v + i * 4, &f, 4);
		} else if (k->size == 8) {
			memcpy(v + i * 8, &x, 8);
		} else {
			uint32_t y = (uint32_t)x;

			memcpy(v + i * 4, &y, 4);
		}
	}
	return v;
}

Test(chunks, every_kind_several_chunks)
{
	for (size_t ki = 0; ki < sizeof(kinds) / sizeof(*kinds); ki++) {
		const struct kind *k = &kinds[ki];
		struct tfs_pipeline p = tu_pipe_v(k->filters);
		struct tfs_tile_ctx ctx = tu_ctx(k->type, k->size);
		/* 5 chunks and a part of one. */
		size_t n = (5 * 65536 + 1000) / k->size;
		uint8_t *v = kind_data(k, n);
		struct tfs_tile_chunk *table;
		uint64_t chunks, size;
		struct tfs_buf enc;
		struct tfs_diag d;
		char what[128];

		if (k->encrypted) {
			ctx.key = test_key;
			ctx.implicit_aes = true;
		}
		snprintf(what, sizeof(what), "%s%s%s",
			 k->filters[0] ? k->filters[0] : "no filter",
			 k->filters[1] ? " ..." : "",
			 k->encrypted ? " + AES" : "");
		tfs_diag_init(&d);
		tfs_buf_init(&enc, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_tile_encode(&enc, &p, &ctx, v, n * k->size,
					     NULL, 0, &d),
			     TFS_E_OK, "%s: %s", what, tfs_diag_msg(&d));
		cr_assert_eq(tfs_tile_chunks(enc.data, enc.len, &table,
					     &chunks, &size, &d),
			     TFS_E_OK, "%s: %s", what, tfs_diag_msg(&d));
		cr_assert_eq(chunks, 6, "%s: %" PRIu64 " chunks", what, chunks);
		tfs_free(table);
		check_runs(what, &p, &ctx, enc.data, enc.len, n * k->size);
		tfs_buf_release(&enc);
		tfs_free(v);
	}
}

Test(chunks, which_pipelines_cut_chunks)
{
	struct tfs_pipeline p = tu_pipe("ZSTD(level=-1)", NULL);
	struct tfs_pipeline w =
		tu_pipe("WEBP(quality=100,format=RGB,lossless=1)", NULL);
	struct tfs_pipeline none = tu_pipe(NULL);

	struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT8, 1);
	struct tfs_tile_chunk *table;
	uint64_t chunks, size;
	uint8_t img[64 * 192];
	struct tfs_buf enc;

	cr_assert(tfs_pipeline_chunked(&p));
	cr_assert(tfs_pipeline_chunked(&none));
	cr_assert_not(tfs_pipeline_chunked(&w));
	p.max_chunk_size = 0;
	cr_assert_not(tfs_pipeline_chunked(&p));
	/* A WebP tile is one chunk, whatever its size. */
	w.filters[0].webp_y_extent = 64;
	w.filters[0].webp_x_extent = 192;
	for (size_t i = 0; i < sizeof(img); i++)
		img[i] = (uint8_t)(i * 7 / 5);
	tfs_buf_init(&enc, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&enc, &w, &ctx, img, sizeof(img), NULL,
				     0, NULL),
		     TFS_E_OK);
	cr_assert_eq(tfs_tile_chunks(enc.data, enc.len, &table, &chunks,
				     &size, NULL),
		     TFS_E_OK);
	cr_assert_eq(chunks, 1);
	cr_assert_eq(size, sizeof(img));
	tfs_free(table);
	check_runs("WEBP", &w, &ctx, enc.data, enc.len, sizeof(img));
	tfs_buf_release(&enc);
}

/* A checksum covers its chunk: damage in chunk 2 fails the runs that
 * hold chunk 2 and no other. */
Test(chunks, checksum_per_chunk)
{
	const struct kind *k = &kinds[11]; /* MD5 */
	struct tfs_pipeline p = tu_pipe_v(k->filters);
	struct tfs_tile_ctx ctx = tu_ctx(k->type, k->size);
	size_t n = 4 * 65536 / 4;
	uint8_t *v = kind_data(k, n), out[65536];
	struct tfs_tile_chunk *table;
	uint64_t chunks, size;
	struct tfs_buf enc;
	struct tfs_diag d;

	tfs_diag_init(&d);
	tfs_buf_init(&enc, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&enc, &p, &ctx, v, n * 4, NULL, 0, &d),
		     TFS_E_OK);
	cr_assert_eq(tfs_tile_chunks(enc.data, enc.len, &table, &chunks,
				     &size, &d),
		     TFS_E_OK);
	cr_assert_eq(chunks, 4);
	/* The last byte of chunk 2's data. */
	enc.data[table[2].at + tfs_tile_chunk_size(&table[2]) - 1] ^= 1;
	for (uint64_t i = 0; i < chunks; i++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_tile_decode_chunks(&p, &ctx, out, sizeof(out),
						    enc.data, enc.len, i, 1,
						    &d),
			     i == 2 ? TFS_E_CHECKSUM : TFS_E_OK,
			     "chunk %" PRIu64 ": %s", i, tfs_diag_msg(&d));
	}
	cr_expect(strstr(d.msg, "tile chunk") == NULL); /* chunk 3: none */
	tfs_diag_init(&d);
	cr_expect_eq(tfs_tile_decode_chunks(&p, &ctx, out, sizeof(out),
					    enc.data, enc.len, 2, 1, &d),
		     TFS_E_CHECKSUM);
	cr_expect(strstr(d.msg, "tile chunk 2") != NULL, "%s", d.msg);
	tfs_free(table);
	tfs_buf_release(&enc);
	tfs_free(v);
}

/* Damaged headers: refused with TFS_E_CORRUPT, nothing read out of
 * bounds (the sanitizer build checks). */
Test(chunks, damaged_headers)
{
	struct tfs_pipeline p = tu_pipe("ZSTD(level=1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 4);
	size_t n = 3 * 65536 / 4;
	uint8_t *v = tfs_callocn(n, 4), out[65536];
	struct tfs_tile_chunk *table, ch, bad;
	struct tfs_chunk_decoder *dec;
	uint64_t chunks, size, count;
	struct tfs_buf enc;
	struct tfs_diag d;
	uint8_t *copy;

	tfs_diag_init(&d);
	tfs_buf_init(&enc, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&enc, &p, &ctx, v, n * 4, NULL, 0, &d),
		     TFS_E_OK);
	cr_assert_eq(tfs_tile_chunks(enc.data, enc.len, &table, &chunks,
				     &size, &d),
		     TFS_E_OK);
	cr_assert_eq(chunks, 3);
	ch = table[1];
	tfs_free(table);

	/* A count the tile cannot hold; no count at all. */
	copy = tfs_malloc(enc.len);
	memcpy(copy, enc.data, enc.len);
	tfs_put_u64(copy, UINT64_C(1) << 40);
	cr_expect_eq(tfs_tile_chunk_count(copy, 8, enc.len, &count, &d),
		     TFS_E_CORRUPT);
	cr_expect_eq(tfs_tile_chunks(copy, enc.len, &table, &count, &size,
				     &d),
		     TFS_E_CORRUPT);
	cr_expect_null(table);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_tile_chunk_count(copy, 4, 4, &count, &d),
		     TFS_E_CORRUPT);

	/* A short header, a chunk past the tile, one past the decoded size. */
	tfs_diag_init(&d);
	cr_expect_eq(tfs_tile_chunk_parse(enc.data + ch.at, 11, 1, ch.at,
					  ch.out_at, enc.len, size, &bad, &d),
		     TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "tile chunk 1 truncated") != NULL, "%s",
		  d.msg);
	cr_expect_eq(tfs_tile_chunk_parse(enc.data + ch.at, 12, 1, ch.at,
					  ch.out_at, ch.at + 20, size, &bad,
					  NULL),
		     TFS_E_CORRUPT);
	cr_expect_eq(tfs_tile_chunk_parse(enc.data + ch.at, 12, 1, ch.at,
					  ch.out_at, enc.len, ch.out_at + 10,
					  &bad, NULL),
		     TFS_E_CORRUPT);
	/* Its length grown: the chain runs past the end of the tile. */
	memcpy(copy, enc.data, enc.len);
	tfs_put_u32(copy + ch.at + 4, ch.filtered + 100);
	cr_expect_eq(tfs_tile_chunks(copy, enc.len, &table, &count, &size,
				     NULL),
		     TFS_E_CORRUPT);
	cr_expect_null(table);
	cr_expect_eq(tfs_tile_decode_chunks(&p, &ctx, out, ch.orig, copy,
					    enc.len, 1, 1, NULL),
		     TFS_E_CORRUPT);
	/* A header that changed after the table was made. */
	cr_assert_eq(tfs_chunk_decoder_new(&p, &ctx, &dec, NULL), TFS_E_OK);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_chunk_decoder_run(dec, &ch, 1, out, ch.orig,
					   copy + ch.at,
					   (size_t)tfs_tile_chunk_size(&ch),
					   &d),
		     TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "changed") != NULL, "%s", d.msg);
	/* Its data damaged: the codec fails, naming the chunk. */
	memcpy(copy, enc.data, enc.len);
	memset(copy + ch.at + 12 + ch.md_len, 0xff, 16);
	tfs_diag_init(&d);
	cr_expect_neq(tfs_chunk_decoder_run(dec, &ch, 1, out, ch.orig,
					    copy + ch.at,
					    (size_t)tfs_tile_chunk_size(&ch),
					    &d),
		      TFS_E_OK);
	cr_expect(strstr(d.msg, "tile chunk 1") != NULL, "%s", d.msg);
	/* String mode is decoded whole. */
	tfs_chunk_decoder_free(dec);
	ctx.string_mode = true;
	cr_expect_eq(tfs_chunk_decoder_new(&p, &ctx, &dec, NULL),
		     TFS_E_UNSUPPORTED);
	cr_expect_null(dec);
	tfs_free(copy);
	tfs_buf_release(&enc);
	tfs_free(v);
}
