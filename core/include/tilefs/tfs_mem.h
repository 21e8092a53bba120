/* The memory accountant: one byte budget for the big buffers of a
 * process. Decoded tiles (cached or not, and the buffers they are decoded
 * from), rendered files and render windows, staging buffers and writer
 * tiles charge it before they allocate and uncharge it when they free, so
 * the process stays within the budget whatever mix of work it does.
 *
 * A charge that does not fit first asks the reclaimers (the tile caches:
 * least recently used tiles out), then waits a bounded time for others to
 * give bytes back, then fails with TFS_E_NOMEM; nothing goes over the
 * budget silently. A budget of 0 counts without limiting (the tools). All
 * functions are thread-safe. */
#ifndef TFS_MEM_H
#define TFS_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "tfs_err.h"

struct tfs_mem;

/* The process's accountant (a budget of 0 until set). */
struct tfs_mem *tfs_mem_global(void);

/* A private accountant (tests); tfs_mem_free accepts NULL. */
enum tfs_err tfs_mem_new(uint64_t budget, struct tfs_mem **out) TFS_WUR;
void tfs_mem_free(struct tfs_mem *m);

/* Sets the budget in bytes (0: no limit) and how long a charge that does
 * not fit waits for releases (milliseconds). */
void tfs_mem_configure(struct tfs_mem *m, uint64_t budget, unsigned wait_ms);
uint64_t tfs_mem_budget(const struct tfs_mem *m);

/* Counts n bytes if they fit: TFS_E_OK, or TFS_E_NOMEM when n is more
 * than the whole budget, or still does not fit after the reclaimers ran
 * and the wait ended, or TFS_E_INTR when the thread's stop said so while
 * it waited (nothing counted then). While charges wait, new ones leave
 * room for the largest waiting. */
enum tfs_err tfs_mem_charge(struct tfs_mem *m, uint64_t n) TFS_WUR;
/* tfs_mem_charge, and on failure d says what needed the bytes (fmt: what,
 * e.g. "a list of 80 tiles"): interrupted while waiting, or the bytes, the
 * budget and what is in use. */
enum tfs_err tfs_mem_charge_for(struct tfs_mem *m, uint64_t n,
				struct tfs_diag *d, const char *fmt, ...)
	TFS_WUR TFS_PRINTF(4, 5);
/* tfs_mem_charge without waiting (read-ahead: skipped when there is no
 * room rather than delaying anyone). */
enum tfs_err tfs_mem_try_charge(struct tfs_mem *m, uint64_t n) TFS_WUR;
/* Counts n bytes already held, fitting or not (a buffer that shrinks
 * back is counted by uncharging the difference instead). Callable with
 * locks held; tfs_mem_rebalance afterwards gives the excess back. */
void tfs_mem_force_charge(struct tfs_mem *m, uint64_t n);
/* When the count is over the budget, asks the reclaimers for the excess
 * (a 64th of the budget at least): what forced charges took comes back
 * from cached tiles and idle arrays at once, not at the next charge that
 * waits. Never waits. Call holding no lock that a reclaimer takes. */
void tfs_mem_rebalance(struct tfs_mem *m);
/* tfs_mem_force_charge, then tfs_mem_rebalance: for bytes already held
 * by a caller that holds no lock a reclaimer takes. */
void tfs_mem_charge_held(struct tfs_mem *m, uint64_t n);
/* Counts n bytes of spare buffers kept for reuse (tfs_reuse.h) only when
 * there is room to spare: no charge waits or asks the reclaimers at the
 * moment, and a sixteenth of the budget stays free after them. Never
 * waits and never calls a reclaimer (callable from them). */
bool tfs_mem_charge_spare(struct tfs_mem *m, uint64_t n);
/* The calling thread's stop (fn NULL: none): its charges that wait ask
 * fn(ctx) now and then and end with TFS_E_INTR when it is true (the
 * reader of a request was killed). */
void tfs_mem_thread_stop(bool (*fn)(void *ctx), void *ctx);
/* Gives n counted bytes back and wakes the charges that wait. */
void tfs_mem_uncharge(struct tfs_mem *m, uint64_t n);

/* Reclaimers: fn frees what it can of at least `want` bytes (uncharging
 * them) and returns how many it freed. Called without the accountant's
 * locks, from the thread whose charge does not fit; fn must not charge.
 * At most TFS_MEM_RECLAIMERS at once; add fails with TFS_E_NOMEM past it. */
#define TFS_MEM_RECLAIMERS 16
typedef uint64_t (*tfs_mem_reclaim_fn)(void *ctx, uint64_t want);
enum tfs_err tfs_mem_reclaimer_add(struct tfs_mem *m, tfs_mem_reclaim_fn fn,
				   void *ctx) TFS_WUR;
/* The same, asked before the reclaimers added so far (spare buffers go
 * before cached tiles). */
enum tfs_err tfs_mem_reclaimer_add_first(struct tfs_mem *m,
					 tfs_mem_reclaim_fn fn,
					 void *ctx) TFS_WUR;
void tfs_mem_reclaimer_remove(struct tfs_mem *m, tfs_mem_reclaim_fn fn,
			      void *ctx);

struct tfs_mem_stats {
	uint64_t budget;
	uint64_t used;
	uint64_t high;     /* the most counted at once */
	uint64_t waits;    /* charges that waited for releases */
	uint64_t refusals; /* charges that failed */
};
void tfs_mem_get_stats(struct tfs_mem *m, struct tfs_mem_stats *out);

#endif
