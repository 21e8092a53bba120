/* What a written path means (SPEC §6) and the commit of its staged bytes
 * on the core's write API: CSV into an array or a plain folder, schema.json
 * into an empty folder, raw or .npy bytes onto a dense slice (the other
 * attributes carried over from their current values), text onto a
 * metadata key. Also the ingest logs: the recent writes and refusals of
 * each folder, which the mount shows as ingest.log. */
#include "tfsd_write.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "npy.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_bytes.h"
#include "tfs_log.h"
#include "tfs_str.h"
#include "where.h"

/* Documents read whole (schema.json, metadata values) at most. */
#define DOC_MAX ((size_t)16 << 20)
/* Cells per append of a slice write without other attributes. */
#define SLICE_CHUNK_CELLS ((uint64_t)1 << 20)

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
	    (fmt != TFSR_FMT_RAW && fmt != TFSR_FMT_NPY))
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

/* ---- Metadata values ------------------------------------------------------ */

/* Parses one line as a value of a numeric type into v (8 bytes). */
static bool parse_number(uint8_t type, const char *s, uint8_t *v)
{
	size_t size = tfs_datatype_size(type);
	char *end;

	errno = 0;
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED: {
		long long x = strtoll(s, &end, 10);
		long long lim = size >= 8 ? INT64_MAX
					  : (1LL << (size * 8 - 1)) - 1;

		if (errno || end == s || *end || x > lim || x < -lim - 1)
			return false;
		tfs_put_uint(v, size, (uint64_t)x);
		return true;
	}
	case TFS_CLASS_UNSIGNED: {
		unsigned long long x;

		if (type == TFS_BOOL) {
			if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
				x = 1;
			else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
				x = 0;
			else
				return false;
			v[0] = (uint8_t)x;
			return true;
		}
		if (*s == '-')
			return false;
		x = strtoull(s, &end, 10);
		if (errno || end == s || *end ||
		    (size < 8 && x >> (size * 8)))
			return false;
		tfs_put_uint(v, size, (uint64_t)x);
		return true;
	}
	case TFS_CLASS_FLOAT: {
		double x = strtod(s, &end);

		if (end == s || *end)
			return false;
		if (size == 4) {
			float f = (float)x;

			memcpy(v, &f, 4);
		} else {
			memcpy(v, &x, 8);
		}
		return true;
	}
	default:
		return false;
	}
}

/* Splits text (len bytes, no NUL) into lines, each trimmed of blanks
 * and a CR, and parses every one as type into *vals (tfs_free); *bad
 * receives the first line that is no such value (NUL-terminated, cut to
 * bad_cap). True when every line parses. */
static bool parse_lines(uint8_t type, const char *text, size_t len,
			uint8_t **vals, uint32_t *num, char *bad,
			size_t bad_cap, enum tfs_err *e)
{
	size_t size = tfs_datatype_size(type), lines = 1, i = 0;
	char *copy = tfs_strndup(text, len), *p, *nl;
	bool ok = true;

	*vals = NULL;
	*e = TFS_E_OK;
	if (!copy) {
		*e = TFS_E_NOMEM;
		return false;
	}
	for (p = copy; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
		lines++;
	*vals = lines <= UINT32_MAX ? tfs_callocn(lines, size ? size : 1)
				    : NULL;
	if (!*vals) {
		tfs_free(copy);
		*e = lines <= UINT32_MAX ? TFS_E_NOMEM : TFS_E_TOO_BIG;
		return false;
	}
	for (p = copy; ok && p; i++) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		/* A line read back as "1.5 " from an editor is still the
		 * number. */
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		for (size_t n = strlen(p);
		     n &&
		     (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r');
		     n--)
			p[n - 1] = '\0';
		ok = parse_number(type, p, *vals + i * size);
		if (!ok)
			snprintf(bad, bad_cap, "%s", p);
		p = nl ? nl + 1 : NULL;
	}
	tfs_free(copy);
	if (!ok) {
		tfs_free(*vals);
		*vals = NULL;
		return false;
	}
	*num = (uint32_t)lines;
	return true;
}

/* Whether every line of text looks like a decimal number (digits, sign,
 * point, exponent), so that words such as "nan" or "inf" stay text. */
static bool decimal_text(const char *text, size_t len)
{
	bool digit = false;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (c >= '0' && c <= '9')
			digit = true;
		else if (!strchr("+-.eE \t\r\n", c))
			return false;
	}
	return digit;
}

enum tfs_err tfsd_meta_value_parse(const struct tfs_meta_kv *old,
				   const char *text, size_t len,
				   struct tfs_meta_kv *out, struct tfs_diag *d)
{
	bool have_old = old && !old->deleted;
	unsigned cls = have_old ? tfs_datatype_class(old->type) : 0;
	char bad[64] = "";
	enum tfs_err e;

	if (len && text[len - 1] == '\n')
		len--;
	out->deleted = false;
	out->value = NULL;
	if (len > UINT32_MAX)
		return tfs_fail(d, TFS_E_TOO_BIG, "value larger than 4 GiB");
	if (have_old && cls == TFS_CLASS_BYTES)
		return tfs_fail(d, TFS_E_INVALID,
				"a key of type %s is not written as text",
				tfs_datatype_name(old->type));
	if (have_old && cls != TFS_CLASS_STRING) {
		/* The key's type stays: every line one value of it. */
		if (len == 0 || memchr(text, '\0', len))
			return tfs_fail(d, TFS_E_INVALID,
					"no %s value (the key's type)",
					tfs_datatype_name(old->type));
		if (parse_lines(old->type, text, len, &out->value,
				&out->value_num, bad, sizeof(bad), &e)) {
			out->type = old->type;
			return TFS_E_OK;
		}
		if (e)
			return tfs_fail(d, e, "out of memory");
		return tfs_fail(d, TFS_E_INVALID,
				"'%s' is no %s value (the key's type; rm the "
				"key first to change it)",
				bad, tfs_datatype_name(old->type));
	}
	if (!have_old && len && !memchr(text, '\0', len) &&
	    decimal_text(text, len)) {
		/* A new key: integers are INT64, other numbers FLOAT64, one
		 * value per line. */
		if (parse_lines(TFS_INT64, text, len, &out->value,
				&out->value_num, bad, sizeof(bad), &e)) {
			out->type = TFS_INT64;
			return TFS_E_OK;
		}
		if (!e && parse_lines(TFS_FLOAT64, text, len, &out->value,
				      &out->value_num, bad, sizeof(bad), &e)) {
			out->type = TFS_FLOAT64;
			return TFS_E_OK;
		}
		if (e)
			return tfs_fail(d, e, "out of memory");
	}
	out->type = have_old ? old->type : TFS_STRING_UTF8;
	out->value = tfs_memdup(len ? text : "", len ? len : 1);
	out->value_num = (uint32_t)len;
	return out->value ? TFS_E_OK
			  : tfs_fail(d, TFS_E_NOMEM, "out of memory");
}

