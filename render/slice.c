/* The slice engine (slice.h): plans, emitting cells by the renderer
 * table's callbacks, dense boxes by index, sparse queries (slice_cells.c),
 * streams. */
#include "slice_cells.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "png_picture.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "text_render.h"

_Static_assert(TFSR_STORED_POS_BYTES <= TFSR_MARK_KEY &&
		       TFSR_STORED_POS_BYTES == 2 * sizeof(uint64_t),
	       "a mark holds a stored position");

/* Output produced per step of a dense stream. */
#define STEP_BYTES ((uint64_t)1 << 20)

/* ---- Plans ------------------------------------------------------------- */

void tfsr_slice_free(struct tfsr_slice *sl)
{
	if (!sl)
		return;
	tfsr_sel_free(sl->sel);
	tfs_free(sl->fields);
	tfs_free(sl->names);
	tfs_free(sl->computed);
	tfs_free(sl->hi_check);
	tfs_free(sl->enums);
	tfs_free(sl->widths);
	tfs_buf_release(&sl->header);
	pthread_mutex_destroy(&sl->prepare_lock);
	tfs_free(sl);
}

static const struct tfs_enumeration *field_enum(const struct tfs_array *a,
						const struct tfs_field_info *f)
{
	if (!f->enumeration)
		return NULL;
	return tfs_array_enumeration_named(a, f->enumeration);
}

static uint64_t field_cell_size(const struct tfs_field_info *f)
{
	return f->var ? 0 : tfs_datatype_size(f->type) * (uint64_t)f->cell_val_num;
}

static enum tfs_err over_max_cells(uint64_t max_cells, uint64_t cells,
				   struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_TOO_BIG,
			"selection of %s%" PRIu64 " cells is over max_cells=%" PRIu64,
			max_cells == cells ? "more than " : "", cells,
			max_cells);
}

/* The output fields: one field's rows and objects carry their
 * coordinates where the format says so (SPEC §4: CSV has the
 * dimensions, then the attribute). */
static void slice_fields(struct tfsr_slice *sl, int field)
{
	const struct tfs_schema *s = sl->s;
	unsigned flags = sl->r->flags;

	if (field >= 0 && ((flags & TFSR_R_COORDS) ||
			   ((flags & TFSR_R_SPARSE_COORDS) && !sl->dense))) {
		for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++)
			sl->fields[sl->nfields++] = (int)k;
		if ((uint32_t)field >= tfs_schema_dim_count(s))
			sl->fields[sl->nfields++] = field;
	} else if (field >= 0) {
		sl->fields[sl->nfields++] = field;
	} else {
		for (uint32_t i = 0; i < tfs_schema_field_count(s); i++)
			sl->fields[sl->nfields++] = (int)i;
	}
}

/* What the selection may not combine with: pictures are not filtered
 * and a step does not combine with a filter. */
static enum tfs_err slice_check_sel(struct tfsr_slice *sl,
				    const struct tfsr_slice_opts *o,
				    struct tfs_diag *d)
{
	if (o->where && (sl->r->flags & TFSR_R_IMAGE))
		return tfs_fail(d, TFS_E_INVALID, "pictures are not filtered");
	if (sl->r->flags & TFSR_R_IMAGE) {
		enum tfs_err e = tfsr_png_sel_check(sl->sel, sl->s, NULL, NULL,
						    d);

		if (e)
			return e;
	}
	for (uint32_t k = 0; o->where && k < sl->sel->dim_num; k++)
		if (sl->sel->dims[k].stride > 1)
			return tfs_fail(d, TFS_E_INVALID,
					"range %u: a step does not combine "
					"with a filter",
					k + 1);
	return TFS_E_OK;
}

/* Dense text renderings compute the coordinates of their cells from the
 * cells' indices (text_render.c) rather than asking the reader for
 * them, when an attribute is read too (a query names one field or
 * more). */
static void slice_computed(struct tfsr_slice *sl)
{
	uint32_t nd = tfs_schema_dim_count(sl->s);
	bool attr = false;

	if (!sl->dense || !(sl->r->flags & TFSR_R_TEXT))
		return;
	for (uint32_t i = 0; i < sl->nfields; i++)
		attr |= (uint32_t)sl->fields[i] >= nd;
	for (uint32_t i = 0; attr && i < sl->nfields; i++)
		sl->computed[i] = (uint32_t)sl->fields[i] < nd;
}

