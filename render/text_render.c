/* Text renderings of cell streams, see text_render.h. */
#include "text_render.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json_out.h"
#include "slice.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_fmt_float.h"

#define MAX_NDIM 128
/* Bytes one number of the fast path takes at most, with its separator. */
#define FAST_VALUE_MAX (TFS_FMT_FLOAT_MAX + 1)
/* Cells the fast path writes per reservation of the output. */
#define FAST_CHUNK 4096
/* Cells of a batch from which a second thread formats part of it, and
 * the cells formatted per round (half on each thread): the other
 * thread's text waits in a buffer of one half round. */
#define SPLIT_MIN 8192
#define SPLIT_ROUND 65536

struct tfsr_text_render {
	enum tfsr_text_style style;
	size_t col_num;
	struct tfsr_text_column *cols;
	struct tfs_buf keys;  /* .json: "name": for each column, back to back */
	size_t *key_end;      /* end of each column's key in keys */
	size_t ndim;          /* 0: a flat list */
	uint64_t blk[MAX_NDIM]; /* cells in a block at each level */
	uint64_t total;
	uint64_t r; /* cells rendered */
	/* Formats part of large batches on another thread (NULL: none);
	 * spare holds that part's text. */
	struct tfs_pool *pool;
	struct tfs_buf spare;
	/* Coordinates computed from the cell index (struct tfsr_text_column
	 * coord): coord_num of them, batch columns views of the batch with
	 * them after its own, coord_data their values for COORD_CHUNK cells. */
	size_t coord_num;
	size_t *coord_of; /* per coordinate, its output column */
	struct tfs_column *view;
	size_t view_cap;
	uint8_t *coord_data;
};

/* Cells rendered per view of a batch with computed coordinates. */
#define COORD_CHUNK 16384

void tfsr_text_render_free(struct tfsr_text_render *r)
{
	if (!r)
		return;
	tfs_free(r->cols);
	tfs_free(r->key_end);
	tfs_buf_release(&r->keys);
	tfs_buf_release(&r->spare);
	tfs_free(r->coord_of);
	tfs_free(r->view);
	tfs_free(r->coord_data);
	tfs_free(r);
}

void tfsr_text_render_set_pool(struct tfsr_text_render *r,
			       struct tfs_pool *pool)
{
	r->pool = pool;
}

enum tfs_err tfsr_text_render_new(enum tfsr_text_style style,
				  const struct tfsr_text_column *cols,
				  size_t col_num, const uint64_t *shape,
				  size_t ndim, struct tfsr_text_render **out)
{
	struct tfsr_text_render *r = tfs_callocn(1, sizeof(*r));
	enum tfs_err e = TFS_E_OK;

	*out = NULL;
	if (!r)
		return TFS_E_NOMEM;
	tfs_buf_init(&r->keys, TFS_BUF_NO_MAX);
	tfs_buf_init(&r->spare, TFS_BUF_NO_MAX);
	r->style = style;
	r->col_num = col_num;
	r->cols = tfs_callocn(col_num ? col_num : 1, sizeof(*r->cols));
	r->key_end = tfs_callocn(col_num ? col_num : 1, sizeof(*r->key_end));
	if (!r->cols || !r->key_end || ndim > MAX_NDIM) {
		tfsr_text_render_free(r);
		return ndim > MAX_NDIM ? TFS_E_TOO_BIG : TFS_E_NOMEM;
	}
	memcpy(r->cols, cols, col_num * sizeof(*cols));
	for (size_t i = 0; !e && i < col_num; i++) {
		e = tfsr_name_text(&r->keys, cols[i].name, TFSR_TEXT_JSON);
		if (!e)
			e = tfs_buf_append_u8(&r->keys, ':');
		r->key_end[i] = r->keys.len;
	}
	for (size_t i = 0; i < col_num; i++)
		r->coord_num += cols[i].coord;
	if (r->coord_num) {
		r->coord_of = tfs_callocn(r->coord_num, sizeof(*r->coord_of));
		r->coord_data = tfs_callocn(r->coord_num * COORD_CHUNK, 8);
		if (!r->coord_of || !r->coord_data || !shape || !ndim ||
		    r->coord_num > MAX_NDIM)
			e = r->coord_of && r->coord_data ? TFS_E_INTERNAL
							 : TFS_E_NOMEM;
		for (size_t i = 0, j = 0; !e && i < col_num; i++) {
			if (!cols[i].coord)
				continue;
			if (cols[i].dim >= ndim)
				e = TFS_E_INTERNAL;
			r->coord_of[j++] = i;
		}
	}
	if (shape && ndim) {
		r->ndim = ndim;
		r->total = 1;
		for (size_t k = ndim; k-- > 0;) {
			if (__builtin_mul_overflow(r->total, shape[k], &r->total))
				e = TFS_E_TOO_BIG;
			r->blk[k] = r->total;
		}
	}
	if (e) {
		tfsr_text_render_free(r);
		return e;
	}
	*out = r;
	return TFS_E_OK;
}

