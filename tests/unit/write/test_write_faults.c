/* The writer's failure paths and bookkeeping: refused writes (duplicates,
 * outside the domain, short boxes, missing fields), dedup, sorts spilled to
 * disk and merged, faults at every storage call of a write (the array reads
 * exactly as before, or as after when only the commit's own durability
 * failed), cleanup of leftovers, newest-wins, timestamps, array metadata,
 * and arrays of older format versions. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "legacy_builder.h"
#include "tfs_alloc.h"
#include "write_test_util.h"

static void col_i32(struct tfs_column *c, const char *name, const int32_t *v,
		    uint64_t n)
{
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->type = TFS_INT32;
	c->cell_val_num = 1;
	c->data = (const uint8_t *)v;
	c->data_len = 4 * n;
}

/* Sparse 2-D int32 [0,99]^2 (extents 10), attribute v int32; dups as
 * asked. */
static void make_sparse(struct wt_env *e, const char *path, bool dups)
{
	struct tfs_schema s;

	lb_schema_init(&s, 22, true, 4);
	s.allows_dups = dups;
	lb_add_dim(&s, "x", TFS_INT32, 0, 99, 10);
	lb_add_dim(&s, "y", TFS_INT32, 0, 99, 10);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	cr_assert_eq(tfs_array_create(path, &s, &e->wo, &e->d), TFS_E_OK, "%s",
		     tfs_diag_msg(&e->d));
	tfs_schema_release(&s);
}

static enum tfs_err write3(struct wt_env *e, const char *path, const int32_t *x,
			   const int32_t *y, const int32_t *v, uint64_t n,
			   const uint64_t *tags, struct tfs_write_result *res)
{
	struct tfs_column cols[3];
	struct tfs_batch b = { .cell_num = n, .column_num = 3, .columns = cols };
	struct tfs_writer *w;
	enum tfs_err err;

	col_i32(&cols[0], "x", x, n);
	col_i32(&cols[1], "y", y, n);
	col_i32(&cols[2], "v", v, n);
	tfs_diag_init(&e->d);
	err = tfs_writer_open(path, &e->wo, TFS_WRITE_UNORDERED, NULL, &w, &e->d);
	if (err)
		return err;
	err = tfs_writer_append(w, &b, tags, &e->d);
	if (!err)
		err = tfs_writer_commit(w, res, &e->d);
	tfs_writer_free(w);
	return err;
}

/* The same in batches of `per` cells (tags: the cell index + 1). */
static enum tfs_err write3_batches(struct wt_env *e, const char *path,
				   const int32_t *x, const int32_t *y,
				   const int32_t *v, uint64_t n, uint64_t per,
				   struct tfs_write_result *res)
{
	struct tfs_column cols[3];
	struct tfs_batch b = { .column_num = 3, .columns = cols };
	struct tfs_writer *w;
	enum tfs_err err;

	tfs_diag_init(&e->d);
	err = tfs_writer_open(path, &e->wo, TFS_WRITE_UNORDERED, NULL, &w, &e->d);
	if (err)
		return err;
	for (uint64_t at = 0; at < n && !err; at += per) {
		uint64_t m = n - at < per ? n - at : per;
		uint64_t *tags = malloc(m * sizeof(uint64_t));

		for (uint64_t i = 0; i < m; i++)
			tags[i] = at + i + 1;
		col_i32(&cols[0], "x", x + at, m);
		col_i32(&cols[1], "y", y + at, m);
		col_i32(&cols[2], "v", v + at, m);
		b.cell_num = m;
		err = tfs_writer_append(w, &b, tags, &e->d);
		free(tags);
	}
	if (!err)
		err = tfs_writer_commit(w, res, &e->d);
	tfs_writer_free(w);
	return err;
}

/* "x,y=v" lines of a sparse read, sorted. */
static void read_xyv(struct wt_env *e, const char *path, struct wt_dump *out)
{
	struct tfs_array *a;

	cr_assert_eq(tfs_array_open(path, &e->oo, &a, &e->d), TFS_E_OK, "%s",
		     tfs_diag_msg(&e->d));
	wt_read(a, NULL, out);
	wt_dump_sort(out);
	tfs_array_close(a);
}

/* ---- Refusals -------------------------------------------------------------- */

Test(refuse, duplicates_name_both_tags)
{
	struct wt_env e;
	int32_t x[] = { 1, 3, 5, 3 }, y[] = { 2, 4, 6, 4 }, v[] = { 1, 2, 3, 4 };
	uint64_t tags[] = { 2, 5, 9, 17 };
	struct tfs_write_result res;
	struct tfs_dirlist l;

	wt_env_init(&e, 1);
	make_sparse(&e, "/s", false);
	e.wo.tag_word = "line";
	cr_assert_eq(write3(&e, "/s", x, y, v, 4, tags, &res), TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d),
			 "duplicate coordinates (3, 4): line 17 and line 5");
	/* Nothing left behind. */
	cr_assert_eq(tfs_vfs_list(e.vfs, "/s/__fragments", &l, &e.d), TFS_E_OK);
	cr_expect_eq(l.count, 0);
	tfs_dirlist_release(&l);
	cr_assert_eq(tfs_vfs_list(e.vfs, "/s/__commits", &l, &e.d), TFS_E_OK);
	cr_expect_eq(l.count, 0);
	tfs_dirlist_release(&l);

	/* dedup keeps the last one appended. */
	e.wo.dedup = true;
	cr_assert_eq(write3(&e, "/s", x, y, v, 4, tags, &res), TFS_E_OK, "%s",
		     tfs_diag_msg(&e.d));
	cr_expect_eq(res.cell_num, 3);
	struct wt_dump got;
	read_xyv(&e, "/s", &got);
	cr_assert_eq(got.n, 3);
	/* (3,4) holds v = 4: 03000000|04000000|04000000 */
	cr_expect_str_eq(got.lines[1], "03000000|04000000|04000000");
	wt_dump_release(&got);
	tfs_vfs_free(e.vfs);
}

Test(refuse, duplicates_allowed_by_schema)
{
	struct wt_env e;
	int32_t x[] = { 3, 3, 3 }, y[] = { 4, 4, 4 }, v[] = { 1, 2, 3 };
	struct tfs_write_result res;
	struct wt_dump got;

	wt_env_init(&e, 1);
	make_sparse(&e, "/s", true);
	cr_assert_eq(write3(&e, "/s", x, y, v, 3, NULL, &res), TFS_E_OK, "%s",
		     tfs_diag_msg(&e.d));
	read_xyv(&e, "/s", &got);
	cr_expect_eq(got.n, 3);
	wt_dump_release(&got);
	tfs_vfs_free(e.vfs);
}

