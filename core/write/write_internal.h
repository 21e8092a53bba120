/* Shared parts of the fragment writer (core/write): the column store that
 * holds cells between append and commit, the global-order comparison, the
 * sorted cell source (in-memory and spilled runs, merged), and the tile
 * writer that turns a stream of cells into data files and the fragment
 * metadata file (format/write.md, fragment.md). Not installed. */
#ifndef TFS_WRITE_INTERNAL_H
#define TFS_WRITE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_datatype.h"
#include "tfs_err.h"
#include "tfs_format.h"
#include "tfs_pool.h"
#include "tfs_vfs.h"

/* One field of the schema as the writer sees it. Fields are numbered
 * dimensions first (0..D-1), then attributes (D..D+A-1). */
struct tfs__field {
	const char *name;
	uint8_t type;
	uint32_t cell_val_num;
	bool var;
	bool nullable;
	bool is_dim;
	uint32_t index;     /* dimension or attribute index */
	uint32_t slot;      /* fragment.md §1 */
	uint64_t cell_size; /* fixed: bytes per cell; var: element size */
	const struct tfs_pipeline *filters;
	bool is_timestamps; /* the per-cell timestamps (t.tdb) */
};

/* The cells of one field: fixed values, or var values with one u64 start
 * offset per cell into data; nullable fields one validity byte per cell. */
struct tfs__col {
	struct tfs_buf data;
	struct tfs_buf offs;
	struct tfs_buf valid;
};

/* A set of cells stored by column, plus a u64 sort key per cell (Hilbert
 * value, when the order uses one) and a u64 tag per cell (what messages
 * call the cell by). */
struct tfs__cells {
	uint32_t field_num;
	struct tfs__col *cols;
	struct tfs_buf keys;
	struct tfs_buf tags;
	uint64_t cell_num;
};

enum tfs_err tfs__cells_init(struct tfs__cells *c, uint32_t field_num) TFS_WUR;
void tfs__cells_release(struct tfs__cells *c);
/* Empties c, keeping its memory. */
void tfs__cells_clear(struct tfs__cells *c);
/* Bytes c holds (what counts against the memory budget). */
uint64_t tfs__cells_bytes(const struct tfs__cells *c);
/* Appends cell i of src (same fields) to dst. */
enum tfs_err tfs__cells_copy(struct tfs__cells *dst,
			     const struct tfs__field *fields,
			     const struct tfs__cells *src, uint64_t i) TFS_WUR;
/* Appends cells i .. i + n - 1 of src (same fields) to dst, each column
 * at once. */
enum tfs_err tfs__cells_copy_run(struct tfs__cells *dst,
				 const struct tfs__field *fields,
				 const struct tfs__cells *src, uint64_t i,
				 uint64_t n) TFS_WUR;
/* Start and length of cell i's value of var column f. */
static inline const uint8_t *tfs__var_cell(const struct tfs__cells *c,
					   uint32_t f, uint64_t i,
					   uint64_t *len)
{
	const uint64_t *o = (const uint64_t *)c->cols[f].offs.data;
	uint64_t end = i + 1 < c->cell_num ? o[i + 1] : c->cols[f].data.len;

	*len = end - o[i];
	return c->cols[f].data.data + o[i];
}

/* Global order of a schema (read.md §5, §6). */
struct tfs__order {
	const struct tfs_schema *s;
	const struct tfs__field *fields; /* dimensions are fields 0..D-1 */
	uint32_t dim_num;
	bool hilbert;
	/* Keyed orders keep a u64 per cell that decides first: the Hilbert
	 * value, or the cell's space tile numbered in tile order over the
	 * dimensions that take part in the tile comparison (when there are
	 * any and their grid has fewer than 2^64 tiles), so sorting divides
	 * once per cell. */
	bool keyed;
	uint64_t tile_stride[128];
	bool col_tiles, col_cells;
	bool tile_dim[128]; /* takes part in the tile comparison */
	/* The first dimension in cell order decides after the key (or
	 * first of all when no dimension takes part in the tile comparison):
	 * tfs__order_key2 maps it to a u64 in the same order. */
	bool key2;
};

void tfs__order_init(struct tfs__order *o, const struct tfs_schema *s,
		     const struct tfs__field *fields);
/* Compares cell i of a with cell j of b in global order (keys must be set
 * for Hilbert orders). */
int tfs__order_cmp(const struct tfs__order *o, const struct tfs__cells *a,
		   uint64_t i, const struct tfs__cells *b, uint64_t j);
