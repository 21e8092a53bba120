/* The public fragment writer (tfs_write.h): opens the array for the schema
 * in force, checks and stages appended cells (sort.c), and at commit picks
 * the fragment kind, name and format version (format/write.md §1–2),
 * streams the sorted cells through the tile writer into a staged folder,
 * and commits last (write.md §3). Any failure removes the staged folder. */
#include "writer_state.h"

const struct tfs_schema *tfs_writer_schema(const struct tfs_writer *w)
{
	return w->s;
}

const struct tfs_enumeration *tfs_writer_enumerations(const struct tfs_writer *w,
						      size_t *count)
{
	*count = w->ad->enum_num;
	return w->ad->enums;
}

void tfs_writer_free(struct tfs_writer *w)
{
	if (!w)
		return;
	tfs__tw_free(w->tw);
	if (w->dir && !w->committed)
		tfs__remove_tree(w->vfs, w->dir);
	tfs_free(w->dir);
	tfs_free(w->parent);
	tfs_free(w->cdir);
	tfs_free(w->commit);
	tfs__cells_release(&w->scratch);
	tfs__sorter_free(w->sorter);
	if (w->ad)
		tfs_arraydir_close(w->ad);
	tfs_free(w->fields);
	tfs_free(w->colmap);
	tfs_free(w->path);
	if (w->own_pool)
		tfs_pool_free(w->own_pool);
	if (w->own_vfs)
		tfs_vfs_free(w->own_vfs);
	tfs_free(w);
}

/* The box of the cells written, as ranges over w->boxbytes. */
static void box_ranges(const struct tfs_writer *w, struct tfs_range *box)
{
	for (uint32_t k = 0; k < w->D; k++) {
		box[k].lo = w->boxbytes[0][k];
		box[k].hi = w->boxbytes[1][k];
		box[k].lo_len = box[k].hi_len =
			tfs_datatype_size(w->s->dims[k].type);
	}
}

static enum tfs_err stream_start(struct tfs_writer *w, struct tfs_diag *d);

static enum tfs_err check_box(struct tfs_writer *w, const struct tfs_range *box,
			      struct tfs_diag *d)
{
	const struct tfs_schema *s = w->s;
	enum tfs_err e;

	w->box_cells = 1;
	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dm = &s->dims[k];
		size_t sz = tfs_datatype_size(dm->type);
		uint64_t n;

		if (!box[k].lo || !box[k].hi)
			return tfs_fail(d, TFS_E_INVALID,
					"box: dimension '%s' has no range",
					dm->name);
		if ((e = tfs__writer_check_value(w, k, box[k].lo, sz, "box", 0, d)) ||
		    (e = tfs__writer_check_value(w, k, box[k].hi, sz, "box", 0, d)))
			return e;
		if (tfs_value_cmp(dm->type, box[k].lo, box[k].hi) > 0)
			return tfs_fail(d, TFS_E_INVALID,
					"box: dimension '%s': low above high",
					dm->name);
		w->boxlo[k] = tfs__dim_off(dm, box[k].lo);
		w->boxhi[k] = tfs__dim_off(dm, box[k].hi);
		memcpy(w->boxbytes[0][k], box[k].lo, sz);
		memcpy(w->boxbytes[1][k], box[k].hi, sz);
		n = w->boxhi[k] - w->boxlo[k] + 1;
		if (n == 0 || w->box_cells > UINT64_MAX / n)
			return tfs_fail(d, TFS_E_INVALID, "box: too many cells");
		w->box_cells *= n;
	}
	return TFS_E_OK;
}

/* The array's folder, schema and storage: w->path without trailing
 * slashes, w->vfs (the caller's or our own), w->ad and w->s. */
static enum tfs_err open_array(struct tfs_writer *w, const char *path,
			       const struct tfs_write_opts *opts,
			       struct tfs_diag *d)
{
	struct tfs_arraydir_opts ao;
	enum tfs_err e;

	w->path = tfs_strdup(path);
	if (!w->path)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	/* No trailing slashes in names we build. */
	for (size_t n = strlen(w->path); n > 1 && w->path[n - 1] == '/'; n--)
		w->path[n - 1] = '\0';
	if (opts->key) {
		memcpy(w->key, opts->key, 32);
		w->has_key = true;
	}
	w->vfs = opts->vfs;
	if (!w->vfs) {
		if ((e = tfs_vfs_default_new(w->path, &w->own_vfs, d)))
			return e;
		w->vfs = w->own_vfs;
	}
	memset(&ao, 0, sizeof(ao));
	ao.key = w->has_key ? w->key : NULL;
	ao.t1 = UINT64_MAX;
	if ((e = tfs_arraydir_open(w->vfs, w->path, &ao, &w->ad, d)))
		return e;
	w->s = w->ad->schema;
	w->version = w->s->version >= 7 ? w->s->version : 23;
	return TFS_E_OK;
}

