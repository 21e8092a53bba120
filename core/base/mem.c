/* The memory accountant (tfs_mem.h): a counter under a budget, updated
 * with atomics; a mutex and a condition only for the charges that wait. */
#include "tfs_mem.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "tfs_alloc.h"

/* A charge that waits asks the reclaimers again this often. */
#define WAIT_SLICE_MS 50
#define DEFAULT_WAIT_MS 2000
/* A reclaim asks for 1/RECLAIM_SLACK of the budget at least. */
#define RECLAIM_SLACK 64

struct reclaimer {
	tfs_mem_reclaim_fn fn;
	void *ctx;
};

struct tfs_mem {
	_Atomic uint64_t budget;
	_Atomic unsigned wait_ms;
	_Atomic uint64_t used;
	_Atomic uint64_t high;
	_Atomic uint64_t waits;
	_Atomic uint64_t refusals;
	_Atomic unsigned waiters;
	_Atomic unsigned reclaiming; /* charges asking the reclaimers now */
	/* The largest charge waiting: new charges leave room for it (those
	 * waiting already do not, lest one that cannot fit stop them all),
	 * so that big charges are not starved by a stream of small ones. */
	_Atomic uint64_t reserve;
	pthread_mutex_t wait_lock; /* with released: charges that wait */
	pthread_cond_t released;
	pthread_mutex_t reclaim_lock; /* the reclaimers, held while they run */
	struct reclaimer reclaimers[TFS_MEM_RECLAIMERS];
	unsigned reclaimer_num;
};

/* The thread's stop (tfs_mem_thread_stop). */
static _Thread_local bool (*thread_stop_fn)(void *ctx);
static _Thread_local void *thread_stop_ctx;

void tfs_mem_thread_stop(bool (*fn)(void *ctx), void *ctx)
{
	thread_stop_fn = fn;
	thread_stop_ctx = ctx;
}

static struct tfs_mem global = {
	.wait_ms = DEFAULT_WAIT_MS,
	.wait_lock = PTHREAD_MUTEX_INITIALIZER,
	.released = PTHREAD_COND_INITIALIZER,
	.reclaim_lock = PTHREAD_MUTEX_INITIALIZER,
};

struct tfs_mem *tfs_mem_global(void)
{
	return &global;
}

