/* tilefs: the FUSE low-level handlers for looking and reading (the
 * writing ones are in fuse_ll_write.c). Each handler tfsd_ll_x() hands
 * the request to do_x(), which does the work on the virtual tree and the
 * file content modules and returns 0 or an errno from the error table,
 * and then replies exactly once. Every failure that says something (a bad
 * selection, a corrupt tile, a missing key) becomes one log line naming
 * the path. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fuse_ll.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"
#include "tfs_s3.h"

/* Whether the work for req should stop: the kernel interrupted it (its
 * caller got a signal, SIGKILL included) or the daemon is stopping. Asked
 * between the steps of reads, counting passes and whole renderings. */
static bool read_stopped(void *ctx)
{
	fuse_req_t req = ctx;
	struct tfsd_ll *ll = tfsd__ll(req);

	return fuse_req_interrupted(req) ||
	       (ll->se && fuse_session_exited(ll->se));
}

static void tfsd_ll_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* open(O_TRUNC) arrives as one open, not open + setattr. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* 1 MiB requests: max_read must match -omax_read; the kernel's
	 * pages per request follow max_write. */
	conn->max_readahead = (unsigned)TFSD_MAX_READ;
	conn->max_read = (unsigned)TFSD_MAX_READ;
	conn->max_write = (unsigned)TFSD_MAX_READ;
}

/* ---- lookup, forget, getattr ---------------------------------------------- */

/* The entry of a file that is not of the view: a staged file (a fresh
 * entry every time, timeouts 0: it disappears at its commit) or an
 * ingest.log. 1 when vpath is neither. */
static int overlay_entry(struct tfsd_ll *ll, const char *vpath, bool ilog,
			 struct fuse_entry_param *ep)
{
	struct tfsd_staged *sf = ilog ? NULL : tfsd__staged_at(ll, vpath);
	struct tfsd_inode *in;
	char *dir = NULL;

	if (!sf && (!ilog || !tfsd_ilog_dir(&ll->fs, vpath, &dir)))
		return 1;
	memset(ep, 0, sizeof(*ep));
	in = tfsd_inode_ref(ll->itab, vpath, 0);
	if (in) {
		ep->ino = tfsd__ino(ll, in);
		if (sf)
			tfsd__staged_stat(sf, ep->ino, &ep->attr);
		else
			tfsd__ilog_stat(ll, dir, ep->ino, &ep->attr);
	}
	if (sf)
		tfsd_staged_put(ll->fs.staging, sf);
	tfs_free(dir);
	return in ? 0 : tfs_err_errno(TFS_E_NOMEM);
}

static int lookup_path(struct tfsd_ll *ll, const char *vpath,
		       struct fuse_entry_param *ep)
{
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;
	int err;

	tfs_diag_init(&d);
	err = overlay_entry(ll, vpath, false, ep);
	if (err != 1)
		return err;
	e = tfsd_resolve(&ll->fs, vpath, &n, &d);
	if (e == TFS_E_NOT_FOUND && (err = overlay_entry(ll, vpath, true, ep)) != 1)
		return err;
	if (e == TFS_E_NOT_FOUND) {
		/* A negative entry, cached as long as the folder's view. */
		memset(ep, 0, sizeof(*ep));
		ep->entry_timeout = tfsd__timeout(ll, NULL);
		if (d.code)
			tfs_log(TFS_LOG_INFO, "'/%s': %s", vpath,
				tfs_diag_msg(&d));
		return 0;
	}
	if (e)
		return tfsd__fail(vpath, e, &d);
	e = tfsd__entry(ll, &n, vpath, ep, &d);
	for (int i = 0; i < TFSD_STALE_TRIES &&
			tfsd__stale_retry(ll, &n, vpath, e, &d); i++) {
		tfs_diag_init(&d);
		e = tfsd__entry(ll, &n, vpath, ep, &d);
	}
	tfsd_node_release(&ll->fs, &n);
	return e ? tfsd__fail(vpath, e, &d) : 0;
}

static int do_lookup(struct tfsd_ll *ll, fuse_ino_t parent, const char *name,
		     struct fuse_entry_param *ep)
{
	char *vpath = tfsd__child_path(tfsd__inode(ll, parent), name);
	int err;

	if (!vpath)
		return tfs_err_errno(TFS_E_NOMEM);
	err = lookup_path(ll, vpath, ep);
	tfs_free(vpath);
	return err;
}

