/* BZIP2 filter codec: each part is a standard bzip2 stream with block size
 * = level (filters.md §3). libbz2 allocates through the engine's wrappers. */
#include <bzlib.h>
#include <limits.h>
#include <string.h>

#include "filter_internal.h"
#include "tfs_alloc.h"

static void *bzalloc_cb(void *opaque, int items, int size)
{
	(void)opaque;
	if (items < 0 || size < 0)
		return NULL;
	return tfs_mallocn((size_t)items, (size_t)size);
}

static void bzfree_cb(void *opaque, void *p)
{
	(void)opaque;
	tfs_free(p);
}

static void stream_init(bz_stream *bz)
{
	memset(bz, 0, sizeof(*bz));
	bz->bzalloc = bzalloc_cb;
	bz->bzfree = bzfree_cb;
}

enum tfs_err tfs__bzip2_decode(uint8_t *dst, size_t dst_len,
			       const uint8_t *src, size_t src_len)
{
	bz_stream bz;
	int rc;
	enum tfs_err e = TFS_E_OK;

	if (dst_len == 0)
		return TFS_E_OK;
	if (dst_len > UINT_MAX || src_len > UINT_MAX)
		return TFS_E_CORRUPT;
	stream_init(&bz);
	rc = BZ2_bzDecompressInit(&bz, 0, 0);
	if (rc != BZ_OK)
		return rc == BZ_MEM_ERROR ? TFS_E_NOMEM : TFS_E_INTERNAL;
	bz.next_in = (char *)(uintptr_t)src;
	bz.avail_in = (unsigned)src_len;
	bz.next_out = (char *)dst;
	bz.avail_out = (unsigned)dst_len;
	rc = BZ2_bzDecompress(&bz);
	if (rc == BZ_MEM_ERROR)
		e = TFS_E_NOMEM;
	else if (rc != BZ_STREAM_END || bz.avail_out != 0)
		e = TFS_E_CORRUPT;
	BZ2_bzDecompressEnd(&bz);
	return e;
}

enum tfs_err tfs__bzip2_encode(struct tfs_buf *out, const uint8_t *src,
			       size_t len, int level)
{
	bz_stream bz;
	size_t bound;
	int rc;
	enum tfs_err e;

	/* TileDB: levels below 1 mean 1; bzip2 block sizes stop at 9. */
	if (level < 1)
		level = 1;
	if (level > 9)
		level = 9;
	if (len > UINT_MAX / 2)
		return TFS_E_TOO_BIG;
	/* bzip2 documents 1% + 600 bytes as the worst case. */
	bound = len + len / 100 + 601;
	e = tfs_buf_reserve(out, bound);
	if (e)
		return e;
	stream_init(&bz);
	rc = BZ2_bzCompressInit(&bz, level, 0, 0);
	if (rc != BZ_OK)
		return rc == BZ_MEM_ERROR ? TFS_E_NOMEM : TFS_E_INTERNAL;
	bz.next_in = (char *)(uintptr_t)src;
	bz.avail_in = (unsigned)len;
	bz.next_out = (char *)out->data + out->len;
	bz.avail_out = (unsigned)bound;
	do {
		rc = BZ2_bzCompress(&bz, BZ_FINISH);
	} while (rc == BZ_FINISH_OK && bz.avail_out > 0);
	if (rc != BZ_STREAM_END) {
		e = rc == BZ_MEM_ERROR ? TFS_E_NOMEM : TFS_E_INTERNAL;
		goto out_end;
	}
	out->len += bound - bz.avail_out;

out_end:
	BZ2_bzCompressEnd(&bz);
	return e;
}
