/* Opening an array folder at a time window: schemas and the current one,
 * the visible fragments in newest-wins order with their footers (from
 * their own metadata file or a consolidated .meta), the per-slot tile
 * lists loaded on demand, delete conditions, enumerations and merged array
 * metadata (format/layout.md §4–6, consolidated.md, metadata.md, read.md §1).
 *
 * A struct tfs_arraydir is immutable once opened except for the lazily
 * loaded per-fragment data, which is loaded at most once under the lock
 * of what the fragment shares with other versions of its array
 * (frag_shared.c); all of it may be shared between threads. That lock
 * is held across the reads of the one-time load (the only lock the engine
 * holds during I/O), so concurrent first users wait for one load. A failed
 * load is not remembered: the next call tries again.
 *
 * Versions 1–23: the root layout with .ok commits (v5–11) or none (v1–4),
 * fixed-size footers (v3–9), the one-tile legacy metadata of v1–2, and the
 * v12+ layout, also mixed in one upgraded array. Update commits are
 * parsed and listed, never applied. */
#ifndef TFS_FRAGMENT_H
#define TFS_FRAGMENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tfs_format.h"
#include "tfs_vfs.h"

/* Per-slot tile lists of one fragment (fragment.md §6). Arrays have
 * `tile_num` entries; absent lists are NULL. */
struct tfs_slot_tiles {
	uint64_t *offsets;          /* fixed data or var offsets file */
	uint64_t *var_offsets;      /* var values file */
	uint64_t *var_sizes;        /* decoded size of each values tile */
	uint64_t *validity_offsets; /* validity file */
};

/* Per-tile statistics of one fixed-size attribute slot (fragment.md §6,
 * v11+), as TileDB wrote them: they describe the values before lossy
 * filters, and null counts of some slots are wrong (see there). Arrays
 * have tile_num entries; absent lists are NULL. */
struct tfs_slot_stats {
	uint8_t *mins, *maxes; /* tile_num × cell size */
	uint8_t *sums;         /* tile_num × 8 (int64, uint64 or double) */
	uint64_t *null_counts;
};

struct tfs_fragment {
	char *name;     /* folder name */
	char *dir;      /* full path of the fragment folder */
	struct tfs_name_info name_info;
	const struct tfs_schema *schema; /* the fragment's own schema */
	struct tfs_footer footer;
	bool consolidated_meta; /* footer came from a .meta file */
	uint64_t tile_num;      /* dense: tiles of its tile box; sparse: footer */
	uint64_t cell_num;      /* tile_num × cells per tile (dense), or sum */
	/* The metadata file's size (meta_size_known: learnt when the footer
	 * was read from it). Set at creation, then immutable. */
	uint64_t meta_size;
	bool meta_size_known;
	/* The metadata file kept whole when it is small, and what is loaded
	 * from it on demand: shared by every open version of the array that
	 * holds this fragment (frag_shared.c), counted in the memory
	 * accountant (tfs_mem_global) until the last of them is freed. */
	struct tfs__frag_shared *shared;
	/* Versions 1–2 only (else NULL): what is left of the parsed legacy
	 * metadata once its footer moved into footer and its R-tree and tile
	 * lists into the fragment's own (unshared) entry, all at open. */
	struct tfs_legacy_meta *legacy;
};

struct tfs_delete {
	char *marker; /* array-relative path, e.g. "__commits/__t_t_uuid_22.del" */
	uint64_t t1, t2;
	struct tfs_qc_node cond; /* the stored (negated) condition */
};

/* An update commit (.upd, v16+): recognised and listed, never applied
 * (TileDB does not apply them on read either; consolidated.md §6). */
struct tfs_update_commit {
	char *marker; /* array-relative, "__commits/__t_t_uuid_v.upd" */
	uint64_t t1, t2;
	/* Parsed from its file; a .con lists an update by name only, and
	 * when the file itself is gone nothing more is known (has_values
	 * false, update empty). */
	bool has_values;
	struct tfs_update update;
};

struct tfs_metadata {
	struct tfs_meta_kv *entries; /* merged, sorted by key bytes, no deletes */
	size_t count;
};

