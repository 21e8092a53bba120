/* The daemon's inode table: one inode per (path of the mount, version),
 * counted by the kernel's lookups, as libfuse's passthrough_ll keeps one
 * per real inode. FUSE itself stays out: the FUSE layer uses an inode's
 * address as its number (the root has its own), so the table is tested
 * without mounting.
 *
 * Thread safety: every function may be called from any thread; the table
 * has one lock, never held across I/O or a call out of this file. */
#ifndef TFSD_INODE_TABLE_H
#define TFSD_INODE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_err.h"

/* An inode is a path and, for files inside an array view, the version of
 * the array it shows: when a new fragment makes a new version, a lookup
 * gives a new inode, so the page cache of a file open on the old version
 * (another inode) keeps the old bytes. */
struct tfsd_inode {
	/* "" for the root. Read without the lock: a string an inode had
	 * before tfsd_itable_move stays valid until tfsd_itable_free. */
	char *vpath;
	uint64_t version;        /* tfsd_arr.gen of a file's array; 0 else */
	/* A file of a version: the size and time last reported for it
	 * (atomic), reported again once the path shows a newer version, so
	 * that the kernel's size of this inode never mixes versions. */
	uint64_t size;
	int64_t mtime_ns;
	bool stat_known; /* atomic */
	uint64_t nlookup;        /* protected by the table's lock */
	struct tfsd_inode *next; /* hash chain, protected by the table's lock */
};

struct tfsd_itable;

/* A new empty table (the root only) with 2^bucket_bits hash chains
 * (1..24). */
enum tfs_err tfsd_itable_new(unsigned bucket_bits,
			     struct tfsd_itable **out) TFS_WUR;
/* Frees the table, every inode left in it and the retired paths; NULL is
 * fine. No other call may run at the same time or after. */
void tfsd_itable_free(struct tfsd_itable *t);

/* The root inode: never counted, never freed. */
struct tfsd_inode *tfsd_itable_root(struct tfsd_itable *t);

/* The inode of (vpath, version) with one more lookup, made when there is
 * none; "" is the root (not counted). NULL: no memory. */
struct tfsd_inode *tfsd_inode_ref(struct tfsd_itable *t, const char *vpath,
				  uint64_t version);
/* The kernel forgets n lookups of in: at zero the inode leaves the table
 * and is freed. More than the inode has is a bug of the count: a log line,
 * then an assertion in debug builds; in release builds the inode is
 * dropped as if its count had been n, and TFS_E_INTERNAL says so. Forgets
 * of the root are ignored. */
enum tfs_err tfsd_inode_unref(struct tfsd_itable *t, struct tfsd_inode *in,
			      uint64_t n) TFS_WUR;
/* The lookup count of in (tests and logs). */
uint64_t tfsd_inode_lookups(struct tfsd_itable *t, const struct tfsd_inode *in);
/* Inodes in the table, the root not counted. */
size_t tfsd_itable_count(struct tfsd_itable *t);

/* The inode of (vpath, version) without a reference, or NULL; the root
 * for "". Another thread's forget may free it at once: the result is only
 * a number to tell the kernel about. */
struct tfsd_inode *tfsd_itable_find(struct tfsd_itable *t, const char *vpath,
				    uint64_t version);

/* Lists the version-0 inode of from under vpath instead (a staged file
 * renamed to another temporary name), so that requests on it find the
 * file there. Does nothing when from has no such inode or on lack of
 * memory (the inode keeps its path). */
void tfsd_itable_move(struct tfsd_itable *t, const char *from,
		      const char *vpath);

/* Every inode at or under prefix ("" = all, the root excluded) into
 * *inodes (tfs_free) and their paths, NUL-terminated one after the
 * other, appended to names; *n of them. Same caveat as tfsd_itable_find.
 * TFS_E_NOMEM when memory ran out: *inodes then holds those found
 * before. */
enum tfs_err tfsd_itable_under(struct tfsd_itable *t, const char *prefix,
			       struct tfsd_inode ***inodes, size_t *n,
			       struct tfs_buf *names) TFS_WUR;

#endif
