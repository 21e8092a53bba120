/* The render library's parts: the selection grammar (SPEC §3) against corpus
 * schemas, value text (SPEC §4), text renderers and .npy headers. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "selection.h"
#include "text_render.h"
#include "value_text.h"
#include "render_fixture.h"
#include "tfs_render.h"
#include "value_text.h"
#include "tfs_buf.h"
#include "tfs_format.h"


/* Parses sel on the open array with its non-empty domain. */
static enum tfs_err parse(const char *sel, struct tfsr_sel **out,
			  struct tfs_diag *d)
{
	static struct tfs_range ned[8];
	const struct tfs_schema *s = tfs_array_schema(arr);
	bool has = tfs_array_non_empty_domain(arr, ned);

	tfs_diag_init(d);
	return tfsr_sel_parse(sel, strlen(sel), s, has ? ned : NULL, out, d);
}

static int64_t lo_i(const struct tfsr_sel *s, int k)
{
	return (int64_t)(int32_t)tfs_get_u32(s->dims[k].range.lo);
}

static int64_t hi_i(const struct tfsr_sel *s, int k)
{
	return (int64_t)(int32_t)tfs_get_u32(s->dims[k].range.hi);
}

Test(selection, integers_half_open, .fini = close_array)
{
	static const struct {
		const char *sel;
		int64_t lo0, hi0, lo1, hi1;
		uint64_t n0, n1;
	} ok[] = {
		{"", 1, 10, 1, 12, 10, 12},
		{":", 1, 10, 1, 12, 10, 12},
		{"2:5", 2, 4, 1, 12, 3, 12},
		{"2:5,3:4", 2, 4, 3, 3, 3, 1},
		{"7", 7, 7, 1, 12, 1, 12},
		{"3:,:4", 3, 10, 1, 3, 8, 3},
		{"1:11:3,2:13:4", 1, 10, 2, 12, 4, 3},
		{"1:10", 1, 9, 1, 12, 9, 12},
	};
	struct tfsr_sel *s;
	struct tfs_diag d;

	open_array("dense_2d_rowmajor");
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(parse(ok[i].sel, &s, &d), TFS_E_OK, "'%s': %s",
			     ok[i].sel, tfs_diag_msg(&d));
		cr_expect(!s->empty, "'%s'", ok[i].sel);
		cr_expect_eq(lo_i(s, 0), ok[i].lo0, "'%s'", ok[i].sel);
		cr_expect_eq(hi_i(s, 0), ok[i].hi0, "'%s'", ok[i].sel);
		cr_expect_eq(lo_i(s, 1), ok[i].lo1, "'%s'", ok[i].sel);
		cr_expect_eq(hi_i(s, 1), ok[i].hi1, "'%s'", ok[i].sel);
		cr_expect_eq(s->dims[0].count, ok[i].n0, "'%s'", ok[i].sel);
		cr_expect_eq(s->dims[1].count, ok[i].n1, "'%s'", ok[i].sel);
		tfsr_sel_free(s);
	}
	cr_assert_eq(parse("5:5", &s, &d), TFS_E_OK);
	cr_expect(s->empty, "5:5 selects nothing");
	tfsr_sel_free(s);
}

Test(selection, errors_say_why, .fini = close_array)
{
	static const struct {
		const char *sel, *why;
	} bad[] = {
		{"abc", "not a value"},      {"1:5,1:5,1:5", "more ranges"},
		{"5:1", "lo > hi"},          {"0:5", "outside the domain"},
		{"1:20", "outside the domain"}, {"1:5:0", "step must be"},
		{"1:5:-1", "step must be"},  {"\"1\":5", "not a value"},
		{"1:5,", "trailing ','"},    {",1:5", "is empty"},
		{"1:2:3:4", "more than lo:hi:step"}, {"\"1", "unterminated"},
		{"1.5:3", "not a value"},
	};
	struct tfsr_sel *s;
	struct tfs_diag d;

	open_array("dense_2d_rowmajor");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse(bad[i].sel, &s, &d), TFS_E_INVALID, "'%s'",
			     bad[i].sel);
		cr_expect(strstr(tfs_diag_msg(&d), bad[i].why), "'%s': '%s'",
			  bad[i].sel, tfs_diag_msg(&d));
	}
}

