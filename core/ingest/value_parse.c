/* Values from CSV text, the inverse of the text forms of SPEC §4:
 * decimal integers with range checks, floats correctly rounded (nan, inf,
 * -inf too), bool as true/false/0/1, ISO-8601 UTC dates and times at the
 * unit of each DATETIME_* / TIME_* type, strings as their bytes, blobs as
 * hex, and several values of one cell separated by one space.
 *
 * Integers and the common short decimals take hand-written paths with no
 * allocation; a float the fast path cannot round exactly goes to
 * strtod/strtof, which round correctly. */
#include "ingest_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_civil.h"
#include "tfs_datatype.h"
#include "tilefs.h"

/* ---- Integers ------------------------------------------------------------ */

/* [+-]digits into a magnitude; false on syntax or overflow of 64 bits. */
static bool parse_digits(const uint8_t *p, size_t len, bool *neg, uint64_t *mag,
			 bool *overflow)
{
	size_t i = 0;
	uint64_t v = 0;

	*neg = false;
	*overflow = false;
	if (i < len && (p[i] == '-' || p[i] == '+'))
		*neg = p[i++] == '-';
	if (i == len)
		return false;
	for (; i < len; i++) {
		unsigned c = (unsigned)p[i] - '0';

		if (c > 9)
			return false;
		if (v > (UINT64_MAX - c) / 10)
			*overflow = true;
		v = v * 10 + c;
	}
	*mag = v;
	return true;
}

static void store_le(void *dst, uint64_t v, size_t size)
{
	uint8_t *o = dst;

	for (size_t k = 0; k < size; k++)
		o[k] = (uint8_t)(v >> (8 * k));
}

enum tfs_err tfs__int_parse(const uint8_t *p, size_t len, bool is_signed,
			    uint64_t max_mag, uint64_t *out, const char **why)
{
	bool neg = false;
	uint64_t v = 0;
	size_t i = 0;

	if (len && (p[0] == '-' || p[0] == '+')) {
		neg = p[0] == '-';
		i = 1;
	}
	/* Up to 19 digits cannot overflow 64 bits. */
	if (i == len || len - i > 19)
		goto slow;
	for (; i < len; i++) {
		unsigned c = (unsigned)p[i] - '0';

		if (c > 9)
			goto slow;
		v = v * 10 + c;
	}
	if (neg && v) {
		/* max_mag + 1 is |min| of a signed type. */
		if (!is_signed || v - 1 > max_mag)
			goto range;
		*out = (uint64_t)0 - v;
		return TFS_E_OK;
	}
	if (v > max_mag)
		goto range;
	*out = v;
	return TFS_E_OK;
slow: {
	bool overflow;

	if (!parse_digits(p, len, &neg, &v, &overflow)) {
		*why = "not an integer";
		return TFS_E_INVALID;
	}
	if (overflow || (neg && v && (!is_signed || v - 1 > max_mag)) ||
	    (!neg && v > max_mag))
		goto range;
	*out = neg ? (uint64_t)0 - v : v;
	return TFS_E_OK;
}
range:
	*why = "integer out of the type's range";
	return TFS_E_RANGE;
}

static enum tfs_err parse_int(uint8_t type, const uint8_t *p, size_t len,
			      void *dst, const char **why)
{
	size_t size = tfs_datatype_size(type);
	bool neg, overflow;
	uint64_t mag;

	if (!parse_digits(p, len, &neg, &mag, &overflow)) {
		*why = "not an integer";
		return TFS_E_INVALID;
	}
	if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED) {
		uint64_t max = size == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1;

		if (overflow || (neg && mag) || mag > max) {
			*why = "integer out of the type's range";
			return TFS_E_RANGE;
		}
		store_le(dst, mag, size);
		return TFS_E_OK;
	}
	uint64_t lim = UINT64_C(1) << (8 * size - 1); /* |min| */

	if (overflow || (neg ? mag > lim : mag >= lim)) {
		*why = "integer out of the type's range";
		return TFS_E_RANGE;
	}
	store_le(dst, neg ? (uint64_t)0 - mag : mag, size);
	return TFS_E_OK;
}