/* The output fields, their names, sizes and enumerations. */
static enum tfs_err slice_fields_plan(struct tfsr_slice *sl, int field,
				      struct tfs_diag *d)
{
	uint32_t all = tfs_schema_field_count(sl->s);
	uint32_t nd = tfs_schema_dim_count(sl->s);

	sl->fields = tfs_callocn(all, sizeof(*sl->fields));
	sl->names = tfs_callocn(all + nd, sizeof(*sl->names));
	sl->hi_check = tfs_callocn(nd, sizeof(*sl->hi_check));
	sl->enums = tfs_callocn(all, sizeof(*sl->enums));
	sl->widths = tfs_callocn(all, sizeof(*sl->widths));
	sl->computed = tfs_callocn(all, sizeof(*sl->computed));
	if (!sl->fields || !sl->names || !sl->hi_check || !sl->enums ||
	    !sl->widths || !sl->computed)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	slice_fields(sl, field);
	sl->fixed = true;
	slice_computed(sl);
	for (uint32_t i = 0; i < sl->nfields; i++) {
		struct tfs_field_info f;

		tfs_schema_field(sl->s, sl->fields[i], &f);
		if (!sl->computed[i])
			sl->names[sl->nnames++] = f.name;
		sl->record += field_cell_size(&f);
		if (f.var)
			sl->fixed = false;
		if (sl->r->flags & TFSR_R_TEXT)
			sl->enums[i] = field_enum(sl->a, &f);
	}
	return TFS_E_OK;
}

/* The query column of dimension k: an output one, or an extra. */
static int slice_dim_column(struct tfsr_slice *sl, uint32_t k)
{
	const char *name = tfs_schema_dim_name(sl->s, k);

	for (uint32_t i = 0; i < sl->nnames; i++)
		if (strcmp(sl->names[i], name) == 0)
			return (int)i;
	sl->names[sl->nnames++] = name;
	return (int)sl->nnames - 1;
}

/* String bounds are inclusive in queries: cells equal to an exclusive
 * hi are dropped, comparing the dimension's column. */
static void slice_hi_checks(struct tfsr_slice *sl)
{
	for (uint32_t k = 0; k < tfs_schema_dim_count(sl->s); k++) {
		sl->hi_check[k] = -1;
		if (!sl->sel->dims[k].hi_exclusive)
			continue;
		sl->hi_check[k] = slice_dim_column(sl, k);
		sl->has_hi_check = true;
	}
}

/* Sparse text, raw and .npy streams are indexed by their first
 * coordinate, one number or a string (struct tfsr_mark); pictures are
 * rendered whole. A .npy header is built before parts run on several
 * threads (tfsr_slice_prepare). */
static void slice_index_key(struct tfsr_slice *sl)
{
	struct tfs_field_info f;

	sl->key_col = -1;
	if (sl->dense || (sl->r->flags & TFSR_R_IMAGE))
		return;
	/* Stored order is not ordered by the first coordinate: its marks
	 * are positions of the query. */
	if (sl->sel->stored) {
		sl->stored_index = true;
		return;
	}
	tfs_schema_field(sl->s, 0, &f);
	if (f.var && tfs_datatype_class(f.type) == TFS_CLASS_STRING) {
		sl->key_var = true;
		sl->key_col = slice_dim_column(sl, 0);
		return;
	}
	if (f.var || f.cell_val_num != 1 || tfs_datatype_size(f.type) > 8 ||
	    tfs_datatype_size(f.type) == 0)
		return;
	sl->key_size = tfs_datatype_size(f.type);
	sl->key_col = slice_dim_column(sl, 0);
}

/* Dense: the number of cells, and the header of a fixed-size format. */
static enum tfs_err slice_dense_plan(struct tfsr_slice *sl, struct tfs_diag *d)
{
	enum tfs_err e;

	sl->cells = sl->sel->empty ? 0 : 1;
	for (uint32_t k = 0; k < tfs_schema_dim_count(sl->s) && sl->cells; k++)
		if (__builtin_mul_overflow(sl->cells, sl->sel->dims[k].count,
					   &sl->cells))
			return tfs_fail(d, TFS_E_TOO_BIG,
					"selection has more than 2^64 cells");
	if (sl->max_cells && sl->cells > sl->max_cells)
		return over_max_cells(sl->max_cells, sl->cells, d);
	if (sl->fixed && sl->r->header && (e = sl->r->header(sl, NULL, 0)))
		return tfs_fail(d, e, "cannot build the %s header", sl->r->ext);
	return TFS_E_OK;
}

