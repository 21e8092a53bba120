/* The bytes of virtual files (SPEC §4, §5).
 *
 * A slice file is planned once per open: the selection, the fields and
 * the format. Three ways to serve it:
 *  - random access: dense selections in a fixed-size format (raw and .npy
 *    of fixed-size fields, .validity) have an exact size known without
 *    decoding. A read at any offset maps to the cells it covers, those to
 *    at most 2n-1 boxes of the selection (n dimensions), and each box to
 *    one query, so a read costs the tiles it touches. The next window is
 *    prefetched into the tile cache while the reader consumes this one;
 *  - whole: small files (documents, small selections) are rendered at
 *    the first stat or open and kept in a small cache with their exact
 *    size;
 *  - stream: everything else is produced front to back.
 *    Its exact size comes from a counting pass at the first stat (the
 *    cells rendered and dropped, numeric text counted without being
 *    written, in two parts on two threads: dense selections by halves,
 *    sparse ones of a numeric first coordinate by halves of its range),
 *    remembered per array version with an index of where the text of
 *    each step's cells begins (dense) or of marks where the first
 *    coordinate changes, one per TFSR_MARK_CELLS cells or so (sparse
 *    text, raw and .npy; not stored order), so that a read at any offset
 *    starts at the mark before it. A file opened once its index is known
 *    is read in parts between marks, produced on the pool ahead of the
 *    reader (AHEAD_PARTS) while it copies the part before; what the
 *    parts share (a .npy header) is built first (tfsr_slice_prepare).
 *    The pass keeps no cells: its memory is one step's output and an
 *    index of at most MARKS_MAX marks.
 *    Every stream is counted, however large: the pass stops between
 *    steps when its caller goes away (a FUSE interrupt, the daemon
 *    stopping), so a lookup that takes long can always be killed. Such
 *    files (neither small nor of a size known without rendering) are left
 *    out of listings (tfsd_slice_listable) but open by name. A stream
 *    whose size the kernel was given goes through the page cache (mmap
 *    works); one whose size was forgotten since (SIZE_ENTRIES) with
 *    direct I/O.
 * Dense cells are produced by index (row-major over the selection), so a
 * stream needs no long-lived query; sparse cells come from one query.
 * When a vacuum removes fragments that a file still reads, the file goes
 * on with the array opened again at its own time, if that shows the same
 * cells (tfsd_arrays_reopen); a stream first produces itself again up to
 * where it was, comparing the bytes it still holds.
 * The counting pass and whole renderings are in render_work.c; the cache
 * of rendered files, sizes and indexes in render_cache.c. */
#include "tfsd.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "render_cache.h"
#include "render_work.h"
#include "slice.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_bytes.h"
#include "tfs_log.h"
#include "tfs_mem.h"
#include "tfs_reuse.h"

/* Output a random-access file produces at least per miss, kept for the
 * reads that follow (the kernel reads 128 KiB to 1 MiB at a time); a
 * smaller memory budget gets smaller windows (window_bytes). */
#define WINDOW_BYTES ((uint64_t)4 << 20)
#define WINDOW_BYTES_MIN ((uint64_t)1 << 20)
/* A stream keeps this much behind the last read for slightly reordered
 * reads before it drops the bytes. */
#define KEEP_BEHIND ((size_t)4 << 20)
/* A read further than this past a stream's end starts the stream again
 * at the index's mark for it, if the file has an index. */
#define SEEK_AHEAD ((uint64_t)4 << 20)

/* ---- Plans ------------------------------------------------------------- */


static void plan_release(struct tfsd *fs, struct plan *p)
{
	tfsd_arr_put(fs->arrays, p->arr);
	tfsr_slice_free(p->sl);
	tfs_where_free(p->where);
	tfs_free(p->rel);
	memset(p, 0, sizeof(*p));
}

/* Read-ahead of a slice of the plan's own array (the hook of slice.h). */
static void plan_prefetch(void *ctx, const struct tfs_range *sub,
			  const char *const *names, size_t name_num)
{
	const struct plan *p = ctx;

	tfsd_prefetch_submit(p->fs->prefetch, p->arr, sub, names, name_num);
}

static enum tfs_err plan_open(struct tfsd *fs, const struct tfsd_node *n,
			      struct plan *p, struct tfs_diag *d)
{
	struct tfsr_slice_opts o = {
		.field = n->field, .fmt = n->fmt, .sel = n->sel,
		.sel_len = n->sel_len,
		.ned = n->arr->has_ned ? n->arr->ned : NULL,
		.max_cells = fs->cfg.max_cells,
		.prefetch = fs->prefetch ? plan_prefetch : NULL, .prefetch_ctx = p,
		.pool = fs->pool};
	enum tfs_err e;

	memset(p, 0, sizeof(*p));
	p->fs = fs;
	p->arr = n->arr;
	tfsd_arr_get(fs->arrays, n->arr);
	p->rel = tfs_strdup(n->rel ? n->rel : "");
	if (!p->rel) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto fail;
	}
	if (n->where) {
		e = tfsr_where_parse(n->arr->schema, n->arr->a, n->where,
				     n->where_len, &p->where, NULL, d);
		if (e)
			goto fail;
		o.where = p->where;
	}
	e = tfsr_slice_open(n->arr->a, &o, &p->sl, d);
	if (e)
		goto fail;
	return TFS_E_OK;
fail:
	plan_release(fs, p);
	return e;
}

/* ---- Files ---------------------------------------------------------------- */

/* Parts of an indexed stream produced ahead of the reader at most (on
 * the pool, while the reader copies the one before), and the size of a
 * part above which the file is streamed instead. */
#define AHEAD_PARTS 3
#define PART_MAX ((uint64_t)8 << 20)

struct part;

enum serve { SERVE_WHOLE, SERVE_RANDOM, SERVE_STREAM };

/* Reopenings after vacuums that one read tries (a vacuum still running
 * may remove more under the first). */
#define VANISH_RETRIES 4

