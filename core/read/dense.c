/* The dense reader (format/read.md §2–3): cells of a subarray in row-major
 * order, fill values where nothing was written, newest fragment wins.
 *
 * The subarray is cut into batches of whole tile rows along dimension 0,
 * the unit that row-major output needs in memory at once. For each batch
 * the reader lists, per space tile, the fragments that survive pruning and
 * the tiles to decode, decodes them on the thread pool, and copies cells
 * oldest fragment first. The next batch's tiles are decoding while the
 * caller consumes the current one. All coordinates are handled as unsigned
 * offsets from the domain's low bound ("rel"), which works for negative
 * and full-range domains alike. */
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
		for (d = last; d-- > 0;) {
			if (x[d] < hi[d]) {
				x[d]++;
				break;
			}
			x[d] = lo[d];
		}
		if (d == UINT32_MAX)
			break;
	}
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
		if (tfs_out_setlen(&col->data, (size_t)(b->cells * fld->cell_size)))
			return TFS_E_NOMEM;
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
static inline void apply_step(struct dense_reader *r, struct tfs_query *q,
			      struct batch *b, const struct copy_step *st)
{
	const struct frag_box *fb = &r->frags[st->frag];
	uint64_t lo[MAX_DIMS], hi[MAX_DIMS];
	size_t job = st->first_job, vi = 0;
	bool hit = true;

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
		if (hit)
			copy_region(r, b, fld, &q->cols[fi], refs,
				    &b->jobs[job].tile, st->k, lo, hi,
				    fb->index + 1);
		job++;
	}
}

static enum tfs_err emit_batch(struct dense_reader *r, struct tfs_query *q,
			       struct batch *b, struct tfs_diag *d)
{
	enum tfs_err e;

	if ((e = grow_refs(r, q, b, d)) || (e = wait_jobs(q, b, d)) ||
	    (e = prepare_outputs(r, q, b, d)))
		return e;
	for (size_t s = 0; s < b->step_num; s++)
		apply_step(r, q, b, &b->steps[s]);
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

		r->cell_stride[k] = stride;
		stride *= r->ext[k];
	}
	return TFS_E_OK;
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
	size_batches(r, q, row_cells, bytes_per_cell);
	r->next_row = r->sub_lo[0];
	e = tfs__dense_plan_batch(r, q, &r->cur);
	if (e)
		return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}
