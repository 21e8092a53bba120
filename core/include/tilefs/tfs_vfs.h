/* Storage interface: every byte the engine reads or writes goes through a
 * struct tfs_vfs, so POSIX, in-memory and fault-injecting backends (and
 * object stores later) are interchangeable.
 *
 * Paths are '/'-separated strings as the backend understands them (POSIX:
 * ordinary file system paths). All operations are thread-safe. Errors are
 * reported as codes plus a one-line diagnostic naming the path. */
#ifndef TFS_VFS_H
#define TFS_VFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"

struct tfs_vfs;

struct tfs_stat {
	bool exists;
	bool is_dir;
	uint64_t size;     /* files only */
	int64_t mtime_ns;  /* last modification */
	/* No write permission for anyone (POSIX: mode & 0222 == 0); backends
	 * without permissions leave it false. */
	bool read_only;
	/* lstat only: the path is a symbolic link, not followed (is_dir is
	 * then false); backends without links leave it false. */
	bool is_link;
};

/* The room of the storage holding a path (statvfs's figures): sizes in
 * blocks of block_size bytes. Storage without a size (object stores)
 * reports plenty of room. */
struct tfs_space {
	uint64_t block_size;
	uint64_t blocks, blocks_free, blocks_avail; /* avail: unprivileged */
	uint64_t files, files_free;
	uint32_t name_max;
	bool read_only; /* mounted read-only: nothing can be written */
};

/* A folder listing: entry names (not paths), sorted bytewise. */
struct tfs_dirlist {
	char **names;
	size_t count;
};

struct tfs_vfs_ops {
	/* A missing path is not an error: st->exists = false. */
	enum tfs_err (*stat)(struct tfs_vfs *vfs, const char *path,
			     struct tfs_stat *st, struct tfs_diag *d);
	/* stat, but a symbolic link at path is described, not followed
	 * (st->is_link). Backends without links: the same as stat. */
	enum tfs_err (*lstat)(struct tfs_vfs *vfs, const char *path,
			      struct tfs_stat *st, struct tfs_diag *d);
	/* Optional (NULL: stat of each path): stat of n names in folder
	 * dir, each one component, "" for dir itself; a missing folder
	 * gives every name exists = false. A backend that resolves a path
	 * per call does it once here (a listing asks six stamps of every
	 * array). */
	enum tfs_err (*stat_names)(struct tfs_vfs *vfs, const char *dir,
				    const char *const *names, size_t n,
				    struct tfs_stat *sts, struct tfs_diag *d);
	/* Reads exactly len bytes at off; a short file is TFS_E_CORRUPT. */
	enum tfs_err (*read)(struct tfs_vfs *vfs, const char *path,
			     uint64_t off, void *dst, size_t len,
			     struct tfs_diag *d);
	/* Missing folder: TFS_E_NOT_FOUND. */
	enum tfs_err (*list)(struct tfs_vfs *vfs, const char *dir,
			     struct tfs_dirlist *out, struct tfs_diag *d);
	/* Creates or truncates path and writes data (not yet durable). */
	enum tfs_err (*write)(struct tfs_vfs *vfs, const char *path,
			      const void *data, size_t len, struct tfs_diag *d);
	/* Appends to path, creating it if needed. */
	enum tfs_err (*append)(struct tfs_vfs *vfs, const char *path,
			       const void *data, size_t len, struct tfs_diag *d);
	/* Makes a file or folder (and its entry) durable. */
	enum tfs_err (*fsync)(struct tfs_vfs *vfs, const char *path,
			      struct tfs_diag *d);
	/* Existing folder is not an error. */
	enum tfs_err (*mkdir)(struct tfs_vfs *vfs, const char *path,
			      struct tfs_diag *d);
	enum tfs_err (*rename)(struct tfs_vfs *vfs, const char *from,
			       const char *to, struct tfs_diag *d);
	/* Removes a file or an empty folder. */
	enum tfs_err (*remove)(struct tfs_vfs *vfs, const char *path,
			       struct tfs_diag *d);
	/* The room of the storage that holds path. */
	enum tfs_err (*space)(struct tfs_vfs *vfs, const char *path,
			      struct tfs_space *out, struct tfs_diag *d);
	void (*destroy)(struct tfs_vfs *vfs);
};

struct tfs_vfs {
	const struct tfs_vfs_ops *ops;
};

