/* Array schema parsing for format versions 1 to 23 (format/schema.md §3
 * "Array schema payload", §4 "Domain and dimensions", §5 "Attribute", §6
 * "Dimension label", §7 "Current domain"), field by field with the version
 * that introduced each field, plus the checks that keep nonsense from
 * reaching the readers: types, cell value numbers, domain and extent sizes,
 * orders, unique names. Also the generic-tile wrapper of schema files and
 * the small schema queries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

/* Bounds on counts read from disk, beyond what the bytes can hold. */
#define SCHEMA_MAX_DIMS 128
#define HILBERT_MAX_DIMS 16
/* Largest fixed cell (type size × cell_val_num) we accept: before v6 the
 * default fill value of that size is built in memory. */
#define SCHEMA_MAX_CELL_SIZE ((uint64_t)1 << 24)
/* Smallest serialized attribute (name length, type, cell_val_num, empty
 * filter list) and dimension (name length, null extent flag). */
#define ATTR_MIN_BYTES 17u
#define DIM_MIN_BYTES 5u
#define LABEL_MIN_BYTES 28u

static bool dim_type_ok(uint8_t type, bool var)
{
	if (!tfs_datatype_valid(type))
		return false;
	if (var)
		return tfs_datatype_is_string(type);
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
	case TFS_CLASS_UNSIGNED:
	case TFS_CLASS_FLOAT:
		return true;
	default:
		return false;
	}
}

/* Checks lo <= hi (no NaN) and a positive extent for a numeric dim. */
static enum tfs_err check_dim_values(struct tfs__rd *r, uint32_t i,
				     const struct tfs_dim *dim)
{
	enum tfs_type_class cls = tfs_datatype_class(dim->type);
	uint8_t zero[8] = {0};

	if (cls == TFS_CLASS_FLOAT) {
		double lo = tfs_value_as_f64(dim->type, dim->domain[0]);
		double hi = tfs_value_as_f64(dim->type, dim->domain[1]);

		if (isnan(lo) || isnan(hi) || isinf(lo) || isinf(hi))
			return tfs__bad(r,
					"dimension %u ('%s'): domain bound is "
					"not finite",
					(unsigned)i, dim->name);
		if (dim->has_extent) {
			double x = tfs_value_as_f64(dim->type, dim->extent);

			if (!(x > 0) || isinf(x))
				return tfs__bad(r,
						"dimension %u ('%s'): tile "
						"extent must be positive",
						(unsigned)i, dim->name);
		}
	}
	if (tfs_value_cmp(dim->type, dim->domain[0], dim->domain[1]) > 0)
		return tfs__bad(r,
				"dimension %u ('%s'): domain low bound is "
				"above the high bound",
				(unsigned)i, dim->name);
	if (dim->has_extent && cls != TFS_CLASS_FLOAT &&
	    tfs_value_cmp(dim->type, dim->extent, zero) <= 0)
		return tfs__bad(r,
				"dimension %u ('%s'): tile extent must be "
				"positive",
				(unsigned)i, dim->name);
	return TFS_E_OK;
}

/* A dimension's name, datatype and cell_val_num (given by the domain
 * before version 5), checked. */
