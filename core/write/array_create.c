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
	return tfs__check_attr_enums(path, s->attrs, s->attr_num, s, d);
}

enum tfs_err tfs__check_attr_enums(const char *path, const struct tfs_attr *attrs,
				   uint32_t attr_num, const struct tfs_schema *s,
				   struct tfs_diag *d)
{
	for (uint32_t i = 0; i < attr_num; i++) {
		const struct tfs_attr *a = &attrs[i];
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

/* The target may not exist yet, or be an empty folder; *st says which. */
static enum tfs_err check_target(struct tfs_vfs *vfs, const char *path,
				 struct tfs_stat *st, struct tfs_diag *d)
{
	struct tfs_dirlist l;
	size_t n;
	enum tfs_err e;

	if ((e = tfs_vfs_stat(vfs, path, st, d)))
		return e;
	if (!st->exists)
		return TFS_E_OK;
	if (!st->is_dir)
		return tfs_fail(d, TFS_E_EXISTS, "array '%s': exists", path);
	if ((e = tfs_vfs_list(vfs, path, &l, d)))
		return e;
	n = l.count;
	tfs_dirlist_release(&l);
	if (n)
		return tfs_fail(d, TFS_E_EXISTS,
				"array '%s': folder is not empty", path);
	return TFS_E_OK;
}

/* Checks and encodes the enumerations of *copy into *refs (which
 * copy->enums then points at) and their files *efiles; both arrays are
 * the caller's to free, with each file's tile, even on failure. */
static enum tfs_err prepare_enumerations(const char *path,
					 struct tfs_schema *copy,
					 const uint8_t *key,
					 struct tfs_enum_ref **refs,
					 struct enum_file **efiles,
					 struct tfs_diag *d)
{
	enum tfs_err e;

	if ((e = check_enumerations(path, copy, d)))
		return e;
	if (!copy->enum_num)
		return TFS_E_OK;
	*refs = tfs_callocn(copy->enum_num, sizeof(**refs));
	*efiles = tfs_callocn(copy->enum_num, sizeof(**efiles));
	if (!*refs || !*efiles)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < copy->enum_num; i++)
		tfs_buf_init(&(*efiles)[i].tile, TFS_BUF_NO_MAX);
	if ((e = encode_enumerations(path, copy, key, *refs, *efiles, d)))
		return e;
	copy->enums = *refs;
	return TFS_E_OK;
}

/* Names the schema (name, of TFS_NAME_MAX bytes, and its times), encodes
 * it into *tile through *payload, and parses it back: what readers would
 * refuse is refused here. */
static enum tfs_err encode_schema(const char *path, struct tfs_schema *copy,
				  const uint8_t *key, char *name,
				  struct tfs_buf *payload, struct tfs_buf *tile,
				  struct tfs_diag *d)
{
	struct tfs_schema check;
	uint64_t t = tfs__now_ms();
	enum tfs_err e;

	if ((e = tfs_name_new(name, TFS_NAME_MAX, t, t, 0, "")))
		return tfs_fail(d, e, "no random bytes");
	copy->name = name;
	copy->t1 = copy->t2 = t;
	if ((e = tfs_schema_serialize(payload, copy)))
		return tfs_fail(d, e, "array '%s': schema: %s", path,
				tfs_strerror(e));
	if ((e = tfs_schema_parse(&check, payload->data, payload->len, name,
				  d)))
		return e;
	tfs_schema_release(&check);
	return tfs_generic_tile_encode(tile, payload->data, payload->len, key,
				       d);
}

/* The array's folders (__schema/ is made by the caller). */
static enum tfs_err make_folders(struct tfs_vfs *vfs, const char *path,
				 struct tfs_diag *d)
{
	enum tfs_err e;

