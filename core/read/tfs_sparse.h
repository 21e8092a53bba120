/* Helpers of the sparse reader: the evaluator of delete conditions
 * (format/read.md §7 step 3, consolidated.md §6). Hilbert values, which
 * the writer needs too, live in core/format (tfs_format.h). Not installed.
 *
 * Everything here is pure computation on caller-owned memory and is
 * thread-safe; a compiled condition is immutable and may be shared. */
#ifndef TFS_SPARSE_H
#define TFS_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"
#include "tfs_format.h"

/* ---- Delete conditions (read.md §7) ---------------------------------- */

/* Type of a field a condition refers to, as stored in the data being
 * tested (a fragment's own schema, or the current one for fill values). */
struct tfs_cond_field {
	uint8_t type;
	uint32_t cell_val_num; /* TFS_VAR_NUM for var-size */
	bool var;
	bool nullable;
};

/* One cell's value of a field: len bytes at p; valid = 0 means NULL. */
struct tfs_cond_value {
	const uint8_t *p;
	uint64_t len;
	bool valid;
};

struct tfs_cond;

/* Compiles a parsed condition tree: checks its shape (NOT has one child,
 * IN/NOT_IN set offsets increase inside the value, depth is bounded) and
 * numbers the distinct field names it mentions 0, 1, ... in first-seen
 * order. TFS_E_CORRUPT with a diagnostic for a malformed tree. *out is
 * NULL on failure. */
enum tfs_err tfs_cond_compile(const struct tfs_qc_node *root,
			      struct tfs_cond **out,
			      struct tfs_diag *d) TFS_WUR;
void tfs_cond_free(struct tfs_cond *c);
/* Distinct field names of c; valid until tfs_cond_free. */
size_t tfs_cond_field_count(const struct tfs_cond *c);
const char *tfs_cond_field_name(const struct tfs_cond *c, size_t i);
/* Checks that the node values fit the fields' types (one value of the
 * type for single-value numeric fields, whole values in IN sets). fields
 * has tfs_cond_field_count entries. */
enum tfs_err tfs_cond_check(const struct tfs_cond *c,
			    const struct tfs_cond_field *fields,
			    struct tfs_diag *d) TFS_WUR;
/* Evaluates c on one cell whose field values are vals (indexed like the
 * field names). fields must have passed tfs_cond_check. */
bool tfs_cond_eval(const struct tfs_cond *c,
		   const struct tfs_cond_field *fields,
		   const struct tfs_cond_value *vals);

/* What fragment metadata says about the cells of a tile (or a range of
 * tiles) for one field: known = lo/hi (values of the field's type) bound
 * every non-NULL cell; empty = every cell is NULL. */
struct tfs_cond_bounds {
	bool known;
	bool empty;
	const uint8_t *lo, *hi;
};

/* False only when no cell within bounds (indexed like the field names)
 * can match c: comparisons and IN on single-value numeric fields against
 * [lo, hi]; anything else may match. */
bool tfs_cond_may_match(const struct tfs_cond *c,
			const struct tfs_cond_field *fields,
			const struct tfs_cond_bounds *bounds);

/* Node i of c in pre-order (NULL past the end), *field its field
 * number. */
const struct tfs_qc_node *tfs_cond_node(const struct tfs_cond *c, uint32_t i,
					uint32_t *field);

/* ---- The sparse reader ---------------------------------------------- */

struct tfs_query;

/* tfs_sparse_reader_open (tfs_read.h) with another cap on the candidate
 * cells of a piece of the selection, so tests can force many pieces. */
enum tfs_err tfs_sparse_reader_open_capped(struct tfs_query *q,
					   uint64_t piece_cells,
					   struct tfs_diag *d) TFS_WUR;

#endif
