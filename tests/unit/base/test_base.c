/* core/base: the growable buffer and its hard maximum, the bounds-checked
 * cursor and byte-order helpers, the error table and first-failure
 * diagnostics, allocation failure injection, the thread pool and the
 * datatype table. */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_civil.h"
#include "tfs_bytes.h"
#include "tfs_datatype.h"
#include "tfs_err.h"
#include "tfs_log.h"
#include "tfs_pool.h"
#include "tfs_str.h"

/* ---- tfs_buf ------------------------------------------------------------ */

Test(buf, grows_and_keeps_bytes)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_null(b.data);
	for (unsigned i = 0; i < 10000; i++) {
		uint8_t v = (uint8_t)(i * 7);

		cr_assert_eq(tfs_buf_append(&b, &v, 1), TFS_E_OK);
		cr_assert_leq(b.len, b.cap);
	}
	cr_assert_eq(b.len, 10000);
	for (unsigned i = 0; i < 10000; i++)
		cr_assert_eq(b.data[i], (uint8_t)(i * 7), "byte %u", i);
	tfs_buf_release(&b);
	cr_assert_null(b.data);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(b.cap, 0);
}

Test(buf, temp_template_ends_in_the_six_replaced_characters)
{
	char t[32], small[12];
	size_t n;

	cr_assert_eq(tfs_temp_template(t, sizeof(t), "/tmp", "a."), t);
	n = strlen(t);
	cr_assert_eq(n, strlen("/tmp/a.") + 6);
	cr_assert_eq(strncmp(t, "/tmp/a.", 7), 0);
	for (size_t i = 7; i < n; i++)
		cr_assert_eq(t[i], 'X');
	/* "/tmp/a." and six more plus the NUL need 14 bytes. */
	cr_assert_null(tfs_temp_template(small, sizeof(small), "/tmp", "a."));
	cr_assert_not_null(tfs_temp_template(t, 14, "/tmp", "a."));
	cr_assert_null(tfs_temp_template(t, 13, "/tmp", "a."));
}

Test(buf, integers_are_little_endian)
{
	struct tfs_buf b;
	static const uint8_t want[] = {0x7f, 0x04, 0x03, 0x02, 0x01, 0x08,
				       0x07, 0x06, 0x05, 0x04, 0x03, 0x02,
				       0x01};

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append_u8(&b, 0x7f), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u32(&b, 0x01020304u), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u64(&b, 0x0102030405060708ull), TFS_E_OK);
	cr_assert_eq(b.len, sizeof(want));
	cr_assert_arr_eq(b.data, want, sizeof(want));
	tfs_buf_release(&b);
}

Test(buf, hard_maximum_is_too_big)
{
	struct tfs_buf b;

	tfs_buf_init(&b, 10);
	cr_assert_eq(tfs_buf_append(&b, "12345678", 8), TFS_E_OK);
	cr_assert_eq(tfs_buf_append(&b, "abc", 3), TFS_E_TOO_BIG);
	cr_assert_eq(b.len, 8, "a failed append leaves the buffer as it was");
	cr_assert_eq(tfs_buf_append(&b, "ab", 2), TFS_E_OK);
	cr_assert_leq(b.cap, 10);
	cr_assert_eq(tfs_buf_reserve(&b, 1), TFS_E_TOO_BIG);
	cr_assert_eq(tfs_buf_reserve(&b, SIZE_MAX), TFS_E_TOO_BIG);
	cr_assert_eq(tfs_buf_resize(&b, 11), TFS_E_TOO_BIG);
	cr_assert_arr_eq(b.data, "12345678ab", 10);
	tfs_buf_release(&b);
}

Test(buf, huge_request_without_maximum_fails_cleanly)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append(&b, "x", 1), TFS_E_OK);
	cr_assert_eq(tfs_buf_reserve(&b, SIZE_MAX), TFS_E_TOO_BIG);
	cr_assert_eq(tfs_buf_reserve(&b, SIZE_MAX / 2), TFS_E_NOMEM);
	cr_assert_eq(b.len, 1);
	tfs_buf_release(&b);
}

Test(buf, resize_zero_fills_and_shrinks)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append(&b, "abc", 3), TFS_E_OK);
	cr_assert_eq(tfs_buf_resize(&b, 100), TFS_E_OK);
	cr_assert_eq(b.len, 100);
	cr_assert_arr_eq(b.data, "abc", 3);
	for (size_t i = 3; i < 100; i++)
		cr_assert_eq(b.data[i], 0);
	cr_assert_eq(tfs_buf_resize(&b, 2), TFS_E_OK);
	cr_assert_eq(b.len, 2);
	tfs_buf_release(&b);
}

