/* Every allocation of every parser can fail: each parse is repeated with
 * the Nth allocation failing, for N = 0, 1, ... until it succeeds. Each
 * attempt must report TFS_E_NOMEM (never crash, never report corruption)
 * and leave nothing allocated (LeakSanitizer checks at exit). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_examples.h"
#include "fmt_test_util.h"
#include "tfs_alloc.h"

#define MAX_ATTEMPTS 100000

/* One parse attempt: returns its code and releases what it produced. */
typedef enum tfs_err (*attempt_fn)(const void *ctx, struct tfs_diag *d);

static void sweep(attempt_fn fn, const void *ctx, const char *what)
{
	long n;

	for (n = 0; n < MAX_ATTEMPTS; n++) {
		struct tfs_diag d;
		enum tfs_err e;

		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = fn(ctx, &d);
		tfs_alloc_fail_after(-1);
		if (e == TFS_E_OK)
			break;
		cr_assert_eq(e, TFS_E_NOMEM, "%s: failing allocation %ld gave %d "
			     "(%s)", what, n, e, d.msg);
		cr_expect(d.msg[0] && !strchr(d.msg, '\n'));
	}
	cr_assert_lt(n, MAX_ATTEMPTS, "%s never succeeded", what);
	cr_expect_gt(n, 0, "%s allocates nothing?", what);
}

struct bytes {
	const uint8_t *p;
	size_t len;
	const struct tfs_schema *schema;
	uint32_t version;
	const char *name;
};

static enum tfs_err schema_file(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_schema s;
	enum tfs_err e = tfs_schema_decode(&s, b->p, b->len, b->name, NULL, d);

	if (!e) {
		struct tfs_buf out;

		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		e = tfs_schema_serialize(&out, &s);
		if (e)
			tfs_fail(d, e, "serialize: %s", tfs_strerror(e));
		tfs_buf_release(&out);
		tfs_schema_release(&s);
	}
	return e;
}

static enum tfs_err footer(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_footer f;
	enum tfs_err e = tfs_footer_parse(&f, b->p, b->len, b->schema, d);

	if (!e) {
		struct tfs_buf out;

		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		e = tfs_footer_serialize(&out, &f, b->schema);
		if (e)
			tfs_fail(d, e, "serialize: %s", tfs_strerror(e));
		tfs_buf_release(&out);
		tfs_footer_release(&f);
	}
	return e;
}

static enum tfs_err footer_name(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	uint32_t v;
	char *name;
	enum tfs_err e = tfs_footer_schema_name(b->p, b->len, &v, &name, d);

	tfs_free(name);
	return e;
}

static enum tfs_err rtree(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_rtree r;
	enum tfs_err e = tfs_rtree_parse(&r, b->p, b->len, b->version,
					 b->schema, d);

	if (!e) {
		struct tfs_buf out;

		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		e = tfs_rtree_serialize(&out, &r, b->version, b->schema);
		if (e)
			tfs_fail(d, e, "serialize: %s", tfs_strerror(e));
		tfs_buf_release(&out);
		tfs_rtree_release(&r);
	}
	return e;
}

static enum tfs_err u64_list(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	uint64_t *v, n;
	enum tfs_err e = tfs_u64_list_parse(b->p, b->len, &v, &n, d);

	if (!e)
		tfs_free(v);
	return e;
}

static enum tfs_err strlist(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_strlist l;
	enum tfs_err e = tfs_strlist_parse(&l, b->p, b->len, d);

	if (!e)
		tfs_strlist_release(&l);
	return e;
}

static enum tfs_err legacy(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_legacy_meta m;
	enum tfs_err e = tfs_legacy_meta_parse(&m, b->p, b->len, b->schema,
					       false, d);

	if (!e)
		tfs_legacy_meta_release(&m);
	return e;
}

static enum tfs_err meta_file(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_meta_file m;
	enum tfs_err e = tfs_meta_file_parse(&m, b->p, b->len, d);

	if (!e)
		tfs_meta_file_release(&m);
	return e;
}

static enum tfs_err cons_meta(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_consolidated_meta m;
	/* the parser takes ownership of a tfs_ allocation: the copy is part of
	 * the sweep */
	uint8_t *owned = tfs_memdup(b->p, b->len);
	enum tfs_err e;

	if (!owned)
		return tfs_fail(d, TFS_E_NOMEM, "test: cannot copy the payload");
	e = tfs_consolidated_meta_parse(&m, owned, b->len, d);
	if (!e)
		tfs_consolidated_meta_release(&m);
	return e;
}

