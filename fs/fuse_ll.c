/* tilefs: the FUSE daemon. The only file that knows about FUSE: it keeps
 * the inode table (one inode per path of the mount, like libfuse's
 * passthrough_ll keeps one per real inode), turns requests into calls on
 * the virtual tree and the file content modules, and replies exactly once.
 * Every failure becomes the errno of its tfs_err and, when it says
 * something (a bad selection, a corrupt tile, a missing key), one log line
 * naming the path. */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

#include "tfsd.h"
#include "tfsd_write.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"
#include "tfs_s3.h"

/* Seconds the kernel may trust names and attributes: current views must
 * show new fragments within a second; versions never change. */
#define TIMEOUT_CURRENT 0.5
#define TIMEOUT_IMMUTABLE 86400.0
#define INODE_BUCKETS ((size_t)1 << 16)
#define MAX_READ ((size_t)1 << 20)

/* ---- The inode table ------------------------------------------------------ */

/* An inode is a path and, for files inside an array view, the version of
 * the array it shows: when a new fragment makes a new version, a lookup
 * gives a new inode, so the page cache of a file open on the old version
 * (another inode) keeps the old bytes. */
struct inode {
	char *vpath;       /* "" for the root */
	uint64_t version;  /* tfsd_arr.gen of a file's array; 0 otherwise */
	uint64_t nlookup;  /* protected by itab.lock */
	struct inode *next; /* hash chain, protected by itab.lock */
};

static struct {
	pthread_mutex_t lock;
	struct inode *buckets[INODE_BUCKETS];
	struct inode root;
} itab = {.lock = PTHREAD_MUTEX_INITIALIZER, .root = {.vpath = (char *)""}};

static struct tfsd tfs_daemon;
/* The session, for notifications to the kernel after a write. */
static struct fuse_session *tfs_session;

static size_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return (size_t)(h & (INODE_BUCKETS - 1));
}

static struct inode *inode_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &itab.root : (struct inode *)(uintptr_t)ino;
}

static fuse_ino_t ino_of(struct inode *in)
{
	return in == &itab.root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)in;
}

/* The version that names the inode of a node. */
static uint64_t node_version(const struct tfsd_node *n)
{
	return !tfsd_node_is_dir(n) && n->arr ? n->arr->gen : 0;
}

/* The inode of (vpath, version) with one more lookup reference; NULL: no
 * memory. */
static struct inode *inode_ref(const char *vpath, uint64_t version)
{
	size_t h = path_hash(vpath);
	struct inode *in;

	if (!*vpath)
		return &itab.root;
	pthread_mutex_lock(&itab.lock);
	for (in = itab.buckets[h]; in; in = in->next)
		if (in->version == version && strcmp(in->vpath, vpath) == 0)
			break;
	if (!in) {
		in = tfs_callocn(1, sizeof(*in));
		if (in && !(in->vpath = tfs_strdup(vpath))) {
			tfs_free(in);
			in = NULL;
		}
		if (in) {
			in->version = version;
			in->next = itab.buckets[h];
			itab.buckets[h] = in;
		}
	}
	if (in)
		in->nlookup++;
	pthread_mutex_unlock(&itab.lock);
	return in;
}

static void inode_unref(struct inode *in, uint64_t n)
{
	struct inode **pp;
	bool gone = false;

	if (in == &itab.root)
		return;
	pthread_mutex_lock(&itab.lock);
	in->nlookup -= n < in->nlookup ? n : in->nlookup;
	if (in->nlookup == 0) {
		for (pp = &itab.buckets[path_hash(in->vpath)]; *pp;
		     pp = &(*pp)->next) {
			if (*pp == in) {
				*pp = in->next;
				gone = true;
				break;
			}
		}
	}
	pthread_mutex_unlock(&itab.lock);
	if (gone) {
		tfs_free(in->vpath);
		tfs_free(in);
	}
}

/* Paths inodes had before a rename; protected by itab.lock. */
static struct {
	char **v;
	size_t n, cap;
} retired;

/* Lists an inode under another path (a staged file renamed to another
 * temporary name), so that requests on it find the file there. */
static void inode_move(const char *from, const char *vpath)
{
	char *copy = tfs_strdup(vpath);
	struct inode **pp;

	if (!copy || !*from) {
		tfs_free(copy);
		return;
	}
	pthread_mutex_lock(&itab.lock);
	if (retired.n == retired.cap) {
		size_t ncap = retired.cap ? retired.cap * 2 : 16;
		char **nv = tfs_reallocn(retired.v, ncap, sizeof(*nv));

		if (!nv) {
			/* No room to keep the old path: the inode keeps it. */
			pthread_mutex_unlock(&itab.lock);
			tfs_free(copy);
			return;
		}
		retired.v = nv;
		retired.cap = ncap;
	}
	for (pp = &itab.buckets[path_hash(from)]; *pp; pp = &(*pp)->next) {
		struct inode *in = *pp;

		if (in->version != 0 || strcmp(in->vpath, from) != 0)
			continue;
		*pp = in->next;
		/* Handlers read in->vpath without the lock: the old string
		 * stays valid until exit (renames between temporaries are
		 * rare). */
		retired.v[retired.n++] = in->vpath;
		in->vpath = copy;
		copy = NULL;
		in->next = itab.buckets[path_hash(in->vpath)];
		itab.buckets[path_hash(in->vpath)] = in;
		break;
	}
	pthread_mutex_unlock(&itab.lock);
	tfs_free(copy);
}

/* The kernel forgets the name vpath (positive or negative) in its
 * folder, when it knows the folder. */
static void inval_entry_path(const char *vpath)
{
	const char *slash = strrchr(vpath, '/');
	const char *base = slash ? slash + 1 : vpath;
	char *dir = slash ? tfs_strndup(vpath, (size_t)(slash - vpath))
			  : tfs_strdup("");
	fuse_ino_t pino = 0;

	if (!tfs_session || !dir || !*base) {
		tfs_free(dir);
		return;
	}
	if (!*dir) {
		pino = FUSE_ROOT_ID;
	} else {
		pthread_mutex_lock(&itab.lock);
		for (struct inode *pin = itab.buckets[path_hash(dir)]; pin;
		     pin = pin->next)
			if (pin->version == 0 && strcmp(pin->vpath, dir) == 0)
				pino = ino_of(pin);
		pthread_mutex_unlock(&itab.lock);
	}
	if (pino)
		fuse_lowlevel_notify_inval_entry(tfs_session, pino, base,
						 strlen(base));
	tfs_free(dir);
}

/* After a commit: the kernel forgets what it cached of every path at or
 * under prefix (attributes, pages, names), so that the next look shows
 * the new version; with entry, also the name prefix itself (a new array
 * where a lookup had found nothing). Inode numbers are collected under
 * the lock and notified outside it: a notification may wait for the
 * kernel, which may be sending us a forget. Callers must not hold a
 * request the kernel serves under the folder's lock (rename, unlink,
 * mkdir: reply first). */
static void invalidate_under(const char *prefix, bool entry)
{
	size_t plen = strlen(prefix), n = 0, cap = 0;
	struct tfs_buf names;
	fuse_ino_t *inos = NULL, *parents = NULL;
	size_t pos = 0;

	if (!tfs_session)
		return;
	tfs_buf_init(&names, TFS_BUF_NO_MAX);
	pthread_mutex_lock(&itab.lock);
	for (size_t h = 0; h < INODE_BUCKETS; h++) {
		for (struct inode *in = itab.buckets[h]; in; in = in->next) {
			const char *vp = in->vpath;

			if (plen && (strncmp(vp, prefix, plen) != 0 ||
				     (vp[plen] != '\0' && vp[plen] != '/')))
				continue;
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				fuse_ino_t *ni = tfs_reallocn(inos, ncap, sizeof(*ni));

				if (!ni)
					goto out_unlock;
				inos = ni;
				cap = ncap;
			}
			if (tfs_buf_append(&names, vp, strlen(vp) + 1))
				goto out_unlock;
			inos[n++] = ino_of(in);
		}
	}