enum tfs_err tfsr_slice_open(struct tfs_array *a,
			     const struct tfsr_slice_opts *o,
			     struct tfsr_slice **out, struct tfs_diag *d)
{
	struct tfsr_slice *sl;
	enum tfs_err e;

	*out = NULL;
	sl = tfs_callocn(1, sizeof(*sl));
	if (!sl)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	tfs_buf_init(&sl->header, TFS_BUF_NO_MAX);
	pthread_mutex_init(&sl->prepare_lock, NULL);
	sl->a = a;
	sl->s = tfs_array_schema(a);
	sl->r = tfsr_renderer_of(o->fmt);
	sl->where = o->where;
	sl->dense = tfs_schema_is_dense(sl->s) && !o->where;
	sl->field = o->field;
	sl->max_cells = o->max_cells;
	sl->prefetch = o->prefetch;
	sl->prefetch_ctx = o->prefetch_ctx;
	sl->pool = o->pool;
	sl->key_col = -1;
	if (!sl->r) {
		e = tfs_fail(d, TFS_E_INVALID, "unknown format");
		goto fail;
	}
	e = tfsr_sel_parse(o->sel, o->sel_len, sl->s, o->ned, &sl->sel, d);
	if (!e)
		e = slice_check_sel(sl, o, d);
	if (!e)
		e = slice_fields_plan(sl, o->field, d);
	if (e)
		goto fail;
	slice_hi_checks(sl);
	slice_index_key(sl);
	if (sl->r->size_kind != TFSR_SIZE_RECORDS) {
		sl->fixed = false;
	} else if (sl->r->record) {
		sl->record = sl->r->record;
		sl->fixed = true;
	}
	if (!sl->dense && sl->fixed && !sl->r->header && !o->where)
		sl->sparse_record = sl->record;
	if (sl->dense)
		e = slice_dense_plan(sl, d);
	else
		sl->fixed = false;
	if (e)
		goto fail;
	/* Only a .npy of a sparse or var-size slice has its header built
	 * later (tfsr_slice_prepare). */
	sl->prepared = sl->r->fmt != TFSR_FMT_NPY || sl->header.len;
	*out = sl;
	return TFS_E_OK;
fail:
	tfsr_slice_free(sl);
	return e;
}

bool tfsr_slice_known_size(const struct tfsr_slice *sl, uint64_t *size)
{
	uint64_t body;

	if (!sl->dense)
		return false;
	if (sl->r->size_kind == TFSR_SIZE_COUNTED)
		return !__builtin_mul_overflow(sl->cells, (uint64_t)sl->r->record,
					       size);
	return sl->fixed &&
	       !__builtin_mul_overflow(sl->cells, sl->record, &body) &&
	       !__builtin_add_overflow(body, (uint64_t)sl->header.len, size);
}

/* The cells of a sparse slice without a filter when fragment metadata
 * gives their count, within max_cells. */
static bool sparse_cells_known(const struct tfsr_slice *sl,
			       struct tfs_array *src, uint64_t *cells)
{
	struct tfs_query *q = NULL;
	struct tfs_diag d;
	bool known;

	if (sl->dense || sl->has_hi_check || sl->where)
		return false;
	if (sl->sel->empty) {
		*cells = 0;
		return true;
	}
	tfs_diag_init(&d);
	if (tfsr__sparse_open(sl, src, NULL, 0, NULL, 0, &q, &d))
		return false;
	known = tfs_query_cells_known(q, cells) &&
		(!sl->max_cells || *cells <= sl->max_cells);
	tfs_query_close(q);
	return known;
}

bool tfsr_slice_sparse_size(const struct tfsr_slice *sl, uint64_t *size)
{
	uint64_t cells;

	return sl->sparse_record && sparse_cells_known(sl, sl->a, &cells) &&
	       !__builtin_mul_overflow(cells, sl->sparse_record, size) &&
	       *size <= (uint64_t)INT64_MAX;
}

/* The .npy header of a slice whose cells are not known up front. */
static enum tfs_err npy_prepare(struct tfsr_slice *sl, struct tfs_array *src,
				struct tfs_diag *d)
{
	struct tfsr_stream st;
	uint64_t count = 0;
	bool var = false;
	enum tfs_err e;

