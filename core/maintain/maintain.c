/* Consolidation and vacuum (format/consolidated.md, layout.md §6,
 * metadata.md §2): the four kinds TileDB makes, written so that every
 * read, at every time, is the same before and after.
 *
 * New files are written under a hidden name in the array folder (which no
 * reader lists as anything), made durable, then renamed into place, so a
 * reader never sees half a file; nothing is removed or changed by
 * consolidation, so readers that have the array open keep working. Only
 * vacuum removes, and only what a consolidation listed.
 *
 * Fragments (consolidated.md §5):
 * - dense arrays: the cells of the bounding box of the fragments of the
 *   range, read as of the range's end (older fragments and fill values
 *   where the range wrote nothing, so the box reads the same), written
 *   as one dense fragment named with the range [t1min, t2max]. Its .vac
 *   and the fragment itself apply only to windows that contain the whole
 *   range, so time travel into the range still sees the originals.
 * - sparse arrays of format 15 or later (TileDB's consolidation with
 *   timestamps): every cell of every fragment of the range, each fragment
 *   read alone in the window of its own time range, with the fragment's
 *   t1 stored as the cell's timestamp (t.tdb) and every version of a
 *   coordinate kept; named [t1min, t2max]. Such a fragment and its .vac
 *   apply to every window that overlaps the range, and the reader keeps
 *   only the cells whose timestamp is inside the window, so time travel
 *   into the range reads what it read before. Delete conditions stay in
 *   force and apply per cell timestamp.
 * - other sparse ranges (format < 15, or a fragment of the range that
 *   has timestamps of its own, whose older versions cannot be read back
 *   one by one): the cells of the range's fragments alone (the window
 *   [t1min, t2max]) without timestamps, stamped [t2max, t2max] from
 *   format 15 on (where fragments and .vac files apply to every window
 *   that overlaps them) and [t1min, t2max] before, so that windows ending
 *   inside the range read the originals and later ones the merged cells.
 * Either way the range must not interleave in time with a fragment left
 * out of it (its place in the newest-wins order would change). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_fragment.h"
#include <tilefs/tilefs.h>

/* Files that name many objects are read up to this size. */
#define MT_FILE_MAX ((size_t)1 << 30)

struct mt {
	struct tfs_vfs *vfs;
	bool own_vfs;
	char *path; /* the array folder without a trailing '/' */
	const uint8_t *key;
};

static enum tfs_err nomem(struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_NOMEM, "out of memory");
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static enum tfs_err mt_init(struct mt *m, const char *path,
			    const struct tfs_write_opts *wo,
			    struct tfs_diag *d)
{
	size_t n = strlen(path);
	enum tfs_object kind;
	enum tfs_err e;

	memset(m, 0, sizeof(*m));
	while (n > 1 && path[n - 1] == '/')
		n--;
	m->path = tfs_strndup(path, n);
	if (!m->path)
		return nomem(d);
	m->key = wo ? wo->key : NULL;
	m->vfs = wo ? wo->vfs : NULL;
	if (!m->vfs) {
		e = tfs_vfs_default_new(m->path, &m->vfs, d);
		if (e) {
			tfs_free(m->path);
			return e;
		}
		m->own_vfs = true;
	}
	e = tfs_object_type(m->vfs, m->path, &kind, d);
	if (!e && kind != TFS_OBJECT_ARRAY)
		e = tfs_fail(d, TFS_E_NOT_ARRAY, "'%s' is not a TileDB array",
			     m->path);
	if (e) {
		if (m->own_vfs)
			tfs_vfs_free(m->vfs);
		tfs_free(m->path);
		m->path = NULL;
	}
	return e;
}

static void mt_release(struct mt *m)
{
	if (m->own_vfs)
		tfs_vfs_free(m->vfs);
	tfs_free(m->path);
}

/* The array path joined with an array-relative path (new string). */
static char *mt_path(const struct mt *m, const char *rel)
{
	return tfs_path_join(m->path, rel);
}

static enum tfs_err mt_open(const struct mt *m, uint64_t t0, uint64_t t1,
			    struct tfs_array **out, struct tfs_diag *d)
{
	struct tfs_open_opts oo = {.vfs = m->vfs, .key = m->key,
				   .timestamp = t1, .timestamp_start = t0,
				   .threads = 1};

	return tfs_array_open(m->path, &oo, out, d);
}

/* A folder's entries; a missing folder has none. */
static enum tfs_err mt_list(const struct mt *m, const char *rel,
			    struct tfs_dirlist *out, struct tfs_diag *d)
{
	char *dir = rel ? mt_path(m, rel) : tfs_strdup(m->path);
	enum tfs_err e;

	out->names = NULL;
	out->count = 0;
	if (!dir)
		return nomem(d);
	e = tfs_vfs_list_or_empty(m->vfs, dir, out, d);
	tfs_free(dir);
	return e;
}

static enum tfs_err mt_read(const struct mt *m, const char *rel,
			    uint8_t **buf, size_t *len, struct tfs_diag *d)
{
	char *p = mt_path(m, rel);
	enum tfs_err e;

	if (!p)
		return nomem(d);
	e = tfs_vfs_read_all(m->vfs, p, MT_FILE_MAX, buf, len, d);
	tfs_free(p);
	return e;
}

/* The non-empty lines of a file (.ign, .vac). */
static enum tfs_err mt_read_lines(const struct mt *m, const char *rel,
				  struct tfs_strlist *lines, struct tfs_diag *d)
{
	uint8_t *buf;
	size_t len;
	enum tfs_err e;

	lines->items = NULL;
	lines->count = 0;
	e = mt_read(m, rel, &buf, &len, d);
	if (e)
		return e;
	e = tfs_lines_parse(lines, buf, len);
	tfs_free(buf);
	return e ? nomem(d) : TFS_E_OK;
}

static enum tfs_err mt_exists(const struct mt *m, const char *rel, bool *out,
			      struct tfs_diag *d)
{
	char *p = mt_path(m, rel);
	struct tfs_stat st;
	enum tfs_err e;

	*out = false;
	if (!p)
		return nomem(d);
	e = tfs_vfs_stat(m->vfs, p, &st, d);
	tfs_free(p);
	*out = !e && st.exists;
	return e;
}

/* Writes a new file at the array-relative path rel: first under a hidden
 * name in the array folder, made durable, then renamed into place and the
 * folder made durable. On failure nothing is left at rel. */
static enum tfs_err mt_write_file(const struct mt *m, const char *rel,
				  const void *data, size_t len,
				  struct tfs_diag *d)
{
	const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	char *final = mt_path(m, rel), *tmp = NULL, *dir = NULL;
	struct tfs_buf name;
	enum tfs_err e;

