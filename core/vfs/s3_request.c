/* Requests to S3: signing headers, the pool of easy handles, one request
 * with its retries, and listings (vfs_s3.c has the design). */
#include "s3_backend.h"

#include <openssl/evp.h>

/* ---- Requests ---------------------------------------------------------- */


void tfs__s3_req_init(struct req *r, const char *method, const char *key)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->key = key;
	tfs_buf_init(&r->err, ERR_BODY_MAX);
}

void tfs__s3_req_release(struct req *r)
{
	tfs_buf_release(&r->err);
}

static CURL *handle_get(struct s3 *s)
{
	CURL *h = NULL;

	pthread_mutex_lock(&s->lock);
	if (s->nidle)
		h = s->idle[--s->nidle];
	pthread_mutex_unlock(&s->lock);
	if (h) {
		curl_easy_reset(h);
		return h;
	}
	return curl_easy_init();
}

static void handle_put(struct s3 *s, CURL *h)
{
	pthread_mutex_lock(&s->lock);
	if (s->nidle < IDLE_MAX) {
		s->idle[s->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (h)
		curl_easy_cleanup(h);
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct req *r = ud;
	size_t len = size * n;

	if (r->status == 0 || r->status >= 300) {
		/* An error body: keep its start for the message. */
		size_t room = r->err.max - r->err.len;

		if (tfs_buf_append(&r->err, data, len < room ? len : room))
			return 0;
		return len;
	}
	if (r->ranged) {
		if (r->got + len > r->len) {
			r->overflow = true;
			return 0; /* abort: more bytes than asked for */
		}
		memcpy(r->dst + r->got, data, len);
		r->got += len;
		return len;
	}
	if (r->out) {
		if (tfs_buf_append(r->out, data, len)) {
			r->overflow = true;
			return 0;
		}
	}
	r->got += len;
	return len;
}

/* Case-insensitive "Name:" prefix; returns the trimmed value. */
static bool header_value(const char *line, size_t len, const char *name,
			 char *out, size_t cap)
{
	size_t nl = strlen(name);
	size_t i = nl + 1, j;

	if (len <= nl || line[nl] != ':' || strncasecmp(line, name, nl))
		return false;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	j = len;
	while (j > i && (line[j - 1] == '\r' || line[j - 1] == '\n' ||
			 line[j - 1] == ' '))
		j--;
	if (j - i >= cap)
		j = i + cap - 1;
	memcpy(out, line + i, j - i);
	out[j - i] = '\0';
	return true;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
	struct req *r = ud;
	size_t len = size * n;

	if (len >= 5 && !strncmp(data, "HTTP/", 5)) {
		/* A new response (after a 100 Continue, say): forget the
		 * previous one's headers. */
		long st = 0;
		const char *sp = memchr(data, ' ', len);

		if (sp && (size_t)(sp - data) + 4 <= len)
			st = strtol(sp + 1, NULL, 10);
		r->status = st;
		r->etag[0] = '\0';
		r->have_range = false;
		return len;
	}
	if (header_value(data, len, "ETag", r->etag, sizeof(r->etag)))
		return len;
	if (header_value(data, len, "Content-Range", r->content_range,
			 sizeof(r->content_range)))
		r->have_range = true;
	return len;
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[32];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen != 32) {
		memset(out, 0, 65);
		return;
	}
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

void tfs__s3_md5_hex(const void *data, size_t len, char out[33])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[16];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL) || mdlen != 16) {
		memset(out, 0, 33);
		return;
	}
	for (unsigned i = 0; i < 16; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[32] = '\0';
}

