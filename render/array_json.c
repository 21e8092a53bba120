/* The parts of an array's description that several documents share, as
 * JSON by the corpus conventions (corpus/README.md, "The JSON"): the
 * schema object, ranges, the metadata object and fragment objects. `tfs
 * dump` and the daemon's schema.json, metadata.json and info.json are built
 * from these, so they always agree. */
#include "array_json.h"

#include <inttypes.h>

#include "cell_json.h"

static const char *layout_name(uint8_t layout)
{
	switch (layout) {
	case TFS_ROW_MAJOR: return "row-major";
	case TFS_COL_MAJOR: return "col-major";
	case TFS_GLOBAL_ORDER: return "global-order";
	case TFS_UNORDERED: return "unordered";
	case TFS_HILBERT: return "hilbert";
	default: return "invalid";
	}
}

/* A filter list as an array of the corpus JSON's filter names. */
static enum tfs_err put_filters(struct json_out *j, const struct tfs_schema *s,
				enum tfs_filter_list which, uint32_t field)
{
	uint32_t n = tfs_schema_filter_count(s, which, field);
	struct tfs_buf text;
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&text, TFS_BUF_NO_MAX);
	json_out_begin_array(j);
	for (uint32_t k = 0; k < n && !e; k++) {
		text.len = 0;
		e = tfs_schema_filter_describe(s, which, field, k, &text);
		if (!e)
			json_out_str(j, text.data, text.len);
	}
	json_out_end_array(j);
	tfs_buf_release(&text);
	return e;
}

/* The "filters" and "max_chunk_size" members of field i. */
static enum tfs_err put_field_filters(struct json_out *j,
				      const struct tfs_schema *s, uint32_t i)
{
	enum tfs_err e;

	json_out_key(j, "filters");
	if ((e = put_filters(j, s, TFS_FILTERS_OF_FIELD, i)))
		return e;
	json_out_key(j, "max_chunk_size");
	json_out_u64(j,
		     tfs_schema_filter_chunk_max(s, TFS_FILTERS_OF_FIELD, i));
	return TFS_E_OK;
}

/* Opens the object of a dimension, attribute or enumeration, on a line of
 * its own, with its name and type. */
static void begin_named(struct json_out *j, const char *name, uint8_t type)
{
	json_out_space(j, "\n   ");
	json_out_begin_object(j);
	json_out_key(j, "name");
	json_out_cstr(j, name);
	json_out_key(j, "type");
	json_out_cstr(j, tfs_datatype_name(type));
}

static void put_cell_val_num(struct json_out *j, bool var, uint32_t n)
{
	if (var)
		json_out_cstr(j, "var");
	else
		json_out_u64(j, n);
}

static enum tfs_err put_dim(struct json_out *j, const struct tfs_schema *s,
			    uint32_t k)
{
	struct tfs_field_info dim;
	enum tfs_err e;

	tfs_schema_dim(s, k, &dim);
	begin_named(j, dim.name, dim.type);
	json_out_key(j, "domain");
	if (dim.has_domain) {
		json_out_begin_array(j);
		cell_json_value(j, dim.type, dim.domain_lo);
		cell_json_value(j, dim.type, dim.domain_hi);
		json_out_end_array(j);
	} else {
		json_out_null(j);
	}
	json_out_key(j, "tile");
	if (dim.has_extent)
		cell_json_value(j, dim.type, dim.extent);
	else
		json_out_null(j);
	json_out_key(j, "var");
	json_out_bool(j, dim.var);
	if ((e = put_field_filters(j, s, k)))
		return e;
	json_out_end_object(j);
	return TFS_E_OK;
}

static enum tfs_err put_attr(struct json_out *j, const struct tfs_schema *s,
			     uint32_t k)
{
	struct tfs_field_info attr, *at = &attr;
	enum tfs_err e;

	tfs_schema_attr(s, k, &attr);
	begin_named(j, at->name, at->type);
	json_out_key(j, "cell_val_num");
	put_cell_val_num(j, at->var, at->cell_val_num);
	json_out_key(j, "nullable");
	json_out_bool(j, at->nullable);
	json_out_key(j, "fill");
	cell_json_cell(j, at->type, at->var, at->cell_val_num, at->fill,
		       at->fill_size);
	if (at->nullable) {
		json_out_key(j, "fill_valid");
		json_out_bool(j, at->fill_valid != 0);
	}
	if ((e = put_field_filters(j, s, tfs_schema_dim_count(s) + k)))
		return e;
	json_out_key(j, "enumeration");
	if (at->enumeration)
		json_out_cstr(j, at->enumeration);
	else
		json_out_null(j);
	json_out_end_object(j);
	return TFS_E_OK;
}

