/* From a stream of cells to the files of one fragment: cuts tiles (sparse:
 * `capacity` cells in global order; dense: the space tiles of the box in
 * tile order, padded, format/write.md §4–5), encodes them on the pool
 * through each field's filters (tile.md §2–4), appends them to the data
 * files in tile order, and keeps what the fragment metadata needs per slot
 * (fragment.md §6): tile offsets, var sizes, mins, maxes, sums, null
 * counts, MBRs. tfs__tw_finish writes __fragment_metadata.tdb: the
 * generic tiles in TileDB's order, the footer and its length. */
#include "tile_writer_internal.h"

#include "tfs_mem.h"

/* ---- Setup --------------------------------------------------------------- */

static void slotacc_init(struct slotacc *a)
{
	tfs_buf_init(&a->offsets, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->var_offsets, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->var_sizes, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->validity_offsets, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->min_fixed, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->min_var, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->max_fixed, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->max_var, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->sums, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->null_counts, TFS_BUF_NO_MAX);
	a->file_size = a->var_file_size = a->validity_file_size = 0;
}

static void slotacc_release(struct slotacc *a)
{
	tfs_buf_release(&a->offsets);
	tfs_buf_release(&a->var_offsets);
	tfs_buf_release(&a->var_sizes);
	tfs_buf_release(&a->validity_offsets);
	tfs_buf_release(&a->min_fixed);
	tfs_buf_release(&a->min_var);
	tfs_buf_release(&a->max_fixed);
	tfs_buf_release(&a->max_var);
	tfs_buf_release(&a->sums);
	tfs_buf_release(&a->null_counts);
}

static void fout_init(struct fout *o)
{
	tfs_buf_init(&o->fixed, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->var, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->valid, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->min, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->max, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->lo, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->hi, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->first, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->last, TFS_BUF_NO_MAX);
}

static void fout_release(struct fout *o)
{
	tfs_buf_release(&o->fixed);
	tfs_buf_release(&o->var);
	tfs_buf_release(&o->valid);
	tfs_buf_release(&o->min);
	tfs_buf_release(&o->max);
	tfs_buf_release(&o->lo);
	tfs_buf_release(&o->hi);
	tfs_buf_release(&o->first);
	tfs_buf_release(&o->last);
}

/* Data file name of a field (fragment.md §2). kind: 0 fixed/offsets,
 * 1 var values, 2 validity. */
static char *file_path(const struct tfs__tw *tw, const struct tfs__field *fd,
		       int kind)
{
	static const char *const sfx[] = { ".tdb", "_var.tdb", "_validity.tdb" };
	char base[600];
	size_t at = 0;

	if (fd->is_timestamps) {
		snprintf(base, sizeof(base), "t%s", sfx[kind]);
	} else if (tw->o.version >= 9) {
		snprintf(base, sizeof(base), "%c%" PRIu32 "%s",
			 fd->is_dim ? 'd' : 'a', fd->index, sfx[kind]);
	} else {
		/* Version 8 escapes names (the table of fragment.md §2). */
		static const char from[] = "!#$%&'()*+,/:;=?@[]\"<>\\|";
		static const char *const to[] = {
			"%21", "%23", "%24", "%25", "%26", "%27", "%28", "%29",
			"%2A", "%2B", "%2C", "%2F", "%3A", "%3B", "%3D", "%3F",
			"%40", "%5B", "%5D", "%22", "%20", "%2D", "%30", "%3C",
		};

		for (const char *p = fd->name; *p && at + 8 < sizeof(base); p++) {
			const char *hit = tw->o.version == 8 ? strchr(from, *p)
							     : NULL;

			if (hit && *p) {
				memcpy(base + at, to[hit - from], 3);
				at += 3;
			} else {
				base[at++] = *p;
			}
		}
		base[at] = '\0';
		if (at + strlen(sfx[kind]) + 1 > sizeof(base))
			return NULL;
		memcpy(base + at, sfx[kind], strlen(sfx[kind]) + 1);
	}
	return tfs_path_join(tw->o.dir, base);
}

