/* The inode table (inode_table.h): a hash of inodes by path, chained, under
 * one lock. An inode lives while the kernel holds lookups of it; a forget
 * of more lookups than were given is a bug of the count and is reported,
 * never clamped silently. Paths an inode had before a rename are kept to
 * the end, since handlers read an inode's path without the lock. */
#include "inode_table.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_log.h"

struct tfsd_itable {
	pthread_mutex_t lock;
	size_t mask;                 /* buckets - 1 */
	struct tfsd_inode **buckets; /* protected by lock */
	size_t count;                /* protected by lock */
	struct tfsd_inode root;
	/* Paths inodes had before a move; protected by lock. */
	char **retired;
	size_t retired_num, retired_cap;
};

static size_t path_hash(const struct tfsd_itable *t, const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return (size_t)h & t->mask;
}

enum tfs_err tfsd_itable_new(unsigned bucket_bits, struct tfsd_itable **out)
{
	struct tfsd_itable *t;

	*out = NULL;
	if (bucket_bits < 1 || bucket_bits > 24)
		return TFS_E_INVALID;
	t = tfs_callocn(1, sizeof(*t));
	if (!t)
		return TFS_E_NOMEM;
	t->mask = ((size_t)1 << bucket_bits) - 1;
	t->buckets = tfs_callocn(t->mask + 1, sizeof(*t->buckets));
	if (!t->buckets) {
		tfs_free(t);
		return TFS_E_NOMEM;
	}
	if (pthread_mutex_init(&t->lock, NULL) != 0) {
		tfs_free(t->buckets);
		tfs_free(t);
		return TFS_E_NOMEM;
	}
	t->root.vpath = (char *)"";
	*out = t;
	return TFS_E_OK;
}

void tfsd_itable_free(struct tfsd_itable *t)
{
	if (!t)
		return;
	for (size_t h = 0; h <= t->mask; h++) {
		struct tfsd_inode *in = t->buckets[h];

		while (in) {
			struct tfsd_inode *next = in->next;

			tfs_free(in->vpath);
			tfs_free(in);
			in = next;
		}
	}
	for (size_t i = 0; i < t->retired_num; i++)
		tfs_free(t->retired[i]);
	tfs_free(t->retired);
	tfs_free(t->buckets);
	pthread_mutex_destroy(&t->lock);
	tfs_free(t);
}

struct tfsd_inode *tfsd_itable_root(struct tfsd_itable *t)
{
	return &t->root;
}

/* The inode of (vpath, version) in its chain; caller holds the lock. */
static struct tfsd_inode *find_locked(struct tfsd_itable *t,
				      const char *vpath, uint64_t version)
{
	struct tfsd_inode *in;

	for (in = t->buckets[path_hash(t, vpath)]; in; in = in->next)
		if (in->version == version && strcmp(in->vpath, vpath) == 0)
			break;
	return in;
}

struct tfsd_inode *tfsd_inode_ref(struct tfsd_itable *t, const char *vpath,
				  uint64_t version)
{
	struct tfsd_inode *in, *fresh;
	char *copy;

	if (!*vpath)
		return &t->root;
	/* Allocated outside the lock, dropped if another thread won. */
	fresh = tfs_callocn(1, sizeof(*fresh));
	copy = tfs_strdup(vpath);
	pthread_mutex_lock(&t->lock);
	in = find_locked(t, vpath, version);
	if (!in && fresh && copy) {
		size_t h = path_hash(t, vpath);

		in = fresh;
		in->vpath = copy;
		in->version = version;
		in->next = t->buckets[h];
		t->buckets[h] = in;
		t->count++;
		fresh = NULL;
		copy = NULL;
	}
	if (in)
		in->nlookup++;
	pthread_mutex_unlock(&t->lock);
	tfs_free(fresh);
	tfs_free(copy);
	return in;
}

/* Takes in out of its chain; caller holds the lock. */
static void unlink_locked(struct tfsd_itable *t, struct tfsd_inode *in)
{
	for (struct tfsd_inode **pp = &t->buckets[path_hash(t, in->vpath)];
	     *pp; pp = &(*pp)->next) {
		if (*pp == in) {
			*pp = in->next;
			t->count--;
			return;
		}
	}
}