static enum tfs_err put_enumeration(struct json_out *j,
				    const struct tfs_enumeration *en)
{
	bool var = en->cell_val_num == TFS_VAR_NUM;
	uint64_t size = var ? 0
			    : tfs_datatype_size(en->type) *
				      (uint64_t)en->cell_val_num;

	begin_named(j, en->name, en->type);
	json_out_key(j, "cell_val_num");
	put_cell_val_num(j, var, en->cell_val_num);
	json_out_key(j, "ordered");
	json_out_bool(j, en->ordered);
	json_out_key(j, "values");
	json_out_begin_array(j);
	for (uint64_t i = 0; i < en->value_num; i++) {
		uint64_t start, end;

		if (var) {
			start = en->offsets[i];
			end = i + 1 < en->value_num ? en->offsets[i + 1]
						    : en->data_size;
		} else {
			start = i * size;
			end = start + size;
		}
		if (start > end || end > en->data_size)
			return TFS_E_CORRUPT;
		cell_json_cell(j, en->type, var, en->cell_val_num,
			       en->data + start, end - start);
	}
	json_out_end_array(j);
	json_out_end_object(j);
	return TFS_E_OK;
}

static bool dim_is_var(const struct tfs_schema *s, uint32_t k)
{
	struct tfs_field_info dim;

	tfs_schema_dim(s, k, &dim);
	return dim.var;
}

void array_json_ranges(struct json_out *j, const struct tfs_schema *s,
		       const struct tfs_range *r)
{
	json_out_begin_array(j);
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++)
		cell_json_range(j, tfs_schema_dim_type(s, k), dim_is_var(s, k),
				&r[k]);
	json_out_end_array(j);
}

static const char *order_name(uint8_t order)
{
	switch (order) {
	case 0: return "unordered";
	case 1: return "increasing";
	case 2: return "decreasing";
	default: return "invalid";
	}
}

static void put_label(struct json_out *j, const struct tfs_label_info *l)
{
	json_out_space(j, "\n   ");
	json_out_begin_object(j);
	json_out_key(j, "name");
	json_out_cstr(j, l->name);
	json_out_key(j, "dimension");
	json_out_cstr(j, l->dim_name);
	json_out_key(j, "dimension_index");
	json_out_u64(j, l->dim_index);
	json_out_key(j, "attribute");
	json_out_cstr(j, l->attr_name);
	json_out_key(j, "order");
	json_out_cstr(j, order_name(l->order));
	json_out_key(j, "type");
	json_out_cstr(j, tfs_datatype_name(l->type));
	json_out_key(j, "cell_val_num");
	put_cell_val_num(j, l->cell_val_num == TFS_VAR_NUM, l->cell_val_num);
	json_out_key(j, "uri");
	json_out_cstr(j, l->uri);
	json_out_key(j, "uri_relative");
	json_out_bool(j, l->uri_relative);
	json_out_key(j, "external");
	json_out_bool(j, l->external);
	json_out_key(j, "path");
	if (l->path)
		json_out_cstr(j, l->path);
	else
		json_out_null(j);
	json_out_end_object(j);
}

/* "dims" and "attrs". */
static enum tfs_err put_fields(struct json_out *j, const struct tfs_schema *s)
{
	enum tfs_err e;

	json_out_space(j, "\n  ");
	json_out_key(j, "dims");
	json_out_begin_array(j);
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++)
		if ((e = put_dim(j, s, k)))
			return e;
	json_out_end_array(j);
	json_out_space(j, "\n  ");
	json_out_key(j, "attrs");
	json_out_begin_array(j);
	for (uint32_t k = 0; k < tfs_schema_attr_count(s); k++)
		if ((e = put_attr(j, s, k)))
			return e;
	json_out_end_array(j);
	return TFS_E_OK;
}

/* The coordinates', offsets' and validity filters and their chunk
 * sizes. */
static enum tfs_err put_schema_filters(struct json_out *j,
				       const struct tfs_schema *s)
{
	enum tfs_err e;

	json_out_space(j, "\n  ");
	json_out_key(j, "coords_filters");
	if ((e = put_filters(j, s, TFS_FILTERS_COORDS, 0)))
		return e;
	json_out_key(j, "offsets_filters");
	if ((e = put_filters(j, s, TFS_FILTERS_OFFSETS, 0)))
		return e;
	json_out_key(j, "validity_filters");
	if ((e = put_filters(j, s, TFS_FILTERS_VALIDITY, 0)))
		return e;
	json_out_space(j, "\n  ");
	json_out_key(j, "max_chunk_sizes");
	json_out_begin_object(j);
	json_out_key(j, "coords");
	json_out_u64(j, tfs_schema_filter_chunk_max(s, TFS_FILTERS_COORDS, 0));
	json_out_key(j, "offsets");
	json_out_u64(j, tfs_schema_filter_chunk_max(s, TFS_FILTERS_OFFSETS, 0));
	json_out_key(j, "validity");
	json_out_u64(j,
		     tfs_schema_filter_chunk_max(s, TFS_FILTERS_VALIDITY, 0));
	json_out_end_object(j);
	return TFS_E_OK;
}

