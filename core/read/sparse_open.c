/* Opening the sparse reader: the query's fields in each fragment's own
 * schema, the delete conditions that apply, and each visible fragment's
 * candidate tiles (R-tree against the subarray), sorted. */
#include "sparse_reader.h"

/* ---- Opening ----------------------------------------------------------- */

static bool ranges_meet(const struct sp_dim *dm, const struct tfs_range *m)
{
	struct sp_val lo, hi;

	val_set(&lo, dm, m->lo, m->lo_len);
	val_set(&hi, dm, m->hi, m->hi_len);
	return val_cmp(dm, &lo, &dm->sub_hi) <= 0 &&
	       val_cmp(dm, &dm->sub_lo, &hi) <= 0;
}

/* Whether box lies wholly inside the subarray. */
static bool box_inside(const struct sp_reader *r, const struct tfs_range *box)
{
	for (uint32_t k = 0; k < r->dim_num; k++) {
		const struct sp_dim *dm = &r->dims[k];
		struct sp_val lo, hi;

		val_set(&lo, dm, box[k].lo, box[k].lo_len);
		val_set(&hi, dm, box[k].hi, box[k].hi_len);
		if (val_cmp(dm, &lo, &dm->sub_lo) < 0 ||
		    val_cmp(dm, &hi, &dm->sub_hi) > 0)
			return false;
	}
	return true;
}

bool tfs__sp_box_meets(const struct sp_reader *r, const struct tfs_range *box)
{
	for (uint32_t k = 0; k < r->dim_num; k++)
		if (!ranges_meet(&r->dims[k], &box[k]))
			return false;
	return true;
}

static enum tfs_err add_load_slot(struct sp_frag *sf, uint32_t slot,
				  uint32_t *out, struct tfs_diag *d)
{
	struct tfs_slot_desc desc;
	enum tfs_err e;
	uint32_t *ns;
	struct tfs_slot_desc *nd;

	for (uint32_t i = 0; i < sf->load_num; i++) {
		if (sf->load_slot[i] == slot) {
			*out = i;
			return TFS_E_OK;
		}
	}
	e = tfs_slot_describe(sf->f, slot, &desc, d);
	if (e)
		return e;
	ns = tfs_reallocn(sf->load_slot, sf->load_num + 1, sizeof(*ns));
	if (!ns)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	sf->load_slot = ns;
	nd = tfs_reallocn(sf->load_desc, sf->load_num + 1, sizeof(*nd));
	if (!nd)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	sf->load_desc = nd;
	ns[sf->load_num] = slot;
	nd[sf->load_num] = desc;
	*out = sf->load_num++;
	return TFS_E_OK;
}

/* Requested attributes of the current schema in a fragment's schema: the
 * same name and kind (and cell size) or the fill value (read.md §8). */
static enum tfs_err map_fields(struct sp_reader *r, struct sp_frag *sf,
			       struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;
	const struct tfs_schema *fs = sf->f->schema;

	sf->field_load = tfs_mallocn(q->field_num ? q->field_num : 1,
				     sizeof(*sf->field_load));
	if (!sf->field_load)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < q->field_num; i++) {
		const struct tfs_out_field *fld = &q->fields[i];
		const struct tfs_attr *fa;
		int ai;
		uint32_t li;
		enum tfs_err e;

		sf->field_load[i] = -1;
		if (fld->is_dim)
			continue;
		ai = tfs_schema_attr_index(fs, fld->name);
		if (ai < 0)
			continue;
		fa = &fs->attrs[ai];
		if (fa->var != fld->var ||
		    tfs_datatype_size(fa->type) != tfs_datatype_size(fld->type) ||
		    (!fa->var && tfs_attr_cell_size(fa) != fld->cell_size))
			continue;
		e = add_load_slot(sf, (uint32_t)ai, &li, d);
		if (e)
			return e;
		sf->field_load[i] = (int32_t)li;
	}
	return TFS_E_OK;
}

static bool marker_listed(const struct tfs_strlist *l, const char *marker)
{
	for (size_t i = 0; i < l->count; i++)
		if (strcmp(l->items[i], marker) == 0)
			return true;
	return false;
}

/* The window's delete conditions that apply to a fragment (read.md §7
 * step 3): those not older than it and not already processed into it. */
