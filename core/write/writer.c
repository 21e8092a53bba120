/* The public fragment writer (tfs_write.h): opens the array for the schema
 * in force, checks and stages appended cells (sort.c), and at commit picks
 * the fragment kind, name and format version (format/write.md §1–2),
 * streams the sorted cells through the tile writer into a staged folder,
 * and commits last (write.md §3). Any failure removes the staged folder. */
#include "write_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_datatype.h"
#include "tfs_fragment.h"
#include "tilefs/tilefs.h"

struct tfs_writer {
	struct tfs_vfs *vfs;
	struct tfs_vfs *own_vfs;
	struct tfs_pool *pool, *own_pool;
	unsigned threads;
	char *path;
	struct tfs_arraydir *ad;
	const struct tfs_schema *s;
	uint32_t version; /* W */
	struct tfs_write_opts o;
	uint8_t key[32];
	bool has_key;
	enum tfs_write_layout layout;
	struct tfs__field *fields;
	uint32_t field_num, D, A;
	struct tfs__order order;
	struct tfs__sorter *sorter;
	bool failed;
	bool committed;
	/* Dense arrays: box of DENSE_BOX, or the bounding box of the cells
	 * so far (offsets from the domain's low end). */
	uint64_t boxlo[128], boxhi[128];
	uint8_t boxbytes[2][128][8];
	uint64_t box_cells; /* cells of the box (DENSE_BOX) */
	uint64_t appended;
	int *colmap;        /* field -> batch column, per append */
	/* Names of the fragment, once chosen (write.md §2–3). */
	struct tfs_write_result res;
	char *dir, *parent, *cdir, *commit;
	/* Streaming: a box whose row-major order is the global order goes
	 * straight to the tile writer, one batch at a time, so memory stays
	 * at the tiles in flight (1-D arrays: every box). */
	bool stream;
	struct tfs__cells scratch;
	struct tfs__tw *tw;
	struct tfs_range stream_box[128];
	/* Streaming by rows of tiles (dense_box.c): box rows already
	 * written, cells of one box row. */
	bool tilerow;
	uint64_t rows_done, row_cells;
};

const struct tfs_schema *tfs_writer_schema(const struct tfs_writer *w)
{
	return w->s;
}

const struct tfs_enumeration *tfs_writer_enumerations(const struct tfs_writer *w,
						      size_t *count)
{
	*count = w->ad->enum_num;
	return w->ad->enums;
}

void tfs_writer_free(struct tfs_writer *w)
{
	if (!w)
		return;
	tfs__tw_free(w->tw);
	if (w->dir && !w->committed)
		tfs__remove_tree(w->vfs, w->dir);
	tfs_free(w->dir);
	tfs_free(w->parent);
	tfs_free(w->cdir);
	tfs_free(w->commit);
	tfs__cells_release(&w->scratch);
	tfs__sorter_free(w->sorter);
	if (w->ad)
		tfs_arraydir_close(w->ad);
	tfs_free(w->fields);
	tfs_free(w->colmap);
	tfs_free(w->path);
	if (w->own_pool)
		tfs_pool_free(w->own_pool);
	if (w->own_vfs)
		tfs_vfs_free(w->own_vfs);
	tfs_free(w);
}

static enum tfs_err check_value_in(const struct tfs_writer *w, uint32_t k,
				   const uint8_t *v, uint64_t len,
				   const char *what, uint64_t tag,
				   struct tfs_diag *d);
static enum tfs_err stream_start(struct tfs_writer *w, struct tfs_diag *d);
static enum tfs_err stream_cells(struct tfs_writer *w, struct tfs_diag *d);

static enum tfs_err check_box(struct tfs_writer *w, const struct tfs_range *box,
			      struct tfs_diag *d)
{
	const struct tfs_schema *s = w->s;
	enum tfs_err e;

	w->box_cells = 1;
	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dm = &s->dims[k];
		size_t sz = tfs_datatype_size(dm->type);
		uint64_t n;

		if (!box[k].lo || !box[k].hi)
			return tfs_fail(d, TFS_E_INVALID,
					"box: dimension '%s' has no range",
					dm->name);
		if ((e = check_value_in(w, k, box[k].lo, sz, "box", 0, d)) ||
		    (e = check_value_in(w, k, box[k].hi, sz, "box", 0, d)))
			return e;
		if (tfs_value_cmp(dm->type, box[k].lo, box[k].hi) > 0)
			return tfs_fail(d, TFS_E_INVALID,
					"box: dimension '%s': low above high",
					dm->name);
		w->boxlo[k] = tfs__dim_off(dm, box[k].lo);
		w->boxhi[k] = tfs__dim_off(dm, box[k].hi);
		memcpy(w->boxbytes[0][k], box[k].lo, sz);
		memcpy(w->boxbytes[1][k], box[k].hi, sz);
		n = w->boxhi[k] - w->boxlo[k] + 1;
		if (n == 0 || w->box_cells > UINT64_MAX / n)
			return tfs_fail(d, TFS_E_INVALID, "box: too many cells");
		w->box_cells *= n;
	}
	return TFS_E_OK;
}

enum tfs_err tfs_writer_open(const char *path, const struct tfs_write_opts *opts,
			     enum tfs_write_layout layout,
			     const struct tfs_range *box,
			     struct tfs_writer **out, struct tfs_diag *d)
{
	struct tfs_write_opts dflt;
	struct tfs_writer *w;
	struct tfs_arraydir_opts ao;
	const struct tfs_schema *s;
	struct tfs__sort_opts so;
	enum tfs_err e;
	const char *spill;

