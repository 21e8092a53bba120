/* Queries with a condition (tfs_query_opts.condition, tilefs/tfs_where.h).
 *
 * The condition becomes TileDB's query-condition tree (core/format) and is
 * compiled by the evaluator of delete conditions (condition_eval.c), so a
 * cell matches exactly when a delete with the same tree would remove it.
 * Around an ordinary reader of the same array ("inner" query, with the
 * fields the condition needs added after the caller's) this layer keeps
 * the matching cells.
 *
 * Pushdown: comparisons on dimensions at the top of the condition (alone
 * or under AND) narrow the subarray, as a slice does. Dense arrays are
 * then cut into bands of one tile extent along dimension 0; a band is read
 * only when the per-tile minimum and maximum in the fragment metadata of
 * every fragment tile it meets, the fill value where no fragment covers
 * it, and its coordinates say a cell may match (runs of such bands are one
 * inner query each, so the output stays row-major). Sparse readers skip
 * each tile whose metadata says the same, when no other fragment overlaps
 * it (a newer cell that does not match must still hide an older one).
 * Tile statistics are only trusted for single-value numeric attributes
 * without lossy filters (fragment.md §6). */
#include "tfs_read.h"
#include "tfs_sparse.h"

#include <inttypes.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_fragment.h"

/* Bands of a dense subarray examined at most (more: no band pruning). */
#define MAX_BANDS (UINT64_C(1) << 22)
/* Fragment tiles examined per band and fragment at most. */
#define MAX_BAND_TILES 4096
#define MAX_DIMS 128

struct run {
	uint64_t lo, hi; /* dimension 0, raw values */
};

struct tfs__where {
	const struct tfs__inner_queries *iq;
	struct tfs_qc_node qc;
	struct tfs_cond *cond;
	size_t cf_num;
	struct tfs_cond_field *cf;
	int *cf_dim;    /* dimension index of condition field k, or -1 */
	int *cf_attr;   /* attribute index (current schema), or -1 */
	size_t *cf_col; /* column of the inner query */
	struct tfs_cond_value *vals;
	struct tfs_cond_bounds *bounds;
	uint8_t (*bound_bytes)[2][8];

	const char **names; /* inner fields */
	size_t name_num;
	struct tfs_range *sub; /* narrowed subarray (fixed dims own bytes) */
	uint8_t (*sub_bytes)[2][8];
	bool empty;

	bool dense;
	struct run *runs;
	size_t run_num, run_i;
	struct tfs_query *inner;
	uint64_t inner_batch;
};

/* ---- The subarray narrowed by conditions on dimensions ------------------ */

static bool is_float_type(uint8_t t)
{
	return tfs_datatype_class(t) == TFS_CLASS_FLOAT;
}

/* Lowers hi to v (or v - 1 when strict), for one fixed dimension. */
static void narrow_hi(uint8_t type, uint8_t hi[8], const uint8_t *v,
		      bool strict, bool *empty)
{
	size_t size = tfs_datatype_size(type);

	if (is_float_type(type)) {
		double x = tfs_value_as_f64(type, v);

		if (x != x)
			return;
		if (tfs_value_cmp(type, v, hi) < 0)
			memcpy(hi, v, size);
		return;
	}
	if (tfs_value_cmp(type, v, hi) > 0 ||
	    (!strict && tfs_value_cmp(type, v, hi) == 0))
		return;
	if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED) {
		uint64_t x = tfs_value_as_u64(type, v);

		if (strict && x == 0) {
			*empty = true;
			return;
		}
		tfs_put_uint(hi, size, strict ? x - 1 : x);
	} else {
		int64_t x = tfs_value_as_i64(type, v);
		int64_t min =
			size == 8 ? INT64_MIN
				  : -(int64_t)(UINT64_C(1) << (8 * size - 1));

		if (strict && x == min) {
			*empty = true;
			return;
		}
		tfs_put_uint(hi, size, (uint64_t)(strict ? x - 1 : x));
	}
}

