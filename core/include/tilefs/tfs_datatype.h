/* TileDB datatypes and the other small enums of the format, with sizes,
 * names and default fill values (format/schema.md §1). */
#ifndef TFS_DATATYPE_H
#define TFS_DATATYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tfs_datatype {
	TFS_INT32 = 0,
	TFS_INT64 = 1,
	TFS_FLOAT32 = 2,
	TFS_FLOAT64 = 3,
	TFS_CHAR = 4,
	TFS_INT8 = 5,
	TFS_UINT8 = 6,
	TFS_INT16 = 7,
	TFS_UINT16 = 8,
	TFS_UINT32 = 9,
	TFS_UINT64 = 10,
	TFS_STRING_ASCII = 11,
	TFS_STRING_UTF8 = 12,
	TFS_STRING_UTF16 = 13,
	TFS_STRING_UTF32 = 14,
	TFS_STRING_UCS2 = 15,
	TFS_STRING_UCS4 = 16,
	TFS_ANY = 17,
	TFS_DATETIME_YEAR = 18, /* ... DATETIME_AS = 30 */
	TFS_DATETIME_AS = 30,
	TFS_TIME_HR = 31, /* ... TIME_AS = 39 */
	TFS_TIME_AS = 39,
	TFS_BLOB = 40,
	TFS_BOOL = 41,
	TFS_GEOM_WKB = 42,
	TFS_GEOM_WKT = 43,
	TFS_DATATYPE_MAX = 43,
};

#define TFS_VAR_NUM UINT32_MAX

enum tfs_array_type { TFS_DENSE = 0, TFS_SPARSE = 1 };

enum tfs_layout {
	TFS_ROW_MAJOR = 0,
	TFS_COL_MAJOR = 1,
	TFS_GLOBAL_ORDER = 2,
	TFS_UNORDERED = 3,
	TFS_HILBERT = 4,
};

/* Kinds of value a datatype holds, for arithmetic and printing. */
enum tfs_type_class {
	TFS_CLASS_SIGNED,   /* INT*, DATETIME_*, TIME_* */
	TFS_CLASS_UNSIGNED, /* UINT*, BOOL */
	TFS_CLASS_FLOAT,    /* FLOAT32/64 */
	TFS_CLASS_STRING,   /* CHAR, STRING_* */
	TFS_CLASS_BYTES,    /* BLOB, ANY, GEOM_* */
};

bool tfs_datatype_valid(unsigned type);
/* Bytes per value; 0 for an invalid type. */
size_t tfs_datatype_size(unsigned type);
/* TileDB's name ("INT32", "DATETIME_MS", ...); "INVALID" for bad input. */
const char *tfs_datatype_name(unsigned type);
enum tfs_type_class tfs_datatype_class(unsigned type);
bool tfs_datatype_is_integer(unsigned type); /* signed or unsigned class */
bool tfs_datatype_is_datetime(unsigned type); /* DATETIME_* or TIME_* */
bool tfs_datatype_is_string(unsigned type);
/* Writes the type's default fill value (one value) to dst, which has room
 * for tfs_datatype_size(type) bytes (format/schema.md §1). */
void tfs_datatype_default_fill(unsigned type, void *dst);

/* Reads one value of an integer class type as int64/uint64 (sign- or
 * zero-extended) and of a float type as double. */
int64_t tfs_value_as_i64(unsigned type, const void *p);
uint64_t tfs_value_as_u64(unsigned type, const void *p);
double tfs_value_as_f64(unsigned type, const void *p);
/* Compares two values of a numeric type: <0, 0, >0 (NaN-safe total order
 * for floats is not needed by the format; NaN compares equal). */
int tfs_value_cmp(unsigned type, const void *a, const void *b);
/* Compares byte strings: bytewise unsigned, a proper prefix sorts first. */
int tfs_bytes_cmp(const void *a, size_t alen, const void *b, size_t blen);

#endif