	tfs_buf_init(&name, TFS_BUF_NO_MAX);
	if (!final || tfs_buf_printf(&name, ".tfs-%s.tmp", base) ||
	    tfs_buf_append_u8(&name, 0)) {
		e = nomem(d);
		goto out;
	}
	tmp = mt_path(m, (const char *)name.data);
	dir = tfs_strndup(final, (size_t)(strrchr(final, '/') - final));
	if (!tmp || !dir) {
		e = nomem(d);
		goto out;
	}
	e = m->vfs->ops->write(m->vfs, tmp, data, len, d);
	if (!e)
		e = m->vfs->ops->fsync(m->vfs, tmp, d);
	if (!e)
		e = m->vfs->ops->mkdir(m->vfs, dir, d);
	if (!e)
		e = m->vfs->ops->rename(m->vfs, tmp, final, d);
	if (e) {
		struct tfs_diag ignored;

		tfs_diag_init(&ignored);
		(void)m->vfs->ops->remove(m->vfs, tmp, &ignored);
		goto out;
	}
	e = m->vfs->ops->fsync(m->vfs, dir, d);
	if (e) {
		/* Callers take a failure to mean "nothing at rel". */
		struct tfs_diag ignored;

		tfs_diag_init(&ignored);
		(void)m->vfs->ops->remove(m->vfs, final, &ignored);
	}
out:
	tfs_free(final);
	tfs_free(tmp);
	tfs_free(dir);
	tfs_buf_release(&name);
	return e;
}

/* Removes a file or a folder tree; a missing one is no error. */
static enum tfs_err remove_tree(struct tfs_vfs *vfs, const char *path,
				unsigned depth, struct tfs_diag *d)
{
	struct tfs_stat st;
	struct tfs_dirlist l;
	enum tfs_err e;

	e = tfs_vfs_stat(vfs, path, &st, d);
	if (e || !st.exists)
		return e;
	if (st.is_dir) {
		if (depth > 8)
			return tfs_fail(d, TFS_E_CORRUPT,
					"'%s': folders nested too deep", path);
		e = tfs_vfs_list(vfs, path, &l, d);
		if (e)
			return e;
		for (size_t i = 0; !e && i < l.count; i++) {
			char *p = tfs_path_join(path, l.names[i]);

			e = p ? remove_tree(vfs, p, depth + 1, d) : nomem(d);
			tfs_free(p);
		}
		tfs_dirlist_release(&l);
		if (e)
			return e;
	}
	return vfs->ops->remove(vfs, path, d);
}

static enum tfs_err mt_remove(const struct mt *m, const char *rel,
			      unsigned *removed, struct tfs_diag *d)
{
	char *p = mt_path(m, rel);
	struct tfs_stat st;
	enum tfs_err e;

	if (!p)
		return nomem(d);
	e = tfs_vfs_stat(m->vfs, p, &st, d);
	if (!e && st.exists) {
		e = remove_tree(m->vfs, p, 0, d);
		if (!e && removed)
			(*removed)++;
	}
	tfs_free(p);
	return e;
}

/* A new timestamped name (tfs_name_new) into name[TFS_NAME_MAX]. */
static enum tfs_err new_name(char *name, uint64_t t1, uint64_t t2,
			     uint32_t version, const char *ext,
			     struct tfs_diag *d)
{
	enum tfs_err e = tfs_name_new(name, TFS_NAME_MAX, t1, t2, version, ext);

	return e ? tfs_fail(d, e, "no random bytes for a new name") : TFS_E_OK;
}

/* Widens the time range [*t1, *t2] to hold [a1, a2]. */
static void widen(uint64_t *t1, uint64_t *t2, uint64_t a1, uint64_t a2)
{
	*t1 = a1 < *t1 ? a1 : *t1;
	*t2 = a2 > *t2 ? a2 : *t2;
}

/* Fragment metadata and commits consolidation make files of the layout
 * format 12 brought (consolidated.md §1–2). */
static enum tfs_err need_v12(const struct mt *m, uint32_t version,
			     const char *what, struct tfs_diag *d)
{
	if (version >= 12)
		return TFS_E_OK;
	return tfs_fail(d, TFS_E_UNSUPPORTED,
			"array '%s': %s consolidation needs format version 12 "
			"or later (the array has %" PRIu32 ")",
			m->path, what, version);
}

static void set_made(char *made, size_t cap, const char *name)
{
	if (made && cap)
		snprintf(made, cap, "%s", name ? name : "");
}

/* Writes len bytes as a new file "<dir>/<timestamped name><ext>" and
 * names it in made on success. */
static enum tfs_err write_new_file(const struct mt *m, const char *dir,
				   uint64_t t1, uint64_t t2, uint32_t version,
				   const char *ext, const uint8_t *data,
				   size_t len, char *made, size_t made_cap,
				   struct tfs_diag *d)
{
	char name[TFS_NAME_MAX], rel[512];
	enum tfs_err e;

	e = new_name(name, t1, t2, version, ext, d);
	if (e)
		return e;
	snprintf(rel, sizeof(rel), "%s/%s", dir, name);
	e = mt_write_file(m, rel, data, len, d);
	if (!e)
		set_made(made, made_cap, name);
	return e;
}

/* ---- A set of strings (sorted array; small) ------------------------------ */

struct strset {
	char **items;
	size_t count, cap;
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool strset_has(const struct strset *s, const char *v)
{
	for (size_t i = 0; i < s->count; i++)
		if (!strcmp(s->items[i], v))
			return true;
	return false;
}

static enum tfs_err strset_add(struct strset *s, const char *v)
{
	char *c;

	if (strset_has(s, v))
		return TFS_E_OK;
	if (s->count == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **p = tfs_reallocn(s->items, cap, sizeof(*p));

		if (!p)
			return TFS_E_NOMEM;
		s->items = p;
		s->cap = cap;
	}
	c = tfs_strdup(v);
	if (!c)
		return TFS_E_NOMEM;
	s->items[s->count++] = c;
	return TFS_E_OK;
}

static void strset_release(struct strset *s)
{
	for (size_t i = 0; i < s->count; i++)
		tfs_free(s->items[i]);
	tfs_free(s->items);
	memset(s, 0, sizeof(*s));
}

/* Adds every line of every file ending in ext of folder dir (its entries
 * in l) to out; .vac lines normalized (tfs_vac_line_normalize). */
static enum tfs_err add_lines_of(const struct mt *m, const char *dir,
				 const struct tfs_dirlist *l, const char *ext,
				 bool vac_lines, struct strset *out,
				 struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < l->count; i++) {
		struct tfs_strlist lines;
		char rel[512];

		if (!ends_with(l->names[i], ext))
			continue;
		snprintf(rel, sizeof(rel), "%s/%s", dir, l->names[i]);
		e = mt_read_lines(m, rel, &lines, d);
		if (e)
			break;
		for (size_t k = 0; !e && k < lines.count; k++) {
			const char *line = lines.items[k];
			char *norm = NULL;

			if (vac_lines) {
				norm = tfs_vac_line_normalize(line);
				line = norm;
			}
			e = line ? strset_add(out, line) : TFS_E_NOMEM;
			tfs_free(norm);
		}
		tfs_strlist_release(&lines);
		if (e)
			e = nomem(d);
	}
	return e;
}

/* Every line of every .ign file of __commits/ (layout.md §6 step 1). */
static enum tfs_err load_ignored(const struct mt *m,
				 const struct tfs_dirlist *commits,
				 struct strset *out, struct tfs_diag *d)
{
	return add_lines_of(m, "__commits", commits, ".ign", false, out, d);
}

/* ---- Fragment metadata (consolidated.md §1) ------------------------------- */

/* The footer bytes of fragment `name` (version v >= 10), without the
 * trailing footer_len. */
static enum tfs_err read_footer(const struct mt *m, const char *name,
				uint32_t v, struct tfs_buf *out,
				struct tfs_diag *d)
{
	char rel[512];
	char *p;
	struct tfs_stat st;
	uint8_t lenb[8];
	uint64_t flen = 0;
	enum tfs_err e;
	size_t at;

