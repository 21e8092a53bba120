/* Private interface of the filter module: the per-chunk stage a filter
 * reverses (read direction), the part lists a filter transforms (write
 * direction), and the entry points of every filter and codec file. The
 * model is the one of format/filters.md §2: metadata parts and data parts;
 * on read the chunk metadata is one byte string and each filter, from last
 * to first, reads its own header from the front of it. Nothing here is
 * visible outside core/filter. */
#ifndef TFS_FILTER_INTERNAL_H
#define TFS_FILTER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_bytes.h"
#include "tfs_err.h"
#include "tfs_filter.h"

/* What a filter does: its type byte, or for the compression family its
 * compressor byte (filters.md §1). */
enum tfs__algo {
	TFS__NONE,
	TFS__GZIP,
	TFS__ZSTD,
	TFS__LZ4,
	TFS__RLE,
	TFS__BZIP2,
	TFS__DOUBLE_DELTA,
	TFS__DICTIONARY,
	TFS__DELTA,
	TFS__BIT_WIDTH,
	TFS__BITSHUFFLE,
	TFS__BYTESHUFFLE,
	TFS__POSITIVE_DELTA,
	TFS__AES,
	TFS__MD5,
	TFS__SHA256,
	TFS__SCALE_FLOAT,
	TFS__XOR,
	TFS__WEBP,
	TFS__INVALID,
};

#define TFS__CHUNK_SIZE 65536u  /* tile.md §2: compile-time constant C */
#define TFS__AES_KEY_BYTES 32u
#define TFS__AES_IV_BYTES 12u
#define TFS__AES_TAG_BYTES 16u

unsigned tfs__filter_algo(const struct tfs_filter *f);
/* The reinterpret datatype of delta/double-delta, or TFS_NO_REINTERPRET. */
unsigned tfs__filter_reinterpret(const struct tfs_filter *f);
/* Element type handed to the next filter (filters.md "Element types"). */
unsigned tfs__filter_out_type(const struct tfs_filter *f, unsigned in_type);

/* Codec state reused across the chunks of one call (never shared between
 * threads). */
struct tfs__session {
	void *zstd_dctx;
	void *zstd_cctx;
};

void tfs__session_release(struct tfs__session *s);

/* Everything a filter needs to know besides the bytes. */
struct tfs__fctx {
	const struct tfs_filter *f;
	unsigned algo;             /* enum tfs__algo */
	unsigned type;             /* element type this filter gets on write */
	uint64_t cell_size;        /* tile cell size (fixed-mode RLE) */
	uint32_t fragment_version; /* date/time rule of BWR, positive delta */
	const uint8_t *key;        /* AES-256-GCM key or NULL */
	bool string_mode;          /* RLE/dictionary on strings, first filter */
	/* write direction, string mode: the cells' start offsets */
	const uint64_t *cell_offsets;
	uint64_t cell_count;
	struct tfs__session *session;
};

/* One filter reversed on one chunk. Data views and metadata views live in
 * the chunk bytes (holder -1) or in one of two scratch buffers (holder 0 or
 * 1); a filter writes its output to the scratch buffer that does not hold
 * its input, or to `dst` when it is the first filter of the pipeline. */
struct tfs__stage {
	const uint8_t *in;
	size_t in_len;
	int in_holder;
	struct tfs_cursor md; /* this filter's header at md.pos */
	int md_holder;

	uint8_t *dst; /* non-NULL: exact final destination of dst_len bytes */
	size_t dst_len;
	struct tfs_buf *dscratch; /* [2] */
	struct tfs_buf *mscratch; /* [2] */

	const uint8_t *out;
	size_t out_len;
	int out_holder;

	bool md_set; /* consuming filters replace the metadata */
	const uint8_t *md_out;
	size_t md_out_len;
	int md_out_holder;

	/* string mode: where cell start offsets go (NULL: count only) */
	uint64_t *offsets;
	uint64_t offsets_left; /* cells still expected in the tile */
	uint64_t offsets_base; /* byte offset of this chunk in the tile */
	uint64_t cells;        /* out: cells this chunk decoded to */

	const char *why; /* static explanation of the first failure */
};

