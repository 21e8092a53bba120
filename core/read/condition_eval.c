/* Evaluation of delete conditions on cells (format/read.md §7 step 3,
 * consolidated.md §6). A stored tree (already the negation of the user's
 * condition) is compiled once into a flat pre-order array whose value nodes
 * know their field by number, so evaluating a cell needs no name lookups.
 *
 * NULL semantics: a NULL cell (nullable field, validity 0) fails every
 * comparison except EQ against the NULL value (value_len 0); a NULL value
 * against a non-NULL cell gives EQ false and NE true. ALWAYS_TRUE and
 * ALWAYS_FALSE ignore the cell. Numbers compare by value in the field's
 * type (floats as IEEE values: NaN is unordered); strings, var-size and
 * multi-value cells compare bytewise, a proper prefix first. */
#include "tfs_sparse.h"

#include <inttypes.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"

/* Trees deeper than this are refused (evaluation recurses). */
#define COND_MAX_DEPTH 256
#define COND_MAX_NODES (UINT32_C(1) << 20)

struct cnode {
	const struct tfs_qc_node *src; /* borrowed from the parsed tree */
	uint32_t next;                 /* index after this node's subtree */
	uint32_t field;                /* value nodes: field number */
};

struct tfs_cond {
	struct cnode *nodes;
	uint32_t node_num;
	const char **names; /* borrowed from the tree */
	size_t name_num;
};

static bool op_known(uint8_t op)
{
	return op <= TFS_QC_NOT_IN || op == TFS_QC_ALWAYS_TRUE ||
	       op == TFS_QC_ALWAYS_FALSE;
}

static bool op_uses_field(uint8_t op)
{
	return op != TFS_QC_ALWAYS_TRUE && op != TFS_QC_ALWAYS_FALSE;
}

static enum tfs_err name_number(struct tfs_cond *c, const char *name,
				uint32_t *out, struct tfs_diag *d)
{
	const char **grown;

	for (size_t i = 0; i < c->name_num; i++) {
		if (strcmp(c->names[i], name) == 0) {
			*out = (uint32_t)i;
			return TFS_E_OK;
		}
	}
	grown = tfs_reallocn(c->names, c->name_num + 1, sizeof(*grown));
	if (!grown)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	c->names = grown;
	c->names[c->name_num] = name;
	*out = (uint32_t)c->name_num++;
	return TFS_E_OK;
}

static enum tfs_err check_set(const struct tfs_qc_node *n, struct tfs_diag *d)
{
	for (uint64_t i = 0; i < n->set_num; i++) {
		uint64_t end = i + 1 < n->set_num ? n->set_offsets[i + 1]
						  : n->value_len;

		if (n->set_offsets[i] > end || end > n->value_len)
			return tfs_fail(d, TFS_E_CORRUPT,
					"delete condition on '%s': set member %" PRIu64
					" has bad offset %" PRIu64,
					n->field, i, n->set_offsets[i]);
	}
	return TFS_E_OK;
}

