/* The sparse reader (format/read.md §7–10): the cells of every visible
 * fragment of a sparse array that lie in the subarray, after the time
 * window, deduplication (newest wins unless the schema allows duplicates),
 * delete metadata and delete conditions, sorted by coordinates with the
 * first dimension slowest.
 *
 * Memory stays bounded whatever the selection: the subarray is cut along
 * dimension 0 into pieces whose candidate tiles (R-tree leaves that meet
 * the subarray) hold at most PIECE_CELLS cells and an eighth of the
 * memory budget (piece_cap), split at the leaves' lower bounds; where
 * more tiles than that all reach across one such bound (many overlapping
 * fragments), a fixed-size dimension 0 is cut inside the tiles at the key
 * where the estimated cells fit (piece_narrow). Each piece is counted in
 * the memory accountant before it is gathered. A tile reaching into
 * several pieces is decoded once per piece; only a few tiles are decoded
 * at a time, and only the cells that survive are kept, as compact
 * columns.
 * Per piece:
 *   1. decode the coordinates (and timestamps, delete times) of each
 *      candidate tile on the pool, keep the cells inside the subarray,
 *      the piece and the time window, as compact columns;
 *   2. sort by coordinates (then newest first) and deduplicate;
 *   3. drop the cells deleted by delete metadata;
 *   4. decode the attribute tiles that still hold cells, evaluate the
 *      delete conditions and copy the requested values;
 *   5. order duplicates by the JSON text of the cell (how the corpus
 *      orders equal coordinates) and emit in batches.
 * Sparse fragments of dense arrays are the dense reader's business. */
#include "sparse_reader.h"

/* ---- Step 5: duplicates by JSON text ----------------------------------- */

/* The query's field that is schema field k (dimensions first), or
 * field_num. A query of an array that allows duplicates holds every
 * field (tfs_query.out_num). */
static size_t field_of(const struct tfs_query *q, size_t k)
{
	bool is_dim = k < q->schema->dim_num;
	uint32_t index = (uint32_t)(is_dim ? k : k - q->schema->dim_num);

	for (size_t fi = 0; fi < q->field_num; fi++)
		if (q->fields[fi].is_dim == is_dim &&
		    q->fields[fi].index == index)
			return fi;
	return q->field_num;
}

/* The JSON text of cell c: its fields in schema order, whichever fields
 * the query hands out, so that every query orders duplicates alike. */
static enum tfs_err cell_text(const struct sp_reader *r, uint32_t c,
			      struct tfs_buf *b)
{
	const struct tfs_query *q = r->q;
	size_t all = (size_t)q->schema->dim_num + q->schema->attr_num;
	enum tfs_err e = TFS_E_OK;

	for (size_t k = 0; k < all && !e; k++) {
		size_t fi = field_of(q, k);
		const struct tfs_out_field *f;
		const uint8_t *p;
		uint64_t len;
		uint8_t valid = 1;

		if (fi == q->field_num)
			continue;
		f = &q->fields[fi];

		if (f->is_dim)
			p = cells_coord(&r->cells, &r->dims[f->index], f->index,
					c, &len);
		else
			p = col_value(&r->cols[fi], f, r->row[c], &len, &valid);
		e = tfs__sp_json_value(b, f, p, len, valid);
		if (!e)
			e = tfs_buf_append_u8(b, k + 1 < all ? ',' : '}');
	}
	return e;
}

struct text_ctx {
	const uint8_t *text;
	const uint64_t *off; /* n + 1 */
};

static int text_cmp(const void *ctx, uint32_t a, uint32_t b)
{
	const struct text_ctx *t = ctx;

	return tfs_bytes_cmp(t->text + t->off[a], (size_t)(t->off[a + 1] - t->off[a]),
			     t->text + t->off[b], (size_t)(t->off[b + 1] - t->off[b]));
}

