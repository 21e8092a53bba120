/* Filter lists as stored in schemas and generic-tile headers: parsing and
 * serialization of the FilterList (format/filters.md §1), the element type
 * each filter sees (filters.md "Element types along a list"), and the
 * one-line description used by the corpus JSON ("ZSTD(level=-1)"). */
#include "tfs_filter.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter_internal.h"
#include "tfs_datatype.h"
#include "tfs_fmt_float.h"

static const char *const filter_names[] = {
	[TFS_FILTER_NONE] = "NONE",
	[TFS_FILTER_GZIP] = "GZIP",
	[TFS_FILTER_ZSTD] = "ZSTD",
	[TFS_FILTER_LZ4] = "LZ4",
	[TFS_FILTER_RLE] = "RLE",
	[TFS_FILTER_BZIP2] = "BZIP2",
	[TFS_FILTER_DOUBLE_DELTA] = "DOUBLE_DELTA",
	[TFS_FILTER_BIT_WIDTH_REDUCTION] = "BIT_WIDTH_REDUCTION",
	[TFS_FILTER_BITSHUFFLE] = "BITSHUFFLE",
	[TFS_FILTER_BYTESHUFFLE] = "BYTESHUFFLE",
	[TFS_FILTER_POSITIVE_DELTA] = "POSITIVE_DELTA",
	[TFS_FILTER_AES256GCM] = "AES_256_GCM",
	[TFS_FILTER_CHECKSUM_MD5] = "CHECKSUM_MD5",
	[TFS_FILTER_CHECKSUM_SHA256] = "CHECKSUM_SHA256",
	[TFS_FILTER_DICTIONARY] = "DICTIONARY_ENCODING",
	[TFS_FILTER_SCALE_FLOAT] = "SCALE_FLOAT",
	[TFS_FILTER_XOR] = "XOR",
	[TFS_FILTER_DEPRECATED] = NULL,
	[TFS_FILTER_WEBP] = "WEBP",
	[TFS_FILTER_DELTA] = "DELTA",
};

const char *tfs_filter_name(unsigned type)
{
	if (type >= sizeof(filter_names) / sizeof(filter_names[0]))
		return NULL;
	return filter_names[type];
}

bool tfs_filter_is_compression(unsigned type)
{
	switch (type) {
	case TFS_FILTER_GZIP:
	case TFS_FILTER_ZSTD:
	case TFS_FILTER_LZ4:
	case TFS_FILTER_RLE:
	case TFS_FILTER_BZIP2:
	case TFS_FILTER_DOUBLE_DELTA:
	case TFS_FILTER_DICTIONARY:
	case TFS_FILTER_DELTA:
		return true;
	default:
		return false;
	}
}

/* Filter type that TileDB gives a compression filter with this
 * compressor byte; TFS_FILTER_DEPRECATED when invalid. */
static unsigned compressor_filter_type(unsigned compressor)
{
	static const unsigned map[] = {
		[TFS_COMP_NONE] = TFS_FILTER_NONE,
		[TFS_COMP_GZIP] = TFS_FILTER_GZIP,
		[TFS_COMP_ZSTD] = TFS_FILTER_ZSTD,
		[TFS_COMP_LZ4] = TFS_FILTER_LZ4,
		[TFS_COMP_RLE] = TFS_FILTER_RLE,
		[TFS_COMP_BZIP2] = TFS_FILTER_BZIP2,
		[TFS_COMP_DOUBLE_DELTA] = TFS_FILTER_DOUBLE_DELTA,
		[TFS_COMP_DICTIONARY] = TFS_FILTER_DICTIONARY,
		[TFS_COMP_DELTA] = TFS_FILTER_DELTA,
	};

	if (compressor >= sizeof(map) / sizeof(map[0]))
		return TFS_FILTER_DEPRECATED;
	return map[compressor];
}

