/* Helpers of the sparse reader that other parts of the engine (and the
 * writer, through its own copy of the contract) need: Hilbert values of
 * cells (format/read.md §6) and the evaluator of delete conditions
 * (format/read.md §7 step 3, consolidated.md §6). Not installed.
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

/* ---- Hilbert values (read.md §6) ------------------------------------- */

/* Bits per dimension: 63 / dim_num (0 for dim_num = 0). */
unsigned tfs_hilbert_bits(unsigned dim_num);
/* Maps a numeric coordinate c of type `type` with domain [lo, hi] (values
 * of that type) to [0, 2^bits − 1] the way TileDB does, in double
 * precision. Out-of-domain or degenerate inputs are clamped, never UB. */
uint64_t tfs_hilbert_map_num(uint8_t type, const void *c, const void *lo,
			     const void *hi, unsigned bits);
/* Maps a string coordinate (first 8 bytes, x86 signed-char semantics). */
uint64_t tfs_hilbert_map_str(const uint8_t *s, uint64_t len, unsigned bits);
/* Hilbert index of the mapped coordinates x[0..dim_num−1] (Skilling's
 * transform as TileDB computes it). x is used as scratch and clobbered. */
uint64_t tfs_hilbert_index(uint64_t *x, unsigned dim_num, unsigned bits);

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

/* ---- The sparse reader ---------------------------------------------- */

struct tfs_query;

/* tfs_sparse_reader_open (tfs_read.h) with another cap on the candidate
 * cells of a piece of the selection, so tests can force many pieces. */
enum tfs_err tfs_sparse_reader_open_capped(struct tfs_query *q,
					   uint64_t piece_cells,
					   struct tfs_diag *d) TFS_WUR;

#endif