	snprintf(rel, sizeof(rel), "%s%s/__fragment_metadata.tdb",
		 v >= 12 ? "__fragments/" : "", name);
	p = mt_path(m, rel);
	if (!p)
		return nomem(d);
	e = tfs_vfs_stat(m->vfs, p, &st, d);
	if (!e && (!st.exists || st.size < 8))
		e = tfs_fail(d, TFS_E_CORRUPT, "fragment '%s': no metadata",
			     name);
	if (!e)
		e = tfs_vfs_read(m->vfs, p, st.size - 8, lenb, 8, d);
	if (!e) {
		for (int k = 7; k >= 0; k--)
			flen = flen << 8 | lenb[k];
		if (flen > st.size - 8 || flen > MT_FILE_MAX)
			e = tfs_fail(d, TFS_E_CORRUPT,
				     "fragment '%s': footer length %" PRIu64
				     " past the metadata file",
				     name, flen);
	}
	if (!e) {
		at = out->len;
		e = tfs_buf_resize(out, at + (size_t)flen);
		if (e)
			e = nomem(d);
		else
			e = tfs_vfs_read(m->vfs, p, st.size - 8 - flen,
					 out->data + at, (size_t)flen, d);
	}
	tfs_free(p);
	return e;
}

static enum tfs_err consolidate_fragment_meta(const struct mt *m,
					      char *made, size_t made_cap,
					      struct tfs_diag *d)
{
	struct tfs_array *a;
	struct tfs_buf dir, footers, tile;
	uint64_t t1 = UINT64_MAX, t2 = 0;
	uint32_t n = 0, version;
	size_t frag_num;
	enum tfs_err e;

	e = mt_open(m, 0, 0, &a, d);
	if (e)
		return e;
	version = tfs_array_schema(a)->version;
	e = need_v12(m, version, "fragment metadata", d);
	if (e) {
		tfs_array_close(a);
		return e;
	}
	tfs_buf_init(&dir, TFS_BUF_NO_MAX);
	tfs_buf_init(&footers, TFS_BUF_NO_MAX);
	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	frag_num = tfs_array_fragment_count(a);
	/* The directory first (offsets are known once its size is). */
	for (size_t i = 0; i < frag_num; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		if (f.version >= 10)
			n++;
	}
	if (n == 0) {
		set_made(made, made_cap, NULL);
		goto out;
	}
	{
		uint64_t off = 4;

		for (size_t i = 0; i < frag_num; i++) {
			struct tfs_fragment_info f;

			tfs_array_fragment(a, i, &f);
			if (f.version >= 10)
				off += 16 + strlen(f.name);
		}
		if (tfs_buf_append_u32(&dir, n)) {
			e = nomem(d);
			goto out;
		}
		for (size_t i = 0; !e && i < frag_num; i++) {
			struct tfs_fragment_info f;
			size_t before = footers.len;

			tfs_array_fragment(a, i, &f);
			if (f.version < 10)
				continue;
			e = read_footer(m, f.name, f.version, &footers, d);
			if (e)
				break;
			if (tfs_buf_append_u64(&dir, strlen(f.name)) ||
			    tfs_buf_append(&dir, f.name, strlen(f.name)) ||
			    tfs_buf_append_u64(&dir, off + before))
				e = nomem(d);
			widen(&t1, &t2, f.t1, f.t2);
		}
		if (e)
			goto out;
	}
	if (tfs_buf_append(&dir, footers.data, footers.len)) {
		e = nomem(d);
		goto out;
	}
	e = tfs_generic_tile_encode(&tile, dir.data, dir.len, m->key, d);
	if (e)
		goto out;
	e = write_new_file(m, "__fragment_meta", t1, t2, version, ".meta",
			   tile.data, tile.len, made, made_cap, d);
out:
	tfs_buf_release(&dir);
	tfs_buf_release(&footers);
	tfs_buf_release(&tile);
	tfs_array_close(a);
	return e;
}

/* ---- Commits (consolidated.md §2) ----------------------------------------- */

struct con_item {
	char *marker;
	uint8_t *del; /* .del: the delete tile; else NULL */
	size_t del_len;
};

struct con_items {
	struct con_item *items;
	size_t count, cap;
};

static bool con_items_has(const struct con_items *c, const char *marker)
{
	for (size_t i = 0; i < c->count; i++)
		if (!strcmp(c->items[i].marker, marker))
			return true;
	return false;
}

static enum tfs_err con_items_add(struct con_items *c, const char *marker,
				  const uint8_t *del, size_t del_len)
{
	struct con_item *it;

	if (con_items_has(c, marker))
		return TFS_E_OK;
	if (c->count == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct con_item *p = tfs_reallocn(c->items, cap, sizeof(*p));

		if (!p)
			return TFS_E_NOMEM;
		c->items = p;
		c->cap = cap;
	}
	it = &c->items[c->count];
	memset(it, 0, sizeof(*it));
	it->marker = tfs_strdup(marker);
	if (!it->marker)
		return TFS_E_NOMEM;
	if (del) {
		it->del = tfs_malloc(del_len ? del_len : 1);
		if (!it->del) {
			tfs_free(it->marker);
			return TFS_E_NOMEM;
		}
		memcpy(it->del, del, del_len);
		it->del_len = del_len;
	}
	c->count++;
	return TFS_E_OK;
}

static void con_items_release(struct con_items *c)
{
	for (size_t i = 0; i < c->count; i++) {
		tfs_free(c->items[i].marker);
		tfs_free(c->items[i].del);
	}
	tfs_free(c->items);
	memset(c, 0, sizeof(*c));
}

static int con_item_cmp(const void *a, const void *b)
{
	return strcmp(((const struct con_item *)a)->marker,
		      ((const struct con_item *)b)->marker);
}

/* Adds the entries of the .con file `name` that no .ign names. */
static enum tfs_err con_file_items(const struct mt *m, const char *name,
				   const struct strset *ignored,
				   struct con_items *out, struct tfs_diag *d)
{
	struct tfs_con_file cf = {NULL, 0};
	char rel[512];
	uint8_t *buf;
	size_t len;
	enum tfs_err e;

	snprintf(rel, sizeof(rel), "__commits/%s", name);
	e = mt_read(m, rel, &buf, &len, d);
	if (e)
		return e;
	e = tfs_con_parse(&cf, buf, len, d);
	for (size_t k = 0; !e && k < cf.count; k++) {
		const struct tfs_con_entry *en = &cf.entries[k];

		if (strset_has(ignored, en->marker))
			continue;
		if (en->del_size && en->del_offset + en->del_size > len) {
			e = tfs_fail(d, TFS_E_CORRUPT,
				     "'%s': delete tile past the end", rel);
			break;
		}
		if (con_items_add(out, en->marker,
				  ends_with(en->marker, ".del")
					  ? buf + en->del_offset
					  : NULL,
				  (size_t)en->del_size))
			e = nomem(d);
	}
	tfs_con_release(&cf);
	tfs_free(buf);
	return e;
}

static bool is_commit_file(const char *name)
{
	return ends_with(name, ".wrt") || ends_with(name, ".del") ||
	       ends_with(name, ".upd");
}

