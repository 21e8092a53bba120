/* Array and group key/value metadata merged at the read window
 * (format/metadata.md §2): files of __meta/ whose [t1, t2] lies entirely
 * inside the window, minus those named by vacuum lists that also lie inside
 * it, applied in t1 order; a later entry replaces a key, a deletion removes
 * it. The result is sorted by key bytes. Arrays and groups share the
 * format, so this works on any folder (tfs_metadata_load). */
#include "fragment_internal.h"

#include <string.h>

#include "tfs_alloc.h"

struct meta_file_ref {
	char *name;
	struct tfs_name_info ni;
};

/* Where the metadata lives. */
struct meta_src {
	struct tfs_vfs *vfs;
	const char *dir;    /* the array or group folder */
	const char *noun;   /* "array" or "group", for messages */
	const uint8_t *key; /* 32 bytes or NULL */
	uint64_t t0, t1;
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

void tfs_metadata_release(struct tfs_metadata *m)
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
	if (tfs_grow(&m->kv, &m->cap, m->num + 1, sizeof(*m->kv))) {
		kv_release(&copy);
		return TFS_E_NOMEM;
	}
	memmove(m->kv + at + 1, m->kv + at, (m->num - at) * sizeof(*m->kv));
	m->kv[at] = copy;
	m->num++;
	return TFS_E_OK;
}

/* Reads the vacuum list at path and adds its normalised lines to hidden. */
static enum tfs_err read_vac(const struct meta_src *src, const char *path,
			     char ***hidden, size_t *hidden_num,
			     struct tfs_diag *d)
{
	struct tfs_strlist lines;
	uint8_t *buf;
	size_t len;
	char **n;
	enum tfs_err err;