/* ---- Floats -------------------------------------------------------------- */

static bool ieq(const uint8_t *p, size_t len, const char *word)
{
	size_t n = strlen(word);

	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];

		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c - 'A' + 'a');
		if (c != (uint8_t)word[i])
			return false;
	}
	return true;
}

static const double pow10_exact[] = {
	1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};
static const float pow10f_exact[] = {
	1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f,
};

/* A decimal as read so far: value = m * 10^exp10 while it fits. */
struct decimal {
	bool neg;
	uint64_t m;
	int digits;    /* significant digits in m */
	int64_t exp10; /* value = m * 10^exp10 (when digits fit) */
	bool exact;    /* m holds every significant digit */
};

/* A float of the column's type: FLOAT32 or FLOAT64. */
static void store_float(uint8_t type, double v, void *dst)
{
	if (type == TFS_FLOAT32) {
		float f = (float)v;

		memcpy(dst, &f, sizeof(f));
	} else {
		memcpy(dst, &v, sizeof(v));
	}
}

/* nan, inf or infinity in any case, after the sign. */
static bool is_special_float(const uint8_t *p, size_t len)
{
	return ieq(p, len, "nan") || ieq(p, len, "inf") ||
	       ieq(p, len, "infinity");
}

/* The digits before and after the point into d; false when there are
 * none at all. */
static bool scan_mantissa(const uint8_t *p, size_t len, size_t *ip,
			  struct decimal *d)
{
	size_t i = *ip;
	bool any = false;

	for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
		any = true;
		if (d->m == 0 && p[i] == '0')
			continue;
		if (d->digits < 19) {
			d->m = d->m * 10 + (uint64_t)(p[i] - '0');
			d->digits++;
		} else {
			d->exp10++;
			if (p[i] != '0')
				d->exact = false;
		}
	}
	if (i < len && p[i] == '.') {
		i++;
		for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
			any = true;
			if (d->m == 0 && p[i] == '0') {
				d->exp10--;
				continue;
			}
			if (d->digits < 19) {
				d->m = d->m * 10 + (uint64_t)(p[i] - '0');
				d->digits++;
				d->exp10--;
			} else if (p[i] != '0') {
				d->exact = false;
			}
		}
	}
	*ip = i;
	return any;
}

/* An optional e[+-]digits into d->exp10; false on an e without digits. */
static bool scan_exponent(const uint8_t *p, size_t len, size_t *ip,
			  struct decimal *d)
{
	size_t i = *ip;
	bool eneg = false;
	int64_t e = 0;

	if (i == len || (p[i] != 'e' && p[i] != 'E'))
		return true;
	i++;
	if (i < len && (p[i] == '-' || p[i] == '+'))
		eneg = p[i++] == '-';
	if (i == len)
		return false;
	for (; i < len && p[i] >= '0' && p[i] <= '9'; i++)
		if (e < 100000)
			e = e * 10 + (p[i] - '0');
	d->exp10 += eneg ? -e : e;
	*ip = i;
	return true;
}

/* Exact operands and one rounding: correctly rounded. False when the
 * digits or the power of ten do not fit the type's exact range. */
static bool store_exact_float(uint8_t type, const struct decimal *d, void *dst)
{
	if (!d->exact)
		return false;
	if (type == TFS_FLOAT64 && d->m <= (UINT64_C(1) << 53) &&
	    d->exp10 >= -22 && d->exp10 <= 22) {
		double v = (double)d->m;

		v = d->exp10 < 0 ? v / pow10_exact[-d->exp10]
				 : v * pow10_exact[d->exp10];
		if (d->neg)
			v = -v;
		memcpy(dst, &v, sizeof(v));
		return true;
	}
	if (type == TFS_FLOAT32 && d->m <= (UINT64_C(1) << 24) &&
	    d->exp10 >= -10 && d->exp10 <= 10) {
		float f = (float)d->m;

		f = d->exp10 < 0 ? f / pow10f_exact[-d->exp10]
				 : f * pow10f_exact[d->exp10];
		if (d->neg)
			f = -f;
		memcpy(dst, &f, sizeof(f));
		return true;
	}
	return false;
}

