/* Known-byte decodes: the worked examples of format/filters.md,
 * format/tile.md §8 and format/generic_tile.md §3, decoded from the exact
 * bytes and, where TileDB's writer is deterministic, encoded back to the
 * exact bytes. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"
#include "tfs_alloc.h"

/* Decodes a one-chunk tile and asserts the result. */
static void expect_decode(const struct tfs_pipeline *p,
			  const struct tfs_tile_ctx *ctx, const void *md,
			  size_t md_len, const void *data, size_t data_len,
			  const void *want, size_t want_len)
{
	struct tfs_buf t;
	struct tfs_diag d;
	uint8_t *out = tfs_malloc(want_len + 1);

	tfs_diag_init(&d);
	tu_tile_begin(&t, 1);
	tu_tile_chunk(&t, (uint32_t)want_len, md, md_len, data, data_len);
	cr_assert_eq(tfs_tile_decode(p, ctx, out, want_len, t.data, t.len, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_arr_eq(out, want, want_len);
	tfs_free(out);
	tfs_buf_release(&t);
}

/* Encodes src and asserts the single chunk's metadata and data bytes. */
static void expect_encode(const struct tfs_pipeline *p,
			  const struct tfs_tile_ctx *ctx, const void *src,
			  size_t len, const void *md, size_t md_len,
			  const void *data, size_t data_len)
{
	struct tfs_buf t;
	struct tfs_diag d;

	tfs_diag_init(&d);
	tfs_buf_init(&t, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&t, p, ctx, src, len, NULL, 0, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(t.len, 8 + 12 + md_len + data_len);
	cr_assert_eq(tfs_get_u64(t.data), 1);
	cr_assert_eq(tfs_get_u32(t.data + 8), len);
	cr_assert_eq(tfs_get_u32(t.data + 12), data_len);
	cr_assert_eq(tfs_get_u32(t.data + 16), md_len);
	if (md_len)
		cr_assert_arr_eq(t.data + 20, md, md_len);
	cr_assert_arr_eq(t.data + 20 + md_len, data, data_len);
	tfs_buf_release(&t);
}

/* Compression wrapper header for one data part (filters.md §3). */
static void wrap_md(uint8_t md[16], uint32_t orig, uint32_t comp)
{
	tfs_put_u32(md, 0);
	tfs_put_u32(md + 4, 1);
	tfs_put_u32(md + 8, orig);
	tfs_put_u32(md + 12, comp);
}

Test(known, tile_md_example_no_filters)
{
	static const uint8_t tile[] = {
		0x01, 0, 0, 0, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x14, 0, 0, 0,
		0,    0, 0, 0, 0x0a, 0, 0, 0, 0x14, 0, 0, 0, 0x1e, 0, 0, 0,
		0x28, 0, 0, 0, 0x32, 0, 0, 0};
	static const int32_t want[] = {10, 20, 30, 40, 50};
	struct tfs_pipeline p;
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	int32_t out[5];
	struct tfs_buf enc;

	tfs_pipeline_init(&p);
	cr_assert_eq(tfs_tile_decode(&p, &ctx, (uint8_t *)out, sizeof(out),
				     tile, sizeof(tile), NULL),
		     TFS_E_OK);
	cr_assert_arr_eq(out, want, sizeof(want));
	enc = tu_roundtrip(&p, &ctx, want, sizeof(want));
	cr_assert_eq(enc.len, sizeof(tile));
	cr_assert_arr_eq(enc.data, tile, sizeof(tile));
	tfs_buf_release(&enc);
}

Test(known, generic_tile_gzip_chunk)
{
	static const uint8_t payload[] = {0x01, 0, 0, 0, 0x6b, 0, 0, 0x01,
					  0,    0, 0, 0x07, 0, 0, 0};
	static const uint8_t tile[] = {
		0x01, 0,    0,	  0,	0,    0,    0,	  0,	0x0f, 0,
		0,    0,    0x14, 0,	0,    0,    0x10, 0,	0,    0,
		0,    0,    0,	  0,	0x01, 0,    0,	  0,	0x0f, 0,
		0,    0,    0x14, 0,	0,    0,    0x78, 0x01, 0x63, 0x64,
		0x60, 0x60, 0xc8, 0x66, 0x60, 0x60, 0x04, 0x52, 0xec, 0x40,
		0x0c, 0x00, 0x04, 0xdb, 0x00, 0x75};
	struct tfs_pipeline p = tu_pipe("GZIP(level=1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_CHAR, 1);
	uint8_t out[sizeof(payload)];

	cr_assert_eq(sizeof(tile), 56);
	cr_assert_eq(tfs_tile_decode(&p, &ctx, out, sizeof(out), tile,
				     sizeof(tile), NULL),
		     TFS_E_OK);
	cr_assert_arr_eq(out, payload, sizeof(payload));
	/* Our zlib writes the same stream at level 1. */
	tfs_buf_release((struct tfs_buf[]){
		tu_roundtrip(&p, &ctx, payload, sizeof(payload))});
	{
		uint8_t md[16];

		wrap_md(md, 15, 20);
		expect_encode(&p, &ctx, payload, sizeof(payload), md, 16,
			      tile + 36, 20);
	}
}

Test(known, double_delta_examples)
{
	static const int32_t v1[] = {10, 12, 15, 19, 24};
	static const uint8_t c1[] = {0x02, 5,	 0, 0, 0, 0, 0, 0, 0,
				     0x0a, 0,	 0, 0, 0x0c, 0, 0, 0,
				     0,	   0,	 0, 0, 0, 0, 0x80, 0x24};
	static const int32_t v2[] = {100, 90, 85, 85, 90, 100};
	static const uint8_t c2[] = {0x04, 6,	 0, 0,	  0,	0,    0,
				     0,	   0,	 0x64, 0, 0,	0,    0x5a,
				     0,	   0,	 0,    0, 0,	0,    0,
				     0,	   0x50, 0x4a, 0x29};
	struct tfs_pipeline p =
		tu_pipe("DOUBLE_DELTA(level=-1,reinterpret=ANY)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	uint8_t md[16];

	wrap_md(md, sizeof(v1), sizeof(c1));
	expect_decode(&p, &ctx, md, 16, c1, sizeof(c1), v1, sizeof(v1));
	expect_encode(&p, &ctx, v1, sizeof(v1), md, 16, c1, sizeof(c1));
	wrap_md(md, sizeof(v2), sizeof(c2));
	expect_decode(&p, &ctx, md, 16, c2, sizeof(c2), v2, sizeof(v2));
	expect_encode(&p, &ctx, v2, sizeof(v2), md, 16, c2, sizeof(c2));
}

Test(known, double_delta_reinterpret_and_raw)
{
	/* Values too far apart: bitsize >= 31 means a raw copy. */
	static const int32_t v[] = {0, INT32_MAX, INT32_MIN, 5};
	struct tfs_pipeline p =
		tu_pipe("DOUBLE_DELTA(level=-1,reinterpret=ANY)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	struct tfs_buf enc = tu_roundtrip(&p, &ctx, v, sizeof(v));
	uint8_t raw[1 + 8 + sizeof(v)];

	raw[0] = 33; /* bitsize of |dd| up to 2^32 */
	tfs_put_u64(raw + 1, 4);
	memcpy(raw + 9, v, sizeof(v));
	cr_assert_eq(enc.len, 8 + 12 + 16 + sizeof(raw));
	cr_assert_arr_eq(enc.data + 36, raw, sizeof(raw));
	tfs_buf_release(&enc);
}

Test(known, rle_fixed_example)
{
	static const int16_t v[] = {5, 5, 5, 7};
	static const uint8_t c[] = {0x05, 0, 0, 3, 0x07, 0, 0, 1};
	struct tfs_pipeline p = tu_pipe("RLE(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT16, 0);
	uint8_t md[16];

	wrap_md(md, sizeof(v), sizeof(c));
	expect_decode(&p, &ctx, md, 16, c, sizeof(c), v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, 16, c, sizeof(c));
}

Test(known, rle_uses_cell_size_not_type)
{
	/* int8 cells of 3 values: runs of whole cells. */
	static const int8_t v[] = {1, 2, 3, 1, 2, 3, 9, 9, 9};
	static const uint8_t c[] = {1, 2, 3, 0, 2, 9, 9, 9, 0, 1};
	struct tfs_pipeline p = tu_pipe("RLE(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT8, 3);
	uint8_t md[16];

	wrap_md(md, sizeof(v), sizeof(c));
	expect_decode(&p, &ctx, md, 16, c, sizeof(c), v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, 16, c, sizeof(c));
}

Test(known, rle_long_runs_split_at_65535)
{
	size_t n = 200000;
	uint8_t *v = tfs_malloc(n);
	struct tfs_pipeline p = tu_pipe("RLE(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT8, 0);
	struct tfs_buf enc;
	static const uint8_t runs[] = {0xab, 0xff, 0xff, 0xab, 0xff, 0xff,
				       0xab, 0xff, 0xff, 0xab, 0x0d, 0x43};

	memset(v, 0xab, n);
	/* Without chunking: one chunk, runs of 65535 * 3 + 3395. */
	p.max_chunk_size = 0;
	enc = tu_roundtrip(&p, &ctx, v, n);
	cr_assert_eq(tfs_get_u64(enc.data), 1);
	cr_assert_eq(tfs_get_u32(enc.data + 12), sizeof(runs));
	cr_assert_arr_eq(enc.data + 36, runs, sizeof(runs));
	tfs_buf_release(&enc);
	/* Chunked: 65536-byte chunks are 2 runs (65535 + 1) each. */
	p.max_chunk_size = 65536;
	enc = tu_roundtrip(&p, &ctx, v, n);
	cr_assert_eq(tfs_get_u64(enc.data), 4);
	cr_assert_eq(tfs_get_u32(enc.data + 8), 65536);
	cr_assert_eq(tfs_get_u32(enc.data + 12), 6);
	tfs_buf_release(&enc);
	tfs_free(v);
}

static const uint8_t strings[] = "aaaab";
static const uint64_t string_offsets[] = {0, 2, 4};

Test(known, rle_string_example)
{
	static const uint8_t md[] = {0, 0, 0, 0, 1, 0, 0, 0, 5,	   0, 0,
				     0, 7, 0, 0, 0, 0x18, 0, 0, 0, 1, 1};
	static const uint8_t data[] = {2, 2, 0x61, 0x61, 1, 1, 0x62};
	struct tfs_pipeline p = tu_pipe("RLE(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_STRING_ASCII, 1);
	struct tfs_buf t;
	uint8_t values[5];
	uint64_t offs[3];
	struct tfs_diag d;

	ctx.string_mode = true;
	tfs_diag_init(&d);
	tu_tile_begin(&t, 1);
	tu_tile_chunk(&t, 5, md, sizeof(md), data, sizeof(data));
	cr_assert_eq(tfs_tile_decode_strings(&p, &ctx, values, 5, offs, 3,
					     t.data, t.len, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_arr_eq(values, strings, 5);
	cr_assert_arr_eq(offs, string_offsets, sizeof(offs));
	/* Values only. */
	cr_assert_eq(tfs_tile_decode(&p, &ctx, values, 5, t.data, t.len, &d),
		     TFS_E_OK);
	cr_assert_arr_eq(values, strings, 5);
	/* Wrong cell count. */
	cr_assert_eq(tfs_tile_decode_strings(&p, &ctx, values, 5, offs, 2,
					     t.data, t.len, NULL),
		     TFS_E_CORRUPT);
	tfs_buf_release(&t);
	/* And the writer produces the same bytes. */
	tfs_buf_init(&t, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&t, &p, &ctx, strings, 5, string_offsets,
				     3, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(t.len, 8 + 12 + sizeof(md) + sizeof(data));
	cr_assert_arr_eq(t.data + 20, md, sizeof(md));
	cr_assert_arr_eq(t.data + 20 + sizeof(md), data, sizeof(data));
	tfs_buf_release(&t);
}

Test(known, dictionary_example)
{
	/* "aa","b","aa" */
	static const uint8_t vals[] = "aabaa";
	static const uint64_t offs_in[] = {0, 2, 3};
	static const uint8_t md[] = {0, 0, 0, 0, 1,	   0,	 0, 0, 5, 0,
				     0, 0, 3, 0, 0,	   0,	 0x18, 0, 0, 0,
				     1, 1, 5, 0, 0,	   0,	 2, 0x61, 0x61,
				     1, 0x62};
	static const uint8_t data[] = {0, 1, 0};
	struct tfs_pipeline p = tu_pipe("DICTIONARY_ENCODING(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_STRING_UTF8, 1);
	struct tfs_buf t;
	uint8_t values[5];
	uint64_t offs[3];
	struct tfs_diag d;

	ctx.string_mode = true;
	tfs_diag_init(&d);
	tu_tile_begin(&t, 1);
	tu_tile_chunk(&t, 5, md, sizeof(md), data, sizeof(data));
	cr_assert_eq(tfs_tile_decode_strings(&p, &ctx, values, 5, offs, 3,
					     t.data, t.len, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_arr_eq(values, vals, 5);
	cr_assert_arr_eq(offs, offs_in, sizeof(offs));
	tfs_buf_release(&t);
	tfs_buf_init(&t, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_tile_encode(&t, &p, &ctx, vals, 5, offs_in, 3, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_arr_eq(t.data + 20, md, sizeof(md));
	cr_assert_arr_eq(t.data + 20 + sizeof(md), data, sizeof(data));
	tfs_buf_release(&t);
}

Test(known, bitshuffle_uint16_example)
{
	static const uint16_t v[] = {1, 2, 3, 4, 5, 6, 7, 8};
	static const uint8_t shuffled[16] = {0x55, 0x66, 0x78, 0x80};
	static const uint8_t md[] = {1, 0, 0, 0, 16, 0, 0, 0};
	struct tfs_pipeline p = tu_pipe("BITSHUFFLE", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT16, 0);

	expect_decode(&p, &ctx, md, sizeof(md), shuffled, 16, v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, sizeof(md), shuffled, 16);
}

Test(known, bitshuffle_subparts)
{
	/* 21 bytes of uint16: a 16-byte prefix (8 elements, transposed) and
	 * a 5-byte remainder copied. */
	uint8_t v[21];
	static const uint8_t md[] = {2, 0, 0, 0, 16, 0, 0, 0, 5, 0, 0, 0};
	struct tfs_pipeline p = tu_pipe("BITSHUFFLE", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT16, 1);
	uint8_t want[21] = {0x55, 0x66, 0x78, 0x80};

	for (int i = 0; i < 8; i++) {
		v[2 * i] = (uint8_t)(i + 1);
		v[2 * i + 1] = 0;
	}
	for (int i = 16; i < 21; i++)
		v[i] = want[i] = (uint8_t)(0xa0 + i);
	expect_encode(&p, &ctx, v, sizeof(v), md, sizeof(md), want, 21);
	expect_decode(&p, &ctx, md, sizeof(md), want, 21, v, sizeof(v));
}

Test(known, byteshuffle_layout)
{
	static const uint32_t v[] = {0x04030201, 0x08070605, 0x0c0b0a09};
	static const uint8_t shuffled[] = {1, 5, 9,  2, 6, 10,
					   3, 7, 11, 4, 8, 12};
	static const uint8_t md[] = {1, 0, 0, 0, 12, 0, 0, 0};
	struct tfs_pipeline p = tu_pipe("BYTESHUFFLE", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT32, 0);

	expect_decode(&p, &ctx, md, sizeof(md), shuffled, 12, v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, sizeof(md), shuffled, 12);
}

Test(known, delta_layout)
{
	static const int32_t v[] = {-99, -97, -100};
	static const uint8_t c[] = {3,	  0,	0,    0,    0,	  0,	0,
				    0,	  0x9d, 0xff, 0xff, 0xff, 2,	0,
				    0,	  0,	0xfd, 0xff, 0xff, 0xff};
	struct tfs_pipeline p = tu_pipe("DELTA(level=-1,reinterpret=ANY)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	uint8_t md[16];

	wrap_md(md, sizeof(v), sizeof(c));
	expect_decode(&p, &ctx, md, 16, c, sizeof(c), v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, 16, c, sizeof(c));
}

Test(known, xor_layout)
{
	static const uint16_t v[] = {0x00ff, 0x0f0f, 0x0f0f};
	static const uint8_t c[] = {0xff, 0x00, 0xf0, 0x0f, 0x00, 0x00};
	static const uint8_t md[] = {1, 0, 0, 0, 6, 0, 0, 0};
	struct tfs_pipeline p = tu_pipe("XOR", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT16, 0);

	expect_decode(&p, &ctx, md, sizeof(md), c, sizeof(c), v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, sizeof(md), c, sizeof(c));
}

Test(known, bit_width_reduction_layout)
{
	/* int32 100..103: one window, offset 100, 8 bits. */
	static const int32_t v[] = {100, 101, 103, 102};
	static const uint8_t md[] = {16,  0, 0, 0, 1, 0, 0, 0,
				     100, 0, 0, 0, 8, 16, 0, 0, 0};
	static const uint8_t c[] = {0, 1, 3, 2};
	struct tfs_pipeline p = tu_pipe("BIT_WIDTH_REDUCTION(max_window=256)",
					NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);

	expect_decode(&p, &ctx, md, sizeof(md), c, sizeof(c), v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, sizeof(md), c, sizeof(c));
}

Test(known, positive_delta_layout)
{
	static const uint16_t v[] = {7, 9, 9, 20};
	static const uint8_t md[] = {1, 0, 0, 0, 7, 0, 8, 0, 0, 0};
	static const uint8_t c[] = {0, 0, 2, 0, 0, 0, 11, 0};
	struct tfs_pipeline p = tu_pipe("POSITIVE_DELTA(max_window=1024)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_UINT16, 0);

	expect_decode(&p, &ctx, md, sizeof(md), c, sizeof(c), v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, sizeof(md), c, sizeof(c));
}

Test(known, datetime_bwr_depends_on_fragment_version)
{
	static const int64_t v[] = {1000, 1001};
	static const uint8_t md[] = {16, 0, 0, 0,  1, 0, 0, 0, 0xe8, 3, 0, 0,
				     0,	 0, 0, 0, 8, 16, 0, 0, 0};
	static const uint8_t c[] = {0, 1};
	struct tfs_pipeline p = tu_pipe("BIT_WIDTH_REDUCTION(max_window=256)",
					NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TU_DATETIME_MS, 0);

	expect_decode(&p, &ctx, md, sizeof(md), c, sizeof(c), v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), md, sizeof(md), c, sizeof(c));
	/* Before v20 the filter does nothing and has no metadata. */
	ctx.fragment_version = 19;
	expect_decode(&p, &ctx, NULL, 0, v, sizeof(v), v, sizeof(v));
	expect_encode(&p, &ctx, v, sizeof(v), NULL, 0, v, sizeof(v));
}

Test(known, checksum_md5_layout)
{
	/* MD5("abc") = 900150983cd24fb0d6963f7d28e17f72 */
	static const uint8_t md[] = {
		0,    0,    0,	  0,	1,    0,    0,	  0,	3,    0,
		0,    0,    0,	  0,	0,    0,    0x90, 0x01, 0x50, 0x98,
		0x3c, 0xd2, 0x4f, 0xb0, 0xd6, 0x96, 0x3f, 0x7d, 0x28, 0xe1,
		0x7f, 0x72};
	struct tfs_pipeline p = tu_pipe("CHECKSUM_MD5", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_CHAR, 1);

	expect_decode(&p, &ctx, md, sizeof(md), "abc", 3, "abc", 3);
	expect_encode(&p, &ctx, "abc", 3, md, sizeof(md), "abc", 3);
}

Test(known, scale_float_layout)
{
	static const double v[] = {0.52, -1.005, 3.0};
	static const uint8_t c[] = {52, 0, 0x9c, 0xff, 0x2c, 0x01};
	static const uint8_t md[] = {1, 0, 0, 0, 6, 0, 0, 0};
	struct tfs_pipeline p =
		tu_pipe("SCALE_FLOAT(bytewidth=2,factor=0.01,offset=0)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_FLOAT64, 0);
	const double want[] = {0.01 * 52, 0.01 * -100, 0.01 * 300};

	expect_encode(&p, &ctx, v, sizeof(v), md, sizeof(md), c, sizeof(c));
	expect_decode(&p, &ctx, md, sizeof(md), c, sizeof(c), want,
		      sizeof(want));
}

Test(known, empty_tiles)
{
	static const uint8_t zero_chunks[8] = {0};
	struct tfs_pipeline p = tu_pipe("ZSTD(level=-1)", NULL);
	struct tfs_tile_ctx ctx = tu_ctx(TFS_INT32, 0);
	struct tfs_buf t;
	uint8_t dummy[4];
	uint64_t offs[4] = {9, 9, 9, 9};

	/* chunk_count 0 decodes to nothing. */
	cr_assert_eq(tfs_tile_decode(&p, &ctx, NULL, 0, zero_chunks, 8, NULL),
		     TFS_E_OK);
	cr_assert_eq(tfs_tile_decode(&p, &ctx, dummy, 4, zero_chunks, 8, NULL),
		     TFS_E_CORRUPT);
	/* An empty tile is written as 0 chunks. */
	tfs_buf_init(&t, 64);
	cr_assert_eq(tfs_tile_encode(&t, &p, &ctx, NULL, 0, NULL, 0, NULL),
		     TFS_E_OK);
	cr_assert_eq(t.len, 8);
	cr_assert_arr_eq(t.data, zero_chunks, 8);
	tfs_buf_release(&t);
	/* A chunk with original length 0 among others. */
	{
		struct tfs_pipeline none;
		static const int32_t v[] = {1, 2};

		tfs_pipeline_init(&none);
		tu_tile_begin(&t, 3);
		tu_tile_chunk(&t, 4, NULL, 0, &v[0], 4);
		tu_tile_chunk(&t, 0, NULL, 0, NULL, 0);
		tu_tile_chunk(&t, 4, NULL, 0, &v[1], 4);
		{
			int32_t out[2];

			cr_assert_eq(tfs_tile_decode(&none, &ctx,
						     (uint8_t *)out, 8, t.data,
						     t.len, NULL),
				     TFS_E_OK);
			cr_assert_arr_eq(out, v, 8);
		}
		tfs_buf_release(&t);
	}
	/* An empty string tile in string mode: every string is empty. */
	ctx = tu_ctx(TFS_STRING_ASCII, 1);
	ctx.string_mode = true;
	p = tu_pipe("RLE(level=-1)", NULL);
	cr_assert_eq(tfs_tile_decode_strings(&p, &ctx, NULL, 0, offs, 4,
					     zero_chunks, 8, NULL),
		     TFS_E_OK);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(offs[i], 0);
}
