/* Which fragments exist, which are visible at the read window and which
 * are listed (format/layout.md §6, consolidated.md §2–4 and §6).
 *
 * Candidates are collected once from the root (old layout: .ok commits,
 * consolidated .ok markers, v1–4 folders with metadata) and from
 * __commits (.wrt files and consolidated .wrt markers). Vacuum files are
 * then applied twice: at the read window, giving the visible fragments,
 * and at [0, UINT64_MAX], giving what the array lists ("every committed,
 * not-vacuumed fragment", corpus/README.md) and the fragments to vacuum.
 * Each fragment needed by either list is loaded once into the pool. Delete
 * and update commits in the window are collected on the way. */
#include "visibility_internal.h"

/* ---- steps 1–2: ignore and consolidated commit files --------------------- */

static enum tfs_err read_ignores(struct scan *s,
				 const struct tfs_dirlist *commits,
				 struct tfs_diag *d)
{
	for (size_t i = 0; i < commits->count; i++) {
		const char *name = commits->names[i];
		struct tfs_strlist lines;
		uint8_t *buf;
		size_t len;
		char *rel;
		enum tfs_err err;

		if (!tfs_str_ends_with(name, ".ign"))
			continue;
		rel = tfs_path_join("__commits", name);
		if (!rel)
			return tfs__vis_nomem(s, d);
		err = tfs__vis_check_named_version(s, rel, d);
		if (!err)
			err = tfs__vis_read_file(s, rel, &buf, &len, d);
		tfs_free(rel);
		if (err)
			return err;
		err = tfs_lines_parse(&lines, buf, len);
		tfs_free(buf);
		if (err)
			return tfs_fail(d, err, "'%s/__commits/%s': cannot parse",
					s->a->path, name);
		for (size_t k = 0; k < lines.count && !err; k++)
			if (!tfs__vis_strset_add(&s->ignore, lines.items[k],
						 strlen(lines.items[k])))
				err = tfs__vis_nomem(s, d);
		tfs_strlist_release(&lines);
		if (err)
			return err;
	}
	tfs__vis_strset_seal(&s->ignore);
	return TFS_E_OK;
}

static enum tfs_err read_one_con(struct scan *s, const char *name,
				 struct tfs_diag *d)
{
	struct tfs_arraydir *a = s->a;
	struct tfs_con_file con;
	struct tfs_diag ld;
	uint8_t *buf;
	size_t len;
	char *rel, *where = NULL;
	size_t wlen;
	enum tfs_err err;

	rel = tfs_path_join("__commits", name);
	if (!rel)
		return tfs__vis_nomem(s, d);
	err = tfs__vis_check_named_version(s, rel, d);
	if (!err)
		err = tfs__vis_read_file(s, rel, &buf, &len, d);
	if (err)
		goto out_rel;
	tfs_diag_init(&ld);
	err = tfs_con_parse(&con, buf, len, &ld);
	if (err) {
		tfs_fail(d, err, "'%s/%s': %s", a->path, rel, tfs_diag_msg(&ld));
		goto out_buf;
	}
	for (size_t i = 0; i < con.count && !err; i++) {
		const struct tfs_con_entry *e = &con.entries[i];
		struct tfs_name_info ni;
		bool is_del = tfs_str_ends_with(e->marker, ".del");

		if (!tfs__vis_strset_has(&s->ignore, e->marker) &&
		    !tfs__vis_strset_add(&s->consolidated, e->marker,
					 strlen(e->marker))) {
			err = tfs__vis_nomem(s, d);
			break;
		}
		if (!is_del && !tfs_str_ends_with(e->marker, ".upd"))
			continue;
		if (tfs_name_parse(e->marker, &ni) != TFS_E_OK ||
		    !tfs__full_overlap(ni.t1, ni.t2, a->t0,
				       is_del ? a->del_t1 : a->t1))
			continue;
		err = tfs__vis_check_version(s, e->marker, &ni, d);
		if (!err && !is_del)
			err = tfs__vis_add_update(s, e->marker, &ni, d);
		if (err || !is_del)
			continue;
		if (e->del_offset > len || e->del_size > len - e->del_offset) {
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "'%s/%s': delete '%s' runs past the end of the file",
				       a->path, rel, e->marker);
			break;
		}
		/* Messages name the .con file and the embedded marker. */
		wlen = strlen(a->path) + strlen(rel) + strlen(e->marker) + 16;
		tfs_free(where);
		where = tfs_malloc(wlen);
		if (!where) {
			err = tfs__vis_nomem(s, d);
			break;
		}
		snprintf(where, wlen, "%s/%s (delete '%s')", a->path, rel,
			 e->marker);
		err = tfs__vis_add_delete(s, e->marker, &ni, where, buf + e->del_offset,
					  (size_t)e->del_size, d);
	}
	tfs_free(where);
	tfs_con_release(&con);
