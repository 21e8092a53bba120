/* Dense reads of tiles too big to decode whole within the memory budget
 * (core/read/tile_chunks.c): under a budget smaller than a tile, a read
 * gives exactly the bytes of a read without a budget (every cell, and
 * selections that start and end inside tiles and chunks), while the
 * memory accountant's high-water mark stays under the budget. Covered:
 * row- and column-major cells, 1 to 3 dimensions, a compressor, a chain
 * with a checksum, no filter at all (only the bytes needed are read),
 * nullable cells (validity read chunk by chunk too), encryption, and two
 * overlapping fragments. A tile stored as one chunk is still refused with
 * the budget in the message, and a damaged chunk header fails cleanly. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tfs_buf.h"
#include "tfs_datatype.h"
#include "tfs_alloc.h"
#include "tfs_mem.h"
#include "tilefs/tilefs.h"
#include "tilefs/tfs_ingest.h"
#include "tilefs/tfs_write.h"

#define MAXD 3

struct big_case {
	const char *name;
	unsigned dims;
	int32_t ext[MAXD], tile[MAXD];
	bool col_major; /* cell order */
	const char *type;
	unsigned size; /* bytes per cell */
	const char *filters; /* JSON list */
	const char *chunk;   /* "" or ",\"max_chunk_size\":0" */
	bool nullable;
	bool encrypted;
	bool second; /* a second fragment over part of the first */
};

static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
				12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
				23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

/* 512 KiB tiles of 8 chunks (INT32, FLOAT32) or 1 MiB of 16 (FLOAT64). */
static const struct big_case cases[] = {
	{"zstd_2d", 2, {512, 512}, {256, 512}, false, "INT32", 4,
	 "[\"ZSTD(level=1)\"]", "", false, false, false},
	{"colmajor_2d", 2, {512, 512}, {256, 512}, true, "FLOAT32", 4,
	 "[\"LZ4\"]", "", false, false, false},
	{"md5_chain_nullable", 2, {300, 700}, {128, 512}, false, "FLOAT64", 8,
	 "[\"BYTESHUFFLE\",\"CHECKSUM_MD5\",\"ZSTD(level=1)\"]", "", true,
	 false, false},
	{"unfiltered_3d", 3, {64, 80, 64}, {32, 64, 64}, false, "INT32", 4,
	 "[]", "", false, false, false},
	{"sha256_1d", 1, {400000}, {160000}, false, "INT32", 4,
	 "[\"CHECKSUM_SHA256\",\"GZIP\"]", "", false, false, false},
	{"encrypted_2d", 2, {512, 512}, {256, 512}, false, "INT32", 4,
	 "[\"ZSTD(level=1)\"]", "", false, true, false},
	{"two_fragments", 2, {512, 512}, {256, 512}, false, "INT32", 4,
	 "[\"ZSTD(level=1)\"]", "", true, false, true},
};

static char root[256];

static uint64_t tile_cells(const struct big_case *c)
{
	uint64_t n = 1;

	for (unsigned k = 0; k < c->dims; k++)
		n *= (uint64_t)c->tile[k];
	return n;
}

/* Cell values: a pattern that compresses somewhat, different per write. */
static void fill_cells(const struct big_case *c, uint8_t *data,
		       uint8_t *validity, uint64_t cells, unsigned salt)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (salt + 1);

	for (uint64_t i = 0; i < cells; i++) {
		uint64_t v;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		v = (i % 97 < 50) ? i * (salt + 3) : s;
		if (c->size == 8) {
			double x = (double)(v % 100000) / 7.0;

			memcpy(data + i * 8, &x, 8);
		} else if (!strcmp(c->type, "FLOAT32")) {
			float x = (float)(v % 100000) / 3.0f;

			memcpy(data + i * 4, &x, 4);
		} else {
			uint32_t x = (uint32_t)v;

			memcpy(data + i * 4, &x, 4);
		}
		if (validity)
			validity[i] = (uint8_t)(i % 7 != 3);
	}
}

