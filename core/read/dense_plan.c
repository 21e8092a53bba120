/* Planning one batch of the dense reader: per space tile, the fragments
 * that survive pruning (newest covering fragment first, older ones only
 * where it does not cover) and the copy steps and tiles to decode. */
#include "dense_reader.h"

#include "tfs_mem.h"

/* Runs on the thread pool: one tile of one fragment into the batch. A
 * fixed-size tile whose decoding would take more than half the memory
 * budget, or whose charge is refused, is left to be read chunk by chunk
 * when the batch is copied (dense.c); others are decoded whole through
 * the tile cache. Var-size tiles and tiles stored as one chunk are not
 * chunkable: too big, they are refused as before. */
static void decode_job_run(void *arg)
{
	struct decode_job *j = arg;
	uint64_t budget = tfs_mem_budget(tfs_mem_global());
	struct tfs_tile_plan plan;

	tfs_diag_init(&j->diag);
	if (tfs__tile_plan(j->dir, j->f, j->slot, j->tile_no, &plan,
			   &j->diag)) {
		/* The whole read below says what is wrong. */
		tfs_diag_init(&j->diag);
		plan.chunkable = false;
	}
	/* Too big to decode whole: for the budget, or over the largest
	 * tile a read may decode whole (tfs_open_opts.max_tile_bytes). */
	if (plan.chunkable && ((budget && plan.need > budget / 2) ||
			       (j->dir->max_tile_bytes &&
				plan.largest > j->dir->max_tile_bytes))) {
		j->chunked = true;
		return;
	}
	j->err = tfs_tile_read_cached(j->dir, j->f, j->slot, j->tile_no,
				      &j->tile, &j->diag);
	if (j->err == TFS_E_NOMEM && plan.chunkable) {
		j->chunked = true;
		j->err = TFS_E_OK;
		tfs_diag_init(&j->diag);
	}
}

/* Tile number of space tile k inside fragment fb's tile box, in the
 * array's tile order. */
static uint64_t frag_tile_no(const struct dense_reader *r,
			     const struct frag_box *fb, const uint64_t *k)
{
	uint64_t t = 0;

	for (uint32_t d = 0; d < r->dim_num; d++)
		t += (k[d] - fb->tlo[d]) * fb->tstride[d];
	return t;
}

static bool frag_covers(const struct frag_box *fb, uint32_t dims,
			const uint64_t *lo, const uint64_t *hi)
{
	for (uint32_t d = 0; d < dims; d++)
		if (fb->lo[d] > lo[d] || fb->hi[d] < hi[d])
			return false;
	return true;
}

static enum tfs_err add_step(struct batch *b, uint32_t frag, const uint64_t *k,
			     uint32_t dims, size_t first_job)
{
	if (tfs_grow(&b->steps, &b->step_cap, b->step_num + 1,
		     sizeof(*b->steps)))
		return TFS_E_NOMEM;
	b->steps[b->step_num].frag = frag;
	memcpy(b->steps[b->step_num].k, k, dims * sizeof(*k));
	b->steps[b->step_num].first_job = first_job;
	b->step_num++;
	return TFS_E_OK;
}

/* True when one kept fragment holding every requested attribute covers
 * the whole part of space tile [slo, shi] that the batch reads, so no cell
 * of it keeps its fill value. */
static bool space_tile_covered(const struct dense_reader *r,
			       const struct tfs_query *q, const struct batch *b,
			       const bool *keep, const uint64_t *slo,
			       const uint64_t *shi)
{
	uint64_t lo[MAX_DIMS], hi[MAX_DIMS];

	for (uint32_t d = 0; d < r->dim_num; d++) {
		lo[d] = tfs__max_u64(slo[d], d ? r->sub_lo[d] : b->row_lo);
		hi[d] = tfs__min_u64(shi[d], d ? r->sub_hi[d] : b->row_hi);
	}
	for (size_t i = 0; i < r->frag_num; i++) {
		bool all_fields = true;

		if (!keep[i] || !frag_covers(&r->frags[i], r->dim_num, lo, hi))
			continue;
		for (size_t fi = 0; fi < q->field_num; fi++)
			if (!q->fields[fi].is_dim &&
			    r->frags[i].slot_of_field[fi] < 0)
				all_fields = false;
		if (all_fields)
			return true;
	}
	return false;
}

/* Whether fragment i is kept for space tile [slo, shi]: it meets the
 * tile, no newer fragment covers all of their overlap, and the overlap
 * touches the batch's part of the subarray. */
static inline bool frag_kept(const struct dense_reader *r,
			     const struct batch *b, size_t i,
			     const uint64_t *slo, const uint64_t *shi)
{
	const struct frag_box *fb = &r->frags[i];
	uint32_t dims = r->dim_num;
	uint64_t olo[MAX_DIMS], ohi[MAX_DIMS];
	bool hit = true, region = true;

	for (uint32_t d = 0; d < dims && hit; d++) {
		olo[d] = tfs__max_u64(fb->lo[d], slo[d]);
		ohi[d] = tfs__min_u64(fb->hi[d], shi[d]);
		hit = olo[d] <= ohi[d];
	}
	if (!hit)
		return false;
	for (size_t j = i + 1; j < r->frag_num; j++) {
		const struct frag_box *g = &r->frags[j];
		bool g_hit = true;

		for (uint32_t d = 0; d < dims && g_hit; d++)
			g_hit = g->lo[d] <= ohi[d] && g->hi[d] >= olo[d];
		if (g_hit && frag_covers(g, dims, olo, ohi))
			return false;
	}
	/* Must also touch the batch's part of the subarray. */
	for (uint32_t d = 0; d < dims && region; d++) {
		uint64_t lo = d ? r->sub_lo[d] : b->row_lo;
		uint64_t hi = d ? r->sub_hi[d] : b->row_hi;

		region = olo[d] <= hi && ohi[d] >= lo;
	}
	return region;
}

