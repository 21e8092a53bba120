/* Corrupt arrays: every corpus array, copied into the in-memory backend,
 * has its files truncated, bit-flipped, byte-shuffled, zeroed, extended or
 * swapped with another file of the array (schema, fragment metadata, data
 * tiles, commit, consolidated and metadata files alike), and encrypted
 * arrays are opened with a wrong key. Each mutated array is opened and read
 * whole (metadata, fragments, a full query). The outcome must be:
 *   - an error of the EIO class (corrupt, checksum, I/O, unsupported), a
 *     missing key (TFS_E_KEY) or a refused size (TFS_E_TOO_BIG), with a
 *     one-line message; or
 *   - the bytes of the unmutated read; or
 *   - other bytes only where nothing covers the mutated bytes: never for a
 *     byte-level change to an encrypted array (AES-GCM tags cover every
 *     file) or to a tile file whose filter pipeline has a checksum.
 * A crash, a hang (SIGALRM after TFS_CORRUPT_CASE_SECONDS) or a sanitizer
 * report fails the test too.
 *
 * Case k of array A is the same mutation for a given seed whatever the
 * time budget, so a failure reproduces with TFS_CORRUPT_ONLY=A and
 * TFS_CORRUPT_FROM=k. Environment:
 *   TFS_CORRUPT_SECONDS   time budget (default 60)
 *   TFS_CORRUPT_SEED      seed (default 1)
 *   TFS_CORRUPT_ONLY      one array by name
 *   TFS_CORRUPT_FROM      first case index (default 0)
 *   TFS_CORRUPT_CASES     at most this many cases per array (default: no
 *                         limit but the time)
 *   TFS_CORRUPT_VERBOSE   print every case and its outcome (after a crash,
 *                         the last line names the case) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "robust_util.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_format.h"

#define MAX_ARRAYS 128
#define MAX_FAILURES 20

enum mut_kind {
	MUT_TRUNCATE,
	MUT_FLIP,
	MUT_SHUFFLE,
	MUT_ZERO,
	MUT_EXTEND,
	MUT_SWAP,      /* two files exchange their content */
	MUT_WRONG_KEY, /* encrypted arrays: a wrong or no key */
	MUT__COUNT
};

static const char *const mut_names[MUT__COUNT] = {
	"truncate", "flip", "shuffle", "zero", "extend", "swap", "wrong-key",
};

/* What a mutated file is, for the summary (format/array.md layout). */
enum file_class {
	FC_SCHEMA,
	FC_FRAGMENT_META,
	FC_TILE,
	FC_COMMIT,
	FC_CONSOLIDATED,
	FC_METADATA,
	FC_OTHER,
	FC__COUNT
};

static const char *const class_names[FC__COUNT] = {
	"schema", "fragment-metadata", "tile", "commit", "consolidated",
	"array-metadata", "other",
};

static enum file_class classify(const char *rel)
{
	size_t n = strlen(rel);

	if (!strncmp(rel, "__schema/", 9) || !strcmp(rel, "__array_schema.tdb"))
		return FC_SCHEMA;
	if (!strncmp(rel, "__fragment_meta/", 16) ||
	    (n > 4 && (!strcmp(rel + n - 4, ".con") ||
		       !strcmp(rel + n - 4, ".vac") ||
		       !strcmp(rel + n - 4, ".ign"))))
		return FC_CONSOLIDATED;
	if (n >= 23 && !strcmp(rel + n - 23, "__fragment_metadata.tdb"))
		return FC_FRAGMENT_META;
	if (!strncmp(rel, "__commits/", 10))
		return FC_COMMIT;
	if (!strncmp(rel, "__meta/", 7))
		return FC_METADATA;
	/* __fragments/<name>/ since v12, <name>/ at the top before. */
	if (strchr(rel, '/'))
		return FC_TILE;
	return FC_OTHER;
}

struct subject {
	struct rb_array arr;
	bool encrypted;
	struct tfs_buf want; /* the unmutated read */
	uint64_t want_cells;
	bool *checksummed; /* per file: a tile file under a checksum */
	uint8_t *cls;      /* per file: enum file_class */
};

