/* Array metadata files (format/metadata.md): the worked example, every
 * `__meta` file of the corpus merged in timestamp order and compared with
 * the JSON, serialization round trips, truncation. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_test_util.h"
#include "tfs_alloc.h"

static const uint8_t example[] = {0x01, 0x00, 0x00, 0x00, 0x6b,
				  0x00, 0x00, 0x01, 0x00, 0x00,
				  0x00, 0x07, 0x00, 0x00, 0x00};

Test(metadata, worked_example)
{
	struct tfs_meta_file m;
	struct tfs_diag d;
	struct tfs_buf b;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_meta_file_parse(&m, example, sizeof(example), &d),
		     TFS_E_OK, "%s", d.msg);
	cr_assert_eq(m.count, 1);
	cr_expect_eq(m.entries[0].key_len, 1);
	cr_expect_str_eq(m.entries[0].key, "k");
	cr_expect_not(m.entries[0].deleted);
	cr_expect_eq(m.entries[0].type, TFS_INT32);
	cr_expect_eq(m.entries[0].value_num, 1);
	cr_expect_eq(tfs_get_u32(m.entries[0].value), 7);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_meta_file_serialize(&b, &m), TFS_E_OK);
	cr_expect_eq(b.len, sizeof(example));
	cr_expect_arr_eq(b.data, example, sizeof(example));
	tfs_buf_release(&b);
	tfs_meta_file_release(&m);

	/* an empty file is an empty list; any other prefix is corrupt */
	cr_expect_eq(tfs_meta_file_parse(&m, example, 0, &d), TFS_E_OK);
	cr_expect_eq(m.count, 0);
	tfs_meta_file_release(&m);
	for (size_t k = 1; k < sizeof(example); k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_meta_file_parse(&m, example, k, &d),
			     TFS_E_CORRUPT, "prefix %zu", k);
		cr_expect_null(m.entries);
	}
}

Test(metadata, deletes_empty_values_and_errors)
{
	struct tfs_meta_kv kv[3];
	struct tfs_meta_file m = {kv, 3}, p;
	struct tfs_buf b;
	struct tfs_diag d;
	uint8_t val[2] = {0xab, 0xcd};

	memset(kv, 0, sizeof(kv));
	kv[0].key = "gone";
	kv[0].key_len = 4;
	kv[0].deleted = true;
	kv[1].key = "a\0b";
	kv[1].key_len = 3;
	kv[1].type = TFS_STRING_UTF8;
	kv[1].value_num = 0;
	kv[2].key = "";
	kv[2].key_len = 0;
	kv[2].type = TFS_UINT16;
	kv[2].value_num = 1;
	kv[2].value = val;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_meta_file_serialize(&b, &m), TFS_E_OK);
	cr_expect_eq(b.len, 4 + 4 + 1 + 4 + 3 + 1 + 1 + 4 + 4 + 1 + 1 + 4 + 2);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_meta_file_parse(&p, b.data, b.len, &d), TFS_E_OK);
	cr_assert_eq(p.count, 3);
	cr_expect(p.entries[0].deleted);
	cr_expect_eq(p.entries[1].key_len, 3);
	cr_expect_arr_eq(p.entries[1].key, "a\0b", 3);
	cr_expect_eq(p.entries[1].value_num, 0);
	cr_expect_eq(tfs_get_u16(p.entries[2].value), 0xcdab);
	tfs_meta_file_release(&p);

	/* invalid value type; deleted flag 2; value past the end */
	b.data[4 + 4 + 1 + 4 + 3 + 1] = 99;
	cr_expect_eq(tfs_meta_file_parse(&p, b.data, b.len, &d), TFS_E_CORRUPT);
	b.data[4 + 4 + 1 + 4 + 3 + 1] = TFS_STRING_UTF8;
	b.data[8] = 2;
	cr_expect_eq(tfs_meta_file_parse(&p, b.data, b.len, &d), TFS_E_CORRUPT);
	b.data[8] = 1;
	b.data[b.len - 3] = 2; /* value_num 2 of UINT16: 4 bytes, 2 left */
	tfs_diag_init(&d);
	cr_expect_eq(tfs_meta_file_parse(&p, b.data, b.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "array metadata: value"), "%s", d.msg);
	kv[2].type = 200;
	b.len = 0;
	cr_expect_eq(tfs_meta_file_serialize(&b, &m), TFS_E_INVALID);
	cr_expect_eq(b.len, 0);
	tfs_buf_release(&b);
}

