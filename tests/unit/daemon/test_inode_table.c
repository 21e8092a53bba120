/* The daemon's inode table (fs/inode_table.c) without mounting: lookup
 * counts, forgets, reuse of paths, renames of temporaries, the inodes
 * under a path, and a forget of more lookups than were given, which is a
 * bug of the count: an abort in debug builds, an error in release
 * builds, never a silent clamp. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "inode_table.h"
#include "tfs_alloc.h"

static struct tfsd_itable *table(void)
{
	struct tfsd_itable *t = NULL;

	cr_assert_eq(tfsd_itable_new(4, &t), TFS_E_OK);
	cr_assert_not_null(t);
	return t;
}

Test(inode_table, bad_sizes)
{
	struct tfsd_itable *t = (struct tfsd_itable *)1;

	cr_expect_eq(tfsd_itable_new(0, &t), TFS_E_INVALID);
	cr_expect_null(t);
	cr_expect_eq(tfsd_itable_new(25, &t), TFS_E_INVALID);
	cr_expect_null(t);
}

Test(inode_table, lookup_counts)
{
	struct tfsd_itable *t = table();
	struct tfsd_inode *a = tfsd_inode_ref(t, "arr/a/data.csv", 7);
	struct tfsd_inode *b = tfsd_inode_ref(t, "arr/a/data.csv", 7);
	struct tfsd_inode *v8 = tfsd_inode_ref(t, "arr/a/data.csv", 8);
	struct tfsd_inode *dir = tfsd_inode_ref(t, "arr", 0);

	cr_assert_not_null(a);
	cr_expect_eq(a, b, "same path and version: same inode");
	cr_expect_neq(a, v8, "another version: another inode");
	cr_expect_neq(a, dir);
	cr_expect_str_eq(a->vpath, "arr/a/data.csv");
	cr_expect_eq(a->version, 7);
	cr_expect_eq(tfsd_inode_lookups(t, a), 2);
	cr_expect_eq(tfsd_inode_lookups(t, v8), 1);
	cr_expect_eq(tfsd_itable_count(t), 3);
	cr_expect_eq(tfsd_itable_find(t, "arr/a/data.csv", 8), v8);
	cr_expect_eq(tfsd_itable_find(t, "arr", 0), dir);
	cr_expect_null(tfsd_itable_find(t, "arr", 1));
	cr_expect_null(tfsd_itable_find(t, "other", 0));
	tfsd_itable_free(t);
}

Test(inode_table, forget_and_reuse)
{
	struct tfsd_itable *t = table();
	struct tfsd_inode *in = tfsd_inode_ref(t, "x/y", 0);

	cr_assert_not_null(tfsd_inode_ref(t, "x/y", 0));
	cr_assert_not_null(tfsd_inode_ref(t, "x/y", 0));
	cr_expect_eq(tfsd_inode_lookups(t, in), 3);
	cr_expect_eq(tfsd_inode_unref(t, in, 2), TFS_E_OK);
	cr_expect_eq(tfsd_inode_lookups(t, in), 1, "forget of 2 of 3");
	cr_expect_eq(tfsd_itable_find(t, "x/y", 0), in, "still there");
	cr_expect_eq(tfsd_inode_unref(t, in, 1), TFS_E_OK);
	cr_expect_null(tfsd_itable_find(t, "x/y", 0), "forgotten: gone");
	cr_expect_eq(tfsd_itable_count(t), 0);

	/* The path again: a fresh inode with one lookup. */
	in = tfsd_inode_ref(t, "x/y", 0);
	cr_assert_not_null(in);
	cr_expect_eq(tfsd_inode_lookups(t, in), 1);
	cr_expect_eq(tfsd_itable_count(t), 1);
	cr_expect_eq(tfsd_inode_unref(t, in, 1), TFS_E_OK);
	cr_expect_eq(tfsd_itable_count(t), 0);
	tfsd_itable_free(t);
}

Test(inode_table, root_is_never_counted)
{
	struct tfsd_itable *t = table();
	struct tfsd_inode *root = tfsd_itable_root(t);

	cr_expect_eq(tfsd_inode_ref(t, "", 0), root);
	cr_expect_eq(tfsd_itable_find(t, "", 0), root);
	cr_expect_str_eq(root->vpath, "");
	cr_expect_eq(tfsd_inode_unref(t, root, 5), TFS_E_OK);
	cr_expect_eq(tfsd_itable_count(t), 0);
	cr_expect_eq(tfsd_itable_root(t), root);
	tfsd_itable_free(t);
}

