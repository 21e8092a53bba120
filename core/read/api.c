/* The public API of the core (tilefs.h): opening arrays, describing them,
 * and running queries through the dense or sparse reader. */
#include "tfs_read.h"

#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"

#define DEFAULT_BATCH_CELLS (UINT64_C(1) << 20)
/* Output columns of one batch never grow past this. */
#define MAX_COLUMN_BYTES ((size_t)1 << 34)

enum tfs_err tfs_key_from_hex(uint8_t key[32], const char *hex)
{
	if (strlen(hex) != 64)
		return TFS_E_INVALID;
	for (size_t i = 0; i < 32; i++) {
		unsigned v = 0;

		for (size_t j = 0; j < 2; j++) {
			char c = hex[2 * i + j];

			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v |= (unsigned)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				v |= (unsigned)(c - 'A' + 10);
			else
				return TFS_E_INVALID;
		}
		key[i] = (uint8_t)v;
	}
	return TFS_E_OK;
}

enum tfs_err tfs_object_type(struct tfs_vfs *vfs, const char *path,
			     enum tfs_object *out, struct tfs_diag *d)
{
	struct tfs_vfs *own = NULL;
	enum tfs_object_kind kind = TFS_OBJ_NONE;
	enum tfs_err e;

	*out = TFS_OBJECT_NONE;
	if (!vfs) {
		e = tfs_vfs_default_new(path, &own, d);
		if (e)
			return e;
		vfs = own;
	}
	e = tfs_object_kind_of(vfs, path, &kind, d);
	if (!e)
		*out = kind == TFS_OBJ_ARRAY   ? TFS_OBJECT_ARRAY
		       : kind == TFS_OBJ_GROUP ? TFS_OBJECT_GROUP
					       : TFS_OBJECT_NONE;
	tfs_vfs_free(own);
	return e;
}

static size_t range_bytes(const struct tfs_range *r)
{
	return (size_t)(r->lo_len + r->hi_len);
}

/* Copies ranges into one owned block; views in `out` point into it. */
static enum tfs_err copy_ranges(struct tfs_range *out, uint8_t **block,
				const struct tfs_range *src, uint32_t n)
{
	size_t total = 0, pos = 0;
	uint8_t *b;

	for (uint32_t i = 0; i < n; i++)
		total += range_bytes(&src[i]);
	b = tfs_malloc(total);
	if (!b)
		return TFS_E_NOMEM;
	for (uint32_t i = 0; i < n; i++) {
		out[i].lo_len = src[i].lo_len;
		out[i].hi_len = src[i].hi_len;
		if (src[i].lo_len)
			memcpy(b + pos, src[i].lo, (size_t)src[i].lo_len);
		out[i].lo = b + pos;
		pos += (size_t)src[i].lo_len;
		if (src[i].hi_len)
			memcpy(b + pos, src[i].hi, (size_t)src[i].hi_len);
		out[i].hi = b + pos;
		pos += (size_t)src[i].hi_len;
	}
	*block = b;
	return TFS_E_OK;
}

static int bound_cmp(const struct tfs_dim *dim, const uint8_t *a, uint64_t alen,
		     const uint8_t *b, uint64_t blen)
{
	if (dim->var)
		return tfs_bytes_cmp(a, (size_t)alen, b, (size_t)blen);
	return tfs_value_cmp(dim->type, a, b);
}

/* Union of the visible fragments' non-empty domains. */
static enum tfs_err compute_ned(struct tfs_array *arr)
{
	const struct tfs_schema *s = arr->dir->schema;
	struct tfs_range *acc;
	enum tfs_err e;

