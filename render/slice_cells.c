/* The cells of a slice: emitting them by the renderer table's callbacks,
 * producing a dense box's cells by index, and a sparse slice's from its
 * query (slice.h; the plans and streams are slice.c's). */
#include "slice_cells.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "png_picture.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "text_render.h"

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
		const uint8_t *from = c->data + first * size;

		/* Cells a query wrote in place (emit_box's dest). */
		if (em->out->data && from == em->out->data + em->out->len &&
		    n * size <= em->out->cap - em->out->len) {
			em->out->len += (size_t)(n * size);
			return TFS_E_OK;
		}
		return tfs_buf_append(em->out, from, n * size);
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
	/* Raw cells in a row go straight where they would be appended,
	 * when the output has the room reserved (a window). */
	if (step == 1 && p->r->cells == tfsr_raw_cells && !em->measure &&
	    em->out && em->out->data) {
		qo.dest = em->out->data + em->out->len;
		qo.dest_bytes = em->out->cap - em->out->len;
	}
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

enum tfs_err tfsr__sparse_open(const struct tfsr_slice *p,
			       struct tfs_array *src, const uint8_t *from_key,
			       size_t from_len, const uint8_t *to_key,
			       size_t to_len, struct tfs_query **q,
			       struct tfs_diag *d)
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
	if (p->stored_index) {
		/* Positions of the query's stored order, where batches begin:
		 * batches of about the cells between marks. */
		qo.batch_cells = TFSR_MARK_CELLS;
		if (from_key && from_len == sizeof(qo.stored_from))
			memcpy(qo.stored_from, from_key, sizeof(qo.stored_from));
		if (to_key && to_len == sizeof(qo.stored_to))
			memcpy(qo.stored_to, to_key, sizeof(qo.stored_to));
		return tfs_query_open(src, &qo, q, d);
	}
	if (from_key) {
		sub[0].lo = from_key;
		sub[0].lo_len = from_len;
	}
	if (to_key) {
		sub[0].hi = to_key;
		sub[0].hi_len = to_len;
	}
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

/* Cells [from, to) of a sparse batch, without those equal to an
 * exclusive hi. */
static enum tfs_err emit_sparse_range(struct tfsr_emit *em,
				      const struct tfs_batch *b, uint64_t from,
				      uint64_t to)
{
	uint64_t start = from;
	enum tfs_err e = TFS_E_OK;

	if (!em->sl->has_hi_check)
		return to > from ? emit_cells(em, b, from, to - from) : e;
	for (uint64_t i = from; !e && i <= to; i++) {
		if (i < to && !equals_hi(em->sl, b, i))
			continue;
		if (i > start)
			e = emit_cells(em, b, start, i - start);
		start = i + 1;
	}
	return e;
}

enum tfs_err tfsr__emit_sparse_batch(struct tfsr_emit *em,
				     const struct tfs_batch *b)
{
	return emit_sparse_range(em, b, 0, b->cell_num);
}

/* The first coordinate of cell i of a batch: its bytes and length. */
static const uint8_t *key_of(const struct tfs_column *c, size_t w, uint64_t i,
			     uint64_t *len)
{
	static const uint8_t empty;

	if (!c->var) {
		*len = w;
		return c->data + i * w;
	}
	*len = c->offsets[i + 1] - c->offsets[i];
	/* An empty string may come from a column with no data at all. */
	return *len ? c->data + c->offsets[i] : &empty;
}

/* Whether cell i of column c has another first coordinate than the cell
 * before it (the stream's last for cell 0; none: false). Fixed-size keys
 * compare as values (-0.0 and 0.0 are one key); strings as bytes, and a
 * string of more than TFSR_MARK_KEY bytes (which takes no mark) compares
 * equal to the last one of the same length. */
