/* The fragment module against the corpus: every array (and every NAME@T
 * variant) is opened and compared with what TileDB itself reported in the
 * JSON next to it: current schema, listed fragments, fragments to vacuum,
 * metadata, and the non-empty domain of the visible fragments. Then
 * visibility rules on modified copies held in the in-memory backend, fault
 * and allocation-failure injection during open, keys, and the lazy loaders.
 * The corpus is only read; modified copies live in memory or in a
 * temporary folder. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_test.h"
#include "tfs_alloc.h"
#include "fragment_load_internal.h"
#include "tfs_fragment.h"
#include "tfs_mem.h"
#include "vfs_test_util.h"

#define CORPUS TFS_CORPUS_DIR

/* ---- helpers ------------------------------------------------------------ */

static struct tfs_vfs *posix(void)
{
	struct tfs_vfs *v;

	cr_assert_eq(tfs_vfs_posix_new(&v), TFS_E_OK);
	return v;
}

static bool parse_hex_key(const char *hex, uint8_t key[32])
{
	if (!hex || strlen(hex) != 64)
		return false;
	for (int i = 0; i < 32; i++) {
		unsigned b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return false;
		key[i] = (uint8_t)b;
	}
	return true;
}

static enum tfs_err open_at(struct tfs_vfs *v, const char *path,
			    const uint8_t *key, uint64_t t1,
			    struct tfs_arraydir **a, struct tfs_diag *d)
{
	struct tfs_arraydir_opts o = {.key = key, .t0 = 0, .t1 = t1};

	tfs_diag_init(d);
	return tfs_arraydir_open(v, path, &o, a, d);
}

static struct tfs_arraydir *must_open(struct tfs_vfs *v, const char *path,
				      const uint8_t *key, uint64_t t1)
{
	struct tfs_arraydir *a;
	struct tfs_diag d;
	enum tfs_err err = open_at(v, path, key, t1, &a, &d);

	cr_assert_eq(err, TFS_E_OK, "open '%s': %s (%s)", path,
		     tfs_diag_msg(&d), tfs_strerror(err));
	return a;
}

static const struct tfs_fragment *listed_named(const struct tfs_arraydir *a,
					       const char *name)
{
	for (size_t i = 0; i < a->listed_num; i++)
		if (!strcmp(a->listed[i]->name, name))
			return a->listed[i];
	return NULL;
}

/* ---- comparing with the corpus JSON -------------------------------------- */

static uint64_t jnum_u64(const struct jv *v)
{
	cr_assert(v && v->t == J_NUM);
	return strtoull(v->text, NULL, 10);
}

/* One value of datatype type at p against a JSON number (or the
 * "NaN"/"Infinity" strings). */
static bool value_matches(uint8_t type, const uint8_t *p, const struct jv *j)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
		return j->t == J_NUM &&
		       tfs_value_as_i64(type, p) == strtoll(j->text, NULL, 10);
	case TFS_CLASS_UNSIGNED:
		return j->t == J_NUM &&
		       tfs_value_as_u64(type, p) == strtoull(j->text, NULL, 10);
	case TFS_CLASS_FLOAT: {
		double got = tfs_value_as_f64(type, p), want;

		if (j->t == J_STR) {
			if (!strcmp(j->text, "NaN"))
				return got != got;
			want = strtod(j->text, NULL);
		} else if (j->t == J_NUM) {
			want = type == TFS_FLOAT32
				       ? (double)strtof(j->text, NULL)
				       : strtod(j->text, NULL);
		} else {
			return false;
		}
		return memcmp(&got, &want, sizeof(got)) == 0 || got == want;
	}
	default:
		return false;
	}
}

/* A range of dimension dim against JSON [lo, hi]. */
static void check_range(const struct tfs_dim *dim, const struct tfs_range *r,
			const struct jv *j, const char *what)
{
	cr_assert(j && j->t == J_ARR && j->n == 2, "%s: bad JSON range",
		  what);
	if (dim->var) {
		cr_assert(j->items[0].t == J_STR && j->items[1].t == J_STR);
		cr_assert(json_str_eq(&j->items[0], r->lo, r->lo_len),
			  "%s: low '%.*s' != '%s'", what, (int)r->lo_len,
			  (const char *)r->lo, j->items[0].text);
		cr_assert(json_str_eq(&j->items[1], r->hi, r->hi_len),
			  "%s: high '%.*s' != '%s'", what, (int)r->hi_len,
			  (const char *)r->hi, j->items[1].text);
		return;
	}
	cr_assert(value_matches(dim->type, r->lo, &j->items[0]),
		  "%s: low != %s", what, j->items[0].text);
	cr_assert(value_matches(dim->type, r->hi, &j->items[1]),
		  "%s: high != %s", what, j->items[1].text);
}

static void check_fragment(const struct tfs_arraydir *a,
			   const struct tfs_fragment *f, const struct jv *jf,
			   const char *label)
{
	const struct jv *ts = json_get(jf, "timestamps");
	const struct jv *ned = json_get(jf, "non_empty_domain");
	const struct jv *name = json_get(jf, "name");

	cr_assert_str_eq(f->name, name->text, "%s", label);
	cr_assert_eq(f->name_info.t1, jnum_u64(&ts->items[0]), "%s %s", label,
		     f->name);
	cr_assert_eq(f->name_info.t2, jnum_u64(&ts->items[1]), "%s %s", label,
		     f->name);
	cr_assert_eq(f->footer.version,
		     jnum_u64(json_get(jf, "format_version")), "%s %s", label,
		     f->name);
	cr_assert_eq(f->footer.dense, json_get(jf, "dense")->b, "%s %s", label,
		     f->name);
	cr_assert_eq(f->cell_num, jnum_u64(json_get(jf, "cell_num")),
		     "%s %s: cell_num %" PRIu64, label, f->name, f->cell_num);
	cr_assert_eq(f->consolidated_meta,
		     json_get(jf, "consolidated_metadata")->b, "%s %s", label,
		     f->name);
	cr_assert_str_eq(f->schema->name, json_get(jf, "schema")->text,
			 "%s %s", label, f->name);
	cr_assert_eq(ned->n, f->schema->dim_num, "%s %s", label, f->name);
	for (uint32_t k = 0; k < f->schema->dim_num; k++) {
		char *what = vt_fmt("%s %s dim %u", label, f->name, k);

		check_range(&f->schema->dims[k], &f->footer.ned[k],
			    &ned->items[k], what);
		free(what);
	}
	(void)a;
}

/* Union of the visible fragments' non-empty domains against the JSON's
 * non_empty_domain (what TileDB reports at the opening timestamp). */
static void check_union_ned(const struct tfs_arraydir *a, const struct jv *j,
			    const char *label)
{
	const struct tfs_schema *s = a->schema;
	size_t n = 0;

	for (size_t i = 0; i < a->fragment_num; i++)
		n += !a->fragments[i]->footer.empty;
	if (!j || j->t == J_NULL) {
		cr_assert_eq(n, 0, "%s: expected no non-empty domain", label);
		return;
	}
	cr_assert_gt(n, 0, "%s: no visible fragment", label);
	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];
		struct tfs_range u = {NULL, NULL, 0, 0};
		char *what;

		for (size_t i = 0; i < a->fragment_num; i++) {
			const struct tfs_fragment *f = a->fragments[i];
			const struct tfs_range *r = &f->footer.ned[k];

			if (f->footer.empty)
				continue;
			if (!u.lo) {
				u = *r;
				continue;
			}
			if (dim->var) {
				if (tfs_bytes_cmp(r->lo, r->lo_len, u.lo, u.lo_len) < 0) {
					u.lo = r->lo;
					u.lo_len = r->lo_len;
				}
				if (tfs_bytes_cmp(r->hi, r->hi_len, u.hi, u.hi_len) > 0) {
					u.hi = r->hi;
					u.hi_len = r->hi_len;
				}
			} else {
				if (tfs_value_cmp(dim->type, r->lo, u.lo) < 0)
					u.lo = r->lo;
				if (tfs_value_cmp(dim->type, r->hi, u.hi) > 0)
					u.hi = r->hi;
			}
		}
		what = vt_fmt("%s: non_empty_domain dim %u", label, k);
		check_range(dim, &u, &j->items[k], what);
		free(what);
	}
}

static char *hex_of(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);

	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	s[2 * n] = '\0';
	return s;
}

static void check_metadata(const struct tfs_arraydir *a, const struct jv *j,
			   const char *label)
{
	const struct tfs_metadata *m = &a->metadata;

	cr_assert(j && j->t == J_OBJ, "%s: metadata", label);
	cr_assert_eq(m->count, j->n, "%s: %zu metadata keys, expected %zu",
		     label, m->count, j->n);
	for (size_t i = 1; i < m->count; i++)
		cr_assert_lt(tfs_bytes_cmp(m->entries[i - 1].key,
					   m->entries[i - 1].key_len,
					   m->entries[i].key, m->entries[i].key_len),
			     0, "%s: metadata not sorted", label);
	for (size_t i = 0; i < j->n; i++) {
		const char *key = j->keys[i];
		const struct jv *e = &j->items[i];
		const struct jv *vals = json_get(e, "values");
		const struct tfs_meta_kv *kv = NULL;
		size_t vsize;

		for (size_t k = 0; k < m->count; k++)
			if (m->entries[k].key_len == strlen(key) &&
			    !memcmp(m->entries[k].key, key, strlen(key)))
				kv = &m->entries[k];
		cr_assert_not_null(kv, "%s: metadata key '%s' missing", label,
				   key);
		cr_assert_str_eq(tfs_datatype_name(kv->type),
				 json_get(e, "type")->text, "%s: key '%s'", label,
				 key);
		vsize = kv->value_num * tfs_datatype_size(kv->type);
		if (kv->type == TFS_BLOB) {
			char *h = hex_of(kv->value, vsize);

			cr_assert_eq(vals->n, 1);
			cr_assert_str_eq(h, vals->items[0].text, "%s: key '%s'",
					 label, key);
			free(h);
		} else if (tfs_datatype_is_string(kv->type)) {
			cr_assert_eq(vals->n, 1);
			cr_assert(json_str_eq(&vals->items[0], kv->value,
					      vsize),
				  "%s: key '%s'", label, key);
		} else {
			size_t sz = tfs_datatype_size(kv->type);

			cr_assert_eq(vals->n, kv->value_num, "%s: key '%s'", label,
				     key);
			for (size_t v = 0; v < vals->n; v++)
				cr_assert(value_matches(kv->type,
							kv->value + v * sz,
							&vals->items[v]),
					  "%s: key '%s' value %zu != %s", label,
					  key, v, vals->items[v].text);
		}
	}
}

