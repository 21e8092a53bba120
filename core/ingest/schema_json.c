/* Schema JSON in, the shape tilefs shows as schema.json and `tfs dump`
 * prints (tools/array_json.c, the corpus conventions): either the whole
 * document ({"array_type", "format_version", "schema": {...}}) or the
 * schema object with "array_type" beside its keys. Parsed with json-c;
 * values are read back from their JSON text with the CSV value parser,
 * so floats round exactly and integers are range-checked by type.
 * Missing optional parts get TileDB's defaults (capacity 10000, row-major
 * orders, ZSTD coordinates and offsets, RLE validity, chunks of 64 KiB).
 * The result is checked by serializing it and parsing it back with the
 * format module, which applies every rule a stored schema must meet. */
#include "ingest_internal.h"

#include <json-c/json.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"
#include "tilefs/tilefs.h"

#define DEFAULT_CAPACITY 10000
#define DEFAULT_CHUNK 65536
#define MAX_CELL_SIZE ((uint64_t)1 << 24)

/* A JSON path for messages, "$.attrs[2].fill". */
struct jpath {
	char text[160];
};

static void jpath_key(struct jpath *out, const struct jpath *in, const char *key)
{
	/* A path too long for messages is cut short. */
	if (snprintf(out->text, sizeof(out->text), "%s.%s", in->text, key) < 0)
		out->text[0] = '\0';
}

static void jpath_index(struct jpath *out, const struct jpath *in, size_t i)
{
	if (snprintf(out->text, sizeof(out->text), "%s[%zu]", in->text, i) < 0)
		out->text[0] = '\0';
}

#define FAIL(d, jp, ...) json_fail(d, jp, __VA_ARGS__)

static enum tfs_err json_fail(struct tfs_diag *d, const struct jpath *jp,
			      const char *fmt, ...) TFS_PRINTF(3, 4);

static enum tfs_err json_fail(struct tfs_diag *d, const struct jpath *jp,
			      const char *fmt, ...)
{
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return tfs_fail(d, TFS_E_INVALID, "schema JSON: %s: %s", jp->text, why);
}

