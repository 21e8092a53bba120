/* The writer's column store of cells and the global order of a schema
 * (format/read.md §5 and §6): tile comparison over the fixed-size
 * dimensions with extents in tile order, then coordinates in cell order;
 * Hilbert orders compare a precomputed Hilbert value first. */
#include "write_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_datatype.h"

enum tfs_err tfs__cells_init(struct tfs__cells *c, uint32_t field_num)
{
	memset(c, 0, sizeof(*c));
	c->cols = tfs_callocn(field_num ? field_num : 1, sizeof(*c->cols));
	if (!c->cols)
		return TFS_E_NOMEM;
	c->field_num = field_num;
	for (uint32_t f = 0; f < field_num; f++) {
		tfs_buf_init(&c->cols[f].data, TFS_BUF_NO_MAX);
		tfs_buf_init(&c->cols[f].offs, TFS_BUF_NO_MAX);
		tfs_buf_init(&c->cols[f].valid, TFS_BUF_NO_MAX);
	}
	tfs_buf_init(&c->keys, TFS_BUF_NO_MAX);
	tfs_buf_init(&c->tags, TFS_BUF_NO_MAX);
	return TFS_E_OK;
}

void tfs__cells_release(struct tfs__cells *c)
{
	if (!c->cols)
		return;
	for (uint32_t f = 0; f < c->field_num; f++) {
		tfs_buf_release(&c->cols[f].data);
		tfs_buf_release(&c->cols[f].offs);
		tfs_buf_release(&c->cols[f].valid);
	}
	tfs_free(c->cols);
	tfs_buf_release(&c->keys);
	tfs_buf_release(&c->tags);
	memset(c, 0, sizeof(*c));
}

void tfs__cells_clear(struct tfs__cells *c)
{
	for (uint32_t f = 0; f < c->field_num; f++) {
		c->cols[f].data.len = 0;
		c->cols[f].offs.len = 0;
		c->cols[f].valid.len = 0;
	}
	c->keys.len = 0;
	c->tags.len = 0;
	c->cell_num = 0;
}

uint64_t tfs__cells_bytes(const struct tfs__cells *c)
{
	uint64_t n = c->keys.len + c->tags.len;

	for (uint32_t f = 0; f < c->field_num; f++)
		n += c->cols[f].data.len + c->cols[f].offs.len +
		     c->cols[f].valid.len;
	return n;
}

enum tfs_err tfs__cells_copy_run(struct tfs__cells *dst,
				 const struct tfs__field *fields,
				 const struct tfs__cells *src, uint64_t i,
				 uint64_t n)
{
	enum tfs_err e;

	for (uint32_t f = 0; f < src->field_num; f++) {
		const struct tfs__col *sc = &src->cols[f];
		struct tfs__col *dc = &dst->cols[f];

		if (fields[f].var) {
			for (uint64_t k = i; k < i + n; k++) {
				uint64_t len;
				const uint8_t *p = tfs__var_cell(src, f, k, &len);

				if ((e = tfs_buf_append_u64(&dc->offs, dc->data.len)) ||
				    (e = tfs_buf_append(&dc->data, p, (size_t)len)))
					return e;
			}
		} else {
			size_t cs = (size_t)fields[f].cell_size;

			if ((e = tfs_buf_append(&dc->data, sc->data.data + i * cs,
						(size_t)n * cs)))
				return e;
		}
		if (fields[f].nullable &&
		    (e = tfs_buf_append(&dc->valid, sc->valid.data + i, (size_t)n)))
			return e;
	}
	if (src->keys.len &&
	    (e = tfs_buf_append(&dst->keys, src->keys.data + i * 8, (size_t)n * 8)))
		return e;
	if ((e = tfs_buf_append(&dst->tags, src->tags.data + i * 8, (size_t)n * 8)))
		return e;
	dst->cell_num += n;
	return TFS_E_OK;
}

enum tfs_err tfs__cells_copy(struct tfs__cells *dst,
			     const struct tfs__field *fields,
			     const struct tfs__cells *src, uint64_t i)
{
	return tfs__cells_copy_run(dst, fields, src, i, 1);
}

static uint64_t tile_idx(const struct tfs_dim *dm, const uint8_t *v);