static enum tfs_err consolidate_commits(const struct mt *m, char *made,
					size_t made_cap, struct tfs_diag *d)
{
	struct tfs_dirlist commits;
	struct strset ignored = {0};
	struct con_items items = {0};
	struct tfs_buf out;
	struct tfs_array *a;
	size_t con_num = 0, loose = 0;
	uint64_t t1 = UINT64_MAX, t2 = 0;
	uint32_t version;
	enum tfs_err e;

	e = mt_open(m, 0, 0, &a, d);
	if (e)
		return e;
	version = tfs_array_schema(a)->version;
	tfs_array_close(a);
	e = need_v12(m, version, "commits", d);
	if (e)
		return e;
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	e = mt_list(m, "__commits", &commits, d);
	if (e)
		return e;
	e = load_ignored(m, &commits, &ignored, d);
	for (size_t i = 0; !e && i < commits.count; i++) {
		const char *n = commits.names[i];

		if (ends_with(n, ".con")) {
			con_num++;
			e = con_file_items(m, n, &ignored, &items, d);
		}
	}
	for (size_t i = 0; !e && i < commits.count; i++) {
		const char *n = commits.names[i];
		char marker[512];
		uint8_t *buf = NULL;
		size_t len = 0;

		if (!is_commit_file(n))
			continue;
		snprintf(marker, sizeof(marker), "__commits/%s", n);
		if (con_items_has(&items, marker))
			continue;
		loose++;
		if (ends_with(n, ".del"))
			e = mt_read(m, marker, &buf, &len, d);
		if (!e && con_items_add(&items, marker, ends_with(n, ".del")
							   ? (buf ? buf
								  : (uint8_t *)"")
							   : NULL,
					len))
			e = nomem(d);
		tfs_free(buf);
	}
	if (e)
		goto out;
	/* One .con already holds everything: nothing to do. */
	if (loose == 0 && con_num <= 1) {
		set_made(made, made_cap, NULL);
		goto out;
	}
	if (items.count)
		qsort(items.items, items.count, sizeof(*items.items),
		      con_item_cmp);
	for (size_t i = 0; !e && i < items.count; i++) {
		const struct con_item *it = &items.items[i];
		const char *base = strrchr(it->marker, '/');
		struct tfs_name_info ni;

		if (tfs_name_parse(base ? base + 1 : it->marker, &ni) ==
		    TFS_E_OK) {
			widen(&t1, &t2, ni.t1, ni.t2);
		}
		if (tfs_buf_append(&out, it->marker, strlen(it->marker)) ||
		    tfs_buf_append_u8(&out, '\n') ||
		    (it->del && (tfs_buf_append_u64(&out, it->del_len) ||
				 tfs_buf_append(&out, it->del, it->del_len))))
			e = nomem(d);
	}
	if (e)
		goto out;
	if (t1 > t2)
		t1 = t2;
	e = write_new_file(m, "__commits", t1, t2, version, ".con", out.data,
			   out.len, made, made_cap, d);
out:
	tfs_buf_release(&out);
	con_items_release(&items);
	strset_release(&ignored);
	tfs_dirlist_release(&commits);
	return e;
}

/* ---- Array metadata (metadata.md §2) -------------------------------------- */

/* The metadata files of __meta/ that no .vac file hides (at any time). */
static enum tfs_err live_meta_files(const struct mt *m,
				    const struct tfs_dirlist *meta,
				    struct strset *out, struct tfs_diag *d)
{
	struct strset hidden = {0};
	enum tfs_err e;

	e = add_lines_of(m, "__meta", meta, ".vac", true, &hidden, d);
	for (size_t i = 0; !e && i < meta->count; i++) {
		const char *n = meta->names[i];
		char rel[512];

		if (ends_with(n, ".vac") || ends_with(n, ".tmp"))
			continue;
		snprintf(rel, sizeof(rel), "__meta/%s", n);
		if (!strset_has(&hidden, rel) && strset_add(out, n))
			e = nomem(d);
	}
	strset_release(&hidden);
	return e;
}

static enum tfs_err consolidate_array_meta(const struct mt *m, char *made,
					   size_t made_cap,
					   struct tfs_diag *d)
{
	struct tfs_dirlist meta;
	struct strset live = {0};
	struct tfs_metadata merged = {NULL, 0};
	struct tfs_meta_file mf;
	struct tfs_buf payload, tile, vac;
	uint64_t t1 = UINT64_MAX, t2 = 0;
	char name[TFS_NAME_MAX], rel[512];
	enum tfs_err e;

	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	tfs_buf_init(&vac, TFS_BUF_NO_MAX);
	e = mt_list(m, "__meta", &meta, d);
	if (e)
		return e;
	e = live_meta_files(m, &meta, &live, d);
	if (e)
		goto out;
	if (live.count < 2) {
		set_made(made, made_cap, NULL);
		goto out;
	}
	qsort(live.items, live.count, sizeof(*live.items), str_cmp);
	for (size_t i = 0; i < live.count; i++) {
		struct tfs_name_info ni;

		if (tfs_name_parse(live.items[i], &ni)) {
			e = tfs_fail(d, TFS_E_CORRUPT,
				     "array metadata '%s/__meta/%s': not a "
				     "timestamped name",
				     m->path, live.items[i]);
			goto out;
		}
		widen(&t1, &t2, ni.t1, ni.t2);
		if (tfs_buf_printf(&vac, "__meta/%s\n", live.items[i])) {
			e = nomem(d);
			goto out;
		}
	}
	/* Every file counts at [0, t2]: the map the merged file replaces. */
	e = tfs_metadata_load(m->vfs, m->path, "array", m->key, 0, t2, &merged,
			      d);
	if (e)
		goto out;
	mf.entries = merged.entries;
	mf.count = merged.count;
	if (tfs_meta_file_serialize(&payload, &mf)) {
		e = nomem(d);
		goto out;
	}
	e = tfs_generic_tile_encode(&tile, payload.data, payload.len, m->key,
				    d);
	if (e)
		goto out;
	e = new_name(name, t1, t2, 0, "", d);
	if (e)
		goto out;
	/* The merged file first, then the list of what it replaces: until
	 * the .vac exists both are read, and they agree (metadata.md §2:
	 * reapplying the inputs after the merge changes nothing). */
	snprintf(rel, sizeof(rel), "__meta/%s", name);
	e = mt_write_file(m, rel, tile.data, tile.len, d);
	if (e)
		goto out;
	snprintf(rel, sizeof(rel), "__meta/%s.vac", name);
	e = mt_write_file(m, rel, vac.data, vac.len, d);
	if (!e)
		set_made(made, made_cap, name);
out:
	tfs_metadata_release(&merged);
	tfs_buf_release(&payload);
	tfs_buf_release(&tile);
	tfs_buf_release(&vac);
	strset_release(&live);
	tfs_dirlist_release(&meta);
	return e;
}

/* ---- Fragments (consolidated.md §4-5) ------------------------------------- */

struct frag_set {
	struct tfs_fragment_info *in; /* the fragments of the range */
	size_t num;
	uint64_t t1min, t2max;
	bool dense;
	uint32_t max_version;
};

/* Refuses to merge cells read with another schema than the writer's. */
static enum tfs_err same_schema(const struct mt *m, struct tfs_writer *w,
				struct tfs_array *a, struct tfs_diag *d)
{
	if (strcmp(tfs_writer_schema(w)->name, tfs_array_schema(a)->name))
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': the schema changed after the "
				"range; consolidate before the change",
				m->path);
	return TFS_E_OK;
}

/* Writes every cell that qo reads from a as one new fragment (the
 * writer opened with wo, layout and box) and commits it. */
