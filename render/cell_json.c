/* TileDB values and cells as JSON. */
#include "cell_json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cell_json_value(struct json_out *j, uint8_t type, const void *p)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
		json_out_i64(j, tfs_value_as_i64(type, p));
		return;
	case TFS_CLASS_UNSIGNED:
		json_out_u64(j, tfs_value_as_u64(type, p));
		return;
	case TFS_CLASS_FLOAT:
		if (type == TFS_FLOAT32) {
			float f;

			memcpy(&f, p, sizeof(f));
			json_out_f32(j, f);
		} else {
			json_out_f64(j, tfs_value_as_f64(type, p));
		}
		return;
	case TFS_CLASS_STRING:
		json_out_str(j, p, tfs_datatype_size(type));
		return;
	case TFS_CLASS_BYTES:
		json_out_hex(j, p, tfs_datatype_size(type));
		return;
	}
}

void cell_json_cell(struct json_out *j, uint8_t type, bool var,
		    uint32_t cell_val_num, const uint8_t *p, uint64_t len)
{
	size_t size = tfs_datatype_size(type);

	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_STRING:
		json_out_str(j, p, (size_t)len);
		return;
	case TFS_CLASS_BYTES:
		json_out_hex(j, p, (size_t)len);
		return;
	default:
		break;
	}
	if (!var && cell_val_num == 1 && len == size) {
		cell_json_value(j, type, p);
		return;
	}
	json_out_begin_array(j);
	for (uint64_t off = 0; size && off + size <= len; off += size)
		cell_json_value(j, type, p + off);
	json_out_end_array(j);
}

void cell_json_column(struct json_out *j, const struct tfs_column *c,
		      uint64_t i)
{
	if (c->nullable && c->validity && !c->validity[i]) {
		json_out_null(j);
		return;
	}
	if (c->var) {
		uint64_t start = c->offsets[i], end = c->offsets[i + 1];

		cell_json_cell(j, c->type, true, c->cell_val_num,
			       c->data + start, end - start);
		return;
	}
	uint64_t cell_size = tfs_datatype_size(c->type) * (uint64_t)c->cell_val_num;

	cell_json_cell(j, c->type, false, c->cell_val_num,
		       c->data + i * cell_size, cell_size);
}

void cell_json_range(struct json_out *j, uint8_t type, bool var,
		     const struct tfs_range *r)
{
	json_out_begin_array(j);
	if (var) {
		json_out_str(j, r->lo, (size_t)r->lo_len);
		json_out_str(j, r->hi, (size_t)r->hi_len);
	} else {
		cell_json_value(j, type, r->lo);
		cell_json_value(j, type, r->hi);
	}
	json_out_end_array(j);
}

void cell_json_meta_values(struct json_out *j, uint8_t type,
			   uint32_t value_num, const uint8_t *value)
{
	size_t size = tfs_datatype_size(type);

	json_out_begin_array(j);
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_STRING:
		json_out_str(j, value, (size_t)value_num * size);
		break;
	case TFS_CLASS_BYTES:
		json_out_hex(j, value, (size_t)value_num * size);
		break;
	default:
		for (uint32_t i = 0; i < value_num; i++)
			cell_json_value(j, type, value + (size_t)i * size);
	}
	json_out_end_array(j);
}

static bool parse_signed(const char *text, int64_t min, int64_t max,
			 int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_unsigned(const char *text, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (strchr(text, '-'))
		return false;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text || *end || v > max)
		return false;
	*out = v;
	return true;
}

bool cell_json_parse_value(uint8_t type, const char *text, uint8_t dst[8])
{
	size_t size = tfs_datatype_size(type);
	char *end;

	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED: {
		int64_t max = size == 8 ? INT64_MAX
					: (int64_t)((UINT64_C(1) << (8 * size - 1)) - 1);
		int64_t v;

		if (!parse_signed(text, -max - 1, max, &v))
			return false;
		/* Little-endian two's complement, truncated to the type. */
		for (size_t k = 0; k < size; k++)
			dst[k] = (uint8_t)((uint64_t)v >> (8 * k));
		return true;
	}
	case TFS_CLASS_UNSIGNED: {
		uint64_t max = size == 8 ? UINT64_MAX
					 : (UINT64_C(1) << (8 * size)) - 1;
		uint64_t v;

		if (!parse_unsigned(text, max, &v))
			return false;
		for (size_t k = 0; k < size; k++)
			dst[k] = (uint8_t)(v >> (8 * k));
		return true;
	}
	case TFS_CLASS_FLOAT:
		errno = 0;
		if (type == TFS_FLOAT32) {
			float f = strtof(text, &end);

			if (end == text || *end || isnan(f))
				return false;
			memcpy(dst, &f, sizeof(f));
		} else {
			double v = strtod(text, &end);

			if (end == text || *end || isnan(v))
				return false;
			memcpy(dst, &v, sizeof(v));
		}
		return true;
	default:
		return false;
	}
}
