/* The daemon's internal interfaces: configuration, the cache of opened
 * arrays, the virtual tree (a path of the mount resolved to a node) and the
 * content of virtual files. Only fuse_ll.c knows about FUSE; everything
 * here works on paths relative to the mount and on the core's public API,
 * so it can be tested without mounting. */
#ifndef TFSD_H
#define TFSD_H

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "selection.h"
#include "where.h"
#include "tfs_render.h"
#include "value_text.h"
#include <tilefs/tilefs.h>

struct tfs_tile_cache;

#define TFSD_MAX_DIMS TFSR_MAX_DIMS
/* Bytes of one name of the mount at most (longer: ENAMETOOLONG). */
#define TFSD_NAME_MAX 255

/* ---- Configuration (options.c) ------------------------------------------ */

struct tfsd_key {
	char *path; /* array path relative to SOURCE, no leading '/' */
	uint8_t key[32];
};

struct tfsd_config {
	char *source;     /* absolute, without a trailing '/' */
	/* SOURCE's storage: rooted there, it follows no symbolic link below
	 * it (tfs_vfs_posix_new_rooted). Every access of the daemon to
	 * SOURCE goes through it. */
	struct tfs_vfs *vfs;
	char *mountpoint;
	bool read_only;
	bool foreground;
	bool debug;
	uint64_t cache_bytes; /* decoded-tile budget */
	unsigned threads;     /* decode threads; 0 = one per CPU */
	uint64_t timestamp;   /* show arrays as of this time (ms); 0 = now */
	/* Selections of at most this many cells × fields are rendered whole
	 * at stat/open with an exact size; larger ones stream. */
	uint64_t whole_max_cells;
	/* Resource caps (0 = none): cells of one rendered file (more:
	 * EFBIG), and bytes of the daemon's data, caches included (a
	 * rendering, or a file rendered whole, that would go over:
	 * ENOMEM). */
	uint64_t max_cells;
	uint64_t max_memory;
	bool has_default_key;
	uint8_t default_key[32];
	/* keyfile_insecure: a keyfile others may read or write, or owned by
	 * another user, is taken (with a log line) instead of refused. */
	bool keyfile_insecure;
	struct tfsd_key *keys; /* from keyfile=, sorted by path */
	size_t key_num;
	char *staging; /* staging=: folder of files being written, or NULL */
	/* cleanup_grace=: age (ms) of an uncommitted fragment folder
	 * before it counts as a crashed write's; 0 = the default. */
	uint64_t cleanup_grace_ms;
	bool cleanup_grace_set;
	/* list_history: list versions/, each field's tiles/ and a
	 * version's fragments/ (by default they are reachable by name but
	 * not listed, so recursive tools do not walk the history). */
	bool list_history;
};

void tfsd_config_release(struct tfsd_config *c);
/* Sets c->source to the real path of source and c->vfs to a storage
 * rooted there (released by tfsd_config_release). */
enum tfs_err tfsd_config_set_source(struct tfsd_config *c, const char *source,
				    struct tfs_diag *d) TFS_WUR;
/* Calls on SOURCE's folders through c->vfs (source.c): no symbolic link
 * below SOURCE is followed (one met is ENOENT). path is absolute, at or
 * below c->source. The int results are 0 or an errno value. */
int tfsd_source_stat(const struct tfsd_config *c, const char *path,
		     struct stat *out);
int tfsd_source_mkdir(const struct tfsd_config *c, const char *path,
		      unsigned mode);
int tfsd_source_rmdir(const struct tfsd_config *c, const char *path);
/* "256M", "1G", "4096", "64k" → bytes. */
enum tfs_err tfsd_parse_size(const char *text, uint64_t *out) TFS_WUR;
/* Reads a keyfile: one "relative/array/path HEXKEY" per line, '*' for a
 * default, '#' comments. Fills c->keys / c->default_key. A keyfile that
 * is not a regular file, that group or others may read or write, or
 * that another user than this one or root owns is refused (TFS_E_PERM)
 * unless c->keyfile_insecure; d says which. */
