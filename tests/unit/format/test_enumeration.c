/* Enumeration files (format/schema.md §8): the corpus enumerations against
 * the JSON, round trips, broken offsets and sizes; for writers, the checks
 * of a new enumeration, the attributes that can index one, and the value
 * index. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_test_util.h"
#include "tfs_alloc.h"

Test(enumeration, corpus)
{
	char *adir = tu_path(CORPUS, "enumeration");
	char *dir = tu_path3(CORPUS, "enumeration", "__schema/__enumerations");
	struct jv *json = tu_json("enumeration");
	const struct jv *jenums = json_get(json_get(json, "schema"),
					   "enumerations");
	size_t n, sn;
	char **names = tu_list(dir, &n);
	struct tfs_schema *schemas = tu_schemas(adir, NULL, &sn);

	cr_assert_eq(n, 2);
	cr_assert_eq(sn, 1);
	for (size_t i = 0; i < n; i++) {
		char *path = tu_path(dir, names[i]);
		size_t len, plen;
		uint8_t *file = tu_read(path, &len), *payload;
		struct tfs_enumeration e;
		struct tfs_diag d;
		struct tfs_buf b;
		const struct jv *je = NULL;
		bool in_schema = false;

		payload = tu_decode(file, len, NULL, &plen);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_enumeration_parse(&e, payload, plen, &d),
			     TFS_E_OK, "%s", d.msg);
		cr_expect_str_eq(e.path_name, names[i]);
		for (uint32_t k = 0; k < schemas[0].enum_num; k++)
			in_schema |= !strcmp(schemas[0].enums[k].name, e.name) &&
				     !strcmp(schemas[0].enums[k].file, names[i]);
		cr_expect(in_schema, "%s", e.name);
		for (size_t k = 0; k < jenums->n; k++)
			if (!strcmp(json_str(json_get(json_at(jenums, k),
						      "name")),
				    e.name))
				je = json_at(jenums, k);
		cr_assert(je, "%s", e.name);
		cr_expect_eq(e.type, tu_type_of(json_str(json_get(je, "type"))));
		cr_expect_eq(e.ordered, json_get(je, "ordered")->b);
		{
			const struct jv *vals = json_get(je, "values");

			cr_assert_eq(e.value_num, vals->n);
			for (uint64_t v = 0; v < e.value_num; v++) {
				const struct jv *jv = json_at(vals, v);

				if (e.offsets) {
					uint64_t end = v + 1 < e.value_num
							       ? e.offsets[v + 1]
							       : e.data_size;

					cr_expect(json_str_eq(jv,
							      e.data + e.offsets[v],
							      end - e.offsets[v]));
				} else {
					cr_expect_eq(tfs_value_as_i64(
							     e.type,
							     e.data + 4 * v),
						     json_i64(jv));
				}
			}
		}
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_enumeration_serialize(&b, &e), TFS_E_OK);
		cr_expect_eq(b.len, plen);
		cr_expect_arr_eq(b.data, payload, plen);
		tfs_buf_release(&b);
		tfs_enumeration_release(&e);
		tfs_enumeration_release(&e);

		for (size_t k = 0; k < plen; k++) {
			tfs_diag_init(&d);
			cr_expect_eq(tfs_enumeration_parse(&e, payload, k, &d),
				     TFS_E_CORRUPT, "prefix %zu", k);
			for (int bit = 0; bit < 8; bit++) {
				payload[k] ^= (uint8_t)(1u << bit);
				if (tfs_enumeration_parse(&e, payload, plen,
							  &d) == TFS_E_OK)
					tfs_enumeration_release(&e);
				payload[k] ^= (uint8_t)(1u << bit);
			}
		}
		tfs_free(payload);
		free(file);
		free(path);
	}
	tu_free_schemas(schemas, sn);
	tu_free_list(names, n);
	json_free(json);
	free(dir);
	free(adir);
}

Test(enumeration, broken)
{
	uint64_t offsets[3] = {0, 2, 1};
	struct tfs_enumeration e = {
		"colors", "__x_0", TFS_STRING_ASCII, TFS_VAR_NUM, false,
		(uint8_t *)"redgreen", 8, offsets, 3,
	}, p;
	struct tfs_buf b;
	struct tfs_diag d;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_enumeration_serialize(&b, &e), TFS_E_OK);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_parse(&p, b.data, b.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "out of order"), "%s", d.msg);
	offsets[2] = 9;
	b.len = 0;
	cr_assert_eq(tfs_enumeration_serialize(&b, &e), TFS_E_OK);
	cr_expect_eq(tfs_enumeration_parse(&p, b.data, b.len, &d), TFS_E_CORRUPT);
	offsets[2] = 3;
	b.len = 0;
	cr_assert_eq(tfs_enumeration_serialize(&b, &e), TFS_E_OK);
	cr_assert_eq(tfs_enumeration_parse(&p, b.data, b.len, &d), TFS_E_OK);
	cr_expect_eq(p.value_num, 3);
	tfs_enumeration_release(&p);
	/* version 1 is not supported */
	b.data[0] = 1;
	cr_expect_eq(tfs_enumeration_parse(&p, b.data, b.len, &d),
		     TFS_E_UNSUPPORTED);
	/* fixed-size data that is not whole cells */
	e.type = TFS_INT32;
	e.cell_val_num = 1;
	e.data_size = 6;
	b.len = 0;
	cr_assert_eq(tfs_enumeration_serialize(&b, &e), TFS_E_OK);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_parse(&p, b.data, b.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "multiple of the cell size"), "%s", d.msg);
	e.data_size = 8;
	b.len = 0;
	cr_assert_eq(tfs_enumeration_serialize(&b, &e), TFS_E_OK);
	cr_assert_eq(tfs_enumeration_parse(&p, b.data, b.len, &d), TFS_E_OK);
	cr_expect_eq(p.value_num, 2);
	cr_expect_null(p.offsets);
	tfs_enumeration_release(&p);
	tfs_buf_release(&b);
}