/* ---- Commits ------------------------------------------------------------------ */

/* The key a write uses. A key the keyfile gives this array (or the new
 * array's path) is used as is; a default key (key=, '*') only for arrays
 * that are encrypted, which is what a key-less opening tells: a key
 * handed to the writer encrypts what it writes, and an unencrypted array
 * must stay readable without one. New arrays get no default key. */
static const uint8_t *write_key(struct tfsd *fs, const struct tfsd_wtarget *t)
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

static void write_opts_init(struct tfsd *fs, const struct tfsd_wtarget *t,
			    struct tfs_write_opts *wo)
{
	memset(wo, 0, sizeof(*wo));
	wo->vfs = fs->cfg.vfs;
	wo->key = write_key(fs, t);
	wo->threads = fs->cfg.threads;
	wo->pool = fs->pool;
	wo->spill_dir = fs->staging ? tfsd_staging_dir(fs->staging) : NULL;
	/* Cells sorted in memory: an eighth of the memory budget. */
	wo->memory = tfsd_mem_budget(&fs->cfg) / 8;
}

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
	if ((uint64_t)st.st_size > DOC_MAX) {
		e = tfs_fail(d, TFS_E_TOO_BIG, "'%s': larger than %zu bytes",
			     name, DOC_MAX);
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
	write_opts_init(fs, t, &io.write);
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
	tfs_buf_init(&doc, DOC_MAX);
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
	write_opts_init(fs, t, &wo);
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
	write_opts_init(fs, t, &wo);
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

	tfs_buf_init(&doc, DOC_MAX);
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
	write_opts_init(fs, t, &wo);
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
	tfs_buf_init(&doc, DOC_MAX);
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
	write_opts_init(fs, t, &wo);
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

	write_opts_init(fs, t, &wo);
	return tfs_array_metadata_write(t->path, &kv, 1, &wo, d);
}

/* ---- Slices ------------------------------------------------------------------ */

/* The value of 'key': in a .npy header dict, NUL-terminated in out. */
static bool npy_dict_value(const char *dict, const char *key, char *out,
			   size_t cap)
{
	const char *p = strstr(dict, key);
	size_t n = 0;
	char close;

	if (!p)
		return false;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	close = *p == '\'' ? '\'' : *p == '(' ? ')' : ',';
	if (*p == '\'' || *p == '(')
		p++;
	while (p[n] && p[n] != close && p[n] != '}')
		n++;
	if (n >= cap)
		return false;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

/* Checks a .npy file's header against the cells expected: the dtype of
 * the attribute, C order, as many values as the selection's cells.
 * *data_off receives where the values start. */
/* Reads the header of the .npy file open at fd: its dtype (descr),
 * shape text and where the values start; a C-order file only. */
static enum tfs_err npy_head(int fd, const char *name, char descr[128],
			     char shape[512], uint64_t *data_off,
			     struct tfs_diag *d)
{
	uint8_t head[12];
	char dict[4096], fortran[16];
	uint64_t hlen;
	size_t pre;

	if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    memcmp(head, "\x93NUMPY", 6) != 0)
		return tfs_fail(d, TFS_E_INVALID, "'%s': not a .npy file", name);
	if (head[6] == 1) {
		hlen = tfs_get_u16(head + 8);
		pre = 10;
	} else if (head[6] == 2 || head[6] == 3) {
		hlen = tfs_get_u32(head + 8);
		pre = 12;
	} else {
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy version %u is not known", name,
				head[6]);
	}
	if (hlen >= sizeof(dict) ||
	    pread(fd, dict, (size_t)hlen, (off_t)pre) != (ssize_t)hlen)
		return tfs_fail(d, TFS_E_INVALID, "'%s': bad .npy header", name);
	dict[hlen] = '\0';
	if (!npy_dict_value(dict, "'descr'", descr, 128) ||
	    !npy_dict_value(dict, "'shape'", shape, 512) ||
	    !npy_dict_value(dict, "'fortran_order'", fortran, sizeof(fortran)))
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy header without descr, shape or "
				"fortran_order",
				name);
	if (strncmp(fortran, "False", 5) != 0)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': Fortran-order .npy: write a C-order array",
				name);
	*data_off = pre + hlen;
	return TFS_E_OK;
}