	acc = tfs_callocn(s->dim_num, sizeof(*acc));
	if (!acc)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < arr->dir->fragment_num; i++) {
		const struct tfs_footer *ft = &arr->dir->fragments[i]->footer;

		if (ft->empty || ft->dim_num != s->dim_num)
			continue;
		for (uint32_t k = 0; k < s->dim_num; k++) {
			const struct tfs_range *r = &ft->ned[k];
			const struct tfs_dim *dim = &s->dims[k];

			if (!arr->has_ned ||
			    bound_cmp(dim, r->lo, r->lo_len, acc[k].lo,
				      acc[k].lo_len) < 0) {
				acc[k].lo = r->lo;
				acc[k].lo_len = r->lo_len;
			}
			if (!arr->has_ned ||
			    bound_cmp(dim, r->hi, r->hi_len, acc[k].hi,
				      acc[k].hi_len) > 0) {
				acc[k].hi = r->hi;
				acc[k].hi_len = r->hi_len;
			}
		}
		arr->has_ned = true;
	}
	arr->ned = tfs_callocn(s->dim_num, sizeof(*arr->ned));
	if (!arr->ned) {
		tfs_free(acc);
		return TFS_E_NOMEM;
	}
	e = arr->has_ned ? copy_ranges(arr->ned, &arr->ned_bytes, acc,
				       s->dim_num)
			 : TFS_E_OK;
	tfs_free(acc);
	return e;
}

/* Sorts enumeration indices by name (insertion sort: they are few). */
static enum tfs_err sort_enums(struct tfs_array *arr)
{
	const struct tfs_enumeration *en = arr->dir->enums;
	size_t n = arr->dir->enum_num;

	arr->enum_order = tfs_callocn(n ? n : 1, sizeof(size_t));
	if (!arr->enum_order)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		while (j > 0 && strcmp(en[arr->enum_order[j - 1]].name,
				       en[i].name) > 0) {
			arr->enum_order[j] = arr->enum_order[j - 1];
			j--;
		}
		arr->enum_order[j] = i;
	}
	return TFS_E_OK;
}

/* The folder of a dimension label's array (schema.md §6) into *out: a
 * relative URI names a folder inside the array's (TileDB writes
 * `__labels/l<k>`), an absolute one is a file:// URI or a plain path.
 * *out stays NULL for other schemes and for relative URIs that climb out
 * of the array folder. */
static enum tfs_err label_path(const char *array, const struct tfs_label *l,
			       char **out)
{
	static const char file_scheme[] = "file://";
	const char *uri = l->uri, *p;

	*out = NULL;
	if (!uri || !uri[0])
		return TFS_E_OK;
	if (!l->uri_relative) {
		if (!strncmp(uri, file_scheme, sizeof(file_scheme) - 1))
			uri += sizeof(file_scheme) - 1;
		else if (strstr(uri, "://"))
			return TFS_E_OK;
		if (uri[0] != '/')
			return TFS_E_OK;
		*out = tfs_strdup(uri);
		return *out ? TFS_E_OK : TFS_E_NOMEM;
	}
	for (p = uri; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return TFS_E_OK;
		p += n;
		while (*p == '/')
			p++;
	}
	*out = tfs_path_join(array, uri);
	return *out ? TFS_E_OK : TFS_E_NOMEM;
}

static enum tfs_err resolve_labels(struct tfs_array *arr)
{
	const struct tfs_schema *s = arr->dir->schema;
	enum tfs_err e = TFS_E_OK;

	arr->label_paths = tfs_callocn(s->label_num ? s->label_num : 1,
				       sizeof(char *));
	if (!arr->label_paths)
		return TFS_E_NOMEM;
	for (uint32_t i = 0; i < s->label_num && !e; i++)
		e = label_path(arr->dir->path, &s->labels[i],
			       &arr->label_paths[i]);
	return e;
}

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a;
	uintptr_t y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

/* arr->listed_visible: each listed fragment found among the visible ones
 * (sorted by address, then searched). */
static enum tfs_err mark_visible(struct tfs_array *arr)
{
	const struct tfs_arraydir *dir = arr->dir;
	size_t n = dir->fragment_num;
	struct tfs_fragment **sorted;

