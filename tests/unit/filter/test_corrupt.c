/* Hostile input: truncated tiles, flipped bytes, lying lengths, wrong keys,
 * failing allocations. Every case must end in an error code (never a
 * crash, an out-of-bounds access or a huge allocation; the suite runs
 * under ASan and UBSan). */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "test_util.h"
#include "tfs_alloc.h"

static const uint8_t key_a[32] = "key-aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static const uint8_t key_b[32] = "key-bbbbbbbbbbbbbbbbbbbbbbbbbbbb";

struct victim {
	struct tfs_pipeline p;
	struct tfs_tile_ctx ctx;
	uint8_t *data;
	size_t len;
	uint64_t *offs; /* string mode */
	uint64_t cells;
	struct tfs_buf enc;
};

static const char *const victim_pipes[][5] = {
	{"GZIP(level=-1)"},
	{"ZSTD(level=-1)"},
	{"LZ4(level=-1)"},
	{"BZIP2(level=9)"},
	{"RLE(level=-1)"},
	{"DELTA(level=-1,reinterpret=ANY)"},
	{"DOUBLE_DELTA(level=-1,reinterpret=ANY)"},
	{"BYTESHUFFLE"},
	{"BITSHUFFLE"},
	{"BIT_WIDTH_REDUCTION(max_window=64)"},
	{"POSITIVE_DELTA(max_window=64)"},
	{"XOR"},
	{"CHECKSUM_MD5"},
	{"CHECKSUM_SHA256"},
	{"SCALE_FLOAT(bytewidth=2,factor=1,offset=0)"},
	{"BYTESHUFFLE", "CHECKSUM_MD5", "ZSTD(level=-1)"},
	{"DELTA(level=-1,reinterpret=ANY)", "BIT_WIDTH_REDUCTION(max_window=256)",
	 "GZIP(level=1)"},
	{"AES_256_GCM"},
	{"BITSHUFFLE", "LZ4(level=-1)", "AES_256_GCM"},
};
#define NVICTIMS (sizeof(victim_pipes) / sizeof(*victim_pipes))