static enum tfs_err npy_check(int fd, const struct tfs_field_info *at,
			      uint64_t cells, const char *name,
			      uint64_t *data_off, struct tfs_diag *d)
{
	char descr[128], shape[512];
	struct tfs_buf want;
	uint64_t elems = 1, per_cell;
	const char *p;
	enum tfs_err e = TFS_E_OK;

	if ((e = npy_head(fd, name, descr, shape, data_off, d)))
		return e;
	for (p = shape; *p;) {
		char *end;
		unsigned long long v;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (end == p || errno ||
		    __builtin_mul_overflow(elems, (uint64_t)v, &elems))
			return tfs_fail(d, TFS_E_INVALID,
					"'%s': bad .npy shape (%s)", name,
					shape);
		p = end;
	}
	tfs_buf_init(&want, 256);
	if (tfsr_npy_descr(&want, at->type, at->cell_val_num, 0) ||
	    tfs_buf_append_u8(&want, 0)) {
		tfs_buf_release(&want);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	{
		/* Ours is "'<i4'" or "'<f4', (3,)": compare the dtype
		 * alone, byte-order marks aside (numpy writes '|' for one
		 * byte and may write '=' ). */
		const char *w = (const char *)want.data + 1;
		size_t wl = strcspn(w, "'");
		const char *g = descr;

		if (*g == '<' || *g == '|' || *g == '=')
			g++;
		if (*w == '<' || *w == '|' || *w == '=') {
			w++;
			wl--;
		}
		if (strlen(g) != wl || strncmp(g, w, wl) != 0)
			e = tfs_fail(d, TFS_E_INVALID,
				     "'%s': .npy dtype '%s', the attribute "
				     "'%s' needs %s",
				     name, descr, at->name,
				     (const char *)want.data);
	}
	tfs_buf_release(&want);
	if (e)
		return e;
	per_cell = tfsr_npy_is_subarray(at->type, at->cell_val_num)
			   ? at->cell_val_num
			   : 1;
	if (elems / per_cell != cells || elems % per_cell)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy shape (%s) holds %" PRIu64
				" values, the selection has %" PRIu64 " cells",
				name, shape, elems, cells);
	return TFS_E_OK;
}

struct slice_job {
	struct tfs_writer *w;
	int fd;
	uint64_t off;       /* next cell's bytes in the staged file */
	uint64_t cell_size; /* of the written attribute */
	struct tfs_field_info at_info;
	const struct tfs_field_info *at;  /* &at_info */
	const struct tfs_enumeration *en; /* of the written attribute */
	uint64_t data_off;                /* first value in the staged file */
	struct tfs_buf vals;     /* values of one batch */
	struct tfs_buf validity; /* all 1: the written cells are not null */
	struct tfs_column *cols; /* carried-over columns + the written one */
};

/* Raw values of an enumerated attribute are its keys: each must select
 * one of the enumeration's values, or the array would hold cells that
 * have no label. The fill value is taken as it is, as in a CSV: it is what
 * cells nobody wrote show, so a slice read raw writes back unchanged.
 * `first` is the cell number of vals[0] in the file. */
static enum tfs_err check_enum_keys(const struct slice_job *j,
				    const uint8_t *vals, uint64_t n,
				    uint64_t first, const char *name,
				    struct tfs_diag *d)
{
	size_t w = tfs_datatype_size(j->at->type);
	bool has_fill = j->at->fill && j->at->fill_size == w;

	for (uint64_t i = 0; i < n; i++) {
		int64_t key = tfs_value_as_i64(j->at->type, vals + i * w);

		if ((key < 0 || (uint64_t)key >= j->en->value_num) &&
		    !(has_fill && !memcmp(vals + i * w, j->at->fill, w)))
			return tfs_fail(d, TFS_E_INVALID,
					"'%s': cell %" PRIu64 ": %" PRId64
					" is not a key of the enumeration '%s' "
					"(%" PRIu64 " values)",
					name, first + i, key, j->en->name,
					j->en->value_num);
	}
	return TFS_E_OK;
}

/* Appends cells [.., +n) of the written attribute with the carried-over
 * columns of batch b (NULL when there are none). */
static enum tfs_err slice_append(struct slice_job *j, const struct tfs_batch *b,
				 uint64_t n, const char *name,
				 struct tfs_diag *d)
{
	struct tfs_column *c;
	struct tfs_batch out;
	size_t ncols = b ? b->column_num : 0;
	uint64_t bytes;
	ssize_t got;

	if (__builtin_mul_overflow(n, j->cell_size, &bytes) || bytes > SIZE_MAX)
		return tfs_fail(d, TFS_E_TOO_BIG, "slice too large");
	if (tfs_buf_resize(&j->vals, (size_t)bytes) ||
	    (j->at->nullable && tfs_buf_resize(&j->validity, (size_t)n)))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	got = pread(j->fd, j->vals.data, (size_t)bytes, (off_t)j->off);
	if (got != (ssize_t)bytes)
		return tfs_fail(d, TFS_E_IO, "staged file: short read");
	if (j->en) {
		enum tfs_err e = check_enum_keys(j, j->vals.data, n,
						 (j->off - j->data_off) /
							 j->cell_size,
						 name, d);

		if (e)
			return e;
	}
	j->off += bytes;
	if (j->at->nullable)
		memset(j->validity.data, 1, (size_t)n);
	for (size_t i = 0; i < ncols; i++)
		j->cols[i] = b->columns[i];
	c = &j->cols[ncols];
	memset(c, 0, sizeof(*c));
	c->name = j->at->name;
	c->type = j->at->type;
	c->cell_val_num = j->at->cell_val_num;
	c->nullable = j->at->nullable;
	c->data = j->vals.data;
	c->data_len = bytes;
	c->validity = j->at->nullable ? j->validity.data : NULL;
	out.cell_num = n;
	out.column_num = ncols + 1;
	out.columns = j->cols;
	return tfs_writer_append(j->w, &out, NULL, d);
}

/* The attribute a slice write fills: of a dense array, fixed-size, and
 * for an enumerated one its enumeration (keys are checked). */
static enum tfs_err slice_attr(struct slice_job *j, const struct tfsd_arr *arr,
			       const struct tfsd_wtarget *t, int *ai,
			       struct tfs_diag *d)
{
	const struct tfs_schema *s = arr->schema;

	*ai = tfs_schema_attr_index(s, t->field);
	if (!tfs_schema_is_dense(s) || *ai < 0)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': slices are written to dense arrays only",
				t->name);
	tfs_schema_attr(s, (uint32_t)*ai, &j->at_info);
	j->at = &j->at_info;
	if (j->at->var)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': '%s' is var-size: write it as CSV",
				t->name, j->at->name);
	j->cell_size = tfs_field_cell_size(j->at);
	if (!j->at->enumeration)
		return TFS_E_OK;
	j->en = tfs_array_enumeration_named(arr->a, j->at->enumeration);
	if (!j->en || j->at->cell_val_num != 1 ||
	    !tfs_datatype_is_integer(j->at->type))
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': the enumeration '%s' of '%s' is "
				"missing or not over integer keys",
				t->name, j->at->enumeration, j->at->name);
	return TFS_E_OK;
}