/* Everything the JSON says about the array that this module decides. */
static void check_against_json(const struct tfs_arraydir *a,
			       const struct jv *j, const char *label)
{
	const struct jv *schema = json_get(j, "schema");
	const struct jv *tr = json_get(schema, "timestamp_range");
	const struct jv *frags = json_get(j, "fragments");
	const struct jv *vac = json_get(j, "fragments_to_vacuum");

	cr_assert_eq(a->schema->version, jnum_u64(json_get(j, "format_version")),
		     "%s: schema version", label);
	cr_assert_eq(a->schema->t1, jnum_u64(&tr->items[0]),
		     "%s: schema '%s' t1", label, a->schema->name);
	cr_assert_eq(a->schema->t2, jnum_u64(&tr->items[1]),
		     "%s: schema '%s' t2", label, a->schema->name);
	cr_assert_eq(a->schema->array_type == TFS_SPARSE,
		     !strcmp(json_get(j, "array_type")->text, "sparse"), "%s",
		     label);
	cr_assert_eq(a->listed_num, frags->n, "%s: %zu listed, expected %zu",
		     label, a->listed_num, frags->n);
	for (size_t i = 0; i < frags->n; i++)
		check_fragment(a, a->listed[i], &frags->items[i], label);
	cr_assert_eq(a->to_vacuum_num, vac->n, "%s: %zu to vacuum, expected %zu",
		     label, a->to_vacuum_num, vac->n);
	for (size_t i = 0; i < vac->n; i++)
		cr_assert_str_eq(a->to_vacuum[i], vac->items[i].text, "%s",
				 label);
	check_metadata(a, json_get(j, "metadata"), label);
	check_union_ned(a, json_get(j, "non_empty_domain"), label);
}

/* Loads every lazy part of every fragment and checks that the data files
 * the footer describes exist with those sizes (fragment.md §2 naming). */
static void check_lazy(struct tfs_vfs *v, struct tfs_arraydir *a,
		       const char *label)
{
	for (size_t i = 0; i < a->frag_pool_num; i++) {
		struct tfs_fragment *f = a->frag_pool[i];
		const struct tfs_rtree *rt;
		const struct tfs_strlist *pc;
		struct tfs_diag d;

		tfs_diag_init(&d);
		for (uint32_t s = 0; s < f->footer.slot_num; s++) {
			const struct tfs_slot_tiles *t, *t2;
			const uint64_t *sizes[3] = {
				f->footer.file_sizes, f->footer.file_var_sizes,
				f->footer.file_validity_sizes,
			};

			cr_assert_eq(tfs_fragment_slot_tiles(a, f, s, &t, &d),
				     TFS_E_OK, "%s %s slot %u: %s", label,
				     f->name, s, tfs_diag_msg(&d));
			cr_assert_eq(tfs_fragment_slot_tiles(a, f, s, &t2, &d),
				     TFS_E_OK);
			cr_assert_eq(t, t2);
			if (f->tile_num)
				cr_assert_not_null(t->offsets);
			for (int k = 0; k < 3; k++) {
				struct tfs_stat st;
				char *p;

				if (k == 2 && f->footer.version < 7)
					continue;
				if (!sizes[k][s])
					continue;
				p = tfs_fragment_file_path(f, s,
							   (enum tfs_file_kind)k);
				cr_assert_not_null(p);
				cr_assert_eq(tfs_vfs_stat(v, p, &st, &d), TFS_E_OK);
				cr_assert(st.exists && st.size == sizes[k][s],
					  "%s: '%s' should have %" PRIu64
					  " bytes",
					  label, p, sizes[k][s]);
				tfs_free(p);
			}
		}
		cr_assert_eq(tfs_fragment_rtree(a, f, &rt, &d), TFS_E_OK,
			     "%s %s: %s", label, f->name, tfs_diag_msg(&d));
		if (!f->footer.dense)
			cr_assert_eq(rt->leaf_num, f->tile_num);
		cr_assert_eq(tfs_fragment_processed(a, f, &pc, &d), TFS_E_OK,
			     "%s %s: %s", label, f->name, tfs_diag_msg(&d));
	}
}

/* ---- the corpus, file by file -------------------------------------------- */

/* name without ".json" and the timestamp after '@' (UINT64_MAX if none). */
static char *array_of(const char *json_name, uint64_t *t)
{
	const char *at = strchr(json_name, '@');
	size_t n = at ? (size_t)(at - json_name)
		      : strlen(json_name) - strlen(".json");

	*t = at ? strtoull(at + 1, NULL, 10) : UINT64_MAX;
	return tfs_strndup(json_name, n);
}

static void check_array_json(struct tfs_vfs *v, const char *path,
			     const struct jv *j, uint64_t t,
			     const char *label)
{
	const struct jv *kh = json_get(j, "key_hex");
	const struct jv *opened = json_get(j, "opened_at");
	uint8_t key[32];
	bool has_key = kh && kh->t == J_STR && parse_hex_key(kh->text, key);
	struct tfs_arraydir *a;

	if (opened && opened->t == J_NUM)
		cr_assert_eq(jnum_u64(opened), t, "%s", label);
	a = must_open(v, path, has_key ? key : NULL, t);
	check_against_json(a, j, label);
	check_lazy(v, a, label);
	tfs_arraydir_close(a);
}

static void check_group_json(struct tfs_vfs *v, const char *path,
			     const struct jv *j)
{
	const struct jv *members = json_get(j, "members");
	enum tfs_object_kind kind;
	struct tfs_arraydir *a;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_object_kind_of(v, path, &kind, &d), TFS_E_OK);
	cr_assert_eq(kind, TFS_OBJ_GROUP);
	cr_assert_eq(open_at(v, path, NULL, UINT64_MAX, &a, &d),
		     TFS_E_NOT_ARRAY);
	cr_assert_null(a);
	for (size_t i = 0; i < members->n; i++) {
		const struct jv *m = &members->items[i];
		const struct jv *content = json_get(m, "content");
		char *p = vt_fmt("%s/%s", path, json_get(m, "path")->text);

		if (!strcmp(json_get(m, "type")->text, "group"))
			check_group_json(v, p, content);
		else
			check_array_json(v, p, content, UINT64_MAX, p);
		free(p);
	}
}

static void check_corpus_dir(const char *dir, size_t *checked)
{
	struct tfs_vfs *v = posix();
	DIR *dp = opendir(dir);
	struct dirent *e;

	cr_assert_not_null(dp, "%s: %s", dir, strerror(errno));
	while ((e = readdir(dp))) {
		const char *name = e->d_name;
		size_t n = strlen(name);
		struct jv *j;
		char *jpath, *arr, *apath;
		uint64_t t;

		if (n < 6 || strcmp(name + n - 5, ".json"))
			continue;
		jpath = vt_fmt("%s/%s", dir, name);
		j = json_load(jpath);
		cr_assert_not_null(j, "%s: cannot parse", jpath);
		arr = array_of(name, &t);
		apath = vt_fmt("%s/%s", dir, arr);
		if (json_get(j, "object") &&
		    !strcmp(json_get(j, "object")->text, "group"))
			check_group_json(v, apath, j);
		else
			check_array_json(v, apath, j, t, name);
		(*checked)++;
		free(apath);
		tfs_free(arr);
		free(jpath);
		json_free(j);
	}
	closedir(dp);
	tfs_vfs_free(v);
}

Test(corpus, every_array_and_timestamp)
{
	size_t checked = 0;

	check_corpus_dir(CORPUS, &checked);
	cr_assert_geq(checked, 60, "only %zu JSON files", checked);
	checked = 0;
	check_corpus_dir(CORPUS "/legacy", &checked);
	cr_assert_geq(checked, 3);
}

Test(corpus, unreadable_legacy)
{
	struct tfs_vfs *v = posix();
	struct tfs_arraydir *a;
	struct tfs_diag d;

	cr_assert_eq(open_at(v, CORPUS "/legacy/experimental_array_vUINT32_MAX",
			     NULL, UINT64_MAX, &a, &d),
		     TFS_E_UNSUPPORTED);
	cr_assert(strstr(d.msg, "unsupported format version 4294967295"), "%s",
		  d.msg);
	cr_assert_null(a);
	/* TileDB itself cannot read this one; we must only fail cleanly or
	 * succeed. */
	if (open_at(v, CORPUS "/legacy/dense_array_v1_3_0", NULL, UINT64_MAX, &a,
		    &d) == TFS_E_OK)
		tfs_arraydir_close(a);
	tfs_vfs_free(v);
}

/* ---- visible fragments at a time ---------------------------------------- */

