/* The work on one piece of the sparse reader, as jobs on the pool: step 1
 * decodes the coordinates of the candidate tiles and keeps the cells in
 * the subarray; step 4 reads the attributes of the surviving cells and
 * applies delete conditions. */
#include "sparse_reader.h"

/* ---- Step 1: coordinates of the candidate tiles ----------------------- */

struct coord_job {
	struct tfs_job job;
	struct sp_reader *r;
	uint32_t ptile;
	struct sp_cells out;
	enum tfs_err err;
	struct tfs_diag diag;
};

static bool in_piece(const struct sp_reader *r, const struct sp_val *v0)
{
	const struct sp_dim *dm = &r->dims[0];

	if (r->p_has_lo && val_cmp(dm, v0, &r->p_lo) < 0)
		return false;
	if (r->p_has_hi && val_cmp(dm, v0, &r->p_hi) >= 0)
		return false;
	return true;
}

enum tfs_err tfs__sp_check_tile(const struct tfs_fragment *f, uint32_t slot,
				uint64_t tile, const struct tfs_tile *t,
				uint64_t cells, uint64_t cell_size, bool var,
				struct tfs_diag *d)
{
	if (t->cell_num != cells ||
	    (!var && t->fixed_len < cells * cell_size) ||
	    (var && cells && !t->offsets))
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u tile %" PRIu64
				" decodes to the wrong size",
				f->name, slot, tile);
	return TFS_E_OK;
}

/* Decodes the coordinate tiles of the job's tile (ct: one per dimension,
 * or the zipped one), and its timestamps and delete times when read. */
static enum tfs_err coord_tiles_read(struct coord_job *j,
				     const struct sp_tile *st,
				     const struct sp_frag *sf,
				     struct tfs_tile *ct, struct tfs_tile *ts,
				     struct tfs_tile *dt)
{
	const struct sp_reader *r = j->r;
	uint32_t dims = r->dim_num, nt = sf->zipped ? 1 : dims;
	enum tfs_err e = TFS_E_OK;

	for (uint32_t k = 0; k < nt && !e; k++) {
		uint32_t slot = sf->zipped ? sf->coords_slot : sf->dim_slot[k];
		uint64_t size = sf->zipped ? (uint64_t)r->dims[0].size * dims
					   : r->dims[k].size;

		e = tfs_tile_read_cached(r->q->dir, sf->f, slot, st->tile,
					 &ct[k], &j->diag);
		if (!e)
			e = tfs__sp_check_tile(sf->f, slot, st->tile, &ct[k],
					       st->cells, size,
					       !sf->zipped && r->dims[k].var,
					       &j->diag);
	}
	if (!e && sf->read_ts) {
		e = tfs_tile_read_cached(r->q->dir, sf->f, sf->ts_slot,
					 st->tile, ts, &j->diag);
		if (!e)
			e = tfs__sp_check_tile(sf->f, sf->ts_slot, st->tile, ts,
					       st->cells, 8, false, &j->diag);
	}
	if (!e && sf->has_dt) {
		e = tfs_tile_read_cached(r->q->dir, sf->f, sf->dt_slot,
					 st->tile, dt, &j->diag);
		if (!e)
			e = tfs__sp_check_tile(sf->f, sf->dt_slot, st->tile, dt,
					       st->cells, 8, false, &j->diag);
	}
	return e;
}

/* Room for `cells` more cells in out, var-size coordinates aside (they
 * grow as they come). A tile's cells are reserved a step at a time as
 * they are kept (CELLS_STEP, then doubling), not all at once: a tile that
 * reaches across many pieces keeps only a few of its cells in each. */
static enum tfs_err cells_reserve(struct sp_cells *out,
				  const struct sp_reader *r, uint64_t cells)
{
	size_t n = (size_t)cells;
	enum tfs_err e;

	e = tfs_buf_reserve(&out->keys, n * r->dim_num * sizeof(uint64_t));
	for (uint32_t k = 0; k < r->dim_num && !e; k++)
		e = r->dims[k].var
			    ? tfs_buf_reserve(&out->coff[k], n * 8)
			    : tfs_buf_reserve(&out->coord[k],
					      n * r->dims[k].size);
	if (!e)
		e = tfs_buf_reserve(&out->tile, n * 4);
	if (!e)
		e = tfs_buf_reserve(&out->pos, n * 4);
	if (!e)
		e = tfs_buf_reserve(&out->ts, n * 8);
	if (!e)
		e = tfs_buf_reserve(&out->dt, n);
	return e;
}