static void narrow_lo(uint8_t type, uint8_t lo[8], const uint8_t *v,
		      bool strict, bool *empty)
{
	size_t size = tfs_datatype_size(type);

	if (is_float_type(type)) {
		double x = tfs_value_as_f64(type, v);

		if (x != x)
			return;
		if (tfs_value_cmp(type, v, lo) > 0)
			memcpy(lo, v, size);
		return;
	}
	if (tfs_value_cmp(type, v, lo) < 0 ||
	    (!strict && tfs_value_cmp(type, v, lo) == 0))
		return;
	if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED) {
		uint64_t x = tfs_value_as_u64(type, v);
		uint64_t max = size == 8 ? UINT64_MAX
					 : (UINT64_C(1) << (8 * size)) - 1;

		if (strict && x == max) {
			*empty = true;
			return;
		}
		tfs_put_uint(lo, size, strict ? x + 1 : x);
	} else {
		int64_t x = tfs_value_as_i64(type, v);
		int64_t max =
			size == 8 ? INT64_MAX
				  : (int64_t)((UINT64_C(1) << (8 * size - 1)) -
					      1);

		if (strict && x == max) {
			*empty = true;
			return;
		}
		tfs_put_uint(lo, size, (uint64_t)(strict ? x + 1 : x));
	}
}

static void narrow_leaf(struct tfs__where *w, const struct tfs_schema *s,
			const struct tfs_qc_node *n, uint32_t field)
{
	int k = w->cf_dim[field];
	const struct tfs_dim *dim;

	if (k < 0)
		return;
	dim = &s->dims[k];
	if (dim->var || n->value_len != tfs_datatype_size(dim->type))
		return;
	switch (n->op) {
	case TFS_QC_LT:
	case TFS_QC_LE:
		narrow_hi(dim->type, w->sub_bytes[k][1], n->value,
			  n->op == TFS_QC_LT, &w->empty);
		break;
	case TFS_QC_GT:
	case TFS_QC_GE:
		narrow_lo(dim->type, w->sub_bytes[k][0], n->value,
			  n->op == TFS_QC_GT, &w->empty);
		break;
	case TFS_QC_EQ:
		narrow_hi(dim->type, w->sub_bytes[k][1], n->value, false,
			  &w->empty);
		narrow_lo(dim->type, w->sub_bytes[k][0], n->value, false,
			  &w->empty);
		break;
	case TFS_QC_ALWAYS_FALSE:
		w->empty = true;
		break;
	default:
		break;
	}
}

/* Leaves of the top-level AND (or the root leaf) narrow the subarray. */
static void narrow(struct tfs__where *w, const struct tfs_schema *s)
{
	uint32_t field, i = 0;
	const struct tfs_qc_node *root = tfs_cond_node(w->cond, 0, &field);

	if (!root)
		return;
	if (root->is_value) {
		narrow_leaf(w, s, root, field);
	} else if (root->combine == TFS_QC_AND) {
		const struct tfs_qc_node *n;

		/* Children of the root in pre-order: a leaf child is one
		 * node; inner children are skipped (their leaves too). */
		for (i = 1; (n = tfs_cond_node(w->cond, i, &field)); i++) {
			if (n->is_value) {
				narrow_leaf(w, s, n, field);
				continue;
			}
			break; /* deeper structure: keep what we have */
		}
	}
	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];

		if (!dim->var && tfs_value_cmp(dim->type, w->sub_bytes[k][0],
					       w->sub_bytes[k][1]) > 0)
			w->empty = true;
	}
}

/* ---- Bounds from fragment metadata --------------------------------------- */

bool tfs__attr_lossy(const struct tfs_attr *at)
{
	for (uint32_t i = 0; i < at->filters.count; i++) {
		uint8_t t = at->filters.filters[i].type;

		if (t == TFS_FILTER_SCALE_FLOAT || t == TFS_FILTER_WEBP)
			return true;
	}
	return false;
}

/* Whether statistics of attribute field k may be used at all. */
static bool stats_usable(const struct tfs_cond_field *f)
{
	enum tfs_type_class c = tfs_datatype_class(f->type);

	return !f->var && f->cell_val_num == 1 &&
	       (c == TFS_CLASS_SIGNED || c == TFS_CLASS_UNSIGNED ||
		c == TFS_CLASS_FLOAT);
}

