/* The sparse reader (format/read.md §7–10): the cells of every visible
 * fragment of a sparse array that lie in the subarray, after the time
 * window, deduplication (newest wins unless the schema allows duplicates),
 * delete metadata and delete conditions, sorted by coordinates with the
 * first dimension slowest.
 *
 * Memory stays bounded whatever the selection: the subarray is cut along
 * dimension 0 into pieces whose candidate tiles (R-tree leaves that meet
 * the subarray) hold at most PIECE_CELLS cells, split at the leaves' lower
 * bounds (a piece can only be larger where more tiles than that all reach
 * across one such bound). A tile reaching into several pieces is decoded
 * once per piece; only a few tiles are decoded at a time, and only the
 * cells that survive are kept, as compact columns.
 * Per piece:
 *   1. decode the coordinates (and timestamps, delete times) of each
 *      candidate tile on the pool, keep the cells inside the subarray,
 *      the piece and the time window, as compact columns;
 *   2. sort by coordinates (then newest first) and deduplicate;
 *   3. drop the cells deleted by delete metadata;
 *   4. decode the attribute tiles that still hold cells, evaluate the
 *      delete conditions and copy the requested values;
 *   5. order duplicates by the JSON text of the cell (how the corpus
 *      orders equal coordinates) and emit in batches.
 * Sparse fragments of dense arrays are the dense reader's business. */
#include "tfs_read.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_fmt_float.h"
#include "tfs_sparse.h"

/* Candidate cells per piece (an estimate from whole tiles). */
#define PIECE_CELLS (UINT64_C(1) << 22)
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

struct sp_tile {
	uint32_t frag;
	uint64_t tile;
	uint64_t cells;
	struct sp_val lo0, hi0; /* MBR along dimension 0 */
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
};

/* ---- Small helpers --------------------------------------------------- */

/* base + off, where an empty buffer may have no storage at all. */
static const uint8_t *at(const uint8_t *base, uint64_t off)
{
	return base ? base + off : (const uint8_t *)"";
}

static uint64_t key_of(uint8_t type, const uint8_t *p)
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

static void val_set(struct sp_val *v, const struct sp_dim *dm,
		    const uint8_t *p, uint64_t len)
{
	v->p = p;
	v->len = len;
	v->key = dm->var ? 0 : key_of(dm->type, p);
}

static int val_cmp(const struct sp_dim *dm, const struct sp_val *a,
		   const struct sp_val *b)
{
	if (!dm->var)
		return a->key < b->key ? -1 : a->key > b->key;
	return tfs_bytes_cmp(a->p, (size_t)a->len, b->p, (size_t)b->len);
}

static void cells_init(struct sp_cells *c)
{
	c->n = 0;
	tfs_buf_init(&c->keys, PIECE_BYTES_MAX);
	tfs_buf_init(&c->tile, PIECE_BYTES_MAX);
	tfs_buf_init(&c->pos, PIECE_BYTES_MAX);
	tfs_buf_init(&c->ts, PIECE_BYTES_MAX);
	tfs_buf_init(&c->dt, PIECE_BYTES_MAX);
}

static void cells_release(struct sp_cells *c, uint32_t dims)
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

static enum tfs_err cells_alloc(struct sp_cells *c, uint32_t dims)
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

static const uint64_t *cell_keys(const struct sp_reader *r, uint32_t i)
{
	return (const uint64_t *)(const void *)r->cells.keys.data +
	       (size_t)i * r->dim_num;
}

/* Coordinate of cell i along dimension k in a set of cells. */
static const uint8_t *cells_coord(const struct sp_cells *c,
				  const struct sp_dim *dm, uint32_t k,
				  uint64_t i, uint64_t *len)
{
	if (!dm->var) {
		*len = dm->size;
		return at(c->coord[k].data, i * dm->size);
	}
	{
		const uint64_t *off = (const uint64_t *)(const void *)c->coff[k].data;
		uint64_t end = i + 1 < c->n ? off[i + 1] : c->coord[k].len;

		*len = end - off[i];
		return at(c->coord[k].data, off[i]);
	}
}

static uint32_t cell_u32(const struct tfs_buf *b, uint32_t i)
{
	uint32_t v;

	memcpy(&v, b->data + (size_t)i * 4, 4);
	return v;
}

static uint64_t cell_u64(const struct tfs_buf *b, uint32_t i)
{
	uint64_t v;

	memcpy(&v, b->data + (size_t)i * 8, 8);
	return v;
}

static void col_init(struct sp_col *c)
{
	tfs_buf_init(&c->data, PIECE_BYTES_MAX);
	tfs_buf_init(&c->off, PIECE_BYTES_MAX);
	tfs_buf_init(&c->valid, PIECE_BYTES_MAX);
}

static void col_release(struct sp_col *c)
{
	tfs_buf_release(&c->data);
	tfs_buf_release(&c->off);
	tfs_buf_release(&c->valid);
}

static void cols_free(struct sp_col *cols, size_t n)
{
	for (size_t i = 0; cols && i < n; i++)
		col_release(&cols[i]);
	tfs_free(cols);
}

static struct sp_col *cols_new(size_t n)
{
	struct sp_col *cols = tfs_callocn(n ? n : 1, sizeof(*cols));

	for (size_t i = 0; cols && i < n; i++)
		col_init(&cols[i]);
	return cols;
}

/* Row r of a column of a field. */
static const uint8_t *col_value(const struct sp_col *c,
				const struct tfs_out_field *f, uint32_t r,
				uint64_t *len, uint8_t *valid)
{
	*valid = c->valid.data[r];
	if (!f->var) {
		*len = f->cell_size;
		return at(c->data.data, (uint64_t)r * f->cell_size);
	}
	{
		const uint64_t *off = (const uint64_t *)(const void *)c->off.data;
		size_t rows = c->off.len / 8;
		uint64_t end = (size_t)r + 1 < rows ? off[r + 1] : c->data.len;

		*len = end - off[r];
		return at(c->data.data, off[r]);
	}
}

