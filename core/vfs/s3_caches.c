/* What the S3 backend remembers: folders made by mkdir, objects that
 * never change, recent stat answers (vfs_s3.c has the design). */
#include "s3_backend.h"

/* ---- Folders made by mkdir -------------------------------------------- */

bool tfs__s3_dirs_has_locked(struct s3 *s, const char *key, size_t *at)
{
	for (size_t i = 0; i < s->ndirs; i++)
		if (!strcmp(s->dirs[i], key)) {
			if (at)
				*at = i;
			return true;
		}
	return false;
}

/* Adds *key (taken on success: *key becomes NULL) to the folders this
 * process knows; s->lock held. */
enum tfs_err tfs__s3_dirs_add_locked(struct s3 *s, char **key)
{
	enum tfs_err e = tfs_grow(&s->dirs, &s->dirs_cap, s->ndirs + 1,
				  sizeof(*s->dirs));

	if (e)
		return e;
	s->dirs[s->ndirs++] = *key;
	*key = NULL;
	return TFS_E_OK;
}

/* Whether some made folder or pending file lies below key ("" = root). */
bool tfs__s3_local_below(struct s3 *s, const char *key)
{
	size_t n = strlen(key);
	bool found = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->ndirs && !found; i++)
		found = (!n || (!strncmp(s->dirs[i], key, n) &&
				s->dirs[i][n] == '/'));
	for (struct pending *p = s->pending; p && !found; p = p->next)
		found = !p->unlinked &&
			(!n || (!strncmp(p->key, key, n) && p->key[n] == '/'));
	pthread_mutex_unlock(&s->lock);
	return found;
}

