/* The small pieces of the schema JSON parser: JSON paths for messages,
 * typed members (strings, booleans, integers, datatypes), values and cells
 * read back with the CSV value parser, and filter lists. */
#include "schema_json_values.h"

void tfs__json_jpath_key(struct jpath *out, const struct jpath *in, const char *key)
{
	/* A path too long for messages is cut short. */
	if (snprintf(out->text, sizeof(out->text), "%s.%s", in->text, key) < 0)
		out->text[0] = '\0';
}

void tfs__json_jpath_index(struct jpath *out, const struct jpath *in, size_t i)
{
	if (snprintf(out->text, sizeof(out->text), "%s[%zu]", in->text, i) < 0)
		out->text[0] = '\0';
}

enum tfs_err tfs__json_fail(struct tfs_diag *d, const struct jpath *jp,
			    const char *fmt, ...)
{
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return tfs_fail(d, TFS_E_INVALID, "schema JSON: %s: %s", jp->text, why);
}

/* The tfs__json_member called key; NULL when missing or null. */
json_object *tfs__json_member(json_object *obj, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

enum tfs_err tfs__json_get_string(json_object *obj, const char *key, bool required,
				  const struct jpath *jp, const char **out,
				  struct tfs_diag *d)
{
	json_object *v = tfs__json_member(obj, key);
	struct jpath kp;

	tfs__json_jpath_key(&kp, jp, key);
	*out = NULL;
	if (!v) {
		if (required)
			return FAIL(d, &kp, "missing");
		return TFS_E_OK;
	}
	if (!json_object_is_type(v, json_type_string))
		return FAIL(d, &kp, "a string expected");
	*out = json_object_get_string(v);
	return TFS_E_OK;
}

enum tfs_err tfs__json_get_bool(json_object *obj, const char *key, bool dflt,
				const struct jpath *jp, bool *out, struct tfs_diag *d)
{
	json_object *v = tfs__json_member(obj, key);
	struct jpath kp;

	*out = dflt;
	if (!v)
		return TFS_E_OK;
	tfs__json_jpath_key(&kp, jp, key);
	if (!json_object_is_type(v, json_type_boolean))
		return FAIL(d, &kp, "true or false expected");
	*out = json_object_get_boolean(v);
	return TFS_E_OK;
}

enum tfs_err tfs__json_get_u64(json_object *v, const struct jpath *jp, uint64_t max,
			       uint64_t *out, struct tfs_diag *d)
{
	const char *text;
	uint64_t u;
	const char *why;

	/* Set on failure too: gcc -O3 cannot see that FAIL returns non-zero
	 * and warns at every caller (maybe-uninitialized). */
	*out = 0;
	if (!json_object_is_type(v, json_type_int))
		return FAIL(d, jp, "an integer expected");
	text = json_object_get_string(v);
	if (tfs__value_parse(TFS_UINT64, (const uint8_t *)text, strlen(text), &u, &why) ||
	    u > max)
		return FAIL(d, jp, "integer out of range");
	*out = u;
	return TFS_E_OK;
}

static int datatype_by_name(const char *name)
{
	for (unsigned t = 0; t <= TFS_DATATYPE_MAX; t++)
		if (tfs_datatype_valid(t) && strcmp(tfs_datatype_name(t), name) == 0)
			return (int)t;
	return -1;
}

enum tfs_err tfs__json_get_type(json_object *obj, const struct jpath *jp, uint8_t *out,
				struct tfs_diag *d)
{
	const char *name;
	struct jpath kp;
	enum tfs_err e;
	int t;

	if ((e = tfs__json_get_string(obj, "type", true, jp, &name, d)))
		return e;
	tfs__json_jpath_key(&kp, jp, "type");
	if ((t = datatype_by_name(name)) < 0) {
		char text[64];

		return FAIL(d, &kp, "unknown datatype '%s'",
			    tfs__msg_text(text, sizeof(text), name, strlen(name)));
	}
	*out = (uint8_t)t;
	return TFS_E_OK;
}

/* One value of a fixed-size type from a JSON number (or "NaN",
 * "Infinity", "-Infinity" for floats); date/time types as integers. */
enum tfs_err tfs__json_get_value(json_object *v, uint8_t type, const struct jpath *jp,
				 uint8_t *dst, struct tfs_diag *d)
{
	enum tfs_type_class cls = tfs_datatype_class(type);
	uint8_t as = tfs_datatype_is_datetime(type) ? TFS_INT64 : type;
	const char *text, *why;
	enum tfs_err e;

	if (cls == TFS_CLASS_STRING || cls == TFS_CLASS_BYTES)
		return FAIL(d, jp, "no single value of type %s", tfs_datatype_name(type));
	if (json_object_is_type(v, json_type_string)) {
		if (cls != TFS_CLASS_FLOAT)
			return FAIL(d, jp, "a number expected");
	} else if (!json_object_is_type(v, json_type_int) &&
		   !(cls == TFS_CLASS_FLOAT && json_object_is_type(v, json_type_double))) {
		return FAIL(d, jp, "%s expected",
			    cls == TFS_CLASS_FLOAT ? "a number" : "an integer");
	}
	text = json_object_get_string(v);
	if (type == TFS_BOOL)
		as = TFS_UINT8;
	if ((e = tfs__value_parse(as, (const uint8_t *)text, strlen(text), dst, &why))) {
		char shown[64];

		return FAIL(d, jp, "'%s': %s for %s",
			    tfs__msg_text(shown, sizeof(shown), text, strlen(text)), why,
			    tfs_datatype_name(type));
	}
	if (type == TFS_BOOL && dst[0] > 1)
		return FAIL(d, jp, "a bool is 0 or 1");
	return TFS_E_OK;
}

/* JSON strings come back as UTF-8; the renderer wrote bytes that were not
 * UTF-8 as \u0080..\u00ff. Types other than STRING_UTF8 take a string of
 * only such code points as those bytes (so CHAR's default fill 0x80 round
 * trips); anything else stays UTF-8. */
static enum tfs_err string_bytes(const char *s, size_t len, uint8_t type,
				 struct tfs_buf *out)
{
	const uint8_t *p = (const uint8_t *)s;
	bool latin1 = type != TFS_STRING_UTF8;

	for (size_t i = 0; latin1 && i < len; i++) {
		if (p[i] < 0x80)
			continue;
		if ((p[i] == 0xc2 || p[i] == 0xc3) && i + 1 < len &&
		    (p[i + 1] & 0xc0) == 0x80)
			i++;
		else
			latin1 = false;
	}
	if (!latin1)
		return tfs_buf_append(out, p, len);
	for (size_t i = 0; i < len; i++) {
		uint8_t c = p[i];

		if (c >= 0x80) {
			c = (uint8_t)(((c & 0x03) << 6) | (p[i + 1] & 0x3f));
			i++;
		}
		if (tfs_buf_append_u8(out, c))
			return TFS_E_NOMEM;
	}
	return TFS_E_OK;
}

/* A whole cell (a fill value): a string, hex for byte types, a number
 * for one value, an array of numbers for several. */
enum tfs_err tfs__json_get_cell(json_object *v, uint8_t type, bool var,
				uint32_t cell_val_num, const struct jpath *jp,
				struct tfs_buf *out, struct tfs_diag *d)
{
	size_t size = tfs_datatype_size(type);
	enum tfs_err e;

	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_STRING:
		if (!json_object_is_type(v, json_type_string))
			return FAIL(d, jp, "a string expected");
		if (string_bytes(json_object_get_string(v),
				 (size_t)json_object_get_string_len(v), type, out))
			return TFS_E_NOMEM;
		break;
	case TFS_CLASS_BYTES: {
		const char *why;

		if (!json_object_is_type(v, json_type_string))
			return FAIL(d, jp, "a hex string expected");
		if (tfs__cell_parse(type, TFS_VAR_NUM,
				    (const uint8_t *)json_object_get_string(v),
				    (size_t)json_object_get_string_len(v), out, &why))
			return FAIL(d, jp, "%s", why);
		break;
	}
	default:
		if (json_object_is_type(v, json_type_array)) {
			size_t n = json_object_array_length(v);

			for (size_t i = 0; i < n; i++) {
				struct jpath ip;

				tfs__json_jpath_index(&ip, jp, i);
				if (tfs_buf_reserve(out, size))
					return TFS_E_NOMEM;
				if ((e = tfs__json_get_value(json_object_array_get_idx(v, i), type,
							     &ip, out->data + out->len, d)))
					return e;
				out->len += size;
			}
		} else {
			if (tfs_buf_reserve(out, size))
				return TFS_E_NOMEM;
			if ((e = tfs__json_get_value(v, type, jp, out->data + out->len, d)))
				return e;
			out->len += size;
		}
	}
	if (var ? out->len % size != 0 || out->len == 0
		: out->len != size * (size_t)cell_val_num)
		return FAIL(d, jp, "%zu bytes do not make a cell of %s",
			    out->len, var ? "var-size values" : "cell_val_num values");
	return TFS_E_OK;
}

