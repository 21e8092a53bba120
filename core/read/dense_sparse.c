/* Sparse fragments of a dense array (format/read.md §3): their cells that
 * fall in a batch are laid over the dense cells, newest fragment last,
 * through the tiles they keep decoded for the batch. */
#include "dense_reader.h"

/* Makes room for n more kept tiles at once: pointers from keep_tile stay
 * valid until the next reserve. */
static bool reserve_tiles(struct batch *b, size_t n)
{
	return n <= SIZE_MAX - b->sparse_tile_num &&
	       tfs_grow(&b->sparse_tiles, &b->sparse_tile_cap,
			b->sparse_tile_num + n, sizeof(*b->sparse_tiles)) ==
		       TFS_E_OK;
}

/* Keeps a sparse tile alive until the batch is emitted, in room made by
 * reserve_tiles. */
static struct tfs_tile *keep_tile(struct batch *b)
{
	assert(b->sparse_tile_num < b->sparse_tile_cap);
	memset(&b->sparse_tiles[b->sparse_tile_num], 0, sizeof(*b->sparse_tiles));
	return &b->sparse_tiles[b->sparse_tile_num++];
}

static bool box_hits(const struct dense_reader *r, const struct batch *b,
		     const uint64_t *lo, const uint64_t *hi)
{
	for (uint32_t d = 0; d < r->dim_num; d++) {
		uint64_t qlo = d ? r->sub_lo[d] : b->row_lo;
		uint64_t qhi = d ? r->sub_hi[d] : b->row_hi;

		if (lo[d] > qhi || hi[d] < qlo)
			return false;
	}
	return true;
}

/* Reads (through the cache) and keeps for the batch the coordinate tiles
 * and the queried attributes' tiles of one sparse tile. */
static enum tfs_err load_sparse_tile(struct tfs_query *q, struct batch *b,
				     const struct frag_box *fb, uint64_t tile,
				     uint32_t coord_tiles,
				     struct tfs_tile **coords,
				     struct tfs_tile *vals, struct tfs_diag *d)
{
	enum tfs_err e;

	/* coords[] points into the kept tiles: no move until we are done. */
	if (!reserve_tiles(b, coord_tiles + q->field_num))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < coord_tiles; k++) {
		coords[k] = keep_tile(b);
		e = tfs_tile_read_cached(q->dir, fb->f,
					 tfs_fragment_dim_slot(fb->f, k), tile,
					 coords[k], d);
		if (e)
			return e;
	}
	for (size_t fi = 0; fi < q->field_num; fi++) {
		struct tfs_tile *t;

		if (q->fields[fi].is_dim || fb->slot_of_field[fi] < 0)
			continue;
		t = keep_tile(b);
		e = tfs_tile_read_cached(q->dir, fb->f, (uint32_t)fb->slot_of_field[fi],
				  tile, t, d);
		if (e)
			return e;
		vals[fi] = *t;
	}
	return TFS_E_OK;
}

/* Whether sparse cell c lies in the batch, and then its position there. */
static inline bool cell_in_batch(const struct dense_reader *r,
				 const struct batch *b,
				 struct tfs_tile *const *coords, bool zipped,
				 const uint64_t *out_stride, uint64_t c,
				 uint64_t *pos)
{
	uint32_t dims = r->dim_num;
	size_t size = tfs_datatype_size(r->dtype);
	uint64_t out = 0;
	bool inside = true;

	for (uint32_t k = 0; k < dims && inside; k++) {
		uint64_t x = tfs__dense_rel_of(r, k,
					       zipped ? coords[0]->fixed +
								(c * dims + k) * size
						      : coords[k]->fixed + c * size);
		uint64_t qlo = k ? r->sub_lo[k] : b->row_lo;
		uint64_t qhi = k ? r->sub_hi[k] : b->row_hi;

		inside = x >= qlo && x <= qhi;
		out += (x - qlo) * out_stride[k];
	}
	*pos = out;
	return inside;
}