/* ---- Checks and the value index (for writers) ---------------------------- */

Test(enumeration, value_views)
{
	uint64_t offsets[4] = {0, 3, 3, 8};
	int32_t nums[3] = {10, 20, 30};
	struct tfs_enumeration s = {
		"colors", "__x_0", TFS_STRING_ASCII, TFS_VAR_NUM, false,
		(uint8_t *)"red" "" "greenblue", 12, offsets, 4,
	}, n = {
		"levels", "__y_0", TFS_INT32, 1, true, (uint8_t *)nums, 12, NULL, 3,
	};
	const uint8_t *p;
	uint64_t len;

	cr_assert(tfs_enumeration_value(&s, 0, &p, &len));
	cr_expect(len == 3 && !memcmp(p, "red", 3));
	cr_assert(tfs_enumeration_value(&s, 1, &p, &len));
	cr_expect_eq(len, 0);
	cr_assert(tfs_enumeration_value(&s, 3, &p, &len));
	cr_expect(len == 4 && !memcmp(p, "blue", 4));
	cr_expect_not(tfs_enumeration_value(&s, 4, &p, &len));
	cr_assert(tfs_enumeration_value(&n, 2, &p, &len));
	cr_expect(len == 4 && !memcmp(p, &nums[2], 4));
	cr_expect_not(tfs_enumeration_value(&n, 3, &p, &len));
	offsets[2] = 2; /* out of order */
	cr_expect_not(tfs_enumeration_value(&s, 1, &p, &len));
}

Test(enumeration, index_finds_every_value)
{
	enum { N = 100000 };
	char *data = malloc(N * 8);
	uint64_t *offsets = malloc(N * sizeof(uint64_t));
	size_t at = 0;
	struct tfs_enumeration e = {
		"many", "__z_0", TFS_STRING_UTF8, TFS_VAR_NUM, false,
		NULL, 0, offsets, N,
	};
	struct tfs_enum_index *x;
	uint64_t dup;

	cr_assert(data && offsets);
	for (unsigned i = 0; i < N; i++) {
		offsets[i] = at;
		at += (size_t)sprintf(data + at, "v%u", i);
	}
	e.data = (uint8_t *)data;
	e.data_size = at;
	cr_assert_eq(tfs_enum_index_new(&e, &dup, &x), TFS_E_OK);
	cr_expect_eq(dup, UINT64_MAX);
	for (unsigned i = 0; i < N; i++) {
		char text[16];
		int n = sprintf(text, "v%u", i);

		cr_assert_eq(tfs_enum_index_find(x, text, (size_t)n), i, "v%u", i);
	}
	cr_expect_eq(tfs_enum_index_find(x, "v", 1), UINT64_MAX);
	cr_expect_eq(tfs_enum_index_find(x, "v100000", 7), UINT64_MAX);
	cr_expect_eq(tfs_enum_index_find(x, "", 0), UINT64_MAX);
	cr_expect_eq(tfs_enum_index_find(x, "v1\0", 3), UINT64_MAX);
	tfs_enum_index_free(x);
	tfs_enum_index_free(NULL);
	free(data);
	free(offsets);
}

