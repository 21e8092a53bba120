/* A test-array builder: writes small TileDB arrays of any format version
 * (1 to 23) byte by byte from the format description (../shared/format/),
 * so that the version boundaries the corpus does not cover can be read
 * back through the public API and checked cell by cell.
 *
 * What it writes, by fragment version (layout.md §1–2, fragment.md):
 *   1–2   `__<uuid>_<t>` in the root, one generic tile of legacy metadata
 *         (fragment.md §9), `__coords.tdb` zipped (v1 without a compressor
 *         in the coords filters) or unzipped (tile.md §7), no commit file;
 *   3–4   `__<t1>_<t2>_<uuid>`, generic tiles + fixed-size footer, v3–4
 *         R-tree, `__coords.tdb` unzipped;
 *   5–11  `__<t1>_<t2>_<uuid>_<v>` in the root with a `.ok` commit, one
 *         file per dimension, data files named after the field (v5–7),
 *         percent-encoded (v8) or by index (v9+), validity files (v7+),
 *         footer length appended from v10 or with a var-size dimension,
 *         per-tile statistics (v11+);
 *   12+   `__fragments/` with `.wrt` commits in `__commits/`, fragment summary (v12+),
 *         processed conditions (v16+), optional sections (v23).
 * Schemas go to `__array_schema.tdb` (v < 10) or `__schema/` (v10+).
 * Generic tiles carry the version they are written for in their header,
 * as the TileDB of that version did.
 *
 * Test code: every failure is a Criterion assertion. */
#ifndef TFS_LEGACY_BUILDER_H
#define TFS_LEGACY_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_format.h"
#include "tfs_vfs.h"

#define LB_MAX_DIMS 4
#define LB_MAX_ATTRS 8
#define LB_MAX_SCHEMAS 4

/* ---- schemas ------------------------------------------------------------- */

/* Starts a schema of format version `version` (row-major tile and cell
 * orders, empty filter lists of max chunk 65536, no attributes yet).
 * Release with tfs_schema_release. */
void lb_schema_init(struct tfs_schema *s, uint32_t version, bool sparse,
		    uint64_t capacity);
/* Integer (or date/time) dimension [lo, hi]; extent 0 = none. */
struct tfs_dim *lb_add_dim(struct tfs_schema *s, const char *name, uint8_t type,
			   int64_t lo, int64_t hi, int64_t extent);
/* Var-size STRING_ASCII dimension (v5+, sparse). */
struct tfs_dim *lb_add_str_dim(struct tfs_schema *s, const char *name);
/* Attribute with the default fill value of its type (schema.md §1). */
struct tfs_attr *lb_add_attr(struct tfs_schema *s, const char *name,
			     uint8_t type, uint32_t cell_val_num,
			     bool nullable);
/* Replaces the fill value (v6+ stores it). */
void lb_set_fill(struct tfs_attr *a, const void *fill, uint64_t size);
/* Appends a compression-family filter (compressor = type) or another
 * filter with TileDB's default options. */
void lb_add_filter(struct tfs_pipeline *p, uint8_t type);
/* Adds a dimension label (v18+) on dimension dim stored at `uri`. */
void lb_add_label(struct tfs_schema *s, uint32_t dim, const char *name,
		  const char *uri, bool relative, uint8_t order, uint8_t type);

/* ---- arrays ---------------------------------------------------------------- */

struct lb_array {
	struct tfs_vfs *vfs; /* borrowed */
	char *dir;           /* array folder */
	/* Every schema written, as parsed back from its bytes. */
	struct tfs_schema schemas[LB_MAX_SCHEMAS];
	size_t schema_num;
	size_t current; /* schema of new fragments of version >= 10 */
	uint32_t uuid_counter;
};

/* Creates the array folder at dir and writes `spec` as its first schema
 * (the version in spec decides where), stamped t. */
void lb_array_create(struct lb_array *a, struct tfs_vfs *vfs, const char *dir,
		     const struct tfs_schema *spec, uint64_t t);
