/* What a fragment loads on first use (fragment.md §5-6): per-slot tile
 * offsets and sizes, the R-tree of MBRs and the processed delete
 * conditions, each at most once under the fragment's own mutex (see
 * fragment_load.c). */
#include "fragment_load_internal.h"

/* ---- lazy loads --------------------------------------------------------- */

static enum tfs_err meta_file_size(const struct tfs_arraydir *a,
				   const struct tfs_fragment *f, char **path,
				   uint64_t *size, struct tfs_diag *d)
{
	struct tfs_stat st;
	enum tfs_err err;

	*path = tfs_path_join(f->dir, META_FILE);
	if (!*path)
		return tfs_fail(d, TFS_E_NOMEM, "fragment '%s': out of memory",
				f->name);
	if (f->meta_size_known) {
		*size = f->meta_size;
		return TFS_E_OK;
	}
	err = tfs_vfs_stat(a->vfs, *path, &st, d);
	if (!err && (!st.exists || st.is_dir))
		err = tfs_fail(d, TFS_E_CORRUPT, "fragment '%s': missing '%s'",
			       f->name, *path);
	if (err) {
		tfs_free(*path);
		*path = NULL;
		return err;
	}
	*size = st.size;
	return TFS_E_OK;
}

/* The generic tile at off of the fragment metadata file (a new buffer). */
static enum tfs_err read_meta_tile(const struct tfs_arraydir *a,
				   const struct tfs_fragment *f, uint64_t off,
				   uint8_t **payload, size_t *plen,
				   struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	uint64_t size;
	char *path;
	enum tfs_err err;

	err = meta_file_size(a, f, &path, &size, d);
	if (err)
		return err;
	err = tfs__read_tile_at(a, path, z->meta_bytes, size, off,
				TFS__FILE_MAX, payload, plen, d);
	tfs_free(path);
	return err;
}

enum tfs_err tfs_fragment_meta_tile(const struct tfs_arraydir *a,
				    const struct tfs_fragment *f, uint64_t off,
				    uint8_t **payload, size_t *len,
				    struct tfs_diag *d)
{
	return read_meta_tile(a, f, off, payload, len, d);
}

/* Reads one per-slot u64 list (fragment.md §6) and checks it has one entry
 * per tile, and, for offsets (limit != UINT64_MAX), that they do not
 * decrease and stay inside the data file of limit bytes. */
static enum tfs_err read_u64_list(const struct tfs_arraydir *a,
				  const struct tfs_fragment *f,
				  const char *path, uint64_t size, uint64_t off,
				  uint32_t slot, const char *what,
				  uint64_t limit, uint64_t **out,
				  struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	struct tfs_diag ld;
	uint8_t *payload;
	size_t plen;
	uint64_t *list = NULL, count = 0;
	enum tfs_err err;

	*out = NULL;
	if (f->tile_num > (TFS__FILE_MAX - 8) / 8)
		return tfs_fail(d, TFS_E_TOO_BIG,
				"fragment '%s': %" PRIu64 " tiles is too many",
				f->name, f->tile_num);
	err = tfs__read_tile_at(a, path, z->meta_bytes, size, off,
				(size_t)(8 + 8 * f->tile_num), &payload, &plen,
				d);
	if (err == TFS_E_TOO_BIG && d && d->code == TFS_E_TOO_BIG) {
		/* The limit is the list's exact size: more is damage (a
		 * footer whose domain lost tiles), EIO rather than EFBIG. */
		tfs_diag_init(d);
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u %s holds more than "
				"the fragment's %" PRIu64 " tiles",
				f->name, slot, what, f->tile_num);
	}
	if (err)
		return err;
	tfs_diag_init(&ld);
	err = tfs_u64_list_parse(payload, plen, &list, &count, &ld);
	tfs_free(payload);
	if (err)
		return tfs_fail(d, err, "fragment '%s': slot %u %s: %s",
				f->name, slot, what, tfs_diag_msg(&ld));
	if (count != f->tile_num) {
		tfs_free(list);
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u %s has %" PRIu64
				" entries, the fragment has %" PRIu64 " tiles",
				f->name, slot, what, count, f->tile_num);
	}
	for (uint64_t i = 0; limit != UINT64_MAX && i < count; i++) {
		if (list[i] > limit || (i && list[i] < list[i - 1])) {
			uint64_t at = list[i]; /* the message outlives list */

			tfs_free(list);
			return tfs_fail(
				d, TFS_E_CORRUPT,
				"fragment '%s': slot %u %s: tile %" PRIu64
				" starts at %" PRIu64
				", out of order or past the end of the file (%" PRIu64
				" bytes)",
				f->name, slot, what, i, at, limit);
		}
	}
	*out = list;
	return TFS_E_OK;
}

