/* The cells of a selection as a file (SPEC §4), `A/[FIELD/]slice[SEL].EXT`:
 * a slice is planned once (selection, output fields, format), then
 * produced front to back by a stream, or, for dense selections in a
 * format whose records have a fixed size, any range of cells on its own
 * (tfsr_emit_dense_range). The daemon serves files with these; `tfs
 * export` writes a stream to a file, so both give the same bytes.
 *
 * Dense cells are produced by index (row-major over the selection), so a
 * stream needs no long-lived query; sparse cells come from one query.
 * A stream and its emitter belong to one thread at a time; streams of
 * one slice may run on several threads once the slice is prepared
 * (tfsr_slice_prepare: the .npy header of a sparse or var-size slice,
 * measured from its cells, is built into the slice once). */
#ifndef TFSR_SLICE_H
#define TFSR_SLICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "selection.h"
#include "tfs_buf.h"
#include "tfs_render.h"
#include <tilefs/tilefs.h>

/* Asks for the tiles of a query (fixed-size subarray, fields) to be
 * decoded ahead; a hint. */
typedef void (*tfsr_prefetch_fn)(void *ctx, const struct tfs_range *sub,
				 const char *const *names, size_t name_num);

struct tfsr_slice {
	struct tfs_array *a; /* borrowed: outlives the slice */
	const struct tfs_schema *s;
	const struct tfsr_renderer *r;
	struct tfsr_sel *sel;
	bool dense;
	int field; /* the field asked for: -1 every field */
	uint32_t nfields;
	int *fields;        /* schema field indices, output order */
	/* Query fields: the output ones (but computed coordinates), then
	 * extras. */
	const char **names;
	uint32_t nnames;
	/* Per output field: a coordinate of a dense text rendering that the
	 * renderer computes from the cell's index, not in names. */
	bool *computed;
	int *hi_check; /* per dim: query column to compare with hi, or -1 */
	bool has_hi_check;
	/* Sparse: the query column of the first dimension (the key of the
	 * stream's index, see struct tfsr_mark), -1 when the slice has no
	 * index; key_size its bytes, 0 with key_var (strings). */
	int key_col;
	size_t key_size;
	bool key_var;
	/* Sparse in stored order: the index marks positions of the query
	 * (tfs_query_stored_pos) instead of keys. */
	bool stored_index;
	uint64_t cells; /* dense: cells of the selection */
	bool fixed;     /* dense: every record has the same size (random access) */
	uint64_t record; /* bytes per cell when fixed */
	/* sparse: bytes per cell of a format of fixed-size records without
	 * a header (raw, .validity), else 0 */
	uint64_t sparse_record;
	struct tfs_buf header; /* .npy header when known up front */
	/* .npy: per output field, the width of var-size values; measured
	 * with the header (a stream produced again pads to the same
	 * widths). */
	uint64_t *widths;
	const struct tfs_enumeration **enums; /* per output field, text only */
	uint64_t max_cells; /* 0: no limit */
	/* Only the cells that match (borrowed, outlives the slice); a
	 * filtered dense slice is read and rendered as a sparse one. */
	const struct tfs_where *where;
	tfsr_prefetch_fn prefetch; /* NULL: no read-ahead */
	void *prefetch_ctx;
	/* Text formatted on two threads (borrowed); NULL: one. */
	struct tfs_pool *pool;
	/* tfsr_slice_prepare has built the header (atomic; set under
	 * prepare_lock, which only that function takes). */
	bool prepared;
	pthread_mutex_t prepare_lock;
};

struct tfsr_slice_opts {
	int field; /* -1: every field; else dims first, then attrs */
	enum tfsr_format fmt;
	const char *sel; /* the SEL text, sel_len bytes */
	size_t sel_len;
	const struct tfs_range *ned; /* non-empty domain, NULL when empty */
	uint64_t max_cells;          /* more cells: TFS_E_TOO_BIG; 0 = none */
	/* A filter (where.h; borrowed, must outlive the slice), or NULL. */
	const struct tfs_where *where;
	tfsr_prefetch_fn prefetch;
	void *prefetch_ctx;
	/* Formats large text batches partly on this pool (which must
	 * outlive the slice); NULL: on the caller's thread only. */
	struct tfs_pool *pool;
};

/* Plans the slice of array a (which must outlive it). The format must
 * take the field (tfsr_renderer_takes). Errors: TFS_E_INVALID for a bad
 * selection, TFS_E_TOO_BIG over max_cells, with d saying why. */
