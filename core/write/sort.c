/* External sort of the cells of one write into global order (format/
 * write.md §5 step 3). Cells collect in memory up to the budget; then they
 * are sorted (a stable merge sort of keyed entries) and spilled as a
 * run of blocks to a file in the spill folder. At the end, merge passes
 * over consecutive runs leave few enough runs for one merge to stay within
 * the budget; then the runs (or the one in-memory set) stream out merged,
 * equal coordinates checked on the way: refused naming both tags, or all
 * but the last appended dropped. */
#include "write_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"

/* Spill blocks and merge fan-in follow the memory budget: a merge holds
 * two blocks per run it reads. */
#define BLOCK_MAX ((uint64_t)1 << 20)
#define BLOCK_MIN ((uint64_t)16 << 10)
#define FANIN_MAX 64

struct ent;

struct run {
	char *path;
	uint64_t size; /* bytes in the file */
	uint64_t pos;  /* next block's offset */
	struct tfs__cells blk[2]; /* current block and the one before */
	int cur;
	uint64_t idx;  /* next cell of blk[cur] */
	bool done;
};

struct tfs__sorter {
	struct tfs__sort_opts o;
	struct tfs_vfs *posix;
	struct tfs__cells cells;
	struct ent *ents;
	uint64_t total;
	struct run *runs;
	size_t run_num;
	struct tfs__cells scratch;
	struct tfs_buf ser;
	uint64_t block;  /* bytes of cells per spilled block */
	size_t fanin;    /* runs merged at once */
	/* Streaming. */
	bool streaming;
	uint64_t pos; /* in-memory: next entry */
	size_t *heap;
	size_t heap_num;
	uint64_t dropped;
};

enum tfs_err tfs__sorter_new(const struct tfs__sort_opts *o,
			     struct tfs__sorter **out)
{
	struct tfs__sorter *s = tfs_callocn(1, sizeof(*s));
	enum tfs_err e;

	*out = NULL;
	if (!s)
		return TFS_E_NOMEM;
	s->o = *o;
	s->block = o->memory / 16;
	if (s->block > BLOCK_MAX)
		s->block = BLOCK_MAX;
	if (s->block < BLOCK_MIN)
		s->block = BLOCK_MIN;
	s->fanin = (size_t)(o->memory / (2 * s->block));
	if (s->fanin > FANIN_MAX)
		s->fanin = FANIN_MAX;
	if (s->fanin < 2)
		s->fanin = 2;
	tfs_buf_init(&s->ser, TFS_BUF_NO_MAX);
	if ((e = tfs__cells_init(&s->cells, o->field_num)) ||
	    (e = tfs__cells_init(&s->scratch, o->field_num))) {
		tfs__sorter_free(s);
		return e;
	}
	*out = s;
	return TFS_E_OK;
}

static void run_release(struct tfs__sorter *s, struct run *r)
{
	if (r->path && s->posix) {
		struct tfs_diag d;

		tfs_diag_init(&d);
		(void)tfs_vfs_remove(s->posix, r->path, &d);
	}
	tfs_free(r->path);
	tfs__cells_release(&r->blk[0]);
	tfs__cells_release(&r->blk[1]);
}

void tfs__sorter_free(struct tfs__sorter *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->run_num; i++)
		run_release(s, &s->runs[i]);
	tfs_free(s->runs);
	tfs__cells_release(&s->cells);
	tfs__cells_release(&s->scratch);
	tfs_buf_release(&s->ser);
	tfs_free(s->ents);
	tfs_free(s->heap);
	if (s->posix)
		tfs_vfs_free(s->posix);
	tfs_free(s);
}

struct tfs__cells *tfs__sorter_cells(struct tfs__sorter *s)
{
	return &s->cells;
}

uint64_t tfs__sorter_total(const struct tfs__sorter *s)
{
	return s->total + s->cells.cell_num;
}

uint64_t tfs__sorter_dropped(const struct tfs__sorter *s)
{
	return s->dropped;
}