Test(buf, printf_appends_without_nul)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_printf(&b, "%s=%d", "x", 42), TFS_E_OK);
	cr_assert_eq(tfs_buf_printf(&b, ";%05u", 7u), TFS_E_OK);
	cr_assert_eq(b.len, 10);
	cr_assert_arr_eq(b.data, "x=42;00007", 10);
	tfs_buf_release(&b);

	tfs_buf_init(&b, 4);
	cr_assert_eq(tfs_buf_printf(&b, "%s", "too long"), TFS_E_TOO_BIG);
	cr_assert_eq(b.len, 0);
	tfs_buf_release(&b);
}

Test(buf, detach_hands_over_and_empties)
{
	struct tfs_buf b;
	uint8_t *p;
	size_t len = 0;

	tfs_buf_init(&b, 64);
	cr_assert_eq(tfs_buf_append(&b, "hello", 5), TFS_E_OK);
	p = tfs_buf_detach(&b, &len);
	cr_assert_not_null(p);
	cr_assert_eq(len, 5);
	cr_assert_arr_eq(p, "hello", 5);
	cr_assert_null(b.data);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(b.cap, 0);
	cr_assert_eq(b.max, 64, "the maximum survives a detach");
	cr_assert_eq(tfs_buf_append(&b, "again", 5), TFS_E_OK);
	cr_assert_neq(b.data, p);
	tfs_free(p);
	tfs_buf_release(&b);
}

/* ---- cursor and byte order ---------------------------------------------- */

Test(bytes, little_endian_round_trip)
{
	uint8_t b[8];

	tfs_put_u16(b, 0xbeef);
	cr_assert_eq(b[0], 0xef);
	cr_assert_eq(b[1], 0xbe);
	cr_assert_eq(tfs_get_u16(b), 0xbeef);
	tfs_put_u32(b, 0xdeadbeefu);
	cr_assert_eq(b[0], 0xef);
	cr_assert_eq(b[3], 0xde);
	cr_assert_eq(tfs_get_u32(b), 0xdeadbeefu);
	tfs_put_u64(b, 0x0123456789abcdefull);
	cr_assert_eq(b[0], 0xef);
	cr_assert_eq(b[7], 0x01);
	cr_assert_eq(tfs_get_u64(b), 0x0123456789abcdefull);
	tfs_put_u64(b, UINT64_MAX);
	cr_assert_eq(tfs_get_u64(b), UINT64_MAX);
}

Test(bytes, big_endian_widths)
{
	uint8_t b[8] = {0};

	for (unsigned w = 1; w <= 8; w++) {
		uint64_t v = w == 8 ? 0x8877665544332211ull
				    : (0x8877665544332211ull &
				       ((UINT64_C(1) << (8 * w)) - 1));

		memset(b, 0xaa, sizeof(b));
		tfs_put_be(b, w, v);
		cr_assert_eq(b[w - 1], 0x11, "width %u: last byte is lowest", w);
		cr_assert_eq(tfs_get_be(b, w), v, "width %u", w);
		if (w < 8)
			cr_assert_eq(b[w], 0xaa, "width %u writes %u bytes", w, w);
	}
}

Test(cursor, reads_within_bounds)
{
	static const uint8_t data[] = {1, 0x04, 0x03, 0x02, 0x01,
				       0xff, 0xff, 0xff, 0xff,
				       0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 9};
	struct tfs_cursor c;
	uint8_t u8;
	uint32_t u32;
	int32_t i32;
	double f64;
	uint8_t two[2];

	tfs_cur_init(&c, data, sizeof(data));
	cr_assert_eq(tfs_cur_left(&c), sizeof(data));
	cr_assert(tfs_cur_u8(&c, &u8));
	cr_assert_eq(u8, 1);
	cr_assert(tfs_cur_u32(&c, &u32));
	cr_assert_eq(u32, 0x01020304u);
	cr_assert(tfs_cur_i32(&c, &i32));
	cr_assert_eq(i32, -1);
	cr_assert(tfs_cur_f64(&c, &f64));
	cr_assert_eq(f64, 1.0);
	cr_assert_eq(tfs_cur_left(&c), 1);
	cr_assert_not(tfs_cur_copy(&c, two, 2));
	cr_assert_eq(tfs_cur_left(&c), 1, "a failed read does not move");
	cr_assert(tfs_cur_copy(&c, two, 1));
	cr_assert_eq(two[0], 9);
	cr_assert_eq(tfs_cur_left(&c), 0);
	cr_assert_not(tfs_cur_u8(&c, &u8));
	cr_assert(tfs_cur_skip(&c, 0));
}

