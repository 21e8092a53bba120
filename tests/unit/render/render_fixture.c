/* See render_fixture.h. */
#include "render_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>

struct tfs_array *arr;

void open_array(const char *name)
{
	char path[4096];
	struct tfs_diag d;

	snprintf(path, sizeof(path), "%s/%s", TFS_CORPUS_DIR, name);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(path, NULL, &arr, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
}

void close_array(void)
{
	tfs_array_close(arr);
	arr = NULL;
}
