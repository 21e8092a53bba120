/* The rooted POSIX storage backend: it holds a descriptor of its root
 * folder and follows no symbolic link below it. Thread-safe. */
#include "tfs_vfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "posix_io.h"
#include "tfs_alloc.h"
#include "tfs_log.h"

/* ---- Rooted: nothing below the root is followed --------------------------
 *
 * A rooted backend holds an O_PATH descriptor of its root folder and takes
 * only paths at or below the root (the root's own spelling, then '/'
 * and the rest). The rest is resolved from that descriptor with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS),
 * or, on a kernel without openat2, one component at a time with
 * openat(O_NOFOLLOW), each checked to be no symbolic link. Folders are
 * changed with the *at() calls relative to a parent resolved the same way,
 * so that a folder swapped for a symbolic link between two calls is met
 * as a link, never followed. A symbolic link met anywhere below the root
 * is as if the path were missing (TFS_E_NOT_FOUND, or exists = false from
 * stat) and logged once per meeting; listings leave links out. */

struct rooted {
	struct tfs_vfs base;
	char *root;      /* as given, without trailing '/' (except "/") */
	size_t root_len;
	int root_fd;     /* O_PATH | O_DIRECTORY */
	atomic_bool walk; /* openat2 missing: resolve component by component */
};

static const struct tfs_vfs_ops rooted_ops;

static struct rooted *as_rooted(struct tfs_vfs *vfs)
{
	return vfs->ops == &rooted_ops ? (struct rooted *)vfs : NULL;
}

/* The part of path below the root ("" for the root itself), or NULL when
 * path is not at or below it. */
static const char *below_root(const struct rooted *r, const char *path)
{
	const char *rest;

	if (r->root_len == 1 && r->root[0] == '/') {
		if (path[0] != '/')
			return NULL;
		rest = path;
	} else {
		if (strncmp(path, r->root, r->root_len) != 0 ||
		    (path[r->root_len] != '\0' && path[r->root_len] != '/'))
			return NULL;
		rest = path + r->root_len;
	}
	while (*rest == '/')
		rest++;
	return rest;
}

/* One component at a time from the root; every component is opened with
 * O_NOFOLLOW and checked not to be a link, ".." is refused. */
