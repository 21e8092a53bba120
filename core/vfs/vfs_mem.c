/* The in-memory storage backend: a tree of folders and files kept in the
 * process, for tests and for building arrays without touching the disk.
 * Paths are split on '/'; empty and "." components are ignored, ".." goes
 * up, so "/a//b/" and "a/b" name the same entry. Semantics follow POSIX:
 * a file is created only in an existing folder, rename replaces a file or
 * an empty folder, remove takes a file or an empty folder.
 *
 * One mutex protects the whole tree; operations only copy bytes while
 * holding it (there is no I/O to wait for). */
#include "tfs_vfs.h"

#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "tfs_alloc.h"

struct mem_node {
	char *name;
	bool is_dir;
	struct mem_node *parent;
	int64_t mtime_ns;
	/* files */
	uint8_t *data;
	size_t len;
	size_t cap;
	/* folders: children sorted bytewise by name */
	struct mem_node **kids;
	size_t kid_num;
	size_t kid_cap;
};

struct mem_vfs {
	struct tfs_vfs base;
	pthread_mutex_t lock;
	struct mem_node *root; /* protected by lock */
};

static struct mem_vfs *to_mem(struct tfs_vfs *v)
{
	return (struct mem_vfs *)v;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void node_free(struct mem_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->kid_num; i++)
		node_free(n->kids[i]);
	tfs_free(n->kids);
	tfs_free(n->data);
	tfs_free(n->name);
	tfs_free(n);
}

static struct mem_node *node_new(const char *name, size_t name_len,
				 bool is_dir)
{
	struct mem_node *n = tfs_callocn(1, sizeof(*n));

	if (!n)
		return NULL;
	n->name = tfs_strndup(name, name_len);
	if (!n->name) {
		tfs_free(n);
		return NULL;
	}
	n->is_dir = is_dir;
	n->mtime_ns = now_ns();
	return n;
}

/* Index of the child called name, or where it would be inserted. */
static size_t kid_find(const struct mem_node *dir, const char *name,
		       size_t name_len, bool *found)
{
	size_t lo = 0, hi = dir->kid_num;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *k = dir->kids[mid]->name;
		int c = strncmp(k, name, name_len);

		if (c == 0 && k[name_len] != '\0')
			c = 1;
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Room for one more child; false when out of memory. */
static bool kid_reserve(struct mem_node *dir)
{
	return tfs_grow(&dir->kids, &dir->kid_cap, dir->kid_num + 1,
			sizeof(*dir->kids)) == TFS_E_OK;
}

static bool kid_insert(struct mem_node *dir, size_t at, struct mem_node *kid)
{
	if (!kid_reserve(dir))
		return false;
	memmove(dir->kids + at + 1, dir->kids + at,
		(dir->kid_num - at) * sizeof(*dir->kids));
	dir->kids[at] = kid;
	dir->kid_num++;
	kid->parent = dir;
	dir->mtime_ns = now_ns();
	return true;
}

/* A new empty file or folder called name in dir, or NULL when out of
 * memory (dir unchanged). */
static struct mem_node *kid_add(struct mem_node *dir, const char *name,
				size_t name_len, bool is_dir)
{
	struct mem_node *n = node_new(name, name_len, is_dir);
	bool found;

	if (!n)
		return NULL;
	if (!kid_insert(dir, kid_find(dir, name, name_len, &found), n)) {
		node_free(n);
		return NULL;
	}
	return n;
}

static void kid_detach(struct mem_node *kid)
{
	struct mem_node *dir = kid->parent;
	bool found;
	size_t at = kid_find(dir, kid->name, strlen(kid->name), &found);

	memmove(dir->kids + at, dir->kids + at + 1,
		(dir->kid_num - at - 1) * sizeof(*dir->kids));
	dir->kid_num--;
	dir->mtime_ns = now_ns();
	kid->parent = NULL;
}

/* Next path component: skips slashes and "."; sets *len = 0 at the end. */
static const char *next_comp(const char *p, size_t *len)
{
	for (;;) {
		while (*p == '/')
			p++;
		*len = strcspn(p, "/");
		if (*len == 1 && p[0] == '.') {
			p++;
			continue;
		}
		return p;
	}
}

/* Where a path leads. */
struct mem_loc {
	struct mem_node *node;   /* the entry; NULL if only it is missing */
	struct mem_node *parent; /* its folder; NULL for the root */
	const char *last;        /* the last component, inside the path */
	size_t last_len;         /* its length; 0 for the root */
};

/* Walks path. A missing or non-folder intermediate component gives
 * TFS_E_NOT_FOUND. */
static enum tfs_err walk(struct mem_vfs *m, const char *path,
			 struct mem_loc *loc)
{
	struct mem_node *cur = m->root;
	struct mem_node *par = NULL;
	const char *lc = "";
	size_t ll = 0;
	size_t len;
	const char *p = next_comp(path, &len);

	while (len) {
		const char *q = p + len;
		size_t nlen;
		bool found;
		size_t at;

		if (!cur)
			return TFS_E_NOT_FOUND; /* previous component missing */
		if (!cur->is_dir)
			return TFS_E_NOT_FOUND;
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (cur->parent)
				cur = cur->parent;
			par = cur->parent;
			lc = cur->name;
			ll = strlen(lc);
			p = next_comp(q, &len);
			continue;
		}
		at = kid_find(cur, p, len, &found);
		par = cur;
		lc = p;
		ll = len;
		cur = found ? cur->kids[at] : NULL;
		p = next_comp(q, &nlen);
		len = nlen;
	}
	loc->parent = par;
	loc->node = cur;
	loc->last = lc;
	loc->last_len = ll;
	return TFS_E_OK;
}

