/* What every open version of an array shares of one fragment: its small
 * metadata file kept whole and what is loaded from it on demand (tile
 * lists, R-tree, statistics, delete conditions). A fragment's folder is
 * written once and never changed, so an array reopened after each commit
 * of a growing array would otherwise load and count the same lists again
 * for every version a reader still holds.
 *
 * Entries live in one registry per process, found by storage, folder,
 * array key and the fragment's footer (serialized): two fragments share
 * only when they describe the same bytes, so a folder replaced under the
 * same name is never read through another's lists. */
#include "fragment_load_internal.h"

#define BUCKETS 4096

static struct {
	pthread_mutex_t lock;
	struct tfs__frag_shared *buckets[BUCKETS];
} registry = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

/* What tells the fragment's bytes apart: its key and serialized footer.
 * False when the footer cannot be serialized (empty fragments, versions
 * 1–2): such a fragment keeps its own entry. */
static bool identity_of(const struct tfs_arraydir *a,
			const struct tfs_fragment *f, struct tfs_buf *out)
{
	tfs_buf_init(out, TFS_BUF_NO_MAX);
	if (f->legacy || f->footer.empty)
		return false;
	if (tfs_buf_append_u8(out, a->has_key) ||
	    (a->has_key && tfs_buf_append(out, a->key, sizeof(a->key))) ||
	    tfs_buf_append_u64(out, f->meta_size) ||
	    tfs_footer_serialize(out, &f->footer, f->schema)) {
		tfs_buf_release(out);
		return false;
	}
	return true;
}

static bool same(const struct tfs__frag_shared *z, uint64_t hash,
		 const struct tfs_vfs *vfs, const char *dir,
		 const struct tfs_buf *id)
{
	return z->hash == hash && z->vfs == vfs && z->id_len == id->len &&
	       strcmp(z->dir, dir) == 0 &&
	       memcmp(z->id, id->data, id->len) == 0;
}

static struct tfs__frag_shared *entry_new(const struct tfs_fragment *f,
					  uint8_t *meta_bytes)
{
	struct tfs__frag_shared *z = tfs_callocn(1, sizeof(*z));
	uint32_t n = f->footer.slot_num ? f->footer.slot_num : 1;

	if (!z)
		return NULL;
	z->slot_num = f->footer.slot_num;
	z->slots = tfs_callocn(n, sizeof(*z->slots));
	z->slot_loaded = tfs_callocn(n, sizeof(*z->slot_loaded));
	if (!z->slots || !z->slot_loaded ||
	    pthread_mutex_init(&z->lock, NULL) != 0) {
		tfs_free(z->slots);
		tfs_free(z->slot_loaded);
		tfs_free(z);
		return NULL;
	}
	atomic_init(&z->refs, 1);
	z->meta_bytes = meta_bytes;
	return z;
}

static void entry_free(struct tfs__frag_shared *z)
{
	for (uint32_t i = 0; i < z->slot_num; i++) {
		tfs_free(z->slots[i].offsets);
		tfs_free(z->slots[i].var_offsets);
		tfs_free(z->slots[i].var_sizes);
		tfs_free(z->slots[i].validity_offsets);
	}
	tfs_free(z->slots);
	tfs_free(z->slot_loaded);
	if (z->stats) {
		for (uint32_t i = 0; i < z->slot_num; i++) {
			tfs_free(z->stats[i].mins);
			tfs_free(z->stats[i].maxes);
			tfs_free(z->stats[i].sums);
			tfs_free(z->stats[i].null_counts);
		}
	}
	tfs_free(z->stats);
	tfs_free(z->stats_loaded);
	if (z->rtree_loaded)
		tfs_rtree_release(&z->rtree);
	if (z->processed_loaded)
		tfs_strlist_release(&z->processed_conditions);
	tfs_mem_uncharge(tfs_mem_global(), atomic_load(&z->mem_counted));
	pthread_mutex_destroy(&z->lock);
	tfs_free(z->meta_bytes);
	tfs_free(z->id);
	tfs_free(z->dir);
	tfs_free(z);
}

