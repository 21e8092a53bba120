/* The daemon's write path without mounting: what each written path means
 * (SPEC §6), metadata values from text, the staged-file table, the ingest
 * logs, and the refusals a commit makes before calling the core (empty
 * files, wrong byte counts, wrong .npy headers). The arrays are copies of
 * corpus arrays in a temporary folder. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_fixture.h"
#include "tfsd_write.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_mem.h"

#define CORPUS TFS_CORPUS_DIR

static struct tfsd fs;
static char root[64];

static void setup(void)
{
	char cmd[1024];

	dfx_temp_dir(root, sizeof(root), "tfs-write-test.");
	snprintf(cmd, sizeof(cmd),
		 "cp -r %s/dense_1d %s/ && cp -r %s/sparse_2d_int %s/ && "
		 "chmod -R u+w %s && mkdir -p %s/plain/taken %s/plain/empty && "
		 "cp -r %s/dense_1d %s/plain/arr",
		 CORPUS, root, CORPUS, root, root, root, root, root, root);
	dfx_run(cmd);
	dfx_start(&fs, root, 65536, 8 << 20, 1 << 20);
	cr_assert_eq(tfsd_ilog_new(&fs.ilog), TFS_E_OK);
}

static void teardown(void)
{
	dfx_stop(&fs);
	dfx_remove(root);
}

/* ---- What a written path means ------------------------------------------- */

