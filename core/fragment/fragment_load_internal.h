/* What the files that load one fragment share: fragment_load.c (creating
 * a fragment, its tile and cell counts, its data file names),
 * frag_footer.c (its footer, from a .meta file or its own metadata file)
 * and frag_lazy.c (the per-slot lists, R-tree and delete conditions
 * loaded on first use). */
#ifndef TFS_FRAGMENT_LOAD_INTERNAL_H
#define TFS_FRAGMENT_LOAD_INTERNAL_H

#include "fragment_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_mem.h"

#define META_FILE "__fragment_metadata.tdb"

/* frag_footer.c */
const struct meta_key *tfs__meta_find(const struct tfs__meta_index *m,
				      const char *name);
enum tfs_err tfs__footer_from_meta(const struct tfs_arraydir *a,
				   struct tfs_fragment *f,
				   const struct tfs__meta_index *m,
				   const struct meta_key *k,
				   struct tfs_diag *d);
enum tfs_err tfs__footer_from_file(const struct tfs_arraydir *a,
				   struct tfs_fragment *f,
				   struct tfs_diag *d);
enum tfs_err tfs__legacy_from_file(const struct tfs_arraydir *a,
				   struct tfs_fragment *f,
				   struct tfs_diag *d);
enum tfs_err tfs__take_legacy_lists(struct tfs_fragment *f,
				    struct tfs_diag *d);

#endif
