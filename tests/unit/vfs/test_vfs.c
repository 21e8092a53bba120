/* Storage backends: the same semantic checks run against POSIX (in a fresh
 * temporary folder), the in-memory tree and an unarmed faulty wrapper, then
 * each fault kind is injected at the nth call. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_s3.h"
#include "tfs_vfs.h"
#include "vfs_test_util.h"

/* ---- helpers ------------------------------------------------------------ */

static char *join(const char *a, const char *b)
{
	char *p = tfs_path_join(a, b);

	cr_assert_not_null(p);
	return p;
}

static void put(struct tfs_vfs *v, const char *root, const char *name,
		const char *text)
{
	struct tfs_diag d;
	char *p = join(root, name);

	tfs_diag_init(&d);
	cr_assert_eq(v->ops->write(v, p, text, strlen(text), &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	tfs_free(p);
}

static void mk(struct tfs_vfs *v, const char *root, const char *name)
{
	struct tfs_diag d;
	char *p = join(root, name);

	tfs_diag_init(&d);
	cr_assert_eq(v->ops->mkdir(v, p, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_free(p);
}

/* Reads a whole file as a NUL-terminated string (caller frees). */
static char *slurp(struct tfs_vfs *v, const char *root, const char *name)
{
	struct tfs_diag d;
	char *p = join(root, name);
	uint8_t *buf;
	size_t len;
	char *s;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(v, p, 1 << 20, &buf, &len, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	s = tfs_strndup((const char *)buf, len);
	tfs_free(buf);
	tfs_free(p);
	return s;
}

static struct tfs_stat stat_of(struct tfs_vfs *v, const char *root,
			       const char *name)
{
	struct tfs_diag d;
	struct tfs_stat st;
	char *p = join(root, name);

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_stat(v, p, &st, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_free(p);
	return st;
}

static char *make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[4096];
	char *dir;

	snprintf(tmpl, sizeof(tmpl), "%s/tfs-vfs-......",
		 base && *base ? base : "/tmp");
	/* mkdtemp replaces the six trailing X characters. */
	memset(tmpl + strlen(tmpl) - 6, 'X', 6);
	dir = mkdtemp(tmpl);
	cr_assert_not_null(dir, "mkdtemp: %s", strerror(errno));
	return tfs_strdup(dir);
}

/* ---- the shared semantics ----------------------------------------------- */

/* Object storage has no folders, only key prefixes: there mkdir makes
 * missing parents too (tfs_s3.h), the one difference from POSIX. */
static bool folders_are_names;

static void check_read_write(struct tfs_vfs *v, const char *root)
{
	struct tfs_diag d;
	char buf[16];
	char *p, *s;
	struct tfs_stat st;

	put(v, root, "f", "hello world");
	st = stat_of(v, root, "f");
	cr_assert(st.exists && !st.is_dir);
	cr_assert_eq(st.size, 11);

	p = join(root, "f");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read(v, p, 6, buf, 5, &d), TFS_E_OK);
	cr_assert_arr_eq(buf, "world", 5);
	cr_assert_eq(tfs_vfs_read(v, p, 0, buf, 0, &d), TFS_E_OK);

	/* Past the end: corrupt, and the message names the path. */
	cr_assert_eq(tfs_vfs_read(v, p, 8, buf, 5, &d), TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, p), "message '%s' lacks the path", d.msg);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read(v, p, 100, buf, 1, &d), TFS_E_CORRUPT);

	/* Write truncates, append grows and creates. */
	put(v, root, "f", "abc");
	s = slurp(v, root, "f");
	cr_assert_str_eq(s, "abc");
	tfs_free(s);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->append(v, p, "def", 3, &d), TFS_E_OK);
	s = slurp(v, root, "f");
	cr_assert_str_eq(s, "abcdef");
	tfs_free(s);
	tfs_free(p);

	p = join(root, "g");
	cr_assert_eq(v->ops->append(v, p, "xy", 2, &d), TFS_E_OK);
	cr_assert_eq(v->ops->append(v, p, "z", 1, &d), TFS_E_OK);
	tfs_free(p);
	s = slurp(v, root, "g");
	cr_assert_str_eq(s, "xyz");
	tfs_free(s);

	/* Empty file. */
	put(v, root, "empty", "");
	st = stat_of(v, root, "empty");
	cr_assert(st.exists && st.size == 0);

	/* Missing files. */
	st = stat_of(v, root, "missing");
	cr_assert(!st.exists);
	st = stat_of(v, root, "missing/deeper");
	cr_assert(!st.exists);
	p = join(root, "missing");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read(v, p, 0, buf, 1, &d), TFS_E_NOT_FOUND);
	cr_assert(strstr(d.msg, p));
	tfs_free(p);
	p = join(root, "nodir/f");
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->write(v, p, "x", 1, &d), TFS_E_NOT_FOUND);
	tfs_free(p);

	/* A file in the way of a path component. */
	st = stat_of(v, root, "f/x");
	cr_assert(!st.exists);
}

static void check_read_all(struct tfs_vfs *v, const char *root)
{
	struct tfs_diag d;
	uint8_t *buf = (uint8_t *)"sentinel";
	size_t len = 99;
	char *p;

	put(v, root, "ra", "0123456789");
	p = join(root, "ra");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(v, p, 10, &buf, &len, &d), TFS_E_OK);
	cr_assert_eq(len, 10);
	cr_assert_arr_eq(buf, "0123456789", 10);
	tfs_free(buf);
	cr_assert_eq(tfs_vfs_read_all(v, p, 9, &buf, &len, &d), TFS_E_TOO_BIG);
	cr_assert_null(buf);
	cr_assert(strstr(d.msg, p));
	tfs_free(p);

	p = join(root, "nope");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(v, p, 10, &buf, &len, &d),
		     TFS_E_NOT_FOUND);
	tfs_free(p);
	mk(v, root, "adir");
	p = join(root, "adir");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(v, p, 10, &buf, &len, &d), TFS_E_INVALID);
	tfs_free(p);
}