/* Appends n and its subtree in pre-order. */
static enum tfs_err compile_node(struct tfs_cond *c,
				 const struct tfs_qc_node *n, unsigned depth,
				 size_t *cap, struct tfs_diag *d)
{
	uint32_t self;
	enum tfs_err e;

	if (depth > COND_MAX_DEPTH)
		return tfs_fail(d, TFS_E_CORRUPT,
				"delete condition nests deeper than %d levels",
				COND_MAX_DEPTH);
	if (c->node_num >= COND_MAX_NODES)
		return tfs_fail(d, TFS_E_CORRUPT,
				"delete condition has more than %" PRIu32
				" nodes", COND_MAX_NODES);
	if (tfs_grow(&c->nodes, cap, (size_t)c->node_num + 1,
		     sizeof(*c->nodes)))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	self = c->node_num++;
	c->nodes[self].src = n;
	c->nodes[self].field = 0;
	if (n->is_value) {
		if (!op_known(n->op))
			return tfs_fail(d, TFS_E_CORRUPT,
					"delete condition has unknown operator %u",
					n->op);
		if (op_uses_field(n->op)) {
			if (!n->field)
				return tfs_fail(d, TFS_E_CORRUPT,
						"delete condition node without a field");
			e = name_number(c, n->field, &c->nodes[self].field,
					d);
			if (e)
				return e;
		}
		if ((n->op == TFS_QC_IN || n->op == TFS_QC_NOT_IN) &&
		    (e = check_set(n, d)))
			return e;
		if (n->value_len && !n->value)
			return tfs_fail(d, TFS_E_CORRUPT,
					"delete condition value is missing");
	} else {
		if (n->combine > TFS_QC_NOT)
			return tfs_fail(d, TFS_E_CORRUPT,
					"delete condition has unknown combination %u",
					n->combine);
		if (n->combine == TFS_QC_NOT && n->child_num != 1)
			return tfs_fail(d, TFS_E_CORRUPT,
					"delete condition NOT has %" PRIu64
					" children", n->child_num);
		if (n->child_num && !n->children)
			return tfs_fail(d, TFS_E_CORRUPT,
					"delete condition children are missing");
		for (uint64_t i = 0; i < n->child_num; i++) {
			e = compile_node(c, &n->children[i], depth + 1, cap, d);
			if (e)
				return e;
		}
	}
	c->nodes[self].next = c->node_num;
	return TFS_E_OK;
}

enum tfs_err tfs_cond_compile(const struct tfs_qc_node *root,
			      struct tfs_cond **out, struct tfs_diag *d)
{
	struct tfs_cond *c;
	size_t cap = 0;
	enum tfs_err e;

	*out = NULL;
	c = tfs_callocn(1, sizeof(*c));
	if (!c)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = compile_node(c, root, 0, &cap, d);
	if (e) {
		tfs_cond_free(c);
		return e;
	}
	*out = c;
	return TFS_E_OK;
}

void tfs_cond_free(struct tfs_cond *c)
{
	if (!c)
		return;
	tfs_free(c->nodes);
	tfs_free(c->names);
	tfs_free(c);
}

size_t tfs_cond_field_count(const struct tfs_cond *c)
{
	return c->name_num;
}

const char *tfs_cond_field_name(const struct tfs_cond *c, size_t i)
{
	return i < c->name_num ? c->names[i] : NULL;
}

/* Single-value numbers compare by value; everything else bytewise. */
static bool field_numeric(const struct tfs_cond_field *f)
{
	enum tfs_type_class k = tfs_datatype_class(f->type);

	return !f->var && f->cell_val_num == 1 &&
	       (k == TFS_CLASS_SIGNED || k == TFS_CLASS_UNSIGNED ||
		k == TFS_CLASS_FLOAT);
}

enum tfs_err tfs_cond_check(const struct tfs_cond *c,
			    const struct tfs_cond_field *fields,
			    struct tfs_diag *d)
{
	for (uint32_t i = 0; i < c->node_num; i++) {
		const struct tfs_qc_node *n = c->nodes[i].src;
		const struct tfs_cond_field *f;
		size_t size;

		if (!n->is_value || !op_uses_field(n->op))
			continue;
		f = &fields[c->nodes[i].field];
		if (!tfs_datatype_valid(f->type))
			return tfs_fail(d, TFS_E_CORRUPT,
					"delete condition on '%s': field has bad type %u",
					n->field, f->type);
		if (!field_numeric(f))
			continue;
		size = tfs_datatype_size(f->type);
		if (n->op == TFS_QC_IN || n->op == TFS_QC_NOT_IN) {
			for (uint64_t k = 0; k < n->set_num; k++) {
				uint64_t end = k + 1 < n->set_num
						       ? n->set_offsets[k + 1]
						       : n->value_len;

				if (end - n->set_offsets[k] != size)
					return tfs_fail(d, TFS_E_CORRUPT,
							"delete condition on '%s': set member of %" PRIu64
							" bytes for a %s field",
							n->field,
							end - n->set_offsets[k],
							tfs_datatype_name(f->type));
			}
		} else if (n->value_len != 0 && n->value_len != size) {
			return tfs_fail(d, TFS_E_CORRUPT,
					"delete condition on '%s': value of %" PRIu64
					" bytes for a %s field",
					n->field, n->value_len,
					tfs_datatype_name(f->type));
		}
	}
	return TFS_E_OK;
}