struct stats {
	unsigned long by_class[FC__COUNT];
	unsigned long tried;
	unsigned long by_kind[MUT__COUNT];
	unsigned long errors[TFS_E__COUNT];
	unsigned long same, undetected, covered, bounded, failures;
};

static char current_case[512];

static void on_alarm(int sig)
{
	static const char msg[] = "\nFAIL: hang (no result in time) in ";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0 ||
	    write(2, current_case, strlen(current_case)) < 0 ||
	    write(2, "\n", 1) < 0)
		_exit(3);
	_exit(3);
}

static bool has_checksum(const struct tfs_pipeline *p)
{
	for (uint32_t i = 0; i < p->count; i++)
		if (p->filters[i].type == TFS_FILTER_CHECKSUM_MD5 ||
		    p->filters[i].type == TFS_FILTER_CHECKSUM_SHA256)
			return true;
	return false;
}

/* The pipeline of a tile file of format v5+ ("a3.tdb", "a3_var.tdb",
 * "a3_validity.tdb", "d1.tdb", "d1_var.tdb": format/fragment.md), NULL
 * for any other file. */
static const struct tfs_pipeline *tile_pipeline(const struct tfs_schema *s,
						const char *rel)
{
	const char *base = strrchr(rel, '/');
	char kind, suffix[32];
	unsigned idx;
	int used = 0;

	base = base ? base + 1 : rel;
	if (strncmp(rel, "__fragments/", 12) != 0 ||
	    sscanf(base, "%c%u%n", &kind, &idx, &used) != 2)
		return NULL;
	snprintf(suffix, sizeof(suffix), "%s", base + used);
	if (kind == 'a' && idx < s->attr_num) {
		const struct tfs_attr *a = &s->attrs[idx];

		if (!strcmp(suffix, "_validity.tdb"))
			return a->nullable ? &s->validity_filters : NULL;
		if (!strcmp(suffix, "_var.tdb"))
			return a->var ? &a->filters : NULL;
		if (!strcmp(suffix, ".tdb"))
			return a->var ? &s->offsets_filters : &a->filters;
	} else if (kind == 'd' && idx < s->dim_num) {
		const struct tfs_dim *dm = &s->dims[idx];

		if (!strcmp(suffix, "_var.tdb"))
			return dm->var ? &dm->filters : NULL;
		if (!strcmp(suffix, ".tdb"))
			return dm->var ? &s->offsets_filters : &dm->filters;
	}
	return NULL;
}

static bool load_subject(struct subject *sub, const char *name,
			 const uint8_t *key, const struct rb_limits *lim)
{
	char dir[4096];
	struct tfs_open_opts oo;
	struct tfs_array *a;
	struct tfs_vfs *v;
	struct tfs_diag d;
	enum tfs_object obj;
	bool ok = false;

	memset(sub, 0, sizeof(*sub));
	tfs_buf_init(&sub->want, TFS_BUF_NO_MAX);
	if (snprintf(dir, sizeof(dir), "%s/%s", rb_corpus_dir(), name) >=
	    (int)sizeof(dir))
		return false;
	tfs_diag_init(&d);
	if (!rb_array_load(&sub->arr, dir, name) || sub->arr.file_num == 0)
		return false;
	v = rb_array_to_mem(&sub->arr, NULL, 0);
	if (!v)
		return false;
	tfs_diag_init(&d);
	if (tfs_object_type(v, RB_ROOT, &obj, &d) || obj != TFS_OBJECT_ARRAY)
		goto out_vfs;
	sub->encrypted = !strcmp(name, "encrypted");
	tfs_diag_init(&d);
	if (rb_read(v, sub->encrypted ? key : NULL, lim, &sub->want, &d)) {
		fprintf(stderr, "%s: unmutated read fails: %s\n", name, d.msg);
		goto out_vfs;
	}
	sub->checksummed = calloc(sub->arr.file_num, sizeof(bool));
	sub->cls = calloc(sub->arr.file_num, 1);
	memset(&oo, 0, sizeof(oo));
	oo.vfs = v;
	oo.key = sub->encrypted ? key : NULL;
	oo.threads = 1;
	tfs_diag_init(&d);
	if (!sub->checksummed || !sub->cls || tfs_array_open(RB_ROOT, &oo, &a, &d))
		goto out_vfs;
	for (size_t i = 0; i < sub->arr.file_num; i++) {
		const struct tfs_pipeline *p =
			tile_pipeline(tfs_array_schema(a), sub->arr.files[i].rel);

		sub->checksummed[i] = p && has_checksum(p);
		sub->cls[i] = (uint8_t)classify(sub->arr.files[i].rel);
	}
	tfs_array_close(a);
	ok = true;
out_vfs:
	tfs_vfs_free(v);
	return ok;
}

