/* Consolidation artifacts (format/consolidated.md): `.meta` directories
 * and the footers they hold, `.con` streams with embedded deletes, `.vac`
 * and `.ign` lines, vacuum line normalisation; corpus files and broken
 * input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_test_util.h"
#include "tfs_alloc.h"

static char *find_one(const char *rel_dir, const char *suffix)
{
	char *dir = tu_path(CORPUS, rel_dir), *out = NULL;
	size_t n;
	char **names = tu_list(dir, &n);

	for (size_t i = 0; i < n && !out; i++) {
		size_t l = strlen(names[i]), s = strlen(suffix);

		if (l > s && !strcmp(names[i] + l - s, suffix))
			out = tu_path(dir, names[i]);
	}
	tu_free_list(names, n);
	free(dir);
	cr_assert(out, "no %s in %s", suffix, rel_dir);
	return out;
}

Test(consolidated, meta_file_corpus)
{
	char *path = find_one("consolidated_fragment_meta/__fragment_meta",
			      ".meta");
	char *adir = tu_path(CORPUS, "consolidated_fragment_meta");
	struct jv *json = tu_json("consolidated_fragment_meta");
	const struct jv *frags = json_get(json, "fragments");
	size_t len, plen, sn;
	uint8_t *file = tu_read(path, &len), *payload;
	struct tfs_schema *schemas = tu_schemas(adir, NULL, &sn);
	struct tfs_consolidated_meta m;
	struct tfs_diag d;

	cr_assert(file);
	payload = tu_decode(file, len, NULL, &plen);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_consolidated_meta_parse(&m, payload, plen, &d),
		     TFS_E_OK, "%s", d.msg);
	cr_expect_eq(m.count, frags->n);
	for (uint32_t i = 0; i < m.count; i++) {
		const struct tfs_meta_entry *e = &m.entries[i];
		struct tfs_footer f;
		uint32_t version;
		char *sname;
		const struct tfs_schema *s;
		char *own = tu_path3(adir, "__fragments", e->name);
		char *own_meta = tu_path(own, "__fragment_metadata.tdb");
		size_t own_len;
		uint8_t *own_file = tu_read(own_meta, &own_len);
		struct tfs_buf b;
		bool listed = false;

		for (size_t k = 0; k < frags->n; k++)
			listed |= !strcmp(json_str(json_get(json_at(frags, k),
							    "name")),
					  e->name);
		cr_expect(listed, "%s not in the JSON", e->name);
		cr_assert_eq(tfs_footer_schema_name(m.payload + e->footer_offset,
						    m.payload_len -
							    e->footer_offset,
						    &version, &sname, &d),
			     TFS_E_OK);
		s = tu_schema_named(schemas, sn, sname);
		cr_assert(s);
		cr_assert_eq(tfs_footer_parse(&f, m.payload + e->footer_offset,
					      m.payload_len - e->footer_offset,
					      s, &d),
			     TFS_E_OK, "%s: %s", e->name, d.msg);
		/* the footer equals the fragment's own one */
		cr_assert(own_file);
		cr_expect_eq(tfs_get_u64(own_file + own_len - 8), f.size);
		cr_expect_arr_eq(own_file + own_len - 8 - f.size,
				 m.payload + e->footer_offset, f.size);
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_footer_serialize(&b, &f, s), TFS_E_OK);
		cr_expect_arr_eq(b.data, m.payload + e->footer_offset, f.size);
		tfs_buf_release(&b);
		tfs_footer_release(&f);
		tfs_free(sname);
		free(own_file);
		free(own_meta);
		free(own);
	}
	tfs_consolidated_meta_release(&m);
	tfs_consolidated_meta_release(&m);

	/* every prefix of the directory fails; payload ownership is taken */
	payload = tu_decode(file, len, NULL, &plen);
	{
		size_t dir_end = 4;
		struct tfs_consolidated_meta t;

		cr_assert_eq(tfs_consolidated_meta_parse(
				     &t, tfs_memdup(payload, plen), plen, &d),
			     TFS_E_OK);
		for (uint32_t i = 0; i < t.count; i++)
			dir_end += 16 + strlen(t.entries[i].name);
		tfs_consolidated_meta_release(&t);
		for (size_t k = 0; k <= dir_end; k++) {
			tfs_diag_init(&d);
			cr_expect_eq(tfs_consolidated_meta_parse(
					     &t, tfs_memdup(payload, k), k, &d),
				     TFS_E_CORRUPT, "prefix %zu", k);
			cr_expect_null(t.payload);
		}
		/* a footer offset inside the directory */
		tfs_put_u64(payload + 4 + 8 + (size_t)tfs_get_u64(payload + 4),
			    3);
		tfs_diag_init(&d);
		cr_expect_eq(tfs_consolidated_meta_parse(
				     &t, tfs_memdup(payload, plen), plen, &d),
			     TFS_E_CORRUPT);
		cr_expect(strstr(d.msg, "footer offset 3"), "%s", d.msg);
		/* any bit of the directory flipped: no crash */
		for (size_t k = 0; k < dir_end; k++) {
			for (int bit = 0; bit < 8; bit++) {
				uint8_t *copy = tfs_memdup(payload, plen);

				cr_assert(copy);
				copy[k] ^= (uint8_t)(1u << bit);
				if (tfs_consolidated_meta_parse(&t, copy, plen,
								&d) == TFS_E_OK)
					tfs_consolidated_meta_release(&t);
			}
		}
	}
	tfs_free(payload);
	tu_free_schemas(schemas, sn);
	json_free(json);
	free(file);
	free(adir);
	free(path);
}