/* Sorts order[from, to) (equal coordinates) by the cells' JSON text. */
static enum tfs_err sort_run(struct sp_reader *r, uint32_t from, uint32_t to,
			     struct tfs_diag *d)
{
	uint32_t n = to - from;
	struct tfs_buf text;
	uint64_t *off = tfs_mallocn((size_t)n + 1, sizeof(*off));
	uint32_t *idx = tfs_mallocn(n, sizeof(*idx));
	uint32_t *tmp = tfs_mallocn(n, sizeof(*tmp));
	struct text_ctx ctx;
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&text, PIECE_BYTES_MAX);
	if (!off || !idx || !tmp) {
		e = TFS_E_NOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n && !e; i++) {
		off[i] = text.len;
		idx[i] = i;
		e = cell_text(r, r->order[from + i], &text);
	}
	off[n] = text.len;
	ctx.text = text.data;
	ctx.off = off;
	if (!e)
		e = tfs__sp_sort_index(idx, n, text_cmp, &ctx);
	if (!e) {
		for (uint32_t i = 0; i < n; i++)
			tmp[i] = r->order[from + idx[i]];
		memcpy(r->order + from, tmp, n * sizeof(*tmp));
	}
out:
	tfs_buf_release(&text);
	tfs_free(off);
	tfs_free(idx);
	tfs_free(tmp);
	return e ? tfs_fail(d, e, "out of memory") : TFS_E_OK;
}

static enum tfs_err sort_duplicates(struct sp_reader *r, struct tfs_diag *d)
{
	uint32_t i = 0;

	while (i < r->order_num) {
		uint32_t j = i + 1;

		while (j < r->order_num &&
		       tfs__sp_coords_cmp(r, r->order[i], r->order[j]) == 0)
			j++;
		if (j - i > 1) {
			enum tfs_err e = sort_run(r, i, j, d);

			if (e)
				return e;
		}
		i = j;
	}
	return TFS_E_OK;
}

/* ---- Pieces ------------------------------------------------------------ */

static void piece_release(struct sp_reader *r)
{
	cells_release(&r->cells, r->dim_num);
	cols_free(r->cols, r->q->field_num);
	r->cols = NULL;
	tfs_free(r->row);
	tfs_free(r->order);
	tfs_free(r->ptiles);
	r->row = NULL;
	r->order = NULL;
	r->ptiles = NULL;
	r->order_num = r->pos = r->ptile_num = 0;
	tfs_mem_uncharge(tfs_mem_global(), r->piece_charged);
	r->piece_charged = 0;
}

/* What one cell of a piece costs at most while it is built: its keys and
 * coordinates, tile and position, timestamps and flags, order and row,
 * its values, and the copies of merging and growing. */
static uint64_t piece_cell_bytes(const struct sp_reader *r)
{
	const struct tfs_query *q = r->q;
	uint64_t n = 8 * (uint64_t)r->dim_num + 4 + 4 + 8 + 1 + 4 + 4;

	for (uint32_t k = 0; k < r->dim_num; k++)
		n += r->dims[k].var ? 24 : 8;
	for (size_t fi = 0; fi < q->field_num; fi++)
		n += q->fields[fi].var ? 24 : q->fields[fi].cell_size + 1;
	return 2 * n;
}

/* The cells a piece may gather: PIECE_CELLS (or the reader's cap), and
 * within PIECE_SHARE of the memory budget, so that parallel readers, the
 * parts of a file read ahead and the counting pass each hold a small
 * share of it; and within a quarter of what is free: when parallel
 * readers' pieces fill the budget, the tiles decoded for them find no
 * room and wait for each release (hundreds of thousands of waits a
 * minute), so a busy budget gets smaller pieces. */
static uint64_t piece_cap(const struct sp_reader *r)
{
	struct tfs_mem_stats ms;
	uint64_t cap = r->piece_cap, fit, free_bytes;

	tfs_mem_get_stats(tfs_mem_global(), &ms);
	if (!ms.budget)
		return cap;
	free_bytes = ms.used < ms.budget ? ms.budget - ms.used : 0;
	fit = ms.budget / PIECE_SHARE;
	if (fit > free_bytes / 4)
		fit = free_bytes / 4;
	fit /= piece_cell_bytes(r);
	if (fit < PIECE_CELLS_MIN)
		fit = PIECE_CELLS_MIN;
	return fit < cap ? fit : cap;
}

/* Counts the piece's cells (its estimate, r->p_cells) before they are
 * gathered, waiting for room like a tile: parallel readers of big pieces
 * take turns instead of going over the budget. A piece larger than half
 * of the budget (one that could not be cut smaller: many cells at one
 * coordinate, or string coordinates) counts that half, and what it
 * gathers past its charge is counted once gathered (piece_settle). */
static enum tfs_err piece_charge(struct sp_reader *r, struct tfs_diag *d)
{
	struct tfs_mem *m = tfs_mem_global();
	uint64_t cells = r->p_cells, n, budget = tfs_mem_budget(m);
	enum tfs_err e;

