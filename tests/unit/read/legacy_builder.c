/* The test-array builder (legacy_builder.h): schemas, fragments of every
 * format version, consolidated fragment metadata and commit files, written
 * from the format description with the project's serializers where they
 * exist (schema, footer, R-tree, u64 lists, filtered tiles) and by hand
 * where they don't (legacy fragment metadata, file names, layouts). */
#include "legacy_builder.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_filter.h"
#include "vfs_test_util.h"

/* ---- schemas ------------------------------------------------------------- */

void lb_schema_init(struct tfs_schema *s, uint32_t version, bool sparse,
		    uint64_t capacity)
{
	memset(s, 0, sizeof(*s));
	s->version = version;
	s->array_type = sparse ? TFS_SPARSE : TFS_DENSE;
	s->tile_order = TFS_ROW_MAJOR;
	s->cell_order = TFS_ROW_MAJOR;
	s->capacity = capacity;
	tfs_pipeline_init(&s->coords_filters);
	tfs_pipeline_init(&s->offsets_filters);
	tfs_pipeline_init(&s->validity_filters);
	s->dims = tfs_callocn(LB_MAX_DIMS, sizeof(*s->dims));
	s->attrs = tfs_callocn(LB_MAX_ATTRS, sizeof(*s->attrs));
	cr_assert(s->dims && s->attrs);
}

static void put_int(uint8_t *dst, uint8_t type, int64_t v)
{
	size_t n = tfs_datatype_size(type);
	uint64_t u = (uint64_t)v;

	for (size_t i = 0; i < n; i++)
		dst[i] = (uint8_t)(u >> (8 * i));
}

struct tfs_dim *lb_add_dim(struct tfs_schema *s, const char *name, uint8_t type,
			   int64_t lo, int64_t hi, int64_t extent)
{
	struct tfs_dim *d;

	cr_assert_lt(s->dim_num, LB_MAX_DIMS);
	d = &s->dims[s->dim_num++];
	d->name = tfs_strdup(name);
	d->type = type;
	d->cell_val_num = 1;
	d->filters_inherited = true;
	tfs_pipeline_init(&d->filters);
	d->has_domain = true;
	put_int(d->domain[0], type, lo);
	put_int(d->domain[1], type, hi);
	d->has_extent = extent != 0;
	if (extent)
		put_int(d->extent, type, extent);
	return d;
}

struct tfs_dim *lb_add_str_dim(struct tfs_schema *s, const char *name)
{
	struct tfs_dim *d;

	cr_assert_lt(s->dim_num, LB_MAX_DIMS);
	d = &s->dims[s->dim_num++];
	d->name = tfs_strdup(name);
	d->type = TFS_STRING_ASCII;
	d->cell_val_num = TFS_VAR_NUM;
	d->var = true;
	d->filters_inherited = true;
	tfs_pipeline_init(&d->filters);
	return d;
}

struct tfs_attr *lb_add_attr(struct tfs_schema *s, const char *name,
			     uint8_t type, uint32_t cell_val_num, bool nullable)
{
	struct tfs_attr *a;
	uint32_t n = cell_val_num == TFS_VAR_NUM ? 1 : cell_val_num;
	size_t size = tfs_datatype_size(type);

	cr_assert_lt(s->attr_num, LB_MAX_ATTRS);
	a = &s->attrs[s->attr_num++];
	a->name = tfs_strdup(name);
	a->type = type;
	a->cell_val_num = cell_val_num;
	a->var = cell_val_num == TFS_VAR_NUM;
	a->nullable = nullable;
	tfs_pipeline_init(&a->filters);
	a->fill_size = (uint64_t)n * size;
	a->fill = tfs_malloc((size_t)a->fill_size);
	cr_assert(a->name && a->fill);
	for (uint32_t i = 0; i < n; i++)
		tfs_datatype_default_fill(type, a->fill + i * size);
	return a;
}

void lb_set_fill(struct tfs_attr *a, const void *fill, uint64_t size)
{
	tfs_free(a->fill);
	a->fill = tfs_memdup(fill, (size_t)size);
	a->fill_size = size;
}

void lb_add_filter(struct tfs_pipeline *p, uint8_t type)
{
	struct tfs_filter f;

	tfs_filter_init(&f, (enum tfs_filter_type)type);
	cr_assert_eq(tfs_pipeline_add(p, &f), TFS_E_OK);
}

void lb_add_label(struct tfs_schema *s, uint32_t dim, const char *name,
		  const char *uri, bool relative, uint8_t order, uint8_t type)
{
	struct tfs_label *l;
	struct tfs_label *n = tfs_reallocn(s->labels, s->label_num + 1,
					   sizeof(*n));

	cr_assert(n);
	s->labels = n;
	l = &s->labels[s->label_num++];
	memset(l, 0, sizeof(*l));
	l->dim_index = dim;
	l->name = tfs_strdup(name);
	l->uri_relative = relative;
	l->uri = tfs_strdup(uri);
	l->attr_name = tfs_strdup("label");
	l->order = order;
	l->type = type;
	l->cell_val_num = tfs_datatype_is_string(type) ? TFS_VAR_NUM : 1;
}

/* ---- files --------------------------------------------------------------- */

void lb_put(struct lb_array *a, const char *rel, const void *data, size_t len)
{
	struct tfs_diag d;
	char *p = tfs_path_join(a->dir, rel);

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_write(a->vfs, p, data, len, &d), TFS_E_OK,
		     "%s: %s", p, tfs_diag_msg(&d));
	tfs_free(p);
}

static void lb_mkdir(struct lb_array *a, const char *rel)
{
	struct tfs_diag d;
	char *p = rel[0] ? tfs_path_join(a->dir, rel) : tfs_strdup(a->dir);

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_mkdir(a->vfs, p, &d), TFS_E_OK, "%s: %s", p,
		     tfs_diag_msg(&d));
	tfs_free(p);
}

