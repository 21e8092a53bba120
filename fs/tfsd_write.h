/* Writing through the mount (SPEC §6): what a written path means, the
 * staged files that hold written bytes until their commit, the commit
 * itself on the core's write API, and the ingest logs that record every
 * write and refusal. Nothing here knows about FUSE: fuse_ll.c calls these
 * from its create, write, flush, fsync, release, rename, unlink and mkdir
 * handlers, and the unit tests call them without mounting. */
#ifndef TFSD_WRITE_H
#define TFSD_WRITE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tfsd.h"

/* ---- What a written path means (write_target.c), metadata values
 * (write_meta_value.c), commits (write_ops.c, write_slice.c, write_npy.c) */

enum tfsd_wkind {
	TFSD_W_CSV_ARRAY, /* A/NAME.csv: one fragment of the array A */
	TFSD_W_CSV_NEW,   /* DIR/NAME.csv: a new array DIR/NAME from the CSV */
	TFSD_W_SCHEMA,    /* DIR/schema.json in an empty folder: a new array */
	TFSD_W_SLICE,     /* A/<attr>/slice[SEL] or .npy: a dense fragment */
	TFSD_W_META,      /* A/metadata/<key>: sets the key */
	TFSD_W_NPY_NEW,   /* DIR/NAME.npy: a new dense array DIR/NAME */
	TFSD_W_NPY_ARRAY, /* A/NAME.npy: appended along A's first dimension */
	TFSD_W_EVOLVE,    /* A/schema.json: evolves the array's schema */
	TFSD_W_DELETE, /* A/delete: a condition; deletes the cells it matches */
	/* Any other new name in an array or plain folder (an rsync or
	 * editor temporary): staged only, committed when renamed onto one
	 * of the names above. */
	TFSD_W_TEMP,
};

struct tfsd_wtarget {
	enum tfsd_wkind kind;
	char *rel;     /* the array's (or folder's) path relative to SOURCE */
	char *path;    /* absolute: the array; CSV_NEW the array to create;
			  SCHEMA the folder */
	char *name;    /* the written file's name (messages) */
	char *key;     /* META: the metadata key (decoded file name) */
	size_t key_len;
	char *field;   /* SLICE: the attribute */
	char *sel;     /* SLICE: the SEL text */
	size_t sel_len;
	bool npy;      /* SLICE: the bytes are a .npy file */
	char *log_dir; /* path of the mount whose ingest.log records it */
};

/* Frees a target's strings and empties it (staging.c). */
void tfsd_wtarget_release(struct tfsd_wtarget *t);

/* What writing the file at vpath (a path of the mount) means. A path that
 * cannot be written is TFS_E_PERM (EACCES) with a message saying why;
 * on a read-only mount, in a version view or with a timestamp= mount,
 * TFS_E_READONLY (EROFS). */
enum tfs_err tfsd_write_classify(struct tfsd *fs, const char *vpath,
				 struct tfsd_wtarget *out,
				 struct tfs_diag *d) TFS_WUR;

/* Whether a write to t is committed (false: TEMP, kept until renamed). */
static inline bool tfsd_wtarget_commits(const struct tfsd_wtarget *t)
{
	return t->kind != TFSD_W_TEMP;
}

/* "%41" → "A": the metadata key a file name of A/metadata/ stands for
 * (tfsd_meta_name_encode reversed). Bad escapes are taken literally. */
enum tfs_err tfsd_meta_name_decode(struct tfs_buf *out, const char *name) TFS_WUR;

/* Parses the text written to metadata/<key> (SPEC §6; without one
 * trailing newline). A key that exists keeps its type: a numeric key
 * takes one value of its type per line, a string key the text; text
 * that is no value of the key's type is TFS_E_INVALID with the reason in
 * d, never converted. A new key (old NULL or deleted) takes its type
 * from the text: integers INT64, other decimal numbers FLOAT64 (one
 * value per line, several lines a list), anything else one UTF-8
 * string. out->key is left alone; out->value is allocated (tfs_free). */
enum tfs_err tfsd_meta_value_parse(const struct tfs_meta_kv *old,
				   const char *text, size_t len,
				   struct tfs_meta_kv *out,
				   struct tfs_diag *d) TFS_WUR;

/* What a commit did, for the ingest log. */
struct tfsd_wresult {
	bool wrote;        /* false: nothing to commit (an empty file) */
	char what[192];    /* "fragment NAME, 12 cells" / "array created" */
};