out_unlock:
	pthread_mutex_unlock(&itab.lock);
	if (plen == 0)
		fuse_lowlevel_notify_inval_inode(tfs_session, FUSE_ROOT_ID, 0, 0);
	parents = n ? tfs_callocn(n, sizeof(*parents)) : NULL;
	for (size_t i = 0; i < n; i++)
		fuse_lowlevel_notify_inval_inode(tfs_session, inos[i], 0, 0);
	/* Names: each inode's entry in its parent folder (the parent found
	 * by path; folders have version 0). */
	for (size_t i = 0; parents && i < n; i++) {
		const char *vp = (const char *)names.data + pos;
		const char *slash = strrchr(vp, '/');
		const char *base = slash ? slash + 1 : vp;
		char *dir = slash ? tfs_strndup(vp, (size_t)(slash - vp))
				  : tfs_strdup("");
		struct inode *pin = NULL;

		pos += strlen(vp) + 1;
		if (!dir)
			continue;
		if (!*dir) {
			pin = &itab.root;
		} else {
			pthread_mutex_lock(&itab.lock);
			for (pin = itab.buckets[path_hash(dir)]; pin; pin = pin->next)
				if (pin->version == 0 && strcmp(pin->vpath, dir) == 0)
					break;
			parents[i] = pin ? ino_of(pin) : 0;
			pthread_mutex_unlock(&itab.lock);
		}
		if (pin == &itab.root)
			parents[i] = FUSE_ROOT_ID;
		if (parents[i] && *base && (*vp != '\0'))
			fuse_lowlevel_notify_inval_entry(tfs_session, parents[i],
							 base, strlen(base));
		tfs_free(dir);
	}
	if (entry && plen)
		inval_entry_path(prefix);
	tfs_free(parents);
	tfs_free(inos);
	tfs_buf_release(&names);
}

/* ---- Helpers ------------------------------------------------------------- */

/* Replies with the errno of e; logs the diagnostic when it says why. */
static void reply_fail(fuse_req_t req, const char *vpath, enum tfs_err e,
		       const struct tfs_diag *d)
{
	if (d->code && e != TFS_E_NOT_FOUND)
		tfs_log(TFS_LOG_ERROR, "'/%s': %s", vpath, tfs_diag_msg(d));
	else if (d->code)
		tfs_log(TFS_LOG_INFO, "'/%s': %s", vpath, tfs_diag_msg(d));
	fuse_reply_err(req, tfs_err_errno(e));
}

static char *child_path(const struct inode *parent, const char *name)
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

static double node_timeout(const struct tfsd_node *n)
{
	return tfsd_node_immutable(&tfs_daemon, n) ? TIMEOUT_IMMUTABLE
						    : TIMEOUT_CURRENT;
}

/* Whether writing into this folder (or to this file) means something
 * (SPEC §6), so that file managers offer it: plain folders, arrays,
 * metadata/ and its values, attribute folders and their raw slices. */
static bool node_takes_writes(const struct tfsd_node *n)
{
	if (tfs_daemon.cfg.read_only || n->version_view)
		return false;
	switch (n->kind) {
	case TFSD_N_FOLDER:
	case TFSD_N_ARRAY:
	case TFSD_N_META_DIR:
		return true;
	case TFSD_N_FIELD:
		return n->arr && n->field >= (int)n->arr->schema->dim_num;
	case TFSD_N_FILE:
		return n->file == TFSD_F_META_VALUE ||
		       (n->file == TFSD_F_SLICE && n->field >= 0 && n->arr &&
			n->field >= (int)n->arr->schema->dim_num &&
			(n->fmt == TFSD_FMT_RAW || n->fmt == TFSD_FMT_NPY));
	default:
		return false;
	}
}

/* Owner and permission bits of the source folder that a node shows (a
 * folder, or the array folder of everything inside an array), so that
 * with allow_other and default_permissions the kernel keeps a private
 * folder of SOURCE private. 0755 when it cannot be read. */
static mode_t node_owner(const struct tfsd_node *n, struct stat *st)
{
	const char *src = n->src;
	char *path = NULL;
	struct stat s;
	mode_t mode = 0755;

	if (!src && n->rel) {
		path = *n->rel ? tfs_path_join(tfs_daemon.cfg.source, n->rel)
			       : tfs_strdup(tfs_daemon.cfg.source);
		src = path;
	}
	if (src && stat(src, &s) == 0) {
		st->st_uid = s.st_uid;
		st->st_gid = s.st_gid;
		mode = s.st_mode & 0777;
	}
	tfs_free(path);
	return mode;
}

/* Attributes of a resolved node. */
static enum tfs_err node_stat(const struct tfsd_node *n, const char *vpath,
			      fuse_ino_t ino, struct stat *st,
			      struct tfs_diag *d)
{
	mode_t mode;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 1 << 20;
	mode = node_owner(n, st);
	if (n->kind == TFSD_N_FOLDER) {
		struct stat src;

		if (stat(n->src, &src) == 0)
			st->st_mtim = src.st_mtim;
	} else if (n->arr) {
		uint64_t last = 0;

		for (size_t i = 0; i < tfs_array_fragment_count(n->arr->a); i++) {
			struct tfs_fragment_info f;

			tfs_array_fragment(n->arr->a, i, &f);
			if (f.visible && f.t2 > last)
				last = f.t2;
		}
		st->st_mtim.tv_sec = (time_t)(last / 1000);
		st->st_mtim.tv_nsec = (long)(last % 1000) * 1000000;
	}
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	if (tfsd_node_is_dir(n)) {
		st->st_mode = S_IFDIR | (mode & (node_takes_writes(n) ? 0777 : 0555));
		st->st_nlink = 2;
		return TFS_E_OK;
	}
	st->st_mode = S_IFREG | (mode & (node_takes_writes(n) ? 0666 : 0444));
	st->st_nlink = 1;
	{
		struct tfsd_size sz;
		enum tfs_err e = tfsd_file_size(&tfs_daemon, n, vpath, &sz, d);

		if (e)
			return e;
		st->st_size = (off_t)sz.size;
		st->st_blocks = (blkcnt_t)((sz.size + 511) / 512);
	}
	return TFS_E_OK;
}

/* ---- Writing: staged files and ingest logs -------------------------------- */

/* An open file: a view file being read, a staged file being written (or
 * read back), or a rendered ingest.log. */
#define FH_MAGIC 0x74667368u

struct fhandle {
	uint32_t magic; /* FH_MAGIC: not a folder's listing */
	struct tfsd_file *rf;
	struct tfsd_staged *sf;
	struct tfs_buf doc;
};

/* The open file of fi; NULL when fi is none or a folder's (the kernel
 * passes handles with getattr and setattr of open files). */
static struct fhandle *fh_of(const struct fuse_file_info *fi)
{
	struct fhandle *h = fi ? (struct fhandle *)(uintptr_t)fi->fh : NULL;

	return h && h->magic == FH_MAGIC ? h : NULL;
}

static void fh_free(struct fhandle *h)
{
	if (!h)
		return;
	if (h->rf)
		tfsd_file_close(&tfs_daemon, h->rf);
	tfs_buf_release(&h->doc);
	tfs_free(h);
}

static struct tfsd_staged *staged_at(const char *vpath)
{
	return tfs_daemon.staging ? tfsd_staged_find(tfs_daemon.staging, vpath)
				  : NULL;
}

static void staged_stat(struct tfsd_staged *sf, fuse_ino_t ino, struct stat *st)
{
	tfsd_staged_stat(sf, st);
	st->st_ino = ino;
}

static bool ilog_dir(const char *vpath, char **dir)
{
	return tfsd_ilog_dir(&tfs_daemon, vpath, dir);
}

static void ilog_stat(const char *dir, fuse_ino_t ino, struct stat *st)
{
	tfsd_ilog_stat(&tfs_daemon, dir, st);
	st->st_ino = ino;
}

/* Commits a staged file (tfsd_staged_commit) and returns the errno for
 * close(). invalidate: tell the kernel now (flush, fsync, release; not
 * from a handler the kernel runs under a folder's lock, which passes
 * scope instead and tells it after its reply). */
static int staged_commit(struct tfsd_staged *sf, bool invalidate,
			 char *scope_out, size_t scope_cap, bool *scope_entry)
{
	char scope[4096];
	bool entry = false;
	int err;

	err = tfsd_staged_commit(&tfs_daemon, sf, scope, sizeof(scope), &entry);
	if (scope_out && scope_cap)
		snprintf(scope_out, scope_cap, "%s", scope);
	if (scope_entry)
		*scope_entry = entry;
	if (invalidate && scope[0] != '\0')
		invalidate_under(scope, entry);
	return err;
}

/* ---- Operations ------------------------------------------------------------ */

static void op_init(void *userdata, struct fuse_conn_info *conn)
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
	conn->max_readahead = (unsigned)MAX_READ;
	conn->max_read = (unsigned)MAX_READ;
	conn->max_write = (unsigned)MAX_READ;
}

#define STALE_RETRIES 4

