/* Filter lists: parsing and serialization (format/filters.md §1), and the
 * corpus JSON spelling of every filter. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"
#include "tfs_alloc.h"

/* Every distinct filter string of the public corpus JSON files. */
static const char *const corpus_filters[] = {
	"BIT_WIDTH_REDUCTION(max_window=256)",
	"BZIP2(level=-1)",
	"BZIP2(level=9)",
	"DELTA(level=-1,reinterpret=ANY)",
	"DELTA(level=-1,reinterpret=INT32)",
	"DELTA(level=-1,reinterpret=UINT16)",
	"DICTIONARY_ENCODING(level=-1)",
	"DOUBLE_DELTA(level=-1,reinterpret=ANY)",
	"DOUBLE_DELTA(level=-1,reinterpret=INT64)",
	"GZIP(level=-1)",
	"GZIP(level=9)",
	"LZ4(level=-1)",
	"LZ4(level=9)",
	"POSITIVE_DELTA(max_window=1024)",
	"POSITIVE_DELTA(max_window=128)",
	"RLE(level=-1)",
	"SCALE_FLOAT(bytewidth=1,factor=0.5,offset=3)",
	"SCALE_FLOAT(bytewidth=2,factor=0.01,offset=0)",
	"SCALE_FLOAT(bytewidth=4,factor=0.0001,offset=10)",
	"SCALE_FLOAT(bytewidth=4,factor=0.001,offset=-5)",
	"WEBP(quality=100,format=RGB,lossless=1)",
	"WEBP(quality=50,format=RGB,lossless=0)",
	"ZSTD(level=-1)",
	"ZSTD(level=1)",
	"ZSTD(level=19)",
	"ZSTD(level=3)",
	"ZSTD(level=5)",
	"ZSTD(level=7)",
	"ZSTD(level=9)",
	"BITSHUFFLE",
	"BYTESHUFFLE",
	"CHECKSUM_MD5",
	"CHECKSUM_SHA256",
	"XOR",
	"NONE",
};

