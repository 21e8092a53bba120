/* Consolidation of fragments (consolidated.md §4-5): pick a range of
 * fragments, read their cells through the public reader and write them as
 * one new fragment, dense or sparse (with or without cell timestamps), as
 * maintain.c's opening comment explains. */
#include "maintain_internal.h"

/* ---- Fragments (consolidated.md §4-5) ------------------------------------- */

struct frag_set {
	struct tfs_fragment_info *in; /* the fragments of the range */
	size_t num;
	uint64_t t1min, t2max;
	bool dense;
	uint32_t max_version;
};

/* Refuses to merge cells read with another schema than the writer's. */
static enum tfs_err same_schema(const struct mt *m, struct tfs_writer *w,
				struct tfs_array *a, struct tfs_diag *d)
{
	if (strcmp(tfs_writer_schema(w)->name, tfs_array_schema(a)->name))
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': the schema changed after the "
				"range; consolidate before the change",
				m->path);
	return TFS_E_OK;
}

/* Writes every cell that qo reads from a as one new fragment (the
 * writer opened with wo, layout and box) and commits it. */
static enum tfs_err write_read(const struct mt *m, struct tfs_array *a,
			       const struct tfs_query_opts *qo,
			       const struct tfs_write_opts *wo,
			       enum tfs_write_layout layout,
			       const struct tfs_range *box,
			       struct tfs_write_result *res,
			       struct tfs_diag *d)
{
	struct tfs_writer *w = NULL;
	struct tfs_query *q = NULL;
	enum tfs_err e;

	e = tfs_writer_open(m->path, wo, layout, box, &w, d);
	if (!e)
		e = same_schema(m, w, a, d);
	if (!e)
		e = tfs_query_open(a, qo, &q, d);
	while (!e) {
		const struct tfs_batch *b;

		e = tfs_query_next(q, &b, d);
		if (e || !b)
			break;
		e = tfs_writer_append(w, b, NULL, d);
	}
	if (!e)
		e = tfs_writer_commit(w, res, d);
	tfs_query_close(q);
	tfs_writer_free(w);
	return e;
}

/* Picks the fragments whose [t1, t2] lies in [start, end]; refuses a
 * range that interleaves with a fragment left out. */
static enum tfs_err pick_fragments(const struct mt *m, struct tfs_array *a,
				   uint64_t start, uint64_t end,
				   struct frag_set *fs, struct tfs_diag *d)
{
	size_t n = tfs_array_fragment_count(a);

	memset(fs, 0, sizeof(*fs));
	fs->t1min = UINT64_MAX;
	fs->in = tfs_callocn(n ? n : 1, sizeof(*fs->in));
	if (!fs->in)
		return tfs__mt_nomem(d);
	for (size_t i = 0; i < n; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		if (f.t1 < start || f.t2 > end)
			continue;
		fs->in[fs->num++] = f;
		tfs__mt_widen(&fs->t1min, &fs->t2max, f.t1, f.t2);
		if (f.version > fs->max_version)
			fs->max_version = f.version;
	}
	if (fs->num < 2)
		return TFS_E_OK;
	for (size_t i = 0; i < n; i++) {
		struct tfs_fragment_info f;
		bool inside = false;

		tfs_array_fragment(a, i, &f);
		for (size_t k = 0; k < fs->num; k++)
			if (!strcmp(fs->in[k].name, f.name))
				inside = true;
		if (!inside && f.t1 <= fs->t2max && f.t2 >= fs->t1min)
			return tfs_fail(d, TFS_E_INVALID,
					"array '%s': fragment '%s' overlaps the "
					"range [%" PRIu64 ", %" PRIu64
					"] in time but is not inside it; choose "
					"a range that holds all of it or none",
					m->path, f.name, fs->t1min, fs->t2max);
	}
	return TFS_E_OK;
}

/* Dense: the bounding box of the range's fragments, read as of its end. */
static enum tfs_err write_dense(const struct mt *m,
				const struct tfs_consolidate_opts *opts,
				const struct frag_set *fs,
				struct tfs_write_result *res,
				struct tfs_diag *d)
{
	struct tfs_array *a = NULL;
	const struct tfs_schema *s;
	struct tfs_range *box = NULL;
	struct tfs_write_opts wo = opts->write;
	const char **names = NULL;
	enum tfs_err e;