/* Outcome of an ordered comparison op given the sign of cell − value
 * (unordered: NaN involved). */
static bool op_result(uint8_t op, int sign, bool unordered)
{
	if (unordered)
		return op == TFS_QC_NE || op == TFS_QC_NOT_IN;
	switch (op) {
	case TFS_QC_LT:
		return sign < 0;
	case TFS_QC_LE:
		return sign <= 0;
	case TFS_QC_GT:
		return sign > 0;
	case TFS_QC_GE:
		return sign >= 0;
	case TFS_QC_EQ:
	case TFS_QC_IN:
		return sign == 0;
	default: /* NE, NOT_IN */
		return sign != 0;
	}
}

/* Compares a cell with one value of the same field: sign of cell − value;
 * *unordered for NaN. len is only used by bytewise fields. */
static int compare(const struct tfs_cond_field *f, const uint8_t *cell,
		   uint64_t cell_len, const uint8_t *val, uint64_t val_len,
		   bool *unordered)
{
	*unordered = false;
	if (!field_numeric(f))
		return tfs_bytes_cmp(cell, (size_t)cell_len, val,
				     (size_t)val_len);
	switch (tfs_datatype_class(f->type)) {
	case TFS_CLASS_FLOAT: {
		double x = tfs_value_as_f64(f->type, cell);
		double y = tfs_value_as_f64(f->type, val);

		if (x != x || y != y) {
			*unordered = true;
			return 0;
		}
		return x < y ? -1 : x > y;
	}
	case TFS_CLASS_UNSIGNED: {
		uint64_t x = tfs_value_as_u64(f->type, cell);
		uint64_t y = tfs_value_as_u64(f->type, val);

		return x < y ? -1 : x > y;
	}
	default: {
		int64_t x = tfs_value_as_i64(f->type, cell);
		int64_t y = tfs_value_as_i64(f->type, val);

		return x < y ? -1 : x > y;
	}
	}
}

static bool eval_value(const struct tfs_qc_node *n,
		       const struct tfs_cond_field *f,
		       const struct tfs_cond_value *v)
{
	bool unordered, in;
	int sign;

	if (n->op == TFS_QC_ALWAYS_TRUE)
		return true;
	if (n->op == TFS_QC_ALWAYS_FALSE)
		return false;
	if (f->nullable && !v->valid)
		return n->op == TFS_QC_EQ && n->value_len == 0;
	if (n->op == TFS_QC_IN || n->op == TFS_QC_NOT_IN) {
		in = false;
		for (uint64_t k = 0; k < n->set_num && !in; k++) {
			uint64_t start = n->set_offsets[k];
			uint64_t end = k + 1 < n->set_num ? n->set_offsets[k + 1]
							  : n->value_len;

			/* A set of empty values may have no bytes at all. */
			sign = compare(f, v->p, v->len,
				       n->value ? n->value + start : n->value,
				       end - start, &unordered);
			in = !unordered && sign == 0;
		}
		return n->op == TFS_QC_IN ? in : !in;
	}
	if (n->value_len == 0) /* the NULL value, cell not NULL */
		return n->op == TFS_QC_NE;
	sign = compare(f, v->p, v->len, n->value, n->value_len, &unordered);
	return op_result(n->op, sign, unordered);
}

