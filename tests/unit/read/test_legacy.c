/* Format versions 1 to 23 through the public API, on arrays the test-array
 * builder (legacy_builder.h) writes byte by byte from the format
 * description: every version boundary the corpus does not cover (old root
 * layout, legacy fragment metadata, zipped and unzipped `__coords.tdb`,
 * old footers, per-dimension files, fill values, nullable attributes,
 * percent-encoded and index file names, `__schema/`, `__fragments/`,
 * consolidated fragment metadata by URI and by name, mixed layouts after
 * an upgrade). Each array is written to a temporary folder, opened with
 * tfs_array_open and compared cell by cell with a model of what was
 * written. */
#include <criterion/criterion.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "legacy_builder.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tilefs/tilefs.h"

/* ---- temporary folders --------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

struct tmp {
	char dir[64];
	struct tfs_vfs *vfs;
};

static void tmp_new(struct tmp *t)
{
	cr_assert_not_null(tfs_temp_template(t->dir, sizeof(t->dir), "/tmp", "tfs_legacy_"));
	cr_assert_not_null(mkdtemp(t->dir));
	cr_assert_eq(tfs_vfs_posix_new(&t->vfs), TFS_E_OK);
}

/* TFS_LEGACY_KEEP=1 keeps the folders, to look at what was written. */
static void tmp_free(struct tmp *t)
{
	if (!getenv("TFS_LEGACY_KEEP"))
		nftw(t->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	tfs_vfs_free(t->vfs);
}

static char *path_of(const struct tmp *t, const char *name)
{
	char *p;

	cr_assert_neq(asprintf(&p, "%s/%s", t->dir, name), -1);
	return p;
}

static bool exists(const char *dir, const char *rel)
{
	char *p;
	bool ok;

	cr_assert_neq(asprintf(&p, "%s/%s", dir, rel), -1);
	ok = access(p, F_OK) == 0;
	free(p);
	return ok;
}

/* ---- reading cells as text ----------------------------------------------- */

struct rows {
	char **v;
	size_t n, cap;
};

static void rows_add(struct rows *r, char *line)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		cr_assert(r->v);
	}
	r->v[r->n++] = line;
}

static void rows_free(struct rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i]);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

static bool is_text(uint8_t type)
{
	return type == TFS_CHAR || tfs_datatype_is_string(type);
}

/* One value in the text both sides of a comparison use. */
static void put_value(FILE *o, uint8_t type, const uint8_t *p, size_t len,
		      bool valid)
{
	size_t tsz = tfs_datatype_size(type);

	if (!valid) {
		fputs("null", o);
		return;
	}
	if (is_text(type)) {
		fputc('"', o);
		fwrite(p, 1, len, o);
		fputc('"', o);
		return;
	}
	for (size_t i = 0; i + tsz <= len; i += tsz) {
		if (i)
			fputc(',', o);
		switch (tfs_datatype_class(type)) {
		case TFS_CLASS_FLOAT:
			fprintf(o, "%.17g", tfs_value_as_f64(type, p + i));
			break;
		case TFS_CLASS_UNSIGNED:
			fprintf(o, "%llu",
				(unsigned long long)tfs_value_as_u64(type, p + i));
			break;
		default:
			fprintf(o, "%lld",
				(long long)tfs_value_as_i64(type, p + i));
		}
	}
}

static void batch_rows(const struct tfs_batch *b, struct rows *out)
{
	for (uint64_t i = 0; i < b->cell_num; i++) {
		char *line;
		size_t len;
		FILE *o = open_memstream(&line, &len);

		for (size_t f = 0; f < b->column_num; f++) {
			const struct tfs_column *c = &b->columns[f];
			const uint8_t *p;
			size_t n;

			if (c->var) {
				p = c->data + c->offsets[i];
				n = (size_t)(c->offsets[i + 1] - c->offsets[i]);
			} else {
				n = (size_t)(c->data_len / b->cell_num);
				p = c->data + i * n;
			}
			fprintf(o, "%s%s=", f ? ";" : "", c->name);
			put_value(o, c->type, p, n,
				  !c->nullable || c->validity[i]);
		}
		fclose(o);
		rows_add(out, line);
	}
}

static void query_rows(struct tfs_array *a, const struct tfs_range *sub,
		       uint64_t batch, struct rows *out)
{
	struct tfs_query_opts qo = {.subarray = sub, .batch_cells = batch};
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		batch_rows(b, out);
	}
	tfs_query_close(q);
}

static struct tfs_array *open_at(const char *path, uint64_t ts)
{
	struct tfs_open_opts o = {.threads = 2, .timestamp = ts};
	struct tfs_array *a;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(path, &o, &a, &d), TFS_E_OK, "%s: %s",
		     path, tfs_diag_msg(&d));
	return a;
}

static void assert_rows(const struct rows *got, const struct rows *want,
			const char *what)
{
	for (size_t i = 0; i < got->n && i < want->n; i++)
		cr_assert_str_eq(got->v[i], want->v[i], "%s: row %zu", what, i);
	cr_assert_eq(got->n, want->n, "%s: %zu rows, expected %zu", what,
		     got->n, want->n);
}

/* Reads path whole (and in batches of 3 cells) and compares. */
static void check_read(const char *path, const struct tfs_range *sub,
		       const struct rows *want, const char *what)
{
	struct tfs_array *a = open_at(path, 0);
	struct rows got = {0}, small = {0};

	query_rows(a, sub, 0, &got);
	assert_rows(&got, want, what);
	query_rows(a, sub, 3, &small);
	assert_rows(&small, want, what);
	rows_free(&got);
	rows_free(&small);
	tfs_array_close(a);
}

/* ---- the model ----------------------------------------------------------- */

/* Attribute names; version 8 arrays use ones that need escapes. */
struct names {
	const char *d0, *d1, *a, *s, *m, *n;
};

static const struct names plain = {"r", "c", "a", "s", "m", "n"};
static const struct names odd = {"r:ow", "c|ol", "a b!", "s#$%&'()",
				 "m*+,/;=?@", "n[]\"<>\\"};

struct scen {
	uint32_t sv;       /* schema version */
	uint32_t fv;       /* fragment version */
	const struct names *nm;
	bool coords_zip;   /* a compressor in the coords filters */
	bool attr_filters; /* compressors and shuffles on attributes */
	bool custom_fill;  /* v6+: fill value of a is -7 */
	bool sparse_frag;  /* dense arrays: a third, sparse fragment */
	bool meta;         /* consolidated fragment metadata (v3+ frags) */
	const char *meta_prefix; /* URI prefix of .meta entries < v9 */
};

static int32_t val_a(int k, int64_t x, int64_t y)
{
	return (int32_t)(k * 100000 + x * 100 + y);
}

/* Strings of 0 to 5 letters, empty ones included. */
static char *val_s(int k, int64_t x, int64_t y)
{
	size_t n = (size_t)((x * 7 + y * 3 + k) % 6 + 6) % 6;
	char *s = calloc(n + 1, 1);

	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + (x + y + k + (int64_t)i + 26 * 4) % 26);
	return s;
}

static void val_m(int k, int64_t x, int64_t y, double out[2])
{
	out[0] = (double)x + 0.25 * k;
	out[1] = -1.5 * (double)y;
}

static int32_t val_n(int k, int64_t x, int64_t y, uint8_t *valid)
{
	*valid = ((x + y) % 3 + 3) % 3 != 0;
	return (int32_t)(x * y * k);
}

/* The expected row of a cell written by fragment k (0: never written)
 * whose schema had the first `written` attributes of s. */
static char *model_row_of(const struct scen *sc, const struct tfs_schema *s,
			  int k, uint32_t written, int64_t x, int64_t y)
{
	char *line;
	size_t len;
	FILE *o = open_memstream(&line, &len);
	uint8_t dims[2][8];

	for (uint32_t d = 0; d < 2; d++) {
		int64_t v = d ? y : x;

		memcpy(dims[d], &v, 8); /* little-endian hosts */
		fprintf(o, "%s%s=", d ? ";" : "", d ? sc->nm->d1 : sc->nm->d0);
		put_value(o, s->dims[d].type, dims[d],
			  tfs_datatype_size(s->dims[d].type), true);
	}
	for (uint32_t i = 0; i < s->attr_num; i++) {
		const struct tfs_attr *at = &s->attrs[i];

		fprintf(o, ";%s=", at->name);
		if (!k || i >= written) {
			put_value(o, at->type, at->fill, (size_t)at->fill_size,
				  !at->nullable || at->fill_valid);
		} else if (i == 0) {
			int32_t v = val_a(k, x, y);

			put_value(o, at->type, (uint8_t *)&v, 4, true);
		} else if (i == 1) {
			char *str = val_s(k, x, y);

			put_value(o, at->type, (uint8_t *)str, strlen(str), true);
			free(str);
		} else if (i == 2) {
			double m[2];

			val_m(k, x, y, m);
			put_value(o, at->type, (uint8_t *)m, 16, true);
		} else {
			uint8_t valid;
			int32_t v = val_n(k, x, y, &valid);

			put_value(o, at->type, (uint8_t *)&v, 4, valid);
		}
	}
	fclose(o);
	return line;
}