static enum tfs_err col_append(struct sp_col *c, bool var, const uint8_t *p,
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
static enum tfs_err col_merge(struct sp_col *dst, const struct sp_col *src,
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

/* ---- Sorting ----------------------------------------------------------- */

typedef int (*sp_cmp_fn)(const void *ctx, uint32_t a, uint32_t b);

static void insertion_sort(uint32_t *v, size_t n, sp_cmp_fn cmp,
			   const void *ctx)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t x = v[i];
		size_t j = i;

		while (j > 0 && cmp(ctx, v[j - 1], x) > 0) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

/* Stable merge sort of an index array. */
static enum tfs_err sort_index(uint32_t *v, size_t n, sp_cmp_fn cmp,
			       const void *ctx)
{
	const size_t run = 16;
	uint32_t *tmp, *src = v, *dst;

	for (size_t i = 0; i < n; i += run)
		insertion_sort(v + i, n - i < run ? n - i : run, cmp, ctx);
	if (n <= run)
		return TFS_E_OK;
	tmp = tfs_mallocn(n, sizeof(*tmp));
	if (!tmp)
		return TFS_E_NOMEM;
	dst = tmp;
	for (size_t w = run; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t a = lo, b = mid, o = lo;

			while (a < mid && b < hi)
				dst[o++] = cmp(ctx, src[b], src[a]) < 0 ? src[b++]
									: src[a++];
			while (a < mid)
				dst[o++] = src[a++];
			while (b < hi)
				dst[o++] = src[b++];
		}
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	tfs_free(tmp);
	return TFS_E_OK;
}

static int tile_lo_cmp(const void *ctx, uint32_t a, uint32_t b)
{
	const struct sp_reader *r = ctx;

	return val_cmp(&r->dims[0], &r->tiles[a].lo0, &r->tiles[b].lo0);
}

static int coords_cmp(const struct sp_reader *r, uint32_t a, uint32_t b)
{
	const uint64_t *ka = cell_keys(r, a), *kb = cell_keys(r, b);

	for (uint32_t k = 0; k < r->dim_num; k++) {
		if (!r->dims[k].var) {
			if (ka[k] != kb[k])
				return ka[k] < kb[k] ? -1 : 1;
		} else {
			uint64_t la, lb;
			const uint8_t *pa = cells_coord(&r->cells, &r->dims[k],
							k, a, &la);
			const uint8_t *pb = cells_coord(&r->cells, &r->dims[k],
							k, b, &lb);
			int c = tfs_bytes_cmp(pa, (size_t)la, pb, (size_t)lb);

			if (c)
				return c;
		}
	}
	return 0;
}

static int coords_only_cmp(const void *ctx, uint32_t a, uint32_t b)
{
	return coords_cmp(ctx, a, b);
}

/* Coordinates, then newest first: cell timestamp, fragment index, then
 * the later cell. */
static int newest_cmp(const void *ctx, uint32_t a, uint32_t b)
{
	const struct sp_reader *r = ctx;
	int c = coords_cmp(r, a, b);
	uint64_t ta, tb;
	uint32_t fa, fb, pa, pb;

	if (c)
		return c;
	ta = cell_u64(&r->cells.ts, a);
	tb = cell_u64(&r->cells.ts, b);
	if (ta != tb)
		return ta > tb ? -1 : 1;
	pa = cell_u32(&r->cells.tile, a);
	pb = cell_u32(&r->cells.tile, b);
	fa = r->frags[r->tiles[r->ptiles[pa]].frag].index;
	fb = r->frags[r->tiles[r->ptiles[pb]].frag].index;
	if (fa != fb)
		return fa > fb ? -1 : 1;
	if (pa != pb)
		return pa > pb ? -1 : 1;
	pa = cell_u32(&r->cells.pos, a);
	pb = cell_u32(&r->cells.pos, b);
	return pa > pb ? -1 : pa < pb;
}

/* ---- JSON text of a cell (order of duplicates) --------------------------
 *
 * The corpus sorts equal coordinates by the JSON text of the cell object
 * (corpus/README.md, "The JSON"): values as the corpus writes them, so
 * 1 < 100 < 17 and a string sorts by its escaped UTF-8 bytes. Field names
 * and separators are the same in both texts and drop out, except the
 * character after the last value ('}') versus after the others (','). */

static enum tfs_err json_float(struct tfs_buf *b, double v, bool f32)
{
	struct tfs_decimal dec;
	char digits[24];
	size_t nd;
	int exp;
	enum tfs_err e = TFS_E_OK;

	if (v != v)
		return tfs_buf_append(b, "\"NaN\"", 5);
	if (v > DBL_MAX)
		return tfs_buf_append(b, "\"Infinity\"", 10);
	if (v < -DBL_MAX)
		return tfs_buf_append(b, "\"-Infinity\"", 11);
	if (v >= 9007199254740992.0 || v <= -9007199254740992.0 ||
	    v == (double)(int64_t)v)
		return tfs_buf_printf(b, "%.0f", v);
	/* The fewest digits that read back (as a float for FLOAT32). */
	if (f32)
		tfs_decimal_of_f32(&dec, (float)v);
	else
		tfs_decimal_of_f64(&dec, v);
	nd = (size_t)dec.ndigits;
	for (size_t i = nd; i > 0; i--) {
		digits[i - 1] = (char)('0' + dec.digits % 10);
		dec.digits /= 10;
	}
	exp = dec.exp10;
	if (dec.negative) {
		e = tfs_buf_append_u8(b, '-');
		if (e)
			return e;
	}
	if (exp >= -4 && exp < 16) {
		int decpt = exp + 1;

		if (decpt <= 0) {
			e = tfs_buf_append(b, "0.", 2);
			for (int i = 0; !e && i < -decpt; i++)
				e = tfs_buf_append_u8(b, '0');
			if (!e)
				e = tfs_buf_append(b, digits, nd);
		} else if ((size_t)decpt >= nd) {
			e = tfs_buf_append(b, digits, nd);
			for (size_t i = nd; !e && i < (size_t)decpt; i++)
				e = tfs_buf_append_u8(b, '0');
			if (!e)
				e = tfs_buf_append(b, ".0", 2);
		} else {
			e = tfs_buf_append(b, digits, (size_t)decpt);
			if (!e)
				e = tfs_buf_append_u8(b, '.');
			if (!e)
				e = tfs_buf_append(b, digits + decpt,
						   nd - (size_t)decpt);
		}
		return e;
	}
	e = tfs_buf_append_u8(b, (uint8_t)digits[0]);
	if (!e && nd > 1) {
		e = tfs_buf_append_u8(b, '.');
		if (!e)
			e = tfs_buf_append(b, digits + 1, nd - 1);
	}
	if (!e)
		e = tfs_buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+',
				   exp < 0 ? -exp : exp);
	return e;
}

/* Length of the valid UTF-8 sequence at p (0 if invalid). */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	uint32_t cp;
	size_t len;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1fu;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		cp = p[0] & 0x0fu;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07u;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3fu);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static enum tfs_err json_string(struct tfs_buf *b, const uint8_t *p,
				uint64_t len)
{
	enum tfs_err e = tfs_buf_append_u8(b, '"');

	for (size_t i = 0; !e && i < len;) {
		uint8_t c = p[i];
		size_t n;

		if (c == '"' || c == '\\') {
			e = tfs_buf_append_u8(b, '\\');
			if (!e)
				e = tfs_buf_append_u8(b, c);
			i++;
			continue;
		}
		if (c < 0x20) {
			static const char esc[] = "btnvfr";

			if (c >= 8 && c <= 13 && c != 11)
				e = tfs_buf_printf(b, "\\%c", esc[c - 8]);
			else
				e = tfs_buf_printf(b, "\\u%04x", c);
			i++;
			continue;
		}
		n = utf8_len(p + i, (size_t)(len - i));
		if (n == 0) {
			e = tfs_buf_printf(b, "\\u%04x", c);
			i++;
		} else {
			e = tfs_buf_append(b, p + i, n);
			i += n;
		}
	}
	return e ? e : tfs_buf_append_u8(b, '"');
}

static enum tfs_err json_number(struct tfs_buf *b, uint8_t type,
				const uint8_t *p)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
		return tfs_buf_printf(b, "%" PRId64, tfs_value_as_i64(type, p));
	case TFS_CLASS_UNSIGNED:
		return tfs_buf_printf(b, "%" PRIu64, tfs_value_as_u64(type, p));
	default:
		return json_float(b, tfs_value_as_f64(type, p),
				  type == TFS_FLOAT32);
	}
}

static enum tfs_err json_value(struct tfs_buf *b,
			       const struct tfs_out_field *f,
			       const uint8_t *p, uint64_t len, uint8_t valid)
{
	enum tfs_type_class k = tfs_datatype_class(f->type);
	size_t size = tfs_datatype_size(f->type);
	enum tfs_err e;

	if (f->nullable && !valid)
		return tfs_buf_append(b, "null", 4);
	if (k == TFS_CLASS_STRING)
		return json_string(b, p, len);
	if (k == TFS_CLASS_BYTES) {
		e = tfs_buf_append_u8(b, '"');
		for (uint64_t i = 0; !e && i < len; i++)
			e = tfs_buf_printf(b, "%02x", p[i]);
		return e ? e : tfs_buf_append_u8(b, '"');
	}
	if (!size)
		return TFS_E_OK;
	if (!f->var && f->cell_val_num == 1)
		return len >= size ? json_number(b, f->type, p) : TFS_E_OK;
	e = tfs_buf_append_u8(b, '[');
	for (uint64_t i = 0; !e && i + size <= len; i += size) {
		if (i)
			e = tfs_buf_append_u8(b, ',');
		if (!e)
			e = json_number(b, f->type, p + i);
	}
	return e ? e : tfs_buf_append_u8(b, ']');
}

/* ---- Opening ----------------------------------------------------------- */

