/* Rendering work the memory accountant counts and a caller's stop ends:
 * the bytes of renderings in flight, whole renderings, and the counting
 * pass that gives a streamed file its exact size and its index. */
#include "render_work.h"

#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "render_cache.h"
#include "tfs_alloc.h"
#include "tfs_mem.h"

/* ---- Streams ------------------------------------------------------------- */

/* Counts n more bytes of renderings in flight: in the memory accountant
 * (tfs_mem.h, where a charge that does not fit waits a bounded time for
 * room) and in the daemon's renderings (fs->render_bytes, within
 * fs->render_limit when max_memory= sets one). When either has no room
 * nothing is counted and the rendering stops with ENOMEM. */
enum tfs_err tfsd__charge(struct tfsd *fs, uint64_t n, struct tfs_diag *d)
{
	struct tfs_mem *m = tfs_mem_global();
	uint64_t total;

	if (!n)
		return TFS_E_OK;
	total = __atomic_add_fetch(&fs->render_bytes, n, __ATOMIC_RELAXED);
	if (fs->render_limit && total > fs->render_limit) {
		__atomic_sub_fetch(&fs->render_bytes, n, __ATOMIC_RELAXED);
		return tfs_fail(
			d, TFS_E_NOMEM,
			"rendering needs more memory than max_memory=%" PRIu64
			" leaves (%" PRIu64 " bytes in flight)",
			fs->cfg.max_memory, total);
	}
	if (tfs_mem_charge(m, n)) {
		__atomic_sub_fetch(&fs->render_bytes, n, __ATOMIC_RELAXED);
		return tfs_fail(d, TFS_E_NOMEM,
				"rendering needs %" PRIu64 " more bytes, no "
				"room within the memory budget of %" PRIu64
				" (%s=%" PRIu64 ")",
				n, tfs_mem_budget(m),
				fs->cfg.max_memory ? "max_memory" : "cache",
				fs->cfg.max_memory ? fs->cfg.max_memory
						   : fs->cfg.cache_bytes);
	}
	return TFS_E_OK;
}

void tfsd__uncharge(struct tfsd *fs, uint64_t n)
{
	if (!n)
		return;
	__atomic_sub_fetch(&fs->render_bytes, n, __ATOMIC_RELAXED);
	tfs_mem_uncharge(tfs_mem_global(), n);
}

/* Counts the stream's buffer in the renderings in flight; without room
 * the rendering stops with ENOMEM (the buffer grew by at most one step
 * past the budget) rather than growing with the selection. */
enum tfs_err tfsd__stream_account(struct tfsd *fs, struct tfsr_stream *st,
				  struct tfs_diag *d)
{
	uint64_t now = st->out.cap;
	enum tfs_err e;

	if (now == st->charged)
		return TFS_E_OK;
	if (now < st->charged) {
		tfsd__uncharge(fs, st->charged - now);
		st->charged = now;
		return TFS_E_OK;
	}
	e = tfsd__charge(fs, now - st->charged, d);
	if (!e)
		st->charged = now;
	return e;
}

void tfsd__stream_release(struct tfsd *fs, struct tfsr_stream *st)
{
	tfsd__uncharge(fs, st->charged);
	tfsr_stream_release(st);
}

/* The stop of the request this thread serves (tfsd_stop_swap). */
static _Thread_local const struct tfsd_stop *thread_stop;

const struct tfsd_stop *tfsd_stop_swap(const struct tfsd_stop *stop)
{
	const struct tfsd_stop *old = thread_stop;

	thread_stop = stop;
	/* Waits for memory end too. */
	tfs_mem_thread_stop(stop ? stop->fn : NULL, stop ? stop->ctx : NULL);
	return old;
}

/* TFS_E_INTR when stop (NULL: never) says the work must end: between the
 * steps of whole renderings and counting passes. */
static enum tfs_err check_stop(const struct tfsd_stop *stop, const char *what,
			       const struct plan *p, uint64_t cell,
			       struct tfs_diag *d)
{
	if (!stop || !stop->fn(stop->ctx))
		return TFS_E_OK;
	return tfs_fail(d, TFS_E_INTR,
			"%s was interrupted at cell %" PRIu64 " of %" PRIu64,
			what, cell, p->sl->cells);
}