/* The box SEL selects (no step, not empty) and its cell count. */
static enum tfs_err slice_box(const struct tfsd_arr *arr,
			      const struct tfsd_wtarget *t,
			      struct tfsr_sel **sel, struct tfs_range **box,
			      uint64_t *cells, struct tfs_diag *d)
{
	const struct tfs_schema *s = arr->schema;
	enum tfs_err e;

	*cells = 1;
	e = tfsr_sel_parse(t->sel, t->sel_len, s, arr->has_ned ? arr->ned : NULL,
			   sel, d);
	if (e)
		return tfs_fail(d, TFS_E_INVALID, "'%s': %s", t->name,
				tfs_diag_msg(d));
	if ((*sel)->empty)
		return tfs_fail(d, TFS_E_INVALID, "'%s': the selection is empty",
				t->name);
	*box = tfs_callocn(tfs_schema_dim_count(s), sizeof(**box));
	if (!*box)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		if ((*sel)->dims[k].stride != 1)
			return tfs_fail(d, TFS_E_INVALID,
					"'%s': a slice with a step cannot be "
					"written",
					t->name);
		(*box)[k] = (*sel)->dims[k].range;
		if (__builtin_mul_overflow(*cells, (*sel)->dims[k].count, cells))
			return tfs_fail(d, TFS_E_TOO_BIG, "'%s': too many cells",
					t->name);
	}
	return TFS_E_OK;
}

/* The staged file holds exactly the values of the box's cells (after a
 * .npy header that matches them): j->off then points at the first. */
static enum tfs_err slice_bytes(struct slice_job *j, const struct tfsd_wtarget *t,
				uint64_t cells, uint64_t size,
				struct tfs_diag *d)
{
	uint64_t expect, data_off = 0;
	enum tfs_err e;

	if (t->npy && (e = npy_check(j->fd, j->at, cells, t->name, &data_off, d)))
		return e;
	if (data_off > size ||
	    __builtin_mul_overflow(cells, j->cell_size, &expect) ||
	    size - data_off != expect)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': %" PRIu64 " bytes of values, the selection "
				"needs %" PRIu64 " (%" PRIu64 " cells of %" PRIu64
				" bytes)",
				t->name, size - (data_off < size ? data_off : size),
				cells * j->cell_size, cells, j->cell_size);
	j->off = j->data_off = data_off;
	return TFS_E_OK;
}

/* Writes the box: the staged values of the attribute ai beside the
 * other attributes' current values (read over the box: fill values where
 * nothing was written), batch by batch, then commits. */
static enum tfs_err slice_write(struct tfsd *fs, struct slice_job *j,
				const struct tfsd_arr *arr, int ai,
				const struct tfsd_wtarget *t,
				const struct tfs_range *box, uint64_t cells,
				uint64_t size, struct tfs_write_result *wr,
				struct tfs_diag *d)
{
	const struct tfs_schema *s = arr->schema;
	uint32_t attr_num = tfs_schema_attr_count(s);
	const char **others = tfs_callocn(attr_num, sizeof(*others));
	struct tfs_query *q = NULL;
	struct tfs_write_opts wo;
	size_t other_num = 0;
	enum tfs_err e;

	j->cols = tfs_callocn(attr_num + 1, sizeof(*j->cols));
	if (!others || !j->cols) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < attr_num; i++) {
		struct tfs_field_info other;

		tfs_schema_attr(s, i, &other);
		if ((int)i != ai)
			others[other_num++] = other.name;
	}
	write_opts_init(fs, t, &wo);
	if ((e = tfs_writer_open(t->path, &wo, TFS_WRITE_DENSE_BOX, box, &j->w, d)))
		goto out;
	if (other_num) {
		struct tfs_query_opts qo = {.subarray = box,
					    .fields = others,
					    .field_num = other_num};
		const struct tfs_batch *b;

		e = tfs_query_open(arr->a, &qo, &q, d);
		while (!e && !(e = tfs_query_next(q, &b, d)) && b)
			e = slice_append(j, b, b->cell_num, t->name, d);
	} else {
		for (uint64_t done = 0; !e && done < cells;) {
			uint64_t n = cells - done < SLICE_CHUNK_CELLS
					     ? cells - done
					     : SLICE_CHUNK_CELLS;

			e = slice_append(j, NULL, n, t->name, d);
			done += n;
		}
	}
	if (!e && j->off != size)
		e = tfs_fail(d, TFS_E_INTERNAL,
			     "'%s': the read gave other cells than the "
			     "selection",
			     t->name);
	if (!e)
		e = tfs_writer_commit(j->w, wr, d);
out:
	tfs_query_close(q);
	tfs_free(others);
	return e;
}

/* A/<attr>/slice[SEL] (raw or .npy): the staged values become a dense
 * fragment over SEL, the other attributes keeping their values there. */
static enum tfs_err commit_slice(struct tfsd *fs, const struct tfsd_wtarget *t,
				 const char *staged, struct tfsd_wresult *res,
				 struct tfs_diag *d)
{
	struct slice_job j;
	struct tfsd_arr *arr = NULL;
	struct tfsr_sel *sel = NULL;
	struct tfs_range *box = NULL;
	struct tfs_write_result wr;
	uint64_t cells = 0, size;
	struct stat st;
	enum tfs_err e;
	int ai;