/* Whether e is TFS_E_OK; says what failed on stderr if not. The arrays
 * are made in a child process (make_array), where Criterion's asserts do
 * not belong. */
static bool ok(enum tfs_err e, const struct tfs_diag *d, const char *what)
{
	if (e)
		fprintf(stderr, "%s: %s\n", what, tfs_diag_msg(d));
	return e == TFS_E_OK;
}

/* Writes the cells of box [lo, hi] (row-major over it). */
static bool write_box(const struct big_case *c, const char *path,
		      const int32_t *lo, const int32_t *hi, unsigned salt)
{
	struct tfs_write_opts wo = {.threads = 2};
	struct tfs_range box[MAXD];
	struct tfs_writer *w;
	struct tfs_column col;
	struct tfs_batch b;
	struct tfs_write_result res;
	struct tfs_diag d;
	uint64_t cells = 1;
	uint8_t *data, *validity = NULL;
	bool done;

	if (c->encrypted)
		wo.key = key;
	for (unsigned k = 0; k < c->dims; k++) {
		box[k] = (struct tfs_range){(const uint8_t *)&lo[k],
					    (const uint8_t *)&hi[k], 4, 4};
		cells *= (uint64_t)(hi[k] - lo[k] + 1);
	}
	data = malloc(cells * c->size);
	if (c->nullable)
		validity = malloc(cells);
	if (!data || (c->nullable && !validity))
		return false;
	fill_cells(c, data, validity, cells, salt);
	memset(&col, 0, sizeof(col));
	col.name = "v";
	col.data = data;
	col.data_len = cells * c->size;
	col.validity = validity;
	col.nullable = c->nullable;
	col.cell_val_num = 1;
	col.type = c->size == 8 ? TFS_FLOAT64
				: strcmp(c->type, "FLOAT32") ? TFS_INT32
							     : TFS_FLOAT32;
	b = (struct tfs_batch){cells, 1, &col};
	tfs_diag_init(&d);
	done = ok(tfs_writer_open(path, &wo, TFS_WRITE_DENSE_BOX, box, &w, &d),
		  &d, "writer_open");
	if (done) {
		done = ok(tfs_writer_append(w, &b, NULL, &d), &d, "append") &&
		       ok(tfs_writer_commit(w, &res, &d), &d, "commit");
		tfs_writer_free(w);
	}
	free(data);
	free(validity);
	return done;
}

/* Creates the case's array at path and writes it. */
static bool write_array(const struct big_case *c, const char *path)
{
	char json[2048];
	size_t n = 0;
	struct tfs_write_opts wo = {0};
	struct tfs_schema *s;
	struct tfs_diag d;
	int32_t lo[MAXD], hi[MAXD];
	bool done;

	n += (size_t)snprintf(json + n, sizeof(json) - n,
			      "{\"array_type\":\"dense\",\"schema\":{"
			      "\"cell_order\":\"%s\",\"tile_order\":"
			      "\"row-major\",\"dims\":[",
			      c->col_major ? "col-major" : "row-major");
	for (unsigned k = 0; k < c->dims; k++)
		n += (size_t)snprintf(json + n, sizeof(json) - n,
				      "%s{\"name\":\"d%u\",\"type\":\"INT32\","
				      "\"domain\":[0,%d],\"tile\":%d}",
				      k ? "," : "", k, c->ext[k] - 1,
				      c->tile[k]);
	snprintf(json + n, sizeof(json) - n,
		 "],\"attrs\":[{\"name\":\"v\",\"type\":\"%s\","
		 "\"cell_val_num\":1,\"nullable\":%s,\"filters\":%s%s}]}}",
		 c->type, c->nullable ? "true" : "false", c->filters,
		 c->chunk);
	tfs_diag_init(&d);
	if (!ok(tfs_schema_from_json_new(json, strlen(json), &s, &d), &d,
		json))
		return false;
	if (c->encrypted)
		wo.key = key;
	done = ok(tfs_array_create(path, s, &wo, &d), &d, "create");
	tfs_schema_free(s);
	for (unsigned k = 0; k < c->dims; k++) {
		lo[k] = 0;
		hi[k] = c->ext[k] - 1;
	}
	done = done && write_box(c, path, lo, hi, 0);
	if (c->second) {
		/* Across the tile boundary of dimension 0, inside tiles of
		 * the others. */
		for (unsigned k = 0; k < c->dims; k++) {
			lo[k] = c->ext[k] / 5;
			hi[k] = c->ext[k] - c->ext[k] / 3;
		}
		done = done && write_box(c, path, lo, hi, 1);
	}
	return done;
}