static char *model_row(const struct scen *sc, const struct tfs_schema *s,
		       int k, int64_t x, int64_t y)
{
	return model_row_of(sc, s, k, s->attr_num, x, y);
}

static void schema_for(const struct scen *sc, bool sparse, struct tfs_schema *s)
{
	uint8_t dt = sparse ? TFS_INT64 : TFS_INT32;
	struct tfs_attr *a, *str, *m;

	lb_schema_init(s, sc->sv, sparse, 3);
	if (sparse) {
		lb_add_dim(s, sc->nm->d0, dt, 0, 100, 10);
		lb_add_dim(s, sc->nm->d1, dt, -50, 50, 25);
	} else {
		lb_add_dim(s, sc->nm->d0, dt, 1, 6, 4);
		lb_add_dim(s, sc->nm->d1, dt, 1, 5, 2);
	}
	a = lb_add_attr(s, sc->nm->a, TFS_INT32, 1, false);
	str = lb_add_attr(s, sc->nm->s, TFS_CHAR, TFS_VAR_NUM, false);
	m = lb_add_attr(s, sc->nm->m, TFS_FLOAT64, 2, false);
	if (sc->sv >= 7)
		lb_add_attr(s, sc->nm->n, TFS_INT32, 1, true);
	if (sc->custom_fill && sc->sv >= 6) {
		int32_t fill = -7;

		lb_set_fill(a, &fill, 4);
	}
	if (sc->coords_zip)
		lb_add_filter(&s->coords_filters, TFS_FILTER_GZIP);
	if (sc->attr_filters) {
		lb_add_filter(&a->filters, TFS_FILTER_GZIP);
		lb_add_filter(&str->filters, TFS_FILTER_ZSTD);
		lb_add_filter(&m->filters, TFS_FILTER_BYTESHUFFLE);
		lb_add_filter(&m->filters, TFS_FILTER_LZ4);
		lb_add_filter(&s->offsets_filters, TFS_FILTER_ZSTD);
	}
}

/* Values of one fragment's cells, kept alive while it is written. */
struct fvals {
	uint64_t n;
	int64_t *x, *y;   /* coordinates (int64) */
	int32_t *x32, *y32;
	int32_t *a, *nv;
	char **s;
	double *m;
	uint8_t *valid;
};

static void fvals_fill(struct fvals *v, int k, uint64_t n, const int64_t *x,
		       const int64_t *y)
{
	memset(v, 0, sizeof(*v));
	v->n = n;
	v->x = calloc(n, 8);
	v->y = calloc(n, 8);
	v->x32 = calloc(n, 4);
	v->y32 = calloc(n, 4);
	v->a = calloc(n, 4);
	v->nv = calloc(n, 4);
	v->s = calloc(n, sizeof(char *));
	v->m = calloc(2 * n, 8);
	v->valid = calloc(n, 1);
	for (uint64_t i = 0; i < n; i++) {
		v->x[i] = x[i];
		v->y[i] = y[i];
		v->x32[i] = (int32_t)x[i];
		v->y32[i] = (int32_t)y[i];
		v->a[i] = val_a(k, x[i], y[i]);
		v->s[i] = val_s(k, x[i], y[i]);
		val_m(k, x[i], y[i], v->m + 2 * i);
		v->nv[i] = val_n(k, x[i], y[i], &v->valid[i]);
	}
}

static void fvals_free(struct fvals *v)
{
	for (uint64_t i = 0; i < v->n; i++)
		free(v->s[i]);
	free(v->x);
	free(v->y);
	free(v->x32);
	free(v->y32);
	free(v->a);
	free(v->nv);
	free(v->s);
	free(v->m);
	free(v->valid);
}

static void frag_of(struct lb_frag *f, const struct fvals *v, uint32_t version,
		    uint64_t t, bool wide_coords)
{
	memset(f, 0, sizeof(*f));
	f->version = version;
	f->t1 = t;
	f->cell_num = v->n;
	f->dims[0].data = wide_coords ? (const void *)v->x : (const void *)v->x32;
	f->dims[1].data = wide_coords ? (const void *)v->y : (const void *)v->y32;
	f->attrs[0].data = v->a;
	f->attrs[1].strs = (const char *const *)v->s;
	f->attrs[2].data = v->m;
	f->attrs[3].data = v->nv;
	f->attrs[3].validity = v->valid;
}

/* A dense box [r0,r1] × [c0,c1] written by fragment k. */
static void dense_box(struct fvals *v, int k, int64_t r0, int64_t r1,
		      int64_t c0, int64_t c1)
{
	uint64_t n = (uint64_t)((r1 - r0 + 1) * (c1 - c0 + 1)), i = 0;
	int64_t *x = calloc(n, 8), *y = calloc(n, 8);

	for (int64_t r = r0; r <= r1; r++)
		for (int64_t c = c0; c <= c1; c++, i++) {
			x[i] = r;
			y[i] = c;
		}
	fvals_fill(v, k, n, x, y);
	free(x);
	free(y);
}

static void check_fragment_info(struct tfs_array *arr, size_t want,
				uint32_t version, const char *what)
{
	cr_assert_eq(tfs_array_fragment_count(arr), want, "%s", what);
	for (size_t i = 0; i < want; i++) {
		struct tfs_fragment_info fi;

		tfs_array_fragment(arr, i, &fi);
		cr_assert_eq(fi.version, version, "%s: fragment %zu", what, i);
		cr_assert(fi.visible, "%s", what);
		cr_assert_str_eq(fi.schema_name,
				 version < 10 ? "__array_schema.tdb"
					      : tfs_array_schema(arr)->name,
				 "%s", what);
		cr_assert_eq(fi.t1, 1000 * (i + 1), "%s", what);
	}
}

/* ---- dense --------------------------------------------------------------- */

static void dense_case(const struct scen *sc)
{
	struct tmp t;
	struct lb_array arr;
	struct tfs_schema spec;
	struct lb_written w[3];
	struct fvals v[3];
	struct lb_frag f;
	int owner[7][6] = {{0}};
	struct rows want = {0};
	int32_t lo[2] = {1, 1}, hi[2] = {6, 5};
	struct tfs_range sub[2] = {
		{(uint8_t *)&lo[0], (uint8_t *)&hi[0], 4, 4},
		{(uint8_t *)&lo[1], (uint8_t *)&hi[1], 4, 4},
	};
	static const int64_t box[2][4] = {{1, 4, 2, 5}, {3, 6, 1, 3}};
	static const int64_t sx[] = {6, 1, 2, 5}, sy[] = {5, 1, 4, 2};
	char *dir, what[64];
	size_t frags = sc->sparse_frag ? 3 : 2;
	struct tfs_array *a;

	snprintf(what, sizeof(what), "dense v%u/v%u", sc->sv, sc->fv);
	tmp_new(&t);
	dir = path_of(&t, "A");
	schema_for(sc, false, &spec);
	lb_array_create(&arr, t.vfs, dir, &spec, 500);
	for (int k = 0; k < 2; k++) {
		dense_box(&v[k], k + 1, box[k][0], box[k][1], box[k][2],
			  box[k][3]);
		frag_of(&f, &v[k], sc->fv, 1000 * (uint64_t)(k + 1), false);
		for (int d = 0; d < 2; d++) {
			f.lo[d] = box[k][2 * d];
			f.hi[d] = box[k][2 * d + 1];
		}
		lb_write_fragment(&arr, &f, &w[k]);
		for (int64_t r = box[k][0]; r <= box[k][1]; r++)
			for (int64_t c = box[k][2]; c <= box[k][3]; c++)
				owner[r][c] = k + 1;
	}
	if (sc->sparse_frag) {
		/* A sparse write into the dense array (TileDB < 2.x). */
		fvals_fill(&v[2], 3, 4, sx, sy);
		frag_of(&f, &v[2], sc->fv, 3000, false);
		f.sparse = true;
		lb_write_fragment(&arr, &f, &w[2]);
		for (int i = 0; i < 4; i++)
			owner[sx[i]][sy[i]] = 3;
	}
	if (sc->meta)
		lb_write_meta(&arr, sc->fv, 1000, 3000, w, frags,
			      sc->meta_prefix);
	for (int64_t r = 1; r <= 6; r++)
		for (int64_t c = 1; c <= 5; c++)
			rows_add(&want, model_row(sc, lb_schema_for(&arr, sc->fv),
						  owner[r][c], r, c));
	check_read(dir, sub, &want, what);

	a = open_at(dir, 0);
	check_fragment_info(a, frags, sc->fv, what);
	for (size_t i = 0; i < frags; i++) {
		struct tfs_fragment_info fi;

		tfs_array_fragment(a, i, &fi);
		cr_assert_str_eq(fi.name, w[i].name, "%s", what);
		cr_assert_eq(fi.dense, i < 2, "%s", what);
		cr_assert_eq(fi.consolidated_metadata, sc->meta, "%s", what);
	}
	tfs_array_close(a);

	for (size_t i = 0; i < frags; i++) {
		lb_written_release(&w[i]);
		fvals_free(&v[i]);
	}
	rows_free(&want);
	lb_array_release(&arr);
	tfs_schema_release(&spec);
	free(dir);
	tmp_free(&t);
}

