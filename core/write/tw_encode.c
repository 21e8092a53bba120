/* Encoding one tile of the tile writer, as a job on the pool: each field's
 * statistics for the fragment metadata (fragment.md §6: min, max, sum,
 * null count, MBR and global-order bounds) and its filtered tiles
 * (tile.md §2-4). */
#include "tile_writer_internal.h"

/* ---- Per-field properties (fragment.md §6) ------------------------------- */

bool tfs__is_string_type(uint8_t t)
{
	return t == TFS_CHAR || t == TFS_STRING_ASCII;
}

bool tfs__has_minmax(const struct tfs__field *f)
{
	uint8_t t = f->type;

	if (f->is_dim || t == TFS_ANY || t == TFS_BLOB || t == TFS_GEOM_WKB ||
	    t == TFS_GEOM_WKT || (t >= TFS_STRING_UTF8 && t <= TFS_STRING_UCS4))
		return false;
	return f->cell_val_num == 1 || tfs__is_string_type(t);
}

bool tfs__type_has_sum(uint8_t t)
{
	return !(t == TFS_ANY || t == TFS_BLOB || t == TFS_GEOM_WKB ||
		 t == TFS_GEOM_WKT ||
		 (t >= TFS_STRING_ASCII && t <= TFS_STRING_UCS4));
}

bool tfs__has_sum(const struct tfs__field *f, bool dense)
{
	if (f->var || f->cell_val_num != 1 || (f->is_dim && dense))
		return false;
	return tfs__type_has_sum(f->type);
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
int tfs__fixed_str_cmp(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
		if (!a[i])
			return 0;
	}
	return 0;
}

void tfs__sum_init(struct sum *s, uint8_t type)
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

void tfs__sum_put(const struct sum *s, uint8_t *dst)
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

void tfs__sum_add_raw(struct sum *s, const uint8_t *p)
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

/* The one-pass typed statistics (fast_stats) where they apply: true when
 * they did, with *e telling whether storing them failed. */
static bool tile_stats_fast(struct job *j, uint32_t f,
			    const struct tfs__field *fd, struct fout *o,
			    enum tfs_err *e)
{
	const struct tfs__cells *c = &j->cells;
	bool dense = j->tw->o.dense;
	bool want_sum = tfs__has_sum(fd, dense);
	size_t cs = (size_t)fd->cell_size;
	struct sum s;
	uint8_t mn[8], mx[8];

	*e = TFS_E_OK;
	if ((fd->is_dim && dense) || !(fd->is_dim || tfs__has_minmax(fd)) ||
	    !c->cell_num)
		return false;
	tfs__sum_init(&s, fd->type);
	if (!fast_stats(j, f, fd, want_sum, &s, mn, mx))
		return false;
	if (want_sum)
		tfs__sum_put(&s, o->sum);
	if (!fd->is_dim) {
		o->min.len = o->max.len = 0;
		if (!(*e = tfs_buf_append(&o->min, mn, cs)))
			*e = tfs_buf_append(&o->max, mx, cs);
		return true;
	}
	*e = put_fixed_dim_bounds(o, mn, mx, c->cols[f].data.data, c->cell_num,
				  cs);
	return true;
}

/* A dimension's bounds in a sparse tile: lowest and highest value, and
 * for var-sized ones the first and last too. */
static enum tfs_err dim_bounds(struct job *j, uint32_t f,
			       const struct tfs__field *fd, struct fout *o)
{
	const struct tfs__cells *c = &j->cells;
	const struct tfs__col *col = &c->cols[f];
	struct var_range r = {0};
	uint64_t n = c->cell_num, l0, l1;
	const uint8_t *p0, *p1;
	enum tfs_err e;

	if (j->tw->o.dense || n == 0)
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
		return put_fixed_dim_bounds(o, lo, hi, col->data.data, n, cs);
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

/* Minimum and maximum of a var-sized attribute's values. */
static enum tfs_err var_minmax(struct job *j, uint32_t f,
			       const struct tfs__field *fd, struct fout *o)
{
	const struct tfs__cells *c = &j->cells;
	const struct tfs__col *col = &c->cols[f];
	struct var_range r = {0};
	enum tfs_err e;

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

/* Minimum and maximum of a fixed-size string attribute's values, zeros
 * when it has none. */
static enum tfs_err string_minmax(struct job *j, uint32_t f,
				  const struct tfs__field *fd, struct fout *o)
{
	const struct tfs__cells *c = &j->cells;
	const struct tfs__col *col = &c->cols[f];
	const uint8_t *lo = NULL, *hi = NULL;
	size_t cs = (size_t)fd->cell_size;
	enum tfs_err e;

	for (uint64_t i = 0; i < c->cell_num; i++) {
		const uint8_t *p = col->data.data + i * cs;

		if (!cell_has_value(j, fd, col, i))
			continue;
		if (!lo || tfs__fixed_str_cmp(p, lo, cs) < 0)
			lo = p;
		if (!hi || tfs__fixed_str_cmp(p, hi, cs) > 0)
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
}

/* Minimum and maximum of a fixed-size numeric attribute's values, the
 * type's extremes reversed when it has none. */
static enum tfs_err number_minmax(struct job *j, uint32_t f,
				  const struct tfs__field *fd, struct fout *o)
{
	const struct tfs__cells *c = &j->cells;
	const struct tfs__col *col = &c->cols[f];
	uint8_t mn[8], mx[8];
	size_t cs = (size_t)fd->cell_size;
	enum tfs_err e;

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
	if (tile_stats_fast(j, f, fd, o, &e))
		return e;
	if (tfs__has_sum(fd, dense)) {
		struct sum s;

		tfs__sum_init(&s, fd->type);
		for (uint64_t i = 0; i < c->cell_num; i++)
			if (cell_has_value(j, fd, col, i))
				sum_add(&s, fd->type,
					col->data.data + i * fd->cell_size);
		tfs__sum_put(&s, o->sum);
	}
	if (fd->is_dim)
		return dim_bounds(j, f, fd, o);
	if (!tfs__has_minmax(fd))
		return TFS_E_OK;
	o->min.len = o->max.len = 0;
	if (fd->var)
		return var_minmax(j, f, fd, o);
	if (tfs__is_string_type(fd->type))
		return string_minmax(j, f, fd, o);
	return number_minmax(j, f, fd, o);
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

void tfs__tw_job_run(void *arg)
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
