/* The decoded-tile cache: decoded tiles of any number of arrays under one
 * byte budget, least recently used out first.
 *
 * A tile is named by its array folder, fragment, slot and tile number;
 * fragments never change once committed, so a cached tile never goes
 * stale. Readers share the cached buffers read-only, each holding a
 * reference; an evicted tile is freed when its last reader lets go. A
 * tile that one thread is decoding is waited for by the others instead of
 * being decoded twice, which is what makes read-ahead on another thread
 * pay off.
 *
 * The decoded buffers are counted in the memory accountant (tfs_mem.h)
 * from their decoding to their freeing, and the rest of what an entry
 * costs (the entry, its name, the allocator's rounding: more than the
 * cells in tiles of a few cells) from its caching; the cache is one of
 * its reclaimers: a charge that does not fit evicts tiles no reader
 * holds. */
#include "tfs_read.h"

#include <string.h>

#include "tfs_alloc.h"
#include "tfs_mem.h"

/* Buckets of the table at first; it doubles whenever it holds twice as
 * many entries as buckets (arrays of tiles of a few cells fill the cache
 * with hundreds of thousands). */
#define BUCKETS_MIN 4096

struct tfs_cached_tile {
	struct tfs_tile_cache *cache;
	char *name; /* "<array folder>/<fragment name>" */
	uint64_t hash;
	uint32_t slot;
	uint64_t tile_no;
	bool ready;   /* false: being decoded by someone */
	bool in_table;
	int refs;     /* readers holding the tile */
	struct tfs_tile tile;
	uint64_t bytes;
	/* What the entry costs past tile.charged (itself, its name, the
	 * allocator's rounding), counted in the accountant while ready. */
	uint64_t extra;
	struct tfs_cached_tile *next_in_bucket;
	struct tfs_cached_tile *lru_prev, *lru_next; /* ready entries in the table */
};

struct tfs_tile_cache {
	pthread_mutex_t lock;
	pthread_cond_t decoded;
	uint64_t budget;
	uint64_t bytes; /* of ready entries in the table */
	struct tfs_cached_tile **buckets; /* bucket_num, counted while held */
	size_t bucket_num;
	size_t entry_num; /* in the table */
	struct tfs_cached_tile lru; /* sentinel: lru.lru_next is the most recent */
	struct tfs_tile_cache_stats stats;
};

static uint64_t reclaim(void *ctx, uint64_t want);

enum tfs_err tfs_tile_cache_new(uint64_t budget, struct tfs_tile_cache **out)
{
	struct tfs_tile_cache *c = tfs_callocn(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return TFS_E_NOMEM;
	if (tfs_mem_reclaimer_add(tfs_mem_global(), reclaim, c)) {
		tfs_free(c);
		return TFS_E_NOMEM;
	}
	c->buckets = tfs_callocn(BUCKETS_MIN, sizeof(*c->buckets));
	if (!c->buckets) {
		tfs_mem_reclaimer_remove(tfs_mem_global(), reclaim, c);
		tfs_free(c);
		return TFS_E_NOMEM;
	}
	c->bucket_num = BUCKETS_MIN;
	tfs_mem_force_charge(tfs_mem_global(),
			     BUCKETS_MIN * sizeof(*c->buckets));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->decoded, NULL);
	c->budget = budget;
	c->lru.lru_next = c->lru.lru_prev = &c->lru;
	*out = c;
	return TFS_E_OK;
}

static void entry_free(struct tfs_cached_tile *en)
{
	tfs_mem_uncharge(tfs_mem_global(), en->extra);
	en->tile.shared = NULL; /* the buffers are the entry's own */
	tfs__tile_free_buffers(&en->tile);
	tfs_free(en->name);
	tfs_free(en);
}

void tfs_tile_cache_free(struct tfs_tile_cache *c)
{
	if (!c)
		return;
	tfs_mem_reclaimer_remove(tfs_mem_global(), reclaim, c);
	for (size_t b = 0; b < c->bucket_num; b++) {
		while (c->buckets[b]) {
			struct tfs_cached_tile *en = c->buckets[b];

			c->buckets[b] = en->next_in_bucket;
			entry_free(en);
		}
	}
	tfs_mem_uncharge(tfs_mem_global(), c->bucket_num * sizeof(*c->buckets));
	tfs_free(c->buckets);
	pthread_cond_destroy(&c->decoded);
	pthread_mutex_destroy(&c->lock);
	tfs_free(c);
}

void tfs_tile_cache_get_stats(struct tfs_tile_cache *c,
			      struct tfs_tile_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	out->bytes = c->bytes;
	pthread_mutex_unlock(&c->lock);
}

