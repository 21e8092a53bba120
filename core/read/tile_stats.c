/* Tile statistics of an attribute over the visible fragments (tilefs.h,
 * "Tile statistics"): the per-tile mins, maxes, sums and null counts of
 * the fragment metadata (fragment.md §6) with each tile's box, read
 * without decoding a tile. */
#include "tfs_read.h"

#include <math.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"

/* Dimensions of a schema at most (format/schema.md). */
#define TFS_MAX_DIMS_STATS 128

void tfs_tile_stats_release(struct tfs_tile_stats *s)
{
	if (!s)
		return;
	tfs_free(s->tiles);
	tfs_free(s->coords);
	memset(s, 0, sizeof(*s));
}

/* A value of a numeric type as a double. */
static double num_at(uint8_t type, const uint8_t *p)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_FLOAT:
		return tfs_value_as_f64(type, p);
	case TFS_CLASS_SIGNED:
		return (double)tfs_value_as_i64(type, p);
	default:
		return (double)tfs_value_as_u64(type, p);
	}
}

/* A coordinate of an integer dimension as int64; false when it is not. */
static bool stat_coord(uint8_t type, const uint8_t *p, int64_t *out)
{
	if (tfs_datatype_class(type) == TFS_CLASS_SIGNED) {
		*out = tfs_value_as_i64(type, p);
		return true;
	}
	if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED &&
	    tfs_value_as_u64(type, p) <= INT64_MAX) {
		*out = (int64_t)tfs_value_as_u64(type, p);
		return true;
	}
	return false;
}

/* Fills the statistics of tile t from the fragment's cached lists
 * (tfs_fragment_slot_stats: each present list holds one entry per tile). */
static void stat_fill(const struct tfs_slot_stats *ss, uint8_t type,
		      uint64_t t, struct tfs_tile_stat *out)
{
	size_t w = tfs_datatype_size(type);

	if (ss->mins && ss->maxes) {
		out->min = num_at(type, ss->mins + t * w);
		out->max = num_at(type, ss->maxes + t * w);
		/* A tile of nulls only keeps the scan's start: min > max. */
		out->has_minmax = out->min <= out->max;
	}
	if (ss->sums) {
		uint64_t bits;
		double f;

		memcpy(&bits, ss->sums + t * 8, sizeof(bits));
		switch (tfs_datatype_class(type)) {
		case TFS_CLASS_FLOAT:
			memcpy(&f, &bits, sizeof(f));
			out->sum = f;
			break;
		case TFS_CLASS_SIGNED:
			out->sum = (double)(int64_t)bits;
			break;
		default:
			out->sum = (double)bits;
			break;
		}
		out->has_sum = isfinite(out->sum);
	}
	if (ss->null_counts) {
		out->nulls = ss->null_counts[t];
		if (out->nulls > out->cells)
			out->nulls = out->cells;
	}
}

/* The box of tile t of a dense fragment: the space tile clipped to the
 * fragment's non-empty domain; false when the domain is not usable. */
static bool dense_tile_box(const struct tfs_fragment *f, uint64_t t,
			   int64_t *lo, int64_t *hi, uint64_t *cells)
{
	const struct tfs_schema *s = f->schema;
	uint32_t nd = s->dim_num;
	int64_t tlo[TFS_MAX_DIMS_STATS], tnum[TFS_MAX_DIMS_STATS];

	*cells = 1;
	for (uint32_t k = 0; k < nd; k++) {
		const struct tfs_dim *dm = &s->dims[k];
		int64_t dlo, ext, nlo, nhi;

		if (!dm->has_extent ||
		    !stat_coord(dm->type, dm->domain[0], &dlo) ||
		    !stat_coord(dm->type, dm->extent, &ext) || ext <= 0 ||
		    !stat_coord(dm->type, f->footer.ned[k].lo, &nlo) ||
		    !stat_coord(dm->type, f->footer.ned[k].hi, &nhi) ||
		    nlo < dlo || nhi < nlo)
			return false;
		tlo[k] = (nlo - dlo) / ext;
		tnum[k] = (nhi - dlo) / ext - tlo[k] + 1;
	}
	/* Tile numbers run over the fragment's tile box in tile order. */
	for (uint32_t n = 0; n < nd; n++) {
		uint32_t k = s->tile_order == TFS_COL_MAJOR ? n : nd - 1 - n;
		const struct tfs_dim *dm = &s->dims[k];
		int64_t dlo, ext, nlo, nhi, idx;

		(void)stat_coord(dm->type, dm->domain[0], &dlo);
		(void)stat_coord(dm->type, dm->extent, &ext);
		(void)stat_coord(dm->type, f->footer.ned[k].lo, &nlo);
		(void)stat_coord(dm->type, f->footer.ned[k].hi, &nhi);
		idx = tlo[k] + (int64_t)(t % (uint64_t)tnum[k]);
		t /= (uint64_t)tnum[k];
		lo[k] = dlo + idx * ext;
		hi[k] = lo[k] + ext - 1;
		if (lo[k] < nlo)
			lo[k] = nlo;
		if (hi[k] > nhi)
			hi[k] = nhi;
		*cells *= (uint64_t)(hi[k] - lo[k] + 1);
	}
	return true;
}