Test(visibility, counts_at_timestamps)
{
	static const struct {
		const char *array;
		uint64_t t;
		size_t visible, deletes;
	} cases[] = {
		{"dense_fragments_overlap", UINT64_MAX, 4, 0},
		{"dense_fragments_overlap", 1700000002000, 2, 0},
		{"dense_fragments_overlap", 1700000000999, 0, 0},
		{"sparse_timetravel", 1700000001000, 1, 0},
		{"sparse_timetravel", 1700000002500, 2, 0},
		{"schema_evolution", 1700000001000, 1, 0},
		/* sparse v22: the .vac overlaps any window touching it */
		{"consolidated_fragments", UINT64_MAX, 1, 0},
		{"consolidated_fragments", 1700000002000, 1, 0},
		{"consolidated_fragments", 1700000000500, 0, 0},
		{"consolidated_commits", 1700000002000, 2, 0},
		{"consolidated_fragment_meta", 1700000003000, 3, 0},
		{"many_fragments", 1700000050000, 50, 0},
		{"many_fragments", UINT64_MAX, 120, 0},
		{"delete_condition", UINT64_MAX, 3, 1},
		{"delete_condition", 1700000002000, 2, 0},
		{"delete_condition", 1700000003000, 2, 1},
		{"empty_dense", UINT64_MAX, 0, 0},
	};
	struct tfs_vfs *v = posix();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = vt_fmt("%s/%s", CORPUS, cases[i].array);
		struct tfs_arraydir *a = must_open(v, p, NULL, cases[i].t);

		cr_assert_eq(a->fragment_num, cases[i].visible,
			     "%s@%" PRIu64 ": %zu visible", cases[i].array,
			     cases[i].t, a->fragment_num);
		cr_assert_eq(a->delete_num, cases[i].deletes, "%s@%" PRIu64,
			     cases[i].array, cases[i].t);
		for (size_t k = 1; k < a->fragment_num; k++)
			cr_assert_leq(a->fragments[k - 1]->name_info.t1,
				      a->fragments[k]->name_info.t1);
		cr_assert_eq(a->t0, 0);
		if (cases[i].t != UINT64_MAX)
			cr_assert_eq(a->t1, cases[i].t);
		else
			cr_assert_gt(a->t1, 1700000000000);
		tfs_arraydir_close(a);
		free(p);
	}
	tfs_vfs_free(v);
}

Test(visibility, delete_condition_details)
{
	struct tfs_vfs *v = posix();
	struct tfs_arraydir *a =
		must_open(v, CORPUS "/delete_condition", NULL, UINT64_MAX);

	cr_assert_eq(a->delete_num, 1);
	cr_assert_str_eq(a->deletes[0].marker,
			 "__commits/__1700000003000_1700000003000_7551c421225afdba8259d1e9f46a5a58_22.del");
	cr_assert_eq(a->deletes[0].t1, 1700000003000);
	cr_assert_eq(a->deletes[0].t2, 1700000003000);
	cr_assert(!a->has_updates);
	tfs_arraydir_close(a);
	tfs_vfs_free(v);
}

/* A delete embedded in a .con file counts like a .del file. */
Test(visibility, delete_in_con)
{
	static const char del_name[] =
		"__commits/__1700000003000_1700000003000_7551c421225afdba8259d1e9f46a5a58_22.del";
	static const char upd[] =
		"__commits/__1700000003500_1700000003500_00000000000000000000000000000001_22.upd\n";
	struct tfs_vfs *m = vt_mem_copy("delete_condition");
	struct tfs_arraydir *a;
	struct tfs_diag d;
	uint8_t *del, *con;
	size_t len, n;
	char *path = vt_fmt("/A/%s", del_name);

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(m, path, 1 << 20, &del, &len, &d),
		     TFS_E_OK);
	vt_rm(m, path);
	n = strlen(del_name);
	con = malloc(n + 1 + 8 + len + 100);
	memcpy(con, del_name, n);
	con[n] = '\n';
	for (int i = 0; i < 8; i++)
		con[n + 1 + i] = (uint8_t)((uint64_t)len >> (8 * i));
	memcpy(con + n + 9, del, len);
	/* followed by an update marker (no tile) */
	memcpy(con + n + 9 + len, upd, strlen(upd));
	vt_put(m, "/A/__commits/__1700000003000_1700000003500_00000000000000000000000000000002_22.con",
	    con, n + 9 + len + strlen(upd));
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->delete_num, 1);
	cr_assert_str_eq(a->deletes[0].marker, del_name);
	cr_assert(a->has_updates);
	cr_assert_eq(a->fragment_num, 3);
	tfs_arraydir_close(a);
	a = must_open(m, "/A", NULL, 1700000003200);
	cr_assert_eq(a->delete_num, 1);
	cr_assert(!a->has_updates);
	tfs_arraydir_close(a);
	free(con);
	tfs_free(del);
	free(path);
	tfs_vfs_free(m);
}

/* Dense arrays use full containment for vacuum files: a consolidated range
 * only hides its inputs when the whole range is inside the window. */
Test(visibility, dense_vacuum_full_overlap)
{
	static const char f1[] =
		"__1700000001000_1700000001000_37229c5663ba12f805dc957d7e300ca0_22";
	static const char f2[] =
		"__1700000002000_1700000002000_3be9a857022d44ddabe937614f6df56b_22";
	struct tfs_vfs *m = vt_mem_copy("dense_fragments_overlap");
	char *lines = vt_fmt("/__fragments/%s\n__fragments/%s\n", f1, f2);
	struct tfs_arraydir *a;

	vt_put(m, "/A/__commits/__1700000001000_1700000002000_000000000000000000000000000000aa_22.vac",
	    lines, strlen(lines));
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 2);
	cr_assert_eq(a->listed_num, 2);
	cr_assert_eq(a->to_vacuum_num, 2);
	cr_assert_str_eq(a->to_vacuum[0], f1);
	cr_assert_str_eq(a->to_vacuum[1], f2);
	cr_assert_null(listed_named(a, f1));
	tfs_arraydir_close(a);

	/* Window ends inside the vacuum file's range: inputs visible. */
	a = must_open(m, "/A", NULL, 1700000001500);
	cr_assert_eq(a->fragment_num, 1);
	cr_assert_str_eq(a->fragments[0]->name, f1);
	/* ... yet not listed, the listing ignores the window. */
	cr_assert_eq(a->listed_num, 2);
	cr_assert_eq(a->frag_pool_num, 3);
	tfs_arraydir_close(a);
	free(lines);
	tfs_vfs_free(m);
}

/* Old-style absolute URIs in .vac lines normalise to the same fragments. */
Test(visibility, vacuum_absolute_uris)
{
	static const char f3[] =
		"__1700000003000_1700000003000_079b2db213695b29d77716e9fb87e805_22";
	struct tfs_vfs *m = vt_mem_copy("dense_fragments_overlap");
	char *lines = vt_fmt("file:///some/where/else/__fragments/%s\n", f3);
	struct tfs_arraydir *a;

	vt_put(m, "/A/__commits/__1700000003000_1700000003000_000000000000000000000000000000ab_18.vac",
	    lines, strlen(lines));
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 3);
	cr_assert_eq(a->to_vacuum_num, 1);
	cr_assert_str_eq(a->to_vacuum[0], f3);
	tfs_arraydir_close(a);
	free(lines);
	tfs_vfs_free(m);
}

Test(visibility, consolidated_commits_and_ignore)
{
	static const char w1[] =
		"__commits/__1700000001000_1700000001000_7373915b564dbd0c770710cfd2610563_22.wrt";
	static const char w2[] =
		"__commits/__1700000002000_1700000002000_6709408ba9d01c6f18dd0d20f7bfe8e5_22.wrt";
	struct tfs_vfs *m = vt_mem_copy("consolidated_commits");
	struct tfs_dirlist l;
	struct tfs_diag d;
	struct tfs_arraydir *a;
	char *line;

	/* Without the individual commit files the .con still commits. */
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(m, "/A/__commits", &l, &d), TFS_E_OK);
	for (size_t i = 0; i < l.count; i++) {
		if (strstr(l.names[i], ".wrt")) {
			char *p = vt_fmt("/A/__commits/%s", l.names[i]);

			vt_rm(m, p);
			free(p);
		}
	}
	tfs_dirlist_release(&l);
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 5);
	cr_assert_eq(a->listed_num, 5);
	tfs_arraydir_close(a);

	/* An ignored .con entry no longer commits its fragment ... */
	line = vt_fmt("%s\n", w1);
	vt_put(m, "/A/__commits/__1700000006000_1700000006000_000000000000000000000000000000ac_22.ign",
	    line, strlen(line));
	free(line);
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->listed_num, 4);
	cr_assert_eq(a->listed[0]->name_info.t1, 1700000002000);
	tfs_arraydir_close(a);

	/* ... unless its own .wrt exists again. */
	vt_put(m, "/A/__commits/__1700000001000_1700000001000_7373915b564dbd0c770710cfd2610563_22.wrt",
	    "", 0);
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->listed_num, 5);
	tfs_arraydir_close(a);
	(void)w2;
	tfs_vfs_free(m);
}

/* Fragment folders without a commit are invisible; so is a commit of a
 * fragment stamped in the future, for the default window. */
Test(visibility, uncommitted_and_future_fragments)
{
	static const char f1[] =
		"__1700000001000_1700000001000_37229c5663ba12f805dc957d7e300ca0_22";
	static const char fut[] =
		"__4000000000000_4000000000000_000000000000000000000000000000ad_22";
	struct tfs_vfs *m = vt_mem_copy("dense_fragments_overlap");
	struct tfs_vfs *p = posix();
	struct tfs_arraydir *a;
	char *src = vt_fmt("%s/dense_fragments_overlap/__fragments/%s", CORPUS, f1);
	char *dst;

	/* An uncommitted copy in __fragments, and one in the root. */
	vt_copy_tree(p, src, m,
		  "/A/__fragments/__1700000009000_1700000009000_000000000000000000000000000000ae_22");
	vt_copy_tree(p, src, m,
		  "/A/__1700000009000_1700000009000_000000000000000000000000000000af_11");
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 4);
	cr_assert_eq(a->listed_num, 4);
	tfs_arraydir_close(a);

	dst = vt_fmt("/A/__fragments/%s", fut);
	vt_copy_tree(p, src, m, dst);
	free(dst);
	dst = vt_fmt("/A/__commits/%s.wrt", fut);
	vt_put(m, dst, "", 0);
	free(dst);
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 4);
	cr_assert_eq(a->listed_num, 5);
	cr_assert_str_eq(a->listed[4]->name, fut);
	tfs_arraydir_close(a);
	free(src);
	tfs_vfs_free(p);
	tfs_vfs_free(m);
}

