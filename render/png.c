/* Pictures as PNG (png.h): colormaps, the libpng encoder around a
 * picture, and the `.png` / `.gray.png` renderers of 2-D selections. */
#include "png_picture.h"

#include <inttypes.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "slice.h"
#include "tfs_alloc.h"
#include "tfs_fmt_float.h"

/* viridis (matplotlib's, by van der Walt and Smith, CC0): the published
 * 256 colours rounded to 8 bits. */
/* clang-format off */
static const uint8_t viridis[256 * 3] = {
	 68,   1,  84,  68,   2,  86,  69,   4,  87,  69,   5,  89,
	 70,   7,  90,  70,   8,  92,  70,  10,  93,  70,  11,  94,
	 71,  13,  96,  71,  14,  97,  71,  16,  99,  71,  17, 100,
	 71,  19, 101,  72,  20, 103,  72,  22, 104,  72,  23, 105,
	 72,  24, 106,  72,  26, 108,  72,  27, 109,  72,  28, 110,
	 72,  29, 111,  72,  31, 112,  72,  32, 113,  72,  33, 115,
	 72,  35, 116,  72,  36, 117,  72,  37, 118,  72,  38, 119,
	 72,  40, 120,  72,  41, 121,  71,  42, 122,  71,  44, 122,
	 71,  45, 123,  71,  46, 124,  71,  47, 125,  70,  48, 126,
	 70,  50, 126,  70,  51, 127,  70,  52, 128,  69,  53, 129,
	 69,  55, 129,  69,  56, 130,  68,  57, 131,  68,  58, 131,
	 68,  59, 132,  67,  61, 132,  67,  62, 133,  66,  63, 133,
	 66,  64, 134,  66,  65, 134,  65,  66, 135,  65,  68, 135,
	 64,  69, 136,  64,  70, 136,  63,  71, 136,  63,  72, 137,
	 62,  73, 137,  62,  74, 137,  62,  76, 138,  61,  77, 138,
	 61,  78, 138,  60,  79, 138,  60,  80, 139,  59,  81, 139,
	 59,  82, 139,  58,  83, 139,  58,  84, 140,  57,  85, 140,
	 57,  86, 140,  56,  88, 140,  56,  89, 140,  55,  90, 140,
	 55,  91, 141,  54,  92, 141,  54,  93, 141,  53,  94, 141,
	 53,  95, 141,  52,  96, 141,  52,  97, 141,  51,  98, 141,
	 51,  99, 141,  50, 100, 142,  50, 101, 142,  49, 102, 142,
	 49, 103, 142,  49, 104, 142,  48, 105, 142,  48, 106, 142,
	 47, 107, 142,  47, 108, 142,  46, 109, 142,  46, 110, 142,
	 46, 111, 142,  45, 112, 142,  45, 113, 142,  44, 113, 142,
	 44, 114, 142,  44, 115, 142,  43, 116, 142,  43, 117, 142,
	 42, 118, 142,  42, 119, 142,  42, 120, 142,  41, 121, 142,
	 41, 122, 142,  41, 123, 142,  40, 124, 142,  40, 125, 142,
	 39, 126, 142,  39, 127, 142,  39, 128, 142,  38, 129, 142,
	 38, 130, 142,  38, 130, 142,  37, 131, 142,  37, 132, 142,
	 37, 133, 142,  36, 134, 142,  36, 135, 142,  35, 136, 142,
	 35, 137, 142,  35, 138, 141,  34, 139, 141,  34, 140, 141,
	 34, 141, 141,  33, 142, 141,  33, 143, 141,  33, 144, 141,
	 33, 145, 140,  32, 146, 140,  32, 146, 140,  32, 147, 140,
	 31, 148, 140,  31, 149, 139,  31, 150, 139,  31, 151, 139,
	 31, 152, 139,  31, 153, 138,  31, 154, 138,  30, 155, 138,
	 30, 156, 137,  30, 157, 137,  31, 158, 137,  31, 159, 136,
	 31, 160, 136,  31, 161, 136,  31, 161, 135,  31, 162, 135,
	 32, 163, 134,  32, 164, 134,  33, 165, 133,  33, 166, 133,
	 34, 167, 133,  34, 168, 132,  35, 169, 131,  36, 170, 131,
	 37, 171, 130,  37, 172, 130,  38, 173, 129,  39, 173, 129,
	 40, 174, 128,  41, 175, 127,  42, 176, 127,  44, 177, 126,
	 45, 178, 125,  46, 179, 124,  47, 180, 124,  49, 181, 123,
	 50, 182, 122,  52, 182, 121,  53, 183, 121,  55, 184, 120,
	 56, 185, 119,  58, 186, 118,  59, 187, 117,  61, 188, 116,
	 63, 188, 115,  64, 189, 114,  66, 190, 113,  68, 191, 112,
	 70, 192, 111,  72, 193, 110,  74, 193, 109,  76, 194, 108,
	 78, 195, 107,  80, 196, 106,  82, 197, 105,  84, 197, 104,
	 86, 198, 103,  88, 199, 101,  90, 200, 100,  92, 200,  99,
	 94, 201,  98,  96, 202,  96,  99, 203,  95, 101, 203,  94,
	103, 204,  92, 105, 205,  91, 108, 205,  90, 110, 206,  88,
	112, 207,  87, 115, 208,  86, 117, 208,  84, 119, 209,  83,
	122, 209,  81, 124, 210,  80, 127, 211,  78, 129, 211,  77,
	132, 212,  75, 134, 213,  73, 137, 213,  72, 139, 214,  70,
	142, 214,  69, 144, 215,  67, 147, 215,  65, 149, 216,  64,
	152, 216,  62, 155, 217,  60, 157, 217,  59, 160, 218,  57,
	162, 218,  55, 165, 219,  54, 168, 219,  52, 170, 220,  50,
	173, 220,  48, 176, 221,  47, 178, 221,  45, 181, 222,  43,
	184, 222,  41, 186, 222,  40, 189, 223,  38, 192, 223,  37,
	194, 223,  35, 197, 224,  33, 200, 224,  32, 202, 225,  31,
	205, 225,  29, 208, 225,  28, 210, 226,  27, 213, 226,  26,
	216, 226,  25, 218, 227,  25, 221, 227,  24, 223, 227,  24,
	226, 228,  24, 229, 228,  25, 231, 228,  25, 234, 229,  26,
	236, 229,  27, 239, 229,  28, 241, 229,  29, 244, 230,  30,
	246, 230,  32, 248, 230,  33, 251, 231,  35, 253, 231,  37,
};
/* clang-format on */

