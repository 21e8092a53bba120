/* tilefs core: writing TileDB arrays (format/write.md).
 *
 * Every write is one new fragment, committed last: its files are written
 * and fsynced in a fragment folder nobody reads, then the commit file is
 * created and fsynced. A crash or an error at any point leaves the array as
 * it was, or with the whole new fragment. Existing fragments, schemas and
 * metadata files are never modified.
 *
 * Modules: core/write (fragments, arrays, metadata, cleanup), core/ingest
 * (CSV files, schema JSON), core/maintain (consolidation and vacuum). All
 * of it on the storage interface, so faults can be injected anywhere. */
#ifndef TFS_WRITE_H
#define TFS_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"
#include "tfs_format.h"
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

/* Writes one new array metadata file (metadata.md §3) holding these
 * entries; entries with deleted = true delete their key. */
enum tfs_err tfs_array_metadata_write(const char *path,
				      const struct tfs_meta_kv *entries,
				      size_t count,
				      const struct tfs_write_opts *opts,
				      struct tfs_diag *d) TFS_WUR;

/* Removes fragment folders that have no commit and were last modified
 * more than grace_ms ago (left by a crashed write), and spill files in
 * opts->spill_dir (or $TMPDIR, /tmp) left by writers of processes that no
 * longer run. *removed (may be NULL) counts them. A fragment that a
 * consolidated commit file (.con) lists counts as committed. */
enum tfs_err tfs_array_cleanup(const char *path, const struct tfs_write_opts *opts,
			       uint64_t grace_ms, unsigned *removed,
			       struct tfs_diag *d) TFS_WUR;

/* ---- CSV ingest and schema JSON (core/ingest) --------------------------- */

struct tfs_ingest_progress {
	uint64_t bytes_done, bytes_total; /* of the CSV file, in this pass */
	uint64_t rows;                    /* rows read in this pass */
	/* Pass 1 of 2 of tfs_ingest_csv_new reads the file to infer the
	 * schema; the last pass (1 of 1 for tfs_ingest_csv) writes. */
	unsigned pass, passes;
};

struct tfs_ingest_opts {
	struct tfs_write_opts write;
	/* Name the file has in messages ("readings.csv"); NULL = its path. */
	const char *display_name;
	/* Called now and then while parsing (may be NULL). */
	void (*progress)(const struct tfs_ingest_progress *p, void *arg);
	void *progress_arg;
};

struct tfs_ingest_result {
	struct tfs_write_result write;
	uint64_t rows;
	bool created; /* a new array was made (tfs_ingest_csv_new) */
};

/* Parses the CSV file at csv_path (RFC 4180: quotes, escaped quotes, CRLF,
 * BOM, newlines inside quotes; POSIX path) and writes it as one fragment
 * of the array at array_path (format/write.md; SPEC §6). The header names
 * the columns: every dimension and every attribute except nullable ones,
 * in any order. Values in the text forms of SPEC §4 (ISO-8601 dates and
 * times at the type's unit, or a count of the unit where the text is no
 * ISO-8601 form; blobs as hex; several values of a cell separated by one
 * space); an unquoted empty field is null in a nullable
 * attribute, "" is an empty string. Blank lines are skipped; lines are
 * counted from 1 (the header). Any bad row refuses the whole file with
 * TFS_E_INVALID (or TFS_E_RANGE) and a message "FILE: line L, column C
 * ('NAME'): why" (FILE = opts->display_name); nothing is written then.
 * Refusals of the writer (duplicate coordinates) are its message after
 * "FILE: ". Memory stays bounded for any file size: one record, two
 * batches and the writer's opts.write.memory. An empty file (no bytes),
 * or one with a header only, writes nothing and succeeds. */
enum tfs_err tfs_ingest_csv(const char *array_path, const char *csv_path,
			    const struct tfs_ingest_opts *opts,
			    struct tfs_ingest_result *result,
			    struct tfs_diag *d) TFS_WUR;

/* Creates the array at array_path with a schema inferred from the CSV
 * (SPEC §6) by a first pass over the whole file: each column the
 * narrowest of BOOL (true/false), INT64, FLOAT64, DATETIME_DAY / _SEC /
 * _MS / _US / _NS (the finest precision seen) and STRING_UTF8 (CHAR when
 * not UTF-8), nullable where a field is empty; a dense 1-D UINT64
 * dimension `row` over [0, rows - 1] (`row_1`, ... when a column has that
 * name); ZSTD on attributes. Then it ingests the file as one dense
 * fragment. Header names must be unique, non-empty and not start with
 * "__". On failure the new array is removed. */
