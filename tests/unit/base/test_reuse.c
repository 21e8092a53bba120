/* core/base: spare big buffers kept for reuse (tfs_reuse.h): a given
 * buffer serves the next take of about its size, small ones and sizes far
 * apart do not, what is kept is counted by the process's accountant,
 * bounded by the budget, refused when the budget has no room to spare and
 * freed first when a charge does not fit. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_mem.h"
#include "tfs_reuse.h"

#define MiB ((size_t)1 << 20)

static uint64_t used(void)
{
	struct tfs_mem_stats st;

	tfs_mem_get_stats(tfs_mem_global(), &st);
	return st.used;
}

static struct tfs_reuse_stats stats_of(struct tfs_reuse *r)
{
	struct tfs_reuse_stats st;

	tfs_reuse_get_stats(r, &st);
	return st;
}

Test(reuse, a_given_buffer_serves_the_next_take_of_its_size)
{
	struct tfs_reuse *r = tfs_reuse_new(64 * MiB);
	size_t cap, cap2;
	uint8_t *p, *q;

	cr_assert_not_null(r);
	tfs_mem_configure(tfs_mem_global(), 0, 0);
	p = tfs_reuse_take(r, MiB, &cap);
	cr_assert_not_null(p);
	cr_expect_geq(cap, MiB);
	memset(p, 7, cap);
	tfs_reuse_give(r, p, cap);
	cr_expect_eq(stats_of(r).held, cap);
	cr_expect_eq(used(), cap, "kept bytes are counted");
	q = tfs_reuse_take(r, MiB - 4096, &cap2);
	cr_expect_eq(q, p, "the kept buffer came back");
	cr_expect_eq(cap2, cap);
	cr_expect_eq(q[cap2 - 1], 7);
	cr_expect_eq(stats_of(r).held, 0);
	cr_expect_eq(stats_of(r).hits, 1);
	cr_expect_eq(stats_of(r).misses, 1);
	cr_expect_eq(used(), 0, "a taken buffer is the taker's to count");
	tfs_reuse_give(r, q, cap2);
	tfs_reuse_free(r);
	cr_expect_eq(used(), 0, "freeing the list gives its count back");
}

Test(reuse, small_buffers_and_sizes_far_apart_are_not_matched)
{
	struct tfs_reuse *r = tfs_reuse_new(64 * MiB);
	size_t cap, cap2;
	uint8_t *p, *q;

	tfs_mem_configure(tfs_mem_global(), 0, 0);
	p = tfs_reuse_take(r, 1000, &cap);
	cr_assert_not_null(p);
	cr_expect_eq(cap, 1000);
	tfs_reuse_give(r, p, cap);
	cr_expect_eq(stats_of(r).held, 0, "below TFS_REUSE_MIN: freed");
	p = tfs_reuse_take(r, 4 * MiB, &cap);
	tfs_reuse_give(r, p, cap);
	q = tfs_reuse_take(r, MiB, &cap2);
	cr_expect_neq(q, p, "a 4 MiB spare does not serve 1 MiB");
	cr_expect_eq(stats_of(r).held, cap);
	tfs_reuse_give(r, q, cap2);
	q = tfs_reuse_take(r, 5 * MiB, &cap2);
	cr_expect_neq(q, p, "nor 5 MiB");
	tfs_reuse_give(r, q, cap2);
	tfs_reuse_free(r);
}

Test(reuse, kept_bytes_stay_within_the_list_and_the_budget)
{
	struct tfs_reuse *r = tfs_reuse_new(3 * MiB);
	void *p[4];
	size_t cap[4];

	tfs_mem_configure(tfs_mem_global(), 0, 0);
	for (int i = 0; i < 4; i++)
		p[i] = tfs_reuse_take(r, MiB, &cap[i]);
	for (int i = 0; i < 4; i++)
		tfs_reuse_give(r, p[i], cap[i]);
	cr_expect_leq(stats_of(r).held, 3 * MiB, "the list's maximum");
	cr_expect_eq(used(), stats_of(r).held);
	tfs_reuse_free(r);
	/* A budget of 16 MiB: an eighth of it per list. */
	r = tfs_reuse_new(64 * MiB);
	tfs_mem_configure(tfs_mem_global(), 16 * MiB, 0);
	for (int i = 0; i < 4; i++)
		p[i] = tfs_reuse_take(r, MiB, &cap[i]);
	for (int i = 0; i < 4; i++)
		tfs_reuse_give(r, p[i], cap[i]);
	cr_expect_leq(stats_of(r).held, 2 * MiB);
	cr_expect_gt(stats_of(r).held, 0);
	cr_expect_eq(used(), stats_of(r).held);
	tfs_reuse_free(r);
	cr_expect_eq(used(), 0);
}

