/* The S3 backend's operations that read: stat, read and list (vfs_s3.c
 * has the design). */
#include "s3_backend.h"

/* ---- Operations -------------------------------------------------------- */

struct s3 *tfs__s3_of(struct tfs_vfs *v)
{
	return (struct s3 *)v;
}

/* The key of a backend path; "s3://bucket/..." URIs of this bucket are
 * paths too. NULL for a URI of another bucket or on ENOMEM. */
char *tfs__s3_object_key(struct s3 *s, const char *path)
{
	if (tfs_s3_is_uri(path)) {
		size_t bl = strlen(s->bucket);

		path += 5;
		if (strncmp(path, s->bucket, bl) ||
		    (path[bl] != '/' && path[bl] != '\0'))
			return NULL;
		path += bl;
	}
	return tfs__s3_key(path);
}

/* Why object_key failed. */
enum tfs_err tfs__s3_bad_path(struct s3 *s, const char *path,
			      struct tfs_diag *d)
{
	if (tfs_s3_is_uri(path))
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': not in bucket '%s'", path, s->bucket);
	return tfs_fail(d, TFS_E_NOMEM, "out of memory");
}

enum tfs_err tfs__s3_head(struct s3 *s, const char *key, bool *found,
			  struct tfs_stat *st, struct tfs_diag *d)
{
	struct req r;
	enum tfs_err e;

	*found = false;
	tfs__s3_req_init(&r, "HEAD", key);
	e = tfs__s3_perform(s, &r, d);
	if (e == TFS_E_OK) {
		*found = true;
		st->exists = true;
		st->is_dir = false;
		st->size = r.length >= 0 ? (uint64_t)r.length : 0;
		st->mtime_ns = r.mtime_ns;
	} else if (r.status == 404) {
		/* d holds the 404: the caller was handed a diag it must not
		 * see; callers pass a scratch one. */
		e = TFS_E_OK;
	}
	tfs__s3_req_release(&r);
	return e;
}

/* Whether any key starts with prefix. */
enum tfs_err tfs__s3_prefix_used(struct s3 *s, const char *prefix, bool *used,
				 struct tfs_diag *d)
{
	struct tfs__s3_listing l;
	enum tfs_err e;

	tfs__s3_listing_init(&l);
	e = tfs__s3_list_prefix(s, prefix, false, 1, &l, d);
	*used = !e && (l.nobjects || l.nprefixes);
	tfs__s3_listing_release(&l);
	return e;
}

char *tfs__s3_dir_prefix(const char *key)
{
	size_t n = strlen(key);
	char *p = tfs_malloc(n + 2);

	if (!p)
		return NULL;
	memcpy(p, key, n);
	if (n)
		p[n++] = '/';
	p[n] = '\0';
	return p;
}

/* Answers from what is known here without asking the server: the bucket,
 * made or locally used folders, unsent files and the caches. */
static bool stat_known(struct s3 *s, const char *key, struct tfs_stat *st)
{
	struct pending *p;

	if (!*key || tfs__s3_dir_made(s, key) || tfs__s3_local_below(s, key)) {
		st->exists = st->is_dir = true;
		return true;
	}
	if ((p = tfs__s3_pending_get(s, key, false, NULL))) {
		st->exists = true;
		st->size = p->sent + p->buf.len;
		st->mtime_ns = p->mtime_ns;
		tfs__s3_pending_put(s, p);
		return true;
	}
	return tfs__s3_icache_get(s, key, st, NULL) || tfs__s3_scache_get(s, key, st);
}

/* One listing from the key on tells a file ("key" among the objects) from a
 * folder ("key/" among the common prefixes, pre); only when other keys with
 * that start fill the page is more needed, then *more is set. */
static enum tfs_err stat_by_listing(struct s3 *s, const char *key,
				    const char *pre, struct tfs_stat *st,
				    bool *more, struct tfs_diag *d)
{
	struct tfs__s3_listing l;
	bool file = false, dir = false;
	enum tfs_err e;

	tfs__s3_listing_init(&l);
	e = tfs__s3_list_prefix(s, key, true, 1000, &l, d);
	for (size_t i = 0; !e && i < l.nobjects && !file; i++)
		if (!strcmp(l.objects[i].key, key)) {
			file = true;
			st->size = l.objects[i].size;
			st->mtime_ns = l.objects[i].mtime_ns;
		}
	for (size_t i = 0; !e && i < l.nprefixes && !dir; i++)
		dir = !strcmp(l.prefixes[i], pre);
	*more = l.truncated && !file && !dir;
	tfs__s3_listing_release(&l);
	if (e)
		return e;
	if (file) {
		st->exists = true;
		tfs__s3_icache_put(s, key, st->size, st->mtime_ns, NULL);
	} else if (dir) {
		st->exists = st->is_dir = true;
	}
	return TFS_E_OK;
}

