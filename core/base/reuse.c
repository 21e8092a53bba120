/* Spare big buffers kept for reuse (tfs_reuse.h): a short list, oldest
 * first, under a mutex; its bytes counted by the process's accountant. */
#include "tfs_reuse.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_mem.h"

#define SLOTS 32

struct spare {
	void *p;
	size_t cap;
};

struct tfs_reuse {
	pthread_mutex_t lock;
	uint64_t max;
	uint64_t held;
	uint64_t hits, misses;
	bool huge; /* tfs_reuse_huge */
	size_t num;
	struct spare slot[SLOTS]; /* oldest first */
};

/* What every list keeps, together (at most a quarter of the budget). */
static _Atomic uint64_t all_held;

static uint64_t reclaim(void *ctx, uint64_t want)
{
	return tfs_reuse_drop(ctx, want);
}

struct tfs_reuse *tfs_reuse_new(uint64_t max_bytes)
{
	struct tfs_reuse *r = tfs_callocn(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->max = max_bytes;
	if (tfs_mem_reclaimer_add_first(tfs_mem_global(), reclaim, r)) {
		pthread_mutex_destroy(&r->lock);
		tfs_free(r);
		return NULL;
	}
	return r;
}

void tfs_reuse_huge(struct tfs_reuse *r)
{
	if (r)
		r->huge = true;
}

void tfs_reuse_free(struct tfs_reuse *r)
{
	if (!r)
		return;
	tfs_mem_reclaimer_remove(tfs_mem_global(), reclaim, r);
	tfs_reuse_drop(r, UINT64_MAX);
	pthread_mutex_destroy(&r->lock);
	tfs_free(r);
}

/* What a fresh buffer for n bytes holds: n rounded up to a sixteenth of
 * its power of two, so that buffers of nearly the same size (compressed
 * tiles) fit one another. */
static size_t round_cap(size_t n)
{
	size_t g = (size_t)1 << 16;

	while (g < n / 16 && g < ((size_t)1 << 30))
		g <<= 1;
	if (n > SIZE_MAX - g)
		return n;
	return (n + g - 1) / g * g;
}

void *tfs_reuse_take(struct tfs_reuse *r, size_t n, size_t *cap)
{
	size_t best = SIZE_MAX, c;
	void *p;

	*cap = 0;
	if (r && n >= TFS_REUSE_MIN) {
		pthread_mutex_lock(&r->lock);
		for (size_t i = 0; i < r->num; i++) {
			c = r->slot[i].cap;
			if (c >= n && c - n <= n / 4 &&
			    (best == SIZE_MAX || c < r->slot[best].cap))
				best = i;
		}
		if (best != SIZE_MAX) {
			p = r->slot[best].p;
			c = r->slot[best].cap;
			memmove(&r->slot[best], &r->slot[best + 1],
				(r->num - best - 1) * sizeof(r->slot[0]));
			r->num--;
			r->held -= c;
			atomic_fetch_sub(&all_held, c);
			r->hits++;
			pthread_mutex_unlock(&r->lock);
			tfs_mem_uncharge(tfs_mem_global(), c);
			*cap = c;
			return p;
		}
		r->misses++;
		pthread_mutex_unlock(&r->lock);
		c = round_cap(n);
		p = r->huge ? tfs_malloc_big(c) : tfs_malloc(c);
		if (p) {
			*cap = c;
			return p;
		}
	}
	p = tfs_malloc(n);
	if (p)
		*cap = n;
	return p;
}

/* The most every list together keeps now: a quarter of the budget. */
static uint64_t limit_all(void)
{
	uint64_t budget = tfs_mem_budget(tfs_mem_global());

	return budget ? budget / 4 : UINT64_MAX;
}

/* The most r keeps now: its maximum, at most an eighth of the budget. */
static uint64_t limit(const struct tfs_reuse *r)
{
	uint64_t budget = tfs_mem_budget(tfs_mem_global());

	return budget && budget / 8 < r->max ? budget / 8 : r->max;
}

/* Takes r's oldest buffer off its list (the caller holds r's lock). */
static struct spare pop_oldest(struct tfs_reuse *r)
{
	struct spare s = r->slot[0];

	r->held -= s.cap;
	atomic_fetch_sub(&all_held, s.cap);
	memmove(&r->slot[0], &r->slot[1], (r->num - 1) * sizeof(r->slot[0]));
	r->num--;
	return s;
}

void tfs_reuse_give(struct tfs_reuse *r, void *p, size_t cap)
{
	struct spare gone[SLOTS];
	size_t gone_num = 0;
	uint64_t lim, lim_all, freed = 0;
	bool keep;

	if (!p)
		return;
	lim_all = limit_all();
	lim = r ? limit(r) : 0;
	if (!r || cap < TFS_REUSE_MIN || cap > lim ||
	    !tfs_mem_charge_spare(tfs_mem_global(), cap)) {
		tfs_free(p);
		return;
	}
	pthread_mutex_lock(&r->lock);
	/* The oldest of r go for the newest; other lists keep theirs. */
	while (r->num && (r->num == SLOTS || r->held + cap > lim ||
			  atomic_load(&all_held) + cap > lim_all))
		gone[gone_num++] = pop_oldest(r);
	keep = atomic_load(&all_held) + cap <= lim_all;
	if (keep) {
		r->slot[r->num++] = (struct spare){p, cap};
		r->held += cap;
		atomic_fetch_add(&all_held, cap);
	}
	pthread_mutex_unlock(&r->lock);
	if (!keep) {
		tfs_free(p);
		freed += cap;
	}
	for (size_t i = 0; i < gone_num; i++) {
		tfs_free(gone[i].p);
		freed += gone[i].cap;
	}
	tfs_mem_uncharge(tfs_mem_global(), freed);
}

uint64_t tfs_reuse_drop(struct tfs_reuse *r, uint64_t want)
{
	uint64_t freed = 0;

	pthread_mutex_lock(&r->lock);
	while (r->num && freed < want) {
		struct spare sp = pop_oldest(r);

		tfs_free(sp.p);
		freed += sp.cap;
	}
	pthread_mutex_unlock(&r->lock);
	tfs_mem_uncharge(tfs_mem_global(), freed);
	return freed;
}

void tfs_reuse_get_stats(struct tfs_reuse *r, struct tfs_reuse_stats *out)
{
	pthread_mutex_lock(&r->lock);
	out->held = r->held;
	out->hits = r->hits;
	out->misses = r->misses;
	pthread_mutex_unlock(&r->lock);
}
