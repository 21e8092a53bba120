/* Storage helpers of the unit tests (vfs_test_util.h). */
#include "vfs_test_util.h"

#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"

char *vt_fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	cr_assert_neq(vasprintf(&s, f, ap), -1);
	va_end(ap);
	return s;
}

void vt_put(struct tfs_vfs *v, const char *path, const void *data, size_t len)
{
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_write(v, path, data, len, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
}

void vt_rm(struct tfs_vfs *v, const char *path)
{
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_remove(v, path, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
}

void vt_mkdir_p(struct tfs_vfs *v, const char *path)
{
	struct tfs_diag d;
	char *p = strdup(path);

	cr_assert_not_null(p);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_mkdir(v, p, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		*s = '/';
	}
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_mkdir(v, p, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	free(p);
}

void vt_rm_tree(struct tfs_vfs *v, const char *path)
{
	struct tfs_diag d;
	struct tfs_stat st;
	struct tfs_dirlist l;

	tfs_diag_init(&d);
	if (tfs_vfs_stat(v, path, &st, &d) || !st.exists)
		return;
	if (st.is_dir && tfs_vfs_list(v, path, &l, &d) == TFS_E_OK) {
		for (size_t i = 0; i < l.count; i++) {
			char *c = tfs_path_join(path, l.names[i]);

			cr_assert_not_null(c);
			vt_rm_tree(v, c);
			tfs_free(c);
		}
		tfs_dirlist_release(&l);
	}
	(void)tfs_vfs_remove(v, path, &d);
}

void vt_copy_tree(struct tfs_vfs *src, const char *sp, struct tfs_vfs *dst,
		  const char *dp)
{
	struct tfs_diag d;
	struct tfs_stat st;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_stat(src, sp, &st, &d), TFS_E_OK);
	cr_assert(st.exists, "%s", sp);
	if (st.is_dir) {
		struct tfs_dirlist l;

		cr_assert_eq(tfs_vfs_mkdir(dst, dp, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		cr_assert_eq(tfs_vfs_list(src, sp, &l, &d), TFS_E_OK);
		for (size_t i = 0; i < l.count; i++) {
			char *s = tfs_path_join(sp, l.names[i]);
			char *t = tfs_path_join(dp, l.names[i]);

			vt_copy_tree(src, s, dst, t);
			tfs_free(s);
			tfs_free(t);
		}
		tfs_dirlist_release(&l);
	} else {
		uint8_t *buf;
		size_t len;

		cr_assert_eq(tfs_vfs_read_all(src, sp, SIZE_MAX, &buf, &len, &d),
			     TFS_E_OK);
		cr_assert_eq(tfs_vfs_write(dst, dp, buf, len, &d), TFS_E_OK);
		tfs_free(buf);
	}
}

struct tfs_vfs *vt_mem_copy(const char *name)
{
	struct tfs_vfs *p, *m;
	char *src = vt_fmt("%s/%s", TFS_CORPUS_DIR, name);

	cr_assert_eq(tfs_vfs_posix_new(&p), TFS_E_OK);
	cr_assert_eq(tfs_vfs_mem_new(&m), TFS_E_OK);
	vt_copy_tree(p, src, m, "/A");
	free(src);
	tfs_vfs_free(p);
	return m;
}