struct tfs_arraydir {
	struct tfs_vfs *vfs; /* borrowed */
	char *path;          /* array folder without trailing '/' */
	bool has_key;
	uint8_t key[32];
	uint64_t t0, t1; /* read window */
	uint64_t del_t1; /* delete commits are taken from [t0, del_t1] */
	struct tfs_tile_cache *cache; /* decoded tiles (borrowed), or NULL */
	uint64_t max_tile_bytes;      /* 0 = no limit (tfs_open_opts) */

	struct tfs_schema *schemas; /* every loaded schema, listing order */
	size_t schema_num;
	const struct tfs_schema *schema; /* current schema at t1 */
	struct tfs_enumeration *enums;   /* enumerations of the current schema */
	size_t enum_num;

	/* Visible fragments at [t0, t1], oldest first (fragment index; equal
	 * t1 keep the candidate order of layout.md §6 step 4). Fragments with
	 * footer.empty are kept (tile_num = cell_num = 0). */
	struct tfs_fragment **fragments;
	size_t fragment_num;
	/* Every committed fragment not hidden by a vacuum file at any time
	 * ([0, UINT64_MAX] window), in timestamp order: what is listed, the
	 * corpus JSON's "fragments" whatever the window. */
	struct tfs_fragment **listed;
	size_t listed_num;
	/* Names (folder names) of the committed fragments that vacuum files
	 * hide at [0, UINT64_MAX], in candidate order: "fragments_to_vacuum". */
	char **to_vacuum;
	size_t to_vacuum_num;

	struct tfs_delete *deletes; /* in the window, sorted by t1 */
	size_t delete_num;
	bool has_updates;           /* update_num > 0 */
	struct tfs_update_commit *updates; /* in the window, sorted by t1 */
	size_t update_num;

	struct tfs_metadata metadata; /* merged at the window */

	/* Owner of every fragment object: the union of `fragments` and
	 * `listed` (a fragment can be visible at the window yet hidden from
	 * the listing by a vacuum file, and the other way round), each loaded
	 * once. Candidate order (layout.md §6 step 4). */
	struct tfs_fragment **frag_pool;
	size_t frag_pool_num;
};

struct tfs_arraydir_opts {
	const uint8_t *key; /* 32 bytes or NULL */
	uint64_t t0;        /* 0 */
	uint64_t t1;        /* UINT64_MAX means "now" (ms, set in a->t1) */
	/* Delete commits up to this time apply (consolidation purging
	 * deleted cells); 0 or below t1 = t1. */
	uint64_t del_t1;
};

enum tfs_object_kind { TFS_OBJ_NONE, TFS_OBJ_ARRAY, TFS_OBJ_GROUP };

/* Classifies a folder (layout.md §8). */
enum tfs_err tfs_object_kind_of(struct tfs_vfs *vfs, const char *path,
				enum tfs_object_kind *out,
				struct tfs_diag *d) TFS_WUR;

/* Opens the array at path (format/read.md §1). A missing folder is
 * TFS_E_NOT_FOUND, a folder that is no array TFS_E_NOT_ARRAY, a missing,
 * needless or wrong key TFS_E_KEY. A schema, generic tile, fragment
 * footer, fragment, commit, vacuum or consolidation file of a format
 * version above TFS_FORMAT_VERSION_MAX (in its header or its name) is
 * TFS_E_UNSUPPORTED, "unsupported format version N". Thread-safe; *out is
 * NULL on failure. */
enum tfs_err tfs_arraydir_open(struct tfs_vfs *vfs, const char *path,
			       const struct tfs_arraydir_opts *opts,
			       struct tfs_arraydir **out,
			       struct tfs_diag *d) TFS_WUR;
void tfs_arraydir_close(struct tfs_arraydir *a);

/* Key/value metadata of the array or group folder dir merged at the window
 * [t0, t1] (format/metadata.md §2), sorted by key bytes, into *out (free
 * with tfs_metadata_release; empty on failure). A missing __meta/ folder
 * is no metadata. key: 32 bytes or NULL; noun ("array", "group") names the
 * object in messages. Thread-safe. */