Test(classify, paths, .init = setup, .fini = teardown)
{
	static const struct {
		const char *vpath;
		enum tfs_err err;
		enum tfsd_wkind kind;
		const char *path; /* relative to root; NULL: not checked */
		const char *log_dir;
	} cases[] = {
		{"dense_1d/new.csv", TFS_E_OK, TFSD_W_CSV_ARRAY, "dense_1d",
		 "dense_1d"},
		{"dense_1d/data.csv", TFS_E_OK, TFSD_W_CSV_ARRAY, "dense_1d",
		 "dense_1d"},
		{"dense_1d/.new.csv.Xy12Z9", TFS_E_OK, TFSD_W_TEMP, "dense_1d",
		 "dense_1d"},
		{"dense_1d/new.csv~", TFS_E_OK, TFSD_W_TEMP, NULL, "dense_1d"},
		{"dense_1d/__fragments", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/slice[1:3].csv", TFS_E_PERM, 0, NULL, NULL},
		{"sparse_2d_int/more.csv", TFS_E_OK, TFSD_W_CSV_ARRAY,
		 "sparse_2d_int", "sparse_2d_int"},
		{"plain/sales.csv", TFS_E_OK, TFSD_W_CSV_NEW, "plain/sales",
		 "plain"},
		{"sales.csv", TFS_E_OK, TFSD_W_CSV_NEW, "sales", ""},
		{"plain/Upper.CSV", TFS_E_OK, TFSD_W_CSV_NEW, "plain/Upper",
		 "plain"},
		{"dense_1d/x.Csv", TFS_E_OK, TFSD_W_CSV_ARRAY, "dense_1d",
		 "dense_1d"},
		/* Refused at the commit (ingest.log), not here. */
		{"plain/taken.csv", TFS_E_OK, TFSD_W_CSV_NEW, "plain/taken",
		 "plain"},
		/* An array of the name: the file is written into it. */
		{"plain/arr.csv", TFS_E_OK, TFSD_W_CSV_ARRAY, "plain/arr",
		 "plain"},
		{"plain/dense.csv", TFS_E_OK, TFSD_W_CSV_NEW, "plain/dense",
		 "plain"},
		{"plain/empty/schema.json", TFS_E_OK, TFSD_W_SCHEMA,
		 "plain/empty", "plain/empty"},
		{"plain/notes.txt", TFS_E_OK, TFSD_W_TEMP, NULL, "plain"},
		{"plain/__x.csv", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/a/slice[1:5]", TFS_E_OK, TFSD_W_SLICE, "dense_1d",
		 "dense_1d"},
		{"dense_1d/b/slice[1:5].npy", TFS_E_OK, TFSD_W_SLICE,
		 "dense_1d", "dense_1d"},
		{"dense_1d/a/slice[1:5].csv", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/a/tiles/x", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/d/slice[1:5]", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/metadata/unit", TFS_E_OK, TFSD_W_META, "dense_1d",
		 "dense_1d"},
		/* Editors' temporary names never become keys. */
		{"dense_1d/metadata/sedAb12Cd", TFS_E_OK, TFSD_W_TEMP,
		 "dense_1d", "dense_1d"},
		{"dense_1d/metadata/unit~", TFS_E_OK, TFSD_W_TEMP, "dense_1d",
		 "dense_1d"},
		{"dense_1d/metadata/.unit.swp", TFS_E_OK, TFSD_W_TEMP,
		 "dense_1d", "dense_1d"},
		{"dense_1d/metadata/sedAb12", TFS_E_OK, TFSD_W_META,
		 "dense_1d", "dense_1d"},
		{"dense_1d/metadata/4913", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/metadata/5036", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/metadata/4914", TFS_E_OK, TFSD_W_META, "dense_1d",
		 "dense_1d"},
		{"dense_1d/4913", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/fragments/x", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/versions/1700000001000/new.csv", TFS_E_READONLY, 0,
		 NULL, NULL},
		{"nowhere/x.csv", TFS_E_NOT_FOUND, 0, NULL, NULL},
		{"dense_1d/schema.json/x", TFS_E_PERM, 0, NULL, NULL},
		{"dense_1d/ingest.log", TFS_E_PERM, 0, NULL, NULL},
		{"plain/ingest.log", TFS_E_PERM, 0, NULL, NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tfsd_wtarget t;
		struct tfs_diag d;
		enum tfs_err e;

		tfs_diag_init(&d);
		e = tfsd_write_classify(&fs, cases[i].vpath, &t, &d);
		cr_expect_eq(e, cases[i].err, "%s: %s (%s)", cases[i].vpath,
			     tfs_strerror(e), tfs_diag_msg(&d));
		if (e || cases[i].err) {
			if (e && e != TFS_E_NOT_FOUND)
				cr_expect(d.code, "%s: no message", cases[i].vpath);
			continue;
		}
		cr_expect_eq(t.kind, cases[i].kind, "%s: kind %d",
			     cases[i].vpath, (int)t.kind);
		if (cases[i].path) {
			char want[256];

			snprintf(want, sizeof(want), "%s/%s", root, cases[i].path);
			cr_expect_str_eq(t.path, want, "%s", cases[i].vpath);
		}
		cr_expect_str_eq(t.log_dir, cases[i].log_dir, "%s",
				 cases[i].vpath);
		tfsd_wtarget_release(&t);
	}
}

Test(classify, slice_and_meta_parts, .init = setup, .fini = teardown)
{
	struct tfsd_wtarget t;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_write_classify(&fs, "dense_1d/b/slice[3:7].npy", &t,
					 &d),
		     TFS_E_OK);
	cr_expect_str_eq(t.field, "b");
	cr_expect_eq(t.sel_len, 3);
	cr_expect_eq(memcmp(t.sel, "3:7", 3), 0);
	cr_expect(t.npy);
	cr_expect_str_eq(t.name, "b/slice[3:7].npy");
	tfsd_wtarget_release(&t);

	cr_assert_eq(tfsd_write_classify(&fs, "dense_1d/metadata/a%2Fb%25", &t,
					 &d),
		     TFS_E_OK);
	cr_expect_eq(t.key_len, 4);
	cr_expect_eq(memcmp(t.key, "a/b%", 4), 0);
	cr_expect_str_eq(t.name, "metadata/a%2Fb%25");
	tfsd_wtarget_release(&t);
}

Test(classify, read_only_and_fixed_time, .init = setup, .fini = teardown)
{
	struct tfsd_wtarget t;
	struct tfs_diag d;

	tfs_diag_init(&d);
	fs.cfg.read_only = true;
	cr_expect_eq(tfsd_write_classify(&fs, "dense_1d/new.csv", &t, &d),
		     TFS_E_READONLY);
	cr_expect_eq(tfsd_write_errno(TFS_E_READONLY), EROFS);
	fs.cfg.read_only = false;
	fs.cfg.timestamp = 1700000001000ull;
	cr_expect_eq(tfsd_write_classify(&fs, "plain/x.csv", &t, &d),
		     TFS_E_READONLY);
	fs.cfg.timestamp = 0;
	cr_expect_eq(tfsd_write_errno(TFS_E_RANGE), EINVAL);
	cr_expect_eq(tfsd_write_errno(TFS_E_INVALID), EINVAL);
}

/* ---- Metadata values from text -------------------------------------------- */

Test(meta, values_keep_their_type)
{
	int32_t i32 = 7;
	double f64 = 0.5;
	uint8_t u8 = 1;
	int64_t i64[2] = {1, 2};
	struct tfs_meta_kv old_i32 = {.type = TFS_INT32, .value_num = 1,
				      .value = (uint8_t *)&i32};
	struct tfs_meta_kv old_f64 = {.type = TFS_FLOAT64, .value_num = 1,
				      .value = (uint8_t *)&f64};
	struct tfs_meta_kv old_u8 = {.type = TFS_UINT8, .value_num = 1,
				     .value = &u8};
	struct tfs_meta_kv old_i64 = {.type = TFS_INT64, .value_num = 2,
				      .value = (uint8_t *)i64};
	struct tfs_meta_kv old_str = {.type = TFS_STRING_ASCII, .value_num = 1,
				      .value = (uint8_t *)"x"};
	uint8_t blob = 1;
	struct tfs_meta_kv old_blob = {.type = TFS_BLOB, .value_num = 1,
				       .value = &blob};
	struct tfs_meta_kv old_gone = {.type = TFS_INT32, .deleted = true};
	static const struct {
		int old; /* 0 none, 1 i32, 2 f64, 3 u8, 4 i64, 5 ascii,
			    6 blob, 7 deleted */
		const char *text;
		enum tfs_err err;
		uint8_t type;
		uint32_t num;
	} cases[] = {
		{1, "42\n", TFS_E_OK, TFS_INT32, 1},
		{1, "-2147483648", TFS_E_OK, TFS_INT32, 1},
		/* Refused, never turned into a string. */
		{1, "2147483648", TFS_E_INVALID, 0, 0},
		{1, "4.5\n", TFS_E_INVALID, 0, 0},
		{1, "hello", TFS_E_INVALID, 0, 0},
		{1, "", TFS_E_INVALID, 0, 0},
		{2, "4.5\n", TFS_E_OK, TFS_FLOAT64, 1},
		{2, " 1e3 ", TFS_E_OK, TFS_FLOAT64, 1},
		{2, "nan", TFS_E_OK, TFS_FLOAT64, 1},
		{2, "x", TFS_E_INVALID, 0, 0},
		{3, "255", TFS_E_OK, TFS_UINT8, 1},
		{3, "256", TFS_E_INVALID, 0, 0},
		{3, "-1", TFS_E_INVALID, 0, 0},
		{4, "1\n2\n3\n", TFS_E_OK, TFS_INT64, 3},
		{4, "1\n\n3", TFS_E_INVALID, 0, 0},
		{5, "12", TFS_E_OK, TFS_STRING_ASCII, 2},
		{6, "ab", TFS_E_INVALID, 0, 0},
		/* A new key's type follows its text. */
		{0, "12\n", TFS_E_OK, TFS_INT64, 1},
		{0, "-3\n4\n", TFS_E_OK, TFS_INT64, 2},
		{0, "99999999999999999999", TFS_E_OK, TFS_FLOAT64, 1},
		{0, "2.5\n", TFS_E_OK, TFS_FLOAT64, 1},
		{0, "1\n2.5\n", TFS_E_OK, TFS_FLOAT64, 2},
		{0, "1e3", TFS_E_OK, TFS_FLOAT64, 1},
		{0, "nan", TFS_E_OK, TFS_STRING_UTF8, 3},
		{0, "1 2", TFS_E_OK, TFS_STRING_UTF8, 3},
		{0, "12 apples", TFS_E_OK, TFS_STRING_UTF8, 9},
		{0, "a\nb\n", TFS_E_OK, TFS_STRING_UTF8, 3},
		{0, "", TFS_E_OK, TFS_STRING_UTF8, 0},
		{0, "-", TFS_E_OK, TFS_STRING_UTF8, 1},
		{7, "7", TFS_E_OK, TFS_INT64, 1},
	};
	const struct tfs_meta_kv *olds[] = {NULL,     &old_i32, &old_f64,
					    &old_u8,  &old_i64, &old_str,
					    &old_blob, &old_gone};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tfs_meta_kv kv;
		struct tfs_diag d;
		enum tfs_err e;

		memset(&kv, 0, sizeof(kv));
		tfs_diag_init(&d);
		e = tfsd_meta_value_parse(olds[cases[i].old], cases[i].text,
					  strlen(cases[i].text), &kv, &d);
		cr_expect_eq(e, cases[i].err, "'%s': %s", cases[i].text,
			     tfs_strerror(e));
		if (e) {
			cr_expect(d.code, "'%s': no reason", cases[i].text);
			cr_expect_null(kv.value);
			continue;
		}
		cr_expect_eq(kv.type, cases[i].type, "'%s': type %u",
			     cases[i].text, kv.type);
		cr_expect_eq(kv.value_num, cases[i].num, "'%s': %u values",
			     cases[i].text, kv.value_num);
		tfs_free(kv.value);
	}
}

