/* Whether a CSV for a dense array holds exactly the cells of one box in
 * row-major order (first dimension slowest), as data.csv renders a dense
 * array. Such a file can be written as a box (TFS_WRITE_DENSE_BOX), which
 * the writer streams to the fragment without sorting; anything else is
 * written as unordered cells. One pass over the dimension columns only,
 * stopping at the first row that breaks the order, so a file that is not
 * a box costs little. Every problem of the file (a bad value, a ragged
 * row) just means "not a box": the ingest pass reports it properly. */
#include "ingest_internal.h"

#include <string.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"

#define MAX_DIMS 128

/* A dimension's domain as integers, so coordinates compare without the
 * generic value functions. */
struct dim_int {
	bool is_signed, plain; /* plain: an integer type, not a date/time */
	uint64_t max_mag;      /* of the type (tfs__int_parse) */
	int64_t lo, hi;        /* signed types */
	uint64_t ulo, uhi;     /* unsigned types */
};

struct detect {
	uint32_t dim_num;
	size_t col[MAX_DIMS];      /* 0-based field of each dimension */
	struct dim_int di[MAX_DIMS];
	uint64_t lo[MAX_DIMS], hi[MAX_DIMS]; /* offsets from the domain's low end */
	bool hi_known[MAX_DIMS];
	uint64_t prev[MAX_DIMS], cur[MAX_DIMS];
};

static void dim_int_init(struct dim_int *di, const struct tfs_dim *dim)
{
	size_t bits = 8 * tfs_datatype_size(dim->type);

	di->is_signed = tfs_datatype_class(dim->type) == TFS_CLASS_SIGNED;
	di->plain = !tfs_datatype_is_datetime(dim->type);
	di->max_mag = di->is_signed ? (UINT64_C(1) << (bits - 1)) - 1
		      : bits == 64 ? UINT64_MAX
				   : (UINT64_C(1) << bits) - 1;
	di->lo = tfs_value_as_i64(dim->type, dim->domain[0]);
	di->hi = tfs_value_as_i64(dim->type, dim->domain[1]);
	di->ulo = tfs_value_as_u64(dim->type, dim->domain[0]);
	di->uhi = tfs_value_as_u64(dim->type, dim->domain[1]);
}

/* A coordinate's offset from its domain's low end; false when it is no
 * value of the type or outside the domain. */
static bool coord_offset(const struct tfs_dim *dim, const struct dim_int *di,
			 const struct tfs__csv_field *f, uint64_t *out)
{
	uint64_t v;
	const char *why;

	if (f->len == 0)
		return false;
	if (di->plain) {
		if (tfs__int_parse(f->p, f->len, di->is_signed, di->max_mag, &v, &why))
			return false;
	} else {
		int64_t x;

		/* Date/time types are int64. */
		if (tfs__value_parse(dim->type, f->p, f->len, &x, &why))
			return false;
		v = (uint64_t)x;
	}
	if (di->is_signed) {
		if ((int64_t)v < di->lo || (int64_t)v > di->hi)
			return false;
		*out = v - (uint64_t)di->lo;
	} else {
		if (v < di->ulo || v > di->uhi)
			return false;
		*out = v - di->ulo;
	}
	return true;
}

/* cur follows prev in row-major order over the box seen so far: the
 * innermost dimensions wrap to their low end (learning their high end at
 * the first wrap) and the next one out steps by one. */
static bool follows(struct detect *t)
{
	for (uint32_t k = t->dim_num; k-- > 0;) {
		bool outer_same = true;

		for (uint32_t j = 0; j < k; j++)
			outer_same &= t->cur[j] == t->prev[j];
		if (outer_same && t->cur[k] == t->prev[k] + 1 && t->prev[k] != UINT64_MAX &&
		    (!t->hi_known[k] || t->prev[k] < t->hi[k]))
			return true;
		if (t->cur[k] != t->lo[k])
			return false;
		if (t->hi_known[k] ? t->prev[k] != t->hi[k] : t->prev[k] < t->lo[k])
			return false;
		t->hi[k] = t->prev[k];
		t->hi_known[k] = true;
	}
	return false; /* past the box's last cell */
}

/* Only dense arrays of integer dimensions with domains can be a box. */
static bool box_possible(const struct tfs_schema *s)
{
	if (s->array_type != TFS_DENSE || s->dim_num > MAX_DIMS)
		return false;
	for (uint32_t k = 0; k < s->dim_num; k++)
		if (s->dims[k].var || !s->dims[k].has_domain ||
		    !tfs_datatype_is_integer(s->dims[k].type))
			return false;
	return true;
}

/* Each dimension's column in the header record, named exactly once;
 * false when one is missing or named twice. Limits the lexer to the
 * columns up to the last of them. */
static bool find_dim_columns(const struct tfs_schema *s,
			     struct tfs__csv_lexer *lx, struct detect *t)
{
	bool ok = true;