/* Widens bounds b (bytes in buf) by [lo, hi] of type. */
static void widen(struct tfs_cond_bounds *b, uint8_t buf[2][8], uint8_t type,
		  const uint8_t *lo, const uint8_t *hi, bool *have)
{
	size_t size = tfs_datatype_size(type);

	if (!*have) {
		memcpy(buf[0], lo, size);
		memcpy(buf[1], hi, size);
		*have = true;
	} else {
		if (tfs_value_cmp(type, lo, buf[0]) < 0)
			memcpy(buf[0], lo, size);
		if (tfs_value_cmp(type, hi, buf[1]) > 0)
			memcpy(buf[1], hi, size);
	}
	b->lo = buf[0];
	b->hi = buf[1];
}

uint64_t tfs__raw_of(uint8_t type, const uint8_t *p)
{
	if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED)
		return tfs_value_as_u64(type, p);
	return (uint64_t)tfs_value_as_i64(type, p);
}

/* A dense box in rel coordinates (offsets from the domain's low bound). */
struct box {
	uint64_t lo[MAX_DIMS], hi[MAX_DIMS];
};

/* Fragment f's non-empty domain in rel coordinates ([flo, fhi]), and
 * whether it meets box and covers it. */
static void frag_rel_box(const struct tfs_schema *s,
			 const struct tfs_fragment *f, const struct box *bx,
			 const uint64_t *dom, uint64_t *flo, uint64_t *fhi,
			 bool *meets, bool *covers)
{
	*meets = true;
	*covers = true;
	for (uint32_t dd = 0; dd < s->dim_num; dd++) {
		flo[dd] = tfs__raw_of(s->dims[dd].type, f->footer.ned[dd].lo) -
			  dom[dd];
		fhi[dd] = tfs__raw_of(s->dims[dd].type, f->footer.ned[dd].hi) -
			  dom[dd];
		if (flo[dd] > bx->hi[dd] || fhi[dd] < bx->lo[dd])
			*meets = false;
		if (flo[dd] > bx->lo[dd] || fhi[dd] < bx->hi[dd])
			*covers = false;
	}
}

/* Widens b by the minimum and maximum of every tile of f (dense, its
 * domain [flo, fhi] in rel coordinates) that meets box, from its tile
 * statistics st. False: too many tiles, or statistics that do not match
 * the fragment's tiles (no bounds known). */
static bool frag_widen_tiles(const struct tfs_schema *s,
			     const struct tfs_fragment *f,
			     const struct tfs_slot_stats *st,
			     const uint64_t *flo, const uint64_t *fhi,
			     const struct box *bx, const uint64_t *ext,
			     struct tfs_cond_bounds *b, uint8_t bound_bytes[2][8],
			     uint8_t type, bool *have)
{
	uint32_t dims = s->dim_num;
	size_t size = tfs_datatype_size(type);
	uint64_t tlo[MAX_DIMS], tn[MAX_DIMS], stride[MAX_DIMS], klo[MAX_DIMS],
		khi[MAX_DIMS], kk[MAX_DIMS], count = 1, sd = 1;

	/* Tiles of f meeting the box, numbered over f's tile box in tile
	 * order. */
	for (uint32_t dd = 0; dd < dims; dd++) {
		uint64_t lo = flo[dd] > bx->lo[dd] ? flo[dd] : bx->lo[dd];
		uint64_t hi = fhi[dd] < bx->hi[dd] ? fhi[dd] : bx->hi[dd];

		tlo[dd] = flo[dd] / ext[dd];
		tn[dd] = fhi[dd] / ext[dd] - tlo[dd] + 1;
		klo[dd] = lo / ext[dd];
		khi[dd] = hi / ext[dd];
		if (__builtin_mul_overflow(count, khi[dd] - klo[dd] + 1,
					   &count))
			return false;
	}
	if (count > MAX_BAND_TILES)
		return false;
	for (uint32_t n = 0; n < dims; n++) {
		uint32_t dd = s->tile_order == TFS_COL_MAJOR ? n
							     : dims - 1 - n;

		stride[dd] = sd;
		sd *= tn[dd];
	}
	memcpy(kk, klo, dims * sizeof(*kk));
	for (;;) {
		uint64_t t = 0;
		uint32_t dd;

		for (dd = 0; dd < dims; dd++)
			t += (kk[dd] - tlo[dd]) * stride[dd];
		if (t >= f->tile_num)
			return false;
		widen(b, bound_bytes, type, st->mins + t * size,
		      st->maxes + t * size, have);
		for (dd = dims; dd-- > 0;) {
			if (++kk[dd] <= khi[dd])
				break;
			kk[dd] = klo[dd];
		}
		if (dd == UINT32_MAX)
			return true;
	}
}

