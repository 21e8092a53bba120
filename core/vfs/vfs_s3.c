/* The S3 storage backend on libcurl (tfs_s3.h has the contract).
 *
 * Requests: every one is signed by libcurl (CURLOPT_AWS_SIGV4) with the
 * payload's SHA-256 in x-amz-content-sha256 (libcurl 7.88 leaves that
 * header to us), carries a timeout (the configured one plus 1 ms per KiB
 * moved) and is retried with exponential backoff and full jitter on
 * resets, timeouts, truncated bodies, 500/502/503/504/429 and SlowDown.
 * Query strings are written sorted and percent-encoded, since libcurl signs
 * them exactly as written. Easy handles are kept in a small pool and reset
 * between requests, which keeps their connections open for reuse.
 *
 * Reads: a ranged GET whose answer must be 206 with the Content-Range of
 * exactly the bytes asked for, and exactly that many bytes; anything else
 * is retried, then an error, so a read never returns wrong bytes. Large
 * reads are cut into ranges fetched by several requests at once.
 *
 * Folders: S3 has none; a folder exists when keys start with its key and
 * '/' (a one-key listing says), or when this process made it with mkdir
 * (kept in memory so that an empty new folder lists as empty).
 *
 * Writes: bytes are buffered per path (write truncates, append adds) and
 * uploaded at fsync. Past two parts' worth of buffered appends a multipart
 * upload starts and full parts are sent as they fill, so memory stays
 * bounded; fsync sends the rest and completes it. Commit objects use
 * If-None-Match: * (a 412 on a retry is checked against our own bytes by
 * their MD5, since the first attempt may have landed). rename is a
 * server-side copy and a delete (folders: every key below them). */
#include "s3_backend.h"

static void parent_remember(struct s3 *s, const char *key);

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* POSIX says a file can only be made in an existing folder: the parent
 * must be the bucket, a folder this process made, or a prefix in use. */
static enum tfs_err parent_check(struct s3 *s, const char *key,
				 const char *path, struct tfs_diag *d)
{
	const char *sl = strrchr(key, '/');
	struct tfs_stat st;
	char *parent;
	enum tfs_err e;

	if (!sl)
		return TFS_E_OK;
	parent = tfs_strndup(key, (size_t)(sl - key));
	if (!parent)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if (tfs__s3_dir_made(s, parent) || tfs__s3_local_below(s, parent)) {
		tfs_free(parent);
		return TFS_E_OK;
	}
	e = tfs__s3_stat(&s->base, parent, &st, d);
	tfs_free(parent);
	if (e)
		return e;
	if (!st.exists || !st.is_dir)
		return tfs_fail(d, TFS_E_NOT_FOUND, "'%s': no such folder", path);
	return TFS_E_OK;
}

static enum tfs_err s3_write(struct tfs_vfs *vfs, const char *path,
			     const void *data, size_t len, struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *key = tfs__s3_object_key(tfs__s3_of(vfs), path);
	struct pending *p;
	enum tfs_err e = TFS_E_OK;

	tfs__s3_scache_clear(tfs__s3_of(vfs));
	if (!key)
		return tfs__s3_bad_path(tfs__s3_of(vfs), path, d);
	if (!*key) {
		tfs_free(key);
		return tfs_fail(d, TFS_E_INVALID, "'%s': not a file name", path);
	}
	if ((e = parent_check(s, key, path, d))) {
		tfs_free(key);
		return e;
	}
	p = tfs__s3_pending_get(s, key, true, NULL);
	if (!p) {
		tfs_free(key);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	tfs__s3_mp_abort(s, p);
	p->failed = false;
	p->buf.len = 0;
	p->mtime_ns = now_ns();
	if (len && tfs_buf_append(&p->buf, data, len))
		e = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory buffering",
			     path);
	tfs__s3_pending_put(s, p);
	tfs_free(key);
	return e;
}