	n = cells > UINT64_MAX / 1024 ? UINT64_MAX : cells * piece_cell_bytes(r);
	if (budget && n > budget / 2)
		n = budget / 2;
	e = tfs_mem_charge_for(m, n, d, "a piece of %" PRIu64 " cells", cells);
	if (e)
		return e;
	r->piece_charged = n;
	return TFS_E_OK;
}

/* Counts what the piece gathered past its charge (an estimate that its
 * cells, bunched where the estimate spread them evenly, outgrew). */
static void piece_settle(struct sp_reader *r)
{
	uint64_t n = r->cells.n * piece_cell_bytes(r);

	if (n <= r->piece_charged)
		return;
	tfs_mem_charge_held(tfs_mem_global(), n - r->piece_charged);
	r->piece_charged = n;
}

/* The cells of candidate tiles estimated to lie in [lo, x) along
 * dimension 0 (fixed-size, in key order), each tile's cells spread evenly
 * over its MBR. */
static double piece_estimate(const struct sp_reader *r, uint64_t lo,
			     uint64_t x)
{
	double sum = 0;

	for (uint32_t k = r->tile_first; k < r->tile_num; k++) {
		const struct sp_tile *t = &r->tiles[k];
		uint64_t a = t->b.key.lo > lo ? t->b.key.lo : lo,
			 b = t->b.key.hi;

		if (t->b.key.lo >= x)
			break;
		if (b < lo)
			continue;
		if (b > x - 1)
			b = x - 1;
		sum += (double)t->cells * ((double)(b - a) + 1) /
		       ((double)(t->b.key.hi - t->b.key.lo) + 1);
	}
	return sum;
}

/* Cuts the planned piece inside its tiles when its candidate tiles hold
 * more than cap cells (tiles of many fragments overlapping along
 * dimension 0): the upper bound moves down to the largest key whose
 * estimated cells stay within cap, one key at least. Only for fixed-size
 * dimension 0, whose keys can be cut anywhere; r->p_cells: the cells the
 * piece is estimated to gather. */
static void piece_narrow(struct sp_reader *r, uint64_t whole, uint64_t cap)
{
	uint64_t lo = UINT64_MAX, hi = 0, good, bad;

	r->p_cells = whole;
	if (whole <= cap || r->dims[0].var)
		return;
	for (uint32_t k = r->tile_first; k < r->tile_num; k++) {
		const struct sp_tile *t = &r->tiles[k];

		if (r->have_lower && t->b.key.hi < r->lower.key)
			continue;
		if (r->p_has_hi && t->b.key.lo >= r->p_hi.key)
			break;
		if (t->b.key.lo < lo)
			lo = t->b.key.lo;
		if (t->b.key.hi > hi)
			hi = t->b.key.hi;
	}
	if (r->have_lower && r->lower.key > lo)
		lo = r->lower.key;
	if (r->p_has_hi && r->p_hi.key - 1 < hi)
		hi = r->p_hi.key - 1;
	if (lo >= hi || lo == UINT64_MAX)
		return;
	/* The largest x in (lo, hi] with the estimate of [lo, x) within cap:
	 * good stays within it, bad does not. */
	good = lo + 1;
	bad = hi + 1 > hi ? hi + 1 : hi;
	if (piece_estimate(r, lo, bad) <= (double)cap)
		return;
	while (bad - good > 1) {
		uint64_t mid = good + (bad - good) / 2;

		if (piece_estimate(r, lo, mid) <= (double)cap)
			good = mid;
		else
			bad = mid;
	}
	r->p_has_hi = true;
	r->p_hi = (struct sp_val){.key = good, .len = r->dims[0].size};
	r->p_cells = (uint64_t)piece_estimate(r, lo, good) + 1;
}

/* Chooses the next piece [lower, upper) along dimension 0: the largest
 * whose candidate tiles hold at most piece_cap cells, cut at a tile's
 * lower bound; when even the smallest cut holds more, the smallest. */