const char *tfsr_cmap_name(enum tfsr_cmap c)
{
	return c == TFSR_CMAP_GRAY ? "gray" : "viridis";
}

void tfsr_cmap_rgb(enum tfsr_cmap c, uint8_t level, uint8_t rgb[3])
{
	if (c == TFSR_CMAP_GRAY) {
		rgb[0] = rgb[1] = rgb[2] = level;
		return;
	}
	memcpy(rgb, viridis + 3 * (size_t)level, 3);
}

uint8_t tfsr_picture_level(double x, double lo, double hi)
{
	double t;

	if (!(hi > lo))
		return 0;
	t = (x - lo) / (hi - lo);
	if (!(t > 0))
		return 0;
	if (t >= 1)
		return 255;
	return (uint8_t)lround(t * 255.0);
}

/* ---- Encoding ------------------------------------------------------------ */

struct png_sink {
	struct tfs_buf *out;
	enum tfs_err err;
};

static void sink_write(png_structp png, png_bytep data, size_t len)
{
	struct png_sink *s = png_get_io_ptr(png);

	if (!s->err)
		s->err = tfs_buf_append(s->out, data, len);
	if (s->err)
		png_error(png, "out of memory");
}

static void sink_flush(png_structp png)
{
	(void)png;
}

static void png_quiet(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

static void png_fail(png_structp png, png_const_charp msg)
{
	(void)msg;
	png_longjmp(png, 1);
}

/* The picture's value range: its own, or that of its finite values;
 * false when it has none. */
static bool picture_range(const struct tfsr_picture *p, double *lo, double *hi)
{
	bool any = false;

	if (p->has_range) {
		*lo = p->lo;
		*hi = p->hi;
		return true;
	}
	for (uint64_t i = 0; i < (uint64_t)p->w * p->h; i++) {
		double x = p->v[i];

		if (!isfinite(x))
			continue;
		if (!any || x < *lo)
			*lo = x;
		if (!any || x > *hi)
			*hi = x;
		any = true;
	}
	return any;
}

static void fmt_num(char *dst, size_t cap, double x, bool f32)
{
	if (f32)
		tfs_fmt_f32(dst, cap, (float)x, 1e15);
	else
		tfs_fmt_f64(dst, cap, x, 1e15);
}

/* Encodes rows (h × w × 4 bytes) with libpng; the one function that
 * long-jumps, with nothing of its own to free. */
static int png_encode_rows(png_structp png, png_infop info, png_bytep *rows,
			   uint32_t w, uint32_t h, png_textp text, int ntext)
{
	if (setjmp(png_jmpbuf(png)))
		return -1;
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	png_set_text(png, info, text, ntext);
	png_write_info(png, info);
	png_write_image(png, rows);
	png_write_end(png, info);
	return 0;
}

enum tfs_err tfsr_picture_png(const struct tfsr_picture *p, struct tfs_buf *out,
			      struct tfs_diag *d)
{
	struct png_sink sink = {.out = out};
	png_structp png = NULL;
	png_infop info = NULL;
	png_bytep *rows = NULL;
	uint8_t *px = NULL;
	char range[2 * TFS_FMT_FLOAT_MAX + 2] = "";
	char key_range[] = "tilefs:range", key_cmap[] = "tilefs:colormap";
	char cmap[16];
	png_text text[2];
	double lo = 0, hi = 0;
	bool has;
	enum tfs_err e = TFS_E_OK;

	if (!p->w || !p->h || (uint64_t)p->w * p->h > TFSR_PNG_MAX_PIXELS)
		return tfs_fail(d, TFS_E_TOO_BIG,
				"a picture of %" PRIu32 "x%" PRIu32 " pixels",
				p->w, p->h);
	has = picture_range(p, &lo, &hi);
	if (has) {
		char a[TFS_FMT_FLOAT_MAX], b[TFS_FMT_FLOAT_MAX];

		fmt_num(a, sizeof(a), lo, p->f32);
		fmt_num(b, sizeof(b), hi, p->f32);
		snprintf(range, sizeof(range), "%s %s", a, b);
	}
	snprintf(cmap, sizeof(cmap), "%s", tfsr_cmap_name(p->cmap));
	px = tfs_mallocn((size_t)p->w * p->h, 4);
	rows = tfs_mallocn(p->h, sizeof(*rows));
	if (!px || !rows) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free;
	}
	for (uint64_t i = 0; i < (uint64_t)p->w * p->h; i++) {
		uint8_t *q = px + 4 * i;
		double x = p->v[i];

		if (!has || isnan(x)) {
			memset(q, 0, 4);
			continue;
		}
		tfsr_cmap_rgb(p->cmap, tfsr_picture_level(x, lo, hi), q);
		q[3] = 255;
	}
	for (uint32_t y = 0; y < p->h; y++)
		rows[y] = px + (size_t)y * p->w * 4;
	memset(text, 0, sizeof(text));
	text[0].compression = PNG_TEXT_COMPRESSION_NONE;
	text[0].key = key_range;
	text[0].text = range;
	text[0].text_length = strlen(range);
	text[1].compression = PNG_TEXT_COMPRESSION_NONE;
	text[1].key = key_cmap;
	text[1].text = cmap;
	text[1].text_length = strlen(cmap);
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_fail,
				      png_quiet);
	if (png)
		info = png_create_info_struct(png);
	if (!png || !info) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free;
	}
	png_set_write_fn(png, &sink, sink_write, sink_flush);
	if (png_encode_rows(png, info, rows, p->w, p->h, text, 2))
		e = tfs_fail(d, sink.err ? sink.err : TFS_E_INTERNAL,
			     "cannot encode a picture of %" PRIu32 "x%" PRIu32,
			     p->w, p->h);
