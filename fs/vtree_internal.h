/* What the two files of the virtual tree share, inside fs/ only:
 * vtree.c (what a path means) gives vtree_list.c (what a folder lists)
 * the array folder's special names and the helpers both use. */
#ifndef TFSD_VTREE_INTERNAL_H
#define TFSD_VTREE_INTERNAL_H

#include "tfsd.h"

/* The special entries of an array's folder, in listing order. */
extern const char *const tfsd__array_specials[];
extern const size_t tfsd__array_special_num;

/* a/b, or b when a is empty; NULL when out of memory. */
char *tfsd__path_join(const char *a, const char *b);
/* The opened array of a node inside an array view (a new reference). */
enum tfs_err tfsd__node_open(struct tfsd *fs, const struct tfsd_node *n,
			     struct tfsd_arr **out, struct tfs_diag *d);
/* Whether the array (field -1) or field shown in dir has a preview.png. */
bool tfsd__has_preview(const struct tfsd_node *dir, const struct tfsd_arr *arr,
		       int field);

/* Calls fn(ctx, name, real_path) for each member of the group at dir
 * that lives outside the group's folder but inside SOURCE, until fn
 * returns false. Not a group: nothing. */
typedef bool (*tfsd__outside_fn)(void *ctx, const char *name, const char *real);
void tfsd__group_outside_members(struct tfsd *fs, const struct tfsd_node *dir,
				 tfsd__outside_fn fn, void *ctx);

#endif
