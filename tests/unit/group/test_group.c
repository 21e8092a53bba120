/* The group module (tfs_group.h, format/groups.md): the corpus group, and
 * groups the tests write into an in-memory backend: version-2 replay with
 * deletions, time travel and vacuum lists, version-1 groups (newest file
 * only), legacy groups without __group/, members outside the group folder,
 * nested groups, encryption, and corrupt or failing storage, which must
 * give errors and never crash. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_format.h"
#include "tfs_vfs.h"
#include "vfs_test_util.h"
#include <tilefs/tfs_group.h>

#define CORPUS TFS_CORPUS_DIR

/* ---- helpers ------------------------------------------------------------ */

static struct tfs_vfs *mem(void)
{
	struct tfs_vfs *v;

	cr_assert_eq(tfs_vfs_mem_new(&v), TFS_E_OK);
	return v;
}

/* An empty group folder as TileDB creates it (groups.md §1). */
static void make_group(struct tfs_vfs *v, const char *path)
{
	char *p;

	vt_mkdir_p(v, path);
	p = vt_fmt("%s/__tiledb_group.tdb", path);
	vt_put(v, p, "", 0);
	free(p);
	p = vt_fmt("%s/__group", path);
	vt_mkdir_p(v, p);
	free(p);
	p = vt_fmt("%s/__meta", path);
	vt_mkdir_p(v, p);
	free(p);
}

/* A folder that classifies as an array (a __schema/ folder). */
static void make_array_dir(struct tfs_vfs *v, const char *path)
{
	char *p = vt_fmt("%s/__schema", path);

	vt_mkdir_p(v, p);
	free(p);
}

/* A member entry: version 2 unless v1. */
static struct tfs_group_entry ent(uint8_t type, bool relative, const char *uri,
				  const char *name, bool deleted)
{
	struct tfs_group_entry e = {
		.member_version = 2, .object_type = type, .relative = relative,
		.uri = (char *)uri, .name_set = name != NULL,
		.name = (char *)name, .deleted = deleted,
	};
	return e;
}

#define ARR TFS_GROUP_MEMBER_ARRAY
#define GRP TFS_GROUP_MEMBER_GROUP

/* Writes a details file named `name` in group g: version `version`,
 * entries (their member_version forced to 1 in a version-1 file). */
static void put_details(struct tfs_vfs *v, const char *g, const char *name,
			uint32_t version, const uint8_t *key,
			struct tfs_group_entry *e, size_t n)
{
	struct tfs_group_details gd = {version, e, n};
	struct tfs_buf payload, file;
	struct tfs_diag d;
	char *p = vt_fmt("%s/__group/%s", g, name);

	for (size_t i = 0; version == 1 && i < n; i++)
		e[i].member_version = 1;
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_group_details_serialize(&payload, &gd), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_generic_tile_encode(&file, payload.data, payload.len,
					     key, &d),
		     TFS_E_OK, "%s", d.msg);
	vt_put(v, p, file.data, file.len);
	tfs_buf_release(&payload);
	tfs_buf_release(&file);
	free(p);
}

/* "__t_t_<uuid n>" with the version suffix `suffix` ("" = none). */
static char *dname(uint64_t t, unsigned n, const char *suffix)
{
	return vt_fmt("__%" PRIu64 "_%" PRIu64 "_%032x%s", t, t, n, suffix);
}

static void put_v2(struct tfs_vfs *v, const char *g, uint64_t t,
		   struct tfs_group_entry *e, size_t n)
{
	char *name = dname(t, (unsigned)t, "_2");

	put_details(v, g, name, 2, NULL, e, n);
	free(name);
}

/* A metadata file of group g at time t with one INT32 key (or a deletion
 * of it when value < 0). */