void tfs__order_init(struct tfs__order *o, const struct tfs_schema *s,
		     const struct tfs__field *fields)
{
	memset(o, 0, sizeof(*o));
	o->s = s;
	o->fields = fields;
	o->dim_num = s->dim_num;
	o->hilbert = s->cell_order == TFS_HILBERT;
	o->col_tiles = s->tile_order == TFS_COL_MAJOR;
	o->col_cells = s->cell_order == TFS_COL_MAJOR;
	for (uint32_t k = 0; k < s->dim_num && k < 128; k++)
		o->tile_dim[k] = !s->dims[k].var && s->dims[k].has_extent &&
				 s->dims[k].has_domain;
	o->keyed = o->hilbert;
	o->key2 = true;
	for (uint32_t k = 0; k < s->dim_num && k < 128; k++)
		if (o->tile_dim[k])
			o->key2 = false;
	if (o->hilbert)
		o->key2 = true;
	if (o->hilbert || s->dim_num > 128)
		return;
	/* Tile numbers: strides in tile order over the grid of the
	 * dimensions that take part in the tile comparison (the others, string
	 * dimensions, add nothing to it, as in read.md §5). */
	uint64_t stride = 1;
	bool any = false;

	for (uint32_t n = 0; n < s->dim_num; n++) {
		uint32_t k = o->col_tiles ? n : s->dim_num - 1 - n;
		uint64_t tiles;

		if (!o->tile_dim[k])
			continue;
		any = true;
		tiles = tile_idx(&s->dims[k], s->dims[k].domain[1]);
		if (tiles == UINT64_MAX)
			return;
		tiles++;
		o->tile_stride[k] = stride;
		if (stride > UINT64_MAX / tiles)
			return;
		stride *= tiles;
	}
	o->keyed = any;
	o->key2 = true;
}

uint64_t tfs__order_key2(const struct tfs__order *o, const struct tfs__cells *c,
			 uint64_t i)
{
	uint32_t k = o->col_cells && !o->hilbert ? o->dim_num - 1 : 0;
	const struct tfs__field *f = &o->fields[k];
	const uint8_t *p;
	uint64_t v = 0, len;

	if (f->var) {
		p = tfs__var_cell(c, k, i, &len);
		for (uint64_t b = 0; b < 8; b++)
			v = (v << 8) | (b < len ? p[b] : 0);
		return v;
	}
	p = c->cols[k].data.data + i * f->cell_size;
	switch (tfs_datatype_class(f->type)) {
	case TFS_CLASS_SIGNED:
		return (uint64_t)tfs_value_as_i64(f->type, p) ^ (UINT64_C(1) << 63);
	case TFS_CLASS_FLOAT: {
		double dv = tfs_value_as_f64(f->type, p);
		uint64_t bits;

		if (dv == 0)
			dv = 0; /* -0 and +0 compare equal */
		memcpy(&bits, &dv, 8);
		return bits >> 63 ? ~bits : bits | (UINT64_C(1) << 63);
	}
	default:
		return tfs_value_as_u64(f->type, p);
	}
}

uint64_t tfs__order_key(const struct tfs__order *o, const struct tfs__cells *c,
			uint64_t i)
{
	uint64_t key = 0;

	if (o->hilbert)
		return tfs__hilbert_key(o, c, i);
	for (uint32_t k = 0; k < o->dim_num; k++)
		if (o->tile_dim[k])
			key += o->tile_stride[k] *
			       tile_idx(&o->s->dims[k],
					c->cols[k].data.data +
						i * o->fields[k].cell_size);
	return key;
}

/* Space tile index of value v of dimension k: floor((v − lo) / extent),
 * in the dimension's own type for floats (read.md §10). */
