/* Schema evolution as TileDB does it (format/schema.md §9): a new schema
 * file in `__schema/`, later than every schema there, that adds or drops
 * attributes and adds, extends or drops enumerations; the dimensions and
 * the array's layout stay. Fragments are never rewritten: each keeps the
 * schema it names, and readers match attributes by name. Extended or new
 * enumerations get files of their own; unchanged ones keep theirs. */
#include "write_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_fragment.h"
#include "tilefs/tilefs.h"

static bool same_bytes(const uint8_t *a, uint64_t alen, const uint8_t *b,
		       uint64_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, (size_t)alen) == 0);
}

/* What the schema.json shape shows of the array as a whole and of the
 * dimensions is the same in both. */
static enum tfs_err check_layout(const char *path, const struct tfs_schema *cur,
				 const struct tfs_schema *next,
				 struct tfs_diag *d)
{
	if (next->array_type != cur->array_type ||
	    next->cell_order != cur->cell_order ||
	    next->tile_order != cur->tile_order ||
	    next->allows_dups != cur->allows_dups ||
	    (next->array_type == TFS_SPARSE && next->capacity != cur->capacity))
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': the array type, orders, capacity "
				"and duplicates stay as they are (evolution "
				"adds and drops attributes)",
				path);
	if (next->dim_num != cur->dim_num)
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': dimensions never change (%" PRIu32
				" given, the array has %" PRIu32 ")",
				path, next->dim_num, cur->dim_num);
	for (uint32_t i = 0; i < cur->dim_num; i++) {
		const struct tfs_dim *a = &cur->dims[i], *b = &next->dims[i];
		size_t size = tfs_datatype_size(a->type);

		if (strcmp(a->name, b->name) != 0 || a->type != b->type ||
		    a->var != b->var || a->cell_val_num != b->cell_val_num ||
		    a->has_domain != b->has_domain ||
		    a->has_extent != b->has_extent ||
		    (a->has_domain && !a->var &&
		     (memcmp(a->domain[0], b->domain[0], size) != 0 ||
		      memcmp(a->domain[1], b->domain[1], size) != 0)) ||
		    (a->has_extent && !a->var &&
		     memcmp(a->extent, b->extent, size) != 0))
			return tfs_fail(d, TFS_E_INVALID,
					"array '%s': dimension '%s' differs: "
					"dimensions never change",
					path, a->name);
	}
	return TFS_E_OK;
}

static const struct tfs_attr *attr_named(const struct tfs_schema *s,
					 const char *name)
{
	for (uint32_t i = 0; i < s->attr_num; i++)
		if (strcmp(s->attrs[i].name, name) == 0)
			return &s->attrs[i];
	return NULL;
}

static const struct tfs_enumeration *enum_named(const struct tfs_arraydir *ad,
						const char *name)
{
	for (size_t i = 0; i < ad->enum_num; i++)
		if (strcmp(ad->enums[i].name, name) == 0)
			return &ad->enums[i];
	return NULL;
}

static const char *enum_file_of(const struct tfs_schema *s, const char *name)
{
	for (uint32_t i = 0; i < s->enum_num; i++)
		if (strcmp(s->enums[i].name, name) == 0)
			return s->enums[i].file;
	return NULL;
}

/* Whether next holds the values of cur first, in order (an extension, or
 * the same). */
static bool extends(const struct tfs_enumeration *cur,
		    const struct tfs_enumeration *next)
{
	if (cur->type != next->type ||
	    cur->cell_val_num != next->cell_val_num ||
	    cur->ordered != next->ordered || next->value_num < cur->value_num)
		return false;
	if (!cur->offsets) {
		uint64_t size = cur->value_num ? cur->data_size / cur->value_num
					       : 0;

		return !next->offsets && next->data_size >= cur->data_size &&
		       (cur->value_num == 0 ||
			next->data_size / next->value_num == size) &&
		       same_bytes(cur->data, cur->data_size, next->data,
				  cur->data_size);
	}
	if (!next->offsets)
		return false;
	for (uint64_t i = 0; i < cur->value_num; i++) {
		uint64_t a0 = cur->offsets[i], b0 = next->offsets[i];
		uint64_t a1 = i + 1 < cur->value_num ? cur->offsets[i + 1]
						     : cur->data_size;
		uint64_t b1 = i + 1 < next->value_num ? next->offsets[i + 1]
						      : next->data_size;

		if (a1 < a0 || b1 < b0 || a1 > cur->data_size ||
		    b1 > next->data_size ||
		    !same_bytes(cur->data + a0, a1 - a0, next->data + b0,
				b1 - b0))
			return false;
	}
	return true;
}

