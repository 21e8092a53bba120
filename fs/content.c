/* The bytes of virtual files (SPEC §4, §5).
 *
 * A slice file is planned once per open: the selection, the fields and
 * the format. Three ways to serve it:
 *  - random access: dense selections in a fixed-size format (raw and .npy
 *    of fixed-size fields, .validity) have an exact size known without
 *    decoding. A read at any offset maps to the cells it covers, those to
 *    at most 2n-1 boxes of the selection (n dimensions), and each box to
 *    one query, so a read costs the tiles it touches. The next window is
 *    prefetched into the tile cache while the reader consumes this one;
 *  - whole: small files (documents, small selections) are rendered at
 *    the first stat or open and kept in a small cache with their exact
 *    size;
 *  - stream: everything else is produced front to back (size 0, direct
 *    I/O); a read behind the window restarts the stream. After one
 *    complete pass the exact size is remembered.
 * Dense cells are produced by index (row-major over the selection), so a
 * stream needs no long-lived query; sparse cells come from one query.
 * When a vacuum removes fragments that a file still reads, the file goes
 * on with the array opened again at its own time, if that shows the same
 * cells (tfsd_arrays_reopen); a stream first produces itself again up to
 * where it was, comparing the bytes it still holds. */
#include "tfsd.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "npy.h"
#include "text_render.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_bytes.h"
#include "tfs_log.h"

/* Output produced per step of a dense stream. */
#define STEP_BYTES ((uint64_t)1 << 20)
/* Output a random-access file produces at least per miss, kept for the
 * reads that follow (the kernel reads 128 KiB to 1 MiB at a time). */
#define WINDOW_BYTES ((uint64_t)4 << 20)
/* A stream keeps this much behind the last read for slightly reordered
 * reads before it drops the bytes. */
#define KEEP_BEHIND ((size_t)4 << 20)
/* Rendered files kept by the render cache. */
#define RENDER_ENTRIES 128
#define RENDER_MAX_FILE ((size_t)16 << 20)

/* ---- The render cache ---------------------------------------------------- */

struct render {
	uint64_t gen; /* the array version (0: not an array document) */
	char *vpath;
	uint8_t *data; /* NULL: only the size is known */
	uint64_t size;
	uint64_t used;
};

struct tfsd_renders {
	pthread_mutex_t lock;
	uint64_t budget;
	uint64_t bytes;                      /* protected by lock */
	uint64_t clock;                      /* protected by lock */
	struct render entries[RENDER_ENTRIES]; /* protected by lock */
};

enum tfs_err tfsd_renders_new(uint64_t budget, struct tfsd_renders **out)
{
	struct tfsd_renders *r = tfs_callocn(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return TFS_E_NOMEM;
	pthread_mutex_init(&r->lock, NULL);
	r->budget = budget;
	*out = r;
	return TFS_E_OK;
}

static void render_clear(struct render *en)
{
	tfs_free(en->vpath);
	tfs_free(en->data);
	memset(en, 0, sizeof(*en));
}

void tfsd_renders_free(struct tfsd_renders *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < RENDER_ENTRIES; i++)
		render_clear(&r->entries[i]);
	pthread_mutex_destroy(&r->lock);
	tfs_free(r);
}

/* A copy of a cached rendering (data may be NULL: size only). */
static bool renders_find(struct tfsd_renders *r, uint64_t gen,
			 const char *vpath, uint8_t **data, uint64_t *size)
{
	bool found = false;

	*data = NULL;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < RENDER_ENTRIES; i++) {
		struct render *en = &r->entries[i];

		if (!en->vpath || en->gen != gen || strcmp(en->vpath, vpath))
			continue;
		en->used = ++r->clock;
		*size = en->size;
		if (en->data) {
			*data = tfs_malloc(en->size ? en->size : 1);
			if (*data)
				memcpy(*data, en->data, en->size);
		}
		found = !en->data || *data;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}

/* Remembers a rendering (data NULL: only its size); takes a copy. */
static void renders_put(struct tfsd_renders *r, uint64_t gen,
			const char *vpath, const uint8_t *data, uint64_t size)
{
	struct render fresh = {.gen = gen, .size = size};
	struct render old[RENDER_ENTRIES];
	size_t old_num = 0;

	if (data && size > RENDER_MAX_FILE)
		data = NULL;
	fresh.vpath = tfs_strdup(vpath);
	if (data)
		fresh.data = tfs_malloc(size ? size : 1);
	if (!fresh.vpath || (data && !fresh.data)) {
		render_clear(&fresh);
		return;
	}
	if (data)
		memcpy(fresh.data, data, size);
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < RENDER_ENTRIES; i++) {
		struct render *en = &r->entries[i];

		if (en->vpath && en->gen == gen && !strcmp(en->vpath, vpath)) {
			r->bytes -= en->data ? en->size : 0;
			old[old_num++] = *en;
			memset(en, 0, sizeof(*en));
		}
	}
	r->bytes += fresh.data ? size : 0;
	for (;;) {
		size_t lru = RENDER_ENTRIES, empty = RENDER_ENTRIES;

		for (size_t i = 0; i < RENDER_ENTRIES; i++) {
			if (!r->entries[i].vpath) {
				empty = i;
				continue;
			}
			if (lru == RENDER_ENTRIES ||
			    r->entries[i].used < r->entries[lru].used)
				lru = i;
		}
		if (empty < RENDER_ENTRIES && r->bytes <= r->budget) {
			fresh.used = ++r->clock;
			r->entries[empty] = fresh;
			break;
		}
		if (lru == RENDER_ENTRIES) { /* over budget on its own */
			r->bytes -= fresh.data ? size : 0;
			old[old_num++] = fresh;
			break;
		}
		r->bytes -= r->entries[lru].data ? r->entries[lru].size : 0;
		old[old_num++] = r->entries[lru];
		memset(&r->entries[lru], 0, sizeof(r->entries[lru]));
	}
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < old_num; i++)
		render_clear(&old[i]);
}

/* ---- Plans ------------------------------------------------------------- */

struct plan {
	struct tfsd *fs;
	struct tfsd_arr *arr; /* a reference */
	struct tfsd_prefetch *prefetch;
	const struct tfs_schema *s;
	struct tfsd_sel *sel;
	enum tfsd_format fmt;
	bool dense;
	uint32_t nfields;
	int *fields;        /* schema field indices, output order */
	const char **names; /* query fields: the output ones, then extras */
	uint32_t nnames;
	int *hi_check;      /* per dim: query column to compare with hi, or -1 */
	bool has_hi_check;
	uint64_t cells;     /* dense: cells of the selection */
	bool fixed;         /* every output cell has the same byte size */
	uint64_t record;    /* bytes per cell when fixed */
	struct tfs_buf header; /* .npy header when known up front */
	/* .npy: per output field, the width of var-size values; measured
	 * with the header (a restarted stream pads to the same widths). */
	uint64_t *widths;
	const struct tfs_enumeration **enums; /* per output field, text only */
	char *rel; /* the array, relative to SOURCE (to open it again) */
};