	e = tfs__mt_open(m, 0, fs->t2max, &a, d);
	if (e)
		return e;
	s = tfs_array_schema(a);
	box = tfs_callocn(s->dim_num, sizeof(*box));
	names = tfs_callocn(s->attr_num ? s->attr_num : 1, sizeof(*names));
	if (!box || !names) {
		e = tfs__mt_nomem(d);
		goto out;
	}
	for (uint32_t k = 0; k < s->dim_num; k++) {
		size_t sz = tfs_datatype_size(s->dims[k].type);

		for (size_t i = 0; i < fs->num; i++) {
			const struct tfs_range *r;

			/* empty fragments have no non-empty domain */
			if (!fs->in[i].non_empty_domain)
				continue;
			r = &fs->in[i].non_empty_domain[k];

			if (!box[k].lo ||
			    tfs_value_cmp(s->dims[k].type, r->lo, box[k].lo) < 0)
				box[k].lo = r->lo;
			if (!box[k].hi ||
			    tfs_value_cmp(s->dims[k].type, r->hi, box[k].hi) > 0)
				box[k].hi = r->hi;
		}
		box[k].lo_len = box[k].hi_len = sz;
		if (!box[k].lo) {
			/* Only empty fragments: no cells to write. */
			memset(res, 0, sizeof(*res));
			goto out;
		}
	}
	for (uint32_t i = 0; i < s->attr_num; i++)
		names[i] = s->attrs[i].name;
	wo.t1 = fs->t1min;
	wo.t2 = fs->t2max;
	{
		struct tfs_query_opts qo = {.subarray = box, .fields = names,
					    .field_num = s->attr_num};

		e = write_read(m, a, &qo, &wo, TFS_WRITE_DENSE_BOX, box, res,
			       d);
	}
out:
	tfs_free(box);
	tfs_free(names);
	tfs_array_close(a);
	return e;
}

/* Whether the range's fragments can be merged with per-cell timestamps:
 * none carries timestamps of its own (their older versions could not be
 * read back one by one), and no two start at the same time (the cell
 * timestamp is the fragment's t1, which decides newest-wins). */
static enum tfs_err can_stamp(const struct mt *m, const struct frag_set *fs,
			      bool *out, struct tfs_diag *d)
{
	struct tfs_arraydir_opts ao = {.key = m->key, .t0 = 0,
				       .t1 = UINT64_MAX};
	struct tfs_arraydir *ad;
	enum tfs_err e;

	*out = fs->max_version >= 15;
	for (size_t i = 0; *out && i < fs->num; i++)
		for (size_t k = i + 1; k < fs->num; k++)
			if (fs->in[i].t1 == fs->in[k].t1)
				*out = false;
	if (!*out)
		return TFS_E_OK;
	e = tfs_arraydir_open(m->vfs, m->path, &ao, &ad, d);
	if (e)
		return e;
	for (size_t i = 0; i < ad->listed_num; i++) {
		const struct tfs_fragment *f = ad->listed[i];

		if (!f->footer.has_timestamps && !f->footer.has_delete_meta)
			continue;
		for (size_t k = 0; k < fs->num; k++)
			if (!strcmp(fs->in[k].name, f->name))
				*out = false;
	}
	tfs_arraydir_close(ad);
	return TFS_E_OK;
}

/* Sparse, as TileDB consolidates from format 15 on: every cell of every
 * fragment of the range, each read alone in the window of its own time
 * range, with the fragment's t1 as the cell's timestamp; all versions of
 * a coordinate are kept, and the reader picks per cell by time
 * (format/read.md §7). Named [t1min, t2max]. *fallback when a fragment
 * does not read alone in its window. */
/* Scratch reused across batches: the stamp column and the widened column
 * list. */
struct stamp_scratch {
	uint64_t *stamps;
	size_t stamps_cap;
	struct tfs_column *cols;
};