/* "NAME" or "NAME(key=value,...)" as tfs_filter_describe writes it. */
/* The filter type of the name text[0..nlen), or -1. */
static int filter_type_by_name(const char *text, size_t nlen)
{
	int type = -1;

	for (unsigned t = 0; t <= TFS_FILTER_DELTA; t++) {
		const char *n = tfs_filter_name(t);

		if (n && strlen(n) == nlen && strncmp(n, text, nlen) == 0)
			type = (int)t;
	}
	return type;
}

/* One key=value option of a filter into f; false when the key is unknown
 * or the value is not one it takes. */
static bool set_filter_option(struct tfs_filter *f, const char *key,
			      const char *val, size_t vlen)
{
	const uint8_t *vp = (const uint8_t *)val;
	const char *why;
	int32_t i32;
	uint32_t u32;
	uint64_t u64;
	double dv;
	float fv;

	if (strcmp(key, "level") == 0) {
		if (tfs__value_parse(TFS_INT32, vp, vlen, &i32, &why))
			return false;
		f->level = i32;
	} else if (strcmp(key, "reinterpret") == 0) {
		int t = datatype_by_name(val);

		if (t < 0)
			return false;
		f->reinterpret = (uint8_t)t;
		f->has_reinterpret = true;
	} else if (strcmp(key, "max_window") == 0) {
		if (tfs__value_parse(TFS_UINT32, vp, vlen, &u32, &why))
			return false;
		f->max_window = u32;
	} else if (strcmp(key, "bytewidth") == 0) {
		if (tfs__value_parse(TFS_UINT64, vp, vlen, &u64, &why))
			return false;
		f->byte_width = u64;
	} else if (strcmp(key, "factor") == 0 || strcmp(key, "offset") == 0) {
		if (tfs__value_parse(TFS_FLOAT64, vp, vlen, &dv, &why))
			return false;
		*(key[0] == 'f' ? &f->scale : &f->offset) = dv;
	} else if (strcmp(key, "quality") == 0) {
		if (tfs__value_parse(TFS_FLOAT32, vp, vlen, &fv, &why))
			return false;
		f->webp_quality = fv;
	} else if (strcmp(key, "format") == 0) {
		static const char *const names[] = {"NONE", "RGB", "BGR", "RGBA",
						    "BGRA"};
		int k = -1;

		for (int j = 0; j < 5; j++)
			if (strcmp(val, names[j]) == 0)
				k = j;
		if (k < 0)
			return false;
		f->webp_format = (uint8_t)k;
	} else if (strcmp(key, "lossless") == 0) {
		if (tfs__value_parse(TFS_UINT8, vp, vlen, &f->webp_lossless, &why) ||
		    f->webp_lossless > 1)
			return false;
	} else {
		return false;
	}
	return true;
}

