/* What the FUSE handlers share (fuse_ll.h): inode numbers, the attributes
 * and entries of resolved nodes, the retry of a step that met a file a
 * vacuum removed, open-file handles, and the notifications that make the
 * kernel forget what a commit changed. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse_ll.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"

/* Seconds the kernel may trust names and attributes: current views must
 * show new fragments within a second; versions never change. */
#define TTL_CURRENT 0.5
#define TTL_IMMUTABLE 86400.0

struct tfsd_inode *tfsd__inode(struct tfsd_ll *ll, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? tfsd_itable_root(ll->itab)
				   : (struct tfsd_inode *)(uintptr_t)ino;
}

fuse_ino_t tfsd__ino(struct tfsd_ll *ll, struct tfsd_inode *in)
{
	return in == tfsd_itable_root(ll->itab) ? FUSE_ROOT_ID
						: (fuse_ino_t)(uintptr_t)in;
}

char *tfsd__child_path(const struct tfsd_inode *parent, const char *name)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	if (tfs_buf_printf(&b, "%s%s%s%c", parent->vpath,
			   *parent->vpath ? "/" : "", name, '\0')) {
		tfs_buf_release(&b);
		return NULL;
	}
	return (char *)tfs_buf_detach(&b, NULL);
}

int tfsd__fail(const char *vpath, enum tfs_err e, const struct tfs_diag *d)
{
	if (d && d->code && e != TFS_E_NOT_FOUND && e != TFS_E_INTR)
		tfs_log(TFS_LOG_ERROR, "'/%s': %s", vpath, tfs_diag_msg(d));
	else if (d && d->code)
		tfs_log(TFS_LOG_INFO, "'/%s': %s", vpath, tfs_diag_msg(d));
	return tfs_err_errno(e);
}

/* ---- Nodes ----------------------------------------------------------------- */

double tfsd__timeout(struct tfsd_ll *ll, const struct tfsd_node *n)
{
	if (!n)
		return TTL_CURRENT;
	return tfsd_node_immutable(&ll->fs, n) ? TTL_IMMUTABLE : TTL_CURRENT;
}

uint64_t tfsd__version(const struct tfsd_node *n)
{
	return !tfsd_node_is_dir(n) && n->arr ? n->arr->gen : 0;
}

/* Whether writing into this folder (or to this file) means something
 * (SPEC §6), so that file managers and editors offer it: plain folders,
 * arrays, metadata/ and its values, an array's schema.json (evolution)
 * and data.csv, attribute folders and their raw slices. */
static bool node_takes_writes(struct tfsd_ll *ll, const struct tfsd_node *n)
{
	if (ll->fs.cfg.read_only || n->version_view)
		return false;
	switch (n->kind) {
	case TFSD_N_FOLDER:
	case TFSD_N_ARRAY:
	case TFSD_N_META_DIR:
		return true;
	case TFSD_N_FIELD:
		return n->arr && n->field >= (int)tfs_schema_dim_count(n->arr->schema);
	case TFSD_N_FILE:
		return n->file == TFSD_F_META_VALUE ||
		       (n->file == TFSD_F_SCHEMA && n->arr &&
			n->kind == TFSD_N_FILE) ||
		       /* data.csv: written back, a fragment (editors) */
		       (n->file == TFSD_F_SLICE && n->field < 0 &&
			n->sel_len == 0 && n->fmt == TFSR_FMT_CSV) ||
		       (n->file == TFSD_F_SLICE && n->field >= 0 && n->arr &&
			n->field >= (int)tfs_schema_dim_count(n->arr->schema) &&
			(tfsr_renderer_of(n->fmt)->flags & TFSR_R_WRITABLE));
	default:
		return false;
	}
}

/* Owner and permission bits of the source folder that a node shows (a
 * folder, or the array folder of everything inside an array), so that
 * with allow_other and default_permissions the kernel keeps a private
 * folder of SOURCE private. 0755 when it cannot be read. */
static mode_t node_owner(struct tfsd_ll *ll, const struct tfsd_node *n,
			 struct stat *st)
{
	const char *src = n->src;
	char *path = NULL;
	struct stat s;
	mode_t mode = 0755;

	if (!src && n->rel) {
		path = *n->rel ? tfs_path_join(ll->fs.cfg.source, n->rel)
			       : tfs_strdup(ll->fs.cfg.source);
		src = path;
	}
	if (src && tfsd_source_stat(&ll->fs.cfg, src, &s) == 0) {
		st->st_uid = s.st_uid;
		st->st_gid = s.st_gid;
		mode = s.st_mode & 0777;
	}
	tfs_free(path);
	return mode;
}

