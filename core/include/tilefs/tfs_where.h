/* tilefs core: a condition on the cells of an array, the form a value
 * filter (`where[COND]`, `--where COND`) takes once parsed.
 *
 * A tree: leaves compare one field (dimension or attribute) with values
 * given as the bytes of the field's type (little-endian numbers; the bytes
 * of a string; an enumerated attribute's index, not its label), inner
 * nodes combine them with AND, OR and NOT. Semantics are TileDB's query
 * conditions: a NULL cell fails every comparison and IN/NOT IN, and only
 * IS NULL matches it; NOT negates its child the way TileDB negates a
 * condition (comparisons flip, NULL cells still fail them), so NOT (a > 1)
 * is a <= 1. Numbers compare by value in the field's type (NaN matches only
 * !=); strings, multi-value and var-size cells bytewise, a proper prefix
 * first.
 *
 * The read API takes one (tfs_query_opts.condition); core/format turns it
 * into TileDB's stored encoding for delete commits. A tree is plain data
 * owned by whoever built it; tfs_condition_free frees one built with the
 * functions below (tfs_alloc.h memory). */
#ifndef TFS_WHERE_H
#define TFS_WHERE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_err.h"

enum tfs_where_op {
	/* Leaves: field OP value (one value). */
	TFS_WHERE_LT,
	TFS_WHERE_LE,
	TFS_WHERE_GT,
	TFS_WHERE_GE,
	TFS_WHERE_EQ,
	TFS_WHERE_NE,
	/* Leaves: field among / not among value_num values. */
	TFS_WHERE_IN,
	TFS_WHERE_NOT_IN,
	/* Leaves without a value. */
	TFS_WHERE_IS_NULL,
	TFS_WHERE_IS_NOT_NULL,
	/* Leaf: the cell's bytes begin with the value's bytes. */
	TFS_WHERE_STARTSWITH,
	/* Inner nodes: AND / OR of child_num >= 1 children, NOT of one. */
	TFS_WHERE_AND,
	TFS_WHERE_OR,
	TFS_WHERE_NOT,
	/* Constant leaves (a label no enumeration value has, say). */
	TFS_WHERE_TRUE,
	TFS_WHERE_FALSE,
};

struct tfs_where {
	enum tfs_where_op op;
	/* Leaves: the field's name. */
	char *field;
	/* Leaves: value_num values packed in value (value_len bytes), value
	 * k at offsets[k] up to offsets[k + 1] (value_len for the last);
	 * offsets may be NULL when value_num <= 1. */
	uint8_t *value;
	uint64_t value_len;
	uint64_t *offsets;
	uint64_t value_num;
	/* Inner nodes. */
	struct tfs_where *children;
	size_t child_num;
};

/* Nesting deeper than this is refused by the parser and the reader. */
#define TFS_WHERE_MAX_DEPTH 64

static inline bool tfs_where_is_leaf(enum tfs_where_op op)
{
	return op != TFS_WHERE_AND && op != TFS_WHERE_OR && op != TFS_WHERE_NOT;
}

/* Bytes of value k of leaf c. */
static inline const uint8_t *tfs_where_value_at(const struct tfs_where *c,
					       uint64_t k, uint64_t *len)
{
	uint64_t start = c->offsets ? c->offsets[k] : 0;
	uint64_t end = k + 1 < c->value_num && c->offsets ? c->offsets[k + 1]
							  : c->value_len;

	*len = end - start;
	/* An empty value ("") may have no bytes at all. */
	return c->value ? c->value + start : c->value;
}

/* Frees what c holds (field, value, offsets, children, recursively), not c
 * itself; the struct is zeroed. NULL is fine. */
void tfs_where_release(struct tfs_where *c);
/* Frees a condition allocated on the heap and what it holds. */
void tfs_where_free(struct tfs_where *c);

/* Deep copy of src into *out (heap); *out NULL on failure. */
enum tfs_err tfs_where_clone(const struct tfs_where *src,
			     struct tfs_where **out) TFS_WUR;

/* Appends c in TileDB's stored encoding of a query condition (the
 * payload of a delete commit, format/consolidated.md §6): IS NULL / IS
 * NOT NULL become = / != with the NULL value, STARTSWITH a range, NOT is
 * pushed into the leaves (flipped operators, De Morgan), TRUE / FALSE the
 * constant operators. Fails with TFS_E_INVALID on a malformed tree. */
enum tfs_err tfs_where_serialize(struct tfs_buf *out,
				 const struct tfs_where *c,
				 struct tfs_diag *d) TFS_WUR;

#endif
