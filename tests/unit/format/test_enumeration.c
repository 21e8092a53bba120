/* Enumeration files (format/schema.md §8): the corpus enumerations against
 * the JSON, round trips, broken offsets and sizes. */
#include <criterion/criterion.h>
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
