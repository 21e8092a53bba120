/* The sparse reader in stored order (tfs_query_opts.stored_order): when
 * nothing has to be resolved by sorting (tfs__sp_plain), the cells go out
 * fragment by fragment, tile by tile, in each tile's own order, with no
 * sort and no per-piece columns. A few tiles are decoded ahead on the
 * pool while the caller consumes the current one; a tile whose MBR lies
 * inside the subarray needs no coordinates unless they are asked for, and
 * its fixed-size values are copied in runs. Tiles only partly inside keep
 * the positions of their cells in the subarray. A position in this order
 * is a tile and the cells of it handed out before (tfs_query_stored_pos):
 * a query can start at one and stop at another. */
#include "sparse_reader.h"

/* Tiles decoded ahead of the one being handed out. */
#define AHEAD 4

struct st_job {
	struct tfs_job job;
	struct sp_reader *r;
	uint32_t tile;          /* index into r->tiles */
	bool queued;
	struct tfs_tile *coord; /* per coordinate slot (1 when zipped) */
	bool have_coords;
	struct tfs_tile *load;  /* per load slot of the fragment */
	uint32_t *keep;         /* partial tiles: positions kept */
	uint64_t n;             /* cells handed out by this tile */
	uint64_t next;          /* of them, handed out so far */
	enum tfs_err err;
	struct tfs_diag diag;
};

struct sp_stored {
	struct st_job jobs[AHEAD];
	uint32_t next_tile; /* next tile to queue */
	uint32_t cur;       /* job being handed out */
	uint32_t queued;    /* jobs queued or holding cells */
	uint32_t end_tile;  /* tiles queued: those before it */
	/* The first tile's cells to skip (stored_from), until it is
	 * waited for; the last tile's cells to hand out (stored_to). */
	bool skip_pending;
	uint64_t skip;
	bool cut;
	uint32_t cut_tile;
	uint64_t cut_cells;
};

static bool frags_apart(const struct sp_reader *r)
{
	const struct tfs_schema *s = r->q->schema;

	if (r->frag_num > 64)
		return false;
	for (uint32_t i = 0; i < r->frag_num; i++) {
		const struct tfs_range *a = r->frags[i].f->footer.ned;

		for (uint32_t j = i + 1; j < r->frag_num; j++) {
			const struct tfs_range *b = r->frags[j].f->footer.ned;

			if (!a || !b || tfs__boxes_meet(s, a, b))
				return false;
		}
	}
	return true;
}

bool tfs__sp_plain(const struct sp_reader *r)
{
	if (r->q->where || r->del_num)
		return false;
	for (uint32_t i = 0; i < r->frag_num; i++) {
		const struct sp_frag *sf = &r->frags[i];

		/* Per-cell timestamps: several versions of a cell may
		 * share one fragment (consolidation keeps them). */
		if (sf->del_num || sf->has_dt || sf->time_filter ||
		    (r->dedup && sf->has_ts))
			return false;
	}
	return !r->dedup || r->frag_num <= 1 || frags_apart(r);
}

/* ---- Decoding one tile (a pool job) ----------------------------------- */

static void job_clear(struct st_job *j, uint32_t dims, uint32_t loads)
{
	for (uint32_t k = 0; j->coord && k < dims; k++)
		tfs_tile_release(&j->coord[k]);
	for (uint32_t l = 0; j->load && l < loads; l++)
		tfs_tile_release(&j->load[l]);
	tfs_free(j->coord);
	tfs_free(j->load);
	tfs_free(j->keep);
	j->coord = NULL;
	j->load = NULL;
	j->keep = NULL;
	j->have_coords = false;
	j->n = j->next = 0;
	j->queued = false;
}

/* Coordinate k of cell c of a decoded tile. */
static const uint8_t *coord_at(const struct sp_reader *r,
			       const struct sp_frag *sf,
			       const struct st_job *j, uint32_t k, uint64_t c,
			       uint64_t *len)
{
	const struct sp_dim *dm = &r->dims[k];

	if (sf->zipped) {
		*len = dm->size;
		return j->coord[0].fixed + (c * r->dim_num + k) * dm->size;
	}
	if (dm->var) {
		uint64_t o = j->coord[k].offsets[c];

		*len = j->coord[k].offsets[c + 1] - o;
		return byte_at(j->coord[k].var, o);
	}
	*len = dm->size;
	return j->coord[k].fixed + c * dm->size;
}

