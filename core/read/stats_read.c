/* Statistics of one attribute over a query's cells (tfs_query_stats,
 * tilefs.h): count, NULL count, bounds and sum.
 *
 * Tiles that fragment metadata describes exactly are taken from it
 * without being read (fragment.md §6): the attribute holds integers, is
 * not nullable and has no lossy filter (so min, max and sum are those of
 * the values a read returns, and integer sums do not depend on the order
 * of addition), the tile lies wholly inside the subarray and no other
 * fragment, delete or per-cell time touches it, and its sum did not
 * saturate. Dense arrays are looked at in bands of one tile extent along
 * dimension 0 (a band qualifies when one fragment covers it with whole
 * tiles and no newer fragment meets it); sparse tiles one by one through
 * the reader's tile hook. Everything else is read and added cell by cell,
 * so the result equals a full computation. */
#include "tfs_read.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_fragment.h"

#define MAX_DIMS 128
#define MAX_BANDS (UINT64_C(1) << 22)
#define MAX_BAND_TILES 65536

__extension__ typedef __int128 i128;

struct acc {
	struct tfs_field_stats *out;
	const struct tfs_attr *at;
	uint8_t type;
	bool numeric; /* single-value number: compared by value, summed */
	bool is_float, is_signed;
	bool meta_ok; /* tiles may come from metadata */
	i128 isum;
	double fsum;
	struct tfs_buf min, max;
	/* sparse hook */
	struct tfs_query *q;
	const struct tfs_range *sub;
	int attr;
	enum tfs_err err;
};

static void put_bound(struct tfs_buf *b, const uint8_t *p, uint64_t len,
		      struct acc *ac)
{
	b->len = 0;
	if (tfs_buf_append(b, p, (size_t)len))
		ac->err = TFS_E_NOMEM;
}

static int value_cmp(const struct acc *ac, const uint8_t *a, uint64_t alen,
		     const uint8_t *b, uint64_t blen)
{
	if (ac->numeric)
		return tfs_value_cmp(ac->type, a, b);
	return tfs_bytes_cmp(a, (size_t)alen, b, (size_t)blen);
}

/* Widens the bounds by [lo, hi] (NaN bounds of floats are skipped). */
static void add_bounds(struct acc *ac, const uint8_t *lo, uint64_t lo_len,
		       const uint8_t *hi, uint64_t hi_len)
{
	struct tfs_field_stats *o = ac->out;

	if (!o->has_bounds) {
		put_bound(&ac->min, lo, lo_len, ac);
		put_bound(&ac->max, hi, hi_len, ac);
		o->has_bounds = true;
		return;
	}
	if (value_cmp(ac, lo, lo_len, ac->min.data, ac->min.len) < 0)
		put_bound(&ac->min, lo, lo_len, ac);
	if (value_cmp(ac, hi, hi_len, ac->max.data, ac->max.len) > 0)
		put_bound(&ac->max, hi, hi_len, ac);
}

static void add_cell(struct acc *ac, const uint8_t *p, uint64_t len, bool valid)
{
	ac->out->count++;
	if (!valid) {
		ac->out->null_count++;
		return;
	}
	if (!ac->numeric) {
		add_bounds(ac, p, len, p, len);
		return;
	}
	if (ac->is_float) {
		double v = tfs_value_as_f64(ac->type, p);

		ac->fsum += v;
		if (isnan(v))
			return;
	} else if (ac->is_signed) {
		ac->isum += tfs_value_as_i64(ac->type, p);
	} else {
		ac->isum += tfs_value_as_u64(ac->type, p);
	}
	add_bounds(ac, p, len, p, len);
}

/* Tile t of f from metadata; false when its statistics cannot stand for
 * its cells (missing, or a saturated sum). */
static bool tile_from_meta(struct acc *ac, struct tfs_fragment *f, uint64_t t,
			   uint64_t cells, bool apply)
{
	const struct tfs_schema *fs = f->schema;
	const struct tfs_slot_stats *st;
	struct tfs_diag d;
	size_t size = tfs_datatype_size(ac->type);
	int slot = tfs_schema_attr_index(fs, ac->at->name);
	const uint8_t *sum;

	if (slot < 0 || fs->attrs[slot].type != ac->type ||
	    fs->attrs[slot].var || fs->attrs[slot].nullable ||
	    fs->attrs[slot].cell_val_num != 1 ||
	    tfs__attr_lossy(&fs->attrs[slot]) || t >= f->tile_num ||
	    f->footer.has_timestamps)
		return false;
	tfs_diag_init(&d);
	if (tfs_fragment_slot_stats(ac->q->dir, f, (uint32_t)slot, &st, &d) ||
	    !st->mins || !st->sums)
		return false;
	sum = st->sums + 8 * t;
	if (ac->is_signed) {
		int64_t v = (int64_t)tfs_get_u64(sum);

		if (v == INT64_MAX || v == INT64_MIN)
			return false;
		if (apply)
			ac->isum += v;
	} else {
		uint64_t v = tfs_get_u64(sum);

		if (v == UINT64_MAX)
			return false;
		if (apply)
			ac->isum += v;
	}
	if (tfs_value_cmp(ac->type, st->mins + t * size, st->maxes + t * size) >
	    0)
		return false;
	if (apply) {
		add_bounds(ac, st->mins + t * size, size, st->maxes + t * size,
			   size);
		ac->out->count += cells;
		ac->out->tiles_from_metadata++;
	}
	return true;
}

