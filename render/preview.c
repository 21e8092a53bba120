/* preview.png (png.h): a picture of a whole array at most 256 × 256, at a
 * cost bounded whatever the array's size. The non-empty domain is cut
 * into bins of whole cells along the two dimensions shown; each pixel is
 * the mean of its bin. Small arrays are decoded cell by cell; larger ones
 * take each tile's sum and count from the fragment metadata, spread over
 * the bins the tile's box covers, so no tile is decoded. */
#include "png_picture.h"

#include <math.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_render.h"

static bool numeric_attr(const struct tfs_field_info *f)
{
	return !f->is_dim && !f->var && f->cell_val_num == 1 &&
	       tfs_datatype_class(f->type) <= TFS_CLASS_FLOAT;
}

bool tfsr_preview_plan(const struct tfs_schema *s, const struct tfs_range *ned,
		       int field, int *attr, uint32_t *ky, uint32_t *kx)
{
	uint32_t nd = tfs_schema_dim_count(s), n = 0, axes[2];
	struct tfs_field_info f;

	if (!ned)
		return false;
	*attr = -1;
	if (field >= 0) {
		tfs_schema_field(s, field, &f);
		if (numeric_attr(&f))
			*attr = field;
	} else {
		for (uint32_t i = nd;
		     *attr < 0 && i < tfs_schema_field_count(s); i++) {
			tfs_schema_field(s, (int)i, &f);
			if (numeric_attr(&f))
				*attr = (int)i;
		}
	}
	if (*attr < 0)
		return false;
	for (uint32_t k = 0; k < nd && n < 2; k++) {
		uint8_t type = tfs_schema_dim_type(s, k);
		int64_t lo, hi;

		if (!tfsr_coord_i64(type, ned[k].lo, &lo) ||
		    !tfsr_coord_i64(type, ned[k].hi, &hi))
			continue;
		if (hi > lo)
			axes[n++] = k;
	}
	if (n == 0)
		return false;
	*ky = n == 2 ? axes[0] : TFSR_PREVIEW_STRIP;
	*kx = axes[n - 1];
	return true;
}

/* Bins: sums and weights per pixel. */
struct bins {
	uint32_t ky, kx; /* the dimensions shown: rows, columns */
	uint32_t w, h;
	uint64_t by, bx;  /* cells per bin */
	int64_t ylo, xlo; /* the domain's first coordinates */
	int64_t yhi, xhi;
	double *sum, *weight;
};

static void bins_release(struct bins *b)
{
	tfs_free(b->sum);
	tfs_free(b->weight);
}

static enum tfs_err bins_init(struct bins *b, int64_t ylo, int64_t yhi,
			      int64_t xlo, int64_t xhi, struct tfs_diag *d)
{
	uint64_t ny = (uint64_t)(yhi - ylo) + 1, nx = (uint64_t)(xhi - xlo) + 1;

	memset(b, 0, sizeof(*b));
	b->ylo = ylo;
	b->yhi = yhi;
	b->xlo = xlo;
	b->xhi = xhi;
	b->by = (ny + TFSR_PREVIEW_MAX - 1) / TFSR_PREVIEW_MAX;
	b->bx = (nx + TFSR_PREVIEW_MAX - 1) / TFSR_PREVIEW_MAX;
	/* Square bins keep the array's proportions. */
	if (b->bx > b->by)
		b->by = b->bx;
	else
		b->bx = b->by;
	b->h = (uint32_t)((ny + b->by - 1) / b->by);
	b->w = (uint32_t)((nx + b->bx - 1) / b->bx);
	b->sum = tfs_callocn((size_t)b->w * b->h, sizeof(double));
	b->weight = tfs_callocn((size_t)b->w * b->h, sizeof(double));
	if (!b->sum || !b->weight) {
		bins_release(b);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	return TFS_E_OK;
}

/* The visible dense fragments' domains, to tell written cells from the
 * fill value of cells never written. */
struct written {
	uint32_t nd;
	size_t n;
	int64_t *box; /* n × nd × (lo, hi) */
};

static enum tfs_err written_init(struct written *w, struct tfs_array *a,
				 struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	size_t fn = tfs_array_fragment_count(a);

	w->nd = tfs_schema_dim_count(s);
	w->n = 0;
	w->box = tfs_callocn(fn ? fn * w->nd * 2 : 1, sizeof(int64_t));
	if (!w->box)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < fn; i++) {
		struct tfs_fragment_info f;
		int64_t *b = w->box + w->n * w->nd * 2;
		bool ok = true;

		tfs_array_fragment(a, i, &f);
		if (!f.visible || !f.non_empty_domain)
			continue;
		for (uint32_t k = 0; ok && k < w->nd; k++) {
			uint8_t type = tfs_schema_dim_type(s, k);

			ok = tfsr_coord_i64(type, f.non_empty_domain[k].lo,
					    &b[2 * k]) &&
			     tfsr_coord_i64(type, f.non_empty_domain[k].hi,
					    &b[2 * k + 1]);
		}
		if (ok)
			w->n++;
	}
	return TFS_E_OK;
}

