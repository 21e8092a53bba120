/* Array and group key/value metadata files (format/metadata.md §1
 * "Metadata file"): a sequence of entries to the end of the payload, each
 * a key, a deleted flag and (when not deleted) a typed value list. */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

static void free_entries(struct tfs_meta_file *m)
{
	for (size_t i = 0; m->entries && i < m->count; i++) {
		tfs_free(m->entries[i].key);
		tfs_free(m->entries[i].value);
	}
	tfs_free(m->entries);
	m->entries = NULL;
	m->count = 0;
}

static enum tfs_err parse_entry(struct tfs__rd *r, struct tfs_meta_kv *kv)
{
	const uint8_t *p;
	uint64_t size;
	enum tfs_err e;

	if ((e = tfs__u32(r, &kv->key_len, "key length")) ||
	    (e = tfs__take(r, kv->key_len, &p, "key")))
		return e;
	kv->key = tfs_memdup(p, kv->key_len);
	if (!kv->key)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	if ((e = tfs__bool(r, &kv->deleted, "deleted flag")))
		return e;
	if (kv->deleted)
		return TFS_E_OK;
	if ((e = tfs__u8(r, &kv->type, "value type")) ||
	    (e = tfs__u32(r, &kv->value_num, "value count")))
		return e;
	if (!tfs_datatype_valid(kv->type))
		return tfs__bad(r, "key '%s': invalid value type %u", kv->key,
				kv->type);
	size = (uint64_t)kv->value_num * tfs_datatype_size(kv->type);
	if ((e = tfs__take(r, size, &p, "value")))
		return e;
	kv->value = tfs_memdup(p, (size_t)size);
	if (!kv->value)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

enum tfs_err tfs_meta_file_parse(struct tfs_meta_file *out, const uint8_t *buf,
				 size_t len, struct tfs_diag *d)
{
	struct tfs__rd r;
	size_t cap = 0;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "array metadata", d);
	while (tfs_cur_left(&r.c)) {
		if (tfs_grow(&out->entries, &cap, out->count + 1,
			     sizeof(*out->entries))) {
			e = tfs__fail(&r, TFS_E_NOMEM, "out of memory");
			goto out_release;
		}
		memset(&out->entries[out->count], 0, sizeof(*out->entries));
		out->count++;
		e = parse_entry(&r, &out->entries[out->count - 1]);
		if (e)
			goto out_release;
	}
	return TFS_E_OK;

out_release:
	free_entries(out);
	return e;
}

void tfs_meta_file_release(struct tfs_meta_file *m)
{
	if (!m)
		return;
	free_entries(m);
}

enum tfs_err tfs_meta_file_serialize(struct tfs_buf *out,
				     const struct tfs_meta_file *m)
{
	size_t start = out->len;
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < m->count; i++) {
		const struct tfs_meta_kv *kv = &m->entries[i];

		if ((e = tfs_buf_append_u32(out, kv->key_len)) ||
		    (e = tfs_buf_append(out, kv->key, kv->key_len)) ||
		    (e = tfs_buf_append_u8(out, kv->deleted ? 1 : 0)))
			break;
		if (kv->deleted)
			continue;
		if (!tfs_datatype_valid(kv->type)) {
			e = TFS_E_INVALID;
			break;
		}
		if ((e = tfs_buf_append_u8(out, kv->type)) ||
		    (e = tfs_buf_append_u32(out, kv->value_num)) ||
		    (e = tfs_buf_append(out, kv->value,
					(size_t)kv->value_num *
						tfs_datatype_size(kv->type))))
			break;
	}
	if (e)
		out->len = start;
	return e;
}
