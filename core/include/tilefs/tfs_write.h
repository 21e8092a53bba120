/* tilefs core: writing TileDB arrays (format/write.md), library tfs_write.
 *
 * Every write is one new fragment, committed last: its files are written
 * and fsynced in a fragment folder nobody reads, then the commit file is
 * created and fsynced. A crash or an error at any point leaves the array as
 * it was, or with the whole new fragment. Existing fragments, schemas and
 * metadata files are never modified.
 *
 * This header: core/write (fragments, arrays, metadata, cleanup); CSV
 * files and schema JSON are in tfs_ingest.h (core/ingest), consolidation
 * and vacuum in tfs_maintain.h (core/maintain). All of it on the storage
 * interface, so faults can be injected anywhere. */
#ifndef TFS_WRITE_H
#define TFS_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"
#include "tfs_schema.h"
#include "tfs_pool.h"
#include "tfs_vfs.h"
#include "tilefs.h"

/* ---- Fragments (core/write) --------------------------------------------- */

struct tfs_writer;

struct tfs_write_opts {
	struct tfs_vfs *vfs; /* NULL: the POSIX file system */
	const uint8_t *key;  /* 32-byte AES-256-GCM key of an encrypted array */
	/* Fragment timestamps t1 and t2 (ms). 0 = t1 = t2 = max(now, 1 +
	 * the greatest timestamp of every existing fragment, commit and
	 * vacuum file), so a new write always wins and never reuses a t1.
	 * Consolidation sets both to keep the consolidated range. Writes
	 * faster than one per millisecond get timestamps ahead of the
	 * clock, so an array opened "now" right after sees them only once
	 * the clock catches up (or when opened at a later timestamp). */
	uint64_t t1, t2;
	unsigned threads;     /* encoding threads, the caller's included; 0 =
				 one per CPU */
	struct tfs_pool *pool; /* shared pool or NULL (see tfs_open_opts) */
	/* Bytes of cells held in memory before a sorted run is spilled to
	 * disk (unordered writes); 0 = 256 MiB. */
	uint64_t memory;
	/* POSIX folder for spilled runs; NULL = $TMPDIR, else /tmp. */
	const char *spill_dir;
	/* Arrays without duplicates: drop all but the last of equal
	 * coordinates instead of refusing the write. */
	bool dedup;
	/* Word naming a cell's tag in messages ("line"), NULL = "cell". */
	const char *tag_word;
	/* Sparse arrays of format 15 or later (consolidation, core/maintain):
	 * UNORDERED batches also carry a UINT64 column "__timestamps", the
	 * time each cell was written, stored as the fragment's per-cell
	 * timestamps (t.tdb, format/consolidated.md §5). Equal coordinates
	 * are then kept, whatever the schema says about duplicates. */
	bool cell_timestamps;
};

enum tfs_write_layout {
	/* Cells with every dimension, in any order; the writer sorts them in
	 * the array's global order. Dense arrays: cells that exactly fill a
	 * box become a dense fragment, anything else a sparse fragment. */
	TFS_WRITE_UNORDERED,
	/* Dense arrays: the cells of one box (tfs_writer_open's box), row-major
	 * over the box as a dense read returns them, attributes only. With
	 * row-major tile order cells go to the files as they are appended,
	 * a row of space tiles at a time (memory: that row and the tiles in
	 * flight; for any 1-D box just the tiles); with column-major tile
	 * order they are sorted like UNORDERED cells. */
	TFS_WRITE_DENSE_BOX,
};

/* Opens a write of one fragment into the array at path, with the schema
 * in force now. box (DENSE_BOX only) holds dim_num inclusive ranges inside
 * the domain (and the current domain). Refuses arrays whose schema needs a
 * filter without an encoder (TFS_E_UNSUPPORTED, naming it) and encrypted
 * arrays without a key or with a wrong one (TFS_E_KEY). The fragment's
 * format version is the schema's from 7 on, else 23 (format/write.md §1),
 * for arrays of every format version. */
enum tfs_err tfs_writer_open(const char *path, const struct tfs_write_opts *opts,
			     enum tfs_write_layout layout,
			     const struct tfs_range *box,
			     struct tfs_writer **out,
			     struct tfs_diag *d) TFS_WUR;
/* The schema the fragment is written with (valid until tfs_writer_free). */
const struct tfs_schema *tfs_writer_schema(const struct tfs_writer *w);
/* The enumerations of that schema (format/schema.md §8), *count of them,
 * in the order of its enumeration map; valid until tfs_writer_free.
 * Enumerated attributes are written as their indices: the writer takes
 * the integers it is given. */
const struct tfs_enumeration *tfs_writer_enumerations(const struct tfs_writer *w,
						      size_t *count);

/* Appends cells. Columns are matched by name: UNORDERED needs every
 * dimension and every non-nullable attribute, DENSE_BOX every
 * non-nullable attribute; a missing nullable attribute is null. Values
 * are copied. tags (cell_num entries, or NULL) are numbers that errors
 * name the cells by ("line 17"). Values outside the domain, NaN
 * coordinates, wrong cell_val_num and such are TFS_E_INVALID naming the
 * field and the tag. After a failure the writer can only be freed. */
