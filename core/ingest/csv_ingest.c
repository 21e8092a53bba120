/* CSV rows to cell batches (SPEC §6, "CSV into an array"): the header
 * names the columns (every dimension and every attribute except nullable
 * ones, any order), each row is parsed by the schema's datatypes into
 * column buffers, and every batch_rows rows the batch goes to a sink with
 * each cell tagged by its line number. Enumerated attributes hold the
 * values of their enumeration as the reader shows them, looked up in a
 * hash index and stored as their indices (format/schema.md §5, §8). Any
 * bad field stops the whole file with "FILE: line L, column C ('NAME'):
 * why". Memory is the tokenizer's block plus two batches, whatever the
 * file's size: one is parsed into while a second thread hands the other
 * to the sink (the writer), so parsing and writing overlap. */
#include "ingest_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"
#include "tfs_mem.h"
#include "tilefs/tilefs.h"

#define DEFAULT_BATCH_ROWS 65536
/* A batch also ends once its variable-size and multi-value cells hold
 * this many bytes, so long strings cannot make a batch large. */
#define BATCH_BYTES ((size_t)32 << 20)

/* Integer cells are stored as the low bytes of a 64-bit pattern. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "little-endian hosts only");

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
	bool skip;        /* a dimension of a box write: not parsed */
	bool fast;        /* one fixed-size number per cell */
	uint8_t *null_fill; /* cell_size bytes a null fixed-size cell holds */
	/* Fast columns of integer types: parsed by tfs__int_parse with these
	 * limits; dimensions also check their domain as integers. */
	bool is_int, is_signed;
	uint64_t max_mag;
	bool dom_int;              /* domain checked below (integer dims) */
	int64_t dom_lo, dom_hi;    /* signed types */
	uint64_t udom_lo, udom_hi; /* unsigned types */
	/* Enumerated attributes whose integers the reader shows as values
	 * (integer, one per cell): a field is a value of en, stored as its
	 * index (is_signed, max_mag hold the attribute type's limits). */
	const struct tfs_enumeration *en;
	struct tfs_enum_index *enx;
	bool en_bytes;          /* string values: a field's bytes are the value */
	struct tfs_buf en_value; /* other types: the field parsed as a value */
	/* The fill value is no index of en: cells nobody wrote show it as a
	 * number, and that number stands for itself. */
	bool fill_free;
	/* A collecting run: the values en lacks go here. */
	struct tfs__enum_growth *grow;
	/* Per batch set (see struct ingest). */
	struct tfs_buf data[2], offsets[2], validity[2];
};

/* The thread that hands full batch sets to the sink, in order. */
struct handoff {
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool full[2];           /* protected by lock */
	bool done;              /* protected by lock: no more sets */
	enum tfs_err err;       /* protected by lock: the sink's first failure */
	struct tfs_diag diag;   /* written by the thread before err is set */
	const struct tfs__ingest_sink *sink;
	struct ingest *in;
};

struct ingest {
	struct tfs__ingest_run *run;
	const struct tfs_schema *s;
	struct tfs__csv_lexer lx;
	char **header;         /* names as in the file (NUL-terminated) */
	size_t header_num;
	struct col *cols;      /* schema fields present in the batch */
	size_t col_num;
	/* Two batch sets: cur is parsed into, the other may be with the
	 * sink. */
	unsigned cur;
	struct tfs_column *batch_cols[2];
	struct tfs_batch batch[2];
	uint64_t *tags[2];
	uint64_t batch_rows, rows_in_batch;
	bool has_slow;   /* a column appends its cells (not fast) */
	bool batch_full; /* BATCH_BYTES reached */
	struct handoff ho;
	/* Bytes of the lexer's buffer and of each batch set counted in the
	 * memory accountant (account). */
	uint64_t lx_charged, set_charged[2];
};

/* Counts what the parser holds, its lexer's buffer and batch set k, in
 * the memory accountant: a CSV copied into a mount is parsed in buffers
 * as large as the tiles it becomes. Set k is the parser's own while it is
 * counted (not with the sink). */