struct tfsd_file {
	enum serve how;
	bool direct;
	uint8_t *data; /* SERVE_WHOLE */
	uint64_t size;
	uint64_t charged; /* SERVE_WHOLE: bytes of data in fs->render_bytes */
	struct plan plan;
	uint64_t last_end; /* SERVE_RANDOM: end of the last read (atomic) */
	pthread_mutex_t lock;
	/* The handle reads use: plan.arr until a vacuum removes fragments
	 * under it, then a new opening of the same view; a reference,
	 * protected by lock. */
	struct tfsd_arr *src;
	/* SERVE_RANDOM: the cells [win_c0, win_c1) produced last, as bytes;
	 * protected by lock. */
	struct tfs_buf win;
	uint64_t win_c0, win_c1;
	uint64_t win_charged; /* bytes of win in the memory accountant */
	struct tfsr_stream st; /* SERVE_STREAM, protected by lock */
	char *vpath;
	bool size_learned; /* protected by lock */
	/* SERVE_STREAM of a file whose index was known at open: its marks
	 * (a copy) and the parts between them in flight, ring[0] the
	 * first; protected by lock. parts_on: reads go through the parts. */
	bool parts_on;
	struct tfsr_mark *marks;
	size_t mark_num;
	struct part *ring[AHEAD_PARTS + 1];
	size_t ring_num;
	uint64_t part_cells; /* cells the parts produced, atomic */
};

static bool plan_small(const struct tfsd *fs, const struct plan *p)
{
	uint64_t cells = p->sl->dense ? p->sl->cells : p->arr->sparse_cells;
	uint64_t weighted;

	return !__builtin_mul_overflow(cells, (uint64_t)p->sl->nfields,
				       &weighted) &&
	       weighted <= fs->cfg.whole_max_cells;
}

static bool is_doc(const struct tfsd_node *n)
{
	return n->file != TFSD_F_SLICE;
}

/* A document rendered into out, through the render cache for those that
 * cost more than reading the array's metadata (previews). */
static enum tfs_err doc_render_cached(struct tfsd *fs,
				      const struct tfsd_node *n,
				      const char *vpath, struct tfs_buf *out,
				      struct tfs_diag *d)
{
	uint8_t *data;
	uint64_t size;
	enum tfs_err e;

	if (n->file != TFSD_F_PREVIEW)
		return tfsd_doc_render(fs, n, out, d);
	if (tfsd_renders_find(fs->renders, n->arr->gen, vpath, &data, &size) &&
	    data) {
		e = tfs_buf_append(out, data, (size_t)size);
		tfs_free(data);
		return e ? tfs_fail(d, e, "out of memory") : e;
	}
	tfs_free(data);
	e = tfsd_doc_render(fs, n, out, d);
	if (!e)
		tfsd_renders_put(fs->renders, n->arr->gen, vpath, out->data,
				 out->len);
	return e;
}

/* Pictures are rendered whole at the first stat or open: viewers and
 * thumbnailers need their exact size. */
static bool plan_whole(const struct tfsd *fs, const struct plan *p)
{
	return (p->sl->r->flags & TFSR_R_IMAGE) || plan_small(fs, p);
}

/* Whether the plan's exact size is known without rendering. */
static bool plan_known_size(const struct plan *p)
{
	return p->sl->dense && p->sl->r->size_kind != TFSR_SIZE_RENDERED &&
	       (p->sl->fixed || p->sl->r->size_kind == TFSR_SIZE_COUNTED);
}

bool tfsd_slice_listable(struct tfsd *fs, struct tfsd_arr *arr, int field,
			 enum tfsr_format fmt, const char *sel, size_t sel_len)
{
	struct tfsd_node n = {.kind = TFSD_N_FILE, .file = TFSD_F_SLICE,
			      .arr = arr, .field = field, .fmt = fmt,
			      .sel = (char *)sel, .sel_len = sel_len};
	struct tfs_diag d;
	struct plan p;
	uint64_t size;
	bool listable;

	tfs_diag_init(&d);
	if (plan_open(fs, &n, &p, &d))
		return false;
	listable = plan_whole(fs, &p) ||
		   (plan_known_size(&p) && tfsr_slice_known_size(p.sl, &size) &&
		    size <= (uint64_t)INT64_MAX);
	plan_release(fs, &p);
	return listable;
}

enum tfs_err tfsd_file_size(struct tfsd *fs, const struct tfsd_node *n,
			    const char *vpath, struct tfsd_size *out,
			    struct tfs_diag *d)
{
	struct plan p;
	struct tfs_buf buf;
	uint64_t charged = 0;
	uint8_t *data;
	enum tfs_err e;

	*out = (struct tfsd_size){0, false};
	tfs_buf_init(&buf, TFS_BUF_NO_MAX);
	if (is_doc(n)) {
		e = doc_render_cached(fs, n, vpath, &buf, d);
		out->size = buf.len;
		out->exact = true;
		tfs_buf_release(&buf);
		return e;
	}
	if (tfsd_renders_find(fs->renders, n->arr->gen, vpath, &data,
			      &out->size)) {
		tfs_free(data);
		out->exact = true;
		return TFS_E_OK;
	}
	if (tfsd_sizes_find(fs->renders, n->arr->gen, vpath, &out->size)) {
		out->exact = true;
		return TFS_E_OK;
	}
	e = plan_open(fs, n, &p, d);
	if (e)
		return e;
	if (plan_known_size(&p)) {
		out->exact = tfsr_slice_known_size(p.sl, &out->size);
		/* No file holds 2^63 bytes or more (off_t): refused with a
		 * reason, rather than a size the kernel turns into EIO. */
		if (!out->exact || out->size > (uint64_t)INT64_MAX) {
			e = tfs_fail(d, TFS_E_TOO_BIG,
				     "'%s': selection of %" PRIu64 " cells is "
				     "2^63 bytes or more, more than a file "
				     "can hold",
				     vpath, p.sl->cells);
			*out = (struct tfsd_size){0, false};
		}
	} else if (plan_whole(fs, &p)) {
		e = tfsd__render_whole(&p, &buf, &charged, d);
		if (!e) {
			tfsd_renders_put(fs->renders, n->arr->gen, vpath,
					 buf.data, buf.len);
			out->size = buf.len;
			out->exact = true;
		}
	} else if (tfsr_slice_sparse_size(p.sl, &out->size)) {
		/* Sparse raw of a cell count fragment metadata gives. */
		out->exact = true;
	} else {
		struct tfsr_mark *marks;
		size_t mark_num;

		e = tfsd__count_plan(&p, &out->size, &marks, &mark_num, d);
		if (!e) {
			tfsd_sizes_put(fs->renders, n->arr->gen, vpath,
				       out->size, marks, mark_num);
			out->exact = true;
		}
	}
	tfs_buf_release(&buf);
	tfsd__uncharge(fs, charged);
	plan_release(fs, &p);
	return e;
}