void lb_generic_tile(struct tfs_buf *out, const void *payload, size_t len,
		     uint32_t v)
{
	struct tfs_diag d;
	size_t at = out->len;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_generic_tile_encode(out, payload, len, NULL, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	/* The header carries the writer's version (generic_tile.md §1). */
	tfs_put_u32(out->data + at, v);
}

/* 32 hex digits, unique within the array. */
static char *next_uuid(struct lb_array *a)
{
	return vt_fmt("%08x%024x", ++a->uuid_counter, 0xabcdefu);
}

/* ---- arrays -------------------------------------------------------------- */

static void write_schema(struct lb_array *a, const struct tfs_schema *spec,
			 const char *rel, const char *name)
{
	struct tfs_buf payload, file;
	struct tfs_diag d;
	struct tfs_schema *s;

	cr_assert_lt(a->schema_num, LB_MAX_SCHEMAS);
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&payload, spec), TFS_E_OK,
		     "schema v%u", spec->version);
	lb_generic_tile(&file, payload.data, payload.len, spec->version);
	lb_put(a, rel, file.data, file.len);
	s = &a->schemas[a->schema_num];
	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_parse(s, payload.data, payload.len, name, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	a->current = a->schema_num++;
	tfs_buf_release(&payload);
	tfs_buf_release(&file);
}

void lb_array_add_schema(struct lb_array *a, const struct tfs_schema *spec,
			 uint64_t t)
{
	char *uuid = next_uuid(a);
	char *name = vt_fmt("__%llu_%llu_%s", (unsigned long long)t,
			    (unsigned long long)t, uuid);
	char *rel = vt_fmt("__schema/%s", name);

	lb_mkdir(a, "__schema");
	write_schema(a, spec, rel, name);
	free(rel);
	free(name);
	free(uuid);
}

void lb_array_create(struct lb_array *a, struct tfs_vfs *vfs, const char *dir,
		     const struct tfs_schema *spec, uint64_t t)
{
	static const char *const folders[] = {
		"__schema", "__commits", "__fragments", "__meta",
		"__fragment_meta", "__labels",
	};

	memset(a, 0, sizeof(*a));
	a->vfs = vfs;
	a->dir = tfs_strdup(dir);
	lb_mkdir(a, "");
	if (spec->version < 10) {
		/* Old layout: the one schema file and the lock file of
		 * TileDB < 2.6 (layout.md §1, §7). */
		write_schema(a, spec, "__array_schema.tdb",
			     "__array_schema.tdb");
		lb_put(a, "__lock.tdb", "", 0);
		return;
	}
	if (spec->version >= 12)
		for (size_t i = 0; i < sizeof(folders) / sizeof(*folders); i++)
			lb_mkdir(a, folders[i]);
	lb_array_add_schema(a, spec, t);
}

void lb_array_release(struct lb_array *a)
{
	for (size_t i = 0; i < a->schema_num; i++)
		tfs_schema_release(&a->schemas[i]);
	tfs_free(a->dir);
	memset(a, 0, sizeof(*a));
}

const struct tfs_schema *lb_schema_for(const struct lb_array *a,
				       uint32_t version)
{
	if (version >= 10)
		return &a->schemas[a->current];
	for (size_t i = 0; i < a->schema_num; i++)
		if (!strcmp(a->schemas[i].name, "__array_schema.tdb"))
			return &a->schemas[i];
	cr_assert_fail("a version %u fragment needs __array_schema.tdb",
		       version);
	return NULL;
}

/* ---- cell order ---------------------------------------------------------- */

struct frag_ctx {
	struct lb_array *a;
	const struct tfs_schema *s;
	const struct lb_frag *f;
	uint32_t v;
	uint32_t D, A;
	bool sparse;
	/* Tiles: tile t holds cells[t * per_tile .. + count[t]); an entry is
	 * the input cell index, or -1 for dense padding. */
	uint64_t tile_num;
	uint64_t per_tile;
	int64_t *cells;
	uint64_t *count;
};

static int64_t dim_lo(const struct tfs_dim *d)
{
	return tfs_value_as_i64(d->type, d->domain[0]);
}

static int64_t dim_ext(const struct tfs_dim *d)
{
	return d->has_extent ? tfs_value_as_i64(d->type, d->extent) : 0;
}

/* Coordinate of input cell i on dimension k (fixed dims). */
static const uint8_t *coord(const struct frag_ctx *c, uint32_t k, int64_t i)
{
	return (const uint8_t *)c->f->dims[k].data +
	       (size_t)i * tfs_datatype_size(c->s->dims[k].type);
}

static int dim_cmp(const struct frag_ctx *c, uint32_t k, int64_t x, int64_t y)
{
	const struct tfs_dim *d = &c->s->dims[k];

	if (d->var) {
		const char *p = c->f->dims[k].strs[x], *q = c->f->dims[k].strs[y];

		return tfs_bytes_cmp(p, strlen(p), q, strlen(q));
	}
	return tfs_value_cmp(d->type, coord(c, k, x), coord(c, k, y));
}

static int64_t tile_idx(const struct frag_ctx *c, uint32_t k, int64_t i)
{
	const struct tfs_dim *d = &c->s->dims[k];
	int64_t ext = d->var ? 0 : dim_ext(d);

	if (!ext)
		return 0;
	return (tfs_value_as_i64(d->type, coord(c, k, i)) - dim_lo(d)) / ext;
}

/* Global order (read.md §5): space tiles in tile order, then cell order. */
static int global_cmp(const struct frag_ctx *c, int64_t x, int64_t y)
{
	bool tcol = c->s->tile_order == TFS_COL_MAJOR;
	bool ccol = c->s->cell_order == TFS_COL_MAJOR;

	cr_assert_neq(c->s->cell_order, TFS_HILBERT, "no Hilbert order here");
	for (uint32_t n = 0; n < c->D; n++) {
		uint32_t k = tcol ? c->D - 1 - n : n;
		int64_t tx = tile_idx(c, k, x), ty = tile_idx(c, k, y);

		if (tx != ty)
			return tx < ty ? -1 : 1;
	}
	for (uint32_t n = 0; n < c->D; n++) {
		uint32_t k = ccol ? c->D - 1 - n : n;
		int r = dim_cmp(c, k, x, y);

		if (r)
			return r;
	}
	return 0;
}

