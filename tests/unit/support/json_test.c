/* The corpus expectation files through json-c (json_test.h). */
#include "json_test.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting the corpus files may use at most. */
#define JSON_TOKENER_MAX_DEPTH 256

/* The bytes of a UTF-8 string with code points U+0080..U+00FF as single
 * bytes (the corpus's escapes of bytes that are not UTF-8); other
 * characters stay as they are. */
static char *raw_bytes(const char *s, size_t len, size_t *out_len)
{
	char *raw = malloc(len + 1);
	size_t n = 0;

	if (!raw)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c == 0xc2 || c == 0xc3) && i + 1 < len &&
		    ((unsigned char)s[i + 1] & 0xc0) == 0x80) {
			raw[n++] = (char)(((c & 0x1f) << 6) |
					  ((unsigned char)s[i + 1] & 0x3f));
			i++;
			continue;
		}
		raw[n++] = (char)c;
	}
	raw[n] = '\0';
	*out_len = n;
	return raw;
}

static bool convert(struct json_object *o, struct jv *out)
{
	size_t i = 0;

	memset(out, 0, sizeof(*out));
	switch (json_object_get_type(o)) {
	case json_type_null:
		out->t = J_NULL;
		return true;
	case json_type_boolean:
		out->t = J_BOOL;
		out->b = json_object_get_boolean(o);
		return true;
	case json_type_int:
	case json_type_double:
		/* Integers print their value (uint64 included), doubles the
		 * text they were parsed from. */
		out->t = J_NUM;
		out->text = strdup(json_object_to_json_string_ext(
			o, JSON_C_TO_STRING_PLAIN));
		return out->text != NULL;
	case json_type_string: {
		const char *s = json_object_get_string(o);

		out->t = J_STR;
		out->len = (size_t)json_object_get_string_len(o);
		out->text = malloc(out->len + 1);
		if (!out->text)
			return false;
		memcpy(out->text, s, out->len);
		out->text[out->len] = '\0';
		out->raw = raw_bytes(out->text, out->len, &out->raw_len);
		return out->raw != NULL;
	}
	case json_type_array:
		out->t = J_ARR;
		out->n = json_object_array_length(o);
		out->items = calloc(out->n ? out->n : 1, sizeof(*out->items));
		if (!out->items) {
			out->n = 0;
			return false;
		}
		for (i = 0; i < out->n; i++)
			if (!convert(json_object_array_get_idx(o, i),
				     &out->items[i]))
				return false;
		return true;
	case json_type_object: {
		out->t = J_OBJ;
		out->n = (size_t)json_object_object_length(o);
		out->items = calloc(out->n ? out->n : 1, sizeof(*out->items));
		out->keys = calloc(out->n ? out->n : 1, sizeof(*out->keys));
		if (!out->items || !out->keys) {
			out->n = 0;
			return false;
		}
		json_object_object_foreach(o, key, val) {
			out->keys[i] = strdup(key);
			if (!out->keys[i] || !convert(val, &out->items[i]))
				return false;
			i++;
		}
		return true;
	}
	}
	return false;
}

/* text with every number -0 outside strings written -0.0: json-c reads
 * -0 as the integer 0, and the corpus writes a float -0.0 as -0 (the sign
 * is part of the value). NULL when out of memory. */
static char *keep_negative_zero(const char *text, size_t len, size_t *out_len)
{
	char *out = malloc(len * 2 + 1);
	bool in_str = false;
	size_t n = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		out[n++] = c;
		if (in_str) {
			if (c == '\\' && i + 1 < len)
				out[n++] = text[++i];
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '-' && i + 1 < len && text[i + 1] == '0' &&
			   (i + 2 == len || !strchr("0123456789.eE", text[i + 2]))) {
			memcpy(out + n, "0.0", 3);
			n += 3;
			i++;
		}
	}
	*out_len = n;
	return out;
}

struct jv *json_parse(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_MAX_DEPTH);
	struct json_object *o = NULL;
	struct jv *v = calloc(1, sizeof(*v));
	size_t kept_len = 0;
	char *kept = keep_negative_zero(text, len, &kept_len);
	bool ok = false;

	if (tok && v && kept && kept_len <= INT32_MAX) {
		o = json_tokener_parse_ex(tok, kept, (int)kept_len);
		ok = o && json_tokener_get_error(tok) == json_tokener_success &&
		     convert(o, v);
	}
	json_object_put(o);
	free(kept);
	if (tok)
		json_tokener_free(tok);
	if (!ok) {
		json_free(v);
		return NULL;
	}
	return v;
}

struct jv *json_load(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct jv *v = NULL;

	if (!f)
		return NULL;
	for (;;) {
		if (len == cap) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb)
				goto out;
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		size_t got = fread(buf + len, 1, cap - len, f);

		len += got;
		if (got == 0)
			break;
	}
	if (!ferror(f))
		v = json_parse(buf, len);
out:
	free(buf);
	fclose(f);
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
