/* The dense reader (format/read.md §2–3): cells of a subarray in row-major
 * order, fill values where nothing was written, newest fragment wins.
 *
 * The subarray is cut into batches of whole tile rows along dimension 0,
 * the unit that row-major output needs in memory at once. For each batch
 * the reader lists, per space tile, the fragments that survive pruning and
 * the tiles to decode, decodes them on the thread pool, and copies cells
 * oldest fragment first. The next batch's tiles are decoding while the
 * caller consumes the current one. A fixed-size tile too big to decode
 * whole within the memory budget is instead read chunk by chunk as its
 * cells are copied, only the chunks that hold them (tile_chunks.h); a
 * batch may then be part of a tile row. All coordinates are handled as
 * unsigned offsets from the domain's low bound ("rel"), which works for
 * negative and full-range domains alike. */
#include "dense_reader.h"

#include "tfs_mem.h"

static void batch_free(struct dense_reader *r, struct tfs_query *q,
		       struct batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->job_num; i++) {
		tfs_job_wait(q->array->pool, &b->jobs[i].job);
		tfs_tile_release(&b->jobs[i].tile);
	}
	for (size_t i = 0; i < b->sparse_tile_num; i++)
		tfs_tile_release(&b->sparse_tiles[i]);
	tfs_free(b->sparse_tiles);
	(void)r;
	tfs_free(b->jobs);
	tfs_free(b->steps);
	tfs_free(b);
}

/* Moves x to the next run of region [lo, hi] (dimensions before `last`,
 * the last varying fastest); false past its end. */
static bool region_next(uint64_t *x, const uint64_t *lo, const uint64_t *hi,
			uint32_t last)
{
	for (uint32_t d = last; d-- > 0;) {
		if (x[d] < hi[d]) {
			x[d]++;
			return true;
		}
		x[d] = lo[d];
	}
	return false;
}

/* Copies the cells of one decoded tile that fall in region [lo, hi] (rel)
 * into the batch output of one field. */
static void copy_region(const struct dense_reader *r, const struct batch *b,
			const struct tfs_out_field *fld,
			struct tfs_out_column *col, struct var_ref *refs,
			const struct tfs_tile *t, const uint64_t *k,
			const uint64_t *lo, const uint64_t *hi,
			uint32_t writer)
{
	uint32_t dims = r->dim_num, last = dims - 1;
	uint64_t x[MAX_DIMS], out_stride[MAX_DIMS];
	uint64_t run = hi[last] - lo[last] + 1;
	uint64_t cs = fld->cell_size;

	out_stride[last] = 1;
	for (uint32_t d = last; d-- > 0;)
		out_stride[d] = out_stride[d + 1] *
				(r->sub_hi[d + 1] - r->sub_lo[d + 1] + 1);
	memcpy(x, lo, dims * sizeof(*x));
	for (;;) {
		uint64_t out = 0, pos = 0;
		uint32_t d;

		for (d = 0; d < dims; d++) {
			uint64_t base = d ? r->sub_lo[d] : b->row_lo;

			out += (x[d] - base) * out_stride[d];
			pos += (x[d] - k[d] * r->ext[d]) * r->cell_stride[d];
		}
		if (fld->var) {
			for (uint64_t i = 0; i < run; i++) {
				uint64_t p = pos + i * r->cell_stride[last];

				refs[out + i].p = t->var + t->offsets[p];
				refs[out + i].len =
					t->offsets[p + 1] - t->offsets[p];
			}
		} else if (r->cell_stride[last] == 1) {
			memcpy(col->data.data + out * cs, t->fixed + pos * cs,
			       (size_t)(run * cs));
		} else {
			for (uint64_t i = 0; i < run; i++)
				memcpy(col->data.data + (out + i) * cs,
				       t->fixed + (pos + i * r->cell_stride[last]) * cs,
				       (size_t)cs);
		}
		if (fld->nullable) {
			for (uint64_t i = 0; i < run; i++)
				col->validity.data[out + i] =
					t->validity ? t->validity[pos + i * r->cell_stride[last]]
						    : 1;
		}
		if (r->winner)
			for (uint64_t i = 0; i < run; i++)
				r->winner[out + i] = writer;
		if (!region_next(x, lo, hi, last))
			break;
	}
}