/* Where the files of a sparse fragment are, by version (layout.md §1,
 * fragment.md §2): the read succeeding proves the reader looks there. */
static void check_layout(const char *dir, const struct scen *sc,
			 const struct lb_written *w)
{
	uint32_t v = sc->fv;
	bool escaped = v == 8 && sc->nm == &odd;
	char *p;

	cr_assert_eq(exists(dir, "__array_schema.tdb"), v < 10, "v%u", v);
	cr_assert_eq(exists(dir, "__schema"), v >= 10, "v%u", v);
	cr_assert_eq(exists(dir, "__fragments"), v >= 12, "v%u", v);
	cr_assert_neq(asprintf(&p, "%s.ok", w->name), -1);
	cr_assert_eq(exists(dir, p), v >= 5 && v < 12, "v%u", v);
	free(p);
	cr_assert_neq(asprintf(&p, "__commits/%s.wrt", w->name), -1);
	cr_assert_eq(exists(dir, p), v >= 12, "v%u", v);
	free(p);
	if (v < 5) {
		cr_assert_neq(asprintf(&p, "%s/__coords.tdb", w->rel), -1);
	} else if (v < 9 && !escaped) {
		cr_assert_neq(asprintf(&p, "%s/%s.tdb", w->rel, sc->nm->d0), -1);
	} else if (escaped) {
		cr_assert_neq(asprintf(&p, "%s/r%%3Aow.tdb", w->rel), -1);
	} else {
		cr_assert_neq(asprintf(&p, "%s/d0.tdb", w->rel), -1);
	}
	cr_assert(exists(dir, p), "v%u: %s", v, p);
	free(p);
	if (escaped)
		cr_assert_neq(asprintf(&p, "%s/s%%23%%24%%25%%26%%27%%28%%29_var.tdb",
				       w->rel), -1);
	else if (v < 9)
		cr_assert_neq(asprintf(&p, "%s/%s_var.tdb", w->rel, sc->nm->s), -1);
	else
		cr_assert_neq(asprintf(&p, "%s/a1_var.tdb", w->rel), -1);
	cr_assert(exists(dir, p), "v%u: %s", v, p);
	free(p);
	if (v >= 7) {
		if (escaped)
			cr_assert_neq(asprintf(&p, "%s/n%%5B%%5D%%22%%20%%2D%%30_validity.tdb",
					       w->rel), -1);
		else if (v < 9)
			cr_assert_neq(asprintf(&p, "%s/n_validity.tdb", w->rel), -1);
		else
			cr_assert_neq(asprintf(&p, "%s/a3_validity.tdb", w->rel), -1);
		cr_assert(exists(dir, p), "v%u: %s", v, p);
		free(p);
	}
}

/* ---- sparse -------------------------------------------------------------- */

static const int64_t sp1_x[] = {7, 0, 100, 55, 7, 31, 99, 12, 64, 3, 45};
static const int64_t sp1_y[] = {-3, -50, 50, 0, 49, 12, -25, -26, 24, 25, -1};
static const int64_t sp2_x[] = {55, 12, 88, 0, 7};
static const int64_t sp2_y[] = {0, -26, 1, 50, -3};

struct cellref {
	int64_t x, y;
	int k;
};

static int cellref_cmp(const void *p, const void *q)
{
	const struct cellref *a = p, *b = q;

	if (a->x != b->x)
		return a->x < b->x ? -1 : 1;
	return a->y < b->y ? -1 : a->y > b->y;
}

static void sparse_case(const struct scen *sc)
{
	struct tmp t;
	struct lb_array arr;
	struct tfs_schema spec;
	struct lb_written w[2];
	struct fvals v[2];
	struct lb_frag f;
	struct cellref cells[16];
	size_t n = 0;
	struct rows want = {0};
	char *dir, what[64];
	struct tfs_array *a;

	snprintf(what, sizeof(what), "sparse v%u/v%u", sc->sv, sc->fv);
	tmp_new(&t);
	dir = path_of(&t, "A");
	schema_for(sc, true, &spec);
	lb_array_create(&arr, t.vfs, dir, &spec, 500);
	fvals_fill(&v[0], 1, 11, sp1_x, sp1_y);
	fvals_fill(&v[1], 2, 5, sp2_x, sp2_y);
	for (int k = 0; k < 2; k++) {
		frag_of(&f, &v[k], sc->fv, 1000 * (uint64_t)(k + 1), true);
		lb_write_fragment(&arr, &f, &w[k]);
	}
	if (sc->sv == sc->fv)
		check_layout(dir, sc, &w[0]);
	if (sc->meta)
		lb_write_meta(&arr, sc->fv, 1000, 2000, w, 2, sc->meta_prefix);
	/* Newest wins on equal coordinates (no duplicates allowed). */
	for (int k = 0; k < 2; k++) {
		const int64_t *x = k ? sp2_x : sp1_x, *y = k ? sp2_y : sp1_y;

		for (uint64_t i = 0; i < v[k].n; i++) {
			size_t j;

			for (j = 0; j < n; j++)
				if (cells[j].x == x[i] && cells[j].y == y[i])
					break;
			cells[j].x = x[i];
			cells[j].y = y[i];
			cells[j].k = k + 1;
			if (j == n)
				n++;
		}
	}
	qsort(cells, n, sizeof(*cells), cellref_cmp);
	for (size_t i = 0; i < n; i++)
		rows_add(&want, model_row(sc, lb_schema_for(&arr, sc->fv),
					  cells[i].k, cells[i].x, cells[i].y));
	check_read(dir, NULL, &want, what);

	a = open_at(dir, 0);
	check_fragment_info(a, 2, sc->fv, what);
	for (size_t i = 0; i < 2; i++) {
		struct tfs_fragment_info fi;

		tfs_array_fragment(a, i, &fi);
		cr_assert_str_eq(fi.name, w[i].name, "%s", what);
		cr_assert_not(fi.dense, "%s", what);
		cr_assert_eq(fi.cell_num, v[i].n, "%s", what);
		cr_assert_eq(fi.consolidated_metadata, sc->meta, "%s", what);
	}
	/* Reading at a time before the second fragment shows the first. */
	tfs_array_close(a);
	a = open_at(dir, 1500);
	{
		struct rows got = {0};

		query_rows(a, NULL, 0, &got);
		cr_assert_eq(got.n, v[0].n, "%s at 1500", what);
		rows_free(&got);
	}
	tfs_array_close(a);

	for (int k = 0; k < 2; k++) {
		lb_written_release(&w[k]);
		fvals_free(&v[k]);
	}
	rows_free(&want);
	lb_array_release(&arr);
	tfs_schema_release(&spec);
	free(dir);
	tmp_free(&t);
}

/* ---- every version ------------------------------------------------------- */

Test(legacy, dense_every_version)
{
	for (uint32_t v = 1; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct scen sc = {.sv = v, .fv = v, .nm = v == 8 ? &odd : &plain};

		dense_case(&sc);
	}
}

Test(legacy, dense_filters_and_fill_every_version)
{
	for (uint32_t v = 1; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct scen sc = {.sv = v, .fv = v, .nm = &plain,
				  .attr_filters = true, .custom_fill = true};

		dense_case(&sc);
	}
}

Test(legacy, sparse_every_version)
{
	for (uint32_t v = 1; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct scen sc = {.sv = v, .fv = v, .nm = v == 8 ? &odd : &plain};

		sparse_case(&sc);
	}
}

/* Coordinates of versions 1–4 with a compressor in the coords filters:
 * stored unzipped even in version 1 (tile.md §7). */
Test(legacy, sparse_compressed_coords_every_version)
{
	for (uint32_t v = 1; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct scen sc = {.sv = v, .fv = v, .nm = &plain,
				  .coords_zip = true, .attr_filters = true};

		sparse_case(&sc);
	}
}

/* Sparse fragments written into dense arrays (TileDB 1.x and 2.x could),
 * including `__coords.tdb` ones before v5. */
Test(legacy, dense_with_sparse_fragment_every_version)
{
	for (uint32_t v = 1; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct scen sc = {.sv = v, .fv = v, .nm = &plain,
				  .sparse_frag = true, .coords_zip = v == 1};

		dense_case(&sc);
	}
}

/* Consolidated fragment metadata (.meta, fragments v3+): entries are
 * absolute URIs before v9 (here of a folder the array was moved from),
 * fragment names from v9. */
Test(legacy, consolidated_metadata_every_version)
{
	for (uint32_t v = 3; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct scen sc = {.sv = v, .fv = v, .nm = &plain, .meta = true,
				  .meta_prefix = "file:///moved/from/here/A/"};

		dense_case(&sc);
		sparse_case(&sc);
		sc.meta_prefix = NULL; /* the array's own URI */
		sparse_case(&sc);
	}
}

/* ---- the builder against real TileDB ------------------------------------- */

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf;
	long n;

	cr_assert_not_null(fp, "%s", path);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