	arr->listed_visible = tfs_callocn(dir->listed_num ? dir->listed_num : 1,
					  sizeof(*arr->listed_visible));
	sorted = tfs_mallocn(n ? n : 1, sizeof(*sorted));
	if (!arr->listed_visible || !sorted) {
		tfs_free(sorted);
		return TFS_E_NOMEM;
	}
	if (n)
		memcpy(sorted, dir->fragments, n * sizeof(*sorted));
	if (n > 1)
		qsort(sorted, n, sizeof(*sorted), ptr_cmp);
	for (size_t i = 0; i < dir->listed_num; i++)
		arr->listed_visible[i] =
			n && bsearch(&dir->listed[i], sorted, n,
				     sizeof(*sorted), ptr_cmp) != NULL;
	tfs_free(sorted);
	return TFS_E_OK;
}

enum tfs_err tfs_array_open(const char *path, const struct tfs_open_opts *opts,
			    struct tfs_array **out, struct tfs_diag *d)
{
	struct tfs_arraydir_opts dopts = {0};
	struct tfs_array *arr;
	unsigned threads;
	enum tfs_err e;

	*out = NULL;
	arr = tfs_callocn(1, sizeof(*arr));
	if (!arr)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	arr->vfs = opts ? opts->vfs : NULL;
	if (!arr->vfs) {
		e = tfs_vfs_default_new(path, &arr->vfs, d);
		if (e) {
			tfs_free(arr);
			return e;
		}
		arr->own_vfs = true;
	}
	dopts.key = opts ? opts->key : NULL;
	dopts.t0 = opts ? opts->timestamp_start : 0;
	dopts.t1 = opts && opts->timestamp ? opts->timestamp : UINT64_MAX;
	dopts.del_t1 = opts ? opts->delete_timestamp : 0;
	e = tfs_arraydir_open(arr->vfs, path, &dopts, &arr->dir, d);
	if (e)
		goto out_fail;
	arr->dir->cache = opts ? opts->cache : NULL;
	arr->dir->max_tile_bytes = opts ? opts->max_tile_bytes : 0;
	/* The calling thread decodes too (jobs it waits for run inline). */
	if (opts && opts->pool) {
		arr->pool = opts->pool;
	} else {
		threads = opts && opts->threads ? opts->threads : tfs_cpu_count();
		e = tfs_pool_new(threads - 1, &arr->pool);
		if (e) {
			tfs_fail(d, e, "array '%s': cannot start decode threads",
				 path);
			goto out_fail;
		}
		arr->own_pool = true;
	}
	e = compute_ned(arr);
	if (!e)
		e = sort_enums(arr);
	if (!e)
		e = resolve_labels(arr);
	if (!e)
		e = mark_visible(arr);
	if (e) {
		tfs_fail(d, e, "out of memory");
		goto out_fail;
	}
	*out = arr;
	return TFS_E_OK;
out_fail:
	tfs_array_close(arr);
	return e;
}

void tfs_array_close(struct tfs_array *a)
{
	if (!a)
		return;
	for (uint32_t i = 0; a->label_paths && i < a->dir->schema->label_num;
	     i++)
		tfs_free(a->label_paths[i]);
	tfs_free(a->label_paths);
	tfs_free(a->listed_visible);
	if (a->own_pool)
		tfs_pool_free(a->pool);
	if (a->dir)
		tfs_arraydir_close(a->dir);
	if (a->own_vfs)
		tfs_vfs_free(a->vfs);
	tfs_free(a->ned);
	tfs_free(a->ned_bytes);
	tfs_free(a->enum_order);
	tfs_free(a);
}

uint64_t tfs_array_timestamp(const struct tfs_array *a)
{
	return a->dir->t1;
}

const struct tfs_schema *tfs_array_schema(const struct tfs_array *a)
{
	return a->dir->schema;
}

size_t tfs_array_enumeration_count(const struct tfs_array *a)
{
	return a->dir->enum_num;
}

