/* What the files that load one fragment share: fragment_load.c (creating
 * a fragment, its tile and cell counts, its data file names),
 * frag_footer.c (its footer, from a .meta file or its own metadata file)
 * and frag_lazy.c (the per-slot lists, R-tree and delete conditions
 * loaded on first use). */
#ifndef TFS_FRAGMENT_LOAD_INTERNAL_H
#define TFS_FRAGMENT_LOAD_INTERNAL_H

#include "fragment_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_mem.h"

#define META_FILE "__fragment_metadata.tdb"

/* frag_shared.c: what the open versions of an array share of one
 * fragment (see tfs_fragment.shared). */
struct tfs__frag_shared {
	struct tfs__frag_shared *next; /* registry chain */
	_Atomic unsigned refs; /* changed under the registry lock */
	bool registered;       /* false: the fragment's own, never shared */
	uint64_t hash;
	const struct tfs_vfs *vfs;
	char *dir;
	uint8_t *id; /* key and serialized footer (frag_shared.c) */
	size_t id_len;
	uint32_t slot_num;
	uint8_t *meta_bytes; /* the whole metadata file when small, or NULL */

	pthread_mutex_t lock;
	/* Loaded on demand; protected by lock until set, then immutable. */
	struct tfs_slot_tiles *slots; /* slot_num entries */
	bool *slot_loaded;
	struct tfs_rtree rtree;
	bool rtree_loaded;
	struct tfs_strlist processed_conditions;
	bool processed_loaded;
	struct tfs_slot_stats *stats; /* slot_num entries, on demand */
	bool *stats_loaded;
	/* Bytes counted in the memory accountant until the entry goes. */
	_Atomic uint64_t mem_counted;
};

/* Gives f its shared entry (found or made), which takes meta_bytes (the
 * whole metadata file or NULL; freed when an entry already has it). */
enum tfs_err tfs__frag_share(const struct tfs_arraydir *a,
			     struct tfs_fragment *f, uint8_t *meta_bytes,
			     struct tfs_diag *d);
void tfs__frag_shared_put(struct tfs__frag_shared *z);
/* Counts bytes just loaded into z in the memory accountant. */
void tfs__frag_shared_count(struct tfs__frag_shared *z, uint64_t bytes);

/* frag_footer.c */
const struct meta_key *tfs__meta_find(const struct tfs__meta_index *m,
				      const char *name);
enum tfs_err tfs__footer_from_meta(const struct tfs_arraydir *a,
				   struct tfs_fragment *f,
				   const struct tfs__meta_index *m,
				   const struct meta_key *k,
				   struct tfs_diag *d);
/* *meta_bytes: the whole metadata file when it is small (kept for the
 * lists loaded on demand), else NULL. */
enum tfs_err tfs__footer_from_file(const struct tfs_arraydir *a,
				   struct tfs_fragment *f, uint8_t **meta_bytes,
				   struct tfs_diag *d);
enum tfs_err tfs__legacy_from_file(const struct tfs_arraydir *a,
				   struct tfs_fragment *f,
				   struct tfs_diag *d);
enum tfs_err tfs__take_legacy_lists(struct tfs_fragment *f,
				    struct tfs_diag *d);

#endif