/* The syntax is checked: strtod sees only a plain decimal. */
static enum tfs_err parse_float_strtod(uint8_t type, const uint8_t *p,
				       size_t len, void *dst, const char **why)
{
	char text[512];
	char *end;

	if (len >= sizeof(text)) {
		*why = "number longer than 511 characters";
		return TFS_E_INVALID;
	}
	memcpy(text, p, len);
	text[len] = '\0';
	errno = 0;
	if (type == TFS_FLOAT32) {
		float f = strtof(text, &end);

		if (isinf(f)) {
			*why = "number out of the range of FLOAT32";
			return TFS_E_RANGE;
		}
		memcpy(dst, &f, sizeof(f));
	} else {
		double v = strtod(text, &end);

		if (isinf(v)) {
			*why = "number out of the range of FLOAT64";
			return TFS_E_RANGE;
		}
		memcpy(dst, &v, sizeof(v));
	}
	return TFS_E_OK;
}

static enum tfs_err parse_float(uint8_t type, const uint8_t *p, size_t len,
				void *dst, const char **why)
{
	struct decimal d = {.exact = true};
	size_t i = 0;

	if (i < len && (p[i] == '-' || p[i] == '+'))
		d.neg = p[i++] == '-';
	if (is_special_float(p + i, len - i)) {
		bool nan = (p[i] | 0x20) == 'n';

		store_float(type, nan ? NAN : (d.neg ? -INFINITY : INFINITY), dst);
		return TFS_E_OK;
	}
	if (!scan_mantissa(p, len, &i, &d) || !scan_exponent(p, len, &i, &d) ||
	    i != len) {
		*why = "not a number";
		return TFS_E_INVALID;
	}
	if (d.m == 0) {
		store_float(type, d.neg ? -0.0 : 0.0, dst);
		return TFS_E_OK;
	}
	if (store_exact_float(type, &d, dst))
		return TFS_E_OK;
	return parse_float_strtod(type, p, len, dst, why);
}

/* ---- Dates and times ----------------------------------------------------- */

typedef __int128 i128;

static bool leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned month_days(int64_t y, unsigned m)
{
	static const unsigned days[12] = {31, 28, 31, 30, 31, 30,
					  31, 31, 30, 31, 30, 31};

	return m == 2 && leap(y) ? 29 : days[m - 1];
}

/* Exactly n digits at p[*i] (n <= 18). */
static bool fixed_digits(const uint8_t *p, size_t len, size_t *i, unsigned n,
			 int64_t *out)
{
	int64_t v = 0;

	if (len - *i < n)
		return false;
	for (unsigned k = 0; k < n; k++) {
		unsigned c = (unsigned)p[*i + k] - '0';

		if (c > 9)
			return false;
		v = v * 10 + c;
	}
	*i += n;
	*out = v;
	return true;
}

#define ATTO INT64_C(1000000000000000000)

/* A date/time text: the date's fields (month, day default 1), and the
 * time of day in attoseconds with the zone applied. */
struct iso_time {
	int64_t year;
	unsigned month, day;
	bool has_month, has_day, has_time;
	i128 atto;       /* since the day's midnight, zone applied */
	int frac_digits; /* of the seconds, -1 without seconds */
};

/* The year, signed or not: four digits alone, or before a month four or
 * more (three or more after a sign). */
static bool parse_iso_year(const uint8_t *p, size_t len, size_t *ip,
			   struct iso_time *t)
{
	size_t i = *ip;
	bool neg = false;

	if (i < len && (p[i] == '-' || p[i] == '+'))
		neg = p[i++] == '-';
	size_t s = i;
	uint64_t y = 0;