static void sparse_tiles(struct frag_ctx *c)
{
	uint64_t n = c->f->cell_num, cap = c->s->capacity;
	int64_t *order = calloc(n ? n : 1, sizeof(*order));

	cr_assert(order && n > 0);
	/* Insertion sort, stable: test fragments are small. */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t j = i;

		while (j > 0 && global_cmp(c, order[j - 1], (int64_t)i) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = (int64_t)i;
	}
	c->per_tile = cap;
	c->tile_num = (n + cap - 1) / cap;
	c->cells = order;
	c->count = calloc(c->tile_num, sizeof(*c->count));
	cr_assert(c->count);
	for (uint64_t t = 0; t < c->tile_num; t++)
		c->count[t] = t + 1 < c->tile_num ? cap : n - t * cap;
}

/* Dense: the space tiles of the box expanded to tile boundaries, in tile
 * order, each with every cell of the tile in cell order (read.md §2). */
static void dense_tiles(struct frag_ctx *c)
{
	const struct tfs_schema *s = c->s;
	const struct lb_frag *f = c->f;
	int64_t tlo[LB_MAX_DIMS], n[LB_MAX_DIMS], ext[LB_MAX_DIMS], lo[LB_MAX_DIMS];
	uint64_t tiles = 1, per = 1, box_stride[LB_MAX_DIMS];

	for (uint32_t k = 0; k < c->D; k++) {
		lo[k] = dim_lo(&s->dims[k]);
		ext[k] = dim_ext(&s->dims[k]);
		cr_assert_gt(ext[k], 0);
		cr_assert(f->lo[k] <= f->hi[k]);
		tlo[k] = (f->lo[k] - lo[k]) / ext[k];
		n[k] = (f->hi[k] - lo[k]) / ext[k] - tlo[k] + 1;
		tiles *= (uint64_t)n[k];
		per *= (uint64_t)ext[k];
	}
	box_stride[c->D - 1] = 1;
	for (uint32_t k = c->D - 1; k-- > 0;)
		box_stride[k] = box_stride[k + 1] *
				(uint64_t)(f->hi[k + 1] - f->lo[k + 1] + 1);
	c->tile_num = tiles;
	c->per_tile = per;
	c->cells = calloc(tiles * per, sizeof(*c->cells));
	c->count = calloc(tiles, sizeof(*c->count));
	cr_assert(c->cells && c->count);
	for (uint64_t t = 0; t < tiles; t++) {
		int64_t u[LB_MAX_DIMS];
		uint64_t rest = t;

		/* Tile coordinates inside the box, tile order. */
		for (uint32_t m = 0; m < c->D; m++) {
			uint32_t k = s->tile_order == TFS_COL_MAJOR ? m
								   : c->D - 1 - m;

			u[k] = (int64_t)(rest % (uint64_t)n[k]);
			rest /= (uint64_t)n[k];
		}
		c->count[t] = per;
		for (uint64_t pos = 0; pos < per; pos++) {
			uint64_t prest = pos, idx = 0;
			bool inside = true;

			for (uint32_t m = 0; m < c->D; m++) {
				uint32_t k = s->cell_order == TFS_COL_MAJOR
						     ? m
						     : c->D - 1 - m;
				int64_t r = (int64_t)(prest % (uint64_t)ext[k]);
				int64_t x = lo[k] + (tlo[k] + u[k]) * ext[k] + r;

				prest /= (uint64_t)ext[k];
				if (x < f->lo[k] || x > f->hi[k])
					inside = false;
				else
					idx += (uint64_t)(x - f->lo[k]) *
					       box_stride[k];
			}
			c->cells[t * per + pos] = inside ? (int64_t)idx : -1;
		}
	}
}

/* ---- data files ---------------------------------------------------------- */

/* Version 8 escapes (fragment.md §2), copied as the document lists them. */
static const char *v8_escape(char ch)
{
	static const struct {
		char c;
		const char *esc;
	} table[] = {
		{'!', "%21"}, {'#', "%23"}, {'$', "%24"}, {'%', "%25"},
		{'&', "%26"}, {'\'', "%27"}, {'(', "%28"}, {')', "%29"},
		{'*', "%2A"}, {'+', "%2B"}, {',', "%2C"}, {'/', "%2F"},
		{':', "%3A"}, {';', "%3B"}, {'=', "%3D"}, {'?', "%3F"},
		{'@', "%40"}, {'[', "%5B"}, {']', "%5D"}, {'"', "%22"},
		{'<', "%20"}, {'>', "%2D"}, {'\\', "%30"}, {'|', "%3C"},
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(*table); i++)
		if (table[i].c == ch)
			return table[i].esc;
	return NULL;
}

/* File stem of a field (fragment.md §2). */
static char *stem(uint32_t v, bool dim, uint32_t index, const char *name)
{
	char *out;
	size_t n = 0;

	if (v >= 9)
		return vt_fmt("%s%u", dim ? "d" : "a", index);
	out = calloc(strlen(name) * 3 + 1, 1);
	cr_assert(out);
	for (const char *p = name; *p; p++) {
		const char *e = v == 8 ? v8_escape(*p) : NULL;

		if (e) {
			memcpy(out + n, e, 3);
			n += 3;
		} else {
			out[n++] = *p;
		}
	}
	return out;
}

static void app64(struct tfs_buf *b, uint64_t v)
{
	cr_assert_eq(tfs_buf_append_u64(b, v), TFS_E_OK);
}

static void app(struct tfs_buf *b, const void *p, size_t n)
{
	cr_assert_eq(tfs_buf_append(b, p, n), TFS_E_OK);
}

/* One slot's files and tile lists. */
struct slot {
	bool used;
	char *stem;
	struct tfs_buf fixed, var, validity;
	uint64_t *off, *var_off, *var_size, *val_off;
};

