/* Arrays made for a test (array_test_util.h). */
#include "array_test_util.h"

#include <criterion/criterion.h>
#include <string.h>

void at_create(const char *path, const char *schema_json)
{
	struct tfs_schema *s;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json_new(schema_json, strlen(schema_json),
					      &s, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_array_create(path, s, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_schema_free(s);
}

void at_write(const char *path, enum tfs_write_layout layout,
	      const struct tfs_range *box, const struct tfs_batch *b)
{
	struct tfs_write_opts wo = {.threads = 1};
	struct tfs_write_result res;
	struct tfs_writer *w;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_writer_open(path, &wo, layout, box, &w, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_append(w, b, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_commit(w, &res, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_writer_free(w);
}
