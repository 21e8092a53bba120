/* Listings of the virtual tree (SPEC §2): the names a folder of the mount
 * holds, for a plain or group folder of SOURCE, an array's folder, a
 * field's folder with its slice files, tiles, metadata, fragments and
 * versions. What a name means is vtree.c's. */
#include "vtree_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "png_picture.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"

/* Pictures of a whole field listed at most this large (512 x 512): a
 * file manager that lists a folder renders what it shows, and a picture
 * of 1 MiB of pixels stays under pcmanfm's default thumbnail size limit
 * (2 MB) whatever the data. A stride shrinks larger ones; preview.png
 * shows every array. */
#define LIST_PNG_PIXELS ((uint64_t)1 << 18)

/* Tiles listed in a tiles/ folder at most. */
#define MAX_TILE_FILES 10000

/* A field name that can be a file name. */
static bool field_listable(const char *name)
{
	return *name && strchr(name, '/') == NULL && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct name_list {
	char **names;
	size_t n, cap;
	bool failed;
};

static bool name_list_add(void *ctx, const char *name, const char *real)
{
	struct name_list *nl = ctx;

	/* A group member that a subfolder's name takes stays hidden. */
	for (size_t i = 0; real && i < nl->n; i++)
		if (strcmp(nl->names[i], name) == 0)
			return true;
	if (tfs_grow(&nl->names, &nl->cap, nl->n + 1, sizeof(*nl->names))) {
		nl->failed = true;
		return false;
	}
	if (!(nl->names[nl->n] = tfs_strdup(name))) {
		nl->failed = true;
		return false;
	}
	nl->n++;
	return true;
}

/* Threads that learn the times of a folder's arrays at most, and the
 * subfolders that make it worth one more. */
#define TIMES_THREADS 4
#define TIMES_PER_THREAD 32

/* The arrays among a folder's subfolders whose times a listing's stats
 * will ask for next (ls -l, a file manager): learnt beforehand, several
 * at a time, into tfsd_arrays_newest's memory. */
struct times_job {
	struct tfsd *fs;
	const struct tfsd_node *dir;
	char *const *names;
	size_t n;
	size_t next; /* atomic */
};

static void *times_run(void *arg)
{
	struct times_job *job = arg;
	struct tfsd_arrays *arrays = job->fs->arrays;

	for (;;) {
		size_t i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
		enum tfs_object kind;
		struct tfs_diag d;
		char *src, *rel;
		uint64_t ms;

		if (i >= job->n)
			break;
		src = tfsd__path_join(job->dir->src, job->names[i]);
		rel = tfsd__path_join(job->dir->rel, job->names[i]);
		tfs_diag_init(&d);
		/* Failures are the stat's to report, not the listing's. */
		if (src && rel && !tfsd_arrays_kind(arrays, src, &kind, &d) &&
		    kind == TFS_OBJECT_ARRAY &&
		    tfsd_arrays_newest(arrays, rel, 0, &ms, &d))
			tfs_diag_init(&d);
		tfs_free(src);
		tfs_free(rel);
	}
	return NULL;
}

static void learn_times(struct tfsd *fs, const struct tfsd_node *dir,
			char *const *names, size_t n)
{
	struct times_job job = {.fs = fs, .dir = dir, .names = names, .n = n};
	pthread_t tid[TIMES_THREADS];
	size_t threads = n / TIMES_PER_THREAD, started = 0;

	if (threads > TIMES_THREADS)
		threads = TIMES_THREADS;
	if (threads < 2)
		return; /* few: each stat learns its own */
	for (size_t t = 0; t < threads; t++)
		if (pthread_create(&tid[started], NULL, times_run, &job) == 0)
			started++;
	for (size_t t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
}

/* Names of a listing whose stats are asked in one call. */
#define STAT_BATCH 256

/* Adds to nl the names among names[0..n) that are folders (a link is
 * none), hidden and reserved names left out. */
static void add_subfolders(struct tfs_vfs *vfs, const char *dir,
			   char *const *names, size_t n, struct name_list *nl)
{
	const char *ask[STAT_BATCH];
	struct tfs_stat st[STAT_BATCH];
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (names[i][0] != '.' && strncmp(names[i], "__", 2) != 0)
			ask[k++] = names[i];
	if (tfs_vfs_stat_names(vfs, dir, ask, k, st, NULL))
		return;
	for (size_t i = 0; i < k && !nl->failed; i++)
		if (st[i].exists && st[i].is_dir)
			name_list_add(nl, ask[i], NULL);
}

static enum tfs_err list_folder(struct tfsd *fs, const struct tfsd_node *dir,
				tfsd_list_fn fn, void *ctx, struct tfs_diag *d)
{
	struct tfs_vfs *vfs = tfsd_arrays_vfs(fs->arrays);
	struct tfs_dirlist l;
	struct name_list nl = {0};
	struct tfs_diag ld;
	enum tfs_err e;

	tfs_diag_init(&ld);
	e = tfs_vfs_list(vfs, dir->src, &l, &ld);
	if (e)
		return tfs_fail(d, e == TFS_E_PERM || e == TFS_E_NOMEM ? e
								       : TFS_E_IO,
				"folder '%s': %s", dir->src, tfs_diag_msg(&ld));
	/* Subfolders only, and not through a symbolic link. */
	for (size_t i = 0; !nl.failed && i < l.count; i += STAT_BATCH)
		add_subfolders(vfs, dir->src, l.names + i,
			       l.count - i < STAT_BATCH ? l.count - i
							: STAT_BATCH,
			       &nl);
	tfs_dirlist_release(&l);
	e = TFS_E_OK;
	if (!nl.failed)
		tfsd__group_outside_members(fs, dir, name_list_add, &nl);
	if (nl.failed) {
		e = TFS_E_NOMEM;
	} else {
		/* An empty folder has no list (qsort takes no NULL). */
		if (nl.n > 1)
			qsort(nl.names, nl.n, sizeof(*nl.names), name_cmp);
		learn_times(fs, dir, nl.names, nl.n);
		for (size_t i = 0; i < nl.n; i++)
			if (!fn(ctx, nl.names[i], true))
				break;
	}
	for (size_t i = 0; i < nl.n; i++)
		tfs_free(nl.names[i]);
	tfs_free(nl.names);
	return e ? tfs_fail(d, e, "folder '%s': out of memory", dir->src) : e;
}

/* Emits name, or "__name" when a field takes name. */
static bool emit_special(const struct tfs_schema *s, const char *name,
			 bool is_dir, tfsd_list_fn fn, void *ctx)
{
	char esc[64];

	if (tfs_schema_field_index(s, name) < 0)
		return fn(ctx, name, is_dir);
	snprintf(esc, sizeof(esc), "__%s", name);
	return fn(ctx, esc, is_dir);
}

/* Whether the picture of the whole non-empty domain (sel) is listed. */
static bool picture_listable(const struct tfsd_arr *arr, const char *sel,
			     size_t len)
{
	struct tfsr_sel *parsed = NULL;
	uint32_t ky, kx;
	bool ok;

	if (tfsr_sel_parse(sel, len, arr->schema, arr->ned, &parsed, NULL))
		return false;
	ok = !tfsr_png_sel_check(parsed, arr->schema, &ky, &kx, NULL) &&
	     parsed->dims[ky].count * parsed->dims[kx].count <= LIST_PNG_PIXELS;
	tfsr_sel_free(parsed);
	return ok;
}

/* Emits slice[NED]EXT for each format that takes the field (-1: every
 * field), in the renderer table's order. */
static enum tfs_err emit_slices(struct tfsd *fs, struct tfsd_arr *arr,
				int field, bool escape, bool filtered,
				tfsd_list_fn fn,
				void *ctx)
{
	struct tfs_buf sel, name;
	enum tfs_err e;

	if (!arr->has_ned)
		return TFS_E_OK;
	tfs_buf_init(&sel, TFS_BUF_NO_MAX);
	tfs_buf_init(&name, TFS_BUF_NO_MAX);
	e = tfsr_sel_format_ned(&sel, arr->schema, arr->ned);
	for (size_t i = 0; !e && i < TFSR_FMT_NUM; i++) {
		const struct tfsr_renderer *r = &tfsr_renderers[i];

		if (!tfsr_renderer_takes(r, arr->schema, field, NULL) ||
		    ((r->flags & TFSR_R_IMAGE) &&
		     (filtered ||
		      !picture_listable(arr, (const char *)sel.data,
					sel.len))) ||
		    !tfsd_slice_listable(fs, arr, field, r->fmt,
					 (const char *)sel.data, sel.len))
			continue;
		name.len = 0;
		e = tfs_buf_printf(&name, "%sslice[%.*s]%s%c",
				   escape ? "__" : "", (int)sel.len,
				   (const char *)sel.data, r->ext, '\0');
		if (!e && !fn(ctx, (const char *)name.data, false))
			break;
	}
	tfs_buf_release(&sel);
	tfs_buf_release(&name);
	return e;
}

static enum tfs_err list_array(struct tfsd *fs, const struct tfsd_node *dir,
			       tfsd_list_fn fn, void *ctx, struct tfs_diag *d)
{
	const struct tfs_schema *s;
	struct tfsd_arr *arr;
	bool escape = false;
	enum tfs_err e;

	e = tfsd__node_open(fs, dir, &arr, d);
	if (e)
		return e;
	s = arr->schema;
	for (size_t i = 0; i < tfsd__array_special_num; i++) {
		bool is_dir = strchr(tfsd__array_specials[i], '.') == NULL;

		/* History is reachable by name, listed on request only. */
		if ((dir->version_view || !fs->cfg.list_history) &&
		    strcmp(tfsd__array_specials[i], "versions") == 0)
			continue;
		if (dir->version_view && !fs->cfg.list_history &&
		    strcmp(tfsd__array_specials[i], "fragments") == 0)
			continue;
		/* Listed with an exact size only (tfsd_slice_listable). */
		if (strcmp(tfsd__array_specials[i], "data.csv") == 0 &&
		    !tfsd_slice_listable(fs, arr, -1, TFSR_FMT_CSV, "", 0))
			continue;
		if (dir->where && strcmp(tfsd__array_specials[i], "data.csv") != 0)
			continue;
		if (!emit_special(s, tfsd__array_specials[i], is_dir, fn, ctx))
			goto out_put;
	}
	if (tfsd__has_preview(dir, arr, -1) &&
	    !emit_special(s, "preview.png", false, fn, ctx))
		goto out_put;
	for (uint32_t i = 0; i < tfs_schema_field_count(s); i++) {
		struct tfs_field_info f;

		tfs_schema_field(s, (int)i, &f);
		if (tfs_schema_field_index(s, f.name) == (int)i && field_listable(f.name) &&
		    strncmp(f.name, "slice[", 6) != 0 &&
		    !fn(ctx, f.name, true))
			goto out_put;
		if (strncmp(f.name, "slice[", 6) == 0)
			escape = true;
	}
	e = emit_slices(fs, arr, -1, escape, dir->where != NULL, fn, ctx);
	if (e)
		e = tfs_fail(d, e, "array '%s': cannot list slices", dir->rel);
out_put:
	tfsd_arr_put(fs->arrays, arr);
	return e;
}

static enum tfs_err list_field(struct tfsd *fs, const struct tfsd_node *dir,
			       tfsd_list_fn fn, void *ctx, struct tfs_diag *d)
{
	struct tfs_field_info f;
	enum tfs_err e;

	tfs_schema_field(dir->arr->schema, dir->field, &f);
	if (fs->cfg.list_history && !fn(ctx, "tiles", true))
		return TFS_E_OK;
	if (tfsd__has_preview(dir, dir->arr, dir->field) && !fn(ctx, "preview.png", false))
		return TFS_E_OK;
	if (!f.is_dim && !fn(ctx, "stats.json", false))
		return TFS_E_OK;
	e = emit_slices(fs, dir->arr, dir->field, false, dir->where != NULL,
			fn, ctx);
	return e ? tfs_fail(d, e, "cannot list '%s'", f.name) : e;
}

/* Appends the SEL text of tile `idx` along dimension k, clipped to the
 * non-empty domain; false when the dimension has no integer tiling. */
/* Whether a dimension has integer tiles we can name in int64. */
static bool tileable(const struct tfs_field_info *dim, const struct tfs_range *ned)
{
	if (!dim->has_extent || !dim->has_domain || dim->var ||
	    tfs_datatype_class(dim->type) == TFS_CLASS_FLOAT ||
	    tfs_value_as_i64(dim->type, dim->extent) <= 0)
		return false;
	if (tfs_datatype_class(dim->type) == TFS_CLASS_UNSIGNED &&
	    (tfs_value_as_u64(dim->type, dim->domain_lo) > INT64_MAX ||
	     tfs_value_as_u64(dim->type, dim->domain_hi) > INT64_MAX ||
	     tfs_value_as_u64(dim->type, dim->extent) > INT64_MAX ||
	     tfs_value_as_u64(dim->type, ned->hi) > INT64_MAX))
		return false;
	return true;
}

static bool tile_bounds(const struct tfs_field_info *dim, const struct tfs_range *ned,
			uint64_t idx, int64_t *lo, int64_t *hi)
{
	int64_t dlo, ext, nlo, nhi;

	if (!tileable(dim, ned))
		return false;
	dlo = tfs_value_as_i64(dim->type, dim->domain_lo);
	ext = tfs_value_as_i64(dim->type, dim->extent);
	nlo = tfs_value_as_i64(dim->type, ned->lo);
	nhi = tfs_value_as_i64(dim->type, ned->hi);
	if (ext <= 0)
		return false;
	if (__builtin_mul_overflow((int64_t)idx, ext, lo) ||
	    __builtin_add_overflow(*lo, dlo, lo) ||
	    __builtin_add_overflow(*lo, ext - 1, hi))
		return false;
	if (*lo < nlo)
		*lo = nlo;
	if (*hi > nhi)
		*hi = nhi;
	return *lo <= *hi;
}

static enum tfs_err list_tiles(const struct tfsd_node *dir, tfsd_list_fn fn,
			       void *ctx, struct tfs_diag *d)
{
	const struct tfsd_arr *arr = dir->arr;
	const struct tfs_schema *s = arr->schema;
	uint64_t first[TFSD_MAX_DIMS], count[TFSD_MAX_DIMS], idx[TFSD_MAX_DIMS];
	uint64_t total = 1, listed = 0;
	struct tfs_buf name;
	enum tfs_err e = TFS_E_OK;

	if (!arr->has_ned || tfs_schema_dim_count(s) > TFSD_MAX_DIMS)
		return TFS_E_OK;
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		struct tfs_field_info info;
		const struct tfs_field_info *dim = &info;
		int64_t dlo, ext;

		tfs_schema_dim(s, k, &info);

		if (!tileable(dim, &arr->ned[k]))
			return TFS_E_OK;
		dlo = tfs_value_as_i64(dim->type, dim->domain_lo);
		ext = tfs_value_as_i64(dim->type, dim->extent);
		first[k] = (uint64_t)(tfs_value_as_i64(dim->type, arr->ned[k].lo) - dlo) /
			   (uint64_t)ext;
		count[k] = (uint64_t)(tfs_value_as_i64(dim->type, arr->ned[k].hi) - dlo) /
				   (uint64_t)ext -
			   first[k] + 1;
		idx[k] = 0;
		if (__builtin_mul_overflow(total, count[k], &total))
			total = UINT64_MAX;
	}
	tfs_buf_init(&name, TFS_BUF_NO_MAX);
	while (!e && listed < total && listed < MAX_TILE_FILES) {
		bool nameable = true;

		name.len = 0;
		e = tfs_buf_printf(&name, "slice[");
		for (uint32_t k = 0; !e && k < tfs_schema_dim_count(s); k++) {
			struct tfs_field_info dim;
			int64_t lo, hi;

			tfs_schema_dim(s, k, &dim);
			if (!tile_bounds(&dim, &arr->ned[k],
					 first[k] + idx[k], &lo, &hi) ||
			    hi == INT64_MAX) {
				nameable = false; /* not in int64 text */
				break;
			}
			e = tfs_buf_printf(&name, "%s%" PRId64 ":%" PRId64,
					   k ? "," : "", lo, hi + 1);
		}
		if (!e)
			e = tfs_buf_printf(&name, "]%c", '\0');
		if (!e && nameable && !fn(ctx, (const char *)name.data, false))
			break;
		listed++;
		for (uint32_t k = tfs_schema_dim_count(s); k-- > 0;) {
			if (++idx[k] < count[k])
				break;
			idx[k] = 0;
		}
	}
	tfs_buf_release(&name);
	return e ? tfs_fail(d, e, "cannot list tiles") : e;
}

static enum tfs_err list_meta(const struct tfsd_node *dir, tfsd_list_fn fn,
			      void *ctx, struct tfs_diag *d)
{
	const struct tfs_array *a = dir->arr->a;
	struct tfs_buf name;
	enum tfs_err e = TFS_E_OK;

	tfs_buf_init(&name, TFS_BUF_NO_MAX);
	for (size_t i = 0; !e && i < tfs_array_metadata_count(a); i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(a, i);

		if (kv->deleted || kv->key_len == 0)
			continue;
		name.len = 0;
		e = tfsd_meta_name_encode(&name, kv->key, kv->key_len);
		if (!e)
			e = tfs_buf_append_u8(&name, '\0');
		if (!e && !fn(ctx, (const char *)name.data, false))
			break;
	}
	tfs_buf_release(&name);
	return e ? tfs_fail(d, e, "cannot list metadata") : e;
}

static enum tfs_err list_frags(const struct tfsd_node *dir, tfsd_list_fn fn,
			       void *ctx)
{
	const struct tfs_array *a = dir->arr->a;

	if (dir->kind == TFSD_N_FRAG) {
		fn(ctx, "info.json", false);
		return TFS_E_OK;
	}
	for (size_t i = 0; i < tfs_array_fragment_count(a); i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		if (f.visible && !fn(ctx, f.name, true))
			break;
	}
	return TFS_E_OK;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One folder per distinct fragment end time, oldest first. */
static enum tfs_err list_versions(const struct tfsd_node *dir, tfsd_list_fn fn,
				  void *ctx, struct tfs_diag *d)
{
	const struct tfs_array *a = dir->arr->a;
	size_t n = tfs_array_fragment_count(a);
	uint64_t *t2 = tfs_callocn(n ? n : 1, sizeof(*t2));

	if (!t2)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		t2[i] = f.t2;
	}
	qsort(t2, n, sizeof(*t2), u64_cmp);
	for (size_t i = 0; i < n; i++) {
		char name[40];

		if (t2[i] == 0 || (i && t2[i] == t2[i - 1]))
			continue;
		tfsr_format_time(name, sizeof(name), t2[i]);
		if (!fn(ctx, name, true))
			break;
	}
	tfs_free(t2);
	return TFS_E_OK;
}

enum tfs_err tfsd_list(struct tfsd *fs, const struct tfsd_node *dir,
		       tfsd_list_fn fn, void *ctx, struct tfs_diag *d)
{
	switch (dir->kind) {
	case TFSD_N_FOLDER: return list_folder(fs, dir, fn, ctx, d);
	case TFSD_N_ARRAY: return list_array(fs, dir, fn, ctx, d);
	case TFSD_N_FIELD: return list_field(fs, dir, fn, ctx, d);
	case TFSD_N_TILES: return list_tiles(dir, fn, ctx, d);
	case TFSD_N_META_DIR: return list_meta(dir, fn, ctx, d);
	case TFSD_N_FRAGS:
	case TFSD_N_FRAG: return list_frags(dir, fn, ctx);
	case TFSD_N_VERSIONS: return list_versions(dir, fn, ctx, d);
	case TFSD_N_FILE: break;
	}
	return tfs_fail(d, TFS_E_INVALID, "not a folder");
}