static void encode(struct tfs_buf *file, const struct tfs_pipeline *p,
		   uint8_t type, uint64_t cell_size, uint32_t version,
		   bool string_mode, const void *src, size_t len,
		   const uint64_t *cell_offsets, uint64_t cells)
{
	struct tfs_tile_ctx ctx;
	struct tfs_diag d;

	memset(&ctx, 0, sizeof(ctx));
	ctx.type = type;
	ctx.cell_size = cell_size;
	ctx.fragment_version = version;
	ctx.string_mode = string_mode;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_tile_encode(file, p, &ctx, src, len, cell_offsets,
				     cells, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
}

static void slot_alloc(struct slot *sl, uint64_t tiles)
{
	sl->used = true;
	tfs_buf_init(&sl->fixed, TFS_BUF_NO_MAX);
	tfs_buf_init(&sl->var, TFS_BUF_NO_MAX);
	tfs_buf_init(&sl->validity, TFS_BUF_NO_MAX);
	sl->off = calloc(tiles + 1, 8);
	sl->var_off = calloc(tiles + 1, 8);
	sl->var_size = calloc(tiles + 1, 8);
	sl->val_off = calloc(tiles + 1, 8);
	cr_assert(sl->off && sl->var_off && sl->var_size && sl->val_off);
}

static void slot_release(struct slot *sl)
{
	if (!sl->used)
		return;
	free(sl->stem);
	tfs_buf_release(&sl->fixed);
	tfs_buf_release(&sl->var);
	tfs_buf_release(&sl->validity);
	free(sl->off);
	free(sl->var_off);
	free(sl->var_size);
	free(sl->val_off);
}

/* Encodes tile t of a field: fixed cells (cell_size bytes each) or var
 * strings, plus validity. */
static void field_tile(struct frag_ctx *c, struct slot *sl, uint64_t t,
		       const struct lb_field *in, uint8_t type,
		       uint64_t cell_size, bool var, bool nullable,
		       const struct tfs_pipeline *filters)
{
	const int64_t *cells = c->cells + t * c->per_tile;
	uint64_t n = c->count[t];
	size_t tsz = tfs_datatype_size(type);
	struct tfs_buf data, offs, val;

	tfs_buf_init(&data, TFS_BUF_NO_MAX);
	tfs_buf_init(&offs, TFS_BUF_NO_MAX);
	tfs_buf_init(&val, TFS_BUF_NO_MAX);
	for (uint64_t i = 0; i < n; i++) {
		int64_t ci = cells[i];

		if (var) {
			/* Padding cells hold one zero value (tile.md §6). */
			const char *str = ci >= 0 ? in->strs[ci] : NULL;
			size_t len = str ? strlen(str) : tsz;
			static const uint8_t zeros[8];

			cr_assert_eq(tfs_buf_append_u64(&offs, data.len), TFS_E_OK);
			cr_assert_eq(tfs_buf_append(&data, str ? (const void *)str
							       : zeros,
						    len),
				     TFS_E_OK);
		} else if (ci >= 0) {
			cr_assert_eq(tfs_buf_append(&data,
						    (const uint8_t *)in->data +
							    (size_t)ci * cell_size,
						    (size_t)cell_size),
				     TFS_E_OK);
		} else {
			cr_assert_eq(tfs_buf_resize(&data, data.len +
								   (size_t)cell_size),
				     TFS_E_OK);
		}
		if (nullable)
			cr_assert_eq(tfs_buf_append_u8(
					     &val, ci < 0 ? 0
						  : in->validity
							  ? in->validity[ci]
							  : 1),
				     TFS_E_OK);
	}
	sl->off[t] = sl->fixed.len;
	if (var) {
		bool embedded = tfs_offsets_embedded(type, filters,
						     c->s->version);

		sl->var_off[t] = sl->var.len;
		sl->var_size[t] = data.len;
		if (embedded) {
			/* Offsets not stored: 8 zero bytes (tile.md §4). */
			cr_assert_eq(tfs_buf_append_u64(&sl->fixed, 0), TFS_E_OK);
		} else {
			encode(&sl->fixed, &c->s->offsets_filters, TFS_UINT64, 8,
			       c->v, false, offs.data, offs.len, NULL, 0);
		}
		encode(&sl->var, filters, type, tsz, c->v, embedded, data.data,
		       data.len, (const uint64_t *)offs.data, n);
	} else {
		encode(&sl->fixed, filters, type, cell_size, c->v, false,
		       data.data, data.len, NULL, 0);
	}
	if (nullable) {
		sl->val_off[t] = sl->validity.len;
		encode(&sl->validity, &c->s->validity_filters, TFS_UINT8, 1,
		       c->v, false, val.data, val.len, NULL, 0);
	}
	tfs_buf_release(&data);
	tfs_buf_release(&offs);
	tfs_buf_release(&val);
}

/* Coordinates of versions < 5: one `__coords` tile of D values a cell,
 * zipped (v1 without a compressor) or unzipped (tile.md §7). */
static void coords_tile(struct frag_ctx *c, struct slot *sl, uint64_t t)
{
	const struct tfs_pipeline *p = &c->s->coords_filters;
	const int64_t *cells = c->cells + t * c->per_tile;
	uint64_t n = c->count[t];
	size_t size = tfs_datatype_size(c->s->dims[0].type);
	bool zipped = c->v == 1;
	struct tfs_buf data;

	for (uint32_t i = 0; i < p->count; i++) {
		uint8_t ty = p->filters[i].type;

		if ((ty >= TFS_FILTER_GZIP && ty <= TFS_FILTER_DOUBLE_DELTA) ||
		    ty == TFS_FILTER_DICTIONARY || ty == TFS_FILTER_DELTA)
			zipped = false;
	}
	tfs_buf_init(&data, TFS_BUF_NO_MAX);
	for (uint64_t i = 0; i < n * c->D; i++) {
		uint64_t cell = zipped ? i / c->D : i % n;
		uint32_t k = (uint32_t)(zipped ? i % c->D : i / n);

		cr_assert_eq(tfs_buf_append(&data, coord(c, k, cells[cell]),
					    size),
			     TFS_E_OK);
	}
	/* TileDB 1.x filtered the tile in D parts of n values (a part per
	 * dimension when unzipped), each its own chunk(s); the chunks of the
	 * parts make one tile. */
	sl->off[t] = sl->fixed.len;
	app64(&sl->fixed, 0);
	for (uint32_t k = 0; k < c->D; k++) {
		struct tfs_buf part;

		tfs_buf_init(&part, TFS_BUF_NO_MAX);
		encode(&part, p, c->s->dims[0].type, size, c->v, false,
		       data.data + k * n * size, n * size, NULL, 0);
		tfs_put_u64(sl->fixed.data + sl->off[t],
			    tfs_get_u64(sl->fixed.data + sl->off[t]) +
				    tfs_get_u64(part.data));
		app(&sl->fixed, part.data + 8, part.len - 8);
		tfs_buf_release(&part);
	}
	tfs_buf_release(&data);
}

/* ---- metadata ------------------------------------------------------------ */

/* Ranges of every tile (sparse MBRs) or of the whole fragment (NED). */
struct ranges {
	struct tfs_range *r; /* per tile, D ranges */
	struct tfs_range ned[LB_MAX_DIMS];
	uint8_t dense_ned[LB_MAX_DIMS][2][8];
};

static void range_of(const struct frag_ctx *c, uint32_t k, const int64_t *cells,
		     uint64_t n, struct tfs_range *out)
{
	int64_t lo = cells[0], hi = cells[0];

	for (uint64_t i = 1; i < n; i++) {
		if (dim_cmp(c, k, cells[i], lo) < 0)
			lo = cells[i];
		if (dim_cmp(c, k, cells[i], hi) > 0)
			hi = cells[i];
	}
	if (c->s->dims[k].var) {
		out->lo = (const uint8_t *)c->f->dims[k].strs[lo];
		out->hi = (const uint8_t *)c->f->dims[k].strs[hi];
		out->lo_len = strlen(c->f->dims[k].strs[lo]);
		out->hi_len = strlen(c->f->dims[k].strs[hi]);
	} else {
		out->lo = coord(c, k, lo);
		out->hi = coord(c, k, hi);
		out->lo_len = out->hi_len = tfs_datatype_size(c->s->dims[k].type);
	}
}

static void compute_ranges(struct frag_ctx *c, struct ranges *rg)
{
	memset(rg, 0, sizeof(*rg));
	if (!c->sparse) {
		for (uint32_t k = 0; k < c->D; k++) {
			uint8_t type = c->s->dims[k].type;

			put_int(rg->dense_ned[k][0], type, c->f->lo[k]);
			put_int(rg->dense_ned[k][1], type, c->f->hi[k]);
			rg->ned[k].lo = rg->dense_ned[k][0];
			rg->ned[k].hi = rg->dense_ned[k][1];
			rg->ned[k].lo_len = rg->ned[k].hi_len =
				tfs_datatype_size(type);
		}
		return;
	}
	rg->r = calloc(c->tile_num * c->D, sizeof(*rg->r));
	cr_assert(rg->r);
	for (uint64_t t = 0; t < c->tile_num; t++)
		for (uint32_t k = 0; k < c->D; k++)
			range_of(c, k, c->cells + t * c->per_tile, c->count[t],
				 &rg->r[t * c->D + k]);
	for (uint32_t k = 0; k < c->D; k++)
		range_of(c, k, c->cells, c->f->cell_num, &rg->ned[k]);
}

/* Appends a generic tile to the metadata file; returns its offset. */
static uint64_t meta_tile(struct frag_ctx *c, struct tfs_buf *file,
			  const struct tfs_buf *payload)
{
	uint64_t at = file->len;

	lb_generic_tile(file, payload->data, payload->len, c->v);
	return at;
}

static uint64_t list_tile(struct frag_ctx *c, struct tfs_buf *file,
			  const uint64_t *v, uint64_t n)
{
	struct tfs_buf p;
	uint64_t at;

	tfs_buf_init(&p, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_u64_list_serialize(&p, v, n), TFS_E_OK);
	at = meta_tile(c, file, &p);
	tfs_buf_release(&p);
	return at;
}

/* Versions 1–2: everything in one generic tile (fragment.md §9). */
static void legacy_metadata(struct frag_ctx *c, struct slot *slots,
			    const struct ranges *rg, struct tfs_buf *file)
{
	struct tfs_buf p;
	uint32_t A = c->A, D = c->D;
	size_t size = tfs_datatype_size(c->s->dims[0].type);
	uint64_t tiles = c->sparse ? c->tile_num : 0;

	tfs_buf_init(&p, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append_u32(&p, c->v), TFS_E_OK);
	app64(&p, 2 * D * size);
	for (uint32_t k = 0; k < D; k++) {
		app(&p, rg->ned[k].lo, size);
		app(&p, rg->ned[k].hi, size);
	}
	app64(&p, tiles);
	for (uint64_t t = 0; t < tiles; t++)
		for (uint32_t k = 0; k < D; k++) {
			app(&p, rg->r[t * D + k].lo, size);
			app(&p, rg->r[t * D + k].hi, size);
		}
	/* Bounding coordinates: the first and last cell of each tile. */
	app64(&p, tiles);
	for (uint64_t t = 0; t < tiles; t++) {
		const int64_t *cells = c->cells + t * c->per_tile;

		for (uint32_t k = 0; k < D; k++)
			app(&p, coord(c, k, cells[0]), size);
		for (uint32_t k = 0; k < D; k++)
			app(&p, coord(c, k, cells[c->count[t] - 1]), size);
	}
	for (uint32_t i = 0; i <= A; i++) {
		uint64_t n = i < A || c->sparse ? c->tile_num : 0;

		app64(&p, n);
		for (uint64_t t = 0; t < n; t++)
			app64(&p, slots[i].off[t]);
	}
	/* Var offsets and sizes: one entry a tile for every attribute,
	 * zeros for fixed-size ones (as TileDB 1.4 wrote them). */
	for (int list = 0; list < 2; list++) {
		for (uint32_t i = 0; i < A; i++) {
			uint64_t n = c->tile_num;
			const uint64_t *v = list ? slots[i].var_size
						 : slots[i].var_off;

			app64(&p, n);
			for (uint64_t t = 0; t < n; t++)
				app64(&p, v[t]);
		}
	}
	app64(&p, c->count[c->tile_num - 1]);
	for (uint32_t i = 0; i <= A; i++)
		app64(&p, slots[i].used ? slots[i].fixed.len : 0);
	for (uint32_t i = 0; i < A; i++)
		app64(&p, slots[i].used ? slots[i].var.len : 0);
	lb_generic_tile(file, p.data, p.len, c->v);
	tfs_buf_release(&p);
}

/* Versions 3+: generic tiles, then the footer (fragment.md §3–6). */
static void footer_metadata(struct frag_ctx *c, struct slot *slots,
			    uint32_t num, const struct ranges *rg,
			    struct tfs_buf *file, struct lb_written *out)
{
	const struct tfs_schema *s = c->s;
	struct tfs_footer ft;
	struct tfs_rtree rt;
	struct tfs_buf p;
	bool var_dim = false;
	uint64_t *zeros = calloc(c->tile_num + 1, 8);

	cr_assert(zeros);
	memset(&ft, 0, sizeof(ft));
	ft.version = c->v;
	ft.schema_name = c->v >= 10 ? s->name : NULL;
	ft.dense = !c->sparse;
	ft.ned = (struct tfs_range *)rg->ned;
	ft.dim_num = c->D;
	ft.sparse_tile_num = c->sparse ? c->tile_num : 0;
	ft.last_tile_cell_num = c->count[c->tile_num - 1];
	ft.slot_num = num;
	ft.file_sizes = calloc(num, 8);
	ft.file_var_sizes = calloc(num, 8);
	ft.file_validity_sizes = calloc(num, 8);
	ft.tile_offsets_off = calloc(num, 8);
	ft.tile_var_offsets_off = calloc(num, 8);
	ft.tile_var_sizes_off = calloc(num, 8);
	ft.tile_validity_offsets_off = calloc(num, 8);
	ft.tile_mins_off = calloc(num, 8);
	ft.tile_maxes_off = calloc(num, 8);
	ft.tile_sums_off = calloc(num, 8);
	ft.tile_null_counts_off = calloc(num, 8);
	cr_assert(ft.file_sizes && ft.tile_null_counts_off);

	/* R-tree: one leaf per sparse tile; dense: no levels. */
	memset(&rt, 0, sizeof(rt));
	rt.dim_num = c->D;
	rt.fanout = 10;
	rt.leaf_num = c->sparse ? c->tile_num : 0;
	rt.leaves = rg->r;
	tfs_buf_init(&p, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_rtree_serialize(&p, &rt, c->v, s), TFS_E_OK);
	ft.rtree_off = meta_tile(c, file, &p);

	for (uint32_t i = 0; i < num; i++) {
		struct slot *sl = &slots[i];
		bool vlist = c->v >= 5 || i < c->A; /* v3–4: A entries */

		ft.file_sizes[i] = sl->used ? sl->fixed.len : 0;
		ft.file_var_sizes[i] = sl->used ? sl->var.len : 0;
		ft.file_validity_sizes[i] = sl->used ? sl->validity.len : 0;
		ft.tile_offsets_off[i] = list_tile(
			c, file, sl->used ? sl->off : zeros, c->tile_num);
		if (!vlist)
			continue;
		ft.tile_var_offsets_off[i] = list_tile(
			c, file, sl->used ? sl->var_off : zeros, c->tile_num);
		ft.tile_var_sizes_off[i] = list_tile(
			c, file, sl->used ? sl->var_size : zeros, c->tile_num);
	}
	if (c->v >= 7)
		for (uint32_t i = 0; i < num; i++)
			ft.tile_validity_offsets_off[i] = list_tile(
				c, file, slots[i].used ? slots[i].val_off : zeros,
				c->tile_num);
	if (c->v >= 11) {
		/* Statistics nobody reads back: empty ones are valid. */
		for (int kind = 0; kind < 4; kind++) {
			uint64_t *dst = kind == 0   ? ft.tile_mins_off
					: kind == 1 ? ft.tile_maxes_off
					: kind == 2 ? ft.tile_sums_off
						    : ft.tile_null_counts_off;

			for (uint32_t i = 0; i < num; i++) {
				p.len = 0;
				app64(&p, 0);
				if (kind < 2)
					app64(&p, 0);
				dst[i] = meta_tile(c, file, &p);
			}
		}
	}
	if (c->v >= 12) {
		p.len = 0;
		for (uint32_t i = 0; i < num; i++)
			for (int k = 0; k < 4; k++)
				app64(&p, 0);
		ft.summary_off = meta_tile(c, file, &p);
	}
	if (c->v >= 15) {
		p.len = 0;
		app64(&p, 0);
		ft.processed_conditions_off = meta_tile(c, file, &p);
	}
	p.len = 0;
	cr_assert_eq(tfs_footer_serialize(&p, &ft, s), TFS_E_OK, "v%u", c->v);
	out->footer = tfs_memdup(p.data, p.len);
	out->footer_len = p.len;
	app(file, p.data, p.len);
	for (uint32_t k = 0; k < c->D; k++)
		var_dim = var_dim || s->dims[k].var;
	if (c->v >= 10 || var_dim)
		app64(file, p.len);
	else
		cr_assert_eq(p.len, tfs_footer_fixed_size(c->v, s), "v%u", c->v);
	tfs_buf_release(&p);
	free(ft.file_sizes);
	free(ft.file_var_sizes);
	free(ft.file_validity_sizes);
	free(ft.tile_offsets_off);
	free(ft.tile_var_offsets_off);
	free(ft.tile_var_sizes_off);
	free(ft.tile_validity_offsets_off);
	free(ft.tile_mins_off);
	free(ft.tile_maxes_off);
	free(ft.tile_sums_off);
	free(ft.tile_null_counts_off);
	free(zeros);
}

/* ---- fragments ----------------------------------------------------------- */

static char *frag_name(struct lb_array *a, uint32_t v, uint64_t t1, uint64_t t2)
{
	char *uuid = next_uuid(a), *name;

	/* v1–2: a consolidated fragment is __<uuid>_<tnow>_<t>, here t2 is
	 * taken for tnow (layout.md §2). */
	if (v <= 2 && t2 > t1)
		name = vt_fmt("__%s_%llu_%llu", uuid, (unsigned long long)t2,
			      (unsigned long long)t1);
	else if (v <= 2)
		name = vt_fmt("__%s_%llu", uuid, (unsigned long long)t1);
	else if (v <= 4)
		name = vt_fmt("__%llu_%llu_%s", (unsigned long long)t1,
			      (unsigned long long)t2, uuid);
	else
		name = vt_fmt("__%llu_%llu_%s_%u", (unsigned long long)t1,
			      (unsigned long long)t2, uuid, v);
	free(uuid);
	return name;
}

static void put_slot_files(struct lb_array *a, const char *rel,
			   const struct slot *sl)
{
	static const char *const suffix[] = {".tdb", "_var.tdb",
					     "_validity.tdb"};
	const struct tfs_buf *b[] = {&sl->fixed, &sl->var, &sl->validity};

	for (int k = 0; k < 3; k++) {
		char *p;

		/* A file that would be empty is not created (§2). */
		if (!b[k]->len)
			continue;
		p = vt_fmt("%s/%s%s", rel, sl->stem, suffix[k]);
		lb_put(a, p, b[k]->data, b[k]->len);
		free(p);
	}
}

void lb_write_fragment(struct lb_array *a, const struct lb_frag *f,
		       struct lb_written *out)
{
	struct frag_ctx c;
	struct ranges rg;
	struct slot *slots;
	struct tfs_buf file;
	uint32_t num;
	char *p;

	memset(&c, 0, sizeof(c));
	memset(out, 0, sizeof(*out));
	c.a = a;
	c.f = f;
	c.v = f->version;
	c.s = lb_schema_for(a, c.v);
	c.D = c.s->dim_num;
	c.A = c.s->attr_num;
	c.sparse = f->sparse || c.s->array_type == TFS_SPARSE;
	cr_assert(c.v >= 1 && c.v <= TFS_FORMAT_VERSION_MAX);
	if (c.sparse)
		sparse_tiles(&c);
	else
		dense_tiles(&c);
	compute_ranges(&c, &rg);

	/* Slots (fragment.md §1): attributes, __coords, dimensions (v5+). */
	num = c.A + 1 + (c.v >= 5 ? c.D : 0);
	slots = calloc(num, sizeof(*slots));
	cr_assert(slots);
	for (uint32_t i = 0; i < c.A; i++) {
		const struct tfs_attr *at = &c.s->attrs[i];

		slot_alloc(&slots[i], c.tile_num);
		slots[i].stem = stem(c.v, false, i, at->name);
		for (uint64_t t = 0; t < c.tile_num; t++)
			field_tile(&c, &slots[i], t, &f->attrs[i], at->type,
				   tfs_attr_cell_size(at), at->var,
				   at->nullable && c.v >= 7, &at->filters);
	}
	if (c.sparse && c.v < 5) {
		slot_alloc(&slots[c.A], c.tile_num);
		slots[c.A].stem = vt_fmt("__coords");
		for (uint64_t t = 0; t < c.tile_num; t++)
			coords_tile(&c, &slots[c.A], t);
	} else if (c.sparse) {
		for (uint32_t k = 0; k < c.D; k++) {
			const struct tfs_dim *dm = &c.s->dims[k];
			struct slot *sl = &slots[c.A + 1 + k];

			slot_alloc(sl, c.tile_num);
			sl->stem = stem(c.v, true, k, dm->name);
			for (uint64_t t = 0; t < c.tile_num; t++)
				field_tile(&c, sl, t, &f->dims[k], dm->type,
					   tfs_datatype_size(dm->type), dm->var,
					   false, &dm->filters);
		}
	}

	out->version = c.v;
	out->t1 = f->t1;
	out->t2 = f->t2 ? f->t2 : f->t1;
	out->name = frag_name(a, c.v, out->t1, out->t2);
	out->rel = c.v >= 12 ? vt_fmt("__fragments/%s", out->name)
			     : vt_fmt("%s", out->name);
	if (c.v >= 12) {
		/* An array created by an older library gets the new folders
		 * with its first new-layout write. */
		lb_mkdir(a, "__fragments");
		lb_mkdir(a, "__commits");
	}
	p = tfs_path_join(a->dir, out->rel);
	{
		struct tfs_diag d;

		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_mkdir(a->vfs, p, &d), TFS_E_OK);
	}
	tfs_free(p);
	for (uint32_t i = 0; i < num; i++)
		if (slots[i].used)
			put_slot_files(a, out->rel, &slots[i]);

	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	if (c.v <= 2)
		legacy_metadata(&c, slots, &rg, &file);
	else
		footer_metadata(&c, slots, num, &rg, &file, out);
	p = vt_fmt("%s/__fragment_metadata.tdb", out->rel);
	lb_put(a, p, file.data, file.len);
	free(p);
	tfs_buf_release(&file);

	/* Commit (layout.md §1): none before v5, .ok in the root before
	 * v12, then __commits/<name>.wrt. */
	if (c.v >= 5 && !f->no_commit) {
		p = c.v >= 12 ? vt_fmt("__commits/%s.wrt", out->name)
			      : vt_fmt("%s.ok", out->name);
		lb_put(a, p, "", 0);
		free(p);
	}
	for (uint32_t i = 0; i < num; i++)
		slot_release(&slots[i]);
	free(slots);
	free(rg.r);
	free(c.cells);
	free(c.count);
}