	memset(&j, 0, sizeof(j));
	j.fd = open(staged, O_RDONLY | O_CLOEXEC);
	tfs_buf_init(&j.vals, TFS_BUF_NO_MAX);
	tfs_buf_init(&j.validity, TFS_BUF_NO_MAX);
	if (j.fd < 0 || fstat(j.fd, &st) != 0) {
		e = tfs_fail(d, TFS_E_IO, "staged file: %s", strerror(errno));
		goto out;
	}
	size = (uint64_t)st.st_size;
	if ((e = tfsd_arrays_get(fs->arrays, t->rel, 0, &arr, d)) ||
	    (e = slice_attr(&j, arr, t, &ai, d)) ||
	    (e = slice_box(arr, t, &sel, &box, &cells, d)) ||
	    (e = slice_bytes(&j, t, cells, size, d)) ||
	    (e = slice_write(fs, &j, arr, ai, t, box, cells, size, &wr, d)))
		goto out;
	res->wrote = true;
	snprintf(res->what, sizeof(res->what),
		 "%" PRIu64 " cells, dense fragment %s", wr.cell_num, wr.name);
out:
	tfs_writer_free(j.w);
	tfs_free(j.cols);
	tfs_free(box);
	tfsr_sel_free(sel);
	tfsd_arr_put(fs->arrays, arr);
	tfs_buf_release(&j.vals);
	tfs_buf_release(&j.validity);
	if (j.fd >= 0)
		close(j.fd);
	return e;
}

/* ---- Arrays from .npy files ---------------------------------------------------- */

/* Removes what a refused .npy made: the folder at path and all below. */
static void remove_tree(struct tfs_vfs *v, const char *path)
{
	struct tfs_dirlist l = {0};
	struct tfs_stat st;

	if (tfs_vfs_lstat(v, path, &st, NULL) || !st.exists)
		return;
	if (st.is_dir && !tfs_vfs_list(v, path, &l, NULL)) {
		for (size_t i = 0; i < l.count; i++) {
			char *child = tfs_path_join(path, l.names[i]);

			if (child)
				remove_tree(v, child);
			tfs_free(child);
		}
		tfs_dirlist_release(&l);
	}
	(void)tfs_vfs_remove(v, path, NULL);
}

/* The datatype (and its size) of a .npy dtype, byte-order mark aside. */
static const char *npy_type_name(const char *descr, uint64_t *size)
{
	static const struct {
		const char *descr, *type;
		uint64_t size;
	} types[] = {
		{"i1", "INT8", 1},    {"i2", "INT16", 2},  {"i4", "INT32", 4},
		{"i8", "INT64", 8},   {"u1", "UINT8", 1},  {"u2", "UINT16", 2},
		{"u4", "UINT32", 4},  {"u8", "UINT64", 8}, {"f4", "FLOAT32", 4},
		{"f8", "FLOAT64", 8}, {"b1", "BOOL", 1},
	};
	const char *g = descr;

	if (*g == '\'')
		g++;
	if (*g == '<' || *g == '|' || *g == '=')
		g++;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strncmp(g, types[i].descr, 2) == 0 &&
		    (g[2] == '\0' || g[2] == '\'')) {
			*size = types[i].size;
			return types[i].type;
		}
	}
	return NULL;
}

#define NPY_MAX_DIMS 32

/* The numbers of a .npy shape text ("3, 4" or "5,"): *dims of them into
 * shape, their product in *elems. False when one is no positive number,
 * there are more than NPY_MAX_DIMS, or the product overflows. */
static bool npy_shape_parse(const char *text, uint64_t shape[NPY_MAX_DIMS],
			    size_t *dims, uint64_t *elems)
{
	const char *p = text;

	*dims = 0;
	*elems = 1;
	while (*p) {
		char *end;
		unsigned long long n;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		errno = 0;
		n = strtoull(p, &end, 10);
		if (end == p || errno || n == 0 || *dims == NPY_MAX_DIMS ||
		    __builtin_mul_overflow(*elems, (uint64_t)n, elems))
			return false;
		shape[(*dims)++] = n;
		p = end;
	}
	return true;
}

/* The header of the staged .npy file: its dtype and shape text. */
static enum tfs_err npy_staged_head(const char *staged, const char *name,
				    char descr[128], char shape_text[512],
				    uint64_t *data_off, uint64_t *size,
				    struct tfs_diag *d)
{
	struct stat fst;
	enum tfs_err e;
	int fd = open(staged, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &fst) != 0) {
		e = tfs_fail(d, TFS_E_IO, "staged file: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return e;
	}
	*size = (uint64_t)fst.st_size;
	e = npy_head(fd, name, descr, shape_text, data_off, d);
	close(fd);
	return e;
}

/* The attribute a .npy copied into array A writes: the one its name
 * stem names, or the array's only one. */
static enum tfs_err npy_attr(const struct tfs_schema *s, const char *name,
			     struct tfs_field_info *at, struct tfs_diag *d)
{
	size_t stem = strlen(name) - 4;

	for (uint32_t i = 0; i < tfs_schema_attr_count(s); i++) {
		tfs_schema_attr(s, i, at);
		if (strlen(at->name) == stem && strncmp(at->name, name, stem) == 0)
			return TFS_E_OK;
	}
	if (tfs_schema_attr_count(s) == 1) {
		tfs_schema_attr(s, 0, at);
		return TFS_E_OK;
	}
	return tfs_fail(d, TFS_E_INVALID,
			"'%s': the array has %" PRIu32 " attributes: name the "
			".npy file after one (ATTR.npy)",
			name, tfs_schema_attr_count(s));
}

/* One dimension's part of the selection a .npy appends to: the first
 * from start for n indices, the others their whole domain, which the
 * file's shape must match. */