static void make_victim(struct victim *v, size_t which, size_t n)
{
	const char *const *f = victim_pipes[which];
	const char *descs[6];
	size_t k = 0;
	struct tfs_diag d;

	for (; k < 5 && f[k]; k++)
		descs[k] = f[k];
	descs[k] = NULL;
	memset(v, 0, sizeof(*v));
	v->p = tu_pipe_v(descs);
	v->ctx = tu_ctx(strstr(f[0], "SCALE") ? TFS_FLOAT32 : TFS_INT32, 0);
	v->ctx.key = key_a;
	v->len = n * 4;
	v->data = tfs_malloc(v->len + 1);
	for (size_t i = 0; i < n; i++) {
		if (v->ctx.type == TFS_FLOAT32) {
			float x = (float)(i % 50);

			memcpy(v->data + 4 * i, &x, 4);
		} else {
			tfs_put_u32(v->data + 4 * i, (uint32_t)(i * 7 + i / 3));
		}
	}
	tfs_diag_init(&d);
	tfs_buf_init(&v->enc, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&v->enc, &v->p, &v->ctx, v->data, v->len,
				     NULL, 0, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
}

static void free_victim(struct victim *v)
{
	tfs_free(v->data);
	tfs_buf_release(&v->enc);
}

static enum tfs_err decode_victim(const struct victim *v, const uint8_t *t,
				  size_t tlen, uint8_t *out)
{
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_tile_decode(&v->p, &v->ctx, out, v->len, t, tlen, &d);
	if (e) {
		/* Every failure explains itself in one line. */
		cr_assert_eq(d.code, e);
		cr_assert_neq(d.msg[0], '\0');
		cr_assert_null(strchr(d.msg, '\n'));
	}
	return e;
}

Test(corrupt, every_truncation_fails)
{
	for (size_t w = 0; w < NVICTIMS; w++) {
		struct victim v;
		uint8_t *out;

		make_victim(&v, w, 100);
		out = tfs_malloc(v.len);
		cr_assert_eq(decode_victim(&v, v.enc.data, v.enc.len, out),
			     TFS_E_OK);
		for (size_t n = 0; n < v.enc.len; n++) {
			uint8_t *t = tfs_memdup(v.enc.data, n);

			cr_assert_neq(decode_victim(&v, t, n, out), TFS_E_OK,
				      "pipeline %zu prefix %zu", w, n);
			tfs_free(t);
		}
		/* One byte too many. */
		{
			uint8_t *t = tfs_malloc(v.enc.len + 1);

			memcpy(t, v.enc.data, v.enc.len);
			t[v.enc.len] = 0;
			cr_assert_eq(decode_victim(&v, t, v.enc.len + 1, out),
				     TFS_E_CORRUPT);
			tfs_free(t);
		}
		tfs_free(out);
		free_victim(&v);
	}
}

/* The size a tile declares, which readers check before allocating its
 * output: exact for every pipeline, and refused for any truncation or
 * trailing byte. */
Test(corrupt, declared_size_is_checked_on_the_chunk_headers)
{
	for (size_t w = 0; w < NVICTIMS; w++) {
		struct victim v;
		struct tfs_diag d;
		uint64_t size;

		make_victim(&v, w, 30000); /* several chunks */
		tfs_diag_init(&d);
		cr_assert_eq(tfs_tile_decoded_size(v.enc.data, v.enc.len,
						   &size, &d),
			     TFS_E_OK, "pipeline %zu: %s", w, tfs_diag_msg(&d));
		cr_assert_eq(size, v.len, "pipeline %zu", w);
		for (size_t n = 0; n < v.enc.len; n++) {
			tfs_diag_init(&d);
			cr_assert_eq(tfs_tile_decoded_size(v.enc.data, n,
							   &size, &d),
				     TFS_E_CORRUPT, "pipeline %zu prefix %zu",
				     w, n);
		}
		cr_assert_eq(tfs_buf_append(&v.enc, "", 1), TFS_E_OK);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_tile_decoded_size(v.enc.data, v.enc.len,
						   &size, &d),
			     TFS_E_CORRUPT);
		free_victim(&v);
	}
}

Test(corrupt, flipped_bytes_never_crash, .timeout = 300)
{
	for (size_t w = 0; w < NVICTIMS; w++) {
		struct victim v;
		uint8_t *out;
		uint64_t st = w + 1;

		make_victim(&v, w, 300);
		out = tfs_malloc(v.len);
		for (int iter = 0; iter < 1500; iter++) {
			uint8_t *t = tfs_memdup(v.enc.data, v.enc.len);
			int nflips = 1 + (int)(tu_rand(&st) % 3);
			enum tfs_err e;

			for (int k = 0; k < nflips; k++) {
				size_t at = (size_t)(tu_rand(&st) % v.enc.len);
				uint8_t x = (uint8_t)(tu_rand(&st) | 1);

				t[at] ^= x;
			}
			e = decode_victim(&v, t, v.enc.len, out);
			/* Checksummed or authenticated tiles notice every
			 * change. */
			if (strstr(victim_pipes[w][0], "CHECKSUM") ||
			    strstr(victim_pipes[w][0], "AES"))
				cr_assert_neq(e, TFS_E_OK,
					      "pipeline %zu iter %d", w, iter);
			tfs_free(t);
		}
		tfs_free(out);
		free_victim(&v);
	}
}

