/* Conditions of the public API (tilefs/tfs_where.h): freeing, copying, and
 * the translation into TileDB's query-condition tree (struct tfs_qc_node),
 * the form the evaluator of core/read compiles and delete commits store.
 *
 * The stored tree knows only comparisons, IN / NOT IN and AND / OR / NOT,
 * and a zero-length value there means NULL. So IS NULL is "= NULL", a
 * string compared with "" is rewritten on "\0" (only "" sorts before it),
 * STARTSWITH is a range [pre, next(pre)), and NOT is pushed down into the
 * leaves as TileDB negates a condition: flipped operators, De Morgan, so
 * NULL cells still fail every negated comparison. */
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_format.h"
#include "tfs_where.h"

static void release_where(struct tfs_where *c)
{
	tfs_free(c->field);
	tfs_free(c->value);
	tfs_free(c->offsets);
	for (size_t i = 0; c->children && i < c->child_num; i++)
		release_where(&c->children[i]);
	tfs_free(c->children);
}

void tfs_where_release(struct tfs_where *c)
{
	if (!c)
		return;
	release_where(c);
	memset(c, 0, sizeof(*c));
}

void tfs_where_free(struct tfs_where *c)
{
	tfs_where_release(c);
	tfs_free(c);
}

static enum tfs_err copy_where(struct tfs_where *dst,
			       const struct tfs_where *src, unsigned depth)
{
	memset(dst, 0, sizeof(*dst));
	dst->op = src->op;
	if (depth > TFS_WHERE_MAX_DEPTH)
		return TFS_E_INVALID;
	if (src->field && !(dst->field = tfs_strdup(src->field)))
		return TFS_E_NOMEM;
	if (src->value_len &&
	    !(dst->value = tfs_memdup(src->value, (size_t)src->value_len)))
		return TFS_E_NOMEM;
	dst->value_len = src->value_len;
	dst->value_num = src->value_num;
	if (src->offsets && src->value_num) {
		dst->offsets = tfs_mallocn((size_t)src->value_num,
					   sizeof(*dst->offsets));
		if (!dst->offsets)
			return TFS_E_NOMEM;
		memcpy(dst->offsets, src->offsets,
		       (size_t)src->value_num * sizeof(*dst->offsets));
	}
	if (src->child_num) {
		dst->children = tfs_callocn(src->child_num,
					    sizeof(*dst->children));
		if (!dst->children)
			return TFS_E_NOMEM;
		dst->child_num = src->child_num;
		for (size_t i = 0; i < src->child_num; i++) {
			enum tfs_err e = copy_where(&dst->children[i],
						    &src->children[i],
						    depth + 1);

			if (e)
				return e;
		}
	}
	return TFS_E_OK;
}

enum tfs_err tfs_where_clone(const struct tfs_where *src,
			     struct tfs_where **out)
{
	struct tfs_where *c = tfs_callocn(1, sizeof(*c));
	enum tfs_err e;

	*out = NULL;
	if (!c)
		return TFS_E_NOMEM;
	e = copy_where(c, src, 0);
	if (e) {
		tfs_where_free(c);
		return e;
	}
	*out = c;
	return TFS_E_OK;
}

/* ---- Translation into the stored tree ----------------------------------- */