	err = tfs_vfs_read_all(src->vfs, path, TFS__FILE_MAX, &buf, &len, d);
	if (err)
		return err;
	err = tfs_lines_parse(&lines, buf, len);
	tfs_free(buf);
	if (err)
		return tfs_fail(d, err, "'%s': cannot parse", path);
	n = tfs_reallocn(*hidden, *hidden_num + lines.count + 1, sizeof(*n));
	if (!n) {
		tfs_strlist_release(&lines);
		return tfs_fail(d, TFS_E_NOMEM, "%s '%s': out of memory",
				src->noun, src->dir);
	}
	*hidden = n;
	for (size_t i = 0; i < lines.count; i++) {
		char *norm = tfs_vac_line_normalize(lines.items[i]);

		if (!norm) {
			tfs_strlist_release(&lines);
			return tfs_fail(d, TFS_E_NOMEM,
					"%s '%s': out of memory", src->noun,
					src->dir);
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

/* Applies the metadata file at path to the merge. */
static enum tfs_err apply_file(const struct meta_src *src, struct merge *m,
			       const char *path, struct tfs_diag *d)
{
	struct tfs_meta_file mf;
	struct tfs_diag ld;
	uint8_t *payload;
	size_t len;
	enum tfs_err err;

	err = tfs_tile_file_read(src->vfs, path, src->key, src->noun, &payload,
				 &len, d);
	if (err)
		return err;
	tfs_diag_init(&ld);
	err = tfs_meta_file_parse(&mf, payload, len, &ld);
	tfs_free(payload);
	if (err)
		return tfs_fail(d, err, "%s metadata '%s': %s", src->noun, path,
				tfs_diag_msg(&ld));
	for (size_t i = 0; i < mf.count && !err; i++)
		err = apply_entry(m, &mf.entries[i]);
	if (err)
		tfs_fail(d, err, "%s '%s': out of memory", src->noun, src->dir);
	tfs_meta_file_release(&mf);
	return err;
}

static enum tfs_err meta_oom(const struct meta_src *src, struct tfs_diag *d)
{
	return tfs_fail(d, TFS_E_NOMEM, "%s '%s': out of memory", src->noun,
			src->dir);
}

/* Sorts the files of dir's listing l in the time range into files
 * (borrowing the names) and the names hidden by vacuum files into
 * hidden. */
static enum tfs_err collect_files(const struct meta_src *src, const char *dir,
				  const struct tfs_dirlist *l,
				  struct meta_file_ref *files, size_t *file_num,
				  char ***hidden, size_t *hidden_num,
				  struct tfs_diag *d)
{
	enum tfs_err err;
	char *path;

	for (size_t i = 0; i < l->count; i++) {
		const char *name = l->names[i];
		struct tfs_name_info ni;

		if (tfs_name_parse(name, &ni) != TFS_E_OK)
			return tfs_fail(d, TFS_E_CORRUPT,
					"%s metadata '%s/%s': not a timestamped name",
					src->noun, dir, name);
		/* Partly written files of a local-disk writer (metadata.md §2). */
		if (tfs_str_ends_with(name, ".tmp"))
			continue;
		if (!tfs__full_overlap(ni.t1, ni.t2, src->t0, src->t1))
			continue;
		if (!tfs_str_ends_with(name, ".vac")) {
			files[*file_num].name = l->names[i];
			files[*file_num].ni = ni;
			(*file_num)++;
			continue;
		}
		path = tfs_path_join(dir, name);
		if (!path)
			return meta_oom(src, d);
		err = read_vac(src, path, hidden, hidden_num, d);
		tfs_free(path);
		if (err)
			return err;
	}
	return TFS_E_OK;
}

/* Stable insertion sort by t1 (listing order breaks ties). */
static void sort_files(struct meta_file_ref *files, size_t file_num)
{
	for (size_t i = 1; i < file_num; i++) {
		struct meta_file_ref tmp = files[i];
		size_t j = i;

		while (j > 0 && files[j - 1].ni.t1 > tmp.ni.t1) {
			files[j] = files[j - 1];
			j--;
		}
		files[j] = tmp;
	}
}

/* Applies the files not vacuumed away, oldest first, to m. */
static enum tfs_err apply_files(const struct meta_src *src, const char *dir,
				const struct meta_file_ref *files,
				size_t file_num, char *const *hidden,
				size_t hidden_num, struct merge *m,
				struct tfs_diag *d)
{
	enum tfs_err err = TFS_E_OK;
	char *path;

	for (size_t i = 0; i < file_num && !err; i++) {
		if (is_hidden(hidden, hidden_num, files[i].name))
			continue;
		path = tfs_path_join(dir, files[i].name);
		if (!path)
			return meta_oom(src, d);
		err = apply_file(src, m, path, d);
		tfs_free(path);
	}
	return err;
}

static enum tfs_err load(const struct meta_src *src, struct tfs_metadata *out,
			 struct tfs_diag *d)
{
	struct tfs_dirlist l = {NULL, 0};
	struct meta_file_ref *files = NULL;
	size_t file_num = 0;
	char **hidden = NULL;
	size_t hidden_num = 0;
	struct merge m = {NULL, 0, 0};
	char *dir;
	enum tfs_err err;

	dir = tfs_path_join(src->dir, "__meta");
	if (!dir)
		return meta_oom(src, d);
	/* No metadata folder: no metadata (groups often have none). */
	err = tfs_vfs_list_or_empty(src->vfs, dir, &l, d);
	if (err)
		goto out;
	files = tfs_callocn(l.count ? l.count : 1, sizeof(*files));
	if (!files) {
		err = meta_oom(src, d);
		goto out;
	}
	err = collect_files(src, dir, &l, files, &file_num, &hidden,
			    &hidden_num, d);
	if (err)
		goto out;
	sort_files(files, file_num);
	err = apply_files(src, dir, files, file_num, hidden, hidden_num, &m,
			  d);
	if (!err) {
		out->entries = m.kv;
		out->count = m.num;
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
	tfs_free(dir);
	return err;
}

enum tfs_err tfs_metadata_load(struct tfs_vfs *vfs, const char *dir,
			       const char *noun, const uint8_t *key,
			       uint64_t t0, uint64_t t1,
			       struct tfs_metadata *out, struct tfs_diag *d)
{
	const struct meta_src src = {vfs, dir, noun, key, t0, t1};

	out->entries = NULL;
	out->count = 0;
	return load(&src, out, d);
}

enum tfs_err tfs__load_metadata(struct tfs_arraydir *a, struct tfs_diag *d)
{
	return tfs_metadata_load(a->vfs, a->path, "array",
				 a->has_key ? a->key : NULL, a->t0, a->t1,
				 &a->metadata, d);
}
