/* TileDB values as JSON, by the conventions of the corpus
 * (corpus/README.md, "Conventions"): integer, datetime, time and BOOL
 * values as exact integers, floats as numbers that read back to the same
 * binary value (NaN and infinities as strings), a CHAR/STRING_* cell as one
 * string of its bytes, a BLOB/ANY/GEOM cell as lower-case hex, other
 * multi-value or var-size cells as arrays of numbers. */
#ifndef TFS_CELL_JSON_H
#define TFS_CELL_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include "json_out.h"
#include <tilefs/tilefs.h>

/* One value of a numeric type (size tfs_datatype_size(type) at p). */
void cell_json_value(struct json_out *j, uint8_t type, const void *p);

/* One cell of len bytes: var-size (var) or cell_val_num values. Strings
 * and bytes types give one string; numeric cells a scalar when fixed with
 * one value, else an array (also for a var-size cell of one value). */
void cell_json_cell(struct json_out *j, uint8_t type, bool var,
		    uint32_t cell_val_num, const uint8_t *p, uint64_t len);

/* Cell i of a batch column (null when the cell is NULL). */
void cell_json_column(struct json_out *j, const struct tfs_column *c,
		      uint64_t i);

/* A range of a dimension of this type: [lo, hi]; strings for var-size
 * (string) dimensions. */
void cell_json_range(struct json_out *j, uint8_t type, bool var,
		     const struct tfs_range *r);

/* A metadata value list: numbers, or one string (hex for byte types). */
void cell_json_meta_values(struct json_out *j, uint8_t type,
			   uint32_t value_num, const uint8_t *value);

/* Parses one value of a fixed-size numeric dimension type from text into
 * dst (tfs_datatype_size(type) bytes): integers exactly with range checks,
 * floats with strtod/strtof. False when text is not such a value. */
bool cell_json_parse_value(uint8_t type, const char *text, uint8_t dst[8]);

#endif