const struct tfs_enumeration *tfs_array_enumeration(const struct tfs_array *a,
						    size_t i)
{
	return &a->dir->enums[a->enum_order[i]];
}

const struct tfs_enumeration *
tfs_array_enumeration_named(const struct tfs_array *a, const char *name)
{
	for (size_t i = 0; i < a->dir->enum_num; i++)
		if (strcmp(a->dir->enums[i].name, name) == 0)
			return &a->dir->enums[i];
	return NULL;
}

bool tfs_array_non_empty_domain(const struct tfs_array *a,
				struct tfs_range *out)
{
	if (!a->has_ned)
		return false;
	memcpy(out, a->ned, a->dir->schema->dim_num * sizeof(*out));
	return true;
}

size_t tfs_array_fragment_count(const struct tfs_array *a)
{
	return a->dir->listed_num;
}

uint64_t tfs_array_memory(const struct tfs_array *a)
{
	uint64_t n = 0;

	for (size_t i = 0; i < a->dir->listed_num; i++)
		n += tfs_fragment_memory_alone(a->dir->listed[i]);
	return n;
}

void tfs_array_fragment(const struct tfs_array *a, size_t i,
			struct tfs_fragment_info *out)
{
	const struct tfs_fragment *f = a->dir->listed[i];

	out->name = f->name;
	out->t1 = f->name_info.t1;
	out->t2 = f->name_info.t2;
	out->version = f->footer.version;
	out->dense = f->footer.dense;
	out->cell_num = f->cell_num;
	out->consolidated_metadata = f->consolidated_meta;
	out->schema_name = f->schema->name;
	out->non_empty_domain = f->footer.ned;
	out->cell_timestamps = f->footer.has_timestamps;
	out->visible = a->listed_visible[i];
}

size_t tfs_array_vacuum_count(const struct tfs_array *a)
{
	return a->dir->to_vacuum_num;
}

const char *tfs_array_vacuum_name(const struct tfs_array *a, size_t i)
{
	return a->dir->to_vacuum[i];
}

size_t tfs_array_label_count(const struct tfs_array *a)
{
	return a->dir->schema->label_num;
}

void tfs_array_label(const struct tfs_array *a, size_t i,
		     struct tfs_label_info *out)
{
	const struct tfs_schema *s = a->dir->schema;
	const struct tfs_label *l = &s->labels[i];

	out->name = l->name;
	out->dim_index = l->dim_index;
	out->dim_name = s->dims[l->dim_index].name;
	out->attr_name = l->attr_name;
	out->order = l->order;
	out->type = l->type;
	out->cell_val_num = l->cell_val_num;
	out->external = l->is_external;
	out->uri_relative = l->uri_relative;
	out->uri = l->uri;
	out->path = a->label_paths[i];
}

size_t tfs_array_update_count(const struct tfs_array *a)
{
	return a->dir->update_num;
}

void tfs_array_update(const struct tfs_array *a, size_t i,
		      struct tfs_update_info *out)
{
	const struct tfs_update_commit *u = &a->dir->updates[i];

	out->marker = u->marker;
	out->t1 = u->t1;
	out->t2 = u->t2;
	out->update = u->has_values ? &u->update : NULL;
}

size_t tfs_array_metadata_count(const struct tfs_array *a)
{
	return a->dir->metadata.count;
}

const struct tfs_meta_kv *tfs_array_metadata(const struct tfs_array *a,
					     size_t i)
{
	return &a->dir->metadata.entries[i];
}

/* ---- Queries ------------------------------------------------------------ */