	for (size_t i = 0; i < sizeof(folders) / sizeof(*folders); i++) {
		char *p = tfs_path_join(path, folders[i]);

		if (!p)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		e = tfs_vfs_mkdir(vfs, p, d);
		tfs_free(p);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

/* The enumeration files, in __schema/__enumerations/. */
static enum tfs_err write_enumerations(struct tfs_vfs *vfs, const char *sdir,
				       const struct enum_file *efiles,
				       uint32_t enum_num, struct tfs_diag *d)
{
	char *edir = tfs_path_join(sdir, "__enumerations");
	enum tfs_err e = TFS_E_OK;

	if (!edir)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < enum_num && !e; i++) {
		char *p = tfs_path_join(edir, efiles[i].name);

		if (!p) {
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			break;
		}
		e = tfs__write_file(vfs, p, efiles[i].tile.data,
				    efiles[i].tile.len, d);
		tfs_free(p);
	}
	if (!e)
		e = tfs_vfs_fsync(vfs, edir, d);
	tfs_free(edir);
	return e;
}

/* The schema file, written beside __schema/ and renamed in: nothing but
 * complete schemas is ever in __schema/ (write.md §9), and the name is no
 * timestamped one that readers of the array folder would consider. */
static enum tfs_err write_schema(struct tfs_vfs *vfs, const char *path,
				 const char *sdir, const char *name,
				 const struct tfs_buf *tile, struct tfs_diag *d)
{
	char *file = tfs_path_join(sdir, name);
	char *tmp = file ? tfs_path_join(path, ".tfs-schema.tmp") : NULL;
	enum tfs_err e;

	if (!tmp)
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	else if (!(e = tfs__write_file(vfs, tmp, tile->data, tile->len, d)) &&
		 !(e = tfs_vfs_rename(vfs, tmp, file, d)) &&
		 !(e = tfs_vfs_fsync(vfs, sdir, d)))
		e = tfs_vfs_fsync(vfs, path, d);
	tfs_free(file);
	tfs_free(tmp);
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
	char name[TFS_NAME_MAX], *sdir = NULL;
	bool made = false;
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
	if ((e = tfs__vfs_or_default(path, &vfs, &own, d)))
		return e;
	if ((e = check_target(vfs, path, &st, d)))
		goto out_free;
	copy = *schema;
	copy.version = schema->version ? schema->version : TFS_FORMAT_VERSION_WRITE;
	if (copy.version > TFS_FORMAT_VERSION_MAX) {
		e = tfs_fail(d, TFS_E_UNSUPPORTED,
			     "unsupported format version %" PRIu32, copy.version);
		goto out_free;
	}
	if ((e = prepare_enumerations(path, &copy, key, &refs, &efiles, d)) ||
	    (e = encode_schema(path, &copy, key, name, &payload, &tile, d)))
		goto out_free;
	made = !st.exists;
	if ((e = tfs_vfs_mkdir(vfs, path, d)))
		goto out_remove;
	made = true;
	sdir = tfs_path_join(path, "__schema");
	if (!sdir) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_remove;
	}
	if ((e = tfs_vfs_mkdir(vfs, sdir, d)) ||
	    (e = make_folders(vfs, path, d)) ||
	    (copy.enum_num &&
	     (e = write_enumerations(vfs, sdir, efiles, copy.enum_num, d))) ||
	    (e = write_schema(vfs, path, sdir, name, &tile, d)))
		goto out_remove;
	goto out_free;

out_remove:
	/* Leave the folder as it was found: gone, or empty. */
	if (made) {
		if (st.exists)
			tfs__empty_dir(vfs, path);
		else
			tfs__remove_tree(vfs, path);
	}
out_free:
	for (uint32_t i = 0; efiles && i < schema->enum_num; i++)
		tfs_buf_release(&efiles[i].tile);
	tfs_free(efiles);
	tfs_free(refs);
	tfs_free(sdir);
	tfs_buf_release(&payload);
	tfs_buf_release(&tile);
	if (own)
		tfs_vfs_free(own);
	return e;
}