/* The coordinates of cell c into v; whether the cell lies in the
 * subarray and the piece. */
static bool cell_in(const struct sp_reader *r, const struct sp_frag *sf,
		    const struct tfs_tile *ct, uint64_t c, struct sp_val *v)
{
	uint32_t dims = r->dim_num;

	for (uint32_t k = 0; k < dims; k++) {
		const struct sp_dim *dm = &r->dims[k];

		if (sf->zipped) {
			val_set(&v[k], dm,
				ct[0].fixed + (c * dims + k) * dm->size,
				dm->size);
		} else if (dm->var) {
			uint64_t o = ct[k].offsets[c];

			val_set(&v[k], dm, byte_at(ct[k].var, o),
				ct[k].offsets[c + 1] - o);
		} else {
			val_set(&v[k], dm, ct[k].fixed + c * dm->size,
				dm->size);
		}
		if (val_cmp(dm, &v[k], &dm->sub_lo) < 0 ||
		    val_cmp(dm, &v[k], &dm->sub_hi) > 0)
			return false;
	}
	return in_piece(r, &v[0]);
}

/* Appends one kept cell into the room cells_reserve made (var-size
 * coordinates are appended). */
static enum tfs_err cell_store(struct sp_cells *out, const struct sp_reader *r,
			       const struct sp_val *v, uint32_t ptile,
			       uint32_t pos, uint64_t t, uint8_t gone)
{
	enum tfs_err e;

	for (uint32_t k = 0; k < r->dim_num; k++) {
		const struct sp_dim *dm = &r->dims[k];

		memcpy(out->keys.data + out->keys.len, &v[k].key, 8);
		out->keys.len += 8;
		if (!dm->var) {
			memcpy(out->coord[k].data + out->coord[k].len, v[k].p,
			       dm->size);
			out->coord[k].len += dm->size;
			continue;
		}
		tfs_put_u64(out->coff[k].data + out->coff[k].len,
			    out->coord[k].len);
		out->coff[k].len += 8;
		e = tfs_buf_append(&out->coord[k], v[k].p, (size_t)v[k].len);
		if (e)
			return e;
	}
	tfs_put_u32(out->tile.data + out->tile.len, ptile);
	out->tile.len += 4;
	tfs_put_u32(out->pos.data + out->pos.len, pos);
	out->pos.len += 4;
	tfs_put_u64(out->ts.data + out->ts.len, t);
	out->ts.len += 8;
	out->dt.data[out->dt.len++] = gone;
	out->n++;
	return TFS_E_OK;
}

