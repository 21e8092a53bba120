/* Filter pipelines: the serialized filter list of the format, and decoding
 * (and encoding) of filtered tiles chunk by chunk through every filter the
 * format defines (format/filters.md, format/tile.md §1–2). No I/O.
 *
 * All functions are thread-safe; pipelines are plain values. */
#ifndef TFS_FILTER_H
#define TFS_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_bytes.h"
#include "tfs_err.h"

enum tfs_filter_type {
	TFS_FILTER_NONE = 0,
	TFS_FILTER_GZIP = 1,
	TFS_FILTER_ZSTD = 2,
	TFS_FILTER_LZ4 = 3,
	TFS_FILTER_RLE = 4,
	TFS_FILTER_BZIP2 = 5,
	TFS_FILTER_DOUBLE_DELTA = 6,
	TFS_FILTER_BIT_WIDTH_REDUCTION = 7,
	TFS_FILTER_BITSHUFFLE = 8,
	TFS_FILTER_BYTESHUFFLE = 9,
	TFS_FILTER_POSITIVE_DELTA = 10,
	TFS_FILTER_AES256GCM = 11,
	TFS_FILTER_CHECKSUM_MD5 = 12,
	TFS_FILTER_CHECKSUM_SHA256 = 13,
	TFS_FILTER_DICTIONARY = 14,
	TFS_FILTER_SCALE_FLOAT = 15,
	TFS_FILTER_XOR = 16,
	TFS_FILTER_DEPRECATED = 17,
	TFS_FILTER_WEBP = 18,
	TFS_FILTER_DELTA = 19,
};

/* Compressor byte inside compression-family options (filters.md §1). */
enum tfs_compressor {
	TFS_COMP_NONE = 0,
	TFS_COMP_GZIP = 1,
	TFS_COMP_ZSTD = 2,
	TFS_COMP_LZ4 = 3,
	TFS_COMP_RLE = 4,
	TFS_COMP_BZIP2 = 5,
	TFS_COMP_DOUBLE_DELTA = 6,
	TFS_COMP_DICTIONARY = 7,
	TFS_COMP_DELTA = 8,
};

#define TFS_NO_REINTERPRET 17 /* Datatype ANY */

struct tfs_filter {
	uint8_t type; /* enum tfs_filter_type */
	/* compression family (gzip, zstd, lz4, RLE, bzip2, dictionary,
	 * delta, double-delta) */
	uint8_t compressor;
	int32_t level;
	uint8_t reinterpret;   /* delta/double-delta; TFS_NO_REINTERPRET */
	bool has_reinterpret;  /* the option byte was stored */
	/* bit-width reduction, positive delta */
	uint32_t max_window;
	/* float scale */
	double scale;
	double offset;
	uint64_t byte_width;
	/* WebP */
	float webp_quality;
	uint8_t webp_format; /* 1 RGB, 2 BGR, 3 RGBA, 4 BGRA */
	uint8_t webp_lossless;
	uint16_t webp_y_extent;
	uint16_t webp_x_extent;
};

#define TFS_MAX_FILTERS 16

/* A filter list as stored (never includes the implicit AES filter of data
 * pipelines; generic-tile headers do store it). */
struct tfs_pipeline {
	uint32_t max_chunk_size;
	uint32_t count;
	struct tfs_filter filters[TFS_MAX_FILTERS];
};

/* Fills f with TileDB's defaults for a filter of this type: level -1,
 * reinterpret ANY (stored), compressor matching the type, max window 256
 * (bit-width reduction) or 1024 (positive delta), scale 1, offset 0, byte
 * width 8, WebP quality 100 lossless RGB with zero extents. */
void tfs_filter_init(struct tfs_filter *f, enum tfs_filter_type type);
/* An empty list with max_chunk_size 65536. */
void tfs_pipeline_init(struct tfs_pipeline *p);
/* Appends a copy of f; TFS_E_TOO_BIG past TFS_MAX_FILTERS. */
enum tfs_err tfs_pipeline_add(struct tfs_pipeline *p,
			      const struct tfs_filter *f) TFS_WUR;

