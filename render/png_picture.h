/* Pictures of numeric cells (SPEC §4, `.png`): values become 8-bit RGBA
 * pixels through a colormap (viridis, or gray), NaN, null and never
 * written cells transparent, one pixel per cell. The PNG itself is
 * libpng's; the file carries its value range and colormap as text chunks
 * ("tilefs:range", "tilefs:colormap"), which the mount's extended
 * attributes repeat.
 *
 * Two producers: the `.png` and `.gray.png` renderers of 2-D selections
 * (the rows of the renderer table) and the previews of whole arrays
 * (preview.c). */
#ifndef TFSR_PNG_PICTURE_H
#define TFSR_PNG_PICTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_err.h"
#include <tilefs/tilefs.h>

/* Pixels a picture may have at most (a selection over it: TFS_E_TOO_BIG,
 * "use a stride"). */
#define TFSR_PNG_MAX_PIXELS ((uint64_t)1 << 23)

enum tfsr_cmap {
	TFSR_CMAP_VIRIDIS,
	TFSR_CMAP_GRAY,
};

/* "viridis", "gray". */
const char *tfsr_cmap_name(enum tfsr_cmap c);
/* The colour of level 0..255. */
void tfsr_cmap_rgb(enum tfsr_cmap c, uint8_t level, uint8_t rgb[3]);

/* w × h values, row-major, the first row on top; NaN = transparent. */
struct tfsr_picture {
	uint32_t w, h;
	double *v;
	/* The values that the colormap's ends show; has_range false: the
	 * smallest and largest finite values. */
	bool has_range;
	double lo, hi;
	enum tfsr_cmap cmap;
	bool f32; /* the values are FLOAT32: the range prints as such */
};

/* The level (0..255) of value x in [lo, hi] (clamped; a range of one
 * value is level 0). */
uint8_t tfsr_picture_level(double x, double lo, double hi);

/* Appends p as a PNG (8-bit RGBA) to out. */
enum tfs_err tfsr_picture_png(const struct tfsr_picture *p, struct tfs_buf *out,
			      struct tfs_diag *d) TFS_WUR;

/* The value range and colormap that a PNG of tfsr_picture_png says it
 * shows (its text chunks), as text "LO HI" (shortest round-trip
 * numbers; "" for a picture without a finite value) and the colormap's
 * name; false when png is not such a picture. */
bool tfsr_png_info(const uint8_t *png, size_t len, struct tfs_buf *range,
		   struct tfs_buf *cmap);

/* A coordinate of an integer dimension as int64; false when it is not
 * one (another type, or an unsigned value above INT64_MAX). */
bool tfsr_coord_i64(uint8_t type, const uint8_t *p, int64_t *out);
/* Cell i of a fixed-size numeric column (one value per cell) as a
 * double; NaN for a null. */
struct tfs_column;
double tfsr_cell_number(const struct tfs_column *c, uint64_t i);

/* Whether attribute f's fill value is its type's default (the extreme
 * that TileDB gives cells never written: INT32_MIN, UINT64_MAX, NaN...),
 * and that value as a double in *fill. Pictures show cells holding it as
 * never written (transparent): a consolidated dense fragment stores such
 * cells, so its domain does not tell. */
struct tfs_field_info;
bool tfsr_default_fill(const struct tfs_field_info *f, double *fill);

/* The renderers of `.png` and `.gray.png` slices (tfs_render.h). */
struct tfsr_stream;
struct tfsr_emit;
struct tfs_batch;
struct tfsr_sel;
struct tfs_schema;
enum tfs_err tfsr_png_begin(struct tfsr_stream *st, struct tfs_diag *d) TFS_WUR;
enum tfs_err tfsr_png_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			    uint64_t first, uint64_t n) TFS_WUR;
enum tfs_err tfsr_png_end(struct tfsr_stream *st) TFS_WUR;
void tfsr_png_release(struct tfsr_emit *em);

/* Whether sel of schema s can be a picture: exactly two dimensions of
 * more than one cell, both integers, at most TFSR_PNG_MAX_PIXELS; else
 * TFS_E_NOT_FOUND (or TFS_E_TOO_BIG) with the reason in d. The two
 * dimensions go to *ky (rows) and *kx (columns), which may be NULL. */
enum tfs_err tfsr_png_sel_check(const struct tfsr_sel *sel,
				const struct tfs_schema *s, uint32_t *ky,
				uint32_t *kx, struct tfs_diag *d) TFS_WUR;

#endif

/* ---- Previews (preview.c) ------------------------------------------------ */

/* A preview is at most this wide and high; small ones are enlarged
 * (whole multiples) to at least TFSR_PREVIEW_MIN. */
#define TFSR_PREVIEW_MAX 256
#define TFSR_PREVIEW_MIN 128
/* Arrays of at most this many cells are decoded for their preview;
 * larger ones are drawn from the fragments' tile sums and counts. */
#define TFSR_PREVIEW_DECODE_CELLS ((uint64_t)1 << 20)

/* *ky of a preview along one dimension: a strip, one row of bins. */
#define TFSR_PREVIEW_STRIP UINT32_MAX

/* The field a preview of field (-1: the array) shows: that attribute
 * when it is one number per cell, or the array's first such attribute;
 * and the dimensions it spans: the first two integer dimensions of more
 * than one coordinate in the non-empty domain ned, rows (*ky) and
 * columns (*kx), or only one (*ky TFSR_PREVIEW_STRIP: a strip at least
 * 16 pixels high). False when there is no preview (none of those). */
bool tfsr_preview_plan(const struct tfs_schema *s, const struct tfs_range *ned,
		       int field, int *attr, uint32_t *ky, uint32_t *kx);

/* preview.png of field (-1: the array, see tfsr_preview_plan) of a,
 * whose non-empty domain is ned, appended to out. Arrays of more than
 * decode_cells cells (0: TFSR_PREVIEW_DECODE_CELLS) are drawn from tile
 * statistics where every fragment has them. *decoded (may be NULL):
 * whether cells were decoded. */
enum tfs_err tfsr_preview_png(struct tfs_array *a, const struct tfs_range *ned,
			      int field, uint64_t decode_cells,
			      struct tfs_buf *out, bool *decoded,
			      struct tfs_diag *d) TFS_WUR;