/* What a slot holds in the fragment's own schema. */
struct slot_kind {
	bool var;
	bool nullable;
};

static struct slot_kind slot_kind_of(const struct tfs_fragment *f,
				     uint32_t slot)
{
	const struct tfs_schema *s = f->schema;
	struct slot_kind k = {false, false};
	uint32_t dims = f->footer.version >= 5 ? s->dim_num : 0;

	if (slot < s->attr_num) {
		k.var = s->attrs[slot].var;
		k.nullable = s->attrs[slot].nullable;
	} else if (slot > s->attr_num && slot <= s->attr_num + dims) {
		k.var = s->dims[slot - s->attr_num - 1].var;
	}
	return k;
}

/* A data file that its footer says is at most this large is not checked
 * when its tile lists load: no tile of it can ask for more, and a read
 * past the end of a shorter file fails as damage. */
#define DATA_CHECK_MIN ((uint64_t)4 << 20)

/* Checks the footer's size of one data file of a slot against the file:
 * tile reads allocate up to what the footer says, so a lying footer must
 * not claim much more than the file holds (DATA_CHECK_MIN). A missing
 * file is left to the reads to report. */
static enum tfs_err check_data_file(const struct tfs_arraydir *a,
				    const struct tfs_fragment *f, uint32_t slot,
				    enum tfs_file_kind kind, uint64_t claimed,
				    struct tfs_diag *d)
{
	struct tfs_stat st;
	char *path;
	enum tfs_err err;

	if (claimed <= DATA_CHECK_MIN)
		return TFS_E_OK;
	path = tfs_fragment_file_path(f, slot, kind);
	if (!path)
		return tfs_fail(d, TFS_E_NOMEM, "fragment '%s': out of memory",
				f->name);
	err = tfs_vfs_stat(a->vfs, path, &st, d);
	if (!err && st.exists && !st.is_dir && st.size < claimed)
		err = tfs_fail(d, TFS_E_CORRUPT,
			       "'%s': %" PRIu64 " bytes, its fragment's footer "
			       "says %" PRIu64,
			       path, st.size, claimed);
	tfs_free(path);
	return err;
}

static enum tfs_err load_slot(const struct tfs_arraydir *a,
			      struct tfs_fragment *f, uint32_t slot,
			      struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	const struct tfs_footer *ft = &f->footer;
	struct slot_kind k = slot_kind_of(f, slot);
	struct tfs_slot_tiles t = {NULL, NULL, NULL, NULL};
	uint64_t size;
	char *path;
	enum tfs_err err;

	if (f->tile_num == 0)
		return TFS_E_OK;
	err = check_data_file(a, f, slot, TFS_FILE_FIXED, ft->file_sizes[slot],
			      d);
	if (!err && k.var)
		err = check_data_file(a, f, slot, TFS_FILE_VAR,
				      ft->file_var_sizes[slot], d);
	if (!err && k.nullable && ft->version >= 7)
		err = check_data_file(a, f, slot, TFS_FILE_VALIDITY,
				      ft->file_validity_sizes[slot], d);
	if (err)
		return err;
	err = meta_file_size(a, f, &path, &size, d);
	if (err)
		return err;
	err = read_u64_list(a, f, path, size, ft->tile_offsets_off[slot], slot,
			    "tile offsets", ft->file_sizes[slot], &t.offsets,
			    d);
	if (!err && k.var)
		err = read_u64_list(a, f, path, size,
				    ft->tile_var_offsets_off[slot], slot,
				    "tile var offsets",
				    ft->file_var_sizes[slot], &t.var_offsets,
				    d);
	if (!err && k.var)
		err = read_u64_list(a, f, path, size,
				    ft->tile_var_sizes_off[slot], slot,
				    "tile var sizes", UINT64_MAX, &t.var_sizes,
				    d);
	if (!err && k.nullable && ft->version >= 7)
		err = read_u64_list(a, f, path, size,
				    ft->tile_validity_offsets_off[slot], slot,
				    "tile validity offsets",
				    ft->file_validity_sizes[slot],
				    &t.validity_offsets, d);
	tfs_free(path);
	if (err) {
		tfs_free(t.offsets);
		tfs_free(t.var_offsets);
		tfs_free(t.var_sizes);
		tfs_free(t.validity_offsets);
		return err;
	}
	z->slots[slot] = t;
	return TFS_E_OK;
}