/* Bounds of attribute field k over the cells of box (dense). False: no
 * bounds known (anything may be there). */
static bool dense_attr_bounds(struct tfs_query *q, struct tfs__where *w,
			      size_t k, const struct box *bx,
			      const uint64_t *dom, const uint64_t *ext)
{
	const struct tfs_schema *s = q->schema;
	const struct tfs_attr *cur = &s->attrs[w->cf_attr[k]];
	struct tfs_arraydir *dir = q->dir;
	struct tfs_cond_bounds *b = &w->bounds[k];
	bool have = false, covered = false;
	size_t size = tfs_datatype_size(cur->type);

	for (size_t i = 0; i < dir->fragment_num; i++) {
		struct tfs_fragment *f = dir->fragments[i];
		const struct tfs_schema *fs = f->schema;
		const struct tfs_slot_stats *st;
		uint64_t flo[MAX_DIMS], fhi[MAX_DIMS];
		bool meets, covers;
		struct tfs_diag d;
		int slot;

		if (f->footer.empty || !f->footer.ned)
			continue;
		if (!f->footer.dense || f->footer.has_timestamps)
			return false;
		frag_rel_box(s, f, bx, dom, flo, fhi, &meets, &covers);
		if (!meets)
			continue;
		slot = tfs_schema_attr_index(fs, cur->name);
		if (slot < 0)
			continue; /* its cells there hold the fill value */
		if (covers)
			covered = true;
		if (fs->attrs[slot].type != cur->type || fs->attrs[slot].var ||
		    fs->attrs[slot].cell_val_num != 1 ||
		    tfs__attr_lossy(&fs->attrs[slot]))
			return false;
		tfs_diag_init(&d);
		if (tfs_fragment_slot_stats(dir, f, (uint32_t)slot, &st, &d) ||
		    !st->mins)
			return false;
		if (!frag_widen_tiles(s, f, st, flo, fhi, bx, ext, b,
				      w->bound_bytes[k], cur->type, &have))
			return false;
	}
	if (!covered && (!cur->nullable || cur->fill_valid) &&
	    cur->fill_size >= size)
		widen(b, w->bound_bytes[k], cur->type, cur->fill, cur->fill,
		      &have);
	b->known = true;
	b->empty = !have;
	return true;
}

/* Whether some cell of box may match (dense). */
static bool dense_box_may_match(struct tfs_query *q, struct tfs__where *w,
				const struct box *bx, const uint64_t *dom,
				const uint64_t *ext)
{
	const struct tfs_schema *s = q->schema;

	for (size_t k = 0; k < w->cf_num; k++) {
		struct tfs_cond_bounds *b = &w->bounds[k];

		memset(b, 0, sizeof(*b));
		if (w->cf_dim[k] >= 0) {
			int dd = w->cf_dim[k];
			const struct tfs_dim *dim = &s->dims[dd];
			size_t size = tfs_datatype_size(dim->type);

			tfs_put_uint(w->bound_bytes[k][0], size,
				     bx->lo[dd] + dom[dd]);
			tfs_put_uint(w->bound_bytes[k][1], size,
				     bx->hi[dd] + dom[dd]);
			b->lo = w->bound_bytes[k][0];
			b->hi = w->bound_bytes[k][1];
			b->known = true;
		} else if (stats_usable(&w->cf[k]) &&
			   !dense_attr_bounds(q, w, k, bx, dom, ext)) {
			memset(b, 0, sizeof(*b));
		}
	}
	return tfs_cond_may_match(w->cond, w->cf, w->bounds);
}