static void release_subject(struct subject *sub)
{
	rb_array_release(&sub->arr);
	tfs_buf_release(&sub->want);
	free(sub->checksummed);
	free(sub->cls);
}

/* An error a reader may see from damaged files. */
static bool acceptable_error(enum tfs_err e)
{
	switch (e) {
	case TFS_E_IO:
	case TFS_E_CORRUPT:
	case TFS_E_CHECKSUM:
	case TFS_E_UNSUPPORTED:
	case TFS_E_KEY:
	case TFS_E_TOO_BIG:
		return true;
	default:
		return false;
	}
}

struct mutation {
	enum mut_kind kind;
	size_t file, other;
	uint8_t *data; /* the mutated content of file */
	size_t len;
	uint8_t wrong_key[32];
	bool no_key;
	char what[200];
};

/* A file of a class drawn uniformly among the array's classes, so that
 * the few consolidated and metadata files get their share. */
static size_t pick_file(const struct subject *sub, uint64_t *rng)
{
	size_t count[FC__COUNT] = {0}, classes = 0, want, seen = 0;
	int c;

	for (size_t i = 0; i < sub->arr.file_num; i++)
		if (count[sub->cls[i]]++ == 0)
			classes++;
	want = (size_t)rb_below(rng, classes);
	for (c = 0; c < FC__COUNT; c++)
		if (count[c] && seen++ == want)
			break;
	want = (size_t)rb_below(rng, count[c]);
	for (size_t i = 0; i < sub->arr.file_num; i++)
		if (sub->cls[i] == c && want-- == 0)
			return i;
	return 0;
}