out_free:
	png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
	tfs_free(px);
	tfs_free(rows);
	return e;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

bool tfsr_png_info(const uint8_t *png, size_t len, struct tfs_buf *range,
		   struct tfs_buf *cmap)
{
	static const uint8_t sig[8] = {0x89, 'P',  'N',  'G',
				       '\r', '\n', 0x1a, '\n'};
	bool has_range = false, has_cmap = false;
	size_t at = 8;

	if (len < 8 || memcmp(png, sig, 8) != 0)
		return false;
	while (at + 12 <= len) {
		uint32_t n = be32(png + at);
		const uint8_t *type = png + at + 4, *data = png + at + 8;
		size_t klen;

		if (n > len - at - 12)
			return false;
		if (memcmp(type, "tEXt", 4) == 0) {
			klen = strnlen((const char *)data, n);
			if (klen < n) {
				const char *key = (const char *)data;
				const uint8_t *val = data + klen + 1;
				size_t vlen = n - klen - 1;

				if (strcmp(key, "tilefs:range") == 0 &&
				    !tfs_buf_append(range, val, vlen))
					has_range = true;
				if (strcmp(key, "tilefs:colormap") == 0 &&
				    !tfs_buf_append(cmap, val, vlen))
					has_cmap = true;
			}
		}
		if (memcmp(type, "IDAT", 4) == 0 ||
		    memcmp(type, "IEND", 4) == 0)
			break;
		at += 12 + (size_t)n;
	}
	return has_range && has_cmap;
}

