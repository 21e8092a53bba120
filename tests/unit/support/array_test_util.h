/* Arrays made for a test: created from a schema's JSON, written a batch
 * at a time; each step asserts that it worked. */
#ifndef TFS_ARRAY_TEST_UTIL_H
#define TFS_ARRAY_TEST_UTIL_H

#include "tilefs/tilefs.h"

/* Creates the array at path from schema_json. */
void at_create(const char *path, const char *schema_json);
/* Commits the cells of b as one fragment of the array at path (layout
 * and box as tfs_writer_open takes them), with one thread. */
void at_write(const char *path, enum tfs_write_layout layout,
	      const struct tfs_range *box, const struct tfs_batch *b);

#endif
