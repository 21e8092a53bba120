/* Array schema serialization (format/schema.md §3–§7), the mirror of
 * schema.c: the payload is written for the version in the struct, with
 * exactly the fields that version has, so a parsed schema serializes back
 * to the bytes it came from. Versions below 5 need every dimension to be
 * fixed-size and of one type (they store a single domain type). */
#include <string.h>

#include "format_internal.h"

static enum tfs_err put_dim(struct tfs_buf *b, const struct tfs_schema *s,
			    const struct tfs_dim *dim)
{
	size_t tsz = tfs_datatype_size(dim->type);
	struct tfs_pipeline empty;
	enum tfs_err e;

	if ((e = tfs__put_str32(b, dim->name)))
		return e;
	if (s->version >= 5) {
		memset(&empty, 0, sizeof(empty));
		empty.max_chunk_size =
			dim->stored_max_chunk ? dim->stored_max_chunk : 65536;
		if ((e = tfs_buf_append_u8(b, dim->type)) ||
		    (e = tfs_buf_append_u32(b, dim->cell_val_num)) ||
		    (e = tfs_pipeline_serialize(
			     b, dim->filters_inherited ? &empty : &dim->filters,
			     s->version)) ||
		    (e = tfs_buf_append_u64(b, dim->var ? 0 : 2 * (uint64_t)tsz)))
			return e;
	}
	if (!dim->var) {
		if ((e = tfs_buf_append(b, dim->domain[0], tsz)) ||
		    (e = tfs_buf_append(b, dim->domain[1], tsz)))
			return e;
	}
	if ((e = tfs_buf_append_u8(b, dim->has_extent ? 0 : 1)))
		return e;
	if (dim->has_extent)
		return tfs_buf_append(b, dim->extent, tsz);
	return TFS_E_OK;
}

static enum tfs_err put_attr(struct tfs_buf *b, const struct tfs_schema *s,
			     const struct tfs_attr *a)
{
	enum tfs_err e;

	if ((e = tfs__put_str32(b, a->name)) ||
	    (e = tfs_buf_append_u8(b, a->type)) ||
	    (e = tfs_buf_append_u32(b, a->cell_val_num)) ||
	    (e = tfs_pipeline_serialize(b, &a->filters, s->version)))
		return e;
	if (s->version >= 6) {
		if (a->fill_size == 0 || !a->fill)
			return TFS_E_INVALID;
		if ((e = tfs_buf_append_u64(b, a->fill_size)) ||
		    (e = tfs_buf_append(b, a->fill, (size_t)a->fill_size)))
			return e;
	}
	if (s->version >= 7) {
		if ((e = tfs_buf_append_u8(b, a->nullable ? 1 : 0)) ||
		    (e = tfs_buf_append_u8(b, a->fill_valid)))
			return e;
	}
	if (s->version >= 17 && (e = tfs_buf_append_u8(b, a->order)))
		return e;
	if (s->version >= 20 && (e = tfs__put_str32(b, a->enumeration)))
		return e;
	return TFS_E_OK;
}

static enum tfs_err put_label(struct tfs_buf *b, const struct tfs_label *l)
{
	enum tfs_err e;

	if ((e = tfs_buf_append_u32(b, l->dim_index)) ||
	    (e = tfs__put_str32(b, l->name)) ||
	    (e = tfs_buf_append_u8(b, l->uri_relative ? 1 : 0)) ||
	    (e = tfs__put_str64(b, l->uri)) ||
	    (e = tfs__put_str32(b, l->attr_name)) ||
	    (e = tfs_buf_append_u8(b, l->order)) ||
	    (e = tfs_buf_append_u8(b, l->type)) ||
	    (e = tfs_buf_append_u32(b, l->cell_val_num)) ||
	    (e = tfs_buf_append_u8(b, l->is_external ? 1 : 0)))
		return e;
	return TFS_E_OK;
}

static enum tfs_err put_body(struct tfs_buf *b, const struct tfs_schema *s)
{
	enum tfs_err e;

	if (s->version == 0 || s->version > TFS_FORMAT_VERSION_MAX ||
	    s->dim_num == 0 || !s->dims)
		return TFS_E_INVALID;
	if (s->version < 5) {
		for (uint32_t i = 0; i < s->dim_num; i++)
			if (s->dims[i].var || s->dims[i].type != s->dims[0].type)
				return TFS_E_INVALID;
	}
	if ((e = tfs_buf_append_u32(b, s->version)))
		return e;
	if (s->version >= 5 &&
	    (e = tfs_buf_append_u8(b, s->allows_dups ? 1 : 0)))
		return e;
	if ((e = tfs_buf_append_u8(b, s->array_type)) ||
	    (e = tfs_buf_append_u8(b, s->tile_order)) ||
	    (e = tfs_buf_append_u8(b, s->cell_order)) ||
	    (e = tfs_buf_append_u64(b, s->capacity)) ||
	    (e = tfs_pipeline_serialize(b, &s->coords_filters, s->version)) ||
	    (e = tfs_pipeline_serialize(b, &s->offsets_filters, s->version)))
		return e;
	if (s->version >= 7 &&
	    (e = tfs_pipeline_serialize(b, &s->validity_filters, s->version)))
		return e;
	if (s->version < 5 && (e = tfs_buf_append_u8(b, s->dims[0].type)))
		return e;
	if ((e = tfs_buf_append_u32(b, s->dim_num)))
		return e;
	for (uint32_t i = 0; i < s->dim_num; i++)
		if ((e = put_dim(b, s, &s->dims[i])))
			return e;
	if ((e = tfs_buf_append_u32(b, s->attr_num)))
		return e;
	for (uint32_t i = 0; i < s->attr_num; i++)
		if ((e = put_attr(b, s, &s->attrs[i])))
			return e;
	if (s->version >= 18) {
		if ((e = tfs_buf_append_u32(b, s->label_num)))
			return e;
		for (uint32_t i = 0; i < s->label_num; i++)
			if ((e = put_label(b, &s->labels[i])))
				return e;
	}
	if (s->version >= 20) {
		if ((e = tfs_buf_append_u32(b, s->enum_num)))
			return e;
		for (uint32_t i = 0; i < s->enum_num; i++)
			if ((e = tfs__put_str32(b, s->enums[i].name)) ||
			    (e = tfs__put_str32(b, s->enums[i].file)))
				return e;
	}
	if (s->version >= 22) {
		if ((e = tfs_buf_append_u32(b, 0)) ||
		    (e = tfs_buf_append_u8(b, s->has_current_domain ? 0 : 1)))
			return e;
		if (s->has_current_domain) {
			if (!s->current_domain)
				return TFS_E_INVALID;
			if ((e = tfs_buf_append_u8(b, 0)))
				return e;
			for (uint32_t i = 0; i < s->dim_num; i++)
				if ((e = tfs__range_write(b, s->dims[i].var,
							  &s->current_domain[i])))
					return e;
		}
	}
	return TFS_E_OK;
}

enum tfs_err tfs_schema_serialize(struct tfs_buf *out,
				  const struct tfs_schema *s)
{
	size_t start = out->len;
	enum tfs_err e = put_body(out, s);

	if (e)
		out->len = start;
	return e;
}
