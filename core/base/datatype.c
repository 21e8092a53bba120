/* Datatype table: sizes, names, classes, default fill values. */
#include "tfs_datatype.h"

#include <string.h>

static const char *const type_names[] = {
	"INT32",	 "INT64",	  "FLOAT32",	   "FLOAT64",
	"CHAR",		 "INT8",	  "UINT8",	   "INT16",
	"UINT16",	 "UINT32",	  "UINT64",	   "STRING_ASCII",
	"STRING_UTF8",	 "STRING_UTF16",  "STRING_UTF32",  "STRING_UCS2",
	"STRING_UCS4",	 "ANY",		  "DATETIME_YEAR", "DATETIME_MONTH",
	"DATETIME_WEEK", "DATETIME_DAY",  "DATETIME_HR",   "DATETIME_MIN",
	"DATETIME_SEC",	 "DATETIME_MS",	  "DATETIME_US",   "DATETIME_NS",
	"DATETIME_PS",	 "DATETIME_FS",	  "DATETIME_AS",   "TIME_HR",
	"TIME_MIN",	 "TIME_SEC",	  "TIME_MS",	   "TIME_US",
	"TIME_NS",	 "TIME_PS",	  "TIME_FS",	   "TIME_AS",
	"BLOB",		 "BOOL",	  "GEOM_WKB",	   "GEOM_WKT",
};

bool tfs_datatype_valid(unsigned type)
{
	return type <= TFS_DATATYPE_MAX;
}

bool tfs_datatype_is_datetime(unsigned type)
{
	return type >= TFS_DATETIME_YEAR && type <= TFS_TIME_AS;
}

size_t tfs_datatype_size(unsigned type)
{
	switch (type) {
	case TFS_INT32:
	case TFS_FLOAT32:
	case TFS_UINT32:
	case TFS_STRING_UTF32:
	case TFS_STRING_UCS4:
		return 4;
	case TFS_INT64:
	case TFS_FLOAT64:
	case TFS_UINT64:
		return 8;
	case TFS_INT16:
	case TFS_UINT16:
	case TFS_STRING_UTF16:
	case TFS_STRING_UCS2:
		return 2;
	case TFS_CHAR:
	case TFS_INT8:
	case TFS_UINT8:
	case TFS_STRING_ASCII:
	case TFS_STRING_UTF8:
	case TFS_ANY:
	case TFS_BLOB:
	case TFS_BOOL:
	case TFS_GEOM_WKB:
	case TFS_GEOM_WKT:
		return 1;
	default:
		return tfs_datatype_is_datetime(type) ? 8 : 0;
	}
}

const char *tfs_datatype_name(unsigned type)
{
	if (!tfs_datatype_valid(type))
		return "INVALID";
	return type_names[type];
}

enum tfs_type_class tfs_datatype_class(unsigned type)
{
	switch (type) {
	case TFS_INT8:
	case TFS_INT16:
	case TFS_INT32:
	case TFS_INT64:
		return TFS_CLASS_SIGNED;
	case TFS_UINT8:
	case TFS_UINT16:
	case TFS_UINT32:
	case TFS_UINT64:
	case TFS_BOOL:
		return TFS_CLASS_UNSIGNED;
	case TFS_FLOAT32:
	case TFS_FLOAT64:
		return TFS_CLASS_FLOAT;
	case TFS_CHAR:
	case TFS_STRING_ASCII:
	case TFS_STRING_UTF8:
	case TFS_STRING_UTF16:
	case TFS_STRING_UTF32:
	case TFS_STRING_UCS2:
	case TFS_STRING_UCS4:
		return TFS_CLASS_STRING;
	default:
		return tfs_datatype_is_datetime(type) ? TFS_CLASS_SIGNED
						      : TFS_CLASS_BYTES;
	}
}

bool tfs_datatype_is_integer(unsigned type)
{
	enum tfs_type_class c = tfs_datatype_class(type);

	return c == TFS_CLASS_SIGNED || c == TFS_CLASS_UNSIGNED;
}

bool tfs_datatype_is_string(unsigned type)
{
	return tfs_datatype_class(type) == TFS_CLASS_STRING;
}

void tfs_datatype_default_fill(unsigned type, void *dst)
{
	size_t size = tfs_datatype_size(type);
	uint8_t *b = dst;

	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
		memset(b, 0, size);
		b[size - 1] = 0x80; /* INT*_MIN, little-endian */
		return;
	case TFS_CLASS_UNSIGNED:
		memset(b, type == TFS_BOOL ? 0 : 0xff, size);
		return;
	case TFS_CLASS_FLOAT:
		if (type == TFS_FLOAT32) {
			uint32_t bits = 0x7fc00000u;
			memcpy(b, &bits, 4);
		} else {
			uint64_t bits = 0x7ff8000000000000ull;
			memcpy(b, &bits, 8);
		}
		return;
	case TFS_CLASS_STRING:
		/* CHAR_MIN of an x86 (signed char) build; strings are 0. */
		memset(b, 0, size);
		if (type == TFS_CHAR)
			b[0] = 0x80;
		return;
	case TFS_CLASS_BYTES:
		memset(b, 0, size ? size : 1);
		return;
	}
}

int64_t tfs_value_as_i64(unsigned type, const void *p)
{
	switch (type) {
	case TFS_INT8: {
		int8_t v;
		memcpy(&v, p, 1);
		return v;
	}
	case TFS_INT16: {
		int16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	case TFS_INT32: {
		int32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	case TFS_CHAR: {
		int8_t v;
		memcpy(&v, p, 1);
		return v;
	}
	default:
		if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED ||
		    tfs_datatype_size(type) == 1)
			return (int64_t)tfs_value_as_u64(type, p);
		if (tfs_datatype_class(type) == TFS_CLASS_FLOAT)
			return (int64_t)tfs_value_as_f64(type, p);
		{
			int64_t v;
			memcpy(&v, p, 8);
			return v;
		}
	}
}

uint64_t tfs_value_as_u64(unsigned type, const void *p)
{
	switch (tfs_datatype_size(type)) {
	case 1:
		return *(const uint8_t *)p;
	case 2: {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	case 4: {
		uint32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	default: {
		uint64_t v;
		memcpy(&v, p, 8);
		return v;
	}
	}
}

double tfs_value_as_f64(unsigned type, const void *p)
{
	if (type == TFS_FLOAT32) {
		float f;
		memcpy(&f, p, 4);
		return f;
	}
	if (type == TFS_FLOAT64) {
		double d;
		memcpy(&d, p, 8);
		return d;
	}
	if (tfs_datatype_class(type) == TFS_CLASS_UNSIGNED)
		return (double)tfs_value_as_u64(type, p);
	return (double)tfs_value_as_i64(type, p);
}

int tfs_value_cmp(unsigned type, const void *a, const void *b)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_FLOAT: {
		double x = tfs_value_as_f64(type, a), y = tfs_value_as_f64(type, b);
		return x < y ? -1 : x > y;
	}
	case TFS_CLASS_UNSIGNED: {
		uint64_t x = tfs_value_as_u64(type, a), y = tfs_value_as_u64(type, b);
		return x < y ? -1 : x > y;
	}
	case TFS_CLASS_SIGNED: {
		int64_t x = tfs_value_as_i64(type, a), y = tfs_value_as_i64(type, b);
		return x < y ? -1 : x > y;
	}
	default:
		return tfs_bytes_cmp(a, tfs_datatype_size(type), b,
				     tfs_datatype_size(type));
	}
}

int tfs_bytes_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;

	if (c)
		return c < 0 ? -1 : 1;
	return alen < blen ? -1 : alen > blen;
}