static int walk_open(const struct rooted *r, const char *rel, int flags,
		     mode_t mode)
{
	char comp[NAME_MAX + 1];
	int cur = openat(r->root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	const char *p = rel;

	if (cur < 0)
		return -1;
	for (;;) {
		const char *end;
		size_t n;
		bool last;
		int next;
		struct stat sb;

		while (*p == '/')
			p++;
		end = strchrnul(p, '/');
		n = (size_t)(end - p);
		last = true;
		for (const char *q = end; *q; q++)
			if (*q != '/') {
				last = false;
				break;
			}
		if (n == 0) {
			/* The root itself (rel was empty or only slashes). */
			next = openat(cur, ".", flags | O_CLOEXEC, mode);
			tfs__posix_close_keep_errno(cur);
			return next;
		}
		if (n > NAME_MAX) {
			close(cur);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (!strcmp(comp, "..")) {
			close(cur);
			errno = EXDEV;
			return -1;
		}
		if (last && !(flags & O_PATH)) {
			next = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC,
				      mode);
			tfs__posix_close_keep_errno(cur);
			return next;
		}
		next = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		tfs__posix_close_keep_errno(cur);
		if (next < 0)
			return -1;
		if (fstat(next, &sb) != 0) {
			tfs__posix_close_keep_errno(next);
			return -1;
		}
		if (S_ISLNK(sb.st_mode) ||
		    (!last && !S_ISDIR(sb.st_mode)) ||
		    (last && (flags & O_DIRECTORY) && !S_ISDIR(sb.st_mode))) {
			close(next);
			errno = S_ISLNK(sb.st_mode) ? ELOOP : ENOTDIR;
			return -1;
		}
		if (last)
			return next;
		cur = next;
		p = end;
	}
}

static int rooted_open(struct rooted *r, const char *rel, int flags,
		       mode_t mode)
{
	if (!atomic_load_explicit(&r->walk, memory_order_relaxed)) {
		struct open_how how = {
			.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
			.mode = (flags & O_CREAT) ? mode : 0,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
				   RESOLVE_NO_MAGICLINKS,
		};
		long fd = syscall(SYS_openat2, r->root_fd, *rel ? rel : ".",
				  &how, sizeof(how));

		if (fd >= 0)
			return (int)fd;
		/* EPERM: a seccomp filter that refuses openat2 (older
		 * container runtimes); the walk gives the real answer. */
		if (errno == EPERM)
			return walk_open(r, rel, flags, mode);
		if (errno != ENOSYS)
			return -1;
		atomic_store(&r->walk, true);
	}
	return walk_open(r, rel, flags, mode);
}

/* A link (ELOOP) or an escape (EXDEV) met while resolving path. */
static bool refused(int e)
{
	return e == ELOOP || e == EXDEV;
}

static enum tfs_err refuse(struct tfs_diag *d, const char *path)
{
	tfs_log(TFS_LOG_WARN, "'%s': symbolic link (or '..') not followed",
		path);
	return tfs_fail(d, TFS_E_NOT_FOUND,
			"'%s': symbolic link (or '..') not followed", path);
}

/* Opens path (at or below the root); -1 with d filled on failure. */
static int open_path(struct rooted *r, const char *path, int flags,
		     mode_t mode, const char *what, struct tfs_diag *d,
		     enum tfs_err *err)
{
	const char *rel = below_root(r, path);
	int fd, e;

	if (!rel) {
		tfs_log(TFS_LOG_WARN, "'%s': outside '%s', refused", path,
			r->root);
		*err = tfs_fail(d, TFS_E_PERM, "'%s': outside '%s'", path,
				r->root);
		errno = EXDEV;
		return -1;
	}
	fd = rooted_open(r, rel, flags, mode);
	if (fd >= 0)
		return fd;
	e = errno;
	*err = refused(e) ? refuse(d, path) : tfs__posix_sys_fail(d, e, what, path);
	errno = e;
	return -1;
}

/* Splits path into its parent (opened O_PATH) and its last name. */
static int open_parent(struct rooted *r, const char *path, char *name,
		       size_t name_cap, const char *what, struct tfs_diag *d,
		       enum tfs_err *err)
{
	const char *rel = below_root(r, path);
	size_t len, start;
	char *parent;
	int fd;

	if (!rel) {
		*err = tfs_fail(d, TFS_E_PERM, "'%s': outside '%s'", path,
				r->root);
		return -1;
	}
	len = strlen(rel);
	while (len > 0 && rel[len - 1] == '/')
		len--;
	start = len;
	while (start > 0 && rel[start - 1] != '/')
		start--;
	if (len == start || len - start >= name_cap ||
	    (len - start == 1 && rel[start] == '.') ||
	    (len - start == 2 && rel[start] == '.' && rel[start + 1] == '.')) {
		*err = tfs_fail(d, TFS_E_INVALID, "'%s': cannot %s: not a name",
				path, what);
		return -1;
	}
	memcpy(name, rel + start, len - start);
	name[len - start] = '\0';
	parent = tfs_malloc(start + 1);
	if (!parent) {
		*err = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", path);
		return -1;
	}
	memcpy(parent, rel, start);
	parent[start] = '\0';
	fd = rooted_open(r, parent, O_PATH | O_DIRECTORY, 0);
	tfs_free(parent);
	if (fd >= 0)
		return fd;
	*err = refused(errno) ? refuse(d, path)
			       : tfs__posix_sys_fail(d, errno, what, path);
	return -1;
}

static enum tfs_err rooted_stat(struct tfs_vfs *vfs, const char *path,
				struct tfs_stat *st, struct tfs_diag *d)
{
	struct rooted *r = as_rooted(vfs);
	const char *rel = below_root(r, path);
	struct stat sb;
	int fd, e;

	memset(st, 0, sizeof(*st));
	if (!rel) {
		tfs_log(TFS_LOG_WARN, "'%s': outside '%s', refused", path,
			r->root);
		return TFS_E_OK;
	}
	fd = rooted_open(r, rel, O_PATH, 0);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT || e == ENOTDIR)
			return TFS_E_OK;
		if (refused(e)) {
			tfs_log(TFS_LOG_WARN,
				"'%s': symbolic link (or '..') not followed",
				path);
			return TFS_E_OK;
		}
		return tfs__posix_sys_fail(d, e, "stat", path);
	}
	if (fstat(fd, &sb) != 0) {
		e = errno;
		close(fd);
		return tfs__posix_sys_fail(d, e, "stat", path);
	}
	close(fd);
	tfs__posix_fill_stat(st, &sb);
	return TFS_E_OK;
}

/* stat, but a link as the last name is described (is_link), not
 * followed; links before it are still refused (exists = false). */
