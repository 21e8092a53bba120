/* tilefs: the FUSE low-level handlers that write (SPEC §6): files being
 * written are staged (tfsd_write.h) and committed at close, fsync or a
 * rename onto a name that means something; rm deletes metadata keys;
 * mkdir and rmdir make and remove plain folders of SOURCE. Same shape as
 * fuse_ll.c: do_x() returns 0 or an errno, the handler replies once, and
 * tells the kernel what a commit changed only after its reply (the kernel
 * holds the folders' locks until then). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse_ll.h"
#include "tfs_alloc.h"
#include "tfs_log.h"

/* ---- write, flush, fsync ---------------------------------------------------- */

static int do_write(struct tfsd_fh *h, const char *buf, size_t size,
		    off_t off, size_t *written)
{
	ssize_t r;
	int err = 0;

	if (!h || !h->sf)
		return tfs_err_errno(TFS_E_BAD_HANDLE);
	pthread_mutex_lock(&h->sf->lock);
	r = pwrite(h->sf->fd, buf, size, off);
	if (r >= 0)
		h->sf->dirty = true;
	else
		err = errno;
	pthread_mutex_unlock(&h->sf->lock);
	*written = r >= 0 ? (size_t)r : 0;
	return err;
}

void tfsd_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		   size_t size, off_t off, struct fuse_file_info *fi)
{
	size_t written;
	int err;

	(void)ino;
	err = do_write(tfsd__fh(fi), buf, size, off, &written);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_write(req, written);
}

/* close() and fsync(): the commit, its error returned there. */
static int do_flush(struct tfsd_ll *ll, struct tfsd_fh *h)
{
	if (!h || !h->sf)
		return 0;
	return tfsd__staged_commit(ll, h->sf, true, NULL, 0, NULL);
}

void tfsd_ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fuse_reply_err(req, do_flush(tfsd__ll(req), tfsd__fh(fi)));
}

void tfsd_ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		   struct fuse_file_info *fi)
{
	(void)datasync;
	tfsd_ll_flush(req, ino, fi);
}

/* ---- create, setattr -------------------------------------------------------- */

/* The staged file a create of vpath opens (a reference, opened once):
 * the one there, or a new one (*fresh). */
static int create_staged(struct tfsd_ll *ll, const char *vpath, int flags,
			 struct tfsd_staged **out, bool *fresh)
{
	struct tfsd_staged *sf;
	struct tfs_diag d;
	enum tfs_err e;

	*fresh = false;
	tfsd_staging_expire(ll->fs.staging, TFSD_TEMP_KEEP_MS);
	sf = tfsd__staged_at(ll, vpath);
	if (sf && (flags & O_EXCL)) {
		tfsd_staged_put(ll->fs.staging, sf);
		return tfs_err_errno(TFS_E_EXISTS);
	}
	if (sf) {
		tfsd_staged_opened(ll->fs.staging, sf);
	} else {
		tfs_diag_init(&d);
		e = tfsd_stage_new(&ll->fs, vpath, false, &sf, &d);
		if (e)
			return tfsd__fail(vpath, e, &d);
		*fresh = true;
	}
	*out = sf;
	return 0;
}

static int create_path(struct tfsd_ll *ll, const char *vpath, mode_t mode,
		       struct fuse_file_info *fi, struct fuse_entry_param *ep)
{
	struct tfsd_staged *sf = NULL;
	struct tfsd_inode *in;
	bool fresh;
	int err;

	err = create_staged(ll, vpath, fi->flags, &sf, &fresh);
	if (err)
		return err;
	if (fchmod(sf->fd, mode & 07777) != 0)
		tfs_log(TFS_LOG_DEBUG, "'/%s': chmod of staged file failed", vpath);
	in = tfsd_inode_ref(ll->itab, vpath, 0);
	if (!in) {
		tfsd_staged_closed(ll->fs.staging, sf);
		if (fresh)
			tfsd_staged_unlist(ll->fs.staging, sf);
		tfsd_staged_put(ll->fs.staging, sf);
		return tfs_err_errno(TFS_E_NOMEM);
	}
	memset(ep, 0, sizeof(*ep));
	ep->ino = tfsd__ino(ll, in);
	tfsd__staged_stat(sf, ep->ino, &ep->attr);
	err = tfsd__open_staged(ll, sf, fi, true);
	if (err) {
		/* The reference just taken: cannot underflow. */
		enum tfs_err u = tfsd_inode_unref(ll->itab, in, 1);

		(void)u;
	}
	return err;
}