/* "dimension_labels", only when there are labels: the corpus JSON has no
 * such key. */
static void put_labels(struct json_out *j, const struct tfs_array *a)
{
	if (!tfs_array_label_count(a))
		return;
	json_out_space(j, "\n  ");
	json_out_key(j, "dimension_labels");
	json_out_begin_array(j);
	for (size_t i = 0; i < tfs_array_label_count(a); i++) {
		struct tfs_label_info l;

		tfs_array_label(a, i, &l);
		put_label(j, &l);
	}
	json_out_end_array(j);
}

enum tfs_err array_json_schema(struct json_out *j, const struct tfs_array *a)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	size_t enum_num = tfs_array_enumeration_count(a);
	struct tfs_schema_info info;
	enum tfs_err e;

	tfs_schema_get_info(s, &info);
	json_out_begin_object(j);
	if ((e = put_fields(j, s)))
		return e;
	json_out_space(j, "\n  ");
	json_out_key(j, "cell_order");
	json_out_cstr(j, layout_name(info.cell_order));
	json_out_key(j, "tile_order");
	json_out_cstr(j, layout_name(info.tile_order));
	json_out_key(j, "capacity");
	json_out_u64(j, info.capacity);
	json_out_key(j, "allows_dups");
	json_out_bool(j, info.allows_dups);
	if ((e = put_schema_filters(j, s)))
		return e;
	json_out_space(j, "\n  ");
	json_out_key(j, "enumerations");
	json_out_begin_array(j);
	for (size_t i = 0; i < enum_num; i++)
		if ((e = put_enumeration(j, tfs_array_enumeration(a, i))))
			return e;
	json_out_end_array(j);
	json_out_space(j, "\n  ");
	json_out_key(j, "current_domain");
	if (tfs_schema_current_domain(s, 0))
		array_json_ranges(j, s, tfs_schema_current_domain(s, 0));
	else
		json_out_null(j);
	put_labels(j, a);
	json_out_space(j, "\n  ");
	json_out_key(j, "timestamp_range");
	json_out_begin_array(j);
	json_out_u64(j, info.t1);
	json_out_u64(j, info.t2);
	json_out_end_array(j);
	json_out_space(j, "\n ");
	json_out_end_object(j);
	return TFS_E_OK;
}

void array_json_meta_entry(struct json_out *j, const struct tfs_meta_kv *kv)
{
	if (kv->deleted)
		return;
	json_out_space(j, "\n ");
	json_out_key_len(j, kv->key, kv->key_len);
	json_out_begin_object(j);
	json_out_key(j, "type");
	json_out_cstr(j, tfs_datatype_name(kv->type));
	json_out_key(j, "values");
	cell_json_meta_values(j, kv->type, kv->value_num, kv->value);
	json_out_end_object(j);
}

void array_json_metadata(struct json_out *j, const struct tfs_array *a)
{
	size_t n = tfs_array_metadata_count(a);

	json_out_begin_object(j);
	for (size_t i = 0; i < n; i++)
		array_json_meta_entry(j, tfs_array_metadata(a, i));
	json_out_end_object(j);
}

void array_json_fragment(struct json_out *j, const struct tfs_schema *s,
			 const struct tfs_fragment_info *f)
{
	json_out_begin_object(j);
	json_out_key(j, "name");
	json_out_cstr(j, f->name);
	json_out_key(j, "timestamps");
	json_out_begin_array(j);
	json_out_u64(j, f->t1);
	json_out_u64(j, f->t2);
	json_out_end_array(j);
	json_out_key(j, "format_version");
	json_out_u64(j, f->version);
	json_out_key(j, "dense");
	json_out_bool(j, f->dense);
	json_out_key(j, "cell_num");
	json_out_u64(j, f->cell_num);
	json_out_key(j, "consolidated_metadata");
	json_out_bool(j, f->consolidated_metadata);
	json_out_key(j, "schema");
	json_out_cstr(j, f->schema_name);
	json_out_key(j, "non_empty_domain");
	if (f->non_empty_domain)
		array_json_ranges(j, s, f->non_empty_domain);
	else
		json_out_null(j);
	json_out_end_object(j);
}

void array_json_fragments(struct json_out *j, const struct tfs_array *a)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	size_t n = tfs_array_fragment_count(a);

	json_out_begin_array(j);
	for (size_t i = 0; i < n; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		json_out_space(j, "\n ");
		array_json_fragment(j, s, &f);
	}
	json_out_end_array(j);
}
