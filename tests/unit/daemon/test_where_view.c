/* Filtered views (A/where[COND]/) and statistics (stats.json) of the
 * virtual tree, unmounted: what they resolve to, list and hold, and bad
 * filters refused with the position and the reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "daemon_fixture.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"

#define CORPUS TFS_CORPUS_DIR

static struct tfsd fs;

static void setup(void)
{
	dfx_start(&fs, CORPUS, 65536, 32 << 20, 8 << 20);
}

static void teardown(void)
{
	dfx_stop(&fs);
}

/* The whole text of a virtual file (NUL-terminated). */
static char *text_of(const char *vpath)
{
	struct tfsd_node n;
	struct tfsd_file *f;
	struct tfsd_size sz;
	struct tfs_diag d;
	struct tfs_buf out;
	uint64_t off = 0;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(&fs, vpath, &n, &d), TFS_E_OK, "%s: %s",
		     vpath, tfs_diag_msg(&d));
	cr_assert_eq(tfsd_file_size(&fs, &n, vpath, &sz, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfsd_file_open(&fs, &n, vpath, &f, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	for (;;) {
		size_t got = 0;

		cr_assert_eq(tfs_buf_reserve(&out, 4096), TFS_E_OK);
		cr_assert_eq(tfsd_file_read(&fs, f, off, out.data + out.len,
					    4096, &got, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		if (!got)
			break;
		out.len += got;
		off += got;
	}
	tfsd_file_close(&fs, f);
	tfsd_node_release(&fs, &n);
	cr_assert_eq(tfs_buf_append_u8(&out, 0), TFS_E_OK);
	return (char *)tfs_buf_detach(&out, NULL);
}

static bool collect(void *ctx, const char *name, bool is_dir)
{
	char *list = ctx;
	size_t len = strlen(list);

	snprintf(list + len, 4096 - len, "%s%s|", name, is_dir ? "/" : "");
	return true;
}

Test(where_view, filtered_csv_and_slices, .init = setup, .fini = teardown)
{
	char *t;

	/* dense_1d: d in 1..100, a attribute; d < 4 keeps three rows, the
	 * dense array's cells then come with their coordinates. */
	t = text_of("dense_1d/where[d < 4]/data.csv");
	cr_assert(strncmp(t, "d,a,b\n1,", 8) == 0, "%s", t);
	cr_assert_eq(strlen(t) - strlen(strstr(t, "\n3,")) > 0, true);
	cr_assert_null(strstr(t, "\n4,"), "%s", t);
	tfs_free(t);
	/* The attribute's folder: csv rows with the coordinate. */
	t = text_of("dense_1d/where[d<3]/a/slice[1:101].csv");
	cr_assert(strncmp(t, "d,a\n1,", 6) == 0, "%s", t);
	cr_assert_null(strstr(t, "\n3,"), "%s", t);
	tfs_free(t);
	/* Spaces, strings, and nothing matching: only the header. */
	t = text_of("sparse_string_dim/where[key = \"nothing here\"]/data.csv");
	cr_assert_str_eq(t, "key,val,note\n");
	tfs_free(t);
}

Test(where_view, listing, .init = setup, .fini = teardown)
{
	struct tfsd_node n;
	struct tfs_diag d;
	char list[4096] = "";

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(&fs, "dense_1d/where[a > 0]", &n, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(tfsd_node_is_dir(&n));
	cr_assert_eq(tfsd_list(&fs, &n, collect, list, &d), TFS_E_OK);
	cr_assert(strncmp(list, "data.csv|d/|a/|b/|slice[", 24) == 0, "%s",
		  list);
	cr_assert_null(strstr(list, "schema.json"), "%s", list);
	tfsd_node_release(&fs, &n);
}

Test(where_view, bad_filters_are_enoent, .init = setup, .fini = teardown)
{
	static const struct {
		const char *path, *why;
	} bad[] = {
		{"dense_1d/where[nope > 1]", "at 1: no field 'nope'"},
		{"dense_1d/where[a >]", "at 4: expected a value"},
		{"dense_1d/where[a > 1 and]", "at 10: expected a condition"},
		{"dense_1d/where[a = \"x\"]", "'x' is not a value of 'a'"},
		{"dense_1d/where[]", "empty filter"},
		{"dense_1d/where[a > 1]/schema.json", NULL},
		{"dense_1d/where[a > 1]/where[a > 2]", NULL},
		{"dense_1d/d/stats.json", NULL},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tfsd_node n;
		struct tfs_diag d;

		tfs_diag_init(&d);
		cr_expect_eq(tfsd_resolve(&fs, bad[i].path, &n, &d),
			     TFS_E_NOT_FOUND, "%s", bad[i].path);
		if (bad[i].why)
			cr_expect(strstr(tfs_diag_msg(&d), bad[i].why),
				  "%s: '%s'", bad[i].path, tfs_diag_msg(&d));
	}
}

Test(where_view, stats_files, .init = setup, .fini = teardown)
{
	char *t;

	/* dense_1d a: 100 cells summing to 6464 (the corpus JSON). */
	t = text_of("dense_1d/a/stats.json");
	cr_assert(strncmp(t, "{\"count\":100,\"null_count\":0,", 28) == 0, "%s",
		  t);
	cr_assert(strstr(t, "\"sum\":6464,"), "%s", t);
	tfs_free(t);
	t = text_of("dense_1d/a/slice[1:3].stats.json");
	cr_assert(strncmp(t, "{\"count\":2,", 11) == 0, "%s", t);
	tfs_free(t);
	t = text_of("dense_1d/where[d < 3]/a/stats.json");
	cr_assert(strncmp(t, "{\"count\":2,", 11) == 0, "%s", t);
	tfs_free(t);
	/* A version's view filters too. */
	t = text_of("dense_1d/versions/2023-11-14T22:13:21.000Z/where[d < 3]/"
		    "a/stats.json");
	cr_assert(strncmp(t, "{\"count\":2,", 11) == 0, "%s", t);
	tfs_free(t);
	t = text_of("dense_1d/stats.json");
	cr_assert(strncmp(t, "{\n\"a\":{\"count\":100,", 19) == 0, "%s", t);
	cr_assert(strstr(t, "\"b\":{\"count\":100,"), "%s", t);
	tfs_free(t);
}