/* An attribute of both schemas stays what it was. */
static enum tfs_err check_kept(const char *path, const struct tfs_attr *a,
			       const struct tfs_attr *b, struct tfs_diag *d)
{
	bool same_enum = (!a->enumeration && !b->enumeration) ||
			 (a->enumeration && b->enumeration &&
			  strcmp(a->enumeration, b->enumeration) == 0);

	if (a->type != b->type || a->cell_val_num != b->cell_val_num ||
	    a->var != b->var || a->nullable != b->nullable || !same_enum)
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': attribute '%s' changes its type, "
				"values per cell, nullability or enumeration: "
				"evolution only adds and drops attributes",
				path, a->name);
	return TFS_E_OK;
}

struct evolve {
	struct tfs_schema copy;
	struct tfs_attr *attrs;
	struct tfs_enum_ref *refs;
	char (*files)[48];
	struct tfs_buf *tiles;
	uint32_t enum_num;
};

static void evolve_release(struct evolve *ev)
{
	for (uint32_t i = 0; ev->tiles && i < ev->enum_num; i++)
		tfs_buf_release(&ev->tiles[i]);
	tfs_free(ev->tiles);
	tfs_free(ev->files);
	tfs_free(ev->refs);
	tfs_free(ev->attrs);
}

/* The enumerations of the next schema: a file of its own for each new or
 * extended one, the current file for one unchanged. */
static enum tfs_err plan_enumerations(const char *path,
				      const struct tfs_arraydir *ad,
				      const struct tfs_schema *next,
				      const uint8_t *key, struct evolve *ev,
				      struct tfs_diag *d)
{
	struct tfs_buf payload;
	enum tfs_err e = TFS_E_OK;

	ev->enum_num = next->enum_num;
	if (!next->enum_num)
		return TFS_E_OK;
	ev->refs = tfs_callocn(next->enum_num, sizeof(*ev->refs));
	ev->files = tfs_callocn(next->enum_num, sizeof(*ev->files));
	ev->tiles = tfs_callocn(next->enum_num, sizeof(*ev->tiles));
	if (!ev->refs || !ev->files || !ev->tiles)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < next->enum_num; i++)
		tfs_buf_init(&ev->tiles[i], TFS_BUF_NO_MAX);
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	for (uint32_t i = 0; i < next->enum_num && !e; i++) {
		const struct tfs_enum_ref *r = &next->enums[i];
		const struct tfs_enumeration *old = enum_named(ad, r->name);
		const char *old_file = enum_file_of(ad->schema, r->name);
		struct tfs_enumeration en;
		struct tfs_diag ed;
		char uuid[33];

		if (!r->def) {
			e = tfs_fail(d, TFS_E_INVALID,
				     "array '%s': enumeration '%s' has no "
				     "values given",
				     path, r->name);
			break;
		}
		tfs_diag_init(&ed);
		if ((e = tfs_enumeration_check(r->def, &ed))) {
			e = tfs_fail(d, e, "array '%s': %s", path,
				     tfs_diag_msg(&ed));
			break;
		}
		if (old && !extends(old, r->def)) {
			e = tfs_fail(d, TFS_E_INVALID,
				     "array '%s': enumeration '%s' may only "
				     "grow: its values stay, in their order, "
				     "new ones after them",
				     path, r->name);
			break;
		}
		if (old && old_file && old->value_num == r->def->value_num) {
			ev->refs[i] =
				(struct tfs_enum_ref){.name = r->name,
						      .file = (char *)old_file};
			continue;
		}
		if ((e = tfs_uuid_new(uuid))) {
			tfs_fail(d, e, "no random bytes");
			break;
		}
		snprintf(ev->files[i], sizeof(ev->files[i]), "__%s_0", uuid);
		ev->refs[i] = (struct tfs_enum_ref){.name = r->name,
						    .file = ev->files[i]};
		en = *r->def;
		en.path_name = ev->files[i];
		payload.len = 0;
		if ((e = tfs_enumeration_serialize(&payload, &en))) {
			tfs_fail(d, e, "array '%s': enumeration '%s': %s", path,
				 en.name, tfs_strerror(e));
			break;
		}
		e = tfs_generic_tile_encode(&ev->tiles[i], payload.data,
					    payload.len, key, d);
	}
	tfs_buf_release(&payload);
	return e;
}