Test(selection, floats_strings_and_names, .fini = close_array)
{
	struct tfsr_sel *s;
	struct tfs_diag d;
	const char *sel;
	size_t len;
	enum tfsr_format fmt;
	double lo, hi;

	open_array("sparse_2d_float");
	cr_assert_eq(parse("0.5:1.5", &s, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	memcpy(&lo, s->dims[0].range.lo, 8);
	memcpy(&hi, s->dims[0].range.hi, 8);
	cr_expect(lo == 0.5 && hi < 1.5 && hi > 1.4999999, "[0.5, 1.5)");
	tfsr_sel_free(s);
	cr_expect_eq(parse("1:2:3", &s, &d), TFS_E_INVALID, "float stride");
	close_array();

	open_array("sparse_string_dim");
	cr_assert_eq(parse("\"b\":\"d\"", &s, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_expect(s->dims[0].hi_exclusive);
	cr_expect(s->dims[0].range.lo_len == 1 && s->dims[0].range.lo[0] == 'b');
	tfsr_sel_free(s);
	cr_assert_eq(parse("\"a \\\"q\\\"\":", &s, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_expect(s->dims[0].range.lo_len == 5 &&
		  memcmp(s->dims[0].range.lo, "a \"q\"", 5) == 0);
	cr_expect(!s->dims[0].hi_exclusive, "a missing hi is inclusive");
	tfsr_sel_free(s);
	cr_assert_eq(parse("banana", &s, &d), TFS_E_OK);
	cr_expect(!s->dims[0].hi_exclusive && s->dims[0].range.hi_len == 6);
	tfsr_sel_free(s);
	cr_expect_eq(parse("\"d\":\"b\"", &s, &d), TFS_E_INVALID);

	cr_assert(tfsr_slice_name_parse("slice[1:2,\"]\"].csv", &sel, &len, &fmt));
	cr_expect(len == 7 && fmt == TFSR_FMT_CSV);
	cr_assert(tfsr_slice_name_parse("slice[]", &sel, &len, &fmt));
	cr_expect(len == 0 && fmt == TFSR_FMT_RAW);
	cr_expect(!tfsr_slice_name_parse("slice[1:2].xlsx", &sel, &len, &fmt));
	cr_expect(!tfsr_slice_name_parse("slice[1:2", &sel, &len, &fmt));
	cr_expect(!tfsr_slice_name_parse("slices[1]", &sel, &len, &fmt));
}

Test(selection, datetime_iso, .fini = close_array)
{
	struct tfsr_sel *s;
	struct tfs_diag d;

	/* t is DATETIME_DAY: days since 1970-01-01. */
	open_array("dense_datetime_dim");
	cr_assert_eq(parse("2022-01-13:2022-01-15", &s, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_expect_eq((int64_t)tfs_get_u64(s->dims[0].range.lo), 19005);
	cr_expect_eq((int64_t)tfs_get_u64(s->dims[0].range.hi), 19006);
	cr_expect_eq(s->dims[0].count, 2);
	tfsr_sel_free(s);
}

/* Datetime dimensions are named in ISO-8601 text. */
Test(selection, ned_names_datetime_iso, .fini = close_array)
{
	struct tfs_range ned[8];
	struct tfs_buf b;

	open_array("dense_datetime_dim");
	cr_assert(tfs_array_non_empty_domain(arr, ned));
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsr_sel_format_ned(&b, tfs_array_schema(arr), ned),
		     TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
	{
		char want[64];
		int64_t lo = tfs_value_as_i64((TFS_DATETIME_YEAR + 3), ned[0].lo);

		tfsr_datetime_text(want, sizeof(want), (TFS_DATETIME_YEAR + 3), lo);
		cr_expect_eq(strlen(want), 10, "'%s'", want);
		cr_expect(strncmp((char *)b.data, want, strlen(want)) == 0 &&
			  b.data[10] == ':',
			  "'%s' does not start with '%s:'", (char *)b.data,
			  want);
	}
	tfs_buf_release(&b);
	close_array();
}

Test(selection, ned_names_round_trip, .fini = close_array)
{
	static const char *const arrays[] = {"dense_2d_rowmajor", "dense_3d",
					     "sparse_2d_float", "sparse_string_dim",
					     "dense_uint_dims", "dense_datetime_dim",
					     "sparse_mixed_dims"};

	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		struct tfs_range ned[8];
		struct tfs_buf b;
		struct tfsr_sel *s;
		struct tfs_diag d;
		const struct tfs_schema *sc;

		open_array(arrays[i]);
		sc = tfs_array_schema(arr);
		cr_assert(tfs_array_non_empty_domain(arr, ned));
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		cr_assert_eq(tfsr_sel_format_ned(&b, sc, ned), TFS_E_OK);
		cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
		cr_assert_eq(parse((const char *)b.data, &s, &d), TFS_E_OK,
			     "%s: '%s': %s", arrays[i], (char *)b.data,
			     tfs_diag_msg(&d));
		for (uint32_t k = 0; k < sc->dim_num; k++) {
			cr_expect(s->dims[k].range.lo_len == ned[k].lo_len &&
				  memcmp(s->dims[k].range.lo, ned[k].lo,
					 ned[k].lo_len) == 0,
				  "%s '%s' dim %u lo", arrays[i], (char *)b.data, k);
			cr_expect(s->dims[k].range.hi_len == ned[k].hi_len &&
				  memcmp(s->dims[k].range.hi, ned[k].hi,
					 ned[k].hi_len) == 0,
				  "%s '%s' dim %u hi", arrays[i], (char *)b.data, k);
		}
		tfsr_sel_free(s);
		tfs_buf_release(&b);
		close_array();
	}
}

/* ---- Value text ---------------------------------------------------------- */

static char text[256];

static const char *cell(uint8_t type, const void *v, size_t len,
			enum tfsr_text_style style)
{
	struct tfs_column c = {.type = type, .cell_val_num = 1, .data = v,
			       .data_len = len};
	struct tfs_buf b;

	if (tfs_datatype_class(type) == TFS_CLASS_STRING ||
	    tfs_datatype_class(type) == TFS_CLASS_BYTES) {
		static uint64_t offs[2];

		offs[0] = 0;
		offs[1] = len;
		c.var = true;
		c.cell_val_num = TFS_VAR_NUM;
		c.offsets = offs;
	}
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsr_cell_text(&b, &c, 0, style, NULL), TFS_E_OK);
	snprintf(text, sizeof(text), "%.*s", (int)b.len, (char *)b.data);
	tfs_buf_release(&b);
	return text;
}

Test(value_text, numbers_and_times)
{
	int64_t ms = 1700000000322, ns = -1, day = 19005, hr = 472222;
	int32_t i = -42;
	uint64_t u = UINT64_MAX;
	float f = 0.1f, inf = 1.0f / 0.0f;
	double x = -0.0, nan = 0.0 / 0.0;
	uint8_t yes = 1;

	cr_expect_str_eq(cell(TFS_INT32, &i, 4, TFSR_TEXT_TXT), "-42");
	cr_expect_str_eq(cell(TFS_UINT64, &u, 8, TFSR_TEXT_CSV),
			 "18446744073709551615");
	{
		int64_t lim[] = {INT64_MIN, INT64_MAX, 0, -1, 10};
		const char *want[] = {"-9223372036854775808",
				      "9223372036854775807", "0", "-1", "10"};
		uint8_t u8 = 0;
		int8_t i8 = -128;

		for (size_t k = 0; k < sizeof(lim) / sizeof(lim[0]); k++)
			cr_expect_str_eq(cell(TFS_INT64, &lim[k], 8, TFSR_TEXT_CSV),
					 want[k]);
		cr_expect_str_eq(cell(TFS_UINT8, &u8, 1, TFSR_TEXT_JSON), "0");
		cr_expect_str_eq(cell(TFS_INT8, &i8, 1, TFSR_TEXT_TXT), "-128");
	}
	cr_expect_str_eq(cell(TFS_FLOAT32, &f, 4, TFSR_TEXT_TXT), "0.1");
	cr_expect_str_eq(cell(TFS_FLOAT32, &inf, 4, TFSR_TEXT_TXT), "inf");
	cr_expect_str_eq(cell(TFS_FLOAT32, &inf, 4, TFSR_TEXT_JSON), "\"inf\"");
	cr_expect_str_eq(cell(TFS_FLOAT64, &x, 8, TFSR_TEXT_CSV), "-0");
	cr_expect_str_eq(cell(TFS_FLOAT64, &nan, 8, TFSR_TEXT_CSV), "nan");
	cr_expect_str_eq(cell(TFS_BOOL, &yes, 1, TFSR_TEXT_TXT), "true");
	cr_expect_str_eq(cell(TFS_DATETIME_YEAR + 7, &ms, 8, TFSR_TEXT_CSV),
			 "2023-11-14T22:13:20.322Z");
	cr_expect_str_eq(cell(TFS_DATETIME_YEAR + 9, &ns, 8, TFSR_TEXT_CSV),
			 "1969-12-31T23:59:59.999999999Z");
	cr_expect_str_eq(cell(TFS_DATETIME_YEAR + 3, &day, 8, TFSR_TEXT_JSON),
			 "\"2022-01-13\"");
	cr_expect_str_eq(cell(TFS_DATETIME_YEAR + 4, &hr, 8, TFSR_TEXT_TXT),
			 "2023-11-14T22Z");
	cr_expect_str_eq(cell(TFS_TIME_HR + 5, &ms, 8, TFSR_TEXT_TXT),
			 "00:28:20.000000322");
}

/* Every date and time unit at the ends of int64 and around the epoch:
 * the text is a date (or, for a year past int64, the raw count), and no
 * step overflows (UBSan in the sanitizer suite). */
Test(value_text, times_at_the_limits)
{
	const int64_t vals[] = {INT64_MIN, INT64_MIN + 1, -719469, -719468,
				-1, 0, 1, 146096, 146097, INT64_MAX - 719468,
				INT64_MAX - 1, INT64_MAX};
	int64_t max_year = INT64_MAX, min_day = INT64_MIN, max_day = INT64_MAX;

	for (uint8_t t = TFS_DATETIME_YEAR; t <= TFS_DATETIME_YEAR + 12; t++)
		for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++)
			cr_expect_gt(strlen(cell(t, &vals[k], 8, TFSR_TEXT_CSV)),
				     3, "type %u value %" PRId64, t, vals[k]);
	for (uint8_t t = TFS_TIME_HR; t <= TFS_TIME_AS; t++)
		for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++)
			cr_expect_gt(strlen(cell(t, &vals[k], 8, TFSR_TEXT_CSV)),
				     1, "type %u value %" PRId64, t, vals[k]);
	cr_expect_str_eq(cell(TFS_DATETIME_YEAR, &max_year, 8, TFSR_TEXT_CSV),
			 "9223372036854775807");
	/* Day -719468 is 0000-03-01; the extremes follow the proleptic
	 * Gregorian calendar (checked with exact integer arithmetic). */
	cr_expect_str_eq(cell(TFS_DATETIME_YEAR + 3, &vals[3], 8,
			      TFSR_TEXT_CSV), "0000-03-01");
	cr_expect_str_eq(cell(TFS_DATETIME_YEAR + 3, &max_day, 8,
			      TFSR_TEXT_CSV), "25252734927768524-07-27");
	cr_expect_str_eq(cell(TFS_DATETIME_YEAR + 3, &min_day, 8,
			      TFSR_TEXT_CSV), "-25252734927764585-06-07");
}

Test(value_text, strings_quoted_per_style)
{
	cr_expect_str_eq(cell(TFS_STRING_UTF8, "a,b", 3, TFSR_TEXT_CSV),
			 "\"a,b\"");
	cr_expect_str_eq(cell(TFS_STRING_UTF8, "say \"hi\"", 8, TFSR_TEXT_CSV),
			 "\"say \"\"hi\"\"\"");
	cr_expect_str_eq(cell(TFS_STRING_UTF8, "", 0, TFSR_TEXT_CSV), "\"\"");
	cr_expect_str_eq(cell(TFS_STRING_UTF8, "plain", 5, TFSR_TEXT_CSV),
			 "plain");
	cr_expect_str_eq(cell(TFS_STRING_UTF8, "l1\nl2\\", 6, TFSR_TEXT_TXT),
			 "l1\\nl2\\\\");
	cr_expect_str_eq(cell(TFS_STRING_UTF8, "q\"", 2, TFSR_TEXT_JSON),
			 "\"q\\\"\"");
	cr_expect_str_eq(cell(TFS_BLOB, "\x01\xab", 2, TFSR_TEXT_CSV), "01ab");
}

Test(value_text, nulls_and_lists)
{
	int16_t v[3] = {1, -2, 3};
	uint8_t valid = 0;
	struct tfs_column c = {.type = TFS_INT16, .cell_val_num = 3,
			       .data = (const uint8_t *)v, .data_len = 6};
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsr_cell_text(&b, &c, 0, TFSR_TEXT_TXT, NULL), TFS_E_OK);
	cr_assert_eq(tfsr_cell_text(&b, &c, 0, TFSR_TEXT_JSON, NULL), TFS_E_OK);
	c.nullable = true;
	c.validity = &valid;
	cr_assert_eq(tfsr_cell_text(&b, &c, 0, TFSR_TEXT_TXT, NULL), TFS_E_OK);
	cr_assert_eq(tfsr_cell_text(&b, &c, 0, TFSR_TEXT_CSV, NULL), TFS_E_OK);
	cr_assert_eq(tfsr_cell_text(&b, &c, 0, TFSR_TEXT_JSON, NULL), TFS_E_OK);
	cr_expect_eq(b.len, strlen("1 -2 3[1,-2,3]NULLnull"));
	cr_expect(memcmp(b.data, "1 -2 3[1,-2,3]NULLnull", b.len) == 0,
		  "%.*s", (int)b.len, (char *)b.data);
	tfs_buf_release(&b);
}

/* ---- Renderers and .npy ----------------------------------------------- */

Test(text_render, dense_json_nests_like_the_selection)
{
	int32_t v[6] = {1, 2, 3, 4, 5, 6};
	struct tfs_column col = {.type = TFS_INT32, .cell_val_num = 1,
				 .data = (const uint8_t *)v, .data_len = 24};
	struct tfs_batch b = {.cell_num = 6, .column_num = 1, .columns = &col};
	struct tfsr_text_column tc = {.name = "a", .batch_index = 0};
	uint64_t shape[2] = {2, 3};
	struct tfsr_text_render *r;
	struct tfs_buf out;
	const char *want = "[[1,2,3],\n[4,5,6]]\n";

	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsr_text_render_new(TFSR_TEXT_JSON, &tc, 1, shape, 2, &r),
		     TFS_E_OK);
	cr_assert_eq(tfsr_text_render_begin(r, &out), TFS_E_OK);
	/* Cells may come in any batch split. */
	cr_assert_eq(tfsr_text_render_cells(r, &out, &b, 0, 4), TFS_E_OK);
	cr_assert_eq(tfsr_text_render_cells(r, &out, &b, 4, 2), TFS_E_OK);
	cr_assert_eq(tfsr_text_render_end(r, &out), TFS_E_OK);
	cr_expect(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0,
		  "%.*s", (int)out.len, (char *)out.data);
	tfsr_text_render_free(r);
	out.len = 0;
	cr_assert_eq(tfsr_text_render_new(TFSR_TEXT_CSV, &tc, 1, NULL, 0, &r),
		     TFS_E_OK);
	cr_assert_eq(tfsr_text_render_begin(r, &out), TFS_E_OK);
	cr_assert_eq(tfsr_text_render_cells(r, &out, &b, 0, 2), TFS_E_OK);
	cr_assert_eq(tfsr_text_render_end(r, &out), TFS_E_OK);
	cr_expect(out.len == 6 && memcmp(out.data, "a\n1\n2\n", 6) == 0);
	tfsr_text_render_free(r);
	tfs_buf_release(&out);
}

/* A counting pass gives the bytes of the rendering for any split of the
 * cells: computed coordinates (counted without writing them) of every
 * integer type, negative and large origins, steps, 1 to 3 dimensions,
 * beside a value column. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const uint8_t coord_types[] = {TFS_INT8,  TFS_UINT8,  TFS_INT16,
				      TFS_UINT16, TFS_INT32, TFS_UINT32,
				      TFS_INT64, TFS_UINT64};

/* A first coordinate whose values stay in the type: near its ends, near
 * zero, or around powers of ten. */
static uint64_t coord_lo(uint64_t *s, uint8_t type, uint64_t span)
{
	size_t w = tfs_datatype_size(type);
	bool is_signed = type == TFS_INT8 || type == TFS_INT16 ||
			 type == TFS_INT32 || type == TFS_INT64;
	uint64_t max = w == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * w)) - 1;
	uint64_t smin = is_signed ? 0 - ((max >> 1) + 1) : 0;
	uint64_t top = is_signed ? max >> 1 : max;

	switch (next_rand(s) % 4) {
	case 0: /* the lowest values */
		return smin;
	case 1: /* the highest */
		return top - span;
	case 2: /* around zero */
		return is_signed ? 0 - span / 2 : 0;
	default: { /* around a power of ten the type holds */
		uint64_t p = 1;

		for (uint64_t k = next_rand(s) % 19; k-- > 0 && p <= top / 10;)
			p *= 10;
		if (p > top - span)
			return top - span;
		return p > span ? p - span / 2 : 0;
	}
	}
}