static bool ranges_meet(const struct sp_dim *dm, const struct tfs_range *m)
{
	struct sp_val lo, hi;

	val_set(&lo, dm, m->lo, m->lo_len);
	val_set(&hi, dm, m->hi, m->hi_len);
	return val_cmp(dm, &lo, &dm->sub_hi) <= 0 &&
	       val_cmp(dm, &dm->sub_lo, &hi) <= 0;
}

static bool box_meets(const struct sp_reader *r, const struct tfs_range *box)
{
	for (uint32_t k = 0; k < r->dim_num; k++)
		if (!ranges_meet(&r->dims[k], &box[k]))
			return false;
	return true;
}

static enum tfs_err add_load_slot(struct sp_frag *sf, uint32_t slot,
				  uint32_t *out, struct tfs_diag *d)
{
	struct tfs_slot_desc desc;
	enum tfs_err e;
	uint32_t *ns;
	struct tfs_slot_desc *nd;

	for (uint32_t i = 0; i < sf->load_num; i++) {
		if (sf->load_slot[i] == slot) {
			*out = i;
			return TFS_E_OK;
		}
	}
	e = tfs_slot_describe(sf->f, slot, &desc, d);
	if (e)
		return e;
	ns = tfs_reallocn(sf->load_slot, sf->load_num + 1, sizeof(*ns));
	if (!ns)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	sf->load_slot = ns;
	nd = tfs_reallocn(sf->load_desc, sf->load_num + 1, sizeof(*nd));
	if (!nd)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	sf->load_desc = nd;
	ns[sf->load_num] = slot;
	nd[sf->load_num] = desc;
	*out = sf->load_num++;
	return TFS_E_OK;
}

/* Requested attributes of the current schema in a fragment's schema: the
 * same name and kind (and cell size) or the fill value (read.md §8). */
static enum tfs_err map_fields(struct sp_reader *r, struct sp_frag *sf,
			       struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;
	const struct tfs_schema *fs = sf->f->schema;

	sf->field_load = tfs_mallocn(q->field_num ? q->field_num : 1,
				     sizeof(*sf->field_load));
	if (!sf->field_load)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < q->field_num; i++) {
		const struct tfs_out_field *fld = &q->fields[i];
		const struct tfs_attr *fa;
		int ai;
		uint32_t li;
		enum tfs_err e;

		sf->field_load[i] = -1;
		if (fld->is_dim)
			continue;
		ai = tfs_schema_attr_index(fs, fld->name);
		if (ai < 0)
			continue;
		fa = &fs->attrs[ai];
		if (fa->var != fld->var ||
		    tfs_datatype_size(fa->type) != tfs_datatype_size(fld->type) ||
		    (!fa->var && tfs_attr_cell_size(fa) != fld->cell_size))
			continue;
		e = add_load_slot(sf, (uint32_t)ai, &li, d);
		if (e)
			return e;
		sf->field_load[i] = (int32_t)li;
	}
	return TFS_E_OK;
}

static bool marker_listed(const struct tfs_strlist *l, const char *marker)
{
	for (size_t i = 0; i < l->count; i++)
		if (strcmp(l->items[i], marker) == 0)
			return true;
	return false;
}

/* Delete conditions of the window that apply to a fragment (read.md §7
 * step 3) and where their fields' values come from. */
static enum tfs_err map_deletes(struct sp_reader *r, struct sp_frag *sf,
				struct tfs_diag *d)
{
	const struct tfs_schema *cur = r->q->schema;
	const struct tfs_fragment *f = sf->f;
	const struct tfs_strlist *processed = NULL;
	bool any = false;
	enum tfs_err e;

	if (!r->del_num)
		return TFS_E_OK;
	sf->dels = tfs_callocn(r->del_num, sizeof(*sf->dels));
	if (!sf->dels)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < r->del_num; i++) {
		const struct tfs_delete *del = r->dels[i].src;

		if (del->t1 < sf->t1)
			continue;
		if (f->footer.has_delete_meta) {
			if (!processed) {
				e = tfs_fragment_processed(r->q->dir, sf->f,
							   &processed, d);
				if (e)
					return e;
			}
			if (marker_listed(processed, del->marker))
				continue;
		}
		sf->dels[sf->del_num].del = i;
		sf->dels[sf->del_num].with_ts = f->footer.has_timestamps &&
						del->t1 <= f->name_info.t2;
		sf->del_num++;
		any = true;
	}
	if (!any)
		return TFS_E_OK;
	sf->src = tfs_callocn(r->gname_num ? r->gname_num : 1,
			      sizeof(*sf->src));
	if (!sf->src)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t g = 0; g < r->gname_num; g++) {
		struct sp_src *s = &sf->src[g];
		const char *name = r->gnames[g];
		int k = tfs_schema_dim_index(cur, name);

		if (k >= 0) {
			const struct tfs_dim *dm = &cur->dims[k];

			s->kind = SRC_DIM;
			s->n = (uint32_t)k;
			s->desc.type = dm->type;
			s->desc.cell_val_num = dm->cell_val_num;
			s->desc.var = dm->var;
			continue;
		}
		k = tfs_schema_attr_index(f->schema, name);
		if (k >= 0) {
			const struct tfs_attr *a = &f->schema->attrs[k];

			s->kind = SRC_LOAD;
			e = add_load_slot(sf, (uint32_t)k, &s->n, d);
			if (e)
				return e;
			s->desc.type = a->type;
			s->desc.cell_val_num = a->cell_val_num;
			s->desc.var = a->var;
			s->desc.nullable = a->nullable;
			continue;
		}
		k = tfs_schema_attr_index(cur, name);
		if (k >= 0) {
			const struct tfs_attr *a = &cur->attrs[k];

			s->kind = SRC_FILL;
			s->desc.type = a->type;
			s->desc.cell_val_num = a->cell_val_num;
			s->desc.var = a->var;
			s->desc.nullable = a->nullable;
			s->fill = a->fill;
			s->fill_len = a->fill_size;
			s->fill_valid = a->fill_valid;
			continue;
		}
		/* Only an error when a condition on it applies here. */
		for (uint32_t j = 0; j < sf->del_num; j++) {
			const struct sp_del *sd = &r->dels[sf->dels[j].del];

			for (size_t l = 0; l < tfs_cond_field_count(sd->cond); l++)
				if (sd->gmap[l] == g)
					return tfs_fail(d, TFS_E_CORRUPT,
							"delete condition '%s' refers to unknown field '%s'",
							sd->src->marker, name);
		}
		s->kind = SRC_FILL;
		s->desc.type = TFS_UINT8;
		s->desc.cell_val_num = 1;
		s->desc.nullable = true;
	}
	for (uint32_t j = 0; j < sf->del_num; j++) {
		struct sp_fdel *fd = &sf->dels[j];
		const struct sp_del *sd = &r->dels[fd->del];
		size_t n = tfs_cond_field_count(sd->cond);

		fd->desc = tfs_callocn(n ? n : 1, sizeof(*fd->desc));
		if (!fd->desc)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		for (size_t l = 0; l < n; l++)
			fd->desc[l] = sf->src[sd->gmap[l]].desc;
		e = tfs_cond_check(sd->cond, fd->desc, d);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

static enum tfs_err open_frag(struct sp_reader *r, struct sp_frag *sf,
			      struct tfs_fragment *f, uint32_t index,
			      struct tfs_diag *d)
{
	const struct tfs_schema *fs = f->schema;
	enum tfs_err e;

	sf->f = f;
	sf->index = index;
	sf->t1 = f->name_info.t1;
	if (fs->dim_num != r->dim_num)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': %u dimensions, the array has %u",
				f->name, fs->dim_num, r->dim_num);
	sf->zipped = f->footer.version < 5;
	sf->coords_slot = fs->attr_num;
	sf->dim_slot = tfs_callocn(r->dim_num, sizeof(*sf->dim_slot));
	if (!sf->dim_slot)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < r->dim_num; k++)
		sf->dim_slot[k] = tfs_fragment_dim_slot(f, k);
	if (sf->zipped) {
		for (uint32_t k = 0; k < r->dim_num; k++)
			if (r->dims[k].var || r->dims[k].type != r->dims[0].type)
				return tfs_fail(d, TFS_E_CORRUPT,
						"fragment '%s': zipped coordinates need one fixed-size type",
						f->name);
	}
	sf->has_ts = f->footer.has_timestamps;
	sf->time_filter = sf->has_ts && (f->name_info.t1 < r->t0 ||
					 f->name_info.t2 > r->t1);
	if (sf->has_ts)
		sf->ts_slot = tfs_fragment_timestamps_slot(f);
	sf->has_dt = f->footer.has_delete_meta;
	if (sf->has_dt)
		sf->dt_slot = tfs_fragment_delete_ts_slot(f);
	e = map_fields(r, sf, d);
	if (!e)
		e = map_deletes(r, sf, d);
	if (e)
		return e;
	sf->read_ts = sf->has_ts && (sf->time_filter || r->dedup);
	for (uint32_t j = 0; j < sf->del_num; j++)
		sf->read_ts = sf->read_ts || sf->dels[j].with_ts;
	return TFS_E_OK;
}

