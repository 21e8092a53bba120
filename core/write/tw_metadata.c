/* The tile writer's last step: __fragment_metadata.tdb (fragment.md), the
 * generic tiles of offsets, sizes, mins, maxes, sums and null counts in
 * TileDB's order, the R-tree of MBRs, the footer and its length. */
#include "tile_writer_internal.h"

/* ---- The fragment metadata file ------------------------------------------ */

static enum tfs_err put_tile(struct tfs__tw *t, struct tfs_buf *file,
			     uint64_t *off, const struct tfs_buf *payload,
			     struct tfs_diag *d)
{
	*off = file->len;
	return tfs_generic_tile_encode(file, payload->data, payload->len,
				       t->o.key, d);
}

static enum tfs_err put_u64_tile(struct tfs__tw *t, struct tfs_buf *file,
				 uint64_t *off, const struct tfs_buf *vals,
				 bool present, struct tfs_diag *d)
{
	struct tfs_buf *p = &t->tilebuf;
	uint64_t n = present ? vals->len / 8 : 0;
	enum tfs_err e;

	p->len = 0;
	if ((e = tfs_u64_list_serialize(p, (const uint64_t *)vals->data, n)))
		return tfs_fail(d, e, "out of memory");
	return put_tile(t, file, off, p, d);
}

static enum tfs_err put_minmax_tile(struct tfs__tw *t, struct tfs_buf *file,
				    uint64_t *off, const struct tfs_buf *fixed,
				    const struct tfs_buf *var, struct tfs_diag *d)
{
	struct tfs_buf *p = &t->tilebuf;
	enum tfs_err e;

	p->len = 0;
	if ((e = tfs_buf_append_u64(p, fixed ? fixed->len : 0)) ||
	    (e = tfs_buf_append_u64(p, var ? var->len : 0)) ||
	    (fixed && (e = tfs_buf_append(p, fixed->data, fixed->len))) ||
	    (var && (e = tfs_buf_append(p, var->data, var->len))))
		return tfs_fail(d, e, "out of memory");
	return put_tile(t, file, off, p, d);
}

/* Value t of a min/max list: fixed values or offsets + bytes. */
static const uint8_t *mm_value(const struct slotacc *a, bool max, bool var,
			       uint64_t cs, uint64_t t, uint64_t tiles,
			       uint64_t *len)
{
	const struct tfs_buf *fx = max ? &a->max_fixed : &a->min_fixed;
	const struct tfs_buf *vr = max ? &a->max_var : &a->min_var;

	if (!var) {
		*len = cs;
		return fx->data + t * cs;
	}
	uint64_t o = tfs_get_u64(fx->data + t * 8);
	uint64_t end = t + 1 < tiles ? tfs_get_u64(fx->data + (t + 1) * 8)
				     : vr->len;
	*len = end - o;
	return vr->data + o;
}

/* Fragment summary (fragment.md §6): per slot min, max, sum, null count
 * over the tiles. */
/* The field written in a slot; NULL for __coords. */
static const struct tfs__field *slot_field(const struct tfs__tw *t, uint32_t slot)
{
	const struct tfs__field *fd = NULL;

	for (uint32_t f = 0; f < t->o.field_num; f++)
		if (t->o.fields[f].slot == slot)
			fd = &t->o.fields[f];
	return fd;
}

/* __coords: zero min and max of dimension 0's size, no sum, no nulls. */
static enum tfs_err put_coords_summary(const struct tfs__tw *t, struct tfs_buf *p)
{
	uint64_t sz = tfs_datatype_size(t->o.s->dims[0].type);
	static const uint8_t z[8];
	enum tfs_err e;

	if ((e = tfs_buf_append_u64(p, sz)) ||
	    (e = tfs_buf_append(p, z, sz)) ||
	    (e = tfs_buf_append_u64(p, sz)) ||
	    (e = tfs_buf_append(p, z, sz)) ||
	    (e = tfs_buf_append(p, z, 8)) ||
	    (e = tfs_buf_append_u64(p, 0)))
		return e;
	return TFS_E_OK;
}

/* The sum over the tiles' sums into sum (zero when the field has none). */
static void field_sum(const struct tfs__tw *t, const struct tfs__field *fd,
		      const struct slotacc *a, uint64_t tiles, uint8_t sum[8])
{
	if (tfs__has_sum(fd, t->o.dense) &&
	    !(fd->type == TFS_CHAR && !fd->var)) {
		struct sum s;

		tfs__sum_init(&s, fd->type);
		for (uint64_t k = 0; k < tiles; k++)
			tfs__sum_add_raw(&s, a->sums.data + 8 * k);
		tfs__sum_put(&s, sum);
	}
}