	for (uint32_t i = 0; i < sl->nfields; i++) {
		struct tfs_field_info f;

		tfs_schema_field(sl->s, sl->fields[i], &f);
		var |= f.var;
	}
	if (var || !sparse_cells_known(sl, src, &count)) {
		tfsr_stream_init(&st, sl, src);
		e = tfsr_slice_measure(&st, &count, d);
		tfsr_stream_release(&st);
		if (e)
			return e;
	}
	/* A zero width is not a NumPy dtype. */
	for (uint32_t i = 0; i < sl->nfields; i++)
		if (!sl->widths[i])
			sl->widths[i] = 1;
	/* Through the renderer table: the .npy renderer calls back here. */
	e = sl->r->header(sl, sl->widths, count);
	return e ? tfs_fail(d, e, "cannot build the .npy header") : e;
}

enum tfs_err tfsr_slice_prepare(struct tfsr_slice *sl, struct tfs_array *src,
				struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	if (__atomic_load_n(&sl->prepared, __ATOMIC_ACQUIRE))
		return TFS_E_OK;
	/* Held over the measuring pass: whoever comes meanwhile needs its
	 * result. */
	pthread_mutex_lock(&sl->prepare_lock);
	if (!__atomic_load_n(&sl->prepared, __ATOMIC_ACQUIRE)) {
		e = npy_prepare(sl, src, d);
		if (!e)
			__atomic_store_n(&sl->prepared, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sl->prepare_lock);
	return e;
}

/* ---- Streams ------------------------------------------------------------- */

void tfsr_stream_init(struct tfsr_stream *st, struct tfsr_slice *sl,
		      struct tfs_array *src)
{
	memset(st, 0, sizeof(*st));
	tfs_buf_init(&st->out, TFS_BUF_NO_MAX);
	st->em.sl = sl;
	st->em.src = src;
	st->em.out = &st->out;
	st->em.widths = sl->widths;
	st->pool = sl->pool;
}

void tfsr_stream_release(struct tfsr_stream *st)
{
	if (st->em.sl && st->em.sl->r->release)
		st->em.sl->r->release(&st->em);
	tfs_query_close(st->q);
	tfs_buf_release(&st->out);
	tfs_free(st->marks);
	memset(st, 0, sizeof(*st));
}

/* Sparse: after each batch, the cells so far within max_cells. */
static enum tfs_err check_max_cells(const struct tfsr_emit *em,
				    struct tfs_diag *d)
{
	if (em->sl->max_cells && em->count > em->sl->max_cells)
		return over_max_cells(em->sl->max_cells, em->sl->max_cells, d);
	return TFS_E_OK;
}

enum tfs_err tfsr_slice_measure(struct tfsr_stream *st, uint64_t *count,
				struct tfs_diag *d)
{
	struct tfsr_slice *p = st->em.sl;
	struct tfsr_emit m = {.sl = p, .src = st->em.src, .widths = p->widths,
			      .measure = true};
	struct tfs_query *q = NULL;
	enum tfs_err e;

	if (p->dense) {
		e = tfsr_emit_dense_range(&m, 0, p->cells, d);
	} else {
		e = tfsr__sparse_open(p, m.src, NULL, 0, NULL, 0, &q, d);
		while (!e && q) {
			const struct tfs_batch *b;

			e = tfs_query_next(q, &b, d);
			if (e || !b)
				break;
			e = tfsr__emit_sparse_batch(&m, b);
			if (!e)
				e = check_max_cells(&m, d);
		}
		tfs_query_close(q);
	}
	if (!e)
		*count = m.count;
	return e;
}

/* Cells per dense step: about STEP_BYTES of output. */
static uint64_t step_cells(const struct tfsr_slice *p)
{
	uint64_t per = p->fixed && p->record ? p->record : 16 * p->nfields;

	return STEP_BYTES / per ? STEP_BYTES / per : 1;
}

uint64_t tfsr_slice_step_cells(const struct tfsr_slice *sl)
{
	return step_cells(sl);
}

bool tfsr_slice_seekable(const struct tfsr_slice *sl)
{
	if (!sl->dense)
		return sl->key_col >= 0 || sl->stored_index;
	return (sl->r->flags & TFSR_R_TEXT) || sl->r->fmt == TFSR_FMT_RAW;
}

/* The bytes of a mark's key in a stream of p. */
static size_t mark_key_len(const struct tfsr_slice *p,
			   const struct tfsr_mark *m)
{
	if (p->stored_index)
		return TFSR_STORED_POS_BYTES;
	if (!p->key_var)
		return p->key_size;
	return m->key_len < TFSR_MARK_KEY ? m->key_len : TFSR_MARK_KEY;
}

/* Where a part ends, in a query bounded at st->end_key (NULL: none). */
static const uint8_t *end_bound(const struct tfsr_stream *st)
{
	return st->bounded ? st->end_key : NULL;
}

/* Starts st at output cell `cell` of offset base, the query of a sparse
 * stream at first coordinate key (key_len bytes). */
static enum tfs_err stream_start(struct tfsr_stream *st, uint64_t cell,
				 uint64_t base, const uint8_t *key,
				 size_t key_len, struct tfs_diag *d)
{
	struct tfsr_slice *p = st->em.sl;
	enum tfs_err e = TFS_E_OK;

	if (!tfsr_slice_seekable(p) || st->started ||
	    (p->dense && cell > p->cells))
		return tfs_fail(d, TFS_E_INTERNAL, "stream cannot start at "
				"cell %" PRIu64, cell);
	st->started = true;
	if (p->r->begin)
		e = p->r->begin(st, d);
	if (!e && !p->dense) {
		memcpy(st->seek_key, key, key_len);
		st->seek_len = (uint32_t)key_len;
		memcpy(st->last_key, key, key_len);
		st->last_len = key_len;
		st->has_last = true;
		e = tfsr__sparse_open(p, st->em.src, st->seek_key, key_len,
				      end_bound(st), st->end_len, &st->q, d);
	}
	if (e)
		return e;
	if (p->r->flags & TFSR_R_TEXT)
		tfsr_text_seek(&st->em, cell);
	st->out.len = 0;
	st->base = base;
	st->next_cell = cell;
	st->first_cell = cell;
	st->em.count = cell;
	return TFS_E_OK;
}

enum tfs_err tfsr_stream_start_at(struct tfsr_stream *st, uint64_t cell,
				  uint64_t base, struct tfs_diag *d)
{
	if (!st->em.sl->dense)
		return tfs_fail(d, TFS_E_INTERNAL, "a sparse stream starts at "
				"a mark of its index");
	return stream_start(st, cell, base, NULL, 0, d);
}

enum tfs_err tfsr_stream_start_mark(struct tfsr_stream *st,
				    const struct tfsr_mark *m,
				    struct tfs_diag *d)
{
	return stream_start(st, m->cell, m->off, m->key,
			    mark_key_len(st->em.sl, m), d);
}

/* The greatest value of the fixed-size type below the one at key (w
 * bytes), in place; false when there is none. */
static bool key_before(uint8_t type, uint8_t *key, size_t w)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED: {
		int64_t v = tfs_value_as_i64(type, key);
		int64_t min = w >= 8 ? INT64_MIN
				     : -((int64_t)1 << (8 * w - 1));

		if (v <= min)
			return false;
		tfs_put_uint(key, w, (uint64_t)(v - 1));
		return true;
	}
	case TFS_CLASS_UNSIGNED: {
		uint64_t v = tfs_value_as_u64(type, key);

		if (v == 0)
			return false;
		tfs_put_uint(key, w, v - 1);
		return true;
	}
	case TFS_CLASS_FLOAT:
		if (w == 4) {
			float f;

			memcpy(&f, key, 4);
			f = nextafterf(f, -INFINITY);
			memcpy(key, &f, 4);
			return !isinf(f) && !isnan(f);
		} else {
			double v;

			memcpy(&v, key, 8);
			v = nextafter(v, -INFINITY);
			memcpy(key, &v, 8);
			return !isinf(v) && !isnan(v);
		}
	default:
		return false;
	}
}