	*out = NULL;
	if (!opts) {
		memset(&dflt, 0, sizeof(dflt));
		opts = &dflt;
	}
	if (!path)
		return tfs_fail(d, TFS_E_INVALID, "writer: no array path");
	w = tfs_callocn(1, sizeof(*w));
	if (!w)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	w->o = *opts;
	w->layout = layout;
	w->path = tfs_strdup(path);
	if (!w->path) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_fail;
	}
	/* No trailing slashes in names we build. */
	for (size_t n = strlen(w->path); n > 1 && w->path[n - 1] == '/'; n--)
		w->path[n - 1] = '\0';
	if (opts->key) {
		memcpy(w->key, opts->key, 32);
		w->has_key = true;
	}
	w->vfs = opts->vfs;
	if (!w->vfs) {
		if ((e = tfs_vfs_default_new(w->path, &w->own_vfs, d)))
			goto out_fail;
		w->vfs = w->own_vfs;
	}
	memset(&ao, 0, sizeof(ao));
	ao.key = w->has_key ? w->key : NULL;
	ao.t1 = UINT64_MAX;
	if ((e = tfs_arraydir_open(w->vfs, w->path, &ao, &w->ad, d)))
		goto out_fail;
	s = w->s = w->ad->schema;
	w->version = s->version >= 7 ? s->version : 23;
	if (s->dim_num > 128) {
		e = tfs_fail(d, TFS_E_UNSUPPORTED, "array '%s': too many dimensions",
			     path);
		goto out_fail;
	}
	for (uint32_t i = 0; i < s->attr_num; i++) {
		const struct tfs_pipeline *p = &s->attrs[i].filters;

		for (uint32_t k = 0; k < p->count; k++)
			if (p->filters[k].type == TFS_FILTER_DEPRECATED) {
				e = tfs_fail(d, TFS_E_UNSUPPORTED,
					     "attribute '%s': filter '%s' has no "
					     "encoder",
					     s->attrs[i].name,
					     tfs_filter_name(p->filters[k].type));
				goto out_fail;
			}
	}
	/* Fields: dimensions, then attributes. */
	w->D = s->dim_num;
	w->A = s->attr_num;
	w->field_num = w->D + w->A + (opts->cell_timestamps ? 1 : 0);
	if (opts->cell_timestamps &&
	    (s->array_type != TFS_SPARSE || w->version < 15 ||
	     layout != TFS_WRITE_UNORDERED)) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "array '%s': per-cell timestamps need an unordered "
			     "write to a sparse array of format 15 or later",
			     path);
		goto out_fail;
	}
	w->fields = tfs_callocn(w->field_num, sizeof(*w->fields));
	w->colmap = tfs_callocn(w->field_num, sizeof(int));
	if (!w->fields || !w->colmap) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_fail;
	}
	for (uint32_t k = 0; k < w->D; k++) {
		struct tfs__field *f = &w->fields[k];
		const struct tfs_dim *dm = &s->dims[k];

		f->name = dm->name;
		f->type = dm->type;
		f->cell_val_num = dm->var ? TFS_VAR_NUM : 1;
		f->var = dm->var;
		f->is_dim = true;
		f->index = k;
		f->slot = w->A + 1 + k;
		f->cell_size = tfs_datatype_size(dm->type);
		f->filters = &dm->filters;
	}
	for (uint32_t i = 0; i < w->A; i++) {
		struct tfs__field *f = &w->fields[w->D + i];
		const struct tfs_attr *at = &s->attrs[i];

		f->name = at->name;
		f->type = at->type;
		f->cell_val_num = at->cell_val_num;
		f->var = at->var;
		f->nullable = at->nullable;
		f->index = i;
		f->slot = i;
		f->cell_size = f->var ? tfs_datatype_size(at->type)
				      : tfs_attr_cell_size(at);
		f->filters = &at->filters;
	}
	if (opts->cell_timestamps) {
		/* The slot after the dimensions (fragment.md §1), coordinate
		 * filters (consolidated.md §5). */
		struct tfs__field *f = &w->fields[w->D + w->A];

		f->name = "__timestamps";
		f->type = TFS_UINT64;
		f->cell_val_num = 1;
		f->slot = w->A + 1 + w->D;
		f->cell_size = 8;
		f->filters = &s->coords_filters;
		f->is_timestamps = true;
	}
	tfs__order_init(&w->order, s, w->fields);
	if (layout == TFS_WRITE_DENSE_BOX) {
		if (s->array_type != TFS_DENSE) {
			e = tfs_fail(d, TFS_E_INVALID,
				     "array '%s': a box write needs a dense array",
				     path);
			goto out_fail;
		}
		if (!box) {
			e = tfs_fail(d, TFS_E_INVALID, "box write without a box");
			goto out_fail;
		}
		if ((e = check_box(w, box, d)))
			goto out_fail;
		/* Row-major over the box is the global order when every
		 * dimension but the first stays inside one tile (and the
		 * orders are row-major); then cells need no sorting. */
		w->stream = true;
		for (uint32_t k = 1; k < s->dim_num; k++) {
			uint64_t ext = tfs_value_as_u64(s->dims[k].type,
							s->dims[k].extent);

			if (s->tile_order != TFS_ROW_MAJOR ||
			    s->cell_order != TFS_ROW_MAJOR || ext == 0 ||
			    w->boxlo[k] / ext != w->boxhi[k] / ext)
				w->stream = false;
		}
		/* Otherwise, with row-major tile order, a row of tiles at a
		 * time (dense_box.c). */
		if (!w->stream && s->tile_order == TFS_ROW_MAJOR) {
			w->stream = w->tilerow = true;
			w->row_cells = w->box_cells /
				       (w->boxhi[0] - w->boxlo[0] + 1);
		}
	} else if (layout != TFS_WRITE_UNORDERED) {
		e = tfs_fail(d, TFS_E_INVALID, "unknown write layout");
		goto out_fail;
	}
	w->threads = opts->threads ? opts->threads : tfs_cpu_count();
	w->pool = opts->pool;
	if (!w->pool) {
		if ((e = tfs_pool_new(w->threads - 1, &w->own_pool))) {
			tfs_fail(d, e, "writer: thread pool: %s", tfs_strerror(e));
			goto out_fail;
		}
		w->pool = w->own_pool;
	}
	spill = opts->spill_dir;
	if (!spill)
		spill = getenv("TMPDIR");
	if (!spill || !*spill)
		spill = "/tmp";
	memset(&so, 0, sizeof(so));
	so.order = &w->order;
	so.fields = w->fields;
	so.field_num = w->field_num;
	so.memory = opts->memory ? opts->memory : (uint64_t)256 << 20;
	so.spill_dir = spill;
	so.check_dups = (!s->allows_dups || s->array_type == TFS_DENSE) &&
			!opts->cell_timestamps;
	so.dedup = opts->dedup;
	so.tag_word = opts->tag_word;
	if ((e = tfs__sorter_new(&so, &w->sorter))) {
		tfs_fail(d, e, "out of memory");
		goto out_fail;
	}
	for (uint32_t k = 0; k < w->D && layout == TFS_WRITE_UNORDERED; k++) {
		w->boxlo[k] = UINT64_MAX;
		w->boxhi[k] = 0;
	}
	if (w->stream && (e = stream_start(w, d)))
		goto out_fail;
	*out = w;
	return TFS_E_OK;

