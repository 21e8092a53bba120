/* The JSON conventions of the corpus as render/json_out.c and
 * render/cell_json.c write them: shortest round-trip floats (float32 through
 * float), integers exact, strings with invalid UTF-8 bytes as \u00XY, hex
 * for bytes, comma placement, values parsed from subarray texts. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_json.h"
#include "json_out.h"
#include "tfs_alloc.h"

/* Renders with fn into a fresh buffer; returns the text (caller frees). */
static char *render(void (*fn)(struct json_out *j, const void *arg),
		    const void *arg)
{
	struct tfs_buf b;
	struct json_out j;
	char *s;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	json_out_init(&j, &b);
	fn(&j, arg);
	cr_assert_eq(json_out_error(&j), TFS_E_OK);
	s = tfs_strndup((const char *)b.data, b.len);
	tfs_buf_release(&b);
	return s;
}

static void put_f64(struct json_out *j, const void *arg)
{
	json_out_f64(j, *(const double *)arg);
}

static void put_f32(struct json_out *j, const void *arg)
{
	json_out_f32(j, *(const float *)arg);
}

struct f64_case {
	double v;
	const char *text;
};

Test(json_out, doubles)
{
	const struct f64_case cases[] = {
		{0.0, "0"},
		{-0.0, "-0"},
		{1.0, "1"},
		{-180.0, "-180"},
		{0.1, "0.1"},
		{2.5, "2.5"},
		{1e-300, "1e-300"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{-123456.789, "-123456.789"},
		{929.3292265413056, "929.3292265413056"},
		{1e16, "1e+16"},
		{123456789012345.0, "123456789012345"},
		{NAN, "\"NaN\""},
		{INFINITY, "\"Infinity\""},
		{-INFINITY, "\"-Infinity\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = render(put_f64, &cases[i].v);

		cr_assert_str_eq(s, cases[i].text);
		tfs_free(s);
	}
}

Test(json_out, doubles_round_trip)
{
	unsigned seed = 12345;

	for (int i = 0; i < 20000; i++) {
		uint64_t bits = 0;
		double v;
		char t[40];

		for (int k = 0; k < 4; k++)
			bits = (bits << 16) ^ (uint64_t)(rand_r(&seed) & 0xffff);
		memcpy(&v, &bits, sizeof(v));
		if (!isfinite(v))
			continue;
		json_fmt_f64(t, sizeof(t), v);
		cr_assert_eq(strtod(t, NULL), v, "%s", t);
		cr_assert_eq(signbit(strtod(t, NULL)), signbit(v));
	}
}

Test(json_out, floats_round_trip_as_float)
{
	const float plain[] = {0.1f, 0.33333334f, 1e-38f, 3.4e38f, -1.5f,
			       -779792.7f, 490937.12f, -1e30f, 2.5f};
	const char *want[] = {"0.1", "0.33333334", "1e-38", "3.4e+38", "-1.5",
			      "-779792.7", "490937.12", "-1e+30", "2.5"};
	unsigned seed = 99;

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		char *s = render(put_f32, &plain[i]);

		cr_assert_str_eq(s, want[i]);
		tfs_free(s);
	}
	for (int i = 0; i < 20000; i++) {
		uint32_t bits = ((uint32_t)(rand_r(&seed) & 0xffff) << 16) ^
				(uint32_t)(rand_r(&seed) & 0xffff);
		float v;
		char t[40];

		memcpy(&v, &bits, sizeof(v));
		if (!isfinite(v))
			continue;
		json_fmt_f32(t, sizeof(t), v);
		cr_assert_eq(strtof(t, NULL), v, "%s", t);
	}
}

/* The text of the search over every precision from 1: the definition of
 * the shortest round-trip form that the formatters shortcut. */
static void shortest_by_search(char *out, size_t cap, double v, bool single)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, cap, "%.*g", prec, v);
		if (single ? strtof(out, NULL) == (float)v : strtod(out, NULL) == v)
			return;
	}
}

/* Random bit patterns, decimal-looking values (k / 10^j), subnormals and
 * the neighbours of powers of two: the same text as the full search. */
