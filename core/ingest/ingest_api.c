/* The public CSV entry points (tfs_write.h): the rows-to-batches engine
 * (csv_ingest.c) feeding a fragment writer, which commits only after the
 * last row, so a bad row anywhere leaves the array as it was; and arrays
 * made from a CSV with an inferred schema, undone on failure. */
#include "ingest_internal.h"

#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tilefs/tilefs.h"

struct writer_sink {
	struct tfs_writer *w;
	const char *name;
};

/* The writer names the field and the line; the file name is added. */
static enum tfs_err writer_append(void *ctx, const struct tfs_batch *b,
				  const uint64_t *tags, struct tfs_diag *d)
{
	struct writer_sink *ws = ctx;
	struct tfs_diag wd;
	enum tfs_err e;

	tfs_diag_init(&wd);
	e = tfs_writer_append(ws->w, b, tags, &wd);
	if (e)
		return tfs_fail(d, e, "%s: %s", ws->name, tfs_diag_msg(&wd));
	return TFS_E_OK;
}

static enum tfs_err writer_commit(struct writer_sink *ws,
				  struct tfs_write_result *r, struct tfs_diag *d)
{
	struct tfs_diag wd;
	enum tfs_err e;

	tfs_diag_init(&wd);
	e = tfs_writer_commit(ws->w, r, &wd);
	if (e)
		return tfs_fail(d, e, "%s: %s", ws->name, tfs_diag_msg(&wd));
	return TFS_E_OK;
}

static void write_opts(struct tfs_write_opts *wo, const struct tfs_ingest_opts *opts)
{
	memset(wo, 0, sizeof(*wo));
	if (opts)
		*wo = opts->write;
	if (!wo->tag_word)
		wo->tag_word = "line";
}

/* True when the file exists and holds no bytes (SPEC §6: commits
 * nothing, not an error). */
static bool empty_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

static enum tfs_err open_writer(struct writer_sink *ws, const char *array_path,
				const struct tfs_write_opts *wo,
				enum tfs_write_layout layout,
				const struct tfs_range *box, struct tfs_diag *d)
{
	struct tfs_diag wd;
	enum tfs_err e;

	tfs_diag_init(&wd);
	if ((e = tfs_writer_open(array_path, wo, layout, box, &ws->w, &wd)))
		return tfs_fail(d, e, "%s: %s", ws->name, tfs_diag_msg(&wd));
	return TFS_E_OK;
}

/* An appended file's header names every attribute (nullable ones may be
 * left out) and nothing else, in any order; else one line saying both. */
static enum tfs_err header_matches(const struct tfs_schema *s,
				   const struct tfs__csv_lexer *lx,
				   const char *name, struct tfs_diag *d)
{
	struct tfs_buf got, want;
	bool ok = true;
	enum tfs_err e = TFS_E_OK;

	for (size_t k = 0; k < lx->field_num; k++) {
		bool known = false;

		for (uint32_t i = 0; i < s->attr_num; i++)
			if (lx->fields[k].len == strlen(s->attrs[i].name) &&
			    memcmp(lx->fields[k].p, s->attrs[i].name,
				   lx->fields[k].len) == 0)
				known = true;
		ok = ok && known;
	}
	for (uint32_t i = 0; i < s->attr_num; i++) {
		bool seen = false;

		for (size_t k = 0; k < lx->field_num; k++)
			if (lx->fields[k].len == strlen(s->attrs[i].name) &&
			    memcmp(lx->fields[k].p, s->attrs[i].name,
				   lx->fields[k].len) == 0)
				seen = true;
		ok = ok && (seen || s->attrs[i].nullable);
	}
	if (ok)
		return TFS_E_OK;
	tfs_buf_init(&got, 512);
	tfs_buf_init(&want, 512);
	for (size_t k = 0; k < lx->field_num && !e; k++) {
		char t[64];

		e = tfs_buf_printf(&got, "%s%s", k ? "," : "",
				   tfs__msg_text(t, sizeof(t), lx->fields[k].p,
						 lx->fields[k].len));
	}
	for (uint32_t i = 0; i < s->attr_num && !e; i++)
		e = tfs_buf_printf(&want, "%s%s", i ? "," : "",
				   s->attrs[i].name);
	if (!e)
		e = tfs_buf_append_u8(&got, 0);
	if (!e)
		e = tfs_buf_append_u8(&want, 0);
	if (e)
		e = tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", name);
	else
		e = tfs_fail(d, TFS_E_INVALID,
			     "%s: line 1: the columns '%s' are not the array's "
			     "'%s' (in any order; rows without '%s' are "
			     "appended)",
			     name, (const char *)got.data,
			     (const char *)want.data, s->dims[0].name);
	tfs_buf_release(&got);
	tfs_buf_release(&want);
	return e;
}