	for (uint32_t k = 0; k < s->dim_num && ok; k++) {
		size_t hits = 0;

		for (size_t i = 0; i < lx->field_num; i++) {
			if (lx->fields[i].len == strlen(s->dims[k].name) &&
			    memcmp(lx->fields[i].p, s->dims[k].name, lx->fields[i].len) == 0) {
				t->col[k] = i;
				hits++;
			}
		}
		ok = hits == 1;
	}
	/* Only the dimension columns matter here: a ragged row that the
	 * skip hides is refused by the ingest pass all the same. */
	for (uint32_t k = 0; k < s->dim_num && ok; k++)
		if (t->col[k] + 1 > lx->field_limit)
			lx->field_limit = t->col[k] + 1;
	return ok;
}

/* Reads the data rows while each follows the one before in the box;
 * *rows counts them. False as soon as one does not. */
static bool follow_rows(const struct tfs_schema *s, struct tfs__csv_lexer *lx,
			struct detect *t, uint64_t *rows, enum tfs_err *e,
			struct tfs_diag *d)
{
	bool got, ok = true;

	while (ok) {
		if ((*e = tfs__csv_next(lx, &got, d))) {
			*e = *e == TFS_E_IO || *e == TFS_E_NOMEM ? *e : TFS_E_OK;
			return false;
		}
		if (!got)
			break;
		if (lx->field_num < lx->field_limit)
			return false;
		for (uint32_t k = 0; k < s->dim_num && ok; k++)
			ok = coord_offset(&s->dims[k], &t->di[k], &lx->fields[t->col[k]],
					  &t->cur[k]);
		if (!ok)
			break;
		if (*rows == 0)
			memcpy(t->lo, t->cur, sizeof(t->lo));
		else if (!follows(t))
			ok = false;
		memcpy(t->prev, t->cur, sizeof(t->prev));
		(*rows)++;
	}
	return ok;
}

/* The last cell is the box's far corner: the box's corners into box,
 * true when it is one. */
static bool box_corners(const struct tfs_schema *s, struct detect *t,
			uint8_t box[2][128][8])
{
	bool ok = true;

	for (uint32_t k = 0; k < s->dim_num && ok; k++) {
		if (!t->hi_known[k])
			t->hi[k] = t->prev[k];
		ok = t->prev[k] == t->hi[k];
	}
	for (uint32_t k = 0; k < s->dim_num && ok; k++) {
		const struct tfs_dim *dim = &s->dims[k];
		size_t size = tfs_datatype_size(dim->type);
		uint64_t base = tfs_datatype_class(dim->type) == TFS_CLASS_SIGNED
					? (uint64_t)tfs_value_as_i64(dim->type, dim->domain[0])
					: tfs_value_as_u64(dim->type, dim->domain[0]);
		uint64_t a = base + t->lo[k], b = base + t->hi[k];

		/* Little-endian: the low bytes of the wrapped sum. */
		memcpy(box[0][k], &a, size);
		memcpy(box[1][k], &b, size);
	}
	return ok;
}

static enum tfs_err detect(const struct tfs_schema *s, const char *csv_path,
			   const void *mem, size_t mem_len,
			   const char *display_name, size_t block, bool *is_box,
			   uint8_t box[2][128][8], struct tfs_diag *d)
{
	struct tfs__csv_lexer lx;
	struct detect *t;
	uint64_t rows = 0;
	bool got;
	enum tfs_err e = TFS_E_OK;

	*is_box = false;
	if (!box_possible(s))
		return TFS_E_OK;
	if (!(t = tfs_callocn(1, sizeof(*t))))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	t->dim_num = s->dim_num;
	for (uint32_t k = 0; k < s->dim_num; k++)
		dim_int_init(&t->di[k], &s->dims[k]);
	if (csv_path)
		e = tfs__csv_open(&lx, csv_path, display_name, block, d);
	else
		tfs__csv_open_mem(&lx, mem, mem_len, display_name, block);
	if (e)
		goto out_free;
	if ((e = tfs__csv_next(&lx, &got, d)) || !got) {
		/* Malformed or empty: the ingest pass says so. */
		e = e == TFS_E_IO || e == TFS_E_NOMEM ? e : TFS_E_OK;
		goto out_close;
	}
	if (find_dim_columns(s, &lx, t) && follow_rows(s, &lx, t, &rows, &e, d) &&
	    rows > 0)
		*is_box = box_corners(s, t, box);
out_close:
	tfs__csv_close(&lx);
out_free:
	tfs_free(t);
	return e;
}

enum tfs_err tfs__box_detect(const struct tfs_schema *s, const char *csv_path,
			     const void *mem, size_t mem_len,
			     const char *display_name, size_t block, bool *is_box,
			     uint8_t box[2][128][8], struct tfs_diag *d)
{
	struct tfs_diag own;
	enum tfs_err e;

	/* Problems of the file are the ingest pass's to report: a message
	 * recorded here would stand in for its (a diagnostic keeps only the
	 * first failure). */
	tfs_diag_init(&own);
	e = detect(s, csv_path, mem, mem_len, display_name, block, is_box, box, &own);
	if (e)
		return tfs_fail(d, e, "%s", tfs_diag_msg(&own));
	return TFS_E_OK;
}
