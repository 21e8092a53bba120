/* What the files of the sparse reader share: its state (sparse.c's
 * opening comment explains it) and the small helpers every step uses,
 * inline because they run per cell. Files: sparse_open.c (opening: fields,
 * fragments, tiles, delete conditions), sparse_gather.c (coordinates and
 * attributes of a piece, on the pool), sparse_order.c (sorting and the
 * JSON text that orders duplicates), sparse.c (pieces and the reader). */
#ifndef TFS_SPARSE_READER_H
#define TFS_SPARSE_READER_H

#include "tfs_read.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_fmt_float.h"
#include "tfs_mem.h"
#include "tfs_sparse.h"

/* Candidate cells per piece (an estimate from whole tiles). */
#define PIECE_CELLS (UINT64_C(1) << 22)
/* A piece gathers at most 1/PIECE_SHARE of the memory budget (its cells
 * at piece_cell_bytes each), PIECE_CELLS_MIN cells at least. */
#define PIECE_SHARE 8
#define PIECE_CELLS_MIN 4096
/* Cells of a tile's first reservation of kept cells (sparse_gather.c). */
#define CELLS_STEP 1024
/* Tiles decoded per wave of pool jobs. */
#define WAVE_TILES 256
/* Hard ceilings of the piece buffers. */
#define PIECE_BYTES_MAX ((size_t)1 << 40)

/* A coordinate of one dimension: an order-preserving key for fixed-size
 * types, the bytes for strings. */
struct sp_val {
	uint64_t key;
	const uint8_t *p;
	uint64_t len;
};

struct sp_dim {
	uint8_t type;
	bool var;
	uint32_t size; /* fixed: bytes per coordinate */
	struct sp_val sub_lo, sub_hi;
};

enum sp_src_kind { SRC_DIM, SRC_LOAD, SRC_FILL };

/* Where the values of a condition field come from in one fragment. */
struct sp_src {
	uint8_t kind;
	uint32_t n; /* dimension index or load index */
	struct tfs_cond_field desc;
	const uint8_t *fill;
	uint64_t fill_len;
	bool fill_valid;
};

/* A delete condition that applies to a fragment. */
struct sp_fdel {
	uint32_t del;
	bool with_ts; /* τ inside [t1, t2] of a timestamped fragment */
	struct tfs_cond_field *desc; /* per local field of the condition */
};

struct sp_frag {
	struct tfs_fragment *f;
	uint32_t index;     /* fragment index: larger is newer */
	uint64_t t1;
	bool zipped;        /* coordinates in the __coords slot (v < 5) */
	uint32_t coords_slot;
	uint32_t *dim_slot; /* v5+: slot of each dimension */
	bool read_ts;       /* decode the per-cell timestamps */
	bool time_filter;   /* the window cuts through [t1, t2] */
	bool has_ts;
	uint32_t ts_slot;
	bool has_dt;
	uint32_t dt_slot;
	/* Attribute slots step 4 decodes, with their descriptions. */
	uint32_t *load_slot;
	struct tfs_slot_desc *load_desc;
	uint32_t load_num;
	int32_t *field_load; /* per query field: load index, -1 dim or fill */
	struct sp_src *src;  /* per global condition field */
	struct sp_fdel *dels;
	uint32_t del_num;
};

struct sp_del {
	const struct tfs_delete *src;
	struct tfs_cond *cond;
	uint32_t *gmap; /* condition field → global condition field */
};

/* A candidate tile: 32 bytes, for readers keep one per tile of every
 * fragment they touch (arrays of many small tiles have hundreds of
 * thousands). Its MBR along dimension 0 (tile_lo, tile_hi): keys when
 * that dimension is fixed-size, else the range in the fragment's R-tree,
 * which stays loaded for the fragment's life. */
struct sp_tile {
	uint64_t cells;
	uint32_t frag : 31;
	uint32_t inside : 1; /* the MBR lies wholly in the subarray */
	uint32_t tile;
	union {
		struct {
			uint64_t lo, hi;
		} key;
		const struct tfs_range *mbr;
	} b;
};

/* Compact columns of cells. */
struct sp_cells {
	uint64_t n;
	struct tfs_buf keys;   /* n × D u64 */
	struct tfs_buf *coord; /* per dimension: fixed n × size, var bytes */
	struct tfs_buf *coff;  /* per var dimension: n u64 starts */
	struct tfs_buf tile;   /* u32: index into the piece's tile list */
	struct tfs_buf pos;    /* u32: position inside the tile */
	struct tfs_buf ts;     /* u64: timestamp deciding newest */
	struct tfs_buf dt;     /* u8: deleted by delete metadata */
};

