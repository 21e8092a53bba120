/* tilefs core: the public API that the daemon and the tools use.
 *
 * Open an array folder at a point in time, look at its schema, fragments,
 * non-empty domain and metadata, and stream the cells of any selection
 * batch by batch. Memory stays bounded by the tiles in flight, whatever the
 * selection's size; tiles are decoded on a thread pool and only the tiles a
 * selection touches are read.
 *
 * An opened struct tfs_array is immutable and may be shared by threads; a
 * struct tfs_query belongs to one thread at a time. Descriptions returned
 * by accessors (schema, ranges, metadata) are valid until tfs_array_close. */
#ifndef TILEFS_H
#define TILEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_datatype.h"
#include "tfs_err.h"
#include "tfs_schema.h"
#include "tfs_pool.h"
#include "tfs_vfs.h"
#include "tfs_where.h"

#define TILEFS_VERSION "0.1.0"

struct tfs_array;
struct tfs_query;
struct tfs_tile_cache;
struct tfs_update;

/* ---- The decoded-tile cache --------------------------------------------- */

/* A cache of decoded tiles under a byte budget, shared by the arrays
 * opened with it (tfs_open_opts.cache), least recently used out first.
 * Thread-safe. A tile being decoded by one thread is waited for by the
 * others, so a read-ahead thread and a reader never decode it twice. */
enum tfs_err tfs_tile_cache_new(uint64_t budget,
				struct tfs_tile_cache **out) TFS_WUR;
void tfs_tile_cache_free(struct tfs_tile_cache *c);

struct tfs_tile_cache_stats {
	uint64_t hits, misses, waits; /* lookups since creation */
	uint64_t bytes;               /* held now */
};
void tfs_tile_cache_get_stats(struct tfs_tile_cache *c,
			      struct tfs_tile_cache_stats *out);

struct tfs_open_opts {
	struct tfs_vfs *vfs; /* NULL: the POSIX file system */
	const uint8_t *key;  /* 32-byte AES-256-GCM key, or NULL */
	uint64_t timestamp;  /* open at this time (ms); 0 = now */
	unsigned threads;    /* threads that decode, the caller's included;
				0 = one per CPU */
	/* A decode pool shared by many arrays (tfs_pool_new(threads - 1)
	 * from tfs_pool.h; it must outlive them); NULL = the array starts
	 * its own of `threads`. A process that keeps many arrays open (the
	 * daemon) shares one so that threads don't multiply. */
	struct tfs_pool *pool;
	/* Decoded tiles shared by many arrays (it must outlive them); NULL =
	 * none: every read decodes what it touches. */
	struct tfs_tile_cache *cache;
	/* Start of the opening window (ms; 0 = the beginning): fragments,
	 * deletes and metadata are taken from [timestamp_start, timestamp]
	 * (format/layout.md §6). Consolidation reads the fragments of its
	 * range this way. */
	uint64_t timestamp_start;
	/* Delete commits are taken from [timestamp_start, delete_timestamp]
	 * where that ends later than the window (0 = the window): the cells
	 * of the window's fragments that later deletes remove are not read.
	 * Consolidation reads its range this way to drop deleted cells. */
	uint64_t delete_timestamp;
	/* Largest part (values, offsets or validity) of one decoded tile, and
	 * largest persisted tile, that a read may allocate; 0 = no limit. A
	 * tile that claims more fails the read with TFS_E_NOMEM before
	 * anything is allocated for it, so that an oversized or damaged tile
	 * cannot take the memory of a process that serves many reads; a
	 * dense fixed-size tile whose filters cut chunks is read a chunk at
	 * a time instead. */
	uint64_t max_tile_bytes;
};

enum tfs_object { TFS_OBJECT_NONE, TFS_OBJECT_ARRAY, TFS_OBJECT_GROUP };

/* Classifies the folder at path. */
enum tfs_err tfs_object_type(struct tfs_vfs *vfs, const char *path,
			     enum tfs_object *out, struct tfs_diag *d) TFS_WUR;

enum tfs_err tfs_array_open(const char *path, const struct tfs_open_opts *opts,
			    struct tfs_array **out, struct tfs_diag *d) TFS_WUR;
void tfs_array_close(struct tfs_array *a);

/* The end of the opening window (ms): tfs_open_opts.timestamp, or the
 * clock when the array was opened "now". Opening again at this time
 * shows the same fragments, unless some were consolidated and vacuumed
 * since. */
