/* CSV rows to cell batches (SPEC §6, "CSV into an array"): the header
 * names the columns (every dimension and every attribute except nullable
 * ones, any order), each row is parsed by the schema's datatypes into
 * column buffers, and every batch_rows rows the batch goes to a sink with
 * each cell tagged by its line number. Any bad field stops the whole file
 * with "FILE: line L, column C ('NAME'): why". Memory is the tokenizer's
 * block plus one batch, whatever the file's size. */
#include "ingest_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"
#include "tilefs/tilefs.h"

#define DEFAULT_BATCH_ROWS 65536

struct col {
	const char *name;
	bool is_dim;
	const struct tfs_dim *dim;   /* dimensions: domain checks */
	const struct tfs_attr *attr; /* attributes: fill value of nulls */
	uint8_t type;
	uint32_t cell_val_num;
	bool var, nullable;
	size_t csv_col;   /* 1-based field index, 0 = not in the file */
	size_t cell_size; /* fixed-size cells */
	bool fast;        /* one fixed-size number per cell */
	struct tfs_buf data, offsets, validity;
};

struct ingest {
	struct tfs__ingest_run *run;
	const struct tfs_schema *s;
	struct tfs__csv_lexer lx;
	char **header;         /* names as in the file (NUL-terminated) */
	size_t header_num;
	struct col *cols;      /* schema fields present in the batch */
	size_t col_num;
	struct tfs_column *batch_cols;
	uint64_t *tags;
	uint64_t batch_rows, rows_in_batch;
};

static void ingest_release(struct ingest *in)
{
	for (size_t i = 0; i < in->col_num; i++) {
		tfs_buf_release(&in->cols[i].data);
		tfs_buf_release(&in->cols[i].offsets);
		tfs_buf_release(&in->cols[i].validity);
	}
	for (size_t i = 0; i < in->header_num; i++)
		tfs_free(in->header[i]);
	tfs_free(in->header);
	tfs_free(in->cols);
	tfs_free(in->batch_cols);
	tfs_free(in->tags);
	tfs__csv_close(&in->lx);
}

static enum tfs_err nomem(struct ingest *in, struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", in->lx.name);
}

/* Reads the header and matches its names to the schema's fields. */
static enum tfs_err read_header(struct ingest *in, bool *empty,
				struct tfs_diag *d)
{
	const struct tfs_schema *s = in->s;
	struct tfs__csv_lexer *lx = &in->lx;
	bool got;
	enum tfs_err e;

	if ((e = tfs__csv_next(lx, &got, d)))
		return e;
	*empty = !got;
	if (!got)
		return TFS_E_OK;
	in->header_num = lx->field_num;
	in->header = tfs_callocn(in->header_num, sizeof(*in->header));
	in->cols = tfs_callocn((size_t)s->dim_num + s->attr_num, sizeof(*in->cols));
	if (!in->header || !in->cols)
		return nomem(in, d);
	for (size_t k = 0; k < in->header_num; k++) {
		const struct tfs__csv_field *f = &lx->fields[k];

		in->header[k] = tfs_strndup((const char *)f->p, f->len);
		if (!in->header[k])
			return nomem(in, d);
	}
	lx->col_names = (const char *const *)in->header;
	lx->col_num = in->header_num;
	/* Every schema field, with its column in the file. */
	for (uint32_t i = 0; i < s->dim_num + s->attr_num; i++) {
		bool is_dim = i < s->dim_num;
		struct col *c = &in->cols[in->col_num];

		memset(c, 0, sizeof(*c));
		if (is_dim) {
			const struct tfs_dim *dim = &s->dims[i];

			if (in->run->no_dims)
				continue;
			c->name = dim->name;
			c->is_dim = true;
			c->dim = dim;
			c->type = dim->type;
			c->cell_val_num = dim->cell_val_num;
			c->var = dim->var;
		} else {
			const struct tfs_attr *at = &s->attrs[i - s->dim_num];

			c->name = at->name;
			c->attr = at;
			c->type = at->type;
			c->cell_val_num = at->cell_val_num;
			c->var = at->var;
			c->nullable = at->nullable;
		}
		for (size_t k = 0; k < in->header_num; k++) {
			if (strcmp(in->header[k], c->name) != 0)
				continue;
			if (c->csv_col)
				return tfs__csv_fail(lx, d, TFS_E_INVALID, 1, k + 1,
						     "duplicate column");
			c->csv_col = k + 1;
		}
		if (!c->csv_col && !c->nullable)
			return tfs__csv_fail(lx, d, TFS_E_INVALID, 1, 0,
					     "missing column '%s' (%s)", c->name,
					     is_dim ? "a dimension"
						    : "an attribute that is not nullable");
		if (!c->csv_col)
			continue; /* a nullable attribute: null in every cell */
		c->cell_size = c->var ? 0
				      : tfs_datatype_size(c->type) * (size_t)c->cell_val_num;
		c->fast = !c->var && c->cell_val_num == 1 &&
			  tfs_datatype_class(c->type) != TFS_CLASS_STRING &&
			  tfs_datatype_class(c->type) != TFS_CLASS_BYTES;
		tfs_buf_init(&c->data, TFS_BUF_NO_MAX);
		tfs_buf_init(&c->offsets, TFS_BUF_NO_MAX);
		tfs_buf_init(&c->validity, TFS_BUF_NO_MAX);
		in->col_num++;
	}
	/* Names that are no field, or a field twice. */
	for (size_t k = 0; k < in->header_num; k++) {
		bool known = false;

		for (size_t i = 0; i < in->col_num; i++)
			if (in->cols[i].csv_col == k + 1)
				known = true;
		if (!known) {
			for (size_t j = 0; j < k; j++)
				if (strcmp(in->header[j], in->header[k]) == 0)
					return tfs__csv_fail(lx, d, TFS_E_INVALID, 1,
							     k + 1, "duplicate column");
			return tfs__csv_fail(lx, d, TFS_E_INVALID, 1, k + 1,
					     "no dimension or attribute of that name");
		}
	}
	in->batch_cols = tfs_callocn(in->col_num ? in->col_num : 1,
				     sizeof(*in->batch_cols));
	in->tags = tfs_callocn(in->batch_rows, sizeof(*in->tags));
	if (!in->batch_cols || !in->tags)
		return nomem(in, d);
	for (size_t i = 0; i < in->col_num; i++) {
		struct col *c = &in->cols[i];

		if ((c->fast && tfs_buf_reserve(&c->data, in->batch_rows * c->cell_size)) ||
		    (c->nullable && tfs_buf_reserve(&c->validity, in->batch_rows)) ||
		    (c->var && tfs_buf_reserve(&c->offsets,
					       (in->batch_rows + 1) * sizeof(uint64_t))))
			return nomem(in, d);
	}
	return TFS_E_OK;
}