/* ---- tiles read chunk by chunk ---- */

/* Where the cells of one region of a tile read chunk by chunk go. */
struct region_copy {
	const struct dense_reader *r;
	uint8_t *out;                  /* the batch's output of the field */
	uint64_t cs;                   /* bytes per cell */
	const uint64_t *k, *lo, *hi;   /* space tile, region (rel) */
	uint64_t base[MAX_DIMS];       /* the batch output's first cell */
	uint64_t out_stride[MAX_DIMS]; /* cells of the output per step */
};

static void region_copy_init(struct region_copy *rc,
			     const struct dense_reader *r,
			     const struct batch *b, const uint64_t *k,
			     const uint64_t *lo, const uint64_t *hi)
{
	uint32_t last = r->dim_num - 1;

	memset(rc, 0, sizeof(*rc));
	rc->r = r;
	rc->k = k;
	rc->lo = lo;
	rc->hi = hi;
	rc->out_stride[last] = 1;
	for (uint32_t d = last; d-- > 0;)
		rc->out_stride[d] = rc->out_stride[d + 1] *
				    (r->sub_hi[d + 1] - r->sub_lo[d + 1] + 1);
	for (uint32_t d = 0; d < r->dim_num; d++)
		rc->base[d] = d ? r->sub_lo[d] : b->row_lo;
}

/* Copies bytes `at`.. of one bytes[len] part of a decoded tile into the
 * output, those of cells inside the region. A tile's cells come in lines
 * along the fast dimension; a line outside the region is skipped whole,
 * one inside is copied in one run when the output is in the same order
 * (a part may start or end inside a cell: before format version 11 a
 * chunk could split one). */
static void copy_cells(void *arg, uint64_t at, const uint8_t *bytes, size_t len)
{
	const struct region_copy *rc = arg;
	const struct dense_reader *r = rc->r;
	uint32_t f = r->fast_dim;
	uint64_t cs = rc->cs, end = at + len;
	uint64_t c = at / cs, c_end = (end + cs - 1) / cs;
	uint64_t t0 = rc->k[f] * r->ext[f]; /* the tile's first on f */

	while (c < c_end) {
		uint64_t line0 = c - c % r->ext[f], out = 0, first, last, o;
		bool in = true;

		for (uint32_t d = 0; d < r->dim_num && in; d++) {
			uint64_t x;

			if (d == f)
				continue;
			x = rc->k[d] * r->ext[d] +
			    c / r->cell_stride[d] % r->ext[d];
			in = x >= rc->lo[d] && x <= rc->hi[d];
			out += (x - rc->base[d]) * rc->out_stride[d];
		}
		first = tfs__max_u64(line0 + (rc->lo[f] - t0), c);
		last = tfs__min_u64(line0 + (rc->hi[f] - t0), c_end - 1);
		c = line0 + r->ext[f];
		if (!in || first > last)
			continue;
		o = out +
		    (t0 + (first - line0) - rc->base[f]) * rc->out_stride[f];
		if (rc->out_stride[f] == 1) {
			uint64_t b0 = tfs__max_u64(first * cs, at);
			uint64_t b1 = tfs__min_u64((last + 1) * cs, end);

			memcpy(rc->out + o * cs + (b0 - first * cs),
			       bytes + (b0 - at), (size_t)(b1 - b0));
			continue;
		}
		for (uint64_t cc = first; cc <= last;
		     cc++, o += rc->out_stride[f]) {
			uint64_t b0 = tfs__max_u64(cc * cs, at);
			uint64_t b1 = tfs__min_u64((cc + 1) * cs, end);

			memcpy(rc->out + o * cs + (b0 - cc * cs),
			       bytes + (b0 - at), (size_t)(b1 - b0));
		}
	}
}

/* What copy_region does besides the cells for a tile read chunk by
 * chunk: the writer of each cell of the region and, when the fragment
 * stores no validity for a nullable field, valid cells. */
