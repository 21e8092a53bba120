/* Values by datatype: every integer type at its limits and one past
 * them, floats that must round exactly, nan/inf, bool, every date/time
 * unit, strings, blobs as hex and multi-value cells. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_internal.h"
#include "tfs_datatype.h"
#include "value_text.h"

static enum tfs_err parse(uint8_t type, const char *text, void *dst,
			  const char **why)
{
	*why = NULL;
	return tfs__value_parse(type, (const uint8_t *)text, strlen(text), dst, why);
}

static int64_t as_i64(uint8_t type, const char *text)
{
	uint8_t v[8] = {0};
	const char *why;

	cr_assert_eq(parse(type, text, v, &why), TFS_E_OK, "%s '%s': %s",
		     tfs_datatype_name(type), text, why ? why : "");
	return tfs_value_as_i64(type, v);
}

static uint64_t as_u64(uint8_t type, const char *text)
{
	uint8_t v[8] = {0};
	const char *why;

	cr_assert_eq(parse(type, text, v, &why), TFS_E_OK, "%s '%s'",
		     tfs_datatype_name(type), text);
	return tfs_value_as_u64(type, v);
}

static void refused(uint8_t type, const char *text, enum tfs_err code)
{
	uint8_t v[8];
	const char *why;

	cr_assert_eq(parse(type, text, v, &why), code, "%s '%s'",
		     tfs_datatype_name(type), text);
	cr_assert(why && *why);
}

Test(values, signed_limits)
{
	static const struct {
		uint8_t type;
		const char *min, *max, *below, *above;
		int64_t lo, hi;
	} t[] = {
		{TFS_INT8, "-128", "127", "-129", "128", INT8_MIN, INT8_MAX},
		{TFS_INT16, "-32768", "32767", "-32769", "32768", INT16_MIN, INT16_MAX},
		{TFS_INT32, "-2147483648", "2147483647", "-2147483649", "2147483648",
		 INT32_MIN, INT32_MAX},
		{TFS_INT64, "-9223372036854775808", "9223372036854775807",
		 "-9223372036854775809", "9223372036854775808", INT64_MIN, INT64_MAX},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cr_assert_eq(as_i64(t[i].type, t[i].min), t[i].lo);
		cr_assert_eq(as_i64(t[i].type, t[i].max), t[i].hi);
		refused(t[i].type, t[i].below, TFS_E_RANGE);
		refused(t[i].type, t[i].above, TFS_E_RANGE);
	}
	cr_assert_eq(as_i64(TFS_INT32, "+17"), 17);
	cr_assert_eq(as_i64(TFS_INT32, "-0"), 0);
	cr_assert_eq(as_i64(TFS_INT64, "000123"), 123);
	refused(TFS_INT64, "99999999999999999999999", TFS_E_RANGE);
	refused(TFS_INT32, "", TFS_E_INVALID);
	refused(TFS_INT32, "-", TFS_E_INVALID);
	refused(TFS_INT32, "1.5", TFS_E_INVALID);
	refused(TFS_INT32, " 1", TFS_E_INVALID);
	refused(TFS_INT32, "1 ", TFS_E_INVALID);
	refused(TFS_INT32, "0x10", TFS_E_INVALID);
	refused(TFS_INT32, "abc", TFS_E_INVALID);
}

Test(values, unsigned_limits)
{
	cr_assert_eq(as_u64(TFS_UINT8, "255"), 255);
	refused(TFS_UINT8, "256", TFS_E_RANGE);
	refused(TFS_UINT8, "-1", TFS_E_RANGE);
	cr_assert_eq(as_u64(TFS_UINT8, "-0"), 0);
	cr_assert_eq(as_u64(TFS_UINT16, "65535"), 65535);
	refused(TFS_UINT16, "65536", TFS_E_RANGE);
	cr_assert_eq(as_u64(TFS_UINT32, "4294967295"), UINT32_MAX);
	refused(TFS_UINT32, "4294967296", TFS_E_RANGE);
	cr_assert_eq(as_u64(TFS_UINT64, "18446744073709551615"), UINT64_MAX);
	refused(TFS_UINT64, "18446744073709551616", TFS_E_RANGE);
}

static double f64(const char *text)
{
	double v;
	const char *why;

	cr_assert_eq(parse(TFS_FLOAT64, text, &v, &why), TFS_E_OK, "'%s'", text);
	return v;
}

static float f32(const char *text)
{
	float v;
	const char *why;

	cr_assert_eq(parse(TFS_FLOAT32, text, &v, &why), TFS_E_OK, "'%s'", text);
	return v;
}

Test(values, floats_round_exactly)
{
	static const char *const texts[] = {
		"0.1", "0.3", "1.5", "-123456.789", "1e-300", "1.7976931348623157e308",
		"2.2250738585072014e-308", "4.9e-324", "5e-324", "123456789012345678901234",
		"0.000001", "9007199254740993", "3.14159265358979323846264338327950288",
		"1e22", "1e23", "8.98846567431158e307", "-0.0", "6.02214076e23",
		"0.1e1", ".5", "5.", "1E5", "1e+5", "2.5E-3",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		double want = strtod(texts[i], NULL);
		double got = f64(texts[i]);
		float wantf = strtof(texts[i], NULL);
		float gotf;
		const char *why;

		cr_assert_eq(memcmp(&got, &want, sizeof(got)), 0, "'%s': %.17g != %.17g",
			     texts[i], got, want);
		if (isinf(wantf))
			continue;
		cr_assert_eq(parse(TFS_FLOAT32, texts[i], &gotf, &why), TFS_E_OK, "'%s'",
			     texts[i]);
		cr_assert_eq(memcmp(&gotf, &wantf, sizeof(gotf)), 0, "'%s' f32", texts[i]);
	}
	/* Every value printed shortest reads back to the same bits. */
	srand(7);
	for (int i = 0; i < 20000; i++) {
		uint64_t bits = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^
				(uint64_t)rand();
		double v, back;
		char text[64];

		memcpy(&v, &bits, sizeof(v));
		if (!isfinite(v))
			continue;
		snprintf(text, sizeof(text), "%.17g", v);
		back = f64(text);
		cr_assert_eq(memcmp(&v, &back, sizeof(v)), 0, "'%s'", text);
		snprintf(text, sizeof(text), "%.6f", fmod(v, 1e6));
		back = f64(text);
		double want = strtod(text, NULL);

		cr_assert_eq(memcmp(&want, &back, sizeof(v)), 0, "'%s'", text);
	}
	cr_assert_eq(f32("0.33333334"), 0.33333334f);
	cr_assert_eq(f32("3.4e38"), 3.4e38f);
}

