/* Vacuum: removes what a consolidation listed as merged (fragments, .vac
 * files, fragment metadata, commits, array metadata) and stale temporary
 * files, never anything a reader at some time still needs. */
#include "maintain_internal.h"

/* ---- Vacuum --------------------------------------------------------------- */

/* Whether fragment `name` (a consolidated one) is committed. */
static enum tfs_err frag_committed(const struct mt *m, const char *name,
				   bool new_layout, const struct strset *con,
				   bool *out, struct tfs_diag *d)
{
	char rel[512];

	snprintf(rel, sizeof(rel), new_layout ? "__commits/%s.wrt" : "%s.ok",
		 name);
	if (tfs__mt_strset_has(con, rel)) {
		*out = true;
		return TFS_E_OK;
	}
	return tfs__mt_exists(m, rel, out, d);
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
		if (tfs_str_ends_with(commits->names[i], ".con"))
			e = tfs__con_file_items(m, commits->names[i], ignored,
						&items, d);
	for (size_t i = 0; !e && i < items.count; i++)
		if (tfs__mt_strset_add(out, items.items[i].marker))
			e = tfs__mt_nomem(d);
	tfs__con_items_release(&items);
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
	e = tfs__mt_exists(m, path, &exists, d);
	*out = !e && exists;
	return e;
}

/* Vacuums what one fragment .vac file lists (then the .vac). */
/* Commits that a .con file names stay committed after their own file is
 * gone: an .ign file takes them back first (§3). */
static enum tfs_err write_ignores(const struct mt *m,
				  const struct tfs_strlist *lines,
				  const struct strset *con, const char *cname,
				  uint32_t version, struct tfs_diag *d)
{
	struct tfs_buf ign;
	char rel[512];
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&ign, TFS_BUF_NO_MAX);
	for (size_t i = 0; !e && i < lines->count; i++) {
		char *norm = tfs_vac_line_normalize(lines->items[i]);
		const char *fname;

		if (!norm) {
			e = tfs__mt_nomem(d);
			break;
		}
		fname = !strncmp(norm, "__fragments/", 12) ? norm + 12 : norm;
		snprintf(rel, sizeof(rel), "__commits/%s.wrt", fname);
		if (tfs__mt_strset_has(con, rel) && tfs_buf_printf(&ign, "%s\n", rel))
			e = tfs__mt_nomem(d);
		tfs_free(norm);
	}
	if (!e && ign.len) {
		struct tfs_name_info ni;

		if (tfs_name_parse(cname, &ni))
			ni.t1 = ni.t2 = 0;
		e = tfs__mt_write_new_file(m, "__commits", ni.t1, ni.t2, version,
					   ".ign", ign.data, ign.len, NULL, 0, d);
	}
	tfs_buf_release(&ign);
	return e;
}

/* Removes each listed fragment: its commit, then its folder. */
static enum tfs_err remove_listed(const struct mt *m,
				  const struct tfs_strlist *lines,
				  const char *cname, unsigned *removed,
				  struct tfs_diag *d)
{
	char rel[512];
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < lines->count; i++) {
		char *norm = tfs_vac_line_normalize(lines->items[i]);
		bool in_new, is_frag;
		const char *fname;

		if (!norm)
			return tfs__mt_nomem(d);
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
		e = tfs__mt_remove(m, rel, NULL, d);
		if (!e)
			e = tfs__mt_remove(m, norm, removed, d);
		tfs_free(norm);
	}
	return e;
}

static enum tfs_err vacuum_vac(const struct mt *m, const char *vac_rel,
			       const struct strset *con, uint32_t version,
			       unsigned *removed, struct tfs_diag *d)
{
	const char *vac_name = strrchr(vac_rel, '/') ? strrchr(vac_rel, '/') + 1
						     : vac_rel;
	struct tfs_strlist lines;
	char cname[256];
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
	e = tfs__mt_read_lines(m, vac_rel, &lines, d);
	if (e)
		return e;
	e = write_ignores(m, &lines, con, cname, version, d);
	if (!e)
		e = remove_listed(m, &lines, cname, removed, d);
	if (!e)
		e = tfs__mt_remove(m, vac_rel, NULL, d);
	tfs_strlist_release(&lines);
	return e;
}

enum tfs_err tfs__vacuum_fragments(const struct mt *m, unsigned *removed,
				   struct tfs_diag *d)
{
	struct tfs_dirlist commits, root;
	struct strset ignored = {0}, con = {0};
	uint32_t version = TFS_FORMAT_VERSION_WRITE;
	enum tfs_err e;

	e = tfs__mt_list(m, "__commits", &commits, d);
	if (e)
		return e;
	e = tfs__mt_list(m, NULL, &root, d);
	if (!e)
		e = tfs__mt_load_ignored(m, &commits, &ignored, d);
	if (!e)
		e = con_markers(m, &commits, &ignored, &con, d);
	for (size_t i = 0; !e && i < commits.count; i++) {
		struct tfs_name_info ni;
		char rel[512];

		if (!tfs_str_ends_with(commits.names[i], ".vac"))
			continue;
		if (!tfs_name_parse(commits.names[i], &ni) && ni.version >= 12)
			version = ni.version;
		snprintf(rel, sizeof(rel), "__commits/%s", commits.names[i]);
		e = vacuum_vac(m, rel, &con, version, removed, d);
	}
	for (size_t i = 0; !e && i < root.count; i++)
		if (tfs_str_ends_with(root.names[i], ".vac") && root.names[i][0] == '_')
			e = vacuum_vac(m, root.names[i], &con, version, removed,
				       d);
	tfs__mt_strset_release(&ignored);
	tfs__mt_strset_release(&con);
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