enum tfs_err tfsr_stream_start_part(struct tfsr_stream *st,
				    const struct tfsr_mark *from,
				    const struct tfsr_mark *to,
				    struct tfs_diag *d)
{
	const struct tfsr_slice *p = st->em.sl;

	if (to) {
		st->bounded = true;
		st->end_cell = to->cell;
		if (p->dense && to->cell > p->cells)
			return tfs_fail(d, TFS_E_INTERNAL, "part ends past "
					"the selection");
		if (!p->dense) {
			memcpy(st->end_key, to->key, sizeof(st->end_key));
			st->end_len = (uint32_t)mark_key_len(p, to);
			/* A string has no greatest one below it: the query
			 * goes up to the key and the part stops at it. */
			st->end_before = p->key_var;
			if (!tfsr_slice_seekable(p) ||
			    (!p->key_var && !p->stored_index &&
			     !key_before(tfs_schema_dim_type(p->s, 0),
					 st->end_key, p->key_size)))
				return tfs_fail(d, TFS_E_INTERNAL,
						"no part ends at that key");
		}
	}
	return from ? tfsr_stream_start_mark(st, from, d) : TFS_E_OK;
}

bool tfsr_slice_mid_key(const struct tfsr_slice *sl, struct tfsr_mark *mid)
{
	const struct tfs_range *r = &sl->sel->dims[0].range;
	uint8_t type = tfs_schema_dim_type(sl->s, 0);
	size_t w = sl->key_size;

	memset(mid, 0, sizeof(*mid));
	mid->key_len = (uint32_t)w;
	if (sl->dense || sl->key_col < 0 || sl->key_var || sl->sel->empty ||
	    sl->r->text_style == TFSR_TEXT_JSON || r->lo_len != w ||
	    r->hi_len != w)
		return false;
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED: {
		int64_t lo = tfs_value_as_i64(type, r->lo);
		int64_t hi = tfs_value_as_i64(type, r->hi);

		if (hi <= lo)
			return false;
		tfs_put_uint(mid->key, w,
			     (uint64_t)lo + ((uint64_t)hi - (uint64_t)lo) / 2 + 1);
		return true;
	}
	case TFS_CLASS_UNSIGNED: {
		uint64_t lo = tfs_value_as_u64(type, r->lo);
		uint64_t hi = tfs_value_as_u64(type, r->hi);

		if (hi <= lo)
			return false;
		tfs_put_uint(mid->key, w, lo + (hi - lo) / 2 + 1);
		return true;
	}
	case TFS_CLASS_FLOAT: {
		double lo = tfs_value_as_f64(type, r->lo);
		double hi = tfs_value_as_f64(type, r->hi);
		double m = lo / 2 + hi / 2;

		if (w == 4) {
			float f = (float)m;

			m = (double)f;
			memcpy(mid->key, &f, 4);
		} else {
			memcpy(mid->key, &m, 8);
		}
		return isfinite(m) && lo < m && m <= hi;
	}
	default:
		return false;
	}
}