/* The next schema: the current one with next's attributes (those kept
 * exactly as they were) and enumerations. */
static enum tfs_err plan_schema(const char *path, const struct tfs_arraydir *ad,
				const struct tfs_schema *next,
				struct evolve *ev, bool *changed,
				struct tfs_diag *d)
{
	const struct tfs_schema *cur = ad->schema;
	enum tfs_err e;

	*changed = next->attr_num != cur->attr_num ||
		   next->enum_num != cur->enum_num;
	if (!next->attr_num)
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': an array keeps one attribute at "
				"least",
				path);
	ev->attrs = tfs_callocn(next->attr_num, sizeof(*ev->attrs));
	if (!ev->attrs)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < next->attr_num; i++) {
		const struct tfs_attr *b = &next->attrs[i];
		const struct tfs_attr *a = attr_named(cur, b->name);

		if (a) {
			if ((e = check_kept(path, a, b, d)))
				return e;
			ev->attrs[i] = *a;
		} else {
			ev->attrs[i] = *b;
			*changed = true;
		}
		for (uint32_t k = 0; k < cur->dim_num; k++)
			if (strcmp(cur->dims[k].name, b->name) == 0)
				return tfs_fail(d, TFS_E_INVALID,
						"array '%s': '%s' names a "
						"dimension",
						path, b->name);
	}
	for (uint32_t i = 0; i < next->enum_num; i++) {
		const struct tfs_enumeration *old =
			enum_named(ad, next->enums[i].name);

		if (!old || !next->enums[i].def ||
		    old->value_num != next->enums[i].def->value_num)
			*changed = true;
	}
	for (uint32_t i = 0; i < cur->enum_num && !*changed; i++) {
		bool kept = false;

		for (uint32_t k = 0; k < next->enum_num; k++)
			if (strcmp(cur->enums[i].name, next->enums[k].name) ==
			    0)
				kept = true;
		*changed = !kept;
	}
	ev->copy = *cur;
	ev->copy.attrs = ev->attrs;
	ev->copy.attr_num = next->attr_num;
	ev->copy.version = TFS_FORMAT_VERSION_WRITE;
	return TFS_E_OK;
}

/* The schema file, written beside __schema/ and renamed in. */
static enum tfs_err put_schema(struct tfs_vfs *vfs, const char *path,
			       const char *sdir, const char *name,
			       const struct tfs_buf *tile, struct tfs_diag *d)
{
	char *file = tfs_path_join(sdir, name);
	char *tmp = file ? tfs_path_join(path, ".tfs-schema.tmp") : NULL;
	enum tfs_err e;

	if (!tmp)
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	else if (!(e = tfs__write_file(vfs, tmp, tile->data, tile->len, d)) &&
		 !(e = tfs_vfs_rename(vfs, tmp, file, d)))
		e = tfs_vfs_fsync(vfs, sdir, d);
	tfs_free(file);
	tfs_free(tmp);
	return e;
}

static enum tfs_err write_files(struct tfs_vfs *vfs, const char *path,
				const struct evolve *ev, const char *name,
				const struct tfs_buf *tile, struct tfs_diag *d)
{
	char *sdir = tfs_path_join(path, "__schema");
	char *edir = sdir ? tfs_path_join(sdir, "__enumerations") : NULL;
	struct tfs_stat st;
	enum tfs_err e = TFS_E_OK;

	if (!edir) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	if (ev->enum_num && !(e = tfs_vfs_stat(vfs, edir, &st, d)) &&
	    !st.exists)
		e = tfs_vfs_mkdir(vfs, edir, d);
	for (uint32_t i = 0; i < ev->enum_num && !e; i++) {
		char *p;

		if (!ev->tiles[i].len)
			continue;
		p = tfs_path_join(edir, ev->files[i]);
		e = p ? tfs__write_file(vfs, p, ev->tiles[i].data,
					ev->tiles[i].len, d)
		      : tfs_fail(d, TFS_E_NOMEM, "out of memory");
		tfs_free(p);
	}
	if (!e && ev->enum_num)
		e = tfs_vfs_fsync(vfs, edir, d);
	if (!e)
		e = put_schema(vfs, path, sdir, name, tile, d);
out:
	tfs_free(edir);
	tfs_free(sdir);
	return e;
}