/* Makes the case's array under a new root in a child process, so that
 * what writing it counted in the memory accountant is not in this
 * process's high-water mark. */
static void make_array(const struct big_case *c, char *path, size_t cap)
{
	pid_t pid;
	int status = 0;

	cr_assert_not_null(tfs_temp_template(root, sizeof(root), "/tmp",
					     "tfs_big_tiles_"));
	cr_assert(mkdtemp(root));
	snprintf(path, cap, "%s/%s", root, c->name);
	fflush(NULL);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(write_array(c, path) ? 0 : 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "%s: making the array failed", c->name);
}

static void remove_tree(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_expect_eq(system(cmd), 0);
}

/* The largest tile a read may decode whole (tfs_open_opts.max_tile_bytes,
 * 0: no limit). */
static uint64_t tile_limit;

/* Every byte (all data, then all validity) of field v over box [lo, hi] (NULL:
 * the whole array). Returns the error of a failed read (d says why). */
static enum tfs_err read_box_vfs(const struct big_case *c, const char *path,
				 struct tfs_vfs *vfs, const int32_t *lo,
				 const int32_t *hi, struct tfs_buf *out,
				 struct tfs_diag *d)
{
	static const char *const fields[] = {"v"};
	struct tfs_open_opts oo = {.threads = 2, .vfs = vfs,
				   .max_tile_bytes = tile_limit};
	struct tfs_query_opts qo = {.fields = fields, .field_num = 1};
	struct tfs_range sub[MAXD];
	struct tfs_array *a;
	struct tfs_query *q = NULL;
	uint8_t *validity = NULL;
	size_t vlen = 0;
	enum tfs_err e;

	if (c->encrypted)
		oo.key = key;
	if (lo) {
		for (unsigned k = 0; k < c->dims; k++)
			sub[k] = (struct tfs_range){(const uint8_t *)&lo[k],
						    (const uint8_t *)&hi[k],
						    4, 4};
		qo.subarray = sub;
	}
	tfs_diag_init(d);
	e = tfs_array_open(path, &oo, &a, d);
	if (e)
		return e;
	e = tfs_query_open(a, &qo, &q, d);
	while (!e) {
		const struct tfs_batch *b;

		e = tfs_query_next(q, &b, d);
		if (e || !b)
			break;
		cr_assert_eq(b->column_num, 1);
		cr_assert_eq(tfs_buf_append(out, b->columns[0].data,
					    b->columns[0].data_len),
			     TFS_E_OK);
		if (!b->columns[0].validity)
			continue;
		/* Not through the library's allocator: its failures are
		 * injected in faults_fail_cleanly. */
		validity = realloc(validity, vlen + b->cell_num);
		cr_assert(validity);
		memcpy(validity + vlen, b->columns[0].validity, b->cell_num);
		vlen += b->cell_num;
	}
	if (!e && vlen)
		cr_assert_eq(tfs_buf_append(out, validity, vlen), TFS_E_OK);
	free(validity);
	tfs_query_close(q);
	tfs_array_close(a);
	return e;
}

static enum tfs_err read_box(const struct big_case *c, const char *path,
			     const int32_t *lo, const int32_t *hi,
			     struct tfs_buf *out, struct tfs_diag *d)
{
	return read_box_vfs(c, path, NULL, lo, hi, out, d);
}

