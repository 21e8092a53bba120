/* What the daemon remembers of the files it rendered, per array version
 * (versions never change): small files rendered whole, and the exact
 * sizes and indexes of streamed ones (render_cache.c). */
#ifndef TFSD_RENDER_CACHE_H
#define TFSD_RENDER_CACHE_H

#include "tfsd.h"

#include "slice.h"

/* Marks of one file's index at most: beyond, every other one goes. */
#define MARKS_MAX 65536

/* A rendered file of version gen at vpath: *data (a copy, tfs_free; NULL
 * when only its size is known) and *size. */
bool tfsd_renders_find(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		       uint8_t **data, uint64_t *size);
/* Keeps a copy of data (NULL: only the size) within the cache's budget. */
void tfsd_renders_put(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		      const uint8_t *data, uint64_t size);
/* The exact size of a streamed file, if counted. */
bool tfsd_sizes_find(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		     uint64_t *size);
/* The last mark of its index at or before byte off. */
bool tfsd_sizes_mark(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		     uint64_t off, struct tfsr_mark *out);
/* A copy of its index (*marks, tfs_free) and its size. */
bool tfsd_sizes_copy(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		     struct tfsr_mark **marks, size_t *mark_num,
		     uint64_t *size);
/* Remembers a counted size and its index (marks, which it takes). */
void tfsd_sizes_put(struct tfsd_renders *r, uint64_t gen, const char *vpath,
		    uint64_t size, struct tfsr_mark *marks, size_t mark_num);

#endif
