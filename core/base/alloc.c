/* Allocation wrappers with overflow checks and a failure-injection hook. */
#include "tfs_alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Countdown to injected failure; negative = never fail. Tests only. */
static atomic_long fail_countdown = -1;

/* Once the countdown reaches 0 every allocation fails. The decrement is
 * a compare-and-swap so that threads allocating at once never take it
 * below 0, which would switch injection off. */
static int injected_failure(void)
{
	long left = atomic_load_explicit(&fail_countdown, memory_order_relaxed);

	while (left > 0) {
		if (atomic_compare_exchange_weak(&fail_countdown, &left,
						 left - 1))
			return 0;
	}
	return left == 0;
}

void tfs_alloc_fail_after(long n)
{
	atomic_store(&fail_countdown, n);
}

void *tfs_malloc(size_t size)
{
	if (injected_failure())
		return NULL;
	return malloc(size ? size : 1);
}

void *tfs_mallocn(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return tfs_malloc(n * size);
}

/* Buffers of HUGE_PAGE bytes or more start on a HUGE_PAGE boundary and
 * ask for huge pages: a fresh 4 MiB tile then costs two page faults
 * instead of 1024, where faulting in fresh tiles and windows otherwise
 * costs about as much as decoding them. The advice may be refused; the
 * buffer works either way. */
#define HUGE_PAGE ((size_t)2 << 20)

void *tfs_malloc_big(size_t size)
{
	void *p;

	if (size < HUGE_PAGE)
		return tfs_malloc(size);
	if (injected_failure() || posix_memalign(&p, HUGE_PAGE, size))
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, size / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#endif
	return p;
}

void *tfs_callocn(size_t n, size_t size)
{
	if (injected_failure())
		return NULL;
	if (!n || !size)
		return calloc(1, 1);
	return calloc(n, size);
}

void *tfs_realloc(void *p, size_t size)
{
	if (injected_failure())
		return NULL;
	return realloc(p, size ? size : 1);
}

void *tfs_reallocn(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return tfs_realloc(p, n * size);
}

enum tfs_err tfs_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	size_t max = elem ? SIZE_MAX / elem : SIZE_MAX;
	size_t ncap = *cap ? *cap : 16;
	void *old, *p;

	if (need <= *cap)
		return TFS_E_OK;
	if (need > max)
		return TFS_E_NOMEM;
	while (ncap < need)
		ncap = ncap > max / 2 ? max : ncap * 2;
	if (ncap > max)
		ncap = max;
	/* Through memcpy: pp may point at any pointer type. */
	memcpy(&old, pp, sizeof(old));
	p = tfs_reallocn(old, ncap, elem);
	if (!p)
		return TFS_E_NOMEM;
	memcpy(pp, &p, sizeof(p));
	*cap = ncap;
	return TFS_E_OK;
}

void tfs_free(void *p)
{
	free(p);
}

void *tfs_memdup(const void *p, size_t n)
{
	char *q = tfs_malloc(n + 1);

	if (!q)
		return NULL;
	if (n)
		memcpy(q, p, n);
	q[n] = '\0';
	return q;
}

char *tfs_strndup(const char *s, size_t n)
{
	return tfs_memdup(s, n);
}

char *tfs_strdup(const char *s)
{
	return tfs_memdup(s, strlen(s));
}