enum tfs_err tfsd_keyfile_load(struct tfsd_config *c, const char *path,
			       struct tfs_diag *d) TFS_WUR;
/* The key for an array (relative path), or NULL. */
const uint8_t *tfsd_config_key(const struct tfsd_config *c, const char *rel);
/* Whether the keyfile names this array (else its key is the default). */
bool tfsd_config_has_own_key(const struct tfsd_config *c, const char *rel);
/* What max_memory leaves beside the caches for data in flight: renderings,
 * and the largest tile a read may decode (tfs_open_opts.max_tile_bytes);
 * 0 = no limit. */
uint64_t tfsd_data_limit(const struct tfsd_config *c);
/* What the daemon's memory accountant (tfs_mem.h) may count: the decoded
 * tiles (cached or in flight), renderings, windows, read batches, fragment
 * metadata, parser buffers, writer tiles and the FUSE loop's request
 * buffers, so that the daemon stays within cache= + TFSD_MEM_SLACK, or
 * within max_memory= when it is set; the rest (the render cache, whose
 * budget cache= holds, small allocations, stacks) lives in what is
 * left. */
#define TFSD_MEM_SLACK ((uint64_t)64 << 20)
/* How long a charge that does not fit waits for others to give back. */
#define TFSD_MEM_WAIT_MS 10000
uint64_t tfsd_mem_budget(const struct tfsd_config *c);

/* The daemon's own options, the one source of `tilefs --help` and of the
 * OPTIONS section of packaging/man/tilefs.1 (tests/docs checks that they
 * agree). name is a `-o` option ("cache") or, starting with '-', a
 * command-line flag ("-f", "-h, --help"); arg names its value ("SIZE") or
 * is NULL; def is the default as text or NULL; help is one sentence. */
struct tfsd_option {
	const char *name;
	const char *arg;
	const char *def;
	const char *help;
};

/* The table, terminated by an entry whose name is NULL. */
extern const struct tfsd_option tfsd_options[];

/* Prints the usage line and every option of tfsd_options, wrapped to 80
 * columns, to f; the caller adds libfuse's own help after it. */
void tfsd_options_print_help(FILE *f, const char *prog);

/* ---- Opened arrays (arrays.c) -------------------------------------------- */

/* One opened version of an array, shared by every node and open file that
 * shows it. Immutable once opened; refcounted. */
struct tfsd_arr {
	struct tfs_array *a;
	const struct tfs_schema *schema;
	uint64_t timestamp; /* the view's time; 0 = current */
	uint64_t gen;       /* unique per opened handle: names this version */
	bool has_ned;
	struct tfs_range *ned; /* dim_num ranges when has_ned */
	uint64_t sparse_cells; /* sum of visible fragments' cell counts */
	int refs;              /* protected by the cache lock */
};

struct tfsd_arrays;

/* Arrays open with the tile cache and decode pool given (both outlive
 * the cache of arrays). */
enum tfs_err tfsd_arrays_new(const struct tfsd_config *cfg,
			     struct tfs_tile_cache *tiles, struct tfs_pool *pool,
			     struct tfsd_arrays **out) TFS_WUR;
void tfsd_arrays_free(struct tfsd_arrays *c);
/* The storage SOURCE is read through (the configuration's, rooted at
 * SOURCE: no symbolic link below it is followed; thread-safe): every look
 * at SOURCE outside the core goes through it. */
struct tfs_vfs *tfsd_arrays_vfs(const struct tfsd_arrays *c);
/* A reference to the array at rel (relative to SOURCE) as of timestamp
 * (0 = current: re-checked at most twice a second, so new fragments show
 * up). Release with tfsd_arr_put. */
enum tfs_err tfsd_arrays_get(struct tfsd_arrays *c, const char *rel,
			     uint64_t timestamp, struct tfsd_arr **out,
			     struct tfs_diag *d) TFS_WUR;
