/* tfs_writer_append (tfs_write.h): maps a batch's columns to the schema's
 * fields, checks every value (domains, enumerations, UTF-8, nullability;
 * format/write.md §2) and stages the cells for sorting (sort.c) or, when
 * streaming, hands them to the tile writer; a batch that fails leaves
 * nothing staged. */
#include "writer_state.h"

/* ---- Append ---------------------------------------------------------------- */

static const char *tag_word(const struct tfs_writer *w)
{
	return w->o.tag_word ? w->o.tag_word : "cell";
}

static void fmt_value(char *buf, size_t cap, uint8_t type, const uint8_t *v)
{
	if (tfs_datatype_class(type) == TFS_CLASS_FLOAT)
		snprintf(buf, cap, "%.17g", tfs_value_as_f64(type, v));
	else if (tfs_datatype_class(type) == TFS_CLASS_SIGNED)
		snprintf(buf, cap, "%" PRId64, tfs_value_as_i64(type, v));
	else
		snprintf(buf, cap, "%" PRIu64, tfs_value_as_u64(type, v));
}

enum tfs_err tfs__writer_check_value(const struct tfs_writer *w, uint32_t k,
				     const uint8_t *v, uint64_t len,
				     const char *what, uint64_t tag,
				     struct tfs_diag *d)
{
	const struct tfs_dim *dm = &w->s->dims[k];
	char where[64];

	if (!dm->var && tfs_value_cmp(dm->type, v, dm->domain[0]) >= 0 &&
	    tfs_value_cmp(dm->type, v, dm->domain[1]) <= 0 &&
	    !w->s->has_current_domain &&
	    (tfs_datatype_class(dm->type) != TFS_CLASS_FLOAT ||
	     !isnan(tfs_value_as_f64(dm->type, v))))
		return TFS_E_OK; /* the common case, without formatting */
	if (dm->var && !w->s->has_current_domain)
		return TFS_E_OK;
	if (what)
		snprintf(where, sizeof(where), "%s", what);
	else
		snprintf(where, sizeof(where), "%s %" PRIu64, tag_word(w), tag);
	if (dm->var) {
		if (w->s->has_current_domain) {
			const struct tfs_range *r = &w->s->current_domain[k];

			if (r->lo_len + r->hi_len > 0 &&
			    (tfs_bytes_cmp(v, len, r->lo, r->lo_len) < 0 ||
			     tfs_bytes_cmp(v, len, r->hi, r->hi_len) > 0))
				return tfs_fail(d, TFS_E_INVALID,
						"%s: dimension '%s': '%.*s' outside "
						"the current domain",
						where, dm->name,
						(int)(len > 64 ? 64 : len), v);
		}
		return TFS_E_OK;
	}
	if (tfs_datatype_class(dm->type) == TFS_CLASS_FLOAT &&
	    isnan(tfs_value_as_f64(dm->type, v)))
		return tfs_fail(d, TFS_E_INVALID, "%s: dimension '%s': NaN",
				where, dm->name);
	if (tfs_value_cmp(dm->type, v, dm->domain[0]) < 0 ||
	    tfs_value_cmp(dm->type, v, dm->domain[1]) > 0) {
		char buf[64];

		fmt_value(buf, sizeof(buf), dm->type, v);
		return tfs_fail(d, TFS_E_INVALID,
				"%s: dimension '%s': %s outside the domain",
				where, dm->name, buf);
	}
	if (w->s->has_current_domain) {
		const struct tfs_range *r = &w->s->current_domain[k];

		if (r->lo && r->hi &&
		    (tfs_value_cmp(dm->type, v, r->lo) < 0 ||
		     tfs_value_cmp(dm->type, v, r->hi) > 0)) {
			char buf[64], lo[64], hi[64];

			fmt_value(buf, sizeof(buf), dm->type, v);
			fmt_value(lo, sizeof(lo), dm->type, r->lo);
			fmt_value(hi, sizeof(hi), dm->type, r->hi);
			return tfs_fail(d, TFS_E_INVALID,
					"%s: dimension '%s': %s outside the "
					"current domain [%s, %s]",
					where, dm->name, buf, lo, hi);
		}
	}
	return TFS_E_OK;
}

