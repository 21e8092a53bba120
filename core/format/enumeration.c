/* Enumeration files (format/schema.md §8 "Enumeration file"): the value
 * list an enumerated attribute indexes into. Parsing checks that fixed-size
 * data is a whole number of cells and that var-size offsets are
 * non-decreasing and inside the data; serialization writes enumeration
 * format version 0. */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

#define ENUMERATION_VERSION 0u

static enum tfs_err parse_body(struct tfs__rd *r, struct tfs_enumeration *en)
{
	uint32_t version, n;
	uint64_t offsets_size;
	const uint8_t *p;
	size_t tsz;
	enum tfs_err e;

	if ((e = tfs__u32(r, &version, "enumeration version")))
		return e;
	if (version > ENUMERATION_VERSION)
		return tfs__fail(r, TFS_E_UNSUPPORTED,
				 "unsupported enumeration version %u",
				 (unsigned)version);
	if ((e = tfs__u32(r, &n, "name length")) ||
	    (e = tfs__str(r, n, &en->name, "name")) ||
	    (e = tfs__u32(r, &n, "path name length")) ||
	    (e = tfs__str(r, n, &en->path_name, "path name")) ||
	    (e = tfs__u8(r, &en->type, "datatype")) ||
	    (e = tfs__u32(r, &en->cell_val_num, "cell_val_num")) ||
	    (e = tfs__bool(r, &en->ordered, "ordered flag")) ||
	    (e = tfs__u64(r, &en->data_size, "data size")))
		return e;
	if (!tfs_datatype_valid(en->type) || en->cell_val_num == 0)
		return tfs__bad(r, "invalid datatype %u or cell_val_num %u",
				en->type, (unsigned)en->cell_val_num);
	tsz = tfs_datatype_size(en->type);
	if ((e = tfs__take(r, en->data_size, &p, "data")))
		return e;
	en->data = tfs_memdup(p, (size_t)en->data_size);
	if (!en->data)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");

	if (en->cell_val_num != TFS_VAR_NUM) {
		uint64_t cell = (uint64_t)tsz * en->cell_val_num;

		if (en->data_size % cell)
			return tfs__bad(r,
					"data size %llu is not a multiple of "
					"the cell size %llu",
					(unsigned long long)en->data_size,
					(unsigned long long)cell);
		en->value_num = en->data_size / cell;
		goto out_check_end;
	}

	if ((e = tfs__u64(r, &offsets_size, "offsets size")))
		return e;
	if (offsets_size % 8)
		return tfs__bad(r, "offsets size %llu is not a multiple of 8",
				(unsigned long long)offsets_size);
	if ((e = tfs__take(r, offsets_size, &p, "offsets")))
		return e;
	en->value_num = offsets_size / 8;
	en->offsets = tfs_mallocn((size_t)en->value_num, sizeof(uint64_t));
	if (!en->offsets)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < en->value_num; i++) {
		en->offsets[i] = tfs_get_u64(p + 8 * i);
		if (en->offsets[i] > en->data_size ||
		    (i && en->offsets[i] < en->offsets[i - 1]))
			return tfs__bad(r,
					"offset %llu of value %llu is out of "
					"order or past the data (%llu bytes)",
					(unsigned long long)en->offsets[i],
					(unsigned long long)i,
					(unsigned long long)en->data_size);
	}
	if (en->value_num && en->offsets[0] != 0)
		return tfs__bad(r, "first offset is %llu, expected 0",
				(unsigned long long)en->offsets[0]);
	if (!en->value_num && en->data_size)
		return tfs__bad(r, "%llu data bytes but no values",
				(unsigned long long)en->data_size);

out_check_end:
	if (tfs_cur_left(&r->c))
		return tfs__bad(r, "%zu trailing bytes", tfs_cur_left(&r->c));
	return TFS_E_OK;
}

enum tfs_err tfs_enumeration_parse(struct tfs_enumeration *out,
				   const uint8_t *buf, size_t len,
				   struct tfs_diag *d)
{
	struct tfs__rd r;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "enumeration", d);
	e = parse_body(&r, out);
	if (e)
		tfs_enumeration_release(out);
	return e;
}

enum tfs_err tfs_enumeration_serialize(struct tfs_buf *out,
				       const struct tfs_enumeration *en)
{
	size_t start = out->len;
	enum tfs_err e;

	if ((e = tfs_buf_append_u32(out, ENUMERATION_VERSION)) ||
	    (e = tfs__put_str32(out, en->name)) ||
	    (e = tfs__put_str32(out, en->path_name)) ||
	    (e = tfs_buf_append_u8(out, en->type)) ||
	    (e = tfs_buf_append_u32(out, en->cell_val_num)) ||
	    (e = tfs_buf_append_u8(out, en->ordered ? 1 : 0)) ||
	    (e = tfs_buf_append_u64(out, en->data_size)) ||
	    (e = tfs_buf_append(out, en->data, (size_t)en->data_size)))
		goto out_truncate;
	if (en->cell_val_num == TFS_VAR_NUM) {
		if ((e = tfs_buf_append_u64(out, en->value_num * 8)))
			goto out_truncate;
		for (uint64_t i = 0; i < en->value_num; i++)
			if ((e = tfs_buf_append_u64(out, en->offsets[i])))
				goto out_truncate;
	}
	return TFS_E_OK;

out_truncate:
	out->len = start;
	return e;
}

void tfs_enumeration_release(struct tfs_enumeration *en)
{
	if (!en)
		return;
	tfs_free(en->name);
	tfs_free(en->path_name);
	tfs_free(en->data);
	tfs_free(en->offsets);
	memset(en, 0, sizeof(*en));
}
