/* .npy descriptors and headers, see npy.h. */
#include "npy.h"

#include <inttypes.h>
#include <string.h>

#include "slice.h"
#include "tfs_datatype.h"

static const char *const datetime_units[] = {
	"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
};
static const char *const time_units[] = {
	"h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
};

bool tfsr_npy_is_subarray(uint8_t type, uint32_t cell_val_num)
{
	enum tfs_type_class c = tfs_datatype_class(type);

	return cell_val_num != 1 && cell_val_num != UINT32_MAX &&
	       c != TFS_CLASS_STRING && c != TFS_CLASS_BYTES;
}

enum tfs_err tfsr_npy_descr(struct tfs_buf *out, uint8_t type,
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

enum tfs_err tfsr_npy_header(struct tfs_buf *out, const char *descr,
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

/* ---- .npy files of slices (slice.h) ---------------------------------- */

/* Appends s as a Python string literal body (the .npy header is one). */
static enum tfs_err py_quote(struct tfs_buf *out, const char *s)
{
	enum tfs_err e = tfs_buf_append_u8(out, '\'');

	for (; !e && *s; s++) {
		if (*s == '\'' || *s == '\\')
			e = tfs_buf_append_u8(out, '\\');
		if (!e)
			e = tfs_buf_append_u8(out, (uint8_t)*s);
	}
	return e ? e : tfs_buf_append_u8(out, '\'');
}

/* The .npy header: a plain dtype for one field, a structured one for
 * several; widths give the fixed width of var-size fields (strings as
 * fixed-width of the longest, SPEC §4). */
enum tfs_err tfsr_npy_slice_header(struct tfsr_slice *p,
				   const uint64_t *widths,
				   uint64_t sparse_count)
{
	uint64_t shape[TFSR_MAX_DIMS + 1];
	size_t ndim = p->dense ? tfs_schema_dim_count(p->s) : 1;
	struct tfs_buf descr;
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&descr, TFS_BUF_NO_MAX);
	if (p->dense)
		for (uint32_t k = 0; k < tfs_schema_dim_count(p->s); k++)
			shape[k] = p->sel->dims[k].count;
	else
		shape[0] = sparse_count;
	if (p->nfields > 1)
		e = tfs_buf_append_u8(&descr, '[');
	for (uint32_t i = 0; !e && i < p->nfields; i++) {
		struct tfs_field_info f;

		tfs_schema_field(p->s, p->fields[i], &f);
		if (p->nfields > 1) {
			e = tfs_buf_printf(&descr, "%s(", i ? ", " : "");
			if (!e)
				e = py_quote(&descr, f.name);
			if (!e)
				e = tfs_buf_printf(&descr, ", ");
		}
		/* One field of several numbers per cell: an extra axis. */
		if (!e && p->nfields == 1 &&
		    tfsr_npy_is_subarray(f.type, f.cell_val_num)) {
			shape[ndim++] = f.cell_val_num;
			e = tfsr_npy_descr(&descr, f.type, 1, 0);
		} else if (!e) {
			e = tfsr_npy_descr(&descr, f.type, f.cell_val_num,
					   f.var ? (widths ? widths[i] : 0) : 0);
		}
		if (!e && p->nfields > 1)
			e = tfs_buf_append_u8(&descr, ')');
	}
	if (!e && p->nfields > 1)
		e = tfs_buf_append_u8(&descr, ']');
	if (!e)
		e = tfs_buf_append_u8(&descr, '\0');
	p->header.len = 0;
	if (!e)
		e = tfsr_npy_header(&p->header, (const char *)descr.data, shape,
				    ndim);
	tfs_buf_release(&descr);
	return e;
}

enum tfs_err tfsr_npy_cells(struct tfsr_emit *em, const struct tfs_batch *b,
			    uint64_t first, uint64_t n)
{
	const struct tfsr_slice *p = em->sl;
	enum tfs_err e = TFS_E_OK;

	for (uint64_t i = first; !e && i < first + n; i++) {
		for (uint32_t k = 0; !e && k < p->nfields; k++) {
			const uint8_t *ptr;
			uint64_t len;

			tfsr_cell_bytes(p, k, &b->columns[k], i, &ptr, &len);
			if (em->measure) {
				if (len > em->widths[k])
					em->widths[k] = len;
				continue;
			}
			if (!b->columns[k].var) {
				e = tfs_buf_append(em->out, ptr, len);
				continue;
			}
			if (len > em->widths[k])
				len = em->widths[k];
			e = tfs_buf_append(em->out, ptr, len);
			for (uint64_t z = len; !e && z < em->widths[k]; z++)
				e = tfs_buf_append_u8(em->out, 0);
		}
	}
	return e;
}

enum tfs_err tfsr_npy_begin(struct tfsr_stream *st, struct tfs_diag *d)
{
	struct tfsr_slice *p = st->em.sl;
	enum tfs_err e = tfsr_slice_prepare(p, st->em.src, d);

	return e ? e : tfs_buf_append(&st->out, p->header.data, p->header.len);
}
