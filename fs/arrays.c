/* The cache of opened arrays. Opening an array lists its fragments and
 * loads their metadata, so every node and open file of one version shares
 * one handle. Current views are re-checked at most twice a second by the
 * modification times of the folders a commit changes; when one changed,
 * the array is opened again and later lookups get the new handle, while
 * open files keep the one they started with (SPEC §2, last paragraph). */
#include "tfsd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfs_alloc.h"
#include "tfs_log.h"
#include "tfs_mem.h"
#include "tfs_s3.h"

#define RECHECK_MS 500
#define MAX_ENTRIES 256
/* Arrays whose newest fragment's time is remembered: a table of
 * NEWEST_ENTRIES, each view in one of NEWEST_WAYS places after its hash
 * (when all are taken, the least recently checked one goes). */
#define NEWEST_ENTRIES 32768
#define NEWEST_WAYS 4
/* Folders of SOURCE whose kind (array, group) is remembered, each in the
 * place of its path's hash (a collision replaces). */
#define KIND_ENTRIES 4096
/* Folders whose change means new fragments, metadata or schemas. */
static const char *const watched[] = {"", "__fragments", "__commits",
				      "__fragment_meta", "__meta",
				      "__schema"};
#define WATCHED_NUM (sizeof(watched) / sizeof(watched[0]))

struct entry {
	char *rel;
	uint64_t timestamp;
	struct tfsd_arr *arr;                /* the cache's own reference */
	int64_t stamp[WATCHED_NUM]; /* mtimes (ns) at opening; 0: none */
	uint64_t checked_ms;
	uint64_t used_ms;
};

/* The newest fragment's time of a view, and the stamps it was seen at. */
struct newest {
	char *rel; /* NULL: empty */
	uint64_t timestamp;
	int64_t stamp[WATCHED_NUM];
	uint64_t checked_ms;
	uint64_t ms;
};

/* The kind of a folder of SOURCE, as asked at checked_ms in generation
 * gen of the kinds (tfsd_arrays_invalidate starts a new one). */
struct kind {
	char *src; /* NULL: empty */
	enum tfs_object kind;
	uint64_t gen;
	uint64_t checked_ms;
};

struct tfsd_arrays {
	const struct tfsd_config *cfg;
	struct tfs_tile_cache *tiles;
	struct tfs_pool *pool;
	struct tfs_vfs *vfs; /* SOURCE's storage: cfg->vfs, rooted */
	bool own_vfs;        /* made here (cfg->vfs was NULL): freed here */
	pthread_mutex_t lock;
	struct entry entries[MAX_ENTRIES]; /* protected by lock */
	size_t entry_num;                  /* protected by lock */
	uint64_t next_gen;                 /* protected by lock */
	struct newest *newest; /* NEWEST_ENTRIES, protected by lock */
	struct kind *kinds;    /* KIND_ENTRIES, protected by lock */
	uint64_t kind_gen;     /* protected by lock */
};

static uint64_t reclaim_arrays(void *ctx, uint64_t want);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

