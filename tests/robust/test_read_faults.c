/* Storage and allocation faults over whole reads (open, metadata,
 * fragments, a full query) of corpus arrays of every kind: dense, sparse,
 * var-size, nullable, encrypted, consolidated. For every storage call n of
 * a read, the nth call fails with EIO or transfers half then fails (short
 * read), once or from then on; for every allocation n of a read, the
 * allocator fails from the nth on. Each attempt must fail cleanly (an I/O
 * error, or out of memory for allocations, with a one-line message; no
 * crash; nothing leaked, which LeakSanitizer checks in the sanitizer
 * build) or return exactly the bytes of a read without faults. Storage
 * faults are tried with one decode thread and with two. After a
 * one-off storage fault, a clean read through the same tile cache must
 * give the right bytes: a failure is never cached.
 *   TFS_FAULTS_ONLY=NAME   one array
 *   TFS_FAULTS_STRIDE=N    try every Nth call / allocation (default 1) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robust_util.h"
#include "tfs_alloc.h"

static const char *const arrays[] = {
	"dense_1d",          "dense_2d_rowmajor",       "dense_nullable",
	"sparse_2d_int",     "sparse_string_dim",       "encrypted",
	"filter_checksum_md5", "consolidated_fragments",
	"consolidated_commits", "consolidated_fragment_meta", "metadata",
};

struct counts {
	unsigned long vfs_faults, alloc_faults, clean_ok, failures;
};

static bool same(const struct tfs_buf *a, const struct tfs_buf *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

static void fail(struct counts *c, const char *name, const char *what,
		 unsigned long n, const char *detail)
{
	c->failures++;
	fprintf(stderr, "FAIL: %s: %s at %lu: %s\n", name, what, n, detail);
}

static bool one_line(const struct tfs_diag *d)
{
	return d->msg[0] && !strchr(d->msg, '\n');
}

static const char *kind_name(enum tfs_fault_kind k, bool once)
{
	if (k == TFS_FAULT_EIO)
		return once ? "EIO once" : "EIO from then on";
	return once ? "short read once" : "short reads from then on";
}

static void vfs_faults(const char *name, struct tfs_vfs *mem,
		       const uint8_t *key, const struct tfs_buf *want,
		       unsigned long stride, struct counts *c)
{
	static const enum tfs_fault_kind kinds[] = {TFS_FAULT_EIO,
						    TFS_FAULT_SHORT};
	struct rb_limits lim = {UINT64_C(1) << 26, 1, NULL};
	struct tfs_vfs *f;
	struct tfs_buf got;
	struct tfs_diag d;
	unsigned long calls;

	if (tfs_vfs_faulty_new(mem, &f) ||
	    tfs_tile_cache_new(UINT64_C(64) << 20, &lim.cache)) {
		fail(c, name, "setup", 0, "out of memory");
		return;
	}
	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	if (rb_read(f, key, &lim, &got, &d) || !same(&got, want))
		fail(c, name, "unarmed faulty backend", 0, d.msg);
	calls = tfs_vfs_faulty_calls(f);
	/* One decode thread, then two (the pool's paths). */
	for (unsigned long n = 0; n < 2 * calls; n += stride) {
		lim.threads = n < calls ? 1 : 2;
		for (size_t k = 0; k < 2; k++) {
			for (int once = 0; once < 2; once++) {
				const char *what = kind_name(kinds[k], once);
				enum tfs_err e;

				got.len = 0;
				tfs_diag_init(&d);
				/* Calls of earlier attempts count too. */
				tfs_vfs_faulty_arm(f, kinds[k], n % calls,
						   once);
				e = rb_read(f, key, &lim, &got, &d);
				tfs_vfs_faulty_arm(f, TFS_FAULT_NONE, 0, false);
				c->vfs_faults++;
				if (e == TFS_E_OK && !same(&got, want))
					fail(c, name, what, n,
					     "read other bytes");
				else if (e != TFS_E_OK && e != TFS_E_IO &&
					 e != TFS_E_CORRUPT)
					fail(c, name, what, n, d.msg);
				else if (e != TFS_E_OK && !one_line(&d))
					fail(c, name, what, n, "no message");
				/* The same cache, no fault: right bytes. */
				got.len = 0;
				tfs_diag_init(&d);
				e = rb_read(f, key, &lim, &got, &d);
				if (e || !same(&got, want))
					fail(c, name, "clean read after", n,
					     e ? d.msg : "other bytes");
				else
					c->clean_ok++;
			}
		}
	}
	tfs_buf_release(&got);
	tfs_tile_cache_free(lim.cache);
	tfs_vfs_free(f);
}