static enum tfs_err qc_leaf(struct tfs_qc_node *n, uint8_t op,
			    const char *field, const uint8_t *value,
			    uint64_t len, struct tfs_diag *d)
{
	memset(n, 0, sizeof(*n));
	n->is_value = true;
	n->op = op;
	n->field = tfs_strdup(field ? field : "");
	if (!n->field)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if (len) {
		n->value = tfs_memdup(value, (size_t)len);
		if (!n->value)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	n->value_len = len;
	return TFS_E_OK;
}

static enum tfs_err qc_const(struct tfs_qc_node *n, bool value,
			     struct tfs_diag *d)
{
	return qc_leaf(n, value ? TFS_QC_ALWAYS_TRUE : TFS_QC_ALWAYS_FALSE,
		       NULL, NULL, 0, d);
}

static enum tfs_err qc_expr(struct tfs_qc_node *n, uint8_t combine,
			    size_t child_num, struct tfs_diag *d)
{
	memset(n, 0, sizeof(*n));
	n->combine = combine;
	n->children = tfs_callocn(child_num, sizeof(*n->children));
	if (!n->children)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	n->child_num = child_num;
	return TFS_E_OK;
}

static uint8_t flip(uint8_t op)
{
	static const uint8_t neg[] = {
		[TFS_QC_LT] = TFS_QC_GE, [TFS_QC_LE] = TFS_QC_GT,
		[TFS_QC_GT] = TFS_QC_LE, [TFS_QC_GE] = TFS_QC_LT,
		[TFS_QC_EQ] = TFS_QC_NE, [TFS_QC_NE] = TFS_QC_EQ,
		[TFS_QC_IN] = TFS_QC_NOT_IN, [TFS_QC_NOT_IN] = TFS_QC_IN,
	};

	return neg[op];
}

/* "field OP x" with x empty (bytes): the stored tree cannot say "" (it
 * would be NULL), so the comparison is rewritten on "\0", the one value
 * right after "" in byte order. */
static enum tfs_err qc_cmp_empty(struct tfs_qc_node *n, uint8_t op,
				 const char *field, struct tfs_diag *d)
{
	static const uint8_t zero = 0;

	switch (op) {
	case TFS_QC_LT: /* nothing is below "" */
		return qc_const(n, false, d);
	case TFS_QC_GE: /* every non-NULL cell */
		return qc_leaf(n, TFS_QC_NE, field, NULL, 0, d);
	case TFS_QC_LE:
	case TFS_QC_EQ: /* only "" */
		return qc_leaf(n, TFS_QC_LT, field, &zero, 1, d);
	default: /* GT, NE: anything else */
		return qc_leaf(n, TFS_QC_GE, field, &zero, 1, d);
	}
}

/* STARTSWITH pre (negated: its complement among non-NULL cells). */
static enum tfs_err qc_prefix(struct tfs_qc_node *n, const struct tfs_where *c,
			      bool negate, struct tfs_diag *d)
{
	uint64_t len = c->value_len;
	uint8_t *next;
	enum tfs_err e;

	if (len == 0)
		return negate ? qc_const(n, false, d)
			      : qc_leaf(n, TFS_QC_NE, c->field, NULL, 0, d);
	/* next: the shortest string above every string starting with pre. */
	while (len && c->value[len - 1] == 0xff)
		len--;
	if (len == 0)
		return qc_leaf(n, negate ? TFS_QC_LT : TFS_QC_GE, c->field,
			       c->value, c->value_len, d);
	if ((e = qc_expr(n, negate ? TFS_QC_OR : TFS_QC_AND, 2, d)))
		return e;
	if ((e = qc_leaf(&n->children[0], negate ? TFS_QC_LT : TFS_QC_GE,
			 c->field, c->value, c->value_len, d)) ||
	    (e = qc_leaf(&n->children[1], negate ? TFS_QC_GE : TFS_QC_LT,
			 c->field, c->value, len, d)))
		return e;
	next = n->children[1].value;
	next[len - 1]++;
	return TFS_E_OK;
}

static enum tfs_err qc_set(struct tfs_qc_node *n, const struct tfs_where *c,
			   bool negate, struct tfs_diag *d)
{
	bool in = (c->op == TFS_WHERE_IN) != negate;
	enum tfs_err e;

	if (c->value_num == 0) /* in (): nothing; not in (): non-NULL cells */
		return in ? qc_const(n, false, d)
			  : qc_leaf(n, TFS_QC_NE, c->field, NULL, 0, d);
	if (c->value_num > 1 && !c->offsets)
		return tfs_fail(d, TFS_E_INVALID,
				"condition on '%s': set without offsets",
				c->field);
	if ((e = qc_leaf(n, in ? TFS_QC_IN : TFS_QC_NOT_IN, c->field,
			 c->value, c->value_len, d)))
		return e;
	n->set_offsets = tfs_callocn((size_t)c->value_num,
				     sizeof(*n->set_offsets));
	if (!n->set_offsets)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	n->set_num = c->value_num;
	for (uint64_t k = 0; k < c->value_num; k++) {
		uint64_t off = c->offsets ? c->offsets[k] : 0;

		if (off > c->value_len || (k && off < n->set_offsets[k - 1]))
			return tfs_fail(d, TFS_E_INVALID,
					"condition on '%s': bad set offsets",
					c->field);
		n->set_offsets[k] = off;
	}
	return TFS_E_OK;
}

static enum tfs_err to_qc(struct tfs_qc_node *n, const struct tfs_where *c,
			  bool negate, unsigned depth, struct tfs_diag *d)
{
	uint8_t op;
	enum tfs_err e;

	memset(n, 0, sizeof(*n));
	if (depth > TFS_WHERE_MAX_DEPTH)
		return tfs_fail(d, TFS_E_INVALID,
				"condition nests deeper than %d levels",
				TFS_WHERE_MAX_DEPTH);
	if (tfs_where_is_leaf(c->op) && c->op != TFS_WHERE_TRUE &&
	    c->op != TFS_WHERE_FALSE && !c->field)
		return tfs_fail(d, TFS_E_INVALID, "condition without a field");
	if (c->value_len && !c->value)
		return tfs_fail(d, TFS_E_INVALID,
				"condition on '%s' without its value", c->field);
	switch (c->op) {
	case TFS_WHERE_LT:
	case TFS_WHERE_LE:
	case TFS_WHERE_GT:
	case TFS_WHERE_GE:
	case TFS_WHERE_EQ:
	case TFS_WHERE_NE:
		op = (uint8_t)(TFS_QC_LT + (c->op - TFS_WHERE_LT));
		if (negate)
			op = flip(op);
		if (c->value_len == 0)
			return qc_cmp_empty(n, op, c->field, d);
		return qc_leaf(n, op, c->field, c->value, c->value_len, d);
	case TFS_WHERE_IN:
	case TFS_WHERE_NOT_IN:
		return qc_set(n, c, negate, d);
	case TFS_WHERE_IS_NULL:
	case TFS_WHERE_IS_NOT_NULL:
		op = (c->op == TFS_WHERE_IS_NULL) != negate ? TFS_QC_EQ
							     : TFS_QC_NE;
		return qc_leaf(n, op, c->field, NULL, 0, d);
	case TFS_WHERE_STARTSWITH:
		return qc_prefix(n, c, negate, d);
	case TFS_WHERE_TRUE:
	case TFS_WHERE_FALSE:
		return qc_const(n, (c->op == TFS_WHERE_TRUE) != negate, d);
	case TFS_WHERE_NOT:
		if (c->child_num != 1 || !c->children)
			return tfs_fail(d, TFS_E_INVALID,
					"condition NOT with %zu children",
					c->child_num);
		return to_qc(n, &c->children[0], !negate, depth + 1, d);
	case TFS_WHERE_AND:
	case TFS_WHERE_OR:
		if (c->child_num == 0 || !c->children)
			return tfs_fail(d, TFS_E_INVALID,
					"condition AND/OR without children");
		if ((e = qc_expr(n, (c->op == TFS_WHERE_AND) != negate
					    ? TFS_QC_AND
					    : TFS_QC_OR,
				 c->child_num, d)))
			return e;
		for (size_t i = 0; i < c->child_num; i++)
			if ((e = to_qc(&n->children[i], &c->children[i], negate,
				       depth + 1, d)))
				return e;
		return TFS_E_OK;
	}
	return tfs_fail(d, TFS_E_INVALID, "condition has unknown operator %d",
			(int)c->op);
}

enum tfs_err tfs_where_to_qc(struct tfs_qc_node *out,
			     const struct tfs_where *c, struct tfs_diag *d)
{
	enum tfs_err e = to_qc(out, c, false, 0, d);

	if (e)
		tfs_condition_release(out);
	return e;
}

enum tfs_err tfs_where_serialize(struct tfs_buf *out,
				 const struct tfs_where *c, struct tfs_diag *d)
{
	struct tfs_qc_node n;
	enum tfs_err e;

	if ((e = tfs_where_to_qc(&n, c, d)))
		return e;
	e = tfs_condition_serialize(out, &n);
	tfs_condition_release(&n);
	if (e)
		return tfs_fail(d, e, "condition: %s", tfs_strerror(e));
	return TFS_E_OK;
}
