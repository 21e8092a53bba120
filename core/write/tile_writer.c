/* From a stream of cells to the files of one fragment: cuts tiles (sparse:
 * `capacity` cells in global order; dense: the space tiles of the box in
 * tile order, padded, format/write.md §4–5), encodes them on the pool
 * through each field's filters (tile.md §2–4), appends them to the data
 * files in tile order, and keeps what the fragment metadata needs per slot
 * (fragment.md §6): tile offsets, var sizes, mins, maxes, sums, null
 * counts, MBRs. tfs__tw_finish writes __fragment_metadata.tdb: the
 * generic tiles in TileDB's order, the footer and its length. */
#include "write_internal.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_datatype.h"
#include "tfs_fragment.h"

/* One field's share of an encoded tile. */
struct fout {
	struct tfs_buf fixed, var, valid;
	struct tfs_buf min, max;   /* attributes with min/max */
	struct tfs_buf lo, hi;     /* dimensions: MBR */
	struct tfs_buf first, last; /* dimensions: global-order bounds */
	uint8_t sum[8];
	uint64_t nulls;
	uint64_t var_size;
};

struct job {
	struct tfs_job job;
	struct tfs__tw *tw;
	struct tfs__cells cells;
	struct tfs_buf real; /* dense: 1 for written cells */
	struct fout *out;    /* field_num */
	enum tfs_err err;
	struct tfs_diag d;
};

/* What the fragment metadata keeps of a slot. */
struct slotacc {
	struct tfs_buf offsets, var_offsets, var_sizes, validity_offsets;
	struct tfs_buf min_fixed, min_var, max_fixed, max_var;
	struct tfs_buf sums, null_counts;
	uint64_t file_size, var_file_size, validity_file_size;
};

struct tfs__tw {
	struct tfs__tw_opts o;
	uint32_t A, D, slot_num;
	struct slotacc *slots;
	/* Per dimension (sparse): MBR lows/highs and global-order first/last
	 * values, as min/max lists: fixed values, or u64 offsets + bytes. */
	struct slotacc *dimb; /* min_* = lo (MBR) / first, max_* = hi / last */
	struct slotacc *gob;
	uint64_t tile_num, cell_num, last_tile_cells;
	uint64_t capacity; /* cells per sparse tile */
	uint64_t bytes;
	struct tfs_buf tilebuf;
	/* Tiles in flight, oldest at head. */
	struct job *ring;
	unsigned ring_cap, head, inflight;
	struct job *cur; /* being filled, or NULL */
	/* Dense. */
	uint64_t cpt; /* cells per tile */
	uint64_t tiles_total;
	uint64_t cur_rank;
	uint64_t ext[128], tlo[128], ntiles[128], boxlo[128], boxhi[128];
	char **paths; /* per field: fixed, var, validity paths (3 each) */
};

/* ---- Per-field properties (fragment.md §6) ------------------------------- */

static bool is_string_type(uint8_t t)
{
	return t == TFS_CHAR || t == TFS_STRING_ASCII;
}

static bool has_minmax(const struct tfs__field *f)
{
	uint8_t t = f->type;

	if (f->is_dim || t == TFS_ANY || t == TFS_BLOB || t == TFS_GEOM_WKB ||
	    t == TFS_GEOM_WKT || (t >= TFS_STRING_UTF8 && t <= TFS_STRING_UCS4))
		return false;
	return f->cell_val_num == 1 || is_string_type(t);
}

static bool type_has_sum(uint8_t t)
{
	return !(t == TFS_ANY || t == TFS_BLOB || t == TFS_GEOM_WKB ||
		 t == TFS_GEOM_WKT ||
		 (t >= TFS_STRING_ASCII && t <= TFS_STRING_UCS4));
}

static bool has_sum(const struct tfs__field *f, bool dense)
{
	if (f->var || f->cell_val_num != 1 || (f->is_dim && dense))
		return false;
	return type_has_sum(f->type);
}

/* ---- Min, max, sum ------------------------------------------------------- */

static void type_max(uint8_t t, uint8_t *dst)
{
	size_t sz = tfs_datatype_size(t);

	memset(dst, 0, 8);
	switch (tfs_datatype_class(t)) {
	case TFS_CLASS_SIGNED:
		tfs_put_uint(dst, sz, (UINT64_MAX >> (65 - 8 * sz)));
		break;
	case TFS_CLASS_UNSIGNED:
		tfs_put_uint(dst, sz, UINT64_MAX);
		break;
	case TFS_CLASS_FLOAT:
		if (t == TFS_FLOAT32) {
			float v = FLT_MAX;
			memcpy(dst, &v, 4);
		} else {
			double v = DBL_MAX;
			memcpy(dst, &v, 8);
		}
		break;
	default:
		break;
	}
}

static void type_lowest(uint8_t t, uint8_t *dst)
{
	size_t sz = tfs_datatype_size(t);

	memset(dst, 0, 8);
	switch (tfs_datatype_class(t)) {
	case TFS_CLASS_SIGNED:
		tfs_put_uint(dst, sz, (uint64_t)1 << (8 * sz - 1));
		break;
	case TFS_CLASS_FLOAT:
		if (t == TFS_FLOAT32) {
			float v = -FLT_MAX;
			memcpy(dst, &v, 4);
		} else {
			double v = -DBL_MAX;
			memcpy(dst, &v, 8);
		}
		break;
	default:
		break;
	}
}

/* strncmp over n bytes (fixed CHAR / ASCII cells, as TileDB compares). */
static int fixed_str_cmp(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
		if (!a[i])
			return 0;
	}
	return 0;
}

/* Sum state: int64, uint64 or double; saturates and stops on overflow. */
struct sum {
	int kind; /* 0 signed, 1 unsigned, 2 float */
	int64_t i;
	uint64_t u;
	double f;
	bool stop;
};

static void sum_init(struct sum *s, uint8_t type)
{
	memset(s, 0, sizeof(*s));
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_UNSIGNED:
		s->kind = 1;
		break;
	case TFS_CLASS_FLOAT:
		s->kind = 2;
		break;
	default:
		s->kind = 0;
		break;
	}
}

static void sum_add_i(struct sum *s, int64_t v)
{
	if (s->stop)
		return;
	if (v > 0 && s->i > INT64_MAX - v) {
		s->i = INT64_MAX;
		s->stop = true;
	} else if (v < 0 && s->i < INT64_MIN - v) {
		s->i = INT64_MIN;
		s->stop = true;
	} else {
		s->i += v;
	}
}

static void sum_add_u(struct sum *s, uint64_t v)
{
	if (s->stop)
		return;
	if (s->u > UINT64_MAX - v) {
		s->u = UINT64_MAX;
		s->stop = true;
	} else {
		s->u += v;
	}
}

static void sum_add_f(struct sum *s, double v)
{
	if (s->stop)
		return;
	if ((s->f < 0.0) == (v < 0.0) && fabs(s->f) > DBL_MAX - fabs(v)) {
		s->f = s->f < 0.0 ? -DBL_MAX : DBL_MAX;
		s->stop = true;
	} else {
		s->f += v;
	}
}

static void sum_add(struct sum *s, uint8_t type, const uint8_t *p)
{
	switch (s->kind) {
	case 0:
		if (type == TFS_CHAR)
			sum_add_i(s, (int8_t)p[0]);
		else
			sum_add_i(s, tfs_value_as_i64(type, p));
		break;
	case 1:
		sum_add_u(s, tfs_value_as_u64(type, p));
		break;
	default:
		sum_add_f(s, tfs_value_as_f64(type, p));
		break;
	}
}

static void sum_put(const struct sum *s, uint8_t *dst)
{
	switch (s->kind) {
	case 0:
		tfs_put_u64(dst, (uint64_t)s->i);
		break;
	case 1:
		tfs_put_u64(dst, s->u);
		break;
	default:
		memcpy(dst, &s->f, 8);
		break;
	}
}