uint64_t tfs_array_timestamp(const struct tfs_array *a);
/* The schema in force at the opening time. */
const struct tfs_schema *tfs_array_schema(const struct tfs_array *a);
/* Enumerations of that schema, sorted by name. */
size_t tfs_array_enumeration_count(const struct tfs_array *a);
const struct tfs_enumeration *tfs_array_enumeration(const struct tfs_array *a,
						    size_t i);
/* The enumeration of that name (an attribute's `enumeration`), or NULL. */
const struct tfs_enumeration *
tfs_array_enumeration_named(const struct tfs_array *a, const char *name);
/* Bounding box of the visible fragments; false when there are none.
 * out receives dim_num ranges (views valid until close). */
bool tfs_array_non_empty_domain(const struct tfs_array *a,
				struct tfs_range *out);

struct tfs_fragment_info {
	const char *name;
	uint64_t t1, t2;
	uint32_t version;
	bool dense;
	uint64_t cell_num;
	bool consolidated_metadata;
	const char *schema_name;
	const struct tfs_range *non_empty_domain; /* dim_num ranges */
	bool visible; /* part of reads at the opening time */
	/* Per-cell write times (t.tdb): a read at a time inside [t1, t2]
	 * takes only the cells written by then (format/read.md §7). */
	bool cell_timestamps;
};

/* Every committed fragment not vacuumed away, whatever the opening time,
 * in timestamp order. */
size_t tfs_array_fragment_count(const struct tfs_array *a);
void tfs_array_fragment(const struct tfs_array *a, size_t i,
			struct tfs_fragment_info *out);
/* Bytes of fragment metadata read on demand (R-trees, tile offsets, tile
 * statistics) that the array holds, counted in the memory accountant
 * until it is closed. */
uint64_t tfs_array_memory(const struct tfs_array *a);
/* Fragments that consolidation made obsolete and vacuum would remove. */
size_t tfs_array_vacuum_count(const struct tfs_array *a);
const char *tfs_array_vacuum_name(const struct tfs_array *a, size_t i);

/* Dimension labels of the schema in force (format v18+, schema.md §6).
 * A label is an ordinary array of its own, one dimension like the
 * labelled one, whose attribute attr_name holds the label of each index:
 * open `path` with tfs_array_open to read it. */
struct tfs_label_info {
	const char *name;
	uint32_t dim_index;     /* the labelled dimension */
	const char *dim_name;
	const char *attr_name;  /* attribute of the label array */
	uint8_t order;          /* 1 increasing, 2 decreasing (0 unordered) */
	uint8_t type;           /* datatype of the labels */
	uint32_t cell_val_num;  /* TFS_VAR_NUM for string labels */
	bool external;          /* not created and owned by this array */
	bool uri_relative;
	const char *uri;        /* as stored, e.g. "__labels/l0" */
	/* The label array's folder: a relative URI resolved against the
	 * array folder, a file:// URI or an absolute path as is. NULL when
	 * the URI is no local path (another scheme) or climbs out of the
	 * array folder with "..". */
	const char *path;
};

size_t tfs_array_label_count(const struct tfs_array *a);
void tfs_array_label(const struct tfs_array *a, size_t i,
		     struct tfs_label_info *out);

/* Update commits (`.upd`, format v16+) in the opening window, oldest
 * first. TileDB writes them but never applies them when reading, and
 * neither does tilefs: they are recognised and listed, the cells read are
 * those of the fragments alone (format/consolidated.md §6). */
struct tfs_update_info {
	const char *marker; /* array-relative: "__commits/__t1_t2_uuid_v.upd" */
	uint64_t t1, t2;
	/* The stored condition and values; NULL when a consolidated commit
	 * file (.con) names the update and its own file is gone. */
	const struct tfs_update *update;
};

size_t tfs_array_update_count(const struct tfs_array *a);
void tfs_array_update(const struct tfs_array *a, size_t i,
		      struct tfs_update_info *out);

/* Array metadata at the opening time, sorted by key. */
size_t tfs_array_metadata_count(const struct tfs_array *a);
const struct tfs_meta_kv *tfs_array_metadata(const struct tfs_array *a,
					     size_t i);

/* ---- Tile statistics ---------------------------------------------------- */