static void plan_release(struct tfsd *fs, struct plan *p)
{
	tfsd_arr_put(fs->arrays, p->arr);
	tfsd_sel_free(p->sel);
	tfs_free(p->fields);
	tfs_free(p->names);
	tfs_free(p->hi_check);
	tfs_free(p->enums);
	tfs_free(p->widths);
	tfs_free(p->rel);
	tfs_buf_release(&p->header);
	memset(p, 0, sizeof(*p));
}

static const struct tfs_enumeration *field_enum(const struct tfs_array *a,
						const struct tfsd_field *f)
{
	if (!f->attr || !f->attr->enumeration)
		return NULL;
	return tfs_array_enumeration_named(a, f->attr->enumeration);
}

static uint64_t field_cell_size(const struct tfsd_field *f)
{
	return f->var ? 0 : tfs_datatype_size(f->type) * (uint64_t)f->cell_val_num;
}


/* Appends s as a Python string literal body (the .npy header is one). */
static enum tfs_err py_quote(struct tfs_buf *out, const char *s)
{
	enum tfs_err e = tfs_buf_append_u8(out, '\'');

	for (; !e && *s; s++) {
		if (*s == '\'' || *s == '\\')
			e = tfs_buf_append_u8(out, '\\');
		if (!e)
			e = tfs_buf_append_u8(out, (uint8_t)*s);
	}
	return e ? e : tfs_buf_append_u8(out, '\'');
}

/* The .npy header: a plain dtype for one field, a structured one for
 * several; widths give the fixed width of var-size fields (strings as
 * fixed-width of the longest, SPEC §4). */
static enum tfs_err plan_npy_header(struct plan *p, const uint64_t *widths,
				    uint64_t sparse_count)
{
	uint64_t shape[TFSD_MAX_DIMS + 1];
	size_t ndim = p->dense ? p->s->dim_num : 1;
	struct tfs_buf descr;
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&descr, TFS_BUF_NO_MAX);
	if (p->dense)
		for (uint32_t k = 0; k < p->s->dim_num; k++)
			shape[k] = p->sel->dims[k].count;
	else
		shape[0] = sparse_count;
	if (p->nfields > 1)
		e = tfs_buf_append_u8(&descr, '[');
	for (uint32_t i = 0; !e && i < p->nfields; i++) {
		struct tfsd_field f;

		tfsd_field_get(p->s, p->fields[i], &f);
		if (p->nfields > 1) {
			e = tfs_buf_printf(&descr, "%s(", i ? ", " : "");
			if (!e)
				e = py_quote(&descr, f.name);
			if (!e)
				e = tfs_buf_printf(&descr, ", ");
		}
		/* One field of several numbers per cell: an extra axis. */
		if (!e && p->nfields == 1 &&
		    tfsd_npy_is_subarray(f.type, f.cell_val_num)) {
			shape[ndim++] = f.cell_val_num;
			e = tfsd_npy_descr(&descr, f.type, 1, 0);
		} else if (!e) {
			e = tfsd_npy_descr(&descr, f.type, f.cell_val_num,
					   f.var ? (widths ? widths[i] : 0) : 0);
		}
		if (!e && p->nfields > 1)
			e = tfs_buf_append_u8(&descr, ')');
	}
	if (!e && p->nfields > 1)
		e = tfs_buf_append_u8(&descr, ']');
	if (!e)
		e = tfs_buf_append_u8(&descr, '\0');
	p->header.len = 0;
	if (!e)
		e = tfsd_npy_header(&p->header, (const char *)descr.data, shape,
				    ndim);
	tfs_buf_release(&descr);
	return e;
}

/* Plans the slice file of node n on the node's array version. */
static enum tfs_err over_max_cells(const struct tfsd *fs, uint64_t cells,
				   struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_TOO_BIG,
			"selection of %s%" PRIu64 " cells is over max_cells=%" PRIu64,
			fs->cfg.max_cells == cells ? "more than " : "", cells,
			fs->cfg.max_cells);
}

static enum tfs_err plan_open(struct tfsd *fs, const struct tfsd_node *n,
			      struct plan *p, struct tfs_diag *d)
{
	const struct tfs_schema *s = n->arr->schema;
	uint32_t all = tfsd_field_count(s);
	enum tfs_err e;

	memset(p, 0, sizeof(*p));
	tfs_buf_init(&p->header, TFS_BUF_NO_MAX);
	p->arr = n->arr;
	p->fs = fs;
	p->prefetch = fs->prefetch;
	tfsd_arr_get(fs->arrays, n->arr);
	p->s = s;
	p->fmt = n->fmt;
	p->dense = s->array_type == TFS_DENSE;
	e = tfsd_sel_parse(n->sel, n->sel_len, s,
			   n->arr->has_ned ? n->arr->ned : NULL, &p->sel, d);
	if (e)
		goto fail;
	p->fields = tfs_callocn(all, sizeof(*p->fields));
	p->names = tfs_callocn(all + s->dim_num, sizeof(*p->names));
	p->hi_check = tfs_callocn(s->dim_num, sizeof(*p->hi_check));
	p->enums = tfs_callocn(all, sizeof(*p->enums));
	p->widths = tfs_callocn(all, sizeof(*p->widths));
	p->rel = tfs_strdup(n->rel ? n->rel : "");
	if (!p->fields || !p->names || !p->hi_check || !p->enums ||
	    !p->widths || !p->rel) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto fail;
	}
	if (n->field >= 0 &&
	    (p->fmt == TFSD_FMT_CSV || (p->fmt == TFSD_FMT_JSON && !p->dense))) {
		/* Rows and objects carry their coordinates (SPEC §4: CSV has
		 * the dimensions, then the attribute). */
		for (uint32_t k = 0; k < s->dim_num; k++)
			p->fields[p->nfields++] = (int)k;
		if ((uint32_t)n->field >= s->dim_num)
			p->fields[p->nfields++] = n->field;
	} else if (n->field >= 0) {
		p->fields[p->nfields++] = n->field;
	} else {
		for (uint32_t i = 0; i < all; i++)
			p->fields[p->nfields++] = (int)i;
	}
	p->fixed = true;
	for (uint32_t i = 0; i < p->nfields; i++) {
		struct tfsd_field f;

		tfsd_field_get(s, p->fields[i], &f);
		p->names[p->nnames++] = f.name;
		p->record += field_cell_size(&f);
		if (f.var)
			p->fixed = false;
		if (p->fmt == TFSD_FMT_TXT || p->fmt == TFSD_FMT_CSV ||
		    p->fmt == TFSD_FMT_JSON)
			p->enums[i] = field_enum(n->arr->a, &f);
	}
	/* String bounds are inclusive in queries: drop cells equal to hi. */
	for (uint32_t k = 0; k < s->dim_num; k++) {
		p->hi_check[k] = -1;
		if (!p->sel->dims[k].hi_exclusive)
			continue;
		for (uint32_t i = 0; i < p->nnames; i++)
			if (strcmp(p->names[i], s->dims[k].name) == 0)
				p->hi_check[k] = (int)i;
		p->has_hi_check = true;
		if (p->hi_check[k] < 0) {
			p->hi_check[k] = (int)p->nnames;
			p->names[p->nnames++] = s->dims[k].name;
		}
	}
	switch (p->fmt) {
	case TFSD_FMT_RAW: break;
	case TFSD_FMT_NPY: break;
	case TFSD_FMT_VALIDITY: p->record = 1; p->fixed = true; break;
	default: p->fixed = false; break;
	}
	if (p->dense) {
		p->cells = p->sel->empty ? 0 : 1;
		for (uint32_t k = 0; k < s->dim_num && p->cells; k++)
			if (__builtin_mul_overflow(p->cells, p->sel->dims[k].count,
						   &p->cells)) {
				e = tfs_fail(d, TFS_E_TOO_BIG,
					     "selection has more than 2^64 "
					     "cells");
				goto fail;
			}
		if (fs->cfg.max_cells && p->cells > fs->cfg.max_cells) {
			e = over_max_cells(fs, p->cells, d);
			goto fail;
		}
		if (p->fixed && p->fmt == TFSD_FMT_NPY &&
		    (e = plan_npy_header(p, NULL, 0))) {
			e = tfs_fail(d, e, "cannot build the .npy header");
			goto fail;
		}
	} else {
		p->fixed = false;
	}
	return TFS_E_OK;