out_buf:
	tfs_free(buf);
out_rel:
	tfs_free(rel);
	return err;
}

static enum tfs_err read_cons(struct scan *s, const struct tfs_dirlist *commits,
			      struct tfs_diag *d)
{
	for (size_t i = 0; i < commits->count; i++) {
		enum tfs_err err;

		if (!tfs_str_ends_with(commits->names[i], ".con"))
			continue;
		err = read_one_con(s, commits->names[i], d);
		if (err)
			return err;
	}
	tfs__vis_strset_seal(&s->consolidated);
	return TFS_E_OK;
}

/* ---- steps 3–4: candidates ---------------------------------------------- */

/* Whether fragment `name` has its "name.ok" commit marker: in the sorted
 * root listing, or listed by a .con file. */
static enum tfs_err has_ok_marker(const struct scan *s,
				  const struct tfs_dirlist *root,
				  const char *name, bool *out,
				  struct tfs_diag *d)
{
	size_t n = strlen(name);
	char *ok = tfs_malloc(n + 4);

	*out = false;
	if (!ok)
		return tfs__vis_nomem(s, d);
	memcpy(ok, name, n);
	memcpy(ok + n, ".ok", 4);
	*out = (root->count && bsearch(&ok, root->names, root->count,
				       sizeof(*root->names), tfs__vis_str_cmp)) ||
	       tfs__vis_strset_has(&s->consolidated, ok);
	tfs_free(ok);
	return TFS_E_OK;
}

static enum tfs_err scan_root(struct scan *s, const struct tfs_dirlist *root,
			      struct tfs_diag *d)
{
	struct tfs_arraydir *a = s->a;

	for (size_t i = 0; i < root->count; i++) {
		const char *name = root->names[i];
		struct tfs_name_info ni;
		enum tfs_err err = TFS_E_OK;
		bool committed;

		if (tfs_str_ends_with(name, ".vac")) {
			err = tfs__vis_add_vac(s, name, d);
		} else if (tfs_str_ends_with(name, ".meta")) {
			err = tfs__vis_add_meta(s, NULL, name, d);
		} else if (strchr(name, '_') && !strchr(name, '.') &&
			   !tfs__is_reserved_name(name) &&
			   tfs_name_parse(name, &ni) == TFS_E_OK) {
			err = has_ok_marker(s, root, name, &committed, d);
			if (err)
				return err;
			if (!committed && ni.version < 5) {
				struct tfs_stat st;
				char *p = tfs__array_path(a, name);
				char *m = p ? tfs_path_join(p,
						"__fragment_metadata.tdb") : NULL;

				tfs_free(p);
				if (!m)
					return tfs__vis_nomem(s, d);
				err = tfs_vfs_stat(a->vfs, m, &st, d);
				tfs_free(m);
				committed = !err && st.exists && !st.is_dir;
			}
			if (!err && committed)
				err = tfs__vis_add_cand(s, NULL, name, &ni, d);
		}
		if (err)
			return err;
	}
	return TFS_E_OK;
}

/* "__commits/<name>.wrt" -> name (borrowed pointer and length), or NULL. */
static const char *wrt_marker_name(const char *marker, size_t *len)
{
	static const char prefix[] = "__commits/";
	size_t n = strlen(marker);

	if (n <= sizeof(prefix) - 1 + 4 ||
	    memcmp(marker, prefix, sizeof(prefix) - 1) ||
	    !tfs_str_ends_with(marker, ".wrt"))
		return NULL;
	marker += sizeof(prefix) - 1;
	*len = n - (sizeof(prefix) - 1) - 4;
	if (memchr(marker, '/', *len))
		return NULL;
	return marker;
}

static enum tfs_err add_wrt_cand(struct scan *s, const char *name, size_t len,
				 struct tfs_diag *d)
{
	struct tfs_name_info ni;
	char *frag = tfs_strndup(name, len);
	enum tfs_err err = TFS_E_OK;

