/* Thread pool: FIFO queue, workers, wait-or-run-inline. */
#include "tfs_pool.h"

#include <unistd.h>

#include "tfs_alloc.h"

struct tfs_pool {
	pthread_mutex_t lock;
	pthread_cond_t work_cv; /* queue became non-empty or stopping */
	pthread_cond_t done_cv; /* some job finished */
	struct tfs_job *head;   /* protected by lock */
	struct tfs_job *tail;   /* protected by lock */
	bool stopping;          /* protected by lock */
	unsigned nthreads;
	pthread_t *threads;
};

void tfs_job_init(struct tfs_job *job, void (*fn)(void *arg), void *arg)
{
	job->fn = fn;
	job->arg = arg;
	job->state = TFS_JOB_IDLE;
	job->next = NULL;
}

static void *worker_main(void *arg)
{
	struct tfs_pool *pool = arg;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct tfs_job *job;

		while (!pool->head && !pool->stopping)
			pthread_cond_wait(&pool->work_cv, &pool->lock);
		if (!pool->head)
			break;
		job = pool->head;
		pool->head = job->next;
		if (!pool->head)
			pool->tail = NULL;
		job->state = TFS_JOB_RUNNING;
		pthread_mutex_unlock(&pool->lock);
		job->fn(job->arg);
		pthread_mutex_lock(&pool->lock);
		job->state = TFS_JOB_DONE;
		pthread_cond_broadcast(&pool->done_cv);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

enum tfs_err tfs_pool_new(unsigned threads, struct tfs_pool **out)
{
	struct tfs_pool *pool;

	*out = NULL;
	pool = tfs_callocn(1, sizeof(*pool));
	if (!pool)
		return TFS_E_NOMEM;
	pool->threads = tfs_callocn(threads ? threads : 1, sizeof(pthread_t));
	if (!pool->threads) {
		tfs_free(pool);
		return TFS_E_NOMEM;
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work_cv, NULL);
	pthread_cond_init(&pool->done_cv, NULL);
	for (unsigned i = 0; i < threads; i++) {
		if (pthread_create(&pool->threads[i], NULL, worker_main, pool))
			break;
		pool->nthreads++;
	}
	*out = pool;
	return TFS_E_OK;
}

void tfs_pool_free(struct tfs_pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->work_cv);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_cond_destroy(&pool->work_cv);
	pthread_cond_destroy(&pool->done_cv);
	pthread_mutex_destroy(&pool->lock);
	tfs_free(pool->threads);
	tfs_free(pool);
}

unsigned tfs_pool_threads(const struct tfs_pool *pool)
{
	return pool->nthreads;
}

void tfs_pool_submit(struct tfs_pool *pool, struct tfs_job *job)
{
	pthread_mutex_lock(&pool->lock);
	job->state = TFS_JOB_QUEUED;
	job->next = NULL;
	if (pool->nthreads) {
		if (pool->tail)
			pool->tail->next = job;
		else
			pool->head = job;
		pool->tail = job;
		pthread_cond_signal(&pool->work_cv);
	}
	pthread_mutex_unlock(&pool->lock);
}

/* Unlinks a queued job; caller holds the lock. */
static void unlink_job(struct tfs_pool *pool, struct tfs_job *job)
{
	struct tfs_job *prev = NULL;

	for (struct tfs_job *j = pool->head; j; prev = j, j = j->next) {
		if (j != job)
			continue;
		if (prev)
			prev->next = j->next;
		else
			pool->head = j->next;
		if (pool->tail == j)
			pool->tail = prev;
		return;
	}
}

void tfs_job_wait(struct tfs_pool *pool, struct tfs_job *job)
{
	pthread_mutex_lock(&pool->lock);
	if (job->state == TFS_JOB_QUEUED || job->state == TFS_JOB_IDLE) {
		unlink_job(pool, job);
		job->state = TFS_JOB_RUNNING;
		pthread_mutex_unlock(&pool->lock);
		job->fn(job->arg);
		pthread_mutex_lock(&pool->lock);
		job->state = TFS_JOB_DONE;
	}
	/* While a worker runs our job, help with the queue instead of idling. */
	while (job->state != TFS_JOB_DONE) {
		struct tfs_job *other = pool->head;

		if (!other) {
			pthread_cond_wait(&pool->done_cv, &pool->lock);
			continue;
		}
		unlink_job(pool, other);
		other->state = TFS_JOB_RUNNING;
		pthread_mutex_unlock(&pool->lock);
		other->fn(other->arg);
		pthread_mutex_lock(&pool->lock);
		other->state = TFS_JOB_DONE;
		pthread_cond_broadcast(&pool->done_cv);
	}
	pthread_mutex_unlock(&pool->lock);
}

unsigned tfs_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}
