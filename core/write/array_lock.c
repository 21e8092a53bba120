/* Writes that decide where their cells go from what the array holds
 * (appends after the last row, values added to an enumeration) exclude
 * each other: an exclusive flock on the array folder, from that choice to
 * the commit. The lock belongs to the descriptor, so threads of one
 * process (the daemon) exclude each other as processes do (tfs ingest).
 * Nothing is written: an array is never changed by being locked. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "tilefs/tilefs.h"

int tfs_array_lock(const char *path, struct tfs_vfs *vfs)
{
	struct tfs_vfs *posix = NULL, *v = vfs;
	struct tfs_diag d;
	int fd = -1;

	tfs_diag_init(&d);
	if (!v && tfs_vfs_posix_new(&posix) == TFS_E_OK)
		v = posix;
	if (v)
		fd = tfs_vfs_posix_open(v, path, O_RDONLY | O_DIRECTORY, 0, &d);
	tfs_vfs_free(posix);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

void tfs_array_unlock(int lock)
{
	if (lock >= 0)
		close(lock); /* releases the lock */
}