static enum tfs_err s3_append(struct tfs_vfs *vfs, const char *path,
			      const void *data, size_t len, struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *key = tfs__s3_object_key(tfs__s3_of(vfs), path);
	struct pending *p;
	bool created;
	enum tfs_err e = TFS_E_OK;

	tfs__s3_scache_clear(tfs__s3_of(vfs));
	if (!key)
		return tfs__s3_bad_path(tfs__s3_of(vfs), path, d);
	if (!*key) {
		tfs_free(key);
		return tfs_fail(d, TFS_E_INVALID, "'%s': not a file name", path);
	}
	p = tfs__s3_pending_get(s, key, true, &created);
	if (!p) {
		tfs_free(key);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	if (created) {
		/* Appending to a stored object: start from its bytes. */
		struct tfs_stat st;
		bool found;
		struct tfs_diag ld;

		tfs_diag_init(&ld);
		if ((e = parent_check(s, key, path, d))) {
			/* d has it */
		} else if ((e = tfs__s3_head(s, key, &found, &st, &ld))) {
			e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
		} else if (found && st.size > APPEND_FETCH_MAX) {
			e = tfs_fail(d, TFS_E_TOO_BIG,
				     "'%s': cannot append to an object of %" PRIu64
				     " bytes", path, st.size);
		} else if (found && st.size) {
			if ((e = tfs_buf_setlen(&p->buf, (size_t)st.size)))
				e = tfs_fail(d, e, "out of memory");
			else
				e = tfs__s3_get_range(s, key, 0, p->buf.data,
						      (size_t)st.size, d);
		}
		if (e)
			p->failed = true;
	}
	if (!e && p->failed)
		e = tfs_fail(d, TFS_E_IO, "'%s': an earlier write of it failed",
			     path);
	if (!e && len && tfs_buf_append(&p->buf, data, len))
		e = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory buffering",
			     path);
	if (!e) {
		p->mtime_ns = now_ns();
		if ((e = tfs__s3_flush_parts(s, p, d)))
			p->failed = true;
	}
	tfs__s3_pending_put(s, p);
	tfs_free(key);
	return e;
}

static enum tfs_err s3_fsync(struct tfs_vfs *vfs, const char *path,
			     struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *key = tfs__s3_object_key(tfs__s3_of(vfs), path);
	struct pending *p;
	enum tfs_err e = TFS_E_OK;

	tfs__s3_scache_clear(tfs__s3_of(vfs));
	if (!key)
		return tfs__s3_bad_path(tfs__s3_of(vfs), path, d);
	p = tfs__s3_pending_get(s, key, false, NULL);
	if (p) {
		e = tfs__s3_upload(s, p, d);
		if (e) {
			tfs__s3_mp_abort(s, p);
			p->failed = true;
		}
		/* Sent or failed for good: either way no longer ours. */
		tfs__s3_pending_unlink(s, p);
		tfs__s3_pending_put(s, p);
	}
	else if (*key && !tfs__s3_dir_made(s, key)) {
		/* Folders and stored objects are durable already; but a path
		 * that is neither is an error, as on POSIX. */
		struct tfs_stat st;

		e = tfs__s3_stat(vfs, path, &st, d);
		if (!e && !st.exists)
			e = tfs_fail(d, TFS_E_NOT_FOUND,
				     "'%s': cannot fsync: no such file", path);
	}
	tfs_free(key);
	return e;
}

static enum tfs_err s3_mkdir(struct tfs_vfs *vfs, const char *path,
			     struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *key = tfs__s3_object_key(tfs__s3_of(vfs), path);
	enum tfs_err e = TFS_E_OK;

	tfs__s3_scache_clear(tfs__s3_of(vfs));
	if (!key)
		return tfs__s3_bad_path(tfs__s3_of(vfs), path, d);
	if (!*key || tfs__s3_dir_made(s, key)) {
		tfs_free(key);
		return TFS_E_OK;
	}
	/* No parent check: folders are only names here, and a prefix with
	 * nothing below it (a new bucket prefix) must be usable. */
	{
		struct tfs_stat st;
		struct tfs_diag ld;
		bool found;

		tfs_diag_init(&ld);
		e = tfs__s3_head(s, key, &found, &st, &ld);
		if (!e && !found) {
			struct pending *p = tfs__s3_pending_get(s, key, false, NULL);

			found = p != NULL;
			if (p)
				tfs__s3_pending_put(s, p);
		}
		if (e || found) {
			tfs_free(key);
			if (e)
				return tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
			return tfs_fail(d, TFS_E_EXISTS,
					"'%s': cannot create folder: a file has that name",
					path);
		}
	}
	pthread_mutex_lock(&s->lock);
	if (!tfs__s3_dirs_has_locked(s, key, NULL))
		e = tfs__s3_dirs_add_locked(s, &key);
	pthread_mutex_unlock(&s->lock);
	tfs_free(key);
	if (e)
		return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}

