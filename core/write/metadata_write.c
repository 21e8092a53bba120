/* Array metadata writes (format/metadata.md §3): one new file
 * `__meta/__<t>_<t>_<uuid>` with the entries sorted by key, t after every
 * timestamp in the folder, written as `.tmp` and renamed into place. */
#include "write_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"
#include "tilefs/tilefs.h"

static int kv_cmp(const void *a, const void *b)
{
	const struct tfs_meta_kv *x = a, *y = b;

	return tfs_bytes_cmp(x->key, x->key_len, y->key, y->key_len);
}

/* A sorted copy of the entries, each checked, no key twice. */
static enum tfs_err sort_entries(const struct tfs_meta_kv *entries, size_t count,
				 struct tfs_meta_kv **out, struct tfs_diag *d)
{
	struct tfs_meta_kv *sorted = tfs_mallocn(count, sizeof(*sorted));

	*out = sorted;
	if (!sorted)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	memcpy(sorted, entries, count * sizeof(*sorted));
	for (size_t i = 0; i < count; i++) {
		const struct tfs_meta_kv *kv = &sorted[i];

		if (!kv->key || (!kv->deleted && (kv->type == TFS_ANY ||
						  !tfs_datatype_valid(kv->type) ||
						  (kv->value_num && !kv->value))))
			return tfs_fail(d, TFS_E_INVALID,
					"metadata: entry %zu is invalid", i);
	}
	qsort(sorted, count, sizeof(*sorted), kv_cmp);
	for (size_t i = 1; i < count; i++)
		if (!kv_cmp(&sorted[i - 1], &sorted[i]))
			return tfs_fail(d, TFS_E_INVALID,
					"metadata: key '%.*s' given twice",
					(int)(sorted[i].key_len > 64 ? 64
								     : sorted[i].key_len),
					sorted[i].key);
	return TFS_E_OK;
}

/* The entries as one generic tile (encrypted with key when given). */
static enum tfs_err encode_meta_tile(struct tfs_buf *tile,
				     struct tfs_meta_kv *sorted, size_t count,
				     const uint8_t *key, struct tfs_diag *d)
{
	struct tfs_meta_file mf;
	struct tfs_buf payload;
	enum tfs_err e;

	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	mf.entries = sorted;
	mf.count = count;
	if ((e = tfs_meta_file_serialize(&payload, &mf)))
		tfs_fail(d, e, "metadata: %s", tfs_strerror(e));
	else
		e = tfs_generic_tile_encode(tile, payload.data, payload.len, key, d);
	tfs_buf_release(&payload);
	return e;
}

/* The tile as a new file of __meta, named for a time past every
 * fragment's: written aside, renamed into place, the folder synced;
 * nothing left behind on failure. */
static enum tfs_err store_meta_file(struct tfs_vfs *vfs, const char *path,
				    const struct tfs_buf *tile, struct tfs_diag *d)
{
	char name[TFS_NAME_MAX], *mdir = NULL, *file = NULL, *tmp = NULL;
	uint64_t t, max, now;
	enum tfs_err e;

	if ((e = tfs__max_timestamp(vfs, path, true, &max, d)))
		return e;
	now = tfs__now_ms();
	t = max >= now ? max + 1 : now;
	if ((e = tfs_name_new(name, sizeof(name), t, t, 0, "")))
		return tfs_fail(d, e, "no random bytes");
	mdir = tfs_path_join(path, "__meta");
	file = mdir ? tfs_path_join(mdir, name) : NULL;
	tmp = file ? tfs_malloc(strlen(file) + 5) : NULL;
	if (!tmp) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	snprintf(tmp, strlen(file) + 5, "%s.tmp", file);
	if ((e = tfs_vfs_mkdir(vfs, mdir, d)))
		goto out;
	if ((e = tfs__write_file(vfs, tmp, tile->data, tile->len, d)) ||
	    (e = tfs_vfs_rename(vfs, tmp, file, d)) ||
	    (e = tfs_vfs_fsync(vfs, mdir, d))) {
		struct tfs_diag ld;

		tfs_diag_init(&ld);
		(void)tfs_vfs_remove(vfs, tmp, &ld);
		(void)tfs_vfs_remove(vfs, file, &ld);
	}
out:
	tfs_free(mdir);
	tfs_free(file);
	tfs_free(tmp);
	return e;
}

enum tfs_err tfs_array_metadata_write(const char *path,
				      const struct tfs_meta_kv *entries,
				      size_t count,
				      const struct tfs_write_opts *opts,
				      struct tfs_diag *d)
{
	struct tfs_vfs *vfs = opts ? opts->vfs : NULL, *own = NULL;
	const uint8_t *key = opts ? opts->key : NULL;
	struct tfs_meta_kv *sorted = NULL;
	struct tfs_buf tile;
	enum tfs_err e;

	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	if (!path || (count && !entries))
		return tfs_fail(d, TFS_E_INVALID, "metadata: no path or entries");
	if (count == 0)
		return TFS_E_OK;
	if ((e = tfs__vfs_or_default(path, &vfs, &own, d)))
		return e;
	if ((e = sort_entries(entries, count, &sorted, d)) ||
	    (e = encode_meta_tile(&tile, sorted, count, key, d)))
		goto out;
	e = store_meta_file(vfs, path, &tile, d);
out:
	tfs_free(sorted);
	tfs_buf_release(&tile);
	if (own)
		tfs_vfs_free(own);
	return e;
}
