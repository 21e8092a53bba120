/* Deleting cells by condition as TileDB's delete queries do (format/
 * layout.md §3, consolidated.md §6): one commit `__commits/__<t>_<t>_
 * <uuid>_<v>.del` holding the condition as one generic tile. Readers drop
 * the cells it matches in the fragments written before it; consolidation
 * drops them for good. Sparse arrays of format 16 and later only, as in
 * TileDB. */
#include "write_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_fragment.h"
#include "tilefs/tfs_where.h"
#include "tilefs/tilefs.h"

/* Every field the condition names is one of the schema's. */
static enum tfs_err check_fields(const char *path, const struct tfs_schema *s,
				 const struct tfs_where *c, unsigned depth,
				 struct tfs_diag *d)
{
	enum tfs_err e;
	bool known = false;

	if (depth > TFS_WHERE_MAX_DEPTH)
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': condition nested too deep", path);
	if (!tfs_where_is_leaf(c->op)) {
		for (size_t i = 0; i < c->child_num; i++)
			if ((e = check_fields(path, s, &c->children[i],
					      depth + 1, d)))
				return e;
		return TFS_E_OK;
	}
	if (c->op == TFS_WHERE_TRUE || c->op == TFS_WHERE_FALSE)
		return TFS_E_OK;
	for (uint32_t i = 0; c->field && i < s->dim_num; i++)
		known = known || strcmp(s->dims[i].name, c->field) == 0;
	for (uint32_t i = 0; c->field && i < s->attr_num; i++)
		known = known || strcmp(s->attrs[i].name, c->field) == 0;
	if (!known)
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': no field '%s' to delete by", path,
				c->field ? c->field : "");
	return TFS_E_OK;
}

/* Deletes are for sparse arrays of format version 16 or later. */
static enum tfs_err check_deletable(const char *path, const struct tfs_schema *s,
				    struct tfs_diag *d)
{
	if (s->array_type != TFS_SPARSE)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': cells are deleted from sparse arrays "
				"only (as in TileDB); write fill values into a "
				"dense one",
				path);
	if (s->version < 16)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': deletes need format version 16 or "
				"later, not %" PRIu32,
				path, s->version);
	return TFS_E_OK;
}

/* The condition as the delete commit's generic tile. A delete commit
 * stores the condition negated, as TileDB writes it: readers keep the
 * cells for which it holds (format/read.md §8 step 3), so a NULL cell is
 * deleted by any comparison. */
static enum tfs_err encode_delete_tile(struct tfs_buf *tile,
				       const struct tfs_where *cond,
				       const uint8_t *key, struct tfs_diag *d)
{
	struct tfs_where notc = {0};
	struct tfs_buf payload;
	enum tfs_err e;

	notc.op = TFS_WHERE_NOT;
	notc.children = (struct tfs_where *)cond;
	notc.child_num = 1;
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	if (!(e = tfs_where_serialize(&payload, &notc, d)))
		e = tfs_generic_tile_encode(tile, payload.data, payload.len, key, d);
	tfs_buf_release(&payload);
	return e;
}

/* The tile as a commit of __commits named for a time after every write
 * there is, so that it deletes what they wrote; its name into name. */
static enum tfs_err store_delete_commit(struct tfs_vfs *vfs, const char *path,
					const struct tfs_buf *tile,
					char name[TFS_NAME_MAX], struct tfs_diag *d)
{
	char *cdir = NULL, *file = NULL, *tmp = NULL;
	uint64_t t, max_t = 0;
	enum tfs_err e;

	if ((e = tfs__max_timestamp(vfs, path, false, &max_t, d)))
		return e;
	t = tfs__now_ms();
	if (max_t >= t)
		t = max_t + 1;
	tfs__wait_until_ms(t);
	if ((e = tfs_name_new(name, TFS_NAME_MAX, t, t,
			      TFS_FORMAT_VERSION_WRITE, ".del")))
		return tfs_fail(d, e, "no random bytes");
	cdir = tfs_path_join(path, "__commits");
	file = cdir ? tfs_path_join(cdir, name) : NULL;
	tmp = file ? tfs_path_join(path, ".tfs-delete.tmp") : NULL;
	if (!tmp) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	/* Written aside and renamed in: a reader sees all of it or nothing. */
	if ((e = tfs__write_file(vfs, tmp, tile->data, tile->len, d)) ||
	    (e = tfs_vfs_rename(vfs, tmp, file, d)) ||
	    (e = tfs_vfs_fsync(vfs, cdir, d)))
		(void)tfs_vfs_remove(vfs, tmp, NULL);
out:
	tfs_free(cdir);
	tfs_free(file);
	tfs_free(tmp);
	return e;
}

enum tfs_err tfs_array_delete(const char *path, const struct tfs_where *cond,
			      const struct tfs_write_opts *opts, char *name_out,
			      size_t name_cap, struct tfs_diag *d)
{
	struct tfs_vfs *vfs = opts ? opts->vfs : NULL, *own = NULL;
	const uint8_t *key = opts ? opts->key : NULL;
	struct tfs_arraydir *ad = NULL;
	struct tfs_buf tile;
	char name[TFS_NAME_MAX];
	enum tfs_err e;

	if (name_cap)
		name_out[0] = '\0';
	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	if ((e = tfs__vfs_or_default(path, &vfs, &own, d)))
		return e;
	if ((e = tfs__arraydir_open_all(vfs, path, key, &ad, d)) ||
	    (e = check_deletable(path, ad->schema, d)) ||
	    (e = check_fields(path, ad->schema, cond, 0, d)) ||
	    (e = encode_delete_tile(&tile, cond, key, d)) ||
	    (e = store_delete_commit(vfs, path, &tile, name, d)))
		goto out;
	if (name_cap)
		snprintf(name_out, name_cap, "%s", name);
out:
	tfs_arraydir_close(ad);
	tfs_buf_release(&tile);
	if (own)
		tfs_vfs_free(own);
	return e;
}
