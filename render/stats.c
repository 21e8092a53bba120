/* stats.json (stats.h): the core's statistics of an attribute
 * (tfs_query_stats) over a selection and a filter, as JSON. */
#include "stats.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_out.h"
#include "selection.h"
#include "tfs_render.h"
#include "tfs_alloc.h"
#include "value_text.h"
#include "where.h"

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

static i128 i128_of(int64_t hi, uint64_t lo)
{
	return (i128)(((u128)(uint64_t)hi << 64) | (u128)lo);
}

/* The decimal text of a 128-bit two's complement integer. */
static void i128_text(char *out, size_t cap, int64_t hi, uint64_t lo)
{
	i128 v = i128_of(hi, lo);
	u128 mag;
	char digits[48];
	size_t n = 0;
	bool neg;

	neg = v < 0;
	mag = neg ? -(u128)v : (u128)v;
	do {
		digits[n++] = (char)('0' + (int)(mag % 10));
		mag /= 10;
	} while (mag && n < sizeof(digits));
	if (cap == 0)
		return;
	{
		size_t k = 0;

		if (neg && k + 1 < cap)
			out[k++] = '-';
		while (n && k + 1 < cap)
			out[k++] = digits[--n];
		out[k] = '\0';
	}
}

/* One value of the attribute (min or max) as the JSON rendering writes
 * it. */
static enum tfs_err put_value(struct json_out *j, struct tfs_buf *tmp,
			      const struct tfs_field_info *f,
			      const struct tfs_enumeration *en,
			      const uint8_t *p, uint64_t len)
{
	uint64_t offs[2] = {0, len};
	struct tfs_column c = {
		.name = f->name,
		.type = f->type,
		.cell_val_num = f->cell_val_num,
		.var = f->var,
		.data = p,
		.data_len = len,
		.offsets = offs,
	};
	enum tfs_err e;

	tmp->len = 0;
	e = tfsr_cell_text(tmp, &c, 0, TFSR_TEXT_JSON, en);
	if (!e)
		json_out_value_text(j, (const char *)tmp->data, tmp->len);
	return e;
}

static void put_number(struct json_out *j, double v)
{
	if (isnan(v))
		json_out_cstr(j, "nan");
	else if (isinf(v))
		json_out_cstr(j, v < 0 ? "-inf" : "inf");
	else
		json_out_f64(j, v);
}

static enum tfs_err put_stats(struct json_out *j, struct tfs_buf *tmp,
			      const struct tfs_field_info *f,
			      const struct tfs_enumeration *en,
			      const struct tfs_field_stats *st)
{
	uint64_t n = st->count - st->null_count;
	enum tfs_err e = TFS_E_OK;
	char text[64];

	json_out_begin_object(j);
	json_out_key(j, "count");
	json_out_u64(j, st->count);
	json_out_key(j, "null_count");
	json_out_u64(j, st->null_count);
	json_out_key(j, "min");
	if (st->has_bounds)
		e = put_value(j, tmp, f, en, st->min, st->min_len);
	else
		json_out_null(j);
	json_out_key(j, "max");
	if (!e && st->has_bounds)
		e = put_value(j, tmp, f, en, st->max, st->max_len);
	else
		json_out_null(j);
	json_out_key(j, "sum");
	if (en || st->sum_kind == TFS_SUM_NONE) {
		json_out_null(j);
	} else if (st->sum_kind == TFS_SUM_INT) {
		i128_text(text, sizeof(text), st->sum_hi, st->sum_lo);
		json_out_value_text(j, text, strlen(text));
	} else {
		put_number(j, st->sum_f);
	}
	json_out_key(j, "mean");
	if (en || st->sum_kind == TFS_SUM_NONE || n == 0) {
		json_out_null(j);
	} else if (st->sum_kind == TFS_SUM_INT) {
		put_number(j,
			   (double)i128_of(st->sum_hi, st->sum_lo) / (double)n);
	} else {
		put_number(j, st->sum_f / (double)n);
	}
	json_out_end_object(j);
	return e;
}

/* The condition that keeps cells below the hi of string ranges given as
 * excluded ("a":"c"), with the user's filter, as one AND node over
 * borrowed parts. */
struct cond_and {
	struct tfs_where root;
	struct tfs_where kids[TFSR_MAX_DIMS + 1];
};

static const struct tfs_where *combine(struct cond_and *c,
				       const struct tfs_where *user,
				       const struct tfs_schema *s,
				       const struct tfsr_sel *sel)
{
	size_t n = 0;

	memset(c, 0, sizeof(*c));
	if (user)
		c->kids[n++] = *user;
	for (uint32_t k = 0; k < sel->dim_num && k < TFSR_MAX_DIMS; k++) {
		struct tfs_where *w;

		if (!sel->dims[k].hi_exclusive)
			continue;
		w = &c->kids[n++];
		w->op = TFS_WHERE_LT;
		w->field = (char *)tfs_schema_dim_name(s, k);
		w->value = (uint8_t *)sel->dims[k].range.hi;
		w->value_len = sel->dims[k].range.hi_len;
		w->value_num = 1;
	}
	if (n == 0)
		return NULL;
	if (n == 1)
		return &c->kids[0];
	c->root.op = TFS_WHERE_AND;
	c->root.children = c->kids;
	c->root.child_num = n;
	return &c->root;
}