/* Lists the decodes of fragment i's tile of space tile k (one per field
 * it holds) and the copy step that uses them. */
static enum tfs_err add_frag_jobs(struct dense_reader *r, struct tfs_query *q,
				  struct batch *b, const uint64_t *k, size_t i,
				  struct decode_job **jobs, size_t *job_cap)
{
	const struct frag_box *fb = &r->frags[i];
	size_t first = b->job_num;

	for (size_t fi = 0; fi < q->field_num; fi++) {
		struct decode_job *j;

		if (q->fields[fi].is_dim || fb->slot_of_field[fi] < 0)
			continue;
		if (tfs_grow(jobs, job_cap, b->job_num + 1, sizeof(**jobs)))
			return TFS_E_NOMEM;
		j = &(*jobs)[b->job_num++];
		memset(j, 0, sizeof(*j));
		j->dir = q->dir;
		j->f = fb->f;
		j->slot = (uint32_t)fb->slot_of_field[fi];
		j->tile_no = frag_tile_no(r, fb, k);
	}
	return add_step(b, (uint32_t)i, k, r->dim_num, first);
}

/* Lists the fragments (after pruning) and tiles of space tile k within
 * the batch's rows. */
static enum tfs_err plan_space_tile(struct dense_reader *r, struct tfs_query *q,
				    struct batch *b, const uint64_t *k,
				    struct decode_job **jobs, size_t *job_cap)
{
	uint64_t slo[MAX_DIMS], shi[MAX_DIMS];
	bool *keep;
	enum tfs_err e = TFS_E_OK;

	for (uint32_t d = 0; d < r->dim_num; d++) {
		slo[d] = k[d] * r->ext[d];
		shi[d] = slo[d] + (r->ext[d] - 1);
	}
	keep = tfs_callocn(r->frag_num ? r->frag_num : 1, sizeof(*keep));
	if (!keep)
		return TFS_E_NOMEM;
	/* Newest first: drop f if a newer fragment covers all of f ∩ S. */
	for (size_t i = r->frag_num; i-- > 0;)
		keep[i] = frag_kept(r, b, i, slo, shi);
	if (!b->needs_fill && !space_tile_covered(r, q, b, keep, slo, shi))
		b->needs_fill = true;
	for (size_t i = 0; i < r->frag_num && !e; i++)
		if (keep[i])
			e = add_frag_jobs(r, q, b, k, i, jobs, job_cap);
	tfs_free(keep);
	return e;
}

/* Plans the batch starting at r->next_row and starts its decodes. */
enum tfs_err tfs__dense_plan_batch(struct dense_reader *r, struct tfs_query *q,
				   struct batch **out)
{
	uint32_t dims = r->dim_num;
	uint64_t k[MAX_DIMS], klo[MAX_DIMS], khi[MAX_DIMS];
	uint64_t row_cells = 1, tile_row0, tile_row1;
	size_t job_cap = 0;
	struct batch *b;
	enum tfs_err e = TFS_E_OK;

	*out = NULL;
	if (r->planned_all)
		return TFS_E_OK;
	b = tfs_callocn(1, sizeof(*b));
	if (!b)
		return TFS_E_NOMEM;
	tile_row0 = r->next_row / r->ext[0];
	tile_row1 = tile_row0 + (r->rows_per_batch_tiles - 1);
	if (tile_row1 < tile_row0 || tile_row1 > r->sub_hi[0] / r->ext[0])
		tile_row1 = r->sub_hi[0] / r->ext[0];
	b->row_lo = r->next_row;
	{
		uint64_t start = tile_row1 * r->ext[0],
			 end = start + (r->ext[0] - 1);

		b->row_hi = tfs__min_u64(r->sub_hi[0],
					 end < start ? UINT64_MAX : end);
	}
	if (r->rows_per_batch && b->row_hi - b->row_lo >= r->rows_per_batch)
		b->row_hi = b->row_lo + (r->rows_per_batch - 1);
	r->next_row = b->row_hi + 1;
	r->planned_all = b->row_hi == r->sub_hi[0];
	for (uint32_t d = 1; d < dims; d++)
		row_cells *= r->sub_hi[d] - r->sub_lo[d] + 1;
	b->cells = (b->row_hi - b->row_lo + 1) * row_cells;
	klo[0] = tile_row0;
	khi[0] = tile_row1;
	for (uint32_t d = 1; d < dims; d++) {
		klo[d] = r->sub_lo[d] / r->ext[d];
		khi[d] = r->sub_hi[d] / r->ext[d];
	}
	memcpy(k, klo, dims * sizeof(*k));
	for (;;) {
		uint32_t d;

		e = plan_space_tile(r, q, b, k, &b->jobs, &job_cap);
		if (e)
			break;
		for (d = dims; d-- > 0;) {
			if (k[d] < khi[d]) {
				k[d]++;
				break;
			}
			k[d] = klo[d];
		}
		if (d == UINT32_MAX)
			break;
	}
	if (e) {
		tfs_free(b->jobs);
		tfs_free(b->steps);
		tfs_free(b);
		return e;
	}
	for (size_t i = 0; i < b->job_num; i++) {
		tfs_job_init(&b->jobs[i].job, decode_job_run, &b->jobs[i]);
		tfs_pool_submit(q->array->pool, &b->jobs[i].job);
	}
	*out = b;
	return TFS_E_OK;
}