/* Draws case k's mutation of sub. */
static bool make_mutation(const struct subject *sub, uint64_t seed,
			  unsigned long k, bool uniform, struct mutation *m)
{
	uint64_t rng = seed;
	const struct rb_file *f;
	size_t n;

	for (const char *p = sub->arr.name; *p; p++)
		rng = rng * 131 + (uint8_t)*p;
	rng ^= (uint64_t)k * UINT64_C(0x2545f4914f6cdd1d);
	(void)rb_rand(&rng);
	memset(m, 0, sizeof(*m));
	m->kind = (enum mut_kind)rb_below(&rng, MUT__COUNT);
	if (m->kind == MUT_WRONG_KEY && !sub->encrypted)
		m->kind = MUT_FLIP;
	if (m->kind == MUT_SWAP && sub->arr.file_num < 2)
		m->kind = MUT_TRUNCATE;
	m->file = uniform ? (size_t)rb_below(&rng, sub->arr.file_num)
			  : pick_file(sub, &rng);
	f = &sub->arr.files[m->file];
	n = f->len;
	/* An empty file (a commit marker) can only grow. */
	if (n == 0 && m->kind != MUT_SWAP && m->kind != MUT_WRONG_KEY)
		m->kind = MUT_EXTEND;
	switch (m->kind) {
	case MUT_WRONG_KEY:
		m->no_key = rb_below(&rng, 4) == 0;
		for (size_t i = 0; i < 32; i++)
			m->wrong_key[i] = (uint8_t)rb_rand(&rng);
		snprintf(m->what, sizeof(m->what), "open with %s",
			 m->no_key ? "no key" : "a wrong key");
		return true;
	case MUT_SWAP:
		m->other = (size_t)rb_below(&rng, sub->arr.file_num - 1);
		if (m->other >= m->file)
			m->other++;
		snprintf(m->what, sizeof(m->what), "swap '%s' and '%s'", f->rel,
			 sub->arr.files[m->other].rel);
		return true;
	case MUT_TRUNCATE:
		/* Mostly near the end, where footers and trailers live. */
		m->len = rb_below(&rng, 2) ? (size_t)rb_below(&rng, n)
					   : n - 1 - (size_t)rb_below(
							     &rng, n < 64 ? n : 64);
		m->data = tfs_memdup(f->data, m->len);
		snprintf(m->what, sizeof(m->what), "truncate '%s' from %zu to %zu",
			 f->rel, n, m->len);
		return m->data != NULL;
	case MUT_EXTEND: {
		size_t extra = 1 + (size_t)rb_below(&rng, 64);

		m->len = n + extra;
		m->data = tfs_malloc(m->len);
		if (!m->data)
			return false;
		if (n)
			memcpy(m->data, f->data, n);
		for (size_t i = n; i < m->len; i++)
			m->data[i] = (uint8_t)rb_rand(&rng);
		snprintf(m->what, sizeof(m->what), "append %zu bytes to '%s'",
			 extra, f->rel);
		return true;
	}
	default:
		break;
	}
	m->len = n;
	m->data = tfs_memdup(f->data, n);
	if (!m->data)
		return false;
	if (m->kind == MUT_FLIP) {
		unsigned bits = 1 + (unsigned)rb_below(&rng, 4);
		/* Headers are small: half the flips go to the first 64 bytes
		 * or the last 64 (footers). */
		size_t at = 0;

		for (unsigned b = 0; b < bits; b++) {
			switch (rb_below(&rng, 4)) {
			case 0:
				at = (size_t)rb_below(&rng, n < 64 ? n : 64);
				break;
			case 1:
				at = n - 1 - (size_t)rb_below(&rng,
							      n < 64 ? n : 64);
				break;
			default:
				at = (size_t)rb_below(&rng, n);
			}
			m->data[at] ^= (uint8_t)(1u << rb_below(&rng, 8));
		}
		snprintf(m->what, sizeof(m->what),
			 "flip %u bit(s) of '%s' (last at %zu of %zu)", bits,
			 f->rel, at, n);
	} else if (m->kind == MUT_SHUFFLE) {
		size_t at = (size_t)rb_below(&rng, n);
		size_t w = 2 + (size_t)rb_below(&rng, 63);

		if (w > n - at)
			w = n - at;
		for (size_t i = w; i > 1; i--) {
			size_t j = (size_t)rb_below(&rng, i);
			uint8_t t = m->data[at + i - 1];

			m->data[at + i - 1] = m->data[at + j];
			m->data[at + j] = t;
		}
		snprintf(m->what, sizeof(m->what),
			 "shuffle bytes %zu..%zu of '%s'", at, at + w, f->rel);
	} else {
		size_t at = (size_t)rb_below(&rng, n);
		size_t w = 1 + (size_t)rb_below(&rng, 32);

		if (w > n - at)
			w = n - at;
		memset(m->data + at, 0, w);
		snprintf(m->what, sizeof(m->what),
			 "zero bytes %zu..%zu of '%s'", at, at + w, f->rel);
	}
	return true;
}

/* Whether an authenticated or checksummed encoding covers the change. */
static bool covered(const struct subject *sub, const struct mutation *m)
{
	/* Whole files moved keep valid tags: nothing binds a tile to its
	 * file name (as in TileDB), so a swap may read other cells. */
	if (m->kind == MUT_SWAP || m->kind == MUT_WRONG_KEY)
		return false;
	/* Appended bytes after a complete file are never read. */
	if (m->kind == MUT_EXTEND)
		return false;
	return sub->encrypted || sub->checksummed[m->file];
}

static void fail_case(struct stats *st, const char *what, const char *detail)
{
	st->failures++;
	fprintf(stderr, "FAIL: %s: %s%s\n", current_case, what, detail);
}

static void run_case(const struct subject *sub, const uint8_t *key,
		     uint64_t seed, unsigned long k, bool uniform,
		     struct stats *st)
{
	const struct rb_array *a = &sub->arr;
	struct rb_limits lim = {sub->want_cells * 16 + 65536,
				1 + (unsigned)(k & 1), NULL};
	struct rb_subst subst[2];
	size_t subst_num = 0;
	struct mutation m;
	struct tfs_buf got;
	struct tfs_vfs *v;
	struct tfs_diag d;
	const uint8_t *use_key = sub->encrypted ? key : NULL;
	enum tfs_err e;