enum tfs_err tfsd_arrays_new(const struct tfsd_config *cfg,
			     struct tfs_tile_cache *tiles, struct tfs_pool *pool,
			     struct tfsd_arrays **out)
{
	struct tfsd_arrays *c = tfs_callocn(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return TFS_E_NOMEM;
	c->cfg = cfg;
	c->tiles = tiles;
	c->pool = pool;
	/* SOURCE's storage: the configuration's (a folder's, rooted there
	 * so that no link below SOURCE is followed), else the default one
	 * for the source: a bucket's (s3://, checked at start-up by
	 * configure_s3) or a plain folder's for a configuration set up by
	 * hand. */
	c->vfs = cfg->vfs;
	if (!c->vfs) {
		if (tfs_vfs_default_new(cfg->source, &c->vfs, NULL)) {
			tfs_free(c);
			return TFS_E_NOMEM;
		}
		c->own_vfs = true;
	}
	c->newest = tfs_callocn(NEWEST_ENTRIES, sizeof(*c->newest));
	c->kinds = tfs_callocn(KIND_ENTRIES, sizeof(*c->kinds));
	if (!c->newest || !c->kinds) {
		tfs_free(c->newest);
		tfs_free(c->kinds);
		if (c->own_vfs)
			tfs_vfs_free(c->vfs);
		tfs_free(c);
		return TFS_E_NOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	if (tfs_mem_reclaimer_add(tfs_mem_global(), reclaim_arrays, c)) {
		tfsd_arrays_free(c);
		return TFS_E_NOMEM;
	}
	*out = c;
	return TFS_E_OK;
}

static void arr_free(struct tfsd_arr *arr)
{
	tfs_array_close(arr->a);
	tfs_free(arr->ned);
	tfs_free(arr);
}

/* The memory accountant's reclaimer: closes the least recently used
 * arrays that only the cache holds and that hold metadata read on demand
 * (R-trees, tile offsets: as much as the cells for arrays of many small
 * tiles), until `want` bytes of it are gone. Asked after the tile
 * cache. */
static uint64_t reclaim_arrays(void *ctx, uint64_t want)
{
	struct tfsd_arrays *c = ctx;
	struct tfsd_arr *drop[16];
	size_t drop_num = 0;
	uint64_t freed = 0;

	pthread_mutex_lock(&c->lock);
	while (freed < want && drop_num < sizeof(drop) / sizeof(drop[0])) {
		size_t lru = SIZE_MAX;
		uint64_t held = 0;

		for (size_t i = 0; i < c->entry_num; i++) {
			struct entry *en = &c->entries[i];
			uint64_t n;

			if (en->arr->refs != 1 ||
			    (lru != SIZE_MAX &&
			     en->used_ms >= c->entries[lru].used_ms))
				continue;
			n = tfs_array_memory(en->arr->a);
			if (n) {
				lru = i;
				held = n;
			}
		}
		if (lru == SIZE_MAX)
			break;
		drop[drop_num++] = c->entries[lru].arr;
		freed += held;
		tfs_free(c->entries[lru].rel);
		c->entries[lru] = c->entries[--c->entry_num];
	}
	pthread_mutex_unlock(&c->lock);
	/* Each had only the cache's reference: closed outside the lock. */
	for (size_t i = 0; i < drop_num; i++)
		arr_free(drop[i]);
	return freed;
}

void tfsd_arrays_free(struct tfsd_arrays *c)
{
	if (!c)
		return;
	tfs_mem_reclaimer_remove(tfs_mem_global(), reclaim_arrays, c);
	for (size_t i = 0; i < c->entry_num; i++) {
		tfsd_arr_put(c, c->entries[i].arr);
		tfs_free(c->entries[i].rel);
	}
	for (size_t i = 0; i < NEWEST_ENTRIES; i++)
		tfs_free(c->newest[i].rel);
	tfs_free(c->newest);
	for (size_t i = 0; i < KIND_ENTRIES; i++)
		tfs_free(c->kinds[i].src);
	tfs_free(c->kinds);
	pthread_mutex_destroy(&c->lock);
	if (c->own_vfs)
		tfs_vfs_free(c->vfs);
	tfs_free(c);
}

struct tfs_vfs *tfsd_arrays_vfs(const struct tfsd_arrays *c)
{
	return c->vfs;
}

void tfsd_arr_get(struct tfsd_arrays *c, struct tfsd_arr *arr)
{
	pthread_mutex_lock(&c->lock);
	arr->refs++;
	pthread_mutex_unlock(&c->lock);
}

void tfsd_arr_put(struct tfsd_arrays *c, struct tfsd_arr *arr)
{
	bool last;

	if (!arr)
		return;
	pthread_mutex_lock(&c->lock);
	last = --arr->refs == 0;
	pthread_mutex_unlock(&c->lock);
	if (last)
		arr_free(arr);
}

/* On object storage folders have no mtime: the stamp of a watched folder
 * is a hash of its listing (names and count), never 0 when it lists. */
static int64_t stamp_of_listing(struct tfs_vfs *v, const char *path)
{
	struct tfs_dirlist l = {0};
	uint64_t h = 1469598103934665603ULL;

	if (tfs_vfs_list(v, path, &l, NULL))
		return 0;
	for (size_t i = 0; i < l.count; i++)
		for (const char *p = l.names[i];; p++) {
			h = (h ^ (unsigned char)*p) * 1099511628211ULL;
			if (!*p)
				break;
		}
	h ^= l.count;
	tfs_dirlist_release(&l);
	return (int64_t)(h >> 1) | 1;
}

static void stamp_read(const struct tfsd_arrays *c, const char *rel,
		       int64_t *out)
{
	struct tfs_stat st[WATCHED_NUM];
	char path[4096];
	bool bucket = tfs_s3_is_uri(c->cfg->source);

	snprintf(path, sizeof(path), "%s%s%s", c->cfg->source, *rel ? "/" : "",
		 rel);
	if (bucket) {
		for (size_t i = 0; i < WATCHED_NUM; i++) {
			char *p = *watched[i] ? tfs_path_join(path, watched[i])
					      : NULL;

			out[i] = !*watched[i] || p
					 ? stamp_of_listing(c->vfs, p ? p : path)
					 : 0;
			tfs_free(p);
		}
		return;
	}
	if (tfs_vfs_stat_names(c->vfs, path, watched, WATCHED_NUM, st, NULL))
		memset(st, 0, sizeof(st));
	for (size_t i = 0; i < WATCHED_NUM; i++)
		out[i] = st[i].exists ? st[i].mtime_ns : 0;
}

static bool stamp_equal(const int64_t *a, const int64_t *b)
{
	for (size_t i = 0; i < WATCHED_NUM; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static enum tfs_err arr_open(struct tfsd_arrays *c, const char *rel,
			     uint64_t timestamp, struct tfsd_arr **out,
			     struct tfs_diag *d)
{
	struct tfs_open_opts oo = {.vfs = c->vfs,
				   .timestamp = timestamp,
				   .threads = c->cfg->threads,
				   .key = tfsd_config_key(c->cfg, rel),
				   .cache = c->tiles,
				   .pool = c->pool,
				   .max_tile_bytes = tfsd_data_limit(c->cfg)};
	char path[4096];
	struct tfsd_arr *arr;
	enum tfs_err e;

	*out = NULL;
	if ((size_t)snprintf(path, sizeof(path), "%s%s%s", c->cfg->source,
			     *rel ? "/" : "", rel) >= sizeof(path))
		return tfs_fail(d, TFS_E_INVALID, "'%s': path too long", rel);
	arr = tfs_callocn(1, sizeof(*arr));
	if (!arr)
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", rel);
	e = tfs_array_open(path, &oo, &arr->a, d);
	/* A default key (key=, '*') is for the encrypted arrays among many:
	 * the others open without it. */
	if (e == TFS_E_KEY && oo.key && !tfsd_config_has_own_key(c->cfg, rel)) {
		struct tfs_diag with_key = d ? *d : (struct tfs_diag){0};

		oo.key = NULL;
		tfs_diag_init(d);
		e = tfs_array_open(path, &oo, &arr->a, d);
		/* Encrypted after all: the key given is the wrong one, which
		 * is what the first failure says ("no key" would mislead). */
		if (e == TFS_E_KEY && d)
			*d = with_key;
	}
	if (e) {
		tfs_free(arr);
		return e;
	}
	arr->schema = tfs_array_schema(arr->a);
	arr->timestamp = timestamp;
	arr->ned = tfs_callocn(tfs_schema_dim_count(arr->schema), sizeof(*arr->ned));
	if (!arr->ned) {
		arr_free(arr);
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", rel);
	}
	arr->has_ned = tfs_array_non_empty_domain(arr->a, arr->ned);
	for (size_t i = 0; i < tfs_array_fragment_count(arr->a); i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(arr->a, i, &f);
		if (f.visible)
			arr->sparse_cells += f.cell_num;
	}
	arr->refs = 1;
	*out = arr;
	return TFS_E_OK;
}

static struct entry *find(struct tfsd_arrays *c, const char *rel,
			  uint64_t timestamp)
{
	for (size_t i = 0; i < c->entry_num; i++)
		if (c->entries[i].timestamp == timestamp &&
		    strcmp(c->entries[i].rel, rel) == 0)
			return &c->entries[i];
	return NULL;
}

static struct newest *newest_find(struct tfsd_arrays *c, const char *rel,
				  uint64_t timestamp);

void tfsd_arrays_invalidate(struct tfsd_arrays *c, const char *rel)
{
	struct newest *nw;
	struct entry *en;

	pthread_mutex_lock(&c->lock);
	en = find(c, rel, 0);
	if (en) {
		/* A zero stamp never equals a folder's: the next get reopens. */
		memset(en->stamp, 0, sizeof(en->stamp));
		en->checked_ms = 0;
	}
	nw = newest_find(c, rel, 0);
	if (nw) {
		memset(nw->stamp, 0, sizeof(nw->stamp));
		nw->checked_ms = 0;
	}
	c->kind_gen++;
	pthread_mutex_unlock(&c->lock);
}

/* Makes room for one entry by dropping the least recently used one. */
static struct entry *slot_for_new(struct tfsd_arrays *c,
				  struct tfsd_arr **drop)
{
	size_t lru = 0;

	*drop = NULL;
	if (c->entry_num < MAX_ENTRIES)
		return &c->entries[c->entry_num++];
	for (size_t i = 1; i < c->entry_num; i++)
		if (c->entries[i].used_ms < c->entries[lru].used_ms)
			lru = i;
	*drop = c->entries[lru].arr;
	tfs_free(c->entries[lru].rel);
	return &c->entries[lru];
}

/* Puts arr, just opened at stamp, in the cache as the view of rel at
 * timestamp (in place of an older opening, else of the least recently
 * used entry), with a reference for the caller. On failure arr is
 * freed. */
static enum tfs_err entry_put(struct tfsd_arrays *c, const char *rel,
			      uint64_t timestamp, const int64_t *stamp,
			      uint64_t now, struct tfsd_arr *arr,
			      struct tfs_diag *d)
{
	char *rel_copy = tfs_strdup(rel);
	struct tfsd_arr *drop = NULL;
	struct entry *en;

	if (!rel_copy) {
		arr_free(arr);
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", rel);
	}
	pthread_mutex_lock(&c->lock);
	arr->gen = ++c->next_gen;
	en = find(c, rel, timestamp);
	if (en) {
		drop = en->arr;
		tfs_free(en->rel);
	} else {
		en = slot_for_new(c, &drop);
	}
	en->rel = rel_copy;
	en->timestamp = timestamp;
	en->arr = arr;
	memcpy(en->stamp, stamp, sizeof(en->stamp));
	en->checked_ms = now;
	en->used_ms = now;
	arr->refs++; /* the caller's */
	pthread_mutex_unlock(&c->lock);
	tfsd_arr_put(c, drop);
	if (drop)
		tfs_log(TFS_LOG_DEBUG, "array '%s': reopened (changed on disk)",
			rel);
	return TFS_E_OK;
}

/* tfsd_arrays_get, with the stamps of rel's folders when the caller read
 * them just now (NULL: read them here). */
static enum tfs_err arrays_get(struct tfsd_arrays *c, const char *rel,
			       uint64_t timestamp, const int64_t *stamp_now,
			       struct tfsd_arr **out, struct tfs_diag *d)
{
	int64_t stamp[WATCHED_NUM];
	bool current = timestamp == 0;
	struct tfsd_arr *arr = NULL;
	struct entry *en;
	uint64_t now = now_ms();
	enum tfs_err e;

	if (current && c->cfg->timestamp) {
		timestamp = c->cfg->timestamp;
		current = false;
	}
	pthread_mutex_lock(&c->lock);
	en = find(c, rel, timestamp);
	if (en && (!current || now - en->checked_ms < RECHECK_MS)) {
		en->used_ms = now;
		arr = en->arr;
		arr->refs++;
	}
	pthread_mutex_unlock(&c->lock);
	if (arr) {
		*out = arr;
		return TFS_E_OK;
	}

	/* Check or open outside the lock: both do I/O. */
	if (stamp_now)
		memcpy(stamp, stamp_now, sizeof(stamp));
	else
		stamp_read(c, rel, stamp);
	pthread_mutex_lock(&c->lock);
	en = find(c, rel, timestamp);
	if (en && stamp_equal(en->stamp, stamp)) {
		en->checked_ms = now;
		en->used_ms = now;
		arr = en->arr;
		arr->refs++;
	}
	pthread_mutex_unlock(&c->lock);
	if (arr) {
		*out = arr;
		return TFS_E_OK;
	}

	e = arr_open(c, rel, timestamp, &arr, d);
	if (!e)
		e = entry_put(c, rel, timestamp, stamp, now, arr, d);
	if (e)
		return e;
	*out = arr;
	return TFS_E_OK;
}

enum tfs_err tfsd_arrays_get(struct tfsd_arrays *c, const char *rel,
			     uint64_t timestamp, struct tfsd_arr **out,
			     struct tfs_diag *d)
{
	return arrays_get(c, rel, timestamp, NULL, out, d);
}

/* ---- The newest fragment's time of many arrays ---------------------------- */

uint64_t tfsd_arr_newest(const struct tfsd_arr *arr)
{
	uint64_t last = 0;

	for (size_t i = 0; i < tfs_array_fragment_count(arr->a); i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(arr->a, i, &f);
		if (f.visible && f.t2 > last)
			last = f.t2;
	}
	return last;
}

/* FNV-1a of path, started from seed. */
static uint64_t path_hash(const char *path, uint64_t seed)
{
	uint64_t h = 1469598103934665603ULL ^ seed;

	for (const char *p = path; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	/* The low bits of FNV-1a barely change with the last bytes (names
	 * that differ in a counter): mixed down from the high ones. */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

/* The first of the places of a view in the table. */
static size_t newest_home(const char *rel, uint64_t timestamp)
{
	return (size_t)(path_hash(rel, timestamp) % NEWEST_ENTRIES);
}

/* The entry of the view, or NULL (the caller holds c->lock). */
static struct newest *newest_find(struct tfsd_arrays *c, const char *rel,
				  uint64_t timestamp)
{
	size_t home = newest_home(rel, timestamp);

	for (size_t w = 0; w < NEWEST_WAYS; w++) {
		struct newest *nw = &c->newest[(home + w) % NEWEST_ENTRIES];

		if (nw->rel && nw->timestamp == timestamp &&
		    !strcmp(nw->rel, rel))
			return nw;
	}
	return NULL;
}

/* Where the view goes: its own entry, else a free place, else the least
 * recently checked of its places (the caller holds c->lock). */
static struct newest *newest_place(struct tfsd_arrays *c, const char *rel,
				   uint64_t timestamp)
{
	size_t home = newest_home(rel, timestamp);
	struct newest *best = NULL;

	for (size_t w = 0; w < NEWEST_WAYS; w++) {
		struct newest *nw = &c->newest[(home + w) % NEWEST_ENTRIES];

		if (nw->rel && nw->timestamp == timestamp &&
		    !strcmp(nw->rel, rel))
			return nw;
		if (!best || (best->rel && (!nw->rel ||
					    nw->checked_ms < best->checked_ms)))
			best = nw;
	}
	return best;
}

enum tfs_err tfsd_arrays_newest(struct tfsd_arrays *c, const char *rel,
				uint64_t timestamp, uint64_t *ms,
				struct tfs_diag *d)
{
	int64_t stamp[WATCHED_NUM];
	bool current = timestamp == 0, known = false;
	uint64_t now = now_ms(), key = timestamp;
	struct tfsd_arr *arr;
	struct newest *nw;
	char *rel_copy;
	enum tfs_err e;

	*ms = 0;
	if (current && c->cfg->timestamp)
		current = false;
	pthread_mutex_lock(&c->lock);
	nw = newest_find(c, rel, key);
	if (nw && (!current || now - nw->checked_ms < RECHECK_MS)) {
		*ms = nw->ms;
		known = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (known)
		return TFS_E_OK;
	/* Read before the opening: a change after it is seen next time. */
	stamp_read(c, rel, stamp);
	pthread_mutex_lock(&c->lock);
	nw = newest_find(c, rel, key);
	if (nw && stamp_equal(nw->stamp, stamp)) {
		nw->checked_ms = now;
		*ms = nw->ms;
		known = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (known)
		return TFS_E_OK;
	e = arrays_get(c, rel, timestamp, stamp, &arr, d);
	if (e)
		return e;
	*ms = tfsd_arr_newest(arr);
	tfsd_arr_put(c, arr);
	rel_copy = tfs_strdup(rel);
	if (!rel_copy)
		return TFS_E_OK; /* known, not remembered */
	pthread_mutex_lock(&c->lock);
	nw = newest_place(c, rel, key);
	tfs_free(nw->rel);
	nw->rel = rel_copy;
	nw->timestamp = key;
	memcpy(nw->stamp, stamp, sizeof(stamp));
	nw->checked_ms = now;
	nw->ms = *ms;
	pthread_mutex_unlock(&c->lock);
	return TFS_E_OK;
}

/* ---- Opening a view again after a vacuum --------------------------------- */

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tfs_fragment_info *)a)->name,
		      ((const struct tfs_fragment_info *)b)->name);
}

/* The fragments visible in a, sorted by name (views valid while a is
 * open), into *out (tfs_free). */
static enum tfs_err visible_sorted(const struct tfs_array *a,
				   struct tfs_fragment_info **out, size_t *num)
{
	size_t n = tfs_array_fragment_count(a);

	*num = 0;
	*out = tfs_callocn(n ? n : 1, sizeof(**out));
	if (!*out)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		tfs_array_fragment(a, i, &(*out)[*num]);
		if ((*out)[*num].visible)
			(*num)++;
	}
	qsort(*out, *num, sizeof(**out), info_cmp);
	return TFS_E_OK;
}

/* Whether fragment c, new in a view, may hold the cells of the vanished
 * fragment g. A consolidation is named with the time range it merged, or
 * with its end alone when it is sparse without per-cell times
 * (format/consolidated.md §5), and never merges a range that interleaves
 * in time with a fragment left out of it (core/maintain; TileDB merges
 * neighbours in time too). */
static bool may_hold(const struct tfs_fragment_info *c,
		     const struct tfs_fragment_info *g)
{
	if (g->t2 > c->t2)
		return false;
	return c->t1 <= g->t1 ||
	       (!c->dense && !c->cell_timestamps && c->t1 == c->t2);
}

/* What changed between two views of one array: the fragments visible in
 * the old one only (gone) and in the new one only (added). */
struct view_diff {
	struct tfs_fragment_info *old, *fresh; /* sorted by name */
	size_t old_num, fresh_num;
	const struct tfs_fragment_info **gone, **added;
	size_t gone_num, added_num;
};

static void view_diff_release(struct view_diff *v)
{
	tfs_free(v->old);
	tfs_free(v->fresh);
	tfs_free(v->gone);
	tfs_free(v->added);
}

static enum tfs_err view_diff(const struct tfs_array *old,
			      const struct tfs_array *fresh,
			      struct view_diff *v)
{
	size_t i = 0, k = 0;

	memset(v, 0, sizeof(*v));
	if (visible_sorted(old, &v->old, &v->old_num) ||
	    visible_sorted(fresh, &v->fresh, &v->fresh_num))
		return TFS_E_NOMEM;
	v->gone = tfs_callocn(v->old_num + 1, sizeof(*v->gone));
	v->added = tfs_callocn(v->fresh_num + 1, sizeof(*v->added));
	if (!v->gone || !v->added)
		return TFS_E_NOMEM;
	while (i < v->old_num || k < v->fresh_num) {
		int c = i == v->old_num	    ? 1
			: k == v->fresh_num ? -1
					    : info_cmp(&v->old[i], &v->fresh[k]);

		if (c < 0) {
			v->gone[v->gone_num++] = &v->old[i++];
		} else if (c > 0) {
			v->added[v->added_num++] = &v->fresh[k++];
		} else {
			i++;
			k++;
		}
	}
	return TFS_E_OK;
}

static bool same_name(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Whether fresh, opened at old's time after fragments of old vanished,
 * shows the cells that old showed. Every fragment new to the view must be
 * a consolidation of vanished ones holding nothing written after that
 * time (it ends by then, or keeps per-cell times that reads filter by),
 * and the cells of every vanished fragment must be in one of them: a
 * consolidation that merged them with later writes into a fragment
 * without per-cell times hides them at that time (format/consolidated.md
 * §5), and with the originals vacuumed they are gone. A write stamped
 * before that time but committed after old was opened, merged into a
 * consolidation, cannot be told from the rest here. */
static enum tfs_err same_view(const char *rel, const struct tfs_array *old,
			      const struct tfs_array *fresh,
			      const struct view_diff *v, struct tfs_diag *d)
{
	uint64_t t = tfs_array_timestamp(old);
	struct tfs_schema_info si_old, si_fresh;
	char when[32];

	tfsr_format_time(when, sizeof(when), t);
	tfs_schema_get_info(tfs_array_schema(old), &si_old);
	tfs_schema_get_info(tfs_array_schema(fresh), &si_fresh);
	if (!same_name(si_old.name, si_fresh.name))
		return tfs_fail(d, TFS_E_CORRUPT,
				"array '%s': fragments of the view of %s were "
				"vacuumed and its schema changed", rel, when);
	for (size_t i = 0; i < v->added_num; i++) {
		const struct tfs_fragment_info *c = v->added[i];
		bool holds = false;

		if (c->t2 > t && !c->cell_timestamps)
			return tfs_fail(d, TFS_E_CORRUPT,
					"array '%s': the view of %s cannot be "
					"read again: its fragments were vacuumed "
					"after a consolidation into '%s', which "
					"holds later writes too and no per-cell "
					"times", rel, when, c->name);
		for (size_t k = 0; !holds && k < v->gone_num; k++)
			holds = may_hold(c, v->gone[k]);
		if (!holds)
			return tfs_fail(d, TFS_E_CORRUPT,
					"array '%s': the view of %s cannot be "
					"read again: fragments were vacuumed, and "
					"'%s' was committed after the view was "
					"opened", rel, when, c->name);
	}
	for (size_t k = 0; k < v->gone_num; k++) {
		bool held = false;

		for (size_t i = 0; !held && i < v->added_num; i++)
			held = may_hold(v->added[i], v->gone[k]);
		if (!held)
			return tfs_fail(d, TFS_E_CORRUPT,
					"array '%s': the view of %s cannot be "
					"read again: fragment '%s' was vacuumed "
					"and no fragment there at that time holds "
					"its cells", rel, when, v->gone[k]->name);
	}
	return TFS_E_OK;
}

enum tfs_err tfsd_arrays_reopen(struct tfsd_arrays *c, const char *rel,
				struct tfsd_arr *arr, struct tfsd_arr **out,
				struct tfs_diag *d)
{
	struct tfsd_arr *fresh, *drop = NULL;
	struct view_diff v;
	struct entry *en;
	enum tfs_err e;

	*out = NULL;
	e = arr_open(c, rel, tfs_array_timestamp(arr->a), &fresh, d);
	if (e)
		return e;
	if (view_diff(arr->a, fresh->a, &v)) {
		e = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory", rel);
		goto out_free;
	}
	if (!v.gone_num)
		goto out_free; /* nothing vanished */
	e = same_view(rel, arr->a, fresh->a, &v, d);
	if (e)
		goto out_free;
	view_diff_release(&v);
	/* The same view: a current one stays current (0). */
	fresh->timestamp = arr->timestamp;
	pthread_mutex_lock(&c->lock);
	fresh->gen = ++c->next_gen;
	en = find(c, rel, arr->timestamp);
	if (en && en->arr == arr) {
		if (arr->timestamp) {
			/* A fixed time: the cache is never re-checked. */
			drop = en->arr;
			en->arr = fresh;
			fresh->refs++;
		} else {
			memset(en->stamp, 0, sizeof(en->stamp));
			en->checked_ms = 0;
		}
	}
	pthread_mutex_unlock(&c->lock);
	tfsd_arr_put(c, drop);
	tfs_log(TFS_LOG_DEBUG, "array '%s': opened again as of %" PRIu64
		" (fragments vacuumed)", rel, tfs_array_timestamp(arr->a));
	*out = fresh;
	return TFS_E_OK;
out_free:
	view_diff_release(&v);
	arr_free(fresh);
	return e;
}

/* ---- The kinds of folders ---------------------------------------------------- */

enum tfs_err tfsd_arrays_kind(struct tfsd_arrays *c, const char *src,
			      enum tfs_object *kind, struct tfs_diag *d)
{
	struct kind *k = &c->kinds[path_hash(src, 0) % KIND_ENTRIES];
	uint64_t now = now_ms(), gen;
	bool known = false;
	char *copy;
	enum tfs_err e;

	pthread_mutex_lock(&c->lock);
	if (k->src && k->gen == c->kind_gen &&
	    now - k->checked_ms < RECHECK_MS && !strcmp(k->src, src)) {
		*kind = k->kind;
		known = true;
	}
	gen = c->kind_gen;
	pthread_mutex_unlock(&c->lock);
	if (known)
		return TFS_E_OK;
	e = tfs_object_type(c->vfs, src, kind, d);
	/* A plain folder may become an array: asked every time, except
	 * SOURCE itself, which every lookup asks about first. */
	if (e || (*kind != TFS_OBJECT_ARRAY && *kind != TFS_OBJECT_GROUP &&
		  strcmp(src, c->cfg->source) != 0))
		return e;
	copy = tfs_strdup(src);
	if (!copy)
		return TFS_E_OK; /* known, not remembered */
	pthread_mutex_lock(&c->lock);
	tfs_free(k->src);
	k->src = copy;
	k->kind = *kind;
	k->gen = gen;
	k->checked_ms = now;
	pthread_mutex_unlock(&c->lock);
	return TFS_E_OK;
}
