/* What slice.c (plans and streams) takes from slice_cells.c (the cells
 * of a slice), inside render/ only. */
#ifndef TFSR_SLICE_CELLS_H
#define TFSR_SLICE_CELLS_H

#include "slice.h"

/* The query of a sparse slice; from_key, to_key: only its cells of a
 * first coordinate from *from_key on, up to *to_key included (the
 * slice's key_size bytes), NULL: no bound. *q NULL: the selection is
 * empty. */
enum tfs_err tfsr__sparse_open(const struct tfsr_slice *p,
			       struct tfs_array *src, const uint8_t *from_key,
			       const uint8_t *to_key, struct tfs_query **q,
			       struct tfs_diag *d);
/* A sparse batch's cells, all of them. */
enum tfs_err tfsr__emit_sparse_batch(struct tfsr_emit *em,
				     const struct tfs_batch *b);
/* A sparse batch with the marks of the stream's index in it. */
enum tfs_err tfsr__emit_sparse_indexed(struct tfsr_stream *st,
				       const struct tfs_batch *b,
				       struct tfs_diag *d);

#endif