/* A value of a fixed-size dimension as text, for messages. */
static void value_text(char *out, size_t cap, uint8_t type, const void *p)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
		snprintf(out, cap, "%" PRId64, tfs_value_as_i64(type, p));
		return;
	case TFS_CLASS_UNSIGNED:
		snprintf(out, cap, "%" PRIu64, tfs_value_as_u64(type, p));
		return;
	case TFS_CLASS_FLOAT:
		snprintf(out, cap, "%.17g", tfs_value_as_f64(type, p));
		return;
	default:
		snprintf(out, cap, "?");
		return;
	}
}

static enum tfs_err check_domain(struct ingest *in, const struct col *c,
				 const void *v, uint64_t line,
				 struct tfs_diag *d)
{
	const struct tfs_dim *dim = c->dim;
	char lo[48], hi[48];

	if (!dim->has_domain || dim->var)
		return TFS_E_OK;
	if (tfs_datatype_class(dim->type) == TFS_CLASS_FLOAT &&
	    isnan(tfs_value_as_f64(dim->type, v)))
		return tfs__csv_fail(&in->lx, d, TFS_E_INVALID, line, c->csv_col,
				     "NaN coordinate");
	if (tfs_value_cmp(dim->type, v, dim->domain[0]) >= 0 &&
	    tfs_value_cmp(dim->type, v, dim->domain[1]) <= 0)
		return TFS_E_OK;
	value_text(lo, sizeof(lo), dim->type, dim->domain[0]);
	value_text(hi, sizeof(hi), dim->type, dim->domain[1]);
	return tfs__csv_fail(&in->lx, d, TFS_E_RANGE, line, c->csv_col,
			     "coordinate outside the domain [%s, %s]", lo, hi);
}

static enum tfs_err parse_row(struct ingest *in, struct tfs_diag *d)
{
	struct tfs__csv_lexer *lx = &in->lx;
	uint64_t row = in->rows_in_batch;
	enum tfs_err e;