/* Candidate tiles of a fragment: leaves of its R-tree that meet the
 * subarray. */
static enum tfs_err add_tiles(struct sp_reader *r, uint32_t fi, size_t *cap,
			      struct tfs_diag *d)
{
	struct sp_frag *sf = &r->frags[fi];
	const struct tfs_rtree *rt;
	enum tfs_err e;

	e = tfs_fragment_rtree(r->q->dir, sf->f, &rt, d);
	if (e)
		return e;
	if (rt->leaf_num != sf->f->tile_num || rt->dim_num != r->dim_num)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': R-tree has %" PRIu64
				" leaves for %" PRIu64 " tiles",
				sf->f->name, rt->leaf_num, sf->f->tile_num);
	for (uint64_t t = 0; t < rt->leaf_num; t++) {
		const struct tfs_range *mbr = &rt->leaves[t * r->dim_num];
		struct sp_tile *st;

		if (!box_meets(r, mbr))
			continue;
		if (r->tile_num == UINT32_MAX - 1)
			return tfs_fail(d, TFS_E_TOO_BIG,
					"selection touches more than %" PRIu32
					" tiles", UINT32_MAX - 1);
		if (r->tile_num == *cap) {
			size_t ncap = *cap ? *cap * 2 : 64;
			struct sp_tile *nt = tfs_reallocn(r->tiles, ncap,
							  sizeof(*nt));

			if (!nt)
				return tfs_fail(d, TFS_E_NOMEM, "out of memory");
			r->tiles = nt;
			*cap = ncap;
		}
		st = &r->tiles[r->tile_num++];
		st->frag = fi;
		st->tile = t;
		st->cells = tfs_fragment_tile_cells(sf->f, t);
		val_set(&st->lo0, &r->dims[0], mbr[0].lo, mbr[0].lo_len);
		val_set(&st->hi0, &r->dims[0], mbr[0].hi, mbr[0].hi_len);
	}
	return TFS_E_OK;
}

static enum tfs_err sort_tiles(struct sp_reader *r, struct tfs_diag *d)
{
	uint32_t *idx;
	struct sp_tile *sorted;
	enum tfs_err e;

	if (r->tile_num < 2)
		return TFS_E_OK;
	idx = tfs_mallocn(r->tile_num, sizeof(*idx));
	sorted = tfs_mallocn(r->tile_num, sizeof(*sorted));
	if (!idx || !sorted) {
		e = TFS_E_NOMEM;
		goto out_free;
	}
	for (uint32_t i = 0; i < r->tile_num; i++)
		idx[i] = i;
	e = sort_index(idx, r->tile_num, tile_lo_cmp, r);
	if (e)
		goto out_free;
	for (uint32_t i = 0; i < r->tile_num; i++)
		sorted[i] = r->tiles[idx[i]];
	tfs_free(r->tiles);
	r->tiles = sorted;
	sorted = NULL;
out_free:
	tfs_free(idx);
	tfs_free(sorted);
	return e ? tfs_fail(d, e, "out of memory") : TFS_E_OK;
}

static enum tfs_err open_deletes(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_arraydir *dir = r->q->dir;

	if (!dir->delete_num)
		return TFS_E_OK;
	r->dels = tfs_callocn(dir->delete_num, sizeof(*r->dels));
	if (!r->dels)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	r->del_num = (uint32_t)dir->delete_num;
	for (uint32_t i = 0; i < r->del_num; i++) {
		struct sp_del *sd = &r->dels[i];
		size_t n;
		enum tfs_err e;

		sd->src = &dir->deletes[i];
		e = tfs_cond_compile(&sd->src->cond, &sd->cond, d);
		if (e)
			return e;
		n = tfs_cond_field_count(sd->cond);
		sd->gmap = tfs_callocn(n ? n : 1, sizeof(*sd->gmap));
		if (!sd->gmap)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		for (size_t l = 0; l < n; l++) {
			const char *name = tfs_cond_field_name(sd->cond, l);
			uint32_t g = 0;
			const char **ng;

			while (g < r->gname_num && strcmp(r->gnames[g], name))
				g++;
			if (g == r->gname_num) {
				ng = tfs_reallocn(r->gnames, r->gname_num + 1,
						  sizeof(*ng));
				if (!ng)
					return tfs_fail(d, TFS_E_NOMEM,
							"out of memory");
				r->gnames = ng;
				r->gnames[r->gname_num++] = name;
			}
			sd->gmap[l] = g;
		}
	}
	return TFS_E_OK;
}

/* ---- Step 1: coordinates of the candidate tiles ----------------------- */

struct coord_job {
	struct tfs_job job;
	struct sp_reader *r;
	uint32_t ptile;
	struct sp_cells out;
	enum tfs_err err;
	struct tfs_diag diag;
};

static bool in_piece(const struct sp_reader *r, const struct sp_val *v0)
{
	const struct sp_dim *dm = &r->dims[0];

	if (r->p_has_lo && val_cmp(dm, v0, &r->p_lo) < 0)
		return false;
	if (r->p_has_hi && val_cmp(dm, v0, &r->p_hi) >= 0)
		return false;
	return true;
}

static enum tfs_err check_tile(const struct tfs_fragment *f, uint32_t slot,
			       uint64_t tile, const struct tfs_tile *t,
			       uint64_t cells, uint64_t cell_size, bool var,
			       struct tfs_diag *d)
{
	if (t->cell_num != cells ||
	    (!var && t->fixed_len < cells * cell_size) ||
	    (var && cells && !t->offsets))
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u tile %" PRIu64
				" decodes to the wrong size",
				f->name, slot, tile);
	return TFS_E_OK;
}