static uint8_t *tile_payload(const char *path, size_t *len)
{
	size_t n;
	uint8_t *file = slurp(path, &n), *payload;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_generic_tile_decode(file, n, NULL, 1 << 20, &payload,
					     len, NULL, &d),
		     TFS_E_OK, "%s: %s", path, tfs_diag_msg(&d));
	free(file);
	return payload;
}

/* Decodes a data file of one tile through pipeline p. */
static uint8_t *data_tile(const char *path, const struct tfs_pipeline *p,
			  uint8_t type, size_t want)
{
	size_t n;
	uint8_t *file = slurp(path, &n), *out = malloc(want + 1);
	struct tfs_tile_ctx ctx = {.type = type, .cell_size = 1,
				   .fragment_version = 1};
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_tile_decode(p, &ctx, out, want, file, n, &d), TFS_E_OK,
		     "%s: %s", path, tfs_diag_msg(&d));
	free(file);
	return out;
}

/* The corpus array legacy/non_split_coords_v1_4_0 was written by TileDB
 * 1.4 (format 1). Built again from the format description, its schema and
 * fragment metadata decode to the same bytes and its data files are the
 * same bytes: the builder writes what TileDB wrote. */
Test(legacy, builder_matches_tiledb_1_4)
{
	static const char *corpus =
		TFS_CORPUS_DIR "/legacy/non_split_coords_v1_4_0";
	static const char *frag = "__5dc2cc9cce204a189f825fd4919d0c55_1541540586869";
	static const int32_t x[] = {3, 1, 4, 2}, y[] = {10, 10, 10, 10};
	static const int32_t av[] = {3, 1, 4, 2};
	struct tmp t;
	struct lb_array arr;
	struct tfs_schema spec;
	struct tfs_filter zstd;
	struct lb_frag f;
	struct lb_written w;
	const char *files[] = {"__array_schema.tdb", "__fragment_metadata.tdb"};
	char *dir;

	tmp_new(&t);
	dir = path_of(&t, "A");
	lb_schema_init(&spec, 1, true, 100000);
	spec.tile_order = spec.cell_order = TFS_COL_MAJOR;
	lb_add_dim(&spec, "d1", TFS_INT32, 0, 10000, 10001);
	lb_add_dim(&spec, "d2", TFS_INT32, 0, 10000, 10001);
	lb_add_attr(&spec, "a", TFS_INT32, 1, false);
	tfs_filter_init(&zstd, TFS_FILTER_ZSTD);
	cr_assert_eq(tfs_pipeline_add(&spec.offsets_filters, &zstd), TFS_E_OK);
	lb_array_create(&arr, t.vfs, dir, &spec, 0);
	memset(&f, 0, sizeof(f));
	f.version = 1;
	f.t1 = 1541540586869;
	f.cell_num = 4;
	f.dims[0].data = x;
	f.dims[1].data = y;
	f.attrs[0].data = av;
	lb_write_fragment(&arr, &f, &w);

	for (int i = 0; i < 2; i++) {
		char *mine, *theirs;
		uint8_t *a, *b;
		size_t alen, blen;

		cr_assert_neq(asprintf(&mine, "%s/%s%s%s", dir, i ? w.name : "",
				       i ? "/" : "", files[i]), -1);
		cr_assert_neq(asprintf(&theirs, "%s/%s%s%s", corpus,
				       i ? frag : "", i ? "/" : "", files[i]),
			      -1);
		a = tile_payload(mine, &alen);
		b = tile_payload(theirs, &blen);
		cr_assert_eq(alen, blen, "%s", files[i]);
		cr_assert_arr_eq(a, b, alen, "%s", files[i]);
		/* Generic tiles of format 1 say version 1 in their header. */
		free(a);
		a = slurp(mine, &alen);
		cr_assert_eq(tfs_get_u32(a), 1);
		tfs_free(b);
		free(a);
		free(mine);
		free(theirs);
	}
	{
		char *mine, *theirs;
		uint8_t *a, *b;
		size_t alen, blen;

		/* Attribute data: one unfiltered chunk, byte for byte. */
		cr_assert_neq(asprintf(&mine, "%s/%s/a.tdb", dir, w.name), -1);
		cr_assert_neq(asprintf(&theirs, "%s/%s/a.tdb", corpus, frag), -1);
		a = slurp(mine, &alen);
		b = slurp(theirs, &blen);
		cr_assert_eq(alen, blen);
		cr_assert_arr_eq(a, b, alen);
		free(a);
		free(b);
		free(mine);
		free(theirs);
		/* Coordinates: zipped (v1, no compressor), filtered in D parts
		 * of one chunk each, byte for byte; and they decode alike. */
		cr_assert_neq(asprintf(&mine, "%s/%s/__coords.tdb", dir, w.name),
			      -1);
		cr_assert_neq(asprintf(&theirs, "%s/%s/__coords.tdb", corpus,
				       frag), -1);
		a = slurp(mine, &alen);
		b = slurp(theirs, &blen);
		cr_assert_eq(alen, blen);
		cr_assert_arr_eq(a, b, alen);
		free(a);
		free(b);
		a = data_tile(mine, &spec.coords_filters, TFS_INT32, 32);
		b = data_tile(theirs, &spec.coords_filters, TFS_INT32, 32);
		cr_assert_arr_eq(a, b, 32);
		free(a);
		free(b);
		free(mine);
		free(theirs);
	}
	lb_written_release(&w);
	lb_array_release(&arr);
	tfs_schema_release(&spec);
	free(dir);
	tmp_free(&t);
}

/* What the builder puts in `__coords.tdb` (tile.md §7): zipped only in
 * version 1 without a compressor; so the reads above cover both layouts. */
Test(legacy, coords_layout_on_disk)
{
	static const struct {
		uint32_t v;
		bool gzip, zipped;
	} cases[] = {
		{1, false, true}, {1, true, false}, {2, false, false},
		{3, false, false}, {4, true, false},
	};
	static const int64_t x[] = {1, 2}, y[] = {-5, -6};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct tmp t;
		struct lb_array arr;
		struct tfs_schema spec;
		struct lb_frag f;
		struct lb_written w;
		int64_t *got;
		char *dir, *p;

		tmp_new(&t);
		dir = path_of(&t, "A");
		lb_schema_init(&spec, cases[i].v, true, 10);
		lb_add_dim(&spec, "x", TFS_INT64, 0, 9, 10);
		lb_add_dim(&spec, "y", TFS_INT64, -9, 0, 10);
		lb_add_attr(&spec, "a", TFS_INT64, 1, false);
		if (cases[i].gzip)
			lb_add_filter(&spec.coords_filters, TFS_FILTER_GZIP);
		lb_array_create(&arr, t.vfs, dir, &spec, 0);
		memset(&f, 0, sizeof(f));
		f.version = cases[i].v;
		f.t1 = 5;
		f.cell_num = 2;
		f.dims[0].data = x;
		f.dims[1].data = y;
		f.attrs[0].data = x;
		lb_write_fragment(&arr, &f, &w);
		cr_assert_neq(asprintf(&p, "%s/%s/__coords.tdb", dir, w.name), -1);
		got = (int64_t *)data_tile(p, &arr.schemas[0].coords_filters,
					   TFS_INT64, 32);
		if (cases[i].zipped) {
			cr_assert(got[0] == 1 && got[1] == -5 && got[2] == 2 &&
				  got[3] == -6, "case %zu", i);
		} else {
			cr_assert(got[0] == 1 && got[1] == 2 && got[2] == -5 &&
				  got[3] == -6, "case %zu", i);
		}
		free(got);
		free(p);
		lb_written_release(&w);
		lb_array_release(&arr);
		tfs_schema_release(&spec);
		free(dir);
		tmp_free(&t);
	}
}

/* ---- an array used by many TileDB versions ------------------------------- */

/* Created by a format-3 library (`__array_schema.tdb`, root fragments
 * without commits), written to by format-7 (root, `.ok`), then upgraded:
 * a v12 schema with one more attribute in `__schema/`, fragments of v12
 * and v22 in `__fragments/`. Every layout is read at once; old fragments
 * keep their own schema, and the new attribute reads as its fill value
 * (NULL) where they won. Opened before the upgrade, the old schema is the
 * current one. */
