/* Creating an array folder the way TileDB does (format/layout.md §9): the
 * reserved folders, then one generic tile per enumeration in
 * `__schema/__enumerations/__<uuid>_0` (format/schema.md §8), then the
 * schema as one generic tile named `__schema/__<t>_<t>_<uuid>`, written
 * under a temporary name in the array folder and renamed into place, so a
 * crash never leaves a half-written schema that readers would pick (and
 * every enumeration file it names is complete before it appears). */
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

/* An enumeration file to write: its name and its bytes. */
struct enum_file {
	char name[48];
	struct tfs_buf tile;
};

/* What TileDB checks of the enumerations of a schema it creates: each
 * given with its values (the def of the map entry), valid and with
 * distinct values, and every attribute that names one naming one that
 * exists and able to index it. That the names are distinct is
 * tfs_schema_parse's check. */
static enum tfs_err check_enumerations(const char *path,
				       const struct tfs_schema *s,
				       struct tfs_diag *d)
{
	enum tfs_err e;

	if (s->enum_num && s->version < 20)
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': enumerations need format version "
				"20 or later, not %" PRIu32,
				path, s->version);
	for (uint32_t i = 0; i < s->enum_num; i++) {
		const struct tfs_enum_ref *r = &s->enums[i];
		struct tfs_diag ed;

		if (!r->def)
			return tfs_fail(d, TFS_E_INVALID,
					"array '%s': enumeration '%s' has no "
					"values given",
					path, r->name ? r->name : "");
		tfs_diag_init(&ed);
		if ((e = tfs_enumeration_check(r->def, &ed)))
			return tfs_fail(d, e, "array '%s': %s", path,
					tfs_diag_msg(&ed));
		if (!r->name || strcmp(r->name, r->def->name) != 0)
			return tfs_fail(d, TFS_E_INVALID,
					"array '%s': enumeration '%s' holds "
					"the values of '%s'",
					path, r->name ? r->name : "",
					r->def->name);
	}
	for (uint32_t i = 0; i < s->attr_num; i++) {
		const struct tfs_attr *a = &s->attrs[i];
		const struct tfs_enumeration *en = NULL;
		const char *why;

		if (!a->enumeration)
			continue;
		for (uint32_t k = 0; k < s->enum_num && !en; k++)
			if (strcmp(s->enums[k].name, a->enumeration) == 0)
				en = s->enums[k].def;
		if (!en)
			return tfs_fail(d, TFS_E_INVALID,
					"array '%s': attribute '%s' names "
					"enumeration '%s', which the schema "
					"lacks",
					path, a->name, a->enumeration);
		if ((why = tfs_enumeration_attr_problem(a, en)))
			return tfs_fail(d, TFS_E_INVALID,
					"array '%s': attribute '%s' "
					"(enumeration '%s'): %s",
					path, a->name, a->enumeration, why);
	}
	return TFS_E_OK;
}

/* Names every enumeration file (`__<uuid>_0`, the name TileDB gives
 * them) and encodes it; refs (s->enum_num entries) become the schema's
 * map with those names, borrowing the names of s and of files. */
static enum tfs_err encode_enumerations(const char *path,
					const struct tfs_schema *s,
					const uint8_t *key,
					struct tfs_enum_ref *refs,
					struct enum_file *files,
					struct tfs_diag *d)
{
	struct tfs_buf payload;
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	for (uint32_t i = 0; i < s->enum_num && !e; i++) {
		struct tfs_enumeration en = *s->enums[i].def;
		char uuid[33];

		if ((e = tfs_uuid_new(uuid))) {
			tfs_fail(d, e, "no random bytes");
			break;
		}
		snprintf(files[i].name, sizeof(files[i].name), "__%s_0", uuid);
		refs[i] = (struct tfs_enum_ref){.name = s->enums[i].name,
						.file = files[i].name};
		en.path_name = files[i].name;
		payload.len = 0;
		if ((e = tfs_enumeration_serialize(&payload, &en))) {
			tfs_fail(d, e, "array '%s': enumeration '%s': %s", path,
				 en.name, tfs_strerror(e));
			break;
		}
		e = tfs_generic_tile_encode(&files[i].tile, payload.data,
					    payload.len, key, d);
	}
	tfs_buf_release(&payload);
	return e;
}