/* Bytes a job's buffers hold (they keep their memory from tile to tile). */
static uint64_t job_bytes(const struct tfs__tw *t, const struct job *j)
{
	uint64_t n = tfs__cells_bytes(&j->cells) + j->real.cap;

	for (uint32_t f = 0; j->out && f < t->o.field_num; f++) {
		const struct fout *o = &j->out[f];

		n += o->fixed.cap + o->var.cap + o->valid.cap;
	}
	return n;
}

/* Counts what j's buffers hold now in the memory accountant (they are
 * allocated already: counted whether they fit or not; the writer keeps
 * fewer tiles in flight when they do not, tfs__tw_start_tile). */
static void job_account(const struct tfs__tw *t, struct job *j)
{
	uint64_t now = job_bytes(t, j);

	if (now > j->charged)
		tfs_mem_charge_held(tfs_mem_global(), now - j->charged);
	else
		tfs_mem_uncharge(tfs_mem_global(), j->charged - now);
	j->charged = now;
}

void tfs__tw_free(struct tfs__tw *t)
{
	if (!t)
		return;
	/* Tiles still in flight (after a failure) finish first. */
	for (unsigned i = 0; t->ring && i < t->inflight; i++)
		tfs_job_wait(t->o.pool,
			     &t->ring[(t->head + i) % t->ring_cap].job);
	for (unsigned r = 0; t->ring && r < t->ring_cap; r++) {
		struct job *j = &t->ring[r];

		tfs__cells_release(&j->cells);
		tfs_buf_release(&j->real);
		for (uint32_t f = 0; j->out && f < t->o.field_num; f++)
			fout_release(&j->out[f]);
		tfs_free(j->out);
		tfs_mem_uncharge(tfs_mem_global(), j->charged);
	}
	tfs_free(t->ring);
	for (uint32_t s = 0; t->slots && s < t->slot_num; s++)
		slotacc_release(&t->slots[s]);
	tfs_free(t->slots);
	for (uint32_t k = 0; k < t->D; k++) {
		if (t->dimb)
			slotacc_release(&t->dimb[k]);
		if (t->gob)
			slotacc_release(&t->gob[k]);
	}
	tfs_free(t->dimb);
	tfs_free(t->gob);
	for (uint32_t i = 0; t->paths && i < 3 * t->o.field_num; i++)
		tfs_free(t->paths[i]);
	tfs_free(t->paths);
	tfs_buf_release(&t->tilebuf);
	tfs_free(t);
}

/* The ring's jobs with their buffers (empty yet); false when out of
 * memory. */
static bool init_ring(struct tfs__tw *t)
{
	for (unsigned r = 0; r < t->ring_cap; r++) {
		struct job *j = &t->ring[r];

		tfs_job_init(&j->job, tfs__tw_job_run, j);
		j->tw = t;
		tfs_buf_init(&j->real, TFS_BUF_NO_MAX);
		if (tfs__cells_init(&j->cells, t->o.field_num))
			return false;
		j->out = tfs_callocn(t->o.field_num, sizeof(*j->out));
		if (!j->out)
			return false;
		for (uint32_t f = 0; f < t->o.field_num; f++)
			fout_init(&j->out[f]);
	}
	return true;
}

/* The dense writer's tile grid over the box written; fails when its tiles
 * are too large to write. */
static enum tfs_err init_dense_box(struct tfs__tw *t, struct tfs_diag *d)
{
	const struct tfs_schema *s = t->o.s;
	uint64_t cpt = tfs_schema_tile_cells(s);

