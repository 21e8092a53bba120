/* The write side of the daemon's file operations, without FUSE: what
 * stat shows of a staged file and of an ingest.log, new staged files
 * (seeded with the current bytes of the view file they rewrite), and the
 * commit of a staged file with its record in ingest.log. fuse_ll.c calls
 * these and tells the kernel what changed. */
#include "tfsd_write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"

/* Bytes copied per read when seeding a staged file. */
#define SEED_CHUNK ((size_t)1 << 20)

void tfsd_staged_stat(struct tfsd_staged *sf, struct stat *st)
{
	struct stat real;

	memset(st, 0, sizeof(*st));
	if (fstat(sf->fd, &real) == 0) {
		*st = real;
		st->st_mode = S_IFREG | (real.st_mode & 07777);
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_uid = getuid();
		st->st_gid = getgid();
	}
	st->st_nlink = 1;
	st->st_blksize = 1 << 20;
}

bool tfsd_ilog_dir(struct tfsd *fs, const char *vpath, char **dir)
{
	const char *slash = strrchr(vpath, '/');
	const char *base = slash ? slash + 1 : vpath;
	struct tfsd_node n;
	struct tfs_diag d;
	bool yes = false;

	*dir = NULL;
	if (!fs->ilog || strcmp(base, "ingest.log") != 0)
		return false;
	*dir = slash ? tfs_strndup(vpath, (size_t)(slash - vpath))
		     : tfs_strdup("");
	if (!*dir)
		return false;
	tfs_diag_init(&d);
	if (tfsd_resolve(fs, *dir, &n, &d) == TFS_E_OK) {
		yes = (n.kind == TFSD_N_ARRAY && !n.version_view) ||
		      (n.kind == TFSD_N_FOLDER && tfsd_ilog_has(fs->ilog, *dir));
		tfsd_node_release(fs, &n);
	}
	if (!yes) {
		tfs_free(*dir);
		*dir = NULL;
	}
	return yes;
}

void tfsd_ilog_stat(struct tfsd *fs, const char *dir, struct stat *st)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	if (tfsd_ilog_render(fs->ilog, dir, &b))
		b.len = 0;
	memset(st, 0, sizeof(*st));
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)b.len;
	st->st_blksize = 1 << 20;
	tfs_buf_release(&b);
}

/* Writes into buf the path at which a commit's effect shows; *entry:
 * that name is new (a created array). */
static void commit_scope(const struct tfsd_wtarget *t, char *buf, size_t cap,
			 bool *entry)
{
	*entry = t->kind == TFSD_W_CSV_NEW || t->kind == TFSD_W_NPY_NEW;
	if (*entry)
		snprintf(buf, cap, "%s%s%.*s", t->log_dir,
			 *t->log_dir ? "/" : "", (int)(strlen(t->name) - 4),
			 t->name);
	else
		snprintf(buf, cap, "%s", t->log_dir);
}

int tfsd_staged_commit(struct tfsd *fs, struct tfsd_staged *sf, char *scope,
		       size_t scope_cap, bool *entry)
{
	struct tfsd_wresult res;
	struct tfs_diag d;
	enum tfs_err e;
	int err = 0;

	if (scope_cap)
		scope[0] = '\0';
	*entry = false;
	/* A file removed while open (rm of a file being written) is
	 * gone with its bytes, as on any file system. */
	if (!tfsd_staged_listed(fs->staging, sf))
		return 0;
	pthread_mutex_lock(&sf->lock);
	if (!sf->dirty || !tfsd_wtarget_commits(&sf->target)) {
		err = tfsd_wtarget_commits(&sf->target) ? sf->error : 0;
		pthread_mutex_unlock(&sf->lock);
		return err;
	}
	sf->dirty = false;
	sf->committed = true;
	tfs_diag_init(&d);
	e = tfsd_write_commit(fs, &sf->target, sf->tmp, &res, &d);
	if (e) {
		tfsd_ilog_add(fs->ilog, sf->target.log_dir, sf->target.name,
			      true, d.code ? tfs_diag_msg(&d) : tfs_strerror(e));
		err = tfsd_write_errno(e);
	} else if (res.wrote) {
		/* An empty file (touch) wrote nothing: nothing to record. */
		tfsd_ilog_add(fs->ilog, sf->target.log_dir, sf->target.name,
			      false, res.what);
		commit_scope(&sf->target, scope, scope_cap, entry);
	}
	sf->error = err;
	pthread_mutex_unlock(&sf->lock);
	return err;
}