static void put_meta(struct tfs_vfs *v, const char *g, uint64_t t,
		     const char *k, int32_t value)
{
	uint8_t val[4];
	struct tfs_meta_kv kv = {.key = (char *)k,
				 .key_len = (uint32_t)strlen(k),
				 .deleted = value < 0, .type = TFS_INT32,
				 .value_num = 1, .value = val};
	struct tfs_meta_file mf = {&kv, 1};
	struct tfs_buf payload, file;
	struct tfs_diag d;
	char *p = vt_fmt("%s/__meta/__%" PRIu64 "_%" PRIu64 "_%032x", g, t, t,
		      (unsigned)t);

	tfs_put_u32(val, (uint32_t)value);
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_meta_file_serialize(&payload, &mf), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_generic_tile_encode(&file, payload.data, payload.len,
					     NULL, &d),
		     TFS_E_OK);
	vt_put(v, p, file.data, file.len);
	tfs_buf_release(&payload);
	tfs_buf_release(&file);
	free(p);
}

static enum tfs_err open_at(struct tfs_vfs *v, const char *path, uint64_t t,
			    struct tfs_group **g, struct tfs_diag *d)
{
	struct tfs_group_opts o = {.vfs = v, .timestamp = t};

	tfs_diag_init(d);
	return tfs_group_open(path, &o, g, d);
}

static struct tfs_group *must_open(struct tfs_vfs *v, const char *path,
				   uint64_t t)
{
	struct tfs_group *g;
	struct tfs_diag d;
	enum tfs_err e = open_at(v, path, t, &g, &d);

	cr_assert_eq(e, TFS_E_OK, "open '%s': %s", path, tfs_diag_msg(&d));
	cr_assert_not_null(g);
	return g;
}

/* The keys of g's members joined by ',' (caller frees). */
static char *keys_of(const struct tfs_group *g)
{
	struct tfs_buf b;
	size_t len;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	for (size_t i = 0; i < tfs_group_member_count(g); i++) {
		const char *k = tfs_group_member(g, i)->key;

		cr_assert_eq(tfs_buf_printf(&b, "%s%s", i ? "," : "", k),
			     TFS_E_OK);
	}
	cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
	return (char *)tfs_buf_detach(&b, &len);
}

static void expect_keys(struct tfs_vfs *v, const char *path, uint64_t t,
			const char *want)
{
	struct tfs_group *g = must_open(v, path, t);
	char *got = keys_of(g);

	cr_expect_str_eq(got, want, "at %" PRIu64, t);
	tfs_free(got);
	tfs_group_close(g);
}

static const struct tfs_group_member *member_keyed(const struct tfs_group *g,
						   const char *key)
{
	for (size_t i = 0; i < tfs_group_member_count(g); i++)
		if (!strcmp(tfs_group_member(g, i)->key, key))
			return tfs_group_member(g, i);
	return NULL;
}

static const struct tfs_meta_kv *meta_keyed(const struct tfs_group *g,
					    const char *key)
{
	for (size_t i = 0; i < tfs_group_metadata_count(g); i++) {
		const struct tfs_meta_kv *kv = tfs_group_metadata(g, i);

		if (kv->key_len == strlen(key) &&
		    !memcmp(kv->key, key, kv->key_len))
			return kv;
	}
	return NULL;
}

/* ---- the corpus group --------------------------------------------------- */

