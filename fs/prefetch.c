/* Read-ahead: a background thread runs the queries of the windows that
 * sequential readers will ask for next, so that their tiles are decoded
 * (on the decode pool, into the tile cache) while the readers consume the
 * current window. Requests are hints: a full queue drops the oldest, and
 * a failed one is only logged at debug level. */
#include "tfsd.h"

#include <string.h>

#include "tfs_alloc.h"
#include "tfs_log.h"

#define QUEUE_MAX 4

struct request {
	struct tfsd_arr *arr; /* a reference */
	uint32_t dim_num;
	uint8_t bounds[TFSD_MAX_DIMS][2][8];
	const char **names; /* views into the arr's schema */
	size_t name_num;
};

struct tfsd_prefetch {
	struct tfsd_arrays *arrays;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;                      /* protected by lock */
	struct request *queue[QUEUE_MAX]; /* protected by lock, oldest first */
	size_t queued;                  /* protected by lock */
};

static void request_free(struct tfsd_prefetch *p, struct request *r)
{
	if (!r)
		return;
	tfsd_arr_put(p->arrays, r->arr);
	tfs_free(r->names);
	tfs_free(r);
}

static void request_run(struct request *r)
{
	struct tfs_range sub[TFSD_MAX_DIMS];
	const struct tfs_schema *s = r->arr->schema;
	struct tfs_query_opts qo = {.subarray = sub,
				    .fields = r->names,
				    .field_num = r->name_num,
				    .decode_only = true};
	struct tfs_query *q = NULL;
	const struct tfs_batch *b;
	struct tfs_diag d;
	enum tfs_err e;

	for (uint32_t k = 0; k < r->dim_num; k++) {
		size_t w = tfs_datatype_size(tfs_schema_dim_type(s, k));

		sub[k] = (struct tfs_range){r->bounds[k][0], r->bounds[k][1], w, w};
	}
	tfs_diag_init(&d);
	e = tfs_query_open(r->arr->a, &qo, &q, &d);
	while (!e && !(e = tfs_query_next(q, &b, &d)) && b)
		;
	tfs_query_close(q);
	if (e)
		tfs_log(TFS_LOG_DEBUG, "read-ahead: %s", tfs_diag_msg(&d));
}

static void *prefetch_main(void *arg)
{
	struct tfsd_prefetch *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct request *r;

		while (!p->stop && p->queued == 0)
			pthread_cond_wait(&p->wake, &p->lock);
		if (p->stop)
			break;
		r = p->queue[0];
		memmove(p->queue, p->queue + 1, --p->queued * sizeof(p->queue[0]));
		pthread_mutex_unlock(&p->lock);
		request_run(r);
		request_free(p, r);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

enum tfs_err tfsd_prefetch_new(struct tfsd_arrays *arrays,
			       struct tfsd_prefetch **out)
{
	struct tfsd_prefetch *p = tfs_callocn(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return TFS_E_NOMEM;
	p->arrays = arrays;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	if (pthread_create(&p->thread, NULL, prefetch_main, p) != 0) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		tfs_free(p);
		return TFS_E_NOMEM;
	}
	*out = p;
	return TFS_E_OK;
}

void tfsd_prefetch_free(struct tfsd_prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	for (size_t i = 0; i < p->queued; i++)
		request_free(p, p->queue[i]);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	tfs_free(p);
}

void tfsd_prefetch_submit(struct tfsd_prefetch *p, struct tfsd_arr *arr,
			  const struct tfs_range *sub, const char *const *names,
			  size_t name_num)
{
	const struct tfs_schema *s = arr->schema;
	struct request *r, *dropped = NULL;

	if (!p || tfs_schema_dim_count(s) > TFSD_MAX_DIMS)
		return;
	r = tfs_callocn(1, sizeof(*r));
	if (!r)
		return;
	r->names = tfs_callocn(name_num ? name_num : 1, sizeof(*r->names));
	if (!r->names) {
		tfs_free(r);
		return;
	}
	memcpy(r->names, names, name_num * sizeof(*names));
	r->name_num = name_num;
	r->dim_num = tfs_schema_dim_count(s);
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		if (sub[k].lo_len > 8 || sub[k].hi_len > 8) {
			tfs_free(r->names);
			tfs_free(r);
			return;
		}
		memcpy(r->bounds[k][0], sub[k].lo, sub[k].lo_len);
		memcpy(r->bounds[k][1], sub[k].hi, sub[k].hi_len);
	}
	tfsd_arr_get(p->arrays, arr);
	r->arr = arr;
	pthread_mutex_lock(&p->lock);
	if (p->queued == QUEUE_MAX) {
		dropped = p->queue[0];
		memmove(p->queue, p->queue + 1,
			--p->queued * sizeof(p->queue[0]));
	}
	p->queue[p->queued++] = r;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	request_free(p, dropped);
}
