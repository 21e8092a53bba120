/* Error codes of the whole engine: one X-macro list gives each error its
 * name, errno and message; a small diagnostic carries the first failure's
 * one-line explanation up to the caller. */
#ifndef TFS_ERR_H
#define TFS_ERR_H

#include <stdarg.h>
#include <stddef.h>

#define TFS_WUR __attribute__((warn_unused_result))
#define TFS_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* name, errno, message */
#define TFS_ERR_MAP(X)                                                   \
	X(OK, 0, "success")                                              \
	X(NOMEM, ENOMEM, "out of memory")                                \
	X(IO, EIO, "input/output error")                                 \
	X(CORRUPT, EIO, "corrupt data")                                  \
	X(CHECKSUM, EIO, "checksum mismatch")                            \
	X(UNSUPPORTED, EIO, "unsupported format feature")               \
	X(KEY, EACCES, "missing or wrong encryption key")                \
	X(PERM, EACCES, "permission denied")                             \
	X(NOT_FOUND, ENOENT, "no such file or object")                   \
	X(NOT_ARRAY, ENOENT, "not a TileDB array or group")              \
	X(INVALID, EINVAL, "invalid argument")                           \
	X(RANGE, ERANGE, "value out of range")                           \
	X(TOO_BIG, EFBIG, "size exceeds limit")                          \
	X(EXISTS, EEXIST, "already exists")                              \
	X(NOSPC, ENOSPC, "no space left on device")                      \
	X(READONLY, EROFS, "read-only")                                  \
	X(BUSY, EBUSY, "resource busy")                                  \
	X(NAME_TOO_LONG, ENAMETOOLONG, "file name too long")             \
	X(INTERNAL, EIO, "internal error")                               \
	X(NOT_DIR, ENOTDIR, "not a folder")                              \
	X(IS_DIR, EISDIR, "is a folder")                                 \
	X(BAD_HANDLE, EBADF, "not an open file")                         \
	X(NO_ATTR, ENODATA, "no such extended attribute")               \
	X(INTR, EINTR, "interrupted")

enum tfs_err {
#define TFS_ERR_ENUM(name, errno_value, msg) TFS_E_##name,
	TFS_ERR_MAP(TFS_ERR_ENUM)
#undef TFS_ERR_ENUM
	TFS_E__COUNT
};

/* Static message of a code; never NULL. */
const char *tfs_strerror(enum tfs_err code);
/* Positive errno value for a code (0 for TFS_E_OK). */
int tfs_err_errno(enum tfs_err code);

/* First failure of an operation: code plus one line, no newline, saying
 * what failed, where and why. */
struct tfs_diag {
	enum tfs_err code;
	char msg[320];
};

void tfs_diag_init(struct tfs_diag *d);

/* Records the failure in d (if d is not NULL and holds no failure yet) and
 * returns code, so callers write `return tfs_fail(d, TFS_E_CORRUPT, ...)`. */
enum tfs_err tfs_fail(struct tfs_diag *d, enum tfs_err code, const char *fmt,
		      ...) TFS_PRINTF(3, 4);
enum tfs_err tfs_vfail(struct tfs_diag *d, enum tfs_err code, const char *fmt,
		       va_list ap) TFS_PRINTF(3, 0);

/* The message of d, or the code's static message when d holds none. */
const char *tfs_diag_msg(const struct tfs_diag *d);

#endif