static bool eval_node(const struct tfs_cond *c, uint32_t i,
		      const struct tfs_cond_field *fields,
		      const struct tfs_cond_value *vals)
{
	const struct tfs_qc_node *n = c->nodes[i].src;
	uint32_t child = i + 1;

	if (n->is_value)
		return eval_value(n, &fields[c->nodes[i].field],
				  &vals[c->nodes[i].field]);
	switch (n->combine) {
	case TFS_QC_NOT:
		return !eval_node(c, child, fields, vals);
	case TFS_QC_AND:
		for (uint64_t k = 0; k < n->child_num; k++) {
			if (!eval_node(c, child, fields, vals))
				return false;
			child = c->nodes[child].next;
		}
		return true;
	default: /* OR */
		for (uint64_t k = 0; k < n->child_num; k++) {
			if (eval_node(c, child, fields, vals))
				return true;
			child = c->nodes[child].next;
		}
		return false;
	}
}

bool tfs_cond_eval(const struct tfs_cond *c,
		   const struct tfs_cond_field *fields,
		   const struct tfs_cond_value *vals)
{
	return c->node_num ? eval_node(c, 0, fields, vals) : true;
}

/* ---- Whether a range of cells can match (pushdown) ---------------------- */

static bool leaf_may_match(const struct tfs_qc_node *n,
			   const struct tfs_cond_field *f,
			   const struct tfs_cond_bounds *b)
{
	bool unordered;
	int lo, hi;

	if (n->op == TFS_QC_ALWAYS_TRUE)
		return true;
	if (n->op == TFS_QC_ALWAYS_FALSE)
		return false;
	if (!b->known || !field_numeric(f) || n->value_len == 0 ||
	    n->op == TFS_QC_NE || n->op == TFS_QC_NOT_IN)
		return true;
	if (b->empty) /* only NULL cells: no comparison matches */
		return false;
	if (n->op == TFS_QC_IN) {
		for (uint64_t k = 0; k < n->set_num; k++) {
			uint64_t s = n->set_offsets[k];
			uint64_t e = k + 1 < n->set_num ? n->set_offsets[k + 1]
							: n->value_len;

			lo = compare(f, b->lo, 0, n->value + s, e - s,
				     &unordered);
			if (unordered)
				return true;
			hi = compare(f, b->hi, 0, n->value + s, e - s,
				     &unordered);
			if (unordered || (lo <= 0 && hi >= 0))
				return true;
		}
		return false;
	}
	lo = compare(f, b->lo, 0, n->value, n->value_len, &unordered);
	if (unordered)
		return true;
	hi = compare(f, b->hi, 0, n->value, n->value_len, &unordered);
	if (unordered)
		return true;
	switch (n->op) {
	case TFS_QC_LT:
		return lo < 0;
	case TFS_QC_LE:
		return lo <= 0;
	case TFS_QC_GT:
		return hi > 0;
	case TFS_QC_GE:
		return hi >= 0;
	default: /* EQ */
		return lo <= 0 && hi >= 0;
	}
}

static bool node_may_match(const struct tfs_cond *c, uint32_t i,
			   const struct tfs_cond_field *fields,
			   const struct tfs_cond_bounds *bounds)
{
	const struct tfs_qc_node *n = c->nodes[i].src;
	uint32_t child = i + 1;

	if (n->is_value)
		return leaf_may_match(n, &fields[c->nodes[i].field],
				      &bounds[c->nodes[i].field]);
	switch (n->combine) {
	case TFS_QC_AND:
		for (uint64_t k = 0; k < n->child_num; k++) {
			if (!node_may_match(c, child, fields, bounds))
				return false;
			child = c->nodes[child].next;
		}
		return true;
	case TFS_QC_OR:
		for (uint64_t k = 0; k < n->child_num; k++) {
			if (node_may_match(c, child, fields, bounds))
				return true;
			child = c->nodes[child].next;
		}
		return false;
	default: /* NOT: bounds cannot tell */
		return true;
	}
}

bool tfs_cond_may_match(const struct tfs_cond *c,
			const struct tfs_cond_field *fields,
			const struct tfs_cond_bounds *bounds)
{
	return c->node_num ? node_may_match(c, 0, fields, bounds) : true;
}

const struct tfs_qc_node *tfs_cond_node(const struct tfs_cond *c, uint32_t i,
					uint32_t *field)
{
	if (i >= c->node_num)
		return NULL;
	*field = c->nodes[i].field;
	return c->nodes[i].src;
}