/* ---- Slices as pictures ---------------------------------------------------- */

bool tfsr_coord_i64(uint8_t type, const uint8_t *p, int64_t *out)
{
	if (tfs_datatype_class(type) == TFS_CLASS_SIGNED) {
		*out = tfs_value_as_i64(type, p);
		return true;
	}
	if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED &&
	    tfs_value_as_u64(type, p) <= INT64_MAX) {
		*out = (int64_t)tfs_value_as_u64(type, p);
		return true;
	}
	return false;
}

enum tfs_err tfsr_png_sel_check(const struct tfsr_sel *sel,
				const struct tfs_schema *s, uint32_t *ky,
				uint32_t *kx, struct tfs_diag *d)
{
	uint32_t axes[2], n = 0;

	if (sel->empty)
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"a picture needs cells: the selection is empty");
	for (uint32_t k = 0; k < sel->dim_num; k++) {
		uint8_t type = tfs_schema_dim_type(s, k);

		if (!tfs_datatype_is_integer(type)) {
			if (sel->dims[k].range.lo_len ==
				    sel->dims[k].range.hi_len &&
			    memcmp(sel->dims[k].range.lo, sel->dims[k].range.hi,
				   sel->dims[k].range.lo_len) == 0)
				continue; /* one value */
			return tfs_fail(d, TFS_E_NOT_FOUND,
					"a picture needs integer dimensions, "
					"'%s' is %s",
					tfs_schema_dim_name(s, k),
					tfs_datatype_name(type));
		}
		if (sel->dims[k].count <= 1)
			continue;
		if (n == 2)
			return tfs_fail(d, TFS_E_NOT_FOUND,
					"a picture needs two dimensions of "
					"more than one cell, not three");
		axes[n++] = k;
	}
	if (n < 2)
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"a picture needs two dimensions of more than "
				"one cell");
	if (sel->dims[axes[0]].count > TFSR_PNG_MAX_PIXELS ||
	    sel->dims[axes[1]].count > TFSR_PNG_MAX_PIXELS ||
	    sel->dims[axes[0]].count * sel->dims[axes[1]].count >
		    TFSR_PNG_MAX_PIXELS)
		return tfs_fail(d, TFS_E_TOO_BIG,
				"a picture of %" PRIu64 "x%" PRIu64 " pixels "
				"is over %" PRIu64 ": use a stride "
				"(slice[::8,::8].png)",
				sel->dims[axes[0]].count,
				sel->dims[axes[1]].count, TFSR_PNG_MAX_PIXELS);
	if (ky)
		*ky = axes[0];
	if (kx)
		*kx = axes[1];
	return TFS_E_OK;
}