static enum tfs_err parse_dim_type(struct tfs__rd *r, struct tfs_schema *s,
				   uint32_t i, uint8_t domain_type)
{
	struct tfs_dim *dim = &s->dims[i];
	uint32_t name_len;
	enum tfs_err e;

	if ((e = tfs__u32(r, &name_len, "dimension name length")) ||
	    (e = tfs__str(r, name_len, &dim->name, "dimension name")))
		return e;
	if (s->version >= 5) {
		if ((e = tfs__u8(r, &dim->type, "dimension type")) ||
		    (e = tfs__u32(r, &dim->cell_val_num,
				  "dimension cell_val_num")))
			return e;
	} else {
		dim->type = domain_type;
		dim->cell_val_num = 1;
	}
	if (!tfs_datatype_valid(dim->type))
		return tfs__bad(r, "dimension %u ('%s'): invalid datatype %u",
				(unsigned)i, dim->name, dim->type);
	if (dim->cell_val_num != 1 && dim->cell_val_num != TFS_VAR_NUM)
		return tfs__bad(r,
				"dimension %u ('%s'): cell_val_num %u (must "
				"be 1 or var)",
				(unsigned)i, dim->name,
				(unsigned)dim->cell_val_num);
	dim->var = dim->cell_val_num == TFS_VAR_NUM;
	if (!dim_type_ok(dim->type, dim->var))
		return tfs__bad(r,
				"dimension %u ('%s'): datatype %s cannot be a "
				"%s dimension",
				(unsigned)i, dim->name,
				tfs_datatype_name(dim->type),
				dim->var ? "var-size" : "fixed-size");
	return TFS_E_OK;
}

/* A dimension's filters (an empty list: the coordinates' ones) and the
 * size of its domain (always two values before version 5). */
static enum tfs_err parse_dim_filters(struct tfs__rd *r, struct tfs_schema *s,
				      struct tfs_dim *dim, size_t tsz,
				      uint64_t *domain_size)
{
	struct tfs_pipeline stored;
	enum tfs_err e;

	if (s->version < 5) {
		dim->filters = s->coords_filters;
		dim->filters_inherited = true;
		*domain_size = 2 * (uint64_t)tsz;
		return TFS_E_OK;
	}
	e = tfs__pipeline(r, &stored, s->version, "dimension filters");
	if (e)
		return e;
	if (stored.count == 0) {
		/* An empty list means "use the coords filters". */
		dim->filters = s->coords_filters;
		dim->filters_inherited = true;
		dim->stored_max_chunk = stored.max_chunk_size;
	} else {
		dim->filters = stored;
	}
	return tfs__u64(r, domain_size, "dimension domain size");
}

static enum tfs_err parse_dim(struct tfs__rd *r, struct tfs_schema *s,
			      uint32_t i, uint8_t domain_type)
{
	struct tfs_dim *dim = &s->dims[i];
	uint64_t domain_size;
	const uint8_t *p;
	size_t tsz;
	bool null_extent;
	enum tfs_err e;

	if ((e = parse_dim_type(r, s, i, domain_type)))
		return e;
	tsz = tfs_datatype_size(dim->type);
	if ((e = parse_dim_filters(r, s, dim, tsz, &domain_size)))
		return e;
	if (dim->var ? domain_size != 0 : domain_size != 2 * (uint64_t)tsz)
		return tfs__bad(r,
				"dimension %u ('%s'): domain size %llu, "
				"expected %llu for %s",
				(unsigned)i, dim->name,
				(unsigned long long)domain_size,
				(unsigned long long)(dim->var ? 0 : 2 * tsz),
				tfs_datatype_name(dim->type));
	if (domain_size) {
		if ((e = tfs__take(r, domain_size, &p, "dimension domain")))
			return e;
		memcpy(dim->domain[0], p, tsz);
		memcpy(dim->domain[1], p + tsz, tsz);
		dim->has_domain = true;
	}
	if ((e = tfs__bool(r, &null_extent, "dimension null tile extent")))
		return e;
	if (!null_extent) {
		if ((e = tfs__take(r, tsz, &p, "dimension tile extent")))
			return e;
		memcpy(dim->extent, p, tsz);
		dim->has_extent = true;
	}
	if (dim->has_domain)
		return check_dim_values(r, i, dim);
	return TFS_E_OK;
}