static enum tfs_err resolve_field(struct tfs_query *q, size_t i,
				  const char *name, struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;
	struct tfs_out_field *f = &q->fields[i];
	int k = tfs_schema_dim_index(s, name);

	if (k >= 0) {
		const struct tfs_dim *dim = &s->dims[k];

		f->name = dim->name;
		f->is_dim = true;
		f->index = (uint32_t)k;
		f->type = dim->type;
		f->cell_val_num = dim->cell_val_num;
		f->var = dim->var;
		f->cell_size = tfs_datatype_size(dim->type);
		return TFS_E_OK;
	}
	k = tfs_schema_attr_index(s, name);
	if (k < 0)
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"array '%s': no attribute or dimension '%s'",
				q->dir->path, name);
	{
		const struct tfs_attr *at = &s->attrs[k];

		f->name = at->name;
		f->index = (uint32_t)k;
		f->type = at->type;
		f->cell_val_num = at->cell_val_num;
		f->var = at->var;
		f->nullable = at->nullable;
		f->cell_size = at->var ? tfs_datatype_size(at->type)
				       : tfs_attr_cell_size(at);
		f->fill = at->fill;
		f->fill_size = at->fill_size;
		f->fill_valid = at->fill_valid;
	}
	return TFS_E_OK;
}

static enum tfs_err check_subarray(const struct tfs_query *q,
				   const struct tfs_range *sub,
				   struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;

	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];

		if (dim->var)
			continue;
		if (sub[k].lo_len != tfs_datatype_size(dim->type) ||
		    sub[k].hi_len != sub[k].lo_len)
			return tfs_fail(d, TFS_E_INVALID,
					"subarray of dimension '%s' has the "
					"wrong value size",
					dim->name);
		if (tfs_value_cmp(dim->type, sub[k].lo, sub[k].hi) > 0)
			return tfs_fail(d, TFS_E_INVALID,
					"subarray of dimension '%s' has "
					"low > high",
					dim->name);
		if (dim->has_domain &&
		    (tfs_value_cmp(dim->type, sub[k].lo, dim->domain[0]) < 0 ||
		     tfs_value_cmp(dim->type, sub[k].hi, dim->domain[1]) > 0))
			return tfs_fail(d, TFS_E_RANGE,
					"subarray of dimension '%s' is outside "
					"the domain",
					dim->name);
	}
	return TFS_E_OK;
}

/* Appends, after the fields asked for, every field of the schema not
 * among them (see tfs_query.out_num); q->fields has room for them. */