/* Sort entries: the precomputed keys first (compared in place, so the
 * sort streams through memory), the cells themselves only on ties. */
struct ent {
	uint64_t k1, k2, idx;
};

static int ent_cmp(const struct tfs__order *o, const struct tfs__cells *c,
		   const struct ent *a, const struct ent *b)
{
	if (a->k1 != b->k1)
		return a->k1 < b->k1 ? -1 : 1;
	if (a->k2 != b->k2)
		return a->k2 < b->k2 ? -1 : 1;
	return tfs__order_cmp(o, c, a->idx, c, b->idx);
}

/* Stable bottom-up merge sort of the cells by global order; input that is
 * already in order (a dense box written in tile order) costs one pass. */
static enum tfs_err sort_perm(struct tfs__sorter *s)
{
	const struct tfs__cells *c = &s->cells;
	const struct tfs__order *o = s->o.order;
	uint64_t n = c->cell_num;
	struct ent *tmp, *a, *b;
	bool sorted = true;

	tfs_free(s->ents);
	s->ents = tfs_mallocn(n ? n : 1, sizeof(*s->ents));
	if (!s->ents)
		return TFS_E_NOMEM;
	for (uint64_t i = 0; i < n; i++) {
		s->ents[i].idx = i;
		s->ents[i].k1 = o->keyed ? tfs_get_u64(c->keys.data + i * 8) : 0;
		s->ents[i].k2 = o->key2 ? tfs__order_key2(o, c, i) : 0;
	}
	for (uint64_t i = 1; i < n && sorted; i++)
		if (ent_cmp(o, c, &s->ents[i - 1], &s->ents[i]) > 0)
			sorted = false;
	if (sorted)
		return TFS_E_OK;
	tmp = tfs_mallocn(n, sizeof(*tmp));
	if (!tmp)
		return TFS_E_NOMEM;
	a = s->ents;
	b = tmp;
	/* Insertion sort of runs of 16, then merges. */
	for (uint64_t lo = 0; lo < n; lo += 16) {
		uint64_t hi = lo + 16 < n ? lo + 16 : n;

		for (uint64_t i = lo + 1; i < hi; i++) {
			struct ent v = a[i];
			uint64_t j = i;

			while (j > lo && ent_cmp(o, c, &a[j - 1], &v) > 0) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = v;
		}
	}
	for (uint64_t w = 16; w < n; w *= 2) {
		for (uint64_t lo = 0; lo < n; lo += 2 * w) {
			uint64_t mid = lo + w < n ? lo + w : n;
			uint64_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			uint64_t i = lo, j = mid, k = lo;

			if (mid == hi || ent_cmp(o, c, &a[mid - 1], &a[mid]) <= 0) {
				memcpy(b + lo, a + lo, (hi - lo) * sizeof(*a));
				continue;
			}
			while (i < mid && j < hi)
				b[k++] = ent_cmp(o, c, &a[j], &a[i]) < 0 ? a[j++]
									 : a[i++];
			while (i < mid)
				b[k++] = a[i++];
			while (j < hi)
				b[k++] = a[j++];
		}
		struct ent *t = a;
		a = b;
		b = t;
	}
	if (a != s->ents) {
		memcpy(s->ents, a, n * sizeof(*a));
		tfs_free(a);
	} else {
		tfs_free(b);
	}
	return TFS_E_OK;
}

/* Block: u64 payload length, then u64 cells, per field u64 data length,
 * data, offsets (var), validity (nullable); u64 keys length, keys; tags. */