/* The least and greatest value over the tiles that hold one that is not
 * null, each with its length (empty when the field keeps none). */
static enum tfs_err put_field_minmax(const struct tfs__tw *t,
				     const struct tfs__field *fd,
				     const struct slotacc *a, uint64_t tiles,
				     struct tfs_buf *p)
{
	const uint8_t *mn = NULL, *mx = NULL;
	uint64_t mnl = 0, mxl = 0;
	uint64_t cs = fd->cell_size;
	enum tfs_err e;

	if (!tfs__has_minmax(fd)) {
		if ((e = tfs_buf_append_u64(p, 0)) ||
		    (e = tfs_buf_append_u64(p, 0)))
			return e;
		return TFS_E_OK;
	}
	for (uint64_t k = 0; k < tiles; k++) {
		uint64_t l1, l2, cells;
		const uint8_t *v1, *v2;

		cells = t->o.dense ? t->cpt
		      : k + 1 < tiles ? t->capacity
				      : t->last_tile_cells;
		if (fd->nullable &&
		    tfs_get_u64(a->null_counts.data + 8 * k) == cells)
			continue;
		v1 = mm_value(a, false, fd->var, cs, k, tiles, &l1);
		v2 = mm_value(a, true, fd->var, cs, k, tiles, &l2);
		if (fd->var) {
			if (!mn || tfs_bytes_cmp(v1, l1, mn, mnl) < 0) {
				mn = v1;
				mnl = l1;
			}
			if (!mx || tfs_bytes_cmp(v2, l2, mx, mxl) > 0) {
				mx = v2;
				mxl = l2;
			}
		} else if (tfs__is_string_type(fd->type)) {
			if (!mn || tfs__fixed_str_cmp(v1, mn, cs) < 0)
				mn = v1;
			if (!mx || tfs__fixed_str_cmp(v2, mx, cs) > 0)
				mx = v2;
			mnl = mxl = cs;
		} else {
			if (!mn || tfs_value_cmp(fd->type, v1, mn) < 0)
				mn = v1;
			if (!mx || tfs_value_cmp(fd->type, v2, mx) > 0)
				mx = v2;
			mnl = mxl = cs;
		}
	}
	if ((e = tfs_buf_append_u64(p, mnl)) ||
	    (mn && (e = tfs_buf_append(p, mn, mnl))) ||
	    (e = tfs_buf_append_u64(p, mxl)) ||
	    (mx && (e = tfs_buf_append(p, mx, mxl))))
		return e;
	return TFS_E_OK;
}

static enum tfs_err put_summary(struct tfs__tw *t, struct tfs_buf *p)
{
	enum tfs_err e;
	uint64_t tiles = t->tile_num;

	for (uint32_t slot = 0; slot < t->slot_num; slot++) {
		const struct tfs__field *fd = slot_field(t, slot);
		const struct slotacc *a = &t->slots[slot];
		uint8_t sum[8] = { 0 };
		uint64_t nulls = 0;

		if (!fd) {
			if ((e = put_coords_summary(t, p)))
				return e;
			continue;
		}
		if (fd->nullable)
			for (uint64_t k = 0; k < tiles; k++)
				nulls += tfs_get_u64(a->null_counts.data + 8 * k);
		field_sum(t, fd, a, tiles, sum);
		if ((e = put_field_minmax(t, fd, a, tiles, p)) ||
		    (e = tfs_buf_append(p, sum, 8)) ||
		    (e = tfs_buf_append_u64(p, nulls)))
			return e;
	}
	return TFS_E_OK;
}

static enum tfs_err build_rtree(struct tfs__tw *t, struct tfs_rtree *r,
				struct tfs_range **ned)
{
	uint64_t n = t->tile_num;
	struct tfs_range *nd;