static void mark_region(const struct dense_reader *r, const struct batch *b,
			struct tfs_out_column *col, bool valid,
			const uint64_t *lo, const uint64_t *hi, uint32_t writer)
{
	struct region_copy rc;
	uint32_t dims = r->dim_num, last = dims - 1;
	uint64_t x[MAX_DIMS], run = hi[last] - lo[last] + 1;

	if (!valid && !r->winner)
		return;
	region_copy_init(&rc, r, b, lo, lo, hi);
	memcpy(x, lo, dims * sizeof(*x));
	for (;;) {
		uint64_t out = 0;
		uint32_t d;

		for (d = 0; d < dims; d++)
			out += (x[d] - rc.base[d]) * rc.out_stride[d];
		if (valid)
			memset(col->validity.data + out, 1, (size_t)run);
		for (uint64_t i = 0; r->winner && i < run; i++)
			r->winner[out + i] = writer;
		if (!region_next(x, lo, hi, last))
			break;
	}
}

/* The open chunked tiles of job j (data and, for a nullable field whose
 * fragment stores it, validity), opened on first use. */
static enum tfs_err big_tile_get(struct dense_reader *r,
				 const struct decode_job *j, bool nullable,
				 uint64_t tile_row, struct big_tile **out,
				 struct tfs_diag *d)
{
	struct tfs_slot_desc desc;
	struct big_tile *bt;
	enum tfs_err e;

	for (size_t i = 0; i < r->big_num; i++) {
		bt = &r->big[i];
		if (bt->f == j->f && bt->slot == j->slot &&
		    bt->tile_no == j->tile_no) {
			*out = bt;
			return TFS_E_OK;
		}
	}
	if ((e = tfs_slot_describe(j->f, j->slot, &desc, d)))
		return e;
	if (tfs_grow(&r->big, &r->big_cap, r->big_num + 1, sizeof(*r->big)))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	bt = &r->big[r->big_num];
	memset(bt, 0, sizeof(*bt));
	bt->f = j->f;
	bt->slot = j->slot;
	bt->tile_no = j->tile_no;
	bt->tile_row = tile_row;
	e = tfs_chunked_tile_open(j->dir, j->f, j->slot, j->tile_no,
				  TFS_FILE_FIXED, &bt->data, d);
	if (!e && nullable && desc.nullable)
		e = tfs_chunked_tile_open(j->dir, j->f, j->slot, j->tile_no,
					  TFS_FILE_VALIDITY, &bt->validity, d);
	if (e) {
		tfs_chunked_tile_close(bt->data);
		tfs_chunked_tile_close(bt->validity);
		return e;
	}
	r->big_num++;
	*out = bt;
	return TFS_E_OK;
}

/* Closes the chunked tiles of tile rows before `tile_row` (all of them
 * with UINT64_MAX): batches go down dimension 0 and never come back. */
static void big_tiles_drop(struct dense_reader *r, uint64_t tile_row)
{
	size_t kept = 0;

	for (size_t i = 0; i < r->big_num; i++) {
		struct big_tile *bt = &r->big[i];

		if (tile_row != UINT64_MAX && bt->tile_row >= tile_row) {
			r->big[kept++] = *bt;
			continue;
		}
		tfs_chunked_tile_close(bt->data);
		tfs_chunked_tile_close(bt->validity);
	}
	r->big_num = kept;
}

/* copy_region for a tile read chunk by chunk: only the chunks that hold
 * the region's cells are read and decoded, one at a time. */
static enum tfs_err copy_region_chunked(
	struct dense_reader *r, const struct batch *b,
	const struct tfs_out_field *fld, struct tfs_out_column *col,
	const struct decode_job *j, const uint64_t *k, const uint64_t *lo,
	const uint64_t *hi, uint32_t writer, struct tfs_diag *d)
{
	struct region_copy rc;
	struct big_tile *bt = NULL;
	uint64_t first = 0, last = 0;
	enum tfs_err e;

	e = big_tile_get(r, j, fld->nullable, k[0], &bt, d);
	if (e)
		return e;
	/* The region's first and last cells are the tile's first and last
	 * it holds: cell positions grow with every coordinate. */
	for (uint32_t dd = 0; dd < r->dim_num; dd++) {
		first += (lo[dd] - k[dd] * r->ext[dd]) * r->cell_stride[dd];
		last += (hi[dd] - k[dd] * r->ext[dd]) * r->cell_stride[dd];
	}
	region_copy_init(&rc, r, b, k, lo, hi);
	rc.out = col->data.data;
	rc.cs = fld->cell_size;
	e = tfs_chunked_tile_walk(bt->data, first * rc.cs, (last + 1) * rc.cs,
				  copy_cells, &rc, d);
	if (!e && fld->nullable && bt->validity) {
		rc.out = col->validity.data;
		rc.cs = 1;
		e = tfs_chunked_tile_walk(bt->validity, first, last + 1,
					  copy_cells, &rc, d);
	}
	if (!e)
		mark_region(r, b, col, fld->nullable && !bt->validity, lo, hi,
			    writer);
	return e;
}

