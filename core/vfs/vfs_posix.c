/* The POSIX storage backend: plain system calls on local paths, with every
 * errno turned into an engine error code and a one-line message naming the
 * path. Stateless, so trivially thread-safe.
 *
 * errno mapping: ENOENT/ENOTDIR -> TFS_E_NOT_FOUND, ENOSPC/EDQUOT ->
 * TFS_E_NOSPC, EACCES/EPERM -> TFS_E_PERM, EROFS ->
 * TFS_E_READONLY, EEXIST/ENOTEMPTY -> TFS_E_EXISTS, EFBIG -> TFS_E_TOO_BIG,
 * ENOMEM -> TFS_E_NOMEM, EISDIR/EINVAL/ENAMETOOLONG -> TFS_E_INVALID,
 * anything else -> TFS_E_IO. */
#include "tfs_vfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tfs_alloc.h"

static enum tfs_err errno_code(int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return TFS_E_NOT_FOUND;
	case ENOSPC:
	case EDQUOT:
		return TFS_E_NOSPC;
	case EACCES:
	case EPERM:
		return TFS_E_PERM;
	case EROFS:
		return TFS_E_READONLY;
	case EEXIST:
	case ENOTEMPTY:
		return TFS_E_EXISTS;
	case EFBIG:
		return TFS_E_TOO_BIG;
	case ENOMEM:
		return TFS_E_NOMEM;
	case EISDIR:
	case EINVAL:
	case ENAMETOOLONG:
		return TFS_E_INVALID;
	default:
		return TFS_E_IO;
	}
}

/* "'path': cannot <what>: <system message>" */
static enum tfs_err sys_fail(struct tfs_diag *d, int e, const char *what,
			     const char *path)
{
	char buf[128];
	const char *msg = strerror_r(e, buf, sizeof(buf));
	char lower[128];
	size_t n = strlen(msg);

	if (n >= sizeof(lower))
		n = sizeof(lower) - 1;
	memcpy(lower, msg, n);
	lower[n] = '\0';
	if (lower[0] >= 'A' && lower[0] <= 'Z')
		lower[0] = (char)(lower[0] - 'A' + 'a');
	return tfs_fail(d, errno_code(e), "'%s': cannot %s: %s", path, what,
			lower);
}

static int close_keep_errno(int fd)
{
	int e = errno;
	int rc = close(fd);

	errno = e;
	return rc;
}

static enum tfs_err posix_stat(struct tfs_vfs *vfs, const char *path,
			       struct tfs_stat *st, struct tfs_diag *d)
{
	struct stat sb;

	(void)vfs;
	memset(st, 0, sizeof(*st));
	if (stat(path, &sb) != 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return TFS_E_OK;
		return sys_fail(d, errno, "stat", path);
	}
	st->exists = true;
	st->is_dir = S_ISDIR(sb.st_mode);
	st->size = st->is_dir ? 0 : (uint64_t)sb.st_size;
	st->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 +
		       (int64_t)sb.st_mtim.tv_nsec;
	st->read_only = (sb.st_mode & 0222) == 0;
	return TFS_E_OK;
}

static enum tfs_err posix_lstat(struct tfs_vfs *vfs, const char *path,
				struct tfs_stat *st, struct tfs_diag *d)
{
	struct stat sb;

	(void)vfs;
	memset(st, 0, sizeof(*st));
	if (lstat(path, &sb) != 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return TFS_E_OK;
		return sys_fail(d, errno, "lstat", path);
	}
	st->exists = true;
	st->is_link = S_ISLNK(sb.st_mode);
	st->is_dir = S_ISDIR(sb.st_mode);
	st->size = st->is_dir ? 0 : (uint64_t)sb.st_size;
	st->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 +
		       (int64_t)sb.st_mtim.tv_nsec;
	st->read_only = (sb.st_mode & 0222) == 0;
	return TFS_E_OK;
}

static enum tfs_err posix_read(struct tfs_vfs *vfs, const char *path,
			       uint64_t off, void *dst, size_t len,
			       struct tfs_diag *d)
{
	uint8_t *p = dst;
	size_t done = 0;
	int fd;

	(void)vfs;
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': read of %zu bytes at offset %" PRIu64
				" is out of range",
				path, len, off);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sys_fail(d, errno, "open", path);
	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done,
				  (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			close_keep_errno(fd);
			return sys_fail(d, errno, "read", path);
		}
		if (n == 0) {
			close(fd);
			return tfs_fail(d, TFS_E_CORRUPT,
					"'%s': file too short: wanted %zu bytes at offset %" PRIu64
					", got %zu",
					path, len, off, done);
		}
		done += (size_t)n;
	}
	close(fd);
	return TFS_E_OK;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum tfs_err posix_list(struct tfs_vfs *vfs, const char *dir,
			       struct tfs_dirlist *out, struct tfs_diag *d)
{
	struct tfs_dirlist l = {NULL, 0};
	size_t cap = 0;
	enum tfs_err err = TFS_E_OK;
	struct dirent *ent;
	DIR *dp;