static void piece_plan(struct sp_reader *r)
{
	const struct sp_dim *dm = &r->dims[0];
	struct sp_val prev = {0};
	bool have_prev = false;
	uint64_t acc = 0, cap = piece_cap(r), best_acc = 0, first_acc = 0;
	int64_t best = -1, first = -1;
	bool over = false;

	r->p_has_lo = r->have_lower;
	r->p_lo = r->lower;
	for (uint32_t k = r->tile_first; k < r->tile_num; k++) {
		const struct sp_tile *t = &r->tiles[k];
		struct sp_val lo = tile_lo(dm, t);

		if (r->have_lower && tile_hi_cmp(dm, t, &r->lower) < 0)
			continue;
		if ((!r->have_lower || val_cmp(dm, &lo, &r->lower) > 0) &&
		    (!have_prev || val_cmp(dm, &lo, &prev) != 0)) {
			prev = lo;
			have_prev = true;
			if (acc > 0 && acc <= cap) {
				best = k;
				best_acc = acc;
			} else if (acc > cap) {
				if (best < 0) {
					first = k;
					first_acc = acc;
				}
				over = true;
				break;
			}
		}
		acc = t->cells > UINT64_MAX - acc ? UINT64_MAX : acc + t->cells;
	}
	if (!over && acc <= cap) {
		best = first = -1;
		best_acc = acc;
	}
	if (best < 0 && first >= 0) {
		best = first;
		best_acc = first_acc;
	} else if (best < 0) {
		best_acc = acc;
	}
	r->p_has_hi = best >= 0;
	if (r->p_has_hi)
		r->p_hi = tile_lo(dm, &r->tiles[best]);
	piece_narrow(r, best_acc, cap);
}

static enum tfs_err piece_tiles(struct sp_reader *r, struct tfs_diag *d)
{
	const struct sp_dim *dm = &r->dims[0];

	r->ptiles = tfs_mallocn(r->tile_num ? r->tile_num : 1,
				sizeof(*r->ptiles));
	if (!r->ptiles)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = r->tile_first; k < r->tile_num; k++) {
		const struct sp_tile *t = &r->tiles[k];

		if (r->p_has_hi && tile_lo_cmp(dm, t, &r->p_hi) >= 0)
			break;
		if (r->p_has_lo && tile_hi_cmp(dm, t, &r->p_lo) < 0)
			continue;
		r->ptiles[r->ptile_num++] = k;
	}
	return TFS_E_OK;
}

/* Forgets the tiles that lie wholly below `lower`: the tiles before it in
 * lo0 order that reach past it move up (keeping the order), the others
 * drop out, so planning never rescans finished tiles. */
static void tiles_forget(struct sp_reader *r)
{
	const struct sp_dim *dm = &r->dims[0];
	uint32_t k = r->tile_first, w;

	if (!r->have_lower)
		return;
	while (k < r->tile_num && tile_lo_cmp(dm, &r->tiles[k], &r->lower) < 0)
		k++;
	w = k;
	for (uint32_t i = k; i-- > r->tile_first;)
		if (tile_hi_cmp(dm, &r->tiles[i], &r->lower) >= 0)
			r->tiles[--w] = r->tiles[i];
	r->tile_first = w;
}

static enum tfs_err piece_build(struct sp_reader *r, struct tfs_diag *d)
{
	enum tfs_err e;
	uint32_t n, kept = 0;

	piece_release(r);
	tiles_forget(r);
	piece_plan(r);
	if (r->p_has_hi) {
		r->have_lower = true;
		r->lower = r->p_hi;
	} else {
		r->finished = true;
	}
	if (cells_alloc(&r->cells, r->dim_num))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = piece_tiles(r, d);
	if (!e)
		e = piece_charge(r, d);
	if (!e)
		e = tfs__sp_gather_coords(r, d);
	if (e)
		return e;
	piece_settle(r);
	n = (uint32_t)r->cells.n;
	r->order = tfs_mallocn(n ? n : 1, sizeof(*r->order));
	if (!r->order)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	/* Radix: stable, so with deduplication the later of two equal
	 * cells (which newest_cmp puts first) starts first; only where no
	 * timestamps or fragments decide between equal cells. */
	for (uint32_t i = 0; i < n; i++)
		r->order[i] = r->dedup ? n - 1 - i : i;
	if (!((!r->dedup || r->plain) &&
	      tfs__sp_radix_order(r, r->order, n))) {
		for (uint32_t i = 0; i < n; i++)
			r->order[i] = i;
		if (tfs__sp_sort_index(r->order, n,
				       r->dedup ? tfs__sp_newest_cmp
						: tfs__sp_coords_only_cmp,
				       r))
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	/* Newest wins, then delete metadata removes the winner (read.md §7
	 * step 4: an older version of a deleted cell does not reappear). */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = r->order[i];

		if (r->dedup && i > 0 &&
		    tfs__sp_coords_cmp(r, r->order[i - 1], c) == 0)
			continue;
		r->order[kept++] = c;
	}
	n = kept;
	kept = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!r->cells.dt.data[r->order[i]])
			r->order[kept++] = r->order[i];
	r->order_num = kept;
	e = tfs__sp_gather_attrs(r, d);
	if (!e && !r->dedup)
		e = sort_duplicates(r, d);
	return e;
}

