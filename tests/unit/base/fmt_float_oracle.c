/* The printf/strtod searches replaced by core/base/fmt_float.c, as they
 * were (fmt_float_oracle.h). */
#include "fmt_float_oracle.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define PLAIN_DIGITS_MAX 1e16

static int first_precision(bool normal_non_integer, int p)
{
	return normal_non_integer ? p : 1;
}

size_t fmt_oracle_json_f64(char *out, size_t cap, double v)
{
	int n = 0;

	if (v == 0)
		return (size_t)snprintf(out, cap, signbit(v) ? "-0" : "0");
	if (v == trunc(v) && fabs(v) < PLAIN_DIGITS_MAX)
		return (size_t)snprintf(out, cap, "%.0f", v);
	for (int prec = first_precision(v != trunc(v) && fabs(v) >= DBL_MIN, 15);
	     prec <= 17; prec++) {
		n = snprintf(out, cap, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			break;
	}
	return (size_t)n;
}

size_t fmt_oracle_json_f32(char *out, size_t cap, float v)
{
	int n = 0;

	if (v == 0)
		return (size_t)snprintf(out, cap, signbit(v) ? "-0" : "0");
	if (v == truncf(v) && fabsf(v) < (float)PLAIN_DIGITS_MAX)
		return (size_t)snprintf(out, cap, "%.0f", (double)v);
	for (int prec = first_precision(v != truncf(v) && fabsf(v) >= FLT_MIN, 6);
	     prec <= 9; prec++) {
		n = snprintf(out, cap, "%.*g", prec, (double)v);
		if (strtof(out, NULL) == v)
			break;
	}
	return (size_t)n;
}

void fmt_oracle_pipeline(char *out, size_t cap, double v)
{
	if (v == trunc(v) && fabs(v) < 1e15) {
		snprintf(out, cap, "%.0f", v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, cap, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

int fmt_oracle_digits(char *digits, size_t cap, double v, bool f32)
{
	char tmp[48];
	size_t nd = 0;
	const char *s;

	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
		if (f32 ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
			break;
	}
	s = tmp;
	if (*s == '-')
		s++;
	for (; *s && *s != 'e' && nd < cap - 1; s++)
		if (*s >= '0' && *s <= '9')
			digits[nd++] = *s;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	return *s == 'e' ? atoi(s + 1) : 0;
}