/* Cuts the (narrowed) dense subarray into runs of bands along dimension
 * 0 that may hold a match. */
static enum tfs_err dense_runs(struct tfs_query *q, struct tfs__where *w,
			       struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;
	uint32_t dims = s->dim_num;
	uint64_t dom[MAX_DIMS], ext[MAX_DIMS], b0, b1;
	struct box bx;
	size_t cap = 0;
	bool prune = dims <= MAX_DIMS;

	for (uint32_t k = 0; k < dims && prune; k++) {
		const struct tfs_dim *dim = &s->dims[k];

		if (dim->var || !dim->has_domain || !dim->has_extent ||
		    is_float_type(dim->type)) {
			prune = false;
			break;
		}
		dom[k] = tfs__raw_of(dim->type, dim->domain[0]);
		ext[k] = tfs__raw_of(dim->type, dim->extent);
		if (ext[k] == 0)
			prune = false;
		bx.lo[k] = tfs__raw_of(dim->type, w->sub[k].lo) - dom[k];
		bx.hi[k] = tfs__raw_of(dim->type, w->sub[k].hi) - dom[k];
	}
	if (prune) {
		b0 = bx.lo[0] / ext[0];
		b1 = bx.hi[0] / ext[0];
		if (b1 - b0 >= MAX_BANDS)
			prune = false;
	}
	if (!prune) {
		w->runs = tfs_callocn(1, sizeof(*w->runs));
		if (!w->runs)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		w->runs[0].lo = tfs__raw_of(s->dims[0].type, w->sub[0].lo);
		w->runs[0].hi = tfs__raw_of(s->dims[0].type, w->sub[0].hi);
		w->run_num = 1;
		return TFS_E_OK;
	}
	{
		uint64_t sub_lo0 = bx.lo[0], sub_hi0 = bx.hi[0];
		bool open = false;

		for (uint64_t b = b0; b <= b1; b++) {
			bx.lo[0] = b * ext[0] > sub_lo0 ? b * ext[0] : sub_lo0;
			bx.hi[0] = b * ext[0] + (ext[0] - 1) < sub_hi0
					   ? b * ext[0] + (ext[0] - 1)
					   : sub_hi0;
			if (!dense_box_may_match(q, w, &bx, dom, ext)) {
				open = false;
				continue;
			}
			if (open) {
				w->runs[w->run_num - 1].hi = bx.hi[0] + dom[0];
				continue;
			}
			if (tfs_grow(&w->runs, &cap, w->run_num + 1,
				     sizeof(*w->runs)))
				return tfs_fail(d, TFS_E_NOMEM,
						"out of memory");
			w->runs[w->run_num].lo = bx.lo[0] + dom[0];
			w->runs[w->run_num].hi = bx.hi[0] + dom[0];
			w->run_num++;
			open = true;
		}
	}
	return TFS_E_OK;
}

/* ---- Sparse tiles ------------------------------------------------------- */

bool tfs__boxes_meet(const struct tfs_schema *s, const struct tfs_range *a,
		     const struct tfs_range *b)
{
	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];

		if (dim->var) {
			if (tfs_bytes_cmp(a[k].lo, (size_t)a[k].lo_len, b[k].hi,
					  (size_t)b[k].hi_len) > 0 ||
			    tfs_bytes_cmp(b[k].lo, (size_t)b[k].lo_len, a[k].hi,
					  (size_t)a[k].hi_len) > 0)
				return false;
		} else if (tfs_value_cmp(dim->type, a[k].lo, b[k].hi) > 0 ||
			   tfs_value_cmp(dim->type, b[k].lo, a[k].hi) > 0) {
			return false;
		}
	}
	return true;
}