/* Whether this writer can encode every field of schema s. */
static enum tfs_err check_writable(const struct tfs_schema *s, const char *path,
				   struct tfs_diag *d)
{
	if (s->dim_num > 128)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"array '%s': too many dimensions", path);
	for (uint32_t i = 0; i < s->attr_num; i++) {
		const struct tfs_pipeline *p = &s->attrs[i].filters;

		for (uint32_t k = 0; k < p->count; k++)
			if (p->filters[k].type == TFS_FILTER_DEPRECATED)
				return tfs_fail(
					d, TFS_E_UNSUPPORTED,
					"attribute '%s': filter '%s' has no "
					"encoder",
					s->attrs[i].name,
					tfs_filter_name(p->filters[k].type));
	}
	return TFS_E_OK;
}

static void field_of_dim(struct tfs_writer *w, uint32_t k)
{
	struct tfs__field *f = &w->fields[k];
	const struct tfs_dim *dm = &w->s->dims[k];

	f->name = dm->name;
	f->type = dm->type;
	f->cell_val_num = dm->var ? TFS_VAR_NUM : 1;
	f->var = dm->var;
	f->is_dim = true;
	f->index = k;
	f->slot = w->A + 1 + k;
	f->cell_size = tfs_datatype_size(dm->type);
	f->filters = &dm->filters;
}

static void field_of_attr(struct tfs_writer *w, uint32_t i)
{
	struct tfs__field *f = &w->fields[w->D + i];
	const struct tfs_attr *at = &w->s->attrs[i];

	f->name = at->name;
	f->type = at->type;
	f->cell_val_num = at->cell_val_num;
	f->var = at->var;
	f->nullable = at->nullable;
	f->index = i;
	f->slot = i;
	f->cell_size = f->var ? tfs_datatype_size(at->type)
			      : tfs_attr_cell_size(at);
	f->filters = &at->filters;
}

/* The per-cell timestamps: the slot after the dimensions (fragment.md
 * §1), coordinate filters (consolidated.md §5). */
static void field_of_timestamps(struct tfs_writer *w)
{
	struct tfs__field *f = &w->fields[w->D + w->A];

	f->name = "__timestamps";
	f->type = TFS_UINT64;
	f->cell_val_num = 1;
	f->slot = w->A + 1 + w->D;
	f->cell_size = 8;
	f->filters = &w->s->coords_filters;
	f->is_timestamps = true;
}

/* The fields cells carry: dimensions, then attributes, then the per-cell
 * timestamps if asked for; and the column map appends fill. */
static enum tfs_err make_fields(struct tfs_writer *w, const char *path,
				const struct tfs_write_opts *opts,
				enum tfs_write_layout layout,
				struct tfs_diag *d)
{
	const struct tfs_schema *s = w->s;

	w->D = s->dim_num;
	w->A = s->attr_num;
	w->field_num = w->D + w->A + (opts->cell_timestamps ? 1 : 0);
	if (opts->cell_timestamps &&
	    (s->array_type != TFS_SPARSE || w->version < 15 ||
	     layout != TFS_WRITE_UNORDERED))
		return tfs_fail(
			d, TFS_E_INVALID,
			"array '%s': per-cell timestamps need an unordered "
			"write to a sparse array of format 15 or later",
			path);
	w->fields = tfs_callocn(w->field_num, sizeof(*w->fields));
	w->colmap = tfs_callocn(w->field_num, sizeof(int));
	if (!w->fields || !w->colmap)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < w->D; k++)
		field_of_dim(w, k);
	for (uint32_t i = 0; i < w->A; i++)
		field_of_attr(w, i);
	if (opts->cell_timestamps)
		field_of_timestamps(w);
	return TFS_E_OK;
}

/* A box write: checks the box and picks how its cells reach the tile
 * writer (w->stream, w->tilerow). */