static void coord_job_run(void *arg)
{
	struct coord_job *j = arg;
	struct sp_reader *r = j->r;
	const struct sp_tile *st = &r->tiles[r->ptiles[j->ptile]];
	const struct sp_frag *sf = &r->frags[st->frag];
	struct tfs_fragment *f = sf->f;
	uint32_t dims = r->dim_num, nt = sf->zipped ? 1 : dims;
	struct tfs_tile *ct, ts = {0}, dt = {0};
	uint64_t cells = st->cells;
	struct sp_val *v = NULL;
	uint64_t *keys = NULL;
	enum tfs_err e = TFS_E_OK;

	tfs_diag_init(&j->diag);
	ct = tfs_callocn(nt, sizeof(*ct));
	v = tfs_callocn(dims, sizeof(*v));
	keys = tfs_callocn(dims, sizeof(*keys));
	if (!ct || !v || !keys) {
		e = tfs_fail(&j->diag, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < nt && !e; k++) {
		uint32_t slot = sf->zipped ? sf->coords_slot : sf->dim_slot[k];
		uint64_t size = sf->zipped ? (uint64_t)r->dims[0].size * dims
					   : r->dims[k].size;

		e = tfs_tile_read_cached(r->q->dir, f, slot, st->tile, &ct[k],
				  &j->diag);
		if (!e)
			e = check_tile(f, slot, st->tile, &ct[k], cells, size,
				       !sf->zipped && r->dims[k].var, &j->diag);
	}
	if (!e && sf->read_ts) {
		e = tfs_tile_read_cached(r->q->dir, f, sf->ts_slot, st->tile, &ts,
				  &j->diag);
		if (!e)
			e = check_tile(f, sf->ts_slot, st->tile, &ts, cells, 8,
				       false, &j->diag);
	}
	if (!e && sf->has_dt) {
		e = tfs_tile_read_cached(r->q->dir, f, sf->dt_slot, st->tile, &dt,
				  &j->diag);
		if (!e)
			e = check_tile(f, sf->dt_slot, st->tile, &dt, cells, 8,
				       false, &j->diag);
	}
	if (e)
		goto out;
	for (uint64_t c = 0; c < cells && !e; c++) {
		uint64_t t = sf->t1;
		bool keep = true;
		uint8_t gone = 0;

		for (uint32_t k = 0; k < dims && keep; k++) {
			const struct sp_dim *dm = &r->dims[k];

			if (sf->zipped) {
				val_set(&v[k], dm,
					ct[0].fixed + (c * dims + k) * dm->size,
					dm->size);
			} else if (dm->var) {
				uint64_t o = ct[k].offsets[c];

				val_set(&v[k], dm, at(ct[k].var, o),
					ct[k].offsets[c + 1] - o);
			} else {
				val_set(&v[k], dm, ct[k].fixed + c * dm->size,
					dm->size);
			}
			keep = val_cmp(dm, &v[k], &dm->sub_lo) >= 0 &&
			       val_cmp(dm, &v[k], &dm->sub_hi) <= 0;
		}
		if (!keep || !in_piece(r, &v[0]))
			continue;
		if (sf->read_ts) {
			t = tfs_get_u64(ts.fixed + c * 8);
			if (sf->time_filter && (t < r->t0 || t > r->t1))
				continue;
		}
		if (sf->has_dt) {
			uint64_t when = tfs_get_u64(dt.fixed + c * 8);

			gone = r->t1 == UINT64_MAX ? when != UINT64_MAX
						   : when <= r->t1;
		}
		for (uint32_t k = 0; k < dims; k++)
			keys[k] = v[k].key;
		e = tfs_buf_append(&j->out.keys, keys, dims * sizeof(*keys));
		for (uint32_t k = 0; k < dims && !e; k++) {
			if (r->dims[k].var)
				e = tfs_buf_append_u64(&j->out.coff[k],
						       j->out.coord[k].len);
			if (!e)
				e = tfs_buf_append(&j->out.coord[k], v[k].p,
						   (size_t)v[k].len);
		}
		if (!e)
			e = tfs_buf_append_u32(&j->out.tile, j->ptile);
		if (!e)
			e = tfs_buf_append_u32(&j->out.pos, (uint32_t)c);
		if (!e)
			e = tfs_buf_append_u64(&j->out.ts, t);
		if (!e)
			e = tfs_buf_append_u8(&j->out.dt, gone);
		if (e)
			e = tfs_fail(&j->diag, e, "out of memory");
		else
			j->out.n++;
	}
out:
	for (uint32_t k = 0; ct && k < nt; k++)
		tfs_tile_release(&ct[k]);
	tfs_tile_release(&ts);
	tfs_tile_release(&dt);
	tfs_free(ct);
	tfs_free(v);
	tfs_free(keys);
	j->err = e;
}

static enum tfs_err cells_merge(struct sp_cells *dst, const struct sp_cells *src,
				uint32_t dims)
{
	enum tfs_err e;

	if (dst->n + src->n >= UINT32_MAX)
		return TFS_E_TOO_BIG;
	e = tfs_buf_append(&dst->keys, src->keys.data, src->keys.len);
	for (uint32_t k = 0; k < dims && !e; k++) {
		size_t base = dst->coord[k].len, n = src->coff[k].len / 8;

		for (size_t i = 0; i < n && !e; i++) {
			uint64_t o;

			memcpy(&o, src->coff[k].data + i * 8, 8);
			e = tfs_buf_append_u64(&dst->coff[k], o + base);
		}
		if (!e)
			e = tfs_buf_append(&dst->coord[k], src->coord[k].data,
					   src->coord[k].len);
	}
	if (!e)
		e = tfs_buf_append(&dst->tile, src->tile.data, src->tile.len);
	if (!e)
		e = tfs_buf_append(&dst->pos, src->pos.data, src->pos.len);
	if (!e)
		e = tfs_buf_append(&dst->ts, src->ts.data, src->ts.len);
	if (!e)
		e = tfs_buf_append(&dst->dt, src->dt.data, src->dt.len);
	if (!e)
		dst->n += src->n;
	return e;
}

static void job_start(struct tfs_pool *pool, struct tfs_job *job,
		      void (*fn)(void *), void *arg)
{
	tfs_job_init(job, fn, arg);
	if (pool)
		tfs_pool_submit(pool, job);
}

static void job_finish(struct tfs_pool *pool, struct tfs_job *job)
{
	if (pool)
		tfs_job_wait(pool, job);
	else
		job->fn(job->arg);
}

static enum tfs_err gather_coords(struct sp_reader *r, struct tfs_diag *d)
{
	struct tfs_pool *pool = r->q->array->pool;
	uint32_t wave = r->ptile_num < WAVE_TILES ? r->ptile_num : WAVE_TILES;
	struct coord_job *jobs;
	enum tfs_err e = TFS_E_OK;

	if (!r->ptile_num)
		return TFS_E_OK;
	jobs = tfs_callocn(wave, sizeof(*jobs));
	if (!jobs)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t first = 0; first < r->ptile_num && !e; first += wave) {
		uint32_t n = r->ptile_num - first < wave ? r->ptile_num - first
							 : wave;
		uint32_t started = 0;

		for (uint32_t i = 0; i < n; i++, started++) {
			jobs[i].r = r;
			jobs[i].ptile = first + i;
			jobs[i].err = TFS_E_OK;
			if (cells_alloc(&jobs[i].out, r->dim_num)) {
				e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
				break;
			}
			job_start(pool, &jobs[i].job, coord_job_run, &jobs[i]);
		}
		for (uint32_t i = 0; i < started; i++) {
			job_finish(pool, &jobs[i].job);
			if (!e && jobs[i].err)
				e = tfs_fail(d, jobs[i].err, "%s",
					     tfs_diag_msg(&jobs[i].diag));
			if (!e && (e = cells_merge(&r->cells, &jobs[i].out,
						   r->dim_num)))
				e = tfs_fail(d, e, e == TFS_E_TOO_BIG
						       ? "piece of the selection holds too many cells"
						       : "out of memory");
			cells_release(&jobs[i].out, r->dim_num);
		}
	}
	tfs_free(jobs);
	return e;
}

/* ---- Step 4: attributes and delete conditions ------------------------- */

struct attr_job {
	struct tfs_job job;
	struct sp_reader *r;
	uint32_t ptile;
	const uint32_t *cells; /* indices into r->cells */
	uint32_t cell_num;
	uint8_t *deleted;      /* per listed cell */
	struct sp_col *cols;   /* per query field */
	enum tfs_err err;
	struct tfs_diag diag;
};

static void tile_value(const struct tfs_tile *t,
		       const struct tfs_slot_desc *desc, uint64_t c,
		       const uint8_t **p, uint64_t *len, uint8_t *valid)
{
	if (desc->var) {
		*p = at(t->var, t->offsets[c]);
		*len = t->offsets[c + 1] - t->offsets[c];
	} else {
		*p = t->fixed + c * desc->cell_size;
		*len = desc->cell_size;
	}
	*valid = t->validity ? t->validity[c] : 1;
}

/* True when the delete conditions of the fragment keep cell ci. */
static bool cell_survives(const struct sp_reader *r, const struct sp_frag *sf,
			  const struct tfs_tile *loaded, uint32_t ci,
			  struct tfs_cond_value *gv, struct tfs_cond_value *lv)
{
	uint32_t pos = cell_u32(&r->cells.pos, ci);

