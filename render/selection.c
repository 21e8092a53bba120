/* The selection grammar (SPEC §3), see selection.h. */
#include "selection.h"
#include "tfs_render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_json.h"
#include "json_out.h"
#include "value_text.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"

/* Longest value text we parse; longer is not a coordinate. */
#define MAX_VALUE_TEXT 4096

/* One ':'-separated part of a range, decoded (quotes removed). */
struct part {
	bool present;
	bool quoted;
	size_t len;
	char text[MAX_VALUE_TEXT + 1]; /* last: the rest is cleared alone */
};

static void part_clear(struct part *pt)
{
	memset(pt, 0, offsetof(struct part, text));
	pt->text[0] = '\0';
}

void tfsr_sel_free(struct tfsr_sel *sel)
{
	if (!sel)
		return;
	for (uint32_t k = 0; k < sel->dim_num; k++) {
		tfs_free(sel->dims[k].lo_str);
		tfs_free(sel->dims[k].hi_str);
	}
	tfs_free(sel);
}

/* Scans one part starting at *p (up to end): a quoted string or bare text
 * up to ':' or ','. */
static enum tfs_err scan_part(const char **p, const char *end, struct part *out,
			      uint32_t k, struct tfs_diag *d)
{
	const char *s = *p;

	part_clear(out);
	if (s < end && *s == '"') {
		out->quoted = true;
		out->present = true;
		for (s++; s < end && *s != '"'; s++) {
			if (*s == '\\' && s + 1 < end)
				s++;
			if (out->len == MAX_VALUE_TEXT)
				return tfs_fail(d, TFS_E_INVALID,
						"range %u: value too long", k + 1);
			out->text[out->len++] = *s;
		}
		if (s == end)
			return tfs_fail(d, TFS_E_INVALID,
					"range %u: unterminated quote", k + 1);
		s++;
		out->text[out->len] = '\0';
		if (s < end && *s != ':' && *s != ',')
			return tfs_fail(d, TFS_E_INVALID,
					"range %u: text after a quoted value",
					k + 1);
		*p = s;
		return TFS_E_OK;
	}
	for (; s < end && *s != ':' && *s != ','; s++) {
		if (*s == '"' || *s == '\0')
			return tfs_fail(d, TFS_E_INVALID,
					"range %u: stray '%c'", k + 1,
					*s ? *s : '0');
		if (out->len == MAX_VALUE_TEXT)
			return tfs_fail(d, TFS_E_INVALID,
					"range %u: value too long", k + 1);
		out->text[out->len++] = *s;
	}
	out->text[out->len] = '\0';
	out->present = out->len > 0;
	*p = s;
	return TFS_E_OK;
}

/* Units per millisecond of DATETIME_DAY..DATETIME_AS, as a multiplier
 * (mul) or divisor (div). */
static bool ms_to_unit(uint8_t type, uint64_t ms, int64_t *out)
{
	static const struct {
		uint64_t div, mul;
	} unit[] = {
		{86400000, 1}, {3600000, 1}, {60000, 1}, {1000, 1},
		{1, 1}, {1, 1000}, {1, 1000000}, {1, 1000000000},
		{1, 1000000000000}, {1, 1000000000000000},
	};
	uint64_t v;

	if (type < TFS_DATETIME_YEAR + 3 || type > TFS_DATETIME_AS)
		return false;
	v = ms / unit[type - TFS_DATETIME_YEAR - 3].div;
	if (__builtin_mul_overflow(v, unit[type - TFS_DATETIME_YEAR - 3].mul,
				   &v) ||
	    v > INT64_MAX)
		return false;
	*out = (int64_t)v;
	return true;
}

/* Parses a value of fixed-size dimension k into dst: a number, or the
 * text of a date/time, exact in the dimension's unit, else (a day's
 * dimension given a time of day) cut to it through milliseconds. */
