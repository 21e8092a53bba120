/* Creating arrays with enumerations (tfs_array_create, format/schema.md
 * §3, §5, §8; layout.md §9).
 *
 * Compatibility with TileDB without TileDB, as test_compat.c does for
 * fragments: the corpus `enumeration` array's schema, parsed from TileDB's
 * file with its enumerations attached, is created in memory, and every
 * file is compared with TileDB's. What may differ is what TileDB itself
 * makes up: the schema's name (timestamps, uuid), the enumeration files'
 * names (uuids) and so the names inside the files that refer to them
 * (each enumeration's path name, the schema's enumeration map), and the
 * order of that map, which is arbitrary (TileDB writes its hash map's
 * order). With TileDB's names and order put in, every payload is TileDB's
 * byte for byte, and each file is the generic tile our writer makes of its
 * payload, which for TileDB's payload is TileDB's file byte for byte.
 *
 * Then the refusals TileDB makes (attributes that cannot index an
 * enumeration, duplicate values, old format versions, missing values),
 * and a fault at every storage call leaving nothing behind. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "legacy_builder.h"
#include "tfs_alloc.h"
#include "write_test_util.h"

#define CORPUS TFS_CORPUS_DIR

static const uint8_t *read_file(struct tfs_vfs *v, const char *path, size_t *len)
{
	uint8_t *buf;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read_all(v, path, 1 << 24, &buf, len, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	return buf;
}

static uint8_t *payload_of(const uint8_t *file, size_t len, size_t *plen)
{
	uint8_t *p;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_generic_tile_decode(file, len, NULL, 1 << 24, &p, plen, NULL,
					     &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	return p;
}

/* The only entry of a folder. */
static char *only_entry(struct tfs_vfs *v, const char *dir, const char *skip)
{
	struct tfs_dirlist l;
	struct tfs_diag d;
	char *name = NULL;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(v, dir, &l, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	for (size_t i = 0; i < l.count; i++) {
		if (skip && !strcmp(l.names[i], skip))
			continue;
		cr_assert_null(name, "%s: more than one entry", dir);
		name = strdup(l.names[i]);
	}
	tfs_dirlist_release(&l);
	cr_assert(name, "%s: empty", dir);
	return name;
}

static struct tfs_enumeration *enum_copy(const struct tfs_enumeration *e)
{
	struct tfs_enumeration *c = calloc(1, sizeof(*c));

	cr_assert(c);
	*c = *e;
	c->name = tfs_strdup(e->name);
	c->path_name = NULL; /* chosen at creation */
	c->data = tfs_memdup(e->data, (size_t)e->data_size);
	c->offsets = e->offsets ? tfs_memdup(e->offsets, (size_t)e->value_num * 8) : NULL;
	cr_assert(c->name && c->data && (c->offsets || !e->offsets));
	return c;
}

/* The schema of an opened array, owned, with the array's enumerations
 * attached as the values to create. */
static void schema_to_create(struct tfs_array *a, struct tfs_schema *out)
{
	struct tfs_buf b;
	struct tfs_diag d;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_serialize(&b, tfs_array_schema(a)), TFS_E_OK);
	cr_assert_eq(tfs_schema_parse(out, b.data, b.len, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_buf_release(&b);
	for (uint32_t i = 0; i < out->enum_num; i++) {
		for (size_t k = 0; k < tfs_array_enumeration_count(a); k++) {
			const struct tfs_enumeration *e = tfs_array_enumeration(a, k);

			if (!strcmp(e->name, out->enums[i].name))
				out->enums[i].def = enum_copy(e);
		}
		cr_assert(out->enums[i].def, "%s", out->enums[i].name);
	}
}

/* Replaces every occurrence of from (a name we chose) by to (TileDB's
 * name for the same thing, as long). */
static void rename_in(uint8_t *p, size_t len, const char *from, const char *to)
{
	size_t n = strlen(from);
	unsigned hits = 0;

	cr_assert_eq(strlen(to), n);
	for (size_t i = 0; i + n <= len; i++) {
		if (!memcmp(p + i, from, n)) {
			memcpy(p + i, to, n);
			hits++;
		}
	}
	cr_assert_eq(hits, 1, "'%s' %u times", from, hits);
}

/* file = the generic tile our writer makes of payload. */
static void expect_tile_of(const uint8_t *file, size_t len, const uint8_t *payload,
			   size_t plen, const char *what)
{
	struct tfs_buf t;
	struct tfs_diag d;

	tfs_buf_init(&t, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_generic_tile_encode(&t, payload, plen, NULL, &d), TFS_E_OK);
	cr_expect(t.len == len && !memcmp(t.data, file, len), "%s: file differs", what);
	tfs_buf_release(&t);
}

static bool is_hex32(const char *s)
{
	if (strlen(s) != 32)
		return false;
	for (; *s; s++)
		if (!strchr("0123456789abcdef", *s))
			return false;
	return true;
}

Test(create_enum, compat_with_tiledb)
{
	char src[512], tdir[600], *tname, *oname;
	struct tfs_vfs *posix, *mem;
	struct tfs_open_opts oo = {0};
	struct tfs_write_opts wo = {0};
	struct tfs_array *orig, *made;
	struct tfs_schema s, ts, os;
	struct tfs_diag d;
	const uint8_t *tfile, *ofile;
	uint8_t *tpay, *opay;
	size_t tlen, olen, tplen, oplen;

	snprintf(src, sizeof(src), "%s/enumeration", CORPUS);
	cr_assert_eq(tfs_vfs_posix_new(&posix), TFS_E_OK);
	cr_assert_eq(tfs_vfs_mem_new(&mem), TFS_E_OK);
	tfs_diag_init(&d);
	oo.vfs = posix;
	oo.threads = 1;
	cr_assert_eq(tfs_array_open(src, &oo, &orig, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	schema_to_create(orig, &s);
	cr_assert_eq(s.enum_num, 2);
	wo.vfs = mem;
	cr_assert_eq(tfs_array_create("/arr", &s, &wo, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));

	/* The schema files, and the maps they hold. */
	snprintf(tdir, sizeof(tdir), "%s/__schema", src);
	tname = only_entry(posix, tdir, "__enumerations");
	oname = only_entry(mem, "/arr/__schema", "__enumerations");
	{
		struct tfs_name_info ni;

		cr_assert_eq(tfs_name_parse(oname, &ni), TFS_E_OK, "%s", oname);
		cr_expect(ni.t1 == ni.t2 && ni.t1 > 0 && is_hex32(ni.uuid), "%s", oname);
	}
	{
		char p[800];

		snprintf(p, sizeof(p), "%s/%s", tdir, tname);
		tfile = read_file(posix, p, &tlen);
		snprintf(p, sizeof(p), "/arr/__schema/%s", oname);
		ofile = read_file(mem, p, &olen);
	}
	tpay = payload_of(tfile, tlen, &tplen);
	opay = payload_of(ofile, olen, &oplen);
	expect_tile_of(ofile, olen, opay, oplen, "schema");
	expect_tile_of(tfile, tlen, tpay, tplen, "TileDB's schema");
	cr_assert_eq(tfs_schema_parse(&ts, tpay, tplen, tname, &d), TFS_E_OK);
	cr_assert_eq(tfs_schema_parse(&os, opay, oplen, oname, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(os.enum_num, ts.enum_num);

	/* Each enumeration file: TileDB's bytes once TileDB's name is in. */
	for (uint32_t i = 0; i < os.enum_num; i++) {
		const struct tfs_enum_ref *o = &os.enums[i], *t = NULL;
		const uint8_t *tef, *oef;
		uint8_t *tep, *oep;
		size_t tel, oel, tepl, oepl;
		char p[800];

		for (uint32_t k = 0; k < ts.enum_num; k++)
			if (!strcmp(ts.enums[k].name, o->name))
				t = &ts.enums[k];
		cr_assert(t, "%s", o->name);
		cr_expect(strlen(o->file) == 36 && !strncmp(o->file, "__", 2) &&
				  !strcmp(o->file + 34, "_0"),
			  "%s", o->file);
		snprintf(p, sizeof(p), "%s/__enumerations/%s", tdir, t->file);
		tef = read_file(posix, p, &tel);
		snprintf(p, sizeof(p), "/arr/__schema/__enumerations/%s", o->file);
		oef = read_file(mem, p, &oel);
		tep = payload_of(tef, tel, &tepl);
		oep = payload_of(oef, oel, &oepl);
		expect_tile_of(oef, oel, oep, oepl, o->file);
		cr_assert_eq(oepl, tepl, "%s", o->name);
		rename_in(oep, oepl, o->file, t->file);
		cr_expect_arr_eq(oep, tep, tepl, "enumeration '%s' differs", o->name);
		expect_tile_of(tef, tel, oep, oepl, t->file);
		free((void *)tef);
		free((void *)oef);
		free(tep);
		free(oep);
	}

	/* The schema: the same bytes up to the map, the same entries with
	 * TileDB's names, the same bytes after it (current domain). */
	{
		size_t map = 0, tail = 4 + 1; /* u32 version 0, empty */

		for (uint32_t i = 0; i < ts.enum_num; i++)
			map += 8 + strlen(ts.enums[i].name) + strlen(ts.enums[i].file);
		cr_assert_eq(oplen, tplen);
		cr_assert_gt(tplen, map + 4 + tail);
		size_t at = tplen - tail - map - 4;

		cr_expect_arr_eq(opay, tpay, at + 4, "schema differs before the map");
		cr_expect_arr_eq(opay + tplen - tail, tpay + tplen - tail, tail);
		for (uint32_t i = 0; i < os.enum_num; i++)
			for (uint32_t k = 0; k < ts.enum_num; k++)
				if (!strcmp(ts.enums[k].name, os.enums[i].name))
					rename_in(opay + at + 4, map, os.enums[i].file,
						  ts.enums[k].file);
		/* Ours holds TileDB's entries, maybe in another order. */
		{
			struct tfs_buf m, one;

			tfs_buf_init(&m, TFS_BUF_NO_MAX);
			tfs_buf_init(&one, TFS_BUF_NO_MAX);
			for (uint32_t k = 0; k < ts.enum_num; k++) {
				const char *n = ts.enums[k].name, *f = ts.enums[k].file;

				one.len = 0;
				cr_assert(!tfs_buf_append_u32(&one, (uint32_t)strlen(n)) &&
					  !tfs_buf_append(&one, n, strlen(n)) &&
					  !tfs_buf_append_u32(&one, (uint32_t)strlen(f)) &&
					  !tfs_buf_append(&one, f, strlen(f)));
				cr_expect(memmem(opay + at + 4, map, one.data, one.len),
					  "map entry '%s'", n);
				cr_assert(!tfs_buf_append(&m, one.data, one.len));
			}
			cr_assert_eq(m.len, map);
			cr_expect_arr_eq(tpay + at + 4, m.data, map);
			/* In TileDB's order, the whole payload is TileDB's. */
			memcpy(opay + at + 4, m.data, map);
			tfs_buf_release(&m);
			tfs_buf_release(&one);
		}
		cr_expect_arr_eq(opay, tpay, tplen);
		expect_tile_of(tfile, tlen, opay, oplen, "schema with TileDB's names");
	}

	/* What was made reads as the original, enumerations included. */
	oo.vfs = mem;
	cr_assert_eq(tfs_array_open("/arr", &oo, &made, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_array_enumeration_count(made), tfs_array_enumeration_count(orig));
	for (size_t k = 0; k < tfs_array_enumeration_count(orig); k++) {
		const struct tfs_enumeration *a = tfs_array_enumeration(orig, k);
		const struct tfs_enumeration *b = tfs_array_enumeration(made, k);

		cr_expect_str_eq(a->name, b->name);
		cr_expect(a->type == b->type && a->cell_val_num == b->cell_val_num &&
				  a->ordered == b->ordered && a->value_num == b->value_num &&
				  a->data_size == b->data_size &&
				  !memcmp(a->data, b->data, (size_t)a->data_size),
			  "%s", a->name);
	}
	tfs_array_close(made);

	tfs_schema_release(&ts);
	tfs_schema_release(&os);
	tfs_schema_release(&s);
	free(tpay);
	free(opay);
	free((void *)tfile);
	free((void *)ofile);
	free(tname);
	free(oname);
	tfs_array_close(orig);
	tfs_vfs_free(mem);
	tfs_vfs_free(posix);
}

/* A dense 1-D schema with an attribute `c` of `type` on an enumeration
 * `e` of string values (n of them: "v0", "v1", ...). */
static void enum_schema(struct tfs_schema *s, uint32_t version, uint8_t type,
			unsigned n)
{
	struct tfs_enumeration *e = calloc(1, sizeof(*e));
	struct tfs_buf data;
	struct tfs_attr *a;

	cr_assert(e);
	lb_schema_init(s, version, false, 10000);
	lb_add_dim(s, "d", TFS_INT32, 1, 100, 10);
	a = lb_add_attr(s, "c", type, 1, false);
	a->enumeration = tfs_strdup("e");
	s->enums = calloc(1, sizeof(*s->enums));
	cr_assert(s->enums && a->enumeration);
	s->enum_num = 1;
	s->enums[0].name = tfs_strdup("e");
	s->enums[0].def = e;
	e->name = tfs_strdup("e");
	e->type = TFS_STRING_UTF8;
	e->cell_val_num = TFS_VAR_NUM;
	e->value_num = n;
	e->offsets = tfs_mallocn(n ? n : 1, 8);
	tfs_buf_init(&data, TFS_BUF_NO_MAX);
	cr_assert(e->name && e->offsets);
	for (unsigned i = 0; i < n; i++) {
		e->offsets[i] = data.len;
		cr_assert(!tfs_buf_printf(&data, "v%u", i));
	}
	e->data_size = data.len;
	e->data = tfs_memdup(data.data, data.len);
	tfs_buf_release(&data);
}

static void expect_refused(struct tfs_schema *s, const char *msg)
{
	struct tfs_vfs *mem;
	struct tfs_write_opts wo = {0};
	struct tfs_diag d;
	struct tfs_stat st;

	cr_assert_eq(tfs_vfs_mem_new(&mem), TFS_E_OK);
	wo.vfs = mem;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_array_create("/a", s, &wo, &d), TFS_E_INVALID, "%s",
		     tfs_diag_msg(&d));
	cr_expect_str_eq(d.msg, msg);
	cr_assert_eq(tfs_vfs_stat(mem, "/a", &st, &d), TFS_E_OK);
	cr_expect_not(st.exists);
	tfs_vfs_free(mem);
	tfs_schema_release(s);
}

Test(create_enum, refusals)
{
	struct tfs_schema s;

	enum_schema(&s, 22, TFS_FLOAT32, 3);
	expect_refused(&s, "array '/a': attribute 'c' (enumeration 'e'): an attribute "
			   "with an enumeration needs an integer type (INT8 to UINT64)");
	enum_schema(&s, 22, TFS_UINT8, 255);
	expect_refused(&s, "array '/a': attribute 'c' (enumeration 'e'): the attribute's "
			   "type is too small to index every value of the enumeration");
	enum_schema(&s, 22, TFS_UINT8, 3);
	s.attrs[0].cell_val_num = 2;
	expect_refused(&s, "array '/a': attribute 'c' (enumeration 'e'): an attribute "
			   "with an enumeration holds one value per cell");
	enum_schema(&s, 19, TFS_UINT8, 3);
	expect_refused(&s, "array '/a': enumerations need format version 20 or later, not 19");
	enum_schema(&s, 22, TFS_UINT8, 3);
	memcpy(s.enums[0].def->data + 5, "0", 1); /* "v0", "v1", "v0" */
	expect_refused(&s, "array '/a': enumeration 'e': value 2 repeats an earlier value");
	enum_schema(&s, 22, TFS_UINT8, 3);
	tfs_enumeration_release(s.enums[0].def);
	free(s.enums[0].def);
	s.enums[0].def = NULL;
	expect_refused(&s, "array '/a': enumeration 'e' has no values given");
	enum_schema(&s, 22, TFS_UINT8, 3);
	tfs_free(s.attrs[0].enumeration);
	s.attrs[0].enumeration = tfs_strdup("f");
	expect_refused(&s, "array '/a': attribute 'c' names enumeration 'f', which the "
			   "schema lacks");
	enum_schema(&s, 22, TFS_UINT8, 3);
	tfs_free(s.enums[0].def->name);
	s.enums[0].def->name = tfs_strdup("g");
	expect_refused(&s, "array '/a': enumeration 'e' holds the values of 'g'");
	/* 254 values in a UINT8, an empty enumeration, one without users. */
	enum_schema(&s, 22, TFS_UINT8, 254);
	{
		struct tfs_vfs *mem;
		struct tfs_write_opts wo = {0};
		struct tfs_open_opts oo = {0};
		struct tfs_array *a;
		struct tfs_diag d;

		cr_assert_eq(tfs_vfs_mem_new(&mem), TFS_E_OK);
		wo.vfs = oo.vfs = mem;
		tfs_diag_init(&d);
		cr_expect_eq(tfs_array_create("/a", &s, &wo, &d), TFS_E_OK, "%s", d.msg);
		tfs_schema_release(&s);
		enum_schema(&s, 22, TFS_UINT8, 0);
		tfs_free(s.attrs[0].enumeration);
		s.attrs[0].enumeration = NULL;
		cr_expect_eq(tfs_array_create("/b", &s, &wo, &d), TFS_E_OK, "%s", d.msg);
		tfs_schema_release(&s);
		cr_assert_eq(tfs_array_open("/a", &oo, &a, &d), TFS_E_OK, "%s", d.msg);
		cr_expect_eq(tfs_array_enumeration(a, 0)->value_num, 254);
		tfs_array_close(a);
		cr_assert_eq(tfs_array_open("/b", &oo, &a, &d), TFS_E_OK, "%s", d.msg);
		cr_expect_eq(tfs_array_enumeration(a, 0)->value_num, 0);
		cr_expect_null(tfs_array_schema(a)->attrs[0].enumeration);
		tfs_array_close(a);
		tfs_vfs_free(mem);
	}
}

/* A fault at any one storage call of a creation with enumerations:
 * refused, and no folder left; allocations failing from the Nth on:
 * refused, and never an array left; encrypted arrays get encrypted
 * enumeration files. */
Test(create_enum, faults)
{
	struct tfs_vfs *mem, *faulty;
	struct tfs_write_opts wo = {0};
	struct tfs_schema s;
	struct tfs_diag d;
	unsigned long start, calls;
	long n;

	cr_assert_eq(tfs_vfs_mem_new(&mem), TFS_E_OK);
	cr_assert_eq(tfs_vfs_faulty_new(mem, &faulty), TFS_E_OK);
	enum_schema(&s, 22, TFS_INT16, 1000);
	wo.vfs = faulty;
	tfs_diag_init(&d);
	start = tfs_vfs_faulty_calls(faulty);
	cr_assert_eq(tfs_array_create("/ok", &s, &wo, &d), TFS_E_OK, "%s", d.msg);
	calls = tfs_vfs_faulty_calls(faulty) - start;
	cr_assert_gt(calls, 10);
	for (unsigned long k = 0; k < calls; k++) {
		char path[32];
		struct tfs_stat st;

		snprintf(path, sizeof(path), "/c%lu", k);
		tfs_vfs_faulty_arm(faulty, TFS_FAULT_EIO, k, true);
		tfs_diag_init(&d);
		cr_expect_neq(tfs_array_create(path, &s, &wo, &d), TFS_E_OK,
			      "fault at call %lu", k);
		tfs_vfs_faulty_arm(faulty, TFS_FAULT_NONE, 0, false);
		cr_assert_eq(tfs_vfs_stat(mem, path, &st, &d), TFS_E_OK);
		cr_expect_not(st.exists, "fault at call %lu left '%s'", k, path);
	}
	for (n = 0;; n++) {
		char path[32];
		struct tfs_stat st;
		enum tfs_err e;

		snprintf(path, sizeof(path), "/m%ld", n);
		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs_array_create(path, &s, &wo, &d);
		tfs_alloc_fail_after(-1);
		if (!e)
			break;
		cr_assert_eq(e, TFS_E_NOMEM, "allocation %ld: %s", n, d.msg);
		/* Once every allocation fails, removing what was made may fail
		 * too; it is never an array (the schema comes last). */
		cr_assert_eq(tfs_vfs_stat(mem, path, &st, &d), TFS_E_OK);
		if (st.exists) {
			struct tfs_open_opts oo = {.vfs = mem};
			struct tfs_array *a;

			cr_expect_neq(tfs_array_open(path, &oo, &a, &d), TFS_E_OK,
				      "allocation %ld left an array", n);
		}
		cr_assert_lt(n, 10000);
	}
	cr_expect_gt(n, 5);
	{
		uint8_t key[32];
		struct tfs_open_opts oo = {0};
		struct tfs_array *a;
		char *name;
		const uint8_t *f;
		size_t len;
		char p[128];

		memset(key, 7, sizeof(key));
		wo.key = oo.key = key;
		wo.vfs = oo.vfs = mem;
		cr_assert_eq(tfs_array_create("/enc", &s, &wo, &d), TFS_E_OK, "%s", d.msg);
		name = only_entry(mem, "/enc/__schema/__enumerations", NULL);
		snprintf(p, sizeof(p), "/enc/__schema/__enumerations/%s", name);
		f = read_file(mem, p, &len);
		cr_expect_eq(f[29], 1, "encryption type of the enumeration file");
		free((void *)f);
		free(name);
		cr_assert_eq(tfs_array_open("/enc", &oo, &a, &d), TFS_E_OK, "%s", d.msg);
		cr_expect_eq(tfs_array_enumeration(a, 0)->value_num, 1000);
		tfs_array_close(a);
		oo.key = NULL;
		tfs_diag_init(&d);
		cr_expect_neq(tfs_array_open("/enc", &oo, &a, &d), TFS_E_OK);
	}
	tfs_schema_release(&s);
	tfs_vfs_free(faulty);
	tfs_vfs_free(mem);
}