	if (!make_mutation(sub, seed, k, uniform, &m)) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	snprintf(current_case, sizeof(current_case),
		 "array %s case %lu (seed %llu): %s", a->name, k,
		 (unsigned long long)seed, m.what);
	if (m.kind == MUT_SWAP) {
		subst[0] = (struct rb_subst){m.file, a->files[m.other].data,
					     a->files[m.other].len};
		subst[1] = (struct rb_subst){m.other, a->files[m.file].data,
					     a->files[m.file].len};
		subst_num = 2;
	} else if (m.kind == MUT_WRONG_KEY) {
		use_key = m.no_key ? NULL : m.wrong_key;
	} else {
		subst[0] = (struct rb_subst){m.file, m.data, m.len};
		subst_num = 1;
	}
	v = rb_array_to_mem(a, subst, subst_num);
	if (!v) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	st->tried++;
	st->by_kind[m.kind]++;
	if (m.kind != MUT_WRONG_KEY)
		st->by_class[sub->cls[m.file]]++;
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	e = rb_read(v, use_key, &lim, &got, &d);
	if (e == TFS_E_OK) {
		bool same = got.len == sub->want.len &&
			    memcmp(got.data, sub->want.data, got.len) == 0;

		if (same)
			st->same++;
		else if (covered(sub, &m))
			fail_case(st, "read other bytes where a checksum or "
				  "an AES-GCM tag covers them", "");
		else if (m.kind == MUT_WRONG_KEY)
			fail_case(st, "read without the right key", "");
		else
			st->undetected++;
	} else {
		st->errors[e]++;
		if (e == TFS_E_TOO_BIG && d.msg[0] == 'q')
			st->bounded++;
		if (!acceptable_error(e))
			fail_case(st, "unexpected error: ", d.msg);
		else if (!d.msg[0] || strchr(d.msg, '\n'))
			fail_case(st, "error without a one-line message: ",
				  d.msg);
		else if (m.kind == MUT_WRONG_KEY && e != TFS_E_KEY)
			fail_case(st, "a wrong key is not TFS_E_KEY: ", d.msg);
		if (covered(sub, &m))
			st->covered++;
	}
	if (getenv("TFS_CORRUPT_VERBOSE"))
		fprintf(stderr, "%s -> %s%s%s\n", current_case,
			e ? tfs_strerror(e) : "ok", e ? ": " : "",
			e ? d.msg : "");
	tfs_buf_release(&got);
	tfs_vfs_free(v);
	tfs_free(m.data);
}

/* Cases that found bugs, run first whatever the time budget (seed 1,
 * files drawn uniformly as when they were found). */
static const struct {
	const char *array;
	unsigned long k;
} regressions[] = {
	/* A fragment's non-empty domain outside the schema's domain. */
	{"dense_2d_rowmajor", 21},
	{"sparse_hilbert", 210},
	/* Fragment metadata naming a file that is not there. */
	{"schema_evolution", 407},
};

static void run_regressions(struct subject *subs, size_t sub_num,
			    const uint8_t *key, struct stats *st)
{
	for (size_t r = 0; r < sizeof(regressions) / sizeof(regressions[0]);
	     r++)
		for (size_t i = 0; i < sub_num; i++)
			if (!strcmp(subs[i].arr.name, regressions[r].array))
				run_case(&subs[i], key, 1, regressions[r].k,
					 true, st);
}

/* A tile file of a committed fragment that is gone: EIO (TFS_E_CORRUPT)
 * naming the file, not ENOENT, which the daemon would turn into a file
 * that vanishes between stat and read. */