Test(meta, values_are_the_numbers)
{
	int32_t i32 = 7, got32;
	int64_t i64 = 1, got64[3];
	struct tfs_meta_kv old_i32 = {.type = TFS_INT32, .value_num = 1,
				      .value = (uint8_t *)&i32};
	struct tfs_meta_kv old_i64 = {.type = TFS_INT64, .value_num = 1,
				      .value = (uint8_t *)&i64};
	struct tfs_meta_kv kv;

	cr_assert_eq(tfsd_meta_value_parse(&old_i32, "-17\n", 4, &kv, NULL), TFS_E_OK);
	memcpy(&got32, kv.value, 4);
	cr_expect_eq(got32, -17);
	tfs_free(kv.value);
	cr_assert_eq(tfsd_meta_value_parse(&old_i64, "5\n-6\n700", 8, &kv, NULL),
		     TFS_E_OK);
	memcpy(got64, kv.value, sizeof(got64));
	cr_expect(got64[0] == 5 && got64[1] == -6 && got64[2] == 700);
	tfs_free(kv.value);
	cr_assert_eq(tfsd_meta_value_parse(NULL, "a b\n", 4, &kv, NULL), TFS_E_OK);
	cr_expect_eq(memcmp(kv.value, "a b", 3), 0);
	tfs_free(kv.value);
}