Test(corpus, group)
{
	static const char *const names[] = {"dense_member", "sparse_member",
					    "sub"};
	struct tfs_group *g, *sub;
	const struct tfs_group_member *m;
	const struct tfs_meta_kv *kv;
	struct tfs_diag d;
	char *p;

	cr_assert_eq(tfs_group_open(CORPUS "/group/", NULL, &g, &d), TFS_E_OK,
		     "%s", d.msg);
	cr_expect_str_eq(tfs_group_path(g), CORPUS "/group");
	cr_expect_eq(tfs_group_format(g), TFS_GROUP_FORMAT_V2);
	cr_assert_eq(tfs_group_member_count(g), 3);
	cr_expect_null(tfs_group_member(g, 3));
	for (size_t i = 0; i < 3; i++) {
		m = tfs_group_member(g, i);
		cr_expect_str_eq(m->name, names[i]);
		cr_expect_str_eq(m->key, names[i]);
		cr_expect_str_eq(m->uri, names[i]);
		cr_expect(m->relative);
		cr_expect(m->inside);
		cr_expect_eq(m->type, i == 2 ? TFS_OBJECT_GROUP
					     : TFS_OBJECT_ARRAY);
		p = vt_fmt("%s/group/%s", CORPUS, names[i]);
		cr_expect_str_eq(m->path, p);
		free(p);
	}
	cr_assert_eq(tfs_group_metadata_count(g), 2);
	kv = tfs_group_metadata(g, 0);
	cr_expect_eq(kv->key_len, 5);
	cr_expect(!memcmp(kv->key, "title", 5));
	cr_expect_eq(kv->type, TFS_STRING_UTF8);
	cr_expect_eq(kv->value_num, 10);
	cr_expect(!memcmp(kv->value, "tilefs grp", 10));
	kv = tfs_group_metadata(g, 1);
	cr_expect(!memcmp(kv->key, "version", 7));
	cr_expect_eq(kv->type, TFS_INT32);
	cr_expect_eq(tfs_get_u32(kv->value), 3);

	/* The nested group, through the member's path; it has no __meta/. */
	m = tfs_group_member(g, 2);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_group_open(m->path, NULL, &sub, &d), TFS_E_OK, "%s",
		     d.msg);
	cr_assert_eq(tfs_group_member_count(sub), 1);
	cr_expect_str_eq(tfs_group_member(sub, 0)->name, "nested_member");
	cr_expect_eq(tfs_group_member(sub, 0)->type, TFS_OBJECT_ARRAY);
	cr_expect_eq(tfs_group_metadata_count(sub), 0);
	tfs_group_close(sub);
	tfs_group_close(g);

	/* Before its files were written, the group is empty. */
	g = must_open(NULL, CORPUS "/group", 1700000000000);
	cr_expect_eq(tfs_group_member_count(g), 0);
	cr_expect_eq(tfs_group_metadata_count(g), 0);
	tfs_group_close(g);
}

Test(corpus, not_a_group)
{
	struct tfs_group *g = (struct tfs_group *)1;
	struct tfs_diag d;

	cr_expect_eq(open_at(NULL, CORPUS "/group/dense_member", 0, &g, &d),
		     TFS_E_NOT_ARRAY);
	cr_expect_null(g);
	cr_expect(strstr(d.msg, "not a TileDB group"), "%s", d.msg);
	cr_expect_eq(open_at(NULL, CORPUS "/no_such_thing", 0, &g, &d),
		     TFS_E_NOT_FOUND);
	cr_expect_null(g);
	tfs_group_close(NULL);
}

/* ---- version 2: replay, deletions, time travel, vacuum ------------------ */

Test(v2, replay_with_deletions)
{
	struct tfs_vfs *v = mem();
	struct tfs_group_entry f10[] = {
		ent(ARR, true, "a", "a", false),
		ent(GRP, true, "b", "b", false),
		ent(ARR, false, "file:///elsewhere/c/", NULL, false),
	};
	struct tfs_group_entry f20[] = {
		ent(ARR, true, "a", "a", true),
		ent(ARR, true, "../outside/d", "d", false),
	};
	struct tfs_group_entry f30[] = {ent(ARR, true, "./x//a2/", "a", false)};
	const struct tfs_group_member *m;
	struct tfs_group *g;
	struct tfs_diag d;
	char *name, *line;

	make_group(v, "/G");
	put_v2(v, "/G", 10, f10, 3);
	put_v2(v, "/G", 20, f20, 2);
	put_v2(v, "/G", 30, f30, 1);

	expect_keys(v, "/G", 5, "");
	expect_keys(v, "/G", 10, "a,b,file:///elsewhere/c/");
	expect_keys(v, "/G", 25, "b,d,file:///elsewhere/c/");
	expect_keys(v, "/G", 0, "a,b,d,file:///elsewhere/c/");

	g = must_open(v, "/G", 0);
	m = member_keyed(g, "a");
	cr_assert_not_null(m);
	cr_expect_str_eq(m->uri, "./x//a2/");
	cr_expect_str_eq(m->path, "/G/x/a2");
	cr_expect(m->inside);
	m = member_keyed(g, "d");
	cr_expect_str_eq(m->path, "/G/../outside/d");
	cr_expect(m->relative);
	cr_expect_not(m->inside);
	m = member_keyed(g, "file:///elsewhere/c/");
	cr_expect_null(m->name);
	cr_expect_not(m->relative);
	cr_expect_not(m->inside);
	cr_expect_str_eq(m->path, "/elsewhere/c");
	cr_expect_eq(tfs_group_member(g, 1)->type, TFS_OBJECT_GROUP);
	tfs_group_close(g);

	/* A partly written file is skipped, even the newest. */
	vt_put(v, "/G/__group/__40_40_00000000000000000000000000000040_2.tmp",
	    "junk", 4);
	expect_keys(v, "/G", 0, "a,b,d,file:///elsewhere/c/");

	/* A vacuum list inside the window hides the file it names (by its
	 * full uri, as TileDB writes them); outside the window it does
	 * nothing. */
	name = dname(20, 20, "_2");
	line = vt_fmt("file:///somewhere/G/__group/%s\n", name);
	vt_put(v, "/G/__group/__20_35_00000000000000000000000000000035.vac",
	    line, strlen(line));
	expect_keys(v, "/G", 0, "a,b,file:///elsewhere/c/");
	expect_keys(v, "/G", 34, "a,b,d,file:///elsewhere/c/");
	free(line);
	free(name);

	/* Names that are not timestamped are an error, as in TileDB. */
	vt_put(v, "/G/__group/stray", "x", 1);
	cr_expect_eq(open_at(v, "/G", 0, &g, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "stray"), "%s", d.msg);
	tfs_vfs_free(v);
}