static enum tfs_err pick_deletes(struct sp_reader *r, struct sp_frag *sf,
				 bool *any, struct tfs_diag *d)
{
	const struct tfs_fragment *f = sf->f;
	const struct tfs_strlist *processed = NULL;
	enum tfs_err e;

	for (uint32_t i = 0; i < r->del_num; i++) {
		const struct tfs_delete *del = r->dels[i].src;

		if (del->t1 < sf->t1)
			continue;
		if (f->footer.has_delete_meta) {
			if (!processed) {
				e = tfs_fragment_processed(r->q->dir, sf->f,
							   &processed, d);
				if (e)
					return e;
			}
			if (marker_listed(processed, del->marker))
				continue;
		}
		sf->dels[sf->del_num].del = i;
		sf->dels[sf->del_num].with_ts = f->footer.has_timestamps &&
						del->t1 <= f->name_info.t2;
		sf->del_num++;
		*any = true;
	}
	return TFS_E_OK;
}

/* A field no schema knows: only an error when a condition on it applies
 * here; otherwise it reads as null. */
static enum tfs_err map_unknown(const struct sp_reader *r,
				const struct sp_frag *sf, uint32_t g,
				struct sp_src *s, struct tfs_diag *d)
{
	for (uint32_t j = 0; j < sf->del_num; j++) {
		const struct sp_del *sd = &r->dels[sf->dels[j].del];

		for (size_t l = 0; l < tfs_cond_field_count(sd->cond); l++)
			if (sd->gmap[l] == g)
				return tfs_fail(d, TFS_E_CORRUPT,
						"delete condition '%s' refers to unknown field '%s'",
						sd->src->marker, r->gnames[g]);
	}
	s->kind = SRC_FILL;
	s->desc.type = TFS_UINT8;
	s->desc.cell_val_num = 1;
	s->desc.nullable = true;
	return TFS_E_OK;
}

/* Where the values of condition field g come from in a fragment: the
 * coordinates, the fragment's own attribute, or the current schema's fill. */
static enum tfs_err map_source(struct sp_reader *r, struct sp_frag *sf,
			       uint32_t g, struct tfs_diag *d)
{
	const struct tfs_schema *cur = r->q->schema;
	const struct tfs_fragment *f = sf->f;
	struct sp_src *s = &sf->src[g];
	const char *name = r->gnames[g];
	int k = tfs_schema_dim_index(cur, name);

	if (k >= 0) {
		const struct tfs_dim *dm = &cur->dims[k];

		s->kind = SRC_DIM;
		s->n = (uint32_t)k;
		s->desc.type = dm->type;
		s->desc.cell_val_num = dm->cell_val_num;
		s->desc.var = dm->var;
		return TFS_E_OK;
	}
	k = tfs_schema_attr_index(f->schema, name);
	if (k >= 0) {
		const struct tfs_attr *a = &f->schema->attrs[k];
		enum tfs_err e;

		s->kind = SRC_LOAD;
		e = add_load_slot(sf, (uint32_t)k, &s->n, d);
		if (e)
			return e;
		s->desc.type = a->type;
		s->desc.cell_val_num = a->cell_val_num;
		s->desc.var = a->var;
		s->desc.nullable = a->nullable;
		return TFS_E_OK;
	}
	k = tfs_schema_attr_index(cur, name);
	if (k >= 0) {
		const struct tfs_attr *a = &cur->attrs[k];

		s->kind = SRC_FILL;
		s->desc.type = a->type;
		s->desc.cell_val_num = a->cell_val_num;
		s->desc.var = a->var;
		s->desc.nullable = a->nullable;
		s->fill = a->fill;
		s->fill_len = a->fill_size;
		s->fill_valid = a->fill_valid;
		return TFS_E_OK;
	}
	return map_unknown(r, sf, g, s, d);
}

/* Each applying condition's field descriptions, checked against it. */
static enum tfs_err bind_deletes(struct sp_reader *r, struct sp_frag *sf,
				 struct tfs_diag *d)
{
	for (uint32_t j = 0; j < sf->del_num; j++) {
		struct sp_fdel *fd = &sf->dels[j];
		const struct sp_del *sd = &r->dels[fd->del];
		size_t n = tfs_cond_field_count(sd->cond);
		enum tfs_err e;

		fd->desc = tfs_callocn(n ? n : 1, sizeof(*fd->desc));
		if (!fd->desc)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		for (size_t l = 0; l < n; l++)
			fd->desc[l] = sf->src[sd->gmap[l]].desc;
		e = tfs_cond_check(sd->cond, fd->desc, d);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

/* Delete conditions of the window that apply to a fragment (read.md §7
 * step 3) and where their fields' values come from. */
static enum tfs_err map_deletes(struct sp_reader *r, struct sp_frag *sf,
				struct tfs_diag *d)
{
	bool any = false;
	enum tfs_err e;

	if (!r->del_num)
		return TFS_E_OK;
	sf->dels = tfs_callocn(r->del_num, sizeof(*sf->dels));
	if (!sf->dels)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = pick_deletes(r, sf, &any, d);
	if (e)
		return e;
	if (!any)
		return TFS_E_OK;
	sf->src = tfs_callocn(r->gname_num ? r->gname_num : 1,
			      sizeof(*sf->src));
	if (!sf->src)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t g = 0; g < r->gname_num; g++) {
		e = map_source(r, sf, g, d);
		if (e)
			return e;
	}
	return bind_deletes(r, sf, d);
}

enum tfs_err tfs__sp_open_frag(struct sp_reader *r, struct sp_frag *sf,
			       struct tfs_fragment *f, uint32_t index,
			       struct tfs_diag *d)
{
	const struct tfs_schema *fs = f->schema;
	enum tfs_err e;

