/* The TileDB on-disk format: bytes in, structs out, and back. Timestamped
 * names, generic tiles, array schemas, enumerations, fragment metadata
 * (footer, per-slot tiles, R-tree), array metadata, consolidation files,
 * delete conditions and group details, for format versions 1 to 23 (the
 * format/ folder). No I/O.
 *
 * Parsers treat every input as untrusted: a truncated or inconsistent input
 * is TFS_E_CORRUPT with a diagnostic saying what and where; a version newer
 * than TFS_FORMAT_VERSION_MAX is TFS_E_UNSUPPORTED ("unsupported format
 * version N"). Parsed structs own their memory and are freed with their
 * _release function; after a failed parse there is nothing to release. */
#ifndef TFS_FORMAT_H
#define TFS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_datatype.h"
#include "tfs_err.h"
#include "tfs_filter.h"
#include "tfs_schema.h"

#define TFS_FORMAT_VERSION_MAX 23
#define TFS_FORMAT_VERSION_WRITE 22
/* Cap on decoded metadata payloads (schemas, enumerations) decoded by the
 * convenience wrappers of this module. */
#define TFS_FORMAT_MAX_PAYLOAD ((size_t)1 << 30)

/* ---- Timestamped names (layout.md §2) ---------------------------------- */

struct tfs_name_info {
	uint64_t t1, t2;
	uint32_t version; /* "name version": from suffix, or 4 / 2 (see §2) */
	char uuid[33];    /* empty if the name has none we could find */
};

/* Parses the last path component the way TileDB does (extension stripped).
 * TFS_E_INVALID if it is not a timestamped name or t1 > t2. */
enum tfs_err tfs_name_parse(const char *name, struct tfs_name_info *out) TFS_WUR;

/* Room for any name tfs_name_new makes with an extension of up to 16
 * characters, NUL included. */
#define TFS_NAME_MAX 128

/* 32 lowercase hex digits of fresh random bytes into buf[33]: the uuid of
 * a new name, or of any file that must not collide. TFS_E_INTERNAL when
 * the system gives no random bytes. Thread-safe. */
enum tfs_err tfs_uuid_new(char buf[33]) TFS_WUR;

/* A new timestamped name "__<t1>_<t2>_<uuid>[_<version>]<ext>" with a
 * fresh uuid, into dst of cap bytes; version 0 leaves the version part out
 * (schema and array metadata files), ext may be "". TFS_E_INTERNAL without
 * random bytes, TFS_E_TOO_BIG when cap is too small. */
enum tfs_err tfs_name_new(char *dst, size_t cap, uint64_t t1, uint64_t t2,
			  uint32_t version, const char *ext) TFS_WUR;

/* ---- Generic tiles (generic_tile.md) ----------------------------------- */

struct tfs_generic_header {
	uint32_t version;
	uint64_t persisted_size;
	uint64_t tile_size;
	uint8_t datatype;
	uint64_t cell_size;
	uint8_t encryption_type; /* 0 none, 1 AES-256-GCM */
	struct tfs_pipeline filters;
	size_t header_size; /* 34 + filter list size */
};

#define TFS_GENERIC_HEADER_FIXED 34

/* Parses the header at buf; checks sizes fit in len (header + persisted). */
enum tfs_err tfs_generic_header_parse(struct tfs_generic_header *out,
				      const uint8_t *buf, size_t len,
				      struct tfs_diag *d) TFS_WUR;
/* Decodes the generic tile at buf (len bytes available) into a new payload
 * buffer (caller frees with tfs_free); *consumed = total tile size
 * (consumed may be NULL). key is the 32-byte array key or NULL; a key
 * mismatch with the header's encryption type is TFS_E_KEY. max_payload caps
 * the decoded size (TFS_E_TOO_BIG above it). A header version above
 * TFS_FORMAT_VERSION_MAX is TFS_E_UNSUPPORTED. */
enum tfs_err tfs_generic_tile_decode(const uint8_t *buf, size_t len,
				     const uint8_t *key, size_t max_payload,
				     uint8_t **payload, size_t *payload_len,
				     size_t *consumed, struct tfs_diag *d) TFS_WUR;