/* Serves f whole from data (which it takes), counted in the renderings
 * in flight while f is open (charged: bytes of it counted already). */
static enum tfs_err file_whole(struct tfsd *fs, struct tfsd_file *f,
			       struct tfs_buf *data, uint64_t charged,
			       struct tfs_diag *d)
{
	uint64_t need = data->cap > charged ? data->cap - charged : 0;
	enum tfs_err e;

	f->how = SERVE_WHOLE;
	f->charged = charged;
	e = tfsd__charge(fs, need, NULL);
	if (e)
		return tfs_fail(d, e, "'%s': %zu bytes rendered whole would go "
				"over %s=%" PRIu64 " (%" PRIu64
				" bytes in flight)", f->vpath, data->len,
				fs->cfg.max_memory ? "max_memory" : "cache",
				fs->cfg.max_memory ? fs->cfg.max_memory
						   : fs->cfg.cache_bytes,
				__atomic_load_n(&fs->render_bytes,
						__ATOMIC_RELAXED));
	f->charged += need;
	f->size = data->len;
	f->data = tfs_buf_detach(data, NULL);
	return TFS_E_OK;
}

/* ---- Indexed streams read ahead in parts ---------------------------------- */

/* Part `index` of an indexed stream: the bytes from mark index - 1 (or
 * the start) to mark index (or the end), produced on the pool by a
 * stream of its own. */
struct part {
	struct tfs_job job;
	struct tfsd *fs;
	struct tfsd_file *f;
	struct tfsd_arr *src; /* a reference */
	size_t index;
	bool queued; /* submitted, not yet waited for */
	bool cancel; /* atomic: dropped before it ran, nothing to produce */
	struct tfs_buf out;
	uint64_t charged;
	enum tfs_err e;
	struct tfs_diag d;
};

static uint64_t part_start(const struct tfsd_file *f, size_t i)
{
	return i ? f->marks[i - 1].off : 0;
}

static uint64_t part_end(const struct tfsd_file *f, size_t i)
{
	return i < f->mark_num ? f->marks[i].off : f->size;
}

/* The part that holds byte off (< f->size): the number of marks at or
 * before it. */