/* Loads what a slot has on demand (its tile lists, its statistics). */
typedef enum tfs_err (*slot_loader)(const struct tfs_arraydir *a,
				    struct tfs_fragment *f, uint32_t slot,
				    struct tfs_diag *d);

static enum tfs_err check_slot(const struct tfs_fragment *f, uint32_t slot,
			       struct tfs_diag *d)
{
	if (slot >= f->footer.slot_num)
		return tfs_fail(d, TFS_E_INVALID,
				"fragment '%s': no slot %u (it has %u)",
				f->name, slot, f->footer.slot_num);
	return TFS_E_OK;
}

/* Runs load for slot unless loaded[slot] says it did (set when it
 * succeeds: a failure is tried again by the next call); *fresh says
 * whether it loaded now. The caller holds f->lock. */
static enum tfs_err load_once(const struct tfs_arraydir *a,
			      struct tfs_fragment *f, uint32_t slot,
			      bool *loaded, slot_loader load, bool *fresh,
			      struct tfs_diag *d)
{
	enum tfs_err err;

	*fresh = false;
	if (loaded[slot])
		return TFS_E_OK;
	err = load(a, f, slot, d);
	if (!err)
		loaded[slot] = *fresh = true;
	return err;
}

static uint64_t slot_tiles_bytes(const struct tfs_fragment *f, uint32_t slot)
{
	struct tfs__frag_shared *z = f->shared;
	const struct tfs_slot_tiles *t = &z->slots[slot];

	return 8 * f->tile_num *
	       (uint64_t)(!!t->offsets + !!t->var_offsets + !!t->var_sizes +
			  !!t->validity_offsets);
}

enum tfs_err tfs_fragment_slot_tiles(struct tfs_arraydir *a,
				     struct tfs_fragment *f, uint32_t slot,
				     const struct tfs_slot_tiles **out,
				     struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	uint64_t bytes = 0;
	bool fresh;
	enum tfs_err err;

	*out = NULL;
	if ((err = check_slot(f, slot, d)))
		return err;
	pthread_mutex_lock(&z->lock);
	err = load_once(a, f, slot, z->slot_loaded, load_slot, &fresh, d);
	if (fresh)
		bytes = slot_tiles_bytes(f, slot);
	pthread_mutex_unlock(&z->lock);
	tfs__frag_shared_count(z, bytes);
	if (!err)
		*out = &z->slots[slot];
	return err;
}

/* Mins or maxes of a fixed slot: u64 fixed_len, u64 var_len, the bytes;
 * kept only when it holds one value of cell_size bytes per tile. */
static enum tfs_err read_bounds(const struct tfs_arraydir *a,
				const struct tfs_fragment *f, uint64_t off,
				uint64_t cell_size, uint8_t **out,
				struct tfs_diag *d)
{
	uint8_t *payload;
	size_t plen;
	uint64_t fixed_len, var_len;
	enum tfs_err err;