static uint64_t hash_of(const char *dir, const char *frag, uint32_t slot,
			uint64_t tile)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (const char *p = dir; *p; p++)
		h = (h ^ (uint8_t)*p) * UINT64_C(1099511628211);
	h = (h ^ '/') * UINT64_C(1099511628211);
	for (const char *p = frag; *p; p++)
		h = (h ^ (uint8_t)*p) * UINT64_C(1099511628211);
	h ^= ((uint64_t)slot << 40) ^ tile;
	h *= UINT64_C(0x9e3779b97f4a7c15);
	return h ^ (h >> 29);
}

static bool entry_is(const struct tfs_cached_tile *en, uint64_t hash, const char *dir,
		     const char *frag, uint32_t slot, uint64_t tile)
{
	size_t dl = strlen(dir);

	return en->hash == hash && en->slot == slot && en->tile_no == tile &&
	       strncmp(en->name, dir, dl) == 0 && en->name[dl] == '/' &&
	       strcmp(en->name + dl + 1, frag) == 0;
}

/* What a heap block of n bytes takes (a header and 16-byte rounding):
 * an array of tiles of a few cells holds hundreds of thousands of
 * entries, where the rounding and the entries themselves weigh more than
 * the cells. */
static uint64_t block_bytes(uint64_t n)
{
	if (!n)
		return 0;
	n += 8;
	return n < 32 ? 32 : (n + 15) & ~(uint64_t)15;
}

/* What entry en holding t costs: the entry, its name and the buffers. */
static uint64_t tile_bytes(const struct tfs_cached_tile *en,
			   const struct tfs_tile *t)
{
	return block_bytes(sizeof(*en)) + block_bytes(strlen(en->name) + 1) +
	       block_bytes(t->fixed_len) + block_bytes(t->var_len) +
	       block_bytes(t->offsets ? (t->cell_num + 1) * 8 : 0) +
	       block_bytes(t->validity ? t->cell_num : 0);
}

static void lru_unlink(struct tfs_cached_tile *en)
{
	en->lru_prev->lru_next = en->lru_next;
	en->lru_next->lru_prev = en->lru_prev;
	en->lru_prev = en->lru_next = NULL;
}

static void lru_push_front(struct tfs_tile_cache *c, struct tfs_cached_tile *en)
{
	en->lru_next = c->lru.lru_next;
	en->lru_prev = &c->lru;
	c->lru.lru_next->lru_prev = en;
	c->lru.lru_next = en;
}

/* Takes en out of the table (the caller holds the lock); frees it unless
 * a copy is in progress, whose end frees it. */
static void table_remove(struct tfs_tile_cache *c, struct tfs_cached_tile *en)
{
	struct tfs_cached_tile **pp = &c->buckets[en->hash % c->bucket_num];

	while (*pp != en)
		pp = &(*pp)->next_in_bucket;
	*pp = en->next_in_bucket;
	en->in_table = false;
	c->entry_num--;
	if (en->ready) {
		lru_unlink(en);
		c->bytes -= en->bytes;
	}
	if (en->refs == 0)
		entry_free(en);
}

/* Puts en in the table, doubling it first when it is twice as full as it
 * has buckets (the caller holds the lock; if the larger table cannot be
 * had, chains grow instead). Returns whether the table grew (its bytes
 * were forced into the accountant). */
static bool table_insert(struct tfs_tile_cache *c, struct tfs_cached_tile *en)
{
	bool grew = false;
	struct tfs_cached_tile **b;

	if (c->entry_num >= 2 * c->bucket_num &&
	    c->bucket_num <= SIZE_MAX / 2 / sizeof(*b) &&
	    (b = tfs_callocn(2 * c->bucket_num, sizeof(*b)))) {
		for (size_t i = 0; i < c->bucket_num; i++) {
			while (c->buckets[i]) {
				struct tfs_cached_tile *x = c->buckets[i];

				c->buckets[i] = x->next_in_bucket;
				x->next_in_bucket = b[x->hash % (2 * c->bucket_num)];
				b[x->hash % (2 * c->bucket_num)] = x;
			}
		}
		tfs_free(c->buckets);
		c->buckets = b;
		tfs_mem_force_charge(tfs_mem_global(),
				     c->bucket_num * sizeof(*b));
		c->bucket_num *= 2;
		grew = true;
	}
	en->next_in_bucket = c->buckets[en->hash % c->bucket_num];
	c->buckets[en->hash % c->bucket_num] = en;
	en->in_table = true;
	c->entry_num++;
	return grew;
}

