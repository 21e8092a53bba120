/* Helpers shared by the filter unit tests: pipelines built from the corpus
 * JSON spelling of filters ("ZSTD(level=-1)"), hand-built tiles, file
 * reading, and an encode/decode round trip that asserts equality. */
#ifndef TFS_TEST_FILTER_UTIL_H
#define TFS_TEST_FILTER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_datatype.h"
#include "tfs_filter.h"

/* Date/time datatypes tfs_datatype.h does not name (schema.md §1). */
enum {
	TU_DATETIME_MS = 25,
	TU_DATETIME_US = 26,
	TU_DATETIME_NS = 27,
	TU_TIME_MS = 34,
};

/* Parses "NAME" or "NAME(k=v,...)"; false on anything unknown. */
bool tu_parse_filter(const char *desc, struct tfs_filter *f);
/* Pipeline of the given descriptions, NULL-terminated; asserts they parse. */
struct tfs_pipeline tu_pipe(const char *first, ...);
/* Same from an array terminated by NULL. */
struct tfs_pipeline tu_pipe_v(const char *const *descs);
/* Context for fixed data of `type` with cells of cell_size bytes (0: type
 * size), fragment version 22, no key. */
struct tfs_tile_ctx tu_ctx(unsigned type, uint64_t cell_size);

/* Hand-built tiles (tile.md §1). */
void tu_tile_begin(struct tfs_buf *b, uint64_t nchunks);
void tu_tile_chunk(struct tfs_buf *b, uint32_t orig, const void *md,
		   size_t md_len, const void *data, size_t data_len);

/* Whole file, or NULL (asserts on failure when must is true). */
uint8_t *tu_read_file(const char *path, size_t *len);
/* Length of the tile starting at pos and the sum of its chunks' original
 * lengths, by walking the chunk headers; false if malformed. */
bool tu_tile_span(const uint8_t *p, size_t len, size_t pos, size_t *tile_len,
		  uint64_t *orig_total);

/* Encodes src, decodes it back and asserts identical bytes. Returns the
 * encoded tile (caller frees with tfs_buf_release). */
struct tfs_buf tu_roundtrip(const struct tfs_pipeline *p,
			    const struct tfs_tile_ctx *ctx, const void *src,
			    size_t len);

/* Deterministic pseudo-random numbers (xorshift64*). */
uint64_t tu_rand(uint64_t *state);

#endif