static enum tfs_err parse_value(const struct tfs_field_info *dim, uint32_t k,
				const struct part *pt, uint8_t dst[8],
				struct tfs_diag *d)
{
	uint64_t ms;
	int64_t v;

	if (!pt->quoted && cell_json_parse_value(dim->type, pt->text, dst))
		return TFS_E_OK;
	if (tfs_datatype_is_datetime(dim->type) &&
	    tfs_value_from_text(dim->type, pt->text, strlen(pt->text), dst,
				NULL) == TFS_E_OK)
		return TFS_E_OK;
	if (tfs_datatype_is_datetime(dim->type) &&
	    tfsr_parse_time(pt->text, &ms) == TFS_E_OK &&
	    ms_to_unit(dim->type, ms, &v)) {
		tfs_put_uint(dst, 8, (uint64_t)v);
		return TFS_E_OK;
	}
	return tfs_fail(d, TFS_E_INVALID,
			"range %u: '%s' is not a value of '%s' (%s)", k + 1,
			pt->text, dim->name, tfs_datatype_name(dim->type));
}

static bool is_float(uint8_t type)
{
	return tfs_datatype_class(type) == TFS_CLASS_FLOAT;
}

/* The value just below v (floats: the next float toward -inf; integers
 * v - 1, which the caller knows not to wrap). */
static void step_down(uint8_t type, uint8_t v[8])
{
	size_t w = tfs_datatype_size(type);

	if (type == TFS_FLOAT32) {
		float f;

		memcpy(&f, v, sizeof(f));
		f = nextafterf(f, -INFINITY);
		memcpy(v, &f, sizeof(f));
	} else if (type == TFS_FLOAT64) {
		double x;

		memcpy(&x, v, sizeof(x));
		x = nextafter(x, -INFINITY);
		memcpy(v, &x, sizeof(x));
	} else {
		tfs_put_uint(v, w, tfs_get_uint(v, w) - 1);
	}
}

static enum tfs_err dup_bytes(uint8_t **dst, const void *src, size_t len,
			      struct tfs_diag *d)
{
	*dst = tfs_malloc(len ? len : 1);
	if (!*dst)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if (len)
		memcpy(*dst, src, len);
	return TFS_E_OK;
}

/* One end of a string range: the given text, or the non-empty domain's
 * bound when the part is missing, copied into *str. */
static enum tfs_err string_end(uint8_t **str, const uint8_t **end,
			       uint64_t *end_len, const struct part *pt,
			       const uint8_t *bound, uint64_t bound_len,
			       struct tfs_diag *d)
{
	enum tfs_err e = pt->present ? dup_bytes(str, pt->text, pt->len, d)
				     : dup_bytes(str, bound, bound_len, d);

	if (e)
		return e;
	*end = *str;
	*end_len = pt->present ? pt->len : bound_len;
	return TFS_E_OK;
}

/* A string (var-size) dimension's range. */
static enum tfs_err string_range(struct tfsr_sel *sel, uint32_t k,
				 const struct part *pt, int parts,
				 const struct tfs_range *ned,
				 struct tfs_diag *d)
{
	struct tfsr_dim_sel *ds = &sel->dims[k];
	enum tfs_err e;
	int c;

	if (parts > 2)
		return tfs_fail(d, TFS_E_INVALID,
				"range %u: strides are for integer dimensions",
				k + 1);
	if (!pt[0].present && !ned) {
		sel->empty = true;
		return TFS_E_OK;
	}
	e = string_end(&ds->lo_str, &ds->range.lo, &ds->range.lo_len, &pt[0],
		       ned ? ned[k].lo : NULL, ned ? ned[k].lo_len : 0, d);
	if (e)
		return e;
	if (parts == 1) {
		ds->range.hi = ds->lo_str;
		ds->range.hi_len = ds->range.lo_len;
		return TFS_E_OK;
	}
	if (!pt[1].present && !ned) {
		sel->empty = true;
		return TFS_E_OK;
	}
	e = string_end(&ds->hi_str, &ds->range.hi, &ds->range.hi_len, &pt[1],
		       ned ? ned[k].hi : NULL, ned ? ned[k].hi_len : 0, d);
	if (e)
		return e;
	ds->hi_exclusive = pt[1].present;
	c = tfs_bytes_cmp(ds->range.lo, ds->range.lo_len, ds->range.hi,
			  ds->range.hi_len);
	if (c > 0 && pt[0].present && pt[1].present)
		return tfs_fail(d, TFS_E_INVALID, "range %u: lo > hi", k + 1);
	if (c > 0 || (c == 0 && ds->hi_exclusive))
		sel->empty = true;
	return TFS_E_OK;
}

