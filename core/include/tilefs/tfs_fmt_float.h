/* Decimal text of numbers. Binary floating-point values: the fewest significant
 * digits that read back (strtod, strtof) as the same value, laid out as
 * printf's %g lays them out, computed with integer arithmetic instead of a
 * search over printf precisions.
 *
 * The digits are those of the search "for P = 1, 2, ...: round v to P
 * significant digits (as %.Pg does, to nearest, ties to even); stop at the
 * first that reads back as v". That is the shortest decimal of v's
 * rounding interval, and the one closest to v when there are several,
 * except next to powers of two, where the closer neighbour below makes
 * the interval lopsided and the value rounded to P digits may fall outside
 * it although another P-digit decimal lies inside; the search then takes
 * more digits, and so does this code (2^-24 is 5.9604644775390625e-08,
 * not 5.960464477539063e-08).
 *
 * All functions are pure and thread-safe. */
#ifndef TFS_FMT_FLOAT_H
#define TFS_FMT_FLOAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for any text below and its NUL: none is longer than
 * "-2.2250738585072014e-308" (24 characters). */
#define TFS_FMT_FLOAT_MAX 32

/* A finite, non-zero value as the search above finds it:
 * (-1)^negative d1.d2...dn 10^exp10, where digits holds d1...dn without
 * trailing zeros (ndigits = n, 1 to 17), and prec is the P at which the
 * search stopped (%.Pg writes exponent form when exp10 < -4 or
 * exp10 >= prec; prec = ndigits except at some powers of two). */
struct tfs_decimal {
	uint64_t digits;
	int ndigits;
	int exp10;
	int prec;
	bool negative;
};

/* v must be finite and non-zero; the float version rounds to float
 * precision (reads back through strtof). */
void tfs_decimal_of_f64(struct tfs_decimal *d, double v);
void tfs_decimal_of_f32(struct tfs_decimal *d, float v);

/* Writes d as %.Pg would (P = d->prec) into dst and a NUL; returns the
 * length. dst_cap must be at least TFS_FMT_FLOAT_MAX. */
size_t tfs_decimal_format(char *dst, size_t dst_cap,
			  const struct tfs_decimal *d);

/* The text the corpus JSON and the renderers use for a finite v: "0" or
 * "-0" for zeros, plain digits ("%.0f") for integral values of magnitude
 * below plain_below (at most 2^63), otherwise tfs_decimal_format of the
 * decimal above. Returns the length; dst_cap must be at least
 * TFS_FMT_FLOAT_MAX. */
size_t tfs_fmt_f64(char *dst, size_t dst_cap, double v, double plain_below);
size_t tfs_fmt_f32(char *dst, size_t dst_cap, float v, double plain_below);

/* Room for the decimal text of any 64-bit integer: 20 digits and a sign. */
#define TFS_FMT_INT_MAX 21

/* v in decimal ("%" PRIu64, "%" PRId64) at dst, two digits at a time from
 * a table, without locale or printf; no NUL. Returns the length; dst must
 * hold TFS_FMT_INT_MAX bytes. */
size_t tfs_fmt_u64(char *dst, uint64_t v);
size_t tfs_fmt_i64(char *dst, int64_t v);
/* The length tfs_fmt_u64 gives v, without writing it. */
size_t tfs_fmt_u64_len(uint64_t v);

#endif