out_fail:
	tfs_writer_free(w);
	return e;
}

/* ---- Append ---------------------------------------------------------------- */

static const char *tag_word(const struct tfs_writer *w)
{
	return w->o.tag_word ? w->o.tag_word : "cell";
}

static void fmt_value(char *buf, size_t cap, uint8_t type, const uint8_t *v)
{
	if (tfs_datatype_class(type) == TFS_CLASS_FLOAT)
		snprintf(buf, cap, "%.17g", tfs_value_as_f64(type, v));
	else if (tfs_datatype_class(type) == TFS_CLASS_SIGNED)
		snprintf(buf, cap, "%" PRId64, tfs_value_as_i64(type, v));
	else
		snprintf(buf, cap, "%" PRIu64, tfs_value_as_u64(type, v));
}

static enum tfs_err check_value_in(const struct tfs_writer *w, uint32_t k,
				   const uint8_t *v, uint64_t len,
				   const char *what, uint64_t tag,
				   struct tfs_diag *d)
{
	const struct tfs_dim *dm = &w->s->dims[k];
	char where[64];

	if (!dm->var && tfs_value_cmp(dm->type, v, dm->domain[0]) >= 0 &&
	    tfs_value_cmp(dm->type, v, dm->domain[1]) <= 0 &&
	    !w->s->has_current_domain &&
	    (tfs_datatype_class(dm->type) != TFS_CLASS_FLOAT ||
	     !isnan(tfs_value_as_f64(dm->type, v))))
		return TFS_E_OK; /* the common case, without formatting */
	if (dm->var && !w->s->has_current_domain)
		return TFS_E_OK;
	if (what)
		snprintf(where, sizeof(where), "%s", what);
	else
		snprintf(where, sizeof(where), "%s %" PRIu64, tag_word(w), tag);
	if (dm->var) {
		if (w->s->has_current_domain) {
			const struct tfs_range *r = &w->s->current_domain[k];

			if (r->lo_len + r->hi_len > 0 &&
			    (tfs_bytes_cmp(v, len, r->lo, r->lo_len) < 0 ||
			     tfs_bytes_cmp(v, len, r->hi, r->hi_len) > 0))
				return tfs_fail(d, TFS_E_INVALID,
						"%s: dimension '%s': '%.*s' outside "
						"the current domain",
						where, dm->name,
						(int)(len > 64 ? 64 : len), v);
		}
		return TFS_E_OK;
	}
	if (tfs_datatype_class(dm->type) == TFS_CLASS_FLOAT &&
	    isnan(tfs_value_as_f64(dm->type, v)))
		return tfs_fail(d, TFS_E_INVALID, "%s: dimension '%s': NaN",
				where, dm->name);
	if (tfs_value_cmp(dm->type, v, dm->domain[0]) < 0 ||
	    tfs_value_cmp(dm->type, v, dm->domain[1]) > 0) {
		char buf[64];

		fmt_value(buf, sizeof(buf), dm->type, v);
		return tfs_fail(d, TFS_E_INVALID,
				"%s: dimension '%s': %s outside the domain",
				where, dm->name, buf);
	}
	if (w->s->has_current_domain) {
		const struct tfs_range *r = &w->s->current_domain[k];

		if (r->lo && r->hi &&
		    (tfs_value_cmp(dm->type, v, r->lo) < 0 ||
		     tfs_value_cmp(dm->type, v, r->hi) > 0)) {
			char buf[64], lo[64], hi[64];

			fmt_value(buf, sizeof(buf), dm->type, v);
			fmt_value(lo, sizeof(lo), dm->type, r->lo);
			fmt_value(hi, sizeof(hi), dm->type, r->hi);
			return tfs_fail(d, TFS_E_INVALID,
					"%s: dimension '%s': %s outside the "
					"current domain [%s, %s]",
					where, dm->name, buf, lo, hi);
		}
	}
	return TFS_E_OK;
}

