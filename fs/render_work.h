/* What content.c and render_work.c share: a slice file's plan, and the
 * rendering work the memory accountant counts and a caller's stop ends
 * (whole renderings, counting passes). Daemon-internal. */
#ifndef TFSD_RENDER_WORK_H
#define TFSD_RENDER_WORK_H

#include "tfsd.h"

#include "slice.h"

/* A slice file planned on the node's array version. */
struct plan {
	struct tfsd *fs;
	struct tfsd_arr *arr; /* a reference */
	struct tfsr_slice *sl;
	char *rel; /* the array, relative to SOURCE (to open it again) */
	struct tfs_where *where; /* under where[COND]/ */
};

/* Counts n more bytes of renderings in flight; ENOMEM (nothing counted)
 * when the accountant or max_memory= has no room. */
enum tfs_err tfsd__charge(struct tfsd *fs, uint64_t n, struct tfs_diag *d);
void tfsd__uncharge(struct tfsd *fs, uint64_t n);
/* Counts the stream's buffer as it is now in the renderings in flight. */
enum tfs_err tfsd__stream_account(struct tfsd *fs, struct tfsr_stream *st,
				  struct tfs_diag *d);
/* Releases the stream and what it counted. */
void tfsd__stream_release(struct tfsd *fs, struct tfsr_stream *st);
/* Renders a whole plan into out (empty); *charged: the bytes of it still
 * counted. The thread's stop ends it between steps. */
enum tfs_err tfsd__render_whole(struct plan *p, struct tfs_buf *out,
				uint64_t *charged, struct tfs_diag *d);
/* The exact size of a streamed plan and its index (*marks, which the
 * caller takes), counted on two threads where it splits. The thread's
 * stop ends it between steps. */
enum tfs_err tfsd__count_plan(struct plan *p, uint64_t *size,
			      struct tfsr_mark **marks, size_t *mark_num,
			      struct tfs_diag *d);

#endif