static enum tfs_err delete_key(struct s3 *s, const char *key,
			       struct tfs_diag *d)
{
	struct req r;
	enum tfs_err e;

	tfs__s3_icache_drop(s, key);
	tfs__s3_req_init(&r, "DELETE", key);
	e = tfs__s3_perform(s, &r, d);
	tfs__s3_req_release(&r);
	return e;
}

static enum tfs_err copy_key(struct s3 *s, const char *from, const char *to,
			     struct tfs_diag *d)
{
	char *src = tfs__s3_encode(from, true);
	char *eb = tfs__s3_encode(s->bucket, false);
	char *hdr = NULL;
	struct tfs_buf body;
	struct req r;
	enum tfs_err e;

	if (src && eb) {
		size_t n = strlen(src) + strlen(eb) + 32;

		hdr = tfs_malloc(n);
		if (hdr)
			snprintf(hdr, n, "x-amz-copy-source: /%s/%s", eb, src);
	}
	tfs_free(src);
	tfs_free(eb);
	if (!hdr)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	tfs__s3_icache_drop(s, to);
	tfs_buf_init(&body, ERR_BODY_MAX);
	tfs__s3_req_init(&r, "PUT", to);
	r.hdr[0] = hdr;
	r.out = &body;
	e = tfs__s3_perform(s, &r, d);
	if (!e)
		e = tfs__s3_error_in_ok_body(s, &body, "copy of", from, d);
	tfs__s3_req_release(&r);
	tfs_buf_release(&body);
	tfs_free(hdr);
	return e;
}

static char *replace_prefix(const char *key, size_t old_len, const char *to)
{
	size_t n = strlen(to) + strlen(key + old_len) + 1;
	char *r = tfs_malloc(n);

	if (r)
		snprintf(r, n, "%s%s", to, key + old_len);
	return r;
}

/* Gives the unsent files below folder key `from` their names below `to`. */
static enum tfs_err rename_pending_below(struct s3 *s, const char *from,
					 const char *to, bool *moved,
					 struct tfs_diag *d)
{
	size_t fl = strlen(from), n = 0;
	char **keys = NULL;
	enum tfs_err e = TFS_E_OK;

	pthread_mutex_lock(&s->lock);
	for (struct pending *p = s->pending; p; p = p->next)
		if (!p->unlinked && !strncmp(p->key, from, fl) &&
		    p->key[fl] == '/')
			n++;
	keys = n ? tfs_callocn(n, sizeof(*keys)) : NULL;
	if (keys) {
		size_t i = 0;

		for (struct pending *p = s->pending; p && i < n; p = p->next)
			if (!p->unlinked && !strncmp(p->key, from, fl) &&
			    p->key[fl] == '/')
				keys[i++] = tfs_strdup(p->key);
	}
	pthread_mutex_unlock(&s->lock);
	if (n && !keys)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct pending *p;
		char *nk;

		if (!keys[i] || e)
			continue;
		p = tfs__s3_pending_get(s, keys[i], false, NULL);
		if (!p)
			continue;
		nk = replace_prefix(p->key, fl, to);
		if (!nk)
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		else if (p->upload_id)
			e = tfs_fail(d, TFS_E_BUSY,
				     "s3: '%s': cannot rename while being uploaded",
				     p->key);
		if (!e) {
			pthread_mutex_lock(&s->lock);
			tfs_free(p->key);
			p->key = nk;
			nk = NULL;
			pthread_mutex_unlock(&s->lock);
			*moved = true;
		}
		tfs_free(nk);
		tfs__s3_pending_put(s, p);
	}
	for (size_t i = 0; i < n; i++)
		tfs_free(keys[i]);
	tfs_free(keys);
	return e;
}