/* The selection of the statistics (no step allowed), and its ranges in
 * sub. */
static enum tfs_err stats_selection(struct tfs_array *a, const char *sel,
				    size_t sel_len, struct tfsr_sel **parsed,
				    struct tfs_range *sub, struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	struct tfs_range ned[TFSR_MAX_DIMS];
	bool has_ned;
	enum tfs_err e;

	if (tfs_schema_dim_count(s) > TFSR_MAX_DIMS)
		return tfs_fail(d, TFS_E_UNSUPPORTED, "too many dimensions");
	has_ned = tfs_array_non_empty_domain(a, ned);
	e = tfsr_sel_parse(sel, sel_len, s, has_ned ? ned : NULL, parsed, d);
	if (e)
		return e;
	for (uint32_t k = 0; k < (*parsed)->dim_num; k++) {
		if ((*parsed)->dims[k].stride > 1) {
			tfsr_sel_free(*parsed);
			*parsed = NULL;
			return tfs_fail(d, TFS_E_INVALID,
					"range %u: statistics take no step",
					k + 1);
		}
		sub[k] = (*parsed)->dims[k].range;
	}
	return TFS_E_OK;
}

/* The statistics of field f over the selection (an empty one: none, of
 * the kind of sum the field has). */
static enum tfs_err field_stats(struct tfs_array *a,
				const struct tfs_field_info *f,
				struct cond_and *cand,
				const struct tfs_where *where,
				const struct tfsr_sel *parsed,
				const struct tfs_range *sub,
				struct tfs_field_stats *st, struct tfs_diag *d)
{
	const char *names[1] = {f->name};
	struct tfs_query_opts qo = {.fields = names, .field_num = 1};
	enum tfs_type_class k = tfs_datatype_class(f->type);

	if (!parsed->empty) {
		qo.condition = combine(cand, where, tfs_array_schema(a), parsed);
		qo.subarray = sub;
		return tfs_query_stats(a, &qo, st, d);
	}
	memset(st, 0, sizeof(*st));
	if (!f->var && f->cell_val_num == 1 &&
	    (k == TFS_CLASS_SIGNED || k == TFS_CLASS_UNSIGNED))
		st->sum_kind = TFS_SUM_INT;
	else if (!f->var && f->cell_val_num == 1 && k == TFS_CLASS_FLOAT)
		st->sum_kind = TFS_SUM_FLOAT;
	return TFS_E_OK;
}

enum tfs_err tfsr_doc_stats(struct tfs_buf *out, struct tfs_array *a, int field,
			    const char *sel, size_t sel_len,
			    const struct tfs_where *where, struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	struct tfs_range sub[TFSR_MAX_DIMS];
	struct tfsr_sel *parsed = NULL;
	struct cond_and *cand = NULL;
	struct tfs_buf tmp;
	struct json_out j;
	enum tfs_err e;
	uint32_t first, last;

	e = stats_selection(a, sel, sel_len, &parsed, sub, d);
	if (e)
		return e;
	cand = tfs_callocn(1, sizeof(*cand));
	if (!cand) {
		tfsr_sel_free(parsed);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	tfs_buf_init(&tmp, TFS_BUF_NO_MAX);
	json_out_init(&j, out);
	if (field < 0) {
		first = tfs_schema_dim_count(s);
		last = tfs_schema_field_count(s);
		json_out_begin_object(&j);
	} else {
		first = (uint32_t)field;
		last = first + 1;
	}
	for (uint32_t i = first; !e && i < last; i++) {
		struct tfs_field_info f;
		struct tfs_field_stats st;

		tfs_schema_field(s, (int)i, &f);
		if ((e = field_stats(a, &f, cand, where, parsed, sub, &st, d)))
			break;
		if (field < 0) {
			json_out_space(&j, "\n");
			json_out_key(&j, f.name);
		}
		e = put_stats(&j, &tmp, &f,
			      f.enumeration ? tfs_array_enumeration_named(
						      a, f.enumeration)
					    : NULL,
			      &st);
		tfs_field_stats_release(&st);
	}
	if (field < 0) {
		json_out_space(&j, "\n");
		json_out_end_object(&j);
	}
	if (!e)
		e = json_out_error(&j);
	if (!e)
		e = tfs_buf_append_u8(out, '\n');
	if (e && !d->code)
		tfs_fail(d, e, "cannot render the statistics");
	tfs_buf_release(&tmp);
	tfs_free(cand);
	tfsr_sel_free(parsed);
	return e;
}