static enum tfs_err block_serialize(struct tfs__sorter *s,
				    const struct tfs__cells *c)
{
	struct tfs_buf *b = &s->ser;
	enum tfs_err e;

	b->len = 0;
	if ((e = tfs_buf_append_u64(b, 0)) ||
	    (e = tfs_buf_append_u64(b, c->cell_num)))
		return e;
	for (uint32_t f = 0; f < c->field_num; f++) {
		const struct tfs__col *col = &c->cols[f];

		if ((e = tfs_buf_append_u64(b, col->data.len)) ||
		    (e = tfs_buf_append(b, col->data.data, col->data.len)) ||
		    (e = tfs_buf_append(b, col->offs.data, col->offs.len)) ||
		    (e = tfs_buf_append(b, col->valid.data, col->valid.len)))
			return e;
	}
	if ((e = tfs_buf_append_u64(b, c->keys.len)) ||
	    (e = tfs_buf_append(b, c->keys.data, c->keys.len)) ||
	    (e = tfs_buf_append(b, c->tags.data, c->tags.len)))
		return e;
	tfs_put_u64(b->data, b->len - 8);
	return TFS_E_OK;
}

static enum tfs_err take(struct tfs_buf *dst, const uint8_t **p,
			 const uint8_t *end, uint64_t n)
{
	if ((uint64_t)(end - *p) < n)
		return TFS_E_CORRUPT;
	dst->len = 0;
	if (tfs_buf_append(dst, *p, (size_t)n))
		return TFS_E_NOMEM;
	*p += n;
	return TFS_E_OK;
}

static enum tfs_err block_parse(struct tfs__sorter *s, struct tfs__cells *c,
				const uint8_t *p, const uint8_t *end)
{
	uint64_t n, len;
	enum tfs_err e;

	tfs__cells_clear(c);
	if (end - p < 8)
		return TFS_E_CORRUPT;
	n = tfs_get_u64(p);
	p += 8;
	if (n > (uint64_t)(end - p))
		return TFS_E_CORRUPT;
	for (uint32_t f = 0; f < c->field_num; f++) {
		const struct tfs__field *fd = &s->o.fields[f];

		if (end - p < 8)
			return TFS_E_CORRUPT;
		len = tfs_get_u64(p);
		p += 8;
		if ((e = take(&c->cols[f].data, &p, end, len)) ||
		    (fd->var && (e = take(&c->cols[f].offs, &p, end, n * 8))) ||
		    (fd->nullable && (e = take(&c->cols[f].valid, &p, end, n))))
			return e;
	}
	if (end - p < 8)
		return TFS_E_CORRUPT;
	len = tfs_get_u64(p);
	p += 8;
	if ((e = take(&c->keys, &p, end, len)) ||
	    (e = take(&c->tags, &p, end, n * 8)))
		return e;
	c->cell_num = n;
	return TFS_E_OK;
}

/* A new, empty run file at the end of s->runs. */
static enum tfs_err new_run(struct tfs__sorter *s, struct run **out,
			    struct tfs_diag *d)
{
	struct run *r, *grown;
	char id[33], name[128];
	enum tfs_err e;

	if (!s->posix && (e = tfs_vfs_posix_new(&s->posix)))
		return tfs_fail(d, e, "spill: %s", tfs_strerror(e));
	grown = tfs_reallocn(s->runs, s->run_num + 1, sizeof(*s->runs));
	if (!grown)
		return tfs_fail(d, TFS_E_NOMEM, "spill: out of memory");
	s->runs = grown;
	r = &s->runs[s->run_num];
	memset(r, 0, sizeof(*r));
	if ((e = tfs_uuid_new(id)))
		return tfs_fail(d, e, "spill: no random bytes");
	snprintf(name, sizeof(name), "tfs-spill-%ld-%s.run", (long)getpid(), id);
	r->path = tfs_path_join(s->o.spill_dir, name);
	if (!r->path || tfs__cells_init(&r->blk[0], s->o.field_num) ||
	    tfs__cells_init(&r->blk[1], s->o.field_num)) {
		run_release(s, r);
		return tfs_fail(d, TFS_E_NOMEM, "spill: out of memory");
	}
	s->run_num++;
	*out = r;
	return TFS_E_OK;
}

/* Appends the scratch cells as one block of run r and empties them. */
static enum tfs_err flush_block(struct tfs__sorter *s, struct run *r,
				struct tfs_diag *d)
{
	enum tfs_err e;

