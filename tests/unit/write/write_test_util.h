/* Helpers of the writer's tests: reading every cell of an array into a
 * comparable form, building schemas and batches. Failures are Criterion
 * assertions. */
#ifndef WRITE_TEST_UTIL_H
#define WRITE_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_bytes.h"
#include "tilefs/tilefs.h"

/* An in-memory backend with options to write and read it. */
struct wt_env {
	struct tfs_vfs *vfs;
	struct tfs_write_opts wo; /* 2 threads */
	struct tfs_open_opts oo;  /* read_threads; time stamp in the future */
	struct tfs_diag d;
};

void wt_env_init(struct wt_env *e, unsigned read_threads);
void wt_env_free(struct wt_env *e);

/* Every cell of a read: one line per cell, fields separated by '|', each
 * value in hex ("N" for a null). */
struct wt_dump {
	char **lines;
	size_t n, cap;
};

void wt_dump_release(struct wt_dump *d);
/* Reads all cells (subarray NULL = the non-empty domain). */
void wt_read(struct tfs_array *a, const struct tfs_range *sub,
	     struct wt_dump *out);
/* Adds the cells of a batch. */
void wt_dump_batch(struct wt_dump *out, const struct tfs_batch *b);
/* Sorts the lines (to compare as sets). */
void wt_dump_sort(struct wt_dump *d);
void wt_expect_dump_eq(const struct wt_dump *got, const struct wt_dump *want);
void wt_expect_same_cells(struct tfs_array *a, struct tfs_array *b);
/* Decodes the coordinates of every fragment of a sparse array with two
 * int32 dimensions (array folder at path) and asserts they are in strict
 * global order and inside their tiles' MBRs. */
void wt_check_order_2d_i32(struct tfs_vfs *vfs, const char *path);

#endif