Test(legacy, upgraded_array_mixed_layouts)
{
	static const int64_t box[4][4] = {
		{1, 4, 1, 5}, {2, 6, 3, 4}, {1, 2, 2, 3}, {5, 6, 1, 1},
	};
	static const uint32_t vers[4] = {3, 7, 12, 22};
	struct tmp t;
	struct lb_array arr;
	struct tfs_schema old, neu;
	struct lb_written w[4];
	struct fvals v[4];
	struct lb_frag f;
	int owner[7][6] = {{0}};
	struct rows want = {0}, before = {0};
	struct scen sc = {.sv = 3, .nm = &plain};
	struct scen sc12 = {.sv = 12, .nm = &plain};
	int32_t lo[2] = {1, 1}, hi[2] = {6, 5};
	struct tfs_range sub[2] = {
		{(uint8_t *)&lo[0], (uint8_t *)&hi[0], 4, 4},
		{(uint8_t *)&lo[1], (uint8_t *)&hi[1], 4, 4},
	};
	struct tfs_array *a;
	char *dir;

	tmp_new(&t);
	dir = path_of(&t, "A");
	schema_for(&sc, false, &old);
	schema_for(&sc12, false, &neu);
	lb_array_create(&arr, t.vfs, dir, &old, 0);
	for (int k = 0; k < 4; k++) {
		if (k == 2)
			lb_array_add_schema(&arr, &neu, 2500);
		dense_box(&v[k], k + 1, box[k][0], box[k][1], box[k][2],
			  box[k][3]);
		frag_of(&f, &v[k], vers[k], 1000 * (uint64_t)(k + 1), false);
		for (int d = 0; d < 2; d++) {
			f.lo[d] = box[k][2 * d];
			f.hi[d] = box[k][2 * d + 1];
		}
		lb_write_fragment(&arr, &f, &w[k]);
		for (int64_t r = box[k][0]; r <= box[k][1]; r++)
			for (int64_t c = box[k][2]; c <= box[k][3]; c++)
				owner[r][c] = k + 1;
		if (k == 1)
			for (int64_t r = 1; r <= 6; r++)
				for (int64_t c = 1; c <= 5; c++)
					rows_add(&before,
						 model_row(&sc, &arr.schemas[0],
							   owner[r][c], r, c));
	}
	cr_assert(exists(dir, "__array_schema.tdb"));
	cr_assert(exists(dir, "__schema"));
	cr_assert(exists(dir, w[0].name));
	cr_assert(exists(dir, w[1].name));
	cr_assert(exists(dir, w[2].rel));
	for (int64_t r = 1; r <= 6; r++)
		for (int64_t c = 1; c <= 5; c++) {
			int k = owner[r][c];

			rows_add(&want, model_row_of(&sc12, &arr.schemas[1], k,
						     k && vers[k - 1] < 10 ? 3 : 4,
						     r, c));
		}
	check_read(dir, sub, &want, "upgraded");

	a = open_at(dir, 0);
	cr_assert_eq(tfs_array_schema(a)->version, 12);
	cr_assert_eq(tfs_array_fragment_count(a), 4);
	for (size_t i = 0; i < 4; i++) {
		struct tfs_fragment_info fi;

		tfs_array_fragment(a, i, &fi);
		cr_assert_eq(fi.version, vers[i]);
		cr_assert_str_eq(fi.name, w[i].name);
		cr_assert_str_eq(fi.schema_name, vers[i] < 10
							 ? "__array_schema.tdb"
							 : arr.schemas[1].name);
	}
	tfs_array_close(a);

	a = open_at(dir, 2200);
	cr_assert_str_eq(tfs_array_schema(a)->name, "__array_schema.tdb");
	{
		struct rows got = {0};

		query_rows(a, sub, 0, &got);
		assert_rows(&got, &before, "before the upgrade");
		rows_free(&got);
	}
	tfs_array_close(a);

	for (int k = 0; k < 4; k++) {
		lb_written_release(&w[k]);
		fvals_free(&v[k]);
	}
	rows_free(&want);
	rows_free(&before);
	lb_array_release(&arr);
	tfs_schema_release(&old);
	tfs_schema_release(&neu);
	free(dir);
	tmp_free(&t);
}

/* ---- string dimensions (v5+) --------------------------------------------- */

/* Before v10 a footer has a fixed size, except with a var-size dimension:
 * then its length is appended as from v10 (fragment.md §3). */
Test(legacy, string_dimension_every_version)
{
	static const char *const keys[] = {"pear", "", "apple", "fig", "apple",
					   "zz", "b", "pear", "kiwi"};
	static const int32_t ints[] = {3, 0, 99, 12, 7, 50, 50, 2, 61};
	static const char *const want_rows[] = {
		"k=\"\";i=0;a=1", "k=\"apple\";i=7;a=4", "k=\"apple\";i=99;a=2",
		"k=\"b\";i=50;a=6", "k=\"fig\";i=12;a=3", "k=\"kiwi\";i=61;a=8",
		"k=\"pear\";i=2;a=7", "k=\"pear\";i=3;a=0", "k=\"zz\";i=50;a=5",
	};
	int32_t av[9];

	for (int i = 0; i < 9; i++)
		av[i] = i;
	for (uint32_t v = 5; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct tmp t;
		struct lb_array arr;
		struct tfs_schema spec;
		struct lb_frag f;
		struct lb_written w;
		struct rows want = {0};
		char *dir;

		tmp_new(&t);
		dir = path_of(&t, "A");
		lb_schema_init(&spec, v, true, 4);
		lb_add_str_dim(&spec, "k");
		lb_add_dim(&spec, "i", TFS_INT32, 0, 99, 10);
		lb_add_attr(&spec, "a", TFS_INT32, 1, false);
		if (v % 2)
			lb_add_filter(&spec.coords_filters, TFS_FILTER_ZSTD);
		lb_array_create(&arr, t.vfs, dir, &spec, 10);
		memset(&f, 0, sizeof(f));
		f.version = v;
		f.t1 = 1000;
		f.cell_num = 9;
		f.dims[0].strs = keys;
		f.dims[1].data = ints;
		f.attrs[0].data = av;
		lb_write_fragment(&arr, &f, &w);
		for (int i = 0; i < 9; i++)
			rows_add(&want, strdup(want_rows[i]));
		check_read(dir, NULL, &want, "string dimension");
		rows_free(&want);
		lb_written_release(&w);
		lb_array_release(&arr);
		tfs_schema_release(&spec);
		free(dir);
		tmp_free(&t);
	}
}

/* ---- a one-fragment sparse array to damage ----------------------------------- */

struct small {
	struct tmp t;
	struct lb_array arr;
	struct tfs_schema spec;
	struct lb_written w;
	char *dir;
};

static const int64_t small_x[] = {3, 1, 2}, small_y[] = {0, 0, 1};
static const int32_t small_a[] = {30, 10, 20};

/* Sparse x, y INT64 and a INT32 of format `version`, one fragment at
 * t = 1000; the array and the fragment metadata are written with the
 * header versions of that format. */
static void small_new(struct small *sm, uint32_t version, bool commit)
{
	struct lb_frag f;

	tmp_new(&sm->t);
	sm->dir = path_of(&sm->t, "A");
	lb_schema_init(&sm->spec, version, true, 2);
	lb_add_dim(&sm->spec, "x", TFS_INT64, 0, 9, 10);
	lb_add_dim(&sm->spec, "y", TFS_INT64, 0, 9, 10);
	lb_add_attr(&sm->spec, "a", TFS_INT32, 1, false);
	lb_array_create(&sm->arr, sm->t.vfs, sm->dir, &sm->spec, 10);
	memset(&f, 0, sizeof(f));
	f.version = version;
	f.t1 = 1000;
	f.no_commit = !commit;
	f.cell_num = 3;
	f.dims[0].data = small_x;
	f.dims[1].data = small_y;
	f.attrs[0].data = small_a;
	lb_write_fragment(&sm->arr, &f, &sm->w);
}

static void small_free(struct small *sm)
{
	lb_written_release(&sm->w);
	lb_array_release(&sm->arr);
	tfs_schema_release(&sm->spec);
	free(sm->dir);
	tmp_free(&sm->t);
}

static const char *const small_rows[] = {"x=1;y=0;a=10", "x=2;y=1;a=20",
					 "x=3;y=0;a=30"};

static void small_check(const struct small *sm, const char *what)
{
	struct rows want = {0};

	for (int i = 0; i < 3; i++)
		rows_add(&want, strdup(small_rows[i]));
	check_read(sm->dir, NULL, &want, what);
	rows_free(&want);
}

/* Writes bytes at the array-relative path, replacing the file. */
static void small_put(struct small *sm, const char *rel, const void *p,
		      size_t n)
{
	lb_put(&sm->arr, rel, p, n);
}

/* Overwrites 4 bytes at offset off of the array-relative file rel. */
static void patch_u32(const struct small *sm, const char *rel, long off,
		      uint32_t v)
{
	char *p;
	FILE *fp;
	uint8_t le[4];

	cr_assert_neq(asprintf(&p, "%s/%s", sm->dir, rel), -1);
	fp = fopen(p, "r+b");
	cr_assert_not_null(fp, "%s", p);
	if (off < 0) {
		cr_assert_eq(fseek(fp, off, SEEK_END), 0);
	} else {
		cr_assert_eq(fseek(fp, off, SEEK_SET), 0);
	}
	tfs_put_u32(le, v);
	cr_assert_eq(fwrite(le, 1, 4, fp), 4);
	fclose(fp);
	free(p);
}

static void move(const struct small *sm, const char *from, const char *to)
{
	char *a, *b;

	cr_assert_neq(asprintf(&a, "%s/%s", sm->dir, from), -1);
	cr_assert_neq(asprintf(&b, "%s/%s", sm->dir, to), -1);
	cr_assert_eq(rename(a, b), 0, "%s -> %s", a, b);
	free(a);
	free(b);
}

/* tfs_array_open of dir fails with TFS_E_UNSUPPORTED, "unsupported format
 * version N". */