/* The time of a node: a folder's is its source folder's; a version's
 * folder has its own time; an array's folder and everything in it the
 * end time of the newest fragment of the version shown. */
static void node_mtime(struct tfsd_ll *ll, const struct tfsd_node *n,
		       struct stat *st)
{
	uint64_t ms = 0;

	if (n->kind == TFSD_N_FOLDER) {
		struct stat src;

		if (tfsd_source_stat(&ll->fs.cfg, n->src, &src) == 0)
			st->st_mtim = src.st_mtim;
	} else if (n->arr) {
		ms = tfsd_arr_newest(n->arr);
	} else if (n->kind == TFSD_N_ARRAY && n->version_view) {
		ms = n->timestamp;
	} else if (n->kind == TFSD_N_ARRAY && n->rel) {
		struct tfs_diag d;

		tfs_diag_init(&d);
		/* Remembered per view: an unreadable array keeps 0. */
		if (tfsd_arrays_newest(ll->fs.arrays, n->rel, n->timestamp,
				       &ms, &d))
			ms = 0;
	}
	if (n->kind != TFSD_N_FOLDER) {
		st->st_mtim.tv_sec = (time_t)(ms / 1000);
		st->st_mtim.tv_nsec = (long)(ms % 1000) * 1000000;
	}
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
}

enum tfs_err tfsd__stat(struct tfsd_ll *ll, const struct tfsd_node *n,
			const char *vpath, fuse_ino_t ino, struct stat *st,
			struct tfs_diag *d)
{
	struct tfsd_size sz;
	enum tfs_err e;
	mode_t mode;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 1 << 20;
	mode = node_owner(ll, n, st);
	node_mtime(ll, n, st);
	if (tfsd_node_is_dir(n)) {
		st->st_mode = S_IFDIR |
			      (mode & (node_takes_writes(ll, n) ? 0777 : 0555));
		st->st_nlink = 2;
		return TFS_E_OK;
	}
	st->st_mode = S_IFREG | (mode & (node_takes_writes(ll, n) ? 0666 : 0444));
	st->st_nlink = 1;
	e = tfsd_file_size(&ll->fs, n, vpath, &sz, d);
	if (e)
		return e;
	st->st_size = (off_t)sz.size;
	st->st_blocks = (blkcnt_t)((sz.size + 511) / 512);
	return TFS_E_OK;
}

void tfsd__inode_remember(struct tfsd_inode *in, const struct stat *st)
{
	int64_t ns = (int64_t)st->st_mtim.tv_sec * 1000000000 +
		     st->st_mtim.tv_nsec;

	if (!in->version)
		return;
	__atomic_store_n(&in->size, (uint64_t)st->st_size, __ATOMIC_RELAXED);
	__atomic_store_n(&in->mtime_ns, ns, __ATOMIC_RELAXED);
	__atomic_store_n(&in->stat_known, true, __ATOMIC_RELEASE);
}

bool tfsd__inode_recall(const struct tfsd_inode *in, struct stat *st)
{
	uint64_t size;
	int64_t ns;

	if (!in->version || !__atomic_load_n(&in->stat_known, __ATOMIC_ACQUIRE))
		return false;
	size = __atomic_load_n(&in->size, __ATOMIC_RELAXED);
	ns = __atomic_load_n(&in->mtime_ns, __ATOMIC_RELAXED);
	st->st_size = (off_t)size;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	st->st_mtim.tv_sec = (time_t)(ns / 1000000000);
	st->st_mtim.tv_nsec = (long)(ns % 1000000000);
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	return true;
}

enum tfs_err tfsd__entry(struct tfsd_ll *ll, const struct tfsd_node *n,
			 const char *vpath, struct fuse_entry_param *ep,
			 struct tfs_diag *d)
{
	struct tfsd_inode *in;
	enum tfs_err e;

	memset(ep, 0, sizeof(*ep));
	in = tfsd_inode_ref(ll->itab, vpath, tfsd__version(n));
	if (!in)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = tfsd__stat(ll, n, vpath, tfsd__ino(ll, in), &ep->attr, d);
	if (e) {
		/* The reference just taken: cannot underflow. */
		enum tfs_err u = tfsd_inode_unref(ll->itab, in, 1);

		(void)u;
		return e;
	}
	tfsd__inode_remember(in, &ep->attr);
	ep->ino = tfsd__ino(ll, in);
	ep->attr_timeout = tfsd__timeout(ll, n);
	ep->entry_timeout = ep->attr_timeout;
	return TFS_E_OK;
}

