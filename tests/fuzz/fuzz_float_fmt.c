/* Fuzz target: the float formatter of core/base/fmt_float.c against the
 * printf/strtod search it replaced (tests/unit/base/fmt_float_oracle.c).
 * The first 8 bytes (little-endian) are a double, the first 4 a float:
 * the JSON writer's text (plain below 1e16), the filter descriptions'
 * (plain below 1e15) and the sparse reader's digits and exponent must be
 * the search's, and the text must read back as the value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_float_oracle.h"
#include "fuzz_common.h"
#include "tfs_fmt_float.h"

static void check_digits(const struct tfs_decimal *d, double v, bool f32)
{
	char want[24], got[24];
	int exp = fmt_oracle_digits(want, sizeof(want), v, f32);

	snprintf(got, sizeof(got), "%llu", (unsigned long long)d->digits);
	FUZZ_CHECK(!strcmp(got, want));
	FUZZ_CHECK(d->exp10 == exp);
	FUZZ_CHECK(d->negative == (v < 0));
}

static void check_double(double v)
{
	char got[TFS_FMT_FLOAT_MAX], want[40];
	struct tfs_decimal d;

	tfs_fmt_f64(got, sizeof(got), v, 1e16);
	fmt_oracle_json_f64(want, sizeof(want), v);
	FUZZ_CHECK(!strcmp(got, want));
	FUZZ_CHECK(strtod(got, NULL) == v);
	tfs_fmt_f64(got, sizeof(got), v, 1e15);
	fmt_oracle_pipeline(want, sizeof(want), v);
	FUZZ_CHECK(!strcmp(got, want));
	if (v != trunc(v)) {
		tfs_decimal_of_f64(&d, v);
		check_digits(&d, v, false);
	}
}

static void check_float(float v)
{
	char got[TFS_FMT_FLOAT_MAX], want[40];
	struct tfs_decimal d;

	tfs_fmt_f32(got, sizeof(got), v, 1e16);
	fmt_oracle_json_f32(want, sizeof(want), v);
	FUZZ_CHECK(!strcmp(got, want));
	FUZZ_CHECK(strtof(got, NULL) == v);
	if (v != truncf(v)) {
		tfs_decimal_of_f32(&d, v);
		check_digits(&d, (double)v, true);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 8) {
		uint64_t bits = tfs_get_u64(data);
		double v;

		memcpy(&v, &bits, sizeof(v));
		if (isfinite(v))
			check_double(v);
	}
	if (size >= 4) {
		uint32_t bits = tfs_get_u32(data);
		float v;

		memcpy(&v, &bits, sizeof(v));
		if (isfinite(v))
			check_float(v);
	}
	return 0;
}