static enum tfs_err npy_sel_dim(struct tfs_buf *sel, const struct tfs_field_info *dim,
				uint32_t k, uint64_t n, const uint8_t *start,
				const char *name, struct tfs_diag *d)
{
	bool is_signed = tfs_datatype_class(dim->type) == TFS_CLASS_SIGNED;
	const uint8_t *lo = k == 0 ? start : dim->domain_lo;
	int64_t slo = tfs_value_as_i64(dim->type, lo);
	int64_t shi = tfs_value_as_i64(dim->type, dim->domain_hi);
	uint64_t ulo = tfs_value_as_u64(dim->type, lo);
	uint64_t uhi = tfs_value_as_u64(dim->type, dim->domain_hi);
	uint64_t room = is_signed ? (uint64_t)shi - (uint64_t)slo : uhi - ulo;

	if (k > 0 && room != n - 1)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': dimension '%s' holds %" PRIu64 " indices, "
				"the .npy %" PRIu64 " (only the first dimension "
				"grows)",
				name, dim->name, room + 1, n);
	if (room < n - 1)
		return tfs_fail(d, TFS_E_RANGE,
				"'%s': %" PRIu64 " indices to append after the "
				"last one leave the domain of '%s'",
				name, n, dim->name);
	if (is_signed)
		return tfs_buf_printf(sel, "%s%" PRId64 ":%" PRId64, k ? "," : "",
				      slo, slo + (int64_t)(n - 1) + 1)
			       ? tfs_fail(d, TFS_E_NOMEM, "out of memory")
			       : TFS_E_OK;
	return tfs_buf_printf(sel, "%s%" PRIu64 ":%" PRIu64, k ? "," : "", ulo,
			      ulo + n)
		       ? tfs_fail(d, TFS_E_NOMEM, "out of memory")
		       : TFS_E_OK;
}

/* Where a .npy copied into the dense array at t goes: the attribute and
 * the selection (after the last written index of the first dimension,
 * the whole domain of the others), from the array as it is now (every
 * fragment, also those whose timestamps run ahead of the clock). */
static enum tfs_err npy_append_target(struct tfsd *fs, const struct tfsd_wtarget *t,
				      const char *staged, char field[256],
				      struct tfs_buf *sel, struct tfs_diag *d)
{
	struct tfs_open_opts oo = {.vfs = fs->cfg.vfs, .key = write_key(fs, t),
				   .timestamp = UINT64_MAX - 1, .threads = 1};
	char descr[128], shape_text[512];
	uint64_t shape[NPY_MAX_DIMS], data_off, size, elems;
	struct tfs_field_info at, dim;
	struct tfs_array *a = NULL;
	const struct tfs_schema *s;
	struct tfs_range ned[128];
	uint8_t start[8];
	size_t dims;
	uint32_t D;
	enum tfs_err e;

	if ((e = npy_staged_head(staged, t->name, descr, shape_text, &data_off,
				 &size, d)))
		return e;
	if ((e = tfs_array_open(t->path, &oo, &a, d)))
		return e;
	s = tfs_array_schema(a);
	D = tfs_schema_dim_count(s);
	if (!tfs_schema_is_dense(s) || D > 128) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "'%s': a .npy is appended to dense arrays only "
			     "(write cells of a sparse array as CSV)",
			     t->name);
		goto out;
	}
	if ((e = npy_attr(s, t->name, &at, d)))
		goto out;
	if (!npy_shape_parse(shape_text, shape, &dims, &elems) || dims < D) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "'%s': .npy shape (%s): the array has %" PRIu32
			     " dimensions",
			     t->name, shape_text, D);
		goto out;
	}
	tfs_schema_dim(s, 0, &dim);
	if (!dim.has_domain || !tfs_datatype_is_integer(dim.type) ||
	    tfs_datatype_is_datetime(dim.type)) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "'%s': a .npy is appended along an integer first "
			     "dimension ('%s' is not one)",
			     t->name, dim.name);
		goto out;
	}
	memcpy(start, dim.domain_lo, tfs_datatype_size(dim.type));
	if (tfs_array_non_empty_domain(a, ned)) {
		uint64_t last = tfs_value_as_u64(dim.type, ned[0].hi);

		if (memcmp(ned[0].hi, dim.domain_hi, tfs_datatype_size(dim.type)) == 0) {
			e = tfs_fail(d, TFS_E_RANGE,
				     "'%s': the array is full along '%s'",
				     t->name, dim.name);
			goto out;
		}
		tfs_put_uint(start, tfs_datatype_size(dim.type), last + 1);
	}
	for (uint32_t k = 0; k < D && !e; k++) {
		tfs_schema_dim(s, k, &dim);
		if (!dim.has_domain || !tfs_datatype_is_integer(dim.type))
			e = tfs_fail(d, TFS_E_INVALID,
				     "'%s': dimension '%s' is no integer one",
				     t->name, dim.name);
		else
			e = npy_sel_dim(sel, &dim, k, shape[k], start, t->name, d);
	}
	if (!e)
		snprintf(field, 256, "%s", at.name);
out:
	tfs_array_close(a);
	return e;
}

/* A/NAME.npy: appended to the dense array A as a CSV without the
 * dimension's column is (SPEC §6): a slice of the attribute NAME (or of
 * the only attribute) after the last written index of the first
 * dimension, as wide as the domain in the others, written with the
 * array locked so that appends at once take places of their own.
 * Anything else is refused with the reason. */
static enum tfs_err commit_npy_array(struct tfsd *fs,
				     const struct tfsd_wtarget *t,
				     const char *staged, struct tfsd_wresult *res,
				     struct tfs_diag *d)
{
	struct tfsd_wtarget slice = *t;
	struct tfs_buf sel;
	char field[256];
	int lock = tfs_array_lock(t->path, fs->cfg.vfs);
	enum tfs_err e;

	tfs_buf_init(&sel, DOC_MAX);
	e = npy_append_target(fs, t, staged, field, &sel, d);
	if (!e) {
		slice.kind = TFSD_W_SLICE;
		slice.field = field;
		slice.sel = (char *)sel.data;
		slice.sel_len = sel.len;
		slice.npy = true;
		/* The cache may hold the array as it was before the last
		 * append. */
		tfsd_arrays_invalidate(fs->arrays, t->rel);
		e = commit_slice(fs, &slice, staged, res, d);
	}
	if (!e) {
		size_t n = strlen(res->what);

		snprintf(res->what + n, sizeof(res->what) - n,
			 ", appended as '%s' slice[%.*s]", field, (int)sel.len,
			 (const char *)sel.data);
	}
	tfs_array_unlock(lock);
	tfs_buf_release(&sel);
	return e;
}

