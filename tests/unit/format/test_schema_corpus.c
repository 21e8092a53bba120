/* Every schema file of the corpus (each array's `__schema` folder, the
 * legacy `__array_schema.tdb` files): decoded, parsed, compared with what TileDB itself
 * reported (NAME.json), serialized back to the exact payload bytes; real
 * payloads cut at every length and with every bit flipped. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_test_util.h"
#include "tfs_alloc.h"

static const char *const filter_names[] = {
	"NONE", "GZIP", "ZSTD", "LZ4", "RLE", "BZIP2", "DOUBLE_DELTA",
	"BIT_WIDTH_REDUCTION", "BITSHUFFLE", "BYTESHUFFLE", "POSITIVE_DELTA",
	"AES", "CHECKSUM_MD5", "CHECKSUM_SHA256", "DICTIONARY_ENCODING",
	"SCALE_FLOAT", "XOR", "DEPRECATED", "WEBP", "DELTA",
};

/* Filters as the JSON prints them: NAME or NAME(opts); we compare the name
 * and, for compression filters, the level. */
static void check_filters(const struct tfs_pipeline *p, const struct jv *jf,
			  const char *where)
{
	cr_assert(jf && jf->t == J_ARR, "%s: no filter list", where);
	cr_assert_eq(p->count, jf->n, "%s: %u filters, JSON has %zu", where,
		     p->count, jf->n);
	for (uint32_t i = 0; i < p->count; i++) {
		const char *text = json_str(json_at(jf, i));
		const struct tfs_filter *f = &p->filters[i];
		size_t nl = strcspn(text, "(");
		const char *lv;

		cr_assert(f->type < sizeof(filter_names) / sizeof(*filter_names));
		cr_expect(strlen(filter_names[f->type]) == nl &&
				  !strncmp(text, filter_names[f->type], nl),
			  "%s: filter %u is %s, JSON says %s", where, i,
			  filter_names[f->type], text);
		lv = strstr(text, "level=");
		if (lv && f->type != TFS_FILTER_DELTA &&
		    f->type != TFS_FILTER_DOUBLE_DELTA)
			cr_expect_eq(f->level, atoi(lv + 6), "%s: %s level %d",
				     where, text, f->level);
	}
}

/* Compares value bytes (n values of type) with a JSON value: number,
 * array of numbers, string (CHAR/STRING_*) or hex (BLOB). */
static void check_value(uint8_t type, const uint8_t *bytes, uint64_t size,
			const struct jv *j, const char *where)
{
	size_t tsz = tfs_datatype_size(type);

	cr_assert(j, "%s: missing value", where);
	if (tfs_datatype_is_string(type) && j->t == J_STR) {
		cr_expect(json_str_eq(j, bytes, (size_t)size),
			  "%s: %llu bytes differ from JSON '%s'", where,
			  (unsigned long long)size, j->text);
		return;
	}
	if (j->t == J_STR && (type == TFS_BLOB || type == TFS_GEOM_WKB ||
			      type == TFS_GEOM_WKT || type == TFS_ANY)) {
		cr_expect_eq(2 * size, j->len, "%s", where);
		for (uint64_t i = 0; i < size && 2 * i + 1 < j->len; i++) {
			unsigned v;

			cr_assert(sscanf(j->text + 2 * i, "%2x", &v) == 1);
			cr_expect_eq(bytes[i], v, "%s byte %llu", where,
				     (unsigned long long)i);
		}
		return;
	}
	if (j->t == J_ARR) {
		cr_expect_eq(size, j->n * tsz, "%s: %llu bytes for %zu values",
			     where, (unsigned long long)size, j->n);
		for (size_t i = 0; i < j->n && (i + 1) * tsz <= size; i++)
			check_value(type, bytes + i * tsz, tsz, &j->items[i],
				    where);
		return;
	}
	cr_expect_eq(size, tsz, "%s: %llu bytes for one value", where,
		     (unsigned long long)size);
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_FLOAT: {
		double want = json_f64(j), got = tfs_value_as_f64(type, bytes);

		if (isnan(want))
			cr_expect(isnan(got), "%s: %g, JSON NaN", where, got);
		else
			cr_expect(got == want, "%s: %.17g, JSON %.17g", where,
				  got, want);
		break;
	}
	case TFS_CLASS_UNSIGNED:
		cr_expect_eq(tfs_value_as_u64(type, bytes), json_u64(j),
			     "%s: %llu", where,
			     (unsigned long long)tfs_value_as_u64(type, bytes));
		break;
	default:
		cr_expect_eq(tfs_value_as_i64(type, bytes), json_i64(j),
			     "%s: %lld", where,
			     (long long)tfs_value_as_i64(type, bytes));
		break;
	}
}

