/* Round trips through tfs_tile_encode and tfs_tile_decode for every filter
 * and filter combination over every element type and edge cases: empty
 * tiles, one cell, odd lengths, extreme values, float specials, multi-chunk
 * tiles, var-size chunking, string mode, encryption, WebP and float scale. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"
#include "tfs_alloc.h"

#define MAXF 6

struct pipe_def {
	const char *f[MAXF];
};

/* Lossless pipelines that accept any whole number of cells. */
static const struct pipe_def cell_pipes[] = {
	{{"NONE"}},
	{{"GZIP(level=-1)"}},
	{{"GZIP(level=9)"}},
	{{"ZSTD(level=-1)"}},
	{{"ZSTD(level=3)"}},
	{{"LZ4(level=-1)"}},
	{{"BZIP2(level=9)"}},
	{{"BZIP2(level=-1)"}},
	{{"RLE(level=-1)"}},
	{{"DELTA(level=-1,reinterpret=ANY)"}},
	{{"DOUBLE_DELTA(level=-1,reinterpret=ANY)"}},
	{{"BYTESHUFFLE"}},
	{{"BITSHUFFLE"}},
	{{"BIT_WIDTH_REDUCTION(max_window=256)"}},
	{{"BIT_WIDTH_REDUCTION(max_window=3)"}},
	{{"XOR"}},
	{{"CHECKSUM_MD5"}},
	{{"CHECKSUM_SHA256"}},
	{{"BIT_WIDTH_REDUCTION(max_window=256)", "ZSTD(level=-1)"}},
	{{"BYTESHUFFLE", "LZ4(level=-1)", "CHECKSUM_SHA256"}},
	{{"BITSHUFFLE", "ZSTD(level=-1)"}},
	{{"XOR", "BIT_WIDTH_REDUCTION(max_window=64)", "GZIP(level=9)"}},
	{{"DELTA(level=-1,reinterpret=ANY)",
	  "BIT_WIDTH_REDUCTION(max_window=256)", "ZSTD(level=7)"}},
	{{"DOUBLE_DELTA(level=-1,reinterpret=ANY)",
	  "BIT_WIDTH_REDUCTION(max_window=256)", "GZIP(level=9)"}},
	{{"CHECKSUM_MD5", "ZSTD(level=-1)", "CHECKSUM_SHA256"}},
	{{"RLE(level=-1)", "ZSTD(level=-1)"}},
	{{"BYTESHUFFLE", "RLE(level=-1)"}},
	{{"XOR", "RLE(level=-1)", "CHECKSUM_MD5"}},
	{{"BYTESHUFFLE", "CHECKSUM_MD5", "XOR", "BITSHUFFLE", "LZ4(level=-1)",
	  "BZIP2(level=1)"}},
};

static const unsigned int_types[] = {
	TFS_INT8,  TFS_UINT8,  TFS_INT16,  TFS_UINT16,	     TFS_INT32,
	TFS_UINT32, TFS_INT64, TFS_UINT64, TU_DATETIME_NS, TU_TIME_MS,
	TFS_CHAR,  TFS_BOOL,   TFS_BLOB,
};

enum gen { GEN_SEQ, GEN_RANDOM, GEN_EXTREME, GEN_CONST, GEN_SMALL, GEN__N };

/* n values of ts bytes (little-endian). */
static void generate(uint8_t *p, size_t n, size_t ts, enum gen g,
		     uint64_t seed)
{
	uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1, acc = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		switch (g) {
		case GEN_SEQ:
			v = i * 3 + 1000;
			break;
		case GEN_RANDOM:
			v = tu_rand(&st);
			break;
		case GEN_EXTREME: {
			static const uint64_t pick[] = {
				0, ~UINT64_C(0), UINT64_C(1) << 63,
				(UINT64_C(1) << 63) - 1, 1};
			size_t k = (size_t)(tu_rand(&st) % 5);

			v = pick[k];
			if (ts < 8 && k == 2)
				v = UINT64_C(1) << (8 * ts - 1);
			if (ts < 8 && k == 3)
				v = (UINT64_C(1) << (8 * ts - 1)) - 1;
			break;
		}
		case GEN_CONST:
			v = 0x5a5a5a5a5a5a5a5aull;
			break;
		default: /* nondecreasing, small steps, below INT*_MAX */
			acc += tu_rand(&st) % 4;
			v = acc;
			if (ts < 8 && v >= (UINT64_C(1) << (8 * ts - 1)))
				v = (UINT64_C(1) << (8 * ts - 1)) - 1;
			break;
		}
		for (size_t b = 0; b < ts; b++)
			p[i * ts + b] = (uint8_t)(v >> (8 * b));
	}
}

static struct tfs_pipeline pipe_of(const struct pipe_def *d)
{
	const char *v[MAXF + 1];
	size_t n = 0;