/* Appends a generic tile holding payload (GZIP level 1 like TileDB, plus
 * AES-256-GCM when key is set); header version TFS_FORMAT_VERSION_WRITE,
 * datatype CHAR, cell size 1. On failure out is left as it was. */
enum tfs_err tfs_generic_tile_encode(struct tfs_buf *out, const uint8_t *payload,
				     size_t len, const uint8_t *key,
				     struct tfs_diag *d) TFS_WUR;

/* ---- Ranges (schema.md §7) --------------------------------------------- */

/* struct tfs_range, and the public description of fields: tfs_schema.h. */

/* ---- Array schema (schema.md) ------------------------------------------ */

struct tfs_dim {
	char *name;
	uint8_t type;
	uint32_t cell_val_num; /* 1 or TFS_VAR_NUM */
	bool var;
	struct tfs_pipeline filters; /* effective: coords filters if inherited */
	bool filters_inherited;      /* stored list was empty (always < v5) */
	/* Added: max_chunk_size of the stored empty list when inherited (0 for
	 * < v5); serialization writes it back (0 → 65536). */
	uint32_t stored_max_chunk;
	bool has_domain;             /* false for string dimensions */
	uint8_t domain[2][8];        /* lo, hi in the dimension type */
	bool has_extent;
	uint8_t extent[8];
};

struct tfs_attr {
	char *name;
	uint8_t type;
	uint32_t cell_val_num; /* TFS_VAR_NUM = var-size */
	bool var;
	struct tfs_pipeline filters;
	uint8_t *fill; /* fill value bytes (default fill before v6) */
	uint64_t fill_size;
	bool nullable;
	uint8_t fill_valid;
	uint8_t order;
	char *enumeration; /* NULL = none */
};

struct tfs_label {
	uint32_t dim_index;
	char *name;
	bool uri_relative;
	char *uri;
	char *attr_name;
	uint8_t order;
	uint8_t type;
	uint32_t cell_val_num;
	bool is_external;
};

struct tfs_enum_ref {
	char *name;
	char *file;
	/* Added: the enumeration itself (owned), for a schema that is to be
	 * created (tfs_schema_from_json, tfs_array_create), which writes it
	 * to a file of its own and names the file (file may then be NULL).
	 * NULL in parsed schemas: their enumerations are separate files
	 * (schema.md §8) that the array loads. */
	struct tfs_enumeration *def;
};

struct tfs_schema {
	char *name; /* file name: "__t1_t2_uuid" or "__array_schema.tdb" */
	uint64_t t1, t2;
	uint32_t version;
	bool allows_dups;
	uint8_t array_type; /* enum tfs_array_type */
	uint8_t tile_order;
	uint8_t cell_order;
	uint64_t capacity;
	struct tfs_pipeline coords_filters;
	struct tfs_pipeline offsets_filters;
	struct tfs_pipeline validity_filters;
	uint32_t dim_num;
	struct tfs_dim *dims;
	uint32_t attr_num;
	struct tfs_attr *attrs;
	uint32_t label_num;
	struct tfs_label *labels;
	uint32_t enum_num;
	struct tfs_enum_ref *enums;
	bool has_current_domain;
	struct tfs_range *current_domain; /* dim_num ranges */
	uint8_t *current_domain_bytes;    /* backing store of the ranges */
};

/* Parses a schema payload (the decoded generic tile). name is the file
 * name (may be NULL); its timestamps are parsed when it is a timestamped
 * name, else t1 = t2 = 0. Checks: version 1..23 (above: TFS_E_UNSUPPORTED
 * "unsupported format version N"), enums in range (cell orders global and
 * unordered, which TileDB never creates: TFS_E_UNSUPPORTED), 1..128
 * dimensions of valid types with matching domain/extent sizes, lo <= hi,
 * positive extents, sane cell_val_num and fill sizes, dense arrays with
 * one integer dimension type and at least one attribute, unique names,
 * known enumerations, no trailing bytes. Before v6 fill = default fill of
 * the type (cell_val_num times; one value when var). */
enum tfs_err tfs_schema_parse(struct tfs_schema *out, const uint8_t *buf,
			      size_t len, const char *name,
			      struct tfs_diag *d) TFS_WUR;
