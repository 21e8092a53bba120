/* Helpers of the robustness tests (robust_util.h). */
#include "robust_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfs_alloc.h"

#define RB_MAX_FILE ((size_t)256 << 20)
#define RB_MAX_COLUMNS 256

static bool add_file(struct rb_array *a, const char *rel, uint8_t *data,
		     size_t len)
{
	struct rb_file *f = realloc(a->files, (a->file_num + 1) * sizeof(*f));

	if (!f)
		return false;
	a->files = f;
	f[a->file_num].rel = strdup(rel);
	f[a->file_num].data = data;
	f[a->file_num].len = len;
	if (!f[a->file_num].rel)
		return false;
	a->file_num++;
	return true;
}

/* Walks dir/rel depth first, in the listing's (sorted) order, so the file
 * indexes that the tests' seeds pick are stable. */
static bool load_dir(struct rb_array *a, struct tfs_vfs *v, const char *top,
		     const char *rel)
{
	char path[4096], child[4096];
	struct tfs_dirlist l;
	struct tfs_diag d;
	bool ok = true;

	snprintf(path, sizeof(path), "%s%s%s", top, *rel ? "/" : "", rel);
	tfs_diag_init(&d);
	if (tfs_vfs_list(v, path, &l, &d)) {
		fprintf(stderr, "list %s: %s\n", path, d.msg);
		return false;
	}
	for (size_t i = 0; ok && i < l.count; i++) {
		struct tfs_stat st;
		char full[8192];

		snprintf(child, sizeof(child), "%s%s%s", rel, *rel ? "/" : "",
			 l.names[i]);
		snprintf(full, sizeof(full), "%s/%s", top, child);
		tfs_diag_init(&d);
		if (tfs_vfs_stat(v, full, &st, &d)) {
			fprintf(stderr, "stat %s: %s\n", full, d.msg);
			ok = false;
		} else if (st.is_dir) {
			ok = load_dir(a, v, top, child);
		} else {
			uint8_t *data;
			size_t len;

			tfs_diag_init(&d);
			if (tfs_vfs_read_all(v, full, RB_MAX_FILE, &data, &len,
					     &d)) {
				fprintf(stderr, "read %s: %s\n", full, d.msg);
				ok = false;
			} else if (!add_file(a, child, data, len)) {
				tfs_free(data);
				ok = false;
			}
		}
	}
	tfs_dirlist_release(&l);
	return ok;
}

bool rb_array_load(struct rb_array *a, const char *dir, const char *name)
{
	struct tfs_vfs *v;
	bool ok;

	memset(a, 0, sizeof(*a));
	a->name = strdup(name);
	if (!a->name || tfs_vfs_posix_new(&v))
		return false;
	ok = load_dir(a, v, dir, "");
	tfs_vfs_free(v);
	return ok;
}

void rb_array_release(struct rb_array *a)
{
	for (size_t i = 0; i < a->file_num; i++) {
		free(a->files[i].rel);
		tfs_free(a->files[i].data);
	}
	free(a->files);
	free(a->name);
	memset(a, 0, sizeof(*a));
}

/* mkdir -p of the folders above path (which starts with '/'). */
static bool make_parents(struct tfs_vfs *v, char *path)
{
	for (char *p = path + 1; *p; p++) {
		struct tfs_diag d;
		enum tfs_err e;

		if (*p != '/')
			continue;
		*p = '\0';
		tfs_diag_init(&d);
		e = tfs_vfs_mkdir(v, path, &d);
		*p = '/';
		if (e)
			return false;
	}
	return true;
}