static void expect_unsupported(const char *dir, uint32_t n, const char *what)
{
	struct tfs_array *a;
	struct tfs_diag d;
	char want[64];

	snprintf(want, sizeof(want), "unsupported format version %u", n);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(dir, NULL, &a, &d), TFS_E_UNSUPPORTED,
		     "%s: %s", what, tfs_diag_msg(&d));
	cr_assert_null(a);
	cr_assert(strstr(d.msg, want), "%s: '%s' lacks '%s'", what, d.msg,
		  want);
}

/* ---- update commits --------------------------------------------------------- */

/* Update commits (.upd, v16+) are recognised, parsed and listed, never
 * applied: the cells are those of the fragments (consolidated.md §6). A
 * .con may name an update (by name only); an update outside the window
 * is not listed; an update is never a fragment. */
Test(legacy, update_commits_listed_not_applied)
{
	struct small sm;
	struct tfs_array *a;
	struct tfs_update_info ui;
	char *upd, *gone, *con;

	small_new(&sm, 16, true);
	upd = lb_write_condition(&sm.arr, "upd", 16, 16, 1500, "a", 100);
	gone = lb_write_condition(&sm.arr, "upd", 16, 16, 1700, "x", 2);
	/* A .con naming both, and the fragment's commit; the second .upd
	 * file is gone (its content is known only from its own file). */
	cr_assert_neq(asprintf(&con, "__commits/%s.wrt\n%s\n%s\n", sm.w.name,
			       upd, gone), -1);
	small_put(&sm, "__commits/__1000_1800_000000aa000000000000000000abcdef_16.con",
		  con, strlen(con));
	{
		char *p;

		cr_assert_neq(asprintf(&p, "%s/%s", sm.dir, gone), -1);
		cr_assert_eq(remove(p), 0);
		free(p);
	}
	small_check(&sm, "with updates");

	a = open_at(sm.dir, 0);
	cr_assert_eq(tfs_array_fragment_count(a), 1);
	cr_assert_eq(tfs_array_update_count(a), 2);
	tfs_array_update(a, 0, &ui);
	cr_assert_str_eq(ui.marker, upd);
	cr_assert_eq(ui.t1, 1500);
	cr_assert_eq(ui.t2, 1500);
	cr_assert_not_null(ui.update);
	cr_assert(ui.update->cond.is_value);
	cr_assert_eq(ui.update->cond.op, TFS_QC_LT);
	cr_assert_str_eq(ui.update->cond.field, "a");
	cr_assert_eq(ui.update->value_num, 1);
	cr_assert_str_eq(ui.update->values[0].field, "a");
	cr_assert_eq(tfs_get_u32(ui.update->values[0].value), 100);
	tfs_array_update(a, 1, &ui);
	cr_assert_str_eq(ui.marker, gone);
	cr_assert_eq(ui.t1, 1700);
	cr_assert_null(ui.update);
	tfs_array_close(a);

	/* Opened before them, neither is in the window. */
	a = open_at(sm.dir, 1200);
	cr_assert_eq(tfs_array_update_count(a), 0);
	tfs_array_close(a);
	a = open_at(sm.dir, 1600);
	cr_assert_eq(tfs_array_update_count(a), 1);
	tfs_array_close(a);

	/* A damaged update file is an error, as for TileDB, which parses
	 * them when it opens the array. */
	{
		struct tfs_buf b;
		struct tfs_diag d;
		static const uint8_t junk[] = {9, 9, 9};

		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		lb_generic_tile(&b, junk, sizeof(junk), 16);
		small_put(&sm, upd, b.data, b.len);
		tfs_buf_release(&b);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_array_open(sm.dir, NULL, &a, &d), TFS_E_CORRUPT);
		cr_assert(strstr(d.msg, "update"), "%s", d.msg);
	}
	free(upd);
	free(gone);
	free(con);
	small_free(&sm);
}

/* ---- versions newer than format 23 ------------------------------------------ */

/* Rewrites the array's one schema file with payload version pv and
 * generic tile header version hv. */
static void rewrite_schema(struct small *sm, uint32_t pv, uint32_t hv)
{
	struct tfs_buf payload, file;
	const char *name = sm->arr.schemas[0].name;
	char *rel;

	if (!strcmp(name, "__array_schema.tdb"))
		rel = strdup(name);
	else
		cr_assert_neq(asprintf(&rel, "__schema/%s", name), -1);
	tfs_buf_init(&payload, TFS_BUF_NO_MAX);
	tfs_buf_init(&file, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&payload, &sm->arr.schemas[0]),
		     TFS_E_OK);
	tfs_put_u32(payload.data, pv);
	lb_generic_tile(&file, payload.data, payload.len, hv);
	small_put(sm, rel, file.data, file.len);
	tfs_buf_release(&payload);
	tfs_buf_release(&file);
	free(rel);
}

Test(future, schema_versions)
{
	static const struct {
		uint32_t array, payload, header, want;
	} cases[] = {
		{23, 24, 23, 24},
		{23, UINT32_MAX, 23, UINT32_MAX},
		{23, 23, 24, 24},
		{23, 23, UINT32_MAX, UINT32_MAX},
		{9, 24, 9, 24},   /* __array_schema.tdb */
		{9, 9, 0x80000012, 0x80000012}, /* experimental builds */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct small sm;
		char what[32];

		snprintf(what, sizeof(what), "schema case %zu", i);
		small_new(&sm, cases[i].array, true);
		small_check(&sm, what);
		rewrite_schema(&sm, cases[i].payload, cases[i].header);
		expect_unsupported(sm.dir, cases[i].want, what);
		small_free(&sm);
	}
}

/* The fragment's footer, its legacy metadata (v1–2) and its name. */
Test(future, fragment_versions)
{
	struct small sm;
	char *meta, *from, *to;

	/* footer version field (first bytes of the footer) */
	small_new(&sm, 23, true);
	cr_assert_neq(asprintf(&meta, "%s/__fragment_metadata.tdb", sm.w.rel),
		      -1);
	{
		char *p;
		size_t n;
		uint8_t *file;

		cr_assert_neq(asprintf(&p, "%s/%s", sm.dir, meta), -1);
		file = slurp(p, &n);
		patch_u32(&sm, meta,
			  (long)(n - 8 - tfs_get_u64(file + n - 8)), 24);
		free(file);
		free(p);
	}
	expect_unsupported(sm.dir, 24, "footer");
	free(meta);
	small_free(&sm);

	/* v9 footer of fixed size: its version field too */
	small_new(&sm, 9, true);
	cr_assert_neq(asprintf(&meta, "%s/__fragment_metadata.tdb", sm.w.rel),
		      -1);
	patch_u32(&sm, meta, -(long)tfs_footer_fixed_size(9, &sm.arr.schemas[0]),
		  30);
	expect_unsupported(sm.dir, 30, "v9 footer");
	free(meta);
	small_free(&sm);

	/* legacy (v1–2) metadata: payload version, then tile header */
	for (int k = 0; k < 2; k++) {
		struct tfs_buf b;
		uint8_t *payload;
		size_t n;
		char *p;

		small_new(&sm, 1, false);
		cr_assert_neq(asprintf(&meta, "%s/__fragment_metadata.tdb",
				       sm.w.rel), -1);
		cr_assert_neq(asprintf(&p, "%s/%s", sm.dir, meta), -1);
		small_check(&sm, "v1");
		payload = tile_payload(p, &n);
		if (k == 0)
			tfs_put_u32(payload, 24);
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		lb_generic_tile(&b, payload, n, k == 0 ? 1 : 25);
		small_put(&sm, meta, b.data, b.len);
		expect_unsupported(sm.dir, k == 0 ? 24 : 25, "legacy metadata");
		tfs_buf_release(&b);
		tfs_free(payload);
		free(p);
		free(meta);
		small_free(&sm);
	}

	/* a committed fragment named with version 24: new layout (.wrt)
	 * and old (.ok in the root) */
	small_new(&sm, 23, true);
	to = strdup(sm.w.name);
	to[strlen(to) - 1] = '4';
	cr_assert_neq(asprintf(&from, "__fragments/%s", sm.w.name), -1);
	{
		char *dst, *wf, *wt;

		cr_assert_neq(asprintf(&dst, "__fragments/%s", to), -1);
		cr_assert_neq(asprintf(&wf, "__commits/%s.wrt", sm.w.name), -1);
		cr_assert_neq(asprintf(&wt, "__commits/%s.wrt", to), -1);
		move(&sm, from, dst);
		move(&sm, wf, wt);
		free(dst);
		free(wf);
		free(wt);
	}
	expect_unsupported(sm.dir, 24, ".wrt name");
	free(from);
	free(to);
	small_free(&sm);

	small_new(&sm, 11, true);
	{
		char *ok, *to_ok;

		to = strdup(sm.w.name);
		to[strlen(to) - 2] = '2';
		to[strlen(to) - 1] = '4';
		cr_assert_neq(asprintf(&ok, "%s.ok", sm.w.name), -1);
		cr_assert_neq(asprintf(&to_ok, "%s.ok", to), -1);
		move(&sm, sm.w.name, to);
		move(&sm, ok, to_ok);
		free(ok);
		free(to_ok);
		free(to);
	}
	expect_unsupported(sm.dir, 24, ".ok name");
	small_free(&sm);
}

