/* Storage helpers shared by the unit tests of several modules (vfs,
 * fragment, group, maintain, and the legacy array builder of the read and
 * write tests): formatted strings, whole-file writes and removals, folder
 * trees and in-memory copies of corpus arrays. They use only core/vfs and
 * core/base, so every module's tests may link them. Every failure is a
 * Criterion assertion. */
#ifndef TFS_VFS_TEST_UTIL_H
#define TFS_VFS_TEST_UTIL_H

#include <stddef.h>

#include "tfs_err.h"
#include "tfs_vfs.h"

/* printf into a new string (free()). */
char *vt_fmt(const char *f, ...) TFS_PRINTF(1, 2);

/* Writes a whole file; removes a file or an empty folder. */
void vt_put(struct tfs_vfs *v, const char *path, const void *data,
	    size_t len);
void vt_rm(struct tfs_vfs *v, const char *path);
/* Makes a folder and every missing parent. */
void vt_mkdir_p(struct tfs_vfs *v, const char *path);
/* Removes a tree if it is there; failures are ignored (clean-up). */
void vt_rm_tree(struct tfs_vfs *v, const char *path);

/* Copies the tree at sp of src to dp of dst (dp must not exist). */
void vt_copy_tree(struct tfs_vfs *src, const char *sp, struct tfs_vfs *dst,
		  const char *dp);
/* A new in-memory backend holding a copy of corpus array `name` (relative
 * to the corpus root) at "/A". */
struct tfs_vfs *vt_mem_copy(const char *name);

#endif