static enum tfs_err plan_box(struct tfs_writer *w, const char *path,
			     const struct tfs_range *box, struct tfs_diag *d)
{
	const struct tfs_schema *s = w->s;
	enum tfs_err e;

	if (s->array_type != TFS_DENSE)
		return tfs_fail(d, TFS_E_INVALID,
				"array '%s': a box write needs a dense array",
				path);
	if (!box)
		return tfs_fail(d, TFS_E_INVALID, "box write without a box");
	if ((e = check_box(w, box, d)))
		return e;
	/* Row-major over the box is the global order when every
	 * dimension but the first stays inside one tile (and the
	 * orders are row-major); then cells need no sorting. */
	w->stream = true;
	for (uint32_t k = 1; k < s->dim_num; k++) {
		uint64_t ext =
			tfs_value_as_u64(s->dims[k].type, s->dims[k].extent);

		if (s->tile_order != TFS_ROW_MAJOR ||
		    s->cell_order != TFS_ROW_MAJOR || ext == 0 ||
		    w->boxlo[k] / ext != w->boxhi[k] / ext)
			w->stream = false;
	}
	/* Otherwise, with row-major tile order, a row of tiles at a
	 * time (dense_box.c). */
	if (!w->stream && s->tile_order == TFS_ROW_MAJOR) {
		w->stream = w->tilerow = true;
		w->row_cells = w->box_cells / (w->boxhi[0] - w->boxlo[0] + 1);
	}
	return TFS_E_OK;
}

/* The thread pool tiles are encoded on: the caller's or our own. */
static enum tfs_err start_pool(struct tfs_writer *w,
			       const struct tfs_write_opts *opts,
			       struct tfs_diag *d)
{
	enum tfs_err e;

	w->threads = opts->threads ? opts->threads : tfs_cpu_count();
	w->pool = opts->pool;
	if (!w->pool) {
		if ((e = tfs_pool_new(w->threads - 1, &w->own_pool)))
			return tfs_fail(d, e, "writer: thread pool: %s",
					tfs_strerror(e));
		w->pool = w->own_pool;
	}
	return TFS_E_OK;
}

/* The external sort that stages appended cells, spilling to
 * opts->spill_dir, else $TMPDIR, else /tmp. */
static enum tfs_err start_sorter(struct tfs_writer *w,
				 const struct tfs_write_opts *opts,
				 struct tfs_diag *d)
{
	struct tfs__sort_opts so;
	const char *spill;
	enum tfs_err e;

	spill = opts->spill_dir;
	if (!spill)
		spill = getenv("TMPDIR");
	if (!spill || !*spill)
		spill = "/tmp";
	memset(&so, 0, sizeof(so));
	so.order = &w->order;
	so.fields = w->fields;
	so.field_num = w->field_num;
	so.memory = opts->memory ? opts->memory : (uint64_t)256 << 20;
	so.spill_dir = spill;
	so.check_dups = (!w->s->allows_dups || w->s->array_type == TFS_DENSE) &&
			!opts->cell_timestamps;
	so.dedup = opts->dedup;
	so.tag_word = opts->tag_word;
	if ((e = tfs__sorter_new(&so, &w->sorter)))
		return tfs_fail(d, e, "out of memory");
	return TFS_E_OK;
}

enum tfs_err tfs_writer_open(const char *path,
			     const struct tfs_write_opts *opts,
			     enum tfs_write_layout layout,
			     const struct tfs_range *box,
			     struct tfs_writer **out, struct tfs_diag *d)
{
	struct tfs_write_opts dflt;
	struct tfs_writer *w;
	enum tfs_err e;

	*out = NULL;
	if (!opts) {
		memset(&dflt, 0, sizeof(dflt));
		opts = &dflt;
	}
	if (!path)
		return tfs_fail(d, TFS_E_INVALID, "writer: no array path");
	w = tfs_callocn(1, sizeof(*w));
	if (!w)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	w->o = *opts;
	w->layout = layout;
	if ((e = open_array(w, path, opts, d)) ||
	    (e = check_writable(w->s, path, d)) ||
	    (e = make_fields(w, path, opts, layout, d)))
		goto out_free_writer;
	tfs__order_init(&w->order, w->s, w->fields);
	if (layout == TFS_WRITE_DENSE_BOX) {
		if ((e = plan_box(w, path, box, d)))
			goto out_free_writer;
	} else if (layout != TFS_WRITE_UNORDERED) {
		e = tfs_fail(d, TFS_E_INVALID, "unknown write layout");
		goto out_free_writer;
	}
	if ((e = start_pool(w, opts, d)) || (e = start_sorter(w, opts, d)))
		goto out_free_writer;
	for (uint32_t k = 0; k < w->D && layout == TFS_WRITE_UNORDERED; k++) {
		w->boxlo[k] = UINT64_MAX;
		w->boxhi[k] = 0;
	}
	if (w->stream && (e = stream_start(w, d)))
		goto out_free_writer;
	*out = w;
	return TFS_E_OK;

out_free_writer:
	tfs_writer_free(w);
	return e;
}