static void assert_describes(const struct tfs_filter *f, const char *want)
{
	struct tfs_buf b;

	tfs_buf_init(&b, 4096);
	cr_assert_eq(tfs_filter_describe(&b, f), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
	cr_assert_str_eq((const char *)b.data, want);
	tfs_buf_release(&b);
}

Test(pipeline, describe_matches_corpus_spelling)
{
	for (size_t i = 0; i < sizeof(corpus_filters) / sizeof(*corpus_filters);
	     i++) {
		struct tfs_filter f;

		cr_assert(tu_parse_filter(corpus_filters[i], &f), "%s",
			  corpus_filters[i]);
		assert_describes(&f, corpus_filters[i]);
	}
}

Test(pipeline, describe_numbers)
{
	struct tfs_filter f;

	tfs_filter_init(&f, TFS_FILTER_SCALE_FLOAT);
	f.byte_width = 8;
	f.scale = 0.1;
	f.offset = -0.0;
	assert_describes(&f, "SCALE_FLOAT(bytewidth=8,factor=0.1,offset=-0)");
	f.scale = 1e-5;
	f.offset = 1e20;
	assert_describes(&f, "SCALE_FLOAT(bytewidth=8,factor=1e-05,offset=1e+20)");
	f.scale = 1.0 / 3.0;
	f.offset = 2.5;
	assert_describes(&f, "SCALE_FLOAT(bytewidth=8,factor=0.3333333333333333,"
			     "offset=2.5)");
	tfs_filter_init(&f, TFS_FILTER_WEBP);
	f.webp_quality = 75.5f;
	f.webp_format = 4;
	f.webp_lossless = 0;
	assert_describes(&f, "WEBP(quality=75.5,format=BGRA,lossless=0)");
	tfs_filter_init(&f, TFS_FILTER_AES256GCM);
	assert_describes(&f, "AES_256_GCM");
}

Test(pipeline, describe_uses_compressor_byte)
{
	struct tfs_filter f;

	/* The algorithm (and name) follows the compressor byte. */
	tfs_filter_init(&f, TFS_FILTER_GZIP);
	f.compressor = TFS_COMP_ZSTD;
	f.level = 4;
	assert_describes(&f, "ZSTD(level=4)");
	f.compressor = TFS_COMP_DELTA;
	f.has_reinterpret = false;
	assert_describes(&f, "DELTA(level=4,reinterpret=ANY)");
}

Test(pipeline, names)
{
	cr_assert_str_eq(tfs_filter_name(TFS_FILTER_BIT_WIDTH_REDUCTION),
			 "BIT_WIDTH_REDUCTION");
	cr_assert_str_eq(tfs_filter_name(TFS_FILTER_DICTIONARY),
			 "DICTIONARY_ENCODING");
	cr_assert_null(tfs_filter_name(TFS_FILTER_DEPRECATED));
	cr_assert_null(tfs_filter_name(20));
	cr_assert_null(tfs_filter_name(255));
}

/* generic_tile.md §3: the filter list of TileDB's generic tiles. */
static const uint8_t gzip1_list[] = {
	0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
	0x05, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00,
};

Test(pipeline, parse_generic_tile_list)
{
	struct tfs_pipeline p;
	struct tfs_cursor c;
	struct tfs_diag d;
	struct tfs_buf b;

	tfs_diag_init(&d);
	tfs_cur_init(&c, gzip1_list, sizeof(gzip1_list));
	cr_assert_eq(tfs_pipeline_parse(&p, &c, 23, &d), TFS_E_OK);
	cr_assert_eq(c.pos, sizeof(gzip1_list));
	cr_assert_eq(p.max_chunk_size, 65536);
	cr_assert_eq(p.count, 1);
	cr_assert_eq(p.filters[0].type, TFS_FILTER_GZIP);
	cr_assert_eq(p.filters[0].compressor, TFS_COMP_GZIP);
	cr_assert_eq(p.filters[0].level, 1);
	cr_assert(tfs_pipeline_has(&p, TFS_FILTER_GZIP));
	cr_assert(!tfs_pipeline_has(&p, TFS_FILTER_ZSTD));
	tfs_buf_init(&b, 1024);
	cr_assert_eq(tfs_pipeline_serialize(&b, &p, 23), TFS_E_OK);
	cr_assert_eq(b.len, sizeof(gzip1_list));
	cr_assert_arr_eq(b.data, gzip1_list, sizeof(gzip1_list));
	tfs_buf_release(&b);
}

static struct tfs_pipeline every_filter(void)
{
	struct tfs_pipeline p = tu_pipe(
		"GZIP(level=3)", "ZSTD(level=-7)", "LZ4(level=1)",
		"RLE(level=-1)", "BZIP2(level=9)",
		"DOUBLE_DELTA(level=-1,reinterpret=INT64)",
		"BIT_WIDTH_REDUCTION(max_window=512)", "BITSHUFFLE",
		"BYTESHUFFLE", "POSITIVE_DELTA(max_window=128)", "CHECKSUM_MD5",
		"CHECKSUM_SHA256", "DICTIONARY_ENCODING(level=2)",
		"SCALE_FLOAT(bytewidth=4,factor=0.25,offset=-1.5)", "XOR",
		"DELTA(level=-1,reinterpret=UINT16)", NULL);

	return p;
}

Test(pipeline, serialize_parse_every_filter)
{
	for (uint32_t version = 18; version <= 23; version++) {
		struct tfs_pipeline p = every_filter(), q;
		struct tfs_buf b, b2;
		struct tfs_cursor c;
		struct tfs_diag d;

		tfs_diag_init(&d);
		p.max_chunk_size = 1000;
		tfs_buf_init(&b, 1 << 20);
		tfs_buf_init(&b2, 1 << 20);
		cr_assert_eq(tfs_pipeline_serialize(&b, &p, version), TFS_E_OK);
		tfs_cur_init(&c, b.data, b.len);
		cr_assert_eq(tfs_pipeline_parse(&q, &c, version, &d), TFS_E_OK,
			     "%s", tfs_diag_msg(&d));
		cr_assert_eq(c.pos, b.len);
		cr_assert_eq(q.count, p.count);
		cr_assert_eq(q.max_chunk_size, 1000);
		/* Reinterpret bytes exist from v20 (double delta), v19
		 * (delta). */
		cr_assert_eq(q.filters[5].has_reinterpret, version >= 20);
		cr_assert_eq(q.filters[15].has_reinterpret, version >= 19);
		for (uint32_t i = 0; i < q.count; i++) {
			struct tfs_buf x, y;

			tfs_buf_init(&x, 4096);
			tfs_buf_init(&y, 4096);
			cr_assert_eq(tfs_filter_describe(&x, &p.filters[i]),
				     TFS_E_OK);
			cr_assert_eq(tfs_filter_describe(&y, &q.filters[i]),
				     TFS_E_OK);
			if (q.filters[i].has_reinterpret ||
			    (i != 5 && i != 15)) {
				cr_assert_eq(x.len, y.len);
				cr_assert_arr_eq(x.data, y.data, x.len);
			}
			tfs_buf_release(&x);
			tfs_buf_release(&y);
		}
		cr_assert_eq(tfs_pipeline_serialize(&b2, &q, version), TFS_E_OK);
		cr_assert_eq(b2.len, b.len);
		cr_assert_arr_eq(b2.data, b.data, b.len);
		tfs_buf_release(&b);
		tfs_buf_release(&b2);
	}
}

Test(pipeline, webp_options_layout)
{
	static const uint8_t list[] = {
		0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, /* 1 filter */
		0x12, 0x0c, 0x00, 0x00, 0x00,			/* WEBP, 12 */
		0x00, 0x00, 0x48, 0x42,				/* 50.0f */
		0x01, 0x00, 0x08, 0x00, 0x18, 0x00, 0x00, 0x00,
	};
	struct tfs_pipeline p;
	struct tfs_cursor c;
	struct tfs_buf b;

	tfs_cur_init(&c, list, sizeof(list));
	cr_assert_eq(tfs_pipeline_parse(&p, &c, 22, NULL), TFS_E_OK);
	cr_assert_eq(p.filters[0].webp_quality, 50.0f);
	cr_assert_eq(p.filters[0].webp_format, 1);
	cr_assert_eq(p.filters[0].webp_lossless, 0);
	cr_assert_eq(p.filters[0].webp_y_extent, 8);
	cr_assert_eq(p.filters[0].webp_x_extent, 24);
	tfs_buf_init(&b, 1024);
	cr_assert_eq(tfs_pipeline_serialize(&b, &p, 22), TFS_E_OK);
	cr_assert_arr_eq(b.data, list, sizeof(list));
	tfs_buf_release(&b);
}

Test(pipeline, sixth_delta_byte_read_at_any_version)
{
	static const uint8_t list[] = {
		0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x13,
		0x06, 0x00, 0x00, 0x00, 0x08, 0xff, 0xff, 0xff, 0xff, 0x00,
	};
	struct tfs_pipeline p;
	struct tfs_cursor c;

	tfs_cur_init(&c, list, sizeof(list));
	cr_assert_eq(tfs_pipeline_parse(&p, &c, 12, NULL), TFS_E_OK);
	cr_assert(p.filters[0].has_reinterpret);
	cr_assert_eq(p.filters[0].reinterpret, TFS_INT32);
	cr_assert_eq(p.filters[0].level, -1);
}

static enum tfs_err parse_bytes(const uint8_t *b, size_t n, size_t *pos)
{
	struct tfs_pipeline p;
	struct tfs_cursor c;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	tfs_cur_init(&c, b, n);
	e = tfs_pipeline_parse(&p, &c, 22, &d);
	if (e) {
		cr_assert_eq(d.code, e);
		cr_assert_neq(d.msg[0], '\0');
	}
	*pos = c.pos;
	return e;
}

Test(pipeline, truncated_lists_fail_and_restore_cursor)
{
	struct tfs_pipeline p = every_filter();
	struct tfs_buf b;

	tfs_buf_init(&b, 1 << 20);
	cr_assert_eq(tfs_pipeline_serialize(&b, &p, 22), TFS_E_OK);
	for (size_t n = 0; n < b.len; n++) {
		uint8_t *copy = tfs_memdup(b.data, n);
		size_t pos = 99;

		cr_assert_eq(parse_bytes(copy, n, &pos), TFS_E_CORRUPT,
			     "prefix %zu", n);
		cr_assert_eq(pos, 0);
		tfs_free(copy);
	}
	tfs_buf_release(&b);
}

Test(pipeline, bad_lists)
{
	static const uint8_t deprecated[] = {0, 0, 1, 0, 1, 0, 0, 0,
					     17, 0, 0, 0, 0};
	static const uint8_t unknown_type[] = {0, 0, 1, 0, 1, 0, 0, 0,
					       20, 0, 0, 0, 0};
	static const uint8_t short_gzip[] = {0, 0, 1, 0, 1, 0, 0, 0,
					     1, 4, 0, 0, 0, 1, 1, 0, 0};
	static const uint8_t long_gzip[] = {0, 0, 1, 0, 1, 0, 0, 0, 1, 6,
					    0, 0, 0, 1, 1, 0, 0, 0, 0};
	static const uint8_t bad_comp[] = {0, 0, 1, 0, 1, 0, 0, 0, 1,
					   5, 0, 0, 0, 9, 1, 0, 0, 0};
	static const uint8_t opts_on_xor[] = {0, 0, 1, 0, 1, 0, 0, 0,
					      16, 1, 0, 0, 0, 0};
	static const uint8_t too_many[] = {0, 0, 1, 0, 17, 0, 0, 0};
	static const uint8_t bad_reinterpret[] = {
		0, 0, 1, 0, 1, 0, 0, 0, 19, 6, 0, 0, 0, 8, 0, 0, 0, 0, 44};
	static const uint8_t bad_width[] = {
		0, 0, 1, 0, 1, 0, 0, 0, 15, 24, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0,
		0, 0, 0, 0};
	size_t pos;

	cr_assert_eq(parse_bytes(deprecated, sizeof(deprecated), &pos),
		     TFS_E_CORRUPT);
	cr_assert_eq(parse_bytes(unknown_type, sizeof(unknown_type), &pos),
		     TFS_E_CORRUPT);
	cr_assert_eq(parse_bytes(short_gzip, sizeof(short_gzip), &pos),
		     TFS_E_CORRUPT);
	cr_assert_eq(parse_bytes(long_gzip, sizeof(long_gzip), &pos),
		     TFS_E_CORRUPT);
	cr_assert_eq(parse_bytes(bad_comp, sizeof(bad_comp), &pos),
		     TFS_E_CORRUPT);
	cr_assert_eq(parse_bytes(opts_on_xor, sizeof(opts_on_xor), &pos),
		     TFS_E_CORRUPT);
	cr_assert_eq(parse_bytes(too_many, sizeof(too_many), &pos),
		     TFS_E_UNSUPPORTED);
	cr_assert_eq(parse_bytes(bad_reinterpret, sizeof(bad_reinterpret),
				 &pos),
		     TFS_E_CORRUPT);
	cr_assert_eq(parse_bytes(bad_width, sizeof(bad_width), &pos),
		     TFS_E_CORRUPT);
	cr_assert_eq(pos, 0);
}

Test(pipeline, has_follows_compressor)
{
	struct tfs_pipeline p = tu_pipe("BYTESHUFFLE", "GZIP(level=1)", NULL);

	p.filters[1].compressor = TFS_COMP_RLE;
	cr_assert(tfs_pipeline_has(&p, TFS_FILTER_RLE));
	cr_assert(tfs_pipeline_has(&p, TFS_FILTER_BYTESHUFFLE));
	cr_assert(!tfs_pipeline_has(&p, TFS_FILTER_DICTIONARY));
}

Test(pipeline, add_limit)
{
	struct tfs_pipeline p;
	struct tfs_filter f;

	tfs_pipeline_init(&p);
	tfs_filter_init(&f, TFS_FILTER_XOR);
	for (int i = 0; i < TFS_MAX_FILTERS; i++)
		cr_assert_eq(tfs_pipeline_add(&p, &f), TFS_E_OK);
	cr_assert_eq(tfs_pipeline_add(&p, &f), TFS_E_TOO_BIG);
}
