/* Pictures: every PNG rendered here is decoded with libpng and its pixels
 * compared with the cells they show (colour of the value in the range the
 * file states, transparency of nulls, holes and empty sparse cells);
 * random selections of corpus arrays; previews drawn from decoded cells
 * and from tile statistics agree. */
#include <criterion/criterion.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "png_picture.h"
#include "render_fixture.h"
#include "slice.h"
#include "tfs_buf.h"
#include "tfs_render.h"

/* A decoded picture: w × h RGBA pixels. */
struct rgba {
	uint32_t w, h;
	uint8_t *px;
	double lo, hi; /* the range the file states */
	bool has_range;
	char cmap[16];
};

static void decode(const struct tfs_buf *png, struct rgba *out)
{
	png_image im;
	struct tfs_buf range, cmap;

	memset(&im, 0, sizeof(im));
	im.version = PNG_IMAGE_VERSION;
	cr_assert(png_image_begin_read_from_memory(&im, png->data, png->len),
		  "libpng: %s", im.message);
	im.format = PNG_FORMAT_RGBA;
	out->w = im.width;
	out->h = im.height;
	out->px = malloc(PNG_IMAGE_SIZE(im));
	cr_assert(out->px);
	cr_assert(png_image_finish_read(&im, NULL, out->px, 0, NULL),
		  "libpng: %s", im.message);
	tfs_buf_init(&range, TFS_BUF_NO_MAX);
	tfs_buf_init(&cmap, TFS_BUF_NO_MAX);
	cr_assert(tfsr_png_info(png->data, png->len, &range, &cmap));
	cr_assert_eq(tfs_buf_append_u8(&range, 0), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u8(&cmap, 0), TFS_E_OK);
	out->has_range = sscanf((const char *)range.data, "%lf %lf", &out->lo,
				&out->hi) == 2;
	snprintf(out->cmap, sizeof(out->cmap), "%s", (const char *)cmap.data);
	tfs_buf_release(&range);
	tfs_buf_release(&cmap);
}

/* The pixel a value shows in a picture of range [lo, hi] (the test's own
 * arithmetic; the colormap's table is the published one). */
static void expect_pixel(const struct rgba *im, uint32_t y, uint32_t x,
			 double v)
{
	const uint8_t *p = im->px + 4 * ((size_t)y * im->w + x);
	enum tfsr_cmap c = strcmp(im->cmap, "gray") == 0 ? TFSR_CMAP_GRAY
							 : TFSR_CMAP_VIRIDIS;
	uint8_t rgb[3];
	double t;
	long level;

	if (isnan(v)) {
		cr_expect_eq(p[3], 0, "(%u, %u): alpha %u for no value", y, x,
			     p[3]);
		return;
	}
	cr_assert(im->has_range);
	cr_expect(v >= im->lo && v <= im->hi, "(%u, %u): %g outside %g..%g", y,
		  x, v, im->lo, im->hi);
	t = im->hi > im->lo ? (v - im->lo) / (im->hi - im->lo) : 0;
	level = lround(t * 255);
	tfsr_cmap_rgb(c, (uint8_t)level, rgb);
	cr_expect(p[3] == 255 && p[0] == rgb[0] && p[1] == rgb[1] &&
			  p[2] == rgb[2],
		  "(%u, %u): value %g level %ld: got %u,%u,%u,%u want %u,%u,%u",
		  y, x, v, level, p[0], p[1], p[2], p[3], rgb[0], rgb[1],
		  rgb[2]);
}

/* Renders slice SEL of field of the open array in format fmt. */
static enum tfs_err render(const char *field, enum tfsr_format fmt,
			   const char *sel, struct tfs_buf *out,
			   struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(arr);
	struct tfs_range ned[TFSR_MAX_DIMS];
	struct tfsr_slice_opts o = {.fmt = fmt,
				    .sel = sel,
				    .sel_len = strlen(sel)};
	struct tfsr_slice *sl;
	struct tfsr_stream st;
	enum tfs_err e;

	o.field = tfs_schema_field_index(s, field);
	cr_assert_geq(o.field, 0, "no field '%s'", field);
	if (tfs_array_non_empty_domain(arr, ned))
		o.ned = ned;
	tfs_diag_init(d);
	e = tfsr_slice_open(arr, &o, &sl, d);
	if (e)
		return e;
	tfsr_stream_init(&st, sl, arr);
	while (!e && !st.done)
		e = tfsr_stream_step(&st, d);
	if (!e)
		e = tfs_buf_append(out, st.out.data, st.out.len);
	tfsr_stream_release(&st);
	tfsr_slice_free(sl);
	return e;
}