static enum tfs_err read_coords(struct st_job *j, const struct sp_tile *st,
				const struct sp_frag *sf)
{
	const struct sp_reader *r = j->r;
	uint32_t nt = sf->zipped ? 1 : r->dim_num;
	enum tfs_err e = TFS_E_OK;

	for (uint32_t k = 0; k < nt && !e; k++) {
		uint32_t slot = sf->zipped ? sf->coords_slot : sf->dim_slot[k];
		uint64_t size = sf->zipped ? (uint64_t)r->dims[0].size * r->dim_num
					   : r->dims[k].size;

		e = tfs_tile_read_cached(r->q->dir, sf->f, slot, st->tile,
					 &j->coord[k], &j->diag);
		if (!e)
			e = tfs__sp_check_tile(sf->f, slot, st->tile,
					       &j->coord[k], st->cells, size,
					       !sf->zipped && r->dims[k].var,
					       &j->diag);
	}
	j->have_coords = !e;
	return e;
}

/* The positions of a partly covered tile's cells inside the subarray. */
static enum tfs_err keep_inside(struct st_job *j, const struct sp_tile *st,
				const struct sp_frag *sf)
{
	const struct sp_reader *r = j->r;

	j->keep = tfs_mallocn(st->cells ? st->cells : 1, sizeof(*j->keep));
	if (!j->keep)
		return tfs_fail(&j->diag, TFS_E_NOMEM, "out of memory");
	for (uint64_t c = 0; c < st->cells; c++) {
		bool in = true;

		for (uint32_t k = 0; k < r->dim_num && in; k++) {
			const struct sp_dim *dm = &r->dims[k];
			struct sp_val v;
			uint64_t len;
			const uint8_t *p = coord_at(r, sf, j, k, c, &len);

			val_set(&v, dm, p, len);
			in = val_cmp(dm, &v, &dm->sub_lo) >= 0 &&
			     val_cmp(dm, &v, &dm->sub_hi) <= 0;
		}
		if (in)
			j->keep[j->n++] = (uint32_t)c;
	}
	return TFS_E_OK;
}