/* Metadata of arrays of many tiles weighs as much as their cells (an
 * R-tree leaf and its offsets per tile): counting it makes cached tiles
 * give way to it. Called with z->lock released. */
void tfs__frag_shared_count(struct tfs__frag_shared *z, uint64_t bytes)
{
	if (!bytes)
		return;
	atomic_fetch_add(&z->mem_counted, bytes);
	tfs_mem_charge_held(tfs_mem_global(), bytes);
}

enum tfs_err tfs__frag_share(const struct tfs_arraydir *a,
			     struct tfs_fragment *f, uint8_t *meta_bytes,
			     struct tfs_diag *d)
{
	struct tfs__frag_shared *z, **head;
	struct tfs_buf id;
	uint64_t hash, kept = meta_bytes ? f->meta_size : 0;

	if (!identity_of(a, f, &id)) {
		/* Not shareable: an entry of its own. */
		f->shared = entry_new(f, meta_bytes);
		if (!f->shared) {
			tfs_free(meta_bytes);
			return tfs_fail(d, TFS_E_NOMEM,
					"fragment '%s': out of memory",
					f->name);
		}
		tfs__frag_shared_count(f->shared, kept);
		return TFS_E_OK;
	}
	hash = fnv1a(fnv1a(UINT64_C(0xcbf29ce484222325), f->dir,
			   strlen(f->dir)),
		     id.data, id.len);
	head = &registry.buckets[hash % BUCKETS];
	pthread_mutex_lock(&registry.lock);
	for (z = *head; z && !same(z, hash, a->vfs, f->dir, &id); z = z->next)
		;
	if (z) {
		atomic_fetch_add(&z->refs, 1);
		pthread_mutex_unlock(&registry.lock);
		tfs_buf_release(&id);
		tfs_free(meta_bytes);
		f->shared = z;
		return TFS_E_OK;
	}
	z = entry_new(f, meta_bytes);
	if (z && !(z->dir = tfs_strdup(f->dir))) {
		z->meta_bytes = NULL;
		entry_free(z);
		z = NULL;
	}
	if (!z) {
		pthread_mutex_unlock(&registry.lock);
		tfs_buf_release(&id);
		tfs_free(meta_bytes);
		return tfs_fail(d, TFS_E_NOMEM, "fragment '%s': out of memory",
				f->name);
	}
	z->registered = true;
	z->hash = hash;
	z->vfs = a->vfs;
	z->id_len = id.len;
	z->id = id.data; /* the buffer's bytes move into the entry */
	z->next = *head;
	*head = z;
	pthread_mutex_unlock(&registry.lock);
	f->shared = z;
	tfs__frag_shared_count(z,
			       kept + z->id_len + strlen(z->dir) + sizeof(*z));
	return TFS_E_OK;
}

void tfs__frag_shared_put(struct tfs__frag_shared *z)
{
	if (!z)
		return;
	if (z->registered) {
		struct tfs__frag_shared **p =
			&registry.buckets[z->hash % BUCKETS];

		pthread_mutex_lock(&registry.lock);
		if (atomic_fetch_sub(&z->refs, 1) != 1) {
			pthread_mutex_unlock(&registry.lock);
			return;
		}
		while (*p != z)
			p = &(*p)->next;
		*p = z->next;
		pthread_mutex_unlock(&registry.lock);
	} else if (atomic_fetch_sub(&z->refs, 1) != 1) {
		return;
	}
	entry_free(z);
}

uint64_t tfs_fragment_memory_alone(const struct tfs_fragment *f)
{
	const struct tfs__frag_shared *z = f->shared;

	return z && atomic_load(&z->refs) == 1 ? atomic_load(&z->mem_counted)
					       : 0;
}
