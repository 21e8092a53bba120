/* tfs_fmt_f64/f32 and tfs_decimal_of_* (core/base/fmt_float.c) against
 * the printf/strtod searches they replaced (fmt_float_oracle.c): the same
 * text for the JSON writer (plain below 1e16), the filter descriptions
 * (plain below 1e15) and the same digits and exponent for the sparse
 * reader's ordering text, on random bit patterns, every exponent with
 * the mantissas at its edges (all powers of two among them), subnormals,
 * powers of ten and their neighbours, decimal-looking values and the
 * integers where plain digits stop. The sweep over all floats is
 * fmt_float_check.c (README.md, "Float formatting"). */
#include <criterion/criterion.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fmt_float_oracle.h"
#include "tfs_fmt_float.h"

static uint64_t next_random(uint64_t *state)
{
	/* splitmix64 */
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static double f64_of(uint64_t bits)
{
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

static float f32_of(uint32_t bits)
{
	float v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

/* The digits of d as text, as the oracle writes them. */
static void decimal_digits(char *out, size_t cap, const struct tfs_decimal *d)
{
	snprintf(out, cap, "%llu", (unsigned long long)d->digits);
}

static void check_f64_json(double v)
{
	char got[TFS_FMT_FLOAT_MAX], want[40];
	size_t n;

	if (!isfinite(v))
		return;
	n = tfs_fmt_f64(got, sizeof(got), v, 1e16);
	fmt_oracle_json_f64(want, sizeof(want), v);
	cr_assert_str_eq(got, want, "double %a", v);
	cr_assert_eq(n, strlen(want), "double %a", v);
}

static void check_f64_pipeline(double v)
{
	char got[TFS_FMT_FLOAT_MAX], want[40];

	if (!isfinite(v))
		return;
	tfs_fmt_f64(got, sizeof(got), v, 1e15);
	fmt_oracle_pipeline(want, sizeof(want), v);
	cr_assert_str_eq(got, want, "double %a (below 1e15)", v);
}

static void check_f64_digits(double v)
{
	struct tfs_decimal d;
	char got[24], want[24];
	int exp;

	if (!isfinite(v) || v == trunc(v))
		return;
	exp = fmt_oracle_digits(want, sizeof(want), v, false);
	tfs_decimal_of_f64(&d, v);
	decimal_digits(got, sizeof(got), &d);
	cr_assert_str_eq(got, want, "double %a", v);
	cr_assert_eq(d.exp10, exp, "double %a", v);
	cr_assert_eq(d.ndigits, (int)strlen(want), "double %a", v);
	cr_assert_eq(d.negative, v < 0, "double %a", v);
}

/* Every use of a double. */
static void check_f64(double v)
{
	check_f64_json(v);
	check_f64_pipeline(v);
	check_f64_digits(v);
	check_f64_json(-v);
}

static void check_f32(float v)
{
	char got[TFS_FMT_FLOAT_MAX], want[40];
	struct tfs_decimal d;
	int exp;

	if (!isfinite(v))
		return;
	tfs_fmt_f32(got, sizeof(got), v, 1e16);
	fmt_oracle_json_f32(want, sizeof(want), v);
	cr_assert_str_eq(got, want, "float %a", (double)v);
	if (v == truncf(v))
		return;
	exp = fmt_oracle_digits(want, sizeof(want), (double)v, true);
	tfs_decimal_of_f32(&d, v);
	decimal_digits(got, sizeof(got), &d);
	cr_assert_str_eq(got, want, "float %a", (double)v);
	cr_assert_eq(d.exp10, exp, "float %a", (double)v);
}

struct text_case {
	double v;
	const char *text;
};

Test(fmt_float, known_texts)
{
	const struct text_case cases[] = {
		{0.0, "0"},
		{-0.0, "-0"},
		{1.0, "1"},
		{-180.0, "-180"},
		{0.1, "0.1"},
		{-2.5, "-2.5"},
		{1.0 / 3, "0.3333333333333333"},
		{2.0 / 3, "0.6666666666666666"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{123456.789, "123456.789"},
		{1e23, "1e+23"},
		{5e-324, "5e-324"},
		{-DBL_TRUE_MIN, "-5e-324"},
		{DBL_MIN, "2.2250738585072014e-308"},
		{DBL_MAX, "1.7976931348623157e+308"},
		/* lopsided interval: the 16-digit nearest falls below it */
		{0x1p-24, "5.9604644775390625e-08"},
		{9007199254740993.0, "9007199254740992"},
		{9999999999999998.0, "9999999999999998"},
		{1e16, "1e+16"},
		{1.2345e16, "1.2345e+16"},
		{12345678901234568.0, "12345678901234568"},
		{18014398509481984.0, "18014398509481984"},
		{0x1p63, "9.223372036854776e+18"},
		{1e300, "1e+300"},
		{4503599627370495.5, "4503599627370495.5"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char got[TFS_FMT_FLOAT_MAX];

		tfs_fmt_f64(got, sizeof(got), cases[i].v, 1e16);
		cr_assert_str_eq(got, cases[i].text, "case %zu", i);
		check_f64(cases[i].v);
	}
}

Test(fmt_float, known_float_texts)
{
	const float v[] = {0.1f, 0.33333334f, 1e-38f, 3.4e38f, FLT_MAX,
			   FLT_MIN, FLT_TRUE_MIN, 16777217.0f, 1e16f, 0x1p-24f};
	const char *want[] = {"0.1", "0.33333334", "1e-38", "3.4e+38",
			      "3.4028235e+38", "1.1754944e-38", "1e-45",
			      "16777216", "1e+16",
			      "5.9604645e-08"};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char got[TFS_FMT_FLOAT_MAX];

		tfs_fmt_f32(got, sizeof(got), v[i], 1e16);
		cr_assert_str_eq(got, want[i], "case %zu", i);
		check_f32(v[i]);
	}
}

/* The decimal's fields and its %g layout at the thresholds. */
Test(fmt_float, decimal_fields_and_layout)
{
	struct tfs_decimal d;
	char t[TFS_FMT_FLOAT_MAX];

	tfs_decimal_of_f64(&d, -0.00012345);
	cr_assert_eq(d.digits, 12345);
	cr_assert_eq(d.ndigits, 5);
	cr_assert_eq(d.exp10, -4);
	cr_assert_eq(d.prec, 5);
	cr_assert(d.negative);
	cr_assert_eq(tfs_decimal_format(t, sizeof(t), &d), 11);
	cr_assert_str_eq(t, "-0.00012345");
	tfs_decimal_of_f64(&d, 1e21);
	tfs_decimal_format(t, sizeof(t), &d);
	cr_assert_str_eq(t, "1e+21");
	d.prec = 22; /* as %.22g would: plain digits */
	tfs_decimal_format(t, sizeof(t), &d);
	cr_assert_str_eq(t, "1000000000000000000000");
	tfs_decimal_of_f32(&d, 0x1p-24f);
	cr_assert_eq(d.digits, 59604645);
	cr_assert_eq(d.exp10, -8);
}

#define RANDOM_F64_PER_TEST 500000

static void random_doubles(uint64_t seed)
{
	for (int i = 0; i < RANDOM_F64_PER_TEST; i++) {
		double v = f64_of(next_random(&seed));

		check_f64_json(v);
		/* the searches from one digit are ten times slower */
		if (i % 32 == 0) {
			check_f64_pipeline(v);
			check_f64_digits(v);
		}
	}
}

/* 2 000 000 random bit patterns in four tests (run in parallel). */
Test(fmt_float, random_doubles_1)
{
	random_doubles(1);
}

Test(fmt_float, random_doubles_2)
{
	random_doubles(2);
}

Test(fmt_float, random_doubles_3)
{
	random_doubles(3);
}

Test(fmt_float, random_doubles_4)
{
	random_doubles(4);
}

static void random_floats(uint64_t seed)
{
	for (int i = 0; i < 1000000; i++)
		check_f32(f32_of((uint32_t)next_random(&seed)));
}

Test(fmt_float, random_floats_1)
{
	random_floats(5);
}

Test(fmt_float, random_floats_2)
{
	random_floats(6);
}

/* Every biased exponent with the mantissas at both ends, the middle and
 * some random ones: all the powers of two (the lopsided intervals), their
 * neighbours, the largest value of each binade, subnormals. */
Test(fmt_float, every_double_exponent)
{
	const uint64_t frac_max = (UINT64_C(1) << 52) - 1;
	uint64_t seed = 7;

	for (uint64_t be = 0; be < 2047; be++) {
		const uint64_t fracs[] = {0, 1, 2, 3, frac_max, frac_max - 1,
					  UINT64_C(1) << 51};

		for (size_t i = 0; i < sizeof(fracs) / sizeof(fracs[0]); i++)
			check_f64(f64_of(be << 52 | fracs[i]));
		for (int i = 0; i < 8; i++)
			check_f64(f64_of(be << 52 |
					 (next_random(&seed) & frac_max)));
	}
}

Test(fmt_float, every_float_exponent)
{
	for (uint32_t be = 0; be < 255; be++) {
		for (uint32_t frac = 0; frac < 512; frac++) {
			check_f32(f32_of(be << 23 | frac));
			check_f32(f32_of(be << 23 | (0x7fffffu - frac)));
			check_f32(f32_of(UINT32_C(1) << 31 | be << 23 | frac));
		}
	}
}

/* The smallest subnormals one by one, and random ones. */
Test(fmt_float, subnormals)
{
	uint64_t seed = 8;

	for (uint64_t c = 1; c <= 4096; c++)
		check_f64(f64_of(c));
	for (int i = 0; i < 50000; i++) {
		double v = f64_of(next_random(&seed) >> 12);

		if (i % 16 == 0)
			check_f64(v);
		else
			check_f64_json(v);
	}
}

/* 10^e for every e a double reaches, and three neighbours on each side. */
Test(fmt_float, powers_of_ten)
{
	for (int e = -325; e <= 309; e++) {
		char text[16];
		double p;

		snprintf(text, sizeof(text), "1e%d", e);
		p = strtod(text, NULL);
		for (int side = -1; side <= 1; side += 2) {
			double v = p;

			for (int k = 0; k < 4; k++) {
				check_f64(v);
				check_f32((float)v);
				v = nextafter(v, side < 0 ? 0 : INFINITY);
			}
		}
	}
}

/* Decimal-looking values (k / 10^j, k 10^j): what tables hold. */
Test(fmt_float, decimal_values)
{
	uint64_t seed = 9;

	for (int i = 0; i < 200000; i++) {
		uint64_t r = next_random(&seed);
		int64_t k = (int64_t)(r >> 20) >> (r & 31);
		double v = (double)k / pow(10, (double)(i % 19));

		double w = (double)(r % 1000000007) *
			   pow(10, (double)(i % 600 - 300));

		if (i % 16 == 0) {
			check_f64(v);
			check_f64(w);
		} else {
			check_f64_json(v);
			check_f64_json(w);
		}
		check_f32((float)v);
	}
}

/* Where plain digits stop (1e16, 1e15 for the filter descriptions), 2^53
 * and the integers beyond. */
Test(fmt_float, integers_around_the_plain_limits)
{
	const double centres[] = {1e16, 1e15, 0x1p53, 0x1p63, 0x1p64, 1e17};

	for (size_t i = 0; i < sizeof(centres) / sizeof(centres[0]); i++) {
		double up = centres[i], down = centres[i];

		for (int k = 0; k < 3000; k++) {
			check_f64(up);
			check_f64(down);
			check_f32((float)up);
			up = nextafter(up, INFINITY);
			down = nextafter(down, 0);
		}
	}
	for (int64_t n = -5000; n <= 5000; n++) {
		check_f64((double)n);
		check_f64((double)n + 0.5);
		check_f32((float)n);
	}
}

/* tfs_fmt_u64/i64 against printf: the edges of every digit count, the
 * extremes and random values. */
static void check_int(int64_t v)
{
	char got[TFS_FMT_INT_MAX + 1], want[32];
	size_t n;

	n = tfs_fmt_i64(got, v);
	got[n] = '\0';
	snprintf(want, sizeof(want), "%" PRId64, v);
	cr_assert_str_eq(got, want);
	n = tfs_fmt_u64(got, (uint64_t)v);
	got[n] = '\0';
	snprintf(want, sizeof(want), "%" PRIu64, (uint64_t)v);
	cr_assert_str_eq(got, want);
}

Test(fmt_int, digit_edges_and_random)
{
	uint64_t seed = 7, p = 1;

	check_int(0);
	check_int(INT64_MIN);
	check_int(INT64_MAX);
	check_int(-1);
	for (int k = 0; k < 19; k++, p *= 10) {
		check_int((int64_t)p);
		check_int((int64_t)p - 1);
		check_int((int64_t)p + 1);
		check_int(-(int64_t)p);
		check_int(1 - (int64_t)p);
	}
	for (int i = 0; i < 200000; i++) {
		uint64_t r = next_random(&seed);

		check_int((int64_t)(r >> (r % 64)));
		check_int((int64_t)r);
	}
}
