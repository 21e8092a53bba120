/* The array under maintenance (struct mt): opening it, array-relative
 * paths, reading, listing, writing a file durably under a hidden name then
 * renaming it into place, removing trees; and a small sorted string set
 * with the lists of ignored fragments. */
#include "maintain_internal.h"

enum tfs_err tfs__mt_nomem(struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_NOMEM, "out of memory");
}

enum tfs_err tfs__mt_init(struct mt *m, const char *path,
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
		return tfs__mt_nomem(d);
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

void tfs__mt_release(struct mt *m)
{
	if (m->own_vfs)
		tfs_vfs_free(m->vfs);
	tfs_free(m->path);
}

/* The array path joined with an array-relative path (new string). */
char *tfs__mt_path(const struct mt *m, const char *rel)
{
	return tfs_path_join(m->path, rel);
}

enum tfs_err tfs__mt_open(const struct mt *m, uint64_t t0, uint64_t t1,
			  struct tfs_array **out, struct tfs_diag *d)
{
	struct tfs_open_opts oo = {.vfs = m->vfs, .key = m->key,
				   .timestamp = t1, .timestamp_start = t0,
				   .threads = 1};

	return tfs_array_open(m->path, &oo, out, d);
}

enum tfs_err tfs__mt_open_purged(const struct mt *m, uint64_t t0, uint64_t t1,
				 struct tfs_array **out, struct tfs_diag *d)
{
	struct tfs_open_opts oo = {.vfs = m->vfs, .key = m->key,
				   .timestamp = t1, .timestamp_start = t0,
				   .delete_timestamp = UINT64_MAX - 1,
				   .threads = 1};

	return tfs_array_open(m->path, &oo, out, d);
}

/* A folder's entries; a missing folder has none. */
enum tfs_err tfs__mt_list(const struct mt *m, const char *rel,
			  struct tfs_dirlist *out, struct tfs_diag *d)
{
	char *dir = rel ? tfs__mt_path(m, rel) : tfs_strdup(m->path);
	enum tfs_err e;

	out->names = NULL;
	out->count = 0;
	if (!dir)
		return tfs__mt_nomem(d);
	e = tfs_vfs_list_or_empty(m->vfs, dir, out, d);
	tfs_free(dir);
	return e;
}

enum tfs_err tfs__mt_read(const struct mt *m, const char *rel,
			  uint8_t **buf, size_t *len, struct tfs_diag *d)
{
	char *p = tfs__mt_path(m, rel);
	enum tfs_err e;

	if (!p)
		return tfs__mt_nomem(d);
	e = tfs_vfs_read_all(m->vfs, p, MT_FILE_MAX, buf, len, d);
	tfs_free(p);
	return e;
}

/* The non-empty lines of a file (.ign, .vac). */
enum tfs_err tfs__mt_read_lines(const struct mt *m, const char *rel,
				struct tfs_strlist *lines, struct tfs_diag *d)
{
	uint8_t *buf;
	size_t len;
	enum tfs_err e;

	lines->items = NULL;
	lines->count = 0;
	e = tfs__mt_read(m, rel, &buf, &len, d);
	if (e)
		return e;
	e = tfs_lines_parse(lines, buf, len);
	tfs_free(buf);
	return e ? tfs__mt_nomem(d) : TFS_E_OK;
}

enum tfs_err tfs__mt_exists(const struct mt *m, const char *rel, bool *out,
			    struct tfs_diag *d)
{
	char *p = tfs__mt_path(m, rel);
	struct tfs_stat st;
	enum tfs_err e;

	*out = false;
	if (!p)
		return tfs__mt_nomem(d);
	e = tfs_vfs_stat(m->vfs, p, &st, d);
	tfs_free(p);
	*out = !e && st.exists;
	return e;
}

/* Writes a new file at the array-relative path rel: first under a hidden
 * name in the array folder, made durable, then renamed into place and the
 * folder made durable. On failure nothing is left at rel. */
enum tfs_err tfs__mt_write_file(const struct mt *m, const char *rel,
				const void *data, size_t len,
				struct tfs_diag *d)
{
	const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	char *final = tfs__mt_path(m, rel), *tmp = NULL, *dir = NULL;
	struct tfs_buf name;
	enum tfs_err e;

	tfs_buf_init(&name, TFS_BUF_NO_MAX);
	if (!final || tfs_buf_printf(&name, ".tfs-%s.tmp", base) ||
	    tfs_buf_append_u8(&name, 0)) {
		e = tfs__mt_nomem(d);
		goto out;
	}
	tmp = tfs__mt_path(m, (const char *)name.data);
	dir = tfs_strndup(final, (size_t)(strrchr(final, '/') - final));
	if (!tmp || !dir) {
		e = tfs__mt_nomem(d);
		goto out;
	}
	e = tfs_vfs_write(m->vfs, tmp, data, len, d);
	if (!e)
		e = tfs_vfs_fsync(m->vfs, tmp, d);
	if (!e)
		e = tfs_vfs_mkdir(m->vfs, dir, d);
	if (!e)
		e = tfs_vfs_rename(m->vfs, tmp, final, d);
	if (e) {
		struct tfs_diag ignored;

		tfs_diag_init(&ignored);
		(void)tfs_vfs_remove(m->vfs, tmp, &ignored);
		goto out;
	}
	e = tfs_vfs_fsync(m->vfs, dir, d);
	if (e) {
		/* Callers take a failure to mean "nothing at rel". */
		struct tfs_diag ignored;

		tfs_diag_init(&ignored);
		(void)tfs_vfs_remove(m->vfs, final, &ignored);
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

			e = p ? remove_tree(vfs, p, depth + 1, d) : tfs__mt_nomem(d);
			tfs_free(p);
		}
		tfs_dirlist_release(&l);
		if (e)
			return e;
	}
	return tfs_vfs_remove(vfs, path, d);
}