static void sum_add_raw(struct sum *s, const uint8_t *p)
{
	switch (s->kind) {
	case 0:
		sum_add_i(s, (int64_t)tfs_get_u64(p));
		break;
	case 1:
		sum_add_u(s, tfs_get_u64(p));
		break;
	default: {
		double v;
		memcpy(&v, p, 8);
		sum_add_f(s, v);
		break;
	}
	}
}

/* ---- Encoding one tile (on the pool) ------------------------------------- */

/* Min, max and sum of a fixed numeric field with one value per cell, in
 * one typed pass (the common case, kept free of per-value dispatch).
 * Skips cells that are null or outside a dense write. Min starts at the
 * type's maximum and max at its lowest value, as TileDB's scan does. */
#define DEF_STATS(NAME, T, TMAX, TLOW, ADD)                                   \
	static void NAME(const uint8_t *data, const uint8_t *valid,           \
			 const uint8_t *real, uint64_t n, bool want_sum,      \
			 struct sum *s, uint8_t *mn_out, uint8_t *mx_out)     \
	{                                                                     \
		T mn = TMAX, mx = TLOW;                                       \
                                                                              \
		for (uint64_t i = 0; i < n; i++) {                            \
			T v;                                                  \
                                                                              \
			if ((real && !real[i]) || (valid && !valid[i]))       \
				continue;                                     \
			memcpy(&v, data + i * sizeof(T), sizeof(T));          \
			if (want_sum)                                         \
				ADD(s, v);                                    \
			if (v < mn)                                           \
				mn = v;                                       \
			if (v > mx)                                           \
				mx = v;                                       \
		}                                                             \
		memcpy(mn_out, &mn, sizeof(T));                               \
		memcpy(mx_out, &mx, sizeof(T));                               \
	}

#define ADD_I(s, v) sum_add_i((s), (int64_t)(v))
#define ADD_U(s, v) sum_add_u((s), (uint64_t)(v))
#define ADD_F(s, v) sum_add_f((s), (double)(v))

DEF_STATS(stats_i8, int8_t, INT8_MAX, INT8_MIN, ADD_I)
DEF_STATS(stats_u8, uint8_t, UINT8_MAX, 0, ADD_U)
DEF_STATS(stats_i16, int16_t, INT16_MAX, INT16_MIN, ADD_I)
DEF_STATS(stats_u16, uint16_t, UINT16_MAX, 0, ADD_U)
DEF_STATS(stats_i32, int32_t, INT32_MAX, INT32_MIN, ADD_I)
DEF_STATS(stats_u32, uint32_t, UINT32_MAX, 0, ADD_U)
DEF_STATS(stats_i64, int64_t, INT64_MAX, INT64_MIN, ADD_I)
DEF_STATS(stats_u64, uint64_t, UINT64_MAX, 0, ADD_U)
DEF_STATS(stats_f32, float, FLT_MAX, -FLT_MAX, ADD_F)
DEF_STATS(stats_f64, double, DBL_MAX, -DBL_MAX, ADD_F)