/* Parses a FilterList at the cursor (filters.md §1). schema_version decides
 * optional option bytes. Unknown/deprecated types, option lengths that do
 * not match the type and more than TFS_MAX_FILTERS filters are errors.
 * A delta/double-delta entry of 6 option bytes has its reinterpret byte
 * read whatever the version (has_reinterpret tells it was there). On
 * failure the cursor is left where it was and out->count is 0. */
enum tfs_err tfs_pipeline_parse(struct tfs_pipeline *out, struct tfs_cursor *c,
				uint32_t schema_version,
				struct tfs_diag *d) TFS_WUR;
/* Appends the serialized FilterList; the reinterpret byte is written for
 * delta from version 19 and double delta from version 20 (ANY when the
 * filter has none). */
enum tfs_err tfs_pipeline_serialize(struct tfs_buf *out,
				    const struct tfs_pipeline *p,
				    uint32_t schema_version) TFS_WUR;
/* Whether filters of this type are of the compression family (filters.md
 * §3): gzip, zstd, LZ4, RLE, bzip2, double delta, dictionary, delta. */
bool tfs_filter_is_compression(unsigned type);
/* True if a filter of this type is in the list; a compression-family
 * filter counts as the type of its compressor byte too. */
bool tfs_pipeline_has(const struct tfs_pipeline *p, enum tfs_filter_type type);
/* Formats one filter as in the corpus JSON: "ZSTD(level=-1)", "XOR",
 * "DELTA(level=-1,reinterpret=ANY)", "SCALE_FLOAT(bytewidth=2,factor=0.01,
 * offset=0)" (integral numbers as plain digits, others with the fewest
 * digits that read back exactly). Compression filters are named after
 * their compressor byte, which decides the algorithm; AES is
 * "AES_256_GCM". TFS_E_INVALID for an invalid filter. */
enum tfs_err tfs_filter_describe(struct tfs_buf *out,
				 const struct tfs_filter *f) TFS_WUR;
/* Canonical upper-case name ("GZIP", "BIT_WIDTH_REDUCTION"), NULL if bad. */
const char *tfs_filter_name(unsigned type);

/* What a tile's decoding depends on besides its bytes. */
struct tfs_tile_ctx {
	uint8_t type;              /* element type given to the first filter */
	uint64_t cell_size;        /* bytes per cell of this buffer (RLE) */
	uint32_t fragment_version; /* date/time rule of BWR/positive delta */
	/* Var-size string values whose offsets are not stored (tile.md §4):
	 * RLE and dictionary run in string mode. */
	bool string_mode;
	/* 32-byte AES-256-GCM key of an encrypted array, or NULL. When set,
	 * data pipelines get the implicit AES filter appended last. */
	const uint8_t *key;
	bool implicit_aes;         /* append AES (data tiles, not generic) */
};

/* Decodes a filtered tile (tile.md §1: chunk count then chunks) into dst,
 * which must come out exactly dst_len bytes (dst may be NULL when dst_len
 * is 0; a tile of 0 chunks decodes to 0 bytes). Checksums and AES tags are
 * verified: mismatch is TFS_E_CHECKSUM; an encrypted tile without a key
 * (or with the wrong one) is TFS_E_KEY; anything malformed, including
 * bytes after the last chunk, is TFS_E_CORRUPT and never read out of
 * bounds; intermediate buffers are capped by the chunks' declared
 * lengths. In string mode only the values are produced. d receives the
 * first failure as "tile chunk N: filter I 'NAME': why". Thread-safe. */
enum tfs_err tfs_tile_decode(const struct tfs_pipeline *p,
			     const struct tfs_tile_ctx *ctx, uint8_t *dst,
			     size_t dst_len, const uint8_t *src, size_t src_len,
			     struct tfs_diag *d) TFS_WUR;