/* Sizes the output of every field for the batch and writes fill values
 * (attributes) or coordinates (dimensions). */
static enum tfs_err init_outputs(struct dense_reader *r, struct tfs_query *q,
				 const struct batch *b)
{
	bool fill = b->needs_fill || r->sparse_num;
	uint32_t dims = r->dim_num;
	size_t vi = 0;

	for (size_t fi = 0; fi < q->field_num; fi++) {
		const struct tfs_out_field *fld = &q->fields[fi];
		struct tfs_out_column *col = &q->cols[fi];

		if (fld->is_dim) {
			uint32_t d = fld->index;
			uint64_t width = (d ? r->sub_hi[d] - r->sub_lo[d] : b->row_hi - b->row_lo) + 1;
			uint64_t inner = 1, base = d ? r->sub_lo[d] : b->row_lo;

			for (uint32_t e = d + 1; e < dims; e++)
				inner *= r->sub_hi[e] - r->sub_lo[e] + 1;
			if (tfs_buf_setlen(&col->data, (size_t)(b->cells * fld->cell_size)))
				return TFS_E_NOMEM;
			for (uint64_t c = 0; c < b->cells; c++) {
				uint64_t v = r->dom_lo_raw[d] + base + (c / inner) % width;
				uint8_t le[8];

				tfs_put_u64(le, v);
				memcpy(col->data.data + c * fld->cell_size, le,
				       (size_t)fld->cell_size);
			}
			continue;
		}
		if (fld->nullable) {
			if (tfs_out_setlen(&col->validity, (size_t)b->cells))
				return TFS_E_NOMEM;
			memset(col->validity.data, fld->fill_valid, (size_t)b->cells);
		}
		if (fld->var) {
			struct var_ref *refs = r->refs[vi++];

			for (uint64_t c = 0; fill && c < b->cells; c++) {
				refs[c].p = fld->fill;
				refs[c].len = fld->fill_size;
			}
			continue;
		}
		if (q->dest) {
			/* Straight into the caller's memory. */
			size_t n = (size_t)(b->cells * fld->cell_size);

			col->data.data = q->dest + q->dest_used;
			col->data.len = col->data.cap = n;
		} else if (tfs_out_setlen(&col->data,
					  (size_t)(b->cells * fld->cell_size))) {
			return TFS_E_NOMEM;
		}
		if (!fill)
			continue;
		if (fld->fill_size == fld->cell_size) {
			size_t total = (size_t)(b->cells * fld->cell_size);
			size_t done = (size_t)fld->cell_size;

			/* Doubling copies: memcpy speed instead of per cell. */
			memcpy(col->data.data, fld->fill, done);
			while (done < total) {
				size_t n = done < total - done ? done : total - done;

				memcpy(col->data.data + done, col->data.data, n);
				done += n;
			}
		} else {
			memset(col->data.data, 0, (size_t)(b->cells * fld->cell_size));
		}
	}
	return TFS_E_OK;
}

/* Joins the var-size references of a batch into offsets + values. */
static enum tfs_err assemble_var(struct tfs_out_column *col,
				 const struct var_ref *refs, uint64_t cells)
{
	uint64_t total = 0;

	for (uint64_t c = 0; c < cells; c++)
		total += refs[c].len;
	if (tfs_buf_reserve(&col->data, (size_t)total) ||
	    tfs_buf_reserve(&col->offsets, (size_t)(cells + 1) * 8))
		return TFS_E_NOMEM;
	for (uint64_t c = 0; c < cells; c++) {
		tfs_put_u64(col->offsets.data + col->offsets.len, col->data.len);
		col->offsets.len += 8;
		if (refs[c].len)
			memcpy(col->data.data + col->data.len, refs[c].p,
			       (size_t)refs[c].len);
		col->data.len += (size_t)refs[c].len;
	}
	return TFS_E_OK;
}

