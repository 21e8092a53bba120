/* Fuzz target: timestamped names of fragments, schemas, metadata and
 * commit files (format/layout.md §2), as a NUL-terminated string. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tfs_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_name_info ni;
	char *name = malloc(size + 1);
	enum tfs_err e;

	FUZZ_CHECK(name);
	memcpy(name, data, size);
	name[size] = '\0';
	e = tfs_name_parse(name, &ni);
	if (e) {
		FUZZ_CHECK(e == TFS_E_INVALID);
	} else {
		FUZZ_CHECK(ni.t1 <= ni.t2);
		FUZZ_CHECK(ni.uuid[0] == '\0' || strlen(ni.uuid) == 32);
	}
	free(name);
	return 0;
}
