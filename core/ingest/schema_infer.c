/* The schema of a CSV dropped into a plain folder (SPEC §6, "CSV into a
 * plain folder"): one pass over the whole file in blocks (memory bounded
 * by one record) decides each column's type, the narrowest of bool,
 * int64, float64, datetime and string that holds every value, and makes it
 * nullable where a field is empty. The array is dense with one uint64
 * dimension `row` from 0 over the whole range of the type (rounded down to
 * whole tiles of INFER_TILE rows), so that later files append after the
 * last row, and ZSTD on every attribute. */
#include "ingest_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"
#include "tilefs/tilefs.h"

#define INFER_CAPACITY 10000
#define INFER_TILE 10000

struct infer_col {
	bool any;       /* a value (not an empty field) was seen */
	bool nullable;  /* an unquoted empty field was seen */
	bool can_bool, can_int, can_float, can_dt, utf8;
	int dt_prec;    /* finest tfs__datetime_precision seen */
};

static void observe(struct infer_col *c, const struct tfs__csv_field *f)
{
	uint8_t v[8];
	const char *why;

	if (!f->quoted && f->len == 0) {
		c->nullable = true;
		return;
	}
	c->any = true;
	if (f->len == 0) {
		/* A quoted empty field is an empty string. */
		c->can_bool = c->can_int = c->can_float = c->can_dt = false;
		return;
	}
	if (c->can_bool) {
		bool t = f->len == 4 && strncasecmp((const char *)f->p, "true", 4) == 0;
		bool fa = f->len == 5 && strncasecmp((const char *)f->p, "false", 5) == 0;

		c->can_bool = t || fa;
	}
	if (c->can_int && tfs__value_parse(TFS_INT64, f->p, f->len, v, &why))
		c->can_int = false;
	if (c->can_float && !c->can_int &&
	    tfs__value_parse(TFS_FLOAT64, f->p, f->len, v, &why))
		c->can_float = false;
	if (c->can_dt) {
		int prec = tfs__datetime_precision(f->p, f->len);

		if (prec < 0)
			c->can_dt = false;
		else if (prec > c->dt_prec)
			c->dt_prec = prec;
	}
	if (c->utf8 && !tfs__utf8_valid(f->p, f->len))
		c->utf8 = false;
}

static uint8_t infer_type(const struct infer_col *c)
{
	if (!c->any)
		return TFS_STRING_UTF8;
	if (c->can_bool)
		return TFS_BOOL;
	if (c->can_int)
		return TFS_INT64;
	if (c->can_float)
		return TFS_FLOAT64;
	if (c->can_dt) {
		if (c->dt_prec == 0)
			return TFS_DATETIME_YEAR + 3; /* DAY */
		if (c->dt_prec == 1)
			return TFS_DATETIME_YEAR + 6; /* SEC */
		if (c->dt_prec <= 4)
			return TFS_DATETIME_YEAR + 7; /* MS */
		if (c->dt_prec <= 7)
			return TFS_DATETIME_YEAR + 8; /* US */
		return TFS_DATETIME_YEAR + 9;         /* NS */
	}
	return c->utf8 ? TFS_STRING_UTF8 : TFS_CHAR;
}

static enum tfs_err zstd_pipeline(struct tfs_pipeline *p)
{
	struct tfs_filter f;

	tfs_pipeline_init(p);
	tfs_filter_init(&f, TFS_FILTER_ZSTD);
	return tfs_pipeline_add(p, &f);
}

/* The dimension is `row` unless a column has that name: then row_1,
 * row_2, ... */
static void pick_dim_name(char *dname, size_t cap, char *const *names, size_t n)
{
	size_t suffix = 0;

	for (;;) {
		bool taken = false;

		if (suffix)
			snprintf(dname, cap, "row_%zu", suffix);
		else
			snprintf(dname, cap, "row");
		for (size_t i = 0; i < n; i++)
			if (strcmp(names[i], dname) == 0)
				taken = true;
		if (!taken)
			break;
		suffix++;
	}
}