Test(meta, names_decode)
{
	static const struct {
		const char *name, *key;
	} cases[] = {
		{"plain", "plain"}, {"a%2Fb", "a/b"}, {"%2Ehidden", ".hidden"},
		{"100%25", "100%"}, {"bad%zz", "bad%zz"}, {"end%", "end%"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tfs_buf b, back;

		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		tfs_buf_init(&back, TFS_BUF_NO_MAX);
		cr_assert_eq(tfsd_meta_name_decode(&b, cases[i].name), TFS_E_OK);
		cr_expect_eq(b.len, strlen(cases[i].key), "%s", cases[i].name);
		cr_expect_eq(memcmp(b.data, cases[i].key, b.len), 0, "%s",
			     cases[i].name);
		/* What the listing shows decodes back to the key. */
		cr_assert_eq(tfsd_meta_name_encode(&back, cases[i].key,
						   strlen(cases[i].key)),
			     TFS_E_OK);
		tfs_buf_release(&b);
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_buf_append_u8(&back, 0), TFS_E_OK);
		cr_assert_eq(tfsd_meta_name_decode(&b, (const char *)back.data),
			     TFS_E_OK);
		cr_expect_eq(b.len, strlen(cases[i].key));
		cr_expect_eq(memcmp(b.data, cases[i].key, b.len), 0);
		tfs_buf_release(&b);
		tfs_buf_release(&back);
	}
}

/* ---- Staged files ------------------------------------------------------------ */

static bool collect(void *ctx, const char *name, bool is_dir)
{
	char *list = ctx;

	(void)is_dir;
	strcat(list, name);
	strcat(list, "|");
	return true;
}

