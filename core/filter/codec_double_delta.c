/* Double-delta filter codec (format/filters.md §4.2): `u8 bitsize`, `u64
 * n`, then either the raw values or the first two values and, for every
 * later value, a sign bit and |delta of deltas| in `bitsize` bits, packed
 * most significant bit first into little-endian 64-bit words. */
#include <string.h>

#include "filter_internal.h"

/* Reads the bit stream: words are loaded only when a bit of them is
 * needed, which is exactly what a writer stores. */
struct bit_reader {
	const uint8_t *p;
	size_t len;
	size_t pos;
	uint64_t word;
	int bit; /* next bit of word, 63 = MSB; -1 = load the next word */
};

static bool get_bits(struct bit_reader *r, unsigned n, uint64_t *out)
{
	uint64_t v = 0;

	while (n) {
		unsigned avail, take;
		uint64_t part;

		if (r->bit < 0) {
			if (r->len - r->pos < 8)
				return false;
			r->word = tfs_get_u64(r->p + r->pos);
			r->pos += 8;
			r->bit = 63;
		}
		avail = (unsigned)r->bit + 1;
		take = n < avail ? n : avail;
		part = r->word >> (avail - take);
		if (take < 64) {
			part &= (UINT64_C(1) << take) - 1;
			v = (v << take) | part;
		} else {
			v = part;
		}
		r->bit -= (int)take;
		n -= take;
	}
	*out = v;
	return true;
}

enum tfs_err tfs__dd_decode(uint8_t *dst, size_t dst_len, const uint8_t *src,
			    size_t src_len, unsigned type)
{
	bool is_signed;
	size_t ts = tfs__delta_int_type(type, &is_signed);
	struct bit_reader r;
	unsigned bitsize;
	uint64_t n, prev2, prev1;

	if (ts == 0)
		return TFS_E_UNSUPPORTED;
	if (dst_len == 0)
		return TFS_E_OK;
	if (src_len < 9)
		return TFS_E_CORRUPT;
	bitsize = src[0];
	n = tfs_get_u64(src + 1);
	src += 9;
	src_len -= 9;
	if (dst_len % ts != 0 || n != dst_len / ts)
		return TFS_E_CORRUPT;
	if (bitsize >= 8 * ts - 1) {
		if (src_len < dst_len)
			return TFS_E_CORRUPT;
		memcpy(dst, src, dst_len);
		return TFS_E_OK;
	}
	if (src_len < (n >= 2 ? 2 : 1) * ts)
		return TFS_E_CORRUPT;
	memcpy(dst, src, n >= 2 ? 2 * ts : ts);
	if (n <= 2)
		return TFS_E_OK;
	prev2 = tfs__get_int(src, ts, is_signed);
	prev1 = tfs__get_int(src + ts, ts, is_signed);
	r.p = src + 2 * ts;
	r.len = src_len - 2 * ts;
	r.pos = 0;
	r.word = 0;
	r.bit = -1;
	for (uint64_t i = 2; i < n; i++) {
		uint64_t sign, mag, v;

		if (!get_bits(&r, 1, &sign) || !get_bits(&r, bitsize, &mag))
			return TFS_E_CORRUPT;
		/* v = dd + 2·v[i-1] − v[i-2], wrapping like TileDB's int64. */
		v = (sign ? 0 - mag : mag) + 2 * prev1 - prev2;
		tfs_put_uint(dst + i * ts, ts, v);
		prev2 = prev1;
		prev1 = v;
	}
	return TFS_E_OK;
}

struct bit_writer {
	struct tfs_buf *out;
	uint64_t word;
	int bit; /* next free bit, 63 = MSB */
};

static enum tfs_err flush_word(struct bit_writer *w)
{
	enum tfs_err e = tfs_buf_append_u64(w->out, w->word);

	w->word = 0;
	w->bit = 63;
	return e;
}

static enum tfs_err put_bits(struct bit_writer *w, unsigned n, uint64_t v)
{
	while (n) {
		unsigned avail = (unsigned)w->bit + 1;
		unsigned take = n < avail ? n : avail;
		uint64_t part = v >> (n - take);

		if (take < 64)
			part &= (UINT64_C(1) << take) - 1;
		w->word |= part << (avail - take);
		w->bit -= (int)take;
		n -= take;
		if (w->bit < 0) {
			enum tfs_err e = flush_word(w);

			if (e)
				return e;
		}
	}
	return TFS_E_OK;
}

static uint64_t abs64(uint64_t x)
{
	return (int64_t)x < 0 ? 0 - x : x;
}

enum tfs_err tfs__dd_encode(struct tfs_buf *out, const uint8_t *src,
			    size_t len, unsigned type)
{
	bool is_signed;
	size_t ts = tfs__delta_int_type(type, &is_signed);
	size_t n;
	unsigned bitsize = 0;
	struct bit_writer w;
	enum tfs_err e;

	if (ts == 0 || len % ts != 0)
		return TFS_E_INVALID;
	n = len / ts;
	if (n > 2) {
		/* The first delta counts too (filters.md §4.2). */
		uint64_t d1 = tfs__get_int(src + ts, ts, is_signed) -
			      tfs__get_int(src, ts, is_signed);
		uint64_t m = abs64(d1), prev = d1;

		for (size_t i = 2; i < n; i++) {
			uint64_t d =
				tfs__get_int(src + i * ts, ts, is_signed) -
				tfs__get_int(src + (i - 1) * ts, ts, is_signed);
			uint64_t a = abs64(d - prev);

			if (a > m)
				m = a;
			prev = d;
		}
		do {
			bitsize++;
			m >>= 1;
		} while (m);
	}
	e = tfs_buf_append_u8(out, (uint8_t)bitsize);
	if (!e)
		e = tfs_buf_append_u64(out, n);
	if (e)
		return e;
	if (bitsize >= 8 * ts - 1)
		return tfs_buf_append(out, src, len);
	e = tfs_buf_append(out, src, n >= 2 ? 2 * ts : n * ts);
	if (e || n <= 2)
		return e;
	w.out = out;
	w.word = 0;
	w.bit = 63;
	{
		uint64_t prev = tfs__get_int(src + ts, ts, is_signed) -
				tfs__get_int(src, ts, is_signed);

		for (size_t i = 2; !e && i < n; i++) {
			uint64_t d =
				tfs__get_int(src + i * ts, ts, is_signed) -
				tfs__get_int(src + (i - 1) * ts, ts, is_signed);
			uint64_t dd = d - prev;

			e = put_bits(&w, 1, (int64_t)dd < 0);
			if (!e)
				e = put_bits(&w, bitsize, abs64(dd));
			prev = d;
		}
	}
	if (!e && w.bit < 63)
		e = flush_word(&w);
	return e;
}