/* Old layout: root fragments committed by .ok files (zero_var_chunks_v10
 * has one); removing the .ok hides it. */
Test(visibility, root_ok_commits)
{
	struct tfs_vfs *p = posix(), *m;
	struct tfs_arraydir *a;

	cr_assert_eq(tfs_vfs_mem_new(&m), TFS_E_OK);
	vt_copy_tree(p, CORPUS "/legacy/zero_var_chunks_v10", m, "/A");
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 1);
	cr_assert_str_eq(a->fragments[0]->dir,
			 "/A/__1693562063524_1693562063524_0fcdefaa40d34ff2a4b09153472fbdc2_10");
	tfs_arraydir_close(a);
	vt_rm(m, "/A/__1693562063524_1693562063524_0fcdefaa40d34ff2a4b09153472fbdc2_10.ok");
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 0);
	cr_assert_eq(a->listed_num, 0);
	tfs_arraydir_close(a);
	tfs_vfs_free(m);
	tfs_vfs_free(p);
}

Test(visibility, listing_rules)
{
	struct tfs_vfs *m = vt_mem_copy("dense_1d");
	struct tfs_arraydir *a;
	struct tfs_diag d;

	/* A zero-byte file named like its folder is dropped. */
	vt_put(m, "/A/__commits/__commits", "", 0);
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 1);
	tfs_arraydir_close(a);
	/* A zero-byte file named like a reserved folder is an error. */
	vt_put(m, "/A/__labels", "", 0);
	cr_assert_eq(open_at(m, "/A", NULL, UINT64_MAX, &a, &d), TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, "__labels"), "%s", d.msg);
	cr_assert_null(a);
	tfs_vfs_free(m);
}

Test(visibility, schema_at_time)
{
	struct tfs_vfs *v = posix();
	struct tfs_arraydir *a;

	a = must_open(v, CORPUS "/schema_evolution", NULL, 1700000001999);
	cr_assert_str_eq(a->schema->name,
			 "__1700000000000_1700000000000_0272a71486ee33e1b3c5f5e840f9074d");
	cr_assert_eq(a->schema_num, 2);
	tfs_arraydir_close(a);
	a = must_open(v, CORPUS "/schema_evolution", NULL, 1700000002000);
	cr_assert_str_eq(a->schema->name,
			 "__1700000002000_1700000002000_349d450f4f937b304bb15fc56b3f2b97");
	/* Each fragment keeps its own schema. */
	cr_assert_neq(a->listed[0]->schema, a->listed[1]->schema);
	tfs_arraydir_close(a);
	/* Before every schema: the first one. */
	a = must_open(v, CORPUS "/schema_evolution", NULL, 5);
	cr_assert_str_eq(a->schema->name,
			 "__1700000000000_1700000000000_0272a71486ee33e1b3c5f5e840f9074d");
	cr_assert_eq(a->fragment_num, 0);
	tfs_arraydir_close(a);
	tfs_vfs_free(v);
}

Test(visibility, enumerations)
{
	struct tfs_vfs *v = posix();
	struct tfs_arraydir *a =
		must_open(v, CORPUS "/enumeration", NULL, UINT64_MAX);

	cr_assert_eq(a->enum_num, a->schema->enum_num);
	cr_assert_gt(a->enum_num, 0);
	for (size_t i = 0; i < a->enum_num; i++)
		cr_assert_str_eq(a->enums[i].name, a->schema->enums[i].name);
	tfs_arraydir_close(a);
	tfs_vfs_free(v);
}

/* ---- metadata ------------------------------------------------------------ */

static const struct tfs_meta_kv *meta_key(const struct tfs_arraydir *a,
					  const char *key)
{
	for (size_t i = 0; i < a->metadata.count; i++)
		if (a->metadata.entries[i].key_len == strlen(key) &&
		    !memcmp(a->metadata.entries[i].key, key, strlen(key)))
			return &a->metadata.entries[i];
	return NULL;
}

Test(metadata, vacuum_and_tmp_files)
{
	static const char m2[] = "__1700000002000_1700000002000_44f2b1ee9d82693b52e16f7d670b2496";
	struct tfs_vfs *m = vt_mem_copy("metadata");
	struct tfs_arraydir *a;
	struct tfs_diag d;
	uint8_t *buf;
	size_t len, full;
	char *p, *line;

	a = must_open(m, "/A", NULL, UINT64_MAX);
	full = a->metadata.count;
	cr_assert_not_null(meta_key(a, "ascii"));
	cr_assert_null(meta_key(a, "to_delete"));
	tfs_arraydir_close(a);

	/* A partly written file (.tmp) is skipped even when newest. */
	p = vt_fmt("/A/__meta/%s", m2);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(m, p, 1 << 20, &buf, &len, &d), TFS_E_OK);
	vt_put(m, "/A/__meta/__1700000009000_1700000009000_000000000000000000000000000000b0.tmp",
	    buf, len);
	tfs_free(buf);
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->metadata.count, full);
	tfs_arraydir_close(a);

	/* A vacuum list inside the window hides the file it names. */
	line = vt_fmt("__meta/%s\n", m2);
	vt_put(m, "/A/__meta/__1700000002000_1700000003000_000000000000000000000000000000b1.vac",
	    line, strlen(line));
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_null(meta_key(a, "ascii"));
	cr_assert_not_null(meta_key(a, "added_later"));
	cr_assert_lt(a->metadata.count, full);
	tfs_arraydir_close(a);
	/* ... but not when only partly inside it. */
	a = must_open(m, "/A", NULL, 1700000002500);
	cr_assert_not_null(meta_key(a, "ascii"));
	cr_assert_not_null(meta_key(a, "to_delete"));
	tfs_arraydir_close(a);

	/* A name that is not timestamped is an error, as in TileDB. */
	vt_put(m, "/A/__meta/stray", "x", 1);
	cr_assert_eq(open_at(m, "/A", NULL, UINT64_MAX, &a, &d), TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, "stray"), "%s", d.msg);
	free(line);
	free(p);
	tfs_vfs_free(m);
}

/* ---- keys and errors ----------------------------------------------------- */

Test(errors, encryption_keys)
{
	struct tfs_vfs *v = posix();
	struct tfs_arraydir *a;
	struct tfs_diag d;
	uint8_t key[32];
	struct jv *j = json_load(CORPUS "/encrypted.json");

	cr_assert(parse_hex_key(json_get(j, "key_hex")->text, key));
	cr_assert_eq(open_at(v, CORPUS "/encrypted", NULL, UINT64_MAX, &a, &d),
		     TFS_E_KEY);
	cr_assert(strstr(d.msg, "encrypted") && strstr(d.msg, "no key"), "%s",
		  d.msg);
	cr_assert_null(a);
	key[7] ^= 0x20;
	cr_assert_eq(open_at(v, CORPUS "/encrypted", key, UINT64_MAX, &a, &d),
		     TFS_E_KEY);
	cr_assert(strstr(d.msg, "wrong encryption key"), "%s", d.msg);
	key[7] ^= 0x20;
	a = must_open(v, CORPUS "/encrypted", key, UINT64_MAX);
	tfs_arraydir_close(a);
	/* A key for an array that is not encrypted. */
	cr_assert_eq(open_at(v, CORPUS "/dense_1d", key, UINT64_MAX, &a, &d),
		     TFS_E_KEY);
	json_free(j);
	tfs_vfs_free(v);
}

Test(errors, not_found_and_not_array)
{
	struct tfs_vfs *v = posix();
	struct tfs_arraydir *a;
	struct tfs_diag d;
	enum tfs_object_kind kind;

	cr_assert_eq(open_at(v, CORPUS "/no_such_array", NULL, UINT64_MAX, &a,
			     &d),
		     TFS_E_NOT_FOUND);
	cr_assert(strstr(d.msg, "no_such_array"), "%s", d.msg);
	cr_assert_eq(open_at(v, CORPUS "/dense_1d/__schema", NULL, UINT64_MAX,
			     &a, &d),
		     TFS_E_NOT_ARRAY);
	cr_assert_eq(open_at(v, CORPUS "/dense_1d.json", NULL, UINT64_MAX, &a,
			     &d),
		     TFS_E_NOT_ARRAY);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_object_kind_of(v, CORPUS "/dense_1d", &kind, &d),
		     TFS_E_OK);
	cr_assert_eq(kind, TFS_OBJ_ARRAY);
	cr_assert_eq(tfs_object_kind_of(v, CORPUS "/legacy/non_split_coords_v1_4_0",
					&kind, &d),
		     TFS_E_OK);
	cr_assert_eq(kind, TFS_OBJ_ARRAY);
	cr_assert_eq(tfs_object_kind_of(v, CORPUS "/group", &kind, &d), TFS_E_OK);
	cr_assert_eq(kind, TFS_OBJ_GROUP);
	cr_assert_eq(tfs_object_kind_of(v, CORPUS, &kind, &d), TFS_E_OK);
	cr_assert_eq(kind, TFS_OBJ_NONE);
	cr_assert_eq(tfs_object_kind_of(v, CORPUS "/nope", &kind, &d),
		     TFS_E_NOT_FOUND);
	/* Trailing slashes are fine. */
	a = must_open(v, CORPUS "/dense_1d//", NULL, UINT64_MAX);
	cr_assert_str_eq(a->path, CORPUS "/dense_1d");
	tfs_arraydir_close(a);
	tfs_vfs_free(v);
}