#ifdef NDEBUG
/* Release builds: the forget is refused loudly and the inode dropped. */
Test(inode_table, underflow_is_an_error)
{
	struct tfsd_itable *t = table();
	struct tfsd_inode *in = tfsd_inode_ref(t, "a/b", 0);

	cr_assert_not_null(tfsd_inode_ref(t, "a/b", 0));
	cr_expect_eq(tfsd_inode_unref(t, in, 3), TFS_E_INTERNAL);
	cr_expect_null(tfsd_itable_find(t, "a/b", 0));
	cr_expect_eq(tfsd_itable_count(t), 0);
	tfsd_itable_free(t);
}
#else
/* Debug builds: the assertion stops the daemon where the count broke. */
Test(inode_table, underflow_aborts, .signal = SIGABRT)
{
	struct tfsd_itable *t = table();
	struct tfsd_inode *in = tfsd_inode_ref(t, "a/b", 0);
	enum tfs_err e;

	cr_assert_not_null(in);
	e = tfsd_inode_unref(t, in, 2);
	cr_log_error("returned %d instead of aborting", (int)e);
}
#endif

Test(inode_table, move_renames_a_temporary)
{
	struct tfsd_itable *t = table();
	struct tfsd_inode *in = tfsd_inode_ref(t, "arr/.tmp1", 0);
	const char *old;

	cr_assert_not_null(in);
	old = in->vpath;
	tfsd_itable_move(t, "arr/.tmp1", "arr/.tmp2");
	cr_expect_str_eq(in->vpath, "arr/.tmp2");
	cr_expect_str_eq(old, "arr/.tmp1", "the old string stays readable");
	cr_expect_eq(tfsd_itable_find(t, "arr/.tmp2", 0), in);
	cr_expect_null(tfsd_itable_find(t, "arr/.tmp1", 0));
	cr_expect_eq(tfsd_itable_count(t), 1);
	/* No inode at the source: nothing moves. */
	tfsd_itable_move(t, "arr/none", "arr/.tmp3");
	cr_expect_null(tfsd_itable_find(t, "arr/.tmp3", 0));
	cr_expect_eq(tfsd_inode_unref(t, in, 1), TFS_E_OK);
	cr_expect_eq(tfsd_itable_count(t), 0);
	tfsd_itable_free(t);
}

/* Whether the n paths of names (NUL-separated) include want. */
static bool has_name(const struct tfs_buf *names, size_t n, const char *want)
{
	size_t pos = 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = (const char *)names->data + pos;

		if (strcmp(s, want) == 0)
			return true;
		pos += strlen(s) + 1;
	}
	return false;
}

Test(inode_table, under_a_prefix)
{
	static const char *const paths[] = {"a", "a/x", "a/x/y", "ab", "b/a"};
	struct tfsd_itable *t = table();
	struct tfsd_inode **inodes = NULL;
	struct tfs_buf names;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		cr_assert_not_null(tfsd_inode_ref(t, paths[i], 0));
	tfs_buf_init(&names, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsd_itable_under(t, "a", &inodes, &n, &names), TFS_E_OK);
	cr_expect_eq(n, 3);
	cr_expect(has_name(&names, n, "a"));
	cr_expect(has_name(&names, n, "a/x"));
	cr_expect(has_name(&names, n, "a/x/y"));
	cr_expect(!has_name(&names, n, "ab"), "a sibling with the prefix");
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(tfsd_itable_find(t, inodes[i]->vpath, 0), inodes[i]);
	tfs_free(inodes);
	tfs_buf_release(&names);

	tfs_buf_init(&names, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsd_itable_under(t, "", &inodes, &n, &names), TFS_E_OK);
	cr_expect_eq(n, 5, "all but the root");
	tfs_free(inodes);
	tfs_buf_release(&names);
	tfsd_itable_free(t);
}

struct churn {
	struct tfsd_itable *t;
	int id;
};

/* Lookups and forgets of a few shared paths, balanced. */
static void *churn_run(void *arg)
{
	struct churn *c = arg;
	char path[32];

	for (int i = 0; i < 2000; i++) {
		struct tfsd_inode *in;

		snprintf(path, sizeof(path), "p/%d", (i + c->id) % 5);
		in = tfsd_inode_ref(c->t, path, 0);
		if (!in || tfsd_inode_unref(c->t, in, 1) != TFS_E_OK)
			return (void *)1;
	}
	return NULL;
}

Test(inode_table, threads_balance)
{
	struct tfsd_itable *t = table();
	struct churn c[4];
	pthread_t th[4];

	for (int i = 0; i < 4; i++) {
		c[i].t = t;
		c[i].id = i;
		cr_assert_eq(pthread_create(&th[i], NULL, churn_run, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		void *ret;

		cr_assert_eq(pthread_join(th[i], &ret), 0);
		cr_expect_null(ret, "thread %d", i);
	}
	cr_expect_eq(tfsd_itable_count(t), 0, "every lookup forgotten");
	tfsd_itable_free(t);
}
