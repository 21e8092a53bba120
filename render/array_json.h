/* JSON descriptions of an array shared by `tfs dump` and the daemon
 * (schema.json, metadata.json, fragments/<name>/info.json), by the corpus
 * conventions (corpus/README.md, "The JSON"). Each call writes one value
 * (object or array) to the writer; the caller writes the key before it. */
#ifndef TFS_ARRAY_JSON_H
#define TFS_ARRAY_JSON_H

#include "json_out.h"
#include <tilefs/tilefs.h>

/* The schema object: dims, attrs, orders, capacity, filters, enumerations,
 * current domain, timestamp range. TFS_E_CORRUPT for an enumeration whose
 * offsets lie outside its data; a filter that cannot be described gives
 * its error. */
enum tfs_err array_json_schema(struct json_out *j,
			       const struct tfs_array *a) TFS_WUR;
/* [[lo,hi],...], one inclusive range per dimension of s. */
void array_json_ranges(struct json_out *j, const struct tfs_schema *s,
		       const struct tfs_range *r);
/* {key: {"type": T, "values": [...]}, ...} of the live (not deleted) keys. */
void array_json_metadata(struct json_out *j, const struct tfs_array *a);
/* One key and its {"type", "values"} inside such an object (nothing for a
 * deleted key); group metadata uses it too. */
void array_json_meta_entry(struct json_out *j, const struct tfs_meta_kv *kv);
/* One fragment: name, timestamps, version, dense, cell_num, consolidated
 * metadata, schema name, non-empty domain. */
void array_json_fragment(struct json_out *j, const struct tfs_schema *s,
			 const struct tfs_fragment_info *f);
/* The array of every fragment, in timestamp order. */
void array_json_fragments(struct json_out *j, const struct tfs_array *a);

#endif