/* "range K: outside the domain of 'name' [lo, hi]". */
static enum tfs_err domain_fail(const struct tfs_field_info *dim, uint32_t k,
				struct tfs_diag *d)
{
	char lo[64], hi[64];
	struct tfs_buf b;
	struct json_out j;

	tfs_buf_init(&b, 256);
	json_out_init(&j, &b);
	cell_json_value(&j, dim->type, dim->domain_lo);
	snprintf(lo, sizeof(lo), "%.*s", (int)b.len, (char *)b.data);
	b.len = 0;
	json_out_init(&j, &b);
	cell_json_value(&j, dim->type, dim->domain_hi);
	snprintf(hi, sizeof(hi), "%.*s", (int)b.len, (char *)b.data);
	tfs_buf_release(&b);
	return tfs_fail(d, TFS_E_INVALID,
			"range %u: outside the domain of '%s' [%s, %s]", k + 1,
			dim->name, lo, hi);
}

/* v lies outside the dimension's domain (when it has one). */
static bool outside_domain(const struct tfs_field_info *dim, const void *v)
{
	return dim->has_domain &&
	       (tfs_value_cmp(dim->type, v, dim->domain_lo) < 0 ||
		tfs_value_cmp(dim->type, v, dim->domain_hi) > 0);
}

/* The step of lo:hi:step, a positive integer below 2^64, on a dense
 * array's integer dimension. */
static enum tfs_err parse_stride(struct tfsr_dim_sel *ds, uint32_t k,
				 const struct tfs_schema *s,
				 const struct tfs_field_info *dim,
				 const struct part *step, struct tfs_diag *d)
{
	char *end;

	if (!tfs_schema_is_dense(s) || is_float(dim->type))
		return tfs_fail(d, TFS_E_INVALID,
				"range %u: strides are for dense arrays",
				k + 1);
	errno = 0;
	if (!step->present || step->quoted || step->text[0] == '-' ||
	    (ds->stride = strtoull(step->text, &end, 10)) == 0 || *end)
		return tfs_fail(d, TFS_E_INVALID,
				"range %u: the step must be a positive "
				"integer",
				k + 1);
	if (errno == ERANGE)
		return tfs_fail(d, TFS_E_INVALID,
				"range %u: the step must be below 2^64",
				k + 1);
	return TFS_E_OK;
}

/* The range's start: given, or the non-empty domain's. *none when there
 * is neither: the selection is empty. */
static enum tfs_err fixed_lo(struct tfsr_dim_sel *ds, uint32_t k,
			     const struct tfs_field_info *dim,
			     const struct part *lo, const struct tfs_range *ned,
			     size_t w, bool *none, struct tfs_diag *d)
{
	enum tfs_err e;

	*none = false;
	if (lo->present) {
		if ((e = parse_value(dim, k, lo, ds->lo_val, d)))
			return e;
		/* Checked before any range is found empty: a selection
		 * wholly outside the domain names nothing (ENOENT), it is
		 * not an empty file. */
		if (outside_domain(dim, ds->lo_val))
			return domain_fail(dim, k, d);
	} else if (ned) {
		memcpy(ds->lo_val, ned[k].lo, w);
	} else {
		*none = true;
	}
	return TFS_E_OK;
}

/* The range's end: the start for a single value, the given end
 * (excluded, so one step down), or the non-empty domain's. *none when
 * the range holds nothing. */