Test(corrupt, random_garbage_never_crashes, .timeout = 300)
{
	uint64_t st = 42;

	for (size_t w = 0; w < NVICTIMS; w++) {
		struct victim v;
		uint8_t *out;

		make_victim(&v, w, 50);
		out = tfs_malloc(v.len);
		for (int iter = 0; iter < 400; iter++) {
			size_t n = 8 + (size_t)(tu_rand(&st) % 400);
			uint8_t *t = tfs_malloc(n);

			for (size_t i = 0; i < n; i++)
				t[i] = (uint8_t)tu_rand(&st);
			/* Plausible chunk header so filters get reached. */
			tfs_put_u64(t, 1);
			if (n >= 20) {
				tfs_put_u32(t + 8, (uint32_t)v.len);
				tfs_put_u32(t + 16, (uint32_t)(tu_rand(&st) %
							       (n - 19)));
				tfs_put_u32(t + 12,
					    (uint32_t)(n - 20 -
						       tfs_get_u32(t + 16)));
			}
			(void)decode_victim(&v, t, n, out);
			tfs_free(t);
		}
		tfs_free(out);
		free_victim(&v);
	}
}

Test(corrupt, checksum_mismatch)
{
	struct victim v;
	uint8_t *out;
	size_t md_len;

	make_victim(&v, 13, 64); /* CHECKSUM_SHA256 */
	out = tfs_malloc(v.len);
	md_len = tfs_get_u32(v.enc.data + 16);
	/* Last data byte. */
	v.enc.data[v.enc.len - 1] ^= 0x01;
	cr_assert_eq(decode_victim(&v, v.enc.data, v.enc.len, out),
		     TFS_E_CHECKSUM);
	v.enc.data[v.enc.len - 1] ^= 0x01;
	/* A digest byte. */
	v.enc.data[20 + md_len - 1] ^= 0x80;
	cr_assert_eq(decode_victim(&v, v.enc.data, v.enc.len, out),
		     TFS_E_CHECKSUM);
	tfs_free(out);
	free_victim(&v);
	/* A checksummed metadata part (the byteshuffle header). */
	{
		struct tfs_pipeline p = tu_pipe("BYTESHUFFLE", "CHECKSUM_MD5",
						NULL);
		struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
		static const int32_t x[] = {1, 2, 3, 4};
		struct tfs_buf enc = tu_roundtrip(&p, &ctx, x, sizeof(x));
		int32_t back[4];

		/* Chunk metadata: md5 header (8 + 2 * 24), then the
		 * byteshuffle header: flip its part length. */
		enc.data[20 + 56 + 4] ^= 0x01;
		cr_assert_eq(tfs_tile_decode(&p, &ctx, (uint8_t *)back,
					     sizeof(back), enc.data, enc.len,
					     NULL),
			     TFS_E_CHECKSUM);
		tfs_buf_release(&enc);
	}
}

Test(corrupt, aes_wrong_key_missing_key_tampering)
{
	struct victim v;
	uint8_t *out;
	struct tfs_diag d;

	make_victim(&v, 18, 64); /* BITSHUFFLE, LZ4, AES */
	out = tfs_malloc(v.len);
	v.ctx.key = key_b;
	cr_assert_eq(decode_victim(&v, v.enc.data, v.enc.len, out), TFS_E_KEY);
	v.ctx.key = NULL;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_tile_decode(&v.p, &v.ctx, out, v.len, v.enc.data,
				     v.enc.len, &d),
		     TFS_E_KEY);
	cr_assert_eq(tfs_err_errno(d.code), EACCES);
	v.ctx.key = key_a;
	v.enc.data[v.enc.len - 3] ^= 0x10;
	cr_assert_eq(decode_victim(&v, v.enc.data, v.enc.len, out), TFS_E_KEY);
	tfs_free(out);
	free_victim(&v);
	/* Implicit AES of a data pipeline. */
	{
		struct tfs_pipeline p = tu_pipe("ZSTD(level=-1)", NULL);
		struct tfs_tile_ctx ctx = tu_ctx(TFS_INT64, 0);
		static const int64_t x[] = {1, 2, 3};
		struct tfs_buf enc;
		int64_t back[3];

		ctx.key = key_a;
		ctx.implicit_aes = true;
		enc = tu_roundtrip(&p, &ctx, x, sizeof(x));
		ctx.key = key_b;
		cr_assert_eq(tfs_tile_decode(&p, &ctx, (uint8_t *)back,
					     sizeof(back), enc.data, enc.len,
					     NULL),
			     TFS_E_KEY);
		tfs_buf_release(&enc);
	}
}