/* A file of a view found missing: a vacuum may have removed fragments
 * that the cached handle (re-checked at most twice a second; never, for a
 * fixed time) still lists. The array is opened again and n resolved
 * again, once, for a step that has served nothing yet; true (n replaced)
 * when the caller should retry it. A fixed time's view is opened again at
 * that time only if the fragments left show it the same
 * (tfsd_arrays_reopen); if they cannot, d (the step's failure) says why.
 * A damaged array fails the same way every time; a vacuum still running
 * may remove more under the retry, hence a few. */
static bool stale_retry(struct tfsd_node *n, const char *vpath,
			enum tfs_err e, struct tfs_diag *why)
{
	struct tfsd_node fresh;
	struct tfsd_arr *again;
	struct tfs_diag d;

	if (e != TFS_E_CORRUPT || !n->arr || !n->rel)
		return false;
	tfs_diag_init(&d);
	if (n->arr->timestamp) {
		if (tfsd_arrays_reopen(tfs_daemon.arrays, n->rel, n->arr,
				       &again, &d)) {
			*why = d;
			return false;
		}
		if (!again)
			return false;
		tfsd_arr_put(tfs_daemon.arrays, again);
	} else {
		tfsd_arrays_invalidate(tfs_daemon.arrays, n->rel);
	}
	if (tfsd_resolve(&tfs_daemon, vpath, &fresh, &d))
		return false;
	tfsd_node_release(&tfs_daemon, n);
	*n = fresh;
	return true;
}

/* The entry of a resolved node: its inode (one more lookup reference),
 * attributes and timeouts. */
static enum tfs_err node_entry(const struct tfsd_node *n, const char *vpath,
			       struct fuse_entry_param *ep, struct tfs_diag *d)
{
	struct inode *in;
	enum tfs_err e;

	memset(ep, 0, sizeof(*ep));
	in = inode_ref(vpath, node_version(n));
	if (!in)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = node_stat(n, vpath, ino_of(in), &ep->attr, d);
	if (e) {
		inode_unref(in, 1);
		return e;
	}
	ep->ino = ino_of(in);
	ep->attr_timeout = node_timeout(n);
	ep->entry_timeout = ep->attr_timeout;
	return TFS_E_OK;
}

/* Lookup of a staged file: a fresh entry every time (timeouts 0: it
 * disappears at its commit). True when it replied. */
static bool lookup_overlay(fuse_req_t req, const char *vpath)
{
	struct tfsd_staged *sf = staged_at(vpath);
	struct fuse_entry_param ep;
	struct inode *in;

	if (!sf)
		return false;
	memset(&ep, 0, sizeof(ep));
	in = inode_ref(vpath, 0);
	if (!in) {
		tfsd_staged_put(tfs_daemon.staging, sf);
		fuse_reply_err(req, ENOMEM);
		return true;
	}
	ep.ino = ino_of(in);
	staged_stat(sf, ep.ino, &ep.attr);
	tfsd_staged_put(tfs_daemon.staging, sf);
	fuse_reply_entry(req, &ep);
	return true;
}

