/* Helpers shared by the files of the fragment module: reading generic-tile
 * files with the array key, listing array folders with TileDB's listing
 * rules, the time-window tests, and the steps of tfs_arraydir_open that live
 * in their own files. Not part of the module's contract. */
#ifndef TFS_FRAGMENT_INTERNAL_H
#define TFS_FRAGMENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_fragment.h"
#include "tfs_str.h"

/* Upper bound for any whole metadata file read into memory and for any
 * decoded generic tile: a lying header can't make us allocate more. */
#define TFS__FILE_MAX ((size_t)1 << 30)

/* The reserved folder names of an array (layout.md §4). */
bool tfs__is_reserved_name(const char *name);

/* [a, b] inside [t0, t1] (full) or intersecting it (any). */
static inline bool tfs__full_overlap(uint64_t a, uint64_t b, uint64_t t0,
				     uint64_t t1)
{
	return a >= t0 && b <= t1;
}

static inline bool tfs__any_overlap(uint64_t a, uint64_t b, uint64_t t0,
				    uint64_t t1)
{
	return a <= t1 && t0 <= b;
}

/* Joins the array path and an array-relative path ("" = the array). */
char *tfs__array_path(const struct tfs_arraydir *a, const char *rel);

/* Lists the array-relative folder rel with TileDB's listing rules
 * (layout.md §4): a zero-byte file named like the folder itself is dropped,
 * a zero-byte file named like a reserved folder is TFS_E_CORRUPT. A missing
 * folder is an empty list when optional, else TFS_E_NOT_FOUND. */
enum tfs_err tfs__list(const struct tfs_arraydir *a, const char *rel,
		       bool optional, bool rules, struct tfs_dirlist *out,
		       struct tfs_diag *d);

/* Decodes the generic tile at buf (what names it in messages) with the
 * array's key. A key problem (missing, not needed, or wrong: the tile does
 * not decrypt) is TFS_E_KEY. */
enum tfs_err tfs__decode_tile(const struct tfs_arraydir *a, const char *what,
			      const uint8_t *buf, size_t len, size_t max_payload,
			      uint8_t **payload, size_t *payload_len,
			      size_t *consumed, struct tfs_diag *d);
/* Reads the file at the array-relative path rel and decodes the one
 * generic tile it holds. */
enum tfs_err tfs__read_tile_file(const struct tfs_arraydir *a, const char *rel,
				 uint8_t **payload, size_t *payload_len,
				 struct tfs_diag *d);
/* Reads and decodes the generic tile at byte offset off of the file at
 * the (full) path, whose size is file_size: from whole (the file's
 * file_size bytes) when it is not NULL, else from storage; a payload
 * larger than max_payload is an error. */
enum tfs_err tfs__read_tile_at(const struct tfs_arraydir *a, const char *path,
			       const uint8_t *whole, uint64_t file_size,
			       uint64_t off, size_t max_payload,
			       uint8_t **payload, size_t *payload_len,
			       struct tfs_diag *d);

/* Schema called name among the loaded ones, or NULL. */
const struct tfs_schema *tfs__find_schema(const struct tfs_arraydir *a,
					  const char *name);

/* visibility.c: fragments, vacuum lists, delete conditions (layout.md
 * §6, consolidated.md); fills fragments, listed, to_vacuum, deletes,
 * has_updates and the fragment pool. */
enum tfs_err tfs__load_fragments(struct tfs_arraydir *a, struct tfs_diag *d);

/* fragment_load.c */
struct tfs__meta_index; /* consolidated .meta files, searchable by name */
enum tfs_err tfs__meta_index_load(const struct tfs_arraydir *a,
				  char *const *rel_paths, size_t num,
				  struct tfs__meta_index **out,
				  struct tfs_diag *d);
void tfs__meta_index_free(struct tfs__meta_index *m);
/* Creates the fragment at the array-relative folder rel: parses its name,
 * loads its footer (from idx when listed there) and schema, computes its
 * tile and cell numbers. */
enum tfs_err tfs__fragment_new(const struct tfs_arraydir *a, const char *rel,
			       const struct tfs__meta_index *idx,
			       struct tfs_fragment **out, struct tfs_diag *d);
void tfs__fragment_free(struct tfs_fragment *f);

/* array_metadata.c: merged array metadata (metadata.md §2) into
 * a->metadata, through tfs_metadata_load. */
enum tfs_err tfs__load_metadata(struct tfs_arraydir *a, struct tfs_diag *d);

#endif
