/* Array key/value metadata merged at the read window (format/metadata.md
 * §2): files of __meta/ whose [t1, t2] lies entirely inside the window,
 * minus those named by vacuum lists that also lie inside it, applied in t1
 * order; a later entry replaces a key, a deletion removes it. The result is
 * sorted by key bytes. */
#include "fragment_internal.h"

#include <string.h>

#include "tfs_alloc.h"

struct meta_file_ref {
	char *name;
	struct tfs_name_info ni;
};

struct merge {
	struct tfs_meta_kv *kv; /* sorted by key bytes */
	size_t num, cap;
};

static void kv_release(struct tfs_meta_kv *kv)
{
	tfs_free(kv->key);
	tfs_free(kv->value);
}

void tfs__metadata_release(struct tfs_metadata *m)
{
	for (size_t i = 0; i < m->count; i++)
		kv_release(&m->entries[i]);
	tfs_free(m->entries);
	m->entries = NULL;
	m->count = 0;
}

/* Position of key in the merged list, or where it would go. */
static size_t kv_find(const struct merge *m, const char *key, uint32_t len,
		      bool *found)
{
	size_t lo = 0, hi = m->num;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = tfs_bytes_cmp(m->kv[mid].key, m->kv[mid].key_len, key,
				      len);

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

static enum tfs_err apply_entry(struct merge *m, const struct tfs_meta_kv *e)
{
	struct tfs_meta_kv copy;
	bool found;
	size_t at = kv_find(m, e->key, e->key_len, &found);
	size_t vsize;

	if (found) {
		kv_release(&m->kv[at]);
		memmove(m->kv + at, m->kv + at + 1,
			(m->num - at - 1) * sizeof(*m->kv));
		m->num--;
	}
	if (e->deleted)
		return TFS_E_OK;
	memset(&copy, 0, sizeof(copy));
	vsize = (size_t)e->value_num * tfs_datatype_size(e->type);
	copy.key = tfs_memdup(e->key, e->key_len);
	copy.value = tfs_memdup(e->value ? e->value : (const uint8_t *)"",
				e->value ? vsize : 0);
	if (!copy.key || !copy.value) {
		kv_release(&copy);
		return TFS_E_NOMEM;
	}
	copy.key_len = e->key_len;
	copy.type = e->type;
	copy.value_num = e->value_num;
	if (m->num == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 16;
		struct tfs_meta_kv *n = tfs_reallocn(m->kv, ncap, sizeof(*n));

		if (!n) {
			kv_release(&copy);
			return TFS_E_NOMEM;
		}
		m->kv = n;
		m->cap = ncap;
	}
	memmove(m->kv + at + 1, m->kv + at, (m->num - at) * sizeof(*m->kv));
	m->kv[at] = copy;
	m->num++;
	return TFS_E_OK;
}

/* Reads the vacuum list rel and adds its normalised lines to hidden. */
static enum tfs_err read_vac(struct tfs_arraydir *a, const char *rel,
			     char ***hidden, size_t *hidden_num,
			     struct tfs_diag *d)
{
	struct tfs_strlist lines;
	uint8_t *buf;
	size_t len;
	char *path = tfs__array_path(a, rel);
	char **n;
	enum tfs_err err;

	if (!path)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	err = tfs_vfs_read_all(a->vfs, path, TFS__FILE_MAX, &buf, &len, d);
	if (err) {
		tfs_free(path);
		return err;
	}
	err = tfs_lines_parse(&lines, buf, len);
	tfs_free(buf);
	if (err) {
		tfs_fail(d, err, "'%s': cannot parse", path);
		tfs_free(path);
		return err;
	}
	tfs_free(path);
	n = tfs_reallocn(*hidden, *hidden_num + lines.count + 1, sizeof(*n));
	if (!n) {
		tfs_strlist_release(&lines);
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	}
	*hidden = n;
	for (size_t i = 0; i < lines.count; i++) {
		char *norm = tfs_vac_line_normalize(lines.items[i]);

		if (!norm) {
			tfs_strlist_release(&lines);
			return tfs_fail(d, TFS_E_NOMEM,
					"array '%s': out of memory", a->path);
		}
		n[(*hidden_num)++] = norm;
	}
	tfs_strlist_release(&lines);
	return TFS_E_OK;
}

static bool is_hidden(char *const *hidden, size_t num, const char *name)
{
	static const char prefix[] = "__meta/";

	for (size_t i = 0; i < num; i++)
		if (!strncmp(hidden[i], prefix, sizeof(prefix) - 1) &&
		    !strcmp(hidden[i] + sizeof(prefix) - 1, name))
			return true;
	return false;
}

/* Applies the metadata file __meta/name to the merge. */
static enum tfs_err apply_file(struct tfs_arraydir *a, struct merge *m,
			       const char *name, struct tfs_diag *d)
{
	struct tfs_meta_file mf;
	struct tfs_diag ld;
	uint8_t *payload;
	size_t len;
	char *rel = tfs_path_join("__meta", name);
	enum tfs_err err;

	if (!rel)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	err = tfs__read_tile_file(a, rel, &payload, &len, d);
	if (err)
		goto out_rel;
	tfs_diag_init(&ld);
	err = tfs_meta_file_parse(&mf, payload, len, &ld);
	tfs_free(payload);
	if (err) {
		tfs_fail(d, err, "array metadata '%s/%s': %s", a->path, rel,
			 tfs_diag_msg(&ld));
		goto out_rel;
	}
	for (size_t i = 0; i < mf.count && !err; i++)
		err = apply_entry(m, &mf.entries[i]);
	if (err)
		tfs_fail(d, err, "array '%s': out of memory", a->path);
	tfs_meta_file_release(&mf);
out_rel:
	tfs_free(rel);
	return err;
}

enum tfs_err tfs__load_metadata(struct tfs_arraydir *a, struct tfs_diag *d)
{
	struct tfs_dirlist l;
	struct meta_file_ref *files = NULL;
	size_t file_num = 0;
	char **hidden = NULL;
	size_t hidden_num = 0;
	struct merge m = {NULL, 0, 0};
	enum tfs_err err;

	err = tfs__list(a, "__meta", true, false, &l, d);
	if (err)
		return err;
	files = tfs_callocn(l.count ? l.count : 1, sizeof(*files));
	if (!files) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       a->path);
		goto out;
	}
	for (size_t i = 0; i < l.count; i++) {
		const char *name = l.names[i];
		struct tfs_name_info ni;
		bool vac = tfs__ends_with(name, ".vac");

		if (tfs_name_parse(name, &ni) != TFS_E_OK) {
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "array metadata '%s/__meta/%s': not a timestamped name",
				       a->path, name);
			goto out;
		}
		/* Partly written files of a local-disk writer (metadata.md §2). */
		if (tfs__ends_with(name, ".tmp"))
			continue;
		if (!tfs__full_overlap(ni.t1, ni.t2, a->t0, a->t1))
			continue;
		if (vac) {
			char *rel = tfs_path_join("__meta", name);

			if (!rel) {
				err = tfs_fail(d, TFS_E_NOMEM,
					       "array '%s': out of memory",
					       a->path);
				goto out;
			}
			err = read_vac(a, rel, &hidden, &hidden_num, d);
			tfs_free(rel);
			if (err)
				goto out;
			continue;
		}
		files[file_num].name = l.names[i];
		files[file_num].ni = ni;
		file_num++;
	}
	/* Stable insertion sort by t1 (listing order breaks ties). */
	for (size_t i = 1; i < file_num; i++) {
		struct meta_file_ref tmp = files[i];
		size_t j = i;

		while (j > 0 && files[j - 1].ni.t1 > tmp.ni.t1) {
			files[j] = files[j - 1];
			j--;
		}
		files[j] = tmp;
	}
	for (size_t i = 0; i < file_num && !err; i++)
		if (!is_hidden(hidden, hidden_num, files[i].name))
			err = apply_file(a, &m, files[i].name, d);
	if (!err) {
		a->metadata.entries = m.kv;
		a->metadata.count = m.num;
		m.kv = NULL;
		m.num = 0;
	}
out:
	for (size_t i = 0; i < m.num; i++)
		kv_release(&m.kv[i]);
	tfs_free(m.kv);
	for (size_t i = 0; i < hidden_num; i++)
		tfs_free(hidden[i]);
	tfs_free(hidden);
	tfs_free(files); /* names are borrowed from l */
	tfs_dirlist_release(&l);
	return err;
}