/* What changes from the array's schema to next, checked: *changed
 * false when nothing does. */
static enum tfs_err plan_evolution(const char *path, const struct tfs_arraydir *ad,
				   const struct tfs_schema *next,
				   const uint8_t *key, struct evolve *ev,
				   bool *changed, struct tfs_diag *d)
{
	enum tfs_err e;

	if (ad->schema->version < 10 || next->label_num)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': evolving schemas of format version "
				"%" PRIu32 " or with dimension labels is not "
				"supported",
				path, ad->schema->version);
	if ((e = check_layout(path, ad->schema, next, d)) ||
	    (e = plan_schema(path, ad, next, ev, changed, d)) ||
	    (e = plan_enumerations(path, ad, next, key, ev, d)) ||
	    (e = tfs__check_attr_enums(path, ev->attrs, next->attr_num, next, d)))
		return e;
	if (!*changed)
		return TFS_E_OK;
	ev->copy.enums = ev->refs;
	ev->copy.enum_num = ev->enum_num;
	if (ev->enum_num && ev->copy.version < 20)
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': enumerations need format version 20",
				path);
	return TFS_E_OK;
}

/* The new schema named for a time later than every schema, so that it
 * is the one in force; serialized, read back as a check, and encoded as
 * the schema file's tile. */
static enum tfs_err encode_new_schema(const char *path,
				      const struct tfs_arraydir *ad,
				      struct evolve *ev, char name[TFS_NAME_MAX],
				      const uint8_t *key, struct tfs_buf *tile,
				      struct tfs_diag *d)
{
	struct tfs_schema check;
	struct tfs_buf payload;
	uint64_t t;
	enum tfs_err e;

	t = tfs__now_ms();
	for (size_t i = 0; i < ad->schema_num; i++)
		if (ad->schemas[i].t2 >= t)
			t = ad->schemas[i].t2 + 1;
	tfs__wait_until_ms(t);
	if ((e = tfs_name_new(name, TFS_NAME_MAX, t, t, 0, "")))
		return tfs_fail(d, e, "no random bytes");
	ev->copy.name = name;
	ev->copy.t1 = ev->copy.t2 = t;
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	if ((e = tfs_schema_serialize(&payload, &ev->copy))) {
		e = tfs_fail(d, e, "array '%s': schema: %s", path,
			     tfs_strerror(e));
		goto out;
	}
	if ((e = tfs_schema_parse(&check, payload.data, payload.len, name, d)))
		goto out;
	tfs_schema_release(&check);
	e = tfs_generic_tile_encode(tile, payload.data, payload.len, key, d);
out:
	tfs_buf_release(&payload);
	return e;
}

enum tfs_err tfs_array_evolve(const char *path, const struct tfs_schema *next,
			      const struct tfs_write_opts *opts, bool *changed,
			      struct tfs_diag *d)
{
	struct tfs_vfs *vfs = opts ? opts->vfs : NULL, *own = NULL;
	const uint8_t *key = opts ? opts->key : NULL;
	struct tfs_arraydir *ad = NULL;
	struct tfs_buf tile;
	struct evolve ev;
	char name[TFS_NAME_MAX];
	enum tfs_err e;

	*changed = false;
	memset(&ev, 0, sizeof(ev));
	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	if ((e = tfs__vfs_or_default(path, &vfs, &own, d)))
		return e;
	if ((e = tfs__arraydir_open_all(vfs, path, key, &ad, d)) ||
	    (e = plan_evolution(path, ad, next, key, &ev, changed, d)) ||
	    !*changed)
		goto out;
	if ((e = encode_new_schema(path, ad, &ev, name, key, &tile, d)) ||
	    (e = write_files(vfs, path, &ev, name, &tile, d)))
		goto out;
out:
	evolve_release(&ev);
	tfs_arraydir_close(ad);
	tfs_buf_release(&tile);
	if (own)
		tfs_vfs_free(own);
	return e;
}