/* An attribute's name, datatype and cell_val_num, checked. */
static enum tfs_err parse_attr_type(struct tfs__rd *r, struct tfs_attr *a,
				    uint32_t i)
{
	uint32_t name_len;
	size_t tsz;
	enum tfs_err e;

	if ((e = tfs__u32(r, &name_len, "attribute name length")) ||
	    (e = tfs__str(r, name_len, &a->name, "attribute name")) ||
	    (e = tfs__u8(r, &a->type, "attribute type")) ||
	    (e = tfs__u32(r, &a->cell_val_num, "attribute cell_val_num")))
		return e;
	if (!tfs_datatype_valid(a->type))
		return tfs__bad(r, "attribute %u ('%s'): invalid datatype %u",
				(unsigned)i, a->name, a->type);
	tsz = tfs_datatype_size(a->type);
	a->var = a->cell_val_num == TFS_VAR_NUM;
	if (a->cell_val_num == 0)
		return tfs__bad(r, "attribute %u ('%s'): cell_val_num 0",
				(unsigned)i, a->name);
	if (a->type == TFS_ANY && !a->var)
		return tfs__bad(r,
				"attribute %u ('%s'): ANY attributes must be "
				"var-size",
				(unsigned)i, a->name);
	if (!a->var && (uint64_t)a->cell_val_num * tsz > SCHEMA_MAX_CELL_SIZE)
		return tfs__bad(r,
				"attribute %u ('%s'): cell of %u values of %s "
				"is too large",
				(unsigned)i, a->name,
				(unsigned)a->cell_val_num,
				tfs_datatype_name(a->type));
	return TFS_E_OK;
}

/* An attribute's fill value: stored from version 6, the datatype's
 * default before. */
static enum tfs_err parse_attr_fill(struct tfs__rd *r, uint32_t version,
				    struct tfs_attr *a, uint32_t i)
{
	size_t tsz = tfs_datatype_size(a->type);
	const uint8_t *p;
	enum tfs_err e;

	if (version < 6) {
		uint64_t n = a->var ? 1 : a->cell_val_num;

		a->fill_size = n * tsz;
		a->fill = tfs_malloc((size_t)a->fill_size);
		if (!a->fill)
			return tfs__fail(r, TFS_E_NOMEM,
					 "out of memory for a fill value");
		for (uint64_t k = 0; k < n; k++)
			tfs_datatype_default_fill(a->type, a->fill + k * tsz);
		return TFS_E_OK;
	}
	if ((e = tfs__u64(r, &a->fill_size, "fill value size")))
		return e;
	if (a->fill_size == 0)
		return tfs__bad(r, "attribute %u ('%s'): fill value size 0",
				(unsigned)i, a->name);
	if (!a->var && a->fill_size != tfs_attr_cell_size(a))
		return tfs__bad(r,
				"attribute %u ('%s'): fill value size "
				"%llu does not match cell size %llu",
				(unsigned)i, a->name,
				(unsigned long long)a->fill_size,
				(unsigned long long)tfs_attr_cell_size(a));
	if ((e = tfs__take(r, a->fill_size, &p, "fill value")))
		return e;
	a->fill = tfs_memdup(p, (size_t)a->fill_size);
	if (!a->fill)
		return tfs__fail(r, TFS_E_NOMEM,
				 "out of memory for a fill value");
	return TFS_E_OK;
}

/* What later versions add: nullability (v7), data order (v17) and the
 * enumeration's name (v20). */
static enum tfs_err parse_attr_extras(struct tfs__rd *r, uint32_t version,
				      struct tfs_attr *a, uint32_t i)
{
	enum tfs_err e;

	if (version >= 7) {
		if ((e = tfs__bool(r, &a->nullable, "attribute nullable")) ||
		    (e = tfs__u8(r, &a->fill_valid, "fill value validity")))
			return e;
	}
	if (version >= 17) {
		if ((e = tfs__u8(r, &a->order, "attribute order")))
			return e;
		if (a->order > 2)
			return tfs__bad(r,
					"attribute %u ('%s'): invalid data "
					"order %u",
					(unsigned)i, a->name, a->order);
	}
	if (version >= 20) {
		uint32_t en_len;

		if ((e = tfs__u32(r, &en_len, "enumeration name length")))
			return e;
		if (en_len) {
			e = tfs__str(r, en_len, &a->enumeration,
				     "enumeration name");
			if (e)
				return e;
		}
	}
	return TFS_E_OK;
}