/* ---- Sparse: the reader's tile hook ------------------------------------- */

static bool box_inside(const struct tfs_schema *s, const struct tfs_range *in,
		       const struct tfs_range *out)
{
	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];

		if (dim->var)
			return false;
		if (tfs_value_cmp(dim->type, in[k].lo, out[k].lo) < 0 ||
		    tfs_value_cmp(dim->type, in[k].hi, out[k].hi) > 0)
			return false;
	}
	return true;
}

/* Reads tile `tile` unless metadata gives it (then adds it here). */
static bool sparse_tile_hook(void *arg, const struct tfs_fragment *cf,
			     uint64_t tile, const struct tfs_range *box)
{
	struct acc *ac = arg;
	struct tfs_query *q = ac->q;
	struct tfs_fragment *f = (struct tfs_fragment *)cf;
	struct tfs_arraydir *dir = q->dir;

	if (!ac->meta_ok || dir->delete_num ||
	    !box_inside(q->schema, box, ac->sub))
		return true;
	for (size_t i = 0; i < dir->fragment_num; i++) {
		const struct tfs_fragment *o = dir->fragments[i];

		if (o == cf || o->footer.empty || !o->footer.ned)
			continue;
		if (tfs__boxes_meet(q->schema, box, o->footer.ned))
			return true;
	}
	return !tile_from_meta(ac, f, tile, tfs_fragment_tile_cells(f, tile),
			       true);
}

/* ---- Dense: bands ------------------------------------------------------- */

struct dense_geo {
	uint32_t dims;
	uint64_t dom[MAX_DIMS], ext[MAX_DIMS];
	uint64_t lo[MAX_DIMS], hi[MAX_DIMS]; /* the band (rel) */
	uint64_t tile_cells;
};

/* The newest fragment meeting band g, when it is dense and covers the
 * band (its domain in band coordinates: [flo, fhi]); else NULL. */
static struct tfs_fragment *band_cover(const struct tfs_query *q,
				       const struct dense_geo *g,
				       uint64_t *flo, uint64_t *fhi)
{
	const struct tfs_schema *s = q->schema;
	struct tfs_arraydir *dir = q->dir;

	for (size_t i = dir->fragment_num; i-- > 0;) {
		struct tfs_fragment *o = dir->fragments[i];
		bool meets = true;

		if (o->footer.empty || !o->footer.ned)
			continue;
		for (uint32_t d = 0; d < g->dims; d++) {
			flo[d] = tfs__raw_of(s->dims[d].type,
					     o->footer.ned[d].lo) -
				 g->dom[d];
			fhi[d] = tfs__raw_of(s->dims[d].type,
					     o->footer.ned[d].hi) -
				 g->dom[d];
			if (flo[d] > g->hi[d] || fhi[d] < g->lo[d])
				meets = false;
		}
		if (!meets)
			continue;
		if (!o->footer.dense)
			return NULL;
		for (uint32_t d = 0; d < g->dims; d++)
			if (flo[d] > g->lo[d] || fhi[d] < g->hi[d])
				return NULL;
		return o;
	}
	return NULL;
}

/* Adds band g from metadata when one fragment covers it with whole tiles
 * that qualify; false (nothing added) otherwise. */