bool tfs__s3_dir_made(struct s3 *s, const char *key)
{
	bool r;

	pthread_mutex_lock(&s->lock);
	r = tfs__s3_dirs_has_locked(s, key, NULL);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ---- Immutable objects ------------------------------------------------ */


/* TileDB never rewrites an object under a name made of a timestamp and a
 * UUID ("__1700000000000_1700000000000_<uuid>..."): fragment folders and
 * their files, schemas, commits, metadata, consolidated fragment
 * metadata. Such a key (any component "__" and a digit) is immutable. */
bool tfs__s3_immutable_key(const char *key)
{
	for (const char *c = key; c; c = strchr(c, '/')) {
		if (*c == '/')
			c++;
		if (c[0] == '_' && c[1] == '_' && c[2] >= '0' && c[2] <= '9')
			return true;
	}
	return false;
}

void tfs__s3_icache_entry_free(struct icache_entry *en)
{
	tfs_free(en->key);
	tfs_free(en->data);
}

/* Copies what the cache knows of key; data (a new copy) only when asked
 * and cached. */
bool tfs__s3_icache_get(struct s3 *s, const char *key, struct tfs_stat *st,
			uint8_t **data)
{
	bool found = false;

	if (data)
		*data = NULL;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->icache_num; i++) {
		struct icache_entry *en = &s->icache[i];

		if (strcmp(en->key, key))
			continue;
		found = true;
		if (st) {
			memset(st, 0, sizeof(*st));
			st->exists = true;
			st->size = en->size;
			st->mtime_ns = en->mtime_ns;
		}
		if (data && en->data)
			*data = tfs_memdup(en->data, (size_t)en->size);
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

/* Remembers key's size (and bytes when data is not NULL; copied). */
void tfs__s3_icache_put(struct s3 *s, const char *key, uint64_t size,
			int64_t mtime_ns, const uint8_t *data)
{
	struct icache_entry en = {NULL, size, mtime_ns, NULL}, old = {0};
	bool have_old = false;

	if (!tfs__s3_immutable_key(key))
		return;
	en.key = tfs_strdup(key);
	if (data && size <= ICACHE_OBJECT_MAX)
		en.data = tfs_memdup(data, size ? (size_t)size : 1);
	if (!en.key) {
		tfs__s3_icache_entry_free(&en);
		return;
	}
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->icache_num; i++)
		if (!strcmp(s->icache[i].key, key)) {
			old = s->icache[i];
			have_old = true;
			s->icache_bytes -= old.data ? (size_t)old.size : 0;
			s->icache[i] = en;
			s->icache_bytes += en.data ? (size_t)en.size : 0;
			en.key = NULL;
			break;
		}
	if (en.key) {
		/* Past the limit (or out of memory) the oldest is replaced. */
		if (s->icache_num == s->icache_cap &&
		    s->icache_cap < ICACHE_MAX_ENTRIES &&
		    tfs_grow(&s->icache, &s->icache_cap, s->icache_num + 1,
			     sizeof(*s->icache)) != TFS_E_OK)
			tfs_log(TFS_LOG_DEBUG, "s3: the object cache did not "
				"grow (out of memory)");
		if (s->icache_num < s->icache_cap) {
			s->icache[s->icache_num++] = en;
		} else if (s->icache_num) {
			/* Full: replace the oldest (first in, first out). */
			size_t v = s->icache_next++ % s->icache_num;

			old = s->icache[v];
			have_old = true;
			s->icache_bytes -= old.data ? (size_t)old.size : 0;
			s->icache[v] = en;
		} else {
			old = en;
			have_old = true;
			en.data = NULL;
		}
		s->icache_bytes += en.data ? (size_t)en.size : 0;
	}
	/* Over the byte budget: drop bytes (sizes stay) in FIFO order. */
	for (size_t i = 0; s->icache_bytes > ICACHE_MAX_BYTES && i < s->icache_num;
	     i++) {
		struct icache_entry *x = &s->icache[(s->icache_next + i) %
						    s->icache_num];

		if (x->data && x->key != en.key) {
			s->icache_bytes -= (size_t)x->size;
			tfs_free(x->data);
			x->data = NULL;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (have_old)
		tfs__s3_icache_entry_free(&old);
}

/* Forgets key (it was written, renamed or removed by this process). */
void tfs__s3_icache_drop(struct s3 *s, const char *key)
{
	struct icache_entry old = {0};
	bool have_old = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->icache_num; i++)
		if (!strcmp(s->icache[i].key, key)) {
			old = s->icache[i];
			have_old = true;
			s->icache_bytes -= old.data ? (size_t)old.size : 0;
			s->icache[i] = s->icache[--s->icache_num];
			break;
		}
	pthread_mutex_unlock(&s->lock);
	if (have_old)
		tfs__s3_icache_entry_free(&old);
}

/* ---- Recent stat answers ---------------------------------------------- */


static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool tfs__s3_scache_get(struct s3 *s, const char *key, struct tfs_stat *st)
{
	int64_t now = mono_ns();
	bool found = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->scache_num && !found; i++)
		if (s->scache[i].until_ns > now && !strcmp(s->scache[i].key, key)) {
			*st = s->scache[i].st;
			found = true;
		}
	pthread_mutex_unlock(&s->lock);
	return found;
}

void tfs__s3_scache_put(struct s3 *s, const char *key,
			const struct tfs_stat *st)
{
	char *k = tfs_strdup(key), *old = NULL;
	struct scache_entry *en;

	if (!k)
		return;
	pthread_mutex_lock(&s->lock);
	if (!s->scache)
		s->scache = tfs_callocn(SCACHE_MAX, sizeof(*s->scache));
	if (!s->scache) {
		pthread_mutex_unlock(&s->lock);
		tfs_free(k);
		return;
	}
	if (s->scache_num < SCACHE_MAX) {
		en = &s->scache[s->scache_num++];
	} else {
		en = &s->scache[s->scache_next++ % SCACHE_MAX];
		old = en->key;
	}
	en->key = k;
	en->st = *st;
	en->until_ns = mono_ns() + STAT_TTL_NS;
	pthread_mutex_unlock(&s->lock);
	tfs_free(old);
}

/* Something changed here: forget every recent answer. */
void tfs__s3_scache_clear(struct s3 *s)
{
	struct scache_entry *all;
	size_t n;

	pthread_mutex_lock(&s->lock);
	all = s->scache;
	n = s->scache_num;
	s->scache = NULL;
	s->scache_num = s->scache_next = 0;
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < n; i++)
		tfs_free(all[i].key);
	tfs_free(all);
}
