/* Consolidation and vacuum (core/maintain) on in-memory copies of corpus
 * arrays and of arrays the writer wrote: every read, at every time around
 * the fragments' timestamps, is the same before and after; what is made
 * and removed is what format/consolidated.md describes; a failure at any
 * storage call leaves the array reading as before. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_fragment.h"
#include "vfs_test_util.h"
#include <tilefs/tilefs.h>

#define CORPUS TFS_CORPUS_DIR
/* 2100-01-01: later than every fragment the tests write. */
#define FAR_FUTURE UINT64_C(4102444800000)

static size_t count_files(struct tfs_vfs *v, const char *dir, const char *ext)
{
	struct tfs_dirlist l;
	struct tfs_diag d;
	size_t n = 0;

	tfs_diag_init(&d);
	if (tfs_vfs_list(v, dir, &l, &d))
		return 0;
	for (size_t i = 0; i < l.count; i++) {
		size_t a = strlen(l.names[i]), b = strlen(ext);

		n += a >= b && !strcmp(l.names[i] + a - b, ext);
	}
	tfs_dirlist_release(&l);
	return n;
}

/* ---- What a reader sees ---------------------------------------------------- */

/* The key arrays are opened with (the encrypted test sets it). */
static const uint8_t *test_key;
/* Whether snapshots hold the non-empty domain (see fragments_roundtrip). */
static bool snap_ned = true;

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void hex(struct tfs_buf *b, const void *p, uint64_t n)
{
	const uint8_t *s = p;

	for (uint64_t i = 0; i < n; i++)
		cr_assert_eq(tfs_buf_printf(b, "%02x", s[i]), TFS_E_OK);
}

/* Everything a read of the array at ts shows (0 = now): non-empty domain,
 * metadata and every cell of the non-empty domain, one line per cell,
 * sorted (duplicates of sparse arrays come in any order). NULL when the
 * array does not open. */
static char *snapshot(struct tfs_vfs *v, uint64_t ts)
{
	struct tfs_open_opts oo = {.vfs = v, .key = test_key, .timestamp = ts,
				   .threads = 1};
	struct tfs_range ned[16];
	struct tfs_array *a;
	struct tfs_query *q;
	struct tfs_query_opts qo = {0};
	struct tfs_diag d;
	struct tfs_buf out, line;
	char **lines = NULL;
	size_t n = 0, cap = 0;
	const struct tfs_schema *s;

	tfs_diag_init(&d);
	if (tfs_array_open("/A", &oo, &a, &d))
		return NULL;
	s = tfs_array_schema(a);
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	tfs_buf_init(&line, TFS_BUF_NO_MAX);
	if (snap_ned && tfs_array_non_empty_domain(a, ned)) {
		for (uint32_t k = 0; k < s->dim_num; k++) {
			cr_assert_eq(tfs_buf_printf(&out, "ned %u ", k),
				     TFS_E_OK);
			hex(&out, ned[k].lo, ned[k].lo_len);
			cr_assert_eq(tfs_buf_append_u8(&out, ':'), TFS_E_OK);
			hex(&out, ned[k].hi, ned[k].hi_len);
			cr_assert_eq(tfs_buf_append_u8(&out, '\n'), TFS_E_OK);
		}
	}
	for (size_t i = 0; i < tfs_array_metadata_count(a); i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(a, i);

		cr_assert_eq(tfs_buf_printf(&out, "meta %s %u %u ", kv->key,
					    kv->type, kv->value_num),
			     TFS_E_OK);
		hex(&out, kv->value,
		    (uint64_t)kv->value_num * tfs_datatype_size(kv->type));
		cr_assert_eq(tfs_buf_append_u8(&out, '\n'), TFS_E_OK);
	}
	if (tfs_array_non_empty_domain(a, ned)) {
		const struct tfs_batch *b;

		cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		while (tfs_query_next(q, &b, &d) == TFS_E_OK && b) {
			for (uint64_t i = 0; i < b->cell_num; i++) {
				line.len = 0;
				for (size_t c = 0; c < b->column_num; c++) {
					const struct tfs_column *col =
						&b->columns[c];
					uint64_t lo, hi;

					if (col->var) {
						lo = col->offsets[i];
						hi = col->offsets[i + 1];
					} else {
						uint64_t sz = col->data_len /
							      b->cell_num;

						lo = i * sz;
						hi = lo + sz;
					}
					cr_assert_eq(tfs_buf_printf(&line, "%s=",
								    col->name),
						     TFS_E_OK);
					if (col->nullable && !col->validity[i])
						cr_assert_eq(tfs_buf_printf(
								     &line,
								     "null"),
							     TFS_E_OK);
					else
						hex(&line, col->data + lo,
						    hi - lo);
					cr_assert_eq(tfs_buf_append_u8(&line,
								       ' '),
						     TFS_E_OK);
				}
				cr_assert_eq(tfs_buf_append_u8(&line, 0),
					     TFS_E_OK);
				if (n == cap) {
					cap = cap ? cap * 2 : 64;
					lines = realloc(lines,
							cap * sizeof(*lines));
					cr_assert(lines);
				}
				lines[n++] = strdup((const char *)line.data);
			}
		}
		cr_assert_eq(d.code, TFS_E_OK, "%s", tfs_diag_msg(&d));
		tfs_query_close(q);
	}
	if (n)
		qsort(lines, n, sizeof(*lines), line_cmp);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(tfs_buf_printf(&out, "%s\n", lines[i]), TFS_E_OK);
		free(lines[i]);
	}
	free(lines);
	tfs_buf_release(&line);
	tfs_array_close(a);
	cr_assert_eq(tfs_buf_append_u8(&out, 0), TFS_E_OK);
	return (char *)tfs_buf_detach(&out, NULL);
}

/* Reads at every interesting time: far ahead, and around each fragment's and
 * metadata file's timestamps. */
struct snaps {
	uint64_t times[1024];
	char *text[1024];
	size_t n;
};

static void add_time(struct snaps *s, uint64_t t)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->times[i] == t)
			return;
	if (s->n < 1024)
		s->times[s->n++] = t;
}

/* Every time around the fragments' timestamps (at most `limit` fragments
 * looked at, spread over the list). */
