/* Consolidation of everything but cells: fragment metadata
 * (consolidated.md §1), commits (§2) and array metadata (metadata.md §2).
 * Each writes one new file next to the ones it merges. */
#include "maintain_internal.h"

/* ---- Fragment metadata (consolidated.md §1) ------------------------------- */

/* The footer bytes of fragment `name` (version v >= 10), without the
 * trailing footer_len. */
static enum tfs_err read_footer(const struct mt *m, const char *name,
				uint32_t v, struct tfs_buf *out,
				struct tfs_diag *d)
{
	char rel[512];
	char *p;
	struct tfs_stat st;
	uint8_t lenb[8];
	uint64_t flen = 0;
	enum tfs_err e;
	size_t at;

	snprintf(rel, sizeof(rel), "%s%s/__fragment_metadata.tdb",
		 v >= 12 ? "__fragments/" : "", name);
	p = tfs__mt_path(m, rel);
	if (!p)
		return tfs__mt_nomem(d);
	e = tfs_vfs_stat(m->vfs, p, &st, d);
	if (!e && (!st.exists || st.size < 8))
		e = tfs_fail(d, TFS_E_CORRUPT, "fragment '%s': no metadata",
			     name);
	if (!e)
		e = tfs_vfs_read(m->vfs, p, st.size - 8, lenb, 8, d);
	if (!e) {
		for (int k = 7; k >= 0; k--)
			flen = flen << 8 | lenb[k];
		if (flen > st.size - 8 || flen > MT_FILE_MAX)
			e = tfs_fail(d, TFS_E_CORRUPT,
				     "fragment '%s': footer length %" PRIu64
				     " past the metadata file",
				     name, flen);
	}
	if (!e) {
		at = out->len;
		e = tfs_buf_resize(out, at + (size_t)flen);
		if (e)
			e = tfs__mt_nomem(d);
		else
			e = tfs_vfs_read(m->vfs, p, st.size - 8 - flen,
					 out->data + at, (size_t)flen, d);
	}
	tfs_free(p);
	return e;
}

/* Fragments of version 10 on, the only ones a consolidated file holds. */
static uint32_t count_v10(const struct tfs_array *a, size_t frag_num)
{
	uint32_t n = 0;

	for (size_t i = 0; i < frag_num; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		if (f.version >= 10)
			n++;
	}
	return n;
}

/* The directory (count, then name and footer offset of each fragment)
 * into dir and the footers into footers; [*t1, *t2] widens to their
 * times. The directory comes first, so offsets are known once its size
 * is. */