static bool lookup_ilog(fuse_req_t req, const char *vpath)
{
	struct fuse_entry_param ep;
	struct inode *in;
	char *dir;

	if (!ilog_dir(vpath, &dir))
		return false;
	memset(&ep, 0, sizeof(ep));
	in = inode_ref(vpath, 0);
	if (!in) {
		tfs_free(dir);
		fuse_reply_err(req, ENOMEM);
		return true;
	}
	ep.ino = ino_of(in);
	ilog_stat(dir, ep.ino, &ep.attr);
	tfs_free(dir);
	fuse_reply_entry(req, &ep);
	return true;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param ep;
	struct tfsd_node n;
	struct tfs_diag d;
	char *vpath = child_path(inode_of(parent), name);
	enum tfs_err e;

	tfs_diag_init(&d);
	if (!vpath) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (lookup_overlay(req, vpath)) {
		tfs_free(vpath);
		return;
	}
	e = tfsd_resolve(&tfs_daemon, vpath, &n, &d);
	if (e == TFS_E_NOT_FOUND && lookup_ilog(req, vpath)) {
		tfs_free(vpath);
		return;
	}
	if (e == TFS_E_NOT_FOUND) {
		/* A negative entry, cached as long as the folder's view. */
		memset(&ep, 0, sizeof(ep));
		ep.entry_timeout = TIMEOUT_CURRENT;
		if (d.code)
			tfs_log(TFS_LOG_INFO, "'/%s': %s", vpath,
				tfs_diag_msg(&d));
		fuse_reply_entry(req, &ep);
		tfs_free(vpath);
		return;
	}
	if (e) {
		reply_fail(req, vpath, e, &d);
		tfs_free(vpath);
		return;
	}
	e = node_entry(&n, vpath, &ep, &d);
	for (int i = 0; i < STALE_RETRIES && stale_retry(&n, vpath, e, &d); i++) {
		tfs_diag_init(&d);
		e = node_entry(&n, vpath, &ep, &d);
	}
	if (e)
		goto out_fail;
	fuse_reply_entry(req, &ep);
	tfsd_node_release(&tfs_daemon, &n);
	tfs_free(vpath);
	return;
out_fail:
	reply_fail(req, vpath, e, &d);
	tfsd_node_release(&tfs_daemon, &n);
	tfs_free(vpath);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	inode_unref(inode_of(ino), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		inode_unref(inode_of(forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct inode *in = inode_of(ino);
	struct tfsd_node n;
	struct tfs_diag d;
	struct stat st;
	enum tfs_err e;

	struct tfsd_staged *sf = fh_of(fi) ? fh_of(fi)->sf : NULL;
	char *dir;

	tfs_diag_init(&d);
	if (sf || (sf = staged_at(in->vpath)) != NULL) {
		staged_stat(sf, ino, &st);
		if (!(fh_of(fi) && fh_of(fi)->sf == sf))
			tfsd_staged_put(tfs_daemon.staging, sf);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	e = tfsd_resolve(&tfs_daemon, in->vpath, &n, &d);
	if (!e) {
		e = node_stat(&n, in->vpath, ino, &st, &d);
		for (int i = 0; i < STALE_RETRIES &&
				stale_retry(&n, in->vpath, e, &d); i++) {
			tfs_diag_init(&d);
			e = node_stat(&n, in->vpath, ino, &st, &d);
		}
		if (!e)
			fuse_reply_attr(req, &st, node_timeout(&n));
		tfsd_node_release(&tfs_daemon, &n);
	} else if (e == TFS_E_NOT_FOUND && ilog_dir(in->vpath, &dir)) {
		ilog_stat(dir, ino, &st);
		tfs_free(dir);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	if (e)
		reply_fail(req, in->vpath, e, &d);
}

/* A directory listing taken at opendir, served by offset. */
struct dirlist {
	uint32_t magic;       /* 0: tells it from a struct fhandle */
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

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct inode *in = inode_of(ino);
	struct dirlist *dl = tfs_callocn(1, sizeof(*dl));
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	if (!dl) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	tfs_buf_init(&dl->names, TFS_BUF_NO_MAX);
	tfs_buf_init(&dl->kinds, TFS_BUF_NO_MAX);
	dirlist_add(dl, ".", true);
	dirlist_add(dl, "..", true);
	e = tfsd_resolve(&tfs_daemon, in->vpath, &n, &d);
	if (!e) {
		if (!tfsd_node_is_dir(&n))
			e = tfs_fail(&d, TFS_E_INVALID, "not a folder");
		else
			e = tfsd_list(&tfs_daemon, &n, dirlist_add, dl, &d);
		if (!e && tfs_daemon.staging)
			tfsd_staging_list(tfs_daemon.staging, in->vpath,
					  dirlist_add_new, dl);
		if (!e && tfs_daemon.ilog &&
		    (n.kind == TFSD_N_ARRAY || n.kind == TFSD_N_FOLDER) &&
		    tfsd_ilog_has(tfs_daemon.ilog, in->vpath))
			dirlist_add_new(dl, "ingest.log", false);
		if (!e && dl->failed)
			e = tfs_fail(&d, TFS_E_NOMEM, "out of memory");
		if (!e)
			fi->cache_readdir = tfsd_node_immutable(&tfs_daemon, &n);
		tfsd_node_release(&tfs_daemon, &n);
	}
	if (e) {
		dirlist_free(dl);
		reply_fail(req, in->vpath, e == TFS_E_INVALID ? TFS_E_INVALID : e, &d);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)dl;
	fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dirlist *dl = (struct dirlist *)(uintptr_t)fi->fh;
	char *buf = tfs_malloc(size ? size : 1);
	size_t used = 0, pos = 0, i = 0;

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (; i < dl->count; i++) {
		const char *name = (const char *)dl->names.data + pos;
		/* d_ino 0 entries are skipped by readdir(3); the kernel
		 * gives stat's own inode numbers anyway. */
		struct stat st = {.st_ino = i + 1};
		size_t need;

		pos += strlen(name) + 1;
		if ((off_t)i < off)
			continue;
		st.st_mode = dl->kinds.data[i] ? S_IFDIR : S_IFREG;
		need = fuse_add_direntry(req, buf + used, size - used, name,
					 &st, (off_t)(i + 1));
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	tfs_free(buf);
}

/* readdir with each entry's attributes, so that `ls -l` and file managers
 * need no lookup per entry (one kernel round trip per buffer instead). An
 * entry that cannot be resolved now is listed without attributes. */
static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	struct dirlist *dl = (struct dirlist *)(uintptr_t)fi->fh;
	struct inode *in = inode_of(ino);
	char *buf = tfs_malloc(size ? size : 1);
	size_t used = 0, pos = 0;
	struct tfsd_node dir;
	struct tfs_diag d;
	bool have_dir;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	tfs_diag_init(&d);
	have_dir = tfsd_resolve(&tfs_daemon, in->vpath, &dir, &d) == TFS_E_OK;
	for (size_t i = 0; i < dl->count; i++) {
		const char *name = (const char *)dl->names.data + pos;
		struct fuse_entry_param ep;
		struct tfsd_node n;
		char *vpath = NULL;
		size_t need;

		pos += strlen(name) + 1;
		if ((off_t)i < off)
			continue;
		memset(&ep, 0, sizeof(ep));
		ep.attr.st_ino = i + 1;
		ep.attr.st_mode = dl->kinds.data[i] ? S_IFDIR : S_IFREG;
		if (have_dir && strcmp(name, ".") && strcmp(name, "..") &&
		    (vpath = child_path(in, name)) != NULL) {
			tfs_diag_init(&d);
			if (tfsd_resolve_child(&tfs_daemon, &dir, name, &n, &d) ==
			    TFS_E_OK) {
				if (node_entry(&n, vpath, &ep, &d)) {
					memset(&ep, 0, sizeof(ep));
					ep.attr.st_ino = i + 1;
					ep.attr.st_mode = dl->kinds.data[i]
								  ? S_IFDIR
								  : S_IFREG;
				}
				tfsd_node_release(&tfs_daemon, &n);
			}
		}
		need = fuse_add_direntry_plus(req, buf + used, size - used, name,
					      &ep, (off_t)(i + 1));
		tfs_free(vpath);
		if (need > size - used) {
			if (ep.ino)
				inode_unref(inode_of(ep.ino), 1);
			break;
		}
		used += need;
	}
	if (have_dir)
		tfsd_node_release(&tfs_daemon, &dir);
	fuse_reply_buf(req, buf, used);
	tfs_free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	dirlist_free((struct dirlist *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* Opens a staged file for this request; trunc empties it. */
static void open_staged(fuse_req_t req, struct tfsd_staged *sf,
			struct fuse_file_info *fi, bool opened)
{
	struct fhandle *h = tfs_callocn(1, sizeof(*h));

	if (!h) {
		if (opened)
			tfsd_staged_closed(tfs_daemon.staging, sf);
		tfsd_staged_put(tfs_daemon.staging, sf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->magic = FH_MAGIC;
	if (!opened)
		tfsd_staged_opened(tfs_daemon.staging, sf);
	if (fi->flags & O_TRUNC) {
		pthread_mutex_lock(&sf->lock);
		if (ftruncate(sf->fd, 0) == 0)
			sf->dirty = true;
		pthread_mutex_unlock(&sf->lock);
	}
	tfs_buf_init(&h->doc, TFS_BUF_NO_MAX);
	h->sf = sf;
	fi->fh = (uint64_t)(uintptr_t)h;
	/* Written bytes go straight to the staged file; reads come back
	 * from it: no page cache to keep coherent (and no shared writable
	 * mmap: it needs one). */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->nonseekable = 0;
}

/* Ends an open file. The last close of a staged file commits what a
 * flush did not (none came: only the logs can tell), and a committing
 * name is gone then; a temporary stays until it is renamed or removed. */
static void fh_close(struct fhandle *h)
{
	struct tfsd_staged *sf = h ? h->sf : NULL;

	if (sf && tfsd_staged_closed(tfs_daemon.staging, sf)) {
		char scope[4096];
		bool entry;

		tfsd_staged_last_close(&tfs_daemon, sf, scope, sizeof(scope),
				       &entry);
		if (scope[0] != '\0')
			invalidate_under(scope, entry);
	}
	if (sf)
		tfsd_staged_put(tfs_daemon.staging, sf);
	fh_free(h);
}

/* A staged file just made for a request that failed: unlisted, its
 * references dropped. */
static void stage_abandon(struct tfsd_staged *sf)
{
	tfsd_staged_closed(tfs_daemon.staging, sf);
	tfsd_staged_unlist(tfs_daemon.staging, sf);
	tfsd_staged_put(tfs_daemon.staging, sf);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct inode *in = inode_of(ino);
	struct tfsd_staged *sf = staged_at(in->vpath);
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY ||
		       (fi->flags & O_TRUNC);
	struct fhandle *h;
	struct tfsd_file *f = NULL;
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;
	char *dir;

	tfs_diag_init(&d);
	if (writing && tfs_daemon.cfg.read_only) {
		tfsd_staged_put(tfs_daemon.staging, sf);
		fuse_reply_err(req, EROFS);
		return;
	}
	if (sf) {
		open_staged(req, sf, fi, false);
		goto out_reply;
	}
	if (writing) {
		e = tfsd_stage_new(&tfs_daemon, in->vpath,
				   !(fi->flags & O_TRUNC), &sf, &d);
		if (!e && !tfsd_wtarget_commits(&sf->target)) {
			/* An existing file of the view that no write means
			 * anything for (schema.json of an array, info.json). */
			stage_abandon(sf);
			e = tfs_fail(&d, TFS_E_PERM, "this file cannot be written");
		}
		if (e) {
			reply_fail(req, in->vpath, e, &d);
			return;
		}
		open_staged(req, sf, fi, true);
		goto out_reply;
	}
	h = tfs_callocn(1, sizeof(*h));
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->magic = FH_MAGIC;
	tfs_buf_init(&h->doc, TFS_BUF_NO_MAX);
	e = tfsd_resolve(&tfs_daemon, in->vpath, &n, &d);
	if (e == TFS_E_NOT_FOUND && ilog_dir(in->vpath, &dir)) {
		e = tfsd_ilog_render(tfs_daemon.ilog, dir, &h->doc);
		tfs_free(dir);
		if (e) {
			fh_free(h);
			fuse_reply_err(req, ENOMEM);
			return;
		}
		fi->fh = (uint64_t)(uintptr_t)h;
		fi->direct_io = 1;
		goto out_reply;
	}
	if (e) {
		fh_free(h);
		reply_fail(req, in->vpath, e, &d);
		return;
	}
	if (tfsd_node_is_dir(&n)) {
		tfsd_node_release(&tfs_daemon, &n);
		fh_free(h);
		fuse_reply_err(req, EISDIR);
		return;
	}
	e = tfsd_file_open(&tfs_daemon, &n, in->vpath, &f, &d);
	for (int i = 0; i < STALE_RETRIES && stale_retry(&n, in->vpath, e, &d); i++) {
		tfs_diag_init(&d);
		e = tfsd_file_open(&tfs_daemon, &n, in->vpath, &f, &d);
	}
	if (e) {
		tfsd_node_release(&tfs_daemon, &n);
		fh_free(h);
		reply_fail(req, in->vpath, e, &d);
		return;
	}
	h->rf = f;
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = tfsd_file_direct(f);
	/* The page cache of this inode holds its version's bytes; a stale
	 * inode (the path now shows a newer version) is emptied. */
	fi->keep_cache = !fi->direct_io && node_version(&n) == in->version;
	tfsd_node_release(&tfs_daemon, &n);
out_reply:
	if (fuse_reply_open(req, fi) == -ENOENT)
		fh_close(fh_of(fi)); /* interrupted open */
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fhandle *h = fh_of(fi);
	uint8_t *buf;
	struct tfs_diag d;
	size_t got = 0;
	enum tfs_err e = TFS_E_OK;

	if (!h) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (size > MAX_READ * 4)
		size = MAX_READ * 4;
	buf = tfs_malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	tfs_diag_init(&d);
	if (h->sf) {
		ssize_t r = pread(h->sf->fd, buf, size, off);

		if (r < 0) {
			fuse_reply_err(req, errno);
			tfs_free(buf);
			return;
		}
		got = (size_t)r;
	} else if (h->rf) {
		e = tfsd_file_read(&tfs_daemon, h->rf, (uint64_t)off, buf, size,
				   &got, &d);
	} else if ((uint64_t)off < h->doc.len) {
		got = h->doc.len - (size_t)off < size ? h->doc.len - (size_t)off
						      : size;
		memcpy(buf, h->doc.data + off, got);
	}
	if (e)
		reply_fail(req, inode_of(ino)->vpath, e, &d);
	else
		fuse_reply_buf(req, (const char *)buf, got);
	tfs_free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fhandle *h = fh_of(fi);
	ssize_t r;

	(void)ino;
	if (!h || !h->sf) {
		fuse_reply_err(req, EBADF);
		return;
	}
	pthread_mutex_lock(&h->sf->lock);
	r = pwrite(h->sf->fd, buf, size, off);
	if (r >= 0)
		h->sf->dirty = true;
	pthread_mutex_unlock(&h->sf->lock);
	if (r < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)r);
}

/* close() and fsync(): the commit, its error returned there. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fhandle *h = fh_of(fi);

	(void)ino;
	fuse_reply_err(req, h && h->sf
				    ? staged_commit(h->sf, true, NULL, 0, NULL)
				    : 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)datasync;
	op_flush(req, ino, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fh_close(fh_of(fi));
	fuse_reply_err(req, 0);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param ep;
	struct tfsd_staged *sf;
	struct tfs_diag d;
	struct inode *in;
	enum tfs_err e;
	bool fresh = false;
	char *vpath = child_path(inode_of(parent), name);

	tfs_diag_init(&d);
	if (!vpath) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (tfs_daemon.cfg.read_only) {
		fuse_reply_err(req, EROFS);
		goto out_free;
	}
	tfsd_staging_expire(tfs_daemon.staging, TFSD_TEMP_KEEP_MS);
	sf = staged_at(vpath);
	if (sf && (fi->flags & O_EXCL)) {
		tfsd_staged_put(tfs_daemon.staging, sf);
		fuse_reply_err(req, EEXIST);
		goto out_free;
	}
	if (sf) {
		tfsd_staged_opened(tfs_daemon.staging, sf);
	} else {
		e = tfsd_stage_new(&tfs_daemon, vpath, false, &sf, &d);
		if (e) {
			reply_fail(req, vpath, e, &d);
			goto out_free;
		}
		fresh = true;
	}
	if (fchmod(sf->fd, mode & 07777) != 0)
		tfs_log(TFS_LOG_DEBUG, "'/%s': chmod of staged file failed", vpath);
	in = inode_ref(vpath, 0);
	if (!in) {
		if (fresh) {
			stage_abandon(sf);
		} else {
			tfsd_staged_closed(tfs_daemon.staging, sf);
			tfsd_staged_put(tfs_daemon.staging, sf);
		}
		fuse_reply_err(req, ENOMEM);
		goto out_free;
	}
	memset(&ep, 0, sizeof(ep));
	ep.ino = ino_of(in);
	staged_stat(sf, ep.ino, &ep.attr);
	open_staged(req, sf, fi, true);
	if (!fi->fh) {
		inode_unref(in, 1);
		goto out_free;
	}
	if (fuse_reply_create(req, &ep, fi) == -ENOENT)
		fh_close(fh_of(fi));
out_free:
	tfs_free(vpath);
}

/* chmod, chown, utimens and truncate: applied to a staged file, no-ops
 * on the view's files (rsync and cp -p set them after writing). */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct inode *in = inode_of(ino);
	struct tfsd_staged *sf = fh_of(fi) ? fh_of(fi)->sf : NULL;
	bool own = false;
	struct stat st;

	if (!sf) {
		sf = staged_at(in->vpath);
		own = sf != NULL;
	}
	if (!sf) {
		if (tfs_daemon.cfg.read_only)
			fuse_reply_err(req, EROFS);
		else if (to_set & FUSE_SET_ATTR_SIZE)
			fuse_reply_err(req, EACCES);
		else
			op_getattr(req, ino, NULL);
		return;
	}
	pthread_mutex_lock(&sf->lock);
	if ((to_set & FUSE_SET_ATTR_SIZE) && ftruncate(sf->fd, attr->st_size) == 0)
		sf->dirty = true;
	if (to_set & FUSE_SET_ATTR_MODE && fchmod(sf->fd, attr->st_mode & 07777))
		tfs_log(TFS_LOG_DEBUG, "'/%s': chmod of staged file failed",
			in->vpath);
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
				in->vpath);
	}
	pthread_mutex_unlock(&sf->lock);
	staged_stat(sf, ino, &st);
	if (own)
		tfsd_staged_put(tfs_daemon.staging, sf);
	fuse_reply_attr(req, &st, 0);
}

/* Renames of staged files: onto a committing name the bytes are
 * committed (rsync's and editors' rename into place), else the staged
 * file just takes the new name. Nothing else of the view is renamed. */
static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	char *from = child_path(inode_of(parent), name);
	char *to = child_path(inode_of(newparent), newname);
	struct tfsd_staged *sf = NULL;
	struct tfsd_wtarget t, old;
	struct tfs_diag d;
	char scope[4096] = "";
	bool entry = false;
	enum tfs_err e;
	int err = 0;

	tfs_diag_init(&d);
	if (!from || !to) {
		err = ENOMEM;
		goto out;
	}
	if (tfs_daemon.cfg.read_only) {
		err = EROFS;
		goto out;
	}
	if (flags & RENAME_EXCHANGE) {
		err = EINVAL;
		goto out;
	}
	sf = staged_at(from);
	if (!sf) {
		tfs_log(TFS_LOG_INFO, "rename '/%s': only files being written "
				      "can be renamed",
			from);
		err = EACCES;
		goto out;
	}
	e = tfsd_write_classify(&tfs_daemon, to, &t, &d);
	if (e) {
		reply_fail(req, to, e, &d);
		goto out_noreply;
	}
	pthread_mutex_lock(&sf->lock);
	old = sf->target;
	sf->target = t;
	if (tfsd_wtarget_commits(&t))
		sf->dirty = true;
	pthread_mutex_unlock(&sf->lock);
	if (!tfsd_wtarget_commits(&t)) {
		tfsd_wtarget_release(&old);
		if (tfsd_staged_rename(tfs_daemon.staging, sf, to, &d) == TFS_E_OK)
			inode_move(from, to);
		goto out;
	}
	err = staged_commit(sf, false, scope, sizeof(scope), &entry);
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
		tfsd_staged_unlist(tfs_daemon.staging, sf);
	}
out:
	fuse_reply_err(req, err);
	/* After the reply: the kernel holds the folders' locks until it.
	 * The renamed file took the new name in the kernel's view: gone. */
	if (!err && scope[0] != '\0' && sf) {
		invalidate_under(scope, entry);
		inval_entry_path(to);
	}
out_noreply:
	tfsd_staged_put(tfs_daemon.staging, sf);
	tfs_free(from);
	tfs_free(to);
}
/* rm: a staged file goes away; a metadata key is deleted. */
static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *vpath = child_path(inode_of(parent), name);
	struct tfsd_staged *sf;
	struct tfsd_wtarget t;
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_err e;
	bool deleted = false;
	char what[160];

	tfs_diag_init(&d);
	if (!vpath) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (tfs_daemon.cfg.read_only) {
		fuse_reply_err(req, EROFS);
		goto out_free;
	}
	sf = staged_at(vpath);
	if (sf) {
		tfsd_staged_unlist(tfs_daemon.staging, sf);
		tfsd_staged_put(tfs_daemon.staging, sf);
		fuse_reply_err(req, 0);
		goto out_free;
	}
	e = tfsd_resolve(&tfs_daemon, vpath, &n, &d);
	if (e) {
		reply_fail(req, vpath, e, &d);
		goto out_free;
	}
	if (n.kind != TFSD_N_FILE || n.file != TFSD_F_META_VALUE) {
		int err = tfsd_node_is_dir(&n) ? EISDIR : EACCES;

		tfsd_node_release(&tfs_daemon, &n);
		tfs_log(TFS_LOG_INFO, "rm '/%s': only metadata keys and files "
				      "being written can be removed",
			vpath);
		fuse_reply_err(req, err);
		goto out_free;
	}
	tfsd_node_release(&tfs_daemon, &n);
	e = tfsd_write_classify(&tfs_daemon, vpath, &t, &d);
	if (!e) {
		e = tfsd_write_meta_delete(&tfs_daemon, &t, &d);
		snprintf(what, sizeof(what), "deleted");
		tfsd_ilog_add(tfs_daemon.ilog, t.log_dir, t.name, e != TFS_E_OK,
			      e ? tfs_diag_msg(&d) : what);
		if (!e) {
			tfsd_arrays_invalidate(tfs_daemon.arrays, t.rel);
			deleted = true;
		}
	}
	if (e)
		reply_fail(req, vpath, e, &d);
	else
		fuse_reply_err(req, 0);
	if (deleted)
		invalidate_under(t.log_dir, false);
	tfsd_wtarget_release(&t);
out_free:
	tfs_free(vpath);
}

/* mkdir in a plain folder of SOURCE makes a real folder (where a CSV file
 * or a schema.json then makes an array). */
static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	char *vpath = child_path(inode_of(parent), name);
	struct fuse_entry_param ep;
	struct tfsd_node dir, n;
	struct tfs_diag d;
	enum tfs_err e;
	char *src = NULL;

	tfs_diag_init(&d);
	if (!vpath) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (tfs_daemon.cfg.read_only) {
		fuse_reply_err(req, EROFS);
		goto out_free;
	}
	e = tfsd_resolve(&tfs_daemon, inode_of(parent)->vpath, &dir, &d);
	if (e) {
		reply_fail(req, vpath, e, &d);
		goto out_free;
	}
	if (dir.kind != TFSD_N_FOLDER || name[0] == '.' ||
	    strncmp(name, "__", 2) == 0 || strchr(name, '/')) {
		tfsd_node_release(&tfs_daemon, &dir);
		tfs_log(TFS_LOG_INFO, "mkdir '/%s': folders are made in plain "
				      "folders only, not named '.*' or '__*'",
			vpath);
		fuse_reply_err(req, EACCES);
		goto out_free;
	}
	src = tfs_malloc(strlen(dir.src) + strlen(name) + 2);
	if (src)
		snprintf(src, strlen(dir.src) + strlen(name) + 2, "%s/%s",
			 dir.src, name);
	tfsd_node_release(&tfs_daemon, &dir);
	if (!src) {
		fuse_reply_err(req, ENOMEM);
		goto out_free;
	}
	if (mkdir(src, mode & 07777) != 0) {
		fuse_reply_err(req, errno);
		goto out_free;
	}
	e = tfsd_resolve(&tfs_daemon, vpath, &n, &d);
	if (!e) {
		e = node_entry(&n, vpath, &ep, &d);
		tfsd_node_release(&tfs_daemon, &n);
	}
	if (e)
		reply_fail(req, vpath, e, &d);
	else
		fuse_reply_entry(req, &ep);
out_free:
	tfs_free(src);
	tfs_free(vpath);
}

/* rmdir of an empty plain folder (not of an array, nor a group). */
static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *vpath = child_path(inode_of(parent), name);
	struct tfsd_node n;
	struct tfs_diag d;
	enum tfs_object kind;
	int err = 0;

	tfs_diag_init(&d);
	if (!vpath) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (tfs_daemon.cfg.read_only) {
		fuse_reply_err(req, EROFS);
		goto out_free;
	}
	if (tfsd_resolve(&tfs_daemon, vpath, &n, &d) != TFS_E_OK) {
		fuse_reply_err(req, ENOENT);
		goto out_free;
	}
	if (n.kind != TFSD_N_FOLDER || !n.src ||
	    tfs_object_type(NULL, n.src, &kind, &d) != TFS_E_OK ||
	    kind != TFS_OBJECT_NONE)
		err = n.kind == TFSD_N_FILE ? ENOTDIR : EACCES;
	else if (tfsd_staging_busy(tfs_daemon.staging, vpath))
		err = EBUSY;
	else if (rmdir(n.src) != 0)
		err = errno;
	tfsd_node_release(&tfs_daemon, &n);
	fuse_reply_err(req, err);
out_free:
	tfs_free(vpath);
}

/* df and tools that check for room see SOURCE's file system. */
static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	if (tfs_s3_is_uri(tfs_daemon.cfg.source)) {
		/* A bucket has no size: plenty of room, as S3 tools say. */
		memset(&sv, 0, sizeof(sv));
		sv.f_bsize = sv.f_frsize = 1 << 20;
		sv.f_blocks = sv.f_bfree = sv.f_bavail = (fsblkcnt_t)1 << 30;
		sv.f_namemax = 1024;
		fuse_reply_statfs(req, &sv);
		return;
	}
	if (statvfs(tfs_daemon.cfg.source, &sv) != 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fuse_reply_statfs(req, &sv);
}

/* Replies to getxattr/listxattr with val (the size alone when size is 0,
 * as the protocol asks) and releases it. */
static void reply_xattr(fuse_req_t req, enum tfs_err e, struct tfs_buf *val,
			size_t size)
{
	if (e == TFS_E_NOT_FOUND)
		fuse_reply_err(req, ENODATA);
	else if (e)
		fuse_reply_err(req, tfs_err_errno(e));
	else if (size == 0)
		fuse_reply_xattr(req, val->len);
	else if (size < val->len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, (const char *)val->data, val->len);
	tfs_buf_release(val);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	struct inode *in = inode_of(ino);
	struct tfsd_node n;
	struct tfs_buf val;
	struct tfs_diag d;
	enum tfs_err e;

	/* ls -l asks every file for ACLs and security labels: answer those
	 * without resolving the path. */
	if (strncmp(name, "user.tilefs.", 12) != 0) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	tfs_diag_init(&d);
	tfs_buf_init(&val, TFS_BUF_NO_MAX);
	e = tfsd_resolve(&tfs_daemon, in->vpath, &n, &d);
	if (e) {
		reply_fail(req, in->vpath, e, &d);
		return;
	}
	e = tfsd_xattr_get(&tfs_daemon, &n, name, &val);
	tfsd_node_release(&tfs_daemon, &n);
	reply_xattr(req, e, &val, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct inode *in = inode_of(ino);
	struct tfsd_node n;
	struct tfs_buf val;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	tfs_buf_init(&val, TFS_BUF_NO_MAX);
	e = tfsd_resolve(&tfs_daemon, in->vpath, &n, &d);
	if (e) {
		reply_fail(req, in->vpath, e, &d);
		return;
	}
	e = tfsd_xattr_list(&tfs_daemon, &n, &val);
	tfsd_node_release(&tfs_daemon, &n);
	reply_xattr(req, e, &val, size);
}

static const struct fuse_lowlevel_ops tfsd_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.create = op_create,
	.setattr = op_setattr,
	.rename = op_rename,
	.unlink = op_unlink,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
};

/* ---- Start-up ------------------------------------------------------------- */

struct cli {
	char *source;
	char *key;
	char *keyfile;
	char *cache;
	char *threads;
	char *timestamp;
	char *whole_max;
	char *staging;
	char *cleanup_grace;
	char *max_cells;
	char *max_memory;
	char *s3_endpoint;
	char *s3_region;
	char *s3_addressing;
	char *s3_verify_tls;
	char *s3_credentials;
	int read_only;
	int allow_other;
	int default_permissions;
	int show_help;
	int show_version;
};

#define CLI_OPT(t, p) {t, offsetof(struct cli, p), 1}
static const struct fuse_opt cli_opts[] = {
	CLI_OPT("key=%s", key),
	CLI_OPT("keyfile=%s", keyfile),
	CLI_OPT("cache=%s", cache),
	CLI_OPT("threads=%s", threads),
	CLI_OPT("timestamp=%s", timestamp),
	CLI_OPT("whole_max=%s", whole_max),
	CLI_OPT("staging=%s", staging),
	CLI_OPT("cleanup_grace=%s", cleanup_grace),
	CLI_OPT("max_cells=%s", max_cells),
	CLI_OPT("max_memory=%s", max_memory),
	CLI_OPT("s3_endpoint=%s", s3_endpoint),
	CLI_OPT("s3_region=%s", s3_region),
	CLI_OPT("s3_addressing=%s", s3_addressing),
	CLI_OPT("s3_verify_tls=%s", s3_verify_tls),
	CLI_OPT("s3_credentials=%s", s3_credentials),
	FUSE_OPT_END,
};

enum { KEY_RO };

static int cli_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct cli *c = data;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT && !c->source) {
		c->source = strdup(arg);
		return c->source ? 0 : -1;
	}
	if (key == FUSE_OPT_KEY_OPT && strcmp(arg, "ro") == 0)
		c->read_only = 1;
	if (key == FUSE_OPT_KEY_OPT && strcmp(arg, "allow_other") == 0)
		c->allow_other = 1;
	if (key == FUSE_OPT_KEY_OPT && strcmp(arg, "default_permissions") == 0)
		c->default_permissions = 1;
	return 1; /* keep: libfuse and the kernel see it too */
}

