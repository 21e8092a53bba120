/* Internals of the read engine shared by the public API (api.c), the tile
 * loader (tile_read.c), the dense reader (dense.c) and the sparse reader
 * (sparse.c). Not installed; fs/ and tools/ use <tilefs/tilefs.h> only. */
#ifndef TFS_READ_H
#define TFS_READ_H

#include <inttypes.h>

#include "tfs_buf.h"
#include "tfs_fragment.h"
#include "tfs_pool.h"
#include "tilefs/tilefs.h"

struct tfs_array {
	struct tfs_vfs *vfs;
	bool own_vfs;
	struct tfs_arraydir *dir;
	struct tfs_pool *pool;
	bool own_pool; /* false: shared through tfs_open_opts.pool */
	/* Non-empty domain over the visible fragments (views into ned_bytes). */
	bool has_ned;
	struct tfs_range *ned;
	uint8_t *ned_bytes;
	size_t *enum_order; /* enumerations sorted by name */
	char **label_paths; /* schema->label_num entries, each may be NULL */
	/* Per listed fragment (dir->listed order): whether the time window
	 * sees it, so that tfs_array_fragment costs O(1). */
	bool *listed_visible;
};

/* ---- Decoded tiles --------------------------------------------------- */

/* One decoded tile of one slot of one fragment. Fixed-size fields fill
 * `fixed` (cell_num × cell_size); var-size fields fill `offsets`
 * (cell_num + 1 entries, the last = var_len) and `var`; nullable fields
 * also `validity` (cell_num bytes). */
struct tfs_tile {
	uint64_t cell_num;
	uint8_t *fixed;
	uint64_t fixed_len;
	uint64_t *offsets;
	uint8_t *var;
	uint64_t var_len;
	uint8_t *validity;
	/* The tile cache's entry that owns the buffers (read-only, shared by
	 * every reader of the tile), or NULL when the buffers are this
	 * tile's own. tfs_tile_release handles both. */
	struct tfs_cached_tile *shared;
	/* Bytes of the buffers counted in the memory accountant (tfs_mem.h),
	 * given back when they are freed. */
	uint64_t charged;
};

/* What a slot of a fragment holds, in the fragment's own schema. */
struct tfs_slot_desc {
	uint8_t type;
	uint32_t cell_val_num;
	bool var;
	bool nullable;
	uint64_t cell_size;             /* fixed: bytes per cell */
	const struct tfs_pipeline *filters; /* data / values pipeline */
};

/* Describes slot `slot` of fragment f (attributes, dimensions, timestamps,
 * delete metadata); TFS_E_CORRUPT for a slot that does not exist. */
enum tfs_err tfs_slot_describe(const struct tfs_fragment *f, uint32_t slot,
			       struct tfs_slot_desc *out,
			       struct tfs_diag *d) TFS_WUR;
/* Cells in tile `tile` of f: dense = cells per tile, sparse = capacity
 * except for the last tile. */
uint64_t tfs_fragment_tile_cells(const struct tfs_fragment *f, uint64_t tile);
/* Reads and decodes tile `tile` of slot `slot` of f (every file the slot
 * has). Thread-safe. On failure out is empty. */
enum tfs_err tfs_tile_read(struct tfs_arraydir *a, struct tfs_fragment *f,
			   uint32_t slot, uint64_t tile, struct tfs_tile *out,
			   struct tfs_diag *d) TFS_WUR;
/* Frees the buffers of a tile that owns them (not shared) and empties it
 * (tile_read.c, the layer below the cache). */
void tfs__tile_free_buffers(struct tfs_tile *t);
/* Empties a tile: drops the reference to a shared tile, else frees its
 * own buffers (tile_cache.c). */
void tfs_tile_release(struct tfs_tile *t);
/* tfs_tile_read through the array's tile cache (tile_cache.c), when it
 * has one: the cached tile's buffers, shared read-only (out->shared holds
 * a reference until tfs_tile_release), or decoded once and kept. */
/* Drops a reader's reference to a shared tile (tile_cache.c). */
void tfs_cached_tile_put(struct tfs_cached_tile *en);
enum tfs_err tfs_tile_read_cached(struct tfs_arraydir *a, struct tfs_fragment *f,
				  uint32_t slot, uint64_t tile,
				  struct tfs_tile *out,
				  struct tfs_diag *d) TFS_WUR;

/* ---- Queries ---------------------------------------------------------- */

/* A requested field in terms of the current schema. */
struct tfs_out_field {
	const char *name;
	bool is_dim;
	uint32_t index; /* dimension or attribute index in the current schema */
	uint8_t type;
	uint32_t cell_val_num;
	bool var;
	bool nullable;
	uint64_t cell_size; /* fixed: bytes per cell */
	const uint8_t *fill; /* attributes: fill value (one cell) */
	uint64_t fill_size;
	uint8_t fill_valid;
};

/* Output buffers of one field of the batch being built. */
struct tfs_out_column {
	struct tfs_buf data;
	struct tfs_buf offsets;  /* var: u64 starts, cell_num + 1 at the end */
	struct tfs_buf validity; /* nullable */
};

struct tfs_reader_ops {
	/* Fills q->cols with the next cells (sets q->batch_cell_num); 0 cells
	 * means the end. */
	enum tfs_err (*next)(struct tfs_query *q, struct tfs_diag *d);
	void (*free)(struct tfs_query *q);
};

