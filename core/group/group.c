/* Opening a TileDB group (format/groups.md): classify the folder, pick the
 * group details files of the time window and merge them into one member
 * list (§3), resolve each member's uri to a path, and load the group
 * metadata through the fragment module (metadata.md, same format as an
 * array's). Groups without __group/ (before format 12) get their members
 * from the folder listing instead. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfs_alloc.h"
#include "tfs_str.h"
#include "tfs_format.h"
#include "tfs_fragment.h"
#include <tilefs/tfs_group.h>

/* Any whole vacuum list read into memory (details files are capped by
 * tfs_tile_file_read). */
#define VAC_FILE_MAX ((size_t)1 << 26)

struct tfs_group {
	struct tfs_vfs *own_vfs; /* NULL when the caller gave one */
	char *path;
	enum tfs_group_format format;
	struct tfs_group_member *members; /* sorted by key */
	size_t member_num;
	struct tfs_metadata metadata;
};

/* One timestamped file of __group/. */
struct detail_ref {
	const char *name; /* borrowed from the listing */
	uint64_t t1;
};

/* One entry of a details file in replay order (seq), keyed. */
struct op {
	const struct tfs_group_entry *e;
	const char *key;
	size_t seq;
	bool deleted;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *last_component(const char *s)
{
	const char *p = strrchr(s, '/');

	return p ? p + 1 : s;
}

static void member_release(struct tfs_group_member *m)
{
	tfs_free((char *)m->name);
	tfs_free((char *)m->uri);
	tfs_free((char *)m->path);
	/* key aliases name or uri */
}

/* ---- member paths ------------------------------------------------------- */

/* Appends the components of rel to b ('/' first), dropping empty and "."
 * ones; *escapes is set when a ".." component appears. */
static enum tfs_err append_rel(struct tfs_buf *b, const char *rel,
			       bool *escapes, size_t *parts)
{
	const char *p = rel;

	*escapes = false;
	*parts = 0;
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		enum tfs_err e;

		if (n == 2 && p[0] == '.' && p[1] == '.')
			*escapes = true;
		if (n && !(n == 1 && p[0] == '.')) {
			if ((e = tfs_buf_append_u8(b, '/')) ||
			    (e = tfs_buf_append(b, p, n)))
				return e;
			(*parts)++;
		}
		p += n;
		if (*p == '/')
			p++;
	}
	return TFS_E_OK;
}

/* Sets m->path and m->inside from m->uri (see tfs_group.h). */
static enum tfs_err resolve(const char *group_path, struct tfs_group_member *m)
{
	static const char file_scheme[] = "file://";
	struct tfs_buf b;
	const char *abs = NULL;
	bool escapes;
	size_t parts, n;
	enum tfs_err e;

	m->path = NULL;
	m->inside = false;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	if (m->relative) {
		e = tfs_buf_append(&b, group_path, strlen(group_path));
		if (!e)
			e = append_rel(&b, m->uri, &escapes, &parts);
		if (e)
			goto out_release;
		m->inside = !escapes && parts > 0;
	} else if (!strncmp(m->uri, file_scheme, sizeof(file_scheme) - 1)) {
		abs = m->uri + sizeof(file_scheme) - 1;
		/* file://host/... names another machine. */
		if (abs[0] != '/')
			return TFS_E_OK;
	} else if (m->uri[0] == '/') {
		abs = m->uri;
	} else {
		return TFS_E_OK; /* s3://, tiledb://, ...: not reachable */
	}
	if (abs) {
		n = strlen(abs);
		while (n > 1 && abs[n - 1] == '/')
			n--;
		e = tfs_buf_append(&b, abs, n);
		if (e)
			goto out_release;
	}
	e = tfs_buf_append_u8(&b, '\0');
	if (e)
		goto out_release;
	m->path = (const char *)tfs_buf_detach(&b, &n);
	return TFS_E_OK;

out_release:
	tfs_buf_release(&b);
	return e;
}

/* ---- merging details files (groups.md §3) ------------------------------ */

