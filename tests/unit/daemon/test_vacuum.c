/* Open files of the daemon while the array under them is consolidated
 * and vacuumed (no mount): a streamed or random-access file goes on
 * reading the bytes of the view it was opened on, from a new opening of
 * the array at the same time, or fails with EIO (TFS_E_CORRUPT) when the
 * fragments left cannot show that view, never with other bytes. Also the
 * max_memory cap on files rendered whole at open. Arrays are written into
 * a temporary folder with the core's writer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon_fixture.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_format.h"

#define CORPUS TFS_CORPUS_DIR
/* Dense array: N × N int32 cells. */
#define N 512

static struct tfsd fs;
static char root[64];

static char *path_of(const char *rel)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", root, rel);
	return buf;
}

static void create(const char *rel, const char *json)
{
	struct tfs_schema s;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, json, strlen(json), &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_array_create(path_of(rel), &s, NULL, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	tfs_schema_release(&s);
}

/* Time of the next write (0: now, as the writer picks it). */
static uint64_t write_time;

static void write_cells(const char *rel, enum tfs_write_layout layout,
			const struct tfs_range *box, const struct tfs_batch *b)
{
	struct tfs_write_opts wo = {.threads = 2, .t1 = write_time,
				    .t2 = write_time};
	struct tfs_write_result res;
	struct tfs_writer *w;
	struct tfs_diag d;

	/* Views opened before get an earlier time than the write, and
	 * views opened after a later one. */
	usleep(3000);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_writer_open(path_of(rel), &wo, layout, box, &w, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_append(w, b, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_writer_commit(w, &res, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_writer_free(w);
	usleep(3000);
}

/* Dense: a = base + row-major index over [lo, hi] × [lo, hi]. */
static void write_dense(int32_t lo, int32_t hi, int32_t base)
{
	uint64_t side = (uint64_t)(hi - lo + 1), n = side * side;
	int32_t *v = malloc(n * sizeof(*v));
	struct tfs_range box[2] = {{(const uint8_t *)&lo, (const uint8_t *)&hi,
				    4, 4},
				   {(const uint8_t *)&lo, (const uint8_t *)&hi,
				    4, 4}};
	struct tfs_column col = {.name = "a", .type = TFS_INT32,
				 .cell_val_num = 1, .data = (uint8_t *)v,
				 .data_len = n * 4};
	struct tfs_batch b = {.cell_num = n, .column_num = 1, .columns = &col};

	cr_assert(v);
	for (uint64_t i = 0; i < n; i++)
		v[i] = base + (int32_t)i;
	write_cells("d", TFS_WRITE_DENSE_BOX, box, &b);
	free(v);
}

/* 1-D dense array r: a = base + index over [lo, hi]. */
static void write_1d(int32_t lo, int32_t hi, int32_t base)
{
	uint64_t n = (uint64_t)(hi - lo + 1);
	int32_t *v = malloc(n * sizeof(*v));
	struct tfs_range box = {(const uint8_t *)&lo, (const uint8_t *)&hi, 4,
				4};
	struct tfs_column col = {.name = "a", .type = TFS_INT32,
				 .cell_val_num = 1, .data = (uint8_t *)v,
				 .data_len = n * 4};
	struct tfs_batch b = {.cell_num = n, .column_num = 1, .columns = &col};

	cr_assert(v);
	for (uint64_t i = 0; i < n; i++)
		v[i] = base + (int32_t)i;
	write_cells("r", TFS_WRITE_DENSE_BOX, &box, &b);
	free(v);
}

/* Sparse: count cells, rows of 1000 (x shuffled by base), a = base + i,
 * s = "s<base>" repeated (base % 7) + 1 times (var-size). */
static void write_sparse(uint64_t count, int32_t base)
{
	int32_t *x = malloc(count * 4), *y = malloc(count * 4),
		*a = malloc(count * 4);
	uint64_t *off = malloc((count + 1) * 8);
	struct tfs_buf s;
	struct tfs_column cols[4] = {
		{.name = "x", .type = TFS_INT32, .cell_val_num = 1,
		 .is_dim = true, .data = (uint8_t *)x, .data_len = count * 4},
		{.name = "y", .type = TFS_INT32, .cell_val_num = 1,
		 .is_dim = true, .data = (uint8_t *)y, .data_len = count * 4},
		{.name = "a", .type = TFS_INT32, .cell_val_num = 1,
		 .data = (uint8_t *)a, .data_len = count * 4},
		{.name = "s", .type = TFS_STRING_UTF8,
		 .cell_val_num = TFS_VAR_NUM, .var = true, .offsets = off},
	};
	struct tfs_batch b = {.cell_num = count, .column_num = 4,
			      .columns = cols};

	cr_assert(x && y && a && off);
	tfs_buf_init(&s, TFS_BUF_NO_MAX);
	for (uint64_t i = 0; i < count; i++) {
		x[i] = (int32_t)((i * 7 + (uint64_t)base) % 1000);
		y[i] = (int32_t)(i / 1000);
		a[i] = base + (int32_t)i;
		off[i] = s.len;
		for (int r = 0; r <= base % 7; r++)
			cr_assert_eq(tfs_buf_printf(&s, "s%d", base), TFS_E_OK);
	}
	off[count] = s.len;
	cols[3].data = s.data;
	cols[3].data_len = s.len;
	write_cells("s", TFS_WRITE_UNORDERED, NULL, &b);
	tfs_buf_release(&s);
	free(x);
	free(y);
	free(a);
	free(off);
}

static void setup(void)
{
	dfx_temp_dir(root, sizeof(root), "tfs-vacuum-test.");
	create("d", "{\"array_type\":\"dense\",\"dims\":["
		    "{\"name\":\"r\",\"type\":\"INT32\",\"domain\":[0,511],"
		    "\"tile\":64},"
		    "{\"name\":\"c\",\"type\":\"INT32\",\"domain\":[0,511],"
		    "\"tile\":64}],"
		    "\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\"}]}");
	create("s", "{\"array_type\":\"sparse\",\"capacity\":1000,\"dims\":["
		    "{\"name\":\"x\",\"type\":\"INT32\",\"domain\":[0,999],"
		    "\"tile\":100},"
		    "{\"name\":\"y\",\"type\":\"INT32\",\"domain\":[0,999],"
		    "\"tile\":100}],"
		    "\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\"},"
		    "{\"name\":\"s\",\"type\":\"STRING_UTF8\","
		    "\"cell_val_num\":\"var\"}]}");
	write_time = 0;
	write_dense(0, N - 1, 0);
	write_dense(100, 299, -1000000);
	write_sparse(20000, 1);
	write_sparse(5000, 2);
	/* Every text file streams, and no decoded tiles are kept: every
	 * read goes to the files. */
	dfx_start(&fs, root, 0, 0, 1 << 20);
}

static void teardown(void)
{
	dfx_stop(&fs);
	dfx_remove(root);
}

static void maintain(const char *rel)
{
	struct tfs_diag d;
	char made[256];
	unsigned removed = 0;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_consolidate(path_of(rel),
					   TFS_CONSOLIDATE_FRAGMENTS, NULL,
					   made, sizeof(made), &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(made[0], "%s: nothing consolidated", rel);
	cr_assert_eq(tfs_array_vacuum(path_of(rel), TFS_CONSOLIDATE_FRAGMENTS,
				      NULL, &removed, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(removed > 0, "%s: nothing vacuumed", rel);
}

/* An open file of the mount. */
struct open_file {
	struct tfsd_node n;
	struct tfsd_file *f;
	uint64_t off;
};

static void file_open(struct open_file *of, const char *vpath)
{
	struct tfs_diag d;

	tfs_diag_init(&d);
	of->off = 0;
	cr_assert_eq(tfsd_resolve(&fs, vpath, &of->n, &d), TFS_E_OK, "%s: %s",
		     vpath, tfs_diag_msg(&d));
	cr_assert_eq(tfsd_file_open(&fs, &of->n, vpath, &of->f, &d), TFS_E_OK,
		     "%s: %s", vpath, tfs_diag_msg(&d));
}

static void file_close(struct open_file *of)
{
	tfsd_file_close(&fs, of->f);
	tfsd_node_release(&fs, &of->n);
}

/* Reads on, in pieces of step bytes, up to max bytes more (or the end)
 * into out; the first failure is returned with its message in d. */
static enum tfs_err file_read(struct open_file *of, size_t step, uint64_t max,
			      struct tfs_buf *out, struct tfs_diag *d)
{
	uint64_t start = of->off;

	tfs_diag_init(d);
	while (of->off - start < max) {
		size_t got = 0;
		enum tfs_err e;

		cr_assert_eq(tfs_buf_reserve(out, step), TFS_E_OK);
		e = tfsd_file_read(&fs, of->f, of->off, out->data + out->len,
				   step, &got, d);
		if (e)
			return e;
		if (!got)
			break;
		out->len += got;
		of->off += got;
	}
	return TFS_E_OK;
}

/* The whole file as read from a new open. */
static void read_whole(const char *vpath, struct tfs_buf *out)
{
	struct open_file of;
	struct tfs_diag d;

	tfs_buf_init(out, TFS_BUF_NO_MAX);
	file_open(&of, vpath);
	cr_assert_eq(file_read(&of, 1 << 16, UINT64_MAX, out, &d), TFS_E_OK,
		     "%s: %s", vpath, tfs_diag_msg(&d));
	file_close(&of);
	cr_assert(out->len > 0, "%s", vpath);
}

static void expect_same(const struct tfs_buf *got, const struct tfs_buf *want,
			const char *what)
{
	size_t at = 0;

	while (at < got->len && at < want->len &&
	       got->data[at] == want->data[at])
		at++;
	cr_expect(got->len == want->len && at == got->len,
		  "%s: %zu bytes, want %zu; first difference at %zu", what,
		  got->len, want->len, at);
}

static size_t fragment_count(const char *rel)
{
	struct tfs_array *a;
	struct tfs_diag d;
	size_t n;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_open(path_of(rel), NULL, &a, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	n = tfs_array_fragment_count(a);
	tfs_array_close(a);
	return n;
}

/* A dense text file streams in steps of about 1 MiB: after the first
 * steps were read, its fragments are consolidated and vacuumed. The rest
 * reads from the array opened again at the file's time, after the bytes
 * served so far were produced again (and checked); every byte equals the
 * file before. The same for a random-access file (raw bytes, produced in
 * windows of 4 MiB). */
Test(vacuum, dense_files_read_on, .init = setup, .fini = teardown)
{
	static const char *const paths[] = {"d/a/slice[:].csv", "d/slice[:].json",
					    "r/a/slice[:]"};
	struct open_file of[3];
	struct tfs_buf want[3], got[3];
	struct tfs_diag d;

	create("r", "{\"array_type\":\"dense\",\"dims\":["
		    "{\"name\":\"i\",\"type\":\"INT32\","
		    "\"domain\":[0,2999999],\"tile\":65536}],"
		    "\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\"}]}");
	write_1d(0, 2999999, 0);
	write_1d(1000000, 1999999, -5000000);
	for (size_t i = 0; i < 3; i++) {
		read_whole(paths[i], &want[i]);
		tfs_buf_init(&got[i], TFS_BUF_NO_MAX);
		file_open(&of[i], paths[i]);
		cr_assert_eq(file_read(&of[i], 1 << 16, (uint64_t)3 << 19,
				       &got[i], &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
	}
	cr_assert(tfsd_file_direct(of[0].f), "the .csv streams");
	cr_assert(!tfsd_file_direct(of[2].f), "raw bytes are random access");
	cr_assert(want[0].len > (size_t)2 << 20, "more than one step");
	cr_assert(want[2].len > (size_t)8 << 20, "more than one window");
	cr_assert_eq(fragment_count("d"), 2);
	maintain("d");
	maintain("r");
	cr_assert_eq(fragment_count("d"), 1, "the originals are gone");
	cr_assert_eq(fragment_count("r"), 1, "the originals are gone");
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(file_read(&of[i], 1 << 16, UINT64_MAX, &got[i], &d),
			     TFS_E_OK, "%s: %s", paths[i], tfs_diag_msg(&d));
		expect_same(&got[i], &want[i], paths[i]);
		file_close(&of[i]);
		tfs_buf_release(&got[i]);
		tfs_buf_release(&want[i]);
	}
}

/* A streamed file read again from the start after a vacuum (the stream
 * restarts on the array opened again) and read in pieces that are not
 * steps: still the same bytes. */
Test(vacuum, restart_after_recovery, .init = setup, .fini = teardown)
{
	struct open_file of;
	struct tfs_buf want, got;
	struct tfs_diag d;

	read_whole("d/a/slice[:].csv", &want);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	file_open(&of, "d/a/slice[:].csv");
	cr_assert_eq(file_read(&of, 4097, 100000, &got, &d), TFS_E_OK);
	maintain("d");
	cr_assert_eq(file_read(&of, 4097, UINT64_MAX, &got, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	expect_same(&got, &want, "first pass");
	got.len = 0;
	of.off = 0;
	cr_assert_eq(file_read(&of, 1 << 16, UINT64_MAX, &got, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	expect_same(&got, &want, "second pass");
	file_close(&of);
	tfs_buf_release(&got);
	tfs_buf_release(&want);
}

/* Sparse streams (text, and .npy of a var-size field, whose header and
 * widths were measured on the old opening): opened before the vacuum,
 * read after it, the same bytes. */
Test(vacuum, sparse_files_read_on, .init = setup, .fini = teardown)
{
	static const char *const paths[] = {"s/data.csv", "s/s/slice[:].npy",
					    "s/slice[:].json"};
	struct open_file of[3];
	struct tfs_buf want[3], got[3];
	struct tfs_diag d;

	for (size_t i = 0; i < 3; i++) {
		read_whole(paths[i], &want[i]);
		tfs_buf_init(&got[i], TFS_BUF_NO_MAX);
		file_open(&of[i], paths[i]);
	}
	/* One piece of the .npy before: its header is measured. */
	cr_assert_eq(file_read(&of[1], 100, 100, &got[1], &d), TFS_E_OK);
	maintain("s");
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(file_read(&of[i], 1 << 16, UINT64_MAX, &got[i], &d),
			     TFS_E_OK, "%s: %s", paths[i], tfs_diag_msg(&d));
		expect_same(&got[i], &want[i], paths[i]);
		file_close(&of[i]);
		tfs_buf_release(&got[i]);
		tfs_buf_release(&want[i]);
	}
}

/* A write after the file was opened, consolidated with its fragments:
 * sparse fragments merged with per-cell times still show the file's view
 * (the reader drops the later cells); merged without them (the range
 * holds a fragment with times of its own) the view is gone: EIO, never
 * the later cells. */
Test(vacuum, later_write_in_the_consolidation, .init = setup,
     .fini = teardown)
{
	struct open_file of;
	struct tfs_buf want, got;
	struct tfs_diag d;

	read_whole("s/data.csv", &want);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	file_open(&of, "s/data.csv");
	write_sparse(3000, 3);
	maintain("s"); /* per-cell times */
	cr_expect_eq(file_read(&of, 1 << 16, UINT64_MAX, &got, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	expect_same(&got, &want, "stamped consolidation");
	file_close(&of);
	tfs_buf_release(&want);

	/* Now one fragment with times: the next merge has none. */
	read_whole("s/data.csv", &want);
	got.len = 0;
	file_open(&of, "s/data.csv");
	write_sparse(3000, 4);
	maintain("s");
	cr_expect_eq(file_read(&of, 1 << 16, UINT64_MAX, &got, &d),
		     TFS_E_CORRUPT, "the view is gone");
	cr_expect(strstr(tfs_diag_msg(&d), "cannot be read again"), "%s",
		  tfs_diag_msg(&d));
	cr_expect_eq(got.len, 0, "no bytes of another view");
	/* And again: the same refusal, no other bytes. */
	cr_expect_eq(file_read(&of, 1 << 16, UINT64_MAX, &got, &d),
		     TFS_E_CORRUPT);
	cr_expect_eq(got.len, 0);
	file_close(&of);
	tfs_buf_release(&got);
	tfs_buf_release(&want);
}

/* Dense: a consolidated fragment whose range ends after the file's time
 * is not part of its view, and the originals are gone: after the bytes
 * served so far (all exact), EIO with the reason. */
Test(vacuum, dense_range_straddles_the_view, .init = setup,
     .fini = teardown)
{
	struct open_file of;
	struct tfs_buf want, got;
	struct tfs_diag d;

	read_whole("d/a/slice[:].csv", &want);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	file_open(&of, "d/a/slice[:].csv");
	cr_assert_eq(file_read(&of, 1 << 16, 1 << 20, &got, &d), TFS_E_OK);
	write_dense(0, 63, 7);
	maintain("d");
	cr_expect_eq(file_read(&of, 1 << 16, UINT64_MAX, &got, &d),
		     TFS_E_CORRUPT);
	cr_expect(strstr(tfs_diag_msg(&d), "cannot be read again"), "%s",
		  tfs_diag_msg(&d));
	cr_expect(got.len <= want.len &&
			  memcmp(got.data, want.data, got.len) == 0,
		  "the bytes served are the view's");
	file_close(&of);
	tfs_buf_release(&got);
	tfs_buf_release(&want);
}

/* A missing file that no vacuum explains (the fragments are all still
 * there) is damage: the read fails with the missing file's message. */
Test(vacuum, damage_is_no_vacuum, .init = setup, .fini = teardown)
{
	struct open_file of;
	struct tfs_buf got;
	struct tfs_diag d;
	char cmd[512];

	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	file_open(&of, "s/data.csv");
	snprintf(cmd, sizeof(cmd), "rm %s/s/__fragments/*/a0.tdb", root);
	dfx_run(cmd);
	cr_expect_eq(file_read(&of, 1 << 16, UINT64_MAX, &got, &d),
		     TFS_E_CORRUPT);
	cr_expect(strstr(tfs_diag_msg(&d), "is missing"), "%s",
		  tfs_diag_msg(&d));
	file_close(&of);
	tfs_buf_release(&got);
}

/* max_memory counts files rendered whole at open while they are open:
 * the second open of a file whose bytes fit once but not twice fails
 * with ENOMEM (TFS_E_NOMEM), and succeeds once the first is closed. */
Test(memory, whole_files_count, .init = setup, .fini = teardown)
{
	const char *vpath = "s/slice[0:10,0:1000].csv";
	struct open_file a, b;
	struct tfsd_node n;
	struct tfsd_size sz;
	struct tfs_diag d;

	fs.cfg.whole_max_cells = 1 << 20;
	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(&fs, vpath, &n, &d), TFS_E_OK);
	/* stat renders it whole into the render cache. */
	cr_assert_eq(tfsd_file_size(&fs, &n, vpath, &sz, &d), TFS_E_OK);
	tfsd_node_release(&fs, &n);
	cr_assert(sz.exact && sz.size > 1000);
	fs.cfg.max_memory = 1 << 20;
	fs.render_limit = sz.size + sz.size / 2;
	file_open(&a, vpath);
	cr_assert(!tfsd_file_direct(a.f), "rendered whole");
	cr_expect_eq(fs.render_bytes, sz.size);
	cr_assert_eq(tfsd_resolve(&fs, vpath, &b.n, &d), TFS_E_OK);
	cr_expect_eq(tfsd_file_open(&fs, &b.n, vpath, &b.f, &d), TFS_E_NOMEM);
	cr_expect(strstr(tfs_diag_msg(&d), "max_memory="), "%s",
		  tfs_diag_msg(&d));
	cr_expect_eq(fs.render_bytes, sz.size, "the refused open gave back");
	file_close(&a);
	cr_expect_eq(fs.render_bytes, 0);
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_file_open(&fs, &b.n, vpath, &b.f, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	file_close(&b);
	cr_expect_eq(fs.render_bytes, 0);

	/* Rendered at open (not cached): over the cap, ENOMEM too. */
	tfsd_renders_free(fs.renders);
	cr_assert_eq(tfsd_renders_new(1 << 20, &fs.renders), TFS_E_OK);
	fs.render_limit = sz.size / 2;
	cr_assert_eq(tfsd_resolve(&fs, vpath, &n, &d), TFS_E_OK);
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_file_open(&fs, &n, vpath, &b.f, &d), TFS_E_NOMEM);
	tfsd_node_release(&fs, &n);
	cr_expect_eq(fs.render_bytes, 0);
	/* Documents too. */
	fs.render_limit = 10;
	cr_assert_eq(tfsd_resolve(&fs, "s/schema.json", &n, &d), TFS_E_OK);
	tfs_diag_init(&d);
	cr_expect_eq(tfsd_file_open(&fs, &n, "s/schema.json", &b.f, &d),
		     TFS_E_NOMEM);
	tfsd_node_release(&fs, &n);
	cr_expect_eq(fs.render_bytes, 0);
}

/* A write stamped before the file's time but committed after it was
 * opened (a long ingest), then consolidated with the rest: the fragments
 * cannot tell, but the bytes produced again differ from those served
 * (the write changed the first rows): EIO, not the new bytes. */
Test(vacuum, replay_checks_bytes, .init = setup, .fini = teardown)
{
	struct open_file of;
	struct tfs_buf want, got;
	struct tfs_diag d;

	read_whole("d/a/slice[:].csv", &want);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	file_open(&of, "d/a/slice[:].csv");
	cr_assert_eq(file_read(&of, 1 << 16, 1 << 20, &got, &d), TFS_E_OK);
	write_time = tfs_array_timestamp(of.n.arr->a) - 1;
	write_dense(0, 63, 7);
	write_time = 0;
	maintain("d");
	cr_expect_eq(file_read(&of, 1 << 16, UINT64_MAX, &got, &d),
		     TFS_E_CORRUPT);
	cr_expect(strstr(tfs_diag_msg(&d), "other bytes"), "%s",
		  tfs_diag_msg(&d));
	cr_expect(got.len >= 1 << 20 && got.len < want.len &&
			  memcmp(got.data, want.data, got.len) == 0,
		  "the bytes served are the view's");
	file_close(&of);
	tfs_buf_release(&got);
	tfs_buf_release(&want);
}