Test(refuse, outside_domain_and_missing_fields)
{
	struct wt_env e;
	int32_t x[] = { 1, 100 }, y[] = { 2, 4 }, v[] = { 1, 2 };
	uint64_t tags[] = { 7, 8 };
	struct tfs_write_result res;
	struct tfs_column cols[2];
	struct tfs_batch b = { .cell_num = 2, .column_num = 2, .columns = cols };
	struct tfs_writer *w;

	wt_env_init(&e, 1);
	make_sparse(&e, "/s", false);
	cr_assert_eq(write3(&e, "/s", x, y, v, 2, tags, &res), TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d),
			 "cell 8: dimension 'x': 100 outside the domain");
	/* Missing attribute. */
	x[1] = 5;
	col_i32(&cols[0], "x", x, 2);
	col_i32(&cols[1], "y", y, 2);
	cr_assert_eq(tfs_writer_open("/s", &e.wo, TFS_WRITE_UNORDERED, NULL, &w,
				     &e.d),
		     TFS_E_OK);
	tfs_diag_init(&e.d);
	cr_assert_eq(tfs_writer_append(w, &b, NULL, &e.d), TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d), "missing field 'v'");
	/* After a failure the writer only frees. */
	cr_assert_eq(tfs_writer_commit(w, &res, &e.d), TFS_E_INVALID);
	tfs_writer_free(w);
	/* Unknown column, wrong type. */
	col_i32(&cols[1], "zz", y, 2);
	cr_assert_eq(tfs_writer_open("/s", &e.wo, TFS_WRITE_UNORDERED, NULL, &w,
				     &e.d),
		     TFS_E_OK);
	tfs_diag_init(&e.d);
	cr_assert_eq(tfs_writer_append(w, &b, NULL, &e.d), TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d), "column 'zz': no such field");
	tfs_writer_free(w);
	/* Two values a cell for a one-value field. */
	struct tfs_column c3[3];
	struct tfs_batch b3 = { .cell_num = 2, .column_num = 3, .columns = c3 };

	col_i32(&c3[0], "x", x, 2);
	col_i32(&c3[1], "y", y, 2);
	col_i32(&c3[2], "v", v, 2);
	c3[2].cell_val_num = 2;
	cr_assert_eq(tfs_writer_open("/s", &e.wo, TFS_WRITE_UNORDERED, NULL, &w,
				     &e.d),
		     TFS_E_OK);
	tfs_diag_init(&e.d);
	cr_assert_eq(tfs_writer_append(w, &b3, NULL, &e.d), TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d),
			 "column 'v': 2 values a cell, field has 1");
	tfs_writer_free(w);
	/* A box write into a sparse array. */
	cr_assert_eq(tfs_writer_open("/s", &e.wo, TFS_WRITE_DENSE_BOX, NULL, &w,
				     &e.d),
		     TFS_E_INVALID);
	cr_assert_null(w);
	tfs_vfs_free(e.vfs);
}

Test(refuse, short_box_and_empty_write)
{
	struct wt_env e;
	struct tfs_schema s;
	int32_t lo = 2, hi = 5, v[4] = { 1, 2, 3, 4 };
	struct tfs_range box = { (const uint8_t *)&lo, (const uint8_t *)&hi, 4, 4 };
	struct tfs_column col;
	struct tfs_batch b = { .cell_num = 3, .column_num = 1, .columns = &col };
	struct tfs_writer *w;
	struct tfs_write_result res;
	struct tfs_dirlist l;

	wt_env_init(&e, 1);
	lb_schema_init(&s, 22, false, 100);
	lb_add_dim(&s, "d", TFS_INT32, 1, 10, 4);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	cr_assert_eq(tfs_array_create("/d", &s, &e.wo, &e.d), TFS_E_OK);
	tfs_schema_release(&s);
	col_i32(&col, "v", v, 4);
	cr_assert_eq(tfs_writer_open("/d", &e.wo, TFS_WRITE_DENSE_BOX, &box, &w,
				     &e.d),
		     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
	cr_assert_eq(tfs_writer_append(w, &b, NULL, &e.d), TFS_E_OK);
	cr_assert_eq(tfs_writer_commit(w, &res, &e.d), TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d), "box of 4 cells: 3 cells given");
	tfs_writer_free(w);
	/* A box outside the domain. */
	hi = 11;
	tfs_diag_init(&e.d);
	cr_assert_eq(tfs_writer_open("/d", &e.wo, TFS_WRITE_DENSE_BOX, &box, &w,
				     &e.d),
		     TFS_E_INVALID);
	cr_expect_str_eq(tfs_diag_msg(&e.d),
			 "box: dimension 'd': 11 outside the domain");
	/* No cells: nothing written, success. */
	hi = 5;
	cr_assert_eq(tfs_writer_open("/d", &e.wo, TFS_WRITE_DENSE_BOX, &box, &w,
				     &e.d),
		     TFS_E_OK);
	cr_assert_eq(tfs_writer_commit(w, &res, &e.d), TFS_E_OK);
	cr_expect_eq(res.cell_num, 0);
	tfs_writer_free(w);
	cr_assert_eq(tfs_vfs_list(e.vfs, "/d/__fragments", &l, &e.d), TFS_E_OK);
	cr_expect_eq(l.count, 0);
	tfs_dirlist_release(&l);
	tfs_vfs_free(e.vfs);
}

/* ---- Newest wins, timestamps ---------------------------------------------- */