enum tfs_err tfs_mem_new(uint64_t budget, struct tfs_mem **out)
{
	struct tfs_mem *m = tfs_callocn(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return TFS_E_NOMEM;
	atomic_init(&m->budget, budget);
	atomic_init(&m->wait_ms, DEFAULT_WAIT_MS);
	pthread_mutex_init(&m->wait_lock, NULL);
	pthread_cond_init(&m->released, NULL);
	pthread_mutex_init(&m->reclaim_lock, NULL);
	*out = m;
	return TFS_E_OK;
}

void tfs_mem_free(struct tfs_mem *m)
{
	if (!m || m == &global)
		return;
	pthread_cond_destroy(&m->released);
	pthread_mutex_destroy(&m->wait_lock);
	pthread_mutex_destroy(&m->reclaim_lock);
	tfs_free(m);
}

void tfs_mem_configure(struct tfs_mem *m, uint64_t budget, unsigned wait_ms)
{
	atomic_store(&m->budget, budget);
	atomic_store(&m->wait_ms, wait_ms);
	/* A larger budget may let waiting charges in. */
	pthread_mutex_lock(&m->wait_lock);
	pthread_cond_broadcast(&m->released);
	pthread_mutex_unlock(&m->wait_lock);
}

uint64_t tfs_mem_budget(const struct tfs_mem *m)
{
	return atomic_load(&m->budget);
}

static void note_high(struct tfs_mem *m, uint64_t now)
{
	uint64_t high = atomic_load_explicit(&m->high, memory_order_relaxed);

	while (now > high &&
	       !atomic_compare_exchange_weak(&m->high, &high, now))
		;
}

/* Adds n to the count if the sum stays within budget (0: always) with
 * `keep` bytes left over. */
static bool add_if_fits(struct tfs_mem *m, uint64_t n, uint64_t budget,
			uint64_t keep)
{
	uint64_t used = atomic_load_explicit(&m->used, memory_order_relaxed);

	if (budget && keep >= budget)
		keep = 0; /* (a waiter larger than the budget fails anyway) */
	do {
		if (budget &&
		    (used > budget - keep || n > budget - keep - used))
			return false;
	} while (!atomic_compare_exchange_weak(&m->used, &used, used + n));
	note_high(m, used + n);
	return true;
}

bool tfs_mem_charge_spare(struct tfs_mem *m, uint64_t n)
{
	uint64_t budget = atomic_load(&m->budget);

	if (atomic_load(&m->waiters) || atomic_load(&m->reclaiming))
		return false;
	/* A sixteenth of the budget stays free for the charges of work. */
	return add_if_fits(m, n, budget,
			   atomic_load(&m->reserve) + budget / 16);
}

void tfs_mem_force_charge(struct tfs_mem *m, uint64_t n)
{
	if (n)
		note_high(m, atomic_fetch_add(&m->used, n) + n);
}

void tfs_mem_uncharge(struct tfs_mem *m, uint64_t n)
{
	uint64_t used = atomic_load_explicit(&m->used, memory_order_relaxed);

	if (!n)
		return;
	/* Never below 0, whatever a caller gets wrong. */
	do {
	} while (!atomic_compare_exchange_weak(&m->used, &used,
					       used > n ? used - n : 0));
	if (atomic_load(&m->waiters)) {
		pthread_mutex_lock(&m->wait_lock);
		pthread_cond_broadcast(&m->released);
		pthread_mutex_unlock(&m->wait_lock);
	}
}

/* Asks the reclaimers for room for n more bytes, and for 1/RECLAIM_SLACK
 * of the budget at least: small charges in a full budget (tiles of a few
 * cells) would otherwise each reclaim a few bytes, and wait. */
static void reclaim(struct tfs_mem *m, uint64_t n, uint64_t budget)
{
	uint64_t slack = budget / RECLAIM_SLACK;

	atomic_fetch_add(&m->reclaiming, 1);
	pthread_mutex_lock(&m->reclaim_lock);
	for (unsigned i = 0; i < m->reclaimer_num; i++) {
		uint64_t used = atomic_load(&m->used), want;

		if (used <= budget && n <= budget - used)
			break;
		want = used + n - budget; /* what is over, with n */
		m->reclaimers[i].fn(m->reclaimers[i].ctx,
				    want > slack ? want : slack);
	}
	pthread_mutex_unlock(&m->reclaim_lock);
	atomic_fetch_sub(&m->reclaiming, 1);
}

void tfs_mem_rebalance(struct tfs_mem *m)
{
	uint64_t budget = atomic_load(&m->budget);

	if (budget && atomic_load(&m->used) > budget)
		reclaim(m, 0, budget);
}

void tfs_mem_charge_held(struct tfs_mem *m, uint64_t n)
{
	tfs_mem_force_charge(m, n);
	tfs_mem_rebalance(m);
}

static void deadline_after(struct timespec *ts, unsigned ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Makes n the reserve unless a larger charge waits. */
static void raise_reserve(struct tfs_mem *m, uint64_t n)
{
	uint64_t r = atomic_load(&m->reserve);

	while (r < n && !atomic_compare_exchange_weak(&m->reserve, &r, n))
		;
}

static enum tfs_err charge(struct tfs_mem *m, uint64_t n, bool wait)
{
	uint64_t budget = atomic_load(&m->budget), mine, reserve;
	unsigned left = wait ? atomic_load(&m->wait_ms) : 0;
	enum tfs_err e = TFS_E_NOMEM;
	bool ok;

	if (!n)
		return TFS_E_OK;
	if (n > budget && budget)
		goto refuse;
	if (add_if_fits(m, n, budget, atomic_load(&m->reserve)))
		return TFS_E_OK;
	/* Room for the charge and for the largest one waiting, which it
	 * must leave free. */
	reserve = atomic_load(&m->reserve);
	reclaim(m, reserve < budget && n < budget - reserve ? n + reserve : n,
		budget);
	if (add_if_fits(m, n, budget, atomic_load(&m->reserve)))
		return TFS_E_OK;
	if (!left)
		goto refuse;
	atomic_fetch_add(&m->waits, 1);
	atomic_fetch_add(&m->waiters, 1);
	for (ok = false; !ok && left;) {
		unsigned slice = left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS;
		struct timespec ts;

		if (thread_stop_fn && thread_stop_fn(thread_stop_ctx)) {
			e = TFS_E_INTR;
			break;
		}
		raise_reserve(m, n);
		deadline_after(&ts, slice);
		left -= slice;
		pthread_mutex_lock(&m->wait_lock);
		while (!(ok = add_if_fits(m, n, atomic_load(&m->budget), 0)) &&
		       pthread_cond_timedwait(&m->released, &m->wait_lock,
					      &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&m->wait_lock);
		if (!ok) {
			budget = atomic_load(&m->budget);
			reclaim(m, n, budget);
			ok = add_if_fits(m, n, budget, 0);
		}
	}
	/* The next largest waiter raises the reserve again. */
	mine = n;
	if (atomic_compare_exchange_strong(&m->reserve, &mine, 0)) {
		pthread_mutex_lock(&m->wait_lock);
		pthread_cond_broadcast(&m->released);
		pthread_mutex_unlock(&m->wait_lock);
	}
	atomic_fetch_sub(&m->waiters, 1);
	if (ok)
		return TFS_E_OK;
refuse:
	atomic_fetch_add(&m->refusals, 1);
	return e;
}

enum tfs_err tfs_mem_charge(struct tfs_mem *m, uint64_t n)
{
	return charge(m, n, true);
}

enum tfs_err tfs_mem_charge_for(struct tfs_mem *m, uint64_t n,
				struct tfs_diag *d, const char *fmt, ...)
{
	enum tfs_err e = tfs_mem_charge(m, n);
	struct tfs_mem_stats ms;
	char what[256];
	va_list ap;

	if (!e)
		return TFS_E_OK;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (e == TFS_E_INTR)
		return tfs_fail(d, e, "%s: interrupted while waiting for memory",
				what);
	tfs_mem_get_stats(m, &ms);
	return tfs_fail(d, TFS_E_NOMEM,
			"%s needs %" PRIu64 " bytes, no room within the memory "
			"budget of %" PRIu64 " (%" PRIu64 " in use)",
			what, n, ms.budget, ms.used);
}

enum tfs_err tfs_mem_try_charge(struct tfs_mem *m, uint64_t n)
{
	return charge(m, n, false);
}

static enum tfs_err reclaimer_add(struct tfs_mem *m, tfs_mem_reclaim_fn fn,
				  void *ctx, bool first)
{
	enum tfs_err e = TFS_E_NOMEM;

	pthread_mutex_lock(&m->reclaim_lock);
	if (m->reclaimer_num < TFS_MEM_RECLAIMERS) {
		unsigned at = first ? 0 : m->reclaimer_num;

		for (unsigned i = m->reclaimer_num; i > at; i--)
			m->reclaimers[i] = m->reclaimers[i - 1];
		m->reclaimers[at] = (struct reclaimer){fn, ctx};
		m->reclaimer_num++;
		e = TFS_E_OK;
	}
	pthread_mutex_unlock(&m->reclaim_lock);
	return e;
}

enum tfs_err tfs_mem_reclaimer_add(struct tfs_mem *m, tfs_mem_reclaim_fn fn,
				   void *ctx)
{
	return reclaimer_add(m, fn, ctx, false);
}

enum tfs_err tfs_mem_reclaimer_add_first(struct tfs_mem *m,
					 tfs_mem_reclaim_fn fn, void *ctx)
{
	return reclaimer_add(m, fn, ctx, true);
}

void tfs_mem_reclaimer_remove(struct tfs_mem *m, tfs_mem_reclaim_fn fn,
			      void *ctx)
{
	pthread_mutex_lock(&m->reclaim_lock);
	for (unsigned i = 0; i < m->reclaimer_num; i++) {
		if (m->reclaimers[i].fn == fn && m->reclaimers[i].ctx == ctx) {
			/* In order: the first stay first. */
			for (unsigned k = i + 1; k < m->reclaimer_num; k++)
				m->reclaimers[k - 1] = m->reclaimers[k];
			m->reclaimer_num--;
			break;
		}
	}
	pthread_mutex_unlock(&m->reclaim_lock);
}

void tfs_mem_get_stats(struct tfs_mem *m, struct tfs_mem_stats *out)
{
	out->budget = atomic_load(&m->budget);
	out->used = atomic_load(&m->used);
	out->high = atomic_load(&m->high);
	out->waits = atomic_load(&m->waits);
	out->refusals = atomic_load(&m->refusals);
}