static enum tfs_err map_columns(struct tfs_writer *w, const struct tfs_batch *b,
				struct tfs_diag *d)
{
	for (uint32_t f = 0; f < w->field_num; f++)
		w->colmap[f] = -1;
	for (size_t c = 0; c < b->column_num; c++) {
		const struct tfs_column *col = &b->columns[c];
		int hit = -1;

		if (!col->name)
			return tfs_fail(d, TFS_E_INVALID, "column %zu has no name",
					c);
		for (uint32_t f = 0; f < w->field_num; f++)
			if (!strcmp(w->fields[f].name, col->name))
				hit = (int)f;
		if (hit < 0)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': no such field", col->name);
		if (w->colmap[hit] >= 0)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s' given twice", col->name);
		if (w->layout == TFS_WRITE_DENSE_BOX && w->fields[hit].is_dim)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': a box write takes "
					"attributes only",
					col->name);
		w->colmap[hit] = (int)c;
	}
	for (uint32_t f = 0; f < w->field_num; f++) {
		const struct tfs__field *fd = &w->fields[f];
		const struct tfs_column *col;

		if (w->colmap[f] < 0) {
			if (fd->nullable ||
			    (fd->is_dim && w->layout == TFS_WRITE_DENSE_BOX))
				continue;
			return tfs_fail(d, TFS_E_INVALID, "missing field '%s'",
					fd->name);
		}
		col = &b->columns[w->colmap[f]];
		if (col->type == fd->type && !col->var && !fd->var &&
		    col->cell_val_num != fd->cell_val_num)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': %" PRIu32 " values a cell, "
					"field has %" PRIu32,
					col->name, col->cell_val_num,
					fd->cell_val_num);
		if (col->type != fd->type || col->var != fd->var)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': type %s%s, field is %s%s",
					col->name, tfs_datatype_name(col->type),
					col->var ? " (var)" : "",
					tfs_datatype_name(fd->type),
					fd->var ? " (var)" : "");
		if (b->cell_num && ((fd->var && (!col->offsets || !col->data)) ||
				    (!fd->var && !col->data)))
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': no values", col->name);
		if (!fd->var && col->data_len < b->cell_num * fd->cell_size)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': %" PRIu64 " bytes for %" PRIu64
					" cells",
					col->name, col->data_len, b->cell_num);
	}
	return TFS_E_OK;
}

/* The domain check of fixed-size dimension values in one typed pass:
 * *bad = index of the first value outside [lo, hi] (or NaN), n if none;
 * *imin / *imax = indexes of the smallest / largest value. False for
 * types it does not handle. */
#define DEF_DOMAIN(NAME, T)                                                   \
	static void NAME(const uint8_t *p, uint64_t n, const uint8_t *lop,    \
			 const uint8_t *hip, uint64_t *bad, uint64_t *imin,   \
			 uint64_t *imax)                                      \
	{                                                                     \
		T lo, hi, mn, mx;                                             \
                                                                              \
		memcpy(&lo, lop, sizeof(T));                                  \
		memcpy(&hi, hip, sizeof(T));                                  \
		memcpy(&mn, p, sizeof(T));                                    \
		mx = mn;                                                      \
		*bad = n;                                                     \
		*imin = *imax = 0;                                            \
		for (uint64_t i = 0; i < n; i++) {                            \
			T v;                                                  \
                                                                              \
			memcpy(&v, p + i * sizeof(T), sizeof(T));             \
			if (!(v >= lo && v <= hi)) {                          \
				*bad = i;                                     \
				return;                                       \
			}                                                     \
			if (v < mn) {                                         \
				mn = v;                                       \
				*imin = i;                                    \
			}                                                     \
			if (v > mx) {                                         \
				mx = v;                                       \
				*imax = i;                                    \
			}                                                     \
		}                                                             \
	}

DEF_DOMAIN(domain_i8, int8_t)
DEF_DOMAIN(domain_u8, uint8_t)
DEF_DOMAIN(domain_i16, int16_t)
DEF_DOMAIN(domain_u16, uint16_t)
DEF_DOMAIN(domain_i32, int32_t)
DEF_DOMAIN(domain_u32, uint32_t)
DEF_DOMAIN(domain_i64, int64_t)
DEF_DOMAIN(domain_u64, uint64_t)
DEF_DOMAIN(domain_f32, float)
DEF_DOMAIN(domain_f64, double)

static bool fast_domain(const struct tfs_dim *dm, const uint8_t *p, uint64_t n,
			uint64_t *bad, uint64_t *imin, uint64_t *imax)
{
	uint8_t t = dm->type;
	const uint8_t *lo = dm->domain[0], *hi = dm->domain[1];

	if (n == 0 || !dm->has_domain)
		return false;
	if (tfs_datatype_is_datetime(t))
		t = TFS_INT64;
	switch (t) {
	case TFS_INT8: domain_i8(p, n, lo, hi, bad, imin, imax); break;
	case TFS_UINT8: domain_u8(p, n, lo, hi, bad, imin, imax); break;
	case TFS_INT16: domain_i16(p, n, lo, hi, bad, imin, imax); break;
	case TFS_UINT16: domain_u16(p, n, lo, hi, bad, imin, imax); break;
	case TFS_INT32: domain_i32(p, n, lo, hi, bad, imin, imax); break;
	case TFS_UINT32: domain_u32(p, n, lo, hi, bad, imin, imax); break;
	case TFS_INT64: domain_i64(p, n, lo, hi, bad, imin, imax); break;
	case TFS_UINT64: domain_u64(p, n, lo, hi, bad, imin, imax); break;
	case TFS_FLOAT32: domain_f32(p, n, lo, hi, bad, imin, imax); break;
	case TFS_FLOAT64: domain_f64(p, n, lo, hi, bad, imin, imax); break;
	default:
		return false;
	}
	return true;
}