static void coord_job_run(void *arg)
{
	struct coord_job *j = arg;
	struct sp_reader *r = j->r;
	const struct sp_tile *st = &r->tiles[r->ptiles[j->ptile]];
	const struct sp_frag *sf = &r->frags[st->frag];
	uint32_t nt = sf->zipped ? 1 : r->dim_num;
	struct tfs_tile *ct, ts = {0}, dt = {0};
	struct sp_val *v;
	uint64_t room = 0; /* cells reserved in j->out */
	enum tfs_err e;

	tfs_diag_init(&j->diag);
	ct = tfs_callocn(nt, sizeof(*ct));
	v = tfs_callocn(r->dim_num, sizeof(*v));
	if (!ct || !v) {
		e = tfs_fail(&j->diag, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	e = coord_tiles_read(j, st, sf, ct, &ts, &dt);
	for (uint64_t c = 0; c < st->cells && !e; c++) {
		uint64_t t = sf->t1;
		uint8_t gone = 0;

		if (!cell_in(r, sf, ct, c, v))
			continue;
		if (j->out.n == room) {
			uint64_t more = room ? room : CELLS_STEP;

			if (more > st->cells - c)
				more = st->cells - c;
			if (cells_reserve(&j->out, r, more)) {
				e = tfs_fail(&j->diag, TFS_E_NOMEM,
					     "out of memory");
				break;
			}
			room += more;
		}
		if (sf->read_ts) {
			t = tfs_get_u64(ts.fixed + c * 8);
			if (sf->time_filter && (t < r->t0 || t > r->t1))
				continue;
		}
		if (sf->has_dt) {
			uint64_t when = tfs_get_u64(dt.fixed + c * 8);

			gone = r->t1 == UINT64_MAX ? when != UINT64_MAX
						   : when <= r->t1;
		}
		if (cell_store(&j->out, r, v, j->ptile, (uint32_t)c, t, gone))
			e = tfs_fail(&j->diag, TFS_E_NOMEM, "out of memory");
	}
out:
	for (uint32_t k = 0; ct && k < nt; k++)
		tfs_tile_release(&ct[k]);
	tfs_tile_release(&ts);
	tfs_tile_release(&dt);
	tfs_free(ct);
	tfs_free(v);
	j->err = e;
}

static enum tfs_err cells_merge(struct sp_cells *dst, const struct sp_cells *src,
				uint32_t dims)
{
	enum tfs_err e;

	if (dst->n + src->n >= UINT32_MAX)
		return TFS_E_TOO_BIG;
	e = tfs_buf_append(&dst->keys, src->keys.data, src->keys.len);
	for (uint32_t k = 0; k < dims && !e; k++) {
		size_t base = dst->coord[k].len, n = src->coff[k].len / 8;

		for (size_t i = 0; i < n && !e; i++) {
			uint64_t o;

			memcpy(&o, src->coff[k].data + i * 8, 8);
			e = tfs_buf_append_u64(&dst->coff[k], o + base);
		}
		if (!e)
			e = tfs_buf_append(&dst->coord[k], src->coord[k].data,
					   src->coord[k].len);
	}
	if (!e)
		e = tfs_buf_append(&dst->tile, src->tile.data, src->tile.len);
	if (!e)
		e = tfs_buf_append(&dst->pos, src->pos.data, src->pos.len);
	if (!e)
		e = tfs_buf_append(&dst->ts, src->ts.data, src->ts.len);
	if (!e)
		e = tfs_buf_append(&dst->dt, src->dt.data, src->dt.len);
	if (!e)
		dst->n += src->n;
	return e;
}

static void job_start(struct tfs_pool *pool, struct tfs_job *job,
		      void (*fn)(void *), void *arg)
{
	tfs_job_init(job, fn, arg);
	if (pool)
		tfs_pool_submit(pool, job);
}

static void job_finish(struct tfs_pool *pool, struct tfs_job *job)
{
	if (pool)
		tfs_job_wait(pool, job);
	else
		job->fn(job->arg);
}

enum tfs_err tfs__sp_gather_coords(struct sp_reader *r, struct tfs_diag *d)
{
	struct tfs_pool *pool = r->q->array->pool;
	uint32_t wave = r->ptile_num < WAVE_TILES ? r->ptile_num : WAVE_TILES;
	struct coord_job *jobs;
	enum tfs_err e = TFS_E_OK;

	if (!r->ptile_num)
		return TFS_E_OK;
	jobs = tfs_callocn(wave, sizeof(*jobs));
	if (!jobs)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t first = 0; first < r->ptile_num && !e; first += wave) {
		uint32_t n = r->ptile_num - first < wave ? r->ptile_num - first
							 : wave;
		uint32_t started = 0;

		for (uint32_t i = 0; i < n; i++, started++) {
			jobs[i].r = r;
			jobs[i].ptile = first + i;
			jobs[i].err = TFS_E_OK;
			if (cells_alloc(&jobs[i].out, r->dim_num)) {
				e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
				break;
			}
			job_start(pool, &jobs[i].job, coord_job_run, &jobs[i]);
		}
		for (uint32_t i = 0; i < started; i++) {
			job_finish(pool, &jobs[i].job);
			if (!e && jobs[i].err)
				e = tfs_fail(d, jobs[i].err, "%s",
					     tfs_diag_msg(&jobs[i].diag));
			if (!e && (e = cells_merge(&r->cells, &jobs[i].out,
						   r->dim_num)))
				e = tfs_fail(d, e, e == TFS_E_TOO_BIG
						       ? "piece of the selection holds too many cells"
						       : "out of memory");
			cells_release(&jobs[i].out, r->dim_num);
		}
	}
	tfs_free(jobs);
	return e;
}

/* ---- Step 4: attributes and delete conditions ------------------------- */

struct attr_job {
	struct tfs_job job;
	struct sp_reader *r;
	uint32_t ptile;
	const uint32_t *cells; /* indices into r->cells */
	uint32_t cell_num;
	uint8_t *deleted;      /* per listed cell */
	struct sp_col *cols;   /* per query field */
	enum tfs_err err;
	struct tfs_diag diag;
};

static void tile_value(const struct tfs_tile *t,
		       const struct tfs_slot_desc *desc, uint64_t c,
		       const uint8_t **p, uint64_t *len, uint8_t *valid)
{
	if (desc->var) {
		*p = byte_at(t->var, t->offsets[c]);
		*len = t->offsets[c + 1] - t->offsets[c];
	} else {
		*p = t->fixed + c * desc->cell_size;
		*len = desc->cell_size;
	}
	*valid = t->validity ? t->validity[c] : 1;
}

/* True when the delete conditions of the fragment keep cell ci. */
static bool cell_survives(const struct sp_reader *r, const struct sp_frag *sf,
			  const struct tfs_tile *loaded, uint32_t ci,
			  struct tfs_cond_value *gv, struct tfs_cond_value *lv)
{
	uint32_t pos = cell_u32(&r->cells.pos, ci);

	for (uint32_t g = 0; g < r->gname_num; g++) {
		const struct sp_src *s = &sf->src[g];
		uint8_t valid = 1;

		switch (s->kind) {
		case SRC_DIM:
			gv[g].p = cells_coord(&r->cells, &r->dims[s->n], s->n,
					      ci, &gv[g].len);
			break;
		case SRC_LOAD:
			tile_value(&loaded[s->n], &sf->load_desc[s->n], pos,
				   &gv[g].p, &gv[g].len, &valid);
			break;
		default:
			gv[g].p = s->fill;
			gv[g].len = s->fill ? s->fill_len : 0;
			valid = s->fill ? s->fill_valid : 0;
			break;
		}
		gv[g].valid = valid != 0;
	}
	for (uint32_t j = 0; j < sf->del_num; j++) {
		const struct sp_fdel *fd = &sf->dels[j];
		const struct sp_del *sd = &r->dels[fd->del];
		size_t n = tfs_cond_field_count(sd->cond);

		for (size_t l = 0; l < n; l++)
			lv[l] = gv[sd->gmap[l]];
		if (tfs_cond_eval(sd->cond, fd->desc, lv))
			continue;
		if (fd->with_ts && cell_u64(&r->cells.ts, ci) > sd->src->t1)
			continue;
		return false;
	}
	return true;
}

static void attr_job_run(void *arg)
{
	struct attr_job *j = arg;
	struct sp_reader *r = j->r;
	const struct tfs_query *q = r->q;
	const struct sp_tile *st = &r->tiles[r->ptiles[j->ptile]];
	const struct sp_frag *sf = &r->frags[st->frag];
	struct tfs_tile *loaded;
	struct tfs_cond_value *gv = NULL, *lv = NULL;
	size_t lmax = 1;
	enum tfs_err e = TFS_E_OK;

	tfs_diag_init(&j->diag);
	for (uint32_t i = 0; i < r->del_num; i++)
		if (tfs_cond_field_count(r->dels[i].cond) > lmax)
			lmax = tfs_cond_field_count(r->dels[i].cond);
	loaded = tfs_callocn(sf->load_num ? sf->load_num : 1, sizeof(*loaded));
	gv = tfs_callocn(r->gname_num ? r->gname_num : 1, sizeof(*gv));
	lv = tfs_callocn(lmax, sizeof(*lv));
	if (!loaded || !gv || !lv) {
		e = tfs_fail(&j->diag, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t l = 0; l < sf->load_num && !e; l++) {
		const struct tfs_slot_desc *desc = &sf->load_desc[l];

		e = tfs_tile_read_cached(q->dir, sf->f, sf->load_slot[l], st->tile,
				  &loaded[l], &j->diag);
		if (!e)
			e = tfs__sp_check_tile(sf->f, sf->load_slot[l], st->tile,
				       &loaded[l], st->cells, desc->cell_size,
				       desc->var, &j->diag);
	}
	for (uint32_t i = 0; i < j->cell_num && !e; i++) {
		uint32_t ci = j->cells[i];
		uint32_t pos = cell_u32(&r->cells.pos, ci);

		if (sf->del_num &&
		    !cell_survives(r, sf, loaded, ci, gv, lv)) {
			j->deleted[i] = 1;
			continue;
		}
		for (size_t fi = 0; fi < q->field_num && !e; fi++) {
			const struct tfs_out_field *fld = &q->fields[fi];
			const uint8_t *p;
			uint64_t len;
			uint8_t valid;

			if (fld->is_dim)
				continue;
			if (sf->field_load[fi] >= 0) {
				int32_t l = sf->field_load[fi];

				tile_value(&loaded[l], &sf->load_desc[l], pos,
					   &p, &len, &valid);
			} else {
				p = r->fills[fi] ? r->fills[fi] : fld->fill;
				len = fld->var ? fld->fill_size : fld->cell_size;
				valid = fld->fill_valid;
			}
			e = col_append(&j->cols[fi], fld->var, p, len, valid);
			if (e)
				e = tfs_fail(&j->diag, e, "out of memory");
		}
	}
out:
	for (uint32_t l = 0; loaded && l < sf->load_num; l++)
		tfs_tile_release(&loaded[l]);
	tfs_free(loaded);
	tfs_free(gv);
	tfs_free(lv);
	j->err = e;
}

/* Fill values of fixed-size attributes as exactly one cell: a shorter
 * stored fill (one value of a multi-value cell) repeats, anything else is
 * cut or padded with zeros. */
enum tfs_err tfs__sp_prepare_fills(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;

	r->fills = tfs_callocn(q->field_num ? q->field_num : 1,
			       sizeof(*r->fills));
	if (!r->fills)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < q->field_num; i++) {
		const struct tfs_out_field *f = &q->fields[i];
		uint8_t *cell;

		if (f->is_dim || f->var || f->fill_size == f->cell_size)
			continue;
		cell = tfs_callocn(f->cell_size ? f->cell_size : 1, 1);
		if (!cell)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		if (f->fill_size && f->cell_size % f->fill_size == 0) {
			for (uint64_t o = 0; o < f->cell_size; o += f->fill_size)
				memcpy(cell + o, f->fill, (size_t)f->fill_size);
		} else if (f->fill_size) {
			memcpy(cell, f->fill,
			       (size_t)(f->fill_size < f->cell_size ? f->fill_size
								     : f->cell_size));
		}
		r->fills[i] = cell;
	}
	return TFS_E_OK;
}

/* Groups the cells of order[] by tile (counting sort, stable): tile t's
 * cells are list[start[t] .. start[t + 1]), active[] the tiles with any. */
static enum tfs_err group_by_tile(const struct sp_reader *r, uint32_t *start,
				  uint32_t *list, uint32_t *active,
				  uint32_t *active_num, struct tfs_diag *d)
{
	uint32_t n = r->order_num;
	uint32_t *fill;

	for (uint32_t i = 0; i < n; i++)
		start[cell_u32(&r->cells.tile, r->order[i]) + 1]++;
	for (uint32_t t = 0; t < r->ptile_num; t++) {
		if (start[t + 1])
			active[(*active_num)++] = t;
		start[t + 1] += start[t];
	}
	fill = tfs_mallocn(r->ptile_num ? r->ptile_num : 1, sizeof(*fill));
	if (!fill)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	memcpy(fill, start, r->ptile_num * sizeof(*fill));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = r->order[i];

		list[fill[cell_u32(&r->cells.tile, c)]++] = c;
	}
	tfs_free(fill);
	return TFS_E_OK;
}