static enum tfs_err write_read(const struct mt *m, struct tfs_array *a,
			       const struct tfs_query_opts *qo,
			       const struct tfs_write_opts *wo,
			       enum tfs_write_layout layout,
			       const struct tfs_range *box,
			       struct tfs_write_result *res,
			       struct tfs_diag *d)
{
	struct tfs_writer *w = NULL;
	struct tfs_query *q = NULL;
	enum tfs_err e;

	e = tfs_writer_open(m->path, wo, layout, box, &w, d);
	if (!e)
		e = same_schema(m, w, a, d);
	if (!e)
		e = tfs_query_open(a, qo, &q, d);
	while (!e) {
		const struct tfs_batch *b;

		e = tfs_query_next(q, &b, d);
		if (e || !b)
			break;
		e = tfs_writer_append(w, b, NULL, d);
	}
	if (!e)
		e = tfs_writer_commit(w, res, d);
	tfs_query_close(q);
	tfs_writer_free(w);
	return e;
}

/* Picks the fragments whose [t1, t2] lies in [start, end]; refuses a
 * range that interleaves with a fragment left out. */
static enum tfs_err pick_fragments(const struct mt *m, struct tfs_array *a,
				   uint64_t start, uint64_t end,
				   struct frag_set *fs, struct tfs_diag *d)
{
	size_t n = tfs_array_fragment_count(a);

	memset(fs, 0, sizeof(*fs));
	fs->t1min = UINT64_MAX;
	fs->in = tfs_callocn(n ? n : 1, sizeof(*fs->in));
	if (!fs->in)
		return nomem(d);
	for (size_t i = 0; i < n; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		if (f.t1 < start || f.t2 > end)
			continue;
		fs->in[fs->num++] = f;
		widen(&fs->t1min, &fs->t2max, f.t1, f.t2);
		if (f.version > fs->max_version)
			fs->max_version = f.version;
	}
	if (fs->num < 2)
		return TFS_E_OK;
	for (size_t i = 0; i < n; i++) {
		struct tfs_fragment_info f;
		bool inside = false;

		tfs_array_fragment(a, i, &f);
		for (size_t k = 0; k < fs->num; k++)
			if (!strcmp(fs->in[k].name, f.name))
				inside = true;
		if (!inside && f.t1 <= fs->t2max && f.t2 >= fs->t1min)
			return tfs_fail(d, TFS_E_INVALID,
					"array '%s': fragment '%s' overlaps the "
					"range [%" PRIu64 ", %" PRIu64
					"] in time but is not inside it; choose "
					"a range that holds all of it or none",
					m->path, f.name, fs->t1min, fs->t2max);
	}
	return TFS_E_OK;
}

/* Dense: the bounding box of the range's fragments, read as of its end. */
static enum tfs_err write_dense(const struct mt *m,
				const struct tfs_consolidate_opts *opts,
				const struct frag_set *fs,
				struct tfs_write_result *res,
				struct tfs_diag *d)
{
	struct tfs_array *a = NULL;
	const struct tfs_schema *s;
	struct tfs_range *box = NULL;
	struct tfs_write_opts wo = opts->write;
	const char **names = NULL;
	enum tfs_err e;

	e = mt_open(m, 0, fs->t2max, &a, d);
	if (e)
		return e;
	s = tfs_array_schema(a);
	box = tfs_callocn(s->dim_num, sizeof(*box));
	names = tfs_callocn(s->attr_num ? s->attr_num : 1, sizeof(*names));
	if (!box || !names) {
		e = nomem(d);
		goto out;
	}
	for (uint32_t k = 0; k < s->dim_num; k++) {
		size_t sz = tfs_datatype_size(s->dims[k].type);

		for (size_t i = 0; i < fs->num; i++) {
			const struct tfs_range *r;

			/* empty fragments have no non-empty domain */
			if (!fs->in[i].non_empty_domain)
				continue;
			r = &fs->in[i].non_empty_domain[k];

			if (!box[k].lo ||
			    tfs_value_cmp(s->dims[k].type, r->lo, box[k].lo) < 0)
				box[k].lo = r->lo;
			if (!box[k].hi ||
			    tfs_value_cmp(s->dims[k].type, r->hi, box[k].hi) > 0)
				box[k].hi = r->hi;
		}
		box[k].lo_len = box[k].hi_len = sz;
		if (!box[k].lo) {
			/* Only empty fragments: no cells to write. */
			memset(res, 0, sizeof(*res));
			goto out;
		}
	}
	for (uint32_t i = 0; i < s->attr_num; i++)
		names[i] = s->attrs[i].name;
	wo.t1 = fs->t1min;
	wo.t2 = fs->t2max;
	{
		struct tfs_query_opts qo = {.subarray = box, .fields = names,
					    .field_num = s->attr_num};

		e = write_read(m, a, &qo, &wo, TFS_WRITE_DENSE_BOX, box, res,
			       d);
	}
out:
	tfs_free(box);
	tfs_free(names);
	tfs_array_close(a);
	return e;
}

/* Whether the range's fragments can be merged with per-cell timestamps:
 * none carries timestamps of its own (their older versions could not be
 * read back one by one), and no two start at the same time (the cell
 * timestamp is the fragment's t1, which decides newest-wins). */
static enum tfs_err can_stamp(const struct mt *m, const struct frag_set *fs,
			      bool *out, struct tfs_diag *d)
{
	struct tfs_arraydir_opts ao = {.key = m->key, .t0 = 0,
				       .t1 = UINT64_MAX};
	struct tfs_arraydir *ad;
	enum tfs_err e;

	*out = fs->max_version >= 15;
	for (size_t i = 0; *out && i < fs->num; i++)
		for (size_t k = i + 1; k < fs->num; k++)
			if (fs->in[i].t1 == fs->in[k].t1)
				*out = false;
	if (!*out)
		return TFS_E_OK;
	e = tfs_arraydir_open(m->vfs, m->path, &ao, &ad, d);
	if (e)
		return e;
	for (size_t i = 0; i < ad->listed_num; i++) {
		const struct tfs_fragment *f = ad->listed[i];

		if (!f->footer.has_timestamps && !f->footer.has_delete_meta)
			continue;
		for (size_t k = 0; k < fs->num; k++)
			if (!strcmp(fs->in[k].name, f->name))
				*out = false;
	}
	tfs_arraydir_close(ad);
	return TFS_E_OK;
}

/* Sparse, as TileDB consolidates from format 15 on: every cell of every
 * fragment of the range, each read alone in the window of its own time
 * range, with the fragment's t1 as the cell's timestamp; all versions of
 * a coordinate are kept, and the reader picks per cell by time
 * (format/read.md §7). Named [t1min, t2max]. *fallback when a fragment
 * does not read alone in its window. */
