/* WebP filter (format/filters.md §5.8): a whole tile of a 2-D uint8
 * attribute is one image of y_extent rows of x_extent bytes (RGB, BGR,
 * RGBA or BGRA pixels), encoded lossless or lossy with libwebp. The
 * encoder follows libwebp's simple API except that lossless images keep
 * the RGB of fully transparent pixels (config.exact). */
#include <webp/decode.h>
#include <webp/encode.h>

#include <string.h>

#include "filter_internal.h"

static int pixel_depth(unsigned format)
{
	switch (format) {
	case 1:
	case 2:
		return 3;
	case 3:
	case 4:
		return 4;
	default:
		return 0;
	}
}

static uint8_t *decode_into(unsigned format, const uint8_t *src, size_t len,
			    uint8_t *dst, size_t size, int stride)
{
	switch (format) {
	case 1:
		return WebPDecodeRGBInto(src, len, dst, size, stride);
	case 2:
		return WebPDecodeBGRInto(src, len, dst, size, stride);
	case 3:
		return WebPDecodeRGBAInto(src, len, dst, size, stride);
	default:
		return WebPDecodeBGRAInto(src, len, dst, size, stride);
	}
}

enum tfs_err tfs__webp_reverse(struct tfs__stage *st,
			       const struct tfs__fctx *fc)
{
	int depth = pixel_depth(fc->f->webp_format);
	uint32_t count;
	const uint8_t *lens;
	uint64_t in_total = 0, out_total = 0;
	size_t in = 0, o = 0;
	uint8_t *out;
	enum tfs_err e;

	if (!depth)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "WebP filter without a pixel format");
	e = tfs__stage_lengths(st, "WebP header truncated", &lens, &count,
			       NULL);
	if (e)
		return e;
	for (uint32_t i = 0; i < count; i++) {
		size_t len = tfs_get_u32(lens + 4 * i);
		int width, height;

		if (len > st->in_len - in_total)
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "WebP images exceed the chunk");
		if (!WebPGetInfo(st->in + in_total, len, &width, &height))
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "not a WebP image");
		in_total += len;
		out_total += (uint64_t)width * (uint64_t)height *
			     (uint64_t)depth;
	}
	e = tfs__stage_alloc(st, (size_t)out_total, &out);
	if (e)
		return e;
	for (uint32_t i = 0; i < count; i++) {
		size_t len = tfs_get_u32(lens + 4 * i), size;
		int width = 0, height = 0;

		if (!WebPGetInfo(st->in + in, len, &width, &height))
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "not a WebP image");
		size = (size_t)width * (size_t)height * (size_t)depth;
		if (!decode_into(fc->f->webp_format, st->in + in, len, out + o,
				 size, width * depth))
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "WebP image does not decode");
		in += len;
		o += size;
	}
	return TFS_E_OK;
}

/* libwebp's simple API (WebPEncode[Lossless]RGB…) with one change:
 * lossless images keep the exact RGB values under transparent pixels, so
 * lossless really round-trips RGBA/BGRA tiles. Returns the encoded size
 * (0 on failure) and the bytes in *res (free with WebPFree). */
static size_t encode_image(const struct tfs_filter *f, const uint8_t *src,
			   int width, int height, int stride, uint8_t **res)
{
	WebPConfig config;
	WebPPicture pic;
	WebPMemoryWriter wrt;
	int ok;

	*res = NULL;
	if (!WebPConfigPreset(&config, WEBP_PRESET_DEFAULT, f->webp_quality) ||
	    !WebPPictureInit(&pic))
		return 0;
	config.lossless = f->webp_lossless ? 1 : 0;
	config.exact = f->webp_lossless ? 1 : 0;
	pic.use_argb = config.lossless;
	pic.width = width;
	pic.height = height;
	pic.writer = WebPMemoryWrite;
	pic.custom_ptr = &wrt;
	WebPMemoryWriterInit(&wrt);
	switch (f->webp_format) {
	case 1:
		ok = WebPPictureImportRGB(&pic, src, stride);
		break;
	case 2:
		ok = WebPPictureImportBGR(&pic, src, stride);
		break;
	case 3:
		ok = WebPPictureImportRGBA(&pic, src, stride);
		break;
	default:
		ok = WebPPictureImportBGRA(&pic, src, stride);
		break;
	}
	ok = ok && WebPEncode(&config, &pic);
	WebPPictureFree(&pic);
	if (!ok) {
		WebPMemoryWriterClear(&wrt);
		return 0;
	}
	*res = wrt.mem;
	return wrt.size;
}

enum tfs_err tfs__webp_forward(struct tfs__fwd *w, const struct tfs__fctx *fc)
{
	const struct tfs_filter *f = fc->f;
	int depth = pixel_depth(f->webp_format);
	int height = f->webp_y_extent, stride = f->webp_x_extent;
	struct tfs_buf hdr;
	struct tfs__parts outs;
	uint8_t *h;
	enum tfs_err e;

	if (!depth || height == 0 || stride == 0 || stride % depth != 0 ||
	    stride / depth > WEBP_MAX_DIMENSION || height > WEBP_MAX_DIMENSION ||
	    f->webp_quality < 0.0f || f->webp_quality > 100.0f)
		return tfs__fwd_fail(w, TFS_E_INVALID, "bad WebP options");
	if (w->data.n > UINT32_MAX)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG, "too many parts");
	tfs__parts_init(&outs);
	e = tfs__buf_sized(&hdr, 4 + 4 * w->data.n, &h);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)w->data.n);
	for (size_t i = 0; i < w->data.n; i++) {
		uint8_t *res = NULL, *p;
		size_t n;
		struct tfs_buf part;

		if (w->data.v[i].len != (size_t)height * (size_t)stride) {
			e = tfs__fwd_fail(w, TFS_E_INVALID,
					  "tile is not y_extent x x_extent "
					  "bytes");
			goto out_release;
		}
		n = encode_image(f, w->data.v[i].data, stride / depth, height,
				 stride, &res);
		if (n == 0 || n > UINT32_MAX) {
			WebPFree(res);
			e = tfs__fwd_fail(w, TFS_E_INTERNAL,
					  "WebP encoding failed");
			goto out_release;
		}
		tfs_put_u32(h + 4 + 4 * i, (uint32_t)n);
		e = tfs__buf_sized(&part, n, &p);
		if (!e) {
			memcpy(p, res, n);
			e = tfs__parts_push(&outs, &part);
		}
		WebPFree(res);
		tfs_buf_release(&part);
		if (e)
			goto out_release;
	}
	e = tfs__parts_prepend(&w->md, &hdr);
	if (!e)
		tfs__parts_replace_all(&w->data, &outs);

out_release:
	tfs_buf_release(&hdr);
	tfs__parts_release(&outs);
	return e;
}