Test(v2, every_file_must_be_version_2)
{
	struct tfs_vfs *v = mem();
	struct tfs_group_entry e1[] = {ent(ARR, true, "old", NULL, false)};
	struct tfs_group_entry e2[] = {ent(ARR, true, "new", NULL, false)};
	struct tfs_group *g;
	struct tfs_diag d;
	char *n1 = dname(10, 1, "");

	make_group(v, "/G");
	put_details(v, "/G", n1, 1, NULL, e1, 1);
	put_v2(v, "/G", 20, e2, 1);
	cr_expect_eq(open_at(v, "/G", 0, &g, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "version 1 in a group of version 2"), "%s",
		  d.msg);
	/* Before the version-2 file, the version-1 file alone is fine. */
	expect_keys(v, "/G", 15, "old");
	free(n1);
	tfs_vfs_free(v);
}

/* ---- version 1 ----------------------------------------------------------- */

Test(v1, newest_file_only)
{
	struct tfs_vfs *v = mem();
	struct tfs_group_entry e10[] = {
		ent(ARR, true, "x", NULL, false),
		ent(ARR, true, "y", "why", false),
	};
	struct tfs_group_entry e20[] = {ent(ARR, true, "x", NULL, false)};
	struct tfs_group_entry e30[] = {ent(GRP, true, "z", NULL, false)};
	char *n10 = dname(10, 10, ""), *n20 = dname(20, 20, "");
	char *n30 = dname(30, 30, "_1");
	struct tfs_group *g;

	make_group(v, "/G");
	put_details(v, "/G", n10, 1, NULL, e10, 2);
	put_details(v, "/G", n20, 1, NULL, e20, 1);
	expect_keys(v, "/G", 15, "why,x");
	expect_keys(v, "/G", 0, "x");
	/* TileDB >= 2.19 appends "_1" to version-1 names. */
	put_details(v, "/G", n30, 1, NULL, e30, 1);
	g = must_open(v, "/G", 0);
	cr_expect_eq(tfs_group_format(g), TFS_GROUP_FORMAT_V1);
	cr_assert_eq(tfs_group_member_count(g), 1);
	cr_expect_str_eq(tfs_group_member(g, 0)->key, "z");
	cr_expect_eq(tfs_group_member(g, 0)->type, TFS_OBJECT_GROUP);
	tfs_group_close(g);
	free(n10);
	free(n20);
	free(n30);
	tfs_vfs_free(v);
}

/* ---- legacy groups (only __tiledb_group.tdb) ----------------------------- */