Test(cursor, refuses_reads_past_the_end)
{
	static const uint8_t data[] = {1, 2, 3};
	struct tfs_cursor c;
	const uint8_t *p = NULL;
	uint64_t u64;
	uint32_t u32;

	tfs_cur_init(&c, data, sizeof(data));
	cr_assert_not(tfs_cur_u32(&c, &u32));
	cr_assert_not(tfs_cur_u64(&c, &u64));
	cr_assert_not(tfs_cur_skip(&c, SIZE_MAX));
	cr_assert_not(tfs_cur_take(&c, 4, &p));
	cr_assert_eq(c.pos, 0);
	cr_assert(tfs_cur_take(&c, 2, &p));
	cr_assert_eq(p, data);
	cr_assert_not(tfs_cur_skip(&c, 2));
	cr_assert(tfs_cur_skip(&c, 1));
	cr_assert_not(tfs_cur_take(&c, 1, &p));
}

/* ---- errors ------------------------------------------------------------- */

struct errno_case {
	enum tfs_err code;
	int errno_value;
};

Test(err, errno_table)
{
	static const struct errno_case cases[] = {
		{TFS_E_OK, 0},		  {TFS_E_NOMEM, ENOMEM},
		{TFS_E_IO, EIO},	  {TFS_E_CORRUPT, EIO},
		{TFS_E_CHECKSUM, EIO},	  {TFS_E_UNSUPPORTED, EIO},
		{TFS_E_KEY, EACCES},	  {TFS_E_PERM, EACCES},
		{TFS_E_NOT_FOUND, ENOENT},
		{TFS_E_NOT_ARRAY, ENOENT}, {TFS_E_INVALID, EINVAL},
		{TFS_E_RANGE, ERANGE},	  {TFS_E_TOO_BIG, EFBIG},
		{TFS_E_EXISTS, EEXIST},	  {TFS_E_NOSPC, ENOSPC},
		{TFS_E_READONLY, EROFS},  {TFS_E_BUSY, EBUSY},
		{TFS_E_NAME_TOO_LONG, ENAMETOOLONG},
		{TFS_E_INTERNAL, EIO},	  {TFS_E_NOT_DIR, ENOTDIR},
		{TFS_E_IS_DIR, EISDIR},	  {TFS_E_BAD_HANDLE, EBADF},
		{TFS_E_NO_ATTR, ENODATA},
		{TFS_E_INTR, EINTR},
	};

	cr_assert_eq(sizeof(cases) / sizeof(cases[0]), TFS_E__COUNT,
		     "every code has a row here");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(tfs_err_errno(cases[i].code), cases[i].errno_value,
			     "code %d", (int)cases[i].code);
		cr_assert_not_null(tfs_strerror(cases[i].code));
		cr_assert_neq(tfs_strerror(cases[i].code)[0], '\0');
	}
	cr_assert_str_eq(tfs_strerror(TFS_E_OK), "success");
	cr_assert_str_eq(tfs_strerror(TFS_E_NOMEM), "out of memory");
	cr_assert_str_eq(tfs_strerror(TFS_E__COUNT), "unknown error");
	cr_assert_eq(tfs_err_errno(TFS_E__COUNT), EIO);
}

Test(err, fail_keeps_the_first_failure)
{
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(d.code, TFS_E_OK);
	cr_assert_str_eq(tfs_diag_msg(&d), "success");
	cr_assert_eq(tfs_fail(&d, TFS_E_OK, "not a failure"), TFS_E_OK);
	cr_assert_eq(d.code, TFS_E_OK);
	cr_assert_eq(tfs_fail(&d, TFS_E_CORRUPT, "fragment '%s': tile %d", "f1",
			      3),
		     TFS_E_CORRUPT);
	cr_assert_eq(tfs_fail(&d, TFS_E_IO, "later failure"), TFS_E_IO,
		     "the code is returned even when not recorded");
	cr_assert_eq(d.code, TFS_E_CORRUPT);
	cr_assert_str_eq(tfs_diag_msg(&d), "fragment 'f1': tile 3");
	cr_assert_eq(tfs_fail(NULL, TFS_E_KEY, "no diagnostic"), TFS_E_KEY);
}

Test(err, message_falls_back_and_truncates)
{
	struct tfs_diag d;
	char long_text[1000];

	tfs_diag_init(&d);
	d.code = TFS_E_NOMEM;
	cr_assert_str_eq(tfs_diag_msg(&d), "out of memory");

	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	tfs_diag_init(&d);
	cr_assert_eq(tfs_fail(&d, TFS_E_IO, "%s", long_text), TFS_E_IO);
	cr_assert_eq(strlen(d.msg), sizeof(d.msg) - 1);
}

/* ---- allocation --------------------------------------------------------- */

