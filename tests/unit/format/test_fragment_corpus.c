/* Fragment metadata of every fragment in the corpus: the footer located as
 * fragment.md §3 says, parsed with the fragment's own schema, compared
 * with the corpus JSON (version, dense flag, non-empty domain, schema) and
 * written back byte for byte; the R-tree and every per-slot generic tile it
 * points to; the v1 legacy metadata; real footers cut and bit-flipped. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_test_util.h"
#include "tfs_alloc.h"

struct frag_file {
	uint8_t *data;
	size_t len;
	size_t footer_at, footer_len; /* footer_len 0 = fixed-size rule */
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool has_var_dim(const struct tfs_schema *s)
{
	for (uint32_t i = 0; i < s->dim_num; i++)
		if (s->dims[i].var)
			return true;
	return false;
}

/* fragment.md §3: where the footer starts. */
static void locate(struct frag_file *ff, uint32_t name_version,
		   const struct tfs_schema *legacy_schema)
{
	if (name_version >= 10 || !legacy_schema || has_var_dim(legacy_schema)) {
		cr_assert_geq(ff->len, 8);
		ff->footer_len = (size_t)tfs_get_u64(ff->data + ff->len - 8);
		cr_assert_leq(ff->footer_len, ff->len - 8);
		ff->footer_at = ff->len - 8 - ff->footer_len;
	} else {
		uint64_t size = tfs_footer_fixed_size(name_version,
						      legacy_schema);

		cr_assert_gt(size, 0);
		cr_assert_leq(size, ff->len);
		ff->footer_at = ff->len - (size_t)size;
		ff->footer_len = 0;
	}
}

static uint8_t *tile_at(const struct frag_file *ff, uint64_t off,
			const uint8_t *key, size_t *plen)
{
	struct tfs_diag d;
	uint8_t *payload;
	size_t consumed;

	cr_assert_lt(off, ff->footer_at, "generic tile offset %llu",
		     (unsigned long long)off);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_generic_tile_decode(ff->data + off, ff->footer_at - off,
					     key, TFS_FORMAT_MAX_PAYLOAD,
					     &payload, plen, &consumed, &d),
		     TFS_E_OK, "tile at %llu: %s", (unsigned long long)off,
		     d.msg);
	return payload;
}

static const struct jv *json_fragment(const struct jv *json, const char *name)
{
	const struct jv *frags = json_get(json, "fragments");

	for (size_t i = 0; frags && i < frags->n; i++)
		if (!strcmp(json_str(json_get(json_at(frags, i), "name")), name))
			return json_at(frags, i);
	return NULL;
}

static void check_range(uint8_t type, const struct tfs_range *rg,
			const struct jv *jr, const char *where)
{
	const struct jv *lo = json_at(jr, 0), *hi = json_at(jr, 1);

	cr_assert(lo && hi, "%s", where);
	if (tfs_datatype_is_string(type)) {
		cr_expect(json_str_eq(lo, rg->lo, (size_t)rg->lo_len), "%s lo",
			  where);
		cr_expect(json_str_eq(hi, rg->hi, (size_t)rg->hi_len), "%s hi",
			  where);
		return;
	}
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_FLOAT:
		cr_expect(tfs_value_as_f64(type, rg->lo) == json_f64(lo), "%s",
			  where);
		cr_expect(tfs_value_as_f64(type, rg->hi) == json_f64(hi), "%s",
			  where);
		break;
	case TFS_CLASS_UNSIGNED:
		cr_expect_eq(tfs_value_as_u64(type, rg->lo), json_u64(lo), "%s",
			     where);
		cr_expect_eq(tfs_value_as_u64(type, rg->hi), json_u64(hi), "%s",
			     where);
		break;
	default:
		cr_expect_eq(tfs_value_as_i64(type, rg->lo), json_i64(lo), "%s",
			     where);
		cr_expect_eq(tfs_value_as_i64(type, rg->hi), json_i64(hi), "%s",
			     where);
		break;
	}
}

