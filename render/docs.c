/* The small documents of an array (SPEC §2): schema.json, metadata.json,
 * one file per metadata key, and a fragment's info.json (docs.h). JSON by
 * the corpus conventions, through the same writers as `tfs dump`, so the
 * two always agree. */
#include "docs.h"

#include <string.h>

#include "array_json.h"
#include "value_text.h"

static enum tfs_err put_schema(struct json_out *j, const struct tfs_array *a,
			       uint64_t opened_at, const struct tfs_range *ned)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	struct tfs_schema_info si;
	size_t visible = 0;
	enum tfs_err e;

	for (size_t i = 0; i < tfs_array_fragment_count(a); i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		visible += f.visible;
	}
	json_out_begin_object(j);
	json_out_space(j, "\n");
	json_out_key(j, "array_type");
	json_out_cstr(j, tfs_schema_is_dense(s) ? "dense" : "sparse");
	json_out_space(j, "\n");
	json_out_key(j, "format_version");
	tfs_schema_get_info(s, &si);
	json_out_u64(j, si.version);
	json_out_space(j, "\n");
	json_out_key(j, "opened_at");
	if (opened_at)
		json_out_u64(j, opened_at);
	else
		json_out_null(j);
	json_out_space(j, "\n");
	json_out_key(j, "schema");
	e = array_json_schema(j, a);
	if (e)
		return e;
	json_out_space(j, "\n");
	json_out_key(j, "non_empty_domain");
	if (ned)
		array_json_ranges(j, s, ned);
	else
		json_out_null(j);
	json_out_space(j, "\n");
	json_out_key(j, "fragment_count");
	json_out_u64(j, visible);
	json_out_space(j, "\n");
	json_out_end_object(j);
	return TFS_E_OK;
}

static void put_fragment(struct json_out *j, const struct tfs_schema *s,
			 const struct tfs_fragment_info *f, uint64_t bytes)
{
	json_out_begin_object(j);
	json_out_space(j, "\n");
	json_out_key(j, "fragment");
	array_json_fragment(j, s, f);
	json_out_space(j, "\n");
	json_out_key(j, "bytes_on_disk");
	json_out_u64(j, bytes);
	json_out_space(j, "\n");
	json_out_end_object(j);
}

/* A metadata value as text: strings as they are, numbers one per line. */
enum tfs_err tfsr_doc_meta_value(struct tfs_buf *out, const struct tfs_array *a,
				 const char *key, struct tfs_diag *d)
{

	for (size_t i = 0; i < tfs_array_metadata_count(a); i++) {
		const struct tfs_meta_kv *kv = tfs_array_metadata(a, i);
		size_t size = tfs_datatype_size(kv->type);
		enum tfs_err e = TFS_E_OK;

		if (kv->deleted || kv->key_len != strlen(key) ||
		    memcmp(kv->key, key, kv->key_len) != 0)
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
			e = tfsr_cell_text(out, &c, 0, TFSR_TEXT_TXT, NULL);
			if (!e)
				e = tfs_buf_append_u8(out, '\n');
		}
		return e ? tfs_fail(d, e, "metadata '%s': cannot render", key)
			 : e;
	}
	return tfs_fail(d, TFS_E_NOT_FOUND, "metadata key '%s' is gone", key);
}

/* The end of a JSON document: its writer's first failure, or a newline. */
static enum tfs_err doc_end(struct json_out *j, struct tfs_buf *out,
			    enum tfs_err e, const char *what,
			    struct tfs_diag *d)
{
	if (!e)
		e = json_out_error(j);
	if (!e)
		e = tfs_buf_append_u8(out, '\n');
	return e && !d->code ? tfs_fail(d, e, "cannot render '%s'", what) : e;
}

enum tfs_err tfsr_doc_schema(struct tfs_buf *out, const struct tfs_array *a,
			     uint64_t opened_at, const struct tfs_range *ned,
			     struct tfs_diag *d)
{
	struct json_out j;

	json_out_init(&j, out);
	return doc_end(&j, out, put_schema(&j, a, opened_at, ned),
		       "schema.json", d);
}

enum tfs_err tfsr_doc_metadata(struct tfs_buf *out, const struct tfs_array *a,
			       struct tfs_diag *d)
{
	struct json_out j;

	json_out_init(&j, out);
	array_json_metadata(&j, a);
	return doc_end(&j, out, TFS_E_OK, "document", d);
}

enum tfs_err tfsr_doc_fragment(struct tfs_buf *out, const struct tfs_schema *s,
			       const struct tfs_fragment_info *f,
			       uint64_t bytes_on_disk, struct tfs_diag *d)
{
	struct json_out j;

	json_out_init(&j, out);
	put_fragment(&j, s, f, bytes_on_disk);
	return doc_end(&j, out, TFS_E_OK, "document", d);
}