Test(alloc, fails_after_n_allocations)
{
	void *a, *b, *c;

	tfs_alloc_fail_after(2);
	a = tfs_malloc(16);
	b = tfs_callocn(4, 4);
	c = tfs_malloc(16);
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_null(c, "the third allocation fails");
	cr_assert_null(tfs_realloc(a, 64), "and every later one");
	cr_assert_null(tfs_strdup("x"));
	tfs_alloc_fail_after(-1);
	c = tfs_malloc(16);
	cr_assert_not_null(c, "a negative count switches injection off");
	tfs_free(a);
	tfs_free(b);
	tfs_free(c);
}

#define RACE_THREADS 4
#define RACE_ROUNDS 500
#define RACE_ALLOCS 64
#define RACE_COUNTDOWN 5

static atomic_long race_successes;
static pthread_barrier_t race_start;

static void *allocate_many(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&race_start);
	for (int i = 0; i < RACE_ALLOCS; i++) {
		void *p = tfs_malloc(8);

		if (p)
			atomic_fetch_add(&race_successes, 1);
		tfs_free(p);
	}
	return NULL;
}

/* Threads allocating at once as the countdown runs out: exactly N
 * allocations succeed, and every one after them fails (the countdown
 * never passes 0, which would switch injection off). Many short rounds,
 * so that the threads meet at the boundary. */
Test(alloc, countdown_is_exact_across_threads)
{
	pthread_t t[RACE_THREADS];

	for (int round = 0; round < RACE_ROUNDS; round++) {
		atomic_store(&race_successes, 0);
		pthread_barrier_init(&race_start, NULL, RACE_THREADS);
		tfs_alloc_fail_after(RACE_COUNTDOWN);
		for (int i = 0; i < RACE_THREADS; i++)
			cr_assert_eq(pthread_create(&t[i], NULL, allocate_many,
						    NULL), 0);
		for (int i = 0; i < RACE_THREADS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&race_start);
		cr_assert_null(tfs_malloc(1), "round %d: still failing", round);
		tfs_alloc_fail_after(-1);
		cr_assert_eq(atomic_load(&race_successes), RACE_COUNTDOWN,
			     "round %d", round);
	}
}

Test(alloc, fail_now_and_buffers_report_nomem)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	tfs_alloc_fail_after(0);
	cr_assert_null(tfs_malloc(1));
	cr_assert_eq(tfs_buf_append(&b, "abc", 3), TFS_E_NOMEM);
	cr_assert_eq(b.len, 0);
	tfs_alloc_fail_after(-1);
	cr_assert_eq(tfs_buf_append(&b, "abc", 3), TFS_E_OK);
	tfs_buf_release(&b);
}

Test(alloc, overflow_checks)
{
	cr_assert_null(tfs_mallocn(SIZE_MAX / 2, 3));
	cr_assert_null(tfs_callocn(SIZE_MAX / 2, 3));
	cr_assert_null(tfs_reallocn(NULL, SIZE_MAX / 4, 8));
	void *z = tfs_callocn(0, 8);

	cr_assert_not_null(z, "zero-size allocations succeed");
	tfs_free(z);
	tfs_free(NULL);
}

Test(alloc, copies_are_nul_terminated)
{
	char *s = tfs_strdup("tile");
	char *n = tfs_strndup("fragment", 4);
	uint8_t raw[3] = {1, 0, 2};
	uint8_t *m = tfs_memdup(raw, sizeof(raw));

	cr_assert_str_eq(s, "tile");
	cr_assert_str_eq(n, "frag");
	cr_assert_arr_eq(m, raw, 3);
	cr_assert_eq(m[3], 0);
	tfs_free(s);
	tfs_free(n);
	tfs_free(m);
}

/* ---- thread pool -------------------------------------------------------- */

struct count_job {
	struct tfs_job job;
	atomic_int *counter;
	pthread_t ran_on;
};

static void count_fn(void *arg)
{
	struct count_job *cj = arg;

	cj->ran_on = pthread_self();
	atomic_fetch_add(cj->counter, 1);
}

Test(pool, runs_every_job)
{
	enum { N = 200 };
	static struct count_job jobs[N];
	struct tfs_pool *pool;
	atomic_int counter = 0;

	cr_assert_eq(tfs_pool_new(4, &pool), TFS_E_OK);
	cr_assert_eq(tfs_pool_threads(pool), 4);
	for (int i = 0; i < N; i++) {
		jobs[i].counter = &counter;
		tfs_job_init(&jobs[i].job, count_fn, &jobs[i]);
		tfs_pool_submit(pool, &jobs[i].job);
	}
	for (int i = 0; i < N; i++) {
		tfs_job_wait(pool, &jobs[i].job);
		cr_assert_eq(jobs[i].job.state, TFS_JOB_DONE);
	}
	cr_assert_eq(atomic_load(&counter), N);
	tfs_pool_free(pool);
}