static enum tfs_err parse_attr(struct tfs__rd *r, struct tfs_schema *s,
			       uint32_t i)
{
	struct tfs_attr *a = &s->attrs[i];
	enum tfs_err e;

	if ((e = parse_attr_type(r, a, i)) ||
	    (e = tfs__pipeline(r, &a->filters, s->version,
			       "attribute filters")) ||
	    (e = parse_attr_fill(r, s->version, a, i)))
		return e;
	return parse_attr_extras(r, s->version, a, i);
}

static enum tfs_err parse_label(struct tfs__rd *r, struct tfs_schema *s,
				uint32_t i)
{
	struct tfs_label *l = &s->labels[i];
	uint32_t n32;
	uint64_t n64;
	enum tfs_err e;

	if ((e = tfs__u32(r, &l->dim_index, "label dimension index")))
		return e;
	if (l->dim_index >= s->dim_num)
		return tfs__bad(r,
				"dimension label %u: dimension index %u out "
				"of %u dimensions",
				(unsigned)i, (unsigned)l->dim_index,
				(unsigned)s->dim_num);
	if ((e = tfs__u32(r, &n32, "label name length")) ||
	    (e = tfs__str(r, n32, &l->name, "label name")) ||
	    (e = tfs__bool(r, &l->uri_relative, "label uri relative flag")) ||
	    (e = tfs__u64(r, &n64, "label uri length")) ||
	    (e = tfs__str(r, n64, &l->uri, "label uri")) ||
	    (e = tfs__u32(r, &n32, "label attribute name length")) ||
	    (e = tfs__str(r, n32, &l->attr_name, "label attribute name")) ||
	    (e = tfs__u8(r, &l->order, "label order")) ||
	    (e = tfs__u8(r, &l->type, "label type")) ||
	    (e = tfs__u32(r, &l->cell_val_num, "label cell_val_num")) ||
	    (e = tfs__bool(r, &l->is_external, "label external flag")))
		return e;
	if (l->order > 2)
		return tfs__bad(r, "dimension label %u ('%s'): invalid order %u",
				(unsigned)i, l->name, l->order);
	if (!tfs_datatype_valid(l->type) || l->cell_val_num == 0)
		return tfs__bad(r,
				"dimension label %u ('%s'): invalid type %u or "
				"cell_val_num %u",
				(unsigned)i, l->name, l->type,
				(unsigned)l->cell_val_num);
	return TFS_E_OK;
}

static enum tfs_err parse_current_domain(struct tfs__rd *r,
					 struct tfs_schema *s)
{
	uint32_t cd_version;
	uint8_t cd_type;
	bool empty;
	size_t from;
	enum tfs_err e;