/* lo and hi: the range of rows appended after the last one the array
 * holds along dim (the domain's start when it is empty); false when they
 * leave the domain. */
static bool append_range(const struct tfs_dim *dim, const struct tfs_array *a,
			 uint64_t rows, uint8_t lo[8], uint8_t hi[8])
{
	size_t size = tfs_datatype_size(dim->type);
	bool is_signed = tfs_datatype_class(dim->type) == TFS_CLASS_SIGNED;
	struct tfs_range ned;
	uint64_t start, top;

	/* Both as offsets from the domain's start, so one unsigned
	 * comparison serves signed and unsigned types. */
	uint64_t base = is_signed ? (uint64_t)tfs_value_as_i64(dim->type, dim->domain[0])
				  : tfs_value_as_u64(dim->type, dim->domain[0]);

	top = (is_signed ? (uint64_t)tfs_value_as_i64(dim->type, dim->domain[1])
			 : tfs_value_as_u64(dim->type, dim->domain[1])) - base;
	start = 0;
	if (tfs_array_non_empty_domain(a, &ned)) {
		uint64_t last = (is_signed ? (uint64_t)tfs_value_as_i64(dim->type, ned.hi)
					   : tfs_value_as_u64(dim->type, ned.hi)) - base;

		if (last == top)
			return false;
		start = last + 1;
	}
	if (top - start < rows - 1)
		return false;
	tfs_put_uint(lo, size, base + start);
	tfs_put_uint(hi, size, base + start + (rows - 1));
	return true;
}

/* A CSV without the dimension's column for a dense array of one integer
 * dimension (an array made from a CSV, or any such array) appends: its
 * rows take the coordinates after the last written one (the domain's
 * low end in an empty array). *append says whether the file is one; box
 * then holds the rows' range (values of the dimension type in lo/hi),
 * *rows their count (0: a header alone, nothing to write). */
static enum tfs_err append_box(const char *array_path, const char *csv_path,
			       const char *name, const struct tfs_schema *s,
			       const struct tfs_write_opts *wo, bool *append,
			       uint8_t lo[8], uint8_t hi[8], uint64_t *rows,
			       struct tfs_diag *d)
{
	const struct tfs_dim *dim = &s->dims[0];
	struct tfs__csv_lexer lx;
	struct tfs_open_opts oo;
	struct tfs_array *a = NULL;
	struct tfs_diag od;
	bool got;
	enum tfs_err e;

