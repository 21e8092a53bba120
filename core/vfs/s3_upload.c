/* Files being written to S3: their buffered bytes, simple and multipart
 * uploads (vfs_s3.c has the design). */
#include "s3_backend.h"

/* ---- Pending writes ---------------------------------------------------- */

struct pending *tfs__s3_pending_find_locked(struct s3 *s, const char *key)
{
	for (struct pending *p = s->pending; p; p = p->next)
		if (!p->unlinked && !strcmp(p->key, key))
			return p;
	return NULL;
}

void tfs__s3_pending_free(struct pending *p)
{
	for (unsigned i = 0; i < p->nparts; i++)
		tfs_free(p->etags[i]);
	tfs_free(p->etags);
	tfs_free(p->upload_id);
	tfs_buf_release(&p->buf);
	pthread_mutex_destroy(&p->lock);
	tfs_free(p->key);
	tfs_free(p);
}

/* The entry of key with a reference and its lock held; created empty when
 * create (else NULL when there is none). */
struct pending *tfs__s3_pending_get(struct s3 *s, const char *key, bool create,
				    bool *created)
{
	struct pending *p, *n = NULL;

	if (created)
		*created = false;
	if (create) {
		n = tfs_malloc(sizeof(*n));
		if (!n)
			return NULL;
		memset(n, 0, sizeof(*n));
		n->key = tfs_strdup(key);
		if (!n->key) {
			tfs_free(n);
			return NULL;
		}
		pthread_mutex_init(&n->lock, NULL);
		tfs_buf_init(&n->buf, TFS_BUF_NO_MAX);
	}
	pthread_mutex_lock(&s->lock);
	p = tfs__s3_pending_find_locked(s, key);
	if (!p && n) {
		p = n;
		n = NULL;
		p->next = s->pending;
		s->pending = p;
		if (created)
			*created = true;
	}
	if (p)
		p->refs++;
	pthread_mutex_unlock(&s->lock);
	if (n)
		tfs__s3_pending_free(n);
	if (p)
		pthread_mutex_lock(&p->lock);
	return p;
}

/* Takes p out of the list (the caller holds a reference). */
void tfs__s3_pending_unlink(struct s3 *s, struct pending *p)
{
	pthread_mutex_lock(&s->lock);
	if (!p->unlinked) {
		struct pending **pp = &s->pending;

		while (*pp && *pp != p)
			pp = &(*pp)->next;
		if (*pp)
			*pp = p->next;
		p->unlinked = true;
	}
	pthread_mutex_unlock(&s->lock);
}

void tfs__s3_pending_put(struct s3 *s, struct pending *p)
{
	bool last;

	pthread_mutex_unlock(&p->lock);
	pthread_mutex_lock(&s->lock);
	last = --p->refs == 0 && p->unlinked;
	pthread_mutex_unlock(&s->lock);
	if (last)
		tfs__s3_pending_free(p);
}

/* Whether the file name asks for a write-once upload: a commit. */
static bool is_commit_key(const char *key)
{
	const char *base = strrchr(key, '/');
	size_t n;

	base = base ? base + 1 : key;
	n = strlen(base);
	if (n > 3 && !strcmp(base + n - 3, ".ok"))
		return true;
	if (base != key) {
		size_t plen = (size_t)(base - key) - 1;
		const char *parent = key + plen;

		while (parent > key && parent[-1] != '/')
			parent--;
		if ((size_t)(key + plen - parent) == 9 &&
		    !strncmp(parent, "__commits", 9))
			return true;
	}
	return false;
}

