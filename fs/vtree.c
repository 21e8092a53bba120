/* The virtual tree of SPEC §2: which names a folder of the mount holds and
 * what a path means. Folders and groups under SOURCE appear as folders;
 * each array appears as a folder of documents, field folders with slice
 * files, metadata, fragments and versions. A name that collides with an
 * attribute or dimension belongs to the field; the special entry stays
 * reachable as "__name". Nothing here decodes cells: listing and stat
 * cost the array's opening (cached) at most. */
#include "vtree_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "png_picture.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"

const char *const tfsd__array_specials[] = {
	"schema.json", "data.csv", "metadata.json", "metadata",
	"fragments",   "versions",
};
const size_t tfsd__array_special_num =
	sizeof(tfsd__array_specials) / sizeof(tfsd__array_specials[0]);

void tfsd_node_release(struct tfsd *fs, struct tfsd_node *n)
{
	tfs_free(n->src);
	tfs_free(n->rel);
	tfs_free(n->name);
	tfs_free(n->sel);
	tfs_free(n->where);
	tfsd_arr_put(fs->arrays, n->arr);
	memset(n, 0, sizeof(*n));
}

bool tfsd_node_immutable(const struct tfsd *fs, const struct tfsd_node *n)
{
	if (n->kind == TFSD_N_FOLDER)
		return false;
	return n->version_view || fs->cfg.timestamp != 0;
}

char *tfsd__path_join(const char *a, const char *b)
{
	struct tfs_buf buf;

	tfs_buf_init(&buf, TFS_BUF_NO_MAX);
	if (tfs_buf_printf(&buf, "%s%s%s", a, *a ? "/" : "", b)) {
		tfs_buf_release(&buf);
		return NULL;
	}
	return (char *)tfs_buf_detach(&buf, NULL);
}

/* Makes n the view of the array at rel (src its folder), not yet opened. */
static enum tfs_err node_array(struct tfsd_node *n, const char *src,
			       const char *rel, uint64_t timestamp,
			       bool version_view, struct tfs_diag *d)
{
	memset(n, 0, sizeof(*n));
	n->kind = TFSD_N_ARRAY;
	n->src = tfs_strdup(src);
	n->rel = tfs_strdup(rel);
	n->timestamp = timestamp;
	n->version_view = version_view;
	n->field = -1;
	if (!n->src || !n->rel)
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", rel);
	return TFS_E_OK;
}

/* The opened array of a node inside an array view (a new reference). */
enum tfs_err tfsd__node_open(struct tfsd *fs, const struct tfsd_node *n,
			     struct tfsd_arr **out, struct tfs_diag *d)
{
	if (n->arr) {
		tfsd_arr_get(fs->arrays, n->arr);
		*out = n->arr;
		return TFS_E_OK;
	}
	return tfsd_arrays_get(fs->arrays, n->rel, n->timestamp, out, d);
}

/* A copy of the parent's array context for a child node. */
static enum tfs_err node_inherit(struct tfsd *fs, struct tfsd_node *child,
				 const struct tfsd_node *parent,
				 struct tfsd_arr *arr, enum tfsd_node_kind kind,
				 struct tfs_diag *d)
{
	memset(child, 0, sizeof(*child));
	child->kind = kind;
	child->rel = tfs_strdup(parent->rel);
	child->timestamp = parent->timestamp;
	child->version_view = parent->version_view;
	child->field = parent->field;
	child->arr = arr;
	tfsd_arr_get(fs->arrays, arr);
	if (!child->rel)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if (parent->where) {
		child->where = tfs_strndup(parent->where, parent->where_len);
		child->where_len = parent->where_len;
		if (!child->where)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	return TFS_E_OK;
}

/* "where[COND]": COND (a view into name); false when not of that form. */
static bool where_name_parse(const char *name, const char **cond, size_t *len)
{
	size_t n = strlen(name);

	if (n < 7 || strncmp(name, "where[", 6) != 0 || name[n - 1] != ']')
		return false;
	*cond = name + 6;
	*len = n - 7;
	return true;
}

/* Checks a filter against the array: TFS_E_NOT_FOUND saying where and
 * why it is wrong. */
static enum tfs_err where_check(const struct tfsd_arr *arr, const char *cond,
				size_t len, const char *name,
				struct tfs_diag *d)
{
	struct tfs_where *w = NULL;
	struct tfs_diag why;
	enum tfs_err e;