/* The number of bytes a filtered tile decodes to, as its chunk headers
 * declare, after checking that the chunks fill src exactly (else
 * TFS_E_CORRUPT). Readers compare it with the size they expect before
 * allocating the output, so a damaged size costs no memory. */
enum tfs_err tfs_tile_decoded_size(const uint8_t *src, size_t src_len,
				   uint64_t *size, struct tfs_diag *d) TFS_WUR;

/* String mode (ctx->string_mode): decodes a values tile of cell_count
 * strings into values (exactly values_len bytes) and writes each cell's
 * start offset into offsets[cell_count]. A tile of 0 chunks with
 * values_len 0 means every string is empty (all offsets 0). Requires RLE
 * or dictionary as the first filter (else TFS_E_UNSUPPORTED). */
enum tfs_err tfs_tile_decode_strings(const struct tfs_pipeline *p,
				     const struct tfs_tile_ctx *ctx,
				     uint8_t *values, size_t values_len,
				     uint64_t *offsets, uint64_t cell_count,
				     const uint8_t *src, size_t src_len,
				     struct tfs_diag *d) TFS_WUR;

/* ---- Decoding a tile chunk by chunk ----
 *
 * A filtered tile is a sequence of chunks, each run through the whole
 * pipeline on its own (tile.md §1), so a reader that cannot hold a whole
 * decoded tile can read the chunk headers, then read and decode only the
 * chunks that hold the bytes it needs, one at a time. */

/* Bytes of a chunk's header: original, filtered and metadata lengths. */
#define TFS_TILE_CHUNK_HEAD 12u

/* One chunk of a filtered tile, as its header declares it. */
struct tfs_tile_chunk {
	uint64_t at;       /* where its header starts in the persisted tile */
	uint64_t out_at;   /* where its bytes start in the decoded tile */
	uint32_t orig;     /* bytes it decodes to */
	uint32_t md_len;   /* bytes of its metadata */
	uint32_t filtered; /* bytes of its data */
};

/* Bytes of the chunk in the persisted tile: header, metadata, data. */
static inline uint64_t tfs_tile_chunk_size(const struct tfs_tile_chunk *ch)
{
	return TFS_TILE_CHUNK_HEAD + (uint64_t)ch->md_len + ch->filtered;
}

/* Whether a writer cuts tiles filtered through p into chunks (tile.md §2):
 * false when its max_chunk_size is 0 or it holds WebP, whose tiles are one
 * chunk each. (Var-size strings in string mode are one chunk too.) */
bool tfs_pipeline_chunked(const struct tfs_pipeline *p);

/* The chunk count of a persisted tile of tile_len bytes from its first 8
 * bytes (head, head_len of them); TFS_E_CORRUPT when they are missing or
 * the tile cannot hold that many chunk headers. */
enum tfs_err tfs_tile_chunk_count(const uint8_t *head, size_t head_len,
				  uint64_t tile_len, uint64_t *count,
				  struct tfs_diag *d) TFS_WUR;

/* Reads the header of chunk `index` (TFS_TILE_CHUNK_HEAD bytes at head)
 * into out: the chunk starts at byte `at` of a persisted tile of tile_len
 * bytes, its bytes at out_at of a decoded tile of want bytes.
 * TFS_E_CORRUPT when the header is short or the chunk runs past the end of
 * either. */
enum tfs_err tfs_tile_chunk_parse(const uint8_t *head, size_t head_len,
				  uint64_t index, uint64_t at, uint64_t out_at,
				  uint64_t tile_len, uint64_t want,
				  struct tfs_tile_chunk *out,
				  struct tfs_diag *d) TFS_WUR;

/* The table of every chunk of a persisted tile held whole in src (as
 * tfs_tile_decoded_size checks it, no byte left over): *out is an array
 * of *n chunks the caller frees with tfs_free (NULL when there are none),
 * *size the sum of their decoded lengths. */