/* Backends. POSIX maps errno to codes: ENOENT/ENOTDIR -> TFS_E_NOT_FOUND,
 * ENOSPC/EDQUOT -> TFS_E_NOSPC, EACCES/EPERM -> TFS_E_KEY (the only code
 * whose errno is EACCES), EROFS -> TFS_E_READONLY, EEXIST/ENOTEMPTY ->
 * TFS_E_EXISTS, others TFS_E_IO (see vfs_posix.c). The in-memory backend
 * keeps a tree in the process with the same semantics; "a//b/" = "a/b". */
enum tfs_err tfs_vfs_posix_new(struct tfs_vfs **out) TFS_WUR;
enum tfs_err tfs_vfs_mem_new(struct tfs_vfs **out) TFS_WUR;

/* A POSIX backend confined to the folder root: it takes paths spelled as
 * root, or root + '/' + a path below it (others: TFS_E_PERM and a log
 * line), holds a descriptor of root opened now, and follows no symbolic
 * link and no ".." out of it below root, for reads, writes, listings and
 * removals alike (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or
 * openat(O_NOFOLLOW) one component at a time where the kernel lacks
 * openat2). A symbolic link met is as if the path were missing:
 * TFS_E_NOT_FOUND (stat: exists = false), with a log line; listings leave
 * links out, with a log line each. root itself may be reached through
 * links: it is the caller's choice. */
enum tfs_err tfs_vfs_posix_new_rooted(const char *root, struct tfs_vfs **out,
				      struct tfs_diag *d) TFS_WUR;
/* For tests: makes a rooted backend resolve component by component, as on
 * a kernel without openat2. No effect on other backends. */
void tfs_vfs_posix_rooted_walk(struct tfs_vfs *vfs);
/* open(2) of path through a POSIX backend (flags and mode as for open;
 * O_CLOEXEC is added): a rooted backend resolves it as its other calls
 * do (O_PATH | O_DIRECTORY gives a folder for the *at() calls). Returns
 * the descriptor, or -1 with errno set and d filled. Not for the
 * in-memory and faulty backends (-1, EINVAL). */
int tfs_vfs_posix_open(struct tfs_vfs *vfs, const char *path, int flags,
		       unsigned mode, struct tfs_diag *d);

/* Fault injection around another backend (which it does not own). */
enum tfs_fault_kind {
	TFS_FAULT_NONE,
	TFS_FAULT_EIO,       /* the call fails with TFS_E_IO */
	TFS_FAULT_SHORT,     /* reads/writes transfer only part, then fail */
	TFS_FAULT_NOSPC,     /* writes fail with TFS_E_NOSPC */
};
enum tfs_err tfs_vfs_faulty_new(struct tfs_vfs *inner, struct tfs_vfs **out) TFS_WUR;
/* From the nth call on (0 = the next one) of any operation, fail with
 * kind; once = fail only that call; TFS_FAULT_NONE disarms. SHORT
 * transfers half of a read/write/append, then fails with TFS_E_IO; NOSPC
 * fails write, append, mkdir, rename and fsync with TFS_E_NOSPC and the
 * other operations with TFS_E_IO (vfs_faulty.c). Thread-safe; no effect on
 * a backend that is not a faulty one. */
void tfs_vfs_faulty_arm(struct tfs_vfs *faulty, enum tfs_fault_kind kind,
			unsigned long nth, bool once);
/* Operations made through faulty since it was created (failed ones too). */
unsigned long tfs_vfs_faulty_calls(struct tfs_vfs *faulty);

/* The backend for a path when the caller gave none: for an "s3://bucket/.."
 * URI a handle on the process's S3 backend of that bucket (made on first
 * use with the settings of the environment and tfs_vfs_default_s3_opts,
 * and checked with one request so that bad credentials or a missing
 * bucket fail here with a clear message; it takes such URIs as paths);
 * for anything else the POSIX backend. Free with tfs_vfs_free. */
enum tfs_err tfs_vfs_default_new(const char *path, struct tfs_vfs **out,
				 struct tfs_diag *d) TFS_WUR;
struct tfs_s3_opts;
/* Overrides for the S3 backends tfs_vfs_default_new makes from then on
 * (copied; NULL = none). Call before starting threads. */
void tfs_vfs_default_s3_opts(const struct tfs_s3_opts *o);
/* The backend a default handle stands for (v itself for others). */
struct tfs_vfs *tfs_vfs_default_inner(struct tfs_vfs *v);

