/* One fragment: its footer (from a consolidated .meta file or from the end
 * of its own __fragment_metadata.tdb, format/fragment.md §3–4 and
 * consolidated.md §1), its schema (schema.md §9), its tile and cell counts
 * (fragment.md §7), the lazily loaded per-slot tile lists, R-tree and
 * processed delete conditions (fragment.md §5–6), and the names of its data
 * files (fragment.md §1–2).
 *
 * Lazy loads run at most once per item under the fragment's own mutex,
 * which is held across the reads of that item: this is the one place the
 * engine holds a lock during I/O, so that concurrent first readers of a
 * fragment wait for one load instead of each reading the same bytes. */
#include "fragment_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"

#define META_FILE "__fragment_metadata.tdb"

/* ---- consolidated fragment metadata (.meta) ----------------------------- */

struct meta_key {
	char *key;   /* fragment name */
	size_t file; /* index in the index's files, listing order */
	size_t entry;
};

struct tfs__meta_index {
	struct tfs_consolidated_meta *files; /* file_num parsed */
	char **rels;                          /* rel_num entries */
	size_t file_num;
	size_t rel_num;
	struct meta_key *keys;
	size_t key_num;
};

static int key_cmp(const void *x, const void *y)
{
	const struct meta_key *a = x, *b = y;
	int c = strcmp(a->key, b->key);

	if (c)
		return c;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	return a->entry < b->entry ? -1 : a->entry > b->entry;
}

/* The fragment name of a .meta entry: the name itself (.meta version >= 9)
 * or the last component of the fragment's URI (< 9). Matching the old
 * absolute URIs by their last component keeps working after the array
 * folder was moved; the footer found is the fragment's either way. */
static char *entry_key(const char *name, bool uri)
{
	size_t n = strlen(name);
	const char *start;

	if (!uri)
		return tfs_strdup(name);
	while (n && name[n - 1] == '/')
		n--;
	start = name + n;
	while (start > name && start[-1] != '/')
		start--;
	return tfs_strndup(start, n - (size_t)(start - name));
}

void tfs__meta_index_free(struct tfs__meta_index *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->file_num; i++)
		tfs_consolidated_meta_release(&m->files[i]);
	for (size_t i = 0; i < m->rel_num; i++)
		tfs_free(m->rels[i]);
	for (size_t i = 0; i < m->key_num; i++)
		tfs_free(m->keys[i].key);
	tfs_free(m->files);
	tfs_free(m->rels);
	tfs_free(m->keys);
	tfs_free(m);
}

enum tfs_err tfs__meta_index_load(const struct tfs_arraydir *a,
				  char *const *rel_paths, size_t num,
				  struct tfs__meta_index **out,
				  struct tfs_diag *d)
{
	struct tfs__meta_index *m;
	size_t keys = 0;
	enum tfs_err err = TFS_E_OK;

	*out = NULL;
	m = tfs_callocn(1, sizeof(*m));
	if (!m)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	m->files = tfs_callocn(num ? num : 1, sizeof(*m->files));
	m->rels = tfs_callocn(num ? num : 1, sizeof(*m->rels));
	if (!m->files || !m->rels) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       a->path);
		goto out_free;
	}
	for (size_t i = 0; i < num; i++) {
		struct tfs_diag ld;
		uint8_t *payload;
		size_t len;

		m->rels[i] = tfs_strdup(rel_paths[i]);
		m->rel_num = i + 1;
		if (!m->rels[i]) {
			err = tfs_fail(d, TFS_E_NOMEM,
				       "array '%s': out of memory", a->path);
			goto out_free;
		}
		err = tfs__read_tile_file(a, rel_paths[i], &payload, &len, d);
		if (err)
			goto out_free;
		tfs_diag_init(&ld);
		err = tfs_consolidated_meta_parse(&m->files[m->file_num],
						  payload, len, &ld);
		if (err) {
			tfs_fail(d, err, "'%s/%s': %s", a->path, rel_paths[i],
				 tfs_diag_msg(&ld));
			goto out_free;
		}
		m->file_num++;
		keys += m->files[i].count;
	}
	m->keys = tfs_callocn(keys ? keys : 1, sizeof(*m->keys));
	if (!m->keys) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       a->path);
		goto out_free;
	}
	for (size_t i = 0; i < m->file_num; i++) {
		struct tfs_name_info ni;
		bool uri = tfs_name_parse(m->rels[i], &ni) == TFS_E_OK &&
			   ni.version < 9;

		for (size_t e = 0; e < m->files[i].count; e++) {
			struct meta_key *k = &m->keys[m->key_num];

			k->key = entry_key(m->files[i].entries[e].name, uri);
			if (!k->key) {
				err = tfs_fail(d, TFS_E_NOMEM,
					       "array '%s': out of memory",
					       a->path);
				goto out_free;
			}
			k->file = i;
			k->entry = e;
			m->key_num++;
		}
	}
	if (m->key_num > 1)
		qsort(m->keys, m->key_num, sizeof(*m->keys), key_cmp);
	*out = m;
	return TFS_E_OK;