/* Compares only the coordinates (equal coordinates: 0). */
bool tfs__coords_equal(const struct tfs__order *o, const struct tfs__cells *a,
		       uint64_t i, const struct tfs__cells *b, uint64_t j);
/* Sort key of cell i of c (keyed orders): Hilbert value or tile number. */
uint64_t tfs__order_key(const struct tfs__order *o, const struct tfs__cells *c,
			uint64_t i);
/* A u64 that orders like the first cell-order dimension of cell i (strings:
 * their first 8 bytes), so that key2(a) < key2(b) implies a < b and equal
 * values need the full comparison. Only when o->key2. */
uint64_t tfs__order_key2(const struct tfs__order *o, const struct tfs__cells *c,
			 uint64_t i);
/* Hilbert value of cell i of c. */
uint64_t tfs__hilbert_key(const struct tfs__order *o,
			  const struct tfs__cells *c, uint64_t i);
/* Writes "(3, 4)" for cell i's coordinates into buf. */
void tfs__coords_format(char *buf, size_t cap, const struct tfs__order *o,
			const struct tfs__cells *c, uint64_t i);

/* ---- Sorted cell source (sort.c) ----------------------------------------- */

struct tfs__sorter;

struct tfs__sort_opts {
	const struct tfs__order *order;
	const struct tfs__field *fields;
	uint32_t field_num;
	uint64_t memory;       /* bytes before a run is spilled */
	const char *spill_dir; /* POSIX folder */
	bool check_dups;       /* equal coordinates are an error or dropped */
	bool dedup;            /* drop all but the last */
	const char *tag_word;
};

enum tfs_err tfs__sorter_new(const struct tfs__sort_opts *o,
			     struct tfs__sorter **out) TFS_WUR;
void tfs__sorter_free(struct tfs__sorter *s);
/* The cells being collected (callers append to it, then call
 * tfs__sorter_added). */
struct tfs__cells *tfs__sorter_cells(struct tfs__sorter *s);
/* Spills the collected cells as a sorted run when over budget. */
enum tfs_err tfs__sorter_added(struct tfs__sorter *s, struct tfs_diag *d) TFS_WUR;
uint64_t tfs__sorter_total(const struct tfs__sorter *s);
/* Ends collection and starts (or restarts) the sorted stream. */
enum tfs_err tfs__sorter_rewind(struct tfs__sorter *s, struct tfs_diag *d) TFS_WUR;
/* Next cell in global order: the cell stays valid until the next call.
 * *cells = NULL at the end. Duplicates per the options (TFS_E_INVALID
 * naming both tags). */
enum tfs_err tfs__sorter_next(struct tfs__sorter *s,
			      const struct tfs__cells **cells, uint64_t *i,
			      struct tfs_diag *d) TFS_WUR;
/* Up to max next cells, all of one cell set: *cells and idx[0..*n) (the
 * cells' indexes in it), valid until the next call; *n = 0 at the end.
 * Same duplicate rules as tfs__sorter_next, which must not be mixed in. */
enum tfs_err tfs__sorter_next_many(struct tfs__sorter *s,
				   const struct tfs__cells **cells,
				   uint64_t *idx, uint64_t max, uint64_t *n,
				   struct tfs_diag *d) TFS_WUR;
uint64_t tfs__sorter_dropped(const struct tfs__sorter *s);

/* ---- Tile writer (tile_writer.c) ------------------------------------------ */

struct tfs__tw;

struct tfs__tw_opts {
	struct tfs_vfs *vfs;
	const char *dir;            /* fragment folder */
	const struct tfs_schema *s; /* schema written with */
	const struct tfs__field *fields;
	uint32_t field_num;
	uint32_t version;           /* W */
	const uint8_t *key;
	struct tfs_pool *pool;
	unsigned jobs;              /* tiles encoded at once */
	bool dense;
	/* Dense: the box (NED) as int64/uint64 raw values per dimension. */
	const struct tfs_range *box;
	bool timestamps; /* a field is_timestamps: the footer says so */
};

enum tfs_err tfs__tw_new(const struct tfs__tw_opts *o, struct tfs__tw **out,
			 struct tfs_diag *d) TFS_WUR;
void tfs__tw_free(struct tfs__tw *t);
/* Adds the next cell in global order (sparse) or in dense tile order. */
enum tfs_err tfs__tw_add(struct tfs__tw *t, const struct tfs__cells *c,
			 uint64_t i, struct tfs_diag *d) TFS_WUR;
/* Dense writes: adds cells i .. i + n - 1 of c, which take consecutive
 * places of one tile in cell order (a run along the fastest dimension of
 * the cell order): the first as tfs__tw_add places it, the others copied
 * after it a column at a time. */