static enum tfs_err map_columns(struct tfs_writer *w, const struct tfs_batch *b,
				struct tfs_diag *d)
{
	for (uint32_t f = 0; f < w->field_num; f++)
		w->colmap[f] = -1;
	for (size_t c = 0; c < b->column_num; c++) {
		const struct tfs_column *col = &b->columns[c];
		int hit = -1;

		if (!col->name)
			return tfs_fail(d, TFS_E_INVALID, "column %zu has no name",
					c);
		for (uint32_t f = 0; f < w->field_num; f++)
			if (!strcmp(w->fields[f].name, col->name))
				hit = (int)f;
		if (hit < 0)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': no such field", col->name);
		if (w->colmap[hit] >= 0)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s' given twice", col->name);
		if (w->layout == TFS_WRITE_DENSE_BOX && w->fields[hit].is_dim)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': a box write takes "
					"attributes only",
					col->name);
		w->colmap[hit] = (int)c;
	}
	for (uint32_t f = 0; f < w->field_num; f++) {
		const struct tfs__field *fd = &w->fields[f];
		const struct tfs_column *col;

		if (w->colmap[f] < 0) {
			if (fd->nullable ||
			    (fd->is_dim && w->layout == TFS_WRITE_DENSE_BOX))
				continue;
			return tfs_fail(d, TFS_E_INVALID, "missing field '%s'",
					fd->name);
		}
		col = &b->columns[w->colmap[f]];
		if (col->type == fd->type && !col->var && !fd->var &&
		    col->cell_val_num != fd->cell_val_num)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': %" PRIu32 " values a cell, "
					"field has %" PRIu32,
					col->name, col->cell_val_num,
					fd->cell_val_num);
		if (col->type != fd->type || col->var != fd->var)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': type %s%s, field is %s%s",
					col->name, tfs_datatype_name(col->type),
					col->var ? " (var)" : "",
					tfs_datatype_name(fd->type),
					fd->var ? " (var)" : "");
		if (b->cell_num && ((fd->var && (!col->offsets || !col->data)) ||
				    (!fd->var && !col->data)))
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': no values", col->name);
		if (!fd->var && col->data_len < b->cell_num * fd->cell_size)
			return tfs_fail(d, TFS_E_INVALID,
					"column '%s': %" PRIu64 " bytes for %" PRIu64
					" cells",
					col->name, col->data_len, b->cell_num);
	}
	return TFS_E_OK;
}

/* The domain check of fixed-size dimension values in one typed pass:
 * *bad = index of the first value outside [lo, hi] (or NaN), n if none;
 * *imin / *imax = indexes of the smallest / largest value. False for
 * types it does not handle. */
#define DEF_DOMAIN(NAME, T)                                                   \
	static void NAME(const uint8_t *p, uint64_t n, const uint8_t *lop,    \
			 const uint8_t *hip, uint64_t *bad, uint64_t *imin,   \
			 uint64_t *imax)                                      \
	{                                                                     \
		T lo, hi, mn, mx;                                             \
                                                                              \
		memcpy(&lo, lop, sizeof(T));                                  \
		memcpy(&hi, hip, sizeof(T));                                  \
		memcpy(&mn, p, sizeof(T));                                    \
		mx = mn;                                                      \
		*bad = n;                                                     \
		*imin = *imax = 0;                                            \
		for (uint64_t i = 0; i < n; i++) {                            \
			T v;                                                  \
                                                                              \
			memcpy(&v, p + i * sizeof(T), sizeof(T));             \
			if (!(v >= lo && v <= hi)) {                          \
				*bad = i;                                     \
				return;                                       \
			}                                                     \
			if (v < mn) {                                         \
				mn = v;                                       \
				*imin = i;                                    \
			}                                                     \
			if (v > mx) {                                         \
				mx = v;                                       \
				*imax = i;                                    \
			}                                                     \
		}                                                             \
	}

