/* Staged files: the bytes written to a new file of the mount wait in a
 * private file of the staging folder until they are committed (at close,
 * fsync or a rename onto a committing name), so that nothing half written
 * ever lands in SOURCE. The table maps paths of the mount to staged files,
 * so that a file being written can be stat'ed, listed, read back, chmod'ed
 * and renamed like an ordinary one. */
#include "tfsd_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"

struct node {
	struct tfsd_staged *sf;
	struct node *next;
};

struct tfsd_staging {
	char *dir;
	bool own_dir; /* made here: removed by _free */
	pthread_mutex_t lock;
	struct node *list; /* protected by lock */
	uint64_t next_id;  /* protected by lock */
};

/* Whether name is prefix, a process id, then sep, and that process is
 * gone (another daemon's, killed mid-write). */
static bool of_dead_process(const char *name, const char *prefix, char sep)
{
	size_t n = strlen(prefix);
	long pid;
	char *end;

	if (strncmp(name, prefix, n) != 0)
		return false;
	pid = strtol(name + n, &end, 10);
	if (end == name + n || *end != sep || pid <= 0 ||
	    pid == (long)getpid())
		return false;
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Removes the files of the folder dp that dead daemons left: staged
 * files and the spill runs of their ingests (nobody will commit them).
 * Never follows a link: only regular files are removed. Returns how
 * many. */
static unsigned remove_dead_files(DIR *dp, bool all)
{
	struct dirent *de;
	unsigned n = 0;

	while ((de = readdir(dp)) != NULL) {
		struct stat sb;

		if (!all && !of_dead_process(de->d_name, "tilefs.", '.') &&
		    !of_dead_process(de->d_name, "tfs-spill-", '-'))
			continue;
		if (fstatat(dirfd(dp), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (unlinkat(dirfd(dp), de->d_name, 0) == 0)
			n++;
	}
	return n;
}

/* Staged files of daemons that died (killed mid-write) in a staging=
 * folder: their bytes were never committed and nobody will. */
static void remove_orphans(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	unsigned n;

	if (!dp) {
		if (fd >= 0)
			close(fd);
		return;
	}
	n = remove_dead_files(dp, false);
	closedir(dp);
	if (n)
		tfs_log(TFS_LOG_INFO,
			"staging folder '%s': removed %u file(s) of crashed "
			"writes",
			dir, n);
}

/* The staging folders (tilefs-staging.PID.*) that daemons killed before
 * their unmount left in tmp, with what they held. */
static void remove_dead_folders(const char *tmp)
{
	int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!dp) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dp)) != NULL) {
		struct stat sb;
		DIR *sub;
		int sfd;
		unsigned n;

		if (!of_dead_process(de->d_name, "tilefs-staging.", '.'))
			continue;
		sfd = openat(dirfd(dp), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0)
			continue;
		/* Only our own: a folder of this user, as mkdtemp made it. */
		if (fstat(sfd, &sb) != 0 || sb.st_uid != geteuid() ||
		    !(sub = fdopendir(sfd))) {
			close(sfd);
			continue;
		}
		n = remove_dead_files(sub, true);
		closedir(sub);
		if (unlinkat(dirfd(dp), de->d_name, AT_REMOVEDIR) == 0)
			tfs_log(TFS_LOG_INFO,
				"staging folder '%s/%s' of a crashed daemon "
				"removed (%u file(s))",
				tmp, de->d_name, n);
		else
			tfs_log(TFS_LOG_WARN,
				"staging folder '%s/%s' of a crashed daemon: "
				"cannot remove: %s",
				tmp, de->d_name, strerror(errno));
	}
	closedir(dp);
}

enum tfs_err tfsd_staging_new(const char *dir, struct tfsd_staging **out,
			      struct tfs_diag *d)
{
	struct tfsd_staging *st = tfs_callocn(1, sizeof(*st));

	*out = NULL;
	if (!st)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	pthread_mutex_init(&st->lock, NULL);
	if (dir) {
		struct stat sb;

		if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
			tfsd_staging_free(st);
			return tfs_fail(d, TFS_E_INVALID,
					"staging folder '%s': not a folder", dir);
		}
		st->dir = tfs_strdup(dir);
		remove_orphans(dir);
	} else {
		const char *tmp = getenv("TMPDIR");
		char prefix[64], tmpl[4096];

		remove_dead_folders(tmp && *tmp ? tmp : "/tmp");
		snprintf(prefix, sizeof(prefix), "tilefs-staging.%ld.",
			 (long)getpid());
		if (!tfs_temp_template(tmpl, sizeof(tmpl),
				       tmp && *tmp ? tmp : "/tmp", prefix) ||
		    !mkdtemp(tmpl)) {
			tfsd_staging_free(st);
			return tfs_fail(d, TFS_E_IO,
					"cannot make a staging folder: %s",
					strerror(errno));
		}
		st->dir = tfs_strdup(tmpl);
		st->own_dir = true;
		if (!st->dir)
			rmdir(tmpl);
	}
	if (!st->dir) {
		tfsd_staging_free(st);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	*out = st;
	return TFS_E_OK;
}

