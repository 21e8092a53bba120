/* A fixed-size thread pool running jobs that callers embed and wait for.
 *
 * A job that no worker has started yet is run by the thread that waits for
 * it, so waiting never deadlocks and a pool of 0 threads runs everything
 * inline. Thread-safe. */
#ifndef TFS_POOL_H
#define TFS_POOL_H

#include <pthread.h>
#include <stdbool.h>

#include "tfs_err.h"

struct tfs_pool;

enum tfs_job_state { TFS_JOB_IDLE, TFS_JOB_QUEUED, TFS_JOB_RUNNING, TFS_JOB_DONE };

struct tfs_job {
	void (*fn)(void *arg);
	void *arg;
	enum tfs_job_state state; /* protected by pool->lock */
	struct tfs_job *next;     /* protected by pool->lock */
};

/* threads = 0 runs jobs inline at wait time. */
enum tfs_err tfs_pool_new(unsigned threads, struct tfs_pool **out) TFS_WUR;
/* Waits for running jobs; queued jobs must have been waited for. */
void tfs_pool_free(struct tfs_pool *pool);
unsigned tfs_pool_threads(const struct tfs_pool *pool);

void tfs_job_init(struct tfs_job *job, void (*fn)(void *arg), void *arg);
/* Queues job (which must stay alive until tfs_job_wait returns). */
void tfs_pool_submit(struct tfs_pool *pool, struct tfs_job *job);
/* Returns once job has run; runs it here if no worker has started it. */
void tfs_job_wait(struct tfs_pool *pool, struct tfs_job *job);

/* Number of online CPUs, at least 1. */
unsigned tfs_cpu_count(void);

#endif