		if (!tfs_str_ends_with(l->names[i], ext) ||
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
enum tfs_err tfs__vacuum_fragment_meta(const struct mt *m, unsigned *removed,
				       struct tfs_diag *d)
{
	struct tfs_dirlist l;
	size_t keep;
	enum tfs_err e;

	e = tfs__mt_list(m, "__fragment_meta", &l, d);
	if (e)
		return e;
	keep = newest_of(&l, ".meta");
	for (size_t i = 0; !e && keep != SIZE_MAX && i < l.count; i++) {
		char rel[512];

		if (i == keep || !tfs_str_ends_with(l.names[i], ".meta"))
			continue;
		snprintf(rel, sizeof(rel), "__fragment_meta/%s", l.names[i]);
		e = tfs__mt_remove(m, rel, removed, d);
	}
	tfs_dirlist_release(&l);
	return e;
}

/* Removes commit files that the newest .con holds, and older .con files
 * whose every entry it holds. */
enum tfs_err tfs__vacuum_commits(const struct mt *m, unsigned *removed,
				 struct tfs_diag *d)
{
	struct tfs_dirlist commits;
	struct strset ignored = {0};
	struct con_items newest = {0};
	size_t keep;
	enum tfs_err e;

	e = tfs__mt_list(m, "__commits", &commits, d);
	if (e)
		return e;
	e = tfs__mt_load_ignored(m, &commits, &ignored, d);
	keep = newest_of(&commits, ".con");
	if (e || keep == SIZE_MAX)
		goto out;
	e = tfs__con_file_items(m, commits.names[keep], &ignored, &newest, d);
	for (size_t i = 0; !e && i < commits.count; i++) {
		const char *n = commits.names[i];
		char rel[512];

		if (i == keep)
			continue;
		snprintf(rel, sizeof(rel), "__commits/%s", n);
		if (tfs__is_commit_file(n)) {
			if (tfs__con_items_has(&newest, rel))
				e = tfs__mt_remove(m, rel, removed, d);
		} else if (tfs_str_ends_with(n, ".con")) {
			struct con_items old = {0};
			bool covered = true;

			e = tfs__con_file_items(m, n, &ignored, &old, d);
			for (size_t k = 0; !e && k < old.count; k++)
				if (!tfs__con_items_has(&newest, old.items[k].marker))
					covered = false;
			tfs__con_items_release(&old);
			if (!e && covered)
				e = tfs__mt_remove(m, rel, removed, d);
		}
	}
out:
	tfs__con_items_release(&newest);
	tfs__mt_strset_release(&ignored);
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

enum tfs_err tfs__vacuum_array_meta(const struct mt *m, unsigned *removed,
				    struct tfs_diag *d)
{
	struct tfs_dirlist meta;
	enum tfs_err e;

	e = tfs__mt_list(m, "__meta", &meta, d);
	for (size_t i = 0; !e && i < meta.count; i++) {
		const char *n = meta.names[i];
		struct tfs_strlist lines;
		char rel[512], cons[512];
		bool exists;

		if (!tfs_str_ends_with(n, ".vac"))
			continue;
		/* Only when the merged file exists. */
		snprintf(cons, sizeof(cons), "__meta/%.*s",
			 (int)(strlen(n) - 4), n);
		e = tfs__mt_exists(m, cons, &exists, d);
		if (e || !exists)
			continue;
		snprintf(rel, sizeof(rel), "__meta/%s", n);
		e = tfs__mt_read_lines(m, rel, &lines, d);
		if (e)
			break;
		for (size_t k = 0; !e && k < lines.count; k++) {
			char *norm = tfs_vac_line_normalize(lines.items[k]);

			if (!norm) {
				e = tfs__mt_nomem(d);
				break;
			}
			/* Only metadata files: timestamped names in __meta/
			 * (never "..", a .vac or the merged file). */
			if (meta_file_name(norm, cons))
				e = tfs__mt_remove(m, norm, removed, d);
			tfs_free(norm);
		}
		tfs_strlist_release(&lines);
		if (!e)
			e = tfs__mt_remove(m, rel, NULL, d);
	}
	tfs_dirlist_release(&meta);
	return e;
}

/* Temporary files of consolidations that died (tfs__mt_write_file's hidden
 * names in the array folder), once they are old enough that no running
 * consolidation still writes them. */
#define STALE_TMP_NS ((int64_t)3600 * 1000000000)

enum tfs_err tfs__remove_stale_tmp(const struct mt *m, struct tfs_diag *d)
{
	struct tfs_dirlist root;
	struct timespec now;
	enum tfs_err e;

	e = tfs__mt_list(m, NULL, &root, d);
	if (e)
		return e;
	clock_gettime(CLOCK_REALTIME, &now);
	for (size_t i = 0; !e && i < root.count; i++) {
		const char *n = root.names[i];
		char *p;
		struct tfs_stat st;

		if (strncmp(n, ".tfs-", 5) || !tfs_str_ends_with(n, ".tmp"))
			continue;
		p = tfs__mt_path(m, n);
		if (!p) {
			e = tfs__mt_nomem(d);
			break;
		}
		e = tfs_vfs_stat(m->vfs, p, &st, d);
		if (!e && st.exists && !st.is_dir &&
		    (int64_t)now.tv_sec * 1000000000 + now.tv_nsec -
				    st.mtime_ns >
			    STALE_TMP_NS)
			e = tfs_vfs_remove(m->vfs, p, d);
		tfs_free(p);
	}
	tfs_dirlist_release(&root);
	return e;
}
