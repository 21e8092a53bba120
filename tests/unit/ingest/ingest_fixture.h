/* The folder the end-to-end ingest tests work in: a fresh one under /tmp
 * per test (Criterion .init/.fini), with helpers for files in it. Every
 * failure is a Criterion assertion; returned paths are malloc'ed. */
#ifndef TFS_INGEST_FIXTURE_H
#define TFS_INGEST_FIXTURE_H

#include <stddef.h>

void fx_tmp_make(void);
void fx_tmp_drop(void);

/* NAME inside the folder. */
char *fx_path(const char *name);
/* Writes a file of the given bytes (or text) as NAME; returns its path. */
char *fx_write(const char *name, const void *data, size_t len);
char *fx_write_str(const char *name, const char *text);
/* A writable copy of corpus array NAME; returns its path. */
char *fx_copy_corpus(const char *name);

struct tfs_array;
struct tfs_column;
/* The enumeration the daemon shows a column through (fs/content.c), or
 * NULL for dimensions and plain attributes. */
const struct tfs_enumeration *fx_column_enum(struct tfs_array *a,
					     const struct tfs_column *c);

#endif