	tfs_diag_init(&why);
	e = tfsr_where_parse(arr->schema, arr->a, cond, len, &w, NULL, &why);
	tfs_where_free(w);
	if (e == TFS_E_NOMEM)
		return tfs_fail(d, e, "'%s': %s", name, tfs_diag_msg(&why));
	if (e)
		return tfs_fail(d, TFS_E_NOT_FOUND, "'%s': %s", name,
				tfs_diag_msg(&why));
	return TFS_E_OK;
}

/* "stats.json" or "slice[SEL].stats.json": SEL (empty for the first). */
static bool stats_name_parse(const char *name, const char **sel,
			     size_t *sel_len)
{
	static const char ext[] = ".stats.json";
	size_t n = strlen(name), e = sizeof(ext) - 1;

	if (strcmp(name, "stats.json") == 0) {
		*sel = "";
		*sel_len = 0;
		return true;
	}
	if (n < 7 + e || strncmp(name, "slice[", 6) != 0 ||
	    strcmp(name + n - e, ext) != 0 || name[n - e - 1] != ']')
		return false;
	*sel = name + 6;
	*sel_len = n - e - 7;
	return true;
}

/* A stats.json node of field (-1: every attribute) over sel. */
static enum tfs_err stats_node(struct tfsd *fs, const struct tfsd_node *dir,
			       struct tfsd_arr *arr, int field, const char *sel,
			       size_t sel_len, const char *name,
			       struct tfsd_node *out, struct tfs_diag *d)
{
	struct tfsr_sel *parsed = NULL;
	enum tfs_err e;

	e = tfsr_sel_parse(sel, sel_len, arr->schema,
			   arr->has_ned ? arr->ned : NULL, &parsed, d);
	tfsr_sel_free(parsed);
	if (e)
		return tfs_fail(d, TFS_E_NOT_FOUND, "'%s': %s", name,
				tfs_diag_msg(d));
	e = node_inherit(fs, out, dir, arr, TFSD_N_FILE, d);
	if (!e) {
		out->field = field;
		out->file = TFSD_F_STATS;
		out->sel = tfs_strndup(sel, sel_len);
		out->sel_len = sel_len;
		if (!out->sel)
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	return e;
}

static enum tfs_err node_set_slice(struct tfsd_node *n, const char *sel,
				   size_t sel_len, enum tfsr_format fmt,
				   struct tfs_diag *d)
{
	n->kind = TFSD_N_FILE;
	n->file = TFSD_F_SLICE;
	n->fmt = fmt;
	n->sel = tfs_strndup(sel, sel_len);
	n->sel_len = sel_len;
	if (!n->sel)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

/* Checks a slice name against the array: the format suits the field and
 * the selection parses (SPEC §3). */
static enum tfs_err slice_check(const struct tfsd_arr *arr, int field,
				const char *sel, size_t sel_len,
				enum tfsr_format fmt, const char *name,
				struct tfs_diag *d)
{
	struct tfsr_sel *parsed = NULL;
	struct tfs_diag why;
	enum tfs_err e;