enum tfs_err tfsd_inode_unref(struct tfsd_itable *t, struct tfsd_inode *in,
			      uint64_t n)
{
	enum tfs_err e = TFS_E_OK;
	bool gone = false;

	if (in == &t->root)
		return TFS_E_OK;
	pthread_mutex_lock(&t->lock);
	if (n > in->nlookup) {
		tfs_log(TFS_LOG_ERROR,
			"inode '/%s': forget of %" PRIu64 " lookups, it has %" PRIu64,
			in->vpath, n, in->nlookup);
		assert(!"lookup count underflow");
		e = TFS_E_INTERNAL;
		n = in->nlookup;
	}
	in->nlookup -= n;
	if (in->nlookup == 0) {
		unlink_locked(t, in);
		gone = true;
	}
	pthread_mutex_unlock(&t->lock);
	if (gone) {
		tfs_free(in->vpath);
		tfs_free(in);
	}
	return e;
}

uint64_t tfsd_inode_lookups(struct tfsd_itable *t, const struct tfsd_inode *in)
{
	uint64_t v;

	pthread_mutex_lock(&t->lock);
	v = in->nlookup;
	pthread_mutex_unlock(&t->lock);
	return v;
}

size_t tfsd_itable_count(struct tfsd_itable *t)
{
	size_t v;

	pthread_mutex_lock(&t->lock);
	v = t->count;
	pthread_mutex_unlock(&t->lock);
	return v;
}

struct tfsd_inode *tfsd_itable_find(struct tfsd_itable *t, const char *vpath,
				    uint64_t version)
{
	struct tfsd_inode *in;

	if (!*vpath)
		return &t->root;
	pthread_mutex_lock(&t->lock);
	in = find_locked(t, vpath, version);
	pthread_mutex_unlock(&t->lock);
	return in;
}

void tfsd_itable_move(struct tfsd_itable *t, const char *from,
		      const char *vpath)
{
	char *copy = tfs_strdup(vpath);
	struct tfsd_inode *in;

	if (!copy || !*from || !*vpath) {
		tfs_free(copy);
		return;
	}
	pthread_mutex_lock(&t->lock);
	if (tfs_grow(&t->retired, &t->retired_cap, t->retired_num + 1,
		     sizeof(*t->retired)))
		goto out_unlock;
	in = find_locked(t, from, 0);
	if (in) {
		size_t h = path_hash(t, vpath);

		unlink_locked(t, in);
		t->retired[t->retired_num++] = in->vpath;
		in->vpath = copy;
		copy = NULL;
		in->next = t->buckets[h];
		t->buckets[h] = in;
		t->count++;
	}
out_unlock:
	pthread_mutex_unlock(&t->lock);
	tfs_free(copy);
}

/* Whether vp is prefix or a path under it. */
static bool at_or_under(const char *vp, const char *prefix, size_t plen)
{
	return plen == 0 || (strncmp(vp, prefix, plen) == 0 &&
			     (vp[plen] == '\0' || vp[plen] == '/'));
}

enum tfs_err tfsd_itable_under(struct tfsd_itable *t, const char *prefix,
			       struct tfsd_inode ***inodes, size_t *n,
			       struct tfs_buf *names)
{
	size_t plen = strlen(prefix), cap = 0;
	struct tfsd_inode **v = NULL;
	enum tfs_err e = TFS_E_OK;

	*n = 0;
	pthread_mutex_lock(&t->lock);
	for (size_t h = 0; h <= t->mask && !e; h++) {
		for (struct tfsd_inode *in = t->buckets[h]; in; in = in->next) {
			if (!at_or_under(in->vpath, prefix, plen))
				continue;
			e = tfs_grow(&v, &cap, *n + 1, sizeof(*v));
			if (!e && tfs_buf_append(names, in->vpath,
						 strlen(in->vpath) + 1))
				e = TFS_E_NOMEM;
			if (e)
				break;
			v[(*n)++] = in;
		}
	}
	pthread_mutex_unlock(&t->lock);
	*inodes = v;
	return e;
}