static void account(struct ingest *in, unsigned k)
{
	struct tfs_mem *m = tfs_mem_global();
	uint64_t now = in->tags[k] ? in->batch_rows * sizeof(*in->tags[k]) : 0;

	for (size_t i = 0; i < in->col_num; i++)
		now += in->cols[i].data[k].cap + in->cols[i].offsets[k].cap +
		       in->cols[i].validity[k].cap;
	if (now > in->set_charged[k])
		tfs_mem_charge_held(m, now - in->set_charged[k]);
	else
		tfs_mem_uncharge(m, in->set_charged[k] - now);
	in->set_charged[k] = now;
	if (in->lx.cap > in->lx_charged)
		tfs_mem_charge_held(m, in->lx.cap - in->lx_charged);
	else
		tfs_mem_uncharge(m, in->lx_charged - in->lx.cap);
	in->lx_charged = in->lx.cap;
}

static void ingest_release(struct ingest *in)
{
	tfs_mem_uncharge(tfs_mem_global(), in->lx_charged +
						   in->set_charged[0] +
						   in->set_charged[1]);
	for (size_t i = 0; i < in->col_num; i++) {
		tfs_free(in->cols[i].null_fill);
		tfs_enum_index_free(in->cols[i].enx);
		tfs_buf_release(&in->cols[i].en_value);
		for (unsigned k = 0; k < 2; k++) {
			tfs_buf_release(&in->cols[i].data[k]);
			tfs_buf_release(&in->cols[i].offsets[k]);
			tfs_buf_release(&in->cols[i].validity[k]);
		}
	}
	for (size_t i = 0; in->header && i < in->header_num; i++)
		tfs_free(in->header[i]);
	tfs_free(in->header);
	tfs_free(in->cols);
	for (unsigned k = 0; k < 2; k++) {
		tfs_free(in->batch_cols[k]);
		tfs_free(in->tags[k]);
	}
	tfs__csv_close(&in->lx);
}

static enum tfs_err nomem(struct ingest *in, struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", in->lx.name);
}

/* Makes c an enumerated column: its fields are looked up in the hash
 * index of its enumeration (the one the reader maps the attribute's
 * integers through, fs/value_text.c). Such columns take the general
 * path, so the fast one of plain numbers pays nothing for them. */
static enum tfs_err enum_setup(struct ingest *in, struct col *c,
			       struct tfs_diag *d)
{
	const struct tfs_attr *at = c->attr;
	size_t bits = 8 * c->cell_size;
	enum tfs_err e;

	for (size_t i = 0; i < in->run->enum_num && !c->en; i++)
		if (strcmp(in->run->enums[i].name, at->enumeration) == 0)
			c->en = &in->run->enums[i];
	if (!c->en)
		return tfs_fail(d, TFS_E_CORRUPT,
				"%s: attribute '%s': enumeration '%s' not loaded",
				in->lx.name, at->name, at->enumeration);
	if ((e = tfs_enum_index_new(c->en, NULL, &c->enx)))
		return e == TFS_E_NOMEM ? nomem(in, d)
					: tfs_fail(d, TFS_E_CORRUPT,
						   "%s: enumeration '%s': offsets out of order",
						   in->lx.name, c->en->name);
	if (in->run->grow)
		c->grow = &in->run->grow[c->en - in->run->enums];
	c->fast = c->is_int = false;
	c->en_bytes = tfs_datatype_class(c->en->type) == TFS_CLASS_STRING;
	tfs_buf_init(&c->en_value, TFS_BUF_NO_MAX);
	c->is_signed = tfs_datatype_class(c->type) == TFS_CLASS_SIGNED;
	c->max_mag = c->is_signed ? (UINT64_C(1) << (bits - 1)) - 1
		     : bits == 64 ? UINT64_MAX
				  : (UINT64_C(1) << bits) - 1;
	if (at->fill && at->fill_size >= c->cell_size) {
		if (c->is_signed) {
			int64_t v = tfs_value_as_i64(c->type, at->fill);

			c->fill_free = v < 0 || (uint64_t)v >= c->en->value_num;
		} else {
			c->fill_free = tfs_value_as_u64(c->type, at->fill) >= c->en->value_num;
		}
	}
	return TFS_E_OK;
}

