/* Tiles too big to decode whole within the memory budget, read chunk by
 * chunk (format/tile.md §1: a filtered tile is a sequence of chunks, each
 * decoded on its own). The tile loader (tile_read.c) says what decoding a
 * tile whole would need and where its persisted bytes are; a chunked tile
 * (tile_chunks.c) then reads its chunk headers, and reads and decodes
 * only the chunks that hold the bytes a reader asks for, one at a time,
 * each charged to the memory accountant while it is held.
 *
 * Only fixed-size data and validity tiles of pipelines that cut chunks
 * (tfs_pipeline_chunked) qualify: a var-size tile needs its offsets and
 * values together, and a tile stored as one chunk gains nothing; those
 * are read whole, or refused when they do not fit. */
#ifndef TFS_TILE_CHUNKS_H
#define TFS_TILE_CHUNKS_H

#include "tfs_filter.h"
#include "tfs_read.h"

/* What decoding one tile of a slot whole takes (tfs_tile_read). */
struct tfs_tile_plan {
	/* What tfs_tile_read charges for it: persisted, decoded and
	 * scratch bytes, validity included. */
	uint64_t need;
	/* Its largest part read or decoded whole (what max_tile_bytes
	 * bounds). */
	uint64_t largest;
	/* Whether tfs_chunked_tile_open can read it instead: a fixed-size
	 * slot whose pipelines (validity's too) cut chunks. */
	bool chunkable;
};

/* Plans tile `tile` of slot `slot` of f (loads the slot's tile offsets
 * once, like tfs_tile_read). Thread-safe. */
enum tfs_err tfs__tile_plan(struct tfs_arraydir *a, struct tfs_fragment *f,
			    uint32_t slot, uint64_t tile,
			    struct tfs_tile_plan *out,
			    struct tfs_diag *d) TFS_WUR;

/* Where one tile of one file of a slot is and how it decodes. */
struct tfs_tile_source {
	const struct tfs_pipeline *filters; /* valid while the array is */
	struct tfs_tile_ctx ctx;
	uint64_t want;  /* bytes it must decode to */
	char *path;     /* the file, owned (tfs__tile_source_release) */
	uint64_t start; /* its persisted bytes in the file */
	uint64_t len;
};

/* Describes tile `tile` of slot's file `kind` (TFS_FILE_FIXED of a
 * fixed-size slot, or TFS_FILE_VALIDITY), its range checked against the
 * fragment's metadata. The array's max_tile_bytes, the most a tile read
 * whole may take, does not apply: it is read a chunk at a time. */
enum tfs_err tfs__tile_source(struct tfs_arraydir *a, struct tfs_fragment *f,
			      uint32_t slot, uint64_t tile,
			      enum tfs_file_kind kind,
			      struct tfs_tile_source *out,
			      struct tfs_diag *d) TFS_WUR;
void tfs__tile_source_release(struct tfs_tile_source *src);
/* Reads len bytes at `off` of the tile's persisted bytes into buf through
 * the array's storage (a missing file is a damaged array). */
enum tfs_err tfs__tile_pread(struct tfs_arraydir *a,
			     const struct tfs_fragment *f,
			     const struct tfs_tile_source *src, uint64_t off,
			     uint8_t *buf, size_t len,
			     struct tfs_diag *d) TFS_WUR;

/* A tile read chunk by chunk: the table of the chunk headers read so far
 * (charged to the memory accountant), nothing decoded. One thread at a
 * time. */
struct tfs_chunked_tile;

enum tfs_err tfs_chunked_tile_open(struct tfs_arraydir *a,
				   struct tfs_fragment *f, uint32_t slot,
				   uint64_t tile, enum tfs_file_kind kind,
				   struct tfs_chunked_tile **out,
				   struct tfs_diag *d) TFS_WUR;
/* tfs_chunked_tile_close accepts NULL. */
void tfs_chunked_tile_close(struct tfs_chunked_tile *ct);

/* Receives decoded bytes [at, at + len) of the tile. */
typedef void (*tfs_chunk_fn)(void *arg, uint64_t at, const uint8_t *bytes,
			     size_t len);

/* Calls fn, in order, with the decoded bytes of every chunk that holds
 * bytes of [from, to) of the decoded tile (to at most its size): a whole
 * chunk when it is filtered (its checksums and tags verified), only the
 * part inside [from, to) when its data are the bytes themselves. Reads
 * from storage only the headers up to the last chunk needed and those
 * chunks' bytes; holds one chunk at a time, charged while held (a charge
 * that does not fit, or is interrupted, fails the walk: TFS_E_NOMEM,
 * TFS_E_INTR). Damage is TFS_E_CORRUPT or TFS_E_CHECKSUM, d naming the
 * fragment, slot, tile and chunk. */
enum tfs_err tfs_chunked_tile_walk(struct tfs_chunked_tile *ct, uint64_t from,
				   uint64_t to, tfs_chunk_fn fn, void *arg,
				   struct tfs_diag *d) TFS_WUR;

#endif