static void check_list(struct tfs_vfs *v, const char *root)
{
	static const char *const names[] = {
		"b", "B", "a_b", "a", "__x", "_", "0", "a.b", "\xc3\xa9", "~",
	};
	static const char *const sorted[] = {
		"0", "B", "_", "__x", "a", "a.b", "a_b", "b", "~", "\xc3\xa9",
	};
	struct tfs_dirlist l;
	struct tfs_diag d;
	char *p;

	mk(v, root, "ls");
	p = join(root, "ls");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(v, p, &l, &d), TFS_E_OK);
	cr_assert_eq(l.count, 0);
	tfs_dirlist_release(&l);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *f = join(p, names[i]);

		if (i % 3 == 0)
			cr_assert_eq(v->ops->mkdir(v, f, &d), TFS_E_OK);
		else
			cr_assert_eq(v->ops->write(v, f, "x", 1, &d), TFS_E_OK);
		tfs_free(f);
	}
	cr_assert_eq(tfs_vfs_list(v, p, &l, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(l.count, sizeof(sorted) / sizeof(sorted[0]));
	for (size_t i = 0; i < l.count; i++)
		cr_assert_str_eq(l.names[i], sorted[i], "entry %zu", i);
	tfs_dirlist_release(&l);
	cr_assert_null(l.names);
	tfs_free(p);

	p = join(root, "no_such_dir");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(v, p, &l, &d), TFS_E_NOT_FOUND);
	cr_assert(strstr(d.msg, p));
	cr_assert_eq(l.count, 0);
	tfs_free(p);
	put(v, root, "plain", "x");
	p = join(root, "plain");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(v, p, &l, &d), TFS_E_NOT_FOUND);
	tfs_free(p);
}