	for (uint32_t g = 0; g < r->gname_num; g++) {
		const struct sp_src *s = &sf->src[g];
		uint8_t valid = 1;

		switch (s->kind) {
		case SRC_DIM:
			gv[g].p = cells_coord(&r->cells, &r->dims[s->n], s->n,
					      ci, &gv[g].len);
			break;
		case SRC_LOAD:
			tile_value(&loaded[s->n], &sf->load_desc[s->n], pos,
				   &gv[g].p, &gv[g].len, &valid);
			break;
		default:
			gv[g].p = s->fill;
			gv[g].len = s->fill ? s->fill_len : 0;
			valid = s->fill ? s->fill_valid : 0;
			break;
		}
		gv[g].valid = valid != 0;
	}
	for (uint32_t j = 0; j < sf->del_num; j++) {
		const struct sp_fdel *fd = &sf->dels[j];
		const struct sp_del *sd = &r->dels[fd->del];
		size_t n = tfs_cond_field_count(sd->cond);

		for (size_t l = 0; l < n; l++)
			lv[l] = gv[sd->gmap[l]];
		if (tfs_cond_eval(sd->cond, fd->desc, lv))
			continue;
		if (fd->with_ts && cell_u64(&r->cells.ts, ci) > sd->src->t1)
			continue;
		return false;
	}
	return true;
}

static void attr_job_run(void *arg)
{
	struct attr_job *j = arg;
	struct sp_reader *r = j->r;
	const struct tfs_query *q = r->q;
	const struct sp_tile *st = &r->tiles[r->ptiles[j->ptile]];
	const struct sp_frag *sf = &r->frags[st->frag];
	struct tfs_tile *loaded;
	struct tfs_cond_value *gv = NULL, *lv = NULL;
	size_t lmax = 1;
	enum tfs_err e = TFS_E_OK;

	tfs_diag_init(&j->diag);
	for (uint32_t i = 0; i < r->del_num; i++)
		if (tfs_cond_field_count(r->dels[i].cond) > lmax)
			lmax = tfs_cond_field_count(r->dels[i].cond);
	loaded = tfs_callocn(sf->load_num ? sf->load_num : 1, sizeof(*loaded));
	gv = tfs_callocn(r->gname_num ? r->gname_num : 1, sizeof(*gv));
	lv = tfs_callocn(lmax, sizeof(*lv));
	if (!loaded || !gv || !lv) {
		e = tfs_fail(&j->diag, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t l = 0; l < sf->load_num && !e; l++) {
		const struct tfs_slot_desc *desc = &sf->load_desc[l];

		e = tfs_tile_read_cached(q->dir, sf->f, sf->load_slot[l], st->tile,
				  &loaded[l], &j->diag);
		if (!e)
			e = check_tile(sf->f, sf->load_slot[l], st->tile,
				       &loaded[l], st->cells, desc->cell_size,
				       desc->var, &j->diag);
	}
	for (uint32_t i = 0; i < j->cell_num && !e; i++) {
		uint32_t ci = j->cells[i];
		uint32_t pos = cell_u32(&r->cells.pos, ci);

		if (sf->del_num &&
		    !cell_survives(r, sf, loaded, ci, gv, lv)) {
			j->deleted[i] = 1;
			continue;
		}
		for (size_t fi = 0; fi < q->field_num && !e; fi++) {
			const struct tfs_out_field *fld = &q->fields[fi];
			const uint8_t *p;
			uint64_t len;
			uint8_t valid;

			if (fld->is_dim)
				continue;
			if (sf->field_load[fi] >= 0) {
				int32_t l = sf->field_load[fi];

				tile_value(&loaded[l], &sf->load_desc[l], pos,
					   &p, &len, &valid);
			} else {
				p = r->fills[fi] ? r->fills[fi] : fld->fill;
				len = fld->var ? fld->fill_size : fld->cell_size;
				valid = fld->fill_valid;
			}
			e = col_append(&j->cols[fi], fld->var, p, len, valid);
			if (e)
				e = tfs_fail(&j->diag, e, "out of memory");
		}
	}
out:
	for (uint32_t l = 0; loaded && l < sf->load_num; l++)
		tfs_tile_release(&loaded[l]);
	tfs_free(loaded);
	tfs_free(gv);
	tfs_free(lv);
	j->err = e;
}

/* Fill values of fixed-size attributes as exactly one cell: a shorter
 * stored fill (one value of a multi-value cell) repeats, anything else is
 * cut or padded with zeros. */
static enum tfs_err prepare_fills(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;

	r->fills = tfs_callocn(q->field_num ? q->field_num : 1,
			       sizeof(*r->fills));
	if (!r->fills)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < q->field_num; i++) {
		const struct tfs_out_field *f = &q->fields[i];
		uint8_t *cell;

		if (f->is_dim || f->var || f->fill_size == f->cell_size)
			continue;
		cell = tfs_callocn(f->cell_size ? f->cell_size : 1, 1);
		if (!cell)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		if (f->fill_size && f->cell_size % f->fill_size == 0) {
			for (uint64_t o = 0; o < f->cell_size; o += f->fill_size)
				memcpy(cell + o, f->fill, (size_t)f->fill_size);
		} else if (f->fill_size) {
			memcpy(cell, f->fill,
			       (size_t)(f->fill_size < f->cell_size ? f->fill_size
								     : f->cell_size));
		}
		r->fills[i] = cell;
	}
	return TFS_E_OK;
}

/* Decodes the attribute tiles of the surviving cells (order[] lists them),
 * applies delete conditions and fills r->cols and r->row. */
static enum tfs_err gather_attrs(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_query *q = r->q;
	struct tfs_pool *pool = q->array->pool;
	uint32_t *start = NULL, *list = NULL, *active = NULL, active_num = 0;
	uint8_t *deleted = NULL;
	struct attr_job *jobs = NULL;
	uint32_t n = r->order_num, rows = 0;
	enum tfs_err e = TFS_E_OK;

	r->cols = cols_new(q->field_num);
	r->row = tfs_mallocn(r->cells.n ? r->cells.n : 1, sizeof(*r->row));
	start = tfs_callocn((size_t)r->ptile_num + 1, sizeof(*start));
	list = tfs_mallocn(n ? n : 1, sizeof(*list));
	deleted = tfs_callocn(n ? n : 1, 1);
	active = tfs_mallocn(r->ptile_num ? r->ptile_num : 1, sizeof(*active));
	if (!r->cols || !r->row || !start || !list || !deleted || !active) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < r->cells.n; i++)
		r->row[i] = UINT32_MAX;
	/* Group the cells by tile (counting sort, stable). */
	for (uint32_t i = 0; i < n; i++)
		start[cell_u32(&r->cells.tile, r->order[i]) + 1]++;
	for (uint32_t t = 0; t < r->ptile_num; t++) {
		if (start[t + 1])
			active[active_num++] = t;
		start[t + 1] += start[t];
	}
	{
		uint32_t *fill = tfs_mallocn(r->ptile_num ? r->ptile_num : 1,
					     sizeof(*fill));

		if (!fill) {
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			goto out;
		}
		memcpy(fill, start, r->ptile_num * sizeof(*fill));
		for (uint32_t i = 0; i < n; i++) {
			uint32_t c = r->order[i];

			list[fill[cell_u32(&r->cells.tile, c)]++] = c;
		}
		tfs_free(fill);
	}
	jobs = tfs_callocn(WAVE_TILES, sizeof(*jobs));
	if (!jobs) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t first = 0; first < active_num && !e; first += WAVE_TILES) {
		uint32_t cnt = active_num - first < WAVE_TILES
				       ? active_num - first
				       : WAVE_TILES;
		uint32_t started = 0;

		for (uint32_t i = 0; i < cnt; i++, started++) {
			struct attr_job *j = &jobs[i];
			uint32_t t = active[first + i];

			j->r = r;
			j->ptile = t;
			j->cells = list + start[t];
			j->cell_num = start[t + 1] - start[t];
			j->deleted = deleted + start[t];
			j->err = TFS_E_OK;
			j->cols = cols_new(q->field_num);
			if (!j->cols) {
				e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
				break;
			}
			job_start(pool, &j->job, attr_job_run, j);
		}
		for (uint32_t i = 0; i < started; i++) {
			struct attr_job *j = &jobs[i];

			job_finish(pool, &j->job);
			if (!e && j->err)
				e = tfs_fail(d, j->err, "%s",
					     tfs_diag_msg(&j->diag));
			for (size_t fi = 0; fi < q->field_num && !e; fi++)
				if (!q->fields[fi].is_dim &&
				    col_merge(&r->cols[fi], &j->cols[fi],
					      q->fields[fi].var))
					e = tfs_fail(d, TFS_E_NOMEM,
						     "out of memory");
			for (uint32_t c = 0; c < j->cell_num && !e; c++)
				if (!j->deleted[c])
					r->row[j->cells[c]] = rows++;
			cols_free(j->cols, q->field_num);
			j->cols = NULL;
		}
	}
	if (!e) {
		uint32_t kept = 0;

		for (uint32_t i = 0; i < n; i++)
			if (r->row[r->order[i]] != UINT32_MAX)
				r->order[kept++] = r->order[i];
		r->order_num = kept;
	}
