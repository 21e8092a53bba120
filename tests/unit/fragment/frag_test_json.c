/* Minimal recursive-descent JSON reader for the corpus expectations. */
#include "frag_test_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jp {
	const char *p;
	const char *end;
};

static void skip_ws(struct jp *j)
{
	while (j->p < j->end &&
	       (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static bool parse_value(struct jp *j, struct jval *out, int depth);

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

static bool put_utf8(char *dst, size_t *n, unsigned cp)
{
	if (cp < 0x80) {
		dst[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		dst[(*n)++] = (char)(0xC0 | (cp >> 6));
		dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		dst[(*n)++] = (char)(0xE0 | (cp >> 12));
		dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
		dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
	} else {
		dst[(*n)++] = (char)(0xF0 | (cp >> 18));
		dst[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
		dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
		dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
	}
	return true;
}

static bool read_hex4(struct jp *j, unsigned *cp)
{
	*cp = 0;
	if (j->end - j->p < 4)
		return false;
	for (int i = 0; i < 4; i++) {
		int h = hexval(j->p[i]);

		if (h < 0)
			return false;
		*cp = (*cp << 4) | (unsigned)h;
	}
	j->p += 4;
	return true;
}

/* The corpus writes bytes that are not valid UTF-8 as \u00XY: a \u escape
 * below 0x100 is decoded to that single byte. */
static bool parse_string(struct jp *j, char **out, size_t *len)
{
	char *buf;
	size_t n = 0;

	if (j->p >= j->end || *j->p != '"')
		return false;
	j->p++;
	buf = malloc((size_t)(j->end - j->p) * 2 + 1);
	if (!buf)
		return false;
	while (j->p < j->end && *j->p != '"') {
		char c = *j->p++;
		unsigned cp;

		if (c != '\\') {
			buf[n++] = c;
			continue;
		}
		if (j->p >= j->end)
			goto fail;
		c = *j->p++;
		switch (c) {
		case '"': buf[n++] = '"'; break;
		case '\\': buf[n++] = '\\'; break;
		case '/': buf[n++] = '/'; break;
		case 'b': buf[n++] = '\b'; break;
		case 'f': buf[n++] = '\f'; break;
		case 'n': buf[n++] = '\n'; break;
		case 'r': buf[n++] = '\r'; break;
		case 't': buf[n++] = '\t'; break;
		case 'u':
			if (!read_hex4(j, &cp))
				goto fail;
			if (cp >= 0xD800 && cp < 0xDC00 && j->end - j->p >= 6 &&
			    j->p[0] == '\\' && j->p[1] == 'u') {
				unsigned lo;

				j->p += 2;
				if (!read_hex4(j, &lo))
					goto fail;
				cp = 0x10000 + ((cp - 0xD800) << 10) +
				     (lo - 0xDC00);
			}
			if (cp < 0x100)
				buf[n++] = (char)cp;
			else
				put_utf8(buf, &n, cp);
			break;
		default:
			goto fail;
		}
	}
	if (j->p >= j->end)
		goto fail;
	j->p++;
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return true;
fail:
	free(buf);
	return false;
}

static bool parse_container(struct jp *j, struct jval *out, bool obj,
			    int depth)
{
	size_t cap = 0;
	char close = obj ? '}' : ']';

	out->type = obj ? J_OBJ : J_ARR;
	j->p++;
	skip_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return true;
	}
	for (;;) {
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct jval *ni = realloc(out->items, ncap * sizeof(*ni));

			if (!ni)
				return false;
			out->items = ni;
			if (obj) {
				char **nk = realloc(out->keys, ncap * sizeof(*nk));

				if (!nk)
					return false;
				out->keys = nk;
			}
			cap = ncap;
		}
		memset(&out->items[out->n], 0, sizeof(out->items[0]));
		skip_ws(j);
		if (obj) {
			size_t klen;

			out->keys[out->n] = NULL;
			if (!parse_string(j, &out->keys[out->n], &klen))
				return false;
			skip_ws(j);
			if (j->p >= j->end || *j->p != ':') {
				out->n++;
				return false;
			}
			j->p++;
		}
		if (!parse_value(j, &out->items[out->n], depth + 1)) {
			out->n++;
			return false;
		}
		out->n++;
		skip_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			return true;
		}
		return false;
	}
}

static bool parse_value(struct jp *j, struct jval *out, int depth)
{
	memset(out, 0, sizeof(*out));
	if (depth > 64)
		return false;
	skip_ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p) {
	case '{':
		return parse_container(j, out, true, depth);
	case '[':
		return parse_container(j, out, false, depth);
	case '"':
		out->type = J_STR;
		return parse_string(j, &out->text, &out->len);
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = {"true", "false", "null"};

		for (int i = 0; i < 3; i++) {
			size_t wl = strlen(words[i]);

			if ((size_t)(j->end - j->p) >= wl &&
			    !memcmp(j->p, words[i], wl)) {
				j->p += wl;
				out->type = i == 2 ? J_NULL : J_BOOL;
				out->b = i == 0;
				return true;
			}
		}
		return false;
	}
	default: {
		const char *s = j->p;

		while (j->p < j->end && strchr("+-0123456789.eE", *j->p))
			j->p++;
		if (j->p == s)
			return false;
		out->type = J_NUM;
		out->len = (size_t)(j->p - s);
		out->text = malloc(out->len + 1);
		if (!out->text)
			return false;
		memcpy(out->text, s, out->len);
		out->text[out->len] = '\0';
		return true;
	}
	}
}

static void json_release(struct jval *v)
{
	for (size_t i = 0; i < v->n; i++) {
		json_release(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->text);
}

void json_free(struct jval *v)
{
	if (!v)
		return;
	json_release(v);
	free(v);
}

struct jval *json_parse(const char *text, size_t len)
{
	struct jp j = {text, text + len};
	struct jval *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	if (!parse_value(&j, v, 0)) {
		json_free(v);
		return NULL;
	}
	skip_ws(&j);
	if (j.p != j.end) {
		json_free(v);
		return NULL;
	}
	return v;
}

const struct jval *json_get(const struct jval *obj, const char *key)
{
	if (!obj || obj->type != J_OBJ)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

struct jval *json_load(const char *path)
{
	FILE *fp = fopen(path, "rb");
	char *buf;
	long n;
	struct jval *v;

	if (!fp)
		return NULL;
	if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET) != 0) {
		fclose(fp);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, fp) != (size_t)n) {
		free(buf);
		fclose(fp);
		return NULL;
	}
	fclose(fp);
	v = json_parse(buf, (size_t)n);
	free(buf);
	return v;
}