struct tfs_vfs *rb_array_to_mem(const struct rb_array *a,
				const struct rb_subst *subst, size_t subst_num)
{
	struct tfs_vfs *v;
	struct tfs_diag d;

	if (tfs_vfs_mem_new(&v))
		return NULL;
	tfs_diag_init(&d);
	if (tfs_vfs_mkdir(v, RB_ROOT, &d))
		goto out_free;
	for (size_t i = 0; i < a->file_num; i++) {
		const uint8_t *data = a->files[i].data;
		size_t len = a->files[i].len;
		char path[4096];

		for (size_t s = 0; s < subst_num; s++) {
			if (subst[s].index == i) {
				data = subst[s].data;
				len = subst[s].len;
			}
		}
		snprintf(path, sizeof(path), RB_ROOT "/%s", a->files[i].rel);
		tfs_diag_init(&d);
		if (!make_parents(v, path) ||
		    tfs_vfs_write(v, path, data, len, &d))
			goto out_free;
	}
	return v;
out_free:
	tfs_vfs_free(v);
	return NULL;
}

static enum tfs_err put_str(struct tfs_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	enum tfs_err e = tfs_buf_append_u64(b, n);

	return e ? e : tfs_buf_append(b, s, n);
}

static enum tfs_err put_metadata(struct tfs_buf *b, const struct tfs_array *arr)
{
	size_t n = tfs_array_metadata_count(arr);
	enum tfs_err e = tfs_buf_append_u64(b, n);

	for (size_t i = 0; !e && i < n; i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(arr, i);
		size_t vlen = (size_t)kv->value_num *
			      tfs_datatype_size(kv->type);

		e = tfs_buf_append_u32(b, kv->key_len);
		if (!e)
			e = tfs_buf_append(b, kv->key, kv->key_len);
		if (!e)
			e = tfs_buf_append_u8(b, kv->type);
		if (!e)
			e = tfs_buf_append_u8(b, kv->deleted);
		if (!e)
			e = tfs_buf_append_u64(b, vlen);
		if (!e)
			e = tfs_buf_append(b, kv->value, vlen);
	}
	return e;
}

static enum tfs_err put_fragments(struct tfs_buf *b,
				  const struct tfs_array *arr)
{
	size_t n = tfs_array_fragment_count(arr);
	enum tfs_err e = tfs_buf_append_u64(b, n);

	for (size_t i = 0; !e && i < n; i++) {
		struct tfs_fragment_info fi;

		tfs_array_fragment(arr, i, &fi);
		e = put_str(b, fi.name);
		if (!e)
			e = tfs_buf_append_u64(b, fi.t1);
		if (!e)
			e = tfs_buf_append_u64(b, fi.t2);
		if (!e)
			e = tfs_buf_append_u64(b, fi.visible);
	}
	return e;
}

/* Appends one batch's column: var-size cells as their lengths then their
 * bytes, then the validity bytes. Checks what the API promises (offsets
 * that grow and stay inside the data): a broken promise is the engine's
 * bug, TFS_E_INTERNAL. */
static enum tfs_err put_column(struct tfs_buf *b, const struct tfs_column *c,
			       uint64_t cells, struct tfs_diag *d)
{
	enum tfs_err e = TFS_E_OK;

	if (c->var) {
		if (!c->offsets || c->offsets[0] != 0 ||
		    c->offsets[cells] > c->data_len)
			return tfs_fail(d, TFS_E_INTERNAL,
					"column '%s': offsets outside its data",
					c->name);
		for (uint64_t i = 0; !e && i < cells; i++) {
			if (c->offsets[i + 1] < c->offsets[i])
				return tfs_fail(d, TFS_E_INTERNAL,
						"column '%s': offsets go back",
						c->name);
			e = tfs_buf_append_u64(b, c->offsets[i + 1] -
							  c->offsets[i]);
		}
	}
	if (!e && c->data_len)
		e = tfs_buf_append(b, c->data, (size_t)c->data_len);
	if (!e && c->nullable)
		e = tfs_buf_append(b, c->validity, (size_t)cells);
	return e;
}