static bool dense_band_meta(struct acc *ac, const struct dense_geo *g)
{
	const struct tfs_schema *s = ac->q->schema;
	struct tfs_fragment *f;
	uint64_t flo[MAX_DIMS], fhi[MAX_DIMS], tlo[MAX_DIMS], tn[MAX_DIMS],
		stride[MAX_DIMS], klo[MAX_DIMS], khi[MAX_DIMS], kk[MAX_DIMS];
	uint64_t count = 1, sd = 1;

	for (uint32_t d = 0; d < g->dims; d++)
		if (g->lo[d] % g->ext[d] || (g->hi[d] + 1) % g->ext[d])
			return false;
	/* The newest fragment meeting the band must cover it. */
	f = band_cover(ac->q, g, flo, fhi);
	if (!f)
		return false;
	for (uint32_t d = 0; d < g->dims; d++) {
		tlo[d] = flo[d] / g->ext[d];
		tn[d] = fhi[d] / g->ext[d] - tlo[d] + 1;
		klo[d] = g->lo[d] / g->ext[d];
		khi[d] = g->hi[d] / g->ext[d];
		if (__builtin_mul_overflow(count, khi[d] - klo[d] + 1, &count))
			return false;
	}
	if (count > MAX_BAND_TILES)
		return false;
	for (uint32_t n = 0; n < g->dims; n++) {
		uint32_t d = s->tile_order == TFS_COL_MAJOR ? n
							    : g->dims - 1 - n;

		stride[d] = sd;
		sd *= tn[d];
	}
	/* Check every tile first, then add them: all or nothing. */
	for (int pass = 0; pass < 2; pass++) {
		memcpy(kk, klo, g->dims * sizeof(*kk));
		for (;;) {
			uint64_t t = 0;
			uint32_t d;

			for (d = 0; d < g->dims; d++)
				t += (kk[d] - tlo[d]) * stride[d];
			if (!tile_from_meta(ac, f, t, g->tile_cells, pass == 1))
				return false;
			for (d = g->dims; d-- > 0;) {
				if (++kk[d] <= khi[d])
					break;
				kk[d] = klo[d];
			}
			if (d == UINT32_MAX)
				break;
		}
	}
	return true;
}

/* Reads the cells of q's query with subarray sub and adds them. */
static enum tfs_err add_read(struct acc *ac, struct tfs_array *a,
			     const struct tfs_query_opts *opts,
			     const struct tfs_range *sub, bool hook,
			     struct tfs_diag *d)
{
	struct tfs_query_opts o = *opts;
	struct tfs_query *q;
	const struct tfs_batch *b;
	enum tfs_err e;

	o.subarray = sub;
	e = tfs__query_open_hooked(a, &o, hook ? sparse_tile_hook : NULL, ac,
				   &q, d);
	if (e)
		return e;
	while (!(e = tfs_query_next(q, &b, d)) && b) {
		const struct tfs_column *c = &b->columns[0];
		uint64_t cs = c->var ? 0
				     : (uint64_t)tfs_datatype_size(c->type) *
					       c->cell_val_num;

		for (uint64_t i = 0; i < b->cell_num; i++) {
			const uint8_t *p;
			uint64_t len;

			if (c->var) {
				p = c->data + c->offsets[i];
				len = c->offsets[i + 1] - c->offsets[i];
			} else {
				p = c->data + i * cs;
				len = cs;
			}
			add_cell(ac, p, len, !c->nullable || c->validity[i]);
		}
		ac->out->cells_decoded += b->cell_num;
	}
	tfs_query_close(q);
	return e;
}

static enum tfs_err dense_stats(struct acc *ac, struct tfs_array *a,
				const struct tfs_query_opts *opts,
				const struct tfs_range *sub, struct tfs_diag *d)
{
	const struct tfs_schema *s = ac->q->schema;
	struct dense_geo g;
	struct tfs_range rs[MAX_DIMS];
	uint8_t lo[8], hi[8];
	uint64_t sub_lo0, sub_hi0, b0, b1, run_lo = 0;
	bool open = false;
	size_t size;
	enum tfs_err e;

	g.dims = s->dim_num;
	if (g.dims > MAX_DIMS || !ac->meta_ok)
		return add_read(ac, a, opts, sub, false, d);
	g.tile_cells = tfs_schema_tile_cells(s);
	for (uint32_t k = 0; k < g.dims; k++) {
		const struct tfs_dim *dim = &s->dims[k];

		if (dim->var || !dim->has_domain || !dim->has_extent ||
		    tfs_datatype_class(dim->type) == TFS_CLASS_FLOAT)
			return add_read(ac, a, opts, sub, false, d);
		g.dom[k] = tfs__raw_of(dim->type, dim->domain[0]);
		g.ext[k] = tfs__raw_of(dim->type, dim->extent);
		if (g.ext[k] == 0 || g.tile_cells == 0)
			return add_read(ac, a, opts, sub, false, d);
		g.lo[k] = tfs__raw_of(dim->type, sub[k].lo) - g.dom[k];
		g.hi[k] = tfs__raw_of(dim->type, sub[k].hi) - g.dom[k];
	}
	sub_lo0 = g.lo[0];
	sub_hi0 = g.hi[0];
	b0 = sub_lo0 / g.ext[0];
	b1 = sub_hi0 / g.ext[0];
	if (b1 - b0 >= MAX_BANDS)
		return add_read(ac, a, opts, sub, false, d);
	memcpy(rs, sub, g.dims * sizeof(*rs));
	size = tfs_datatype_size(s->dims[0].type);
	for (uint64_t b = b0;; b++) {
		bool meta = false;

		if (b <= b1) {
			g.lo[0] = b * g.ext[0] > sub_lo0 ? b * g.ext[0]
							 : sub_lo0;
			g.hi[0] = b * g.ext[0] + (g.ext[0] - 1) < sub_hi0
					  ? b * g.ext[0] + (g.ext[0] - 1)
					  : sub_hi0;
			meta = dense_band_meta(ac, &g);
			if (ac->err)
				return tfs_fail(d, ac->err, "out of memory");
		}
		if (!meta && b <= b1) {
			if (!open)
				run_lo = g.lo[0];
			open = true;
			continue;
		}
		if (open) {
			/* Decode the run of bands before this one. */
			uint64_t run_hi = b <= b1 ? g.lo[0] - 1 : sub_hi0;

			tfs_put_uint(lo, size, run_lo + g.dom[0]);
			tfs_put_uint(hi, size, run_hi + g.dom[0]);
			rs[0].lo = lo;
			rs[0].hi = hi;
			e = add_read(ac, a, opts, rs, false, d);
			if (e)
				return e;
			open = false;
		}
		if (b >= b1)
			break;
	}
	return TFS_E_OK;
}

