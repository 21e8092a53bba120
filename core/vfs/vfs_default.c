/* The storage a bare path names, for callers that were given no backend:
 * an s3:// URI is a bucket (tfs_s3.h), anything else the local file system.
 *
 * S3 backends are shared: the first path of a bucket makes its backend
 * (and checks the bucket once), later ones get a thin handle on the same
 * backend, so that connections are reused and what one caller buffered or
 * made (unsent files, new folders) is seen by the next one, as it would be
 * on a local disk. This registry is the module's one piece of process-wide
 * state; it lives until exit. */
#include "tfs_vfs.h"

#include <pthread.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_s3.h"

struct shared {
	struct shared *next;
	char *bucket;
	struct tfs_vfs *vfs;
};

struct handle {
	struct tfs_vfs base;
	struct tfs_vfs *inner;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared *reg_head;            /* protected by reg_lock */
static struct tfs_s3_opts reg_opts = {NULL, NULL, NULL, -1, NULL, NULL};
static char *reg_strs[6];                   /* owned copies of reg_opts */

static struct tfs_vfs *in(struct tfs_vfs *v)
{
	return ((struct handle *)v)->inner;
}

static enum tfs_err h_stat(struct tfs_vfs *v, const char *p, struct tfs_stat *st,
			   struct tfs_diag *d)
{
	return in(v)->ops->stat(in(v), p, st, d);
}

static enum tfs_err h_lstat(struct tfs_vfs *v, const char *p,
			    struct tfs_stat *st, struct tfs_diag *d)
{
	return in(v)->ops->lstat(in(v), p, st, d);
}

static enum tfs_err h_stat_names(struct tfs_vfs *v, const char *dir,
				  const char *const *names, size_t n,
				  struct tfs_stat *sts, struct tfs_diag *d)
{
	return tfs_vfs_stat_names(in(v), dir, names, n, sts, d);
}

static enum tfs_err h_read(struct tfs_vfs *v, const char *p, uint64_t off,
			   void *dst, size_t len, struct tfs_diag *d)
{
	return in(v)->ops->read(in(v), p, off, dst, len, d);
}

static enum tfs_err h_list(struct tfs_vfs *v, const char *p,
			   struct tfs_dirlist *out, struct tfs_diag *d)
{
	return in(v)->ops->list(in(v), p, out, d);
}

static enum tfs_err h_write(struct tfs_vfs *v, const char *p, const void *data,
			    size_t len, struct tfs_diag *d)
{
	return in(v)->ops->write(in(v), p, data, len, d);
}

static enum tfs_err h_append(struct tfs_vfs *v, const char *p, const void *data,
			     size_t len, struct tfs_diag *d)
{
	return in(v)->ops->append(in(v), p, data, len, d);
}

static enum tfs_err h_fsync(struct tfs_vfs *v, const char *p, struct tfs_diag *d)
{
	return in(v)->ops->fsync(in(v), p, d);
}

static enum tfs_err h_mkdir(struct tfs_vfs *v, const char *p, struct tfs_diag *d)
{
	return in(v)->ops->mkdir(in(v), p, d);
}

static enum tfs_err h_rename(struct tfs_vfs *v, const char *from, const char *to,
			     struct tfs_diag *d)
{
	return in(v)->ops->rename(in(v), from, to, d);
}

static enum tfs_err h_remove(struct tfs_vfs *v, const char *p, struct tfs_diag *d)
{
	return in(v)->ops->remove(in(v), p, d);
}

static enum tfs_err h_space(struct tfs_vfs *v, const char *p,
			    struct tfs_space *out, struct tfs_diag *d)
{
	return tfs_vfs_space(in(v), p, out, d);
}

static void h_destroy(struct tfs_vfs *v)
{
	tfs_free(v);
}

static const struct tfs_vfs_ops handle_ops = {
	.stat = h_stat,
	.lstat = h_lstat,
	.stat_names = h_stat_names,
	.read = h_read,
	.list = h_list,
	.write = h_write,
	.append = h_append,
	.fsync = h_fsync,
	.mkdir = h_mkdir,
	.rename = h_rename,
	.remove = h_remove,
	.space = h_space,
	.destroy = h_destroy,
};

void tfs_vfs_default_s3_opts(const struct tfs_s3_opts *o)
{
	const char *src[6] = {o ? o->endpoint : NULL, o ? o->region : NULL,
			      o ? o->addressing : NULL,
			      o ? o->credentials_file : NULL,
			      o ? o->profile : NULL, NULL};

	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < 5; i++) {
		tfs_free(reg_strs[i]);
		reg_strs[i] = src[i] ? tfs_strdup(src[i]) : NULL;
	}
	reg_opts.endpoint = reg_strs[0];
	reg_opts.region = reg_strs[1];
	reg_opts.addressing = reg_strs[2];
	reg_opts.credentials_file = reg_strs[3];
	reg_opts.profile = reg_strs[4];
	reg_opts.verify_tls = o ? o->verify_tls : -1;
	pthread_mutex_unlock(&reg_lock);
}

/* The shared backend of the URI's bucket, made (and checked) on first
 * use. The registry lock is held while making it so that two threads
 * never make two; that is one request, once per bucket. */
static enum tfs_err shared_get(const char *uri, struct tfs_vfs **out,
			       struct tfs_diag *d)
{
	struct shared *s;
	char *bucket = NULL, *root = NULL;
	enum tfs_err e;

	if ((e = tfs_s3_uri_parse(uri, &bucket, &root, d)))
		return e;
	tfs_free(root);
	pthread_mutex_lock(&reg_lock);
	for (s = reg_head; s; s = s->next)
		if (!strcmp(s->bucket, bucket))
			break;
	if (!s) {
		struct tfs_vfs *v = NULL;
		char *p = NULL;

		e = tfs_vfs_s3_open_uri(uri, &reg_opts, &v, &p, d);
		tfs_free(p);
		if (!e) {
			s = tfs_malloc(sizeof(*s));
			if (!s) {
				tfs_vfs_free(v);
				e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			} else {
				s->bucket = bucket;
				bucket = NULL;
				s->vfs = v;
				s->next = reg_head;
				reg_head = s;
			}
		}
	}
	pthread_mutex_unlock(&reg_lock);
	tfs_free(bucket);
	if (e)
		return e;
	*out = s->vfs;
	return TFS_E_OK;
}

enum tfs_err tfs_vfs_default_new(const char *path, struct tfs_vfs **out,
				 struct tfs_diag *d)
{
	struct tfs_vfs *inner;
	struct handle *h;
	enum tfs_err e;

	*out = NULL;
	if (!tfs_s3_is_uri(path)) {
		e = tfs_vfs_posix_new(out);
		if (e)
			return tfs_fail(d, e, "cannot set up file access");
		return TFS_E_OK;
	}
	if ((e = shared_get(path, &inner, d)))
		return e;
	h = tfs_malloc(sizeof(*h));
	if (!h)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	h->base.ops = &handle_ops;
	h->inner = inner;
	*out = &h->base;
	return TFS_E_OK;
}

struct tfs_vfs *tfs_vfs_default_inner(struct tfs_vfs *v)
{
	return v && v->ops == &handle_ops ? in(v) : v;
}