/* Commits the staged file at staged_path (a POSIX path) as t says. On
 * success the array cache forgets the array so the next lookup reopens
 * it. Bad input is TFS_E_INVALID with the reason in d. */
enum tfs_err tfsd_write_commit(struct tfsd *fs, const struct tfsd_wtarget *t,
			       const char *staged_path,
			       struct tfsd_wresult *res,
			       struct tfs_diag *d) TFS_WUR;

/* Deletes metadata key `key` of the array at t (kind META). */
enum tfs_err tfsd_write_meta_delete(struct tfsd *fs,
				    const struct tfsd_wtarget *t,
				    struct tfs_diag *d) TFS_WUR;

/* The errno a failed commit returns to close(): refused input is EINVAL
 * (also for TFS_E_RANGE), everything else the error's own errno. */
int tfsd_write_errno(enum tfs_err e);

/* ---- Ingest logs (ingest_log.c) ------------------------------------------ */

/* Recent writes per folder of the mount, newest last, bounded in lines
 * per folder and in folders. Thread-safe. */
struct tfsd_ilog;
enum tfs_err tfsd_ilog_new(struct tfsd_ilog **out) TFS_WUR;
void tfsd_ilog_free(struct tfsd_ilog *l);
/* Records one line "TIME  FILE  OUTCOME" under dir (a vpath) and logs it
 * (error level when failed). */
void tfsd_ilog_add(struct tfsd_ilog *l, const char *dir, const char *file,
		   bool failed, const char *outcome);
/* Whether dir has a log. */
bool tfsd_ilog_has(struct tfsd_ilog *l, const char *dir);
/* Appends the log of dir (empty when none). */
enum tfs_err tfsd_ilog_render(struct tfsd_ilog *l, const char *dir,
			      struct tfs_buf *out) TFS_WUR;

/* ---- Staged files (staging.c) -------------------------------------------- */

/* A file being written: its bytes live in a private file of the staging
 * folder (never inside SOURCE) until the commit. Refcounted; the fields
 * below the lock are protected by it. */
struct tfsd_staged {
	char *tmp;   /* POSIX path of the staged bytes */
	int fd;
	pthread_mutex_t lock; /* serializes commits and renames */
	struct tfsd_wtarget target; /* protected by lock */
	bool dirty;     /* written since the last commit; protected by lock */
	bool committed; /* a commit ran (ok or refused); protected by lock */
	/* errno of the last commit's refusal, 0 after a success: every
	 * later close of the file reports it too (a tool that closes a
	 * dup'ed descriptor first still sees it on its own close). */
	int error; /* protected by lock */
	int refs;       /* protected by the table's lock */
	int opens;      /* protected by the table's lock */
	uint64_t closed_ms; /* last close (monotonic); the table's lock */
	bool listed;    /* in the table under vpath; the table's lock */
	char *vpath;    /* the table's lock */
};

struct tfsd_staging;

/* A staging folder: dir, or a new private folder under $TMPDIR (else
 * /tmp) when dir is NULL; removed with what it holds by _free. */
enum tfs_err tfsd_staging_new(const char *dir, struct tfsd_staging **out,
			      struct tfs_diag *d) TFS_WUR;
void tfsd_staging_free(struct tfsd_staging *st);
/* The folder staged files are in (writer spill files go there too). */
const char *tfsd_staging_dir(const struct tfsd_staging *st);

/* A new staged file for vpath (empty, mode 0644), listed and opened once;
 * takes over target. TFS_E_EXISTS when vpath is staged already. */
enum tfs_err tfsd_staged_create(struct tfsd_staging *st, const char *vpath,
				struct tfsd_wtarget *target,
				struct tfsd_staged **out,
				struct tfs_diag *d) TFS_WUR;
/* The staged file listed at vpath with one more reference, or NULL. */
struct tfsd_staged *tfsd_staged_find(struct tfsd_staging *st,
				     const char *vpath);
/* One more open of a found file (its reference becomes the open's). */
void tfsd_staged_opened(struct tfsd_staging *st, struct tfsd_staged *sf);
/* Ends one open; true when it was the last open. */
bool tfsd_staged_closed(struct tfsd_staging *st, struct tfsd_staged *sf);
void tfsd_staged_put(struct tfsd_staging *st, struct tfsd_staged *sf);
/* Removes it from the listing (its bytes live on while referenced). */
void tfsd_staged_unlist(struct tfsd_staging *st, struct tfsd_staged *sf);
/* Whether it is still listed (not removed, renamed over or expired). */
bool tfsd_staged_listed(struct tfsd_staging *st, struct tfsd_staged *sf);
/* Lists it under new_vpath instead (replacing a staged file there). */
enum tfs_err tfsd_staged_rename(struct tfsd_staging *st,
				struct tfsd_staged *sf, const char *new_vpath,
				struct tfs_diag *d) TFS_WUR;