fail:
	plan_release(fs, p);
	return e;
}

/* Exact size of a fixed-record dense file; false on overflow. */
static bool plan_fixed_size(const struct plan *p, uint64_t *size)
{
	uint64_t body;

	return !__builtin_mul_overflow(p->cells, p->record, &body) &&
	       !__builtin_add_overflow(body, (uint64_t)p->header.len, size);
}

/* ---- Emitting cells -------------------------------------------------------- */

struct emit {
	struct plan *p;
	/* The handle queries read: the plan's, or a new opening of its view
	 * after a vacuum (a reference its owner holds). */
	struct tfsd_arr *src;
	struct tfs_buf *out;
	struct tfsd_text_render *text; /* text formats */
	uint64_t var_offset;           /* .offsets: bytes so far */
	uint64_t *widths;              /* .npy: per field, var-size widths */
	bool measure;                  /* count and widths only */
	uint64_t count;                /* cells emitted */
};

/* Cell i of a column as bytes; a null cell gives the fill value. */
static void cell_bytes(const struct plan *p, int field,
		       const struct tfs_column *c, uint64_t i,
		       const uint8_t **ptr, uint64_t *len)
{
	if (c->nullable && c->validity && !c->validity[i]) {
		struct tfsd_field f;

		tfsd_field_get(p->s, field, &f);
		*ptr = f.attr->fill;
		*len = f.attr->fill_size;
		return;
	}
	if (c->var) {
		*ptr = c->data + c->offsets[i];
		*len = c->offsets[i + 1] - c->offsets[i];
	} else {
		uint64_t size = tfs_datatype_size(c->type) *
				(uint64_t)c->cell_val_num;

		*ptr = c->data + i * size;
		*len = size;
	}
}

static enum tfs_err emit_npy(struct emit *em, const struct tfs_batch *b,
			     uint64_t first, uint64_t n)
{
	struct plan *p = em->p;
	enum tfs_err e = TFS_E_OK;

	for (uint64_t i = first; !e && i < first + n; i++) {
		for (uint32_t k = 0; !e && k < p->nfields; k++) {
			const uint8_t *ptr;
			uint64_t len;

			cell_bytes(p, p->fields[k], &b->columns[k], i, &ptr,
				   &len);
			if (em->measure) {
				if (len > em->widths[k])
					em->widths[k] = len;
				continue;
			}
			if (!b->columns[k].var) {
				e = tfs_buf_append(em->out, ptr, len);
				continue;
			}
			if (len > em->widths[k])
				len = em->widths[k];
			e = tfs_buf_append(em->out, ptr, len);
			for (uint64_t z = len; !e && z < em->widths[k]; z++)
				e = tfs_buf_append_u8(em->out, 0);
		}
	}
	return e;
}

/* Appends cells first..first+n-1 of batch b in the plan's format. The
 * batch's first nfields columns are the output fields. */
static enum tfs_err emit_cells(struct emit *em, const struct tfs_batch *b,
			       uint64_t first, uint64_t n)
{
	struct plan *p = em->p;
	const struct tfs_column *c = &b->columns[0];
	enum tfs_err e = TFS_E_OK;

	em->count += n;
	switch (p->fmt) {
	case TFSD_FMT_TXT:
	case TFSD_FMT_CSV:
	case TFSD_FMT_JSON:
		return em->measure ? TFS_E_OK
				   : tfsd_text_render_cells(em->text, em->out,
							    b, first, n);
	case TFSD_FMT_NPY:
		return emit_npy(em, b, first, n);
	case TFSD_FMT_RAW:
		if (!c->var && !c->nullable) {
			uint64_t size = tfs_datatype_size(c->type) *
					(uint64_t)c->cell_val_num;

			return tfs_buf_append(em->out, c->data + first * size,
					      n * size);
		}
		for (uint64_t i = first; !e && i < first + n; i++) {
			const uint8_t *ptr;
			uint64_t len;

			cell_bytes(p, p->fields[0], c, i, &ptr, &len);
			e = tfs_buf_append(em->out, ptr, len);
		}
		return e;
	case TFSD_FMT_OFFSETS:
		for (uint64_t i = first; !e && i < first + n; i++) {
			const uint8_t *ptr;
			uint64_t len;

			cell_bytes(p, p->fields[0], c, i, &ptr, &len);
			e = tfs_buf_append_u64(em->out, em->var_offset);
			em->var_offset += len;
		}
		return e;
	case TFSD_FMT_VALIDITY:
		if (c->validity)
			return tfs_buf_append(em->out, c->validity + first, n);
		for (uint64_t i = 0; !e && i < n; i++)
			e = tfs_buf_append_u8(em->out, 1);
		return e;
	}
	return TFS_E_INTERNAL;
}

/* ---- Producing dense cells by index ----------------------------------- */

/* Writes the coordinate of index idx along dimension k of the selection
 * (lo + idx × stride, in the dimension's integer type) to dst. */
static void coord_at(const struct plan *p, uint32_t k, uint64_t idx,
		     uint8_t *dst)
{
	const struct tfsd_dim_sel *ds = &p->sel->dims[k];
	size_t w = tfs_datatype_size(p->s->dims[k].type);
	uint64_t lo = tfs_get_uint(ds->range.lo, w);

	tfs_put_uint(dst, w, lo + idx * ds->stride);
}

/* Emits the box of selection indices lo[k] .. lo[k]+cnt[k]-1, row-major.
 * One query over the box's coordinates; a stride along the last dimension
 * skips cells of the batches, strides along others split the box. */
