/* Array schemas (format/schema.md): the worked example of §10, every
 * schema file of the corpus checked against the corpus JSON and
 * serialized back to its exact bytes, the legacy and experimental arrays,
 * version-dependent defaults, validation failures, truncation and bit
 * flips. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_examples.h"
#include "fmt_test_util.h"
#include "tfs_alloc.h"

#define example fx_schema_v22

/* Offsets of fields of the example, for edits. */
#define EX_ARRAY_TYPE 5
#define EX_TILE_ORDER 6
#define EX_CELL_ORDER 7
#define EX_DIM_NUM 70
#define EX_DIM_TYPE 79
#define EX_DIM_CVN 80
#define EX_DOMAIN_SIZE 92
#define EX_DOMAIN 100
#define EX_EXTENT 108
#define EX_ATTR_NUM 113
#define EX_ATTR_TYPE 122
#define EX_ATTR_CVN 123
#define EX_FILL_SIZE 135
#define EX_NULLABLE 147
#define EX_ORDER 149
#define EX_ENUM_NAME 150
#define EX_CD_VERSION 162
#define EX_CD_EMPTY 166

static enum tfs_err parse(struct tfs_schema *s, const uint8_t *buf,
			  size_t len, struct tfs_diag *d)
{
	tfs_diag_init(d);
	return tfs_schema_parse(s, buf, len, "__1_1_abc", d);
}

Test(schema, worked_example)
{
	struct tfs_schema s;
	struct tfs_diag d;
	struct tfs_buf b;

	cr_assert_eq(sizeof(example), 143 + 24);
	cr_assert_eq(parse(&s, example, sizeof(example), &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_expect_str_eq(s.name, "__1_1_abc");
	cr_expect_eq(s.version, 22);
	cr_expect_eq(s.array_type, TFS_DENSE);
	cr_expect_eq(s.capacity, 10000);
	cr_expect_eq(s.coords_filters.count, 1);
	cr_expect_eq(s.coords_filters.filters[0].type, TFS_FILTER_ZSTD);
	cr_expect_eq(s.coords_filters.filters[0].level, -1);
	cr_expect_eq(s.validity_filters.filters[0].type, TFS_FILTER_RLE);
	cr_assert_eq(s.dim_num, 1);
	cr_expect_str_eq(s.dims[0].name, "d");
	cr_expect_eq(s.dims[0].type, TFS_INT32);
	cr_expect(s.dims[0].filters_inherited);
	cr_expect_eq(s.dims[0].filters.count, 1);
	cr_expect_eq(s.dims[0].filters.filters[0].type, TFS_FILTER_ZSTD);
	cr_expect_eq(tfs_get_u32(s.dims[0].domain[0]), 1);
	cr_expect_eq(tfs_get_u32(s.dims[0].domain[1]), 10);
	cr_expect(s.dims[0].has_extent);
	cr_expect_eq(tfs_get_u32(s.dims[0].extent), 5);
	cr_assert_eq(s.attr_num, 1);
	cr_expect_str_eq(s.attrs[0].name, "a");
	cr_expect_eq(s.attrs[0].fill_size, 4);
	cr_expect_eq(tfs_get_u32(s.attrs[0].fill), 0x80000000u);
	cr_expect_null(s.attrs[0].enumeration);
	cr_expect_not(s.has_current_domain);
	cr_expect_eq(tfs_schema_attr_index(&s, "a"), 0);
	cr_expect_eq(tfs_schema_attr_index(&s, "d"), -1);
	cr_expect_eq(tfs_schema_dim_index(&s, "d"), 0);
	cr_expect_eq(tfs_attr_cell_size(&s.attrs[0]), 4);

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&b, &s), TFS_E_OK);
	cr_expect_eq(b.len, sizeof(example));
	cr_expect_arr_eq(b.data, example, sizeof(example));
	tfs_buf_release(&b);
	tfs_schema_release(&s);
	tfs_schema_release(&s); /* released structs are empty */
}

