/* The one allocation seam: every engine allocation goes through these
 * wrappers, which check multiplication overflow and can be told to fail the
 * Nth allocation so tests reach every out-of-memory path. */
#ifndef TFS_ALLOC_H
#define TFS_ALLOC_H

#include <stddef.h>

#include "tfs_err.h"

/* All return NULL on failure (or when a failure is injected). tfs_mallocn
 * and tfs_callocn fail on n * size overflow. tfs_free accepts NULL. */
void *tfs_malloc(size_t size);
void *tfs_mallocn(size_t n, size_t size);
void *tfs_callocn(size_t n, size_t size);
void *tfs_realloc(void *p, size_t size);
void *tfs_reallocn(void *p, size_t n, size_t size);
/* A buffer of size bytes for bulk data (tiles, windows): from 2 MiB on,
 * aligned and advised for huge pages. tfs_free frees it. */
void *tfs_malloc_big(size_t size);
void tfs_free(void *p);
/* The one growable array: makes the array whose pointer is at pp (the
 * address of a `T *`, any object type) hold at least need items of elem
 * bytes. The capacity *cap doubles, starting at 16, and is never more than
 * size_t can count in bytes. TFS_E_NOMEM (overflow, or the allocation
 * failed) leaves the array and *cap as they were. */
enum tfs_err tfs_grow(void *pp, size_t *cap, size_t need, size_t elem) TFS_WUR;
/* Copies of strings and byte ranges (the latter NUL-terminated too). */
char *tfs_strdup(const char *s);
char *tfs_strndup(const char *s, size_t n);
void *tfs_memdup(const void *p, size_t n);

/* Test hook: after `n` more successful allocations every allocation fails
 * until reset with a negative n (the default). Thread-safe. */
void tfs_alloc_fail_after(long n);

#endif
