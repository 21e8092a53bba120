/* The schema object of render/array_json.c for an array with dimension
 * labels (written by the test-array builder): a "dimension_labels" list
 * under the schema, and no such key for arrays without labels, so the
 * corpus JSON (which has none) still matches exactly. */
#include <criterion/criterion.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_json.h"
#include "legacy_builder.h"
#include "tfs_alloc.h"
#include "tilefs/tilefs.h"

static char *schema_json(const char *path)
{
	struct tfs_array *a;
	struct tfs_diag d;
	struct tfs_buf b;
	struct json_out j;
	char *s;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(path, NULL, &a, &d), TFS_E_OK, "%s: %s",
		     path, tfs_diag_msg(&d));
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	json_out_init(&j, &b);
	cr_assert_eq(array_json_schema(&j, a), TFS_E_OK);
	cr_assert_eq(json_out_error(&j), TFS_E_OK);
	s = tfs_strndup((const char *)b.data, b.len);
	tfs_buf_release(&b);
	tfs_array_close(a);
	return s;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

Test(array_json, dimension_labels)
{
	char tmp[64], *dir, *json, *want;
	struct tfs_vfs *v;

	cr_assert_not_null(mkdtemp(tfs_temp_template(tmp, sizeof(tmp), "/tmp", "tfs_labels_")));
	cr_assert_eq(tfs_vfs_posix_new(&v), TFS_E_OK);
	cr_assert_neq(asprintf(&dir, "%s/A", tmp), -1);
	lb_write_labelled(v, dir, 22);
	json = schema_json(dir);
	cr_assert(strstr(json, "\"dimension_labels\":["), "%s", json);
	cr_assert_neq(asprintf(&want,
			       "{\"name\":\"lab\",\"dimension\":\"i\","
			       "\"dimension_index\":0,\"attribute\":\"label\","
			       "\"order\":\"increasing\",\"type\":\"FLOAT64\","
			       "\"cell_val_num\":1,\"uri\":\"__labels/l0\","
			       "\"uri_relative\":true,\"external\":false,"
			       "\"path\":\"%s/__labels/l0\"}",
			       dir), -1);
	cr_assert(strstr(json, want), "%s\nlacks\n%s", json, want);
	free(want);
	cr_assert(strstr(json, "\"name\":\"name\",\"dimension\":\"i\""), "%s",
		  json);
	cr_assert(strstr(json, "\"order\":\"decreasing\",\"type\":"
			       "\"STRING_ASCII\",\"cell_val_num\":\"var\""),
		  "%s", json);
	free(json);

	json = schema_json(TFS_CORPUS_DIR "/dense_1d");
	cr_assert_null(strstr(json, "dimension_labels"), "%s", json);
	free(json);

	free(dir);
	tfs_vfs_free(v);
	nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