	if (!frag)
		return tfs__vis_nomem(s, d);
	if (tfs_name_parse(frag, &ni) == TFS_E_OK)
		err = tfs__vis_add_cand(s, "__fragments", frag, &ni, d);
	tfs_free(frag);
	return err;
}

static enum tfs_err scan_commits(struct scan *s,
				 const struct tfs_dirlist *commits,
				 struct tfs_diag *d)
{
	struct tfs_arraydir *a = s->a;
	enum tfs_err err;

	/* Fragments committed through .con files first, in sorted order. */
	for (size_t i = 0; i < s->consolidated.num; i++) {
		size_t len;
		const char *name = wrt_marker_name(s->consolidated.items[i], &len);

		if (!name)
			continue;
		err = add_wrt_cand(s, name, len, d);
		if (err)
			return err;
	}
	for (size_t i = 0; i < commits->count; i++) {
		const char *name = commits->names[i];
		bool is_wrt = tfs_str_ends_with(name, ".wrt");
		bool is_del = tfs_str_ends_with(name, ".del");
		bool is_upd = tfs_str_ends_with(name, ".upd");
		struct tfs_name_info ni;
		char *rel;

		if (tfs_str_ends_with(name, ".vac")) {
			rel = tfs_path_join("__commits", name);
			if (!rel)
				return tfs__vis_nomem(s, d);
			err = tfs__vis_add_vac(s, rel, d);
			tfs_free(rel);
			if (err)
				return err;
			continue;
		}
		if (!is_wrt && !is_del && !is_upd)
			continue;
		rel = tfs_path_join("__commits", name);
		if (!rel)
			return tfs__vis_nomem(s, d);
		if (tfs__vis_strset_has(&s->consolidated, rel)) {
			tfs_free(rel);
			continue;
		}
		if (is_wrt) {
			err = add_wrt_cand(s, name, strlen(name) - 4, d);
		} else if (tfs_name_parse(name, &ni) != TFS_E_OK ||
			   !tfs__full_overlap(ni.t1, ni.t2, a->t0,
					      is_upd ? a->t1 : a->del_t1)) {
			err = TFS_E_OK;
		} else if ((err = tfs__vis_check_version(s, rel, &ni, d))) {
			/* newer than we know: returned below */
		} else if (is_upd) {
			err = tfs__vis_add_update(s, rel, &ni, d);
		} else {
			uint8_t *buf;
			size_t len;
			char *path = tfs__array_path(a, rel);

			err = path ? tfs__vis_read_file(s, rel, &buf, &len, d)
				   : tfs__vis_nomem(s, d);
			if (!err) {
				err = tfs__vis_add_delete(s, rel, &ni, path, buf, len, d);
				tfs_free(buf);
			}
			tfs_free(path);
		}
		tfs_free(rel);
		if (err)
			return err;
	}
	return TFS_E_OK;
}

static enum tfs_err scan_fragment_meta(struct scan *s, struct tfs_diag *d)
{
	struct tfs_dirlist l;
	enum tfs_err err;

	err = tfs__list(s->a, "__fragment_meta", true, true, &l, d);
	if (err)
		return err;
	for (size_t i = 0; i < l.count && !err; i++)
		err = tfs__vis_add_meta(s, "__fragment_meta", l.names[i], d);
	tfs_dirlist_release(&l);
	return err;
}

/* ---- step 6: vacuum files ----------------------------------------------- */

static enum tfs_err apply_vacs(struct scan *s, struct tfs_diag *d)
{
	struct tfs_arraydir *a = s->a;

	for (size_t v = 0; v < s->vac_num; v++) {
		const struct vac *vf = &s->vacs[v];
		bool at_window = tfs__vis_passes(s, &vf->ni, a->t0, a->t1);
		struct tfs_strlist lines;
		struct strset named = {NULL, 0, 0};
		uint8_t *buf;
		size_t len;
		enum tfs_err err;

		/* At [0, UINT64_MAX] every vacuum file applies. */
		err = tfs__vis_read_file(s, vf->rel, &buf, &len, d);
		if (err)
			return err;
		err = tfs_lines_parse(&lines, buf, len);
		tfs_free(buf);
		if (err)
			return tfs_fail(d, err, "'%s/%s': cannot parse", a->path,
					vf->rel);
		for (size_t k = 0; k < lines.count && !err; k++) {
			char *norm = tfs_vac_line_normalize(lines.items[k]);

			if (!norm || !tfs__vis_strset_add(&named, norm, strlen(norm)))
				err = tfs__vis_nomem(s, d);
			tfs_free(norm);
		}
		tfs_strlist_release(&lines);
		if (err) {
			tfs__vis_strset_release(&named);
			return err;
		}
		tfs__vis_strset_seal(&named);
		for (size_t c = 0; c < s->cand_num; c++) {
			if (!tfs__vis_strset_has(&named, s->cands[c].rel))
				continue;
			s->cands[c].hidden_all = true;
			if (at_window)
				s->cands[c].hidden_window = true;
		}
		tfs__vis_strset_release(&named);
	}
	return TFS_E_OK;
}