Test(schema, name_timestamps)
{
	struct tfs_schema s;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_parse(&s, example, sizeof(example),
				      "__7_9_00000002fced2fb1f6ac08863552dc86",
				      &d),
		     TFS_E_OK);
	cr_expect_eq(s.t1, 7);
	cr_expect_eq(s.t2, 9);
	tfs_schema_release(&s);
	cr_assert_eq(tfs_schema_parse(&s, example, sizeof(example),
				      "__array_schema.tdb", &d),
		     TFS_E_OK);
	cr_expect_eq(s.t1, 0);
	cr_expect_eq(s.t2, 0);
	tfs_schema_release(&s);
}

/* ---- edits of the example that must be refused ---------------------- */

struct edit {
	const char *what;
	size_t at;
	uint8_t bytes[4];
	size_t n;
	enum tfs_err err;
	const char *msg; /* substring of the diagnostic */
};

static const struct edit edits[] = {
	{"version 24", 0, {24}, 1, TFS_E_UNSUPPORTED,
	 "schema '__1_1_abc': unsupported format version 24"},
	{"version all ones", 0, {0xff, 0xff, 0xff, 0xff}, 4, TFS_E_UNSUPPORTED,
	 "unsupported format version 4294967295"},
	{"experimental bit", 3, {0x80}, 1, TFS_E_UNSUPPORTED,
	 "unsupported format version 2147483670"},
	{"version 0", 0, {0}, 1, TFS_E_CORRUPT, "version 0"},
	{"allows_dups 2", 4, {2}, 1, TFS_E_CORRUPT, "allows_dups"},
	{"array type", EX_ARRAY_TYPE, {2}, 1, TFS_E_CORRUPT, "array type"},
	{"tile order", EX_TILE_ORDER, {4}, 1, TFS_E_CORRUPT, "tile order"},
	{"cell order", EX_CELL_ORDER, {5}, 1, TFS_E_CORRUPT, "invalid cell order"},
	{"unordered cells", EX_CELL_ORDER, {3}, 1, TFS_E_UNSUPPORTED,
	 "unsupported cell order 3"},
	{"global order cells", EX_CELL_ORDER, {2}, 1, TFS_E_UNSUPPORTED,
	 "unsupported cell order 2"},
	{"hilbert dense", EX_CELL_ORDER, {4}, 1, TFS_E_CORRUPT, "Hilbert"},
	{"no dims", EX_DIM_NUM, {0}, 1, TFS_E_CORRUPT, "dimension count"},
	{"many dims", EX_DIM_NUM, {0xff, 0xff, 0xff, 0x7f}, 4, TFS_E_CORRUPT,
	 "dimension count"},
	{"dim type", EX_DIM_TYPE, {99}, 1, TFS_E_CORRUPT, "invalid datatype"},
	{"dim blob", EX_DIM_TYPE, {TFS_BLOB}, 1, TFS_E_CORRUPT, "BLOB"},
	{"dim cvn", EX_DIM_CVN, {2}, 1, TFS_E_CORRUPT, "cell_val_num 2"},
	{"dim int64", EX_DIM_TYPE, {TFS_INT64}, 1, TFS_E_CORRUPT,
	 "domain size 8"},
	{"domain size", EX_DOMAIN_SIZE, {16}, 1, TFS_E_CORRUPT, "domain size"},
	{"domain inverted", EX_DOMAIN, {0x0b}, 1, TFS_E_CORRUPT, "low bound"},
	{"extent 0", EX_EXTENT + 1, {0}, 1, TFS_E_CORRUPT, "tile extent"},
	{"extent flag 2", EX_EXTENT, {2}, 1, TFS_E_CORRUPT, "null tile extent"},
	{"many attrs", EX_ATTR_NUM, {0xff, 0xff}, 2, TFS_E_CORRUPT,
	 "attribute count"},
	{"attr type", EX_ATTR_TYPE, {200}, 1, TFS_E_CORRUPT, "invalid datatype"},
	{"attr cvn 0", EX_ATTR_CVN, {0}, 1, TFS_E_CORRUPT, "cell_val_num 0"},
	{"attr cvn 2", EX_ATTR_CVN, {2}, 1, TFS_E_CORRUPT, "fill value size"},
	{"attr any fixed", EX_ATTR_TYPE, {TFS_ANY}, 1, TFS_E_CORRUPT, "ANY"},
	{"attr huge cell", EX_ATTR_CVN + 3, {0x7f}, 1, TFS_E_CORRUPT,
	 "too large"},
	{"fill size 0", EX_FILL_SIZE, {0}, 1, TFS_E_CORRUPT, "fill value size 0"},
	{"fill size huge", EX_FILL_SIZE + 7, {0x10}, 1, TFS_E_CORRUPT,
	 "fill value size"},
	{"nullable 5", EX_NULLABLE, {5}, 1, TFS_E_CORRUPT, "nullable"},
	{"order 3", EX_ORDER, {3}, 1, TFS_E_CORRUPT, "data order"},
	{"enum name past end", EX_ENUM_NAME, {0xff}, 1, TFS_E_CORRUPT,
	 "enumeration name"},
	{"current domain version", EX_CD_VERSION, {1}, 1, TFS_E_UNSUPPORTED,
	 "current domain version 1"},
	{"current domain flag", EX_CD_EMPTY, {7}, 1, TFS_E_CORRUPT,
	 "current domain empty flag"},
	{"current domain missing", EX_CD_EMPTY, {0}, 1, TFS_E_CORRUPT,
	 "truncated"},
};