/* R-tree and per-slot lists of one fragment. */
static void check_tiles(const struct frag_file *ff, const struct tfs_footer *f,
			const struct tfs_schema *s, const uint8_t *key,
			const char *where)
{
	struct tfs_rtree rt;
	struct tfs_diag d;
	struct tfs_buf b;
	uint8_t *p;
	size_t plen;
	uint64_t tiles = 0;

	p = tile_at(ff, f->rtree_off, key, &plen);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_rtree_parse(&rt, p, plen, f->version, s, &d), TFS_E_OK,
		     "%s: %s", where, d.msg);
	if (f->dense)
		cr_expect_eq(rt.leaf_num, 0, "%s", where);
	else
		cr_expect_eq(rt.leaf_num, f->sparse_tile_num, "%s", where);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_rtree_serialize(&b, &rt, f->version, s), TFS_E_OK);
	cr_expect_eq(b.len, plen, "%s: R-tree %zu bytes, file %zu", where,
		     b.len, plen);
	if (b.len == plen)
		cr_expect_arr_eq(b.data, p, plen, "%s: R-tree bytes", where);
	tfs_buf_release(&b);
	/* every leaf lies in the non-empty domain (fixed numeric dims) */
	for (uint64_t t = 0; !f->empty && t < rt.leaf_num; t++) {
		for (uint32_t i = 0; i < s->dim_num; i++) {
			const struct tfs_range *r = &rt.leaves[t * s->dim_num + i];

			if (s->dims[i].var)
				continue;
			cr_expect_geq(tfs_value_cmp(s->dims[i].type, r->lo,
						    f->ned[i].lo),
				      0, "%s: leaf %llu", where,
				      (unsigned long long)t);
			cr_expect_leq(tfs_value_cmp(s->dims[i].type, r->hi,
						    f->ned[i].hi),
				      0, "%s: leaf %llu", where,
				      (unsigned long long)t);
		}
	}
	tfs_rtree_release(&rt);
	tfs_free(p);

	for (uint32_t slot = 0; slot < f->slot_num; slot++) {
		const uint64_t *offs[] = {
			f->tile_offsets_off, f->tile_var_offsets_off,
			f->tile_var_sizes_off,
			f->version >= 7 ? f->tile_validity_offsets_off : NULL,
			f->tile_null_counts_off};

		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			uint64_t *list, count;
			struct tfs_buf lb;

			if (!offs[k])
				continue;
			p = tile_at(ff, offs[k][slot], key, &plen);
			tfs_diag_init(&d);
			cr_assert_eq(tfs_u64_list_parse(p, plen, &list, &count,
							&d),
				     TFS_E_OK, "%s slot %u list %zu: %s", where,
				     slot, k, d.msg);
			if (k == 0 && slot == 0)
				tiles = count;
			if (k < 4)
				cr_expect_eq(count, tiles,
					     "%s slot %u list %zu count", where,
					     slot, k);
			else
				cr_expect(count == tiles || count == 0, "%s",
					  where);
			tfs_buf_init(&lb, TFS_BUF_NO_MAX);
			cr_assert_eq(tfs_u64_list_serialize(&lb, list, count),
				     TFS_E_OK);
			cr_expect_eq(lb.len, plen);
			if (lb.len == plen)
				cr_expect_arr_eq(lb.data, p, plen);
			tfs_buf_release(&lb);
			/* data tiles lie inside their file */
			if (k == 0)
				for (uint64_t t = 0; t < count; t++)
					cr_expect(list[t] <= f->file_sizes[slot],
						  "%s slot %u", where, slot);
			tfs_free(list);
			tfs_free(p);
		}
	}
	if (!f->dense)
		cr_expect_eq(tiles, f->sparse_tile_num, "%s", where);

	if (f->version >= 16) {
		struct tfs_strlist pc;
		struct tfs_buf lb;

		p = tile_at(ff, f->processed_conditions_off, key, &plen);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_strlist_parse(&pc, p, plen, &d), TFS_E_OK,
			     "%s: %s", where, d.msg);
		tfs_buf_init(&lb, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_strlist_serialize(&lb, &pc), TFS_E_OK);
		cr_expect_eq(lb.len, plen);
		tfs_buf_release(&lb);
		tfs_strlist_release(&pc);
		tfs_free(p);
	}
}