Test(text_render, counts_computed_coordinates_exactly)
{
	uint64_t seed = 0x9e3779b97f4a7c15u;
	struct tfs_buf out;

	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	for (int round = 0; round < 300; round++) {
		size_t ndim = 1 + next_rand(&seed) % 3;
		struct tfsr_text_column tc[4];
		uint64_t shape[3], cells = 1;
		struct tfsr_text_render *r, *c;
		int32_t v[1728];
		struct tfs_column col = {.type = TFS_INT32, .cell_val_num = 1,
					 .data = (const uint8_t *)v};
		struct tfs_batch b = {.column_num = 1, .columns = &col};
		uint64_t counted = 0;

		for (size_t k = 0; k < ndim; k++) {
			uint8_t type = coord_types[next_rand(&seed) % 8];
			uint64_t stride = 1 + next_rand(&seed) % 40;

			shape[k] = 1 + next_rand(&seed) % (ndim == 1 ? 400 : 12);
			/* Values that stay in a byte. */
			if (tfs_datatype_size(type) == 1) {
				stride = 1 + stride % 3;
				shape[k] = shape[k] > 40 ? 40 : shape[k];
			}
			cells *= shape[k];
			tc[k] = (struct tfsr_text_column){
				.name = "d", .batch_index = 1 + k, .coord = true,
				.dim = (uint32_t)k, .type = type, .stride = stride,
				.lo = coord_lo(&seed, type, shape[k] * stride)};
		}
		tc[ndim] = (struct tfsr_text_column){.name = "a",
						     .batch_index = 0};
		for (uint64_t i = 0; i < cells; i++)
			v[i] = (int32_t)(next_rand(&seed) % 200001) - 100000;
		col.data_len = cells * 4;
		b.cell_num = cells;
		cr_assert_eq(tfsr_text_render_new(round % 2 ? TFSR_TEXT_CSV
							    : TFSR_TEXT_TXT,
						  tc, ndim + 1, shape, ndim, &r),
			     TFS_E_OK);
		cr_assert_eq(tfsr_text_render_new(round % 2 ? TFSR_TEXT_CSV
							    : TFSR_TEXT_TXT,
						  tc, ndim + 1, shape, ndim, &c),
			     TFS_E_OK);
		out.len = 0;
		cr_assert_eq(tfsr_text_render_cells(r, &out, &b, 0, cells),
			     TFS_E_OK);
		/* The count in pieces of random lengths. */
		for (uint64_t first = 0; first < cells;) {
			uint64_t n = 1 + next_rand(&seed) % (cells - first);

			cr_assert_eq(tfsr_text_render_count(c, &b, first, n,
							    &counted),
				     TFS_E_OK);
			first += n;
		}
		if (counted != out.len)
			fprintf(stderr,
				"round %d: %zu dimensions, %" PRIu64
				" cells: counted %" PRIu64 ", rendered %zu\n",
				round, ndim, cells, counted, out.len);
		cr_assert(counted == out.len);
		tfsr_text_render_free(r);
		tfsr_text_render_free(c);
	}
	tfs_buf_release(&out);
}