/* ---- Commit ---------------------------------------------------------------- */

/* Cells handed from the sorter to the tile writer at a time. */
#define IDX_BATCH 4096

static void tw_opts(struct tfs_writer *w, struct tfs__tw_opts *to, bool dense,
		    const struct tfs_range *box)
{
	memset(to, 0, sizeof(*to));
	to->vfs = w->vfs;
	to->dir = w->dir;
	to->s = w->s;
	to->fields = w->fields;
	to->field_num = w->field_num;
	to->version = w->version;
	to->key = w->has_key ? w->key : NULL;
	to->pool = w->pool;
	to->jobs = 2 * w->threads;
	to->dense = dense;
	to->box = box;
	to->timestamps = w->o.cell_timestamps;
}

static enum tfs_err write_cells(struct tfs_writer *w, bool dense,
				const struct tfs_range *box,
				struct tfs_write_result *res, struct tfs_diag *d)
{
	struct tfs__tw_opts to;
	struct tfs__tw *tw = NULL;
	const struct tfs__cells *c;
	uint64_t *idx;
	enum tfs_err e;

	tw_opts(w, &to, dense, box);
	idx = tfs_mallocn(IDX_BATCH, sizeof(*idx));
	if (!idx)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if ((e = tfs__sorter_rewind(w->sorter, d)) ||
	    (e = tfs_vfs_mkdir(w->vfs, w->dir, d)) ||
	    (e = tfs__tw_new(&to, &tw, d)))
		goto out;
	for (;;) {
		uint64_t n;

		if ((e = tfs__sorter_next_many(w->sorter, &c, idx, IDX_BATCH, &n,
					       d)))
			goto out;
		if (!n)
			break;
		if ((e = tfs__tw_add_many(tw, c, idx, n, d)))
			goto out;
	}
	if (dense && tfs__sorter_dropped(w->sorter)) {
		/* Dropped duplicates leave the box short: not a dense
		 * fragment after all. */
		e = TFS_E_BUSY;
		goto out;
	}
	e = tfs__tw_finish(tw, &res->bytes, &res->cell_num, d);
out:
	tfs__tw_free(tw);
	tfs_free(idx);
	return e;
}

/* Chooses the fragment's name and timestamps (write.md §2) and makes the
 * folders it goes in. */
static enum tfs_err choose_name(struct tfs_writer *w, struct tfs_diag *d)
{
	struct tfs_write_result *res = &w->res;
	uint64_t t1, t2;
	enum tfs_err e;
	const char *ext = w->version >= 12 ? ".wrt" : ".ok";

	if (w->o.t1 || w->o.t2) {
		t1 = w->o.t1;
		t2 = w->o.t2 ? w->o.t2 : w->o.t1;
	} else {
		uint64_t max, now = tfs__now_ms();

		if ((e = tfs__max_timestamp(w->vfs, w->path, false, &max, d)))
			return e;
		t1 = t2 = max >= now ? max + 1 : now;
	}
	if ((e = tfs_name_new(res->name, sizeof(res->name), t1, t2, w->version,
			      "")))
		return tfs_fail(d, e, "no random bytes for a fragment name");
	res->t1 = t1;
	res->t2 = t2;
	if (w->version >= 12) {
		w->parent = tfs_path_join(w->path, "__fragments");
		w->cdir = tfs_path_join(w->path, "__commits");
	} else {
		w->parent = tfs_strdup(w->path);
		w->cdir = tfs_strdup(w->path);
	}
	w->commit = w->cdir ? tfs_malloc(strlen(w->cdir) + strlen(res->name) + 6)
			    : NULL;
	if (w->commit)
		snprintf(w->commit, strlen(w->cdir) + strlen(res->name) + 6,
			 "%s/%s%s", w->cdir, res->name, ext);
	if (!w->parent || !w->commit)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if ((e = tfs_vfs_mkdir(w->vfs, w->parent, d)) ||
	    (e = tfs_vfs_mkdir(w->vfs, w->cdir, d)))
		return e;
	w->dir = tfs_path_join(w->parent, res->name);
	if (!w->dir)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

/* The fragment is complete: make it durable, then commit it last. */
static enum tfs_err commit_last(struct tfs_writer *w, struct tfs_diag *d)
{
	enum tfs_err e;