static const char *order_name(uint8_t o)
{
	return o == TFS_ROW_MAJOR ? "row-major"
	       : o == TFS_COL_MAJOR ? "col-major"
	       : o == TFS_HILBERT   ? "hilbert"
				    : "?";
}

static void check_schema_json(const struct tfs_schema *s, const struct jv *root,
			      const char *array)
{
	const struct jv *js = json_get(root, "schema");
	const struct jv *jdims = json_get(js, "dims");
	const struct jv *jattrs = json_get(js, "attrs");
	const struct jv *mcs = json_get(js, "max_chunk_sizes");
	const struct jv *jcd = json_get(js, "current_domain");
	const struct jv *jenums = json_get(js, "enumerations");
	char where[256];

	cr_assert(js && jdims && jattrs);
	cr_expect_eq(s->version, json_u64(json_get(root, "format_version")),
		     "%s: version", array);
	cr_expect_str_eq(json_str(json_get(root, "array_type")),
			 s->array_type == TFS_DENSE ? "dense" : "sparse", "%s",
			 array);
	cr_expect_str_eq(json_str(json_get(js, "cell_order")),
			 order_name(s->cell_order), "%s", array);
	cr_expect_str_eq(json_str(json_get(js, "tile_order")),
			 order_name(s->tile_order), "%s", array);
	cr_expect_eq(s->capacity, json_u64(json_get(js, "capacity")), "%s",
		     array);
	cr_expect_eq(s->allows_dups, json_get(js, "allows_dups")->b, "%s",
		     array);
	snprintf(where, sizeof(where), "%s coords", array);
	check_filters(&s->coords_filters, json_get(js, "coords_filters"), where);
	snprintf(where, sizeof(where), "%s offsets", array);
	check_filters(&s->offsets_filters, json_get(js, "offsets_filters"),
		      where);
	snprintf(where, sizeof(where), "%s validity", array);
	check_filters(&s->validity_filters, json_get(js, "validity_filters"),
		      where);
	cr_expect_eq(s->coords_filters.max_chunk_size,
		     json_u64(json_get(mcs, "coords")), "%s", array);
	cr_expect_eq(s->offsets_filters.max_chunk_size,
		     json_u64(json_get(mcs, "offsets")), "%s", array);
	cr_expect_eq(s->validity_filters.max_chunk_size,
		     json_u64(json_get(mcs, "validity")), "%s", array);

	cr_assert_eq(s->dim_num, jdims->n, "%s: dimension count", array);
	for (uint32_t i = 0; i < s->dim_num; i++) {
		const struct tfs_dim *dim = &s->dims[i];
		const struct jv *jd = json_at(jdims, i);
		const struct jv *dom = json_get(jd, "domain");
		const struct jv *tile = json_get(jd, "tile");

		snprintf(where, sizeof(where), "%s dim %s", array, dim->name);
		cr_expect_str_eq(dim->name, json_str(json_get(jd, "name")),
				 "%s", where);
		cr_expect_eq(dim->type, tu_type_of(json_str(json_get(jd, "type"))),
			     "%s", where);
		cr_expect_eq(dim->var, json_get(jd, "var")->b, "%s", where);
		check_filters(&dim->filters, json_get(jd, "filters"), where);
		cr_expect_eq(dim->filters.max_chunk_size,
			     json_u64(json_get(jd, "max_chunk_size")), "%s",
			     where);
		cr_expect_eq(dim->has_domain, !json_is_null(dom), "%s", where);
		if (dim->has_domain) {
			check_value(dim->type, dim->domain[0],
				    tfs_datatype_size(dim->type),
				    json_at(dom, 0), where);
			check_value(dim->type, dim->domain[1],
				    tfs_datatype_size(dim->type),
				    json_at(dom, 1), where);
		}
		cr_expect_eq(dim->has_extent, !json_is_null(tile), "%s", where);
		if (dim->has_extent && !json_is_null(tile))
			check_value(dim->type, dim->extent,
				    tfs_datatype_size(dim->type), tile, where);
	}

	cr_assert_eq(s->attr_num, jattrs->n, "%s: attribute count", array);
	for (uint32_t i = 0; i < s->attr_num; i++) {
		const struct tfs_attr *a = &s->attrs[i];
		const struct jv *ja = json_at(jattrs, i);
		const struct jv *cvn = json_get(ja, "cell_val_num");
		const struct jv *en = json_get(ja, "enumeration");
		const struct jv *fv = json_get(ja, "fill_valid");

		snprintf(where, sizeof(where), "%s attr %s", array, a->name);
		cr_expect_str_eq(a->name, json_str(json_get(ja, "name")), "%s",
				 where);
		cr_expect_eq(a->type, tu_type_of(json_str(json_get(ja, "type"))),
			     "%s", where);
		if (cvn->t == J_STR)
			cr_expect(a->var, "%s", where);
		else
			cr_expect_eq(a->cell_val_num, json_u64(cvn), "%s", where);
		cr_expect_eq(a->nullable, json_get(ja, "nullable")->b, "%s",
			     where);
		if (fv && fv->t == J_BOOL)
			cr_expect_eq(a->fill_valid != 0, fv->b, "%s", where);
		check_value(a->type, a->fill, a->fill_size,
			    json_get(ja, "fill"), where);
		check_filters(&a->filters, json_get(ja, "filters"), where);
		cr_expect_eq(a->filters.max_chunk_size,
			     json_u64(json_get(ja, "max_chunk_size")), "%s",
			     where);
		if (json_is_null(en))
			cr_expect_null(a->enumeration, "%s", where);
		else
			cr_expect_str_eq(a->enumeration, json_str(en), "%s",
					 where);
	}

	cr_expect_eq(s->enum_num, jenums ? jenums->n : 0, "%s: enumerations",
		     array);
	for (size_t k = 0; jenums && k < jenums->n; k++) {
		const char *name = json_str(json_get(json_at(jenums, k), "name"));
		bool found = false;

		for (uint32_t i = 0; i < s->enum_num; i++)
			found |= !strcmp(s->enums[i].name, name);
		cr_expect(found, "%s: enumeration %s", array, name);
	}

	cr_expect_eq(s->has_current_domain, !json_is_null(jcd),
		     "%s: current domain", array);
	if (s->has_current_domain && !json_is_null(jcd)) {
		cr_assert_eq(jcd->n, s->dim_num);
		for (uint32_t i = 0; i < s->dim_num; i++) {
			const struct tfs_range *rg = &s->current_domain[i];
			const struct jv *jr = json_at(jcd, i);

			snprintf(where, sizeof(where), "%s current domain %u",
				 array, i);
			check_value(s->dims[i].type, rg->lo, rg->lo_len,
				    json_at(jr, 0), where);
			check_value(s->dims[i].type, rg->hi, rg->hi_len,
				    json_at(jr, 1), where);
		}
	}
}