/* Room for the var-size references of every var field in a batch. */
static enum tfs_err grow_refs(struct dense_reader *r,
			      const struct tfs_query *q, const struct batch *b,
			      struct tfs_diag *d)
{
	size_t var_fields = 0;

	for (size_t fi = 0; fi < q->field_num; fi++)
		var_fields += q->fields[fi].var && !q->fields[fi].is_dim;
	for (size_t v = 0; v < var_fields; v++) {
		struct var_ref *nr = tfs_reallocn(r->refs[v], (size_t)b->cells,
						  sizeof(*nr));

		if (!nr)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		r->refs[v] = nr;
	}
	return TFS_E_OK;
}

/* Waits for the batch's tile decodings; the first failure's reason. */
static enum tfs_err wait_jobs(struct tfs_query *q, struct batch *b,
			      struct tfs_diag *d)
{
	for (size_t i = 0; i < b->job_num; i++) {
		tfs_job_wait(q->array->pool, &b->jobs[i].job);
		if (b->jobs[i].err) {
			tfs_fail(d, b->jobs[i].err, "%s",
				 tfs_diag_msg(&b->jobs[i].diag));
			return b->jobs[i].err;
		}
	}
	return TFS_E_OK;
}

/* The batch's outputs at their fill values and, with sparse fragments,
 * no cell's writer known yet. */
static enum tfs_err prepare_outputs(struct dense_reader *r,
				    struct tfs_query *q, struct batch *b,
				    struct tfs_diag *d)
{
	enum tfs_err e = init_outputs(r, q, b);

	if (!e && r->sparse_num) {
		uint32_t *w = tfs_reallocn(r->winner, (size_t)b->cells,
					   sizeof(*w));

		if (!w)
			e = TFS_E_NOMEM;
		else
			memset(w, 0, (size_t)b->cells * sizeof(*w));
		r->winner = w;
	}
	if (e)
		return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}

/* Copies the part of one dense tile of a fragment that lies in the batch
 * into every field's output. */
static inline enum tfs_err apply_step(struct dense_reader *r,
				      struct tfs_query *q, struct batch *b,
				      const struct copy_step *st,
				      struct tfs_diag *d)
{
	const struct frag_box *fb = &r->frags[st->frag];
	uint64_t lo[MAX_DIMS], hi[MAX_DIMS];
	size_t job = st->first_job, vi = 0;
	bool hit = true;
	enum tfs_err e = TFS_E_OK;

	for (uint32_t dd = 0; dd < r->dim_num && hit; dd++) {
		uint64_t slo = st->k[dd] * r->ext[dd];
		uint64_t shi = slo + (r->ext[dd] - 1);
		uint64_t qlo = dd ? r->sub_lo[dd] : b->row_lo;
		uint64_t qhi = dd ? r->sub_hi[dd] : b->row_hi;

		lo[dd] = tfs__max_u64(tfs__max_u64(slo, qlo), fb->lo[dd]);
		hi[dd] = tfs__min_u64(tfs__min_u64(shi, qhi), fb->hi[dd]);
		hit = lo[dd] <= hi[dd];
	}
	for (size_t fi = 0; fi < q->field_num; fi++) {
		const struct tfs_out_field *fld = &q->fields[fi];
		struct var_ref *refs = NULL;

		if (fld->is_dim)
			continue;
		if (fld->var)
			refs = r->refs[vi++];
		if (fb->slot_of_field[fi] < 0)
			continue;
		if (hit && b->jobs[job].chunked)
			e = copy_region_chunked(r, b, fld, &q->cols[fi],
						&b->jobs[job], st->k, lo, hi,
						fb->index + 1, d);
		else if (hit)
			copy_region(r, b, fld, &q->cols[fi], refs,
				    &b->jobs[job].tile, st->k, lo, hi,
				    fb->index + 1);
		if (e)
			return e;
		job++;
	}
	return TFS_E_OK;
}

static enum tfs_err emit_batch(struct dense_reader *r, struct tfs_query *q,
			       struct batch *b, struct tfs_diag *d)
{
	enum tfs_err e;