out_free:
	tfs__meta_index_free(m);
	return err;
}

/* The first .meta entry (in listing order) for the fragment called name. */
static const struct meta_key *meta_find(const struct tfs__meta_index *m,
					const char *name)
{
	size_t lo = 0, hi;

	if (!m)
		return NULL;
	hi = m->key_num;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(m->keys[mid].key, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->key_num && !strcmp(m->keys[lo].key, name))
		return &m->keys[lo];
	return NULL;
}

/* ---- footer ------------------------------------------------------------- */

static bool has_var_dim(const struct tfs_schema *s)
{
	for (uint32_t i = 0; i < s->dim_num; i++)
		if (s->dims[i].var)
			return true;
	return false;
}

/* Parses the footer at buf: reads the schema name first (v10+), finds that
 * schema, then parses the whole footer with it. */
static enum tfs_err parse_footer(const struct tfs_arraydir *a,
				 struct tfs_fragment *f, const uint8_t *buf,
				 size_t len, const char *where,
				 struct tfs_diag *d)
{
	const struct tfs_schema *schema;
	struct tfs_diag ld;
	uint32_t version;
	char *sname = NULL;
	enum tfs_err err;

	tfs_diag_init(&ld);
	err = tfs_footer_schema_name(buf, len, &version, &sname, &ld);
	if (err)
		return tfs_fail(d, err, "fragment '%s': footer in '%s': %s",
				f->name, where, tfs_diag_msg(&ld));
	schema = tfs__find_schema(a, sname ? sname : "__array_schema.tdb");
	if (!schema) {
		err = tfs_fail(d, TFS_E_CORRUPT,
			       "fragment '%s': its schema '%s' is not in the array",
			       f->name, sname ? sname : "__array_schema.tdb");
		tfs_free(sname);
		return err;
	}
	tfs_free(sname);
	err = tfs_footer_parse(&f->footer, buf, len, schema, &ld);
	if (err)
		return tfs_fail(d, err, "fragment '%s': footer in '%s': %s",
				f->name, where, tfs_diag_msg(&ld));
	f->schema = schema;
	if (f->footer.dim_num != schema->dim_num) {
		uint32_t got = f->footer.dim_num;

		tfs_footer_release(&f->footer);
		memset(&f->footer, 0, sizeof(f->footer));
		f->schema = NULL;
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': footer has %u dimensions, its schema %u",
				f->name, got, schema->dim_num);
	}
	return TFS_E_OK;
}

static enum tfs_err footer_from_meta(const struct tfs_arraydir *a,
				     struct tfs_fragment *f,
				     const struct tfs__meta_index *m,
				     const struct meta_key *k,
				     struct tfs_diag *d)
{
	const struct tfs_consolidated_meta *cm = &m->files[k->file];
	uint64_t off = cm->entries[k->entry].footer_offset;
	char *where;
	enum tfs_err err;

	where = tfs__array_path(a, m->rels[k->file]);
	if (!where)
		return tfs_fail(d, TFS_E_NOMEM, "fragment '%s': out of memory",
				f->name);
	if (off > cm->payload_len)
		err = tfs_fail(d, TFS_E_CORRUPT,
			       "'%s': footer of fragment '%s' at offset %" PRIu64
			       " is past the end",
			       where, f->name, off);
	else
		err = parse_footer(a, f, cm->payload + off,
				   cm->payload_len - (size_t)off, where, d);
	tfs_free(where);
	if (!err)
		f->consolidated_meta = true;
	return err;
}