Test(schema, refused_edits)
{
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		const struct edit *ed = &edits[i];
		uint8_t copy[sizeof(example)];
		struct tfs_schema s;
		struct tfs_diag d;
		enum tfs_err e;

		memcpy(copy, example, sizeof(copy));
		memcpy(copy + ed->at, ed->bytes, ed->n);
		e = parse(&s, copy, sizeof(copy), &d);
		cr_expect_eq(e, ed->err, "%s: got %d (%s)", ed->what, e,
			     tfs_diag_msg(&d));
		cr_expect(strstr(d.msg, ed->msg), "%s: message '%s'", ed->what,
			  d.msg);
		cr_expect(strncmp(d.msg, "schema '__1_1_abc': ", 20) == 0,
			  "%s: '%s'", ed->what, d.msg);
		cr_expect_null(strchr(d.msg, '\n'));
	}
}

/* Checks that need a consistent struct rather than a byte edit. */
Test(schema, refused_structs)
{
	struct tfs_schema s, t;
	struct tfs_diag d;
	struct tfs_buf b;
	uint32_t attr_num;

	cr_assert_eq(parse(&s, example, sizeof(example), &d), TFS_E_OK);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);

	attr_num = s.attr_num;
	s.attr_num = 0;
	cr_assert_eq(tfs_schema_serialize(&b, &s), TFS_E_OK);
	cr_expect_eq(parse(&t, b.data, b.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "dense array without attributes"), "%s", d.msg);
	s.attr_num = attr_num;

	s.dims[0].type = TFS_FLOAT32;
	b.len = 0;
	cr_assert_eq(tfs_schema_serialize(&b, &s), TFS_E_OK);
	cr_expect_eq(parse(&t, b.data, b.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "dense array with FLOAT32 dimension 'd'"), "%s",
		  d.msg);
	memset(s.dims[0].domain[1], 0xff, 4); /* NaN */
	s.array_type = TFS_SPARSE;
	b.len = 0;
	cr_assert_eq(tfs_schema_serialize(&b, &s), TFS_E_OK);
	cr_expect_eq(parse(&t, b.data, b.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "not finite"), "%s", d.msg);

	tfs_buf_release(&b);
	tfs_schema_release(&s);
}