	if ((e = tfs__u32(r, &cd_version, "current domain version")))
		return e;
	if (cd_version != 0)
		return tfs__fail(r, TFS_E_UNSUPPORTED,
				 "unsupported current domain version %u",
				 (unsigned)cd_version);
	if ((e = tfs__bool(r, &empty, "current domain empty flag")))
		return e;
	if (empty)
		return TFS_E_OK;
	if ((e = tfs__u8(r, &cd_type, "current domain type")))
		return e;
	if (cd_type != 0)
		return tfs__fail(r, TFS_E_UNSUPPORTED,
				 "unsupported current domain type %u",
				 cd_type);
	s->current_domain = tfs_callocn(s->dim_num, sizeof(struct tfs_range));
	if (!s->current_domain)
		return tfs__fail(r, TFS_E_NOMEM,
				 "out of memory for the current domain");
	from = r->c.pos;
	for (uint32_t i = 0; i < s->dim_num; i++) {
		e = tfs__range(r, s->dims[i].type, s->dims[i].var,
			       &s->current_domain[i], "current domain range");
		if (e)
			return e;
	}
	e = tfs__ranges_own(r, from, r->c.pos, s->current_domain, s->dim_num,
			    &s->current_domain_bytes);
	if (e)
		return e;
	s->has_current_domain = true;
	return TFS_E_OK;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Attributes, dimensions and labels must have distinct names (TileDB
 * refuses to create anything else, and readers match fields by name).
 * Anonymous (empty) names of very old arrays are not compared. */
static enum tfs_err check_unique_names(struct tfs__rd *r,
				       const struct tfs_schema *s)
{
	size_t n = 0, cap = (size_t)s->dim_num + s->attr_num + s->label_num;
	const char **names;
	enum tfs_err e = TFS_E_OK;

	names = tfs_mallocn(cap, sizeof(*names));
	if (!names)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < s->dim_num; i++)
		if (s->dims[i].name[0])
			names[n++] = s->dims[i].name;
	for (uint32_t i = 0; i < s->attr_num; i++)
		if (s->attrs[i].name[0])
			names[n++] = s->attrs[i].name;
	for (uint32_t i = 0; i < s->label_num; i++)
		if (s->labels[i].name[0])
			names[n++] = s->labels[i].name;
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(names[i - 1], names[i]) == 0) {
			e = tfs__bad(r, "name '%s' is used twice", names[i]);
			break;
		}
	}
	tfs_free(names);
	return e;
}

/* Enumeration names are distinct and every attribute's enumeration is
 * listed (sorted names, so hostile counts stay O(n log n)). */
static enum tfs_err check_enumerations(struct tfs__rd *r,
				       const struct tfs_schema *s)
{
	const char **names;
	enum tfs_err e = TFS_E_OK;

	names = tfs_mallocn(s->enum_num, sizeof(*names));
	if (!names)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < s->enum_num; i++)
		names[i] = s->enums[i].name;
	if (s->enum_num > 1)
		qsort(names, s->enum_num, sizeof(*names), cmp_names);
	for (uint32_t i = 1; i < s->enum_num && !e; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			e = tfs__bad(r, "enumeration '%s' listed twice",
				     names[i]);
	for (uint32_t i = 0; i < s->attr_num && !e; i++) {
		const char *en = s->attrs[i].enumeration;

		if (en && (!s->enum_num || !bsearch(&en, names, s->enum_num,
						    sizeof(*names), cmp_names)))
			e = tfs__bad(r,
				     "attribute '%s' uses enumeration '%s' "
				     "which the schema does not list",
				     s->attrs[i].name, en);
	}
	tfs_free(names);
	return e;
}

static enum tfs_err check_schema(struct tfs__rd *r, const struct tfs_schema *s)
{
	enum tfs_err e;

	if (s->cell_order == TFS_HILBERT) {
		if (s->array_type == TFS_DENSE)
			return tfs__bad(r, "dense array with Hilbert cell order");
		if (s->dim_num > HILBERT_MAX_DIMS)
			return tfs__bad(r,
					"Hilbert cell order with %u dimensions "
					"(at most %d)",
					(unsigned)s->dim_num, HILBERT_MAX_DIMS);
	}
	if (s->array_type == TFS_DENSE) {
		if (s->attr_num == 0)
			return tfs__bad(r, "dense array without attributes");
		for (uint32_t i = 0; i < s->dim_num; i++) {
			const struct tfs_dim *dim = &s->dims[i];

			if (dim->var ||
			    tfs_datatype_class(dim->type) == TFS_CLASS_FLOAT)
				return tfs__bad(r,
						"dense array with %s dimension "
						"'%s'",
						tfs_datatype_name(dim->type),
						dim->name);
			if (dim->type != s->dims[0].type)
				return tfs__bad(r,
						"dense array dimensions of "
						"different types (%s, %s)",
						tfs_datatype_name(s->dims[0].type),
						tfs_datatype_name(dim->type));
		}
	} else if (s->capacity == 0) {
		return tfs__bad(r, "sparse array with capacity 0");
	}
	e = check_enumerations(r, s);
	if (e)
		return e;
	return check_unique_names(r, s);
}

