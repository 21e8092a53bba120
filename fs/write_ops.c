/* The commit of a written path's staged bytes on the core's write API:
 * CSV into an array or a plain folder, schema.json into an empty folder,
 * schema evolutions, deletes and metadata keys here; slices
 * (write_slice.c) and .npy files (write_npy.c) in their own files. */
#include "write_commit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"
#include "where.h"

/* Reads a whole small staged file into out. */
static enum tfs_err read_doc(const char *path, const char *name,
			     struct tfs_buf *out, struct tfs_diag *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	enum tfs_err e = TFS_E_OK;
	ssize_t got;

	if (fd < 0 || fstat(fd, &st) != 0) {
		e = tfs_fail(d, TFS_E_IO, "'%s': staged file: %s", name,
			     strerror(errno));
		goto out_close;
	}
	if ((uint64_t)st.st_size > TFSD_DOC_MAX) {
		e = tfs_fail(d, TFS_E_TOO_BIG, "'%s': larger than %zu bytes",
			     name, TFSD_DOC_MAX);
		goto out_close;
	}
	e = tfs_buf_resize(out, (size_t)st.st_size);
	if (e) {
		e = tfs_fail(d, e, "out of memory");
		goto out_close;
	}
	got = pread(fd, out->data, (size_t)st.st_size, 0);
	if (got != (ssize_t)st.st_size)
		e = tfs_fail(d, TFS_E_IO, "'%s': staged file: short read",
			     name);
out_close:
	if (fd >= 0)
		close(fd);
	return e;
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static enum tfs_err commit_csv(struct tfsd *fs, const struct tfsd_wtarget *t,
			       const char *staged, struct tfsd_wresult *res,
			       struct tfs_diag *d)
{
	struct tfs_ingest_opts io;
	struct tfs_ingest_result r;
	struct tfs_stat st;
	enum tfs_err e;

	memset(&io, 0, sizeof(io));
	memset(&r, 0, sizeof(r));
	tfsd__write_opts_init(fs, t, &io.write);
	io.display_name = t->name;
	if (t->kind == TFSD_W_CSV_NEW &&
	    !tfs_vfs_lstat(tfsd_arrays_vfs(fs->arrays), t->path, &st, NULL) &&
	    st.exists)
		return tfs_fail(d, TFS_E_EXISTS,
				"'%s': '%.*s' exists and is no array (a CSV "
				"file here makes the array of its name, or "
				"appends to it)",
				t->name, (int)(strlen(t->name) - 4), t->name);
	if (t->kind == TFSD_W_CSV_NEW)
		e = tfs_ingest_csv_new(t->path, staged, &io, &r, d);
	else
		e = tfs_ingest_csv(t->path, staged, &io, &r, d);
	if (e)
		return e;
	res->wrote = r.write.cell_num > 0 || r.created || r.enum_values_added;
	snprintf(res->what, sizeof(res->what),
		 "%s%" PRIu64 " rows, %s fragment %s", r.created ? "new array, " : "",
		 r.rows, r.write.dense ? "dense" : "sparse", r.write.name);
	if (r.enum_values_added) {
		size_t n = strlen(res->what);

		snprintf(res->what + n, sizeof(res->what) - n,
			 ", %" PRIu64 " values added to enumerations (schema evolved)",
			 r.enum_values_added);
	}
	return TFS_E_OK;
}

/* The core's failure in the array of t, named by the written file and
 * without the array's path in SOURCE ("array '/src/A': why" -> "'x': why"). */
static enum tfs_err fail_in_array(const struct tfsd_wtarget *t, enum tfs_err e,
				  const struct tfs_diag *core, struct tfs_diag *d)
{
	const char *msg = tfs_diag_msg(core);
	size_t n = strlen(t->path);

	if (strncmp(msg, "array '", 7) == 0 &&
	    strncmp(msg + 7, t->path, n) == 0 &&
	    strncmp(msg + 7 + n, "': ", 3) == 0)
		msg += 7 + n + 3;
	return tfs_fail(d, e, "'%s': %s", t->name, msg);
}

/* The staged schema.json as a schema (*out, tfs_schema_free). */
static enum tfs_err read_schema_doc(const char *staged,
				    const struct tfsd_wtarget *t,
				    struct tfs_schema **out, struct tfs_diag *d)
{
	struct tfs_buf doc;
	enum tfs_err e;

	*out = NULL;
	tfs_buf_init(&doc, TFSD_DOC_MAX);
	e = read_doc(staged, t->name, &doc, d);
	if (!e &&
	    (e = tfs_schema_from_json_new((const char *)doc.data, doc.len, out, d)))
		e = tfs_fail(d, e, "'%s': %s", t->name, tfs_diag_msg(d));
	tfs_buf_release(&doc);
	return e;
}

static enum tfs_err commit_schema(struct tfsd *fs, const struct tfsd_wtarget *t,
				  const char *staged, struct tfsd_wresult *res,
				  struct tfs_diag *d)
{
	struct tfs_write_opts wo;
	struct tfs_schema *s;
	enum tfs_err e;

	if ((e = read_schema_doc(staged, t, &s, d)))
		return e;
	tfsd__write_opts_init(fs, t, &wo);
	e = tfs_array_create(t->path, s, &wo, d);
	tfs_schema_free(s);
	if (!e) {
		res->wrote = true;
		snprintf(res->what, sizeof(res->what), "array created");
	}
	return e;
}

/* A/schema.json: the document as schema.json shows it, with attributes
 * (and enumerations, or their values) added or dropped: a new schema
 * (tfs_array_evolve). The same schema again writes nothing. */
static enum tfs_err commit_evolve(struct tfsd *fs, const struct tfsd_wtarget *t,
				  const char *staged, struct tfsd_wresult *res,
				  struct tfs_diag *d)
{
	struct tfs_write_opts wo;
	struct tfs_schema *s;
	struct tfs_diag ed;
	bool changed;
	enum tfs_err e;

	if ((e = read_schema_doc(staged, t, &s, d)))
		return e;
	tfsd__write_opts_init(fs, t, &wo);
	tfs_diag_init(&ed);
	e = tfs_array_evolve(t->path, s, &wo, &changed, &ed);
	tfs_schema_free(s);
	if (e)
		e = fail_in_array(t, e, &ed, d);
	if (!e) {
		res->wrote = changed;
		snprintf(res->what, sizeof(res->what), "%s",
			 changed ? "schema evolved"
				 : "same schema: nothing written");
	}
	return e;
}

/* A/delete: the text is a condition in the filter grammar (where[COND],
 * render/where.h); the cells it matches are deleted by one delete commit
 * (tfs_array_delete). Line ends count as spaces. */
static enum tfs_err commit_delete(struct tfsd *fs, const struct tfsd_wtarget *t,
				  const char *staged, struct tfsd_wresult *res,
				  struct tfs_diag *d)
{
	struct tfs_write_opts wo;
	struct tfsd_arr *arr = NULL;
	struct tfs_where *cond = NULL;
	struct tfs_buf doc;
	struct tfs_diag wd;
	char name[96];
	size_t len;
	enum tfs_err e;

	tfs_buf_init(&doc, TFSD_DOC_MAX);
	e = read_doc(staged, t->name, &doc, d);
	if (e)
		goto out;
	len = doc.len;
	for (size_t i = 0; i < len; i++)
		if (doc.data[i] == '\n' || doc.data[i] == '\r' ||
		    doc.data[i] == '\t')
			doc.data[i] = ' ';
	while (len && doc.data[len - 1] == ' ')
		len--;
	if (len == 0) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "'%s': no condition (write which cells to "
			     "delete, as in where[COND])",
			     t->name);
		goto out;
	}
	e = tfsd_arrays_get(fs->arrays, t->rel, 0, &arr, d);
	if (e)
		goto out;
	tfs_diag_init(&wd);
	e = tfsr_where_parse(arr->schema, arr->a, (const char *)doc.data, len,
			     &cond, NULL, &wd);
	if (e) {
		e = tfs_fail(d, e, "'%s': %s", t->name, tfs_diag_msg(&wd));
		goto out;
	}
	tfsd__write_opts_init(fs, t, &wo);
	tfs_diag_init(&wd);
	e = tfs_array_delete(t->path, cond, &wo, name, sizeof(name), &wd);
	if (e) {
		e = fail_in_array(t, e, &wd, d);
		goto out;
	}
	res->wrote = true;
	snprintf(res->what, sizeof(res->what), "delete commit %s", name);