/* Added: decodes a whole schema file (generic tile, key or NULL) and parses
 * it; every message names the schema ("schema '<name>': ..."). A header or
 * schema version above TFS_FORMAT_VERSION_MAX is TFS_E_UNSUPPORTED. */
enum tfs_err tfs_schema_decode(struct tfs_schema *out, const uint8_t *file,
			       size_t len, const char *name, const uint8_t *key,
			       struct tfs_diag *d) TFS_WUR;
/* Appends the payload for s->version (any of 1..23; below 5 every
 * dimension must be fixed-size and of one type). A parsed schema
 * serializes back to its original bytes, except for filter options the
 * parser tolerates and TileDB never writes (filters.md §1): non-zero WebP
 * padding (written as zeros) and a delta / double-delta reinterpret byte
 * present or missing against the version rule (written by the rule),
 * and an empty dimension filter list with max chunk size 0 (written with
 * 65536, see tfs_dim.stored_max_chunk).
 * TFS_E_INVALID on an inconsistent struct; out unchanged on failure. */
enum tfs_err tfs_schema_serialize(struct tfs_buf *out,
				  const struct tfs_schema *s) TFS_WUR;
void tfs_schema_release(struct tfs_schema *s);
/* Bytes per cell of a fixed-size attribute (type size × cell_val_num); for
 * a var-size attribute the size of one value. */
uint64_t tfs_attr_cell_size(const struct tfs_attr *a);
/* True when the var-size field's offsets are embedded in its values tile
 * (tile.md §4) under a schema of this version and this filter list. */
bool tfs_offsets_embedded(uint8_t type, const struct tfs_pipeline *p,
			  uint32_t schema_version);

/* ---- Enumerations (schema.md §8) --------------------------------------- */

/* struct tfs_enumeration: tfs_schema.h. */

/* Parses an enumeration payload (decoded generic tile). Enumeration
 * versions above 0 are TFS_E_UNSUPPORTED. */
enum tfs_err tfs_enumeration_parse(struct tfs_enumeration *out,
				   const uint8_t *buf, size_t len,
				   struct tfs_diag *d) TFS_WUR;
/* Added: appends the payload (enumeration version 0). */
enum tfs_err tfs_enumeration_serialize(struct tfs_buf *out,
				       const struct tfs_enumeration *e) TFS_WUR;
void tfs_enumeration_release(struct tfs_enumeration *e);
/* Added: the bytes of value i, a view into e->data; false when i is out
 * of range or the offsets are out of order. */
bool tfs_enumeration_value(const struct tfs_enumeration *e, uint64_t i,
			   const uint8_t **p, uint64_t *len);
/* Added: checks an enumeration that is to be written as TileDB checks
 * one it creates: a name that is not empty and has no '/', a valid
 * datatype, cell_val_num not 0, data a whole number of cells (fixed) or
 * offsets in order inside the data (var), and distinct values.
 * TFS_E_INVALID with "enumeration 'NAME': why"; TFS_E_NOMEM. */
enum tfs_err tfs_enumeration_check(const struct tfs_enumeration *e,
				   struct tfs_diag *d) TFS_WUR;
/* Added: why attribute a cannot hold indices into e, as TileDB checks
 * when a schema is created (a static reason), or NULL when it can: an
 * integer type INT8..UINT64, one value per cell, and fewer values than
 * the type's largest value. */
const char *tfs_enumeration_attr_problem(const struct tfs_attr *a,
					 const struct tfs_enumeration *e);

/* Added: a hash index from the bytes of a value to its index, so that
 * values given as text (CSV labels) find their index in O(1) whatever
 * the enumeration's size. It borrows the enumeration, which must outlive
 * it; immutable once built, so threads may share it. */
struct tfs_enum_index;

/* Builds the index of e's values. Equal values map to the first of them;
 * *dup (may be NULL) receives the index of the first value equal to an
 * earlier one, or UINT64_MAX when all are distinct. TFS_E_NOMEM, or
 * TFS_E_INVALID when the offsets are out of order. *out is NULL on
 * failure. */
enum tfs_err tfs_enum_index_new(const struct tfs_enumeration *e, uint64_t *dup,
				struct tfs_enum_index **out) TFS_WUR;
