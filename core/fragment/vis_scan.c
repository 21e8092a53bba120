/* The state of the fragment scan (visibility.c): candidates, vacuum
 * files and consolidated .meta paths as they are found, a string set
 * (append, sort once, look up), and the delete and update commits of the
 * read window, sorted as TileDB applies them. */
#include "visibility_internal.h"

bool tfs__vis_strset_add(struct strset *s, const char *str, size_t len)
{
	if (tfs_grow(&s->items, &s->cap, s->num + 1, sizeof(*s->items)))
		return false;
	s->items[s->num] = tfs_strndup(str, len);
	if (!s->items[s->num])
		return false;
	s->num++;
	return true;
}

int tfs__vis_str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts and drops duplicates. */
void tfs__vis_strset_seal(struct strset *s)
{
	size_t keep = 0;

	if (s->num > 1)
		qsort(s->items, s->num, sizeof(*s->items), tfs__vis_str_cmp);
	for (size_t i = 0; i < s->num; i++) {
		if (keep && !strcmp(s->items[keep - 1], s->items[i])) {
			tfs_free(s->items[i]);
			continue;
		}
		s->items[keep++] = s->items[i];
	}
	s->num = keep;
}

bool tfs__vis_strset_has(const struct strset *s, const char *str)
{
	return s->num &&
	       bsearch(&str, s->items, s->num, sizeof(*s->items), tfs__vis_str_cmp);
}

void tfs__vis_strset_release(struct strset *s)
{
	for (size_t i = 0; i < s->num; i++)
		tfs_free(s->items[i]);
	tfs_free(s->items);
	s->items = NULL;
	s->num = s->cap = 0;
}

enum tfs_err tfs__vis_nomem(const struct scan *s, struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			s->a->path);
}

/* Objects named with a format version newer than we know (layout.md §2)
 * are refused whole: their contents need not follow any layout we know. */
enum tfs_err tfs__vis_check_version(const struct scan *s, const char *rel,
				    const struct tfs_name_info *ni,
				    struct tfs_diag *d)
{
	if (ni->version <= TFS_FORMAT_VERSION_MAX)
		return TFS_E_OK;
	return tfs_fail(d, TFS_E_UNSUPPORTED,
			"'%s/%s': unsupported format version %" PRIu32,
			s->a->path, rel, ni->version);
}

/* tfs__vis_check_version for the timestamped name of rel, if it has one. */
enum tfs_err tfs__vis_check_named_version(const struct scan *s, const char *rel,
					  struct tfs_diag *d)
{
	struct tfs_name_info ni;

	if (tfs_name_parse(rel, &ni) != TFS_E_OK)
		return TFS_E_OK;
	return tfs__vis_check_version(s, rel, &ni, d);
}

/* Overlap test of layout.md §6 step 5 for an object with name info ni. */
bool tfs__vis_passes(const struct scan *s, const struct tfs_name_info *ni,
		     uint64_t t0, uint64_t t1)
{
	if (s->sparse && ni->version >= 15)
		return tfs__any_overlap(ni->t1, ni->t2, t0, t1);
	return tfs__full_overlap(ni->t1, ni->t2, t0, t1);
}

enum tfs_err tfs__vis_add_cand(struct scan *s, const char *prefix,
			       const char *name, const struct tfs_name_info *ni,
			       struct tfs_diag *d)
{
	struct cand *c;
	enum tfs_err err;

	if (tfs_grow(&s->cands, &s->cand_cap, s->cand_num + 1,
		     sizeof(*s->cands)))
		return tfs__vis_nomem(s, d);
	c = &s->cands[s->cand_num];
	memset(c, 0, sizeof(*c));
	c->rel = prefix ? tfs_path_join(prefix, name) : tfs_strdup(name);
	if (!c->rel)
		return tfs__vis_nomem(s, d);
	err = tfs__vis_check_version(s, c->rel, ni, d);
	if (err) {
		tfs_free(c->rel);
		return err;
	}
	c->ni = *ni;
	s->cand_num++;
	return TFS_E_OK;
}

