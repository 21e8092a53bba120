/* Delete and update conditions (format/consolidated.md §6 "Delete (.del)
 * and update (.upd) commit files"): a query-condition tree in pre-order,
 * value leaves and combination nodes. Recursion depth and the total number
 * of nodes are bounded so a hostile file cannot exhaust the stack or
 * memory; every count is checked against the bytes left. */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

#define QC_NODE_VALUE 1u
#define QC_NODE_EXPR 0u
/* Smallest node encoding: an expression node (type, op, child count); a
 * value node needs at least 14 bytes. */
#define QC_EXPR_MIN_BYTES 10u

struct qc_parse {
	struct tfs__rd r;
	uint64_t nodes;
};

static bool op_valid(uint8_t op)
{
	return op <= TFS_QC_NOT_IN || op == TFS_QC_ALWAYS_TRUE ||
	       op == TFS_QC_ALWAYS_FALSE;
}

static enum tfs_err parse_node(struct qc_parse *q, struct tfs_qc_node *n,
			       unsigned depth);

static enum tfs_err parse_value(struct qc_parse *q, struct tfs_qc_node *n)
{
	struct tfs__rd *r = &q->r;
	uint32_t name_len;
	const uint8_t *p;
	enum tfs_err e;

	n->is_value = true;
	if ((e = tfs__u8(r, &n->op, "condition op")))
		return e;
	if (!op_valid(n->op))
		return tfs__bad(r, "invalid condition op %u at offset %zu",
				n->op, r->c.pos - 1);
	if ((e = tfs__u32(r, &name_len, "field name length")) ||
	    (e = tfs__str(r, name_len, &n->field, "field name")) ||
	    (e = tfs__u64(r, &n->value_len, "value length")) ||
	    (e = tfs__take(r, n->value_len, &p, "value")))
		return e;
	n->value = tfs_memdup(p, (size_t)n->value_len);
	if (!n->value)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	if (n->op != TFS_QC_IN && n->op != TFS_QC_NOT_IN)
		return TFS_E_OK;

	uint64_t off_len;

	if ((e = tfs__u64(r, &off_len, "set offsets length")))
		return e;
	if (off_len % 8)
		return tfs__bad(r, "set offsets length %llu is not a multiple "
				   "of 8",
				(unsigned long long)off_len);
	if ((e = tfs__take(r, off_len, &p, "set offsets")))
		return e;
	n->set_num = off_len / 8;
	n->set_offsets = tfs_mallocn((size_t)n->set_num, sizeof(uint64_t));
	if (!n->set_offsets)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < n->set_num; i++) {
		n->set_offsets[i] = tfs_get_u64(p + 8 * i);
		if (n->set_offsets[i] > n->value_len ||
		    (i && n->set_offsets[i] < n->set_offsets[i - 1]))
			return tfs__bad(r,
					"set member %llu of '%s' starts at %llu, "
					"out of order or past the %llu value "
					"bytes",
					(unsigned long long)i, n->field,
					(unsigned long long)n->set_offsets[i],
					(unsigned long long)n->value_len);
	}
	return TFS_E_OK;
}

static enum tfs_err parse_expr(struct qc_parse *q, struct tfs_qc_node *n,
			       unsigned depth)
{
	struct tfs__rd *r = &q->r;
	uint64_t count;
	enum tfs_err e;

	n->is_value = false;
	if ((e = tfs__u8(r, &n->combine, "combination op")))
		return e;
	if (n->combine > TFS_QC_NOT)
		return tfs__bad(r, "invalid combination op %u at offset %zu",
				n->combine, r->c.pos - 1);
	if ((e = tfs__u64(r, &count, "child count")))
		return e;
	if (count == 0 || (n->combine == TFS_QC_NOT && count != 1))
		return tfs__bad(r, "%s node with %llu children",
				n->combine == TFS_QC_NOT ? "NOT"
				: n->combine == TFS_QC_AND ? "AND"
							   : "OR",
				(unsigned long long)count);
	if (count > tfs_cur_left(&r->c) / QC_EXPR_MIN_BYTES ||
	    count > TFS_QC_MAX_NODES - q->nodes)
		return tfs__bad(r, "child count %llu is too large",
				(unsigned long long)count);
	n->children = tfs_callocn((size_t)count, sizeof(*n->children));
	if (!n->children)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < count; i++) {
		n->child_num++;
		if ((e = parse_node(q, &n->children[i], depth + 1)))
			return e;
	}
	return TFS_E_OK;
}

static enum tfs_err parse_node(struct qc_parse *q, struct tfs_qc_node *n,
			       unsigned depth)
{
	uint8_t type;
	enum tfs_err e;

	if (depth > TFS_QC_MAX_DEPTH)
		return tfs__bad(&q->r, "condition nested deeper than %d levels",
				TFS_QC_MAX_DEPTH);
	if (++q->nodes > TFS_QC_MAX_NODES)
		return tfs__bad(&q->r, "condition has more than %d nodes",
				TFS_QC_MAX_NODES);
	if ((e = tfs__u8(&q->r, &type, "node type")))
		return e;
	if (type == QC_NODE_VALUE)
		return parse_value(q, n);
	if (type == QC_NODE_EXPR)
		return parse_expr(q, n, depth);
	return tfs__bad(&q->r, "invalid node type %u at offset %zu", type,
			q->r.c.pos - 1);
}

