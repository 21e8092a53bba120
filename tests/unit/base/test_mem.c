/* core/base: the memory accountant (tfs_mem.h): counting within a budget,
 * refusals, bounded waits for releases, reclaimers, the priority of the
 * largest waiting charge and the thread's stop. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "tfs_mem.h"

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static uint64_t used_of(struct tfs_mem *m)
{
	struct tfs_mem_stats st;

	tfs_mem_get_stats(m, &st);
	return st.used;
}

Test(mem, counts_within_the_budget_and_refuses_past_it)
{
	struct tfs_mem *m;
	struct tfs_mem_stats st;

	cr_assert_eq(tfs_mem_new(1000, &m), TFS_E_OK);
	tfs_mem_configure(m, 1000, 0);
	cr_expect_eq(tfs_mem_charge(m, 600), TFS_E_OK);
	cr_expect_eq(tfs_mem_charge(m, 400), TFS_E_OK, "exactly the budget");
	cr_expect_eq(tfs_mem_charge(m, 1), TFS_E_NOMEM);
	cr_expect_eq(tfs_mem_try_charge(m, 1), TFS_E_NOMEM);
	cr_expect_eq(tfs_mem_charge(m, 1001), TFS_E_NOMEM,
		     "more than the whole budget");
	tfs_mem_uncharge(m, 600);
	cr_expect_eq(used_of(m), 400);
	cr_expect_eq(tfs_mem_charge(m, 600), TFS_E_OK);
	tfs_mem_uncharge(m, 1000);
	tfs_mem_get_stats(m, &st);
	cr_expect_eq(st.used, 0);
	cr_expect_eq(st.high, 1000);
	cr_expect_eq(st.refusals, 3);
	cr_expect_eq(st.budget, 1000);
	/* Never below zero. */
	tfs_mem_uncharge(m, 5);
	cr_expect_eq(used_of(m), 0);
	tfs_mem_free(m);
}

Test(mem, no_budget_counts_without_limit)
{
	struct tfs_mem *m;
	struct tfs_mem_stats st;

	cr_assert_eq(tfs_mem_new(0, &m), TFS_E_OK);
	cr_expect_eq(tfs_mem_charge(m, UINT64_C(1) << 40), TFS_E_OK);
	tfs_mem_force_charge(m, 10);
	tfs_mem_get_stats(m, &st);
	cr_expect_eq(st.used, (UINT64_C(1) << 40) + 10);
	cr_expect_eq(st.high, st.used);
	tfs_mem_free(m);
}

Test(mem, forced_charges_count_over_the_budget)
{
	struct tfs_mem *m;

	cr_assert_eq(tfs_mem_new(100, &m), TFS_E_OK);
	tfs_mem_force_charge(m, 150);
	cr_expect_eq(used_of(m), 150);
	cr_expect_eq(tfs_mem_try_charge(m, 1), TFS_E_NOMEM);
	tfs_mem_uncharge(m, 150);
	cr_expect_eq(tfs_mem_try_charge(m, 100), TFS_E_OK);
	tfs_mem_free(m);
}

struct releaser {
	struct tfs_mem *m;
	uint64_t n;
	long after_ms;
};

static void *release_later(void *arg)
{
	struct releaser *r = arg;

	sleep_ms(r->after_ms);
	tfs_mem_uncharge(r->m, r->n);
	return NULL;
}

Test(mem, a_charge_waits_for_a_release)
{
	struct tfs_mem *m;
	struct releaser r;
	struct tfs_mem_stats st;
	pthread_t t;

	cr_assert_eq(tfs_mem_new(1000, &m), TFS_E_OK);
	tfs_mem_configure(m, 1000, 5000);
	cr_assert_eq(tfs_mem_charge(m, 900), TFS_E_OK);
	r = (struct releaser){m, 900, 100};
	cr_assert_eq(pthread_create(&t, NULL, release_later, &r), 0);
	cr_expect_eq(tfs_mem_charge(m, 500), TFS_E_OK, "after the release");
	pthread_join(t, NULL);
	tfs_mem_get_stats(m, &st);
	cr_expect_eq(st.used, 500);
	cr_expect_eq(st.waits, 1);
	cr_expect_eq(st.high, 900);
	tfs_mem_free(m);
}

Test(mem, a_wait_is_bounded)
{
	struct tfs_mem *m;
	struct timespec t0, t1;
	long ms;

	cr_assert_eq(tfs_mem_new(1000, &m), TFS_E_OK);
	tfs_mem_configure(m, 1000, 200);
	cr_assert_eq(tfs_mem_charge(m, 900), TFS_E_OK);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(tfs_mem_charge(m, 500), TFS_E_NOMEM);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 +
	     (t1.tv_nsec - t0.tv_nsec) / 1000000;
	cr_expect_geq(ms, 150, "waited %ld ms", ms);
	cr_expect_lt(ms, 3000, "waited %ld ms", ms);
	cr_expect_eq(used_of(m), 900, "nothing counted for the refusal");
	tfs_mem_free(m);
}

struct held {
	struct tfs_mem *m;
	uint64_t bytes;
	int calls;
};

static uint64_t give_back(void *ctx, uint64_t want)
{
	struct held *h = ctx;
	uint64_t n = h->bytes < want ? h->bytes : want;

	h->calls++;
	h->bytes -= n;
	tfs_mem_uncharge(h->m, n);
	return n;
}