Test(errors, corrupt_footer_and_missing_schema)
{
	static const char frag[] =
		"/A/__fragments/__1700000001000_1700000001000_7ff31dc7f4886f42130bb0d7928b4a55_22/__fragment_metadata.tdb";
	struct tfs_vfs *m = vt_mem_copy("dense_1d");
	struct tfs_arraydir *a;
	struct tfs_diag d;
	uint8_t *buf;
	size_t len;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(m, frag, 1 << 20, &buf, &len, &d),
		     TFS_E_OK);
	/* A footer length pointing before the file start. */
	buf[len - 1] = 0x7f;
	vt_put(m, frag, buf, len);
	cr_assert_eq(open_at(m, "/A", NULL, UINT64_MAX, &a, &d), TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, "__fragment_metadata.tdb"), "%s", d.msg);
	/* Truncated to nothing. */
	vt_put(m, frag, buf, 3);
	cr_assert_eq(open_at(m, "/A", NULL, UINT64_MAX, &a, &d), TFS_E_CORRUPT);
	tfs_free(buf);
	/* A commit without its fragment folder. */
	vt_rm(m, frag);
	cr_assert_eq(open_at(m, "/A", NULL, UINT64_MAX, &a, &d), TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, "missing"), "%s", d.msg);
	tfs_vfs_free(m);

	/* The schema a fragment names has gone. */
	m = vt_mem_copy("dense_1d");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_rename(m,
				    "/A/__schema/__1700000000000_1700000000000_00000002fced2fb1f6ac08863552dc86",
				    "/A/__schema/__1600000000000_1600000000000_00000000000000000000000000000001",
				    &d),
		     TFS_E_OK);
	cr_assert_eq(open_at(m, "/A", NULL, UINT64_MAX, &a, &d), TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, "00000002fced2fb1f6ac08863552dc86"), "%s", d.msg);
	/* An empty schema file does not decode. */
	vt_put(m, "/A/__schema/__1700000000000_1700000000000_00000002fced2fb1f6ac08863552dc86",
	    "", 0);
	cr_assert_eq(open_at(m, "/A", NULL, UINT64_MAX, &a, &d), TFS_E_CORRUPT);
	tfs_vfs_free(m);
}

/* Rewrites the footer of fragment file `frag` with file_sizes[0] = size. */
static void set_file_size0(struct tfs_vfs *m, const char *frag,
			   const struct tfs_schema *s, uint64_t size)
{
	struct tfs_footer f;
	struct tfs_diag d;
	struct tfs_buf b;
	uint8_t *buf;
	size_t len, flen;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(m, frag, 1 << 20, &buf, &len, &d),
		     TFS_E_OK);
	flen = (size_t)tfs_get_u64(buf + len - 8);
	cr_assert_eq(tfs_footer_parse(&f, buf + len - 8 - flen, flen, s, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	f.file_sizes[0] = size;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append(&b, buf, len - 8 - flen), TFS_E_OK);
	cr_assert_eq(tfs_footer_serialize(&b, &f, s), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u64(&b, b.len - (len - 8 - flen)), TFS_E_OK);
	vt_put(m, frag, b.data, b.len);
	tfs_buf_release(&b);
	tfs_footer_release(&f);
	tfs_free(buf);
}

/* Tile reads allocate what the footer says a data file holds: a footer
 * claiming more than the file is corrupt before any read (found by
 * fuzz_array); offsets past a smaller claim are reported without reading
 * the freed list (a use after free fuzz_array found). */
Test(errors, footer_file_sizes)
{
	static const char frag[] =
		"/A/__fragments/__1700000001000_1700000001000_7ff31dc7f4886f42130bb0d7928b4a55_22/__fragment_metadata.tdb";
	struct tfs_vfs *m = vt_mem_copy("dense_1d");
	const struct tfs_slot_tiles *st;
	struct tfs_arraydir *a = must_open(m, "/A", NULL, UINT64_MAX);
	struct tfs_diag d;

	set_file_size0(m, frag, a->schema, UINT64_C(3) << 30);
	tfs_arraydir_close(a);
	a = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a->fragment_num, 1);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_fragment_slot_tiles(a, a->fragments[0], 0, &st, &d),
		     TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, "footer says 3221225472"), "%s", d.msg);

	set_file_size0(m, frag, a->schema, 1);
	tfs_arraydir_close(a);
	a = must_open(m, "/A", NULL, UINT64_MAX);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_fragment_slot_tiles(a, a->fragments[0], 0, &st, &d),
		     TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, "past the end of the file (1 bytes)"), "%s",
		  d.msg);
	tfs_arraydir_close(a);
	tfs_vfs_free(m);
}

/* ---- fault and allocation-failure injection ------------------------------ */

/* Fails the nth storage call of an open, for every n until the open makes
 * fewer than n calls: each failure must come back as kind's error, cleanly
 * (ASan checks for leaks and bad accesses). */
static void faults_during_open(const char *array, const uint8_t *key,
			       uint64_t t, enum tfs_fault_kind kind,
			       enum tfs_err want)
{
	struct tfs_vfs *m = vt_mem_copy(array), *f;
	unsigned long n;

	cr_assert_eq(tfs_vfs_faulty_new(m, &f), TFS_E_OK);
	for (n = 0;; n++) {
		struct tfs_arraydir *a;
		struct tfs_diag d;
		unsigned long before = tfs_vfs_faulty_calls(f);
		enum tfs_err err;

		tfs_vfs_faulty_arm(f, kind, n, true);
		err = open_at(f, "/A", key, t, &a, &d);
		if (tfs_vfs_faulty_calls(f) - before <= n) {
			cr_assert_eq(err, TFS_E_OK, "%s: %s", array,
				     tfs_diag_msg(&d));
			tfs_vfs_faulty_arm(f, TFS_FAULT_NONE, 0, false);
			check_lazy(f, a, array);
			tfs_arraydir_close(a);
			break;
		}
		cr_assert_eq(err, want, "%s: call %lu: got %s (%s)", array, n,
			     tfs_strerror(err), tfs_diag_msg(&d));
		cr_assert_null(a);
		cr_assert_neq(d.msg[0], '\0');
	}
	cr_assert_gt(n, 5);
	cr_log_info("%s: an open makes %lu storage calls", array, n);
	tfs_vfs_faulty_arm(f, TFS_FAULT_NONE, 0, false);
	tfs_vfs_free(f);
	tfs_vfs_free(m);
}

Test(faults, eio_at_every_call)
{
	static const char *const arrays[] = {
		"dense_1d", "consolidated_commits", "consolidated_fragments",
		"consolidated_fragment_meta", "delete_condition", "metadata",
		"metadata_consolidated", "schema_evolution", "enumeration",
		"sparse_string_dim",
	};

	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
		faults_during_open(arrays[i], NULL, UINT64_MAX, TFS_FAULT_EIO,
				   TFS_E_IO);
	faults_during_open("dense_fragments_overlap", NULL, 1700000002000,
			   TFS_FAULT_EIO, TFS_E_IO);
}

Test(faults, short_reads_at_every_call)
{
	faults_during_open("consolidated_commits", NULL, UINT64_MAX,
			   TFS_FAULT_SHORT, TFS_E_IO);
	faults_during_open("consolidated_fragment_meta", NULL, UINT64_MAX,
			   TFS_FAULT_SHORT, TFS_E_IO);
}

Test(faults, encrypted_eio_at_every_call)
{
	uint8_t key[32];
	struct jv *j = json_load(CORPUS "/encrypted.json");

	cr_assert(parse_hex_key(json_get(j, "key_hex")->text, key));
	faults_during_open("encrypted", key, UINT64_MAX, TFS_FAULT_EIO, TFS_E_IO);
	json_free(j);
}

/* A failed lazy load is not remembered: the next call loads. */
/* A fragment whose metadata file is small keeps it whole from its
 * footer's read: its tile lists and R-tree load without I/O, once. */
Test(faults, lazy_load_from_kept_bytes)
{
	struct tfs_vfs *m = vt_mem_copy("sparse_2d_int"), *f;
	struct tfs_arraydir *a;
	struct tfs_fragment *fr;
	const struct tfs_slot_tiles *t;
	const struct tfs_rtree *rt;
	struct tfs_diag d;

	cr_assert_eq(tfs_vfs_faulty_new(m, &f), TFS_E_OK);
	a = must_open(f, "/A", NULL, UINT64_MAX);
	fr = a->fragments[0];
	cr_assert_not_null(fr->shared->meta_bytes);
	tfs_vfs_faulty_arm(f, TFS_FAULT_EIO, 0, false);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_fragment_slot_tiles(a, fr, 0, &t, &d), TFS_E_OK);
	cr_assert_not_null(t->offsets);
	cr_assert_eq(tfs_fragment_rtree(a, fr, &rt, &d), TFS_E_OK);
	cr_assert_eq(rt->leaf_num, fr->tile_num);
	cr_assert_eq(tfs_fragment_slot_tiles(a, fr, 0, &t, &d), TFS_E_OK);
	cr_assert_eq(tfs_fragment_rtree(a, fr, &rt, &d), TFS_E_OK);
	tfs_vfs_faulty_arm(f, TFS_FAULT_NONE, 0, false);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_fragment_slot_tiles(a, fr, 999, &t, &d), TFS_E_INVALID);
	tfs_arraydir_close(a);
	tfs_vfs_free(f);
	tfs_vfs_free(m);
}

/* A metadata file larger than what is kept whole: the lists come from
 * storage on demand, and a failed load is tried again by the next call. */