Test(json_out, shortest_text_equals_the_full_search)
{
	unsigned seed = 4242;

	for (int i = 0; i < 60000; i++) {
		uint64_t bits = 0;
		double v;
		float f;
		char got[40], want[40];

		for (int k = 0; k < 4; k++)
			bits = (bits << 16) ^ (uint64_t)(rand_r(&seed) & 0xffff);
		switch (i % 4) {
		case 0:
			memcpy(&v, &bits, sizeof(v));
			break;
		case 1:
			v = (double)(int64_t)(bits >> 20) / pow(10, (double)(i % 19));
			break;
		case 2:
			v = ldexp((double)(bits >> 12), -1074 + i % 60); /* subnormals */
			break;
		default:
			v = nextafter(ldexp(1, i % 200 - 100), (i & 4) ? 0 : 1e300);
			break;
		}
		if (isfinite(v) && v != trunc(v)) {
			json_fmt_f64(got, sizeof(got), v);
			shortest_by_search(want, sizeof(want), v, false);
			cr_assert_str_eq(got, want, "double %a", v);
		}
		f = (float)v;
		if (i % 4 == 0)
			memcpy(&f, &bits, sizeof(f));
		if (isfinite(f) && f != truncf(f)) {
			json_fmt_f32(got, sizeof(got), f);
			shortest_by_search(want, sizeof(want), (double)f, true);
			cr_assert_str_eq(got, want, "float %a", (double)f);
		}
	}
}

static void put_str(struct json_out *j, const void *arg)
{
	const char *s = arg;

	json_out_str(j, s, strlen(s));
}

struct str_case {
	const char *in;
	const char *out;
};