	sf->f = f;
	sf->index = index;
	sf->t1 = f->name_info.t1;
	if (fs->dim_num != r->dim_num)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': %u dimensions, the array has %u",
				f->name, fs->dim_num, r->dim_num);
	sf->zipped = f->footer.version < 5;
	sf->coords_slot = fs->attr_num;
	sf->dim_slot = tfs_callocn(r->dim_num, sizeof(*sf->dim_slot));
	if (!sf->dim_slot)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < r->dim_num; k++)
		sf->dim_slot[k] = tfs_fragment_dim_slot(f, k);
	if (sf->zipped) {
		for (uint32_t k = 0; k < r->dim_num; k++)
			if (r->dims[k].var || r->dims[k].type != r->dims[0].type)
				return tfs_fail(d, TFS_E_CORRUPT,
						"fragment '%s': zipped coordinates need one fixed-size type",
						f->name);
	}
	sf->has_ts = f->footer.has_timestamps;
	sf->time_filter = sf->has_ts && (f->name_info.t1 < r->t0 ||
					 f->name_info.t2 > r->t1);
	if (sf->has_ts)
		sf->ts_slot = tfs_fragment_timestamps_slot(f);
	sf->has_dt = f->footer.has_delete_meta;
	if (sf->has_dt)
		sf->dt_slot = tfs_fragment_delete_ts_slot(f);
	e = map_fields(r, sf, d);
	if (!e)
		e = map_deletes(r, sf, d);
	if (e)
		return e;
	sf->read_ts = sf->has_ts && (sf->time_filter || r->dedup);
	for (uint32_t j = 0; j < sf->del_num; j++)
		sf->read_ts = sf->read_ts || sf->dels[j].with_ts;
	return TFS_E_OK;
}

/* Candidate tiles of a fragment: leaves of its R-tree that meet the
 * subarray. */
enum tfs_err tfs__sp_add_tiles(struct sp_reader *r, uint32_t fi, size_t *cap,
			       struct tfs_diag *d)
{
	struct sp_frag *sf = &r->frags[fi];
	const struct tfs_rtree *rt;
	enum tfs_err e;

	e = tfs_fragment_rtree(r->q->dir, sf->f, &rt, d);
	if (e)
		return e;
	if (rt->leaf_num != sf->f->tile_num || rt->dim_num != r->dim_num)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': R-tree has %" PRIu64
				" leaves for %" PRIu64 " tiles",
				sf->f->name, rt->leaf_num, sf->f->tile_num);
	for (uint64_t t = 0; t < rt->leaf_num; t++) {
		const struct tfs_range *mbr = &rt->leaves[t * r->dim_num];
		struct sp_tile *st;

		if (!tfs__sp_box_meets(r, mbr))
			continue;
		if (r->q->tile_may_match &&
		    !r->q->tile_may_match(r->q->tile_arg, sf->f, t, mbr))
			continue;
		if (r->tile_num == UINT32_MAX - 1)
			return tfs_fail(d, TFS_E_TOO_BIG,
					"selection touches more than %" PRIu32
					" tiles", UINT32_MAX - 1);
		if (t > UINT32_MAX)
			return tfs_fail(d, TFS_E_TOO_BIG,
					"fragment '%s': more than %" PRIu32
					" tiles", sf->f->name, UINT32_MAX);
		if (tfs_grow(&r->tiles, cap, (size_t)r->tile_num + 1,
			     sizeof(*r->tiles)))
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		st = &r->tiles[r->tile_num++];
		st->frag = fi & INT32_MAX; /* (fragment_num ≤ INT32_MAX) */
		st->tile = (uint32_t)t;
		st->cells = tfs_fragment_tile_cells(sf->f, t);
		if (r->dims[0].var) {
			st->b.mbr = &mbr[0];
		} else {
			st->b.key.lo = key_of(r->dims[0].type, mbr[0].lo);
			st->b.key.hi = key_of(r->dims[0].type, mbr[0].hi);
		}
		st->inside = box_inside(r, mbr);
	}
	return TFS_E_OK;
}