static enum tfs_err emit_box(struct emit *em, const uint64_t *lo,
			     const uint64_t *cnt, struct tfs_diag *d)
{
	struct plan *p = em->p;
	uint32_t nd = p->s->dim_num, last = nd - 1;
	struct tfs_range sub[TFSD_MAX_DIMS];
	uint8_t bounds[TFSD_MAX_DIMS][2][8];
	struct tfs_query_opts qo = {.subarray = sub,
				    .fields = p->names,
				    .field_num = p->nnames};
	struct tfs_query *q = NULL;
	uint64_t step = p->sel->dims[last].stride, width, r = 0;
	enum tfs_err e;

	for (uint32_t k = 0, outer = 0; k < last; k++) {
		uint64_t lo2[TFSD_MAX_DIMS], cnt2[TFSD_MAX_DIMS];

		if (p->sel->dims[k].stride == 1 || cnt[k] == 1)
			continue;
		/* One query cannot skip along k: split the box, along its
		 * outermost dimension of more than one cell so that the
		 * pieces come out in row-major order. */
		while (cnt[outer] == 1)
			outer++;
		k = outer;
		memcpy(lo2, lo, nd * sizeof(*lo));
		memcpy(cnt2, cnt, nd * sizeof(*cnt));
		cnt2[k] = 1;
		for (uint64_t i = 0; i < cnt[k]; i++) {
			lo2[k] = lo[k] + i;
			e = emit_box(em, lo2, cnt2, d);
			if (e)
				return e;
		}
		return TFS_E_OK;
	}
	for (uint32_t k = 0; k < nd; k++) {
		size_t w = tfs_datatype_size(p->s->dims[k].type);

		coord_at(p, k, lo[k], bounds[k][0]);
		coord_at(p, k, lo[k] + cnt[k] - 1, bounds[k][1]);
		sub[k] = (struct tfs_range){bounds[k][0], bounds[k][1], w, w};
	}
	width = (cnt[last] - 1) * step + 1;
	e = tfs_query_open(em->src->a, &qo, &q, d);
	while (!e) {
		const struct tfs_batch *b;

		e = tfs_query_next(q, &b, d);
		if (e || !b)
			break;
		if (step == 1) {
			e = emit_cells(em, b, 0, b->cell_num);
		} else {
			for (uint64_t i = 0; !e && i < b->cell_num; i++)
				if ((r + i) % width % step == 0)
					e = emit_cells(em, b, i, 1);
		}
		r += b->cell_num;
	}
	tfs_query_close(q);
	return e;
}

/* Emits selection cells [c0, c1) (row-major indices) as at most 2n-1
 * boxes: a partial row, whole blocks, a partial row, at each level. */
static enum tfs_err emit_dense_range(struct emit *em, uint64_t c0, uint64_t c1,
				     struct tfs_diag *d)
{
	struct plan *p = em->p;
	uint32_t nd = p->s->dim_num;
	uint64_t st[TFSD_MAX_DIMS];
	uint64_t c = c0;

	st[nd - 1] = 1;
	for (uint32_t k = nd - 1; k-- > 0;)
		st[k] = st[k + 1] * p->sel->dims[k + 1].count;
	while (c < c1) {
		uint64_t lo[TFSD_MAX_DIMS], cnt[TFSD_MAX_DIMS], m;
		uint32_t level = nd - 1;
		enum tfs_err e;

		for (uint32_t k = 0; k < nd; k++) {
			if (c % st[k] == 0 && c1 - c >= st[k]) {
				level = k;
				break;
			}
		}
		for (uint32_t k = 0; k < nd; k++) {
			lo[k] = c / st[k] % p->sel->dims[k].count;
			cnt[k] = k < level ? 1 : p->sel->dims[k].count;
		}
		m = (c1 - c) / st[level];
		if (m > p->sel->dims[level].count - lo[level])
			m = p->sel->dims[level].count - lo[level];
		cnt[level] = m;
		for (uint32_t k = level + 1; k < nd; k++)
			lo[k] = 0;
		e = emit_box(em, lo, cnt, d);
		if (e)
			return e;
		c += m * st[level];
	}
	return TFS_E_OK;
}

/* Schedules the decoding of selection cells [c0, c1) into the tile cache:
 * the rows of the first dimension that hold them. */
static void prefetch_dense(const struct plan *p, struct tfsd_arr *src,
			   uint64_t c0, uint64_t c1)
{
	uint32_t nd = p->s->dim_num;
	uint64_t row_cells = p->cells / p->sel->dims[0].count;
	struct tfs_range sub[TFSD_MAX_DIMS];
	uint8_t bounds[TFSD_MAX_DIMS][2][8];

	/* Requests name fields by the plan's strings: only on its handle,
	 * which outlives them. */
	if (!p->prefetch || src != p->arr || c0 >= c1 || c0 >= p->cells)
		return;
	if (c1 > p->cells)
		c1 = p->cells;
	for (uint32_t k = 0; k < nd; k++) {
		size_t w = tfs_datatype_size(p->s->dims[k].type);
		uint64_t lo = 0, hi = p->sel->dims[k].count - 1;

		if (k == 0) {
			lo = c0 / row_cells;
			hi = (c1 - 1) / row_cells;
		}
		coord_at(p, k, lo, bounds[k][0]);
		coord_at(p, k, hi, bounds[k][1]);
		sub[k] = (struct tfs_range){bounds[k][0], bounds[k][1], w, w};
	}
	tfsd_prefetch_submit(p->prefetch, p->arr, sub, p->names, p->nnames);
}

/* ---- Producing sparse cells ---------------------------------------------- */

static enum tfs_err sparse_open(struct plan *p, struct tfsd_arr *src,
				struct tfs_query **q, struct tfs_diag *d)
{
	struct tfs_range sub[TFSD_MAX_DIMS];
	struct tfs_query_opts qo = {.subarray = sub,
				    .fields = p->names,
				    .field_num = p->nnames};

	*q = NULL;
	if (p->sel->empty)
		return TFS_E_OK;
	for (uint32_t k = 0; k < p->s->dim_num; k++)
		sub[k] = p->sel->dims[k].range;
	return tfs_query_open(src->a, &qo, q, d);
}

static bool equals_hi(const struct plan *p, const struct tfs_batch *b,
		      uint64_t i)
{
	for (uint32_t k = 0; k < p->s->dim_num; k++) {
		const struct tfs_column *c;
		const struct tfs_range *r = &p->sel->dims[k].range;
		uint64_t len;

		if (p->hi_check[k] < 0)
			continue;
		c = &b->columns[p->hi_check[k]];
		len = c->offsets[i + 1] - c->offsets[i];
		if (len == r->hi_len &&
		    memcmp(c->data + c->offsets[i], r->hi, len) == 0)
			return true;
	}
	return false;
}

static enum tfs_err emit_sparse_batch(struct emit *em,
				      const struct tfs_batch *b)
{
	uint64_t start = 0;
	enum tfs_err e = TFS_E_OK;

	if (!em->p->has_hi_check)
		return emit_cells(em, b, 0, b->cell_num);
	for (uint64_t i = 0; !e && i <= b->cell_num; i++) {
		if (i < b->cell_num && !equals_hi(em->p, b, i))
			continue;
		if (i > start)
			e = emit_cells(em, b, start, i - start);
		start = i + 1;
	}
	return e;
}

/* ---- Streams ------------------------------------------------------------- */