enum tfs_err tfs__tw_add_run(struct tfs__tw *t, const struct tfs__cells *c,
			     uint64_t i, uint64_t n,
			     struct tfs_diag *d) TFS_WUR;
/* Adds n cells (indexes idx into c) in order; gathers a column at a time
 * into sparse tiles. */
enum tfs_err tfs__tw_add_many(struct tfs__tw *t, const struct tfs__cells *c,
			      const uint64_t *idx, uint64_t n,
			      struct tfs_diag *d) TFS_WUR;
/* Writes the remaining tiles and __fragment_metadata.tdb; *bytes = bytes
 * written into the folder. */
enum tfs_err tfs__tw_finish(struct tfs__tw *t, uint64_t *bytes,
			    uint64_t *cell_num, struct tfs_diag *d) TFS_WUR;

/* ---- Dense boxes by rows of tiles (dense_box.c) ---------------------------- */

/* Drops the first k cells of c. */
void tfs__cells_drop_front(struct tfs__cells *c, const struct tfs__field *fields,
			   uint64_t k);
/* Feeds the tiles of one row of space tiles to tw in global order (tile
 * order row-major): c holds, row-major, the box cells of dimension-0
 * offsets [row0, row0 + nrows) (one tile row, clipped to the box); box
 * bounds are offsets from the domain's low ends. */
enum tfs_err tfs__box_emit(struct tfs__tw *tw, const struct tfs__cells *c,
			   const struct tfs_schema *s, const uint64_t *boxlo,
			   const uint64_t *boxhi, uint64_t row0, uint64_t nrows,
			   struct tfs_diag *d) TFS_WUR;

/* ---- Helpers shared by the module ------------------------------------------ */

uint64_t tfs__now_ms(void);
/* Waits (up to 100 ms) until the clock reaches t: a commit timestamped
 * just ahead of the clock is then seen by an opening "now" right after. */
void tfs__wait_until_ms(uint64_t t);
/* Greatest t1/t2 of every timestamped name in the array folder, its
 * __fragments/, __commits/ (and, when meta, __meta/). */
enum tfs_err tfs__max_timestamp(struct tfs_vfs *vfs, const char *path,
				bool meta, uint64_t *out,
				struct tfs_diag *d) TFS_WUR;
struct tfs_arraydir;

/* *vfs, or when it is NULL a new default storage for path, which *own
 * then holds for the caller to free (NULL otherwise). */
enum tfs_err tfs__vfs_or_default(const char *path, struct tfs_vfs **vfs,
				 struct tfs_vfs **own,
				 struct tfs_diag *d) TFS_WUR;

/* The array folder at path with every schema, also those stamped ahead
 * of now (key: the array's encryption key, or NULL). */
enum tfs_err tfs__arraydir_open_all(struct tfs_vfs *vfs, const char *path,
				    const uint8_t *key,
				    struct tfs_arraydir **out,
				    struct tfs_diag *d) TFS_WUR;
/* Removes a folder and everything in it (best effort). */
void tfs__remove_tree(struct tfs_vfs *vfs, const char *path);
/* Removes everything in a folder but the folder (best effort). */
void tfs__empty_dir(struct tfs_vfs *vfs, const char *path);
/* Writes a whole file and fsyncs it. */
enum tfs_err tfs__write_file(struct tfs_vfs *vfs, const char *path,
			     const void *data, size_t len,
			     struct tfs_diag *d) TFS_WUR;

/* Offset of coordinate v of an integer dimension from the domain's low
 * end, modulo 2^64. */
static inline uint64_t tfs__dim_off(const struct tfs_dim *dm, const uint8_t *v)
{
	if (tfs_datatype_class(dm->type) == TFS_CLASS_SIGNED)
		return (uint64_t)tfs_value_as_i64(dm->type, v) -
		       (uint64_t)tfs_value_as_i64(dm->type, dm->domain[0]);
	return tfs_value_as_u64(dm->type, v) -
	       tfs_value_as_u64(dm->type, dm->domain[0]);
}

/* Every attribute of attrs that names an enumeration names one of s's
 * (with its values in tfs_enum_ref.def), which the attribute's type can
 * index (TileDB's rule); else TFS_E_INVALID naming both (array_create.c;
 * creation and evolution). */
enum tfs_err tfs__check_attr_enums(const char *path, const struct tfs_attr *attrs,
				   uint32_t attr_num, const struct tfs_schema *s,
				   struct tfs_diag *d) TFS_WUR;

#endif