/* The schema JSON of a new array of a .npy's shape and type (dimensions
 * d0, d1, ... UINT64 from 0, tiles of at most 2^20 cells: the largest
 * extent halves until they fit; attribute v; ZSTD) and the selection of
 * all of it. */
static enum tfs_err npy_new_schema_json(const uint64_t *shape, size_t dims,
					const char *type, struct tfs_buf *json,
					struct tfs_buf *sel)
{
	uint64_t extent[NPY_MAX_DIMS], cells_per_tile;
	enum tfs_err e;

	memcpy(extent, shape, dims * sizeof(*shape));
	for (;;) {
		size_t big = 0;

		cells_per_tile = 1;
		for (size_t k = 0; k < dims; k++) {
			if (extent[k] > extent[big])
				big = k;
			if (__builtin_mul_overflow(cells_per_tile, extent[k],
						   &cells_per_tile))
				cells_per_tile = UINT64_MAX;
		}
		if (cells_per_tile <= (UINT64_C(1) << 20))
			break;
		extent[big] = (extent[big] + 1) / 2;
	}
	e = tfs_buf_printf(json, "{\"array_type\":\"dense\",\"cell_order\":"
				 "\"row-major\",\"tile_order\":\"row-major\","
				 "\"dims\":[");
	for (size_t k = 0; !e && k < dims; k++) {
		e = tfs_buf_printf(json,
				   "%s{\"name\":\"d%zu\",\"type\":\"UINT64\","
				   "\"domain\":[0,%" PRIu64
				   "],\"tile\":%" PRIu64
				   ",\"filters\":[\"ZSTD(level=-1)\"]}",
				   k ? "," : "", k, shape[k] - 1, extent[k]);
		if (!e)
			e = tfs_buf_printf(sel, "%s0:%" PRIu64, k ? "," : "",
					   shape[k]);
	}
	if (!e)
		e = tfs_buf_printf(json,
				   "],\"attrs\":[{\"name\":\"v\",\"type\":"
				   "\"%s\",\"filters\":[\"ZSTD(level=-1)\"]}]}",
				   type);
	return e;
}

/* DIR/NAME.npy: a new dense array DIR/NAME of the file's shape and dtype
 * (dimensions d0, d1, ... UINT64 from 0, one attribute v, ZSTD), then the
 * values written as the slice of the whole array; undone when refused. */
/* A staged .npy that makes a new array: its dtype, shape and size. */
struct npy_new {
	char descr[128], shape_text[512];
	uint64_t shape[NPY_MAX_DIMS];
	size_t dims;
	uint64_t elems, type_size;
	const char *type;
};

/* The staged file's header, checked: a little-endian number type, 1 to
 * NPY_MAX_DIMS dimensions none empty, and exactly the values' bytes. */
static enum tfs_err npy_new_head(const struct tfsd_wtarget *t,
				 const char *staged, struct npy_new *nn,
				 struct tfs_diag *d)
{
	uint64_t data_off, file_size_, bytes;
	enum tfs_err e;

	nn->dims = 0;
	nn->elems = 1;
	if ((e = npy_staged_head(staged, t->name, nn->descr, nn->shape_text,
				 &data_off, &file_size_, d)))
		return e;
	nn->type = npy_type_name(nn->descr, &nn->type_size);
	if (!nn->type)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy dtype %s: a new array takes "
				"little-endian integers, floats or bools",
				t->name, nn->descr);
	if (!npy_shape_parse(nn->shape_text, nn->shape, &nn->dims, &nn->elems))
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy shape (%s): a new array "
				"needs 1 to %d dimensions, none empty",
				t->name, nn->shape_text, NPY_MAX_DIMS);
	if (nn->dims == 0)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': a .npy scalar makes no array", t->name);
	if (__builtin_mul_overflow(nn->elems, nn->type_size, &bytes) ||
	    file_size_ < data_off || file_size_ - data_off != bytes)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy of shape (%s) %s needs %" PRIu64
				" bytes of values",
				t->name, nn->shape_text, nn->descr,
				nn->elems <= UINT64_MAX / nn->type_size
					? nn->elems * nn->type_size
					: UINT64_MAX);
	return TFS_E_OK;
}

/* The values of the new array, written as a slice of all of it. */
static enum tfs_err npy_new_values(struct tfsd *fs, const struct tfsd_wtarget *t,
				   const char *staged, const struct tfs_buf *sel,
				   struct tfsd_wresult *res, struct tfs_diag *d)
{
	struct tfsd_wtarget slice;

	memset(&slice, 0, sizeof(slice));
	slice.kind = TFSD_W_SLICE;
	slice.rel = t->rel;
	slice.path = t->path;
	slice.name = t->name;
	slice.log_dir = t->log_dir;
	slice.field = (char *)"v";
	slice.sel = (char *)sel->data;
	slice.sel_len = sel->len;
	slice.npy = true;
	return commit_slice(fs, &slice, staged, res, d);
}

static enum tfs_err commit_npy_new(struct tfsd *fs,
				   const struct tfsd_wtarget *t,
				   const char *staged, struct tfsd_wresult *res,
				   struct tfs_diag *d)
{
	struct tfs_vfs *v = tfsd_arrays_vfs(fs->arrays);
	struct npy_new nn;
	struct tfs_buf json, sel;
	struct tfs_write_opts wo;
	struct tfs_schema *schema = NULL;
	struct tfs_stat st;
	enum tfs_err e;

