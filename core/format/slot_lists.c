/* Payloads of the small per-slot generic tiles of fragment metadata
 * (format/fragment.md §6 "Per-slot generic tiles"): `u64 count` followed by
 * count u64 values (tile offsets, var offsets, var sizes, validity offsets,
 * null counts), and the processed-conditions list of v16+ (`u64 n`, then n
 * length-prefixed markers). */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

enum tfs_err tfs_u64_list_parse(const uint8_t *buf, size_t len, uint64_t **out,
				uint64_t *count, struct tfs_diag *d)
{
	struct tfs__rd r;
	uint64_t n;
	const uint8_t *p;
	enum tfs_err e;

	*out = NULL;
	*count = 0;
	tfs__rd_init(&r, buf, len, "u64 list", d);
	if ((e = tfs__u64(&r, &n, "count")))
		return e;
	if (n != tfs_cur_left(&r.c) / 8 || tfs_cur_left(&r.c) % 8)
		return tfs__bad(&r,
				"count %llu does not match the %zu bytes of "
				"values",
				(unsigned long long)n, tfs_cur_left(&r.c));
	if ((e = tfs__take(&r, n * 8, &p, "values")))
		return e;
	*out = tfs_mallocn((size_t)n, sizeof(uint64_t));
	if (!*out)
		return tfs__fail(&r, TFS_E_NOMEM, "out of memory for %llu values",
				 (unsigned long long)n);
	for (uint64_t i = 0; i < n; i++)
		(*out)[i] = tfs_get_u64(p + 8 * i);
	*count = n;
	return TFS_E_OK;
}

enum tfs_err tfs_u64_list_serialize(struct tfs_buf *out, const uint64_t *values,
				    uint64_t count)
{
	size_t start = out->len;
	enum tfs_err e = tfs_buf_append_u64(out, count);

	for (uint64_t i = 0; !e && i < count; i++)
		e = tfs_buf_append_u64(out, values[i]);
	if (e)
		out->len = start;
	return e;
}

enum tfs_err tfs_strlist_parse(struct tfs_strlist *out, const uint8_t *buf,
			       size_t len, struct tfs_diag *d)
{
	struct tfs__rd r;
	uint64_t n;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "processed conditions", d);
	if ((e = tfs__u64(&r, &n, "count")))
		return e;
	if (n > tfs_cur_left(&r.c) / 8)
		return tfs__bad(&r, "count %llu does not fit in %zu bytes",
				(unsigned long long)n, tfs_cur_left(&r.c));
	out->items = tfs_callocn((size_t)n, sizeof(char *));
	if (!out->items)
		return tfs__fail(&r, TFS_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		uint64_t slen;

		if ((e = tfs__u64(&r, &slen, "marker length")) ||
		    (e = tfs__str(&r, slen, &out->items[i], "marker")))
			goto out_release;
		out->count++;
	}
	if (tfs_cur_left(&r.c)) {
		e = tfs__bad(&r, "%zu trailing bytes", tfs_cur_left(&r.c));
		goto out_release;
	}
	return TFS_E_OK;

out_release:
	tfs_strlist_release(out);
	return e;
}

enum tfs_err tfs_strlist_serialize(struct tfs_buf *out,
				   const struct tfs_strlist *l)
{
	size_t start = out->len;
	enum tfs_err e = tfs_buf_append_u64(out, l->count);

	for (size_t i = 0; !e && i < l->count; i++)
		e = tfs__put_str64(out, l->items[i]);
	if (e)
		out->len = start;
	return e;
}

void tfs_strlist_release(struct tfs_strlist *l)
{
	if (!l)
		return;
	for (size_t i = 0; l->items && i < l->count; i++)
		tfs_free(l->items[i]);
	tfs_free(l->items);
	l->items = NULL;
	l->count = 0;
}