/* Index of the value whose bytes are p[0..len), or UINT64_MAX. */
uint64_t tfs_enum_index_find(const struct tfs_enum_index *x, const void *p,
			     size_t len);
void tfs_enum_index_free(struct tfs_enum_index *x);

/* ---- Fragment metadata (fragment.md) ----------------------------------- */

/* Number of slots of fragment version v for a schema with A attributes and
 * D dimensions (fragment.md §1). */
uint32_t tfs_slot_count(uint32_t version, uint32_t attr_num, uint32_t dim_num,
			bool timestamps, bool delete_meta);

/* Slots (fragment.md §1). Versions 3–4 store A+1 entries for the file
 * sizes and tile offsets lists and A entries for the var lists: here they
 * use slot_num = A+1 slots, the A-entry lists filling slots 0..A-1 and
 * leaving the `__coords` slot A at 0. Validity lists before v7 are zeros;
 * the v11+ statistics lists are NULL before v11. */
struct tfs_footer {
	uint32_t version;
	char *schema_name; /* v10+; else NULL (use "__array_schema.tdb") */
	bool dense;
	bool empty; /* null non-empty domain: ned is NULL, nothing was read */
	struct tfs_range *ned; /* dim_num ranges, NULL when empty */
	uint8_t *ned_bytes;
	uint32_t dim_num;
	uint64_t sparse_tile_num;
	uint64_t last_tile_cell_num;
	bool has_timestamps;
	bool has_delete_meta;
	uint32_t slot_num;
	/* Per slot (slot_num entries; absent ones zero). */
	uint64_t *file_sizes;
	uint64_t *file_var_sizes;
	uint64_t *file_validity_sizes;
	uint64_t *tile_offsets_off;
	uint64_t *tile_var_offsets_off;
	uint64_t *tile_var_sizes_off;
	uint64_t *tile_validity_offsets_off;
	uint64_t *tile_mins_off;      /* v11+, else NULL */
	uint64_t *tile_maxes_off;
	uint64_t *tile_sums_off;
	uint64_t *tile_null_counts_off;
	uint64_t rtree_off;
	uint64_t summary_off;         /* v12+ */
	uint64_t processed_conditions_off; /* v16+ */
	bool has_gobounds;            /* v23 optional section 0 */
	uint64_t *gobounds_mins_off;  /* dim_num entries */
	uint64_t *gobounds_maxes_off;
	size_t size; /* bytes the footer occupies (without footer_len) */
};

/* Parses a footer of fragment version `version` at buf (the footer's first
 * byte; len bytes available, may be more than the footer). schema is the
 * fragment's schema: for v10+ callers read the schema name first with
 * tfs_footer_schema_name. out->size is the number of bytes used (a v11
 * footer written by TileDB >= 2.8 carries 8 more, ignored). Versions < 3
 * are TFS_E_CORRUPT (legacy metadata, see below), > 23 TFS_E_UNSUPPORTED.
 * v23 optional sections with unknown ids are skipped. */
enum tfs_err tfs_footer_parse(struct tfs_footer *out, const uint8_t *buf,
			      size_t len, const struct tfs_schema *schema,
			      struct tfs_diag *d) TFS_WUR;
/* Added: appends the footer of f->version (3..23) without the trailing
 * footer_len. f must not be empty (TileDB cannot read back what its writer
 * emits for an empty fragment); f->slot_num must match the schema.
 * TFS_E_INVALID otherwise; out unchanged on failure. */
enum tfs_err tfs_footer_serialize(struct tfs_buf *out,
				  const struct tfs_footer *f,
				  const struct tfs_schema *schema) TFS_WUR;
/* Reads the version and (v10+) schema name at the start of a footer; *name
 * is a new string or NULL for versions < 10. */
enum tfs_err tfs_footer_schema_name(const uint8_t *buf, size_t len,
				    uint32_t *version, char **name,
				    struct tfs_diag *d) TFS_WUR;
/* Footer size of versions < 10 with only fixed-size dimensions, computed
 * from the schema (fragment.md §3); 0 when the size is stored instead. */
uint64_t tfs_footer_fixed_size(uint32_t version, const struct tfs_schema *s);
void tfs_footer_release(struct tfs_footer *f);

