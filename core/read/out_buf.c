/* The output columns of a query's batch (tfs_read.h): the readers append
 * cells here, tfs_query_next empties them for each batch. Below the readers
 * and the API, so both can use it without calling each other. */
#include "tfs_read.h"

#include <inttypes.h>
#include <pthread.h>

#include "tfs_alloc.h"
#include "tfs_mem.h"
#include "tfs_reuse.h"

/* The fewest cells tfs_out_batch_cap leaves a batch. */
#define OUT_BATCH_CELLS_MIN 4096

/* Spare column buffers: a query per window of a file, one after the
 * other, each with batches of the same size. */
#define SPARE_COLUMN_BYTES (UINT64_C(12) << 20)

static struct tfs_reuse *spare_cols;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_init(void)
{
	spare_cols = tfs_reuse_new(SPARE_COLUMN_BYTES);
}

static struct tfs_reuse *spares(void)
{
	pthread_once(&spare_once, spare_init);
	return spare_cols;
}

enum tfs_err tfs_out_setlen(struct tfs_buf *b, size_t n)
{
	if (n > b->cap && b->len == 0 && n >= TFS_REUSE_MIN && n <= b->max) {
		size_t cap;
		uint8_t *p = tfs_reuse_take(spares(), n, &cap);

		if (!p)
			return TFS_E_NOMEM;
		tfs_free(b->data);
		b->data = p;
		b->cap = cap;
	}
	return tfs_buf_setlen(b, n);
}

/* Bytes a cell takes in the output columns, var-size values aside. */
static uint64_t cell_out_bytes(const struct tfs_query *q)
{
	uint64_t n = 0;

	for (size_t fi = 0; fi < q->field_num; fi++) {
		const struct tfs_out_field *fld = &q->fields[fi];

		if (q->dest && fi == 0)
			continue; /* the caller's memory */
		n += (fld->var ? 8 : fld->cell_size) + (fld->nullable ? 1 : 0);
	}
	return n;
}

uint64_t tfs_out_batch_cap(const struct tfs_query *q, uint64_t cells)
{
	uint64_t budget = tfs_mem_budget(tfs_mem_global());
	uint64_t per = cell_out_bytes(q), most;

	if (!budget || !per)
		return cells;
	most = budget / 32 / per;
	if (most < OUT_BATCH_CELLS_MIN)
		most = OUT_BATCH_CELLS_MIN;
	return cells < most ? cells : most;
}

enum tfs_err tfs_out_reserve(struct tfs_query *q, uint64_t cells,
			     struct tfs_diag *d)
{
	uint64_t need = cells * cell_out_bytes(q);
	enum tfs_err e;

	if (need <= q->cols_charged)
		return TFS_E_OK;
	e = tfs_mem_charge_for(tfs_mem_global(), need - q->cols_charged, d,
			       "a batch of %" PRIu64 " cells", cells);
	if (!e)
		q->cols_charged = need;
	return e;
}

void tfs_out_account(struct tfs_query *q)
{
	struct tfs_mem *m = tfs_mem_global();
	uint64_t now = 0;

	for (size_t i = 0; q->cols && i < q->field_num; i++)
		now += (q->dest && i == 0 ? 0 : q->cols[i].data.cap) +
		       q->cols[i].offsets.cap + q->cols[i].validity.cap;
	if (now > q->cols_charged)
		tfs_mem_charge_held(m, now - q->cols_charged);
	else
		tfs_mem_uncharge(m, q->cols_charged - now);
	q->cols_charged = now;
}

static void give(struct tfs_buf *b)
{
	tfs_reuse_give(spares(), b->data, b->cap);
	tfs_buf_init(b, b->max);
}

void tfs_out_release(struct tfs_query *q)
{
	/* The caller's memory, borrowed (tfs_query_opts.dest). */
	if (q->dest && q->cols)
		tfs_buf_init(&q->cols[0].data, q->cols[0].data.max);
	for (size_t i = 0; q->cols && i < q->field_num; i++) {
		give(&q->cols[i].data);
		give(&q->cols[i].offsets);
		give(&q->cols[i].validity);
	}
	tfs_mem_uncharge(tfs_mem_global(), q->cols_charged);
	q->cols_charged = 0;
}

void tfs_out_reset(struct tfs_query *q)
{
	for (size_t i = 0; i < q->field_num; i++) {
		q->cols[i].data.len = 0;
		q->cols[i].offsets.len = 0;
		q->cols[i].validity.len = 0;
	}
	q->batch_cell_num = 0;
}

enum tfs_err tfs_out_append(struct tfs_query *q, size_t field,
			    const uint8_t *value, uint64_t len, uint8_t valid)
{
	struct tfs_out_column *c = &q->cols[field];
	enum tfs_err e;

	if (q->fields[field].var) {
		e = tfs_buf_append_u64(&c->offsets, c->data.len);
		if (e)
			return e;
	}
	e = tfs_buf_append(&c->data, value, (size_t)len);
	if (!e && q->fields[field].nullable)
		e = tfs_buf_append_u8(&c->validity, valid);
	return e;
}
