/* RLE filter codec. Fixed-size mode (format/filters.md §4.1): runs of
 * equal cells, each `[value][u16 big-endian run length]`, the value being
 * one tile cell. String mode (filters.md §4.4): runs of equal strings of a
 * var-size string tile whose offsets are not stored, rebuilt on decode. */
#include <string.h>

#include "filter_internal.h"

#define RLE_MAX_RUN 65535u

enum tfs_err tfs__rle_decode(uint8_t *dst, size_t dst_len, const uint8_t *src,
			     size_t src_len, size_t value_size)
{
	size_t run_size, o = 0;

	/* value_size is a cell size from the file (a generic tile header's
	 * is any u64): value_size + 2 must not wrap. */
	if (value_size == 0 || value_size > SIZE_MAX - 2)
		return TFS_E_CORRUPT;
	run_size = value_size + 2;
	if (src_len % run_size != 0)
		return TFS_E_CORRUPT;
	for (size_t pos = 0; pos < src_len; pos += run_size) {
		const uint8_t *v = src + pos;
		size_t n = ((size_t)v[value_size] << 8) | v[value_size + 1];
		size_t filled;

		if (n > (dst_len - o) / value_size)
			return TFS_E_CORRUPT;
		if (n == 0)
			continue;
		if (value_size == 1) {
			memset(dst + o, v[0], n);
			o += n;
			continue;
		}
		/* Copy once, then double what is already there. */
		memcpy(dst + o, v, value_size);
		for (filled = 1; filled < n;) {
			size_t k = filled < n - filled ? filled : n - filled;

			memcpy(dst + o + filled * value_size, dst + o,
			       k * value_size);
			filled += k;
		}
		o += n * value_size;
	}
	return o == dst_len ? TFS_E_OK : TFS_E_CORRUPT;
}

static enum tfs_err put_run(struct tfs_buf *out, const uint8_t *v,
			    size_t value_size, size_t run)
{
	uint8_t len[2] = {(uint8_t)(run >> 8), (uint8_t)run};
	enum tfs_err e = tfs_buf_append(out, v, value_size);

	return e ? e : tfs_buf_append(out, len, 2);
}

enum tfs_err tfs__rle_encode(struct tfs_buf *out, const uint8_t *src,
			     size_t len, size_t value_size)
{
	size_t n, run = 1;
	const uint8_t *prev;
	enum tfs_err e;

	if (value_size == 0 || len % value_size != 0)
		return TFS_E_INVALID;
	n = len / value_size;
	if (n == 0)
		return TFS_E_OK;
	prev = src;
	for (size_t i = 1; i < n; i++) {
		const uint8_t *cur = src + i * value_size;

		if (run < RLE_MAX_RUN && memcmp(cur, prev, value_size) == 0) {
			run++;
			continue;
		}
		e = put_run(out, prev, value_size, run);
		if (e)
			return e;
		prev = cur;
		run = 1;
	}
	return put_run(out, prev, value_size, run);
}

enum tfs_err tfs__rle_str_reverse(struct tfs__stage *st,
				  const struct tfs__fctx *fc)
{
	struct tfs__str_header sh;
	uint32_t in_size, out_size;
	uint8_t rl, sl;
	uint64_t cells, cell = 0;
	size_t pos = 0, o = 0;
	uint8_t *values;
	enum tfs_err e;

	(void)fc;
	if (!tfs__str_header_get(&st->md, &sh))
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "string RLE header truncated");
	in_size = sh.in_size;
	out_size = sh.out_size;
	rl = sh.width[0];
	sl = sh.width[1];
	if (!tfs__width_ok(rl) || !tfs__width_ok(sl))
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "string RLE integer width not 1, 2, 4 "
				       "or 8");
	if (sh.off_size % 8 != 0 || sh.off_size / 8 > st->offsets_left)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "string RLE cell count does not match "
				       "the tile");
	if (out_size > st->in_len)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "string RLE data larger than the chunk");
	cells = sh.off_size / 8;
	e = tfs__stage_alloc(st, in_size, &values);
	if (e)
		return e;
	while (pos < out_size) {
		const uint8_t *s = st->in + pos;
		uint64_t run, slen;

		if (out_size - pos < (size_t)rl + sl)
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "string RLE run truncated");
		run = tfs_get_be(s, rl);
		slen = tfs_get_be(s + rl, sl);
		pos += (size_t)rl + sl;
		s += (size_t)rl + sl;
		if (slen > out_size - pos || run > cells - cell ||
		    (run && slen > (in_size - o) / run))
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "string RLE run exceeds the "
					       "tile");
		if (slen == 0 && !st->offsets) {
			cell += run; /* empty strings, offsets not wanted */
			run = 0;
		}
		for (uint64_t r = 0; r < run; r++) {
			if (st->offsets)
				st->offsets[cell] = st->offsets_base + o;
			if (slen)
				memcpy(values + o, s, (size_t)slen);
			o += (size_t)slen;
			cell++;
		}
		pos += (size_t)slen;
	}
	if (o != in_size || cell != cells)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "string RLE runs do not add up to the "
				       "declared sizes");
	st->cells = cells;
	return TFS_E_OK;
}

