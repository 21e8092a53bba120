/* Byteshuffle and bitshuffle filters (format/filters.md §5.1, §5.2).
 * Byteshuffle groups byte j of every element together; bitshuffle
 * transposes the bit matrix of 8 elements at a time in blocks of 8192
 * bytes, identical to bshuf_trans_bit_elem of the bitshuffle library. Both
 * write `u32 count` and one `u32 length` per (sub-)part as metadata. */
#include <string.h>

#include "filter_internal.h"
#include "tfs_alloc.h"
#include "tfs_datatype.h"

#define BSHUF_TARGET_BLOCK 8192u
#define BSHUF_MIN_BLOCK 128u

static size_t elem_size(const struct tfs__fctx *fc)
{
	size_t ts = tfs_datatype_size(fc->type);

	return ts ? ts : 1;
}

/* ---- byteshuffle ---- */

static void byte_shuffle(uint8_t *dst, const uint8_t *src, size_t len,
			 size_t ts)
{
	size_t k = len / ts;

	for (size_t j = 0; j < ts; j++) {
		uint8_t *row = dst + j * k;

		for (size_t i = 0; i < k; i++)
			row[i] = src[i * ts + j];
	}
	if (len % ts)
		memcpy(dst + k * ts, src + k * ts, len % ts);
}

static void byte_unshuffle(uint8_t *dst, const uint8_t *src, size_t len,
			   size_t ts)
{
	size_t k = len / ts;

	for (size_t j = 0; j < ts; j++) {
		const uint8_t *row = src + j * k;

		for (size_t i = 0; i < k; i++)
			dst[i * ts + j] = row[i];
	}
	if (len % ts)
		memcpy(dst + k * ts, src + k * ts, len % ts);
}

/* Pass-through filters with a `count, len…` header and one output part:
 * builds the header and the concatenated output of every data part. */
static enum tfs_err lengths_header(struct tfs__fwd *w, const size_t *lens,
				   size_t count)
{
	struct tfs_buf hdr;
	uint8_t *h;
	enum tfs_err e;

	if (count > UINT32_MAX)
		return TFS_E_TOO_BIG;
	e = tfs__buf_sized(&hdr, 4 + 4 * count, &h);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)count);
	for (size_t i = 0; i < count; i++) {
		if (lens[i] > UINT32_MAX) {
			e = TFS_E_TOO_BIG;
			goto out_release;
		}
		tfs_put_u32(h + 4 + 4 * i, (uint32_t)lens[i]);
	}
	e = tfs__parts_prepend(&w->md, &hdr);

out_release:
	tfs_buf_release(&hdr);
	return e;
}

enum tfs_err tfs__byteshuffle_forward(struct tfs__fwd *w,
				      const struct tfs__fctx *fc)
{
	size_t ts = elem_size(fc), total = tfs__parts_total(&w->data), o = 0;
	size_t *lens;
	struct tfs_buf out;
	uint8_t *p;
	enum tfs_err e;

	lens = tfs_mallocn(w->data.n ? w->data.n : 1, sizeof(*lens));
	if (!lens)
		return TFS_E_NOMEM;
	e = tfs__buf_sized(&out, total, &p);
	if (e)
		goto out_release;
	for (size_t i = 0; i < w->data.n; i++) {
		lens[i] = w->data.v[i].len;
		byte_shuffle(p + o, w->data.v[i].data, lens[i], ts);
		o += lens[i];
	}
	e = lengths_header(w, lens, w->data.n);
	if (!e)
		e = tfs__parts_replace(&w->data, &out);

out_release:
	tfs_buf_release(&out);
	tfs_free(lens);
	return e;
}

/* ---- bitshuffle ---- */

/* Transposes an 8x8 bit matrix held as 8 bytes (Hacker's Delight). */
static uint64_t transpose8(uint64_t x)
{
	uint64_t t;

	t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
	x = x ^ t ^ (t << 7);
	t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
	x = x ^ t ^ (t << 14);
	t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
	x = x ^ t ^ (t << 28);
	return x;
}

void tfs__bit_transpose(uint8_t *dst, const uint8_t *src, size_t n, size_t ts)
{
	size_t rowlen = n / 8;

	for (size_t j = 0; j < ts; j++) {
		for (size_t g = 0; g < rowlen; g++) {
			const uint8_t *s = src + 8 * g * ts + j;
			uint64_t x = 0;

			for (unsigned k = 0; k < 8; k++)
				x |= (uint64_t)s[k * ts] << (8 * k);
			x = transpose8(x);
			for (unsigned b = 0; b < 8; b++)
				dst[(8 * j + b) * rowlen + g] =
					(uint8_t)(x >> (8 * b));
		}
	}
}