	*append = false;
	*rows = 0;
	if (s->array_type != TFS_DENSE || s->dim_num != 1 || dim->var ||
	    !tfs_datatype_is_integer(dim->type) ||
	    tfs_datatype_is_datetime(dim->type) || !dim->has_domain)
		return TFS_E_OK;
	if ((e = tfs__csv_open(&lx, csv_path, name, 0, d)))
		return e;
	if ((e = tfs__csv_next(&lx, &got, d)) || !got)
		goto out;
	for (size_t k = 0; k < lx.field_num; k++)
		if (lx.fields[k].len == strlen(dim->name) &&
		    memcmp(lx.fields[k].p, dim->name, lx.fields[k].len) == 0)
			goto out;
	*append = true;
	if ((e = header_matches(s, &lx, name, d)))
		goto out;
	for (;;) {
		if ((e = tfs__csv_next(&lx, &got, d)) || !got)
			break;
		++*rows;
	}
	if (e || *rows == 0)
		goto out;
	memset(&oo, 0, sizeof(oo));
	oo.vfs = wo->vfs;
	oo.key = wo->key;
	oo.threads = 1;
	/* Every fragment, also those of writes just made whose timestamps
	 * run ahead of the clock. */
	oo.timestamp = UINT64_MAX - 1;
	tfs_diag_init(&od);
	if ((e = tfs_array_open(array_path, &oo, &a, &od))) {
		e = tfs_fail(d, e, "%s: %s", name, tfs_diag_msg(&od));
		goto out;
	}
	if (!append_range(dim, a, *rows, lo, hi))
		goto full;
	goto out;
full:
	e = tfs_fail(d, TFS_E_RANGE,
		     "%s: %" PRIu64 " rows to append after the last one "
		     "leave the domain of '%s'",
		     name, *rows, dim->name);
out:
	tfs_array_close(a);
	tfs__csv_close(&lx);
	return e;
}

/* How a file is written: the writer's layout and box, and which
 * columns the rows hold. */
struct plan {
	enum tfs_write_layout layout;
	struct tfs_range box[128];
	uint8_t bytes[2][128][8];
	bool no_dims;   /* rows without dimension columns */
	bool skip_dims; /* dimension columns read by box detection */
	bool nothing;   /* a header alone appended: nothing to write */
};

/* A dense array whose file holds exactly one box in row-major order, with
 * row-major tiles, is written as that box (streamed by the writer). */
/* Not inlined: GCC then misjudges the size of p->bytes. */
__attribute__((noinline)) static enum tfs_err
plan_box(const struct tfs_schema *s, const char *csv_path,
			     const char *name, struct plan *p,
			     struct tfs_diag *d)
{
	bool is_box = false;
	enum tfs_err e;

	if (s->array_type != TFS_DENSE || s->tile_order != TFS_ROW_MAJOR)
		return TFS_E_OK;
	if ((e = tfs__box_detect(s, csv_path, NULL, 0, name, 0, &is_box,
				 p->bytes, d)) ||
	    !is_box)
		return e;
	for (uint32_t k = 0; k < s->dim_num; k++)
		p->box[k] = (struct tfs_range){
			.lo = p->bytes[0][k], .hi = p->bytes[1][k],
			.lo_len = tfs_datatype_size(s->dims[k].type),
			.hi_len = tfs_datatype_size(s->dims[k].type)};
	p->layout = TFS_WRITE_DENSE_BOX;
	p->skip_dims = true;
	return TFS_E_OK;
}

/* The plan of a file written into an existing array: appended rows (no
 * dimension column), one box, or unordered cells. */
static enum tfs_err plan_write(const char *array_path, const char *csv_path,
			       const struct tfs_write_opts *wo, const char *name,
			       struct plan *p, struct tfs_diag *d)
{
	struct writer_sink ws = {.name = name};
	const struct tfs_schema *s;
	uint64_t rows;
	bool append;
	enum tfs_err e;

	p->layout = TFS_WRITE_UNORDERED;
	if ((e = open_writer(&ws, array_path, wo, TFS_WRITE_UNORDERED, NULL, d)))
		return e;
	s = tfs_writer_schema(ws.w);
	if ((e = append_box(array_path, csv_path, name, s, wo, &append,
			    p->bytes[0][0], p->bytes[1][0], &rows, d)))
		goto out;
	if (!append) {
		e = plan_box(s, csv_path, name, p, d);
		goto out;
	}
	p->nothing = rows == 0;
	p->layout = TFS_WRITE_DENSE_BOX;
	p->no_dims = true;
	p->box[0] = (struct tfs_range){.lo = p->bytes[0][0],
				       .hi = p->bytes[1][0],
				       .lo_len = tfs_datatype_size(s->dims[0].type),
				       .hi_len = tfs_datatype_size(s->dims[0].type)};
out:
	tfs_writer_free(ws.w);
	return e;
}