bool tfsr_default_fill(const struct tfs_field_info *f, double *fill)
{
	uint8_t def[8];
	size_t w = tfs_datatype_size(f->type);
	struct tfs_column fc = {.type = f->type,
				.cell_val_num = 1,
				.data = def};

	if (f->is_dim || f->var || f->cell_val_num != 1 || w > sizeof(def) ||
	    !f->fill || f->fill_size != w)
		return false;
	tfs_datatype_default_fill(f->type, def);
	if (memcmp(def, f->fill, w) != 0)
		return false;
	*fill = tfsr_cell_number(&fc, 0);
	return true;
}

struct png_state {
	struct tfsr_picture pic;
	bool skip_fill; /* cells holding fill are never written */
	double fill;
	uint32_t ky, kx;
	int64_t ylo, xlo;      /* coordinates of pixel (0, 0) */
	uint64_t ystep, xstep; /* coordinates per pixel */
	uint8_t *written;      /* dense: per pixel, 1 when written */
	uint32_t vcol;         /* column of the values */
};

void tfsr_png_release(struct tfsr_emit *em)
{
	struct png_state *ps = em->state;

	if (!ps)
		return;
	tfs_free(ps->pic.v);
	tfs_free(ps->written);
	tfs_free(ps);
	em->state = NULL;
}

/* Pixels [first, first + n) of an axis (coordinates lo + i × step) that
 * lie in [a, b]; false when none. */
static bool axis_span(int64_t lo, uint64_t step, uint64_t n, int64_t a,
		      int64_t b, uint64_t *i0, uint64_t *i1)
{
	int64_t hi = lo + (int64_t)((n - 1) * step);

	if (b < lo || a > hi)
		return false;
	*i0 = a <= lo ? 0 : ((uint64_t)(a - lo) + step - 1) / step;
	*i1 = b >= hi ? n : (uint64_t)(b - lo) / step + 1;
	return *i0 < *i1;
}

/* Dense: marks the pixels some visible fragment wrote (dense fragments
 * write whole boxes: the rest shows the fill value, never written). */
static void dense_written(struct png_state *ps, const struct tfsr_slice *sl)
{
	const struct tfs_schema *s = sl->s;
	uint32_t nd = tfs_schema_dim_count(s);
	uint8_t type = tfs_schema_dim_type(s, 0);

	for (size_t i = 0; i < tfs_array_fragment_count(sl->a); i++) {
		struct tfs_fragment_info f;
		uint64_t y0, y1, x0, x1;
		int64_t lo, hi, at;
		bool in = true;

		tfs_array_fragment(sl->a, i, &f);
		if (!f.visible || !f.non_empty_domain)
			continue;
		for (uint32_t k = 0; in && k < nd; k++) {
			if (k == ps->ky || k == ps->kx)
				continue;
			if (!tfsr_coord_i64(type, f.non_empty_domain[k].lo,
					    &lo) ||
			    !tfsr_coord_i64(type, f.non_empty_domain[k].hi,
					    &hi) ||
			    !tfsr_coord_i64(type, sl->sel->dims[k].range.lo,
					    &at))
				in = false;
			else
				in = lo <= at && at <= hi;
		}
		if (!in ||
		    !tfsr_coord_i64(type, f.non_empty_domain[ps->ky].lo, &lo) ||
		    !tfsr_coord_i64(type, f.non_empty_domain[ps->ky].hi, &hi) ||
		    !axis_span(ps->ylo, ps->ystep, ps->pic.h, lo, hi, &y0,
			       &y1) ||
		    !tfsr_coord_i64(type, f.non_empty_domain[ps->kx].lo, &lo) ||
		    !tfsr_coord_i64(type, f.non_empty_domain[ps->kx].hi, &hi) ||
		    !axis_span(ps->xlo, ps->xstep, ps->pic.w, lo, hi, &x0, &x1))
			continue;
		for (uint64_t y = y0; y < y1; y++)
			memset(ps->written + y * ps->pic.w + x0, 1,
			       (size_t)(x1 - x0));
	}
}