	for (; n < MAXF && d->f[n]; n++)
		v[n] = d->f[n];
	v[n] = NULL;
	return tu_pipe_v(v);
}

static void roundtrip(const struct tfs_pipeline *p,
		      const struct tfs_tile_ctx *ctx, const uint8_t *src,
		      size_t len)
{
	struct tfs_buf enc = tu_roundtrip(p, ctx, src, len);

	tfs_buf_release(&enc);
}

static const size_t counts[] = {0, 1, 2, 3, 7, 8, 9, 1000, 20000};

Test(roundtrip, every_pipeline_every_integer_type, .timeout = 300)
{
	for (size_t pi = 0; pi < sizeof(cell_pipes) / sizeof(*cell_pipes);
	     pi++) {
		struct tfs_pipeline p = pipe_of(&cell_pipes[pi]);

		for (size_t ti = 0; ti < sizeof(int_types) / sizeof(*int_types);
		     ti++) {
			struct tfs_tile_ctx ctx = tu_ctx(int_types[ti], 0);
			size_t ts = tfs_datatype_size(int_types[ti]);

			for (size_t ci = 0;
			     ci < sizeof(counts) / sizeof(*counts); ci++) {
				for (int g = 0; g < GEN__N; g++) {
					size_t len = counts[ci] * ts;
					uint8_t *v = tfs_malloc(len + 1);

					generate(v, counts[ci], ts,
						 (enum gen)g, pi * 131 + ci);
					roundtrip(&p, &ctx, v, len);
					tfs_free(v);
				}
			}
		}
	}
}

/* Pipelines that work on any byte length (cells of 1 byte). */
static const struct pipe_def byte_pipes[] = {
	{{"GZIP(level=-1)"}},
	{{"ZSTD(level=-1)"}},
	{{"LZ4(level=-1)"}},
	{{"BZIP2(level=9)"}},
	{{"RLE(level=-1)"}},
	{{"BYTESHUFFLE"}},
	{{"BITSHUFFLE"}},
	{{"BIT_WIDTH_REDUCTION(max_window=256)"}},
	{{"POSITIVE_DELTA(max_window=1024)"}},
	{{"XOR"}},
	{{"CHECKSUM_SHA256"}},
	{{"BITSHUFFLE", "BYTESHUFFLE", "XOR", "CHECKSUM_MD5", "ZSTD(level=-1)"}},
	{{"POSITIVE_DELTA(max_window=60)",
	  "BIT_WIDTH_REDUCTION(max_window=100)", "LZ4(level=-1)"}},
};

Test(roundtrip, odd_lengths_not_multiple_of_type_size, .timeout = 300)
{
	static const size_t lens[] = {1, 3, 5, 7, 13, 17, 4095, 8193, 70001};
	static const unsigned types[] = {TFS_INT16, TFS_UINT32, TFS_INT64};

	for (size_t pi = 0; pi < sizeof(byte_pipes) / sizeof(*byte_pipes);
	     pi++) {
		struct tfs_pipeline p = pipe_of(&byte_pipes[pi]);

		for (size_t ti = 0; ti < 3; ti++) {
			/* Cells of one byte, so chunks may end anywhere. */
			struct tfs_tile_ctx ctx = tu_ctx(types[ti], 1);
			size_t ts = tfs_datatype_size(types[ti]);

			for (size_t li = 0; li < sizeof(lens) / sizeof(*lens);
			     li++) {
				size_t n = lens[li] / ts + 1;
				uint8_t *v = tfs_malloc(n * ts);

				/* Increasing values keep positive delta
				 * valid. */
				generate(v, n, ts, GEN_SMALL, li);
				roundtrip(&p, &ctx, v, lens[li]);
				tfs_free(v);
			}
		}
	}
}

Test(roundtrip, positive_delta_types)
{
	static const unsigned types[] = {
		TFS_INT8,  TFS_UINT8,  TFS_INT16,	 TFS_UINT16, TFS_INT32,
		TFS_UINT32, TFS_INT64, TFS_UINT64, TU_DATETIME_US,
		TFS_BOOL,  TFS_BLOB, TFS_FLOAT64, TFS_STRING_ASCII};
	struct tfs_pipeline p = tu_pipe("POSITIVE_DELTA(max_window=128)",
					"GZIP(level=1)", NULL);

	for (size_t ti = 0; ti < sizeof(types) / sizeof(*types); ti++) {
		struct tfs_tile_ctx ctx = tu_ctx(types[ti], 0);
		size_t ts = tfs_datatype_size(types[ti]);

		for (size_t ci = 0; ci < sizeof(counts) / sizeof(*counts);
		     ci++) {
			uint8_t *v = tfs_malloc(counts[ci] * ts + 1);

			generate(v, counts[ci], ts, GEN_SMALL, ci);
			roundtrip(&p, &ctx, v, counts[ci] * ts);
			tfs_free(v);
		}
	}
}