	if (s->scratch.cell_num == 0)
		return TFS_E_OK;
	if ((e = block_serialize(s, &s->scratch)))
		return tfs_fail(d, e, "spill: out of memory");
	e = tfs_vfs_append(s->posix, r->path, s->ser.data, s->ser.len, d);
	if (e)
		return e;
	r->size += s->ser.len;
	tfs__cells_clear(&s->scratch);
	return TFS_E_OK;
}

static enum tfs_err spill(struct tfs__sorter *s, struct tfs_diag *d)
{
	struct run *r;
	enum tfs_err e;
	const struct tfs__cells *c = &s->cells;

	if ((e = sort_perm(s)))
		return tfs_fail(d, e, "sorting cells: %s", tfs_strerror(e));
	if ((e = new_run(s, &r, d)))
		return e;
	tfs__cells_clear(&s->scratch);
	for (uint64_t k = 0; k < c->cell_num; k++) {
		if ((e = tfs__cells_copy(&s->scratch, s->o.fields, c,
					 s->ents[k].idx)))
			return tfs_fail(d, e, "spill: out of memory");
		if (tfs__cells_bytes(&s->scratch) >= s->block &&
		    (e = flush_block(s, r, d)))
			return e;
	}
	if ((e = flush_block(s, r, d)))
		return e;
	s->total += c->cell_num;
	tfs__cells_clear(&s->cells);
	tfs_free(s->ents);
	s->ents = NULL;
	return TFS_E_OK;
}

enum tfs_err tfs__sorter_added(struct tfs__sorter *s, struct tfs_diag *d)
{
	/* The cells, and the sort entries they will need (two arrays). */
	if (tfs__cells_bytes(&s->cells) + 2 * sizeof(struct ent) * s->cells.cell_num <
	    s->o.memory)
		return TFS_E_OK;
	return spill(s, d);
}

static enum tfs_err run_load(struct tfs__sorter *s, struct run *r,
			     struct tfs_diag *d)
{
	uint8_t hdr[8];
	uint64_t len;
	enum tfs_err e;
	struct tfs_buf *b = &s->ser;

	for (;;) {
		if (r->pos >= r->size) {
			r->done = true;
			return TFS_E_OK;
		}
		if ((e = tfs_vfs_read(s->posix, r->path, r->pos, hdr, 8, d)))
			return e;
		len = tfs_get_u64(hdr);
		if (len > r->size - r->pos - 8)
			return tfs_fail(d, TFS_E_CORRUPT, "spill file '%s': bad block",
					r->path);
		if ((e = tfs_buf_setlen(b, (size_t)len)))
			return tfs_fail(d, e, "spill: out of memory");
		if ((e = tfs_vfs_read(s->posix, r->path, r->pos + 8, b->data,
				      (size_t)len, d)))
			return e;
		r->pos += 8 + len;
		r->cur ^= 1;
		if ((e = block_parse(s, &r->blk[r->cur], b->data, b->data + len)))
			return tfs_fail(d, e, "spill file '%s': bad block",
					r->path);
		r->idx = 0;
		if (r->blk[r->cur].cell_num)
			return TFS_E_OK;
	}
}

/* Heap of run indices by head cell, ties by run index (earlier runs hold
 * earlier appended cells, which keeps the merge stable). */
static bool heap_less(struct tfs__sorter *s, size_t x, size_t y)
{
	struct run *a = &s->runs[x], *b = &s->runs[y];
	int r = tfs__order_cmp(s->o.order, &a->blk[a->cur], a->idx,
			       &b->blk[b->cur], b->idx);

	return r < 0 || (r == 0 && x < y);
}