void tfsd_arr_get(struct tfsd_arrays *c, struct tfsd_arr *arr);
/* The end time (ms) of the newest fragment arr shows (0: none). */
uint64_t tfsd_arr_newest(const struct tfsd_arr *arr);
/* tfsd_arr_newest of the array at rel as of timestamp, remembered for
 * many more arrays than stay open (a listing of a folder of thousands of
 * arrays asks each one's time, again at every listing): re-checked like
 * tfsd_arrays_get, opened only when its folders changed. */
enum tfs_err tfsd_arrays_newest(struct tfsd_arrays *c, const char *rel,
				uint64_t timestamp, uint64_t *ms,
				struct tfs_diag *d) TFS_WUR;
/* tfs_object_type of src (a folder of SOURCE, or SOURCE), remembered for
 * half a second when it is an array or a group, or SOURCE itself: every
 * lookup resolves its path from SOURCE down. */
enum tfs_err tfsd_arrays_kind(struct tfsd_arrays *c, const char *src,
			      enum tfs_object *kind, struct tfs_diag *d) TFS_WUR;
/* Makes the next tfsd_arrays_get of rel's current view reopen it (this
 * mount just wrote to it), and every folder's kind be asked again. */
void tfsd_arrays_invalidate(struct tfsd_arrays *c, const char *rel);
void tfsd_arr_put(struct tfsd_arrays *c, struct tfsd_arr *arr);
/* For an open file whose read of arr (the view of rel) met a missing
 * file: opens the view again at arr's own time (tfs_array_timestamp),
 * in case a vacuum removed fragments that a consolidation had merged.
 * *out (a reference) when fragments of arr vanished and the fragments
 * there now show the same cells at that time; NULL when none vanished
 * (the missing file is damage: the caller's failure stands).
 * TFS_E_CORRUPT, d saying why, when the view can no longer be shown
 * (its cells were merged with later writes into a fragment without
 * per-cell times, or are nowhere). The cache then holds the new handle
 * for arr's view. */
enum tfs_err tfsd_arrays_reopen(struct tfsd_arrays *c, const char *rel,
				struct tfsd_arr *arr, struct tfsd_arr **out,
				struct tfs_diag *d) TFS_WUR;

/* ---- Read-ahead (prefetch.c) --------------------------------------------- */

struct tfsd_prefetch;
enum tfs_err tfsd_prefetch_new(struct tfsd_arrays *arrays,
			       struct tfsd_prefetch **out) TFS_WUR;
void tfsd_prefetch_free(struct tfsd_prefetch *p);
/* Asks for the tiles of a query (fixed-size subarray, fields) to be
 * decoded into the tile cache in the background. A hint: may be dropped. */
void tfsd_prefetch_submit(struct tfsd_prefetch *p, struct tfsd_arr *arr,
			  const struct tfs_range *sub, const char *const *names,
			  size_t name_num);

/* ---- The virtual tree (vtree.c) ------------------------------------------ */

struct tfsd {
	struct tfsd_config cfg;
	struct tfsd_arrays *arrays;
	struct tfs_tile_cache *tiles;
	struct tfs_pool *pool;
	struct tfsd_renders *renders;
	struct tfsd_prefetch *prefetch; /* NULL: no read-ahead */
	/* Writing (tfsd_write.h); NULL on a read-only mount. */
	struct tfsd_staging *staging;
	struct tfsd_ilog *ilog;
	/* Bytes of renderings in flight (stream buffers) and of files
	 * rendered whole while they are open, atomic; bounded by
	 * cfg.max_memory less the caches' budget. */
	uint64_t render_bytes;
	uint64_t render_limit; /* 0 = none */
	/* The FUSE loop's request buffers, counted while the daemon runs. */
	uint64_t loop_bytes;
};

