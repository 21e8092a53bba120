/* Text renderings of a stream of cells (SPEC §4): .txt (one cell per
 * line), .csv (a header of names, then one row per cell) and .json (dense:
 * nested arrays shaped like the selection; sparse: a list of objects, or
 * of values when there is one field). Fed batch by batch, so a rendering
 * of any size streams in bounded memory. */
#ifndef TFSR_TEXT_RENDER_H
#define TFSR_TEXT_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "value_text.h"
#include <tilefs/tilefs.h>

struct tfsr_text_column {
	const char *name;
	/* The column of a batch that holds it; for a coordinate (coord),
	 * the batches' column count plus its rank among the coordinates. */
	size_t batch_index;
	const struct tfs_enumeration *enumeration; /* or NULL */
	/* A coordinate of a dense rendering (shape given), computed from
	 * the cell's index instead of read from the batches: along
	 * dimension dim, lo + index * stride in the dimension's type (lo:
	 * its bits). */
	bool coord;
	uint32_t dim;
	uint8_t type;
	uint64_t lo, stride;
};

struct tfsr_text_render;

/* cols (copied) are the output columns; shape (ndim extents, copied) makes
 * a dense .json nested, NULL a flat list. */
enum tfs_err tfsr_text_render_new(enum tfsr_text_style style,
				  const struct tfsr_text_column *cols,
				  size_t col_num, const uint64_t *shape,
				  size_t ndim,
				  struct tfsr_text_render **out) TFS_WUR;
void tfsr_text_render_free(struct tfsr_text_render *r);
/* Large batches are formatted on two threads, half of each round of
 * cells on pool (which must outlive r); NULL: on the caller's only. The
 * bytes are the same either way. */
void tfsr_text_render_set_pool(struct tfsr_text_render *r,
			       struct tfs_pool *pool);
/* The header (.csv) or opening bracket (.json). */
enum tfs_err tfsr_text_render_begin(struct tfsr_text_render *r,
				    struct tfs_buf *out) TFS_WUR;
/* Cells first .. first+n-1 of batch b. */
enum tfs_err tfsr_text_render_cells(struct tfsr_text_render *r,
				    struct tfs_buf *out,
				    const struct tfs_batch *b, uint64_t first,
				    uint64_t n) TFS_WUR;
/* The bytes tfsr_text_render_cells would write for the same cells, added
 * to *bytes, without writing them where it can (numeric columns). */
enum tfs_err tfsr_text_render_count(struct tfsr_text_render *r,
				    const struct tfs_batch *b, uint64_t first,
				    uint64_t n, uint64_t *bytes) TFS_WUR;
/* The closing brackets (.json). */
enum tfs_err tfsr_text_render_end(struct tfsr_text_render *r,
				  struct tfs_buf *out) TFS_WUR;

/* The text renderers (tfs_render.h) of a slice: a rendering of the
 * row's style over the slice's fields (dense .json nested by the
 * selection's shape), kept in em->state. */
struct tfsr_emit;
struct tfsr_stream;
enum tfs_err tfsr_text_begin(struct tfsr_stream *st,
			     struct tfs_diag *d) TFS_WUR;
enum tfs_err tfsr_text_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			     uint64_t first, uint64_t n) TFS_WUR;
enum tfs_err tfsr_text_end(struct tfsr_stream *st) TFS_WUR;
void tfsr_text_release(struct tfsr_emit *em);
/* Makes the rendering of a begun stream go on as if `cell` cells had
 * been rendered already (a text cell's bytes depend on its index only). */
void tfsr_text_seek(struct tfsr_emit *em, uint64_t cell);

#endif
