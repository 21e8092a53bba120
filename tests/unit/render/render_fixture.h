/* One corpus array open at a time for the render library's tests. */
#ifndef TFS_RENDER_FIXTURE_H
#define TFS_RENDER_FIXTURE_H

#include <tilefs/tilefs.h>

/* The array open_array opened (NULL after close_array). */
extern struct tfs_array *arr;

/* Opens the corpus array called name (asserts it opens). */
void open_array(const char *name);
/* Closes it; a Criterion .fini. */
void close_array(void);

#endif