static enum tfs_err frag_meta_directory(const struct mt *m,
					const struct tfs_array *a,
					size_t frag_num, uint32_t n,
					struct tfs_buf *dir,
					struct tfs_buf *footers, uint64_t *t1,
					uint64_t *t2, struct tfs_diag *d)
{
	uint64_t off = 4;
	enum tfs_err e;

	for (size_t i = 0; i < frag_num; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		if (f.version >= 10)
			off += 16 + strlen(f.name);
	}
	if (tfs_buf_append_u32(dir, n))
		return tfs__mt_nomem(d);
	for (size_t i = 0; i < frag_num; i++) {
		struct tfs_fragment_info f;
		size_t before = footers->len;

		tfs_array_fragment(a, i, &f);
		if (f.version < 10)
			continue;
		e = read_footer(m, f.name, f.version, footers, d);
		if (e)
			return e;
		if (tfs_buf_append_u64(dir, strlen(f.name)) ||
		    tfs_buf_append(dir, f.name, strlen(f.name)) ||
		    tfs_buf_append_u64(dir, off + before))
			e = tfs__mt_nomem(d);
		tfs__mt_widen(t1, t2, f.t1, f.t2);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__consolidate_fragment_meta(const struct mt *m,
					    char *made, size_t made_cap,
					    struct tfs_diag *d)
{
	struct tfs_array *a;
	struct tfs_buf dir, footers, tile;
	uint64_t t1 = UINT64_MAX, t2 = 0;
	uint32_t n, version;
	size_t frag_num;
	enum tfs_err e;

	e = tfs__mt_open(m, 0, 0, &a, d);
	if (e)
		return e;
	version = tfs_array_schema(a)->version;
	e = tfs__mt_need_v12(m, version, "fragment metadata", d);
	if (e) {
		tfs_array_close(a);
		return e;
	}
	tfs_buf_init(&dir, TFS_BUF_NO_MAX);
	tfs_buf_init(&footers, TFS_BUF_NO_MAX);
	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	frag_num = tfs_array_fragment_count(a);
	n = count_v10(a, frag_num);
	if (n == 0) {
		tfs__mt_set_made(made, made_cap, NULL);
		goto out;
	}
	e = frag_meta_directory(m, a, frag_num, n, &dir, &footers, &t1, &t2,
				d);
	if (e)
		goto out;
	if (tfs_buf_append(&dir, footers.data, footers.len)) {
		e = tfs__mt_nomem(d);
		goto out;
	}
	e = tfs_generic_tile_encode(&tile, dir.data, dir.len, m->key, d);
	if (e)
		goto out;
	e = tfs__mt_write_new_file(m, "__fragment_meta", t1, t2, version, ".meta",
				   tile.data, tile.len, made, made_cap, d);
out:
	tfs_buf_release(&dir);
	tfs_buf_release(&footers);
	tfs_buf_release(&tile);
	tfs_array_close(a);
	return e;
}

/* ---- Commits (consolidated.md §2) ----------------------------------------- */

bool tfs__con_items_has(const struct con_items *c, const char *marker)
{
	for (size_t i = 0; i < c->count; i++)
		if (!strcmp(c->items[i].marker, marker))
			return true;
	return false;
}

static enum tfs_err con_items_add(struct con_items *c, const char *marker,
				  const uint8_t *del, size_t del_len)
{
	struct con_item *it;

	if (tfs__con_items_has(c, marker))
		return TFS_E_OK;
	if (tfs_grow(&c->items, &c->cap, c->count + 1, sizeof(*c->items)))
		return TFS_E_NOMEM;
	it = &c->items[c->count];
	memset(it, 0, sizeof(*it));
	it->marker = tfs_strdup(marker);
	if (!it->marker)
		return TFS_E_NOMEM;
	if (del) {
		it->del = tfs_malloc(del_len ? del_len : 1);
		if (!it->del) {
			tfs_free(it->marker);
			return TFS_E_NOMEM;
		}
		memcpy(it->del, del, del_len);
		it->del_len = del_len;
	}
	c->count++;
	return TFS_E_OK;
}

void tfs__con_items_release(struct con_items *c)
{
	for (size_t i = 0; i < c->count; i++) {
		tfs_free(c->items[i].marker);
		tfs_free(c->items[i].del);
	}
	tfs_free(c->items);
	memset(c, 0, sizeof(*c));
}

static int con_item_cmp(const void *a, const void *b)
{
	return strcmp(((const struct con_item *)a)->marker,
		      ((const struct con_item *)b)->marker);
}

/* Adds the entries of the .con file `name` that no .ign names. */
enum tfs_err tfs__con_file_items(const struct mt *m, const char *name,
				 const struct strset *ignored,
				 struct con_items *out, struct tfs_diag *d)
{
	struct tfs_con_file cf = {NULL, 0};
	char rel[512];
	uint8_t *buf;
	size_t len;
	enum tfs_err e;

	snprintf(rel, sizeof(rel), "__commits/%s", name);
	e = tfs__mt_read(m, rel, &buf, &len, d);
	if (e)
		return e;
	e = tfs_con_parse(&cf, buf, len, d);
	for (size_t k = 0; !e && k < cf.count; k++) {
		const struct tfs_con_entry *en = &cf.entries[k];

		if (tfs__mt_strset_has(ignored, en->marker))
			continue;
		if (en->del_size && en->del_offset + en->del_size > len) {
			e = tfs_fail(d, TFS_E_CORRUPT,
				     "'%s': delete tile past the end", rel);
			break;
		}
		if (con_items_add(out, en->marker,
				  tfs_str_ends_with(en->marker, ".del")
					  ? buf + en->del_offset
					  : NULL,
				  (size_t)en->del_size))
			e = tfs__mt_nomem(d);
	}
	tfs_con_release(&cf);
	tfs_free(buf);
	return e;
}

bool tfs__is_commit_file(const char *name)
{
	return tfs_str_ends_with(name, ".wrt") || tfs_str_ends_with(name, ".del") ||
	       tfs_str_ends_with(name, ".upd");
}

/* The items already held by .con files; *con_num counts those files. */
static enum tfs_err commits_from_cons(const struct mt *m,
				      const struct tfs_dirlist *commits,
				      const struct strset *ignored,
				      struct con_items *items, size_t *con_num,
				      struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < commits->count; i++) {
		const char *n = commits->names[i];

		if (tfs_str_ends_with(n, ".con")) {
			(*con_num)++;
			e = tfs__con_file_items(m, n, ignored, items, d);
		}
	}
	return e;
}

/* Adds the commit files no .con holds yet (with the body of a .del);
 * *loose counts them. */
static enum tfs_err commits_loose(const struct mt *m,
				  const struct tfs_dirlist *commits,
				  struct con_items *items, size_t *loose,
				  struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < commits->count; i++) {
		const char *n = commits->names[i];
		bool del = tfs_str_ends_with(n, ".del");
		char marker[512];
		uint8_t *buf = NULL;
		size_t len = 0;

		if (!tfs__is_commit_file(n))
			continue;
		snprintf(marker, sizeof(marker), "__commits/%s", n);
		if (tfs__con_items_has(items, marker))
			continue;
		(*loose)++;
		if (del)
			e = tfs__mt_read(m, marker, &buf, &len, d);
		if (!e && con_items_add(items, marker,
					del ? (buf ? buf : (uint8_t *)"") : NULL,
					len))
			e = tfs__mt_nomem(d);
		tfs_free(buf);
	}
	return e;
}