static void cell_span(const struct tfs__fctx *fc, size_t size, uint64_t c,
		      size_t *start, size_t *len)
{
	size_t end = c + 1 < fc->cell_count ? (size_t)fc->cell_offsets[c + 1]
					     : size;

	*start = (size_t)fc->cell_offsets[c];
	*len = end - *start;
}

static bool same_cell(const uint8_t *v, size_t a_off, size_t a_len,
		      size_t b_off, size_t b_len)
{
	return a_len == b_len && (a_len == 0 || memcmp(v + a_off, v + b_off,
						       a_len) == 0);
}

/* What pass 1 learns about the runs of equal strings in a tile. */
struct str_runs {
	size_t runs, strsum, longest_str;
	uint64_t longest_run;
};

/* Pass 1: the runs decide the integer widths. */
static void str_runs_measure(const struct tfs__fctx *fc, const uint8_t *v,
			     size_t size, struct str_runs *r)
{
	uint64_t run = 0;
	size_t prev_off = 0, prev_len = 0;

	memset(r, 0, sizeof(*r));
	for (uint64_t c = 0; c < fc->cell_count; c++) {
		size_t off, len;

		cell_span(fc, size, c, &off, &len);
		if (len > r->longest_str)
			r->longest_str = len;
		if (run && same_cell(v, prev_off, prev_len, off, len)) {
			run++;
		} else {
			if (run) {
				r->runs++;
				r->strsum += prev_len;
			}
			run = 1;
			prev_off = off;
			prev_len = len;
		}
		if (run > r->longest_run)
			r->longest_run = run;
	}
	if (run) {
		r->runs++;
		r->strsum += prev_len;
	}
}

/* Pass 2: writes each run as (run length, string length, bytes) with the
 * widths rl and sl; o has room for all of them. */
static void str_runs_write(const struct tfs__fctx *fc, const uint8_t *v,
			   size_t size, uint8_t *o, unsigned rl, unsigned sl)
{
	uint64_t run = 0;
	size_t prev_off = 0, prev_len = 0;

	for (uint64_t c = 0; c <= fc->cell_count; c++) {
		size_t off = 0, len = 0;

		if (c < fc->cell_count) {
			cell_span(fc, size, c, &off, &len);
			if (run && same_cell(v, prev_off, prev_len, off, len)) {
				run++;
				continue;
			}
		}
		if (run) {
			tfs_put_be(o, rl, run);
			tfs_put_be(o + rl, sl, prev_len);
			o += rl + sl;
			if (prev_len)
				memcpy(o, v + prev_off, prev_len);
			o += prev_len;
		}
		run = 1;
		prev_off = off;
		prev_len = len;
	}
}

enum tfs_err tfs__rle_str_forward(struct tfs__fwd *w,
				  const struct tfs__fctx *fc)
{
	const uint8_t *v;
	size_t size, out_size;
	struct str_runs r;
	unsigned rl, sl;
	struct tfs_buf hdr, data;
	uint8_t *h, *o;
	enum tfs_err e;

	if (w->data.n != 1 || w->md.n != 0)
		return tfs__fwd_fail(w, TFS_E_INVALID,
				     "string RLE must be the first filter");
	v = w->data.v[0].data;
	size = w->data.v[0].len;
	str_runs_measure(fc, v, size, &r);
	rl = tfs__bw(r.longest_run);
	sl = tfs__bw(r.longest_str);
	out_size = r.runs * (rl + sl) + r.strsum;
	if (size > UINT32_MAX || out_size > UINT32_MAX ||
	    fc->cell_count > UINT32_MAX / 8)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG,
				     "string tile too large for RLE");
	e = tfs__buf_sized(&hdr, TFS__STR_HEADER_SIZE, &h);
	if (e)
		return e;
	tfs__str_header_put(h, &(struct tfs__str_header){
		.in_size = (uint32_t)size, .out_size = (uint32_t)out_size,
		.off_size = (uint32_t)(fc->cell_count * 8),
		.width = {(uint8_t)rl, (uint8_t)sl}});
	e = tfs__buf_sized(&data, out_size, &o);
	if (e)
		goto out_release;
	str_runs_write(fc, v, size, o, rl, sl);
	e = tfs__parts_prepend(&w->md, &hdr);
	if (!e)
		e = tfs__parts_replace(&w->data, &data);

out_release:
	tfs_buf_release(&hdr);
	tfs_buf_release(&data);
	return e;
}