static enum tfs_err rooted_lstat(struct tfs_vfs *vfs, const char *path,
				 struct tfs_stat *st, struct tfs_diag *d)
{
	struct rooted *r = as_rooted(vfs);
	const char *rel = below_root(r, path);
	char name[NAME_MAX + 1];
	size_t len, start;
	struct stat sb;
	char *parent;
	int fd, e;

	memset(st, 0, sizeof(*st));
	if (!rel)
		return rooted_stat(vfs, path, st, d);
	len = strlen(rel);
	while (len > 0 && rel[len - 1] == '/')
		len--;
	start = len;
	while (start > 0 && rel[start - 1] != '/')
		start--;
	/* The root itself, or a path ending in "." or "..": as stat. */
	if (len == start || (len - start == 1 && rel[start] == '.') ||
	    (len - start == 2 && rel[start] == '.' && rel[start + 1] == '.') ||
	    len - start > NAME_MAX)
		return rooted_stat(vfs, path, st, d);
	parent = tfs_malloc(len + 1);
	if (!parent)
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", path);
	memcpy(name, rel + start, len - start);
	name[len - start] = '\0';
	memcpy(parent, rel, start);
	parent[start] = '\0';
	fd = rooted_open(r, parent, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) {
		e = errno;
		tfs_free(parent);
		if (e == ENOENT || e == ENOTDIR)
			return TFS_E_OK;
		if (refused(e)) {
			tfs_log(TFS_LOG_WARN,
				"'%s': symbolic link (or '..') not followed",
				path);
			return TFS_E_OK;
		}
		return tfs__posix_sys_fail(d, e, "lstat", path);
	}
	e = fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
	close(fd);
	tfs_free(parent);
	if (e == ENOENT || e == ENOTDIR)
		return TFS_E_OK;
	if (e)
		return tfs__posix_sys_fail(d, e, "lstat", path);
	tfs__posix_fill_stat(st, &sb);
	return TFS_E_OK;
}

/* A name stat_names takes from an opened folder: one component. */
static bool plain_name(const char *name)
{
	size_t len = strlen(name);

	return len <= NAME_MAX && !strchr(name, '/') && strcmp(name, ".") &&
	       strcmp(name, "..");
}

/* stat of name (one component, "" for the folder) in the folder fd of
 * path: a link is not followed, and is as missing (logged), as in
 * rooted_stat. */
static int stat_in(int fd, const char *path, const char *name,
		   struct tfs_stat *st)
{
	struct stat sb;

	if (*name ? fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0
		  : fstat(fd, &sb) != 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : errno;
	if (S_ISLNK(sb.st_mode)) {
		tfs_log(TFS_LOG_WARN,
			"'%s/%s': symbolic link (or '..') not followed", path,
			name);
		return 0;
	}
	tfs__posix_fill_stat(st, &sb);
	return 0;
}

/* stat_names: the folder resolved once (openat2 below the root), then
 * each name from its descriptor; a name that is more than one component
 * is asked as a path of its own. */
static enum tfs_err rooted_stat_names(struct tfs_vfs *vfs, const char *dir,
				      const char *const *names, size_t n,
				      struct tfs_stat *sts, struct tfs_diag *d)
{
	struct rooted *r = as_rooted(vfs);
	const char *rel = below_root(r, dir);
	enum tfs_err err = TFS_E_OK;
	int fd, e;

	memset(sts, 0, n * sizeof(*sts));
	fd = rel ? rooted_open(r, rel, O_PATH | O_DIRECTORY, 0) : -1;
	if (rel && fd < 0) {
		e = errno;
		if (e == ENOENT)
			return TFS_E_OK;
		/* A file, or a link on the way: each name as stat says. */
		if (e != ENOTDIR && !refused(e))
			return tfs__posix_sys_fail(d, e, "stat", dir);
	}
	for (size_t i = 0; i < n && !err; i++) {
		char *path;

		if (fd >= 0 && (!*names[i] || plain_name(names[i]))) {
			e = stat_in(fd, dir, names[i], &sts[i]);
			if (e)
				err = tfs__posix_sys_fail(d, e, "stat", dir);
			continue;
		}
		/* Outside the root, through a link, or not one name: as stat
		 * of the path says (and logs). */
		path = *names[i] ? tfs_path_join(dir, names[i]) : NULL;
		if (*names[i] && !path)
			err = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", dir);
		else
			err = rooted_stat(vfs, path ? path : dir, &sts[i], d);
		tfs_free(path);
	}
	if (fd >= 0)
		close(fd);
	return err;
}

static enum tfs_err rooted_read(struct tfs_vfs *vfs, const char *path,
				uint64_t off, void *dst, size_t len,
				struct tfs_diag *d)
{
	enum tfs_err err;
	int fd;

	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': read of %zu bytes at offset %" PRIu64
				" is out of range",
				path, len, off);
	fd = open_path(as_rooted(vfs), path, O_RDONLY, 0, "open", d, &err);
	if (fd < 0)
		return err;
	return tfs__posix_read_fd(fd, path, off, dst, len, d);
}