/* Whether fragment fk is the one visible fragment of a (opened at its
 * times); if not, the cells cannot be stamped one fragment at a time. */
static bool alone_visible(const struct tfs_array *a,
			  const struct tfs_fragment_info *fk)
{
	size_t visible = 0;
	bool alone = true;

	for (size_t i = 0; i < tfs_array_fragment_count(a); i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		if (f.visible) {
			visible++;
			if (strcmp(f.name, fk->name))
				alone = false;
		}
	}
	return alone && visible == 1;
}

/* Appends batch b to w with a __timestamps column of t1 for every cell. */
static enum tfs_err append_stamped(struct tfs_writer *w,
				   const struct tfs_batch *b, uint64_t t1,
				   struct stamp_scratch *s, struct tfs_diag *d)
{
	struct tfs_batch sb;

	if (b->cell_num > s->stamps_cap) {
		tfs_free(s->stamps);
		s->stamps_cap = b->cell_num;
		s->stamps = tfs_mallocn(s->stamps_cap, 8);
	}
	tfs_free(s->cols);
	s->cols = tfs_mallocn(b->column_num + 1, sizeof(*s->cols));
	if (!s->stamps || !s->cols)
		return tfs__mt_nomem(d);
	for (uint64_t i = 0; i < b->cell_num; i++)
		s->stamps[i] = t1;
	memcpy(s->cols, b->columns, b->column_num * sizeof(*s->cols));
	s->cols[b->column_num] = (struct tfs_column){
		.name = "__timestamps", .type = TFS_UINT64, .cell_val_num = 1,
		.data = (const uint8_t *)s->stamps, .data_len = b->cell_num * 8};
	sb = *b;
	sb.columns = s->cols;
	sb.column_num = b->column_num + 1;
	return tfs_writer_append(w, &sb, NULL, d);
}

/* Copies the cells of fragment fk into w, stamped with its t1. */
static enum tfs_err copy_stamped(const struct mt *m, struct tfs_writer *w,
				 const struct tfs_fragment_info *fk,
				 struct stamp_scratch *s, bool *fallback,
				 struct tfs_diag *d)
{
	struct tfs_query_opts qo = {0};
	struct tfs_query *q = NULL;
	struct tfs_array *a;
	enum tfs_err e;

	e = tfs__mt_open_purged(m, fk->t1, fk->t2, &a, d);
	if (e)
		return e;
	e = same_schema(m, w, a, d);
	if (e) {
		tfs_array_close(a);
		return e;
	}
	if (!alone_visible(a, fk))
		*fallback = true;
	if (!*fallback)
		e = tfs_query_open(a, &qo, &q, d);
	while (!e && !*fallback) {
		const struct tfs_batch *b;

		e = tfs_query_next(q, &b, d);
		if (e || !b)
			break;
		e = append_stamped(w, b, fk->t1, s, d);
	}
	tfs_query_close(q);
	tfs_array_close(a);
	return e;
}

static enum tfs_err write_sparse_stamped(const struct mt *m,
					 const struct tfs_consolidate_opts *opts,
					 const struct frag_set *fs,
					 struct tfs_write_result *res,
					 bool *fallback, struct tfs_diag *d)
{
	struct tfs_write_opts wo = opts->write;
	struct tfs_writer *w = NULL;
	struct stamp_scratch s = {NULL, 0, NULL};
	enum tfs_err e;

	*fallback = false;
	wo.t1 = fs->t1min;
	wo.t2 = fs->t2max;
	wo.cell_timestamps = true;
	e = tfs_writer_open(m->path, &wo, TFS_WRITE_UNORDERED, NULL, &w, d);
	for (size_t k = 0; !e && !*fallback && k < fs->num; k++)
		e = copy_stamped(m, w, &fs->in[k], &s, fallback, d);
	if (!e && !*fallback)
		e = tfs_writer_commit(w, res, d);
	tfs_writer_free(w);
	tfs_free(s.cols);
	tfs_free(s.stamps);
	return e;
}

/* Sparse: every cell of the range's fragments (newest wins where the
 * array has no duplicates), read in the window of the range. */