	/* A year alone has four digits (and a sign or not), so other
	 * plain numbers are counts of the unit. Before a month, four
	 * or more (the renderer writes years past 9999 without
	 * ISO's '+'), three or more after a sign (printf's %04 of a
	 * year below zero). Up to 19 digits: the years of the whole
	 * int64 range. */
	while (i < len && p[i] >= '0' && p[i] <= '9' && i - s < 19)
		y = y * 10 + (uint64_t)(p[i++] - '0');
	if ((i == len ? i - s != 4 : i - s < (s == 0 ? 4u : 3u)) ||
	    (i < len && p[i] >= '0' && p[i] <= '9') ||
	    y > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
		return false;
	t->year = neg ? (int64_t)((uint64_t)0 - y) : (int64_t)y;
	*ip = i;
	return true;
}

/* .fff or ,fff after the seconds: up to 18 digits into attoseconds. */
static bool parse_iso_fraction(const uint8_t *p, size_t len, size_t *ip,
			       struct iso_time *t, i128 *frac)
{
	size_t i = *ip;
	i128 scale = ATTO;

	if (i == len || (p[i] != '.' && p[i] != ','))
		return true;
	i++;
	if (i == len || p[i] < '0' || p[i] > '9')
		return false;
	while (i < len && p[i] >= '0' && p[i] <= '9') {
		if (t->frac_digits >= 18)
			return false;
		scale /= 10;
		*frac += scale * (p[i++] - '0');
		t->frac_digits++;
	}
	*ip = i;
	return true;
}

/* HH[:MM[:SS[.f...]]] into t->atto, before the zone. */
static bool parse_iso_clock(const uint8_t *p, size_t len, size_t *ip,
			    struct iso_time *t)
{
	size_t i = *ip;
	int64_t h, mi = 0, s = 0;
	i128 frac = 0;

	if (!fixed_digits(p, len, &i, 2, &h) || h > 24)
		return false;
	if (i < len && p[i] == ':') {
		i++;
		if (!fixed_digits(p, len, &i, 2, &mi) || mi > 59)
			return false;
		if (i < len && p[i] == ':') {
			i++;
			if (!fixed_digits(p, len, &i, 2, &s) || s > 60)
				return false;
			t->frac_digits = 0;
			if (!parse_iso_fraction(p, len, &i, t, &frac))
				return false;
		}
	}
	if (h == 24 && (mi || s || frac))
		return false;
	/* A leap second (:60) counts as the next second, like POSIX time. */
	t->atto = ((i128)h * 3600 + mi * 60 + s) * ATTO + frac;
	*ip = i;
	return true;
}

/* Z, +HH[:MM] or -HH[:MM], applied to t->atto; nothing is UTC too. */
static bool parse_iso_zone(const uint8_t *p, size_t len, size_t *ip,
			   struct iso_time *t)
{
	size_t i = *ip;

	if (i < len && (p[i] == 'Z' || p[i] == 'z')) {
		i++;
	} else if (i < len && (p[i] == '+' || p[i] == '-')) {
		bool zneg = p[i++] == '-';
		int64_t zh, zm = 0;

		if (!fixed_digits(p, len, &i, 2, &zh) || zh > 23)
			return false;
		if (i < len && p[i] == ':')
			i++;
		if (i < len && !fixed_digits(p, len, &i, 2, &zm))
			return false;
		if (zm > 59)
			return false;
		i128 off = ((i128)zh * 3600 + zm * 60) * ATTO;

		/* Local time = UTC + offset. */
		t->atto += zneg ? off : -off;
	}
	*ip = i;
	return true;
}

/* YYYY[-MM[-DD[(T| )HH[:MM[:SS[.f...]]][Z|+HH:MM|-HH:MM]]]] */
static bool parse_iso(const uint8_t *p, size_t len, struct iso_time *t)
{
	size_t i = 0;
	int64_t v;

	memset(t, 0, sizeof(*t));
	t->month = t->day = 1;
	t->frac_digits = -1;
	if (!parse_iso_year(p, len, &i, t))
		return false;
	if (i == len)
		return true;
	if (p[i++] != '-' || !fixed_digits(p, len, &i, 2, &v) || v < 1 || v > 12)
		return false;
	t->month = (unsigned)v;
	t->has_month = true;
	if (i == len)
		return true;
	if (p[i++] != '-' || !fixed_digits(p, len, &i, 2, &v) || v < 1 ||
	    v > month_days(t->year, t->month))
		return false;
	t->day = (unsigned)v;
	t->has_day = true;
	if (i == len)
		return true;
	if (p[i] != 'T' && p[i] != 't' && p[i] != ' ')
		return false;
	i++;
	t->has_time = true;
	if (!parse_iso_clock(p, len, &i, t) || !parse_iso_zone(p, len, &i, t))
		return false;
	return i == len;
}

int tfs__datetime_precision(const uint8_t *p, size_t len)
{
	struct iso_time t;

	if (!parse_iso(p, len, &t) || !t.has_day)
		return -1;
	if (!t.has_time)
		return 0;
	return 1 + (t.frac_digits > 0 ? t.frac_digits : 0);
}

/* Attoseconds per unit of DATETIME_HR..DATETIME_AS and TIME_HR..TIME_AS. */
static const i128 unit_atto[] = {
	(i128)3600 * ATTO, (i128)60 * ATTO, ATTO,
	INT64_C(1000000000000000), INT64_C(1000000000000), INT64_C(1000000000),
	INT64_C(1000000), INT64_C(1000), INT64_C(1),
};

static enum tfs_err out_of_range(const char **why)
{
	*why = "date/time out of the type's range";
	return TFS_E_RANGE;
}

static enum tfs_err not_whole(const char **why)
{
	*why = "not a whole number of the type's unit";
	return TFS_E_RANGE;
}

static enum tfs_err store_i128(i128 v, void *dst, const char **why)
{
	int64_t x;

