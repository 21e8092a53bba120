/* The S3 storage backend: arrays in a bucket of S3-compatible object
 * storage, with object keys equal to the paths of a POSIX array (no folder
 * marker objects).
 *
 * Settings come from where the AWS tools keep them (tfs_s3_config_load):
 * endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (a custom endpoint
 * means path-style addressing), region from AWS_REGION or
 * AWS_DEFAULT_REGION, credentials from AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else from the shared
 * credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials) and
 * config file (AWS_CONFIG_FILE or ~/.aws/config) for the profile
 * AWS_PROFILE (default "default"). struct tfs_s3_opts overrides each.
 * Secrets never appear in diagnostics or logs.
 *
 * Backend paths are '/'-separated; the object key is the path without
 * leading, trailing or doubled slashes. A "folder" exists when some key
 * starts with its key and '/', or when this process made it with mkdir.
 * Writes are buffered per path and uploaded at fsync (multipart above
 * TFS_S3_PART_SIZE, parts sent as the buffer fills); a commit object
 * (a ".wrt" or ".ok" file in a "__commits" folder, or a ".ok" file) is
 * uploaded with If-None-Match: * so it can never replace another. */
#ifndef TFS_S3_H
#define TFS_S3_H

#include <stdbool.h>

#include "tfs_err.h"
#include "tfs_vfs.h"

#define TFS_S3_PART_SIZE (8u << 20)

/* Caller overrides; NULL (or -1) = from the environment. */
struct tfs_s3_opts {
	const char *endpoint;         /* "http://127.0.0.1:7480" */
	const char *region;
	const char *addressing;       /* "path" or "virtual" */
	int verify_tls;               /* 0, 1; -1 = default (1) */
	const char *credentials_file; /* instead of ~/.aws/credentials */
	const char *profile;
};

struct tfs_s3_config {
	char *endpoint; /* scheme://host[:port], no trailing '/' */
	char *region;
	bool path_style;
	bool verify_tls;
	char *access_key, *secret_key, *session_token; /* NULL: anonymous */
	unsigned timeout_ms;          /* per request, plus 1 ms per KiB */
	unsigned connect_timeout_ms;
	unsigned retries;             /* attempts after the first */
	unsigned backoff_base_ms, backoff_cap_ms;
};

/* Looks a variable up (getenv-like); ctx is passed through. */
typedef const char *(*tfs_s3_env_fn)(void *ctx, const char *name);

/* Fills c from the environment and files as described above, then o.
 * Unknown addressing, a malformed endpoint or an unreadable credentials
 * file named by o: TFS_E_INVALID. c is released by the caller (also on
 * failure). */
enum tfs_err tfs_s3_config_load(struct tfs_s3_config *c,
				const struct tfs_s3_opts *o,
				struct tfs_diag *d) TFS_WUR;
/* The same with another environment (for tests). */
enum tfs_err tfs_s3_config_load_env(struct tfs_s3_config *c,
				    const struct tfs_s3_opts *o,
				    tfs_s3_env_fn env, void *ctx,
				    struct tfs_diag *d) TFS_WUR;
/* Frees the strings (secrets overwritten first) and zeroes c. */
void tfs_s3_config_release(struct tfs_s3_config *c);

/* True for "s3://..." */
bool tfs_s3_is_uri(const char *s);
/* Splits "s3://bucket/some/prefix/" into "bucket" and the backend path
 * "/some/prefix" ("/" for the bucket itself); new strings. Bad bucket
 * names (empty, '/' '?' '#' or spaces, longer than 63): TFS_E_INVALID. */
enum tfs_err tfs_s3_uri_parse(const char *uri, char **bucket, char **path,
			      struct tfs_diag *d) TFS_WUR;

/* A backend on bucket with the settings of c (copied). Needs no network. */
enum tfs_err tfs_vfs_s3_new(const struct tfs_s3_config *c, const char *bucket,
			    struct tfs_vfs **out, struct tfs_diag *d) TFS_WUR;
/* Asks the server about the bucket (one listing request): bad credentials
 * give TFS_E_PERM, a missing bucket TFS_E_NOT_FOUND, an unreachable
 * endpoint TFS_E_IO, each with a message saying so. */
enum tfs_err tfs_vfs_s3_check(struct tfs_vfs *vfs, struct tfs_diag *d) TFS_WUR;

/* For a URI: loads the settings (with o, which may be NULL), makes the
 * backend, checks the bucket, and returns the path of the URI inside it
 * (free with tfs_free). */
enum tfs_err tfs_vfs_s3_open_uri(const char *uri, const struct tfs_s3_opts *o,
				 struct tfs_vfs **vfs, char **path,
				 struct tfs_diag *d) TFS_WUR;

/* Requests sent (retries included) and retries made by an S3 backend
 * since it was made; zero for other backends. */
void tfs_vfs_s3_counters(struct tfs_vfs *vfs, unsigned long *requests,
			 unsigned long *retries);

#endif