void tfs__bit_untranspose(uint8_t *dst, const uint8_t *src, size_t n,
			  size_t ts)
{
	size_t rowlen = n / 8;

	for (size_t j = 0; j < ts; j++) {
		for (size_t g = 0; g < rowlen; g++) {
			uint8_t *d = dst + 8 * g * ts + j;
			uint64_t x = 0;

			for (unsigned b = 0; b < 8; b++)
				x |= (uint64_t)src[(8 * j + b) * rowlen + g]
				     << (8 * b);
			x = transpose8(x);
			for (unsigned k = 0; k < 8; k++)
				d[k * ts] = (uint8_t)(x >> (8 * k));
		}
	}
}

/* One sub-part, in blocks like bshuf_blocked_wrapper_fun with the default
 * block size. */
static void bitshuffle_part(uint8_t *dst, const uint8_t *src, size_t len,
			    size_t ts, bool reverse)
{
	size_t n = len / ts, block = BSHUF_TARGET_BLOCK / ts / 8 * 8, done = 0;

	if (len % ts != 0 || len % 8 != 0) {
		memcpy(dst, src, len);
		return;
	}
	if (block < BSHUF_MIN_BLOCK)
		block = BSHUF_MIN_BLOCK;
	while (done < n) {
		size_t m = n - done < block ? n - done : block;
		size_t off = done * ts;

		m -= m % 8;
		if (m == 0)
			break;
		if (reverse)
			tfs__bit_untranspose(dst + off, src + off, m, ts);
		else
			tfs__bit_transpose(dst + off, src + off, m, ts);
		done += m;
	}
	if (done < n)
		memcpy(dst + done * ts, src + done * ts, (n - done) * ts);
}

enum tfs_err tfs__bitshuffle_forward(struct tfs__fwd *w,
				     const struct tfs__fctx *fc)
{
	size_t ts = elem_size(fc), total = tfs__parts_total(&w->data);
	size_t nsub = 0, o = 0;
	size_t *lens;
	struct tfs_buf out;
	uint8_t *p;
	enum tfs_err e;

	/* Each part: a prefix of 8k bytes, then the rest if any. */
	lens = tfs_mallocn(2 * w->data.n + 1, sizeof(*lens));
	if (!lens)
		return TFS_E_NOMEM;
	e = tfs__buf_sized(&out, total, &p);
	if (e)
		goto out_release;
	for (size_t i = 0; i < w->data.n; i++) {
		const uint8_t *src = w->data.v[i].data;
		size_t len = w->data.v[i].len, rem = len % 8;

		lens[nsub++] = len - rem;
		if (len - rem)
			bitshuffle_part(p + o, src, len - rem, ts, false);
		if (rem) {
			lens[nsub++] = rem;
			memcpy(p + o + len - rem, src + len - rem, rem);
		}
		o += len;
	}
	e = lengths_header(w, lens, nsub);
	if (!e)
		e = tfs__parts_replace(&w->data, &out);

out_release:
	tfs_buf_release(&out);
	tfs_free(lens);
	return e;
}

/* ---- both: reading ---- */

/* Every listed part is unshuffled into the same place of the output. */
static enum tfs_err shuffle_reverse(struct tfs__stage *st,
				    const struct tfs__fctx *fc, bool bits)
{
	size_t ts = elem_size(fc), o = 0;
	const uint8_t *lens;
	uint32_t count;
	uint64_t total;
	uint8_t *out;
	enum tfs_err e;

	e = tfs__stage_lengths(st, "part length table truncated", &lens,
			       &count, &total);
	if (e)
		return e;
	if (total > st->in_len)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "shuffled parts exceed the chunk");
	e = tfs__stage_alloc(st, (size_t)total, &out);
	if (e)
		return e;
	for (uint32_t i = 0; i < count; i++) {
		size_t len = tfs_get_u32(lens + 4 * i);

		if (bits)
			bitshuffle_part(out + o, st->in + o, len, ts, true);
		else
			byte_unshuffle(out + o, st->in + o, len, ts);
		o += len;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__byteshuffle_reverse(struct tfs__stage *st,
				      const struct tfs__fctx *fc)
{
	return shuffle_reverse(st, fc, false);
}

enum tfs_err tfs__bitshuffle_reverse(struct tfs__stage *st,
				     const struct tfs__fctx *fc)
{
	return shuffle_reverse(st, fc, true);
}