static void check_fragment(const char *array, const char *fdir,
			   const struct jv *json, const struct tfs_schema *schemas,
			   size_t schema_n, const uint8_t *key, size_t *count)
{
	const char *name = base_name(fdir);
	char *path = tu_path(fdir, "__fragment_metadata.tdb");
	struct frag_file ff;
	struct tfs_name_info ni;
	const struct tfs_schema *legacy =
		tu_schema_named(schemas, schema_n, "__array_schema.tdb");
	const struct tfs_schema *s;
	const struct jv *jf = json_fragment(json, name);
	struct tfs_footer f;
	struct tfs_diag d;
	struct tfs_buf b;
	uint32_t version;
	char *schema_name, where[512];

	snprintf(where, sizeof(where), "%s/%s", array, name);
	cr_assert_eq(tfs_name_parse(name, &ni), TFS_E_OK, "%s", where);
	ff.data = tu_read(path, &ff.len);
	cr_assert(ff.data, "%s", path);
	free(path);
	if (ni.version <= 2) {
		free(ff.data);
		return; /* legacy metadata: see legacy_v1 */
	}
	locate(&ff, ni.version, legacy);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_footer_schema_name(ff.data + ff.footer_at,
					    ff.len - ff.footer_at, &version,
					    &schema_name, &d),
		     TFS_E_OK, "%s: %s", where, d.msg);
	s = tu_schema_named(schemas, schema_n,
			    schema_name ? schema_name : "__array_schema.tdb");
	cr_assert(s, "%s: schema %s not found", where, schema_name);
	cr_assert_eq(tfs_footer_parse(&f, ff.data + ff.footer_at,
				      ff.len - ff.footer_at, s, &d),
		     TFS_E_OK, "%s: %s", where, d.msg);
	cr_expect_eq(f.version, ni.version, "%s: version", where);
	if (ff.footer_len && f.version != 11)
		cr_expect_eq(f.size, ff.footer_len, "%s: footer size", where);
	if (!ff.footer_len)
		cr_expect_eq(f.size, ff.len - ff.footer_at, "%s", where);
	cr_expect_eq(f.slot_num,
		     tfs_slot_count(f.version, s->attr_num, s->dim_num,
				    f.has_timestamps, f.has_delete_meta));
	cr_expect_not(f.empty, "%s", where);

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_footer_serialize(&b, &f, s), TFS_E_OK, "%s", where);
	cr_expect_eq(b.len, f.size, "%s", where);
	if (b.len == f.size)
		cr_expect_arr_eq(b.data, ff.data + ff.footer_at, f.size,
				 "%s: footer bytes", where);
	tfs_buf_release(&b);

	if (jf) {
		const struct jv *ned = json_get(jf, "non_empty_domain");

		cr_expect_eq(f.version,
			     json_u64(json_get(jf, "format_version")), "%s",
			     where);
		cr_expect_eq(f.dense, json_get(jf, "dense")->b, "%s", where);
		cr_expect_str_eq(schema_name ? schema_name
					     : "__array_schema.tdb",
				 json_str(json_get(jf, "schema")), "%s", where);
		cr_assert_eq(ned->n, s->dim_num, "%s", where);
		for (uint32_t i = 0; i < s->dim_num; i++)
			check_range(s->dims[i].type, &f.ned[i],
				    json_at(ned, i), where);
		(*count)++;
	}
	check_tiles(&ff, &f, s, key, where);
	tfs_footer_release(&f);
	tfs_free(schema_name);
	free(ff.data);
}

struct every_ctx {
	size_t frags, matched, listed;
};

static void check_array(const char *rel, const struct jv *json, void *arg)
{
	struct every_ctx *ctx = arg;
	char *dir = tu_path(CORPUS, rel);
	const struct jv *jf = json_get(json, "fragments");
	uint8_t key[32];
	bool has_key = tu_key(json, key);
	size_t sn, fn;
	struct tfs_schema *schemas = tu_schemas(dir, has_key ? key : NULL, &sn);
	char **fdirs = tu_fragment_dirs(dir, &fn);

	for (size_t i = 0; i < fn; i++) {
		check_fragment(rel, fdirs[i], json, schemas, sn,
			       has_key ? key : NULL, &ctx->matched);
		ctx->frags++;
	}
	ctx->listed += jf ? jf->n : 0;
	tu_free_list(fdirs, fn);
	tu_free_schemas(schemas, sn);
	free(dir);
}

Test(fragment_corpus, every_footer)
{
	struct every_ctx ctx = {0, 0, 0};

	tu_each_array(check_array, &ctx);
	cr_expect_gt(ctx.frags, 190, "%zu fragments", ctx.frags);
	/* every fragment the JSON lists was found and compared */
	cr_expect_eq(ctx.matched, ctx.listed, "%zu of %zu JSON fragments",
		     ctx.matched, ctx.listed);
}

