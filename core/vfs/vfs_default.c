/* The storage a bare path names, for callers that were given no backend:
 * an s3:// URI is a bucket (settings from the environment, tfs_s3.h),
 * anything else the local file system. */
#include "tfs_vfs.h"

#include "tfs_alloc.h"
#include "tfs_s3.h"

enum tfs_err tfs_vfs_default_new(const char *path, struct tfs_vfs **out,
				 struct tfs_diag *d)
{
	struct tfs_vfs *v;
	char *root;
	enum tfs_err e;

	*out = NULL;
	if (!tfs_s3_is_uri(path)) {
		e = tfs_vfs_posix_new(out);
		if (e)
			return tfs_fail(d, e, "cannot set up file access");
		return TFS_E_OK;
	}
	/* The backend takes the URI's paths as they are ("s3://bucket/a"
	 * is key "a"), so the root it returns is not needed. */
	e = tfs_vfs_s3_open_uri(path, NULL, &v, &root, d);
	if (e)
		return e;
	tfs_free(root);
	*out = v;
	return TFS_E_OK;
}