/* Rename of a file not sent yet: it simply gets the new name (replacing an
 * unsent file of that name). Takes the key *kt on success. Drops the
 * reference on p. */
static enum tfs_err rename_unsent(struct s3 *s, struct pending *p, char **kt,
				  const char *from, struct tfs_diag *d)
{
	struct pending *old;

	if (p->upload_id) {
		tfs__s3_pending_put(s, p);
		return tfs_fail(d, TFS_E_BUSY,
				"'%s': cannot rename while being uploaded", from);
	}
	pthread_mutex_lock(&s->lock);
	old = tfs__s3_pending_find_locked(s, *kt);
	if (old && old != p) {
		struct pending **pp = &s->pending;

		while (*pp && *pp != old)
			pp = &(*pp)->next;
		if (*pp)
			*pp = old->next;
		old->unlinked = true;
		if (old->refs == 0) {
			pthread_mutex_unlock(&s->lock);
			tfs__s3_pending_free(old);
			pthread_mutex_lock(&s->lock);
		}
	}
	tfs_free(p->key);
	p->key = *kt;
	*kt = NULL;
	pthread_mutex_unlock(&s->lock);
	tfs__s3_pending_put(s, p);
	return TFS_E_OK;
}

/* Moves every listed key from prefix length plen to prefix pt. */
static enum tfs_err rename_listed(struct s3 *s,
				  const struct tfs__s3_listing *ls, size_t plen,
				  const char *pt, struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < ls->nobjects; i++) {
		char *nk = replace_prefix(ls->objects[i].key, plen, pt);

		if (!nk)
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		else if (!(e = copy_key(s, ls->objects[i].key, nk, d)))
			e = delete_key(s, ls->objects[i].key, d);
		tfs_free(nk);
	}
	return e;
}

