/* Small helpers of the writer: the clock, the greatest timestamp already
 * used in an array folder (format/write.md §2), durable whole-file writes,
 * and removing a staged folder. */
#include "write_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tfs_alloc.h"
#include "tfs_fragment.h"

uint64_t tfs__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static enum tfs_err max_in(struct tfs_vfs *vfs, const char *dir, uint64_t *max,
			   struct tfs_diag *d)
{
	struct tfs_dirlist l;
	enum tfs_err e;

	e = tfs_vfs_list_or_empty(vfs, dir, &l, d);
	if (e)
		return e;
	for (size_t i = 0; i < l.count; i++) {
		struct tfs_name_info ni;

		if (tfs_name_parse(l.names[i], &ni))
			continue;
		if (ni.t1 > *max)
			*max = ni.t1;
		if (ni.t2 > *max)
			*max = ni.t2;
	}
	tfs_dirlist_release(&l);
	return TFS_E_OK;
}

enum tfs_err tfs__max_timestamp(struct tfs_vfs *vfs, const char *path,
				bool meta, uint64_t *out, struct tfs_diag *d)
{
	static const char *const subs[] = { "__fragments", "__commits",
					    "__meta" };
	enum tfs_err e;

	*out = 0;
	if ((e = max_in(vfs, path, out, d)))
		return e;
	for (size_t i = 0; i < (meta ? 3u : 2u); i++) {
		char *dir = tfs_path_join(path, subs[i]);

		if (!dir)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		e = max_in(vfs, dir, out, d);
		tfs_free(dir);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

void tfs__empty_dir(struct tfs_vfs *vfs, const char *path)
{
	struct tfs_dirlist l;
	struct tfs_diag d;

	tfs_diag_init(&d);
	if (tfs_vfs_list(vfs, path, &l, &d))
		return;
	for (size_t i = 0; i < l.count; i++) {
		char *p = tfs_path_join(path, l.names[i]);

		if (p)
			tfs__remove_tree(vfs, p);
		tfs_free(p);
	}
	tfs_dirlist_release(&l);
}

enum tfs_err tfs__vfs_or_default(const char *path, struct tfs_vfs **vfs,
				 struct tfs_vfs **own, struct tfs_diag *d)
{
	enum tfs_err e;

	*own = NULL;
	if (*vfs)
		return TFS_E_OK;
	e = tfs_vfs_default_new(path, own, d);
	if (!e)
		*vfs = *own;
	return e;
}

enum tfs_err tfs__arraydir_open_all(struct tfs_vfs *vfs, const char *path,
				    const uint8_t *key,
				    struct tfs_arraydir **out,
				    struct tfs_diag *d)
{
	struct tfs_arraydir_opts ao;

	memset(&ao, 0, sizeof(ao));
	ao.key = key;
	ao.t1 = UINT64_MAX - 1; /* also those ahead of now */
	return tfs_arraydir_open(vfs, path, &ao, out, d);
}

void tfs__remove_tree(struct tfs_vfs *vfs, const char *path)
{
	struct tfs_diag d;
	struct tfs_stat st;

	tfs_diag_init(&d);
	if (tfs_vfs_stat(vfs, path, &st, &d) || !st.exists)
		return;
	if (st.is_dir)
		tfs__empty_dir(vfs, path);
	(void)tfs_vfs_remove(vfs, path, &d);
}

enum tfs_err tfs__write_file(struct tfs_vfs *vfs, const char *path,
			     const void *data, size_t len, struct tfs_diag *d)
{
	enum tfs_err e;

	if ((e = tfs_vfs_write(vfs, path, data, len, d)))
		return e;
	return tfs_vfs_fsync(vfs, path, d);
}

void tfs__wait_until_ms(uint64_t t)
{
	struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};

	for (int i = 0; i < 100 && tfs__now_ms() < t; i++)
		nanosleep(&ms, NULL);
}