	tfs_buf_init(&json, DOC_MAX);
	tfs_buf_init(&sel, DOC_MAX);
	if (!tfs_vfs_lstat(v, t->path, &st, NULL) && st.exists)
		return tfs_fail(d, TFS_E_EXISTS,
				"'%s': '%.*s' exists (a .npy file here makes a "
				"new array of its name)",
				t->name, (int)(strlen(t->name) - 4), t->name);
	if ((e = npy_new_head(t, staged, &nn, d)))
		return e;
	if ((e = npy_new_schema_json(nn.shape, nn.dims, nn.type, &json, &sel))) {
		e = tfs_fail(d, e, "out of memory");
		goto out;
	}
	e = tfs_schema_from_json_new((const char *)json.data, json.len, &schema,
				     d);
	if (e) {
		e = tfs_fail(d, e, "'%s': %s", t->name, tfs_diag_msg(d));
		goto out;
	}
	write_opts_init(fs, t, &wo);
	e = tfs_array_create(t->path, schema, &wo, d);
	if (e)
		goto out_undo;
	tfsd_arrays_invalidate(fs->arrays, t->rel);
	e = npy_new_values(fs, t, staged, &sel, res, d);
	if (!e) {
		snprintf(res->what, sizeof(res->what),
			 "new array, %s, %" PRIu64 " cells", nn.type, nn.elems);
		goto out;
	}
out_undo:
	remove_tree(v, t->path);
	tfsd_arrays_invalidate(fs->arrays, t->rel);
out:
	tfs_schema_free(schema);
	tfs_buf_release(&json);
	tfs_buf_release(&sel);
	return e;
}

enum tfs_err tfsd_write_commit(struct tfsd *fs, const struct tfsd_wtarget *t,
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
	case TFSD_W_SLICE: e = commit_slice(fs, t, staged_path, res, d); break;
	case TFSD_W_META: e = commit_meta(fs, t, staged_path, res, d); break;
	case TFSD_W_NPY_NEW:
		e = commit_npy_new(fs, t, staged_path, res, d);
		break;
	case TFSD_W_NPY_ARRAY:
		e = commit_npy_array(fs, t, staged_path, res, d);
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

/* ---- Ingest logs ---------------------------------------------------------------- */

#define ILOG_LINES 200
#define ILOG_DIRS 256

struct ilog_dir {
	char *dir;
	struct tfs_buf text; /* lines, each ending in '\n' */
	size_t lines;
	uint64_t used;
};

struct tfsd_ilog {
	pthread_mutex_t lock;
	struct ilog_dir dirs[ILOG_DIRS]; /* protected by lock */
	size_t dir_num;                  /* protected by lock */
	uint64_t tick;                   /* protected by lock */
};

enum tfs_err tfsd_ilog_new(struct tfsd_ilog **out)
{
	struct tfsd_ilog *l = tfs_callocn(1, sizeof(*l));

	*out = l;
	if (!l)
		return TFS_E_NOMEM;
	pthread_mutex_init(&l->lock, NULL);
	return TFS_E_OK;
}

void tfsd_ilog_free(struct tfsd_ilog *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->dir_num; i++) {
		tfs_free(l->dirs[i].dir);
		tfs_buf_release(&l->dirs[i].text);
	}
	pthread_mutex_destroy(&l->lock);
	tfs_free(l);
}

static struct ilog_dir *ilog_find(struct tfsd_ilog *l, const char *dir)
{
	for (size_t i = 0; i < l->dir_num; i++)
		if (strcmp(l->dirs[i].dir, dir) == 0)
			return &l->dirs[i];
	return NULL;
}

void tfsd_ilog_add(struct tfsd_ilog *l, const char *dir, const char *file,
		   bool failed, const char *outcome)
{
	struct timespec ts;
	struct ilog_dir *ld;
	char when[48];
	char *dir_copy;
	/* A newline in a name must not make a line of its own. */
	char esc_file[4 * TFSD_NAME_MAX + 1], esc_outcome[1024];

	clock_gettime(CLOCK_REALTIME, &ts);
	tfsr_format_time(when, sizeof(when),
			 (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
	tfs_log(failed ? TFS_LOG_ERROR : TFS_LOG_INFO, "write '/%s%s%s': %s%s",
		dir, *dir ? "/" : "", file, failed ? "refused: " : "", outcome);
	if (!l)
		return;
	tfs_escape_ctrl(esc_file, sizeof(esc_file), file);
	tfs_escape_ctrl(esc_outcome, sizeof(esc_outcome), outcome);
	dir_copy = tfs_strdup(dir);
	if (!dir_copy)
		return;
	pthread_mutex_lock(&l->lock);
	ld = ilog_find(l, dir);
	if (!ld) {
		if (l->dir_num < ILOG_DIRS) {
			ld = &l->dirs[l->dir_num++];
		} else {
			ld = &l->dirs[0];
			for (size_t i = 1; i < l->dir_num; i++)
				if (l->dirs[i].used < ld->used)
					ld = &l->dirs[i];
			tfs_free(ld->dir);
			tfs_buf_release(&ld->text);
		}
		memset(ld, 0, sizeof(*ld));
		ld->dir = dir_copy;
		dir_copy = NULL;
		tfs_buf_init(&ld->text, TFS_BUF_NO_MAX);
	}
	ld->used = ++l->tick;
	if (ld->lines == ILOG_LINES) {
		uint8_t *nl = memchr(ld->text.data, '\n', ld->text.len);
		size_t cut = nl ? (size_t)(nl - ld->text.data) + 1 : ld->text.len;

		memmove(ld->text.data, ld->text.data + cut, ld->text.len - cut);
		ld->text.len -= cut;
		ld->lines--;
	}
	if (tfs_buf_printf(&ld->text, "%s  %s  %s%s\n", when, esc_file,
			   failed ? "refused: " : "ok: ", esc_outcome) == TFS_E_OK)
		ld->lines++;
	pthread_mutex_unlock(&l->lock);
	tfs_free(dir_copy);
}

bool tfsd_ilog_has(struct tfsd_ilog *l, const char *dir)
{
	bool has;

	pthread_mutex_lock(&l->lock);
	has = ilog_find(l, dir) != NULL;
	pthread_mutex_unlock(&l->lock);
	return has;
}

enum tfs_err tfsd_ilog_render(struct tfsd_ilog *l, const char *dir,
			      struct tfs_buf *out)
{
	struct ilog_dir *ld;
	enum tfs_err e = TFS_E_OK;

	pthread_mutex_lock(&l->lock);
	ld = ilog_find(l, dir);
	if (ld)
		e = tfs_buf_append(out, ld->text.data, ld->text.len);
	pthread_mutex_unlock(&l->lock);
	return e;
}