static struct tfsd_staged *stage(const char *vpath)
{
	struct tfsd_wtarget t;
	struct tfsd_staged *sf;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_write_classify(&fs, vpath, &t, &d), TFS_E_OK, "%s: %s",
		     vpath, tfs_diag_msg(&d));
	cr_assert_eq(tfsd_staged_create(fs.staging, vpath, &t, &sf, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfsd_wtarget_release(&t);
	return sf;
}

Test(staging, table, .init = setup, .fini = teardown)
{
	struct tfsd_staged *a, *b, *found;
	struct tfsd_wtarget t;
	struct tfs_diag d;
	char list[512] = "";
	char tmp_a[256];
	struct stat st;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	cr_expect_neq(strncmp(tfsd_staging_dir(fs.staging), root, strlen(root)),
		      0, "staged files are never inside SOURCE");
	a = stage("dense_1d/.x.csv.tmp");
	b = stage("dense_1d/y.csv");
	snprintf(tmp_a, sizeof(tmp_a), "%s", a->tmp);
	cr_expect_eq(stat(a->tmp, &st), 0);

	/* A second create of a staged path is refused. */
	cr_assert_eq(tfsd_write_classify(&fs, "dense_1d/y.csv", &t, &d), TFS_E_OK);
	cr_expect_eq(tfsd_staged_create(fs.staging, "dense_1d/y.csv", &t, &found,
					&d),
		     TFS_E_EXISTS);
	tfsd_wtarget_release(&t);

	tfsd_staging_list(fs.staging, "dense_1d", collect, list);
	cr_expect(strstr(list, ".x.csv.tmp|") && strstr(list, "y.csv|"), "%s",
		  list);
	list[0] = '\0';
	tfsd_staging_list(fs.staging, "", collect, list);
	cr_expect_str_eq(list, "");
	cr_expect(tfsd_staging_busy(fs.staging, "dense_1d"));
	cr_expect(!tfsd_staging_busy(fs.staging, "dense"));

	/* Renamed: found under the new name only. */
	cr_assert_eq(tfsd_staged_rename(fs.staging, a, "dense_1d/.x.csv.tmp2", &d),
		     TFS_E_OK);
	cr_expect_null(tfsd_staged_find(fs.staging, "dense_1d/.x.csv.tmp"));
	found = tfsd_staged_find(fs.staging, "dense_1d/.x.csv.tmp2");
	cr_expect_eq(found, a);
	tfsd_staged_put(fs.staging, found);

	/* Renamed over another staged file: that one goes. */
	cr_assert_eq(tfsd_staged_rename(fs.staging, a, "dense_1d/y.csv", &d),
		     TFS_E_OK);
	found = tfsd_staged_find(fs.staging, "dense_1d/y.csv");
	cr_expect_eq(found, a);
	tfsd_staged_put(fs.staging, found);
	cr_expect(tfsd_staged_closed(fs.staging, b));
	tfsd_staged_put(fs.staging, b);

	/* Unlisted and closed: its bytes are removed. */
	cr_expect(tfsd_staged_closed(fs.staging, a));
	tfsd_staged_unlist(fs.staging, a);
	tfsd_staged_put(fs.staging, a);
	cr_expect_null(tfsd_staged_find(fs.staging, "dense_1d/y.csv"));
	cr_expect_neq(stat(tmp_a, &st), 0, "staged bytes left behind");
	cr_expect(!tfsd_staging_busy(fs.staging, "dense_1d"));
}

Test(staging, closed_temporaries_expire, .init = setup, .fini = teardown)
{
	struct tfsd_staged *open_one, *closed_one, *found;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	open_one = stage("plain/.a.tmp");
	closed_one = stage("plain/.b.tmp");
	cr_expect(tfsd_staged_closed(fs.staging, closed_one));
	tfsd_staged_put(fs.staging, closed_one);
	cr_expect_eq(tfsd_staging_expire(fs.staging, TFSD_TEMP_KEEP_MS), 0);
	usleep(20000);
	cr_expect_eq(tfsd_staging_expire(fs.staging, 10), 1);
	cr_expect_null(tfsd_staged_find(fs.staging, "plain/.b.tmp"));
	found = tfsd_staged_find(fs.staging, "plain/.a.tmp");
	cr_expect_eq(found, open_one, "an open file expired");
	tfsd_staged_put(fs.staging, found);
	tfsd_staged_closed(fs.staging, open_one);
	tfsd_staged_put(fs.staging, open_one);
}

/* ---- Commits refused before the core is called --------------------------------- */

static enum tfs_err commit_bytes(const char *vpath, const void *bytes,
				 size_t len, struct tfsd_wresult *res,
				 struct tfs_diag *d)
{
	struct tfsd_staged *sf = stage(vpath);
	enum tfs_err e;

	cr_assert_eq(pwrite(sf->fd, bytes, len, 0), (ssize_t)len);
	e = tfsd_write_commit(&fs, &sf->target, sf->tmp, res, d);
	tfsd_staged_closed(fs.staging, sf);
	tfsd_staged_unlist(fs.staging, sf);
	tfsd_staged_put(fs.staging, sf);
	return e;
}

Test(commit, empty_files_write_nothing, .init = setup, .fini = teardown)
{
	static const char *const paths[] = {
		"dense_1d/x.csv", "plain/new.csv", "plain/empty/schema.json",
		"dense_1d/a/slice[1:5]", "dense_1d/metadata/k",
	};
	struct tfsd_wresult res;
	struct tfs_diag d;
	struct stat st;
	char p[256];

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		cr_expect_eq(commit_bytes(paths[i], "", 0, &res, &d), TFS_E_OK,
			     "%s: %s", paths[i], tfs_diag_msg(&d));
		cr_expect(!res.wrote, "%s", paths[i]);
	}
	snprintf(p, sizeof(p), "%s/plain/new", root);
	cr_expect_neq(stat(p, &st), 0, "an empty CSV made an array");
}