/* Renders a whole plan into out (empty), which takes the stream's buffer;
 * *charged: the bytes of it still counted in fs->render_bytes. The
 * thread's stop ends it between steps. */
enum tfs_err tfsd__render_whole(struct plan *p, struct tfs_buf *out,
				uint64_t *charged, struct tfs_diag *d)
{
	const struct tfsd_stop *stop = thread_stop;
	struct tfsr_stream st;
	enum tfs_err e = TFS_E_OK;

	tfsr_stream_init(&st, p->sl, p->arr->a);
	*charged = 0;
	while (!e && !st.done) {
		e = check_stop(stop, "the whole rendering", p, st.next_cell, d);
		if (!e)
			e = tfsr_stream_step(&st, d);
		if (!e)
			e = tfsd__stream_account(p->fs, &st, d);
	}
	if (!e) {
		tfs_buf_release(out);
		*out = st.out;
		*charged = st.charged;
		tfs_buf_init(&st.out, TFS_BUF_NO_MAX);
		st.charged = 0;
	}
	tfsd__stream_release(p->fs, &st);
	return e;
}

/* ---- The counting pass ---------------------------------------------------- */

/* One part of a counting pass: cells [c0, c1) of a dense stream (the
 * first part with what begin produces; the last one with end's), a
 * whole sparse stream, or the part of one before or from a mark (from,
 * to: see tfsr_stream_start_part). */
struct count_part {
	struct plan *p;
	const struct tfsd_stop *stop; /* NULL: never */
	uint64_t c0, c1;
	bool first, last;
	const struct tfsr_mark *from, *to;
	bool split; /* one of two parts on two threads */
	uint64_t bytes;
	uint64_t cells;
	struct tfsr_mark *marks;
	size_t mark_num, mark_cap;
	enum tfs_err e;
	struct tfs_diag d;
};

static enum tfs_err mark_add(struct count_part *cp, const struct tfsr_mark *m)
{
	if (cp->mark_num == MARKS_MAX) {
		/* Every other one goes: the index stays evenly spread. */
		for (size_t i = 0; i < MARKS_MAX / 2; i++)
			cp->marks[i] = cp->marks[2 * i];
		cp->mark_num = MARKS_MAX / 2;
	}
	if (tfs_grow(&cp->marks, &cp->mark_cap, cp->mark_num + 1,
		     sizeof(*cp->marks)))
		return TFS_E_NOMEM;
	cp->marks[cp->mark_num++] = *m;
	return TFS_E_OK;
}

static void *count_part_run(void *arg)
{
	struct count_part *cp = arg;
	struct plan *p = cp->p;
	bool seekable = tfsr_slice_seekable(p->sl);
	struct tfsr_stream st;
	enum tfs_err e = TFS_E_OK;

	tfsr_stream_init(&st, p->sl, p->arr->a);
	/* Text of numeric columns is counted, not written. */
	st.em.counted = &st.base;
	st.indexing = seekable && !p->sl->dense;
	if (cp->split)
		st.pool = NULL; /* the two parts take both cores */
	if (cp->from || cp->to)
		e = tfsr_stream_start_part(&st, cp->from, cp->to, &cp->d);
	else if (!cp->first)
		e = tfsr_stream_start_at(&st, cp->c0, 0, &cp->d);
	while (!e && !st.done && (cp->last || st.next_cell < cp->c1)) {
		e = check_stop(cp->stop, "the counting pass", p, st.next_cell,
			       &cp->d);
		if (!e && seekable && p->sl->dense && st.started) {
			struct tfsr_mark m = {.cell = st.next_cell,
					      .off = st.base + st.out.len};

			e = mark_add(cp, &m);
		}
		if (!e)
			e = tfsr_stream_step(&st, &cp->d);
		for (size_t i = 0; !e && i < st.mark_num; i++)
			e = mark_add(cp, &st.marks[i]);
		st.mark_num = 0;
		if (!e)
			e = tfsd__stream_account(p->fs, &st, &cp->d);
		st.base += st.out.len;
		st.out.len = 0;
	}
	cp->bytes = st.base;
	cp->cells = st.em.count - st.first_cell;
	tfsd__stream_release(p->fs, &st);
	if (e == TFS_E_NOMEM && !cp->d.code)
		tfs_fail(&cp->d, e, "out of memory");
	cp->e = e;
	return NULL;
}