static void heap_down(struct tfs__sorter *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < s->heap_num && heap_less(s, s->heap[l], s->heap[m]))
			m = l;
		if (l + 1 < s->heap_num && heap_less(s, s->heap[l + 1], s->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		size_t t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

/* Loads the first block of runs [first, first + n) and heaps them. */
static enum tfs_err heap_start(struct tfs__sorter *s, size_t first, size_t n,
			       struct tfs_diag *d)
{
	enum tfs_err e;

	s->heap_num = 0;
	for (size_t i = first; i < first + n; i++) {
		struct run *r = &s->runs[i];

		r->pos = 0;
		r->done = false;
		if ((e = run_load(s, r, d)))
			return e;
		if (!r->done)
			s->heap[s->heap_num++] = i;
	}
	for (size_t i = s->heap_num / 2; i-- > 0;)
		heap_down(s, i);
	return TFS_E_OK;
}

/* Moves the run at the heap's top past its current cell: the next block
 * is loaded into the other buffer when this one is done (so that cell
 * stays valid), a finished run leaves the heap. */
static enum tfs_err advance_top(struct tfs__sorter *s, struct tfs_diag *d)
{
	struct run *r = &s->runs[s->heap[0]];
	enum tfs_err e;

	if (++r->idx >= r->blk[r->cur].cell_num) {
		if ((e = run_load(s, r, d)))
			return e;
		if (r->done)
			s->heap[0] = s->heap[--s->heap_num];
	}
	if (s->heap_num)
		heap_down(s, 0);
	return TFS_E_OK;
}

/* Merges runs [first, first + n) into one run that takes their place
 * (consecutive runs only, so equal cells keep their append order). */
static enum tfs_err merge_group(struct tfs__sorter *s, size_t first, size_t n,
				struct tfs_diag *d)
{
	struct run *out, merged;
	enum tfs_err e;

	if ((e = new_run(s, &out, d)) || (e = heap_start(s, first, n, d)))
		return e;
	out = &s->runs[s->run_num - 1];
	tfs__cells_clear(&s->scratch);
	while (s->heap_num) {
		struct run *r = &s->runs[s->heap[0]];

		if ((e = tfs__cells_copy(&s->scratch, s->o.fields,
					 &r->blk[r->cur], r->idx)))
			return tfs_fail(d, e, "spill: out of memory");
		if ((e = advance_top(s, d)))
			return e;
		if (tfs__cells_bytes(&s->scratch) >= s->block &&
		    (e = flush_block(s, out, d)))
			return e;
	}
	if ((e = flush_block(s, out, d)))
		return e;
	merged = *out;
	s->run_num--;
	for (size_t i = first; i < first + n; i++)
		run_release(s, &s->runs[i]);
	s->runs[first] = merged;
	memmove(&s->runs[first + 1], &s->runs[first + n],
		(s->run_num - first - n) * sizeof(*s->runs));
	s->run_num -= n - 1;
	return TFS_E_OK;
}

enum tfs_err tfs__sorter_rewind(struct tfs__sorter *s, struct tfs_diag *d)
{
	enum tfs_err e;

	s->dropped = 0;
	s->pos = 0;
	if (!s->streaming) {
		s->streaming = true;
		if (s->run_num == 0) {
			if ((e = sort_perm(s)))
				return tfs_fail(d, e, "sorting cells: %s",
						tfs_strerror(e));
			return TFS_E_OK;
		}
		if (s->cells.cell_num && (e = spill(s, d)))
			return e;
		tfs__cells_release(&s->cells);
		if ((e = tfs__cells_init(&s->cells, s->o.field_num)))
			return tfs_fail(d, e, "out of memory");
		s->heap = tfs_callocn(s->run_num + 1, sizeof(*s->heap));
		if (!s->heap)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		/* Merge passes until one merge reads few enough runs to stay
		 * within the memory budget. */
		for (size_t g = 0; s->run_num > s->fanin;) {
			size_t n = s->run_num - g < s->fanin ? s->run_num - g
							     : s->fanin;

			if (n < 2) {
				g = 0;
				continue;
			}
			if ((e = merge_group(s, g, n, d)))
				return e;
			g = g + 1 < s->run_num ? g + 1 : 0;
		}
	}
	if (s->run_num == 0)
		return TFS_E_OK;
	return heap_start(s, 0, s->run_num, d);
}

static enum tfs_err dup_fail(struct tfs__sorter *s, const struct tfs__cells *a,
			     uint64_t i, const struct tfs__cells *b, uint64_t j,
			     struct tfs_diag *d)
{
	char coords[160];
	const char *w = s->o.tag_word ? s->o.tag_word : "cell";

	tfs__coords_format(coords, sizeof(coords), s->o.order, b, j);
	return tfs_fail(d, TFS_E_INVALID,
			"duplicate coordinates %s: %s %" PRIu64 " and %s %" PRIu64,
			coords, w, tfs_get_u64(b->tags.data + j * 8), w,
			tfs_get_u64(a->tags.data + i * 8));
}

enum tfs_err tfs__sorter_next(struct tfs__sorter *s,
			      const struct tfs__cells **cells, uint64_t *i,
			      struct tfs_diag *d)
{
	enum tfs_err e;

	*cells = NULL;
	if (s->run_num == 0) {
		const struct tfs__cells *c = &s->cells;

		while (s->pos < c->cell_num) {
			const struct ent *ex = &s->ents[s->pos++];

			/* The gather is random access: fetch ahead. */
			if (s->pos + 16 < c->cell_num) {
				uint64_t ahead = s->ents[s->pos + 16].idx;

				for (uint32_t f = 0; f < c->field_num; f++) {
					const struct tfs__field *fd = &s->o.fields[f];

					if (fd->var)
						__builtin_prefetch(c->cols[f].offs.data +
								   8 * ahead);
					else
						__builtin_prefetch(c->cols[f].data.data +
								   fd->cell_size * ahead);
				}
			}
			const struct ent *ey = ex + 1;
			uint64_t x = ex->idx;

			if (s->o.check_dups && s->pos < c->cell_num &&
			    ex->k1 == ey->k1 && ex->k2 == ey->k2 &&
			    tfs__coords_equal(s->o.order, c, x, c, ey->idx)) {
				if (!s->o.dedup)
					return dup_fail(s, c, x, c, ey->idx, d);
				s->dropped++;
				continue;
			}
			*cells = c;
			*i = x;
			return TFS_E_OK;
		}
		return TFS_E_OK;
	}
	while (s->heap_num) {
		struct run *r = &s->runs[s->heap[0]];
		const struct tfs__cells *xc = &r->blk[r->cur];
		uint64_t xi = r->idx;

		if ((e = advance_top(s, d)))
			return e;
		if (s->o.check_dups && s->heap_num) {
			struct run *y = &s->runs[s->heap[0]];

			if (tfs__coords_equal(s->o.order, xc, xi,
					      &y->blk[y->cur], y->idx)) {
				if (!s->o.dedup)
					return dup_fail(s, xc, xi,
							&y->blk[y->cur],
							y->idx, d);
				s->dropped++;
				continue;
			}
		}
		*cells = xc;
		*i = xi;
		return TFS_E_OK;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__sorter_next_many(struct tfs__sorter *s,
				   const struct tfs__cells **cells,
				   uint64_t *idx, uint64_t max, uint64_t *n,
				   struct tfs_diag *d)
{
	const struct tfs__cells *c = &s->cells;
	enum tfs_err e;
	uint64_t i;

	*n = 0;
	*cells = NULL;
	if (s->run_num) {
		/* Merged runs: one cell at a time (their blocks change). */
		if ((e = tfs__sorter_next(s, cells, &i, d)))
			return e;
		if (*cells) {
			idx[0] = i;
			*n = 1;
		}
		return TFS_E_OK;
	}
	while (*n < max && s->pos < c->cell_num) {
		const struct ent *ex = &s->ents[s->pos++];
		const struct ent *ey = ex + 1;

		if (s->o.check_dups && s->pos < c->cell_num &&
		    ex->k1 == ey->k1 && ex->k2 == ey->k2 &&
		    tfs__coords_equal(s->o.order, c, ex->idx, c, ey->idx)) {
			if (!s->o.dedup)
				return dup_fail(s, c, ex->idx, c, ey->idx, d);
			s->dropped++;
			continue;
		}
		idx[(*n)++] = ex->idx;
	}
	if (*n)
		*cells = c;
	return TFS_E_OK;
}