	tfs_diag_init(&why);
	if (!tfsr_renderer_takes(tfsr_renderer_of(fmt), arr->schema, field,
				 &why))
		return tfs_fail(d, TFS_E_NOT_FOUND, "'%s': %s", name,
				tfs_diag_msg(&why));
	e = tfsr_sel_parse(sel, sel_len, arr->schema,
			   arr->has_ned ? arr->ned : NULL, &parsed, d);
	if (!e && (tfsr_renderer_of(fmt)->flags & TFSR_R_IMAGE))
		e = tfsr_png_sel_check(parsed, arr->schema, NULL, NULL, d);
	tfsr_sel_free(parsed);
	if (e)
		return tfs_fail(d, TFS_E_NOT_FOUND, "'%s': %s", name,
				tfs_diag_msg(d));
	return TFS_E_OK;
}

/* Whether the array (field -1) or field shown in dir has a preview.png:
 * not in a filtered view, whose preview would show the cells it leaves
 * out. */
bool tfsd__has_preview(const struct tfsd_node *dir, const struct tfsd_arr *arr,
		       int field)
{
	int attr;
	uint32_t ky, kx;

	return !dir->where &&
	       tfsr_preview_plan(arr->schema, arr->has_ned ? arr->ned : NULL,
				 field, &attr, &ky, &kx);
}

static enum tfs_err node_set_preview(struct tfsd_node *n)
{
	n->kind = TFSD_N_FILE;
	n->file = TFSD_F_PREVIEW;
	return TFS_E_OK;
}

/* name is a slice file's (SEL and format into sel, fmt) that dir can
 * show: not a picture in a filtered view. */
static bool slice_name_here(const struct tfsd_node *dir, const char *name,
			    const char **sel, size_t *sel_len,
			    enum tfsr_format *fmt)
{
	return tfsr_slice_name_parse(name, sel, sel_len, fmt) &&
	       !(dir->where && (tfsr_renderer_of(*fmt)->flags & TFSR_R_IMAGE));
}

/* The slice file sel in fmt of field (-1: every attribute) of arr,
 * checked against the array (name as looked up). */
static enum tfs_err slice_node(struct tfsd *fs, const struct tfsd_node *dir,
			       struct tfsd_arr *arr, int field, const char *sel,
			       size_t sel_len, enum tfsr_format fmt,
			       const char *name, struct tfsd_node *out,
			       struct tfs_diag *d)
{
	enum tfs_err e = slice_check(arr, field, sel, sel_len, fmt, name, d);

	if (!e)
		e = node_inherit(fs, out, dir, arr, TFSD_N_FILE, d);
	if (!e)
		e = node_set_slice(out, sel, sel_len, fmt, d);
	return e;
}

/* The preview.png of dir's array or field. */
static enum tfs_err preview_node(struct tfsd *fs, const struct tfsd_node *dir,
				 struct tfsd_arr *arr, struct tfsd_node *out,
				 struct tfs_diag *d)
{
	enum tfs_err e = node_inherit(fs, out, dir, arr, TFSD_N_FILE, d);

	return e ? e : node_set_preview(out);
}

/* "__name" → "name" when name is special here; else NULL. */
static const char *unescape_special(const char *name)
{
	if (strncmp(name, "__", 2) != 0)
		return NULL;
	for (size_t i = 0; i < tfsd__array_special_num; i++)
		if (strcmp(name + 2, tfsd__array_specials[i]) == 0)
			return name + 2;
	return strncmp(name + 2, "slice[", 6) == 0 ? name + 2 : NULL;
}

/* where[COND] of an array's folder: the array's view filtered by COND. */
static enum tfs_err child_where(struct tfsd *fs, const struct tfsd_node *dir,
				struct tfsd_arr *arr, const char *cond,
				size_t len, const char *name,
				struct tfsd_node *out, struct tfs_diag *d)
{
	enum tfs_err e = where_check(arr, cond, len, name, d);