static uint32_t next_rand(struct s3 *s)
{
	uint64_t z = __atomic_add_fetch(&s->rng, 0x9e3779b97f4a7c15ULL,
					__ATOMIC_RELAXED);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* "bucket_url/encoded-key?query" */
static char *make_url(struct s3 *s, const char *key, const char *query)
{
	char *ek = tfs__s3_encode(key ? key : "", true);
	size_t n;
	char *url;

	if (!ek)
		return NULL;
	n = strlen(s->bucket_url) + strlen(ek) + (query ? strlen(query) : 0) + 4;
	url = tfs_malloc(n);
	if (url)
		snprintf(url, n, "%s/%s%s%s", s->bucket_url, ek,
			 query && *query ? "?" : "", query ? query : "");
	tfs_free(ek);
	return url;
}

/* One attempt: fills r's results. */
/* Clears what the previous attempt left in r. */
static void req_reset(struct req *r)
{
	r->status = 0;
	r->got = 0;
	r->overflow = false;
	r->err.len = 0;
	r->etag[0] = '\0';
	r->have_range = false;
	r->length = -1;
	r->mtime_ns = 0;
	if (r->out)
		r->out->len = 0;
}

/* Appends one header line; on failure the list stays as it was. */
static bool header_add(struct curl_slist **hl, const char *line)
{
	struct curl_slist *t = curl_slist_append(*hl, line);

	if (!t)
		return false;
	*hl = t;
	return true;
}

/* The request's headers, or NULL when out of memory. */
static struct curl_slist *req_headers(const struct s3 *s, const struct req *r,
				      const char *sha)
{
	struct curl_slist *hl = NULL;
	char line[300];
	bool ok = true;

	snprintf(line, sizeof(line), "x-amz-content-sha256: %s", sha);
	ok &= header_add(&hl, line);
	if (r->body_len || !strcmp(r->method, "PUT") ||
	    !strcmp(r->method, "POST"))
		ok &= header_add(&hl, "Content-Type: application/octet-stream");
	if (s->token_hdr)
		ok &= header_add(&hl, s->token_hdr);
	if (r->ranged) {
		snprintf(line, sizeof(line), "Range: bytes=%" PRIu64 "-%" PRIu64,
			 r->off, r->off + r->len - 1);
		ok &= header_add(&hl, line);
	}
	for (unsigned i = 0; i < 4 && r->hdr[i]; i++)
		ok &= header_add(&hl, r->hdr[i]);
	if (!ok) {
		curl_slist_free_all(hl);
		return NULL;
	}
	return hl;
}

static void set_transfer_options(const struct s3 *s, CURL *h, const char *url,
				 struct req *r, struct curl_slist *hl)
{
	uint64_t moved = r->body_len + (r->ranged ? r->len : 0);
	long timeout = (long)(s->cfg.timeout_ms + moved / 1024);

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)s->cfg.connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_FILETIME, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	/* No header can turn "Expect: 100-continue" off here: libcurl 7.88
	 * would sign the removal as an empty header it never sends. A
	 * short wait keeps large uploads from stalling on it. */
	curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 200L);
	if (!s->cfg.verify_tls) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (s->sigv4) {
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
		curl_easy_setopt(h, CURLOPT_USERNAME, s->cfg.access_key);
		curl_easy_setopt(h, CURLOPT_PASSWORD, s->cfg.secret_key);
	}
}

static void set_method(CURL *h, const struct req *r)
{
	if (!strcmp(r->method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(r->method, "PUT") || !strcmp(r->method, "POST")) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)r->body_len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS,
				 r->body_len ? r->body : "");
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	} else if (strcmp(r->method, "GET")) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	}
}

static void trace_request(CURL *h, const struct req *r, CURLcode cc)
{
	double secs = 0;

	curl_easy_getinfo(h, CURLINFO_TOTAL_TIME, &secs);
	tfs_log(TFS_LOG_WARN, "s3: %s %s%s%s -> %ld %s (%.1f ms)", r->method,
		r->key ? r->key : "", r->query ? "?" : "",
		r->query ? r->query : "", r->status,
		cc ? curl_easy_strerror(cc) : "", secs * 1000);
}

/* Status, length and modification time of the answer. */
static void read_response_info(CURL *h, struct req *r)
{
	long st = 0;
	curl_off_t len = -1, ft = -1;

	if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st) == CURLE_OK && st)
		r->status = st;
	if (curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len) ==
	    CURLE_OK)
		r->length = len;
	if (curl_easy_getinfo(h, CURLINFO_FILETIME_T, &ft) == CURLE_OK &&
	    ft >= 0)
		r->mtime_ns = (int64_t)ft * 1000000000;
}

static CURLcode perform_once(struct s3 *s, CURL *h, const char *url,
			     struct req *r, const char *sha)
{
	struct curl_slist *hl;
	CURLcode cc;

	req_reset(r);
	hl = req_headers(s, r, sha);
	if (!hl)
		return CURLE_OUT_OF_MEMORY;
	set_transfer_options(s, h, url, r, hl);
	set_method(h, r);
	__atomic_add_fetch(&s->requests, 1, __ATOMIC_RELAXED);
	cc = curl_easy_perform(h);
	if (s->trace)
		trace_request(h, r, cc);
	read_response_info(h, r);
	curl_slist_free_all(hl);
	return cc;
}

/* Whether the answer to a ranged GET says the object ends before the
 * range does (a short file, not a fault worth retrying). */
static bool range_past_end(const struct req *r)
{
	unsigned long long a, b, total;

	if (r->status == 200 && r->length >= 0 && !r->overflow)
		return (uint64_t)r->length < r->off + r->len &&
		       r->got == (size_t)r->length;
	if (r->status != 206 || !r->have_range ||
	    sscanf(r->content_range, "bytes %llu-%llu/%llu", &a, &b, &total) != 3)
		return false;
	return a == r->off && b + 1 == total && total < r->off + r->len &&
	       r->got == b - a + 1;
}