Test(schema, trailing_bytes)
{
	uint8_t copy[sizeof(example) + 1];
	struct tfs_schema s;
	struct tfs_diag d;

	memcpy(copy, example, sizeof(example));
	copy[sizeof(example)] = 0;
	cr_expect_eq(parse(&s, copy, sizeof(copy), &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "trailing"));
}

Test(schema, every_prefix_fails)
{
	for (size_t n = 0; n < sizeof(example); n++) {
		struct tfs_schema s;
		struct tfs_diag d;
		enum tfs_err e = parse(&s, example, n, &d);

		cr_expect_eq(e, TFS_E_CORRUPT, "prefix %zu: %d (%s)", n, e,
			     d.msg);
		cr_expect_null(s.dims);
	}
}

/* ---- hand-built old versions ------------------------------------------ */

/* A version-4 (pre-v5) sparse schema: 2 INT64 dimensions via the domain
 * type, attribute "v" UINT16 × 3 and "s" CHAR var, no fill values stored. */
static size_t build_v4(uint8_t *out)
{
	struct tfs_buf b;
	size_t n;
	enum tfs_err e = TFS_E_OK;
	static const uint8_t empty_list[8] = {0, 0, 1, 0, 0, 0, 0, 0};

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	e |= tfs_buf_append_u32(&b, 4);
	e |= tfs_buf_append_u8(&b, 1);   /* sparse */
	e |= tfs_buf_append_u8(&b, 0);
	e |= tfs_buf_append_u8(&b, 1);
	e |= tfs_buf_append_u64(&b, 50); /* capacity */
	e |= tfs_buf_append(&b, empty_list, 8); /* coords */
	e |= tfs_buf_append(&b, empty_list, 8); /* offsets */
	e |= tfs_buf_append_u8(&b, TFS_INT64);   /* domain type */
	e |= tfs_buf_append_u32(&b, 2);
	for (int i = 0; i < 2; i++) {
		e |= tfs_buf_append_u32(&b, 2);
		e |= tfs_buf_append(&b, i ? "d1" : "d0", 2);
		e |= tfs_buf_append_u64(&b, (uint64_t)-5);
		e |= tfs_buf_append_u64(&b, 100);
		e |= tfs_buf_append_u8(&b, (uint8_t)i); /* d1: null extent */
		if (!i)
			e |= tfs_buf_append_u64(&b, 10);
	}
	e |= tfs_buf_append_u32(&b, 2);
	e |= tfs_buf_append_u32(&b, 1);
	e |= tfs_buf_append(&b, "v", 1);
	e |= tfs_buf_append_u8(&b, TFS_UINT16);
	e |= tfs_buf_append_u32(&b, 3);
	e |= tfs_buf_append(&b, empty_list, 8);
	e |= tfs_buf_append_u32(&b, 1);
	e |= tfs_buf_append(&b, "s", 1);
	e |= tfs_buf_append_u8(&b, TFS_CHAR);
	e |= tfs_buf_append_u32(&b, TFS_VAR_NUM);
	e |= tfs_buf_append(&b, empty_list, 8);
	cr_assert_eq(e, TFS_E_OK);
	n = b.len;
	memcpy(out, b.data, n);
	tfs_buf_release(&b);
	return n;
}