static bool sparse_tile_may_match(void *arg, const struct tfs_fragment *f,
				  uint64_t tile, const struct tfs_range *box)
{
	struct tfs_query *q = arg;
	struct tfs__where *w = q->where;
	const struct tfs_schema *s = q->schema;
	struct tfs_arraydir *dir = q->dir;

	if (!s->allows_dups) {
		for (size_t i = 0; i < dir->fragment_num; i++) {
			const struct tfs_fragment *o = dir->fragments[i];

			if (o == f || o->footer.empty || !o->footer.ned)
				continue;
			if (tfs__boxes_meet(s, box, o->footer.ned))
				return true;
		}
	}
	for (size_t k = 0; k < w->cf_num; k++) {
		struct tfs_cond_bounds *b = &w->bounds[k];

		memset(b, 0, sizeof(*b));
		if (w->cf_dim[k] >= 0) {
			const struct tfs_dim *dim = &s->dims[w->cf_dim[k]];

			if (dim->var)
				continue;
			b->lo = box[w->cf_dim[k]].lo;
			b->hi = box[w->cf_dim[k]].hi;
			b->known = true;
		} else if (stats_usable(&w->cf[k])) {
			const struct tfs_attr *cur = &s->attrs[w->cf_attr[k]];
			const struct tfs_schema *fs = f->schema;
			const struct tfs_slot_stats *st;
			struct tfs_diag d;
			size_t size = tfs_datatype_size(cur->type);
			int slot = tfs_schema_attr_index(fs, cur->name);

			if (slot < 0 || fs->attrs[slot].type != cur->type ||
			    fs->attrs[slot].var ||
			    fs->attrs[slot].cell_val_num != 1 ||
			    tfs__attr_lossy(&fs->attrs[slot]) ||
			    tile >= f->tile_num)
				continue;
			tfs_diag_init(&d);
			if (tfs_fragment_slot_stats(dir,
						    (struct tfs_fragment *)f,
						    (uint32_t)slot, &st, &d) ||
			    !st->mins)
				continue;
			b->lo = st->mins + tile * size;
			b->hi = st->maxes + tile * size;
			b->known = true;
			/* An all-NULL tile has min above max. */
			b->empty = tfs_value_cmp(cur->type, b->lo, b->hi) > 0 &&
				   !is_float_type(cur->type);
		}
	}
	return tfs_cond_may_match(w->cond, w->cf, w->bounds);
}

/* ---- Reading ------------------------------------------------------------ */

static enum tfs_err open_inner(struct tfs_query *q, struct tfs__where *w,
			       struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;
	struct tfs_query_opts o;
	struct tfs_range *sub = w->sub;
	uint8_t lo[8], hi[8];
	struct tfs_range first;
	enum tfs_err e;

	memset(&o, 0, sizeof(o));
	o.fields = w->names;
	o.field_num = w->name_num;
	o.batch_cells = w->inner_batch;
	if (w->dense) {
		size_t size = tfs_datatype_size(s->dims[0].type);

		first = sub[0];
		tfs_put_uint(lo, size, w->runs[w->run_i].lo);
		tfs_put_uint(hi, size, w->runs[w->run_i].hi);
		sub[0].lo = lo;
		sub[0].hi = hi;
	}
	o.subarray = sub;
	e = w->iq->open(q->array, &o, w->dense ? NULL : sparse_tile_may_match,
			q, &w->inner, d);
	if (w->dense)
		sub[0] = first;
	return e;
}

static void cell_of(const struct tfs_column *c, uint64_t i, uint64_t cs,
		    struct tfs_cond_value *v)
{
	if (c->var) {
		v->p = c->data + c->offsets[i];
		v->len = c->offsets[i + 1] - c->offsets[i];
	} else {
		v->p = c->data + i * cs;
		v->len = cs;
	}
	v->valid = !c->nullable || c->validity[i];
}

