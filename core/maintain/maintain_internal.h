/* What the files of the maintenance module share: the array being worked
 * on (struct mt) and its file helpers, a small string set, and the steps
 * that maintain.c's entry points call. Not part of the module's contract. */
#ifndef TFS_MAINTAIN_INTERNAL_H
#define TFS_MAINTAIN_INTERNAL_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfs_alloc.h"
#include "tfs_str.h"
#include "tfs_buf.h"
#include "tfs_fragment.h"
#include <tilefs/tilefs.h>

/* Files that name many objects are read up to this size. */
#define MT_FILE_MAX ((size_t)1 << 30)

struct mt {
	struct tfs_vfs *vfs;
	bool own_vfs;
	char *path; /* the array folder without a trailing '/' */
	const uint8_t *key;
};
/* ---- A set of strings (sorted array; small) ------------------------------ */

struct strset {
	char **items;
	size_t count, cap;
};
struct con_item {
	char *marker;
	uint8_t *del; /* .del: the delete tile; else NULL */
	size_t del_len;
};

struct con_items {
	struct con_item *items;
	size_t count, cap;
};

/* maintain_io.c */
enum tfs_err tfs__mt_nomem(struct tfs_diag *d);
enum tfs_err tfs__mt_init(struct mt *m, const char *path,
			  const struct tfs_write_opts *wo,
			  struct tfs_diag *d);
void tfs__mt_release(struct mt *m);
char *tfs__mt_path(const struct mt *m, const char *rel);
enum tfs_err tfs__mt_open(const struct mt *m, uint64_t t0, uint64_t t1,
			  struct tfs_array **out, struct tfs_diag *d);
/* The same, with every delete commit up to now applied to the window's
 * fragments: cells deleted later are not read (consolidation drops
 * them). */
enum tfs_err tfs__mt_open_purged(const struct mt *m, uint64_t t0, uint64_t t1,
				 struct tfs_array **out,
				 struct tfs_diag *d) TFS_WUR;
enum tfs_err tfs__mt_list(const struct mt *m, const char *rel,
			  struct tfs_dirlist *out, struct tfs_diag *d);
enum tfs_err tfs__mt_read(const struct mt *m, const char *rel,
			  uint8_t **buf, size_t *len, struct tfs_diag *d);
enum tfs_err tfs__mt_read_lines(const struct mt *m, const char *rel,
				struct tfs_strlist *lines, struct tfs_diag *d);
enum tfs_err tfs__mt_exists(const struct mt *m, const char *rel, bool *out,
			    struct tfs_diag *d);
enum tfs_err tfs__mt_write_file(const struct mt *m, const char *rel,
				const void *data, size_t len,
				struct tfs_diag *d);
enum tfs_err tfs__mt_remove(const struct mt *m, const char *rel,
			    unsigned *removed, struct tfs_diag *d);
enum tfs_err tfs__mt_new_name(char *name, uint64_t t1, uint64_t t2,
			      uint32_t version, const char *ext,
			      struct tfs_diag *d);
void tfs__mt_widen(uint64_t *t1, uint64_t *t2, uint64_t a1, uint64_t a2);
enum tfs_err tfs__mt_need_v12(const struct mt *m, uint32_t version,
			      const char *what, struct tfs_diag *d);
void tfs__mt_set_made(char *made, size_t cap, const char *name);
enum tfs_err tfs__mt_write_new_file(const struct mt *m, const char *dir,
				    uint64_t t1, uint64_t t2, uint32_t version,
				    const char *ext, const uint8_t *data,
				    size_t len, char *made, size_t made_cap,
				    struct tfs_diag *d);
int tfs__mt_str_cmp(const void *a, const void *b);
bool tfs__mt_strset_has(const struct strset *s, const char *v);
enum tfs_err tfs__mt_strset_add(struct strset *s, const char *v);
void tfs__mt_strset_release(struct strset *s);
enum tfs_err tfs__mt_add_lines_of(const struct mt *m, const char *dir,
				  const struct tfs_dirlist *l, const char *ext,
				  bool vac_lines, struct strset *out,
				  struct tfs_diag *d);
enum tfs_err tfs__mt_load_ignored(const struct mt *m,
				  const struct tfs_dirlist *commits,
				  struct strset *out, struct tfs_diag *d);

/* consolidate_meta.c */
enum tfs_err tfs__consolidate_fragment_meta(const struct mt *m,
					    char *made, size_t made_cap,
					    struct tfs_diag *d);
bool tfs__con_items_has(const struct con_items *c, const char *marker);
void tfs__con_items_release(struct con_items *c);
enum tfs_err tfs__con_file_items(const struct mt *m, const char *name,
				 const struct strset *ignored,
				 struct con_items *out, struct tfs_diag *d);
bool tfs__is_commit_file(const char *name);
enum tfs_err tfs__consolidate_commits(const struct mt *m, char *made,
				      size_t made_cap, struct tfs_diag *d);
enum tfs_err tfs__consolidate_array_meta(const struct mt *m, char *made,
					 size_t made_cap,
					 struct tfs_diag *d);

/* consolidate_frags.c */
enum tfs_err tfs__consolidate_fragments(const struct mt *m,
					const struct tfs_consolidate_opts *opts,
					char *made, size_t made_cap,
					struct tfs_diag *d);

/* vacuum.c */
enum tfs_err tfs__vacuum_fragments(const struct mt *m, unsigned *removed,
				   struct tfs_diag *d);
enum tfs_err tfs__vacuum_fragment_meta(const struct mt *m, unsigned *removed,
				       struct tfs_diag *d);
enum tfs_err tfs__vacuum_commits(const struct mt *m, unsigned *removed,
				 struct tfs_diag *d);
enum tfs_err tfs__vacuum_array_meta(const struct mt *m, unsigned *removed,
				    struct tfs_diag *d);
enum tfs_err tfs__remove_stale_tmp(const struct mt *m, struct tfs_diag *d);

#endif