	*out = NULL;
	err = read_meta_tile(a, f, off, &payload, &plen, d);
	if (err)
		return err;
	if (plen >= 16) {
		fixed_len = tfs_get_u64(payload);
		var_len = tfs_get_u64(payload + 8);
		if (var_len == 0 && fixed_len == plen - 16 &&
		    fixed_len / cell_size == f->tile_num &&
		    fixed_len % cell_size == 0 && fixed_len &&
		    !(*out = tfs_memdup(payload + 16, (size_t)fixed_len)))
			err = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	tfs_free(payload);
	return err;
}

/* A count-prefixed list of tile_num u64 (sums, null counts); *out NULL
 * when the slot has none (count 0). */
static enum tfs_err read_counted(const struct tfs_arraydir *a,
				 const struct tfs_fragment *f, uint64_t off,
				 uint64_t **out, struct tfs_diag *d)
{
	struct tfs_diag ld;
	uint8_t *payload;
	size_t plen;
	uint64_t *list = NULL, count = 0;
	enum tfs_err err;

	*out = NULL;
	err = read_meta_tile(a, f, off, &payload, &plen, d);
	if (err)
		return err;
	tfs_diag_init(&ld);
	err = tfs_u64_list_parse(payload, plen, &list, &count, &ld);
	tfs_free(payload);
	if (err)
		return tfs_fail(d, err, "fragment '%s': tile statistics: %s",
				f->name, tfs_diag_msg(&ld));
	if (count == f->tile_num && count)
		*out = list;
	else
		tfs_free(list);
	return TFS_E_OK;
}

static enum tfs_err load_stats(const struct tfs_arraydir *a,
			       struct tfs_fragment *f, uint32_t slot,
			       struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	const struct tfs_footer *ft = &f->footer;
	const struct tfs_schema *s = f->schema;
	struct tfs_slot_stats st = {NULL, NULL, NULL, NULL};
	uint64_t cell_size;
	enum tfs_err err;

	if (ft->version < 11 || !ft->tile_mins_off || slot >= s->attr_num ||
	    s->attrs[slot].var || f->tile_num == 0 || f->legacy)
		return TFS_E_OK;
	cell_size = tfs_attr_cell_size(&s->attrs[slot]);
	if (cell_size == 0)
		return TFS_E_OK;
	err = read_bounds(a, f, ft->tile_mins_off[slot], cell_size, &st.mins,
			  d);
	if (!err)
		err = read_bounds(a, f, ft->tile_maxes_off[slot], cell_size,
				  &st.maxes, d);
	if (!err)
		err = read_counted(a, f, ft->tile_sums_off[slot],
				   (uint64_t **)(void *)&st.sums, d);
	if (!err)
		err = read_counted(a, f, ft->tile_null_counts_off[slot],
				   &st.null_counts, d);
	if (err || !st.mins || !st.maxes) {
		/* Bounds come in pairs: one alone is no use. */
		tfs_free(st.mins);
		tfs_free(st.maxes);
		st.mins = st.maxes = NULL;
	}
	if (err) {
		tfs_free(st.sums);
		tfs_free(st.null_counts);
		return err;
	}
	z->stats[slot] = st;
	return TFS_E_OK;
}

enum tfs_err tfs_fragment_slot_stats(struct tfs_arraydir *a,
				     struct tfs_fragment *f, uint32_t slot,
				     const struct tfs_slot_stats **out,
				     struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	uint64_t bytes = 0;
	bool fresh = false;
	enum tfs_err err;

	*out = NULL;
	if ((err = check_slot(f, slot, d)))
		return err;
	pthread_mutex_lock(&z->lock);
	if (!z->stats) {
		z->stats = tfs_callocn(f->footer.slot_num, sizeof(*z->stats));
		z->stats_loaded = tfs_callocn(f->footer.slot_num,
					      sizeof(*z->stats_loaded));
		if (!z->stats || !z->stats_loaded) {
			tfs_free(z->stats);
			tfs_free(z->stats_loaded);
			z->stats = NULL;
			z->stats_loaded = NULL;
			err = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		}
	}
	if (!err)
		err = load_once(a, f, slot, z->stats_loaded, load_stats, &fresh,
				d);
	if (fresh)
		bytes = f->tile_num *
			((z->stats[slot].mins
				  ? 2 * tfs_attr_cell_size(
						&f->schema->attrs[slot])
				  : 0) +
			 (z->stats[slot].sums ? 8 : 0) +
			 (z->stats[slot].null_counts ? 8 : 0));
	pthread_mutex_unlock(&z->lock);
	tfs__frag_shared_count(z, bytes);
	if (!err)
		*out = &z->stats[slot];
	return err;
}

/* A sparse fragment's non-empty domain is the union of its tiles' MBRs
 * (format/fragment.md). The footer that holds it is never encrypted nor
 * checksummed, while the R-tree is a generic tile (AES-GCM in encrypted
 * arrays): a domain that does not hold every MBR is damage, and left in,
 * reads of the array's domain would silently drop the cells outside it. */
static enum tfs_err rtree_inside_ned(const struct tfs_fragment *f,
				     struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	const struct tfs_schema *s = f->schema;

	if (f->footer.empty || !f->footer.ned)
		return TFS_E_OK;
	for (uint64_t t = 0; t < z->rtree.leaf_num; t++) {
		for (uint32_t k = 0; k < s->dim_num; k++) {
			const struct tfs_range *mbr =
				&z->rtree.leaves[t * s->dim_num + k];
			const struct tfs_range *ned = &f->footer.ned[k];
			uint8_t type = s->dims[k].type;

			if (s->dims[k].var)
				continue;
			if (tfs_value_cmp(type, mbr->lo, ned->lo) < 0 ||
			    tfs_value_cmp(type, mbr->hi, ned->hi) > 0)
				return tfs_fail(d, TFS_E_CORRUPT,
						"fragment '%s': tile %" PRIu64
						" reaches outside the non-empty "
						"domain of dimension '%s'",
						f->name, t, s->dims[k].name);
		}
	}
	return TFS_E_OK;
}

enum tfs_err tfs_fragment_rtree(struct tfs_arraydir *a, struct tfs_fragment *f,
				const struct tfs_rtree **out,
				struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	enum tfs_err err = TFS_E_OK;
	uint64_t bytes = 0;

	*out = NULL;
	pthread_mutex_lock(&z->lock);
	if (!z->rtree_loaded) {
		struct tfs_diag ld;
		uint8_t *payload;
		size_t plen;

		err = read_meta_tile(a, f, f->footer.rtree_off, &payload, &plen,
				     d);
		if (!err) {
			tfs_diag_init(&ld);
			err = tfs_rtree_parse(&z->rtree, payload, plen,
					      f->footer.version, f->schema,
					      &ld);
			tfs_free(payload);
			if (err)
				tfs_fail(d, err, "fragment '%s': R-tree: %s",
					 f->name, tfs_diag_msg(&ld));
		}
		if (!err && !f->footer.dense &&
		    z->rtree.leaf_num != f->tile_num) {
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "fragment '%s': R-tree has %" PRIu64
				       " leaves for %" PRIu64 " tiles",
				       f->name, z->rtree.leaf_num, f->tile_num);
			tfs_rtree_release(&z->rtree);
		}
		if (!err && !f->footer.dense && (err = rtree_inside_ned(f, d)))
			tfs_rtree_release(&z->rtree);
		if (!err) {
			z->rtree_loaded = true;
			bytes = z->rtree.leaf_num * z->rtree.dim_num *
					sizeof(*z->rtree.leaves) +
				z->rtree.bytes_len;
		}
	}
	pthread_mutex_unlock(&z->lock);
	tfs__frag_shared_count(z, bytes);
	if (!err)
		*out = &z->rtree;
	return err;
}