static enum tfs_err rooted_list(struct tfs_vfs *vfs, const char *dir,
				struct tfs_dirlist *out, struct tfs_diag *d)
{
	enum tfs_err err;
	int fd;

	out->names = NULL;
	out->count = 0;
	fd = open_path(as_rooted(vfs), dir, O_RDONLY | O_DIRECTORY, 0, "list",
		       d, &err);
	if (fd < 0)
		return err;
	return tfs__posix_list_fd(fd, dir, true, out, d);
}

static enum tfs_err rooted_write_flags(struct tfs_vfs *vfs, const char *path,
				       const void *data, size_t len, int flags,
				       struct tfs_diag *d)
{
	enum tfs_err err;
	int fd = open_path(as_rooted(vfs), path, O_WRONLY | O_CREAT | flags,
			   0644, "open for writing", d, &err);

	if (fd < 0)
		return err;
	err = tfs__posix_write_fd(fd, path, data, len, d);
	if (close(fd) != 0 && !err)
		err = tfs__posix_sys_fail(d, errno, "close", path);
	return err;
}

static enum tfs_err rooted_write(struct tfs_vfs *vfs, const char *path,
				 const void *data, size_t len,
				 struct tfs_diag *d)
{
	return rooted_write_flags(vfs, path, data, len, O_TRUNC, d);
}

static enum tfs_err rooted_append(struct tfs_vfs *vfs, const char *path,
				  const void *data, size_t len,
				  struct tfs_diag *d)
{
	return rooted_write_flags(vfs, path, data, len, O_APPEND, d);
}

static enum tfs_err rooted_fsync(struct tfs_vfs *vfs, const char *path,
				 struct tfs_diag *d)
{
	enum tfs_err err;
	int fd = open_path(as_rooted(vfs), path, O_RDONLY, 0, "open for fsync",
			   d, &err);

	if (fd < 0)
		return err;
	return tfs__posix_fsync_fd(fd, path, d);
}

static enum tfs_err rooted_mkdir(struct tfs_vfs *vfs, const char *path,
				 struct tfs_diag *d)
{
	struct rooted *r = as_rooted(vfs);
	char name[NAME_MAX + 1];
	enum tfs_err err = TFS_E_OK;
	struct stat sb;
	int pfd;

