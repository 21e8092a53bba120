/* The small documents of an array (SPEC §2), each rendered whole into a
 * buffer and ending with a newline: schema.json, metadata.json, a
 * fragment's info.json and one metadata value as text. The daemon serves
 * them as files; their JSON is that of `tfs dump`. */
#ifndef TFSR_DOCS_H
#define TFSR_DOCS_H

#include <stdint.h>

#include "tfs_buf.h"
#include <tilefs/tilefs.h>

/* schema.json: array type, format version, opened_at (0: null), the
 * schema, the non-empty domain (NULL: null) and the visible fragments. */
enum tfs_err tfsr_doc_schema(struct tfs_buf *out, const struct tfs_array *a,
			     uint64_t opened_at, const struct tfs_range *ned,
			     struct tfs_diag *d) TFS_WUR;
/* metadata.json: the live keys and their typed values. */
enum tfs_err tfsr_doc_metadata(struct tfs_buf *out, const struct tfs_array *a,
			       struct tfs_diag *d) TFS_WUR;
/* info.json of fragment f of an array of schema s, with the bytes its
 * files take on disk. */
enum tfs_err tfsr_doc_fragment(struct tfs_buf *out, const struct tfs_schema *s,
			       const struct tfs_fragment_info *f,
			       uint64_t bytes_on_disk,
			       struct tfs_diag *d) TFS_WUR;
/* The value of metadata key (NUL-terminated) as text: strings as they
 * are, numbers one per line, bytes as hex. TFS_E_NOT_FOUND when the key
 * is gone. */
enum tfs_err tfsr_doc_meta_value(struct tfs_buf *out, const struct tfs_array *a,
				 const char *key, struct tfs_diag *d) TFS_WUR;

#endif
