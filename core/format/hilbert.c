/* Hilbert values of cells, as TileDB orders the cells of arrays whose cell
 * order is HILBERT (format/read.md §6): every coordinate is mapped to an
 * integer grid of 63 / D bits per dimension, then the grid point goes
 * through Skilling's transform ("Programming the Hilbert curve", 2004) and
 * its bits are interleaved, dimension D − 1 lowest. */
#include "tfs_format.h"

#include "tfs_datatype.h"

unsigned tfs_hilbert_bits(unsigned dim_num)
{
	return dim_num ? 63u / dim_num : 0;
}

uint64_t tfs_hilbert_map_num(uint8_t type, const void *c, const void *lo,
			     const void *hi, unsigned bits)
{
	uint64_t maxb;
	double dlo, range, v;

	if (bits == 0 || bits > 63)
		return 0;
	maxb = (UINT64_C(1) << bits) - 1;
	dlo = tfs_value_as_f64(type, lo);
	range = tfs_value_as_f64(type, hi) - dlo;
	if (!(range > 0))
		return 0;
	/* TileDB: (uint64)((c − lo) / (hi − lo) · maxb), all in double. */
	v = (tfs_value_as_f64(type, c) - dlo) / range * (double)maxb;
	if (!(v > 0))
		return 0;
	if (v >= (double)maxb)
		return maxb;
	return (uint64_t)v;
}

uint64_t tfs_hilbert_map_str(const uint8_t *s, uint64_t len, unsigned bits)
{
	uint64_t v = 0;

	if (bits == 0 || bits > 63)
		return 0;
	for (uint64_t i = 0; i < 8 && i < len; i++) {
		/* TileDB reads `char`, signed on x86: sign-extend. */
		int64_t sc = (int8_t)s[i];

		v |= (uint64_t)sc << (56 - 8 * i);
	}
	return v >> (64 - bits);
}

uint64_t tfs_hilbert_index(uint64_t *x, unsigned dim_num, unsigned bits)
{
	uint64_t h = 0, g, t;

	if (dim_num == 0 || bits == 0)
		return 0;
	if (dim_num == 1)
		return x[0];
	/* Undo excess work (Skilling's AxestoTranspose). */
	for (uint64_t q = UINT64_C(1) << (bits - 1); q > 1; q >>= 1) {
		uint64_t p = q - 1;

		for (unsigned i = 0; i < dim_num; i++) {
			if (x[i] & q) {
				x[0] ^= p;
			} else {
				t = (x[0] ^ x[i]) & p;
				x[0] ^= t;
				x[i] ^= t;
			}
		}
	}
	/* Gray encode. */
	for (unsigned i = 1; i < dim_num; i++)
		x[i] ^= x[i - 1];
	g = x[dim_num - 1];
	for (unsigned s = 1; s < bits; s *= 2)
		g ^= g >> s;
	t = x[dim_num - 1] ^ g;
	for (unsigned i = 0; i < dim_num; i++)
		x[i] ^= t;
	/* Interleave: bit j of dimension i lands at j·D + (D − 1 − i). */
	for (unsigned j = 0; j < bits; j++)
		for (unsigned i = dim_num; i-- > 0;)
			h |= ((x[i] >> j) & 1)
			     << (j * dim_num + (dim_num - 1 - i));
	return h;
}