/* Version, array type, orders and capacity (§2). */
static enum tfs_err parse_header(struct tfs__rd *r, struct tfs_schema *s)
{
	enum tfs_err e;

	if ((e = tfs__u32(r, &s->version, "version")))
		return e;
	if (s->version > TFS_FORMAT_VERSION_MAX)
		return tfs__unsupported_version(r, s->version);
	if (s->version == 0)
		return tfs__bad(r, "format version 0");
	if (s->version >= 5 &&
	    (e = tfs__bool(r, &s->allows_dups, "allows_dups")))
		return e;
	if ((e = tfs__u8(r, &s->array_type, "array type")) ||
	    (e = tfs__u8(r, &s->tile_order, "tile order")) ||
	    (e = tfs__u8(r, &s->cell_order, "cell order")) ||
	    (e = tfs__u64(r, &s->capacity, "capacity")))
		return e;
	if (s->array_type > TFS_SPARSE)
		return tfs__bad(r, "invalid array type %u", s->array_type);
	if (s->tile_order > TFS_COL_MAJOR)
		return tfs__bad(r, "invalid tile order %u", s->tile_order);
	if (s->cell_order > TFS_HILBERT)
		return tfs__bad(r, "invalid cell order %u", s->cell_order);
	/* TileDB loads global/unordered cell orders but never creates them;
	 * they give no cell layout to read by. */
	if (s->cell_order == TFS_GLOBAL_ORDER || s->cell_order == TFS_UNORDERED)
		return tfs__fail(r, TFS_E_UNSUPPORTED, "unsupported cell order %u",
				 s->cell_order);
	return TFS_E_OK;
}

/* The coordinates', offsets' and validity filters. */
static enum tfs_err parse_schema_filters(struct tfs__rd *r,
					 struct tfs_schema *s)
{
	enum tfs_err e;

	if ((e = tfs__pipeline(r, &s->coords_filters, s->version,
			       "coords filters")) ||
	    (e = tfs__pipeline(r, &s->offsets_filters, s->version,
			       "offsets filters")))
		return e;
	if (s->version >= 7 &&
	    (e = tfs__pipeline(r, &s->validity_filters, s->version,
			       "validity filters")))
		return e;
	if (s->version < 7) {
		memset(&s->validity_filters, 0, sizeof(s->validity_filters));
		s->validity_filters.max_chunk_size = 65536;
	}
	return TFS_E_OK;
}

/* The domain (§4): one datatype for all before version 5, then the
 * dimensions. */
static enum tfs_err parse_dims(struct tfs__rd *r, struct tfs_schema *s)
{
	uint8_t domain_type = 0;
	enum tfs_err e;

	if (s->version < 5) {
		if ((e = tfs__u8(r, &domain_type, "domain type")))
			return e;
		if (!dim_type_ok(domain_type, false))
			return tfs__bad(r, "invalid domain datatype %u",
					domain_type);
	}
	if ((e = tfs__u32(r, &s->dim_num, "dimension count")))
		return e;
	if (s->dim_num == 0 || s->dim_num > SCHEMA_MAX_DIMS ||
	    s->dim_num > tfs_cur_left(&r->c) / DIM_MIN_BYTES)
		return tfs__bad(r, "invalid dimension count %u",
				(unsigned)s->dim_num);
	s->dims = tfs_callocn(s->dim_num, sizeof(*s->dims));
	if (!s->dims)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < s->dim_num; i++)
		if ((e = parse_dim(r, s, i, domain_type)))
			return e;
	return TFS_E_OK;
}

/* The attributes (§5). */
static enum tfs_err parse_attrs(struct tfs__rd *r, struct tfs_schema *s)
{
	enum tfs_err e;