	if ((e = grow_refs(r, q, b, d)) || (e = wait_jobs(q, b, d)) ||
	    (e = tfs_out_reserve(q, b->cells, d)) ||
	    (e = prepare_outputs(r, q, b, d)))
		return e;
	big_tiles_drop(r, b->row_lo / r->ext[0]);
	for (size_t s = 0; s < b->step_num; s++) {
		e = apply_step(r, q, b, &b->steps[s], d);
		if (e)
			return e;
	}
	if (r->sparse_num) {
		e = tfs__dense_apply_sparse(r, q, b, d);
		if (e)
			return e;
	}
	for (size_t fi = 0, vi = 0; fi < q->field_num; fi++) {
		if (!q->fields[fi].var || q->fields[fi].is_dim)
			continue;
		e = assemble_var(&q->cols[fi], r->refs[vi++], b->cells);
		if (e)
			return tfs_fail(d, e, "out of memory");
	}
	q->batch_cell_num = b->cells;
	if (q->dest)
		q->dest_used += b->cells * q->fields[0].cell_size;
	return TFS_E_OK;
}

/* decode_only: every batch's tiles decoded (into the tile cache), the
 * next batch's decoding while this one's is awaited; no cells. */
static enum tfs_err decode_all(struct dense_reader *r, struct tfs_query *q,
			       struct tfs_diag *d)
{
	while (r->cur) {
		struct batch *b = r->cur;
		enum tfs_err e = TFS_E_OK;

		if (!r->ahead && tfs__dense_plan_batch(r, q, &r->ahead))
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		for (size_t i = 0; i < b->job_num && !e; i++) {
			tfs_job_wait(q->array->pool, &b->jobs[i].job);
			if (b->jobs[i].err)
				e = tfs_fail(d, b->jobs[i].err, "%s",
					     tfs_diag_msg(&b->jobs[i].diag));
		}
		r->cur = r->ahead;
		r->ahead = NULL;
		batch_free(r, q, b);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

static enum tfs_err dense_next(struct tfs_query *q, struct tfs_diag *d)
{
	struct dense_reader *r = q->reader;
	struct batch *b;
	enum tfs_err e;

	if (!r->cur)
		return TFS_E_OK; /* end */
	if (q->decode_only)
		return decode_all(r, q, d);
	if (!r->ahead) {
		e = tfs__dense_plan_batch(r, q, &r->ahead);
		if (e)
			return tfs_fail(d, e, "out of memory");
	}
	b = r->cur;
	e = emit_batch(r, q, b, d);
	r->cur = r->ahead;
	r->ahead = NULL;
	batch_free(r, q, b);
	return e;
}

static void dense_free(struct tfs_query *q)
{
	struct dense_reader *r = q->reader;

	if (!r)
		return;
	batch_free(r, q, r->cur);
	batch_free(r, q, r->ahead);
	big_tiles_drop(r, UINT64_MAX);
	tfs_free(r->big);
	for (size_t i = 0; i < r->frag_num; i++)
		tfs_free(r->frags[i].slot_of_field);
	tfs_free(r->frags);
	for (size_t i = 0; i < r->sparse_num; i++)
		tfs_free(r->sparse[i].slot_of_field);
	tfs_free(r->sparse);
	tfs_free(r->winner);
	for (size_t i = 0; i < r->refs_cap; i++)
		tfs_free(r->refs[i]);
	tfs_free(r->refs);
	tfs_free(r);
	q->reader = NULL;
}

static const struct tfs_reader_ops dense_ops = {
	.next = dense_next,
	.free = dense_free,
};

/* Slot of each requested attribute in f's own schema: same name and same
 * fixed/var kind (read.md §8), else -1. */
static enum tfs_err map_fields(struct frag_box *fb, const struct tfs_query *q)
{
	const struct tfs_schema *fs = fb->f->schema;

	fb->slot_of_field = tfs_callocn(q->field_num ? q->field_num : 1,
					sizeof(int32_t));
	if (!fb->slot_of_field)
		return TFS_E_NOMEM;
	for (size_t fi = 0; fi < q->field_num; fi++) {
		int k = -1;

		if (!q->fields[fi].is_dim)
			k = tfs_schema_attr_index(fs, q->fields[fi].name);
		if (k >= 0 && fs->attrs[k].var != q->fields[fi].var)
			k = -1;
		fb->slot_of_field[fi] = k;
	}
	return TFS_E_OK;
}

static enum tfs_err setup_frags(struct dense_reader *r, struct tfs_query *q,
				struct tfs_diag *d)
{
	const struct tfs_arraydir *dir = q->dir;

	r->frags = tfs_callocn(dir->fragment_num ? dir->fragment_num : 1,
			       sizeof(*r->frags));
	r->sparse = tfs_callocn(dir->fragment_num ? dir->fragment_num : 1,
				sizeof(*r->sparse));
	if (!r->frags || !r->sparse)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < dir->fragment_num; i++) {
		struct tfs_fragment *f = dir->fragments[i];
		struct frag_box *fb = f->footer.dense ? &r->frags[r->frag_num]
						      : &r->sparse[r->sparse_num];
		uint64_t stride = 1;

		if (f->footer.empty)
			continue;
		fb->index = (uint32_t)i;
		if (f->footer.dim_num != r->dim_num)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': %u dimensions, array "
					"has %u",
					f->name, f->footer.dim_num, r->dim_num);
		fb->f = f;
		for (uint32_t dd = 0; dd < r->dim_num; dd++) {
			fb->lo[dd] = tfs__dense_rel_of(r, dd, f->footer.ned[dd].lo);
			fb->hi[dd] = tfs__dense_rel_of(r, dd, f->footer.ned[dd].hi);
			if (fb->lo[dd] > fb->hi[dd])
				return tfs_fail(d, TFS_E_CORRUPT,
						"fragment '%s': non-empty "
						"domain has low > high",
						f->name);
			fb->tlo[dd] = fb->lo[dd] / r->ext[dd];
		}
		/* Tile numbers over the fragment's own tile box, tile order. */
		for (uint32_t n = 0; n < r->dim_num; n++) {
			uint32_t dd = r->tile_order == TFS_COL_MAJOR
					      ? n
					      : r->dim_num - 1 - n;

			fb->tstride[dd] = stride;
			stride *= fb->hi[dd] / r->ext[dd] - fb->tlo[dd] + 1;
		}
		if (map_fields(fb, q))
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		if (f->footer.dense)
			r->frag_num++;
		else
			r->sparse_num++;
	}
	return TFS_E_OK;
}

