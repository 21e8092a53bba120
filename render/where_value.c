/* Values of the filter grammar into the bytes of a field's type: numbers
 * range-checked, ISO-8601 dates and times at the unit of their type,
 * strings as their bytes, blobs as hex, enumeration labels as their
 * keys (see where.h); and how the parse reports an error, which the
 * parser in where.c shares. */
#include "where_parse.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cell_json.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"

/* ---- Errors of the parse ------------------------------------------------ */

enum tfs_err tfsr__where_bad(struct wp *p, size_t at, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->err_pos = at;
	return tfs_fail(p->d, TFS_E_INVALID, "filter at %zu: %s", at + 1, msg);
}

enum tfs_err tfsr__where_nomem(struct wp *p)
{
	return tfs_fail(p->d, TFS_E_NOMEM, "out of memory");
}

/* ---- Values into bytes of a type ----------------------------------------- */

static bool parse_hex(const char *s, size_t len, struct tfs_buf *out)
{
	if (len % 2)
		return false;
	for (size_t i = 0; i < len; i += 2) {
		char b[3] = {s[i], s[i + 1], 0};
		char *end;
		unsigned long v;

		if (!isxdigit((unsigned char)b[0]) ||
		    !isxdigit((unsigned char)b[1]))
			return false;
		v = strtoul(b, &end, 16);
		if (tfs_buf_append_u8(out, (uint8_t)v))
			return false;
	}
	return true;
}

/* One value of numeric type into dst (tfs_datatype_size bytes). */
static bool parse_number(uint8_t type, const char *text, uint8_t dst[8])
{
	if (cell_json_parse_value(type, text, dst))
		return true;
	if (type == TFS_BOOL) {
		if (strcasecmp(text, "true") == 0 ||
		    strcasecmp(text, "false") == 0) {
			dst[0] = text[0] == 't' || text[0] == 'T';
			return true;
		}
		return false;
	}
	if (tfs_datatype_class(type) == TFS_CLASS_FLOAT) {
		double inf = HUGE_VAL;

		if (strcasecmp(text, "inf") == 0 ||
		    strcasecmp(text, "-inf") == 0) {
			if (text[0] == '-')
				inf = -inf;
			if (type == TFS_FLOAT32) {
				float f = (float)inf;

				memcpy(dst, &f, sizeof(f));
			} else {
				memcpy(dst, &inf, sizeof(inf));
			}
			return true;
		}
		return false;
	}
	return tfs_datatype_is_datetime(type) &&
	       tfs_value_from_text(type, text, strlen(text), dst, NULL) ==
		       TFS_E_OK;
}

/* The index of label t in enumeration en, as bytes of the attribute's
 * type; false when en has no such value. */
static bool enum_index(const struct tfs_enumeration *en, uint8_t attr_type,
		       const struct token *t, uint8_t dst[8])
{
	uint64_t vsize = tfs_datatype_size(en->type) * en->cell_val_num;
	uint8_t num[8];
	const uint8_t *want = (const uint8_t *)t->text;
	uint64_t want_len = t->len;
	size_t isize = tfs_datatype_size(attr_type);

	if (!en->offsets && tfs_datatype_class(en->type) != TFS_CLASS_STRING &&
	    en->cell_val_num == 1) {
		if (!parse_number(en->type, t->text, num))
			return false;
		want = num;
		want_len = tfs_datatype_size(en->type);
	}
	for (uint64_t k = 0; k < en->value_num; k++) {
		uint64_t start, end;

		if (en->offsets) {
			start = en->offsets[k];
			end = k + 1 < en->value_num ? en->offsets[k + 1]
						    : en->data_size;
		} else {
			start = k * vsize;
			end = start + vsize;
		}
		if (end < start || end > en->data_size)
			return false;
		if (end - start == want_len &&
		    memcmp(en->data + start, want, (size_t)want_len) == 0) {
			if (isize < 8 && (k >> (8 * isize)) != 0)
				return false;
			tfs_put_uint(dst, isize, k);
			return true;
		}
	}
	return false;
}

/* Appends the bytes of value t for field f to out. */
enum tfs_err tfsr__where_put_value(struct wp *p, const struct tfs_field_info *f,
				   const struct token *t, struct tfs_buf *out)
{
	enum tfs_type_class k = tfs_datatype_class(f->type);
	size_t size = tfs_datatype_size(f->type);
	uint8_t v[8];

	if (f->enumeration && p->a) {
		const struct tfs_enumeration *en =
			tfs_array_enumeration_named(p->a, f->enumeration);

		if (!en)
			return tfsr__where_bad(p, t->at, "enumeration '%s' of '%s' is missing",
				   f->enumeration, f->name);
		if (!enum_index(en, f->type, t, v))
			return tfsr__where_bad(p, t->at,
				   "'%s' is not a value of the enumeration "
				   "'%s' of '%s'",
				   t->text, f->enumeration, f->name);
		if (tfs_buf_append(out, v, size))
			return tfsr__where_nomem(p);
		return TFS_E_OK;
	}
	if (k == TFS_CLASS_STRING) {
		if (tfs_buf_append(out, t->text, t->len))
			return tfsr__where_nomem(p);
		return TFS_E_OK;
	}
	if (k == TFS_CLASS_BYTES) {
		if (!parse_hex(t->text, t->len, out))
			return tfsr__where_bad(p, t->at, "'%s' is not hex bytes for '%s'",
				   t->text, f->name);
		return TFS_E_OK;
	}
	if (f->var || f->cell_val_num != 1) {
		/* Several values of a cell, separated by spaces. */
		const char *s = t->text;
		uint64_t n = 0;

		while (*s) {
			char one[128];
			size_t m = 0;

			while (*s == ' ')
				s++;
			if (!*s)
				break;
			while (s[m] && s[m] != ' ')
				m++;
			if (m >= sizeof(one))
				return tfsr__where_bad(p, t->at, "value too long");
			memcpy(one, s, m);
			one[m] = '\0';
			s += m;
			if (!parse_number(f->type, one, v))
				return tfsr__where_bad(p, t->at,
					   "'%s' is not a value of '%s' (%s)",
					   one, f->name,
					   tfs_datatype_name(f->type));
			if (tfs_buf_append(out, v, size))
				return tfsr__where_nomem(p);
			n++;
		}
		if (!f->var && n != f->cell_val_num)
			return tfsr__where_bad(p, t->at,
				   "'%s' holds %" PRIu64 " values, cells of "
				   "'%s' hold %" PRIu32,
				   t->text, n, f->name, f->cell_val_num);
		return TFS_E_OK;
	}
	if (!parse_number(f->type, t->text, v))
		return tfsr__where_bad(p, t->at, "'%s' is not a value of '%s' (%s)",
			   t->text, f->name, tfs_datatype_name(f->type));
	if (tfs_buf_append(out, v, size))
		return tfsr__where_nomem(p);
	return TFS_E_OK;
}