enum tfs_err tfsr_text_render_begin(struct tfsr_text_render *r,
				    struct tfs_buf *out)
{
	enum tfs_err e = TFS_E_OK;

	switch (r->style) {
	case TFSR_TEXT_TXT:
		return TFS_E_OK;
	case TFSR_TEXT_CSV:
		for (size_t i = 0; !e && i < r->col_num; i++) {
			if (i)
				e = tfs_buf_append_u8(out, ',');
			if (!e)
				e = tfsr_name_text(out, r->cols[i].name,
						   TFSR_TEXT_CSV);
		}
		return e ? e : tfs_buf_append_u8(out, '\n');
	case TFSR_TEXT_JSON:
		/* Nested arrays open with their first cell. */
		return r->ndim ? TFS_E_OK : tfs_buf_append_u8(out, '[');
	}
	return TFS_E_INTERNAL;
}

/* The separator and opening brackets before JSON cell r->r. */
static enum tfs_err json_before(struct tfsr_text_render *r, struct tfs_buf *out)
{
	enum tfs_err e = TFS_E_OK;
	bool row_start;

	if (!r->ndim)
		return r->r ? tfs_buf_append(out, ",\n", 2) : TFS_E_OK;
	row_start = r->r % r->blk[r->ndim - 1] == 0;
	if (r->r)
		e = row_start || r->ndim == 1 || r->col_num > 1
			    ? tfs_buf_append(out, ",\n", 2)
			    : tfs_buf_append_u8(out, ',');
	for (size_t k = r->r ? 1 : 0; !e && k < r->ndim; k++)
		if (r->r % r->blk[k] == 0)
			e = tfs_buf_append_u8(out, '[');
	return e;
}

/* The closing brackets after JSON cell r->r - 1. */
static enum tfs_err json_after(struct tfsr_text_render *r, struct tfs_buf *out)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t k = r->ndim; !e && k-- > 0;)
		if (r->r % r->blk[k] == 0)
			e = tfs_buf_append_u8(out, ']');
	return e;
}

static enum tfs_err render_cell(struct tfsr_text_render *r, struct tfs_buf *out,
				const struct tfs_batch *b, uint64_t i)
{
	bool object = r->style == TFSR_TEXT_JSON && r->col_num > 1;
	enum tfs_err e = TFS_E_OK;

	if (r->style == TFSR_TEXT_JSON)
		e = json_before(r, out);
	if (!e && object)
		e = tfs_buf_append_u8(out, '{');
	for (size_t c = 0; !e && c < r->col_num; c++) {
		const struct tfsr_text_column *col = &r->cols[c];

		if (c)
			e = tfs_buf_append_u8(out, r->style == TFSR_TEXT_TXT ? '\t'
									      : ',');
		if (!e && object) {
			size_t start = c ? r->key_end[c - 1] : 0;

			e = tfs_buf_append(out, r->keys.data + start,
					   r->key_end[c] - start);
		}
		if (!e)
			e = tfsr_cell_text(out, &b->columns[col->batch_index], i,
					   r->style, col->enumeration);
	}
	if (!e && object)
		e = tfs_buf_append_u8(out, '}');
	r->r++;
	if (!e && r->style == TFSR_TEXT_JSON)
		e = json_after(r, out);
	else if (!e)
		e = tfs_buf_append_u8(out, '\n');
	return e;
}