static uint64_t cell_tag(const struct tfs_writer *w, const uint64_t *tags,
			 uint64_t i)
{
	return tags ? tags[i] : w->appended + i + 1;
}

/* Checks the var values and validity of one column and appends it. */
static enum tfs_err append_column(struct tfs_writer *w, uint32_t f,
				  const struct tfs_batch *b,
				  const uint64_t *tags, struct tfs_diag *d)
{
	struct tfs__cells *cells = w->stream ? &w->scratch
					    : tfs__sorter_cells(w->sorter);
	struct tfs__col *dst = &cells->cols[f];
	const struct tfs__field *fd = &w->fields[f];
	uint64_t n = b->cell_num;
	enum tfs_err e = TFS_E_OK;

	if (w->colmap[f] < 0) {
		/* Missing nullable attribute: null cells of zeros (one
		 * zero element when var-size). */
		for (uint64_t i = 0; i < n && !e; i++) {
			if (fd->var) {
				e = tfs_buf_append_u64(&dst->offs, dst->data.len);
				if (!e)
					e = tfs_buf_resize(&dst->data,
							   dst->data.len +
								   fd->cell_size);
			} else {
				e = tfs_buf_resize(&dst->data,
						   dst->data.len + fd->cell_size);
			}
			if (!e)
				e = tfs_buf_append_u8(&dst->valid, 0);
		}
		return e ? tfs_fail(d, e, "out of memory") : TFS_E_OK;
	}
	const struct tfs_column *col = &b->columns[w->colmap[f]];

	if (fd->var) {
		uint64_t es = fd->cell_size;

		for (uint64_t i = 0; i < n; i++) {
			uint64_t lo = col->offsets[i], hi = col->offsets[i + 1];

			if (hi < lo || hi > col->data_len)
				return tfs_fail(d, TFS_E_INVALID,
						"%s %" PRIu64 ": field '%s': bad "
						"offsets",
						tag_word(w), cell_tag(w, tags, i),
						fd->name);
			if ((hi - lo) % es)
				return tfs_fail(d, TFS_E_INVALID,
						"%s %" PRIu64 ": field '%s': %" PRIu64
						" bytes is no whole number of "
						"values",
						tag_word(w), cell_tag(w, tags, i),
						fd->name, hi - lo);
			if ((e = tfs_buf_append_u64(&dst->offs,
						    dst->data.len + lo -
							    col->offsets[0])))
				return tfs_fail(d, e, "out of memory");
		}
		if (n && (e = tfs_buf_append(&dst->data,
					     col->data + col->offsets[0],
					     col->offsets[n] - col->offsets[0])))
			return tfs_fail(d, e, "out of memory");
	} else if (n && (e = tfs_buf_append(&dst->data, col->data,
					    n * fd->cell_size))) {
		return tfs_fail(d, e, "out of memory");
	}
	if (fd->nullable) {
		if (col->validity)
			e = tfs_buf_append(&dst->valid, col->validity, n);
		else
			for (uint64_t i = 0; i < n && !e; i++)
				e = tfs_buf_append_u8(&dst->valid, 1);
		if (e)
			return tfs_fail(d, e, "out of memory");
	} else if (col->validity) {
		for (uint64_t i = 0; i < n; i++)
			if (!col->validity[i])
				return tfs_fail(d, TFS_E_INVALID,
						"%s %" PRIu64 ": field '%s' is not "
						"nullable",
						tag_word(w), cell_tag(w, tags, i),
						fd->name);
	}
	return TFS_E_OK;
}

static void rollback(struct tfs__cells *c, const size_t *lens, uint64_t cells)
{
	size_t k = 0;

	for (uint32_t f = 0; f < c->field_num; f++) {
		c->cols[f].data.len = lens[k++];
		c->cols[f].offs.len = lens[k++];
		c->cols[f].valid.len = lens[k++];
	}
	c->keys.len = lens[k++];
	c->tags.len = lens[k++];
	c->cell_num = cells;
}