/* Values of one field, one row per cell. */
struct sp_col {
	struct tfs_buf data;
	struct tfs_buf off;   /* var: u64 start per row */
	struct tfs_buf valid; /* u8 per row */
};

struct sp_stored;

struct sp_reader {
	struct tfs_query *q;
	uint32_t dim_num;
	struct sp_dim *dims;
	bool dedup;
	uint64_t t0, t1;
	struct sp_frag *frags;
	uint32_t frag_num;
	struct sp_del *dels;
	uint32_t del_num;
	uint8_t **fills;     /* per query field: fixed fill cell, or NULL */
	const char **gnames; /* global condition fields */
	uint32_t gname_num;
	struct sp_tile *tiles; /* candidates, sorted by lo0 */
	uint32_t tile_num;
	uint32_t tile_first; /* tiles before it lie wholly below `lower` */
	uint64_t piece_cap;
	/* Bytes of the current piece counted in the memory accountant. */
	uint64_t piece_charged;
	/* Cells the current piece is estimated to gather (piece_plan). */
	uint64_t p_cells;
	/* Bytes of the tile list counted in the memory accountant. */
	uint64_t tiles_charged;

	/* Progress along dimension 0. */
	bool finished;
	bool have_lower;
	struct sp_val lower;

	/* The current piece. */
	bool p_has_lo, p_has_hi;
	struct sp_val p_lo, p_hi;
	uint32_t *ptiles;
	uint32_t ptile_num;
	struct sp_cells cells;
	struct sp_col *cols; /* per query field (attributes) */
	uint32_t *row;       /* per cell: row in cols, UINT32_MAX = deleted */
	uint32_t *order;
	uint32_t order_num;
	uint32_t pos;

	/* Nothing to resolve by sorting (tfs__sp_plain). */
	bool plain;
	/* Cells known from fragment metadata (tfs_query_cells_known). */
	bool count_known;
	uint64_t count;
	/* Stored order without sorting (sparse_stored.c), or NULL. */
	struct sp_stored *stored;
};

/* ---- Small helpers --------------------------------------------------- */

/* base + off, where an empty buffer may have no storage at all. */
static inline const uint8_t *byte_at(const uint8_t *base, uint64_t off)
{
	return base ? base + off : (const uint8_t *)"";
}

static inline uint64_t key_of(uint8_t type, const uint8_t *p)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
		return (uint64_t)tfs_value_as_i64(type, p) ^ (UINT64_C(1) << 63);
	case TFS_CLASS_UNSIGNED:
		return tfs_value_as_u64(type, p);
	case TFS_CLASS_FLOAT: {
		double v = tfs_value_as_f64(type, p);
		uint64_t b;

		if (v == 0)
			v = 0.0; /* −0 and +0 are the same coordinate */
		memcpy(&b, &v, sizeof(b));
		return (b >> 63) ? ~b : b | (UINT64_C(1) << 63);
	}
	default: {
		size_t n = tfs_datatype_size(type);

		if (n == 0 || n > 8)
			return 0;
		return tfs_get_be(p, (unsigned)n) << (64 - 8 * n);
	}
	}
}

static inline void val_set(struct sp_val *v, const struct sp_dim *dm,
		    const uint8_t *p, uint64_t len)
{
	v->p = p;
	v->len = len;
	v->key = dm->var ? 0 : key_of(dm->type, p);
}

static inline int val_cmp(const struct sp_dim *dm, const struct sp_val *a,
		   const struct sp_val *b)
{
	if (!dm->var)
		return a->key < b->key ? -1 : a->key > b->key;
	return tfs_bytes_cmp(a->p, (size_t)a->len, b->p, (size_t)b->len);
}

/* The lower and upper bounds of tile t along dimension 0 (dm). */
static inline struct sp_val tile_lo(const struct sp_dim *dm,
				    const struct sp_tile *t)
{
	if (dm->var)
		return (struct sp_val){.p = t->b.mbr->lo, .len = t->b.mbr->lo_len};
	return (struct sp_val){.key = t->b.key.lo, .len = dm->size};
}

static inline struct sp_val tile_hi(const struct sp_dim *dm,
				    const struct sp_tile *t)
{
	if (dm->var)
		return (struct sp_val){.p = t->b.mbr->hi, .len = t->b.mbr->hi_len};
	return (struct sp_val){.key = t->b.key.hi, .len = dm->size};
}

/* val_cmp of tile t's lower (upper) bound with v. */
static inline int tile_lo_cmp(const struct sp_dim *dm, const struct sp_tile *t,
			      const struct sp_val *v)
{
	struct sp_val lo = tile_lo(dm, t);

	return val_cmp(dm, &lo, v);
}

static inline int tile_hi_cmp(const struct sp_dim *dm, const struct sp_tile *t,
			      const struct sp_val *v)
{
	struct sp_val hi = tile_hi(dm, t);

	return val_cmp(dm, &hi, v);
}

