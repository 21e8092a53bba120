/* Group details files (format/groups.md §2): the corpus group's files,
 * round trips of both versions, every truncation, and the values the parser
 * must refuse. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_test_util.h"
#include "tfs_alloc.h"

/* The one details file of a corpus group folder, decoded. */
static uint8_t *corpus_details(const char *group, size_t *len)
{
	char *dir = tu_path3(CORPUS, group, "__group");
	size_t n, flen;
	char **names = tu_list(dir, &n);
	char *path;
	uint8_t *file, *payload;

	cr_assert_eq(n, 1, "%s", dir);
	path = tu_path(dir, names[0]);
	file = tu_read(path, &flen);
	cr_assert_not_null(file, "%s", path);
	payload = tu_decode(file, flen, NULL, len);
	free(file);
	free(path);
	tu_free_list(names, n);
	free(dir);
	return payload;
}

static const struct tfs_group_entry *entry_named(
	const struct tfs_group_details *g, const char *name)
{
	for (size_t i = 0; i < g->count; i++)
		if (g->entries[i].name_set &&
		    !strcmp(g->entries[i].name, name))
			return &g->entries[i];
	return NULL;
}

Test(group_details, corpus_group)
{
	struct tfs_group_details g;
	struct tfs_diag d;
	struct tfs_buf b;
	const struct tfs_group_entry *e;
	size_t len;
	uint8_t *p = corpus_details("group", &len);

	tfs_diag_init(&d);
	cr_assert_eq(tfs_group_details_parse(&g, p, len, &d), TFS_E_OK, "%s",
		     d.msg);
	cr_expect_eq(g.version, 2);
	cr_assert_eq(g.count, 3);
	e = entry_named(&g, "sub");
	cr_assert_not_null(e);
	cr_expect_eq(e->member_version, 2);
	cr_expect_eq(e->object_type, TFS_GROUP_MEMBER_GROUP);
	cr_expect(e->relative);
	cr_expect_str_eq(e->uri, "sub");
	cr_expect_not(e->deleted);
	e = entry_named(&g, "dense_member");
	cr_assert_not_null(e);
	cr_expect_eq(e->object_type, TFS_GROUP_MEMBER_ARRAY);
	cr_expect_str_eq(e->uri, "dense_member");
	cr_expect_not_null(entry_named(&g, "sparse_member"));

	/* Serializing gives back TileDB's bytes. */
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_group_details_serialize(&b, &g), TFS_E_OK);
	cr_expect_eq(b.len, len);
	cr_expect_arr_eq(b.data, p, len);
	tfs_buf_release(&b);
	tfs_group_details_release(&g);

	/* Every proper prefix is corrupt, never a crash. */
	for (size_t k = 0; k < len; k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_group_details_parse(&g, p, k, &d),
			     TFS_E_CORRUPT, "prefix %zu", k);
		cr_expect_null(g.entries);
		cr_expect(strstr(d.msg, "group details"), "%s", d.msg);
	}
	tfs_free(p);
}

Test(group_details, version_1_roundtrip)
{
	struct tfs_group_entry in[2] = {
		{.member_version = 1, .object_type = TFS_GROUP_MEMBER_ARRAY,
		 .relative = false, .uri = "file:///data/a"},
		{.member_version = 1, .object_type = TFS_GROUP_MEMBER_GROUP,
		 .relative = true, .uri = "g", .name_set = true, .name = ""},
	};
	struct tfs_group_details g = {1, in, 2}, out;
	struct tfs_buf b;
	struct tfs_diag d;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_group_details_serialize(&b, &g), TFS_E_OK);
	/* 4 + 8, then 4+1+1+8+14+1 and 4+1+1+8+1+1+8 */
	cr_expect_eq(b.len, 12 + 29 + 24);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_group_details_parse(&out, b.data, b.len, &d),
		     TFS_E_OK, "%s", d.msg);
	cr_assert_eq(out.count, 2);
	cr_expect_eq(out.version, 1);
	cr_expect_not(out.entries[0].name_set);
	cr_expect_null(out.entries[0].name);
	cr_expect_str_eq(out.entries[0].uri, "file:///data/a");
	cr_expect_not(out.entries[0].relative);
	cr_expect(out.entries[1].name_set);
	cr_expect_str_eq(out.entries[1].name, "");
	cr_expect_not(out.entries[1].deleted);
	tfs_group_details_release(&out);
	tfs_buf_release(&b);
}

/* A version-2 file with one member, bytes spelled out. */
static const uint8_t one_v2[] = {
	2, 0, 0, 0,             /* details version */
	1, 0, 0, 0, 0, 0, 0, 0, /* member count (u64) */
	2, 0, 0, 0,             /* member version */
	2,                      /* array */
	1,                      /* relative */
	1, 0, 0, 0, 0, 0, 0, 0, 'a',
	1,                      /* name set */
	1, 0, 0, 0, 0, 0, 0, 0, 'n',
	1,                      /* deleted */
};

/* one_v2 with byte at `at` replaced by v; the parse must fail with want. */
static void expect_bad(size_t at, uint8_t v, enum tfs_err want,
		       const char *msg)
{
	uint8_t buf[sizeof(one_v2)];
	struct tfs_group_details g;
	struct tfs_diag d;

	memcpy(buf, one_v2, sizeof(buf));
	buf[at] = v;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_group_details_parse(&g, buf, sizeof(buf), &d), want,
		     "byte %zu = %u: %s", at, v, d.msg);
	cr_expect(strstr(d.msg, msg), "byte %zu: '%s' lacks '%s'", at, d.msg,
		  msg);
	cr_expect_null(g.entries);
}

Test(group_details, bad_values)
{
	struct tfs_group_details g;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_group_details_parse(&g, one_v2, sizeof(one_v2), &d),
		     TFS_E_OK, "%s", d.msg);
	cr_expect(g.entries[0].deleted);
	cr_expect_str_eq(g.entries[0].name, "n");
	tfs_group_details_release(&g);

	expect_bad(0, 3, TFS_E_UNSUPPORTED, "group details version 3");
	expect_bad(0, 0, TFS_E_UNSUPPORTED, "group details version 0");
	expect_bad(12, 7, TFS_E_UNSUPPORTED, "member version 7");
	expect_bad(16, 0, TFS_E_CORRUPT, "object type 0");
	expect_bad(16, 3, TFS_E_CORRUPT, "object type 3");
	expect_bad(17, 2, TFS_E_CORRUPT, "relative");
	expect_bad(26, 0, TFS_E_CORRUPT, "NUL byte");
	expect_bad(27, 5, TFS_E_CORRUPT, "name flag");
	expect_bad(sizeof(one_v2) - 1, 2, TFS_E_CORRUPT, "deleted");
	/* A count that cannot fit is refused before any allocation. */
	expect_bad(11, 0xff, TFS_E_CORRUPT, "does not fit");
	expect_bad(4, 2, TFS_E_CORRUPT, "does not fit");
	/* A uri length past the end. */
	expect_bad(25, 0x80, TFS_E_CORRUPT, "runs past the end");
}
