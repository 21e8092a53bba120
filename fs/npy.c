/* .npy descriptors and headers, see npy.h. */
#include "npy.h"

#include <inttypes.h>
#include <string.h>

#include "tfs_datatype.h"

static const char *const datetime_units[] = {
	"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
};
static const char *const time_units[] = {
	"h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
};

bool tfsd_npy_is_subarray(uint8_t type, uint32_t cell_val_num)
{
	enum tfs_type_class c = tfs_datatype_class(type);

	return cell_val_num != 1 && cell_val_num != UINT32_MAX &&
	       c != TFS_CLASS_STRING && c != TFS_CLASS_BYTES;
}

enum tfs_err tfsd_npy_descr(struct tfs_buf *out, uint8_t type,
			    uint32_t cell_val_num, uint64_t width)
{
	size_t size = tfs_datatype_size(type);
	bool var = cell_val_num == UINT32_MAX;
	const char *order = size == 1 ? "|" : "<";
	enum tfs_err e;

	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_STRING:
		return tfs_buf_printf(out, "'|S%" PRIu64 "'",
				      var ? width : (uint64_t)cell_val_num * size);
	case TFS_CLASS_BYTES:
		return tfs_buf_printf(out, "'|V%" PRIu64 "'",
				      var ? width : (uint64_t)cell_val_num * size);
	default:
		break;
	}
	if (var)
		return tfs_buf_printf(out, "'|V%" PRIu64 "'", width);
	if (type == TFS_BOOL)
		e = tfs_buf_printf(out, "'|b1'");
	else if (type >= TFS_DATETIME_YEAR && type <= TFS_DATETIME_AS)
		e = tfs_buf_printf(out, "'<M8[%s]'",
				   datetime_units[type - TFS_DATETIME_YEAR]);
	else if (type >= TFS_TIME_HR && type <= TFS_TIME_AS)
		e = tfs_buf_printf(out, "'<m8[%s]'",
				   time_units[type - TFS_TIME_HR]);
	else
		e = tfs_buf_printf(out, "'%s%c%zu'", order,
				   tfs_datatype_class(type) == TFS_CLASS_FLOAT ? 'f'
				   : tfs_datatype_class(type) == TFS_CLASS_SIGNED
					   ? 'i'
					   : 'u',
				   size);
	if (!e && cell_val_num != 1)
		e = tfs_buf_printf(out, ", (%" PRIu32 ",)", cell_val_num);
	return e;
}

enum tfs_err tfsd_npy_header(struct tfs_buf *out, const char *descr,
			     const uint64_t *shape, size_t ndim)
{
	struct tfs_buf dict;
	size_t prefix, total;
	enum tfs_err e;

	tfs_buf_init(&dict, TFS_BUF_NO_MAX);
	e = tfs_buf_printf(&dict, "{'descr': %s, 'fortran_order': False, "
			   "'shape': (", descr);
	for (size_t k = 0; !e && k < ndim; k++)
		e = tfs_buf_printf(&dict, "%" PRIu64 "%s", shape[k],
				   ndim == 1 ? "," : k + 1 < ndim ? ", " : "");
	if (!e)
		e = tfs_buf_printf(&dict, "), }");
	if (e) {
		tfs_buf_release(&dict);
		return e;
	}
	/* magic (6) + version (2) + length (2 or 4), then the dict padded
	 * with spaces and ended by '\n' to a multiple of 64. */
	prefix = dict.len + 1 + 10 <= 65535 ? 10 : 12;
	total = (prefix + dict.len + 1 + 63) / 64 * 64;
	e = tfs_buf_append(out, "\x93NUMPY", 6);
	if (!e)
		e = tfs_buf_append_u8(out, prefix == 10 ? 1 : 2);
	if (!e)
		e = tfs_buf_append_u8(out, 0);
	if (!e && prefix == 10) {
		uint16_t hl = (uint16_t)(total - prefix);

		e = tfs_buf_append_u8(out, (uint8_t)hl);
		if (!e)
			e = tfs_buf_append_u8(out, (uint8_t)(hl >> 8));
	} else if (!e) {
		e = tfs_buf_append_u32(out, (uint32_t)(total - prefix));
	}
	if (!e)
		e = tfs_buf_append(out, dict.data, dict.len);
	for (size_t i = prefix + dict.len; !e && i + 1 < total; i++)
		e = tfs_buf_append_u8(out, ' ');
	if (!e)
		e = tfs_buf_append_u8(out, '\n');
	tfs_buf_release(&dict);
	return e;
}