/* ---- steps 7–9 ---------------------------------------------------------- */

/* Pointers to the chosen candidates' fragments, sorted by t1, ties in
 * candidate order. */
static enum tfs_err build_order(struct scan *s, bool listed,
				struct tfs_fragment ***out, size_t *num,
				struct tfs_diag *d)
{
	struct tfs_fragment **v;
	size_t n = 0;

	for (size_t i = 0; i < s->cand_num; i++)
		if (listed ? s->cands[i].listed : s->cands[i].visible)
			n++;
	v = tfs_callocn(n ? n : 1, sizeof(*v));
	if (!v)
		return tfs__vis_nomem(s, d);
	n = 0;
	for (size_t i = 0; i < s->cand_num; i++) {
		struct tfs_fragment *f = s->cands[i].f;
		size_t j;

		if (!(listed ? s->cands[i].listed : s->cands[i].visible))
			continue;
		/* Insertion sort on t1, stable. */
		for (j = n; j > 0 && v[j - 1]->name_info.t1 > f->name_info.t1;
		     j--)
			v[j] = v[j - 1];
		v[j] = f;
		n++;
	}
	*out = v;
	*num = n;
	return TFS_E_OK;
}

/* Footers are read by this many threads at most (the caller's included):
 * each read waits for storage more than for a CPU. */
#define LOAD_THREADS 4
/* Fewer fragments than this per thread are not worth one. */
#define LOAD_PER_THREAD 16

/* Fragments of the pool loaded by several threads, each taking the next
 * candidate in order; each remembers its first failure. */
struct load_job {
	struct scan *s;
	const struct tfs__meta_index *idx;
	size_t next;    /* next candidate to take (atomic) */
	bool stop;      /* a failure was met (atomic) */
};

struct load_worker {
	struct load_job *job;
	size_t fail_at; /* candidate of the first failure, or SIZE_MAX */
	enum tfs_err err;
	struct tfs_diag d;
};

static void *load_worker_run(void *arg)
{
	struct load_worker *w = arg;
	struct load_job *job = w->job;
	struct scan *s = job->s;

	while (!__atomic_load_n(&job->stop, __ATOMIC_RELAXED)) {
		size_t i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
		struct cand *c;
		enum tfs_err err;

		if (i >= s->cand_num)
			break;
		c = &s->cands[i];
		if (!c->visible && !c->listed)
			continue;
		err = tfs__fragment_new(s->a, c->rel, job->idx, &c->f, &w->d);
		if (err) {
			/* Candidates are taken in order: every one before i
			 * is taken already and still finishes, so the first
			 * failure of all is the lowest of the workers'. */
			w->err = err;
			w->fail_at = i;
			__atomic_store_n(&job->stop, true, __ATOMIC_RELAXED);
			break;
		}
	}
	return NULL;
}

/* Loads the footer of every fragment that either list needs, in parallel
 * when there are many; the failure reported is the first in candidate
 * order, as when loaded one by one. */
static enum tfs_err load_cands(struct scan *s, size_t n,
			       const struct tfs__meta_index *idx,
			       struct tfs_diag *d)
{
	struct load_job job = {.s = s, .idx = idx};
	struct load_worker w[LOAD_THREADS];
	pthread_t tid[LOAD_THREADS];
	bool started[LOAD_THREADS] = {false};
	size_t threads = n / LOAD_PER_THREAD, first = 0;