/* The selections read: all, then boxes that start and end inside tiles
 * and chunks (one of them a single line of cells). */
static void selections(const struct big_case *c, int32_t lo[3][MAXD],
		       int32_t hi[3][MAXD])
{
	for (unsigned k = 0; k < c->dims; k++) {
		lo[0][k] = 0;
		hi[0][k] = c->ext[k] - 1;
		lo[1][k] = c->ext[k] / 7 + 3;
		hi[1][k] = c->ext[k] - c->ext[k] / 9 - 1;
		lo[2][k] = k ? c->ext[k] / 3 : c->tile[0] + 1;
		hi[2][k] = k ? c->ext[k] - 2 : c->tile[0] + 1;
	}
}

/* Where a and b first differ, or SIZE_MAX. */
static size_t first_diff(const struct tfs_buf *a, const struct tfs_buf *b)
{
	size_t n = a->len < b->len ? a->len : b->len;

	for (size_t i = 0; i < n; i++)
		if (a->data[i] != b->data[i])
			return i;
	return a->len == b->len ? SIZE_MAX : n;
}

static void check_case(const struct big_case *c)
{
	char path[512];
	int32_t lo[3][MAXD], hi[3][MAXD];
	struct tfs_buf got[3], want[3];
	struct tfs_mem_stats st;
	struct tfs_diag d;
	/* Less than a tile: each tile is read chunk by chunk. */
	uint64_t tile_bytes = tile_cells(c) * c->size;
	uint64_t budget = tile_bytes / 4 * 3;

	make_array(c, path, sizeof(path));
	selections(c, lo, hi);
	tfs_mem_configure(tfs_mem_global(), budget, 2000);
	for (int s = 0; s < 3; s++) {
		tfs_buf_init(&got[s], TFS_BUF_NO_MAX);
		cr_assert_eq(read_box(c, path, lo[s], hi[s], &got[s], &d),
			     TFS_E_OK, "%s: %s", c->name, tfs_diag_msg(&d));
	}
	tfs_mem_get_stats(tfs_mem_global(), &st);
	cr_expect_eq(st.refusals, 0, "%s: %" PRIu64 " charges refused",
		     c->name, st.refusals);
	cr_expect_leq(st.high, budget, "%s: high-water mark %" PRIu64
		      " over the budget %" PRIu64, c->name, st.high, budget);

	tfs_mem_configure(tfs_mem_global(), 0, 0);
	for (int s = 0; s < 3; s++) {
		tfs_buf_init(&want[s], TFS_BUF_NO_MAX);
		cr_assert_eq(read_box(c, path, lo[s], hi[s], &want[s], &d),
			     TFS_E_OK, "%s: %s", c->name, tfs_diag_msg(&d));
		cr_assert_gt(want[s].len, 0);
		cr_expect_eq(got[s].len, want[s].len,
			     "%s: selection %d: %zu bytes under the budget, "
			     "%zu without",
			     c->name, s, got[s].len, want[s].len);
		cr_expect_eq(first_diff(&got[s], &want[s]), SIZE_MAX,
			     "%s: selection %d: byte %zu differs", c->name, s,
			     first_diff(&got[s], &want[s]));
		tfs_buf_release(&got[s]);
		tfs_buf_release(&want[s]);
	}
	remove_tree();
}

Test(big_tiles, zstd_2d) { check_case(&cases[0]); }
Test(big_tiles, colmajor_2d) { check_case(&cases[1]); }
Test(big_tiles, md5_chain_nullable) { check_case(&cases[2]); }
Test(big_tiles, unfiltered_3d) { check_case(&cases[3]); }
Test(big_tiles, sha256_1d) { check_case(&cases[4]); }
Test(big_tiles, encrypted_2d) { check_case(&cases[5]); }
Test(big_tiles, two_fragments) { check_case(&cases[6]); }

/* A tile stored as one chunk gains nothing from the chunk path: it is
 * refused as before, the message giving the budget. */
