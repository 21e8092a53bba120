/* Opening an array folder (format/read.md §1): classify the folder, load
 * every schema and pick the current one (layout.md §5), load the current
 * schema's enumerations (schema.md §8), then hand over to visibility.c for
 * the fragments and delete conditions and to array_metadata.c for the
 * key/value metadata. The helpers the files share are in frag_io.c. */
#include "fragment_internal.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"

/* ---- object kind -------------------------------------------------------- */

/* A folder is an array when it holds __schema/ (or, before format 10,
 * __array_schema.tdb), a group when it holds __group/ (or
 * __tiledb_group.tdb). */
enum tfs_err tfs_object_kind_of(struct tfs_vfs *vfs, const char *path,
				enum tfs_object_kind *out, struct tfs_diag *d)
{
	static const char *const first[] = {"", "__schema"};
	static const char *const rest[] = {"__array_schema.tdb", "__group",
					   "__tiledb_group.tdb"};
	struct tfs_stat st[3];
	enum tfs_err err;

	*out = TFS_OBJ_NONE;
	err = tfs_vfs_stat_names(vfs, path, first, 2, st, d);
	if (err)
		return err;
	if (!st[0].exists)
		return tfs_fail(d, TFS_E_NOT_FOUND, "'%s': no such folder", path);
	if (!st[0].is_dir)
		return TFS_E_OK;
	if (st[1].exists && st[1].is_dir) {
		*out = TFS_OBJ_ARRAY;
		return TFS_E_OK;
	}
	err = tfs_vfs_stat_names(vfs, path, rest, 3, st, d);
	if (err)
		return err;
	if (st[0].exists && !st[0].is_dir)
		*out = TFS_OBJ_ARRAY;
	else if (st[1].exists && st[1].is_dir)
		*out = TFS_OBJ_GROUP;
	else if (st[2].exists && !st[2].is_dir)
		*out = TFS_OBJ_GROUP;
	return TFS_E_OK;
}

/* ---- schemas ------------------------------------------------------------ */

static enum tfs_err load_schema(struct tfs_arraydir *a, const char *rel,
				const char *name, struct tfs_schema *out,
				struct tfs_diag *d)
{
	struct tfs_diag ld;
	uint8_t *payload;
	size_t len;
	enum tfs_err err;

	err = tfs__read_tile_file(a, rel, &payload, &len, d);
	if (err)
		return err;
	tfs_diag_init(&ld);
	err = tfs_schema_parse(out, payload, len, name, &ld);
	tfs_free(payload);
	if (err)
		return tfs_fail(d, err, "array schema '%s/%s': %s", a->path, rel,
				tfs_diag_msg(&ld));
	return TFS_E_OK;
}

/* Loads __array_schema.tdb (if present) then __schema/ in sorted order and
 * picks the current schema at a->t1 (layout.md §5). */
static enum tfs_err load_schemas(struct tfs_arraydir *a, bool legacy,
				 struct tfs_diag *d)
{
	struct tfs_dirlist l;
	enum tfs_err err;
	size_t cap, cur = 0;
	bool found = false;

	err = tfs__list(a, "__schema", true, true, &l, d);
	if (err)
		return err;
	cap = l.count + (legacy ? 1 : 0);
	a->schemas = tfs_callocn(cap ? cap : 1, sizeof(*a->schemas));
	if (!a->schemas) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       a->path);
		goto out_release;
	}
	if (legacy) {
		err = load_schema(a, "__array_schema.tdb", "__array_schema.tdb",
				  &a->schemas[0], d);
		if (err)
			goto out_release;
		a->schema_num = 1;
	}
	for (size_t i = 0; i < l.count; i++) {
		char *rel;
		struct tfs_schema *s;

		if (!strcmp(l.names[i], "__enumerations"))
			continue;
		rel = tfs_path_join("__schema", l.names[i]);
		if (!rel) {
			err = tfs_fail(d, TFS_E_NOMEM,
				       "array '%s': out of memory", a->path);
			goto out_release;
		}
		s = &a->schemas[a->schema_num];
		err = load_schema(a, rel, l.names[i], s, d);
		tfs_free(rel);
		if (err)
			goto out_release;
		a->schema_num++;
		if (s->t2 <= a->t1) {
			cur = a->schema_num - 1;
			found = true;
		}
	}
	if (!a->schema_num) {
		err = tfs_fail(d, TFS_E_CORRUPT, "array '%s': no schema file",
			       a->path);
		goto out_release;
	}
	a->schema = &a->schemas[found ? cur : 0];

out_release:
	tfs_dirlist_release(&l);
	return err;
}

static enum tfs_err load_enumerations(struct tfs_arraydir *a,
				      struct tfs_diag *d)
{
	const struct tfs_schema *s = a->schema;