/* The slow path: a HEAD of the key, then a probe of the folder prefix. */
static enum tfs_err stat_by_head(struct s3 *s, const char *key,
				 const char *pre, struct tfs_stat *st,
				 struct tfs_diag *d)
{
	struct tfs_diag ld;
	enum tfs_err e;
	bool found, used;

	tfs_diag_init(&ld);
	if ((e = tfs__s3_head(s, key, &found, st, &ld)))
		return tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
	if (found)
		return TFS_E_OK;
	if ((e = tfs__s3_prefix_used(s, pre, &used, d)))
		return e;
	if (used)
		st->exists = st->is_dir = true;
	return TFS_E_OK;
}

enum tfs_err tfs__s3_stat(struct tfs_vfs *vfs, const char *path,
			  struct tfs_stat *st, struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *key = tfs__s3_object_key(tfs__s3_of(vfs), path), *pre = NULL;
	enum tfs_err e = TFS_E_OK;
	bool more;

	memset(st, 0, sizeof(*st));
	if (!key)
		return tfs__s3_bad_path(tfs__s3_of(vfs), path, d);
	if (stat_known(s, key, st))
		goto out_free_key;
	pre = tfs__s3_dir_prefix(key);
	if (!pre) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free_key;
	}
	e = stat_by_listing(s, key, pre, st, &more, d);
	if (!e && more)
		e = stat_by_head(s, key, pre, st, d);
out_free_key:
	if (!e && pre)
		tfs__s3_scache_put(s, key, st);
	tfs_free(pre);
	tfs_free(key);
	return e;
}

struct read_job {
	struct s3 *s;
	const char *key;
	uint64_t off;
	uint8_t *dst;
	size_t len;
	enum tfs_err e;
	struct tfs_diag d;
};

enum tfs_err tfs__s3_get_range(struct s3 *s, const char *key, uint64_t off,
			       uint8_t *dst, size_t len, struct tfs_diag *d)
{
	struct req r;
	enum tfs_err e;

	tfs__s3_req_init(&r, "GET", key);
	r.ranged = true;
	r.off = off;
	r.len = len;
	r.dst = dst;
	e = tfs__s3_perform(s, &r, d);
	tfs__s3_req_release(&r);
	return e;
}

static void *read_thread(void *arg)
{
	struct read_job *j = arg;

	j->e = tfs__s3_get_range(j->s, j->key, j->off, j->dst, j->len, &j->d);
	return NULL;
}

/* Several ranged GETs at once for a large read, READ_PARALLEL at a time. */
static enum tfs_err read_split(struct s3 *s, const char *key, uint64_t off,
			       uint8_t *dst, size_t len, struct tfs_diag *d)
{
	size_t done = 0;

	while (done < len) {
		struct read_job jobs[READ_PARALLEL];
		pthread_t th[READ_PARALLEL];
		bool started[READ_PARALLEL];
		unsigned n = 0;
		enum tfs_err e = TFS_E_OK;

		for (; n < READ_PARALLEL && done < len; n++) {
			size_t part = len - done < READ_SPLIT ? len - done
							      : READ_SPLIT;

			jobs[n] = (struct read_job){s, key, off + done, dst + done,
						    part, TFS_E_OK, {0}};
			tfs_diag_init(&jobs[n].d);
			done += part;
			started[n] = n > 0 &&
				     pthread_create(&th[n], NULL, read_thread,
						    &jobs[n]) == 0;
		}
		for (unsigned i = 0; i < n; i++)
			if (!started[i])
				read_thread(&jobs[i]);
		for (unsigned i = 0; i < n; i++) {
			if (started[i])
				pthread_join(th[i], NULL);
			if (jobs[i].e && !e)
				e = tfs_fail(d, jobs[i].e, "%s",
					     tfs_diag_msg(&jobs[i].d));
		}
		if (e)
			return e;
	}
	return TFS_E_OK;
}