/* Starts one job per tile of tiles[0 .. cnt); returns how many started
 * (all of them unless *e is set). */
static uint32_t wave_start(struct sp_reader *r, struct attr_job *jobs,
			   const uint32_t *tiles, uint32_t cnt,
			   const uint32_t *start, const uint32_t *list,
			   uint8_t *deleted, enum tfs_err *e,
			   struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;
	uint32_t started = 0;

	for (uint32_t i = 0; i < cnt; i++, started++) {
		struct attr_job *j = &jobs[i];
		uint32_t t = tiles[i];

		j->r = r;
		j->ptile = t;
		j->cells = list + start[t];
		j->cell_num = start[t + 1] - start[t];
		j->deleted = deleted + start[t];
		j->err = TFS_E_OK;
		j->cols = cols_new(q->field_num);
		if (!j->cols) {
			*e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			break;
		}
		job_start(q->array->pool, &j->job, attr_job_run, j);
	}
	return started;
}

/* Waits for a job and, while nothing failed, appends its columns and
 * numbers its surviving cells' rows. */
static enum tfs_err job_collect(struct sp_reader *r, struct attr_job *j,
				uint32_t *rows, enum tfs_err e,
				struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;

	job_finish(q->array->pool, &j->job);
	if (!e && j->err)
		e = tfs_fail(d, j->err, "%s", tfs_diag_msg(&j->diag));
	for (size_t fi = 0; fi < q->field_num && !e; fi++)
		if (!q->fields[fi].is_dim &&
		    col_merge(&r->cols[fi], &j->cols[fi], q->fields[fi].var))
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t c = 0; c < j->cell_num && !e; c++)
		if (!j->deleted[c])
			r->row[j->cells[c]] = (*rows)++;
	cols_free(j->cols, q->field_num);
	j->cols = NULL;
	return e;
}

