/* Positive delta filter (format/filters.md §5.4): windows of at most
 * max_window bytes store the first value in the metadata and each value
 * minus the previous one as data; values must not decrease. Integer types,
 * BOOL/BLOB/GEOM as bytes, date/time types from fragment version 20;
 * other types pass through without metadata. */
#include <string.h>

#include "filter_internal.h"
#include "tfs_datatype.h"

size_t tfs__window_int_type(const struct tfs__fctx *fc, bool *is_signed)
{
	*is_signed = false;
	switch (fc->type) {
	case TFS_INT8:
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
	case TFS_UINT8:
	case TFS_BOOL:
	case TFS_BLOB:
	case TFS_GEOM_WKB:
	case TFS_GEOM_WKT:
		return 1;
	case TFS_UINT16:
		return 2;
	case TFS_UINT32:
		return 4;
	case TFS_UINT64:
		return 8;
	default:
		if (tfs_datatype_is_datetime(fc->type) &&
		    fc->fragment_version >= 20) {
			*is_signed = true;
			return 8;
		}
		return 0;
	}
}

enum tfs_err tfs__posdelta_reverse(struct tfs__stage *st,
				   const struct tfs__fctx *fc)
{
	bool is_signed;
	size_t ts = tfs__window_int_type(fc, &is_signed), o = 0;
	uint32_t nwin;
	const uint8_t *table;
	uint64_t total = 0;
	uint8_t *out;
	enum tfs_err e;

	if (ts == 0)
		return tfs__stage_pass(st, st->in, st->in_len);
	if (!tfs_cur_u32(&st->md, &nwin) ||
	    nwin > tfs_cur_left(&st->md) / (ts + 4) ||
	    !tfs_cur_take(&st->md, (size_t)nwin * (ts + 4), &table))
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "positive delta header truncated");
	for (uint32_t w = 0; w < nwin; w++)
		total += tfs_get_u32(table + w * (ts + 4) + ts);
	if (total > st->in_len)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "positive delta windows exceed the "
				       "chunk");
	e = tfs__stage_alloc(st, (size_t)total, &out);
	if (e)
		return e;
	for (uint32_t w = 0; w < nwin; w++) {
		const uint8_t *h = table + w * (ts + 4);
		uint64_t prev = tfs_get_uint(h, ts);
		size_t wlen = tfs_get_u32(h + ts);

		if (wlen % ts != 0) {
			memcpy(out + o, st->in + o, wlen);
			o += wlen;
			continue;
		}
		for (size_t k = 0; k < wlen; k += ts) {
			prev += tfs_get_uint(st->in + o + k, ts);
			tfs_put_uint(out + o + k, ts, prev);
		}
		o += wlen;
	}
	return TFS_E_OK;
}

size_t tfs__window_count(const struct tfs__parts *data, uint32_t max_window,
			 size_t ts)
{
	size_t nwin = 0;

	for (size_t i = 0; i < data->n; i++) {
		size_t len = data->v[i].len;
		size_t ws = tfs__window_size(len, max_window, ts);

		if (len)
			nwin += (len + ws - 1) / ws;
	}
	return nwin;
}

static bool decreases(uint64_t cur, uint64_t prev, size_t ts, bool is_signed)
{
	if (!is_signed)
		return cur < prev;
	if (ts < 8) {
		unsigned shift = (unsigned)(64 - 8 * ts);

		return (int64_t)(cur << shift) < (int64_t)(prev << shift);
	}
	return (int64_t)cur < (int64_t)prev;
}

enum tfs_err tfs__posdelta_forward(struct tfs__fwd *w,
				   const struct tfs__fctx *fc)
{
	bool is_signed;
	size_t ts = tfs__window_int_type(fc, &is_signed);
	size_t total = tfs__parts_total(&w->data), nwin, o = 0;
	struct tfs_buf hdr, out;
	uint8_t *h, *p;
	enum tfs_err e;

	if (ts == 0)
		return TFS_E_OK;
	nwin = tfs__window_count(&w->data, fc->f->max_window, ts);
	if (nwin > UINT32_MAX)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG, "too many windows");
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	e = tfs__buf_sized(&hdr, 4 + nwin * (ts + 4), &h);
	if (!e)
		e = tfs__buf_sized(&out, total, &p);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)nwin);
	h += 4;
	for (size_t i = 0; i < w->data.n; i++) {
		const uint8_t *src = w->data.v[i].data;
		size_t len = w->data.v[i].len;
		size_t ws = tfs__window_size(len, fc->f->max_window, ts);

		for (size_t at = 0; at < len; at += ws) {
			size_t wl = len - at < ws ? len - at : ws;
			uint64_t prev;

			if (wl > UINT32_MAX) {
				e = TFS_E_TOO_BIG;
				goto out_release;
			}
			/* First value (zero-padded in a short raw window). */
			memset(h, 0, ts);
			memcpy(h, src + at, wl < ts ? wl : ts);
			prev = tfs_get_uint(h, ts);
			tfs_put_u32(h + ts, (uint32_t)wl);
			h += ts + 4;
			if (wl % ts != 0) {
				memcpy(p + o, src + at, wl);
				o += wl;
				continue;
			}
			for (size_t k = 0; k < wl; k += ts) {
				uint64_t cur = tfs_get_uint(src + at + k, ts);

				if (decreases(cur, prev, ts, is_signed)) {
					e = tfs__fwd_fail(
						w, TFS_E_INVALID,
						"positive delta: values "
						"decrease");
					goto out_release;
				}
				tfs_put_uint(p + o + k, ts, cur - prev);
				prev = cur;
			}
			o += wl;
		}
	}
	e = tfs__parts_prepend(&w->md, &hdr);
	if (!e)
		e = tfs__parts_replace(&w->data, &out);

out_release:
	tfs_buf_release(&hdr);
	tfs_buf_release(&out);
	return e;
}