enum tfs_err tfs_array_create(const char *path, const struct tfs_schema *schema,
			      const struct tfs_write_opts *opts,
			      struct tfs_diag *d)
{
	struct tfs_vfs *vfs = opts ? opts->vfs : NULL, *own = NULL;
	const uint8_t *key = opts ? opts->key : NULL;
	struct tfs_schema copy;
	struct tfs_stat st;
	struct tfs_buf payload, tile;
	struct tfs_enum_ref *refs = NULL;
	struct enum_file *efiles = NULL;
	char name[TFS_NAME_MAX], *sdir = NULL, *file = NULL, *tmp = NULL;
	char *edir = NULL;
	bool made = false;
	uint64_t t;
	enum tfs_err e;

	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	if (!path || !schema)
		return tfs_fail(d, TFS_E_INVALID, "array create: no path or schema");
	if (schema->label_num)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': creating arrays with dimension "
				"labels is not supported",
				path);
	if (!vfs) {
		if ((e = tfs_vfs_default_new(path, &own, d)))
			return e;
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
	if ((e = check_enumerations(path, &copy, d)))
		goto out;
	if (copy.enum_num) {
		refs = tfs_callocn(copy.enum_num, sizeof(*refs));
		efiles = tfs_callocn(copy.enum_num, sizeof(*efiles));
		if (!refs || !efiles) {
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			goto out;
		}
		for (uint32_t i = 0; i < copy.enum_num; i++)
			tfs_buf_init(&efiles[i].tile, TFS_BUF_NO_MAX);
		if ((e = encode_enumerations(path, &copy, key, refs, efiles, d)))
			goto out;
		copy.enums = refs;
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
	if ((e = tfs_vfs_mkdir(vfs, path, d)))
		goto out_remove;
	made = true;
	sdir = tfs_path_join(path, "__schema");
	if (!sdir || (e = tfs_vfs_mkdir(vfs, sdir, d)))
		goto out_nomem;
	for (size_t i = 0; i < sizeof(folders) / sizeof(*folders); i++) {
		char *p = tfs_path_join(path, folders[i]);

		if (!p)
			goto out_nomem;
		e = tfs_vfs_mkdir(vfs, p, d);
		tfs_free(p);
		if (e)
			goto out_remove;
	}
	if (copy.enum_num) {
		if (!(edir = tfs_path_join(sdir, "__enumerations")))
			goto out_nomem;
		for (uint32_t i = 0; i < copy.enum_num; i++) {
			char *p = tfs_path_join(edir, efiles[i].name);

			if (!p)
				goto out_nomem;
			e = tfs__write_file(vfs, p, efiles[i].tile.data,
					    efiles[i].tile.len, d);
			tfs_free(p);
			if (e)
				goto out_remove;
		}
		if ((e = tfs_vfs_fsync(vfs, edir, d)))
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
	    (e = tfs_vfs_rename(vfs, tmp, file, d)) ||
	    (e = tfs_vfs_fsync(vfs, sdir, d)) ||
	    (e = tfs_vfs_fsync(vfs, path, d)))
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
	for (uint32_t i = 0; efiles && i < schema->enum_num; i++)
		tfs_buf_release(&efiles[i].tile);
	tfs_free(efiles);
	tfs_free(refs);
	tfs_free(edir);
	tfs_free(sdir);
	tfs_free(file);
	tfs_free(tmp);
	tfs_buf_release(&payload);
	tfs_buf_release(&tile);
	if (own)
		tfs_vfs_free(own);
	return e;
}