/* Parses one schema file, checks it serializes back to its payload, and
 * returns it. */
static void load_schema(struct tfs_schema *s, const char *path,
			const char *name, const uint8_t *key)
{
	size_t len, plen;
	uint8_t *file = tu_read(path, &len), *payload;
	struct tfs_diag d;
	struct tfs_buf b;

	cr_assert(file, "cannot read %s", path);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_decode(s, file, len, name, key, &d), TFS_E_OK,
		     "%s: %s", path, tfs_diag_msg(&d));
	payload = tu_decode(file, len, key, &plen);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&b, s), TFS_E_OK, "%s", path);
	cr_expect_eq(b.len, plen, "%s: serialized %zu bytes, file has %zu",
		     path, b.len, plen);
	if (b.len == plen)
		cr_expect_arr_eq(b.data, payload, plen, "%s: bytes differ", path);
	tfs_buf_release(&b);
	tfs_free(payload);
	free(file);
}

struct every_ctx {
	size_t arrays, files;
};

static void check_array(const char *rel, const struct jv *json, void *arg)
{
	struct every_ctx *ctx = arg;
	char *adir = tu_path(CORPUS, rel);
	char *dir = tu_path(adir, "__schema");
	const struct jv *js = json_get(json, "schema");
	const struct jv *tr = json_get(js, "timestamp_range");
	const struct jv *frags = json_get(json, "fragments");
	uint8_t key[32];
	bool has_key = tu_key(json, key), matched = false;
	size_t n;
	char **names = tu_list(dir, &n);
	struct tfs_schema *schemas = calloc(n + 1, sizeof(*schemas));

	cr_assert(js, "%s: no schema in the JSON", rel);
	cr_assert_gt(n, 0, "%s: no schema files", rel);
	for (size_t i = 0; i < n; i++) {
		char *path;
		struct tfs_schema *s = &schemas[i];

		if (!strcmp(names[i], "__enumerations"))
			continue;
		path = tu_path(dir, names[i]);
		load_schema(s, path, names[i], has_key ? key : NULL);
		ctx->files++;
		if (s->t1 == json_u64(json_at(tr, 0)) &&
		    s->t2 == json_u64(json_at(tr, 1))) {
			check_schema_json(s, json, rel);
			matched = true;
		}
		free(path);
	}
	cr_expect(matched, "%s: no schema file matches the JSON", rel);
	/* every fragment names one of the loaded schemas */
	for (size_t f = 0; frags && f < frags->n; f++) {
		const char *sn = json_str(json_get(json_at(frags, f), "schema"));
		bool found = false;

		for (size_t i = 0; i < n; i++)
			found |= schemas[i].name && !strcmp(schemas[i].name, sn);
		cr_expect(found, "%s: fragment schema %s not loaded", rel, sn);
	}
	ctx->arrays++;
	for (size_t i = 0; i < n; i++)
		tfs_schema_release(&schemas[i]);
	free(schemas);
	tu_free_list(names, n);
	free(dir);
	free(adir);
}