static int op_cmp(const void *pa, const void *pb)
{
	const struct op *a = pa, *b = pb;
	int c = strcmp(a->key, b->key);

	if (c)
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static enum tfs_object object_of(uint8_t type)
{
	return type == TFS_GROUP_MEMBER_GROUP ? TFS_OBJECT_GROUP
					      : TFS_OBJECT_ARRAY;
}

/* Copies an entry into a member (path resolved). */
static enum tfs_err member_from_entry(const char *group_path,
				      const struct tfs_group_entry *e,
				      struct tfs_group_member *m)
{
	memset(m, 0, sizeof(*m));
	m->uri = tfs_strdup(e->uri);
	if (!m->uri)
		return TFS_E_NOMEM;
	if (e->name_set) {
		m->name = tfs_strdup(e->name);
		if (!m->name)
			return TFS_E_NOMEM;
	}
	m->key = m->name ? m->name : m->uri;
	m->relative = e->relative;
	m->type = object_of(e->object_type);
	return resolve(group_path, m);
}

/* Replays the parsed files in order: the last entry of each key wins;
 * when it deletes (and deletions count), the key is gone. Sorting every
 * entry once by (key, order) keeps this O(n log n) for large groups. */
static enum tfs_err merge(struct tfs_group *g,
			  const struct tfs_group_details *files, size_t num,
			  struct tfs_diag *d)
{
	struct op *ops;
	size_t total = 0, k = 0, keep = 0;
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; i < num; i++)
		total += files[i].count;
	if (!total)
		return TFS_E_OK;
	ops = tfs_callocn(total, sizeof(*ops));
	g->members = tfs_callocn(total, sizeof(*g->members));
	if (!ops || !g->members) {
		e = tfs_fail(d, TFS_E_NOMEM, "group '%s': out of memory",
			     g->path);
		goto out_free;
	}
	for (size_t i = 0; i < num; i++) {
		for (size_t j = 0; j < files[i].count; j++) {
			const struct tfs_group_entry *en = &files[i].entries[j];

			ops[k].e = en;
			ops[k].key = en->name_set ? en->name : en->uri;
			ops[k].seq = k;
			/* A version-1 file adds every entry, as TileDB's
			 * GroupDetailsV1 does. */
			ops[k].deleted = files[i].version == 2 && en->deleted;
			k++;
		}
	}
	qsort(ops, total, sizeof(*ops), op_cmp);
	for (size_t i = 0; i < total; i++) {
		const struct op *last = &ops[i];

		if (i + 1 < total && !strcmp(ops[i + 1].key, last->key))
			continue;
		if (last->deleted)
			continue;
		g->member_num = keep + 1;
		e = member_from_entry(g->path, last->e, &g->members[keep]);
		if (e) {
			tfs_fail(d, e, "group '%s': out of memory", g->path);
			goto out_free;
		}
		keep++;
	}
out_free:
	tfs_free(ops);
	return e;
}

/* Reads the vacuum list at path; adds the last component of each line
 * (the details file it names) to hidden. */
static enum tfs_err read_vac(struct tfs_vfs *vfs, const char *path,
			     struct tfs_strlist *hidden, struct tfs_diag *d)
{
	struct tfs_strlist lines;
	uint8_t *buf;
	size_t len;
	char **n;
	enum tfs_err e;

	e = tfs_vfs_read_all(vfs, path, VAC_FILE_MAX, &buf, &len, d);
	if (e)
		return e;
	e = tfs_lines_parse(&lines, buf, len);
	tfs_free(buf);
	if (e)
		return tfs_fail(d, e, "'%s': cannot parse", path);
	n = tfs_reallocn(hidden->items, hidden->count + lines.count + 1,
			 sizeof(*n));
	if (!n) {
		tfs_strlist_release(&lines);
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", path);
	}
	hidden->items = n;
	for (size_t i = 0; i < lines.count; i++) {
		char *s = tfs_strdup(last_component(lines.items[i]));

		if (!s) {
			tfs_strlist_release(&lines);
			return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory",
					path);
		}
		n[hidden->count++] = s;
	}
	tfs_strlist_release(&lines);
	return TFS_E_OK;
}

