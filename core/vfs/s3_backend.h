/* The S3 backend's own state and the functions its files share
 * (vfs_s3.c has the design; tfs_s3.h the contract). */
#ifndef TFS_S3_BACKEND_H
#define TFS_S3_BACKEND_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "s3_internal.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"
#include "tfs_s3.h"

#define IDLE_MAX 32
#define ERR_BODY_MAX (64u << 10)
#define XML_BODY_MAX (64u << 20)
#define APPEND_FETCH_MAX (256u << 20)
/* Reads above this are split into ranges of this size, fetched at once. */
#define READ_SPLIT (8u << 20)
#define READ_PARALLEL 4
/* The SHA-256 of no bytes. */
#define EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

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

#define ICACHE_MAX_ENTRIES 4096
#define ICACHE_MAX_BYTES (64u << 20)
#define ICACHE_OBJECT_MAX (1u << 20)

struct icache_entry {
	char *key;
	uint64_t size;
	int64_t mtime_ns;
	uint8_t *data; /* the whole object, or NULL */
};

#define SCACHE_MAX 1024
#define STAT_TTL_NS 1000000000LL

struct scache_entry {
	char *key;
	struct tfs_stat st;
	int64_t until_ns;
};

/* s3_request.c */
void tfs__s3_req_init(struct req *r, const char *method, const char *key);
void tfs__s3_req_release(struct req *r);
void tfs__s3_md5_hex(const void *data, size_t len, char out[33]);
enum tfs_err tfs__s3_perform(struct s3 *s, struct req *r, struct tfs_diag *d);
enum tfs_err tfs__s3_error_in_ok_body(const struct s3 *s,
				      const struct tfs_buf *body,
				      const char *what, const char *key,
				      struct tfs_diag *d);
enum tfs_err tfs__s3_list_prefix(struct s3 *s, const char *prefix, bool delim,
				 unsigned max_keys, struct tfs__s3_listing *l,
				 struct tfs_diag *d);

/* s3_upload.c */
struct pending *tfs__s3_pending_find_locked(struct s3 *s, const char *key);
void tfs__s3_pending_free(struct pending *p);
struct pending *tfs__s3_pending_get(struct s3 *s, const char *key, bool create,
				    bool *created);
void tfs__s3_pending_unlink(struct s3 *s, struct pending *p);
void tfs__s3_pending_put(struct s3 *s, struct pending *p);
void tfs__s3_mp_abort(struct s3 *s, struct pending *p);
enum tfs_err tfs__s3_flush_parts(struct s3 *s, struct pending *p,
				 struct tfs_diag *d);
enum tfs_err tfs__s3_upload(struct s3 *s, struct pending *p,
			    struct tfs_diag *d);

/* s3_caches.c */
bool tfs__s3_dirs_has_locked(struct s3 *s, const char *key, size_t *at);
enum tfs_err tfs__s3_dirs_add_locked(struct s3 *s, char **key);
bool tfs__s3_local_below(struct s3 *s, const char *key);
bool tfs__s3_dir_made(struct s3 *s, const char *key);
bool tfs__s3_immutable_key(const char *key);
void tfs__s3_icache_entry_free(struct icache_entry *en);
bool tfs__s3_icache_get(struct s3 *s, const char *key, struct tfs_stat *st,
			uint8_t **data);
void tfs__s3_icache_put(struct s3 *s, const char *key, uint64_t size,
			int64_t mtime_ns, const uint8_t *data);
void tfs__s3_icache_drop(struct s3 *s, const char *key);
bool tfs__s3_scache_get(struct s3 *s, const char *key, struct tfs_stat *st);
void tfs__s3_scache_put(struct s3 *s, const char *key,
			const struct tfs_stat *st);
void tfs__s3_scache_clear(struct s3 *s);

/* s3_read.c */
struct s3 *tfs__s3_of(struct tfs_vfs *v);
char *tfs__s3_object_key(struct s3 *s, const char *path);
enum tfs_err tfs__s3_bad_path(struct s3 *s, const char *path,
			      struct tfs_diag *d);
enum tfs_err tfs__s3_head(struct s3 *s, const char *key, bool *found,
			  struct tfs_stat *st, struct tfs_diag *d);
enum tfs_err tfs__s3_prefix_used(struct s3 *s, const char *prefix, bool *used,
				 struct tfs_diag *d);
char *tfs__s3_dir_prefix(const char *key);
enum tfs_err tfs__s3_stat(struct tfs_vfs *vfs, const char *path,
			  struct tfs_stat *st, struct tfs_diag *d);
enum tfs_err tfs__s3_get_range(struct s3 *s, const char *key, uint64_t off,
			       uint8_t *dst, size_t len, struct tfs_diag *d);
enum tfs_err tfs__s3_read(struct tfs_vfs *vfs, const char *path,
			  uint64_t off, void *dst, size_t len,
			  struct tfs_diag *d);
enum tfs_err tfs__s3_list(struct tfs_vfs *vfs, const char *dir,
			  struct tfs_dirlist *out, struct tfs_diag *d);

#endif