/* The value range of the tiles the selection touches, from the fragment
 * metadata, when every one of them has it. */
static void tile_range(struct png_state *ps, const struct tfsr_slice *sl)
{
	const struct tfs_schema *s = sl->s;
	uint32_t nd = tfs_schema_dim_count(s);
	struct tfs_field_info f;
	struct tfs_tile_stats ts;
	int64_t lo[TFSR_MAX_DIMS], hi[TFSR_MAX_DIMS];
	bool any = false, all = true, has_fill;
	double a = 0, b = 0, fill = 0;

	tfs_schema_field(s, sl->field, &f);
	if (f.is_dim)
		return;
	/* A tile whose minimum or maximum is the default fill value may
	 * count padding or cells never written (consolidated dense
	 * fragments, fragment.md §6), which the picture leaves out: its
	 * range would not describe the cells shown, so theirs is used. */
	has_fill = tfsr_default_fill(&f, &fill) && !isnan(fill);
	for (uint32_t k = 0; k < nd; k++)
		if (!tfsr_coord_i64(tfs_schema_dim_type(s, k),
				    sl->sel->dims[k].range.lo, &lo[k]) ||
		    !tfsr_coord_i64(tfs_schema_dim_type(s, k),
				    sl->sel->dims[k].range.hi, &hi[k]))
			return;
	if (tfs_array_tile_stats(sl->a, f.name, &ts, NULL))
		return;
	for (size_t i = 0; all && i < ts.num; i++) {
		const struct tfs_tile_stat *t = &ts.tiles[i];
		bool meets = true;

		for (uint32_t k = 0; meets && k < nd; k++)
			meets = t->lo[k] <= hi[k] && t->hi[k] >= lo[k];
		if (!meets || (t->has_minmax == false && t->nulls == t->cells &&
			       t->nulls))
			continue;
		if (!t->has_minmax || !isfinite(t->min) || !isfinite(t->max) ||
		    (has_fill && (t->min == fill || t->max == fill))) {
			all = false;
			break;
		}
		if (!any || t->min < a)
			a = t->min;
		if (!any || t->max > b)
			b = t->max;
		any = true;
	}
	tfs_tile_stats_release(&ts);
	if (any && all) {
		ps->pic.has_range = true;
		ps->pic.lo = a;
		ps->pic.hi = b;
	}
}

enum tfs_err tfsr_png_begin(struct tfsr_stream *st, struct tfs_diag *d)
{
	struct tfsr_slice *sl = st->em.sl;
	const struct tfs_schema *s = sl->s;
	struct png_state *ps;
	uint32_t ky, kx;
	enum tfs_err e;

