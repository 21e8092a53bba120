/* Leftovers of crashed writes (format/write.md §3): fragment folders with
 * no commit file, untouched for longer than a grace period, and spill
 * files of writers whose process no longer runs. Nothing else is ever
 * removed. */
#include "write_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_str.h"
#include "tilefs/tilefs.h"

/* A commit-consolidation file: "<something>.con". */
static bool ends_with_con(const char *s)
{
	return strlen(s) > 4 && tfs_str_ends_with(s, ".con");
}

static bool has_name(const struct tfs_dirlist *l, const char *name)
{
	for (size_t i = 0; i < l->count; i++)
		if (!strcmp(l->names[i], name))
			return true;
	return false;
}

/* Adds the commit files that consolidated commit files (.con) list, by
 * their last path component (consolidated.md §2), to commits. */
static enum tfs_err add_con_commits(struct tfs_vfs *vfs, const char *cdir,
				    struct tfs_dirlist *commits,
				    struct tfs_diag *d)
{
	size_t n = commits->count;

	for (size_t i = 0; i < n; i++) {
		struct tfs_con_file con;
		uint8_t *buf;
		size_t len;
		char *p;
		enum tfs_err e;

		if (!ends_with_con(commits->names[i]))
			continue;
		p = tfs_path_join(cdir, commits->names[i]);
		if (!p)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		e = tfs_vfs_read_all(vfs, p, (size_t)1 << 30, &buf, &len, d);
		tfs_free(p);
		if (e)
			return e;
		e = tfs_con_parse(&con, buf, len, d);
		tfs_free(buf);
		if (e)
			return e;
		for (size_t k = 0; k < con.count; k++) {
			const char *m = strrchr(con.entries[k].marker, '/');
			char **grown = tfs_reallocn(commits->names,
						    commits->count + 1,
						    sizeof(char *));
			char *name = tfs_strdup(m ? m + 1 : con.entries[k].marker);

			if (!grown || !name) {
				if (grown)
					commits->names = grown;
				tfs_free(name);
				tfs_con_release(&con);
				return tfs_fail(d, TFS_E_NOMEM, "out of memory");
			}
			commits->names = grown;
			commits->names[commits->count++] = name;
		}
		tfs_con_release(&con);
	}
	return TFS_E_OK;
}

/* Newest modification time of a folder and the files in it. */
static int64_t newest_mtime(struct tfs_vfs *vfs, const char *dir,
			    const struct tfs_stat *st)
{
	struct tfs_dirlist l;
	struct tfs_diag d;
	int64_t m = st->mtime_ns;

	tfs_diag_init(&d);
	if (tfs_vfs_list(vfs, dir, &l, &d))
		return m;
	for (size_t i = 0; i < l.count; i++) {
		char *p = tfs_path_join(dir, l.names[i]);
		struct tfs_stat fs;

		if (p && !tfs_vfs_stat(vfs, p, &fs, &d) && fs.exists &&
		    fs.mtime_ns > m)
			m = fs.mtime_ns;
		tfs_free(p);
	}
	tfs_dirlist_release(&l);
	return m;
}

/* Folders in dir that look like fragments (timestamped, versioned names)
 * and have no commit: `commits` lists the commit folder, `suffix` is the
 * commit file's extension. */
static enum tfs_err sweep(struct tfs_vfs *vfs, const char *dir,
			  const struct tfs_dirlist *commits, const char *suffix,
			  uint64_t grace_ms, unsigned *removed,
			  struct tfs_diag *d)
{
	struct tfs_dirlist l;
	struct tfs_diag ld;
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	enum tfs_err e;

	e = tfs_vfs_list_or_empty(vfs, dir, &l, d);
	if (e)
		return e;
	tfs_diag_init(&ld);
	for (size_t i = 0; i < l.count; i++) {
		struct tfs_name_info ni;
		struct tfs_stat st;
		char cname[256], *p;
		const char *n = l.names[i];

		if (strncmp(n, "__", 2) || strchr(n, '.') ||
		    tfs_name_parse(n, &ni) || !ni.uuid[0] || ni.version < 5)
			continue;
		snprintf(cname, sizeof(cname), "%s%s", n, suffix);
		if (has_name(commits, cname))
			continue;
		/* Some writers put the .ok beside the folder inside
		 * __fragments/ (format/layout.md §6): committed too. */
		snprintf(cname, sizeof(cname), "%s.ok", n);
		if (has_name(&l, cname))
			continue;
		p = tfs_path_join(dir, n);
		if (!p) {
			tfs_dirlist_release(&l);
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		}
		if (!tfs_vfs_stat(vfs, p, &st, &ld) && st.exists && st.is_dir &&
		    now - newest_mtime(vfs, p, &st) >=
			    (int64_t)grace_ms * 1000000) {
			tfs__remove_tree(vfs, p);
			if (removed)
				(*removed)++;
		}
		tfs_free(p);
	}
	tfs_dirlist_release(&l);
	return TFS_E_OK;
}