/* The entry at path, or NULL when there is none. */
static struct mem_node *lookup(struct mem_vfs *m, const char *path)
{
	struct mem_loc loc;

	return walk(m, path, &loc) == TFS_E_OK ? loc.node : NULL;
}

static enum tfs_err mem_stat(struct tfs_vfs *vfs, const char *path,
			     struct tfs_stat *st, struct tfs_diag *d)
{
	struct mem_vfs *m = to_mem(vfs);
	struct mem_node *n;

	(void)d;
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&m->lock);
	n = lookup(m, path);
	if (n) {
		st->exists = true;
		st->is_dir = n->is_dir;
		st->size = n->is_dir ? 0 : n->len;
		st->mtime_ns = n->mtime_ns;
	}
	pthread_mutex_unlock(&m->lock);
	return TFS_E_OK;
}

static enum tfs_err mem_read(struct tfs_vfs *vfs, const char *path,
			     uint64_t off, void *dst, size_t len,
			     struct tfs_diag *d)
{
	struct mem_vfs *m = to_mem(vfs);
	struct mem_node *n;
	enum tfs_err err = TFS_E_OK;

	pthread_mutex_lock(&m->lock);
	n = lookup(m, path);
	if (!n) {
		err = tfs_fail(d, TFS_E_NOT_FOUND,
			       "'%s': cannot open: no such file or directory",
			       path);
	} else if (n->is_dir) {
		err = tfs_fail(d, TFS_E_INVALID, "'%s': cannot read: is a folder",
			       path);
	} else if (len && (off > n->len || len > n->len - off)) {
		err = tfs_fail(d, TFS_E_CORRUPT,
			       "'%s': file too short: wanted %zu bytes at offset %" PRIu64
			       ", file has %zu",
			       path, len, off, n->len);
	} else if (len) {
		memcpy(dst, n->data + off, len);
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

static enum tfs_err mem_list(struct tfs_vfs *vfs, const char *dir,
			     struct tfs_dirlist *out, struct tfs_diag *d)
{
	struct mem_vfs *m = to_mem(vfs);
	struct mem_node *n;
	struct tfs_dirlist l = {NULL, 0};
	enum tfs_err err = TFS_E_OK;

	out->names = NULL;
	out->count = 0;
	pthread_mutex_lock(&m->lock);
	n = lookup(m, dir);
	if (!n) {
		err = tfs_fail(d, TFS_E_NOT_FOUND,
			       "'%s': cannot list: no such file or directory",
			       dir);
		goto out_unlock;
	}
	if (!n->is_dir) {
		err = tfs_fail(d, TFS_E_NOT_FOUND,
			       "'%s': cannot list: not a directory", dir);
		goto out_unlock;
	}
	l.names = tfs_callocn(n->kid_num ? n->kid_num : 1, sizeof(*l.names));
	if (!l.names)
		goto out_nomem;
	for (size_t i = 0; i < n->kid_num; i++) {
		l.names[i] = tfs_strdup(n->kids[i]->name);
		if (!l.names[i])
			goto out_nomem;
		l.count++;
	}
	pthread_mutex_unlock(&m->lock);
	*out = l;
	return TFS_E_OK;

out_nomem:
	err = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory listing", dir);
out_unlock:
	pthread_mutex_unlock(&m->lock);
	tfs_dirlist_release(&l);
	return err;
}

/* Finds or creates the file at path; the lock is held. */
static enum tfs_err file_for_write(struct mem_vfs *m, const char *path,
				   struct mem_node **out, struct tfs_diag *d)
{
	struct mem_loc loc;

	if (walk(m, path, &loc) != TFS_E_OK)
		return tfs_fail(d, TFS_E_NOT_FOUND,
				"'%s': cannot open for writing: no such folder",
				path);
	if (!loc.parent)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': cannot open for writing: is a folder",
				path);
	if (loc.node) {
		if (loc.node->is_dir)
			return tfs_fail(d, TFS_E_INVALID,
					"'%s': cannot open for writing: is a folder",
					path);
		*out = loc.node;
		return TFS_E_OK;
	}
	*out = kid_add(loc.parent, loc.last, loc.last_len, false);
	if (!*out)
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory creating file",
				path);
	return TFS_E_OK;
}