static enum tfs_err con_file(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_con_file c;
	enum tfs_err e = tfs_con_parse(&c, b->p, b->len, d);

	if (!e)
		tfs_con_release(&c);
	return e;
}

static enum tfs_err lines(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_strlist l;
	enum tfs_err e = tfs_lines_parse(&l, b->p, b->len);

	if (e)
		return tfs_fail(d, e, "lines: %s", tfs_strerror(e));
	tfs_strlist_release(&l);
	return TFS_E_OK;
}

static enum tfs_err condition(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_qc_node n;
	enum tfs_err e = tfs_condition_parse(&n, b->p, b->len, NULL, d);

	if (!e)
		tfs_condition_release(&n);
	return e;
}

static enum tfs_err update(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_update u;
	enum tfs_err e = tfs_update_parse(&u, b->p, b->len, d);

	if (!e)
		tfs_update_release(&u);
	return e;
}

static enum tfs_err enumeration(const void *ctx, struct tfs_diag *d)
{
	const struct bytes *b = ctx;
	struct tfs_enumeration en;
	enum tfs_err e = tfs_enumeration_parse(&en, b->p, b->len, d);

	if (!e)
		tfs_enumeration_release(&en);
	return e;
}

static uint8_t *decoded(const char *rel, size_t *plen)
{
	char *path = tu_path(CORPUS, rel);
	size_t len;
	uint8_t *file = tu_read(path, &len), *payload;

	cr_assert(file, "%s", path);
	payload = tu_decode(file, len, NULL, plen);
	free(file);
	free(path);
	return payload;
}

Test(alloc_faults, schemas)
{
	static const char *const arrays[] = {"dense_dtypes", "enumeration",
					     "current_domain",
					     "sparse_string_dim"};

	for (size_t i = 0; i < sizeof(arrays) / sizeof(*arrays); i++) {
		char *dir = tu_path3(CORPUS, arrays[i], "__schema");
		size_t n, len;
		char **names = tu_list(dir, &n);
		char *path = tu_path(dir, names[0]);
		uint8_t *file = tu_read(path, &len);
		struct bytes b = {file, len, NULL, 0, names[0]};

		sweep(schema_file, &b, arrays[i]);
		free(file);
		free(path);
		tu_free_list(names, n);
		free(dir);
	}
}

Test(alloc_faults, fragment_metadata)
{
	static const char *const arrays[] = {"sparse_string_dim",
					     "consolidated_fragments",
					     "delete_condition", "dense_3d"};

	for (size_t i = 0; i < sizeof(arrays) / sizeof(*arrays); i++) {
		char *adir = tu_path(CORPUS, arrays[i]);
		size_t sn, fn, len, plen;
		struct tfs_schema *schemas = tu_schemas(adir, NULL, &sn);
		char **fdirs = tu_fragment_dirs(adir, &fn);
		char *path = tu_path(fdirs[0], "__fragment_metadata.tdb");
		uint8_t *file = tu_read(path, &len), *payload;
		size_t flen = (size_t)tfs_get_u64(file + len - 8);
		const uint8_t *foot = file + len - 8 - flen;
		struct bytes b = {foot, flen, &schemas[sn - 1], 22, NULL};
		struct tfs_footer f;
		struct tfs_diag d;
		uint64_t offs[3];

		sweep(footer_name, &b, arrays[i]);
		sweep(footer, &b, arrays[i]);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_footer_parse(&f, foot, flen, &schemas[sn - 1],
					      &d),
			     TFS_E_OK);
		offs[0] = f.rtree_off;
		offs[1] = f.tile_offsets_off[0];
		offs[2] = f.processed_conditions_off;
		for (int k = 0; k < 3; k++) {
			struct tfs_diag dd;
			size_t consumed;

			tfs_diag_init(&dd);
			cr_assert_eq(tfs_generic_tile_decode(
					     file + offs[k], len - offs[k], NULL,
					     1 << 30, &payload, &plen, &consumed,
					     &dd),
				     TFS_E_OK);
			b.p = payload;
			b.len = plen;
			sweep(k == 0 ? rtree : k == 1 ? u64_list : strlist, &b,
			      arrays[i]);
			tfs_free(payload);
		}
		tfs_footer_release(&f);
		free(file);
		free(path);
		tu_free_list(fdirs, fn);
		tu_free_schemas(schemas, sn);
		free(adir);
	}
}