static uint8_t type_compressor(unsigned type)
{
	switch (type) {
	case TFS_FILTER_GZIP:
		return TFS_COMP_GZIP;
	case TFS_FILTER_ZSTD:
		return TFS_COMP_ZSTD;
	case TFS_FILTER_LZ4:
		return TFS_COMP_LZ4;
	case TFS_FILTER_RLE:
		return TFS_COMP_RLE;
	case TFS_FILTER_BZIP2:
		return TFS_COMP_BZIP2;
	case TFS_FILTER_DOUBLE_DELTA:
		return TFS_COMP_DOUBLE_DELTA;
	case TFS_FILTER_DICTIONARY:
		return TFS_COMP_DICTIONARY;
	case TFS_FILTER_DELTA:
		return TFS_COMP_DELTA;
	default:
		return TFS_COMP_NONE;
	}
}

unsigned tfs__filter_algo(const struct tfs_filter *f)
{
	if (tfs_filter_is_compression(f->type)) {
		static const unsigned by_comp[] = {
			TFS__NONE,  TFS__GZIP,	       TFS__ZSTD,
			TFS__LZ4,   TFS__RLE,	       TFS__BZIP2,
			TFS__DOUBLE_DELTA, TFS__DICTIONARY, TFS__DELTA,
		};
		if (f->compressor >= sizeof(by_comp) / sizeof(by_comp[0]))
			return TFS__INVALID;
		return by_comp[f->compressor];
	}
	switch (f->type) {
	case TFS_FILTER_NONE:
		return TFS__NONE;
	case TFS_FILTER_BIT_WIDTH_REDUCTION:
		return TFS__BIT_WIDTH;
	case TFS_FILTER_BITSHUFFLE:
		return TFS__BITSHUFFLE;
	case TFS_FILTER_BYTESHUFFLE:
		return TFS__BYTESHUFFLE;
	case TFS_FILTER_POSITIVE_DELTA:
		return TFS__POSITIVE_DELTA;
	case TFS_FILTER_AES256GCM:
		return TFS__AES;
	case TFS_FILTER_CHECKSUM_MD5:
		return TFS__MD5;
	case TFS_FILTER_CHECKSUM_SHA256:
		return TFS__SHA256;
	case TFS_FILTER_SCALE_FLOAT:
		return TFS__SCALE_FLOAT;
	case TFS_FILTER_XOR:
		return TFS__XOR;
	case TFS_FILTER_WEBP:
		return TFS__WEBP;
	default:
		return TFS__INVALID;
	}
}

unsigned tfs__filter_reinterpret(const struct tfs_filter *f)
{
	if (!f->has_reinterpret || !tfs_datatype_valid(f->reinterpret))
		return TFS_NO_REINTERPRET;
	return f->reinterpret;
}

static unsigned signed_int_of_size(uint64_t size, unsigned fallback)
{
	switch (size) {
	case 1:
		return TFS_INT8;
	case 2:
		return TFS_INT16;
	case 4:
		return TFS_INT32;
	case 8:
		return TFS_INT64;
	default:
		return fallback;
	}
}

unsigned tfs__filter_out_type(const struct tfs_filter *f, unsigned in_type)
{
	switch (tfs__filter_algo(f)) {
	case TFS__DELTA:
	case TFS__DOUBLE_DELTA: {
		unsigned r = tfs__filter_reinterpret(f);

		return r == TFS_NO_REINTERPRET ? in_type : r;
	}
	case TFS__XOR:
		return signed_int_of_size(tfs_datatype_size(in_type), in_type);
	case TFS__SCALE_FLOAT:
		return signed_int_of_size(f->byte_width, in_type);
	case TFS__AES:
		return TFS_BLOB;
	default:
		return in_type;
	}
}

void tfs_filter_init(struct tfs_filter *f, enum tfs_filter_type type)
{
	memset(f, 0, sizeof(*f));
	f->type = (uint8_t)type;
	f->compressor = type_compressor(type);
	f->level = -1;
	f->reinterpret = TFS_NO_REINTERPRET;
	f->has_reinterpret = true;
	f->max_window = type == TFS_FILTER_POSITIVE_DELTA ? 1024 : 256;
	f->scale = 1.0;
	f->offset = 0.0;
	f->byte_width = 8;
	f->webp_quality = 100.0f;
	f->webp_format = 1;
	f->webp_lossless = 1;
}

void tfs_pipeline_init(struct tfs_pipeline *p)
{
	memset(p, 0, sizeof(*p));
	p->max_chunk_size = TFS__CHUNK_SIZE;
}