Test(values, floats_special)
{
	cr_assert(isnan(f64("nan")));
	cr_assert(isnan(f64("NaN")));
	cr_assert(isnan(f32("nan")));
	cr_assert(isinf(f64("inf")) && f64("inf") > 0);
	cr_assert(isinf(f64("-inf")) && f64("-inf") < 0);
	cr_assert(isinf(f64("Infinity")) && f64("-Infinity") < 0);
	cr_assert(isinf(f32("-inf")) && f32("-inf") < 0);
	cr_assert(signbit(f64("-0")));
	refused(TFS_FLOAT64, "1e400", TFS_E_RANGE);
	refused(TFS_FLOAT32, "1e39", TFS_E_RANGE);
	refused(TFS_FLOAT64, "", TFS_E_INVALID);
	refused(TFS_FLOAT64, "1.2.3", TFS_E_INVALID);
	refused(TFS_FLOAT64, "e5", TFS_E_INVALID);
	refused(TFS_FLOAT64, "1e", TFS_E_INVALID);
	refused(TFS_FLOAT64, "0x1p3", TFS_E_INVALID);
	refused(TFS_FLOAT64, "infinit", TFS_E_INVALID);
	refused(TFS_FLOAT64, " 1", TFS_E_INVALID);
	refused(TFS_FLOAT64, ".", TFS_E_INVALID);
}