enum tfs_err tfsr_slice_open(struct tfs_array *a,
			     const struct tfsr_slice_opts *o,
			     struct tfsr_slice **out,
			     struct tfs_diag *d) TFS_WUR;
void tfsr_slice_free(struct tfsr_slice *sl);
/* The exact size of a dense slice known without rendering (see enum
 * tfsr_size_kind); false when it is not known or overflows. */
bool tfsr_slice_known_size(const struct tfsr_slice *sl, uint64_t *size);
/* The exact size of a sparse slice of fixed-size records (sparse_record)
 * when the engine knows its cell count from fragment metadata
 * (tfs_query_cells_known); false otherwise. Opens a query of the slice's
 * array (R-trees, no tiles). */
bool tfsr_slice_sparse_size(const struct tfsr_slice *sl, uint64_t *size);

/* Builds what every stream of sl shares and would otherwise build at its
 * first start: the header of a sparse or var-size .npy slice (its shape
 * holds the cell count, its dtype the widest var-size values), from
 * fragment metadata when that gives the count and no field has a var
 * size, else from a measuring pass over the cells of src (the slice's
 * array or another opening of it). Call it before streams of sl run on
 * several threads. Thread-safe: it runs once; a caller that comes while
 * another builds waits for it; a failure leaves it to the next call. */
enum tfs_err tfsr_slice_prepare(struct tfsr_slice *sl, struct tfs_array *src,
				struct tfs_diag *d) TFS_WUR;

/* Produces cells into out. src is the array the queries read: the
 * slice's, or another opening of the same view. */
struct tfsr_emit {
	struct tfsr_slice *sl;
	struct tfs_array *src;
	struct tfs_buf *out;
	void *state;         /* the renderer's (text formats) */
	uint64_t var_offset; /* .offsets: bytes so far */
	uint64_t *widths;    /* .npy: per field, var-size widths */
	bool measure;        /* count and widths only */
	/* Text renderers: the bytes of fast columns are added here instead
	 * of written to out (a counting pass); NULL: written. */
	uint64_t *counted;
	uint64_t count;      /* cells emitted */
};

/* Dense slices: selection cells [c0, c1) (row-major indices) into em. */
enum tfs_err tfsr_emit_dense_range(struct tfsr_emit *em, uint64_t c0,
				   uint64_t c1, struct tfs_diag *d) TFS_WUR;
/* Schedules the decoding of selection cells [c0, c1) through the slice's
 * prefetch hook when src is the slice's own array. */
void tfsr_slice_prefetch(const struct tfsr_slice *sl,
			 struct tfs_array *src, uint64_t c0, uint64_t c1);

/* Bytes of a mark's key at most: a string first coordinate longer than
 * that gets no mark (the next change of coordinate to a shorter one
 * does), so an index stays within MARKS_MAX of these. */
#define TFSR_MARK_KEY 32
#define TFSR_STORED_POS_BYTES 16

/* An entry of a seekable stream's index: the bytes of output cell `cell`
 * begin at offset `off`. Sparse cells come sorted with the first
 * dimension slowest, and a mark is put where the first coordinate
 * changes, so the cells from a mark on are those whose first coordinate
 * is `key` or more (key_len bytes of a string; a fixed-size value's
 * bytes, zero-padded): a query from there gives them. In stored order
 * the key holds the query's position there instead (STORED_POS_BYTES: a
 * tile and the cells of it before, as two uint64_t). Dense marks leave
 * key unused. */
struct tfsr_mark {
	uint64_t cell;
	uint64_t off;
	uint8_t key[TFSR_MARK_KEY];
	uint32_t key_len;
};

/* A rendering front to back, piece by piece into out. */
struct tfsr_stream {
	struct tfsr_emit em;
	struct tfs_buf out; /* produced bytes from offset base on */
	uint64_t base;
	bool started;
	bool done;
	bool failed; /* for the owner: a step failed */
	uint64_t next_cell;  /* dense */
	struct tfs_query *q; /* sparse */
	uint64_t charged;    /* for the owner's memory accounting */
	uint64_t first_cell; /* the cell the stream started at */
	/* Formats large text batches partly on this pool: the slice's,
	 * unless the owner clears it before the first step (a stream that
	 * runs beside others on every core already). */
	struct tfs_pool *pool;
	/* Sparse streams of a slice with an index: when the owner sets
	 * indexing, each step adds the marks of the cells it produced to
	 * marks (the owner takes them and empties the list), about one per
	 * TFSR_MARK_CELLS cells, where the first coordinate changes. */
	bool indexing;
	struct tfsr_mark *marks;
	size_t mark_num, mark_cap;
	uint64_t since_mark; /* cells since the last mark */
	bool has_last;       /* last_key holds the last cell's key */
	/* its first TFSR_MARK_KEY bytes; last_len: all its bytes */
	uint8_t last_key[TFSR_MARK_KEY];
	uint64_t last_len;
	/* the key a started query begins at */
	uint8_t seek_key[TFSR_MARK_KEY];
	uint32_t seek_len;
	/* A part (tfsr_stream_start_part): done at end_cell (dense), after
	 * the first coordinate end_key (sparse of a fixed-size key,
	 * included), or before it (strings, end_before), without what end
	 * produces. */
	bool bounded;
	bool end_before;
	uint64_t end_cell;
	uint8_t end_key[TFSR_MARK_KEY];
	uint32_t end_len;
};