static enum tfs_err put_object(struct s3 *s, const char *key, const void *data,
			       size_t len, bool once, struct tfs_diag *d)
{
	struct req r;
	struct tfs_diag ld;
	enum tfs_err e;

	tfs__s3_req_init(&r, "PUT", key);
	r.body = data;
	r.body_len = len;
	if (once)
		r.hdr[0] = "If-None-Match: *";
	tfs_diag_init(&ld);
	e = tfs__s3_perform(s, &r, &ld);
	if (e == TFS_E_EXISTS && once && r.attempts > 0) {
		/* The first attempt may have landed before its answer was
		 * lost: it is ours when the stored object has our MD5. */
		struct req h;
		char md5[33], want[40];

		tfs__s3_md5_hex(data, len, md5);
		snprintf(want, sizeof(want), "\"%s\"", md5);
		tfs__s3_req_init(&h, "HEAD", key);
		if (!tfs__s3_perform(s, &h, NULL) && (!strcmp(h.etag, want) ||
						      !strcmp(h.etag, md5)))
			e = TFS_E_OK;
		tfs__s3_req_release(&h);
	}
	if (e == TFS_E_EXISTS && once)
		e = tfs_fail(d, TFS_E_EXISTS,
			     "s3: '%s/%s': already exists (written elsewhere)",
			     s->bucket, key);
	else if (e)
		e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
	tfs__s3_req_release(&r);
	return e;
}

static enum tfs_err mp_start(struct s3 *s, struct pending *p,
			     struct tfs_diag *d)
{
	struct tfs_buf body;
	struct req r;
	enum tfs_err e;

	tfs_buf_init(&body, ERR_BODY_MAX);
	tfs__s3_req_init(&r, "POST", p->key);
	r.query = "uploads=";
	r.out = &body;
	e = tfs__s3_perform(s, &r, d);
	tfs__s3_req_release(&r);
	if (!e) {
		p->upload_id = tfs__s3_xml_text((const char *)body.data, body.len,
						"UploadId");
		if (!p->upload_id)
			e = tfs_fail(d, TFS_E_IO,
				     "s3: POST '%s/%s': no upload id in the answer",
				     s->bucket, p->key);
	}
	tfs_buf_release(&body);
	return e;
}

static enum tfs_err mp_part(struct s3 *s, struct pending *p,
			    const uint8_t *data, size_t len,
			    struct tfs_diag *d)
{
	char *eid = tfs__s3_encode(p->upload_id, false);
	char **ne;
	char *q;
	size_t qn;
	struct req r;
	enum tfs_err e;

	if (!eid)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	qn = strlen(eid) + 48;
	q = tfs_malloc(qn);
	ne = tfs_reallocn(p->etags, p->nparts + 1, sizeof(*ne));
	if (ne)
		p->etags = ne;
	if (!q || !ne) {
		tfs_free(q);
		tfs_free(eid);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	snprintf(q, qn, "partNumber=%u&uploadId=%s", p->nparts + 1, eid);
	tfs__s3_req_init(&r, "PUT", p->key);
	r.query = q;
	r.body = data;
	r.body_len = len;
	e = tfs__s3_perform(s, &r, d);
	if (!e) {
		p->etags[p->nparts] = tfs_strdup(r.etag);
		if (!p->etags[p->nparts])
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		else
			p->nparts++;
	}
	tfs__s3_req_release(&r);
	tfs_free(q);
	tfs_free(eid);
	return e;
}

static enum tfs_err mp_complete(struct s3 *s, struct pending *p,
				struct tfs_diag *d)
{
	struct tfs_buf x, body;
	char *eid = tfs__s3_encode(p->upload_id, false);
	char *q = NULL;
	struct req r;
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&x, TFS_BUF_NO_MAX);
	tfs_buf_init(&body, ERR_BODY_MAX);
	if (!eid || !(q = tfs_malloc(strlen(eid) + 16)) ||
	    tfs_buf_printf(&x, "<CompleteMultipartUpload>"))
		e = TFS_E_NOMEM;
	for (unsigned i = 0; !e && i < p->nparts; i++)
		if (tfs_buf_printf(&x,
				   "<Part><PartNumber>%u</PartNumber><ETag>%s</ETag></Part>",
				   i + 1, p->etags[i]))
			e = TFS_E_NOMEM;
	if (!e && tfs_buf_printf(&x, "</CompleteMultipartUpload>"))
		e = TFS_E_NOMEM;
	if (e) {
		tfs_free(eid);
		tfs_free(q);
		tfs_buf_release(&x);
		return tfs_fail(d, e, "out of memory");
	}
	snprintf(q, strlen(eid) + 16, "uploadId=%s", eid);
	tfs__s3_req_init(&r, "POST", p->key);
	r.query = q;
	r.body = x.data;
	r.body_len = x.len;
	r.out = &body;
	e = tfs__s3_perform(s, &r, d);
	if (!e)
		e = tfs__s3_error_in_ok_body(s, &body, "completing upload of", p->key,
					     d);
	tfs__s3_req_release(&r);
	tfs_buf_release(&x);
	tfs_buf_release(&body);
	tfs_free(eid);
	tfs_free(q);
	return e;
}

