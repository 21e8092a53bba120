/* Text renderings of cell streams, see text_render.h. */
#include "text_render.h"

#include <inttypes.h>
#include <string.h>

#include "slice.h"
#include "tfs_alloc.h"

#define MAX_NDIM 128

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
};

void tfsr_text_render_free(struct tfsr_text_render *r)
{
	if (!r)
		return;
	tfs_free(r->cols);
	tfs_free(r->key_end);
	tfs_buf_release(&r->keys);
	tfs_free(r);
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

enum tfs_err tfsr_text_render_cells(struct tfsr_text_render *r,
				    struct tfs_buf *out,
				    const struct tfs_batch *b, uint64_t first,
				    uint64_t n)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t c = 0; c < r->col_num; c++)
		if (r->cols[c].batch_index >= b->column_num)
			return TFS_E_INTERNAL;
	for (uint64_t i = first; !e && i < first + n; i++)
		e = render_cell(r, out, b, i);
	return e;
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
	for (uint32_t i = 0; i < p->nfields; i++) {
		struct tfs_field_info f;

		tfs_schema_field(p->s, p->fields[i], &f);
		cols[i] = (struct tfsr_text_column){
			.name = f.name, .batch_index = i,
			.enumeration = p->enums[i]};
	}
	for (uint32_t k = 0; p->dense && k < tfs_schema_dim_count(p->s); k++)
		shape[k] = p->sel->dims[k].count;
	e = tfsr_text_render_new((enum tfsr_text_style)p->r->text_style, cols,
				 p->nfields, p->dense ? shape : NULL,
				 p->dense ? tfs_schema_dim_count(p->s) : 0, &r);
	if (e)
		return tfs_fail(d, e, "cannot start rendering");
	st->em.state = r;
	return tfsr_text_render_begin(r, &st->out);
}

enum tfs_err tfsr_text_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			     uint64_t first, uint64_t n)
{
	return em->measure ? TFS_E_OK
			   : tfsr_text_render_cells(em->state, em->out, b,
						    first, n);
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
