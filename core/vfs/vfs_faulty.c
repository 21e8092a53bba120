/* A fault-injecting storage backend for tests: it forwards every operation
 * to another backend, counts the calls, and once armed fails the nth call
 * (or every call from the nth on) the way real storage fails.
 *
 * Fault kinds:
 *  - TFS_FAULT_EIO: the operation is not forwarded and fails with TFS_E_IO.
 *  - TFS_FAULT_SHORT: read, write and append transfer the first half of the
 *    bytes (write leaves a truncated file), then fail with TFS_E_IO; other
 *    operations fail like EIO.
 *  - TFS_FAULT_NOSPC: operations that may need space (write, append, mkdir,
 *    rename, fsync) fail with TFS_E_NOSPC without being forwarded; the
 *    others (stat, read, list, remove) fail with TFS_E_IO.
 *
 * The counter and the arming are protected by one mutex, which is never held
 * while the inner backend runs. */
#include "tfs_vfs.h"

#include <pthread.h>

#include "tfs_alloc.h"

struct faulty_vfs {
	struct tfs_vfs base;
	struct tfs_vfs *inner; /* borrowed */
	pthread_mutex_t lock;
	unsigned long calls;       /* protected by lock */
	enum tfs_fault_kind kind;  /* protected by lock */
	unsigned long fail_at;     /* protected by lock */
	bool once;                 /* protected by lock */
};

enum op_class { OP_QUERY, OP_TRANSFER, OP_SPACE };

static const struct tfs_vfs_ops faulty_ops;

static struct faulty_vfs *to_faulty(struct tfs_vfs *v)
{
	return (struct faulty_vfs *)v;
}

/* Counts one call and says which fault, if any, it gets. */
static enum tfs_fault_kind next_fault(struct faulty_vfs *f)
{
	enum tfs_fault_kind k = TFS_FAULT_NONE;
	unsigned long idx;

	pthread_mutex_lock(&f->lock);
	idx = f->calls++;
	if (f->kind != TFS_FAULT_NONE && idx >= f->fail_at &&
	    (!f->once || idx == f->fail_at))
		k = f->kind;
	pthread_mutex_unlock(&f->lock);
	return k;
}

/* Error for a fault on an operation that transfers nothing. */
static enum tfs_err fault_err(enum tfs_fault_kind k, enum op_class c,
			      const char *what, const char *path,
			      struct tfs_diag *d)
{
	if (k == TFS_FAULT_NOSPC && c == OP_SPACE)
		return tfs_fail(d, TFS_E_NOSPC,
				"'%s': cannot %s: no space left on device (injected)",
				path, what);
	return tfs_fail(d, TFS_E_IO,
			"'%s': cannot %s: input/output error (injected)", path,
			what);
}

static enum tfs_err faulty_stat(struct tfs_vfs *vfs, const char *path,
				struct tfs_stat *st, struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);

	if (k != TFS_FAULT_NONE)
		return fault_err(k, OP_QUERY, "stat", path, d);
	return f->inner->ops->stat(f->inner, path, st, d);
}

static enum tfs_err faulty_lstat(struct tfs_vfs *vfs, const char *path,
				 struct tfs_stat *st, struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);

	if (k != TFS_FAULT_NONE)
		return fault_err(k, OP_QUERY, "lstat", path, d);
	return f->inner->ops->lstat(f->inner, path, st, d);
}

static enum tfs_err faulty_read(struct tfs_vfs *vfs, const char *path,
				uint64_t off, void *dst, size_t len,
				struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);
	enum tfs_err err;

	if (k == TFS_FAULT_NONE)
		return f->inner->ops->read(f->inner, path, off, dst, len, d);
	if (k == TFS_FAULT_SHORT && len / 2) {
		err = f->inner->ops->read(f->inner, path, off, dst, len / 2, d);
		if (err)
			return err;
		return tfs_fail(d, TFS_E_IO,
				"'%s': short read: %zu of %zu bytes (injected)",
				path, len / 2, len);
	}
	return fault_err(k, OP_TRANSFER, "read", path, d);
}

static enum tfs_err faulty_list(struct tfs_vfs *vfs, const char *dir,
				struct tfs_dirlist *out, struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);

	if (k != TFS_FAULT_NONE) {
		out->names = NULL;
		out->count = 0;
		return fault_err(k, OP_QUERY, "list", dir, d);
	}
	return f->inner->ops->list(f->inner, dir, out, d);
}

