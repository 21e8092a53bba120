/* Schema JSON in, the shape tilefs shows as schema.json and `tfs dump`
 * prints (tools/array_json.c, the corpus conventions): either the whole
 * document ({"array_type", "format_version", "schema": {...}}) or the
 * schema object with "array_type" beside its keys. Parsed with json-c;
 * values are read back from their JSON text with the CSV value parser,
 * so floats round exactly and integers are range-checked by type.
 * Missing optional parts get TileDB's defaults (capacity 10000, row-major
 * orders, ZSTD coordinates and offsets, RLE validity, chunks of 64 KiB).
 * Enumerations are read with their values, which travel in the schema's
 * map entries to tfs_array_create, and checked as TileDB checks them.
 * The result is checked by serializing it and parsing it back with the
 * format module, which applies every rule a stored schema must meet. */
#include "schema_json_values.h"

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
	if ((e = tfs__json_get_string(v, "name", true, jp, &name, d)))
		return e;
	if (!(dim->name = tfs_strdup(name)))
		return TFS_E_NOMEM;
	if ((e = tfs__json_get_type(v, jp, &dim->type, d)))
		return e;
	if ((e = tfs__json_get_bool(v, "var", is_string_type(dim->type), jp, &dim->var, d)))
		return e;
	dim->cell_val_num = dim->var ? TFS_VAR_NUM : 1;
	if ((e = tfs__json_get_filters(v, "filters", coords, jp, &dim->filters, &given, d)) ||
	    (e = tfs__json_get_chunk(v, "max_chunk_size", jp, &dim->filters, d)))
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
	dom = tfs__json_member(v, "domain");
	tfs__json_jpath_key(&kp, jp, "domain");
	if (dom) {
		if (dim->var)
			return FAIL(d, &kp, "a var-size dimension has no domain");
		if (!json_object_is_type(dom, json_type_array) ||
		    json_object_array_length(dom) != 2)
			return FAIL(d, &kp, "[lo, hi] expected");
		for (size_t i = 0; i < 2; i++) {
			struct jpath ip;

			tfs__json_jpath_index(&ip, &kp, i);
			if ((e = tfs__json_get_value(json_object_array_get_idx(dom, i), dim->type,
						     &ip, dim->domain[i], d)))
				return e;
		}
		dim->has_domain = true;
	} else if (!dim->var) {
		return FAIL(d, &kp, "missing");
	}
	tile = tfs__json_member(v, "tile");
	if (tile) {
		tfs__json_jpath_key(&kp, jp, "tile");
		if (dim->var)
			return FAIL(d, &kp, "a var-size dimension has no tile extent");
		if ((e = tfs__json_get_value(tile, dim->type, &kp, dim->extent, d)))
			return e;
		dim->has_extent = true;
	}
	return TFS_E_OK;
}

/* "cell_val_num" when present: a count (its cells at most MAX_CELL_SIZE
 * bytes; what names them in the message) or "var". */
static enum tfs_err get_cell_val_num(json_object *v, const struct jpath *jp,
				     uint8_t type, const char *what,
				     uint32_t *cell_val_num, bool *var,
				     struct tfs_diag *d)
{
	json_object *cvn = tfs__json_member(v, "cell_val_num");
	struct jpath kp;
	uint64_t n = 0;
	enum tfs_err e;

	if (!cvn)
		return TFS_E_OK;
	tfs__json_jpath_key(&kp, jp, "cell_val_num");
	if (json_object_is_type(cvn, json_type_string)) {
		if (strcmp(json_object_get_string(cvn), "var") != 0)
			return FAIL(d, &kp, "a count or \"var\" expected");
		*cell_val_num = TFS_VAR_NUM;
		*var = true;
		return TFS_E_OK;
	}
	if ((e = tfs__json_get_u64(cvn, &kp, UINT32_MAX - 1, &n, d)))
		return e;
	if (n == 0)
		return FAIL(d, &kp, "at least 1");
	/* The format module's bound: a fill of that size is built in
	 * memory. */
	if (n * tfs_datatype_size(type) > MAX_CELL_SIZE)
		return FAIL(d, &kp, "%s of %" PRIu64 " values of %s is too large",
			    what, n, tfs_datatype_name(type));
	*cell_val_num = (uint32_t)n;
	*var = false;
	return TFS_E_OK;
}