void tfs_vfs_free(struct tfs_vfs *vfs);

/* The seam: every caller above core/vfs goes through these wrappers, never
 * through vfs->ops directly, so one place sees every storage call (as
 * SQLite's os.c does). Same arguments and contract as the operations. */
static inline enum tfs_err tfs_vfs_stat(struct tfs_vfs *v, const char *path,
					struct tfs_stat *st, struct tfs_diag *d)
{
	return v->ops->stat(v, path, st, d);
}
static inline enum tfs_err tfs_vfs_lstat(struct tfs_vfs *v, const char *path,
					 struct tfs_stat *st, struct tfs_diag *d)
{
	return v->ops->lstat(v, path, st, d);
}
enum tfs_err tfs_vfs_stat_names(struct tfs_vfs *v, const char *dir,
				 const char *const *names, size_t n,
				 struct tfs_stat *sts, struct tfs_diag *d) TFS_WUR;
static inline enum tfs_err tfs_vfs_read(struct tfs_vfs *v, const char *path,
					uint64_t off, void *dst, size_t len,
					struct tfs_diag *d)
{
	return v->ops->read(v, path, off, dst, len, d);
}
static inline enum tfs_err tfs_vfs_list(struct tfs_vfs *v, const char *dir,
					struct tfs_dirlist *out,
					struct tfs_diag *d)
{
	return v->ops->list(v, dir, out, d);
}
static inline enum tfs_err tfs_vfs_write(struct tfs_vfs *v, const char *path,
					 const void *data, size_t len,
					 struct tfs_diag *d)
{
	return v->ops->write(v, path, data, len, d);
}
static inline enum tfs_err tfs_vfs_append(struct tfs_vfs *v, const char *path,
					  const void *data, size_t len,
					  struct tfs_diag *d)
{
	return v->ops->append(v, path, data, len, d);
}
static inline enum tfs_err tfs_vfs_fsync(struct tfs_vfs *v, const char *path,
					 struct tfs_diag *d)
{
	return v->ops->fsync(v, path, d);
}
static inline enum tfs_err tfs_vfs_mkdir(struct tfs_vfs *v, const char *path,
					 struct tfs_diag *d)
{
	return v->ops->mkdir(v, path, d);
}
static inline enum tfs_err tfs_vfs_rename(struct tfs_vfs *v, const char *from,
					  const char *to, struct tfs_diag *d)
{
	return v->ops->rename(v, from, to, d);
}
static inline enum tfs_err tfs_vfs_remove(struct tfs_vfs *v, const char *path,
					  struct tfs_diag *d)
{
	return v->ops->remove(v, path, d);
}
static inline enum tfs_err tfs_vfs_space(struct tfs_vfs *v, const char *path,
					 struct tfs_space *out,
					 struct tfs_diag *d)
{
	return v->ops->space(v, path, out, d);
}

/* tfs_vfs_list, but a missing folder lists as empty instead of failing;
 * only another failure reaches d (with the backend's message). */
enum tfs_err tfs_vfs_list_or_empty(struct tfs_vfs *v, const char *dir,
				   struct tfs_dirlist *out,
				   struct tfs_diag *d) TFS_WUR;

/* Reads a whole file (at most max bytes, else TFS_E_TOO_BIG) into a new
 * buffer owned by the caller (tfs_free). */
enum tfs_err tfs_vfs_read_all(struct tfs_vfs *v, const char *path, size_t max,
			      uint8_t **out, size_t *len,
			      struct tfs_diag *d) TFS_WUR;

void tfs_dirlist_release(struct tfs_dirlist *l);
/* Fills out as storage without a fixed size reports itself: 2^30 free
 * blocks of 1 MiB, names of 255 bytes. */
void tfs_vfs_unbounded_space(struct tfs_space *out);

/* path with "//", "." and ".." resolved by their spelling alone (no
 * storage is asked, no link followed): "/a/./b//../c" -> "/a/c". A ".."
 * at the top of an absolute path stays at "/", at the top of a relative
 * one it is kept; a "scheme://" prefix ("s3://bucket") is kept as is. A
 * new string (tfs_free); NULL on ENOMEM. */
char *tfs_path_normalize(const char *path);

/* Joins dir and name with one '/' into a new string (NULL on ENOMEM). */
char *tfs_path_join(const char *dir, const char *name);

#endif