	if (!e)
		e = node_inherit(fs, out, dir, arr, TFSD_N_ARRAY, d);
	if (!e) {
		out->where = tfs_strndup(cond, len);
		out->where_len = len;
		if (!out->where)
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	return e;
}

/* The special entry of an array's folder called special (name as
 * looked up): a document, a folder of the array's, or a slice file.
 * TFS_E_NOT_FOUND (no message) when there is none of that name. */
static enum tfs_err child_special(struct tfsd *fs, const struct tfsd_node *dir,
				  struct tfsd_arr *arr, const char *special,
				  const char *name, struct tfsd_node *out,
				  struct tfs_diag *d)
{
	const char *sel;
	size_t sel_len;
	enum tfsr_format fmt;
	enum tfs_err e;

	if (strcmp(special, "stats.json") == 0)
		return stats_node(fs, dir, arr, -1, "", 0, name, out, d);
	if (strcmp(special, "schema.json") == 0 ||
	    strcmp(special, "metadata.json") == 0) {
		e = node_inherit(fs, out, dir, arr, TFSD_N_FILE, d);
		out->file = special[0] == 's' ? TFSD_F_SCHEMA
					      : TFSD_F_METADATA_JSON;
		return e;
	}
	if (strcmp(special, "data.csv") == 0) {
		e = node_inherit(fs, out, dir, arr, TFSD_N_FILE, d);
		return e ? e : node_set_slice(out, "", 0, TFSR_FMT_CSV, d);
	}
	if (strcmp(special, "metadata") == 0)
		return node_inherit(fs, out, dir, arr, TFSD_N_META_DIR, d);
	if (strcmp(special, "fragments") == 0)
		return node_inherit(fs, out, dir, arr, TFSD_N_FRAGS, d);
	if (strcmp(special, "versions") == 0 && !dir->version_view)
		return node_inherit(fs, out, dir, arr, TFSD_N_VERSIONS, d);
	if (strcmp(special, "preview.png") == 0 && tfsd__has_preview(dir, arr, -1))
		return preview_node(fs, dir, arr, out, d);
	if (slice_name_here(dir, special, &sel, &sel_len, &fmt))
		return slice_node(fs, dir, arr, -1, sel, sel_len, fmt, name, out, d);
	tfs_diag_init(d);
	return TFS_E_NOT_FOUND;
}

static enum tfs_err child_of_array(struct tfsd *fs, const struct tfsd_node *dir,
				   const char *name, struct tfsd_node *out,
				   struct tfs_diag *d)
{
	struct tfsd_arr *arr;
	const char *special = name;
	const char *sel;
	size_t sel_len;
	enum tfs_err e;
	int field;

	e = tfsd__node_open(fs, dir, &arr, d);
	if (e)
		return e;
	field = tfs_schema_field_index(arr->schema, name);
	if (field >= 0) {
		e = node_inherit(fs, out, dir, arr, TFSD_N_FIELD, d);
		out->field = field;
		goto out_put;
	}
	if (unescape_special(name))
		special = unescape_special(name);
	else if (strcmp(name, "__preview.png") == 0)
		special = name + 2;
	else if (strncmp(name, "__", 2) == 0)
		goto not_found;
	if (dir->where && strcmp(special, "data.csv") != 0 &&
	    strcmp(special, "stats.json") != 0 &&
	    strncmp(special, "slice[", 6) != 0)
		goto not_found; /* a filtered view has cells only */
	if (!dir->where && where_name_parse(special, &sel, &sel_len))
		e = child_where(fs, dir, arr, sel, sel_len, name, out, d);
	else
		e = child_special(fs, dir, arr, special, name, out, d);
	goto out_put;
not_found:
	e = TFS_E_NOT_FOUND;
	tfs_diag_init(d);
out_put:
	tfsd_arr_put(fs->arrays, arr);
	if (e)
		tfsd_node_release(fs, out);
	return e;
}

static enum tfs_err child_of_field(struct tfsd *fs, const struct tfsd_node *dir,
				   const char *name, struct tfsd_node *out,
				   struct tfs_diag *d)
{
	const char *sel;
	size_t sel_len;
	enum tfsr_format fmt;
	enum tfs_err e;