int tfsd_staged_last_close(struct tfsd *fs, struct tfsd_staged *sf,
			   char *scope, size_t scope_cap, bool *entry)
{
	bool commits;
	int err;
	struct stat st;

	err = tfsd_staged_commit(fs, sf, scope, scope_cap, entry);
	pthread_mutex_lock(&sf->lock);
	commits = tfsd_wtarget_commits(&sf->target);
	pthread_mutex_unlock(&sf->lock);
	/* An empty file stays, like a temporary: tools create a file,
	 * close it and open it again to write (numpy.savetxt), and touch
	 * makes a file that ls shows. */
	if (commits && fstat(sf->fd, &st) == 0 && st.st_size > 0)
		tfsd_staged_unlist(fs->staging, sf);
	return err;
}

/* Slices larger than this are not copied into a staged file opened
 * without O_TRUNC: it starts empty (a rewrite must then be whole). */
#define SEED_MAX ((uint64_t)256 << 20)

/* Copies the current bytes of the view file at vpath (a metadata value,
 * a raw or .npy slice) into a staged file, so that a partial rewrite
 * (dd conv=notrunc seek=, r+b, >>) changes only what it
 * writes. Failures leave it empty: a later commit then checks sizes. */
static void stage_seed(struct tfsd *fs, const char *vpath,
		       struct tfsd_staged *sf)
{
	struct tfsd_file *f = NULL;
	struct tfsd_size sz;
	struct tfsd_node n;
	struct tfs_diag d;
	uint8_t *buf = NULL;
	uint64_t off = 0;

	tfs_diag_init(&d);
	if (tfsd_resolve(fs, vpath, &n, &d) != TFS_E_OK)
		return;
	if (n.kind != TFSD_N_FILE ||
	    tfsd_file_size(fs, &n, vpath, &sz, &d) != TFS_E_OK ||
	    sz.size > SEED_MAX ||
	    tfsd_file_open(fs, &n, vpath, &f, &d) != TFS_E_OK)
		goto out;
	buf = tfs_malloc(SEED_CHUNK);
	while (buf) {
		size_t got = 0;

		if (tfsd_file_read(fs, f, off, buf, SEED_CHUNK, &got, &d) ||
		    got == 0)
			break;
		if (pwrite(sf->fd, buf, got, (off_t)off) != (ssize_t)got ||
		    off + got > SEED_MAX) {
			if (ftruncate(sf->fd, 0) != 0)
				tfs_log(TFS_LOG_ERROR, "'/%s': staged file: %s",
					vpath, strerror(errno));
			break;
		}
		off += got;
	}
out:
	if (d.code)
		tfs_log(TFS_LOG_INFO, "'/%s': opened for writing empty: %s",
			vpath, tfs_diag_msg(&d));
	tfs_free(buf);
	if (f)
		tfsd_file_close(fs, f);
	tfsd_node_release(fs, &n);
}

/* A new staged file for vpath (open for writing of an existing view file,
 * or create). seed: start with the current bytes of that view file. */
enum tfs_err tfsd_stage_new(struct tfsd *fs, const char *vpath, bool seed,
			    struct tfsd_staged **out, struct tfs_diag *d)
{
	struct tfsd_wtarget t;
	enum tfs_err e;

	*out = NULL;
	if (!fs->staging)
		return tfs_fail(d, TFS_E_READONLY, "read-only mount");
	e = tfsd_write_classify(fs, vpath, &t, d);
	if (e)
		return e;
	if (t.kind == TFSD_W_TEMP)
		tfs_log(TFS_LOG_INFO,
			"'/%s': a temporary file (not NAME.csv, schema.json or "
			"a view file): nothing is committed unless it is "
			"renamed to such a name",
			vpath);
	e = tfsd_staged_create(fs->staging, vpath, &t, out, d);
	tfsd_wtarget_release(&t);
	if (e)
		return e;
	if (seed && ((*out)->target.kind == TFSD_W_META ||
		     (*out)->target.kind == TFSD_W_SLICE))
		stage_seed(fs, vpath, *out);
	return TFS_E_OK;
}

