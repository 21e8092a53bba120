/* The render cache: files rendered whole (documents, small selections,
 * pictures) and the exact sizes and indexes of streamed files, per array
 * version, within a byte budget and a number of entries, the least
 * recently used going first. */
#include "render_cache.h"

#include <string.h>

#include "tfs_alloc.h"

/* Rendered files kept by the render cache. */
#define RENDER_ENTRIES 128
#define RENDER_MAX_FILE ((size_t)16 << 20)
/* Sizes (and text indexes) of streamed files remembered. */
#define SIZE_ENTRIES 1024

/* The exact size of a streamed file of one array version, and its
 * index (marks by cell, ascending; none when not seekable). */
struct sized {
	uint64_t gen;
	char *vpath;
	uint64_t size;
	struct tfsr_mark *marks;
	size_t mark_num;
	uint64_t used;
};

/* ---- The render cache ---------------------------------------------------- */

struct render {
	uint64_t gen; /* the array version (0: not an array document) */
	char *vpath;
	uint8_t *data; /* NULL: only the size is known */
	uint64_t size;
	uint64_t used;
};

struct tfsd_renders {
	pthread_mutex_t lock;
	uint64_t budget;
	uint64_t bytes;                        /* protected by lock */
	uint64_t clock;                        /* protected by lock */
	struct render entries[RENDER_ENTRIES]; /* protected by lock */
	struct sized sizes[SIZE_ENTRIES];      /* protected by lock */
};

enum tfs_err tfsd_renders_new(uint64_t budget, struct tfsd_renders **out)
{
	struct tfsd_renders *r = tfs_callocn(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return TFS_E_NOMEM;
	pthread_mutex_init(&r->lock, NULL);
	r->budget = budget;
	*out = r;
	return TFS_E_OK;
}

static void render_clear(struct render *en)
{
	tfs_free(en->vpath);
	tfs_free(en->data);
	memset(en, 0, sizeof(*en));
}

static void sized_clear(struct sized *z)
{
	tfs_free(z->vpath);
	tfs_free(z->marks);
	memset(z, 0, sizeof(*z));
}

void tfsd_renders_free(struct tfsd_renders *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < RENDER_ENTRIES; i++)
		render_clear(&r->entries[i]);
	for (size_t i = 0; i < SIZE_ENTRIES; i++)
		sized_clear(&r->sizes[i]);
	pthread_mutex_destroy(&r->lock);
	tfs_free(r);
}

/* A copy of a cached rendering (data may be NULL: size only). */
bool tfsd_renders_find(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		       uint8_t **data, uint64_t *size)
{
	bool found = false;

	*data = NULL;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < RENDER_ENTRIES; i++) {
		struct render *en = &r->entries[i];

		if (!en->vpath || en->gen != gen || strcmp(en->vpath, vpath))
			continue;
		en->used = ++r->clock;
		*size = en->size;
		if (en->data) {
			*data = tfs_malloc(en->size ? en->size : 1);
			if (*data)
				memcpy(*data, en->data, en->size);
		}
		found = !en->data || *data;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}

/* Remembers a rendering (data NULL: only its size); takes a copy. */
void tfsd_renders_put(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		      const uint8_t *data, uint64_t size)
{
	struct render fresh = {.gen = gen, .size = size};
	struct render old[RENDER_ENTRIES];
	size_t old_num = 0;

	if (data && size > RENDER_MAX_FILE)
		data = NULL;
	fresh.vpath = tfs_strdup(vpath);
	if (data)
		fresh.data = tfs_malloc(size ? size : 1);
	if (!fresh.vpath || (data && !fresh.data)) {
		render_clear(&fresh);
		return;
	}
	if (data)
		memcpy(fresh.data, data, size);
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < RENDER_ENTRIES; i++) {
		struct render *en = &r->entries[i];

		if (en->vpath && en->gen == gen && !strcmp(en->vpath, vpath)) {
			r->bytes -= en->data ? en->size : 0;
			old[old_num++] = *en;
			memset(en, 0, sizeof(*en));
		}
	}
	r->bytes += fresh.data ? size : 0;
	for (;;) {
		size_t lru = RENDER_ENTRIES, empty = RENDER_ENTRIES;

		for (size_t i = 0; i < RENDER_ENTRIES; i++) {
			if (!r->entries[i].vpath) {
				empty = i;
				continue;
			}
			if (lru == RENDER_ENTRIES ||
			    r->entries[i].used < r->entries[lru].used)
				lru = i;
		}
		if (empty < RENDER_ENTRIES && r->bytes <= r->budget) {
			fresh.used = ++r->clock;
			r->entries[empty] = fresh;
			break;
		}
		if (lru == RENDER_ENTRIES) { /* over budget on its own */
			r->bytes -= fresh.data ? size : 0;
			old[old_num++] = fresh;
			break;
		}
		r->bytes -= r->entries[lru].data ? r->entries[lru].size : 0;
		old[old_num++] = r->entries[lru];
		memset(&r->entries[lru], 0, sizeof(r->entries[lru]));
	}
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < old_num; i++)
		render_clear(&old[i]);
}