void tfsd_wtarget_release(struct tfsd_wtarget *t)
{
	tfs_free(t->rel);
	tfs_free(t->path);
	tfs_free(t->name);
	tfs_free(t->key);
	tfs_free(t->field);
	tfs_free(t->sel);
	tfs_free(t->log_dir);
	memset(t, 0, sizeof(*t));
}

const char *tfsd_staging_dir(const struct tfsd_staging *st)
{
	return st->dir;
}

static void staged_free(struct tfsd_staged *sf)
{
	if (sf->fd >= 0)
		close(sf->fd);
	if (sf->tmp)
		unlink(sf->tmp);
	tfs_free(sf->tmp);
	tfs_free(sf->vpath);
	tfsd_wtarget_release(&sf->target);
	pthread_mutex_destroy(&sf->lock);
	tfs_free(sf);
}

void tfsd_staging_free(struct tfsd_staging *st)
{
	struct node *n, *next;

	if (!st)
		return;
	for (n = st->list; n; n = next) {
		next = n->next;
		staged_free(n->sf);
		tfs_free(n);
	}
	if (st->own_dir && st->dir)
		rmdir(st->dir);
	tfs_free(st->dir);
	pthread_mutex_destroy(&st->lock);
	tfs_free(st);
}

static struct node **find_locked(struct tfsd_staging *st, const char *vpath)
{
	struct node **pp;

	for (pp = &st->list; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->sf->vpath, vpath) == 0)
			return pp;
	return NULL;
}

enum tfs_err tfsd_staged_create(struct tfsd_staging *st, const char *vpath,
				struct tfsd_wtarget *target,
				struct tfsd_staged **out, struct tfs_diag *d)
{
	struct tfsd_staged *sf = tfs_callocn(1, sizeof(*sf));
	struct node *n = tfs_callocn(1, sizeof(*n));
	struct tfs_buf b;
	uint64_t id;