void tfs__s3_mp_abort(struct s3 *s, struct pending *p)
{
	char *eid, *q;
	struct req r;

	if (!p->upload_id)
		return;
	eid = tfs__s3_encode(p->upload_id, false);
	q = eid ? tfs_malloc(strlen(eid) + 16) : NULL;
	if (q) {
		snprintf(q, strlen(eid) + 16, "uploadId=%s", eid);
		tfs__s3_req_init(&r, "DELETE", p->key);
		r.query = q;
		(void)tfs__s3_perform(s, &r, NULL);
		tfs__s3_req_release(&r);
	}
	tfs_free(q);
	tfs_free(eid);
	tfs_free(p->upload_id);
	p->upload_id = NULL;
	for (unsigned i = 0; i < p->nparts; i++)
		tfs_free(p->etags[i]);
	p->nparts = 0;
	p->sent = 0;
}

/* Sends full parts while more than two parts' worth is buffered. */
enum tfs_err tfs__s3_flush_parts(struct s3 *s, struct pending *p,
				 struct tfs_diag *d)
{
	enum tfs_err e;
	size_t done = 0;

	if (p->buf.len < 2 * (size_t)TFS_S3_PART_SIZE || is_commit_key(p->key))
		return TFS_E_OK;
	if (!p->upload_id && (e = mp_start(s, p, d)))
		return e;
	while (p->buf.len - done >= 2 * (size_t)TFS_S3_PART_SIZE) {
		if ((e = mp_part(s, p, p->buf.data + done, TFS_S3_PART_SIZE, d)))
			return e;
		done += TFS_S3_PART_SIZE;
		p->sent += TFS_S3_PART_SIZE;
	}
	memmove(p->buf.data, p->buf.data + done, p->buf.len - done);
	p->buf.len -= done;
	return TFS_E_OK;
}

/* Uploads everything of p (the caller holds its lock). */
enum tfs_err tfs__s3_upload(struct s3 *s, struct pending *p, struct tfs_diag *d)
{
	enum tfs_err e;

	if (p->failed)
		return tfs_fail(d, TFS_E_IO,
				"s3: '%s/%s': an earlier upload of it failed",
				s->bucket, p->key);
	tfs__s3_icache_drop(s, p->key);
	if (!p->upload_id && p->buf.len > (size_t)TFS_S3_PART_SIZE &&
	    !is_commit_key(p->key)) {
		if ((e = mp_start(s, p, d)))
			return e;
	}
	if (!p->upload_id)
		return put_object(s, p->key, p->buf.data, p->buf.len,
				  is_commit_key(p->key), d);
	while (p->buf.len) {
		size_t n = p->buf.len;

		/* Parts of PART_SIZE, the last one taking the rest. */
		if (n >= 2 * (size_t)TFS_S3_PART_SIZE)
			n = TFS_S3_PART_SIZE;
		if ((e = mp_part(s, p, p->buf.data, n, d)))
			return e;
		memmove(p->buf.data, p->buf.data + n, p->buf.len - n);
		p->buf.len -= n;
		p->sent += n;
	}
	return mp_complete(s, p, d);
}