Test(schema, version4_defaults)
{
	uint8_t buf[512];
	size_t n = build_v4(buf);
	struct tfs_schema s;
	struct tfs_diag d;
	struct tfs_buf b;

	cr_assert_eq(parse(&s, buf, n, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_expect_eq(s.version, 4);
	cr_expect_not(s.allows_dups);
	cr_expect_eq(s.validity_filters.count, 0);
	cr_assert_eq(s.dim_num, 2);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(s.dims[i].type, TFS_INT64);
		cr_expect_eq(s.dims[i].cell_val_num, 1);
		cr_expect(s.dims[i].filters_inherited);
		cr_expect_eq((int64_t)tfs_get_u64(s.dims[i].domain[0]), -5);
	}
	cr_expect(s.dims[0].has_extent);
	cr_expect_not(s.dims[1].has_extent);
	/* fill before v6: default fill repeated cell_val_num times */
	cr_assert_eq(s.attrs[0].fill_size, 6);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(tfs_get_u16(s.attrs[0].fill + 2 * i), 0xffff);
	cr_assert_eq(s.attrs[1].fill_size, 1); /* var: one value */
	cr_expect_eq(s.attrs[1].fill[0], 0x80);
	cr_expect(s.attrs[1].var);
	cr_expect_not(s.attrs[0].nullable);
	cr_expect_null(s.attrs[0].enumeration);

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&b, &s), TFS_E_OK);
	cr_expect_eq(b.len, n);
	cr_expect_arr_eq(b.data, buf, n);
	tfs_buf_release(&b);
	tfs_schema_release(&s);

	for (size_t k = 0; k < n; k++) {
		cr_expect_eq(parse(&s, buf, k, &d), TFS_E_CORRUPT, "prefix %zu",
			     k);
	}
}

/* The same schema upgraded through every version: serialize at v, parse,
 * serialize again: identical bytes, and the version-dependent fields come
 * and go. */
Test(schema, every_version_round_trip)
{
	uint8_t buf[512];
	size_t n = build_v4(buf);
	struct tfs_schema s;
	struct tfs_diag d;

	cr_assert_eq(parse(&s, buf, n, &d), TFS_E_OK);
	for (uint32_t v = 1; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct tfs_buf b1, b2;
		struct tfs_schema t;

		s.version = v;
		tfs_buf_init(&b1, TFS_BUF_NO_MAX);
		tfs_buf_init(&b2, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_schema_serialize(&b1, &s), TFS_E_OK, "v%u", v);
		cr_assert_eq(parse(&t, b1.data, b1.len, &d), TFS_E_OK, "v%u: %s",
			     v, d.msg);
		cr_expect_eq(t.version, v);
		cr_expect_eq(t.attrs[0].fill_size, 6);
		cr_expect_eq(t.dims[1].has_extent, false);
		cr_expect_eq(t.validity_filters.max_chunk_size, 65536);
		cr_assert_eq(tfs_schema_serialize(&b2, &t), TFS_E_OK);
		cr_expect_eq(b1.len, b2.len, "v%u", v);
		cr_expect_arr_eq(b1.data, b2.data, b1.len, "v%u", v);
		for (size_t k = 0; k < b1.len; k++) {
			struct tfs_schema u;

			cr_expect_eq(parse(&u, b1.data, k, &d), TFS_E_CORRUPT,
				     "v%u prefix %zu", v, k);
		}
		tfs_schema_release(&t);
		tfs_buf_release(&b1);
		tfs_buf_release(&b2);
	}
	/* below v5 mixed dimension types cannot be written */
	s.version = 4;
	s.dims[1].type = TFS_INT32;
	{
		struct tfs_buf b;

		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		cr_expect_eq(tfs_schema_serialize(&b, &s), TFS_E_INVALID);
		cr_expect_eq(b.len, 0);
		tfs_buf_release(&b);
	}
	s.dims[1].type = TFS_INT64;
	tfs_schema_release(&s);
}

/* A v23 schema with dimension labels, enumerations, a string dimension and
 * a current domain: built through the struct, serialized, parsed. */
