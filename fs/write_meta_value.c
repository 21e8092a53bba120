/* Metadata values from text (SPEC §6): the lines written to a metadata
 * key's file, read as values of the key's type. */
#include "tfsd_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"

/* Parses one line as a value of a numeric type into v (8 bytes). */
static bool parse_number(uint8_t type, const char *s, uint8_t *v)
{
	size_t size = tfs_datatype_size(type);
	char *end;

	errno = 0;
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED: {
		long long x = strtoll(s, &end, 10);
		long long lim = size >= 8 ? INT64_MAX
					  : (1LL << (size * 8 - 1)) - 1;

		if (errno || end == s || *end || x > lim || x < -lim - 1)
			return false;
		tfs_put_uint(v, size, (uint64_t)x);
		return true;
	}
	case TFS_CLASS_UNSIGNED: {
		unsigned long long x;

		if (type == TFS_BOOL) {
			if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
				x = 1;
			else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
				x = 0;
			else
				return false;
			v[0] = (uint8_t)x;
			return true;
		}
		if (*s == '-')
			return false;
		x = strtoull(s, &end, 10);
		if (errno || end == s || *end ||
		    (size < 8 && x >> (size * 8)))
			return false;
		tfs_put_uint(v, size, (uint64_t)x);
		return true;
	}
	case TFS_CLASS_FLOAT: {
		double x = strtod(s, &end);

		if (end == s || *end)
			return false;
		if (size == 4) {
			float f = (float)x;

			memcpy(v, &f, 4);
		} else {
			memcpy(v, &x, 8);
		}
		return true;
	}
	default:
		return false;
	}
}

/* Splits text (len bytes, no NUL) into lines, each trimmed of blanks
 * and a CR, and parses every one as type into *vals (tfs_free); *bad
 * receives the first line that is no such value (NUL-terminated, cut to
 * bad_cap). True when every line parses. */
static bool parse_lines(uint8_t type, const char *text, size_t len,
			uint8_t **vals, uint32_t *num, char *bad,
			size_t bad_cap, enum tfs_err *e)
{
	size_t size = tfs_datatype_size(type), lines = 1, i = 0;
	char *copy = tfs_strndup(text, len), *p, *nl;
	bool ok = true;

	*vals = NULL;
	*e = TFS_E_OK;
	if (!copy) {
		*e = TFS_E_NOMEM;
		return false;
	}
	for (p = copy; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
		lines++;
	*vals = lines <= UINT32_MAX ? tfs_callocn(lines, size ? size : 1)
				    : NULL;
	if (!*vals) {
		tfs_free(copy);
		*e = lines <= UINT32_MAX ? TFS_E_NOMEM : TFS_E_TOO_BIG;
		return false;
	}
	for (p = copy; ok && p; i++) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		/* A line read back as "1.5 " from an editor is still the
		 * number. */
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		for (size_t n = strlen(p);
		     n &&
		     (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r');
		     n--)
			p[n - 1] = '\0';
		ok = parse_number(type, p, *vals + i * size);
		if (!ok)
			snprintf(bad, bad_cap, "%s", p);
		p = nl ? nl + 1 : NULL;
	}
	tfs_free(copy);
	if (!ok) {
		tfs_free(*vals);
		*vals = NULL;
		return false;
	}
	*num = (uint32_t)lines;
	return true;
}

/* Whether every line of text looks like a decimal number (digits, sign,
 * point, exponent), so that words such as "nan" or "inf" stay text. */
static bool decimal_text(const char *text, size_t len)
{
	bool digit = false;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (c >= '0' && c <= '9')
			digit = true;
		else if (!strchr("+-.eE \t\r\n", c))
			return false;
	}
	return digit;
}

enum tfs_err tfsd_meta_value_parse(const struct tfs_meta_kv *old,
				   const char *text, size_t len,
				   struct tfs_meta_kv *out, struct tfs_diag *d)
{
	bool have_old = old && !old->deleted;
	unsigned cls = have_old ? tfs_datatype_class(old->type) : 0;
	char bad[64] = "";
	enum tfs_err e;

	if (len && text[len - 1] == '\n')
		len--;
	out->deleted = false;
	out->value = NULL;
	if (len > UINT32_MAX)
		return tfs_fail(d, TFS_E_TOO_BIG, "value larger than 4 GiB");
	if (have_old && cls == TFS_CLASS_BYTES)
		return tfs_fail(d, TFS_E_INVALID,
				"a key of type %s is not written as text",
				tfs_datatype_name(old->type));
	if (have_old && cls != TFS_CLASS_STRING) {
		/* The key's type stays: every line one value of it. */
		if (len == 0 || memchr(text, '\0', len))
			return tfs_fail(d, TFS_E_INVALID,
					"no %s value (the key's type)",
					tfs_datatype_name(old->type));
		if (parse_lines(old->type, text, len, &out->value,
				&out->value_num, bad, sizeof(bad), &e)) {
			out->type = old->type;
			return TFS_E_OK;
		}
		if (e)
			return tfs_fail(d, e, "out of memory");
		return tfs_fail(d, TFS_E_INVALID,
				"'%s' is no %s value (the key's type; rm the "
				"key first to change it)",
				bad, tfs_datatype_name(old->type));
	}
	if (!have_old && len && !memchr(text, '\0', len) &&
	    decimal_text(text, len)) {
		/* A new key: integers are INT64, other numbers FLOAT64, one
		 * value per line. */
		if (parse_lines(TFS_INT64, text, len, &out->value,
				&out->value_num, bad, sizeof(bad), &e)) {
			out->type = TFS_INT64;
			return TFS_E_OK;
		}
		if (!e && parse_lines(TFS_FLOAT64, text, len, &out->value,
				      &out->value_num, bad, sizeof(bad), &e)) {
			out->type = TFS_FLOAT64;
			return TFS_E_OK;
		}
		if (e)
			return tfs_fail(d, e, "out of memory");
	}
	out->type = have_old ? old->type : TFS_STRING_UTF8;
	out->value = tfs_memdup(len ? text : "", len ? len : 1);
	out->value_num = (uint32_t)len;
	return out->value ? TFS_E_OK
			  : tfs_fail(d, TFS_E_NOMEM, "out of memory");
}
