/* The render library's table and slices: every format's row is reachable
 * by name and extension and takes the fields it says; a slice streams as
 * many bytes as its known size says, and a fixed-record dense slice
 * renders any range of cells alone as the same bytes as the stream; the
 * times users type and read. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "slice.h"
#include "tfs_buf.h"
#include "render_fixture.h"
#include "tfs_render.h"


/* Opens the slice SEL of field (name, NULL: every field) in format fmt on
 * the open array. */
static enum tfs_err slice_of(const char *field, enum tfsr_format fmt,
			     const char *sel, uint64_t max_cells,
			     struct tfsr_slice **out, struct tfs_diag *d)
{
	const struct tfs_schema *s = tfs_array_schema(arr);
	struct tfs_range ned[TFSR_MAX_DIMS];
	struct tfsr_slice_opts o = {.fmt = fmt, .sel = sel,
				    .sel_len = strlen(sel),
				    .max_cells = max_cells, .field = -1};

	if (field) {
		o.field = tfs_schema_field_index(s, field);
		cr_assert_geq(o.field, 0, "no field '%s'", field);
	}
	if (tfs_array_non_empty_domain(arr, ned))
		o.ned = ned;
	tfs_diag_init(d);
	return tfsr_slice_open(arr, &o, out, d);
}