static void evict_to_budget(struct tfs_tile_cache *c)
{
	while (c->bytes > c->budget && c->lru.lru_prev != &c->lru)
		table_remove(c, c->lru.lru_prev);
}

/* The accountant asks for room: tiles no reader holds go, least recently
 * used first, until `want` bytes are freed. */
static uint64_t reclaim(void *ctx, uint64_t want)
{
	struct tfs_tile_cache *c = ctx;
	struct tfs_cached_tile *en, *prev;
	uint64_t freed = 0;

	pthread_mutex_lock(&c->lock);
	for (en = c->lru.lru_prev; en != &c->lru && freed < want; en = prev) {
		prev = en->lru_prev;
		if (en->refs)
			continue;
		freed += en->tile.charged + en->extra;
		table_remove(c, en);
	}
	pthread_mutex_unlock(&c->lock);
	return freed;
}

void tfs_tile_release(struct tfs_tile *t)
{
	if (t->shared) {
		tfs_cached_tile_put(t->shared);
		memset(t, 0, sizeof(*t));
		return;
	}
	tfs__tile_free_buffers(t);
}

void tfs_cached_tile_put(struct tfs_cached_tile *en)
{
	struct tfs_tile_cache *c = en->cache;
	bool gone;

	pthread_mutex_lock(&c->lock);
	gone = --en->refs == 0 && !en->in_table;
	pthread_mutex_unlock(&c->lock);
	if (gone)
		entry_free(en);
}

enum tfs_err tfs_tile_read_cached(struct tfs_arraydir *a, struct tfs_fragment *f,
				  uint32_t slot, uint64_t tile,
				  struct tfs_tile *out, struct tfs_diag *d)
{
	struct tfs_tile_cache *c = a->cache;
	uint64_t h;
	struct tfs_cached_tile *en, *mine;
	bool grew, forced = false;
	enum tfs_err e;

	if (!c || c->budget == 0)
		return tfs_tile_read(a, f, slot, tile, out, d);
	h = hash_of(a->path, f->name, slot, tile);
	pthread_mutex_lock(&c->lock);
	for (;;) {
		for (en = c->buckets[h % c->bucket_num]; en;
		     en = en->next_in_bucket)
			if (entry_is(en, h, a->path, f->name, slot, tile))
				break;
		if (!en || en->ready)
			break;
		c->stats.waits++;
		pthread_cond_wait(&c->decoded, &c->lock);
	}
	if (en) {
		c->stats.hits++;
		en->refs++;
		lru_unlink(en);
		lru_push_front(c, en);
		pthread_mutex_unlock(&c->lock);
		*out = en->tile;
		out->shared = en;
		return TFS_E_OK;
	}
	/* Not there: announce that this thread decodes it. */
	c->stats.misses++;
	mine = tfs_callocn(1, sizeof(*mine));
	if (mine)
		mine->name = tfs_callocn(strlen(a->path) + strlen(f->name) + 2, 1);
	if (!mine || !mine->name) {
		pthread_mutex_unlock(&c->lock);
		if (mine)
			tfs_free(mine);
		return tfs_tile_read(a, f, slot, tile, out, d);
	}
	memcpy(mine->name, a->path, strlen(a->path));
	mine->name[strlen(a->path)] = '/';
	memcpy(mine->name + strlen(a->path) + 1, f->name, strlen(f->name));
	mine->cache = c;
	mine->hash = h;
	mine->slot = slot;
	mine->tile_no = tile;
	grew = table_insert(c, mine);
	pthread_mutex_unlock(&c->lock);
	if (grew)
		tfs_mem_rebalance(tfs_mem_global());

	e = tfs_tile_read(a, f, slot, tile, out, d);
	pthread_mutex_lock(&c->lock);
	mine->bytes = e ? 0 : tile_bytes(mine, out);
	if (e || mine->bytes > c->budget) {
		table_remove(c, mine); /* waiters decode it themselves */
	} else {
		/* The entry takes the buffers; the caller shares them. */
		if (mine->bytes > out->charged) {
			mine->extra = mine->bytes - out->charged;
			tfs_mem_force_charge(tfs_mem_global(), mine->extra);
			forced = true;
		}
		mine->tile = *out;
		mine->ready = true;
		mine->refs = 1;
		out->shared = mine;
		lru_push_front(c, mine);
		c->bytes += mine->bytes;
		evict_to_budget(c);
	}
	pthread_cond_broadcast(&c->decoded);
	pthread_mutex_unlock(&c->lock);
	if (forced)
		tfs_mem_rebalance(tfs_mem_global());
	return e;
}