Test(roundtrip, positive_delta_signed_extremes)
{
	static const int32_t v[] = {INT32_MIN, -5, -5, 0, 7, INT32_MAX};
	static const int32_t down[] = {3, 2};
	struct tfs_pipeline p = tu_pipe("POSITIVE_DELTA(max_window=1024)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	struct tfs_buf out;

	roundtrip(&p, &ctx, (const uint8_t *)v, sizeof(v));
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, (const uint8_t *)down,
				     sizeof(down), NULL, 0, NULL),
		     TFS_E_INVALID);
	cr_assert_eq(out.len, 0);
	tfs_buf_release(&out);
}

Test(roundtrip, bit_width_extremes)
{
	/* Full-range windows (TileDB's own writer overflows here). */
	static const int32_t a[] = {INT32_MIN, INT32_MAX, 0, -1};
	static const int64_t b[] = {INT64_MIN, INT64_MAX};
	static const uint16_t c[] = {0, 65535, 100};
	static const int16_t d[] = {-200, 200, 0};
	static const uint64_t e[] = {UINT64_MAX - 5, UINT64_MAX, UINT64_MAX - 1};
	struct tfs_pipeline p = tu_pipe("BIT_WIDTH_REDUCTION(max_window=256)",
					NULL);
	struct tfs_tile_ctx ctx;

	ctx = tu_ctx(TFS_INT32, 0);
	roundtrip(&p, &ctx, (const uint8_t *)a, sizeof(a));
	ctx = tu_ctx(TFS_INT64, 0);
	roundtrip(&p, &ctx, (const uint8_t *)b, sizeof(b));
	ctx = tu_ctx(TFS_UINT16, 0);
	roundtrip(&p, &ctx, (const uint8_t *)c, sizeof(c));
	ctx = tu_ctx(TFS_INT16, 0);
	roundtrip(&p, &ctx, (const uint8_t *)d, sizeof(d));
	ctx = tu_ctx(TFS_UINT64, 0);
	roundtrip(&p, &ctx, (const uint8_t *)e, sizeof(e));
}

static void float_specials(uint8_t *p, size_t n, size_t ts, uint64_t seed)
{
	uint64_t st = seed + 7;

	for (size_t i = 0; i < n; i++) {
		if (ts == 4) {
			static const float sp[] = {0.0f, -0.0f, INFINITY,
						   -INFINITY, NAN, FLT_MAX,
						   -FLT_MIN, FLT_TRUE_MIN, 1.5f};
			float f = sp[tu_rand(&st) % 9];
			uint32_t bits;

			memcpy(&bits, &f, 4);
			if (tu_rand(&st) % 7 == 0)
				bits = 0x7fa00001u; /* signalling NaN */
			tfs_put_u32(p + 4 * i, bits);
		} else {
			static const double sp[] = {0.0, -0.0, INFINITY,
						    -INFINITY, NAN, DBL_MAX,
						    -DBL_MIN, DBL_TRUE_MIN, 0.1};
			double f = sp[tu_rand(&st) % 9];
			uint64_t bits;

			memcpy(&bits, &f, 8);
			if (tu_rand(&st) % 7 == 0)
				bits = 0xfff0000000000123ull; /* -sNaN */
			tfs_put_u64(p + 8 * i, bits);
		}
	}
}

Test(roundtrip, float_specials_lossless)
{
	static const struct pipe_def f32[] = {
		{{"GZIP(level=-1)"}},
		{{"BYTESHUFFLE", "ZSTD(level=-1)"}},
		{{"BITSHUFFLE", "LZ4(level=-1)"}},
		{{"XOR", "BIT_WIDTH_REDUCTION(max_window=256)"}},
		{{"DELTA(level=-1,reinterpret=INT32)"}},
		{{"DOUBLE_DELTA(level=-1,reinterpret=UINT32)"}},
		{{"RLE(level=-1)", "CHECKSUM_MD5"}},
		{{"BZIP2(level=3)"}},
	};
	static const struct pipe_def f64[] = {
		{{"XOR", "ZSTD(level=-1)"}},
		{{"DELTA(level=-1,reinterpret=INT64)", "BYTESHUFFLE"}},
		{{"DOUBLE_DELTA(level=-1,reinterpret=INT64)"}},
		{{"BITSHUFFLE", "CHECKSUM_SHA256"}},
	};

	for (int w = 0; w < 2; w++) {
		const struct pipe_def *defs = w ? f64 : f32;
		size_t nd = w ? sizeof(f64) / sizeof(*f64)
			      : sizeof(f32) / sizeof(*f32);
		unsigned type = w ? TFS_FLOAT64 : TFS_FLOAT32;
		size_t ts = w ? 8 : 4;
		struct tfs_tile_ctx ctx = tu_ctx(type, 0);

		for (size_t pi = 0; pi < nd; pi++) {
			struct tfs_pipeline p = pipe_of(&defs[pi]);

			for (size_t ci = 0;
			     ci < sizeof(counts) / sizeof(*counts); ci++) {
				uint8_t *v = tfs_malloc(counts[ci] * ts + 1);

				float_specials(v, counts[ci], ts, ci);
				roundtrip(&p, &ctx, v, counts[ci] * ts);
				tfs_free(v);
			}
		}
	}
}