/* The value of field at 2-D integer coordinates (y, x) of the open
 * array, NaN when null or no cell; *found: a cell is there. */
static double cell_at(const char *field, int64_t y, int64_t x, bool *found)
{
	const struct tfs_schema *s = tfs_array_schema(arr);
	uint8_t lo[2][8], type0 = tfs_schema_dim_type(s, 0),
			  type1 = tfs_schema_dim_type(s, 1);
	size_t w0 = tfs_datatype_size(type0), w1 = tfs_datatype_size(type1);
	struct tfs_range sub[2] = {{lo[0], lo[0], w0, w0},
				   {lo[1], lo[1], w1, w1}};
	const char *names[1] = {field};
	struct tfs_query_opts qo = {.subarray = sub,
				    .fields = names,
				    .field_num = 1};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	double v = NAN;

	memcpy(lo[0], &y, w0); /* little-endian: the low bytes */
	memcpy(lo[1], &x, w1);
	tfs_diag_init(&d);
	*found = false;
	cr_assert_eq(tfs_query_open(arr, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	if (b && b->cell_num) {
		const struct tfs_column *c = &b->columns[0];
		const uint8_t *p = c->data;

		*found = true;
		if (!(c->nullable && c->validity && !c->validity[0])) {
			switch (tfs_datatype_class(c->type)) {
			case TFS_CLASS_FLOAT:
				v = tfs_value_as_f64(c->type, p);
				break;
			case TFS_CLASS_SIGNED:
				v = (double)tfs_value_as_i64(c->type, p);
				break;
			default:
				v = (double)tfs_value_as_u64(c->type, p);
				break;
			}
		}
	}
	tfs_query_close(q);
	return v;
}

Test(png, dense_slice_is_the_cells, .fini = close_array)
{
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;

	open_array("dense_2d_rowmajor");
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	cr_assert_eq(render("a", TFSR_FMT_PNG, "", &png, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	decode(&png, &im);
	/* a = 100 r + c over r 1..10, c 1..12: 10 rows of 12 pixels. */
	cr_assert_eq(im.h, 10);
	cr_assert_eq(im.w, 12);
	cr_assert_str_eq(im.cmap, "viridis");
	cr_assert(im.has_range);
	cr_expect_eq(im.lo, 101);
	cr_expect_eq(im.hi, 1012);
	for (uint32_t y = 0; y < im.h; y++)
		for (uint32_t x = 0; x < im.w; x++)
			expect_pixel(&im, y, x, 100.0 * (y + 1) + (x + 1));
	/* The published ends of viridis. */
	cr_expect(im.px[0] == 68 && im.px[1] == 1 && im.px[2] == 84);
	cr_expect(im.px[4 * 119] == 253 && im.px[4 * 119 + 1] == 231 &&
		  im.px[4 * 119 + 2] == 37);
	free(im.px);
	tfs_buf_release(&png);
}

Test(png, gray_and_strides, .fini = close_array)
{
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;

	open_array("dense_2d_rowmajor");
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	cr_assert_eq(render("a", TFSR_FMT_GRAY_PNG, "2:11:2,1:13:5", &png, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	decode(&png, &im);
	cr_assert_eq(im.h, 5); /* r 2, 4, 6, 8, 10 */
	cr_assert_eq(im.w, 3); /* c 1, 6, 11 */
	cr_assert_str_eq(im.cmap, "gray");
	for (uint32_t y = 0; y < im.h; y++) {
		for (uint32_t x = 0; x < im.w; x++) {
			const uint8_t *p = im.px + 4 * (y * im.w + x);

			expect_pixel(&im, y, x,
				     100.0 * (2 + 2 * y) + 1 + 5 * x);
			cr_expect(p[0] == p[1] && p[1] == p[2]);
		}
	}
	free(im.px);
	tfs_buf_release(&png);
}

Test(png, holes_never_written_are_transparent, .fini = close_array)
{
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;
	size_t holes = 0;

	open_array("dense_fragments_overlap");
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	cr_assert_eq(render("a", TFSR_FMT_PNG, "", &png, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	decode(&png, &im);
	cr_assert_eq(im.w, 12);
	cr_assert_eq(im.h, 12);
	for (uint32_t y = 0; y < im.h; y++) {
		for (uint32_t x = 0; x < im.w; x++) {
			bool found;
			double v = cell_at("a", y + 1, x + 1, &found);

			/* The fill value: no fragment wrote the cell. */
			if (v == (double)INT32_MIN) {
				v = NAN;
				holes++;
			}
			expect_pixel(&im, y, x, v);
		}
	}
	cr_expect_gt(holes, 0, "the corpus array has holes");
	free(im.px);
	tfs_buf_release(&png);
}

/* A consolidated dense fragment stores the cells never written, with
 * the default fill value, and counts them in its tiles' minimums: they
 * stay transparent and out of the range. */
Test(png, default_fill_is_never_written, .fini = close_array)
{
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;
	size_t fills = 0;

	open_array("consolidated_vacuumed");
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	cr_assert_eq(render("a", TFSR_FMT_PNG, "", &png, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	decode(&png, &im);
	cr_expect_eq(im.lo, 1000);
	cr_expect_eq(im.hi, 5004);
	for (uint32_t y = 0; y < im.h; y++) {
		for (uint32_t x = 0; x < im.w; x++) {
			bool found;
			double v = cell_at("a", y + 1, x + 1, &found);

			if (v == (double)INT32_MIN) {
				v = NAN;
				fills++;
			}
			expect_pixel(&im, y, x, v);
		}
	}
	cr_expect_gt(fills, 0);
	free(im.px);
	tfs_buf_release(&png);
}

Test(png, nulls_are_transparent, .fini = close_array)
{
	const struct tfs_schema *s;
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;
	size_t nulls = 0;
	int64_t lo0, lo1;
	struct tfs_range ned[2];

	open_array("dense_fill_values");
	s = tfs_array_schema(arr);
	cr_assert(tfs_array_non_empty_domain(arr, ned));
	lo0 = tfs_value_as_i64(tfs_schema_dim_type(s, 0), ned[0].lo);
	lo1 = tfs_value_as_i64(tfs_schema_dim_type(s, 1), ned[1].lo);
	for (uint32_t i = 0; i < tfs_schema_attr_count(s); i++) {
		struct tfs_field_info f;

		tfs_schema_attr(s, i, &f);
		if (!f.nullable || f.var || f.cell_val_num != 1 ||
		    tfs_datatype_class(f.type) > TFS_CLASS_FLOAT)
			continue;
		tfs_buf_init(&png, TFS_BUF_NO_MAX);
		cr_assert_eq(render(f.name, TFSR_FMT_PNG, "", &png, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		decode(&png, &im);
		for (uint32_t y = 0; y < im.h; y++) {
			for (uint32_t x = 0; x < im.w; x++) {
				bool found;
				double v = cell_at(f.name, lo0 + y, lo1 + x,
						   &found);

				nulls += isnan(v);
				expect_pixel(&im, y, x, v);
			}
		}
		free(im.px);
		tfs_buf_release(&png);
	}
	cr_expect_gt(nulls, 0, "a nullable attribute with nulls");
}

Test(png, sparse_on_the_grid_empty_cells_transparent, .fini = close_array)
{
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;
	size_t cells = 0;

	open_array("sparse_2d_int");
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	cr_assert_eq(render("a", TFSR_FMT_PNG, "0:30,10:60", &png, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	decode(&png, &im);
	cr_assert_eq(im.h, 30);
	cr_assert_eq(im.w, 50);
	for (uint32_t y = 0; y < im.h; y++) {
		for (uint32_t x = 0; x < im.w; x++) {
			bool found;
			double v = cell_at("a", y, 10 + x, &found);

			cells += found;
			expect_pixel(&im, y, x, v);
		}
	}
	cr_expect_gt(cells, 3);
	free(im.px);
	tfs_buf_release(&png);
}

Test(png, refusals_say_why, .fini = close_array)
{
	const struct tfs_schema *s;
	struct tfs_buf png;
	struct tfs_diag d;

	open_array("dense_2d_rowmajor");
	s = tfs_array_schema(arr);
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	/* One row: a line, not a picture. */
	cr_expect_eq(render("a", TFSR_FMT_PNG, "3,:", &png, &d),
		     TFS_E_NOT_FOUND);
	cr_expect_str_eq(tfs_diag_msg(&d), "a picture needs two dimensions "
					   "of more than one cell");
	/* Strings are no numbers. */
	tfs_diag_init(&d);
	cr_expect(!tfsr_renderer_takes(tfsr_renderer_of(TFSR_FMT_PNG), s,
				       tfs_schema_field_index(s, "s"), &d));
	cr_expect_str_eq(tfs_diag_msg(&d),
			 "'s' is not one number per cell, it has no .png");
	cr_expect(tfsr_renderer_takes(tfsr_renderer_of(TFSR_FMT_PNG), s,
				      tfs_schema_field_index(s, "r"), NULL));
	cr_expect(!tfsr_renderer_takes(tfsr_renderer_of(TFSR_FMT_PNG), s, -1,
				       NULL));
	tfs_buf_release(&png);
}

Test(png, dimension_pictures_show_coordinates, .fini = close_array)
{
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;

	open_array("dense_2d_rowmajor");
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	cr_assert_eq(render("c", TFSR_FMT_PNG, "1:4,1:13", &png, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	decode(&png, &im);
	cr_assert_eq(im.w, 12);
	for (uint32_t y = 0; y < im.h; y++)
		for (uint32_t x = 0; x < im.w; x++)
			expect_pixel(&im, y, x, x + 1.0);
	free(im.px);
	tfs_buf_release(&png);
}

/* Random selections (bounds, strides, formats) of a dense and a sparse
 * array: every pixel is its cell. */
Test(png, random_selections, .fini = close_array)
{
	static const char *const arrays[] = {"dense_2d_rowmajor",
					     "sparse_2d_int",
					     "dense_fragments_overlap"};
	unsigned seed = 16;

	for (size_t ai = 0; ai < 3; ai++) {
		const struct tfs_schema *s;
		struct tfs_range ned[2];
		int64_t nlo[2], nhi[2];
		bool dense;

		open_array(arrays[ai]);
		s = tfs_array_schema(arr);
		dense = tfs_schema_is_dense(s);
		cr_assert(tfs_array_non_empty_domain(arr, ned));
		for (int k = 0; k < 2; k++) {
			nlo[k] = tfs_value_as_i64(
				tfs_schema_dim_type(s, (uint32_t)k), ned[k].lo);
			nhi[k] = tfs_value_as_i64(
				tfs_schema_dim_type(s, (uint32_t)k), ned[k].hi);
		}
		for (int round = 0; round < 12; round++) {
			int64_t lo[2], n[2], step[2];
			char sel[128];
			struct tfs_buf png;
			struct tfs_diag d;
			struct rgba im;
			enum tfsr_format fmt = rand_r(&seed) % 2
						       ? TFSR_FMT_PNG
						       : TFSR_FMT_GRAY_PNG;

			for (int k = 0; k < 2; k++) {
				int64_t span = nhi[k] - nlo[k] + 1;

				step[k] = dense ? 1 + rand_r(&seed) % 3 : 1;
				lo[k] = nlo[k] +
					rand_r(&seed) % (span - step[k]);
				/* At least two coordinates, at most to hi. */
				n[k] = 2 + rand_r(&seed) %
						   ((nhi[k] - lo[k]) / step[k]);
				if (n[k] > 40)
					n[k] = 40;
			}
			if (dense)
				snprintf(sel, sizeof(sel),
					 "%lld:%lld:%lld,%lld:%lld:%lld",
					 (long long)lo[0],
					 (long long)(lo[0] +
						     (n[0] - 1) * step[0] + 1),
					 (long long)step[0], (long long)lo[1],
					 (long long)(lo[1] +
						     (n[1] - 1) * step[1] + 1),
					 (long long)step[1]);
			else
				snprintf(sel, sizeof(sel),
					 "%lld:%lld,%lld:%lld",
					 (long long)lo[0],
					 (long long)(lo[0] + n[0]),
					 (long long)lo[1],
					 (long long)(lo[1] + n[1]));
			tfs_buf_init(&png, TFS_BUF_NO_MAX);
			cr_assert_eq(render("a", fmt, sel, &png, &d), TFS_E_OK,
				     "%s %s: %s", arrays[ai], sel,
				     tfs_diag_msg(&d));
			decode(&png, &im);
			cr_assert_eq(im.h, (uint32_t)n[0], "%s %s", arrays[ai],
				     sel);
			cr_assert_eq(im.w, (uint32_t)n[1], "%s %s", arrays[ai],
				     sel);
			for (uint32_t y = 0; y < im.h; y++) {
				for (uint32_t x = 0; x < im.w; x++) {
					bool found;
					double v = cell_at("a",
							   lo[0] + y * step[0],
							   lo[1] + x * step[1],
							   &found);

					if (v == (double)INT32_MIN && dense)
						v = NAN;
					expect_pixel(&im, y, x, v);
				}
			}
			free(im.px);
			tfs_buf_release(&png);
		}
		close_array();
	}
}

/* ---- Previews ------------------------------------------------------------- */

Test(preview, small_arrays_decode_every_cell, .fini = close_array)
{
	struct tfs_range ned[2];
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;
	bool decoded;
	uint32_t scale;

	open_array("dense_2d_rowmajor");
	cr_assert(tfs_array_non_empty_domain(arr, ned));
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	cr_assert_eq(tfsr_preview_png(arr, ned, -1, 0, &png, &decoded, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_expect(decoded);
	decode(&png, &im);
	/* 10 × 12 cells enlarged 10 times: 100 × 120. */
	scale = im.w / 12;
	cr_assert_eq(scale, 10);
	cr_assert_eq(im.h, 10 * scale);
	for (uint32_t y = 0; y < im.h; y++)
		for (uint32_t x = 0; x < im.w; x++)
			expect_pixel(&im, y, x,
				     100.0 * (y / scale + 1) + (x / scale + 1));
	free(im.px);
	tfs_buf_release(&png);
	/* Strings have no preview; the attribute folder of a has one. */
	cr_expect(
		tfsr_preview_plan(tfs_array_schema(arr), ned,
				  tfs_schema_field_index(tfs_array_schema(arr),
							 "a"),
				  &(int){0}, &(uint32_t){0}, &(uint32_t){0}));
	cr_expect(
		!tfsr_preview_plan(tfs_array_schema(arr), ned,
				   tfs_schema_field_index(tfs_array_schema(arr),
							  "s"),
				   &(int){0}, &(uint32_t){0}, &(uint32_t){0}));
}

/* The tile statistics of the corpus's dense array: one tile per 4 × 4
 * box, whose mean is that of the decoded cells. */
Test(preview, tile_statistics_are_the_cells, .fini = close_array)
{
	struct tfs_tile_stats ts;
	struct tfs_diag d;
	size_t with_sum = 0;

	open_array("dense_fragments_overlap");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_tile_stats(arr, "a", &ts, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_gt(ts.num, 0);
	for (size_t i = 0; i < ts.num; i++) {
		const struct tfs_tile_stat *t = &ts.tiles[i];
		double sum = 0, mn = INFINITY, mx = -INFINITY;
		uint64_t cells = 0;

		cr_assert(t->lo[0] <= t->hi[0] && t->lo[1] <= t->hi[1]);
		if (!t->has_sum)
			continue;
		with_sum++;
		/* The fragment's own cells: the newest fragment wins in
		 * reads, so compare only the newest's tiles. */
		if (t->frag + 1 != tfs_array_fragment_count(arr))
			continue;
		for (int64_t y = t->lo[0]; y <= t->hi[0]; y++) {
			for (int64_t x = t->lo[1]; x <= t->hi[1]; x++) {
				bool found;
				double v = cell_at("a", y, x, &found);

				sum += v;
				cells++;
				mn = fmin(mn, v);
				mx = fmax(mx, v);
			}
		}
		cr_expect_eq(t->cells, cells);
		cr_expect_eq(t->sum, sum, "tile %zu: %g, cells say %g", i,
			     t->sum, sum);
		cr_expect(t->has_minmax && t->min == mn && t->max == mx);
	}
	cr_expect_gt(with_sum, 0);
	tfs_tile_stats_release(&ts);
	cr_assert_eq(tfs_array_tile_stats(arr, "nope", &ts, &d),
		     TFS_E_NOT_FOUND);
}

/* Forced onto the tile statistics: each pixel is its tile's mean, and no
 * cell is decoded for it. */
Test(preview, large_arrays_draw_tile_means, .fini = close_array)
{
	struct tfs_range ned[2];
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;
	bool decoded = true;
	uint32_t scale;

	open_array("dense_2d_rowmajor");
	cr_assert(tfs_array_non_empty_domain(arr, ned));
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	cr_assert_eq(tfsr_preview_png(arr, ned, -1, 1, &png, &decoded, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_expect(!decoded);
	decode(&png, &im);
	scale = im.w / 12;
	cr_assert_eq(scale, 10);
	/* Tiles of the corpus array: the tile statistics give their boxes;
	 * each pixel shows the mean of its tile's cells. */
	{
		struct tfs_tile_stats ts;

		cr_assert_eq(tfs_array_tile_stats(arr, "a", &ts, &d), TFS_E_OK);
		for (size_t i = 0; i < ts.num; i++) {
			const struct tfs_tile_stat *t = &ts.tiles[i];
			double sum = 0;
			uint64_t n = 0;

			for (int64_t y = t->lo[0]; y <= t->hi[0]; y++)
				for (int64_t x = t->lo[1]; x <= t->hi[1]; x++) {
					bool found;

					sum += cell_at("a", y, x, &found);
					n++;
				}
			for (int64_t y = t->lo[0]; y <= t->hi[0]; y++)
				for (int64_t x = t->lo[1]; x <= t->hi[1]; x++)
					expect_pixel(&im,
						     (uint32_t)(y - 1) * scale,
						     (uint32_t)(x - 1) * scale,
						     sum / (double)n);
		}
		tfs_buf_release(&png);
		tfs_tile_stats_release(&ts);
	}
	free(im.px);
}

/* One dimension: a strip, each column its cell, 16 pixels high. */
Test(preview, one_dimension_is_a_strip, .fini = close_array)
{
	const struct tfs_schema *s;
	struct tfs_range ned[1];
	struct tfs_buf png;
	struct tfs_diag d;
	struct rgba im;
	int64_t lo, hi;
	int attr;
	uint32_t ky, kx;

	open_array("dense_1d");
	s = tfs_array_schema(arr);
	cr_assert(tfs_array_non_empty_domain(arr, ned));
	cr_assert(tfsr_preview_plan(s, ned, -1, &attr, &ky, &kx));
	cr_expect_eq(ky, TFSR_PREVIEW_STRIP);
	lo = tfs_value_as_i64(tfs_schema_dim_type(s, 0), ned[0].lo);
	hi = tfs_value_as_i64(tfs_schema_dim_type(s, 0), ned[0].hi);
	cr_assert_lt(hi - lo + 1, 128, "one pixel per cell, not enlarged");
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	cr_assert_eq(tfsr_preview_png(arr, ned, -1, 0, &png, NULL, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	decode(&png, &im);
	cr_assert_eq(im.h, 16);
	cr_assert_eq(im.w % (uint32_t)(hi - lo + 1), 0);
	for (uint32_t y = 0; y < im.h; y++) {
		for (uint32_t x = 0; x < im.w; x++) {
			const char *names[1];
			struct tfs_field_info f;
			uint32_t scale = im.w / (uint32_t)(hi - lo + 1);
			int64_t c = lo + x / scale;
			struct tfs_range sub = {(const uint8_t *)&c,
						(const uint8_t *)&c, 0, 0};
			struct tfs_query_opts qo = {.subarray = &sub,
						    .fields = names,
						    .field_num = 1};
			struct tfs_query *q;
			const struct tfs_batch *b;
			uint8_t cv[8];
			double v;

			tfs_schema_field(s, attr, &f);
			names[0] = f.name;
			/* The coordinate in the dimension's type. */
			memcpy(cv, &c, 8);
			sub.lo = sub.hi = cv;
			sub.lo_len = sub.hi_len =
				tfs_datatype_size(tfs_schema_dim_type(s, 0));
			cr_assert_eq(tfs_query_open(arr, &qo, &q, &d),
				     TFS_E_OK);
			cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK);
			cr_assert(b && b->cell_num == 1);
			v = tfs_datatype_class(b->columns[0].type) ==
					    TFS_CLASS_FLOAT
				    ? tfs_value_as_f64(b->columns[0].type,
						       b->columns[0].data)
				    : (double)tfs_value_as_i64(
					      b->columns[0].type,
					      b->columns[0].data);
			tfs_query_close(q);
			expect_pixel(&im, y, x, v);
		}
	}
	free(im.px);
	tfs_buf_release(&png);
}
