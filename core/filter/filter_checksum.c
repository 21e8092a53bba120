/* MD5 and SHA-256 checksum filters (format/filters.md §5.7): the header
 * lists every metadata and data part with its length and digest; the
 * metadata parts follow unchanged and the data passes through. Digests are
 * verified on read (mismatch: TFS_E_CHECKSUM). */
#include <openssl/evp.h>
#include <string.h>

#include "filter_internal.h"

static const EVP_MD *digest_of(const struct tfs__fctx *fc, size_t *len)
{
	if (fc->algo == TFS__MD5) {
		*len = 16;
		return EVP_md5();
	}
	*len = 32;
	return EVP_sha256();
}

static enum tfs_err digest(const EVP_MD *md, const uint8_t *p, size_t n,
			   uint8_t *out)
{
	static const uint8_t empty[1];

	return EVP_Digest(n ? p : empty, n, out, NULL, md, NULL) == 1
		       ? TFS_E_OK
		       : TFS_E_INTERNAL;
}

enum tfs_err tfs__checksum_reverse(struct tfs__stage *st,
				   const struct tfs__fctx *fc)
{
	size_t dlen, entry, md_pos, data_pos = 0;
	const EVP_MD *md = digest_of(fc, &dlen);
	struct tfs__part_table t;
	enum tfs_err e;

	entry = 8 + dlen;
	e = tfs__stage_part_table(st, entry, "checksum header truncated",
				  "checksum part table truncated", &t);
	if (e)
		return e;
	/* The metadata parts are what follows the header (left in place
	 * for the previous filter); the data parts are the data. */
	md_pos = st->md.pos;
	for (uint64_t i = 0; i < t.n; i++) {
		const uint8_t *row = t.rows + entry * i;
		uint64_t len = tfs_get_u64(row);
		uint8_t got[32];
		const uint8_t *p;

		if (i < t.n_md) {
			if (len > st->md.len - md_pos)
				return tfs__stage_fail(st, TFS_E_CORRUPT,
						       "checksummed metadata "
						       "exceeds the chunk");
			p = st->md.p + md_pos;
			md_pos += (size_t)len;
		} else {
			if (len > st->in_len - data_pos)
				return tfs__stage_fail(st, TFS_E_CORRUPT,
						       "checksummed data "
						       "exceeds the chunk");
			p = st->in + data_pos;
			data_pos += (size_t)len;
		}
		e = digest(md, p, (size_t)len, got);
		if (e)
			return e;
		if (memcmp(got, row + 8, dlen) != 0)
			return tfs__stage_fail(st, TFS_E_CHECKSUM,
					       i < t.n_md ? "metadata checksum "
							  "mismatch"
							: "data checksum "
							  "mismatch");
	}
	return tfs__stage_pass(st, st->in, st->in_len);
}

static enum tfs_err digest_parts(const EVP_MD *md, size_t dlen,
				 const struct tfs__parts *ps, uint8_t **row)
{
	for (size_t i = 0; i < ps->n; i++) {
		enum tfs_err e;

		tfs_put_u64(*row, ps->v[i].len);
		e = digest(md, ps->v[i].data, ps->v[i].len, *row + 8);
		if (e)
			return e;
		*row += 8 + dlen;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__checksum_forward(struct tfs__fwd *w,
				   const struct tfs__fctx *fc)
{
	size_t dlen;
	const EVP_MD *md = digest_of(fc, &dlen);
	struct tfs_buf hdr;
	uint8_t *h, *row;
	enum tfs_err e;

	if (w->md.n > UINT32_MAX || w->data.n > UINT32_MAX)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG, "too many parts");
	e = tfs__buf_sized(&hdr, 8 + (8 + dlen) * (w->md.n + w->data.n), &h);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)w->md.n);
	tfs_put_u32(h + 4, (uint32_t)w->data.n);
	row = h + 8;
	e = digest_parts(md, dlen, &w->md, &row);
	if (!e)
		e = digest_parts(md, dlen, &w->data, &row);
	if (!e)
		e = tfs__parts_prepend(&w->md, &hdr);

out_release:
	tfs_buf_release(&hdr);
	return e;
}