void lb_written_release(struct lb_written *w)
{
	free(w->name);
	free(w->rel);
	tfs_free(w->footer);
	memset(w, 0, sizeof(*w));
}

/* ---- consolidation and commit files -------------------------------------- */

void lb_write_meta(struct lb_array *a, uint32_t version, uint64_t t1,
		   uint64_t t2, const struct lb_written *frags, size_t n,
		   const char *uri_prefix)
{
	struct tfs_buf p, file;
	char *prefix = uri_prefix ? vt_fmt("%s", uri_prefix)
				  : vt_fmt("file://%s/", a->dir);
	char **names = calloc(n ? n : 1, sizeof(*names));
	uint64_t off;
	char *uuid = next_uuid(a), *rel;

	cr_assert(names);
	tfs_buf_init(&p, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append_u32(&p, (uint32_t)n), TFS_E_OK);
	off = 4;
	for (size_t i = 0; i < n; i++) {
		names[i] = version >= 9 ? vt_fmt("%s", frags[i].name)
					: vt_fmt("%s%s", prefix, frags[i].name);
		off += 8 + strlen(names[i]) + 8;
	}
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(frags[i].footer, "no footer before v3");
		app64(&p, strlen(names[i]));
		app(&p, names[i], strlen(names[i]));
		app64(&p, off);
		off += frags[i].footer_len;
	}
	for (size_t i = 0; i < n; i++)
		app(&p, frags[i].footer, frags[i].footer_len);
	lb_generic_tile(&file, p.data, p.len, version);
	if (version >= 12)
		lb_mkdir(a, "__fragment_meta");
	rel = vt_fmt("%s__%llu_%llu_%s_%u.meta",
		     version >= 12 ? "__fragment_meta/" : "",
		     (unsigned long long)t1, (unsigned long long)t2, uuid,
		     version);
	lb_put(a, rel, file.data, file.len);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(rel);
	free(uuid);
	free(prefix);
	tfs_buf_release(&p);
	tfs_buf_release(&file);
}