Test(roundtrip, delta_codecs_refuse_floats)
{
	static const double v[] = {1.0, 2.0};
	struct tfs_tile_ctx ctx = tu_ctx(TFS_FLOAT64, 0);
	struct tfs_pipeline p[2] = {
		tu_pipe("DELTA(level=-1,reinterpret=ANY)", NULL),
		tu_pipe("DOUBLE_DELTA(level=-1,reinterpret=ANY)", NULL)};

	for (int i = 0; i < 2; i++) {
		struct tfs_buf out;
		struct tfs_diag d;

		tfs_diag_init(&d);
		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		cr_assert_neq(tfs_tile_encode(&out, &p[i], &ctx,
					      (const uint8_t *)v, sizeof(v),
					      NULL, 0, &d),
			      TFS_E_OK);
		cr_assert_neq(d.msg[0], '\0');
		tfs_buf_release(&out);
	}
}

Test(roundtrip, fixed_chunking_keeps_cells_whole)
{
	/* 3-byte cells: chunks of 65535 bytes, then the remainder. */
	size_t n = 300000;
	uint8_t *v = tfs_malloc(n);
	struct tfs_pipeline p = tu_pipe("LZ4(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT8, 3);
	struct tfs_buf enc;
	size_t pos = 8;
	static const uint32_t want[] = {65535, 65535, 65535, 65535, 37860};

	generate(v, n, 1, GEN_RANDOM, 3);
	enc = tu_roundtrip(&p, &ctx, v, n);
	cr_assert_eq(tfs_get_u64(enc.data), 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(tfs_get_u32(enc.data + pos), want[i]);
		pos += 12 + tfs_get_u32(enc.data + pos + 4) +
		       tfs_get_u32(enc.data + pos + 8);
	}
	tfs_buf_release(&enc);
	/* A tile of exactly 65536 bytes is one chunk; 65537 are two. */
	ctx = tu_ctx(TFS_UINT8, 1);
	enc = tu_roundtrip(&p, &ctx, v, 65536);
	cr_assert_eq(tfs_get_u64(enc.data), 1);
	tfs_buf_release(&enc);
	enc = tu_roundtrip(&p, &ctx, v, 65537);
	cr_assert_eq(tfs_get_u64(enc.data), 2);
	tfs_buf_release(&enc);
	tfs_free(v);
}

/* Var-size values: encodes cells of the given lengths and checks the
 * chunks' original lengths against tile.md §2. */
static void var_chunks(const size_t *cell_lens, size_t ncells,
		       const uint32_t *want, size_t nwant)
{
	size_t size = 0, pos = 8;
	uint64_t *offs = tfs_mallocn(ncells, sizeof(*offs));
	uint8_t *v, *back;
	struct tfs_pipeline p = tu_pipe("ZSTD(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_STRING_UTF8, 1);
	struct tfs_buf enc;
	struct tfs_diag d;

	for (size_t i = 0; i < ncells; i++) {
		offs[i] = size;
		size += cell_lens[i];
	}
	v = tfs_malloc(size + 1);
	back = tfs_malloc(size + 1);
	generate(v, size, 1, GEN_RANDOM, size);
	tfs_diag_init(&d);
	tfs_buf_init(&enc, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&enc, &p, &ctx, v, size, offs, ncells, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_get_u64(enc.data), nwant);
	for (size_t i = 0; i < nwant; i++) {
		cr_assert_eq(tfs_get_u32(enc.data + pos), want[i], "chunk %zu",
			     i);
		pos += 12 + tfs_get_u32(enc.data + pos + 4) +
		       tfs_get_u32(enc.data + pos + 8);
	}
	cr_assert_eq(tfs_tile_decode(&p, &ctx, back, size, enc.data, enc.len,
				     &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_arr_eq(back, v, size);
	tfs_buf_release(&enc);
	tfs_free(v);
	tfs_free(back);
	tfs_free(offs);
}

Test(roundtrip, var_chunking_walks_cells)
{
	static const size_t a[] = {40000, 40000, 40000};
	static const uint32_t wa[] = {80000, 40000};
	static const size_t b[] = {10000, 70000, 5};
	static const uint32_t wb[] = {80000, 5};
	static const size_t c[] = {50000, 70000, 100};
	static const uint32_t wc[] = {50000, 70000, 100};
	static const size_t d[] = {50000, 70000};
	static const uint32_t wd[] = {50000, 70000};
	static const size_t e[] = {30000, 40000};
	static const uint32_t we[] = {70000, 0}; /* empty last chunk */
	static const size_t f[] = {1, 2, 3};
	static const uint32_t wf[] = {6};
	static const size_t g[] = {0, 0};
	static const uint32_t wg[] = {0};

	var_chunks(a, 3, wa, 2);
	var_chunks(b, 3, wb, 2);
	var_chunks(c, 3, wc, 3);
	var_chunks(d, 2, wd, 2);
	var_chunks(e, 2, we, 2);
	var_chunks(f, 3, wf, 1);
	var_chunks(g, 2, wg, 1);
}

/* Random strings with runs and repeats; returns total size. */
static size_t make_strings(uint8_t *v, uint64_t *offs, size_t ncells,
			   size_t maxlen, uint64_t seed)
{
	uint64_t st = seed + 11;
	size_t size = 0, prev_off = 0, prev_len = 0;

	for (size_t c = 0; c < ncells; c++) {
		uint64_t r = tu_rand(&st) % 10;

		offs[c] = size;
		if (c > 0 && r < 5) {
			/* repeat the previous string (runs) */
			memmove(v + size, v + prev_off, prev_len);
			size += prev_len;
			continue;
		}
		prev_off = size;
		prev_len = r == 5 ? 0 : (size_t)(tu_rand(&st) % (maxlen + 1));
		for (size_t k = 0; k < prev_len; k++)
			v[size + k] = (uint8_t)('a' + tu_rand(&st) % 3);
		size += prev_len;
	}
	return size;
}

static void string_roundtrip(const struct tfs_pipeline *p, unsigned type,
			     const uint8_t *key, const uint8_t *v, size_t size,
			     const uint64_t *offs, size_t ncells)
{
	struct tfs_tile_ctx ctx = tu_ctx(type, 1);
	struct tfs_buf enc;
	struct tfs_diag d;
	uint8_t *back = tfs_malloc(size + 1);
	uint64_t *boffs = tfs_mallocn(ncells + 1, sizeof(*boffs));

	ctx.string_mode = true;
	ctx.key = key;
	ctx.implicit_aes = key != NULL;
	tfs_diag_init(&d);
	tfs_buf_init(&enc, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&enc, p, &ctx, v, size, offs, ncells, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_get_u64(enc.data), ncells ? 1 : 0);
	cr_assert_eq(tfs_tile_decode_strings(p, &ctx, back, size, boffs, ncells,
					     enc.data, enc.len, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(size == 0 || memcmp(back, v, size) == 0);
	cr_assert(ncells == 0 ||
		  memcmp(boffs, offs, ncells * sizeof(*offs)) == 0);
	tfs_free(back);
	tfs_free(boffs);
	tfs_buf_release(&enc);
}

static const uint8_t test_key[32] = "0123456789abcdef0123456789abcdef";

Test(roundtrip, string_mode_rle_and_dictionary, .timeout = 300)
{
	static const struct pipe_def defs[] = {
		{{"RLE(level=-1)"}},
		{{"RLE(level=-1)", "ZSTD(level=-1)"}},
		{{"RLE(level=-1)", "CHECKSUM_MD5"}},
		{{"DICTIONARY_ENCODING(level=-1)"}},
		{{"DICTIONARY_ENCODING(level=-1)", "ZSTD(level=-1)"}},
		{{"DICTIONARY_ENCODING(level=-1)", "BYTESHUFFLE",
		  "GZIP(level=1)"}},
	};
	static const size_t ncells[] = {0, 1, 2, 300, 70000};
	static const size_t maxlen[] = {0, 3, 300};

	for (size_t pi = 0; pi < sizeof(defs) / sizeof(*defs); pi++) {
		struct tfs_pipeline p = pipe_of(&defs[pi]);

		for (size_t ni = 0; ni < 5; ni++) {
			for (size_t mi = 0; mi < 3; mi++) {
				size_t n = ncells[ni];
				uint8_t *v = tfs_malloc(n * maxlen[mi] + 1);
				uint64_t *offs =
					tfs_mallocn(n + 1, sizeof(*offs));
				size_t size = make_strings(v, offs, n,
							   maxlen[mi], ni);

				string_roundtrip(&p, TFS_STRING_ASCII, NULL, v,
						 size, offs, n);
				string_roundtrip(&p, TFS_STRING_UTF8,
						 pi % 2 ? test_key : NULL, v,
						 size, offs, n);
				tfs_free(v);
				tfs_free(offs);
			}
		}
	}
}

Test(roundtrip, string_mode_wide_integers)
{
	/* 70000 equal cells: a run longer than 65535 (4-byte run length),
	 * 4-byte dictionary ids; one 70000-byte string (4-byte length). */
	size_t n = 70000;
	uint8_t *v = tfs_malloc(n + 1);
	uint64_t *offs = tfs_mallocn(n, sizeof(*offs));
	uint64_t one = 0;
	struct tfs_pipeline rle = tu_pipe("RLE(level=-1)", NULL);
	struct tfs_pipeline dict = tu_pipe("DICTIONARY_ENCODING(level=-1)",
					   NULL);

	for (size_t i = 0; i < n; i++) {
		v[i] = 'x';
		offs[i] = i;
	}
	string_roundtrip(&rle, TFS_STRING_ASCII, NULL, v, n, offs, n);
	string_roundtrip(&dict, TFS_STRING_ASCII, NULL, v, n, offs, n);
	string_roundtrip(&rle, TFS_STRING_ASCII, NULL, v, n, &one, 1);
	string_roundtrip(&dict, TFS_STRING_ASCII, NULL, v, n, &one, 1);
	tfs_free(v);
	tfs_free(offs);
}

Test(roundtrip, encrypted_pipelines)
{
	static const struct pipe_def defs[] = {
		{{"NONE"}},
		{{"ZSTD(level=-1)"}},
		{{"BYTESHUFFLE", "CHECKSUM_MD5", "GZIP(level=1)"}},
		{{"BIT_WIDTH_REDUCTION(max_window=256)", "XOR"}},
	};

	for (size_t pi = 0; pi < sizeof(defs) / sizeof(*defs); pi++) {
		struct tfs_pipeline p = pipe_of(&defs[pi]);
		struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);

		ctx.key = test_key;
		ctx.implicit_aes = true;
		for (size_t ci = 0; ci < sizeof(counts) / sizeof(*counts);
		     ci++) {
			size_t len = counts[ci] * 4;
			uint8_t *v = tfs_malloc(len + 1);
			struct tfs_buf enc;

			generate(v, counts[ci], 4, GEN_SEQ, ci);
			enc = tu_roundtrip(&p, &ctx, v, len);
			/* The plaintext does not appear in the tile. */
			if (len >= 16)
				cr_assert_null(memmem(enc.data, enc.len, v,
						      16));
			tfs_buf_release(&enc);
			tfs_free(v);
		}
	}
}

Test(roundtrip, explicit_aes_in_generic_tile_list)
{
	/* Generic tiles list AES (type 11) themselves. */
	struct tfs_pipeline p = tu_pipe("GZIP(level=1)", "AES_256_GCM", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_CHAR, 1);
	static const char payload[] = "generic tile payload, encrypted";
	struct tfs_buf enc;
	struct tfs_diag d;

	ctx.key = test_key;
	ctx.implicit_aes = false;
	enc = tu_roundtrip(&p, &ctx, payload, sizeof(payload));
	/* No key: refused. */
	ctx.key = NULL;
	{
		char out[sizeof(payload)];

		tfs_diag_init(&d);
		cr_assert_eq(tfs_tile_decode(&p, &ctx, (uint8_t *)out,
					     sizeof(out), enc.data, enc.len,
					     &d),
			     TFS_E_KEY);
		cr_assert_eq(d.code, TFS_E_KEY);
	}
	tfs_buf_release(&enc);
}

Test(roundtrip, scale_float_lossy)
{
	static const char *const descs[] = {
		"SCALE_FLOAT(bytewidth=1,factor=0.5,offset=3)",
		"SCALE_FLOAT(bytewidth=2,factor=0.01,offset=0)",
		"SCALE_FLOAT(bytewidth=4,factor=0.0001,offset=10)",
		"SCALE_FLOAT(bytewidth=8,factor=1e-09,offset=-5)",
	};
	static const double range[] = {60.0, 300.0, 200000.0, 1e9};

	for (size_t di = 0; di < 4; di++) {
		struct tfs_pipeline p =
			tu_pipe(descs[di], "ZSTD(level=-1)", NULL);
		struct tfs_filter *f = &p.filters[0];

		for (int w = 0; w < 2; w++) {
			unsigned type = w ? TFS_FLOAT64 : TFS_FLOAT32;
			size_t ts = w ? 8 : 4, n = 5000;
			struct tfs_tile_ctx ctx = tu_ctx(type, 0);
			uint8_t *v = tfs_malloc(n * ts), *back =
							tfs_malloc(n * ts);
			struct tfs_buf enc;
			uint64_t st = di + 1;
			struct tfs_diag d;

			for (size_t i = 0; i < n; i++) {
				double x = f->offset +
					   ((double)(tu_rand(&st) % 2000001) /
						    1000000.0 -
					    1.0) *
						   range[di] * 0.5 * f->scale;

				if (i == 0)
					x = -0.0;
				if (w) {
					memcpy(v + 8 * i, &x, 8);
				} else {
					float y = (float)x;

					memcpy(v + 4 * i, &y, 4);
				}
			}
			tfs_diag_init(&d);
			tfs_buf_init(&enc, TFS_BUF_NO_MAX);
			cr_assert_eq(tfs_tile_encode(&enc, &p, &ctx, v, n * ts,
						     NULL, 0, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			cr_assert_eq(tfs_tile_decode(&p, &ctx, back, n * ts,
						     enc.data, enc.len, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			for (size_t i = 0; i < n; i++) {
				double x, y;

				if (w) {
					memcpy(&x, v + 8 * i, 8);
					memcpy(&y, back + 8 * i, 8);
				} else {
					float a, b;

					memcpy(&a, v + 4 * i, 4);
					memcpy(&b, back + 4 * i, 4);
					x = a;
					y = b;
				}
				cr_assert_leq(fabs(x - y),
					      f->scale * 0.5 +
						      fabs(x) * (w ? 1e-15
								   : 1e-6),
					      "%s %zu: %.17g vs %.17g",
					      descs[di], i, x, y);
			}
			tfs_buf_release(&enc);
			tfs_free(v);
			tfs_free(back);
		}
	}
}

Test(roundtrip, scale_float_refuses_specials_and_overflow)
{
	struct tfs_pipeline p =
		tu_pipe("SCALE_FLOAT(bytewidth=1,factor=1,offset=0)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_FLOAT64, 0);
	static const double bad[][1] = {{NAN}, {INFINITY}, {DBL_TRUE_MIN},
					{128.0}, {-129.0}};
	static const enum tfs_err want[] = {TFS_E_INVALID, TFS_E_INVALID,
					    TFS_E_INVALID, TFS_E_RANGE,
					    TFS_E_RANGE};
	static const double ok[] = {127.0, -128.0, 127.4, -128.4};

	for (int i = 0; i < 5; i++) {
		struct tfs_buf out;

		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_tile_encode(&out, &p, &ctx,
					     (const uint8_t *)bad[i], 8, NULL,
					     0, NULL),
			     want[i], "case %d", i);
		tfs_buf_release(&out);
	}
	{
		struct tfs_buf out;
		double back[4];

		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_tile_encode(&out, &p, &ctx,
					     (const uint8_t *)ok, sizeof(ok),
					     NULL, 0, NULL),
			     TFS_E_OK);
		cr_assert_eq(tfs_tile_decode(&p, &ctx, (uint8_t *)back,
					     sizeof(back), out.data, out.len,
					     NULL),
			     TFS_E_OK);
		cr_assert_eq(back[0], 127.0);
		cr_assert_eq(back[1], -128.0);
		cr_assert_eq(back[2], 127.0);
		cr_assert_eq(back[3], -128.0);
		tfs_buf_release(&out);
	}
}

Test(roundtrip, webp_lossless_and_lossy)
{
	static const char *const lossless[] = {
		"WEBP(quality=100,format=RGB,lossless=1)",
		"WEBP(quality=100,format=BGR,lossless=1)",
		"WEBP(quality=100,format=RGBA,lossless=1)",
		"WEBP(quality=100,format=BGRA,lossless=1)",
	};

	for (int i = 0; i < 4; i++) {
		struct tfs_pipeline p = tu_pipe(lossless[i], NULL);
		int depth = i < 2 ? 3 : 4;
		size_t y = 16, x = 20 * (size_t)depth, n = x * y;
		uint8_t *v = tfs_malloc(n);
		struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT8, 1);
		struct tfs_buf enc;

		p.filters[0].webp_y_extent = (uint16_t)y;
		p.filters[0].webp_x_extent = (uint16_t)x;
		generate(v, n, 1, GEN_RANDOM, (uint64_t)i);
		/* Chunking is off with WebP, even above 64 KiB. */
		enc = tu_roundtrip(&p, &ctx, v, n);
		cr_assert_eq(tfs_get_u64(enc.data), 1);
		tfs_buf_release(&enc);
		tfs_free(v);
	}
	{
		struct tfs_pipeline p =
			tu_pipe("WEBP(quality=90,format=RGB,lossless=0)", NULL);
		size_t y = 32, x = 96, n = x * y;
		uint8_t *v = tfs_malloc(n), *back = tfs_malloc(n);
		struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT8, 1);
		struct tfs_buf enc;
		double err = 0;

		p.filters[0].webp_y_extent = (uint16_t)y;
		p.filters[0].webp_x_extent = (uint16_t)x;
		for (size_t r = 0; r < y; r++)
			for (size_t c = 0; c < x; c++)
				v[r * x + c] = (uint8_t)(r * 4 + (c / 3) * 2);
		tfs_buf_init(&enc, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_tile_encode(&enc, &p, &ctx, v, n, NULL, 0,
					     NULL),
			     TFS_E_OK);
		cr_assert_eq(tfs_tile_decode(&p, &ctx, back, n, enc.data,
					     enc.len, NULL),
			     TFS_E_OK);
		for (size_t i = 0; i < n; i++)
			err += fabs((double)v[i] - (double)back[i]);
		cr_assert_lt(err / (double)n, 6.0);
		tfs_buf_release(&enc);
		tfs_free(v);
		tfs_free(back);
	}
	{
		/* A tile that is not y_extent x x_extent bytes. */
		struct tfs_pipeline p =
			tu_pipe("WEBP(quality=100,format=RGB,lossless=1)", NULL);
		struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT8, 1);
		uint8_t v[10] = {0};
		struct tfs_buf out;

		p.filters[0].webp_y_extent = 2;
		p.filters[0].webp_x_extent = 6;
		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, v, 10, NULL, 0,
					     NULL),
			     TFS_E_INVALID);
		tfs_buf_release(&out);
	}
}

Test(roundtrip, dictionary_outside_string_mode_is_refused)
{
	struct tfs_pipeline p = tu_pipe("DICTIONARY_ENCODING(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	static const int32_t v[] = {1, 2};
	struct tfs_buf out;

	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, (const uint8_t *)v,
				     sizeof(v), NULL, 0, NULL),
		     TFS_E_INVALID);
	tfs_buf_release(&out);
	/* String mode needs RLE or dictionary first. */
	p = tu_pipe("ZSTD(level=-1)", "RLE(level=-1)", NULL);
	ctx = tu_ctx(TFS_STRING_ASCII, 1);
	ctx.string_mode = true;
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, (const uint8_t *)"ab", 2,
				     (const uint64_t[]){0}, 1, NULL),
		     TFS_E_UNSUPPORTED);
	tfs_buf_release(&out);
}

