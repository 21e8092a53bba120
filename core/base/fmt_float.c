/* Shortest round-trip decimal text of doubles and floats
 * (tfs_fmt_float.h), with exact integer arithmetic after R. Giulietti's
 * Schubfach ("The Schubfach way to render doubles", 2020).
 *
 * A finite v is c 2^q (integer c); the decimals that read back as v are
 * those of its rounding interval R, whose ends lie halfway to the
 * neighbours (included when c is even, as strtod rounds ties to even).
 * In quarter units 2^(q-2) the ends are cb - 2 and cb + 2 around cb = 4c,
 * or cb - 1 below a power of two. Scaled by 10^-k the interval is 1 to 10
 * units wide when 10^k <= 2^q < 10^(k+1). The three scaled values
 * x 2^q 10^-k come out of one 64 x 126-bit product each, with 10^-k
 * rounded up to 126 bits (fmt_float_table.h, generated at build time) and
 * the product rounded to odd: cut to an integer, lowest bit set when
 * something was cut. Schubfach shows that for every double this equals
 * the exact value rounded to odd, which keeps every comparison with an
 * even integer exact; here those are comparisons of candidates (times 4)
 * with the interval ends, and of v with the midpoint between candidates.
 * The powers-of-two path (a scale of its own), the two smallest
 * subnormals (which Schubfach scales one digit finer) and float precision
 * rely on the same property, checked for every such double and for every
 * float by the tests (tests/unit/base/test_fmt_float.c, fmt_float_check.c).
 *
 * A decimal with fewer digits is a multiple of a larger power of ten, so
 * the shortest decimal of R sits at level k + 1 (at most one multiple of
 * 10^(k+1) fits in R) or else at level k (one of the two multiples of
 * 10^k around v). When both ends are as far from v, the decimal nearest v
 * at that length lies in R too, so this is exactly the search of the
 * header. At a power of two R reaches twice as far above v as below, and
 * the search can pass over a length whose nearest decimal falls below R;
 * there the levels are walked one by one from a scale one digit finer. */
#include "tfs_fmt_float.h"

#include <assert.h>
#include <math.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

/* The decimal levels for one binary exponent q: k and the shift h with
 * x 2^q 10^-k = (x << h) g(-k) 2^-127; kb and hb for powers of two. */
struct fmt_scale {
	int16_t k;
	int8_t h;
	int16_t kb;
	int8_t hb;
};

#include "fmt_float_table.h"

#define F64_FRAC_BITS 52
#define F32_FRAC_BITS 23

static const uint64_t pow10_u64[20] = {
	1u,
	10u,
	100u,
	1000u,
	10000u,
	100000u,
	1000000u,
	10000000u,
	100000000u,
	1000000000u,
	10000000000u,
	100000000000u,
	1000000000000u,
	10000000000000u,
	100000000000000u,
	1000000000000000u,
	10000000000000000u,
	100000000000000000u,
	1000000000000000000u,
	10000000000000000000u,
};

static const char digit_pairs[200] =
	"00010203040506070809101112131415161718192021222324"
	"25262728293031323334353637383940414243444546474849"
	"50515253545556575859606162636465666768697071727374"
	"75767778798081828384858687888990919293949596979899";

/* cp g 2^-127 rounded to odd. Only the cut fraction's top 63 bits decide
 * "exact": g exceeds 10^-k 2^r by less than 1, so an exact product gains
 * less than cp 2^-127 < 2^-63 from it. */
static uint64_t rop(const uint64_t g[2], uint64_t cp)
{
	u128 lo = (u128)g[1] * cp;
	u128 x = (u128)g[0] * cp + (uint64_t)(lo >> 64);

	return (uint64_t)(x >> 63) | (((uint64_t)x << 1) != 0);
}

/* 10^(len-1) <= n < 10^len (n > 0): log10(2) ~ 1233 / 4096 gives len or
 * len - 1 from the bit length. */
static int count_digits(uint64_t n)
{
	int bits = 64 - __builtin_clzll(n | 1);
	int len = (bits * 1233 >> 12) + 1;

	return len - (n < pow10_u64[len - 1]) + (len < 20 && n >= pow10_u64[len]);
}

/* Stores n 10^e (n > 0) without its trailing zeros; prec 0 means the
 * search stopped at the digit count. */
static void set_decimal(struct tfs_decimal *d, uint64_t n, int e, int prec)
{
	assert(n > 0);
	while (n % 10000 == 0) {
		n /= 10000;
		e += 4;
	}
	while (n % 10 == 0) {
		n /= 10;
		e++;
	}
	d->digits = n;
	d->ndigits = count_digits(n);
	d->exp10 = e + d->ndigits - 1;
	d->prec = prec ? prec : d->ndigits;
}

/* c 2^q with both neighbours 2^q away (every value but the powers of two
 * above the smallest normal). */