static enum tfs_err parse_filter(const char *text, const struct jpath *jp,
				 struct tfs_filter *f, struct tfs_diag *d)
{
	const char *open = strchr(text, '(');
	size_t nlen = open ? (size_t)(open - text) : strlen(text);
	int type = filter_type_by_name(text, nlen);

	if (type < 0 || type == TFS_FILTER_NONE || type == TFS_FILTER_AES256GCM) {
		char name[64];

		return FAIL(d, jp, "unknown filter '%s'",
			    tfs__msg_text(name, sizeof(name), text, nlen));
	}
	tfs_filter_init(f, (enum tfs_filter_type)type);
	if (!open)
		return TFS_E_OK;
	const char *p = open + 1;

	for (;;) {
		const char *eq = strchr(p, '='), *end;
		char key[32], val[64];
		size_t klen, vlen;

		if (!eq)
			goto bad;
		end = eq + strcspn(eq, ",)");
		klen = (size_t)(eq - p);
		vlen = (size_t)(end - eq - 1);
		if (!*end || klen >= sizeof(key) || vlen >= sizeof(val) || vlen == 0)
			goto bad;
		memcpy(key, p, klen);
		key[klen] = '\0';
		memcpy(val, eq + 1, vlen);
		val[vlen] = '\0';
		if (!set_filter_option(f, key, val, vlen))
			goto bad;
		if (*end == ')')
			return end[1] ? FAIL(d, jp, "text after the filter's ')'") : TFS_E_OK;
		p = end + 1;
	}
bad: {
	char shown[96];

	return FAIL(d, jp, "bad filter '%s'",
		    tfs__msg_text(shown, sizeof(shown), text, strlen(text)));
}
}

