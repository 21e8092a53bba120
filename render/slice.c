/* The slice engine (slice.h): plans, emitting cells by the renderer
 * table's callbacks, dense boxes by index, sparse queries, streams. */
#include "slice.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "png_picture.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "text_render.h"

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
	tfs_free(sl->hi_check);
	tfs_free(sl->enums);
	tfs_free(sl->widths);
	tfs_buf_release(&sl->header);
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

enum tfs_err tfsr_slice_open(struct tfs_array *a,
			     const struct tfsr_slice_opts *o,
			     struct tfsr_slice **out, struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	uint32_t all = tfs_schema_field_count(s);
	struct tfsr_slice *sl;
	enum tfs_err e;

	*out = NULL;
	sl = tfs_callocn(1, sizeof(*sl));
	if (!sl)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	tfs_buf_init(&sl->header, TFS_BUF_NO_MAX);
	sl->a = a;
	sl->s = s;
	sl->r = tfsr_renderer_of(o->fmt);
	sl->where = o->where;
	sl->dense = tfs_schema_is_dense(s) && !o->where;
	sl->field = o->field;
	sl->max_cells = o->max_cells;
	sl->prefetch = o->prefetch;
	sl->prefetch_ctx = o->prefetch_ctx;
	if (!sl->r) {
		e = tfs_fail(d, TFS_E_INVALID, "unknown format");
		goto fail;
	}
	e = tfsr_sel_parse(o->sel, o->sel_len, s, o->ned, &sl->sel, d);
	if (e)
		goto fail;
	if (o->where && (sl->r->flags & TFSR_R_IMAGE)) {
		e = tfs_fail(d, TFS_E_INVALID, "pictures are not filtered");
		goto fail;
	}
	if ((sl->r->flags & TFSR_R_IMAGE) &&
	    (e = tfsr_png_sel_check(sl->sel, s, NULL, NULL, d)))
		goto fail;
	for (uint32_t k = 0; o->where && k < sl->sel->dim_num; k++) {
		if (sl->sel->dims[k].stride > 1) {
			e = tfs_fail(d, TFS_E_INVALID,
				     "range %u: a step does not combine with "
				     "a filter",
				     k + 1);
			goto fail;
		}
	}
	sl->fields = tfs_callocn(all, sizeof(*sl->fields));
	sl->names = tfs_callocn(all + tfs_schema_dim_count(s), sizeof(*sl->names));
	sl->hi_check = tfs_callocn(tfs_schema_dim_count(s), sizeof(*sl->hi_check));
	sl->enums = tfs_callocn(all, sizeof(*sl->enums));
	sl->widths = tfs_callocn(all, sizeof(*sl->widths));
	if (!sl->fields || !sl->names || !sl->hi_check || !sl->enums ||
	    !sl->widths) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto fail;
	}
	slice_fields(sl, o->field);
	sl->fixed = true;
	for (uint32_t i = 0; i < sl->nfields; i++) {
		struct tfs_field_info f;

		tfs_schema_field(s, sl->fields[i], &f);
		sl->names[sl->nnames++] = f.name;
		sl->record += field_cell_size(&f);
		if (f.var)
			sl->fixed = false;
		if (sl->r->flags & TFSR_R_TEXT)
			sl->enums[i] = field_enum(a, &f);
	}
	/* String bounds are inclusive in queries: drop cells equal to hi. */
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		sl->hi_check[k] = -1;
		if (!sl->sel->dims[k].hi_exclusive)
			continue;
		for (uint32_t i = 0; i < sl->nnames; i++)
			if (strcmp(sl->names[i], tfs_schema_dim_name(s, k)) == 0)
				sl->hi_check[k] = (int)i;
		sl->has_hi_check = true;
		if (sl->hi_check[k] < 0) {
			sl->hi_check[k] = (int)sl->nnames;
			sl->names[sl->nnames++] = tfs_schema_dim_name(s, k);
		}
	}
	if (sl->r->size_kind != TFSR_SIZE_RECORDS) {
		sl->fixed = false;
	} else if (sl->r->record) {
		sl->record = sl->r->record;
		sl->fixed = true;
	}
	if (!sl->dense && sl->fixed && !sl->r->header && !o->where)
		sl->sparse_record = sl->record;
	if (sl->dense) {
		sl->cells = sl->sel->empty ? 0 : 1;
		for (uint32_t k = 0; k < tfs_schema_dim_count(s) && sl->cells; k++)
			if (__builtin_mul_overflow(sl->cells,
						   sl->sel->dims[k].count,
						   &sl->cells)) {
				e = tfs_fail(d, TFS_E_TOO_BIG,
					     "selection has more than 2^64 "
					     "cells");
				goto fail;
			}
		if (sl->max_cells && sl->cells > sl->max_cells) {
			e = over_max_cells(sl->max_cells, sl->cells, d);
			goto fail;
		}
		if (sl->fixed && sl->r->header &&
		    (e = sl->r->header(sl, NULL, 0))) {
			e = tfs_fail(d, e, "cannot build the %s header",
				     sl->r->ext);
			goto fail;
		}
	} else {
		sl->fixed = false;
	}
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