static void tfsd_ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tfsd_stop stop = {.fn = read_stopped, .ctx = req};
	const struct tfsd_stop *outer = tfsd_stop_swap(&stop);
	struct fuse_entry_param ep;
	int err = do_lookup(tfsd__ll(req), parent, name, &ep);

	tfsd_stop_swap(outer);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &ep);
}

static void forget_one(struct tfsd_ll *ll, fuse_ino_t ino, uint64_t nlookup)
{
	/* An underflow is logged by the table; a forget has no reply. */
	enum tfs_err e = tfsd_inode_unref(ll->itab, tfsd__inode(ll, ino), nlookup);

	(void)e;
}

static void tfsd_ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(tfsd__ll(req), ino, nlookup);
	fuse_reply_none(req);
}

static void tfsd_ll_forget_multi(fuse_req_t req, size_t count,
				 struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		forget_one(tfsd__ll(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

int tfsd__getattr(struct tfsd_ll *ll, fuse_ino_t ino,
		  struct fuse_file_info *fi, struct stat *st, double *timeout)
{
	struct tfsd_inode *in = tfsd__inode(ll, ino);
	struct tfsd_fh *h = tfsd__fh(fi);
	struct tfsd_staged *sf = h ? h->sf : NULL;
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;
	char *dir;

	*timeout = 0;
	if (sf || (sf = tfsd__staged_at(ll, in->vpath)) != NULL) {
		tfsd__staged_stat(sf, ino, st);
		if (!(h && h->sf == sf))
			tfsd_staged_put(ll->fs.staging, sf);
		return 0;
	}
	tfs_diag_init(&d);
	e = tfsd_resolve(&ll->fs, in->vpath, &n, &d);
	if (e == TFS_E_NOT_FOUND && tfsd_ilog_dir(&ll->fs, in->vpath, &dir)) {
		tfsd__ilog_stat(ll, dir, ino, st);
		tfs_free(dir);
		return 0;
	}
	if (e)
		return tfsd__fail(in->vpath, e, &d);
	e = tfsd__stat(ll, &n, in->vpath, ino, st, &d);
	for (int i = 0; i < TFSD_STALE_TRIES &&
			tfsd__stale_retry(ll, &n, in->vpath, e, &d); i++) {
		tfs_diag_init(&d);
		e = tfsd__stat(ll, &n, in->vpath, ino, st, &d);
	}
	if (!e && tfsd__version(&n) != in->version)
		(void)tfsd__inode_recall(in, st);
	else if (!e)
		tfsd__inode_remember(in, st);
	*timeout = tfsd__timeout(ll, &n);
	tfsd_node_release(&ll->fs, &n);
	return e ? tfsd__fail(in->vpath, e, &d) : 0;
}

static void tfsd_ll_getattr(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	struct tfsd_stop stop = {.fn = read_stopped, .ctx = req};
	const struct tfsd_stop *outer = tfsd_stop_swap(&stop);
	struct stat st;
	double timeout;
	int err = tfsd__getattr(tfsd__ll(req), ino, fi, &st, &timeout);

	tfsd_stop_swap(outer);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, timeout);
}

/* ---- Folders ---------------------------------------------------------------- */

/* A directory listing taken at opendir, served by offset. */
struct dirlist {
	uint32_t magic;       /* 0: tells it from a struct tfsd_fh */
	struct tfs_buf names; /* NUL-separated */
	struct tfs_buf kinds; /* one byte per name: 1 = folder */
	size_t count;
	bool failed;
};

static bool dirlist_add(void *ctx, const char *name, bool is_dir)
{
	struct dirlist *dl = ctx;

	if (tfs_buf_append(&dl->names, name, strlen(name) + 1) ||
	    tfs_buf_append_u8(&dl->kinds, is_dir)) {
		dl->failed = true;
		return false;
	}
	dl->count++;
	return true;
}

/* Adds a name unless listed already (a staged file over a view file). */
static bool dirlist_add_new(void *ctx, const char *name, bool is_dir)
{
	struct dirlist *dl = ctx;
	size_t pos = 0;

	for (size_t i = 0; i < dl->count; i++) {
		const char *have = (const char *)dl->names.data + pos;

		if (strcmp(have, name) == 0)
			return true;
		pos += strlen(have) + 1;
	}
	return dirlist_add(ctx, name, is_dir);
}

static void dirlist_free(struct dirlist *dl)
{
	if (!dl)
		return;
	tfs_buf_release(&dl->names);
	tfs_buf_release(&dl->kinds);
	tfs_free(dl);
}

/* Lists folder n (at vpath) into dl: the view's names, then files being
 * written and an ingest.log that the view does not show. */
static enum tfs_err dirlist_fill(struct tfsd_ll *ll, struct dirlist *dl,
				 const struct tfsd_node *n, const char *vpath,
				 struct tfs_diag *d)
{
	enum tfs_err e;

	if (!tfsd_node_is_dir(n))
		return tfs_fail(d, TFS_E_INVALID, "not a folder");
	e = tfsd_list(&ll->fs, n, dirlist_add, dl, d);
	if (e)
		return e;
	if (ll->fs.staging)
		tfsd_staging_list(ll->fs.staging, vpath, dirlist_add_new, dl);
	if (ll->fs.ilog && (n->kind == TFSD_N_ARRAY || n->kind == TFSD_N_FOLDER) &&
	    tfsd_ilog_has(ll->fs.ilog, vpath))
		dirlist_add_new(dl, "ingest.log", false);
	if (dl->failed)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

static int do_opendir(struct tfsd_ll *ll, fuse_ino_t ino,
		      struct fuse_file_info *fi)
{
	struct tfsd_inode *in = tfsd__inode(ll, ino);
	struct dirlist *dl = tfs_callocn(1, sizeof(*dl));
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;

	if (!dl)
		return tfs_err_errno(TFS_E_NOMEM);
	tfs_diag_init(&d);
	tfs_buf_init(&dl->names, TFS_BUF_NO_MAX);
	tfs_buf_init(&dl->kinds, TFS_BUF_NO_MAX);
	dirlist_add(dl, ".", true);
	dirlist_add(dl, "..", true);
	e = tfsd_resolve(&ll->fs, in->vpath, &n, &d);
	if (!e) {
		e = dirlist_fill(ll, dl, &n, in->vpath, &d);
		if (!e)
			fi->cache_readdir = tfsd_node_immutable(&ll->fs, &n);
		tfsd_node_release(&ll->fs, &n);
	}
	if (e) {
		dirlist_free(dl);
		return tfsd__fail(in->vpath, e, &d);
	}
	fi->fh = (uint64_t)(uintptr_t)dl;
	return 0;
}

static void tfsd_ll_opendir(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	int err = do_opendir(tfsd__ll(req), ino, fi);

	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_open(req, fi);
}

/* The entry readdirplus gives entry i of folder dir (inode in): with
 * attributes and a lookup reference when the name resolves now, else
 * without (a name only, as readdir gives). */
static void dir_entry(struct tfsd_ll *ll, const struct tfsd_node *dir,
		      const struct tfsd_inode *in, const char *name,
		      struct fuse_entry_param *ep)
{
	struct tfsd_node n;
	struct tfs_diag d;
	char *vpath;

	if (!dir || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return;
	vpath = tfsd__child_path(in, name);
	if (!vpath)
		return;
	tfs_diag_init(&d);
	if (tfsd_resolve_child(&ll->fs, dir, name, &n, &d) == TFS_E_OK) {
		struct fuse_entry_param got;

		if (tfsd__entry(ll, &n, vpath, &got, &d) == TFS_E_OK)
			*ep = got;
		tfsd_node_release(&ll->fs, &n);
	}
	tfs_free(vpath);
}

/* Fills buf (size bytes) with the entries of the listing of fi from off
 * on; plus: with each entry's attributes, so that `ls -l` and file
 * managers need no lookup per entry. *used: the bytes filled. */
static int do_readdir(fuse_req_t req, struct tfsd_ll *ll, fuse_ino_t ino,
		      size_t size, off_t off, struct fuse_file_info *fi,
		      bool plus, char *buf, size_t *used)
{
	struct dirlist *dl = (struct dirlist *)(uintptr_t)fi->fh;
	struct tfsd_inode *in = tfsd__inode(ll, ino);
	struct tfsd_node dir;
	struct tfs_diag d;
	bool have_dir = false;
	size_t pos = 0;

	tfs_diag_init(&d);
	if (plus)
		have_dir = tfsd_resolve(&ll->fs, in->vpath, &dir, &d) == TFS_E_OK;
	*used = 0;
	for (size_t i = 0; i < dl->count; i++) {
		const char *name = (const char *)dl->names.data + pos;
		struct fuse_entry_param ep;
		size_t need;

		pos += strlen(name) + 1;
		if ((off_t)i < off)
			continue;
		/* d_ino 0 entries are skipped by readdir(3); the kernel
		 * gives stat's own inode numbers anyway. */
		memset(&ep, 0, sizeof(ep));
		ep.attr.st_ino = i + 1;
		ep.attr.st_mode = dl->kinds.data[i] ? S_IFDIR : S_IFREG;
		if (plus) {
			dir_entry(ll, have_dir ? &dir : NULL, in, name, &ep);
			need = fuse_add_direntry_plus(req, buf + *used,
						      size - *used, name, &ep,
						      (off_t)(i + 1));
		} else {
			need = fuse_add_direntry(req, buf + *used, size - *used,
						 name, &ep.attr, (off_t)(i + 1));
		}
		if (need > size - *used) {
			/* Not sent: the lookup it took is given back. */
			if (ep.ino)
				forget_one(ll, ep.ino, 1);
			break;
		}
		*used += need;
	}
	if (have_dir)
		tfsd_node_release(&ll->fs, &dir);
	return 0;
}

/* readdir and readdirplus: one listing, with or without attributes. */
static void readdir_reply(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi, bool plus)
{
	char *buf = tfs_malloc(size ? size : 1);
	size_t used = 0;
	int err = buf ? do_readdir(req, tfsd__ll(req), ino, size, off, fi, plus,
				   buf, &used)
		      : tfs_err_errno(TFS_E_NOMEM);

	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, used);
	tfs_free(buf);
}

static void tfsd_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fuse_file_info *fi)
{
	readdir_reply(req, ino, size, off, fi, false);
}

static void tfsd_ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
				off_t off, struct fuse_file_info *fi)
{
	readdir_reply(req, ino, size, off, fi, true);
}

static void tfsd_ll_releasedir(fuse_req_t req, fuse_ino_t ino,
			       struct fuse_file_info *fi)
{
	(void)ino;
	dirlist_free((struct dirlist *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* ---- open, read, release ---------------------------------------------------- */

/* A staged file just made for a request that failed: unlisted, its
 * references dropped. */
static void stage_abandon(struct tfsd_ll *ll, struct tfsd_staged *sf)
{
	tfsd_staged_closed(ll->fs.staging, sf);
	tfsd_staged_unlist(ll->fs.staging, sf);
	tfsd_staged_put(ll->fs.staging, sf);
}

/* An open for writing: a new staged file for vpath, seeded with the
 * current bytes unless O_TRUNC. */
static int open_write(struct tfsd_ll *ll, const char *vpath,
		      struct fuse_file_info *fi)
{
	struct tfsd_staged *sf;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfsd_stage_new(&ll->fs, vpath, !(fi->flags & O_TRUNC), &sf, &d);
	if (!e && !tfsd_wtarget_commits(&sf->target)) {
		/* An existing file of the view that no write means anything
		 * for (schema.json of an array, info.json). */
		stage_abandon(ll, sf);
		e = tfs_fail(&d, TFS_E_PERM, "this file cannot be written");
	}
	if (e)
		return tfsd__fail(vpath, e, &d);
	return tfsd__open_staged(ll, sf, fi, true);
}

/* An open for reading of a file of the view, or of an ingest.log. */
static int open_read(struct tfsd_ll *ll, struct tfsd_inode *in,
		     struct fuse_file_info *fi, struct tfsd_fh *h)
{
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;
	char *dir;

	tfs_diag_init(&d);
	e = tfsd_resolve(&ll->fs, in->vpath, &n, &d);
	if (e == TFS_E_NOT_FOUND && tfsd_ilog_dir(&ll->fs, in->vpath, &dir)) {
		e = tfsd_ilog_render(ll->fs.ilog, dir, &h->doc);
		tfs_free(dir);
		fi->direct_io = 1;
		return e ? tfs_err_errno(TFS_E_NOMEM) : 0;
	}
	if (e)
		return tfsd__fail(in->vpath, e, &d);
	if (tfsd_node_is_dir(&n)) {
		tfsd_node_release(&ll->fs, &n);
		return tfs_err_errno(TFS_E_IS_DIR);
	}
	e = tfsd_file_open(&ll->fs, &n, in->vpath, &h->rf, &d);
	for (int i = 0; i < TFSD_STALE_TRIES &&
			tfsd__stale_retry(ll, &n, in->vpath, e, &d); i++) {
		tfs_diag_init(&d);
		e = tfsd_file_open(&ll->fs, &n, in->vpath, &h->rf, &d);
	}
	if (!e) {
		/* An inode of an older version (the path shows a newer one
		 * now) has that version's size in the kernel: the bytes of
		 * this newer one go around the page cache and its size, to
		 * their end. */
		fi->direct_io = tfsd_file_direct(h->rf) ||
				(in->version && tfsd__version(&n) != in->version);
		/* The page cache of this inode holds its version's bytes; a
		 * stale inode (the path now shows a newer version) is
		 * emptied. */
		fi->keep_cache = !fi->direct_io &&
				 tfsd__version(&n) == in->version;
	}
	tfsd_node_release(&ll->fs, &n);
	return e ? tfsd__fail(in->vpath, e, &d) : 0;
}

static int do_open(struct tfsd_ll *ll, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	struct tfsd_inode *in = tfsd__inode(ll, ino);
	struct tfsd_staged *sf = tfsd__staged_at(ll, in->vpath);
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY ||
		       (fi->flags & O_TRUNC);
	struct tfsd_fh *h;
	int err;

	if (writing && ll->fs.cfg.read_only) {
		tfsd_staged_put(ll->fs.staging, sf);
		return tfs_err_errno(TFS_E_READONLY);
	}
	if (sf)
		return tfsd__open_staged(ll, sf, fi, false);
	if (writing)
		return open_write(ll, in->vpath, fi);
	h = tfsd__fh_new(ll);
	if (!h)
		return tfs_err_errno(TFS_E_NOMEM);
	err = open_read(ll, in, fi, h);
	if (err) {
		tfsd__fh_free(ll, h);
		return err;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static void tfsd_ll_open(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	struct tfsd_stop stop = {.fn = read_stopped, .ctx = req};
	const struct tfsd_stop *outer = tfsd_stop_swap(&stop);
	int err = do_open(tfsd__ll(req), ino, fi);

	tfsd_stop_swap(outer);
	if (err)
		fuse_reply_err(req, err);
	/* libfuse returns -ENOENT when the open was interrupted: the
	 * kernel will send no release for it. */
	else if (fuse_reply_open(req, fi) == -ENOENT)
		tfsd__fh_close(tfsd__ll(req), tfsd__fh(fi));
}

/* Reads up to size bytes at off of the open file of fi into *buf
 * (*cap bytes, tfsd_spare_give); *got of them. */
static int do_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi, uint8_t **buf, size_t *cap,
		   size_t *got)
{
	struct tfsd_ll *ll = tfsd__ll(req);
	struct tfsd_stop stop = {.fn = read_stopped, .ctx = req};
	struct tfsd_fh *h = tfsd__fh(fi);
	struct tfs_diag d;
	enum tfs_err e = TFS_E_OK;

	*got = 0;
	if (!h)
		return tfs_err_errno(TFS_E_BAD_HANDLE);
	if (size > TFSD_MAX_READ * 4)
		size = TFSD_MAX_READ * 4;
	*buf = tfsd_spare_take(size ? size : 1, cap);
	if (!*buf)
		return tfs_err_errno(TFS_E_NOMEM);
	tfs_diag_init(&d);
	if (h->sf) {
		ssize_t r = pread(h->sf->fd, *buf, size, off);

		if (r < 0)
			return errno;
		*got = (size_t)r;
	} else if (h->rf) {
		e = tfsd_file_read_stop(&ll->fs, h->rf, (uint64_t)off, *buf,
					size, got, &stop, &d);
	} else if ((uint64_t)off < h->doc.len) {
		*got = h->doc.len - (size_t)off < size ? h->doc.len - (size_t)off
						       : size;
		memcpy(*buf, h->doc.data + off, *got);
	}
	return e ? tfsd__fail(tfsd__inode(ll, ino)->vpath, e, &d) : 0;
}

static void tfsd_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			 off_t off, struct fuse_file_info *fi)
{
	struct tfsd_stop stop = {.fn = read_stopped, .ctx = req};
	const struct tfsd_stop *outer = tfsd_stop_swap(&stop);
	uint8_t *buf = NULL;
	size_t got, cap = 0;
	int err = do_read(req, ino, size, off, fi, &buf, &cap, &got);

	tfsd_stop_swap(outer);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, (const char *)buf, got);
	tfsd_spare_give(buf, cap);
}

static void tfsd_ll_release(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	(void)ino;
	tfsd__fh_close(tfsd__ll(req), tfsd__fh(fi));
	fuse_reply_err(req, 0);
}

/* ---- statfs and extended attributes ------------------------------------------ */

/* df and tools that check for room see SOURCE's storage (a bucket: plenty
 * of room, as S3 tools say). */
static int do_statfs(struct tfsd_ll *ll, struct statvfs *sv)
{
	struct tfs_space room;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_vfs_space(ll->fs.cfg.vfs, ll->fs.cfg.source, &room, &d);
	if (e) {
		tfs_log(TFS_LOG_WARN, "statfs: %s", tfs_diag_msg(&d));
		return tfs_err_errno(e);
	}
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = (unsigned long)room.block_size;
	sv->f_blocks = (fsblkcnt_t)room.blocks;
	sv->f_bfree = (fsblkcnt_t)room.blocks_free;
	sv->f_bavail = (fsblkcnt_t)room.blocks_avail;
	sv->f_files = (fsfilcnt_t)room.files;
	sv->f_ffree = sv->f_favail = (fsfilcnt_t)room.files_free;
	sv->f_namemax = room.name_max;
	if (room.read_only)
		sv->f_flag |= ST_RDONLY;
	return 0;
}

static void tfsd_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	int err;

	(void)ino;
	err = do_statfs(tfsd__ll(req), &sv);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_statfs(req, &sv);
}

/* The value of extended attribute name of ino (NULL: the list of names)
 * into val, checked against the caller's size (0: the size alone, as the
 * protocol asks). */
static int do_xattr(struct tfsd_ll *ll, fuse_ino_t ino, const char *name,
		    size_t size, struct tfs_buf *val)
{
	struct tfsd_inode *in = tfsd__inode(ll, ino);
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;

	/* ls -l asks every file for ACLs and security labels: answer those
	 * without resolving the path. */
	if (name && strncmp(name, "user.tilefs.", 12) != 0)
		return tfs_err_errno(TFS_E_NO_ATTR);
	tfs_diag_init(&d);
	e = tfsd_resolve(&ll->fs, in->vpath, &n, &d);
	if (e)
		return tfsd__fail(in->vpath, e, &d);
	e = name ? tfsd_xattr_get(&ll->fs, &n, in->vpath, name, val)
		 : tfsd_xattr_list(&ll->fs, &n, in->vpath, val);
	tfsd_node_release(&ll->fs, &n);
	if (e == TFS_E_NOT_FOUND)
		e = TFS_E_NO_ATTR;
	else if (!e && size != 0 && size < val->len)
		e = TFS_E_RANGE;
	return tfs_err_errno(e);
}

static void xattr_reply(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	struct tfs_buf val;
	int err;

	tfs_buf_init(&val, TFS_BUF_NO_MAX);
	err = do_xattr(tfsd__ll(req), ino, name, size, &val);
	if (err)
		fuse_reply_err(req, err);
	else if (size == 0)
		fuse_reply_xattr(req, val.len);
	else
		fuse_reply_buf(req, (const char *)val.data, val.len);
	tfs_buf_release(&val);
}

static void tfsd_ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			     size_t size)
{
	xattr_reply(req, ino, name, size);
}

static void tfsd_ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	xattr_reply(req, ino, NULL, size);
}

const struct fuse_lowlevel_ops tfsd_ll_ops = {
	.init = tfsd_ll_init,
	.lookup = tfsd_ll_lookup,
	.forget = tfsd_ll_forget,
	.forget_multi = tfsd_ll_forget_multi,
	.getattr = tfsd_ll_getattr,
	.opendir = tfsd_ll_opendir,
	.readdir = tfsd_ll_readdir,
	.readdirplus = tfsd_ll_readdirplus,
	.releasedir = tfsd_ll_releasedir,
	.open = tfsd_ll_open,
	.read = tfsd_ll_read,
	.release = tfsd_ll_release,
	.write = tfsd_ll_write,
	.flush = tfsd_ll_flush,
	.fsync = tfsd_ll_fsync,
	.create = tfsd_ll_create,
	.setattr = tfsd_ll_setattr,
	.rename = tfsd_ll_rename,
	.unlink = tfsd_ll_unlink,
	.mkdir = tfsd_ll_mkdir,
	.rmdir = tfsd_ll_rmdir,
	.statfs = tfsd_ll_statfs,
	.getxattr = tfsd_ll_getxattr,
	.listxattr = tfsd_ll_listxattr,
};