struct shared_tile {
	struct tfs_pipeline p;
	struct tfs_tile_ctx ctx;
	const uint8_t *want;
	size_t len;
	const struct tfs_buf *enc;
	int failures;
};

static void *decode_many(void *arg)
{
	struct shared_tile *s = arg;
	uint8_t *out = tfs_malloc(s->len);
	int bad = 0;

	for (int i = 0; i < 50; i++) {
		if (tfs_tile_decode(&s->p, &s->ctx, out, s->len, s->enc->data,
				    s->enc->len, NULL) != TFS_E_OK ||
		    memcmp(out, s->want, s->len) != 0)
			bad++;
	}
	tfs_free(out);
	return (void *)(intptr_t)bad;
}

Test(roundtrip, concurrent_decodes_share_nothing)
{
	struct shared_tile s;
	size_t n = 100000;
	uint8_t *v = tfs_malloc(n);
	struct tfs_buf enc;
	pthread_t th[4];
	int bad = 0;

	s.p = tu_pipe("BITSHUFFLE", "ZSTD(level=-1)", "CHECKSUM_SHA256", NULL);
	s.ctx = tu_ctx(TFS_INT32, 0);
	s.ctx.key = test_key;
	s.ctx.implicit_aes = true;
	generate(v, n / 4, 4, GEN_SMALL, 5);
	enc = tu_roundtrip(&s.p, &s.ctx, v, n);
	s.want = v;
	s.len = n;
	s.enc = &enc;
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, decode_many, &s), 0);
	for (int i = 0; i < 4; i++) {
		void *r;

		cr_assert_eq(pthread_join(th[i], &r), 0);
		bad += (int)(intptr_t)r;
	}
	cr_assert_eq(bad, 0);
	tfs_buf_release(&enc);
	tfs_free(v);
}