Test(faults, lazy_load_retries_from_storage)
{
	struct tfs_vfs *m = vt_mem_copy("dense_dtypes"), *f;
	struct tfs_arraydir *a;
	struct tfs_fragment *fr;
	const struct tfs_slot_tiles *t;
	struct tfs_diag d;

	cr_assert_eq(tfs_vfs_faulty_new(m, &f), TFS_E_OK);
	a = must_open(f, "/A", NULL, UINT64_MAX);
	fr = a->fragments[0];
	cr_assert_null(fr->shared->meta_bytes);
	cr_assert(fr->meta_size_known);
	tfs_diag_init(&d);
	/* The list's read fails (its data files are small: not checked). */
	tfs_vfs_faulty_arm(f, TFS_FAULT_EIO, 0, true);
	cr_assert_eq(tfs_fragment_slot_tiles(a, fr, 0, &t, &d), TFS_E_IO);
	cr_assert_null(t);
	cr_assert_eq(tfs_fragment_slot_tiles(a, fr, 0, &t, &d), TFS_E_OK);
	cr_assert_not_null(t->offsets);
	tfs_vfs_faulty_arm(f, TFS_FAULT_EIO, 0, false);
	cr_assert_eq(tfs_fragment_slot_tiles(a, fr, 0, &t, &d), TFS_E_OK);
	tfs_vfs_faulty_arm(f, TFS_FAULT_NONE, 0, false);
	tfs_arraydir_close(a);
	tfs_vfs_free(f);
	tfs_vfs_free(m);
}

static uint64_t mem_used(void)
{
	struct tfs_mem_stats ms;

	tfs_mem_get_stats(tfs_mem_global(), &ms);
	return ms.used;
}

/* Two versions of one array (opened one after the other, as the daemon
 * does after each commit) load a fragment's lists once and count them
 * once; the last version closed gives them back. Another storage reads
 * its own. */
Test(sharing, versions_share_what_they_load)
{
	struct tfs_vfs *m = vt_mem_copy("sparse_2d_int");
	struct tfs_vfs *other = vt_mem_copy("sparse_2d_int");
	struct tfs_arraydir *a1, *a2, *a3;
	const struct tfs_rtree *r1, *r2;
	const struct tfs_slot_tiles *t1, *t2;
	struct tfs_diag d;
	uint64_t before = mem_used(), held;

	a1 = must_open(m, "/A", NULL, UINT64_MAX);
	a2 = must_open(m, "/A", NULL, UINT64_MAX);
	cr_assert_eq(a1->fragment_num, a2->fragment_num);
	cr_assert_gt(a1->fragment_num, 0);
	tfs_diag_init(&d);
	for (size_t i = 0; i < a1->fragment_num; i++) {
		struct tfs_fragment *f1 = a1->fragments[i], *f2 = a2->fragments[i];

		cr_assert_neq(f1, f2);
		cr_assert_eq(f1->shared, f2->shared, "fragment %zu", i);
		cr_assert_eq(tfs_fragment_rtree(a1, f1, &r1, &d), TFS_E_OK);
		cr_assert_eq(tfs_fragment_rtree(a2, f2, &r2, &d), TFS_E_OK);
		cr_assert_eq(r1, r2);
		cr_assert_eq(tfs_fragment_slot_tiles(a2, f2, 0, &t2, &d),
			     TFS_E_OK);
		cr_assert_eq(tfs_fragment_slot_tiles(a1, f1, 0, &t1, &d),
			     TFS_E_OK);
		cr_assert_eq(t1, t2);
		cr_assert_eq(tfs_fragment_memory_alone(f1), 0);
	}
	held = mem_used() - before;
	cr_assert_gt(held, 0);
	tfs_arraydir_close(a1);
	cr_assert_eq(mem_used() - before, held, "closing one version frees "
		     "nothing the other holds");
	cr_assert_gt(tfs_fragment_memory_alone(a2->fragments[0]), 0);

	a3 = must_open(other, "/A", NULL, UINT64_MAX);
	cr_assert_neq(a3->fragments[0]->shared, a2->fragments[0]->shared);
	tfs_arraydir_close(a3);
	tfs_arraydir_close(a2);
	cr_assert_eq(mem_used(), before);
	tfs_vfs_free(other);
	tfs_vfs_free(m);
}

static void alloc_failures_during_open(const char *array, const uint8_t *key)
{
	struct tfs_vfs *m = vt_mem_copy(array);
	long n;

	for (n = 0;; n++) {
		struct tfs_arraydir *a;
		struct tfs_diag d;
		enum tfs_err err;

		tfs_alloc_fail_after(n);
		err = open_at(m, "/A", key, UINT64_MAX, &a, &d);
		tfs_alloc_fail_after(-1);
		if (err == TFS_E_OK) {
			tfs_arraydir_close(a);
			break;
		}
		cr_assert_eq(err, TFS_E_NOMEM, "%s: allocation %ld: %s (%s)",
			     array, n, tfs_strerror(err), tfs_diag_msg(&d));
		cr_assert_null(a);
	}
	cr_assert_gt(n, 10);
	cr_log_info("%s: an open makes %ld allocations", array, n);
	tfs_vfs_free(m);
}

Test(faults, allocation_failures)
{
	uint8_t key[32];
	struct jv *j = json_load(CORPUS "/encrypted.json");

	alloc_failures_during_open("dense_1d", NULL);
	alloc_failures_during_open("consolidated_commits", NULL);
	alloc_failures_during_open("consolidated_fragment_meta", NULL);
	alloc_failures_during_open("delete_condition", NULL);
	alloc_failures_during_open("metadata", NULL);
	alloc_failures_during_open("enumeration", NULL);
	cr_assert(parse_hex_key(json_get(j, "key_hex")->text, key));
	alloc_failures_during_open("encrypted", key);
	json_free(j);
}

/* ---- the same arrays through the in-memory backend ----------------------- */

Test(mem, corpus_copies_match)
{
	static const char *const arrays[] = {
		"consolidated_fragments", "consolidated_fragment_meta",
		"many_fragments", "metadata", "sparse_mixed_dims",
	};

	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		struct tfs_vfs *m = vt_mem_copy(arrays[i]);
		char *jp = vt_fmt("%s/%s.json", CORPUS, arrays[i]);
		struct jv *j = json_load(jp);

		cr_assert_not_null(j);
		check_array_json(m, "/A", j, UINT64_MAX, arrays[i]);
		json_free(j);
		free(jp);
		tfs_vfs_free(m);
	}
}

/* A posix copy in a temporary folder behaves like the original. */
Test(mem, posix_temp_copy)
{
	struct tfs_vfs *p = posix();
	char tmpl[] = "/tmp/tfs-frag-......";
	char *dir;
	char *dst, *wrt;
	struct jv *j = json_load(CORPUS "/consolidated_commits.json");
	struct tfs_arraydir *a;
	struct tfs_diag d;

	/* mkdtemp replaces the six trailing X characters. */
	memset(tmpl + sizeof(tmpl) - 7, 'X', 6);
	dir = mkdtemp(tmpl);
	cr_assert_not_null(dir);
	cr_assert_not_null(j);
	dst = vt_fmt("%s/A", dir);
	vt_copy_tree(p, CORPUS "/consolidated_commits", p, dst);
	check_array_json(p, dst, j, UINT64_MAX, "posix copy");
	/* A commit whose fragment folder is missing fails the open. */
	wrt = vt_fmt("%s/__commits/__1700000009000_1700000009000_000000000000000000000000000000c0_22.wrt",
		  dst);
	vt_put(p, wrt, "", 0);
	cr_assert_eq(open_at(p, dst, NULL, UINT64_MAX, &a, &d), TFS_E_CORRUPT);
	cr_assert(strstr(d.msg, "__1700000009000_1700000009000"), "%s", d.msg);
	vt_rm_tree(p, dir);
	free(wrt);
	free(dst);
	json_free(j);
	tfs_vfs_free(p);
}

/* ---- data file names ------------------------------------------------------ */

Test(names, file_paths_by_version)
{
	struct tfs_schema s;
	struct tfs_attr attrs[2];
	struct tfs_dim dims[2];
	struct tfs_fragment f;
	static const struct {
		uint32_t version;
		uint32_t slot;
		enum tfs_file_kind kind;
		bool ts;
		const char *want;
	} cases[] = {
		{22, 0, TFS_FILE_FIXED, false, "/F/a0.tdb"},
		{22, 1, TFS_FILE_VAR, false, "/F/a1_var.tdb"},
		{22, 1, TFS_FILE_VALIDITY, false, "/F/a1_validity.tdb"},
		{22, 2, TFS_FILE_FIXED, false, "/F/__coords.tdb"},
		{22, 3, TFS_FILE_FIXED, false, "/F/d0.tdb"},
		{22, 4, TFS_FILE_VAR, false, "/F/d1_var.tdb"},
		{22, 5, TFS_FILE_FIXED, true, "/F/t.tdb"},
		{22, 6, TFS_FILE_FIXED, true, "/F/dt.tdb"},
		{22, 7, TFS_FILE_FIXED, true, "/F/dci.tdb"},
		{22, 5, TFS_FILE_FIXED, false, "/F/dt.tdb"},
		{22, 6, TFS_FILE_FIXED, false, "/F/dci.tdb"},
		{9, 1, TFS_FILE_FIXED, false, "/F/a1.tdb"},
		{8, 0, TFS_FILE_FIXED, false, "/F/x%2Fy%3C%20%2D%30%21.tdb"},
		{8, 1, TFS_FILE_VAR, false, "/F/plain_var.tdb"},
		{8, 3, TFS_FILE_FIXED, false, "/F/d%3A0.tdb"},
		{7, 0, TFS_FILE_VALIDITY, false, "/F/x/y|<>\\!_validity.tdb"},
		{7, 4, TFS_FILE_FIXED, false, "/F/dim1.tdb"},
		{4, 2, TFS_FILE_FIXED, false, "/F/__coords.tdb"},
		{4, 1, TFS_FILE_VAR, false, "/F/plain_var.tdb"},
	};

	memset(&s, 0, sizeof(s));
	memset(attrs, 0, sizeof(attrs));
	memset(dims, 0, sizeof(dims));
	attrs[0].name = "x/y|<>\\!";
	attrs[1].name = "plain";
	dims[0].name = "d:0";
	dims[1].name = "dim1";
	s.attr_num = 2;
	s.attrs = attrs;
	s.dim_num = 2;
	s.dims = dims;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p;

		memset(&f, 0, sizeof(f));
		f.dir = "/F";
		f.schema = &s;
		f.footer.version = cases[i].version;
		f.footer.has_timestamps = cases[i].ts;
		f.footer.has_delete_meta = true;
		f.footer.slot_num = 8;
		p = tfs_fragment_file_path(&f, cases[i].slot, cases[i].kind);
		cr_assert_not_null(p, "case %zu", i);
		cr_assert_str_eq(p, cases[i].want, "case %zu", i);
		tfs_free(p);
	}
	/* Slot numbers. */
	memset(&f, 0, sizeof(f));
	f.schema = &s;
	f.footer.version = 22;
	f.footer.has_timestamps = true;
	f.footer.slot_num = 8;
	cr_assert_eq(tfs_fragment_dim_slot(&f, 1), 4);
	cr_assert_eq(tfs_fragment_timestamps_slot(&f), 5);
	cr_assert_eq(tfs_fragment_delete_ts_slot(&f), 6);
	cr_assert_null(tfs_fragment_file_path(&f, 8, TFS_FILE_FIXED));
	f.footer.version = 4;
	cr_assert_eq(tfs_fragment_dim_slot(&f, 1), 2);
	cr_assert_eq(tfs_fragment_timestamps_slot(&f), 3);
}