enum tfs_err tfs_writer_append(struct tfs_writer *w, const struct tfs_batch *b,
			       const uint64_t *tags, struct tfs_diag *d)
{
	struct tfs__cells *cells;
	uint64_t n, base;
	enum tfs_err e;

	if (!w || !b)
		return tfs_fail(d, TFS_E_INVALID, "writer: no batch");
	if (w->failed || w->committed)
		return tfs_fail(d, TFS_E_INVALID,
				"writer: append after a failure or commit");
	n = b->cell_num;
	if (n == 0)
		return TFS_E_OK;
	if ((e = map_columns(w, b, d)))
		goto out_fail;
	if (w->layout == TFS_WRITE_DENSE_BOX && n > w->box_cells - w->appended) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "box of %" PRIu64 " cells: more cells given",
			     w->box_cells);
		goto out_fail;
	}
	cells = w->stream ? &w->scratch : tfs__sorter_cells(w->sorter);
	base = cells->cell_num;
	/* Remember lengths, so that a refused batch leaves nothing behind. */
	size_t lens[3 * 256 + 2], *lp = lens;
	size_t *heap_lens = NULL;

	if (3 * (size_t)cells->field_num + 2 > sizeof(lens) / sizeof(*lens)) {
		heap_lens = tfs_mallocn(3 * (size_t)cells->field_num + 2,
					sizeof(size_t));
		if (!heap_lens) {
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			goto out_fail;
		}
		lp = heap_lens;
	}
	{
		size_t k = 0;

		for (uint32_t f = 0; f < cells->field_num; f++) {
			lp[k++] = cells->cols[f].data.len;
			lp[k++] = cells->cols[f].offs.len;
			lp[k++] = cells->cols[f].valid.len;
		}
		lp[k++] = cells->keys.len;
		lp[k++] = cells->tags.len;
	}
	/* Dimensions: checked per cell; a box write computes them. */
	for (uint32_t k = 0; k < w->D; k++) {
		const struct tfs__field *fd = &w->fields[k];
		struct tfs__col *dst = &cells->cols[k];

		if (w->layout == TFS_WRITE_DENSE_BOX) {
			const struct tfs_dim *dm = &w->s->dims[k];
			size_t sz = (size_t)fd->cell_size;

			if ((e = tfs_buf_reserve(&dst->data, n * sz))) {
				tfs_fail(d, e, "out of memory");
				goto out_rollback;
			}
			for (uint64_t i = 0; i < n; i++) {
				/* Row-major over the box: index along k. */
				uint64_t c = w->appended + i, idx = 0;

				for (uint32_t m = w->D; m-- > 0;) {
					uint64_t ext = w->boxhi[m] - w->boxlo[m] + 1;

					if (m == k)
						idx = c % ext;
					c /= ext;
				}
				uint64_t v = tfs_value_as_u64(dm->type, dm->domain[0]) +
					     w->boxlo[k] + idx;
				if (tfs_datatype_class(dm->type) == TFS_CLASS_SIGNED)
					v = (uint64_t)tfs_value_as_i64(dm->type,
								       dm->domain[0]) +
					    w->boxlo[k] + idx;
				tfs_put_uint(dst->data.data + dst->data.len, sz, v);
				dst->data.len += sz;
			}
			continue;
		}
		if ((e = append_column(w, k, b, tags, d)))
			goto out_rollback;
		/* Fixed-size dimensions without a current domain: one typed
		 * pass finds the first cell outside the domain (or NaN) and
		 * the extremes; only a bad cell gets the full check. */
		uint64_t first_bad, imin, imax;

		if (!fd->var && !w->s->has_current_domain &&
		    fast_domain(&w->s->dims[k], dst->data.data + base * fd->cell_size,
				n, &first_bad, &imin, &imax)) {
			if (first_bad < n) {
				e = check_value_in(w, k,
						   dst->data.data +
							   (base + first_bad) *
								   fd->cell_size,
						   fd->cell_size, NULL,
						   cell_tag(w, tags, first_bad), d);
				if (!e)
					e = tfs_fail(d, TFS_E_INTERNAL,
						     "domain check disagrees");
				goto out_rollback;
			}
			if (w->s->array_type == TFS_DENSE) {
				const uint8_t *vmin = dst->data.data +
						      (base + imin) * fd->cell_size;
				const uint8_t *vmax = dst->data.data +
						      (base + imax) * fd->cell_size;
				const struct tfs_dim *dm = &w->s->dims[k];
				uint64_t omin = tfs__dim_off(dm, vmin);
				uint64_t omax = tfs__dim_off(dm, vmax);
				bool first = w->appended == 0;
				size_t sz = (size_t)fd->cell_size;

				if (first || omin < w->boxlo[k]) {
					w->boxlo[k] = omin;
					memcpy(w->boxbytes[0][k], vmin, sz);
				}
				if (first || omax > w->boxhi[k]) {
					w->boxhi[k] = omax;
					memcpy(w->boxbytes[1][k], vmax, sz);
				}
			}
			continue;
		}
		for (uint64_t i = 0; i < n; i++) {
			uint64_t len = fd->cell_size;
			const uint8_t *v;

			if (fd->var) {
				v = tfs__var_cell(cells, k, base + i, &len);
				/* The last cell's end is the data end only
				 * once every cell is in; compute it here. */
				len = (i + 1 < n ? tfs_get_u64(dst->offs.data +
								(base + i + 1) * 8)
						 : dst->data.len) -
				      tfs_get_u64(dst->offs.data + (base + i) * 8);
			} else {
				v = dst->data.data + (base + i) * fd->cell_size;
			}
			if ((e = check_value_in(w, k, v, len, NULL,
						cell_tag(w, tags, i), d)))
				goto out_rollback;
			if (w->s->array_type == TFS_DENSE) {
				uint64_t off = tfs__dim_off(&w->s->dims[k], v);

				bool first = w->appended == 0 && i == 0;

				if (first || off < w->boxlo[k]) {
					w->boxlo[k] = off;
					memcpy(w->boxbytes[0][k], v, (size_t)len);
				}
				if (first || off > w->boxhi[k]) {
					w->boxhi[k] = off;
					memcpy(w->boxbytes[1][k], v, (size_t)len);
				}
			}
		}
	}
	for (uint32_t f = w->D; f < w->field_num; f++)
		if ((e = append_column(w, f, b, tags, d)))
			goto out_rollback;
	for (uint64_t i = 0; i < n; i++)
		if ((e = tfs_buf_append_u64(&cells->tags, cell_tag(w, tags, i)))) {
			tfs_fail(d, e, "out of memory");
			goto out_rollback;
		}
	cells->cell_num += n;
	if (w->order.keyed && !w->stream) {
		for (uint64_t i = 0; i < n; i++)
			if ((e = tfs_buf_append_u64(
				     &cells->keys,
				     tfs__order_key(&w->order, cells, base + i)))) {
				tfs_fail(d, e, "out of memory");
				goto out_rollback;
			}
	}
	tfs_free(heap_lens);
	w->appended += n;
	if (w->stream)
		e = stream_cells(w, d);
	else
		e = tfs__sorter_added(w->sorter, d);
	if (e)
		goto out_fail;
	return TFS_E_OK;