	if (cpt == 0 || cpt > ((uint64_t)1 << 40))
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"dense tiles of this schema are too "
				"large to write");
	t->cpt = 1;
	t->tiles_total = 1;
	for (uint32_t k = 0; k < t->D; k++) {
		const struct tfs_dim *dm = &s->dims[k];

		t->ext[k] = tfs_value_as_u64(dm->type, dm->extent);
		t->boxlo[k] = tfs__dim_off(dm, t->o.box[k].lo);
		t->boxhi[k] = tfs__dim_off(dm, t->o.box[k].hi);
		t->tlo[k] = t->boxlo[k] / t->ext[k];
		t->ntiles[k] = t->boxhi[k] / t->ext[k] - t->tlo[k] + 1;
		t->cpt *= t->ext[k];
		t->tiles_total *= t->ntiles[k];
	}
	return TFS_E_OK;
}

enum tfs_err tfs__tw_new(const struct tfs__tw_opts *o, struct tfs__tw **out,
			 struct tfs_diag *d)
{
	struct tfs__tw *t = tfs_callocn(1, sizeof(*t));
	const struct tfs_schema *s = o->s;
	enum tfs_err e = TFS_E_NOMEM;

	*out = NULL;
	if (!t)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	t->o = *o;
	t->A = s->attr_num;
	t->D = s->dim_num;
	t->slot_num = tfs_slot_count(o->version, t->A, t->D, o->timestamps,
				     false);
	t->capacity = s->capacity ? s->capacity : 10000;
	tfs_buf_init(&t->tilebuf, TFS_BUF_NO_MAX);
	t->slots = tfs_callocn(t->slot_num, sizeof(*t->slots));
	t->dimb = tfs_callocn(t->D, sizeof(*t->dimb));
	t->gob = tfs_callocn(t->D, sizeof(*t->gob));
	t->ring_cap = o->jobs ? o->jobs : 1;
	t->ring = tfs_callocn(t->ring_cap, sizeof(*t->ring));
	t->paths = tfs_callocn(3 * (size_t)o->field_num, sizeof(char *));
	if (!t->slots || !t->dimb || !t->gob || !t->ring || !t->paths)
		goto out_fail;
	for (uint32_t i = 0; i < t->slot_num; i++)
		slotacc_init(&t->slots[i]);
	for (uint32_t k = 0; k < t->D; k++) {
		slotacc_init(&t->dimb[k]);
		slotacc_init(&t->gob[k]);
	}
	if (!init_ring(t))
		goto out_fail;
	for (uint32_t f = 0; f < o->field_num; f++)
		for (int k = 0; k < 3; k++)
			if (!(t->paths[3 * f + (uint32_t)k] =
				      file_path(t, &o->fields[f], k)))
				goto out_fail;
	if (o->dense && (e = init_dense_box(t, d))) {
		tfs__tw_free(t);
		return e;
	}
	*out = t;
	return TFS_E_OK;

out_fail:
	tfs__tw_free(t);
	return tfs_fail(d, e, "out of memory");
}

/* ---- Collecting the results of a tile ------------------------------------ */

static enum tfs_err put_minmax(struct tfs_buf *fixed, struct tfs_buf *var,
			       bool is_var, const struct tfs_buf *v)
{
	enum tfs_err e;

	if (is_var) {
		if ((e = tfs_buf_append_u64(fixed, var->len)))
			return e;
		return tfs_buf_append(var, v->data, v->len);
	}
	return tfs_buf_append(fixed, v->data, v->len);
}

static enum tfs_err file_append(struct tfs__tw *t, const char *path,
				const struct tfs_buf *b, struct tfs_diag *d)
{
	t->bytes += b->len;
	return tfs_vfs_append(t->o.vfs, path, b->data, b->len, d);
}

/* Appends one tile's entries to a field's per-tile lists: where its
 * tile starts in each file (0 where it has none) and its values' size. */
static enum tfs_err put_tile_offsets(struct slotacc *a,
				     const struct tfs__field *fd,
				     const struct fout *o, bool written,
				     struct tfs_diag *d)
{
	enum tfs_err e;

