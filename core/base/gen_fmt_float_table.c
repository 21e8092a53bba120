/* Build-time generator of the tables of fmt_float.c, written to the file
 * named by argv[1].
 *
 * For every decimal exponent e that the formatter scales by (10^e, e = -k)
 * it writes g(e), the 126-bit integer with
 *     (g - 1) 2^r <= 10^e < g 2^r,    2^125 <= g - 1 < 2^126,
 * that is, 10^e rounded down to 126 significant bits, plus one. For every
 * binary exponent q of a double (float exponents are a subset) it writes
 * the decimal exponents the formatter works at and the left shifts that
 * go with them:
 *     k  = floor(log10(2^q))          (values with both neighbours 2^q away)
 *     kb = floor(log10(3 2^(q-2))) - 1 (powers of two: the neighbour below
 *                                        is 2^(q-1) away)
 *     h  = q + floor(log2(10^-k)) + 2, likewise hb for kb.
 * Everything is computed exactly with a small bignum, so the tables need
 * no floating-point logarithms and no pasted constants. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMBS 48 /* 1536 bits: 10^330 and 2^1300 fit */

#define Q_MIN (-1074) /* binary exponents of doubles (c 2^q) */
#define Q_MAX 971

struct big {
	uint32_t d[LIMBS]; /* little-endian limbs */
};

static void die(const char *msg)
{
	fprintf(stderr, "gen_fmt_float_table: %s\n", msg);
	exit(1);
}

static void big_set(struct big *a, uint32_t v)
{
	memset(a, 0, sizeof(*a));
	a->d[0] = v;
}

static void big_mul_small(struct big *a, uint32_t m)
{
	uint64_t carry = 0;

	for (int i = 0; i < LIMBS; i++) {
		uint64_t t = (uint64_t)a->d[i] * m + carry;

		a->d[i] = (uint32_t)t;
		carry = t >> 32;
	}
	if (carry)
		die("bignum overflow");
}

static void big_shl(struct big *a, int n)
{
	struct big r;

	if (n < 0)
		die("negative shift");
	memset(&r, 0, sizeof(r));
	for (int i = LIMBS - 1; i >= 0; i--) {
		uint64_t v = (uint64_t)a->d[i] << (n % 32);
		int j = i + n / 32;

		if (!a->d[i])
			continue;
		if (j + 1 >= LIMBS && (v >> 32))
			die("bignum overflow");
		if (j >= LIMBS)
			die("bignum overflow");
		r.d[j] |= (uint32_t)v;
		if (j + 1 < LIMBS)
			r.d[j + 1] |= (uint32_t)(v >> 32);
	}
	*a = r;
}

static int big_cmp(const struct big *a, const struct big *b)
{
	for (int i = LIMBS - 1; i >= 0; i--)
		if (a->d[i] != b->d[i])
			return a->d[i] < b->d[i] ? -1 : 1;
	return 0;
}

static void big_sub(struct big *a, const struct big *b)
{
	int64_t borrow = 0;

	for (int i = 0; i < LIMBS; i++) {
		int64_t t = (int64_t)a->d[i] - b->d[i] - borrow;

		borrow = t < 0;
		a->d[i] = (uint32_t)(t + (borrow ? (int64_t)1 << 32 : 0));
	}
	if (borrow)
		die("bignum underflow");
}

static int big_bitlen(const struct big *a)
{
	for (int i = LIMBS - 1; i >= 0; i--)
		if (a->d[i])
			return 32 * i + 32 - __builtin_clz(a->d[i]);
	return 0;
}

static void big_pow(struct big *a, uint32_t base, int n)
{
	big_set(a, 1);
	for (int i = 0; i < n; i++)
		big_mul_small(a, base);
}

/* 10^max(e,0) 2^max(x,0) 3^t, the integer side of the comparisons. */
static void big_term(struct big *a, int e10, int e2, int three)
{
	big_pow(a, 10, e10 > 0 ? e10 : 0);
	if (three)
		big_mul_small(a, 3);
	if (e2 > 0)
		big_shl(a, e2);
}

/* Whether 10^k <= 3^t 2^x (t is 0 or 1), by clearing the denominators. */
static bool pow10_at_most(int k, int t, int x)
{
	struct big l, r;

	big_term(&l, k, -x, 0);
	big_term(&r, -k, x, t);
	return big_cmp(&l, &r) <= 0;
}