static bool written_has(const struct written *w, const int64_t *c)
{
	for (size_t i = 0; i < w->n; i++) {
		const int64_t *b = w->box + i * w->nd * 2;
		bool in = true;

		for (uint32_t k = 0; in && k < w->nd; k++)
			in = b[2 * k] <= c[k] && c[k] <= b[2 * k + 1];
		if (in)
			return true;
	}
	return false;
}

/* Adds weight cells of mean value v over the bins of the box
 * [y0, y1] × [x0, x1] (inside the domain), each its share. */
static void bins_add_box(struct bins *bn, int64_t y0, int64_t y1, int64_t x0,
			 int64_t x1, double v, double weight)
{
	double area = (double)(y1 - y0 + 1) * (double)(x1 - x0 + 1);
	uint64_t by0 = (uint64_t)(y0 - bn->ylo) / bn->by;
	uint64_t by1 = (uint64_t)(y1 - bn->ylo) / bn->by;
	uint64_t bx0 = (uint64_t)(x0 - bn->xlo) / bn->bx;
	uint64_t bx1 = (uint64_t)(x1 - bn->xlo) / bn->bx;

	for (uint64_t by = by0; by <= by1 && by < bn->h; by++) {
		int64_t lo = bn->ylo + (int64_t)(by * bn->by);
		int64_t hi = lo + (int64_t)bn->by - 1;
		double oy =
			(double)((hi < y1 ? hi : y1) - (lo > y0 ? lo : y0) + 1);

		for (uint64_t bx = bx0; bx <= bx1 && bx < bn->w; bx++) {
			int64_t xl = bn->xlo + (int64_t)(bx * bn->bx);
			int64_t xh = xl + (int64_t)bn->bx - 1;
			double ox = (double)((xh < x1 ? xh : x1) -
					     (xl > x0 ? xl : x0) + 1);
			double share = weight * oy * ox / area;

			bn->sum[by * bn->w + bx] += v * share;
			bn->weight[by * bn->w + bx] += share;
		}
	}
}

/* Small arrays: every cell into its bin. */
static enum tfs_err bins_decode(struct bins *bn, struct tfs_array *a,
				const char *attr, struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	uint32_t nd = tfs_schema_dim_count(s);
	const char *names[TFSR_MAX_DIMS + 1];
	struct tfs_query_opts qo = {.fields = names, .field_num = nd + 1};
	struct tfs_query *q = NULL;
	struct written w = {0};
	bool dense = tfs_schema_is_dense(s);
	enum tfs_err e = TFS_E_OK;

	struct tfs_field_info f;
	double fill = 0;
	bool skip_fill;

	tfs_schema_field(s, tfs_schema_field_index(s, attr), &f);
	skip_fill = tfsr_default_fill(&f, &fill) && !isnan(fill);
	for (uint32_t k = 0; k < nd; k++)
		names[k] = tfs_schema_dim_name(s, k);
	names[nd] = attr;
	if (dense)
		e = written_init(&w, a, d);
	if (!e)
		e = tfs_query_open(a, &qo, &q, d);
	while (!e) {
		const struct tfs_batch *b;

		e = tfs_query_next(q, &b, d);
		if (e || !b)
			break;
		for (uint64_t i = 0; i < b->cell_num; i++) {
			int64_t c[TFSR_MAX_DIMS];
			bool ok = true;
			double v;
			uint64_t px;

			for (uint32_t k = 0; ok && k < nd; k++) {
				const struct tfs_column *col = &b->columns[k];

				ok = tfsr_coord_i64(
					col->type,
					col->data + i * tfs_datatype_size(
								col->type),
					&c[k]);
			}
			int64_t cy;

			if (!ok)
				continue;
			cy = bn->ky == TFSR_PREVIEW_STRIP ? 0 : c[bn->ky];
			if (cy < bn->ylo || cy > bn->yhi ||
			    c[bn->kx] < bn->xlo || c[bn->kx] > bn->xhi ||
			    (dense && !written_has(&w, c)))
				continue;
			v = tfsr_cell_number(&b->columns[nd], i);
			if (!isfinite(v) || (skip_fill && v == fill))
				continue;
			px = (uint64_t)(cy - bn->ylo) / bn->by * bn->w +
			     (uint64_t)(c[bn->kx] - bn->xlo) / bn->bx;
			bn->sum[px] += v;
			bn->weight[px] += 1;
		}
	}
	tfs_query_close(q);
	tfs_free(w.box);
	return e;
}

