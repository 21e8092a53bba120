/* Cell values as text, see value_text.h. */
#include "value_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_out.h"
#include "tfs_civil.h"
#include "tfs_render.h"

/* Units per second of the sub-second datetime and time types, by the
 * number of fraction digits. */
static const struct {
	uint8_t datetime, time;
	unsigned digits;
	int64_t per_sec;
} fractions[] = {
	{TFS_DATETIME_YEAR + 7, TFS_TIME_HR + 3, 3, INT64_C(1000)},
	{TFS_DATETIME_YEAR + 8, TFS_TIME_HR + 4, 6, INT64_C(1000000)},
	{TFS_DATETIME_YEAR + 9, TFS_TIME_HR + 5, 9, INT64_C(1000000000)},
	{TFS_DATETIME_YEAR + 10, TFS_TIME_HR + 6, 12, INT64_C(1000000000000)},
	{TFS_DATETIME_YEAR + 11, TFS_TIME_HR + 7, 15,
	 INT64_C(1000000000000000)},
	{TFS_DATETIME_YEAR + 12, TFS_TIME_HR + 8, 18,
	 INT64_C(1000000000000000000)},
};

/* Floor division and the matching non-negative remainder. */
static int64_t floor_div(int64_t a, int64_t b, int64_t *rem)
{
	int64_t q = a / b, r = a % b;

	if (r < 0) {
		r += b;
		q--;
	}
	*rem = r;
	return q;
}

/* Splits v of a unit with per_sec units per second into seconds and the
 * fraction; per_sec = 0 for units of whole seconds or more. */
static void datetime_parts(uint8_t type, int64_t v, int64_t *secs,
			   int64_t *frac, unsigned *digits)
{
	*frac = 0;
	*digits = 0;
	for (size_t i = 0; i < sizeof(fractions) / sizeof(fractions[0]); i++) {
		if (type == fractions[i].datetime || type == fractions[i].time) {
			*secs = floor_div(v, fractions[i].per_sec, frac);
			*digits = fractions[i].digits;
			return;
		}
	}
	*secs = v;
}

/* A time of day (or a duration past it): [-]HH[:MM[:SS[.f]]]. */
static void time_text(char *out, size_t cap, uint8_t type, int64_t v)
{
	const char *sign = v < 0 ? "-" : "";
	uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;
	int64_t secs, frac;
	unsigned digits;
	char fr[24] = "";

	if (type == TFS_TIME_HR) {
		snprintf(out, cap, "%s%02" PRIu64, sign, mag);
		return;
	}
	if (type == TFS_TIME_HR + 1) {
		snprintf(out, cap, "%s%02" PRIu64 ":%02" PRIu64, sign,
			 mag / 60, mag % 60);
		return;
	}
	datetime_parts(type, 0, &secs, &frac, &digits);
	if (digits) {
		uint64_t per = 1;

		for (unsigned i = 0; i < digits; i++)
			per *= 10;
		snprintf(fr, sizeof(fr), ".%0*" PRIu64, (int)digits, mag % per);
		mag /= per;
	}
	snprintf(out, cap, "%s%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 "%s",
		 sign, mag / 3600, mag / 60 % 60, mag % 60, fr);
}

/* The dates of units of a day or longer, and hours and minutes, each to
 * its unit; false for the units of seconds and finer. */
static bool coarse_datetime_text(char *out, size_t cap, uint8_t type, int64_t v)
{
	int64_t y, rem, days;
	unsigned m, d;

	switch (type) {
	case TFS_DATETIME_YEAR:
		if (__builtin_add_overflow(v, 1970, &y))
			snprintf(out, cap, "%" PRId64, v);
		else
			snprintf(out, cap, "%04" PRId64, y);
		return true;
	case TFS_DATETIME_YEAR + 1: /* MONTH */
		y = floor_div(v, 12, &rem);
		snprintf(out, cap, "%04" PRId64 "-%02u", 1970 + y,
			 (unsigned)rem + 1);
		return true;
	case TFS_DATETIME_YEAR + 2: /* WEEK */
	case TFS_DATETIME_YEAR + 3: /* DAY */
		if (__builtin_mul_overflow(v, type == TFS_DATETIME_YEAR + 2 ? 7 : 1,
					   &days)) {
			snprintf(out, cap, "%" PRId64, v);
			return true;
		}
		tfs_civil_from_days(days, &y, &m, &d);
		snprintf(out, cap, "%04" PRId64 "-%02u-%02u", y, m, d);
		return true;
	case TFS_DATETIME_YEAR + 4: /* HR */
		days = floor_div(v, 24, &rem);
		tfs_civil_from_days(days, &y, &m, &d);
		snprintf(out, cap, "%04" PRId64 "-%02u-%02uT%02uZ", y, m, d,
			 (unsigned)rem);
		return true;
	case TFS_DATETIME_YEAR + 5: /* MIN */
		days = floor_div(v, 1440, &rem);
		tfs_civil_from_days(days, &y, &m, &d);
		snprintf(out, cap, "%04" PRId64 "-%02u-%02uT%02u:%02uZ", y, m, d,
			 (unsigned)(rem / 60), (unsigned)(rem % 60));
		return true;
	default:
		return false;
	}
}

