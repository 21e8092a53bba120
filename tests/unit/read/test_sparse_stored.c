/* The stored-order read of sparse arrays (tfs_query_opts.stored_order):
 * for every sparse array of the corpus, whole and cut to part of its
 * non-empty domain, the cells are exactly those of the sorted read (the
 * same multiset of whole cells), every choice of fields gives them in
 * the same order, small batches change nothing, a cell count known up
 * front (tfs_query_cells_known) is the count read, and a query started
 * at a position of that order (tfs_query_stored_pos), or between two,
 * gives the cells from there. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilefs/tilefs.h"

#define CORPUS TFS_CORPUS_DIR

/* Arrays whose stored order differs from the sorted one; whose read
 * tile by tile gave positions. */
static unsigned reordered, positioned;

/* Cells as byte strings: one record per cell, the fields' values in
 * query order, each as validity, length and bytes. */
struct cells {
	char **rec;
	size_t *len;
	size_t n, cap;
};

static void cells_free(struct cells *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->rec[i]);
	free(c->rec);
	free(c->len);
	memset(c, 0, sizeof(*c));
}

static void put(char **buf, size_t *len, size_t *cap, const void *p,
		size_t n)
{
	while (*len + n > *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*buf = realloc(*buf, *cap);
		cr_assert_not_null(*buf);
	}
	if (n)
		memcpy(*buf + *len, p, n);
	*len += n;
}

static void batch_cells(struct cells *out, const struct tfs_batch *b)
{
	for (uint64_t i = 0; i < b->cell_num; i++) {
		char *rec = NULL;
		size_t len = 0, cap = 0;

		for (size_t k = 0; k < b->column_num; k++) {
			const struct tfs_column *c = &b->columns[k];
			uint8_t valid = c->validity ? c->validity[i] : 1;
			uint64_t n, o;

			if (c->var) {
				o = c->offsets[i];
				n = c->offsets[i + 1] - o;
			} else {
				n = tfs_datatype_size(c->type) * c->cell_val_num;
				o = i * n;
			}
			put(&rec, &len, &cap, &valid, 1);
			put(&rec, &len, &cap, &n, sizeof(n));
			put(&rec, &len, &cap, c->data + o, (size_t)n);
		}
		if (out->n == out->cap) {
			out->cap = out->cap ? out->cap * 2 : 64;
			out->rec = realloc(out->rec, out->cap * sizeof(*out->rec));
			out->len = realloc(out->len, out->cap * sizeof(*out->len));
			cr_assert(out->rec && out->len);
		}
		out->rec[out->n] = rec;
		out->len[out->n++] = len;
	}
}

/* Every cell of a query over sub (NULL: the non-empty domain). */
static void read_all(struct tfs_array *a, const struct tfs_range *sub,
		     const char *const *fields, size_t field_num, bool stored,
		     uint64_t batch, struct cells *out, bool *known,
		     uint64_t *known_cells)
{
	struct tfs_query_opts qo = {.subarray = sub,
				    .fields = fields,
				    .field_num = field_num,
				    .batch_cells = batch,
				    .stored_order = stored};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	*known = tfs_query_cells_known(q, known_cells);
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		batch_cells(out, b);
	}
	tfs_query_close(q);
}

/* Batches of 3 cells in stored order: the position before each batch
 * (pos[i], before cell 3i) while the query gives them. */
static size_t positions(struct tfs_array *a, const struct tfs_range *sub,
			uint64_t (*pos)[2], size_t cap)
{
	struct tfs_query_opts qo = {.subarray = sub, .batch_cells = 3,
				    .stored_order = true};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	size_t n = 0;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	while (n < cap && tfs_query_stored_pos(q, pos[n])) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		n++;
	}
	tfs_query_close(q);
	return n;
}

/* The cells of a stored-order query from position from to position to
 * (NULL: the end) are cells [c0, c1) of the whole read. */
static void check_range(const char *name, struct tfs_array *a,
			const struct tfs_range *sub, const struct cells *all,
			const uint64_t *from, const uint64_t *to, size_t c0,
			size_t c1)
{
	struct tfs_query_opts qo = {.subarray = sub, .stored_order = true,
				    .batch_cells = 5};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct cells got = {0};
	struct tfs_diag d;
	uint64_t cells;

	memcpy(qo.stored_from, from, sizeof(qo.stored_from));
	if (to)
		memcpy(qo.stored_to, to, sizeof(qo.stored_to));
	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s: %s", name,
		     tfs_diag_msg(&d));
	cr_assert(!tfs_query_cells_known(q, &cells) || c0 == 0,
		  "%s: a count known from a position", name);
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		batch_cells(&got, b);
	}
	tfs_query_close(q);
	cr_assert_eq(got.n, c1 - c0, "%s: %zu cells from %zu, not %zu", name,
		     got.n, c0, c1 - c0);
	for (size_t i = 0; i < got.n; i++)
		cr_assert(got.len[i] == all->len[c0 + i] &&
				  !memcmp(got.rec[i], all->rec[c0 + i],
					  got.len[i]),
			  "%s: cell %zu from position of %zu differs", name,
			  c0 + i, c0);
	cells_free(&got);
}

