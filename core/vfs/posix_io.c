/* The POSIX backends' shared part (posix_io.h has the errno mapping). */
#include "posix_io.h"

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

#include "tfs_alloc.h"
#include "tfs_log.h"

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
enum tfs_err tfs__posix_sys_fail(struct tfs_diag *d, int e, const char *what,
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

int tfs__posix_close_keep_errno(int fd)
{
	int e = errno;
	int rc = close(fd);

	errno = e;
	return rc;
}

/* What the engine knows of a file from what the system says of it. */
void tfs__posix_fill_stat(struct tfs_stat *st, const struct stat *sb)
{
	st->exists = true;
	st->is_link = S_ISLNK(sb->st_mode);
	st->is_dir = S_ISDIR(sb->st_mode);
	st->size = st->is_dir ? 0 : (uint64_t)sb->st_size;
	st->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 +
		       (int64_t)sb->st_mtim.tv_nsec;
	st->read_only = (sb->st_mode & 0222) == 0;
}

/* Reads exactly len bytes at off from fd, then closes it. */
enum tfs_err tfs__posix_read_fd(int fd, const char *path, uint64_t off,
				void *dst, size_t len, struct tfs_diag *d)
{
	uint8_t *p = dst;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done,
				  (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			tfs__posix_close_keep_errno(fd);
			return tfs__posix_sys_fail(d, errno, "read", path);
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

/* Lists the folder open as fd (taken over and closed). skip_links leaves
 * symbolic links out, with a log line each. */
enum tfs_err tfs__posix_list_fd(int fd, const char *dir, bool skip_links,
				struct tfs_dirlist *out, struct tfs_diag *d)
{
	struct tfs_dirlist l = {NULL, 0};
	size_t cap = 0;
	enum tfs_err err = TFS_E_OK;
	struct dirent *ent;
	DIR *dp;

	out->names = NULL;
	out->count = 0;
	dp = fdopendir(fd);
	if (!dp) {
		tfs__posix_close_keep_errno(fd);
		return tfs__posix_sys_fail(d, errno, "list", dir);
	}
	for (;;) {
		errno = 0;
		ent = readdir(dp);
		if (!ent) {
			if (errno)
				err = tfs__posix_sys_fail(d, errno, "list", dir);
			break;
		}
		if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
			continue;
		if (skip_links) {
			struct stat sb;
			bool link = ent->d_type == DT_LNK;

			if (ent->d_type == DT_UNKNOWN)
				link = fstatat(dirfd(dp), ent->d_name, &sb,
					       AT_SYMLINK_NOFOLLOW) != 0 ||
				       S_ISLNK(sb.st_mode);
			if (link) {
				tfs_log(TFS_LOG_WARN,
					"'%s/%s': symbolic link not followed",
					dir, ent->d_name);
				continue;
			}
		}
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

enum tfs_err tfs__posix_write_fd(int fd, const char *path, const void *data,
				 size_t len, struct tfs_diag *d)
{
	const uint8_t *p = data;
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return tfs__posix_sys_fail(d, errno, "write", path);
		}
		if (n == 0)
			return tfs_fail(d, TFS_E_IO, "'%s': cannot write: no progress",
					path);
		done += (size_t)n;
	}
	return TFS_E_OK;
}

/* fsync of fd (closed here); some file systems cannot sync folders,
 * which is not an error. */
enum tfs_err tfs__posix_fsync_fd(int fd, const char *path, struct tfs_diag *d)
{
	enum tfs_err err = TFS_E_OK;

	while (fsync(fd) != 0) {
		if (errno == EINTR)
			continue;
		if (errno != EINVAL && errno != EBADF)
			err = tfs__posix_sys_fail(d, errno, "fsync", path);
		break;
	}
	if (close(fd) != 0 && !err)
		err = tfs__posix_sys_fail(d, errno, "close", path);
	return err;
}

void tfs__posix_fill_space(struct tfs_space *out, const struct statvfs *sv)
{
	memset(out, 0, sizeof(*out));
	out->block_size = sv->f_frsize ? sv->f_frsize : sv->f_bsize;
	out->blocks = sv->f_blocks;
	out->blocks_free = sv->f_bfree;
	out->blocks_avail = sv->f_bavail;
	out->files = sv->f_files;
	out->files_free = sv->f_ffree;
	out->name_max = (uint32_t)sv->f_namemax;
	out->read_only = (sv->f_flag & ST_RDONLY) != 0;
}