void tfsr_datetime_text(char *out, size_t cap, uint8_t type, int64_t v)
{
	int64_t y, rem, secs, frac, days;
	unsigned m, d, digits;
	char fr[24] = "";

	if (type >= TFS_TIME_HR && type <= TFS_TIME_AS) {
		time_text(out, cap, type, v);
		return;
	}
	if (coarse_datetime_text(out, cap, type, v))
		return;
	datetime_parts(type, v, &secs, &frac, &digits);
	if (digits)
		snprintf(fr, sizeof(fr), ".%0*" PRId64, (int)digits, frac);
	days = floor_div(secs, 86400, &rem);
	tfs_civil_from_days(days, &y, &m, &d);
	snprintf(out, cap, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u%sZ", y, m, d,
		 (unsigned)(rem / 3600), (unsigned)(rem / 60 % 60),
		 (unsigned)(rem % 60), fr);
}

/* Appends bytes as text of a style: .txt escapes newlines and
 * backslashes; .csv quotes a field holding a comma, quote, CR or LF (and
 * an empty string, so that it differs from null); .json as a string. */
static enum tfs_err put_string(struct tfs_buf *out, const uint8_t *p,
			       uint64_t len, enum tfsr_text_style style)
{
	enum tfs_err e = TFS_E_OK;

	switch (style) {
	case TFSR_TEXT_TXT:
		for (uint64_t i = 0; !e && i < len; i++) {
			if (p[i] == '\n')
				e = tfs_buf_append(out, "\\n", 2);
			else if (p[i] == '\\')
				e = tfs_buf_append(out, "\\\\", 2);
			else
				e = tfs_buf_append_u8(out, p[i]);
		}
		return e;
	case TFSR_TEXT_CSV: {
		bool quote = len == 0 || memchr(p, ',', len) ||
			     memchr(p, '"', len) || memchr(p, '\n', len) ||
			     memchr(p, '\r', len);

		if (!quote)
			return tfs_buf_append(out, p, len);
		e = tfs_buf_append_u8(out, '"');
		for (uint64_t i = 0; !e && i < len; i++) {
			if (p[i] == '"')
				e = tfs_buf_append_u8(out, '"');
			if (!e)
				e = tfs_buf_append_u8(out, p[i]);
		}
		return e ? e : tfs_buf_append_u8(out, '"');
	}
	case TFSR_TEXT_JSON: {
		struct json_out j;

		json_out_init(&j, out);
		json_out_str(&j, p, (size_t)len);
		return json_out_error(&j);
	}
	}
	return TFS_E_INTERNAL;
}

static enum tfs_err put_hex(struct tfs_buf *out, const uint8_t *p, uint64_t len,
			    enum tfsr_text_style style)
{
	static const char digits[] = "0123456789abcdef";
	enum tfs_err e = TFS_E_OK;

	if (style == TFSR_TEXT_JSON)
		e = tfs_buf_append_u8(out, '"');
	for (uint64_t i = 0; !e && i < len; i++) {
		char two[2] = {digits[p[i] >> 4], digits[p[i] & 15]};

		e = tfs_buf_append(out, two, 2);
	}
	if (!e && style == TFSR_TEXT_JSON)
		e = tfs_buf_append_u8(out, '"');
	return e;
}

/* Decimal digits of v (with a '-' when negative) at the end of a 24-byte
 * text; returns where they start. printf's general machinery costs
 * several times this per value, and tables are mostly integers. */
static char *decimal(char text[24], uint64_t mag, bool negative)
{
	char *p = text + 23;

	*p = '\0';
	do {
		*--p = (char)('0' + mag % 10);
		mag /= 10;
	} while (mag);
	if (negative)
		*--p = '-';
	return p;
}

/* One value of a numeric type. */
static enum tfs_err put_number(struct tfs_buf *out, uint8_t type, const uint8_t *p,
			       enum tfsr_text_style style)
{
	char text[64];
	bool quote = false;