/* Writes sparse cell c's queried values at position out of the batch. */
static inline void put_sparse_cell(struct dense_reader *r,
				   struct tfs_query *q,
				   const struct frag_box *fb,
				   const struct tfs_tile *vals, uint64_t c,
				   uint64_t out)
{
	size_t vi = 0;

	for (size_t fi = 0; fi < q->field_num; fi++) {
		const struct tfs_out_field *fld = &q->fields[fi];
		struct tfs_out_column *col = &q->cols[fi];
		const struct tfs_tile *t = &vals[fi];
		struct var_ref *refs = NULL;

		if (fld->is_dim)
			continue;
		if (fld->var)
			refs = r->refs[vi++];
		if (fb->slot_of_field[fi] < 0)
			continue;
		if (fld->var) {
			refs[out].p = t->var + t->offsets[c];
			refs[out].len = t->offsets[c + 1] - t->offsets[c];
		} else {
			memcpy(col->data.data + out * fld->cell_size,
			       t->fixed + c * fld->cell_size,
			       (size_t)fld->cell_size);
		}
		if (fld->nullable)
			col->validity.data[out] =
				t->validity ? t->validity[c] : 1;
	}
}

/* Writes the cells of one sparse tile that lie in the batch, where the
 * fragment is newer than the cell's last writer. */
static enum tfs_err apply_sparse_tile(struct dense_reader *r,
				      struct tfs_query *q, struct batch *b,
				      const struct frag_box *fb, uint64_t tile,
				      struct tfs_diag *d)
{
	struct tfs_tile *coords[MAX_DIMS];
	struct tfs_tile *vals;
	uint64_t out_stride[MAX_DIMS];
	uint32_t dims = r->dim_num;
	/* Before v5 one `__coords` tile holds every dimension, cell by cell
	 * once read (tile_read.c). */
	bool zipped = fb->f->footer.version < 5;
	uint32_t coord_tiles = zipped ? 1 : dims;
	enum tfs_err e;

	vals = tfs_callocn(q->field_num ? q->field_num : 1, sizeof(*vals));
	if (!vals)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = load_sparse_tile(q, b, fb, tile, coord_tiles, coords, vals, d);
	if (e)
		goto out_free;
	out_stride[dims - 1] = 1;
	for (uint32_t k = dims - 1; k-- > 0;)
		out_stride[k] = out_stride[k + 1] *
				(r->sub_hi[k + 1] - r->sub_lo[k + 1] + 1);
	for (uint64_t c = 0; c < coords[0]->cell_num; c++) {
		uint64_t out;

		if (!cell_in_batch(r, b, coords, zipped, out_stride, c, &out) ||
		    r->winner[out] > fb->index)
			continue;
		r->winner[out] = fb->index + 1;
		put_sparse_cell(r, q, fb, vals, c, out);
	}
out_free:
	tfs_free(vals);
	return e;
}

/* Sparse fragments of a dense array override older writers cell by cell
 * (read.md §4); their tiles are found through the R-tree leaves. */
enum tfs_err tfs__dense_apply_sparse(struct dense_reader *r, struct tfs_query *q,
				     struct batch *b, struct tfs_diag *d)
{
	for (size_t i = 0; i < r->sparse_num; i++) {
		const struct frag_box *fb = &r->sparse[i];
		const struct tfs_rtree *rt;
		enum tfs_err e;

		if (!box_hits(r, b, fb->lo, fb->hi))
			continue;
		e = tfs_fragment_rtree(q->dir, fb->f, &rt, d);
		if (e)
			return e;
		for (uint64_t t = 0; t < fb->f->tile_num; t++) {
			uint64_t lo[MAX_DIMS], hi[MAX_DIMS];

			if (t < rt->leaf_num && rt->dim_num == r->dim_num) {
				for (uint32_t k = 0; k < r->dim_num; k++) {
					const struct tfs_range *m =
						&rt->leaves[t * rt->dim_num + k];

					lo[k] = tfs__dense_rel_of(r, k, m->lo);
					hi[k] = tfs__dense_rel_of(r, k, m->hi);
				}
				if (!box_hits(r, b, lo, hi))
					continue;
			}
			e = apply_sparse_tile(r, q, b, fb, t, d);
			if (e)
				return e;
		}
	}
	return TFS_E_OK;
}