Test(alloc_faults, legacy_v1)
{
	char *adir = tu_path(CORPUS, "legacy/non_split_coords_v1_4_0");
	size_t sn, plen;
	struct tfs_schema *schemas = tu_schemas(adir, NULL, &sn);
	uint8_t *payload = decoded("legacy/non_split_coords_v1_4_0/"
				   "__5dc2cc9cce204a189f825fd4919d0c55_"
				   "1541540586869/__fragment_metadata.tdb",
				   &plen);
	struct bytes b = {payload, plen, &schemas[0], 1, NULL};

	sweep(legacy, &b, "legacy");
	tfs_free(payload);
	tu_free_schemas(schemas, sn);
	free(adir);
}

Test(alloc_faults, metadata_consolidation_conditions)
{
	size_t plen, len, n;
	char *dir;
	char **names;
	uint8_t *payload, *file;
	struct bytes b;

	payload = decoded("metadata/__meta/__1700000002000_1700000002000_"
			  "44f2b1ee9d82693b52e16f7d670b2496",
			  &plen);
	b = (struct bytes){payload, plen, NULL, 0, NULL};
	sweep(meta_file, &b, "metadata");
	tfs_free(payload);

	dir = tu_path(CORPUS, "consolidated_fragment_meta/__fragment_meta");
	names = tu_list(dir, &n);
	{
		char *rel = tu_path("consolidated_fragment_meta/__fragment_meta",
				    names[0]);

		payload = decoded(rel, &plen);
		free(rel);
	}
	b = (struct bytes){payload, plen, NULL, 0, NULL};
	sweep(cons_meta, &b, "consolidated meta");
	tfs_free(payload);
	tu_free_list(names, n);
	free(dir);

	dir = tu_path(CORPUS, "consolidated_commits/__commits");
	names = tu_list(dir, &n);
	for (size_t i = 0; i < n; i++) {
		char *path;

		if (!strstr(names[i], ".con"))
			continue;
		path = tu_path(dir, names[i]);
		file = tu_read(path, &len);
		b = (struct bytes){file, len, NULL, 0, NULL};
		sweep(con_file, &b, ".con");
		sweep(lines, &b, "lines");
		free(file);
		free(path);
	}
	tu_free_list(names, n);
	free(dir);

	dir = tu_path(CORPUS, "delete_condition/__commits");
	names = tu_list(dir, &n);
	for (size_t i = 0; i < n; i++) {
		char *rel;

		if (!strstr(names[i], ".del"))
			continue;
		rel = tu_path("delete_condition/__commits", names[i]);
		payload = decoded(rel, &plen);
		b = (struct bytes){payload, plen, NULL, 0, NULL};
		sweep(condition, &b, ".del");
		{
			/* The same tree as an update setting "a" and "bb". */
			struct tfs_buf u;

			tfs_buf_init(&u, TFS_BUF_NO_MAX);
			cr_assert_eq(tfs_buf_append(&u, payload, plen), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u64(&u, 2), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u64(&u, 1), TFS_E_OK);
			cr_assert_eq(tfs_buf_append(&u, "a", 1), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u64(&u, 1), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u8(&u, 9), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u64(&u, 2), TFS_E_OK);
			cr_assert_eq(tfs_buf_append(&u, "bb", 2), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u64(&u, 0), TFS_E_OK);
			b = (struct bytes){u.data, u.len, NULL, 0, NULL};
			sweep(update, &b, ".upd");
			tfs_buf_release(&u);
		}
		tfs_free(payload);
		free(rel);
	}
	tu_free_list(names, n);
	free(dir);

	dir = tu_path(CORPUS, "enumeration/__schema/__enumerations");
	names = tu_list(dir, &n);
	for (size_t i = 0; i < n; i++) {
		char *rel = tu_path("enumeration/__schema/__enumerations",
				    names[i]);

		payload = decoded(rel, &plen);
		b = (struct bytes){payload, plen, NULL, 0, NULL};
		sweep(enumeration, &b, "enumeration");
		tfs_free(payload);
		free(rel);
	}
	tu_free_list(names, n);
	free(dir);
}

Test(alloc_faults, generic_tile_encode)
{
	for (long n = 0; n < MAX_ATTEMPTS; n++) {
		struct tfs_buf b;
		struct tfs_diag d;
		enum tfs_err e;

		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs_generic_tile_encode(&b, fx_schema_v22, FX_SCHEMA_V22_LEN,
					    NULL, &d);
		tfs_alloc_fail_after(-1);
		tfs_buf_release(&b);
		if (e == TFS_E_OK)
			break;
		cr_assert_eq(e, TFS_E_NOMEM, "attempt %ld: %s", n, d.msg);
	}
}