Test(legacy, members_from_the_listing)
{
	struct tfs_vfs *v = mem();
	struct tfs_group *g;
	const struct tfs_group_member *m;

	vt_mkdir_p(v, "/L/__meta");
	vt_put(v, "/L/__tiledb_group.tdb", "", 0);
	make_array_dir(v, "/L/arr");
	vt_mkdir_p(v, "/L/inner");
	vt_put(v, "/L/inner/__tiledb_group.tdb", "", 0);
	vt_mkdir_p(v, "/L/plain");
	vt_put(v, "/L/file.txt", "hello", 5);
	put_meta(v, "/L", 10, "k", 7);

	g = must_open(v, "/L", 0);
	cr_expect_eq(tfs_group_format(g), TFS_GROUP_FORMAT_LEGACY);
	cr_assert_eq(tfs_group_member_count(g), 2);
	m = tfs_group_member(g, 0);
	cr_expect_str_eq(m->key, "arr");
	cr_expect_null(m->name);
	cr_expect_str_eq(m->uri, "arr");
	cr_expect_str_eq(m->path, "/L/arr");
	cr_expect(m->relative);
	cr_expect(m->inside);
	cr_expect_eq(m->type, TFS_OBJECT_ARRAY);
	m = tfs_group_member(g, 1);
	cr_expect_str_eq(m->key, "inner");
	cr_expect_eq(m->type, TFS_OBJECT_GROUP);
	cr_assert_eq(tfs_group_metadata_count(g), 1);
	cr_expect_eq(tfs_get_u32(meta_keyed(g, "k")->value), 7);
	tfs_group_close(g);

	/* The inner legacy group is empty. */
	expect_keys(v, "/L/inner", 0, "");
	tfs_vfs_free(v);
}

/* ---- nesting, members outside the folder, metadata ---------------------- */

Test(nested, groups_and_outside_members)
{
	struct tfs_vfs *v = mem();
	struct tfs_group_entry outer[] = {
		ent(GRP, true, "inner", "inner", false),
		ent(ARR, false, "file:///data/far", "far", false),
		ent(ARR, false, "s3://bucket/arr", "remote", false),
		ent(GRP, true, ".", "self", false),
	};
	struct tfs_group_entry inner[] = {
		ent(ARR, true, "leaf", "leaf", false),
		ent(GRP, true, "..", "up", false),
	};
	const struct tfs_group_member *m;
	struct tfs_group *g, *ig;

	make_group(v, "/data/G");
	make_group(v, "/data/G/inner");
	make_array_dir(v, "/data/G/inner/leaf");
	make_array_dir(v, "/data/far");
	put_v2(v, "/data/G", 10, outer, 4);
	put_v2(v, "/data/G/inner", 10, inner, 2);
	put_meta(v, "/data/G", 10, "kept", 1);
	put_meta(v, "/data/G", 11, "gone", 2);
	put_meta(v, "/data/G", 12, "gone", -1);

	g = must_open(v, "/data/G", 0);
	m = member_keyed(g, "far");
	cr_expect_str_eq(m->path, "/data/far");
	cr_expect_not(m->inside);
	m = member_keyed(g, "remote");
	cr_expect_null(m->path);
	cr_expect_str_eq(m->uri, "s3://bucket/arr");
	m = member_keyed(g, "self");
	cr_expect_str_eq(m->path, "/data/G");
	cr_expect_not(m->inside);
	m = member_keyed(g, "inner");
	cr_expect(m->inside);
	cr_expect_eq(tfs_group_metadata_count(g), 1);
	cr_expect_not_null(meta_keyed(g, "kept"));
	cr_expect_null(meta_keyed(g, "gone"));

	ig = must_open(v, m->path, 0);
	cr_expect_str_eq(member_keyed(ig, "leaf")->path, "/data/G/inner/leaf");
	m = member_keyed(ig, "up");
	cr_expect_str_eq(m->path, "/data/G/inner/..");
	cr_expect_not(m->inside);
	tfs_group_close(ig);
	tfs_group_close(g);

	/* Metadata time travel: before the deletion the key is there. */
	g = must_open(v, "/data/G", 11);
	cr_expect_eq(tfs_get_u32(meta_keyed(g, "gone")->value), 2);
	tfs_group_close(g);
	tfs_vfs_free(v);
}

