/* Timestamped names (format/layout.md §2): table of names and what TileDB
 * makes of them. */
#include <criterion/criterion.h>
#include <string.h>

#include "tfs_format.h"

struct name_case {
	const char *name;
	enum tfs_err err;
	uint64_t t1, t2;
	uint32_t version;
	const char *uuid;
};

static const struct name_case cases[] = {
	{"__1700000001000_1700000002000_7ff31dc7f4886f42130bb0d7928b4a55_22",
	 TFS_E_OK, 1700000001000, 1700000002000, 22,
	 "7ff31dc7f4886f42130bb0d7928b4a55"},
	{"/a/b/__fragments/__5_5_7ff31dc7f4886f42130bb0d7928b4a55_22/",
	 TFS_E_OK, 5, 5, 22, "7ff31dc7f4886f42130bb0d7928b4a55"},
	{"__commits/__1_2_7ff31dc7f4886f42130bb0d7928b4a55_16.del", TFS_E_OK,
	 1, 2, 16, "7ff31dc7f4886f42130bb0d7928b4a55"},
	{"__3_4_7ff31dc7f4886f42130bb0d7928b4a55_11.ok", TFS_E_OK, 3, 4, 11,
	 "7ff31dc7f4886f42130bb0d7928b4a55"},
	/* schema / metadata names: no version suffix → name version 4 */
	{"__1700000000000_1700000000000_00000002fced2fb1f6ac08863552dc86",
	 TFS_E_OK, 1700000000000, 1700000000000, 4,
	 "00000002fced2fb1f6ac08863552dc86"},
	{"__1_9_00000002fced2fb1f6ac08863552dc86.vac", TFS_E_OK, 1, 9, 4,
	 "00000002fced2fb1f6ac08863552dc86"},
	/* v1–2 fragment names: __uuid_t */
	{"__5dc2cc9cce204a189f825fd4919d0c55_1541540586869", TFS_E_OK,
	 1541540586869, 1541540586869, 2, "5dc2cc9cce204a189f825fd4919d0c55"},
	/* consolidated v1–2: __uuid_tnow_t → t = last */
	{"__5dc2cc9cce204a189f825fd4919d0c55_1541540599999_1541540586869",
	 TFS_E_OK, 1541540586869, 1541540586869, 2,
	 "5dc2cc9cce204a189f825fd4919d0c55"},
	/* enumeration file: __uuid_0 → t = 0 */
	{"__2825f29f43556fefa9b5a390ff403559_0", TFS_E_OK, 0, 0, 2,
	 "2825f29f43556fefa9b5a390ff403559"},
	/* the experimental all-ones version parses as a name */
	{"__1657562300109_1657562300109_8dc3a927a28e445080d5dfd288825e1d_4294967295",
	 TFS_E_OK, 1657562300109, 1657562300109, 4294967295u,
	 "8dc3a927a28e445080d5dfd288825e1d"},
	/* not timestamped */
	{"__array_schema.tdb", TFS_E_INVALID, 0, 0, 0, ""},
	{"__schema", TFS_E_INVALID, 0, 0, 0, ""},
	{"a0.tdb", TFS_E_INVALID, 0, 0, 0, ""},
	{"", TFS_E_INVALID, 0, 0, 0, ""},
	{"__lock.tdb", TFS_E_INVALID, 0, 0, 0, ""},
	/* t1 > t2 */
	{"__9_1_7ff31dc7f4886f42130bb0d7928b4a55_22", TFS_E_INVALID, 0, 0, 0, ""},
	/* version out of u32 range, non-digit timestamps */
	{"__1_1_7ff31dc7f4886f42130bb0d7928b4a55_4294967296", TFS_E_INVALID, 0,
	 0, 0, ""},
	{"__x_1_7ff31dc7f4886f42130bb0d7928b4a55_22", TFS_E_INVALID, 0, 0, 0, ""},
	{"__1_99999999999999999999_7ff31dc7f4886f42130bb0d7928b4a55_22",
	 TFS_E_INVALID, 0, 0, 0, ""},
};

Test(names, table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct name_case *c = &cases[i];
		struct tfs_name_info ni;
		enum tfs_err e = tfs_name_parse(c->name, &ni);

		cr_expect_eq(e, c->err, "%s: got %d", c->name, e);
		if (e != TFS_E_OK || c->err != TFS_E_OK)
			continue;
		cr_expect_eq(ni.t1, c->t1, "%s t1", c->name);
		cr_expect_eq(ni.t2, c->t2, "%s t2", c->name);
		cr_expect_eq(ni.version, c->version, "%s version", c->name);
		cr_expect_str_eq(ni.uuid, c->uuid, "%s uuid", c->name);
	}
}

Test(names, null_name)
{
	struct tfs_name_info ni;

	cr_expect_eq(tfs_name_parse(NULL, &ni), TFS_E_INVALID);
}

/* New names parse back to what they were made from, with a fresh uuid
 * each time. */
Test(names, new_names_parse_back)
{
	static const struct {
		uint64_t t1, t2;
		uint32_t version;
		const char *ext;
		uint32_t parsed_version;
	} mk[] = {
		{1700000001000, 1700000002000, 22, "", 22},
		{5, 9, 16, ".con", 16},
		{UINT64_MAX, UINT64_MAX, UINT32_MAX, ".vac", UINT32_MAX},
		{3, 3, 0, "", 4}, /* no version part: name version 4 */
	};
	char a[TFS_NAME_MAX], b[TFS_NAME_MAX];

	for (size_t i = 0; i < sizeof(mk) / sizeof(mk[0]); i++) {
		struct tfs_name_info ni;

		cr_assert_eq(tfs_name_new(a, sizeof(a), mk[i].t1, mk[i].t2,
					  mk[i].version, mk[i].ext),
			     TFS_E_OK);
		cr_assert_eq(tfs_name_new(b, sizeof(b), mk[i].t1, mk[i].t2,
					  mk[i].version, mk[i].ext),
			     TFS_E_OK);
		cr_expect_str_neq(a, b);
		cr_assert_eq(tfs_name_parse(a, &ni), TFS_E_OK, "%s", a);
		cr_expect_eq(ni.t1, mk[i].t1, "%s", a);
		cr_expect_eq(ni.t2, mk[i].t2, "%s", a);
		cr_expect_eq(ni.version, mk[i].parsed_version, "%s", a);
		cr_expect_eq(strlen(ni.uuid), 32, "%s", a);
		cr_expect_str_eq(a + strlen(a) - strlen(mk[i].ext), mk[i].ext);
	}
	cr_expect_eq(tfs_name_new(a, 20, 1, 2, 22, ""), TFS_E_TOO_BIG);
}