static enum tfs_err write_sparse(const struct mt *m,
				 const struct tfs_consolidate_opts *opts,
				 const struct frag_set *fs,
				 struct tfs_write_result *res,
				 struct tfs_diag *d)
{
	struct tfs_query_opts qo = {0};
	struct tfs_write_opts wo = opts->write;
	struct tfs_array *a;
	enum tfs_err e;

	e = tfs__mt_open_purged(m, fs->t1min, fs->t2max, &a, d);
	if (e)
		return e;
	wo.t1 = fs->max_version >= 15 ? fs->t2max : fs->t1min;
	wo.t2 = fs->t2max;
	e = write_read(m, a, &qo, &wo, TFS_WRITE_UNORDERED, NULL, res, d);
	tfs_array_close(a);
	return e;
}

/* Takes back a committed fragment whose .vac could not be written: the
 * .vac if it is there after all, then the commit, then the folder. */
static void uncommit(const struct mt *m, const char *name, uint32_t version)
{
	struct tfs_diag ignored;
	char rel[512];

	tfs_diag_init(&ignored);
	snprintf(rel, sizeof(rel), version >= 12 ? "__commits/%s.vac" : "%s.vac",
		 name);
	if (tfs__mt_remove(m, rel, NULL, &ignored))
		return;
	snprintf(rel, sizeof(rel), version >= 12 ? "__commits/%s.wrt" : "%s.ok",
		 name);
	if (tfs__mt_remove(m, rel, NULL, &ignored))
		return;
	snprintf(rel, sizeof(rel), "%s%s", version >= 12 ? "__fragments/" : "",
		 name);
	(void)tfs__mt_remove(m, rel, NULL, &ignored);
}

enum tfs_err tfs__consolidate_fragments(const struct mt *m,
					const struct tfs_consolidate_opts *opts,
					char *made, size_t made_cap,
					struct tfs_diag *d)
{
	uint64_t start = opts ? opts->start : 0;
	uint64_t end = opts && opts->end ? opts->end : UINT64_MAX;
	struct tfs_consolidate_opts none = {0};
	struct tfs_write_result res = {0};
	struct tfs_array *a;
	struct frag_set fs = {0};
	struct tfs_buf vac;
	bool dense;
	enum tfs_err e;

	if (!opts)
		opts = &none;
	/* The fragment infos point into this array: it stays open until
	 * the end. */
	e = tfs__mt_open(m, 0, 0, &a, d);
	if (e)
		return e;
	dense = tfs_array_schema(a)->array_type == TFS_DENSE;
	e = pick_fragments(m, a, start, end, &fs, d);
	if (e || fs.num < 2)
		goto out;
	if (dense) {
		e = write_dense(m, opts, &fs, &res, d);
	} else {
		bool stamp, fallback = true;

		e = can_stamp(m, &fs, &stamp, d);
		if (!e && stamp)
			e = write_sparse_stamped(m, opts, &fs, &res, &fallback,
						 d);
		if (!e && fallback)
			e = write_sparse(m, opts, &fs, &res, d);
	}
	if (e || res.cell_num == 0)
		goto out;
	tfs_buf_init(&vac, TFS_BUF_NO_MAX);
	for (size_t i = 0; !e && i < fs.num; i++)
		if (tfs_buf_printf(&vac, "%s%s\n",
				   fs.in[i].version >= 12 ? "__fragments/" : "",
				   fs.in[i].name))
			e = tfs__mt_nomem(d);
	if (!e) {
		char rel[512];
		/* The writer uses the schema's version; the .vac goes where
		 * that version keeps commits. */
		uint32_t v = tfs_array_schema(a)->version;

		snprintf(rel, sizeof(rel), "%s%s.vac",
			 v >= 12 ? "__commits/" : "", res.name);
		e = tfs__mt_write_file(m, rel, vac.data, vac.len, d);
		if (e)
			uncommit(m, res.name, v);
	}
	tfs_buf_release(&vac);
	if (!e)
		tfs__mt_set_made(made, made_cap, res.name);
out:
	tfs_free(fs.in);
	tfs_array_close(a);
	return e;
}