	e = tfs_buf_append_u64(&a->offsets, written ? a->file_size : 0);
	if (!e)
		e = tfs_buf_append_u64(&a->var_offsets,
				       fd->var ? a->var_file_size : 0);
	if (!e)
		e = tfs_buf_append_u64(&a->var_sizes, fd->var ? o->var_size : 0);
	if (!e)
		e = tfs_buf_append_u64(&a->validity_offsets,
				       fd->nullable ? a->validity_file_size : 0);
	if (e)
		return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}

/* Appends field f's filtered tile to its files. */
static enum tfs_err put_tile_files(struct tfs__tw *t, uint32_t f,
				   struct slotacc *a, const struct fout *o,
				   bool written, struct tfs_diag *d)
{
	const struct tfs__field *fd = &t->o.fields[f];
	enum tfs_err e;

	if (written) {
		if ((e = file_append(t, t->paths[3 * f], &o->fixed, d)))
			return e;
		a->file_size += o->fixed.len;
	}
	if (fd->var) {
		if ((e = file_append(t, t->paths[3 * f + 1], &o->var, d)))
			return e;
		a->var_file_size += o->var.len;
	}
	if (fd->nullable) {
		if ((e = file_append(t, t->paths[3 * f + 2], &o->valid, d)))
			return e;
		a->validity_file_size += o->valid.len;
	}
	return TFS_E_OK;
}

/* Appends one tile's statistics of a field: minimum and maximum, sum,
 * null count, and for a sparse dimension the tile's bounding box and its
 * first and last coordinates. */
static enum tfs_err put_tile_stats(struct tfs__tw *t,
				   const struct tfs__field *fd,
				   struct slotacc *a, const struct fout *o,
				   struct tfs_diag *d)
{
	enum tfs_err e;

	if (tfs__has_minmax(fd) &&
	    ((e = put_minmax(&a->min_fixed, &a->min_var, fd->var, &o->min)) ||
	     (e = put_minmax(&a->max_fixed, &a->max_var, fd->var, &o->max))))
		return tfs_fail(d, e, "out of memory");
	if (tfs__has_sum(fd, t->o.dense) &&
	    (e = tfs_buf_append(&a->sums, o->sum, 8)))
		return tfs_fail(d, e, "out of memory");
	if (fd->nullable &&
	    (e = tfs_buf_append_u64(&a->null_counts, o->nulls)))
		return tfs_fail(d, e, "out of memory");
	if (fd->is_dim && !t->o.dense) {
		struct slotacc *b = &t->dimb[fd->index];
		struct slotacc *g = &t->gob[fd->index];

		if ((e = put_minmax(&b->min_fixed, &b->min_var, fd->var,
				    &o->lo)) ||
		    (e = put_minmax(&b->max_fixed, &b->max_var, fd->var,
				    &o->hi)) ||
		    (e = put_minmax(&g->min_fixed, &g->min_var, fd->var,
				    &o->first)) ||
		    (e = put_minmax(&g->max_fixed, &g->max_var, fd->var,
				    &o->last)))
			return tfs_fail(d, e, "out of memory");
	}
	return TFS_E_OK;
}

enum tfs_err tfs__tw_drain_one(struct tfs__tw *t, struct tfs_diag *d)
{
	struct job *j = &t->ring[t->head];
	const struct tfs__field *fields = t->o.fields;
	enum tfs_err e;

	tfs_job_wait(t->o.pool, &j->job);
	job_account(t, j);
	t->head = (t->head + 1) % t->ring_cap;
	t->inflight--;
	if (j->err) {
		tfs_fail(d, j->err, "%s", tfs_diag_msg(&j->d));
		return j->err;
	}
	for (uint32_t f = 0; f < t->o.field_num; f++) {
		const struct tfs__field *fd = &fields[f];
		struct slotacc *a = &t->slots[fd->slot];
		const struct fout *o = &j->out[f];
		bool written = !(fd->is_dim && t->o.dense);

		if ((e = put_tile_offsets(a, fd, o, written, d)) ||
		    (e = put_tile_files(t, f, a, o, written, d)) ||
		    (e = put_tile_stats(t, fd, a, o, d)))
			return e;
	}
	{
		/* The __coords slot: no file, zeros in every per-tile list. */
		struct slotacc *a = &t->slots[t->A];

		if ((e = tfs_buf_append_u64(&a->offsets, 0)) ||
		    (e = tfs_buf_append_u64(&a->var_offsets, 0)) ||
		    (e = tfs_buf_append_u64(&a->var_sizes, 0)) ||
		    (e = tfs_buf_append_u64(&a->validity_offsets, 0)))
			return tfs_fail(d, e, "out of memory");
	}
	t->last_tile_cells = j->cells.cell_num;
	t->tile_num++;
	return TFS_E_OK;
}

