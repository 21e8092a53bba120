/* A fragment's footer (format/fragment.md §3-4): from a consolidated
 * .meta file (consolidated.md §1, searched through an index of its
 * entries) or from the end of the fragment's own
 * __fragment_metadata.tdb, legacy layouts included. */
#include "fragment_load_internal.h"

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

static enum tfs_err index_oom(const struct tfs_arraydir *a, struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory", a->path);
}

/* Reads and parses each consolidated metadata file into m; *keys counts
 * their entries. */
static enum tfs_err index_read_files(const struct tfs_arraydir *a,
				     struct tfs__meta_index *m,
				     char *const *rel_paths, size_t num,
				     size_t *keys, struct tfs_diag *d)
{
	enum tfs_err err;

	for (size_t i = 0; i < num; i++) {
		struct tfs_diag ld;
		uint8_t *payload;
		size_t len;

		m->rels[i] = tfs_strdup(rel_paths[i]);
		m->rel_num = i + 1;
		if (!m->rels[i])
			return index_oom(a, d);
		err = tfs__read_tile_file(a, rel_paths[i], &payload, &len, d);
		if (err)
			return err;
		tfs_diag_init(&ld);
		err = tfs_consolidated_meta_parse(&m->files[m->file_num],
						  payload, len, &ld);
		if (err)
			return tfs_fail(d, err, "'%s/%s': %s", a->path,
					rel_paths[i], tfs_diag_msg(&ld));
		m->file_num++;
		*keys += m->files[i].count;
	}
	return TFS_E_OK;
}

/* One key per entry of every file, sorted for lookup. */
static enum tfs_err index_keys(const struct tfs_arraydir *a,
			       struct tfs__meta_index *m, size_t keys,
			       struct tfs_diag *d)
{
	m->keys = tfs_callocn(keys ? keys : 1, sizeof(*m->keys));
	if (!m->keys)
		return index_oom(a, d);
	for (size_t i = 0; i < m->file_num; i++) {
		struct tfs_name_info ni;
		bool uri = tfs_name_parse(m->rels[i], &ni) == TFS_E_OK &&
			   ni.version < 9;

		for (size_t e = 0; e < m->files[i].count; e++) {
			struct meta_key *k = &m->keys[m->key_num];

			k->key = entry_key(m->files[i].entries[e].name, uri);
			if (!k->key)
				return index_oom(a, d);
			k->file = i;
			k->entry = e;
			m->key_num++;
		}
	}
	if (m->key_num > 1)
		qsort(m->keys, m->key_num, sizeof(*m->keys), key_cmp);
	return TFS_E_OK;
}

enum tfs_err tfs__meta_index_load(const struct tfs_arraydir *a,
				  char *const *rel_paths, size_t num,
				  struct tfs__meta_index **out,
				  struct tfs_diag *d)
{
	struct tfs__meta_index *m;
	size_t keys = 0;
	enum tfs_err err;

	*out = NULL;
	m = tfs_callocn(1, sizeof(*m));
	if (!m)
		return index_oom(a, d);
	m->files = tfs_callocn(num ? num : 1, sizeof(*m->files));
	m->rels = tfs_callocn(num ? num : 1, sizeof(*m->rels));
	if (!m->files || !m->rels) {
		err = index_oom(a, d);
		goto out_free;
	}
	err = index_read_files(a, m, rel_paths, num, &keys, d);
	if (!err)
		err = index_keys(a, m, keys, d);
	if (err)
		goto out_free;
	*out = m;
	return TFS_E_OK;

out_free:
	tfs__meta_index_free(m);
	return err;
}