/* The dimensions' domain starts, tile extents and the subarray in cells
 * from the domain's start; they must be integers of one type with a
 * domain and extent. Then cell positions inside a tile (read.md §2). */
static enum tfs_err read_dims(struct dense_reader *r,
			      const struct tfs_query *q, struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;
	uint64_t stride = 1;

	r->tile_cells = 1;
	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];

		if (dim->var || !dim->has_extent || !dim->has_domain ||
		    dim->type != r->dtype || !tfs_datatype_is_integer(dim->type))
			return tfs_fail(d, TFS_E_CORRUPT,
					"array '%s': dense dimension '%s' "
					"needs an integer type, domain and "
					"tile extent",
					q->dir->path, dim->name);
		r->dom_lo_raw[k] = tfs__dense_raw_u64(r->dtype, dim->domain[0]);
		r->ext[k] = tfs__dense_raw_u64(r->dtype, dim->extent);
		if (r->ext[k] == 0)
			return tfs_fail(d, TFS_E_CORRUPT,
					"array '%s': dimension '%s' has a zero "
					"tile extent",
					q->dir->path, dim->name);
		r->sub_lo[k] = tfs__dense_rel_of(r, k, q->sub[k].lo);
		r->sub_hi[k] = tfs__dense_rel_of(r, k, q->sub[k].hi);
		r->tile_cells *= r->ext[k];
	}
	for (uint32_t n = 0; n < r->dim_num; n++) {
		uint32_t k = s->cell_order == TFS_COL_MAJOR ? n
							    : r->dim_num - 1 - n;

		if (n == 0)
			r->fast_dim = k;
		r->cell_stride[k] = stride;
		stride *= r->ext[k];
	}
	return TFS_E_OK;
}

/* Whether a requested fixed-size attribute has tiles that decode to more
 * than half the memory budget. */