/* Appends cells [i0, i1) of inner column c to output field j. */
static enum tfs_err copy_run(struct tfs_query *q, size_t j,
			     const struct tfs_column *c, uint64_t i0,
			     uint64_t i1)
{
	struct tfs_out_column *o = &q->cols[j];
	uint64_t cs = q->fields[j].cell_size;

	if (c->var) {
		uint64_t base = o->data.len;

		for (uint64_t i = i0; i < i1; i++)
			if (tfs_buf_append_u64(&o->offsets,
					       base + c->offsets[i] -
						       c->offsets[i0]))
				return TFS_E_NOMEM;
		if (tfs_buf_append(&o->data, c->data + c->offsets[i0],
				   (size_t)(c->offsets[i1] - c->offsets[i0])))
			return TFS_E_NOMEM;
	} else if (tfs_buf_append(&o->data, c->data + i0 * cs,
				  (size_t)((i1 - i0) * cs))) {
		return TFS_E_NOMEM;
	}
	if (q->fields[j].nullable &&
	    tfs_buf_append(&o->validity, c->validity + i0, (size_t)(i1 - i0)))
		return TFS_E_NOMEM;
	return TFS_E_OK;
}

/* Evaluates every cell of inner batch b and appends the runs of matching
 * cells to q's output, whole runs at a time. */
static enum tfs_err keep_matches(struct tfs_query *q, struct tfs__where *w,
				 const struct tfs_batch *b, struct tfs_diag *d)
{
	uint64_t run = 0;
	bool in = false;

	for (uint64_t i = 0; i <= b->cell_num; i++) {
		bool match = false;

		if (i < b->cell_num) {
			for (size_t k = 0; k < w->cf_num; k++) {
				const struct tfs_column *c =
					&b->columns[w->cf_col[k]];

				cell_of(c, i,
					(uint64_t)tfs_datatype_size(c->type) *
						c->cell_val_num,
					&w->vals[k]);
			}
			match = tfs_cond_eval(w->cond, w->cf, w->vals);
		}
		if (match && !in) {
			run = i;
			in = true;
		} else if (!match && in) {
			for (size_t j = 0; j < q->field_num; j++)
				if (copy_run(q, j, &b->columns[j], run, i))
					return tfs_fail(d, TFS_E_NOMEM,
							"out of memory");
			q->batch_cell_num += i - run;
			in = false;
		}
	}
	return TFS_E_OK;
}

static enum tfs_err where_next(struct tfs_query *q, struct tfs_diag *d)
{
	struct tfs__where *w = q->where;
	const struct tfs_batch *b;
	enum tfs_err e;

	for (;;) {
		if (!w->inner) {
			if (w->empty || w->run_i >= w->run_num)
				return TFS_E_OK;
			if ((e = open_inner(q, w, d)))
				return e;
		}
		if ((e = w->iq->next(w->inner, &b, d)))
			return e;
		if (!b) {
			w->iq->close(w->inner);
			w->inner = NULL;
			w->run_i++;
			continue;
		}
		if ((e = keep_matches(q, w, b, d)))
			return e;
		if (q->batch_cell_num)
			return TFS_E_OK;
	}
}

static void where_free(struct tfs_query *q)
{
	struct tfs__where *w = q->where;

	if (!w)
		return;
	if (w->inner)
		w->iq->close(w->inner);
	tfs_cond_free(w->cond);
	tfs_condition_release(&w->qc);
	tfs_free(w->cf);
	tfs_free(w->cf_dim);
	tfs_free(w->cf_attr);
	tfs_free(w->cf_col);
	tfs_free(w->vals);
	tfs_free(w->bounds);
	tfs_free(w->bound_bytes);
	tfs_free(w->names);
	tfs_free(w->sub);
	tfs_free(w->sub_bytes);
	tfs_free(w->runs);
	tfs_free(w);
	q->where = NULL;
}

static const struct tfs_reader_ops where_ops = {
	.next = where_next,
	.free = where_free,
};