Test(pool, wait_runs_an_unsubmitted_job_inline)
{
	struct tfs_pool *pool;
	struct count_job cj;
	atomic_int counter = 0;

	cr_assert_eq(tfs_pool_new(2, &pool), TFS_E_OK);
	cj.counter = &counter;
	tfs_job_init(&cj.job, count_fn, &cj);
	tfs_job_wait(pool, &cj.job);
	cr_assert_eq(atomic_load(&counter), 1);
	cr_assert(pthread_equal(cj.ran_on, pthread_self()));
	tfs_pool_free(pool);
}

Test(pool, zero_threads_run_inline_at_wait)
{
	struct tfs_pool *pool;
	struct count_job a, b;
	atomic_int counter = 0;

	cr_assert_eq(tfs_pool_new(0, &pool), TFS_E_OK);
	cr_assert_eq(tfs_pool_threads(pool), 0);
	a.counter = b.counter = &counter;
	tfs_job_init(&a.job, count_fn, &a);
	tfs_job_init(&b.job, count_fn, &b);
	tfs_pool_submit(pool, &a.job);
	tfs_pool_submit(pool, &b.job);
	cr_assert_eq(atomic_load(&counter), 0, "nothing runs before the wait");
	tfs_job_wait(pool, &b.job);
	tfs_job_wait(pool, &a.job);
	cr_assert_eq(atomic_load(&counter), 2);
	cr_assert(pthread_equal(a.ran_on, pthread_self()));
	cr_assert(pthread_equal(b.ran_on, pthread_self()));
	tfs_pool_free(pool);
}

Test(pool, free_accepts_null_and_cpu_count)
{
	tfs_pool_free(NULL);
	cr_assert_geq(tfs_cpu_count(), 1);
}

/* ---- datatypes ---------------------------------------------------------- */

struct type_case {
	unsigned type;
	const char *name;
	size_t size;
	enum tfs_type_class cls;
};

Test(datatype, sizes_names_classes)
{
	static const struct type_case cases[] = {
		{TFS_INT32, "INT32", 4, TFS_CLASS_SIGNED},
		{TFS_INT64, "INT64", 8, TFS_CLASS_SIGNED},
		{TFS_FLOAT32, "FLOAT32", 4, TFS_CLASS_FLOAT},
		{TFS_FLOAT64, "FLOAT64", 8, TFS_CLASS_FLOAT},
		{TFS_CHAR, "CHAR", 1, TFS_CLASS_STRING},
		{TFS_INT8, "INT8", 1, TFS_CLASS_SIGNED},
		{TFS_UINT8, "UINT8", 1, TFS_CLASS_UNSIGNED},
		{TFS_INT16, "INT16", 2, TFS_CLASS_SIGNED},
		{TFS_UINT16, "UINT16", 2, TFS_CLASS_UNSIGNED},
		{TFS_UINT32, "UINT32", 4, TFS_CLASS_UNSIGNED},
		{TFS_UINT64, "UINT64", 8, TFS_CLASS_UNSIGNED},
		{TFS_STRING_ASCII, "STRING_ASCII", 1, TFS_CLASS_STRING},
		{TFS_STRING_UTF8, "STRING_UTF8", 1, TFS_CLASS_STRING},
		{TFS_STRING_UTF16, "STRING_UTF16", 2, TFS_CLASS_STRING},
		{TFS_STRING_UTF32, "STRING_UTF32", 4, TFS_CLASS_STRING},
		{TFS_STRING_UCS2, "STRING_UCS2", 2, TFS_CLASS_STRING},
		{TFS_STRING_UCS4, "STRING_UCS4", 4, TFS_CLASS_STRING},
		{TFS_ANY, "ANY", 1, TFS_CLASS_BYTES},
		{TFS_DATETIME_YEAR, "DATETIME_YEAR", 8, TFS_CLASS_SIGNED},
		{25, "DATETIME_MS", 8, TFS_CLASS_SIGNED},
		{TFS_DATETIME_AS, "DATETIME_AS", 8, TFS_CLASS_SIGNED},
		{TFS_TIME_HR, "TIME_HR", 8, TFS_CLASS_SIGNED},
		{36, "TIME_NS", 8, TFS_CLASS_SIGNED},
		{TFS_TIME_AS, "TIME_AS", 8, TFS_CLASS_SIGNED},
		{TFS_BLOB, "BLOB", 1, TFS_CLASS_BYTES},
		{TFS_BOOL, "BOOL", 1, TFS_CLASS_UNSIGNED},
		{TFS_GEOM_WKB, "GEOM_WKB", 1, TFS_CLASS_BYTES},
		{TFS_GEOM_WKT, "GEOM_WKT", 1, TFS_CLASS_BYTES},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct type_case *c = &cases[i];

		cr_assert(tfs_datatype_valid(c->type), "%s", c->name);
		cr_assert_str_eq(tfs_datatype_name(c->type), c->name);
		cr_assert_eq(tfs_datatype_size(c->type), c->size, "%s", c->name);
		cr_assert_eq(tfs_datatype_class(c->type), c->cls, "%s", c->name);
		cr_assert_eq(tfs_datatype_is_string(c->type),
			     c->cls == TFS_CLASS_STRING, "%s", c->name);
		cr_assert_eq(tfs_datatype_is_integer(c->type),
			     c->cls == TFS_CLASS_SIGNED ||
				     c->cls == TFS_CLASS_UNSIGNED,
			     "%s", c->name);
	}
	cr_assert(tfs_datatype_is_datetime(25));
	cr_assert_not(tfs_datatype_is_datetime(TFS_INT64));
	cr_assert_not(tfs_datatype_valid(TFS_DATATYPE_MAX + 1));
	cr_assert_eq(tfs_datatype_size(TFS_DATATYPE_MAX + 1), 0);
	cr_assert_str_eq(tfs_datatype_name(200), "INVALID");
}