Test(commit, slice_byte_counts, .init = setup, .fini = teardown)
{
	int32_t vals[6] = {1, 2, 3, 4, 5, 6};
	struct tfsd_wresult res;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	/* slice[1:5] of an int32 attribute is 4 cells, 16 bytes. */
	e = commit_bytes("dense_1d/a/slice[1:5]", vals, 20, &res, &d);
	cr_expect_eq(e, TFS_E_INVALID);
	cr_expect(strstr(tfs_diag_msg(&d), "20 bytes") &&
		  strstr(tfs_diag_msg(&d), "needs 16"),
		  "%s", tfs_diag_msg(&d));
	tfs_diag_init(&d);
	e = commit_bytes("dense_1d/a/slice[1:5]", vals, 15, &res, &d);
	cr_expect_eq(e, TFS_E_INVALID, "%s", tfs_diag_msg(&d));
	tfs_diag_init(&d);
	e = commit_bytes("dense_1d/a/slice[1:10:2]", vals, 20, &res, &d);
	cr_expect_eq(e, TFS_E_INVALID, "%s", tfs_diag_msg(&d));
	cr_expect(strstr(tfs_diag_msg(&d), "step"), "%s", tfs_diag_msg(&d));
	tfs_diag_init(&d);
	e = commit_bytes("dense_1d/a/slice[1:500]", vals, 20, &res, &d);
	cr_expect_eq(e, TFS_E_INVALID, "outside the domain: %s",
		     tfs_diag_msg(&d));
	tfs_diag_init(&d);
	e = commit_bytes("sparse_2d_int/a/slice[1:3]", vals, 8, &res, &d);
	cr_expect_neq(e, TFS_E_OK, "a slice of a sparse array");
}

/* A .npy file of shape (n,) and dtype descr. */
static size_t npy(uint8_t *out, const char *descr, const char *shape,
		  const void *data, size_t len)
{
	char dict[128];
	size_t dl, hl;

	dl = (size_t)snprintf(dict, sizeof(dict),
			      "{'descr': '%s', 'fortran_order': False, "
			      "'shape': %s, }",
			      descr, shape);
	hl = (dl + 1 + 10 + 63) / 64 * 64 - 10;
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	out[8] = (uint8_t)(hl & 0xff);
	out[9] = (uint8_t)(hl >> 8);
	memset(out + 10, ' ', hl);
	memcpy(out + 10, dict, dl);
	out[10 + hl - 1] = '\n';
	memcpy(out + 10 + hl, data, len);
	return 10 + hl + len;
}

Test(commit, npy_headers, .init = setup, .fini = teardown)
{
	int32_t vals[4] = {1, 2, 3, 4};
	uint8_t file[512];
	struct tfsd_wresult res;
	struct tfs_diag d;
	size_t n;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	n = npy(file, "<f8", "(4,)", vals, 16);
	cr_expect_eq(commit_bytes("dense_1d/a/slice[1:5].npy", file, n, &res,
				  &d),
		     TFS_E_INVALID);
	cr_expect(strstr(tfs_diag_msg(&d), "dtype"), "%s", tfs_diag_msg(&d));
	tfs_diag_init(&d);
	n = npy(file, "<i4", "(3,)", vals, 12);
	cr_expect_eq(commit_bytes("dense_1d/a/slice[1:5].npy", file, n, &res,
				  &d),
		     TFS_E_INVALID);
	cr_expect(strstr(tfs_diag_msg(&d), "shape"), "%s", tfs_diag_msg(&d));
	tfs_diag_init(&d);
	n = npy(file, "<i4", "(4,)", vals, 12);
	cr_expect_eq(commit_bytes("dense_1d/a/slice[1:5].npy", file, n, &res,
				  &d),
		     TFS_E_INVALID, "short data: %s", tfs_diag_msg(&d));
	tfs_diag_init(&d);
	cr_expect_eq(commit_bytes("dense_1d/a/slice[1:5].npy", "not npy", 7,
				  &res, &d),
		     TFS_E_INVALID);
}

/* ---- Ingest logs ------------------------------------------------------------------ */

