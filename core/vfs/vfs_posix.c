/* The plain POSIX storage backend: system calls on local paths, with
 * every errno turned into an engine error code and a one-line message
 * naming the path (posix_io.h). Stateless and thread-safe; the rooted
 * backend (vfs_rooted.c) is the one that follows no symbolic link. */
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

/* stat or lstat of path: a missing path is a stat with exists false. */
static enum tfs_err stat_path(const char *path, bool follow,
			      struct tfs_stat *st, struct tfs_diag *d)
{
	struct stat sb;

	memset(st, 0, sizeof(*st));
	if ((follow ? stat(path, &sb) : lstat(path, &sb)) != 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return TFS_E_OK;
		return tfs__posix_sys_fail(d, errno, follow ? "stat" : "lstat", path);
	}
	tfs__posix_fill_stat(st, &sb);
	return TFS_E_OK;
}

static enum tfs_err posix_stat(struct tfs_vfs *vfs, const char *path,
			       struct tfs_stat *st, struct tfs_diag *d)
{
	(void)vfs;
	return stat_path(path, true, st, d);
}

static enum tfs_err posix_lstat(struct tfs_vfs *vfs, const char *path,
				struct tfs_stat *st, struct tfs_diag *d)
{
	(void)vfs;
	return stat_path(path, false, st, d);
}

static enum tfs_err posix_read(struct tfs_vfs *vfs, const char *path,
			       uint64_t off, void *dst, size_t len,
			       struct tfs_diag *d)
{
	int fd;

	(void)vfs;
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': read of %zu bytes at offset %" PRIu64
				" is out of range",
				path, len, off);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tfs__posix_sys_fail(d, errno, "open", path);
	return tfs__posix_read_fd(fd, path, off, dst, len, d);
}

static enum tfs_err posix_list(struct tfs_vfs *vfs, const char *dir,
			       struct tfs_dirlist *out, struct tfs_diag *d)
{
	int fd;

	(void)vfs;
	out->names = NULL;
	out->count = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tfs__posix_sys_fail(d, errno, "list", dir);
	return tfs__posix_list_fd(fd, dir, false, out, d);
}

static enum tfs_err write_flags(const char *path, const void *data, size_t len,
				int flags, struct tfs_diag *d)
{
	enum tfs_err err;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);

	if (fd < 0)
		return tfs__posix_sys_fail(d, errno, "open for writing", path);
	err = tfs__posix_write_fd(fd, path, data, len, d);
	if (close(fd) != 0 && !err)
		err = tfs__posix_sys_fail(d, errno, "close", path);
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
	int fd;

	(void)vfs;
	/* O_RDONLY opens files and folders alike; fsync on a folder makes its
	 * entries durable. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tfs__posix_sys_fail(d, errno, "open for fsync", path);
	return tfs__posix_fsync_fd(fd, path, d);
}

static enum tfs_err posix_mkdir(struct tfs_vfs *vfs, const char *path,
				struct tfs_diag *d)
{
	struct stat sb;

	(void)vfs;
	if (mkdir(path, 0755) == 0)
		return TFS_E_OK;
	if (errno != EEXIST)
		return tfs__posix_sys_fail(d, errno, "create folder", path);
	if (stat(path, &sb) != 0)
		return tfs__posix_sys_fail(d, errno, "stat", path);
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
	return tfs__posix_sys_fail(d, errno, what, from);
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
		return tfs__posix_sys_fail(d, e, "remove", path);
	if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return tfs__posix_sys_fail(d, e, "remove", path);
	if (rmdir(path) != 0)
		return tfs__posix_sys_fail(d, errno, "remove", path);
	return TFS_E_OK;
}

static void posix_destroy(struct tfs_vfs *vfs)
{
	tfs_free(vfs);
}

static enum tfs_err posix_space(struct tfs_vfs *vfs, const char *path,
				struct tfs_space *out, struct tfs_diag *d)
{
	struct statvfs sv;

	(void)vfs;
	if (statvfs(path, &sv) != 0)
		return tfs__posix_sys_fail(d, errno, "statvfs", path);
	tfs__posix_fill_space(out, &sv);
	return TFS_E_OK;
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
	.space = posix_space,
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

bool tfs__posix_is_plain(const struct tfs_vfs *vfs)
{
	return vfs->ops == &posix_ops;
}
