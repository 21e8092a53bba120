/* Text renderings of a stream of cells (SPEC §4): .txt (one cell per
 * line), .csv (a header of names, then one row per cell) and .json (dense:
 * nested arrays shaped like the selection; sparse: a list of objects, or
 * of values when there is one field). Fed batch by batch, so a rendering
 * of any size streams in bounded memory. */
#ifndef TFSD_TEXT_RENDER_H
#define TFSD_TEXT_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "value_text.h"
#include <tilefs/tilefs.h>

struct tfsd_text_column {
	const char *name;
	size_t batch_index; /* the column of a batch that holds it */
	const struct tfs_enumeration *enumeration; /* or NULL */
};

struct tfsd_text_render;

/* cols (copied) are the output columns; shape (ndim extents, copied) makes
 * a dense .json nested, NULL a flat list. */
enum tfs_err tfsd_text_render_new(enum tfsd_text_style style,
				  const struct tfsd_text_column *cols,
				  size_t col_num, const uint64_t *shape,
				  size_t ndim,
				  struct tfsd_text_render **out) TFS_WUR;
void tfsd_text_render_free(struct tfsd_text_render *r);
/* The header (.csv) or opening bracket (.json). */
enum tfs_err tfsd_text_render_begin(struct tfsd_text_render *r,
				    struct tfs_buf *out) TFS_WUR;
/* Cells first .. first+n-1 of batch b. */
enum tfs_err tfsd_text_render_cells(struct tfsd_text_render *r,
				    struct tfs_buf *out,
				    const struct tfs_batch *b, uint64_t first,
				    uint64_t n) TFS_WUR;
/* The closing brackets (.json). */
enum tfs_err tfsd_text_render_end(struct tfsd_text_render *r,
				  struct tfs_buf *out) TFS_WUR;

#endif
