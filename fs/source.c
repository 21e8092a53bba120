/* The daemon's own calls on SOURCE's folders (attributes, mkdir, rmdir,
 * listings) for what the storage interface does not carry: each resolves
 * its path through the configuration's rooted storage (tfsd_config.vfs),
 * so that no symbolic link below SOURCE is ever followed, then acts with
 * an *at() call relative to the folder so reached. */
#include "tfsd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tfs_alloc.h"

int tfsd_source_stat(const struct tfsd_config *c, const char *path,
		     struct stat *out)
{
	struct tfs_diag d;
	int fd, rc;

	tfs_diag_init(&d);
	fd = tfs_vfs_posix_open(c->vfs, path, O_PATH, 0, &d);
	if (fd < 0)
		return errno == ELOOP || errno == EXDEV ? ENOENT : errno;
	rc = fstat(fd, out) == 0 ? 0 : errno;
	close(fd);
	return rc;
}

/* The folder holding path (O_PATH), and path's last name in *name. */
static int open_parent(const struct tfsd_config *c, const char *path,
		       const char **name)
{
	const char *slash = strrchr(path, '/');
	struct tfs_diag d;
	char *parent;
	int fd, e;

	if (!slash || !slash[1] || !strcmp(slash + 1, ".") ||
	    !strcmp(slash + 1, ".."))
		return -EINVAL;
	parent = tfs_strndup(path, (size_t)(slash - path));
	if (!parent)
		return -ENOMEM;
	tfs_diag_init(&d);
	fd = tfs_vfs_posix_open(c->vfs, *parent ? parent : "/",
				O_PATH | O_DIRECTORY, 0, &d);
	e = errno;
	tfs_free(parent);
	if (fd < 0)
		return e == ELOOP || e == EXDEV ? -ENOENT : -e;
	*name = slash + 1;
	return fd;
}

int tfsd_source_mkdir(const struct tfsd_config *c, const char *path,
		      unsigned mode)
{
	const char *name;
	int fd = open_parent(c, path, &name);
	int rc;

	if (fd < 0)
		return -fd;
	rc = mkdirat(fd, name, (mode_t)mode) == 0 ? 0 : errno;
	close(fd);
	return rc;
}

int tfsd_source_rmdir(const struct tfsd_config *c, const char *path)
{
	const char *name;
	int fd = open_parent(c, path, &name);
	int rc;

	if (fd < 0)
		return -fd;
	rc = unlinkat(fd, name, AT_REMOVEDIR) == 0 ? 0 : errno;
	close(fd);
	return rc;
}

DIR *tfsd_source_opendir(const struct tfsd_config *c, const char *path)
{
	struct tfs_diag d;
	DIR *dp;
	int fd, e;

	tfs_diag_init(&d);
	fd = tfs_vfs_posix_open(c->vfs, path, O_RDONLY | O_DIRECTORY, 0, &d);
	if (fd < 0) {
		if (errno == ELOOP || errno == EXDEV)
			errno = ENOENT;
		return NULL;
	}
	dp = fdopendir(fd);
	if (!dp) {
		e = errno;
		close(fd);
		errno = e;
	}
	return dp;
}
