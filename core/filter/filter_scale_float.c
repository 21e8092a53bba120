/* Float scale filter (format/filters.md §5.6): floats (element size 4 or
 * 8) stored as signed integers of byte_width bytes, round((x - offset) /
 * scale) computed in the float type. Lossy. Decoding converts the integer
 * to the float type first, then computes scale * x + offset in double, as
 * TileDB's FloatScalingFilter::run_reverse does. */
#include <math.h>
#include <string.h>

#include "filter_internal.h"
#include "tfs_datatype.h"

static void decode_value(uint8_t *dst, size_t ts, int64_t w, double scale,
			 double offset)
{
	if (ts == 4) {
		float e = (float)w;
		float r = (float)(scale * (double)e + offset);
		uint32_t bits;

		memcpy(&bits, &r, 4);
		tfs_put_u32(dst, bits);
	} else {
		double e = (double)w;
		double r = scale * e + offset;
		uint64_t bits;

		memcpy(&bits, &r, 8);
		tfs_put_u64(dst, bits);
	}
}

enum tfs_err tfs__scale_float_reverse(struct tfs__stage *st,
				      const struct tfs__fctx *fc)
{
	size_t ts = tfs_datatype_size(fc->type), bw, in = 0, o = 0;
	uint32_t count;
	const uint8_t *lens;
	uint64_t in_total, out_total = 0;
	uint8_t *out;
	enum tfs_err e;

	if (ts != 4 && ts != 8)
		return tfs__stage_fail(st, TFS_E_UNSUPPORTED,
				       "float scale on a type that is not 4 or "
				       "8 bytes");
	if (!tfs__width_ok(fc->f->byte_width))
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "float scale byte width not 1, 2, 4 or "
				       "8");
	bw = (size_t)fc->f->byte_width;
	e = tfs__stage_lengths(st, "float scale header truncated", &lens,
			       &count, &in_total);
	if (e)
		return e;
	for (uint32_t i = 0; i < count; i++)
		out_total += (uint64_t)(tfs_get_u32(lens + 4 * i) / bw) * ts;
	if (in_total > st->in_len)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "float scale parts exceed the chunk");
	e = tfs__stage_alloc(st, (size_t)out_total, &out);
	if (e)
		return e;
	for (uint32_t i = 0; i < count; i++) {
		size_t len = tfs_get_u32(lens + 4 * i), n = len / bw;

		for (size_t k = 0; k < n; k++) {
			int64_t v = (int64_t)tfs__get_int(st->in + in + k * bw,
							  bw, true);

			decode_value(out + o, ts, v, fc->f->scale,
				     fc->f->offset);
			o += ts;
		}
		in += len;
	}
	return TFS_E_OK;
}

/* One value; TFS_E_INVALID for NaN, infinities and subnormals (TileDB
 * refuses them), TFS_E_RANGE when the integer does not fit. */
static enum tfs_err encode_value(uint8_t *dst, size_t bw, const uint8_t *src,
				 size_t ts, double scale, double offset)
{
	double r, lim = ldexp(1.0, (int)(8 * bw - 1));
	int cls;

	if (ts == 4) {
		uint32_t bits = tfs_get_u32(src);
		float x;

		memcpy(&x, &bits, 4);
		cls = fpclassify(x);
		r = (double)roundf((x - (float)offset) / (float)scale);
	} else {
		uint64_t bits = tfs_get_u64(src);
		double x;

		memcpy(&x, &bits, 8);
		cls = fpclassify(x);
		r = round((x - offset) / scale);
	}
	if (cls == FP_NAN || cls == FP_INFINITE || cls == FP_SUBNORMAL)
		return TFS_E_INVALID;
	if (!(r >= -lim && r < lim))
		return TFS_E_RANGE;
	tfs_put_uint(dst, bw, (uint64_t)(int64_t)r);
	return TFS_E_OK;
}

enum tfs_err tfs__scale_float_forward(struct tfs__fwd *w,
				      const struct tfs__fctx *fc)
{
	size_t ts = tfs_datatype_size(fc->type), bw;
	struct tfs_buf hdr;
	struct tfs__parts outs;
	uint8_t *h;
	enum tfs_err e;

	if (ts != 4 && ts != 8)
		return tfs__fwd_fail(w, TFS_E_INVALID,
				     "float scale on a type that is not 4 or 8 "
				     "bytes");
	if (!tfs__width_ok(fc->f->byte_width) || !isfinite(fc->f->scale) ||
	    fc->f->scale == 0 || !isfinite(fc->f->offset))
		return tfs__fwd_fail(w, TFS_E_INVALID,
				     "bad float scale options");
	if (w->data.n > UINT32_MAX)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG, "too many parts");
	bw = (size_t)fc->f->byte_width;
	tfs__parts_init(&outs);
	e = tfs__buf_sized(&hdr, 4 + 4 * w->data.n, &h);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)w->data.n);
	for (size_t i = 0; i < w->data.n; i++) {
		const uint8_t *src = w->data.v[i].data;
		size_t len = w->data.v[i].len, n = len / ts;
		struct tfs_buf part;
		uint8_t *p;

		if (len % ts != 0 || n * bw > UINT32_MAX) {
			e = tfs__fwd_fail(w, TFS_E_INVALID,
					  "part is not whole floats");
			goto out_release;
		}
		tfs_put_u32(h + 4 + 4 * i, (uint32_t)(n * bw));
		e = tfs__buf_sized(&part, n * bw, &p);
		for (size_t k = 0; !e && k < n; k++)
			e = encode_value(p + k * bw, bw, src + k * ts, ts,
					 fc->f->scale, fc->f->offset);
		if (!e)
			e = tfs__parts_push(&outs, &part);
		tfs_buf_release(&part);
		if (e) {
			tfs__fwd_fail(w, e,
				      e == TFS_E_RANGE
					      ? "scaled value does not fit the "
						"byte width"
					      : "NaN, infinite or subnormal "
						"value");
			goto out_release;
		}
	}
	e = tfs__parts_prepend(&w->md, &hdr);
	if (!e)
		tfs__parts_replace_all(&w->data, &outs);

out_release:
	tfs_buf_release(&hdr);
	tfs__parts_release(&outs);
	return e;
}