static enum tfs_err open_planned(struct writer_sink *ws, const char *array_path,
				 const struct tfs_write_opts *wo,
				 const struct plan *p, struct tfs__ingest_run *run,
				 struct tfs_diag *d)
{
	enum tfs_err e;

	tfs_writer_free(ws->w);
	ws->w = NULL;
	if ((e = open_writer(ws, array_path, wo, p->layout,
			     p->layout == TFS_WRITE_DENSE_BOX ? p->box : NULL, d)))
		return e;
	run->schema = tfs_writer_schema(ws->w);
	run->enums = tfs_writer_enumerations(ws->w, &run->enum_num);
	run->no_dims = p->no_dims;
	run->skip_dims = p->skip_dims;
	return TFS_E_OK;
}

/* inferred: the array was made from this file (tfs_ingest_csv_new): a
 * box of all its rows, no dimension columns. Otherwise, with the array
 * locked (tfs_array_lock: two appends at once must not choose the same
 * rows), the file is planned (plan_write), values its enumerations lack extend them
 * (enum_grow.c; undone should the write fail), and the rows are parsed
 * into the writer, which commits after the last one. */
static enum tfs_err ingest(const char *array_path, const char *csv_path,
			   const struct tfs_ingest_opts *opts, bool inferred,
			   const struct tfs_range *inferred_box,
			   struct tfs_ingest_result *result, struct tfs_diag *d)
{
	struct tfs_write_opts wo;
	struct writer_sink ws = {.name = opts && opts->display_name ? opts->display_name
								   : csv_path};
	struct tfs__ingest_run run = {
		.csv_path = csv_path,
		.display_name = ws.name,
		.pass = inferred ? 2 : 1,
		.passes = inferred ? 2 : 1,
		.progress = opts ? opts->progress : NULL,
		.progress_arg = opts ? opts->progress_arg : NULL,
	};
	struct tfs__ingest_sink sink = {.append = writer_append, .ctx = &ws};
	struct tfs__enum_grow eg = {0};
	struct plan *p = tfs_callocn(1, sizeof(*p));
	int lock = -1;
	enum tfs_err e;

	if (!p)
		return tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", ws.name);
	write_opts(&wo, opts);
	if (!inferred)
		lock = tfs_array_lock(array_path, wo.vfs);
	if (inferred) {
		p->layout = TFS_WRITE_DENSE_BOX;
		p->box[0] = *inferred_box;
		p->no_dims = true;
	} else if ((e = plan_write(array_path, csv_path, &wo, ws.name, p, d)) ||
		   p->nothing) {
		goto out;
	}
	if ((e = open_planned(&ws, array_path, &wo, p, &run, d)))
		goto out;
	if (!inferred && run.enum_num) {
		if ((e = tfs__enum_grow(&eg, array_path, &run, &wo, d)))
			goto out;
		if (eg.evolved &&
		    (e = open_planned(&ws, array_path, &wo, p, &run, d)))
			goto out;
	}
	if ((e = tfs__ingest_run(&run, &sink, d)) ||
	    (e = writer_commit(&ws, &result->write, d)))
		goto out;
	result->rows = run.rows;
	result->enum_values_added = eg.values;
out:
	if (e)
		tfs__enum_grow_undo(&eg);
	tfs__enum_grow_release(&eg);
	tfs_writer_free(ws.w);
	tfs_array_unlock(lock);
	tfs_free(p);
	return e;
}

enum tfs_err tfs_ingest_csv(const char *array_path, const char *csv_path,
			    const struct tfs_ingest_opts *opts,
			    struct tfs_ingest_result *result,
			    struct tfs_diag *d)
{
	memset(result, 0, sizeof(*result));
	if (empty_file(csv_path))
		return TFS_E_OK;
	return ingest(array_path, csv_path, opts, false, NULL, result, d);
}

/* Removes what tfs_ingest_csv_new made after a failure: the folder's
 * contents, and the folder itself unless it was there before. */