	(void)vfs;
	out->names = NULL;
	out->count = 0;
	dp = opendir(dir);
	if (!dp)
		return sys_fail(d, errno, "list", dir);
	for (;;) {
		errno = 0;
		ent = readdir(dp);
		if (!ent) {
			if (errno)
				err = sys_fail(d, errno, "list", dir);
			break;
		}
		if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
			continue;
		if (tfs_grow(&l.names, &cap, l.count + 1, sizeof(*l.names))) {
			err = tfs_fail(d, TFS_E_NOMEM,
				       "'%s': out of memory listing", dir);
			break;
		}
		l.names[l.count] = tfs_strdup(ent->d_name);
		if (!l.names[l.count]) {
			err = tfs_fail(d, TFS_E_NOMEM,
				       "'%s': out of memory listing", dir);
			break;
		}
		l.count++;
	}
	closedir(dp);
	if (err) {
		tfs_dirlist_release(&l);
		return err;
	}
	if (l.count > 1)
		qsort(l.names, l.count, sizeof(*l.names), name_cmp);
	*out = l;
	return TFS_E_OK;
}

static enum tfs_err write_fd(int fd, const char *path, const void *data,
			     size_t len, struct tfs_diag *d)
{
	const uint8_t *p = data;
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return sys_fail(d, errno, "write", path);
		}
		if (n == 0)
			return tfs_fail(d, TFS_E_IO, "'%s': cannot write: no progress",
					path);
		done += (size_t)n;
	}
	return TFS_E_OK;
}

static enum tfs_err write_flags(const char *path, const void *data, size_t len,
				int flags, struct tfs_diag *d)
{
	enum tfs_err err;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);

	if (fd < 0)
		return sys_fail(d, errno, "open for writing", path);
	err = write_fd(fd, path, data, len, d);
	if (close(fd) != 0 && !err)
		err = sys_fail(d, errno, "close", path);
	return err;
}

static enum tfs_err posix_write(struct tfs_vfs *vfs, const char *path,
				const void *data, size_t len,
				struct tfs_diag *d)
{
	(void)vfs;
	return write_flags(path, data, len, O_TRUNC, d);
}

static enum tfs_err posix_append(struct tfs_vfs *vfs, const char *path,
				 const void *data, size_t len,
				 struct tfs_diag *d)
{
	(void)vfs;
	return write_flags(path, data, len, O_APPEND, d);
}

static enum tfs_err posix_fsync(struct tfs_vfs *vfs, const char *path,
				struct tfs_diag *d)
{
	enum tfs_err err = TFS_E_OK;
	int fd;

	(void)vfs;
	/* O_RDONLY opens files and folders alike; fsync on a folder makes its
	 * entries durable. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sys_fail(d, errno, "open for fsync", path);
	while (fsync(fd) != 0) {
		if (errno == EINTR)
			continue;
		/* Some file systems cannot sync folders; nothing to do then. */
		if (errno != EINVAL && errno != EBADF)
			err = sys_fail(d, errno, "fsync", path);
		break;
	}
	if (close(fd) != 0 && !err)
		err = sys_fail(d, errno, "close", path);
	return err;
}

static enum tfs_err posix_mkdir(struct tfs_vfs *vfs, const char *path,
				struct tfs_diag *d)
{
	struct stat sb;

	(void)vfs;
	if (mkdir(path, 0755) == 0)
		return TFS_E_OK;
	if (errno != EEXIST)
		return sys_fail(d, errno, "create folder", path);
	if (stat(path, &sb) != 0)
		return sys_fail(d, errno, "stat", path);
	if (!S_ISDIR(sb.st_mode))
		return tfs_fail(d, TFS_E_EXISTS,
				"'%s': cannot create folder: a file has that name",
				path);
	return TFS_E_OK;
}

static enum tfs_err posix_rename(struct tfs_vfs *vfs, const char *from,
				 const char *to, struct tfs_diag *d)
{
	char what[256];

	(void)vfs;
	if (rename(from, to) == 0)
		return TFS_E_OK;
	snprintf(what, sizeof(what), "rename to '%s'", to);
	return sys_fail(d, errno, what, from);
}

static enum tfs_err posix_remove(struct tfs_vfs *vfs, const char *path,
				 struct tfs_diag *d)
{
	struct stat sb;
	int e;

	(void)vfs;
	if (unlink(path) == 0)
		return TFS_E_OK;
	e = errno;
	/* Linux says EISDIR for a folder, POSIX allows EPERM. */
	if (e != EISDIR && e != EPERM)
		return sys_fail(d, e, "remove", path);
	if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return sys_fail(d, e, "remove", path);
	if (rmdir(path) != 0)
		return sys_fail(d, errno, "remove", path);
	return TFS_E_OK;
}

static void posix_destroy(struct tfs_vfs *vfs)
{
	tfs_free(vfs);
}

static const struct tfs_vfs_ops posix_ops = {
	.stat = posix_stat,
	.lstat = posix_lstat,
	.read = posix_read,
	.list = posix_list,
	.write = posix_write,
	.append = posix_append,
	.fsync = posix_fsync,
	.mkdir = posix_mkdir,
	.rename = posix_rename,
	.remove = posix_remove,
	.destroy = posix_destroy,
};

enum tfs_err tfs_vfs_posix_new(struct tfs_vfs **out)
{
	struct tfs_vfs *v = tfs_malloc(sizeof(*v));

	*out = NULL;
	if (!v)
		return TFS_E_NOMEM;
	v->ops = &posix_ops;
	*out = v;
	return TFS_E_OK;
}
