/* A small recursive-descent JSON reader for the corpus expectation files.
 * Strings keep raw bytes: "\u00XY" escapes become the single byte XY (the
 * corpus writes non-UTF-8 bytes that way), other escapes become UTF-8. */
#include "json_mini.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct jp {
	const char *s;
	size_t len, pos;
	int depth;
};

static void skip_ws(struct jp *p)
{
	while (p->pos < p->len &&
	       (p->s[p->pos] == ' ' || p->s[p->pos] == '\n' ||
		p->s[p->pos] == '\r' || p->s[p->pos] == '\t'))
		p->pos++;
}

static bool parse_value(struct jp *p, struct jv *out);

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool read_hex4(struct jp *p, unsigned *v)
{
	*v = 0;
	if (p->pos + 4 > p->len)
		return false;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p->s[p->pos++]);
		if (h < 0)
			return false;
		*v = (*v << 4) | (unsigned)h;
	}
	return true;
}

static void put_utf8(char *dst, size_t *n, unsigned cp)
{
	if (cp < 0x80) {
		dst[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		dst[(*n)++] = (char)(0xc0 | (cp >> 6));
		dst[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		dst[(*n)++] = (char)(0xe0 | (cp >> 12));
		dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		dst[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		dst[(*n)++] = (char)(0xf0 | (cp >> 18));
		dst[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		dst[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static bool parse_string(struct jp *p, char **out, size_t *out_len,
			 char **raw_out, size_t *raw_len)
{
	size_t n = 0, rn = 0;
	char *buf, *raw;

	if (p->pos >= p->len || p->s[p->pos] != '"')
		return false;
	p->pos++;
	/* Size by the extent of the string in the text: every escape is
	 * longer than the bytes it decodes to. */
	size_t end = p->pos;

	while (end < p->len && p->s[end] != '"')
		end += p->s[end] == '\\' ? 2 : 1;
	buf = malloc(end - p->pos + 1);
	raw = malloc(end - p->pos + 1);
	if (!buf || !raw) {
		free(buf);
		free(raw);
		return false;
	}
	while (p->pos < p->len && p->s[p->pos] != '"') {
		char c = p->s[p->pos++];
		size_t before = n;

		if (c != '\\') {
			buf[n++] = c;
			raw[rn++] = c;
			continue;
		}
		if (p->pos >= p->len)
			goto fail;
		c = p->s[p->pos++];
		switch (c) {
		case '"': buf[n++] = '"'; break;
		case '\\': buf[n++] = '\\'; break;
		case '/': buf[n++] = '/'; break;
		case 'b': buf[n++] = '\b'; break;
		case 'f': buf[n++] = '\f'; break;
		case 'n': buf[n++] = '\n'; break;
		case 'r': buf[n++] = '\r'; break;
		case 't': buf[n++] = '\t'; break;
		case 'u': {
			unsigned cp;

			if (!read_hex4(p, &cp))
				goto fail;
			if (cp < 0x100 && cp >= 0x80) {
				put_utf8(buf, &n, cp);
				raw[rn++] = (char)cp; /* raw byte */
				continue;
			}
			if (cp >= 0xd800 && cp < 0xdc00 && p->pos + 6 <= p->len &&
			    p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
				unsigned lo;

				p->pos += 2;
				if (!read_hex4(p, &lo))
					goto fail;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			put_utf8(buf, &n, cp);
			break;
		}
		default:
			goto fail;
		}
		memcpy(raw + rn, buf + before, n - before);
		rn += n - before;
	}
	if (p->pos >= p->len)
		goto fail;
	p->pos++;
	buf[n] = '\0';
	raw[rn] = '\0';
	*out = buf;
	*out_len = n;
	if (raw_out) {
		*raw_out = raw;
		*raw_len = rn;
	} else {
		free(raw);
	}
	return true;
fail:
	free(buf);
	free(raw);
	return false;
}

static bool parse_container(struct jp *p, struct jv *out, bool obj)
{
	char close = obj ? '}' : ']';
	size_t cap = 0;

	out->t = obj ? J_OBJ : J_ARR;
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return true;
	}
	for (;;) {
		if (out->n == cap) {
			cap = cap ? 2 * cap : 8;
			struct jv *it = realloc(out->items, cap * sizeof(*it));
			if (!it)
				return false;
			out->items = it;
			if (obj) {
				char **k = realloc(out->keys, cap * sizeof(*k));
				if (!k)
					return false;
				out->keys = k;
			}
		}
		memset(&out->items[out->n], 0, sizeof(struct jv));
		skip_ws(p);
		if (obj) {
			size_t kl;

			out->keys[out->n] = NULL;
			if (!parse_string(p, &out->keys[out->n], &kl, NULL,
					  NULL))
				return false;
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return false;
			p->pos++;
		}
		out->n++;
		if (!parse_value(p, &out->items[out->n - 1]))
			return false;
		skip_ws(p);
		if (p->pos >= p->len)
			return false;
		if (p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->s[p->pos] == close) {
			p->pos++;
			return true;
		}
		return false;
	}
}

static bool parse_value(struct jp *p, struct jv *out)
{
	skip_ws(p);
	if (p->pos >= p->len || ++p->depth > 200)
		return false;
	char c = p->s[p->pos];
	bool ok;

	if (c == '{' || c == '[') {
		ok = parse_container(p, out, c == '{');
	} else if (c == '"') {
		out->t = J_STR;
		ok = parse_string(p, &out->text, &out->len, &out->raw,
				  &out->raw_len);
	} else if (!strncmp(p->s + p->pos, "true", 4)) {
		out->t = J_BOOL;
		out->b = true;
		p->pos += 4;
		ok = true;
	} else if (!strncmp(p->s + p->pos, "false", 5)) {
		out->t = J_BOOL;
		p->pos += 5;
		ok = true;
	} else if (!strncmp(p->s + p->pos, "null", 4)) {
		out->t = J_NULL;
		p->pos += 4;
		ok = true;
	} else {
		size_t start = p->pos;

		while (p->pos < p->len && strchr("+-0123456789.eE", p->s[p->pos]))
			p->pos++;
		ok = p->pos > start;
		if (ok) {
			out->t = J_NUM;
			out->text = strndup(p->s + start, p->pos - start);
			ok = out->text != NULL;
		}
	}
	p->depth--;
	return ok;
}

struct jv *json_parse(const char *text, size_t len)
{
	struct jp p = {text, len, 0, 0};
	struct jv *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	if (!parse_value(&p, v)) {
		json_free(v);
		return NULL;
	}
	return v;
}

static void free_inner(struct jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		free_inner(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->text);
	free(v->raw);
}

void json_free(struct jv *v)
{
	if (!v)
		return;
	free_inner(v);
	free(v);
}

const struct jv *json_get(const struct jv *obj, const char *key)
{
	if (!obj || obj->t != J_OBJ)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (obj->keys[i] && !strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

const struct jv *json_at(const struct jv *arr, size_t i)
{
	if (!arr || (arr->t != J_ARR && arr->t != J_OBJ) || i >= arr->n)
		return NULL;
	return &arr->items[i];
}

bool json_is_null(const struct jv *v)
{
	return !v || v->t == J_NULL;
}

int64_t json_i64(const struct jv *v)
{
	return v && v->t == J_NUM ? strtoll(v->text, NULL, 10) : 0;
}

uint64_t json_u64(const struct jv *v)
{
	return v && v->t == J_NUM ? strtoull(v->text, NULL, 10) : 0;
}

double json_f64(const struct jv *v)
{
	if (!v)
		return 0;
	if (v->t == J_STR) {
		if (!strcmp(v->text, "NaN"))
			return NAN;
		if (!strcmp(v->text, "Infinity"))
			return INFINITY;
		if (!strcmp(v->text, "-Infinity"))
			return -INFINITY;
		return 0;
	}
	return v->t == J_NUM ? strtod(v->text, NULL) : 0;
}

const char *json_str(const struct jv *v)
{
	return v && v->t == J_STR ? v->text : NULL;
}

bool json_str_eq(const struct jv *v, const void *bytes, size_t n)
{
	if (!v || v->t != J_STR)
		return false;
	if (v->len == n && (!n || !memcmp(v->text, bytes, n)))
		return true;
	return v->raw_len == n && (!n || !memcmp(v->raw, bytes, n));
}