	memset(r, 0, sizeof(*r));
	r->dim_num = t->D;
	r->fanout = 10;
	*ned = nd = tfs_callocn(t->D, sizeof(*nd));
	if (!nd)
		return TFS_E_NOMEM;
	if (t->o.dense) {
		for (uint32_t k = 0; k < t->D; k++)
			nd[k] = t->o.box[k];
		return TFS_E_OK;
	}
	r->leaf_num = n;
	r->leaves = tfs_callocn(n ? n : 1, t->D * sizeof(*r->leaves));
	if (!r->leaves)
		return TFS_E_NOMEM;
	for (uint32_t k = 0; k < t->D; k++) {
		const struct tfs__field *fd = &t->o.fields[k];
		const struct slotacc *b = &t->dimb[k];

		for (uint64_t i = 0; i < n; i++) {
			struct tfs_range *g = &r->leaves[i * t->D + k];

			g->lo = mm_value(b, false, fd->var, fd->cell_size, i, n,
					 &g->lo_len);
			g->hi = mm_value(b, true, fd->var, fd->cell_size, i, n,
					 &g->hi_len);
			if (i == 0) {
				nd[k] = *g;
				continue;
			}
			if (fd->var) {
				if (tfs_bytes_cmp(g->lo, g->lo_len, nd[k].lo,
						  nd[k].lo_len) < 0) {
					nd[k].lo = g->lo;
					nd[k].lo_len = g->lo_len;
				}
				if (tfs_bytes_cmp(g->hi, g->hi_len, nd[k].hi,
						  nd[k].hi_len) > 0) {
					nd[k].hi = g->hi;
					nd[k].hi_len = g->hi_len;
				}
			} else {
				if (tfs_value_cmp(fd->type, g->lo, nd[k].lo) < 0)
					nd[k].lo = g->lo;
				if (tfs_value_cmp(fd->type, g->hi, nd[k].hi) > 0)
					nd[k].hi = g->hi;
			}
		}
	}
	return TFS_E_OK;
}

static enum tfs_err alloc_lists(struct tfs_footer *f, uint32_t num, uint32_t D)
{
	uint64_t **lists[] = {
		&f->file_sizes, &f->file_var_sizes, &f->file_validity_sizes,
		&f->tile_offsets_off, &f->tile_var_offsets_off,
		&f->tile_var_sizes_off, &f->tile_validity_offsets_off,
		&f->tile_mins_off, &f->tile_maxes_off, &f->tile_sums_off,
		&f->tile_null_counts_off,
	};

	for (size_t i = 0; i < sizeof(lists) / sizeof(*lists); i++)
		if (!(*lists[i] = tfs_callocn(num, sizeof(uint64_t))))
			return TFS_E_NOMEM;
	f->gobounds_mins_off = tfs_callocn(D, sizeof(uint64_t));
	f->gobounds_maxes_off = tfs_callocn(D, sizeof(uint64_t));
	if (!f->gobounds_mins_off || !f->gobounds_maxes_off)
		return TFS_E_NOMEM;
	return TFS_E_OK;
}

/* The tile offsets, var offsets, var sizes and validity offsets of every
 * slot (fragment.md §3). */
static enum tfs_err put_offset_tiles(struct tfs__tw *t, struct tfs_buf *file,
				     struct tfs_footer *f, struct tfs_diag *d)
{
	uint32_t W = t->o.version, num = t->slot_num;
	enum tfs_err e = TFS_E_OK;

	for (uint32_t i = 0; i < num && !e; i++)
		e = put_u64_tile(t, file, &f->tile_offsets_off[i],
				 &t->slots[i].offsets, true, d);
	for (uint32_t i = 0; i < num && !e; i++)
		e = put_u64_tile(t, file, &f->tile_var_offsets_off[i],
				 &t->slots[i].var_offsets, true, d);
	for (uint32_t i = 0; i < num && !e; i++)
		e = put_u64_tile(t, file, &f->tile_var_sizes_off[i],
				 &t->slots[i].var_sizes, true, d);
	for (uint32_t i = 0; W >= 7 && i < num && !e; i++)
		e = put_u64_tile(t, file, &f->tile_validity_offsets_off[i],
				 &t->slots[i].validity_offsets, true, d);
	return e;
}

/* Per-tile minimums and maximums of every slot; the __coords slot gets
 * zeros. */
static enum tfs_err put_minmax_tiles(struct tfs__tw *t, struct tfs_buf *file,
				     struct tfs_footer *f,
				     const struct tfs_buf *zeros,
				     struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (int mx = 0; mx < 2 && !e; mx++)
		for (uint32_t i = 0; i < t->slot_num && !e; i++) {
			struct slotacc *a = &t->slots[i];
			uint64_t *off = mx ? &f->tile_maxes_off[i]
					   : &f->tile_mins_off[i];

			if (i == t->A)
				e = put_minmax_tile(t, file, off, zeros, NULL,
						    d);
			else
				e = put_minmax_tile(
					t, file, off,
					mx ? &a->max_fixed : &a->min_fixed,
					mx ? &a->max_var : &a->min_var, d);
		}
	return e;
}

