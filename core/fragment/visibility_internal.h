/* What the two files of the fragment scan share: vis_scan.c (the scan's
 * state, a string set, delete and update commits) and visibility.c (the
 * steps of the scan, tfs__load_fragments). */
#ifndef TFS_VISIBILITY_INTERNAL_H
#define TFS_VISIBILITY_INTERNAL_H

#include "fragment_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"

/* ---- a set of strings: append, then sort once, then look up ------------ */

struct strset {
	char **items;
	size_t num;
	size_t cap;
};

/* ---- scan state --------------------------------------------------------- */

struct cand {
	char *rel; /* "__fragments/<name>" or "<name>" (root) */
	struct tfs_name_info ni;
	bool hidden_window; /* named by a vacuum file applying at the window */
	bool hidden_all;    /* ... applying at [0, UINT64_MAX] */
	bool visible;
	bool listed;
	struct tfs_fragment *f;
};

struct vac {
	char *rel;
	struct tfs_name_info ni;
};

struct scan {
	struct tfs_arraydir *a;
	bool sparse;
	struct strset ignore;
	struct strset consolidated; /* array-relative commit markers */
	struct cand *cands;
	size_t cand_num, cand_cap;
	struct vac *vacs;
	size_t vac_num, vac_cap;
	char **metas; /* array-relative .meta paths, listing order */
	size_t meta_num, meta_cap;
	size_t delete_cap;
	size_t update_cap;
	const struct tfs_dirlist *commits; /* sorted __commits listing */
};

/* vis_scan.c */
bool tfs__vis_strset_add(struct strset *s, const char *str, size_t len);
int tfs__vis_str_cmp(const void *a, const void *b);
void tfs__vis_strset_seal(struct strset *s);
bool tfs__vis_strset_has(const struct strset *s, const char *str);
void tfs__vis_strset_release(struct strset *s);
enum tfs_err tfs__vis_nomem(const struct scan *s, struct tfs_diag *d);
enum tfs_err tfs__vis_check_version(const struct scan *s, const char *rel,
				    const struct tfs_name_info *ni,
				    struct tfs_diag *d);
enum tfs_err tfs__vis_check_named_version(const struct scan *s, const char *rel,
					  struct tfs_diag *d);
bool tfs__vis_passes(const struct scan *s, const struct tfs_name_info *ni,
		     uint64_t t0, uint64_t t1);
enum tfs_err tfs__vis_add_cand(struct scan *s, const char *prefix,
			       const char *name, const struct tfs_name_info *ni,
			       struct tfs_diag *d);
enum tfs_err tfs__vis_add_vac(struct scan *s, const char *rel,
			      struct tfs_diag *d);
enum tfs_err tfs__vis_add_meta(struct scan *s, const char *prefix,
			       const char *name, struct tfs_diag *d);
void tfs__vis_scan_release(struct scan *s);
enum tfs_err tfs__vis_read_file(const struct scan *s, const char *rel,
				uint8_t **buf, size_t *len, struct tfs_diag *d);
enum tfs_err tfs__vis_add_delete(struct scan *s, const char *marker,
				 const struct tfs_name_info *ni,
				 const char *where, const uint8_t *buf,
				 size_t len, struct tfs_diag *d);
void tfs__vis_sort_deletes(struct scan *s);
enum tfs_err tfs__vis_add_update(struct scan *s, const char *marker,
				 const struct tfs_name_info *ni,
				 struct tfs_diag *d);
void tfs__vis_sort_updates(struct scan *s);

#endif