Test(schema_corpus, every_array)
{
	struct every_ctx ctx = {0, 0};

	tu_each_array(check_array, &ctx);
	/* 58 arrays at the root, 3 more inside the group */
	cr_expect_geq(ctx.arrays, 60, "%zu arrays", ctx.arrays);
	cr_expect_gt(ctx.files, ctx.arrays, "%zu schema files", ctx.files);
}

static void legacy_check(const char *array, const char *rel, const char *name,
			 uint32_t version)
{
	char sub[256];
	struct jv *json;
	char *path;
	struct tfs_schema s;

	snprintf(sub, sizeof(sub), "legacy/%s", array);
	json = tu_json(sub);
	cr_assert(json, "%s", sub);
	path = tu_path3(CORPUS, sub, rel);
	load_schema(&s, path, name, NULL);
	cr_expect_eq(s.version, version);
	check_schema_json(&s, json, sub);
	tfs_schema_release(&s);
	free(path);
	json_free(json);
}

Test(schema_corpus, legacy_v1)
{
	legacy_check("non_split_coords_v1_4_0", "__array_schema.tdb",
		     "__array_schema.tdb", 1);
}

Test(schema_corpus, legacy_v10_string_dim)
{
	legacy_check("zero_var_chunks_v10",
		     "__schema/__1693562063520_1693562063520_"
		     "87f6551825c94139b3000f0d6b7c0ac0",
		     "__1693562063520_1693562063520_"
		     "87f6551825c94139b3000f0d6b7c0ac0",
		     10);
}

Test(schema_corpus, legacy_v11)
{
	legacy_check("sparse_array_v11",
		     "__schema/__1646080196909_1646080196909_"
		     "295490b3104f401e943c4a7a58143d3a",
		     "__1646080196909_1646080196909_"
		     "295490b3104f401e943c4a7a58143d3a",
		     11);
}

Test(schema_corpus, experimental_version_refused)
{
	const char *name = "__1657562300107_1657562300107_"
			   "634feb310ce6426796198decd5dbddbf";
	char *path = tu_path3(CORPUS, "legacy/experimental_array_vUINT32_MAX/"
				      "__schema",
			      name);
	size_t len;
	uint8_t *file = tu_read(path, &len);
	struct tfs_schema s;
	struct tfs_diag d;
	char want[256];

	cr_assert(file);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_schema_decode(&s, file, len, name, NULL, &d),
		     TFS_E_UNSUPPORTED);
	snprintf(want, sizeof(want),
		 "schema '%s': unsupported format version 4294967295", name);
	cr_expect_str_eq(d.msg, want);
	/* the payload alone (its schema version is all ones too) */
	tfs_diag_init(&d);
	{
		struct tfs_generic_header h;

		cr_expect_eq(tfs_generic_header_parse(&h, file, len, &d),
			     TFS_E_UNSUPPORTED);
		cr_expect(strstr(d.msg, "unsupported format version 4294967295"));
	}
	free(file);
	free(path);
}