/* A file of a view found missing: a vacuum may have removed fragments
 * that the cached handle (re-checked at most twice a second; never, for a
 * fixed time) still lists. The array is opened again and n resolved
 * again, once, for a step that has served nothing yet; true (n replaced)
 * when the caller should retry it. A fixed time's view is opened again at
 * that time only if the fragments left show it the same
 * (tfsd_arrays_reopen); if they cannot, d (the step's failure) says why.
 * A damaged array fails the same way every time; a vacuum still running
 * may remove more under the retry, hence a few tries. */
bool tfsd__stale_retry(struct tfsd_ll *ll, struct tfsd_node *n,
		       const char *vpath, enum tfs_err e, struct tfs_diag *why)
{
	struct tfsd *fs = &ll->fs;
	struct tfsd_node fresh;
	struct tfsd_arr *again;
	struct tfs_diag d;

	if (e != TFS_E_CORRUPT || !n->arr || !n->rel)
		return false;
	tfs_diag_init(&d);
	if (n->arr->timestamp) {
		if (tfsd_arrays_reopen(fs->arrays, n->rel, n->arr, &again, &d)) {
			*why = d;
			return false;
		}
		if (!again)
			return false;
		tfsd_arr_put(fs->arrays, again);
	} else {
		tfsd_arrays_invalidate(fs->arrays, n->rel);
	}
	if (tfsd_resolve(fs, vpath, &fresh, &d))
		return false;
	tfsd_node_release(fs, n);
	*n = fresh;
	return true;
}

/* ---- Open files ------------------------------------------------------------ */

struct tfsd_fh *tfsd__fh(const struct fuse_file_info *fi)
{
	struct tfsd_fh *h = fi ? (struct tfsd_fh *)(uintptr_t)fi->fh : NULL;

	return h && h->magic == TFSD_FH_MAGIC ? h : NULL;
}

struct tfsd_fh *tfsd__fh_new(struct tfsd_ll *ll)
{
	struct tfsd_fh *h = tfs_callocn(1, sizeof(*h));

	if (!h)
		return NULL;
	h->magic = TFSD_FH_MAGIC;
	tfs_buf_init(&h->doc, TFS_BUF_NO_MAX);
	pthread_mutex_lock(&ll->fh_lock);
	h->next = ll->fhs;
	if (ll->fhs)
		ll->fhs->prev = h;
	ll->fhs = h;
	pthread_mutex_unlock(&ll->fh_lock);
	return h;
}

void tfsd__fh_free(struct tfsd_ll *ll, struct tfsd_fh *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&ll->fh_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		ll->fhs = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&ll->fh_lock);
	if (h->rf)
		tfsd_file_close(&ll->fs, h->rf);
	tfs_buf_release(&h->doc);
	tfs_free(h);
}

void tfsd__fh_free_all(struct tfsd_ll *ll)
{
	while (ll->fhs)
		tfsd__fh_free(ll, ll->fhs);
}

/* The last close of a staged file commits what a flush did not (none
 * came: only the logs can tell), and a committing name is gone then; a
 * temporary stays until it is renamed or removed. */
void tfsd__fh_close(struct tfsd_ll *ll, struct tfsd_fh *h)
{
	struct tfsd_staged *sf = h ? h->sf : NULL;

	if (sf && tfsd_staged_closed(ll->fs.staging, sf)) {
		char scope[4096];
		bool entry;
		int err = tfsd_staged_last_close(&ll->fs, sf, scope,
						 sizeof(scope), &entry);

		/* Nobody to tell: the file is closed; the commit logged. */
		(void)err;
		if (scope[0] != '\0')
			tfsd__inval_under(ll, scope, entry);
	}
	if (sf)
		tfsd_staged_put(ll->fs.staging, sf);
	tfsd__fh_free(ll, h);
}

int tfsd__open_staged(struct tfsd_ll *ll, struct tfsd_staged *sf,
		      struct fuse_file_info *fi, bool opened)
{
	struct tfsd_fh *h = tfsd__fh_new(ll);

