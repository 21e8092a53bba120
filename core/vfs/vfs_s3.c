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
#include "tfs_s3.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "s3_internal.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"

#define IDLE_MAX 32
#define ERR_BODY_MAX (64u << 10)
#define XML_BODY_MAX (64u << 20)
#define APPEND_FETCH_MAX (256u << 20)
/* Reads above this are split into ranges of this size, fetched at once. */
#define READ_SPLIT (8u << 20)
#define READ_PARALLEL 4

static const char EMPTY_SHA256[] =
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* A file being written: bytes not yet sent, and the multipart upload in
 * progress if any. The fields are protected by `lock`, which is held
 * across this file's own uploads only (one writer per file). */
struct pending {
	struct pending *next; /* protected by s3->lock */
	unsigned refs;        /* protected by s3->lock */
	bool unlinked;        /* protected by s3->lock */
	char *key;            /* fixed while in the list (rename moves it
				 under s3->lock and the entry's lock) */
	pthread_mutex_t lock;
	struct tfs_buf buf;
	uint64_t sent;        /* bytes in uploaded parts */
	char *upload_id;
	char **etags;
	unsigned nparts;
	bool failed;
	int64_t mtime_ns;
};

struct s3 {
	struct tfs_vfs base;
	struct tfs_s3_config cfg;
	char *bucket;
	char *bucket_url; /* requests go to bucket_url + "/" + key */
	char *sigv4;
	char *token_hdr;  /* "x-amz-security-token: ..." or NULL */
	pthread_mutex_t lock;
	CURL *idle[IDLE_MAX];   /* protected by lock */
	unsigned nidle;         /* protected by lock */
	struct pending *pending; /* protected by lock */
	char **dirs;            /* keys made by mkdir; protected by lock */
	size_t ndirs, dirs_cap; /* protected by lock */
	unsigned long requests, retries; /* atomic */
	bool trace; /* TFS_S3_TRACE set: one log line per request */
	/* Objects that never change once written (immutable_key): their
	 * size, and the bytes of small ones. */
	struct icache_entry *icache;       /* protected by lock */
	size_t icache_num, icache_cap;     /* protected by lock */
	size_t icache_bytes;               /* protected by lock */
	size_t icache_next;                /* protected by lock: FIFO victim */
	/* What stat answered lately (STAT_TTL_NS), so that resolving many
	 * paths under one folder does not ask again for each; emptied by
	 * every change this process makes. */
	struct scache_entry *scache;       /* protected by lock */
	size_t scache_num, scache_next;    /* protected by lock */
	uint64_t rng;                    /* atomic */
};

static const struct tfs_vfs_ops s3_ops;
struct s3;
static void icache_drop(struct s3 *s, const char *key);
static void parent_remember(struct s3 *s, const char *key);

/* ---- Requests ---------------------------------------------------------- */

struct req {
	const char *method;  /* GET HEAD PUT POST DELETE */
	const char *key;     /* NULL or "": the bucket */
	const char *query;   /* canonical (sorted, encoded) or NULL */
	const void *body;
	size_t body_len;
	const char *hdr[4];  /* extra headers */
	bool ranged;
	uint64_t off, len;   /* ranged: bytes wanted */
	uint8_t *dst;        /* ranged: where they go (len bytes) */
	struct tfs_buf *out; /* other 2xx bodies (capped by its max) */
	/* Results of the last attempt. */
	long status;
	CURLcode cc;
	size_t got;          /* bytes into dst */
	bool overflow;       /* more than dst/out holds */
	struct tfs_buf err;  /* error body */
	char etag[128];
	char content_range[128];
	bool have_range;
	curl_off_t length;   /* Content-Length, -1 unknown */
	int64_t mtime_ns;
	char s3_code[64];
	char s3_msg[200];
	unsigned attempts;
};

static void req_init(struct req *r, const char *method, const char *key)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->key = key;
	tfs_buf_init(&r->err, ERR_BODY_MAX);
}

static void req_release(struct req *r)
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

static void md5_hex(const void *data, size_t len, char out[33])
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