Test(fragment_corpus, legacy_v10_var_dim)
{
	struct every_ctx ctx = {0, 0, 0};
	struct jv *json = tu_json("legacy/zero_var_chunks_v10");

	check_array("legacy/zero_var_chunks_v10", json, &ctx);
	cr_expect_eq(ctx.frags, 1);
	cr_expect_eq(ctx.matched, 1);
	json_free(json);
}

Test(fragment_corpus, experimental_footer_refused)
{
	char *path = tu_path(CORPUS,
			     "legacy/experimental_array_vUINT32_MAX/__fragments/"
			     "__1657562300109_1657562300109_"
			     "8dc3a927a28e445080d5dfd288825e1d_4294967295/"
			     "__fragment_metadata.tdb");
	struct frag_file ff;
	struct tfs_diag d;
	uint32_t version;
	char *name;

	ff.data = tu_read(path, &ff.len);
	cr_assert(ff.data);
	locate(&ff, 4294967295u, NULL);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_schema_name(ff.data + ff.footer_at,
					    ff.len - ff.footer_at, &version,
					    &name, &d),
		     TFS_E_UNSUPPORTED);
	cr_expect_str_eq(d.msg, "footer: unsupported format version 4294967295");
	free(ff.data);
	free(path);
}

Test(fragment_corpus, legacy_v1)
{
	const char *array = "legacy/non_split_coords_v1_4_0";
	char *dir = tu_path(CORPUS, array);
	struct jv *json = tu_json(array);
	const struct jv *jf = json_at(json_get(json, "fragments"), 0);
	const struct jv *ned = json_get(jf, "non_empty_domain");
	size_t sn, fn, len, plen;
	struct tfs_schema *schemas = tu_schemas(dir, NULL, &sn);
	char **fdirs = tu_fragment_dirs(dir, &fn);
	char *path, *coords;
	uint8_t *file, *payload;
	struct tfs_legacy_meta m;
	struct tfs_diag d;
	bool dense;
	FILE *cf;

	cr_assert_eq(sn, 1);
	cr_assert_eq(fn, 1);
	path = tu_path(fdirs[0], "__fragment_metadata.tdb");
	coords = tu_path(fdirs[0], "__coords.tdb");
	cf = fopen(coords, "rb");
	dense = cf == NULL;
	if (cf)
		fclose(cf);
	file = tu_read(path, &len);
	payload = tu_decode(file, len, NULL, &plen);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_legacy_meta_parse(&m, payload, plen, &schemas[0], dense,
					   &d),
		     TFS_E_OK, "%s", d.msg);
	cr_expect_eq(m.footer.version, json_u64(json_get(jf, "format_version")));
	cr_expect_eq(m.footer.dense, json_get(jf, "dense")->b);
	cr_expect_not(m.footer.empty);
	for (uint32_t i = 0; i < 2; i++)
		check_range(TFS_INT32, &m.footer.ned[i], json_at(ned, i), array);
	cr_expect_eq(m.footer.slot_num, 2);
	cr_expect_eq(m.footer.sparse_tile_num, 1);
	cr_expect_eq(m.footer.last_tile_cell_num,
		     json_u64(json_get(jf, "cell_num")));
	cr_expect_eq(m.footer.file_sizes[0], 36); /* a.tdb */
	cr_expect_eq(m.footer.file_sizes[1], 64); /* __coords.tdb */
	cr_expect_eq(m.footer.file_var_sizes[0], 0);
	cr_expect_eq(m.footer.file_var_sizes[1], 0);
	cr_assert_eq(m.rtree.leaf_num, 1);
	cr_expect_eq(tfs_get_u32(m.rtree.leaves[0].lo), 1);
	cr_expect_eq(tfs_get_u32(m.rtree.leaves[0].hi), 4);
	cr_expect_eq(tfs_get_u32(m.rtree.leaves[1].lo), 10);
	cr_expect_eq(tfs_get_u32(m.rtree.leaves[1].hi), 10);
	cr_expect_eq(m.tile_counts[0], 1);
	cr_expect_eq(m.tile_counts[1], 1);
	cr_expect_eq(m.tile_offsets[1][0], 0);
	cr_expect_eq(m.tile_var_counts[0], 1);
	cr_expect_eq(m.tile_var_size_counts[0], 1);
	tfs_legacy_meta_release(&m);
	tfs_legacy_meta_release(&m);

	for (size_t k = 0; k < plen; k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_legacy_meta_parse(&m, payload, k, &schemas[0],
						   dense, &d),
			     TFS_E_CORRUPT, "prefix %zu", k);
	}
	for (size_t k = 0; k < plen; k++) {
		for (int bit = 0; bit < 8; bit++) {
			payload[k] ^= (uint8_t)(1u << bit);
			tfs_diag_init(&d);
			if (tfs_legacy_meta_parse(&m, payload, plen, &schemas[0],
						  dense, &d) == TFS_E_OK)
				tfs_legacy_meta_release(&m);
			payload[k] ^= (uint8_t)(1u << bit);
		}
	}
	tfs_free(payload);
	free(file);
	free(coords);
	free(path);
	tu_free_list(fdirs, fn);
	tu_free_schemas(schemas, sn);
	json_free(json);
	free(dir);
}