enum tfs_err tfs_condition_parse(struct tfs_qc_node *out, const uint8_t *buf,
				 size_t len, size_t *consumed,
				 struct tfs_diag *d)
{
	struct qc_parse q;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	if (consumed)
		*consumed = 0;
	tfs__rd_init(&q.r, buf, len, "condition", d);
	q.nodes = 0;
	e = parse_node(&q, out, 1);
	if (!e && !consumed && tfs_cur_left(&q.r.c))
		e = tfs__bad(&q.r, "%zu trailing bytes", tfs_cur_left(&q.r.c));
	if (e) {
		tfs_condition_release(out);
		return e;
	}
	if (consumed)
		*consumed = q.r.c.pos;
	return TFS_E_OK;
}

static void release_node(struct tfs_qc_node *n)
{
	tfs_free(n->field);
	tfs_free(n->value);
	tfs_free(n->set_offsets);
	for (uint64_t i = 0; n->children && i < n->child_num; i++)
		release_node(&n->children[i]);
	tfs_free(n->children);
}

void tfs_condition_release(struct tfs_qc_node *n)
{
	if (!n)
		return;
	release_node(n);
	memset(n, 0, sizeof(*n));
}

static enum tfs_err put_node(struct tfs_buf *b, const struct tfs_qc_node *n,
			     unsigned depth)
{
	enum tfs_err e;

	if (depth > TFS_QC_MAX_DEPTH)
		return TFS_E_INVALID;
	if (n->is_value) {
		if ((e = tfs_buf_append_u8(b, QC_NODE_VALUE)) ||
		    (e = tfs_buf_append_u8(b, n->op)) ||
		    (e = tfs__put_str32(b, n->field)) ||
		    (e = tfs_buf_append_u64(b, n->value_len)) ||
		    (e = tfs_buf_append(b, n->value, (size_t)n->value_len)))
			return e;
		if (n->op != TFS_QC_IN && n->op != TFS_QC_NOT_IN)
			return TFS_E_OK;
		if ((e = tfs_buf_append_u64(b, n->set_num * 8)))
			return e;
		for (uint64_t i = 0; i < n->set_num; i++)
			if ((e = tfs_buf_append_u64(b, n->set_offsets[i])))
				return e;
		return TFS_E_OK;
	}
	if ((e = tfs_buf_append_u8(b, QC_NODE_EXPR)) ||
	    (e = tfs_buf_append_u8(b, n->combine)) ||
	    (e = tfs_buf_append_u64(b, n->child_num)))
		return e;
	for (uint64_t i = 0; i < n->child_num; i++)
		if ((e = put_node(b, &n->children[i], depth + 1)))
			return e;
	return TFS_E_OK;
}

enum tfs_err tfs_condition_serialize(struct tfs_buf *out,
				     const struct tfs_qc_node *n)
{
	size_t start = out->len;
	enum tfs_err e = put_node(out, n, 1);

	if (e)
		out->len = start;
	return e;
}

/* ---- update commits ------------------------------------------------------ */

/* Smallest update value: name length and value length. */
#define UPDATE_VALUE_MIN_BYTES 16u

static enum tfs_err parse_update_values(struct tfs__rd *r, struct tfs_update *u)
{
	uint64_t n;
	enum tfs_err e;

	if ((e = tfs__u64(r, &n, "update value count")))
		return e;
	if (n > tfs_cur_left(&r->c) / UPDATE_VALUE_MIN_BYTES)
		return tfs__bad(r, "update value count %llu does not fit",
				(unsigned long long)n);
	u->values = tfs_callocn((size_t)n, sizeof(*u->values));
	if (!u->values)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		struct tfs_update_value *v = &u->values[i];
		uint64_t name_len;
		const uint8_t *p;

		u->value_num++;
		if ((e = tfs__u64(r, &name_len, "update field name length")) ||
		    (e = tfs__str(r, name_len, &v->field, "update field name")) ||
		    (e = tfs__u64(r, &v->value_len, "update value length")) ||
		    (e = tfs__take(r, v->value_len, &p, "update value")))
			return e;
		v->value = tfs_memdup(p, (size_t)v->value_len);
		if (!v->value)
			return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	}
	if (tfs_cur_left(&r->c))
		return tfs__bad(r, "%zu trailing bytes", tfs_cur_left(&r->c));
	return TFS_E_OK;
}

enum tfs_err tfs_update_parse(struct tfs_update *out, const uint8_t *buf,
			      size_t len, struct tfs_diag *d)
{
	struct tfs__rd r;
	size_t used;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	e = tfs_condition_parse(&out->cond, buf, len, &used, d);
	if (e)
		return e;
	tfs__rd_init(&r, buf + used, len - used, "update values", d);
	e = parse_update_values(&r, out);
	if (e)
		tfs_update_release(out);
	return e;
}

enum tfs_err tfs_update_serialize(struct tfs_buf *out,
				  const struct tfs_update *u)
{
	size_t start = out->len;
	enum tfs_err e = tfs_condition_serialize(out, &u->cond);

	if (!e)
		e = tfs_buf_append_u64(out, u->value_num);
	for (uint64_t i = 0; !e && i < u->value_num; i++) {
		const struct tfs_update_value *v = &u->values[i];
		uint64_t n = v->field ? strlen(v->field) : 0;

		if ((e = tfs_buf_append_u64(out, n)) ||
		    (n && (e = tfs_buf_append(out, v->field, (size_t)n))) ||
		    (e = tfs_buf_append_u64(out, v->value_len)))
			break;
		if (v->value_len)
			e = tfs_buf_append(out, v->value, (size_t)v->value_len);
	}
	if (e)
		out->len = start;
	return e;
}

void tfs_update_release(struct tfs_update *u)
{
	if (!u)
		return;
	tfs_condition_release(&u->cond);
	for (uint64_t i = 0; u->values && i < u->value_num; i++) {
		tfs_free(u->values[i].field);
		tfs_free(u->values[i].value);
	}
	tfs_free(u->values);
	memset(u, 0, sizeof(*u));
}
