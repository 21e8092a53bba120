/* What the two POSIX backends (vfs_posix.c, vfs_rooted.c) share: the
 * errno mapping and the operations on an open descriptor.
 *
 * errno mapping: ENOENT/ENOTDIR -> TFS_E_NOT_FOUND, ENOSPC/EDQUOT ->
 * TFS_E_NOSPC, EACCES/EPERM -> TFS_E_PERM, EROFS ->
 * TFS_E_READONLY, EEXIST/ENOTEMPTY -> TFS_E_EXISTS, EFBIG -> TFS_E_TOO_BIG,
 * ENOMEM -> TFS_E_NOMEM, EISDIR/EINVAL/ENAMETOOLONG -> TFS_E_INVALID,
 * anything else -> TFS_E_IO. */
#ifndef TFS_POSIX_IO_H
#define TFS_POSIX_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "tfs_vfs.h"

/* "'path': cannot <what>: <system message>" */
enum tfs_err tfs__posix_sys_fail(struct tfs_diag *d, int e, const char *what,
				 const char *path);

int tfs__posix_close_keep_errno(int fd);

/* What the engine knows of a file from what the system says of it. */
void tfs__posix_fill_stat(struct tfs_stat *st, const struct stat *sb);

/* Reads exactly len bytes at off from fd, then closes it. */
enum tfs_err tfs__posix_read_fd(int fd, const char *path, uint64_t off,
				void *dst, size_t len, struct tfs_diag *d);

/* Lists the folder open as fd (taken over and closed). skip_links leaves
 * symbolic links out, with a log line each. */
enum tfs_err tfs__posix_list_fd(int fd, const char *dir, bool skip_links,
				struct tfs_dirlist *out, struct tfs_diag *d);

enum tfs_err tfs__posix_write_fd(int fd, const char *path, const void *data,
				 size_t len, struct tfs_diag *d);

/* fsync of fd (closed here); some file systems cannot sync folders,
 * which is not an error. */
enum tfs_err tfs__posix_fsync_fd(int fd, const char *path, struct tfs_diag *d);

void tfs__posix_fill_space(struct tfs_space *out, const struct statvfs *sv);

/* Whether vfs is the plain backend (vfs_posix.c). */
bool tfs__posix_is_plain(const struct tfs_vfs *vfs);

#endif