Test(consolidated, con_file_corpus)
{
	char *path = find_one("consolidated_commits/__commits", ".con");
	char *dir = tu_path(CORPUS, "consolidated_commits/__commits");
	size_t len, n;
	uint8_t *file = tu_read(path, &len);
	char **names = tu_list(dir, &n);
	struct tfs_con_file c;
	struct tfs_diag d;
	size_t wrt = 0;

	cr_assert(file);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_con_parse(&c, file, len, &d), TFS_E_OK, "%s", d.msg);
	cr_expect_eq(c.count, 5);
	for (size_t i = 0; i < c.count; i++) {
		cr_expect(!strncmp(c.entries[i].marker, "__commits/__", 12));
		cr_expect_eq(c.entries[i].del_size, 0);
		/* each names a .wrt file present next to it */
		for (size_t k = 0; k < n; k++)
			wrt += !strcmp(c.entries[i].marker + 10, names[k]);
	}
	cr_expect_eq(wrt, 5);
	tfs_con_release(&c);
	for (size_t k = 0; k < len; k++) {
		for (int bit = 0; bit < 8; bit++) {
			file[k] ^= (uint8_t)(1u << bit);
			if (tfs_con_parse(&c, file, len, &d) == TFS_E_OK)
				tfs_con_release(&c);
			file[k] ^= (uint8_t)(1u << bit);
		}
	}
	tu_free_list(names, n);
	free(dir);
	free(file);
	free(path);
}