Test(datatype, default_fill_values)
{
	uint8_t b[8];
	float f;
	double d;

	tfs_datatype_default_fill(TFS_INT32, b);
	cr_assert_eq(tfs_value_as_i64(TFS_INT32, b), INT32_MIN);
	tfs_datatype_default_fill(TFS_INT8, b);
	cr_assert_eq(tfs_value_as_i64(TFS_INT8, b), INT8_MIN);
	tfs_datatype_default_fill(TFS_INT64, b);
	cr_assert_eq(tfs_value_as_i64(TFS_INT64, b), INT64_MIN);
	tfs_datatype_default_fill(25, b);
	cr_assert_eq(tfs_value_as_i64(25, b), INT64_MIN, "DATETIME_MS");
	tfs_datatype_default_fill(TFS_UINT16, b);
	cr_assert_eq(tfs_value_as_u64(TFS_UINT16, b), UINT16_MAX);
	tfs_datatype_default_fill(TFS_UINT64, b);
	cr_assert_eq(tfs_value_as_u64(TFS_UINT64, b), UINT64_MAX);
	tfs_datatype_default_fill(TFS_BOOL, b);
	cr_assert_eq(b[0], 0);
	tfs_datatype_default_fill(TFS_FLOAT32, b);
	memcpy(&f, b, sizeof(f));
	cr_assert(isnan(f));
	tfs_datatype_default_fill(TFS_FLOAT64, b);
	memcpy(&d, b, sizeof(d));
	cr_assert(isnan(d));
	tfs_datatype_default_fill(TFS_CHAR, b);
	cr_assert_eq(b[0], 0x80);
	tfs_datatype_default_fill(TFS_STRING_ASCII, b);
	cr_assert_eq(b[0], 0);
	tfs_datatype_default_fill(TFS_BLOB, b);
	cr_assert_eq(b[0], 0);
}

Test(datatype, values_and_comparison)
{
	int16_t i16 = -300;
	uint32_t u32 = 4000000000u;
	uint64_t big = UINT64_MAX - 1, one = 1;
	int64_t neg = -5, pos = 3;
	float f = -2.5f;
	double x = 1.5, y = 2.5;
	int8_t i8 = -1;
	uint8_t u8 = 255, one8 = 1;

	cr_assert_eq(tfs_value_as_i64(TFS_INT16, &i16), -300);
	cr_assert_eq(tfs_value_as_u64(TFS_UINT32, &u32), 4000000000u);
	cr_assert_eq(tfs_value_as_f64(TFS_FLOAT32, &f), -2.5);
	cr_assert_eq(tfs_value_as_f64(TFS_INT16, &i16), -300.0);
	cr_assert_lt(tfs_value_cmp(TFS_INT64, &neg, &pos), 0);
	cr_assert_gt(tfs_value_cmp(TFS_UINT64, &big, &one), 0,
		     "unsigned, not sign-extended");
	cr_assert_lt(tfs_value_cmp(TFS_FLOAT64, &x, &y), 0);
	cr_assert_eq(tfs_value_cmp(TFS_FLOAT64, &x, &x), 0);
	cr_assert_lt(tfs_value_cmp(TFS_INT8, &i8, &one8), 0, "0xff as INT8 is -1");
	cr_assert_gt(tfs_value_cmp(TFS_UINT8, &u8, &one8), 0,
		     "0xff as UINT8 is 255");
}