static enum tfs_err footer_from_file(const struct tfs_arraydir *a,
				     struct tfs_fragment *f,
				     struct tfs_diag *d)
{
	const struct tfs_schema *legacy = tfs__find_schema(a, "__array_schema.tdb");
	uint32_t nv = f->name_info.version;
	struct tfs_stat st;
	uint64_t start, len = 0;
	uint8_t *buf;
	char *path;
	enum tfs_err err;

	path = tfs_path_join(f->dir, META_FILE);
	if (!path)
		return tfs_fail(d, TFS_E_NOMEM, "fragment '%s': out of memory",
				f->name);
	err = tfs_vfs_stat(a->vfs, path, &st, d);
	if (err)
		goto out_path;
	if (!st.exists || st.is_dir) {
		err = tfs_fail(d, TFS_E_CORRUPT,
			       "fragment '%s': missing '%s'", f->name, path);
		goto out_path;
	}
	if (nv < 10) {
		if (!legacy) {
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "fragment '%s': version %u needs '__array_schema.tdb', which is missing",
				       f->name, nv);
			goto out_path;
		}
		if (!has_var_dim(legacy))
			len = tfs_footer_fixed_size(nv, legacy);
	}
	if (len == 0) {
		/* The footer length is stored in the last 8 bytes. */
		uint8_t tail[8];

		if (st.size < sizeof(tail)) {
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "'%s': file too short for a footer", path);
			goto out_path;
		}
		err = tfs_vfs_read(a->vfs, path, st.size - sizeof(tail), tail,
				   sizeof(tail), d);
		if (err)
			goto out_path;
		len = tfs_get_u64(tail);
		if (len == 0 || len > st.size - sizeof(tail)) {
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "'%s': footer length %" PRIu64
				       " does not fit in the file (%" PRIu64 " bytes)",
				       path, len, st.size);
			goto out_path;
		}
		start = st.size - sizeof(tail) - len;
	} else {
		if (len > st.size) {
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "'%s': file too short for a version %u footer of %" PRIu64
				       " bytes",
				       path, nv, len);
			goto out_path;
		}
		start = st.size - len;
	}
	if (len > TFS__FILE_MAX) {
		err = tfs_fail(d, TFS_E_TOO_BIG,
			       "'%s': footer of %" PRIu64 " bytes is too large",
			       path, len);
		goto out_path;
	}
	buf = tfs_malloc((size_t)len);
	if (!buf) {
		err = tfs_fail(d, TFS_E_NOMEM, "fragment '%s': out of memory",
			       f->name);
		goto out_path;
	}
	err = tfs_vfs_read(a->vfs, path, start, buf, (size_t)len, d);
	if (!err)
		err = parse_footer(a, f, buf, (size_t)len, path, d);
	tfs_free(buf);
out_path:
	tfs_free(path);
	return err;
}

/* Versions 1–2: the whole metadata file is one generic tile (fragment.md
 * §9); the fragment is dense iff its folder has no __coords.tdb. The
 * parsed footer and R-tree move into the fragment; the tile lists are
 * handed to the slots once the tile number is known (take_legacy_lists). */
static enum tfs_err legacy_from_file(const struct tfs_arraydir *a,
				     struct tfs_fragment *f,
				     struct tfs_diag *d)
{
	const struct tfs_schema *schema =
		tfs__find_schema(a, "__array_schema.tdb");
	struct tfs_legacy_meta *lm;
	struct tfs_stat st;
	struct tfs_diag ld;
	uint8_t *buf = NULL, *payload = NULL;
	size_t len, plen;
	char *path, *coords;
	enum tfs_err err;