/* Large arrays: each tile's mean over the bins its box covers; false in
 * *complete when a tile with values has no sum (fragments before v11). */
static enum tfs_err bins_tiles(struct bins *bn, struct tfs_array *a,
			       const char *attr, bool *complete,
			       struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	struct tfs_field_info f;
	struct tfs_tile_stats ts;
	double fill = 0;
	bool skip_fill;
	enum tfs_err e;

	tfs_schema_field(s, tfs_schema_field_index(s, attr), &f);
	skip_fill = tfsr_default_fill(&f, &fill) && !isnan(fill);
	*complete = true;
	e = tfs_array_tile_stats(a, attr, &ts, d);
	if (e)
		return e;
	for (size_t i = 0; i < ts.num; i++) {
		const struct tfs_tile_stat *t = &ts.tiles[i];
		uint64_t valid = t->cells - t->nulls;
		bool strip = bn->ky == TFSR_PREVIEW_STRIP;
		int64_t y0 = strip ? 0 : t->lo[bn->ky];
		int64_t y1 = strip ? 0 : t->hi[bn->ky];
		int64_t x0 = t->lo[bn->kx], x1 = t->hi[bn->kx];

		if (!valid)
			continue;
		if (!t->has_sum) {
			*complete = false;
			break;
		}
		/* Fill values counted in (padding of a consolidated dense
		 * fragment): the sum says nothing of the cells. */
		if (skip_fill && t->has_minmax &&
		    (t->min == fill || t->max == fill))
			continue;
		if (y0 < bn->ylo)
			y0 = bn->ylo;
		if (y1 > bn->yhi)
			y1 = bn->yhi;
		if (x0 < bn->xlo)
			x0 = bn->xlo;
		if (x1 > bn->xhi)
			x1 = bn->xhi;
		if (y0 > y1 || x0 > x1)
			continue;
		bins_add_box(bn, y0, y1, x0, x1, t->sum / (double)valid,
			     (double)valid);
	}
	tfs_tile_stats_release(&ts);
	return TFS_E_OK;
}

/* Cells of the array: the dense domain's, or the fragments' counts. */
static uint64_t array_cells(struct tfs_array *a, const struct tfs_range *ned)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	uint64_t cells = 1;

	if (!tfs_schema_is_dense(s)) {
		cells = 0;
		for (size_t i = 0; i < tfs_array_fragment_count(a); i++) {
			struct tfs_fragment_info f;

			tfs_array_fragment(a, i, &f);
			if (f.visible &&
			    __builtin_add_overflow(cells, f.cell_num, &cells))
				return UINT64_MAX;
		}
		return cells;
	}
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		uint8_t type = tfs_schema_dim_type(s, k);
		int64_t lo, hi;

		if (!tfsr_coord_i64(type, ned[k].lo, &lo) ||
		    !tfsr_coord_i64(type, ned[k].hi, &hi) ||
		    __builtin_mul_overflow(cells, (uint64_t)(hi - lo) + 1,
					   &cells))
			return UINT64_MAX;
	}
	return cells;
}

/* The bins of the preview over the array's non-empty domain ned (rows
 * by dimension ky, or a strip, columns by kx). */