static void remove_tree(struct tfs_vfs *v, const char *path, bool keep_top)
{
	struct tfs_dirlist l = {0};
	struct tfs_stat st;

	if (tfs_vfs_stat(v, path, &st, NULL) || !st.exists)
		return;
	if (st.is_dir && !tfs_vfs_list(v, path, &l, NULL)) {
		for (size_t i = 0; i < l.count; i++) {
			char *child = tfs_path_join(path, l.names[i]);

			if (child)
				remove_tree(v, child, false);
			tfs_free(child);
		}
		tfs_dirlist_release(&l);
	}
	if (!keep_top)
		(void)tfs_vfs_remove(v, path, NULL);
}

static void undo_create(const struct tfs_write_opts *wo, const char *path,
			bool existed)
{
	struct tfs_vfs *posix = NULL, *v = wo->vfs;

	if (!v && tfs_vfs_posix_new(&posix) == TFS_E_OK)
		v = posix;
	if (v)
		remove_tree(v, path, existed);
	tfs_vfs_free(posix);
}

static bool empty_folder(const struct tfs_write_opts *wo, const char *path)
{
	struct tfs_vfs *posix = NULL, *v = wo->vfs;
	struct tfs_dirlist l = {0};
	bool empty = false;

	if (!v && tfs_vfs_posix_new(&posix) == TFS_E_OK)
		v = posix;
	if (v && !tfs_vfs_list(v, path, &l, NULL)) {
		empty = l.count == 0;
		tfs_dirlist_release(&l);
	}
	tfs_vfs_free(posix);
	return empty;
}

static bool path_exists(const struct tfs_write_opts *wo, const char *path)
{
	struct tfs_vfs *posix = NULL, *v = wo->vfs;
	struct tfs_stat st;
	bool exists = false;

	if (!v && tfs_vfs_posix_new(&posix) == TFS_E_OK)
		v = posix;
	if (v)
		exists = !tfs_vfs_stat(v, path, &st, NULL) && st.exists;
	tfs_vfs_free(posix);
	return exists;
}

enum tfs_err tfs_ingest_csv_new(const char *array_path, const char *csv_path,
				const struct tfs_ingest_opts *opts,
				struct tfs_ingest_result *result,
				struct tfs_diag *d)
{
	const char *name = opts && opts->display_name ? opts->display_name : csv_path;
	struct tfs_write_opts wo;
	struct tfs_schema s;
	struct tfs_diag wd;
	uint64_t rows, lo = 0, hi;
	bool existed;
	enum tfs_err e;

	memset(result, 0, sizeof(*result));
	write_opts(&wo, opts);
	if ((e = tfs__schema_infer(&s, &rows, csv_path, name, 0,
				   opts ? opts->progress : NULL,
				   opts ? opts->progress_arg : NULL, d)))
		return e;
	/* An empty folder may be made the array; anything else there makes
	 * tfs_array_create refuse. Only what this call made is undone. */
	existed = path_exists(&wo, array_path);
	/* Something already there that is not an empty folder is never
	 * touched, whatever fails. */
	if (existed && !empty_folder(&wo, array_path)) {
		tfs_schema_release(&s);
		return tfs_fail(d, TFS_E_EXISTS, "%s: '%s' exists and is not an empty folder",
				name, array_path);
	}
	tfs_diag_init(&wd);
	e = tfs_array_create(array_path, &s, &wo, &wd);
	tfs_schema_release(&s);
	if (e) {
		undo_create(&wo, array_path, existed);
		return tfs_fail(d, e, "%s: %s", name, tfs_diag_msg(&wd));
	}
	result->created = true;
	if (rows == 0)
		return TFS_E_OK;
	hi = rows - 1;
	struct tfs_range box = {.lo = (const uint8_t *)&lo, .hi = (const uint8_t *)&hi,
				.lo_len = 8, .hi_len = 8};

	e = ingest(array_path, csv_path, opts, true, &box, result, d);
	if (!e)
		return TFS_E_OK;
	undo_create(&wo, array_path, existed);
	result->created = false;
	return e;
}