static enum tfs_err perform(struct s3 *s, struct req *r, struct tfs_diag *d)
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
static enum tfs_err error_in_ok_body(const struct s3 *s,
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
static enum tfs_err list_prefix(struct s3 *s, const char *prefix, bool delim,
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
		req_init(&r, "GET", NULL);
		r.query = (const char *)q.data;
		r.out = &body;
		e = perform(s, &r, d);
		req_release(&r);
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

/* ---- Pending writes ---------------------------------------------------- */

static struct pending *pending_find_locked(struct s3 *s, const char *key)
{
	for (struct pending *p = s->pending; p; p = p->next)
		if (!p->unlinked && !strcmp(p->key, key))
			return p;
	return NULL;
}

static void pending_free(struct pending *p)
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
static struct pending *pending_get(struct s3 *s, const char *key, bool create,
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
	p = pending_find_locked(s, key);
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
		pending_free(n);
	if (p)
		pthread_mutex_lock(&p->lock);
	return p;
}

/* Takes p out of the list (the caller holds a reference). */
static void pending_unlink(struct s3 *s, struct pending *p)
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

static void pending_put(struct s3 *s, struct pending *p)
{
	bool last;

	pthread_mutex_unlock(&p->lock);
	pthread_mutex_lock(&s->lock);
	last = --p->refs == 0 && p->unlinked;
	pthread_mutex_unlock(&s->lock);
	if (last)
		pending_free(p);
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

	req_init(&r, "PUT", key);
	r.body = data;
	r.body_len = len;
	if (once)
		r.hdr[0] = "If-None-Match: *";
	tfs_diag_init(&ld);
	e = perform(s, &r, &ld);
	if (e == TFS_E_EXISTS && once && r.attempts > 0) {
		/* The first attempt may have landed before its answer was
		 * lost: it is ours when the stored object has our MD5. */
		struct req h;
		char md5[33], want[40];

		md5_hex(data, len, md5);
		snprintf(want, sizeof(want), "\"%s\"", md5);
		req_init(&h, "HEAD", key);
		if (!perform(s, &h, NULL) && (!strcmp(h.etag, want) ||
					      !strcmp(h.etag, md5)))
			e = TFS_E_OK;
		req_release(&h);
	}
	if (e == TFS_E_EXISTS && once)
		e = tfs_fail(d, TFS_E_EXISTS,
			     "s3: '%s/%s': already exists (written elsewhere)",
			     s->bucket, key);
	else if (e)
		e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
	req_release(&r);
	return e;
}

static enum tfs_err mp_start(struct s3 *s, struct pending *p,
			     struct tfs_diag *d)
{
	struct tfs_buf body;
	struct req r;
	enum tfs_err e;

	tfs_buf_init(&body, ERR_BODY_MAX);
	req_init(&r, "POST", p->key);
	r.query = "uploads=";
	r.out = &body;
	e = perform(s, &r, d);
	req_release(&r);
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

static enum tfs_err mp_part(struct s3 *s, struct pending *p, const uint8_t *data,
			    size_t len, struct tfs_diag *d)
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
	req_init(&r, "PUT", p->key);
	r.query = q;
	r.body = data;
	r.body_len = len;
	e = perform(s, &r, d);
	if (!e) {
		p->etags[p->nparts] = tfs_strdup(r.etag);
		if (!p->etags[p->nparts])
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		else
			p->nparts++;
	}
	req_release(&r);
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
	req_init(&r, "POST", p->key);
	r.query = q;
	r.body = x.data;
	r.body_len = x.len;
	r.out = &body;
	e = perform(s, &r, d);
	if (!e)
		e = error_in_ok_body(s, &body, "completing upload of", p->key,
				     d);
	req_release(&r);
	tfs_buf_release(&x);
	tfs_buf_release(&body);
	tfs_free(eid);
	tfs_free(q);
	return e;
}

static void mp_abort(struct s3 *s, struct pending *p)
{
	char *eid, *q;
	struct req r;

	if (!p->upload_id)
		return;
	eid = tfs__s3_encode(p->upload_id, false);
	q = eid ? tfs_malloc(strlen(eid) + 16) : NULL;
	if (q) {
		snprintf(q, strlen(eid) + 16, "uploadId=%s", eid);
		req_init(&r, "DELETE", p->key);
		r.query = q;
		(void)perform(s, &r, NULL);
		req_release(&r);
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
static enum tfs_err flush_parts(struct s3 *s, struct pending *p,
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
static enum tfs_err upload(struct s3 *s, struct pending *p, struct tfs_diag *d)
{
	enum tfs_err e;

	if (p->failed)
		return tfs_fail(d, TFS_E_IO,
				"s3: '%s/%s': an earlier upload of it failed",
				s->bucket, p->key);
	icache_drop(s, p->key);
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

/* ---- Folders made by mkdir -------------------------------------------- */

static bool dirs_has_locked(struct s3 *s, const char *key, size_t *at)
{
	for (size_t i = 0; i < s->ndirs; i++)
		if (!strcmp(s->dirs[i], key)) {
			if (at)
				*at = i;
			return true;
		}
	return false;
}

/* Adds *key (taken on success: *key becomes NULL) to the folders this
 * process knows; s->lock held. */
static enum tfs_err dirs_add_locked(struct s3 *s, char **key)
{
	enum tfs_err e = tfs_grow(&s->dirs, &s->dirs_cap, s->ndirs + 1,
				  sizeof(*s->dirs));

	if (e)
		return e;
	s->dirs[s->ndirs++] = *key;
	*key = NULL;
	return TFS_E_OK;
}

/* Whether some made folder or pending file lies below key ("" = root). */
static bool local_below(struct s3 *s, const char *key)
{
	size_t n = strlen(key);
	bool found = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->ndirs && !found; i++)
		found = (!n || (!strncmp(s->dirs[i], key, n) &&
				s->dirs[i][n] == '/'));
	for (struct pending *p = s->pending; p && !found; p = p->next)
		found = !p->unlinked &&
			(!n || (!strncmp(p->key, key, n) && p->key[n] == '/'));
	pthread_mutex_unlock(&s->lock);
	return found;
}

static bool dir_made(struct s3 *s, const char *key)
{
	bool r;

	pthread_mutex_lock(&s->lock);
	r = dirs_has_locked(s, key, NULL);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ---- Immutable objects ------------------------------------------------ */

#define ICACHE_MAX_ENTRIES 4096
#define ICACHE_MAX_BYTES (64u << 20)
#define ICACHE_OBJECT_MAX (1u << 20)

struct icache_entry {
	char *key;
	uint64_t size;
	int64_t mtime_ns;
	uint8_t *data; /* the whole object, or NULL */
};

/* TileDB never rewrites an object under a name made of a timestamp and a
 * UUID ("__1700000000000_1700000000000_<uuid>..."): fragment folders and
 * their files, schemas, commits, metadata, consolidated fragment
 * metadata. Such a key (any component "__" and a digit) is immutable. */
static bool immutable_key(const char *key)
{
	for (const char *c = key; c; c = strchr(c, '/')) {
		if (*c == '/')
			c++;
		if (c[0] == '_' && c[1] == '_' && c[2] >= '0' && c[2] <= '9')
			return true;
	}
	return false;
}

static void icache_entry_free(struct icache_entry *en)
{
	tfs_free(en->key);
	tfs_free(en->data);
}

/* Copies what the cache knows of key; data (a new copy) only when asked
 * and cached. */
static bool icache_get(struct s3 *s, const char *key, struct tfs_stat *st,
		       uint8_t **data)
{
	bool found = false;

	if (data)
		*data = NULL;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->icache_num; i++) {
		struct icache_entry *en = &s->icache[i];

		if (strcmp(en->key, key))
			continue;
		found = true;
		if (st) {
			memset(st, 0, sizeof(*st));
			st->exists = true;
			st->size = en->size;
			st->mtime_ns = en->mtime_ns;
		}
		if (data && en->data)
			*data = tfs_memdup(en->data, (size_t)en->size);
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

/* Remembers key's size (and bytes when data is not NULL; copied). */
static void icache_put(struct s3 *s, const char *key, uint64_t size,
		       int64_t mtime_ns, const uint8_t *data)
{
	struct icache_entry en = {NULL, size, mtime_ns, NULL}, old = {0};
	bool have_old = false;

	if (!immutable_key(key))
		return;
	en.key = tfs_strdup(key);
	if (data && size <= ICACHE_OBJECT_MAX)
		en.data = tfs_memdup(data, size ? (size_t)size : 1);
	if (!en.key) {
		icache_entry_free(&en);
		return;
	}
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->icache_num; i++)
		if (!strcmp(s->icache[i].key, key)) {
			old = s->icache[i];
			have_old = true;
			s->icache_bytes -= old.data ? (size_t)old.size : 0;
			s->icache[i] = en;
			s->icache_bytes += en.data ? (size_t)en.size : 0;
			en.key = NULL;
			break;
		}
	if (en.key) {
		if (s->icache_num == s->icache_cap &&
		    s->icache_cap < ICACHE_MAX_ENTRIES) {
			size_t ncap = s->icache_cap ? 2 * s->icache_cap : 64;
			struct icache_entry *n =
				tfs_reallocn(s->icache, ncap, sizeof(*n));

			if (n) {
				s->icache = n;
				s->icache_cap = ncap;
			}
		}
		if (s->icache_num < s->icache_cap) {
			s->icache[s->icache_num++] = en;
		} else if (s->icache_num) {
			/* Full: replace the oldest (first in, first out). */
			size_t v = s->icache_next++ % s->icache_num;

			old = s->icache[v];
			have_old = true;
			s->icache_bytes -= old.data ? (size_t)old.size : 0;
			s->icache[v] = en;
		} else {
			old = en;
			have_old = true;
			en.data = NULL;
		}
		s->icache_bytes += en.data ? (size_t)en.size : 0;
	}
	/* Over the byte budget: drop bytes (sizes stay) in FIFO order. */
	for (size_t i = 0; s->icache_bytes > ICACHE_MAX_BYTES && i < s->icache_num;
	     i++) {
		struct icache_entry *x = &s->icache[(s->icache_next + i) %
						    s->icache_num];

		if (x->data && x->key != en.key) {
			s->icache_bytes -= (size_t)x->size;
			tfs_free(x->data);
			x->data = NULL;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (have_old)
		icache_entry_free(&old);
}

/* Forgets key (it was written, renamed or removed by this process). */
static void icache_drop(struct s3 *s, const char *key)
{
	struct icache_entry old = {0};
	bool have_old = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->icache_num; i++)
		if (!strcmp(s->icache[i].key, key)) {
			old = s->icache[i];
			have_old = true;
			s->icache_bytes -= old.data ? (size_t)old.size : 0;
			s->icache[i] = s->icache[--s->icache_num];
			break;
		}
	pthread_mutex_unlock(&s->lock);
	if (have_old)
		icache_entry_free(&old);
}

/* ---- Recent stat answers ---------------------------------------------- */

#define SCACHE_MAX 1024
#define STAT_TTL_NS 1000000000LL

struct scache_entry {
	char *key;
	struct tfs_stat st;
	int64_t until_ns;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool scache_get(struct s3 *s, const char *key, struct tfs_stat *st)
{
	int64_t now = mono_ns();
	bool found = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->scache_num && !found; i++)
		if (s->scache[i].until_ns > now && !strcmp(s->scache[i].key, key)) {
			*st = s->scache[i].st;
			found = true;
		}
	pthread_mutex_unlock(&s->lock);
	return found;
}

static void scache_put(struct s3 *s, const char *key, const struct tfs_stat *st)
{
	char *k = tfs_strdup(key), *old = NULL;
	struct scache_entry *en;

	if (!k)
		return;
	pthread_mutex_lock(&s->lock);
	if (!s->scache)
		s->scache = tfs_callocn(SCACHE_MAX, sizeof(*s->scache));
	if (!s->scache) {
		pthread_mutex_unlock(&s->lock);
		tfs_free(k);
		return;
	}
	if (s->scache_num < SCACHE_MAX) {
		en = &s->scache[s->scache_num++];
	} else {
		en = &s->scache[s->scache_next++ % SCACHE_MAX];
		old = en->key;
	}
	en->key = k;
	en->st = *st;
	en->until_ns = mono_ns() + STAT_TTL_NS;
	pthread_mutex_unlock(&s->lock);
	tfs_free(old);
}

/* Something changed here: forget every recent answer. */
static void scache_clear(struct s3 *s)
{
	struct scache_entry *all;
	size_t n;

	pthread_mutex_lock(&s->lock);
	all = s->scache;
	n = s->scache_num;
	s->scache = NULL;
	s->scache_num = s->scache_next = 0;
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < n; i++)
		tfs_free(all[i].key);
	tfs_free(all);
}

/* ---- Operations -------------------------------------------------------- */

static struct s3 *S(struct tfs_vfs *v)
{
	return (struct s3 *)v;
}

/* The key of a backend path; "s3://bucket/..." URIs of this bucket are
 * paths too. NULL for a URI of another bucket or on ENOMEM. */
static char *object_key(struct s3 *s, const char *path)
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
static enum tfs_err bad_path(struct s3 *s, const char *path,
			     struct tfs_diag *d)
{
	if (tfs_s3_is_uri(path))
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': not in bucket '%s'", path, s->bucket);
	return tfs_fail(d, TFS_E_NOMEM, "out of memory");
}

static enum tfs_err head(struct s3 *s, const char *key, bool *found,
			 struct tfs_stat *st, struct tfs_diag *d)
{
	struct req r;
	enum tfs_err e;

	*found = false;
	req_init(&r, "HEAD", key);
	e = perform(s, &r, d);
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
	req_release(&r);
	return e;
}

/* Whether any key starts with prefix. */
static enum tfs_err prefix_used(struct s3 *s, const char *prefix, bool *used,
				struct tfs_diag *d)
{
	struct tfs__s3_listing l;
	enum tfs_err e;

	tfs__s3_listing_init(&l);
	e = list_prefix(s, prefix, false, 1, &l, d);
	*used = !e && (l.nobjects || l.nprefixes);
	tfs__s3_listing_release(&l);
	return e;
}

static char *dir_prefix(const char *key)
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

	if (!*key || dir_made(s, key) || local_below(s, key)) {
		st->exists = st->is_dir = true;
		return true;
	}
	if ((p = pending_get(s, key, false, NULL))) {
		st->exists = true;
		st->size = p->sent + p->buf.len;
		st->mtime_ns = p->mtime_ns;
		pending_put(s, p);
		return true;
	}
	return icache_get(s, key, st, NULL) || scache_get(s, key, st);
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
	e = list_prefix(s, key, true, 1000, &l, d);
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
		icache_put(s, key, st->size, st->mtime_ns, NULL);
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
	if ((e = head(s, key, &found, st, &ld)))
		return tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
	if (found)
		return TFS_E_OK;
	if ((e = prefix_used(s, pre, &used, d)))
		return e;
	if (used)
		st->exists = st->is_dir = true;
	return TFS_E_OK;
}

static enum tfs_err s3_stat(struct tfs_vfs *vfs, const char *path,
			    struct tfs_stat *st, struct tfs_diag *d)
{
	struct s3 *s = S(vfs);
	char *key = object_key(S(vfs), path), *pre = NULL;
	enum tfs_err e = TFS_E_OK;
	bool more;

	memset(st, 0, sizeof(*st));
	if (!key)
		return bad_path(S(vfs), path, d);
	if (stat_known(s, key, st))
		goto out_free_key;
	pre = dir_prefix(key);
	if (!pre) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free_key;
	}
	e = stat_by_listing(s, key, pre, st, &more, d);
	if (!e && more)
		e = stat_by_head(s, key, pre, st, d);
out_free_key:
	if (!e && pre)
		scache_put(s, key, st);
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

static enum tfs_err get_range(struct s3 *s, const char *key, uint64_t off,
			      uint8_t *dst, size_t len, struct tfs_diag *d)
{
	struct req r;
	enum tfs_err e;

	req_init(&r, "GET", key);
	r.ranged = true;
	r.off = off;
	r.len = len;
	r.dst = dst;
	e = perform(s, &r, d);
	req_release(&r);
	return e;
}

static void *read_thread(void *arg)
{
	struct read_job *j = arg;

	j->e = get_range(j->s, j->key, j->off, j->dst, j->len, &j->d);
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
	pending_put(s, p);
	return e;
}

/* Small objects that never change are fetched whole once. Sets *done when
 * the read was answered (or failed) here; otherwise the caller falls back
 * to reading the range alone. */
static enum tfs_err read_immutable(struct tfs_vfs *vfs, const char *key,
				   const char *path, uint64_t off, void *dst,
				   size_t len, bool *done, struct tfs_diag *d)
{
	struct s3 *s = S(vfs);
	struct tfs_stat st;
	uint8_t *data;
	enum tfs_err e;

	*done = true;
	if (icache_get(s, key, &st, &data) && data) {
		e = copy_span(data, st.size, path, off, dst, len, d);
		tfs_free(data);
		return e;
	}
	if (!icache_get(s, key, &st, NULL) && (e = s3_stat(vfs, path, &st, d)))
		return e;
	if (st.exists && !st.is_dir && st.size <= ICACHE_OBJECT_MAX &&
	    st.size > 0 && off <= st.size && len <= st.size - off) {
		data = tfs_malloc((size_t)st.size);
		if (data && !get_range(s, key, 0, data, (size_t)st.size, NULL)) {
			icache_put(s, key, st.size, st.mtime_ns, data);
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
		e = get_range(s, key, off, dst, len, &ld);
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

static enum tfs_err s3_read(struct tfs_vfs *vfs, const char *path,
			    uint64_t off, void *dst, size_t len,
			    struct tfs_diag *d)
{
	struct s3 *s = S(vfs);
	char *key = object_key(S(vfs), path);
	struct pending *p;
	bool done;
	enum tfs_err e;

	if (!key)
		return bad_path(S(vfs), path, d);
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off) {
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "'%s': read of %zu bytes at offset %" PRIu64
			     " is out of range", path, len, off);
		goto out_free_key;
	}
	if ((p = pending_get(s, key, false, NULL))) {
		e = read_unsent(s, p, path, off, dst, len, d);
		goto out_free_key;
	}
	if (immutable_key(key)) {
		e = read_immutable(vfs, key, path, off, dst, len, &done, d);
		if (done)
			goto out_free_key;
	}
	if (len == 0) {
		struct tfs_stat st;

		e = s3_stat(vfs, path, &st, d);
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
	if (l->count == *cap) {
		size_t ncap = *cap ? 2 * *cap : 32;
		char **nn = tfs_reallocn(l->names, ncap, sizeof(*nn));

		if (!nn)
			return false;
		l->names = nn;
		*cap = ncap;
	}
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

static enum tfs_err s3_list(struct tfs_vfs *vfs, const char *dir,
			    struct tfs_dirlist *out, struct tfs_diag *d)
{
	struct s3 *s = S(vfs);
	char *key = object_key(S(vfs), dir), *pre = NULL;
	struct tfs__s3_listing ls;
	struct tfs_dirlist l = {NULL, 0};
	size_t cap = 0, plen;
	bool any = false, ok = true;
	enum tfs_err e;

	out->names = NULL;
	out->count = 0;
	tfs__s3_listing_init(&ls);
	if (!key) {
		e = bad_path(s, dir, d);
		goto out_free;
	}
	if (!(pre = dir_prefix(key))) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free;
	}
	plen = strlen(pre);
	if ((e = list_prefix(s, pre, true, 0, &ls, d)))
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
	if (!any && *key && !dir_made(s, key)) {
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
	if (dir_made(s, parent) || local_below(s, parent)) {
		tfs_free(parent);
		return TFS_E_OK;
	}
	e = s3_stat(&s->base, parent, &st, d);
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
	struct s3 *s = S(vfs);
	char *key = object_key(S(vfs), path);
	struct pending *p;
	enum tfs_err e = TFS_E_OK;

	scache_clear(S(vfs));
	if (!key)
		return bad_path(S(vfs), path, d);
	if (!*key) {
		tfs_free(key);
		return tfs_fail(d, TFS_E_INVALID, "'%s': not a file name", path);
	}
	if ((e = parent_check(s, key, path, d))) {
		tfs_free(key);
		return e;
	}
	p = pending_get(s, key, true, NULL);
	if (!p) {
		tfs_free(key);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	mp_abort(s, p);
	p->failed = false;
	p->buf.len = 0;
	p->mtime_ns = now_ns();
	if (len && tfs_buf_append(&p->buf, data, len))
		e = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory buffering",
			     path);
	pending_put(s, p);
	tfs_free(key);
	return e;
}

static enum tfs_err s3_append(struct tfs_vfs *vfs, const char *path,
			      const void *data, size_t len, struct tfs_diag *d)
{
	struct s3 *s = S(vfs);
	char *key = object_key(S(vfs), path);
	struct pending *p;
	bool created;
	enum tfs_err e = TFS_E_OK;

	scache_clear(S(vfs));
	if (!key)
		return bad_path(S(vfs), path, d);
	if (!*key) {
		tfs_free(key);
		return tfs_fail(d, TFS_E_INVALID, "'%s': not a file name", path);
	}
	p = pending_get(s, key, true, &created);
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
		} else if ((e = head(s, key, &found, &st, &ld))) {
			e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
		} else if (found && st.size > APPEND_FETCH_MAX) {
			e = tfs_fail(d, TFS_E_TOO_BIG,
				     "'%s': cannot append to an object of %" PRIu64
				     " bytes", path, st.size);
		} else if (found && st.size) {
			if ((e = tfs_buf_setlen(&p->buf, (size_t)st.size)))
				e = tfs_fail(d, e, "out of memory");
			else
				e = get_range(s, key, 0, p->buf.data,
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
		if ((e = flush_parts(s, p, d)))
			p->failed = true;
	}
	pending_put(s, p);
	tfs_free(key);
	return e;
}

static enum tfs_err s3_fsync(struct tfs_vfs *vfs, const char *path,
			     struct tfs_diag *d)
{
	struct s3 *s = S(vfs);
	char *key = object_key(S(vfs), path);
	struct pending *p;
	enum tfs_err e = TFS_E_OK;

	scache_clear(S(vfs));
	if (!key)
		return bad_path(S(vfs), path, d);
	p = pending_get(s, key, false, NULL);
	if (p) {
		e = upload(s, p, d);
		if (e) {
			mp_abort(s, p);
			p->failed = true;
		}
		/* Sent or failed for good: either way no longer ours. */
		pending_unlink(s, p);
		pending_put(s, p);
	}
	else if (*key && !dir_made(s, key)) {
		/* Folders and stored objects are durable already; but a path
		 * that is neither is an error, as on POSIX. */
		struct tfs_stat st;

		e = s3_stat(vfs, path, &st, d);
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
	struct s3 *s = S(vfs);
	char *key = object_key(S(vfs), path);
	enum tfs_err e = TFS_E_OK;

	scache_clear(S(vfs));
	if (!key)
		return bad_path(S(vfs), path, d);
	if (!*key || dir_made(s, key)) {
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
		e = head(s, key, &found, &st, &ld);
		if (!e && !found) {
			struct pending *p = pending_get(s, key, false, NULL);

			found = p != NULL;
			if (p)
				pending_put(s, p);
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
	if (!dirs_has_locked(s, key, NULL))
		e = dirs_add_locked(s, &key);
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

	icache_drop(s, key);
	req_init(&r, "DELETE", key);
	e = perform(s, &r, d);
	req_release(&r);
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
	icache_drop(s, to);
	tfs_buf_init(&body, ERR_BODY_MAX);
	req_init(&r, "PUT", to);
	r.hdr[0] = hdr;
	r.out = &body;
	e = perform(s, &r, d);
	if (!e)
		e = error_in_ok_body(s, &body, "copy of", from, d);
	req_release(&r);
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
		p = pending_get(s, keys[i], false, NULL);
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
		pending_put(s, p);
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
		pending_put(s, p);
		return tfs_fail(d, TFS_E_BUSY,
				"'%s': cannot rename while being uploaded", from);
	}
	pthread_mutex_lock(&s->lock);
	old = pending_find_locked(s, *kt);
	if (old && old != p) {
		struct pending **pp = &s->pending;

		while (*pp && *pp != old)
			pp = &(*pp)->next;
		if (*pp)
			*pp = old->next;
		old->unlinked = true;
		if (old->refs == 0) {
			pthread_mutex_unlock(&s->lock);
			pending_free(old);
			pthread_mutex_lock(&s->lock);
		}
	}
	tfs_free(p->key);
	p->key = *kt;
	*kt = NULL;
	pthread_mutex_unlock(&s->lock);
	pending_put(s, p);
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
	char *pf = dir_prefix(kf), *pt = dir_prefix(kt);
	enum tfs_err e;

	tfs__s3_listing_init(&ls);
	if (!pf || !pt)
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	else
		e = list_prefix(s, pf, false, 0, &ls, d);
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
	struct s3 *s = S(vfs);
	char *kf = object_key(S(vfs), from), *kt = object_key(S(vfs), to);
	struct pending *p;
	struct tfs_stat st;
	bool found;
	enum tfs_err e = TFS_E_OK;
	struct tfs_diag ld;

	scache_clear(S(vfs));
	if (!kf || !kt) {
		e = bad_path(s, kf ? to : from, d);
		goto out_free;
	}
	if (!*kf || !*kt) {
		e = tfs_fail(d, TFS_E_INVALID, "'%s': cannot rename the bucket",
			     from);
		goto out_free;
	}
	if ((p = pending_get(s, kf, false, NULL))) {
		e = rename_unsent(s, p, &kt, from, d);
		goto out_free;
	}
	tfs_diag_init(&ld);
	if ((e = head(s, kf, &found, &st, &ld))) {
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

	if (!*key || dir_made(s, key) || !(k = tfs_strdup(key)))
		return;
	pthread_mutex_lock(&s->lock);
	/* Out of memory: the folder is only forgotten, as if never made. */
	if (!dirs_has_locked(s, k, NULL))
		(void)dirs_add_locked(s, &k);
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
	struct s3 *s = S(vfs);
	char *key = object_key(S(vfs), path), *pre = NULL;
	struct pending *p;
	struct tfs_stat st;
	struct tfs_diag ld;
	bool found, used, made = false;
	enum tfs_err e = TFS_E_OK;

	scache_clear(S(vfs));
	if (!key)
		return bad_path(S(vfs), path, d);
	if (!*key) {
		e = tfs_fail(d, TFS_E_INVALID, "'%s': cannot remove the bucket",
			     path);
		goto out_free;
	}
	if ((p = pending_get(s, key, false, NULL))) {
		mp_abort(s, p);
		pending_unlink(s, p);
		pending_put(s, p);
		goto out_free;
	}
	tfs_diag_init(&ld);
	if ((e = head(s, key, &found, &st, &ld))) {
		e = tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
		goto out_free;
	}
	if (found) {
		e = delete_key(s, key, d);
		if (!e)
			parent_remember(s, key);
		goto out_free;
	}
	pre = dir_prefix(key);
	if (!pre) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free;
	}
	if ((e = prefix_used(s, pre, &used, d)))
		goto out_free;
	if (used || local_below(s, key)) {
		e = tfs_fail(d, TFS_E_EXISTS, "'%s': cannot remove: folder not empty",
			     path);
		goto out_free;
	}
	pthread_mutex_lock(&s->lock);
	{
		size_t at;

		if (dirs_has_locked(s, key, &at)) {
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
	struct s3 *s = S(vfs);
	struct pending *p, *n;

	for (p = s->pending; p; p = n) {
		n = p->next;
		/* Never made durable: drop it, and its parts on the server. */
		mp_abort(s, p);
		pending_free(p);
	}
	for (unsigned i = 0; i < s->nidle; i++)
		curl_easy_cleanup(s->idle[i]);
	for (size_t i = 0; i < s->icache_num; i++)
		icache_entry_free(&s->icache[i]);
	scache_clear(s);
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
	.stat = s3_stat,
	.lstat = s3_stat, /* no links */
	.read = s3_read,
	.list = s3_list,
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
	struct s3 *s = S(vfs);
	struct req r;
	struct tfs_buf body;
	enum tfs_err e;
	struct tfs_diag ld;

	if (vfs->ops != &s3_ops)
		return TFS_E_OK;
	tfs_buf_init(&body, XML_BODY_MAX);
	req_init(&r, "GET", NULL);
	r.query = "list-type=2&max-keys=1&prefix=";
	r.out = &body;
	tfs_diag_init(&ld);
	e = perform(s, &r, &ld);
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
	req_release(&r);
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
	*requests = __atomic_load_n(&S(vfs)->requests, __ATOMIC_RELAXED);
	*retries = __atomic_load_n(&S(vfs)->retries, __ATOMIC_RELAXED);
}