out:
	tfs_where_free(cond);
	tfsd_arr_put(fs->arrays, arr);
	tfs_buf_release(&doc);
	return e;
}

static const struct tfs_meta_kv *meta_find(const struct tfs_array *a,
					   const char *key, size_t key_len)
{
	for (size_t i = 0; i < tfs_array_metadata_count(a); i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(a, i);

		if (kv->key_len == key_len && memcmp(kv->key, key, key_len) == 0)
			return kv;
	}
	return NULL;
}

static enum tfs_err commit_meta(struct tfsd *fs, const struct tfsd_wtarget *t,
				const char *staged, struct tfsd_wresult *res,
				struct tfs_diag *d)
{
	struct tfs_meta_kv kv;
	struct tfs_write_opts wo;
	struct tfsd_arr *arr = NULL;
	struct tfs_buf doc;
	struct tfs_diag vd;
	enum tfs_err e;

	memset(&kv, 0, sizeof(kv));
	tfs_buf_init(&doc, TFSD_DOC_MAX);
	e = read_doc(staged, t->name, &doc, d);
	if (e)
		goto out;
	e = tfsd_arrays_get(fs->arrays, t->rel, 0, &arr, d);
	if (e)
		goto out;
	tfs_diag_init(&vd);
	e = tfsd_meta_value_parse(meta_find(arr->a, t->key, t->key_len),
				  (const char *)doc.data, doc.len, &kv, &vd);
	if (e) {
		e = tfs_fail(d, e, "'%s': %s", t->name, tfs_diag_msg(&vd));
		goto out;
	}
	kv.key = t->key;
	kv.key_len = (uint32_t)t->key_len;
	tfsd__write_opts_init(fs, t, &wo);
	e = tfs_array_metadata_write(t->path, &kv, 1, &wo, d);
	if (!e) {
		res->wrote = true;
		snprintf(res->what, sizeof(res->what), "set, %u %s",
			 kv.value_num,
			 tfs_datatype_class(kv.type) == TFS_CLASS_STRING
				 ? "bytes of text"
				 : "values");
	}
out:
	tfs_free(kv.value);
	tfsd_arr_put(fs->arrays, arr);
	tfs_buf_release(&doc);
	return e;
}