out:
	tfs_free(jobs);
	tfs_free(start);
	tfs_free(list);
	tfs_free(deleted);
	tfs_free(active);
	return e;
}

/* ---- Step 5: duplicates by JSON text ----------------------------------- */

static enum tfs_err cell_text(const struct sp_reader *r, uint32_t c,
			      struct tfs_buf *b)
{
	const struct tfs_query *q = r->q;
	enum tfs_err e = TFS_E_OK;

	for (size_t fi = 0; fi < q->field_num && !e; fi++) {
		const struct tfs_out_field *f = &q->fields[fi];
		const uint8_t *p;
		uint64_t len;
		uint8_t valid = 1;

		if (f->is_dim)
			p = cells_coord(&r->cells, &r->dims[f->index], f->index,
					c, &len);
		else
			p = col_value(&r->cols[fi], f, r->row[c], &len, &valid);
		e = json_value(b, f, p, len, valid);
		if (!e)
			e = tfs_buf_append_u8(b, fi + 1 < q->field_num ? ','
								       : '}');
	}
	return e;
}

struct text_ctx {
	const uint8_t *text;
	const uint64_t *off; /* n + 1 */
};

static int text_cmp(const void *ctx, uint32_t a, uint32_t b)
{
	const struct text_ctx *t = ctx;

	return tfs_bytes_cmp(t->text + t->off[a], (size_t)(t->off[a + 1] - t->off[a]),
			     t->text + t->off[b], (size_t)(t->off[b + 1] - t->off[b]));
}

/* Sorts order[from, to) (equal coordinates) by the cells' JSON text. */
static enum tfs_err sort_run(struct sp_reader *r, uint32_t from, uint32_t to,
			     struct tfs_diag *d)
{
	uint32_t n = to - from;
	struct tfs_buf text;
	uint64_t *off = tfs_mallocn((size_t)n + 1, sizeof(*off));
	uint32_t *idx = tfs_mallocn(n, sizeof(*idx));
	uint32_t *tmp = tfs_mallocn(n, sizeof(*tmp));
	struct text_ctx ctx;
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&text, PIECE_BYTES_MAX);
	if (!off || !idx || !tmp) {
		e = TFS_E_NOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n && !e; i++) {
		off[i] = text.len;
		idx[i] = i;
		e = cell_text(r, r->order[from + i], &text);
	}
	off[n] = text.len;
	ctx.text = text.data;
	ctx.off = off;
	if (!e)
		e = sort_index(idx, n, text_cmp, &ctx);
	if (!e) {
		for (uint32_t i = 0; i < n; i++)
			tmp[i] = r->order[from + idx[i]];
		memcpy(r->order + from, tmp, n * sizeof(*tmp));
	}
out:
	tfs_buf_release(&text);
	tfs_free(off);
	tfs_free(idx);
	tfs_free(tmp);
	return e ? tfs_fail(d, e, "out of memory") : TFS_E_OK;
}

static enum tfs_err sort_duplicates(struct sp_reader *r, struct tfs_diag *d)
{
	uint32_t i = 0;

	while (i < r->order_num) {
		uint32_t j = i + 1;

		while (j < r->order_num &&
		       coords_cmp(r, r->order[i], r->order[j]) == 0)
			j++;
		if (j - i > 1) {
			enum tfs_err e = sort_run(r, i, j, d);

			if (e)
				return e;
		}
		i = j;
	}
	return TFS_E_OK;
}

/* ---- Pieces ------------------------------------------------------------ */

static void piece_release(struct sp_reader *r)
{
	cells_release(&r->cells, r->dim_num);
	cols_free(r->cols, r->q->field_num);
	r->cols = NULL;
	tfs_free(r->row);
	tfs_free(r->order);
	tfs_free(r->ptiles);
	r->row = NULL;
	r->order = NULL;
	r->ptiles = NULL;
	r->order_num = r->pos = r->ptile_num = 0;
}

/* Chooses the next piece [lower, upper) along dimension 0: the largest
 * whose candidate tiles hold at most piece_cap cells, cut at a tile's
 * lower bound; when even the smallest cut holds more, the smallest. */
static void piece_plan(struct sp_reader *r)
{
	const struct sp_dim *dm = &r->dims[0];
	const struct sp_val *prev = NULL;
	uint64_t acc = 0;
	int64_t best = -1, first = -1;
	bool over = false;

	r->p_has_lo = r->have_lower;
	r->p_lo = r->lower;
	for (uint32_t k = r->tile_first; k < r->tile_num; k++) {
		const struct sp_tile *t = &r->tiles[k];

		if (r->have_lower && val_cmp(dm, &t->hi0, &r->lower) < 0)
			continue;
		if ((!r->have_lower || val_cmp(dm, &t->lo0, &r->lower) > 0) &&
		    (!prev || val_cmp(dm, &t->lo0, prev) != 0)) {
			prev = &t->lo0;
			if (acc > 0 && acc <= r->piece_cap) {
				best = k;
			} else if (acc > r->piece_cap) {
				if (best < 0)
					first = k;
				over = true;
				break;
			}
		}
		acc = t->cells > UINT64_MAX - acc ? UINT64_MAX : acc + t->cells;
	}
	if (!over && acc <= r->piece_cap)
		best = first = -1;
	if (best < 0)
		best = first;
	r->p_has_hi = best >= 0;
	if (r->p_has_hi)
		r->p_hi = r->tiles[best].lo0;
}

static enum tfs_err piece_tiles(struct sp_reader *r, struct tfs_diag *d)
{
	const struct sp_dim *dm = &r->dims[0];

	r->ptiles = tfs_mallocn(r->tile_num ? r->tile_num : 1,
				sizeof(*r->ptiles));
	if (!r->ptiles)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = r->tile_first; k < r->tile_num; k++) {
		const struct sp_tile *t = &r->tiles[k];

		if (r->p_has_hi && val_cmp(dm, &t->lo0, &r->p_hi) >= 0)
			break;
		if (r->p_has_lo && val_cmp(dm, &t->hi0, &r->p_lo) < 0)
			continue;
		r->ptiles[r->ptile_num++] = k;
	}
	return TFS_E_OK;
}

/* Forgets the tiles that lie wholly below `lower`: the tiles before it in
 * lo0 order that reach past it move up (keeping the order), the others
 * drop out, so planning never rescans finished tiles. */
static void tiles_forget(struct sp_reader *r)
{
	const struct sp_dim *dm = &r->dims[0];
	uint32_t k = r->tile_first, w;

	if (!r->have_lower)
		return;
	while (k < r->tile_num && val_cmp(dm, &r->tiles[k].lo0, &r->lower) < 0)
		k++;
	w = k;
	for (uint32_t i = k; i-- > r->tile_first;)
		if (val_cmp(dm, &r->tiles[i].hi0, &r->lower) >= 0)
			r->tiles[--w] = r->tiles[i];
	r->tile_first = w;
}