/* Renames the made (empty) folders at or below kf; true if any moved. */
static bool rename_made_dirs(struct s3 *s, const char *kf, const char *kt)
{
	size_t kl = strlen(kf);
	bool moved = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->ndirs; i++) {
		char *k = s->dirs[i];

		if (!strcmp(k, kf) || (!strncmp(k, kf, kl) && k[kl] == '/')) {
			char *nk = replace_prefix(k, kl, kt);

			if (nk) {
				tfs_free(k);
				s->dirs[i] = nk;
				moved = true;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	return moved;
}

/* A folder: every key below it, then the unsent files and made folders. */
static enum tfs_err rename_folder(struct s3 *s, const char *kf, const char *kt,
				  const char *from, const char *to,
				  struct tfs_diag *d)
{
	struct tfs__s3_listing ls;
	bool pending_moved = false;
	char *pf = tfs__s3_dir_prefix(kf), *pt = tfs__s3_dir_prefix(kt);
	enum tfs_err e;

	tfs__s3_listing_init(&ls);
	if (!pf || !pt)
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	else
		e = tfs__s3_list_prefix(s, pf, false, 0, &ls, d);
	if (!e)
		e = rename_listed(s, &ls, pf ? strlen(pf) : 0, pt, d);
	if (!e)
		e = rename_pending_below(s, kf, kt, &pending_moved, d);
	if (!e) {
		bool moved = ls.nobjects > 0 || pending_moved;

		moved |= rename_made_dirs(s, kf, kt);
		if (!moved)
			e = tfs_fail(d, TFS_E_NOT_FOUND,
				     "'%s': cannot rename to '%s': no such file or folder",
				     from, to);
	}
	tfs__s3_listing_release(&ls);
	tfs_free(pf);
	tfs_free(pt);
	return e;
}

static enum tfs_err s3_rename(struct tfs_vfs *vfs, const char *from,
			      const char *to, struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *kf = tfs__s3_object_key(s, from), *kt = tfs__s3_object_key(s, to);
	struct pending *p;
	struct tfs_stat st;
	bool found;
	enum tfs_err e = TFS_E_OK;
	struct tfs_diag ld;

	tfs__s3_scache_clear(tfs__s3_of(vfs));
	if (!kf || !kt) {
		e = tfs__s3_bad_path(s, kf ? to : from, d);
		goto out_free;
	}
	if (!*kf || !*kt) {
		e = tfs_fail(d, TFS_E_INVALID, "'%s': cannot rename the bucket",
			     from);
		goto out_free;
	}
	if ((p = tfs__s3_pending_get(s, kf, false, NULL))) {
		e = rename_unsent(s, p, &kt, from, d);
		goto out_free;
	}
	tfs_diag_init(&ld);
	if ((e = tfs__s3_head(s, kf, &found, &st, &ld))) {
		e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
		goto out_free;
	}
	if (found) {
		if (!(e = copy_key(s, kf, kt, d)))
			e = delete_key(s, kf, d);
		if (!e)
			parent_remember(s, kf);
	} else {
		e = rename_folder(s, kf, kt, from, to, d);
	}
out_free:
	tfs_free(kf);
	tfs_free(kt);
	return e;
}

/* Remembers key as a folder this process knows (made, or emptied by
 * removing its last object: on POSIX the folder would still be there). */
static void dir_remember(struct s3 *s, const char *key)
{
	char *k;

	if (!*key || tfs__s3_dir_made(s, key) || !(k = tfs_strdup(key)))
		return;
	pthread_mutex_lock(&s->lock);
	/* Out of memory: the folder is only forgotten, as if never made. */
	if (!tfs__s3_dirs_has_locked(s, k, NULL))
		(void)tfs__s3_dirs_add_locked(s, &k);
	pthread_mutex_unlock(&s->lock);
	tfs_free(k);
}

/* The parent folder of key stays (as on POSIX) after key goes. */
static void parent_remember(struct s3 *s, const char *key)
{
	const char *sl = strrchr(key, '/');
	char *parent;

	if (!sl)
		return;
	parent = tfs_strndup(key, (size_t)(sl - key));
	if (parent)
		dir_remember(s, parent);
	tfs_free(parent);
}

static enum tfs_err s3_remove(struct tfs_vfs *vfs, const char *path,
			      struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	char *key = tfs__s3_object_key(tfs__s3_of(vfs), path), *pre = NULL;
	struct pending *p;
	struct tfs_stat st;
	struct tfs_diag ld;
	bool found, used, made = false;
	enum tfs_err e = TFS_E_OK;

	tfs__s3_scache_clear(tfs__s3_of(vfs));
	if (!key)
		return tfs__s3_bad_path(tfs__s3_of(vfs), path, d);
	if (!*key) {
		e = tfs_fail(d, TFS_E_INVALID, "'%s': cannot remove the bucket",
			     path);
		goto out_free;
	}
	if ((p = tfs__s3_pending_get(s, key, false, NULL))) {
		tfs__s3_mp_abort(s, p);
		tfs__s3_pending_unlink(s, p);
		tfs__s3_pending_put(s, p);
		goto out_free;
	}
	tfs_diag_init(&ld);
	if ((e = tfs__s3_head(s, key, &found, &st, &ld))) {
		e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
		goto out_free;
	}
	if (found) {
		e = delete_key(s, key, d);
		if (!e)
			parent_remember(s, key);
		goto out_free;
	}
	pre = tfs__s3_dir_prefix(key);
	if (!pre) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free;
	}
	if ((e = tfs__s3_prefix_used(s, pre, &used, d)))
		goto out_free;
	if (used || tfs__s3_local_below(s, key)) {
		e = tfs_fail(d, TFS_E_EXISTS, "'%s': cannot remove: folder not empty",
			     path);
		goto out_free;
	}
	pthread_mutex_lock(&s->lock);
	{
		size_t at;

		if (tfs__s3_dirs_has_locked(s, key, &at)) {
			tfs_free(s->dirs[at]);
			s->dirs[at] = s->dirs[--s->ndirs];
			made = true;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (!made)
		e = tfs_fail(d, TFS_E_NOT_FOUND, "'%s': cannot remove: no such file",
			     path);
out_free:
	tfs_free(pre);
	tfs_free(key);
	return e;
}

static void s3_destroy(struct tfs_vfs *vfs)
{
	struct s3 *s = tfs__s3_of(vfs);
	struct pending *p, *n;

	for (p = s->pending; p; p = n) {
		n = p->next;
		/* Never made durable: drop it, and its parts on the server. */
		tfs__s3_mp_abort(s, p);
		tfs__s3_pending_free(p);
	}
	for (unsigned i = 0; i < s->nidle; i++)
		curl_easy_cleanup(s->idle[i]);
	for (size_t i = 0; i < s->icache_num; i++)
		tfs__s3_icache_entry_free(&s->icache[i]);
	tfs__s3_scache_clear(s);
	tfs_free(s->icache);
	for (size_t i = 0; i < s->ndirs; i++)
		tfs_free(s->dirs[i]);
	tfs_free(s->dirs);
	tfs_s3_config_release(&s->cfg);
	tfs_free(s->bucket);
	tfs_free(s->bucket_url);
	tfs_free(s->sigv4);
	if (s->token_hdr) {
		memset(s->token_hdr, 0, strlen(s->token_hdr));
		tfs_free(s->token_hdr);
	}
	pthread_mutex_destroy(&s->lock);
	tfs_free(s);
}

/* A bucket has no size: plenty of room, as S3 tools say. */
static enum tfs_err s3_space(struct tfs_vfs *vfs, const char *path,
			     struct tfs_space *out, struct tfs_diag *d)
{
	(void)vfs;
	(void)path;
	(void)d;
	tfs_vfs_unbounded_space(out);
	out->name_max = 1024; /* S3's longest key */
	return TFS_E_OK;
}

static const struct tfs_vfs_ops s3_ops = {
	.stat = tfs__s3_stat,
	.lstat = tfs__s3_stat, /* no links */
	.read = tfs__s3_read,
	.list = tfs__s3_list,
	.write = s3_write,
	.append = s3_append,
	.fsync = s3_fsync,
	.mkdir = s3_mkdir,
	.rename = s3_rename,
	.remove = s3_remove,
	.space = s3_space,
	.destroy = s3_destroy,
};

/* ---- Construction ------------------------------------------------------ */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s, bool *ok)
{
	char *r;

	if (!s)
		return NULL;
	r = tfs_strdup(s);
	if (!r)
		*ok = false;
	return r;
}

enum tfs_err tfs_vfs_s3_new(const struct tfs_s3_config *c, const char *bucket,
			    struct tfs_vfs **out, struct tfs_diag *d)
{
	struct s3 *s;
	bool ok = true;
	size_t n;

	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK)
		return tfs_fail(d, TFS_E_IO, "s3: cannot initialise libcurl");
	if (!c->endpoint || !bucket || !*bucket)
		return tfs_fail(d, TFS_E_INVALID, "s3: no endpoint or bucket");
	s = tfs_malloc(sizeof(*s));
	if (!s)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	memset(s, 0, sizeof(*s));
	s->base.ops = &s3_ops;
	pthread_mutex_init(&s->lock, NULL);
	s->cfg = *c;
	s->cfg.endpoint = dup_or_null(c->endpoint, &ok);
	s->cfg.region = dup_or_null(c->region ? c->region : "us-east-1", &ok);
	s->cfg.access_key = dup_or_null(c->access_key, &ok);
	s->cfg.secret_key = dup_or_null(c->secret_key, &ok);
	s->cfg.session_token = dup_or_null(c->session_token, &ok);
	s->bucket = dup_or_null(bucket, &ok);
	n = strlen(c->endpoint) + strlen(bucket) + 8;
	s->bucket_url = tfs_malloc(n);
	if (s->bucket_url) {
		if (c->path_style) {
			snprintf(s->bucket_url, n, "%s/%s", c->endpoint, bucket);
		} else {
			/* scheme://bucket.host[:port] */
			const char *host = strstr(c->endpoint, "://");
			size_t sl = host ? (size_t)(host - c->endpoint) + 3 : 0;

			snprintf(s->bucket_url, n, "%.*s%s.%s", (int)sl,
				 c->endpoint, bucket, c->endpoint + sl);
		}
	} else {
		ok = false;
	}
	if (c->access_key && c->secret_key) {
		n = strlen(s->cfg.region ? s->cfg.region : "") + 16;
		s->sigv4 = tfs_malloc(n);
		if (s->sigv4)
			snprintf(s->sigv4, n, "aws:amz:%s:s3",
				 s->cfg.region ? s->cfg.region : "");
		else
			ok = false;
	}
	if (c->session_token) {
		n = strlen(c->session_token) + 32;
		s->token_hdr = tfs_malloc(n);
		if (s->token_hdr)
			snprintf(s->token_hdr, n, "x-amz-security-token: %s",
				 c->session_token);
		else
			ok = false;
	}
	s->rng = (uint64_t)now_ns() ^ (uint64_t)(uintptr_t)s;
	{
		const char *t = getenv("TFS_S3_TRACE");

		s->trace = t && *t && strcmp(t, "0");
	}
	if (!ok) {
		s3_destroy(&s->base);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	*out = &s->base;
	return TFS_E_OK;
}

enum tfs_err tfs_vfs_s3_check(struct tfs_vfs *vfs, struct tfs_diag *d)
{
	struct s3 *s = tfs__s3_of(vfs);
	struct req r;
	struct tfs_buf body;
	enum tfs_err e;
	struct tfs_diag ld;

	if (vfs->ops != &s3_ops)
		return TFS_E_OK;
	tfs_buf_init(&body, XML_BODY_MAX);
	tfs__s3_req_init(&r, "GET", NULL);
	r.query = "list-type=2&max-keys=1&prefix=";
	r.out = &body;
	tfs_diag_init(&ld);
	e = tfs__s3_perform(s, &r, &ld);
	if (e && r.cc == CURLE_OK && r.status == 404)
		e = tfs_fail(d, TFS_E_NOT_FOUND, "s3: bucket '%s' at %s: no such bucket",
			     s->bucket, s->cfg.endpoint);
	else if (e && r.cc == CURLE_OK && (r.status == 403 || r.status == 401))
		e = tfs_fail(d, TFS_E_PERM,
			     "s3: bucket '%s' at %s: access denied (%s): check the credentials",
			     s->bucket, s->cfg.endpoint,
			     r.s3_code[0] ? r.s3_code : "HTTP 403");
	else if (e && r.cc != CURLE_OK)
		e = tfs_fail(d, TFS_E_IO, "s3: endpoint %s unreachable: %s",
			     s->cfg.endpoint, curl_easy_strerror(r.cc));
	else if (e)
		e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
	tfs__s3_req_release(&r);
	tfs_buf_release(&body);
	return e;
}

enum tfs_err tfs_vfs_s3_open_uri(const char *uri, const struct tfs_s3_opts *o,
				 struct tfs_vfs **vfs, char **path,
				 struct tfs_diag *d)
{
	struct tfs_s3_config c;
	char *bucket = NULL, *p = NULL;
	enum tfs_err e;

	*vfs = NULL;
	*path = NULL;
	if ((e = tfs_s3_uri_parse(uri, &bucket, &p, d)))
		return e;
	e = tfs_s3_config_load(&c, o, d);
	if (!e)
		e = tfs_vfs_s3_new(&c, bucket, vfs, d);
	tfs_s3_config_release(&c);
	if (!e && (e = tfs_vfs_s3_check(*vfs, d))) {
		tfs_vfs_free(*vfs);
		*vfs = NULL;
	}
	tfs_free(bucket);
	if (e) {
		tfs_free(p);
		return e;
	}
	*path = p;
	return TFS_E_OK;
}

void tfs_vfs_s3_counters(struct tfs_vfs *vfs, unsigned long *requests,
			 unsigned long *retries)
{
	*requests = *retries = 0;
	if (!vfs || vfs->ops != &s3_ops)
		return;
	*requests = __atomic_load_n(&tfs__s3_of(vfs)->requests, __ATOMIC_RELAXED);
	*retries = __atomic_load_n(&tfs__s3_of(vfs)->retries, __ATOMIC_RELAXED);
}