enum tfsd_node_kind {
	TFSD_N_FOLDER,   /* a plain folder or a group under SOURCE */
	TFSD_N_ARRAY,    /* the view of an array (current or a version) */
	TFSD_N_FIELD,    /* A/<attribute or dimension>/ */
	TFSD_N_TILES,    /* A/<field>/tiles/ */
	TFSD_N_META_DIR, /* A/metadata/ */
	TFSD_N_FRAGS,    /* A/fragments/ */
	TFSD_N_FRAG,     /* A/fragments/<name>/ */
	TFSD_N_VERSIONS, /* A/versions/ */
	TFSD_N_FILE,
};

enum tfsd_file_kind {
	TFSD_F_SCHEMA,        /* schema.json */
	TFSD_F_METADATA_JSON, /* metadata.json */
	TFSD_F_META_VALUE,    /* metadata/<key> */
	TFSD_F_FRAG_INFO,     /* fragments/<name>/info.json */
	TFSD_F_SLICE,         /* slice[SEL].EXT, data.csv, tiles/... */
	TFSD_F_PREVIEW,       /* preview.png of the array or a field */
	TFSD_F_STATS,         /* stats.json, <attr>/[slice[SEL].]stats.json */
};

/* A resolved path. Owns its strings and its array reference. */
struct tfsd_node {
	enum tfsd_node_kind kind;
	enum tfsd_file_kind file;
	char *src;            /* folders and arrays: the source folder */
	char *rel;            /* arrays: path relative to SOURCE */
	struct tfsd_arr *arr; /* inside an array view */
	bool version_view;    /* under versions/: immutable, no versions/ */
	uint64_t timestamp;   /* arrays: the view's time, 0 = current */
	int field;            /* -1: every field; else dims first, then attrs */
	char *name;           /* metadata key, fragment name */
	char *sel;            /* slice: the SEL text */
	size_t sel_len;
	enum tfsr_format fmt;
	/* Under A/where[COND]/: the COND text (checked when resolved), else
	 * NULL. */
	char *where;
	size_t where_len;
};

void tfsd_node_release(struct tfsd *fs, struct tfsd_node *n);
/* Resolves a path of the mount ("" = the root, no leading '/'). Bad
 * selections and names that are not there are TFS_E_NOT_FOUND with a
 * message saying why. */
enum tfs_err tfsd_resolve(struct tfsd *fs, const char *vpath,
			  struct tfsd_node *out, struct tfs_diag *d) TFS_WUR;
/* Resolves the child `name` of an already resolved directory node. */
enum tfs_err tfsd_resolve_child(struct tfsd *fs, const struct tfsd_node *dir,
				const char *name, struct tfsd_node *out,
				struct tfs_diag *d) TFS_WUR;
static inline bool tfsd_node_is_dir(const struct tfsd_node *n)
{
	return n->kind != TFSD_N_FILE;
}
/* True when the node never changes (a version view or a fixed mount
 * timestamp): the kernel may cache it for long. */
bool tfsd_node_immutable(const struct tfsd *fs, const struct tfsd_node *n);

/* Calls fn for every entry of a directory node, in a stable order; stops
 * when fn returns false. */
typedef bool (*tfsd_list_fn)(void *ctx, const char *name, bool is_dir);
enum tfs_err tfsd_list(struct tfsd *fs, const struct tfsd_node *dir,
		       tfsd_list_fn fn, void *ctx, struct tfs_diag *d) TFS_WUR;


/* Extended attribute `name` of a node (at vpath) into out;
 * TFS_E_NOT_FOUND when the node has no such attribute. tfsd_xattr_list
 * gives the names. */
enum tfs_err tfsd_xattr_get(struct tfsd *fs, const struct tfsd_node *n,
			    const char *vpath, const char *name,
			    struct tfs_buf *out) TFS_WUR;
enum tfs_err tfsd_xattr_list(struct tfsd *fs, const struct tfsd_node *n,
			     const char *vpath, struct tfs_buf *out) TFS_WUR;

/* ---- File content (content.c, node_docs.c) -------------------------------- */

/* What stat shows for a file node. exact = false means the size is not
 * known without decoding: stat shows 0 and reads use direct I/O. */
struct tfsd_size {
	uint64_t size;
	bool exact;
};