void tfs_field_stats_release(struct tfs_field_stats *s)
{
	if (!s)
		return;
	tfs_free(s->min);
	tfs_free(s->max);
	memset(s, 0, sizeof(*s));
}

enum tfs_err tfs_query_stats(struct tfs_array *a,
			     const struct tfs_query_opts *opts,
			     struct tfs_field_stats *out, struct tfs_diag *d)
{
	const struct tfs_schema *s = a->dir->schema;
	struct tfs_query probe;
	struct acc ac;
	enum tfs_type_class k;
	const struct tfs_range *sub;
	enum tfs_err e;
	int ai;

	memset(out, 0, sizeof(*out));
	if (!opts || !opts->fields || opts->field_num != 1)
		return tfs_fail(d, TFS_E_INVALID,
				"statistics take exactly one attribute");
	ai = tfs_schema_attr_index(s, opts->fields[0]);
	if (ai < 0)
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"array '%s': no attribute '%s'", a->dir->path,
				opts->fields[0]);
	memset(&ac, 0, sizeof(ac));
	memset(&probe, 0, sizeof(probe));
	probe.array = a;
	probe.dir = a->dir;
	probe.schema = s;
	ac.q = &probe;
	ac.out = out;
	ac.at = &s->attrs[ai];
	ac.type = ac.at->type;
	ac.attr = ai;
	k = tfs_datatype_class(ac.type);
	ac.numeric = !ac.at->var && ac.at->cell_val_num == 1 &&
		     (k == TFS_CLASS_SIGNED || k == TFS_CLASS_UNSIGNED ||
		      k == TFS_CLASS_FLOAT);
	ac.is_float = k == TFS_CLASS_FLOAT;
	ac.is_signed = k == TFS_CLASS_SIGNED;
	ac.meta_ok = ac.numeric && !ac.is_float && !ac.at->nullable &&
		     !tfs__attr_lossy(ac.at) && !opts->condition;
	if (ac.numeric)
		out->sum_kind = ac.is_float ? TFS_SUM_FLOAT : TFS_SUM_INT;
	if (!opts->subarray && !a->has_ned)
		return TFS_E_OK; /* nothing written */
	sub = opts->subarray ? opts->subarray : a->ned;
	ac.sub = sub;
	tfs_buf_init(&ac.min, TFS_BUF_NO_MAX);
	tfs_buf_init(&ac.max, TFS_BUF_NO_MAX);
	if (s->array_type == TFS_DENSE && !opts->condition)
		e = dense_stats(&ac, a, opts, sub, d);
	else
		e = add_read(&ac, a, opts, sub, ac.meta_ok, d);
	if (!e && ac.err)
		e = tfs_fail(d, ac.err, "out of memory");
	if (e) {
		tfs_buf_release(&ac.min);
		tfs_buf_release(&ac.max);
		memset(out, 0, sizeof(*out));
		return e;
	}
	if (out->has_bounds) {
		out->min_len = ac.min.len;
		out->max_len = ac.max.len;
		out->min = tfs_memdup(ac.min.data, ac.min.len);
		out->max = tfs_memdup(ac.max.data, ac.max.len);
		if (!out->min || !out->max) {
			tfs_field_stats_release(out);
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		}
	}
	tfs_buf_release(&ac.min);
	tfs_buf_release(&ac.max);
	if (ac.numeric && ac.is_float) {
		out->sum_f = ac.fsum;
	} else if (ac.numeric) {
		out->sum_hi = (int64_t)(ac.isum >> 64);
		out->sum_lo = (uint64_t)ac.isum;
	}
	return TFS_E_OK;
}