static void alloc_faults(const char *name, struct tfs_vfs *mem,
			 const uint8_t *key, const struct tfs_buf *want,
			 unsigned long stride, struct counts *c)
{
	struct rb_limits lim = {UINT64_C(1) << 26, 1, NULL};
	struct tfs_buf got;
	unsigned long n;

	tfs_buf_init(&got, TFS_BUF_NO_MAX);
	for (n = 0;; n += stride) {
		struct tfs_diag d;
		enum tfs_err e;

		/* got keeps its storage from the last attempt: only the
		 * engine's allocations count. */
		got.len = 0;
		if (tfs_buf_reserve(&got, want->len + 1)) {
			fail(c, name, "setup", n, "out of memory");
			break;
		}
		tfs_diag_init(&d);
		tfs_alloc_fail_after((long)n);
		e = rb_read(mem, key, &lim, &got, &d);
		tfs_alloc_fail_after(-1);
		if (e == TFS_E_OK) {
			if (!same(&got, want))
				fail(c, name, "allocation failure", n,
				     "read other bytes");
			break;
		}
		c->alloc_faults++;
		if (e != TFS_E_NOMEM)
			fail(c, name, "allocation failure", n, d.msg);
		else if (!one_line(&d))
			fail(c, name, "allocation failure", n, "no message");
		if (c->failures > 20)
			break;
	}
	printf("  %-28s succeeds from allocation %lu on\n", name, n);
	tfs_buf_release(&got);
}

int main(void)
{
	const char *only = getenv("TFS_FAULTS_ONLY");
	unsigned long stride = rb_env_ulong("TFS_FAULTS_STRIDE", 1);
	struct counts c;
	uint8_t key[32];
	double start = rb_now();
	unsigned tried = 0;

	memset(&c, 0, sizeof(c));
	if (stride == 0)
		stride = 1;
	if (!rb_corpus_key(key)) {
		fprintf(stderr, "FAIL: no corpus key\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		struct rb_limits lim = {UINT64_C(1) << 26, 1, NULL};
		const uint8_t *k = strcmp(arrays[i], "encrypted") ? NULL : key;
		struct rb_array a;
		struct tfs_buf want;
		struct tfs_vfs *mem;
		struct tfs_diag d;
		char dir[4096];

		if (only && strcmp(only, arrays[i]))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", rb_corpus_dir(), arrays[i]);
		if (!rb_array_load(&a, dir, arrays[i]) ||
		    !(mem = rb_array_to_mem(&a, NULL, 0))) {
			fail(&c, arrays[i], "load", 0, dir);
			rb_array_release(&a);
			continue;
		}
		tfs_buf_init(&want, TFS_BUF_NO_MAX);
		tfs_diag_init(&d);
		if (rb_read(mem, k, &lim, &want, &d) || want.len == 0) {
			fail(&c, arrays[i], "read without faults", 0, d.msg);
		} else {
			tried++;
			vfs_faults(arrays[i], mem, k, &want, stride, &c);
			alloc_faults(arrays[i], mem, k, &want, stride, &c);
		}
		tfs_buf_release(&want);
		tfs_vfs_free(mem);
		rb_array_release(&a);
	}
	printf("read faults: %u arrays, %lu storage faults injected (%lu clean "
	       "reads through the same cache after them), %lu allocation "
	       "failures injected, in %.1f s\n",
	       tried, c.vfs_faults, c.clean_ok, c.alloc_faults,
	       rb_now() - start);
	if (c.failures || tried == 0) {
		printf("FAIL: %lu failure(s)\n", c.failures);
		return 1;
	}
	return 0;
}
