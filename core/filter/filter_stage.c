/* The mechanics every filter stage shares (format/filters.md §2): on read,
 * a stage's output buffer (the caller's for the final stage, else scratch
 * capped by the chunk) and its metadata and data parts; on write, the list
 * of parts a filter passes on. Used by tile_codec.c and the filters. */
#include "tfs_filter.h"

#include <inttypes.h>
#include <string.h>

#include "filter_internal.h"
#include "tfs_alloc.h"

enum tfs_err tfs__stage_fail(struct tfs__stage *st, enum tfs_err e,
			     const char *why)
{
	if (!st->why)
		st->why = why;
	return e;
}

static bool stage_is_final(const struct tfs__stage *st)
{
	return st->dst != NULL;
}

static enum tfs_err scratch_take(struct tfs__stage *st, struct tfs_buf *b,
				 size_t n, uint8_t **p)
{
	enum tfs_err e;

	b->len = 0;
	/* Never hand out NULL, so callers may memcpy 0 bytes into it. */
	e = tfs_buf_reserve(b, n ? n : 1);
	if (e == TFS_E_TOO_BIG)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "declared size exceeds what the chunk "
				       "can hold");
	if (e)
		return e;
	b->len = n;
	*p = b->data;
	return TFS_E_OK;
}

enum tfs_err tfs__stage_alloc(struct tfs__stage *st, size_t n, uint8_t **p)
{
	int k;
	enum tfs_err e;

	if (stage_is_final(st)) {
		if (n != st->dst_len)
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "decoded size differs from the "
					       "chunk's original length");
		*p = st->dst;
		st->out = st->dst;
		st->out_len = n;
		st->out_holder = -2;
		return TFS_E_OK;
	}
	k = st->in_holder == 0 ? 1 : 0;
	e = scratch_take(st, &st->dscratch[k], n, p);
	if (e)
		return e;
	st->out = *p;
	st->out_len = n;
	st->out_holder = k;
	return TFS_E_OK;
}

enum tfs_err tfs__stage_pass(struct tfs__stage *st, const uint8_t *p, size_t n)
{
	if (stage_is_final(st)) {
		if (n != st->dst_len)
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "decoded size differs from the "
					       "chunk's original length");
		if (n)
			memmove(st->dst, p, n);
		st->out = st->dst;
		st->out_len = n;
		st->out_holder = -2;
		return TFS_E_OK;
	}
	st->out = p;
	st->out_len = n;
	st->out_holder = st->in_holder;
	return TFS_E_OK;
}

enum tfs_err tfs__stage_md_alloc(struct tfs__stage *st, size_t n, uint8_t **p)
{
	int k = st->md_holder == 0 ? 1 : 0;
	enum tfs_err e = scratch_take(st, &st->mscratch[k], n, p);

	if (e)
		return e;
	st->md_set = true;
	st->md_out = *p;
	st->md_out_len = n;
	st->md_out_holder = k;
	return TFS_E_OK;
}

enum tfs_err tfs__stage_lengths(struct tfs__stage *st, const char *why,
				const uint8_t **lens, uint32_t *count,
				uint64_t *total)
{
	uint64_t sum = 0;

	if (!tfs_cur_u32(&st->md, count) ||
	    *count > tfs_cur_left(&st->md) / 4 ||
	    !tfs_cur_take(&st->md, (size_t)*count * 4, lens))
		return tfs__stage_fail(st, TFS_E_CORRUPT, why);
	for (uint32_t i = 0; total && i < *count; i++)
		sum += tfs_get_u32(*lens + 4 * i);
	if (total)
		*total = sum;
	return TFS_E_OK;
}

enum tfs_err tfs__stage_part_table(struct tfs__stage *st, size_t row_size,
				   const char *why_header,
				   const char *why_rows,
				   struct tfs__part_table *t)
{
	uint32_t n_data;

	if (!tfs_cur_u32(&st->md, &t->n_md) || !tfs_cur_u32(&st->md, &n_data))
		return tfs__stage_fail(st, TFS_E_CORRUPT, why_header);
	t->n = (uint64_t)t->n_md + n_data;
	if (t->n > tfs_cur_left(&st->md) / row_size ||
	    !tfs_cur_take(&st->md, (size_t)t->n * row_size, &t->rows))
		return tfs__stage_fail(st, TFS_E_CORRUPT, why_rows);
	return TFS_E_OK;
}

enum tfs_err tfs__stage_alloc_split(struct tfs__stage *st, uint64_t n_md,
				    size_t md_len, size_t data_len,
				    struct tfs__split_out *o)
{
	enum tfs_err e = tfs__stage_md_alloc(st, md_len, &o->md);

	if (!e)
		e = tfs__stage_alloc(st, data_len, &o->data);
	o->n_md = n_md;
	return e;
}

/* ---- part lists (write direction) ---- */

void tfs__parts_init(struct tfs__parts *ps)
{
	ps->v = NULL;
	ps->n = 0;
	ps->cap = 0;
}

void tfs__parts_release(struct tfs__parts *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		tfs_buf_release(&ps->v[i]);
	tfs_free(ps->v);
	tfs__parts_init(ps);
}

static enum tfs_err parts_grow(struct tfs__parts *ps)
{
	return tfs_grow(&ps->v, &ps->cap, ps->n + 1, sizeof(*ps->v));
}

static void buf_take(struct tfs_buf *dst, struct tfs_buf *src)
{
	*dst = *src;
	src->data = NULL;
	src->len = 0;
	src->cap = 0;
}

enum tfs_err tfs__parts_push(struct tfs__parts *ps, struct tfs_buf *b)
{
	enum tfs_err e = parts_grow(ps);

	if (e)
		return e;
	buf_take(&ps->v[ps->n++], b);
	return TFS_E_OK;
}

enum tfs_err tfs__parts_prepend(struct tfs__parts *ps, struct tfs_buf *b)
{
	enum tfs_err e = parts_grow(ps);

	if (e)
		return e;
	memmove(ps->v + 1, ps->v, ps->n * sizeof(*ps->v));
	buf_take(&ps->v[0], b);
	ps->n++;
	return TFS_E_OK;
}

enum tfs_err tfs__parts_replace(struct tfs__parts *ps, struct tfs_buf *b)
{
	for (size_t i = 0; i < ps->n; i++)
		tfs_buf_release(&ps->v[i]);
	ps->n = 0;
	return tfs__parts_push(ps, b);
}

void tfs__parts_replace_all(struct tfs__parts *ps, struct tfs__parts *from)
{
	tfs__parts_release(ps);
	*ps = *from;
	tfs__parts_init(from);
}

size_t tfs__parts_total(const struct tfs__parts *ps)
{
	size_t t = 0;

	for (size_t i = 0; i < ps->n; i++)
		t += ps->v[i].len;
	return t;
}

enum tfs_err tfs__buf_sized(struct tfs_buf *b, size_t n, uint8_t **p)
{
	enum tfs_err e;

	tfs_buf_init(b, TFS_BUF_NO_MAX);
	e = tfs_buf_reserve(b, n ? n : 1);
	if (e)
		return e;
	b->len = n;
	*p = b->data;
	return TFS_E_OK;
}

enum tfs_err tfs__fwd_fail(struct tfs__fwd *w, enum tfs_err e, const char *why)
{
	if (!w->why)
		w->why = why;
	return e;
}