void lb_write_vac(struct lb_array *a, const struct lb_written *into,
		  const struct lb_written *from, size_t n, bool absolute)
{
	struct tfs_buf text;
	char *rel;

	tfs_buf_init(&text, TFS_BUF_NO_MAX);
	for (size_t i = 0; i < n; i++) {
		char *line = absolute
				     ? vt_fmt("file://%s/%s\n", a->dir, from[i].rel)
				     : vt_fmt("%s\n", from[i].rel);

		app(&text, line, strlen(line));
		free(line);
	}
	rel = vt_fmt("%s%s.vac", into->version >= 12 ? "__commits/" : "",
		     into->name);
	lb_put(a, rel, text.data, text.len);
	free(rel);
	tfs_buf_release(&text);
}

char *lb_write_condition(struct lb_array *a, const char *ext, uint32_t version,
			 uint32_t header_version, uint64_t t,
			 const char *field, int32_t value)
{
	struct tfs_qc_node n;
	struct tfs_buf p, file;
	uint8_t v[4];
	char *uuid = next_uuid(a), *rel;

	memset(&n, 0, sizeof(n));
	tfs_put_u32(v, (uint32_t)value);
	n.is_value = true;
	n.op = TFS_QC_LT;
	n.field = (char *)field;
	n.value = v;
	n.value_len = 4;
	tfs_buf_init(&p, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_condition_serialize(&p, &n), TFS_E_OK);
	if (!strcmp(ext, "upd")) {
		/* Update values (consolidated.md §6): a = value. */
		app64(&p, 1);
		app64(&p, 1);
		app(&p, "a", 1);
		app64(&p, 4);
		app(&p, v, 4);
	}
	lb_generic_tile(&file, p.data, p.len, header_version);
	lb_mkdir(a, "__commits");
	rel = vt_fmt("__commits/__%llu_%llu_%s_%u.%s", (unsigned long long)t,
		     (unsigned long long)t, uuid, version, ext);
	lb_put(a, rel, file.data, file.len);
	free(uuid);
	tfs_buf_release(&p);
	tfs_buf_release(&file);
	return rel;
}