enum tfs_err tfs__sp_tiles_charge(struct sp_reader *r, uint64_t bytes,
				  struct tfs_diag *d)
{
	struct tfs_mem *m = tfs_mem_global();
	enum tfs_err e;

	if (bytes <= r->tiles_charged) {
		tfs_mem_uncharge(m, r->tiles_charged - bytes);
		r->tiles_charged = bytes;
		return TFS_E_OK;
	}
	e = tfs_mem_charge_for(m, bytes - r->tiles_charged, d,
			       "a list of %" PRIu32 " tiles", r->tile_num);
	if (e)
		return e;
	r->tiles_charged = bytes;
	return TFS_E_OK;
}

/* Puts tiles[idx[i]] at i for every i, following the permutation's
 * cycles in place (a sorted copy would double the list); idx is spent. */
static void tiles_permute(struct sp_tile *tiles, uint32_t *idx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct sp_tile first;
		uint32_t j = i;

		if (idx[i] == UINT32_MAX || idx[i] == i)
			continue;
		first = tiles[i];
		while (idx[j] != i) {
			uint32_t from = idx[j];

			tiles[j] = tiles[from];
			idx[j] = UINT32_MAX;
			j = from;
		}
		tiles[j] = first;
		idx[j] = UINT32_MAX;
	}
}

enum tfs_err tfs__sp_sort_tiles(struct sp_reader *r, struct tfs_diag *d)
{
	uint64_t list = (uint64_t)r->tile_num * sizeof(*r->tiles);
	struct sp_tile *fit;
	uint32_t *idx;
	enum tfs_err e;

	/* The list as large as it is (it grew by doubling). */
	fit = tfs_reallocn(r->tiles, r->tile_num ? r->tile_num : 1,
			   sizeof(*r->tiles));
	if (fit)
		r->tiles = fit;
	else
		list = r->tiles_charged;
	if (r->tile_num < 2)
		return tfs__sp_tiles_charge(r, list, d);
	/* The index and the merge sort's copy of it, counted before they
	 * exist. */
	e = tfs__sp_tiles_charge(r, list + (uint64_t)r->tile_num * 2 *
					       sizeof(*idx), d);
	if (e)
		return e;
	idx = tfs_mallocn(r->tile_num, sizeof(*idx));
	if (!idx)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < r->tile_num; i++)
		idx[i] = i;
	e = tfs__sp_sort_index(idx, r->tile_num, tfs__sp_tile_lo_cmp, r);
	if (!e)
		tiles_permute(r->tiles, idx, r->tile_num);
	tfs_free(idx);
	(void)tfs__sp_tiles_charge(r, list, d);
	return e ? tfs_fail(d, e, "out of memory") : TFS_E_OK;
}

enum tfs_err tfs__sp_open_deletes(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_arraydir *dir = r->q->dir;

	if (!dir->delete_num)
		return TFS_E_OK;
	r->dels = tfs_callocn(dir->delete_num, sizeof(*r->dels));
	if (!r->dels)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	r->del_num = (uint32_t)dir->delete_num;
	for (uint32_t i = 0; i < r->del_num; i++) {
		struct sp_del *sd = &r->dels[i];
		size_t n;
		enum tfs_err e;

		sd->src = &dir->deletes[i];
		e = tfs_cond_compile(&sd->src->cond, &sd->cond, d);
		if (e)
			return e;
		n = tfs_cond_field_count(sd->cond);
		sd->gmap = tfs_callocn(n ? n : 1, sizeof(*sd->gmap));
		if (!sd->gmap)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		for (size_t l = 0; l < n; l++) {
			const char *name = tfs_cond_field_name(sd->cond, l);
			uint32_t g = 0;
			const char **ng;

			while (g < r->gname_num && strcmp(r->gnames[g], name))
				g++;
			if (g == r->gname_num) {
				ng = tfs_reallocn(r->gnames, r->gname_num + 1,
						  sizeof(*ng));
				if (!ng)
					return tfs_fail(d, TFS_E_NOMEM,
							"out of memory");
				r->gnames = ng;
				r->gnames[r->gname_num++] = name;
			}
			sd->gmap[l] = g;
		}
	}
	return TFS_E_OK;
}