/* The one UINT64 dimension of whole tiles over the type's range. */
static enum tfs_err init_row_dim(struct tfs_dim *dim,
				 const struct tfs_pipeline *coords,
				 char *const *names, size_t n)
{
	char dname[32];

	pick_dim_name(dname, sizeof(dname), names, n);
	if (!(dim->name = tfs_strdup(dname)))
		return TFS_E_NOMEM;
	dim->type = TFS_UINT64;
	dim->cell_val_num = 1;
	dim->filters = *coords;
	dim->filters_inherited = true;
	dim->stored_max_chunk = 65536;
	dim->has_domain = true;
	uint64_t extent = INFER_TILE;
	/* Whole tiles: TileDB refuses a dense domain that expanded to its
	 * tiles would pass the type's maximum. */
	uint64_t hi = UINT64_MAX / extent * extent - 1;

	memcpy(dim->domain[0], &(uint64_t){0}, 8);
	memcpy(dim->domain[1], &hi, 8);
	dim->has_extent = true;
	memcpy(dim->extent, &extent, 8);
	return TFS_E_OK;
}

/* One attribute a column, of the type its values allow; the names pass
 * to the attributes. */
static enum tfs_err add_inferred_attrs(struct tfs_schema *s, char **names,
				       const struct infer_col *cols, size_t n)
{
	enum tfs_err e;

	for (size_t i = 0; i < n; i++) {
		struct tfs_attr *a = &s->attrs[i];
		uint8_t type = infer_type(&cols[i]);

		s->attr_num++;
		a->name = names[i];
		names[i] = NULL;
		a->type = type;
		a->var = tfs_datatype_class(type) == TFS_CLASS_STRING;
		a->cell_val_num = a->var ? TFS_VAR_NUM : 1;
		a->nullable = cols[i].nullable;
		if ((e = zstd_pipeline(&a->filters)))
			return e;
		a->fill_size = tfs_datatype_size(type);
		if (!(a->fill = tfs_malloc((size_t)a->fill_size)))
			return TFS_E_NOMEM;
		tfs_datatype_default_fill(type, a->fill);
	}
	return TFS_E_OK;
}

static enum tfs_err build_schema(struct tfs_schema *s, char **names,
				 const struct infer_col *cols, size_t n)
{
	struct tfs_filter rle;
	enum tfs_err e;

	memset(s, 0, sizeof(*s));
	s->version = TFS_FORMAT_VERSION_WRITE;
	s->array_type = TFS_DENSE;
	s->tile_order = TFS_ROW_MAJOR;
	s->cell_order = TFS_ROW_MAJOR;
	s->capacity = INFER_CAPACITY;
	if ((e = zstd_pipeline(&s->coords_filters)) ||
	    (e = zstd_pipeline(&s->offsets_filters)))
		return e;
	tfs_pipeline_init(&s->validity_filters);
	tfs_filter_init(&rle, TFS_FILTER_RLE);
	if ((e = tfs_pipeline_add(&s->validity_filters, &rle)))
		return e;
	s->dims = tfs_callocn(1, sizeof(*s->dims));
	s->attrs = tfs_callocn(n, sizeof(*s->attrs));
	if (!s->dims || !s->attrs)
		return TFS_E_NOMEM;
	s->dim_num = 1;
	if ((e = init_row_dim(&s->dims[0], &s->coords_filters, names, n)))
		return e;
	return add_inferred_attrs(s, names, cols, n);
}

static void report(const struct tfs__csv_lexer *lx, uint64_t rows,
		   void (*progress)(const struct tfs_ingest_progress *p, void *arg),
		   void *arg)
{
	struct tfs_ingest_progress p = {
		.bytes_done = tfs__csv_offset(lx),
		.bytes_total = lx->size,
		.rows = rows,
		.pass = 1,
		.passes = 2,
	};

	if (progress)
		progress(&p, arg);
}

/* The header record: a name for each column, every column open to
 * every type so far. */
static enum tfs_err read_header(struct tfs__csv_lexer *lx, char ***names_out,
				struct infer_col **cols_out, size_t *n_out,
				struct tfs_diag *d)
{
	size_t n = lx->field_num;
	char **names = tfs_callocn(n, sizeof(*names));
	struct infer_col *cols = tfs_callocn(n, sizeof(*cols));