/* Reserves exactly n output bytes: the final destination (n must equal its
 * size, else TFS_E_CORRUPT) or a scratch buffer. */
enum tfs_err tfs__stage_alloc(struct tfs__stage *st, size_t n,
			      uint8_t **p) TFS_WUR;
/* Output is the view [p, p+n) of the input (copied into dst when final). */
enum tfs_err tfs__stage_pass(struct tfs__stage *st, const uint8_t *p,
			     size_t n) TFS_WUR;
/* Consuming filters: reserves n bytes for the decoded metadata. */
enum tfs_err tfs__stage_md_alloc(struct tfs__stage *st, size_t n,
				 uint8_t **p) TFS_WUR;
/* Records why (first one wins) and returns e. */
enum tfs_err tfs__stage_fail(struct tfs__stage *st, enum tfs_err e,
			     const char *why);

/* The `u32 count, u32 len…` table the per-part filters keep as metadata
 * (shuffles, XOR, float scale, WebP): *lens points at the count lengths and
 * *total (unless NULL) is their sum. A table that does not fit the metadata
 * fails with `why`. */
enum tfs_err tfs__stage_lengths(struct tfs__stage *st, const char *why,
				const uint8_t **lens, uint32_t *count,
				uint64_t *total) TFS_WUR;

/* The header of the filters that list every metadata and data part
 * (compression, encryption, checksums): `u32 n_md, u32 n_data`, then one
 * row of a fixed size per part, metadata parts first. */
struct tfs__part_table {
	uint32_t n_md;
	uint64_t n; /* n_md + n_data */
	const uint8_t *rows;
};

/* Reads it; fails with why_header when the two counts are missing, with
 * why_rows when the rows do not fit the metadata. */
enum tfs_err tfs__stage_part_table(struct tfs__stage *st, size_t row_size,
				   const char *why_header,
				   const char *why_rows,
				   struct tfs__part_table *t) TFS_WUR;

/* Where a consuming filter decodes its parts to: the first n_md parts one
 * after the other into the new metadata, the others into the data. */
struct tfs__split_out {
	uint8_t *md, *data;
	uint64_t n_md;
};

/* Reserves md_len bytes of metadata and data_len bytes of data output. */
enum tfs_err tfs__stage_alloc_split(struct tfs__stage *st, uint64_t n_md,
				    size_t md_len, size_t data_len,
				    struct tfs__split_out *o) TFS_WUR;

/* Destination of part i, len bytes long (parts are taken in order). */
static inline uint8_t *tfs__split_next(struct tfs__split_out *o, uint64_t i,
				       size_t len)
{
	uint8_t **at = i < o->n_md ? &o->md : &o->data;
	uint8_t *p = *at;

	*at += len;
	return p;
}

/* A list of parts, each an owned buffer (write direction). */
struct tfs__parts {
	struct tfs_buf *v;
	size_t n;
	size_t cap;
};

void tfs__parts_init(struct tfs__parts *ps);
void tfs__parts_release(struct tfs__parts *ps);
/* Takes over b's bytes (b is left empty) as the last / first part. */
enum tfs_err tfs__parts_push(struct tfs__parts *ps, struct tfs_buf *b) TFS_WUR;
enum tfs_err tfs__parts_prepend(struct tfs__parts *ps,
				struct tfs_buf *b) TFS_WUR;
/* Drops every part, then pushes b. */
enum tfs_err tfs__parts_replace(struct tfs__parts *ps,
				struct tfs_buf *b) TFS_WUR;
/* Drops every part, then takes over those of from (left empty). */
void tfs__parts_replace_all(struct tfs__parts *ps, struct tfs__parts *from);
size_t tfs__parts_total(const struct tfs__parts *ps);

/* One filter applied to one chunk. */
struct tfs__fwd {
	struct tfs__parts md;
	struct tfs__parts data;
	const char *why;
};

/* Initializes b (no maximum) with exactly n bytes of room, never a NULL
 * data pointer, len = n; *p points at the bytes. */
enum tfs_err tfs__buf_sized(struct tfs_buf *b, size_t n, uint8_t **p) TFS_WUR;

enum tfs_err tfs__fwd_fail(struct tfs__fwd *w, enum tfs_err e,
			   const char *why);

