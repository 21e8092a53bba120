/* tilefs core: what the public API says about an array's schema.
 *
 * struct tfs_schema is opaque above core/: the accessors below describe
 * its dimensions and attributes ("fields": dimensions first, then
 * attributes, in schema order) with one small struct, struct
 * tfs_field_info, and its array-wide settings with struct
 * tfs_schema_info. Also here: the plain data types the public API hands
 * out (ranges, enumerations, metadata entries), defined once for the whole
 * tree (core/format parses into them).
 *
 * Everything a description points to belongs to the schema (or to the
 * array or writer it came from) and lives as long as it; the accessors
 * only read, so a schema shared by threads may be described by any of
 * them. */
#ifndef TFS_SCHEMA_H
#define TFS_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_datatype.h"
#include "tfs_err.h"

struct tfs_schema;

/* A [lo, hi] range of one dimension. Fixed-size: lo/hi point to size(type)
 * bytes each. Var-size (strings): lo_len/hi_len bytes. Views: the bytes are
 * owned by the struct the range belongs to. */
struct tfs_range {
	const uint8_t *lo;
	const uint8_t *hi;
	uint64_t lo_len;
	uint64_t hi_len;
};

/* An enumeration (schema.md §8): value_num values of type, fixed-size
 * (cell_val_num each, packed in data) or var-size (offsets index data). */
struct tfs_enumeration {
	char *name;
	char *path_name;
	uint8_t type;
	uint32_t cell_val_num;
	bool ordered;
	uint8_t *data;
	uint64_t data_size;
	uint64_t *offsets; /* value_num entries (var-size), else NULL */
	uint64_t value_num;
};

/* One array (or group) metadata entry (metadata.md). */
struct tfs_meta_kv {
	char *key;
	uint32_t key_len;
	bool deleted;
	uint8_t type;
	uint32_t value_num;
	uint8_t *value; /* value_num × size(type) bytes */
};

/* One dimension or attribute. */
struct tfs_field_info {
	const char *name;
	uint8_t type;          /* enum tfs_datatype */
	uint32_t cell_val_num; /* TFS_VAR_NUM for var-size fields */
	bool var;
	bool nullable; /* attributes only */
	bool is_dim;
	/* Dimensions: the domain and the tile extent, one value of the type
	 * each; has_domain is false for string dimensions. */
	bool has_domain;
	const uint8_t *domain_lo, *domain_hi;
	bool has_extent;
	const uint8_t *extent;
	/* Attributes: the fill value (fill_size bytes; fill_valid for a
	 * nullable attribute), the cell value order (0 unordered) and the
	 * enumeration's name (NULL = none). */
	const uint8_t *fill;
	uint64_t fill_size;
	uint8_t fill_valid;
	uint8_t order;
	const char *enumeration;
};

/* Array-wide settings of a schema. */
struct tfs_schema_info {
	const char *name; /* file name: "__t1_t2_uuid" or "__array_schema.tdb" */
	uint64_t t1, t2;
	uint32_t version;
	uint8_t array_type; /* enum tfs_array_type */
	uint8_t tile_order; /* enum tfs_layout */
	uint8_t cell_order;
	uint64_t capacity;
	bool allows_dups;
};

void tfs_schema_get_info(const struct tfs_schema *s,
			 struct tfs_schema_info *out);
bool tfs_schema_is_dense(const struct tfs_schema *s);

uint32_t tfs_schema_dim_count(const struct tfs_schema *s);
uint32_t tfs_schema_attr_count(const struct tfs_schema *s);
/* Dimensions plus attributes. */
uint32_t tfs_schema_field_count(const struct tfs_schema *s);
/* Describe dimension i (< dim count), attribute i (< attr count), or
 * field i (< field count: dimensions first). */
void tfs_schema_dim(const struct tfs_schema *s, uint32_t i,
		    struct tfs_field_info *out);
void tfs_schema_attr(const struct tfs_schema *s, uint32_t i,
		     struct tfs_field_info *out);
void tfs_schema_field(const struct tfs_schema *s, uint32_t i,
		      struct tfs_field_info *out);

/* Bytes per cell of a fixed-size field (type size × cell_val_num); for a
 * var-size field the size of one value. */
uint64_t tfs_field_cell_size(const struct tfs_field_info *f);

/* Name and datatype of dimension i (< dim count). */
const char *tfs_schema_dim_name(const struct tfs_schema *s, uint32_t i);
uint8_t tfs_schema_dim_type(const struct tfs_schema *s, uint32_t i);

/* Index of the attribute / dimension / field called name, or -1. */
int tfs_schema_attr_index(const struct tfs_schema *s, const char *name);
int tfs_schema_dim_index(const struct tfs_schema *s, const char *name);
int tfs_schema_field_index(const struct tfs_schema *s, const char *name);

/* A filter list of a schema, as stored: field i's own list (a dimension
 * with an empty list inherits the coordinate filters) or one of the
 * array-wide lists (the field number is then ignored). */
enum tfs_filter_list {
	TFS_FILTERS_OF_FIELD,
	TFS_FILTERS_COORDS,
	TFS_FILTERS_OFFSETS,
	TFS_FILTERS_VALIDITY,
};

/* How many filters the list has, and its maximum chunk size in bytes. */
uint32_t tfs_schema_filter_count(const struct tfs_schema *s,
				 enum tfs_filter_list which, uint32_t field);
uint64_t tfs_schema_filter_chunk_max(const struct tfs_schema *s,
				     enum tfs_filter_list which,
				     uint32_t field);
/* Filter k of the list appended to out as the corpus JSON names it
 * ("ZSTD(level=3)"); k out of range is TFS_E_INVALID. */
enum tfs_err tfs_schema_filter_describe(const struct tfs_schema *s,
					enum tfs_filter_list which,
					uint32_t field, uint32_t k,
					struct tfs_buf *out) TFS_WUR;

/* Frees a schema made by tfs_schema_from_json_new (tfs_ingest.h); NULL is
 * fine. */
void tfs_schema_free(struct tfs_schema *s);

/* The current domain (format v22+) of dimension i, or NULL when the
 * schema has none. */
const struct tfs_range *tfs_schema_current_domain(const struct tfs_schema *s,
						  uint32_t i);

#endif