/* The whole stream of a slice into out. */
static void stream_all(struct tfsr_slice *sl, struct tfs_buf *out)
{
	struct tfsr_stream st;
	struct tfs_diag d;

	tfs_diag_init(&d);
	tfsr_stream_init(&st, sl, arr);
	while (!st.done)
		cr_assert_eq(tfsr_stream_step(&st, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
	cr_assert_eq(tfs_buf_append(out, st.out.data, st.out.len), TFS_E_OK);
	tfsr_stream_release(&st);
}

/* ---- The table ---------------------------------------------------------- */

Test(renderers, rows_by_format_name_and_extension)
{
	for (size_t i = 0; i < TFSR_FMT_NUM; i++) {
		const struct tfsr_renderer *r = &tfsr_renderers[i];
		char name[64];
		const char *sel;
		size_t sel_len;
		enum tfsr_format fmt;

		cr_assert_eq((size_t)r->fmt, i, "row %zu", i);
		cr_assert(r->name && r->ext && r->mime && r->cells, "row %zu", i);
		cr_assert_eq(tfsr_renderer_of(r->fmt), r);
		cr_assert_eq(tfsr_renderer_named(r->name), r, "%s", r->name);
		snprintf(name, sizeof(name), "slice[1:3,\"a]\"]%s", r->ext);
		cr_assert(tfsr_slice_name_parse(name, &sel, &sel_len, &fmt),
			  "%s", name);
		cr_assert_eq(fmt, r->fmt, "%s", name);
		cr_assert_eq(sel_len, 8, "%s", name);
		cr_assert(!strncmp(sel, "1:3,\"a]\"", 8));
	}
	cr_assert_null(tfsr_renderer_named("gif"));
	cr_assert_null(tfsr_renderer_of(TFSR_FMT_NUM));
}

/* Slices are written raw or as .npy, and in no other format: the one
 * flag that both the write's target and the file's mode follow. */
Test(renderers, raw_and_npy_are_the_writable_formats)
{
	for (size_t i = 0; i < TFSR_FMT_NUM; i++) {
		bool writable = tfsr_renderers[i].flags & TFSR_R_WRITABLE;

		cr_assert_eq(writable, i == TFSR_FMT_RAW || i == TFSR_FMT_NPY,
			     "%s", tfsr_renderers[i].name);
	}
}

Test(renderers, formats_take_the_fields_they_say, .fini = close_array)
{
	const struct tfs_schema *s;
	struct tfs_diag d;
	int a, ns, nv;

	open_array("dense_nullable");
	s = tfs_array_schema(arr);
	a = tfs_schema_field_index(s, "ni");
	ns = tfs_schema_field_index(s, "ns");
	nv = tfs_schema_field_index(s, "d");
	cr_assert(a >= 0 && ns >= 0 && nv == 0);
	for (size_t i = 0; i < TFSR_FMT_NUM; i++) {
		const struct tfsr_renderer *r = &tfsr_renderers[i];

		cr_expect_eq(tfsr_renderer_takes(r, s, -1, NULL),
			     (r->flags & TFSR_R_ALL_FIELDS) != 0, "%s", r->name);
		cr_expect_eq(tfsr_renderer_takes(r, s, ns, NULL),
			     !(r->flags & TFSR_R_NUMERIC_ONLY), "%s", r->name);
		cr_expect_eq(tfsr_renderer_takes(r, s, a, NULL),
			     r->fmt != TFSR_FMT_OFFSETS, "%s", r->name);
		/* A dimension is neither var-size nor nullable. */
		cr_expect_eq(tfsr_renderer_takes(r, s, nv, NULL),
			     r->fmt != TFSR_FMT_OFFSETS &&
				     r->fmt != TFSR_FMT_VALIDITY,
			     "%s", r->name);
	}
	tfs_diag_init(&d);
	cr_assert(!tfsr_renderer_takes(tfsr_renderer_named("txt"), s, -1, &d));
	cr_expect_str_eq(tfs_diag_msg(&d),
			 "array-level slices are .csv, .json or .npy");
	tfs_diag_init(&d);
	cr_assert(!tfsr_renderer_takes(tfsr_renderer_named("offsets"), s, a,
				       &d));
	cr_expect_str_eq(tfs_diag_msg(&d),
			 "'ni' is not var-size, it has no offsets");
	cr_expect_eq(d.code, TFS_E_NOT_FOUND);
}

/* ---- Slices -------------------------------------------------------------- */

Test(slice, known_sizes_and_ranges_match_the_stream, .fini = close_array)
{
	static const char *const fields[] = {"a", "f", "s", NULL};

	open_array("dense_2d_rowmajor");
	for (size_t fi = 0; fi < sizeof(fields) / sizeof(fields[0]); fi++) {
		for (size_t i = 0; i < TFSR_FMT_NUM; i++) {
			const struct tfsr_renderer *r = &tfsr_renderers[i];
			const char *field = fields[fi];
			struct tfsr_slice *sl;
			struct tfs_buf all, part;
			struct tfs_diag d;
			uint64_t size;
			int k = field ? tfs_schema_field_index(tfs_array_schema(arr),
							field)
				      : -1;

			if (!tfsr_renderer_takes(r, tfs_array_schema(arr), k,
						 NULL))
				continue;
			cr_assert_eq(slice_of(field, r->fmt, "2:5,3:9", 0, &sl,
					      &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			cr_assert_eq(sl->cells, 3 * 6);
			tfs_buf_init(&all, TFS_BUF_NO_MAX);
			stream_all(sl, &all);
			cr_assert_gt(all.len, 0, "%s %s", field, r->name);
			if (tfsr_slice_known_size(sl, &size))
				cr_expect_eq(size, all.len, "%s %s",
					     field ? field : "*", r->name);
			else
				cr_expect(r->size_kind == TFSR_SIZE_RENDERED ||
						  !sl->fixed,
					  "%s %s: size not known",
					  field ? field : "*", r->name);
			if (sl->fixed) {
				/* Cells 4..10 alone, as a random read makes
				 * them. */
				struct tfsr_emit em = {.sl = sl, .src = arr,
						       .out = &part};

				tfs_buf_init(&part, TFS_BUF_NO_MAX);
				cr_assert_eq(tfsr_emit_dense_range(&em, 4, 11,
								   &d),
					     TFS_E_OK, "%s", tfs_diag_msg(&d));
				cr_assert_eq(part.len, 7 * sl->record);
				cr_expect(!memcmp(part.data,
						  all.data + sl->header.len +
							  4 * sl->record,
						  part.len),
					  "%s %s: cells 4..10 differ",
					  field ? field : "*", r->name);
				tfs_buf_release(&part);
			}
			tfs_buf_release(&all);
			tfsr_slice_free(sl);
		}
	}
}

Test(slice, one_field_rows_carry_coordinates, .fini = close_array)
{
	struct tfsr_slice *sl;
	struct tfs_buf out;
	struct tfs_diag d;

	open_array("dense_2d_rowmajor");
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	cr_assert_eq(slice_of("a", TFSR_FMT_CSV, "2:3,3:5", 0, &sl, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	stream_all(sl, &out);
	tfsr_slice_free(sl);
	cr_assert_geq(out.len, 6);
	cr_expect(!memcmp(out.data, "r,c,a\n", 6), "%.*s", (int)out.len,
		  (const char *)out.data);
	/* Dense .json of one field: values nested by the selection. */
	out.len = 0;
	cr_assert_eq(slice_of("a", TFSR_FMT_JSON, "2:3,3:5", 0, &sl, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	stream_all(sl, &out);
	tfsr_slice_free(sl);
	cr_expect(out.len > 2 && !memcmp(out.data, "[[", 2), "%.*s",
		  (int)out.len, (const char *)out.data);
	cr_expect(!memchr(out.data, '{', out.len), "%.*s", (int)out.len,
		  (const char *)out.data);
	tfs_buf_release(&out);
	close_array();
	/* Sparse .json of one field: objects with the coordinates. */
	open_array("sparse_2d_int");
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	cr_assert_eq(slice_of("a", TFSR_FMT_JSON, ":,:", 0, &sl, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	stream_all(sl, &out);
	tfsr_slice_free(sl);
	cr_expect(out.len > 8 && memmem(out.data, out.len, "\"x\"", 3) &&
			  memmem(out.data, out.len, "\"y\"", 3),
		  "%.*s", (int)out.len, (const char *)out.data);
	tfs_buf_release(&out);
}

Test(slice, refusals_say_why, .fini = close_array)
{
	struct tfsr_slice *sl = NULL;
	struct tfs_diag d;

	open_array("dense_2d_rowmajor");
	cr_expect_eq(slice_of("a", TFSR_FMT_RAW, "2:5,3:9", 17, &sl, &d),
		     TFS_E_TOO_BIG);
	cr_expect_null(sl);
	cr_expect(strstr(tfs_diag_msg(&d), "max_cells=17"), "%s",
		  tfs_diag_msg(&d));
	cr_expect_eq(slice_of("a", TFSR_FMT_RAW, "2:5,3:9", 18, &sl, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfsr_slice_free(sl);
	sl = NULL;
	cr_expect_eq(slice_of("a", TFSR_FMT_CSV, "5:2", 0, &sl, &d),
		     TFS_E_INVALID);
	cr_expect_null(sl);
}

/* ---- Times ------------------------------------------------------------- */

Test(time_text, parses_ms_and_iso)
{
	static const struct {
		const char *text;
		uint64_t want;
		bool ok;
	} cases[] = {
		{"1700000000000", 1700000000000ull, true},
		{"2023-11-14T22:13:20.000Z", 1700000000000ull, true},
		{"2023-11-14T22:13:20Z", 1700000000000ull, true},
		{"2023-11-14T22:13:20.5", 1700000000500ull, true},
		{"2023-11-14", 1699920000000ull, true},
		{"1970-01-01T00:00:00.001Z", 1, true},
		{"2000-02-29T12:00", 951825600000ull, true},
		{"2023-13-01", 0, false},
		{"2023-11-14T25:00", 0, false},
		{"yesterday", 0, false},
		{"", 0, false},
		{"2023-11-14T22:13:20.000Zjunk", 0, false},
		/* core's ISO-8601 reader: zones, finer fractions cut */
		{"2023-11-14T23:13:20+01:00", 1700000000000ull, true},
		{"2023-11-14T22:13:20.0009999Z", 1700000000000ull, true},
		{"1969-12-31", 0, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0;
		enum tfs_err e = tfsr_parse_time(cases[i].text, &v);

		cr_expect_eq(e == TFS_E_OK, cases[i].ok, "'%s'", cases[i].text);
		if (cases[i].ok)
			cr_expect_eq(v, cases[i].want, "'%s': %llu", cases[i].text,
				     (unsigned long long)v);
	}
}

Test(time_text, round_trips)
{
	uint64_t samples[] = {0, 1, 999, 1000, 1700000000000ull,
			      1700000001234ull, 4102444800000ull, 951825600000ull};

	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		char text[40];
		uint64_t back = 0;

		tfsr_format_time(text, sizeof(text), samples[i]);
		cr_assert_eq(strlen(text), 24, "%s", text);
		cr_assert_eq(tfsr_parse_time(text, &back), TFS_E_OK, "%s", text);
		cr_expect_eq(back, samples[i], "%s", text);
	}
	{
		char text[40];

		tfsr_format_time(text, sizeof(text), 1700000000000ull);
		cr_expect_str_eq(text, "2023-11-14T22:13:20.000Z");
	}
}