/* A generic tile of the fragment metadata read on demand (the R-tree at
 * offset 0): the array opens, the read fails. */
Test(future, lazy_generic_tile)
{
	struct small sm;
	struct tfs_array *a;
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	char *meta;
	enum tfs_err e;

	small_new(&sm, 22, true);
	cr_assert_neq(asprintf(&meta, "%s/__fragment_metadata.tdb", sm.w.rel),
		      -1);
	patch_u32(&sm, meta, 0, 24);
	a = open_at(sm.dir, 0);
	tfs_diag_init(&d);
	e = tfs_query_open(a, NULL, &q, &d);
	if (!e) {
		do
			e = tfs_query_next(q, &b, &d);
		while (!e && b);
		tfs_query_close(q);
	}
	cr_assert_eq(e, TFS_E_UNSUPPORTED, "%s", tfs_diag_msg(&d));
	cr_assert(strstr(d.msg, "unsupported format version 24"), "%s", d.msg);
	tfs_array_close(a);
	free(meta);
	small_free(&sm);
}

/* Delete, update, vacuum and consolidated metadata files: newer in their
 * generic tile header or in their name. Outside the read window a delete
 * or update is never read, whatever its version. */
Test(future, commit_files)
{
	static const struct {
		const char *ext;
		uint32_t name_v, header_v, want;
		uint64_t t;
	} cases[] = {
		{"del", 23, 24, 24, 1500}, {"upd", 23, 24, 24, 1500},
		{"del", 24, 23, 24, 1500}, {"upd", 24, 23, 24, 1500},
		{"upd", 4000000000u, 23, 4000000000u, 1500},
		{"del", 24, 24, 0, UINT64_C(9000000000000)},
		{"upd", 24, 24, 0, UINT64_C(9000000000000)},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct small sm;
		char what[32], *rel;

		snprintf(what, sizeof(what), "%s case %zu", cases[i].ext, i);
		small_new(&sm, 23, true);
		rel = lb_write_condition(&sm.arr, cases[i].ext, cases[i].name_v,
					 cases[i].header_v, cases[i].t, "a",
					 100);
		if (cases[i].want)
			expect_unsupported(sm.dir, cases[i].want, what);
		else
			small_check(&sm, what);
		free(rel);
		small_free(&sm);
	}
	/* .meta: header, then name */
	for (int k = 0; k < 2; k++) {
		struct small sm;

		small_new(&sm, 11, true);
		lb_write_meta(&sm.arr, k ? 24 : 11, 1000, 1000, &sm.w, 1, NULL);
		if (k == 0) {
			char *p = NULL;

			cr_assert_neq(asprintf(&p, "__1000_1000_%08x%024x_11.meta",
					       sm.arr.uuid_counter, 0xabcdefu),
				      -1);
			patch_u32(&sm, p, 0, 24);
			free(p);
		}
		expect_unsupported(sm.dir, 24, ".meta");
		small_free(&sm);
	}
	/* .vac in the root, named with version 24 */
	{
		struct small sm;
		char *line;

		small_new(&sm, 11, true);
		cr_assert_neq(asprintf(&line, "file://%s/%s\n", sm.dir, sm.w.name),
			      -1);
		small_put(&sm, "__2000_2000_000000bb000000000000000000abcdef_24.vac",
			  line, strlen(line));
		expect_unsupported(sm.dir, 24, ".vac");
		free(line);
		small_free(&sm);
	}
}

/* The corpus array of an experimental TileDB build: every version field
 * is 0xFFFFFFFF (README.md "Versions"). */
Test(future, corpus_experimental_array)
{
	expect_unsupported(TFS_CORPUS_DIR
			   "/legacy/experimental_array_vUINT32_MAX",
			   UINT32_MAX, "corpus");
}

/* ---- dimension labels (v18+) ------------------------------------------------- */

/* Labels are listed with their label array's folder, which opens and
 * reads as an array of its own; the labelled array reads as without. */
Test(labels, label_arrays_open_and_read)
{
	for (uint32_t v = 18; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct tmp t;
		struct tfs_array *a, *la;
		struct tfs_label_info l;
		struct rows got = {0};
		char *dir, *want;
		char what[16];

		snprintf(what, sizeof(what), "v%u", v);
		tmp_new(&t);
		dir = path_of(&t, "A");
		lb_write_labelled(t.vfs, dir, v);
		a = open_at(dir, 0);
		cr_assert_eq(tfs_array_label_count(a), 2, "%s", what);
		cr_assert_eq(tfs_array_fragment_count(a), 1, "%s", what);

		tfs_array_label(a, 0, &l);
		cr_assert_str_eq(l.name, "lab");
		cr_assert_eq(l.dim_index, 0);
		cr_assert_str_eq(l.dim_name, "i");
		cr_assert_str_eq(l.attr_name, "label");
		cr_assert_eq(l.order, 1);
		cr_assert_eq(l.type, TFS_FLOAT64);
		cr_assert_eq(l.cell_val_num, 1);
		cr_assert(l.uri_relative);
		cr_assert_not(l.external);
		cr_assert_str_eq(l.uri, "__labels/l0");
		cr_assert_neq(asprintf(&want, "%s/__labels/l0", dir), -1);
		cr_assert_str_eq(l.path, want);
		free(want);
		la = open_at(l.path, 0);
		cr_assert_eq(tfs_array_schema(la)->attrs[0].order, 1, "%s", what);
		query_rows(la, NULL, 0, &got);
		cr_assert_eq(got.n, 10, "%s", what);
		cr_assert_str_eq(got.v[0], "index=0;label=-1");
		cr_assert_str_eq(got.v[9], "index=9;label=3.5");
		rows_free(&got);
		tfs_array_close(la);

		tfs_array_label(a, 1, &l);
		cr_assert_str_eq(l.name, "name");
		cr_assert_eq(l.order, 2);
		cr_assert_eq(l.type, TFS_STRING_ASCII);
		cr_assert_eq(l.cell_val_num, TFS_VAR_NUM);
		la = open_at(l.path, 0);
		query_rows(la, NULL, 0, &got);
		cr_assert_eq(got.n, 10, "%s", what);
		cr_assert_str_eq(got.v[0], "index=0;label=\"j\"");
		cr_assert_str_eq(got.v[9], "index=9;label=\"a\"");
		rows_free(&got);
		tfs_array_close(la);

		query_rows(a, NULL, 0, &got);
		cr_assert_eq(got.n, 10, "%s", what);
		cr_assert_str_eq(got.v[3], "i=3;v=103");
		rows_free(&got);
		tfs_array_close(a);
		free(dir);
		tmp_free(&t);
	}
}

/* External and odd label URIs: file:// and absolute paths as they are,
 * other schemes and relative paths leaving the array have no path. */
Test(labels, label_paths)
{
	static const struct {
		const char *uri;
		bool relative;
		const char *path; /* "@" = the array folder */
	} cases[] = {
		{"__labels/l0", true, "@/__labels/l0"},
		{"/__labels//l3/", true, "@/__labels//l3/"},
		{"file:///data/labels/x", false, "/data/labels/x"},
		{"/data/labels/y", false, "/data/labels/y"},
		{"s3://bucket/labels/z", false, NULL},
		{"relative/without/flag", false, NULL},
		{"../elsewhere", true, NULL},
		{"__labels/../../up", true, NULL},
	};
	size_t n = sizeof(cases) / sizeof(*cases);
	struct tmp t;
	struct tfs_schema s;
	struct lb_array arr;
	struct tfs_array *a;
	char *dir;

	tmp_new(&t);
	dir = path_of(&t, "A");
	lb_schema_init(&s, 18, false, 10000);
	lb_add_dim(&s, "i", TFS_INT32, 0, 9, 5);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	for (size_t i = 0; i < n; i++) {
		char name[8];

		snprintf(name, sizeof(name), "l%zu", i);
		lb_add_label(&s, 0, name, cases[i].uri, cases[i].relative, 1,
			     TFS_INT64);
		s.labels[i].is_external = !cases[i].relative;
	}
	lb_array_create(&arr, t.vfs, dir, &s, 10);
	a = open_at(dir, 0);
	cr_assert_eq(tfs_array_label_count(a), n);
	for (size_t i = 0; i < n; i++) {
		struct tfs_label_info l;

		tfs_array_label(a, i, &l);
		cr_assert_str_eq(l.uri, cases[i].uri);
		cr_assert_eq(l.external, !cases[i].relative);
		if (!cases[i].path) {
			cr_assert_null(l.path, "%s: %s", cases[i].uri, l.path);
		} else if (cases[i].path[0] == '@') {
			char *want;

			cr_assert_neq(asprintf(&want, "%s%s", dir,
					       cases[i].path + 1), -1);
			cr_assert_not_null(l.path, "%s", cases[i].uri);
			/* joined with one '/', the rest as stored */
			cr_assert_str_eq(l.path, want);
			free(want);
		} else {
			cr_assert_str_eq(l.path, cases[i].path);
		}
	}
	tfs_array_close(a);
	/* A v17 schema has no labels to store. */
	lb_array_release(&arr);
	free(dir);
	dir = path_of(&t, "B");
	s.version = 17;
	lb_array_create(&arr, t.vfs, dir, &s, 10);
	a = open_at(dir, 0);
	cr_assert_eq(tfs_array_label_count(a), 0);
	tfs_array_close(a);
	lb_array_release(&arr);
	tfs_schema_release(&s);
	free(dir);
	tmp_free(&t);
}