/* Splits a counting pass in two parts run on two threads: dense
 * selections at a step in the middle, sparse ones with an index at the
 * middle of the first coordinate's range (mid). False: one part. */
static bool count_split(struct plan *p, struct count_part part[2],
			struct tfsr_mark *mid)
{
	uint64_t step = tfsr_slice_step_cells(p->sl), half;

	if (!tfsr_slice_seekable(p->sl))
		return false;
	if (!p->sl->dense) {
		if (!tfsr_slice_mid_key(p->sl, mid))
			return false;
		part[0].to = mid;
		part[1].from = mid;
		part[1].last = true;
		return true;
	}
	if (p->sl->cells / 2 < step)
		return false;
	/* The first half ends on a step of its own stream. */
	half = p->sl->cells / 2 / step * step;
	part[0].last = false;
	part[0].c1 = half;
	part[1].c0 = half;
	part[1].c1 = p->sl->cells;
	part[1].last = true;
	return true;
}

/* The second part's marks after the first's: its offsets (and a sparse
 * part's cells) follow the first part's, and a sparse second part
 * begins at a mark of its own. */
static enum tfs_err count_merge(struct plan *p, struct count_part part[2],
				const struct tfsr_mark *mid)
{
	enum tfs_err e = TFS_E_OK;
	bool sparse = !p->sl->dense;

	if (sparse && part[1].cells) {
		struct tfsr_mark m = *mid;

		m.cell = part[0].cells;
		m.off = part[0].bytes;
		e = mark_add(&part[0], &m);
	}
	for (size_t i = 0; !e && i < part[1].mark_num; i++) {
		struct tfsr_mark m = part[1].marks[i];

		m.off += part[0].bytes;
		if (sparse)
			m.cell += part[0].cells;
		e = mark_add(&part[0], &m);
	}
	return e;
}

/* The exact size of a streamed plan, rendering its cells and dropping
 * the bytes, in two parts on two threads where it can be split
 * (count_split), with the index of where each step's cells begin (dense)
 * or of the marks of a sparse stream (*marks, which the caller takes). */
enum tfs_err tfsd__count_plan(struct plan *p, uint64_t *size,
			      struct tfsr_mark **marks, size_t *mark_num,
			      struct tfs_diag *d)
{
	struct count_part part[2];
	struct tfsr_mark mid;
	size_t parts = 1;
	pthread_t worker;
	bool threaded = false;
	uint64_t max = p->sl->max_cells;
	enum tfs_err e;

	*marks = NULL;
	*mark_num = 0;
	/* What the parts' streams share is built before they split. */
	e = tfsr_slice_prepare(p->sl, p->arr->a, d);
	if (e)
		return e;
	memset(part, 0, sizeof(part));
	for (size_t i = 0; i < 2; i++) {
		part[i].p = p;
		part[i].stop = thread_stop;
		tfs_diag_init(&part[i].d);
	}
	part[0].first = true;
	part[0].last = true;
	if (count_split(p, part, &mid)) {
		parts = 2;
		part[0].split = part[1].split = true;
		threaded = pthread_create(&worker, NULL, count_part_run,
					  &part[1]) == 0;
	}
	count_part_run(&part[0]);
	if (parts == 2) {
		if (threaded)
			pthread_join(worker, NULL);
		else
			count_part_run(&part[1]);
	}
	e = part[0].e;
	if (e)
		*d = part[0].d;
	else if (parts == 2 && (e = part[1].e))
		*d = part[1].d;
	if (!e && parts == 2 && max && part[0].cells + part[1].cells > max)
		e = tfs_fail(d, TFS_E_TOO_BIG,
			     "selection of more than %" PRIu64
			     " cells is over max_cells=%" PRIu64,
			     max, max);
	if (!e && parts == 2 && (e = count_merge(p, part, &mid)))
		e = tfs_fail(d, e, "out of memory");
	if (!e) {
		*size = part[0].bytes + (parts == 2 ? part[1].bytes : 0);
		*marks = part[0].marks;
		*mark_num = part[0].mark_num;
		part[0].marks = NULL;
	}
	tfs_free(part[0].marks);
	tfs_free(part[1].marks);
	return e;
}