DEF_DOMAIN(domain_i8, int8_t)
DEF_DOMAIN(domain_u8, uint8_t)
DEF_DOMAIN(domain_i16, int16_t)
DEF_DOMAIN(domain_u16, uint16_t)
DEF_DOMAIN(domain_i32, int32_t)
DEF_DOMAIN(domain_u32, uint32_t)
DEF_DOMAIN(domain_i64, int64_t)
DEF_DOMAIN(domain_u64, uint64_t)
DEF_DOMAIN(domain_f32, float)
DEF_DOMAIN(domain_f64, double)

static bool fast_domain(const struct tfs_dim *dm, const uint8_t *p, uint64_t n,
			uint64_t *bad, uint64_t *imin, uint64_t *imax)
{
	uint8_t t = dm->type;
	const uint8_t *lo = dm->domain[0], *hi = dm->domain[1];

	if (n == 0 || !dm->has_domain)
		return false;
	if (tfs_datatype_is_datetime(t))
		t = TFS_INT64;
	switch (t) {
	case TFS_INT8: domain_i8(p, n, lo, hi, bad, imin, imax); break;
	case TFS_UINT8: domain_u8(p, n, lo, hi, bad, imin, imax); break;
	case TFS_INT16: domain_i16(p, n, lo, hi, bad, imin, imax); break;
	case TFS_UINT16: domain_u16(p, n, lo, hi, bad, imin, imax); break;
	case TFS_INT32: domain_i32(p, n, lo, hi, bad, imin, imax); break;
	case TFS_UINT32: domain_u32(p, n, lo, hi, bad, imin, imax); break;
	case TFS_INT64: domain_i64(p, n, lo, hi, bad, imin, imax); break;
	case TFS_UINT64: domain_u64(p, n, lo, hi, bad, imin, imax); break;
	case TFS_FLOAT32: domain_f32(p, n, lo, hi, bad, imin, imax); break;
	case TFS_FLOAT64: domain_f64(p, n, lo, hi, bad, imin, imax); break;
	default:
		return false;
	}
	return true;
}

static uint64_t cell_tag(const struct tfs_writer *w, const uint64_t *tags,
			 uint64_t i)
{
	return tags ? tags[i] : w->appended + i + 1;
}

/* Checks the var values and validity of one column and appends it. */
/* A missing nullable attribute: null cells of zeros (one zero element
 * when var-size). */
static enum tfs_err append_null_cells(struct tfs__col *dst,
				      const struct tfs__field *fd, uint64_t n,
				      struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (uint64_t i = 0; i < n && !e; i++) {
		if (fd->var) {
			e = tfs_buf_append_u64(&dst->offs, dst->data.len);
			if (!e)
				e = tfs_buf_resize(&dst->data,
						   dst->data.len + fd->cell_size);
		} else {
			e = tfs_buf_resize(&dst->data,
					   dst->data.len + fd->cell_size);
		}
		if (!e)
			e = tfs_buf_append_u8(&dst->valid, 0);
	}
	return e ? tfs_fail(d, e, "out of memory") : TFS_E_OK;
}

/* The values of n cells: var-size ones with their offsets checked and
 * moved to follow what dst holds, fixed-size ones as they are. */