/* Whether a ranged GET brought exactly the bytes asked for. */
static bool range_ok(const struct req *r)
{
	unsigned long long a, b;
	char total[32];

	if (r->got != r->len || r->overflow)
		return false;
	if (r->status == 200)
		/* The whole object: only right when it is exactly the range. */
		return r->off == 0 && r->length == (curl_off_t)r->len;
	if (r->status != 206 || !r->have_range)
		return false;
	if (sscanf(r->content_range, "bytes %llu-%llu/%31s", &a, &b, total) != 3)
		return false;
	return a == r->off && b == r->off + r->len - 1;
}

static enum tfs_err status_code(long status)
{
	switch (status) {
	case 404:
		return TFS_E_NOT_FOUND;
	case 401:
	case 403:
		return TFS_E_PERM;
	case 409:
	case 412:
		return TFS_E_EXISTS;
	case 416:
		return TFS_E_CORRUPT;
	case 400:
		return TFS_E_INVALID;
	default:
		return TFS_E_IO;
	}
}

/* Sends r, retrying what is worth retrying. On failure d says what the
 * last attempt got; r->status and r->s3_code stay for the caller, which
 * may treat some statuses (404, 412) as answers. */
/* Judges one attempt: sets *e and returns true when no retry follows. */
static bool attempt_final(struct req *r, enum tfs_err *e)
{
	if (r->cc == CURLE_OUT_OF_MEMORY) {
		*e = TFS_E_NOMEM;
		return true;
	}
	if (r->cc == CURLE_WRITE_ERROR && r->overflow && !r->ranged) {
		/* A body larger than the caller allows. */
		*e = TFS_E_TOO_BIG;
		return true;
	}
	if (r->status >= 300 && r->err.len)
		tfs__s3_parse_error((const char *)r->err.data, r->err.len,
				    r->s3_code, sizeof(r->s3_code), r->s3_msg,
				    sizeof(r->s3_msg));
	if (r->cc == CURLE_OK && r->status >= 200 && r->status < 300) {
		if (!r->ranged || range_ok(r)) {
			*e = TFS_E_OK;
			return true;
		}
		if (range_past_end(r)) {
			*e = TFS_E_CORRUPT;
			return true;
		}
		/* A short or misplaced body: the same as a reset. */
		*e = TFS_E_IO;
		return false;
	}
	if (r->ranged && r->cc == CURLE_WRITE_ERROR && r->overflow) {
		*e = TFS_E_IO;
		return false; /* more bytes than asked: retry */
	}
	*e = r->cc != CURLE_OK ? TFS_E_IO : status_code(r->status);
	return !tfs__s3_retryable((int)r->cc, r->status, r->s3_code);
}

/* Runs the request, retrying with backoff while the failure allows it. */
static enum tfs_err perform_attempts(struct s3 *s, CURL *h, const char *url,
				     struct req *r, const char *sha)
{
	enum tfs_err e = TFS_E_IO;
	unsigned max = s->cfg.retries + 1;

	for (r->attempts = 0; r->attempts < max; r->attempts++) {
		if (r->attempts) {
			__atomic_add_fetch(&s->retries, 1, __ATOMIC_RELAXED);
			sleep_ms(tfs__s3_backoff_ms(r->attempts,
						    s->cfg.backoff_base_ms,
						    s->cfg.backoff_cap_ms,
						    next_rand(s)));
		}
		r->s3_code[0] = r->s3_msg[0] = '\0';
		r->cc = perform_once(s, h, url, r, sha);
		if (attempt_final(r, &e))
			break;
	}
	return e;
}