/* Whether the fast path writes column c: one number per cell (integers,
 * floats) without nulls or an enumeration, the text put_number gives. */
static bool fast_column(const struct tfs_column *c,
			const struct tfsr_text_column *col)
{
	if (col->enumeration || c->var || c->cell_val_num != 1 ||
	    (c->nullable && c->validity))
		return false;
	switch (c->type) {
	case TFS_INT8: case TFS_INT16: case TFS_INT32: case TFS_INT64:
	case TFS_UINT8: case TFS_UINT16: case TFS_UINT32: case TFS_UINT64:
	case TFS_FLOAT32: case TFS_FLOAT64:
		return true;
	default:
		return false;
	}
}

static char *put_nonfinite(char *p, double v)
{
	if (isnan(v)) {
		memcpy(p, "nan", 3);
		return p + 3;
	}
	if (v < 0) {
		memcpy(p, "-inf", 4);
		return p + 4;
	}
	memcpy(p, "inf", 3);
	return p + 3;
}

/* Value i of column c (a fast column) at p; returns its end. */
static char *put_fast(char *p, const struct tfs_column *c, uint64_t i)
{
	const uint8_t *src = c->data;

	switch (c->type) {
	case TFS_INT8:
		return p + tfs_fmt_i64(p, ((const int8_t *)src)[i]);
	case TFS_UINT8:
		return p + tfs_fmt_u64(p, src[i]);
	case TFS_INT16: {
		int16_t v;

		memcpy(&v, src + 2 * i, 2);
		return p + tfs_fmt_i64(p, v);
	}
	case TFS_UINT16: {
		uint16_t v;

		memcpy(&v, src + 2 * i, 2);
		return p + tfs_fmt_u64(p, v);
	}
	case TFS_INT32: {
		int32_t v;

		memcpy(&v, src + 4 * i, 4);
		return p + tfs_fmt_i64(p, v);
	}
	case TFS_UINT32: {
		uint32_t v;

		memcpy(&v, src + 4 * i, 4);
		return p + tfs_fmt_u64(p, v);
	}
	case TFS_INT64: {
		int64_t v;

		memcpy(&v, src + 8 * i, 8);
		return p + tfs_fmt_i64(p, v);
	}
	case TFS_UINT64: {
		uint64_t v;

		memcpy(&v, src + 8 * i, 8);
		return p + tfs_fmt_u64(p, v);
	}
	case TFS_FLOAT32: {
		float v;

		memcpy(&v, src + 4 * i, 4);
		if (!isfinite(v))
			return put_nonfinite(p, (double)v);
		return p + json_fmt_f32(p, TFS_FMT_FLOAT_MAX, v);
	}
	default: {
		double v;

		memcpy(&v, src + 8 * i, 8);
		if (!isfinite(v))
			return put_nonfinite(p, v);
		return p + json_fmt_f64(p, TFS_FMT_FLOAT_MAX, v);
	}
	}
}

/* Where a column's last value was written in the output, copied again
 * when the next cell holds the same bits (coordinates repeat along
 * rows). Valid within one reservation of the output (see render_fast). */
struct last_text {
	uint64_t bits;
	size_t len; /* 0: none yet */
	const char *text;
};

/* Value i of fast column c at p, through its last text; returns its
 * end. The copy writes FAST_VALUE_MAX bytes, within the room reserved
 * for the row; it goes through tmp because the last text may be closer
 * than that. A miss keeps where the text went, not a copy of it: reading
 * back bytes just stored one by one stalled the loop. */
static char *put_fast_cached(char *p, const struct tfs_column *c, uint64_t i,
			     size_t w, struct last_text *lt)
{
	uint64_t bits = tfs_get_uint(c->data + i * w, w);
	char *end;

	if (lt->len && lt->bits == bits) {
		char tmp[FAST_VALUE_MAX];

		memcpy(tmp, lt->text, FAST_VALUE_MAX);
		memcpy(p, tmp, FAST_VALUE_MAX);
		return p + lt->len;
	}
	end = put_fast(p, c, i);
	lt->bits = bits;
	lt->len = (size_t)(end - p);
	lt->text = p;
	return end;
}