Test(json_out, strings)
{
	const struct str_case cases[] = {
		{"plain", "\"plain\""},
		{"a\"quote\"", "\"a\\\"quote\\\"\""},
		{"back\\slash", "\"back\\\\slash\""},
		{"tab\there\n", "\"tab\\there\\n\""},
		{"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
		{"h\xc3\xa9llo", "\"h\\u00e9llo\""},
		{"\xe6\x97\xa5", "\"\\u65e5\""},
		{"\xf0\x9f\x98\x80", "\"\\ud83d\\ude00\""},
		/* Not UTF-8: each bad byte on its own. */
		{"\x80", "\"\\u0080\""},
		{"a\xff" "b", "\"a\\u00ffb\""},
		{"\xc3", "\"\\u00c3\""},
		{"\xe6\x97" "a", "\"\\u00e6\\u0097a\""},
		{"\xc0\xaf", "\"\\u00c0\\u00af\""},         /* overlong */
		{"\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\""}, /* surrogate */
		{"\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = render(put_str, cases[i].in);

		cr_assert_str_eq(s, cases[i].out, "case %zu", i);
		tfs_free(s);
	}
}

static void put_doc(struct json_out *j, const void *arg)
{
	static const uint8_t blob[] = {0x00, 0x2f, 0xea, 0xff};

	(void)arg;
	json_out_begin_object(j);
	json_out_key(j, "a");
	json_out_begin_array(j);
	json_out_i64(j, INT64_MIN);
	json_out_u64(j, UINT64_MAX);
	json_out_null(j);
	json_out_bool(j, true);
	json_out_begin_array(j);
	json_out_end_array(j);
	json_out_begin_object(j);
	json_out_end_object(j);
	json_out_end_array(j);
	json_out_space(j, "\n");
	json_out_key(j, "b");
	json_out_hex(j, blob, sizeof(blob));
	json_out_key(j, "c");
	json_out_value_text(j, "{\"x\":1}", 7);
	json_out_end_object(j);
}

Test(json_out, structure_and_commas)
{
	char *s = render(put_doc, NULL);

	cr_assert_str_eq(s, "{\"a\":[-9223372036854775808,18446744073709551615,"
			    "null,true,[],{}],\n\"b\":\"002feaff\",\"c\":{\"x\":1}}");
	tfs_free(s);
}

Test(json_out, sticky_error_at_the_maximum)
{
	struct tfs_buf b;
	struct json_out j;

	tfs_buf_init(&b, 8);
	json_out_init(&j, &b);
	json_out_begin_array(&j);
	json_out_cstr(&j, "longer than eight bytes");
	json_out_u64(&j, 1);
	json_out_end_array(&j);
	cr_assert_eq(json_out_error(&j), TFS_E_TOO_BIG);
	tfs_buf_release(&b);
}

static void put_cells(struct json_out *j, const void *arg)
{
	static const int32_t ints[] = {10, -20};
	static const double fill[] = {NAN};
	static const uint8_t blob[] = {0xde, 0xad};
	static const float f = -0.0f;

	(void)arg;
	json_out_begin_array(j);
	cell_json_cell(j, TFS_INT32, false, 1, (const uint8_t *)ints, 4);
	cell_json_cell(j, TFS_INT32, false, 2, (const uint8_t *)ints, 8);
	cell_json_cell(j, TFS_INT32, true, TFS_VAR_NUM, (const uint8_t *)ints, 4);
	cell_json_cell(j, TFS_INT32, true, TFS_VAR_NUM, NULL, 0);
	cell_json_cell(j, TFS_FLOAT64, true, TFS_VAR_NUM,
		       (const uint8_t *)fill, 8);
	cell_json_cell(j, TFS_FLOAT32, false, 1, (const uint8_t *)&f, 4);
	cell_json_cell(j, TFS_CHAR, false, 1, (const uint8_t *)"\x80", 1);
	cell_json_cell(j, TFS_STRING_ASCII, true, TFS_VAR_NUM,
		       (const uint8_t *)"", 0);
	cell_json_cell(j, TFS_BLOB, false, 2, blob, 2);
	cell_json_meta_values(j, TFS_CHAR, 3, (const uint8_t *)"abc");
	cell_json_meta_values(j, TFS_INT32, 2, (const uint8_t *)ints);
	cell_json_meta_values(j, TFS_BLOB, 2, blob);
	json_out_end_array(j);
}

Test(cell_json, cells_fills_and_metadata)
{
	char *s = render(put_cells, NULL);

	cr_assert_str_eq(s, "[10,[10,-20],[10],[],[\"NaN\"],-0,\"\\u0080\",\"\","
			    "\"dead\",[\"abc\"],[10,-20],[\"dead\"]]");
	tfs_free(s);
}

Test(cell_json, parse_values_by_type)
{
	uint8_t v[8];
	int64_t i64;
	uint64_t u64;
	int16_t i16;
	float f;
	double d;

	cr_assert(cell_json_parse_value(TFS_INT64, "-1099511627776", v));
	memcpy(&i64, v, 8);
	cr_assert_eq(i64, -1099511627776LL);
	cr_assert(cell_json_parse_value(TFS_UINT64, "18446744073709550615", v));
	memcpy(&u64, v, 8);
	cr_assert_eq(u64, UINT64_C(18446744073709550615));
	cr_assert(cell_json_parse_value(TFS_INT16, "-5", v));
	memcpy(&i16, v, 2);
	cr_assert_eq(i16, -5);
	cr_assert_not(cell_json_parse_value(TFS_INT16, "40000", v));
	cr_assert_not(cell_json_parse_value(TFS_UINT8, "-1", v));
	cr_assert_not(cell_json_parse_value(TFS_UINT8, "256", v));
	cr_assert_not(cell_json_parse_value(TFS_INT32, "1.5", v));
	cr_assert_not(cell_json_parse_value(TFS_INT32, "", v));
	cr_assert(cell_json_parse_value(TFS_FLOAT32, "0.1", v));
	memcpy(&f, v, 4);
	cr_assert_eq(f, 0.1f);
	cr_assert(cell_json_parse_value(TFS_FLOAT64, "-10.5", v));
	memcpy(&d, v, 8);
	cr_assert_eq(d, -10.5);
	cr_assert_not(cell_json_parse_value(TFS_FLOAT64, "x", v));
	cr_assert(cell_json_parse_value(25, "1700000000000", v), "DATETIME_MS");
}