static enum tfs_err append_values(struct tfs_writer *w, struct tfs__col *dst,
				  const struct tfs__field *fd,
				  const struct tfs_column *col, uint64_t n,
				  const uint64_t *tags, struct tfs_diag *d)
{
	enum tfs_err e;

	if (!fd->var) {
		if (n && (e = tfs_buf_append(&dst->data, col->data,
					     n * fd->cell_size)))
			return tfs_fail(d, e, "out of memory");
		return TFS_E_OK;
	}
	uint64_t es = fd->cell_size;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t lo = col->offsets[i], hi = col->offsets[i + 1];

		if (hi < lo || hi > col->data_len)
			return tfs_fail(d, TFS_E_INVALID,
					"%s %" PRIu64 ": field '%s': bad "
					"offsets",
					tag_word(w), cell_tag(w, tags, i),
					fd->name);
		if ((hi - lo) % es)
			return tfs_fail(d, TFS_E_INVALID,
					"%s %" PRIu64 ": field '%s': %" PRIu64
					" bytes is no whole number of "
					"values",
					tag_word(w), cell_tag(w, tags, i),
					fd->name, hi - lo);
		if ((e = tfs_buf_append_u64(&dst->offs,
					    dst->data.len + lo -
						    col->offsets[0])))
			return tfs_fail(d, e, "out of memory");
	}
	if (n && (e = tfs_buf_append(&dst->data,
				     col->data + col->offsets[0],
				     col->offsets[n] - col->offsets[0])))
		return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}

/* The validity of n cells: as given (all valid when not given) for a
 * nullable field; a field that is not nullable refuses a null. */
static enum tfs_err append_validity(struct tfs_writer *w, struct tfs__col *dst,
				    const struct tfs__field *fd,
				    const struct tfs_column *col, uint64_t n,
				    const uint64_t *tags, struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	if (fd->nullable) {
		if (col->validity)
			e = tfs_buf_append(&dst->valid, col->validity, n);
		else
			for (uint64_t i = 0; i < n && !e; i++)
				e = tfs_buf_append_u8(&dst->valid, 1);
		if (e)
			return tfs_fail(d, e, "out of memory");
	} else if (col->validity) {
		for (uint64_t i = 0; i < n; i++)
			if (!col->validity[i])
				return tfs_fail(d, TFS_E_INVALID,
						"%s %" PRIu64 ": field '%s' is not "
						"nullable",
						tag_word(w), cell_tag(w, tags, i),
						fd->name);
	}
	return TFS_E_OK;
}

static enum tfs_err append_column(struct tfs_writer *w, uint32_t f,
				  const struct tfs_batch *b,
				  const uint64_t *tags, struct tfs_diag *d)
{
	struct tfs__cells *cells = w->stream ? &w->scratch
					    : tfs__sorter_cells(w->sorter);
	struct tfs__col *dst = &cells->cols[f];
	const struct tfs__field *fd = &w->fields[f];
	uint64_t n = b->cell_num;
	enum tfs_err e;

	if (w->colmap[f] < 0)
		return append_null_cells(dst, fd, n, d);
	const struct tfs_column *col = &b->columns[w->colmap[f]];

	if ((e = append_values(w, dst, fd, col, n, tags, d)) ||
	    (e = append_validity(w, dst, fd, col, n, tags, d)))
		return e;
	return TFS_E_OK;
}

static void rollback(struct tfs__cells *c, const size_t *lens, uint64_t cells)
{
	size_t k = 0;

	for (uint32_t f = 0; f < c->field_num; f++) {
		c->cols[f].data.len = lens[k++];
		c->cols[f].offs.len = lens[k++];
		c->cols[f].valid.len = lens[k++];
	}
	c->keys.len = lens[k++];
	c->tags.len = lens[k++];
	c->cell_num = cells;
}

/* Writes every row of tiles whose cells are all in. */
static enum tfs_err stream_rows(struct tfs_writer *w, struct tfs_diag *d)
{
	uint64_t ext0 =
		tfs_value_as_u64(w->s->dims[0].type, w->s->dims[0].extent);
	enum tfs_err e;