static uint64_t tile_idx(const struct tfs_dim *dm, const uint8_t *v)
{
	switch (tfs_datatype_class(dm->type)) {
	case TFS_CLASS_SIGNED: {
		int64_t x = tfs_value_as_i64(dm->type, v);
		int64_t lo = tfs_value_as_i64(dm->type, dm->domain[0]);
		uint64_t ext = tfs_value_as_u64(dm->type, dm->extent);

		return ext ? ((uint64_t)x - (uint64_t)lo) / ext : 0;
	}
	case TFS_CLASS_UNSIGNED: {
		uint64_t x = tfs_value_as_u64(dm->type, v);
		uint64_t lo = tfs_value_as_u64(dm->type, dm->domain[0]);
		uint64_t ext = tfs_value_as_u64(dm->type, dm->extent);

		return ext ? (x - lo) / ext : 0;
	}
	case TFS_CLASS_FLOAT:
		if (dm->type == TFS_FLOAT32) {
			float x, lo, ext, q;

			memcpy(&x, v, 4);
			memcpy(&lo, dm->domain[0], 4);
			memcpy(&ext, dm->extent, 4);
			q = (x - lo) / ext;
			return q > 0 && q < 1.8e19f ? (uint64_t)q : 0;
		} else {
			double x, lo, ext, q;

			memcpy(&x, v, 8);
			memcpy(&lo, dm->domain[0], 8);
			memcpy(&ext, dm->extent, 8);
			q = (x - lo) / ext;
			return q > 0 && q < 1.8e19 ? (uint64_t)q : 0;
		}
	default:
		return 0;
	}
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int dim_cmp(const struct tfs__order *o, uint32_t k,
		   const struct tfs__cells *a, uint64_t i,
		   const struct tfs__cells *b, uint64_t j)
{
	const struct tfs__field *f = &o->fields[k];

	if (f->var) {
		uint64_t la, lb;
		const uint8_t *pa = tfs__var_cell(a, k, i, &la);
		const uint8_t *pb = tfs__var_cell(b, k, j, &lb);

		return tfs_bytes_cmp(pa, (size_t)la, pb, (size_t)lb);
	}
	return tfs_value_cmp(f->type, a->cols[k].data.data + i * f->cell_size,
			     b->cols[k].data.data + j * f->cell_size);
}

static int coords_cmp(const struct tfs__order *o, bool col,
		      const struct tfs__cells *a, uint64_t i,
		      const struct tfs__cells *b, uint64_t j)
{
	for (uint32_t n = 0; n < o->dim_num; n++) {
		uint32_t k = col ? o->dim_num - 1 - n : n;
		int r = dim_cmp(o, k, a, i, b, j);

		if (r)
			return r;
	}
	return 0;
}

int tfs__order_cmp(const struct tfs__order *o, const struct tfs__cells *a,
		   uint64_t i, const struct tfs__cells *b, uint64_t j)
{
	if (o->keyed) {
		uint64_t ka, kb;
		int r;

		ka = tfs_get_u64(a->keys.data + i * 8);
		kb = tfs_get_u64(b->keys.data + j * 8);
		r = cmp_u64(ka, kb);
		if (r)
			return r;
		return coords_cmp(o, o->hilbert ? false : o->col_cells, a, i, b,
				  j);
	}
	for (uint32_t n = 0; n < o->dim_num; n++) {
		uint32_t k = o->col_tiles ? o->dim_num - 1 - n : n;
		const struct tfs_dim *dm = &o->s->dims[k];
		uint64_t cs = o->fields[k].cell_size;
		int r;

		if (!o->tile_dim[k])
			continue;
		r = cmp_u64(tile_idx(dm, a->cols[k].data.data + i * cs),
			    tile_idx(dm, b->cols[k].data.data + j * cs));
		if (r)
			return r;
	}
	return coords_cmp(o, o->col_cells, a, i, b, j);
}

bool tfs__coords_equal(const struct tfs__order *o, const struct tfs__cells *a,
		       uint64_t i, const struct tfs__cells *b, uint64_t j)
{
	return coords_cmp(o, false, a, i, b, j) == 0;
}

uint64_t tfs__hilbert_key(const struct tfs__order *o,
			  const struct tfs__cells *c, uint64_t i)
{
	uint64_t x[128];
	unsigned bits = tfs_hilbert_bits(o->dim_num);

	for (uint32_t k = 0; k < o->dim_num && k < 128; k++) {
		const struct tfs_dim *dm = &o->s->dims[k];

		if (o->fields[k].var) {
			uint64_t len;
			const uint8_t *p = tfs__var_cell(c, k, i, &len);

			x[k] = tfs_hilbert_map_str(p, len, bits);
		} else {
			x[k] = tfs_hilbert_map_num(
				dm->type,
				c->cols[k].data.data + i * o->fields[k].cell_size,
				dm->domain[0], dm->domain[1], bits);
		}
	}
	return tfs_hilbert_index(x, o->dim_num, bits);
}

static size_t put_value(char *buf, size_t cap, uint8_t type, const uint8_t *p)
{
	int n;

	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
		n = snprintf(buf, cap, "%" PRId64, tfs_value_as_i64(type, p));
		break;
	case TFS_CLASS_UNSIGNED:
		n = snprintf(buf, cap, "%" PRIu64, tfs_value_as_u64(type, p));
		break;
	case TFS_CLASS_FLOAT:
		n = snprintf(buf, cap, "%.17g", tfs_value_as_f64(type, p));
		break;
	default:
		n = snprintf(buf, cap, "?");
		break;
	}
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap ? cap - 1 : 0;
}

void tfs__coords_format(char *buf, size_t cap, const struct tfs__order *o,
			const struct tfs__cells *c, uint64_t i)
{
	size_t at = 0;

	if (cap < 4)
		return;
	buf[at++] = '(';
	for (uint32_t k = 0; k < o->dim_num && at + 3 < cap; k++) {
		if (k) {
			buf[at++] = ',';
			buf[at++] = ' ';
		}
		if (o->fields[k].var) {
			uint64_t len;
			const uint8_t *p = tfs__var_cell(c, k, i, &len);
			int n = snprintf(buf + at, cap - at, "'%.*s'",
					 (int)(len > 64 ? 64 : len),
					 (const char *)p);

			if (n > 0)
				at += (size_t)n < cap - at ? (size_t)n
							   : cap - at - 1;
		} else {
			at += put_value(buf + at, cap - at, o->fields[k].type,
					c->cols[k].data.data +
						i * o->fields[k].cell_size);
		}
	}
	if (at + 2 <= cap) {
		buf[at++] = ')';
	}
	buf[at < cap ? at : cap - 1] = '\0';
}