Test(npy, header_is_padded_and_describes_the_array)
{
	struct tfs_buf b;
	uint64_t shape[2] = {10, 12};
	const char *dict;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsr_npy_header(&b, "'<i4'", shape, 2), TFS_E_OK);
	cr_expect_eq(b.len % 64, 0);
	cr_expect(memcmp(b.data, "\x93NUMPY\x01\x00", 8) == 0);
	cr_expect_eq((size_t)(b.data[8] | b.data[9] << 8), b.len - 10);
	cr_expect_eq(b.data[b.len - 1], '\n');
	dict = (const char *)b.data + 10;
	cr_expect(strncmp(dict, "{'descr': '<i4', 'fortran_order': False, "
				"'shape': (10, 12), }",
			  58) == 0,
		  "%.*s", (int)b.len - 10, dict);
	b.len = 0;
	cr_assert_eq(tfsr_npy_descr(&b, TFS_DATETIME_YEAR + 7, 1, 0), TFS_E_OK);
	cr_assert_eq(tfsr_npy_descr(&b, TFS_STRING_UTF8, TFS_VAR_NUM, 9),
		     TFS_E_OK);
	cr_assert_eq(tfsr_npy_descr(&b, TFS_FLOAT32, 3, 0), TFS_E_OK);
	cr_assert_eq(tfsr_npy_descr(&b, TFS_BOOL, 1, 0), TFS_E_OK);
	cr_expect(b.len == strlen("'<M8[ms]''|S9''<f4', (3,)'|b1'") &&
		  memcmp(b.data, "'<M8[ms]''|S9''<f4', (3,)'|b1'", b.len) == 0,
		  "%.*s", (int)b.len, (char *)b.data);
	tfs_buf_release(&b);
}