enum tfs_err tfs_ingest_csv_new(const char *array_path, const char *csv_path,
				const struct tfs_ingest_opts *opts,
				struct tfs_ingest_result *result,
				struct tfs_diag *d) TFS_WUR;

/* Parses a schema in the JSON shape tilefs shows as schema.json (and
 * `tfs dump` prints) into out (tfs_schema_release): the whole document
 * ({"array_type", "format_version", "schema": {...}}) or the schema
 * object alone with "array_type" among its keys. Missing optional parts
 * get TileDB's defaults (format version TFS_FORMAT_VERSION_WRITE,
 * capacity 10000, row-major orders, ZSTD coordinates and offsets, RLE
 * validity, no attribute filters, default fill values, 64 KiB chunks);
 * keys it does not know are ignored. Enumerations ("enumerations":
 * name, type, cell_val_num, ordered, values; attributes name one in
 * "enumeration") come with their values in the map entries
 * (tfs_enum_ref.def, file names NULL: tfs_array_create chooses them),
 * checked as tfs_array_create checks them. Dimension labels are refused.
 * TFS_E_INVALID with a message "schema JSON: $.PATH: why" naming the
 * JSON path of the first problem; the result meets every rule of
 * tfs_schema_parse once its enumeration files are named. */
enum tfs_err tfs_schema_from_json(struct tfs_schema *out, const char *json,
				  size_t len, struct tfs_diag *d) TFS_WUR;

/* ---- Consolidation and vacuum (core/maintain) --------------------------- */

enum tfs_consolidate_mode {
	TFS_CONSOLIDATE_FRAGMENTS,     /* cells: one fragment over [t1, t2] */
	TFS_CONSOLIDATE_FRAGMENT_META, /* __fragment_meta/ files (.meta) */
	TFS_CONSOLIDATE_COMMITS,       /* __commits/ consolidated commits (.con) */
	TFS_CONSOLIDATE_ARRAY_META,    /* __meta/ into one file + .vac */
};

struct tfs_consolidate_opts {
	struct tfs_write_opts write;
	/* Only fragments with t2 <= end and t1 >= start (0, 0 = all). */
	uint64_t start, end;
};

/* Consolidates as format/consolidated.md describes, so that TileDB and
 * tilefs read the array identically before and after, at every time;
 * readers that have the array open keep working (files are written whole
 * under hidden names and renamed into place; nothing is removed). *made
 * (may be NULL) names what was written, "" when there was nothing to do
 * (fewer than two fragments or metadata files, commits already in one
 * .con). FRAGMENTS: dense arrays get one dense fragment over the bounding
 * box of the range's fragments, read as of the range's end and named
 * [t1min, t2max]; sparse arrays of format 15 or later one sparse fragment
 * of every version of every cell with its write time (t.tdb, named
 * [t1min, t2max], as TileDB does); when a fragment of the range has
 * timestamps of its own (or before format 15), one fragment of the
 * range's merged cells without timestamps, stamped [t2max, t2max] from
 * format 15 on so that windows ending inside the range still read the
 * originals. A range that another
 * fragment overlaps in time is TFS_E_INVALID. FRAGMENT_META and COMMITS
 * need format 12 or later (TFS_E_UNSUPPORTED). On failure the array reads
 * as before. */
enum tfs_err tfs_array_consolidate(const char *path,
				   enum tfs_consolidate_mode mode,
				   const struct tfs_consolidate_opts *opts,
				   char *made, size_t made_cap,
				   struct tfs_diag *d) TFS_WUR;
/* Removes what consolidation of this mode made obsolete (fragments named
 * by .vac files, their commits, consolidated metadata files) and nothing
 * else. *removed (may be NULL) counts the removed objects. FRAGMENTS:
 * only .vac files of committed consolidated fragments count; a listed
 * fragment's commit goes first (an .ign file first when a .con names
 * it), then its folder, then the .vac. FRAGMENT_META keeps the newest
 * .meta; COMMITS removes what the newest .con holds; ARRAY_META the files
 * .vac files list, then the .vac files. Every mode also removes temporary
 * files of consolidations that died an hour ago or more. */
enum tfs_err tfs_array_vacuum(const char *path, enum tfs_consolidate_mode mode,
			      const struct tfs_write_opts *opts,
			      unsigned *removed, struct tfs_diag *d) TFS_WUR;

#endif