Test(values, bool)
{
	static const char *const yes[] = {"true", "TRUE", "True", "1"};
	static const char *const no[] = {"false", "False", "0"};

	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(as_u64(TFS_BOOL, yes[i]), 1);
	for (size_t i = 0; i < 3; i++)
		cr_assert_eq(as_u64(TFS_BOOL, no[i]), 0);
	refused(TFS_BOOL, "2", TFS_E_INVALID);
	refused(TFS_BOOL, "yes", TFS_E_INVALID);
	refused(TFS_BOOL, "", TFS_E_INVALID);
}

#define DT(u) (TFS_DATETIME_YEAR + (u))
#define TM(u) (TFS_TIME_HR + (u))

Test(values, datetimes)
{
	/* The forms SPEC §4 renders, at each unit. */
	cr_assert_eq(as_i64(DT(0), "2023"), 53);
	cr_assert_eq(as_i64(DT(0), "1969"), -1);
	cr_assert_eq(as_i64(DT(1), "2023-11"), 53 * 12 + 10);
	cr_assert_eq(as_i64(DT(1), "1969-12"), -1);
	cr_assert_eq(as_i64(DT(2), "1970-01-08"), 1);
	cr_assert_eq(as_i64(DT(3), "1970-01-01"), 0);
	cr_assert_eq(as_i64(DT(3), "2000-03-01"), 11017);
	cr_assert_eq(as_i64(DT(3), "1969-12-31"), -1);
	cr_assert_eq(as_i64(DT(3), "2024-02-29"), 19782);
	cr_assert_eq(as_i64(DT(4), "1970-01-02T01Z"), 25);
	cr_assert_eq(as_i64(DT(5), "1970-01-01T01:02Z"), 62);
	cr_assert_eq(as_i64(DT(6), "2023-11-14T22:13:20Z"), 1700000000);
	cr_assert_eq(as_i64(DT(7), "2023-11-14T22:13:20.123Z"), INT64_C(1700000000123));
	cr_assert_eq(as_i64(DT(7), "1969-12-31T23:59:59.999Z"), -1);
	cr_assert_eq(as_i64(DT(8), "1970-01-01T00:00:00.000001Z"), 1);
	cr_assert_eq(as_i64(DT(9), "2023-11-14T22:13:20.000000001Z"),
		     INT64_C(1700000000000000001));
	cr_assert_eq(as_i64(DT(10), "1970-01-01T00:00:01.000000000000Z"),
		     INT64_C(1000000000000));
	cr_assert_eq(as_i64(DT(11), "1970-01-01T00:00:00.000000000000001Z"), 1);
	cr_assert_eq(as_i64(DT(12), "1970-01-01T00:00:00.000000000000000001Z"), 1);
	cr_assert_eq(as_i64(DT(12), "1969-12-31T23:59:59.999999999999999999Z"), -1);
	/* Coarser texts at a finer unit, other separators and zones. */
	cr_assert_eq(as_i64(DT(7), "1970-01-02"), 86400000);
	cr_assert_eq(as_i64(DT(6), "1970-01-01 00:01:00"), 60);
	cr_assert_eq(as_i64(DT(6), "1970-01-01T01:00:00+01:00"), 0);
	cr_assert_eq(as_i64(DT(6), "1970-01-01T00:00:00-0130"), 5400);
	cr_assert_eq(as_i64(DT(0), "2023-01-01T00:00:00Z"), 53);
	/* Not whole units, not dates, out of range. */
	refused(DT(3), "2023-11-14T01Z", TFS_E_RANGE);
	refused(DT(0), "2023-02", TFS_E_RANGE);
	refused(DT(1), "2023-02-02", TFS_E_RANGE);
	refused(DT(2), "1970-01-02", TFS_E_RANGE);
	refused(DT(7), "1970-01-01T00:00:00.0001Z", TFS_E_RANGE);
	refused(DT(9), "3000-01-01", TFS_E_RANGE);
	refused(DT(3), "2023-02-29", TFS_E_INVALID);
	refused(DT(3), "2023-13-01", TFS_E_INVALID);
	refused(DT(3), "23-01-01", TFS_E_INVALID);
	refused(DT(3), "2023/01/01", TFS_E_INVALID);
	refused(DT(6), "2023-01-01T25:00:00Z", TFS_E_INVALID);
	refused(DT(6), "2023-01-01T10:00:00Q", TFS_E_INVALID);
	refused(DT(6), "", TFS_E_INVALID);
	/* Counts of the unit where the text is no ISO-8601 form. */
	cr_assert_eq(as_i64(DT(6), "1700000000"), 1700000000);
	cr_assert_eq(as_i64(DT(7), "-12"), -12);
	cr_assert_eq(as_i64(DT(6), "1970"), 0);
	refused(DT(6), "99999999999999999999", TFS_E_INVALID);
}