static bool has_big_tiles(const struct dense_reader *r,
			  const struct tfs_query *q, uint64_t budget)
{
	for (size_t fi = 0; fi < q->field_num; fi++) {
		const struct tfs_out_field *fld = &q->fields[fi];

		if (!fld->is_dim && !fld->var && r->tile_cells &&
		    fld->cell_size > budget / 2 / r->tile_cells)
			return true;
	}
	return false;
}

/* Tile rows per batch: enough cells to keep every thread busy, few
 * enough bytes to bound memory (an eighth of the memory budget at
 * most: tfs_mem.h); at least one. */
static void size_batches(struct dense_reader *r, const struct tfs_query *q,
			 uint64_t row_cells, uint64_t bytes_per_cell)
{
	uint64_t budget, batch_bytes = BATCH_BYTES, target, tile_rows_cells;

	budget = tfs_mem_budget(tfs_mem_global());
	if (budget && budget / 8 < batch_bytes)
		batch_bytes = budget / 8;
	tile_rows_cells = row_cells * r->ext[0];
	target = q->batch_cells;
	if (target < 2 * ((uint64_t)tfs_pool_threads(q->array->pool) + 1) * r->tile_cells)
		target = 2 * ((uint64_t)tfs_pool_threads(q->array->pool) + 1) * r->tile_cells;
	if (target > batch_bytes / bytes_per_cell)
		target = batch_bytes / bytes_per_cell;
	r->rows_per_batch_tiles = tile_rows_cells ? target / tile_rows_cells : 1;
	if (!r->rows_per_batch_tiles)
		r->rows_per_batch_tiles = 1;
	/* Tiles too big to decode whole are read chunk by chunk (dense_plan.c
	 * decode_job_run): then a batch may be part of a tile row, so that
	 * its output stays within batch_bytes too. With row-major cells a
	 * batch's rows are a run of a tile's chunks; with column-major ones
	 * every column holds some, so each batch reads the tile's chunks
	 * again: slower, but the memory stays bounded. */
	if (budget && has_big_tiles(r, q, budget)) {
		uint64_t rows = batch_bytes / bytes_per_cell / row_cells;

		if (rows < r->ext[0]) {
			r->rows_per_batch = rows ? rows : 1;
			r->rows_per_batch_tiles = 1;
		}
	}
}

/* Whether the cells can go straight into tfs_query_opts.dest: one
 * fixed-size attribute, not nullable, and room for every cell. */
static bool dest_fits(const struct tfs_query *q)
{
	const struct tfs_out_field *f = &q->fields[0];

	return q->dest && q->field_num == 1 && !f->is_dim && !f->var &&
	       !f->nullable && f->cell_size &&
	       q->total_cells <= q->dest_bytes / f->cell_size;
}

enum tfs_err tfs_dense_reader_open(struct tfs_query *q, struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;
	struct dense_reader *r;
	uint64_t row_cells = 1, bytes_per_cell = 0;
	size_t var_fields = 0;
	enum tfs_err e;

	if (s->dim_num == 0 || s->dim_num > MAX_DIMS)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': %u dimensions", q->dir->path,
				s->dim_num);
	r = tfs_callocn(1, sizeof(*r));
	if (!r)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	q->reader = r;
	q->reader_ops = &dense_ops;
	r->dim_num = s->dim_num;
	r->dtype = s->dims[0].type;
	r->tile_order = s->tile_order;
	e = read_dims(r, q, d);
	if (e)
		return e;
	e = setup_frags(r, q, d);
	if (e)
		return e;
	for (uint32_t k = 1; k < s->dim_num; k++)
		row_cells *= r->sub_hi[k] - r->sub_lo[k] + 1;
	q->total_cells = row_cells * (r->sub_hi[0] - r->sub_lo[0] + 1);
	for (size_t fi = 0; fi < q->field_num; fi++) {
		bytes_per_cell += q->fields[fi].cell_size + 1;
		var_fields += q->fields[fi].var && !q->fields[fi].is_dim;
	}
	r->refs = tfs_callocn(var_fields ? var_fields : 1, sizeof(*r->refs));
	if (!r->refs)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	r->refs_cap = var_fields;
	if (!dest_fits(q))
		q->dest = NULL;
	size_batches(r, q, row_cells, bytes_per_cell);
	r->next_row = r->sub_lo[0];
	e = tfs__dense_plan_batch(r, q, &r->cur);
	if (e)
		return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}
