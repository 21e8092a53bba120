/* Streaming JSON writer over a growable buffer. */
#include "json_out.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tfs_fmt_float.h"

static const char hex_digits[] = "0123456789abcdef";

void json_out_init(struct json_out *j, struct tfs_buf *buf)
{
	j->buf = buf;
	j->err = TFS_E_OK;
	j->depth = 0;
	j->after_key = false;
	j->space = NULL;
	j->has_items[0] = false;
}

enum tfs_err json_out_error(const struct json_out *j)
{
	return j->err;
}

static void put(struct json_out *j, const void *p, size_t n)
{
	if (j->err)
		return;
	j->err = tfs_buf_append(j->buf, p, n);
}

static void putc_(struct json_out *j, char c)
{
	put(j, &c, 1);
}

/* Separator before a value: a comma unless it is the first item of its
 * container or the value of a key just written. */
static void put_cstr(struct json_out *j, const char *s);

/* Emits whitespace requested by json_out_space. */
static void flush_space(struct json_out *j)
{
	if (j->space) {
		put_cstr(j, j->space);
		j->space = NULL;
	}
}

static void before_value(struct json_out *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->has_items[j->depth])
		putc_(j, ',');
	j->has_items[j->depth] = true;
	flush_space(j);
}

static void open_container(struct json_out *j, char c)
{
	before_value(j);
	putc_(j, c);
	assert(j->depth < JSON_OUT_MAX_DEPTH);
	j->depth++;
	j->has_items[j->depth] = false;
}

static void close_container(struct json_out *j, char c)
{
	assert(j->depth > 0 && !j->after_key);
	j->depth--;
	flush_space(j);
	putc_(j, c);
}

void json_out_begin_object(struct json_out *j)
{
	open_container(j, '{');
}

void json_out_end_object(struct json_out *j)
{
	close_container(j, '}');
}

void json_out_begin_array(struct json_out *j)
{
	open_container(j, '[');
}

void json_out_end_array(struct json_out *j)
{
	close_container(j, ']');
}

static void put_cstr(struct json_out *j, const char *s)
{
	put(j, s, strlen(s));
}

static void put_u_escape(struct json_out *j, uint32_t unit)
{
	char e[6] = {'\\', 'u', hex_digits[(unit >> 12) & 15],
		     hex_digits[(unit >> 8) & 15], hex_digits[(unit >> 4) & 15],
		     hex_digits[unit & 15]};

	put(j, e, sizeof(e));
}

/* Length of the well-formed UTF-8 sequence at s (n > 0 bytes left) and its
 * code point, or 0 when the byte at s starts none (Unicode Table 3-7:
 * no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c < 0xc2 || c > 0xf4)
		return 0;
	if (c < 0xe0) {
		len = 2;
		*cp = c & 0x1fu;
	} else if (c < 0xf0) {
		len = 3;
		*cp = c & 0x0fu;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else {
		len = 4;
		*cp = c & 0x07u;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = (*cp << 6) | (s[i] & 0x3fu);
	}
	return len;
}

void json_out_str(struct json_out *j, const void *s, size_t len)
{
	const uint8_t *p = s;
	size_t i = 0;

	before_value(j);
	putc_(j, '"');
	while (i < len) {
		size_t run = i;
		uint32_t cp;
		size_t n;

		/* Copy plain printable ASCII in one go. */
		while (run < len && p[run] >= 0x20 && p[run] < 0x7f &&
		       p[run] != '"' && p[run] != '\\')
			run++;
		if (run > i) {
			put(j, p + i, run - i);
			i = run;
			continue;
		}
		n = utf8_decode(p + i, len - i, &cp);
		if (n == 0) {
			put_u_escape(j, p[i]);
			i++;
			continue;
		}
		i += n;
		switch (cp) {
		case '"': put_cstr(j, "\\\""); break;
		case '\\': put_cstr(j, "\\\\"); break;
		case '\b': put_cstr(j, "\\b"); break;
		case '\f': put_cstr(j, "\\f"); break;
		case '\n': put_cstr(j, "\\n"); break;
		case '\r': put_cstr(j, "\\r"); break;
		case '\t': put_cstr(j, "\\t"); break;
		default:
			if (cp >= 0x10000) {
				cp -= 0x10000;
				put_u_escape(j, 0xd800 + (cp >> 10));
				put_u_escape(j, 0xdc00 + (cp & 0x3ff));
			} else {
				put_u_escape(j, cp);
			}
		}
	}
	putc_(j, '"');
}

void json_out_cstr(struct json_out *j, const char *s)
{
	json_out_str(j, s, strlen(s));
}

void json_out_key_len(struct json_out *j, const void *key, size_t len)
{
	assert(!j->after_key);
	json_out_str(j, key, len);
	putc_(j, ':');
	j->after_key = true;
}

void json_out_key(struct json_out *j, const char *key)
{
	json_out_key_len(j, key, strlen(key));
}

void json_out_hex(struct json_out *j, const void *p, size_t len)
{
	const uint8_t *b = p;
	char pair[2];

	before_value(j);
	putc_(j, '"');
	for (size_t i = 0; i < len; i++) {
		pair[0] = hex_digits[b[i] >> 4];
		pair[1] = hex_digits[b[i] & 15];
		put(j, pair, 2);
	}
	putc_(j, '"');
}

void json_out_null(struct json_out *j)
{
	before_value(j);
	put_cstr(j, "null");
}

void json_out_bool(struct json_out *j, bool v)
{
	before_value(j);
	put_cstr(j, v ? "true" : "false");
}

void json_out_i64(struct json_out *j, int64_t v)
{
	char t[24];
	int n = snprintf(t, sizeof(t), "%" PRId64, v);

	before_value(j);
	put(j, t, (size_t)n);
}

void json_out_u64(struct json_out *j, uint64_t v)
{
	char t[24];
	int n = snprintf(t, sizeof(t), "%" PRIu64, v);

	before_value(j);
	put(j, t, (size_t)n);
}

/* Integral values below this magnitude print as plain digits. */
#define PLAIN_DIGITS_MAX 1e16

size_t json_fmt_f64(char *out, size_t cap, double v)
{
	return tfs_fmt_f64(out, cap, v, PLAIN_DIGITS_MAX);
}

size_t json_fmt_f32(char *out, size_t cap, float v)
{
	return tfs_fmt_f32(out, cap, v, PLAIN_DIGITS_MAX);
}

static bool nonfinite(struct json_out *j, double v)
{
	if (isnan(v))
		json_out_cstr(j, "NaN");
	else if (isinf(v))
		json_out_cstr(j, v > 0 ? "Infinity" : "-Infinity");
	else
		return false;
	return true;
}

void json_out_f64(struct json_out *j, double v)
{
	char t[40];
	size_t n;

	if (nonfinite(j, v))
		return;
	n = json_fmt_f64(t, sizeof(t), v);
	before_value(j);
	put(j, t, n);
}

void json_out_f32(struct json_out *j, float v)
{
	char t[40];
	size_t n;

	if (nonfinite(j, (double)v))
		return;
	n = json_fmt_f32(t, sizeof(t), v);
	before_value(j);
	put(j, t, n);
}

void json_out_value_text(struct json_out *j, const char *text, size_t len)
{
	before_value(j);
	put(j, text, len);
}

void json_out_space(struct json_out *j, const char *ws)
{
	j->space = ws;
}