/* The header's names, kept (NUL-terminated) for matching and messages. */
static enum tfs_err header_names(struct ingest *in, struct tfs_diag *d)
{
	struct tfs__csv_lexer *lx = &in->lx;
	const struct tfs_schema *s = in->s;

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
	return TFS_E_OK;
}

/* c as schema field i (dimension or attribute); false for a dimension
 * of a run without dimension columns. */
static bool col_of_field(struct ingest *in, struct col *c, uint32_t i)
{
	const struct tfs_schema *s = in->s;

	memset(c, 0, sizeof(*c));
	if (i < s->dim_num) {
		const struct tfs_dim *dim = &s->dims[i];

		if (in->run->no_dims)
			return false;
		c->name = dim->name;
		c->is_dim = true;
		c->skip = in->run->skip_dims;
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
	return true;
}

/* c's column in the file (csv_col, 0 = none: a nullable attribute). */
static enum tfs_err col_find(struct ingest *in, struct col *c,
			     struct tfs_diag *d)
{
	for (size_t k = 0; k < in->header_num; k++) {
		if (strcmp(in->header[k], c->name) != 0)
			continue;
		if (c->csv_col)
			return tfs__csv_fail(&in->lx, d, TFS_E_INVALID, 1, k + 1,
					     "duplicate column");
		c->csv_col = k + 1;
	}
	if (!c->csv_col && !c->nullable)
		return tfs__csv_fail(&in->lx, d, TFS_E_INVALID, 1, 0,
				     "missing column '%s' (%s)", c->name,
				     c->is_dim ? "a dimension"
					       : "an attribute that is not nullable");
	return TFS_E_OK;
}

/* How c's fields are parsed: the fast path of one fixed-size number per
 * cell (integers with their limits and, for dimensions, domain), the
 * enumeration's values, or the general path. */
static enum tfs_err col_kind(struct ingest *in, struct col *c,
			     struct tfs_diag *d)
{
	c->cell_size = c->var ? 0
			      : tfs_datatype_size(c->type) * (size_t)c->cell_val_num;
	c->fast = !c->skip && !c->var && c->cell_val_num == 1 &&
		  tfs_datatype_class(c->type) != TFS_CLASS_STRING &&
		  tfs_datatype_class(c->type) != TFS_CLASS_BYTES;
	if (c->fast && c->type != TFS_BOOL && tfs_datatype_is_integer(c->type) &&
	    !tfs_datatype_is_datetime(c->type)) {
		size_t bits = 8 * c->cell_size;

		c->is_int = true;
		c->is_signed = tfs_datatype_class(c->type) == TFS_CLASS_SIGNED;
		c->max_mag = c->is_signed ? (UINT64_C(1) << (bits - 1)) - 1
			     : bits == 64 ? UINT64_MAX
					  : (UINT64_C(1) << bits) - 1;
		if (c->is_dim && c->dim->has_domain) {
			c->dom_int = true;
			c->dom_lo = tfs_value_as_i64(c->type, c->dim->domain[0]);
			c->dom_hi = tfs_value_as_i64(c->type, c->dim->domain[1]);
			c->udom_lo = tfs_value_as_u64(c->type, c->dim->domain[0]);
			c->udom_hi = tfs_value_as_u64(c->type, c->dim->domain[1]);
		}
	}
	if (c->attr && c->attr->enumeration && !c->var && c->cell_val_num == 1 &&
	    tfs_datatype_is_integer(c->type)) {
		enum tfs_err e = enum_setup(in, c, d);

		if (e)
			return e;
	}
	if (in->run->grow && !c->en)
		c->skip = true;
	return TFS_E_OK;
}

/* The buffers of c, and the fill value its null cells take. */
static enum tfs_err col_buffers(struct ingest *in, struct col *c,
				struct tfs_diag *d)
{
	for (unsigned k = 0; k < 2; k++) {
		tfs_buf_init(&c->data[k], TFS_BUF_NO_MAX);
		tfs_buf_init(&c->offsets[k], TFS_BUF_NO_MAX);
		tfs_buf_init(&c->validity[k], TFS_BUF_NO_MAX);
	}
	if (c->nullable && !c->var) {
		const struct tfs_attr *at = c->attr;

		/* The fill value, or zeros if the schema's is short. */
		if (!(c->null_fill = tfs_callocn(1, c->cell_size)))
			return nomem(in, d);
		if (at->fill && at->fill_size >= c->cell_size)
			memcpy(c->null_fill, at->fill, c->cell_size);
	}
	return TFS_E_OK;
}

/* Names that are no field, or a field twice. */
static enum tfs_err header_unknown(struct ingest *in, struct tfs_diag *d)
{
	for (size_t k = 0; k < in->header_num; k++) {
		bool known = false;

		for (size_t i = 0; i < in->col_num; i++)
			if (in->cols[i].csv_col == k + 1)
				known = true;
		if (known)
			continue;
		for (size_t j = 0; j < k; j++)
			if (strcmp(in->header[j], in->header[k]) == 0)
				return tfs__csv_fail(&in->lx, d, TFS_E_INVALID, 1,
						     k + 1, "duplicate column");
		return tfs__csv_fail(&in->lx, d, TFS_E_INVALID, 1, k + 1,
				     "no dimension or attribute of that name");
	}
	return TFS_E_OK;
}

/* The two batch sets: column lists, tags, and the fixed-size buffers
 * rows are parsed into in place. */
static enum tfs_err batch_buffers(struct ingest *in, struct tfs_diag *d)
{
	for (unsigned k = 0; k < 2; k++) {
		in->batch_cols[k] = tfs_callocn(in->col_num ? in->col_num : 1,
						sizeof(*in->batch_cols[k]));
		in->tags[k] = tfs_callocn(in->batch_rows, sizeof(*in->tags[k]));
		if (!in->batch_cols[k] || !in->tags[k])
			return nomem(in, d);
		for (size_t i = 0; i < in->col_num; i++) {
			struct col *c = &in->cols[i];

			if ((c->fast && tfs_buf_setlen(&c->data[k],
						       in->batch_rows * c->cell_size)) ||
			    (c->nullable && tfs_buf_setlen(&c->validity[k], in->batch_rows)) ||
			    (c->var && tfs_buf_setlen(&c->offsets[k], (in->batch_rows + 1) *
									 sizeof(uint64_t))))
				return nomem(in, d);
		}
	}
	return TFS_E_OK;
}

/* Reads the header and matches its names to the schema's fields. */
static enum tfs_err read_header(struct ingest *in, bool *empty,
				struct tfs_diag *d)
{
	const struct tfs_schema *s = in->s;
	bool got;
	enum tfs_err e;

	if ((e = tfs__csv_next(&in->lx, &got, d)))
		return e;
	*empty = !got;
	if (!got)
		return TFS_E_OK;
	if ((e = header_names(in, d)))
		return e;
	/* Every schema field, with its column in the file. */
	for (uint32_t i = 0; i < s->dim_num + s->attr_num; i++) {
		struct col *c = &in->cols[in->col_num];

		if (!col_of_field(in, c, i))
			continue;
		if ((e = col_find(in, c, d)))
			return e;
		if (!c->csv_col)
			continue; /* a nullable attribute: null in every cell */
		if ((e = col_kind(in, c, d)))
			return e;
		in->has_slow |= !c->fast && !c->skip;
		in->col_num++;
		if ((e = col_buffers(in, c, d)))
			return e;
	}
	if ((e = header_unknown(in, d)))
		return e;
	return batch_buffers(in, d);
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

/* The key of one field of an enumerated column: *v the value's index
 * (in en, then among the values a collecting run found), or the fill
 * value where that is no index (fill_free) and the field is its number;
 * *known false when it is neither. c->en_value then holds the field as
 * a value of en (types other than strings). */
static enum tfs_err enum_key(struct ingest *in, struct col *c,
			     const struct tfs__csv_field *f, uint64_t *v,
			     bool *known, const char **why, struct tfs_diag *d)
{
	const uint8_t *p = f->p;
	size_t len = f->len;
	uint64_t idx = UINT64_MAX, k;
	const char *fill_why;
	char shown[64];
	enum tfs_err e = TFS_E_OK;

	*known = true;
	*why = NULL;
	if (!c->en_bytes) {
		c->en_value.len = 0;
		e = tfs__cell_parse(c->en->type, c->en->cell_val_num, f->p, f->len,
				    &c->en_value, why);
		if (e == TFS_E_NOMEM)
			return nomem(in, d);
		p = c->en_value.data;
		len = c->en_value.len;
	}
	/* A field that is no value of the type is no value of en either. */
	if (c->en_bytes || !e) {
		idx = tfs_enum_index_find(c->enx, p, len);
		if (idx == UINT64_MAX && c->grow &&
		    tfs__enum_growth_find(c->grow, p, len, &k))
			idx = c->en->value_num + k;
	}
	if (idx != UINT64_MAX) {
		if (idx > c->max_mag)
			return tfs__csv_fail(&in->lx, d, TFS_E_RANGE, f->line, c->csv_col,
					     "'%s' is value %" PRIu64 " of the enumeration '%s', "
					     "past what %s holds",
					     tfs__msg_text(shown, sizeof(shown), f->p, f->len),
					     idx, c->en->name, tfs_datatype_name(c->type));
		*v = idx;
		return TFS_E_OK;
	}
	*known = c->fill_free && f->len &&
		 !tfs__int_parse(f->p, f->len, c->is_signed, c->max_mag, v, &fill_why) &&
		 memcmp(v, c->attr->fill, c->cell_size) == 0;
	if (!e)
		*why = NULL;
	return TFS_E_OK;
}

/* One field of an enumerated column into the batch; a field that is no
 * value of the enumeration refuses the file naming it. */
static enum tfs_err enum_cell(struct ingest *in, struct col *c,
			      const struct tfs__csv_field *f, unsigned k,
			      struct tfs_diag *d)
{
	uint64_t v = 0;
	bool known;
	const char *why;
	char shown[64];
	enum tfs_err e;

	if ((e = enum_key(in, c, f, &v, &known, &why, d)))
		return e;
	if (!known)
		return tfs__csv_fail(&in->lx, d, TFS_E_INVALID, f->line, c->csv_col,
				     "'%s' is not a value of the enumeration '%s'",
				     tfs__msg_text(shown, sizeof(shown), f->p, f->len),
				     c->en->name);
	/* Little-endian: the low bytes of the pattern. */
	if (tfs_buf_append(&c->data[k], &v, c->cell_size))
		return nomem(in, d);
	return TFS_E_OK;
}

/* A collecting run's field: a value the enumeration lacks is added to its
 * growth, unless the enumeration is ordered (where a new value has no
 * place) or the attribute's type could not index one more value
 * (TileDB's rule: fewer values than the type's largest number). */
static enum tfs_err enum_collect(struct ingest *in, struct col *c,
				 const struct tfs__csv_field *f,
				 struct tfs_diag *d)
{
	uint64_t v, count;
	bool known;
	const char *why;
	char shown[64];
	enum tfs_err e;

	if ((e = enum_key(in, c, f, &v, &known, &why, d)) || known)
		return e;
	tfs__msg_text(shown, sizeof(shown), f->p, f->len);
	if (why)
		return tfs__csv_fail(&in->lx, d, TFS_E_INVALID, f->line, c->csv_col,
				     "'%s' is not a value of the enumeration '%s' "
				     "(%s: %s)",
				     shown, c->en->name,
				     tfs_datatype_name(c->en->type), why);
	if (c->en->ordered)
		return tfs__csv_fail(&in->lx, d, TFS_E_INVALID, f->line, c->csv_col,
				     "'%s' is not a value of the enumeration '%s', "
				     "which is ordered: new values are not added to it",
				     shown, c->en->name);
	count = c->en->value_num + c->grow->num + 1;
	if (count >= c->max_mag)
		return tfs__csv_fail(&in->lx, d, TFS_E_RANGE, f->line, c->csv_col,
				     "'%s' is not a value of the enumeration '%s', "
				     "which is full: %s indexes fewer than %" PRIu64
				     " values",
				     shown, c->en->name, tfs_datatype_name(c->type),
				     c->max_mag);
	if (c->en_bytes)
		e = tfs__enum_growth_add(c->grow, f->p, f->len);
	else
		e = tfs__enum_growth_add(c->grow, c->en_value.data, c->en_value.len);
	return e ? nomem(in, d) : TFS_E_OK;
}

/* A collecting run's row: its enumerated fields only. */
static enum tfs_err collect_row(struct ingest *in, struct tfs_diag *d)
{
	struct tfs__csv_lexer *lx = &in->lx;
	enum tfs_err e;

	if (lx->field_num != in->header_num)
		return tfs__csv_fail(lx, d, TFS_E_INVALID, lx->record_line,
				     lx->field_num < in->header_num ? lx->field_num + 1
								    : in->header_num + 1,
				     "row has %zu fields, the header %zu",
				     lx->field_num, in->header_num);
	for (size_t i = 0; i < in->col_num; i++) {
		struct col *c = &in->cols[i];
		const struct tfs__csv_field *f = &lx->fields[c->csv_col - 1];

		if (c->skip || (c->nullable && !f->quoted && f->len == 0))
			continue;
		if ((e = enum_collect(in, c, f, d)))
			return e;
	}
	return TFS_E_OK;
}

/* An integer field of a fast column, into its place in the batch, with
 * the domain checked for dimensions. */
static enum tfs_err int_cell(struct ingest *in, struct col *c,
			     const struct tfs__csv_field *f, uint8_t *dst,
			     const char **why, struct tfs_diag *d)
{
	uint64_t v;
	enum tfs_err e;

	if (f->len == 0) {
		*why = "empty value";
		return TFS_E_INVALID;
	}
	if ((e = tfs__int_parse(f->p, f->len, c->is_signed, c->max_mag, &v, why)))
		return e;
	/* Little-endian: the low bytes of the pattern. */
	memcpy(dst, &v, c->cell_size);
	if (c->dom_int &&
	    (c->is_signed ? (int64_t)v < c->dom_lo || (int64_t)v > c->dom_hi
			  : v < c->udom_lo || v > c->udom_hi))
		return check_domain(in, c, dst, f->line, d);
	return TFS_E_OK;
}

/* One field of column c into batch set k at row; a null field takes the
 * fill value (fixed-size) or no bytes (var-size). *why: the reason of a
 * bad value, for the caller's message. */
static enum tfs_err parse_field(struct ingest *in, struct col *c,
				const struct tfs__csv_field *f, unsigned k,
				uint64_t row, const char **why,
				struct tfs_diag *d)
{
	bool null = c->nullable && !f->quoted && f->len == 0;
	enum tfs_err e;

	if (c->nullable)
		c->validity[k].data[row] = !null;
	if (c->var) {
		uint64_t off = c->data[k].len;

		memcpy(c->offsets[k].data + row * sizeof(uint64_t), &off, sizeof(off));
		if (null)
			return TFS_E_OK;
		return tfs__cell_parse(c->type, TFS_VAR_NUM, f->p, f->len, &c->data[k], why);
	}
	if (null) {
		if (c->fast) {
			memcpy(c->data[k].data + row * c->cell_size, c->null_fill,
			       c->cell_size);
			return TFS_E_OK;
		}
		return tfs_buf_append(&c->data[k], c->null_fill, c->cell_size)
			       ? TFS_E_NOMEM
			       : TFS_E_OK;
	}
	if (c->is_int)
		return int_cell(in, c, f, c->data[k].data + row * c->cell_size, why, d);
	if (c->fast) {
		uint8_t *dst = c->data[k].data + row * c->cell_size;

		if (f->len == 0) {
			*why = "empty value";
			return TFS_E_INVALID;
		}
		if ((e = tfs__value_parse(c->type, f->p, f->len, dst, why)))
			return e;
		return c->is_dim ? check_domain(in, c, dst, f->line, d) : TFS_E_OK;
	}
	if (c->en)
		return enum_cell(in, c, f, k, d);
	return tfs__cell_parse(c->type, c->cell_val_num, f->p, f->len, &c->data[k],
			       why);
}

static enum tfs_err parse_row(struct ingest *in, struct tfs_diag *d)
{
	struct tfs__csv_lexer *lx = &in->lx;
	uint64_t row = in->rows_in_batch;
	unsigned k = in->cur;
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

		if (c->skip)
			continue;
		e = parse_field(in, c, f, k, row, &why, d);
		if (e == TFS_E_NOMEM)
			return nomem(in, d);
		if (e && why)
			return tfs__csv_fail(lx, d, e, f->line, c->csv_col, "%s", why);
		if (e)
			return e;
	}
	in->tags[k][row] = lx->record_line;
	in->rows_in_batch++;
	if (in->has_slow) {
		size_t bytes = 0;

		for (size_t i = 0; i < in->col_num; i++)
			if (!in->cols[i].fast)
				bytes += in->cols[i].data[k].len;
		in->batch_full = bytes >= BATCH_BYTES;
	}
	return TFS_E_OK;
}

/* Hands full sets to the sink until told there are no more; after a
 * failure it only frees the sets, so the parser never waits forever. */
static void *handoff_main(void *arg)
{
	struct handoff *ho = arg;
	struct ingest *in = ho->in;
	unsigned k = 0;
	enum tfs_err e = TFS_E_OK;

	tfs_diag_init(&ho->diag);
	for (;;) {
		pthread_mutex_lock(&ho->lock);
		while (!ho->full[k] && !ho->done)
			pthread_cond_wait(&ho->cond, &ho->lock);
		if (!ho->full[k]) {
			pthread_mutex_unlock(&ho->lock);
			return NULL;
		}
		pthread_mutex_unlock(&ho->lock);
		if (!e)
			e = ho->sink->append(ho->sink->ctx, &in->batch[k], in->tags[k],
					     &ho->diag);
		pthread_mutex_lock(&ho->lock);
		if (e && !ho->err)
			ho->err = e;
		ho->full[k] = false;
		pthread_cond_broadcast(&ho->cond);
		pthread_mutex_unlock(&ho->lock);
		k ^= 1;
	}
}

static enum tfs_err handoff_start(struct ingest *in,
				  const struct tfs__ingest_sink *sink)
{
	struct handoff *ho = &in->ho;

	ho->sink = sink;
	ho->in = in;
	if (pthread_mutex_init(&ho->lock, NULL))
		return TFS_E_NOMEM;
	if (pthread_cond_init(&ho->cond, NULL)) {
		pthread_mutex_destroy(&ho->lock);
		return TFS_E_NOMEM;
	}
	if (pthread_create(&ho->thread, NULL, handoff_main, ho)) {
		pthread_cond_destroy(&ho->cond);
		pthread_mutex_destroy(&ho->lock);
		return TFS_E_NOMEM;
	}
	ho->started = true;
	return TFS_E_OK;
}

/* Waits for the sink to finish every set and stops the thread; returns
 * the sink's failure, if any, with its message. */
static enum tfs_err handoff_stop(struct ingest *in, struct tfs_diag *d)
{
	struct handoff *ho = &in->ho;
	enum tfs_err e;

	if (!ho->started)
		return TFS_E_OK;
	pthread_mutex_lock(&ho->lock);
	ho->done = true;
	pthread_cond_broadcast(&ho->cond);
	pthread_mutex_unlock(&ho->lock);
	pthread_join(ho->thread, NULL);
	pthread_cond_destroy(&ho->cond);
	pthread_mutex_destroy(&ho->lock);
	ho->started = false;
	e = ho->err;
	if (e)
		return tfs_fail(d, e, "%s", tfs_diag_msg(&ho->diag));
	return TFS_E_OK;
}

/* Gives the current set to the sink thread and continues in the other
 * once the sink is done with it. */
static enum tfs_err flush(struct ingest *in, struct tfs_diag *d)
{
	struct handoff *ho = &in->ho;
	uint64_t n = in->rows_in_batch;
	unsigned k = in->cur;
	size_t j = 0;
	enum tfs_err e;

	if (n == 0)
		return TFS_E_OK;
	account(in, k);
	for (size_t i = 0; i < in->col_num; i++) {
		struct col *c = &in->cols[i];
		struct tfs_column *bc = &in->batch_cols[k][j];

		if (c->skip)
			continue;
		j++;

		if (c->var) {
			uint64_t end = c->data[k].len;

			memcpy(c->offsets[k].data + n * sizeof(uint64_t), &end, sizeof(end));
		}
		*bc = (struct tfs_column){
			.name = c->name,
			.type = c->type,
			.cell_val_num = c->cell_val_num,
			.var = c->var,
			.nullable = c->nullable,
			.is_dim = c->is_dim,
			.data = c->data[k].data,
			.data_len = c->fast ? n * c->cell_size : c->data[k].len,
			.offsets = c->var ? (const uint64_t *)(const void *)c->offsets[k].data
					  : NULL,
			.validity = c->nullable ? c->validity[k].data : NULL,
		};
	}
	in->batch[k] = (struct tfs_batch){.cell_num = n, .column_num = j,
					  .columns = in->batch_cols[k]};
	in->run->rows += n;
	in->rows_in_batch = 0;
	in->batch_full = false;
	pthread_mutex_lock(&ho->lock);
	ho->full[k] = true;
	pthread_cond_broadcast(&ho->cond);
	k ^= 1;
	while (ho->full[k])
		pthread_cond_wait(&ho->cond, &ho->lock);
	e = ho->err;
	pthread_mutex_unlock(&ho->lock);
	if (e)
		return handoff_stop(in, d);
	in->cur = k;
	for (size_t i = 0; i < in->col_num; i++)
		if (!in->cols[i].fast)
			in->cols[i].data[k].len = 0;
	return TFS_E_OK;
}

static void report(struct ingest *in)
{
	struct tfs__ingest_run *run = in->run;

	if (run->progress) {
		struct tfs_ingest_progress p = {
			.bytes_done = tfs__csv_offset(&in->lx),
			.bytes_total = in->lx.size,
			.rows = run->rows,
			.pass = run->pass ? run->pass : 1,
			.passes = run->passes ? run->passes : 1,
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
	enum tfs_err e = TFS_E_OK, e2;

	run->rows = 0;
	in.batch_rows = run->batch_rows ? run->batch_rows : DEFAULT_BATCH_ROWS;
	if (run->csv_path)
		e = tfs__csv_open(&in.lx, run->csv_path, run->display_name, run->block, d);
	else
		tfs__csv_open_mem(&in.lx, run->csv_mem, run->csv_mem_len,
				  run->display_name ? run->display_name : "(memory)",
				  run->block);
	if (e)
		return e;
	if ((e = read_header(&in, &empty, d)) || empty)
		goto out;
	if (run->grow) {
		while (!(e = tfs__csv_next(&in.lx, &got, d)) && got &&
		       !(e = collect_row(&in, d)))
			;
		goto out;
	}
	account(&in, 0);
	account(&in, 1);
	if ((e = handoff_start(&in, sink))) {
		e = nomem(&in, d);
		goto out;
	}
	for (;;) {
		if ((e = tfs__csv_next(&in.lx, &got, d)))
			break;
		if (!got)
			break;
		if ((e = parse_row(&in, d)))
			break;
		if (in.rows_in_batch == in.batch_rows || in.batch_full) {
			if ((e = flush(&in, d)))
				break;
			report(&in);
		}
	}
	if (!e)
		e = flush(&in, d);
	/* After a parse failure the sink's own failure (if any) is not
	 * reported: the first problem of the file is. */
	e2 = handoff_stop(&in, e ? NULL : d);
	if (!e)
		e = e2;
	if (!e)
		report(&in);
out:
	ingest_release(&in);
	return e;
}