/* The .con body: the items in order, each a line, a .del followed by its
 * length and body; [*t1, *t2] widens to their times. */
static enum tfs_err commits_serialize(struct con_items *items,
				      struct tfs_buf *out, uint64_t *t1,
				      uint64_t *t2, struct tfs_diag *d)
{
	if (items->count)
		qsort(items->items, items->count, sizeof(*items->items),
		      con_item_cmp);
	for (size_t i = 0; i < items->count; i++) {
		const struct con_item *it = &items->items[i];
		const char *base = strrchr(it->marker, '/');
		struct tfs_name_info ni;

		if (tfs_name_parse(base ? base + 1 : it->marker, &ni) ==
		    TFS_E_OK) {
			tfs__mt_widen(t1, t2, ni.t1, ni.t2);
		}
		if (tfs_buf_append(out, it->marker, strlen(it->marker)) ||
		    tfs_buf_append_u8(out, '\n') ||
		    (it->del && (tfs_buf_append_u64(out, it->del_len) ||
				 tfs_buf_append(out, it->del, it->del_len))))
			return tfs__mt_nomem(d);
	}
	return TFS_E_OK;
}

enum tfs_err tfs__consolidate_commits(const struct mt *m, char *made,
				      size_t made_cap, struct tfs_diag *d)
{
	struct tfs_dirlist commits;
	struct strset ignored = {0};
	struct con_items items = {0};
	struct tfs_buf out;
	struct tfs_array *a;
	size_t con_num = 0, loose = 0;
	uint64_t t1 = UINT64_MAX, t2 = 0;
	uint32_t version;
	enum tfs_err e;

	e = tfs__mt_open(m, 0, 0, &a, d);
	if (e)
		return e;
	version = tfs_array_schema(a)->version;
	tfs_array_close(a);
	e = tfs__mt_need_v12(m, version, "commits", d);
	if (e)
		return e;
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	e = tfs__mt_list(m, "__commits", &commits, d);
	if (e)
		return e;
	e = tfs__mt_load_ignored(m, &commits, &ignored, d);
	if (!e)
		e = commits_from_cons(m, &commits, &ignored, &items, &con_num,
				      d);
	if (!e)
		e = commits_loose(m, &commits, &items, &loose, d);
	if (e)
		goto out;
	/* One .con already holds everything: nothing to do. */
	if (loose == 0 && con_num <= 1) {
		tfs__mt_set_made(made, made_cap, NULL);
		goto out;
	}
	e = commits_serialize(&items, &out, &t1, &t2, d);
	if (e)
		goto out;
	if (t1 > t2)
		t1 = t2;
	e = tfs__mt_write_new_file(m, "__commits", t1, t2, version, ".con", out.data,
				   out.len, made, made_cap, d);
out:
	tfs_buf_release(&out);
	tfs__con_items_release(&items);
	tfs__mt_strset_release(&ignored);
	tfs_dirlist_release(&commits);
	return e;
}

/* ---- Array metadata (metadata.md §2) -------------------------------------- */

/* The metadata files of __meta/ that no .vac file hides (at any time). */
static enum tfs_err live_meta_files(const struct mt *m,
				    const struct tfs_dirlist *meta,
				    struct strset *out, struct tfs_diag *d)
{
	struct strset hidden = {0};
	enum tfs_err e;