static enum tfs_err write_sparse_stamped(const struct mt *m,
					 const struct tfs_consolidate_opts *opts,
					 const struct frag_set *fs,
					 struct tfs_write_result *res,
					 bool *fallback, struct tfs_diag *d)
{
	struct tfs_write_opts wo = opts->write;
	struct tfs_writer *w = NULL;
	struct tfs_column *cols = NULL;
	uint64_t *stamps = NULL;
	size_t stamps_cap = 0;
	enum tfs_err e;

	*fallback = false;
	wo.t1 = fs->t1min;
	wo.t2 = fs->t2max;
	wo.cell_timestamps = true;
	e = tfs_writer_open(m->path, &wo, TFS_WRITE_UNORDERED, NULL, &w, d);
	for (size_t k = 0; !e && !*fallback && k < fs->num; k++) {
		const struct tfs_fragment_info *fk = &fs->in[k];
		struct tfs_query_opts qo = {0};
		struct tfs_query *q = NULL;
		struct tfs_array *a;
		size_t visible = 0;

		e = mt_open(m, fk->t1, fk->t2, &a, d);
		if (e)
			break;
		e = same_schema(m, w, a, d);
		if (e) {
			tfs_array_close(a);
			break;
		}
		for (size_t i = 0; i < tfs_array_fragment_count(a); i++) {
			struct tfs_fragment_info f;

			tfs_array_fragment(a, i, &f);
			if (f.visible) {
				visible++;
				if (strcmp(f.name, fk->name))
					*fallback = true;
			}
		}
		if (visible != 1)
			*fallback = true;
		if (!*fallback)
			e = tfs_query_open(a, &qo, &q, d);
		while (!e && !*fallback) {
			const struct tfs_batch *b;
			struct tfs_batch sb;

			e = tfs_query_next(q, &b, d);
			if (e || !b)
				break;
			if (b->cell_num > stamps_cap) {
				tfs_free(stamps);
				stamps_cap = b->cell_num;
				stamps = tfs_mallocn(stamps_cap, 8);
			}
			tfs_free(cols);
			cols = tfs_mallocn(b->column_num + 1, sizeof(*cols));
			if (!stamps || !cols) {
				e = nomem(d);
				break;
			}
			for (uint64_t i = 0; i < b->cell_num; i++)
				stamps[i] = fk->t1;
			memcpy(cols, b->columns, b->column_num * sizeof(*cols));
			cols[b->column_num] = (struct tfs_column){
				.name = "__timestamps", .type = TFS_UINT64,
				.cell_val_num = 1,
				.data = (const uint8_t *)stamps,
				.data_len = b->cell_num * 8};
			sb = *b;
			sb.columns = cols;
			sb.column_num = b->column_num + 1;
			e = tfs_writer_append(w, &sb, NULL, d);
		}
		tfs_query_close(q);
		tfs_array_close(a);
	}
	if (!e && !*fallback)
		e = tfs_writer_commit(w, res, d);
	tfs_writer_free(w);
	tfs_free(cols);
	tfs_free(stamps);
	return e;
}

/* Sparse: every cell of the range's fragments (newest wins where the
 * array has no duplicates), read in the window of the range. */
static enum tfs_err write_sparse(const struct mt *m,
				 const struct tfs_consolidate_opts *opts,
				 const struct frag_set *fs,
				 struct tfs_write_result *res,
				 struct tfs_diag *d)
{
	struct tfs_query_opts qo = {0};
	struct tfs_write_opts wo = opts->write;
	struct tfs_array *a;
	enum tfs_err e;

	e = mt_open(m, fs->t1min, fs->t2max, &a, d);
	if (e)
		return e;
	wo.t1 = fs->max_version >= 15 ? fs->t2max : fs->t1min;
	wo.t2 = fs->t2max;
	e = write_read(m, a, &qo, &wo, TFS_WRITE_UNORDERED, NULL, res, d);
	tfs_array_close(a);
	return e;
}

/* Takes back a committed fragment whose .vac could not be written: the
 * .vac if it is there after all, then the commit, then the folder. */
static void uncommit(const struct mt *m, const char *name, uint32_t version)
{
	struct tfs_diag ignored;
	char rel[512];

	tfs_diag_init(&ignored);
	snprintf(rel, sizeof(rel), version >= 12 ? "__commits/%s.vac" : "%s.vac",
		 name);
	if (mt_remove(m, rel, NULL, &ignored))
		return;
	snprintf(rel, sizeof(rel), version >= 12 ? "__commits/%s.wrt" : "%s.ok",
		 name);
	if (mt_remove(m, rel, NULL, &ignored))
		return;
	snprintf(rel, sizeof(rel), "%s%s", version >= 12 ? "__fragments/" : "",
		 name);
	(void)mt_remove(m, rel, NULL, &ignored);
}

static enum tfs_err consolidate_fragments(const struct mt *m,
					  const struct tfs_consolidate_opts *opts,
					  char *made, size_t made_cap,
					  struct tfs_diag *d)
{
	uint64_t start = opts ? opts->start : 0;
	uint64_t end = opts && opts->end ? opts->end : UINT64_MAX;
	struct tfs_consolidate_opts none = {0};
	struct tfs_write_result res = {0};
	struct tfs_array *a;
	struct frag_set fs = {0};
	struct tfs_buf vac;
	bool dense;
	enum tfs_err e;

	if (!opts)
		opts = &none;
	/* The fragment infos point into this array: it stays open until
	 * the end. */
	e = mt_open(m, 0, 0, &a, d);
	if (e)
		return e;
	dense = tfs_array_schema(a)->array_type == TFS_DENSE;
	e = pick_fragments(m, a, start, end, &fs, d);
	if (e || fs.num < 2)
		goto out;
	if (dense) {
		e = write_dense(m, opts, &fs, &res, d);
	} else {
		bool stamp, fallback = true;

		e = can_stamp(m, &fs, &stamp, d);
		if (!e && stamp)
			e = write_sparse_stamped(m, opts, &fs, &res, &fallback,
						 d);
		if (!e && fallback)
			e = write_sparse(m, opts, &fs, &res, d);
	}
	if (e || res.cell_num == 0)
		goto out;
	tfs_buf_init(&vac, TFS_BUF_NO_MAX);
	for (size_t i = 0; !e && i < fs.num; i++)
		if (tfs_buf_printf(&vac, "%s%s\n",
				   fs.in[i].version >= 12 ? "__fragments/" : "",
				   fs.in[i].name))
			e = nomem(d);
	if (!e) {
		char rel[512];
		/* The writer uses the schema's version; the .vac goes where
		 * that version keeps commits. */
		uint32_t v = tfs_array_schema(a)->version;

		snprintf(rel, sizeof(rel), "%s%s.vac",
			 v >= 12 ? "__commits/" : "", res.name);
		e = mt_write_file(m, rel, vac.data, vac.len, d);
		if (e)
			uncommit(m, res.name, v);
	}
	tfs_buf_release(&vac);
	if (!e)
		set_made(made, made_cap, res.name);
out:
	tfs_free(fs.in);
	tfs_array_close(a);
	return e;
}

/* ---- Vacuum --------------------------------------------------------------- */

/* Whether fragment `name` (a consolidated one) is committed. */
static enum tfs_err frag_committed(const struct mt *m, const char *name,
				   bool new_layout, const struct strset *con,
				   bool *out, struct tfs_diag *d)
{
	char rel[512];

	snprintf(rel, sizeof(rel), new_layout ? "__commits/%s.wrt" : "%s.ok",
		 name);
	if (strset_has(con, rel)) {
		*out = true;
		return TFS_E_OK;
	}
	return mt_exists(m, rel, out, d);
}

/* Markers of every .con file that no .ign names. */
static enum tfs_err con_markers(const struct mt *m,
				const struct tfs_dirlist *commits,
				const struct strset *ignored,
				struct strset *out, struct tfs_diag *d)
{
	struct con_items items = {0};
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < commits->count; i++)
		if (ends_with(commits->names[i], ".con"))
			e = con_file_items(m, commits->names[i], ignored,
					   &items, d);
	for (size_t i = 0; !e && i < items.count; i++)
		if (strset_add(out, items.items[i].marker))
			e = nomem(d);
	con_items_release(&items);
	return e;
}