	if (!h) {
		if (opened)
			tfsd_staged_closed(ll->fs.staging, sf);
		tfsd_staged_put(ll->fs.staging, sf);
		return tfs_err_errno(TFS_E_NOMEM);
	}
	if (!opened)
		tfsd_staged_opened(ll->fs.staging, sf);
	if (fi->flags & O_TRUNC) {
		pthread_mutex_lock(&sf->lock);
		if (ftruncate(sf->fd, 0) == 0)
			sf->dirty = true;
		pthread_mutex_unlock(&sf->lock);
	}
	h->sf = sf;
	fi->fh = (uint64_t)(uintptr_t)h;
	/* Written bytes go straight to the staged file; reads come back
	 * from it: no page cache to keep coherent (and no shared writable
	 * mmap: it needs one). */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->nonseekable = 0;
	return 0;
}

struct tfsd_staged *tfsd__staged_at(struct tfsd_ll *ll, const char *vpath)
{
	return ll->fs.staging ? tfsd_staged_find(ll->fs.staging, vpath) : NULL;
}

void tfsd__staged_stat(struct tfsd_staged *sf, fuse_ino_t ino, struct stat *st)
{
	tfsd_staged_stat(sf, st);
	st->st_ino = ino;
}

void tfsd__ilog_stat(struct tfsd_ll *ll, const char *dir, fuse_ino_t ino,
		     struct stat *st)
{
	struct tfsd_node n;
	struct tfs_diag d;

	tfsd_ilog_stat(&ll->fs, dir, st);
	st->st_ino = ino;
	/* The time of the folder it lies in (an array's: its newest
	 * fragment's). */
	tfs_diag_init(&d);
	if (!tfsd_resolve(&ll->fs, dir, &n, &d)) {
		node_mtime(ll, &n, st);
		tfsd_node_release(&ll->fs, &n);
	}
}

/* ---- Telling the kernel ---------------------------------------------------- */

void tfsd__inval_entry(struct tfsd_ll *ll, const char *vpath)
{
	const char *slash = strrchr(vpath, '/');
	const char *base = slash ? slash + 1 : vpath;
	char *dir = slash ? tfs_strndup(vpath, (size_t)(slash - vpath))
			  : tfs_strdup("");
	struct tfsd_inode *pin;

	if (!ll->se || !dir || !*base) {
		tfs_free(dir);
		return;
	}
	/* The folder's inode (folders have version 0), if the kernel has
	 * it; else it has no name under it to forget. */
	pin = tfsd_itable_find(ll->itab, dir, 0);
	if (pin)
		fuse_lowlevel_notify_inval_entry(ll->se, tfsd__ino(ll, pin),
						 base, strlen(base));
	tfs_free(dir);
}

/* Inode numbers are collected under the table's lock and notified
 * outside it: a notification may wait for the kernel, which may be
 * sending us a forget. */
void tfsd__inval_under(struct tfsd_ll *ll, const char *prefix, bool entry)
{
	struct tfsd_inode **inodes = NULL;
	struct tfs_buf names;
	size_t n = 0, pos = 0;
	enum tfs_err e;

	if (!ll->se)
		return;
	tfs_buf_init(&names, TFS_BUF_NO_MAX);
	/* Out of memory: those found are told, the others time out. */
	e = tfsd_itable_under(ll->itab, prefix, &inodes, &n, &names);
	(void)e;
	if (*prefix == '\0')
		fuse_lowlevel_notify_inval_inode(ll->se, FUSE_ROOT_ID, 0, 0);
	for (size_t i = 0; i < n; i++)
		fuse_lowlevel_notify_inval_inode(ll->se, tfsd__ino(ll, inodes[i]),
						 0, 0);
	/* Names: each inode's entry in its parent folder. */
	for (size_t i = 0; i < n; i++) {
		const char *vp = (const char *)names.data + pos;

		pos += strlen(vp) + 1;
		tfsd__inval_entry(ll, vp);
	}
	if (entry && *prefix)
		tfsd__inval_entry(ll, prefix);
	tfs_free(inodes);
	tfs_buf_release(&names);
}

int tfsd__staged_commit(struct tfsd_ll *ll, struct tfsd_staged *sf,
			bool invalidate, char *scope_out, size_t scope_cap,
			bool *scope_entry)
{
	char scope[4096];
	bool entry = false;
	int err;

	err = tfsd_staged_commit(&ll->fs, sf, scope, sizeof(scope), &entry);
	if (scope_out && scope_cap)
		snprintf(scope_out, scope_cap, "%s", scope);
	if (scope_entry)
		*scope_entry = entry;
	if (invalidate && scope[0] != '\0')
		tfsd__inval_under(ll, scope, entry);
	return err;
}