/* The attribute's "fill" cell, or the type's default fill. */
static enum tfs_err get_attr_fill(json_object *v, const struct jpath *jp,
				  struct tfs_attr *at, struct tfs_diag *d)
{
	json_object *fill = tfs__json_member(v, "fill");
	struct jpath kp;
	enum tfs_err e;

	if (fill) {
		struct tfs_buf b;

		tfs__json_jpath_key(&kp, jp, "fill");
		tfs_buf_init(&b, (size_t)MAX_CELL_SIZE);
		e = tfs__json_get_cell(fill, at->type, at->var, at->cell_val_num, &kp, &b, d);
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

static enum tfs_err get_attr(json_object *v, const struct jpath *jp,
			     struct tfs_attr *at, struct tfs_diag *d)
{
	const char *name;
	json_object *en;
	struct jpath kp;
	struct tfs_pipeline none;
	bool fill_valid;
	enum tfs_err e;

	if (!json_object_is_type(v, json_type_object))
		return FAIL(d, jp, "an object expected");
	if ((e = tfs__json_get_string(v, "name", true, jp, &name, d)))
		return e;
	if (!(at->name = tfs_strdup(name)))
		return TFS_E_NOMEM;
	if ((e = tfs__json_get_type(v, jp, &at->type, d)))
		return e;
	at->cell_val_num = 1;
	if ((e = get_cell_val_num(v, jp, at->type, "a cell", &at->cell_val_num,
				  &at->var, d)))
		return e;
	if ((e = tfs__json_get_bool(v, "nullable", false, jp, &at->nullable, d)) ||
	    (e = tfs__json_get_bool(v, "fill_valid", false, jp, &fill_valid, d)))
		return e;
	at->fill_valid = fill_valid;
	tfs_pipeline_init(&none);
	if ((e = tfs__json_get_filters(v, "filters", &none, jp, &at->filters, NULL, d)) ||
	    (e = tfs__json_get_chunk(v, "max_chunk_size", jp, &at->filters, d)))
		return e;
	if ((en = tfs__json_member(v, "enumeration"))) {
		tfs__json_jpath_key(&kp, jp, "enumeration");
		if (!json_object_is_type(en, json_type_string))
			return FAIL(d, &kp, "the name of an enumeration or null expected");
		if (!(at->enumeration = tfs_strdup(json_object_get_string(en))))
			return TFS_E_NOMEM;
	}
	return get_attr_fill(v, jp, at, d);
}

/* The enumeration's "values": each a cell of its type, packed into
 * en->data (and en->offsets when var-size). */
static enum tfs_err get_enum_values(json_object *vals, const struct jpath *kp,
				    bool var, struct tfs_enumeration *en,
				    struct tfs_diag *d)
{
	struct tfs_buf data, offsets, cell;
	size_t n = json_object_array_length(vals);
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&data, TFS_BUF_NO_MAX);
	tfs_buf_init(&offsets, TFS_BUF_NO_MAX);
	tfs_buf_init(&cell, (size_t)MAX_CELL_SIZE);
	for (size_t i = 0; i < n && !e; i++) {
		json_object *x = json_object_array_get_idx(vals, i);
		enum tfs_type_class cls = tfs_datatype_class(en->type);
		struct jpath ip;

		tfs__json_jpath_index(&ip, kp, i);
		cell.len = 0;
		if (!x) {
			e = FAIL(d, &ip, "a value expected, not null");
		} else if (var && (cls == TFS_CLASS_STRING || cls == TFS_CLASS_BYTES) &&
			   json_object_is_type(x, json_type_string) &&
			   json_object_get_string_len(x) == 0) {
			/* An empty value, which TileDB allows in var-size
			 * enumerations. */
		} else {
			e = tfs__json_get_cell(x, en->type, var, en->cell_val_num, &ip, &cell, d);
		}
		if (!e && var && tfs_buf_append_u64(&offsets, data.len))
			e = TFS_E_NOMEM;
		if (!e && tfs_buf_append(&data, cell.data, cell.len))
			e = TFS_E_NOMEM;
	}
	if (!e) {
		en->value_num = n;
		en->data_size = data.len;
		en->data = tfs_memdup(data.data, data.len);
		if (!en->data)
			e = TFS_E_NOMEM;
		if (!e && var) {
			en->offsets = tfs_mallocn(n ? n : 1, sizeof(uint64_t));
			if (!en->offsets)
				e = TFS_E_NOMEM;
			else if (n)
				memcpy(en->offsets, offsets.data, n * sizeof(uint64_t));
		}
	}
	tfs_buf_release(&data);
	tfs_buf_release(&offsets);
	tfs_buf_release(&cell);
	return e;
}

/* One entry of "enumerations" as tools/array_json.c renders it: name,
 * type, cell_val_num (a count or "var"; missing: "var" for strings, else
 * 1), ordered (missing: false) and values, each a cell of the type as
 * attribute fill values are written ("" is an empty var-size value). */
static enum tfs_err get_enumeration(json_object *v, const struct jpath *jp,
				    struct tfs_enumeration *en, struct tfs_diag *d)
{
	const char *name;
	json_object *vals;
	struct jpath kp;
	bool var;
	enum tfs_err e;

