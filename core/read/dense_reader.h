/* What the files of the dense reader share: dense.c (batches, output,
 * the reader's entry points), dense_plan.c (which fragments and tiles
 * each space tile of a batch needs) and dense_sparse.c (cells of sparse
 * fragments laid over a batch). */
#ifndef TFS_DENSE_READER_H
#define TFS_DENSE_READER_H

#include "tfs_read.h"
#include "tile_chunks.h"

#include <assert.h>
#include <string.h>

#include "tfs_alloc.h"

#define MAX_DIMS 32
/* Decoded bytes a batch aims for: two batches are in memory at a time. */
#define BATCH_BYTES ((uint64_t)32 << 20)

struct frag_box {
	struct tfs_fragment *f;
	uint32_t index; /* fragment index: larger is newer */
	uint64_t lo[MAX_DIMS], hi[MAX_DIMS]; /* NED, rel */
	uint64_t tlo[MAX_DIMS];              /* first tile index per dim */
	uint64_t tstride[MAX_DIMS];          /* tile-number strides */
	int32_t *slot_of_field;              /* per field: slot or -1 */
};

struct decode_job {
	struct tfs_job job;
	struct tfs_arraydir *dir;
	struct tfs_fragment *f;
	uint32_t slot;
	uint64_t tile_no;
	struct tfs_tile tile;
	/* The tile is too big to decode whole within the memory budget:
	 * nothing decoded, its cells are read chunk by chunk when the batch
	 * is copied (tile_chunks.h). */
	bool chunked;
	enum tfs_err err;
	struct tfs_diag diag;
};

/* A tile read chunk by chunk, kept open while batches read its rows. */
struct big_tile {
	struct tfs_fragment *f;
	uint32_t slot;
	uint64_t tile_no;
	uint64_t tile_row; /* its space tile along dimension 0 */
	struct tfs_chunked_tile *data;
	struct tfs_chunked_tile *validity; /* NULL: not needed or stored */
};

/* One fragment's contribution to one space tile of a batch. */
struct copy_step {
	uint32_t frag;          /* index into reader->frags */
	uint64_t k[MAX_DIMS];   /* space tile */
	size_t first_job;       /* jobs of its fields, in field order */
};

struct batch {
	uint64_t row_lo, row_hi; /* rel, dimension 0 */
	uint64_t cells;
	bool needs_fill; /* some cell may be written by no fragment */
	struct decode_job *jobs;
	size_t job_num;
	struct copy_step *steps;
	size_t step_num;
	size_t step_cap;
	/* Tiles of sparse fragments, alive until the batch is emitted. */
	struct tfs_tile *sparse_tiles;
	size_t sparse_tile_num;
	size_t sparse_tile_cap;
};

struct var_ref {
	const uint8_t *p;
	uint64_t len;
};

struct dense_reader {
	uint32_t dim_num;
	uint8_t dtype;
	uint64_t dom_lo_raw[MAX_DIMS];
	uint64_t ext[MAX_DIMS];
	uint64_t sub_lo[MAX_DIMS], sub_hi[MAX_DIMS]; /* rel */
	uint64_t cell_stride[MAX_DIMS];              /* cell order in a tile */
	uint32_t fast_dim; /* the dimension along which a tile's cells follow */
	uint64_t tile_cells;
	uint8_t tile_order;
	struct frag_box *frags; /* visible dense fragments, oldest first */
	size_t frag_num;
	/* Sparse fragments of a dense array (legacy writes, read.md §4). */
	struct frag_box *sparse;
	size_t sparse_num;
	uint32_t *winner; /* per batch cell: 1 + index of the last writer */
	uint64_t next_row;      /* first row of the next batch to plan */
	bool planned_all;       /* the last batch has been planned */
	uint64_t rows_per_batch_tiles; /* tile rows per batch */
	/* Rows per batch when a batch is less than a tile row (tiles read
	 * chunk by chunk, row-major inside), else 0. */
	uint64_t rows_per_batch;
	struct big_tile *big; /* tiles read chunk by chunk */
	size_t big_num, big_cap;
	struct batch *cur, *ahead;
	struct var_ref **refs;  /* per var field, one batch of cells */
	size_t refs_cap;
};

static inline uint64_t tfs__min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t tfs__max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* A coordinate as the unsigned bits of its value (dimension types are
 * integers here), so that subtracting the domain's low bound gives "rel". */
static inline uint64_t tfs__dense_raw_u64(uint8_t type, const uint8_t *p)
{
	if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED)
		return tfs_value_as_u64(type, p);
	return (uint64_t)tfs_value_as_i64(type, p);
}

/* Coordinate p of dimension d as an offset from the domain's low bound. */
static inline uint64_t tfs__dense_rel_of(const struct dense_reader *r,
					 uint32_t d, const uint8_t *p)
{
	return tfs__dense_raw_u64(r->dtype, p) - r->dom_lo_raw[d];
}

/* dense_plan.c */
enum tfs_err tfs__dense_plan_batch(struct dense_reader *r, struct tfs_query *q,
				   struct batch **out);

/* dense_sparse.c */
enum tfs_err tfs__dense_apply_sparse(struct dense_reader *r, struct tfs_query *q,
				     struct batch *b, struct tfs_diag *d);

#endif
