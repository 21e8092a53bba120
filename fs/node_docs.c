/* The documents of an array view's nodes (SPEC §2): which one a node
 * shows, rendered by render/docs.h; the fragment's size on disk is read
 * here. */
#include "tfsd.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "docs.h"

/* Bytes of the regular files under path (one level of folders, as a
 * fragment folder has). */
static uint64_t folder_bytes(const struct tfsd_config *c, const char *path)
{
	DIR *dp = tfsd_source_opendir(c, path);
	struct dirent *de;
	uint64_t total = 0;

	if (!dp)
		return 0;
	while ((de = readdir(dp)) != NULL) {
		struct stat st;

		if (de->d_name[0] == '.' ||
		    fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISREG(st.st_mode)) {
			total += (uint64_t)st.st_size;
		} else if (S_ISDIR(st.st_mode)) {
			char sub[4096];

			if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path,
					     de->d_name) < sizeof(sub))
				total += folder_bytes(c, sub);
		}
	}
	closedir(dp);
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
		bytes = folder_bytes(&fs->cfg, path);
		if (!bytes) {
			snprintf(path, sizeof(path), "%s%s%s/%s", fs->cfg.source,
				 *n->rel ? "/" : "", n->rel, f.name);
			bytes = folder_bytes(&fs->cfg, path);
		}
		return tfsr_doc_fragment(out, n->arr->schema, &f, bytes, d);
	}
	return tfs_fail(d, TFS_E_NOT_FOUND, "fragment '%s' is gone", n->name);
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
	case TFSD_F_SLICE:
		break;
	}
	return tfs_fail(d, TFS_E_INTERNAL, "not a document");
}
