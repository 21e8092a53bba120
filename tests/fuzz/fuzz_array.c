/* Fuzz target: a whole array folder, opened and read the way the daemon
 * does, in the in-memory storage backend: listing, commits, vacuum and
 * ignore files, consolidated fragment metadata, time travel, delete
 * conditions, enumerations, array metadata (core/fragment), then every
 * fragment's per-slot tile lists, R-tree and processed conditions, and a
 * query over the non-empty domain through the dense or sparse reader
 * (core/read).
 *
 * Input: u8 flags (1: open with the corpus key; 2: time travel to the
 * timestamp in the next u64), then files: u8 n, n bytes of path relative
 * to the array folder, u32 size, size bytes. Paths with "..", NUL or an
 * empty component are skipped. Reads are bounded (cells and batches) so
 * a large but valid array costs time, not a timeout. */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_alloc.h"
#include "tfs_fragment.h"
#include "tilefs/tilefs.h"

#define ROOT "/A"
#define MAX_FRAGMENTS 64
#define MAX_SLOTS 64
#define MAX_DENSE_CELLS (UINT64_C(1) << 16)
#define MAX_BATCHES 16
#define BATCH_CELLS 1024
#define MAX_TILE_BYTES (UINT64_C(64) << 20)

/* mkdir -p of every folder above path. */
static bool make_parents(struct tfs_vfs *v, char *path)
{
	struct tfs_diag d;

	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		tfs_diag_init(&d);
		if (tfs_vfs_mkdir(v, path, &d)) {
			*p = '/';
			return false;
		}
		*p = '/';
	}
	return true;
}

static bool path_ok(const uint8_t *name, size_t n)
{
	if (n == 0 || name[0] == '/' || name[n - 1] == '/' ||
	    memchr(name, 0, n))
		return false;
	for (size_t i = 0; i + 1 < n; i++)
		if ((name[i] == '.' && name[i + 1] == '.') ||
		    (name[i] == '/' && name[i + 1] == '/'))
			return false;
	return true;
}

/* Builds the folder from the input; false when it holds no file. */
static bool load_files(struct tfs_vfs *v, struct tfs_cursor *c)
{
	unsigned files = 0;

	while (tfs_cur_left(c)) {
		const uint8_t *name, *data;
		char path[sizeof(ROOT) + 256];
		struct tfs_diag d;
		uint32_t size;
		uint8_t n;

		if (!tfs_cur_u8(c, &n) || !tfs_cur_take(c, n, &name) ||
		    !tfs_cur_u32(c, &size) || !tfs_cur_take(c, size, &data))
			break;
		if (!path_ok(name, n))
			continue;
		memcpy(path, ROOT "/", sizeof(ROOT));
		memcpy(path + sizeof(ROOT), name, n);
		path[sizeof(ROOT) + n] = '\0';
		tfs_diag_init(&d);
		if (make_parents(v, path) &&
		    tfs_vfs_write(v, path, data, size, &d) == TFS_E_OK)
			files++;
	}
	return files > 0;
}

/* What the daemon's listings and reads load lazily, fragment by
 * fragment. */
static void load_fragments(struct tfs_vfs *v, const uint8_t *key,
			   uint64_t t1)
{
	struct tfs_arraydir_opts opts = {.key = key, .t0 = 0, .t1 = t1};
	struct tfs_arraydir *a;
	struct tfs_diag d;

	tfs_diag_init(&d);
	if (tfs_arraydir_open(v, ROOT, &opts, &a, &d)) {
		FUZZ_CHECK(d.code != TFS_E_OK);
		fuzz_note("open: %s", d.msg);
		return;
	}
	FUZZ_CHECK(a->schema && a->fragment_num <= a->frag_pool_num);
	for (size_t i = 0; i < a->frag_pool_num && i < MAX_FRAGMENTS; i++) {
		struct tfs_fragment *f = a->frag_pool[i];
		const struct tfs_slot_tiles *st;
		const struct tfs_strlist *pc;
		const struct tfs_rtree *rt;

		for (uint32_t s = 0; s < f->footer.slot_num && s < MAX_SLOTS;
		     s++) {
			tfs_diag_init(&d);
			if (tfs_fragment_slot_tiles(a, f, s, &st, &d) ==
				    TFS_E_OK &&
			    st->offsets)
				fuzz_touch(st->offsets,
					   f->tile_num * sizeof(uint64_t));
		}
		tfs_diag_init(&d);
		if (tfs_fragment_rtree(a, f, &rt, &d) == TFS_E_OK)
			FUZZ_CHECK(rt->leaf_num == 0 || rt->leaves);
		tfs_diag_init(&d);
		if (tfs_fragment_processed(a, f, &pc, &d) == TFS_E_OK)
			FUZZ_CHECK(pc->count == 0 || pc->items);
	}
	tfs_arraydir_close(a);
}

