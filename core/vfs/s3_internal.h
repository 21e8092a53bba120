/* Pieces of the S3 backend that need no server, shared by vfs_s3.c and its
 * unit tests: response parsing (s3_xml.c), the retry decision and backoff,
 * key encoding and time parsing (s3_util.c).
 *
 * Everything here is pure: no I/O, no global state, thread-safe. */
#ifndef TFS_S3_INTERNAL_H
#define TFS_S3_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"

/* One object of a listing page. */
struct tfs__s3_object {
	char *key;
	uint64_t size;
	int64_t mtime_ns;
};

/* The result of ListObjectsV2, accumulated over pages: each parse appends
 * its page's objects and common prefixes and replaces truncated and
 * next_token. */
struct tfs__s3_listing {
	struct tfs__s3_object *objects;
	size_t nobjects, objects_cap;
	char **prefixes;
	size_t nprefixes, prefixes_cap;
	bool truncated;
	char *next_token; /* NULL when the page said none */
};

void tfs__s3_listing_init(struct tfs__s3_listing *l);
void tfs__s3_listing_release(struct tfs__s3_listing *l);

/* Parses one ListObjectsV2 response page (ListBucketResult) and appends it
 * to l. Malformed XML, another root element or a size that is not a
 * number: TFS_E_CORRUPT (l keeps what earlier pages gave). */
enum tfs_err tfs__s3_parse_list(const char *xml, size_t len,
				struct tfs__s3_listing *l,
				struct tfs_diag *d) TFS_WUR;

/* The Code and Message of an S3 <Error> body, truncated to their caps and
 * NUL-terminated; empty strings when the body is not one. */
void tfs__s3_parse_error(const char *xml, size_t len, char *code,
			 size_t code_cap, char *msg, size_t msg_cap);

/* The text of the first element called name (e.g. "UploadId") in xml, as
 * a new string; NULL when absent or malformed (or out of memory). */
char *tfs__s3_xml_text(const char *xml, size_t len, const char *name);

/* Whether a request that ended with transport result curl_code (a
 * CURLcode; 0 = a response arrived) and HTTP status (with the S3 error
 * code of its body, or "") is worth sending again: resets, timeouts,
 * partial transfers, 500, 502, 503, 504, 429, SlowDown, RequestTimeout,
 * InternalError. Not: 4xx answers that will not change, or a bad URL. */
bool tfs__s3_retryable(int curl_code, long status, const char *s3_code);

/* Delay before attempt number `attempt` (1 = the first retry): full jitter
 * over an exponential ceiling, min(cap_ms, base_ms * 2^(attempt-1)),
 * scaled by rnd in [0, 2^32): rnd * ceiling / 2^32, at least 1 ms. */
unsigned tfs__s3_backoff_ms(unsigned attempt, unsigned base_ms,
			    unsigned cap_ms, uint32_t rnd);

/* Percent-encodes s as S3 wants in paths and query values: unreserved
 * characters (A-Z a-z 0-9 - . _ ~) stay, '/' stays when keep_slash, every
 * other byte becomes %XX (upper-case hex). New string, NULL on ENOMEM. */
char *tfs__s3_encode(const char *s, bool keep_slash);

/* An ISO 8601 UTC time as S3 writes it ("2024-05-01T12:34:56.789Z") in
 * nanoseconds since the epoch; false when malformed. */
bool tfs__s3_parse_time(const char *s, int64_t *ns);

/* The object key of a backend path: leading slashes dropped, runs of
 * slashes collapsed, trailing slashes dropped ("/a//b/" -> "a/b"; "/" ->
 * ""). New string, NULL on ENOMEM. */
char *tfs__s3_key(const char *path);

#endif