	*out = NULL;
	if (!sf || !n) {
		tfs_free(sf);
		tfs_free(n);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	sf->fd = -1;
	pthread_mutex_init(&sf->lock, NULL);
	sf->vpath = tfs_strdup(vpath);
	pthread_mutex_lock(&st->lock);
	id = ++st->next_id;
	pthread_mutex_unlock(&st->lock);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	if (!sf->vpath ||
	    tfs_buf_printf(&b, "%s/tilefs.%ld.%llu%c", st->dir, (long)getpid(),
			   (unsigned long long)id, '\0')) {
		tfs_buf_release(&b);
		tfs_free(n);
		staged_free(sf);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	sf->tmp = (char *)tfs_buf_detach(&b, NULL);
	sf->fd = open(sf->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (sf->fd < 0) {
		enum tfs_err e = errno == ENOSPC ? TFS_E_NOSPC : TFS_E_IO;

		tfs_fail(d, e, "staged file '%s': %s", sf->tmp, strerror(errno));
		tfs_free(sf->tmp);
		sf->tmp = NULL;
		tfs_free(n);
		staged_free(sf);
		return e;
	}
	sf->target = *target;
	memset(target, 0, sizeof(*target));
	sf->refs = 2; /* the table's and the open's */
	sf->opens = 1;
	sf->listed = true;
	n->sf = sf;
	pthread_mutex_lock(&st->lock);
	if (find_locked(st, vpath)) {
		pthread_mutex_unlock(&st->lock);
		*target = sf->target;
		memset(&sf->target, 0, sizeof(sf->target));
		tfs_free(n);
		staged_free(sf);
		return tfs_fail(d, TFS_E_EXISTS, "'%s' is being written",
				vpath);
	}
	n->next = st->list;
	st->list = n;
	pthread_mutex_unlock(&st->lock);
	*out = sf;
	return TFS_E_OK;
}

struct tfsd_staged *tfsd_staged_find(struct tfsd_staging *st,
				     const char *vpath)
{
	struct tfsd_staged *sf = NULL;
	struct node **pp;

	pthread_mutex_lock(&st->lock);
	pp = find_locked(st, vpath);
	if (pp) {
		sf = (*pp)->sf;
		sf->refs++;
	}
	pthread_mutex_unlock(&st->lock);
	return sf;
}

void tfsd_staged_opened(struct tfsd_staging *st, struct tfsd_staged *sf)
{
	pthread_mutex_lock(&st->lock);
	sf->opens++;
	pthread_mutex_unlock(&st->lock);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool tfsd_staged_closed(struct tfsd_staging *st, struct tfsd_staged *sf)
{
	uint64_t now = now_ms();
	bool last;

	pthread_mutex_lock(&st->lock);
	last = --sf->opens == 0;
	if (last)
		sf->closed_ms = now;
	pthread_mutex_unlock(&st->lock);
	return last;
}

unsigned tfsd_staging_expire(struct tfsd_staging *st, uint64_t max_ms)
{
	uint64_t now = now_ms();
	struct node *gone = NULL, **pp;
	unsigned n = 0;

	pthread_mutex_lock(&st->lock);
	for (pp = &st->list; *pp;) {
		struct node *nd = *pp;

		if (nd->sf->opens == 0 && now - nd->sf->closed_ms > max_ms) {
			*pp = nd->next;
			nd->sf->listed = false;
			nd->next = gone;
			gone = nd;
			n++;
		} else {
			pp = &nd->next;
		}
	}
	pthread_mutex_unlock(&st->lock);
	while (gone) {
		struct node *nd = gone;

		gone = nd->next;
		tfs_log(TFS_LOG_INFO, "'/%s': dropped, closed %llu s ago and "
				      "never renamed",
			nd->sf->vpath,
			(unsigned long long)((now - nd->sf->closed_ms) / 1000));
		tfsd_staged_put(st, nd->sf);
		tfs_free(nd);
	}
	return n;
}

void tfsd_staged_put(struct tfsd_staging *st, struct tfsd_staged *sf)
{
	bool last;

	if (!sf)
		return;
	pthread_mutex_lock(&st->lock);
	last = --sf->refs == 0;
	pthread_mutex_unlock(&st->lock);
	if (last)
		staged_free(sf);
}

/* Takes sf out of the list; returns whether it was listed. Under lock. */
static bool unlist_locked(struct tfsd_staging *st, struct tfsd_staged *sf)
{
	for (struct node **pp = &st->list; *pp; pp = &(*pp)->next) {
		if ((*pp)->sf == sf) {
			struct node *n = *pp;

			*pp = n->next;
			tfs_free(n);
			sf->listed = false;
			return true;
		}
	}
	return false;
}

bool tfsd_staged_listed(struct tfsd_staging *st, struct tfsd_staged *sf)
{
	bool listed;

	pthread_mutex_lock(&st->lock);
	listed = sf->listed;
	pthread_mutex_unlock(&st->lock);
	return listed;
}

void tfsd_staged_unlist(struct tfsd_staging *st, struct tfsd_staged *sf)
{
	bool was;

	pthread_mutex_lock(&st->lock);
	was = unlist_locked(st, sf);
	pthread_mutex_unlock(&st->lock);
	if (was)
		tfsd_staged_put(st, sf); /* the table's reference */
}

enum tfs_err tfsd_staged_rename(struct tfsd_staging *st,
				struct tfsd_staged *sf, const char *new_vpath,
				struct tfs_diag *d)
{
	char *copy = tfs_strdup(new_vpath);
	struct tfsd_staged *replaced = NULL;
	struct node **pp;
	char *old;

	if (!copy)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	pthread_mutex_lock(&st->lock);
	pp = find_locked(st, new_vpath);
	if (pp && (*pp)->sf != sf) {
		struct node *n = *pp;

		replaced = n->sf;
		*pp = n->next;
		tfs_free(n);
		replaced->listed = false;
	}
	old = sf->vpath;
	sf->vpath = copy;
	pthread_mutex_unlock(&st->lock);
	tfs_free(old);
	tfsd_staged_put(st, replaced);
	return TFS_E_OK;
}

void tfsd_staging_list(struct tfsd_staging *st, const char *dir,
		       tfsd_list_fn fn, void *ctx)
{
	size_t dlen = strlen(dir);
	struct tfs_buf names;
	size_t pos = 0;

	/* Names are copied out first: fn may take other locks. */
	tfs_buf_init(&names, TFS_BUF_NO_MAX);
	pthread_mutex_lock(&st->lock);
	for (struct node *n = st->list; n; n = n->next) {
		const char *vp = n->sf->vpath, *base;

		if (dlen) {
			if (strncmp(vp, dir, dlen) != 0 || vp[dlen] != '/')
				continue;
			base = vp + dlen + 1;
		} else {
			base = vp;
		}
		if (strchr(base, '/'))
			continue;
		if (tfs_buf_append(&names, base, strlen(base) + 1))
			break;
	}
	pthread_mutex_unlock(&st->lock);
	while (pos < names.len) {
		const char *name = (const char *)names.data + pos;

		pos += strlen(name) + 1;
		if (!fn(ctx, name, false))
			break;
	}
	tfs_buf_release(&names);
}

bool tfsd_staging_busy(struct tfsd_staging *st, const char *vpath)
{
	size_t len = strlen(vpath);
	bool busy = false;

	pthread_mutex_lock(&st->lock);
	for (struct node *n = st->list; n && !busy; n = n->next)
		busy = strncmp(n->sf->vpath, vpath, len) == 0 &&
		       (n->sf->vpath[len] == '\0' || n->sf->vpath[len] == '/');
	pthread_mutex_unlock(&st->lock);
	return busy;
}
