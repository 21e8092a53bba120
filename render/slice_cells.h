/* What slice.c (plans and streams) takes from slice_cells.c (the cells
 * of a slice), inside render/ only. */
#ifndef TFSR_SLICE_CELLS_H
#define TFSR_SLICE_CELLS_H

#include "slice.h"

/* The query of a sparse slice; from_key, to_key: only its cells of a
 * first coordinate from *from_key on, up to *to_key included (from_len,
 * to_len bytes), NULL: no bound. *q NULL: the selection is empty. */
enum tfs_err tfsr__sparse_open(const struct tfsr_slice *p,
			       struct tfs_array *src, const uint8_t *from_key,
			       size_t from_len, const uint8_t *to_key,
			       size_t to_len, struct tfs_query **q,
			       struct tfs_diag *d);
/* Adds a mark at the stream's cell and offset now, of key (len bytes). */
enum tfs_err tfsr__mark_push(struct tfsr_stream *st, const uint8_t *key,
			     uint64_t len) TFS_WUR;
/* A sparse batch's cells, all of them. */
enum tfs_err tfsr__emit_sparse_batch(struct tfsr_emit *em,
				     const struct tfs_batch *b);
/* The first n cells of a sparse batch, with the marks of the stream's
 * index in them when it is indexing. */
enum tfs_err tfsr__emit_sparse_first(struct tfsr_stream *st,
				     const struct tfs_batch *b, uint64_t n,
				     struct tfs_diag *d);
/* The cells of batch b before the first whose first coordinate is the
 * end key of a part that ends before it (st->end_before): their
 * number. */
uint64_t tfsr__sparse_before_end(const struct tfsr_stream *st,
				 const struct tfs_batch *b);

#endif