enum tfs_err tfs_pipeline_add(struct tfs_pipeline *p,
			      const struct tfs_filter *f)
{
	if (p->count >= TFS_MAX_FILTERS)
		return TFS_E_TOO_BIG;
	p->filters[p->count++] = *f;
	return TFS_E_OK;
}

bool tfs_pipeline_has(const struct tfs_pipeline *p, enum tfs_filter_type type)
{
	for (uint32_t i = 0; i < p->count && i < TFS_MAX_FILTERS; i++) {
		const struct tfs_filter *f = &p->filters[i];

		if (f->type == (unsigned)type)
			return true;
		if (tfs_filter_is_compression(f->type) &&
		    compressor_filter_type(f->compressor) == (unsigned)type)
			return true;
	}
	return false;
}

/* Options of one filter (filters.md §1 table); `type` is already valid. */
static enum tfs_err options_bad_len(const struct tfs_filter *f, uint32_t len,
				    uint32_t index, struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_CORRUPT,
			"filter %" PRIu32 " '%s': %" PRIu32
			" option bytes do not fit the type",
			index, tfs_filter_name(f->type), len);
}

/* Compressor, level and, for (double) delta, a reinterpret type. */
static enum tfs_err parse_compression(struct tfs_filter *f,
				      struct tfs_cursor *c, uint32_t len,
				      uint32_t index, struct tfs_diag *d)
{
	const char *name = tfs_filter_name(f->type);

	if (!tfs_cur_u8(c, &f->compressor) || !tfs_cur_i32(c, &f->level))
		return options_bad_len(f, len, index, d);
	if (compressor_filter_type(f->compressor) == TFS_FILTER_DEPRECATED)
		return tfs_fail(d, TFS_E_CORRUPT,
				"filter %" PRIu32 " '%s': unknown "
				"compressor %u",
				index, name, f->compressor);
	/* A sixth byte is the reinterpret type of (double) delta, whatever
	 * the schema version says (filters.md §1). */
	if ((f->compressor == TFS_COMP_DELTA ||
	     f->compressor == TFS_COMP_DOUBLE_DELTA) &&
	    tfs_cur_left(c) == 1) {
		if (!tfs_cur_u8(c, &f->reinterpret))
			return options_bad_len(f, len, index, d);
		if (!tfs_datatype_valid(f->reinterpret))
			return tfs_fail(d, TFS_E_CORRUPT,
					"filter %" PRIu32 " '%s': bad "
					"reinterpret type %u",
					index, name, f->reinterpret);
		f->has_reinterpret = true;
	}
	return TFS_E_OK;
}

static enum tfs_err parse_scale_float(struct tfs_filter *f,
				      struct tfs_cursor *c, uint32_t len,
				      uint32_t index, struct tfs_diag *d)
{
	if (!tfs_cur_f64(c, &f->scale) || !tfs_cur_f64(c, &f->offset) ||
	    !tfs_cur_u64(c, &f->byte_width))
		return options_bad_len(f, len, index, d);
	if (f->byte_width != 1 && f->byte_width != 2 && f->byte_width != 4 &&
	    f->byte_width != 8)
		return tfs_fail(d, TFS_E_CORRUPT,
				"filter %" PRIu32 " '%s': bad "
				"byte width %" PRIu64,
				index, tfs_filter_name(f->type), f->byte_width);
	return TFS_E_OK;
}

static enum tfs_err parse_webp(struct tfs_filter *f, struct tfs_cursor *c,
			       uint32_t len, uint32_t index,
			       struct tfs_diag *d)
{
	const uint8_t *b;
	uint32_t q;

	if (!tfs_cur_take(c, 12, &b))
		return options_bad_len(f, len, index, d);
	q = tfs_get_u32(b);
	memcpy(&f->webp_quality, &q, sizeof(q));
	f->webp_format = b[4];
	f->webp_lossless = b[5];
	f->webp_y_extent = tfs_get_u16(b + 6);
	f->webp_x_extent = tfs_get_u16(b + 8);
	if (f->webp_format > 4 || f->webp_lossless > 1)
		return tfs_fail(d, TFS_E_CORRUPT,
				"filter %" PRIu32 " 'WEBP': bad "
				"format %u or lossless flag %u",
				index, f->webp_format, f->webp_lossless);
	return TFS_E_OK;
}