static enum tfs_err sparse_open(const struct tfsr_slice *p,
				struct tfs_array *src,
				struct tfs_query **q, struct tfs_diag *d);

bool tfsr_slice_sparse_size(const struct tfsr_slice *sl, uint64_t *size)
{
	struct tfs_query *q = NULL;
	struct tfs_diag d;
	uint64_t cells;
	bool known;

	if (sl->dense || !sl->sparse_record || sl->has_hi_check)
		return false;
	if (sl->sel->empty) {
		*size = 0;
		return true;
	}
	tfs_diag_init(&d);
	if (sparse_open(sl, sl->a, &q, &d))
		return false;
	known = tfs_query_cells_known(q, &cells) &&
		(!sl->max_cells || cells <= sl->max_cells) &&
		!__builtin_mul_overflow(cells, sl->sparse_record, size) &&
		*size <= (uint64_t)INT64_MAX;
	tfs_query_close(q);
	return known;
}

/* ---- Emitting cells -------------------------------------------------------- */

void tfsr_cell_bytes(const struct tfsr_slice *sl, uint32_t k,
		     const struct tfs_column *c, uint64_t i,
		     const uint8_t **ptr, uint64_t *len)
{
	if (c->nullable && c->validity && !c->validity[i]) {
		struct tfs_field_info f;

		tfs_schema_field(sl->s, sl->fields[k], &f);
		*ptr = f.fill;
		*len = f.fill_size;
		return;
	}
	if (c->var) {
		*ptr = c->data + c->offsets[i];
		*len = c->offsets[i + 1] - c->offsets[i];
	} else {
		uint64_t size = tfs_datatype_size(c->type) *
				(uint64_t)c->cell_val_num;

		*ptr = c->data + i * size;
		*len = size;
	}
}

enum tfs_err tfsr_raw_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			    uint64_t first, uint64_t n)
{
	const struct tfs_column *c = &b->columns[0];
	enum tfs_err e = TFS_E_OK;

	if (!c->var && !c->nullable) {
		uint64_t size = tfs_datatype_size(c->type) *
				(uint64_t)c->cell_val_num;

		return tfs_buf_append(em->out, c->data + first * size,
				      n * size);
	}
	for (uint64_t i = first; !e && i < first + n; i++) {
		const uint8_t *ptr;
		uint64_t len;

		tfsr_cell_bytes(em->sl, 0, c, i, &ptr, &len);
		e = tfs_buf_append(em->out, ptr, len);
	}
	return e;
}

enum tfs_err tfsr_offsets_cells(struct tfsr_emit *em,
				const struct tfs_batch *b, uint64_t first,
				uint64_t n)
{
	enum tfs_err e = TFS_E_OK;

	for (uint64_t i = first; !e && i < first + n; i++) {
		const uint8_t *ptr;
		uint64_t len;

		tfsr_cell_bytes(em->sl, 0, &b->columns[0], i, &ptr, &len);
		e = tfs_buf_append_u64(em->out, em->var_offset);
		em->var_offset += len;
	}
	return e;
}

