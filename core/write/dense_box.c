/* Dense box writes without sorting (format/write.md §4): cells arrive
 * row-major over the box, dimension 0 slowest, so the cells of one row of
 * space tiles (the tiles sharing a dimension-0 tile index) arrive together.
 * With row-major tile order that row holds the next tiles in tile order;
 * once its cells are all in, each of its tiles is fed to the tile writer
 * cell by cell in cell order, and the row is dropped. Memory: one row of
 * tiles, whatever the box's size. */
#include "write_internal.h"

#include <string.h>

#include "tfs_bytes.h"

void tfs__cells_drop_front(struct tfs__cells *c, const struct tfs__field *fields,
			   uint64_t k)
{
	if (k >= c->cell_num) {
		tfs__cells_clear(c);
		return;
	}
	for (uint32_t f = 0; f < c->field_num; f++) {
		struct tfs__col *col = &c->cols[f];

		if (fields[f].var) {
			uint64_t *o = (uint64_t *)col->offs.data;
			uint64_t cut = tfs_get_u64(col->offs.data + 8 * k);
			uint64_t left = c->cell_num - k;

			for (uint64_t i = 0; i < left; i++)
				tfs_put_u64(o + i,
					    tfs_get_u64(col->offs.data +
							8 * (k + i)) - cut);
			col->offs.len = (size_t)(8 * left);
			memmove(col->data.data, col->data.data + cut,
				col->data.len - (size_t)cut);
			col->data.len -= (size_t)cut;
		} else {
			size_t cut = (size_t)(k * fields[f].cell_size);

			memmove(col->data.data, col->data.data + cut,
				col->data.len - cut);
			col->data.len -= cut;
		}
		if (fields[f].nullable) {
			memmove(col->valid.data, col->valid.data + k,
				col->valid.len - (size_t)k);
			col->valid.len -= (size_t)k;
		}
	}
	if (c->keys.len) {
		memmove(c->keys.data, c->keys.data + 8 * k,
			c->keys.len - (size_t)(8 * k));
		c->keys.len -= (size_t)(8 * k);
	}
	memmove(c->tags.data, c->tags.data + 8 * k, c->tags.len - (size_t)(8 * k));
	c->tags.len -= (size_t)(8 * k);
	c->cell_num -= k;
}

/* Odometer over D counters, each in [lo[k], hi[k]]; `fast` is the
 * dimension that moves fastest (0 or D-1). False after the last. */
static bool odometer_next(uint64_t *v, const uint64_t *lo, const uint64_t *hi,
			  uint32_t D, bool last_fastest)
{
	for (uint32_t n = 0; n < D; n++) {
		uint32_t k = last_fastest ? D - 1 - n : n;

		if (v[k] < hi[k]) {
			v[k]++;
			return true;
		}
		v[k] = lo[k];
	}
	return false;
}

/* The place of box cell `cell` among the buffered cells. */
static uint64_t box_idx(const uint64_t *cell, uint64_t row0,
			const uint64_t *boxlo, const uint64_t *stride, uint32_t D)
{
	uint64_t idx = (cell[0] - row0) * stride[0];

	for (uint32_t k = 1; k < D; k++)
		idx += (cell[k] - boxlo[k]) * stride[k];
	return idx;
}

enum tfs_err tfs__box_emit(struct tfs__tw *tw, const struct tfs__cells *c,
			   const struct tfs_schema *s, const uint64_t *boxlo,
			   const uint64_t *boxhi, uint64_t row0, uint64_t nrows,
			   struct tfs_diag *d)
{
	uint32_t D = s->dim_num;
	uint64_t ext[128], stride[128], tlo[128], thi[128], t[128];
	uint64_t clo[128], chi[128], cell[128];
	enum tfs_err e;

	if (D == 0 || D > 128 || nrows == 0)
		return TFS_E_OK;
	/* Strides of the buffered cells: row-major over [row0, row0 +
	 * nrows) x the box's other ranges. */
	stride[D - 1] = 1;
	for (uint32_t k = D - 1; k > 0; k--)
		stride[k - 1] = stride[k] * (boxhi[k] - boxlo[k] + 1);
	for (uint32_t k = 0; k < D; k++)
		ext[k] = tfs_value_as_u64(s->dims[k].type, s->dims[k].extent);
	/* The tiles of this row, in row-major tile order. */
	tlo[0] = thi[0] = row0 / ext[0];
	for (uint32_t k = 1; k < D; k++) {
		tlo[k] = boxlo[k] / ext[k];
		thi[k] = boxhi[k] / ext[k];
	}
	memcpy(t, tlo, D * sizeof(*t));
	do {
		/* This tile's cells inside the box (and the row). */
		for (uint32_t k = 0; k < D; k++) {
			uint64_t a = t[k] * ext[k], b = a + ext[k] - 1;
			uint64_t blo = k ? boxlo[k] : row0;
			uint64_t bhi = k ? boxhi[k] : row0 + nrows - 1;

			clo[k] = a > blo ? a : blo;
			chi[k] = b < bhi ? b : bhi;
		}
		memcpy(cell, clo, D * sizeof(*cell));
		if (s->cell_order == TFS_COL_MAJOR) {
			do {
				if ((e = tfs__tw_add(tw, c, box_idx(cell, row0, boxlo,
								   stride, D), d)))
					return e;
			} while (odometer_next(cell, clo, chi, D, false));
			continue;
		}
		/* Row-major cells: the last dimension's range of the tile is
		 * a run of consecutive cells, both here and in the tile. */
		do {
			if ((e = tfs__tw_add_run(tw, c, box_idx(cell, row0, boxlo,
								stride, D),
						 chi[D - 1] - clo[D - 1] + 1, d)))
				return e;
		} while (D > 1 && odometer_next(cell, clo, chi, D - 1, true));
	} while (odometer_next(t, tlo, thi, D, true));
	return TFS_E_OK;
}