Test(schema, v23_labels_enums_current_domain)
{
	struct tfs_schema s, t;
	struct tfs_dim dims[2];
	struct tfs_attr attrs[2];
	struct tfs_label label;
	struct tfs_enum_ref enums[2];
	struct tfs_range cd[2];
	uint8_t fill0[4] = {1, 2, 3, 4}, fill1[1] = {0};
	int32_t lo = -3, hi = 77;
	struct tfs_buf b1, b2;
	struct tfs_diag d;

	memset(&s, 0, sizeof(s));
	memset(dims, 0, sizeof(dims));
	memset(attrs, 0, sizeof(attrs));
	memset(&label, 0, sizeof(label));
	s.version = 23;
	s.array_type = TFS_SPARSE;
	s.cell_order = TFS_HILBERT;
	s.capacity = 3;
	s.allows_dups = true;
	s.coords_filters.max_chunk_size = 65536;
	s.offsets_filters.max_chunk_size = 65536;
	s.validity_filters.max_chunk_size = 65536;
	s.dim_num = 2;
	s.dims = dims;
	dims[0].name = "k";
	dims[0].type = TFS_STRING_ASCII;
	dims[0].cell_val_num = TFS_VAR_NUM;
	dims[0].var = true;
	dims[0].filters_inherited = true;
	dims[1].name = "i";
	dims[1].type = TFS_INT32;
	dims[1].cell_val_num = 1;
	dims[1].has_domain = true;
	memcpy(dims[1].domain[0], &lo, 4);
	memcpy(dims[1].domain[1], &hi, 4);
	dims[1].filters.max_chunk_size = 300;
	dims[1].filters.count = 1;
	dims[1].filters.filters[0].type = TFS_FILTER_BYTESHUFFLE;
	s.attr_num = 2;
	s.attrs = attrs;
	attrs[0].name = "color";
	attrs[0].type = TFS_INT32;
	attrs[0].cell_val_num = 1;
	attrs[0].fill = fill0;
	attrs[0].fill_size = 4;
	attrs[0].enumeration = "colors";
	attrs[0].filters.max_chunk_size = 65536;
	attrs[1].name = "n";
	attrs[1].type = TFS_STRING_UTF8;
	attrs[1].cell_val_num = TFS_VAR_NUM;
	attrs[1].var = true;
	attrs[1].nullable = true;
	attrs[1].fill_valid = 1;
	attrs[1].fill = fill1;
	attrs[1].fill_size = 1;
	attrs[1].filters.max_chunk_size = 65536;
	s.label_num = 1;
	s.labels = &label;
	label.dim_index = 1;
	label.name = "lab";
	label.uri_relative = true;
	label.uri = "__labels/l0";
	label.attr_name = "label";
	label.order = 1;
	label.type = TFS_FLOAT64;
	label.cell_val_num = 1;
	s.enum_num = 1;
	s.enums = enums;
	enums[0].name = "colors";
	enums[0].file = "__2825f29f43556fefa9b5a390ff403559_0";
	s.has_current_domain = true;
	s.current_domain = cd;
	cd[0].lo = (const uint8_t *)"aa";
	cd[0].lo_len = 2;
	cd[0].hi = (const uint8_t *)"zzz";
	cd[0].hi_len = 3;
	cd[1].lo = (const uint8_t *)&lo;
	cd[1].lo_len = 4;
	cd[1].hi = (const uint8_t *)&hi;
	cd[1].hi_len = 4;

	tfs_buf_init(&b1, TFS_BUF_NO_MAX);
	tfs_buf_init(&b2, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&b1, &s), TFS_E_OK);
	cr_assert_eq(parse(&t, b1.data, b1.len, &d), TFS_E_OK, "%s", d.msg);
	cr_expect(t.dims[0].var);
	cr_expect_not(t.dims[0].has_domain);
	cr_expect_not(t.dims[0].has_extent);
	cr_expect(t.dims[0].filters_inherited);
	cr_expect_not(t.dims[1].filters_inherited);
	cr_expect_eq(t.dims[1].filters.max_chunk_size, 300);
	cr_expect(t.allows_dups);
	cr_expect_eq(t.cell_order, TFS_HILBERT);
	cr_expect_str_eq(t.attrs[0].enumeration, "colors");
	cr_expect(t.attrs[1].nullable);
	cr_expect_eq(t.attrs[1].fill_valid, 1);
	cr_assert_eq(t.label_num, 1);
	cr_expect_str_eq(t.labels[0].uri, "__labels/l0");
	cr_expect_str_eq(t.labels[0].attr_name, "label");
	cr_expect_eq(t.labels[0].type, TFS_FLOAT64);
	cr_assert_eq(t.enum_num, 1);
	cr_expect_str_eq(t.enums[0].file, enums[0].file);
	cr_assert(t.has_current_domain);
	cr_expect_eq(t.current_domain[0].lo_len, 2);
	cr_expect_eq(t.current_domain[0].hi_len, 3);
	cr_expect_arr_eq(t.current_domain[0].hi, "zzz", 3);
	cr_expect_eq(tfs_get_u32(t.current_domain[1].hi), 77);
	cr_assert_eq(tfs_schema_serialize(&b2, &t), TFS_E_OK);
	cr_expect_eq(b1.len, b2.len);
	cr_expect_arr_eq(b1.data, b2.data, b1.len);
	for (size_t k = 0; k < b1.len; k++) {
		struct tfs_schema u;

		cr_expect_eq(parse(&u, b1.data, k, &d), TFS_E_CORRUPT,
			     "prefix %zu", k);
	}
	tfs_schema_release(&t);

	/* unknown enumeration, duplicate names, bad label dimension */
	attrs[0].enumeration = "shapes";
	b1.len = 0;
	cr_assert_eq(tfs_schema_serialize(&b1, &s), TFS_E_OK);
	cr_expect_eq(parse(&t, b1.data, b1.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "enumeration 'shapes'"), "%s", d.msg);
	attrs[0].enumeration = "colors";
	attrs[0].name = "i";
	b1.len = 0;
	cr_assert_eq(tfs_schema_serialize(&b1, &s), TFS_E_OK);
	cr_expect_eq(parse(&t, b1.data, b1.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "name 'i' is used twice"), "%s", d.msg);
	attrs[0].name = "color";
	label.dim_index = 2;
	b1.len = 0;
	cr_assert_eq(tfs_schema_serialize(&b1, &s), TFS_E_OK);
	cr_expect_eq(parse(&t, b1.data, b1.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "dimension index 2"), "%s", d.msg);
	label.dim_index = 1;
	enums[1] = enums[0];
	s.enum_num = 2;
	b1.len = 0;
	cr_assert_eq(tfs_schema_serialize(&b1, &s), TFS_E_OK);
	cr_expect_eq(parse(&t, b1.data, b1.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "enumeration 'colors' listed twice"), "%s",
		  d.msg);
	s.enum_num = 1;
	s.capacity = 0;
	b1.len = 0;
	cr_assert_eq(tfs_schema_serialize(&b1, &s), TFS_E_OK);
	cr_expect_eq(parse(&t, b1.data, b1.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "capacity 0"), "%s", d.msg);
	tfs_buf_release(&b1);
	tfs_buf_release(&b2);
}