static void check_dirs(struct tfs_vfs *v, const char *root)
{
	struct tfs_diag d;
	struct tfs_stat st;
	char *p;

	mk(v, root, "d");
	mk(v, root, "d"); /* existing folder: fine */
	st = stat_of(v, root, "d");
	cr_assert(st.exists && st.is_dir);
	mk(v, root, "d/e");

	put(v, root, "file", "x");
	p = join(root, "file");
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->mkdir(v, p, &d), TFS_E_EXISTS);
	tfs_free(p);
	if (!folders_are_names) {
		p = join(root, "x/y");
		tfs_diag_init(&d);
		cr_assert_eq(v->ops->mkdir(v, p, &d), TFS_E_NOT_FOUND);
		tfs_free(p);
	}

	/* Remove: non-empty folder refused, then file, then empty folders. */
	put(v, root, "d/e/f", "x");
	p = join(root, "d");
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->remove(v, p, &d), TFS_E_EXISTS);
	tfs_free(p);
	p = join(root, "d/e/f");
	cr_assert_eq(v->ops->remove(v, p, &d), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->remove(v, p, &d), TFS_E_NOT_FOUND);
	tfs_free(p);
	p = join(root, "d/e");
	cr_assert_eq(v->ops->remove(v, p, &d), TFS_E_OK);
	tfs_free(p);
	st = stat_of(v, root, "d/e");
	cr_assert(!st.exists);
	p = join(root, "d");
	cr_assert_eq(v->ops->remove(v, p, &d), TFS_E_OK);
	tfs_free(p);

	/* fsync of a file and of a folder. */
	mk(v, root, "s");
	put(v, root, "s/f", "data");
	p = join(root, "s/f");
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->fsync(v, p, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_free(p);
	p = join(root, "s");
	cr_assert_eq(v->ops->fsync(v, p, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_free(p);
	p = join(root, "s/none");
	cr_assert_eq(v->ops->fsync(v, p, &d), TFS_E_NOT_FOUND);
	tfs_free(p);
}

static void check_rename(struct tfs_vfs *v, const char *root)
{
	struct tfs_diag d;
	struct tfs_stat st;
	char *a, *b, *s;

	put(v, root, "r1", "one");
	put(v, root, "r2", "two");
	a = join(root, "r1");
	b = join(root, "r2");
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->rename(v, a, b, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	st = stat_of(v, root, "r1");
	cr_assert(!st.exists);
	s = slurp(v, root, "r2");
	cr_assert_str_eq(s, "one");
	tfs_free(s);
	cr_assert_eq(v->ops->rename(v, a, b, &d), TFS_E_NOT_FOUND);
	tfs_free(a);
	tfs_free(b);

	/* A folder with contents moves as a whole, into another folder. */
	mk(v, root, "rd");
	mk(v, root, "rd/sub");
	put(v, root, "rd/sub/f", "deep");
	mk(v, root, "other");
	a = join(root, "rd");
	b = join(root, "other/moved");
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->rename(v, a, b, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_free(a);
	tfs_free(b);
	s = slurp(v, root, "other/moved/sub/f");
	cr_assert_str_eq(s, "deep");
	tfs_free(s);

	/* The temp-file-then-rename pattern of metadata writes. */
	put(v, root, "x.tmp", "new");
	put(v, root, "x", "old");
	a = join(root, "x.tmp");
	b = join(root, "x");
	cr_assert_eq(v->ops->rename(v, a, b, &d), TFS_E_OK);
	tfs_free(a);
	tfs_free(b);
	s = slurp(v, root, "x");
	cr_assert_str_eq(s, "new");
	tfs_free(s);
}

/* lstat tells the same as stat where no link is involved. */
static void check_lstat(struct tfs_vfs *v, const char *root)
{
	struct tfs_diag d;
	struct tfs_stat st;
	char *p;

	mk(v, root, "ld");
	put(v, root, "ld/f", "abc");
	tfs_diag_init(&d);
	p = join(root, "ld/f");
	cr_assert_eq(tfs_vfs_lstat(v, p, &st, &d), TFS_E_OK, "%s", d.msg);
	cr_assert(st.exists && !st.is_dir && !st.is_link && !st.read_only);
	cr_assert_eq(st.size, 3);
	cr_assert_eq(st.mtime_ns, stat_of(v, root, "ld/f").mtime_ns);
	cr_assert_eq(tfs_vfs_remove(v, p, &d), TFS_E_OK);
	tfs_free(p);
	p = join(root, "ld");
	cr_assert_eq(tfs_vfs_lstat(v, p, &st, &d), TFS_E_OK, "%s", d.msg);
	cr_assert(st.exists && st.is_dir && !st.is_link);
	cr_assert_eq(tfs_vfs_remove(v, p, &d), TFS_E_OK);
	/* Missing: not an error. */
	cr_assert_eq(tfs_vfs_lstat(v, p, &st, &d), TFS_E_OK, "%s", d.msg);
	cr_assert(!st.exists);
	tfs_free(p);
}

/* The room of a writable folder: some, in blocks of some size, and a
 * place a path below it in reports the same. */
static void check_space(struct tfs_vfs *v, const char *root)
{
	struct tfs_space top, below;
	struct tfs_diag d;
	char *p = join(root, "sp");

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_space(v, root, &top, &d), TFS_E_OK, "%s", d.msg);
	cr_assert_gt(top.block_size, 0);
	cr_assert_gt(top.blocks, 0);
	cr_assert_leq(top.blocks_avail, top.blocks_free);
	cr_assert_leq(top.blocks_free, top.blocks);
	cr_assert_gt(top.name_max, 0);
	cr_assert(!top.read_only);
	cr_assert_eq(tfs_vfs_mkdir(v, p, &d), TFS_E_OK, "%s", d.msg);
	cr_assert_eq(tfs_vfs_space(v, p, &below, &d), TFS_E_OK, "%s", d.msg);
	cr_assert_eq(below.blocks, top.blocks);
	cr_assert_eq(below.block_size, top.block_size);
	cr_assert_eq(tfs_vfs_remove(v, p, &d), TFS_E_OK, "%s", d.msg);
	tfs_free(p);
}

static void check_all(struct tfs_vfs *v, const char *root)
{
	check_space(v, root);
	check_read_write(v, root);
	check_read_all(v, root);
	check_list(v, root);
	check_dirs(v, root);
	check_rename(v, root);
	check_lstat(v, root);
}

/* ---- per backend -------------------------------------------------------- */

Test(vfs, posix_semantics)
{
	struct tfs_vfs *v;
	char *dir = make_tmpdir();

	cr_assert_eq(tfs_vfs_posix_new(&v), TFS_E_OK);
	check_all(v, dir);
	{
		/* The figures are the file system's own. */
		struct tfs_space room;
		struct statvfs sv;
		struct tfs_diag d;

		cr_assert_eq(statvfs(dir, &sv), 0);
		cr_assert_eq(tfs_vfs_space(v, dir, &room, &d), TFS_E_OK);
		cr_assert_eq(room.blocks, sv.f_blocks);
		cr_assert_eq(room.files, sv.f_files);
	}
	vt_rm_tree(v, dir);
	cr_assert_eq(access(dir, F_OK), -1);
	tfs_vfs_free(v);
	tfs_free(dir);
}

static void rooted_semantics(bool walk)
{
	struct tfs_vfs *v;
	struct tfs_diag d;
	char *dir = make_tmpdir();

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_posix_new_rooted(dir, &v, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	if (walk)
		tfs_vfs_posix_rooted_walk(v);
	check_all(v, dir);
	/* Everything below the root goes; the root itself is not a name
	 * the backend may remove. */
	vt_rm_tree(v, dir);
	cr_assert_eq(access(dir, F_OK), 0);
	cr_assert_eq(rmdir(dir), 0);
	tfs_vfs_free(v);
	tfs_free(dir);
}

Test(vfs, rooted_semantics)
{
	rooted_semantics(false);
}

Test(vfs, rooted_semantics_walk)
{
	rooted_semantics(true);
}

/* Outside: a folder with a file the rooted backend must never reach.
 * Inside (the root): links to it at every place of a path. */
static void rooted_links(bool walk)
{
	char *out = make_tmpdir(), *root = make_tmpdir();
	struct tfs_vfs *plain, *v;
	struct tfs_dirlist l;
	struct tfs_stat st;
	struct tfs_diag d;
	char *p, *q, c;
	int fd;

	cr_assert_eq(tfs_vfs_posix_new(&plain), TFS_E_OK);
	put(plain, out, "secret", "s");
	mk(plain, root, "real");
	put(plain, root, "real/f", "r");
	/* root/dirlink -> out, root/real/filelink -> out/secret,
	 * root/dots -> "..", root/real/rel -> "../../<out>/secret". */
	p = join(root, "dirlink");
	cr_assert_eq(symlink(out, p), 0);
	tfs_free(p);
	p = join(root, "real/filelink");
	q = join(out, "secret");
	cr_assert_eq(symlink(q, p), 0);
	tfs_free(p);
	tfs_free(q);
	p = join(root, "dots");
	cr_assert_eq(symlink("..", p), 0);
	tfs_free(p);

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_posix_new_rooted(root, &v, &d), TFS_E_OK);
	if (walk)
		tfs_vfs_posix_rooted_walk(v);
	/* An ordinary file below the root reads. */
	p = join(root, "real/f");
	cr_assert_eq(tfs_vfs_read(v, p, 0, &c, 1, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(c, 'r');
	tfs_free(p);
	/* Links as the last component and in the middle, and "..". */
	const char *bad[] = {"dirlink/secret", "real/filelink", "dots/x",
			     "real/../../x", "dirlink"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		p = join(root, bad[i]);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_read(v, p, 0, &c, 1, &d),
			     TFS_E_NOT_FOUND, "%s", bad[i]);
		cr_assert(strstr(d.msg, "not followed"), "%s", d.msg);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_stat(v, p, &st, &d), TFS_E_OK);
		cr_assert(!st.exists, "%s", bad[i]);
		tfs_diag_init(&d);
		cr_assert_neq(v->ops->write(v, p, "w", 1, &d), TFS_E_OK,
			      "%s", bad[i]);
		cr_assert_neq(v->ops->append(v, p, "w", 1, &d), TFS_E_OK,
			      "%s", bad[i]);
		tfs_free(p);
	}
	p = join(root, "dirlink/new");
	cr_assert_neq(v->ops->mkdir(v, p, &d), TFS_E_OK);
	tfs_free(p);
	p = join(root, "dirlink/secret");
	cr_assert_neq(v->ops->remove(v, p, &d), TFS_E_OK);
	q = join(root, "moved");
	cr_assert_neq(v->ops->rename(v, p, q, &d), TFS_E_OK);
	tfs_free(p);
	tfs_free(q);
	/* A link where a folder is made counts as taken, not followed. */
	p = join(root, "dirlink");
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->mkdir(v, p, &d), TFS_E_NOT_FOUND);
	tfs_free(p);
	/* Listings leave links out. */
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(v, root, &l, &d), TFS_E_OK);
	cr_assert_eq(l.count, 1);
	cr_assert_str_eq(l.names[0], "real");
	tfs_dirlist_release(&l);
	p = join(root, "dirlink");
	cr_assert_eq(tfs_vfs_list(v, p, &l, &d), TFS_E_NOT_FOUND);
	tfs_free(p);
	/* lstat describes a last link, and refuses one before it. */
	p = join(root, "real/filelink");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_lstat(v, p, &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.is_link && !st.is_dir);
	tfs_free(p);
	p = join(root, "dirlink/secret");
	cr_assert_eq(tfs_vfs_lstat(v, p, &st, &d), TFS_E_OK);
	cr_assert(!st.exists);
	tfs_free(p);
	p = join(root, "real/f");
	cr_assert_eq(tfs_vfs_lstat(v, p, &st, &d), TFS_E_OK);
	cr_assert(st.exists && !st.is_link && st.size == 1);
	tfs_free(p);
	/* Stats of names in one folder: each as tfs_vfs_stat says (a link
	 * as missing), from the folder itself to a path of several names; a
	 * folder reached through a link gives nothing. */
	{
		const char *names[] = {"", "f", "filelink", "none",
				       "../real/f"};
		struct tfs_stat sts[5];

		p = join(root, "real");
		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_stat_names(v, p, names, 5, sts, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert(sts[0].exists && sts[0].is_dir);
		cr_assert(sts[1].exists && !sts[1].is_dir && sts[1].size == 1);
		cr_assert(!sts[2].exists && !sts[3].exists);
		tfs_free(p);
		p = join(root, "real/../real/f");
		cr_assert_eq(tfs_vfs_stat(v, p, &st, &d), TFS_E_OK);
		cr_assert_eq(sts[4].exists, st.exists);
		tfs_free(p);
		p = join(root, "dirlink");
		cr_assert_eq(tfs_vfs_stat_names(v, p, names, 2, sts, &d),
			     TFS_E_OK);
		cr_assert(!sts[0].exists && !sts[1].exists);
		tfs_free(p);
	}
	/* Removing a link removes the link, not what it names. */
	p = join(root, "real/filelink");
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->remove(v, p, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_free(p);
	/* Paths not below the root are refused. */
	p = join(out, "secret");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read(v, p, 0, &c, 1, &d), TFS_E_PERM);
	cr_assert_eq(tfs_vfs_posix_open(v, p, O_RDONLY, 0, &d), -1);
	tfs_free(p);
	/* The open seam resolves like the other calls. */
	p = join(root, "dirlink");
	cr_assert_eq(tfs_vfs_posix_open(v, p, O_PATH | O_DIRECTORY, 0, &d), -1);
	tfs_free(p);
	p = join(root, "real");
	fd = tfs_vfs_posix_open(v, p, O_PATH | O_DIRECTORY, 0, &d);
	cr_assert_geq(fd, 0);
	close(fd);
	tfs_free(p);
	/* The outside is untouched. */
	q = slurp(plain, out, "secret");
	cr_assert_str_eq(q, "s");
	tfs_free(q);
	tfs_vfs_free(v);
	/* The links go first: the plain backend would follow them. */
	const char *links[] = {"dirlink", "dots"};
	for (size_t i = 0; i < 2; i++) {
		p = join(root, links[i]);
		cr_assert_eq(unlink(p), 0);
		tfs_free(p);
	}
	vt_rm_tree(plain, root);
	vt_rm_tree(plain, out);
	tfs_vfs_free(plain);
	tfs_free(root);
	tfs_free(out);
}

Test(vfs, rooted_refuses_links)
{
	rooted_links(false);
}

Test(vfs, rooted_refuses_links_walk)
{
	rooted_links(true);
}

/* stat_names gives what a stat of each path gives, on every backend:
 * the folder itself (""), files, folders, missing names, a missing
 * folder and a file taken for a folder. */
static void stat_names_as_stat(struct tfs_vfs *v, const char *dir)
{
	const char *names[] = {"", "a", "sub", "none", "sub/b"};
	const size_t n = sizeof(names) / sizeof(*names);
	const char *folders[] = {"", "sub", "none", "a"};
	struct tfs_stat sts[5], one;
	struct tfs_diag d;

	put(v, dir, "a", "12345");
	mk(v, dir, "sub");
	put(v, dir, "sub/b", "xy");
	for (size_t f = 0; f < sizeof(folders) / sizeof(*folders); f++) {
		char *folder = *folders[f] ? join(dir, folders[f])
					   : tfs_strdup(dir);

		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_stat_names(v, folder, names, n, sts, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		for (size_t i = 0; i < n; i++) {
			char *p = *names[i] ? join(folder, names[i])
					    : tfs_strdup(folder);

			cr_assert_eq(tfs_vfs_stat(v, p, &one, &d), TFS_E_OK);
			cr_assert_eq(sts[i].exists, one.exists, "%s", p);
			cr_assert_eq(sts[i].is_dir, one.is_dir, "%s", p);
			if (one.exists && !one.is_dir)
				cr_assert_eq(sts[i].size, one.size, "%s", p);
			tfs_free(p);
		}
		tfs_free(folder);
	}
	vt_rm_tree(v, dir);
}

Test(vfs, stat_names_as_stat)
{
	char *dir = make_tmpdir();
	struct tfs_vfs *v;
	struct tfs_diag d;

	cr_assert_eq(tfs_vfs_posix_new(&v), TFS_E_OK);
	stat_names_as_stat(v, dir);
	tfs_vfs_free(v);
	for (int walk = 0; walk < 2; walk++) {
		cr_assert_eq(mkdir(dir, 0700), 0);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_posix_new_rooted(dir, &v, &d), TFS_E_OK);
		if (walk)
			tfs_vfs_posix_rooted_walk(v);
		stat_names_as_stat(v, dir);
		cr_assert_eq(rmdir(dir), 0);
		tfs_vfs_free(v);
	}
	cr_assert_eq(tfs_vfs_mem_new(&v), TFS_E_OK);
	cr_assert_eq(tfs_vfs_mkdir(v, "/m", &d), TFS_E_OK);
	stat_names_as_stat(v, "/m");
	tfs_vfs_free(v);
	tfs_free(dir);
}

/* Against a real S3 server when TFS_S3_TEST_URI names a bucket (the s3
 * tests start one: tests/s3/); skipped otherwise. */
Test(vfs, s3_semantics)
{
	const char *uri = getenv("TFS_S3_TEST_URI");
	struct tfs_vfs *v;
	struct tfs_diag d;
	char *root, *sub;
	char rnd[32];

	if (!uri || !*uri)
		cr_skip_test("TFS_S3_TEST_URI is not set");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_s3_open_uri(uri, NULL, &v, &root, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	snprintf(rnd, sizeof(rnd), "vfs-%ld", (long)getpid());
	sub = join(root, rnd);
	cr_assert_eq(v->ops->mkdir(v, sub, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	folders_are_names = true;
	check_all(v, sub);
	vt_rm_tree(v, sub);
	{
		struct tfs_stat st;

		cr_assert_eq(tfs_vfs_stat(v, sub, &st, &d), TFS_E_OK);
		cr_assert(!st.exists, "the tree is gone");
	}
	tfs_free(sub);
	tfs_free(root);
	tfs_vfs_free(v);
}

Test(vfs, mem_semantics)
{
	struct tfs_vfs *v;
	struct tfs_diag d;

	cr_assert_eq(tfs_vfs_mem_new(&v), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->mkdir(v, "/t", &d), TFS_E_OK);
	check_all(v, "/t");
	tfs_vfs_free(v);
}

Test(vfs, mem_relative_root)
{
	struct tfs_vfs *v;
	struct tfs_diag d;

	cr_assert_eq(tfs_vfs_mem_new(&v), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->mkdir(v, "rel", &d), TFS_E_OK);
	check_all(v, "rel");
	tfs_vfs_free(v);
}

Test(vfs, faulty_unarmed_is_transparent)
{
	struct tfs_vfs *m, *f;
	struct tfs_diag d;

	cr_assert_eq(tfs_vfs_mem_new(&m), TFS_E_OK);
	cr_assert_eq(tfs_vfs_faulty_new(m, &f), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(f->ops->mkdir(f, "/t", &d), TFS_E_OK);
	check_all(f, "/t");
	cr_assert_gt(tfs_vfs_faulty_calls(f), 50);
	tfs_vfs_free(f);
	tfs_vfs_free(m);
}

Test(vfs, faulty_over_posix)
{
	struct tfs_vfs *p, *f;
	char *dir = make_tmpdir();

	cr_assert_eq(tfs_vfs_posix_new(&p), TFS_E_OK);
	cr_assert_eq(tfs_vfs_faulty_new(p, &f), TFS_E_OK);
	check_all(f, dir);
	vt_rm_tree(p, dir);
	tfs_vfs_free(f);
	tfs_vfs_free(p);
	tfs_free(dir);
}

Test(vfs, mem_paths_normalised)
{
	struct tfs_vfs *v;
	struct tfs_diag d;
	struct tfs_stat st;
	char buf[3];

	cr_assert_eq(tfs_vfs_mem_new(&v), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->mkdir(v, "/a", &d), TFS_E_OK);
	cr_assert_eq(v->ops->mkdir(v, "a//b/", &d), TFS_E_OK);
	cr_assert_eq(v->ops->write(v, "/a/./b//c", "abc", 3, &d), TFS_E_OK);
	cr_assert_eq(tfs_vfs_read(v, "a/b/c", 0, buf, 3, &d), TFS_E_OK);
	cr_assert_arr_eq(buf, "abc", 3);
	cr_assert_eq(tfs_vfs_read(v, "/a/b/../b/c", 0, buf, 3, &d), TFS_E_OK);
	cr_assert_eq(tfs_vfs_stat(v, "/", &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.is_dir);
	cr_assert_eq(v->ops->remove(v, "/", &d), TFS_E_INVALID);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->write(v, "/", "x", 1, &d), TFS_E_INVALID);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->rename(v, "/a", "/a/b/inside", &d),
		     TFS_E_INVALID);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->write(v, "/a/b", "x", 1, &d), TFS_E_INVALID);
	tfs_vfs_free(v);
}

Test(vfs, posix_permission_denied)
{
	struct tfs_vfs *v;
	struct tfs_diag d;
	char *dir, *p;
	char c;

	if (geteuid() == 0)
		cr_skip_test("permissions do not apply to root");
	dir = make_tmpdir();
	cr_assert_eq(tfs_vfs_posix_new(&v), TFS_E_OK);
	put(v, dir, "secret", "x");
	p = join(dir, "secret");
	cr_assert_eq(chmod(p, 0), 0);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read(v, p, 0, &c, 1, &d), TFS_E_PERM);
	cr_assert(strstr(d.msg, "permission denied"), "%s", d.msg);
	cr_assert_eq(tfs_err_errno(d.code), EACCES);
	tfs_free(p);
	vt_rm_tree(v, dir);
	tfs_vfs_free(v);
	tfs_free(dir);
}

Test(vfs, posix_lstat_links_and_read_only)
{
	struct tfs_vfs *v;
	struct tfs_diag d;
	struct tfs_stat st;
	char *dir, *sub, *link, *dangling, *file;

	dir = make_tmpdir();
	cr_assert_eq(tfs_vfs_posix_new(&v), TFS_E_OK);
	mk(v, dir, "sub");
	put(v, dir, "file", "x");
	sub = join(dir, "sub");
	link = join(dir, "link");
	dangling = join(dir, "dangling");
	file = join(dir, "file");
	cr_assert_eq(symlink(sub, link), 0);
	cr_assert_eq(symlink("/nonexistent-tfs-target", dangling), 0);
	tfs_diag_init(&d);
	/* stat follows the link to the folder, lstat does not. */
	cr_assert_eq(tfs_vfs_stat(v, link, &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.is_dir && !st.is_link);
	cr_assert_eq(tfs_vfs_lstat(v, link, &st, &d), TFS_E_OK);
	cr_assert(st.exists && !st.is_dir && st.is_link);
	/* A dangling link: missing for stat, there for lstat. */
	cr_assert_eq(tfs_vfs_stat(v, dangling, &st, &d), TFS_E_OK);
	cr_assert(!st.exists);
	cr_assert_eq(tfs_vfs_lstat(v, dangling, &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.is_link);
	/* No write bit: read_only, for stat and lstat. */
	cr_assert_eq(chmod(file, 0444), 0);
	cr_assert_eq(tfs_vfs_stat(v, file, &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.read_only);
	cr_assert_eq(tfs_vfs_lstat(v, file, &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.read_only);
	cr_assert_eq(chmod(file, 0644), 0);
	cr_assert_eq(tfs_vfs_stat(v, file, &st, &d), TFS_E_OK);
	cr_assert(!st.read_only);
	cr_assert_eq(unlink(link), 0);
	cr_assert_eq(unlink(dangling), 0);
	vt_rm_tree(v, dir);
	tfs_vfs_free(v);
	tfs_free(sub);
	tfs_free(link);
	tfs_free(dangling);
	tfs_free(file);
	tfs_free(dir);
}

Test(vfs, path_join)
{
	static const struct {
		const char *dir, *name, *want;
	} cases[] = {
		{"a", "b", "a/b"},     {"a/", "b", "a/b"},
		{"a//", "/b", "a/b"},  {"/", "b", "/b"},
		{"", "b", "b"},        {"/x/y", "__commits", "/x/y/__commits"},
		{"a", "", "a/"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = tfs_path_join(cases[i].dir, cases[i].name);

		cr_assert_str_eq(p, cases[i].want, "case %zu", i);
		tfs_free(p);
	}
}

/* ---- faults ------------------------------------------------------------- */

struct faulty_env {
	struct tfs_vfs *mem;
	struct tfs_vfs *f;
};

static struct faulty_env faulty_setup(void)
{
	struct faulty_env e;
	struct tfs_diag d;

	cr_assert_eq(tfs_vfs_mem_new(&e.mem), TFS_E_OK);
	cr_assert_eq(tfs_vfs_faulty_new(e.mem, &e.f), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(e.mem->ops->write(e.mem, "/f", "0123456789", 10, &d),
		     TFS_E_OK);
	return e;
}

static void faulty_teardown(struct faulty_env *e)
{
	tfs_vfs_free(e->f);
	tfs_vfs_free(e->mem);
}

Test(vfs_faulty, eio_once_at_nth)
{
	struct faulty_env e = faulty_setup();
	struct tfs_diag d;
	struct tfs_stat st;
	char buf[10];
	unsigned long base = tfs_vfs_faulty_calls(e.f);

	tfs_vfs_faulty_arm(e.f, TFS_FAULT_EIO, 2, true);
	for (int i = 0; i < 5; i++) {
		enum tfs_err err;

		tfs_diag_init(&d);
		err = tfs_vfs_read(e.f, "/f", 0, buf, 10, &d);
		if (i == 2) {
			cr_assert_eq(err, TFS_E_IO);
			cr_assert(strstr(d.msg, "/f"), "%s", d.msg);
		} else {
			cr_assert_eq(err, TFS_E_OK, "call %d: %s", i, d.msg);
		}
	}
	cr_assert_eq(tfs_vfs_faulty_calls(e.f), base + 5);

	/* Every operation kind fails under EIO. */
	tfs_vfs_faulty_arm(e.f, TFS_FAULT_EIO, 0, false);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_stat(e.f, "/f", &st, &d), TFS_E_IO);
	cr_assert_eq(tfs_vfs_lstat(e.f, "/f", &st, &d), TFS_E_IO);
	struct tfs_dirlist l;
	cr_assert_eq(tfs_vfs_list(e.f, "/", &l, &d), TFS_E_IO);
	cr_assert_null(l.names);
	cr_assert_eq(e.f->ops->write(e.f, "/g", "x", 1, &d), TFS_E_IO);
	cr_assert_eq(e.f->ops->append(e.f, "/g", "x", 1, &d), TFS_E_IO);
	cr_assert_eq(e.f->ops->fsync(e.f, "/f", &d), TFS_E_IO);
	cr_assert_eq(e.f->ops->mkdir(e.f, "/d", &d), TFS_E_IO);
	cr_assert_eq(e.f->ops->rename(e.f, "/f", "/h", &d), TFS_E_IO);
	cr_assert_eq(e.f->ops->remove(e.f, "/f", &d), TFS_E_IO);
	/* Nothing reached the inner backend. */
	cr_assert_eq(tfs_vfs_stat(e.mem, "/g", &st, &d), TFS_E_OK);
	cr_assert(!st.exists);
	cr_assert_eq(tfs_vfs_stat(e.mem, "/f", &st, &d), TFS_E_OK);
	cr_assert(st.exists);

	tfs_vfs_faulty_arm(e.f, TFS_FAULT_NONE, 0, false);
	cr_assert_eq(tfs_vfs_read(e.f, "/f", 0, buf, 10, &d), TFS_E_OK);
	faulty_teardown(&e);
}

Test(vfs_faulty, eio_from_nth_on)
{
	struct faulty_env e = faulty_setup();
	struct tfs_diag d;
	char buf[10];

	tfs_vfs_faulty_arm(e.f, TFS_FAULT_EIO, 3, false);
	for (int i = 0; i < 8; i++) {
		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_read(e.f, "/f", 0, buf, 10, &d),
			     i < 3 ? TFS_E_OK : TFS_E_IO, "call %d", i);
	}
	faulty_teardown(&e);
}

Test(vfs_faulty, short_read_and_write)
{
	struct faulty_env e = faulty_setup();
	struct tfs_diag d;
	struct tfs_stat st;
	char buf[10];

	memset(buf, '#', sizeof(buf));
	tfs_vfs_faulty_arm(e.f, TFS_FAULT_SHORT, 1, true);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read(e.f, "/f", 0, buf, 10, &d), TFS_E_OK);
	memset(buf, '#', sizeof(buf));
	cr_assert_eq(tfs_vfs_read(e.f, "/f", 0, buf, 10, &d), TFS_E_IO);
	cr_assert(strstr(d.msg, "short read"), "%s", d.msg);
	cr_assert_arr_eq(buf, "01234#####", 10);

	tfs_vfs_faulty_arm(e.f, TFS_FAULT_SHORT, 0, true);
	tfs_diag_init(&d);
	cr_assert_eq(e.f->ops->write(e.f, "/w", "abcdefgh", 8, &d), TFS_E_IO);
	cr_assert_eq(tfs_vfs_stat(e.mem, "/w", &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.size == 4);

	tfs_vfs_faulty_arm(e.f, TFS_FAULT_SHORT, 0, true);
	tfs_diag_init(&d);
	cr_assert_eq(e.f->ops->append(e.f, "/w", "ijkl", 4, &d), TFS_E_IO);
	cr_assert_eq(tfs_vfs_read(e.mem, "/w", 0, buf, 6, &d), TFS_E_OK);
	cr_assert_arr_eq(buf, "abcdij", 6);

	/* Non-transfer operations fail like EIO. */
	tfs_vfs_faulty_arm(e.f, TFS_FAULT_SHORT, 0, true);
	cr_assert_eq(tfs_vfs_stat(e.f, "/f", &st, &d), TFS_E_IO);
	faulty_teardown(&e);
}

Test(vfs_faulty, nospc)
{
	struct faulty_env e = faulty_setup();
	struct tfs_diag d;
	struct tfs_stat st;
	char buf[4];

	tfs_vfs_faulty_arm(e.f, TFS_FAULT_NOSPC, 0, false);
	tfs_diag_init(&d);
	cr_assert_eq(e.f->ops->write(e.f, "/n", "abc", 3, &d), TFS_E_NOSPC);
	cr_assert(strstr(d.msg, "/n"));
	tfs_diag_init(&d);
	cr_assert_eq(e.f->ops->append(e.f, "/n", "abc", 3, &d), TFS_E_NOSPC);
	cr_assert_eq(e.f->ops->mkdir(e.f, "/nd", &d), TFS_E_NOSPC);
	cr_assert_eq(e.f->ops->rename(e.f, "/f", "/g", &d), TFS_E_NOSPC);
	cr_assert_eq(e.f->ops->fsync(e.f, "/f", &d), TFS_E_NOSPC);
	cr_assert_eq(tfs_vfs_read(e.f, "/f", 0, buf, 4, &d), TFS_E_IO);
	cr_assert_eq(tfs_vfs_stat(e.f, "/f", &st, &d), TFS_E_IO);
	cr_assert_eq(tfs_vfs_stat(e.mem, "/n", &st, &d), TFS_E_OK);
	cr_assert(!st.exists);
	faulty_teardown(&e);
}

Test(vfs_faulty, arm_ignores_other_backends)
{
	struct tfs_vfs *m;
	struct tfs_diag d;
	char c;

	cr_assert_eq(tfs_vfs_mem_new(&m), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(m->ops->write(m, "/f", "x", 1, &d), TFS_E_OK);
	tfs_vfs_faulty_arm(m, TFS_FAULT_EIO, 0, false);
	cr_assert_eq(tfs_vfs_faulty_calls(m), 0);
	cr_assert_eq(tfs_vfs_read(m, "/f", 0, &c, 1, &d), TFS_E_OK);
	tfs_vfs_free(m);
}

/* ---- concurrency and allocation failures -------------------------------- */

struct worker {
	struct tfs_vfs *v;
	int id;
	int failures;
};

static void *mem_worker(void *arg)
{
	struct worker *w = arg;
	struct tfs_diag d;
	char path[64], data[64], back[64];

	for (int i = 0; i < 200; i++) {
		int n = snprintf(path, sizeof(path), "/t/w%d_%d", w->id, i % 7);
		int len = snprintf(data, sizeof(data), "worker %d iteration %d",
				   w->id, i);
		struct tfs_dirlist l;

		(void)n;
		tfs_diag_init(&d);
		if (w->v->ops->write(w->v, path, data, (size_t)len, &d) ||
		    tfs_vfs_read(w->v, path, 0, back, (size_t)len, &d) ||
		    memcmp(back, data, (size_t)len) != 0)
			w->failures++;
		if (tfs_vfs_list(w->v, "/t", &l, &d) == TFS_E_OK)
			tfs_dirlist_release(&l);
		else
			w->failures++;
	}
	return NULL;
}

Test(vfs, mem_concurrent)
{
	struct tfs_vfs *v;
	struct tfs_diag d;
	pthread_t th[4];
	struct worker w[4];

	cr_assert_eq(tfs_vfs_mem_new(&v), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(v->ops->mkdir(v, "/t", &d), TFS_E_OK);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){v, i, 0};
		cr_assert_eq(pthread_create(&th[i], NULL, mem_worker, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	struct tfs_dirlist l;
	cr_assert_eq(tfs_vfs_list(v, "/t", &l, &d), TFS_E_OK);
	cr_assert_eq(l.count, 28);
	tfs_dirlist_release(&l);
	tfs_vfs_free(v);
}

/* Every allocation of a sequence of mem operations fails in turn: each
 * failure is TFS_E_NOMEM (never a crash or a leak under ASan). */
Test(vfs, mem_allocation_failures)
{
	for (long n = 0; n < 64; n++) {
		struct tfs_vfs *v = NULL;
		struct tfs_diag d;
		struct tfs_dirlist l;
		enum tfs_err err;
		bool failed = false;

		tfs_alloc_fail_after(n);
		err = tfs_vfs_mem_new(&v);
		if (err) {
			cr_assert_eq(err, TFS_E_NOMEM);
			cr_assert_null(v);
			tfs_alloc_fail_after(-1);
			continue;
		}
		tfs_diag_init(&d);
		err = v->ops->mkdir(v, "/a", &d);
		failed |= err != TFS_E_OK;
		if (!err)
			err = v->ops->write(v, "/a/f", "abc", 3, &d);
		failed |= err != TFS_E_OK;
		if (!err)
			err = v->ops->append(v, "/a/f", "def", 3, &d);
		if (!err)
			err = v->ops->rename(v, "/a/f", "/a/g", &d);
		if (!err)
			err = tfs_vfs_list(v, "/a", &l, &d);
		if (!err)
			tfs_dirlist_release(&l);
		tfs_alloc_fail_after(-1);
		cr_assert(err == TFS_E_OK || err == TFS_E_NOMEM, "n=%ld: %s", n,
			  tfs_diag_msg(&d));
		(void)failed;
		tfs_vfs_free(v);
	}
}

Test(vfs_path, normalize)
{
	static const char *const cases[][2] = {
		{"/a/./b//../c", "/a/c"},
		{"/a/b/", "/a/b"},
		{"/", "/"},
		{"//", "/"},
		{"/..", "/"},
		{"/a/../..", "/"},
		{"/a/../../b", "/b"},
		{"a/b/..", "a"},
		{"a/..", "."},
		{".", "."},
		{"", "."},
		{"../a", "../a"},
		{"../a/../..", "../.."},
		{"a/../../b", "../b"},
		{"s3://bucket/x/../y//z/.", "s3://bucket/y/z"},
		{"s3://bucket/x/..", "s3://bucket"},
		{"file:///data/g/../a", "file:///data/a"},
		{"/odd://name/..", "/odd:"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = tfs_path_normalize(cases[i][0]);

		cr_assert_not_null(got);
		cr_assert_str_eq(got, cases[i][1], "'%s'", cases[i][0]);
		tfs_free(got);
	}
}