	if (v > INT64_MAX || v < INT64_MIN)
		return out_of_range(why);
	x = (int64_t)v;
	memcpy(dst, &x, sizeof(x));
	return TFS_E_OK;
}

/* Days and the time of day are kept apart (not one count of
 * attoseconds), so the whole int64 range of every unit is reachable. */
static enum tfs_err parse_datetime(uint8_t type, const uint8_t *p, size_t len,
				   void *dst, const char **why)
{
	static const i128 day = (i128)86400 * ATTO;
	struct iso_time t;
	i128 days, rem;

	/* DATETIME_YEAR is written as the year alone, of any length. */
	if (type == TFS_DATETIME_YEAR) {
		uint64_t y;

		if (len && tfs__int_parse(p, len, true, INT64_MAX, &y, why) == TFS_E_OK)
			return store_i128((i128)(int64_t)y - 1970, dst, why);
	}
	if (!parse_iso(p, len, &t)) {
		uint64_t raw;

		/* A count of the type's units, as the renderer writes
		 * weeks too far out for a date, and as epoch counts come:
		 * only what cannot be read as ISO-8601 (a plain number
		 * of four digits or fewer is a year). */
		if (len && tfs__int_parse(p, len, true, INT64_MAX, &raw, why) == TFS_E_OK) {
			memcpy(dst, &raw, sizeof(raw));
			return TFS_E_OK;
		}
		*why = "not an ISO-8601 date/time";
		return TFS_E_INVALID;
	}
	days = tfs_days_from_civil(t.year, t.month, t.day);
	/* A zone offset can move the time of day past either midnight. */
	rem = t.atto % day;
	days += t.atto / day;
	if (rem < 0) {
		rem += day;
		days--;
	}
	switch (type - TFS_DATETIME_YEAR) {
	case 0: /* YEAR */
	case 1: /* MONTH */
		if (rem || days != tfs_days_from_civil(t.year, t.month, 1) ||
		    (type == TFS_DATETIME_YEAR && t.month != 1))
			return not_whole(why);
		if (type == TFS_DATETIME_YEAR)
			return store_i128((i128)t.year - 1970, dst, why);
		return store_i128(((i128)t.year - 1970) * 12 + t.month - 1, dst, why);
	case 2: /* WEEK */
		if (rem || days % 7)
			return not_whole(why);
		return store_i128(days / 7, dst, why);
	case 3: /* DAY */
		if (rem)
			return not_whole(why);
		return store_i128(days, dst, why);
	default: {
		i128 unit = unit_atto[type - TFS_DATETIME_YEAR - 4];
		i128 per_day = day / unit;

		if (rem % unit)
			return not_whole(why);
		/* Past this the product leaves int64 anyway (and could
		 * overflow 128 bits for the finest units). */
		if (days > (i128)INT64_MAX / per_day + 1 ||
		    days < (i128)INT64_MIN / per_day - 1)
			return out_of_range(why);
		return store_i128(days * per_day + rem / unit, dst, why);
	}
	}
}

/* [-]H+[:MM[:SS[.f]]]: a time of day, or a duration past it. */
static enum tfs_err parse_time(uint8_t type, const uint8_t *p, size_t len,
			       void *dst, const char **why)
{
	size_t i = 0, s;
	bool neg = false;
	i128 h = 0, total;
	int64_t mi = 0, sec = 0;
	i128 frac = 0;

	if (i < len && (p[i] == '-' || p[i] == '+'))
		neg = p[i++] == '-';
	s = i;
	while (i < len && p[i] >= '0' && p[i] <= '9' && i - s < 20)
		h = h * 10 + (p[i++] - '0');
	if (i == s)
		goto bad;
	if (i < len && p[i] == ':') {
		i++;
		if (!fixed_digits(p, len, &i, 2, &mi) || mi > 59)
			goto bad;
		if (i < len && p[i] == ':') {
			i++;
			if (!fixed_digits(p, len, &i, 2, &sec) || sec > 59)
				goto bad;
			if (i < len && p[i] == '.') {
				i128 scale = ATTO;
				int n = 0;

				i++;
				if (i == len)
					goto bad;
				while (i < len && p[i] >= '0' && p[i] <= '9') {
					if (n++ >= 18)
						goto bad;
					scale /= 10;
					frac += scale * (p[i++] - '0');
				}
			}
		}
	}
	if (i != len)
		goto bad;
	{
		i128 unit = unit_atto[type - TFS_TIME_HR];
		i128 per_hour = (i128)3600 * ATTO / unit;
		i128 part = ((i128)mi * 60 + sec) * ATTO + frac; /* < 1 hour */

		if (part % unit)
			return not_whole(why);
		/* Hours past this leave int64 anyway. */
		if (h > (i128)INT64_MAX / per_hour + 1)
			return out_of_range(why);
		total = h * per_hour + part / unit;
		return store_i128(neg ? -total : total, dst, why);
	}
bad:
	*why = "not a time (HH:MM:SS.fff)";
	return TFS_E_INVALID;
}

/* ---- Dispatch ------------------------------------------------------------ */

enum tfs_err tfs__value_parse(uint8_t type, const uint8_t *p, size_t len,
			      void *dst, const char **why)
{
	if (type >= TFS_DATETIME_YEAR && type <= TFS_DATETIME_AS)
		return parse_datetime(type, p, len, dst, why);
	if (type >= TFS_TIME_HR && type <= TFS_TIME_AS)
		return parse_time(type, p, len, dst, why);
	if (type == TFS_BOOL) {
		uint8_t b;

		if (ieq(p, len, "true") || (len == 1 && p[0] == '1'))
			b = 1;
		else if (ieq(p, len, "false") || (len == 1 && p[0] == '0'))
			b = 0;
		else {
			*why = "not a bool (true, false, 1 or 0)";
			return TFS_E_INVALID;
		}
		memcpy(dst, &b, 1);
		return TFS_E_OK;
	}
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
	case TFS_CLASS_UNSIGNED:
		return parse_int(type, p, len, dst, why);
	case TFS_CLASS_FLOAT:
		return parse_float(type, p, len, dst, why);
	default:
		*why = "not a numeric type";
		return TFS_E_INVALID;
	}
}