Test(schema, offsets_embedded_rule)
{
	struct tfs_pipeline rle, dict, zstd;

	memset(&rle, 0, sizeof(rle));
	memset(&dict, 0, sizeof(dict));
	memset(&zstd, 0, sizeof(zstd));
	rle.count = dict.count = zstd.count = 2;
	rle.filters[0].type = TFS_FILTER_RLE;
	rle.filters[1].type = TFS_FILTER_ZSTD;
	dict.filters[0].type = TFS_FILTER_DICTIONARY;
	dict.filters[1].type = TFS_FILTER_ZSTD;
	zstd.filters[0].type = TFS_FILTER_ZSTD;
	zstd.filters[1].type = TFS_FILTER_GZIP;

	cr_expect_not(tfs_offsets_embedded(TFS_STRING_ASCII, &rle, 11));
	cr_expect(tfs_offsets_embedded(TFS_STRING_ASCII, &rle, 12));
	cr_expect_not(tfs_offsets_embedded(TFS_STRING_ASCII, &dict, 12));
	cr_expect(tfs_offsets_embedded(TFS_STRING_ASCII, &dict, 13));
	cr_expect_not(tfs_offsets_embedded(TFS_STRING_UTF8, &rle, 16));
	cr_expect_not(tfs_offsets_embedded(TFS_STRING_UTF8, &dict, 16));
	cr_expect(tfs_offsets_embedded(TFS_STRING_UTF8, &rle, 17));
	cr_expect(tfs_offsets_embedded(TFS_STRING_UTF8, &dict, 22));
	cr_expect_not(tfs_offsets_embedded(TFS_STRING_ASCII, &zstd, 22));
	cr_expect_not(tfs_offsets_embedded(TFS_CHAR, &rle, 22));
	cr_expect_not(tfs_offsets_embedded(TFS_INT32, &rle, 22));
}