/* Cells first .. first+n-1 as .csv or .txt rows of fast columns only:
 * room for the longest rows is reserved, then the text written straight
 * into the buffer. */
static enum tfs_err render_fast(struct tfsr_text_render *r, struct tfs_buf *out,
				const struct tfs_batch *b, uint64_t first,
				uint64_t n)
{
	char sep = r->style == TFSR_TEXT_TXT ? '\t' : ',';
	size_t row_max = r->col_num * FAST_VALUE_MAX + FAST_VALUE_MAX;
	struct last_text *last = tfs_callocn(r->col_num, sizeof(*last));
	const struct tfs_column **cols = tfs_callocn(r->col_num, sizeof(*cols));
	size_t *widths = tfs_callocn(r->col_num, sizeof(*widths));
	enum tfs_err e = TFS_E_OK;

	if (!last || !cols || !widths)
		e = TFS_E_NOMEM;
	for (size_t c = 0; !e && c < r->col_num; c++) {
		cols[c] = &b->columns[r->cols[c].batch_index];
		widths[c] = tfs_datatype_size(cols[c]->type);
	}
	while (!e && n) {
		uint64_t m = n < FAST_CHUNK ? n : FAST_CHUNK;
		char *p;

		e = tfs_buf_reserve(out, (size_t)m * row_max);
		if (e)
			break;
		p = (char *)out->data + out->len;
		/* The reservation may have moved the output. */
		for (size_t c = 0; c < r->col_num; c++)
			last[c].len = 0;
		for (uint64_t i = first; i < first + m; i++) {
			for (size_t c = 0; c < r->col_num; c++) {
				p = put_fast_cached(p, cols[c], i, widths[c],
						    &last[c]);
				*p++ = sep;
			}
			p[-1] = '\n';
		}
		out->len = (size_t)(p - (char *)out->data);
		r->r += m;
		first += m;
		n -= m;
	}
	tfs_free(last);
	tfs_free(cols);
	tfs_free(widths);
	return e;
}

/* The text length of value i of an integer column of w bytes. */
static inline uint64_t int_len(const uint8_t *data, size_t w, bool is_signed,
			       uint64_t i)
{
	uint64_t u = tfs_get_uint(data + i * w, w);
	unsigned shift = (unsigned)(64 - 8 * w);
	int64_t v;

	if (!is_signed)
		return tfs_fmt_u64_len(u);
	v = (int64_t)(u << shift) >> shift;
	return v < 0 ? 1 + tfs_fmt_u64_len(0 - (uint64_t)v)
		     : tfs_fmt_u64_len((uint64_t)v);
}

/* The text bytes of values first .. first+n-1 of fast column col:
 * integers by their digit count, floats formatted on the stack (through
 * the last value's text). */
static uint64_t count_column(const struct tfs_column *col, uint64_t first,
			     uint64_t n)
{
	size_t w = tfs_datatype_size(col->type);
	bool is_signed =
		tfs_datatype_class(col->type) == TFS_CLASS_SIGNED;
	struct last_text lt = {0};
	char text[2 * FAST_VALUE_MAX];
	uint64_t total = 0;

	if (col->type == TFS_FLOAT32 || col->type == TFS_FLOAT64) {
		for (uint64_t i = first; i < first + n; i++)
			total += (uint64_t)(put_fast_cached(text, col, i, w, &lt) -
					    text);
		return total;
	}
	for (uint64_t i = first; i < first + n; i++)
		total += int_len(col->data, w, is_signed, i);
	return total;
}

/* The bytes render_fast would write for cells first .. first+n-1, added
 * to *bytes. */