static enum tfs_err faulty_put(struct tfs_vfs *vfs, const char *path,
			       const void *data, size_t len, bool append,
			       struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	struct tfs_vfs *in = f->inner;
	enum tfs_fault_kind k = next_fault(f);
	enum tfs_err err;

	if (k == TFS_FAULT_NONE)
		return append ? in->ops->append(in, path, data, len, d)
			      : in->ops->write(in, path, data, len, d);
	if (k == TFS_FAULT_SHORT) {
		err = append ? in->ops->append(in, path, data, len / 2, d)
			     : in->ops->write(in, path, data, len / 2, d);
		if (err)
			return err;
		return tfs_fail(d, TFS_E_IO,
				"'%s': short write: %zu of %zu bytes (injected)",
				path, len / 2, len);
	}
	return fault_err(k, OP_SPACE, append ? "append" : "write", path, d);
}

static enum tfs_err faulty_write(struct tfs_vfs *vfs, const char *path,
				 const void *data, size_t len,
				 struct tfs_diag *d)
{
	return faulty_put(vfs, path, data, len, false, d);
}

static enum tfs_err faulty_append(struct tfs_vfs *vfs, const char *path,
				  const void *data, size_t len,
				  struct tfs_diag *d)
{
	return faulty_put(vfs, path, data, len, true, d);
}

static enum tfs_err faulty_fsync(struct tfs_vfs *vfs, const char *path,
				 struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);

	if (k != TFS_FAULT_NONE)
		return fault_err(k, OP_SPACE, "fsync", path, d);
	return f->inner->ops->fsync(f->inner, path, d);
}

static enum tfs_err faulty_mkdir(struct tfs_vfs *vfs, const char *path,
				 struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);

	if (k != TFS_FAULT_NONE)
		return fault_err(k, OP_SPACE, "create folder", path, d);
	return f->inner->ops->mkdir(f->inner, path, d);
}

static enum tfs_err faulty_rename(struct tfs_vfs *vfs, const char *from,
				  const char *to, struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);

	if (k != TFS_FAULT_NONE)
		return fault_err(k, OP_SPACE, "rename", from, d);
	return f->inner->ops->rename(f->inner, from, to, d);
}

static enum tfs_err faulty_remove(struct tfs_vfs *vfs, const char *path,
				  struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);

	if (k != TFS_FAULT_NONE)
		return fault_err(k, OP_QUERY, "remove", path, d);
	return f->inner->ops->remove(f->inner, path, d);
}

static enum tfs_err faulty_space(struct tfs_vfs *vfs, const char *path,
				 struct tfs_space *out, struct tfs_diag *d)
{
	struct faulty_vfs *f = to_faulty(vfs);
	enum tfs_fault_kind k = next_fault(f);

	if (k != TFS_FAULT_NONE)
		return fault_err(k, OP_QUERY, "space", path, d);
	return tfs_vfs_space(f->inner, path, out, d);
}

static void faulty_destroy(struct tfs_vfs *vfs)
{
	struct faulty_vfs *f = to_faulty(vfs);

	pthread_mutex_destroy(&f->lock);
	tfs_free(f);
}

static const struct tfs_vfs_ops faulty_ops = {
	.stat = faulty_stat,
	.lstat = faulty_lstat,
	.read = faulty_read,
	.list = faulty_list,
	.write = faulty_write,
	.append = faulty_append,
	.fsync = faulty_fsync,
	.mkdir = faulty_mkdir,
	.rename = faulty_rename,
	.remove = faulty_remove,
	.space = faulty_space,
	.destroy = faulty_destroy,
};

enum tfs_err tfs_vfs_faulty_new(struct tfs_vfs *inner, struct tfs_vfs **out)
{
	struct faulty_vfs *f = tfs_callocn(1, sizeof(*f));

	*out = NULL;
	if (!f)
		return TFS_E_NOMEM;
	if (pthread_mutex_init(&f->lock, NULL) != 0) {
		tfs_free(f);
		return TFS_E_NOMEM;
	}
	f->base.ops = &faulty_ops;
	f->inner = inner;
	f->kind = TFS_FAULT_NONE;
	*out = &f->base;
	return TFS_E_OK;
}

void tfs_vfs_faulty_arm(struct tfs_vfs *faulty, enum tfs_fault_kind kind,
			unsigned long nth, bool once)
{
	struct faulty_vfs *f = to_faulty(faulty);

	if (faulty->ops != &faulty_ops)
		return;
	pthread_mutex_lock(&f->lock);
	f->kind = kind;
	f->fail_at = f->calls + nth;
	f->once = once;
	pthread_mutex_unlock(&f->lock);
}

unsigned long tfs_vfs_faulty_calls(struct tfs_vfs *faulty)
{
	struct faulty_vfs *f = to_faulty(faulty);
	unsigned long n;

	if (faulty->ops != &faulty_ops)
		return 0;
	pthread_mutex_lock(&f->lock);
	n = f->calls;
	pthread_mutex_unlock(&f->lock);
	return n;
}
