/* XOR filter (format/filters.md §5.5): each value is XORed with the
 * previous one, in integers of the element size; `u32 count, u32 len…` as
 * metadata. Trailing bytes that do not make a whole value are copied. */
#include <string.h>

#include "filter_internal.h"
#include "tfs_alloc.h"
#include "tfs_datatype.h"

static size_t xor_size(const struct tfs__fctx *fc)
{
	size_t ts = tfs_datatype_size(fc->type);

	return ts == 1 || ts == 2 || ts == 4 || ts == 8 ? ts : 0;
}

static void unxor(uint8_t *dst, const uint8_t *src, size_t len, size_t ts)
{
	size_t whole = len / ts * ts;
	uint64_t prev = 0;

	for (size_t i = 0; i < whole; i += ts) {
		prev ^= tfs_get_uint(src + i, ts);
		tfs_put_uint(dst + i, ts, prev);
	}
	if (len > whole)
		memcpy(dst + whole, src + whole, len - whole);
}

static void doxor(uint8_t *dst, const uint8_t *src, size_t len, size_t ts)
{
	size_t whole = len / ts * ts;
	uint64_t prev = 0;

	for (size_t i = 0; i < whole; i += ts) {
		uint64_t v = tfs_get_uint(src + i, ts);

		tfs_put_uint(dst + i, ts, v ^ prev);
		prev = v;
	}
	if (len > whole)
		memcpy(dst + whole, src + whole, len - whole);
}

enum tfs_err tfs__xor_reverse(struct tfs__stage *st, const struct tfs__fctx *fc)
{
	size_t ts = xor_size(fc), o = 0;
	uint32_t count;
	const uint8_t *lens;
	uint64_t total;
	uint8_t *out;
	enum tfs_err e;

	if (ts == 0)
		return tfs__stage_fail(st, TFS_E_UNSUPPORTED,
				       "XOR on an element type of this size");
	e = tfs__stage_lengths(st, "XOR header truncated", &lens, &count,
			       &total);
	if (e)
		return e;
	if (total > st->in_len)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "XOR parts exceed the chunk");
	e = tfs__stage_alloc(st, (size_t)total, &out);
	if (e)
		return e;
	for (uint32_t i = 0; i < count; i++) {
		size_t len = tfs_get_u32(lens + 4 * i);

		unxor(out + o, st->in + o, len, ts);
		o += len;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__xor_forward(struct tfs__fwd *w, const struct tfs__fctx *fc)
{
	size_t ts = xor_size(fc), total = tfs__parts_total(&w->data), o = 0;
	struct tfs_buf hdr, out;
	uint8_t *h, *p;
	enum tfs_err e;

	if (ts == 0)
		return tfs__fwd_fail(w, TFS_E_INVALID,
				     "XOR on an element type of this size");
	if (w->data.n > UINT32_MAX)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG, "too many parts");
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	e = tfs__buf_sized(&hdr, 4 + 4 * w->data.n, &h);
	if (!e)
		e = tfs__buf_sized(&out, total, &p);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)w->data.n);
	for (size_t i = 0; i < w->data.n; i++) {
		size_t len = w->data.v[i].len;

		if (len > UINT32_MAX) {
			e = TFS_E_TOO_BIG;
			goto out_release;
		}
		tfs_put_u32(h + 4 + 4 * i, (uint32_t)len);
		doxor(p + o, w->data.v[i].data, len, ts);
		o += len;
	}
	e = tfs__parts_prepend(&w->md, &hdr);
	if (!e)
		e = tfs__parts_replace(&w->data, &out);

out_release:
	tfs_buf_release(&hdr);
	tfs_buf_release(&out);
	return e;
}