struct stream {
	struct emit em;
	struct tfs_buf out; /* produced bytes from offset base on */
	uint64_t base;
	bool started;
	bool done;
	bool failed; /* a step failed: start again at the next read */
	uint64_t next_cell;  /* dense */
	struct tfs_query *q; /* sparse */
	uint64_t charged;    /* bytes counted in fs->render_bytes */
};

/* Counts n more bytes in the daemon's renderings in flight; over
 * max_memory the bytes stay counted (the caller gives them back) and the
 * rendering stops with ENOMEM. */
static enum tfs_err charge(struct tfsd *fs, uint64_t n, struct tfs_diag *d)
{
	uint64_t total;

	if (!fs->render_limit || !n)
		return TFS_E_OK;
	total = __atomic_add_fetch(&fs->render_bytes, n, __ATOMIC_RELAXED);
	if (total > fs->render_limit)
		return tfs_fail(d, TFS_E_NOMEM,
				"rendering needs more memory than max_memory=%" PRIu64
				" leaves (%" PRIu64 " bytes in flight)",
				fs->cfg.max_memory, total);
	return TFS_E_OK;
}

static void uncharge(struct tfsd *fs, uint64_t n)
{
	if (n)
		__atomic_sub_fetch(&fs->render_bytes, n, __ATOMIC_RELAXED);
}

/* Counts the stream's buffer in the daemon's renderings in flight; over
 * max_memory the rendering stops with ENOMEM (the buffer grew by at most
 * one step past the limit) rather than growing with the selection. */
static enum tfs_err stream_account(struct stream *st, struct tfs_diag *d)
{
	struct tfsd *fs = st->em.p ? st->em.p->fs : NULL;
	uint64_t now = st->out.cap, more;

	if (!fs || !fs->render_limit || now == st->charged)
		return TFS_E_OK;
	if (now < st->charged) {
		uncharge(fs, st->charged - now);
		st->charged = now;
		return TFS_E_OK;
	}
	more = now - st->charged;
	st->charged = now;
	return charge(fs, more, d);
}

static void stream_release(struct stream *st)
{
	if (st->em.p && st->em.p->fs)
		uncharge(st->em.p->fs, st->charged);
	tfs_query_close(st->q);
	tfsd_text_render_free(st->em.text);
	tfs_buf_release(&st->out);
	memset(st, 0, sizeof(*st));
}

/* A stream of plan p reading src (which must outlive it). */
static enum tfs_err stream_init(struct stream *st, struct plan *p,
				struct tfsd_arr *src)
{
	memset(st, 0, sizeof(*st));
	tfs_buf_init(&st->out, TFS_BUF_NO_MAX);
	st->em.p = p;
	st->em.src = src;
	st->em.out = &st->out;
	st->em.widths = p->widths;
	if (p->fmt == TFSD_FMT_TXT || p->fmt == TFSD_FMT_CSV ||
	    p->fmt == TFSD_FMT_JSON) {
		struct tfsd_text_column cols[TFSD_MAX_DIMS + 256];
		uint64_t shape[TFSD_MAX_DIMS];

		if (p->nfields > sizeof(cols) / sizeof(cols[0]))
			return TFS_E_TOO_BIG;
		for (uint32_t i = 0; i < p->nfields; i++) {
			struct tfsd_field f;

			tfsd_field_get(p->s, p->fields[i], &f);
			cols[i] = (struct tfsd_text_column){
				.name = f.name, .batch_index = i,
				.enumeration = p->enums[i]};
		}
		for (uint32_t k = 0; p->dense && k < p->s->dim_num; k++)
			shape[k] = p->sel->dims[k].count;
		return tfsd_text_render_new(
			p->fmt == TFSD_FMT_TXT	 ? TFSD_TEXT_TXT
			: p->fmt == TFSD_FMT_CSV ? TFSD_TEXT_CSV
						 : TFSD_TEXT_JSON,
			cols, p->nfields, p->dense ? shape : NULL,
			p->dense ? p->s->dim_num : 0, &st->em.text);
	}
	return TFS_E_OK;
}

/* Runs every cell through a measuring emitter: the count and the widest
 * var-size value of each field, for a .npy header. */
static enum tfs_err stream_measure(struct stream *st, struct tfs_diag *d)
{
	struct plan *p = st->em.p;
	struct emit m = {.p = p, .src = st->em.src, .widths = p->widths,
			 .measure = true};
	struct tfs_query *q = NULL;
	enum tfs_err e;

	if (p->dense) {
		e = emit_dense_range(&m, 0, p->cells, d);
	} else {
		e = sparse_open(p, m.src, &q, d);
		while (!e && q) {
			const struct tfs_batch *b;

			e = tfs_query_next(q, &b, d);
			if (e || !b)
				break;
			e = emit_sparse_batch(&m, b);
			if (!e && p->fs->cfg.max_cells &&
			    m.count > p->fs->cfg.max_cells)
				e = over_max_cells(p->fs, p->fs->cfg.max_cells, d);
		}
		tfs_query_close(q);
	}
	if (e)
		return e;
	/* A zero width is not a NumPy dtype. */
	for (uint32_t i = 0; i < p->nfields; i++)
		if (!p->widths[i])
			p->widths[i] = 1;
	e = plan_npy_header(p, p->widths, m.count);
	return e ? tfs_fail(d, e, "cannot build the .npy header") : e;
}

/* Cells per dense step: about STEP_BYTES of output. */
static uint64_t step_cells(const struct plan *p)
{
	uint64_t per = p->fixed && p->record ? p->record : 16 * p->nfields;

	return STEP_BYTES / per ? STEP_BYTES / per : 1;
}

/* Produces the next piece of the stream. */
static enum tfs_err stream_step(struct stream *st, struct tfs_diag *d)
{
	struct plan *p = st->em.p;
	enum tfs_err e = TFS_E_OK;

	if (!st->started) {
		st->started = true;
		if (p->fmt == TFSD_FMT_NPY) {
			if (!p->header.len)
				e = stream_measure(st, d);
			if (!e)
				e = tfs_buf_append(&st->out, p->header.data,
						   p->header.len);
		} else if (st->em.text) {
			e = tfsd_text_render_begin(st->em.text, &st->out);
		}
		if (!e && !p->dense)
			e = sparse_open(p, st->em.src, &st->q, d);
		return e;
	}
	if (p->dense && st->next_cell < p->cells) {
		uint64_t c1 = st->next_cell + step_cells(p);

		if (c1 > p->cells || c1 < st->next_cell)
			c1 = p->cells;
		e = emit_dense_range(&st->em, st->next_cell, c1, d);
		st->next_cell = c1;
		if (!e && c1 < p->cells)
			prefetch_dense(p, st->em.src, c1, c1 + step_cells(p));
		return e;
	}
	if (!p->dense && st->q) {
		const struct tfs_batch *b;

		e = tfs_query_next(st->q, &b, d);
		if (e)
			return e;
		if (b) {
			e = emit_sparse_batch(&st->em, b);
			if (!e && p->fs->cfg.max_cells &&
			    st->em.count > p->fs->cfg.max_cells)
				e = over_max_cells(p->fs, p->fs->cfg.max_cells, d);
			return e;
		}
	}
	st->done = true;
	if (st->em.text)
		e = tfsd_text_render_end(st->em.text, &st->out);
	return e;
}

