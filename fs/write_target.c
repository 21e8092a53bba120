/* What a written path means (SPEC §6): the target a path names (CSV into
 * an array or a plain folder, schema.json into an empty folder, raw or
 * .npy bytes onto a dense slice, text onto a metadata key), the names of
 * metadata keys, and the write options and key a target's commit uses. */
#include "write_commit.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_str.h"

static char *join(const char *a, const char *b)
{
	struct tfs_buf buf;

	tfs_buf_init(&buf, TFS_BUF_NO_MAX);
	if (tfs_buf_printf(&buf, "%s%s%s%c", a, *a && *b ? "/" : "", b,
			   '\0')) {
		tfs_buf_release(&buf);
		return NULL;
	}
	return (char *)tfs_buf_detach(&buf, NULL);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

enum tfs_err tfsd_meta_name_decode(struct tfs_buf *out, const char *name)
{
	enum tfs_err e = TFS_E_OK;

	for (const char *p = name; *p && !e; p++) {
		if (p[0] == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
			e = tfs_buf_append_u8(out, (uint8_t)(hexval(p[1]) * 16 +
							     hexval(p[2])));
			p += 2;
		} else {
			e = tfs_buf_append_u8(out, (uint8_t)*p);
		}
	}
	return e;
}

/* Fills the parts of t every kind has. */
static enum tfs_err target_init(struct tfsd *fs, struct tfsd_wtarget *t,
				enum tfsd_wkind kind, const char *rel,
				const char *name, const char *log_dir,
				struct tfs_diag *d)
{
	t->kind = kind;
	t->rel = tfs_strdup(rel);
	t->path = join(fs->cfg.source, rel);
	t->name = tfs_strdup(name);
	t->log_dir = tfs_strdup(log_dir);
	if (!t->rel || !t->path || !t->name || !t->log_dir)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

/* The names editors and tools write before renaming into place, which
 * never become a metadata key: dot files (rsync's ".k.Xy12Z9", vim's
 * swap files), backups ("k~") and sed -i's "sedXy12Z9". */
static bool temp_name(const char *name)
{
	size_t n = strlen(name);

	if (name[0] == '.' || (n && name[n - 1] == '~'))
		return true;
	if (n == 9 && strncmp(name, "sed", 3) == 0) {
		for (size_t i = 3; i < n; i++)
			if (!isalnum((unsigned char)name[i]))
				return false;
		return true;
	}
	return false;
}

/* vim's probe before it saves ("4913", then every 123 on): a file it
 * creates and removes to learn whether it may save by renaming. Refused
 * in arrays, so that vim writes the file in place instead. */
static bool vim_probe_name(const char *name)
{
	unsigned long v = 0;
	size_t n = strlen(name);

	if (n < 4 || n > 9 || strspn(name, "0123456789") != n)
		return false;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned long)(name[i] - '0');
	return v >= 4913 && (v - 4913) % 123 == 0;
}

static enum tfs_err classify_in_folder(struct tfsd *fs,
				       const struct tfsd_node *dir,
				       const char *dir_vpath, const char *name,
				       struct tfsd_wtarget *t,
				       struct tfs_diag *d)
{
	if (strncmp(name, "__", 2) == 0)
		return tfs_fail(d, TFS_E_PERM,
				"'%s': names starting with '__' belong to "
				"TileDB",
				name);
	if (name[0] != '.' && tfs_str_ends_with_nocase(name, ".csv")) {
		size_t stem = strlen(name) - 4;
		char *stem_name = tfs_strndup(name, stem);
		char *rel = stem_name ? join(dir->rel, stem_name) : NULL;
		enum tfs_err e;
		struct tfs_stat st;
		enum tfs_object obj;

		if (!rel) {
			tfs_free(stem_name);
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		}
		/* An array of that name takes the file as one more write
		 * (appended when it has no dimension column); anything else
		 * of that name makes the commit refuse it, with its line in
		 * the folder's ingest.log. */
		e = target_init(fs, t, TFSD_W_CSV_NEW, rel, name, dir_vpath, d);
		if (!e &&
		    !tfs_vfs_lstat(tfsd_arrays_vfs(fs->arrays), t->path, &st,
				   NULL) &&
		    st.exists && st.is_dir &&
		    !tfs_object_type(tfsd_arrays_vfs(fs->arrays), t->path, &obj,
				     NULL) &&
		    obj == TFS_OBJECT_ARRAY)
			t->kind = TFSD_W_CSV_ARRAY;
		tfs_free(stem_name);
		tfs_free(rel);
		return e;
	}
	if (name[0] != '.' && strlen(name) > 4 &&
	    tfs_str_ends_with_nocase(name, ".npy")) {
		char *stem_name = tfs_strndup(name, strlen(name) - 4);
		char *rel = stem_name ? join(dir->rel, stem_name) : NULL;
		enum tfs_err e;

		e = rel ? target_init(fs, t, TFSD_W_NPY_NEW, rel, name,
				      dir_vpath, d)
			: tfs_fail(d, TFS_E_NOMEM, "out of memory");
		tfs_free(stem_name);
		tfs_free(rel);
		return e;
	}
	if (strcmp(name, "schema.json") == 0)
		return target_init(fs, t, TFSD_W_SCHEMA, dir->rel, name,
				   dir_vpath, d);
	return target_init(fs, t, TFSD_W_TEMP, dir->rel, name, dir_vpath, d);
}

static enum tfs_err classify_in_array(struct tfsd *fs,
				      const struct tfsd_node *dir,
				      const char *dir_vpath, const char *name,
				      struct tfsd_wtarget *t,
				      struct tfs_diag *d)
{
	if ((strncmp(name, "__", 2) == 0 && strcmp(name, "__delete") != 0) ||
	    strncmp(name, "slice[", 6) == 0 || vim_probe_name(name))
		return tfs_fail(d, TFS_E_PERM,
				"'%s': not a name to write in an array "
				"(write NAME.csv)",
				name);
	if (name[0] != '.' && tfs_str_ends_with_nocase(name, ".csv"))
		return target_init(fs, t, TFSD_W_CSV_ARRAY, dir->rel, name,
				   dir_vpath, d);
	if (name[0] != '.' && strlen(name) > 4 &&
	    tfs_str_ends_with_nocase(name, ".npy"))
		return target_init(fs, t, TFSD_W_NPY_ARRAY, dir->rel, name,
				   dir_vpath, d);
	if (strcmp(name, "schema.json") == 0)
		return target_init(fs, t, TFSD_W_EVOLVE, dir->rel, name,
				   dir_vpath, d);
	/* "__delete" where a field is called "delete". */
	if (strcmp(name, "delete") == 0 || strcmp(name, "__delete") == 0)
		return target_init(fs, t, TFSD_W_DELETE, dir->rel, name,
				   dir_vpath, d);
	return target_init(fs, t, TFSD_W_TEMP, dir->rel, name, dir_vpath, d);
}

/* The vpath of a folder's parent ("" for a top-level name). */
static char *parent_of(const char *vpath)
{
	const char *slash = strrchr(vpath, '/');

	return slash ? tfs_strndup(vpath, (size_t)(slash - vpath))
		     : tfs_strdup("");
}

/* A/metadata/NAME: sets the key NAME stands for (temporary names of
 * editors and sed are staged only). */
static enum tfs_err classify_in_meta(struct tfsd *fs, const struct tfsd_node *dir,
				     const char *dir_vpath, const char *name,
				     struct tfsd_wtarget *out, struct tfs_diag *d)
{
	struct tfs_buf key;
	bool temp = temp_name(name);
	char *array_vpath, *shown;
	enum tfs_err e;

	if (vim_probe_name(name))
		return tfs_fail(d, TFS_E_PERM,
				"'%s': a name vim tries before saving "
				"(write '%%%02X%s' for that key)",
				name, (unsigned)name[0], name + 1);
	array_vpath = parent_of(dir_vpath);
	shown = join("metadata", name);
	tfs_buf_init(&key, TFS_BUF_NO_MAX);
	e = array_vpath && shown
		    ? target_init(fs, out, temp ? TFSD_W_TEMP : TFSD_W_META,
				  dir->rel, shown, array_vpath, d)
		    : TFS_E_NOMEM;
	if (!e && (tfsd_meta_name_decode(&key, name) ||
		   tfs_buf_append_u8(&key, 0)))
		e = TFS_E_NOMEM;
	if (!e) {
		out->key_len = key.len - 1;
		out->key = (char *)tfs_buf_detach(&key, NULL);
	}
	tfs_buf_release(&key);
	tfs_free(shown);
	tfs_free(array_vpath);
	if (e == TFS_E_NOMEM)
		e = tfs_fail(d, e, "out of memory");
	return e;
}

/* A/<attr>/slice[SEL] or slice[SEL].npy: a dense fragment over SEL. */
static enum tfs_err classify_in_field(struct tfsd *fs, const struct tfsd_node *dir,
				      const char *dir_vpath, const char *name,
				      struct tfsd_wtarget *out, struct tfs_diag *d)
{
	struct tfs_field_info f;
	enum tfsr_format fmt;
	const char *sel;
	size_t sel_len;
	char *array_vpath, *shown;
	enum tfs_err e;

	tfs_schema_field(dir->arr->schema, dir->field, &f);
	if (f.is_dim)
		return tfs_fail(d, TFS_E_PERM,
				"'%s' is a dimension: write an attribute's "
				"slice",
				f.name);
	if (!tfsr_slice_name_parse(name, &sel, &sel_len, &fmt) ||
	    !(tfsr_renderer_of(fmt)->flags & TFSR_R_WRITABLE))
		return tfs_fail(d, TFS_E_PERM,
				"'%s': slices are written raw "
				"(slice[SEL]) or as .npy",
				name);
	shown = join(f.name, name);
	array_vpath = parent_of(dir_vpath);
	e = array_vpath && shown
		    ? target_init(fs, out, TFSD_W_SLICE, dir->rel, shown,
				  array_vpath, d)
		    : tfs_fail(d, TFS_E_NOMEM, "out of memory");
	tfs_free(shown);
	tfs_free(array_vpath);
	if (e)
		return e;
	out->field = tfs_strdup(f.name);
	out->sel = tfs_strndup(sel, sel_len);
	out->sel_len = sel_len;
	out->npy = fmt == TFSR_FMT_NPY;
	if (!out->field || !out->sel)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

enum tfs_err tfsd_write_classify(struct tfsd *fs, const char *vpath,
				 struct tfsd_wtarget *out, struct tfs_diag *d)
{
	const char *slash = strrchr(vpath, '/');
	const char *name = slash ? slash + 1 : vpath;
	char *dir_vpath = NULL;
	struct tfsd_node dir;
	struct tfs_space room;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	if (fs->cfg.read_only)
		return tfs_fail(d, TFS_E_READONLY, "read-only mount");
	if (fs->cfg.timestamp)
		return tfs_fail(d, TFS_E_READONLY,
				"mounted at a fixed time (timestamp=): "
				"read-only");
	if (tfs_vfs_space(fs->cfg.vfs, fs->cfg.source, &room, NULL) ==
		    TFS_E_OK &&
	    room.read_only)
		return tfs_fail(d, TFS_E_READONLY,
				"SOURCE is on a read-only file system");
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return tfs_fail(d, TFS_E_PERM, "bad name");
	/* "..csv", "...csv": a CSV file meant to be committed, whose array
	 * would have no name. Refused, not kept as a temporary file. */
	if (strlen(name) > 4 && tfs_str_ends_with_nocase(name, ".csv") &&
	    strspn(name, ".") >= strlen(name) - 4)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': a CSV file needs a name before '.csv' "
				"(the name of its array)",
				name);
	if (strcmp(name, "ingest.log") == 0)
		return tfs_fail(d, TFS_E_PERM, "ingest.log is kept by tilefs");
	dir_vpath = slash ? tfs_strndup(vpath, (size_t)(slash - vpath))
			  : tfs_strdup("");
	if (!dir_vpath)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = tfsd_resolve(fs, dir_vpath, &dir, d);
	if (e)
		goto out_free;
	if (dir.version_view) {
		e = tfs_fail(d, TFS_E_READONLY,
			     "versions/ shows the past: read-only");
		goto out_node;
	}
	if (dir.where) {
		e = tfs_fail(d, TFS_E_READONLY,
			     "where[...] shows a filtered view: read-only");
		goto out_node;
	}
	switch (dir.kind) {
	case TFSD_N_FOLDER:
		e = classify_in_folder(fs, &dir, dir_vpath, name, out, d);
		break;
	case TFSD_N_ARRAY:
		e = classify_in_array(fs, &dir, dir_vpath, name, out, d);
		break;
	case TFSD_N_META_DIR:
		e = classify_in_meta(fs, &dir, dir_vpath, name, out, d);
		break;
	case TFSD_N_FIELD:
		e = classify_in_field(fs, &dir, dir_vpath, name, out, d);
		break;
	default:
		e = tfs_fail(d, TFS_E_PERM,
			     "'%s': files here are not written "
			     "(see ingest.log for what is)",
			     name);
		break;
	}
out_node:
	tfsd_node_release(fs, &dir);
out_free:
	if (e)
		tfsd_wtarget_release(out);
	tfs_free(dir_vpath);
	return e;
}

int tfsd_write_errno(enum tfs_err e)
{
	return e == TFS_E_RANGE ? EINVAL : tfs_err_errno(e);
}

/* The key a write uses. A key the keyfile gives this array (or the new
 * array's path) is used as is; a default key (key=, '*') only for arrays
 * that are encrypted, which is what a key-less opening tells: a key
 * handed to the writer encrypts what it writes, and an unencrypted array
 * must stay readable without one. New arrays get no default key. */
const uint8_t *tfsd__write_key(struct tfsd *fs, const struct tfsd_wtarget *t)
{
	const uint8_t *key = tfsd_config_key(&fs->cfg, t->rel);
	struct tfs_open_opts oo = {.vfs = fs->cfg.vfs, .threads = 1,
				   .pool = fs->pool};
	struct tfs_array *a = NULL;
	struct tfs_diag d;
	enum tfs_err e;

	if (!key || tfsd_config_has_own_key(&fs->cfg, t->rel))
		return key;
	if (t->kind == TFSD_W_CSV_NEW || t->kind == TFSD_W_SCHEMA ||
	    t->kind == TFSD_W_NPY_NEW)
		return NULL;
	tfs_diag_init(&d);
	e = tfs_array_open(t->path, &oo, &a, &d);
	tfs_array_close(a);
	return e == TFS_E_KEY ? key : NULL;
}

void tfsd__write_opts_init(struct tfsd *fs, const struct tfsd_wtarget *t,
			   struct tfs_write_opts *wo)
{
	memset(wo, 0, sizeof(*wo));
	wo->vfs = fs->cfg.vfs;
	wo->key = tfsd__write_key(fs, t);
	wo->threads = fs->cfg.threads;
	wo->pool = fs->pool;
	wo->spill_dir = fs->staging ? tfsd_staging_dir(fs->staging) : NULL;
	/* Cells sorted in memory: an eighth of the memory budget. */
	wo->memory = tfsd_mem_budget(&fs->cfg) / 8;
}
