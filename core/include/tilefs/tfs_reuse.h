/* Spare big buffers kept for reuse by their owner (the tile loader, the
 * query's cell buffers, the daemon's windows and replies): a buffer
 * given back is kept, faulted in, for the next one of about its size
 * instead of being returned to the system and mapped afresh (the page
 * faults of fresh mappings cost about as much as decoding).
 *
 * What a list keeps is counted by the memory accountant (tfs_mem.h), is
 * bounded (its own maximum and an eighth of the budget; all lists
 * together a quarter), is kept only while the budget has room to spare
 * (tfs_mem_charge_spare), and goes first when a charge does not fit (a
 * reclaimer of its own, asked before the others). Buffers below
 * TFS_REUSE_MIN come from the heap as usual. All functions are
 * thread-safe. */
#ifndef TFS_REUSE_H
#define TFS_REUSE_H

#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"

#define TFS_REUSE_MIN ((size_t)256 << 10)

struct tfs_reuse;

/* A list keeping at most max_bytes, its reclaimer added to the process's
 * accountant; NULL when out of memory. */
struct tfs_reuse *tfs_reuse_new(uint64_t max_bytes);
/* Fresh buffers of r take huge pages (tfs_malloc_big): for owners that
 * fill every byte they take (tiles, windows), since a 2 MiB page counts
 * whole in the resident set once any byte of it is touched. Call before
 * the first take. */
void tfs_reuse_huge(struct tfs_reuse *r);
/* Frees every kept buffer and the list (NULL: nothing). */
void tfs_reuse_free(struct tfs_reuse *r);

/* A buffer of at least n bytes (malloc'd: tfs_free frees it too) and in
 * *cap how many it holds: a kept one of n to n + n/4 bytes (no longer
 * counted by the list: the caller counts what it uses, as it would a
 * fresh buffer), else a fresh one. NULL when out of memory. */
void *tfs_reuse_take(struct tfs_reuse *r, size_t n, size_t *cap);
/* Gives back p of at least cap bytes (NULL: nothing): kept when the list
 * and the budget have room, else freed. */
void tfs_reuse_give(struct tfs_reuse *r, void *p, size_t cap);
/* Frees kept buffers, oldest first, until at least `want` bytes went;
 * how many did. */
uint64_t tfs_reuse_drop(struct tfs_reuse *r, uint64_t want);

struct tfs_reuse_stats {
	uint64_t held;   /* bytes kept now */
	uint64_t hits;   /* takes served by a kept buffer */
	uint64_t misses; /* takes of TFS_REUSE_MIN or more freshly allocated */
};
void tfs_reuse_get_stats(struct tfs_reuse *r, struct tfs_reuse_stats *out);

#endif
