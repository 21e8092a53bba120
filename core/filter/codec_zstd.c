/* ZSTD filter codec: each part is one standard zstd frame with its content
 * size (format/filters.md §3). Contexts live in the per-call session and
 * are reused across the chunks of a tile; a decoding context then stays
 * with its thread for the next tile (creating one costs its workspace's
 * fresh pages every time). */
#include <pthread.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "filter_internal.h"

static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;
static bool dctx_keyed;

static void dctx_drop(void *p)
{
	ZSTD_freeDCtx(p);
}

static void dctx_key_make(void)
{
	dctx_keyed = pthread_key_create(&dctx_key, dctx_drop) == 0;
}

/* The thread's spare decoding context, or a new one (NULL: no memory). */
static ZSTD_DCtx *dctx_take(void)
{
	ZSTD_DCtx *c = NULL;

	pthread_once(&dctx_once, dctx_key_make);
	if (dctx_keyed) {
		c = pthread_getspecific(dctx_key);
		if (c && pthread_setspecific(dctx_key, NULL) != 0)
			c = NULL;
	}
	return c ? c : ZSTD_createDCtx();
}

/* Keeps c as the thread's spare, or frees it. */
static void dctx_give(ZSTD_DCtx *c)
{
	if (!c)
		return;
	if (dctx_keyed && !pthread_getspecific(dctx_key) &&
	    pthread_setspecific(dctx_key, c) == 0)
		return;
	ZSTD_freeDCtx(c);
}

void tfs__session_release(struct tfs__session *s)
{
	dctx_give(s->zstd_dctx);
	ZSTD_freeCCtx(s->zstd_cctx);
	s->zstd_dctx = NULL;
	s->zstd_cctx = NULL;
}

enum tfs_err tfs__zstd_decode(struct tfs__session *s, uint8_t *dst,
			      size_t dst_len, const uint8_t *src,
			      size_t src_len)
{
	unsigned long long content;
	size_t n;

	if (dst_len == 0)
		return TFS_E_OK;
	/* A frame that states another size is corrupt: fail before work. */
	content = ZSTD_getFrameContentSize(src, src_len);
	if (content == ZSTD_CONTENTSIZE_ERROR ||
	    (content != ZSTD_CONTENTSIZE_UNKNOWN && content != dst_len))
		return TFS_E_CORRUPT;
	if (!s->zstd_dctx) {
		s->zstd_dctx = dctx_take();
		if (!s->zstd_dctx)
			return TFS_E_NOMEM;
	}
	n = ZSTD_decompressDCtx(s->zstd_dctx, dst, dst_len, src, src_len);
	if (ZSTD_isError(n)) {
		if (ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation)
			return TFS_E_NOMEM;
		return TFS_E_CORRUPT;
	}
	return n == dst_len ? TFS_E_OK : TFS_E_CORRUPT;
}

enum tfs_err tfs__zstd_encode(struct tfs__session *s, struct tfs_buf *out,
			      const uint8_t *src, size_t len, int level)
{
	size_t bound = ZSTD_compressBound(len), n;
	enum tfs_err e;

	/* TileDB maps levels below -7 to zstd's default of 3. */
	if (level < -7)
		level = 3;
	if (level > ZSTD_maxCLevel())
		level = ZSTD_maxCLevel();
	if (!s->zstd_cctx) {
		s->zstd_cctx = ZSTD_createCCtx();
		if (!s->zstd_cctx)
			return TFS_E_NOMEM;
	}
	e = tfs_buf_reserve(out, bound);
	if (e)
		return e;
	n = ZSTD_compressCCtx(s->zstd_cctx, out->data + out->len, bound, src,
			      len, level);
	if (ZSTD_isError(n))
		return TFS_E_INTERNAL;
	out->len += n;
	return TFS_E_OK;
}