/* ---- an array with dimension labels ---------------------------------------- */

/* A dense 1-D label array at rel (schema.md §6: one dimension "index"
 * like the labelled one, one attribute "label" with the label order),
 * holding label i at index i. */
static void write_label_array(struct lb_array *main, const char *rel,
			      uint32_t version, uint8_t type, uint8_t order,
			      const void *data, const char *const *strs)
{
	struct lb_array la;
	struct tfs_schema s;
	struct tfs_attr *at;
	struct lb_frag f;
	struct lb_written w;
	char *dir = tfs_path_join(main->dir, rel);

	lb_schema_init(&s, version, false, 10000);
	lb_add_dim(&s, "index", TFS_INT32, 0, 9, 5);
	at = lb_add_attr(&s, "label", type,
			 strs ? TFS_VAR_NUM : 1, false);
	at->order = order;
	lb_array_create(&la, main->vfs, dir, &s, 20);
	memset(&f, 0, sizeof(f));
	f.version = version;
	f.t1 = 30;
	f.lo[0] = 0;
	f.hi[0] = 9;
	f.attrs[0].data = data;
	f.attrs[0].strs = strs;
	lb_write_fragment(&la, &f, &w);
	lb_written_release(&w);
	lb_array_release(&la);
	tfs_schema_release(&s);
	tfs_free(dir);
}