static void count_fast(const struct tfsr_text_render *r,
		       const struct tfs_batch *b, uint64_t first, uint64_t n,
		       uint64_t *bytes)
{
	uint64_t total = n * r->col_num; /* separators and newlines */

	for (size_t c = 0; c < r->col_num; c++)
		total += count_column(&b->columns[r->cols[c].batch_index], first,
				      n);
	*bytes += total;
}

static bool batch_fast(const struct tfsr_text_render *r,
		       const struct tfs_batch *b)
{
	if (r->style == TFSR_TEXT_JSON || r->col_num == 0)
		return false;
	for (size_t c = 0; c < r->col_num; c++)
		if (!fast_column(&b->columns[r->cols[c].batch_index],
				 &r->cols[c]))
			return false;
	return true;
}

/* Cells first .. first+n-1 on this thread; r->r counts them. */
static enum tfs_err render_range(struct tfsr_text_render *r,
				 struct tfs_buf *out, const struct tfs_batch *b,
				 uint64_t first, uint64_t n, bool fast)
{
	enum tfs_err e = TFS_E_OK;

	if (fast)
		return render_fast(r, out, b, first, n);
	for (uint64_t i = first; !e && i < first + n; i++)
		e = render_cell(r, out, b, i);
	return e;
}

/* The second half of a round, formatted on the pool: a copy of the
 * rendering's state (a cell's text depends on its index only) writing
 * into r->spare. */
struct half_job {
	struct tfs_job job;
	struct tfsr_text_render copy;
	struct tfs_buf *out;
	const struct tfs_batch *b;
	uint64_t first, n;
	bool fast;
	enum tfs_err e;
};

static void half_run(void *arg)
{
	struct half_job *h = arg;

	h->e = render_range(&h->copy, h->out, h->b, h->first, h->n, h->fast);
}

/* Rounds of SPLIT_ROUND cells: the second half of each on the pool while
 * this thread writes the first, then appended in order. */
static enum tfs_err render_split(struct tfsr_text_render *r,
				 struct tfs_buf *out, const struct tfs_batch *b,
				 uint64_t first, uint64_t n, bool fast)
{
	struct half_job *h = tfs_malloc(sizeof(*h));
	enum tfs_err e = TFS_E_OK;

	if (!h)
		return render_range(r, out, b, first, n, fast);
	while (!e && n) {
		uint64_t m = n < SPLIT_ROUND ? n : SPLIT_ROUND, half = m / 2;

		r->spare.len = 0;
		h->copy = *r;
		h->copy.r = r->r + half;
		h->out = &r->spare;
		h->b = b;
		h->first = first + half;
		h->n = m - half;
		h->fast = fast;
		h->e = TFS_E_OK;
		tfs_job_init(&h->job, half_run, h);
		tfs_pool_submit(r->pool, &h->job);
		e = render_range(r, out, b, first, half, fast);
		tfs_job_wait(r->pool, &h->job);
		if (!e)
			e = h->e;
		if (!e)
			e = tfs_buf_append(out, r->spare.data, r->spare.len);
		r->r = h->copy.r;
		first += m;
		n -= m;
	}
	tfs_free(h);
	return e;
}

/* The coordinates of cells r->r .. r->r+m-1 into r->coord_data (room of
 * COORD_CHUNK × 8 bytes per coordinate), in the dimension's width: the
 * indices of the first by division, then counted on. */
static void coords_fill(struct tfsr_text_render *r, uint64_t m)
{
	uint64_t idx[MAX_NDIM];
	size_t width[MAX_NDIM];

	for (size_t k = 0; k < r->ndim; k++)
		idx[k] = r->r % r->blk[k] /
			 (k + 1 < r->ndim ? r->blk[k + 1] : 1);
	for (size_t j = 0; j < r->coord_num; j++)
		width[j] = tfs_datatype_size(r->cols[r->coord_of[j]].type);
	for (uint64_t i = 0; i < m; i++) {
		for (size_t j = 0; j < r->coord_num; j++) {
			const struct tfsr_text_column *col =
				&r->cols[r->coord_of[j]];

			tfs_put_uint(r->coord_data + j * COORD_CHUNK * 8 +
					     i * width[j],
				     width[j], col->lo + idx[col->dim] * col->stride);
		}
		for (size_t k = r->ndim; k-- > 0;) {
			uint64_t extent = r->blk[k] /
					  (k + 1 < r->ndim ? r->blk[k + 1] : 1);

			if (++idx[k] < extent)
				break;
			idx[k] = 0;
		}
	}
}