	for (;;) {
		uint64_t row = w->boxlo[0] + w->rows_done, end, nrows;

		if (row > w->boxhi[0])
			return TFS_E_OK;
		end = (row / ext0 + 1) * ext0 - 1;
		if (end > w->boxhi[0])
			end = w->boxhi[0];
		nrows = end - row + 1;
		if (w->scratch.cell_num < nrows * w->row_cells)
			return TFS_E_OK;
		if ((e = tfs__box_emit(w->tw, &w->scratch, w->s, w->boxlo,
				       w->boxhi, row, nrows, d)))
			return e;
		tfs__cells_drop_front(&w->scratch, w->fields,
				      nrows * w->row_cells);
		w->rows_done += nrows;
	}
}

/* The staged cells from i on that take consecutive places of one tile:
 * the rest of their row along the last dimension (which stays inside one
 * tile in a streamed box), and for one dimension up to its tile's end. */
static uint64_t stream_run(const struct tfs_writer *w, uint64_t i)
{
	uint32_t k = w->D - 1;
	const struct tfs_dim *dm = &w->s->dims[k];
	uint64_t off = tfs__dim_off(dm, w->scratch.cols[k].data.data +
						i * w->fields[k].cell_size);
	uint64_t end = w->boxhi[k], n;

	if (k == 0) {
		uint64_t ext = tfs_value_as_u64(dm->type, dm->extent);
		uint64_t tile_end = ext ? (off / ext + 1) * ext - 1 : off;

		if (tile_end < end)
			end = tile_end;
	}
	n = end >= off ? end - off + 1 : 1;
	return n < w->scratch.cell_num - i ? n : w->scratch.cell_num - i;
}

/* Hands the staged cells of a streaming write to the tile writer, a run
 * of consecutive places at a time. */
static enum tfs_err stream_cells(struct tfs_writer *w, struct tfs_diag *d)
{
	enum tfs_err e;

	if (w->tilerow)
		return stream_rows(w, d);
	for (uint64_t i = 0, n; i < w->scratch.cell_num; i += n) {
		n = stream_run(w, i);
		if ((e = tfs__tw_add_run(w->tw, &w->scratch, i, n, d)))
			return e;
	}
	tfs__cells_clear(&w->scratch);
	return TFS_E_OK;
}

/* Saves the lengths of every buffer of cells, for rollback(). */
static void save_lens(const struct tfs__cells *cells, size_t *lp)
{
	size_t k = 0;

	for (uint32_t f = 0; f < cells->field_num; f++) {
		lp[k++] = cells->cols[f].data.len;
		lp[k++] = cells->cols[f].offs.len;
		lp[k++] = cells->cols[f].valid.len;
	}
	lp[k++] = cells->keys.len;
	lp[k++] = cells->tags.len;
}

/* A box write's coordinates along dimension k of its next n cells,
 * row-major over the box. */
static enum tfs_err fill_box_dim(struct tfs_writer *w, uint32_t k,
				 struct tfs__col *dst, uint64_t n,
				 struct tfs_diag *d)
{
	const struct tfs_dim *dm = &w->s->dims[k];
	size_t sz = (size_t)w->fields[k].cell_size;
	enum tfs_err e;

	if ((e = tfs_buf_reserve(&dst->data, n * sz)))
		return tfs_fail(d, e, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		/* Row-major over the box: index along k. */
		uint64_t c = w->appended + i, idx = 0;

		for (uint32_t m = w->D; m-- > 0;) {
			uint64_t ext = w->boxhi[m] - w->boxlo[m] + 1;

			if (m == k)
				idx = c % ext;
			c /= ext;
		}
		uint64_t v = tfs_value_as_u64(dm->type, dm->domain[0]) +
			     w->boxlo[k] + idx;
		if (tfs_datatype_class(dm->type) == TFS_CLASS_SIGNED)
			v = (uint64_t)tfs_value_as_i64(dm->type,
						       dm->domain[0]) +
			    w->boxlo[k] + idx;
		tfs_put_uint(dst->data.data + dst->data.len, sz, v);
		dst->data.len += sz;
	}
	return TFS_E_OK;
}

/* Dense arrays: widens the bounding box of dimension k to take the
 * values vlo (offset olo) and vhi (offset ohi), each sz bytes; the first
 * cell of the write sets it. */