	if (lx->field_num != in->header_num) {
		size_t col = lx->field_num < in->header_num ? lx->field_num + 1
							    : in->header_num + 1;

		return tfs__csv_fail(lx, d, TFS_E_INVALID, lx->record_line, col,
				     "row has %zu fields, the header %zu",
				     lx->field_num, in->header_num);
	}
	for (size_t i = 0; i < in->col_num; i++) {
		struct col *c = &in->cols[i];
		const struct tfs__csv_field *f = &lx->fields[c->csv_col - 1];
		const char *why = NULL;
		bool null = c->nullable && !f->quoted && f->len == 0;

		if (c->nullable)
			in->cols[i].validity.data[row] = !null;
		if (c->var) {
			uint64_t off = c->data.len;

			memcpy(c->offsets.data + row * sizeof(uint64_t), &off, sizeof(off));
			if (null)
				continue;
			e = tfs__cell_parse(c->type, TFS_VAR_NUM, f->p, f->len, &c->data, &why);
		} else if (null) {
			if (c->fast) {
				memcpy(c->data.data + row * c->cell_size, c->attr->fill,
				       c->cell_size);
				continue;
			}
			if (tfs_buf_append(&c->data, c->attr->fill, c->cell_size))
				return nomem(in, d);
			continue;
		} else if (c->fast) {
			if (f->len == 0) {
				why = "empty value";
				e = TFS_E_INVALID;
			} else {
				e = tfs__value_parse(c->type, f->p, f->len,
						     c->data.data + row * c->cell_size, &why);
			}
			if (!e && c->is_dim)
				e = check_domain(in, c, c->data.data + row * c->cell_size,
						 f->line, d);
		} else {
			e = tfs__cell_parse(c->type, c->cell_val_num, f->p, f->len,
					    &c->data, &why);
		}
		if (e == TFS_E_NOMEM)
			return nomem(in, d);
		if (e && why)
			return tfs__csv_fail(lx, d, e, f->line, c->csv_col, "%s", why);
		if (e)
			return e;
	}
	in->tags[row] = lx->record_line;
	in->rows_in_batch++;
	return TFS_E_OK;
}

static enum tfs_err flush(struct ingest *in, const struct tfs__ingest_sink *sink,
			  struct tfs_diag *d)
{
	uint64_t n = in->rows_in_batch;
	struct tfs_batch b = {.cell_num = n, .column_num = in->col_num,
			      .columns = in->batch_cols};
	enum tfs_err e;

	if (n == 0)
		return TFS_E_OK;
	for (size_t i = 0; i < in->col_num; i++) {
		struct col *c = &in->cols[i];
		struct tfs_column *bc = &in->batch_cols[i];

		if (c->var) {
			uint64_t end = c->data.len;

			memcpy(c->offsets.data + n * sizeof(uint64_t), &end, sizeof(end));
		}
		*bc = (struct tfs_column){
			.name = c->name,
			.type = c->type,
			.cell_val_num = c->cell_val_num,
			.var = c->var,
			.nullable = c->nullable,
			.is_dim = c->is_dim,
			.data = c->data.data,
			.data_len = c->fast ? n * c->cell_size : c->data.len,
			.offsets = c->var ? (const uint64_t *)(const void *)c->offsets.data
					  : NULL,
			.validity = c->nullable ? c->validity.data : NULL,
		};
	}
	e = sink->append(sink->ctx, &b, in->tags, d);
	for (size_t i = 0; i < in->col_num; i++)
		if (!in->cols[i].fast)
			in->cols[i].data.len = 0;
	in->run->rows += n;
	in->rows_in_batch = 0;
	return e;
}

static void report(struct ingest *in)
{
	struct tfs__ingest_run *run = in->run;

	if (run->progress) {
		struct tfs_ingest_progress p = {
			.bytes_done = tfs__csv_offset(&in->lx),
			.bytes_total = in->lx.size,
			.rows = run->rows,
		};

		run->progress(&p, run->progress_arg);
	}
}

enum tfs_err tfs__ingest_run(struct tfs__ingest_run *run,
			     const struct tfs__ingest_sink *sink,
			     struct tfs_diag *d)
{
	struct ingest in = {.run = run, .s = run->schema};
	bool empty, got;
	enum tfs_err e;

	run->rows = 0;
	in.batch_rows = run->batch_rows ? run->batch_rows : DEFAULT_BATCH_ROWS;
	if ((e = tfs__csv_open(&in.lx, run->csv_path, run->display_name, run->block, d)))
		return e;
	if ((e = read_header(&in, &empty, d)) || empty)
		goto out;
	/* The fast columns' buffers hold batch_rows cells from here on. */
	for (size_t i = 0; i < in.col_num; i++)
		if (in.cols[i].fast)
			in.cols[i].data.len = in.batch_rows * in.cols[i].cell_size;
	for (;;) {
		if ((e = tfs__csv_next(&in.lx, &got, d)))
			goto out;
		if (!got)
			break;
		if ((e = parse_row(&in, d)))
			goto out;
		if (in.rows_in_batch == in.batch_rows) {
			if ((e = flush(&in, sink, d)))
				goto out;
			report(&in);
		}
	}
	if ((e = flush(&in, sink, d)))
		goto out;
	report(&in);
out:
	ingest_release(&in);
	return e;
}