/* ---- Reader ops ------------------------------------------------------- */

static enum tfs_err emit_cell(struct sp_reader *r, uint32_t c)
{
	struct tfs_query *q = r->q;

	for (size_t fi = 0; fi < q->field_num; fi++) {
		const struct tfs_out_field *f = &q->fields[fi];
		const uint8_t *p;
		uint64_t len;
		uint8_t valid = 1;
		enum tfs_err e;

		if (f->is_dim)
			p = cells_coord(&r->cells, &r->dims[f->index], f->index,
					c, &len);
		else
			p = col_value(&r->cols[fi], f, r->row[c], &len, &valid);
		e = tfs_out_append(q, fi, p, len, valid);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

static enum tfs_err sparse_next(struct tfs_query *q, struct tfs_diag *d)
{
	struct sp_reader *r = q->reader;
	uint64_t run;
	enum tfs_err e;

	q->batch_cell_num = 0;
	if (r->stored)
		return tfs__sp_stored_next(r, d);
	while (q->batch_cell_num < q->batch_cells) {
		if (r->pos == r->order_num) {
			if (r->finished)
				break;
			e = piece_build(r, d);
			if (e)
				return e;
			continue;
		}
		run = q->batch_cells - q->batch_cell_num;
		if (run > r->order_num - r->pos)
			run = r->order_num - r->pos;
		e = tfs_out_reserve(q, q->batch_cell_num + run, d);
		if (e)
			return e;
		for (; run > 0; run--) {
			e = emit_cell(r, r->order[r->pos]);
			if (e)
				return tfs_fail(d, e,
						"sparse read: output batch: %s",
						tfs_strerror(e));
			r->pos++;
			q->batch_cell_num++;
		}
	}
	return TFS_E_OK;
}

static void reader_free(struct sp_reader *r)
{
	if (!r)
		return;
	tfs__sp_stored_free(r);
	if (r->q)
		piece_release(r);
	for (uint32_t i = 0; r->frags && i < r->frag_num; i++) {
		struct sp_frag *sf = &r->frags[i];

		tfs_free(sf->dim_slot);
		tfs_free(sf->load_slot);
		tfs_free(sf->load_desc);
		tfs_free(sf->field_load);
		tfs_free(sf->src);
		for (uint32_t j = 0; sf->dels && j < sf->del_num; j++)
			tfs_free(sf->dels[j].desc);
		tfs_free(sf->dels);
	}
	tfs_free(r->frags);
	for (uint32_t i = 0; r->dels && i < r->del_num; i++) {
		tfs_cond_free(r->dels[i].cond);
		tfs_free(r->dels[i].gmap);
	}
	tfs_free(r->dels);
	for (size_t i = 0; r->fills && i < r->q->field_num; i++)
		tfs_free(r->fills[i]);
	tfs_free(r->fills);
	tfs_free(r->gnames);
	tfs_free(r->tiles);
	tfs_mem_uncharge(tfs_mem_global(), r->tiles_charged);
	tfs_free(r->dims);
	tfs_free(r);
}

static void sparse_free(struct tfs_query *q)
{
	reader_free(q->reader);
	q->reader = NULL;
}

static const struct tfs_reader_ops sparse_ops = {
	.next = sparse_next,
	.free = sparse_free,
};

static enum tfs_err open_dims(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_schema *s = r->q->schema;

	r->dims = tfs_callocn(r->dim_num, sizeof(*r->dims));
	if (!r->dims)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < r->dim_num; k++) {
		struct sp_dim *dm = &r->dims[k];
		const struct tfs_range *sub = &r->q->sub[k];

		dm->type = s->dims[k].type;
		dm->var = s->dims[k].var;
		dm->size = (uint32_t)tfs_datatype_size(dm->type);
		if (!dm->var && (dm->size == 0 || dm->size > 8))
			return tfs_fail(d, TFS_E_CORRUPT,
					"dimension '%s' has bad type %u",
					s->dims[k].name, dm->type);
		val_set(&dm->sub_lo, dm, sub->lo, sub->lo_len);
		val_set(&dm->sub_hi, dm, sub->hi, sub->hi_len);
	}
	return TFS_E_OK;
}

static bool sub_empty(const struct sp_reader *r)
{
	for (uint32_t k = 0; k < r->dim_num; k++)
		if (val_cmp(&r->dims[k], &r->dims[k].sub_lo,
			    &r->dims[k].sub_hi) > 0)
			return true;
	return false;
}

static enum tfs_err reader_open(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_arraydir *dir = r->q->dir;
	size_t cap = 0;
	enum tfs_err e;

	e = tfs__sp_prepare_fills(r, d);
	if (!e)
		e = open_dims(r, d);
	if (!e)
		e = tfs__sp_open_deletes(r, d);
	if (e)
		return e;
	if (sub_empty(r) || !dir->fragment_num) {
		r->finished = true;
		r->count_known = true;
		return TFS_E_OK;
	}
	if (dir->fragment_num > INT32_MAX) /* sp_tile.frag: 31 bits */
		return tfs_fail(d, TFS_E_TOO_BIG, "too many fragments");
	r->frags = tfs_callocn(dir->fragment_num, sizeof(*r->frags));
	if (!r->frags)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < dir->fragment_num; i++) {
		struct tfs_fragment *f = dir->fragments[i];
		uint32_t fi = r->frag_num;

		if (f->footer.empty)
			continue;
		if (f->footer.dense)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s' is dense in a sparse array",
					f->name);
		if (f->footer.ned && !tfs__sp_box_meets(r, f->footer.ned))
			continue;
		r->frag_num++;
		e = tfs__sp_open_frag(r, &r->frags[fi], f, (uint32_t)i, d);
		if (!e)
			e = tfs__sp_add_tiles(r, fi, &cap, d);
		if (!e)
			e = tfs__sp_tiles_charge(r, (uint64_t)cap *
							sizeof(*r->tiles), d);
		if (e)
			return e;
	}
	r->plain = tfs__sp_plain(r);
	if (r->q->stored_bounded && !(r->plain && r->q->stored_order))
		return tfs_fail(d, TFS_E_INVALID, "a position in stored order "
				"needs a read that goes tile by tile");
	if (!r->tile_num) {
		r->finished = true;
		r->count_known = r->plain;
		return TFS_E_OK;
	}
	if (r->plain) {
		r->count_known = !r->q->stored_bounded;
		for (uint32_t k = 0; k < r->tile_num && r->count_known; k++) {
			r->count_known = r->tiles[k].inside;
			r->count += r->tiles[k].cells;
		}
		if (r->q->stored_order)
			return tfs__sp_stored_open(r, d);
	}
	return tfs__sp_sort_tiles(r, d);
}