	if (dir->kind == TFSD_N_FIELD && strcmp(name, "tiles") == 0)
		return node_inherit(fs, out, dir, dir->arr, TFSD_N_TILES, d);
	if (dir->kind == TFSD_N_FIELD && strcmp(name, "preview.png") == 0 &&
	    tfsd__has_preview(dir, dir->arr, dir->field)) {
		e = preview_node(fs, dir, dir->arr, out, d);
		if (e)
			tfsd_node_release(fs, out);
		return e;
	}
	if (dir->kind == TFSD_N_FIELD &&
	    stats_name_parse(name, &sel, &sel_len)) {
		struct tfs_field_info f;

		tfs_schema_field(dir->arr->schema, dir->field, &f);
		if (f.is_dim)
			return TFS_E_NOT_FOUND;
		e = stats_node(fs, dir, dir->arr, dir->field, sel, sel_len,
			       name, out, d);
		if (e)
			tfsd_node_release(fs, out);
		return e;
	}
	if (!slice_name_here(dir, name, &sel, &sel_len, &fmt))
		return TFS_E_NOT_FOUND;
	e = slice_node(fs, dir, dir->arr, dir->field, sel, sel_len, fmt, name,
		       out, d);
	if (e)
		tfsd_node_release(fs, out);
	return e;
}

enum tfs_err tfsd_meta_name_encode(struct tfs_buf *out, const char *key,
				   size_t key_len)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; i < key_len && !e; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c == '/' || c == '%' || c == '\0' || (i == 0 && c == '.'))
			e = tfs_buf_printf(out, "%%%02X", c);
		else
			e = tfs_buf_append_u8(out, c);
	}
	return e;
}

bool tfsd_meta_name_matches(const char *name, const char *key, size_t key_len)
{
	struct tfs_buf enc;
	bool eq;

	tfs_buf_init(&enc, TFS_BUF_NO_MAX);
	eq = !tfsd_meta_name_encode(&enc, key, key_len) &&
	     enc.len == strlen(name) && memcmp(enc.data, name, enc.len) == 0;
	tfs_buf_release(&enc);
	return eq;
}

static enum tfs_err child_of_meta(struct tfsd *fs, const struct tfsd_node *dir,
				  const char *name, struct tfsd_node *out,
				  struct tfs_diag *d)
{
	const struct tfs_array *a = dir->arr->a;

	for (size_t i = 0; i < tfs_array_metadata_count(a); i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(a, i);
		enum tfs_err e;

		if (kv->deleted || !tfsd_meta_name_matches(name, kv->key,
							   kv->key_len))
			continue;
		e = node_inherit(fs, out, dir, dir->arr, TFSD_N_FILE, d);
		out->file = TFSD_F_META_VALUE;
		if (!e && !(out->name = tfs_strndup(kv->key, kv->key_len)))
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		if (e)
			tfsd_node_release(fs, out);
		return e;
	}
	return TFS_E_NOT_FOUND;
}

static enum tfs_err child_of_frags(struct tfsd *fs, const struct tfsd_node *dir,
				   const char *name, struct tfsd_node *out,
				   struct tfs_diag *d)
{
	const struct tfs_array *a = dir->arr->a;

	if (dir->kind == TFSD_N_FRAG) {
		if (strcmp(name, "info.json") != 0)
			return TFS_E_NOT_FOUND;
		if (node_inherit(fs, out, dir, dir->arr, TFSD_N_FILE, d) ||
		    !(out->name = tfs_strdup(dir->name))) {
			tfsd_node_release(fs, out);
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		}
		out->file = TFSD_F_FRAG_INFO;
		return TFS_E_OK;
	}
	for (size_t i = 0; i < tfs_array_fragment_count(a); i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		if (!f.visible || strcmp(f.name, name) != 0)
			continue;
		if (node_inherit(fs, out, dir, dir->arr, TFSD_N_FRAG, d) ||
		    !(out->name = tfs_strdup(name))) {
			tfsd_node_release(fs, out);
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
		}
		return TFS_E_OK;
	}
	return TFS_E_NOT_FOUND;
}

static enum tfs_err child_of_versions(struct tfsd *fs,
				      const struct tfsd_node *dir,
				      const char *name, struct tfsd_node *out,
				      struct tfs_diag *d)
{
	uint64_t t;
	enum tfs_err e;