void tfs_spill_cleanup(const char *spill_dir, unsigned *removed)
{
	struct tfs_vfs *posix;
	struct tfs_dirlist l;
	struct tfs_diag d;
	static const char prefix[] = "tfs-spill-";
	const char *dir = spill_dir;

	if (!dir)
		dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	if (tfs_vfs_posix_new(&posix))
		return;
	tfs_diag_init(&d);
	if (!tfs_vfs_list(posix, dir, &l, &d)) {
		for (size_t i = 0; i < l.count; i++) {
			const char *n = l.names[i];
			char *end, *p;
			long pid;

			if (strncmp(n, prefix, sizeof(prefix) - 1))
				continue;
			pid = strtol(n + sizeof(prefix) - 1, &end, 10);
			/* A live process's files may belong to a write in
			 * progress. */
			if (end == n + sizeof(prefix) - 1 || *end != '-' ||
			    pid <= 0 || pid == (long)getpid() ||
			    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
				continue;
			p = tfs_path_join(dir, n);
			if (p && !tfs_vfs_remove(posix, p, &d) && removed)
				(*removed)++;
			tfs_free(p);
		}
		tfs_dirlist_release(&l);
	}
	tfs_vfs_free(posix);
}

enum tfs_err tfs_array_cleanup(const char *path, const struct tfs_write_opts *opts,
			       uint64_t grace_ms, unsigned *removed,
			       struct tfs_diag *d)
{
	struct tfs_vfs *vfs = opts ? opts->vfs : NULL, *own = NULL;
	struct tfs_dirlist commits, root;
	char *cdir = NULL, *fdir = NULL;
	enum tfs_err e;
	struct tfs_diag ld;

	if (removed)
		*removed = 0;
	if (!path)
		return tfs_fail(d, TFS_E_INVALID, "cleanup: no path");
	if ((e = tfs__vfs_or_default(path, &vfs, &own, d)))
		return e;
	memset(&commits, 0, sizeof(commits));
	memset(&root, 0, sizeof(root));
	cdir = tfs_path_join(path, "__commits");
	fdir = tfs_path_join(path, "__fragments");
	if (!cdir || !fdir) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	/* Only array folders: one with __schema/ or __array_schema.tdb. */
	if ((e = tfs_vfs_list(vfs, path, &root, d)))
		goto out;
	if (!has_name(&root, "__schema") && !has_name(&root, "__array_schema.tdb")) {
		e = tfs_fail(d, TFS_E_NOT_ARRAY, "'%s' is not an array", path);
		goto out;
	}
	tfs_diag_init(&ld);
	e = tfs_vfs_list(vfs, cdir, &commits, &ld);
	if (e && e != TFS_E_NOT_FOUND) {
		tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
		goto out;
	}
	/* A consolidated commit file (.con) commits fragments that may have
	 * no .wrt (or .ok) of their own. */
	if ((e = add_con_commits(vfs, cdir, &commits, d)))
		goto out;
	/* .ok files in the root may be listed by a .con too. */
	for (size_t i = 0; i < commits.count; i++) {
		char **grown;
		char *name;

		if (!strstr(commits.names[i], ".ok"))
			continue;
		name = tfs_strdup(commits.names[i]);
		grown = tfs_reallocn(root.names, root.count + 1, sizeof(char *));
		if (!grown || !name) {
			if (grown)
				root.names = grown;
			tfs_free(name);
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			goto out;
		}
		root.names = grown;
		root.names[root.count++] = name;
	}
	if (!(e = sweep(vfs, fdir, &commits, ".wrt", grace_ms, removed, d)))
		e = sweep(vfs, path, &root, ".ok", grace_ms, removed, d);
out:
	tfs_dirlist_release(&commits);
	tfs_dirlist_release(&root);
	tfs_free(cdir);
	tfs_free(fdir);
	if (own)
		tfs_vfs_free(own);
	return e;
}