/* Renders a whole plan into out (empty), which takes the stream's buffer;
 * *charged: the bytes of it still counted in fs->render_bytes. */
static enum tfs_err render_whole(struct plan *p, struct tfs_buf *out,
				 uint64_t *charged, struct tfs_diag *d)
{
	struct stream st;
	enum tfs_err e = stream_init(&st, p, p->arr);

	*charged = 0;
	while (!e && !st.done) {
		e = stream_step(&st, d);
		if (!e)
			e = stream_account(&st, d);
	}
	if (!e) {
		tfs_buf_release(out);
		*out = st.out;
		*charged = st.charged;
		tfs_buf_init(&st.out, TFS_BUF_NO_MAX);
		st.charged = 0;
	}
	stream_release(&st);
	return e;
}

/* ---- Files ---------------------------------------------------------------- */

enum serve { SERVE_WHOLE, SERVE_RANDOM, SERVE_STREAM };

/* Reopenings after vacuums that one read tries (a vacuum still running
 * may remove more under the first). */
#define VANISH_RETRIES 4

struct tfsd_file {
	enum serve how;
	bool direct;
	uint8_t *data; /* SERVE_WHOLE */
	uint64_t size;
	uint64_t charged; /* SERVE_WHOLE: bytes of data in fs->render_bytes */
	struct plan plan;
	uint64_t last_end; /* SERVE_RANDOM: end of the last read (atomic) */
	pthread_mutex_t lock;
	/* The handle reads use: plan.arr until a vacuum removes fragments
	 * under it, then a new opening of the same view; a reference,
	 * protected by lock. */
	struct tfsd_arr *src;
	/* SERVE_RANDOM: the cells [win_c0, win_c1) produced last, as bytes;
	 * protected by lock. */
	struct tfs_buf win;
	uint64_t win_c0, win_c1;
	struct stream st; /* SERVE_STREAM, protected by lock */
	char *vpath;
	bool size_learned; /* protected by lock */
};

static bool plan_small(const struct tfsd *fs, const struct plan *p)
{
	uint64_t cells = p->dense ? p->cells : p->arr->sparse_cells;
	uint64_t weighted;

	return !__builtin_mul_overflow(cells, (uint64_t)p->nfields, &weighted) &&
	       weighted <= fs->cfg.whole_max_cells;
}

static bool is_doc(const struct tfsd_node *n)
{
	return n->file != TFSD_F_SLICE;
}

enum tfs_err tfsd_file_size(struct tfsd *fs, const struct tfsd_node *n,
			    const char *vpath, struct tfsd_size *out,
			    struct tfs_diag *d)
{
	struct plan p;
	struct tfs_buf buf;
	uint64_t charged = 0;
	uint8_t *data;
	enum tfs_err e;

	*out = (struct tfsd_size){0, false};
	tfs_buf_init(&buf, TFS_BUF_NO_MAX);
	if (is_doc(n)) {
		e = tfsd_doc_render(fs, n, &buf, d);
		out->size = buf.len;
		out->exact = true;
		tfs_buf_release(&buf);
		return e;
	}
	if (renders_find(fs->renders, n->arr->gen, vpath, &data, &out->size)) {
		tfs_free(data);
		out->exact = true;
		return TFS_E_OK;
	}
	e = plan_open(fs, n, &p, d);
	if (e)
		return e;
	if (p.dense && p.fixed) {
		out->exact = plan_fixed_size(&p, &out->size);
	} else if (p.dense && p.fmt == TFSD_FMT_OFFSETS) {
		out->exact = !__builtin_mul_overflow(p.cells, 8, &out->size);
	} else if (plan_small(fs, &p)) {
		e = render_whole(&p, &buf, &charged, d);
		if (!e) {
			renders_put(fs->renders, n->arr->gen, vpath, buf.data,
				    buf.len);
			out->size = buf.len;
			out->exact = true;
		}
	}
	tfs_buf_release(&buf);
	uncharge(fs, charged);
	plan_release(fs, &p);
	return e;
}

/* Serves f whole from data (which it takes), counted in the renderings
 * in flight while f is open (charged: bytes of it counted already). */
static enum tfs_err file_whole(struct tfsd *fs, struct tfsd_file *f,
			       struct tfs_buf *data, uint64_t charged,
			       struct tfs_diag *d)
{
	uint64_t need = data->cap > charged ? data->cap - charged : 0;
	enum tfs_err e;

	f->how = SERVE_WHOLE;
	f->charged = charged + need;
	e = charge(fs, need, NULL);
	if (e)
		return tfs_fail(d, e, "'%s': %zu bytes rendered whole would go "
				"over max_memory=%" PRIu64 " (%" PRIu64
				" bytes in flight)", f->vpath, data->len,
				fs->cfg.max_memory,
				__atomic_load_n(&fs->render_bytes,
						__ATOMIC_RELAXED));
	f->size = data->len;
	f->data = tfs_buf_detach(data, NULL);
	return TFS_E_OK;
}

enum tfs_err tfsd_file_open(struct tfsd *fs, const struct tfsd_node *n,
			    const char *vpath, struct tfsd_file **out,
			    struct tfs_diag *d)
{
	struct tfsd_file *f = tfs_callocn(1, sizeof(*f));
	struct tfs_buf buf;
	uint64_t charged = 0, size = 0;
	uint8_t *data;
	enum tfs_err e;

	*out = NULL;
	if (!f)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	pthread_mutex_init(&f->lock, NULL);
	tfs_buf_init(&f->win, TFS_BUF_NO_MAX);
	tfs_buf_init(&buf, TFS_BUF_NO_MAX);
	f->vpath = tfs_strdup(vpath);
	if (!f->vpath) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto fail;
	}
	if (is_doc(n)) {
		e = tfsd_doc_render(fs, n, &buf, d);
		if (!e)
			e = file_whole(fs, f, &buf, 0, d);
		if (e)
			goto fail;
		*out = f;
		return TFS_E_OK;
	}
	if (renders_find(fs->renders, n->arr->gen, vpath, &data, &size) &&
	    data) {
		buf.data = data;
		buf.len = buf.cap = (size_t)size;
		e = file_whole(fs, f, &buf, 0, d);
		if (e)
			goto fail;
		*out = f;
		return TFS_E_OK;
	}
	e = plan_open(fs, n, &f->plan, d);
	if (e)
		goto fail;
	f->src = f->plan.arr;
	tfsd_arr_get(fs->arrays, f->src);
	if (f->plan.dense && f->plan.fixed) {
		if (!plan_fixed_size(&f->plan, &f->size)) {
			e = tfs_fail(d, TFS_E_TOO_BIG, "'%s': too large", vpath);
			goto fail;
		}
		f->how = SERVE_RANDOM;
	} else if (plan_small(fs, &f->plan)) {
		e = render_whole(&f->plan, &buf, &charged, d);
		if (!e) {
			renders_put(fs->renders, n->arr->gen, vpath, buf.data,
				    buf.len);
			e = file_whole(fs, f, &buf, charged, d);
			charged = 0;
		}
		if (e)
			goto fail;
	} else {
		/* Direct I/O even once the size is learned: the kernel may
		 * still hold the size 0 that an earlier stat reported, and
		 * would read nothing through the page cache. Dense .offsets
		 * have an exact size from the start. */
		f->how = SERVE_STREAM;
		f->direct = !(f->plan.dense && f->plan.fmt == TFSD_FMT_OFFSETS);
		e = stream_init(&f->st, &f->plan, f->src);
		if (e) {
			e = tfs_fail(d, e, "'%s': cannot start rendering", vpath);
			goto fail;
		}
	}
	tfs_buf_release(&buf);
	*out = f;
	return TFS_E_OK;