/* The member called key; NULL when missing or null. */
static json_object *member(json_object *obj, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

static enum tfs_err get_string(json_object *obj, const char *key, bool required,
			       const struct jpath *jp, const char **out,
			       struct tfs_diag *d)
{
	json_object *v = member(obj, key);
	struct jpath kp;

	jpath_key(&kp, jp, key);
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

static enum tfs_err get_bool(json_object *obj, const char *key, bool dflt,
			     const struct jpath *jp, bool *out, struct tfs_diag *d)
{
	json_object *v = member(obj, key);
	struct jpath kp;

	*out = dflt;
	if (!v)
		return TFS_E_OK;
	jpath_key(&kp, jp, key);
	if (!json_object_is_type(v, json_type_boolean))
		return FAIL(d, &kp, "true or false expected");
	*out = json_object_get_boolean(v);
	return TFS_E_OK;
}

static enum tfs_err get_u64(json_object *v, const struct jpath *jp, uint64_t max,
			    uint64_t *out, struct tfs_diag *d)
{
	const char *text;
	uint64_t u;
	const char *why;

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

static enum tfs_err get_type(json_object *obj, const struct jpath *jp, uint8_t *out,
			     struct tfs_diag *d)
{
	const char *name;
	struct jpath kp;
	enum tfs_err e;
	int t;

	if ((e = get_string(obj, "type", true, jp, &name, d)))
		return e;
	jpath_key(&kp, jp, "type");
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
static enum tfs_err get_value(json_object *v, uint8_t type, const struct jpath *jp,
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
static enum tfs_err get_cell(json_object *v, uint8_t type, bool var,
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

				jpath_index(&ip, jp, i);
				if (tfs_buf_reserve(out, size))
					return TFS_E_NOMEM;
				if ((e = get_value(json_object_array_get_idx(v, i), type,
						   &ip, out->data + out->len, d)))
					return e;
				out->len += size;
			}
		} else {
			if (tfs_buf_reserve(out, size))
				return TFS_E_NOMEM;
			if ((e = get_value(v, type, jp, out->data + out->len, d)))
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
static enum tfs_err parse_filter(const char *text, const struct jpath *jp,
				 struct tfs_filter *f, struct tfs_diag *d)
{
	const char *open = strchr(text, '(');
	size_t nlen = open ? (size_t)(open - text) : strlen(text);
	int type = -1;

	for (unsigned t = 0; t <= TFS_FILTER_DELTA; t++) {
		const char *n = tfs_filter_name(t);

		if (n && strlen(n) == nlen && strncmp(n, text, nlen) == 0)
			type = (int)t;
	}
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

		const uint8_t *vp = (const uint8_t *)val;
		const char *why;
		int32_t i32;
		uint32_t u32;
		uint64_t u64;
		double dv;
		float fv;

		if (strcmp(key, "level") == 0) {
			if (tfs__value_parse(TFS_INT32, vp, vlen, &i32, &why))
				goto bad;
			f->level = i32;
		} else if (strcmp(key, "reinterpret") == 0) {
			int t = datatype_by_name(val);

			if (t < 0)
				goto bad;
			f->reinterpret = (uint8_t)t;
			f->has_reinterpret = true;
		} else if (strcmp(key, "max_window") == 0) {
			if (tfs__value_parse(TFS_UINT32, vp, vlen, &u32, &why))
				goto bad;
			f->max_window = u32;
		} else if (strcmp(key, "bytewidth") == 0) {
			if (tfs__value_parse(TFS_UINT64, vp, vlen, &u64, &why))
				goto bad;
			f->byte_width = u64;
		} else if (strcmp(key, "factor") == 0 || strcmp(key, "offset") == 0) {
			if (tfs__value_parse(TFS_FLOAT64, vp, vlen, &dv, &why))
				goto bad;
			*(key[0] == 'f' ? &f->scale : &f->offset) = dv;
		} else if (strcmp(key, "quality") == 0) {
			if (tfs__value_parse(TFS_FLOAT32, vp, vlen, &fv, &why))
				goto bad;
			f->webp_quality = fv;
		} else if (strcmp(key, "format") == 0) {
			static const char *const names[] = {"NONE", "RGB", "BGR", "RGBA",
							    "BGRA"};
			int k = -1;

			for (int j = 0; j < 5; j++)
				if (strcmp(val, names[j]) == 0)
					k = j;
			if (k < 0)
				goto bad;
			f->webp_format = (uint8_t)k;
		} else if (strcmp(key, "lossless") == 0) {
			if (tfs__value_parse(TFS_UINT8, vp, vlen, &f->webp_lossless, &why) ||
			    f->webp_lossless > 1)
				goto bad;
		} else {
			goto bad;
		}
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
static enum tfs_err get_filters(json_object *obj, const char *key,
				const struct tfs_pipeline *dflt,
				const struct jpath *jp, struct tfs_pipeline *out,
				bool *given, struct tfs_diag *d)
{
	json_object *v = member(obj, key);
	struct jpath kp;
	uint32_t chunk = dflt->max_chunk_size;

	jpath_key(&kp, jp, key);
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

		jpath_index(&ip, &kp, i);
		if (!fv || !json_object_is_type(fv, json_type_string))
			return FAIL(d, &ip, "a filter string expected");
		if ((e = parse_filter(json_object_get_string(fv), &ip, &f, d)))
			return e;
		if (tfs_pipeline_add(out, &f))
			return FAIL(d, &ip, "more than %d filters", TFS_MAX_FILTERS);
	}
	return TFS_E_OK;
}

static enum tfs_err get_chunk(json_object *obj, const char *key,
			      const struct jpath *jp, struct tfs_pipeline *p,
			      struct tfs_diag *d)
{
	json_object *v = member(obj, key);
	struct jpath kp;
	uint64_t u;
	enum tfs_err e;

	if (!v)
		return TFS_E_OK;
	jpath_key(&kp, jp, key);
	if ((e = get_u64(v, &kp, UINT32_MAX, &u, d)))
		return e;
	p->max_chunk_size = (uint32_t)u;
	return TFS_E_OK;
}

static bool is_string_type(uint8_t type)
{
	return tfs_datatype_class(type) == TFS_CLASS_STRING;
}

static enum tfs_err get_dim(json_object *v, const struct jpath *jp,
			    const struct tfs_pipeline *coords, struct tfs_dim *dim,
			    struct tfs_diag *d)
{
	const char *name;
	json_object *dom, *tile;
	struct jpath kp;
	bool given;
	enum tfs_err e;

	if (!json_object_is_type(v, json_type_object))
		return FAIL(d, jp, "an object expected");
	if ((e = get_string(v, "name", true, jp, &name, d)))
		return e;
	if (!(dim->name = tfs_strdup(name)))
		return TFS_E_NOMEM;
	if ((e = get_type(v, jp, &dim->type, d)))
		return e;
	if ((e = get_bool(v, "var", is_string_type(dim->type), jp, &dim->var, d)))
		return e;
	dim->cell_val_num = dim->var ? TFS_VAR_NUM : 1;
	if ((e = get_filters(v, "filters", coords, jp, &dim->filters, &given, d)) ||
	    (e = get_chunk(v, "max_chunk_size", jp, &dim->filters, d)))
		return e;
	/* A list equal to the coordinates' is the inherited one, as TileDB
	 * stores a dimension created without filters. */
	dim->stored_max_chunk = dim->filters.max_chunk_size;
	if (dim->filters.count == coords->count &&
	    memcmp(dim->filters.filters, coords->filters,
		   coords->count * sizeof(coords->filters[0])) == 0 &&
	    dim->filters.max_chunk_size == coords->max_chunk_size) {
		dim->filters_inherited = true;
		dim->stored_max_chunk = DEFAULT_CHUNK;
	}
	dom = member(v, "domain");
	jpath_key(&kp, jp, "domain");
	if (dom) {
		if (dim->var)
			return FAIL(d, &kp, "a var-size dimension has no domain");
		if (!json_object_is_type(dom, json_type_array) ||
		    json_object_array_length(dom) != 2)
			return FAIL(d, &kp, "[lo, hi] expected");
		for (size_t i = 0; i < 2; i++) {
			struct jpath ip;

			jpath_index(&ip, &kp, i);
			if ((e = get_value(json_object_array_get_idx(dom, i), dim->type,
					   &ip, dim->domain[i], d)))
				return e;
		}
		dim->has_domain = true;
	} else if (!dim->var) {
		return FAIL(d, &kp, "missing");
	}
	tile = member(v, "tile");
	if (tile) {
		jpath_key(&kp, jp, "tile");
		if (dim->var)
			return FAIL(d, &kp, "a var-size dimension has no tile extent");
		if ((e = get_value(tile, dim->type, &kp, dim->extent, d)))
			return e;
		dim->has_extent = true;
	}
	return TFS_E_OK;
}

static enum tfs_err get_attr(json_object *v, const struct jpath *jp,
			     struct tfs_attr *at, struct tfs_diag *d)
{
	const char *name;
	json_object *cvn, *fill;
	struct jpath kp;
	struct tfs_pipeline none;
	bool fill_valid;
	enum tfs_err e;

	if (!json_object_is_type(v, json_type_object))
		return FAIL(d, jp, "an object expected");
	if ((e = get_string(v, "name", true, jp, &name, d)))
		return e;
	if (!(at->name = tfs_strdup(name)))
		return TFS_E_NOMEM;
	if ((e = get_type(v, jp, &at->type, d)))
		return e;
	at->cell_val_num = 1;
	cvn = member(v, "cell_val_num");
	if (cvn) {
		jpath_key(&kp, jp, "cell_val_num");
		if (json_object_is_type(cvn, json_type_string)) {
			if (strcmp(json_object_get_string(cvn), "var") != 0)
				return FAIL(d, &kp, "a count or \"var\" expected");
			at->cell_val_num = TFS_VAR_NUM;
			at->var = true;
		} else {
			uint64_t n;

			if ((e = get_u64(cvn, &kp, UINT32_MAX - 1, &n, d)))
				return e;
			if (n == 0)
				return FAIL(d, &kp, "at least 1");
			/* The format module's bound: a fill of that size is
			 * built in memory. */
			if (n * tfs_datatype_size(at->type) > MAX_CELL_SIZE)
				return FAIL(d, &kp, "a cell of %" PRIu64 " values of %s is too large",
					    n, tfs_datatype_name(at->type));
			at->cell_val_num = (uint32_t)n;
		}
	}
	if ((e = get_bool(v, "nullable", false, jp, &at->nullable, d)) ||
	    (e = get_bool(v, "fill_valid", false, jp, &fill_valid, d)))
		return e;
	at->fill_valid = fill_valid;
	tfs_pipeline_init(&none);
	if ((e = get_filters(v, "filters", &none, jp, &at->filters, NULL, d)) ||
	    (e = get_chunk(v, "max_chunk_size", jp, &at->filters, d)))
		return e;
	if (member(v, "enumeration")) {
		jpath_key(&kp, jp, "enumeration");
		return FAIL(d, &kp, "enumerations are not supported in schema JSON");
	}
	fill = member(v, "fill");
	if (fill) {
		struct tfs_buf b;

		jpath_key(&kp, jp, "fill");
		tfs_buf_init(&b, (size_t)MAX_CELL_SIZE);
		e = get_cell(fill, at->type, at->var, at->cell_val_num, &kp, &b, d);
		if (e) {
			tfs_buf_release(&b);
			return e;
		}
		at->fill_size = b.len;
		at->fill = tfs_buf_detach(&b, NULL);
		if (!at->fill)
			return TFS_E_NOMEM;
	} else {
		size_t size = tfs_datatype_size(at->type);
		uint32_t n = at->var ? 1 : at->cell_val_num;

		at->fill_size = (uint64_t)size * n;
		if (!(at->fill = tfs_mallocn(n, size)))
			return TFS_E_NOMEM;
		for (uint32_t i = 0; i < n; i++)
			tfs_datatype_default_fill(at->type, at->fill + (size_t)i * size);
	}
	return TFS_E_OK;
}

static enum tfs_err get_layout(json_object *obj, const char *key,
			       const struct jpath *jp, uint8_t *out,
			       struct tfs_diag *d)
{
	static const char *const names[] = {"row-major", "col-major", "global-order",
					    "unordered", "hilbert"};
	const char *name;
	struct jpath kp;
	enum tfs_err e;

	*out = TFS_ROW_MAJOR;
	if ((e = get_string(obj, key, false, jp, &name, d)) || !name)
		return e;
	for (uint8_t i = 0; i < 5; i++) {
		if (strcmp(name, names[i]) == 0) {
			*out = i;
			return TFS_E_OK;
		}
	}
	jpath_key(&kp, jp, key);
	char text[64];

	return FAIL(d, &kp, "unknown layout '%s'",
		    tfs__msg_text(text, sizeof(text), name, strlen(name)));
}

static enum tfs_err get_current_domain(json_object *v, const struct jpath *jp,
				       struct tfs_schema *s, struct tfs_diag *d)
{
	struct tfs_buf bytes;
	uint64_t (*lens)[2];
	enum tfs_err e = TFS_E_OK;

	if (!json_object_is_type(v, json_type_array) ||
	    json_object_array_length(v) != s->dim_num)
		return FAIL(d, jp, "one [lo, hi] per dimension expected");
	lens = tfs_callocn(s->dim_num, sizeof(*lens));
	s->current_domain = tfs_callocn(s->dim_num, sizeof(*s->current_domain));
	if (!lens || !s->current_domain) {
		tfs_free(lens);
		return TFS_E_NOMEM;
	}
	tfs_buf_init(&bytes, TFS_BUF_NO_MAX);
	for (uint32_t k = 0; k < s->dim_num && !e; k++) {
		json_object *r = json_object_array_get_idx(v, k);
		const struct tfs_dim *dim = &s->dims[k];
		struct jpath ip;

		jpath_index(&ip, jp, k);
		if (!r || !json_object_is_type(r, json_type_array) ||
		    json_object_array_length(r) != 2) {
			e = FAIL(d, &ip, "[lo, hi] expected");
			break;
		}
		for (size_t i = 0; i < 2 && !e; i++) {
			json_object *x = json_object_array_get_idx(r, i);
			size_t at = bytes.len;
			struct jpath xp;

			jpath_index(&xp, &ip, i);
			if (dim->var) {
				if (!x || !json_object_is_type(x, json_type_string))
					e = FAIL(d, &xp, "a string expected");
				else if (tfs_buf_append(&bytes, json_object_get_string(x),
							(size_t)json_object_get_string_len(x)))
					e = TFS_E_NOMEM;
			} else if (tfs_buf_reserve(&bytes, 8)) {
				e = TFS_E_NOMEM;
			} else if (!(e = get_value(x, dim->type, &xp, bytes.data + at, d))) {
				bytes.len += tfs_datatype_size(dim->type);
			}
			lens[k][i] = bytes.len - at;
		}
	}
	if (!e) {
		size_t off = 0;

		s->current_domain_bytes = tfs_buf_detach(&bytes, NULL);
		for (uint32_t k = 0; k < s->dim_num; k++) {
			s->current_domain[k].lo = s->current_domain_bytes + off;
			s->current_domain[k].lo_len = lens[k][0];
			off += lens[k][0];
			s->current_domain[k].hi = s->current_domain_bytes + off;
			s->current_domain[k].hi_len = lens[k][1];
			off += lens[k][1];
		}
		s->has_current_domain = true;
	}
	tfs_buf_release(&bytes);
	tfs_free(lens);
	return e;
}

static enum tfs_err build(json_object *top, struct tfs_schema *s, struct tfs_diag *d)
{
	struct jpath root = {"$"}, sp, kp;
	json_object *so = member(top, "schema"), *v, *dims, *attrs;
	const char *atype;
	struct tfs_pipeline dflt;
	struct tfs_filter zstd, rle;
	uint64_t u;
	enum tfs_err e;

	if (!json_object_is_type(top, json_type_object))
		return FAIL(d, &root, "an object expected");
	if (so) {
		if (!json_object_is_type(so, json_type_object))
			return FAIL(d, &root, ".schema: an object expected");
		jpath_key(&sp, &root, "schema");
	} else {
		so = top;
		sp = root;
	}
	/* array_type beside the schema (schema.json) or inside it. */
	if ((e = get_string(top, "array_type", false, &root, &atype, d)))
		return e;
	if (!atype && (e = get_string(so, "array_type", true, &sp, &atype, d)))
		return e;
	if (strcmp(atype, "dense") == 0)
		s->array_type = TFS_DENSE;
	else if (strcmp(atype, "sparse") == 0)
		s->array_type = TFS_SPARSE;
	else {
		jpath_key(&kp, &root, "array_type");
		return FAIL(d, &kp, "\"dense\" or \"sparse\" expected");
	}
	s->version = TFS_FORMAT_VERSION_WRITE;
	if ((v = member(top, "format_version")) || (v = member(so, "format_version"))) {
		jpath_key(&kp, &root, "format_version");
		if ((e = get_u64(v, &kp, TFS_FORMAT_VERSION_MAX, &u, d)))
			return e;
		if (u < 1)
			return FAIL(d, &kp, "a format version is 1 to %d",
				    TFS_FORMAT_VERSION_MAX);
		s->version = (uint32_t)u;
	}
	if ((e = get_layout(so, "cell_order", &sp, &s->cell_order, d)) ||
	    (e = get_layout(so, "tile_order", &sp, &s->tile_order, d)) ||
	    (e = get_bool(so, "allows_dups", false, &sp, &s->allows_dups, d)))
		return e;
	s->capacity = DEFAULT_CAPACITY;
	if ((v = member(so, "capacity"))) {
		jpath_key(&kp, &sp, "capacity");
		if ((e = get_u64(v, &kp, UINT64_MAX, &s->capacity, d)))
			return e;
	}
	/* TileDB's default lists. */
	tfs_filter_init(&zstd, TFS_FILTER_ZSTD);
	tfs_filter_init(&rle, TFS_FILTER_RLE);
	tfs_pipeline_init(&dflt);
	if (tfs_pipeline_add(&dflt, &zstd))
		return TFS_E_INTERNAL;
	if ((e = get_filters(so, "coords_filters", &dflt, &sp, &s->coords_filters, NULL, d)) ||
	    (e = get_filters(so, "offsets_filters", &dflt, &sp, &s->offsets_filters, NULL, d)))
		return e;
	tfs_pipeline_init(&dflt);
	if (tfs_pipeline_add(&dflt, &rle))
		return TFS_E_INTERNAL;
	if ((e = get_filters(so, "validity_filters", &dflt, &sp, &s->validity_filters,
			     NULL, d)))
		return e;
	if ((v = member(so, "max_chunk_sizes"))) {
		jpath_key(&kp, &sp, "max_chunk_sizes");
		if (!json_object_is_type(v, json_type_object))
			return FAIL(d, &kp, "an object expected");
		if ((e = get_chunk(v, "coords", &kp, &s->coords_filters, d)) ||
		    (e = get_chunk(v, "offsets", &kp, &s->offsets_filters, d)) ||
		    (e = get_chunk(v, "validity", &kp, &s->validity_filters, d)))
			return e;
	}
	dims = member(so, "dims");
	jpath_key(&kp, &sp, "dims");
	if (!dims || !json_object_is_type(dims, json_type_array) ||
	    json_object_array_length(dims) == 0)
		return FAIL(d, &kp, "a list of dimensions expected");
	if (json_object_array_length(dims) > 128)
		return FAIL(d, &kp, "more than 128 dimensions");
	s->dims = tfs_callocn(json_object_array_length(dims), sizeof(*s->dims));
	if (!s->dims)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < json_object_array_length(dims); i++) {
		struct jpath ip;

		jpath_index(&ip, &kp, i);
		s->dim_num++;
		if ((e = get_dim(json_object_array_get_idx(dims, i), &ip,
				 &s->coords_filters, &s->dims[i], d)))
			return e;
	}
	attrs = member(so, "attrs");
	jpath_key(&kp, &sp, "attrs");
	if (!attrs || !json_object_is_type(attrs, json_type_array))
		return FAIL(d, &kp, "a list of attributes expected");
	if (json_object_array_length(attrs) > 100000)
		return FAIL(d, &kp, "too many attributes");
	s->attrs = tfs_callocn(json_object_array_length(attrs) + 1, sizeof(*s->attrs));
	if (!s->attrs)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < json_object_array_length(attrs); i++) {
		struct jpath ip;

		jpath_index(&ip, &kp, i);
		s->attr_num++;
		if ((e = get_attr(json_object_array_get_idx(attrs, i), &ip, &s->attrs[i], d)))
			return e;
	}
	if ((v = member(so, "enumerations")) && (!json_object_is_type(v, json_type_array) ||
						json_object_array_length(v) > 0)) {
		jpath_key(&kp, &sp, "enumerations");
		return FAIL(d, &kp, "enumerations are not supported in schema JSON");
	}
	if ((v = member(so, "dimension_labels")) &&
	    (!json_object_is_type(v, json_type_array) || json_object_array_length(v) > 0)) {
		jpath_key(&kp, &sp, "dimension_labels");
		return FAIL(d, &kp, "dimension labels are not supported in schema JSON");
	}
	if ((v = member(so, "current_domain"))) {
		jpath_key(&kp, &sp, "current_domain");
		if ((e = get_current_domain(v, &kp, s, d)))
			return e;
	}
	if ((v = member(so, "timestamp_range"))) {
		struct jpath ip;

		jpath_key(&kp, &sp, "timestamp_range");
		if (!json_object_is_type(v, json_type_array) ||
		    json_object_array_length(v) != 2)
			return FAIL(d, &kp, "[t1, t2] expected");
		jpath_index(&ip, &kp, 0);
		if ((e = get_u64(json_object_array_get_idx(v, 0), &ip, UINT64_MAX, &s->t1, d)))
			return e;
		jpath_index(&ip, &kp, 1);
		if ((e = get_u64(json_object_array_get_idx(v, 1), &ip, UINT64_MAX, &s->t2, d)))
			return e;
	}
	return TFS_E_OK;
}

enum tfs_err tfs_schema_from_json(struct tfs_schema *out, const char *json,
				  size_t len, struct tfs_diag *d)
{
	struct json_tokener *tok;
	json_object *top;
	struct tfs_schema s;
	struct tfs_buf bytes;
	struct tfs_diag pd;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if (len > INT32_MAX)
		return tfs_fail(d, TFS_E_TOO_BIG, "schema JSON: larger than 2 GiB");
	if (!(tok = json_tokener_new()))
		return tfs_fail(d, TFS_E_NOMEM, "schema JSON: out of memory");
	top = json_tokener_parse_ex(tok, json, (int)len);
	if (!top || json_tokener_get_parse_end(tok) != len) {
		enum json_tokener_error je = json_tokener_get_error(tok);
		size_t at = json_tokener_get_parse_end(tok);
		size_t line = 1;

		for (size_t i = 0; i < at && i < len; i++)
			line += json[i] == '\n';
		if (top && je == json_tokener_success) {
			/* Trailing whitespace is fine; anything else is not. */
			size_t i = at;

			while (i < len && (json[i] == ' ' || json[i] == '\n' ||
					   json[i] == '\r' || json[i] == '\t'))
				i++;
			if (i == len)
				goto parsed;
		}
		json_object_put(top);
		json_tokener_free(tok);
		return tfs_fail(d, TFS_E_INVALID, "schema JSON: line %zu (byte %zu): %s",
				line, at,
				je == json_tokener_success || je == json_tokener_continue
					? "unexpected end or trailing text"
					: json_tokener_error_desc(je));
	}
parsed:
	json_tokener_free(tok);
	e = build(top, &s, d);
	json_object_put(top);
	if (e == TFS_E_NOMEM)
		tfs_fail(d, e, "schema JSON: out of memory");
	if (e)
		goto out;
	/* Every rule of a stored schema, by storing and reading it back. */
	tfs_buf_init(&bytes, TFS_BUF_NO_MAX);
	tfs_diag_init(&pd);
	if ((e = tfs_schema_serialize(&bytes, &s))) {
		e = e == TFS_E_NOMEM || e == TFS_E_TOO_BIG
			    ? tfs_fail(d, e, "schema JSON: out of memory")
			    : tfs_fail(d, TFS_E_INVALID, "schema JSON: not a valid schema (%s)",
				       tfs_strerror(e));
	} else if ((e = tfs_schema_parse(out, bytes.data, bytes.len, NULL, &pd))) {
		e = tfs_fail(d, e == TFS_E_NOMEM ? e : TFS_E_INVALID, "schema JSON: %s",
			     tfs_diag_msg(&pd));
	} else {
		out->t1 = s.t1;
		out->t2 = s.t2;
	}
	tfs_buf_release(&bytes);
out:
	tfs_schema_release(&s);
	return e;
}