enum tfs_err tfsd_write_meta_delete(struct tfsd *fs,
				    const struct tfsd_wtarget *t,
				    struct tfs_diag *d)
{
	struct tfs_meta_kv kv = {.key = t->key,
				 .key_len = (uint32_t)t->key_len,
				 .deleted = true,
				 .type = TFS_STRING_UTF8};
	struct tfs_write_opts wo;

	tfsd__write_opts_init(fs, t, &wo);
	return tfs_array_metadata_write(t->path, &kv, 1, &wo, d);
}

/* One try at committing the staged file (tfsd_write_commit). */
static enum tfs_err commit_once(struct tfsd *fs, const struct tfsd_wtarget *t,
				const char *staged_path,
				struct tfsd_wresult *res, struct tfs_diag *d)
{
	enum tfs_err e;

	memset(res, 0, sizeof(*res));
	/* An empty file (touch x.csv, an editor's first save) commits
	 * nothing and is no error. */
	if (file_size(staged_path) == 0) {
		snprintf(res->what, sizeof(res->what), "empty: nothing written");
		return TFS_E_OK;
	}
	switch (t->kind) {
	case TFSD_W_CSV_ARRAY:
	case TFSD_W_CSV_NEW: e = commit_csv(fs, t, staged_path, res, d); break;
	case TFSD_W_SCHEMA: e = commit_schema(fs, t, staged_path, res, d); break;
	case TFSD_W_SLICE: e = tfsd__commit_slice(fs, t, staged_path, res, d); break;
	case TFSD_W_META: e = commit_meta(fs, t, staged_path, res, d); break;
	case TFSD_W_NPY_NEW:
		e = tfsd__commit_npy_new(fs, t, staged_path, res, d);
		break;
	case TFSD_W_NPY_ARRAY:
		e = tfsd__commit_npy_array(fs, t, staged_path, res, d);
		break;
	case TFSD_W_EVOLVE:
		e = commit_evolve(fs, t, staged_path, res, d);
		break;
	case TFSD_W_DELETE:
		e = commit_delete(fs, t, staged_path, res, d);
		break;
	default: return TFS_E_OK;
	}
	if (!e)
		tfsd_arrays_invalidate(fs->arrays, t->rel);
	return e;
}

/* A commit that found no room in the memory budget (readers filled it
 * for longer than a charge waits, while it read the cells a slice write
 * keeps or encoded its tiles) is tried again: a failed commit leaves the
 * array as it was, and giving up would lose the written bytes to a
 * passing load. */
#define COMMIT_TRIES 4

enum tfs_err tfsd_write_commit(struct tfsd *fs, const struct tfsd_wtarget *t,
			       const char *staged_path,
			       struct tfsd_wresult *res, struct tfs_diag *d)
{
	enum tfs_err e = commit_once(fs, t, staged_path, res, d);

	for (int i = 1; i < COMMIT_TRIES && e == TFS_E_NOMEM; i++) {
		tfs_log(TFS_LOG_INFO, "'/%s%s%s': commit tried again (%d of "
			"%d): %s", t->log_dir, *t->log_dir ? "/" : "",
			t->name, i + 1, COMMIT_TRIES, tfs_diag_msg(d));
		tfs_diag_init(d);
		e = commit_once(fs, t, staged_path, res, d);
	}
	return e;
}
