/* The small documents of an array view (SPEC §2): schema.json,
 * metadata.json, one file per metadata key, and each fragment's
 * info.json. JSON by the corpus conventions, through the same writers as
 * `tfs dump`, so the two always agree. */
#include "tfsd.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "array_json.h"
#include "tfs_s3.h"
#include "tfs_alloc.h"
#include "value_text.h"

static enum tfs_err put_schema(struct tfsd *fs, const struct tfsd_node *n,
			       struct json_out *j)
{
	const struct tfsd_arr *arr = n->arr;
	const struct tfs_schema *s = arr->schema;
	size_t visible = 0;
	enum tfs_err e;

	(void)fs;
	for (size_t i = 0; i < tfs_array_fragment_count(arr->a); i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(arr->a, i, &f);
		visible += f.visible;
	}
	json_out_begin_object(j);
	json_out_space(j, "\n");
	json_out_key(j, "array_type");
	json_out_cstr(j, s->array_type == TFS_SPARSE ? "sparse" : "dense");
	json_out_space(j, "\n");
	json_out_key(j, "format_version");
	json_out_u64(j, s->version);
	json_out_space(j, "\n");
	json_out_key(j, "opened_at");
	if (arr->timestamp)
		json_out_u64(j, arr->timestamp);
	else
		json_out_null(j);
	json_out_space(j, "\n");
	json_out_key(j, "schema");
	e = array_json_schema(j, arr->a);
	if (e)
		return e;
	json_out_space(j, "\n");
	json_out_key(j, "non_empty_domain");
	if (arr->has_ned)
		array_json_ranges(j, s, arr->ned);
	else
		json_out_null(j);
	json_out_space(j, "\n");
	json_out_key(j, "fragment_count");
	json_out_u64(j, visible);
	json_out_space(j, "\n");
	json_out_end_object(j);
	return TFS_E_OK;
}

/* Bytes of the regular files under path (one level of folders, as a
 * fragment folder has). */
static uint64_t folder_bytes_vfs(const char *path)
{
	struct tfs_dirlist l = {0};
	struct tfs_vfs *v;
	uint64_t total = 0;

	if (tfs_vfs_default_new(path, &v, NULL))
		return 0;
	if (!tfs_vfs_list(v, path, &l, NULL)) {
		for (size_t i = 0; i < l.count; i++) {
			char *p = tfs_path_join(path, l.names[i]);
			struct tfs_stat st;

			if (p && !tfs_vfs_stat(v, p, &st, NULL) && st.exists &&
			    !st.is_dir)
				total += st.size;
			tfs_free(p);
		}
	}
	tfs_dirlist_release(&l);
	tfs_vfs_free(v);
	return total;
}

static uint64_t folder_bytes(const char *path)
{
	DIR *dp;
	struct dirent *de;
	uint64_t total = 0;

	if (tfs_s3_is_uri(path))
		return folder_bytes_vfs(path);
	dp = opendir(path);
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
				total += folder_bytes(sub);
		}
	}
	closedir(dp);
	return total;
}

static enum tfs_err put_fragment(struct tfsd *fs, const struct tfsd_node *n,
				 struct json_out *j, struct tfs_diag *d)
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
		bytes = folder_bytes(path);
		if (!bytes) {
			snprintf(path, sizeof(path), "%s%s%s/%s", fs->cfg.source,
				 *n->rel ? "/" : "", n->rel, f.name);
			bytes = folder_bytes(path);
		}
		json_out_begin_object(j);
		json_out_space(j, "\n");
		json_out_key(j, "fragment");
		array_json_fragment(j, n->arr->schema, &f);
		json_out_space(j, "\n");
		json_out_key(j, "bytes_on_disk");
		json_out_u64(j, bytes);
		json_out_space(j, "\n");
		json_out_end_object(j);
		return TFS_E_OK;
	}
	return tfs_fail(d, TFS_E_NOT_FOUND, "fragment '%s' is gone", n->name);
}

/* A metadata value as text: strings as they are, numbers one per line. */
static enum tfs_err put_meta_value(const struct tfsd_node *n,
				   struct tfs_buf *out, struct tfs_diag *d)
{
	const struct tfs_array *a = n->arr->a;

	for (size_t i = 0; i < tfs_array_metadata_count(a); i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(a, i);
		size_t size = tfs_datatype_size(kv->type);
		enum tfs_err e = TFS_E_OK;

		if (kv->deleted || kv->key_len != strlen(n->name) ||
		    memcmp(kv->key, n->name, kv->key_len) != 0)
			continue;
		if (tfs_datatype_is_string(kv->type)) {
			e = tfs_buf_append(out, kv->value,
					   (size_t)kv->value_num * size);
			return e ? e : tfs_buf_append_u8(out, '\n');
		}
		for (uint32_t v = 0; !e && v < kv->value_num; v++) {
			uint64_t offsets[2] = {0, size};
			struct tfs_column c = {
				.name = kv->key, .type = kv->type,
				.cell_val_num = 1,
				.data = kv->value + (size_t)v * size,
				.data_len = size, .offsets = offsets};

			if (tfs_datatype_class(kv->type) == TFS_CLASS_BYTES) {
				c.var = true;
				c.cell_val_num = TFS_VAR_NUM;
				c.data = kv->value;
				offsets[1] = (uint64_t)kv->value_num * size;
				v = kv->value_num;
			}
			e = tfsd_cell_text(out, &c, 0, TFSD_TEXT_TXT, NULL);
			if (!e)
				e = tfs_buf_append_u8(out, '\n');
		}
		return e;
	}
	return tfs_fail(d, TFS_E_NOT_FOUND, "metadata key '%s' is gone",
			n->name);
}

enum tfs_err tfsd_doc_render(struct tfsd *fs, const struct tfsd_node *n,
			     struct tfs_buf *out, struct tfs_diag *d)
{
	struct json_out j;
	enum tfs_err e = TFS_E_OK;

	json_out_init(&j, out);
	switch (n->file) {
	case TFSD_F_SCHEMA:
		e = put_schema(fs, n, &j);
		break;
	case TFSD_F_METADATA_JSON:
		array_json_metadata(&j, n->arr->a);
		break;
	case TFSD_F_FRAG_INFO:
		e = put_fragment(fs, n, &j, d);
		break;
	case TFSD_F_META_VALUE:
		e = put_meta_value(n, out, d);
		if (e)
			return e == TFS_E_NOT_FOUND ? e
						    : tfs_fail(d, e, "metadata '%s': cannot render",
							       n->name);
		return TFS_E_OK;
	case TFSD_F_SLICE:
		return tfs_fail(d, TFS_E_INTERNAL, "not a document");
	}
	if (!e)
		e = json_out_error(&j);
	if (!e)
		e = tfs_buf_append_u8(out, '\n');
	return e && !d->code ? tfs_fail(d, e, "cannot render '%s'",
					  n->file == TFSD_F_SCHEMA ? "schema.json"
								   : "document")
			     : e;
}