enum tfs_err tfs_sparse_reader_open(struct tfs_query *q, struct tfs_diag *d)
{
	return tfs_sparse_reader_open_capped(q, PIECE_CELLS, d);
}

enum tfs_err tfs_sparse_reader_open_capped(struct tfs_query *q,
					   uint64_t piece_cells,
					   struct tfs_diag *d)
{
	struct sp_reader *r;
	enum tfs_err e;

	r = tfs_callocn(1, sizeof(*r));
	if (!r)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	r->q = q;
	r->dim_num = q->schema->dim_num;
	r->dedup = !q->schema->allows_dups;
	r->t0 = q->dir->t0;
	r->t1 = q->dir->t1;
	r->piece_cap = piece_cells ? piece_cells : 1;
	/* Sorted batches are copied out of a piece that is counted too; in
	 * stored order batches follow the marks of a file's index. */
	if (!q->stored_order)
		q->batch_cells = tfs_out_batch_cap(q, q->batch_cells);
	if (r->dim_num == 0) {
		tfs_free(r);
		return tfs_fail(d, TFS_E_CORRUPT, "sparse array without dimensions");
	}
	e = reader_open(r, d);
	if (e) {
		reader_free(r);
		return e;
	}
	q->total_cells = UINT64_MAX;
	q->cells_known = r->count_known;
	q->known_cells = r->count_known ? r->count : 0;
	q->reader = r;
	q->reader_ops = &sparse_ops;
	return TFS_E_OK;
}
