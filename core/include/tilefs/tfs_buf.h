/* A growable byte buffer with a hard maximum, so a lying length field can
 * never make us allocate more than the caller allowed.
 *
 * Invariants: data is NULL or holds cap bytes; len <= cap <= max. A
 * released buffer is empty and may be reused after tfs_buf_init. */
#ifndef TFS_BUF_H
#define TFS_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"

#define TFS_BUF_NO_MAX SIZE_MAX

struct tfs_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max;
};

void tfs_buf_init(struct tfs_buf *b, size_t max);
void tfs_buf_release(struct tfs_buf *b);
/* Makes room for `extra` more bytes: TFS_E_TOO_BIG past max, TFS_E_NOMEM. */
enum tfs_err tfs_buf_reserve(struct tfs_buf *b, size_t extra) TFS_WUR;
/* Sets len to n, growing as needed; new bytes are zero. */
enum tfs_err tfs_buf_resize(struct tfs_buf *b, size_t n) TFS_WUR;
/* Sets len to n, growing as needed; new bytes are left uninitialised (for
 * callers that overwrite them all). */
enum tfs_err tfs_buf_setlen(struct tfs_buf *b, size_t n) TFS_WUR;
enum tfs_err tfs_buf_append(struct tfs_buf *b, const void *src,
			    size_t n) TFS_WUR;
enum tfs_err tfs_buf_append_u8(struct tfs_buf *b, uint8_t v) TFS_WUR;
enum tfs_err tfs_buf_append_u32(struct tfs_buf *b, uint32_t v) TFS_WUR;
enum tfs_err tfs_buf_append_u64(struct tfs_buf *b, uint64_t v) TFS_WUR;
enum tfs_err tfs_buf_printf(struct tfs_buf *b, const char *fmt, ...)
	TFS_PRINTF(2, 3) TFS_WUR;
/* Hands the bytes to the caller (free with tfs_free) and empties b. */
uint8_t *tfs_buf_detach(struct tfs_buf *b, size_t *len);

/* Fills out with the mkdtemp/mkstemp template "<dir>/<prefix>" followed by
 * the six characters those functions replace; NULL when cap is too small
 * (out is then unusable). */
char *tfs_temp_template(char *out, size_t cap, const char *dir,
			const char *prefix);

#endif