Test(datatype, bytes_compare_bytewise_prefix_first)
{
	cr_assert_lt(tfs_bytes_cmp("ab", 2, "abc", 3), 0);
	cr_assert_gt(tfs_bytes_cmp("abc", 3, "ab", 2), 0);
	cr_assert_eq(tfs_bytes_cmp("abc", 3, "abc", 3), 0);
	cr_assert_eq(tfs_bytes_cmp("", 0, "", 0), 0);
	cr_assert_lt(tfs_bytes_cmp("", 0, "a", 1), 0);
	cr_assert_gt(tfs_bytes_cmp("\xff", 1, "a", 1), 0, "unsigned bytes");
	cr_assert_lt(tfs_bytes_cmp("B", 1, "a", 1), 0);
}

/* ---- log ---------------------------------------------------------------- */

static char last_line[600];
static enum tfs_log_level last_level;
static int lines;

static void capture(enum tfs_log_level level, const char *line)
{
	last_level = level;
	lines++;
	snprintf(last_line, sizeof(last_line), "%s", line);
}

Test(log, sink_and_level)
{
	tfs_log_configure(capture, TFS_LOG_WARN);
	tfs_log(TFS_LOG_ERROR, "array '%s': %d", "a", 1);
	cr_assert_eq(lines, 1);
	cr_assert_eq(last_level, TFS_LOG_ERROR);
	cr_assert_str_eq(last_line, "array 'a': 1");
	tfs_log(TFS_LOG_DEBUG, "dropped");
	cr_assert_eq(lines, 1, "more verbose than the maximum: dropped");
	tfs_log_configure(NULL, TFS_LOG_WARN);
}

static char log_seen[2048];
static void log_capture(enum tfs_log_level level, const char *line)
{
	(void)level;
	snprintf(log_seen, sizeof(log_seen), "%s", line);
}

Test(log, control_characters_escaped)
{
	char out[64];

	cr_assert_eq(tfs_escape_ctrl(out, sizeof(out), "a\nb\tc\r\x01\x7f\\z"),
		     strlen("a\\nb\\tc\\r\\x01\\x7f\\z"));
	cr_assert_str_eq(out, "a\\nb\\tc\\r\\x01\\x7f\\z");
	/* Cut at a whole escape. */
	cr_assert_eq(tfs_escape_ctrl(out, 4, "ab\ncd"), 2);
	cr_assert_str_eq(out, "ab");
	cr_assert_str_eq((tfs_escape_ctrl(out, sizeof(out), "h\xc3\xa9"), out),
			 "h\xc3\xa9");
	/* A forged second line stays on the first. */
	tfs_log_configure(log_capture, TFS_LOG_INFO);
	tfs_log(TFS_LOG_INFO, "write '%s': ok", "x\ntilefs: forged");
	tfs_log_configure(NULL, TFS_LOG_WARN);
	cr_assert_str_eq(log_seen, "write 'x\\ntilefs: forged': ok");
	cr_assert_null(strchr(log_seen, '\n'));
}