/* ---- keys, corruption and failing storage -------------------------------- */

Test(errors, encrypted_group)
{
	static const uint8_t key[32] = {1, 2, 3};
	static const uint8_t other[32] = {9};
	struct tfs_vfs *v = mem();
	struct tfs_group_entry e[] = {ent(ARR, true, "a", "a", false)};
	struct tfs_group_opts o = {.vfs = v};
	struct tfs_group *g;
	struct tfs_diag d;
	char *n = dname(10, 10, "_2");

	make_group(v, "/G");
	put_details(v, "/G", n, 2, key, e, 1);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_group_open("/G", &o, &g, &d), TFS_E_KEY);
	cr_expect(strstr(d.msg, "group is encrypted"), "%s", d.msg);
	o.key = other;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_group_open("/G", &o, &g, &d), TFS_E_KEY);
	o.key = key;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_group_open("/G", &o, &g, &d), TFS_E_OK, "%s", d.msg);
	cr_expect_eq(tfs_group_member_count(g), 1);
	tfs_group_close(g);
	free(n);
	tfs_vfs_free(v);
}

/* Copies the corpus group's details file into a mem group. */
static uint8_t *corpus_details_file(size_t *len, char **name)
{
	struct tfs_vfs *p;
	struct tfs_dirlist l;
	struct tfs_diag d;
	uint8_t *buf;
	char *path;

	cr_assert_eq(tfs_vfs_posix_new(&p), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(p, CORPUS "/group/__group", &l, &d),
		     TFS_E_OK);
	cr_assert_eq(l.count, 1);
	*name = strdup(l.names[0]);
	path = vt_fmt("%s/group/__group/%s", CORPUS, l.names[0]);
	cr_assert_eq(tfs_vfs_read_all(p, path, 1 << 20, &buf, len, &d),
		     TFS_E_OK);
	free(path);
	tfs_dirlist_release(&l);
	tfs_vfs_free(p);
	return buf;
}

Test(errors, truncated_and_corrupt_files)
{
	struct tfs_vfs *v = mem();
	struct tfs_group *g;
	struct tfs_diag d;
	size_t len;
	char *name, *path;
	uint8_t *file = corpus_details_file(&len, &name);
	uint8_t *bad = tfs_memdup(file, len);

	make_group(v, "/G");
	path = vt_fmt("/G/__group/%s", name);
	vt_put(v, path, file, len);
	expect_keys(v, "/G", 0, "dense_member,sparse_member,sub");

	/* Every truncation of the file is an error naming it. */
	for (size_t k = 0; k < len; k++) {
		vt_put(v, path, file, k);
		cr_expect_neq(open_at(v, "/G", 0, &g, &d), TFS_E_OK,
			      "length %zu", k);
		cr_expect_null(g);
		cr_expect(strstr(d.msg, name), "length %zu: %s", k, d.msg);
	}
	/* Every single-byte corruption either still reads or fails cleanly
	 * (GZIP and its checksum catch most). */
	for (size_t k = 0; k < len; k++) {
		enum tfs_err e;

		memcpy(bad, file, len);
		bad[k] ^= 0x5a;
		vt_put(v, path, bad, len);
		e = open_at(v, "/G", 0, &g, &d);
		if (e == TFS_E_OK)
			tfs_group_close(g);
		else
			cr_expect_null(g);
	}
	free(path);
	free(name);
	tfs_free(bad);
	tfs_free(file);
	tfs_vfs_free(v);
}

Test(errors, truncated_payload_in_a_valid_tile)
{
	struct tfs_vfs *v = mem();
	struct tfs_group_entry e[] = {ent(ARR, true, "abc", "abc", false)};
	struct tfs_group_details gd = {2, e, 1};
	struct tfs_buf payload, file;
	struct tfs_group *g;
	struct tfs_diag d;

	make_group(v, "/G");
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_group_details_serialize(&payload, &gd), TFS_E_OK);
	for (size_t k = 0; k < payload.len; k++) {
		tfs_buf_init(&file, TFS_BUF_NO_MAX);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_generic_tile_encode(&file, payload.data, k,
						     NULL, &d),
			     TFS_E_OK);
		vt_put(v, "/G/__group/__10_10_0000000000000000000000000000000a_2",
		    file.data, file.len);
		cr_expect_eq(open_at(v, "/G", 0, &g, &d), TFS_E_CORRUPT,
			     "payload %zu", k);
		cr_expect(strstr(d.msg, "group details"), "%s", d.msg);
		tfs_buf_release(&file);
	}
	tfs_buf_release(&payload);
	tfs_vfs_free(v);
}

