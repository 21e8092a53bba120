/* What the files of the tile writer share (tile_writer.c: setup, cutting
 * and collecting tiles; tw_encode.c: encoding one tile and its statistics;
 * tw_metadata.c: the fragment metadata file): the writer's state, one
 * tile's job and the per-slot accumulators. */
#ifndef TFS_TILE_WRITER_INTERNAL_H
#define TFS_TILE_WRITER_INTERNAL_H

#include "write_internal.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_datatype.h"
#include "tfs_fragment.h"

/* One field's share of an encoded tile. */
struct fout {
	struct tfs_buf fixed, var, valid;
	struct tfs_buf min, max;   /* attributes with min/max */
	struct tfs_buf lo, hi;     /* dimensions: MBR */
	struct tfs_buf first, last; /* dimensions: global-order bounds */
	uint8_t sum[8];
	uint64_t nulls;
	uint64_t var_size;
};

struct job {
	struct tfs_job job;
	struct tfs__tw *tw;
	struct tfs__cells cells;
	struct tfs_buf real; /* dense: 1 for written cells */
	struct fout *out;    /* field_num */
	enum tfs_err err;
	struct tfs_diag d;
	uint64_t charged; /* bytes of its buffers in the memory accountant */
};

/* What the fragment metadata keeps of a slot. */
struct slotacc {
	struct tfs_buf offsets, var_offsets, var_sizes, validity_offsets;
	struct tfs_buf min_fixed, min_var, max_fixed, max_var;
	struct tfs_buf sums, null_counts;
	uint64_t file_size, var_file_size, validity_file_size;
};

struct tfs__tw {
	struct tfs__tw_opts o;
	uint32_t A, D, slot_num;
	struct slotacc *slots;
	/* Per dimension (sparse): MBR lows/highs and global-order first/last
	 * values, as min/max lists: fixed values, or u64 offsets + bytes. */
	struct slotacc *dimb; /* min_* = lo (MBR) / first, max_* = hi / last */
	struct slotacc *gob;
	uint64_t tile_num, cell_num, last_tile_cells;
	uint64_t capacity; /* cells per sparse tile */
	uint64_t bytes;
	struct tfs_buf tilebuf;
	/* Tiles in flight, oldest at head. */
	struct job *ring;
	unsigned ring_cap, head, inflight;
	struct job *cur; /* being filled, or NULL */
	/* Dense. */
	uint64_t cpt; /* cells per tile */
	uint64_t tiles_total;
	uint64_t cur_rank;
	uint64_t ext[128], tlo[128], ntiles[128], boxlo[128], boxhi[128];
	char **paths; /* per field: fixed, var, validity paths (3 each) */
};

/* Sum state: int64, uint64 or double; saturates and stops on overflow. */
struct sum {
	int kind; /* 0 signed, 1 unsigned, 2 float */
	int64_t i;
	uint64_t u;
	double f;
	bool stop;
};

/* tw_encode.c */
bool tfs__is_string_type(uint8_t t);
bool tfs__has_minmax(const struct tfs__field *f);
bool tfs__type_has_sum(uint8_t t);
bool tfs__has_sum(const struct tfs__field *f, bool dense);
int tfs__fixed_str_cmp(const uint8_t *a, const uint8_t *b, size_t n);
void tfs__sum_init(struct sum *s, uint8_t type);
void tfs__sum_put(const struct sum *s, uint8_t *dst);
void tfs__sum_add_raw(struct sum *s, const uint8_t *p);
void tfs__tw_job_run(void *arg);

/* tile_writer.c */
enum tfs_err tfs__tw_drain_one(struct tfs__tw *t, struct tfs_diag *d);
enum tfs_err tfs__tw_start_tile(struct tfs__tw *t, struct tfs_diag *d);
void tfs__tw_submit_tile(struct tfs__tw *t);
enum tfs_err tfs__tw_dense_close_tile(struct tfs__tw *t, struct tfs_diag *d);

#endif