	if ((e = tfs__u32(r, &s->attr_num, "attribute count")))
		return e;
	if (s->attr_num > tfs_cur_left(&r->c) / ATTR_MIN_BYTES)
		return tfs__bad(r,
				"attribute count %u does not fit in the "
				"%zu bytes left",
				(unsigned)s->attr_num, tfs_cur_left(&r->c));
	s->attrs = tfs_callocn(s->attr_num, sizeof(*s->attrs));
	if (!s->attrs)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < s->attr_num; i++)
		if ((e = parse_attr(r, s, i)))
			return e;
	return TFS_E_OK;
}

/* Dimension labels (§6, v18+). */
static enum tfs_err parse_labels(struct tfs__rd *r, struct tfs_schema *s)
{
	enum tfs_err e;

	if ((e = tfs__u32(r, &s->label_num, "label count")))
		return e;
	if (s->label_num > tfs_cur_left(&r->c) / LABEL_MIN_BYTES)
		return tfs__bad(r, "invalid label count %u",
				(unsigned)s->label_num);
	s->labels = tfs_callocn(s->label_num, sizeof(*s->labels));
	if (!s->labels)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < s->label_num; i++)
		if ((e = parse_label(r, s, i)))
			return e;
	return TFS_E_OK;
}

/* The enumeration map (§3, v20+): names and the files that hold them. */
static enum tfs_err parse_enum_map(struct tfs__rd *r, struct tfs_schema *s)
{
	enum tfs_err e;

	if ((e = tfs__u32(r, &s->enum_num, "enumeration count")))
		return e;
	if (s->enum_num > tfs_cur_left(&r->c) / 8)
		return tfs__bad(r, "invalid enumeration count %u",
				(unsigned)s->enum_num);
	s->enums = tfs_callocn(s->enum_num, sizeof(*s->enums));
	if (!s->enums)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < s->enum_num; i++) {
		uint32_t n;

		if ((e = tfs__u32(r, &n, "enumeration name length")) ||
		    (e = tfs__str(r, n, &s->enums[i].name,
				  "enumeration name")) ||
		    (e = tfs__u32(r, &n, "enumeration file length")) ||
		    (e = tfs__str(r, n, &s->enums[i].file,
				  "enumeration file name")))
			return e;
		if (!s->enums[i].name[0] || !s->enums[i].file[0] ||
		    strchr(s->enums[i].file, '/'))
			return tfs__bad(r,
					"enumeration %u: invalid name "
					"'%s' or file '%s'",
					(unsigned)i, s->enums[i].name,
					s->enums[i].file);
	}
	return TFS_E_OK;
}

static enum tfs_err parse_body(struct tfs__rd *r, struct tfs_schema *s)
{
	enum tfs_err e;

	if ((e = parse_header(r, s)) || (e = parse_schema_filters(r, s)) ||
	    (e = parse_dims(r, s)) || (e = parse_attrs(r, s)))
		return e;
	if (s->version >= 18 && (e = parse_labels(r, s)))
		return e;
	if (s->version >= 20 && (e = parse_enum_map(r, s)))
		return e;
	/* Current domain (§7, v22+). */
	if (s->version >= 22 && (e = parse_current_domain(r, s)))
		return e;
	if (tfs_cur_left(&r->c))
		return tfs__bad(r, "%zu trailing bytes after the schema",
				tfs_cur_left(&r->c));
	return check_schema(r, s);
}

enum tfs_err tfs_schema_parse(struct tfs_schema *out, const uint8_t *buf,
			      size_t len, const char *name,
			      struct tfs_diag *d)
{
	struct tfs_name_info ni;
	struct tfs__rd r;
	char what[160];
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	snprintf(what, sizeof(what), "schema '%s'", name ? name : "");
	tfs__rd_init(&r, buf, len, what, d);
	if (name) {
		out->name = tfs_strdup(name);
		if (!out->name)
			return tfs__fail(&r, TFS_E_NOMEM, "out of memory");
		if (tfs_name_parse(name, &ni) == TFS_E_OK) {
			out->t1 = ni.t1;
			out->t2 = ni.t2;
		}
	}
	e = parse_body(&r, out);
	if (e)
		tfs_schema_release(out);
	return e;
}