/* The global order bounds of each dimension (sparse fragments, format
 * 23 on). */
static enum tfs_err put_gobounds_tiles(struct tfs__tw *t, struct tfs_buf *file,
				       struct tfs_footer *f, struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (int mx = 0; f->has_gobounds && mx < 2 && !e; mx++)
		for (uint32_t k = 0; k < t->D && !e; k++) {
			struct slotacc *g = &t->gob[k];

			e = put_minmax_tile(t, file,
					    mx ? &f->gobounds_maxes_off[k]
					       : &f->gobounds_mins_off[k],
					    mx ? &g->max_fixed : &g->min_fixed,
					    t->o.fields[k].var
						    ? (mx ? &g->max_var
							  : &g->min_var)
						    : NULL,
					    d);
		}
	return e;
}

/* Per-tile sums of every slot (zeros for __coords, or nothing where its
 * type has no sum) and null counts. */
static enum tfs_err put_sum_tiles(struct tfs__tw *t, struct tfs_buf *file,
				  struct tfs_footer *f, struct tfs_buf *zeros,
				  struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (uint32_t i = 0; i < t->slot_num && !e; i++) {
		if (i == t->A) {
			zeros->len = 0;
			if (tfs__type_has_sum(t->o.s->dims[0].type) &&
			    (e = tfs_buf_resize(zeros, t->tile_num * 8)))
				break;
			e = put_u64_tile(t, file, &f->tile_sums_off[i], zeros,
					 true, d);
		} else {
			e = put_u64_tile(t, file, &f->tile_sums_off[i],
					 &t->slots[i].sums, true, d);
		}
	}
	for (uint32_t i = 0; i < t->slot_num && !e; i++)
		e = put_u64_tile(t, file, &f->tile_null_counts_off[i],
				 &t->slots[i].null_counts, true, d);
	return e;
}

/* The tile statistics of format 11 on: minimums, maximums, global order
 * bounds, sums and null counts. */
static enum tfs_err put_stats_tiles(struct tfs__tw *t, struct tfs_buf *file,
				    struct tfs_footer *f, struct tfs_diag *d)
{
	/* The __coords slot gets zeros, a cell being all D coordinates of
	 * dimension 0's type. */
	uint64_t csz = t->D * tfs_datatype_size(t->o.s->dims[0].type);
	struct tfs_buf zeros;
	enum tfs_err e;

	tfs_buf_init(&zeros, TFS_BUF_NO_MAX);
	if ((e = tfs_buf_resize(&zeros, t->tile_num * csz)))
		return tfs_fail(d, e, "out of memory");
	e = put_minmax_tiles(t, file, f, &zeros, d);
	f->has_gobounds = t->o.version >= 23 && !t->o.dense;
	if (!e)
		e = put_gobounds_tiles(t, file, f, d);
	if (!e)
		e = put_sum_tiles(t, file, f, &zeros, d);
	tfs_buf_release(&zeros);
	return e;
}

/* The fragment summary (format 12 on) and the processed conditions
 * (format 15 on, none), through the scratch buffer p. */
static enum tfs_err put_late_tiles(struct tfs__tw *t, struct tfs_buf *file,
				   struct tfs_footer *f, struct tfs_buf *p,
				   struct tfs_diag *d)
{
	uint32_t W = t->o.version;
	enum tfs_err e;

	if (W >= 12) {
		p->len = 0;
		if ((e = put_summary(t, p)))
			return tfs_fail(d, e, "out of memory");
		if ((e = put_tile(t, file, &f->summary_off, p, d)))
			return e;
	}
	if (W >= 15) {
		p->len = 0;
		if ((e = tfs_buf_append_u64(p, 0)) ||
		    (e = put_tile(t, file, &f->processed_conditions_off, p, d)))
			return e;
	}
	return TFS_E_OK;
}

/* The footer (fragment.md §4), followed by its size where readers need
 * it to find it (format 10 on, or a var-sized dimension). */
static enum tfs_err put_footer(struct tfs__tw *t, struct tfs_buf *file,
			       struct tfs_footer *f, struct tfs_range *ned,
			       struct tfs_diag *d)
{
	const struct tfs_schema *s = t->o.s;
	uint32_t W = t->o.version, num = t->slot_num;
	bool var_dim = false;
	size_t at = file->len;
	enum tfs_err e;