struct tfs_query {
	struct tfs_array *array;
	struct tfs_arraydir *dir;
	const struct tfs_schema *schema; /* current schema */
	struct tfs_out_field *fields;
	size_t field_num;
	/* Fields the caller asked for: fields[0, out_num). A sparse array
	 * that allows duplicates reads every other field too, after them
	 * and not handed out, so that duplicates are ordered by the whole
	 * cell whatever the fields asked for. */
	size_t out_num;
	/* Subarray, one range per dimension (views into sub_bytes). */
	struct tfs_range *sub;
	uint8_t *sub_bytes;
	uint64_t batch_cells;
	uint64_t total_cells; /* dense: known; sparse: UINT64_MAX */
	bool stored_order;    /* tfs_query_opts.stored_order */
	/* tfs_query_opts.stored_from, stored_to; stored_bounded: either is
	 * set */
	uint64_t stored_from[2], stored_to[2];
	bool stored_bounded;
	/* tfs_query_stored_pos, kept by the stored reader after each
	 * batch */
	uint64_t stored_pos[2];
	bool stored_pos_ok;
	bool decode_only;     /* tfs_query_opts.decode_only */
	/* tfs_query_opts.dest, dest_bytes (the dense reader clears dest
	 * when it does not write there); dest_used: bytes written so far.
	 * While dest is set, cols[0].data borrows its memory. */
	uint8_t *dest;
	uint64_t dest_bytes, dest_used;
	bool cells_known;     /* tfs_query_cells_known */
	uint64_t known_cells;

	struct tfs_out_column *cols;
	uint64_t cols_charged; /* bytes of cols in the memory accountant */
	uint64_t batch_cell_num;
	struct tfs_column *columns; /* public view of cols */
	struct tfs_batch batch;
	bool done;

	const struct tfs_reader_ops *reader_ops;
	void *reader;

	/* Pushdown of a condition (where_read.c): the sparse reader skips
	 * tile `tile` of fragment f (box: its MBR) when this says no cell of
	 * it can match. NULL: every tile is read. */
	bool (*tile_may_match)(void *arg, const struct tfs_fragment *f,
			       uint64_t tile, const struct tfs_range *box);
	void *tile_arg;
	/* The state of a query with a condition (where_read.c), or NULL. */
	struct tfs__where *where;
};

struct tfs__where;

/* Helpers of where_read.c shared with stats_read.c: whether an
 * attribute's filters are lossy (its tile statistics describe other
 * values), whether two boxes of s meet, a coordinate's unsigned bits. */
struct tfs_attr;
bool tfs__attr_lossy(const struct tfs_attr *at);
bool tfs__boxes_meet(const struct tfs_schema *s, const struct tfs_range *a,
		     const struct tfs_range *b);
uint64_t tfs__raw_of(uint8_t type, const uint8_t *p);

/* tfs_query_open with the pruning hook set before the reader opens. */
enum tfs_err tfs__query_open_hooked(
	struct tfs_array *a, const struct tfs_query_opts *opts,
	bool (*tile_may_match)(void *arg, const struct tfs_fragment *f,
			       uint64_t tile, const struct tfs_range *box),
	void *tile_arg, struct tfs_query **out, struct tfs_diag *d) TFS_WUR;
/* How a filtered reading opens, reads and closes the plain queries it
 * sits on: the query layer's own functions, handed down by the query
 * layer, which also dispatches to the filtered reader. */
struct tfs__inner_queries {
	enum tfs_err (*open)(
		struct tfs_array *a, const struct tfs_query_opts *opts,
		bool (*tile_may_match)(void *arg, const struct tfs_fragment *f,
				       uint64_t tile,
				       const struct tfs_range *box),
		void *tile_arg, struct tfs_query **out, struct tfs_diag *d);
	enum tfs_err (*next)(struct tfs_query *q, const struct tfs_batch **out,
			     struct tfs_diag *d);
	void (*close)(struct tfs_query *q);
};
/* Opens q's filtered reading of opts->condition (the query's fields and
 * subarray are set; sets q->reader_ops), its plain queries through
 * inner (which must outlive q). */
enum tfs_err tfs__where_open(struct tfs_query *q,
			     const struct tfs_query_opts *opts,
			     const struct tfs__inner_queries *inner,
			     struct tfs_diag *d) TFS_WUR;

/* Appends one cell to an output column (value bytes of `len`; validity
 * when the field is nullable). */
enum tfs_err tfs_out_append(struct tfs_query *q, size_t field,
			    const uint8_t *value, uint64_t len,
			    uint8_t valid) TFS_WUR;
/* Empties every output column for a new batch. */
void tfs_out_reset(struct tfs_query *q);
/* Sets the length of an output column's buffer b to n (tfs_buf_setlen);
 * an empty buffer that grows big takes a spare one (tfs_reuse.h). */
enum tfs_err tfs_out_setlen(struct tfs_buf *b, size_t n) TFS_WUR;
/* Counts the output columns of a batch of `cells` cells (values of
 * var-size fields aside) before they are filled, waiting for room like a
 * tile: filled first and counted after, the batches of eight readers went
 * 20 MB past the budget. tfs_out_account settles what they hold in the
 * end. */
enum tfs_err tfs_out_reserve(struct tfs_query *q, uint64_t cells,
			     struct tfs_diag *d) TFS_WUR;
/* `cells`, or fewer: as many as take a 32nd of the memory budget in the
 * output columns (4096 at least). */
uint64_t tfs_out_batch_cap(const struct tfs_query *q, uint64_t cells);
/* Counts what the output columns hold now in the memory accountant. */
void tfs_out_account(struct tfs_query *q);
/* Gives the output columns' buffers back (spares) and their count. */
void tfs_out_release(struct tfs_query *q);

enum tfs_err tfs_dense_reader_open(struct tfs_query *q,
				   struct tfs_diag *d) TFS_WUR;
enum tfs_err tfs_sparse_reader_open(struct tfs_query *q,
				    struct tfs_diag *d) TFS_WUR;

#endif