/* A filter list; missing: dflt. */
enum tfs_err tfs__json_get_filters(json_object *obj, const char *key,
				   const struct tfs_pipeline *dflt,
				   const struct jpath *jp, struct tfs_pipeline *out,
				   bool *given, struct tfs_diag *d)
{
	json_object *v = tfs__json_member(obj, key);
	struct jpath kp;
	uint32_t chunk = dflt->max_chunk_size;

	tfs__json_jpath_key(&kp, jp, key);
	if (given)
		*given = v != NULL;
	if (!v) {
		*out = *dflt;
		return TFS_E_OK;
	}
	tfs_pipeline_init(out);
	out->max_chunk_size = chunk;
	if (!json_object_is_type(v, json_type_array))
		return FAIL(d, &kp, "a list of filters expected");
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *fv = json_object_array_get_idx(v, i);
		struct jpath ip;
		struct tfs_filter f;
		enum tfs_err e;

		tfs__json_jpath_index(&ip, &kp, i);
		if (!fv || !json_object_is_type(fv, json_type_string))
			return FAIL(d, &ip, "a filter string expected");
		if ((e = parse_filter(json_object_get_string(fv), &ip, &f, d)))
			return e;
		if (tfs_pipeline_add(out, &f))
			return FAIL(d, &ip, "more than %d filters", TFS_MAX_FILTERS);
	}
	return TFS_E_OK;
}

enum tfs_err tfs__json_get_chunk(json_object *obj, const char *key,
				 const struct jpath *jp, struct tfs_pipeline *p,
				 struct tfs_diag *d)
{
	json_object *v = tfs__json_member(obj, key);
	struct jpath kp;
	uint64_t u;
	enum tfs_err e;

	if (!v)
		return TFS_E_OK;
	tfs__json_jpath_key(&kp, jp, key);
	if ((e = tfs__json_get_u64(v, &kp, UINT32_MAX, &u, d)))
		return e;
	p->max_chunk_size = (uint32_t)u;
	return TFS_E_OK;
}