/* A copy of the corpus group (details, metadata, marker) in a mem vfs. */
static struct tfs_vfs *mem_group(void)
{
	struct tfs_vfs *v = mem(), *p;
	static const char *const dirs[] = {"__group", "__meta"};
	struct tfs_diag d;

	cr_assert_eq(tfs_vfs_posix_new(&p), TFS_E_OK);
	make_group(v, "/G");
	for (size_t i = 0; i < 2; i++) {
		struct tfs_dirlist l;
		char *dir = vt_fmt("%s/group/%s", CORPUS, dirs[i]);

		tfs_diag_init(&d);
		cr_assert_eq(tfs_vfs_list(p, dir, &l, &d), TFS_E_OK);
		for (size_t k = 0; k < l.count; k++) {
			char *src = vt_fmt("%s/%s", dir, l.names[k]);
			char *dst = vt_fmt("/G/%s/%s", dirs[i], l.names[k]);
			uint8_t *buf;
			size_t len;

			cr_assert_eq(tfs_vfs_read_all(p, src, 1 << 20, &buf,
						      &len, &d),
				     TFS_E_OK);
			vt_put(v, dst, buf, len);
			tfs_free(buf);
			free(src);
			free(dst);
		}
		tfs_dirlist_release(&l);
		free(dir);
	}
	tfs_vfs_free(p);
	return v;
}

Test(faults, eio_and_short_reads_at_every_call)
{
	static const enum tfs_fault_kind kinds[] = {TFS_FAULT_EIO,
						    TFS_FAULT_SHORT};
	struct tfs_vfs *m = mem_group(), *f;
	struct tfs_group *g;
	struct tfs_diag d;
	unsigned long calls, failed = 0;

	cr_assert_eq(tfs_vfs_faulty_new(m, &f), TFS_E_OK);
	g = must_open(f, "/G", 0);
	tfs_group_close(g);
	calls = tfs_vfs_faulty_calls(f);
	cr_assert_gt(calls, 3);
	for (size_t k = 0; k < 2; k++) {
		for (unsigned long n = 0; n < calls; n++) {
			enum tfs_err e;

			tfs_vfs_faulty_arm(f, kinds[k], n, true);
			e = open_at(f, "/G", 0, &g, &d);
			tfs_vfs_faulty_arm(f, TFS_FAULT_NONE, 0, false);
			if (e == TFS_E_OK) {
				tfs_group_close(g);
				continue;
			}
			cr_expect_null(g);
			cr_expect(d.msg[0], "call %lu: no message", n);
			failed++;
		}
	}
	/* A fault anywhere fails the open: nothing is read twice or
	 * optional. */
	cr_expect_eq(failed, 2 * calls);
	tfs_vfs_free(f);
	tfs_vfs_free(m);
}

Test(faults, allocation_failures)
{
	struct tfs_vfs *m = mem_group();
	struct tfs_group *g;
	struct tfs_diag d;
	bool done = false;
	long n;

	for (n = 0; n < 10000 && !done; n++) {
		enum tfs_err e;

		tfs_alloc_fail_after(n);
		e = open_at(m, "/G", 0, &g, &d);
		tfs_alloc_fail_after(-1);
		if (e == TFS_E_OK) {
			cr_expect_eq(tfs_group_member_count(g), 3);
			tfs_group_close(g);
			done = true;
		} else {
			cr_expect_eq(e, TFS_E_NOMEM, "after %ld: %s", n,
				     d.msg);
			cr_expect_null(g);
		}
	}
	cr_expect(done);
	/* Every allocation of the open failed once. */
	cr_expect_gt(n, 20);
	tfs_vfs_free(m);
}
