/* fmt_float_check: the long comparisons of core/base/fmt_float.c with the
 * printf/strtod search it replaced (fmt_float_oracle.c), too slow for
 * CTest, and its benchmark (README.md, "Float formatting"):
 *
 *   fmt_float_check floats [THREADS]
 *       every one of the 2^32 float bit patterns through tfs_fmt_f32
 *   fmt_float_check doubles COUNT [SEED [THREADS]]
 *       COUNT random double bit patterns through tfs_fmt_f64 with the
 *       JSON writer's plain limit (1e16), one in 16 also with the filter
 *       descriptions' (1e15)
 *   fmt_float_check bench [COUNT]
 *       the time per value of the search and of tfs_fmt_f64/f32 on the
 *       same COUNT values (default 10 000 000) of each kind, one thread
 *
 * The comparisons print progress, the first mismatches and a summary
 * line, and exit 1 if any text differs. THREADS defaults to 2. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmt_float_oracle.h"
#include "tfs_fmt_float.h"

#define MAX_THREADS 64
#define MAX_REPORTS 20

struct sweep {
	bool doubles;
	uint64_t count, seed;
	unsigned threads;
	atomic_uint_fast64_t done, finite, mismatches;
};

struct worker {
	struct sweep *s;
	unsigned index;
	pthread_t tid;
};

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static void report(struct sweep *s, const char *what, uint64_t bits,
		   const char *got, const char *want)
{
	uint_fast64_t n = atomic_fetch_add(&s->mismatches, 1);

	if (n >= MAX_REPORTS)
		return;
	pthread_mutex_lock(&report_lock);
	printf("MISMATCH %s bits 0x%" PRIx64 ": new '%s' old '%s'\n", what,
	       bits, got, want);
	fflush(stdout);
	pthread_mutex_unlock(&report_lock);
}

static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void check_float(struct sweep *s, uint32_t bits)
{
	char got[TFS_FMT_FLOAT_MAX], want[40];
	float v;

	memcpy(&v, &bits, sizeof(v));
	if (!isfinite(v))
		return;
	atomic_fetch_add_explicit(&s->finite, 1, memory_order_relaxed);
	tfs_fmt_f32(got, sizeof(got), v, 1e16);
	fmt_oracle_json_f32(want, sizeof(want), v);
	if (strcmp(got, want))
		report(s, "float", bits, got, want);
}

/* The filter descriptions' search starts at one digit: ten times the
 * cost, so it checks one input in 16. */
static void check_double(struct sweep *s, uint64_t bits)
{
	char got[TFS_FMT_FLOAT_MAX], want[40];
	double v;

	memcpy(&v, &bits, sizeof(v));
	if (!isfinite(v))
		return;
	atomic_fetch_add_explicit(&s->finite, 1, memory_order_relaxed);
	tfs_fmt_f64(got, sizeof(got), v, 1e16);
	fmt_oracle_json_f64(want, sizeof(want), v);
	if (strcmp(got, want))
		report(s, "double", bits, got, want);
	if (bits % 16)
		return;
	tfs_fmt_f64(got, sizeof(got), v, 1e15);
	fmt_oracle_pipeline(want, sizeof(want), v);
	if (strcmp(got, want))
		report(s, "double (plain below 1e15)", bits, got, want);
}