Test(enumeration, index_duplicates_and_empty_values)
{
	uint64_t offsets[5] = {0, 1, 1, 2, 2};
	int64_t nums[4] = {7, -1, 7, 0};
	struct tfs_enumeration s = {
		"s", "__x_0", TFS_STRING_ASCII, TFS_VAR_NUM, false,
		(uint8_t *)"ab", 2, offsets, 5,
	}, n = {
		"n", "__y_0", TFS_INT64, 1, false, (uint8_t *)nums, 32, NULL, 4,
	}, none = {
		"none", "__w_0", TFS_STRING_ASCII, TFS_VAR_NUM, false,
		(uint8_t *)"", 0, NULL, 0,
	};
	struct tfs_enum_index *x;
	struct tfs_diag d;
	uint64_t dup;

	/* "a", "", "b", "", "" : the second empty value repeats the first. */
	cr_assert_eq(tfs_enum_index_new(&s, &dup, &x), TFS_E_OK);
	cr_expect_eq(dup, 3);
	cr_expect_eq(tfs_enum_index_find(x, "", 0), 1);
	cr_expect_eq(tfs_enum_index_find(x, "b", 1), 2);
	tfs_enum_index_free(x);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_check(&s, &d), TFS_E_INVALID);
	cr_expect_str_eq(d.msg, "enumeration 's': value 3 repeats an earlier value");

	cr_assert_eq(tfs_enum_index_new(&n, &dup, &x), TFS_E_OK);
	cr_expect_eq(dup, 2);
	cr_expect_eq(tfs_enum_index_find(x, &nums[0], 8), 0);
	cr_expect_eq(tfs_enum_index_find(x, &nums[3], 8), 3);
	tfs_enum_index_free(x);
	nums[2] = 8;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_check(&n, &d), TFS_E_OK, "%s", d.msg);

	/* An empty enumeration is allowed (it can be extended later). */
	cr_expect_eq(tfs_enumeration_check(&none, &d), TFS_E_OK, "%s", d.msg);
	cr_assert_eq(tfs_enum_index_new(&none, NULL, &x), TFS_E_OK);
	cr_expect_eq(tfs_enum_index_find(x, "", 0), UINT64_MAX);
	tfs_enum_index_free(x);

	/* Offsets out of order. */
	offsets[2] = 0;
	cr_expect_eq(tfs_enum_index_new(&s, NULL, &x), TFS_E_INVALID);
	cr_expect_null(x);
}

Test(enumeration, check_refusals)
{
	int32_t nums[2] = {1, 2};
	struct tfs_enumeration e = {
		"a/b", "__x_0", TFS_INT32, 1, false, (uint8_t *)nums, 8, NULL, 2,
	};
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_check(&e, &d), TFS_E_INVALID);
	cr_expect_str_eq(d.msg, "enumeration 'a/b': names must not be empty or hold '/'");
	e.name = "";
	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_check(&e, &d), TFS_E_INVALID);
	e.name = "n";
	e.cell_val_num = 0;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_check(&e, &d), TFS_E_INVALID);
	e.cell_val_num = 1;
	e.value_num = 3;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_check(&e, &d), TFS_E_INVALID);
	cr_expect_str_eq(d.msg, "enumeration 'n': 8 data bytes are not 3 values of 4 bytes");
	e.value_num = 2;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_enumeration_check(&e, &d), TFS_E_OK, "%s", d.msg);
}

Test(enumeration, attributes_that_can_index)
{
	static const struct {
		uint8_t type;
		uint32_t cell_val_num;
		uint64_t values;
		bool ok;
	} cases[] = {
		{TFS_UINT8, 1, 4, true},
		{TFS_UINT8, 1, 254, true},
		{TFS_UINT8, 1, 255, false}, /* TileDB: max value <= count */
		{TFS_INT8, 1, 126, true},
		{TFS_INT8, 1, 127, false},
		{TFS_INT16, 1, 32767, false},
		{TFS_UINT16, 1, 65534, true},
		{TFS_INT32, 1, 100000, true},
		{TFS_UINT64, 1, 100000, true},
		{TFS_INT64, 1, 0, true},
		{TFS_INT32, 2, 4, false},
		{TFS_INT32, TFS_VAR_NUM, 4, false},
		{TFS_FLOAT64, 1, 4, false},
		{TFS_BOOL, 1, 1, false},
		{TFS_DATETIME_YEAR + 3, 1, 4, false}, /* DATETIME_DAY */
		{TFS_STRING_ASCII, TFS_VAR_NUM, 4, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct tfs_attr a = {
			.name = "a", .type = cases[i].type,
			.cell_val_num = cases[i].cell_val_num,
			.var = cases[i].cell_val_num == TFS_VAR_NUM,
		};
		struct tfs_enumeration e = {.value_num = cases[i].values};
		const char *why = tfs_enumeration_attr_problem(&a, &e);

		cr_expect_eq(why == NULL, cases[i].ok, "case %zu: %s", i,
			     why ? why : "accepted");
	}
}

Test(enumeration, index_allocation_failing)
{
	uint64_t offsets[2] = {0, 1};
	struct tfs_enumeration s = {
		"s", "__x_0", TFS_STRING_ASCII, TFS_VAR_NUM, false,
		(uint8_t *)"ab", 2, offsets, 2,
	};
	struct tfs_enum_index *x;
	struct tfs_diag d;
	long n;

	for (n = 0;; n++) {
		enum tfs_err e;

		tfs_alloc_fail_after(n);
		e = tfs_enum_index_new(&s, NULL, &x);
		tfs_alloc_fail_after(-1);
		if (!e)
			break;
		cr_assert_eq(e, TFS_E_NOMEM);
		cr_assert_null(x);
		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs_enumeration_check(&s, &d);
		tfs_alloc_fail_after(-1);
		cr_assert_eq(e, TFS_E_NOMEM);
		cr_assert_str_eq(d.msg, "enumeration 's': out of memory");
	}
	cr_expect_eq(n, 2);
	cr_expect_eq(tfs_enum_index_find(x, "b", 1), 1);
	tfs_enum_index_free(x);
}