enum tfs_err tfs_schema_decode(struct tfs_schema *out, const uint8_t *file,
			       size_t len, const char *name, const uint8_t *key,
			       struct tfs_diag *d)
{
	uint8_t *payload;
	size_t payload_len;
	struct tfs_diag local;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	/* The header version comes first: a newer writer's header, or the
	 * experimental all-ones version, is refused before anything else. */
	if (len >= 4 && tfs_get_u32(file) > TFS_FORMAT_VERSION_MAX)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"schema '%s': unsupported format version %u",
				name ? name : "", (unsigned)tfs_get_u32(file));
	tfs_diag_init(&local);
	e = tfs_generic_tile_decode(file, len, key, TFS_FORMAT_MAX_PAYLOAD,
				    &payload, &payload_len, NULL, &local);
	if (e)
		return tfs_fail(d, e, "schema '%s': %s", name ? name : "",
				tfs_diag_msg(&local));
	e = tfs_schema_parse(out, payload, payload_len, name, d);
	tfs_free(payload);
	return e;
}

void tfs_schema_release(struct tfs_schema *s)
{
	if (!s)
		return;
	tfs_free(s->name);
	for (uint32_t i = 0; s->dims && i < s->dim_num; i++)
		tfs_free(s->dims[i].name);
	tfs_free(s->dims);
	for (uint32_t i = 0; s->attrs && i < s->attr_num; i++) {
		tfs_free(s->attrs[i].name);
		tfs_free(s->attrs[i].fill);
		tfs_free(s->attrs[i].enumeration);
	}
	tfs_free(s->attrs);
	for (uint32_t i = 0; s->labels && i < s->label_num; i++) {
		tfs_free(s->labels[i].name);
		tfs_free(s->labels[i].uri);
		tfs_free(s->labels[i].attr_name);
	}
	tfs_free(s->labels);
	for (uint32_t i = 0; s->enums && i < s->enum_num; i++) {
		tfs_free(s->enums[i].name);
		tfs_free(s->enums[i].file);
		tfs_enumeration_release(s->enums[i].def);
		tfs_free(s->enums[i].def);
	}
	tfs_free(s->enums);
	tfs_free(s->current_domain);
	tfs_free(s->current_domain_bytes);
	memset(s, 0, sizeof(*s));
}

int tfs_schema_attr_index(const struct tfs_schema *s, const char *name)
{
	for (uint32_t i = 0; i < s->attr_num; i++)
		if (strcmp(s->attrs[i].name, name) == 0)
			return (int)i;
	return -1;
}

int tfs_schema_dim_index(const struct tfs_schema *s, const char *name)
{
	for (uint32_t i = 0; i < s->dim_num; i++)
		if (strcmp(s->dims[i].name, name) == 0)
			return (int)i;
	return -1;
}

uint64_t tfs_attr_cell_size(const struct tfs_attr *a)
{
	uint64_t tsz = tfs_datatype_size(a->type);

	return a->var ? tsz : tsz * a->cell_val_num;
}

bool tfs_offsets_embedded(uint8_t type, const struct tfs_pipeline *p,
			  uint32_t schema_version)
{
	bool rle = false, dict = false;

	for (uint32_t i = 0; i < p->count && i < TFS_MAX_FILTERS; i++) {
		rle |= p->filters[i].type == TFS_FILTER_RLE;
		dict |= p->filters[i].type == TFS_FILTER_DICTIONARY;
	}
	if (type == TFS_STRING_ASCII)
		return (rle && schema_version >= 12) ||
		       (dict && schema_version >= 13);
	if (type == TFS_STRING_UTF8)
		return (rle || dict) && schema_version >= 17;
	return false;
}