/* ---- Sizes and indexes of streamed files -------------------------------- */

static struct sized *sizes_at(struct tfsd_renders *r, uint64_t gen,
			      const char *vpath)
{
	for (size_t i = 0; i < SIZE_ENTRIES; i++) {
		struct sized *z = &r->sizes[i];

		if (z->vpath && z->gen == gen && !strcmp(z->vpath, vpath))
			return z;
	}
	return NULL;
}

/* The remembered size of a streamed file. */
bool tfsd_sizes_find(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		     uint64_t *size)
{
	struct sized *z;

	pthread_mutex_lock(&r->lock);
	z = sizes_at(r, gen, vpath);
	if (z) {
		z->used = ++r->clock;
		*size = z->size;
	}
	pthread_mutex_unlock(&r->lock);
	return z != NULL;
}

/* The last mark of the file's index at or before offset off. */
bool tfsd_sizes_mark(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		     uint64_t off, struct tfsr_mark *out)
{
	struct sized *z;
	bool found = false;

	pthread_mutex_lock(&r->lock);
	z = sizes_at(r, gen, vpath);
	if (z && z->mark_num && z->marks[0].off <= off) {
		size_t lo = 0, hi = z->mark_num; /* marks[lo].off <= off */

		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (z->marks[mid].off <= off)
				lo = mid;
			else
				hi = mid;
		}
		*out = z->marks[lo];
		found = true;
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}

/* A copy of the index of a streamed file (*marks, which the caller
 * takes) and its size; false when none is remembered. */
bool tfsd_sizes_copy(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		     struct tfsr_mark **marks, size_t *mark_num, uint64_t *size)
{
	struct sized *z;
	bool found = false;

	*marks = NULL;
	*mark_num = 0;
	pthread_mutex_lock(&r->lock);
	z = sizes_at(r, gen, vpath);
	if (z && z->mark_num) {
		*marks = tfs_callocn(z->mark_num, sizeof(**marks));
		if (*marks) {
			memcpy(*marks, z->marks, z->mark_num * sizeof(**marks));
			*mark_num = z->mark_num;
			*size = z->size;
			found = true;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}

/* Remembers a streamed file's size and index (which it takes). */
void tfsd_sizes_put(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		    uint64_t size, struct tfsr_mark *marks, size_t mark_num)
{
	struct sized fresh = {.gen = gen,
			      .size = size,
			      .marks = marks,
			      .mark_num = mark_num};
	struct sized old;
	size_t slot = SIZE_ENTRIES, empty = SIZE_ENTRIES, lru = 0;

	fresh.vpath = tfs_strdup(vpath);
	if (!fresh.vpath) {
		sized_clear(&fresh);
		return;
	}
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < SIZE_ENTRIES; i++) {
		struct sized *z = &r->sizes[i];

		if (z->vpath && z->gen == gen && !strcmp(z->vpath, vpath)) {
			slot = i;
			break;
		}
		if (!z->vpath && empty == SIZE_ENTRIES)
			empty = i;
		else if (z->vpath && z->used < r->sizes[lru].used)
			lru = i;
	}
	if (slot == SIZE_ENTRIES)
		slot = empty < SIZE_ENTRIES ? empty : lru;
	old = r->sizes[slot];
	fresh.used = ++r->clock;
	r->sizes[slot] = fresh;
	pthread_mutex_unlock(&r->lock);
	sized_clear(&old);
}