	if (!schema)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': version %u needs '__array_schema.tdb', which is missing",
				f->name, f->name_info.version);
	path = tfs_path_join(f->dir, META_FILE);
	coords = tfs_path_join(f->dir, "__coords.tdb");
	lm = tfs_callocn(1, sizeof(*lm));
	if (!path || !coords || !lm) {
		err = tfs_fail(d, TFS_E_NOMEM, "fragment '%s': out of memory",
			       f->name);
		goto out;
	}
	err = tfs_vfs_stat(a->vfs, coords, &st, d);
	if (!err)
		err = tfs_vfs_read_all(a->vfs, path, TFS__FILE_MAX, &buf, &len, d);
	if (!err)
		err = tfs__decode_tile(a, path, buf, len, TFS__FILE_MAX, &payload,
				       &plen, NULL, d);
	if (err)
		goto out;
	tfs_diag_init(&ld);
	err = tfs_legacy_meta_parse(lm, payload, plen, schema, !st.exists, &ld);
	if (err) {
		tfs_fail(d, err, "fragment '%s': '%s': %s", f->name, path,
			 tfs_diag_msg(&ld));
		goto out;
	}
	f->footer = lm->footer;
	memset(&lm->footer, 0, sizeof(lm->footer));
	f->rtree = lm->rtree;
	memset(&lm->rtree, 0, sizeof(lm->rtree));
	f->rtree_loaded = true;
	f->schema = schema;
	f->legacy = lm;
	lm = NULL;
out:
	tfs_free(lm);
	tfs_free(payload);
	tfs_free(buf);
	tfs_free(coords);
	tfs_free(path);
	return err;
}

/* Moves one legacy tile list into a slot after checking its length. */
static enum tfs_err take_list(struct tfs_fragment *f, uint32_t slot,
			      uint64_t **list, uint64_t count,
			      const char *what, uint64_t **dst,
			      struct tfs_diag *d)
{
	if (count != f->tile_num)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u %s has %" PRIu64
				" entries, the fragment has %" PRIu64 " tiles",
				f->name, slot, what, count, f->tile_num);
	*dst = *list;
	*list = NULL;
	return TFS_E_OK;
}

static enum tfs_err take_legacy_lists(struct tfs_fragment *f,
				      struct tfs_diag *d)
{
	struct tfs_legacy_meta *lm = f->legacy;
	uint32_t a_num = lm->attr_num;
	enum tfs_err err = TFS_E_OK;

	for (uint32_t slot = 0; slot <= a_num && slot < f->footer.slot_num &&
				!err;
	     slot++) {
		struct tfs_slot_tiles *t = &f->slots[slot];
		bool var = slot < a_num && f->schema->attrs[slot].var;

		/* A dense fragment has no coordinates. */
		if (slot < a_num || lm->tile_counts[slot] || !f->footer.dense)
			err = take_list(f, slot, &lm->tile_offsets[slot],
					lm->tile_counts[slot], "tile offsets",
					&t->offsets, d);
		if (!err && var)
			err = take_list(f, slot, &lm->tile_var_offsets[slot],
					lm->tile_var_counts[slot],
					"tile var offsets", &t->var_offsets, d);
		if (!err && var)
			err = take_list(f, slot, &lm->tile_var_sizes[slot],
					lm->tile_var_size_counts[slot],
					"tile var sizes", &t->var_sizes, d);
		if (!err)
			f->slot_loaded[slot] = true;
	}
	return err;
}

/* ---- tile and cell numbers ---------------------------------------------- */