/* The path of name in parent for a change: EROFS on a read-only mount. */
static int writable_child(struct tfsd_ll *ll, fuse_ino_t parent,
			  const char *name, char **vpath)
{
	if (ll->fs.cfg.read_only)
		return tfs_err_errno(TFS_E_READONLY);
	*vpath = tfsd__child_path(tfsd__inode(ll, parent), name);
	return *vpath ? 0 : tfs_err_errno(TFS_E_NOMEM);
}

static int do_create(struct tfsd_ll *ll, fuse_ino_t parent, const char *name,
		     mode_t mode, struct fuse_file_info *fi,
		     struct fuse_entry_param *ep)
{
	char *vpath;
	int err;

	err = writable_child(ll, parent, name, &vpath);
	if (err)
		return err;
	err = create_path(ll, vpath, mode, fi, ep);
	tfs_free(vpath);
	return err;
}

void tfsd_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param ep;
	int err = do_create(tfsd__ll(req), parent, name, mode, fi, &ep);

	if (err)
		fuse_reply_err(req, err);
	/* libfuse returns -ENOENT when the create was interrupted: the
	 * kernel will send no release for it. */
	else if (fuse_reply_create(req, &ep, fi) == -ENOENT)
		tfsd__fh_close(tfsd__ll(req), tfsd__fh(fi));
}

/* Applies attr (the to_set parts) to a staged file. */
static void staged_setattr(struct tfsd_staged *sf, const char *vpath,
			   const struct stat *attr, int to_set)
{
	pthread_mutex_lock(&sf->lock);
	if ((to_set & FUSE_SET_ATTR_SIZE) && ftruncate(sf->fd, attr->st_size) == 0)
		sf->dirty = true;
	if (to_set & FUSE_SET_ATTR_MODE && fchmod(sf->fd, attr->st_mode & 07777))
		tfs_log(TFS_LOG_DEBUG, "'/%s': chmod of staged file failed",
			vpath);
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
					 {.tv_nsec = UTIME_OMIT}};

		if (to_set & FUSE_SET_ATTR_ATIME)
			ts[0] = attr->st_atim;
		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		if (to_set & FUSE_SET_ATTR_MTIME)
			ts[1] = attr->st_mtim;
		if (to_set & FUSE_SET_ATTR_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		if (futimens(sf->fd, ts) != 0)
			tfs_log(TFS_LOG_DEBUG, "'/%s': utimens of staged file "
					       "failed",
				vpath);
	}
	pthread_mutex_unlock(&sf->lock);
}

/* chmod, chown, utimens and truncate: applied to a staged file, no-ops
 * on the view's files (rsync and cp -p set them after writing). */
static int do_setattr(struct tfsd_ll *ll, fuse_ino_t ino, struct stat *attr,
		      int to_set, struct fuse_file_info *fi, struct stat *st,
		      double *timeout)
{
	struct tfsd_inode *in = tfsd__inode(ll, ino);
	struct tfsd_fh *h = tfsd__fh(fi);
	struct tfsd_staged *sf = h ? h->sf : NULL;
	bool own = false;

	if (!sf) {
		sf = tfsd__staged_at(ll, in->vpath);
		own = sf != NULL;
	}
	if (!sf) {
		if (ll->fs.cfg.read_only)
			return tfs_err_errno(TFS_E_READONLY);
		if (to_set & FUSE_SET_ATTR_SIZE)
			return tfs_err_errno(TFS_E_PERM);
		return tfsd__getattr(ll, ino, NULL, st, timeout);
	}
	staged_setattr(sf, in->vpath, attr, to_set);
	tfsd__staged_stat(sf, ino, st);
	if (own)
		tfsd_staged_put(ll->fs.staging, sf);
	*timeout = 0;
	return 0;
}

void tfsd_ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		     int to_set, struct fuse_file_info *fi)
{
	struct stat st;
	double timeout;
	int err = do_setattr(tfsd__ll(req), ino, attr, to_set, fi, &st, &timeout);

	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, timeout);
}

/* ---- rename ------------------------------------------------------------------- */

/* What the kernel is told after a rename's reply: the commit's scope,
 * and the new name (the renamed file took it in the kernel's view, and
 * is gone). */
struct rename_after {
	char scope[4096];
	bool entry;
	char *to;
};

/* The staged file sf (at from) takes the name to, whose meaning is t
 * (taken over): onto a committing name the bytes are committed, else the
 * file is only renamed. */
static int rename_staged(struct tfsd_ll *ll, struct tfsd_staged *sf,
			 const char *from, struct tfsd_wtarget t,
			 struct rename_after *after)
{
	struct tfsd_wtarget old;
	struct tfs_diag d;
	int err;