/* Calls fn for each staged file directly in folder dir (a vpath). */
void tfsd_staging_list(struct tfsd_staging *st, const char *dir,
		       tfsd_list_fn fn, void *ctx);
/* Unlists staged files closed for longer than max_ms (temporaries never
 * renamed, empty files never written: an editor's or a tool's that died,
 * touch); returns how many. */
unsigned tfsd_staging_expire(struct tfsd_staging *st, uint64_t max_ms);
/* Temporaries wait this long after their last close for their rename. */
#define TFSD_TEMP_KEEP_MS ((uint64_t)10 * 60 * 1000)

/* Whether any staged file is listed under vpath (vpath or inside it). */
bool tfsd_staging_busy(struct tfsd_staging *st, const char *vpath);

/* ---- File operations of writing (write_fs.c) ----------------------------- */

/* What stat shows of a staged file (st_ino left 0). */
void tfsd_staged_stat(struct tfsd_staged *sf, struct stat *st);
/* Whether vpath is an ingest.log: of an array view (not a version), or
 * of a folder this mount recorded writes in; *dir (tfs_free) receives
 * that folder. */
bool tfsd_ilog_dir(struct tfsd *fs, const char *vpath, char **dir);
/* What stat shows of the ingest.log of dir (st_ino left 0). */
void tfsd_ilog_stat(struct tfsd *fs, const char *dir, struct stat *st);

/* A new staged file for vpath (tfsd_write_classify decides what it
 * means), opened once. seed: it starts with the current bytes of the
 * view file at vpath (a metadata value, a slice up to 256 MiB), so that
 * opening without O_TRUNC and rewriting part of it works. */
enum tfs_err tfsd_stage_new(struct tfsd *fs, const char *vpath, bool seed,
			    struct tfsd_staged **out,
			    struct tfs_diag *d) TFS_WUR;

/* Commits a staged file that has bytes not yet committed and a
 * committing name, and records the outcome in ingest.log and the log.
 * Returns the errno for close() (0, or the refusal, which every later
 * close repeats until new bytes commit). scope (scope_cap bytes)
 * receives the path of the mount whose view changed ("" when none) and
 * *entry whether that name is new: the kernel must forget what it
 * cached there. A file no longer listed (removed while open) commits
 * nothing. */
int tfsd_staged_commit(struct tfsd *fs, struct tfsd_staged *sf, char *scope,
		       size_t scope_cap, bool *entry);
/* The last close of a staged file: commits as above what no flush did,
 * and a committing name with bytes is gone then; a temporary or an empty
 * file stays until renamed, removed or expired (tfsd_staging_expire). */
int tfsd_staged_last_close(struct tfsd *fs, struct tfsd_staged *sf,
			   char *scope, size_t scope_cap, bool *entry);

/* ---- Leftovers of crashed writes (cleaner.c) ----------------------------- */

/* Fragment folders without a commit older than this are a crashed
 * write's: a write in progress touches its folder more often. */
#define TFSD_CLEANUP_GRACE_MS ((uint64_t)15 * 60 * 1000)
/* How often the sweep runs again after the one at mount time. */
#define TFSD_CLEANUP_PERIOD_S 600

/* Removes the leftovers (tfs_array_cleanup) of every array under SOURCE,
 * walking plain folders and groups; *arrays counts the arrays visited.
 * Arrays whose folder has no write permission bits are left alone: they
 * are not this mount's to change (read-only copies, reference data); so
 * are arrays that do not open (formats this build does not know). */
void tfsd_cleanup_sweep(struct tfsd *fs, uint64_t grace_ms, unsigned *arrays,
			unsigned *removed);

/* A thread that sweeps at start and then every TFSD_CLEANUP_PERIOD_S,
 * and drops staged files closed for longer than TFSD_TEMP_KEEP_MS. */
struct tfsd_cleaner;
enum tfs_err tfsd_cleaner_start(struct tfsd *fs,
				struct tfsd_cleaner **out) TFS_WUR;
/* Stops and joins the thread; accepts NULL. */
void tfsd_cleaner_stop(struct tfsd_cleaner *c);

#endif