	if (!json_object_is_type(v, json_type_object))
		return FAIL(d, jp, "an object expected");
	if ((e = tfs__json_get_string(v, "name", true, jp, &name, d)))
		return e;
	if (!name[0] || strchr(name, '/')) {
		tfs__json_jpath_key(&kp, jp, "name");
		return FAIL(d, &kp, "an enumeration name must not be empty or hold '/'");
	}
	if (!(en->name = tfs_strdup(name)))
		return TFS_E_NOMEM;
	if ((e = tfs__json_get_type(v, jp, &en->type, d)))
		return e;
	var = is_string_type(en->type);
	en->cell_val_num = var ? TFS_VAR_NUM : 1;
	if ((e = get_cell_val_num(v, jp, en->type, "a value", &en->cell_val_num,
				  &var, d)))
		return e;
	if ((e = tfs__json_get_bool(v, "ordered", false, jp, &en->ordered, d)))
		return e;
	vals = tfs__json_member(v, "values");
	tfs__json_jpath_key(&kp, jp, "values");
	if (!vals || !json_object_is_type(vals, json_type_array))
		return FAIL(d, &kp, "a list of values expected");
	return get_enum_values(vals, &kp, var, en, d);
}

/* "enumerations" (after the attributes): the list, its names distinct,
 * values distinct, and every attribute that names an enumeration able to
 * index it (TileDB's rules, tfs_enumeration_attr_problem). */
static enum tfs_err get_enumerations(json_object *so, const struct jpath *sp,
				     struct tfs_schema *s, struct tfs_diag *d)
{
	json_object *v = tfs__json_member(so, "enumerations");
	struct jpath kp, ip, np;
	size_t n = v && json_object_is_type(v, json_type_array)
			   ? json_object_array_length(v) : 0;
	enum tfs_err e;

	tfs__json_jpath_key(&kp, sp, "enumerations");
	if (v && !json_object_is_type(v, json_type_array))
		return FAIL(d, &kp, "a list of enumerations expected");
	if (n > 100000)
		return FAIL(d, &kp, "too many enumerations");
	if (n && s->version < 20)
		return FAIL(d, &kp, "enumerations need format version 20 or later");
	if (n && !(s->enums = tfs_callocn(n, sizeof(*s->enums))))
		return TFS_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		struct tfs_enum_ref *r = &s->enums[i];
		struct tfs_enum_index *x;
		uint64_t dup;