static void missing_tile_file(const struct subject *sub, struct stats *st)
{
	struct rb_limits lim = {UINT64_C(1) << 26, 1, NULL};
	const struct rb_array *a = &sub->arr;
	struct tfs_buf got;
	struct tfs_diag d;
	unsigned removed = 0;

	for (size_t i = 0; i < a->file_num; i++) {
		const char *base = strrchr(a->files[i].rel, '/');
		struct tfs_vfs *v;
		char path[4096];
		enum tfs_err e;

		if (!base || strcmp(base, "/a0.tdb") ||
		    strncmp(a->files[i].rel, "__fragments/", 12))
			continue;
		snprintf(current_case, sizeof(current_case),
			 "array %s without '%s'", a->name, a->files[i].rel);
		v = rb_array_to_mem(a, NULL, 0);
		snprintf(path, sizeof(path), RB_ROOT "/%s", a->files[i].rel);
		tfs_diag_init(&d);
		if (!v || tfs_vfs_remove(v, path, &d)) {
			fail_case(st, "setup: ", d.msg);
			tfs_vfs_free(v);
			return;
		}
		tfs_buf_init(&got, TFS_BUF_NO_MAX);
		tfs_diag_init(&d);
		e = rb_read(v, NULL, &lim, &got, &d);
		if (e != TFS_E_CORRUPT || !strstr(d.msg, "is missing"))
			fail_case(st, "want 'corrupt data: ... is missing', got: ",
				  e ? d.msg : "success");
		tfs_buf_release(&got);
		tfs_vfs_free(v);
		removed++;
	}
	if (removed == 0)
		fail_case(st, "no fragment file 'a0.tdb' in ", a->name);
}

/* The footer of a fragment's metadata (format/fragment.md §3) is neither
 * encrypted nor checksummed: its non-empty domain, shrunk inside the
 * schema's domain, must still be refused (EIO), by the AES-GCM-covered
 * R-tree of sparse fragments and the tile count of dense ones, never
 * silently drop cells. */
static void footer_domain_shrunk(const struct subject *sub,
				 const uint8_t *key, struct stats *st)
{
	struct rb_limits lim = {UINT64_C(1) << 26, 1, NULL};
	const struct rb_array *a = &sub->arr;
	unsigned done = 0;

	for (size_t i = 0; i < a->file_num; i++) {
		const struct rb_file *f = &a->files[i];
		struct rb_subst s;
		struct tfs_buf got;
		struct tfs_diag d;
		struct tfs_vfs *v;
		uint64_t flen, at, nlen;
		uint8_t *copy;
		int32_t lo, hi;
		enum tfs_err e;

		if (sub->cls[i] != FC_FRAGMENT_META || f->len < 8 + 14)
			continue;
		flen = tfs_get_u64(f->data + f->len - 8);
		if (flen > f->len - 8 - 14)
			continue;
		at = f->len - 8 - flen; /* version u32, name length u64 */
		nlen = tfs_get_u64(f->data + at + 4);
		if (nlen > flen - 14 - 8)
			continue;
		at += 4 + 8 + nlen + 2; /* dense and empty flags */
		lo = (int32_t)tfs_get_u32(f->data + at);
		hi = (int32_t)tfs_get_u32(f->data + at + 4);
		if (hi - lo < 2)
			continue;
		copy = tfs_memdup(f->data, f->len);
		if (!copy)
			exit(2);
		tfs_put_u32(copy + at + 4, (uint32_t)(lo + (hi - lo) / 2));
		snprintf(current_case, sizeof(current_case),
			 "array %s: the footer of '%s' with dimension 0 to %d "
			 "instead of %d",
			 a->name, f->rel, lo + (hi - lo) / 2, hi);
		s = (struct rb_subst){i, copy, f->len};
		v = rb_array_to_mem(a, &s, 1);
		if (!v)
			exit(2);
		tfs_buf_init(&got, TFS_BUF_NO_MAX);
		tfs_diag_init(&d);
		e = rb_read(v, sub->encrypted ? key : NULL, &lim, &got, &d);
		if (e != TFS_E_CORRUPT)
			fail_case(st, "want corrupt data, got: ",
				  e ? d.msg : "success");
		tfs_buf_release(&got);
		tfs_vfs_free(v);
		tfs_free(copy);
		done++;
	}
	if (!done)
		fail_case(st, "no fragment footer with an int32 domain in ",
			  a->name);
}

static size_t corpus_names(char names[][96], size_t cap)
{
	char path[4096], line[512];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/INDEX.tsv", rb_corpus_dir());
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (n < cap && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\t\n");

		if (len == 0 || len >= 96)
			continue;
		memcpy(names[n], line, len);
		names[n][len] = '\0';
		n++;
	}
	fclose(f);
	return n;
}