Test(corrupt, wrong_expected_size)
{
	struct victim v;
	uint8_t *out;

	make_victim(&v, 1, 100);
	out = tfs_malloc(v.len + 4);
	cr_assert_eq(tfs_tile_decode(&v.p, &v.ctx, out, v.len - 4, v.enc.data,
				     v.enc.len, NULL),
		     TFS_E_CORRUPT);
	cr_assert_eq(tfs_tile_decode(&v.p, &v.ctx, out, v.len + 4, v.enc.data,
				     v.enc.len, NULL),
		     TFS_E_CORRUPT);
	tfs_free(out);
	free_victim(&v);
}

/* A chunk with a hand-made compression header. */
static enum tfs_err decode_one(const struct tfs_pipeline *p,
			       const struct tfs_tile_ctx *ctx, uint32_t orig,
			       const uint8_t *md, size_t md_len,
			       const uint8_t *data, size_t data_len)
{
	struct tfs_buf t;
	uint8_t *out = tfs_malloc(orig + 1);
	enum tfs_err e;

	tu_tile_begin(&t, 1);
	tu_tile_chunk(&t, orig, md, md_len, data, data_len);
	e = tfs_tile_decode(p, ctx, out, orig, t.data, t.len, NULL);
	tfs_buf_release(&t);
	tfs_free(out);
	return e;
}