/* Unsigned value of an integer of `size` bytes (little-endian). */
static uint64_t load_uint(const uint8_t *p, size_t size)
{
	uint64_t v = 0;

	for (size_t i = size; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t type_mask(size_t size)
{
	return size >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1;
}

static bool dim_has_int_tiles(const struct tfs_dim *dim)
{
	return !dim->var && dim->has_domain && dim->has_extent &&
	       tfs_datatype_is_integer(dim->type);
}

uint64_t tfs_schema_tile_cells(const struct tfs_schema *s)
{
	uint64_t cells = 1;

	for (uint32_t i = 0; i < s->dim_num; i++) {
		const struct tfs_dim *dim = &s->dims[i];
		size_t size = tfs_datatype_size(dim->type);
		uint64_t ext;

		if (!dim_has_int_tiles(dim) || size == 0 || size > 8)
			return 0;
		ext = load_uint(dim->extent, size) & type_mask(size);
		if (ext == 0 || cells > UINT64_MAX / ext)
			return 0;
		cells *= ext;
	}
	return cells;
}

/* Dense: tiles of the NED expanded to tile boundaries (read.md §2). */
static enum tfs_err dense_tile_num(struct tfs_fragment *f, uint64_t *out,
				   struct tfs_diag *d)
{
	const struct tfs_schema *s = f->schema;
	uint64_t tiles = 1;

	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];
		const struct tfs_range *r = &f->footer.ned[k];
		size_t size = tfs_datatype_size(dim->type);
		uint64_t mask, lo, ext, ilo, ihi, n;

		if (!dim_has_int_tiles(dim) || size == 0 || size > 8)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': dense, but dimension '%s' has no integer tiles",
					f->name, dim->name);
		if (tfs_value_cmp(dim->type, r->lo, dim->domain[0]) < 0 ||
		    tfs_value_cmp(dim->type, r->hi, dim->domain[1]) > 0 ||
		    tfs_value_cmp(dim->type, r->lo, r->hi) > 0)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': non-empty domain of dimension '%s' is outside the array domain",
					f->name, dim->name);
		mask = type_mask(size);
		lo = load_uint(dim->domain[0], size);
		ext = load_uint(dim->extent, size) & mask;
		if (ext == 0)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': dimension '%s' has a zero tile extent",
					f->name, dim->name);
		ilo = ((load_uint(r->lo, size) - lo) & mask) / ext;
		ihi = ((load_uint(r->hi, size) - lo) & mask) / ext;
		n = ihi - ilo + 1;
		if (n == 0 || tiles > UINT64_MAX / n)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': too many tiles", f->name);
		tiles *= n;
	}
	*out = tiles;
	return TFS_E_OK;
}

static enum tfs_err compute_counts(struct tfs_fragment *f, struct tfs_diag *d)
{
	const struct tfs_footer *ft = &f->footer;
	enum tfs_err err;

	f->tile_num = 0;
	f->cell_num = 0;
	if (ft->empty)
		return TFS_E_OK;
	if (ft->dense) {
		uint64_t cells = tfs_schema_tile_cells(f->schema);

		err = dense_tile_num(f, &f->tile_num, d);
		if (err)
			return err;
		if (cells == 0 || f->tile_num > UINT64_MAX / cells)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': too many cells", f->name);
		f->cell_num = f->tile_num * cells;
		return TFS_E_OK;
	}
	f->tile_num = ft->sparse_tile_num;
	if (f->tile_num) {
		uint64_t cap = f->schema->capacity;
		uint64_t full = f->tile_num - 1;

		if (ft->last_tile_cell_num > cap ||
		    (cap && full > (UINT64_MAX - ft->last_tile_cell_num) / cap))
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': last tile holds %" PRIu64
					" cells, capacity is %" PRIu64,
					f->name, ft->last_tile_cell_num, cap);
		f->cell_num = full * cap + ft->last_tile_cell_num;
	}
	return TFS_E_OK;
}

/* ---- creating and freeing ----------------------------------------------- */

void tfs__fragment_free(struct tfs_fragment *f)
{
	if (!f)
		return;
	if (f->slots) {
		for (uint32_t i = 0; i < f->footer.slot_num; i++) {
			tfs_free(f->slots[i].offsets);
			tfs_free(f->slots[i].var_offsets);
			tfs_free(f->slots[i].var_sizes);
			tfs_free(f->slots[i].validity_offsets);
		}
	}
	tfs_free(f->slots);
	tfs_free(f->slot_loaded);
	if (f->rtree_loaded)
		tfs_rtree_release(&f->rtree);
	if (f->processed_loaded)
		tfs_strlist_release(&f->processed_conditions);
	tfs_footer_release(&f->footer);
	if (f->legacy) {
		tfs_legacy_meta_release(f->legacy);
		tfs_free(f->legacy);
	}
	pthread_mutex_destroy(&f->lock);
	tfs_free(f->name);
	tfs_free(f->dir);
	tfs_free(f);
}