	e = tfsr_png_sel_check(sl->sel, s, &ky, &kx, d);
	if (e)
		return e;
	ps = tfs_callocn(1, sizeof(*ps));
	if (!ps)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	st->em.state = ps;
	ps->ky = ky;
	ps->kx = kx;
	ps->pic.h = (uint32_t)sl->sel->dims[ky].count;
	ps->pic.w = (uint32_t)sl->sel->dims[kx].count;
	ps->pic.cmap = sl->r->fmt == TFSR_FMT_GRAY_PNG ? TFSR_CMAP_GRAY
						       : TFSR_CMAP_VIRIDIS;
	{
		struct tfs_field_info f;

		tfs_schema_field(s, sl->field, &f);
		ps->pic.f32 = f.type == TFS_FLOAT32;
		ps->skip_fill = tfsr_default_fill(&f, &ps->fill) &&
				!isnan(ps->fill);
	}
	ps->ystep = sl->sel->dims[ky].stride;
	ps->xstep = sl->sel->dims[kx].stride;
	if (!tfsr_coord_i64(tfs_schema_dim_type(s, ky),
			    sl->sel->dims[ky].range.lo, &ps->ylo) ||
	    !tfsr_coord_i64(tfs_schema_dim_type(s, kx),
			    sl->sel->dims[kx].range.lo, &ps->xlo))
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"a picture needs coordinates within int64");
	/* The value column: the field itself, after the coordinates that
	 * sparse slices carry. */
	ps->vcol = 0;
	if (!sl->dense)
		ps->vcol = sl->field < (int)tfs_schema_dim_count(s)
				   ? (uint32_t)sl->field
				   : sl->nfields - 1;
	ps->pic.v = tfs_mallocn((size_t)ps->pic.w * ps->pic.h, sizeof(double));
	if (!ps->pic.v)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < (uint64_t)ps->pic.w * ps->pic.h; i++)
		ps->pic.v[i] = NAN;
	if (sl->dense) {
		ps->written = tfs_callocn((size_t)ps->pic.w * ps->pic.h, 1);
		if (!ps->written)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		dense_written(ps, sl);
	}
	tile_range(ps, sl);
	return TFS_E_OK;
}

double tfsr_cell_number(const struct tfs_column *c, uint64_t i)
{
	const uint8_t *p = c->data + i * tfs_datatype_size(c->type);

	if (c->nullable && c->validity && !c->validity[i])
		return NAN;
	switch (tfs_datatype_class(c->type)) {
	case TFS_CLASS_FLOAT:
		return tfs_value_as_f64(c->type, p);
	case TFS_CLASS_SIGNED:
		return (double)tfs_value_as_i64(c->type, p);
	default:
		return (double)tfs_value_as_u64(c->type, p);
	}
}

/* What a cell's value shows: NaN (transparent) for the default fill. */
static double shown(const struct png_state *ps, double v)
{
	return ps->skip_fill && v == ps->fill ? NAN : v;
}

enum tfs_err tfsr_png_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			    uint64_t first, uint64_t n)
{
	struct png_state *ps = em->state;
	const struct tfsr_slice *sl = em->sl;
	uint64_t base = em->count - n; /* selection index of cell `first` */

	if (em->measure || !ps)
		return TFS_E_OK;
	if (sl->dense) {
		/* Row-major over the selection, whose other dimensions hold
		 * one coordinate: the index is the pixel. */
		for (uint64_t i = 0; i < n; i++) {
			uint64_t px = base + i;

			if (px < (uint64_t)ps->pic.w * ps->pic.h &&
			    ps->written[px])
				ps->pic.v[px] =
					shown(ps,
					      tfsr_cell_number(&b->columns[0],
							       first + i));
		}
		return TFS_E_OK;
	}
	for (uint64_t i = first; i < first + n; i++) {
		const struct tfs_column *cy = &b->columns[ps->ky];
		const struct tfs_column *cx = &b->columns[ps->kx];
		int64_t y, x;

		if (!tfsr_coord_i64(cy->type,
				    cy->data + i * tfs_datatype_size(cy->type),
				    &y) ||
		    !tfsr_coord_i64(cx->type,
				    cx->data + i * tfs_datatype_size(cx->type),
				    &x) ||
		    y < ps->ylo || x < ps->xlo)
			continue;
		if ((uint64_t)(y - ps->ylo) >= ps->pic.h ||
		    (uint64_t)(x - ps->xlo) >= ps->pic.w)
			continue;
		ps->pic.v[(uint64_t)(y - ps->ylo) * ps->pic.w +
			  (uint64_t)(x - ps->xlo)] =
			shown(ps, tfsr_cell_number(&b->columns[ps->vcol], i));
	}
	return TFS_E_OK;
}

enum tfs_err tfsr_png_end(struct tfsr_stream *st)
{
	struct png_state *ps = st->em.state;

	if (!ps)
		return TFS_E_INTERNAL;
	return tfsr_picture_png(&ps->pic, &st->out, NULL);
}