	*names_out = names;
	*cols_out = cols;
	*n_out = n;
	if (!names || !cols)
		return tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", lx->name);
	for (size_t k = 0; k < n; k++) {
		const struct tfs__csv_field *f = &lx->fields[k];

		if (!(names[k] = tfs_strndup((const char *)f->p, f->len)))
			return tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", lx->name);
		cols[k] = (struct infer_col){.can_bool = true, .can_int = true,
					     .can_float = true, .can_dt = true,
					     .utf8 = true};
	}
	lx->col_names = (const char *const *)names;
	lx->col_num = n;
	return TFS_E_OK;
}

/* Column names: not empty, no NUL, not reserved, each once. */
static enum tfs_err check_header_names(struct tfs__csv_lexer *lx,
				       char *const *names, size_t n,
				       struct tfs_diag *d)
{
	for (size_t k = 0; k < n; k++) {
		if (names[k][0] == '\0' || strlen(names[k]) != lx->fields[k].len)
			return tfs__csv_fail(lx, d, TFS_E_INVALID, 1, k + 1,
					     "a column needs a name (without NUL bytes)");
		if (strncmp(names[k], "__", 2) == 0)
			return tfs__csv_fail(lx, d, TFS_E_INVALID, 1, k + 1,
					     "names starting with '__' are reserved");
		for (size_t j = 0; j < k; j++) {
			if (strcmp(names[j], names[k]) == 0)
				return tfs__csv_fail(lx, d, TFS_E_INVALID, 1, k + 1,
						     "duplicate column");
		}
	}
	return TFS_E_OK;
}

/* Every data row, each of n fields, seen by its column's observer. */
static enum tfs_err observe_rows(struct tfs__csv_lexer *lx,
				 struct infer_col *cols, size_t n,
				 uint64_t *rows,
				 void (*progress)(const struct tfs_ingest_progress *p,
						  void *arg),
				 void *progress_arg, struct tfs_diag *d)
{
	bool got;
	enum tfs_err e;

	for (;;) {
		if ((e = tfs__csv_next(lx, &got, d)))
			return e;
		if (!got)
			break;
		if (lx->field_num != n)
			return tfs__csv_fail(lx, d, TFS_E_INVALID, lx->record_line,
					     lx->field_num < n ? lx->field_num + 1 : n + 1,
					     "row has %zu fields, the header %zu",
					     lx->field_num, n);
		for (size_t k = 0; k < n; k++)
			observe(&cols[k], &lx->fields[k]);
		if (++*rows % 65536 == 0)
			report(lx, *rows, progress, progress_arg);
	}
	report(lx, *rows, progress, progress_arg);
	return TFS_E_OK;
}

enum tfs_err tfs__schema_infer(struct tfs_schema *out, uint64_t *rows,
			       const char *csv_path, const char *display_name,
			       size_t block,
			       void (*progress)(const struct tfs_ingest_progress *p,
						void *arg),
			       void *progress_arg, struct tfs_diag *d)
{
	struct tfs__csv_lexer lx;
	struct infer_col *cols = NULL;
	char **names = NULL;
	size_t n = 0;
	bool got;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	*rows = 0;
	if ((e = tfs__csv_open(&lx, csv_path, display_name, block, d)))
		return e;
	if ((e = tfs__csv_next(&lx, &got, d)))
		goto out;
	if (!got) {
		e = tfs__csv_fail(&lx, d, TFS_E_INVALID, 1, 0,
				  "no header line to name the columns");
		goto out;
	}
	if ((e = read_header(&lx, &names, &cols, &n, d)) ||
	    (e = check_header_names(&lx, names, n, d)) ||
	    (e = observe_rows(&lx, cols, n, rows, progress, progress_arg, d)))
		goto out;
	if ((e = build_schema(out, names, cols, n))) {
		e = tfs_fail(d, e, "%s: out of memory", lx.name);
		tfs_schema_release(out);
	}
out:
	for (size_t k = 0; names && k < n; k++)
		tfs_free(names[k]);
	tfs_free(names);
	tfs_free(cols);
	tfs__csv_close(&lx);
	return e;
}