/* Worker i takes the blocks i, i + threads, ... of 2^20 inputs. */
static void *run(void *arg)
{
	struct worker *w = arg;
	struct sweep *s = w->s;
	const uint64_t block = UINT64_C(1) << 20;
	uint64_t blocks = (s->count + block - 1) / block;

	for (uint64_t b = w->index; b < blocks; b += s->threads) {
		uint64_t lo = b * block;
		uint64_t hi = lo + block < s->count ? lo + block : s->count;
		uint64_t state = s->seed ^ (b * UINT64_C(0x9e3779b97f4a7c15));

		for (uint64_t i = lo; i < hi; i++) {
			if (s->doubles)
				check_double(s, next_random(&state));
			else
				check_float(s, (uint32_t)i);
		}
		atomic_fetch_add(&s->done, hi - lo);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct bench_kind {
	const char *name;
	bool f32;
	uint64_t count;
};

static double bench_value(const struct bench_kind *k, uint64_t *state)
{
	uint64_t r = next_random(state);
	double v;

	if (!strcmp(k->name, "two decimals"))
		return (double)((int64_t)(r % 2000000) - 1000000) / 100;
	if (!strcmp(k->name, "random bits")) {
		do {
			memcpy(&v, &r, sizeof(v));
			r = next_random(state);
		} while (!isfinite(v));
		return v;
	}
	/* measurements: uniform in [-1000, 1000), all digits significant */
	return ((double)(r >> 11) * 0x1p-53 - 0.5) * 2000;
}

/* Formats the values of each kind with the search and with the new code;
 * the lengths are summed so that neither loop can be dropped. */
static int bench(uint64_t count)
{
	const struct bench_kind kinds[] = {
		{"measurements", false, count},
		{"two decimals", false, count},
		{"random bits", false, count / 10},
		{"measurements", true, count},
	};

	printf("%-22s %10s %12s %12s %8s\n", "values", "count",
	       "search ns", "new ns", "speedup");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const struct bench_kind *k = &kinds[i];
		double *v = malloc(k->count * sizeof(*v));
		uint64_t state = 42, sum = 0;
		char t[40];
		double t0, t1, t2;

		if (!v) {
			fprintf(stderr, "fmt_float_check: out of memory\n");
			return 2;
		}
		for (uint64_t j = 0; j < k->count; j++) {
			v[j] = bench_value(k, &state);
			if (k->f32)
				v[j] = (double)(float)v[j];
		}
		t0 = now_s();
		for (uint64_t j = 0; j < k->count; j++)
			sum += k->f32 ? fmt_oracle_json_f32(t, sizeof(t),
							    (float)v[j])
				      : fmt_oracle_json_f64(t, sizeof(t), v[j]);
		t1 = now_s();
		for (uint64_t j = 0; j < k->count; j++)
			sum -= k->f32 ? tfs_fmt_f32(t, sizeof(t), (float)v[j],
						    1e16)
				      : tfs_fmt_f64(t, sizeof(t), v[j], 1e16);
		t2 = now_s();
		printf("%-14s %-7s %10" PRIu64 " %12.1f %12.1f %7.1fx%s\n",
		       k->name, k->f32 ? "float" : "double", k->count,
		       (t1 - t0) * 1e9 / (double)k->count,
		       (t2 - t1) * 1e9 / (double)k->count, (t1 - t0) / (t2 - t1),
		       sum ? "  (lengths differ!)" : "");
		free(v);
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: fmt_float_check floats [THREADS]\n"
			"       fmt_float_check doubles COUNT [SEED [THREADS]]\n"
			"       fmt_float_check bench [COUNT]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct sweep s;
	struct worker w[MAX_THREADS];
	const char *threads_arg = NULL;
	double start = now_s(), last = start;

	if (argc >= 2 && !strcmp(argv[1], "bench") && argc <= 3)
		return bench(argc == 3 ? strtoull(argv[2], NULL, 10)
				       : 10000000);
	if (argc >= 2 && !strcmp(argv[1], "floats") && argc <= 3) {
		s.count = UINT64_C(1) << 32;
		threads_arg = argc == 3 ? argv[2] : NULL;
	} else if (argc >= 3 && !strcmp(argv[1], "doubles") && argc <= 5) {
		s.doubles = true;
		s.count = strtoull(argv[2], NULL, 10);
		s.seed = argc >= 4 ? strtoull(argv[3], NULL, 10) : 1;
		threads_arg = argc == 5 ? argv[4] : NULL;
	} else {
		return usage();
	}
	s.threads = threads_arg ? (unsigned)strtoul(threads_arg, NULL, 10) : 2;
	if (s.threads < 1 || s.threads > MAX_THREADS || s.count == 0)
		return usage();
	for (unsigned i = 0; i < s.threads; i++) {
		w[i].s = &s;
		w[i].index = i;
		if (pthread_create(&w[i].tid, NULL, run, &w[i])) {
			fprintf(stderr, "fmt_float_check: cannot start threads\n");
			return 2;
		}
	}
	while (atomic_load(&s.done) < s.count) {
		struct timespec pause = {1, 0};

		nanosleep(&pause, NULL);
		if (now_s() - last >= 60) {
			uint64_t d = atomic_load(&s.done);

			last = now_s();
			printf("%.1f%% (%" PRIu64 " of %" PRIu64 "), %.0f s\n",
			       100.0 * (double)d / (double)s.count, d, s.count,
			       last - start);
			fflush(stdout);
		}
	}
	for (unsigned i = 0; i < s.threads; i++)
		pthread_join(w[i].tid, NULL);
	printf("fmt_float_check: %s: %" PRIu64 " inputs, %" PRIu64
	       " finite, %" PRIu64 " mismatches, %.0f s on %u threads\n",
	       s.doubles ? "doubles" : "floats", s.count,
	       (uint64_t)atomic_load(&s.finite),
	       (uint64_t)atomic_load(&s.mismatches), now_s() - start, s.threads);
	return atomic_load(&s.mismatches) ? 1 : 0;
}