/* The job to fill next, draining the oldest when all are in flight. */
enum tfs_err tfs__tw_start_tile(struct tfs__tw *t, struct tfs_diag *d)
{
	struct job *next;
	enum tfs_err e;

	if (t->inflight == t->ring_cap && (e = tfs__tw_drain_one(t, d)))
		return e;
	next = &t->ring[(t->head + t->inflight) % t->ring_cap];
	/* A job that has not held a tile yet: as many tiles in flight as
	 * the memory budget has room for (one at least), the size of the
	 * last one finished telling what a tile takes. */
	while (next->charged == 0 && t->inflight > 0) {
		uint64_t tile = t->ring[t->head].charged;

		if (!tfs_mem_try_charge(tfs_mem_global(), tile)) {
			tfs_mem_uncharge(tfs_mem_global(), tile);
			break;
		}
		if ((e = tfs__tw_drain_one(t, d)))
			return e;
	}
	t->cur = next;
	tfs__cells_clear(&t->cur->cells);
	t->cur->real.len = 0;
	tfs_diag_init(&t->cur->d);
	t->cur->err = TFS_E_OK;
	return TFS_E_OK;
}

void tfs__tw_submit_tile(struct tfs__tw *t)
{
	job_account(t, t->cur);
	tfs_job_init(&t->cur->job, tfs__tw_job_run, t->cur);
	tfs_pool_submit(t->o.pool, &t->cur->job);
	t->inflight++;
	t->cur = NULL;
}

/* Dense: a cell nobody wrote (tile.md §6): zeros, one zero element for var
 * fields, validity 0. */
static enum tfs_err pad_cell(struct tfs__tw *t)
{
	struct tfs__cells *c = &t->cur->cells;
	static const uint8_t zeros[8];
	enum tfs_err e;

	for (uint32_t f = 0; f < c->field_num; f++) {
		const struct tfs__field *fd = &t->o.fields[f];
		struct tfs__col *col = &c->cols[f];

		if (fd->var) {
			if ((e = tfs_buf_append_u64(&col->offs, col->data.len)) ||
			    (e = tfs_buf_append(&col->data, zeros,
						(size_t)fd->cell_size)))
				return e;
		} else if ((e = tfs_buf_resize(&col->data,
					       col->data.len + fd->cell_size))) {
			return e;
		}
		if (fd->nullable && (e = tfs_buf_append_u8(&col->valid, 0)))
			return e;
	}
	if ((e = tfs_buf_append_u64(&c->tags, 0)) ||
	    (e = tfs_buf_append_u8(&t->cur->real, 0)))
		return e;
	c->cell_num++;
	return TFS_E_OK;
}

static enum tfs_err dense_fill_to(struct tfs__tw *t, uint64_t pos,
				  struct tfs_diag *d)
{
	enum tfs_err e;

	while (t->cur->cells.cell_num < pos)
		if ((e = pad_cell(t)))
			return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}

enum tfs_err tfs__tw_dense_close_tile(struct tfs__tw *t, struct tfs_diag *d)
{
	enum tfs_err e;

	if ((e = dense_fill_to(t, t->cpt, d)))
		return e;
	tfs__tw_submit_tile(t);
	t->cur_rank++;
	return TFS_E_OK;
}