/* The view of cells first .. first+m-1 of b as cells 0 .. m-1, with the
 * computed coordinates after b's columns (r->view). */
static enum tfs_err view_of(struct tfsr_text_render *r,
			    const struct tfs_batch *b, uint64_t first,
			    uint64_t m, struct tfs_batch *view)
{
	size_t cols = b->column_num + r->coord_num;

	if (tfs_grow(&r->view, &r->view_cap, cols, sizeof(*r->view)))
		return TFS_E_NOMEM;
	for (size_t c = 0; c < b->column_num; c++) {
		struct tfs_column *v = &r->view[c];

		*v = b->columns[c];
		if (v->var)
			v->offsets += first;
		else
			v->data += first * tfs_datatype_size(v->type) *
				   (uint64_t)v->cell_val_num;
		if (v->validity)
			v->validity += first;
	}
	for (size_t j = 0; j < r->coord_num; j++) {
		const struct tfsr_text_column *col = &r->cols[r->coord_of[j]];

		r->view[b->column_num + j] = (struct tfs_column){
			.name = col->name, .type = col->type,
			.cell_val_num = 1, .is_dim = true,
			.data = r->coord_data + j * COORD_CHUNK * 8,
			.data_len = m * tfs_datatype_size(col->type)};
	}
	*view = (struct tfs_batch){.cell_num = m, .column_num = cols,
				   .columns = r->view};
	return TFS_E_OK;
}

/* ---- Computed coordinates counted without writing them ----------------
 *
 * Along dimension k the selection's cell q has index j = q / inner %
 * extent (inner: the cells of one step of k), and the coordinate
 * lo + j * stride, which rises with j. Its text is one digit, one more
 * for each power of ten its magnitude reaches, and a sign below zero:
 * each of those is a threshold that a count of indexes j answers. */

/* The indexes j < J whose value lo + j * stride is at least t. */
static uint64_t count_at_least(__int128 lo, uint64_t stride, uint64_t J,
			       __int128 t)
{
	__int128 first; /* the smallest j that reaches t */

	if (lo >= t)
		return J;
	first = (t - lo + (__int128)stride - 1) / (__int128)stride;
	return first >= (__int128)J ? 0 : J - (uint64_t)first;
}

/* The text bytes of the values lo + j * stride for j < J. */
static uint64_t coord_text_sum(__int128 lo, uint64_t stride, bool is_signed,
			       uint64_t J)
{
	uint64_t total = J;
	__int128 p = 1;

	if (J == 0)
		return 0;
	if (is_signed)
		total += J - count_at_least(lo, stride, J, 0); /* '-' */
	for (int d = 1; d <= 19; d++) {
		p *= 10;
		total += count_at_least(lo, stride, J, p);
		if (is_signed) /* at most -p */
			total += J - count_at_least(lo, stride, J, 1 - p);
	}
	return total;
}

/* The text bytes of coordinate col over the selection's cells 0 .. q-1. */
static uint64_t coord_prefix(const struct tfsr_text_render *r,
			     const struct tfsr_text_column *col, uint64_t q)
{
	size_t k = col->dim, w = tfs_datatype_size(col->type);
	uint64_t inner = k + 1 < r->ndim ? r->blk[k + 1] : 1;
	uint64_t extent = r->blk[k] / inner;
	uint64_t rem = q % r->blk[k], j = rem / inner;
	bool is_signed =
		tfs_datatype_class(col->type) == TFS_CLASS_SIGNED;
	unsigned shift = (unsigned)(64 - 8 * w);
	uint64_t bits = w < 8 ? col->lo & ((UINT64_C(1) << (8 * w)) - 1)
			      : col->lo;
	__int128 lo = is_signed ? (__int128)((int64_t)(bits << shift) >> shift)
				: (__int128)bits;
	uint64_t upto_j = coord_text_sum(lo, col->stride, is_signed, j);

	return q / r->blk[k] * inner *
		       coord_text_sum(lo, col->stride, is_signed, extent) +
	       inner * upto_j +
	       rem % inner *
		       (coord_text_sum(lo, col->stride, is_signed, j + 1) - upto_j);
}