/* Byte width rule of the string codecs (filters.md §4.4). */
static inline unsigned tfs__bw(uint64_t x)
{
	if (x <= 0xffu)
		return 1;
	if (x <= 0xffffu)
		return 2;
	if (x <= 0xffffffffu)
		return 4;
	return 8;
}

/* Whether a stored integer width is one the format allows. */
static inline bool tfs__width_ok(uint64_t w)
{
	return w == 1 || w == 2 || w == 4 || w == 8;
}

/* Little-endian integer of `width` bytes (1, 2, 4 or 8), sign-extended
 * when is_signed. A switch of plain casts: the value loops of the filters
 * call it per element and it must stay as cheap as a typed load. */
static inline uint64_t tfs__get_int(const void *p, size_t width,
				    bool is_signed)
{
	switch (width) {
	case 1: {
		uint8_t v = *(const uint8_t *)p;

		return is_signed ? (uint64_t)(int64_t)(int8_t)v : v;
	}
	case 2: {
		uint16_t v = tfs_get_u16(p);

		return is_signed ? (uint64_t)(int64_t)(int16_t)v : v;
	}
	case 4: {
		uint32_t v = tfs_get_u32(p);

		return is_signed ? (uint64_t)(int64_t)(int32_t)v : v;
	}
	default:
		return tfs_get_u64(p);
	}
}

/* The header both string codecs start with (filters.md §4.4, §4.5):
 * `u32 n_md (0), u32 n_data (1), u32 in_size, u32 out_size, u32
 * off_size`, then two integer widths. */
#define TFS__STR_HEADER_SIZE 22u

struct tfs__str_header {
	uint32_t in_size;  /* bytes of the strings */
	uint32_t out_size; /* bytes of the encoded data */
	uint32_t off_size; /* 8 per cell */
	uint8_t width[2];  /* RLE: run, string length; dictionary: id, length */
};

/* Reads the header; false when the metadata is too short. */
static inline bool tfs__str_header_get(struct tfs_cursor *md,
				       struct tfs__str_header *h)
{
	uint32_t n_md, n_data;

	return tfs_cur_u32(md, &n_md) && tfs_cur_u32(md, &n_data) &&
	       tfs_cur_u32(md, &h->in_size) && tfs_cur_u32(md, &h->out_size) &&
	       tfs_cur_u32(md, &h->off_size) && tfs_cur_u8(md, &h->width[0]) &&
	       tfs_cur_u8(md, &h->width[1]);
}

/* Writes the header's TFS__STR_HEADER_SIZE bytes at dst. */
static inline void tfs__str_header_put(uint8_t *dst,
				       const struct tfs__str_header *h)
{
	tfs_put_u32(dst, 0);
	tfs_put_u32(dst + 4, 1);
	tfs_put_u32(dst + 8, h->in_size);
	tfs_put_u32(dst + 12, h->out_size);
	tfs_put_u32(dst + 16, h->off_size);
	dst[20] = h->width[0];
	dst[21] = h->width[1];
}

/* Windows of bit width reduction and positive delta (filters.md §5.3,
 * §5.4): max_window bytes of a part rounded down to whole values, at least
 * one value, or the whole part when it is shorter than a value. */
static inline size_t tfs__window_size(size_t part, uint32_t max_window,
				      size_t ts)
{
	size_t m = part < max_window ? part : max_window;
	size_t w = m / ts * ts;

	if (w == 0)
		w = part >= ts ? ts : part;
	return w;
}

/* Integer type T of positive delta (filters.md §5.4): its size in bytes
 * and signedness, 0 when the filter passes the type through. Bit width
 * reduction takes the same types but those of one byte. */
size_t tfs__window_int_type(const struct tfs__fctx *fc, bool *is_signed);
/* Windows the data parts are cut into (each part on its own). */
size_t tfs__window_count(const struct tfs__parts *data, uint32_t max_window,
			 size_t ts);

/* ---- per-part codecs of the compression family (filters.md §3–4) ----
 * Decoders produce exactly dst_len bytes or fail; encoders append. */
enum tfs_err tfs__zlib_decode(uint8_t *dst, size_t dst_len, const uint8_t *src,
			      size_t src_len) TFS_WUR;