Test(fragments, newest_wins_and_timestamps)
{
	struct wt_env e;
	int32_t x1[] = { 1, 2, 3 }, y1[] = { 1, 2, 3 }, v1[] = { 10, 20, 30 };
	int32_t x2[] = { 2, 4 }, y2[] = { 2, 4 }, v2[] = { 21, 40 };
	struct tfs_write_result r1, r2, r3;
	struct wt_dump got;

	wt_env_init(&e, 1);
	make_sparse(&e, "/s", false);
	e.oo.timestamp = UINT64_C(5000000000000);
	/* A fragment from the future: later writes still win. */
	e.wo.t1 = e.wo.t2 = UINT64_C(4000000000000);
	cr_assert_eq(write3(&e, "/s", x1, y1, v1, 3, NULL, &r1), TFS_E_OK);
	e.wo.t1 = e.wo.t2 = 0;
	cr_assert_eq(write3(&e, "/s", x2, y2, v2, 2, NULL, &r2), TFS_E_OK);
	cr_expect_eq(r2.t1, r1.t1 + 1);
	cr_assert_eq(write3(&e, "/s", x2, y2, v2, 1, NULL, &r3), TFS_E_OK);
	cr_expect_gt(r3.t1, r2.t1);
	cr_expect_eq(r3.t1, r3.t2);
	cr_expect(strstr(r3.name, "_22") != NULL);
	read_xyv(&e, "/s", &got);
	cr_assert_eq(got.n, 4);
	cr_expect_str_eq(got.lines[0], "01000000|01000000|0a000000");
	cr_expect_str_eq(got.lines[1], "02000000|02000000|15000000");
	cr_expect_str_eq(got.lines[3], "04000000|04000000|28000000");
	wt_dump_release(&got);
	tfs_vfs_free(e.vfs);
}

/* ---- Spilled sorts ----------------------------------------------------------- */

Test(spill, runs_merge_in_global_order)
{
	struct wt_env e;
	enum { N = 20000 };
	int32_t *x = malloc(N * 4), *y = malloc(N * 4), *v = malloc(N * 4);
	struct tfs_write_result res;
	struct wt_dump got;
	char spill[64];
	uint64_t seed = 12345;

	cr_assert_not_null(mkdtemp(tfs_temp_template(spill, sizeof(spill), "/tmp", "tfs_spill_")));
	wt_env_init(&e, 1);
	make_sparse(&e, "/s", false);
	for (int i = 0; i < N; i++) {
		/* Every (x, y) of [0,99] x [0,199]... restricted to 0..99 */
		x[i] = i % 100;
		y[i] = (i / 100) % 100;
		v[i] = i;
	}
	/* Shuffle, then duplicate cell 0's coordinates at the end. */
	for (int i = N - 1; i > 0; i--) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int j = (int)((seed >> 33) % (uint64_t)(i + 1));
		int32_t t;

		t = x[i]; x[i] = x[j]; x[j] = t;
		t = y[i]; y[i] = y[j]; y[j] = t;
		t = v[i]; v[i] = v[j]; v[j] = t;
	}
	/* Runs of about 300 cells, merged two at a time. */
	e.wo.memory = 16384;
	e.wo.spill_dir = spill;
	/* 10000 distinct cells appear twice: refused... */
	cr_assert_eq(write3_batches(&e, "/s", x, y, v, N, 97, &res), TFS_E_INVALID);
	cr_expect(strstr(tfs_diag_msg(&e.d), "duplicate coordinates") != NULL);
	/* ...or deduplicated across runs, the later cell kept. */
	e.wo.dedup = true;
	cr_assert_eq(write3_batches(&e, "/s", x, y, v, N, 97, &res), TFS_E_OK, "%s",
		     tfs_diag_msg(&e.d));
	cr_expect_eq(res.cell_num, 10000);
	wt_check_order_2d_i32(e.vfs, "/s");
	read_xyv(&e, "/s", &got);
	cr_assert_eq(got.n, 10000);
	{
		/* Expected: for each (x,y) the v of its last occurrence. */
		int32_t *last = calloc(10000, 4);

		for (int i = 0; i < N; i++)
			last[x[i] * 100 + y[i]] = v[i];
		for (int i = 0; i < 10000; i++) {
			char want[64];

			snprintf(want, sizeof(want), "%02x000000|%02x000000|%02x%02x%02x00",
				 i / 100, i % 100, last[i] & 255, (last[i] >> 8) & 255,
				 (last[i] >> 16) & 255);
			cr_assert_str_eq(got.lines[i], want);
		}
		free(last);
	}
	wt_dump_release(&got);
	/* The spill files are gone. */
	{
		struct tfs_vfs *px;
		struct tfs_dirlist l;

		cr_assert_eq(tfs_vfs_posix_new(&px), TFS_E_OK);
		cr_assert_eq(tfs_vfs_list(px, spill, &l, &e.d), TFS_E_OK);
		cr_expect_eq(l.count, 0);
		tfs_dirlist_release(&l);
		tfs_vfs_free(px);
	}
	rmdir(spill);
	free(x);
	free(y);
	free(v);
	tfs_vfs_free(e.vfs);
}

/* Spill files of a process that has ended go; those of a live process
 * (a write in progress), and other files, stay. */