/* A .con with an embedded delete built from the corpus .del file. */
Test(consolidated, con_with_delete)
{
	char *del_path = find_one("delete_condition/__commits", ".del");
	size_t del_len;
	uint8_t *del = tu_read(del_path, &del_len);
	const char *base = strrchr(del_path, '/') + 1;
	struct tfs_buf b;
	struct tfs_con_file c;
	struct tfs_diag d;
	char line[256];
	uint8_t *payload;
	size_t plen, l1;

	cr_assert(del);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_printf(&b, "__commits/__1_1_"
				       "7373915b564dbd0c770710cfd2610563_22.wrt\n"),
		     TFS_E_OK);
	l1 = b.len;
	snprintf(line, sizeof(line), "__commits/%s\n", base);
	cr_assert_eq(tfs_buf_printf(&b, "%s", line), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u64(&b, del_len), TFS_E_OK);
	cr_assert_eq(tfs_buf_append(&b, del, del_len), TFS_E_OK);
	cr_assert_eq(tfs_buf_printf(&b, "__commits/__2_2_"
				       "7373915b564dbd0c770710cfd2610563_22.upd"),
		     TFS_E_OK); /* unterminated last line */
	tfs_diag_init(&d);
	cr_assert_eq(tfs_con_parse(&c, b.data, b.len, &d), TFS_E_OK, "%s",
		     d.msg);
	cr_assert_eq(c.count, 3);
	cr_expect_eq(c.entries[1].del_size, del_len);
	cr_expect_eq(c.entries[1].del_offset, l1 + strlen(line) + 8);
	cr_expect_arr_eq(b.data + c.entries[1].del_offset, del, del_len);
	cr_expect(strstr(c.entries[2].marker, ".upd"));
	payload = tu_decode(b.data + c.entries[1].del_offset, del_len, NULL,
			    &plen);
	tfs_free(payload);
	tfs_con_release(&c);
	/* a delete size running past the end */
	for (size_t k = l1 + strlen(line); k < l1 + strlen(line) + 8 + del_len;
	     k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_con_parse(&c, b.data, k, &d), TFS_E_CORRUPT,
			     "cut at %zu", k);
	}
	tfs_buf_release(&b);
	free(del);
	free(del_path);
}

Test(consolidated, vac_corpus)
{
	char *path = find_one("consolidated_fragments/__commits", ".vac");
	struct jv *json = tu_json("consolidated_fragments");
	const struct jv *vac = json_get(json, "fragments_to_vacuum");
	size_t len;
	uint8_t *file = tu_read(path, &len);
	struct tfs_strlist l;

	cr_assert(file);
	cr_assert_eq(tfs_lines_parse(&l, file, len), TFS_E_OK);
	cr_assert_eq(l.count, vac->n);
	for (size_t i = 0; i < l.count; i++) {
		char *norm = tfs_vac_line_normalize(l.items[i]);
		char want[256];

		snprintf(want, sizeof(want), "__fragments/%s",
			 json_str(json_at(vac, i)));
		cr_expect_str_eq(norm, want);
		tfs_free(norm);
	}
	tfs_strlist_release(&l);
	json_free(json);
	free(file);
	free(path);
}

Test(consolidated, lines_and_normalize)
{
	static const char text[] = "a\n\nbb\nccc";
	struct tfs_strlist l;
	static const struct {
		const char *in, *out;
	} norm[] = {
		{"/__fragments/__1_1_u_22", "__fragments/__1_1_u_22"},
		{"__fragments/__1_1_u_22", "__fragments/__1_1_u_22"},
		{"file:///data/A/__fragments/__1_1_u_22", "__fragments/__1_1_u_22"},
		{"file:///data/A/__1_1_u_11", "__1_1_u_11"},
		{"s3://bucket/A/__meta/__1_2_u", "__meta/__1_2_u"},
		{"__meta/__1_2_u", "__meta/__1_2_u"},
		{"__1_1_u_11", "__1_1_u_11"},
		/* TileDB keeps from the first occurrence */
		{"/x/__fragments_old/A/__fragments/f", "__fragments_old/A/__fragments/f"},
	};

	cr_assert_eq(tfs_lines_parse(&l, (const uint8_t *)text, strlen(text)),
		     TFS_E_OK);
	cr_assert_eq(l.count, 3);
	cr_expect_str_eq(l.items[0], "a");
	cr_expect_str_eq(l.items[1], "bb");
	cr_expect_str_eq(l.items[2], "ccc");
	tfs_strlist_release(&l);
	cr_assert_eq(tfs_lines_parse(&l, NULL, 0), TFS_E_OK);
	cr_expect_eq(l.count, 0);
	tfs_strlist_release(&l);
	cr_expect_eq(tfs_lines_parse(&l, (const uint8_t *)"a\0b\n", 4),
		     TFS_E_CORRUPT);
	for (size_t i = 0; i < sizeof(norm) / sizeof(norm[0]); i++) {
		char *n = tfs_vac_line_normalize(norm[i].in);

		cr_expect_str_eq(n, norm[i].out, "%s", norm[i].in);
		tfs_free(n);
	}
}