	if (!s->enum_num)
		return TFS_E_OK;
	a->enums = tfs_callocn(s->enum_num, sizeof(*a->enums));
	if (!a->enums)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	for (uint32_t i = 0; i < s->enum_num; i++) {
		const char *file = s->enums[i].file;
		struct tfs_diag ld;
		uint8_t *payload;
		size_t len;
		char *rel;
		enum tfs_err err;

		if (!file || !file[0] || strchr(file, '/') ||
		    !strcmp(file, ".") || !strcmp(file, ".."))
			return tfs_fail(d, TFS_E_CORRUPT,
					"array schema '%s': bad enumeration file name",
					s->name);
		rel = tfs_path_join("__schema/__enumerations", file);
		if (!rel)
			return tfs_fail(d, TFS_E_NOMEM,
					"array '%s': out of memory", a->path);
		err = tfs__read_tile_file(a, rel, &payload, &len, d);
		if (err) {
			tfs_free(rel);
			return err;
		}
		tfs_diag_init(&ld);
		err = tfs_enumeration_parse(&a->enums[i], payload, len, &ld);
		tfs_free(payload);
		if (err) {
			tfs_fail(d, err, "enumeration '%s/%s': %s", a->path, rel,
				 tfs_diag_msg(&ld));
			tfs_free(rel);
			return err;
		}
		tfs_free(rel);
		a->enum_num++;
	}
	return TFS_E_OK;
}

/* ---- open / close ------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* *is_array: the folder was found to be an array (a failure after that may
 * be a race with a concurrent removal). */
static enum tfs_err open_once(struct tfs_vfs *vfs, const char *path,
			      const struct tfs_arraydir_opts *opts,
			      struct tfs_arraydir **out, bool *is_array,
			      struct tfs_diag *d)
{
	struct tfs_arraydir *a;
	enum tfs_object_kind kind;
	struct tfs_stat st;
	size_t plen = strlen(path);
	enum tfs_err err;
	char *legacy;

	*out = NULL;
	err = tfs_object_kind_of(vfs, path, &kind, d);
	if (err)
		return err;
	if (kind != TFS_OBJ_ARRAY)
		return tfs_fail(d, TFS_E_NOT_ARRAY, "'%s': not a TileDB array",
				path);
	*is_array = true;
	a = tfs_callocn(1, sizeof(*a));
	if (!a)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				path);
	a->vfs = vfs;
	while (plen > 1 && path[plen - 1] == '/')
		plen--;
	a->path = tfs_strndup(path, plen);
	if (!a->path) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       path);
		goto out_close;
	}
	if (opts && opts->key) {
		a->has_key = true;
		memcpy(a->key, opts->key, sizeof(a->key));
	}
	a->t0 = opts ? opts->t0 : 0;
	a->t1 = opts ? opts->t1 : UINT64_MAX;
	if (a->t1 == UINT64_MAX)
		a->t1 = now_ms();
	a->del_t1 = opts && opts->del_t1 > a->t1 ? opts->del_t1 : a->t1;
	if (a->t0 > a->t1) {
		err = tfs_fail(d, TFS_E_INVALID,
			       "array '%s': time window [%" PRIu64 ", %" PRIu64
			       "] is empty",
			       a->path, a->t0, a->t1);
		goto out_close;
	}

	legacy = tfs__array_path(a, "__array_schema.tdb");
	if (!legacy) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       path);
		goto out_close;
	}
	err = tfs_vfs_stat(vfs, legacy, &st, d);
	tfs_free(legacy);
	if (err)
		goto out_close;
	err = load_schemas(a, st.exists && !st.is_dir, d);
	if (!err)
		err = load_enumerations(a, d);
	if (!err)
		err = tfs__load_fragments(a, d);
	if (!err)
		err = tfs__load_metadata(a, d);
	if (err)
		goto out_close;
	*out = a;
	return TFS_E_OK;

out_close:
	tfs_arraydir_close(a);
	return err;
}

/* A vacuum or consolidation running beside the open may remove a fragment,
 * a commit or a metadata file between the listing and the reading: such an
 * object is gone from the next listing, so the open starts again a few
 * times before it reports the missing object. */
#define OPEN_ATTEMPTS 4

enum tfs_err tfs_arraydir_open(struct tfs_vfs *vfs, const char *path,
			       const struct tfs_arraydir_opts *opts,
			       struct tfs_arraydir **out, struct tfs_diag *d)
{
	struct tfs_diag before = d ? *d : (struct tfs_diag){0};
	enum tfs_err err = TFS_E_OK;
	bool is_array = false;

	for (int attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
		if (attempt > 0) {
			struct timespec pause = {0, 1000000L * attempt};

			if (d)
				*d = before;
			nanosleep(&pause, NULL);
		}
		err = open_once(vfs, path, opts, out, &is_array, d);
		if (err != TFS_E_NOT_FOUND || !is_array)
			break;
	}
	return err;
}

void tfs_arraydir_close(struct tfs_arraydir *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->frag_pool_num; i++)
		tfs__fragment_free(a->frag_pool[i]);
	tfs_free(a->frag_pool);
	tfs_free(a->fragments);
	tfs_free(a->listed);
	for (size_t i = 0; i < a->to_vacuum_num; i++)
		tfs_free(a->to_vacuum[i]);
	tfs_free(a->to_vacuum);
	for (size_t i = 0; i < a->delete_num; i++) {
		tfs_free(a->deletes[i].marker);
		tfs_condition_release(&a->deletes[i].cond);
	}
	tfs_free(a->deletes);
	for (size_t i = 0; i < a->update_num; i++) {
		tfs_free(a->updates[i].marker);
		tfs_update_release(&a->updates[i].update);
	}
	tfs_free(a->updates);
	tfs_metadata_release(&a->metadata);
	for (size_t i = 0; i < a->enum_num; i++)
		tfs_enumeration_release(&a->enums[i]);
	tfs_free(a->enums);
	for (size_t i = 0; i < a->schema_num; i++)
		tfs_schema_release(&a->schemas[i]);
	tfs_free(a->schemas);
	tfs_free(a->path);
	tfs_free(a);
}