static enum tfs_err put_bytes(struct mem_node *n, const char *path,
			      const void *data, size_t len, bool append,
			      struct tfs_diag *d)
{
	size_t base = append ? n->len : 0;

	if (len > SIZE_MAX - base)
		return tfs_fail(d, TFS_E_TOO_BIG, "'%s': file too large", path);
	if (tfs_grow(&n->data, &n->cap, base + len, 1))
		return tfs_fail(d, TFS_E_NOMEM,
				"'%s': out of memory writing %zu bytes", path,
				len);
	if (len)
		memcpy(n->data + base, data, len);
	n->len = base + len;
	n->mtime_ns = now_ns();
	return TFS_E_OK;
}

static enum tfs_err mem_write_common(struct tfs_vfs *vfs, const char *path,
				     const void *data, size_t len, bool append,
				     struct tfs_diag *d)
{
	struct mem_vfs *m = to_mem(vfs);
	/* NULL: gcc 12 -O3 cannot see that file_for_write sets it on success. */
	struct mem_node *n = NULL;
	enum tfs_err err;

	pthread_mutex_lock(&m->lock);
	err = file_for_write(m, path, &n, d);
	if (!err)
		err = put_bytes(n, path, data, len, append, d);
	pthread_mutex_unlock(&m->lock);
	return err;
}

static enum tfs_err mem_write(struct tfs_vfs *vfs, const char *path,
			      const void *data, size_t len, struct tfs_diag *d)
{
	return mem_write_common(vfs, path, data, len, false, d);
}

static enum tfs_err mem_append(struct tfs_vfs *vfs, const char *path,
			       const void *data, size_t len,
			       struct tfs_diag *d)
{
	return mem_write_common(vfs, path, data, len, true, d);
}

static enum tfs_err mem_fsync(struct tfs_vfs *vfs, const char *path,
			      struct tfs_diag *d)
{
	struct mem_vfs *m = to_mem(vfs);
	enum tfs_err err = TFS_E_OK;

	pthread_mutex_lock(&m->lock);
	if (!lookup(m, path))
		err = tfs_fail(d, TFS_E_NOT_FOUND,
			       "'%s': cannot open for fsync: no such file or directory",
			       path);
	pthread_mutex_unlock(&m->lock);
	return err;
}

static enum tfs_err mem_mkdir(struct tfs_vfs *vfs, const char *path,
			      struct tfs_diag *d)
{
	struct mem_vfs *m = to_mem(vfs);
	struct mem_loc loc;
	enum tfs_err err = TFS_E_OK;

	pthread_mutex_lock(&m->lock);
	if (walk(m, path, &loc) != TFS_E_OK) {
		err = tfs_fail(d, TFS_E_NOT_FOUND,
			       "'%s': cannot create folder: no such parent folder",
			       path);
		goto out_unlock;
	}
	if (loc.node) {
		if (!loc.node->is_dir)
			err = tfs_fail(d, TFS_E_EXISTS,
				       "'%s': cannot create folder: a file has that name",
				       path);
		goto out_unlock;
	}
	if (!kid_add(loc.parent, loc.last, loc.last_len, true))
		err = tfs_fail(d, TFS_E_NOMEM,
			       "'%s': out of memory creating folder", path);
out_unlock:
	pthread_mutex_unlock(&m->lock);
	return err;
}

static bool is_ancestor(const struct mem_node *a, const struct mem_node *n)
{
	for (; n; n = n->parent)
		if (n == a)
			return true;
	return false;
}

/* Whether fn may take the place of tn (NULL: free) in folder tpar. */
static enum tfs_err rename_allowed(const struct mem_node *fn,
				   const struct mem_node *tpar,
				   const struct mem_node *tn, const char *from,
				   const char *to, struct tfs_diag *d)
{
	if (fn->is_dir && is_ancestor(fn, tpar))
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': cannot rename to '%s': inside itself",
				from, to);
	if (!tn)
		return TFS_E_OK;
	if (fn->is_dir && (!tn->is_dir || tn->kid_num))
		return tfs_fail(d, tn->is_dir ? TFS_E_EXISTS : TFS_E_INVALID,
				"'%s': cannot rename to '%s': target exists",
				from, to);
	if (!fn->is_dir && tn->is_dir)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': cannot rename to '%s': target is a folder",
				from, to);
	return TFS_E_OK;
}