	if (tfsr_parse_time(name, &t) || t == 0)
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"versions/'%s': not a time (ms since the "
				"epoch or ISO-8601 UTC)",
				name);
	e = node_array(out, "", dir->rel, t, true, d);
	if (e)
		tfsd_node_release(fs, out);
	return e;
}

/* Calls fn(ctx, name, real_path) for each member of the group at dir that
 * lives outside the group's folder but inside SOURCE (members inside are
 * its subfolders already; nothing outside SOURCE is shown). Not a group:
 * nothing. */
void tfsd__group_outside_members(struct tfsd *fs, const struct tfsd_node *dir,
				 tfsd__outside_fn fn, void *ctx)
{
	struct tfs_group_opts go = {.vfs = fs->cfg.vfs,
				    .key = tfsd_config_key(&fs->cfg, dir->rel),
				    .timestamp = fs->cfg.timestamp};
	struct tfs_group *g;
	enum tfs_object kind;
	struct tfs_diag d;
	size_t src_len = strlen(fs->cfg.source);

	tfs_diag_init(&d);
	if (tfsd_arrays_kind(fs->arrays, dir->src, &kind, &d) ||
	    kind != TFS_OBJECT_GROUP)
		return;
	if (tfs_group_open(dir->src, &go, &g, &d)) {
		tfs_log(TFS_LOG_INFO, "group '%s': %s", dir->rel, tfs_diag_msg(&d));
		return;
	}
	for (size_t i = 0; i < tfs_group_member_count(g); i++) {
		const struct tfs_group_member *m = tfs_group_member(g, i);
		char *real;
		bool go_on = true;

		if (m->inside || !m->path || m->key[0] == '.' ||
		    strncmp(m->key, "__", 2) == 0 || strchr(m->key, '/'))
			continue;
		/* By spelling: links below SOURCE are not followed anyway. */
		real = tfs_path_normalize(m->path);
		if (real && strncmp(real, fs->cfg.source, src_len) == 0 &&
		    real[src_len] == '/')
			go_on = fn(ctx, m->key, real);
		tfs_free(real);
		if (!go_on)
			break;
	}
	tfs_group_close(g);
}

struct member_find {
	const char *name;
	char *real;
};

static bool member_find_fn(void *ctx, const char *name, const char *real)
{
	struct member_find *mf = ctx;

	if (strcmp(name, mf->name) != 0)
		return true;
	mf->real = tfs_strdup(real);
	return false;
}

/* A folder (plain or group) of SOURCE. */
static enum tfs_err child_of_folder(struct tfsd *fs, const struct tfsd_node *dir,
				    const char *name, struct tfsd_node *out,
				    struct tfs_diag *d)
{
	enum tfs_object kind;
	struct tfs_stat st;
	char *src, *rel;
	enum tfs_err e;