static bool sparse_tile_box(const struct tfs_fragment *f,
			    const struct tfs_rtree *rt, uint64_t t, int64_t *lo,
			    int64_t *hi)
{
	uint32_t nd = f->schema->dim_num;

	if (t >= rt->leaf_num || rt->dim_num != nd)
		return false;
	for (uint32_t k = 0; k < nd; k++) {
		const struct tfs_range *r = &rt->leaves[t * nd + k];

		if (!stat_coord(f->schema->dims[k].type, r->lo, &lo[k]) ||
		    !stat_coord(f->schema->dims[k].type, r->hi, &hi[k]))
			return false;
	}
	return true;
}

/* Whether tiles of the schema s can be summarised: integer dimensions,
 * not too many. */
static enum tfs_err check_dims(const struct tfs_schema *s, struct tfs_diag *d)
{
	if (s->dim_num > TFS_MAX_DIMS_STATS)
		return tfs_fail(d, TFS_E_UNSUPPORTED, "%u dimensions",
				s->dim_num);
	for (uint32_t k = 0; k < s->dim_num; k++)
		if (!tfs_datatype_is_integer(s->dims[k].type) || s->dims[k].var)
			return tfs_fail(d, TFS_E_UNSUPPORTED,
					"dimension '%s' is not an integer",
					s->dims[k].name);
	return TFS_E_OK;
}

/* The tiles of fragment i (number i among the visible ones) into out,
 * from its tile box or R-tree and its statistics of attr. */
static enum tfs_err frag_tiles(struct tfs_arraydir *dir, size_t i,
			       const char *attr, struct tfs_tile_stats *out,
			       size_t *n, struct tfs_diag *d)
{
	struct tfs_fragment *f = dir->fragments[i];
	uint32_t nd = out->dim_num;
	const struct tfs_rtree *rt = NULL;
	const struct tfs_slot_stats *ss = NULL;
	const struct tfs_attr *at;
	enum tfs_err e;
	bool numeric;
	int fa;

	if (f->footer.empty || !f->tile_num || f->schema->dim_num != nd)
		return TFS_E_OK;
	fa = tfs_schema_attr_index(f->schema, attr);
	if (fa < 0)
		return TFS_E_OK;
	at = &f->schema->attrs[fa];
	numeric = !at->var && at->cell_val_num == 1 &&
		  tfs_datatype_class(at->type) <= TFS_CLASS_FLOAT &&
		  tfs_datatype_size(at->type) <= 8;
	if (!f->footer.dense && (e = tfs_fragment_rtree(dir, f, &rt, d)))
		return e;
	e = tfs_fragment_slot_stats(dir, f, (uint32_t)fa, &ss, d);
	for (uint64_t t = 0; !e && t < f->tile_num; t++) {
		struct tfs_tile_stat *ts = &out->tiles[*n];
		int64_t *lo = out->coords + *n * 2 * nd, *hi = lo + nd;
		bool ok;

		if (f->footer.dense) {
			ok = dense_tile_box(f, t, lo, hi, &ts->cells);
		} else {
			ok = sparse_tile_box(f, rt, t, lo, hi);
			ts->cells = tfs_fragment_tile_cells(f, t);
		}
		if (!ok)
			continue;
		ts->frag = (uint32_t)i;
		ts->lo = lo;
		ts->hi = hi;
		if (numeric)
			stat_fill(ss, at->type, t, ts);
		(*n)++;
	}
	return e;
}

enum tfs_err tfs_array_tile_stats(struct tfs_array *a, const char *attr,
				  struct tfs_tile_stats *out,
				  struct tfs_diag *d)
{
	struct tfs_arraydir *dir = a->dir;
	const struct tfs_schema *s = dir->schema;
	uint32_t nd = s->dim_num;
	size_t total = 0, n = 0;
	enum tfs_err e = TFS_E_OK;

	memset(out, 0, sizeof(*out));
	out->dim_num = nd;
	if (tfs_schema_attr_index(s, attr) < 0)
		return tfs_fail(d, TFS_E_NOT_FOUND, "no attribute '%s'", attr);
	if ((e = check_dims(s, d)))
		return e;
	for (size_t i = 0; i < dir->fragment_num; i++)
		if (!dir->fragments[i]->footer.empty)
			total += dir->fragments[i]->tile_num;
	if (total > ((size_t)1 << 26))
		return tfs_fail(d, TFS_E_TOO_BIG, "%zu tiles", total);
	out->tiles = tfs_callocn(total ? total : 1, sizeof(*out->tiles));
	out->coords =
		tfs_callocn(total ? total * 2 * nd : 1, sizeof(*out->coords));
	if (!out->tiles || !out->coords) {
		tfs_tile_stats_release(out);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; !e && i < dir->fragment_num; i++)
		e = frag_tiles(dir, i, attr, out, &n, d);
	if (e) {
		tfs_tile_stats_release(out);
		return e;
	}
	out->num = n;
	return TFS_E_OK;
}