		tfs__json_jpath_index(&ip, &kp, i);
		s->enum_num++;
		if (!(r->def = tfs_callocn(1, sizeof(*r->def))))
			return TFS_E_NOMEM;
		if ((e = get_enumeration(json_object_array_get_idx(v, i), &ip, r->def, d)))
			return e;
		if (!(r->name = tfs_strdup(r->def->name)))
			return TFS_E_NOMEM;
		for (size_t k = 0; k < i; k++) {
			if (strcmp(s->enums[k].name, r->name) == 0) {
				tfs__json_jpath_key(&np, &ip, "name");
				return FAIL(d, &np, "enumerations[%zu] has that name too", k);
			}
		}
		if ((e = tfs_enum_index_new(r->def, &dup, &x)))
			return e;
		if (dup != UINT64_MAX) {
			const uint8_t *p = NULL;
			uint64_t len = 0, first;

			(void)tfs_enumeration_value(r->def, dup, &p, &len);
			first = tfs_enum_index_find(x, p, (size_t)len);
			tfs_enum_index_free(x);
			tfs__json_jpath_key(&kp, &ip, "values");
			tfs__json_jpath_index(&np, &kp, (size_t)dup);
			return FAIL(d, &np, "the same value as values[%" PRIu64 "]", first);
		}
		tfs_enum_index_free(x);
	}
	for (uint32_t i = 0; i < s->attr_num; i++) {
		const struct tfs_attr *a = &s->attrs[i];
		const struct tfs_enumeration *en = NULL;
		const char *why;
		char shown[64];

		if (!a->enumeration)
			continue;
		for (uint32_t k = 0; k < s->enum_num && !en; k++)
			if (strcmp(s->enums[k].name, a->enumeration) == 0)
				en = s->enums[k].def;
		tfs__json_jpath_key(&kp, sp, "attrs");
		tfs__json_jpath_index(&ip, &kp, i);
		tfs__json_jpath_key(&np, &ip, "enumeration");
		if (!en)
			return FAIL(d, &np, "no enumeration '%s' in enumerations",
				    tfs__msg_text(shown, sizeof(shown), a->enumeration,
						  strlen(a->enumeration)));
		if ((why = tfs_enumeration_attr_problem(a, en)))
			return FAIL(d, &np, "%s ('%s' is %s, %" PRIu64 " values)", why,
				    a->name, tfs_datatype_name(a->type), en->value_num);
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
	if ((e = tfs__json_get_string(obj, key, false, jp, &name, d)) || !name)
		return e;
	for (uint8_t i = 0; i < 5; i++) {
		if (strcmp(name, names[i]) == 0) {
			*out = i;
			return TFS_E_OK;
		}
	}
	tfs__json_jpath_key(&kp, jp, key);
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

		tfs__json_jpath_index(&ip, jp, k);
		if (!r || !json_object_is_type(r, json_type_array) ||
		    json_object_array_length(r) != 2) {
			e = FAIL(d, &ip, "[lo, hi] expected");
			break;
		}
		for (size_t i = 0; i < 2 && !e; i++) {
			json_object *x = json_object_array_get_idx(r, i);
			size_t at = bytes.len;
			struct jpath xp;

			tfs__json_jpath_index(&xp, &ip, i);
			if (dim->var) {
				if (!x || !json_object_is_type(x, json_type_string))
					e = FAIL(d, &xp, "a string expected");
				else if (tfs_buf_append(&bytes, json_object_get_string(x),
							(size_t)json_object_get_string_len(x)))
					e = TFS_E_NOMEM;
			} else if (tfs_buf_reserve(&bytes, 8)) {
				e = TFS_E_NOMEM;
			} else if (!(e = tfs__json_get_value(x, dim->type, &xp, bytes.data + at, d))) {
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

/* array_type beside the schema (schema.json) or inside it. */
static enum tfs_err get_array_type(json_object *top, json_object *so,
				   const struct jpath *root, const struct jpath *sp,
				   struct tfs_schema *s, struct tfs_diag *d)
{
	const char *atype;
	struct jpath kp;
	enum tfs_err e;

	if ((e = tfs__json_get_string(top, "array_type", false, root, &atype, d)))
		return e;
	if (!atype && (e = tfs__json_get_string(so, "array_type", true, sp, &atype, d)))
		return e;
	if (strcmp(atype, "dense") == 0)
		s->array_type = TFS_DENSE;
	else if (strcmp(atype, "sparse") == 0)
		s->array_type = TFS_SPARSE;
	else {
		tfs__json_jpath_key(&kp, root, "array_type");
		return FAIL(d, &kp, "\"dense\" or \"sparse\" expected");
	}
	return TFS_E_OK;
}

/* format_version beside the schema or inside it; missing: the version
 * tilefs writes. */
static enum tfs_err get_format_version(json_object *top, json_object *so,
				       const struct jpath *root,
				       struct tfs_schema *s, struct tfs_diag *d)
{
	json_object *v;
	struct jpath kp;
	uint64_t u;
	enum tfs_err e;

	s->version = TFS_FORMAT_VERSION_WRITE;
	if ((v = tfs__json_member(top, "format_version")) || (v = tfs__json_member(so, "format_version"))) {
		tfs__json_jpath_key(&kp, root, "format_version");
		if ((e = tfs__json_get_u64(v, &kp, TFS_FORMAT_VERSION_MAX, &u, d)))
			return e;
		if (u < 1)
			return FAIL(d, &kp, "a format version is 1 to %d",
				    TFS_FORMAT_VERSION_MAX);
		s->version = (uint32_t)u;
	}
	return TFS_E_OK;
}

/* The coordinates', offsets' and validity filter lists, TileDB's default
 * lists when missing, and their "max_chunk_sizes". */
static enum tfs_err get_schema_filters(json_object *so, const struct jpath *sp,
				       struct tfs_schema *s, struct tfs_diag *d)
{
	struct tfs_pipeline dflt;
	struct tfs_filter zstd, rle;
	json_object *v;
	struct jpath kp;
	enum tfs_err e;

	tfs_filter_init(&zstd, TFS_FILTER_ZSTD);
	tfs_filter_init(&rle, TFS_FILTER_RLE);
	tfs_pipeline_init(&dflt);
	if (tfs_pipeline_add(&dflt, &zstd))
		return TFS_E_INTERNAL;
	if ((e = tfs__json_get_filters(so, "coords_filters", &dflt, sp, &s->coords_filters, NULL, d)) ||
	    (e = tfs__json_get_filters(so, "offsets_filters", &dflt, sp, &s->offsets_filters, NULL, d)))
		return e;
	tfs_pipeline_init(&dflt);
	if (tfs_pipeline_add(&dflt, &rle))
		return TFS_E_INTERNAL;
	if ((e = tfs__json_get_filters(so, "validity_filters", &dflt, sp, &s->validity_filters,
				       NULL, d)))
		return e;
	if ((v = tfs__json_member(so, "max_chunk_sizes"))) {
		tfs__json_jpath_key(&kp, sp, "max_chunk_sizes");
		if (!json_object_is_type(v, json_type_object))
			return FAIL(d, &kp, "an object expected");
		if ((e = tfs__json_get_chunk(v, "coords", &kp, &s->coords_filters, d)) ||
		    (e = tfs__json_get_chunk(v, "offsets", &kp, &s->offsets_filters, d)) ||
		    (e = tfs__json_get_chunk(v, "validity", &kp, &s->validity_filters, d)))
			return e;
	}
	return TFS_E_OK;
}

/* "dims": 1 to 128 dimensions. */
static enum tfs_err get_dims(json_object *so, const struct jpath *sp,
			     struct tfs_schema *s, struct tfs_diag *d)
{
	json_object *dims = tfs__json_member(so, "dims");
	struct jpath kp;
	enum tfs_err e;

	tfs__json_jpath_key(&kp, sp, "dims");
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

		tfs__json_jpath_index(&ip, &kp, i);
		s->dim_num++;
		if ((e = get_dim(json_object_array_get_idx(dims, i), &ip,
				 &s->coords_filters, &s->dims[i], d)))
			return e;
	}
	return TFS_E_OK;
}

/* "attrs": the attributes, none or more. */
static enum tfs_err get_attrs(json_object *so, const struct jpath *sp,
			      struct tfs_schema *s, struct tfs_diag *d)
{
	json_object *attrs = tfs__json_member(so, "attrs");
	struct jpath kp;
	enum tfs_err e;

	tfs__json_jpath_key(&kp, sp, "attrs");
	if (!attrs || !json_object_is_type(attrs, json_type_array))
		return FAIL(d, &kp, "a list of attributes expected");
	if (json_object_array_length(attrs) > 100000)
		return FAIL(d, &kp, "too many attributes");
	s->attrs = tfs_callocn(json_object_array_length(attrs) + 1, sizeof(*s->attrs));
	if (!s->attrs)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < json_object_array_length(attrs); i++) {
		struct jpath ip;

		tfs__json_jpath_index(&ip, &kp, i);
		s->attr_num++;
		if ((e = get_attr(json_object_array_get_idx(attrs, i), &ip, &s->attrs[i], d)))
			return e;
	}
	return TFS_E_OK;
}

/* "timestamp_range": [t1, t2] when present. */
static enum tfs_err get_timestamp_range(json_object *so, const struct jpath *sp,
					struct tfs_schema *s, struct tfs_diag *d)
{
	json_object *v = tfs__json_member(so, "timestamp_range");
	struct jpath kp, ip;
	enum tfs_err e;

	if (!v)
		return TFS_E_OK;
	tfs__json_jpath_key(&kp, sp, "timestamp_range");
	if (!json_object_is_type(v, json_type_array) ||
	    json_object_array_length(v) != 2)
		return FAIL(d, &kp, "[t1, t2] expected");
	tfs__json_jpath_index(&ip, &kp, 0);
	if ((e = tfs__json_get_u64(json_object_array_get_idx(v, 0), &ip, UINT64_MAX, &s->t1, d)))
		return e;
	tfs__json_jpath_index(&ip, &kp, 1);
	if ((e = tfs__json_get_u64(json_object_array_get_idx(v, 1), &ip, UINT64_MAX, &s->t2, d)))
		return e;
	return TFS_E_OK;
}

static enum tfs_err build(json_object *top, struct tfs_schema *s, struct tfs_diag *d)
{
	struct jpath root = {"$"}, sp, kp;
	json_object *so = tfs__json_member(top, "schema"), *v;
	enum tfs_err e;

	if (!json_object_is_type(top, json_type_object))
		return FAIL(d, &root, "an object expected");
	if (so) {
		if (!json_object_is_type(so, json_type_object))
			return FAIL(d, &root, ".schema: an object expected");
		tfs__json_jpath_key(&sp, &root, "schema");
	} else {
		so = top;
		sp = root;
	}
	if ((e = get_array_type(top, so, &root, &sp, s, d)) ||
	    (e = get_format_version(top, so, &root, s, d)))
		return e;
	if ((e = get_layout(so, "cell_order", &sp, &s->cell_order, d)) ||
	    (e = get_layout(so, "tile_order", &sp, &s->tile_order, d)) ||
	    (e = tfs__json_get_bool(so, "allows_dups", false, &sp, &s->allows_dups, d)))
		return e;
	s->capacity = DEFAULT_CAPACITY;
	if ((v = tfs__json_member(so, "capacity"))) {
		tfs__json_jpath_key(&kp, &sp, "capacity");
		if ((e = tfs__json_get_u64(v, &kp, UINT64_MAX, &s->capacity, d)))
			return e;
	}
	if ((e = get_schema_filters(so, &sp, s, d)) ||
	    (e = get_dims(so, &sp, s, d)) ||
	    (e = get_attrs(so, &sp, s, d)) ||
	    (e = get_enumerations(so, &sp, s, d)))
		return e;
	if ((v = tfs__json_member(so, "dimension_labels")) &&
	    (!json_object_is_type(v, json_type_array) || json_object_array_length(v) > 0)) {
		tfs__json_jpath_key(&kp, &sp, "dimension_labels");
		return FAIL(d, &kp, "dimension labels are not supported in schema JSON");
	}
	if ((v = tfs__json_member(so, "current_domain"))) {
		tfs__json_jpath_key(&kp, &sp, "current_domain");
		if ((e = get_current_domain(v, &kp, s, d)))
			return e;
	}
	return get_timestamp_range(so, &sp, s, d);
}

/* The JSON text into a json-c tree; trailing whitespace is fine. */
static enum tfs_err parse_json_text(const char *json, size_t len,
				    json_object **out, struct tfs_diag *d)
{
	struct json_tokener *tok;
	json_object *top;

	*out = NULL;
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
	*out = top;
	return TFS_E_OK;
}

/* Every rule of a stored schema, by storing s and reading it back into
 * out; enumeration files are named when the array is created, so the
 * check stores a stand-in name (format/layout.md §2). */
static enum tfs_err check_by_storing(struct tfs_schema *out, struct tfs_schema *s,
				     struct tfs_diag *d)
{
	struct tfs_buf bytes;
	struct tfs_diag pd;
	enum tfs_err e;

	for (uint32_t i = 0; i < s->enum_num; i++) {
		if (!(s->enums[i].file = tfs_strdup("__00000000000000000000000000000000_0")))
			return tfs_fail(d, TFS_E_NOMEM, "schema JSON: out of memory");
	}
	tfs_buf_init(&bytes, TFS_BUF_NO_MAX);
	tfs_diag_init(&pd);
	if ((e = tfs_schema_serialize(&bytes, s))) {
		e = e == TFS_E_NOMEM || e == TFS_E_TOO_BIG
			    ? tfs_fail(d, e, "schema JSON: out of memory")
			    : tfs_fail(d, TFS_E_INVALID, "schema JSON: not a valid schema (%s)",
				       tfs_strerror(e));
	} else if ((e = tfs_schema_parse(out, bytes.data, bytes.len, NULL, &pd))) {
		e = tfs_fail(d, e == TFS_E_NOMEM ? e : TFS_E_INVALID, "schema JSON: %s",
			     tfs_diag_msg(&pd));
	} else {
		out->t1 = s->t1;
		out->t2 = s->t2;
		/* The map keeps its order; the values go with it. */
		for (uint32_t i = 0; i < out->enum_num; i++) {
			assert(strcmp(out->enums[i].name, s->enums[i].name) == 0);
			tfs_free(out->enums[i].file);
			out->enums[i].file = NULL;
			out->enums[i].def = s->enums[i].def;
			s->enums[i].def = NULL;
		}
	}
	tfs_buf_release(&bytes);
	return e;
}

enum tfs_err tfs_schema_from_json(struct tfs_schema *out, const char *json,
				  size_t len, struct tfs_diag *d)
{
	json_object *top;
	struct tfs_schema s;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if ((e = parse_json_text(json, len, &top, d)))
		return e;
	e = build(top, &s, d);
	json_object_put(top);
	if (e == TFS_E_NOMEM)
		tfs_fail(d, e, "schema JSON: out of memory");
	if (!e)
		e = check_by_storing(out, &s, d);
	tfs_schema_release(&s);
	return e;
}

enum tfs_err tfs_schema_from_json_new(const char *json, size_t len,
				      struct tfs_schema **out,
				      struct tfs_diag *d)
{
	struct tfs_schema *s = tfs_callocn(1, sizeof(*s));
	enum tfs_err e;

	*out = NULL;
	if (!s)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = tfs_schema_from_json(s, json, len, d);
	if (e) {
		tfs_free(s);
		return e;
	}
	*out = s;
	return TFS_E_OK;
}
