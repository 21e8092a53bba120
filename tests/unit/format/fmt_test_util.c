/* Helpers of the format unit tests (see fmt_test_util.h). */
#include "fmt_test_util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tfs_alloc.h"

uint8_t *tu_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long size;

	*len = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)size + 1);
	if (!buf)
		goto out;
	if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[size] = 0;
	*len = (size_t)size;
out:
	fclose(f);
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **tu_list(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			names = realloc(names, cap * sizeof(*names));
			cr_assert(names);
		}
		names[(*n)++] = strdup(de->d_name);
	}
	closedir(d);
	if (*n)
		qsort(names, *n, sizeof(*names), cmp_str);
	return names;
}

void tu_free_list(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

char *tu_path(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);

	cr_assert(p);
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

char *tu_path3(const char *a, const char *b, const char *c)
{
	char *ab = tu_path(a, b), *p = tu_path(ab, c);

	free(ab);
	return p;
}

bool tu_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

struct jv *tu_json(const char *array)
{
	char name[512];
	uint8_t *text;
	size_t len;
	struct jv *v;

	snprintf(name, sizeof(name), "%s/%s.json", CORPUS, array);
	text = tu_read(name, &len);
	if (!text)
		return NULL;
	v = json_parse((const char *)text, len);
	free(text);
	cr_assert(v, "cannot parse %s", name);
	return v;
}

bool tu_key(const struct jv *json, uint8_t key[32])
{
	const char *hex = json_str(json_get(json, "key_hex"));

	if (!hex || strlen(hex) != 64)
		return false;
	for (int i = 0; i < 32; i++) {
		unsigned v;

		cr_assert(sscanf(hex + 2 * i, "%2x", &v) == 1);
		key[i] = (uint8_t)v;
	}
	return true;
}

uint8_t *tu_decode(const uint8_t *file, size_t len, const uint8_t *key,
		   size_t *payload_len)
{
	struct tfs_diag d;
	uint8_t *payload;
	size_t consumed;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_generic_tile_decode(file, len, key, TFS_FORMAT_MAX_PAYLOAD,
				    &payload, payload_len, &consumed, &d);
	cr_assert_eq(e, TFS_E_OK, "generic tile decode: %s", tfs_diag_msg(&d));
	cr_assert_eq(consumed, len);
	return payload;
}

char **tu_arrays(size_t *n)
{
	size_t all_n, k = 0;
	char **all = tu_list(CORPUS, &all_n), **out;

	out = calloc(all_n + 1, sizeof(*out));
	cr_assert(out);
	for (size_t i = 0; i < all_n; i++) {
		char *p = tu_path(CORPUS, all[i]);
		char json[1024];
		FILE *f;

		snprintf(json, sizeof(json), "%s.json", p);
		f = fopen(json, "rb");
		if (f && tu_is_dir(p))
			out[k++] = strdup(all[i]);
		if (f)
			fclose(f);
		free(p);
	}
	tu_free_list(all, all_n);
	*n = k;
	return out;
}

uint8_t tu_type_of(const char *name)
{
	for (unsigned t = 0; t <= TFS_DATATYPE_MAX; t++)
		if (!strcmp(tfs_datatype_name(t), name))
			return (uint8_t)t;
	cr_assert_fail("unknown type name %s", name ? name : "(null)");
	return 0;
}

struct tfs_schema *tu_schemas(const char *array_dir, const uint8_t *key,
			      size_t *n)
{
	char *legacy = tu_path(array_dir, "__array_schema.tdb");
	char *dir = tu_path(array_dir, "__schema");
	size_t names_n, len, k = 0;
	char **names = tu_list(dir, &names_n);
	struct tfs_schema *out = calloc(names_n + 2, sizeof(*out));
	uint8_t *file;
	struct tfs_diag d;

	cr_assert(out);
	file = tu_read(legacy, &len);
	if (file) {
		tfs_diag_init(&d);
		cr_assert_eq(tfs_schema_decode(&out[k++], file, len,
					       "__array_schema.tdb", key, &d),
			     TFS_E_OK, "%s: %s", legacy, d.msg);
		free(file);
	}
	for (size_t i = 0; i < names_n; i++) {
		char *path;

		if (!strcmp(names[i], "__enumerations"))
			continue;
		path = tu_path(dir, names[i]);
		file = tu_read(path, &len);
		cr_assert(file, "%s", path);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_schema_decode(&out[k++], file, len, names[i],
					       key, &d),
			     TFS_E_OK, "%s: %s", path, d.msg);
		free(file);
		free(path);
	}
	tu_free_list(names, names_n);
	free(dir);
	free(legacy);
	*n = k;
	return out;
}

void tu_free_schemas(struct tfs_schema *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tfs_schema_release(&s[i]);
	free(s);
}

const struct tfs_schema *tu_schema_named(const struct tfs_schema *s, size_t n,
					 const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].name && !strcmp(s[i].name, name))
			return &s[i];
	return NULL;
}

static bool has_meta_file(const char *dir)
{
	char *p = tu_path(dir, "__fragment_metadata.tdb");
	FILE *f = fopen(p, "rb");

	free(p);
	if (f)
		fclose(f);
	return f != NULL;
}

char **tu_fragment_dirs(const char *array_dir, size_t *n)
{
	char *fdir = tu_path(array_dir, "__fragments");
	size_t rn, fn, k = 0;
	char **root = tu_list(array_dir, &rn), **frs = tu_list(fdir, &fn);
	char **out = calloc(rn + fn + 1, sizeof(*out));

	cr_assert(out);
	for (size_t i = 0; i < rn; i++) {
		char *p = tu_path(array_dir, root[i]);

		if (tu_is_dir(p) && has_meta_file(p))
			out[k++] = p;
		else
			free(p);
	}
	for (size_t i = 0; i < fn; i++) {
		char *p = tu_path(fdir, frs[i]);

		if (tu_is_dir(p) && has_meta_file(p))
			out[k++] = p;
		else
			free(p);
	}
	tu_free_list(root, rn);
	tu_free_list(frs, fn);
	free(fdir);
	*n = k;
	return out;
}

static size_t each_member(const char *rel, const struct jv *group,
			  void (*fn)(const char *, const struct jv *, void *),
			  void *ctx)
{
	const struct jv *members = json_get(group, "members");
	size_t calls = 0;

	for (size_t i = 0; members && i < members->n; i++) {
		const struct jv *m = json_at(members, i);
		const struct jv *content = json_get(m, "content");
		char *sub = tu_path(rel, json_str(json_get(m, "path")));

		if (!strcmp(json_str(json_get(m, "type")), "group")) {
			calls += each_member(sub, content, fn, ctx);
		} else {
			fn(sub, content, ctx);
			calls++;
		}
		free(sub);
	}
	return calls;
}

size_t tu_each_array(void (*fn)(const char *rel, const struct jv *json,
				void *ctx),
		     void *ctx)
{
	size_t n, calls = 0;
	char **arrays = tu_arrays(&n);

	for (size_t i = 0; i < n; i++) {
		struct jv *json = tu_json(arrays[i]);

		if (json_get(json, "schema")) {
			fn(arrays[i], json, ctx);
			calls++;
		} else {
			calls += each_member(arrays[i], json, fn, ctx);
		}
		json_free(json);
	}
	tu_free_list(arrays, n);
	return calls;
}