static enum tfs_err parse_options(struct tfs_filter *f, const uint8_t *opts,
				  uint32_t len, struct tfs_diag *d,
				  uint32_t index)
{
	struct tfs_cursor c;
	enum tfs_err e = TFS_E_OK;

	tfs_cur_init(&c, opts, len);
	if (tfs_filter_is_compression(f->type)) {
		e = parse_compression(f, &c, len, index, d);
	} else {
		switch (f->type) {
		case TFS_FILTER_BIT_WIDTH_REDUCTION:
		case TFS_FILTER_POSITIVE_DELTA:
			if (!tfs_cur_u32(&c, &f->max_window))
				return options_bad_len(f, len, index, d);
			break;
		case TFS_FILTER_SCALE_FLOAT:
			e = parse_scale_float(f, &c, len, index, d);
			break;
		case TFS_FILTER_WEBP:
			e = parse_webp(f, &c, len, index, d);
			break;
		default:
			break; /* no options */
		}
	}
	if (e)
		return e;
	if (tfs_cur_left(&c) != 0)
		return options_bad_len(f, len, index, d);
	return TFS_E_OK;
}

enum tfs_err tfs_pipeline_parse(struct tfs_pipeline *out, struct tfs_cursor *c,
				uint32_t schema_version, struct tfs_diag *d)
{
	struct tfs_cursor start = *c;
	enum tfs_err e;

	/* Option layouts are decided by their length (a sixth delta byte is
	 * read whatever the version), so the version is not needed here. */
	(void)schema_version;
	tfs_pipeline_init(out);
	if (!tfs_cur_u32(c, &out->max_chunk_size) ||
	    !tfs_cur_u32(c, &out->count)) {
		e = tfs_fail(d, TFS_E_CORRUPT, "filter list truncated");
		goto out_restore;
	}
	if (out->count > TFS_MAX_FILTERS) {
		e = tfs_fail(d, TFS_E_UNSUPPORTED,
			     "filter list of %" PRIu32 " filters (max %d)",
			     out->count, TFS_MAX_FILTERS);
		goto out_restore;
	}
	for (uint32_t i = 0; i < out->count; i++) {
		struct tfs_filter *f = &out->filters[i];
		uint8_t type;
		uint32_t len;
		const uint8_t *opts;

		if (!tfs_cur_u8(c, &type) || !tfs_cur_u32(c, &len) ||
		    !tfs_cur_take(c, len, &opts)) {
			e = tfs_fail(d, TFS_E_CORRUPT,
				     "filter %" PRIu32 " truncated", i);
			goto out_restore;
		}
		if (!tfs_filter_name(type)) {
			e = tfs_fail(d, TFS_E_CORRUPT,
				     "filter %" PRIu32 ": invalid type %u", i,
				     type);
			goto out_restore;
		}
		tfs_filter_init(f, type);
		f->has_reinterpret = false;
		e = parse_options(f, opts, len, d, i);
		if (e)
			goto out_restore;
	}
	return TFS_E_OK;

out_restore:
	*c = start;
	out->count = 0;
	return e;
}