/* True (and the stats filled) when the typed pass applies. */
static bool fast_stats(const struct job *j, uint32_t f,
		       const struct tfs__field *fd, bool want_sum, struct sum *s,
		       uint8_t *mn, uint8_t *mx)
{
	const struct tfs__col *col = &j->cells.cols[f];
	const uint8_t *valid = fd->nullable ? col->valid.data : NULL;
	const uint8_t *real = j->real.len ? j->real.data : NULL;
	uint64_t n = j->cells.cell_num;
	const uint8_t *p = col->data.data;
	uint8_t t = fd->type;

	if (fd->var || fd->cell_val_num != 1)
		return false;
	if (tfs_datatype_is_datetime(t))
		t = TFS_INT64;
	switch (t) {
	case TFS_INT8: stats_i8(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_UINT8: stats_u8(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_INT16: stats_i16(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_UINT16: stats_u16(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_INT32: stats_i32(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_UINT32: stats_u32(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_INT64: stats_i64(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_UINT64: stats_u64(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_FLOAT32: stats_f32(p, valid, real, n, want_sum, s, mn, mx); break;
	case TFS_FLOAT64: stats_f64(p, valid, real, n, want_sum, s, mn, mx); break;
	default:
		return false;
	}
	return true;
}

static bool cell_counts(const struct job *j, uint64_t i)
{
	return !j->real.len || j->real.data[i];
}

/* Whether cell i counts for the statistics: written, and not null. */
static bool cell_has_value(const struct job *j, const struct tfs__field *fd,
			   const struct tfs__col *col, uint64_t i)
{
	return cell_counts(j, i) && (!fd->nullable || col->valid.data[i]);
}

/* The smallest and largest var-size value seen, compared as bytes. */
struct var_range {
	const uint8_t *lo, *hi; /* NULL until the first value */
	uint64_t lo_len, hi_len;
};

static void var_range_add(struct var_range *r, const uint8_t *p, uint64_t len)
{
	if (!r->lo || tfs_bytes_cmp(p, len, r->lo, r->lo_len) < 0) {
		r->lo = p;
		r->lo_len = len;
	}
	if (!r->hi || tfs_bytes_cmp(p, len, r->hi, r->hi_len) > 0) {
		r->hi = p;
		r->hi_len = len;
	}
}

/* A fixed-size dimension's MBR [lo, hi] and its first and last of the n
 * coordinates in global order (the first and last cells). */
static enum tfs_err put_fixed_dim_bounds(struct fout *o, const uint8_t *lo,
					 const uint8_t *hi,
					 const uint8_t *coords, uint64_t n,
					 size_t cs)
{
	enum tfs_err e;

	o->lo.len = o->hi.len = o->first.len = o->last.len = 0;
	if ((e = tfs_buf_append(&o->lo, lo, cs)) ||
	    (e = tfs_buf_append(&o->hi, hi, cs)) ||
	    (e = tfs_buf_append(&o->first, coords, cs)) ||
	    (e = tfs_buf_append(&o->last, coords + (n - 1) * cs, cs)))
		return e;
	return TFS_E_OK;
}

static enum tfs_err tile_stats(struct job *j, uint32_t f,
			       const struct tfs__field *fd, struct fout *o)
{
	const struct tfs__cells *c = &j->cells;
	const struct tfs__col *col = &c->cols[f];
	bool dense = j->tw->o.dense;
	enum tfs_err e;

	o->nulls = 0;
	memset(o->sum, 0, 8);
	if (fd->nullable)
		for (uint64_t i = 0; i < c->cell_num; i++)
			if (cell_counts(j, i) && !col->valid.data[i])
				o->nulls++;
	if (!(fd->is_dim && dense) && (fd->is_dim || has_minmax(fd)) &&
	    c->cell_num) {
		struct sum s;
		uint8_t mn[8], mx[8];
		bool want_sum = has_sum(fd, dense);

		sum_init(&s, fd->type);
		if (fast_stats(j, f, fd, want_sum, &s, mn, mx)) {
			size_t cs = (size_t)fd->cell_size;

			if (want_sum)
				sum_put(&s, o->sum);
			if (!fd->is_dim) {
				o->min.len = o->max.len = 0;
				if ((e = tfs_buf_append(&o->min, mn, cs)) ||
				    (e = tfs_buf_append(&o->max, mx, cs)))
					return e;
				return TFS_E_OK;
			}
			return put_fixed_dim_bounds(o, mn, mx, col->data.data,
						    c->cell_num, cs);
		}
	}
	if (has_sum(fd, dense)) {
		struct sum s;

		sum_init(&s, fd->type);
		for (uint64_t i = 0; i < c->cell_num; i++)
			if (cell_has_value(j, fd, col, i))
				sum_add(&s, fd->type,
					col->data.data + i * fd->cell_size);
		sum_put(&s, o->sum);
	}
	if (fd->is_dim) {
		struct var_range r = {0};
		uint64_t n = c->cell_num, l0, l1;
		const uint8_t *p0, *p1;

		if (dense || n == 0)
			return TFS_E_OK;
		if (!fd->var) {
			size_t cs = (size_t)fd->cell_size;
			const uint8_t *lo = NULL, *hi = NULL;

			for (uint64_t i = 0; i < n; i++) {
				const uint8_t *p = col->data.data + i * cs;

				if (!lo || tfs_value_cmp(fd->type, p, lo) < 0)
					lo = p;
				if (!hi || tfs_value_cmp(fd->type, p, hi) > 0)
					hi = p;
			}
			return put_fixed_dim_bounds(o, lo, hi, col->data.data,
						    n, cs);
		}
		for (uint64_t i = 0; i < n; i++) {
			uint64_t len;
			const uint8_t *p = tfs__var_cell(c, f, i, &len);

			var_range_add(&r, p, len);
		}
		p0 = tfs__var_cell(c, f, 0, &l0);
		p1 = tfs__var_cell(c, f, n - 1, &l1);
		o->lo.len = o->hi.len = o->first.len = o->last.len = 0;
		if ((e = tfs_buf_append(&o->lo, r.lo, r.lo_len)) ||
		    (e = tfs_buf_append(&o->hi, r.hi, r.hi_len)) ||
		    (e = tfs_buf_append(&o->first, p0, l0)) ||
		    (e = tfs_buf_append(&o->last, p1, l1)))
			return e;
		return TFS_E_OK;
	}
	if (!has_minmax(fd))
		return TFS_E_OK;
	o->min.len = o->max.len = 0;
	if (fd->var) {
		struct var_range r = {0};

		for (uint64_t i = 0; i < c->cell_num; i++) {
			uint64_t len;
			const uint8_t *p;

			if (!cell_has_value(j, fd, col, i))
				continue;
			p = tfs__var_cell(c, f, i, &len);
			var_range_add(&r, p, len);
		}
		if ((r.lo && (e = tfs_buf_append(&o->min, r.lo, r.lo_len))) ||
		    (r.hi && (e = tfs_buf_append(&o->max, r.hi, r.hi_len))))
			return e;
		return TFS_E_OK;
	}
	if (is_string_type(fd->type)) {
		const uint8_t *lo = NULL, *hi = NULL;
		size_t cs = (size_t)fd->cell_size;

		for (uint64_t i = 0; i < c->cell_num; i++) {
			const uint8_t *p = col->data.data + i * cs;

			if (!cell_has_value(j, fd, col, i))
				continue;
			if (!lo || fixed_str_cmp(p, lo, cs) < 0)
				lo = p;
			if (!hi || fixed_str_cmp(p, hi, cs) > 0)
				hi = p;
		}
		if ((e = tfs_buf_resize(&o->min, cs)) ||
		    (e = tfs_buf_resize(&o->max, cs)))
			return e;
		memset(o->min.data, 0, cs);
		memset(o->max.data, 0, cs);
		if (lo)
			memcpy(o->min.data, lo, cs);
		if (hi)
			memcpy(o->max.data, hi, cs);
		return TFS_E_OK;
	} else {
		uint8_t mn[8], mx[8];
		size_t cs = (size_t)fd->cell_size;

		type_max(fd->type, mn);
		type_lowest(fd->type, mx);
		for (uint64_t i = 0; i < c->cell_num; i++) {
			const uint8_t *p = col->data.data + i * cs;

			if (!cell_has_value(j, fd, col, i))
				continue;
			if (tfs_value_cmp(fd->type, p, mn) < 0)
				memcpy(mn, p, cs);
			if (tfs_value_cmp(fd->type, p, mx) > 0)
				memcpy(mx, p, cs);
		}
		if ((e = tfs_buf_append(&o->min, mn, cs)) ||
		    (e = tfs_buf_append(&o->max, mx, cs)))
			return e;
	}
	return TFS_E_OK;
}

static void ctx_init(struct tfs_tile_ctx *ctx, const struct tfs__tw *tw,
		     uint8_t type, uint64_t cell_size)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->type = type;
	ctx->cell_size = cell_size;
	ctx->fragment_version = tw->o.version;
	ctx->key = tw->o.key;
	ctx->implicit_aes = tw->o.key != NULL;
}

static enum tfs_err encode_field(struct job *j, uint32_t f)
{
	struct tfs__tw *tw = j->tw;
	const struct tfs__field *fd = &tw->o.fields[f];
	const struct tfs__cells *c = &j->cells;
	const struct tfs__col *col = &c->cols[f];
	const struct tfs_schema *s = tw->o.s;
	struct fout *o = &j->out[f];
	struct tfs_tile_ctx ctx;
	enum tfs_err e;

	o->fixed.len = o->var.len = o->valid.len = 0;
	if ((e = tile_stats(j, f, fd, o)))
		return tfs_fail(&j->d, e, "field '%s': %s", fd->name,
				tfs_strerror(e));
	if (fd->is_dim && tw->o.dense)
		return TFS_E_OK;
	if (fd->var) {
		bool embedded = tfs_offsets_embedded(fd->type, fd->filters,
						     s->version);

		o->var_size = col->data.len;
		ctx_init(&ctx, tw, fd->type, fd->cell_size);
		if (embedded) {
			ctx.string_mode = true;
			if ((e = tfs_buf_append_u64(&o->fixed, 0)))
				return e;
		} else {
			struct tfs_tile_ctx octx;

			ctx_init(&octx, tw, TFS_UINT64, 8);
			e = tfs_tile_encode(&o->fixed, &s->offsets_filters,
					    &octx, col->offs.data, col->offs.len,
					    NULL, 0, &j->d);
			if (e)
				return e;
		}
		e = tfs_tile_encode(&o->var, fd->filters, &ctx, col->data.data,
				    col->data.len,
				    (const uint64_t *)col->offs.data,
				    c->cell_num, &j->d);
		if (e)
			return e;
	} else {
		ctx_init(&ctx, tw, fd->type, fd->cell_size);
		e = tfs_tile_encode(&o->fixed, fd->filters, &ctx,
				    col->data.data, col->data.len, NULL, 0,
				    &j->d);
		if (e)
			return e;
	}
	if (fd->nullable) {
		ctx_init(&ctx, tw, TFS_UINT8, 1);
		e = tfs_tile_encode(&o->valid, &s->validity_filters, &ctx,
				    col->valid.data, col->valid.len, NULL, 0,
				    &j->d);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

static void job_run(void *arg)
{
	struct job *j = arg;

	j->err = TFS_E_OK;
	for (uint32_t f = 0; f < j->tw->o.field_num && !j->err; f++) {
		j->err = encode_field(j, f);
		if (j->err && j->d.code == TFS_E_OK)
			tfs_fail(&j->d, j->err, "field '%s': %s",
				 j->tw->o.fields[f].name, tfs_strerror(j->err));
		else if (j->err)
			j->d.code = j->err;
	}
}

/* ---- Setup --------------------------------------------------------------- */

static void slotacc_init(struct slotacc *a)
{
	tfs_buf_init(&a->offsets, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->var_offsets, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->var_sizes, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->validity_offsets, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->min_fixed, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->min_var, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->max_fixed, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->max_var, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->sums, TFS_BUF_NO_MAX);
	tfs_buf_init(&a->null_counts, TFS_BUF_NO_MAX);
	a->file_size = a->var_file_size = a->validity_file_size = 0;
}

static void slotacc_release(struct slotacc *a)
{
	tfs_buf_release(&a->offsets);
	tfs_buf_release(&a->var_offsets);
	tfs_buf_release(&a->var_sizes);
	tfs_buf_release(&a->validity_offsets);
	tfs_buf_release(&a->min_fixed);
	tfs_buf_release(&a->min_var);
	tfs_buf_release(&a->max_fixed);
	tfs_buf_release(&a->max_var);
	tfs_buf_release(&a->sums);
	tfs_buf_release(&a->null_counts);
}

static void fout_init(struct fout *o)
{
	tfs_buf_init(&o->fixed, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->var, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->valid, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->min, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->max, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->lo, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->hi, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->first, TFS_BUF_NO_MAX);
	tfs_buf_init(&o->last, TFS_BUF_NO_MAX);
}

static void fout_release(struct fout *o)
{
	tfs_buf_release(&o->fixed);
	tfs_buf_release(&o->var);
	tfs_buf_release(&o->valid);
	tfs_buf_release(&o->min);
	tfs_buf_release(&o->max);
	tfs_buf_release(&o->lo);
	tfs_buf_release(&o->hi);
	tfs_buf_release(&o->first);
	tfs_buf_release(&o->last);
}

/* Data file name of a field (fragment.md §2). kind: 0 fixed/offsets,
 * 1 var values, 2 validity. */
static char *file_path(const struct tfs__tw *tw, const struct tfs__field *fd,
		       int kind)
{
	static const char *const sfx[] = { ".tdb", "_var.tdb", "_validity.tdb" };
	char base[600];
	size_t at = 0;

	if (fd->is_timestamps) {
		snprintf(base, sizeof(base), "t%s", sfx[kind]);
	} else if (tw->o.version >= 9) {
		snprintf(base, sizeof(base), "%c%" PRIu32 "%s",
			 fd->is_dim ? 'd' : 'a', fd->index, sfx[kind]);
	} else {
		/* Version 8 escapes names (the table of fragment.md §2). */
		static const char from[] = "!#$%&'()*+,/:;=?@[]\"<>\\|";
		static const char *const to[] = {
			"%21", "%23", "%24", "%25", "%26", "%27", "%28", "%29",
			"%2A", "%2B", "%2C", "%2F", "%3A", "%3B", "%3D", "%3F",
			"%40", "%5B", "%5D", "%22", "%20", "%2D", "%30", "%3C",
		};

		for (const char *p = fd->name; *p && at + 8 < sizeof(base); p++) {
			const char *hit = tw->o.version == 8 ? strchr(from, *p)
							     : NULL;

			if (hit && *p) {
				memcpy(base + at, to[hit - from], 3);
				at += 3;
			} else {
				base[at++] = *p;
			}
		}
		base[at] = '\0';
		if (at + strlen(sfx[kind]) + 1 > sizeof(base))
			return NULL;
		memcpy(base + at, sfx[kind], strlen(sfx[kind]) + 1);
	}
	return tfs_path_join(tw->o.dir, base);
}

void tfs__tw_free(struct tfs__tw *t)
{
	if (!t)
		return;
	/* Tiles still in flight (after a failure) finish first. */
	for (unsigned i = 0; t->ring && i < t->inflight; i++)
		tfs_job_wait(t->o.pool,
			     &t->ring[(t->head + i) % t->ring_cap].job);
	for (unsigned r = 0; t->ring && r < t->ring_cap; r++) {
		struct job *j = &t->ring[r];

		tfs__cells_release(&j->cells);
		tfs_buf_release(&j->real);
		for (uint32_t f = 0; j->out && f < t->o.field_num; f++)
			fout_release(&j->out[f]);
		tfs_free(j->out);
	}
	tfs_free(t->ring);
	for (uint32_t s = 0; t->slots && s < t->slot_num; s++)
		slotacc_release(&t->slots[s]);
	tfs_free(t->slots);
	for (uint32_t k = 0; k < t->D; k++) {
		if (t->dimb)
			slotacc_release(&t->dimb[k]);
		if (t->gob)
			slotacc_release(&t->gob[k]);
	}
	tfs_free(t->dimb);
	tfs_free(t->gob);
	for (uint32_t i = 0; t->paths && i < 3 * t->o.field_num; i++)
		tfs_free(t->paths[i]);
	tfs_free(t->paths);
	tfs_buf_release(&t->tilebuf);
	tfs_free(t);
}

enum tfs_err tfs__tw_new(const struct tfs__tw_opts *o, struct tfs__tw **out,
			 struct tfs_diag *d)
{
	struct tfs__tw *t = tfs_callocn(1, sizeof(*t));
	const struct tfs_schema *s = o->s;
	enum tfs_err e = TFS_E_NOMEM;

	*out = NULL;
	if (!t)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	t->o = *o;
	t->A = s->attr_num;
	t->D = s->dim_num;
	t->slot_num = tfs_slot_count(o->version, t->A, t->D, o->timestamps,
				     false);
	t->capacity = s->capacity ? s->capacity : 10000;
	tfs_buf_init(&t->tilebuf, TFS_BUF_NO_MAX);
	t->slots = tfs_callocn(t->slot_num, sizeof(*t->slots));
	t->dimb = tfs_callocn(t->D, sizeof(*t->dimb));
	t->gob = tfs_callocn(t->D, sizeof(*t->gob));
	t->ring_cap = o->jobs ? o->jobs : 1;
	t->ring = tfs_callocn(t->ring_cap, sizeof(*t->ring));
	t->paths = tfs_callocn(3 * (size_t)o->field_num, sizeof(char *));
	if (!t->slots || !t->dimb || !t->gob || !t->ring || !t->paths)
		goto out_fail;
	for (uint32_t i = 0; i < t->slot_num; i++)
		slotacc_init(&t->slots[i]);
	for (uint32_t k = 0; k < t->D; k++) {
		slotacc_init(&t->dimb[k]);
		slotacc_init(&t->gob[k]);
	}
	for (unsigned r = 0; r < t->ring_cap; r++) {
		struct job *j = &t->ring[r];

		tfs_job_init(&j->job, job_run, j);
		j->tw = t;
		tfs_buf_init(&j->real, TFS_BUF_NO_MAX);
		if (tfs__cells_init(&j->cells, o->field_num))
			goto out_fail;
		j->out = tfs_callocn(o->field_num, sizeof(*j->out));
		if (!j->out)
			goto out_fail;
		for (uint32_t f = 0; f < o->field_num; f++)
			fout_init(&j->out[f]);
	}
	for (uint32_t f = 0; f < o->field_num; f++)
		for (int k = 0; k < 3; k++)
			if (!(t->paths[3 * f + (uint32_t)k] =
				      file_path(t, &o->fields[f], k)))
				goto out_fail;
	if (o->dense) {
		uint64_t cpt = tfs_schema_tile_cells(s);

		if (cpt == 0 || cpt > ((uint64_t)1 << 40)) {
			tfs__tw_free(t);
			return tfs_fail(d, TFS_E_UNSUPPORTED,
					"dense tiles of this schema are too "
					"large to write");
		}
		t->cpt = 1;
		t->tiles_total = 1;
		for (uint32_t k = 0; k < t->D; k++) {
			const struct tfs_dim *dm = &s->dims[k];

			t->ext[k] = tfs_value_as_u64(dm->type, dm->extent);
			t->boxlo[k] = tfs__dim_off(dm, o->box[k].lo);
			t->boxhi[k] = tfs__dim_off(dm, o->box[k].hi);
			t->tlo[k] = t->boxlo[k] / t->ext[k];
			t->ntiles[k] = t->boxhi[k] / t->ext[k] - t->tlo[k] + 1;
			t->cpt *= t->ext[k];
			t->tiles_total *= t->ntiles[k];
		}
	}
	*out = t;
	return TFS_E_OK;

out_fail:
	tfs__tw_free(t);
	return tfs_fail(d, e, "out of memory");
}

/* ---- Collecting the results of a tile ------------------------------------ */

static enum tfs_err put_minmax(struct tfs_buf *fixed, struct tfs_buf *var,
			       bool is_var, const struct tfs_buf *v)
{
	enum tfs_err e;

	if (is_var) {
		if ((e = tfs_buf_append_u64(fixed, var->len)))
			return e;
		return tfs_buf_append(var, v->data, v->len);
	}
	return tfs_buf_append(fixed, v->data, v->len);
}

static enum tfs_err file_append(struct tfs__tw *t, const char *path,
				const struct tfs_buf *b, struct tfs_diag *d)
{
	t->bytes += b->len;
	return tfs_vfs_append(t->o.vfs, path, b->data, b->len, d);
}

static enum tfs_err drain_one(struct tfs__tw *t, struct tfs_diag *d)
{
	struct job *j = &t->ring[t->head];
	const struct tfs__field *fields = t->o.fields;
	enum tfs_err e;

	tfs_job_wait(t->o.pool, &j->job);
	t->head = (t->head + 1) % t->ring_cap;
	t->inflight--;
	if (j->err) {
		tfs_fail(d, j->err, "%s", tfs_diag_msg(&j->d));
		return j->err;
	}
	for (uint32_t f = 0; f < t->o.field_num; f++) {
		const struct tfs__field *fd = &fields[f];
		struct slotacc *a = &t->slots[fd->slot];
		struct fout *o = &j->out[f];
		bool written = !(fd->is_dim && t->o.dense);

		e = tfs_buf_append_u64(&a->offsets, written ? a->file_size : 0);
		if (!e)
			e = tfs_buf_append_u64(&a->var_offsets,
					       fd->var ? a->var_file_size : 0);
		if (!e)
			e = tfs_buf_append_u64(&a->var_sizes,
					       fd->var ? o->var_size : 0);
		if (!e)
			e = tfs_buf_append_u64(&a->validity_offsets,
					       fd->nullable ? a->validity_file_size
							    : 0);
		if (e)
			return tfs_fail(d, e, "out of memory");
		if (written) {
			if ((e = file_append(t, t->paths[3 * f], &o->fixed, d)))
				return e;
			a->file_size += o->fixed.len;
		}
		if (fd->var) {
			if ((e = file_append(t, t->paths[3 * f + 1], &o->var, d)))
				return e;
			a->var_file_size += o->var.len;
		}
		if (fd->nullable) {
			if ((e = file_append(t, t->paths[3 * f + 2], &o->valid,
					     d)))
				return e;
			a->validity_file_size += o->valid.len;
		}
		if (has_minmax(fd) &&
		    ((e = put_minmax(&a->min_fixed, &a->min_var, fd->var,
				     &o->min)) ||
		     (e = put_minmax(&a->max_fixed, &a->max_var, fd->var,
				     &o->max))))
			return tfs_fail(d, e, "out of memory");
		if (has_sum(fd, t->o.dense) &&
		    (e = tfs_buf_append(&a->sums, o->sum, 8)))
			return tfs_fail(d, e, "out of memory");
		if (fd->nullable &&
		    (e = tfs_buf_append_u64(&a->null_counts, o->nulls)))
			return tfs_fail(d, e, "out of memory");
		if (fd->is_dim && !t->o.dense) {
			struct slotacc *b = &t->dimb[fd->index];
			struct slotacc *g = &t->gob[fd->index];

			if ((e = put_minmax(&b->min_fixed, &b->min_var, fd->var,
					    &o->lo)) ||
			    (e = put_minmax(&b->max_fixed, &b->max_var, fd->var,
					    &o->hi)) ||
			    (e = put_minmax(&g->min_fixed, &g->min_var, fd->var,
					    &o->first)) ||
			    (e = put_minmax(&g->max_fixed, &g->max_var, fd->var,
					    &o->last)))
				return tfs_fail(d, e, "out of memory");
		}
	}
	{
		/* The __coords slot: no file, zeros in every per-tile list. */
		struct slotacc *a = &t->slots[t->A];

		if ((e = tfs_buf_append_u64(&a->offsets, 0)) ||
		    (e = tfs_buf_append_u64(&a->var_offsets, 0)) ||
		    (e = tfs_buf_append_u64(&a->var_sizes, 0)) ||
		    (e = tfs_buf_append_u64(&a->validity_offsets, 0)))
			return tfs_fail(d, e, "out of memory");
	}
	t->last_tile_cells = j->cells.cell_num;
	t->tile_num++;
	return TFS_E_OK;
}

/* The job to fill next, draining the oldest when all are in flight. */
static enum tfs_err start_tile(struct tfs__tw *t, struct tfs_diag *d)
{
	enum tfs_err e;

	if (t->inflight == t->ring_cap && (e = drain_one(t, d)))
		return e;
	t->cur = &t->ring[(t->head + t->inflight) % t->ring_cap];
	tfs__cells_clear(&t->cur->cells);
	t->cur->real.len = 0;
	tfs_diag_init(&t->cur->d);
	t->cur->err = TFS_E_OK;
	return TFS_E_OK;
}

static void submit_tile(struct tfs__tw *t)
{
	tfs_job_init(&t->cur->job, job_run, t->cur);
	tfs_pool_submit(t->o.pool, &t->cur->job);
	t->inflight++;
	t->cur = NULL;
}

/* Dense: a cell nobody wrote (tile.md §6): zeros, one zero element for var
 * fields, validity 0. */
static enum tfs_err pad_cell(struct tfs__tw *t)
{
	struct tfs__cells *c = &t->cur->cells;
	static const uint8_t zeros[8];
	enum tfs_err e;

	for (uint32_t f = 0; f < c->field_num; f++) {
		const struct tfs__field *fd = &t->o.fields[f];
		struct tfs__col *col = &c->cols[f];

		if (fd->var) {
			if ((e = tfs_buf_append_u64(&col->offs, col->data.len)) ||
			    (e = tfs_buf_append(&col->data, zeros,
						(size_t)fd->cell_size)))
				return e;
		} else if ((e = tfs_buf_resize(&col->data,
					       col->data.len + fd->cell_size))) {
			return e;
		}
		if (fd->nullable && (e = tfs_buf_append_u8(&col->valid, 0)))
			return e;
	}
	if ((e = tfs_buf_append_u64(&c->tags, 0)) ||
	    (e = tfs_buf_append_u8(&t->cur->real, 0)))
		return e;
	c->cell_num++;
	return TFS_E_OK;
}

static enum tfs_err dense_fill_to(struct tfs__tw *t, uint64_t pos,
				  struct tfs_diag *d)
{
	enum tfs_err e;

	while (t->cur->cells.cell_num < pos)
		if ((e = pad_cell(t)))
			return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}

static enum tfs_err dense_close_tile(struct tfs__tw *t, struct tfs_diag *d)
{
	enum tfs_err e;

	if ((e = dense_fill_to(t, t->cpt, d)))
		return e;
	submit_tile(t);
	t->cur_rank++;
	return TFS_E_OK;
}

enum tfs_err tfs__tw_add(struct tfs__tw *t, const struct tfs__cells *c,
			 uint64_t i, struct tfs_diag *d)
{
	enum tfs_err e;

	if (!t->o.dense) {
		if (!t->cur && (e = start_tile(t, d)))
			return e;
		if ((e = tfs__cells_copy(&t->cur->cells, t->o.fields, c, i)))
			return tfs_fail(d, e, "out of memory");
		if (t->cur->cells.cell_num == t->capacity)
			submit_tile(t);
		t->cell_num++;
		return TFS_E_OK;
	}
	/* Dense: the cell's tile (rank in tile order over the tile box)
	 * and its position in cell order inside that tile. */
	uint64_t rank = 0, pos = 0;
	const struct tfs_schema *s = t->o.s;

	for (uint32_t n = 0; n < t->D; n++) {
		uint32_t k = s->tile_order == TFS_COL_MAJOR ? t->D - 1 - n : n;
		uint64_t off = tfs__dim_off(&s->dims[k],
				       c->cols[k].data.data +
					       i * t->o.fields[k].cell_size);

		if (off < t->boxlo[k] || off > t->boxhi[k])
			return tfs_fail(d, TFS_E_INTERNAL,
					"cell outside the dense box");
		rank = rank * t->ntiles[k] + (off / t->ext[k] - t->tlo[k]);
	}
	for (uint32_t n = 0; n < t->D; n++) {
		uint32_t k = s->cell_order == TFS_COL_MAJOR ? t->D - 1 - n : n;
		uint64_t off = tfs__dim_off(&s->dims[k],
				       c->cols[k].data.data +
					       i * t->o.fields[k].cell_size);

		pos = pos * t->ext[k] + off % t->ext[k];
	}
	if (t->cur && rank != t->cur_rank && (e = dense_close_tile(t, d)))
		return e;
	while (rank > t->cur_rank) {
		if ((e = start_tile(t, d)) || (e = dense_close_tile(t, d)))
			return e;
	}
	if (rank < t->cur_rank)
		return tfs_fail(d, TFS_E_INTERNAL, "dense cells out of order");
	if (!t->cur && (e = start_tile(t, d)))
		return e;
	if (pos < t->cur->cells.cell_num)
		return tfs_fail(d, TFS_E_INTERNAL, "dense cells out of order");
	if ((e = dense_fill_to(t, pos, d)))
		return e;
	if ((e = tfs__cells_copy(&t->cur->cells, t->o.fields, c, i)) ||
	    (e = tfs_buf_append_u8(&t->cur->real, 1)))
		return tfs_fail(d, e, "out of memory");
	t->cell_num++;
	return TFS_E_OK;
}

/* Gathers cells idx[0..n) of src into the current tile, one column at a
 * time (the indexes are random for unordered input: a tight loop per
 * column keeps many loads in flight). */
static enum tfs_err gather(struct tfs__tw *t, const struct tfs__cells *src,
			   const uint64_t *idx, uint64_t n)
{
	struct tfs__cells *dst = &t->cur->cells;
	enum tfs_err e;

	for (uint32_t f = 0; f < src->field_num; f++) {
		const struct tfs__field *fd = &t->o.fields[f];
		const struct tfs__col *sc = &src->cols[f];
		struct tfs__col *dc = &dst->cols[f];

		if (fd->var) {
			uint64_t total = 0;
			uint8_t *op;

			for (uint64_t k = 0; k < n; k++) {
				uint64_t len;

				(void)tfs__var_cell(src, f, idx[k], &len);
				total += len;
			}
			if ((e = tfs_buf_reserve(&dc->data, (size_t)total)) ||
			    (e = tfs_buf_reserve(&dc->offs, (size_t)(8 * n))))
				return e;
			op = dc->offs.data + dc->offs.len;
			for (uint64_t k = 0; k < n; k++) {
				uint64_t len;
				const uint8_t *p = tfs__var_cell(src, f, idx[k], &len);

				tfs_put_u64(op + 8 * k, dc->data.len);
				/* Empty cells only: data may still be NULL. */
				if (len)
					memcpy(dc->data.data + dc->data.len, p, (size_t)len);
				dc->data.len += (size_t)len;
			}
			dc->offs.len += (size_t)(8 * n);
		} else {
			size_t cs = (size_t)fd->cell_size;
			uint8_t *out;

			if ((e = tfs_buf_reserve(&dc->data, cs * n)))
				return e;
			out = dc->data.data + dc->data.len;
			switch (cs) {
			case 4:
				for (uint64_t k = 0; k < n; k++)
					memcpy(out + 4 * k, sc->data.data + 4 * idx[k], 4);
				break;
			case 8:
				for (uint64_t k = 0; k < n; k++)
					memcpy(out + 8 * k, sc->data.data + 8 * idx[k], 8);
				break;
			default:
				for (uint64_t k = 0; k < n; k++)
					memcpy(out + cs * k, sc->data.data + cs * idx[k], cs);
				break;
			}
			dc->data.len += cs * n;
		}
		if (fd->nullable) {
			if ((e = tfs_buf_reserve(&dc->valid, (size_t)n)))
				return e;
			for (uint64_t k = 0; k < n; k++)
				dc->valid.data[dc->valid.len + k] = sc->valid.data[idx[k]];
			dc->valid.len += (size_t)n;
		}
	}
	if ((e = tfs_buf_reserve(&dst->tags, (size_t)(8 * n))))
		return e;
	for (uint64_t k = 0; k < n; k++)
		memcpy(dst->tags.data + dst->tags.len + 8 * k,
		       src->tags.data + 8 * idx[k], 8);
	dst->tags.len += (size_t)(8 * n);
	dst->cell_num += n;
	return TFS_E_OK;
}

enum tfs_err tfs__tw_add_many(struct tfs__tw *t, const struct tfs__cells *c,
			      const uint64_t *idx, uint64_t n,
			      struct tfs_diag *d)
{
	enum tfs_err e;

	if (t->o.dense) {
		for (uint64_t k = 0; k < n; k++)
			if ((e = tfs__tw_add(t, c, idx[k], d)))
				return e;
		return TFS_E_OK;
	}
	while (n) {
		uint64_t room, m;

		if (!t->cur && (e = start_tile(t, d)))
			return e;
		room = t->capacity - t->cur->cells.cell_num;
		m = n < room ? n : room;
		if ((e = gather(t, c, idx, m)))
			return tfs_fail(d, e, "out of memory");
		t->cell_num += m;
		idx += m;
		n -= m;
		if (t->cur->cells.cell_num == t->capacity)
			submit_tile(t);
	}
	return TFS_E_OK;
}

/* ---- The fragment metadata file ------------------------------------------ */

static enum tfs_err put_tile(struct tfs__tw *t, struct tfs_buf *file,
			     uint64_t *off, const struct tfs_buf *payload,
			     struct tfs_diag *d)
{
	*off = file->len;
	return tfs_generic_tile_encode(file, payload->data, payload->len,
				       t->o.key, d);
}

static enum tfs_err put_u64_tile(struct tfs__tw *t, struct tfs_buf *file,
				 uint64_t *off, const struct tfs_buf *vals,
				 bool present, struct tfs_diag *d)
{
	struct tfs_buf *p = &t->tilebuf;
	uint64_t n = present ? vals->len / 8 : 0;
	enum tfs_err e;

	p->len = 0;
	if ((e = tfs_u64_list_serialize(p, (const uint64_t *)vals->data, n)))
		return tfs_fail(d, e, "out of memory");
	return put_tile(t, file, off, p, d);
}

static enum tfs_err put_minmax_tile(struct tfs__tw *t, struct tfs_buf *file,
				    uint64_t *off, const struct tfs_buf *fixed,
				    const struct tfs_buf *var, struct tfs_diag *d)
{
	struct tfs_buf *p = &t->tilebuf;
	enum tfs_err e;

	p->len = 0;
	if ((e = tfs_buf_append_u64(p, fixed ? fixed->len : 0)) ||
	    (e = tfs_buf_append_u64(p, var ? var->len : 0)) ||
	    (fixed && (e = tfs_buf_append(p, fixed->data, fixed->len))) ||
	    (var && (e = tfs_buf_append(p, var->data, var->len))))
		return tfs_fail(d, e, "out of memory");
	return put_tile(t, file, off, p, d);
}

/* Value t of a min/max list: fixed values or offsets + bytes. */
static const uint8_t *mm_value(const struct slotacc *a, bool max, bool var,
			       uint64_t cs, uint64_t t, uint64_t tiles,
			       uint64_t *len)
{
	const struct tfs_buf *fx = max ? &a->max_fixed : &a->min_fixed;
	const struct tfs_buf *vr = max ? &a->max_var : &a->min_var;

	if (!var) {
		*len = cs;
		return fx->data + t * cs;
	}
	uint64_t o = tfs_get_u64(fx->data + t * 8);
	uint64_t end = t + 1 < tiles ? tfs_get_u64(fx->data + (t + 1) * 8)
				     : vr->len;
	*len = end - o;
	return vr->data + o;
}

/* Fragment summary (fragment.md §6): per slot min, max, sum, null count
 * over the tiles. */
static enum tfs_err put_summary(struct tfs__tw *t, struct tfs_buf *p)
{
	enum tfs_err e;
	uint64_t tiles = t->tile_num;

	for (uint32_t slot = 0; slot < t->slot_num; slot++) {
		const struct tfs__field *fd = NULL;
		const struct slotacc *a = &t->slots[slot];
		uint8_t sum[8] = { 0 };
		uint64_t nulls = 0;

		for (uint32_t f = 0; f < t->o.field_num; f++)
			if (t->o.fields[f].slot == slot)
				fd = &t->o.fields[f];
		if (!fd) {
			/* __coords: zero min and max of dimension 0's size. */
			uint64_t sz = tfs_datatype_size(t->o.s->dims[0].type);
			static const uint8_t z[8];

			if ((e = tfs_buf_append_u64(p, sz)) ||
			    (e = tfs_buf_append(p, z, sz)) ||
			    (e = tfs_buf_append_u64(p, sz)) ||
			    (e = tfs_buf_append(p, z, sz)) ||
			    (e = tfs_buf_append(p, sum, 8)) ||
			    (e = tfs_buf_append_u64(p, 0)))
				return e;
			continue;
		}
		if (fd->nullable)
			for (uint64_t k = 0; k < tiles; k++)
				nulls += tfs_get_u64(a->null_counts.data + 8 * k);
		if (has_sum(fd, t->o.dense) &&
		    !(fd->type == TFS_CHAR && !fd->var)) {
			struct sum s;

			sum_init(&s, fd->type);
			for (uint64_t k = 0; k < tiles; k++)
				sum_add_raw(&s, a->sums.data + 8 * k);
			sum_put(&s, sum);
		}
		if (!has_minmax(fd)) {
			if ((e = tfs_buf_append_u64(p, 0)) ||
			    (e = tfs_buf_append_u64(p, 0)))
				return e;
		} else {
			const uint8_t *mn = NULL, *mx = NULL;
			uint64_t mnl = 0, mxl = 0;
			uint64_t cs = fd->cell_size;

			for (uint64_t k = 0; k < tiles; k++) {
				uint64_t l1, l2, cells;
				const uint8_t *v1, *v2;

				cells = t->o.dense ? t->cpt
				      : k + 1 < tiles ? t->capacity
						      : t->last_tile_cells;
				if (fd->nullable &&
				    tfs_get_u64(a->null_counts.data + 8 * k) ==
					    cells)
					continue;
				v1 = mm_value(a, false, fd->var, cs, k, tiles, &l1);
				v2 = mm_value(a, true, fd->var, cs, k, tiles, &l2);
				if (fd->var) {
					if (!mn || tfs_bytes_cmp(v1, l1, mn, mnl) < 0) {
						mn = v1;
						mnl = l1;
					}
					if (!mx || tfs_bytes_cmp(v2, l2, mx, mxl) > 0) {
						mx = v2;
						mxl = l2;
					}
				} else if (is_string_type(fd->type)) {
					if (!mn || fixed_str_cmp(v1, mn, cs) < 0)
						mn = v1;
					if (!mx || fixed_str_cmp(v2, mx, cs) > 0)
						mx = v2;
					mnl = mxl = cs;
				} else {
					if (!mn || tfs_value_cmp(fd->type, v1, mn) < 0)
						mn = v1;
					if (!mx || tfs_value_cmp(fd->type, v2, mx) > 0)
						mx = v2;
					mnl = mxl = cs;
				}
			}
			if ((e = tfs_buf_append_u64(p, mnl)) ||
			    (mn && (e = tfs_buf_append(p, mn, mnl))) ||
			    (e = tfs_buf_append_u64(p, mxl)) ||
			    (mx && (e = tfs_buf_append(p, mx, mxl))))
				return e;
		}
		if ((e = tfs_buf_append(p, sum, 8)) ||
		    (e = tfs_buf_append_u64(p, nulls)))
			return e;
	}
	return TFS_E_OK;
}

static enum tfs_err build_rtree(struct tfs__tw *t, struct tfs_rtree *r,
				struct tfs_range **ned)
{
	uint64_t n = t->tile_num;
	struct tfs_range *nd;

	memset(r, 0, sizeof(*r));
	r->dim_num = t->D;
	r->fanout = 10;
	*ned = nd = tfs_callocn(t->D, sizeof(*nd));
	if (!nd)
		return TFS_E_NOMEM;
	if (t->o.dense) {
		for (uint32_t k = 0; k < t->D; k++)
			nd[k] = t->o.box[k];
		return TFS_E_OK;
	}
	r->leaf_num = n;
	r->leaves = tfs_callocn(n ? n : 1, t->D * sizeof(*r->leaves));
	if (!r->leaves)
		return TFS_E_NOMEM;
	for (uint32_t k = 0; k < t->D; k++) {
		const struct tfs__field *fd = &t->o.fields[k];
		const struct slotacc *b = &t->dimb[k];

		for (uint64_t i = 0; i < n; i++) {
			struct tfs_range *g = &r->leaves[i * t->D + k];

			g->lo = mm_value(b, false, fd->var, fd->cell_size, i, n,
					 &g->lo_len);
			g->hi = mm_value(b, true, fd->var, fd->cell_size, i, n,
					 &g->hi_len);
			if (i == 0) {
				nd[k] = *g;
				continue;
			}
			if (fd->var) {
				if (tfs_bytes_cmp(g->lo, g->lo_len, nd[k].lo,
						  nd[k].lo_len) < 0) {
					nd[k].lo = g->lo;
					nd[k].lo_len = g->lo_len;
				}
				if (tfs_bytes_cmp(g->hi, g->hi_len, nd[k].hi,
						  nd[k].hi_len) > 0) {
					nd[k].hi = g->hi;
					nd[k].hi_len = g->hi_len;
				}
			} else {
				if (tfs_value_cmp(fd->type, g->lo, nd[k].lo) < 0)
					nd[k].lo = g->lo;
				if (tfs_value_cmp(fd->type, g->hi, nd[k].hi) > 0)
					nd[k].hi = g->hi;
			}
		}
	}
	return TFS_E_OK;
}

static enum tfs_err alloc_lists(struct tfs_footer *f, uint32_t num, uint32_t D)
{
	uint64_t **lists[] = {
		&f->file_sizes, &f->file_var_sizes, &f->file_validity_sizes,
		&f->tile_offsets_off, &f->tile_var_offsets_off,
		&f->tile_var_sizes_off, &f->tile_validity_offsets_off,
		&f->tile_mins_off, &f->tile_maxes_off, &f->tile_sums_off,
		&f->tile_null_counts_off,
	};

	for (size_t i = 0; i < sizeof(lists) / sizeof(*lists); i++)
		if (!(*lists[i] = tfs_callocn(num, sizeof(uint64_t))))
			return TFS_E_NOMEM;
	f->gobounds_mins_off = tfs_callocn(D, sizeof(uint64_t));
	f->gobounds_maxes_off = tfs_callocn(D, sizeof(uint64_t));
	if (!f->gobounds_mins_off || !f->gobounds_maxes_off)
		return TFS_E_NOMEM;
	return TFS_E_OK;
}

static enum tfs_err write_metadata(struct tfs__tw *t, struct tfs_diag *d)
{
	struct tfs_footer f;
	struct tfs_rtree r;
	struct tfs_range *ned = NULL;
	struct tfs_buf file, *p = &t->tilebuf;
	uint32_t W = t->o.version, num = t->slot_num, D = t->D;
	const struct tfs_schema *s = t->o.s;
	bool var_dim = false;
	char *path = NULL;
	enum tfs_err e;

	memset(&f, 0, sizeof(f));
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	if ((e = build_rtree(t, &r, &ned)) || (e = alloc_lists(&f, num, D))) {
		tfs_fail(d, e, "out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < D; k++)
		var_dim |= s->dims[k].var;
	p->len = 0;
	if ((e = tfs_rtree_serialize(p, &r, W, s))) {
		tfs_fail(d, e, "fragment metadata: R-tree: %s", tfs_strerror(e));
		goto out;
	}
	if ((e = put_tile(t, &file, &f.rtree_off, p, d)))
		goto out;
	for (uint32_t i = 0; i < num && !e; i++)
		e = put_u64_tile(t, &file, &f.tile_offsets_off[i],
				 &t->slots[i].offsets, true, d);
	for (uint32_t i = 0; i < num && !e; i++)
		e = put_u64_tile(t, &file, &f.tile_var_offsets_off[i],
				 &t->slots[i].var_offsets, true, d);
	for (uint32_t i = 0; i < num && !e; i++)
		e = put_u64_tile(t, &file, &f.tile_var_sizes_off[i],
				 &t->slots[i].var_sizes, true, d);
	for (uint32_t i = 0; W >= 7 && i < num && !e; i++)
		e = put_u64_tile(t, &file, &f.tile_validity_offsets_off[i],
				 &t->slots[i].validity_offsets, true, d);
	if (e)
		goto out;
	if (W >= 11) {
		/* The __coords slot gets zeros, a cell being all D
		 * coordinates of dimension 0's type. */
		uint64_t csz = D * tfs_datatype_size(s->dims[0].type);
		struct tfs_buf zeros;

		tfs_buf_init(&zeros, TFS_BUF_NO_MAX);
		if ((e = tfs_buf_resize(&zeros, t->tile_num * csz))) {
			tfs_fail(d, e, "out of memory");
			goto out;
		}
		for (int mx = 0; mx < 2 && !e; mx++)
			for (uint32_t i = 0; i < num && !e; i++) {
				struct slotacc *a = &t->slots[i];
				uint64_t *off = mx ? &f.tile_maxes_off[i]
						   : &f.tile_mins_off[i];

				if (i == t->A)
					e = put_minmax_tile(t, &file, off,
							    &zeros, NULL, d);
				else
					e = put_minmax_tile(
						t, &file, off,
						mx ? &a->max_fixed : &a->min_fixed,
						mx ? &a->max_var : &a->min_var,
						d);
			}
		f.has_gobounds = W >= 23 && !t->o.dense;
		for (int mx = 0; f.has_gobounds && mx < 2 && !e; mx++)
			for (uint32_t k = 0; k < D && !e; k++) {
				struct slotacc *g = &t->gob[k];

				e = put_minmax_tile(
					t, &file,
					mx ? &f.gobounds_maxes_off[k]
					   : &f.gobounds_mins_off[k],
					mx ? &g->max_fixed : &g->min_fixed,
					t->o.fields[k].var
						? (mx ? &g->max_var : &g->min_var)
						: NULL,
					d);
			}
		for (uint32_t i = 0; i < num && !e; i++) {
			if (i == t->A) {
				zeros.len = 0;
				if (type_has_sum(s->dims[0].type) &&
				    (e = tfs_buf_resize(&zeros, t->tile_num * 8)))
					break;
				e = put_u64_tile(t, &file, &f.tile_sums_off[i],
						 &zeros, true, d);
			} else {
				e = put_u64_tile(t, &file, &f.tile_sums_off[i],
						 &t->slots[i].sums, true, d);
			}
		}
		tfs_buf_release(&zeros);
		for (uint32_t i = 0; i < num && !e; i++)
			e = put_u64_tile(t, &file, &f.tile_null_counts_off[i],
					 &t->slots[i].null_counts, true, d);
		if (e)
			goto out;
	}
	if (W >= 12) {
		p->len = 0;
		if ((e = put_summary(t, p))) {
			tfs_fail(d, e, "out of memory");
			goto out;
		}
		if ((e = put_tile(t, &file, &f.summary_off, p, d)))
			goto out;
	}
	if (W >= 15) {
		p->len = 0;
		if ((e = tfs_buf_append_u64(p, 0)) ||
		    (e = put_tile(t, &file, &f.processed_conditions_off, p, d)))
			goto out;
	}
	/* Footer (fragment.md §4). */
	f.version = W;
	f.schema_name = s->name;
	f.dense = t->o.dense;
	f.ned = ned;
	f.dim_num = D;
	f.sparse_tile_num = t->o.dense ? 0 : t->tile_num;
	f.last_tile_cell_num = t->o.dense ? t->cpt : t->last_tile_cells;
	f.slot_num = num;
	f.has_timestamps = t->o.timestamps;
	for (uint32_t i = 0; i < num; i++) {
		f.file_sizes[i] = t->slots[i].file_size;
		f.file_var_sizes[i] = t->slots[i].var_file_size;
		f.file_validity_sizes[i] = t->slots[i].validity_file_size;
	}
	{
		size_t at = file.len;

		if ((e = tfs_footer_serialize(&file, &f, s))) {
			tfs_fail(d, e, "fragment metadata: footer: %s",
				 tfs_strerror(e));
			goto out;
		}
		if ((W >= 10 || var_dim) &&
		    (e = tfs_buf_append_u64(&file, file.len - at))) {
			tfs_fail(d, e, "out of memory");
			goto out;
		}
	}
	path = tfs_path_join(t->o.dir, "__fragment_metadata.tdb");
	if (!path) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	t->bytes += file.len;
	e = tfs__write_file(t->o.vfs, path, file.data, file.len, d);

out:
	f.schema_name = NULL;
	f.ned = NULL;
	tfs_footer_release(&f);
	tfs_free(r.leaves);
	tfs_free(ned);
	tfs_free(path);
	tfs_buf_release(&file);
	return e;
}

enum tfs_err tfs__tw_finish(struct tfs__tw *t, uint64_t *bytes,
			    uint64_t *cell_num, struct tfs_diag *d)
{
	enum tfs_err e;

	if (t->o.dense) {
		if (t->cur && (e = dense_close_tile(t, d)))
			return e;
		while (t->cur_rank < t->tiles_total)
			if ((e = start_tile(t, d)) || (e = dense_close_tile(t, d)))
				return e;
	} else if (t->cur && t->cur->cells.cell_num) {
		submit_tile(t);
	}
	while (t->inflight)
		if ((e = drain_one(t, d)))
			return e;
	/* Every data file durable before the metadata names it. */
	for (uint32_t f = 0; f < t->o.field_num; f++) {
		const struct tfs__field *fd = &t->o.fields[f];
		const struct slotacc *a = &t->slots[fd->slot];

		if (a->file_size &&
		    (e = tfs_vfs_fsync(t->o.vfs, t->paths[3 * f], d)))
			return e;
		if (a->var_file_size &&
		    (e = tfs_vfs_fsync(t->o.vfs, t->paths[3 * f + 1], d)))
			return e;
		if (a->validity_file_size &&
		    (e = tfs_vfs_fsync(t->o.vfs, t->paths[3 * f + 2], d)))
			return e;
	}
	if ((e = write_metadata(t, d)))
		return e;
	*bytes = t->bytes;
	*cell_num = t->cell_num;
	return TFS_E_OK;
}
