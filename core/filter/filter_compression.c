/* The compression family's common wrapper (format/filters.md §3): a
 * consuming filter that compresses every metadata part and every data part
 * separately and records `n_md, n_data` and each part's original and
 * compressed length. The codec of each part is chosen by the compressor
 * byte; RLE and dictionary on strings replace the wrapper (string mode). */
#include <inttypes.h>

#include "filter_internal.h"

/* Element type the delta codecs work in. */
static unsigned delta_type(const struct tfs__fctx *fc)
{
	unsigned r = tfs__filter_reinterpret(fc->f);

	return r == TFS_NO_REINTERPRET ? fc->type : r;
}

static enum tfs_err decode_part(const struct tfs__fctx *fc, uint8_t *dst,
				size_t dst_len, const uint8_t *src,
				size_t src_len)
{
	switch (fc->algo) {
	case TFS__GZIP:
		return tfs__zlib_decode(dst, dst_len, src, src_len);
	case TFS__ZSTD:
		return tfs__zstd_decode(fc->session, dst, dst_len, src,
					src_len);
	case TFS__LZ4:
		return tfs__lz4_decode(dst, dst_len, src, src_len);
	case TFS__BZIP2:
		return tfs__bzip2_decode(dst, dst_len, src, src_len);
	case TFS__RLE:
		return tfs__rle_decode(dst, dst_len, src, src_len,
				       (size_t)fc->cell_size);
	case TFS__DOUBLE_DELTA:
		return tfs__dd_decode(dst, dst_len, src, src_len,
				      delta_type(fc));
	case TFS__DELTA:
		return tfs__delta_decode(dst, dst_len, src, src_len,
					 delta_type(fc));
	default:
		return TFS_E_UNSUPPORTED;
	}
}

static enum tfs_err encode_part(const struct tfs__fctx *fc, struct tfs_buf *out,
				const uint8_t *src, size_t len)
{
	switch (fc->algo) {
	case TFS__GZIP:
		return tfs__zlib_encode(out, src, len, fc->f->level);
	case TFS__ZSTD:
		return tfs__zstd_encode(fc->session, out, src, len,
					fc->f->level);
	case TFS__LZ4:
		return tfs__lz4_encode(out, src, len);
	case TFS__BZIP2:
		return tfs__bzip2_encode(out, src, len, fc->f->level);
	case TFS__RLE:
		return tfs__rle_encode(out, src, len, (size_t)fc->cell_size);
	case TFS__DOUBLE_DELTA:
		return tfs__dd_encode(out, src, len, delta_type(fc));
	case TFS__DELTA:
		return tfs__delta_encode(out, src, len, delta_type(fc));
	default:
		return TFS_E_UNSUPPORTED;
	}
}

enum tfs_err tfs__compression_reverse(struct tfs__stage *st,
				      const struct tfs__fctx *fc)
{
	struct tfs__part_table t;
	struct tfs__split_out out;
	uint64_t md_total = 0, data_total = 0, comp_total = 0;
	size_t src = 0;
	enum tfs_err e;

	if (fc->string_mode)
		return fc->algo == TFS__RLE ? tfs__rle_str_reverse(st, fc)
					    : tfs__dict_reverse(st, fc);
	if (fc->algo == TFS__DICTIONARY)
		return tfs__stage_fail(st, TFS_E_UNSUPPORTED,
				       "dictionary encoding outside string "
				       "mode");
	e = tfs__stage_part_table(st, 8, "compression header truncated",
				  "compression part table truncated", &t);
	if (e)
		return e;
	for (uint64_t i = 0; i < t.n; i++) {
		uint32_t orig = tfs_get_u32(t.rows + 8 * i);

		if (i < t.n_md)
			md_total += orig;
		else
			data_total += orig;
		comp_total += tfs_get_u32(t.rows + 8 * i + 4);
	}
	if (comp_total > st->in_len)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "compressed parts exceed the chunk");
	e = tfs__stage_alloc_split(st, t.n_md, (size_t)md_total,
				   (size_t)data_total, &out);
	if (e)
		return e;
	for (uint64_t i = 0; i < t.n; i++) {
		uint32_t orig = tfs_get_u32(t.rows + 8 * i);
		uint32_t comp = tfs_get_u32(t.rows + 8 * i + 4);

		e = decode_part(fc, tfs__split_next(&out, i, orig), orig,
				st->in + src, comp);
		if (e)
			return tfs__stage_fail(st, e,
					       e == TFS_E_UNSUPPORTED
						       ? "element type not "
							 "supported by the "
							 "codec"
						       : "compressed part does "
							 "not decode to its "
							 "declared length");
		src += comp;
	}
	return TFS_E_OK;
}

static enum tfs_err compress_parts(const struct tfs__fctx *fc,
				   const struct tfs__parts *ps,
				   struct tfs_buf *out, uint8_t **row)
{
	for (size_t i = 0; i < ps->n; i++) {
		size_t before = out->len, comp;
		enum tfs_err e;

		if (ps->v[i].len > UINT32_MAX)
			return TFS_E_TOO_BIG;
		e = encode_part(fc, out, ps->v[i].data, ps->v[i].len);
		if (e)
			return e;
		comp = out->len - before;
		if (comp > UINT32_MAX)
			return TFS_E_TOO_BIG;
		tfs_put_u32(*row, (uint32_t)ps->v[i].len);
		tfs_put_u32(*row + 4, (uint32_t)comp);
		*row += 8;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__compression_forward(struct tfs__fwd *w,
				      const struct tfs__fctx *fc)
{
	struct tfs_buf hdr, out;
	uint8_t *h, *row;
	size_t nparts = w->md.n + w->data.n;
	enum tfs_err e;

	if (fc->string_mode)
		return fc->algo == TFS__RLE ? tfs__rle_str_forward(w, fc)
					    : tfs__dict_forward(w, fc);
	if (fc->algo == TFS__DICTIONARY)
		return tfs__fwd_fail(w, TFS_E_INVALID,
				     "dictionary encoding outside string "
				     "mode");
	if (w->md.n > UINT32_MAX || w->data.n > UINT32_MAX)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG, "too many parts");
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	e = tfs__buf_sized(&hdr, 8 + 8 * nparts, &h);
	if (e)
		goto out_release;
	e = tfs_buf_reserve(&out, 1);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)w->md.n);
	tfs_put_u32(h + 4, (uint32_t)w->data.n);
	row = h + 8;
	e = compress_parts(fc, &w->md, &out, &row);
	if (!e)
		e = compress_parts(fc, &w->data, &out, &row);
	if (e) {
		tfs__fwd_fail(w, e,
			      e == TFS_E_INVALID
				      ? "part length is not a multiple of the "
					"value size"
				      : "compression failed");
		goto out_release;
	}
	e = tfs__parts_replace(&w->md, &hdr);
	if (!e)
		e = tfs__parts_replace(&w->data, &out);

out_release:
	tfs_buf_release(&hdr);
	tfs_buf_release(&out);
	return e;
}