/* Whether cells of b with r's computed coordinates can be counted
 * without a view: every coordinate an integer, every other column fast. */
static bool coords_countable(const struct tfsr_text_render *r,
			     const struct tfs_batch *b)
{
	if (r->style == TFSR_TEXT_JSON)
		return false;
	for (size_t c = 0; c < r->col_num; c++) {
		const struct tfsr_text_column *col = &r->cols[c];

		if (!col->coord) {
			if (!fast_column(&b->columns[col->batch_index], col))
				return false;
			continue;
		}
		switch (col->type) {
		case TFS_INT8: case TFS_INT16: case TFS_INT32: case TFS_INT64:
		case TFS_UINT8: case TFS_UINT16: case TFS_UINT32:
		case TFS_UINT64:
			if (col->enumeration || col->stride == 0)
				return false;
			break;
		default:
			return false;
		}
	}
	return true;
}

/* The bytes of cells first .. first+n-1 of b (the selection's cells r->r
 * on): the columns of b value by value, the coordinates by their counts. */
static uint64_t count_coords(const struct tfsr_text_render *r,
			     const struct tfs_batch *b, uint64_t first,
			     uint64_t n)
{
	uint64_t total = n * r->col_num; /* separators and newlines */

	for (size_t c = 0; c < r->col_num; c++) {
		const struct tfsr_text_column *col = &r->cols[c];

		if (col->coord)
			total += coord_prefix(r, col, r->r + n) -
				 coord_prefix(r, col, r->r);
		else
			total += count_column(&b->columns[col->batch_index],
					      first, n);
	}
	return total;
}

/* Renders (out) or counts (bytes) cells first .. first+n-1 of b through
 * views with the computed coordinates, COORD_CHUNK cells at a time. */
static enum tfs_err coords_chunks(struct tfsr_text_render *r,
				  struct tfs_buf *out,
				  const struct tfs_batch *b, uint64_t first,
				  uint64_t n, uint64_t *bytes)
{
	enum tfs_err e = TFS_E_OK;

	if (!out && coords_countable(r, b)) {
		*bytes += count_coords(r, b, first, n);
		r->r += n;
		return TFS_E_OK;
	}
	while (!e && n) {
		uint64_t m = n < COORD_CHUNK ? n : COORD_CHUNK;
		struct tfs_batch view;

		coords_fill(r, m);
		e = view_of(r, b, first, m, &view);
		if (!e)
			e = out ? tfsr_text_render_cells(r, out, &view, 0, m)
				: tfsr_text_render_count(r, &view, 0, m, bytes);
		first += m;
		n -= m;
	}
	return e;
}

/* Whether b has the columns r reads, coordinates computed by views. */
static bool columns_ok(const struct tfsr_text_render *r,
		       const struct tfs_batch *b, bool *need_view)
{
	size_t own = b->column_num;

	*need_view = false;
	for (size_t c = 0; c < r->col_num; c++) {
		if (r->cols[c].batch_index < own)
			continue;
		if (!r->cols[c].coord)
			return false;
		*need_view = true;
	}
	return true;
}

enum tfs_err tfsr_text_render_count(struct tfsr_text_render *r,
				    const struct tfs_batch *b, uint64_t first,
				    uint64_t n, uint64_t *bytes)
{
	bool need_view;
	enum tfs_err e;

	if (!columns_ok(r, b, &need_view))
		return TFS_E_INTERNAL;
	if (need_view)
		return coords_chunks(r, NULL, b, first, n, bytes);
	if (batch_fast(r, b)) {
		count_fast(r, b, first, n, bytes);
		r->r += n;
		return TFS_E_OK;
	}
	r->spare.len = 0;
	e = render_range(r, &r->spare, b, first, n, false);
	*bytes += r->spare.len;
	r->spare.len = 0;
	return e;
}

