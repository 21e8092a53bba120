/* The public description of a schema (tfs_schema.h): struct tfs_field_info
 * and struct tfs_schema_info filled from the parsed struct tfs_schema, so
 * that nothing above core/ reads the schema's fields directly. */
#include <assert.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_format.h"

void tfs_schema_get_info(const struct tfs_schema *s,
			 struct tfs_schema_info *out)
{
	memset(out, 0, sizeof(*out));
	out->name = s->name;
	out->t1 = s->t1;
	out->t2 = s->t2;
	out->version = s->version;
	out->array_type = s->array_type;
	out->tile_order = s->tile_order;
	out->cell_order = s->cell_order;
	out->capacity = s->capacity;
	out->allows_dups = s->allows_dups;
}

bool tfs_schema_is_dense(const struct tfs_schema *s)
{
	return s->array_type == TFS_DENSE;
}

uint32_t tfs_schema_dim_count(const struct tfs_schema *s)
{
	return s->dim_num;
}

uint32_t tfs_schema_attr_count(const struct tfs_schema *s)
{
	return s->attr_num;
}

uint32_t tfs_schema_field_count(const struct tfs_schema *s)
{
	return s->dim_num + s->attr_num;
}

const char *tfs_schema_dim_name(const struct tfs_schema *s, uint32_t i)
{
	assert(i < s->dim_num);
	return s->dims[i].name;
}

uint8_t tfs_schema_dim_type(const struct tfs_schema *s, uint32_t i)
{
	assert(i < s->dim_num);
	return s->dims[i].type;
}

void tfs_schema_dim(const struct tfs_schema *s, uint32_t i,
		    struct tfs_field_info *out)
{
	const struct tfs_dim *dim = &s->dims[i];

	assert(i < s->dim_num);
	memset(out, 0, sizeof(*out));
	out->name = dim->name;
	out->type = dim->type;
	out->cell_val_num = dim->var ? TFS_VAR_NUM : 1;
	out->var = dim->var;
	out->is_dim = true;
	out->has_domain = dim->has_domain;
	if (dim->has_domain) {
		out->domain_lo = dim->domain[0];
		out->domain_hi = dim->domain[1];
	}
	out->has_extent = dim->has_extent;
	if (dim->has_extent)
		out->extent = dim->extent;
}

void tfs_schema_attr(const struct tfs_schema *s, uint32_t i,
		     struct tfs_field_info *out)
{
	const struct tfs_attr *at = &s->attrs[i];

	assert(i < s->attr_num);
	memset(out, 0, sizeof(*out));
	out->name = at->name;
	out->type = at->type;
	out->cell_val_num = at->cell_val_num;
	out->var = at->var;
	out->nullable = at->nullable;
	out->fill = at->fill;
	out->fill_size = at->fill_size;
	out->fill_valid = at->fill_valid;
	out->order = at->order;
	out->enumeration = at->enumeration;
}

uint64_t tfs_field_cell_size(const struct tfs_field_info *f)
{
	uint64_t tsz = tfs_datatype_size(f->type);

	return f->var ? tsz : tsz * f->cell_val_num;
}

static const struct tfs_pipeline *filter_list(const struct tfs_schema *s,
					      enum tfs_filter_list which,
					      uint32_t i)
{
	switch (which) {
	case TFS_FILTERS_COORDS: return &s->coords_filters;
	case TFS_FILTERS_OFFSETS: return &s->offsets_filters;
	case TFS_FILTERS_VALIDITY: return &s->validity_filters;
	case TFS_FILTERS_OF_FIELD: break;
	}
	assert(i < s->dim_num + s->attr_num);
	return i < s->dim_num ? &s->dims[i].filters
			      : &s->attrs[i - s->dim_num].filters;
}

uint32_t tfs_schema_filter_count(const struct tfs_schema *s,
				 enum tfs_filter_list which, uint32_t field)
{
	return filter_list(s, which, field)->count;
}

uint64_t tfs_schema_filter_chunk_max(const struct tfs_schema *s,
				     enum tfs_filter_list which, uint32_t field)
{
	return filter_list(s, which, field)->max_chunk_size;
}

enum tfs_err tfs_schema_filter_describe(const struct tfs_schema *s,
					enum tfs_filter_list which,
					uint32_t field, uint32_t k,
					struct tfs_buf *out)
{
	const struct tfs_pipeline *p = filter_list(s, which, field);

	if (k >= p->count)
		return TFS_E_INVALID;
	return tfs_filter_describe(out, &p->filters[k]);
}

void tfs_schema_free(struct tfs_schema *s)
{
	if (!s)
		return;
	tfs_schema_release(s);
	tfs_free(s);
}

void tfs_schema_field(const struct tfs_schema *s, uint32_t i,
		      struct tfs_field_info *out)
{
	if (i < s->dim_num)
		tfs_schema_dim(s, i, out);
	else
		tfs_schema_attr(s, i - s->dim_num, out);
}

int tfs_schema_field_index(const struct tfs_schema *s, const char *name)
{
	int i = tfs_schema_dim_index(s, name);

	if (i >= 0)
		return i;
	i = tfs_schema_attr_index(s, name);
	return i < 0 ? -1 : (int)s->dim_num + i;
}

const struct tfs_range *tfs_schema_current_domain(const struct tfs_schema *s,
						  uint32_t i)
{
	if (!s->has_current_domain || i >= s->dim_num)
		return NULL;
	return &s->current_domain[i];
}