Test(big_tiles, one_chunk_tile_refused)
{
	static const struct big_case c = {
		"one_chunk", 2, {512, 512}, {256, 512}, false, "INT32", 4,
		"[\"ZSTD(level=1)\"]", ",\"max_chunk_size\":0", false, false,
		false};
	char path[512];
	struct tfs_buf got;
	struct tfs_diag d;

	make_array(&c, path, sizeof(path));
	tfs_mem_configure(tfs_mem_global(), tile_cells(&c) * 4, 0);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	cr_expect_eq(read_box(&c, path, NULL, NULL, &got, &d), TFS_E_NOMEM);
	cr_expect(strstr(tfs_diag_msg(&d), "memory budget") != NULL, "%s",
		  tfs_diag_msg(&d));
	tfs_buf_release(&got);
	remove_tree();
}

/* max_tile_bytes bounds tiles decoded whole: one read a chunk at a time
 * is read whatever its size, one stored as one chunk is refused with the
 * limit in the message. */
Test(big_tiles, tile_limit_spares_chunked_tiles)
{
	static const struct big_case whole = {
		"one_chunk", 2, {512, 512}, {256, 512}, false, "INT32", 4,
		"[\"ZSTD(level=1)\"]", ",\"max_chunk_size\":0", false, false,
		false};
	const struct big_case *c = &cases[0];
	char path[512];
	struct tfs_buf got, want;
	struct tfs_diag d;

	make_array(c, path, sizeof(path));
	tfs_buf_init(&want, TFS_BUF_NO_MAX);
	cr_assert_eq(read_box(c, path, NULL, NULL, &want, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	tfs_mem_configure(tfs_mem_global(), tile_cells(c) * c->size / 4 * 3,
			  2000);
	tile_limit = tile_cells(c) * c->size / 2;
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	cr_assert_eq(read_box(c, path, NULL, NULL, &got, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_expect_eq(first_diff(&got, &want), SIZE_MAX);
	tfs_buf_release(&got);
	tfs_buf_release(&want);
	remove_tree();

	make_array(&whole, path, sizeof(path));
	tile_limit = tile_cells(&whole) * 4 / 2;
	tfs_mem_configure(tfs_mem_global(), 0, 0);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	cr_expect_eq(read_box(&whole, path, NULL, NULL, &got, &d),
		     TFS_E_NOMEM);
	cr_expect(strstr(tfs_diag_msg(&d), "over the limit") != NULL, "%s",
		  tfs_diag_msg(&d));
	tfs_buf_release(&got);
	tile_limit = 0;
	remove_tree();
}

/* A damaged chunk header in the middle of a tile read chunk by chunk:
 * TFS_E_CORRUPT with one line naming the tile, nothing else. */
Test(big_tiles, damaged_chunk_header)
{
	const struct big_case *c = &cases[0];
	char path[512], cmd[1024], file[1024];
	struct tfs_buf got;
	struct tfs_diag d;
	FILE *f;
	uint8_t head[8 + 12];
	uint64_t at = 8;

	make_array(c, path, sizeof(path));
	snprintf(cmd, sizeof(cmd), "ls -d %s/__fragments/*/a0.tdb", path);
	f = popen(cmd, "r");
	cr_assert(f);
	cr_assert(fgets(file, sizeof(file), f));
	pclose(f);
	file[strcspn(file, "\n")] = '\0';
	f = fopen(file, "r+b");
	cr_assert(f);
	/* Walk to the header of chunk 3 of tile 0 and double its length. */
	for (int i = 0; i < 3; i++) {
		uint32_t filtered, md;

		cr_assert_eq(fseek(f, (long)at, SEEK_SET), 0);
		cr_assert_eq(fread(head, 1, 12, f), 12);
		memcpy(&filtered, head + 4, 4);
		memcpy(&md, head + 8, 4);
		at += 12 + (uint64_t)filtered + md;
	}
	cr_assert_eq(fseek(f, (long)at, SEEK_SET), 0);
	cr_assert_eq(fread(head, 1, 4, f), 4);
	head[2] ^= 0x10;
	cr_assert_eq(fseek(f, (long)at, SEEK_SET), 0);
	cr_assert_eq(fwrite(head, 1, 4, f), 4);
	cr_assert_eq(fclose(f), 0);

	tfs_mem_configure(tfs_mem_global(), tile_cells(c) * 4, 0);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	cr_expect_eq(read_box(c, path, NULL, NULL, &got, &d), TFS_E_CORRUPT,
		     "%s", tfs_diag_msg(&d));
	cr_expect(strstr(tfs_diag_msg(&d), "tile 0") != NULL &&
			  strchr(tfs_diag_msg(&d), '\n') == NULL,
		  "%s", tfs_diag_msg(&d));
	tfs_buf_release(&got);
	remove_tree();
}

/* Storage faults (each call in turn failing, once or from then on, with
 * EIO or a short read) and allocation faults (from each allocation on)
 * during reads chunk by chunk: each read fails cleanly, with one line, or
 * gives the right bytes. */
Test(big_tiles, faults_fail_cleanly, .timeout = 300)
{
	static const enum tfs_fault_kind kinds[] = {TFS_FAULT_EIO,
						    TFS_FAULT_SHORT};
	const struct big_case *c = &cases[2]; /* checksums, validity */
	uint64_t budget = tile_cells(c) * c->size / 4 * 3;
	struct tfs_vfs *posix, *faulty;
	struct tfs_buf want, got;
	struct tfs_diag d;
	unsigned long calls, n, failed = 0;
	char path[512];

	make_array(c, path, sizeof(path));
	tfs_mem_configure(tfs_mem_global(), budget, 0);
	cr_assert_eq(tfs_vfs_posix_new(&posix), TFS_E_OK);
	cr_assert_eq(tfs_vfs_faulty_new(posix, &faulty), TFS_E_OK);
	tfs_buf_init(&want, TFS_BUF_NO_MAX);
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	cr_assert_eq(read_box_vfs(c, path, faulty, NULL, NULL, &want, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	calls = tfs_vfs_faulty_calls(faulty);
	for (size_t k = 0; k < 2; k++) {
		for (int once = 0; once < 2; once++) {
			for (n = 0; n < calls; n++) {
				enum tfs_err e;

				got.len = 0;
				tfs_vfs_faulty_arm(faulty, kinds[k], n, once);
				e = read_box_vfs(c, path, faulty, NULL, NULL,
						 &got, &d);
				tfs_vfs_faulty_arm(faulty, TFS_FAULT_NONE, 0,
						   false);
				if (e == TFS_E_OK) {
					cr_assert(got.len == want.len &&
							  !memcmp(got.data,
								  want.data,
								  want.len),
						  "fault %zu at call %lu: other "
						  "bytes", k, n);
					continue;
				}
				failed++;
				cr_assert(d.msg[0] && !strchr(d.msg, '\n'),
					  "fault %zu at call %lu: '%s'", k, n,
					  d.msg);
			}
		}
	}
	cr_expect_gt(failed, calls / 2, "only %lu reads failed", failed);
	for (n = 0;; n += 3) {
		enum tfs_err e;

		got.len = 0;
		cr_assert_eq(tfs_buf_reserve(&got, want.len + 1), TFS_E_OK);
		tfs_alloc_fail_after((long)n);
		e = read_box_vfs(c, path, NULL, NULL, NULL, &got, &d);
		tfs_alloc_fail_after(-1);
		if (e == TFS_E_OK) {
			cr_assert(got.len == want.len &&
					  !memcmp(got.data, want.data,
						  want.len),
				  "allocation %lu: other bytes", n);
			break;
		}
		cr_assert_eq(e, TFS_E_NOMEM, "allocation %lu: %s", n, d.msg);
		cr_assert(d.msg[0] && !strchr(d.msg, '\n'));
	}
	tfs_buf_release(&want);
	tfs_buf_release(&got);
	tfs_vfs_free(faulty);
	tfs_vfs_free(posix);
	remove_tree();
}