Test(selection, stored_order_word, .fini = close_array)
{
	struct tfsr_sel *s, *plain;
	struct tfs_diag d;

	open_array("sparse_2d_int");
	cr_assert_eq(parse("2:5;stored", &s, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(parse("2:5", &plain, &d), TFS_E_OK);
	cr_expect(s->stored);
	cr_expect(!plain->stored);
	cr_expect_eq(lo_i(s, 0), lo_i(plain, 0));
	cr_expect_eq(hi_i(s, 0), hi_i(plain, 0));
	cr_expect_eq(hi_i(s, 1), hi_i(plain, 1));
	tfsr_sel_free(s);
	tfsr_sel_free(plain);
	cr_assert_eq(parse(";stored", &s, &d), TFS_E_OK);
	cr_expect(s->stored);
	tfsr_sel_free(s);
	cr_expect_eq(parse("2:5;sorted", &s, &d), TFS_E_INVALID);
	cr_expect_eq(parse("2:5;stored;stored", &s, &d), TFS_E_INVALID);
	close_array();
	open_array("dense_2d_rowmajor");
	cr_expect_eq(parse("2:5;stored", &s, &d), TFS_E_INVALID);
	cr_expect(strstr(tfs_diag_msg(&d), "sparse arrays"), "%s",
		  tfs_diag_msg(&d));
}