static enum tfs_err fixed_hi(struct tfsr_dim_sel *ds, uint32_t k,
			     const struct tfs_field_info *dim,
			     const struct part *pt, int parts, bool lo_given,
			     const struct tfs_range *ned, size_t w, bool *none,
			     struct tfs_diag *d)
{
	enum tfs_err e;
	int c;

	*none = false;
	if (parts == 1) {
		memcpy(ds->hi_val, ds->lo_val, w);
	} else if (pt[1].present) {
		if ((e = parse_value(dim, k, &pt[1], ds->hi_val, d)))
			return e;
		/* The end is excluded: at the domain's start it is an empty
		 * range at its edge, below it a range outside. */
		if (dim->has_domain &&
		    tfs_value_cmp(dim->type, ds->hi_val, dim->domain_lo) < 0)
			return domain_fail(dim, k, d);
		c = tfs_value_cmp(dim->type, ds->lo_val, ds->hi_val);
		if (c > 0 && lo_given)
			return tfs_fail(d, TFS_E_INVALID,
					"range %u: lo > hi", k + 1);
		if (c >= 0) {
			*none = true;
			return TFS_E_OK;
		}
		step_down(dim->type, ds->hi_val);
	} else if (ned) {
		memcpy(ds->hi_val, ned[k].hi, w);
	} else {
		*none = true;
	}
	return TFS_E_OK;
}

/* Integer dimensions: how many coordinates lo..hi by the step holds. */
static enum tfs_err fixed_count(struct tfsr_dim_sel *ds, uint32_t k,
				const struct tfs_field_info *dim, size_t w,
				struct tfs_diag *d)
{
	if (is_float(dim->type))
		return TFS_E_OK;
	uint64_t span = tfs_get_uint(ds->hi_val, w) - tfs_get_uint(ds->lo_val, w);

	if (w < 8)
		span &= (UINT64_C(1) << (8 * w)) - 1;
	ds->count = span / ds->stride + 1;
	if (span == UINT64_MAX && ds->stride == 1)
		return tfs_fail(d, TFS_E_INVALID,
				"range %u: more than 2^64 cells",
				k + 1);
	return TFS_E_OK;
}

/* A fixed-size (integer, datetime or float) dimension's range. */
static enum tfs_err fixed_range(struct tfsr_sel *sel, uint32_t k,
				const struct tfs_schema *s,
				const struct part *pt, int parts,
				const struct tfs_range *ned, struct tfs_diag *d)
{
	struct tfs_field_info info;
	const struct tfs_field_info *dim = &info;
	struct tfsr_dim_sel *ds = &sel->dims[k];
	size_t w;
	bool lo_given = pt[0].present, hi_given = parts > 1 && pt[1].present;
	bool none;
	enum tfs_err e;

	tfs_schema_dim(s, k, &info);
	w = tfs_datatype_size(dim->type);

	ds->range = (struct tfs_range){ds->lo_val, ds->hi_val, w, w};
	if (parts == 3 && (e = parse_stride(ds, k, s, dim, &pt[2], d)))
		return e;
	if ((e = fixed_lo(ds, k, dim, &pt[0], ned, w, &none, d)))
		return e;
	if (!none && (e = fixed_hi(ds, k, dim, pt, parts, lo_given, ned, w,
				   &none, d)))
		return e;
	if (none) {
		sel->empty = true;
		return TFS_E_OK;
	}
	if (parts == 1)
		hi_given = true;
	if ((lo_given && outside_domain(dim, ds->lo_val)) ||
	    (hi_given && outside_domain(dim, ds->hi_val)))
		return domain_fail(dim, k, d);
	if (tfs_value_cmp(dim->type, ds->lo_val, ds->hi_val) > 0) {
		sel->empty = true; /* "lo:" past the non-empty domain */
		return TFS_E_OK;
	}
	return fixed_count(ds, k, dim, w, d);
}