/* A per-slot list of u64 (tile offsets, var offsets, var sizes, validity
 * offsets, null counts): payload `u64 count, count × u64`, exactly. *out
 * is new (tfs_free). */
enum tfs_err tfs_u64_list_parse(const uint8_t *buf, size_t len, uint64_t **out,
				uint64_t *count, struct tfs_diag *d) TFS_WUR;
/* Added: appends `u64 count, count × u64`. */
enum tfs_err tfs_u64_list_serialize(struct tfs_buf *out, const uint64_t *values,
				    uint64_t count) TFS_WUR;

/* R-tree (fragment.md §5): only the leaves are kept, one MBR per tile. */
struct tfs_rtree {
	uint32_t dim_num;
	uint32_t fanout;          /* added: as stored (0 = unknown, v1–2) */
	uint64_t leaf_num;
	struct tfs_range *leaves; /* leaf_num × dim_num, row per tile */
	uint8_t *bytes;           /* backing store */
	size_t bytes_len;         /* added: its size */
};

/* Parses an R-tree payload for a schema (dimension types). version is the
 * fragment version (v3–4 layout differs). */
enum tfs_err tfs_rtree_parse(struct tfs_rtree *out, const uint8_t *buf,
			     size_t len, uint32_t version,
			     const struct tfs_schema *schema,
			     struct tfs_diag *d) TFS_WUR;
void tfs_rtree_release(struct tfs_rtree *r);
/* Added: appends the R-tree of fragment version `version` (3..23) built
 * from r's leaves as TileDB builds it (fanout r->fanout, 10 if 0; height
 * ceil(log(n)/log(fanout)) + 1). Leaves of var dimensions must be views
 * that stay valid during the call. */
enum tfs_err tfs_rtree_serialize(struct tfs_buf *out, const struct tfs_rtree *r,
				 uint32_t version,
				 const struct tfs_schema *schema) TFS_WUR;

/* Legacy (v1–2) fragment metadata: one generic tile (fragment.md §9),
 * parsed into a footer, R-tree and offsets lists. The footer has
 * slot_num = A+1 (attributes, `__coords`), file sizes and var file sizes
 * (slot A var size 0), zero generic-tile offsets, no schema name;
 * sparse_tile_num = MBR count (0 when dense). The R-tree leaves are the
 * MBRs (fanout 0). */
struct tfs_legacy_meta {
	struct tfs_footer footer;
	struct tfs_rtree rtree;
	uint32_t attr_num;           /* added: A of the schema used */
	uint64_t **tile_offsets;     /* A+1 lists */
	uint64_t **tile_var_offsets; /* A lists */
	uint64_t **tile_var_sizes;   /* A lists */
	uint64_t *tile_counts;       /* entries of each tile_offsets list, A+1 */
	uint64_t *tile_var_counts;   /* added: of each tile_var_offsets list, A */
	uint64_t *tile_var_size_counts; /* added: of each tile_var_sizes list */
};

/* Added: parses the decoded payload of a v1–2 `__fragment_metadata.tdb`
 * with the fragment's schema (all dimensions of one fixed type). dense
 * comes from the folder (dense iff it has no `__coords.tdb`). */
enum tfs_err tfs_legacy_meta_parse(struct tfs_legacy_meta *out,
				   const uint8_t *buf, size_t len,
				   const struct tfs_schema *schema, bool dense,
				   struct tfs_diag *d) TFS_WUR;
void tfs_legacy_meta_release(struct tfs_legacy_meta *m);

/* Processed delete conditions (v16+): markers. */
struct tfs_strlist {
	char **items;
	size_t count;
};
/* Parses `u64 n, n × (u64 len, bytes)` exactly. */
enum tfs_err tfs_strlist_parse(struct tfs_strlist *out, const uint8_t *buf,
			       size_t len, struct tfs_diag *d) TFS_WUR;
/* Added: appends the same encoding. */
enum tfs_err tfs_strlist_serialize(struct tfs_buf *out,
				   const struct tfs_strlist *l) TFS_WUR;
void tfs_strlist_release(struct tfs_strlist *l);

/* ---- Consolidated fragment metadata (consolidated.md §1) --------------- */

struct tfs_meta_entry {
	char *name;     /* fragment name (≥ v9) or absolute URI (< v9) */
	uint64_t footer_offset; /* inside the payload */
};