static void widen_box(struct tfs_writer *w, uint32_t k, bool first,
		      uint64_t olo, const uint8_t *vlo, uint64_t ohi,
		      const uint8_t *vhi, size_t sz)
{
	if (first || olo < w->boxlo[k]) {
		w->boxlo[k] = olo;
		memcpy(w->boxbytes[0][k], vlo, sz);
	}
	if (first || ohi > w->boxhi[k]) {
		w->boxhi[k] = ohi;
		memcpy(w->boxbytes[1][k], vhi, sz);
	}
}

/* After fast_domain(): the full check of the first bad cell (which
 * fails with its message), else the box widened to the extremes. */
static enum tfs_err after_fast_domain(struct tfs_writer *w, uint32_t k,
				      const uint8_t *data, uint64_t n,
				      uint64_t first_bad, uint64_t imin,
				      uint64_t imax, const uint64_t *tags,
				      struct tfs_diag *d)
{
	const struct tfs__field *fd = &w->fields[k];
	enum tfs_err e;

	if (first_bad < n) {
		e = tfs__writer_check_value(w, k,
					    data + first_bad * fd->cell_size,
					    fd->cell_size, NULL,
					    cell_tag(w, tags, first_bad), d);
		if (!e)
			e = tfs_fail(d, TFS_E_INTERNAL,
				     "domain check disagrees");
		return e;
	}
	if (w->s->array_type == TFS_DENSE) {
		const uint8_t *vmin = data + imin * fd->cell_size;
		const uint8_t *vmax = data + imax * fd->cell_size;
		const struct tfs_dim *dm = &w->s->dims[k];

		widen_box(w, k, w->appended == 0, tfs__dim_off(dm, vmin), vmin,
			  tfs__dim_off(dm, vmax), vmax, (size_t)fd->cell_size);
	}
	return TFS_E_OK;
}

/* Checks dimension k of the n cells from base one by one (and widens a
 * dense array's box). */
static enum tfs_err check_dim_cells(struct tfs_writer *w, uint32_t k,
				    const struct tfs__cells *cells,
				    uint64_t base, uint64_t n,
				    const uint64_t *tags, struct tfs_diag *d)
{
	const struct tfs__field *fd = &w->fields[k];
	const struct tfs__col *dst = &cells->cols[k];
	enum tfs_err e;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t len = fd->cell_size;
		const uint8_t *v;

		if (fd->var) {
			v = tfs__var_cell(cells, k, base + i, &len);
			/* The last cell's end is the data end only
			 * once every cell is in; compute it here. */
			len = (i + 1 < n ? tfs_get_u64(dst->offs.data +
						       (base + i + 1) * 8)
					 : dst->data.len) -
			      tfs_get_u64(dst->offs.data + (base + i) * 8);
		} else {
			v = dst->data.data + (base + i) * fd->cell_size;
		}
		if ((e = tfs__writer_check_value(w, k, v, len, NULL,
						 cell_tag(w, tags, i), d)))
			return e;
		if (w->s->array_type == TFS_DENSE) {
			uint64_t off = tfs__dim_off(&w->s->dims[k], v);

			widen_box(w, k, w->appended == 0 && i == 0, off, v, off,
				  v, (size_t)len);
		}
	}
	return TFS_E_OK;
}

/* Dimension k of the batch's n cells, staged from base: computed for a
 * box write, else copied and checked. */