	for (uint32_t k = 0; k < t->D; k++)
		var_dim |= s->dims[k].var;
	f->version = W;
	f->schema_name = s->name;
	f->dense = t->o.dense;
	f->ned = ned;
	f->dim_num = t->D;
	f->sparse_tile_num = t->o.dense ? 0 : t->tile_num;
	f->last_tile_cell_num = t->o.dense ? t->cpt : t->last_tile_cells;
	f->slot_num = num;
	f->has_timestamps = t->o.timestamps;
	for (uint32_t i = 0; i < num; i++) {
		f->file_sizes[i] = t->slots[i].file_size;
		f->file_var_sizes[i] = t->slots[i].var_file_size;
		f->file_validity_sizes[i] = t->slots[i].validity_file_size;
	}
	if ((e = tfs_footer_serialize(file, f, s)))
		return tfs_fail(d, e, "fragment metadata: footer: %s",
				tfs_strerror(e));
	if ((W >= 10 || var_dim) &&
	    (e = tfs_buf_append_u64(file, file->len - at)))
		return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}

static enum tfs_err write_metadata(struct tfs__tw *t, struct tfs_diag *d)
{
	struct tfs_footer f;
	struct tfs_rtree r;
	struct tfs_range *ned = NULL;
	struct tfs_buf file, *p = &t->tilebuf;
	uint32_t W = t->o.version;
	char *path = NULL;
	enum tfs_err e;

	memset(&f, 0, sizeof(f));
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	if ((e = build_rtree(t, &r, &ned)) ||
	    (e = alloc_lists(&f, t->slot_num, t->D))) {
		tfs_fail(d, e, "out of memory");
		goto out_release;
	}
	p->len = 0;
	if ((e = tfs_rtree_serialize(p, &r, W, t->o.s))) {
		tfs_fail(d, e, "fragment metadata: R-tree: %s",
			 tfs_strerror(e));
		goto out_release;
	}
	if ((e = put_tile(t, &file, &f.rtree_off, p, d)) ||
	    (e = put_offset_tiles(t, &file, &f, d)) ||
	    (W >= 11 && (e = put_stats_tiles(t, &file, &f, d))) ||
	    (e = put_late_tiles(t, &file, &f, p, d)) ||
	    (e = put_footer(t, &file, &f, ned, d)))
		goto out_release;
	path = tfs_path_join(t->o.dir, "__fragment_metadata.tdb");
	if (!path) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_release;
	}
	t->bytes += file.len;
	e = tfs__write_file(t->o.vfs, path, file.data, file.len, d);

out_release:
	f.schema_name = NULL;
	f.ned = NULL;
	tfs_footer_release(&f);
	tfs_free(r.leaves);
	tfs_free(ned);
	tfs_free(path);
	tfs_buf_release(&file);
	return e;
}

enum tfs_err tfs__tw_finish(struct tfs__tw *t, uint64_t *bytes,
			    uint64_t *cell_num, struct tfs_diag *d)
{
	enum tfs_err e;

	if (t->o.dense) {
		if (t->cur && (e = tfs__tw_dense_close_tile(t, d)))
			return e;
		while (t->cur_rank < t->tiles_total)
			if ((e = tfs__tw_start_tile(t, d)) || (e = tfs__tw_dense_close_tile(t, d)))
				return e;
	} else if (t->cur && t->cur->cells.cell_num) {
		tfs__tw_submit_tile(t);
	}
	while (t->inflight)
		if ((e = tfs__tw_drain_one(t, d)))
			return e;
	/* Every data file durable before the metadata names it. */
	for (uint32_t f = 0; f < t->o.field_num; f++) {
		const struct tfs__field *fd = &t->o.fields[f];
		const struct slotacc *a = &t->slots[fd->slot];

		if (a->file_size &&
		    (e = tfs_vfs_fsync(t->o.vfs, t->paths[3 * f], d)))
			return e;
		if (a->var_file_size &&
		    (e = tfs_vfs_fsync(t->o.vfs, t->paths[3 * f + 1], d)))
			return e;
		if (a->validity_file_size &&
		    (e = tfs_vfs_fsync(t->o.vfs, t->paths[3 * f + 2], d)))
			return e;
	}
	if ((e = write_metadata(t, d)))
		return e;
	*bytes = t->bytes;
	*cell_num = t->cell_num;
	return TFS_E_OK;
}