	if (type == TFS_BOOL) {
		snprintf(text, sizeof(text), "%s", p[0] ? "true" : "false");
	} else if (tfs_datatype_is_datetime(type)) {
		tfsr_datetime_text(text, sizeof(text), type,
				   tfs_value_as_i64(type, p));
		quote = style == TFSR_TEXT_JSON;
	} else if (tfs_datatype_class(type) == TFS_CLASS_SIGNED) {
		int64_t v = tfs_value_as_i64(type, p);
		const char *t = decimal(text, v < 0 ? 0 - (uint64_t)v : (uint64_t)v,
					v < 0);

		return tfs_buf_append(out, t, (size_t)(text + 23 - t));
	} else if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED) {
		const char *t = decimal(text, tfs_value_as_u64(type, p), false);

		return tfs_buf_append(out, t, (size_t)(text + 23 - t));
	} else {
		double v = tfs_value_as_f64(type, p);

		if (isnan(v)) {
			snprintf(text, sizeof(text), "nan");
			quote = style == TFSR_TEXT_JSON;
		} else if (isinf(v)) {
			snprintf(text, sizeof(text), "%s", v < 0 ? "-inf" : "inf");
			quote = style == TFSR_TEXT_JSON;
		} else if (type == TFS_FLOAT32) {
			float f;

			memcpy(&f, p, sizeof(f));
			json_fmt_f32(text, sizeof(text), f);
		} else {
			json_fmt_f64(text, sizeof(text), v);
		}
	}
	if (quote)
		return tfs_buf_printf(out, "\"%s\"", text);
	return tfs_buf_append(out, text, strlen(text));
}

/* Appends the len bytes of one cell of type (cell_val_num values, or
 * var-size). */
static enum tfs_err put_cell(struct tfs_buf *out, uint8_t type, bool var,
			     uint32_t cell_val_num, const uint8_t *p, uint64_t len,
			     enum tfsr_text_style style)
{
	size_t size = tfs_datatype_size(type);
	bool list;
	enum tfs_err e = TFS_E_OK;

	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_STRING:
		return put_string(out, p, len, style);
	case TFS_CLASS_BYTES:
		return put_hex(out, p, len, style);
	default:
		break;
	}
	list = var || cell_val_num != 1;
	if (list && style == TFSR_TEXT_JSON)
		e = tfs_buf_append_u8(out, '[');
	for (uint64_t off = 0; !e && size && off + size <= len; off += size) {
		if (off)
			e = tfs_buf_append_u8(out,
					      style == TFSR_TEXT_JSON ? ',' : ' ');
		if (!e)
			e = put_number(out, type, p + off, style);
	}
	if (!e && list && style == TFSR_TEXT_JSON)
		e = tfs_buf_append_u8(out, ']');
	return e;
}

/* The enumeration value a code selects; false when out of range. */
static bool enum_value(const struct tfs_enumeration *en, uint64_t code,
		       const uint8_t **p, uint64_t *len)
{
	if (code >= en->value_num)
		return false;
	if (en->offsets) {
		uint64_t start = en->offsets[code];
		uint64_t end = code + 1 < en->value_num ? en->offsets[code + 1]
							: en->data_size;

		if (start > end || end > en->data_size)
			return false;
		*p = en->data + start;
		*len = end - start;
		return true;
	}
	*len = tfs_datatype_size(en->type) * (uint64_t)en->cell_val_num;
	if (*len == 0 || (code + 1) * *len > en->data_size)
		return false;
	*p = en->data + code * *len;
	return true;
}

enum tfs_err tfsr_cell_text(struct tfs_buf *out, const struct tfs_column *c,
			    uint64_t i, enum tfsr_text_style style,
			    const struct tfs_enumeration *en)
{
	const uint8_t *p;
	uint64_t len;

	if (c->nullable && c->validity && !c->validity[i]) {
		switch (style) {
		case TFSR_TEXT_TXT: return tfs_buf_append(out, "NULL", 4);
		case TFSR_TEXT_CSV: return TFS_E_OK;
		case TFSR_TEXT_JSON: return tfs_buf_append(out, "null", 4);
		}
	}
	if (c->var) {
		p = c->data + c->offsets[i];
		len = c->offsets[i + 1] - c->offsets[i];
	} else {
		len = tfs_datatype_size(c->type) * (uint64_t)c->cell_val_num;
		p = c->data + i * len;
	}
	if (en && !c->var && c->cell_val_num == 1 &&
	    tfs_datatype_is_integer(c->type)) {
		const uint8_t *ep;
		uint64_t elen;
		int64_t code = tfs_value_as_i64(c->type, p);

		if (code >= 0 && enum_value(en, (uint64_t)code, &ep, &elen))
			return put_cell(out, en->type,
					en->cell_val_num == TFS_VAR_NUM,
					en->cell_val_num, ep, elen, style);
	}
	return put_cell(out, c->type, c->var, c->cell_val_num, p, len, style);
}

enum tfs_err tfsr_name_text(struct tfs_buf *out, const char *name,
			    enum tfsr_text_style style)
{
	size_t len = strlen(name);

	if (style == TFSR_TEXT_CSV && len == 0)
		return TFS_E_OK;
	return put_string(out, (const uint8_t *)name, len, style);
}