static inline void cells_init(struct sp_cells *c)
{
	c->n = 0;
	tfs_buf_init(&c->keys, PIECE_BYTES_MAX);
	tfs_buf_init(&c->tile, PIECE_BYTES_MAX);
	tfs_buf_init(&c->pos, PIECE_BYTES_MAX);
	tfs_buf_init(&c->ts, PIECE_BYTES_MAX);
	tfs_buf_init(&c->dt, PIECE_BYTES_MAX);
}

static inline void cells_release(struct sp_cells *c, uint32_t dims)
{
	tfs_buf_release(&c->keys);
	tfs_buf_release(&c->tile);
	tfs_buf_release(&c->pos);
	tfs_buf_release(&c->ts);
	tfs_buf_release(&c->dt);
	for (uint32_t k = 0; c->coord && k < dims; k++) {
		tfs_buf_release(&c->coord[k]);
		tfs_buf_release(&c->coff[k]);
	}
	tfs_free(c->coord);
	tfs_free(c->coff);
	c->coord = NULL;
	c->coff = NULL;
	c->n = 0;
}

static inline enum tfs_err cells_alloc(struct sp_cells *c, uint32_t dims)
{
	cells_init(c);
	c->coord = tfs_callocn(dims, sizeof(*c->coord));
	c->coff = tfs_callocn(dims, sizeof(*c->coff));
	if (!c->coord || !c->coff) {
		tfs_free(c->coord);
		tfs_free(c->coff);
		c->coord = c->coff = NULL;
		return TFS_E_NOMEM;
	}
	for (uint32_t k = 0; k < dims; k++) {
		tfs_buf_init(&c->coord[k], PIECE_BYTES_MAX);
		tfs_buf_init(&c->coff[k], PIECE_BYTES_MAX);
	}
	return TFS_E_OK;
}

static inline const uint64_t *cell_keys(const struct sp_reader *r, uint32_t i)
{
	return (const uint64_t *)(const void *)r->cells.keys.data +
	       (size_t)i * r->dim_num;
}

/* Coordinate of cell i along dimension k in a set of cells. */
static inline const uint8_t *cells_coord(const struct sp_cells *c,
				  const struct sp_dim *dm, uint32_t k,
				  uint64_t i, uint64_t *len)
{
	if (!dm->var) {
		*len = dm->size;
		return byte_at(c->coord[k].data, i * dm->size);
	}
	{
		const uint64_t *off = (const uint64_t *)(const void *)c->coff[k].data;
		uint64_t end = i + 1 < c->n ? off[i + 1] : c->coord[k].len;

		*len = end - off[i];
		return byte_at(c->coord[k].data, off[i]);
	}
}

static inline uint32_t cell_u32(const struct tfs_buf *b, uint32_t i)
{
	uint32_t v;

	memcpy(&v, b->data + (size_t)i * 4, 4);
	return v;
}

static inline uint64_t cell_u64(const struct tfs_buf *b, uint32_t i)
{
	uint64_t v;

	memcpy(&v, b->data + (size_t)i * 8, 8);
	return v;
}

static inline void col_init(struct sp_col *c)
{
	tfs_buf_init(&c->data, PIECE_BYTES_MAX);
	tfs_buf_init(&c->off, PIECE_BYTES_MAX);
	tfs_buf_init(&c->valid, PIECE_BYTES_MAX);
}

static inline void col_release(struct sp_col *c)
{
	tfs_buf_release(&c->data);
	tfs_buf_release(&c->off);
	tfs_buf_release(&c->valid);
}

static inline void cols_free(struct sp_col *cols, size_t n)
{
	for (size_t i = 0; cols && i < n; i++)
		col_release(&cols[i]);
	tfs_free(cols);
}

static inline struct sp_col *cols_new(size_t n)
{
	struct sp_col *cols = tfs_callocn(n ? n : 1, sizeof(*cols));

	for (size_t i = 0; cols && i < n; i++)
		col_init(&cols[i]);
	return cols;
}

/* Row r of a column of a field. */
static inline const uint8_t *col_value(const struct sp_col *c,
				const struct tfs_out_field *f, uint32_t r,
				uint64_t *len, uint8_t *valid)
{
	*valid = c->valid.data[r];
	if (!f->var) {
		*len = f->cell_size;
		return byte_at(c->data.data, (uint64_t)r * f->cell_size);
	}
	{
		const uint64_t *off = (const uint64_t *)(const void *)c->off.data;
		size_t rows = c->off.len / 8;
		uint64_t end = (size_t)r + 1 < rows ? off[r + 1] : c->data.len;

		*len = end - off[r];
		return byte_at(c->data.data, off[r]);
	}
}

