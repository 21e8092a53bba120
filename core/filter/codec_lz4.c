/* LZ4 filter codec: each part is one raw LZ4 block, no frame and no size
 * prefix; the wrapper's original length is the capacity (filters.md §3). */
#include <limits.h>
#include <lz4.h>

#include "filter_internal.h"

enum tfs_err tfs__lz4_decode(uint8_t *dst, size_t dst_len, const uint8_t *src,
			     size_t src_len)
{
	int n;

	if (dst_len == 0)
		return TFS_E_OK;
	if (dst_len > INT_MAX || src_len > INT_MAX)
		return TFS_E_CORRUPT;
	n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len,
				(int)dst_len);
	return n >= 0 && (size_t)n == dst_len ? TFS_E_OK : TFS_E_CORRUPT;
}

enum tfs_err tfs__lz4_encode(struct tfs_buf *out, const uint8_t *src,
			     size_t len)
{
	int bound, n;
	enum tfs_err e;

	if (len > LZ4_MAX_INPUT_SIZE)
		return TFS_E_TOO_BIG;
	bound = LZ4_compressBound((int)len);
	e = tfs_buf_reserve(out, (size_t)bound);
	if (e)
		return e;
	n = LZ4_compress_default((const char *)src,
				 (char *)out->data + out->len, (int)len, bound);
	if (n <= 0)
		return TFS_E_INTERNAL;
	out->len += (size_t)n;
	return TFS_E_OK;
}