enum tfs_err tfs__mt_remove(const struct mt *m, const char *rel,
			    unsigned *removed, struct tfs_diag *d)
{
	char *p = tfs__mt_path(m, rel);
	struct tfs_stat st;
	enum tfs_err e;

	if (!p)
		return tfs__mt_nomem(d);
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
enum tfs_err tfs__mt_new_name(char *name, uint64_t t1, uint64_t t2,
			      uint32_t version, const char *ext,
			      struct tfs_diag *d)
{
	enum tfs_err e = tfs_name_new(name, TFS_NAME_MAX, t1, t2, version, ext);

	return e ? tfs_fail(d, e, "no random bytes for a new name") : TFS_E_OK;
}

/* Widens the time range [*t1, *t2] to hold [a1, a2]. */
void tfs__mt_widen(uint64_t *t1, uint64_t *t2, uint64_t a1, uint64_t a2)
{
	*t1 = a1 < *t1 ? a1 : *t1;
	*t2 = a2 > *t2 ? a2 : *t2;
}

/* Fragment metadata and commits consolidation make files of the layout
 * format 12 brought (consolidated.md §1–2). */
enum tfs_err tfs__mt_need_v12(const struct mt *m, uint32_t version,
			      const char *what, struct tfs_diag *d)
{
	if (version >= 12)
		return TFS_E_OK;
	return tfs_fail(d, TFS_E_UNSUPPORTED,
			"array '%s': %s consolidation needs format version 12 "
			"or later (the array has %" PRIu32 ")",
			m->path, what, version);
}

void tfs__mt_set_made(char *made, size_t cap, const char *name)
{
	if (made && cap)
		snprintf(made, cap, "%s", name ? name : "");
}

/* Writes len bytes as a new file "<dir>/<timestamped name><ext>" and
 * names it in made on success. */
enum tfs_err tfs__mt_write_new_file(const struct mt *m, const char *dir,
				    uint64_t t1, uint64_t t2, uint32_t version,
				    const char *ext, const uint8_t *data,
				    size_t len, char *made, size_t made_cap,
				    struct tfs_diag *d)
{
	char name[TFS_NAME_MAX], rel[512];
	enum tfs_err e;

	e = tfs__mt_new_name(name, t1, t2, version, ext, d);
	if (e)
		return e;
	snprintf(rel, sizeof(rel), "%s/%s", dir, name);
	e = tfs__mt_write_file(m, rel, data, len, d);
	if (!e)
		tfs__mt_set_made(made, made_cap, name);
	return e;
}

int tfs__mt_str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool tfs__mt_strset_has(const struct strset *s, const char *v)
{
	for (size_t i = 0; i < s->count; i++)
		if (!strcmp(s->items[i], v))
			return true;
	return false;
}

enum tfs_err tfs__mt_strset_add(struct strset *s, const char *v)
{
	char *c;

	if (tfs__mt_strset_has(s, v))
		return TFS_E_OK;
	if (tfs_grow(&s->items, &s->cap, s->count + 1, sizeof(*s->items)))
		return TFS_E_NOMEM;
	c = tfs_strdup(v);
	if (!c)
		return TFS_E_NOMEM;
	s->items[s->count++] = c;
	return TFS_E_OK;
}

void tfs__mt_strset_release(struct strset *s)
{
	for (size_t i = 0; i < s->count; i++)
		tfs_free(s->items[i]);
	tfs_free(s->items);
	memset(s, 0, sizeof(*s));
}

/* Adds every line of every file ending in ext of folder dir (its entries
 * in l) to out; .vac lines normalized (tfs_vac_line_normalize). */
enum tfs_err tfs__mt_add_lines_of(const struct mt *m, const char *dir,
				  const struct tfs_dirlist *l, const char *ext,
				  bool vac_lines, struct strset *out,
				  struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < l->count; i++) {
		struct tfs_strlist lines;
		char rel[512];

		if (!tfs_str_ends_with(l->names[i], ext))
			continue;
		snprintf(rel, sizeof(rel), "%s/%s", dir, l->names[i]);
		e = tfs__mt_read_lines(m, rel, &lines, d);
		if (e)
			break;
		for (size_t k = 0; !e && k < lines.count; k++) {
			const char *line = lines.items[k];
			char *norm = NULL;

			if (vac_lines) {
				norm = tfs_vac_line_normalize(line);
				line = norm;
			}
			e = line ? tfs__mt_strset_add(out, line) : TFS_E_NOMEM;
			tfs_free(norm);
		}
		tfs_strlist_release(&lines);
		if (e)
			e = tfs__mt_nomem(d);
	}
	return e;
}

/* Every line of every .ign file of __commits/ (layout.md §6 step 1). */
enum tfs_err tfs__mt_load_ignored(const struct mt *m,
				  const struct tfs_dirlist *commits,
				  struct strset *out, struct tfs_diag *d)
{
	return tfs__mt_add_lines_of(m, "__commits", commits, ".ign", false, out, d);
}
