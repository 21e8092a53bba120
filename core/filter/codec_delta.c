/* Delta filter codec (format/filters.md §4.3): `u64 n`, the first value,
 * then each value minus the previous one in the width of T (modular). The
 * element type, or the reinterpret type when set, picks T. */
#include <string.h>

#include "filter_internal.h"
#include "tfs_datatype.h"

size_t tfs__delta_int_type(unsigned type, bool *is_signed)
{
	*is_signed = false;
	switch (type) {
	case TFS_INT8:
	case TFS_CHAR: /* x86 TileDB builds: char is signed */
		*is_signed = true;
		return 1;
	case TFS_INT16:
		*is_signed = true;
		return 2;
	case TFS_INT32:
		*is_signed = true;
		return 4;
	case TFS_INT64:
		*is_signed = true;
		return 8;
	case TFS_UINT16:
		return 2;
	case TFS_UINT32:
		return 4;
	case TFS_UINT64:
		return 8;
	case TFS_FLOAT32:
	case TFS_FLOAT64:
		return 0;
	default:
		if (tfs_datatype_is_datetime(type)) {
			*is_signed = true;
			return 8;
		}
		/* UINT8, BOOL, BLOB, GEOM, strings, ANY: bytes. */
		return tfs_datatype_valid(type) ? 1 : 0;
	}
}

enum tfs_err tfs__delta_decode(uint8_t *dst, size_t dst_len,
			       const uint8_t *src, size_t src_len,
			       unsigned type)
{
	bool is_signed;
	size_t ts = tfs__delta_int_type(type, &is_signed);
	uint64_t n, v;

	if (ts == 0)
		return TFS_E_UNSUPPORTED;
	if (dst_len == 0)
		return TFS_E_OK;
	if (src_len < 8)
		return TFS_E_CORRUPT;
	n = tfs_get_u64(src);
	if (n != dst_len / ts || dst_len % ts != 0 || src_len - 8 < dst_len)
		return TFS_E_CORRUPT;
	src += 8;
	v = tfs_get_uint(src, ts);
	tfs_put_uint(dst, ts, v);
	for (size_t i = ts; i < dst_len; i += ts) {
		v += tfs_get_uint(src + i, ts);
		tfs_put_uint(dst + i, ts, v);
	}
	return TFS_E_OK;
}

enum tfs_err tfs__delta_encode(struct tfs_buf *out, const uint8_t *src,
			       size_t len, unsigned type)
{
	bool is_signed;
	size_t ts = tfs__delta_int_type(type, &is_signed);
	uint8_t *p;
	enum tfs_err e;

	if (ts == 0 || len % ts != 0)
		return TFS_E_INVALID;
	/* An empty part still carries a (zero) first value, as TileDB's. */
	e = tfs_buf_reserve(out, 8 + (len ? len : ts));
	if (e)
		return e;
	p = out->data + out->len;
	tfs_put_u64(p, len / ts);
	p += 8;
	if (len == 0) {
		memset(p, 0, ts);
		out->len += 8 + ts;
		return TFS_E_OK;
	}
	memcpy(p, src, ts);
	for (size_t i = ts; i < len; i += ts)
		tfs_put_uint(p + i, ts, tfs_get_uint(src + i, ts) - tfs_get_uint(src + i - ts, ts));
	out->len += 8 + len;
	return TFS_E_OK;
}