Test(spill, cleanup_removes_files_of_ended_writers)
{
	char dir[64], path[160];
	const char *stay[3];
	char live[64], dead[64];
	unsigned removed = 0;
	pid_t child = fork();
	struct stat st;

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert_not_null(mkdtemp(tfs_temp_template(dir, sizeof(dir), "/tmp",
						     "tfs_spill_clean_")));
	snprintf(dead, sizeof(dead), "tfs-spill-%ld-1", (long)child);
	snprintf(live, sizeof(live), "tfs-spill-%ld-1", (long)getppid());
	stay[0] = live;
	stay[1] = "tfs-spill-x-1";
	stay[2] = "other";
	for (int i = 0; i < 4; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, i < 3 ? stay[i] : dead);
		f = fopen(path, "w");
		cr_assert_not_null(f);
		fclose(f);
	}
	tfs_spill_cleanup(dir, &removed);
	cr_expect_eq(removed, 1);
	snprintf(path, sizeof(path), "%s/%s", dir, dead);
	cr_expect_neq(stat(path, &st), 0, "%s stayed", dead);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, stay[i]);
		cr_expect_eq(stat(path, &st), 0, "%s went", stay[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* ---- Faults ------------------------------------------------------------------- */

static void count_fragments(struct tfs_vfs *vfs, const char *path, size_t *frags,
			    size_t *commits)
{
	struct tfs_dirlist l;
	struct tfs_diag d;
	char p[256];

	tfs_diag_init(&d);
	snprintf(p, sizeof(p), "%s/__fragments", path);
	cr_assert_eq(tfs_vfs_list(vfs, p, &l, &d), TFS_E_OK);
	*frags = l.count;
	tfs_dirlist_release(&l);
	snprintf(p, sizeof(p), "%s/__commits", path);
	cr_assert_eq(tfs_vfs_list(vfs, p, &l, &d), TFS_E_OK);
	*commits = l.count;
	tfs_dirlist_release(&l);
}

/* Dense 1-D [0,999] (extent 16), attribute v: a box write of [0,39]
 * streams. */
static void make_dense(struct wt_env *e, const char *path)
{
	struct tfs_schema s;

	lb_schema_init(&s, 22, false, 4);
	lb_add_dim(&s, "x", TFS_INT32, 0, 999, 16);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	cr_assert_eq(tfs_array_create(path, &s, &e->wo, &e->d), TFS_E_OK, "%s",
		     tfs_diag_msg(&e->d));
	tfs_schema_release(&s);
}

static enum tfs_err write_box(struct wt_env *e, const char *path, const int32_t *v,
			      struct tfs_write_result *res)
{
	int32_t lo = 0, hi = 39;
	struct tfs_range box = { (const uint8_t *)&lo, (const uint8_t *)&hi, 4, 4 };
	struct tfs_column col;
	struct tfs_batch b = { .cell_num = 20, .column_num = 1, .columns = &col };
	struct tfs_writer *w;
	enum tfs_err err;

	tfs_diag_init(&e->d);
	err = tfs_writer_open(path, &e->wo, TFS_WRITE_DENSE_BOX, &box, &w, &e->d);
	if (err)
		return err;
	/* Two batches of 20. */
	col_i32(&col, "v", v, 20);
	err = tfs_writer_append(w, &b, NULL, &e->d);
	col_i32(&col, "v", v + 20, 20);
	if (!err)
		err = tfs_writer_append(w, &b, NULL, &e->d);
	if (!err)
		err = tfs_writer_commit(w, res, &e->d);
	tfs_writer_free(w);
	return err;
}

static enum tfs_err write_either(struct wt_env *e, bool dense, const char *path,
				 const int32_t *x, const int32_t *y,
				 const int32_t *v, struct tfs_write_result *res)
{
	return dense ? write_box(e, path, v, res)
		     : write3(e, path, x, y, v, 40, NULL, res);
}

static void fault_kind(enum tfs_fault_kind kind, bool dense)
{
	struct wt_env e;
	struct tfs_vfs *mem, *faulty;
	int32_t x[40], y[40], v[40], x2[40], y2[40], v2[40];
	struct tfs_write_result res;
	struct wt_dump before, after, now;
	unsigned long calls, start;

	wt_env_init(&e, 1);
	mem = e.vfs;
	cr_assert_eq(tfs_vfs_faulty_new(mem, &faulty), TFS_E_OK);
	if (dense)
		make_dense(&e, "/s");
	else
		make_sparse(&e, "/s", false);
	for (int i = 0; i < 40; i++) {
		x[i] = i;
		y[i] = 2 * i;
		v[i] = i;
		x2[i] = 39 - i;
		y2[i] = 2 * (39 - i);
		v2[i] = 1000 + i;
	}
	cr_assert_eq(write_either(&e, dense, "/s", x, y, v, &res), TFS_E_OK);
	read_xyv(&e, "/s", &before);
	/* How many calls a successful second write makes, on a copy... the
	 * memory backend is cheap: measure on this array, then undo by
	 * cleanup is not possible (committed), so measure on a twin. */
	if (dense)
		make_dense(&e, "/t");
	else
		make_sparse(&e, "/t", false);
	cr_assert_eq(write_either(&e, dense, "/t", x, y, v, &res), TFS_E_OK);
	e.wo.vfs = faulty;
	start = tfs_vfs_faulty_calls(faulty);
	cr_assert_eq(write_either(&e, dense, "/t", x2, y2, v2, &res), TFS_E_OK);
	calls = tfs_vfs_faulty_calls(faulty) - start;
	read_xyv(&e, "/t", &after);
	cr_assert_gt(calls, 10);
	for (unsigned long n = 0; n < calls; n++) {
		size_t frags, commits;
		enum tfs_err err;

		tfs_vfs_faulty_arm(faulty, kind, n, false);
		err = write_either(&e, dense, "/s", x2, y2, v2, &res);
		tfs_vfs_faulty_arm(faulty, TFS_FAULT_NONE, 0, false);
		cr_assert_neq(err, TFS_E_OK, "fault at call %lu not reported", n);
		cr_expect_neq(e.d.msg[0], '\0');
		read_xyv(&e, "/s", &now);
		if (now.n == before.n && !strcmp(now.lines[0], before.lines[0])) {
			wt_expect_dump_eq(&now, &before);
		} else {
			/* Only a failure after the commit file exists may
			 * leave the (complete) fragment visible. */
			cr_log_info("fault at call %lu of %lu: %s", n, calls,
				    tfs_diag_msg(&e.d));
			wt_expect_dump_eq(&now, &after);
			wt_dump_release(&now);
			break;
		}
		wt_dump_release(&now);
		/* Leftovers are ignored by readers and removed by cleanup. */
		e.wo.vfs = mem;
		cr_assert_eq(tfs_array_cleanup("/s", &e.wo, 0, NULL, &e.d), TFS_E_OK,
			     "%s", tfs_diag_msg(&e.d));
		count_fragments(mem, "/s", &frags, &commits);
		cr_expect_eq(frags, 1, "fault at call %lu: %zu fragment folders", n,
			     frags);
		cr_expect_eq(commits, 1);
		e.wo.vfs = faulty;
	}
	wt_dump_release(&before);
	wt_dump_release(&after);
	tfs_vfs_free(faulty);
	tfs_vfs_free(mem);
}

Test(faults, eio) { fault_kind(TFS_FAULT_EIO, false); }
Test(faults, short_transfers) { fault_kind(TFS_FAULT_SHORT, false); }
Test(faults, nospc) { fault_kind(TFS_FAULT_NOSPC, false); }
Test(faults, streaming_box_eio) { fault_kind(TFS_FAULT_EIO, true); }
Test(faults, streaming_box_short) { fault_kind(TFS_FAULT_SHORT, true); }

/* ---- Cleanup ------------------------------------------------------------------ */

Test(cleanup, only_uncommitted_old_folders)
{
	struct wt_env e;
	int32_t x[] = { 1 }, y[] = { 1 }, v[] = { 1 };
	struct tfs_write_result res;
	unsigned removed = 9;
	size_t frags, commits;
	const char *stray = "/s/__fragments/__5_5_0123456789abcdef0123456789abcdef_22";

	wt_env_init(&e, 1);
	make_sparse(&e, "/s", false);
	cr_assert_eq(write3(&e, "/s", x, y, v, 1, NULL, &res), TFS_E_OK);
	cr_assert_eq(tfs_vfs_mkdir(e.vfs, stray, &e.d), TFS_E_OK);
	{
		char p[256];

		snprintf(p, sizeof(p), "%s/a0.tdb", stray);
		cr_assert_eq(tfs_vfs_write(e.vfs, p, "x", 1, &e.d), TFS_E_OK);
	}
	/* Too young for a long grace period. */
	cr_assert_eq(tfs_array_cleanup("/s", &e.wo, 3600 * 1000, &removed, &e.d),
		     TFS_E_OK);
	cr_expect_eq(removed, 0);
	count_fragments(e.vfs, "/s", &frags, &commits);
	cr_expect_eq(frags, 2);
	cr_assert_eq(tfs_array_cleanup("/s", &e.wo, 0, &removed, &e.d), TFS_E_OK);
	cr_expect_eq(removed, 1);
	count_fragments(e.vfs, "/s", &frags, &commits);
	cr_expect_eq(frags, 1);
	cr_expect_eq(commits, 1);
	/* Not an array: refused, nothing touched. */
	cr_assert_eq(tfs_vfs_mkdir(e.vfs, "/plain", &e.d), TFS_E_OK);
	cr_expect_eq(tfs_array_cleanup("/plain", &e.wo, 0, &removed, &e.d),
		     TFS_E_NOT_ARRAY);
	tfs_vfs_free(e.vfs);
}

/* ---- Array metadata ------------------------------------------------------------ */

Test(metadata, write_and_delete)
{
	struct wt_env e;
	int32_t seven = 7;
	char key_a[] = "alpha", key_b[] = "beta";
	struct tfs_meta_kv kv[2];
	struct tfs_array *a;

	wt_env_init(&e, 1);
	/* Writes within one millisecond are stamped ahead of the clock
	 * (each after the last): read a little in the future. */
	e.oo.timestamp = UINT64_C(5000000000000);
	make_sparse(&e, "/s", false);
	memset(kv, 0, sizeof(kv));
	kv[0].key = key_b;
	kv[0].key_len = 4;
	kv[0].type = TFS_STRING_UTF8;
	kv[0].value_num = 3;
	kv[0].value = (uint8_t *)"xyz";
	kv[1].key = key_a;
	kv[1].key_len = 5;
	kv[1].type = TFS_INT32;
	kv[1].value_num = 1;
	kv[1].value = (uint8_t *)&seven;
	cr_assert_eq(tfs_array_metadata_write("/s", kv, 2, &e.wo, &e.d), TFS_E_OK,
		     "%s", tfs_diag_msg(&e.d));
	cr_assert_eq(tfs_array_open("/s", &e.oo, &a, &e.d), TFS_E_OK);
	cr_assert_eq(tfs_array_metadata_count(a), 2);
	cr_expect_str_eq(tfs_array_metadata(a, 0)->key, "alpha");
	cr_expect_eq(*(const int32_t *)tfs_array_metadata(a, 0)->value, 7);
	tfs_array_close(a);
	/* Delete one right after: the later file wins even in the same ms. */
	kv[0].deleted = true;
	cr_assert_eq(tfs_array_metadata_write("/s", kv, 1, &e.wo, &e.d), TFS_E_OK);
	cr_assert_eq(tfs_array_open("/s", &e.oo, &a, &e.d), TFS_E_OK);
	cr_assert_eq(tfs_array_metadata_count(a), 1);
	cr_expect_str_eq(tfs_array_metadata(a, 0)->key, "alpha");
	tfs_array_close(a);
	/* Same key twice in one write: refused. */
	kv[1] = kv[0];
	cr_expect_eq(tfs_array_metadata_write("/s", kv, 2, &e.wo, &e.d),
		     TFS_E_INVALID);
	tfs_vfs_free(e.vfs);
}

Test(create, layout_and_version)
{
	struct wt_env e;
	struct tfs_dirlist l;
	struct tfs_array *a;
	static const char *const want[] = { "__commits", "__fragment_meta",
					    "__fragments", "__labels", "__meta",
					    "__schema" };

	wt_env_init(&e, 1);
	make_sparse(&e, "/s", false);
	cr_assert_eq(tfs_vfs_list(e.vfs, "/s", &l, &e.d), TFS_E_OK);
	cr_assert_eq(l.count, 6);
	for (size_t i = 0; i < 6; i++)
		cr_expect_str_eq(l.names[i], want[i]);
	tfs_dirlist_release(&l);
	cr_assert_eq(tfs_vfs_list(e.vfs, "/s/__schema", &l, &e.d), TFS_E_OK);
	cr_assert_eq(l.count, 2);
	cr_expect_str_eq(l.names[1], "__enumerations");
	{
		struct tfs_name_info ni;

		cr_assert_eq(tfs_name_parse(l.names[0], &ni), TFS_E_OK);
		cr_expect_eq(ni.t1, ni.t2);
		cr_expect_eq(strlen(ni.uuid), 32);
		cr_expect_eq(strlen(l.names[0]), 2 + 13 + 1 + 13 + 1 + 32);
	}
	tfs_dirlist_release(&l);
	cr_assert_eq(tfs_array_open("/s", &e.oo, &a, &e.d), TFS_E_OK);
	cr_expect_eq(tfs_array_schema(a)->version, TFS_FORMAT_VERSION_WRITE);
	cr_expect_eq(tfs_array_schema(a)->version, 22);
	tfs_array_close(a);
	tfs_vfs_free(e.vfs);
}

Test(create, refuses_non_empty_folders)
{
	struct wt_env e;
	struct tfs_schema s;

	wt_env_init(&e, 1);
	make_sparse(&e, "/s", false);
	lb_schema_init(&s, 22, true, 4);
	lb_add_dim(&s, "x", TFS_INT32, 0, 9, 10);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	cr_expect_eq(tfs_array_create("/s", &s, &e.wo, &e.d), TFS_E_EXISTS);
	/* A schema readers would refuse is not written at all. */
	s.dims[0].domain[0][0] = 50;
	cr_expect_eq(tfs_array_create("/bad", &s, &e.wo, &e.d), TFS_E_CORRUPT);
	{
		struct tfs_stat st;

		cr_assert_eq(tfs_vfs_stat(e.vfs, "/bad", &st, &e.d), TFS_E_OK);
		cr_expect_not(st.exists);
	}
	tfs_schema_release(&s);
	tfs_vfs_free(e.vfs);
}

/* ---- Older format versions ----------------------------------------------------- */

static void version_case(uint32_t version, bool sparse)
{
	struct wt_env e;
	struct tfs_schema s;
	struct lb_array la;
	int32_t x[30], y[30], v[30];
	struct tfs_write_result res;
	struct wt_dump got;
	struct tfs_array *a;

	wt_env_init(&e, 1);
	lb_schema_init(&s, version, sparse, 4);
	lb_add_dim(&s, "x", TFS_INT32, 0, 99, 10);
	lb_add_dim(&s, "y", TFS_INT32, 0, 99, 10);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	lb_array_create(&la, e.vfs, "/v", &s, 1000);
	tfs_schema_release(&s);
	for (int i = 0; i < 30; i++) {
		x[i] = 29 - i;
		y[i] = (i * 7) % 30;
		v[i] = i;
	}
	cr_assert_eq(write3(&e, "/v", x, y, v, 30, NULL, &res), TFS_E_OK, "%s",
		     tfs_diag_msg(&e.d));
	cr_expect(strstr(res.name, version >= 7 ? "" : "_23") != NULL);
	{
		char suffix[16];

		snprintf(suffix, sizeof(suffix), "_%u", version >= 7 ? version : 23);
		cr_expect(strstr(res.name, suffix) != NULL, "%s", res.name);
	}
	cr_assert_eq(tfs_array_open("/v", &e.oo, &a, &e.d), TFS_E_OK, "%s",
		     tfs_diag_msg(&e.d));
	cr_assert_eq(tfs_array_fragment_count(a), 1);
	{
		/* Dense arrays: the sparse fragment's cells, elsewhere fill. */
		int32_t lo = 0, hi = 99;
		struct tfs_range sub[2] = { { (const uint8_t *)&lo, (const uint8_t *)&hi, 4, 4 },
					    { (const uint8_t *)&lo, (const uint8_t *)&hi, 4, 4 } };
		uint64_t written = 0;

		wt_read(a, sparse ? NULL : sub, &got);
		for (size_t i = 0; i < got.n; i++)
			written += strstr(got.lines[i], "|00000080") == NULL;
		cr_expect_eq(written, 30, "version %u: %" PRIu64 " cells", version,
			     written);
		wt_dump_release(&got);
	}
	tfs_array_close(a);
	lb_array_release(&la);
	tfs_vfs_free(e.vfs);
}

Test(versions, sparse_1_to_23)
{
	for (uint32_t v = 1; v <= 23; v++)
		version_case(v, true);
}

Test(versions, dense_array_unordered_1_to_23)
{
	for (uint32_t v = 1; v <= 23; v++)
		version_case(v, false);
}

/* ---- Failing allocations ------------------------------------------------------ */

/* Every allocation of a write fails in turn: the write reports it (or
 * succeeds when the failure falls after its last allocation), never
 * crashes or leaks, and the array shows either nothing new or the whole
 * new fragment. */
static void alloc_case(bool dense)
{
	struct wt_env e;
	int32_t x[40], y[40], v[40];
	struct tfs_write_result res;
	struct wt_dump before, now;
	bool done = false;

	wt_env_init(&e, 1);
	if (dense)
		make_dense(&e, "/s");
	else
		make_sparse(&e, "/s", false);
	for (int i = 0; i < 40; i++) {
		x[i] = 39 - i;
		y[i] = i % 7;
		v[i] = i;
	}
	cr_assert_eq(write_either(&e, dense, "/s", x, y, v, &res), TFS_E_OK);
	read_xyv(&e, "/s", &before);
	/* How many allocations a write makes: the smallest budget that
	 * succeeds (found on a twin array, so /s stays as it was). */
	long hi = 1024, step;

	if (dense)
		make_dense(&e, "/t");
	else
		make_sparse(&e, "/t", false);
	for (;;) {
		enum tfs_err err;

		tfs_alloc_fail_after(hi);
		err = write_either(&e, dense, "/t", x, y, v, &res);
		tfs_alloc_fail_after(-1);
		if (err == TFS_E_OK)
			break;
		hi *= 2;
		cr_assert_lt(hi, 1L << 24);
	}
	step = hi / 400 + 1;
	for (long n = 0; n <= hi; n += step) {
		enum tfs_err err;

		for (int i = 0; i < 40; i++)
			v[i] = (int32_t)(1000 + n);
		tfs_alloc_fail_after(n);
		err = write_either(&e, dense, "/s", x, y, v, &res);
		tfs_alloc_fail_after(-1);
		if (err == TFS_E_OK) {
			done = true;
			break;
		}
		cr_expect_neq(e.d.msg[0], '\0', "allocation %ld: no message", n);
		read_xyv(&e, "/s", &now);
		wt_expect_dump_eq(&now, &before);
		wt_dump_release(&now);
	}
	if (!done) {
		/* The last budget succeeded on the twin; here too. */
		cr_assert_eq(write_either(&e, dense, "/s", x, y, v, &res), TFS_E_OK);
		done = true;
	}
	cr_expect(done, "the write never succeeded");
	wt_dump_release(&before);
	tfs_vfs_free(e.vfs);
}

Test(alloc, sparse_write) { alloc_case(false); }
Test(alloc, streaming_box_write) { alloc_case(true); }

/* ---- Garbage in ------------------------------------------------------------- */

static uint32_t lcg(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*seed >> 33);
}

/* Batches with random names, types, sizes, offsets and validity: every
 * append either succeeds or is refused with a message; nothing crashes
 * (the ASan build checks every access), and a refused batch leaves the
 * writer failed. */
Test(garbage, random_batches)
{
	struct wt_env e;
	uint64_t seed = 99;
	static const char *const names[] = { "x", "y", "v", "zz", "" };
	static const uint8_t types[] = { TFS_INT32, TFS_INT64, TFS_FLOAT64,
					 TFS_STRING_ASCII, TFS_UINT8 };

	unsigned accepted = 0, refused = 0;

	wt_env_init(&e, 1);
	make_sparse(&e, "/s", false);
	for (int round = 0; round < 300; round++) {
		struct tfs_column cols[4];
		uint8_t data[4][256];
		uint64_t offs[4][17];
		uint8_t valid[4][16];
		struct tfs_batch b;
		struct tfs_writer *w;
		struct tfs_write_result res;
		enum tfs_err err;
		size_t ncol;

#define RND() lcg(&seed)
		/* Mostly a valid batch (x, y, v as int32 in the domain), each
		 * property spoiled now and then. */
		ncol = RND() % 8 ? 3 : RND() % 5;
		memset(&b, 0, sizeof(b));
		b.cell_num = RND() % 17;
		b.column_num = ncol;
		b.columns = cols;
		for (size_t c = 0; c < ncol; c++) {
			bool spoil = RND() % 6 == 0;
			unsigned what = RND() % 7;

			memset(&cols[c], 0, sizeof(cols[c]));
			for (size_t k = 0; k < 64; k++) {
				int32_t v = (int32_t)(RND() % 100);

				memcpy(data[c] + 4 * k, &v, 4);
			}
			cols[c].name = names[c < 3 ? c : 3];
			cols[c].type = TFS_INT32;
			cols[c].cell_val_num = 1;
			cols[c].data = data[c];
			cols[c].data_len = 4 * b.cell_num;
			if (!spoil)
				continue;
			switch (what) {
			case 0:
				cols[c].name = names[RND() % 5];
				break;
			case 1:
				cols[c].type = types[RND() % 5];
				break;
			case 2:
				cols[c].var = true;
				cols[c].cell_val_num = TFS_VAR_NUM;
				offs[c][0] = RND() % 3;
				for (int i = 1; i < 17; i++)
					offs[c][i] = offs[c][i - 1] + RND() % 24 -
						     (RND() % 8 == 0 ? 30 : 0);
				cols[c].offsets = offs[c];
				cols[c].data_len = RND() % 257;
				break;
			case 3:
				for (int i = 0; i < 16; i++)
					valid[c][i] = (uint8_t)(RND() % 2);
				cols[c].validity = valid[c];
				break;
			case 4:
				cols[c].data = RND() % 2 ? NULL : data[c];
				cols[c].data_len = RND() % 257;
				break;
			case 5:
				for (size_t k = 0; k < 256; k++)
					data[c][k] = (uint8_t)RND();
				break;
			default:
				cols[c].cell_val_num = 2;
				break;
			}
		}
		tfs_diag_init(&e.d);
		cr_assert_eq(tfs_writer_open("/s", &e.wo, TFS_WRITE_UNORDERED, NULL,
					     &w, &e.d),
			     TFS_E_OK);
		err = tfs_writer_append(w, &b, NULL, &e.d);
		if (err) {
			cr_expect_neq(e.d.msg[0], '\0');
			cr_expect_eq(tfs_writer_commit(w, &res, &e.d), TFS_E_INVALID);
			refused++;
		} else {
			err = tfs_writer_commit(w, &res, &e.d);
			cr_expect(err == TFS_E_OK || err == TFS_E_INVALID, "%s",
				  tfs_diag_msg(&e.d));
			accepted += err == TFS_E_OK && res.cell_num > 0;
		}
		tfs_writer_free(w);
#undef RND
	}
	cr_expect_gt(accepted, 0);
	cr_expect_gt(refused, 0);
	cr_log_info("%u batches written, %u refused", accepted, refused);
	{
		/* Whatever was accepted reads back. */
		struct wt_dump got;

		read_xyv(&e, "/s", &got);
		wt_dump_release(&got);
	}
	tfs_vfs_free(e.vfs);
}

/* A fault at any one call of tfs_array_create: refused, and no folder left
 * (a folder that existed empty stays, empty). */
Test(faults, array_create)
{
	struct wt_env e;
	struct tfs_vfs *faulty;
	unsigned long start, calls;
	struct tfs_schema s;

	wt_env_init(&e, 1);
	cr_assert_eq(tfs_vfs_faulty_new(e.vfs, &faulty), TFS_E_OK);
	lb_schema_init(&s, 22, true, 4);
	lb_add_dim(&s, "x", TFS_INT32, 0, 99, 10);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	e.wo.vfs = faulty;
	start = tfs_vfs_faulty_calls(faulty);
	cr_assert_eq(tfs_array_create("/ok", &s, &e.wo, &e.d), TFS_E_OK);
	calls = tfs_vfs_faulty_calls(faulty) - start;
	for (unsigned long n = 0; n < calls; n++) {
		char path[32];
		struct tfs_stat st;

		snprintf(path, sizeof(path), "/c%lu", n);
		tfs_vfs_faulty_arm(faulty, TFS_FAULT_EIO, n, true);
		tfs_diag_init(&e.d);
		cr_expect_neq(tfs_array_create(path, &s, &e.wo, &e.d), TFS_E_OK,
			      "fault at call %lu", n);
		tfs_vfs_faulty_arm(faulty, TFS_FAULT_NONE, 0, false);
		cr_assert_eq(tfs_vfs_stat(e.vfs, path, &st, &e.d), TFS_E_OK);
		cr_expect_not(st.exists, "fault at call %lu left '%s'", n, path);
	}
	tfs_schema_release(&s);
	tfs_vfs_free(faulty);
	tfs_vfs_free(e.vfs);
}

/* A fault at any one call of a metadata write: refused, and the array's
 * metadata unchanged. */
Test(faults, metadata_write)
{
	struct wt_env e;
	struct tfs_vfs *mem, *faulty;
	unsigned long start, calls;
	int32_t one = 1;
	char key[] = "k";
	struct tfs_meta_kv kv = { .key = key, .key_len = 1, .type = TFS_INT32,
				  .value_num = 1, .value = (uint8_t *)&one };
	struct tfs_array *a;

	wt_env_init(&e, 1);
	mem = e.vfs;
	cr_assert_eq(tfs_vfs_faulty_new(mem, &faulty), TFS_E_OK);
	make_sparse(&e, "/s", false);
	e.wo.vfs = faulty;
	start = tfs_vfs_faulty_calls(faulty);
	cr_assert_eq(tfs_array_metadata_write("/s", &kv, 1, &e.wo, &e.d), TFS_E_OK);
	calls = tfs_vfs_faulty_calls(faulty) - start;
	one = 2;
	for (unsigned long n = 0; n < calls; n++) {
		tfs_vfs_faulty_arm(faulty, TFS_FAULT_EIO, n, true);
		tfs_diag_init(&e.d);
		cr_expect_neq(tfs_array_metadata_write("/s", &kv, 1, &e.wo, &e.d),
			      TFS_E_OK, "fault at call %lu", n);
		tfs_vfs_faulty_arm(faulty, TFS_FAULT_NONE, 0, false);
		cr_assert_eq(tfs_array_open("/s", &e.oo, &a, &e.d), TFS_E_OK, "%s",
			     tfs_diag_msg(&e.d));
		cr_assert_eq(tfs_array_metadata_count(a), 1);
		cr_expect_eq(*(const int32_t *)tfs_array_metadata(a, 0)->value, 1,
			     "fault at call %lu", n);
		tfs_array_close(a);
	}
	tfs_vfs_free(faulty);
	tfs_vfs_free(mem);
}

/* Whether var-size offsets are stored follows the schema's version
 * (write.md §1, tile.md §4): ASCII + RLE embeds them from v12, UTF-8 +
 * RLE from v17. An embedded offsets tile is 8 bytes (no chunks). */
Test(versions, offsets_embedded_by_schema_version)
{
	static const uint32_t versions[] = { 11, 12, 16, 17, 22 };

	for (size_t vi = 0; vi < sizeof(versions) / sizeof(*versions); vi++) {
		uint32_t ver = versions[vi];
		struct wt_env e;
		struct tfs_schema s;
		struct lb_array la;
		struct tfs_attr *at;
		struct tfs_column cols[3];
		struct tfs_batch b = { .cell_num = 3, .column_num = 3, .columns = cols };
		int32_t x[3] = { 1, 2, 3 };
		uint64_t offs[4] = { 0, 2, 5, 6 };
		struct tfs_write_result res;
		struct tfs_writer *w;
		char p[512];

		wt_env_init(&e, 1);
		lb_schema_init(&s, ver, true, 100);
		lb_add_dim(&s, "x", TFS_INT32, 0, 99, 10);
		at = lb_add_attr(&s, "asc", TFS_STRING_ASCII, TFS_VAR_NUM, false);
		lb_add_filter(&at->filters, TFS_FILTER_RLE);
		at = lb_add_attr(&s, "utf", TFS_STRING_UTF8, TFS_VAR_NUM, false);
		lb_add_filter(&at->filters, TFS_FILTER_RLE);
		lb_array_create(&la, e.vfs, "/v", &s, 1000);
		tfs_schema_release(&s);
		col_i32(&cols[0], "x", x, 3);
		for (int c = 1; c < 3; c++) {
			memset(&cols[c], 0, sizeof(cols[c]));
			cols[c].name = c == 1 ? "asc" : "utf";
			cols[c].type = c == 1 ? TFS_STRING_ASCII : TFS_STRING_UTF8;
			cols[c].cell_val_num = TFS_VAR_NUM;
			cols[c].var = true;
			cols[c].data = (const uint8_t *)"aabbbc";
			cols[c].data_len = 6;
			cols[c].offsets = offs;
		}
		cr_assert_eq(tfs_writer_open("/v", &e.wo, TFS_WRITE_UNORDERED, NULL,
					     &w, &e.d),
			     TFS_E_OK, "%s", tfs_diag_msg(&e.d));
		cr_assert_eq(tfs_writer_append(w, &b, NULL, &e.d), TFS_E_OK);
		cr_assert_eq(tfs_writer_commit(w, &res, &e.d), TFS_E_OK, "%s",
			     tfs_diag_msg(&e.d));
		tfs_writer_free(w);
		for (int a = 0; a < 2; a++) {
			struct tfs_stat st;
			bool embedded = a == 0 ? ver >= 12 : ver >= 17;

			snprintf(p, sizeof(p), "/v/%s%s/a%d.tdb",
				 ver >= 12 ? "__fragments/" : "", res.name, a);
			cr_assert_eq(tfs_vfs_stat(e.vfs, p, &st, &e.d), TFS_E_OK);
			cr_assert(st.exists, "%s", p);
			cr_expect_eq(st.size == 8, embedded,
				     "v%u attribute %d: offsets file of %" PRIu64
				     " bytes", ver, a, st.size);
		}
		{
			/* And it reads back. */
			struct wt_dump got;

			read_xyv(&e, "/v", &got);
			cr_expect_eq(got.n, 3);
			cr_expect_str_eq(got.lines[1], "02000000|626262|626262");
			wt_dump_release(&got);
		}
		lb_array_release(&la);
		tfs_vfs_free(e.vfs);
	}
}

/* Dense array, unordered cells as many as their bounding box holds but
 * with one duplicate (dropped by dedup): not a full box after all, so the
 * write becomes a sparse fragment of the 39 distinct cells. */
Test(refuse, dedup_leaves_box_short)
{
	struct wt_env e;
	struct tfs_schema s;
	int32_t x[40], y[40], v[40];
	struct tfs_write_result res;
	int n = 0;

	wt_env_init(&e, 1);
	lb_schema_init(&s, 22, false, 16);
	lb_add_dim(&s, "x", TFS_INT32, 0, 99, 10);
	lb_add_dim(&s, "y", TFS_INT32, 0, 99, 10);
	lb_add_attr(&s, "v", TFS_INT32, 1, false);
	cr_assert_eq(tfs_array_create("/d", &s, &e.wo, &e.d), TFS_E_OK);
	tfs_schema_release(&s);
	/* Box [2,6] x [3,10] = 40 cells; (4, 5) missing, (2, 3) twice. */
	for (int32_t i = 2; i <= 6; i++)
		for (int32_t j = 3; j <= 10; j++)
			if (i != 4 || j != 5) {
				x[n] = i;
				y[n] = j;
				v[n] = n;
				n++;
			}
	x[n] = 2;
	y[n] = 3;
	v[n] = 777;
	n++;
	cr_assert_eq(n, 40);
	e.wo.dedup = true;
	cr_assert_eq(write3(&e, "/d", x, y, v, 40, NULL, &res), TFS_E_OK, "%s",
		     tfs_diag_msg(&e.d));
	cr_expect_not(res.dense);
	cr_expect_eq(res.cell_num, 39);
	{
		struct tfs_array *a;
		int32_t lo[2] = { 2, 3 }, hi[2] = { 2, 3 };
		struct tfs_range sub[2] = {
			{ (const uint8_t *)&lo[0], (const uint8_t *)&hi[0], 4, 4 },
			{ (const uint8_t *)&lo[1], (const uint8_t *)&hi[1], 4, 4 },
		};
		struct wt_dump got;

		cr_assert_eq(tfs_array_open("/d", &e.oo, &a, &e.d), TFS_E_OK);
		wt_read(a, sub, &got);
		cr_assert_eq(got.n, 1);
		cr_expect_str_eq(got.lines[0], "02000000|03000000|09030000");
		wt_dump_release(&got);
		tfs_array_close(a);
	}
	tfs_vfs_free(e.vfs);
}