enum tfs_err tfsr_validity_cells(struct tfsr_emit *em,
				 const struct tfs_batch *b, uint64_t first,
				 uint64_t n)
{
	const struct tfs_column *c = &b->columns[0];
	enum tfs_err e = TFS_E_OK;

	if (c->validity)
		return tfs_buf_append(em->out, c->validity + first, n);
	for (uint64_t i = 0; !e && i < n; i++)
		e = tfs_buf_append_u8(em->out, 1);
	return e;
}

/* Appends cells first..first+n-1 of batch b in the slice's format. */
static enum tfs_err emit_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			       uint64_t first, uint64_t n)
{
	em->count += n;
	return em->sl->r->cells(em, b, first, n);
}
/* ---- Producing dense cells by index ----------------------------------- */

/* Writes the coordinate of index idx along dimension k of the selection
 * (lo + idx × stride, in the dimension's integer type) to dst. */
static void coord_at(const struct tfsr_slice *p, uint32_t k, uint64_t idx,
		     uint8_t *dst)
{
	const struct tfsr_dim_sel *ds = &p->sel->dims[k];
	size_t w = tfs_datatype_size(tfs_schema_dim_type(p->s, k));
	uint64_t lo = tfs_get_uint(ds->range.lo, w);

	tfs_put_uint(dst, w, lo + idx * ds->stride);
}

/* Emits the box of selection indices lo[k] .. lo[k]+cnt[k]-1, row-major.
 * One query over the box's coordinates; a stride along the last dimension
 * skips cells of the batches, strides along others split the box. */
static enum tfs_err emit_box(struct tfsr_emit *em, const uint64_t *lo,
			     const uint64_t *cnt, struct tfs_diag *d)
{
	const struct tfsr_slice *p = em->sl;
	uint32_t nd = tfs_schema_dim_count(p->s), last = nd - 1;
	struct tfs_range sub[TFSR_MAX_DIMS];
	uint8_t bounds[TFSR_MAX_DIMS][2][8];
	struct tfs_query_opts qo = {.subarray = sub,
				    .fields = p->names,
				    .field_num = p->nnames,
				    .condition = p->where};
	struct tfs_query *q = NULL;
	uint64_t step = p->sel->dims[last].stride, width, r = 0;
	enum tfs_err e;

	for (uint32_t k = 0, outer = 0; k < last; k++) {
		uint64_t lo2[TFSR_MAX_DIMS], cnt2[TFSR_MAX_DIMS];

		if (p->sel->dims[k].stride == 1 || cnt[k] == 1)
			continue;
		/* One query cannot skip along k: split the box, along its
		 * outermost dimension of more than one cell so that the
		 * pieces come out in row-major order. */
		while (cnt[outer] == 1)
			outer++;
		k = outer;
		memcpy(lo2, lo, nd * sizeof(*lo));
		memcpy(cnt2, cnt, nd * sizeof(*cnt));
		cnt2[k] = 1;
		for (uint64_t i = 0; i < cnt[k]; i++) {
			lo2[k] = lo[k] + i;
			e = emit_box(em, lo2, cnt2, d);
			if (e)
				return e;
		}
		return TFS_E_OK;
	}
	for (uint32_t k = 0; k < nd; k++) {
		size_t w = tfs_datatype_size(tfs_schema_dim_type(p->s, k));

		coord_at(p, k, lo[k], bounds[k][0]);
		coord_at(p, k, lo[k] + cnt[k] - 1, bounds[k][1]);
		sub[k] = (struct tfs_range){bounds[k][0], bounds[k][1], w, w};
	}
	width = (cnt[last] - 1) * step + 1;
	e = tfs_query_open(em->src, &qo, &q, d);
	while (!e) {
		const struct tfs_batch *b;

		e = tfs_query_next(q, &b, d);
		if (e || !b)
			break;
		if (step == 1) {
			e = emit_cells(em, b, 0, b->cell_num);
		} else {
			for (uint64_t i = 0; !e && i < b->cell_num; i++)
				if ((r + i) % width % step == 0)
					e = emit_cells(em, b, i, 1);
		}
		r += b->cell_num;
	}
	tfs_query_close(q);
	return e;
}