	if ((e = tfs_vfs_fsync(w->vfs, w->dir, d)) ||
	    (e = tfs_vfs_fsync(w->vfs, w->parent, d)))
		return e;
	if ((e = tfs__write_file(w->vfs, w->commit, "", 0, d)) ||
	    (e = tfs_vfs_fsync(w->vfs, w->cdir, d))) {
		struct tfs_diag ld;

		tfs_diag_init(&ld);
		(void)tfs_vfs_remove(w->vfs, w->commit, &ld);
		return e;
	}
	return TFS_E_OK;
}

/* Streaming box writes start at open. */
static enum tfs_err stream_start(struct tfs_writer *w, struct tfs_diag *d)
{
	struct tfs__tw_opts to;
	struct tfs_range *box = w->stream_box;
	enum tfs_err e;

	box_ranges(w, box);
	if ((e = tfs__cells_init(&w->scratch, w->field_num)))
		return tfs_fail(d, e, "out of memory");
	if ((e = choose_name(w, d)))
		return e;
	if ((e = tfs_vfs_mkdir(w->vfs, w->dir, d)))
		return e;
	tw_opts(w, &to, true, box);
	return tfs__tw_new(&to, &w->tw, d);
}

/* Whether the cells given fill a dense box: the box layout's cells, or
 * a dense array's bounding box holding exactly total cells. */
static enum tfs_err commit_is_dense(const struct tfs_writer *w, uint64_t total,
				    bool *dense, struct tfs_diag *d)
{
	*dense = false;
	if (w->layout == TFS_WRITE_DENSE_BOX) {
		if (total != w->box_cells)
			return tfs_fail(d, TFS_E_INVALID,
					"box of %" PRIu64 " cells: %" PRIu64
					" cells given",
					w->box_cells, total);
		*dense = true;
	} else if (w->s->array_type == TFS_DENSE) {
		uint64_t vol = 1;
		bool fits = true;

		for (uint32_t k = 0; k < w->D && fits; k++) {
			uint64_t n = w->boxhi[k] - w->boxlo[k] + 1;

			if (n == 0 || vol > UINT64_MAX / n)
				fits = false;
			else
				vol *= n;
		}
		*dense = fits && vol == total;
	}
	return TFS_E_OK;
}

/* The sorted cells of a write that was not streamed, as a dense tile box
 * when dense, else (or when the dense write refuses) as sparse cells. */
static enum tfs_err commit_sorted(struct tfs_writer *w, bool *dense,
				  struct tfs_diag *d)
{
	struct tfs_range box[128];
	enum tfs_err e;

	box_ranges(w, box);
	if ((e = choose_name(w, d)))
		return e;
	e = write_cells(w, *dense, box, &w->res, d);
	if (e == TFS_E_BUSY) {
		tfs__remove_tree(w->vfs, w->dir);
		*dense = false;
		w->res.bytes = 0;
		e = write_cells(w, false, box, &w->res, d);
	}
	return e;
}

enum tfs_err tfs_writer_commit(struct tfs_writer *w,
			       struct tfs_write_result *res,
			       struct tfs_diag *d)
{
	struct tfs_write_result dummy;
	uint64_t total;
	bool dense = false;
	enum tfs_err e;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	if (!w)
		return tfs_fail(d, TFS_E_INVALID, "writer: none");
	if (w->failed || w->committed)
		return tfs_fail(d, TFS_E_INVALID,
				"writer: commit after a failure or commit");
	w->failed = true;
	total = w->stream ? w->appended : tfs__sorter_total(w->sorter);
	if (total == 0) {
		/* Nothing to write: a streaming write's folder goes. */
		if (w->dir)
			tfs__remove_tree(w->vfs, w->dir);
		w->committed = true;
		w->failed = false;
		return TFS_E_OK;
	}
	if ((e = commit_is_dense(w, total, &dense, d)))
		return e;
	if (w->stream) {
		if (w->scratch.cell_num)
			return tfs_fail(d, TFS_E_INTERNAL,
					"box cells left unwritten");
		if ((e = tfs__tw_finish(w->tw, &w->res.bytes, &w->res.cell_num,
					d)))
			return e;
	} else if ((e = commit_sorted(w, &dense, d))) {
		return e;
	}
	w->res.dense = dense;
	if ((e = commit_last(w, d)))
		return e;
	w->committed = true;
	w->failed = false;
	*res = w->res;
	return TFS_E_OK;
}