enum tfs_err tfs_metadata_load(struct tfs_vfs *vfs, const char *dir,
			       const char *noun, const uint8_t *key,
			       uint64_t t0, uint64_t t1,
			       struct tfs_metadata *out,
			       struct tfs_diag *d) TFS_WUR;
void tfs_metadata_release(struct tfs_metadata *m);

/* Reads the file at path (at most 1 GiB) and decodes the one generic tile
 * it holds with key (32 bytes or NULL) into a new payload (tfs_free). A
 * key that does not match the tile's encryption is TFS_E_KEY; noun names
 * the object in that message. */
enum tfs_err tfs_tile_file_read(struct tfs_vfs *vfs, const char *path,
				const uint8_t *key, const char *noun,
				uint8_t **payload, size_t *payload_len,
				struct tfs_diag *d) TFS_WUR;

/* Loads (once) the tile lists of a slot of fragment f. *out is valid until
 * the array is closed. Thread-safe. Every list loaded has tile_num
 * entries; offsets lists are checked to be non-decreasing and inside
 * their data file. Loaded: offsets always, var offsets and sizes for
 * var-size fields, validity offsets for nullable attributes (v7+). */
enum tfs_err tfs_fragment_slot_tiles(struct tfs_arraydir *a,
				     struct tfs_fragment *f, uint32_t slot,
				     const struct tfs_slot_tiles **out,
				     struct tfs_diag *d) TFS_WUR;
/* Loads (once) the per-tile statistics of attribute slot `slot` of f
 * (fixed-size attributes of v11+ fragments; *out has NULL lists for
 * anything else). Thread-safe; valid until the array is closed. */
enum tfs_err tfs_fragment_slot_stats(struct tfs_arraydir *a,
				     struct tfs_fragment *f, uint32_t slot,
				     const struct tfs_slot_stats **out,
				     struct tfs_diag *d) TFS_WUR;
/* Loads (once) the R-tree leaves of f. */
enum tfs_err tfs_fragment_rtree(struct tfs_arraydir *a, struct tfs_fragment *f,
				const struct tfs_rtree **out,
				struct tfs_diag *d) TFS_WUR;
/* Loads (once) the processed delete conditions of f (empty before v16). */
enum tfs_err tfs_fragment_processed(struct tfs_arraydir *a,
				    struct tfs_fragment *f,
				    const struct tfs_strlist **out,
				    struct tfs_diag *d) TFS_WUR;

/* Bytes of metadata that freeing f would give back to the memory
 * accountant: what it loaded on demand, unless another open version of
 * its array shares it. */
uint64_t tfs_fragment_memory_alone(const struct tfs_fragment *f);

/* Reads the generic tile at off of f's fragment metadata file and
 * decodes it into a new payload (tfs_free), not kept: the per-slot lists
 * loaded on demand by nobody else (tile mins, maxes, sums, null counts,
 * fragment.md §6). Thread-safe. */
enum tfs_err tfs_fragment_meta_tile(const struct tfs_arraydir *a,
				    const struct tfs_fragment *f, uint64_t off,
				    uint8_t **payload, size_t *len,
				    struct tfs_diag *d) TFS_WUR;

/* Data file of a slot: kind 0 fixed/offsets, 1 var values, 2 validity.
 * Returns a new path string (fragment.md §2 naming by version), NULL on
 * ENOMEM or for a slot >= footer.slot_num. */
enum tfs_file_kind { TFS_FILE_FIXED, TFS_FILE_VAR, TFS_FILE_VALIDITY };
char *tfs_fragment_file_path(const struct tfs_fragment *f, uint32_t slot,
			     enum tfs_file_kind kind);
/* Slot numbers (fragment.md §1) in f's own schema. */
uint32_t tfs_fragment_dim_slot(const struct tfs_fragment *f, uint32_t dim);
uint32_t tfs_fragment_timestamps_slot(const struct tfs_fragment *f);
uint32_t tfs_fragment_delete_ts_slot(const struct tfs_fragment *f);

/* Cells per dense tile of schema s (product of extents); 0 when a
 * dimension has no integer tile extent or the product overflows. */
uint64_t tfs_schema_tile_cells(const struct tfs_schema *s);

#endif