/* Real footers: every prefix is corrupt, every single-bit flip is handled
 * without a crash; R-trees likewise. */
static void abuse(const char *array)
{
	char *dir = tu_path(CORPUS, array);
	size_t sn, fn;
	struct tfs_schema *schemas = tu_schemas(dir, NULL, &sn);
	char **fdirs = tu_fragment_dirs(dir, &fn);
	char *path = tu_path(fdirs[0], "__fragment_metadata.tdb");
	struct frag_file ff;
	struct tfs_footer f;
	struct tfs_diag d;
	uint32_t version;
	char *schema_name;
	const struct tfs_schema *s;
	uint8_t *flen_copy, *rt;
	size_t rtlen;

	ff.data = tu_read(path, &ff.len);
	locate(&ff, 22, NULL);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_footer_schema_name(ff.data + ff.footer_at,
					    ff.footer_len, &version,
					    &schema_name, &d),
		     TFS_E_OK);
	s = tu_schema_named(schemas, sn, schema_name);
	cr_assert(s);
	flen_copy = malloc(ff.footer_len);
	memcpy(flen_copy, ff.data + ff.footer_at, ff.footer_len);
	for (size_t k = 0; k < ff.footer_len; k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_footer_parse(&f, flen_copy, k, s, &d),
			     TFS_E_CORRUPT, "%s prefix %zu", array, k);
		cr_expect(d.msg[0] && !strchr(d.msg, '\n'));
	}
	for (size_t k = 0; k < ff.footer_len; k++) {
		for (int bit = 0; bit < 8; bit++) {
			flen_copy[k] ^= (uint8_t)(1u << bit);
			tfs_diag_init(&d);
			if (tfs_footer_parse(&f, flen_copy, ff.footer_len, s,
					     &d) == TFS_E_OK)
				tfs_footer_release(&f);
			flen_copy[k] ^= (uint8_t)(1u << bit);
		}
	}
	cr_assert_eq(tfs_footer_parse(&f, flen_copy, ff.footer_len, s, &d),
		     TFS_E_OK);
	rt = tile_at(&ff, f.rtree_off, NULL, &rtlen);
	for (size_t k = 0; k < rtlen; k++) {
		struct tfs_rtree r;

		tfs_diag_init(&d);
		cr_expect_eq(tfs_rtree_parse(&r, rt, k, f.version, s, &d),
			     TFS_E_CORRUPT, "%s R-tree prefix %zu", array, k);
		for (int bit = 0; bit < 8; bit++) {
			rt[k] ^= (uint8_t)(1u << bit);
			tfs_diag_init(&d);
			if (tfs_rtree_parse(&r, rt, rtlen, f.version, s, &d) ==
			    TFS_E_OK)
				tfs_rtree_release(&r);
			rt[k] ^= (uint8_t)(1u << bit);
		}
	}
	tfs_free(rt);
	tfs_footer_release(&f);
	free(flen_copy);
	tfs_free(schema_name);
	free(ff.data);
	free(path);
	tu_free_list(fdirs, fn);
	tu_free_schemas(schemas, sn);
	free(dir);
}

Test(fragment_corpus, abuse_sparse_string_dim) { abuse("sparse_string_dim"); }
Test(fragment_corpus, abuse_dense_dtypes) { abuse("dense_dtypes"); }
Test(fragment_corpus, abuse_consolidated_fragments)
{
	abuse("consolidated_fragments");
}
Test(fragment_corpus, abuse_sparse_mixed_dims) { abuse("sparse_mixed_dims"); }