	{
		const char *rel = below_root(r, path);

		/* The root itself exists. */
		if (rel && !rel[strspn(rel, "/.")] && !strstr(rel, ".."))
			return TFS_E_OK;
	}
	pfd = open_parent(r, path, name, sizeof(name), "create folder", d,
			  &err);
	if (pfd < 0)
		return err;
	if (mkdirat(pfd, name, 0755) == 0)
		goto out_close;
	if (errno != EEXIST) {
		err = tfs__posix_sys_fail(d, errno, "create folder", path);
		goto out_close;
	}
	if (fstatat(pfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
		err = tfs__posix_sys_fail(d, errno, "stat", path);
	else if (S_ISLNK(sb.st_mode))
		err = refuse(d, path);
	else if (!S_ISDIR(sb.st_mode))
		err = tfs_fail(d, TFS_E_EXISTS,
			       "'%s': cannot create folder: a file has that name",
			       path);
out_close:
	close(pfd);
	return err;
}

static enum tfs_err rooted_rename(struct tfs_vfs *vfs, const char *from,
				  const char *to, struct tfs_diag *d)
{
	struct rooted *r = as_rooted(vfs);
	char fname[NAME_MAX + 1], tname[NAME_MAX + 1], what[256];
	enum tfs_err err = TFS_E_OK;
	int ffd, tfd;

	snprintf(what, sizeof(what), "rename to '%s'", to);
	ffd = open_parent(r, from, fname, sizeof(fname), what, d, &err);
	if (ffd < 0)
		return err;
	tfd = open_parent(r, to, tname, sizeof(tname), what, d, &err);
	if (tfd < 0)
		goto out_close_from;
	if (renameat(ffd, fname, tfd, tname) != 0)
		err = tfs__posix_sys_fail(d, errno, what, from);
	close(tfd);
out_close_from:
	close(ffd);
	return err;
}

static enum tfs_err rooted_remove(struct tfs_vfs *vfs, const char *path,
				  struct tfs_diag *d)
{
	struct rooted *r = as_rooted(vfs);
	char name[NAME_MAX + 1];
	enum tfs_err err = TFS_E_OK;
	struct stat sb;
	int pfd, e;

	pfd = open_parent(r, path, name, sizeof(name), "remove", d, &err);
	if (pfd < 0)
		return err;
	if (unlinkat(pfd, name, 0) == 0)
		goto out_close;
	e = errno;
	if ((e != EISDIR && e != EPERM) ||
	    fstatat(pfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !S_ISDIR(sb.st_mode)) {
		err = tfs__posix_sys_fail(d, e, "remove", path);
		goto out_close;
	}
	if (unlinkat(pfd, name, AT_REMOVEDIR) != 0)
		err = tfs__posix_sys_fail(d, errno, "remove", path);
out_close:
	close(pfd);
	return err;
}

static void rooted_destroy(struct tfs_vfs *vfs)
{
	struct rooted *r = as_rooted(vfs);

	close(r->root_fd);
	tfs_free(r->root);
	tfs_free(r);
}

/* The file system of the root (a path below it on another file system
 * would need a walk that stats nothing new: the root's is what writes
 * below SOURCE meet in practice). */
static enum tfs_err rooted_space(struct tfs_vfs *vfs, const char *path,
				 struct tfs_space *out, struct tfs_diag *d)
{
	struct rooted *r = as_rooted(vfs);
	struct statvfs sv;

	if (!below_root(r, path))
		return tfs_fail(d, TFS_E_PERM, "'%s': outside '%s'", path,
				r->root);
	if (fstatvfs(r->root_fd, &sv) != 0)
		return tfs__posix_sys_fail(d, errno, "statvfs", r->root);
	tfs__posix_fill_space(out, &sv);
	return TFS_E_OK;
}

static const struct tfs_vfs_ops rooted_ops = {
	.stat = rooted_stat,
	.lstat = rooted_lstat,
	.stat_names = rooted_stat_names,
	.read = rooted_read,
	.list = rooted_list,
	.write = rooted_write,
	.append = rooted_append,
	.fsync = rooted_fsync,
	.mkdir = rooted_mkdir,
	.rename = rooted_rename,
	.remove = rooted_remove,
	.space = rooted_space,
	.destroy = rooted_destroy,
};

enum tfs_err tfs_vfs_posix_new_rooted(const char *root, struct tfs_vfs **out,
				      struct tfs_diag *d)
{
	struct rooted *r;
	size_t len = strlen(root);
	int fd;

	*out = NULL;
	while (len > 1 && root[len - 1] == '/')
		len--;
	if (len == 0)
		return tfs_fail(d, TFS_E_INVALID, "empty root folder");
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tfs__posix_sys_fail(d, errno, "open folder", root);
	r = tfs_callocn(1, sizeof(*r));
	if (!r || !(r->root = tfs_malloc(len + 1))) {
		tfs_free(r);
		close(fd);
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", root);
	}
	memcpy(r->root, root, len);
	r->root[len] = '\0';
	r->root_len = len;
	r->root_fd = fd;
	atomic_init(&r->walk, false);
	r->base.ops = &rooted_ops;
	*out = &r->base;
	return TFS_E_OK;
}

void tfs_vfs_posix_rooted_walk(struct tfs_vfs *vfs)
{
	struct rooted *r = as_rooted(vfs);

	if (r)
		atomic_store(&r->walk, true);
}

int tfs_vfs_posix_open(struct tfs_vfs *vfs, const char *path, int flags,
		       unsigned mode, struct tfs_diag *d)
{
	struct rooted *r = as_rooted(vfs);
	enum tfs_err err;
	int fd, e;

	if (r) {
		fd = open_path(r, path, flags, (mode_t)mode, "open", d, &err);
		e = errno;
	} else if (tfs__posix_is_plain(vfs)) {
		fd = open(path, flags | O_CLOEXEC, (mode_t)mode);
		e = errno;
		if (fd < 0)
			tfs__posix_sys_fail(d, e, "open", path);
	} else {
		fd = -1;
		e = EINVAL;
		tfs_fail(d, TFS_E_INVALID, "'%s': not a POSIX backend", path);
	}
	if (fd < 0)
		errno = e;
	return fd;
}