enum tfs_err tfs__vis_add_vac(struct scan *s, const char *rel,
			      struct tfs_diag *d)
{
	struct tfs_name_info ni;
	struct vac *v;
	enum tfs_err err;

	if (tfs_name_parse(rel, &ni) != TFS_E_OK)
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s/%s': vacuum file without a timestamped name",
				s->a->path, rel);
	err = tfs__vis_check_version(s, rel, &ni, d);
	if (err)
		return err;
	if (tfs_grow(&s->vacs, &s->vac_cap, s->vac_num + 1,
		     sizeof(*s->vacs)))
		return tfs__vis_nomem(s, d);
	v = &s->vacs[s->vac_num];
	v->rel = tfs_strdup(rel);
	if (!v->rel)
		return tfs__vis_nomem(s, d);
	v->ni = ni;
	s->vac_num++;
	return TFS_E_OK;
}

enum tfs_err tfs__vis_add_meta(struct scan *s, const char *prefix,
			       const char *name, struct tfs_diag *d)
{
	struct tfs_name_info ni;
	enum tfs_err err;

	if (tfs_name_parse(name, &ni) == TFS_E_OK) {
		err = tfs__vis_check_version(s, name, &ni, d);
		if (err)
			return err;
	}
	if (tfs_grow(&s->metas, &s->meta_cap, s->meta_num + 1,
		     sizeof(*s->metas)))
		return tfs__vis_nomem(s, d);
	s->metas[s->meta_num] =
		prefix ? tfs_path_join(prefix, name) : tfs_strdup(name);
	if (!s->metas[s->meta_num])
		return tfs__vis_nomem(s, d);
	s->meta_num++;
	return TFS_E_OK;
}

void tfs__vis_scan_release(struct scan *s)
{
	tfs__vis_strset_release(&s->ignore);
	tfs__vis_strset_release(&s->consolidated);
	for (size_t i = 0; i < s->cand_num; i++)
		tfs_free(s->cands[i].rel);
	tfs_free(s->cands);
	for (size_t i = 0; i < s->vac_num; i++)
		tfs_free(s->vacs[i].rel);
	tfs_free(s->vacs);
	for (size_t i = 0; i < s->meta_num; i++)
		tfs_free(s->metas[i]);
	tfs_free(s->metas);
}

enum tfs_err tfs__vis_read_file(const struct scan *s, const char *rel,
				uint8_t **buf, size_t *len, struct tfs_diag *d)
{
	char *path = tfs__array_path(s->a, rel);
	enum tfs_err err;

	*buf = NULL;
	*len = 0;
	if (!path)
		return tfs__vis_nomem(s, d);
	err = tfs_vfs_read_all(s->a->vfs, path, TFS__FILE_MAX, buf, len, d);
	tfs_free(path);
	return err;
}

/* ---- delete and update commits ------------------------------------------ */

/* Adds the delete condition held in the generic tile at buf. */
enum tfs_err tfs__vis_add_delete(struct scan *s, const char *marker,
				 const struct tfs_name_info *ni,
				 const char *where, const uint8_t *buf,
				 size_t len, struct tfs_diag *d)
{
	struct tfs_arraydir *a = s->a;
	struct tfs_delete *del;
	struct tfs_diag ld;
	uint8_t *payload;
	size_t plen, consumed;
	enum tfs_err err;

	if (tfs_grow(&a->deletes, &s->delete_cap, a->delete_num + 1,
		     sizeof(*a->deletes)))
		return tfs__vis_nomem(s, d);
	err = tfs__decode_tile(a, where, buf, len, TFS__FILE_MAX, &payload,
			       &plen, NULL, d);
	if (err)
		return err;
	del = &a->deletes[a->delete_num];
	memset(del, 0, sizeof(*del));
	tfs_diag_init(&ld);
	err = tfs_condition_parse(&del->cond, payload, plen, &consumed, &ld);
	tfs_free(payload);
	if (err)
		return tfs_fail(d, err, "'%s': delete condition: %s", where,
				tfs_diag_msg(&ld));
	del->marker = tfs_strdup(marker);
	if (!del->marker) {
		tfs_condition_release(&del->cond);
		return tfs__vis_nomem(s, d);
	}
	del->t1 = ni->t1;
	del->t2 = ni->t2;
	a->delete_num++;
	return TFS_E_OK;
}

