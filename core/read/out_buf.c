/* The output columns of a query's batch (tfs_read.h): the readers append
 * cells here, tfs_query_next empties them for each batch. Below the readers
 * and the API, so both can use it without calling each other. */
#include "tfs_read.h"

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