/* order[] keeps only the cells that got a row (not deleted). */
static void keep_rows(struct sp_reader *r)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < r->order_num; i++)
		if (r->row[r->order[i]] != UINT32_MAX)
			r->order[kept++] = r->order[i];
	r->order_num = kept;
}

/* Decodes the attribute tiles of the surviving cells (order[] lists them),
 * applies delete conditions and fills r->cols and r->row. */
enum tfs_err tfs__sp_gather_attrs(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;
	uint32_t *start = NULL, *list = NULL, *active = NULL, active_num = 0;
	uint8_t *deleted = NULL;
	struct attr_job *jobs = NULL;
	uint32_t n = r->order_num, rows = 0;
	enum tfs_err e = TFS_E_OK;

	r->cols = cols_new(q->field_num);
	r->row = tfs_mallocn(r->cells.n ? r->cells.n : 1, sizeof(*r->row));
	start = tfs_callocn((size_t)r->ptile_num + 1, sizeof(*start));
	list = tfs_mallocn(n ? n : 1, sizeof(*list));
	deleted = tfs_callocn(n ? n : 1, 1);
	active = tfs_mallocn(r->ptile_num ? r->ptile_num : 1, sizeof(*active));
	if (!r->cols || !r->row || !start || !list || !deleted || !active) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < r->cells.n; i++)
		r->row[i] = UINT32_MAX;
	e = group_by_tile(r, start, list, active, &active_num, d);
	if (e)
		goto out;
	jobs = tfs_callocn(WAVE_TILES, sizeof(*jobs));
	if (!jobs) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t first = 0; first < active_num && !e; first += WAVE_TILES) {
		uint32_t cnt = active_num - first < WAVE_TILES
				       ? active_num - first
				       : WAVE_TILES;
		uint32_t started = wave_start(r, jobs, active + first, cnt,
					      start, list, deleted, &e, d);

		for (uint32_t i = 0; i < started; i++)
			e = job_collect(r, &jobs[i], &rows, e, d);
	}
	if (!e)
		keep_rows(r);
out:
	tfs_free(jobs);
	tfs_free(start);
	tfs_free(list);
	tfs_free(deleted);
	tfs_free(active);
	return e;
}