Test(names, tile_cells)
{
	struct tfs_schema s;
	struct tfs_dim dims[2];

	memset(&s, 0, sizeof(s));
	memset(dims, 0, sizeof(dims));
	dims[0].type = TFS_INT16;
	dims[0].has_domain = dims[0].has_extent = true;
	dims[0].extent[0] = 0x10; /* 16 */
	dims[1].type = TFS_UINT64;
	dims[1].has_domain = dims[1].has_extent = true;
	dims[1].extent[0] = 3;
	s.dim_num = 2;
	s.dims = dims;
	cr_assert_eq(tfs_schema_tile_cells(&s), 48);
	dims[1].has_extent = false;
	cr_assert_eq(tfs_schema_tile_cells(&s), 0);
	dims[1].has_extent = true;
	memset(dims[1].extent, 0xff, 8);
	cr_assert_eq(tfs_schema_tile_cells(&s), 0); /* overflow */
}

/* ---- older format versions, synthesised ---------------------------------- */

static void append_tile(struct tfs_buf *file, const struct tfs_buf *payload)
{
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_generic_tile_encode(file, payload->data, payload->len,
					     NULL, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
}

/* Appends a u64-list generic tile and returns its offset. */
static uint64_t append_list(struct tfs_buf *file, const uint64_t *v,
			    uint64_t count)
{
	struct tfs_buf tmp;
	uint64_t off = file->len;
	uint64_t *zeros = NULL;

	if (!v && count)
		v = zeros = calloc(count, sizeof(*zeros));
	tfs_buf_init(&tmp, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_u64_list_serialize(&tmp, v, count), TFS_E_OK);
	append_tile(file, &tmp);
	tfs_buf_release(&tmp);
	free(zeros);
	return off;
}

/* Stem of field `name` in version v file names (fragment.md §2). */
static char *stem(const char *name, uint32_t v)
{
	if (v == 8 && !strcmp(name, "s:x"))
		return tfs_strdup("s%3Ax");
	return tfs_strdup(name);
}

/* Rewrites the one fragment of corpus array `array` (held at /A in m) as a
 * fragment of format version v in the old root layout, with the schema as
 * __array_schema.tdb of version v: footer, R-tree and tile lists are
 * re-encoded, the data files copied under their version-v names. */
static void rewrite_as_version(struct tfs_vfs *m, const char *array, uint32_t v,
			       uint64_t *tile_num, uint64_t *cell_num)
{
	struct tfs_arraydir *a = must_open(m, "/A", NULL, UINT64_MAX);
	struct tfs_schema *sc = &a->schemas[0];
	struct tfs_fragment *f = a->fragments[0];
	const struct tfs_rtree *rt;
	struct tfs_footer nf;
	struct tfs_buf file, tmp;
	struct tfs_diag d;
	uint32_t a_num = sc->attr_num, slots;
	char *saved_name = NULL, *dir, *p;
	const char *uuid = "0123456789abcdef0123456789abcdef";

	cr_assert_eq(a->fragment_num, 1, "%s", array);
	*tile_num = f->tile_num;
	*cell_num = f->cell_num;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_fragment_rtree(a, f, &rt, &d), TFS_E_OK);

	/* Schema of version v; version 8 gets a name needing escapes. */
	sc->version = v;
	if (v == 8) {
		saved_name = sc->attrs[a_num - 1].name;
		sc->attrs[a_num - 1].name = "s:x";
	}
	tfs_buf_init(&tmp, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&tmp, sc), TFS_E_OK, "v%u", v);
	append_tile(&file, &tmp);
	vt_put(m, "/A/__array_schema.tdb", file.data, file.len);
	file.len = 0;
	tmp.len = 0;

	/* Fragment metadata: R-tree, per-slot lists, fixed-size footer. */
	slots = tfs_slot_count(v, a_num, sc->dim_num, false, false);
	memset(&nf, 0, sizeof(nf));
	nf.version = v;
	nf.dense = f->footer.dense;
	nf.ned = f->footer.ned;
	nf.dim_num = f->footer.dim_num;
	nf.sparse_tile_num = f->footer.sparse_tile_num;
	nf.last_tile_cell_num = f->footer.last_tile_cell_num;
	nf.slot_num = slots;
	nf.file_sizes = calloc(slots, 8);
	nf.file_var_sizes = calloc(slots, 8);
	nf.file_validity_sizes = calloc(slots, 8);
	nf.tile_offsets_off = calloc(slots, 8);
	nf.tile_var_offsets_off = calloc(slots, 8);
	nf.tile_var_sizes_off = calloc(slots, 8);
	nf.tile_validity_offsets_off = calloc(slots, 8);
	cr_assert_eq(tfs_rtree_serialize(&tmp, rt, v, sc), TFS_E_OK, "v%u", v);
	nf.rtree_off = file.len;
	append_tile(&file, &tmp);
	for (uint32_t s = 0; s < slots; s++) {
		const struct tfs_slot_tiles *t;
		bool var = s < a_num ? sc->attrs[s].var
				     : s > a_num && sc->dims[s - a_num - 1].var;

		cr_assert_eq(tfs_fragment_slot_tiles(a, f, s, &t, &d), TFS_E_OK);
		nf.file_sizes[s] = f->footer.file_sizes[s];
		nf.file_var_sizes[s] = f->footer.file_var_sizes[s];
		nf.tile_offsets_off[s] =
			append_list(&file, t->offsets, f->tile_num);
		nf.tile_var_offsets_off[s] = append_list(
			&file, var ? t->var_offsets : NULL, f->tile_num);
		nf.tile_var_sizes_off[s] = append_list(
			&file, var ? t->var_sizes : NULL, f->tile_num);
		if (v >= 7)
			nf.tile_validity_offsets_off[s] =
				append_list(&file, NULL, f->tile_num);
	}
	tmp.len = 0;
	cr_assert_eq(tfs_footer_serialize(&tmp, &nf, sc), TFS_E_OK, "v%u", v);
	cr_assert_eq(tmp.len, tfs_footer_fixed_size(v, sc), "v%u", v);
	cr_assert_eq(tfs_buf_append(&file, tmp.data, tmp.len), TFS_E_OK);

	/* The fragment folder in the root, committed by .ok from v5 on. */
	if (v >= 5)
		dir = vt_fmt("/A/__1700000001000_1700000001000_%s_%u", uuid, v);
	else
		dir = vt_fmt("/A/__1700000001000_1700000001000_%s", uuid);
	cr_assert_eq(tfs_vfs_mkdir(m, dir, &d), TFS_E_OK);
	p = vt_fmt("%s/__fragment_metadata.tdb", dir);
	vt_put(m, p, file.data, file.len);
	free(p);
	for (uint32_t s = 0; s < slots; s++) {
		for (int k = 0; k < 2; k++) {
			const uint64_t *sizes = k ? f->footer.file_var_sizes
						  : f->footer.file_sizes;
			uint8_t *buf;
			size_t len;
			char *src, *name, *dst;

			if (!sizes[s])
				continue;
			src = tfs_fragment_file_path(f, s, (enum tfs_file_kind)k);
			cr_assert_eq(tfs_vfs_read_all(m, src, SIZE_MAX, &buf, &len,
						      &d),
				     TFS_E_OK);
			cr_assert(s != a_num, "no zipped coordinates here");
			if (s < a_num)
				name = v >= 9 ? vt_fmt("a%u", s)
					      : stem(sc->attrs[s].name, v);
			else
				name = v >= 9 ? vt_fmt("d%u", s - a_num - 1)
					      : stem(sc->dims[s - a_num - 1].name,
						     v);
			dst = vt_fmt("%s/%s%s", dir, name, k ? "_var.tdb" : ".tdb");
			vt_put(m, dst, buf, len);
			tfs_free(buf);
			tfs_free(src);
			if (v >= 9)
				free(name);
			else
				tfs_free(name);
			free(dst);
		}
	}
	if (v >= 5) {
		p = vt_fmt("%s.ok", dir);
		vt_put(m, p, "", 0);
		free(p);
	}
	free(dir);

	if (saved_name)
		sc->attrs[a_num - 1].name = saved_name;
	free(nf.file_sizes);
	free(nf.file_var_sizes);
	free(nf.file_validity_sizes);
	free(nf.tile_offsets_off);
	free(nf.tile_var_offsets_off);
	free(nf.tile_var_sizes_off);
	free(nf.tile_validity_offsets_off);
	tfs_buf_release(&tmp);
	tfs_buf_release(&file);
	tfs_arraydir_close(a);
}