Test(schema_corpus, pre_format_1_refused)
{
	char *path = tu_path(CORPUS, "legacy/dense_array_v1_3_0/"
				     "__array_schema.tdb");
	size_t len;
	uint8_t *file = tu_read(path, &len);
	struct tfs_schema s;
	struct tfs_diag d;
	enum tfs_err e;

	cr_assert(file);
	tfs_diag_init(&d);
	e = tfs_schema_decode(&s, file, len, "__array_schema.tdb", NULL, &d);
	cr_expect(e == TFS_E_UNSUPPORTED || e == TFS_E_CORRUPT, "%d: %s", e,
		  d.msg);
	cr_expect(strncmp(d.msg, "schema '__array_schema.tdb': ", 29) == 0,
		  "%s", d.msg);
	free(file);
	free(path);
}

Test(schema_corpus, encrypted_needs_key)
{
	struct jv *json = tu_json("encrypted");
	char *dir = tu_path3(CORPUS, "encrypted", "__schema");
	size_t n, len;
	char **names = tu_list(dir, &n);
	char *path = tu_path(dir, names[0]);
	uint8_t *file = tu_read(path, &len), key[32];
	struct tfs_schema s;
	struct tfs_diag d;

	cr_assert(tu_key(json, key));
	tfs_diag_init(&d);
	cr_expect_eq(tfs_schema_decode(&s, file, len, names[0], NULL, &d),
		     TFS_E_KEY);
	key[5] ^= 0x40;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_schema_decode(&s, file, len, names[0], key, &d),
		     TFS_E_KEY, "%s", d.msg);
	free(file);
	free(path);
	tu_free_list(names, n);
	free(dir);
	json_free(json);
}

/* Real payloads: every prefix is corrupt, every single-bit flip is handled
 * (any code, no crash, and a parsed schema can be serialized). */
static void abuse(const char *array)
{
	char *dir = tu_path3(CORPUS, array, "__schema");
	size_t n, len, plen;
	char **names = tu_list(dir, &n);
	char *path = tu_path(dir, names[0]);
	uint8_t *file = tu_read(path, &len), *payload;

	cr_assert(file);
	payload = tu_decode(file, len, NULL, &plen);
	for (size_t k = 0; k < plen; k++) {
		struct tfs_schema s;
		struct tfs_diag d;
		enum tfs_err e;

		tfs_diag_init(&d);
		e = tfs_schema_parse(&s, payload, k, names[0], &d);
		cr_expect_eq(e, TFS_E_CORRUPT, "%s prefix %zu: %d", array, k, e);
		cr_expect(d.msg[0] && !strchr(d.msg, '\n'));
	}
	for (size_t k = 0; k < plen; k++) {
		for (int bit = 0; bit < 8; bit++) {
			struct tfs_schema s;
			struct tfs_diag d;

			payload[k] ^= (uint8_t)(1u << bit);
			tfs_diag_init(&d);
			if (tfs_schema_parse(&s, payload, plen, names[0], &d) ==
			    TFS_E_OK) {
				struct tfs_buf b;

				tfs_buf_init(&b, TFS_BUF_NO_MAX);
				cr_expect_eq(tfs_schema_serialize(&b, &s),
					     TFS_E_OK);
				tfs_buf_release(&b);
				tfs_schema_release(&s);
			} else {
				cr_expect(d.code != TFS_E_OK && d.msg[0]);
			}
			payload[k] ^= (uint8_t)(1u << bit);
		}
	}
	/* whole-file prefixes fail too */
	for (size_t k = 0; k < len; k++) {
		struct tfs_schema s;
		struct tfs_diag d;

		tfs_diag_init(&d);
		cr_expect_neq(tfs_schema_decode(&s, file, k, names[0], NULL, &d),
			      TFS_E_OK, "%s file prefix %zu", array, k);
	}
	tfs_free(payload);
	free(file);
	free(path);
	tu_free_list(names, n);
	free(dir);
}

Test(schema_corpus, abuse_dense_dtypes) { abuse("dense_dtypes"); }
Test(schema_corpus, abuse_sparse_string_dim) { abuse("sparse_string_dim"); }
Test(schema_corpus, abuse_enumeration) { abuse("enumeration"); }
Test(schema_corpus, abuse_current_domain) { abuse("current_domain"); }
Test(schema_corpus, abuse_filters_pipelines) { abuse("filters_pipelines"); }