static void snaps_take(struct snaps *s, struct tfs_vfs *v, size_t limit)
{
	struct tfs_open_opts oo = {.vfs = v, .key = test_key, .threads = 1};
	struct tfs_array *a;
	struct tfs_diag d;
	size_t n;

	memset(s, 0, sizeof(*s));
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open("/A", &oo, &a, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	/* "Now" as a fixed time far ahead: the writer may stamp fragments a
	 * few ms into the future (it never reuses a timestamp). */
	add_time(s, FAR_FUTURE);
	n = tfs_array_fragment_count(a);
	for (size_t i = 0; i < n; i++) {
		struct tfs_fragment_info f;

		if (n > limit && i % (n / limit + 1) && i != n - 1)
			continue;
		tfs_array_fragment(a, i, &f);
		add_time(s, f.t1 - 1);
		add_time(s, f.t1);
		add_time(s, f.t2);
		add_time(s, f.t2 + 1);
	}
	/* metadata files of the corpus are stamped on whole seconds */
	for (uint64_t t = 1700000000500; t < 1700000006000; t += 1000)
		add_time(s, t);
	tfs_array_close(a);
	for (size_t i = 0; i < s->n; i++)
		s->text[i] = snapshot(v, s->times[i]);
}

static void snaps_check(const struct snaps *s, struct tfs_vfs *v,
			const char *what)
{
	for (size_t i = 0; i < s->n; i++) {
		char *now = snapshot(v, s->times[i]);

		cr_assert(s->text[i] && now, "%s: array does not open at %" PRIu64,
			  what, s->times[i]);
		if (strcmp(now, s->text[i])) {
			FILE *f = fopen("/tmp/tfs-maintain-diff.txt", "w");

			if (f) {
				fprintf(f, "BEFORE\n%s\nAFTER\n%s\n", s->text[i],
					now);
				fclose(f);
			}
		}
		cr_assert_str_eq(now, s->text[i], "%s: read at %" PRIu64
						  " differs",
				 what, s->times[i]);
		free(now);
	}
}

/* Only the read at now. */
static void snaps_check_now(const struct snaps *s, struct tfs_vfs *v,
			    const char *what)
{
	char *now = snapshot(v, FAR_FUTURE);

	cr_assert(now);
	cr_assert_str_eq(now, s->text[0], "%s: read now differs", what);
	free(now);
}

static void snaps_release(struct snaps *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->text[i]);
}

static enum tfs_err consolidate(struct tfs_vfs *v, enum tfs_consolidate_mode m,
				uint64_t start, uint64_t end, char *made,
				struct tfs_diag *d)
{
	struct tfs_consolidate_opts co = {.write = {.vfs = v, .key = test_key,
						    .threads = 1},
					  .start = start, .end = end};

	tfs_diag_init(d);
	return tfs_array_consolidate("/A", m, &co, made, 256, d);
}

static enum tfs_err vacuum(struct tfs_vfs *v, enum tfs_consolidate_mode m,
			   unsigned *removed, struct tfs_diag *d)
{
	struct tfs_write_opts wo = {.vfs = v, .key = test_key};

	tfs_diag_init(d);
	return tfs_array_vacuum("/A", m, &wo, removed, d);
}

static size_t listed_fragments(struct tfs_vfs *v, size_t *consolidated_meta)
{
	struct tfs_open_opts oo = {.vfs = v, .key = test_key, .threads = 1};
	struct tfs_array *a;
	struct tfs_diag d;
	size_t n;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open("/A", &oo, &a, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	n = tfs_array_fragment_count(a);
	if (consolidated_meta) {
		*consolidated_meta = 0;
		for (size_t i = 0; i < n; i++) {
			struct tfs_fragment_info f;

			tfs_array_fragment(a, i, &f);
			*consolidated_meta += f.consolidated_metadata;
		}
	}
	tfs_array_close(a);
	return n;
}

/* ---- Fragment metadata ------------------------------------------------------ */

Test(maintain, fragment_meta)
{
	static const char *const arrays[] = {"many_fragments",
					     "dense_fragments_overlap",
					     "consolidated_fragment_meta"};

	for (size_t k = 0; k < sizeof(arrays) / sizeof(*arrays); k++) {
		struct tfs_vfs *v = vt_mem_copy(arrays[k]);
		struct snaps s;
		struct tfs_diag d;
		char made[256];
		size_t n, cm, metas;
		unsigned removed;

		snaps_take(&s, v, 8);
		n = listed_fragments(v, NULL);
		metas = count_files(v, "/A/__fragment_meta", ".meta");
		cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENT_META, 0, 0,
					 made, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert(made[0] && strstr(made, ".meta"), "%s", made);
		cr_assert_eq(count_files(v, "/A/__fragment_meta", ".meta"),
			     metas + 1);
		cr_assert_eq(listed_fragments(v, &cm), n);
		cr_assert_eq(cm, n, "%s: every footer from the .meta", arrays[k]);
		snaps_check(&s, v, arrays[k]);
		/* A second one; vacuum keeps the newest only. */
		cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENT_META, 0, 0,
					 made, &d),
			     TFS_E_OK);
		cr_assert_eq(vacuum(v, TFS_CONSOLIDATE_FRAGMENT_META, &removed,
				    &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_eq(removed, metas + 1);
		cr_assert_eq(count_files(v, "/A/__fragment_meta", ".meta"), 1);
		snaps_check(&s, v, arrays[k]);
		snaps_release(&s);
		tfs_vfs_free(v);
	}
}

/* ---- Commits ------------------------------------------------------------------- */

Test(maintain, commits)
{
	static const char *const arrays[] = {"consolidated_commits",
					     "many_fragments", "delete_condition",
					     "dense_fragments_overlap"};

	for (size_t k = 0; k < sizeof(arrays) / sizeof(*arrays); k++) {
		struct tfs_vfs *v = vt_mem_copy(arrays[k]);
		struct snaps s;
		struct tfs_diag d;
		char made[256];
		size_t n, wrt;
		unsigned removed;

		snaps_take(&s, v, 8);
		n = listed_fragments(v, NULL);
		wrt = count_files(v, "/A/__commits", ".wrt");
		cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_COMMITS, 0, 0, made,
					 &d),
			     TFS_E_OK, "%s: %s", arrays[k], tfs_diag_msg(&d));
		/* consolidated_commits has one .con of everything already */
		cr_assert(strstr(made, ".con") ||
				  !strcmp(arrays[k], "consolidated_commits"),
			  "%s: made '%s'", arrays[k], made);
		snaps_check(&s, v, arrays[k]);
		cr_assert_eq(vacuum(v, TFS_CONSOLIDATE_COMMITS, &removed, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_geq(removed, wrt, "%s: %u removed", arrays[k],
			      removed);
		cr_assert_eq(count_files(v, "/A/__commits", ".wrt"), 0);
		cr_assert_eq(count_files(v, "/A/__commits", ".del"), 0);
		cr_assert_eq(count_files(v, "/A/__commits", ".con"), 1);
		cr_assert_eq(listed_fragments(v, NULL), n);
		snaps_check(&s, v, arrays[k]);
		/* Nothing left to do. */
		cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_COMMITS, 0, 0, made,
					 &d),
			     TFS_E_OK);
		cr_assert_str_eq(made, "");
		snaps_release(&s);
		tfs_vfs_free(v);
	}
}