/* A dimension label written byte by byte from schema.md §6 (not the
 * public spec's layout) into the worked example's label list: parsed
 * field by field, serialized back to the same bytes; every cut inside it
 * is corrupt. */
#define EX_LABEL_NUM 154
Test(schema, dimension_label_bytes)
{
	static const uint8_t label[] = {
		0x00, 0x00, 0x00, 0x00,                   /* dimension 0 */
		0x03, 0x00, 0x00, 0x00, 'l', 'a', 'b',    /* name */
		0x01,                                     /* relative URI */
		0x0b, 0, 0, 0, 0, 0, 0, 0,                /* u64 URI length */
		'_', '_', 'l', 'a', 'b', 'e', 'l', 's', '/', 'l', '0',
		0x05, 0x00, 0x00, 0x00, 'l', 'a', 'b', 'e', 'l',
		0x02,                                     /* decreasing */
		0x0b,                                     /* STRING_ASCII */
		0xff, 0xff, 0xff, 0xff,                   /* var-size */
		0x00,                                     /* not external */
	};
	uint8_t buf[sizeof(example) + sizeof(label)];
	struct tfs_schema s;
	struct tfs_diag d;
	struct tfs_buf b;

	memcpy(buf, example, EX_LABEL_NUM);
	tfs_put_u32(buf + EX_LABEL_NUM, 1);
	memcpy(buf + EX_LABEL_NUM + 4, label, sizeof(label));
	memcpy(buf + EX_LABEL_NUM + 4 + sizeof(label), example + EX_LABEL_NUM + 4,
	       sizeof(example) - EX_LABEL_NUM - 4);
	cr_assert_eq(parse(&s, buf, sizeof(buf), &d), TFS_E_OK, "%s", d.msg);
	cr_assert_eq(s.label_num, 1);
	cr_expect_eq(s.labels[0].dim_index, 0);
	cr_expect_str_eq(s.labels[0].name, "lab");
	cr_expect(s.labels[0].uri_relative);
	cr_expect_str_eq(s.labels[0].uri, "__labels/l0");
	cr_expect_str_eq(s.labels[0].attr_name, "label");
	cr_expect_eq(s.labels[0].order, 2);
	cr_expect_eq(s.labels[0].type, TFS_STRING_ASCII);
	cr_expect_eq(s.labels[0].cell_val_num, TFS_VAR_NUM);
	cr_expect_not(s.labels[0].is_external);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&b, &s), TFS_E_OK);
	cr_assert_eq(b.len, sizeof(buf));
	cr_expect_arr_eq(b.data, buf, sizeof(buf));
	tfs_buf_release(&b);
	tfs_schema_release(&s);
	for (size_t k = EX_LABEL_NUM; k < EX_LABEL_NUM + 4 + sizeof(label); k++)
		cr_expect_eq(parse(&s, buf, k, &d), TFS_E_CORRUPT, "prefix %zu",
			     k);
	/* an order that is no DataOrder */
	buf[EX_LABEL_NUM + 4 + 40] = 3;
	cr_expect_eq(parse(&s, buf, sizeof(buf), &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "invalid order 3"), "%s", d.msg);
}