/* Writes another schema (evolution or an upgraded library) into
 * `__schema/`, stamped t; fragments of version >= 10 then use it. */
void lb_array_add_schema(struct lb_array *a, const struct tfs_schema *spec,
			 uint64_t t);
void lb_array_release(struct lb_array *a);
/* The schema fragments of this version are written with. */
const struct tfs_schema *lb_schema_for(const struct lb_array *a,
				       uint32_t version);

/* ---- fragments ------------------------------------------------------------- */

/* The values of one field for every cell of a fragment. */
struct lb_field {
	const void *data;        /* fixed-size: cell_num × cell size bytes */
	const char *const *strs; /* var-size: one NUL-terminated value a cell */
	const uint8_t *validity; /* nullable: cell_num bytes; NULL = valid */
};

struct lb_frag {
	uint32_t version;
	uint64_t t1, t2;  /* t2 = 0: t1; v1–2: t2 > t1 names a consolidated
			     fragment __<uuid>_<t2>_<t1> */
	bool no_commit;   /* v5+: leave out the .ok / .wrt file */
	bool sparse;      /* a sparse fragment (also in a dense array) */
	/* Dense: the box written; the attribute values list its cells in
	 * row-major order (first dimension slowest). */
	int64_t lo[LB_MAX_DIMS], hi[LB_MAX_DIMS];
	/* Sparse: cells in any order; coordinates per dimension (fixed:
	 * values of the dimension type; string dimensions: strs). */
	uint64_t cell_num;
	struct lb_field dims[LB_MAX_DIMS];
	struct lb_field attrs[LB_MAX_ATTRS];
};

/* What a written fragment is called and its footer (v3+), kept for
 * consolidated fragment metadata. */
struct lb_written {
	char *name; /* folder name */
	char *rel;  /* array-relative folder */
	uint32_t version;
	uint64_t t1, t2;
	uint8_t *footer; /* without the trailing footer length */
	size_t footer_len;
};

void lb_write_fragment(struct lb_array *a, const struct lb_frag *f,
		       struct lb_written *out);
void lb_written_release(struct lb_written *w);

/* A consolidated fragment metadata file (consolidated.md §1) of version
 * `version` listing frags: by name from version 9, else by the URI
 * uri_prefix + name (NULL: "file://" + the array folder + "/"). */
void lb_write_meta(struct lb_array *a, uint32_t version, uint64_t t1,
		   uint64_t t2, const struct lb_written *frags, size_t n,
		   const char *uri_prefix);

/* The vacuum file of consolidated fragment `into` (consolidated.md §4):
 * one line per fragment of from, an absolute file:// URI (what TileDB
 * wrote before v19) or the array-relative folder (v19+). */
void lb_write_vac(struct lb_array *a, const struct lb_written *into,
		  const struct lb_written *from, size_t n, bool absolute);

/* A delete (.del) or update (.upd, with one update value a = value) commit
 * of `version` holding the condition `field < value` (int32), in
 * `__commits/`; header_version is the generic tile header's version.
 * Returns its array-relative path (free it). */
char *lb_write_condition(struct lb_array *a, const char *ext, uint32_t version,
			 uint32_t header_version, uint64_t t,
			 const char *field, int32_t value);

/* A dense 1-D array of `version` (18+): dimension i INT32 [0, 9], v =
 * 100 + i, with two dimension labels on i stored as arrays of their own:
 * "lab" (FLOAT64, increasing, `__labels/l0`, label 0.5 i − 1) and "name"
 * (STRING_ASCII, decreasing, `__labels/l1`, "j" down to "a"). */
void lb_write_labelled(struct tfs_vfs *vfs, const char *dir, uint32_t version);

/* Writes data at the array-relative path rel. */
void lb_put(struct lb_array *a, const char *rel, const void *data, size_t len);
/* Encodes payload as a generic tile (GZIP level 1) with header version v. */
void lb_generic_tile(struct tfs_buf *out, const void *payload, size_t len,
		     uint32_t v);

#endif