/* Emits selection cells [c0, c1) (row-major indices) as at most 2n-1
 * boxes: a partial row, whole blocks, a partial row, at each level. */
enum tfs_err tfsr_emit_dense_range(struct tfsr_emit *em, uint64_t c0, uint64_t c1,
				     struct tfs_diag *d)
{
	const struct tfsr_slice *p = em->sl;
	uint32_t nd = tfs_schema_dim_count(p->s);
	uint64_t st[TFSR_MAX_DIMS];
	uint64_t c = c0;

	st[nd - 1] = 1;
	for (uint32_t k = nd - 1; k-- > 0;)
		st[k] = st[k + 1] * p->sel->dims[k + 1].count;
	while (c < c1) {
		uint64_t lo[TFSR_MAX_DIMS], cnt[TFSR_MAX_DIMS], m;
		uint32_t level = nd - 1;
		enum tfs_err e;

		for (uint32_t k = 0; k < nd; k++) {
			if (c % st[k] == 0 && c1 - c >= st[k]) {
				level = k;
				break;
			}
		}
		for (uint32_t k = 0; k < nd; k++) {
			lo[k] = c / st[k] % p->sel->dims[k].count;
			cnt[k] = k < level ? 1 : p->sel->dims[k].count;
		}
		m = (c1 - c) / st[level];
		if (m > p->sel->dims[level].count - lo[level])
			m = p->sel->dims[level].count - lo[level];
		cnt[level] = m;
		for (uint32_t k = level + 1; k < nd; k++)
			lo[k] = 0;
		e = emit_box(em, lo, cnt, d);
		if (e)
			return e;
		c += m * st[level];
	}
	return TFS_E_OK;
}

/* Asks for the rows of the first dimension that hold cells [c0, c1). */
void tfsr_slice_prefetch(const struct tfsr_slice *p,
			 struct tfs_array *src, uint64_t c0, uint64_t c1)
{
	uint32_t nd = tfs_schema_dim_count(p->s);
	uint64_t row_cells = p->cells / p->sel->dims[0].count;
	struct tfs_range sub[TFSR_MAX_DIMS];
	uint8_t bounds[TFSR_MAX_DIMS][2][8];

	/* Requests name fields by the slice's strings: only on its handle,
	 * which outlives them. */
	if (!p->prefetch || src != p->a || c0 >= c1 || c0 >= p->cells)
		return;
	if (c1 > p->cells)
		c1 = p->cells;
	for (uint32_t k = 0; k < nd; k++) {
		size_t w = tfs_datatype_size(tfs_schema_dim_type(p->s, k));
		uint64_t lo = 0, hi = p->sel->dims[k].count - 1;

		if (k == 0) {
			lo = c0 / row_cells;
			hi = (c1 - 1) / row_cells;
		}
		coord_at(p, k, lo, bounds[k][0]);
		coord_at(p, k, hi, bounds[k][1]);
		sub[k] = (struct tfs_range){bounds[k][0], bounds[k][1], w, w};
	}
	p->prefetch(p->prefetch_ctx, sub, p->names, p->nnames);
}

/* ---- Producing sparse cells ---------------------------------------------- */

static enum tfs_err sparse_open(const struct tfsr_slice *p,
				struct tfs_array *src,
				struct tfs_query **q, struct tfs_diag *d)
{
	struct tfs_range sub[TFSR_MAX_DIMS];
	struct tfs_query_opts qo = {.subarray = sub,
				    .fields = p->names,
				    .field_num = p->nnames,
				    .condition = p->where,
				    .stored_order = p->sel->stored};

	*q = NULL;
	if (p->sel->empty)
		return TFS_E_OK;
	for (uint32_t k = 0; k < tfs_schema_dim_count(p->s); k++)
		sub[k] = p->sel->dims[k].range;
	return tfs_query_open(src, &qo, q, d);
}