void lb_write_labelled(struct tfs_vfs *vfs, const char *dir, uint32_t version)
{
	static const char *const names[] = {"j", "i", "h", "g", "f",
					    "e", "d", "c", "b", "a"};
	struct lb_array a;
	struct tfs_schema s;
	struct lb_frag f;
	struct lb_written w;
	int32_t v[10];
	double lab[10];

	for (int i = 0; i < 10; i++) {
		v[i] = 100 + i;
		lab[i] = 0.5 * i - 1;
	}
	lb_schema_init(&s, version, false, 10000);
	lb_add_dim(&s, "i", TFS_INT32, 0, 9, 5);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	lb_add_label(&s, 0, "lab", "__labels/l0", true, 1, TFS_FLOAT64);
	lb_add_label(&s, 0, "name", "__labels/l1", true, 2,
		     TFS_STRING_ASCII);
	lb_array_create(&a, vfs, dir, &s, 10);
	memset(&f, 0, sizeof(f));
	f.version = version;
	f.t1 = 40;
	f.lo[0] = 0;
	f.hi[0] = 9;
	f.attrs[0].data = v;
	lb_write_fragment(&a, &f, &w);
	lb_mkdir(&a, "__labels");
	write_label_array(&a, "__labels/l0", version, TFS_FLOAT64, 1, lab,
			  NULL);
	write_label_array(&a, "__labels/l1", version, TFS_STRING_ASCII, 2,
			  NULL, names);
	lb_written_release(&w);
	lb_array_release(&a);
	tfs_schema_release(&s);
}