static void usage(const char *prog)
{
	printf("usage: %s [options] SOURCE MOUNTPOINT\n\n"
	       "Shows every TileDB array under SOURCE as files and folders.\n\n"
	       "tilefs options:\n"
	       "    -o ro                  read-only mount (writes fail with EROFS)\n"
	       "    -o key=HEX             AES-256 key (64 hex digits) for encrypted arrays\n"
	       "    -o keyfile=PATH        keys: one 'relative/array/path HEXKEY' per line,\n"
	       "                           '*' for a default\n"
	       "    -o cache=SIZE          byte budget for decoded tiles (default 256M)\n"
	       "    -o threads=N           decode threads (default: one per CPU)\n"
	       "    -o timestamp=T         show arrays as of T (ms since the epoch or\n"
	       "                           ISO-8601 UTC)\n"
	       "    -o whole_max=N         render text files of selections up to N cells\n"
	       "                           (times fields) at open, with an exact size;\n"
	       "                           larger ones stream with size 0 (default 65536)\n"
	       "    -o staging=DIR         folder for files being written until their\n"
	       "                           commit (default: a new folder in $TMPDIR)\n"
	       "    -o cleanup_grace=S     uncommitted fragment folders older than S\n"
	       "                           seconds are removed as crashed writes, at\n"
	       "                           mount time and every 10 minutes (default 900)\n"
	       "    -o max_cells=N         cells of one file at most; more: EFBIG and a\n"
	       "                           log line (default: no limit)\n"
	       "    -o max_memory=SIZE     the daemon's data at most, caches included;\n"
	       "                           cache= shrinks to half of it if larger; an\n"
	       "                           open or read whose rendering (files rendered\n"
	       "                           whole count while open) would go over fails\n"
	       "                           with ENOMEM and a log line, and so does a\n"
	       "                           read of a tile larger than what the cache\n"
	       "                           leaves (default: no limit)\n"
	       "    -o s3_endpoint=URL     S3 endpoint (default: AWS_ENDPOINT_URL_S3,\n"
	       "                           AWS_ENDPOINT_URL, ~/.aws/config, or AWS)\n"
	       "    -o s3_region=NAME      S3 region (default: AWS_REGION, ...)\n"
	       "    -o s3_addressing=path|virtual  bucket in the path or the host name\n"
	       "    -o s3_verify_tls=0|1   check the server's TLS certificate (default 1)\n"
	       "    -o s3_credentials=FILE AWS credentials file (default: AWS_ACCESS_KEY_ID\n"
	       "                           and AWS_SECRET_ACCESS_KEY, ~/.aws/credentials)\n"
	       "                           SOURCE may be s3://bucket/prefix\n"
	       "    -f                     stay in the foreground, log to stderr\n"
	       "    -d                     debug log (implies -f)\n"
	       "    -h, --help             this help\n"
	       "    -V, --version          print the version\n\n"
	       "FUSE options:\n",
	       prog);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* Overwrites key=... in the process's own argument strings so that ps and
 * /proc/PID/cmdline no longer show it. */
static void scrub_keys(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		char *p = argv[i];

		while ((p = strstr(p, "key=")) != NULL) {
			p += 4;
			while (*p && *p != ',')
				*p++ = 'x';
		}
	}
}