fail:
	tfs_buf_release(&buf);
	uncharge(fs, charged);
	tfsd_file_close(fs, f);
	return e;
}

bool tfsd_file_direct(const struct tfsd_file *f)
{
	return f->direct;
}

/* After a read of f on src met a missing file (e, d): *fresh (a
 * reference) is a new opening of the view at the same time when a vacuum
 * removed fragments of it and the new opening shows the same cells
 * (tfsd_arrays_reopen), and the result TFS_E_OK. Else the failure
 * stands: e and d as they were when nothing vanished (damage), or why
 * the view cannot be shown again. */
static enum tfs_err view_reopen(struct tfsd *fs, const struct tfsd_file *f,
				struct tfsd_arr *src, struct tfsd_arr **fresh,
				enum tfs_err e, struct tfs_diag *d)
{
	struct tfs_diag rd;
	enum tfs_err re;

	*fresh = NULL;
	if (e != TFS_E_CORRUPT)
		return e;
	tfs_diag_init(&rd);
	re = tfsd_arrays_reopen(fs->arrays, f->plan.rel, src, fresh, &rd);
	if (!re && !*fresh)
		return e;
	tfs_diag_init(d);
	if (re)
		*d = rd;
	return re;
}

/* Copies the body bytes [body_off, body_end) out of the window, if it
 * holds them (the caller holds f->lock). */
static bool window_copy(struct tfsd_file *f, uint64_t body_off,
			uint64_t body_end, uint8_t *dst)
{
	uint64_t rec = f->plan.record;
	uint64_t w0 = f->win_c0 * rec, w1 = f->win_c1 * rec;

	if (!f->win.len || body_off < w0 || body_end > w1)
		return false;
	memcpy(dst, f->win.data + (body_off - w0), (size_t)(body_end - body_off));
	return true;
}

/* The cells [c0, c1) of a random-access file as bytes into buf, on src;
 * after a vacuum, on a new opening of the same view. */
static enum tfs_err window_produce(struct tfsd *fs, struct tfsd_file *f,
				   struct tfsd_arr **src, uint64_t c0,
				   uint64_t c1, struct tfs_buf *buf,
				   struct tfs_diag *d)
{
	struct plan *p = &f->plan;
	struct tfsd_arr *fresh, *drop = NULL;
	enum tfs_err e = TFS_E_OK;

	for (int i = 0; i <= VANISH_RETRIES; i++) {
		struct emit em = {.p = p, .src = *src, .out = buf};

		buf->len = 0;
		e = tfs_buf_reserve(buf, (size_t)((c1 - c0) * p->record));
		if (!e)
			e = emit_dense_range(&em, c0, c1, d);
		if (!e && buf->len != (c1 - c0) * p->record)
			e = tfs_fail(d, TFS_E_INTERNAL,
				     "'%s': produced %zu bytes for %" PRIu64
				     " cells", f->vpath, buf->len, c1 - c0);
		if (!e || i == VANISH_RETRIES)
			break;
		e = view_reopen(fs, f, *src, &fresh, e, d);
		if (e)
			break;
		/* Later reads start on it too, unless another thread's
		 * reopening got there first. */
		pthread_mutex_lock(&f->lock);
		if (f->src == *src) {
			drop = f->src;
			f->src = fresh;
			tfsd_arr_get(fs->arrays, fresh);
		}
		pthread_mutex_unlock(&f->lock);
		tfsd_arr_put(fs->arrays, drop);
		tfsd_arr_put(fs->arrays, *src);
		*src = fresh;
		drop = NULL;
	}
	return e;
}

static enum tfs_err read_random(struct tfsd *fs, struct tfsd_file *f,
				uint64_t off, uint8_t *dst, size_t len,
				size_t *got, struct tfs_diag *d)
{
	struct plan *p = &f->plan;
	uint64_t hlen = p->header.len, end, c0, c1, body_off, body_end;
	struct tfsd_arr *src = NULL;
	struct tfs_buf buf;
	size_t n = 0;
	bool hit;
	enum tfs_err e = TFS_E_OK;

	*got = 0;
	if (off >= f->size || len == 0)
		return TFS_E_OK;
	end = off + len > f->size ? f->size : off + len;
	if (off < hlen) {
		n = (size_t)((end < hlen ? end : hlen) - off);
		memcpy(dst, p->header.data + off, n);
	}
	if (end <= hlen) {
		*got = n;
		return TFS_E_OK;
	}
	body_off = off + n - hlen;
	body_end = end - hlen;
	pthread_mutex_lock(&f->lock);
	hit = window_copy(f, body_off, body_end, dst + n);
	if (!hit) {
		src = f->src;
		tfsd_arr_get(fs->arrays, src);
	}
	pthread_mutex_unlock(&f->lock);
	if (hit) {
		*got = (size_t)(end - off);
		return TFS_E_OK;
	}
	/* Produce a window from the first cell asked for on. */
	c0 = body_off / p->record;
	c1 = (body_end + p->record - 1) / p->record;
	if (c1 - c0 < WINDOW_BYTES / p->record)
		c1 = c0 + WINDOW_BYTES / p->record;
	if (c1 > p->cells)
		c1 = p->cells;
	tfs_buf_init(&buf, TFS_BUF_NO_MAX);
	e = window_produce(fs, f, &src, c0, c1, &buf, d);
	if (!e) {
		memcpy(dst + n, buf.data + (body_off - c0 * p->record),
		       (size_t)(body_end - body_off));
		*got = (size_t)(end - off);
		pthread_mutex_lock(&f->lock);
		tfs_buf_release(&f->win);
		f->win = buf;
		f->win_c0 = c0;
		f->win_c1 = c1;
		pthread_mutex_unlock(&f->lock);
	} else {
		tfs_buf_release(&buf);
	}
	/* Sequential reader: decode the next window while this one is
	 * consumed. */
	if (!e && __atomic_exchange_n(&f->last_end, end, __ATOMIC_RELAXED) == off)
		prefetch_dense(p, src, c1, c1 + (c1 - c0));
	tfsd_arr_put(fs->arrays, src);
	return e;
}

/* Checks the bytes a replaying stream re produced (see stream_recover)
 * against those st still holds, below target, and drops them from re. */