int main(void)
{
	static char names[MAX_ARRAYS][96];
	static struct subject subs[MAX_ARRAYS];
	double budget = (double)rb_env_ulong("TFS_CORRUPT_SECONDS", 60);
	uint64_t seed = rb_env_ulong("TFS_CORRUPT_SEED", 1);
	unsigned long from = rb_env_ulong("TFS_CORRUPT_FROM", 0);
	unsigned long max_cases = rb_env_ulong("TFS_CORRUPT_CASES", ~0UL);
	unsigned case_secs = (unsigned)rb_env_ulong("TFS_CORRUPT_CASE_SECONDS", 60);
	const char *only = getenv("TFS_CORRUPT_ONLY");
	struct rb_limits lim = {UINT64_C(1) << 26, 1, NULL};
	struct sigaction sa;
	struct stats st;
	size_t name_num, sub_num = 0;
	uint8_t key[32];
	unsigned long k;
	double start;

	memset(&st, 0, sizeof(st));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	if (!rb_corpus_key(key)) {
		fprintf(stderr, "FAIL: no key in %s/encrypted.json\n",
			rb_corpus_dir());
		return 1;
	}
	name_num = corpus_names(names, MAX_ARRAYS);
	for (size_t i = 0; i < name_num; i++) {
		if (only && strcmp(only, names[i]))
			continue;
		if (!load_subject(&subs[sub_num], names[i], key, &lim)) {
			release_subject(&subs[sub_num]);
			continue; /* groups and what is no array */
		}
		subs[sub_num].want_cells =
			subs[sub_num].want.len; /* a generous bound */
		sub_num++;
	}
	if (sub_num < (only ? 1u : 40u)) {
		fprintf(stderr, "FAIL: only %zu corpus arrays read\n", sub_num);
		return 1;
	}
	start = rb_now();
	if (!only) {
		run_regressions(subs, sub_num, key, &st);
		for (size_t i = 0; i < sub_num; i++)
			if (!strcmp(subs[i].arr.name, "dense_1d"))
				missing_tile_file(&subs[i], &st);
		for (size_t i = 0; i < sub_num; i++)
			if (!strcmp(subs[i].arr.name, "dense_1d") ||
			    !strcmp(subs[i].arr.name, "sparse_2d_int") ||
			    !strcmp(subs[i].arr.name, "encrypted"))
				footer_domain_shrunk(&subs[i], key, &st);
	}
	for (k = from; k - from < max_cases && rb_now() - start < budget &&
		       st.failures < MAX_FAILURES;
	     k++) {
		for (size_t i = 0; i < sub_num && st.failures < MAX_FAILURES;
		     i++) {
			alarm(case_secs);
			run_case(&subs[i], key, seed, k, false, &st);
			alarm(0);
		}
	}
	printf("corrupt arrays: %zu arrays, %lu mutated arrays tried (cases "
	       "%lu..%lu, seed %llu) in %.1f s\n",
	       sub_num, st.tried, from, k - 1, (unsigned long long)seed,
	       rb_now() - start);
	printf("  by mutation:");
	for (int i = 0; i < MUT__COUNT; i++)
		printf(" %s %lu", mut_names[i], st.by_kind[i]);
	printf("\n  by file:");
	for (int i = 0; i < FC__COUNT; i++)
		printf(" %s %lu", class_names[i], st.by_class[i]);
	printf("\n  outcome: same bytes %lu, other bytes where nothing "
	       "covers them %lu, stopped by the test's cell bound %lu\n",
	       st.same, st.undetected, st.bounded);
	printf("  errors:");
	for (int i = 0; i < TFS_E__COUNT; i++)
		if (st.errors[i])
			printf(" %s %lu", tfs_strerror((enum tfs_err)i),
			       st.errors[i]);
	printf("\n  byte changes under a checksum or AES-GCM: %lu refused\n",
	       st.covered);
	for (size_t i = 0; i < sub_num; i++)
		release_subject(&subs[i]);
	if (st.failures) {
		printf("FAIL: %lu case(s)\n", st.failures);
		return 1;
	}
	return 0;
}