/* Cells between the marks of a sparse stream's index, at least. */
#define TFSR_MARK_CELLS ((uint64_t)1 << 16)

/* A stream of sl reading src (both must outlive it). */
void tfsr_stream_init(struct tfsr_stream *st, struct tfsr_slice *sl,
		      struct tfs_array *src);
/* Produces the next piece (appended to st->out); st->done at the end. */
enum tfs_err tfsr_stream_step(struct tfsr_stream *st,
			      struct tfs_diag *d) TFS_WUR;
void tfsr_stream_release(struct tfsr_stream *st);
/* Whether a stream of sl can start at any cell (tfsr_stream_start_at):
 * a dense selection in a format whose bytes for a cell depend on the
 * cell and its index only (text, raw); or, at the marks of its index, a
 * sparse one in any format but pictures and stored order. */
bool tfsr_slice_seekable(const struct tfsr_slice *sl);
/* Cells a dense stream produces per step. */
uint64_t tfsr_slice_step_cells(const struct tfsr_slice *sl);
/* Starts st (just initialised, of a seekable slice) at selection cell
 * `cell`, whose bytes begin at offset base: what begin produces is
 * dropped, the steps go on from that cell. */
enum tfs_err tfsr_stream_start_at(struct tfsr_stream *st, uint64_t cell,
				  uint64_t base, struct tfs_diag *d) TFS_WUR;
/* The same at a mark of the stream's index (dense: any cell; sparse: one
 * a sparse stream's steps made). */
enum tfs_err tfsr_stream_start_mark(struct tfsr_stream *st,
				    const struct tfsr_mark *m,
				    struct tfs_diag *d) TFS_WUR;

/* Starts st (just initialised, of a seekable slice) on the part of its
 * rendering between two marks of its index: from `from` (NULL: the
 * beginning, with what begin produces) to `to` (NULL: the end, with what
 * end produces); the stream is done at `to`. Parts produced on their own
 * and put one after the other give the bytes of the whole stream. */
enum tfs_err tfsr_stream_start_part(struct tfsr_stream *st,
				    const struct tfsr_mark *from,
				    const struct tfsr_mark *to,
				    struct tfs_diag *d) TFS_WUR;
/* A mark (its key only) that cuts a sparse slice with an index into two
 * parts over halves of the first coordinate's range, for a rendering
 * whose bytes do not depend on the number of cells before (.csv, .txt);
 * false when there is none. The second part's cell and offset are the
 * first part's counts. */
bool tfsr_slice_mid_key(const struct tfsr_slice *sl, struct tfsr_mark *mid);

/* The renderers' callbacks of the byte formats (the table's rows). */
enum tfs_err tfsr_raw_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			    uint64_t first, uint64_t n) TFS_WUR;
enum tfs_err tfsr_offsets_cells(struct tfsr_emit *em,
				const struct tfs_batch *b, uint64_t first,
				uint64_t n) TFS_WUR;
enum tfs_err tfsr_validity_cells(struct tfsr_emit *em,
				 const struct tfs_batch *b, uint64_t first,
				 uint64_t n) TFS_WUR;
/* Cell i of column c of output field k as bytes; a null cell gives the
 * fill value. */
void tfsr_cell_bytes(const struct tfsr_slice *sl, uint32_t k,
		     const struct tfs_column *c, uint64_t i,
		     const uint8_t **ptr, uint64_t *len);
/* Runs every cell through a measuring emitter: the widest var-size value
 * of each field (into sl->widths) and the count of cells (*count), for a
 * renderer whose header depends on them. */
enum tfs_err tfsr_slice_measure(struct tfsr_stream *st, uint64_t *count,
				struct tfs_diag *d) TFS_WUR;

#endif
