/* Bit-width reduction filter (format/filters.md §5.3): windows of at most
 * max_window bytes store each value minus the window minimum in 8, 16 or
 * 32 bits (signed for signed types). Only 16/32/64-bit integers, and
 * date/time types from fragment version 20; other types pass through
 * without metadata. */
#include <string.h>

#include "filter_internal.h"
#include "tfs_alloc.h"

/* Size and signedness of T; 0 when the filter is a no-op: positive
 * delta's types without those of one byte. */
static size_t bwr_type(const struct tfs__fctx *fc, bool *is_signed)
{
	size_t ts = tfs__window_int_type(fc, is_signed);

	return ts == 1 ? 0 : ts;
}

enum tfs_err tfs__bitwidth_reverse(struct tfs__stage *st,
				   const struct tfs__fctx *fc)
{
	bool is_signed;
	size_t ts = bwr_type(fc, &is_signed), in = 0, o = 0;
	uint32_t orig, nwin;
	uint8_t *out;
	enum tfs_err e;

	if (ts == 0)
		return tfs__stage_pass(st, st->in, st->in_len);
	if (!tfs_cur_u32(&st->md, &orig) || !tfs_cur_u32(&st->md, &nwin) ||
	    nwin > tfs_cur_left(&st->md) / (ts + 5))
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "bit width header truncated");
	e = tfs__stage_alloc(st, orig, &out);
	if (e)
		return e;
	for (uint32_t w = 0; w < nwin; w++) {
		const uint8_t *h;
		uint64_t offset;
		uint8_t bits;
		uint32_t wlen;
		size_t vb, n;

		if (!tfs_cur_take(&st->md, ts + 5, &h))
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "bit width header truncated");
		offset = tfs_get_uint(h, ts);
		bits = h[ts];
		wlen = tfs_get_u32(h + ts + 1);
		if (wlen > orig - o)
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "bit width windows exceed the "
					       "original length");
		if (bits >= 8 * ts || wlen % ts != 0) {
			if (wlen > st->in_len - in)
				return tfs__stage_fail(st, TFS_E_CORRUPT,
						       "bit width data "
						       "truncated");
			memcpy(out + o, st->in + in, wlen);
			in += wlen;
			o += wlen;
			continue;
		}
		if (bits != 8 && bits != 16 && bits != 32)
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "bad bit width");
		vb = bits / 8u;
		n = wlen / ts;
		if (n > (st->in_len - in) / vb)
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "bit width data truncated");
		for (size_t k = 0; k < n; k++) {
			uint64_t v = tfs__get_int(st->in + in, vb, is_signed);

			tfs_put_uint(out + o, ts, v + offset);
			in += vb;
			o += ts;
		}
	}
	if (o != orig)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "bit width windows do not fill the "
				       "original length");
	return TFS_E_OK;
}

/* Bits for a window, as TileDB chooses them (8/16/32/64); 8*ts means
 * "store raw". `range` is max - min as an exact unsigned number. */
static unsigned window_bits(uint64_t range, size_t ts, bool is_signed)
{
	uint64_t tmax = ts == 8 ? (is_signed ? INT64_MAX : UINT64_MAX)
				: (is_signed ? (UINT64_C(1) << (8 * ts - 1)) - 1
					     : (UINT64_C(1) << (8 * ts)) - 1);
	uint64_t r1;
	unsigned bits = 0;

	if (range >= tmax)
		return (unsigned)(8 * ts);
	r1 = range + 1;
	/* Signed types: the offset value must fit the signed width. An
	 * unsigned 16-bit window of range 141 is stored in 8 bits by TileDB
	 * 2.29 (corpus dense_3d, found by the writer's compatibility test),
	 * so unsigned types of every width take the unsigned rule. */
	if (is_signed) {
		if (r1 <= INT8_MAX)
			return 8;
		if (r1 <= INT16_MAX)
			return 16;
		if (r1 <= INT32_MAX)
			return 32;
		return 64;
	}
	while (r1) {
		bits++;
		r1 >>= 1;
	}
	return bits <= 8 ? 8 : bits <= 16 ? 16 : bits <= 32 ? 32 : 64;
}

enum tfs_err tfs__bitwidth_forward(struct tfs__fwd *w,
				   const struct tfs__fctx *fc)
{
	bool is_signed;
	size_t ts = bwr_type(fc, &is_signed);
	size_t total = tfs__parts_total(&w->data), nwin, o = 0;
	struct tfs_buf hdr, out;
	uint8_t *h, *p;
	enum tfs_err e;

	if (ts == 0)
		return TFS_E_OK;
	if (total > UINT32_MAX)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG, "chunk exceeds 4 GiB");
	nwin = tfs__window_count(&w->data, fc->f->max_window, ts);
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	e = tfs__buf_sized(&hdr, 8 + nwin * (ts + 5), &h);
	if (!e)
		e = tfs__buf_sized(&out, total, &p);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)total);
	tfs_put_u32(h + 4, (uint32_t)nwin);
	h += 8;
	for (size_t i = 0; i < w->data.n; i++) {
		const uint8_t *src = w->data.v[i].data;
		size_t len = w->data.v[i].len;
		size_t ws = tfs__window_size(len, fc->f->max_window, ts);

		for (size_t at = 0; at < len; at += ws) {
			size_t wl = len - at < ws ? len - at : ws;
			size_t n = wl / ts;
			uint64_t mn = 0, mx = 0;
			unsigned bits = (unsigned)(8 * ts);

			for (size_t k = 0; k < n; k++) {
				uint64_t v = tfs__get_int(src + at + k * ts, ts,
							  is_signed);
				bool lt = is_signed ? (int64_t)v < (int64_t)mn
						    : v < mn;
				bool gt = is_signed ? (int64_t)v > (int64_t)mx
						    : v > mx;

				if (k == 0 || lt)
					mn = v;
				if (k == 0 || gt)
					mx = v;
			}
			if (n && wl % ts == 0)
				bits = window_bits(mx - mn, ts, is_signed);
			tfs_put_uint(h, ts, mn);
			h[ts] = (uint8_t)bits;
			tfs_put_u32(h + ts + 1, (uint32_t)wl);
			h += ts + 5;
			if (bits >= 8 * ts) {
				memcpy(p + o, src + at, wl);
				o += wl;
				continue;
			}
			for (size_t k = 0; k < n; k++) {
				uint64_t v = tfs_get_uint(src + at + k * ts, ts);

				tfs_put_uint(p + o, bits / 8u, v - mn);
				o += bits / 8u;
			}
		}
	}
	out.len = o;
	e = tfs__parts_prepend(&w->md, &hdr);
	if (!e)
		e = tfs__parts_replace(&w->data, &out);

out_release:
	tfs_buf_release(&hdr);
	tfs_buf_release(&out);
	return e;
}