static bool log_to_stderr;

static void log_sink(enum tfs_log_level level, const char *line)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

	if (log_to_stderr)
		fprintf(stderr, "tilefs: %s\n", line);
	else
		syslog(prio[level], "%s", line);
}

/* SOURCE in a bucket: the -o s3_* overrides go to the engine's S3
 * backends, and the bucket is checked now so that bad credentials, a
 * missing bucket or an unreachable endpoint fail the mount with one
 * message. SOURCE keeps its URI form ("s3://bucket/prefix"). */
static int configure_s3(struct tfsd_config *cfg, const struct cli *c)
{
	struct tfs_s3_opts o = {c->s3_endpoint, c->s3_region, c->s3_addressing,
				-1, c->s3_credentials, NULL};
	char *bucket = NULL, *path = NULL;
	struct tfs_vfs *v;
	struct tfs_diag d;
	size_t n;

	if (c->s3_verify_tls) {
		if (strcmp(c->s3_verify_tls, "0") && strcmp(c->s3_verify_tls, "1")) {
			fprintf(stderr, "tilefs: s3_verify_tls='%s': not 0 or 1\n",
				c->s3_verify_tls);
			return 2;
		}
		o.verify_tls = c->s3_verify_tls[0] == '1';
	}
	tfs_diag_init(&d);
	if (tfs_s3_uri_parse(c->source, &bucket, &path, &d)) {
		fprintf(stderr, "tilefs: %s\n", tfs_diag_msg(&d));
		return 2;
	}
	n = strlen(bucket) + strlen(path) + 8;
	cfg->source = tfs_malloc(n);
	if (cfg->source)
		snprintf(cfg->source, n, "s3://%s%s", bucket,
			 strcmp(path, "/") ? path : "");
	tfs_free(bucket);
	tfs_free(path);
	if (!cfg->source)
		return 1;
	tfs_vfs_default_s3_opts(&o);
	if (tfs_vfs_default_new(cfg->source, &v, &d)) {
		fprintf(stderr, "tilefs: source '%s': %s\n", cfg->source,
			tfs_diag_msg(&d));
		return 1;
	}
	tfs_vfs_free(v);
	return 0;
}