static inline enum tfs_err col_append(struct sp_col *c, bool var, const uint8_t *p,
			       uint64_t len, uint8_t valid)
{
	enum tfs_err e = TFS_E_OK;

	if (var)
		e = tfs_buf_append_u64(&c->off, c->data.len);
	if (!e && len)
		e = tfs_buf_append(&c->data, p, (size_t)len);
	if (!e)
		e = tfs_buf_append_u8(&c->valid, valid);
	return e;
}

/* Appends src's rows to dst (var offsets rebased). */
static inline enum tfs_err col_merge(struct sp_col *dst, const struct sp_col *src,
			      bool var)
{
	size_t base = dst->data.len;
	enum tfs_err e;

	if (var) {
		size_t rows = src->off.len / 8;

		e = tfs_buf_reserve(&dst->off, src->off.len);
		if (e)
			return e;
		for (size_t i = 0; i < rows; i++) {
			uint64_t o;

			memcpy(&o, src->off.data + i * 8, 8);
			e = tfs_buf_append_u64(&dst->off, o + base);
			if (e)
				return e;
		}
	}
	e = tfs_buf_append(&dst->data, src->data.data, src->data.len);
	if (!e)
		e = tfs_buf_append(&dst->valid, src->valid.data,
				   src->valid.len);
	return e;
}

typedef int (*sp_cmp_fn)(const void *ctx, uint32_t a, uint32_t b);

/* sparse_order.c */
enum tfs_err tfs__sp_sort_index(uint32_t *v, size_t n, sp_cmp_fn cmp,
				const void *ctx);
/* Dimensions the radix sort packs at most. */
#define TFS_RADIX_MAX_DIMS 16
/* Sorts order[0, n) (cells of the piece) by coordinates, stable, with a
 * radix sort of the fixed-size dimensions' keys packed into 32 bits;
 * false (order untouched) when they do not fit or memory is short. */
bool tfs__sp_radix_order(const struct sp_reader *r, uint32_t *order,
			 uint32_t n);
int tfs__sp_tile_lo_cmp(const void *ctx, uint32_t a, uint32_t b);
int tfs__sp_coords_cmp(const struct sp_reader *r, uint32_t a, uint32_t b);
int tfs__sp_coords_only_cmp(const void *ctx, uint32_t a, uint32_t b);
int tfs__sp_newest_cmp(const void *ctx, uint32_t a, uint32_t b);
enum tfs_err tfs__sp_json_value(struct tfs_buf *b,
				const struct tfs_out_field *f,
				const uint8_t *p, uint64_t len, uint8_t valid);

/* sparse_open.c */
bool tfs__sp_box_meets(const struct sp_reader *r, const struct tfs_range *box);
enum tfs_err tfs__sp_open_frag(struct sp_reader *r, struct sp_frag *sf,
			       struct tfs_fragment *f, uint32_t index,
			       struct tfs_diag *d);
enum tfs_err tfs__sp_add_tiles(struct sp_reader *r, uint32_t fi, size_t *cap,
			       struct tfs_diag *d);
/* Counts `bytes` for the tile list in the memory accountant: a growth
 * waits for room like a tile (readers of arrays of many small tiles take
 * turns), a drop is given back. */
enum tfs_err tfs__sp_tiles_charge(struct sp_reader *r, uint64_t bytes,
				  struct tfs_diag *d);
enum tfs_err tfs__sp_sort_tiles(struct sp_reader *r, struct tfs_diag *d);
enum tfs_err tfs__sp_open_deletes(struct sp_reader *r, struct tfs_diag *d);

/* sparse_gather.c */
enum tfs_err tfs__sp_gather_coords(struct sp_reader *r, struct tfs_diag *d);
enum tfs_err tfs__sp_prepare_fills(struct sp_reader *r, struct tfs_diag *d);
enum tfs_err tfs__sp_gather_attrs(struct sp_reader *r, struct tfs_diag *d);
enum tfs_err tfs__sp_check_tile(const struct tfs_fragment *f, uint32_t slot,
				uint64_t tile, const struct tfs_tile *t,
				uint64_t cells, uint64_t cell_size, bool var,
				struct tfs_diag *d) TFS_WUR;

/* sparse_stored.c: the cells in stored order, tile by tile, when nothing
 * needs sorting (tfs__sp_plain: no fragments that may shadow each other,
 * no deletes, no time-window cut). */
bool tfs__sp_plain(const struct sp_reader *r);
enum tfs_err tfs__sp_stored_open(struct sp_reader *r, struct tfs_diag *d) TFS_WUR;
enum tfs_err tfs__sp_stored_next(struct sp_reader *r, struct tfs_diag *d) TFS_WUR;
void tfs__sp_stored_free(struct sp_reader *r);

#endif