/* The condition's fields: types, places, inner columns. */
static enum tfs_err map_fields(struct tfs_query *q, struct tfs__where *w,
			       struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;
	size_t n = tfs_cond_field_count(w->cond);
	size_t cap = q->field_num + n;

	w->cf_num = n;
	w->cf = tfs_callocn(n ? n : 1, sizeof(*w->cf));
	w->cf_dim = tfs_callocn(n ? n : 1, sizeof(*w->cf_dim));
	w->cf_attr = tfs_callocn(n ? n : 1, sizeof(*w->cf_attr));
	w->cf_col = tfs_callocn(n ? n : 1, sizeof(*w->cf_col));
	w->vals = tfs_callocn(n ? n : 1, sizeof(*w->vals));
	w->bounds = tfs_callocn(n ? n : 1, sizeof(*w->bounds));
	w->bound_bytes = tfs_callocn(n ? n : 1, sizeof(*w->bound_bytes));
	w->names = tfs_callocn(cap ? cap : 1, sizeof(*w->names));
	if (!w->cf || !w->cf_dim || !w->cf_attr || !w->cf_col || !w->vals ||
	    !w->bounds || !w->bound_bytes || !w->names)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t j = 0; j < q->field_num; j++)
		w->names[w->name_num++] = q->fields[j].name;
	for (size_t k = 0; k < n; k++) {
		const char *name = tfs_cond_field_name(w->cond, k);
		int dim = tfs_schema_dim_index(s, name);
		int attr = dim < 0 ? tfs_schema_attr_index(s, name) : -1;
		size_t col;

		if (dim < 0 && attr < 0)
			return tfs_fail(d, TFS_E_NOT_FOUND,
					"array '%s': condition on '%s', which "
					"is no attribute or dimension",
					q->dir->path, name);
		w->cf_dim[k] = dim;
		w->cf_attr[k] = attr;
		if (dim >= 0) {
			w->cf[k].type = s->dims[dim].type;
			w->cf[k].cell_val_num = s->dims[dim].cell_val_num;
			w->cf[k].var = s->dims[dim].var;
		} else {
			w->cf[k].type = s->attrs[attr].type;
			w->cf[k].cell_val_num = s->attrs[attr].cell_val_num;
			w->cf[k].var = s->attrs[attr].var;
			w->cf[k].nullable = s->attrs[attr].nullable;
		}
		for (col = 0; col < w->name_num; col++)
			if (strcmp(w->names[col], name) == 0)
				break;
		if (col == w->name_num)
			w->names[w->name_num++] = name;
		w->cf_col[k] = col;
	}
	return tfs_cond_check(w->cond, w->cf, d);
}

enum tfs_err tfs__where_open(struct tfs_query *q,
			     const struct tfs_query_opts *opts,
			     const struct tfs__inner_queries *inner,
			     struct tfs_diag *d)
{
	const struct tfs_schema *s = q->schema;
	struct tfs__where *w;
	enum tfs_err e;

	w = tfs_callocn(1, sizeof(*w));
	if (!w)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	w->iq = inner;
	q->where = w;
	q->reader_ops = &where_ops;
	q->total_cells = UINT64_MAX;
	w->dense = s->array_type == TFS_DENSE;
	w->inner_batch = q->batch_cells;
	if ((e = tfs_where_to_qc(&w->qc, opts->condition, d)))
		return e;
	if ((e = tfs_cond_compile(&w->qc, &w->cond, d)) ||
	    (e = map_fields(q, w, d)))
		return e;
	w->sub = tfs_callocn(s->dim_num, sizeof(*w->sub));
	w->sub_bytes = tfs_callocn(s->dim_num, sizeof(*w->sub_bytes));
	if (!w->sub || !w->sub_bytes)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < s->dim_num; k++) {
		w->sub[k] = q->sub[k];
		if (s->dims[k].var)
			continue;
		memcpy(w->sub_bytes[k][0], q->sub[k].lo,
		       (size_t)q->sub[k].lo_len);
		memcpy(w->sub_bytes[k][1], q->sub[k].hi,
		       (size_t)q->sub[k].hi_len);
		w->sub[k].lo = w->sub_bytes[k][0];
		w->sub[k].hi = w->sub_bytes[k][1];
	}
	narrow(w, s);
	if (w->empty)
		return TFS_E_OK;
	if (w->dense)
		return dense_runs(q, w, d);
	w->run_num = 1;
	return TFS_E_OK;
}