enum tfs_err tfs_writer_append(struct tfs_writer *w, const struct tfs_batch *b,
			       const uint64_t *tags,
			       struct tfs_diag *d) TFS_WUR;

struct tfs_write_result {
	char name[128];     /* fragment folder name */
	uint64_t t1, t2;
	uint64_t cell_num;
	bool dense;
	uint64_t bytes;     /* bytes written into the fragment */
};

/* Sorts (UNORDERED), writes the fragment, fsyncs it and commits it.
 * Duplicate coordinates in an array without duplicates are
 * TFS_E_INVALID naming both tags (unless opts.dedup); DENSE_BOX with
 * fewer cells than the box is TFS_E_INVALID. No cells: TFS_E_OK with
 * result->cell_num = 0 and nothing written. On failure nothing is
 * visible and the staged folder is removed. */
enum tfs_err tfs_writer_commit(struct tfs_writer *w,
			       struct tfs_write_result *result,
			       struct tfs_diag *d) TFS_WUR;
/* Frees the writer; an uncommitted write is abandoned, its staged files
 * removed. Accepts NULL. */
void tfs_writer_free(struct tfs_writer *w);

/* ---- Arrays, metadata, leftovers (core/write) --------------------------- */

/* Creates the array folder at path (which must not exist or be an empty
 * folder) with this schema, stored at schema->version (0 =
 * TFS_FORMAT_VERSION_WRITE); name and timestamps are chosen here. Every
 * entry of the schema's enumeration map must carry its values
 * (tfs_enum_ref.def; format version 20 or later): each is written to
 * `__schema/__enumerations/` under a name chosen here (the map's file
 * names are ignored), after the checks TileDB makes (distinct values;
 * attributes that name an enumeration have an integer type INT8..UINT64,
 * one value per cell and room for every index), TFS_E_INVALID otherwise.
 * Dimension labels are TFS_E_UNSUPPORTED. */
enum tfs_err tfs_array_create(const char *path, const struct tfs_schema *schema,
			      const struct tfs_write_opts *opts,
			      struct tfs_diag *d) TFS_WUR;

/* Evolves the array at path to the schema next (format/schema.md §9): a
 * new schema file later than every one there, as TileDB's schema
 * evolution writes it. next may add and drop attributes and add, extend
 * (new values after the old ones) or drop enumerations (each with its
 * values in tfs_enum_ref.def); the array type, orders, capacity and the
 * dimensions stay, and an attribute in both schemas keeps its type,
 * values per cell, nullability and enumeration (its filters and fill
 * stay the array's). Anything else is TFS_E_INVALID with the reason, and
 * nothing is written. *changed is false when next is the schema in force
 * already (nothing written). Fragments keep the schema they were written
 * with. */
enum tfs_err tfs_array_evolve(const char *path, const struct tfs_schema *next,
			      const struct tfs_write_opts *opts, bool *changed,
			      struct tfs_diag *d) TFS_WUR;

/* Excludes other writes into the array at path that decide where their
 * cells go from what it holds (CSV appends, .npy appends, values added to
 * enumerations), in this process and others: an exclusive lock (flock)
 * on the array folder, waited for; nothing is written. Returns the lock
 * for tfs_array_unlock, or -1 where the storage has no folders to lock
 * (in memory, S3: the write goes unlocked). */
int tfs_array_lock(const char *path, struct tfs_vfs *vfs);
void tfs_array_unlock(int lock);

struct tfs_where;

/* Deletes the cells of the sparse array at path that cond matches (a
 * tree of tilefs/tfs_where.h, values in the fields' types), as TileDB's
 * delete queries do: one delete commit in `__commits/`, later than every
 * write there, that readers apply to the fragments written before it and
 * consolidation applies for good. Dense arrays and formats before 16 are
 * TFS_E_UNSUPPORTED; a field the schema lacks TFS_E_INVALID. The
 * commit's name goes to name_out (name_cap bytes, may be 0). */
enum tfs_err tfs_array_delete(const char *path, const struct tfs_where *cond,
			      const struct tfs_write_opts *opts, char *name_out,
			      size_t name_cap, struct tfs_diag *d) TFS_WUR;

/* Writes one new array metadata file (metadata.md §3) holding these
 * entries; entries with deleted = true delete their key. */
enum tfs_err tfs_array_metadata_write(const char *path,
				      const struct tfs_meta_kv *entries,
				      size_t count,
				      const struct tfs_write_opts *opts,
				      struct tfs_diag *d) TFS_WUR;

/* Removes fragment folders that have no commit and were last modified
 * more than grace_ms ago (left by a crashed write). *removed (may be
 * NULL) counts them. A fragment that a consolidated commit file (.con)
 * lists counts as committed. */
enum tfs_err tfs_array_cleanup(const char *path, const struct tfs_write_opts *opts,
			       uint64_t grace_ms, unsigned *removed,
			       struct tfs_diag *d) TFS_WUR;
/* Removes the spill files (tfs_write_opts.spill_dir) in spill_dir (NULL:
 * $TMPDIR, else /tmp) left by writers of processes that no longer run;
 * *removed (may be NULL) counts them. The folder serves every array:
 * one call per cleanup pass, not one per array. */
void tfs_spill_cleanup(const char *spill_dir, unsigned *removed);

#endif