bool tfs__utf8_valid(const uint8_t *p, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint8_t c = p[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		/* Overlong forms, surrogates, past U+10FFFF. */
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return false;
		i += n + 1;
	}
	return true;
}

static int hex_value(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A string cell: its bytes, checked for the type's encoding and length. */
static enum tfs_err parse_string_cell(uint8_t type, size_t size,
				      uint32_t cell_val_num, const uint8_t *p,
				      size_t len, struct tfs_buf *out,
				      const char **why)
{
	if (type == TFS_STRING_ASCII) {
		for (size_t i = 0; i < len; i++) {
			if (p[i] >= 0x80) {
				*why = "not ASCII";
				return TFS_E_INVALID;
			}
		}
	} else if (type == TFS_STRING_UTF8 && !tfs__utf8_valid(p, len)) {
		*why = "not valid UTF-8";
		return TFS_E_INVALID;
	}
	if (len % size) {
		*why = "byte count not a whole number of characters";
		return TFS_E_INVALID;
	}
	if (cell_val_num != TFS_VAR_NUM && len != (size_t)cell_val_num * size) {
		*why = "wrong number of characters for the attribute's cell_val_num";
		return TFS_E_INVALID;
	}
	return tfs_buf_append(out, p, len) ? TFS_E_NOMEM : TFS_E_OK;
}

/* A blob cell: two hex digits a byte. */
static enum tfs_err parse_hex_cell(size_t size, uint32_t cell_val_num,
				   const uint8_t *p, size_t len,
				   struct tfs_buf *out, const char **why)
{
	size_t n = len / 2, at = out->len;

	if (len % 2) {
		*why = "odd number of hex digits";
		return TFS_E_INVALID;
	}
	if (cell_val_num != TFS_VAR_NUM && n != (size_t)cell_val_num * size) {
		*why = "wrong number of bytes for the attribute's cell_val_num";
		return TFS_E_INVALID;
	}
	if (tfs_buf_setlen(out, at + n))
		return TFS_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_value(p[2 * i]), lo = hex_value(p[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			out->len = at;
			*why = "not hex";
			return TFS_E_INVALID;
		}
		out->data[at + i] = (uint8_t)(hi << 4 | lo);
	}
	return TFS_E_OK;
}

/* A cell of numbers: values separated by one space, as many as the
 * attribute's cell_val_num. */
static enum tfs_err parse_number_cell(uint8_t type, size_t size,
				      uint32_t cell_val_num, const uint8_t *p,
				      size_t len, struct tfs_buf *out,
				      const char **why)
{
	size_t at = out->len, count = 0, i = 0;
	enum tfs_err e;

	while (i < len || (count == 0 && cell_val_num != TFS_VAR_NUM)) {
		const uint8_t *sp = memchr(p + i, ' ', len - i);
		size_t n = sp ? (size_t)(sp - (p + i)) : len - i;

		if (tfs_buf_reserve(out, size)) {
			out->len = at;
			return TFS_E_NOMEM;
		}
		if (n == 0) {
			*why = len ? "values must be separated by one space"
				   : "empty value";
			out->len = at;
			return TFS_E_INVALID;
		}
		if ((e = tfs__value_parse(type, p + i, n, out->data + out->len, why))) {
			out->len = at;
			return e;
		}
		out->len += size;
		count++;
		i += n;
		if (sp) {
			i++;
			if (i == len) {
				*why = "values must be separated by one space";
				out->len = at;
				return TFS_E_INVALID;
			}
		}
	}
	if (cell_val_num != TFS_VAR_NUM && count != cell_val_num) {
		*why = cell_val_num == 1 ? "one value expected"
					 : "wrong number of values for the attribute's cell_val_num";
		out->len = at;
		return TFS_E_INVALID;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__cell_parse(uint8_t type, uint32_t cell_val_num,
			     const uint8_t *p, size_t len, struct tfs_buf *out,
			     const char **why)
{
	size_t size = tfs_datatype_size(type);

	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_STRING:
		return parse_string_cell(type, size, cell_val_num, p, len, out, why);
	case TFS_CLASS_BYTES:
		return parse_hex_cell(size, cell_val_num, p, len, out, why);
	default:
		return parse_number_cell(type, size, cell_val_num, p, len, out, why);
	}
}

enum tfs_err tfs_value_from_text(uint8_t type, const char *text, size_t len,
				 void *dst, const char **why)
{
	const char *reason;

	return tfs__value_parse(type, (const uint8_t *)text, len, dst,
				why ? why : &reason);
}