enum tfs_err tfs_tile_chunks(const uint8_t *src, size_t src_len,
			     struct tfs_tile_chunk **out, uint64_t *n,
			     uint64_t *size, struct tfs_diag *d) TFS_WUR;

/* Decodes chunks one at a time through one pipeline, keeping its scratch
 * buffers from one chunk to the next. Not for string mode (TFS_E_UNSUPPORTED):
 * those tiles are one chunk. One thread at a time. */
struct tfs_chunk_decoder;
enum tfs_err tfs_chunk_decoder_new(const struct tfs_pipeline *p,
				   const struct tfs_tile_ctx *ctx,
				   struct tfs_chunk_decoder **out,
				   struct tfs_diag *d) TFS_WUR;
/* tfs_chunk_decoder_free accepts NULL. */
void tfs_chunk_decoder_free(struct tfs_chunk_decoder *dec);
/* Whether chunks go through any filter (or the array's implicit AES):
 * false when a chunk's data are its decoded bytes themselves, which a
 * reader may then read in part. */
bool tfs_chunk_decoder_filters(const struct tfs_chunk_decoder *dec);
/* The most the decoder holds beside its input and output while it
 * decodes a chunk of `orig` bytes (its two scratch buffers), what a
 * reader charges to the memory accountant for them. */
uint64_t tfs_chunk_decoder_scratch(const struct tfs_chunk_decoder *dec,
				   uint32_t orig);
/* Decodes chunk `index` described by ch into dst (exactly ch->orig bytes,
 * dst_len), src being its persisted bytes (tfs_tile_chunk_size of them,
 * header included: a header that no longer says what ch says is
 * TFS_E_CORRUPT). Checksums and AES tags are verified as in
 * tfs_tile_decode; failures read "tile chunk N: filter I 'NAME': why". */
enum tfs_err tfs_chunk_decoder_run(struct tfs_chunk_decoder *dec,
				   const struct tfs_tile_chunk *ch,
				   uint64_t index, uint8_t *dst, size_t dst_len,
				   const uint8_t *src, size_t src_len,
				   struct tfs_diag *d) TFS_WUR;

/* Decodes chunks [first, first + count) of the persisted tile src (held
 * whole) into dst, exactly the sum of their decoded lengths (dst_len):
 * the same bytes as that part of tfs_tile_decode's output. */
enum tfs_err tfs_tile_decode_chunks(const struct tfs_pipeline *p,
				    const struct tfs_tile_ctx *ctx,
				    uint8_t *dst, size_t dst_len,
				    const uint8_t *src, size_t src_len,
				    uint64_t first, uint64_t count,
				    struct tfs_diag *d) TFS_WUR;

/* Encodes src into a filtered tile appended to out, cutting chunks by the
 * rules of tile.md §2. For var-size values pass the cells' start offsets
 * (cell_offsets[cell_count], increasing from 0) so chunks never split a
 * cell; else NULL. In string mode the offsets are required and are
 * embedded (one chunk). An empty tile is 0 chunks. Filters refuse data
 * they cannot represent: TFS_E_INVALID for lengths that are not whole
 * values of delta/double-delta/RLE/float scale, decreasing values under
 * positive delta, NaN/infinite/subnormal floats under float scale, bad
 * WebP geometry; TFS_E_RANGE when a scaled float does not fit its byte
 * width; TFS_E_KEY without a key for AES. On failure out is unchanged.
 * AES IVs come from RAND_bytes. Lossless WebP keeps the RGB of
 * transparent pixels. Thread-safe. */
enum tfs_err tfs_tile_encode(struct tfs_buf *out, const struct tfs_pipeline *p,
			     const struct tfs_tile_ctx *ctx, const uint8_t *src,
			     size_t src_len, const uint64_t *cell_offsets,
			     uint64_t cell_count, struct tfs_diag *d) TFS_WUR;

#endif