/* The parts of range k at *p, up to ',' or the end: lo[:hi[:step]],
 * a missing trailing range being ':'. */
static enum tfs_err scan_range_parts(const char **pp, const char *end,
				     struct part *pt, uint32_t k, int *parts_out,
				     struct tfs_diag *d)
{
	const char *p = *pp;
	int parts = 0;
	bool at_end = p >= end;
	enum tfs_err e = TFS_E_OK;

	while (!at_end && !e) {
		if (parts == 3)
			return tfs_fail(d, TFS_E_INVALID,
					"range %u: more than lo:hi:step",
					k + 1);
		e = scan_part(&p, end, &pt[parts++], k, d);
		if (e || p >= end || *p == ',')
			break;
		p++; /* ':' */
		if (p >= end || *p == ',') {
			/* "lo:hi:step:" has an empty fourth part:
			 * there are only three to hold it. */
			if (parts == 3)
				return tfs_fail(d, TFS_E_INVALID,
						"range %u: more than "
						"lo:hi:step",
						k + 1);
			part_clear(&pt[parts++]);
			break;
		}
	}
	if (e)
		return e;
	if (at_end) {
		part_clear(&pt[0]);
		part_clear(&pt[1]);
		parts = 2;
	}
	if (parts == 1 && !pt[0].present)
		return tfs_fail(d, TFS_E_INVALID, "range %u is empty", k + 1);
	*pp = p;
	*parts_out = parts;
	return TFS_E_OK;
}

/* Every dimension's range from text[0..end), then nothing more. */
static enum tfs_err parse_ranges(struct tfsr_sel *sel, struct part *pt,
				 const char *p, const char *end,
				 const struct tfs_schema *s,
				 const struct tfs_range *ned, struct tfs_diag *d)
{
	enum tfs_err e;

	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		struct tfs_field_info info;
		int parts = 0;

		if ((e = scan_range_parts(&p, end, pt, k, &parts, d)))
			return e;
		tfs_schema_dim(s, k, &info);
		e = info.var
			    ? string_range(sel, k, pt, parts, ned, d)
			    : fixed_range(sel, k, s, pt, parts, ned, d);
		if (e)
			return e;
		if (p < end) {
			p++; /* ',' */
			if (p >= end)
				return tfs_fail(d, TFS_E_INVALID,
						"trailing ',' after range %u",
						k + 1);
		}
	}
	if (p < end)
		return tfs_fail(d, TFS_E_INVALID,
				"more ranges than the %u dimension%s", tfs_schema_dim_count(s),
				tfs_schema_dim_count(s) == 1 ? "" : "s");
	return TFS_E_OK;
}

enum tfs_err tfsr_sel_parse(const char *text, size_t len,
			    const struct tfs_schema *s,
			    const struct tfs_range *ned, struct tfsr_sel **out,
			    struct tfs_diag *d)
{
	static const char order_word[] = ";stored";
	const size_t word_len = sizeof(order_word) - 1;
	const char *end = text + len;
	struct tfsr_sel *sel;
	struct part *pt;
	bool stored = false;
	enum tfs_err e;

	*out = NULL;
	if (len >= word_len &&
	    memcmp(text + len - word_len, order_word, word_len) == 0) {
		if (tfs_schema_is_dense(s))
			return tfs_fail(d, TFS_E_INVALID,
					"';stored' is for sparse arrays: a "
					"dense selection has one order");
		stored = true;
		end -= word_len;
	}
	sel = tfs_callocn(1, sizeof(*sel) + tfs_schema_dim_count(s) * sizeof(sel->dims[0]));
	pt = tfs_callocn(3, sizeof(*pt));
	if (!sel || !pt) {
		tfs_free(sel);
		tfs_free(pt);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	sel->dim_num = tfs_schema_dim_count(s);
	sel->stored = stored;
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++)
		sel->dims[k].stride = 1;
	e = parse_ranges(sel, pt, text, end, s, ned, d);
	tfs_free(pt);
	if (e) {
		tfsr_sel_free(sel);
		return e;
	}
	if (sel->empty)
		for (uint32_t k = 0; k < sel->dim_num; k++)
			sel->dims[k].count = 0;
	*out = sel;
	return TFS_E_OK;
}