static int delete_cmp(const void *x, const void *y)
{
	const struct tfs_delete *a = x, *b = y;

	return a->t1 < b->t1 ? -1 : a->t1 > b->t1;
}

/* Sorts the deletes by t1, ties in the order they were found. */
void tfs__vis_sort_deletes(struct scan *s)
{
	struct tfs_arraydir *a = s->a;

	/* Insertion sort: stable, and delete lists are short. */
	for (size_t i = 1; i < a->delete_num; i++) {
		struct tfs_delete tmp = a->deletes[i];
		size_t j = i;

		while (j > 0 && delete_cmp(&a->deletes[j - 1], &tmp) > 0) {
			a->deletes[j] = a->deletes[j - 1];
			j--;
		}
		a->deletes[j] = tmp;
	}
}

/* Whether __commits holds the file of marker "__commits/<name>". */
static bool commit_file_exists(const struct scan *s, const char *marker)
{
	static const char prefix[] = "__commits/";
	const char *name = marker + sizeof(prefix) - 1;

	if (strncmp(marker, prefix, sizeof(prefix) - 1) || !s->commits ||
	    !s->commits->count)
		return false;
	return bsearch(&name, s->commits->names, s->commits->count,
		       sizeof(*s->commits->names), tfs__vis_str_cmp) != NULL;
}

/* Records the update commit called marker: recognised and listed, never
 * applied (consolidated.md §6). Its file, when there, is decoded and
 * parsed like TileDB does, so a damaged or newer one is refused. */
enum tfs_err tfs__vis_add_update(struct scan *s, const char *marker,
				 const struct tfs_name_info *ni,
				 struct tfs_diag *d)
{
	struct tfs_arraydir *a = s->a;
	struct tfs_update_commit *u;
	struct tfs_diag ld;
	uint8_t *buf, *payload;
	size_t len, plen;
	char *where;
	enum tfs_err err;

	for (size_t i = 0; i < a->update_num; i++)
		if (!strcmp(a->updates[i].marker, marker))
			return TFS_E_OK; /* listed by two .con files */
	if (tfs_grow(&a->updates, &s->update_cap, a->update_num + 1,
		     sizeof(*a->updates)))
		return tfs__vis_nomem(s, d);
	u = &a->updates[a->update_num];
	memset(u, 0, sizeof(*u));
	u->marker = tfs_strdup(marker);
	if (!u->marker)
		return tfs__vis_nomem(s, d);
	u->t1 = ni->t1;
	u->t2 = ni->t2;
	a->update_num++;
	a->has_updates = true;
	if (!commit_file_exists(s, marker))
		return TFS_E_OK;
	err = tfs__vis_read_file(s, marker, &buf, &len, d);
	if (err)
		return err;
	where = tfs__array_path(a, marker);
	err = where ? tfs__decode_tile(a, where, buf, len, TFS__FILE_MAX,
				       &payload, &plen, NULL, d)
		    : tfs__vis_nomem(s, d);
	tfs_free(buf);
	if (!err) {
		tfs_diag_init(&ld);
		err = tfs_update_parse(&u->update, payload, plen, &ld);
		tfs_free(payload);
		if (err)
			tfs_fail(d, err, "'%s': update: %s", where,
				 tfs_diag_msg(&ld));
		else
			u->has_values = true;
	}
	tfs_free(where);
	return err;
}

/* Sorts the updates by t1, ties in the order they were found. */
void tfs__vis_sort_updates(struct scan *s)
{
	struct tfs_arraydir *a = s->a;

	for (size_t i = 1; i < a->update_num; i++) {
		struct tfs_update_commit tmp = a->updates[i];
		size_t j = i;

		while (j > 0 && a->updates[j - 1].t1 > tmp.t1) {
			a->updates[j] = a->updates[j - 1];
			j--;
		}
		a->updates[j] = tmp;
	}
}
