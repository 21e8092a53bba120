/* Creating an array folder the way TileDB does (format/layout.md §9): the
 * reserved folders, then the schema as one generic tile named
 * `__schema/__<t>_<t>_<uuid>`, written under a temporary name in the
 * array folder and renamed into place, so a crash never leaves a
 * half-written schema that readers would pick. */
#include "write_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tilefs/tilefs.h"

static const char *const folders[] = {
	"__schema/__enumerations", "__commits", "__fragments", "__meta",
	"__fragment_meta", "__labels",
};

enum tfs_err tfs_array_create(const char *path, const struct tfs_schema *schema,
			      const struct tfs_write_opts *opts,
			      struct tfs_diag *d)
{
	struct tfs_vfs *vfs = opts ? opts->vfs : NULL, *own = NULL;
	const uint8_t *key = opts ? opts->key : NULL;
	struct tfs_schema copy;
	struct tfs_stat st;
	struct tfs_buf payload, tile;
	char name[TFS_NAME_MAX], *sdir = NULL, *file = NULL, *tmp = NULL;
	bool made = false;
	uint64_t t;
	enum tfs_err e;

	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	if (!path || !schema)
		return tfs_fail(d, TFS_E_INVALID, "array create: no path or schema");
	if (schema->enum_num || schema->label_num)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': creating arrays with enumerations "
				"or dimension labels is not supported",
				path);
	if (!vfs) {
		if ((e = tfs_vfs_posix_new(&own)))
			return tfs_fail(d, e, "storage: %s", tfs_strerror(e));
		vfs = own;
	}
	if ((e = tfs_vfs_stat(vfs, path, &st, d)))
		goto out;
	if (st.exists) {
		struct tfs_dirlist l;

		if (!st.is_dir) {
			e = tfs_fail(d, TFS_E_EXISTS, "array '%s': exists", path);
			goto out;
		}
		if ((e = tfs_vfs_list(vfs, path, &l, d)))
			goto out;
		size_t n = l.count;
		tfs_dirlist_release(&l);
		if (n) {
			e = tfs_fail(d, TFS_E_EXISTS,
				     "array '%s': folder is not empty", path);
			goto out;
		}
	}
	copy = *schema;
	copy.version = schema->version ? schema->version : TFS_FORMAT_VERSION_WRITE;
	if (copy.version > TFS_FORMAT_VERSION_MAX) {
		e = tfs_fail(d, TFS_E_UNSUPPORTED,
			     "unsupported format version %" PRIu32, copy.version);
		goto out;
	}
	t = tfs__now_ms();
	if ((e = tfs_name_new(name, sizeof(name), t, t, 0, ""))) {
		tfs_fail(d, e, "no random bytes");
		goto out;
	}
	copy.name = name;
	copy.t1 = copy.t2 = t;
	if ((e = tfs_schema_serialize(&payload, &copy))) {
		tfs_fail(d, e, "array '%s': schema: %s", path, tfs_strerror(e));
		goto out;
	}
	{
		/* Refuse what readers would refuse: parse it back. */
		struct tfs_schema check;

		if ((e = tfs_schema_parse(&check, payload.data, payload.len,
					  name, d)))
			goto out;
		tfs_schema_release(&check);
	}
	if ((e = tfs_generic_tile_encode(&tile, payload.data, payload.len, key, d)))
		goto out;
	made = !st.exists;
	if ((e = vfs->ops->mkdir(vfs, path, d)))
		goto out_remove;
	made = true;
	sdir = tfs_path_join(path, "__schema");
	if (!sdir || (e = vfs->ops->mkdir(vfs, sdir, d)))
		goto out_nomem;
	for (size_t i = 0; i < sizeof(folders) / sizeof(*folders); i++) {
		char *p = tfs_path_join(path, folders[i]);

		if (!p)
			goto out_nomem;
		e = vfs->ops->mkdir(vfs, p, d);
		tfs_free(p);
		if (e)
			goto out_remove;
	}
	file = tfs_path_join(sdir, name);
	/* Written beside __schema/ and renamed in: nothing but complete
	 * schemas is ever in __schema/ (write.md §9), and the name is no
	 * timestamped one that readers of the array folder would consider. */
	tmp = file ? tfs_path_join(path, ".tfs-schema.tmp") : NULL;
	if (!tmp)
		goto out_nomem;
	if ((e = tfs__write_file(vfs, tmp, tile.data, tile.len, d)) ||
	    (e = vfs->ops->rename(vfs, tmp, file, d)) ||
	    (e = vfs->ops->fsync(vfs, sdir, d)) ||
	    (e = vfs->ops->fsync(vfs, path, d)))
		goto out_remove;
	goto out;

out_nomem:
	e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
out_remove:
	/* Leave the folder as it was found: gone, or empty. */
	if (made) {
		if (st.exists)
			tfs__empty_dir(vfs, path);
		else
			tfs__remove_tree(vfs, path);
	}
out:
	tfs_free(sdir);
	tfs_free(file);
	tfs_free(tmp);
	tfs_buf_release(&payload);
	tfs_buf_release(&tile);
	if (own)
		tfs_vfs_free(own);
	return e;
}