enum tfs_err tfsr_text_render_cells(struct tfsr_text_render *r,
				    struct tfs_buf *out,
				    const struct tfs_batch *b, uint64_t first,
				    uint64_t n)
{
	bool fast, need_view;

	if (!columns_ok(r, b, &need_view))
		return TFS_E_INTERNAL;
	if (need_view)
		return coords_chunks(r, out, b, first, n, NULL);
	fast = batch_fast(r, b);
	if (r->pool && tfs_pool_threads(r->pool) && n >= SPLIT_MIN)
		return render_split(r, out, b, first, n, fast);
	return render_range(r, out, b, first, n, fast);
}

enum tfs_err tfsr_text_render_end(struct tfsr_text_render *r,
				  struct tfs_buf *out)
{
	if (r->style != TFSR_TEXT_JSON)
		return TFS_E_OK;
	if (!r->ndim)
		return tfs_buf_append(out, "]\n", 2);
	if (r->r == 0)
		return tfs_buf_append(out, "[]\n", 3);
	return tfs_buf_append_u8(out, '\n');
}

/* ---- The text renderers of slices (slice.h) ---------------------------- */

enum tfs_err tfsr_text_begin(struct tfsr_stream *st, struct tfs_diag *d)
{
	const struct tfsr_slice *p = st->em.sl;
	struct tfsr_text_column cols[TFSR_MAX_DIMS + 256];
	uint64_t shape[TFSR_MAX_DIMS];
	struct tfsr_text_render *r;
	enum tfs_err e;

	if (p->nfields > sizeof(cols) / sizeof(cols[0]))
		return tfs_fail(d, TFS_E_TOO_BIG, "%" PRIu32 " fields are "
				"too many for a text rendering", p->nfields);
	for (uint32_t i = 0, own = 0, coord = 0; i < p->nfields; i++) {
		struct tfs_field_info f;

		tfs_schema_field(p->s, p->fields[i], &f);
		cols[i] = (struct tfsr_text_column){
			.name = f.name, .batch_index = own,
			.enumeration = p->enums[i]};
		if (p->computed && p->computed[i]) {
			const struct tfsr_dim_sel *ds =
				&p->sel->dims[p->fields[i]];

			cols[i].coord = true;
			cols[i].dim = (uint32_t)p->fields[i];
			cols[i].type = f.type;
			cols[i].lo = tfs_get_uint(ds->range.lo,
						  tfs_datatype_size(f.type));
			cols[i].stride = ds->stride;
			cols[i].batch_index = p->nnames + coord++;
		} else {
			own++;
		}
	}
	for (uint32_t k = 0; p->dense && k < tfs_schema_dim_count(p->s); k++)
		shape[k] = p->sel->dims[k].count;
	e = tfsr_text_render_new((enum tfsr_text_style)p->r->text_style, cols,
				 p->nfields, p->dense ? shape : NULL,
				 p->dense ? tfs_schema_dim_count(p->s) : 0, &r);
	if (e)
		return tfs_fail(d, e, "cannot start rendering");
	tfsr_text_render_set_pool(r, st->pool);
	st->em.state = r;
	return tfsr_text_render_begin(r, &st->out);
}

enum tfs_err tfsr_text_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			     uint64_t first, uint64_t n)
{
	if (em->measure)
		return TFS_E_OK;
	if (em->counted)
		return tfsr_text_render_count(em->state, b, first, n,
					      em->counted);
	return tfsr_text_render_cells(em->state, em->out, b, first, n);
}

enum tfs_err tfsr_text_end(struct tfsr_stream *st)
{
	return tfsr_text_render_end(st->em.state, &st->out);
}

void tfsr_text_release(struct tfsr_emit *em)
{
	tfsr_text_render_free(em->state);
	em->state = NULL;
}

void tfsr_text_seek(struct tfsr_emit *em, uint64_t cell)
{
	struct tfsr_text_render *r = em->state;

	if (r)
		r->r = cell;
}