static int configure(struct tfsd_config *cfg, struct cli *c,
		     struct fuse_cmdline_opts *fo)
{
	struct tfs_diag d;
	char *real;

	tfs_diag_init(&d);
	if (!c->source || !fo->mountpoint) {
		fprintf(stderr, "tilefs: usage: tilefs [options] SOURCE MOUNTPOINT "
				"(see --help)\n");
		return 2;
	}
	if (tfs_s3_is_uri(c->source)) {
		int rc = configure_s3(cfg, c);

		if (rc)
			return rc;
	} else {
		real = realpath(c->source, NULL);
		if (!real) {
			fprintf(stderr, "tilefs: source '%s': %s\n", c->source,
				strerror(errno));
			return 1;
		}
		cfg->source = tfs_strdup(real);
		free(real);
	}
	cfg->mountpoint = tfs_strdup(fo->mountpoint);
	if (!cfg->source || !cfg->mountpoint)
		return 1;
	cfg->read_only = c->read_only;
	cfg->foreground = fo->foreground;
	cfg->debug = fo->debug;
	cfg->cache_bytes = (uint64_t)256 << 20;
	if (c->cache && tfsd_parse_size(c->cache, &cfg->cache_bytes)) {
		fprintf(stderr, "tilefs: cache='%s': not a size (e.g. 256M)\n",
			c->cache);
		return 2;
	}
	if (c->threads) {
		char *end;
		unsigned long v = strtoul(c->threads, &end, 10);

		if (*end || v == 0 || v > 1024) {
			fprintf(stderr, "tilefs: threads='%s': not 1..1024\n",
				c->threads);
			return 2;
		}
		cfg->threads = (unsigned)v;
	}
	cfg->whole_max_cells = 65536;
	if (c->whole_max && tfsd_parse_size(c->whole_max, &cfg->whole_max_cells)) {
		fprintf(stderr, "tilefs: whole_max='%s': not a number\n",
			c->whole_max);
		return 2;
	}
	if (c->max_cells && (tfsd_parse_size(c->max_cells, &cfg->max_cells) ||
			     cfg->max_cells == 0)) {
		fprintf(stderr, "tilefs: max_cells='%s': not a positive number\n",
			c->max_cells);
		return 2;
	}
	if (c->max_memory &&
	    (tfsd_parse_size(c->max_memory, &cfg->max_memory) ||
	     cfg->max_memory < ((uint64_t)1 << 20))) {
		fprintf(stderr, "tilefs: max_memory='%s': not a size of 1M or "
				"more\n",
			c->max_memory);
		return 2;
	}
	if (cfg->max_memory && cfg->cache_bytes > cfg->max_memory / 2)
		cfg->cache_bytes = cfg->max_memory / 2;
	if (c->timestamp && (tfsd_parse_time(c->timestamp, &cfg->timestamp) ||
			     cfg->timestamp == 0)) {
		fprintf(stderr, "tilefs: timestamp='%s': not ms since the epoch "
				"or ISO-8601\n",
			c->timestamp);
		return 2;
	}
	/* A mount of the past cannot take writes. */
	if (cfg->timestamp)
		cfg->read_only = true;
	if (c->key) {
		if (tfs_key_from_hex(cfg->default_key, c->key)) {
			fprintf(stderr, "tilefs: key must be 64 hex digits\n");
			return 2;
		}
		cfg->has_default_key = true;
		memset(c->key, 0, strlen(c->key));
	}
	if (c->staging && !(cfg->staging = tfs_strdup(c->staging)))
		return 1;
	if (c->cleanup_grace) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(c->cleanup_grace, &end, 10);
		if (errno || end == c->cleanup_grace || *end ||
		    v > UINT64_MAX / 1000) {
			fprintf(stderr, "tilefs: cleanup_grace='%s': not a number "
					"of seconds\n",
				c->cleanup_grace);
			return 2;
		}
		cfg->cleanup_grace_ms = (uint64_t)v * 1000;
		cfg->cleanup_grace_set = true;
	}
	if (c->keyfile && tfsd_keyfile_load(cfg, c->keyfile, &d)) {
		fprintf(stderr, "tilefs: %s\n", tfs_diag_msg(&d));
		return 2;
	}
	/* Keys live in many places (options, each opened array, cipher
	 * contexts): no core file may hold them, and no process of the same
	 * user may read them with ptrace or /proc/PID/mem (as ssh-agent). */
	if ((cfg->has_default_key || cfg->key_num) &&
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		fprintf(stderr, "tilefs: cannot protect the keys: %s\n",
			strerror(errno));
		return 1;
	}
	return 0;
}