/* Copies len bytes at off out of a whole object held in memory. */
static enum tfs_err copy_span(const uint8_t *data, uint64_t size,
			      const char *path, uint64_t off, void *dst,
			      size_t len, struct tfs_diag *d)
{
	if (off > size || len > size - off)
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': file too short: wanted %zu bytes at offset %" PRIu64,
				path, len, off);
	if (len)
		memcpy(dst, data + off, len);
	return TFS_E_OK;
}

/* Our own unsent bytes; drops the reference on p. */
static enum tfs_err read_unsent(struct s3 *s, struct pending *p,
				const char *path, uint64_t off, void *dst,
				size_t len, struct tfs_diag *d)
{
	enum tfs_err e;

	if (p->sent)
		e = tfs_fail(d, TFS_E_BUSY,
			     "'%s': being uploaded, not readable yet", path);
	else
		e = copy_span(p->buf.data, p->buf.len, path, off, dst, len, d);
	tfs__s3_pending_put(s, p);
	return e;
}

/* Small objects that never change are fetched whole once. Sets *done when
 * the read was answered (or failed) here; otherwise the caller falls back
 * to reading the range alone. */
static enum tfs_err read_immutable(struct tfs_vfs *vfs, const char *key,
				   const char *path, uint64_t off, void *dst,
				   size_t len, bool *done, struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	struct tfs_stat st;
	uint8_t *data;
	enum tfs_err e;

	*done = true;
	if (tfs__s3_icache_get(s, key, &st, &data) && data) {
		e = copy_span(data, st.size, path, off, dst, len, d);
		tfs_free(data);
		return e;
	}
	if (!tfs__s3_icache_get(s, key, &st, NULL) &&
	    (e = tfs__s3_stat(vfs, path, &st, d)))
		return e;
	if (st.exists && !st.is_dir && st.size <= ICACHE_OBJECT_MAX &&
	    st.size > 0 && off <= st.size && len <= st.size - off) {
		data = tfs_malloc((size_t)st.size);
		if (data && !tfs__s3_get_range(s, key, 0, data, (size_t)st.size, NULL)) {
			tfs__s3_icache_put(s, key, st.size, st.mtime_ns, data);
			memcpy(dst, data + off, len);
			tfs_free(data);
			return TFS_E_OK;
		}
		tfs_free(data);
	}
	*done = false;
	return TFS_E_OK;
}

/* A ranged GET (split in parts when large), errors named after the path. */
static enum tfs_err read_remote(struct s3 *s, const char *key,
				const char *path, uint64_t off, void *dst,
				size_t len, struct tfs_diag *d)
{
	struct tfs_diag ld;
	enum tfs_err e;

	tfs_diag_init(&ld);
	if (len > 2 * (size_t)READ_SPLIT)
		e = read_split(s, key, off, dst, len, &ld);
	else
		e = tfs__s3_get_range(s, key, off, dst, len, &ld);
	if (e == TFS_E_CORRUPT)
		/* 416 or a range past the end. */
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "'%s': file too short: wanted %zu bytes at offset %" PRIu64,
			     path, len, off);
	else if (e == TFS_E_NOT_FOUND)
		e = tfs_fail(d, e, "'%s': no such file", path);
	else if (e)
		e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
	return e;
}

enum tfs_err tfs__s3_read(struct tfs_vfs *vfs, const char *path,
			  uint64_t off, void *dst, size_t len,
			  struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *key = tfs__s3_object_key(tfs__s3_of(vfs), path);
	struct pending *p;
	bool done;
	enum tfs_err e;

	if (!key)
		return tfs__s3_bad_path(tfs__s3_of(vfs), path, d);
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off) {
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "'%s': read of %zu bytes at offset %" PRIu64
			     " is out of range", path, len, off);
		goto out_free_key;
	}
	if ((p = tfs__s3_pending_get(s, key, false, NULL))) {
		e = read_unsent(s, p, path, off, dst, len, d);
		goto out_free_key;
	}
	if (tfs__s3_immutable_key(key)) {
		e = read_immutable(vfs, key, path, off, dst, len, &done, d);
		if (done)
			goto out_free_key;
	}
	if (len == 0) {
		struct tfs_stat st;

		e = tfs__s3_stat(vfs, path, &st, d);
		if (!e && (!st.exists || st.is_dir))
			e = tfs_fail(d, TFS_E_NOT_FOUND, "'%s': no such file", path);
		goto out_free_key;
	}
	e = read_remote(s, key, path, off, dst, len, d);