Test(ilog, lines_per_folder_bounded)
{
	struct tfsd_ilog *l;
	struct tfs_buf b;
	size_t lines = 0;

	cr_assert_eq(tfsd_ilog_new(&l), TFS_E_OK);
	cr_expect(!tfsd_ilog_has(l, "A"));
	tfsd_ilog_add(l, "A", "x.csv", false, "12 rows, dense fragment __1_1_u_22");
	tfsd_ilog_add(l, "B", "y.csv", true, "y.csv: line 3, column 2 ('a'): bad");
	cr_expect(tfsd_ilog_has(l, "A") && tfsd_ilog_has(l, "B"));
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsd_ilog_render(l, "B", &b), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
	cr_expect(strstr((char *)b.data, "  y.csv  refused: y.csv: line 3"),
		  "%s", (char *)b.data);
	cr_expect(!strstr((char *)b.data, "x.csv"));
	tfs_buf_release(&b);
	for (int i = 0; i < 1000; i++)
		tfsd_ilog_add(l, "A", "z.csv", false, "ok");
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsd_ilog_render(l, "A", &b), TFS_E_OK);
	for (size_t i = 0; i < b.len; i++)
		lines += b.data[i] == '\n';
	cr_expect_eq(lines, 200);
	tfs_buf_release(&b);
	tfsd_ilog_free(l);
}

/* ---- Commits through the core ------------------------------------------------------ */