enum tfs_err tfs__fragment_new(const struct tfs_arraydir *a, const char *rel,
			       const struct tfs__meta_index *idx,
			       struct tfs_fragment **out, struct tfs_diag *d)
{
	const struct meta_key *k;
	struct tfs_fragment *f;
	const char *slash = strrchr(rel, '/');
	enum tfs_err err;

	*out = NULL;
	f = tfs_callocn(1, sizeof(*f));
	if (!f)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	if (pthread_mutex_init(&f->lock, NULL) != 0) {
		tfs_free(f);
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	}
	f->name = tfs_strdup(slash ? slash + 1 : rel);
	f->dir = tfs__array_path(a, rel);
	if (!f->name || !f->dir) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       a->path);
		goto out_free;
	}
	if (tfs_name_parse(f->name, &f->name_info) != TFS_E_OK) {
		err = tfs_fail(d, TFS_E_CORRUPT,
			       "fragment '%s': not a timestamped name", f->dir);
		goto out_free;
	}
	if (f->name_info.version <= 2) {
		/* Footers of versions 1–2 are never consolidated. */
		err = legacy_from_file(a, f, d);
	} else {
		k = meta_find(idx, f->name);
		err = k ? footer_from_meta(a, f, idx, k, d)
			: footer_from_file(a, f, d);
	}
	if (err)
		goto out_free;
	err = compute_counts(f, d);
	if (err)
		goto out_free;
	f->slots = tfs_callocn(f->footer.slot_num ? f->footer.slot_num : 1,
			       sizeof(*f->slots));
	f->slot_loaded = tfs_callocn(f->footer.slot_num ? f->footer.slot_num : 1,
				     sizeof(*f->slot_loaded));
	if (!f->slots || !f->slot_loaded) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       a->path);
		goto out_free;
	}
	if (f->legacy) {
		err = take_legacy_lists(f, d);
		if (err)
			goto out_free;
	}
	*out = f;
	return TFS_E_OK;