out_rollback:
	rollback(cells, lp, base);
	tfs_free(heap_lens);
out_fail:
	w->failed = true;
	return e;
}

/* ---- Commit ---------------------------------------------------------------- */

/* Cells handed from the sorter to the tile writer at a time. */
#define IDX_BATCH 4096

static void tw_opts(struct tfs_writer *w, struct tfs__tw_opts *to, bool dense,
		    const struct tfs_range *box)
{
	memset(to, 0, sizeof(*to));
	to->vfs = w->vfs;
	to->dir = w->dir;
	to->s = w->s;
	to->fields = w->fields;
	to->field_num = w->field_num;
	to->version = w->version;
	to->key = w->has_key ? w->key : NULL;
	to->pool = w->pool;
	to->jobs = 2 * w->threads;
	to->dense = dense;
	to->box = box;
	to->timestamps = w->o.cell_timestamps;
}

static enum tfs_err write_cells(struct tfs_writer *w, bool dense,
				const struct tfs_range *box,
				struct tfs_write_result *res, struct tfs_diag *d)
{
	struct tfs__tw_opts to;
	struct tfs__tw *tw = NULL;
	const struct tfs__cells *c;
	uint64_t *idx;
	enum tfs_err e;

	tw_opts(w, &to, dense, box);
	idx = tfs_mallocn(IDX_BATCH, sizeof(*idx));
	if (!idx)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if ((e = tfs__sorter_rewind(w->sorter, d)) ||
	    (e = w->vfs->ops->mkdir(w->vfs, w->dir, d)) ||
	    (e = tfs__tw_new(&to, &tw, d)))
		goto out;
	for (;;) {
		uint64_t n;

		if ((e = tfs__sorter_next_many(w->sorter, &c, idx, IDX_BATCH, &n,
					       d)))
			goto out;
		if (!n)
			break;
		if ((e = tfs__tw_add_many(tw, c, idx, n, d)))
			goto out;
	}
	if (dense && tfs__sorter_dropped(w->sorter)) {
		/* Dropped duplicates leave the box short: not a dense
		 * fragment after all. */
		e = TFS_E_BUSY;
		goto out;
	}
	e = tfs__tw_finish(tw, &res->bytes, &res->cell_num, d);
out:
	tfs__tw_free(tw);
	tfs_free(idx);
	return e;
}

/* Chooses the fragment's name and timestamps (write.md §2) and makes the
 * folders it goes in. */
static enum tfs_err choose_name(struct tfs_writer *w, struct tfs_diag *d)
{
	struct tfs_write_result *res = &w->res;
	uint64_t t1, t2;
	enum tfs_err e;
	const char *ext = w->version >= 12 ? ".wrt" : ".ok";

	if (w->o.t1 || w->o.t2) {
		t1 = w->o.t1;
		t2 = w->o.t2 ? w->o.t2 : w->o.t1;
	} else {
		uint64_t max, now = tfs__now_ms();

		if ((e = tfs__max_timestamp(w->vfs, w->path, false, &max, d)))
			return e;
		t1 = t2 = max >= now ? max + 1 : now;
	}
	if ((e = tfs_name_new(res->name, sizeof(res->name), t1, t2, w->version,
			      "")))
		return tfs_fail(d, e, "no random bytes for a fragment name");
	res->t1 = t1;
	res->t2 = t2;
	if (w->version >= 12) {
		w->parent = tfs_path_join(w->path, "__fragments");
		w->cdir = tfs_path_join(w->path, "__commits");
	} else {
		w->parent = tfs_strdup(w->path);
		w->cdir = tfs_strdup(w->path);
	}
	w->commit = w->cdir ? tfs_malloc(strlen(w->cdir) + strlen(res->name) + 6)
			    : NULL;
	if (w->commit)
		snprintf(w->commit, strlen(w->cdir) + strlen(res->name) + 6,
			 "%s/%s%s", w->cdir, res->name, ext);
	if (!w->parent || !w->commit)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if ((e = w->vfs->ops->mkdir(w->vfs, w->parent, d)) ||
	    (e = w->vfs->ops->mkdir(w->vfs, w->cdir, d)))
		return e;
	w->dir = tfs_path_join(w->parent, res->name);
	if (!w->dir)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

/* The fragment is complete: make it durable, then commit it last. */
static enum tfs_err commit_last(struct tfs_writer *w, struct tfs_diag *d)
{
	enum tfs_err e;