enum tfs_err rb_read(struct tfs_vfs *v, const uint8_t *key,
		     const struct rb_limits *lim, struct tfs_buf *out,
		     struct tfs_diag *d)
{
	struct tfs_buf cols[RB_MAX_COLUMNS];
	const char *names[RB_MAX_COLUMNS];
	struct tfs_open_opts oo;
	struct tfs_query_opts qo;
	const struct tfs_batch *bt;
	struct tfs_array *arr;
	struct tfs_query *q;
	size_t col_num = 0;
	uint64_t total = 0;
	enum tfs_err e;

	memset(&oo, 0, sizeof(oo));
	oo.vfs = v;
	oo.key = key;
	oo.threads = lim->threads;
	oo.cache = lim->cache;
	e = tfs_array_open(RB_ROOT, &oo, &arr, d);
	if (e)
		return e;
	e = put_metadata(out, arr);
	if (!e)
		e = put_fragments(out, arr);
	if (e) {
		tfs_fail(d, e, "canonical form: %s", tfs_strerror(e));
		goto out_close;
	}
	memset(&qo, 0, sizeof(qo));
	qo.batch_cells = 4096;
	e = tfs_query_open(arr, &qo, &q, d);
	if (e)
		goto out_close;
	if (tfs_query_cell_count(q) != UINT64_MAX &&
	    tfs_query_cell_count(q) > lim->max_cells) {
		e = tfs_fail(d, TFS_E_TOO_BIG, "query of %llu cells",
			     (unsigned long long)tfs_query_cell_count(q));
		goto out_query;
	}
	for (;;) {
		e = tfs_query_next(q, &bt, d);
		if (e || !bt)
			break;
		total += bt->cell_num;
		if (total > lim->max_cells) {
			e = tfs_fail(d, TFS_E_TOO_BIG, "more than %llu cells",
				     (unsigned long long)lim->max_cells);
			break;
		}
		if (col_num == 0) {
			if (bt->column_num == 0 ||
			    bt->column_num > RB_MAX_COLUMNS) {
				e = tfs_fail(d, TFS_E_INTERNAL,
					     "%zu columns", bt->column_num);
				break;
			}
			col_num = bt->column_num;
			for (size_t i = 0; i < col_num; i++) {
				tfs_buf_init(&cols[i], TFS_BUF_NO_MAX);
				names[i] = bt->columns[i].name;
			}
		} else if (bt->column_num != col_num) {
			e = tfs_fail(d, TFS_E_INTERNAL,
				     "batches of %zu then %zu columns",
				     col_num, bt->column_num);
			break;
		}
		for (size_t i = 0; !e && i < col_num; i++)
			e = put_column(&cols[i], &bt->columns[i],
				       bt->cell_num, d);
		if (e)
			break;
	}
	if (!e)
		e = tfs_buf_append_u64(out, total);
	for (size_t i = 0; i < col_num; i++) {
		if (!e)
			e = put_str(out, names[i]);
		if (!e)
			e = tfs_buf_append_u64(out, cols[i].len);
		if (!e)
			e = tfs_buf_append(out, cols[i].data, cols[i].len);
		tfs_buf_release(&cols[i]);
	}
	if (e)
		tfs_fail(d, e, "query: %s", tfs_strerror(e));
out_query:
	tfs_query_close(q);
out_close:
	tfs_array_close(arr);
	return e;
}

const char *rb_corpus_dir(void)
{
	const char *env = getenv("TFS_CORPUS");

	return env && *env ? env : TFS_CORPUS_DIR;
}

bool rb_corpus_key(uint8_t key[32])
{
	char path[4096], text[8192], hex[65];
	const char *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/encrypted.json", rb_corpus_dir());
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	p = strstr(text, "\"key_hex\":\"");
	if (!p || strlen(p) < 11 + 64)
		return false;
	memcpy(hex, p + 11, 64);
	hex[64] = '\0';
	return tfs_key_from_hex(key, hex) == TFS_E_OK;
}

double rb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

unsigned long rb_env_ulong(const char *name, unsigned long def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	return *end ? def : v;
}