/* Moves fn into tpar under nname (taken), replacing tn if any. Room in
 * tpar must have been reserved, so this cannot fail half-way. */
static void node_move(struct mem_node *fn, struct mem_node *tpar,
		      struct mem_node *tn, char *nname)
{
	size_t at;
	bool found;

	if (tn) {
		kid_detach(tn);
		node_free(tn);
	}
	kid_detach(fn);
	tfs_free(fn->name);
	fn->name = nname;
	at = kid_find(tpar, nname, strlen(nname), &found);
	(void)kid_insert(tpar, at, fn); /* room was reserved */
}

static enum tfs_err mem_rename(struct tfs_vfs *vfs, const char *from,
			       const char *to, struct tfs_diag *d)
{
	struct mem_vfs *m = to_mem(vfs);
	struct mem_loc floc, tloc;
	struct mem_node *fn;
	char *nname = NULL;
	enum tfs_err err = TFS_E_OK;

	pthread_mutex_lock(&m->lock);
	if (walk(m, from, &floc) != TFS_E_OK || !floc.node) {
		err = tfs_fail(d, TFS_E_NOT_FOUND,
			       "'%s': cannot rename to '%s': no such file or directory",
			       from, to);
		goto out_unlock;
	}
	if (!floc.parent) {
		err = tfs_fail(d, TFS_E_INVALID,
			       "'%s': cannot rename the root folder", from);
		goto out_unlock;
	}
	fn = floc.node;
	if (walk(m, to, &tloc) != TFS_E_OK || !tloc.parent) {
		err = tfs_fail(d, TFS_E_NOT_FOUND,
			       "'%s': cannot rename to '%s': no such folder",
			       from, to);
		goto out_unlock;
	}
	if (tloc.node == fn)
		goto out_unlock;
	if ((err = rename_allowed(fn, tloc.parent, tloc.node, from, to, d)))
		goto out_unlock;
	nname = tfs_strndup(tloc.last, tloc.last_len);
	/* Make room first so the move cannot fail half-way. */
	if (!nname || !kid_reserve(tloc.parent)) {
		tfs_free(nname);
		err = tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory renaming",
			       from);
		goto out_unlock;
	}
	node_move(fn, tloc.parent, tloc.node, nname);
out_unlock:
	pthread_mutex_unlock(&m->lock);
	return err;
}

static enum tfs_err mem_remove(struct tfs_vfs *vfs, const char *path,
			       struct tfs_diag *d)
{
	struct mem_vfs *m = to_mem(vfs);
	struct mem_loc loc;
	enum tfs_err err = TFS_E_OK;

	pthread_mutex_lock(&m->lock);
	if (walk(m, path, &loc) != TFS_E_OK || !loc.node) {
		err = tfs_fail(d, TFS_E_NOT_FOUND,
			       "'%s': cannot remove: no such file or directory",
			       path);
	} else if (!loc.parent) {
		err = tfs_fail(d, TFS_E_INVALID,
			       "'%s': cannot remove the root folder", path);
	} else if (loc.node->is_dir && loc.node->kid_num) {
		err = tfs_fail(d, TFS_E_EXISTS,
			       "'%s': cannot remove: folder not empty", path);
	} else {
		kid_detach(loc.node);
		node_free(loc.node);
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

static void mem_destroy(struct tfs_vfs *vfs)
{
	struct mem_vfs *m = to_mem(vfs);

	node_free(m->root);
	pthread_mutex_destroy(&m->lock);
	tfs_free(m);
}

/* Memory has no fixed size: the room object stores report too. */
static enum tfs_err mem_space(struct tfs_vfs *vfs, const char *path,
			      struct tfs_space *out, struct tfs_diag *d)
{
	(void)vfs;
	(void)path;
	(void)d;
	tfs_vfs_unbounded_space(out);
	return TFS_E_OK;
}

static const struct tfs_vfs_ops mem_ops = {
	.stat = mem_stat,
	.lstat = mem_stat, /* no links */
	.read = mem_read,
	.list = mem_list,
	.write = mem_write,
	.append = mem_append,
	.fsync = mem_fsync,
	.mkdir = mem_mkdir,
	.rename = mem_rename,
	.remove = mem_remove,
	.space = mem_space,
	.destroy = mem_destroy,
};

enum tfs_err tfs_vfs_mem_new(struct tfs_vfs **out)
{
	struct mem_vfs *m = tfs_callocn(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return TFS_E_NOMEM;
	m->root = node_new("", 0, true);
	if (!m->root) {
		tfs_free(m);
		return TFS_E_NOMEM;
	}
	if (pthread_mutex_init(&m->lock, NULL) != 0) {
		node_free(m->root);
		tfs_free(m);
		return TFS_E_NOMEM;
	}
	m->base.ops = &mem_ops;
	*out = &m->base;
	return TFS_E_OK;
}