static enum tfs_err add_order_fields(struct tfs_query *q, struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;

	for (size_t k = 0; k < (size_t)s->dim_num + s->attr_num; k++) {
		bool is_dim = k < s->dim_num;
		uint32_t index = (uint32_t)(is_dim ? k : k - s->dim_num);
		const char *name = is_dim ? s->dims[index].name
					  : s->attrs[index].name;
		bool have = false;
		size_t i = q->field_num;
		enum tfs_err e;

		for (size_t j = 0; j < q->field_num && !have; j++)
			have = q->fields[j].is_dim == is_dim &&
			       q->fields[j].index == index;
		if (have)
			continue;
		tfs_buf_init(&q->cols[i].data, MAX_COLUMN_BYTES);
		tfs_buf_init(&q->cols[i].offsets, MAX_COLUMN_BYTES);
		tfs_buf_init(&q->cols[i].validity, MAX_COLUMN_BYTES);
		q->field_num = i + 1;
		e = resolve_field(q, i, name, d);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

enum tfs_err tfs_query_open(struct tfs_array *a,
			    const struct tfs_query_opts *opts,
			    struct tfs_query **out, struct tfs_diag *d)
{
	return tfs__query_open_hooked(a, opts, NULL, NULL, out, d);
}

/* A new query on a with opts' settings; no fields yet. */
static struct tfs_query *query_new(
	struct tfs_array *a, const struct tfs_query_opts *opts,
	bool (*tile_may_match)(void *arg, const struct tfs_fragment *f,
			       uint64_t tile, const struct tfs_range *box),
	void *tile_arg)
{
	const struct tfs_schema *s = a->dir->schema;
	struct tfs_query *q = tfs_callocn(1, sizeof(*q));

	if (!q)
		return NULL;
	q->array = a;
	q->dir = a->dir;
	q->schema = s;
	q->tile_may_match = tile_may_match;
	q->tile_arg = tile_arg;
	q->total_cells = UINT64_MAX;
	q->batch_cells = opts && opts->batch_cells ? opts->batch_cells
						   : DEFAULT_BATCH_CELLS;
	q->stored_order = opts && opts->stored_order;
	if (opts) {
		memcpy(q->stored_from, opts->stored_from, sizeof(q->stored_from));
		memcpy(q->stored_to, opts->stored_to, sizeof(q->stored_to));
		q->stored_bounded = opts->stored_from[0] || opts->stored_from[1] ||
				    opts->stored_to[0] || opts->stored_to[1];
	}
	q->decode_only = opts && opts->decode_only;
	q->out_num = opts && opts->fields ? opts->field_num
					  : (size_t)s->dim_num + s->attr_num;
	return q;
}

/* Room for the fields asked for (q->out_num) and, when order may
 * duplicate them, every field of the schema again: *nfields in all. */
static enum tfs_err alloc_fields(struct tfs_query *q, size_t *nfields,
				 struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;
	size_t n = q->out_num;

	/* Room for the fields that order duplicates (see out_num). */
	if (s->array_type == TFS_SPARSE && s->allows_dups &&
	    __builtin_add_overflow(n, (size_t)s->dim_num + s->attr_num, &n))
		return tfs_fail(d, TFS_E_TOO_BIG, "too many fields");
	*nfields = n;
	q->fields = tfs_callocn(n ? n : 1, sizeof(*q->fields));
	q->cols = tfs_callocn(n ? n : 1, sizeof(*q->cols));
	q->columns = tfs_callocn(n ? n : 1, sizeof(*q->columns));
	q->sub = tfs_callocn(s->dim_num, sizeof(*q->sub));
	if (!q->fields || !q->cols || !q->columns || !q->sub)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

/* Resolves the fields asked for (all of the schema's without a list). */
static enum tfs_err resolve_fields(struct tfs_query *q,
				   const struct tfs_query_opts *opts,
				   struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;

	for (size_t i = 0; i < q->out_num; i++) {
		const char *name;
		enum tfs_err e;

		if (opts && opts->fields)
			name = opts->fields[i];
		else if (i < s->dim_num)
			name = s->dims[i].name;
		else
			name = s->attrs[i - s->dim_num].name;
		tfs_buf_init(&q->cols[i].data, MAX_COLUMN_BYTES);
		tfs_buf_init(&q->cols[i].offsets, MAX_COLUMN_BYTES);
		tfs_buf_init(&q->cols[i].validity, MAX_COLUMN_BYTES);
		q->field_num = i + 1;
		e = resolve_field(q, i, name, d);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

/* The plain queries a filtered reading sits on (tfs__where_open). */
static const struct tfs__inner_queries inner_queries = {
	.open = tfs__query_open_hooked,
	.next = tfs_query_next,
	.close = tfs_query_close,
};

/* Checks and copies the subarray, then opens the reader that serves the
 * query: the condition's, the dense or the sparse one. */
static enum tfs_err open_reader(struct tfs_query *q,
				const struct tfs_query_opts *opts,
				const struct tfs_range *sub,
				struct tfs_diag *d)
{
	enum tfs_err e = check_subarray(q, sub, d);

	if (e)
		return e;
	if (copy_ranges(q->sub, &q->sub_bytes, sub, q->schema->dim_num))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if (opts && opts->condition)
		return tfs__where_open(q, opts, &inner_queries, d);
	if (q->schema->array_type == TFS_DENSE) {
		/* Offered to the dense reader, which keeps it when the
		 * cells fit (tfs_query_opts.dest). */
		if (opts && !q->decode_only) {
			q->dest = opts->dest;
			q->dest_bytes = opts->dest_bytes;
		}
		return tfs_dense_reader_open(q, d);
	}
	return tfs_sparse_reader_open(q, d);
}

enum tfs_err tfs__query_open_hooked(
	struct tfs_array *a, const struct tfs_query_opts *opts,
	bool (*tile_may_match)(void *arg, const struct tfs_fragment *f,
			       uint64_t tile, const struct tfs_range *box),
	void *tile_arg, struct tfs_query **out, struct tfs_diag *d)
{
	const struct tfs_range *sub;
	struct tfs_query *q;
	size_t nfields = 0;
	enum tfs_err e;

	*out = NULL;
	q = query_new(a, opts, tile_may_match, tile_arg);
	if (!q)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = alloc_fields(q, &nfields, d);
	if (!e)
		e = resolve_fields(q, opts, d);
	if (!e && nfields > q->out_num)
		e = add_order_fields(q, d);
	if (e)
		goto out_fail;
	sub = opts && opts->subarray ? opts->subarray : NULL;
	if (!sub && !a->has_ned) {
		q->done = true; /* nothing written: no cells */
		q->total_cells = opts && opts->condition ? UINT64_MAX : 0;
		*out = q;
		return TFS_E_OK;
	}
	if (!sub)
		sub = a->ned;
	e = open_reader(q, opts, sub, d);
	if (e)
		goto out_fail;
	*out = q;
	return TFS_E_OK;
out_fail:
	tfs_query_close(q);
	return e;
}

enum tfs_err tfs_query_next(struct tfs_query *q, const struct tfs_batch **out,
			    struct tfs_diag *d)
{
	enum tfs_err e;

	*out = NULL;
	if (q->done)
		return TFS_E_OK;
	tfs_out_reset(q);
	e = q->reader_ops->next(q, d);
	tfs_out_account(q);
	if (e)
		return e;
	if (!q->batch_cell_num) {
		q->done = true;
		return TFS_E_OK;
	}
	for (size_t i = 0; i < q->field_num; i++) {
		struct tfs_out_column *c = &q->cols[i];
		const struct tfs_out_field *f = &q->fields[i];
		struct tfs_column *col = &q->columns[i];

		if (f->var && tfs_buf_append_u64(&c->offsets, c->data.len))
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		col->name = f->name;
		col->type = f->type;
		col->cell_val_num = f->cell_val_num;
		col->var = f->var;
		col->nullable = f->nullable;
		col->is_dim = f->is_dim;
		col->data = c->data.data;
		col->data_len = c->data.len;
		col->offsets = f->var ? (const uint64_t *)(const void *)
						c->offsets.data
				      : NULL;
		col->validity = f->nullable ? c->validity.data : NULL;
	}
	q->batch.cell_num = q->batch_cell_num;
	q->batch.column_num = q->out_num;
	q->batch.columns = q->columns;
	*out = &q->batch;
	return TFS_E_OK;
}

uint64_t tfs_query_cell_count(const struct tfs_query *q)
{
	return q->total_cells;
}

bool tfs_query_cells_known(const struct tfs_query *q, uint64_t *cells)
{
	if (q->where || (!q->cells_known && q->total_cells == UINT64_MAX))
		return false;
	*cells = q->cells_known ? q->known_cells : q->total_cells;
	return true;
}

bool tfs_query_stored_pos(const struct tfs_query *q, uint64_t pos[2])
{
	if (!q->stored_pos_ok)
		return false;
	pos[0] = q->stored_pos[0];
	pos[1] = q->stored_pos[1];
	return true;
}

void tfs_query_close(struct tfs_query *q)
{
	if (!q)
		return;
	if (q->reader_ops)
		q->reader_ops->free(q);
	tfs_out_release(q);
	tfs_free(q->cols);
	tfs_free(q->columns);
	tfs_free(q->fields);
	tfs_free(q->sub);
	tfs_free(q->sub_bytes);
	tfs_free(q);
}