Test(values, times)
{
	cr_assert_eq(as_i64(TM(0), "05"), 5);
	cr_assert_eq(as_i64(TM(0), "-05"), -5);
	cr_assert_eq(as_i64(TM(1), "01:02"), 62);
	cr_assert_eq(as_i64(TM(2), "01:02:03"), 3723);
	cr_assert_eq(as_i64(TM(3), "00:00:01.500"), 1500);
	cr_assert_eq(as_i64(TM(4), "22:53:36.812695"), INT64_C(82416812695));
	cr_assert_eq(as_i64(TM(5), "00:00:00.000000001"), 1);
	cr_assert_eq(as_i64(TM(8), "-00:00:00.000000000000000001"), -1);
	cr_assert_eq(as_i64(TM(2), "100:00:00"), 360000);
	refused(TM(2), "01:02:03.5", TFS_E_RANGE);
	refused(TM(0), "01:30", TFS_E_RANGE);
	refused(TM(2), "1:2:3", TFS_E_INVALID);
	refused(TM(2), "01:60:00", TFS_E_INVALID);
	refused(TM(2), "", TFS_E_INVALID);
	refused(TM(2), "ab", TFS_E_INVALID);
}

static enum tfs_err cell(uint8_t type, uint32_t n, const char *text,
			 struct tfs_buf *out, const char **why)
{
	out->len = 0;
	*why = NULL;
	return tfs__cell_parse(type, n, (const uint8_t *)text, strlen(text), out, why);
}

Test(values, cells)
{
	struct tfs_buf b;
	const char *why;
	int32_t i3[3];
	double dv[2];

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(cell(TFS_INT32, 3, "1 -2 3", &b, &why), TFS_E_OK);
	cr_assert_eq(b.len, 12);
	memcpy(i3, b.data, 12);
	cr_assert(i3[0] == 1 && i3[1] == -2 && i3[2] == 3);
	cr_assert_eq(cell(TFS_INT32, 3, "1 2", &b, &why), TFS_E_INVALID);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(cell(TFS_INT32, 3, "1 2 3 4", &b, &why), TFS_E_INVALID);
	cr_assert_eq(cell(TFS_INT32, 3, "1  2 3", &b, &why), TFS_E_INVALID);
	cr_assert_str_eq(why, "values must be separated by one space");
	cr_assert_eq(cell(TFS_INT32, 3, "1 2 3 ", &b, &why), TFS_E_INVALID);
	cr_assert_eq(cell(TFS_INT8, 2, "1 300", &b, &why), TFS_E_RANGE);
	cr_assert_eq(cell(TFS_FLOAT64, TFS_VAR_NUM, "0.5 nan", &b, &why), TFS_E_OK);
	memcpy(dv, b.data, 16);
	cr_assert(dv[0] == 0.5 && isnan(dv[1]));
	cr_assert_eq(cell(TFS_FLOAT64, TFS_VAR_NUM, "", &b, &why), TFS_E_OK);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(cell(TFS_INT32, 1, "", &b, &why), TFS_E_INVALID);
	cr_assert_str_eq(why, "empty value");
	/* Strings. */
	cr_assert_eq(cell(TFS_STRING_UTF8, TFS_VAR_NUM, "h\xc3\xa9llo", &b, &why),
		     TFS_E_OK);
	cr_assert_eq(b.len, 6);
	cr_assert_eq(cell(TFS_STRING_UTF8, TFS_VAR_NUM, "\xc3", &b, &why), TFS_E_INVALID);
	cr_assert_eq(cell(TFS_STRING_UTF8, TFS_VAR_NUM, "\xc0\xaf", &b, &why),
		     TFS_E_INVALID);
	cr_assert_eq(cell(TFS_STRING_UTF8, TFS_VAR_NUM, "\xed\xa0\x80", &b, &why),
		     TFS_E_INVALID);
	cr_assert_eq(cell(TFS_STRING_ASCII, TFS_VAR_NUM, "h\xc3\xa9", &b, &why),
		     TFS_E_INVALID);
	cr_assert_eq(cell(TFS_CHAR, TFS_VAR_NUM, "\xff\x80", &b, &why), TFS_E_OK);
	cr_assert_eq(cell(TFS_CHAR, 1, "H", &b, &why), TFS_E_OK);
	cr_assert_eq(cell(TFS_CHAR, 1, "HI", &b, &why), TFS_E_INVALID);
	cr_assert_eq(cell(TFS_CHAR, 3, "abc", &b, &why), TFS_E_OK);
	cr_assert_eq(cell(TFS_STRING_UTF16, TFS_VAR_NUM, "abc", &b, &why), TFS_E_INVALID);
	/* Blobs. */
	cr_assert_eq(cell(TFS_BLOB, TFS_VAR_NUM, "00fFa9", &b, &why), TFS_E_OK);
	cr_assert_eq(b.len, 3);
	cr_assert(b.data[0] == 0 && b.data[1] == 0xff && b.data[2] == 0xa9);
	cr_assert_eq(cell(TFS_BLOB, TFS_VAR_NUM, "abc", &b, &why), TFS_E_INVALID);
	cr_assert_eq(cell(TFS_BLOB, TFS_VAR_NUM, "zz", &b, &why), TFS_E_INVALID);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(cell(TFS_BLOB, 4, "ea48bbef", &b, &why), TFS_E_OK);
	cr_assert_eq(cell(TFS_BLOB, 4, "ea48bb", &b, &why), TFS_E_INVALID);
	cr_assert_eq(cell(TFS_GEOM_WKB, TFS_VAR_NUM, "0101", &b, &why), TFS_E_OK);
	tfs_buf_release(&b);
}

