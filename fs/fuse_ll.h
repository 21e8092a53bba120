/* The FUSE layer of the daemon, shared by its files: the state every
 * request reaches through fuse_req_userdata(), the open-file handles, and
 * the helpers the handlers have in common (fuse_node.c). The handlers
 * (fuse_ll.c reading, fuse_ll_write.c writing) each do their work in a
 * do_x() that returns 0 or a positive errno, taken from the error table
 * (tfs_err_errno) or from a system call, and reply exactly once. main.c
 * starts the session with tfsd_ll_ops. */
#ifndef TFSD_FUSE_LL_H
#define TFSD_FUSE_LL_H

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "inode_table.h"
#include "tfsd.h"
#include "tfsd_write.h"

/* Bytes of one read or write request at most (the session's -omax_read
 * and the connection's max_read, max_write and read-ahead). */
#define TFSD_MAX_READ ((size_t)1 << 20)

/* The daemon: what fuse_session_new() is given as userdata. */
struct tfsd_ll {
	struct tfsd fs;
	struct tfsd_itable *itab;
	/* For notifications to the kernel after a write; NULL while no
	 * session runs. Set before the loop starts, cleared after it. */
	struct fuse_session *se;
	/* Open files the kernel has not released yet, freed at shutdown
	 * (a daemon stopped while files are open gets no release). */
	pthread_mutex_t fh_lock;
	struct tfsd_fh *fhs;
};

extern const struct fuse_lowlevel_ops tfsd_ll_ops;

static inline struct tfsd_ll *tfsd__ll(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Inode numbers are inode addresses, the root's FUSE_ROOT_ID. */
struct tfsd_inode *tfsd__inode(struct tfsd_ll *ll, fuse_ino_t ino);
fuse_ino_t tfsd__ino(struct tfsd_ll *ll, struct tfsd_inode *in);

/* "parent/name" (tfs_free); NULL: no memory. */
char *tfsd__child_path(const struct tfsd_inode *parent, const char *name);
/* The errno of e, after one log line when d says why (an error, or for a
 * name that is not there an info line). */
int tfsd__fail(const char *vpath, enum tfs_err e, const struct tfs_diag *d);

/* ---- Nodes (fuse_node.c) ------------------------------------------------- */

/* Seconds the kernel may trust what it was told of n. */
double tfsd__timeout(struct tfsd_ll *ll, const struct tfsd_node *n);
/* The version that names the inode of a node. */
uint64_t tfsd__version(const struct tfsd_node *n);
/* Attributes of a resolved node. */
enum tfs_err tfsd__stat(struct tfsd_ll *ll, const struct tfsd_node *n,
			const char *vpath, fuse_ino_t ino, struct stat *st,
			struct tfs_diag *d) TFS_WUR;
/* The entry of a resolved node: its inode (one more lookup), attributes
 * and timeouts. */
/* The size and time of a file of a version, remembered in its inode at
 * each stat of that version; recalled (true) into st once the path shows
 * another version: an inode is one version's file, whatever the path
 * shows now, so an open of it never sees another version's size. */
void tfsd__inode_remember(struct tfsd_inode *in, const struct stat *st);
bool tfsd__inode_recall(const struct tfsd_inode *in, struct stat *st);
enum tfs_err tfsd__entry(struct tfsd_ll *ll, const struct tfsd_node *n,
			 const char *vpath, struct fuse_entry_param *ep,
			 struct tfs_diag *d) TFS_WUR;
/* How many times a step that met a vanished file is tried again. */
#define TFSD_STALE_TRIES 4
/* After a step on n failed with e: whether a vacuum may have removed
 * files the view still lists; then n is resolved again (true) and the
 * step may be retried. */
bool tfsd__stale_retry(struct tfsd_ll *ll, struct tfsd_node *n,
		       const char *vpath, enum tfs_err e, struct tfs_diag *why);

/* ---- Open files (fuse_node.c) -------------------------------------------- */

#define TFSD_FH_MAGIC 0x74667368u

/* An open file: a view file being read, a staged file being written (or
 * read back), or a rendered ingest.log. */
struct tfsd_fh {
	uint32_t magic; /* TFSD_FH_MAGIC: not a folder's listing */
	struct tfsd_file *rf;
	struct tfsd_staged *sf;
	struct tfs_buf doc;
	struct tfsd_fh *prev, *next; /* in tfsd_ll.fhs */
};

/* The open file of fi; NULL when fi is none or a folder's (the kernel
 * passes handles with getattr and setattr of open files). */
struct tfsd_fh *tfsd__fh(const struct fuse_file_info *fi);
/* A new empty handle, on ll's list of open files; NULL: no memory. */
struct tfsd_fh *tfsd__fh_new(struct tfsd_ll *ll);
void tfsd__fh_free(struct tfsd_ll *ll, struct tfsd_fh *h);
/* Frees the open files left at shutdown (their staged files stay with
 * the staging table). */
void tfsd__fh_free_all(struct tfsd_ll *ll);
/* Ends an open file (release, or an open the kernel gave up on). */
void tfsd__fh_close(struct tfsd_ll *ll, struct tfsd_fh *h);
/* Opens the staged file sf into fi (opened: its open count already
 * counts this one); O_TRUNC empties it. On failure sf's references are
 * dropped. */
int tfsd__open_staged(struct tfsd_ll *ll, struct tfsd_staged *sf,
		      struct fuse_file_info *fi, bool opened);

/* The staged file at vpath (a reference) or NULL. */
struct tfsd_staged *tfsd__staged_at(struct tfsd_ll *ll, const char *vpath);
void tfsd__staged_stat(struct tfsd_staged *sf, fuse_ino_t ino, struct stat *st);
void tfsd__ilog_stat(struct tfsd_ll *ll, const char *dir, fuse_ino_t ino,
		     struct stat *st);

/* ---- Telling the kernel (fuse_node.c) ------------------------------------ */

/* The kernel forgets the name vpath in its folder. */
void tfsd__inval_entry(struct tfsd_ll *ll, const char *vpath);
/* The kernel forgets what it cached at or under prefix; with entry, also
 * the name prefix. Not while the kernel waits for a reply under the
 * folder's lock (rename, unlink, mkdir: reply first). */
void tfsd__inval_under(struct tfsd_ll *ll, const char *prefix, bool entry);
/* Commits a staged file; the errno for close(). invalidate: tell the
 * kernel now; else scope (scope_cap bytes) and *entry say what to tell
 * it after the reply. */
int tfsd__staged_commit(struct tfsd_ll *ll, struct tfsd_staged *sf,
			bool invalidate, char *scope, size_t scope_cap,
			bool *entry);

/* ---- Writing handlers (fuse_ll_write.c) ---------------------------------- */

void tfsd_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		   size_t size, off_t off, struct fuse_file_info *fi);
void tfsd_ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void tfsd_ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		   struct fuse_file_info *fi);
void tfsd_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, struct fuse_file_info *fi);
void tfsd_ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		     int to_set, struct fuse_file_info *fi);
void tfsd_ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		    fuse_ino_t newparent, const char *newname,
		    unsigned int flags);
void tfsd_ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void tfsd_ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode);
void tfsd_ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);

/* getattr's work, for setattr of a view file (fuse_ll.c). */
int tfsd__getattr(struct tfsd_ll *ll, fuse_ino_t ino,
		  struct fuse_file_info *fi, struct stat *st, double *timeout);

#endif
