/* GZIP filter codec: each part is a zlib stream (RFC 1950: 2-byte header,
 * deflate, Adler-32), format/filters.md §3. Decoding also accepts gzip
 * framing. zlib allocates through the engine's allocation wrappers. */
#include <limits.h>
#include <string.h>
#include <zlib.h>

#include "filter_internal.h"
#include "tfs_alloc.h"

static voidpf zalloc_cb(voidpf opaque, uInt items, uInt size)
{
	(void)opaque;
	return tfs_mallocn(items, size);
}

static void zfree_cb(voidpf opaque, voidpf p)
{
	(void)opaque;
	tfs_free(p);
}

enum tfs_err tfs__zlib_decode(uint8_t *dst, size_t dst_len, const uint8_t *src,
			      size_t src_len)
{
	z_stream zs;
	int rc;
	enum tfs_err e = TFS_E_OK;

	if (dst_len == 0)
		return TFS_E_OK;
	if (dst_len > UINT_MAX || src_len > UINT_MAX)
		return TFS_E_CORRUPT;
	memset(&zs, 0, sizeof(zs));
	zs.zalloc = zalloc_cb;
	zs.zfree = zfree_cb;
	/* 15 window bits + 32: detect zlib or gzip headers. */
	rc = inflateInit2(&zs, 15 + 32);
	if (rc != Z_OK)
		return rc == Z_MEM_ERROR ? TFS_E_NOMEM : TFS_E_INTERNAL;
	zs.next_in = (Bytef *)(uintptr_t)src;
	zs.avail_in = (uInt)src_len;
	zs.next_out = dst;
	zs.avail_out = (uInt)dst_len;
	rc = inflate(&zs, Z_FINISH);
	if (rc == Z_MEM_ERROR)
		e = TFS_E_NOMEM;
	else if (rc != Z_STREAM_END || zs.total_out != dst_len)
		e = TFS_E_CORRUPT;
	inflateEnd(&zs);
	return e;
}

enum tfs_err tfs__zlib_encode(struct tfs_buf *out, const uint8_t *src,
			      size_t len, int level)
{
	z_stream zs;
	uLong bound;
	int rc;
	enum tfs_err e;

	/* TileDB: a negative level means zlib's default. */
	if (level < 0)
		level = Z_DEFAULT_COMPRESSION;
	if (level > 9)
		level = 9;
	if (len > UINT_MAX)
		return TFS_E_TOO_BIG;
	memset(&zs, 0, sizeof(zs));
	zs.zalloc = zalloc_cb;
	zs.zfree = zfree_cb;
	rc = deflateInit(&zs, level);
	if (rc != Z_OK)
		return rc == Z_MEM_ERROR ? TFS_E_NOMEM : TFS_E_INTERNAL;
	bound = deflateBound(&zs, (uLong)len);
	e = tfs_buf_reserve(out, bound);
	if (e)
		goto out_end;
	zs.next_in = (Bytef *)(uintptr_t)src;
	zs.avail_in = (uInt)len;
	zs.next_out = out->data + out->len;
	zs.avail_out = (uInt)bound;
	rc = deflate(&zs, Z_FINISH);
	if (rc != Z_STREAM_END) {
		e = rc == Z_MEM_ERROR ? TFS_E_NOMEM : TFS_E_INTERNAL;
		goto out_end;
	}
	out->len += zs.total_out;

out_end:
	deflateEnd(&zs);
	return e;
}