struct tfs_consolidated_meta {
	uint32_t count;
	struct tfs_meta_entry *entries;
	uint8_t *payload; /* owned */
	size_t payload_len;
};

/* Takes ownership of payload (also on failure). Entry offsets are checked
 * to lie after the directory and inside the payload; footers are parsed
 * later with tfs_footer_parse at payload + footer_offset. */
enum tfs_err tfs_consolidated_meta_parse(struct tfs_consolidated_meta *out,
					 uint8_t *payload, size_t len,
					 struct tfs_diag *d) TFS_WUR;
void tfs_consolidated_meta_release(struct tfs_consolidated_meta *m);

/* ---- Commit, ignore and vacuum files (consolidated.md §2–4) ------------ */

struct tfs_con_entry {
	char *marker;        /* array-relative commit path */
	uint64_t del_offset; /* .del entries: offset of the tile in the file */
	uint64_t del_size;   /* 0 for other entries */
};

struct tfs_con_file {
	struct tfs_con_entry *entries;
	size_t count;
};

/* Parses a .con stream (layout.md §6 step 2): lines up to '\n' (an
 * unterminated last line counts, empty lines are skipped); after a line
 * ending ".del" come u64 n and n bytes of generic tile. */
enum tfs_err tfs_con_parse(struct tfs_con_file *out, const uint8_t *buf,
			   size_t len, struct tfs_diag *d) TFS_WUR;
void tfs_con_release(struct tfs_con_file *c);
/* Splits text into '\n'-terminated lines (.ign, .vac); an unterminated last
 * line is kept, empty lines are dropped. */
enum tfs_err tfs_lines_parse(struct tfs_strlist *out, const uint8_t *buf,
			     size_t len) TFS_WUR;
/* Normalises a .vac line to an array-relative path (layout.md §6 step 6):
 * from the first "__fragments" on, else from the first "__meta" on, else
 * the last component (the whole line if it has no '/'). Returns a new
 * string, NULL when out of memory. */
char *tfs_vac_line_normalize(const char *line);

/* ---- Array metadata (metadata.md) -------------------------------------- */

/* struct tfs_meta_kv: tfs_schema.h. */

struct tfs_meta_file {
	struct tfs_meta_kv *entries;
	size_t count;
};

/* Entries in file order; keys are NUL-terminated copies (key_len counts
 * the bytes, which may include NUL). */
enum tfs_err tfs_meta_file_parse(struct tfs_meta_file *out, const uint8_t *buf,
				 size_t len, struct tfs_diag *d) TFS_WUR;
void tfs_meta_file_release(struct tfs_meta_file *m);
enum tfs_err tfs_meta_file_serialize(struct tfs_buf *out,
				     const struct tfs_meta_file *m) TFS_WUR;

/* ---- Group details (groups.md §2) -------------------------------------- */

#define TFS_GROUP_MEMBER_GROUP 1 /* object types of a member */
#define TFS_GROUP_MEMBER_ARRAY 2

struct tfs_group_entry {
	uint32_t member_version; /* 1 or 2 */
	uint8_t object_type;     /* TFS_GROUP_MEMBER_GROUP or _ARRAY */
	bool relative;           /* uri is relative to the group folder */
	char *uri;               /* as stored; never NULL */
	bool name_set;
	char *name;              /* NULL unless name_set (may be "") */
	bool deleted;            /* version-2 members only */
};

struct tfs_group_details {
	uint32_t version; /* 1 or 2 */
	struct tfs_group_entry *entries; /* file order */
	size_t count;
};

/* Parses the payload of one group details file. Versions other than 1 and
 * 2 (details or member) are TFS_E_UNSUPPORTED; strings holding NUL bytes
 * and object types other than group/array are TFS_E_CORRUPT. */
enum tfs_err tfs_group_details_parse(struct tfs_group_details *out,
				     const uint8_t *buf, size_t len,
				     struct tfs_diag *d) TFS_WUR;
void tfs_group_details_release(struct tfs_group_details *g);
/* Appends the same encoding (tests, a later writer). */
enum tfs_err tfs_group_details_serialize(struct tfs_buf *out,
					 const struct tfs_group_details *g) TFS_WUR;