static size_t part_of(const struct tfsd_file *f, uint64_t off)
{
	size_t lo = 0, hi = f->mark_num;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->marks[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void part_run(void *arg)
{
	struct part *pt = arg;
	struct tfsd_file *f = pt->f;
	size_t i = pt->index;
	uint64_t want = part_end(f, i) - part_start(f, i);
	struct tfsr_stream st;
	enum tfs_err e;

	if (__atomic_load_n(&pt->cancel, __ATOMIC_ACQUIRE)) {
		pt->e = TFS_E_INTR;
		return;
	}
	tfsr_stream_init(&st, f->plan.sl, pt->src->a);
	st.pool = NULL; /* parts run side by side */
	/* The part's bytes are counted before they are rendered: parts in
	 * flight wait for room (and the sparse pieces under them too)
	 * rather than go over the budget together. */
	e = tfsd__charge(pt->fs, want, &pt->d);
	if (!e) {
		pt->charged = want;
		e = tfsr_stream_start_part(&st, i ? &f->marks[i - 1] : NULL,
					   i < f->mark_num ? &f->marks[i] : NULL,
					   &pt->d);
	}
	while (!e && !st.done)
		e = tfsr_stream_step(&st, &pt->d);
	if (!e && st.out.len != want)
		e = tfs_fail(&pt->d, TFS_E_INTERNAL,
			     "'%s': part %zu gave %zu bytes, its index says "
			     "%" PRIu64, f->vpath, i, st.out.len, want);
	if (!e) {
		pt->out = st.out;
		tfs_buf_init(&st.out, TFS_BUF_NO_MAX);
		/* The buffer's slack past the part's bytes. */
		if (pt->out.cap > pt->charged) {
			e = tfsd__charge(pt->fs, pt->out.cap - pt->charged,
					 &pt->d);
			if (!e)
				pt->charged = pt->out.cap;
		}
		__atomic_add_fetch(&f->part_cells, st.em.count - st.first_cell,
				   __ATOMIC_RELAXED);
	}
	tfsr_stream_release(&st);
	if (e == TFS_E_NOMEM && !pt->d.code)
		tfs_fail(&pt->d, e, "out of memory");
	pt->e = e;
}

static void part_free(struct tfsd *fs, struct part *pt)
{
	__atomic_store_n(&pt->cancel, true, __ATOMIC_RELEASE);
	if (pt->queued)
		tfs_job_wait(fs->pool, &pt->job);
	tfsd__uncharge(fs, pt->charged);
	tfs_buf_release(&pt->out);
	tfsd_arr_put(fs->arrays, pt->src);
	tfs_free(pt);
}

/* Queues part i at the end of the ring (the caller holds f->lock). */
static enum tfs_err part_submit(struct tfsd *fs, struct tfsd_file *f, size_t i)
{
	struct part *pt = tfs_callocn(1, sizeof(*pt));

	if (!pt)
		return TFS_E_NOMEM;
	pt->fs = fs;
	pt->f = f;
	pt->src = f->src;
	tfsd_arr_get(fs->arrays, pt->src);
	pt->index = i;
	tfs_buf_init(&pt->out, TFS_BUF_NO_MAX);
	tfs_diag_init(&pt->d);
	tfs_job_init(&pt->job, part_run, pt);
	pt->queued = true;
	tfs_pool_submit(fs->pool, &pt->job);
	f->ring[f->ring_num++] = pt;
	return TFS_E_OK;
}

/* Drops the first k parts of the ring (the caller holds f->lock). */
static void ring_drop(struct tfsd *fs, struct tfsd_file *f, size_t k)
{
	for (size_t j = 0; j < k; j++)
		part_free(fs, f->ring[j]);
	memmove(f->ring, f->ring + k, (f->ring_num - k) * sizeof(f->ring[0]));
	f->ring_num -= k;
}

/* Reads through parts when the file's index is known now: with a pool
 * to produce them ahead and no part too large to hold. */
static void parts_plan(struct tfsd *fs, struct tfsd_file *f, uint64_t gen)
{
	struct tfs_diag d;
	bool ok = true;

	if (!tfsr_slice_seekable(f->plan.sl) || !fs->pool ||
	    !tfs_pool_threads(fs->pool) ||
	    !tfsd_sizes_copy(fs->renders, gen, f->vpath, &f->marks,
			     &f->mark_num, &f->size))
		return;
	for (size_t i = 0; ok && i <= f->mark_num; i++)
		ok = part_end(f, i) >= part_start(f, i) &&
		     part_end(f, i) - part_start(f, i) <= PART_MAX;
	/* The parts run side by side on the pool: what their streams share
	 * (a .npy header) is built first, here. */
	tfs_diag_init(&d);
	if (ok && tfsr_slice_prepare(f->plan.sl, f->src->a, &d)) {
		tfs_log(TFS_LOG_INFO, "'/%s': streaming from the start (%s)",
			f->vpath, tfs_diag_msg(&d));
		ok = false;
	}
	if (!ok) {
		tfs_free(f->marks);
		f->marks = NULL;
		f->mark_num = 0;
		return;
	}
	f->parts_on = true;
}

/* The part that holds off, the one before it kept for slightly reordered
 * reads, and those after it queued (the caller holds f->lock). */
static enum tfs_err parts_at(struct tfsd *fs, struct tfsd_file *f,
			     uint64_t off, struct part **out)
{
	size_t i = part_of(f, off), k = 0, next;
	enum tfs_err e = TFS_E_OK;

	while (k < f->ring_num && f->ring[k]->index + 1 < i)
		k++;
	ring_drop(fs, f, k);
	if (f->ring_num && f->ring[0]->index > i)
		ring_drop(fs, f, f->ring_num);
	next = f->ring_num ? f->ring[f->ring_num - 1]->index + 1 : i;
	while (!e && next <= f->mark_num && f->ring_num < AHEAD_PARTS + 1 &&
	       next < i + AHEAD_PARTS)
		e = part_submit(fs, f, next++);
	for (k = 0; k < f->ring_num; k++) {
		struct part *pt = f->ring[k];

		if (pt->index != i)
			continue;
		if (pt->queued) {
			tfs_job_wait(fs->pool, &pt->job);
			pt->queued = false;
		}
		*out = pt;
		return pt->e;
	}
	return e ? e : TFS_E_INTERNAL;
}

/* Whether the marks of f's index hold for the array f reads (the caller
 * holds f->lock): always, but for positions in stored order, which are
 * those of the opening the index was found on; a new opening after a
 * vacuum may store the same cells in other tiles. */
static bool marks_hold(const struct tfsd_file *f)
{
	return !f->plan.sl->stored_index || f->src == f->plan.arr;
}

/* A read of an indexed stream through its parts. On a failure the file
 * goes on as a plain stream (*fallback), which starts again at the
 * index's mark and knows how to go on after a vacuum. */
static enum tfs_err read_parts(struct tfsd *fs, struct tfsd_file *f,
			       uint64_t off, uint8_t *dst, size_t len,
			       size_t *got, bool *fallback)
{
	size_t n = 0;
	enum tfs_err e = TFS_E_OK;

	*got = 0;
	*fallback = false;
	pthread_mutex_lock(&f->lock);
	if (!f->parts_on || !marks_hold(f)) {
		pthread_mutex_unlock(&f->lock);
		*fallback = true;
		return TFS_E_OK;
	}
	while (n < len && off + n < f->size) {
		uint64_t at = off + n, start, take;
		struct part *pt = NULL;

		e = parts_at(fs, f, at, &pt);
		if (e) {
			if (pt)
				tfs_log(TFS_LOG_INFO, "'/%s': %s; streaming "
					"instead", f->vpath,
					tfs_diag_msg(&pt->d));
			f->parts_on = false;
			ring_drop(fs, f, f->ring_num);
			*fallback = true;
			break;
		}
		start = part_start(f, pt->index);
		take = part_end(f, pt->index) - at;
		if (take > len - n)
			take = len - n;
		memcpy(dst + n, pt->out.data + (at - start), (size_t)take);
		n += (size_t)take;
	}
	pthread_mutex_unlock(&f->lock);
	*got = *fallback ? 0 : n;
	return TFS_E_OK;
}

/* Serves f as a stream, through parts when its index is known. Through
 * the page cache when the size that the lookup gave the kernel is known
 * (counted at that stat, or a dense slice of a counted size: .offsets),
 * so that mmap works; else (not counted: the kernel holds size 0, or
 * forgotten since) direct I/O, the size not being one the page cache may
 * trust. */
static void file_stream(struct tfsd *fs, struct tfsd_file *f, uint64_t gen)
{
	uint64_t size;

	/* Sparse raw selections whose cell count fragment metadata gives
	 * have an exact size from the start, as dense ones of a counted
	 * size (.offsets) do; so does a stream counted at its lookup: all
	 * of them through the page cache. */
	f->how = SERVE_STREAM;
	f->direct = (f->plan.sl->dense
			     ? f->plan.sl->r->size_kind != TFSR_SIZE_COUNTED
			     : !tfsr_slice_sparse_size(f->plan.sl, &size)) &&
		    !tfsd_sizes_find(fs->renders, gen, f->vpath, &size);
	tfsr_stream_init(&f->st, f->plan.sl, f->src->a);
	parts_plan(fs, f, gen);
}

enum tfs_err tfsd_file_open(struct tfsd *fs, const struct tfsd_node *n,
			    const char *vpath, struct tfsd_file **out,
			    struct tfs_diag *d)
{
	struct tfsd_file *f = tfs_callocn(1, sizeof(*f));
	struct tfs_buf buf;
	uint64_t charged = 0, size = 0;
	uint8_t *data;
	enum tfs_err e;

	*out = NULL;
	if (!f)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	pthread_mutex_init(&f->lock, NULL);
	tfs_buf_init(&f->win, TFS_BUF_NO_MAX);
	tfs_buf_init(&buf, TFS_BUF_NO_MAX);
	f->vpath = tfs_strdup(vpath);
	if (!f->vpath) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto fail;
	}
	if (is_doc(n)) {
		e = doc_render_cached(fs, n, vpath, &buf, d);
		if (!e)
			e = file_whole(fs, f, &buf, 0, d);
		if (e)
			goto fail;
		*out = f;
		return TFS_E_OK;
	}
	if (tfsd_renders_find(fs->renders, n->arr->gen, vpath, &data, &size) &&
	    data) {
		buf.data = data;
		buf.len = buf.cap = (size_t)size;
		e = file_whole(fs, f, &buf, 0, d);
		if (e)
			goto fail;
		*out = f;
		return TFS_E_OK;
	}
	e = plan_open(fs, n, &f->plan, d);
	if (e)
		goto fail;
	f->src = f->plan.arr;
	tfsd_arr_get(fs->arrays, f->src);
	if (f->plan.sl->dense && f->plan.sl->fixed) {
		if (!tfsr_slice_known_size(f->plan.sl, &f->size)) {
			e = tfs_fail(d, TFS_E_TOO_BIG, "'%s': too large", vpath);
			goto fail;
		}
		f->how = SERVE_RANDOM;
	} else if (plan_whole(fs, &f->plan)) {
		e = tfsd__render_whole(&f->plan, &buf, &charged, d);
		if (!e) {
			tfsd_renders_put(fs->renders, n->arr->gen, vpath,
					 buf.data, buf.len);
			e = file_whole(fs, f, &buf, charged, d);
			charged = 0;
		}
		if (e)
			goto fail;
	} else {
		file_stream(fs, f, n->arr->gen);
	}
	tfs_buf_release(&buf);
	*out = f;
	return TFS_E_OK;
fail:
	tfs_buf_release(&buf);
	tfsd__uncharge(fs, charged);
	tfsd_file_close(fs, f);
	return e;
}

bool tfsd_file_direct(const struct tfsd_file *f)
{
	return f->direct;
}

uint64_t tfsd_file_stream_cells(struct tfsd_file *f)
{
	uint64_t n = 0;

	pthread_mutex_lock(&f->lock);
	if (f->how == SERVE_STREAM)
		n = f->st.em.count - f->st.first_cell +
		    __atomic_load_n(&f->part_cells, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* After a read of f on src met a missing file (e, d): *fresh (a
 * reference) is a new opening of the view at the same time when a vacuum
 * removed fragments of it and the new opening shows the same cells
 * (tfsd_arrays_reopen), and the result TFS_E_OK. Else the failure
 * stands: e and d as they were when nothing vanished (damage), or why
 * the view cannot be shown again. */
static enum tfs_err view_reopen(struct tfsd *fs, const struct tfsd_file *f,
				struct tfsd_arr *src, struct tfsd_arr **fresh,
				enum tfs_err e, struct tfs_diag *d)
{
	struct tfs_diag rd;
	enum tfs_err re;

	*fresh = NULL;
	if (e != TFS_E_CORRUPT)
		return e;
	tfs_diag_init(&rd);
	re = tfsd_arrays_reopen(fs->arrays, f->plan.rel, src, fresh, &rd);
	if (!re && !*fresh)
		return e;
	tfs_diag_init(d);
	if (re)
		*d = rd;
	return re;
}

/* Spare windows and reply buffers (tfs_reuse.h): a sequential reader
 * takes a window of the same size after another, and a reply buffer
 * per read (a list each: replies are many and small). */
#define SPARE_WINDOW_BYTES (UINT64_C(12) << 20)
#define SPARE_REPLY_BYTES (UINT64_C(8) << 20)

static struct tfs_reuse *spare_windows, *spare_replies;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_init(void)
{
	spare_windows = tfs_reuse_new(SPARE_WINDOW_BYTES);
	tfs_reuse_huge(spare_windows);
	spare_replies = tfs_reuse_new(SPARE_REPLY_BYTES);
}

static struct tfs_reuse *spares(void)
{
	pthread_once(&spare_once, spare_init);
	return spare_windows;
}

void *tfsd_spare_take(size_t n, size_t *cap)
{
	pthread_once(&spare_once, spare_init);
	return tfs_reuse_take(spare_replies, n, cap);
}

void tfsd_spare_give(void *p, size_t cap)
{
	pthread_once(&spare_once, spare_init);
	tfs_reuse_give(spare_replies, p, cap);
}

/* Gives b's buffer back to the spares and empties b. */
static void window_release(struct tfs_buf *b)
{
	tfs_reuse_give(spares(), b->data, b->cap);
	tfs_buf_init(b, b->max);
}

/* Copies the body bytes [body_off, body_end) out of the window, if it
 * holds them (the caller holds f->lock). */
static bool window_copy(struct tfsd_file *f, uint64_t body_off,
			uint64_t body_end, uint8_t *dst)
{
	uint64_t rec = f->plan.sl->record;
	uint64_t w0 = f->win_c0 * rec, w1 = f->win_c1 * rec;

	if (!f->win.len || body_off < w0 || body_end > w1)
		return false;
	memcpy(dst, f->win.data + (body_off - w0), (size_t)(body_end - body_off));
	return true;
}

/* The cells [c0, c1) of a random-access file as bytes into buf, on src;
 * after a vacuum, on a new opening of the same view. */
static enum tfs_err window_produce(struct tfsd *fs, struct tfsd_file *f,
				   struct tfsd_arr **src, uint64_t c0,
				   uint64_t c1, struct tfs_buf *buf,
				   struct tfs_diag *d)
{
	const struct tfsr_slice *p = f->plan.sl;
	struct tfsd_arr *fresh, *drop = NULL;
	enum tfs_err e = TFS_E_OK;

	for (int i = 0; i <= VANISH_RETRIES; i++) {
		struct tfsr_emit em = {.sl = f->plan.sl, .src = (*src)->a,
				       .out = buf};

		buf->len = 0;
		e = tfs_buf_reserve(buf, (size_t)((c1 - c0) * p->record));
		if (!e)
			e = tfsr_emit_dense_range(&em, c0, c1, d);
		if (!e && buf->len != (c1 - c0) * p->record)
			e = tfs_fail(d, TFS_E_INTERNAL,
				     "'%s': produced %zu bytes for %" PRIu64
				     " cells", f->vpath, buf->len, c1 - c0);
		if (!e || i == VANISH_RETRIES)
			break;
		e = view_reopen(fs, f, *src, &fresh, e, d);
		if (e)
			break;
		/* Later reads start on it too, unless another thread's
		 * reopening got there first. */
		pthread_mutex_lock(&f->lock);
		if (f->src == *src) {
			drop = f->src;
			f->src = fresh;
			tfsd_arr_get(fs->arrays, fresh);
		}
		pthread_mutex_unlock(&f->lock);
		tfsd_arr_put(fs->arrays, drop);
		tfsd_arr_put(fs->arrays, *src);
		*src = fresh;
		drop = NULL;
	}
	return e;
}

/* A buffer for a window of wbytes, counted before it is produced
 * (waiting for room like a tile). */
static enum tfs_err window_alloc(uint64_t wbytes, struct tfs_buf *buf,
				 struct tfs_diag *d)
{
	tfs_buf_init(buf, TFS_BUF_NO_MAX);
	if (tfs_mem_charge(tfs_mem_global(), wbytes))
		return tfs_fail(d, TFS_E_NOMEM, "a window of %" PRIu64
				" bytes: no room within the memory budget of "
				"%" PRIu64, wbytes,
				tfs_mem_budget(tfs_mem_global()));
	buf->data = tfs_reuse_take(spares(), (size_t)wbytes, &buf->cap);
	if (!buf->data) {
		tfs_mem_uncharge(tfs_mem_global(), wbytes);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	return TFS_E_OK;
}

/* Makes buf (cells [c0, c1), wbytes counted) f's window, counting what it
 * grew past them; the old window goes. */
static void window_keep(struct tfsd_file *f, struct tfs_buf *buf,
			uint64_t wbytes, uint64_t c0, uint64_t c1)
{
	if (buf->cap > wbytes)
		tfs_mem_charge_held(tfs_mem_global(), buf->cap - wbytes);
	else
		tfs_mem_uncharge(tfs_mem_global(), wbytes - buf->cap);
	pthread_mutex_lock(&f->lock);
	tfs_mem_uncharge(tfs_mem_global(), f->win_charged);
	f->win_charged = buf->cap;
	window_release(&f->win);
	f->win = *buf;
	f->win_c0 = c0;
	f->win_c1 = c1;
	pthread_mutex_unlock(&f->lock);
}

/* The body bytes [body_off, body_end) into dst from the window, if it
 * holds them; else *src takes a reference to the opening to read. */
static bool window_hit(struct tfsd *fs, struct tfsd_file *f,
		       uint64_t body_off, uint64_t body_end, uint8_t *dst,
		       struct tfsd_arr **src)
{
	bool hit;

	pthread_mutex_lock(&f->lock);
	hit = window_copy(f, body_off, body_end, dst);
	if (!hit) {
		*src = f->src;
		tfsd_arr_get(fs->arrays, *src);
	}
	pthread_mutex_unlock(&f->lock);
	return hit;
}

/* A window and the batch it is produced from are held per reader: at
 * most a 32nd of the budget, so that a dozen readers of a small budget
 * leave room for the tiles they decode. */
static uint64_t window_bytes(void)
{
	uint64_t w = tfs_mem_budget(tfs_mem_global()) / 32;

	if (w == 0 || w > WINDOW_BYTES)
		return WINDOW_BYTES;
	return w < WINDOW_BYTES_MIN ? WINDOW_BYTES_MIN : w;
}

static enum tfs_err read_random(struct tfsd *fs, struct tfsd_file *f,
				uint64_t off, uint8_t *dst, size_t len,
				size_t *got, struct tfs_diag *d)
{
	const struct tfsr_slice *p = f->plan.sl;
	uint64_t hlen = p->header.len, end, c0, c1, body_off, body_end, wbytes;
	uint64_t wmin = window_bytes();
	struct tfsd_arr *src = NULL;
	struct tfs_buf buf;
	size_t n = 0;
	enum tfs_err e;

	*got = 0;
	if (off >= f->size || len == 0)
		return TFS_E_OK;
	end = off + len > f->size ? f->size : off + len;
	if (off < hlen) {
		n = (size_t)((end < hlen ? end : hlen) - off);
		memcpy(dst, p->header.data + off, n);
	}
	body_off = off + n - hlen;
	body_end = end - hlen;
	if (end <= hlen ||
	    window_hit(fs, f, body_off, body_end, dst + n, &src)) {
		*got = (size_t)(end - off);
		return TFS_E_OK;
	}
	/* Produce a window from the first cell asked for on. */
	c0 = body_off / p->record;
	c1 = (body_end + p->record - 1) / p->record;
	if (c1 - c0 < wmin / p->record)
		c1 = c0 + wmin / p->record;
	if (c1 > p->cells)
		c1 = p->cells;
	wbytes = (c1 - c0) * p->record;
	e = window_alloc(wbytes, &buf, d);
	if (e) {
		tfsd_arr_put(fs->arrays, src);
		return e;
	}
	e = window_produce(fs, f, &src, c0, c1, &buf, d);
	if (e) {
		tfs_mem_uncharge(tfs_mem_global(), wbytes);
		window_release(&buf);
		tfsd_arr_put(fs->arrays, src);
		return e;
	}
	memcpy(dst + n, buf.data + (body_off - c0 * p->record),
	       (size_t)(body_end - body_off));
	*got = (size_t)(end - off);
	window_keep(f, &buf, wbytes, c0, c1);
	/* Sequential reader: decode the next window while this one is
	 * consumed. */
	if (__atomic_exchange_n(&f->last_end, end, __ATOMIC_RELAXED) == off)
		tfsr_slice_prefetch(p, src->a, c1, c1 + (c1 - c0));
	tfsd_arr_put(fs->arrays, src);
	return TFS_E_OK;
}

/* Checks the bytes a replaying stream re produced (see stream_recover)
 * against those st still holds, below target, and drops them from re. */
static enum tfs_err replay_check(struct tfsr_stream *re,
				 const struct tfsr_stream *st,
				 uint64_t target, const char *vpath,
				 struct tfs_diag *d)
{
	uint64_t end = re->base + re->out.len;
	uint64_t lo = re->base > st->base ? re->base : st->base;
	uint64_t hi = end < target ? end : target;
	size_t drop;

	if (lo < hi && memcmp(re->out.data + (lo - re->base),
			      st->out.data + (lo - st->base), (size_t)(hi - lo)))
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': after fragments were vacuumed, the "
				"array opened again gives other bytes at "
				"offset %" PRIu64 " or after", vpath, lo);
	if (re->base >= hi)
		return TFS_E_OK;
	drop = (size_t)(hi - re->base);
	memmove(re->out.data, re->out.data + drop, re->out.len - drop);
	re->out.len -= drop;
	re->base = hi;
	return TFS_E_OK;
}

/* Produces the stream again on a new stream re, from the start up to
 * target, checking the bytes against those st still holds and dropping
 * them as they come (memory: one step). *step_failed: the failure, if
 * any, is a step's (a vacuum may have removed more). */
static enum tfs_err replay(struct tfsd *fs, struct tfsr_stream *re,
			   const struct tfsr_stream *st,
			   uint64_t target, const char *vpath,
			   bool *step_failed, struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	*step_failed = false;
	while (!e && !re->done && re->base + re->out.len < target) {
		e = tfsr_stream_step(re, d);
		*step_failed = e != TFS_E_OK;
		if (!e)
			e = tfsd__stream_account(fs, re, d);
		if (!e)
			e = replay_check(re, st, target, vpath, d);
	}
	if (!e && re->base + re->out.len < target)
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "'%s': after fragments were vacuumed, the array "
			     "opened again ends at offset %" PRIu64 ", before "
			     "the %" PRIu64 " bytes read", vpath,
			     re->base + re->out.len, target);
	return e;
}

/* A step of f's stream met a missing file (e, d); its bytes below
 * base + good are intact. When a vacuum removed fragments of the view
 * and a new opening of it shows the same cells (view_reopen), a new
 * stream on that replays the file up to there and goes on in place of
 * the old one; f reads that opening from then on. The caller holds
 * f->lock. */
static enum tfs_err stream_recover(struct tfsd *fs, struct tfsd_file *f,
				   size_t good, enum tfs_err e,
				   struct tfs_diag *d)
{
	struct tfsr_stream *st = &f->st, re;
	uint64_t target = st->base + good, charged;
	struct tfsd_arr *src = f->src, *fresh;
	struct tfs_buf tmp;
	bool step_failed = true;
	char when[32];

	st->out.len = good;
	memset(&re, 0, sizeof(re));
	for (int i = 0; e && step_failed && i < VANISH_RETRIES; i++) {
		tfsd__stream_release(fs, &re);
		e = view_reopen(fs, f, src, &fresh, e, d);
		if (e)
			break;
		if (src != f->src)
			tfsd_arr_put(fs->arrays, src);
		src = fresh;
		tfsr_stream_init(&re, f->plan.sl, src->a);
		e = replay(fs, &re, st, target, f->vpath, &step_failed, d);
	}
	/* st's bytes, then re's from target on, in st's buffer, which re
	 * takes (with what it counts). */
	if (!e)
		e = tfs_buf_append(&st->out, re.out.data, re.out.len);
	if (e) {
		/* f stays on its opening: a read again fails again rather
		 * than show another view. */
		tfsd__stream_release(fs, &re);
		if (src != f->src)
			tfsd_arr_put(fs->arrays, src);
		return e;
	}
	tmp = re.out;
	re.out = st->out;
	st->out = tmp;
	charged = re.charged;
	re.charged = st->charged;
	st->charged = charged;
	re.base = st->base;
	tfsd__stream_release(fs, st);
	*st = re;
	st->em.out = &st->out;
	tfsd_arr_put(fs->arrays, f->src);
	f->src = src;
	tfsr_format_time(when, sizeof(when), tfs_array_timestamp(src->a));
	tfs_log(TFS_LOG_INFO, "'/%s': fragments were vacuumed while it was "
		"read; reading on from the array opened again as of %s, the "
		"same %" PRIu64 " bytes up to here", f->vpath, when, target);
	return tfsd__stream_account(fs, st, d);
}

/* Indexes a seekable stream whose size was known without a counting
 * pass (sparse raw: fragment metadata gives its cell count),
 * or one whose index was forgotten since, at its first read far into
 * it: the pass finds the marks on both CPUs and costs about what reading
 * up to the offset would, and every later seek is cheap. A read in the
 * first quarter streams instead. Failures other than an interruption
 * leave the file streaming from the start. */
static enum tfs_err stream_index(struct tfsd *fs, struct tfsd_file *f,
				 uint64_t off, struct tfs_diag *d)
{
	struct tfsr_mark *marks;
	size_t mark_num;
	uint64_t size;
	enum tfs_err e;

	if (f->plan.sl->dense || !tfsr_slice_seekable(f->plan.sl) ||
	    (tfsr_slice_sparse_size(f->plan.sl, &size) && off < size / 4))
		return TFS_E_OK;
	e = tfsd__count_plan(&f->plan, &size, &marks, &mark_num, d);
	if (e == TFS_E_INTR)
		return e;
	if (e) {
		tfs_log(TFS_LOG_INFO, "'/%s': not indexed (%s); streaming "
			"from the start", f->vpath, tfs_diag_msg(d));
		tfs_diag_init(d);
		return TFS_E_OK;
	}
	tfsd_sizes_put(fs->renders, f->plan.arr->gen, f->vpath, size, marks,
		       mark_num);
	return TFS_E_OK;
}

/* Puts f's stream where a read at off can go on from: as it is, or,
 * when off lies behind what it keeps, after a failure, or far ahead,
 * started again where the index says the offset's cells begin, else
 * (behind) from the beginning. The caller holds f->lock. */
static enum tfs_err stream_seek(struct tfsd *fs, struct tfsd_file *f,
				uint64_t off, struct tfs_diag *d)
{
	struct tfsr_stream *st = &f->st;
	bool ahead = off > st->base + st->out.len + SEEK_AHEAD, jump;
	struct tfsr_mark m;
	enum tfs_err e = TFS_E_OK;

	if (off >= st->base && !st->failed && !ahead)
		return TFS_E_OK;
	jump = tfsr_slice_seekable(f->plan.sl) && marks_hold(f) &&
	       tfsd_sizes_mark(fs->renders, f->plan.arr->gen, f->vpath, off,
			       &m);
	if (!jump && ahead && marks_hold(f)) {
		e = stream_index(fs, f, off, d);
		jump = !e && tfsd_sizes_mark(fs->renders, f->plan.arr->gen,
					     f->vpath, off, &m);
	}
	if (jump && !st->failed && off >= st->base &&
	    m.off <= st->base + st->out.len)
		jump = false; /* going on is as near */
	if (jump || off < st->base || st->failed) {
		tfsd__stream_release(fs, st);
		tfsr_stream_init(st, f->plan.sl, f->src->a);
	}
	if (jump && !e)
		e = tfsr_stream_start_mark(st, &m, d);
	return e;
}

/* Drops what lies well behind a reader at off from f's stream. */
static void stream_drop_behind(struct tfsr_stream *st, uint64_t off)
{
	uint64_t drop;

	if (off <= st->base + KEEP_BEHIND)
		return;
	drop = off - KEEP_BEHIND - st->base;
	if (drop > st->out.len)
		drop = st->out.len;
	memmove(st->out.data, st->out.data + drop, st->out.len - drop);
	st->out.len -= drop;
	st->base += drop;
}

static enum tfs_err read_stream(struct tfsd *fs, struct tfsd_file *f,
				uint64_t off, uint8_t *dst, size_t len,
				size_t *got, const struct tfsd_stop *stop,
				struct tfs_diag *d)
{
	struct tfsr_stream *st = &f->st;
	enum tfs_err e;
	uint64_t avail_end;

	*got = 0;
	pthread_mutex_lock(&f->lock);
	e = stream_seek(fs, f, off, d);
	while (!e && !st->done && st->base + st->out.len < off + len) {
		size_t good = st->out.len;

		if (stop && stop->fn(stop->ctx)) {
			e = tfs_fail(d, TFS_E_INTR, "the read at offset "
				     "%" PRIu64 " was interrupted at offset "
				     "%" PRIu64, off, st->base + st->out.len);
			break;
		}
		e = tfsr_stream_step(st, d);
		if (e)
			e = stream_recover(fs, f, good, e, d);
		if (!e)
			e = tfsd__stream_account(fs, st, d);
		if (!e)
			stream_drop_behind(st, off);
	}
	if (!e) {
		avail_end = st->base + st->out.len;
		if (off < avail_end) {
			uint64_t n = avail_end - off < len ? avail_end - off : len;

			memcpy(dst, st->out.data + (off - st->base), n);
			*got = (size_t)n;
		}
		if (st->done && !f->size_learned) {
			f->size_learned = true;
			tfsd_renders_put(fs->renders, f->plan.arr->gen,
					 f->vpath, NULL, avail_end);
		}
	}
	/* An interrupted read leaves the stream where it was. */
	st->failed = e != TFS_E_OK && e != TFS_E_INTR;
	pthread_mutex_unlock(&f->lock);
	return e;
}

enum tfs_err tfsd_file_read(struct tfsd *fs, struct tfsd_file *f, uint64_t off,
			    uint8_t *dst, size_t len, size_t *got,
			    struct tfs_diag *d)
{
	return tfsd_file_read_stop(fs, f, off, dst, len, got, NULL, d);
}

enum tfs_err tfsd_file_read_stop(struct tfsd *fs, struct tfsd_file *f,
				 uint64_t off, uint8_t *dst, size_t len,
				 size_t *got, const struct tfsd_stop *stop,
				 struct tfs_diag *d)
{
	switch (f->how) {
	case SERVE_WHOLE:
		*got = 0;
		if (off < f->size) {
			*got = (size_t)(f->size - off < len ? f->size - off : len);
			memcpy(dst, f->data + off, *got);
		}
		return TFS_E_OK;
	case SERVE_RANDOM:
		return read_random(fs, f, off, dst, len, got, d);
	case SERVE_STREAM: {
		bool fallback;
		enum tfs_err e = read_parts(fs, f, off, dst, len, got,
					    &fallback);

		if (e || !fallback)
			return e;
		return read_stream(fs, f, off, dst, len, got, stop, d);
	}
	}
	return TFS_E_INTERNAL;
}

void tfsd_file_close(struct tfsd *fs, struct tfsd_file *f)
{
	if (!f)
		return;
	if (f->how == SERVE_STREAM) {
		ring_drop(fs, f, f->ring_num);
		tfsd__stream_release(fs, &f->st);
	}
	tfs_free(f->marks);
	tfsd__uncharge(fs, f->charged);
	tfsd_arr_put(fs->arrays, f->src);
	tfs_mem_uncharge(tfs_mem_global(), f->win_charged);
	window_release(&f->win);
	if (f->plan.arr)
		plan_release(fs, &f->plan);
	pthread_mutex_destroy(&f->lock);
	tfs_free(f->data);
	tfs_free(f->vpath);
	tfs_free(f);
}