	if ((e = w->vfs->ops->fsync(w->vfs, w->dir, d)) ||
	    (e = w->vfs->ops->fsync(w->vfs, w->parent, d)))
		return e;
	if ((e = tfs__write_file(w->vfs, w->commit, "", 0, d)) ||
	    (e = w->vfs->ops->fsync(w->vfs, w->cdir, d))) {
		struct tfs_diag ld;

		tfs_diag_init(&ld);
		(void)w->vfs->ops->remove(w->vfs, w->commit, &ld);
		return e;
	}
	return TFS_E_OK;
}

/* Streaming box writes start at open. */
static enum tfs_err stream_start(struct tfs_writer *w, struct tfs_diag *d)
{
	struct tfs__tw_opts to;
	struct tfs_range *box = w->stream_box;
	enum tfs_err e;

	for (uint32_t k = 0; k < w->D; k++) {
		box[k].lo = w->boxbytes[0][k];
		box[k].hi = w->boxbytes[1][k];
		box[k].lo_len = box[k].hi_len =
			tfs_datatype_size(w->s->dims[k].type);
	}
	if ((e = tfs__cells_init(&w->scratch, w->field_num)))
		return tfs_fail(d, e, "out of memory");
	if ((e = choose_name(w, d)))
		return e;
	if ((e = w->vfs->ops->mkdir(w->vfs, w->dir, d)))
		return e;
	tw_opts(w, &to, true, box);
	return tfs__tw_new(&to, &w->tw, d);
}

/* Writes every row of tiles whose cells are all in. */
static enum tfs_err stream_rows(struct tfs_writer *w, struct tfs_diag *d)
{
	uint64_t ext0 = tfs_value_as_u64(w->s->dims[0].type,
					 w->s->dims[0].extent);
	enum tfs_err e;

	for (;;) {
		uint64_t row = w->boxlo[0] + w->rows_done, end, nrows;

		if (row > w->boxhi[0])
			return TFS_E_OK;
		end = (row / ext0 + 1) * ext0 - 1;
		if (end > w->boxhi[0])
			end = w->boxhi[0];
		nrows = end - row + 1;
		if (w->scratch.cell_num < nrows * w->row_cells)
			return TFS_E_OK;
		if ((e = tfs__box_emit(w->tw, &w->scratch, w->s, w->boxlo,
				       w->boxhi, row, nrows, d)))
			return e;
		tfs__cells_drop_front(&w->scratch, w->fields,
				      nrows * w->row_cells);
		w->rows_done += nrows;
	}
}

static enum tfs_err stream_cells(struct tfs_writer *w, struct tfs_diag *d)
{
	enum tfs_err e;

	if (w->tilerow)
		return stream_rows(w, d);
	for (uint64_t i = 0; i < w->scratch.cell_num; i++)
		if ((e = tfs__tw_add(w->tw, &w->scratch, i, d)))
			return e;
	tfs__cells_clear(&w->scratch);
	return TFS_E_OK;
}

enum tfs_err tfs_writer_commit(struct tfs_writer *w,
			       struct tfs_write_result *res,
			       struct tfs_diag *d)
{
	struct tfs_write_result dummy;
	struct tfs_range box[128];
	uint64_t total;
	bool dense = false;
	const struct tfs_schema *s;
	enum tfs_err e;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	if (!w)
		return tfs_fail(d, TFS_E_INVALID, "writer: none");
	if (w->failed || w->committed)
		return tfs_fail(d, TFS_E_INVALID,
				"writer: commit after a failure or commit");
	s = w->s;
	w->failed = true;
	total = w->stream ? w->appended : tfs__sorter_total(w->sorter);
	if (total == 0) {
		/* Nothing to write: a streaming write's folder goes. */
		if (w->dir)
			tfs__remove_tree(w->vfs, w->dir);
		w->committed = true;
		w->failed = false;
		return TFS_E_OK;
	}
	if (w->layout == TFS_WRITE_DENSE_BOX) {
		if (total != w->box_cells)
			return tfs_fail(d, TFS_E_INVALID,
					"box of %" PRIu64 " cells: %" PRIu64
					" cells given",
					w->box_cells, total);
		dense = true;
	} else if (s->array_type == TFS_DENSE) {
		uint64_t vol = 1;

		dense = true;
		for (uint32_t k = 0; k < w->D && dense; k++) {
			uint64_t n = w->boxhi[k] - w->boxlo[k] + 1;

			if (n == 0 || vol > UINT64_MAX / n)
				dense = false;
			else
				vol *= n;
		}
		dense = dense && vol == total;
	}
	if (w->stream) {
		if (w->scratch.cell_num)
			return tfs_fail(d, TFS_E_INTERNAL,
					"box cells left unwritten");
		if ((e = tfs__tw_finish(w->tw, &w->res.bytes, &w->res.cell_num,
					d)))
			return e;
	} else {
		for (uint32_t k = 0; k < w->D; k++) {
			box[k].lo = w->boxbytes[0][k];
			box[k].hi = w->boxbytes[1][k];
			box[k].lo_len = box[k].hi_len =
				tfs_datatype_size(s->dims[k].type);
		}
		if ((e = choose_name(w, d)))
			return e;
		e = write_cells(w, dense, box, &w->res, d);
		if (e == TFS_E_BUSY) {
			tfs__remove_tree(w->vfs, w->dir);
			dense = false;
			w->res.bytes = 0;
			e = write_cells(w, false, box, &w->res, d);
		}
		if (e)
			return e;
	}
	w->res.dense = dense;
	if ((e = commit_last(w, d)))
		return e;
	w->committed = true;
	w->failed = false;
	*res = w->res;
	return TFS_E_OK;
}