/* One tile of a visible fragment as its metadata summarises it (format
 * v11+, fragment.md §6), read without decoding a tile: for overviews
 * whose cost must not grow with the cells. lo/hi are the tile's box
 * (dim_num coordinates each): in a dense fragment the space tile clipped
 * to the fragment's non-empty domain, in a sparse one the tile's MBR.
 * The statistics are TileDB's, for display only (they describe the
 * values written, before lossy filters). */
struct tfs_tile_stat {
	uint32_t frag;   /* visible fragment, oldest first */
	bool has_minmax; /* min/max of the non-null values */
	bool has_sum;    /* sum of the non-null values */
	double min, max, sum;
	uint64_t cells; /* cells the tile holds (dense: its box's) */
	uint64_t nulls; /* as the metadata says (0 when unknown) */
	const int64_t *lo, *hi;
};

struct tfs_tile_stats {
	uint32_t dim_num;
	size_t num;
	struct tfs_tile_stat *tiles; /* fragment by fragment, oldest first */
	int64_t *coords;             /* backing store of lo/hi */
};

/* The tiles of attribute attr (a numeric attribute of one value per
 * cell) over every visible fragment, into *out (release with
 * tfs_tile_stats_release). Fragments before v11, or without the
 * attribute, give tiles without min/max and sum. TFS_E_UNSUPPORTED for
 * dimensions that are not integers within int64; TFS_E_NOT_FOUND for an
 * unknown attribute. Reads a few generic tiles of each fragment's
 * metadata (R-trees of sparse fragments included). Thread-safe. */
enum tfs_err tfs_array_tile_stats(struct tfs_array *a, const char *attr,
				  struct tfs_tile_stats *out,
				  struct tfs_diag *d) TFS_WUR;
void tfs_tile_stats_release(struct tfs_tile_stats *s);

/* ---- Queries ------------------------------------------------------------ */

struct tfs_query_opts {
	/* One inclusive range per dimension; NULL = the non-empty domain.
	 * Fixed-size: lo/hi point to values of the dimension type. */
	const struct tfs_range *subarray;
	/* Fields (dimension and attribute names) to return, in this order;
	 * NULL = every dimension then every attribute. */
	const char *const *fields;
	size_t field_num;
	/* Upper bound of cells per batch; 0 = a default. */
	uint64_t batch_cells;
	/* Only the cells that match (tfs_where.h); NULL = every cell. It may
	 * name fields that are not returned. A dense query then gives the
	 * matching cells with their coordinates, row-major, as a sparse one
	 * does (tfs_query_cell_count: UINT64_MAX); a sparse one keeps its
	 * order. Tiles whose minimum, maximum and null count show that no
	 * cell can match are not read, and conditions on dimensions narrow
	 * the subarray. Copied by tfs_query_open. */
	const struct tfs_where *condition;
	/* Sparse arrays without a condition: the cells in the order the
	 * fragments store them (fragment by fragment, tile by tile, cells
	 * in tile order) instead of sorted, when nothing has to be resolved
	 * by sorting: fragments that cannot shadow each other (duplicates
	 * allowed, one fragment, or non-empty domains apart), no deletes,
	 * no time window cutting through a fragment. Otherwise the sorted
	 * order. The same cells as the sorted read, and the same order for
	 * any choice of fields. */
	bool stored_order;
	/* Stored order when the cells go out tile by tile (see
	 * tfs_query_stored_pos): start at position stored_from and stop
	 * before stored_to ({0, 0}: at the end), each {tile, cell} as a
	 * query of the same array, subarray and fields gave it; such a
	 * query's cell count is not known up front. Any other query:
	 * TFS_E_INVALID unless both are {0, 0}. */
	uint64_t stored_from[2];
	uint64_t stored_to[2];
	/* Dense queries without a condition: decode the tiles into the
	 * array's tile cache and hand out no cells (read-ahead); the first
	 * tfs_query_next does the work and ends the query. */
	bool decode_only;
	/* Dense queries without a condition of one fixed-size attribute
	 * that is not nullable: the cells go straight into dest, batch
	 * after batch, row-major from its start (each batch's column points
	 * into it), saving the copy out of the query's own columns. dest
	 * must hold dest_bytes >= the query's cells × cell size, or it is
	 * not used; any other query ignores it. */
	void *dest;
	uint64_t dest_bytes;
};