static enum tfs_err replay_check(struct stream *re, const struct stream *st,
				 uint64_t target, const char *vpath,
				 struct tfs_diag *d)
{
	uint64_t end = re->base + re->out.len;
	uint64_t lo = re->base > st->base ? re->base : st->base;
	uint64_t hi = end < target ? end : target;
	size_t drop;

	if (lo < hi && memcmp(re->out.data + (lo - re->base),
			      st->out.data + (lo - st->base), (size_t)(hi - lo)))
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': after fragments were vacuumed, the "
				"array opened again gives other bytes at "
				"offset %" PRIu64 " or after", vpath, lo);
	if (re->base >= hi)
		return TFS_E_OK;
	drop = (size_t)(hi - re->base);
	memmove(re->out.data, re->out.data + drop, re->out.len - drop);
	re->out.len -= drop;
	re->base = hi;
	return TFS_E_OK;
}

/* Produces the stream again on a new stream re, from the start up to
 * target, checking the bytes against those st still holds and dropping
 * them as they come (memory: one step). *step_failed: the failure, if
 * any, is a step's (a vacuum may have removed more). */
static enum tfs_err replay(struct stream *re, const struct stream *st,
			   uint64_t target, const char *vpath,
			   bool *step_failed, struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	*step_failed = false;
	while (!e && !re->done && re->base + re->out.len < target) {
		e = stream_step(re, d);
		*step_failed = e != TFS_E_OK;
		if (!e)
			e = stream_account(re, d);
		if (!e)
			e = replay_check(re, st, target, vpath, d);
	}
	if (!e && re->base + re->out.len < target)
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "'%s': after fragments were vacuumed, the array "
			     "opened again ends at offset %" PRIu64 ", before "
			     "the %" PRIu64 " bytes read", vpath,
			     re->base + re->out.len, target);
	return e;
}

/* A step of f's stream met a missing file (e, d); its bytes below
 * base + good are intact. When a vacuum removed fragments of the view
 * and a new opening of it shows the same cells (view_reopen), a new
 * stream on that replays the file up to there and goes on in place of
 * the old one; f reads that opening from then on. The caller holds
 * f->lock. */
static enum tfs_err stream_recover(struct tfsd *fs, struct tfsd_file *f,
				   size_t good, enum tfs_err e,
				   struct tfs_diag *d)
{
	struct stream *st = &f->st, re;
	uint64_t target = st->base + good, charged;
	struct tfsd_arr *src = f->src, *fresh;
	struct tfs_buf tmp;
	bool step_failed = true;
	char when[32];

	st->out.len = good;
	memset(&re, 0, sizeof(re));
	for (int i = 0; e && step_failed && i < VANISH_RETRIES; i++) {
		stream_release(&re);
		e = view_reopen(fs, f, src, &fresh, e, d);
		if (e)
			break;
		if (src != f->src)
			tfsd_arr_put(fs->arrays, src);
		src = fresh;
		e = stream_init(&re, &f->plan, src);
		if (!e)
			e = replay(&re, st, target, f->vpath, &step_failed, d);
	}
	/* st's bytes, then re's from target on, in st's buffer, which re
	 * takes (with what it counts). */
	if (!e)
		e = tfs_buf_append(&st->out, re.out.data, re.out.len);
	if (e) {
		/* f stays on its opening: a read again fails again rather
		 * than show another view. */
		stream_release(&re);
		if (src != f->src)
			tfsd_arr_put(fs->arrays, src);
		return e;
	}
	tmp = re.out;
	re.out = st->out;
	st->out = tmp;
	charged = re.charged;
	re.charged = st->charged;
	st->charged = charged;
	re.base = st->base;
	stream_release(st);
	*st = re;
	st->em.out = &st->out;
	tfsd_arr_put(fs->arrays, f->src);
	f->src = src;
	tfsd_format_time(when, sizeof(when), tfs_array_timestamp(src->a));
	tfs_log(TFS_LOG_INFO, "'/%s': fragments were vacuumed while it was "
		"read; reading on from the array opened again as of %s, the "
		"same %" PRIu64 " bytes up to here", f->vpath, when, target);
	return stream_account(st, d);
}

static enum tfs_err read_stream(struct tfsd *fs, struct tfsd_file *f,
				uint64_t off, uint8_t *dst, size_t len,
				size_t *got, struct tfs_diag *d)
{
	struct stream *st = &f->st;
	enum tfs_err e = TFS_E_OK;
	uint64_t avail_end;

	*got = 0;
	pthread_mutex_lock(&f->lock);
	if (off < st->base || st->failed) {
		/* Behind what is kept, or after a failure: start again from
		 * the beginning. */
		stream_release(st);
		e = stream_init(st, &f->plan, f->src);
	}
	while (!e && !st->done && st->base + st->out.len < off + len) {
		size_t good = st->out.len;

		e = stream_step(st, d);
		if (e)
			e = stream_recover(fs, f, good, e, d);
		if (!e)
			e = stream_account(st, d);
		/* Drop what lies well behind the reader. */
		if (!e && off > st->base + KEEP_BEHIND) {
			uint64_t drop = off - KEEP_BEHIND - st->base;

			if (drop > st->out.len)
				drop = st->out.len;
			memmove(st->out.data, st->out.data + drop,
				st->out.len - drop);
			st->out.len -= drop;
			st->base += drop;
		}
	}
	if (!e) {
		avail_end = st->base + st->out.len;
		if (off < avail_end) {
			uint64_t n = avail_end - off < len ? avail_end - off : len;

			memcpy(dst, st->out.data + (off - st->base), n);
			*got = (size_t)n;
		}
		if (st->done && !f->size_learned) {
			f->size_learned = true;
			renders_put(fs->renders, f->plan.arr->gen, f->vpath,
				    NULL, avail_end);
		}
	}
	st->failed = e != TFS_E_OK;
	pthread_mutex_unlock(&f->lock);
	return e;
}

enum tfs_err tfsd_file_read(struct tfsd *fs, struct tfsd_file *f, uint64_t off,
			    uint8_t *dst, size_t len, size_t *got,
			    struct tfs_diag *d)
{
	switch (f->how) {
	case SERVE_WHOLE:
		*got = 0;
		if (off < f->size) {
			*got = (size_t)(f->size - off < len ? f->size - off : len);
			memcpy(dst, f->data + off, *got);
		}
		return TFS_E_OK;
	case SERVE_RANDOM:
		return read_random(fs, f, off, dst, len, got, d);
	case SERVE_STREAM:
		return read_stream(fs, f, off, dst, len, got, d);
	}
	return TFS_E_INTERNAL;
}

void tfsd_file_close(struct tfsd *fs, struct tfsd_file *f)
{
	if (!f)
		return;
	if (f->how == SERVE_STREAM)
		stream_release(&f->st);
	uncharge(fs, f->charged);
	tfsd_arr_put(fs->arrays, f->src);
	tfs_buf_release(&f->win);
	if (f->plan.s)
		plan_release(fs, &f->plan);
	pthread_mutex_destroy(&f->lock);
	tfs_free(f->data);
	tfs_free(f->vpath);
	tfs_free(f);
}
