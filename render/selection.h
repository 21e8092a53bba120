/* The selection grammar of SPEC §3: the SEL of `slice[SEL].EXT`, parsed
 * against a schema into one inclusive range per dimension, the form the
 * engine's queries take.
 *
 *   SEL   := [RANGE ("," RANGE)*] [";stored"]
 *                                    fewer ranges than dimensions: ':'
 *   RANGE := V | [V] ":" [V] [":" STEP]
 *   V     := integer | float | ISO-8601 time (datetime dimensions)
 *          | string (quoted "..." with \" and \\, or bare)
 *
 * Ranges are half-open in the array's coordinates ([lo, hi)); a missing
 * end is the non-empty domain's; a single value selects itself. Strides
 * are for dense arrays (integer coordinates). A trailing ";stored" (sparse
 * arrays) asks for the cells in the order the array stores them rather
 * than sorted (tfs_query_opts.stored_order); a string value that ends in
 * ";stored" is quoted. */
#ifndef TFSR_SELECTION_H
#define TFSR_SELECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include <tilefs/tilefs.h>


struct tfsr_dim_sel {
	/* Inclusive bounds in the dimension's type, as queries take them
	 * (they point into this struct or into strings it owns). */
	struct tfs_range range;
	uint64_t stride; /* 1 unless lo:hi:step */
	uint64_t count;  /* integer dimensions: coordinates selected */
	/* String dimensions: range.hi was given and is excluded, so cells
	 * equal to it must be dropped from the inclusive query's result. */
	bool hi_exclusive;
	uint8_t lo_val[8], hi_val[8];
	uint8_t *lo_str, *hi_str;
};

struct tfsr_sel {
	uint32_t dim_num;
	bool empty; /* selects no cell */
	bool stored; /* ";stored": the array's stored order, not sorted */
	struct tfsr_dim_sel dims[];
};

/* Parses SEL (len bytes, not NUL-terminated) for schema s. ned is the
 * non-empty domain (dim_num ranges) or NULL when the array is empty; ':'
 * ends take its bounds (no cell when there is none). Errors are
 * TFS_E_INVALID with a message that says which range and why. */
enum tfs_err tfsr_sel_parse(const char *text, size_t len,
			    const struct tfs_schema *s,
			    const struct tfs_range *ned, struct tfsr_sel **out,
			    struct tfs_diag *d) TFS_WUR;
void tfsr_sel_free(struct tfsr_sel *sel);

/* Appends the SEL text that selects exactly the non-empty domain: "1:11"
 * for integers, "0.5:<next float after hi>" for floats, ':' for
 * strings. */
enum tfs_err tfsr_sel_format_ned(struct tfs_buf *out,
				 const struct tfs_schema *s,
				 const struct tfs_range *ned) TFS_WUR;

#endif