static bool equals_hi(const struct tfsr_slice *p, const struct tfs_batch *b,
		      uint64_t i)
{
	for (uint32_t k = 0; k < tfs_schema_dim_count(p->s); k++) {
		const struct tfs_column *c;
		const struct tfs_range *r = &p->sel->dims[k].range;
		uint64_t len;

		if (p->hi_check[k] < 0)
			continue;
		c = &b->columns[p->hi_check[k]];
		len = c->offsets[i + 1] - c->offsets[i];
		if (len == r->hi_len &&
		    memcmp(c->data + c->offsets[i], r->hi, len) == 0)
			return true;
	}
	return false;
}

static enum tfs_err emit_sparse_batch(struct tfsr_emit *em,
				      const struct tfs_batch *b)
{
	uint64_t start = 0;
	enum tfs_err e = TFS_E_OK;

	if (!em->sl->has_hi_check)
		return emit_cells(em, b, 0, b->cell_num);
	for (uint64_t i = 0; !e && i <= b->cell_num; i++) {
		if (i < b->cell_num && !equals_hi(em->sl, b, i))
			continue;
		if (i > start)
			e = emit_cells(em, b, start, i - start);
		start = i + 1;
	}
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
}

void tfsr_stream_release(struct tfsr_stream *st)
{
	if (st->em.sl && st->em.sl->r->release)
		st->em.sl->r->release(&st->em);
	tfs_query_close(st->q);
	tfs_buf_release(&st->out);
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
		e = sparse_open(p, m.src, &q, d);
		while (!e && q) {
			const struct tfs_batch *b;

			e = tfs_query_next(q, &b, d);
			if (e || !b)
				break;
			e = emit_sparse_batch(&m, b);
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
	return sl->dense && ((sl->r->flags & TFSR_R_TEXT) ||
			     sl->r->fmt == TFSR_FMT_RAW);
}

enum tfs_err tfsr_stream_start_at(struct tfsr_stream *st, uint64_t cell,
				  uint64_t base, struct tfs_diag *d)
{
	struct tfsr_slice *p = st->em.sl;
	enum tfs_err e = TFS_E_OK;

	if (!tfsr_slice_seekable(p) || st->started || cell > p->cells)
		return tfs_fail(d, TFS_E_INTERNAL, "stream cannot start at "
				"cell %" PRIu64, cell);
	st->started = true;
	if (p->r->begin)
		e = p->r->begin(st, d);
	if (e)
		return e;
	if (p->r->flags & TFSR_R_TEXT)
		tfsr_text_seek(&st->em, cell);
	st->out.len = 0;
	st->base = base;
	st->next_cell = cell;
	st->em.count = cell;
	return TFS_E_OK;
}

enum tfs_err tfsr_stream_step(struct tfsr_stream *st, struct tfs_diag *d)
{
	struct tfsr_slice *p = st->em.sl;
	enum tfs_err e = TFS_E_OK;

	if (!st->started) {
		st->started = true;
		if (p->r->begin)
			e = p->r->begin(st, d);
		if (!e && !p->dense)
			e = sparse_open(p, st->em.src, &st->q, d);
		return e;
	}
	if (p->dense && st->next_cell < p->cells) {
		uint64_t c1 = st->next_cell + step_cells(p);

		if (c1 > p->cells || c1 < st->next_cell)
			c1 = p->cells;
		e = tfsr_emit_dense_range(&st->em, st->next_cell, c1, d);
		st->next_cell = c1;
		if (!e && c1 < p->cells)
			tfsr_slice_prefetch(p, st->em.src, c1,
					    c1 + step_cells(p));
		return e;
	}
	if (!p->dense && st->q) {
		const struct tfs_batch *b;

		e = tfs_query_next(st->q, &b, d);
		if (e)
			return e;
		if (b) {
			e = emit_sparse_batch(&st->em, b);
			return e ? e : check_max_cells(&st->em, d);
		}
	}
	st->done = true;
	if (p->r->end)
		e = p->r->end(st);
	return e;
}