/* Positions every 3 cells: the cells from each of a few, and between
 * two of them, are those of the whole read (all) from there. */
static void check_positions(const char *name, struct tfs_array *a,
			    const struct tfs_range *sub,
			    const struct cells *all)
{
	static uint64_t pos[4096][2];
	size_t n = positions(a, sub, pos, 4096), step;

	if (!n)
		return;
	positioned++;
	step = n / 7 ? n / 7 : 1;
	for (size_t i = 0; i < n; i += step) {
		size_t j = i + step < n ? i + step : n - 1;

		check_range(name, a, sub, all, pos[i], NULL, 3 * i, all->n);
		if (j > i)
			check_range(name, a, sub, all, pos[i], pos[j], 3 * i,
				    3 * j);
	}
}

static int rec_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct cells *c = ctx;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	size_t n = c->len[a] < c->len[b] ? c->len[a] : c->len[b];
	int r = memcmp(c->rec[a], c->rec[b], n);

	if (r)
		return r;
	return c->len[a] < c->len[b] ? -1 : c->len[a] > c->len[b];
}

static size_t *sorted_index(struct cells *c)
{
	size_t *idx = calloc(c->n ? c->n : 1, sizeof(*idx));

	cr_assert_not_null(idx);
	for (size_t i = 0; i < c->n; i++)
		idx[i] = i;
	qsort_r(idx, c->n, sizeof(*idx), rec_cmp, c);
	return idx;
}

static void same_multiset(const char *name, struct cells *x, struct cells *y)
{
	size_t *ix, *iy;

	cr_assert_eq(x->n, y->n, "%s: %zu cells stored, %zu sorted", name,
		     x->n, y->n);
	ix = sorted_index(x);
	iy = sorted_index(y);
	for (size_t i = 0; i < x->n; i++)
		cr_assert(x->len[ix[i]] == y->len[iy[i]] &&
				  memcmp(x->rec[ix[i]], y->rec[iy[i]],
					 x->len[ix[i]]) == 0,
			  "%s: cell %zu differs", name, i);
	free(ix);
	free(iy);
}

/* Field k of record r (the layout of batch_cells). */
static void field_of(const char *rec, size_t k, const char **p, size_t *len)
{
	size_t off = 0;

	for (size_t i = 0;; i++) {
		uint64_t n;

		memcpy(&n, rec + off + 1, sizeof(n));
		if (i == k) {
			*p = rec + off;
			*len = 1 + sizeof(n) + (size_t)n;
			return;
		}
		off += 1 + sizeof(n) + (size_t)n;
	}
}

/* The first half of every integer dimension's non-empty domain, the rest
 * whole: a selection that cuts through tiles. */
static bool half_domain(struct tfs_array *a, struct tfs_range *sub,
			int32_t (*store)[2])
{
	const struct tfs_schema *s = tfs_array_schema(a);
	bool cut = false;

	if (!tfs_array_non_empty_domain(a, sub))
		return false;
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		struct tfs_field_info f;
		int32_t lo, hi;

		tfs_schema_dim(s, k, &f);
		if (f.var || f.type != TFS_INT32)
			continue;
		memcpy(&lo, sub[k].lo, sizeof(lo));
		memcpy(&hi, sub[k].hi, sizeof(hi));
		if (hi <= lo)
			continue;
		store[k][0] = lo;
		store[k][1] = lo + (hi - lo) / 2;
		sub[k].lo = (const uint8_t *)&store[k][0];
		sub[k].hi = (const uint8_t *)&store[k][1];
		cut = true;
	}
	return cut;
}