static enum tfs_err piece_build(struct sp_reader *r, struct tfs_diag *d)
{
	enum tfs_err e;
	uint32_t n, kept = 0;

	piece_release(r);
	tiles_forget(r);
	piece_plan(r);
	if (r->p_has_hi) {
		r->have_lower = true;
		r->lower = r->p_hi;
	} else {
		r->finished = true;
	}
	if (cells_alloc(&r->cells, r->dim_num))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = piece_tiles(r, d);
	if (!e)
		e = gather_coords(r, d);
	if (e)
		return e;
	n = (uint32_t)r->cells.n;
	r->order = tfs_mallocn(n ? n : 1, sizeof(*r->order));
	if (!r->order)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		r->order[i] = i;
	if (sort_index(r->order, n, r->dedup ? newest_cmp : coords_only_cmp, r))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	/* Newest wins, then delete metadata removes the winner (read.md §7
	 * step 4: an older version of a deleted cell does not reappear). */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = r->order[i];

		if (r->dedup && i > 0 &&
		    coords_cmp(r, r->order[i - 1], c) == 0)
			continue;
		r->order[kept++] = c;
	}
	n = kept;
	kept = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!r->cells.dt.data[r->order[i]])
			r->order[kept++] = r->order[i];
	r->order_num = kept;
	e = gather_attrs(r, d);
	if (!e && !r->dedup)
		e = sort_duplicates(r, d);
	return e;
}

/* ---- Reader ops ------------------------------------------------------- */

static enum tfs_err emit_cell(struct sp_reader *r, uint32_t c)
{
	struct tfs_query *q = r->q;

	for (size_t fi = 0; fi < q->field_num; fi++) {
		const struct tfs_out_field *f = &q->fields[fi];
		const uint8_t *p;
		uint64_t len;
		uint8_t valid = 1;
		enum tfs_err e;

		if (f->is_dim)
			p = cells_coord(&r->cells, &r->dims[f->index], f->index,
					c, &len);
		else
			p = col_value(&r->cols[fi], f, r->row[c], &len, &valid);
		e = tfs_out_append(q, fi, p, len, valid);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

static enum tfs_err sparse_next(struct tfs_query *q, struct tfs_diag *d)
{
	struct sp_reader *r = q->reader;
	enum tfs_err e;

	q->batch_cell_num = 0;
	while (q->batch_cell_num < q->batch_cells) {
		if (r->pos == r->order_num) {
			if (r->finished)
				break;
			e = piece_build(r, d);
			if (e)
				return e;
			continue;
		}
		e = emit_cell(r, r->order[r->pos]);
		if (e)
			return tfs_fail(d, e, "sparse read: output batch: %s",
					tfs_strerror(e));
		r->pos++;
		q->batch_cell_num++;
	}
	return TFS_E_OK;
}

static void reader_free(struct sp_reader *r)
{
	if (!r)
		return;
	if (r->q)
		piece_release(r);
	for (uint32_t i = 0; r->frags && i < r->frag_num; i++) {
		struct sp_frag *sf = &r->frags[i];

		tfs_free(sf->dim_slot);
		tfs_free(sf->load_slot);
		tfs_free(sf->load_desc);
		tfs_free(sf->field_load);
		tfs_free(sf->src);
		for (uint32_t j = 0; sf->dels && j < sf->del_num; j++)
			tfs_free(sf->dels[j].desc);
		tfs_free(sf->dels);
	}
	tfs_free(r->frags);
	for (uint32_t i = 0; r->dels && i < r->del_num; i++) {
		tfs_cond_free(r->dels[i].cond);
		tfs_free(r->dels[i].gmap);
	}
	tfs_free(r->dels);
	for (size_t i = 0; r->fills && i < r->q->field_num; i++)
		tfs_free(r->fills[i]);
	tfs_free(r->fills);
	tfs_free(r->gnames);
	tfs_free(r->tiles);
	tfs_free(r->dims);
	tfs_free(r);
}

static void sparse_free(struct tfs_query *q)
{
	reader_free(q->reader);
	q->reader = NULL;
}

static const struct tfs_reader_ops sparse_ops = {
	.next = sparse_next,
	.free = sparse_free,
};

static enum tfs_err open_dims(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_schema *s = r->q->schema;

	r->dims = tfs_callocn(r->dim_num, sizeof(*r->dims));
	if (!r->dims)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < r->dim_num; k++) {
		struct sp_dim *dm = &r->dims[k];
		const struct tfs_range *sub = &r->q->sub[k];

		dm->type = s->dims[k].type;
		dm->var = s->dims[k].var;
		dm->size = (uint32_t)tfs_datatype_size(dm->type);
		if (!dm->var && (dm->size == 0 || dm->size > 8))
			return tfs_fail(d, TFS_E_CORRUPT,
					"dimension '%s' has bad type %u",
					s->dims[k].name, dm->type);
		val_set(&dm->sub_lo, dm, sub->lo, sub->lo_len);
		val_set(&dm->sub_hi, dm, sub->hi, sub->hi_len);
	}
	return TFS_E_OK;
}

static bool sub_empty(const struct sp_reader *r)
{
	for (uint32_t k = 0; k < r->dim_num; k++)
		if (val_cmp(&r->dims[k], &r->dims[k].sub_lo,
			    &r->dims[k].sub_hi) > 0)
			return true;
	return false;
}

static enum tfs_err reader_open(struct sp_reader *r, struct tfs_diag *d)
{
	const struct tfs_arraydir *dir = r->q->dir;
	size_t cap = 0;
	enum tfs_err e;

	e = prepare_fills(r, d);
	if (!e)
		e = open_dims(r, d);
	if (!e)
		e = open_deletes(r, d);
	if (e)
		return e;
	if (sub_empty(r) || !dir->fragment_num) {
		r->finished = true;
		return TFS_E_OK;
	}
	if (dir->fragment_num >= UINT32_MAX)
		return tfs_fail(d, TFS_E_TOO_BIG, "too many fragments");
	r->frags = tfs_callocn(dir->fragment_num, sizeof(*r->frags));
	if (!r->frags)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < dir->fragment_num; i++) {
		struct tfs_fragment *f = dir->fragments[i];
		uint32_t fi = r->frag_num;

		if (f->footer.empty)
			continue;
		if (f->footer.dense)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s' is dense in a sparse array",
					f->name);
		if (f->footer.ned && !box_meets(r, f->footer.ned))
			continue;
		r->frag_num++;
		e = open_frag(r, &r->frags[fi], f, (uint32_t)i, d);
		if (!e)
			e = add_tiles(r, fi, &cap, d);
		if (e)
			return e;
	}
	if (!r->tile_num) {
		r->finished = true;
		return TFS_E_OK;
	}
	return sort_tiles(r, d);
}

enum tfs_err tfs_sparse_reader_open(struct tfs_query *q, struct tfs_diag *d)
{
	return tfs_sparse_reader_open_capped(q, PIECE_CELLS, d);
}

enum tfs_err tfs_sparse_reader_open_capped(struct tfs_query *q,
					   uint64_t piece_cells,
					   struct tfs_diag *d)
{
	struct sp_reader *r;
	enum tfs_err e;

	r = tfs_callocn(1, sizeof(*r));
	if (!r)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	r->q = q;
	r->dim_num = q->schema->dim_num;
	r->dedup = !q->schema->allows_dups;
	r->t0 = q->dir->t0;
	r->t1 = q->dir->t1;
	r->piece_cap = piece_cells ? piece_cells : 1;
	if (r->dim_num == 0) {
		tfs_free(r);
		return tfs_fail(d, TFS_E_CORRUPT, "sparse array without dimensions");
	}
	e = reader_open(r, d);
	if (e) {
		reader_free(r);
		return e;
	}
	q->total_cells = UINT64_MAX;
	q->reader = r;
	q->reader_ops = &sparse_ops;
	return TFS_E_OK;
}