/* The kernel caps a FUSE mount's read-ahead at 128 KiB whatever the
 * daemon asks, so sequential readers get 128 KiB requests. The mount's
 * backing device takes a larger window (root only; others keep 128 KiB).
 * Found through mountinfo: stat of the mountpoint would need this very
 * daemon to answer. */
static void raise_readahead(const char *mountpoint)
{
	char *real = realpath(mountpoint, NULL);
	FILE *mi = fopen("/proc/self/mountinfo", "r");
	char line[4096], dev[32] = "";

	while (real && mi && fgets(line, sizeof(line), mi)) {
		unsigned id, parent, major, minor;
		char root[2048], mnt[2048];

		if (sscanf(line, "%u %u %u:%u %2047s %2047s", &id, &parent,
			   &major, &minor, root, mnt) == 6 &&
		    strcmp(mnt, real) == 0)
			snprintf(dev, sizeof(dev), "%u:%u", major, minor);
	}
	if (mi)
		fclose(mi);
	free(real);
	if (dev[0]) {
		char path[96];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb",
			 dev);
		f = fopen(path, "w");
		if (f) {
			fprintf(f, "%zu\n", MAX_READ >> 10);
			if (fclose(f) != 0)
				tfs_log(TFS_LOG_DEBUG, "read-ahead not raised");
		}
	}
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts fo = {0};
	struct fuse_loop_config *loop = NULL;
	struct fuse_session *se = NULL;
	struct tfsd *fs = &tfs_daemon;
	struct tfsd_cleaner *cleaner = NULL;
	struct cli c = {0};
	int ret = 1;

	/* Memory stays near cache=: few malloc arenas for the many request
	 * threads (each arena keeps what it freed). */
	mallopt(M_ARENA_MAX, 2);
	if (fuse_opt_parse(&args, &c, cli_opts, cli_proc) != 0)
		return 2;
	scrub_keys(argc, argv);
	if (fuse_parse_cmdline(&args, &fo) != 0) {
		ret = 2;
		goto out_args;
	}
	if (fo.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out_args;
	}
	if (fo.show_version) {
		printf("tilefs %s\n", TILEFS_VERSION);
		printf("FUSE library version %s\n", fuse_pkgversion());
		ret = 0;
		goto out_args;
	}
	ret = configure(&fs->cfg, &c, &fo);
	if (ret)
		goto out_args;
	log_to_stderr = fo.foreground;
	if (!log_to_stderr)
		openlog("tilefs", LOG_PID, LOG_DAEMON);
	tfs_log_configure(log_sink, fo.debug ? TFS_LOG_DEBUG : TFS_LOG_INFO);
	ret = 1;
	/* Files are at most MAX_READ per request; the kernel caps it too. */
	if (fuse_opt_add_arg(&args, "-omax_read=1048576") != 0)
		goto out_fs;
	if (!fs->cfg.read_only) {
		struct tfs_diag d;

		tfs_diag_init(&d);
		if (tfsd_staging_new(fs->cfg.staging, &fs->staging, &d)) {
			fprintf(stderr, "tilefs: %s\n", tfs_diag_msg(&d));
			goto out_fs;
		}
	}
	/* Other users see the mount only under the modes of SOURCE: the
	 * daemon does no permission checks of its own. */
	if (c.allow_other && !c.default_permissions &&
	    fuse_opt_add_arg(&args, "-odefault_permissions") != 0)
		goto out_fs;
	se = fuse_session_new(&args, &tfsd_ops, sizeof(tfsd_ops), fs);
	if (!se)
		goto out_fs;
	tfs_session = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, fo.mountpoint) != 0)
		goto out_signals;
	tfs_log(TFS_LOG_INFO, "mounted '%s' on '%s'%s", fs->cfg.source,
		fs->cfg.mountpoint, fs->cfg.read_only ? " (read-only)" : "");
	raise_readahead(fo.mountpoint);
	if (fuse_daemonize(fo.foreground) != 0)
		goto out_unmount;
	/* Threads start after daemonizing: fork keeps only the caller. */
	/* cache= bounds the daemon's data: 3/4 for decoded tiles, 1/8 for
	 * rendered files, 1/8 for the tiles and windows of reads in flight
	 * (an evicted tile lives on while a reader holds it). */
	/* max_memory: what the caches leave, for renderings in flight. */
	fs->render_limit = tfsd_data_limit(&fs->cfg);
	if (tfs_tile_cache_new(fs->cfg.cache_bytes / 4 * 3, &fs->tiles) ||
	    tfs_pool_new((fs->cfg.threads ? fs->cfg.threads : tfs_cpu_count()) - 1,
			 &fs->pool) ||
	    tfsd_arrays_new(&fs->cfg, fs->tiles, fs->pool, &fs->arrays) ||
	    tfsd_renders_new(fs->cfg.cache_bytes / 8,
			     &fs->renders) ||
	    tfsd_prefetch_new(fs->arrays, &fs->prefetch) ||
	    (!fs->cfg.read_only && tfsd_ilog_new(&fs->ilog))) {
		tfs_log(TFS_LOG_ERROR, "cannot start: out of memory");
		goto out_unmount;
	}
	if (!fs->cfg.read_only && tfsd_cleaner_start(fs, &cleaner))
		tfs_log(TFS_LOG_ERROR, "leftovers of crashed writes will not be "
				       "cleaned up: cannot start a thread");
	loop = fuse_loop_cfg_create();
	if (!loop)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(loop, (unsigned)fo.clone_fd);
	fuse_loop_cfg_set_max_threads(loop, fo.max_threads ? fo.max_threads : 16);
	fuse_loop_cfg_set_idle_threads(loop, fo.max_idle_threads != UINT_MAX
						     ? fo.max_idle_threads
						     : 8);
	ret = fo.singlethread ? fuse_session_loop(se)
			      : fuse_session_loop_mt(se, loop);
	ret = ret < 0 ? 1 : 0;
	fuse_loop_cfg_destroy(loop);
out_unmount:
	tfsd_cleaner_stop(cleaner);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	tfs_session = NULL;
	fuse_session_destroy(se);
out_fs:
	for (size_t i = 0; i < retired.n; i++)
		tfs_free(retired.v[i]);
	tfs_free(retired.v);
	tfsd_staging_free(fs->staging);
	tfsd_ilog_free(fs->ilog);
	tfs_free(fs->cfg.staging);
	fs->cfg.staging = NULL;
	tfsd_prefetch_free(fs->prefetch);
	tfsd_renders_free(fs->renders);
	tfsd_arrays_free(fs->arrays);
	tfs_pool_free(fs->pool);
	tfs_tile_cache_free(fs->tiles);
	tfsd_config_release(&fs->cfg);
out_args:
	free(fo.mountpoint);
	free(c.source);
	free(c.key);
	free(c.keyfile);
	free(c.cache);
	free(c.threads);
	free(c.timestamp);
	free(c.whole_max);
	free(c.staging);
	free(c.cleanup_grace);
	free(c.max_cells);
	free(c.max_memory);
	free(c.s3_endpoint);
	free(c.s3_region);
	free(c.s3_addressing);
	free(c.s3_verify_tls);
	free(c.s3_credentials);
	fuse_opt_free_args(&args);
	return ret;
}