out_free:
	tfs__fragment_free(f);
	return err;
}

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
	uint64_t size;
	char *path;
	enum tfs_err err;

	err = meta_file_size(a, f, &path, &size, d);
	if (err)
		return err;
	err = tfs__read_tile_at(a, path, size, off, TFS__FILE_MAX, payload,
				plen, d);
	tfs_free(path);
	return err;
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
	err = tfs__read_tile_at(a, path, size, off,
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
		return tfs_fail(d, err, "fragment '%s': slot %u %s: %s", f->name,
				slot, what, tfs_diag_msg(&ld));
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
			return tfs_fail(d, TFS_E_CORRUPT,
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

/* Checks the footer's size of one data file of a slot against the file:
 * tile reads allocate up to what the footer says, so a lying footer must
 * not claim more than the file holds. A missing file is left to the
 * reads to report. */
static enum tfs_err check_data_file(const struct tfs_arraydir *a,
				    const struct tfs_fragment *f, uint32_t slot,
				    enum tfs_file_kind kind, uint64_t claimed,
				    struct tfs_diag *d)
{
	struct tfs_stat st;
	char *path;
	enum tfs_err err;

	if (claimed == 0)
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
	const struct tfs_footer *ft = &f->footer;
	struct slot_kind k = slot_kind_of(f, slot);
	struct tfs_slot_tiles t = {NULL, NULL, NULL, NULL};
	uint64_t size;
	char *path;
	enum tfs_err err;

	if (f->tile_num == 0)
		return TFS_E_OK;
	err = check_data_file(a, f, slot, TFS_FILE_FIXED,
			      ft->file_sizes[slot], d);
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
			    "tile offsets", ft->file_sizes[slot], &t.offsets, d);
	if (!err && k.var)
		err = read_u64_list(a, f, path, size,
				    ft->tile_var_offsets_off[slot], slot,
				    "tile var offsets", ft->file_var_sizes[slot],
				    &t.var_offsets, d);
	if (!err && k.var)
		err = read_u64_list(a, f, path, size,
				    ft->tile_var_sizes_off[slot], slot,
				    "tile var sizes", UINT64_MAX, &t.var_sizes, d);
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
	f->slots[slot] = t;
	return TFS_E_OK;
}

enum tfs_err tfs_fragment_slot_tiles(struct tfs_arraydir *a,
				     struct tfs_fragment *f, uint32_t slot,
				     const struct tfs_slot_tiles **out,
				     struct tfs_diag *d)
{
	enum tfs_err err = TFS_E_OK;

	*out = NULL;
	if (slot >= f->footer.slot_num)
		return tfs_fail(d, TFS_E_INVALID,
				"fragment '%s': no slot %u (it has %u)", f->name,
				slot, f->footer.slot_num);
	pthread_mutex_lock(&f->lock);
	if (!f->slot_loaded[slot]) {
		err = load_slot(a, f, slot, d);
		if (!err)
			f->slot_loaded[slot] = true;
	}
	pthread_mutex_unlock(&f->lock);
	if (!err)
		*out = &f->slots[slot];
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
	const struct tfs_schema *s = f->schema;

	if (f->footer.empty || !f->footer.ned)
		return TFS_E_OK;
	for (uint64_t t = 0; t < f->rtree.leaf_num; t++) {
		for (uint32_t k = 0; k < s->dim_num; k++) {
			const struct tfs_range *mbr =
				&f->rtree.leaves[t * s->dim_num + k];
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
	enum tfs_err err = TFS_E_OK;

	*out = NULL;
	pthread_mutex_lock(&f->lock);
	if (!f->rtree_loaded) {
		struct tfs_diag ld;
		uint8_t *payload;
		size_t plen;

		err = read_meta_tile(a, f, f->footer.rtree_off, &payload, &plen,
				     d);
		if (!err) {
			tfs_diag_init(&ld);
			err = tfs_rtree_parse(&f->rtree, payload, plen,
					      f->footer.version, f->schema, &ld);
			tfs_free(payload);
			if (err)
				tfs_fail(d, err, "fragment '%s': R-tree: %s",
					 f->name, tfs_diag_msg(&ld));
		}
		if (!err && !f->footer.dense && f->rtree.leaf_num != f->tile_num) {
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "fragment '%s': R-tree has %" PRIu64
				       " leaves for %" PRIu64 " tiles",
				       f->name, f->rtree.leaf_num, f->tile_num);
			tfs_rtree_release(&f->rtree);
		}
		if (!err && !f->footer.dense &&
		    (err = rtree_inside_ned(f, d)))
			tfs_rtree_release(&f->rtree);
		if (!err)
			f->rtree_loaded = true;
	}
	pthread_mutex_unlock(&f->lock);
	if (!err)
		*out = &f->rtree;
	return err;
}

enum tfs_err tfs_fragment_processed(struct tfs_arraydir *a,
				    struct tfs_fragment *f,
				    const struct tfs_strlist **out,
				    struct tfs_diag *d)
{
	enum tfs_err err = TFS_E_OK;

	*out = NULL;
	pthread_mutex_lock(&f->lock);
	if (!f->processed_loaded && f->footer.version < 16) {
		memset(&f->processed_conditions, 0,
		       sizeof(f->processed_conditions));
		f->processed_loaded = true;
	}
	if (!f->processed_loaded) {
		struct tfs_diag ld;
		uint8_t *payload;
		size_t plen;

		err = read_meta_tile(a, f, f->footer.processed_conditions_off,
				     &payload, &plen, d);
		if (!err) {
			tfs_diag_init(&ld);
			err = tfs_strlist_parse(&f->processed_conditions, payload,
						plen, &ld);
			tfs_free(payload);
			if (err)
				tfs_fail(d, err,
					 "fragment '%s': processed conditions: %s",
					 f->name, tfs_diag_msg(&ld));
		}
		if (!err)
			f->processed_loaded = true;
	}
	pthread_mutex_unlock(&f->lock);
	if (!err)
		*out = &f->processed_conditions;
	return err;
}

/* ---- data file names (fragment.md §2) ----------------------------------- */

uint32_t tfs_fragment_dim_slot(const struct tfs_fragment *f, uint32_t dim)
{
	if (f->footer.version < 5)
		return f->schema->attr_num; /* zipped __coords */
	return f->schema->attr_num + 1 + dim;
}

uint32_t tfs_fragment_timestamps_slot(const struct tfs_fragment *f)
{
	return f->schema->attr_num + 1 +
	       (f->footer.version >= 5 ? f->schema->dim_num : 0);
}

uint32_t tfs_fragment_delete_ts_slot(const struct tfs_fragment *f)
{
	return tfs_fragment_timestamps_slot(f) +
	       (f->footer.has_timestamps ? 1 : 0);
}

/* Version 8 file-name encoding: these exact replacement strings (some are
 * not the real percent codes). */
static const char *v8_escape(unsigned char c)
{
	switch (c) {
	case '!': return "%21";
	case '#': return "%23";
	case '$': return "%24";
	case '%': return "%25";
	case '&': return "%26";
	case '\'': return "%27";
	case '(': return "%28";
	case ')': return "%29";
	case '*': return "%2A";
	case '+': return "%2B";
	case ',': return "%2C";
	case '/': return "%2F";
	case ':': return "%3A";
	case ';': return "%3B";
	case '=': return "%3D";
	case '?': return "%3F";
	case '@': return "%40";
	case '[': return "%5B";
	case ']': return "%5D";
	case '"': return "%22";
	case '<': return "%20";
	case '>': return "%2D";
	case '\\': return "%30";
	case '|': return "%3C";
	default: return NULL;
	}
}

/* Appends the file stem of field `name` for a fragment of version v. */
static enum tfs_err append_field_name(struct tfs_buf *b, const char *name,
				      uint32_t v)
{
	enum tfs_err err = TFS_E_OK;

	if (v != 8)
		return tfs_buf_append(b, name, strlen(name));
	for (const char *p = name; *p && !err; p++) {
		const char *esc = v8_escape((unsigned char)*p);

		err = esc ? tfs_buf_append(b, esc, 3)
			  : tfs_buf_append_u8(b, (uint8_t)*p);
	}
	return err;
}

char *tfs_fragment_file_path(const struct tfs_fragment *f, uint32_t slot,
			     enum tfs_file_kind kind)
{
	const struct tfs_schema *s = f->schema;
	uint32_t v = f->footer.version;
	uint32_t a_num = s->attr_num;
	uint32_t dims = v >= 5 ? s->dim_num : 0;
	uint32_t ts = tfs_fragment_timestamps_slot(f);
	static const char *const suffix[] = {".tdb", "_var.tdb",
					     "_validity.tdb"};
	struct tfs_buf b;
	enum tfs_err err;
	uint8_t *bytes;
	size_t len;

	if ((unsigned)kind > TFS_FILE_VALIDITY || slot >= f->footer.slot_num)
		return NULL;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	err = tfs_buf_append(&b, f->dir, strlen(f->dir));
	if (!err)
		err = tfs_buf_append_u8(&b, '/');
	if (err)
		goto out_fail;
	if (slot < a_num) {
		if (v >= 9)
			err = tfs_buf_printf(&b, "a%u", slot);
		else
			err = append_field_name(&b, s->attrs[slot].name, v);
	} else if (slot == a_num) {
		err = tfs_buf_append(&b, "__coords", 8);
	} else if (slot <= a_num + dims) {
		if (v >= 9)
			err = tfs_buf_printf(&b, "d%u", slot - a_num - 1);
		else
			err = append_field_name(&b, s->dims[slot - a_num - 1].name,
						v);
	} else {
		/* Special fields of consolidated fragments (v14+/v15+). */
		uint32_t extra = slot - ts;

		if (!f->footer.has_timestamps)
			extra++;
		err = tfs_buf_printf(&b, "%s",
				     extra == 0 ? "t" : extra == 1 ? "dt" : "dci");
	}
	if (!err)
		err = tfs_buf_append(&b, suffix[kind], strlen(suffix[kind]));
	if (!err)
		err = tfs_buf_append_u8(&b, 0);
	if (err)
		goto out_fail;
	bytes = tfs_buf_detach(&b, &len);
	return (char *)bytes;

out_fail:
	tfs_buf_release(&b);
	return NULL;
}