/* A datetime value v of type as the selection's ISO-8601 text, quoted
 * when it holds ':', into out; false when that text would not read back
 * as v (types of a month or more, times before 1970, a unit finer than
 * the millisecond off a whole one): the caller writes the number. */
static bool iso_value(uint8_t type, int64_t v, char *out, size_t cap)
{
	char text[48];
	int64_t back;

	if (!tfs_datatype_is_datetime(type) || type < TFS_DATETIME_YEAR + 3 ||
	    type > TFS_DATETIME_AS || v < 0)
		return false;
	tfsr_datetime_text(text, sizeof(text), type, v);
	if (tfs_value_from_text(type, text, strlen(text), &back, NULL) ||
	    back != v)
		return false;
	return snprintf(out, cap, strchr(text, ':') ? "\"%s\"" : "%s", text) <
	       (int)cap;
}

enum tfs_err tfsr_sel_format_ned(struct tfs_buf *out,
				 const struct tfs_schema *s,
				 const struct tfs_range *ned)
{
	enum tfs_err e = TFS_E_OK;

	for (uint32_t k = 0; !e && k < tfs_schema_dim_count(s); k++) {
		struct tfs_field_info info;
		const struct tfs_field_info *dim = &info;
		char lo[40], hi[40];

		tfs_schema_dim(s, k, &info);

		if (k)
			e = tfs_buf_append_u8(out, ',');
		if (e)
			break;
		if (dim->var) {
			e = tfs_buf_append_u8(out, ':');
			continue;
		}
		switch (tfs_datatype_class(dim->type)) {
		case TFS_CLASS_SIGNED: {
			int64_t l = tfs_value_as_i64(dim->type, ned[k].lo);
			int64_t h = tfs_value_as_i64(dim->type, ned[k].hi);

			if (h < INT64_MAX && iso_value(dim->type, l, lo,
						       sizeof(lo)) &&
			    iso_value(dim->type, h + 1, hi, sizeof(hi)))
				e = tfs_buf_printf(out, "%s:%s", lo, hi);
			else if (h == INT64_MAX)
				e = tfs_buf_printf(out, "%" PRId64 ":", l);
			else
				e = tfs_buf_printf(out, "%" PRId64 ":%" PRId64,
						   l, h + 1);
			break;
		}
		case TFS_CLASS_UNSIGNED: {
			uint64_t l = tfs_value_as_u64(dim->type, ned[k].lo);
			uint64_t h = tfs_value_as_u64(dim->type, ned[k].hi);

			if (h == UINT64_MAX)
				e = tfs_buf_printf(out, "%" PRIu64 ":", l);
			else
				e = tfs_buf_printf(out, "%" PRIu64 ":%" PRIu64,
						   l, h + 1);
			break;
		}
		case TFS_CLASS_FLOAT:
			if (dim->type == TFS_FLOAT32) {
				float l, h;

				memcpy(&l, ned[k].lo, 4);
				memcpy(&h, ned[k].hi, 4);
				json_fmt_f32(lo, sizeof(lo), l);
				json_fmt_f32(hi, sizeof(hi),
					     nextafterf(h, INFINITY));
			} else {
				double l, h;

				memcpy(&l, ned[k].lo, 8);
				memcpy(&h, ned[k].hi, 8);
				json_fmt_f64(lo, sizeof(lo), l);
				json_fmt_f64(hi, sizeof(hi),
					     nextafter(h, INFINITY));
			}
			e = tfs_buf_printf(out, "%s:%s", lo,
					   strcmp(hi, "inf") ? hi : "");
			break;
		default:
			e = tfs_buf_append_u8(out, ':');
			break;
		}
	}
	return e;
}