/* Whether rel (array-relative, last component fname) is a fragment folder
 * other than the consolidated one: a timestamped name, no reserved or
 * dotted name, a folder holding __fragment_metadata.tdb. */
static enum tfs_err is_fragment_dir(const struct mt *m, const char *rel,
				    const char *fname, const char *cname,
				    bool *out, struct tfs_diag *d)
{
	static const char *const reserved[] = {
		"__schema", "__meta", "__fragment_meta", "__fragments",
		"__commits", "__labels", "__group", "__enumerations"};
	struct tfs_name_info ni;
	char path[600];
	bool exists;
	enum tfs_err e;

	*out = false;
	if (!fname[0] || strlen(rel) > 400 || !strcmp(fname, cname) ||
	    strchr(fname, '/') || strchr(fname, '.') ||
	    strncmp(fname, "__", 2) || tfs_name_parse(fname, &ni))
		return TFS_E_OK;
	for (size_t i = 0; i < sizeof(reserved) / sizeof(*reserved); i++)
		if (!strcmp(fname, reserved[i]))
			return TFS_E_OK;
	snprintf(path, sizeof(path), "%s/__fragment_metadata.tdb", rel);
	e = mt_exists(m, path, &exists, d);
	*out = !e && exists;
	return e;
}

/* Vacuums what one fragment .vac file lists (then the .vac). */
static enum tfs_err vacuum_vac(const struct mt *m, const char *vac_rel,
			       const struct strset *con, uint32_t version,
			       unsigned *removed, struct tfs_diag *d)
{
	const char *vac_name = strrchr(vac_rel, '/') ? strrchr(vac_rel, '/') + 1
						     : vac_rel;
	struct tfs_strlist lines;
	struct tfs_buf ign;
	char cname[256], rel[512];
	bool committed;
	enum tfs_err e;

	snprintf(cname, sizeof(cname), "%.*s", (int)(strlen(vac_name) - 4),
		 vac_name);
	/* A .vac whose consolidated fragment is not committed belongs to a
	 * consolidation that did not finish: what it lists is still the only
	 * copy of those cells. */
	e = frag_committed(m, cname, vac_rel != vac_name, con, &committed, d);
	if (e || !committed)
		return e;
	e = mt_read_lines(m, vac_rel, &lines, d);
	if (e)
		return e;
	tfs_buf_init(&ign, TFS_BUF_NO_MAX);
	/* Commits that a .con file names stay committed after their own
	 * file is gone: an .ign file takes them back first (§3). */
	for (size_t i = 0; !e && i < lines.count; i++) {
		char *norm = tfs_vac_line_normalize(lines.items[i]);
		const char *fname;

		if (!norm) {
			e = nomem(d);
			break;
		}
		fname = !strncmp(norm, "__fragments/", 12) ? norm + 12 : norm;
		snprintf(rel, sizeof(rel), "__commits/%s.wrt", fname);
		if (strset_has(con, rel) && tfs_buf_printf(&ign, "%s\n", rel))
			e = nomem(d);
		tfs_free(norm);
	}
	if (!e && ign.len) {
		struct tfs_name_info ni;

		if (tfs_name_parse(cname, &ni))
			ni.t1 = ni.t2 = 0;
		e = write_new_file(m, "__commits", ni.t1, ni.t2, version,
				   ".ign", ign.data, ign.len, NULL, 0, d);
	}
	for (size_t i = 0; !e && i < lines.count; i++) {
		char *norm = tfs_vac_line_normalize(lines.items[i]);
		bool in_new, is_frag;
		const char *fname;

		if (!norm) {
			e = nomem(d);
			break;
		}
		in_new = !strncmp(norm, "__fragments/", 12);
		fname = in_new ? norm + 12 : norm;
		/* Never the consolidated fragment itself, nor anything that is
		 * not a fragment folder (a damaged .vac naming __schema must
		 * not cost the array its schema). */
		e = is_fragment_dir(m, norm, fname, cname, &is_frag, d);
		if (e || !is_frag) {
			tfs_free(norm);
			continue;
		}
		/* The commit first: from then on no reader sees the fragment,
		 * so removing its files cannot break a new reader. */
		snprintf(rel, sizeof(rel), in_new ? "__commits/%s.wrt" : "%s.ok",
			 fname);
		e = mt_remove(m, rel, NULL, d);
		if (!e)
			e = mt_remove(m, norm, removed, d);
		tfs_free(norm);
	}
	if (!e)
		e = mt_remove(m, vac_rel, NULL, d);
	tfs_buf_release(&ign);
	tfs_strlist_release(&lines);
	return e;
}

static enum tfs_err vacuum_fragments(const struct mt *m, unsigned *removed,
				     struct tfs_diag *d)
{
	struct tfs_dirlist commits, root;
	struct strset ignored = {0}, con = {0};
	uint32_t version = TFS_FORMAT_VERSION_WRITE;
	enum tfs_err e;

	e = mt_list(m, "__commits", &commits, d);
	if (e)
		return e;
	e = mt_list(m, NULL, &root, d);
	if (!e)
		e = load_ignored(m, &commits, &ignored, d);
	if (!e)
		e = con_markers(m, &commits, &ignored, &con, d);
	for (size_t i = 0; !e && i < commits.count; i++) {
		struct tfs_name_info ni;
		char rel[512];

		if (!ends_with(commits.names[i], ".vac"))
			continue;
		if (!tfs_name_parse(commits.names[i], &ni) && ni.version >= 12)
			version = ni.version;
		snprintf(rel, sizeof(rel), "__commits/%s", commits.names[i]);
		e = vacuum_vac(m, rel, &con, version, removed, d);
	}
	for (size_t i = 0; !e && i < root.count; i++)
		if (ends_with(root.names[i], ".vac") && root.names[i][0] == '_')
			e = vacuum_vac(m, root.names[i], &con, version, removed,
				       d);
	strset_release(&ignored);
	strset_release(&con);
	tfs_dirlist_release(&root);
	tfs_dirlist_release(&commits);
	return e;
}

/* Index of the timestamped name ending in ext with the greatest t2 (the
 * last of equals), or SIZE_MAX when there is none. */
static size_t newest_of(const struct tfs_dirlist *l, const char *ext)
{
	size_t keep = SIZE_MAX;
	uint64_t best = 0;

	for (size_t i = 0; i < l->count; i++) {
		struct tfs_name_info ni;

		if (!ends_with(l->names[i], ext) ||
		    tfs_name_parse(l->names[i], &ni))
			continue;
		if (keep == SIZE_MAX || ni.t2 >= best) {
			keep = i;
			best = ni.t2;
		}
	}
	return keep;
}

/* Keeps the newest .meta file (newest_of). */
static enum tfs_err vacuum_fragment_meta(const struct mt *m, unsigned *removed,
					 struct tfs_diag *d)
{
	struct tfs_dirlist l;
	size_t keep;
	enum tfs_err e;

	e = mt_list(m, "__fragment_meta", &l, d);
	if (e)
		return e;
	keep = newest_of(&l, ".meta");
	for (size_t i = 0; !e && keep != SIZE_MAX && i < l.count; i++) {
		char rel[512];

		if (i == keep || !ends_with(l.names[i], ".meta"))
			continue;
		snprintf(rel, sizeof(rel), "__fragment_meta/%s", l.names[i]);
		e = mt_remove(m, rel, removed, d);
	}
	tfs_dirlist_release(&l);
	return e;
}