/* The next batch of a sparse stream into its output (*b NULL at the
 * end of the query): in stored order a mark where a batch begins, about
 * every TFSR_MARK_CELLS cells, when indexing; a part that ends before a
 * string key done at its first cell. */
static enum tfs_err sparse_step(struct tfsr_stream *st,
				const struct tfs_batch **b, struct tfs_diag *d)
{
	const struct tfsr_slice *p = st->em.sl;
	uint64_t pos[2], n;
	bool mark = st->indexing && p->stored_index &&
		    st->since_mark >= TFSR_MARK_CELLS &&
		    tfs_query_stored_pos(st->q, pos);
	enum tfs_err e = tfs_query_next(st->q, b, d);

	if (e || !*b)
		return e;
	if (mark && (*b)->cell_num) {
		uint8_t key[TFSR_STORED_POS_BYTES];

		memcpy(key, pos, sizeof(key));
		if (tfsr__mark_push(st, key, sizeof(key)))
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	if (p->stored_index)
		st->since_mark += (*b)->cell_num;
	n = st->end_before ? tfsr__sparse_before_end(st, *b) : (*b)->cell_num;
	e = tfsr__emit_sparse_first(st, *b, n, d);
	if (!e)
		e = check_max_cells(&st->em, d);
	if (!e && n < (*b)->cell_num)
		st->done = true;
	return e;
}

enum tfs_err tfsr_stream_step(struct tfsr_stream *st, struct tfs_diag *d)
{
	struct tfsr_slice *p = st->em.sl;
	uint64_t end = st->bounded ? st->end_cell : p->cells;
	enum tfs_err e = TFS_E_OK;

	if (!st->started) {
		st->started = true;
		if (p->r->begin)
			e = p->r->begin(st, d);
		if (!e && !p->dense)
			e = tfsr__sparse_open(p, st->em.src, NULL, 0,
					      end_bound(st), st->end_len,
					      &st->q, d);
		return e;
	}
	if (p->dense && st->next_cell < end) {
		uint64_t c1 = st->next_cell + step_cells(p);

		if (c1 > end || c1 < st->next_cell)
			c1 = end;
		e = tfsr_emit_dense_range(&st->em, st->next_cell, c1, d);
		st->next_cell = c1;
		if (!e && c1 < p->cells)
			tfsr_slice_prefetch(p, st->em.src, c1,
					    c1 + step_cells(p));
		return e;
	}
	if (!p->dense && st->q) {
		const struct tfs_batch *b = NULL;

		e = sparse_step(st, &b, d);
		if (e || b)
			return e;
	}
	st->done = true;
	if (p->r->end && !st->bounded)
		e = p->r->end(st);
	return e;
}