Test(str, ends_with_compares_the_last_bytes)
{
	static const struct {
		const char *s, *suffix;
		bool exact, nocase;
	} cases[] = {
		{"a.csv", ".csv", true, true},
		{"a.CSV", ".csv", false, true},
		{".csv", ".csv", true, true},
		{"csv", ".csv", false, false},
		{"", "", true, true},
		{"abc", "", true, true},
		{"", "x", false, false},
		{"__fragments/x.wrt", ".wrt", true, true},
		{"x.wrtx", ".wrt", false, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(tfs_str_ends_with(cases[i].s, cases[i].suffix),
			     cases[i].exact, "'%s' ends with '%s'", cases[i].s,
			     cases[i].suffix);
		cr_assert_eq(tfs_str_ends_with_nocase(cases[i].s,
						      cases[i].suffix),
			     cases[i].nocase, "'%s' ends with '%s' (any case)",
			     cases[i].s, cases[i].suffix);
	}
}

Test(str, ends_with)
{
	static const struct {
		const char *s, *suffix;
		bool want;
	} cases[] = {
		{"a.con", ".con", true},   {".con", ".con", true},
		{"con", ".con", false},    {"a.con.tmp", ".con", false},
		{"", "", true},            {"abc", "", true},
		{"", "x", false},          {"__fragments", "s", true},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(tfs_str_ends_with(cases[i].s, cases[i].suffix),
			     cases[i].want, "'%s' '%s'", cases[i].s,
			     cases[i].suffix);
}

Test(alloc, grow)
{
	uint32_t *v = NULL;
	size_t cap = 0;

	cr_assert_eq(tfs_grow(&v, &cap, 0, sizeof(*v)), TFS_E_OK);
	cr_assert_null(v);
	cr_assert_eq(tfs_grow(&v, &cap, 1, sizeof(*v)), TFS_E_OK);
	cr_assert_not_null(v);
	cr_assert_eq(cap, 16);
	for (uint32_t i = 0; i < 16; i++)
		v[i] = i;
	/* Enough room: nothing moves. */
	uint32_t *same = v;
	cr_assert_eq(tfs_grow(&v, &cap, 16, sizeof(*v)), TFS_E_OK);
	cr_assert_eq(v, same);
	/* Doubles until need fits, keeping the items. */
	cr_assert_eq(tfs_grow(&v, &cap, 100, sizeof(*v)), TFS_E_OK);
	cr_assert_eq(cap, 128);
	for (uint32_t i = 0; i < 16; i++)
		cr_assert_eq(v[i], i);
	/* More bytes than size_t counts: refused, unchanged. */
	same = v;
	cr_assert_eq(tfs_grow(&v, &cap, SIZE_MAX / 2, sizeof(*v)),
		     TFS_E_NOMEM);
	cr_assert_eq(v, same);
	cr_assert_eq(cap, 128);
	/* A failed allocation: unchanged too. */
	tfs_alloc_fail_after(0);
	cr_assert_eq(tfs_grow(&v, &cap, 129, sizeof(*v)), TFS_E_NOMEM);
	tfs_alloc_fail_after(-1);
	cr_assert_eq(v, same);
	cr_assert_eq(cap, 128);
	cr_assert_eq(v[15], 15);
	tfs_free(v);
}

/* ---- Calendar ---------------------------------------------------------- */

__extension__ typedef __int128 days128;

Test(civil, days_from_civil_known_dates)
{
	static const struct {
		int64_t y;
		unsigned m, d;
		int64_t days;
	} cases[] = {
		{1970, 1, 1, 0},         {1969, 12, 31, -1},
		{2000, 2, 29, 11016},    {2000, 3, 1, 11017},
		{1900, 3, 1, -25508},    {2024, 1, 1, 19723},
		{0, 3, 1, -719468},      {-1, 12, 31, -719529},
		{9999, 12, 31, 2932896}, {1600, 1, 1, -135140},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq((int64_t)tfs_days_from_civil(cases[i].y,
							  cases[i].m,
							  cases[i].d),
			     cases[i].days, "%" PRId64 "-%u-%u", cases[i].y,
			     cases[i].m, cases[i].d);
}

/* Consecutive days differ by one across month, leap-day and century
 * boundaries, and years of the int64 extremes do not wrap. */
Test(civil, days_from_civil_is_continuous)
{
	static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30,
					   31, 31, 30, 31, 30, 31};
	days128 prev = tfs_days_from_civil(1599, 12, 31);

	for (int64_t y = 1600; y <= 2401; y++) {
		bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

		for (unsigned m = 1; m <= 12; m++) {
			unsigned n = mdays[m - 1] + (m == 2 && leap);

			for (unsigned d = 1; d <= n; d++) {
				days128 cur = tfs_days_from_civil(y, m, d);

				cr_assert(cur == prev + 1, "%" PRId64 "-%u-%u",
					  y, m, d);
				prev = cur;
			}
		}
	}
	cr_expect(tfs_days_from_civil(INT64_MAX, 12, 31) >
		  tfs_days_from_civil(INT64_MAX, 1, 1));
	cr_expect(tfs_days_from_civil(INT64_MIN + 1, 1, 1) <
		  tfs_days_from_civil(INT64_MIN + 1, 12, 31));
	cr_expect(tfs_days_from_civil(INT64_MAX, 1, 1) > (days128)INT64_MAX);
}

/* civil_from_days inverts days_from_civil, day by day over four centuries
 * and at the ends of int64 day numbers. */
Test(civil, civil_from_days_inverts)
{
	int64_t y;
	unsigned m, d;

	for (int64_t z = -146097 * 2; z <= 146097 * 2; z++) {
		tfs_civil_from_days(z, &y, &m, &d);
		cr_assert(m >= 1 && m <= 12 && d >= 1 && d <= 31);
		cr_assert((int64_t)tfs_days_from_civil(y, m, d) == z,
			  "%" PRId64 " -> %" PRId64 "-%u-%u", z, y, m, d);
	}
	tfs_civil_from_days(INT64_MAX, &y, &m, &d);
	cr_expect((int64_t)tfs_days_from_civil(y, m, d) == INT64_MAX);
	tfs_civil_from_days(INT64_MIN, &y, &m, &d);
	cr_expect((int64_t)tfs_days_from_civil(y, m, d) == INT64_MIN);
	tfs_civil_from_days(19723, &y, &m, &d);
	cr_expect(y == 2024 && m == 1 && d == 1);
}