enum tfs_err tfs_pipeline_serialize(struct tfs_buf *out,
				    const struct tfs_pipeline *p,
				    uint32_t schema_version)
{
	enum tfs_err e;

	if (p->count > TFS_MAX_FILTERS)
		return TFS_E_INVALID;
	e = tfs_buf_append_u32(out, p->max_chunk_size);
	if (!e)
		e = tfs_buf_append_u32(out, p->count);
	for (uint32_t i = 0; !e && i < p->count; i++) {
		const struct tfs_filter *f = &p->filters[i];
		uint8_t opts[24];
		uint32_t n = 0;

		if (!tfs_filter_name(f->type))
			return TFS_E_INVALID;
		if (tfs_filter_is_compression(f->type)) {
			opts[0] = f->compressor;
			tfs_put_u32(opts + 1, (uint32_t)f->level);
			n = 5;
			if ((f->compressor == TFS_COMP_DELTA &&
			     schema_version >= 19) ||
			    (f->compressor == TFS_COMP_DOUBLE_DELTA &&
			     schema_version >= 20))
				opts[n++] = f->has_reinterpret
						    ? f->reinterpret
						    : TFS_NO_REINTERPRET;
		} else {
			switch (f->type) {
			case TFS_FILTER_BIT_WIDTH_REDUCTION:
			case TFS_FILTER_POSITIVE_DELTA:
				tfs_put_u32(opts, f->max_window);
				n = 4;
				break;
			case TFS_FILTER_SCALE_FLOAT: {
				uint64_t bits;

				memcpy(&bits, &f->scale, 8);
				tfs_put_u64(opts, bits);
				memcpy(&bits, &f->offset, 8);
				tfs_put_u64(opts + 8, bits);
				tfs_put_u64(opts + 16, f->byte_width);
				n = 24;
				break;
			}
			case TFS_FILTER_WEBP: {
				uint32_t q;

				memcpy(&q, &f->webp_quality, 4);
				tfs_put_u32(opts, q);
				opts[4] = f->webp_format;
				opts[5] = f->webp_lossless;
				tfs_put_u16(opts + 6, f->webp_y_extent);
				tfs_put_u16(opts + 8, f->webp_x_extent);
				opts[10] = 0;
				opts[11] = 0;
				n = 12;
				break;
			}
			default:
				break;
			}
		}
		e = tfs_buf_append_u8(out, f->type);
		if (!e)
			e = tfs_buf_append_u32(out, n);
		if (!e)
			e = tfs_buf_append(out, opts, n);
	}
	return e;
}

/* Numbers as the corpus JSON writes them: integral values as plain digits
 * ("3", "-0"), others with the fewest digits that read back exactly. */
static void format_number(char *buf, size_t cap, double v)
{
	if (isnan(v)) {
		snprintf(buf, cap, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, cap, v < 0 ? "-Infinity" : "Infinity");
		return;
	}
	tfs_fmt_f64(buf, cap, v, 1e15);
}

static const char *webp_format_name(unsigned format)
{
	static const char *const names[] = {"NONE", "RGB", "BGR", "RGBA",
					    "BGRA"};

	return format < 5 ? names[format] : "INVALID";
}

enum tfs_err tfs_filter_describe(struct tfs_buf *out,
				 const struct tfs_filter *f)
{
	char a[40], b[40];
	unsigned algo = tfs__filter_algo(f);
	const char *name;

	if (algo == TFS__INVALID)
		return TFS_E_INVALID;
	name = tfs_filter_name(tfs_filter_is_compression(f->type)
				       ? compressor_filter_type(f->compressor)
				       : f->type);
	switch (algo) {
	case TFS__GZIP:
	case TFS__ZSTD:
	case TFS__LZ4:
	case TFS__RLE:
	case TFS__BZIP2:
	case TFS__DICTIONARY:
		return tfs_buf_printf(out, "%s(level=%" PRId32 ")", name,
				      f->level);
	case TFS__DELTA:
	case TFS__DOUBLE_DELTA:
		return tfs_buf_printf(out, "%s(level=%" PRId32 ",reinterpret=%s)",
				      name, f->level,
				      tfs_datatype_name(
					      tfs__filter_reinterpret(f)));
	case TFS__BIT_WIDTH:
	case TFS__POSITIVE_DELTA:
		return tfs_buf_printf(out, "%s(max_window=%" PRIu32 ")", name,
				      f->max_window);
	case TFS__SCALE_FLOAT:
		format_number(a, sizeof(a), f->scale);
		format_number(b, sizeof(b), f->offset);
		return tfs_buf_printf(out,
				      "SCALE_FLOAT(bytewidth=%" PRIu64
				      ",factor=%s,offset=%s)",
				      f->byte_width, a, b);
	case TFS__WEBP:
		format_number(a, sizeof(a), (double)f->webp_quality);
		return tfs_buf_printf(out, "WEBP(quality=%s,format=%s,lossless=%u)",
				      a, webp_format_name(f->webp_format),
				      (unsigned)f->webp_lossless);
	default:
		return tfs_buf_printf(out, "%s", name);
	}
}