/* ---- consolidation with vacuum files ----------------------------------------- */

/* Two sparse fragments and the fragment they were consolidated into,
 * named over both time ranges, with its vacuum file: absolute URIs
 * before v19, array-relative folders from v19 (consolidated.md §4). The
 * inputs are hidden, listed as to vacuum; reads see the consolidated
 * cells. Before v15 a read at a time inside the consolidated range does
 * not see it and sees the first input (layout.md §6). */
Test(legacy, consolidated_fragment_and_vacuum_every_version)
{
	for (uint32_t v = 5; v <= TFS_FORMAT_VERSION_MAX; v++) {
		struct scen sc = {.sv = v, .fv = v, .nm = &plain};
		struct tmp t;
		struct lb_array arr;
		struct tfs_schema spec;
		struct lb_written w[3];
		struct fvals vals[3];
		struct lb_frag f;
		struct rows want = {0};
		struct tfs_array *a;
		struct tfs_fragment_info fi;
		int64_t ux[16], uy[16];
		size_t n = 0;
		char *dir, what[16];

		snprintf(what, sizeof(what), "v%u", v);
		tmp_new(&t);
		dir = path_of(&t, "A");
		schema_for(&sc, true, &spec);
		lb_array_create(&arr, t.vfs, dir, &spec, 500);
		fvals_fill(&vals[0], 1, 11, sp1_x, sp1_y);
		fvals_fill(&vals[1], 2, 5, sp2_x, sp2_y);
		for (int k = 0; k < 2; k++) {
			frag_of(&f, &vals[k], v, 1000 * (uint64_t)(k + 1), true);
			lb_write_fragment(&arr, &f, &w[k]);
		}
		/* the union of both inputs' coordinates */
		for (int k = 0; k < 2; k++)
			for (uint64_t i = 0; i < vals[k].n; i++) {
				size_t j;

				for (j = 0; j < n; j++)
					if (ux[j] == vals[k].x[i] &&
					    uy[j] == vals[k].y[i])
						break;
				if (j == n) {
					ux[n] = vals[k].x[i];
					uy[n++] = vals[k].y[i];
				}
			}
		fvals_fill(&vals[2], 3, n, ux, uy);
		frag_of(&f, &vals[2], v, 1000, true);
		f.t2 = 2000;
		lb_write_fragment(&arr, &f, &w[2]);
		lb_write_vac(&arr, &w[2], w, 2, v < 19);
		{
			struct cellref cells[16];

			for (size_t i = 0; i < n; i++) {
				cells[i].x = ux[i];
				cells[i].y = uy[i];
				cells[i].k = 3;
			}
			qsort(cells, n, sizeof(*cells), cellref_cmp);
			for (size_t i = 0; i < n; i++)
				rows_add(&want, model_row(&sc, &arr.schemas[0], 3,
							  cells[i].x,
							  cells[i].y));
		}
		check_read(dir, NULL, &want, what);
		a = open_at(dir, 0);
		cr_assert_eq(tfs_array_fragment_count(a), 1, "%s", what);
		tfs_array_fragment(a, 0, &fi);
		cr_assert_str_eq(fi.name, w[2].name, "%s", what);
		cr_assert_eq(fi.t1, 1000);
		cr_assert_eq(fi.t2, 2000);
		cr_assert_eq(tfs_array_vacuum_count(a), 2, "%s", what);
		cr_assert_str_eq(tfs_array_vacuum_name(a, 0), w[0].name);
		cr_assert_str_eq(tfs_array_vacuum_name(a, 1), w[1].name);
		tfs_array_close(a);
		if (v < 15) {
			struct rows got = {0};

			a = open_at(dir, 1500);
			query_rows(a, NULL, 0, &got);
			cr_assert_eq(got.n, vals[0].n, "%s at 1500", what);
			rows_free(&got);
			tfs_array_close(a);
		}
		for (int k = 0; k < 3; k++) {
			lb_written_release(&w[k]);
			fvals_free(&vals[k]);
		}
		rows_free(&want);
		lb_array_release(&arr);
		tfs_schema_release(&spec);
		free(dir);
		tmp_free(&t);
	}
}

/* Versions 1–2 name a consolidated fragment __<uuid>_<tnow>_<t>: its
 * time is t, the last component (layout.md §2). */
Test(legacy, v1_v2_consolidated_names)
{
	for (uint32_t v = 1; v <= 2; v++) {
		struct scen sc = {.sv = v, .fv = v, .nm = &plain};
		static const int64_t box[2][4] = {{1, 6, 1, 5}, {2, 3, 2, 4}};
		struct tmp t;
		struct lb_array arr;
		struct tfs_schema spec;
		struct lb_written w[2];
		struct fvals vals[2];
		struct lb_frag f;
		struct rows want = {0};
		struct tfs_array *a;
		int owner[7][6] = {{0}};
		int32_t lo[2] = {1, 1}, hi[2] = {6, 5};
		struct tfs_range sub[2] = {
			{(uint8_t *)&lo[0], (uint8_t *)&hi[0], 4, 4},
			{(uint8_t *)&lo[1], (uint8_t *)&hi[1], 4, 4},
		};
		char *dir;

		tmp_new(&t);
		dir = path_of(&t, "A");
		schema_for(&sc, false, &spec);
		lb_array_create(&arr, t.vfs, dir, &spec, 0);
		for (int k = 0; k < 2; k++) {
			dense_box(&vals[k], k + 1, box[k][0], box[k][1],
				  box[k][2], box[k][3]);
			/* the consolidated one first, stamped later */
			frag_of(&f, &vals[k], v, k ? 1000 : 2000, false);
			f.t2 = k ? 0 : 9999999;
			for (int d = 0; d < 2; d++) {
				f.lo[d] = box[k][2 * d];
				f.hi[d] = box[k][2 * d + 1];
			}
			lb_write_fragment(&arr, &f, &w[k]);
			for (int64_t r = box[k][0]; r <= box[k][1]; r++)
				for (int64_t c = box[k][2]; c <= box[k][3]; c++)
					if (!k)
						owner[r][c] = 1;
		}
		for (int64_t r = 1; r <= 6; r++)
			for (int64_t c = 1; c <= 5; c++)
				rows_add(&want, model_row(&sc, &arr.schemas[0],
							  owner[r][c], r, c));
		cr_assert(strstr(w[0].name, "_9999999_2000"), "%s", w[0].name);
		check_read(dir, sub, &want, "v1-2 consolidated");
		a = open_at(dir, 0);
		{
			struct tfs_fragment_info fi;

			cr_assert_eq(tfs_array_fragment_count(a), 2);
			tfs_array_fragment(a, 1, &fi);
			cr_assert_str_eq(fi.name, w[0].name);
			cr_assert_eq(fi.t1, 2000);
			cr_assert_eq(fi.t2, 2000);
		}
		tfs_array_close(a);
		for (int k = 0; k < 2; k++) {
			lb_written_release(&w[k]);
			fvals_free(&vals[k]);
		}
		rows_free(&want);
		lb_array_release(&arr);
		tfs_schema_release(&spec);
		free(dir);
		tmp_free(&t);
	}
}

/* ---- allocation failures ------------------------------------------------------ */

/* Opening fails cleanly (TFS_E_NOMEM, nothing leaked: LeakSanitizer in
 * the ASan build) whichever allocation fails, also on the paths of update
 * commits, label paths and legacy metadata. */
static void open_sweep(const char *dir)
{
	long n;

	for (n = 0; n < 100000; n++) {
		struct tfs_open_opts o = {.threads = 1};
		struct tfs_array *a;
		struct tfs_diag d;
		enum tfs_err e;

		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs_array_open(dir, &o, &a, &d);
		tfs_alloc_fail_after(-1);
		if (e == TFS_E_OK) {
			tfs_array_close(a);
			break;
		}
		cr_assert_eq(e, TFS_E_NOMEM, "allocation %ld: %s", n,
			     tfs_diag_msg(&d));
		cr_assert_null(a);
	}
	cr_assert_gt(n, 10);
}

Test(faults, open_legacy_updates_labels)
{
	struct small sm;
	struct tmp t;
	char *upd, *dir;

	small_new(&sm, 16, true);
	upd = lb_write_condition(&sm.arr, "upd", 16, 16, 1500, "a", 100);
	open_sweep(sm.dir);
	free(upd);
	small_free(&sm);

	small_new(&sm, 1, false);
	open_sweep(sm.dir);
	small_free(&sm);

	tmp_new(&t);
	dir = path_of(&t, "A");
	lb_write_labelled(t.vfs, dir, 18);
	open_sweep(dir);
	free(dir);
	tmp_free(&t);
}
