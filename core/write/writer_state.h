/* What the two files of the public fragment writer share: writer.c (open,
 * commit) and writer_append.c (checking, staging and streaming appended
 * cells), which is the lower of the two. */
#ifndef TFS_WRITER_STATE_H
#define TFS_WRITER_STATE_H

#include "write_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_datatype.h"
#include "tfs_fragment.h"
#include "tilefs/tilefs.h"

struct tfs_writer {
	struct tfs_vfs *vfs;
	struct tfs_vfs *own_vfs;
	struct tfs_pool *pool, *own_pool;
	unsigned threads;
	char *path;
	struct tfs_arraydir *ad;
	const struct tfs_schema *s;
	uint32_t version; /* W */
	struct tfs_write_opts o;
	uint8_t key[32];
	bool has_key;
	enum tfs_write_layout layout;
	struct tfs__field *fields;
	uint32_t field_num, D, A;
	struct tfs__order order;
	struct tfs__sorter *sorter;
	bool failed;
	bool committed;
	/* Dense arrays: box of DENSE_BOX, or the bounding box of the cells
	 * so far (offsets from the domain's low end). */
	uint64_t boxlo[128], boxhi[128];
	uint8_t boxbytes[2][128][8];
	uint64_t box_cells; /* cells of the box (DENSE_BOX) */
	uint64_t appended;
	int *colmap;        /* field -> batch column, per append */
	/* Names of the fragment, once chosen (write.md §2–3). */
	struct tfs_write_result res;
	char *dir, *parent, *cdir, *commit;
	/* Streaming: a box whose row-major order is the global order goes
	 * straight to the tile writer, one batch at a time, so memory stays
	 * at the tiles in flight (1-D arrays: every box). */
	bool stream;
	struct tfs__cells scratch;
	struct tfs__tw *tw;
	struct tfs_range stream_box[128];
	/* Streaming by rows of tiles (dense_box.c): box rows already
	 * written, cells of one box row. */
	bool tilerow;
	uint64_t rows_done, row_cells;
};

/* writer_append.c */
enum tfs_err tfs__writer_check_value(const struct tfs_writer *w, uint32_t k,
				     const uint8_t *v, uint64_t len,
				     const char *what, uint64_t tag,
				     struct tfs_diag *d);

#endif