enum tfs_err tfs__zlib_encode(struct tfs_buf *out, const uint8_t *src,
			      size_t len, int level) TFS_WUR;
enum tfs_err tfs__zstd_decode(struct tfs__session *s, uint8_t *dst,
			      size_t dst_len, const uint8_t *src,
			      size_t src_len) TFS_WUR;
enum tfs_err tfs__zstd_encode(struct tfs__session *s, struct tfs_buf *out,
			      const uint8_t *src, size_t len,
			      int level) TFS_WUR;
enum tfs_err tfs__lz4_decode(uint8_t *dst, size_t dst_len, const uint8_t *src,
			     size_t src_len) TFS_WUR;
enum tfs_err tfs__lz4_encode(struct tfs_buf *out, const uint8_t *src,
			     size_t len) TFS_WUR;
enum tfs_err tfs__bzip2_decode(uint8_t *dst, size_t dst_len,
			       const uint8_t *src, size_t src_len) TFS_WUR;
enum tfs_err tfs__bzip2_encode(struct tfs_buf *out, const uint8_t *src,
			       size_t len, int level) TFS_WUR;
enum tfs_err tfs__rle_decode(uint8_t *dst, size_t dst_len, const uint8_t *src,
			     size_t src_len, size_t value_size) TFS_WUR;
enum tfs_err tfs__rle_encode(struct tfs_buf *out, const uint8_t *src,
			     size_t len, size_t value_size) TFS_WUR;
/* Integer type T of the delta codecs (filters.md §4.2, §4.3): its size in
 * bytes and signedness; 0 for floats and invalid types. */
size_t tfs__delta_int_type(unsigned type, bool *is_signed);
enum tfs_err tfs__delta_decode(uint8_t *dst, size_t dst_len,
			       const uint8_t *src, size_t src_len,
			       unsigned type) TFS_WUR;
enum tfs_err tfs__delta_encode(struct tfs_buf *out, const uint8_t *src,
			       size_t len, unsigned type) TFS_WUR;
enum tfs_err tfs__dd_decode(uint8_t *dst, size_t dst_len, const uint8_t *src,
			    size_t src_len, unsigned type) TFS_WUR;
enum tfs_err tfs__dd_encode(struct tfs_buf *out, const uint8_t *src,
			    size_t len, unsigned type) TFS_WUR;

/* String mode codecs (filters.md §4.4, §4.5): whole filter. */
enum tfs_err tfs__rle_str_reverse(struct tfs__stage *st,
				  const struct tfs__fctx *fc) TFS_WUR;
enum tfs_err tfs__rle_str_forward(struct tfs__fwd *w,
				  const struct tfs__fctx *fc) TFS_WUR;
enum tfs_err tfs__dict_reverse(struct tfs__stage *st,
			       const struct tfs__fctx *fc) TFS_WUR;
enum tfs_err tfs__dict_forward(struct tfs__fwd *w,
			       const struct tfs__fctx *fc) TFS_WUR;

/* ---- filters ---- */
#define TFS__FILTER_FNS(name)                                               \
	enum tfs_err tfs__##name##_reverse(struct tfs__stage *st,           \
					   const struct tfs__fctx *fc) TFS_WUR; \
	enum tfs_err tfs__##name##_forward(struct tfs__fwd *w,              \
					   const struct tfs__fctx *fc) TFS_WUR;

TFS__FILTER_FNS(compression)
TFS__FILTER_FNS(aes)
TFS__FILTER_FNS(byteshuffle)
TFS__FILTER_FNS(bitshuffle)
TFS__FILTER_FNS(bitwidth)
TFS__FILTER_FNS(posdelta)
TFS__FILTER_FNS(xor)
TFS__FILTER_FNS(scale_float)
TFS__FILTER_FNS(checksum)
TFS__FILTER_FNS(webp)

#undef TFS__FILTER_FNS

/* Bit transposition of bitshuffle (filters.md §5.2), exposed for speed
 * tests: n elements of ts bytes, n a multiple of 8. */
void tfs__bit_transpose(uint8_t *dst, const uint8_t *src, size_t n, size_t ts);
void tfs__bit_untranspose(uint8_t *dst, const uint8_t *src, size_t n,
			  size_t ts);

#endif