static void decimal_regular(struct tfs_decimal *d, uint64_t c, int q)
{
	const struct fmt_scale *sc = &fmt_scales[q - FMT_Q_MIN];
	const uint64_t *g = fmt_g[-sc->k - FMT_E_MIN];
	uint64_t out = c & 1; /* the ends do not read back as v */
	uint64_t cb = c << 2;
	uint64_t vb = rop(g, cb << sc->h);
	uint64_t vbl = rop(g, (cb - 2) << sc->h);
	uint64_t vbr = rop(g, (cb + 2) << sc->h);
	uint64_t s = vb >> 2, t = s + 1;
	uint64_t sp = s / 10 * 10, tp = sp + 10;
	bool upin = vbl + out <= sp << 2, wpin = (tp << 2) + out <= vbr;
	bool uin, win;

	/* One multiple of 10^(k+1) in R: the shortest, and nearest v. */
	if (upin != wpin) {
		set_decimal(d, upin ? sp : tp, sc->k, 0);
		return;
	}
	/* Otherwise s or t 10^k, whichever is in R, or the nearer. */
	uin = vbl + out <= s << 2;
	win = (t << 2) + out <= vbr;
	if (uin != win) {
		set_decimal(d, uin ? s : t, sc->k, 0);
		return;
	}
	assert(uin);
	if (vb < (s << 2) + 2 || (vb == (s << 2) + 2 && !(s & 1)))
		set_decimal(d, s, sc->k, 0);
	else
		set_decimal(d, t, sc->k, 0);
}

/* c 2^q with c = 2^frac_bits and q above the minimum: the neighbour below
 * is half as far, R = [v - 2^(q-2), v + 2^(q-1)], both ends included
 * (c is even). At level kb + 1 a decimal nearest v is always within 2^(q-2)
 * of it, so the walk from one digit up to that level stops there at the
 * latest; kb is one finer so that the nearest decimal at kb + 1 can be
 * told (x 2^q 10^-kb has 17 or more digits for doubles, 9 or more for
 * floats). */
static void decimal_power_of_two(struct tfs_decimal *d, uint64_t c, int q,
				 int max_prec)
{
	const struct fmt_scale *sc = &fmt_scales[q - FMT_Q_MIN];
	const uint64_t *g = fmt_g[-sc->kb - FMT_E_MIN];
	uint64_t cb = c << 2;
	uint64_t vb = rop(g, cb << sc->hb);
	uint64_t vbl = rop(g, (cb - 1) << sc->hb);
	uint64_t vbr = rop(g, (cb + 2) << sc->hb);
	uint64_t s = vb >> 2; /* floor(v 10^-kb) */
	bool exact = (vb & 3) == 0;
	int len = count_digits(s);

	assert(len >= max_prec);
	for (int prec = 1;; prec++) {
		int i = len - prec; /* level kb + i holds prec digits */
		uint64_t unit = pow10_u64[i], n = s / unit, r = s % unit, m;
		int cmp; /* v beyond n 10^(kb+i) against half a unit */

		if (i == 0)
			cmp = vb < (s << 2) + 2 ? -1 : vb > (s << 2) + 2;
		else
			cmp = r < unit / 2 ? -1 : r > unit / 2 || !exact;
		n += cmp > 0 || (cmp == 0 && (n & 1));
		m = n * unit << 2; /* at most 8 s < 2^64 */
		if (prec == max_prec || (vbl <= m && m <= vbr)) {
			set_decimal(d, n, sc->kb + i, prec);
			return;
		}
	}
}

void tfs_decimal_of_f64(struct tfs_decimal *d, double v)
{
	uint64_t bits, frac;
	int be;

	memcpy(&bits, &v, sizeof(bits));
	frac = bits & (((uint64_t)1 << F64_FRAC_BITS) - 1);
	be = (int)(bits >> F64_FRAC_BITS) & 0x7ff;
	assert(be != 0x7ff && (be != 0 || frac != 0));
	d->negative = bits >> 63;
	if (be == 0)
		decimal_regular(d, frac, 1 - 1075);
	else if (frac == 0 && be > 1)
		decimal_power_of_two(d, (uint64_t)1 << F64_FRAC_BITS, be - 1075,
				     17);
	else
		decimal_regular(d, frac | (uint64_t)1 << F64_FRAC_BITS,
				be - 1075);
}

void tfs_decimal_of_f32(struct tfs_decimal *d, float v)
{
	uint32_t bits, frac;
	int be;

	memcpy(&bits, &v, sizeof(bits));
	frac = bits & ((UINT32_C(1) << F32_FRAC_BITS) - 1);
	be = (int)(bits >> F32_FRAC_BITS) & 0xff;
	assert(be != 0xff && (be != 0 || frac != 0));
	d->negative = bits >> 31;
	if (be == 0)
		decimal_regular(d, frac, 1 - 150);
	else if (frac == 0 && be > 1)
		decimal_power_of_two(d, (uint64_t)1 << F32_FRAC_BITS, be - 150,
				     9);
	else
		decimal_regular(d, frac | UINT32_C(1) << F32_FRAC_BITS,
				be - 150);
}