struct tfsd_renders; /* a small cache of rendered files and learned sizes */
enum tfs_err tfsd_renders_new(uint64_t budget, struct tfsd_renders **out) TFS_WUR;
void tfsd_renders_free(struct tfsd_renders *r);

/* The exact size of a file node. Streams are measured by a counting pass
 * at the first call (stopped by the calling thread's tfsd_stop),
 * remembered for the array version. */
enum tfs_err tfsd_file_size(struct tfsd *fs, const struct tfsd_node *n,
			    const char *vpath, struct tfsd_size *out,
			    struct tfs_diag *d) TFS_WUR;
/* Whether listings show slice SEL of field (-1: every field) of arr in
 * fmt: its exact size is cheap, known without rendering or rendered
 * whole (at most whole_max cells × fields). Other slices stay reachable
 * by name. */
bool tfsd_slice_listable(struct tfsd *fs, struct tfsd_arr *arr, int field,
			 enum tfsr_format fmt, const char *sel, size_t sel_len);

/* An open file: keeps the version it was opened on. Reads may come from
 * several threads at once. */
struct tfsd_file;
enum tfs_err tfsd_file_open(struct tfsd *fs, const struct tfsd_node *n,
			    const char *vpath, struct tfsd_file **out,
			    struct tfs_diag *d) TFS_WUR;
/* Whether reads must bypass the page cache (size not exact). */
bool tfsd_file_direct(const struct tfsd_file *f);
/* Cells a streamed file's stream produced since it last started (at
 * the beginning, or at a mark of the file's index); 0 for other files. */
uint64_t tfsd_file_stream_cells(struct tfsd_file *f);
/* Reads up to len bytes at off into dst; *got < len only at the end. */
enum tfs_err tfsd_file_read(struct tfsd *fs, struct tfsd_file *f, uint64_t off,
			    uint8_t *dst, size_t len, size_t *got,
			    struct tfs_diag *d) TFS_WUR;
/* Asked between the steps of a long rendering: true stops it with
 * TFS_E_INTR (its reader was interrupted, or the daemon is stopping). */
struct tfsd_stop {
	bool (*fn)(void *ctx);
	void *ctx;
};
/* Sets the stop of the request the calling thread serves (NULL: none),
 * returning the one before: the counting passes and whole renderings that
 * tfsd_file_size and tfsd_file_open run on this thread ask it between
 * steps and end with TFS_E_INTR. */
const struct tfsd_stop *tfsd_stop_swap(const struct tfsd_stop *stop);
/* tfsd_file_read that stop (NULL: never) may cut short with TFS_E_INTR;
 * what the file produced so far is kept for the next read. */
enum tfs_err tfsd_file_read_stop(struct tfsd *fs, struct tfsd_file *f,
				 uint64_t off, uint8_t *dst, size_t len,
				 size_t *got, const struct tfsd_stop *stop,
				 struct tfs_diag *d) TFS_WUR;
void tfsd_file_close(struct tfsd *fs, struct tfsd_file *f);
/* Reply buffers of reads: at least n bytes (*cap of them), a spare one
 * when one fits (tfs_reuse.h); given back after the reply. */
void *tfsd_spare_take(size_t n, size_t *cap);
void tfsd_spare_give(void *p, size_t cap);

/* Small documents rendered whole (node_docs.c, by render/docs.h):
 * schema.json, metadata.json, metadata/<key>,
 * fragments/<name>/info.json. */
enum tfs_err tfsd_doc_render(struct tfsd *fs, const struct tfsd_node *n,
			     struct tfs_buf *out, struct tfs_diag *d) TFS_WUR;

/* Metadata keys as file names: '/' and '%' are percent-encoded, and so is
 * a leading '.'; NUL-free keys only. */
enum tfs_err tfsd_meta_name_encode(struct tfs_buf *out, const char *key,
				   size_t key_len) TFS_WUR;
bool tfsd_meta_name_matches(const char *name, const char *key,
			    size_t key_len);

#endif