/* ---- Array metadata --------------------------------------------------------------- */

Test(maintain, array_meta)
{
	struct tfs_vfs *v = vt_mem_copy("metadata");
	struct snaps s;
	struct tfs_diag d;
	char made[256];
	unsigned removed;
	size_t files = count_files(v, "/A/__meta", "");

	snaps_take(&s, v, 8);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_ARRAY_META, 0, 0, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(made[0]);
	cr_assert_eq(count_files(v, "/A/__meta", ".vac"), 1);
	snaps_check(&s, v, "metadata");
	/* A damaged line naming the array folder itself changes nothing. */
	{
		struct tfs_dirlist l;
		char *vac;

		cr_assert_eq(tfs_vfs_list(v, "/A/__meta", &l, &d), TFS_E_OK);
		for (size_t i = 0; i < l.count; i++)
			if (strstr(l.names[i], ".vac")) {
				vac = tfs_path_join("/A/__meta", l.names[i]);
				cr_assert_eq(tfs_vfs_append(v, vac,
							    "__meta/..\n__meta/\n",
							    18, &d),
					     TFS_E_OK);
				tfs_free(vac);
			}
		tfs_dirlist_release(&l);
	}
	cr_assert_eq(vacuum(v, TFS_CONSOLIDATE_ARRAY_META, &removed, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(removed, files);
	cr_assert_eq(count_files(v, "/A/__meta", ""), 1);
	snaps_check_now(&s, v, "metadata");
	/* One file: nothing to do. */
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_ARRAY_META, 0, 0, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_str_eq(made, "");
	snaps_release(&s);
	tfs_vfs_free(v);
}

static void fragments_roundtrip(struct tfs_vfs *v, const char *what);
static bool is_sparse(struct tfs_vfs *v);

/* The key of the corpus's encrypted array, from its JSON. */
static void corpus_key(uint8_t key[32])
{
	char *path = vt_fmt("%s/encrypted.json", CORPUS);
	FILE *f = fopen(path, "r");
	char text[8192], hexkey[65];
	size_t n;
	const char *p;

	cr_assert(f, "%s", path);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	free(path);
	p = strstr(text, "\"key_hex\":\"");
	cr_assert(p);
	memcpy(hexkey, p + 11, 64);
	hexkey[64] = '\0';
	cr_assert_eq(tfs_key_from_hex(key, hexkey), TFS_E_OK);
}

/* Encrypted arrays: refused without the key (nothing written), the same
 * reads with it. */
Test(maintain, encrypted)
{
	struct tfs_vfs *v = vt_mem_copy("encrypted");
	uint8_t key[32];
	struct snaps s;
	struct tfs_diag d;
	char made[256];
	unsigned removed;

	corpus_key(key);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENT_META, 0, 0, made,
				 &d),
		     TFS_E_KEY, "%s", tfs_diag_msg(&d));
	cr_assert_eq(count_files(v, "/A/__fragment_meta", ""), 0);
	test_key = key;
	snaps_take(&s, v, 8);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENT_META, 0, 0, made,
				 &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(count_files(v, "/A/__fragment_meta", ".meta"), 1);
	snaps_check(&s, v, "encrypted fragment meta");
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_COMMITS, 0, 0, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(vacuum(v, TFS_CONSOLIDATE_COMMITS, &removed, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	snaps_check(&s, v, "encrypted commits");
	snaps_release(&s);
	fragments_roundtrip(v, "encrypted");
	test_key = NULL;
	tfs_vfs_free(v);
}

/* ---- Fragments ---------------------------------------------------------------------- */

/* Consolidates every fragment, checks reads at every time, vacuums,
 * checks the read now. */
static bool is_sparse(struct tfs_vfs *v)
{
	struct tfs_open_opts oo = {.vfs = v, .key = test_key, .threads = 1};
	struct tfs_array *a;
	struct tfs_diag d;
	bool sparse;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open("/A", &oo, &a, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	sparse = tfs_array_schema(a)->array_type == TFS_SPARSE;
	tfs_array_close(a);
	return sparse;
}

static void fragments_roundtrip(struct tfs_vfs *v, const char *what)
{
	struct snaps s;
	struct tfs_diag d;
	char made[256];
	unsigned removed;
	size_t n;
	bool sparse = is_sparse(v);
	/* Cells a delete commit removes are dropped: reads at now and ahead
	 * stay (but for the non-empty domain, which shrinks to the cells
	 * kept), time travel to before the delete no longer sees them. */
	bool purged = count_files(v, "/A/__commits", ".del") > 0;
	char *far_before, *far_after;

	snap_ned = !purged;
	far_before = snapshot(v, FAR_FUTURE);

	/* A sparse fragment with per-cell timestamps counts its whole
	 * bounding box in the non-empty domain as soon as any of its cells
	 * is visible, as in TileDB: inside the range only the cells are
	 * compared, after it the non-empty domain too. */
	if (sparse)
		snap_ned = false;
	snaps_take(&s, v, 12);
	n = listed_fragments(v, NULL);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 0, 0, made, &d),
		     TFS_E_OK, "%s: %s", what, tfs_diag_msg(&d));
	if (n < 2) {
		cr_assert_str_eq(made, "", "%s", what);
		snaps_release(&s);
		snap_ned = true;
		free(far_before);
		return;
	}
	cr_assert(made[0], "%s", what);
	cr_assert_eq(count_files(v, "/A/__commits", ".vac"), 1, "%s", what);
	cr_assert_eq(listed_fragments(v, NULL), 1, "%s", what);
	if (purged)
		snaps_check_now(&s, v, what);
	else
		snaps_check(&s, v, what);
	snap_ned = !purged;
	far_after = snapshot(v, FAR_FUTURE);
	cr_assert_str_eq(far_after, far_before, "%s: read far ahead", what);
	free(far_after);
	cr_assert_eq(vacuum(v, TFS_CONSOLIDATE_FRAGMENTS, &removed, &d),
		     TFS_E_OK, "%s: %s", what, tfs_diag_msg(&d));
	cr_assert_eq(removed, n, "%s: %u of %zu removed", what, removed, n);
	cr_assert_eq(count_files(v, "/A/__commits", ".vac"), 0);
	cr_assert_eq(count_files(v, "/A/__commits", ".wrt"), 1);
	cr_assert_eq(listed_fragments(v, NULL), 1);
	snap_ned = !sparse;
	snaps_check_now(&s, v, what);
	snap_ned = !purged;
	far_after = snapshot(v, FAR_FUTURE);
	snap_ned = true;
	cr_assert_str_eq(far_after, far_before, "%s: after vacuum", what);
	free(far_after);
	free(far_before);
	snaps_release(&s);
}

/* Consolidating fragments that a delete commit covers writes them without
 * the deleted cells: with the delete commit then removed, the array still
 * reads what it read with it. */
Test(maintain, fragments_drop_deleted_cells)
{
	struct tfs_vfs *v = vt_mem_copy("delete_condition");
	struct tfs_dirlist l;
	struct tfs_diag d;
	char made[256];
	char *before, *after;
	size_t dels = 0;

	snap_ned = false;
	before = snapshot(v, FAR_FUTURE);

	cr_assert_eq(count_files(v, "/A/__commits", ".del"), 1);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 0, 0, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(made[0]);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(v, "/A/__commits", &l, &d), TFS_E_OK);
	for (size_t i = 0; i < l.count; i++) {
		size_t n = strlen(l.names[i]);
		char *p;

		if (n < 4 || strcmp(l.names[i] + n - 4, ".del"))
			continue;
		p = vt_fmt("/A/__commits/%s", l.names[i]);
		cr_assert_eq(tfs_vfs_remove(v, p, &d), TFS_E_OK);
		free(p);
		dels++;
	}
	tfs_dirlist_release(&l);
	cr_assert_eq(dels, 1);
	after = snapshot(v, FAR_FUTURE);
	snap_ned = true;
	cr_assert_str_eq(after, before);
	free(after);
	free(before);
	tfs_vfs_free(v);
}