static void touch_batch(const struct tfs_batch *b)
{
	for (size_t i = 0; i < b->column_num; i++) {
		const struct tfs_column *c = &b->columns[i];

		if (c->var) {
			fuzz_touch(c->offsets,
				   (b->cell_num + 1) * sizeof(uint64_t));
			FUZZ_CHECK(c->offsets[b->cell_num] <= c->data_len);
		}
		fuzz_touch(c->data, (size_t)c->data_len);
		if (c->nullable)
			fuzz_touch(c->validity, (size_t)b->cell_num);
	}
}

/* The public API on the same folder: a query over the non-empty domain. */
static void query(struct tfs_vfs *v, const uint8_t *key, uint64_t t)
{
	struct tfs_open_opts opts;
	const struct tfs_batch *b;
	struct tfs_array *arr;
	struct tfs_query_opts qo;
	struct tfs_query *q;
	struct tfs_diag d;
	uint64_t cells;

	memset(&opts, 0, sizeof(opts));
	opts.vfs = v;
	opts.key = key;
	opts.timestamp = t;
	opts.threads = 1;
	/* As the daemon under max_memory: a tile of a damaged array may
	 * claim gigabytes that its chunks then fail to fill. */
	opts.max_tile_bytes = MAX_TILE_BYTES;
	tfs_diag_init(&d);
	if (tfs_array_open(ROOT, &opts, &arr, &d))
		return;
	for (size_t i = 0; i < tfs_array_fragment_count(arr); i++) {
		struct tfs_fragment_info fi;

		tfs_array_fragment(arr, i, &fi);
		FUZZ_CHECK(fi.name);
	}
	memset(&qo, 0, sizeof(qo));
	qo.batch_cells = BATCH_CELLS;
	tfs_diag_init(&d);
	if (tfs_query_open(arr, &qo, &q, &d)) {
		fuzz_note("query: %s", d.msg);
		goto out_close;
	}
	cells = tfs_query_cell_count(q);
	for (unsigned n = 0; n < MAX_BATCHES &&
			     (cells == UINT64_MAX || cells <= MAX_DENSE_CELLS);
	     n++) {
		tfs_diag_init(&d);
		if (tfs_query_next(q, &b, &d)) {
			fuzz_note("batch %u: %s", n, d.msg);
			break;
		}
		if (!b)
			break;
		fuzz_note("batch %u: %llu cells", n,
			  (unsigned long long)b->cell_num);
		/* batch_cells is a target for dense reads (whole tile rows),
		 * not a bound: nothing to check against it. */
		touch_batch(b);
	}
	tfs_query_close(q);
out_close:
	tfs_array_close(arr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_cursor c;
	struct tfs_vfs *v;
	const uint8_t *key;
	uint64_t t = 0;
	uint8_t flags;

	tfs_cur_init(&c, data, size);
	if (!tfs_cur_u8(&c, &flags) || ((flags & 2) && !tfs_cur_u64(&c, &t)))
		return 0;
	key = flags & 1 ? fuzz_corpus_key : NULL;
	FUZZ_CHECK(tfs_vfs_mem_new(&v) == TFS_E_OK);
	if (load_files(v, &c)) {
		load_fragments(v, key, t ? t : UINT64_MAX);
		query(v, key, t);
	}
	tfs_vfs_free(v);
	return 0;
}