Test(mem, reclaimers_make_room_before_anyone_waits)
{
	struct tfs_mem *m;
	struct held h;
	struct tfs_mem_stats st;

	cr_assert_eq(tfs_mem_new(1000, &m), TFS_E_OK);
	tfs_mem_configure(m, 1000, 0);
	h = (struct held){m, 800, 0};
	tfs_mem_force_charge(m, 800);
	cr_assert_eq(tfs_mem_reclaimer_add(m, give_back, &h), TFS_E_OK);
	cr_expect_eq(tfs_mem_try_charge(m, 500), TFS_E_OK);
	cr_expect_eq(h.calls, 1);
	cr_expect_eq(h.bytes, 500, "gave back just what was missing");
	cr_expect_eq(used_of(m), 1000);
	tfs_mem_get_stats(m, &st);
	cr_expect_eq(st.waits, 0);
	tfs_mem_reclaimer_remove(m, give_back, &h);
	cr_expect_eq(tfs_mem_try_charge(m, 1), TFS_E_NOMEM);
	cr_expect_eq(h.calls, 1, "removed: not asked again");
	tfs_mem_free(m);
}

/* A small charge in a full budget asks the reclaimers for a 64th of the
 * budget, not for the few bytes it lacks: the next small charges find
 * room without reclaiming again. */
Test(mem, reclaim_frees_a_slack_for_small_charges)
{
	struct tfs_mem *m;
	struct held h;

	cr_assert_eq(tfs_mem_new(64000, &m), TFS_E_OK);
	tfs_mem_configure(m, 64000, 0);
	h = (struct held){m, 64000, 0};
	tfs_mem_force_charge(m, 64000);
	cr_assert_eq(tfs_mem_reclaimer_add(m, give_back, &h), TFS_E_OK);
	cr_expect_eq(tfs_mem_try_charge(m, 10), TFS_E_OK);
	cr_expect_eq(h.calls, 1);
	cr_expect_eq(h.bytes, 63000, "gave back a 64th of the budget");
	for (int i = 0; i < 99; i++)
		cr_expect_eq(tfs_mem_try_charge(m, 10), TFS_E_OK);
	cr_expect_eq(h.calls, 1, "the next charges fit without reclaiming");
	tfs_mem_reclaimer_remove(m, give_back, &h);
	tfs_mem_free(m);
}

struct waiter {
	struct tfs_mem *m;
	uint64_t n;
	enum tfs_err e;
	atomic_bool done;
};

static void *charge_waiting(void *arg)
{
	struct waiter *w = arg;

	w->e = tfs_mem_charge(w->m, w->n);
	atomic_store(&w->done, true);
	return NULL;
}

Test(mem, new_charges_leave_room_for_the_largest_waiting)
{
	struct tfs_mem *m;
	struct waiter w;
	pthread_t t;

	cr_assert_eq(tfs_mem_new(1000, &m), TFS_E_OK);
	tfs_mem_configure(m, 1000, 5000);
	cr_assert_eq(tfs_mem_charge(m, 600), TFS_E_OK);
	w = (struct waiter){.m = m, .n = 700};
	atomic_init(&w.done, false);
	cr_assert_eq(pthread_create(&t, NULL, charge_waiting, &w), 0);
	sleep_ms(150); /* the 700 waits */
	cr_expect(!atomic_load(&w.done));
	/* 300 would fit, but not with the 700 waiting. */
	cr_expect_eq(tfs_mem_try_charge(m, 300), TFS_E_NOMEM);
	tfs_mem_uncharge(m, 600);
	pthread_join(t, NULL);
	cr_expect_eq(w.e, TFS_E_OK);
	cr_expect_eq(used_of(m), 700);
	cr_expect_eq(tfs_mem_try_charge(m, 300), TFS_E_OK, "nobody waits now");
	tfs_mem_free(m);
}

static bool stop_now(void *ctx)
{
	return atomic_load((atomic_bool *)ctx);
}

struct stopper {
	struct tfs_mem *m;
	atomic_bool stop;
	enum tfs_err e;
};

static void *charge_with_stop(void *arg)
{
	struct stopper *s = arg;

	tfs_mem_thread_stop(stop_now, &s->stop);
	s->e = tfs_mem_charge(s->m, 500);
	tfs_mem_thread_stop(NULL, NULL);
	return NULL;
}

Test(mem, a_stopped_thread_stops_waiting)
{
	struct tfs_mem *m;
	struct stopper s;
	struct timespec t0, t1;
	pthread_t t;
	long ms;

	cr_assert_eq(tfs_mem_new(1000, &m), TFS_E_OK);
	tfs_mem_configure(m, 1000, 10000);
	cr_assert_eq(tfs_mem_charge(m, 900), TFS_E_OK);
	s.m = m;
	atomic_init(&s.stop, false);
	s.e = TFS_E_OK;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(pthread_create(&t, NULL, charge_with_stop, &s), 0);
	sleep_ms(100);
	atomic_store(&s.stop, true);
	pthread_join(t, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 +
	     (t1.tv_nsec - t0.tv_nsec) / 1000000;
	cr_expect_eq(s.e, TFS_E_INTR);
	cr_expect_lt(ms, 2000, "stopped after %ld ms of a 10 s wait", ms);
	cr_expect_eq(used_of(m), 900);
	tfs_mem_free(m);
}