static void job_run(void *arg)
{
	struct st_job *j = arg;
	const struct sp_reader *r = j->r;
	const struct tfs_query *q = r->q;
	const struct sp_tile *st = &r->tiles[j->tile];
	const struct sp_frag *sf = &r->frags[st->frag];
	bool want_dims = false;
	enum tfs_err e = TFS_E_OK;

	tfs_diag_init(&j->diag);
	for (size_t fi = 0; fi < q->field_num; fi++)
		want_dims = want_dims || q->fields[fi].is_dim;
	j->coord = tfs_callocn(r->dim_num, sizeof(*j->coord));
	j->load = tfs_callocn(sf->load_num ? sf->load_num : 1,
			      sizeof(*j->load));
	if (!j->coord || !j->load) {
		e = tfs_fail(&j->diag, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	if (st->cells > UINT32_MAX) {
		e = tfs_fail(&j->diag, TFS_E_CORRUPT,
			     "fragment '%s': tile %" PRIu32 " of %" PRIu64
			     " cells", sf->f->name, st->tile, st->cells);
		goto out;
	}
	if (want_dims || !st->inside)
		e = read_coords(j, st, sf);
	if (!e && !st->inside)
		e = keep_inside(j, st, sf);
	else
		j->n = st->cells;
	for (uint32_t l = 0; l < sf->load_num && !e; l++) {
		const struct tfs_slot_desc *desc = &sf->load_desc[l];

		e = tfs_tile_read_cached(q->dir, sf->f, sf->load_slot[l],
					 st->tile, &j->load[l], &j->diag);
		if (!e)
			e = tfs__sp_check_tile(sf->f, sf->load_slot[l], st->tile,
					       &j->load[l], st->cells,
					       desc->cell_size, desc->var,
					       &j->diag);
	}
out:
	j->err = e;
}

/* ---- Handing cells out ------------------------------------------------- */

/* Field fi of cells [pos, pos + n) of the job's tile (whole tiles only:
 * positions are cell indices). Fixed-size values go in one copy. */
static enum tfs_err emit_run(struct sp_reader *r, struct st_job *j,
			     size_t fi, uint64_t pos, uint64_t n)
{
	struct tfs_query *q = r->q;
	const struct tfs_out_field *fld = &q->fields[fi];
	const struct sp_frag *sf = &r->frags[r->tiles[j->tile].frag];
	struct tfs_out_column *oc = &q->cols[fi];
	const struct tfs_tile *t = NULL;
	const uint8_t *base = NULL;
	uint64_t size = fld->cell_size;
	enum tfs_err e = TFS_E_OK;

	if (fld->var)
		return TFS_E_INTERNAL;
	if (fld->is_dim && !sf->zipped) {
		t = &j->coord[fld->index];
		base = t->fixed;
	} else if (!fld->is_dim && sf->field_load[fi] >= 0) {
		t = &j->load[sf->field_load[fi]];
		base = t->fixed;
	}
	if (!base)
		return TFS_E_INTERNAL;
	e = tfs_buf_append(&oc->data, base + pos * size, (size_t)(n * size));
	if (!e && fld->nullable) {
		if (t->validity) {
			e = tfs_buf_append(&oc->validity, t->validity + pos,
					   (size_t)n);
		} else {
			for (uint64_t i = 0; i < n && !e; i++)
				e = tfs_buf_append_u8(&oc->validity, 1);
		}
	}
	return e;
}

/* Whether field fi of a whole tile can go in runs (emit_run). */
static bool runs_fit(const struct sp_reader *r, const struct st_job *j,
		     size_t fi)
{
	const struct tfs_out_field *fld = &r->q->fields[fi];
	const struct sp_frag *sf = &r->frags[r->tiles[j->tile].frag];

	if (fld->var || !r->tiles[j->tile].inside)
		return false;
	return fld->is_dim ? !sf->zipped : sf->field_load[fi] >= 0;
}

/* Field fi of the cell at position c of the job's tile, one value. */
static enum tfs_err emit_one(struct sp_reader *r, struct st_job *j,
			     size_t fi, uint64_t c)
{
	struct tfs_query *q = r->q;
	const struct tfs_out_field *fld = &q->fields[fi];
	const struct sp_frag *sf = &r->frags[r->tiles[j->tile].frag];
	const uint8_t *p;
	uint64_t len;
	uint8_t valid = 1;

	if (fld->is_dim) {
		p = coord_at(r, sf, j, fld->index, c, &len);
	} else if (sf->field_load[fi] >= 0) {
		int32_t l = sf->field_load[fi];
		const struct tfs_tile *t = &j->load[l];

		if (sf->load_desc[l].var) {
			p = byte_at(t->var, t->offsets[c]);
			len = t->offsets[c + 1] - t->offsets[c];
		} else {
			len = sf->load_desc[l].cell_size;
			p = t->fixed + c * len;
		}
		valid = t->validity ? t->validity[c] : 1;
	} else {
		p = r->fills[fi] ? r->fills[fi] : fld->fill;
		len = fld->var ? fld->fill_size : fld->cell_size;
		valid = fld->fill_valid;
	}
	return tfs_out_append(q, fi, p, len, valid);
}

/* Hands out up to room cells of the job into the batch. */
static enum tfs_err job_emit(struct sp_reader *r, struct st_job *j,
			     uint64_t room)
{
	struct tfs_query *q = r->q;
	uint64_t n = j->n - j->next < room ? j->n - j->next : room;
	enum tfs_err e = TFS_E_OK;

	for (size_t fi = 0; fi < q->field_num && !e; fi++) {
		if (runs_fit(r, j, fi)) {
			e = emit_run(r, j, fi, j->next, n);
			continue;
		}
		for (uint64_t i = j->next; i < j->next + n && !e; i++)
			e = emit_one(r, j, fi, j->keep ? j->keep[i] : i);
	}
	if (e)
		return e;
	j->next += n;
	q->batch_cell_num += n;
	return TFS_E_OK;
}

static void job_queue(struct sp_reader *r, struct st_job *j)
{
	struct tfs_pool *pool = r->q->array->pool;

	j->r = r;
	j->tile = r->stored->next_tile++;
	j->queued = true;
	j->err = TFS_E_OK;
	tfs_job_init(&j->job, job_run, j);
	if (pool)
		tfs_pool_submit(pool, &j->job);
	r->stored->queued++;
}

static void job_wait(struct sp_reader *r, struct st_job *j)
{
	struct tfs_pool *pool = r->q->array->pool;

	if (pool)
		tfs_job_wait(pool, &j->job);
	else
		j->job.fn(j->job.arg);
}

static void queue_ahead(struct sp_reader *r)
{
	struct sp_stored *s = r->stored;

	while (s->queued < AHEAD && s->next_tile < s->end_tile)
		job_queue(r, &s->jobs[(s->cur + s->queued) % AHEAD]);
}

/* Where the next cell comes from (tfs_query_stored_pos). */
static void note_pos(struct sp_reader *r)
{
	struct sp_stored *s = r->stored;
	struct tfs_query *q = r->q;

	q->stored_pos_ok = true;
	if (!s->queued) {
		q->stored_pos[0] = s->next_tile;
		q->stored_pos[1] = s->skip_pending ? s->skip : 0;
		return;
	}
	q->stored_pos[0] = s->jobs[s->cur].tile;
	if (s->jobs[s->cur].queued)
		q->stored_pos[1] = s->skip_pending ? s->skip : 0;
	else
		q->stored_pos[1] = s->jobs[s->cur].next;
}

enum tfs_err tfs__sp_stored_open(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;
	struct sp_stored *s;

	r->stored = s = tfs_callocn(1, sizeof(*r->stored));
	if (!s)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	s->end_tile = r->tile_num;
	if (q->stored_to[0] || q->stored_to[1]) {
		if (q->stored_to[0] > r->tile_num ||
		    (q->stored_to[0] == r->tile_num && q->stored_to[1]))
			return tfs_fail(d, TFS_E_INVALID,
					"stored position %" PRIu64 " past the "
					"query's %" PRIu32 " tiles",
					q->stored_to[0], r->tile_num);
		s->end_tile = (uint32_t)q->stored_to[0] +
			      (q->stored_to[1] ? 1 : 0);
		s->cut = q->stored_to[1] != 0;
		s->cut_tile = (uint32_t)q->stored_to[0];
		s->cut_cells = q->stored_to[1];
	}
	if (q->stored_from[0] > s->end_tile ||
	    (q->stored_from[0] == s->end_tile && q->stored_from[1]))
		return tfs_fail(d, TFS_E_INVALID,
				"stored position %" PRIu64 " past the end",
				q->stored_from[0]);
	s->next_tile = (uint32_t)q->stored_from[0];
	s->skip = q->stored_from[1];
	s->skip_pending = s->skip != 0;
	note_pos(r);
	return TFS_E_OK;
}

/* A tile just decoded: the cells of it before stored_from and from
 * stored_to on are not handed out. */
static void job_bound(struct sp_stored *s, struct st_job *j)
{
	if (s->cut && j->tile == s->cut_tile && j->n > s->cut_cells)
		j->n = s->cut_cells;
	if (s->skip_pending) {
		j->next = s->skip < j->n ? s->skip : j->n;
		s->skip_pending = false;
	}
}

enum tfs_err tfs__sp_stored_next(struct sp_reader *r, struct tfs_diag *d)
{
	struct sp_stored *s = r->stored;
	struct tfs_query *q = r->q;
	uint64_t run;
	uint32_t loads;
	enum tfs_err e;

	while (q->batch_cell_num < q->batch_cells) {
		struct st_job *j;

		queue_ahead(r);
		if (!s->queued)
			break;
		j = &s->jobs[s->cur];
		if (j->queued) {
			job_wait(r, j);
			j->queued = false;
			if (j->err)
				return tfs_fail(d, j->err, "%s",
						tfs_diag_msg(&j->diag));
			job_bound(s, j);
		}
		run = q->batch_cells - q->batch_cell_num;
		if (run > j->n - j->next)
			run = j->n - j->next;
		if ((e = tfs_out_reserve(q, q->batch_cell_num + run, d)))
			return e;
		e = job_emit(r, j, q->batch_cells - q->batch_cell_num);
		if (e)
			return tfs_fail(d, e, "sparse read: output batch: %s",
					tfs_strerror(e));
		if (j->next < j->n)
			continue;
		loads = r->frags[r->tiles[j->tile].frag].load_num;
		job_clear(j, r->dim_num, loads);
		s->cur = (s->cur + 1) % AHEAD;
		s->queued--;
	}
	note_pos(r);
	return TFS_E_OK;
}

void tfs__sp_stored_free(struct sp_reader *r)
{
	struct sp_stored *s = r->stored;

	if (!s)
		return;
	for (uint32_t i = 0; i < AHEAD; i++) {
		struct st_job *j = &s->jobs[i];

		/* Without a pool a queued job has not run: nothing to wait
		 * for or to drop but its slot. */
		if (j->queued && r->q->array->pool)
			tfs_job_wait(r->q->array->pool, &j->job);
		if (j->r)
			job_clear(j, r->dim_num,
				  r->frags[r->tiles[j->tile].frag].load_num);
	}
	tfs_free(s);
	r->stored = NULL;
}