enum tfs_err tfs__tw_add(struct tfs__tw *t, const struct tfs__cells *c,
			 uint64_t i, struct tfs_diag *d)
{
	enum tfs_err e;

	if (!t->o.dense) {
		if (!t->cur && (e = tfs__tw_start_tile(t, d)))
			return e;
		if ((e = tfs__cells_copy(&t->cur->cells, t->o.fields, c, i)))
			return tfs_fail(d, e, "out of memory");
		if (t->cur->cells.cell_num == t->capacity)
			tfs__tw_submit_tile(t);
		t->cell_num++;
		return TFS_E_OK;
	}
	/* Dense: the cell's tile (rank in tile order over the tile box)
	 * and its position in cell order inside that tile. */
	uint64_t rank = 0, pos = 0;
	const struct tfs_schema *s = t->o.s;

	for (uint32_t n = 0; n < t->D; n++) {
		uint32_t k = s->tile_order == TFS_COL_MAJOR ? t->D - 1 - n : n;
		uint64_t off = tfs__dim_off(&s->dims[k],
				       c->cols[k].data.data +
					       i * t->o.fields[k].cell_size);

		if (off < t->boxlo[k] || off > t->boxhi[k])
			return tfs_fail(d, TFS_E_INTERNAL,
					"cell outside the dense box");
		rank = rank * t->ntiles[k] + (off / t->ext[k] - t->tlo[k]);
	}
	for (uint32_t n = 0; n < t->D; n++) {
		uint32_t k = s->cell_order == TFS_COL_MAJOR ? t->D - 1 - n : n;
		uint64_t off = tfs__dim_off(&s->dims[k],
				       c->cols[k].data.data +
					       i * t->o.fields[k].cell_size);

		pos = pos * t->ext[k] + off % t->ext[k];
	}
	if (t->cur && rank != t->cur_rank && (e = tfs__tw_dense_close_tile(t, d)))
		return e;
	while (rank > t->cur_rank) {
		if ((e = tfs__tw_start_tile(t, d)) || (e = tfs__tw_dense_close_tile(t, d)))
			return e;
	}
	if (rank < t->cur_rank)
		return tfs_fail(d, TFS_E_INTERNAL, "dense cells out of order");
	if (!t->cur && (e = tfs__tw_start_tile(t, d)))
		return e;
	if (pos < t->cur->cells.cell_num)
		return tfs_fail(d, TFS_E_INTERNAL, "dense cells out of order");
	if ((e = dense_fill_to(t, pos, d)))
		return e;
	if ((e = tfs__cells_copy(&t->cur->cells, t->o.fields, c, i)) ||
	    (e = tfs_buf_append_u8(&t->cur->real, 1)))
		return tfs_fail(d, e, "out of memory");
	t->cell_num++;
	return TFS_E_OK;
}

enum tfs_err tfs__tw_add_run(struct tfs__tw *t, const struct tfs__cells *c,
			     uint64_t i, uint64_t n, struct tfs_diag *d)
{
	struct tfs_buf *real;
	size_t at;
	enum tfs_err e;

	if (n == 0)
		return TFS_E_OK;
	if ((e = tfs__tw_add(t, c, i, d)) || n == 1)
		return e;
	if (!t->o.dense) {
		for (uint64_t k = i + 1; k < i + n; k++)
			if ((e = tfs__tw_add(t, c, k, d)))
				return e;
		return TFS_E_OK;
	}
	if (t->cur->cells.cell_num + (n - 1) > t->cpt)
		return tfs_fail(d, TFS_E_INTERNAL, "dense run past its tile");
	real = &t->cur->real;
	at = real->len;
	if ((e = tfs__cells_copy_run(&t->cur->cells, t->o.fields, c, i + 1,
				     n - 1)) ||
	    (e = tfs_buf_resize(real, at + (size_t)(n - 1))))
		return tfs_fail(d, e, "out of memory");
	memset(real->data + at, 1, (size_t)(n - 1));
	t->cell_num += n - 1;
	return TFS_E_OK;
}