	pthread_mutex_lock(&sf->lock);
	old = sf->target;
	sf->target = t;
	if (tfsd_wtarget_commits(&t))
		sf->dirty = true;
	pthread_mutex_unlock(&sf->lock);
	if (!tfsd_wtarget_commits(&t)) {
		tfsd_wtarget_release(&old);
		tfs_diag_init(&d);
		if (tfsd_staged_rename(ll->fs.staging, sf, after->to, &d) ==
		    TFS_E_OK)
			tfsd_itable_move(ll->itab, from, after->to);
		return 0;
	}
	err = tfsd__staged_commit(ll, sf, false, after->scope,
				  sizeof(after->scope), &after->entry);
	pthread_mutex_lock(&sf->lock);
	if (err) {
		/* Refused: the file keeps its old name and meaning. */
		t = sf->target;
		sf->target = old;
		sf->dirty = false;
		pthread_mutex_unlock(&sf->lock);
		tfsd_wtarget_release(&t);
	} else {
		pthread_mutex_unlock(&sf->lock);
		tfsd_wtarget_release(&old);
		tfsd_staged_unlist(ll->fs.staging, sf);
	}
	return err;
}

/* Renames of staged files: onto a committing name the bytes are
 * committed (rsync's and editors' rename into place), else the staged
 * file just takes the new name. Nothing else of the view is renamed. */
static int do_rename(struct tfsd_ll *ll, fuse_ino_t parent, const char *name,
		     fuse_ino_t newparent, const char *newname,
		     unsigned int flags, struct rename_after *after)
{
	char *from = tfsd__child_path(tfsd__inode(ll, parent), name);
	struct tfsd_staged *sf = NULL;
	struct tfsd_wtarget t;
	struct tfs_diag d;
	enum tfs_err e;
	int err;

	after->to = tfsd__child_path(tfsd__inode(ll, newparent), newname);
	if (!from || !after->to) {
		err = tfs_err_errno(TFS_E_NOMEM);
	} else if (ll->fs.cfg.read_only) {
		err = tfs_err_errno(TFS_E_READONLY);
	} else if (flags & RENAME_EXCHANGE) {
		err = tfs_err_errno(TFS_E_INVALID);
	} else if ((sf = tfsd__staged_at(ll, from)) == NULL) {
		tfs_log(TFS_LOG_INFO, "rename '/%s': only files being written "
				      "can be renamed",
			from);
		err = tfs_err_errno(TFS_E_PERM);
	} else {
		tfs_diag_init(&d);
		e = tfsd_write_classify(&ll->fs, after->to, &t, &d);
		err = e ? tfsd__fail(after->to, e, &d)
			: rename_staged(ll, sf, from, t, after);
	}
	tfsd_staged_put(ll->fs.staging, sf);
	tfs_free(from);
	return err;
}

void tfsd_ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		    fuse_ino_t newparent, const char *newname,
		    unsigned int flags)
{
	struct tfsd_ll *ll = tfsd__ll(req);
	struct rename_after after = {.scope = ""};
	int err = do_rename(ll, parent, name, newparent, newname, flags, &after);

	fuse_reply_err(req, err);
	if (!err && after.scope[0] != '\0') {
		tfsd__inval_under(ll, after.scope, after.entry);
		tfsd__inval_entry(ll, after.to);
	}
	tfs_free(after.to);
}

/* ---- unlink, mkdir, rmdir ----------------------------------------------------- */

/* rm of a metadata value: deletes the key (t: what vpath means, for the
 * caller to release; *deleted when the array changed). */
static int unlink_meta(struct tfsd_ll *ll, const char *vpath,
		       struct tfsd_wtarget *t, bool *deleted)
{
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfsd_resolve(&ll->fs, vpath, &n, &d);
	if (e)
		return tfsd__fail(vpath, e, &d);
	if (n.kind != TFSD_N_FILE || n.file != TFSD_F_META_VALUE) {
		e = tfsd_node_is_dir(&n) ? TFS_E_IS_DIR : TFS_E_PERM;
		tfsd_node_release(&ll->fs, &n);
		tfs_log(TFS_LOG_INFO, "rm '/%s': only metadata keys and files "
				      "being written can be removed",
			vpath);
		return tfs_err_errno(e);
	}
	tfsd_node_release(&ll->fs, &n);
	e = tfsd_write_classify(&ll->fs, vpath, t, &d);
	if (!e) {
		e = tfsd_write_meta_delete(&ll->fs, t, &d);
		tfsd_ilog_add(ll->fs.ilog, t->log_dir, t->name, e != TFS_E_OK,
			      e ? tfs_diag_msg(&d) : "deleted");
		if (!e) {
			tfsd_arrays_invalidate(ll->fs.arrays, t->rel);
			*deleted = true;
		}
	}
	return e ? tfsd__fail(vpath, e, &d) : 0;
}