Test(reuse, nothing_is_kept_without_room_to_spare)
{
	struct tfs_reuse *r = tfs_reuse_new(64 * MiB);
	size_t cap;
	void *p;

	tfs_mem_configure(tfs_mem_global(), 16 * MiB, 0);
	tfs_mem_force_charge(tfs_mem_global(), 14 * MiB + MiB / 2);
	p = tfs_reuse_take(r, MiB, &cap);
	tfs_reuse_give(r, p, cap);
	cr_expect_eq(stats_of(r).held, 0,
		     "15.5 MiB of 16 would leave less than a sixteenth free");
	cr_expect_eq(used(), 14 * MiB + MiB / 2);
	tfs_mem_uncharge(tfs_mem_global(), 14 * MiB + MiB / 2);
	p = tfs_reuse_take(r, MiB, &cap);
	tfs_reuse_give(r, p, cap);
	cr_expect_eq(stats_of(r).held, cap, "with room, kept");
	tfs_reuse_free(r);
}

static uint64_t cache_bytes;
static int cache_calls;

/* A cache that gives back what it holds when asked. */
static uint64_t cache_reclaim(void *ctx, uint64_t want)
{
	uint64_t n = cache_bytes < want ? cache_bytes : want;

	(void)ctx;
	cache_calls++;
	cache_bytes -= n;
	tfs_mem_uncharge(tfs_mem_global(), n);
	return n;
}

Test(reuse, spares_go_before_cached_bytes)
{
	struct tfs_reuse *r;
	size_t cap;
	void *p;

	tfs_mem_configure(tfs_mem_global(), 16 * MiB, 0);
	cr_assert_eq(tfs_mem_reclaimer_add(tfs_mem_global(), cache_reclaim,
					   NULL), TFS_E_OK);
	r = tfs_reuse_new(64 * MiB);
	cache_bytes = 8 * MiB;
	tfs_mem_force_charge(tfs_mem_global(), cache_bytes);
	p = tfs_reuse_take(r, MiB, &cap);
	tfs_reuse_give(r, p, cap);
	cr_assert_eq(stats_of(r).held, cap);
	cr_assert_eq(used(), 8 * MiB + cap);
	/* Room for 7.5 MiB: the spare goes, the cache is not asked. */
	cr_expect_eq(tfs_mem_try_charge(tfs_mem_global(),
					16 * MiB - 8 * MiB - MiB / 2),
		     TFS_E_OK);
	cr_expect_eq(stats_of(r).held, 0);
	cr_expect_eq(cache_calls, 0);
	cr_expect_eq(cache_bytes, 8 * MiB);
	/* More: the cache gives back too. */
	cr_expect_eq(tfs_mem_try_charge(tfs_mem_global(), MiB), TFS_E_OK);
	cr_expect_eq(cache_calls, 1);
	tfs_reuse_free(r);
	tfs_mem_reclaimer_remove(tfs_mem_global(), cache_reclaim, NULL);
}

static struct tfs_reuse *evict_into;
static void *evict_buf;
static size_t evict_cap;

/* A cache whose eviction gives its buffer to a spare list, as the tile
 * cache does. */
static uint64_t evict_reclaim(void *ctx, uint64_t want)
{
	(void)ctx;
	(void)want;
	if (!evict_buf)
		return 0;
	tfs_mem_uncharge(tfs_mem_global(), evict_cap);
	tfs_reuse_give(evict_into, evict_buf, evict_cap);
	evict_buf = NULL;
	return evict_cap;
}

Test(reuse, what_a_reclaimer_frees_is_not_kept_again)
{
	struct tfs_reuse *r = tfs_reuse_new(64 * MiB);

	tfs_mem_configure(tfs_mem_global(), 16 * MiB, 0);
	cr_assert_eq(tfs_mem_reclaimer_add(tfs_mem_global(), evict_reclaim,
					   NULL), TFS_E_OK);
	evict_into = r;
	evict_buf = tfs_reuse_take(r, 2 * MiB, &evict_cap);
	tfs_mem_force_charge(tfs_mem_global(), 12 * MiB + evict_cap);
	cr_expect_eq(tfs_mem_try_charge(tfs_mem_global(), 3 * MiB), TFS_E_OK,
		     "the evicted buffer made room");
	cr_expect_null(evict_buf);
	cr_expect_eq(stats_of(r).held, 0, "freed, not kept");
	cr_expect_eq(used(), 15 * MiB);
	tfs_mem_uncharge(tfs_mem_global(), 15 * MiB);
	tfs_mem_reclaimer_remove(tfs_mem_global(), evict_reclaim, NULL);
	tfs_reuse_free(r);
}

/* A list for owners that fill whole buffers takes its fresh big buffers
 * on huge-page boundaries (so that the kernel may map them in 2 MiB
 * pages); a buffer from it is an ordinary one to free. */
Test(reuse, huge_lists_align_big_buffers)
{
	struct tfs_reuse *r = tfs_reuse_new(64 * MiB);
	size_t cap;
	uint8_t *p, *small;

	cr_assert_not_null(r);
	tfs_mem_configure(tfs_mem_global(), 0, 0);
	tfs_reuse_huge(r);
	p = tfs_reuse_take(r, 4 * MiB + 100, &cap);
	cr_assert_not_null(p);
	cr_expect_eq((uintptr_t)p % (2 * MiB), 0, "%p", (void *)p);
	memset(p, 1, cap);
	small = tfs_reuse_take(r, MiB, &cap);
	cr_assert_not_null(small);
	tfs_free(small);
	tfs_free(p);
	tfs_reuse_free(r);
}