Test(maintain, fragments_corpus)
{
	static const char *const arrays[] = {
		"dense_fragments_overlap", "sparse_timetravel", "sparse_dups",
		"many_fragments", "consolidated_fragment_meta",
		"consolidated_commits", "dense_nullable", "delete_condition",
		"consolidated_fragments"};

	for (size_t k = 0; k < sizeof(arrays) / sizeof(*arrays); k++) {
		struct tfs_vfs *v = vt_mem_copy(arrays[k]);

		fragments_roundtrip(v, arrays[k]);
		tfs_vfs_free(v);
	}
}

/* A part of the time range; then a range that cuts through the
 * consolidated fragment's range is refused. */
Test(maintain, fragments_range)
{
	struct tfs_vfs *v = vt_mem_copy("dense_fragments_overlap");
	struct snaps s;
	struct tfs_diag d;
	char made[256];

	snaps_take(&s, v, 8);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 1700000002000,
				 1700000003000, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(!strncmp(made, "__1700000002000_1700000003000_", 30), "%s",
		  made);
	cr_assert_eq(listed_fragments(v, NULL), 3);
	snaps_check(&s, v, "range");
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 1700000002500,
				 1700000004000, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_str_eq(made, "", "one fragment in range: nothing to do");
	/* A range with a fragment at 2500 inside and the consolidated one
	 * half in. */
	{
		struct tfs_write_opts wo = {.vfs = v, .t1 = 1700000002500,
					    .t2 = 1700000002500, .threads = 1};
		int32_t r[2] = {2, 3}, c[2] = {2, 2};
		struct tfs_range box[2] = {{.lo = (const uint8_t *)&r[0], .hi = (const uint8_t *)&r[1],
					    .lo_len = 4, .hi_len = 4},
					   {.lo = (const uint8_t *)&c[0], .hi = (const uint8_t *)&c[1],
					    .lo_len = 4, .hi_len = 4}};
		int32_t a[2] = {-7, -8};
		uint64_t offs[3] = {0, 1, 2};
		struct tfs_column cols[2] = {
			{.name = "a", .type = TFS_INT32, .cell_val_num = 1,
			 .data = (const uint8_t *)a, .data_len = 8},
			{.name = "s", .type = TFS_STRING_ASCII,
			 .cell_val_num = TFS_VAR_NUM, .var = true,
			 .data = (const uint8_t *)"xy", .data_len = 2,
			 .offsets = offs}};
		struct tfs_batch b = {.cell_num = 2, .column_num = 2,
				      .columns = cols};
		struct tfs_writer *w;
		struct tfs_write_result res;

		tfs_diag_init(&d);
		cr_assert_eq(tfs_writer_open("/A", &wo, TFS_WRITE_DENSE_BOX,
					     box, &w, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_eq(tfs_writer_append(w, &b, NULL, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		cr_assert_eq(tfs_writer_commit(w, &res, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		tfs_writer_free(w);
	}
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 1700000002500,
				 1700000004000, made, &d),
		     TFS_E_INVALID);
	cr_assert(strstr(tfs_diag_msg(&d), "overlaps the range"), "%s",
		  tfs_diag_msg(&d));
	snaps_release(&s);
	tfs_vfs_free(v);
}

/* Fragments the project's writer wrote: dense boxes into dense_1d, and
 * unordered cells with overwrites into sparse_2d_int. */
static void write_dense_1d(struct tfs_vfs *v, int32_t lo, int32_t hi,
			   int32_t base)
{
	struct tfs_write_opts wo = {.vfs = v, .threads = 1};
	struct tfs_range box = {.lo = (const uint8_t *)&lo,
				.hi = (const uint8_t *)&hi, .lo_len = 4, .hi_len = 4};
	size_t n = (size_t)(hi - lo + 1);
	int32_t *a = calloc(n, 4);
	double *b = calloc(n, 8);
	struct tfs_column cols[2] = {
		{.name = "a", .type = TFS_INT32, .cell_val_num = 1,
		 .data = (const uint8_t *)a, .data_len = n * 4},
		{.name = "b", .type = TFS_FLOAT64, .cell_val_num = 1,
		 .data = (const uint8_t *)b, .data_len = n * 8}};
	struct tfs_batch batch = {.cell_num = n, .column_num = 2,
				  .columns = cols};
	struct tfs_write_result res;
	struct tfs_writer *w;
	struct tfs_diag d;

	for (size_t i = 0; i < n; i++) {
		a[i] = base + (int32_t)i;
		b[i] = base * 0.5 + (double)i;
	}
	tfs_diag_init(&d);
	cr_assert_eq(tfs_writer_open("/A", &wo, TFS_WRITE_DENSE_BOX, &box, &w,
				     &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_append(w, &batch, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_commit(w, &res, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_writer_free(w);
	free(a);
	free(b);
}

static void write_sparse_2d(struct tfs_vfs *v, int32_t seed, size_t n)
{
	struct tfs_write_opts wo = {.vfs = v, .threads = 1};
	int32_t *x = calloc(n, 4), *y = calloc(n, 4), *a = calloc(n, 4);
	uint64_t *offs = calloc(n + 1, 8);
	struct tfs_buf s;
	struct tfs_write_result res;
	struct tfs_writer *w;
	struct tfs_diag d;

	tfs_buf_init(&s, TFS_BUF_NO_MAX);
	for (size_t i = 0; i < n; i++) {
		/* distinct within a write, overlapping across writes */
		x[i] = (int32_t)((i * 7) % 100);
		y[i] = (int32_t)((i / 100 + (size_t)seed) % 100);
		a[i] = seed * 1000 + (int32_t)i;
		offs[i] = s.len;
		cr_assert_eq(tfs_buf_printf(&s, "v%d-%zu", seed, i % 5),
			     TFS_E_OK);
	}
	offs[n] = s.len;
	{
		struct tfs_column cols[4] = {
			{.name = "x", .type = TFS_INT32, .cell_val_num = 1,
			 .is_dim = true, .data = (const uint8_t *)x,
			 .data_len = n * 4},
			{.name = "y", .type = TFS_INT32, .cell_val_num = 1,
			 .is_dim = true, .data = (const uint8_t *)y,
			 .data_len = n * 4},
			{.name = "a", .type = TFS_INT32, .cell_val_num = 1,
			 .data = (const uint8_t *)a, .data_len = n * 4},
			{.name = "s", .type = TFS_STRING_UTF8,
			 .cell_val_num = TFS_VAR_NUM, .var = true,
			 .data = s.data, .data_len = s.len, .offsets = offs}};
		struct tfs_batch batch = {.cell_num = n, .column_num = 4,
					  .columns = cols};

		tfs_diag_init(&d);
		cr_assert_eq(tfs_writer_open("/A", &wo, TFS_WRITE_UNORDERED,
					     NULL, &w, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_eq(tfs_writer_append(w, &batch, NULL, &d), TFS_E_OK,
			     "%s", tfs_diag_msg(&d));
		cr_assert_eq(tfs_writer_commit(w, &res, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		tfs_writer_free(w);
	}
	tfs_buf_release(&s);
	free(x);
	free(y);
	free(a);
	free(offs);
}

Test(maintain, fragments_written)
{
	struct tfs_vfs *v = vt_mem_copy("dense_1d");

	write_dense_1d(v, 10, 40, 100);
	write_dense_1d(v, 30, 60, 200);
	write_dense_1d(v, 55, 56, 300);
	write_dense_1d(v, 90, 100, 400);
	fragments_roundtrip(v, "dense_1d written");
	/* And again on top of the consolidated fragment. */
	write_dense_1d(v, 1, 5, 500);
	fragments_roundtrip(v, "dense_1d written twice");
	tfs_vfs_free(v);

	v = vt_mem_copy("sparse_2d_int");
	write_sparse_2d(v, 1, 300);
	write_sparse_2d(v, 2, 200);
	write_sparse_2d(v, 3, 50);
	fragments_roundtrip(v, "sparse_2d_int written");
	tfs_vfs_free(v);
}

/* ---- Faults ----------------------------------------------------------------------------- */

/* Fails every storage call from the nth on, for n = 0, 1, ... until the
 * operation succeeds: each failure leaves every read as it was. */
static void faults(const char *array, enum tfs_consolidate_mode mode,
		   bool vac, bool once)
{
	struct snaps s;
	bool done = false;
	unsigned long failed = 0;

	for (unsigned long nth = 0; !done && nth < 5000; nth++) {
		struct tfs_vfs *v = vt_mem_copy(array), *f;
		struct tfs_diag d;
		char made[256];
		unsigned removed;
		enum tfs_err e;

		/* Sparse: cells only (see fragments_roundtrip). */
		if (nth == 0) {
			snap_ned = mode != TFS_CONSOLIDATE_FRAGMENTS ||
				   !is_sparse(v);
			snaps_take(&s, v, 6);
		}
		if (vac)
			cr_assert_eq(consolidate(v, mode, 0, 0, made, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_eq(tfs_vfs_faulty_new(v, &f), TFS_E_OK);
		tfs_vfs_faulty_arm(f, TFS_FAULT_EIO, nth, once);
		e = vac ? vacuum(f, mode, &removed, &d)
			: consolidate(f, mode, 0, 0, made, &d);
		done = e == TFS_E_OK;
		failed += !done;
		cr_assert(done || d.msg[0], "%s: fault %lu without a message",
			  array, nth);
		if (vac)
			snaps_check_now(&s, v, array);
		else
			snaps_check(&s, v, array);
		tfs_vfs_free(f);
		tfs_vfs_free(v);
	}
	snap_ned = true;
	cr_assert(done, "%s: never succeeded", array);
	/* The operation touches storage several times: that many faults. */
	cr_assert_geq(failed, 3, "%s: only %lu faults", array, failed);
	snaps_release(&s);
}

Test(maintain, faults_fragments, .timeout = 300)
{
	faults("dense_fragments_overlap", TFS_CONSOLIDATE_FRAGMENTS, false,
	       false);
	faults("sparse_timetravel", TFS_CONSOLIDATE_FRAGMENTS, false, false);
	faults("sparse_dups", TFS_CONSOLIDATE_FRAGMENTS, false, true);
	faults("dense_fragments_overlap", TFS_CONSOLIDATE_FRAGMENTS, true,
	       false);
}

Test(maintain, faults_metadata, .timeout = 300)
{
	faults("consolidated_fragment_meta", TFS_CONSOLIDATE_FRAGMENT_META,
	       false, false);
	faults("consolidated_commits", TFS_CONSOLIDATE_COMMITS, false, false);
	faults("consolidated_commits", TFS_CONSOLIDATE_COMMITS, true, false);
	faults("metadata", TFS_CONSOLIDATE_ARRAY_META, false, false);
	faults("metadata", TFS_CONSOLIDATE_ARRAY_META, true, false);
}

/* ---- Refusals ------------------------------------------------------------------------------ */

Test(maintain, refusals)
{
	struct tfs_vfs *v;
	struct tfs_diag d;
	char made[256] = "x";
	unsigned removed = 7;

	cr_assert_eq(tfs_vfs_mem_new(&v), TFS_E_OK);
	cr_assert_eq(tfs_vfs_mkdir(v, "/A", &d), TFS_E_OK);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 0, 0, made, &d),
		     TFS_E_NOT_ARRAY);
	cr_assert_str_eq(made, "");
	cr_assert_eq(vacuum(v, TFS_CONSOLIDATE_COMMITS, &removed, &d),
		     TFS_E_NOT_ARRAY);
	cr_assert_eq(removed, 0);
	tfs_vfs_free(v);
	/* Nothing consolidated: vacuum removes nothing. */
	v = vt_mem_copy("dense_fragments_overlap");
	for (int m = 0; m < 4; m++) {
		cr_assert_eq(vacuum(v, (enum tfs_consolidate_mode)m, &removed,
				    &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_eq(removed, 0);
	}
	cr_assert_eq(listed_fragments(v, NULL), 4);
	tfs_vfs_free(v);
}

/* Vacuum removes the temporary files of consolidations that died, once
 * they are an hour old, and keeps younger ones (a consolidation may be
 * writing them). On disk, where file times can be set. */
Test(maintain, stale_temporary_files)
{
	char root[64];
	char *cmd, *old_tmp, *new_tmp, *arr;
	struct timeval tv[2];
	struct tfs_write_opts wo = {0};
	struct tfs_diag d;
	unsigned removed;
	FILE *f;

	cr_assert(mkdtemp(tfs_temp_template(root, sizeof(root), "/tmp", "tfs-maintain-")));
	cmd = vt_fmt("cp -r '%s/dense_1d' '%s/A' && chmod -R u+w '%s/A'", CORPUS,
		  root, root);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	arr = vt_fmt("%s/A", root);
	old_tmp = vt_fmt("%s/.tfs-__1_1_x.con.tmp", arr);
	new_tmp = vt_fmt("%s/.tfs-__2_2_y.con.tmp", arr);
	cr_assert((f = fopen(old_tmp, "w")) != NULL);
	fclose(f);
	cr_assert((f = fopen(new_tmp, "w")) != NULL);
	fclose(f);
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= 7200;
	tv[1] = tv[0];
	cr_assert_eq(utimes(old_tmp, tv), 0);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_vacuum(arr, TFS_CONSOLIDATE_FRAGMENTS, &wo,
				      &removed, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(access(old_tmp, F_OK), -1, "the stale file is removed");
	cr_assert_eq(access(new_tmp, F_OK), 0, "the fresh one is kept");
	cmd = vt_fmt("rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(arr);
	free(old_tmp);
	free(new_tmp);
}

/* The one file in dir with this extension (its payload decoded when it
 * is a generic tile, else its bytes). */
static uint8_t *only_file(struct tfs_vfs *v, const char *dir, const char *ext,
			  bool tile, size_t *len)
{
	struct tfs_dirlist l;
	struct tfs_diag d;
	uint8_t *out = NULL;
	char *p = NULL;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(v, dir, &l, &d), TFS_E_OK);
	for (size_t i = 0; i < l.count; i++) {
		size_t a = strlen(l.names[i]), b = strlen(ext);

		if (a >= b && !strcmp(l.names[i] + a - b, ext)) {
			cr_assert_null(p, "one %s file only", ext);
			p = tfs_path_join(dir, l.names[i]);
		}
	}
	tfs_dirlist_release(&l);
	cr_assert(p, "no %s file in %s", ext, dir);
	if (tile)
		cr_assert_eq(tfs_tile_file_read(v, p, NULL, "test", &out, len,
						&d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
	else
		cr_assert_eq(tfs_vfs_read_all(v, p, SIZE_MAX, &out, len, &d),
			     TFS_E_OK);
	tfs_free(p);
	return out;
}

static void remove_only(struct tfs_vfs *v, const char *dir, const char *ext)
{
	struct tfs_dirlist l;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(v, dir, &l, &d), TFS_E_OK);
	for (size_t i = 0; i < l.count; i++) {
		size_t a = strlen(l.names[i]), b = strlen(ext);

		if (a >= b && !strcmp(l.names[i] + a - b, ext)) {
			char *p = tfs_path_join(dir, l.names[i]);

			cr_assert_eq(tfs_vfs_remove(v, p, &d), TFS_E_OK);
			tfs_free(p);
		}
	}
	tfs_dirlist_release(&l);
}

/* What TileDB wrote when it consolidated the corpus arrays, and what
 * tilefs writes from the same inputs: the same bytes (inside the generic
 * tile, whose compression may differ). */
Test(maintain, same_bytes_as_tiledb)
{
	struct tfs_vfs *v = vt_mem_copy("consolidated_fragment_meta");
	struct tfs_diag d;
	char made[256];
	uint8_t *theirs, *ours;
	size_t tlen, olen;

	theirs = only_file(v, "/A/__fragment_meta", ".meta", true, &tlen);
	remove_only(v, "/A/__fragment_meta", ".meta");
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENT_META, 0, 0, made,
				 &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	ours = only_file(v, "/A/__fragment_meta", ".meta", true, &olen);
	cr_assert_eq(olen, tlen, ".meta payload: %zu bytes, TileDB's %zu",
		     olen, tlen);
	cr_assert(!memcmp(ours, theirs, tlen), ".meta payloads differ");
	/* The name spans the first t1 and the last t2, version 22. */
	cr_assert(!strncmp(made, "__1700000001000_1700000006000_", 30), "%s",
		  made);
	cr_assert(strstr(made, "_22.meta"), "%s", made);
	tfs_free(theirs);
	tfs_free(ours);
	tfs_vfs_free(v);

	v = vt_mem_copy("consolidated_commits");
	theirs = only_file(v, "/A/__commits", ".con", false, &tlen);
	remove_only(v, "/A/__commits", ".con");
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_COMMITS, 0, 0, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	ours = only_file(v, "/A/__commits", ".con", false, &olen);
	cr_assert_eq(olen, tlen);
	cr_assert(!memcmp(ours, theirs, tlen), ".con files differ");
	cr_assert(!strncmp(made, "__1700000001000_1700000005000_", 30), "%s",
		  made);
	tfs_free(theirs);
	tfs_free(ours);
	tfs_vfs_free(v);
}

/* Format 10: fragments, commits (.ok) and the .vac in the array folder
 * itself. A string dimension, fragments the writer added. */
Test(maintain, fragments_root_layout)
{
	struct tfs_vfs *v = vt_mem_copy("legacy/zero_var_chunks_v10");
	static const char *const keys[2][3] = {{"bb", "cc", "e"},
					       {"cc", "dd", "a"}};

	for (int w = 0; w < 2; w++) {
		struct tfs_write_opts wo = {.vfs = v, .threads = 1};
		uint64_t offs[4] = {0};
		int32_t a[3];
		char text[16];
		size_t len = 0;
		struct tfs_writer *wr;
		struct tfs_write_result res;
		struct tfs_diag d;

		for (int i = 0; i < 3; i++) {
			size_t n = strlen(keys[w][i]);

			memcpy(text + len, keys[w][i], n);
			len += n;
			offs[i + 1] = len;
			a[i] = w * 100 + i;
		}
		{
			struct tfs_column cols[2] = {
				{.name = "d", .type = TFS_STRING_ASCII,
				 .cell_val_num = TFS_VAR_NUM, .var = true,
				 .is_dim = true, .data = (const uint8_t *)text,
				 .data_len = len, .offsets = offs},
				{.name = "a", .type = TFS_INT32, .cell_val_num = 1,
				 .data = (const uint8_t *)a, .data_len = 12}};
			struct tfs_batch b = {.cell_num = 3, .column_num = 2,
					      .columns = cols};

			tfs_diag_init(&d);
			cr_assert_eq(tfs_writer_open("/A", &wo,
						     TFS_WRITE_UNORDERED, NULL,
						     &wr, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			cr_assert_eq(tfs_writer_append(wr, &b, NULL, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			cr_assert_eq(tfs_writer_commit(wr, &res, &d), TFS_E_OK,
				     "%s", tfs_diag_msg(&d));
			cr_assert(strstr(res.name, "_10"), "%s", res.name);
			tfs_writer_free(wr);
		}
	}
	{
		struct snaps s;
		struct tfs_diag d;
		char made[256];
		unsigned removed;

		snaps_take(&s, v, 8);
		cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 0, 0,
					 made, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		/* format < 15: named with the whole range */
		cr_assert(!strncmp(made, "__1693562063524_", 16), "%s", made);
		cr_assert_eq(count_files(v, "/A", ".vac"), 1);
		cr_assert_eq(count_files(v, "/A", ".ok"), 4);
		snaps_check(&s, v, "v10");
		cr_assert_eq(vacuum(v, TFS_CONSOLIDATE_FRAGMENTS, &removed, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_eq(removed, 3);
		cr_assert_eq(count_files(v, "/A", ".ok"), 1);
		cr_assert_eq(count_files(v, "/A", ".vac"), 0);
		snaps_check_now(&s, v, "v10");
		snaps_release(&s);
	}
	tfs_vfs_free(v);
}

/* A damaged .vac that names the schema folder, the metadata folder or
 * paths that climb out: vacuum removes the fragments it lists and
 * nothing else. */
Test(maintain, vacuum_removes_only_fragments)
{
	struct tfs_vfs *v = vt_mem_copy("dense_fragments_overlap");
	struct tfs_dirlist l;
	struct tfs_stat st;
	struct tfs_diag d;
	struct snaps s;
	char made[256], *vac;
	uint8_t *buf;
	size_t len;
	unsigned removed;
	static const char extra[] =
		"__schema\n/__meta\n__fragments/../__schema\n"
		"__fragments/__commits\n../other_array\n__lock.tdb\n";

	snaps_take(&s, v, 8);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 0, 0, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	vac = vt_fmt("/A/__commits/%s.vac", made);
	cr_assert_eq(tfs_vfs_read_all(v, vac, SIZE_MAX, &buf, &len, &d),
		     TFS_E_OK);
	cr_assert_eq(tfs_vfs_append(v, vac, extra, sizeof(extra) - 1, &d),
		     TFS_E_OK);
	tfs_free(buf);
	cr_assert_eq(tfs_vfs_mkdir(v, "/A/__meta", &d), TFS_E_OK);
	cr_assert_eq(vacuum(v, TFS_CONSOLIDATE_FRAGMENTS, &removed, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(removed, 4);
	cr_assert_eq(tfs_vfs_stat(v, "/A/__schema", &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.is_dir, "the schema folder stays");
	cr_assert_eq(tfs_vfs_stat(v, "/A/__meta", &st, &d), TFS_E_OK);
	cr_assert(st.exists, "the metadata folder stays");
	cr_assert_eq(tfs_vfs_list(v, "/A/__schema", &l, &d), TFS_E_OK);
	cr_assert_geq(l.count, 1);
	tfs_dirlist_release(&l);
	snaps_check_now(&s, v, "damaged .vac");
	free(vac);
	snaps_release(&s);
	tfs_vfs_free(v);
}

/* tfs_open_opts.timestamp_start, which consolidation reads sparse ranges
 * with: fragments before the window's start are not read. */
Test(maintain, open_window_start)
{
	struct tfs_vfs *v = vt_mem_copy("sparse_timetravel");
	struct tfs_open_opts oo = {.vfs = v, .threads = 1,
				   .timestamp_start = 1700000002000};
	struct tfs_array *a;
	struct tfs_diag d;
	size_t visible = 0, n;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open("/A", &oo, &a, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	n = tfs_array_fragment_count(a);
	cr_assert_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		cr_assert_eq(f.visible, f.t1 >= 1700000002000, "%s", f.name);
		visible += f.visible;
	}
	cr_assert_eq(visible, 2);
	tfs_array_close(a);
	tfs_vfs_free(v);
}

/* Cells of a full read through an already open array, one line each. */
static size_t read_count(struct tfs_array *a, uint64_t *sum)
{
	struct tfs_query_opts qo = {0};
	const struct tfs_batch *b;
	struct tfs_query *q;
	struct tfs_diag d;
	size_t n = 0;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	*sum = 0;
	while (tfs_query_next(q, &b, &d) == TFS_E_OK && b) {
		n += b->cell_num;
		for (size_t c = 0; c < b->column_num; c++)
			for (uint64_t i = 0; i < b->columns[c].data_len; i++)
				*sum = *sum * 31 + b->columns[c].data[i];
	}
	cr_assert_eq(d.code, TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_query_close(q);
	return n;
}

/* Readers that opened the array before a consolidation read the same
 * afterwards: consolidation only adds files. */
Test(maintain, open_readers_keep_working)
{
	static const char *const arrays[] = {"dense_fragments_overlap",
					     "sparse_timetravel", "metadata"};

	for (size_t k = 0; k < sizeof(arrays) / sizeof(*arrays); k++) {
		struct tfs_vfs *v = vt_mem_copy(arrays[k]);
		struct tfs_open_opts oo = {.vfs = v, .threads = 1,
					   .timestamp = FAR_FUTURE};
		struct tfs_array *a;
		struct tfs_diag d;
		char made[256];
		uint64_t sum0, sum1;
		size_t n0, n1;

		tfs_diag_init(&d);
		cr_assert_eq(tfs_array_open("/A", &oo, &a, &d), TFS_E_OK);
		n0 = read_count(a, &sum0);
		for (int m = 0; m < 4; m++)
			cr_assert_eq(consolidate(v, (enum tfs_consolidate_mode)m,
						 0, 0, made, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
		n1 = read_count(a, &sum1);
		cr_assert_eq(n1, n0, "%s", arrays[k]);
		cr_assert_eq(sum1, sum0, "%s", arrays[k]);
		tfs_array_close(a);
		tfs_vfs_free(v);
	}
}

/* Sparse arrays of format 15 and later: what TileDB's consolidation makes
 * (consolidated.md §5, the corpus's consolidated_fragments): one fragment
 * named with the whole range, with per-cell timestamps (t.tdb), every
 * version of a coordinate kept, and a .vac of the same name. */
Test(maintain, sparse_with_timestamps)
{
	struct tfs_vfs *v = vt_mem_copy("sparse_timetravel");
	struct tfs_open_opts oo = {.vfs = v, .threads = 1};
	struct tfs_array *a;
	struct tfs_stat st;
	struct tfs_diag d;
	char made[256], *p;
	uint64_t cells_before = 0;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open("/A", &oo, &a, &d), TFS_E_OK);
	for (size_t i = 0; i < tfs_array_fragment_count(a); i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		cells_before += f.cell_num;
	}
	tfs_array_close(a);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 0, 0, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(!strncmp(made, "__1700000001000_1700000003000_", 30), "%s",
		  made);
	p = vt_fmt("/A/__fragments/%s/t.tdb", made);
	cr_assert_eq(tfs_vfs_stat(v, p, &st, &d), TFS_E_OK);
	cr_assert(st.exists, "no t.tdb in %s", made);
	free(p);
	p = vt_fmt("/A/__commits/%s.vac", made);
	cr_assert_eq(tfs_vfs_stat(v, p, &st, &d), TFS_E_OK);
	cr_assert(st.exists);
	free(p);
	/* Every version of every coordinate. */
	cr_assert_eq(tfs_array_open("/A", &oo, &a, &d), TFS_E_OK);
	cr_assert_eq(tfs_array_fragment_count(a), 1);
	{
		struct tfs_fragment_info f;

		tfs_array_fragment(a, 0, &f);
		cr_assert_eq(f.cell_num, cells_before);
		cr_assert_eq(f.t1, 1700000001000);
		cr_assert_eq(f.t2, 1700000003000);
	}
	tfs_array_close(a);
	tfs_vfs_free(v);
}

/* A range holding a fragment with timestamps of its own (TileDB's
 * consolidation in the corpus) and a newer one: merged without
 * timestamps, stamped [t2max, t2max], the same reads at every time. */
Test(maintain, sparse_over_timestamped_fragment)
{
	struct tfs_vfs *v = vt_mem_copy("consolidated_fragments");
	struct tfs_write_opts wo = {.vfs = v, .threads = 1};
	int32_t r[3] = {1, 2, 500}, c[3] = {1, 2, 600}, a[3] = {-1, -2, -3};
	uint64_t offs[4] = {0, 1, 3, 6};
	struct tfs_column cols[4] = {
		{.name = "r", .type = TFS_INT32, .cell_val_num = 1,
		 .is_dim = true, .data = (const uint8_t *)r, .data_len = 12},
		{.name = "c", .type = TFS_INT32, .cell_val_num = 1,
		 .is_dim = true, .data = (const uint8_t *)c, .data_len = 12},
		{.name = "a", .type = TFS_INT32, .cell_val_num = 1,
		 .data = (const uint8_t *)a, .data_len = 12},
		{.name = "s", .type = TFS_STRING_ASCII,
		 .cell_val_num = TFS_VAR_NUM, .var = true,
		 .data = (const uint8_t *)"xyyzzz", .data_len = 6,
		 .offsets = offs}};
	struct tfs_batch b = {.cell_num = 3, .column_num = 4, .columns = cols};
	struct tfs_writer *w;
	struct tfs_write_result res;
	struct tfs_diag d;
	struct snaps s;
	char made[256], prefix[64];

	tfs_diag_init(&d);
	cr_assert_eq(tfs_writer_open("/A", &wo, TFS_WRITE_UNORDERED, NULL, &w,
				     &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_append(w, &b, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_commit(w, &res, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_writer_free(w);
	snap_ned = false;
	snaps_take(&s, v, 8);
	cr_assert_eq(consolidate(v, TFS_CONSOLIDATE_FRAGMENTS, 0, 0, made, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	snprintf(prefix, sizeof(prefix), "__%" PRIu64 "_%" PRIu64 "_", res.t2,
		 res.t2);
	cr_assert(!strncmp(made, prefix, strlen(prefix)), "%s", made);
	snaps_check(&s, v, "over a timestamped fragment");
	snap_ned = true;
	snaps_release(&s);
	tfs_vfs_free(v);
}
