/* Helpers of the writer's tests (write_test_util.h). */
#include "write_test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wt_dump_release(struct wt_dump *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->lines[i]);
	free(d->lines);
	memset(d, 0, sizeof(*d));
}

static void put_hex(char **s, size_t *len, size_t *cap, const uint8_t *p,
		    size_t n)
{
	static const char hex[] = "0123456789abcdef";

	while (*len + 2 * n + 4 > *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*s = realloc(*s, *cap);
	}
	for (size_t i = 0; i < n; i++) {
		(*s)[(*len)++] = hex[p[i] >> 4];
		(*s)[(*len)++] = hex[p[i] & 15];
	}
	(*s)[*len] = '\0';
}

void wt_dump_batch(struct wt_dump *out, const struct tfs_batch *b)
{
	for (uint64_t i = 0; i < b->cell_num; i++) {
		char *s = NULL;
		size_t len = 0, cap = 0;

		put_hex(&s, &len, &cap, NULL, 0);
		for (size_t f = 0; f < b->column_num; f++) {
			const struct tfs_column *c = &b->columns[f];

			put_hex(&s, &len, &cap, NULL, 0); /* room for "|N" */
			if (f)
				s[len++] = '|';
			if (c->validity && !c->validity[i]) {
				s[len++] = 'N';
				s[len] = '\0';
				continue;
			}
			if (c->var) {
				put_hex(&s, &len, &cap, c->data + c->offsets[i],
					(size_t)(c->offsets[i + 1] - c->offsets[i]));
			} else {
				size_t cs = (size_t)(c->data_len / b->cell_num);

				put_hex(&s, &len, &cap, c->data + i * cs, cs);
			}
		}
		if (out->n == out->cap) {
			out->cap = out->cap ? 2 * out->cap : 256;
			out->lines = realloc(out->lines, out->cap * sizeof(char *));
		}
		out->lines[out->n++] = s;
	}
}

void wt_read(struct tfs_array *a, const struct tfs_range *sub,
	     struct wt_dump *out)
{
	struct tfs_query_opts qo;
	struct tfs_query *q;
	struct tfs_diag d;
	const struct tfs_batch *b;

	memset(out, 0, sizeof(*out));
	memset(&qo, 0, sizeof(qo));
	qo.subarray = sub;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		wt_dump_batch(out, b);
	}
	tfs_query_close(q);
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void wt_dump_sort(struct wt_dump *d)
{
	if (d->n)
		qsort(d->lines, d->n, sizeof(char *), line_cmp);
}

void wt_expect_dump_eq(const struct wt_dump *got, const struct wt_dump *want)
{
	cr_expect_eq(got->n, want->n, "%zu cells read, %zu expected", got->n,
		     want->n);
	for (size_t i = 0, bad = 0; i < got->n && i < want->n && bad < 5; i++)
		if (strcmp(got->lines[i], want->lines[i])) {
			cr_expect_str_eq(got->lines[i], want->lines[i],
					 "cell %zu", i);
			bad++;
		}
}

void wt_expect_same_cells(struct tfs_array *a, struct tfs_array *b)
{
	struct wt_dump da, db;

	wt_read(a, NULL, &da);
	wt_read(b, NULL, &db);
	cr_expect_gt(da.n, 0);
	wt_expect_dump_eq(&db, &da);
	wt_dump_release(&da);
	wt_dump_release(&db);
}