static enum tfs_err append_dim(struct tfs_writer *w, uint32_t k,
			       const struct tfs_batch *b, const uint64_t *tags,
			       struct tfs__cells *cells, uint64_t base,
			       uint64_t n, struct tfs_diag *d)
{
	const struct tfs__field *fd = &w->fields[k];
	struct tfs__col *dst = &cells->cols[k];
	uint64_t first_bad, imin, imax;
	enum tfs_err e;

	if (w->layout == TFS_WRITE_DENSE_BOX)
		return fill_box_dim(w, k, dst, n, d);
	if ((e = append_column(w, k, b, tags, d)))
		return e;
	/* Fixed-size dimensions without a current domain: one typed
	 * pass finds the first cell outside the domain (or NaN) and
	 * the extremes; only a bad cell gets the full check. */
	if (!fd->var && !w->s->has_current_domain &&
	    fast_domain(&w->s->dims[k], dst->data.data + base * fd->cell_size,
			n, &first_bad, &imin, &imax))
		return after_fast_domain(w, k,
					 dst->data.data + base * fd->cell_size,
					 n, first_bad, imin, imax, tags, d);
	return check_dim_cells(w, k, cells, base, n, tags, d);
}

/* Each cell's tag, and its sort key when the order is keyed. */
static enum tfs_err append_tags_keys(struct tfs_writer *w,
				     struct tfs__cells *cells, uint64_t base,
				     uint64_t n, const uint64_t *tags,
				     struct tfs_diag *d)
{
	enum tfs_err e;

	for (uint64_t i = 0; i < n; i++)
		if ((e = tfs_buf_append_u64(&cells->tags,
					    cell_tag(w, tags, i))))
			return tfs_fail(d, e, "out of memory");
	cells->cell_num += n;
	if (w->order.keyed && !w->stream) {
		for (uint64_t i = 0; i < n; i++)
			if ((e = tfs_buf_append_u64(&cells->keys,
						    tfs__order_key(&w->order,
								   cells,
								   base + i))))
				return tfs_fail(d, e, "out of memory");
	}
	return TFS_E_OK;
}

enum tfs_err tfs_writer_append(struct tfs_writer *w, const struct tfs_batch *b,
			       const uint64_t *tags, struct tfs_diag *d)
{
	struct tfs__cells *cells;
	uint64_t n, base;
	enum tfs_err e;

	if (!w || !b)
		return tfs_fail(d, TFS_E_INVALID, "writer: no batch");
	if (w->failed || w->committed)
		return tfs_fail(d, TFS_E_INVALID,
				"writer: append after a failure or commit");
	n = b->cell_num;
	if (n == 0)
		return TFS_E_OK;
	if ((e = map_columns(w, b, d)))
		goto out_fail;
	if (w->layout == TFS_WRITE_DENSE_BOX && n > w->box_cells - w->appended) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "box of %" PRIu64 " cells: more cells given",
			     w->box_cells);
		goto out_fail;
	}
	cells = w->stream ? &w->scratch : tfs__sorter_cells(w->sorter);
	base = cells->cell_num;
	/* Remember lengths, so that a refused batch leaves nothing behind. */
	size_t lens[3 * 256 + 2], *lp = lens;
	size_t *heap_lens = NULL;

	if (3 * (size_t)cells->field_num + 2 > sizeof(lens) / sizeof(*lens)) {
		heap_lens = tfs_mallocn(3 * (size_t)cells->field_num + 2,
					sizeof(size_t));
		if (!heap_lens) {
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			goto out_fail;
		}
		lp = heap_lens;
	}
	save_lens(cells, lp);
	/* Dimensions: checked per cell; a box write computes them. */
	for (uint32_t k = 0; k < w->D; k++)
		if ((e = append_dim(w, k, b, tags, cells, base, n, d)))
			goto out_rollback;
	for (uint32_t f = w->D; f < w->field_num; f++)
		if ((e = append_column(w, f, b, tags, d)))
			goto out_rollback;
	if ((e = append_tags_keys(w, cells, base, n, tags, d)))
		goto out_rollback;
	tfs_free(heap_lens);
	w->appended += n;
	if (w->stream)
		e = stream_cells(w, d);
	else
		e = tfs__sorter_added(w->sorter, d);
	if (e)
		goto out_fail;
	return TFS_E_OK;

out_rollback:
	rollback(cells, lp, base);
	tfs_free(heap_lens);
out_fail:
	w->failed = true;
	return e;
}
