/* Hilbert values (format/read.md §6): the worked example of the format
 * notes, the coordinate mappings and their edge cases. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "../../../core/read/tfs_sparse.h"

static uint64_t h2(int32_t a, int32_t b, int32_t lo, int32_t hi)
{
	unsigned bits = tfs_hilbert_bits(2);
	uint64_t x[2];

	x[0] = tfs_hilbert_map_num(TFS_INT32, &a, &lo, &hi, bits);
	x[1] = tfs_hilbert_map_num(TFS_INT32, &b, &lo, &hi, bits);
	return tfs_hilbert_index(x, 2, bits);
}

Test(hilbert, bits)
{
	cr_assert_eq(tfs_hilbert_bits(1), 63);
	cr_assert_eq(tfs_hilbert_bits(2), 31);
	cr_assert_eq(tfs_hilbert_bits(3), 21);
	cr_assert_eq(tfs_hilbert_bits(4), 15);
	cr_assert_eq(tfs_hilbert_bits(0), 0);
}

Test(hilbert, worked_example_values)
{
	cr_assert_eq(h2(0, 1, 0, 3), UINT64_C(1064235235021704900));
	cr_assert_eq(h2(3, 0, 0, 3), UINT64_C(4611686018427387903));
	cr_assert_eq(h2(0, 0, 0, 3), 0);
}

Test(hilbert, worked_example_order)
{
	static const int32_t order[16][2] = {
		{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 2}, {0, 3}, {1, 3}, {1, 2},
		{2, 2}, {2, 3}, {3, 3}, {3, 2}, {3, 1}, {2, 1}, {2, 0}, {3, 0},
	};

	for (int i = 1; i < 16; i++) {
		uint64_t prev = h2(order[i - 1][0], order[i - 1][1], 0, 3);
		uint64_t cur = h2(order[i][0], order[i][1], 0, 3);

		cr_assert_lt(prev, cur, "(%d,%d) before (%d,%d)", order[i - 1][0],
			     order[i - 1][1], order[i][0], order[i][1]);
	}
}

Test(hilbert, map_numeric)
{
	unsigned bits = tfs_hilbert_bits(2);
	uint64_t maxb = (UINT64_C(1) << bits) - 1;
	int32_t lo = 0, hi = 3, c = 1;
	double dlo = -1.5, dhi = 1.5, dc = 0;
	int64_t llo = -100, lhi = 100, lc = 100;
	uint8_t ulo = 5, uhi = 5, uc = 5;

	/* (1 − 0) / 3 · maxb, truncated. */
	cr_assert_eq(tfs_hilbert_map_num(TFS_INT32, &c, &lo, &hi, bits),
		     (uint64_t)(1.0 / 3.0 * (double)maxb));
	cr_assert_eq(tfs_hilbert_map_num(TFS_INT32, &hi, &lo, &hi, bits), maxb);
	cr_assert_eq(tfs_hilbert_map_num(TFS_FLOAT64, &dc, &dlo, &dhi, bits),
		     (uint64_t)(0.5 * (double)maxb));
	cr_assert_eq(tfs_hilbert_map_num(TFS_INT64, &lc, &llo, &lhi, bits),
		     maxb);
	/* Degenerate domain and out-of-domain values clamp, never trap. */
	cr_assert_eq(tfs_hilbert_map_num(TFS_UINT8, &uc, &ulo, &uhi, bits), 0);
	c = -7;
	cr_assert_eq(tfs_hilbert_map_num(TFS_INT32, &c, &lo, &hi, bits), 0);
	c = 99;
	cr_assert_eq(tfs_hilbert_map_num(TFS_INT32, &c, &lo, &hi, bits), maxb);
}

Test(hilbert, map_string)
{
	unsigned bits = tfs_hilbert_bits(2);
	const uint8_t ab[] = {'a', 'b'};
	const uint8_t hi[] = {0x80};
	const uint8_t nine[] = "abcdefghi";

	/* "ab" = 0x6162 << 48, top 31 bits. */
	cr_assert_eq(tfs_hilbert_map_str(ab, 2, bits),
		     (UINT64_C(0x6162) << 48) >> (64 - bits));
	cr_assert_eq(tfs_hilbert_map_str(ab, 0, bits), 0);
	/* A byte >= 0x80 is sign-extended as x86 TileDB does. */
	cr_assert_eq(tfs_hilbert_map_str(hi, 1, bits),
		     (UINT64_C(0x80) << 56) >> (64 - bits));
	{
		const uint8_t low_hi[] = {'a', 0x80};
		uint64_t v = (UINT64_C(0x61) << 56) |
			     (UINT64_C(0xffffffffffffff80) << 48);

		cr_assert_eq(tfs_hilbert_map_str(low_hi, 2, bits),
			     v >> (64 - bits));
	}
	/* Only the first 8 bytes count. */
	cr_assert_eq(tfs_hilbert_map_str(nine, 9, bits),
		     tfs_hilbert_map_str(nine, 8, bits));
}

Test(hilbert, one_dimension_is_identity)
{
	uint64_t x = 12345;

	cr_assert_eq(tfs_hilbert_index(&x, 1, 63), 12345);
}

Test(hilbert, three_dimensions_visit_every_cell_once)
{
	unsigned bits = tfs_hilbert_bits(3);
	uint64_t seen[64];
	int32_t lo = 0, hi = 3;

	for (int i = 0; i < 64; i++) {
		int32_t c[3] = {i / 16, (i / 4) % 4, i % 4};
		uint64_t x[3];

		for (int k = 0; k < 3; k++)
			x[k] = tfs_hilbert_map_num(TFS_INT32, &c[k], &lo, &hi,
						   bits);
		seen[i] = tfs_hilbert_index(x, 3, bits);
		cr_assert_lt(seen[i], UINT64_C(1) << 63);
		for (int j = 0; j < i; j++)
			cr_assert_neq(seen[i], seen[j]);
	}
}