static bool is_hidden(const struct tfs_strlist *hidden, const char *name)
{
	for (size_t i = 0; i < hidden->count; i++)
		if (!strcmp(hidden->items[i], name))
			return true;
	return false;
}

/* Version-1 details files carry no version suffix (4 '_') or "_1" (TileDB
 * Group::load_group_details). */
static bool is_v1_name(const char *name)
{
	size_t us = 0;

	for (const char *p = name; *p; p++)
		us += *p == '_';
	return us == 4 || (us == 5 && tfs_str_ends_with(name, "_1"));
}

static enum tfs_err read_details(struct tfs_vfs *vfs, const char *dir,
				 const char *name, const uint8_t *key,
				 struct tfs_group_details *out,
				 struct tfs_diag *d)
{
	struct tfs_diag ld;
	uint8_t *payload;
	size_t len;
	char *path = tfs_path_join(dir, name);
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	if (!path)
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", dir);
	e = tfs_tile_file_read(vfs, path, key, "group", &payload, &len, d);
	if (!e) {
		tfs_diag_init(&ld);
		e = tfs_group_details_parse(out, payload, len, &ld);
		tfs_free(payload);
		if (e)
			tfs_fail(d, e, "'%s': %s", path, tfs_diag_msg(&ld));
	}
	tfs_free(path);
	return e;
}

/* Sorts the details files of l up to time t1 into refs (borrowing the
 * names) and the names hidden by vacuum files into hidden. */
static enum tfs_err collect_refs(const struct tfs_group *g,
				 struct tfs_vfs *vfs, const char *dir,
				 const struct tfs_dirlist *l, uint64_t t1,
				 struct detail_ref *refs, size_t *ref_num,
				 struct tfs_strlist *hidden, struct tfs_diag *d)
{
	enum tfs_err e;