enum tfs_err tfs_fragment_processed(struct tfs_arraydir *a,
				    struct tfs_fragment *f,
				    const struct tfs_strlist **out,
				    struct tfs_diag *d)
{
	struct tfs__frag_shared *z = f->shared;
	enum tfs_err err = TFS_E_OK;

	*out = NULL;
	pthread_mutex_lock(&z->lock);
	if (!z->processed_loaded && f->footer.version < 16) {
		memset(&z->processed_conditions, 0,
		       sizeof(z->processed_conditions));
		z->processed_loaded = true;
	}
	if (!z->processed_loaded) {
		struct tfs_diag ld;
		uint8_t *payload;
		size_t plen;

		err = read_meta_tile(a, f, f->footer.processed_conditions_off,
				     &payload, &plen, d);
		if (!err) {
			tfs_diag_init(&ld);
			err = tfs_strlist_parse(&z->processed_conditions,
						payload, plen, &ld);
			tfs_free(payload);
			if (err)
				tfs_fail(
					d, err,
					"fragment '%s': processed conditions: %s",
					f->name, tfs_diag_msg(&ld));
		}
		if (!err)
			z->processed_loaded = true;
	}
	pthread_mutex_unlock(&z->lock);
	if (!err)
		*out = &z->processed_conditions;
	return err;
}