static void remove_tree(struct tfs_vfs *v, const char *path)
{
	struct tfs_diag d;
	struct tfs_stat st;
	struct tfs_dirlist l;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_stat(v, path, &st, &d), TFS_E_OK);
	if (!st.exists)
		return;
	if (st.is_dir) {
		cr_assert_eq(tfs_vfs_list(v, path, &l, &d), TFS_E_OK);
		for (size_t i = 0; i < l.count; i++) {
			char *c = tfs_path_join(path, l.names[i]);

			remove_tree(v, c);
			tfs_free(c);
		}
		tfs_dirlist_release(&l);
	}
	vt_rm(v, path);
}

static void old_versions(const char *array, uint32_t from)
{
	for (uint32_t v = from; v <= 9; v++) {
		struct tfs_vfs *m = vt_mem_copy(array);
		struct tfs_arraydir *a;
		struct tfs_fragment *f;
		uint64_t tiles, cells;
		char *label = vt_fmt("version %u", v);

		rewrite_as_version(m, array, v, &tiles, &cells);
		remove_tree(m, "/A/__schema");
		remove_tree(m, "/A/__commits");
		remove_tree(m, "/A/__fragments");
		a = must_open(m, "/A", NULL, UINT64_MAX);
		cr_assert_str_eq(a->schema->name, "__array_schema.tdb", "%s", label);
		cr_assert_eq(a->schema->version, v, "%s", label);
		cr_assert_eq(a->fragment_num, 1, "%s", label);
		cr_assert_eq(a->listed_num, 1, "%s", label);
		f = a->fragments[0];
		cr_assert_eq(f->footer.version, v, "%s", label);
		cr_assert_eq(f->name_info.version, v < 5 ? 4 : v, "%s", label);
		cr_assert_eq(f->tile_num, tiles, "%s", label);
		cr_assert_eq(f->cell_num, cells, "%s", label);
		cr_assert(!f->consolidated_meta);
		cr_assert_eq(f->schema, a->schema);
		check_lazy(m, a, label);

		/* A consolidated .meta in the root supplies the footer: by name
		 * from .meta version 9, by absolute URI before. */
		if (v >= 5) {
			const char *fname;
			uint8_t *fm;
			size_t fm_len, foot = 0;
			struct tfs_buf pl, tile;
			struct tfs_diag d;
			char *entry, *fmp, *metap;

			fname = a->fragments[0]->name;
			foot = tfs_footer_fixed_size(v, a->schema);
			fmp = vt_fmt("%s/__fragment_metadata.tdb", a->fragments[0]->dir);
			tfs_diag_init(&d);
			cr_assert_eq(tfs_vfs_read_all(m, fmp, SIZE_MAX, &fm, &fm_len,
						      &d),
				     TFS_E_OK);
			entry = v >= 9 ? vt_fmt("%s", fname)
				       : vt_fmt("file:///elsewhere/A/%s", fname);
			tfs_buf_init(&pl, TFS_BUF_NO_MAX);
			tfs_buf_init(&tile, TFS_BUF_NO_MAX);
			cr_assert_eq(tfs_buf_append_u32(&pl, 1), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u64(&pl, strlen(entry)), TFS_E_OK);
			cr_assert_eq(tfs_buf_append(&pl, entry, strlen(entry)),
				     TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u64(&pl, pl.len + 8), TFS_E_OK);
			cr_assert_eq(tfs_buf_append(&pl, fm + fm_len - foot, foot),
				     TFS_E_OK);
			append_tile(&tile, &pl);
			metap = vt_fmt("/A/__1700000001000_1700000001000_00000000000000000000000000000abc_%u.meta",
				    v);
			vt_put(m, metap, tile.data, tile.len);
			tfs_arraydir_close(a);
			a = must_open(m, "/A", NULL, UINT64_MAX);
			cr_assert(a->fragments[0]->consolidated_meta, "%s", label);
			cr_assert_eq(a->fragments[0]->cell_num, cells, "%s", label);
			check_lazy(m, a, label);
			vt_rm(m, metap);
			free(metap);
			free(entry);
			free(fmp);
			tfs_free(fm);
			tfs_buf_release(&pl);
			tfs_buf_release(&tile);
		}
		tfs_arraydir_close(a);

		/* Without its commit, a v5+ root fragment disappears; a v3–4
		 * one is found through its metadata file. */
		if (v >= 5) {
			char *ok = vt_fmt("/A/__1700000001000_1700000001000_0123456789abcdef0123456789abcdef_%u.ok",
				       v);

			vt_rm(m, ok);
			free(ok);
			a = must_open(m, "/A", NULL, UINT64_MAX);
			cr_assert_eq(a->fragment_num, 0, "%s", label);
			tfs_arraydir_close(a);
		}
		free(label);
		tfs_vfs_free(m);
	}
}

Test(versions, old_root_layout_dense_3_to_9)
{
	old_versions("dense_2d_rowmajor", 3);
}

/* Sparse fragments before v5 zip their coordinates: from v5 on only. */
Test(versions, old_root_layout_sparse_5_to_9)
{
	old_versions("sparse_2d_int", 5);
}

/* ---- threads --------------------------------------------------------------- */

struct lazy_arg {
	struct tfs_arraydir *a;
	const struct tfs_slot_tiles *seen[16];
	int errors;
};

static void *lazy_worker(void *p)
{
	struct lazy_arg *arg = p;

	for (size_t i = 0; i < arg->a->fragment_num; i++) {
		struct tfs_fragment *f = arg->a->fragments[i];
		struct tfs_diag d;

		for (uint32_t s = 0; s < f->footer.slot_num && s < 16; s++) {
			const struct tfs_slot_tiles *t;
			const struct tfs_rtree *rt;

			tfs_diag_init(&d);
			if (tfs_fragment_slot_tiles(arg->a, f, s, &t, &d) ||
			    tfs_fragment_rtree(arg->a, f, &rt, &d))
				arg->errors++;
			if (i == 0)
				arg->seen[s] = t;
		}
	}
	return NULL;
}

Test(threads, concurrent_lazy_loads)
{
	struct tfs_vfs *v = posix();
	struct tfs_arraydir *a = must_open(v, CORPUS "/many_fragments", NULL,
					   UINT64_MAX);
	pthread_t th[4];
	struct lazy_arg args[4];

	for (int i = 0; i < 4; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].a = a;
		cr_assert_eq(pthread_create(&th[i], NULL, lazy_worker, &args[i]),
			     0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(args[i].errors, 0);
	}
	for (int i = 1; i < 4; i++)
		for (int s = 0; s < 16; s++)
			cr_assert_eq(args[i].seen[s], args[0].seen[s]);
	tfs_arraydir_close(a);
	tfs_vfs_free(v);
}

/* ---- a fragment removed while the array opens -------------------------- */

/* Storage that, at the first read inside __fragments/, removes that
 * fragment and its commit as a vacuum beside the open would, and reports
 * the file missing. Every other operation goes to the in-memory backend. */
struct racing_vfs {
	struct tfs_vfs base;
	struct tfs_vfs *inner;
	bool fired;
};

static struct tfs_vfs *inner_of(struct tfs_vfs *v)
{
	return ((struct racing_vfs *)v)->inner;
}

static enum tfs_err race_stat(struct tfs_vfs *v, const char *p,
			      struct tfs_stat *st, struct tfs_diag *d)
{
	return tfs_vfs_stat(inner_of(v), p, st, d);
}

static enum tfs_err race_lstat(struct tfs_vfs *v, const char *p,
			       struct tfs_stat *st, struct tfs_diag *d)
{
	return tfs_vfs_lstat(inner_of(v), p, st, d);
}

static enum tfs_err race_list(struct tfs_vfs *v, const char *p,
			      struct tfs_dirlist *out, struct tfs_diag *d)
{
	return tfs_vfs_list(inner_of(v), p, out, d);
}

static enum tfs_err race_read(struct tfs_vfs *v, const char *p, uint64_t off,
			      void *dst, size_t len, struct tfs_diag *d)
{
	struct racing_vfs *r = (struct racing_vfs *)v;
	const char *in = strstr(p, "/__fragments/");

	if (in && !r->fired) {
		char name[256];
		size_t n = strcspn(in + 13, "/");
		char *commit;

		r->fired = true;
		cr_assert_lt(n, sizeof(name));
		memcpy(name, in + 13, n);
		name[n] = '\0';
		commit = vt_fmt("/A/__commits/%s.wrt", name);
		vt_rm(r->inner, commit);
		free(commit);
		commit = vt_fmt("/A/__fragments/%s", name);
		vt_rm_tree(r->inner, commit);
		free(commit);
		return tfs_fail(d, TFS_E_NOT_FOUND, "'%s': removed", p);
	}
	return tfs_vfs_read(r->inner, p, off, dst, len, d);
}

static void race_destroy(struct tfs_vfs *v)
{
	tfs_vfs_free(inner_of(v));
	free(v);
}

static const struct tfs_vfs_ops racing_ops = {
	.stat = race_stat,
	.lstat = race_lstat,
	.read = race_read,
	.list = race_list,
	.destroy = race_destroy,
};

Test(visibility, fragment_vacuumed_during_open)
{
	struct racing_vfs *r = calloc(1, sizeof(*r));
	struct tfs_arraydir *a;
	struct tfs_vfs *whole = vt_mem_copy("many_fragments");
	size_t all;

	a = must_open(whole, "/A", NULL, UINT64_MAX);
	all = a->fragment_num;
	tfs_arraydir_close(a);
	tfs_vfs_free(whole);
	cr_assert_gt(all, 1);

	cr_assert_not_null(r);
	r->base.ops = &racing_ops;
	r->inner = vt_mem_copy("many_fragments");
	a = must_open(&r->base, "/A", NULL, UINT64_MAX);
	cr_assert(r->fired, "no fragment file was read during the open");
	cr_assert_eq(a->fragment_num, all - 1);
	tfs_arraydir_close(a);
	tfs_vfs_free(&r->base);
}