Test(roundtrip, encode_refuses_bad_arguments)
{
	struct tfs_pipeline p = tu_pipe("ZSTD(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_STRING_ASCII, 1);
	static const uint64_t backwards[] = {0, 3, 2};
	static const uint64_t late_start[] = {1, 2};
	static const uint64_t past_end[] = {0, 9};
	struct tfs_buf out;
	struct tfs_diag d;

	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append(&out, "keep", 4), TFS_E_OK);
	cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, (const uint8_t *)"abcd",
				     4, backwards, 3, NULL),
		     TFS_E_INVALID);
	cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, (const uint8_t *)"abcd",
				     4, late_start, 2, NULL),
		     TFS_E_INVALID);
	cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, (const uint8_t *)"abcd",
				     4, past_end, 2, NULL),
		     TFS_E_INVALID);
	cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, NULL, 4, NULL, 0, NULL),
		     TFS_E_INVALID);
	/* AES without a key. */
	p = tu_pipe("AES_256_GCM", NULL);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_tile_encode(&out, &p, &ctx, (const uint8_t *)"abcd",
				     4, NULL, 0, &d),
		     TFS_E_KEY);
	cr_assert_neq(d.msg[0], '\0');
	/* The buffer is left as it was. */
	cr_assert_eq(out.len, 4);
	cr_assert_arr_eq(out.data, "keep", 4);
	tfs_buf_release(&out);
}