/* Merge the files of one array (metadata.md §2) and compare with JSON. */
struct merged {
	struct tfs_meta_kv *kv[256];
	size_t n;
};

static void apply(struct merged *mg, const struct tfs_meta_kv *e)
{
	for (size_t i = 0; i < mg->n; i++) {
		if (mg->kv[i]->key_len == e->key_len &&
		    !memcmp(mg->kv[i]->key, e->key, e->key_len)) {
			mg->kv[i] = mg->kv[--mg->n];
			break;
		}
	}
	if (!e->deleted) {
		cr_assert_lt(mg->n, 256);
		mg->kv[mg->n++] = (struct tfs_meta_kv *)e;
	}
}

static void compare_value(const struct tfs_meta_kv *kv, const struct jv *jv,
			  const char *where)
{
	const struct jv *values = json_get(jv, "values");
	size_t tsz = tfs_datatype_size(kv->type);

	cr_expect_eq(kv->type, tu_type_of(json_str(json_get(jv, "type"))),
		     "%s", where);
	if (tfs_datatype_is_string(kv->type)) {
		cr_expect(json_str_eq(json_at(values, 0), kv->value,
				      kv->value_num),
			  "%s", where);
		return;
	}
	if (kv->type == TFS_BLOB) {
		const char *hex = json_str(json_at(values, 0));

		cr_assert(hex);
		cr_expect_eq(strlen(hex), 2 * (size_t)kv->value_num, "%s", where);
		for (uint32_t i = 0; i < kv->value_num; i++) {
			unsigned v;

			cr_assert(sscanf(hex + 2 * i, "%2x", &v) == 1);
			cr_expect_eq(kv->value[i], v, "%s", where);
		}
		return;
	}
	cr_assert_eq(kv->value_num, values->n, "%s", where);
	for (uint32_t i = 0; i < kv->value_num; i++) {
		const uint8_t *p = kv->value + i * tsz;
		const struct jv *j = json_at(values, i);

		switch (tfs_datatype_class(kv->type)) {
		case TFS_CLASS_FLOAT:
			cr_expect(tfs_value_as_f64(kv->type, p) == json_f64(j) ||
					  kv->type == TFS_FLOAT32,
				  "%s", where);
			if (kv->type == TFS_FLOAT32)
				cr_expect((float)tfs_value_as_f64(kv->type, p) ==
						  (float)json_f64(j),
					  "%s", where);
			break;
		case TFS_CLASS_UNSIGNED:
			cr_expect_eq(tfs_value_as_u64(kv->type, p), json_u64(j),
				     "%s", where);
			break;
		default:
			cr_expect_eq(tfs_value_as_i64(kv->type, p), json_i64(j),
				     "%s", where);
			break;
		}
	}
}

struct meta_ctx {
	size_t arrays, files;
};

static void check_meta_dir(const char *rel, const struct jv *json,
			   struct meta_ctx *ctx)
{
	char *dir = tu_path3(CORPUS, rel, "__meta");
	const struct jv *jmeta = json_get(json, "metadata");
	size_t n;
	char **names = tu_list(dir, &n);
	struct tfs_meta_file *files = calloc(n + 1, sizeof(*files));
	uint8_t key[32];
	bool has_key = tu_key(json, key);
	struct merged mg = {{0}, 0};