/* One diagnostic line for a request that failed with e. */
static enum tfs_err perform_fail(const struct s3 *s, const struct req *r,
				 enum tfs_err e, struct tfs_diag *d)
{
	if (e == TFS_E_NOMEM)
		return tfs_fail(d, e, "out of memory");
	if (e == TFS_E_TOO_BIG)
		return tfs_fail(d, e, "s3: %s '%s/%s': answer too large",
				r->method, s->bucket, r->key ? r->key : "");
	if (r->cc != CURLE_OK && !(r->cc == CURLE_WRITE_ERROR && r->ranged))
		return tfs_fail(d, e, "s3: %s '%s/%s': %s (after %u attempts)",
				r->method, s->bucket, r->key ? r->key : "",
				curl_easy_strerror(r->cc), r->attempts);
	if (e == TFS_E_CORRUPT && r->status < 300)
		return tfs_fail(d, e, "s3: GET '%s/%s': object ends before byte %" PRIu64,
				s->bucket, r->key ? r->key : "", r->off + r->len);
	if (r->status >= 200 && r->status < 300)
		return tfs_fail(d, TFS_E_IO,
				"s3: %s '%s/%s': wrong bytes for range %" PRIu64
				"-%" PRIu64 " (HTTP %ld, %zu bytes; after %u attempts)",
				r->method, s->bucket, r->key ? r->key : "",
				r->off, r->off + r->len - 1, r->status, r->got,
				r->attempts);
	return tfs_fail(d, e, "s3: %s '%s/%s': HTTP %ld%s%s%s%s",
			r->method, s->bucket, r->key ? r->key : "", r->status,
			r->s3_code[0] ? " " : "", r->s3_code,
			r->s3_msg[0] ? ": " : "", r->s3_msg);
}

enum tfs_err tfs__s3_perform(struct s3 *s, struct req *r, struct tfs_diag *d)
{
	char sha[65];
	char *url;
	CURL *h;
	enum tfs_err e;

	if (r->body_len)
		sha256_hex(r->body, r->body_len, sha);
	else
		memcpy(sha, EMPTY_SHA256, sizeof(sha));
	url = make_url(s, r->key, r->query);
	if (!url)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	h = handle_get(s);
	if (!h) {
		tfs_free(url);
		return tfs_fail(d, TFS_E_NOMEM, "s3: cannot make a request handle");
	}
	e = perform_attempts(s, h, url, r, sha);
	handle_put(s, h);
	tfs_free(url);
	return e == TFS_E_OK ? e : perform_fail(s, r, e, d);
}

/* CompleteMultipartUpload and CopyObject answer 200 and may still carry
 * an <Error> in the body: what failed, or TFS_E_OK. */
enum tfs_err tfs__s3_error_in_ok_body(const struct s3 *s,
				      const struct tfs_buf *body,
				      const char *what, const char *key,
				      struct tfs_diag *d)
{
	char code[64], msg[200];

	tfs__s3_parse_error((const char *)body->data, body->len, code,
			    sizeof(code), msg, sizeof(msg));
	if (!code[0])
		return TFS_E_OK;
	return tfs_fail(d, TFS_E_IO, "s3: %s '%s/%s': %s: %s", what,
			s->bucket, key, code, msg);
}

/* ---- Listing ----------------------------------------------------------- */

/* ListObjectsV2 of prefix (delimited by '/' when delim), every page, or
 * only the first when max_keys is not 0. */
enum tfs_err tfs__s3_list_prefix(struct s3 *s, const char *prefix, bool delim,
				 unsigned max_keys, struct tfs__s3_listing *l,
				 struct tfs_diag *d)
{
	struct tfs_buf body;
	enum tfs_err e = TFS_E_OK;
	char *token = NULL;
	char *ep = tfs__s3_encode(prefix, false);

	if (!ep)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	tfs_buf_init(&body, XML_BODY_MAX);
	for (unsigned page = 0;; page++) {
		struct req r;
		struct tfs_buf q;
		char *et = NULL;

		tfs_buf_init(&q, TFS_BUF_NO_MAX);
		if (token && !(et = tfs__s3_encode(token, false))) {
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			break;
		}
		/* Sorted by name: libcurl signs the query as written. */
		if ((et && tfs_buf_printf(&q, "continuation-token=%s&", et)) ||
		    (delim && tfs_buf_printf(&q, "delimiter=%%2F&")) ||
		    tfs_buf_printf(&q, "list-type=2&max-keys=%u&prefix=%s",
				   max_keys ? max_keys : 1000, ep)) {
			tfs_free(et);
			tfs_buf_release(&q);
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			break;
		}
		tfs_free(et);
		tfs__s3_req_init(&r, "GET", NULL);
		r.query = (const char *)q.data;
		r.out = &body;
		e = tfs__s3_perform(s, &r, d);
		tfs__s3_req_release(&r);
		tfs_buf_release(&q);
		if (e)
			break;
		if ((e = tfs__s3_parse_list(body.data ? (const char *)body.data : "",
					    body.len, l, d)))
			break;
		if (max_keys || !l->truncated || !l->next_token)
			break;
		tfs_free(token);
		token = tfs_strdup(l->next_token);
		if (!token) {
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			break;
		}
		if (page > 1000000) {
			e = tfs_fail(d, TFS_E_IO, "s3: listing of '%s' never ends",
				     prefix);
			break;
		}
	}
	tfs_free(token);
	tfs_free(ep);
	tfs_buf_release(&body);
	return e;
}