static void check_array(const char *name, bool half)
{
	char path[2048];
	struct tfs_open_opts o = {.threads = 2};
	struct tfs_array *a;
	const struct tfs_schema *s;
	struct tfs_range sub[16];
	int32_t store[16][2];
	struct cells sorted = {0}, stored = {0}, small = {0}, one = {0};
	const char *fname[1];
	bool known, k2;
	uint64_t cells, c2;
	struct tfs_diag d;
	size_t nf;

	tfs_diag_init(&d);
	snprintf(path, sizeof(path), "%s/%s", CORPUS, name);
	cr_assert_eq(tfs_array_open(path, &o, &a, &d), TFS_E_OK, "%s: %s",
		     name, tfs_diag_msg(&d));
	s = tfs_array_schema(a);
	nf = (size_t)tfs_schema_dim_count(s) + tfs_schema_attr_count(s);
	cr_assert_leq(tfs_schema_dim_count(s), 16);
	if (half && !half_domain(a, sub, store)) {
		tfs_array_close(a);
		return;
	}
	read_all(a, half ? sub : NULL, NULL, 0, false, 0, &sorted, &k2, &c2);
	read_all(a, half ? sub : NULL, NULL, 0, true, 0, &stored, &known,
		 &cells);
	same_multiset(name, &stored, &sorted);
	for (size_t i = 0; i < stored.n; i++) {
		if (stored.len[i] != sorted.len[i] ||
		    memcmp(stored.rec[i], sorted.rec[i], stored.len[i])) {
			reordered++;
			break;
		}
	}
	cr_assert_eq(known, k2, "%s: known only in one order", name);
	if (known)
		cr_assert(cells == stored.n && c2 == stored.n,
			  "%s: %llu cells known, %zu read", name,
			  (unsigned long long)cells, stored.n);
	/* Small batches: the same cells in the same order. */
	read_all(a, half ? sub : NULL, NULL, 0, true, 3, &small, &known,
		 &cells);
	cr_assert_eq(small.n, stored.n);
	for (size_t i = 0; i < stored.n; i++)
		cr_assert(small.len[i] == stored.len[i] &&
				  !memcmp(small.rec[i], stored.rec[i],
					  stored.len[i]),
			  "%s: cell %zu moved with small batches", name, i);
	if (stored.n <= 3 * 4096)
		check_positions(name, a, half ? sub : NULL, &stored);
	/* Each field alone comes in the order of the whole cells. */
	for (size_t k = 0; k < nf; k++) {
		struct tfs_field_info f;

		tfs_schema_field(s, (uint32_t)k, &f);
		fname[0] = f.name;
		read_all(a, half ? sub : NULL, fname, 1, true, 0, &one, &known,
			 &cells);
		cr_assert_eq(one.n, stored.n, "%s.%s", name, f.name);
		for (size_t i = 0; i < stored.n; i++) {
			const char *p;
			size_t len;

			field_of(stored.rec[i], k, &p, &len);
			cr_assert(one.len[i] == len &&
					  !memcmp(one.rec[i], p, len),
				  "%s: field %s of cell %zu out of order",
				  name, f.name, i);
		}
		cells_free(&one);
	}
	cells_free(&sorted);
	cells_free(&stored);
	cells_free(&small);
	tfs_array_close(a);
}

/* The corpus arrays that open and are sparse. */
static void each_sparse(bool half)
{
	char path[2048], line[512];
	FILE *idx;
	unsigned seen = 0;

	snprintf(path, sizeof(path), "%s/INDEX.tsv", CORPUS);
	idx = fopen(path, "r");
	cr_assert_not_null(idx);
	while (fgets(line, sizeof(line), idx)) {
		char *tab = strchr(line, '\t');
		struct tfs_open_opts o = {.threads = 1};
		struct tfs_array *a;
		struct tfs_diag d;
		bool sparse;

		if (!tab)
			continue;
		*tab = '\0';
		snprintf(path, sizeof(path), "%s/%s", CORPUS, line);
		tfs_diag_init(&d);
		if (tfs_array_open(path, &o, &a, &d))
			continue; /* encrypted and friends need options */
		sparse = !tfs_schema_is_dense(tfs_array_schema(a));
		tfs_array_close(a);
		if (!sparse)
			continue;
		check_array(line, half);
		seen++;
	}
	fclose(idx);
	cr_assert_geq(seen, 5, "only %u sparse corpus arrays", seen);
	/* The view is not the sorted one under another name. */
	if (!half)
		cr_assert_geq(reordered, 1, "stored order is sorted everywhere");
	cr_assert_geq(positioned, 3, "only %u arrays read tile by tile",
		      positioned);
}

Test(sparse_stored, corpus_same_cells_as_sorted)
{
	each_sparse(false);
}

Test(sparse_stored, corpus_part_of_domain)
{
	each_sparse(true);
}

Test(sparse_stored, known_count_of_one_fragment)
{
	char path[1024];
	struct tfs_open_opts o = {.threads = 1};
	struct tfs_array *a;
	struct tfs_diag d;
	struct cells c = {0};
	bool known;
	uint64_t cells;

	tfs_diag_init(&d);
	snprintf(path, sizeof(path), "%s/sparse_2d_int", CORPUS);
	cr_assert_eq(tfs_array_open(path, &o, &a, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	read_all(a, NULL, NULL, 0, true, 0, &c, &known, &cells);
	{
		/* A position is refused by a sorted read. */
		struct tfs_query_opts qo = {.stored_from = {0, 1}};
		struct tfs_query *q;

		cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_INVALID);
	}
	if (tfs_array_fragment_count(a) == 1) {
		cr_assert(known);
		cr_assert_eq(cells, c.n);
	}
	cr_assert_gt(c.n, 0);
	cells_free(&c);
	tfs_array_close(a);
}