/* ---- Delete / update conditions (consolidated.md §6) ------------------- */

enum tfs_qc_op {
	TFS_QC_LT = 0, TFS_QC_LE = 1, TFS_QC_GT = 2, TFS_QC_GE = 3,
	TFS_QC_EQ = 4, TFS_QC_NE = 5, TFS_QC_IN = 6, TFS_QC_NOT_IN = 7,
	TFS_QC_ALWAYS_TRUE = 253, TFS_QC_ALWAYS_FALSE = 254,
};
enum tfs_qc_combine { TFS_QC_AND = 0, TFS_QC_OR = 1, TFS_QC_NOT = 2 };

struct tfs_qc_node {
	bool is_value;
	/* value node */
	uint8_t op;
	char *field;
	uint8_t *value;
	uint64_t value_len;       /* 0 = NULL value */
	uint64_t *set_offsets;    /* IN / NOT_IN */
	uint64_t set_num;
	/* expression node */
	uint8_t combine;
	struct tfs_qc_node *children;
	uint64_t child_num;
};

#define TFS_QC_MAX_DEPTH 64
#define TFS_QC_MAX_NODES 65536

/* Parses a condition tree; for .upd files *consumed tells where the update
 * values start. With consumed == NULL the tree must fill the buffer.
 * Depth (TFS_QC_MAX_DEPTH) and node counts (TFS_QC_MAX_NODES) are
 * bounded; NOT nodes have one child, AND/OR at least one; IN / NOT_IN set
 * offsets are non-decreasing and inside the value. */
enum tfs_err tfs_condition_parse(struct tfs_qc_node *out, const uint8_t *buf,
				 size_t len, size_t *consumed,
				 struct tfs_diag *d) TFS_WUR;
void tfs_condition_release(struct tfs_qc_node *n);
/* Added: appends the tree in the same encoding. */
enum tfs_err tfs_condition_serialize(struct tfs_buf *out,
				     const struct tfs_qc_node *n) TFS_WUR;

/* The tree of a public condition (tfs_where.h, whose comment says how IS
 * NULL, STARTSWITH, "" and NOT are expressed); out is released on
 * failure. */
struct tfs_where;
enum tfs_err tfs_where_to_qc(struct tfs_qc_node *out,
			     const struct tfs_where *c,
			     struct tfs_diag *d) TFS_WUR;

/* An update commit (.upd): the stored (negated) condition, then the values
 * to write, `u64 n, n × (u64 name_len, name, u64 value_len, value)`.
 * TileDB writes them but never applies them on read (experimental). */
struct tfs_update_value {
	char *field;
	uint8_t *value;
	uint64_t value_len;
};

struct tfs_update {
	struct tfs_qc_node cond;
	struct tfs_update_value *values;
	uint64_t value_num;
};

/* Parses a whole .upd payload (nothing may follow the values). */
enum tfs_err tfs_update_parse(struct tfs_update *out, const uint8_t *buf,
			      size_t len, struct tfs_diag *d) TFS_WUR;
enum tfs_err tfs_update_serialize(struct tfs_buf *out,
				  const struct tfs_update *u) TFS_WUR;
void tfs_update_release(struct tfs_update *u);

/* ---- Hilbert values (read.md §6) -------------------------------------- */

/* Bits per dimension: 63 / dim_num (0 for dim_num = 0). */
unsigned tfs_hilbert_bits(unsigned dim_num);
/* Maps a numeric coordinate c of type `type` with domain [lo, hi] (values
 * of that type) to [0, 2^bits − 1] the way TileDB does, in double
 * precision. Out-of-domain or degenerate inputs are clamped, never UB. */
uint64_t tfs_hilbert_map_num(uint8_t type, const void *c, const void *lo,
			     const void *hi, unsigned bits);
/* Maps a string coordinate (first 8 bytes, x86 signed-char semantics). */
uint64_t tfs_hilbert_map_str(const uint8_t *s, uint64_t len, unsigned bits);
/* Hilbert index of the mapped coordinates x[0..dim_num−1] (Skilling's
 * transform as TileDB computes it). x is used as scratch and clobbered. */
uint64_t tfs_hilbert_index(uint64_t *x, unsigned dim_num, unsigned bits);

#endif