	if (threads > LOAD_THREADS)
		threads = LOAD_THREADS;
	if (threads == 0)
		threads = 1;
	for (size_t t = 0; t < threads; t++) {
		w[t].job = &job;
		w[t].fail_at = SIZE_MAX;
		w[t].err = TFS_E_OK;
		tfs_diag_init(&w[t].d);
	}
	for (size_t t = 1; t < threads; t++)
		started[t] = pthread_create(&tid[t], NULL, load_worker_run,
					    &w[t]) == 0;
	load_worker_run(&w[0]);
	for (size_t t = 1; t < threads; t++)
		if (started[t])
			pthread_join(tid[t], NULL);
	for (size_t t = 1; t < threads; t++)
		if (w[t].fail_at < w[first].fail_at)
			first = t;
	if (w[first].err)
		*d = w[first].d;
	return w[first].err;
}

static enum tfs_err load_pool(struct scan *s, struct tfs_diag *d)
{
	struct tfs_arraydir *a = s->a;
	struct tfs__meta_index *idx = NULL;
	size_t n = 0;
	enum tfs_err err = TFS_E_OK;

	for (size_t i = 0; i < s->cand_num; i++)
		if (s->cands[i].visible || s->cands[i].listed)
			n++;
	a->frag_pool = tfs_callocn(n ? n : 1, sizeof(*a->frag_pool));
	if (!a->frag_pool)
		return tfs__vis_nomem(s, d);
	if (n && s->meta_num) {
		err = tfs__meta_index_load(a, s->metas, s->meta_num, &idx, d);
		if (err)
			return err;
	}
	if (n)
		err = load_cands(s, n, idx, d);
	/* The pool owns every fragment loaded, failure or not. */
	for (size_t i = 0; i < s->cand_num; i++)
		if (s->cands[i].f)
			a->frag_pool[a->frag_pool_num++] = s->cands[i].f;
	tfs__meta_index_free(idx);
	return err;
}

static enum tfs_err collect_to_vacuum(struct scan *s, struct tfs_diag *d)
{
	struct tfs_arraydir *a = s->a;
	size_t n = 0;

	for (size_t i = 0; i < s->cand_num; i++)
		if (s->cands[i].hidden_all)
			n++;
	a->to_vacuum = tfs_callocn(n ? n : 1, sizeof(*a->to_vacuum));
	if (!a->to_vacuum)
		return tfs__vis_nomem(s, d);
	for (size_t i = 0; i < s->cand_num; i++) {
		const char *rel = s->cands[i].rel;
		const char *slash = strrchr(rel, '/');

		if (!s->cands[i].hidden_all)
			continue;
		a->to_vacuum[a->to_vacuum_num] =
			tfs_strdup(slash ? slash + 1 : rel);
		if (!a->to_vacuum[a->to_vacuum_num])
			return tfs__vis_nomem(s, d);
		a->to_vacuum_num++;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__load_fragments(struct tfs_arraydir *a, struct tfs_diag *d)
{
	struct scan s;
	struct tfs_dirlist root = {NULL, 0}, commits = {NULL, 0};
	enum tfs_err err;

	memset(&s, 0, sizeof(s));
	s.a = a;
	s.sparse = a->schema->array_type == TFS_SPARSE;

	err = tfs__list(a, "", false, true, &root, d);
	if (!err)
		err = tfs__list(a, "__commits", true, true, &commits, d);
	s.commits = &commits;
	if (!err)
		err = read_ignores(&s, &commits, d);
	if (!err)
		err = read_cons(&s, &commits, d);
	if (!err)
		err = scan_root(&s, &root, d);
	if (!err)
		err = scan_commits(&s, &commits, d);
	if (!err)
		err = scan_fragment_meta(&s, d);
	if (!err)
		err = apply_vacs(&s, d);
	if (err)
		goto out;

	for (size_t i = 0; i < s.cand_num; i++) {
		struct cand *c = &s.cands[i];

		c->visible = !c->hidden_window && tfs__vis_passes(&s, &c->ni, a->t0, a->t1);
		c->listed = !c->hidden_all;
	}
	err = load_pool(&s, d);
	if (!err)
		err = build_order(&s, false, &a->fragments, &a->fragment_num, d);
	if (!err)
		err = build_order(&s, true, &a->listed, &a->listed_num, d);
	if (!err)
		err = collect_to_vacuum(&s, d);
	if (!err) {
		tfs__vis_sort_deletes(&s);
		tfs__vis_sort_updates(&s);
	}
out:
	tfs_dirlist_release(&root);
	tfs_dirlist_release(&commits);
	tfs__vis_scan_release(&s);
	return err;
}