Test(corrupt, lying_lengths)
{
	struct tfs_pipeline zstd = tu_pipe("ZSTD(level=-1)", NULL);
	struct tfs_pipeline shuf_zstd = tu_pipe("BYTESHUFFLE", "ZSTD(level=-1)",
						NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	uint8_t md[32], data[64] = {0};
	uint8_t tile[8];

	/* Part claims 4 GiB: refused before allocating. */
	tfs_put_u32(md, 0);
	tfs_put_u32(md + 4, 1);
	tfs_put_u32(md + 8, 0xffffffffu);
	tfs_put_u32(md + 12, 10);
	cr_assert_eq(decode_one(&zstd, &ctx, 16, md, 16, data, 10),
		     TFS_E_CORRUPT);
	/* Same in the middle of a pipeline (a scratch buffer). */
	tfs_put_u32(md, 1);
	tfs_put_u32(md + 4, 1);
	tfs_put_u32(md + 8, 8);
	tfs_put_u32(md + 12, 10);
	tfs_put_u32(md + 16, 0xfffffff0u);
	tfs_put_u32(md + 20, 10);
	cr_assert_eq(decode_one(&shuf_zstd, &ctx, 16, md, 24, data, 20),
		     TFS_E_CORRUPT);
	/* Compressed lengths beyond the data. */
	tfs_put_u32(md, 0);
	tfs_put_u32(md + 4, 1);
	tfs_put_u32(md + 8, 16);
	tfs_put_u32(md + 12, 1000);
	cr_assert_eq(decode_one(&zstd, &ctx, 16, md, 16, data, 10),
		     TFS_E_CORRUPT);
	/* Part count overflowing u32 arithmetic. */
	tfs_put_u32(md, 0xffffffffu);
	tfs_put_u32(md + 4, 0xffffffffu);
	cr_assert_eq(decode_one(&zstd, &ctx, 16, md, 16, data, 10),
		     TFS_E_CORRUPT);
	/* Chunk count that cannot fit. */
	tfs_put_u64(tile, UINT64_MAX);
	cr_assert_eq(tfs_tile_decode(&zstd, &ctx, data, 16, tile, 8, NULL),
		     TFS_E_CORRUPT);
}

Test(corrupt, filter_specific_headers)
{
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	uint8_t md[64], data[64] = {0};

	/* Byteshuffle parts longer than the data. */
	{
		struct tfs_pipeline p = tu_pipe("BYTESHUFFLE", NULL);

		tfs_put_u32(md, 1);
		tfs_put_u32(md + 4, 32);
		cr_assert_eq(decode_one(&p, &ctx, 32, md, 8, data, 16),
			     TFS_E_CORRUPT);
		tfs_put_u32(md, 0x40000000u);
		cr_assert_eq(decode_one(&p, &ctx, 16, md, 8, data, 16),
			     TFS_E_CORRUPT);
	}
	/* Bit width: bad bit count, windows past the original length. */
	{
		struct tfs_pipeline p = tu_pipe(
			"BIT_WIDTH_REDUCTION(max_window=256)", NULL);

		tfs_put_u32(md, 8);
		tfs_put_u32(md + 4, 1);
		tfs_put_u32(md + 8, 0);
		md[12] = 12;
		tfs_put_u32(md + 13, 8);
		cr_assert_eq(decode_one(&p, &ctx, 8, md, 17, data, 2),
			     TFS_E_CORRUPT);
		md[12] = 8;
		tfs_put_u32(md + 13, 400);
		cr_assert_eq(decode_one(&p, &ctx, 8, md, 17, data, 2),
			     TFS_E_CORRUPT);
		tfs_put_u32(md + 13, 8);
		cr_assert_eq(decode_one(&p, &ctx, 8, md, 17, data, 1),
			     TFS_E_CORRUPT);
		cr_assert_eq(decode_one(&p, &ctx, 8, md, 17, data, 2),
			     TFS_E_OK);
	}
	/* Positive delta windows beyond the data. */
	{
		struct tfs_pipeline p = tu_pipe("POSITIVE_DELTA(max_window=8)",
						NULL);

		tfs_put_u32(md, 2);
		tfs_put_u32(md + 4, 0);
		tfs_put_u32(md + 8, 8);
		tfs_put_u32(md + 12, 0);
		tfs_put_u32(md + 16, 9);
		cr_assert_eq(decode_one(&p, &ctx, 17, md, 20, data, 16),
			     TFS_E_CORRUPT);
	}
	/* Double delta: n disagrees with the length, bit stream short. */
	{
		struct tfs_pipeline p =
			tu_pipe("DOUBLE_DELTA(level=-1,reinterpret=ANY)", NULL);
		uint8_t dd[32] = {3};

		tfs_put_u64(dd + 1, 5);
		tfs_put_u32(md, 0);
		tfs_put_u32(md + 4, 1);
		tfs_put_u32(md + 8, 20);
		tfs_put_u32(md + 12, 17);
		cr_assert_eq(decode_one(&p, &ctx, 20, md, 16, dd, 17),
			     TFS_E_CORRUPT);
		tfs_put_u64(dd + 1, 4);
		tfs_put_u32(md + 8, 16);
		cr_assert_eq(decode_one(&p, &ctx, 16, md, 16, dd, 17),
			     TFS_E_CORRUPT);
		tfs_put_u32(md + 12, 25);
		cr_assert_eq(decode_one(&p, &ctx, 16, md, 16, dd, 25),
			     TFS_E_OK);
	}
	/* RLE runs that overflow the part. */
	{
		struct tfs_pipeline p = tu_pipe("RLE(level=-1)", NULL);
		static const uint8_t runs[] = {1, 0, 0, 0, 0xff, 0xff};

		tfs_put_u32(md, 0);
		tfs_put_u32(md + 4, 1);
		tfs_put_u32(md + 8, 8);
		tfs_put_u32(md + 12, 6);
		cr_assert_eq(decode_one(&p, &ctx, 8, md, 16, runs, 6),
			     TFS_E_CORRUPT);
		tfs_put_u32(md + 12, 5);
		cr_assert_eq(decode_one(&p, &ctx, 8, md, 16, runs, 5),
			     TFS_E_CORRUPT);
	}
	/* RLE with the cell size of a lying generic tile header: the run
	 * size must not wrap (found by fuzz_generic_tile). */
	{
		struct tfs_pipeline p = tu_pipe("RLE(level=-1)", NULL);
		static const uint8_t runs[] = {1, 0, 0, 0, 0xff, 0xff};
		struct tfs_tile_ctx huge = tu_ctx(TFS_CHAR, 0);

		tfs_put_u32(md, 0);
		tfs_put_u32(md + 4, 1);
		tfs_put_u32(md + 8, 8);
		tfs_put_u32(md + 12, 6);
		for (uint64_t k = 0; k < 3; k++) {
			huge.cell_size = UINT64_MAX - k;
			cr_assert_eq(decode_one(&p, &huge, 8, md, 16, runs, 6),
				     TFS_E_CORRUPT);
		}
	}
	/* WebP garbage. */
	{
		struct tfs_pipeline p =
			tu_pipe("WEBP(quality=100,format=RGB,lossless=1)", NULL);
		struct tfs_tile_ctx c8 = tu_ctx(TFS_UINT8, 1);

		tfs_put_u32(md, 1);
		tfs_put_u32(md + 4, 20);
		memcpy(data, "RIFF\x0c\0\0\0WEBPVP8L", 16);
		cr_assert_eq(decode_one(&p, &c8, 12, md, 8, data, 20),
			     TFS_E_CORRUPT);
	}
}

static enum tfs_err decode_strings_one(const char *filter,
				       const uint8_t *md, size_t md_len,
				       const uint8_t *data, size_t data_len,
				       uint32_t values_len, uint64_t cells)
{
	struct tfs_pipeline p = tu_pipe(filter, NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_STRING_ASCII, 1);
	struct tfs_buf t;
	uint8_t *values = tfs_malloc(values_len + 1);
	uint64_t *offs = tfs_mallocn(cells + 1, sizeof(*offs));
	enum tfs_err e;

	ctx.string_mode = true;
	tu_tile_begin(&t, 1);
	tu_tile_chunk(&t, values_len, md, md_len, data, data_len);
	e = tfs_tile_decode_strings(&p, &ctx, values, values_len, offs, cells,
				    t.data, t.len, NULL);
	tfs_buf_release(&t);
	tfs_free(values);
	tfs_free(offs);
	return e;
}

Test(corrupt, string_mode_headers)
{
	uint8_t md[64];
	static const uint8_t runs[] = {2, 2, 0x61, 0x61, 1, 1, 0x62};
	static const uint8_t huge_run[] = {0xff, 0, 0x61};

	tfs_put_u32(md, 0);
	tfs_put_u32(md + 4, 1);
	tfs_put_u32(md + 8, 5);
	tfs_put_u32(md + 12, 7);
	tfs_put_u32(md + 16, 24);
	md[20] = 1;
	md[21] = 1;
	cr_assert_eq(decode_strings_one("RLE(level=-1)", md, 22, runs, 7, 5, 3),
		     TFS_E_OK);
	/* Output size beyond the data. */
	tfs_put_u32(md + 12, 8);
	cr_assert_eq(decode_strings_one("RLE(level=-1)", md, 22, runs, 7, 5, 3),
		     TFS_E_CORRUPT);
	tfs_put_u32(md + 12, 7);
	/* Bad integer width. */
	md[20] = 3;
	cr_assert_eq(decode_strings_one("RLE(level=-1)", md, 22, runs, 7, 5, 3),
		     TFS_E_CORRUPT);
	md[20] = 1;
	/* More cells than the tile has. */
	tfs_put_u32(md + 16, 32);
	cr_assert_eq(decode_strings_one("RLE(level=-1)", md, 22, runs, 7, 5, 3),
		     TFS_E_CORRUPT);
	/* A run longer than the cells. */
	tfs_put_u32(md + 16, 24);
	tfs_put_u32(md + 8, 1);
	tfs_put_u32(md + 12, 3);
	cr_assert_eq(decode_strings_one("RLE(level=-1)", md, 22, huge_run, 3, 1,
					3),
		     TFS_E_CORRUPT);
	/* Dictionary: id out of range. */
	{
		static const uint8_t dmd[] = {0, 0, 0, 0, 1, 0, 0, 0, 2, 0,
					      0, 0, 2, 0, 0, 0, 16, 0, 0, 0,
					      1, 1, 2, 0, 0, 0, 1, 0x61};
		static const uint8_t ids[] = {0, 1};
		static const uint8_t ok_ids[] = {0, 0};

		cr_assert_eq(decode_strings_one("DICTIONARY_ENCODING(level=-1)",
						dmd, sizeof(dmd), ok_ids, 2, 2,
						2),
			     TFS_E_OK);
		cr_assert_eq(decode_strings_one("DICTIONARY_ENCODING(level=-1)",
						dmd, sizeof(dmd), ids, 2, 2, 2),
			     TFS_E_CORRUPT);
		/* Dictionary cut short. */
		cr_assert_eq(decode_strings_one("DICTIONARY_ENCODING(level=-1)",
						dmd, sizeof(dmd) - 1, ok_ids, 2,
						2, 2),
			     TFS_E_CORRUPT);
	}
}

Test(corrupt, allocation_failures)
{
	static const char *const pipes[][4] = {
		{"BYTESHUFFLE", "CHECKSUM_MD5", "GZIP(level=1)"},
		{"BIT_WIDTH_REDUCTION(max_window=64)", "BZIP2(level=1)"},
		{"DICTIONARY_ENCODING(level=-1)", "ZSTD(level=-1)"},
	};

	for (int w = 0; w < 3; w++) {
		bool strings = w == 2;
		struct tfs_pipeline p = tu_pipe(pipes[w][0], pipes[w][1],
						pipes[w][2], NULL);
		struct tfs_tile_ctx ctx =
			tu_ctx(strings ? TFS_STRING_ASCII : TFS_INT32, 0);
		uint8_t v[4000], back[4000];
		uint64_t offs[1000], boffs[1000];
		struct tfs_buf enc;
		bool reached_ok = false;

		ctx.string_mode = strings;
		for (size_t i = 0; i < 1000; i++) {
			tfs_put_u32(v + 4 * i, (uint32_t)(i % 17));
			offs[i] = 4 * i;
		}
		tfs_buf_init(&enc, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_tile_encode(&enc, &p, &ctx, v, sizeof(v),
					     strings ? offs : NULL,
					     strings ? 1000 : 0, NULL),
			     TFS_E_OK);
		for (long n = 0; n < 200 && !reached_ok; n++) {
			enum tfs_err e;

			tfs_alloc_fail_after(n);
			if (strings)
				e = tfs_tile_decode_strings(&p, &ctx, back,
							    sizeof(back), boffs,
							    1000, enc.data,
							    enc.len, NULL);
			else
				e = tfs_tile_decode(&p, &ctx, back,
						    sizeof(back), enc.data,
						    enc.len, NULL);
			tfs_alloc_fail_after(-1);
			cr_assert(e == TFS_E_OK || e == TFS_E_NOMEM,
				  "pipeline %d, failing allocation %ld: %s", w,
				  n, tfs_strerror(e));
			reached_ok = e == TFS_E_OK;
		}
		cr_assert(reached_ok);
		cr_assert_arr_eq(back, v, sizeof(v));
		/* Encoding under failing allocations too. */
		for (long n = 0; n < 200; n++) {
			struct tfs_buf out;
			enum tfs_err e;

			tfs_buf_init(&out, TFS_BUF_NO_MAX);
			tfs_alloc_fail_after(n);
			e = tfs_tile_encode(&out, &p, &ctx, v, sizeof(v),
					    strings ? offs : NULL,
					    strings ? 1000 : 0, NULL);
			tfs_alloc_fail_after(-1);
			cr_assert(e == TFS_E_OK || e == TFS_E_NOMEM,
				  "encode %d, failing allocation %ld: %s", w, n,
				  tfs_strerror(e));
			tfs_buf_release(&out);
			if (e == TFS_E_OK)
				break;
		}
		tfs_buf_release(&enc);
	}
}