/* Removes commit files that the newest .con holds, and older .con files
 * whose every entry it holds. */
static enum tfs_err vacuum_commits(const struct mt *m, unsigned *removed,
				   struct tfs_diag *d)
{
	struct tfs_dirlist commits;
	struct strset ignored = {0};
	struct con_items newest = {0};
	size_t keep;
	enum tfs_err e;

	e = mt_list(m, "__commits", &commits, d);
	if (e)
		return e;
	e = load_ignored(m, &commits, &ignored, d);
	keep = newest_of(&commits, ".con");
	if (e || keep == SIZE_MAX)
		goto out;
	e = con_file_items(m, commits.names[keep], &ignored, &newest, d);
	for (size_t i = 0; !e && i < commits.count; i++) {
		const char *n = commits.names[i];
		char rel[512];

		if (i == keep)
			continue;
		snprintf(rel, sizeof(rel), "__commits/%s", n);
		if (is_commit_file(n)) {
			if (con_items_has(&newest, rel))
				e = mt_remove(m, rel, removed, d);
		} else if (ends_with(n, ".con")) {
			struct con_items old = {0};
			bool covered = true;

			e = con_file_items(m, n, &ignored, &old, d);
			for (size_t k = 0; !e && k < old.count; k++)
				if (!con_items_has(&newest, old.items[k].marker))
					covered = false;
			con_items_release(&old);
			if (!e && covered)
				e = mt_remove(m, rel, removed, d);
		}
	}
out:
	con_items_release(&newest);
	strset_release(&ignored);
	tfs_dirlist_release(&commits);
	return e;
}

/* Whether rel is "__meta/<name>" of a metadata file other than cons. */
static bool meta_file_name(const char *rel, const char *cons)
{
	struct tfs_name_info ni;
	const char *n = rel + 7;

	return !strncmp(rel, "__meta/", 7) && strcmp(rel, cons) &&
	       !strncmp(n, "__", 2) && !strchr(n, '/') && !strchr(n, '.') &&
	       !tfs_name_parse(n, &ni);
}

static enum tfs_err vacuum_array_meta(const struct mt *m, unsigned *removed,
				      struct tfs_diag *d)
{
	struct tfs_dirlist meta;
	enum tfs_err e;

	e = mt_list(m, "__meta", &meta, d);
	for (size_t i = 0; !e && i < meta.count; i++) {
		const char *n = meta.names[i];
		struct tfs_strlist lines;
		char rel[512], cons[512];
		bool exists;

		if (!ends_with(n, ".vac"))
			continue;
		/* Only when the merged file exists. */
		snprintf(cons, sizeof(cons), "__meta/%.*s",
			 (int)(strlen(n) - 4), n);
		e = mt_exists(m, cons, &exists, d);
		if (e || !exists)
			continue;
		snprintf(rel, sizeof(rel), "__meta/%s", n);
		e = mt_read_lines(m, rel, &lines, d);
		if (e)
			break;
		for (size_t k = 0; !e && k < lines.count; k++) {
			char *norm = tfs_vac_line_normalize(lines.items[k]);

			if (!norm) {
				e = nomem(d);
				break;
			}
			/* Only metadata files: timestamped names in __meta/
			 * (never "..", a .vac or the merged file). */
			if (meta_file_name(norm, cons))
				e = mt_remove(m, norm, removed, d);
			tfs_free(norm);
		}
		tfs_strlist_release(&lines);
		if (!e)
			e = mt_remove(m, rel, NULL, d);
	}
	tfs_dirlist_release(&meta);
	return e;
}

/* Temporary files of consolidations that died (mt_write_file's hidden
 * names in the array folder), once they are old enough that no running
 * consolidation still writes them. */
#define STALE_TMP_NS ((int64_t)3600 * 1000000000)

static enum tfs_err remove_stale_tmp(const struct mt *m, struct tfs_diag *d)
{
	struct tfs_dirlist root;
	struct timespec now;
	enum tfs_err e;

	e = mt_list(m, NULL, &root, d);
	if (e)
		return e;
	clock_gettime(CLOCK_REALTIME, &now);
	for (size_t i = 0; !e && i < root.count; i++) {
		const char *n = root.names[i];
		char *p;
		struct tfs_stat st;

		if (strncmp(n, ".tfs-", 5) || !ends_with(n, ".tmp"))
			continue;
		p = mt_path(m, n);
		if (!p) {
			e = nomem(d);
			break;
		}
		e = tfs_vfs_stat(m->vfs, p, &st, d);
		if (!e && st.exists && !st.is_dir &&
		    (int64_t)now.tv_sec * 1000000000 + now.tv_nsec -
				    st.mtime_ns >
			    STALE_TMP_NS)
			e = m->vfs->ops->remove(m->vfs, p, d);
		tfs_free(p);
	}
	tfs_dirlist_release(&root);
	return e;
}

/* ---- Entry points --------------------------------------------------------- */

enum tfs_err tfs_array_consolidate(const char *path,
				   enum tfs_consolidate_mode mode,
				   const struct tfs_consolidate_opts *opts,
				   char *made, size_t made_cap,
				   struct tfs_diag *d)
{
	struct mt m;
	enum tfs_err e;

	set_made(made, made_cap, NULL);
	e = mt_init(&m, path, opts ? &opts->write : NULL, d);
	if (e)
		return e;
	switch (mode) {
	case TFS_CONSOLIDATE_FRAGMENTS:
		e = consolidate_fragments(&m, opts, made, made_cap, d);
		break;
	case TFS_CONSOLIDATE_FRAGMENT_META:
		e = consolidate_fragment_meta(&m, made, made_cap, d);
		break;
	case TFS_CONSOLIDATE_COMMITS:
		e = consolidate_commits(&m, made, made_cap, d);
		break;
	case TFS_CONSOLIDATE_ARRAY_META:
		e = consolidate_array_meta(&m, made, made_cap, d);
		break;
	default:
		e = tfs_fail(d, TFS_E_INVALID, "unknown consolidation mode");
		break;
	}
	mt_release(&m);
	return e;
}

enum tfs_err tfs_array_vacuum(const char *path, enum tfs_consolidate_mode mode,
			      const struct tfs_write_opts *opts,
			      unsigned *removed, struct tfs_diag *d)
{
	unsigned count = 0;
	struct mt m;
	enum tfs_err e;

	if (removed)
		*removed = 0;
	e = mt_init(&m, path, opts, d);
	if (e)
		return e;
	switch (mode) {
	case TFS_CONSOLIDATE_FRAGMENTS:
		e = vacuum_fragments(&m, &count, d);
		break;
	case TFS_CONSOLIDATE_FRAGMENT_META:
		e = vacuum_fragment_meta(&m, &count, d);
		break;
	case TFS_CONSOLIDATE_COMMITS:
		e = vacuum_commits(&m, &count, d);
		break;
	case TFS_CONSOLIDATE_ARRAY_META:
		e = vacuum_array_meta(&m, &count, d);
		break;
	default:
		e = tfs_fail(d, TFS_E_INVALID, "unknown consolidation mode");
		break;
	}
	if (!e)
		e = remove_stale_tmp(&m, d);
	if (removed)
		*removed = count;
	mt_release(&m);
	return e;
}