Test(values, datetime_precision)
{
	cr_assert_eq(tfs__datetime_precision((const uint8_t *)"2020-01-01", 10), 0);
	cr_assert_eq(tfs__datetime_precision((const uint8_t *)"2020-01-01T10:00", 16), 1);
	cr_assert_eq(tfs__datetime_precision((const uint8_t *)"2020-01-01T10:00:00.25Z", 23), 3);
	cr_assert_eq(tfs__datetime_precision((const uint8_t *)"2020", 4), -1);
	cr_assert_eq(tfs__datetime_precision((const uint8_t *)"12", 2), -1);
}

/* Every date/time type: values over the whole int64 range rendered as the
 * daemon renders them (SPEC §4) read back to the same value. */
Test(values, datetime_text_round_trip)
{
	static const int64_t fixed[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1,
					INT64_MAX - 1, INT64_MAX, 1700000000123};

	srand(99);
	for (uint8_t type = TFS_DATETIME_YEAR; type <= TFS_TIME_AS; type++) {
		for (int i = 0; i < 2000; i++) {
			int64_t v, back;
			char text[64];
			const char *why;

			if (i < (int)(sizeof(fixed) / sizeof(fixed[0])))
				v = fixed[i];
			else if (i % 2)
				v = (int64_t)(((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^
					      (uint64_t)rand());
			else
				v = (int64_t)(rand() % 2000000) - 1000000;
			/* The renderer overflows past these (1970 + v; days
			 * + 719468 in its civil date): not values to test. */
			if ((type == TFS_DATETIME_YEAR && v > INT64_MAX - 1970) ||
			    (type == TFS_DATETIME_YEAR + 3 && v > INT64_MAX - 719468))
				continue;
			tfsr_datetime_text(text, sizeof(text), type, v);
			cr_assert_eq(tfs__value_parse(type, (const uint8_t *)text, strlen(text),
						      &back, &why),
				     TFS_E_OK, "%s %lld '%s': %s", tfs_datatype_name(type),
				     (long long)v, text, why);
			cr_assert_eq(back, v, "%s '%s'", tfs_datatype_name(type), text);
		}
	}
}