	for (size_t i = 0; i < l->count; i++) {
		const char *name = l->names[i];
		struct tfs_name_info ni;
		char *p;

		if (tfs_name_parse(name, &ni) != TFS_E_OK)
			return tfs_fail(d, TFS_E_CORRUPT,
					"group details '%s/%s': not a timestamped name",
					dir, name);
		/* A writer's partly written file, as for metadata. */
		if (tfs_str_ends_with(name, ".tmp"))
			continue;
		if (ni.t2 > t1)
			continue;
		if (!tfs_str_ends_with(name, ".vac")) {
			refs[*ref_num].name = name;
			refs[*ref_num].t1 = ni.t1;
			(*ref_num)++;
			continue;
		}
		p = tfs_path_join(dir, name);
		if (!p)
			return tfs_fail(d, TFS_E_NOMEM,
					"group '%s': out of memory", g->path);
		e = read_vac(vfs, p, hidden, d);
		tfs_free(p);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

/* Drops the vacuumed, then a stable insertion sort by t1 (listing order
 * breaks ties). Returns the count kept. */
static size_t refs_order(struct detail_ref *refs, size_t ref_num,
			 const struct tfs_strlist *hidden)
{
	size_t kept = 0;

	for (size_t i = 0; i < ref_num; i++)
		if (!is_hidden(hidden, refs[i].name))
			refs[kept++] = refs[i];
	for (size_t i = 1; i < kept; i++) {
		struct detail_ref tmp = refs[i];
		size_t j = i;

		while (j > 0 && refs[j - 1].t1 > tmp.t1) {
			refs[j] = refs[j - 1];
			j--;
		}
		refs[j] = tmp;
	}
	return kept;
}

/* Parses refs[first..ref_num) into files, counting them in *parsed (which
 * the caller releases, also on failure). */
static enum tfs_err read_refs(const struct tfs_group *g, struct tfs_vfs *vfs,
			      const char *dir, const uint8_t *key,
			      const struct detail_ref *refs, size_t first,
			      size_t ref_num, struct tfs_group_details *files,
			      size_t *parsed, struct tfs_diag *d)
{
	enum tfs_err e;

	for (size_t i = first; i < ref_num; i++) {
		struct tfs_group_details *f = &files[*parsed];

		e = read_details(vfs, dir, refs[i].name, key, f, d);
		if (e)
			return e;
		(*parsed)++;
		if (g->format == TFS_GROUP_FORMAT_V2 && f->version != 2)
			return tfs_fail(d, TFS_E_CORRUPT,
					"group details '%s/%s': version %" PRIu32
					" in a group of version 2",
					dir, refs[i].name, f->version);
	}
	return TFS_E_OK;
}

static enum tfs_err load_details(struct tfs_group *g, struct tfs_vfs *vfs,
				 const char *dir, const uint8_t *key,
				 uint64_t t1, struct tfs_diag *d)
{
	struct tfs_dirlist l;
	struct tfs_strlist hidden = {NULL, 0};
	struct detail_ref *refs = NULL;
	struct tfs_group_details *files = NULL;
	size_t ref_num = 0, first = 0, parsed = 0;
	enum tfs_err e;

	e = tfs_vfs_list(vfs, dir, &l, d);
	if (e)
		return e;
	refs = tfs_callocn(l.count ? l.count : 1, sizeof(*refs));
	if (!refs) {
		e = tfs_fail(d, TFS_E_NOMEM, "group '%s': out of memory",
			     g->path);
		goto out;
	}
	e = collect_refs(g, vfs, dir, &l, t1, refs, &ref_num, &hidden, d);
	if (e)
		goto out;
	ref_num = refs_order(refs, ref_num, &hidden);
	g->format = TFS_GROUP_FORMAT_V2;
	if (!ref_num)
		goto out;
	if (is_v1_name(refs[ref_num - 1].name)) {
		/* The newest file alone is the group. */
		g->format = TFS_GROUP_FORMAT_V1;
		first = ref_num - 1;
	}
	files = tfs_callocn(ref_num - first, sizeof(*files));
	if (!files) {
		e = tfs_fail(d, TFS_E_NOMEM, "group '%s': out of memory",
			     g->path);
		goto out;
	}
	e = read_refs(g, vfs, dir, key, refs, first, ref_num, files, &parsed,
		      d);
	if (!e)
		e = merge(g, files, parsed, d);
out:
	for (size_t i = 0; i < parsed; i++)
		tfs_group_details_release(&files[i]);
	tfs_free(files);
	tfs_free(refs);
	tfs_strlist_release(&hidden);
	tfs_dirlist_release(&l);
	return e;
}

/* ---- groups without __group/ ------------------------------------------- */

static bool is_group_file(const char *name)
{
	return !strcmp(name, "__meta") || !strcmp(name, "__group") ||
	       !strcmp(name, "__tiledb_group.tdb");
}

/* The members of a legacy group: child folders that are TileDB objects,
 * in listing order (bytewise, which is key order). */
static enum tfs_err load_children(struct tfs_group *g, struct tfs_vfs *vfs,
				  struct tfs_diag *d)
{
	struct tfs_dirlist l;
	enum tfs_err e;

	e = tfs_vfs_list(vfs, g->path, &l, d);
	if (e)
		return e;
	g->members = tfs_callocn(l.count ? l.count : 1, sizeof(*g->members));
	if (!g->members) {
		e = tfs_fail(d, TFS_E_NOMEM, "group '%s': out of memory",
			     g->path);
		goto out;
	}
	for (size_t i = 0; i < l.count; i++) {
		struct tfs_group_member *m = &g->members[g->member_num];
		enum tfs_object_kind kind;
		struct tfs_diag ld;
		char *p;

		if (is_group_file(l.names[i]))
			continue;
		p = tfs_path_join(g->path, l.names[i]);
		if (!p) {
			e = tfs_fail(d, TFS_E_NOMEM,
				     "group '%s': out of memory", g->path);
			goto out;
		}
		tfs_diag_init(&ld);
		e = tfs_object_kind_of(vfs, p, &kind, &ld);
		/* Gone since the listing, or a dangling link: no member. */
		if (e == TFS_E_NOT_FOUND) {
			e = TFS_E_OK;
			kind = TFS_OBJ_NONE;
		}
		if (e || kind == TFS_OBJ_NONE) {
			tfs_free(p);
			if (e) {
				tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
				goto out;
			}
			continue;
		}
		memset(m, 0, sizeof(*m));
		g->member_num++;
		m->path = p;
		m->uri = tfs_strdup(l.names[i]);
		if (!m->uri) {
			e = tfs_fail(d, TFS_E_NOMEM,
				     "group '%s': out of memory", g->path);
			goto out;
		}
		m->key = m->uri;
		m->relative = true;
		m->inside = true;
		m->type = kind == TFS_OBJ_GROUP ? TFS_OBJECT_GROUP
						: TFS_OBJECT_ARRAY;
	}
out:
	tfs_dirlist_release(&l);
	return e;
}

/* ---- open / close ------------------------------------------------------- */

static enum tfs_err load(struct tfs_group *g, struct tfs_vfs *vfs,
			 const uint8_t *key, uint64_t t1, struct tfs_diag *d)
{
	struct tfs_stat st;
	char *dir = tfs_path_join(g->path, "__group");
	enum tfs_err e;

	if (!dir)
		return tfs_fail(d, TFS_E_NOMEM, "group '%s': out of memory",
				g->path);
	e = tfs_vfs_stat(vfs, dir, &st, d);
	if (!e && st.exists && st.is_dir) {
		e = load_details(g, vfs, dir, key, t1, d);
	} else if (!e) {
		g->format = TFS_GROUP_FORMAT_LEGACY;
		e = load_children(g, vfs, d);
	}
	tfs_free(dir);
	if (!e)
		e = tfs_metadata_load(vfs, g->path, "group", key, 0, t1,
				      &g->metadata, d);
	return e;
}

enum tfs_err tfs_group_open(const char *path, const struct tfs_group_opts *opts,
			    struct tfs_group **out, struct tfs_diag *d)
{
	struct tfs_group *g;
	struct tfs_vfs *vfs = opts ? opts->vfs : NULL;
	const uint8_t *key = opts ? opts->key : NULL;
	uint64_t t1 = opts && opts->timestamp ? opts->timestamp : now_ms();
	enum tfs_object_kind kind;
	size_t plen = strlen(path);
	enum tfs_err e;

	*out = NULL;
	g = tfs_callocn(1, sizeof(*g));
	if (!g)
		return tfs_fail(d, TFS_E_NOMEM, "group '%s': out of memory",
				path);
	if (!vfs) {
		e = tfs_vfs_default_new(path, &g->own_vfs, d);
		if (e)
			goto out_close;
		vfs = g->own_vfs;
	}
	while (plen > 1 && path[plen - 1] == '/')
		plen--;
	g->path = tfs_strndup(path, plen);
	if (!g->path) {
		e = tfs_fail(d, TFS_E_NOMEM, "group '%s': out of memory", path);
		goto out_close;
	}
	e = tfs_object_kind_of(vfs, g->path, &kind, d);
	if (e)
		goto out_close;
	if (kind != TFS_OBJ_GROUP) {
		e = tfs_fail(d, TFS_E_NOT_ARRAY, "'%s': not a TileDB group",
			     g->path);
		goto out_close;
	}
	e = load(g, vfs, key, t1, d);
	if (e)
		goto out_close;
	*out = g;
	return TFS_E_OK;

out_close:
	tfs_group_close(g);
	return e;
}

void tfs_group_close(struct tfs_group *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->member_num; i++)
		member_release(&g->members[i]);
	tfs_free(g->members);
	tfs_metadata_release(&g->metadata);
	tfs_free(g->path);
	tfs_vfs_free(g->own_vfs);
	tfs_free(g);
}

const char *tfs_group_path(const struct tfs_group *g)
{
	return g->path;
}

enum tfs_group_format tfs_group_format(const struct tfs_group *g)
{
	return g->format;
}

size_t tfs_group_member_count(const struct tfs_group *g)
{
	return g->member_num;
}

const struct tfs_group_member *tfs_group_member(const struct tfs_group *g,
						size_t i)
{
	return i < g->member_num ? &g->members[i] : NULL;
}

size_t tfs_group_metadata_count(const struct tfs_group *g)
{
	return g->metadata.count;
}

const struct tfs_meta_kv *tfs_group_metadata(const struct tfs_group *g,
					     size_t i)
{
	return i < g->metadata.count ? &g->metadata.entries[i] : NULL;
}