/* The first .meta entry (in listing order) for the fragment called name. */
const struct meta_key *tfs__meta_find(const struct tfs__meta_index *m,
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

enum tfs_err tfs__footer_from_meta(const struct tfs_arraydir *a,
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

/* Where the footer of path (size bytes) starts and how long it is: fixed
 * by the schema for old versions (flen != 0), else stored in the last 8
 * bytes, read from whole (the file, when not NULL) or from storage. */
static enum tfs_err footer_span(const struct tfs_arraydir *a,
				const char *path, const uint8_t *whole,
				uint64_t size, uint32_t nv, uint64_t flen,
				uint64_t *start, uint64_t *len,
				struct tfs_diag *d)
{
	uint8_t tail[8];
	enum tfs_err err;

	*len = flen;
	if (flen) {
		if (flen > size)
			return tfs_fail(d, TFS_E_CORRUPT,
					"'%s': file too short for a version %u footer of %" PRIu64
					" bytes",
					path, nv, flen);
		*start = size - flen;
		return TFS_E_OK;
	}
	if (size < sizeof(tail))
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': file too short for a footer", path);
	if (whole) {
		memcpy(tail, whole + size - sizeof(tail), sizeof(tail));
	} else {
		err = tfs_vfs_read(a->vfs, path, size - sizeof(tail), tail,
				   sizeof(tail), d);
		if (err)
			return err;
	}
	*len = tfs_get_u64(tail);
	if (*len == 0 || *len > size - sizeof(tail))
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': footer length %" PRIu64
				" does not fit in the file (%" PRIu64 " bytes)",
				path, *len, size);
	*start = size - sizeof(tail) - *len;
	return TFS_E_OK;
}

/* The fixed footer length of a fragment before version 10, 0 when the
 * footer records its own length. */
static enum tfs_err fixed_footer_len(const struct tfs_arraydir *a,
				     const struct tfs_fragment *f,
				     uint64_t *len, struct tfs_diag *d)
{
	const struct tfs_schema *legacy = tfs__find_schema(a, "__array_schema.tdb");
	uint32_t nv = f->name_info.version;

	*len = 0;
	if (nv >= 10)
		return TFS_E_OK;
	if (!legacy)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': version %u needs '__array_schema.tdb', which is missing",
				f->name, nv);
	if (!has_var_dim(legacy))
		*len = tfs_footer_fixed_size(nv, legacy);
	return TFS_E_OK;
}

/* A metadata file of at most this many bytes is read whole with its
 * footer and kept: the tile lists a read loads later come from memory. */
#define META_KEEP_MAX ((uint64_t)16 << 10)

enum tfs_err tfs__footer_from_file(const struct tfs_arraydir *a,
				   struct tfs_fragment *f, uint8_t **meta_bytes,
				   struct tfs_diag *d)
{
	struct tfs_stat st;
	uint64_t start = 0, len = 0;
	uint8_t *buf = NULL, *whole = NULL;
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
	if (st.size <= META_KEEP_MAX && st.size > 0) {
		whole = tfs_malloc((size_t)st.size);
		if (!whole) {
			err = tfs_fail(d, TFS_E_NOMEM,
				       "fragment '%s': out of memory", f->name);
			goto out_path;
		}
		err = tfs_vfs_read(a->vfs, path, 0, whole, (size_t)st.size, d);
		if (err)
			goto out_whole;
	}
	err = fixed_footer_len(a, f, &len, d);
	if (!err)
		err = footer_span(a, path, whole, st.size,
				  f->name_info.version, len, &start, &len, d);
	if (err)
		goto out_whole;
	if (len > TFS__FILE_MAX) {
		err = tfs_fail(d, TFS_E_TOO_BIG,
			       "'%s': footer of %" PRIu64 " bytes is too large",
			       path, len);
		goto out_whole;
	}
	if (whole) {
		err = parse_footer(a, f, whole + start, (size_t)len, path, d);
	} else {
		buf = tfs_malloc((size_t)len);
		if (!buf) {
			err = tfs_fail(d, TFS_E_NOMEM,
				       "fragment '%s': out of memory", f->name);
			goto out_whole;
		}
		err = tfs_vfs_read(a->vfs, path, start, buf, (size_t)len, d);
		if (!err)
			err = parse_footer(a, f, buf, (size_t)len, path, d);
		tfs_free(buf);
	}
	if (!err) {
		f->meta_size = st.size;
		f->meta_size_known = true;
		*meta_bytes = whole;
		whole = NULL;
	}
out_whole:
	tfs_free(whole);
out_path:
	tfs_free(path);
	return err;
}

/* Versions 1–2: the whole metadata file is one generic tile (fragment.md
 * §9); the fragment is dense iff its folder has no __coords.tdb. The
 * parsed footer moves into the fragment; the R-tree and tile lists are
 * handed to its own entry once the tile number is known
 * (tfs__take_legacy_lists). */
enum tfs_err tfs__legacy_from_file(const struct tfs_arraydir *a,
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

enum tfs_err tfs__take_legacy_lists(struct tfs_fragment *f,
				    struct tfs_diag *d)
{
	struct tfs_legacy_meta *lm = f->legacy;
	struct tfs__frag_shared *z = f->shared;
	uint32_t a_num = lm->attr_num;
	enum tfs_err err = TFS_E_OK;

	z->rtree = lm->rtree;
	memset(&lm->rtree, 0, sizeof(lm->rtree));
	z->rtree_loaded = true;

	for (uint32_t slot = 0; slot <= a_num && slot < f->footer.slot_num &&
				!err;
	     slot++) {
		struct tfs_slot_tiles *t = &z->slots[slot];
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
			z->slot_loaded[slot] = true;
	}
	return err;
}