	/* sorted names = sorted by t1 here (equal-width timestamps) */
	for (size_t i = 0; i < n; i++) {
		char *path = tu_path(dir, names[i]);
		size_t len, plen;
		uint8_t *file, *payload;
		struct tfs_diag d;
		struct tfs_buf b;

		if (strstr(names[i], ".vac")) {
			free(path);
			continue;
		}
		file = tu_read(path, &len);
		payload = tu_decode(file, len, has_key ? key : NULL, &plen);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_meta_file_parse(&files[i], payload, plen, &d),
			     TFS_E_OK, "%s: %s", path, d.msg);
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_meta_file_serialize(&b, &files[i]), TFS_E_OK);
		cr_expect_eq(b.len, plen, "%s", path);
		if (b.len == plen)
			cr_expect_arr_eq(b.data, payload, plen, "%s", path);
		tfs_buf_release(&b);
		for (size_t k = 0; k < files[i].count; k++)
			apply(&mg, &files[i].entries[k]);
		/* cut anywhere inside an entry, or any bit flipped: no crash */
		for (size_t k = 0; k < plen; k++) {
			struct tfs_meta_file t;

			tfs_diag_init(&d);
			if (tfs_meta_file_parse(&t, payload, k, &d) == TFS_E_OK)
				tfs_meta_file_release(&t);
			for (int bit = 0; bit < 8; bit++) {
				payload[k] ^= (uint8_t)(1u << bit);
				if (tfs_meta_file_parse(&t, payload, plen, &d) ==
				    TFS_E_OK)
					tfs_meta_file_release(&t);
				payload[k] ^= (uint8_t)(1u << bit);
			}
		}
		ctx->files++;
		tfs_free(payload);
		free(file);
		free(path);
	}
	cr_expect_eq(mg.n, jmeta ? jmeta->n : 0, "%s: %zu keys", rel, mg.n);
	for (size_t i = 0; i < mg.n; i++) {
		const struct jv *jv = json_get(jmeta, mg.kv[i]->key);
		char where[256];

		snprintf(where, sizeof(where), "%s key %s", rel, mg.kv[i]->key);
		cr_expect(jv, "%s missing from the JSON", where);
		if (jv)
			compare_value(mg.kv[i], jv, where);
	}
	if (n)
		ctx->arrays++;
	for (size_t i = 0; i < n; i++)
		tfs_meta_file_release(&files[i]);
	free(files);
	tu_free_list(names, n);
	free(dir);
}

static void each(const char *rel, const struct jv *json, void *arg)
{
	check_meta_dir(rel, json, arg);
}

Test(metadata, corpus)
{
	struct meta_ctx ctx = {0, 0};
	struct jv *group = tu_json("group");
	struct jv *at = tu_json("metadata@1700000002000");

	tu_each_array(each, &ctx);
	check_meta_dir("group", group, &ctx); /* group metadata: same format */
	cr_expect_geq(ctx.arrays, 4, "%zu arrays with metadata", ctx.arrays);
	cr_expect_geq(ctx.files, 5);
	json_free(group);
	json_free(at);
}

Test(metadata, corpus_time_travel)
{
	/* metadata@1700000002000.json: only the first file applies */
	struct jv *json = tu_json("metadata@1700000002000");
	char *path = tu_path(CORPUS, "metadata/__meta/__1700000002000_"
				     "1700000002000_"
				     "44f2b1ee9d82693b52e16f7d670b2496");
	size_t len, plen;
	uint8_t *file = tu_read(path, &len), *payload;
	struct tfs_meta_file m;
	struct tfs_diag d;
	const struct jv *jmeta = json_get(json, "metadata");
	size_t live = 0;

	cr_assert(json && file);
	payload = tu_decode(file, len, NULL, &plen);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_meta_file_parse(&m, payload, plen, &d), TFS_E_OK);
	for (size_t i = 0; i < m.count; i++) {
		const struct jv *jv = json_get(jmeta, m.entries[i].key);

		if (m.entries[i].deleted)
			continue;
		live++;
		cr_expect(jv, "key %s", m.entries[i].key);
		if (jv)
			compare_value(&m.entries[i], jv, m.entries[i].key);
	}
	cr_expect_eq(live, jmeta->n);
	tfs_meta_file_release(&m);
	tfs_free(payload);
	free(file);
	free(path);
	json_free(json);
}
