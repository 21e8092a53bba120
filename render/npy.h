/* The NumPy .npy format (version 1.0; 2.0 when the header needs it):
 * dtype descriptors for TileDB types and the padded header. */
#ifndef TFSR_NPY_H
#define TFSR_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_err.h"

/* Appends the descriptor of one value of a TileDB type as a Python
 * literal: '<i4', '|b1', '<M8[ms]', '|S12' (strings: cell_val_num bytes,
 * or width for var-size), '|V8' (blobs). Numeric cells of several values
 * append a subarray shape: '<f4', (3,). var-size numeric cells become
 * bytes of width. */
enum tfs_err tfsr_npy_descr(struct tfs_buf *out, uint8_t type,
			    uint32_t cell_val_num, uint64_t width) TFS_WUR;

/* True when a cell of this type and cell_val_num is a subarray (several
 * numbers) rather than one scalar or one string. */
bool tfsr_npy_is_subarray(uint8_t type, uint32_t cell_val_num);

/* Appends a complete header (magic, version, length, dict, padding to a
 * multiple of 64 bytes) for a C-order array of shape[ndim]; descr is the
 * descriptor literal (a plain or structured one). */
enum tfs_err tfsr_npy_header(struct tfs_buf *out, const char *descr,
			     const uint64_t *shape, size_t ndim) TFS_WUR;

/* The .npy renderer (tfs_render.h) of a slice: its header (a plain dtype
 * for one field, a structured one for several; widths give the fixed
 * width of var-size fields, strings as fixed-width of the longest, SPEC
 * §4; sparse_count the cells of a sparse slice) into sl->header, the
 * header at a stream's start (measured first when not known up front),
 * and the cells as records. */
struct tfsr_slice;
struct tfsr_emit;
struct tfsr_stream;
struct tfs_batch;
enum tfs_err tfsr_npy_slice_header(struct tfsr_slice *sl,
				   const uint64_t *widths,
				   uint64_t sparse_count) TFS_WUR;
enum tfs_err tfsr_npy_begin(struct tfsr_stream *st,
			    struct tfs_diag *d) TFS_WUR;
enum tfs_err tfsr_npy_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			    uint64_t first, uint64_t n) TFS_WUR;

#endif