/* The len decimal digits of n (len <= 8), ending at end. */
static void put_digits_u32(char *end, uint32_t n, int len)
{
	while (len >= 2) {
		uint32_t r = n % 100;

		n /= 100;
		end -= 2;
		memcpy(end, digit_pairs + 2 * r, 2);
		len -= 2;
	}
	if (len)
		*--end = (char)('0' + n);
}

/* The len decimal digits of n (len <= 20) at p. */
static void put_digits(char *p, uint64_t n, int len)
{
	while (len > 8) {
		put_digits_u32(p + len, (uint32_t)(n % 100000000), 8);
		n /= 100000000;
		len -= 8;
	}
	put_digits_u32(p + len, (uint32_t)n, len);
}

size_t tfs_decimal_format(char *dst, size_t dst_cap,
			  const struct tfs_decimal *d)
{
	char *p = dst;
	int n = d->ndigits, x = d->exp10;

	assert(dst_cap >= TFS_FMT_FLOAT_MAX && n >= 1 && n <= 17);
	(void)dst_cap;
	if (d->negative)
		*p++ = '-';
	if (x < -4 || x >= d->prec) {
		unsigned ax = (unsigned)(x < 0 ? -x : x);

		/* d1.d2...dn: the digits one place on, d1 back over the dot */
		put_digits(p + 1, d->digits, n);
		p[0] = p[1];
		p[1] = '.';
		p += n == 1 ? 1 : n + 1;
		*p++ = 'e';
		*p++ = x < 0 ? '-' : '+';
		if (ax >= 100) {
			*p++ = (char)('0' + ax / 100);
			ax %= 100;
		}
		memcpy(p, digit_pairs + 2 * ax, 2);
		p += 2;
	} else if (x >= 0) {
		put_digits(p, d->digits, n);
		if (n > x + 1) {
			/* the fraction digits one place on, for the dot */
			for (int i = n; i > x + 1; i--)
				p[i] = p[i - 1];
			p[x + 1] = '.';
			p += n + 1;
		} else {
			p += n;
			for (int i = n; i < x + 1; i++)
				*p++ = '0';
		}
	} else {
		*p++ = '0';
		*p++ = '.';
		for (int i = 0; i < -x - 1; i++)
			*p++ = '0';
		put_digits(p, d->digits, n);
		p += n;
	}
	*p = '\0';
	return (size_t)(p - dst);
}

/* "%.0f" of an integral value below 2^64 in magnitude. */
static size_t format_integer(char *dst, uint64_t u, bool negative)
{
	int len = count_digits(u);
	char *p = dst;

	if (negative)
		*p++ = '-';
	put_digits(p, u, len);
	p[len] = '\0';
	return (size_t)(p + len - dst);
}

/* The zero and plain-integer cases of tfs_fmt_f64/f32 for a = |v|; 0 when
 * v needs its decimal. */
static size_t format_simple(char *dst, double v, double plain_below)
{
	double a = fabs(v);

	if (v == 0) {
		if (signbit(v)) {
			memcpy(dst, "-0", 3);
			return 2;
		}
		memcpy(dst, "0", 2);
		return 1;
	}
	if (a < plain_below && a == (double)(uint64_t)a)
		return format_integer(dst, (uint64_t)a, v < 0);
	return 0;
}

size_t tfs_fmt_f64(char *dst, size_t dst_cap, double v, double plain_below)
{
	struct tfs_decimal d;
	size_t n;

	assert(dst_cap >= TFS_FMT_FLOAT_MAX && plain_below <= 0x1p63);
	n = format_simple(dst, v, plain_below);
	if (n)
		return n;
	tfs_decimal_of_f64(&d, v);
	return tfs_decimal_format(dst, dst_cap, &d);
}

size_t tfs_fmt_f32(char *dst, size_t dst_cap, float v, double plain_below)
{
	struct tfs_decimal d;
	size_t n;

	assert(dst_cap >= TFS_FMT_FLOAT_MAX && plain_below <= 0x1p63);
	n = format_simple(dst, (double)v, plain_below);
	if (n)
		return n;
	tfs_decimal_of_f32(&d, v);
	return tfs_decimal_format(dst, dst_cap, &d);
}

size_t tfs_fmt_u64(char *dst, uint64_t v)
{
	int len = v ? count_digits(v) : 1;

	put_digits(dst, v, len);
	return (size_t)len;
}

size_t tfs_fmt_u64_len(uint64_t v)
{
	return v ? (size_t)count_digits(v) : 1;
}

size_t tfs_fmt_i64(char *dst, int64_t v)
{
	if (v >= 0)
		return tfs_fmt_u64(dst, (uint64_t)v);
	dst[0] = '-';
	return 1 + tfs_fmt_u64(dst + 1, 0 - (uint64_t)v);
}