static enum tfs_err preview_bins(const struct tfs_schema *s,
				 const struct tfs_range *ned, uint32_t ky,
				 uint32_t kx, struct bins *bn,
				 struct tfs_diag *d)
{
	int64_t ylo = 0, yhi = 0, xlo, xhi;
	enum tfs_err e;

	if (ky != TFSR_PREVIEW_STRIP) {
		(void)tfsr_coord_i64(tfs_schema_dim_type(s, ky), ned[ky].lo,
				     &ylo);
		(void)tfsr_coord_i64(tfs_schema_dim_type(s, ky), ned[ky].hi,
				     &yhi);
	}
	(void)tfsr_coord_i64(tfs_schema_dim_type(s, kx), ned[kx].lo, &xlo);
	(void)tfsr_coord_i64(tfs_schema_dim_type(s, kx), ned[kx].hi, &xhi);
	if ((uint64_t)(yhi - ylo) >= UINT64_MAX / 2 ||
	    (uint64_t)(xhi - xlo) >= UINT64_MAX / 2)
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"no preview: a domain "
				"of 2^63 coordinates");
	e = bins_init(bn, ylo, yhi, xlo, xhi, d);
	if (e)
		return e;
	bn->ky = ky;
	bn->kx = kx;
	return TFS_E_OK;
}

/* The picture of the bins' means, enlarged by a whole factor to at least
 * TFSR_PREVIEW_MIN (a strip: one row of bins, an eighth of its width
 * high), as PNG into out. */
static enum tfs_err preview_draw(const struct bins *bn, struct tfs_buf *out,
				 struct tfs_diag *d)
{
	struct tfsr_picture pic = {.cmap = TFSR_CMAP_VIRIDIS};
	uint32_t scale = 1, yscale;
	enum tfs_err e;

	while ((bn->w > bn->h ? bn->w : bn->h) * (scale + 1) <=
	       TFSR_PREVIEW_MIN)
		scale++;
	pic.w = bn->w * scale;
	pic.h = bn->h * scale;
	yscale = scale;
	if (bn->ky == TFSR_PREVIEW_STRIP) {
		pic.h = pic.w / 8 > 16 ? pic.w / 8 : 16;
		yscale = pic.h;
	}
	pic.v = tfs_mallocn((size_t)pic.w * pic.h, sizeof(double));
	if (!pic.v)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t y = 0; y < pic.h; y++) {
		for (uint32_t x = 0; x < pic.w; x++) {
			size_t b = (size_t)(y / yscale) * bn->w + x / scale;

			pic.v[(size_t)y * pic.w + x] =
				bn->weight[b] > 0 ? bn->sum[b] / bn->weight[b]
						  : NAN;
		}
	}
	e = tfsr_picture_png(&pic, out, d);
	tfs_free(pic.v);
	return e;
}

enum tfs_err tfsr_preview_png(struct tfs_array *a, const struct tfs_range *ned,
			      int field, uint64_t decode_cells,
			      struct tfs_buf *out, bool *decoded,
			      struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	struct tfs_field_info f;
	struct bins bn = {0};
	uint32_t ky, kx;
	bool complete = false;
	int attr;
	enum tfs_err e;

	if (decoded)
		*decoded = false;
	if (!tfsr_preview_plan(s, ned, field, &attr, &ky, &kx))
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"no preview: it needs a numeric attribute and "
				"an integer dimension with cells");
	tfs_schema_field(s, attr, &f);
	e = preview_bins(s, ned, ky, kx, &bn, d);
	if (e)
		return e;
	if (array_cells(a, ned) >
	    (decode_cells ? decode_cells : TFSR_PREVIEW_DECODE_CELLS)) {
		e = bins_tiles(&bn, a, f.name, &complete, d);
		if (e == TFS_E_UNSUPPORTED) {
			tfs_diag_init(d);
			e = TFS_E_OK;
		}
	}
	if (!e && !complete) {
		/* Small, or statistics missing: decode (the cost grows with
		 * the cells only where the fragments have no statistics). */
		memset(bn.sum, 0, (size_t)bn.w * bn.h * sizeof(double));
		memset(bn.weight, 0, (size_t)bn.w * bn.h * sizeof(double));
		e = bins_decode(&bn, a, f.name, d);
		if (!e && decoded)
			*decoded = true;
	}
	if (!e)
		e = preview_draw(&bn, out, d);
	bins_release(&bn);
	return e;
}