out_free_key:
	tfs_free(key);
	return e;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool add_name(struct tfs_dirlist *l, size_t *cap, const char *name,
		     size_t n)
{
	if (!n)
		return true;
	if (tfs_grow(&l->names, cap, l->count + 1, sizeof(*l->names)))
		return false;
	l->names[l->count] = tfs_strndup(name, n);
	if (!l->names[l->count])
		return false;
	l->count++;
	return true;
}

/* Adds what this process made below key (pending files, made folders)
 * as names of its children. */
static bool add_local(struct s3 *s, const char *pre, struct tfs_dirlist *l,
		      size_t *cap, bool *any)
{
	size_t n = strlen(pre);
	bool ok = true;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; ok && i < s->ndirs; i++) {
		const char *k = s->dirs[i];

		if (!strcmp(k, pre) || (n && !strncmp(k, pre, n - 1) &&
					k[n - 1] == '\0'))
			*any = true;
		if (!strncmp(k, pre, n) && k[n]) {
			const char *c = k + n, *sl = strchr(c, '/');

			*any = true;
			ok = add_name(l, cap, c, sl ? (size_t)(sl - c) : strlen(c));
		}
	}
	for (struct pending *p = s->pending; ok && p; p = p->next) {
		if (!p->unlinked && !strncmp(p->key, pre, n) && p->key[n]) {
			const char *c = p->key + n, *sl = strchr(c, '/');

			*any = true;
			ok = add_name(l, cap, c, sl ? (size_t)(sl - c) : strlen(c));
		}
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

enum tfs_err tfs__s3_list(struct tfs_vfs *vfs, const char *dir,
			  struct tfs_dirlist *out, struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *key = tfs__s3_object_key(tfs__s3_of(vfs), dir), *pre = NULL;
	struct tfs__s3_listing ls;
	struct tfs_dirlist l = {NULL, 0};
	size_t cap = 0, plen;
	bool any = false, ok = true;
	enum tfs_err e;

	out->names = NULL;
	out->count = 0;
	tfs__s3_listing_init(&ls);
	if (!key) {
		e = tfs__s3_bad_path(s, dir, d);
		goto out_free;
	}
	if (!(pre = tfs__s3_dir_prefix(key))) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free;
	}
	plen = strlen(pre);
	if ((e = tfs__s3_list_prefix(s, pre, true, 0, &ls, d)))
		goto out_free;
	for (size_t i = 0; ok && i < ls.nobjects; i++) {
		const char *k = ls.objects[i].key;

		any = true;
		if (strncmp(k, pre, plen) || strchr(k + plen, '/'))
			continue;
		ok = add_name(&l, &cap, k + plen, strlen(k + plen));
	}
	for (size_t i = 0; ok && i < ls.nprefixes; i++) {
		const char *k = ls.prefixes[i];
		size_t n = strlen(k);

		any = true;
		if (n <= plen || strncmp(k, pre, plen))
			continue;
		ok = add_name(&l, &cap, k + plen, n - plen - (k[n - 1] == '/'));
	}
	if (ok)
		ok = add_local(s, pre, &l, &cap, &any);
	if (!ok) {
		e = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory listing", dir);
		goto out_free;
	}
	if (!any && *key && !tfs__s3_dir_made(s, key)) {
		e = tfs_fail(d, TFS_E_NOT_FOUND, "'%s': cannot list: no such folder",
			     dir);
		goto out_free;
	}
	if (l.count > 1) {
		size_t w = 1;

		qsort(l.names, l.count, sizeof(*l.names), name_cmp);
		for (size_t i = 1; i < l.count; i++) {
			if (!strcmp(l.names[i], l.names[w - 1]))
				tfs_free(l.names[i]);
			else
				l.names[w++] = l.names[i];
		}
		l.count = w;
	}
	*out = l;
	l.names = NULL;
	l.count = 0;
out_free:
	tfs_dirlist_release(&l);
	tfs__s3_listing_release(&ls);
	tfs_free(pre);
	tfs_free(key);
	return e;
}