/* One field of a batch. Fixed-size: data holds cell_num × cell_size bytes.
 * Var-size: offsets[cell_num + 1] index data. Nullable: validity[cell_num]
 * (0 = NULL). */
struct tfs_column {
	const char *name;
	uint8_t type;
	uint32_t cell_val_num;
	bool var;
	bool nullable;
	bool is_dim;
	const uint8_t *data;
	uint64_t data_len;
	const uint64_t *offsets;
	const uint8_t *validity;
};

/* Cells in result order: dense reads row-major over the subarray (fill
 * values where nothing was written), sparse reads sorted by coordinates
 * (first dimension slowest). */
struct tfs_batch {
	uint64_t cell_num;
	size_t column_num;
	const struct tfs_column *columns;
};

enum tfs_err tfs_query_open(struct tfs_array *a,
			    const struct tfs_query_opts *opts,
			    struct tfs_query **out, struct tfs_diag *d) TFS_WUR;
/* Next batch, or *out = NULL at the end. The batch is valid until the next
 * call or tfs_query_close. */
enum tfs_err tfs_query_next(struct tfs_query *q, const struct tfs_batch **out,
			    struct tfs_diag *d) TFS_WUR;
/* Total cells of a dense query (known up front); sparse: UINT64_MAX. */
uint64_t tfs_query_cell_count(const struct tfs_query *q);
/* Whether the number of cells the query yields is known without reading
 * them, in *cells: dense queries without a condition; sparse ones when
 * fragment metadata gives it (every tile the subarray meets lies wholly
 * inside it, and nothing needs sorting out: see stored_order). */
bool tfs_query_cells_known(const struct tfs_query *q, uint64_t *cells);
/* Where a query in stored order that goes tile by tile stands: pos[0]
 * the tile of its next cell (in the query's order of tiles), pos[1] the
 * cells of that tile handed out before it; a query opened with
 * stored_from at pos gives the cells from there. False for any other
 * query (sorted, or stored order resolved by sorting). */
bool tfs_query_stored_pos(const struct tfs_query *q, uint64_t pos[2]);
void tfs_query_close(struct tfs_query *q);

/* ---- Statistics --------------------------------------------------------- */

/* count, null_count, min, max and sum of one attribute over the cells a
 * query would return. Bounds and sums are of the attribute's type:
 * single-value numbers (NaN is left out of min and max, not out of the
 * sum), strings and other var-size or multi-value cells bytewise (no
 * sum). Whole tiles that fragment metadata describes exactly (integer
 * attributes that are not nullable, no lossy filter, the tile wholly in
 * the subarray, no other fragment, delete or cell time overlapping it)
 * are taken from the metadata without being read; the rest is decoded.
 * The result is the same either way. */
enum tfs_sum_kind { TFS_SUM_NONE, TFS_SUM_INT, TFS_SUM_FLOAT };

struct tfs_field_stats {
	uint64_t count;      /* cells */
	uint64_t null_count; /* NULL cells */
	bool has_bounds;     /* min and max are set */
	uint8_t *min, *max;  /* bytes of a value (tfs_alloc.h memory) */
	uint64_t min_len, max_len;
	enum tfs_sum_kind sum_kind;
	/* TFS_SUM_INT: the exact 128-bit two's complement sum (hi:lo);
	 * TFS_SUM_FLOAT: sum_f, the values added in result order. */
	int64_t sum_hi;
	uint64_t sum_lo;
	double sum_f;
	/* How it was computed. */
	uint64_t tiles_from_metadata;
	uint64_t cells_decoded;
};

/* opts: subarray and condition as for tfs_query_open; fields must name
 * exactly one attribute. */
enum tfs_err tfs_query_stats(struct tfs_array *a,
			     const struct tfs_query_opts *opts,
			     struct tfs_field_stats *out,
			     struct tfs_diag *d) TFS_WUR;
void tfs_field_stats_release(struct tfs_field_stats *s);

/* Decodes a hex key of 64 digits into 32 bytes. */
enum tfs_err tfs_key_from_hex(uint8_t key[32], const char *hex) TFS_WUR;

/* Groups: after everything above, which tfs_group.h uses. */
#include "tfs_group.h"
/* Writing, CSV ingest, consolidation: after everything above, which they
 * use. */
#include "tfs_write.h"
#include "tfs_ingest.h"
#include "tfs_maintain.h"

#endif