	if (name[0] == '.' || strncmp(name, "__", 2) == 0 ||
	    strchr(name, '/'))
		return TFS_E_NOT_FOUND;
	src = tfsd__path_join(dir->src, name);
	rel = tfsd__path_join(dir->rel, name);
	if (!src || !rel) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_free;
	}
	if (tfs_vfs_lstat(tfsd_arrays_vfs(fs->arrays), src, &st, NULL) ||
	    !st.exists || !st.is_dir) {
		/* A member of a group stored elsewhere in SOURCE. */
		struct member_find mf = {.name = name};

		tfsd__group_outside_members(fs, dir, member_find_fn, &mf);
		if (!mf.real) {
			e = TFS_E_NOT_FOUND;
			goto out_free;
		}
		tfs_free(src);
		tfs_free(rel);
		src = mf.real;
		rel = tfs_strdup(mf.real + strlen(fs->cfg.source) + 1);
		if (!rel) {
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
			goto out_free;
		}
	}
	e = tfsd_arrays_kind(fs->arrays, src, &kind, d);
	if (e)
		goto out_free;
	if (kind == TFS_OBJECT_ARRAY) {
		e = node_array(out, src, rel, 0, false, d);
	} else {
		memset(out, 0, sizeof(*out));
		out->kind = TFSD_N_FOLDER;
		out->field = -1;
		out->src = src;
		out->rel = rel;
		return TFS_E_OK;
	}
out_free:
	tfs_free(src);
	tfs_free(rel);
	return e;
}

enum tfs_err tfsd_resolve_child(struct tfsd *fs, const struct tfsd_node *dir,
				const char *name, struct tfsd_node *out,
				struct tfs_diag *d)
{
	size_t len = strlen(name);

	memset(out, 0, sizeof(*out));
	/* NAME_MAX, as statfs reports and readdir's d_name holds: a longer
	 * name could be looked up but never listed or copied elsewhere. */
	if (len > TFSD_NAME_MAX)
		return tfs_fail(d, TFS_E_NAME_TOO_LONG,
				"name of %zu bytes (at most %d)", len,
				TFSD_NAME_MAX);
	switch (dir->kind) {
	case TFSD_N_FOLDER: return child_of_folder(fs, dir, name, out, d);
	case TFSD_N_ARRAY: return child_of_array(fs, dir, name, out, d);
	case TFSD_N_FIELD:
	case TFSD_N_TILES: return child_of_field(fs, dir, name, out, d);
	case TFSD_N_META_DIR: return child_of_meta(fs, dir, name, out, d);
	case TFSD_N_FRAGS:
	case TFSD_N_FRAG: return child_of_frags(fs, dir, name, out, d);
	case TFSD_N_VERSIONS: return child_of_versions(fs, dir, name, out, d);
	case TFSD_N_FILE: break;
	}
	return tfs_fail(d, TFS_E_NOT_FOUND, "not a folder");
}

static enum tfs_err resolve_root(struct tfsd *fs, struct tfsd_node *out,
				 struct tfs_diag *d)
{
	enum tfs_object kind;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	e = tfsd_arrays_kind(fs->arrays, fs->cfg.source, &kind, d);
	if (e)
		return e;
	if (kind == TFS_OBJECT_ARRAY)
		return node_array(out, fs->cfg.source, "", 0, false, d);
	out->kind = TFSD_N_FOLDER;
	out->field = -1;
	out->src = tfs_strdup(fs->cfg.source);
	out->rel = tfs_strdup("");
	if (!out->src || !out->rel) {
		tfsd_node_release(fs, out);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	return TFS_E_OK;
}

enum tfs_err tfsd_resolve(struct tfsd *fs, const char *vpath,
			  struct tfsd_node *out, struct tfs_diag *d)
{
	struct tfsd_node cur;
	char name[4097];
	const char *p = vpath;
	enum tfs_err e;

	e = resolve_root(fs, &cur, d);
	while (!e && *p) {
		size_t n = strcspn(p, "/");
		struct tfsd_node next;

		if (n == 0 || n >= sizeof(name)) {
			e = tfs_fail(d, TFS_E_NOT_FOUND, "bad path '%s'", vpath);
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n + (p[n] == '/');
		e = tfsd_resolve_child(fs, &cur, name, &next, d);
		tfsd_node_release(fs, &cur);
		cur = next;
	}
	if (e) {
		tfsd_node_release(fs, &cur);
		return e;
	}
	*out = cur;
	return TFS_E_OK;
}
