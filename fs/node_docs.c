/* The documents of an array view's nodes (SPEC §2): which one a node
 * shows, rendered by render/docs.h; the fragment's size on disk is read
 * here. */
#include "tfsd.h"

#include <stdio.h>
#include <string.h>

#include "docs.h"
#include "png_picture.h"
#include "stats.h"
#include "tfs_alloc.h"

/* Bytes of the regular files under path (one level of folders, as a
 * fragment folder has), through SOURCE's storage: no link followed in a
 * folder, the objects' sizes in a bucket. */
static uint64_t folder_bytes(struct tfs_vfs *v, const char *path, int depth)
{
	struct tfs_dirlist l = {0};
	uint64_t total = 0;

	if (tfs_vfs_list(v, path, &l, NULL))
		return 0;
	for (size_t i = 0; i < l.count; i++) {
		char *p = tfs_path_join(path, l.names[i]);
		struct tfs_stat st;

		if (p && !tfs_vfs_lstat(v, p, &st, NULL) && st.exists &&
		    !st.is_link) {
			if (!st.is_dir)
				total += st.size;
			else if (depth > 0)
				total += folder_bytes(v, p, depth - 1);
		}
		tfs_free(p);
	}
	tfs_dirlist_release(&l);
	return total;
}

/* info.json of the fragment the node names. */
static enum tfs_err fragment_doc(struct tfsd *fs, const struct tfsd_node *n,
				 struct tfs_buf *out, struct tfs_diag *d)
{
	const struct tfs_array *a = n->arr->a;
	char path[4096];

	for (size_t i = 0; i < tfs_array_fragment_count(a); i++) {
		struct tfs_fragment_info f;
		uint64_t bytes;

		tfs_array_fragment(a, i, &f);
		if (strcmp(f.name, n->name) != 0)
			continue;
		snprintf(path, sizeof(path), "%s%s%s/__fragments/%s",
			 fs->cfg.source, *n->rel ? "/" : "", n->rel, f.name);
		bytes = folder_bytes(tfsd_arrays_vfs(fs->arrays), path, 1);
		if (!bytes) {
			snprintf(path, sizeof(path), "%s%s%s/%s", fs->cfg.source,
				 *n->rel ? "/" : "", n->rel, f.name);
			bytes = folder_bytes(tfsd_arrays_vfs(fs->arrays), path, 1);
		}
		return tfsr_doc_fragment(out, n->arr->schema, &f, bytes, d);
	}
	return tfs_fail(d, TFS_E_NOT_FOUND, "fragment '%s' is gone", n->name);
}

/* stats.json of a field (or of every attribute), filtered under
 * where[COND]/. */
static enum tfs_err stats_doc(const struct tfsd_node *n, struct tfs_buf *out,
			      struct tfs_diag *d)
{
	struct tfs_where *w = NULL;
	enum tfs_err e;

	if (n->where &&
	    (e = tfsr_where_parse(n->arr->schema, n->arr->a, n->where,
				  n->where_len, &w, NULL, d)))
		return e;
	e = tfsr_doc_stats(out, n->arr->a, n->field, n->sel ? n->sel : "",
			   n->sel ? n->sel_len : 0, w, d);
	tfs_where_free(w);
	return e;
}

enum tfs_err tfsd_doc_render(struct tfsd *fs, const struct tfsd_node *n,
			     struct tfs_buf *out, struct tfs_diag *d)
{
	const struct tfsd_arr *arr = n->arr;

	switch (n->file) {
	case TFSD_F_SCHEMA:
		return tfsr_doc_schema(out, arr->a, arr->timestamp,
				       arr->has_ned ? arr->ned : NULL, d);
	case TFSD_F_METADATA_JSON:
		return tfsr_doc_metadata(out, arr->a, d);
	case TFSD_F_FRAG_INFO:
		return fragment_doc(fs, n, out, d);
	case TFSD_F_META_VALUE:
		return tfsr_doc_meta_value(out, arr->a, n->name, d);
	case TFSD_F_PREVIEW:
		return tfsr_preview_png(arr->a, arr->has_ned ? arr->ned : NULL,
					n->field, 0, out, NULL, d);
	case TFSD_F_STATS:
		return stats_doc(n, out, d);
	case TFSD_F_SLICE:
		break;
	}
	return tfs_fail(d, TFS_E_INTERNAL, "not a document");
}