/* max{k : 10^k <= 3^t 2^x} */
static int floor_log10(int t, int x)
{
	int k = (int)(x * 0.30103) - 2;

	while (pow10_at_most(k + 1, t, x))
		k++;
	while (!pow10_at_most(k, t, x))
		k--;
	return k;
}

/* floor(log2(10^e)) */
static int floor_log2_pow10(int e)
{
	struct big p;

	big_pow(&p, 10, e < 0 ? -e : e);
	if (e >= 0)
		return big_bitlen(&p) - 1;
	/* 10^-n is no power of two for n > 0: floor = -ceil(log2 10^n) */
	return -big_bitlen(&p);
}

/* floor(n / d), which must be below 2^126, as hi:lo. */
static void big_div_126(const struct big *n, const struct big *d, uint64_t *hi,
			uint64_t *lo)
{
	struct big rem = *n, t = *d;

	big_shl(&t, 126);
	if (big_cmp(&rem, &t) >= 0)
		die("quotient above 2^126");
	*hi = 0;
	*lo = 0;
	for (int bit = 125; bit >= 0; bit--) {
		t = *d;
		big_shl(&t, bit);
		if (big_cmp(&rem, &t) >= 0) {
			big_sub(&rem, &t);
			if (bit >= 64)
				*hi |= (uint64_t)1 << (bit - 64);
			else
				*lo |= (uint64_t)1 << bit;
		}
	}
}

/* g(e) as described at the top. */
static void g_of(int e, uint64_t *hi, uint64_t *lo)
{
	int s = 125 - floor_log2_pow10(e); /* 10^e 2^s in [2^125, 2^126) */
	struct big n, d;

	if (e >= 0) {
		big_pow(&n, 10, e);
		big_set(&d, 1);
		if (s >= 0)
			big_shl(&n, s);
		else
			big_shl(&d, -s);
	} else {
		big_set(&n, 1);
		big_shl(&n, s);
		big_pow(&d, 10, -e);
	}
	big_div_126(&n, &d, hi, lo);
	if (*hi >> 61 != 1)
		die("g outside [2^125, 2^126)");
	if (++*lo == 0)
		++*hi;
}

int main(int argc, char **argv)
{
	int e_min = INT_MAX, e_max = INT_MIN;
	FILE *f;

	if (argc != 2)
		die("usage: gen_fmt_float_table OUT.h");
	f = fopen(argv[1], "w");
	if (!f)
		die("cannot open the output");
	fprintf(f, "/* Generated by gen_fmt_float_table at build time. */\n");
	fprintf(f, "#define FMT_Q_MIN (%d)\n#define FMT_Q_MAX %d\n", Q_MIN, Q_MAX);
	fprintf(f, "static const struct fmt_scale fmt_scales[] = {\n");
	for (int q = Q_MIN; q <= Q_MAX; q++) {
		int k = floor_log10(0, q);
		int kb = floor_log10(1, q - 2) - 1;
		int h = q + floor_log2_pow10(-k) + 2;
		int hb = q + floor_log2_pow10(-kb) + 2;

		/* fmt_float.c relies on these ranges: c << 2 << h stays
		 * below 2^61 (2^64 for the powers of two at hb). */
		if (h < 2 || h > 5 || hb < 5 || hb > 9)
			die("shift out of range");
		fprintf(f, "\t{%d, %d, %d, %d}, /* q = %d */\n", k, h, kb, hb, q);
		e_min = -k < e_min ? -k : e_min;
		e_min = -kb < e_min ? -kb : e_min;
		e_max = -k > e_max ? -k : e_max;
		e_max = -kb > e_max ? -kb : e_max;
	}
	fprintf(f, "};\n");
	fprintf(f, "#define FMT_E_MIN (%d)\n#define FMT_E_MAX %d\n", e_min, e_max);
	fprintf(f, "static const uint64_t fmt_g[][2] = {\n");
	for (int e = e_min; e <= e_max; e++) {
		uint64_t hi, lo;

		g_of(e, &hi, &lo);
		fprintf(f, "\t{0x%016llxu, 0x%016llxu}, /* 10^%d */\n",
			(unsigned long long)hi, (unsigned long long)lo, e);
	}
	fprintf(f, "};\n");
	if (fclose(f))
		die("cannot write the output");
	return 0;
}
