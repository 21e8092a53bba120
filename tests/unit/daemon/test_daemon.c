/* The daemon's modules without mounting: option values, the virtual tree
 * over the public corpus, and file content. Slice files served at random
 * offsets must equal the same bytes read front to back, and both must
 * equal what the engine's query API returns for the selection. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_fixture.h"
#include "tfs_buf.h"
#include "tfs_format.h"
#include <tilefs/tfs_ingest.h>
#include <tilefs/tfs_write.h>

#define CORPUS TFS_CORPUS_DIR

/* ---- Options ---------------------------------------------------------- */

Test(options, sizes)
{
	static const struct {
		const char *text;
		uint64_t want;
		bool ok;
	} cases[] = {
		{"4096", 4096, true},        {"64k", 65536, true},
		{"256M", 256ull << 20, true}, {"1G", 1ull << 30, true},
		{"2GiB", 2ull << 30, true},   {"1T", 1ull << 40, true},
		{"", 0, false},              {"M", 0, false},
		{"12Q", 0, false},           {"-1", 0, false},
		{"99999999999999999999", 0, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0;
		enum tfs_err e = tfsd_parse_size(cases[i].text, &v);

		cr_expect_eq(e == TFS_E_OK, cases[i].ok, "'%s'", cases[i].text);
		if (cases[i].ok)
			cr_expect_eq(v, cases[i].want, "'%s'", cases[i].text);
	}
}

Test(options, keyfile)
{
	char path[64];
	int fd = mkstemp(tfs_temp_template(path, sizeof(path), "/tmp", "tfs_keyfile_"));
	FILE *f;
	struct tfsd_config c = {0};
	struct tfs_diag d;
	const uint8_t *k;
	static const char key_a[] =
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
	static const char key_def[] =
		"ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

	cr_assert(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "# keys\n\nweather/temp %s\n*\t%s\n/deep/arr/ %s\n", key_a,
		key_def, key_a);
	fclose(f);
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_keyfile_load(&c, path, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	k = tfsd_config_key(&c, "weather/temp");
	cr_assert(k);
	cr_expect_eq(k[0], 0x00);
	cr_expect_eq(k[31], 0x1f);
	k = tfsd_config_key(&c, "deep/arr");
	cr_assert(k);
	cr_expect_eq(k[1], 0x01);
	k = tfsd_config_key(&c, "other");
	cr_assert(k);
	cr_expect_eq(k[0], 0xff);
	tfsd_config_release(&c);

	f = fopen(path, "w");
	fprintf(f, "weather/temp 0011\n");
	fclose(f);
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_keyfile_load(&c, path, &d), TFS_E_INVALID);
	cr_expect(strstr(tfs_diag_msg(&d), "line 1"), "%s", tfs_diag_msg(&d));
	cr_expect(!strstr(tfs_diag_msg(&d), "0011"), "key text in message");
	tfsd_config_release(&c);

	/* Only a default key: no per-array list to sort (qsort of NULL was
	 * undefined behaviour, stopped by UBSan; found by security.sh). */
	f = fopen(path, "w");
	fprintf(f, "* %s\n", key_def);
	fclose(f);
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_keyfile_load(&c, path, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_expect_eq(c.key_num, 0);
	k = tfsd_config_key(&c, "any/array");
	cr_assert(k);
	cr_expect_eq(k[0], 0xff);
	tfsd_config_release(&c);
	unlink(path);
}

/* ---- The daemon over the corpus ---------------------------------------- */

static struct tfsd fs;

static void setup(void)
{
	dfx_start(&fs, CORPUS, 65536, 32 << 20, 8 << 20);
}

static void teardown(void)
{
	dfx_stop(&fs);
}

struct names {
	char list[8192];
	size_t n;
};

static bool collect(void *ctx, const char *name, bool is_dir)
{
	struct names *nm = ctx;
	size_t len = strlen(nm->list);

	snprintf(nm->list + len, sizeof(nm->list) - len, "%s%s|", name,
		 is_dir ? "/" : "");
	nm->n++;
	return true;
}

static void list_path(const char *vpath, struct names *nm)
{
	struct tfsd_node n;
	struct tfs_diag d;

	memset(nm, 0, sizeof(*nm));
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(&fs, vpath, &n, &d), TFS_E_OK, "%s: %s",
		     vpath, tfs_diag_msg(&d));
	cr_assert_eq(tfsd_list(&fs, &n, collect, nm, &d), TFS_E_OK, "%s: %s",
		     vpath, tfs_diag_msg(&d));
	tfsd_node_release(&fs, &n);
}

Test(tree, root_lists_arrays_and_folders, .init = setup, .fini = teardown)
{
	struct names nm;

	list_path("", &nm);
	cr_expect(strstr(nm.list, "|dense_1d/|"), "%s", nm.list);
	cr_expect(strstr(nm.list, "|legacy/|"), "%s", nm.list);
	cr_expect(strstr(nm.list, "|group/|"), "%s", nm.list);
	cr_expect(!strstr(nm.list, ".json"), "files of SOURCE are not shown");
}

Test(tree, array_view, .init = setup, .fini = teardown)
{
	struct names nm;

	fs.cfg.list_history = true;
	list_path("dense_2d_rowmajor", &nm);
	cr_expect_str_eq(nm.list,
			 "schema.json|data.csv|metadata.json|metadata/|"
			 "fragments/|versions/|preview.png|r/|c/|a/|f/|s/|"
			 "slice[1:11,1:13].csv|slice[1:11,1:13].json|"
			 "slice[1:11,1:13].npy|");
	/* An attribute folder lists its statistics too. */
	list_path("dense_2d_rowmajor/s", &nm);
	cr_expect_str_eq(nm.list,
			 "tiles/|stats.json|"
			 "slice[1:11,1:13]|slice[1:11,1:13].txt|"
			 "slice[1:11,1:13].csv|slice[1:11,1:13].json|"
			 "slice[1:11,1:13].npy|slice[1:11,1:13].offsets|");
	list_path("dense_2d_rowmajor/a/tiles", &nm);
	/* Tiles 4 × 5 over [1,10] × [1,12]: 3 × 3, clipped. */
	cr_expect_eq(nm.n, 9, "%s", nm.list);
	cr_expect(strstr(nm.list, "slice[1:5,1:6]|"), "%s", nm.list);
	cr_expect(strstr(nm.list, "slice[9:11,11:13]|"), "%s", nm.list);
	list_path("dense_2d_rowmajor/versions", &nm);
	cr_expect(strstr(nm.list, "2023-11-14T22:13:21.000Z/|"), "%s", nm.list);
	list_path("dense_2d_rowmajor/versions/2023-11-14T22:13:21.000Z", &nm);
	cr_expect(!strstr(nm.list, "versions/"), "versions inside a version");
}

/* By default history is reachable by name but not listed: recursive
 * tools walk each array once. */
Test(tree, history_hidden, .init = setup, .fini = teardown)
{
	struct names nm;

	list_path("dense_2d_rowmajor", &nm);
	cr_expect(!strstr(nm.list, "versions/"), "%s", nm.list);
	cr_expect(strstr(nm.list, "|fragments/|"), "%s", nm.list);
	list_path("dense_2d_rowmajor/s", &nm);
	cr_expect(!strstr(nm.list, "tiles/"), "%s", nm.list);
	cr_expect(strstr(nm.list, "slice[1:11,1:13]|"), "%s", nm.list);
	list_path("dense_2d_rowmajor/versions", &nm);
	cr_expect(strstr(nm.list, "2023-11-14T22:13:21.000Z/|"), "%s", nm.list);
	list_path("dense_2d_rowmajor/versions/2023-11-14T22:13:21.000Z", &nm);
	cr_expect(!strstr(nm.list, "fragments/"), "%s", nm.list);
	cr_expect(strstr(nm.list, "schema.json|"), "%s", nm.list);
	list_path("dense_2d_rowmajor/versions/2023-11-14T22:13:21.000Z/"
		  "fragments", &nm);
	cr_expect_gt(nm.n, 0, "fragments/ of a version by name");
	list_path("dense_2d_rowmajor/a/tiles", &nm);
	cr_expect_eq(nm.n, 9, "%s", nm.list);
}

Test(tree, bad_names, .init = setup, .fini = teardown)
{
	static const char *const bad[] = {
		"dense_2d_rowmajor/a/slice[abc]",
		"dense_2d_rowmajor/a/slice[1:5,1:5,1:5]",
		"dense_2d_rowmajor/a/slice[5:1]",
		"dense_2d_rowmajor/a/slice[0:500]",
		"dense_2d_rowmajor/a/slice[1:5].offsets",
		/* A fourth, empty part (found by fuzz_selection: it was
		 * written past the three parts). */
		"dense_2d_rowmajor/a/slice[1:5:2:]",
		"dense_2d_rowmajor/a/slice[1:5::,1:2]",
		"dense_2d_rowmajor/slice[1:5].txt",
		"dense_2d_rowmajor/nothing",
		"dense_2d_rowmajor/versions/versions",
		"dense_2d_rowmajor/versions/2023-11-14T22:13:21.000Z/versions",
		"no_such_array",
		"../etc",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tfsd_node n;
		struct tfs_diag d;

		tfs_diag_init(&d);
		cr_expect_eq(tfsd_resolve(&fs, bad[i], &n, &d), TFS_E_NOT_FOUND,
			     "%s", bad[i]);
	}
}

/* ---- Content ------------------------------------------------------------- */

/* Reads a whole virtual file front to back in pieces of `step` bytes. */
static uint8_t *read_all(const char *vpath, size_t step, uint64_t *len,
			 struct tfsd_size *sz)
{
	struct tfsd_node n;
	struct tfsd_file *f;
	struct tfs_diag d;
	struct tfs_buf out;
	uint64_t off = 0;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(&fs, vpath, &n, &d), TFS_E_OK, "%s: %s",
		     vpath, tfs_diag_msg(&d));
	cr_assert_eq(tfsd_file_size(&fs, &n, vpath, sz, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfsd_file_open(&fs, &n, vpath, &f, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	for (;;) {
		size_t got = 0;

		cr_assert_eq(tfs_buf_reserve(&out, step), TFS_E_OK);
		cr_assert_eq(tfsd_file_read(&fs, f, off, out.data + out.len,
					    step, &got, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		if (!got)
			break;
		out.len += got;
		off += got;
	}
	tfsd_file_close(&fs, f);
	tfsd_node_release(&fs, &n);
	*len = out.len;
	return tfs_buf_detach(&out, NULL);
}

/* Pictures: listed where small, refused where not 2-D, rendered whole
 * with an exact size, and their extended attributes say what they show. */
Test(tree, pictures, .init = setup, .fini = teardown)
{
	static const char *const refused[] = {
		"dense_2d_rowmajor/a/slice[3,1:13].png",
		"dense_2d_rowmajor/s/slice[1:11,1:13].png",
		"dense_2d_rowmajor/s/preview.png",
		"dense_2d_rowmajor/slice[1:11,1:13].png",
		"sparse_2d_float/preview.png",
	};
	struct names nm;
	struct tfsd_node n;
	struct tfsd_size sz;
	struct tfs_diag d;
	struct tfs_buf val;
	uint8_t *data;
	uint64_t len;

	list_path("dense_2d_rowmajor/a", &nm);
	/* First: tiles/ is not listed. */
	cr_expect(strncmp(nm.list, "preview.png|stats.json|slice[1:11,1:13]|",
			  40) == 0,
		  "%s", nm.list);
	cr_expect(strstr(nm.list, "|slice[1:11,1:13].png|"
				  "slice[1:11,1:13].gray.png|"),
		  "%s", nm.list);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfsd_resolve(&fs, refused[i], &n, &d),
			     TFS_E_NOT_FOUND, "%s", refused[i]);
	}
	data = read_all("dense_2d_rowmajor/a/slice[1:11:2,1:13].png", 100, &len,
			&sz);
	cr_expect(sz.exact);
	cr_expect_eq(sz.size, len);
	cr_expect(len > 8 && memcmp(data, "\x89PNG", 4) == 0);
	free(data);
	/* One dimension: a strip. */
	data = read_all("dense_1d/preview.png", 4096, &len, &sz);
	cr_expect(sz.exact && sz.size == len && len > 8);
	free(data);
	data = read_all("dense_2d_rowmajor/preview.png", 4096, &len, &sz);
	cr_expect(sz.exact);
	cr_expect_eq(sz.size, len);
	free(data);
	tfs_buf_init(&val, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(&fs,
				  "dense_2d_rowmajor/a/slice[2:4,1:13].gray.png",
				  &n, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(
		tfsd_xattr_get(&fs, &n,
			       "dense_2d_rowmajor/a/slice[2:4,1:13].gray.png",
			       "user.tilefs.colormap", &val),
		TFS_E_OK);
	cr_expect_eq(val.len, 4);
	cr_expect(memcmp(val.data, "gray", 4) == 0);
	val.len = 0;
	cr_assert_eq(
		tfsd_xattr_get(&fs, &n,
			       "dense_2d_rowmajor/a/slice[2:4,1:13].gray.png",
			       "user.tilefs.range", &val),
		TFS_E_OK);
	/* The tiles the rows 2 and 3 meet hold 101 .. 412. */
	cr_expect(val.len == 7 && memcmp(val.data, "101 412", 7) == 0, "%.*s",
		  (int)val.len, (const char *)val.data);
	val.len = 0;
	cr_assert_eq(tfsd_xattr_list(&fs, &n, "x", &val), TFS_E_OK);
	cr_expect(memmem(val.data, val.len, "user.tilefs.range", 18) != NULL);
	tfsd_node_release(&fs, &n);
	tfs_buf_release(&val);
}

/* Raw bytes of one field over a subarray through the query API. */
static uint8_t *query_field(const char *array, const char *field,
			    const struct tfs_range *sub, uint64_t *len)
{
	char path[4096];
	struct tfs_open_opts oo = {.threads = 1};
	struct tfs_query_opts qo = {.subarray = sub, .fields = &field,
				    .field_num = 1};
	struct tfs_array *a;
	struct tfs_query *q;
	struct tfs_diag d;
	struct tfs_buf out;

	snprintf(path, sizeof(path), "%s/%s", CORPUS, array);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(path, &oo, &a, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	for (;;) {
		const struct tfs_batch *b;

		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK);
		if (!b)
			break;
		cr_assert_eq(tfs_buf_append(&out, b->columns[0].data,
					    b->columns[0].data_len),
			     TFS_E_OK);
	}
	tfs_query_close(q);
	tfs_array_close(a);
	*len = out.len;
	return tfs_buf_detach(&out, NULL);
}

Test(content, raw_equals_query, .init = setup, .fini = teardown)
{
	static const struct {
		const char *array, *field, *vpath;
		int64_t lo[3], hi[3];
		unsigned nd, width; /* of the dimension type */
	} cases[] = {
		{"dense_2d_rowmajor", "a", "dense_2d_rowmajor/a/slice[1:11,1:13]",
		 {1, 1}, {10, 12}, 2, 4},
		{"dense_2d_rowmajor", "f", "dense_2d_rowmajor/f/slice[3:7,2:11]",
		 {3, 2}, {6, 10}, 2, 4},
		{"dense_2d_colmajor", "a", "dense_2d_colmajor/a/slice[2:9,3:5]",
		 {2, 3}, {8, 4}, 2, 8},
		{"dense_2d_rowmajor", "a", "dense_2d_rowmajor/a/slice[4]",
		 {4, 1}, {4, 12}, 2, 4},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tfs_range sub[3];
		int32_t narrow[3][2];
		struct tfsd_size sz;
		uint64_t want_len, got_len;
		uint8_t *want, *got;

		for (unsigned k = 0; k < cases[i].nd; k++) {
			unsigned w = cases[i].width;

			narrow[k][0] = (int32_t)cases[i].lo[k];
			narrow[k][1] = (int32_t)cases[i].hi[k];
			sub[k] = w == 4 ? (struct tfs_range){
						  (const uint8_t *)&narrow[k][0],
						  (const uint8_t *)&narrow[k][1],
						  4, 4}
					: (struct tfs_range){
						  (const uint8_t *)&cases[i].lo[k],
						  (const uint8_t *)&cases[i].hi[k],
						  8, 8};
		}
		want = query_field(cases[i].array, cases[i].field, sub,
				   &want_len);
		for (size_t step = 1; step <= 4096; step *= 7) {
			got = read_all(cases[i].vpath, step, &got_len, &sz);
			cr_assert(sz.exact, "%s: size not exact", cases[i].vpath);
			cr_expect_eq(sz.size, want_len, "%s", cases[i].vpath);
			cr_assert_eq(got_len, want_len, "%s step %zu",
				     cases[i].vpath, step);
			cr_expect(memcmp(got, want, want_len) == 0, "%s step %zu",
				  cases[i].vpath, step);
			free(got);
		}
		free(want);
	}
}

/* Every (offset, length) window of a random-access file equals the same
 * window of the front-to-back read. */
Test(content, random_windows, .init = setup, .fini = teardown)
{
	static const char *const paths[] = {
		"dense_2d_rowmajor/f/slice[1:11,1:13]",
		"dense_2d_rowmajor/a/slice[1:11,1:13].npy",
		"dense_3d/slice[:].npy",
		"dense_nullable/ni/slice[:].validity",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct tfsd_size sz;
		struct tfsd_node n;
		struct tfsd_file *f;
		struct tfs_diag d;
		uint64_t len;
		uint8_t *all = read_all(paths[i], 1 << 20, &len, &sz), *buf;

		cr_assert(sz.exact && sz.size == len, "%s", paths[i]);
		buf = malloc(len + 16);
		tfs_diag_init(&d);
		cr_assert_eq(tfsd_resolve(&fs, paths[i], &n, &d), TFS_E_OK);
		cr_assert_eq(tfsd_file_open(&fs, &n, paths[i], &f, &d), TFS_E_OK);
		srand(7);
		for (int t = 0; t < 400; t++) {
			/* Windows of every size class, some past the end. */
			uint64_t off = (uint64_t)rand() % (len + 1);
			size_t w = 1 + (size_t)rand() % (t % 2 ? 16 : len + 1);

			{
				size_t got = 0;

				cr_assert_eq(tfsd_file_read(&fs, f, off, buf, w,
							    &got, &d),
					     TFS_E_OK, "%s", tfs_diag_msg(&d));
				cr_assert_eq(got, off + w > len ? len - off : w,
					     "%s @%llu+%zu", paths[i],
					     (unsigned long long)off, w);
				cr_assert(memcmp(buf, all + off, got) == 0,
					  "%s @%llu+%zu", paths[i],
					  (unsigned long long)off, w);
			}
		}
		tfsd_file_close(&fs, f);
		tfsd_node_release(&fs, &n);
		free(buf);
		free(all);
	}
}

/* A stride picks every step-th coordinate: slice[1:11:3,2:13:4] of 'a'
 * equals those cells of the full read. */
Test(content, strides, .init = setup, .fini = teardown)
{
	struct tfsd_size sz;
	uint64_t full_len, len;
	uint8_t *full = read_all("dense_2d_rowmajor/a/slice[1:11,1:13]", 4096,
				 &full_len, &sz);
	uint8_t *got = read_all("dense_2d_rowmajor/a/slice[1:11:3,2:13:4]", 5,
				&len, &sz);
	size_t k = 0;

	cr_assert_eq(full_len, 10 * 12 * 4);
	cr_assert_eq(len, 4 * 3 * 4);
	for (int r = 1; r <= 10; r += 3)
		for (int c = 2; c <= 12; c += 4, k++)
			cr_expect(memcmp(got + 4 * k,
					 full + 4 * ((r - 1) * 12 + (c - 1)), 4) == 0,
				  "cell (%d,%d)", r, c);
	free(full);
	free(got);
}

/* data.csv of a small array is rendered whole with its exact size, and
 * the size from stat equals the bytes read. */
Test(content, small_text_has_exact_size, .init = setup, .fini = teardown)
{
	static const char *const paths[] = {
		"dense_2d_rowmajor/data.csv", "sparse_2d_int/data.csv",
		"sparse_string_dim/data.csv", "dense_nullable/slice[:].json",
		"dense_2d_rowmajor/s/slice[:]", "dense_2d_rowmajor/s/slice[:].offsets",
		"sparse_2d_int/slice[:].npy", "dense_2d_rowmajor/schema.json",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct tfsd_size sz;
		uint64_t len;
		uint8_t *all = read_all(paths[i], 100, &len, &sz);

		cr_expect(sz.exact, "%s", paths[i]);
		cr_expect_eq(sz.size, len, "%s: stat %llu, read %llu", paths[i],
			     (unsigned long long)sz.size, (unsigned long long)len);
		cr_expect(len > 0, "%s", paths[i]);
		free(all);
	}
}

/* With whole_max_cells = 0 every text file streams (size 0, direct I/O):
 * the bytes equal the whole rendering, whatever the read size, and after
 * one full read the exact size is known. */
Test(content, streamed_equals_whole, .init = setup, .fini = teardown)
{
	static const char *const paths[] = {
		"dense_2d_rowmajor/data.csv", "sparse_2d_int/slice[:].json",
		"sparse_string_dim/data.csv", "dense_nullable/ns/slice[:].txt",
		"dense_3d/slice[:].npy", "sparse_dtypes/slice[:].npy",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct tfsd_size sz;
		uint64_t whole_len, len;
		uint8_t *whole, *got;

		fs.cfg.whole_max_cells = 65536;
		whole = read_all(paths[i], 4096, &whole_len, &sz);
		cr_assert(sz.exact, "%s", paths[i]);
		fs.cfg.whole_max_cells = 0;
		tfsd_renders_free(fs.renders);
		cr_assert_eq(tfsd_renders_new(1 << 20, &fs.renders), TFS_E_OK);
		for (size_t step = 3; step < 100000; step *= 17) {
			got = read_all(paths[i], step, &len, &sz);
			cr_expect_eq(len, whole_len, "%s step %zu", paths[i], step);
			cr_expect(len == whole_len && memcmp(got, whole, len) == 0,
				  "%s step %zu", paths[i], step);
			free(got);
		}
		/* Learned after the first full pass. */
		cr_expect(sz.exact && sz.size == whole_len, "%s size", paths[i]);
		free(whole);
	}
}

/* Stops after *ctx more calls. */
static bool stop_after(void *ctx)
{
	int *left = ctx;

	return (*left)-- <= 0;
}

/* A stream's read that its stop cuts short is TFS_E_INTR and keeps what
 * was produced: the next reads go on and give the whole file. */
Test(content, stopped_read_goes_on, .init = setup, .fini = teardown)
{
	const char *vpath = "dense_2d_rowmajor/data.csv";
	struct tfsd_size sz;
	struct tfsd_node n;
	struct tfsd_file *f;
	struct tfs_diag d;
	uint64_t whole_len;
	uint8_t *whole, *got;
	size_t len;
	int left = 0;
	struct tfsd_stop never = {.fn = stop_after, .ctx = &left};

	whole = read_all(vpath, 1 << 20, &whole_len, &sz);
	cr_assert_gt(whole_len, 64);
	fs.cfg.whole_max_cells = 0;
	tfsd_renders_free(fs.renders);
	cr_assert_eq(tfsd_renders_new(1 << 20, &fs.renders), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(&fs, vpath, &n, &d), TFS_E_OK);
	cr_assert_eq(tfsd_file_open(&fs, &n, vpath, &f, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	got = calloc(1, (size_t)whole_len);
	cr_assert(got);
	cr_assert_eq(tfsd_file_read_stop(&fs, f, whole_len - 10, got, 10,
					 &len, &never, &d), TFS_E_INTR);
	cr_expect(strstr(tfs_diag_msg(&d), "interrupted"), "%s",
		  tfs_diag_msg(&d));
	left = 1; /* one step, then stopped */
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_file_read_stop(&fs, f, whole_len - 10, got, 10,
					 &len, &never, &d), TFS_E_INTR);
	left = 1 << 30;
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_file_read_stop(&fs, f, 0, got, (size_t)whole_len,
					 &len, &never, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_expect_eq(len, whole_len);
	cr_expect(len == whole_len && memcmp(got, whole, len) == 0);
	tfsd_file_close(&fs, f);
	tfsd_node_release(&fs, &n);
	free(got);
	free(whole);
}

/* ---- Groups whose members live elsewhere ----------------------------- */

static char group_root[64];

/* SOURCE = a temporary folder: data/dense_1d (a corpus array) and the
 * group grp/, whose members are "temps" -> ../data/dense_1d (in SOURCE,
 * outside the group's folder: shown in the group), "etc" -> /etc
 * (outside SOURCE: never shown), and two absolute paths spelled with
 * "..": "abs" into SOURCE (shown), "up" out of it (not shown). */
static char abs_in[160], abs_out[160];

static void group_setup(void)
{
	struct tfs_group_entry e[] = {
		{2, TFS_GROUP_MEMBER_ARRAY, true, (char *)"../data/dense_1d", true,
		 (char *)"temps", false},
		{2, TFS_GROUP_MEMBER_GROUP, false, (char *)"/etc", true,
		 (char *)"etc", false},
		/* Absolute, spelled with "..": in SOURCE, and climbing out. */
		{2, TFS_GROUP_MEMBER_ARRAY, false, abs_in, true, (char *)"abs",
		 false},
		{2, TFS_GROUP_MEMBER_ARRAY, false, abs_out, true, (char *)"up",
		 false},
	};
	struct tfs_group_details gd = {2, e, 4};
	struct tfs_buf payload, file;
	struct tfs_diag d;
	char cmd[512], path[256];
	FILE *f;

	cr_assert(tfs_temp_template(group_root, sizeof(group_root),
				    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
				    "tfsd-group-"));
	cr_assert(mkdtemp(group_root));
	snprintf(abs_in, sizeof(abs_in), "%s/grp/../data/./dense_1d",
		 group_root);
	snprintf(abs_out, sizeof(abs_out), "%s/data/../../elsewhere",
		 group_root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/data' '%s/grp/__group' '%s/grp/__meta' && "
		 "cp -r '%s/dense_1d' '%s/data/' && : > '%s/grp/__tiledb_group.tdb'",
		 group_root, group_root, group_root, CORPUS, group_root, group_root);
	cr_assert_eq(system(cmd), 0);
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_group_details_serialize(&payload, &gd), TFS_E_OK);
	cr_assert_eq(tfs_generic_tile_encode(&file, payload.data, payload.len,
					     NULL, &d),
		     TFS_E_OK);
	snprintf(path, sizeof(path),
		 "%s/grp/__group/__1700000000000_1700000000000_"
		 "0123456789abcdef0123456789abcdef_2",
		 group_root);
	f = fopen(path, "wb");
	cr_assert(f && fwrite(file.data, 1, file.len, f) == file.len);
	fclose(f);
	tfs_buf_release(&payload);
	tfs_buf_release(&file);

	memset(&fs, 0, sizeof(fs));
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_config_set_source(&fs.cfg, group_root, &d), TFS_E_OK);
	fs.cfg.whole_max_cells = 65536;
	cr_assert_eq(tfs_pool_new(0, &fs.pool), TFS_E_OK);
	cr_assert_eq(tfsd_arrays_new(&fs.cfg, NULL, fs.pool, &fs.arrays),
		     TFS_E_OK);
	cr_assert_eq(tfsd_renders_new(1 << 20, &fs.renders), TFS_E_OK);
}

static void group_teardown(void)
{
	char cmd[128];

	tfsd_renders_free(fs.renders);
	tfsd_arrays_free(fs.arrays);
	tfs_pool_free(fs.pool);
	tfsd_config_release(&fs.cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", group_root);
	cr_expect_eq(system(cmd), 0);
}

Test(tree, group_members_elsewhere, .init = group_setup,
     .fini = group_teardown)
{
	struct names nm;
	struct tfsd_node n;
	struct tfs_diag d;
	struct tfsd_size sz;
	uint64_t len, want_len;
	uint8_t *got, *want;

	list_path("grp", &nm);
	cr_expect_str_eq(nm.list, "abs/|temps/|", "group lists %s", nm.list);
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_resolve(&fs, "grp/etc", &n, &d), TFS_E_NOT_FOUND,
		     "a member outside SOURCE is shown");
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_resolve(&fs, "grp/up", &n, &d), TFS_E_NOT_FOUND,
		     "a member climbing out of SOURCE is shown");
	got = read_all("grp/abs/data.csv", 4096, &len, &sz);
	want = read_all("data/dense_1d/data.csv", 4096, &want_len, &sz);
	cr_expect(len == want_len && memcmp(got, want, len) == 0,
		  "grp/abs is data/dense_1d");
	free(got);
	free(want);
	got = read_all("grp/temps/data.csv", 4096, &len, &sz);
	want = read_all("data/dense_1d/data.csv", 4096, &want_len, &sz);
	cr_expect(len == want_len && memcmp(got, want, len) == 0,
		  "grp/temps is data/dense_1d");
	free(got);
	free(want);
}

/* A keyfile others may read or write is refused as ssh refuses such a
 * private key, unless keyfile_insecure; an unreadable one says why. */
Test(options, keyfile_modes)
{
	char path[64];
	int fd = mkstemp(tfs_temp_template(path, sizeof(path), "/tmp", "tfs_keyfile_"));
	struct tfsd_config c = {0};
	struct tfs_diag d;
	static const char line[] =
		"* 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, line, sizeof(line) - 1), (ssize_t)sizeof(line) - 1);
	close(fd);
	for (unsigned i = 0; i < 4; i++) {
		static const unsigned modes[] = {0644, 0640, 0602, 0660};

		cr_assert_eq(chmod(path, modes[i]), 0);
		tfs_diag_init(&d);
		cr_expect_eq(tfsd_keyfile_load(&c, path, &d), TFS_E_PERM,
			     "mode %o", modes[i]);
		cr_expect(strstr(tfs_diag_msg(&d), "group or others"), "%s",
			  tfs_diag_msg(&d));
		cr_expect(!c.has_default_key);
		tfsd_config_release(&c);
		c.keyfile_insecure = true;
		tfs_diag_init(&d);
		cr_expect_eq(tfsd_keyfile_load(&c, path, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		cr_expect(c.has_default_key);
		tfsd_config_release(&c);
	}
	cr_assert_eq(chmod(path, 0400), 0);
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_keyfile_load(&c, path, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfsd_config_release(&c);
	/* Not a file, no file. */
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_keyfile_load(&c, "/tmp", &d), TFS_E_INVALID);
	cr_expect(strstr(tfs_diag_msg(&d), "not a regular file"), "%s",
		  tfs_diag_msg(&d));
	unlink(path);
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_keyfile_load(&c, path, &d), TFS_E_NOT_FOUND);
	cr_expect(strstr(tfs_diag_msg(&d), "no such file"), "%s",
		  tfs_diag_msg(&d));
	tfsd_config_release(&c);
}

/* No link below SOURCE is followed: a linked array, an array whose parts
 * are links, a fragment folder that is a link, all to an array outside
 * SOURCE. The linked names do not resolve and are not listed; an array
 * whose fragment and commit are links shows only its own fragment, and
 * one whose committed fragment is a link fails to open (the fragment is
 * missing) rather than read it. */
Test(tree, links_below_source_not_followed)
{
	char root[128], cmd[2048];
	struct tfsd_node n;
	struct tfs_diag d;
	struct tfsd_arr *arr;
	struct names nm;
	size_t frags;

	dfx_temp_dir(root, sizeof(root), "tfs_links_");
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s'; mkdir src out; cp -r '%s/dense_1d' out/arr;"
		 " cp -r '%s/dense_1d' src/real; chmod -R u+w src out;"
		 " cp -r src/real src/real2;"
		 " ln -s \"$PWD/out/arr\" src/linkarr;"
		 " mkdir src/parts; for p in __schema __fragments __commits;"
		 " do ln -s \"$PWD/out/arr/$p\" src/parts/$p; done;"
		 " f=$(ls out/arr/__fragments | head -1); n=__1_1_00000000000000000000000000000001_22;"
		 " cp -r out/arr/__fragments/$f out/arr/__fragments/$n;"
		 " touch out/arr/__commits/$n.wrt;"
		 " for a in real real2; do"
		 " ln -s \"$PWD/out/arr/__fragments/$n\" src/$a/__fragments/$n; done;"
		 " ln -s \"$PWD/out/arr/__commits/$n.wrt\" src/real/__commits/$n.wrt;"
		 " touch src/real2/__commits/$n.wrt",
		 root, CORPUS, CORPUS);
	dfx_run(cmd);
	snprintf(cmd, sizeof(cmd), "%s/src", root);
	dfx_start(&fs, cmd, 65536, 1 << 20, 1 << 20);

	list_path("", &nm);
	cr_expect_str_eq(nm.list, "parts/|real/|real2/|");
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_resolve(&fs, "linkarr", &n, &d), TFS_E_NOT_FOUND);
	/* parts/ is a plain folder, empty: its parts are not followed. */
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(&fs, "parts", &n, &d), TFS_E_OK);
	cr_expect_eq(n.kind, TFSD_N_FOLDER);
	tfsd_node_release(&fs, &n);
	list_path("parts", &nm);
	cr_expect_eq(nm.n, 0, "%s", nm.list);
	tfs_diag_init(&d);
	cr_expect_neq(tfsd_arrays_get(fs.arrays, "parts", 0, &arr, &d),
		      TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_arrays_get(fs.arrays, "real", 0, &arr, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	frags = tfs_array_fragment_count(arr->a);
	tfsd_arr_put(fs.arrays, arr);
	cr_expect_eq(frags, 1);
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_arrays_get(fs.arrays, "real2", 0, &arr, &d),
		     TFS_E_CORRUPT, "%s", tfs_diag_msg(&d));
	dfx_stop(&fs);
	dfx_remove(root);
}

/* ---- The listing contract ------------------------------------------------- */

/* Every file listed under vpath (and one level of field folders) has an
 * exact size equal to what it reads; *files counts them. */
static void check_listed_sizes(const char *vpath, int depth, size_t *files)
{
	struct names nm;
	char *save, *name;

	list_path(vpath, &nm);
	for (name = strtok_r(nm.list, "|", &save); name;
	     name = strtok_r(NULL, "|", &save)) {
		char child[1024];
		size_t len = strlen(name);

		snprintf(child, sizeof(child), "%s/%.*s", vpath,
			 (int)(name[len - 1] == '/' ? len - 1 : len), name);
		if (name[len - 1] == '/') {
			if (depth > 0 && strcmp(name, "fragments/") &&
			    strcmp(name, "metadata/"))
				check_listed_sizes(child, depth - 1, files);
			continue;
		}
		{
			struct tfsd_size sz;
			uint64_t got;
			uint8_t *all = read_all(child, 65536, &got, &sz);

			cr_expect(sz.exact, "%s listed without an exact size",
				  child);
			cr_expect_eq(sz.size, got, "%s: stat %llu, read %llu",
				     child, (unsigned long long)sz.size,
				     (unsigned long long)got);
			free(all);
			(*files)++;
		}
	}
}

/* With whole_max = 16 cells × fields, text renderings of the corpus
 * arrays are too large to list; every file still listed has its exact
 * size, and those left out open by name with an exact size too. */
Test(content, listed_files_have_exact_sizes, .init = setup, .fini = teardown)
{
	static const char *const arrays[] = {
		"dense_2d_rowmajor", "sparse_2d_int", "sparse_dups",
		"dense_nullable",    "sparse_string_dim", "dense_3d",
	};
	static const char *const unlisted[] = {
		"dense_2d_rowmajor/data.csv", "sparse_2d_int/data.csv",
		"dense_2d_rowmajor/a/slice[1:11,1:13].txt",
		"sparse_dups/slice[1:5,1:5].json", "sparse_dups/s/slice[1:5,1:5]",
	};
	struct names nm;

	fs.cfg.whole_max_cells = 16;
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		size_t files = 0;

		check_listed_sizes(arrays[i], 1, &files);
		cr_expect_gt(files, 1, "%s", arrays[i]);
	}
	list_path("dense_2d_rowmajor", &nm);
	cr_expect(!strstr(nm.list, "data.csv"), "%s", nm.list);
	cr_expect(!strstr(nm.list, ".csv|"), "%s", nm.list);
	list_path("dense_2d_rowmajor/a", &nm);
	cr_expect(strstr(nm.list, "slice[1:11,1:13]|"), "%s", nm.list);
	cr_expect(strstr(nm.list, "slice[1:11,1:13].npy|"), "%s", nm.list);
	cr_expect(!strstr(nm.list, ".txt"), "%s", nm.list);
	for (size_t i = 0; i < sizeof(unlisted) / sizeof(unlisted[0]); i++) {
		struct tfsd_size sz;
		uint64_t got;
		uint8_t *all = read_all(unlisted[i], 100, &got, &sz);

		cr_expect(sz.exact, "%s", unlisted[i]);
		cr_expect(got > 0 && sz.size == got, "%s: stat %llu, read %llu",
			  unlisted[i], (unsigned long long)sz.size,
			  (unsigned long long)got);
		free(all);
	}
}

/* A dense array of 600 000 cells with nothing written (every cell the
 * fill value) under root/big. */
static void make_big(const char *root)
{
	static const char json[] =
		"{\"array_type\": \"dense\", \"attrs\": [{\"name\": \"a\", "
		"\"type\": \"INT32\"}], \"dims\": [{\"name\": \"d\", \"type\": "
		"\"INT64\", \"domain\": [0, 599999], \"tile\": 50000}]}";
	struct tfs_write_opts wo = {0};
	struct tfs_schema *s;
	struct tfs_diag d;
	char path[256];

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json_new(json, sizeof(json) - 1, &s, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	snprintf(path, sizeof(path), "%s/big", root);
	cr_assert_eq(tfs_array_create(path, s, &wo, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_schema_free(s);
}

/* Streams too large to render whole get their exact size from a counting
 * pass at the first stat (on two threads), and an index: a read at any
 * offset gives the bytes a front-to-back read gives there. */
Test(content, counted_size_and_index)
{
	static const char *const paths[] = {
		"big/slice[0:600000].csv", "big/a/slice[0:600000].json",
		"big/a/slice[17:599999].txt",
	};
	char root[128];

	dfx_temp_dir(root, sizeof(root), "tfs_counted_");
	make_big(root);
	dfx_start(&fs, root, 1024, 8 << 20, 8 << 20);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct tfsd_size sz;
		struct tfsd_node n;
		struct tfsd_file *f;
		struct tfs_diag d;
		uint64_t len;
		uint8_t *whole = read_all(paths[i], 1 << 20, &len, &sz);
		static uint8_t buf[8192];
		const uint64_t offs[] = {len / 2, len - 100, len / 4 * 3 + 7,
					 10, len - 1, len / 3};

		cr_expect(sz.exact && sz.size == len, "%s: stat %llu, read %llu",
			  paths[i], (unsigned long long)sz.size,
			  (unsigned long long)len);
		cr_assert_gt(len, (uint64_t)4 << 20, "%s", paths[i]);
		tfs_diag_init(&d);
		cr_assert_eq(tfsd_resolve(&fs, paths[i], &n, &d), TFS_E_OK);
		cr_assert_eq(tfsd_file_open(&fs, &n, paths[i], &f, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			size_t got, want = (size_t)(len - offs[k] < sizeof(buf)
							    ? len - offs[k]
							    : sizeof(buf));

			cr_assert_eq(tfsd_file_read(&fs, f, offs[k], buf,
						    sizeof(buf), &got, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			cr_expect_eq(got, want, "%s at %llu", paths[i],
				     (unsigned long long)offs[k]);
			cr_expect(got == want &&
					  memcmp(buf, whole + offs[k], got) == 0,
				  "%s: other bytes at %llu", paths[i],
				  (unsigned long long)offs[k]);
		}
		tfsd_file_close(&fs, f);
		tfsd_node_release(&fs, &n);
		free(whole);
	}
	dfx_stop(&fs);
	dfx_remove(root);
}

/* A sparse array of n cells (at most 796 800) under root/sp: x from 7
 * (a run of 4 000 cells) and 17 on (400 cells each), y, an INT32 and a
 * FLOAT64 attribute. */
/* Array root/name made from a schema's JSON, with the cells of b as one
 * fragment. */
static void write_new_array(const char *root, const char *name,
			    const char *json, size_t len,
			    const struct tfs_batch *b)
{
	struct tfs_write_opts wo = {.threads = 2};
	struct tfs_write_result res;
	struct tfs_schema *s;
	struct tfs_writer *w;
	struct tfs_diag d;
	char path[256];

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json_new(json, len, &s, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	snprintf(path, sizeof(path), "%s/%s", root, name);
	cr_assert_eq(tfs_array_create(path, s, &wo, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_schema_free(s);
	cr_assert_eq(tfs_writer_open(path, &wo, TFS_WRITE_UNORDERED, NULL, &w,
				     &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_append(w, b, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_commit(w, &res, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_writer_free(w);
}

static void make_sparse_big(const char *root, uint64_t n)
{
	static const char json[] =
		"{\"array_type\": \"sparse\", \"capacity\": 5000, \"dims\": ["
		"{\"name\": \"x\", \"type\": \"INT32\", \"domain\": [0, 1999], "
		"\"tile\": 100}, {\"name\": \"y\", \"type\": \"INT32\", "
		"\"domain\": [0, 9999], \"tile\": 1000}], \"attrs\": ["
		"{\"name\": \"i\", \"type\": \"INT32\"}, {\"name\": \"v\", "
		"\"type\": \"FLOAT64\"}]}";
	int32_t *x = malloc(n * 4), *y = malloc(n * 4), *iv = malloc(n * 4);
	double *v = malloc(n * 8);
	struct tfs_column cols[4] = {
		{.name = "x", .type = TFS_INT32, .cell_val_num = 1,
		 .is_dim = true, .data = (uint8_t *)x, .data_len = n * 4},
		{.name = "y", .type = TFS_INT32, .cell_val_num = 1,
		 .is_dim = true, .data = (uint8_t *)y, .data_len = n * 4},
		{.name = "i", .type = TFS_INT32, .cell_val_num = 1,
		 .data = (uint8_t *)iv, .data_len = n * 4},
		{.name = "v", .type = TFS_FLOAT64, .cell_val_num = 1,
		 .data = (uint8_t *)v, .data_len = n * 8}};
	struct tfs_batch b = {.cell_num = n, .column_num = 4, .columns = cols};

	cr_assert(x && y && iv && v);
	for (uint64_t k = 0; k < n; k++) {
		/* 4 000 cells at x = 7, then 400 per x from x = 17 on */
		x[k] = k < 4000 ? 7 : 17 + (int32_t)((k - 4000) / 400);
		/* y is unique within each x */
		y[k] = (int32_t)(k % 4000 * 2 + 1);
		iv[k] = (int32_t)(k * 2654435761u) - 7;
		v[k] = (double)((int64_t)k - 240000) / 7.0;
	}
	write_new_array(root, "sp", json, sizeof(json) - 1, &b);
	free(x);
	free(y);
	free(iv);
	free(v);
}

/* Reads 24 pieces of file f of len bytes (the first the last 100 bytes,
 * then random offsets) and compares them with whole. The first must
 * produce only the cells after the last mark before it. */
static void check_seeks(const char *path, struct tfsd_file *f,
			const uint8_t *whole, uint64_t len, uint64_t seed)
{
	static uint8_t buf[8192];
	struct tfs_diag d;

	tfs_diag_init(&d);
	for (int k = 0; k < 24; k++) {
		uint64_t off;
		size_t got, want;

		seed = seed * 6364136223846793005u + 1442695040888963407u;
		off = k == 0 ? len - 100 : (seed >> 11) % len;
		want = (size_t)(len - off < sizeof(buf) ? len - off
							 : sizeof(buf));
		cr_assert_eq(tfsd_file_read(&fs, f, off, buf, sizeof(buf),
					    &got, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_expect(got == want && memcmp(buf, whole + off, got) == 0,
			  "%s: other bytes at %llu", path,
			  (unsigned long long)off);
		if (k == 0)
			cr_expect_lt(tfsd_file_stream_cells(f),
				     (uint64_t)3 << 16,
				     "%s: %llu cells for the last 100 bytes",
				     path,
				     (unsigned long long)tfsd_file_stream_cells(f));
	}
}

/* For each of paths of a sparse array of cells cells (make_sparse_big):
 * a file opened before its stat and one opened after, both read at the
 * offsets of check_seeks against a front-to-back read of more than
 * min_len bytes. */
static void check_sparse_seeks_of(const char *prefix,
				  void (*make)(const char *, uint64_t),
				  uint64_t cells, const char *const *paths,
				  size_t path_num, uint64_t min_len)
{
	char root[128];

	dfx_temp_dir(root, sizeof(root), prefix);
	make(root, cells);
	dfx_start(&fs, root, 1024, 8 << 20, 8 << 20);
	for (size_t i = 0; i < path_num; i++) {
		struct tfsd_size sz;
		struct tfsd_node n;
		struct tfsd_file *before, *after;
		struct tfs_diag d;
		uint64_t len;
		uint8_t *whole;

		tfs_diag_init(&d);
		cr_assert_eq(tfsd_resolve(&fs, paths[i], &n, &d), TFS_E_OK);
		cr_assert_eq(tfsd_file_open(&fs, &n, paths[i], &before, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		whole = read_all(paths[i], 1 << 20, &len, &sz);
		cr_expect(sz.exact && sz.size == len, "%s: stat %llu, read %llu",
			  paths[i], (unsigned long long)sz.size,
			  (unsigned long long)len);
		cr_assert_gt(len, min_len, "%s", paths[i]);
		cr_assert_eq(tfsd_file_open(&fs, &n, paths[i], &after, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		check_seeks(paths[i], before, whole, len, i + 1);
		check_seeks(paths[i], after, whole, len, i + 100);
		tfsd_file_close(&fs, before);
		tfsd_file_close(&fs, after);
		tfsd_node_release(&fs, &n);
		free(whole);
	}
	dfx_stop(&fs);
	dfx_remove(root);
}

static void check_sparse_seeks(const char *prefix, uint64_t cells,
			       const char *const *paths, size_t path_num,
			       uint64_t min_len)
{
	check_sparse_seeks_of(prefix, make_sparse_big, cells, paths, path_num,
			      min_len);
}

/* A sparse array of n cells under root/sd: a string first dimension k
 * (runs of 50 cells; every seventh key 45 bytes long, too long for a
 * mark), y, and a FLOAT64 attribute v. */
static void make_sparse_strings(const char *root, uint64_t n)
{
	static const char json[] =
		"{\"array_type\": \"sparse\", \"capacity\": 4000, \"dims\": ["
		"{\"name\": \"k\", \"type\": \"STRING_ASCII\"}, "
		"{\"name\": \"y\", \"type\": \"INT32\", "
		"\"domain\": [0, 99], \"tile\": 100}], \"attrs\": ["
		"{\"name\": \"v\", \"type\": \"FLOAT64\"}]}";
	int32_t *y = malloc(n * 4);
	uint64_t *off = malloc((n + 1) * 8);
	double *v = malloc(n * 8);
	struct tfs_column cols[3] = {
		{.name = "k", .type = TFS_STRING_ASCII,
		 .cell_val_num = TFS_VAR_NUM, .var = true, .is_dim = true,
		 .offsets = off},
		{.name = "y", .type = TFS_INT32, .cell_val_num = 1,
		 .is_dim = true, .data = (uint8_t *)y, .data_len = n * 4},
		{.name = "v", .type = TFS_FLOAT64, .cell_val_num = 1,
		 .data = (uint8_t *)v, .data_len = n * 8}};
	struct tfs_batch b = {.cell_num = n, .column_num = 3, .columns = cols};
	struct tfs_buf keys;

	cr_assert(y && off && v);
	tfs_buf_init(&keys, TFS_BUF_NO_MAX);
	for (uint64_t i = 0; i < n; i++) {
		/* written backwards: the writer sorts */
		uint64_t r = n / 50 - i / 50;

		off[i] = keys.len;
		cr_assert_eq(tfs_buf_printf(&keys,
					    r % 7 ? "key%07llu"
						  : "key%07llu-a-long-key-"
						    "past-a-mark-s-bytes",
					    (unsigned long long)r),
			     TFS_E_OK);
		y[i] = (int32_t)(i % 50);
		v[i] = (double)i / 3.0;
	}
	off[n] = keys.len;
	cols[0].data = keys.data;
	cols[0].data_len = keys.len;
	write_new_array(root, "sd", json, sizeof(json) - 1, &b);
	tfs_buf_release(&keys);
	free(y);
	free(off);
	free(v);
}

/* Sparse text renderings have an index too (one mark per 65 536 cells
 * or so, where the first coordinate changes), found by the counting
 * pass at the first stat: reads at any offset give the bytes of a
 * front-to-back read, and a read near the end produces the cells after
 * the last mark before it, not the whole prefix; both in a file opened
 * before the stat (a stream that starts again at a mark) and in one
 * opened after (parts between marks produced ahead on the pool). */
Test(content, sparse_index)
{
	static const char *const paths[] = {
		"sp/data.csv", "sp/v/slice[:,:].txt", "sp/i/slice[7:900,:].csv",
		"sp/slice[:,:].json", "sp/v/slice[:,:].json",
	};

	check_sparse_seeks("tfs_sparse_index_", 480000, paths,
			   sizeof(paths) / sizeof(paths[0]), (uint64_t)4 << 20);
}

/* Sparse raw files have an exact size from fragment metadata, so no
 * stat counts them; their index is found at the first read far into one
 * (the last quarter), after which a read near the end produces only the
 * cells after the last mark before it, in that file and in every file of
 * the same path read later. */
Test(content, sparse_raw_index)
{
	static const char *const paths[] = {"sp/v/slice[:,:]"};

	check_sparse_seeks("tfs_sparse_raw_index_", 760000, paths,
			   sizeof(paths) / sizeof(paths[0]), (uint64_t)5 << 20);
}

/* Sparse .npy files are indexed by the counting pass of their stat, the
 * header built once before its two parts run: a read at the end of one
 * (one field, all four in a structured dtype, and a selection whose
 * count fragment metadata does not give) produces only the
 * cells after the last mark before it, at the offsets of a front-to-back
 * read (header included). */
Test(content, sparse_npy_index)
{
	static const char *const paths[] = {"sp/v/slice[:,:].npy",
					    "sp/slice[:,:].npy",
					    "sp/v/slice[20:1500,:].npy"};

	check_sparse_seeks("tfs_sparse_npy_index_", 760000, paths,
			   sizeof(paths) / sizeof(paths[0]), (uint64_t)4 << 20);
}

/* Sparse files whose first dimension holds strings are indexed too, at
 * the changes of key to one that fits in a mark: text (counted at the
 * stat), raw (at the first far read) and .npy, each read at the end
 * producing only the cells after the last mark before it, and parts
 * between marks (a file opened after the stat) that end before a key
 * give the bytes of a front-to-back read. */
Test(content, sparse_string_index)
{
	static const char *const paths[] = {
		"sd/data.csv", "sd/v/slice[:,:]", "sd/slice[:,:].npy",
		"sd/v/slice[:,:].txt"};

	check_sparse_seeks_of("tfs_sparse_string_index_", make_sparse_strings,
			      600000, paths, sizeof(paths) / sizeof(paths[0]),
			      (uint64_t)4 << 20);
}

/* Views in stored order are indexed by positions of their query (a tile
 * and the cells of it before), one where a batch begins about every
 * 65 536 cells: text counted at the stat, raw at the first far read,
 * .npy, each read at the end producing only the cells after the last
 * mark before it, parts between positions giving the bytes of a
 * front-to-back read. */
Test(content, stored_index)
{
	static const char *const paths[] = {"sp/slice[:,:;stored].csv",
					    "sp/v/slice[:,:;stored]",
					    "sp/v/slice[:,:;stored].npy"};

	check_sparse_seeks("tfs_stored_index_", 760000, paths,
			   sizeof(paths) / sizeof(paths[0]), (uint64_t)5 << 20);
}
