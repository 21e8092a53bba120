/* Backend-independent storage helpers: whole-file reads with a size cap,
 * folder listings, path joining and backend destruction. */
#include "tfs_vfs.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "tfs_alloc.h"

void tfs_vfs_free(struct tfs_vfs *vfs)
{
	if (vfs)
		vfs->ops->destroy(vfs);
}

enum tfs_err tfs_vfs_read_all(struct tfs_vfs *v, const char *path, size_t max,
			      uint8_t **out, size_t *len, struct tfs_diag *d)
{
	struct tfs_stat st;
	uint8_t *buf;
	enum tfs_err err;

	*out = NULL;
	*len = 0;
	err = v->ops->stat(v, path, &st, d);
	if (err)
		return err;
	if (!st.exists)
		return tfs_fail(d, TFS_E_NOT_FOUND, "'%s': no such file", path);
	if (st.is_dir)
		return tfs_fail(d, TFS_E_INVALID, "'%s': is a folder, not a file",
				path);
	if (st.size > max)
		return tfs_fail(d, TFS_E_TOO_BIG,
				"'%s': file of %" PRIu64
				" bytes exceeds the limit of %zu bytes",
				path, st.size, max);
	buf = tfs_malloc((size_t)st.size);
	if (!buf)
		return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory reading %" PRIu64
				" bytes", path, st.size);
	err = v->ops->read(v, path, 0, buf, (size_t)st.size, d);
	if (err) {
		tfs_free(buf);
		return err;
	}
	*out = buf;
	*len = (size_t)st.size;
	return TFS_E_OK;
}

enum tfs_err tfs_vfs_stat_names(struct tfs_vfs *v, const char *dir,
				 const char *const *names, size_t n,
				 struct tfs_stat *sts, struct tfs_diag *d)
{
	if (v->ops->stat_names)
		return v->ops->stat_names(v, dir, names, n, sts, d);
	for (size_t i = 0; i < n; i++) {
		char *path = *names[i] ? tfs_path_join(dir, names[i]) : NULL;
		enum tfs_err e;

		if (*names[i] && !path)
			return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory",
					dir);
		e = tfs_vfs_stat(v, path ? path : dir, &sts[i], d);
		tfs_free(path);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

enum tfs_err tfs_vfs_list_or_empty(struct tfs_vfs *v, const char *dir,
				   struct tfs_dirlist *out, struct tfs_diag *d)
{
	/* A diag of its own: the missing folder's message must not become
	 * d's first failure. */
	struct tfs_diag ld;
	enum tfs_err e;

	out->names = NULL;
	out->count = 0;
	tfs_diag_init(&ld);
	e = tfs_vfs_list(v, dir, out, &ld);
	if (e == TFS_E_NOT_FOUND)
		return TFS_E_OK;
	if (e)
		return tfs_fail(d, e, "%s", tfs_diag_msg(&ld));
	return TFS_E_OK;
}

void tfs_dirlist_release(struct tfs_dirlist *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++)
		tfs_free(l->names[i]);
	tfs_free(l->names);
	l->names = NULL;
	l->count = 0;
}

void tfs_vfs_unbounded_space(struct tfs_space *out)
{
	memset(out, 0, sizeof(*out));
	out->block_size = UINT64_C(1) << 20;
	out->blocks = out->blocks_free = out->blocks_avail = UINT64_C(1) << 30;
	out->name_max = 255;
}

char *tfs_path_normalize(const char *path)
{
	const char *scheme = strstr(path, "://");
	/* keep: the scheme's length; floor: where the parts begin; kept:
	 * parts a ".." may remove */
	size_t keep = 0, n, floor, kept = 0;
	bool absolute;
	const char *p;
	char *out;

	if (scheme && scheme > path &&
	    !memchr(path, '/', (size_t)(scheme - path)))
		keep = (size_t)(scheme - path) + 3;
	absolute = keep > 0 || path[0] == '/';
	out = tfs_malloc(strlen(path) + 2);
	if (!out)
		return NULL;
	memcpy(out, path, keep);
	n = keep;
	if (path[keep] == '/')
		out[n++] = '/';
	floor = n;
	for (p = path + keep; *p; p += strspn(p, "/")) {
		size_t part = strcspn(p, "/");
		bool dotdot = part == 2 && p[0] == '.' && p[1] == '.';
		const char *at = p;

		p += part;
		if (part == 0 || (part == 1 && at[0] == '.'))
			continue;
		if (dotdot && kept > 0) {
			/* Drop the last part and the '/' before it. */
			while (n > floor && out[n - 1] != '/')
				n--;
			if (n > floor)
				n--;
			kept--;
			continue;
		}
		if (dotdot && absolute)
			continue; /* above the top: stays there */
		if (n > floor)
			out[n++] = '/';
		memcpy(out + n, at, part);
		n += part;
		if (!dotdot)
			kept++;
	}
	if (n == 0)
		out[n++] = '.';
	out[n] = '\0';
	return out;
}

char *tfs_path_join(const char *dir, const char *name)
{
	size_t dlen = strlen(dir);
	size_t nlen;
	char *p;

	while (dlen > 1 && dir[dlen - 1] == '/')
		dlen--;
	while (*name == '/')
		name++;
	nlen = strlen(name);
	if (dlen == 0)
		return tfs_strdup(name);
	if (dlen == 1 && dir[0] == '/') {
		/* Joining onto the root keeps a single slash. */
		p = tfs_malloc(nlen + 2);
		if (!p)
			return NULL;
		p[0] = '/';
		memcpy(p + 1, name, nlen + 1);
		return p;
	}
	p = tfs_malloc(dlen + 1 + nlen + 1);
	if (!p)
		return NULL;
	memcpy(p, dir, dlen);
	p[dlen] = '/';
	memcpy(p + dlen + 1, name, nlen + 1);
	return p;
}
