/* Cleanup of crashed writes: a write that died before its commit leaves
 * an uncommitted fragment folder, which readers ignore (SPEC §6) but which
 * takes space. The daemon removes them at mount time and then
 * periodically, in a thread of its own, through tfs_array_cleanup. */
#include "tfsd_write.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_log.h"

/* Folder depth and folders visited per sweep at most: a huge SOURCE is
 * swept in part rather than for hours. */
#define SWEEP_DEPTH 16
#define SWEEP_FOLDERS 100000

struct sweep {
	struct tfsd *fs;
	uint64_t grace_ms;
	unsigned arrays, removed, folders;
	const atomic_bool *stop; /* NULL: never asked to stop */
};

/* Only arrays that open are cleaned: a format this build does not know
 * (an experimental version, a layout from before commits) may commit
 * its fragments in a way cleanup would not see, and its files are not
 * ours to judge. */
static bool array_opens(struct tfsd *fs, const char *path)
{
	size_t src_len = strlen(fs->cfg.source);
	const char *rel = strncmp(path, fs->cfg.source, src_len) == 0
				  ? path + src_len + (path[src_len] == '/')
				  : path;
	struct tfs_open_opts oo = {.vfs = fs->cfg.vfs,
				   .threads = 1,
				   .pool = fs->pool,
				   .key = tfsd_config_key(&fs->cfg, rel)};
	struct tfs_array *a = NULL;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_array_open(path, &oo, &a, &d);
	if (e == TFS_E_KEY && oo.key && !tfsd_config_has_own_key(&fs->cfg, rel)) {
		oo.key = NULL;
		tfs_diag_init(&d);
		e = tfs_array_open(path, &oo, &a, &d);
	}
	tfs_array_close(a);
	if (e)
		tfs_log(TFS_LOG_DEBUG, "cleanup of '%s' skipped: %s", path,
			tfs_diag_msg(&d));
	return e == TFS_E_OK;
}

static void sweep_dir(struct sweep *sw, const char *path, int depth)
{
	struct tfs_vfs *vfs = tfsd_arrays_vfs(sw->fs->arrays);
	enum tfs_object kind;
	struct tfs_diag d;
	struct tfs_stat st;
	struct tfs_dirlist l;

	if (depth > SWEEP_DEPTH || ++sw->folders > SWEEP_FOLDERS ||
	    (sw->stop && atomic_load(sw->stop)))
		return;
	tfs_diag_init(&d);
	if (tfs_object_type(sw->fs->cfg.vfs, path, &kind, &d) != TFS_E_OK)
		return;
	if (kind == TFS_OBJECT_ARRAY) {
		struct tfs_write_opts wo = {.vfs = sw->fs->cfg.vfs,
					    .pool = sw->fs->pool};
		unsigned removed = 0;

		sw->arrays++;
		if (tfs_vfs_stat(vfs, path, &st, NULL) || !st.exists ||
		    st.read_only || !array_opens(sw->fs, path))
			return;
		if (tfs_array_cleanup(path, &wo, sw->grace_ms, &removed, &d))
			tfs_log(TFS_LOG_ERROR, "cleanup of '%s': %s", path,
				tfs_diag_msg(&d));
		else if (removed)
			tfs_log(TFS_LOG_INFO,
				"cleanup of '%s': removed %u leftover(s) of "
				"crashed writes",
				path, removed);
		sw->removed += removed;
		return;
	}
	if (tfs_vfs_list(vfs, path, &l, NULL))
		return;
	/* Subfolders only, and not through a symbolic link. */
	for (size_t i = 0; i < l.count; i++) {
		const char *name = l.names[i];
		char *child;

		if (name[0] == '.' || strncmp(name, "__", 2) == 0)
			continue;
		child = tfs_path_join(path, name);
		if (!child)
			break;
		if (!tfs_vfs_lstat(vfs, child, &st, NULL) && st.is_dir)
			sweep_dir(sw, child, depth + 1);
		tfs_free(child);
	}
	tfs_dirlist_release(&l);
}

static void sweep_run(struct tfsd *fs, uint64_t grace_ms,
		      const atomic_bool *stop, unsigned *arrays,
		      unsigned *removed)
{
	struct sweep sw = {.fs = fs, .grace_ms = grace_ms, .stop = stop};
	struct tfs_space room;

	/* Nothing to remove on a read-only file system (and every removal
	 * would fail with a log line). */
	if (tfs_vfs_space(fs->cfg.vfs, fs->cfg.source, &room, NULL) ==
		    TFS_E_OK &&
	    room.read_only) {
		if (arrays)
			*arrays = 0;
		if (removed)
			*removed = 0;
		return;
	}

	sweep_dir(&sw, fs->cfg.source, 0);
	/* Spill files of crashed writers: the daemon's own, in its staging
	 * folder, and those of other programs' writes. */
	if (fs->staging)
		tfs_spill_cleanup(tfsd_staging_dir(fs->staging), &sw.removed);
	tfs_spill_cleanup(NULL, &sw.removed);
	tfs_log(TFS_LOG_INFO, "cleanup: %u array(s) checked, %u leftover(s) of "
			      "crashed writes removed",
		sw.arrays, sw.removed);
	if (arrays)
		*arrays = sw.arrays;
	if (removed)
		*removed = sw.removed;
}

void tfsd_cleanup_sweep(struct tfsd *fs, uint64_t grace_ms, unsigned *arrays,
			unsigned *removed)
{
	sweep_run(fs, grace_ms, NULL, arrays, removed);
}

struct tfsd_cleaner {
	struct tfsd *fs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* Set under lock (for the wait) and read by a sweep in progress,
	 * which stops early so that unmounting never waits for it. */
	atomic_bool stop;
};

static void *cleaner_main(void *arg)
{
	struct tfsd_cleaner *c = arg;

	/* The sweep opens every array under SOURCE, starting at the mount:
	 * at the lowest priority, it takes the CPUs only when the readers
	 * leave them (on Linux the nice value is per thread). */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) != 0)
		tfs_log(TFS_LOG_DEBUG, "cleanup: priority unchanged: %s",
			strerror(errno));
	for (;;) {
		struct timespec until;
		bool stop;

		if (c->fs->staging)
			tfsd_staging_expire(c->fs->staging, TFSD_TEMP_KEEP_MS);
		sweep_run(c->fs,
			  c->fs->cfg.cleanup_grace_set ? c->fs->cfg.cleanup_grace_ms
						       : TFSD_CLEANUP_GRACE_MS,
			  &c->stop, NULL, NULL);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += TFSD_CLEANUP_PERIOD_S;
		pthread_mutex_lock(&c->lock);
		while (!atomic_load(&c->stop) &&
		       pthread_cond_timedwait(&c->wake, &c->lock, &until) == 0)
			;
		stop = atomic_load(&c->stop);
		pthread_mutex_unlock(&c->lock);
		if (stop)
			break;
	}
	return NULL;
}

enum tfs_err tfsd_cleaner_start(struct tfsd *fs, struct tfsd_cleaner **out)
{
	struct tfsd_cleaner *c = tfs_callocn(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return TFS_E_NOMEM;
	c->fs = fs;
	atomic_init(&c->stop, false);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->wake, NULL);
	if (pthread_create(&c->thread, NULL, cleaner_main, c) != 0) {
		pthread_cond_destroy(&c->wake);
		pthread_mutex_destroy(&c->lock);
		tfs_free(c);
		return TFS_E_NOMEM;
	}
	*out = c;
	return TFS_E_OK;
}

void tfsd_cleaner_stop(struct tfsd_cleaner *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	atomic_store(&c->stop, true);
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	tfs_free(c);
}