/* Gathers cells idx[0..n) of src into the current tile, one column at a
 * time (the indexes are random for unordered input: a tight loop per
 * column keeps many loads in flight). */
static enum tfs_err gather(struct tfs__tw *t, const struct tfs__cells *src,
			   const uint64_t *idx, uint64_t n)
{
	struct tfs__cells *dst = &t->cur->cells;
	enum tfs_err e;

	for (uint32_t f = 0; f < src->field_num; f++) {
		const struct tfs__field *fd = &t->o.fields[f];
		const struct tfs__col *sc = &src->cols[f];
		struct tfs__col *dc = &dst->cols[f];

		if (fd->var) {
			uint64_t total = 0;
			uint8_t *op;

			for (uint64_t k = 0; k < n; k++) {
				uint64_t len;

				(void)tfs__var_cell(src, f, idx[k], &len);
				total += len;
			}
			if ((e = tfs_buf_reserve(&dc->data, (size_t)total)) ||
			    (e = tfs_buf_reserve(&dc->offs, (size_t)(8 * n))))
				return e;
			op = dc->offs.data + dc->offs.len;
			for (uint64_t k = 0; k < n; k++) {
				uint64_t len;
				const uint8_t *p = tfs__var_cell(src, f, idx[k], &len);

				tfs_put_u64(op + 8 * k, dc->data.len);
				/* Empty cells only: data may still be NULL. */
				if (len)
					memcpy(dc->data.data + dc->data.len, p, (size_t)len);
				dc->data.len += (size_t)len;
			}
			dc->offs.len += (size_t)(8 * n);
		} else {
			size_t cs = (size_t)fd->cell_size;
			uint8_t *out;

			if ((e = tfs_buf_reserve(&dc->data, cs * n)))
				return e;
			out = dc->data.data + dc->data.len;
			switch (cs) {
			case 4:
				for (uint64_t k = 0; k < n; k++)
					memcpy(out + 4 * k, sc->data.data + 4 * idx[k], 4);
				break;
			case 8:
				for (uint64_t k = 0; k < n; k++)
					memcpy(out + 8 * k, sc->data.data + 8 * idx[k], 8);
				break;
			default:
				for (uint64_t k = 0; k < n; k++)
					memcpy(out + cs * k, sc->data.data + cs * idx[k], cs);
				break;
			}
			dc->data.len += cs * n;
		}
		if (fd->nullable) {
			if ((e = tfs_buf_reserve(&dc->valid, (size_t)n)))
				return e;
			for (uint64_t k = 0; k < n; k++)
				dc->valid.data[dc->valid.len + k] = sc->valid.data[idx[k]];
			dc->valid.len += (size_t)n;
		}
	}
	if ((e = tfs_buf_reserve(&dst->tags, (size_t)(8 * n))))
		return e;
	for (uint64_t k = 0; k < n; k++)
		memcpy(dst->tags.data + dst->tags.len + 8 * k,
		       src->tags.data + 8 * idx[k], 8);
	dst->tags.len += (size_t)(8 * n);
	dst->cell_num += n;
	return TFS_E_OK;
}

enum tfs_err tfs__tw_add_many(struct tfs__tw *t, const struct tfs__cells *c,
			      const uint64_t *idx, uint64_t n,
			      struct tfs_diag *d)
{
	enum tfs_err e;

	if (t->o.dense) {
		for (uint64_t k = 0; k < n; k++)
			if ((e = tfs__tw_add(t, c, idx[k], d)))
				return e;
		return TFS_E_OK;
	}
	while (n) {
		uint64_t room, m;

		if (!t->cur && (e = tfs__tw_start_tile(t, d)))
			return e;
		room = t->capacity - t->cur->cells.cell_num;
		m = n < room ? n : room;
		if ((e = gather(t, c, idx, m)))
			return tfs_fail(d, e, "out of memory");
		t->cell_num += m;
		idx += m;
		n -= m;
		if (t->cur->cells.cell_num == t->capacity)
			tfs__tw_submit_tile(t);
	}
	return TFS_E_OK;
}