static uint64_t fragments_of(const char *rel)
{
	struct tfsd_arr *arr;
	struct tfs_diag d;
	uint64_t n;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_arrays_get(fs.arrays, rel, 0, &arr, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	n = tfs_array_fragment_count(arr->a);
	tfsd_arr_put(fs.arrays, arr);
	return n;
}

/* Reads attribute attr of dense_1d over [lo, hi] into out. */
static void read_1d(const char *attr, int32_t lo, int32_t hi, void *out,
		    size_t cell)
{
	const char *fields[] = {attr};
	struct tfs_range r = {.lo = (const uint8_t *)&lo,
			      .hi = (const uint8_t *)&hi,
			      .lo_len = 4,
			      .hi_len = 4};
	struct tfs_query_opts qo = {.subarray = &r, .fields = fields,
				    .field_num = 1};
	const struct tfs_batch *b;
	struct tfs_query *q;
	struct tfsd_arr *arr;
	struct tfs_diag d;
	size_t at = 0;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_arrays_get(fs.arrays, "dense_1d", 0, &arr, &d),
		     TFS_E_OK);
	cr_assert_eq(tfs_query_open(arr->a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	while (tfs_query_next(q, &b, &d) == TFS_E_OK && b) {
		memcpy((uint8_t *)out + at, b->columns[0].data,
		       (size_t)b->cell_num * cell);
		at += (size_t)b->cell_num * cell;
	}
	cr_expect_eq(at, (size_t)(hi - lo + 1) * cell);
	tfs_query_close(q);
	tfsd_arr_put(fs.arrays, arr);
}

Test(commit, csv_then_reopened, .init = setup, .fini = teardown)
{
	static const char csv[] = "d,a,b\n3,33,0.5\n4,44,1.5\n";
	struct tfsd_wresult res;
	struct tfs_diag d;
	int32_t a[2];
	uint64_t before;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	before = fragments_of("dense_1d");
	cr_assert_eq(commit_bytes("dense_1d/x.csv", csv, sizeof(csv) - 1, &res,
				  &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_expect(res.wrote);
	cr_expect(strstr(res.what, "2 rows"), "%s", res.what);
	/* The cache reopens the array at once, not after its recheck. */
	cr_expect_eq(fragments_of("dense_1d"), before + 1);
	read_1d("a", 3, 4, a, 4);
	cr_expect(a[0] == 33 && a[1] == 44, "%d %d", a[0], a[1]);
}

Test(commit, slice_carries_the_other_attributes,
     .init = setup, .fini = teardown)
{
	int32_t vals[4] = {-1, -2, -3, -4}, a[6];
	double b_before[6], b_after[6];
	struct tfsd_wresult res;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	read_1d("b", 9, 14, b_before, 8);
	read_1d("a", 9, 14, a, 4);
	cr_assert_eq(commit_bytes("dense_1d/a/slice[10:14]", vals, sizeof(vals),
				  &res, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_expect(strstr(res.what, "4 cells"), "%s", res.what);
	read_1d("b", 9, 14, b_after, 8);
	cr_expect_eq(memcmp(b_before, b_after, sizeof(b_after)), 0,
		     "b changed where only a was written");
	{
		int32_t now[6];

		read_1d("a", 9, 14, now, 4);
		cr_expect_eq(now[0], a[0], "cell 9 outside the slice changed");
		cr_expect(now[1] == -1 && now[2] == -2 && now[3] == -3 &&
			  now[4] == -4);
		cr_expect_eq(now[5], a[5], "cell 14 outside the slice changed");
	}
}

/* Gives back a charge that fills the memory budget after a while. */
static void *release_later(void *arg)
{
	usleep(350 * 1000);
	tfs_mem_uncharge(tfs_mem_global(), *(uint64_t *)arg);
	return NULL;
}

/* A slice write reads the other attributes over its box; when readers
 * hold the whole memory budget for longer than a charge waits, the commit
 * is tried again instead of losing the written values. */
Test(commit, slice_outwaits_a_full_budget, .init = setup, .fini = teardown)
{
	int32_t vals[4] = {7, 8, 9, 10}, now[4];
	uint64_t held = (uint64_t)1 << 20;
	struct tfsd_wresult res;
	struct tfs_diag d;
	pthread_t t;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	/* Charges wait 100 ms; the budget is full for 350 ms. */
	tfs_mem_configure(tfs_mem_global(), held, 100);
	tfs_mem_force_charge(tfs_mem_global(), held);
	cr_assert_eq(pthread_create(&t, NULL, release_later, &held), 0);
	cr_expect_eq(commit_bytes("dense_1d/a/slice[20:24]", vals, sizeof(vals),
				  &res, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	pthread_join(t, NULL);
	tfs_mem_configure(tfs_mem_global(), 0, 0);
	read_1d("a", 20, 23, now, 4);
	cr_expect_eq(memcmp(now, vals, sizeof(vals)), 0, "the slice was lost");
}

Test(commit, metadata_set_and_delete, .init = setup, .fini = teardown)
{
	struct tfsd_wresult res;
	struct tfsd_wtarget t;
	struct tfsd_arr *arr;
	struct tfs_diag d;
	bool found = false;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	cr_assert_eq(commit_bytes("dense_1d/metadata/unit", "metres\n", 7, &res,
				  &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfsd_arrays_get(fs.arrays, "dense_1d", 0, &arr, &d),
		     TFS_E_OK);
	for (size_t i = 0; i < tfs_array_metadata_count(arr->a); i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(arr->a, i);

		if (kv->key_len == 4 && !memcmp(kv->key, "unit", 4) &&
		    !kv->deleted) {
			found = true;
			cr_expect_eq(kv->value_num, 6);
			cr_expect_eq(memcmp(kv->value, "metres", 6), 0);
		}
	}
	tfsd_arr_put(fs.arrays, arr);
	cr_expect(found, "metadata key not written");

	cr_assert_eq(tfsd_write_classify(&fs, "dense_1d/metadata/unit", &t, &d),
		     TFS_E_OK);
	cr_assert_eq(tfsd_write_meta_delete(&fs, &t, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfsd_arrays_invalidate(fs.arrays, t.rel);
	tfsd_wtarget_release(&t);
	cr_assert_eq(tfsd_arrays_get(fs.arrays, "dense_1d", 0, &arr, &d),
		     TFS_E_OK);
	for (size_t i = 0; i < tfs_array_metadata_count(arr->a); i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(arr->a, i);

		cr_expect(!(kv->key_len == 4 && !memcmp(kv->key, "unit", 4) &&
			    !kv->deleted),
			  "deleted key still there");
	}
	tfsd_arr_put(fs.arrays, arr);
}

Test(commit, csv_in_a_folder_and_schema, .init = setup, .fini = teardown)
{
	static const char csv[] = "name,n\nx,1\ny,2\n";
	struct tfsd_wresult res;
	struct tfs_diag d;
	struct tfs_buf json;
	struct tfsd_node n;
	char p[256];
	struct stat st;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_staging_new(NULL, &fs.staging, &d), TFS_E_OK);
	cr_assert_eq(commit_bytes("plain/made.csv", csv, sizeof(csv) - 1, &res,
				  &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	snprintf(p, sizeof(p), "%s/plain/made/__schema", root);
	cr_expect_eq(stat(p, &st), 0, "no array made");
	cr_expect_eq(fragments_of("plain/made"), 1);

	/* The schema.json the view shows makes an equal array. */
	tfs_buf_init(&json, TFS_BUF_NO_MAX);
	cr_assert_eq(tfsd_resolve(&fs, "plain/made/schema.json", &n, &d),
		     TFS_E_OK);
	cr_assert_eq(tfsd_doc_render(&fs, &n, &json, &d), TFS_E_OK);
	tfsd_node_release(&fs, &n);
	cr_assert_eq(commit_bytes("plain/empty/schema.json", json.data,
				  json.len, &res, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_buf_release(&json);
	cr_expect_eq(fragments_of("plain/empty"), 0);
	/* The new array has the inferred `row` dimension. */
	cr_expect_eq(commit_bytes("plain/empty/x.csv", "row,name,n\n1,z,3\n", 17,
				  &res, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_expect_eq(fragments_of("plain/empty"), 1);
}