	e = tfs__mt_add_lines_of(m, "__meta", meta, ".vac", true, &hidden, d);
	for (size_t i = 0; !e && i < meta->count; i++) {
		const char *n = meta->names[i];
		char rel[512];

		if (tfs_str_ends_with(n, ".vac") || tfs_str_ends_with(n, ".tmp"))
			continue;
		snprintf(rel, sizeof(rel), "__meta/%s", n);
		if (!tfs__mt_strset_has(&hidden, rel) && tfs__mt_strset_add(out, n))
			e = tfs__mt_nomem(d);
	}
	tfs__mt_strset_release(&hidden);
	return e;
}

/* Sorts the live metadata files, widens [*t1, *t2] to their times and
 * lists them, one a line, in vac. */
static enum tfs_err meta_vac_list(const struct mt *m, struct strset *live,
				  struct tfs_buf *vac, uint64_t *t1,
				  uint64_t *t2, struct tfs_diag *d)
{
	qsort(live->items, live->count, sizeof(*live->items), tfs__mt_str_cmp);
	for (size_t i = 0; i < live->count; i++) {
		struct tfs_name_info ni;

		if (tfs_name_parse(live->items[i], &ni))
			return tfs_fail(d, TFS_E_CORRUPT,
					"array metadata '%s/__meta/%s': not a "
					"timestamped name",
					m->path, live->items[i]);
		tfs__mt_widen(t1, t2, ni.t1, ni.t2);
		if (tfs_buf_printf(vac, "__meta/%s\n", live->items[i]))
			return tfs__mt_nomem(d);
	}
	return TFS_E_OK;
}

/* The merged map as a generic tile. Every file counts at [0, t2]: the map
 * the merged file replaces. */
static enum tfs_err meta_merged_tile(const struct mt *m, uint64_t t2,
				     struct tfs_metadata *merged,
				     struct tfs_buf *payload,
				     struct tfs_buf *tile, struct tfs_diag *d)
{
	struct tfs_meta_file mf;
	enum tfs_err e;

	e = tfs_metadata_load(m->vfs, m->path, "array", m->key, 0, t2, merged,
			      d);
	if (e)
		return e;
	mf.entries = merged->entries;
	mf.count = merged->count;
	if (tfs_meta_file_serialize(payload, &mf))
		return tfs__mt_nomem(d);
	return tfs_generic_tile_encode(tile, payload->data, payload->len,
				       m->key, d);
}

/* The merged file first, then the list of what it replaces: until the
 * .vac exists both are read, and they agree (metadata.md §2: reapplying
 * the inputs after the merge changes nothing). */
static enum tfs_err meta_write_merged(const struct mt *m, const char *name,
				      const struct tfs_buf *tile,
				      const struct tfs_buf *vac,
				      struct tfs_diag *d)
{
	char rel[512];
	enum tfs_err e;

	snprintf(rel, sizeof(rel), "__meta/%s", name);
	e = tfs__mt_write_file(m, rel, tile->data, tile->len, d);
	if (e)
		return e;
	snprintf(rel, sizeof(rel), "__meta/%s.vac", name);
	return tfs__mt_write_file(m, rel, vac->data, vac->len, d);
}

enum tfs_err tfs__consolidate_array_meta(const struct mt *m, char *made,
					 size_t made_cap,
					 struct tfs_diag *d)
{
	struct tfs_dirlist meta;
	struct strset live = {0};
	struct tfs_metadata merged = {NULL, 0};
	struct tfs_buf payload, tile, vac;
	uint64_t t1 = UINT64_MAX, t2 = 0;
	char name[TFS_NAME_MAX];
	enum tfs_err e;

	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&tile, TFS_BUF_NO_MAX);
	tfs_buf_init(&vac, TFS_BUF_NO_MAX);
	e = tfs__mt_list(m, "__meta", &meta, d);
	if (e)
		return e;
	e = live_meta_files(m, &meta, &live, d);
	if (e)
		goto out;
	if (live.count < 2) {
		tfs__mt_set_made(made, made_cap, NULL);
		goto out;
	}
	e = meta_vac_list(m, &live, &vac, &t1, &t2, d);
	if (!e)
		e = meta_merged_tile(m, t2, &merged, &payload, &tile, d);
	if (!e)
		e = tfs__mt_new_name(name, t1, t2, 0, "", d);
	if (!e)
		e = meta_write_merged(m, name, &tile, &vac, d);
	if (!e)
		tfs__mt_set_made(made, made_cap, name);
out:
	tfs_metadata_release(&merged);
	tfs_buf_release(&payload);
	tfs_buf_release(&tile);
	tfs_buf_release(&vac);
	tfs__mt_strset_release(&live);
	tfs_dirlist_release(&meta);
	return e;
}