static bool key_changes(const struct tfsr_stream *st,
			const struct tfs_column *c, uint64_t i)
{
	const struct tfsr_slice *p = st->em.sl;
	uint64_t len, prev_len;
	const uint8_t *key = key_of(c, p->key_size, i, &len), *prev;

	if (i) {
		prev = key_of(c, p->key_size, i - 1, &prev_len);
	} else if (st->has_last) {
		prev = st->last_key;
		prev_len = st->last_len;
	} else {
		return false;
	}
	if (!c->var)
		return tfs_value_cmp(c->type, prev, key) != 0;
	if (len != prev_len)
		return true;
	if (i == 0 && len > TFSR_MARK_KEY)
		return false;
	return memcmp(prev, key, len) != 0;
}

/* The first cell in [from, n) of batch b where a mark can go: its first
 * coordinate differs from the cell's before it and fits in a mark; or
 * n. */
static uint64_t key_change(const struct tfsr_stream *st,
			   const struct tfs_batch *b, uint64_t from, uint64_t n)
{
	const struct tfsr_slice *p = st->em.sl;
	const struct tfs_column *c = &b->columns[p->key_col];

	for (uint64_t i = from; i < n; i++) {
		if (!key_changes(st, c, i))
			continue;
		if (!c->var || c->offsets[i + 1] - c->offsets[i] <= TFSR_MARK_KEY)
			return i;
	}
	return n;
}

enum tfs_err tfsr__mark_push(struct tfsr_stream *st, const uint8_t *key,
			     uint64_t len)
{
	struct tfsr_mark *m;

	assert(len <= TFSR_MARK_KEY);
	if (tfs_grow(&st->marks, &st->mark_cap, st->mark_num + 1,
		     sizeof(*st->marks)))
		return TFS_E_NOMEM;
	m = &st->marks[st->mark_num++];
	m->cell = st->em.count;
	m->off = st->base + st->out.len;
	memset(m->key, 0, sizeof(m->key));
	memcpy(m->key, key, len);
	m->key_len = (uint32_t)len;
	st->since_mark = 0;
	return TFS_E_OK;
}

/* Marks are put after at least TFSR_MARK_CELLS cells, at the next change
 * of first coordinate. */
enum tfs_err tfsr__emit_sparse_first(struct tfsr_stream *st,
				     const struct tfs_batch *b, uint64_t n,
				     struct tfs_diag *d)
{
	const struct tfsr_slice *p = st->em.sl;
	const struct tfs_column *kc;
	const uint8_t *key;
	uint64_t start = 0, len;
	enum tfs_err e = TFS_E_OK;

	if (!st->indexing || p->key_col < 0 ||
	    (size_t)p->key_col >= b->column_num ||
	    b->columns[p->key_col].var != p->key_var || !n)
		return emit_sparse_range(&st->em, b, 0, n);
	kc = &b->columns[p->key_col];
	while (!e) {
		uint64_t wait = TFSR_MARK_CELLS > st->since_mark
					? TFSR_MARK_CELLS - st->since_mark
					: 0;
		uint64_t at = key_change(st, b, start + wait < n ? start + wait
								 : n,
					 n);

		if (at == n)
			break;
		e = emit_sparse_range(&st->em, b, start, at);
		key = key_of(kc, p->key_size, at, &len);
		if (!e)
			e = tfsr__mark_push(st, key, len);
		start = at;
	}
	if (!e)
		e = emit_sparse_range(&st->em, b, start, n);
	st->since_mark += n - start;
	key = key_of(kc, p->key_size, n - 1, &len);
	memcpy(st->last_key, key, len < TFSR_MARK_KEY ? len : TFSR_MARK_KEY);
	st->last_len = len;
	st->has_last = true;
	return e ? tfs_fail(d, e, "out of memory") : e;
}

uint64_t tfsr__sparse_before_end(const struct tfsr_stream *st,
				 const struct tfs_batch *b)
{
	const struct tfsr_slice *p = st->em.sl;
	const struct tfs_column *c;

	if (p->key_col < 0 || (size_t)p->key_col >= b->column_num)
		return b->cell_num;
	c = &b->columns[p->key_col];
	for (uint64_t i = 0; i < b->cell_num; i++) {
		uint64_t len;
		const uint8_t *key = key_of(c, p->key_size, i, &len);

		if (len == st->end_len && memcmp(key, st->end_key, len) == 0)
			return i;
	}
	return b->cell_num;
}