/* rm: a staged file goes away; a metadata key is deleted. */
static int do_unlink(struct tfsd_ll *ll, fuse_ino_t parent, const char *name,
		     struct tfsd_wtarget *t, bool *deleted)
{
	struct tfsd_staged *sf;
	char *vpath;
	int err = 0;

	err = writable_child(ll, parent, name, &vpath);
	if (err)
		return err;
	sf = tfsd__staged_at(ll, vpath);
	if (sf) {
		tfsd_staged_unlist(ll->fs.staging, sf);
		tfsd_staged_put(ll->fs.staging, sf);
	} else {
		err = unlink_meta(ll, vpath, t, deleted);
	}
	tfs_free(vpath);
	return err;
}

void tfsd_ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tfsd_ll *ll = tfsd__ll(req);
	struct tfsd_wtarget t;
	bool deleted = false;
	int err;

	memset(&t, 0, sizeof(t));
	err = do_unlink(ll, parent, name, &t, &deleted);
	fuse_reply_err(req, err);
	if (deleted)
		tfsd__inval_under(ll, t.log_dir, false);
	tfsd_wtarget_release(&t);
}

/* The source folder a mkdir of name in parent makes (tfs_free), or an
 * errno. */
static int mkdir_source(struct tfsd_ll *ll, fuse_ino_t parent,
			const char *name, const char *vpath, char **src)
{
	struct tfsd_node dir;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfsd_resolve(&ll->fs, tfsd__inode(ll, parent)->vpath, &dir, &d);
	if (e)
		return tfsd__fail(vpath, e, &d);
	if (dir.kind != TFSD_N_FOLDER || name[0] == '.' ||
	    strncmp(name, "__", 2) == 0 || strchr(name, '/')) {
		tfsd_node_release(&ll->fs, &dir);
		tfs_log(TFS_LOG_INFO, "mkdir '/%s': folders are made in plain "
				      "folders only, not named '.*' or '__*'",
			vpath);
		return tfs_err_errno(TFS_E_PERM);
	}
	*src = tfs_path_join(dir.src, name);
	tfsd_node_release(&ll->fs, &dir);
	return *src ? 0 : tfs_err_errno(TFS_E_NOMEM);
}

/* mkdir in a plain folder of SOURCE makes a real folder (where a CSV file
 * or a schema.json then makes an array). */
static int do_mkdir(struct tfsd_ll *ll, fuse_ino_t parent, const char *name,
		    mode_t mode, struct fuse_entry_param *ep)
{
	char *vpath = NULL, *src = NULL;
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;
	int err;

	err = writable_child(ll, parent, name, &vpath);
	if (err)
		return err;
	err = mkdir_source(ll, parent, name, vpath, &src);
	if (!err)
		err = tfsd_source_mkdir(&ll->fs.cfg, src, mode & 07777);
	if (!err) {
		tfs_diag_init(&d);
		e = tfsd_resolve(&ll->fs, vpath, &n, &d);
		if (!e) {
			e = tfsd__entry(ll, &n, vpath, ep, &d);
			tfsd_node_release(&ll->fs, &n);
		}
		err = e ? tfsd__fail(vpath, e, &d) : 0;
	}
	tfs_free(src);
	tfs_free(vpath);
	return err;
}

void tfsd_ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode)
{
	struct fuse_entry_param ep;
	int err = do_mkdir(tfsd__ll(req), parent, name, mode, &ep);

	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &ep);
}

/* rmdir of an empty plain folder (not of an array, nor a group). */
static int do_rmdir(struct tfsd_ll *ll, fuse_ino_t parent, const char *name)
{
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_object kind;
	char *vpath;
	int err = 0;

	err = writable_child(ll, parent, name, &vpath);
	if (err)
		return err;
	tfs_diag_init(&d);
	if (tfsd_resolve(&ll->fs, vpath, &n, &d) != TFS_E_OK) {
		tfs_free(vpath);
		return tfs_err_errno(TFS_E_NOT_FOUND);
	}
	if (n.kind != TFSD_N_FOLDER || !n.src ||
	    tfs_object_type(ll->fs.cfg.vfs, n.src, &kind, &d) != TFS_E_OK ||
	    kind != TFS_OBJECT_NONE)
		err = tfs_err_errno(n.kind == TFSD_N_FILE ? TFS_E_NOT_DIR
							  : TFS_E_PERM);
	else if (tfsd_staging_busy(ll->fs.staging, vpath))
		err = tfs_err_errno(TFS_E_BUSY);
	else
		err = tfsd_source_rmdir(&ll->fs.cfg, n.src);
	tfsd_node_release(&ll->fs, &n);
	tfs_free(vpath);
	return err;
}

void tfsd_ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, do_rmdir(tfsd__ll(req), parent, name));
}
