/* Helpers shared by the parsers of the format module: a bounds-checked
 * reader that knows what it is reading (for one-line diagnostics naming the
 * object, the field and the offset), string copies that refuse embedded NUL
 * bytes, and the Range encoding shared by the schema's current domain, the
 * fragment non-empty domain and R-tree MBRs (format/schema.md §7).
 *
 * Nothing here is exported outside core/format. */
#ifndef TFS_FORMAT_INTERNAL_H
#define TFS_FORMAT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_bytes.h"
#include "tfs_err.h"
#include "tfs_format.h"

/* A reader over untrusted bytes. `what` names the object being parsed
 * ("schema '__1_1_abc'", "footer") and prefixes every message. */
struct tfs__rd {
	struct tfs_cursor c;
	struct tfs_diag *d;
	const char *what;
};

void tfs__rd_init(struct tfs__rd *r, const uint8_t *buf, size_t len,
		  const char *what, struct tfs_diag *d);

/* TFS_E_CORRUPT with "<what>: <message>". */
enum tfs_err tfs__bad(struct tfs__rd *r, const char *fmt, ...)
	TFS_PRINTF(2, 3);
/* The same with another code. */
enum tfs_err tfs__fail(struct tfs__rd *r, enum tfs_err code, const char *fmt,
		       ...) TFS_PRINTF(3, 4);
/* TFS_E_CORRUPT: "<what>: truncated at offset N reading <field>". */
enum tfs_err tfs__trunc(struct tfs__rd *r, const char *field);
/* TFS_E_UNSUPPORTED: "<what>: unsupported format version N". */
enum tfs_err tfs__unsupported_version(struct tfs__rd *r, uint32_t version);

enum tfs_err tfs__u8(struct tfs__rd *r, uint8_t *v, const char *field);
/* A u8 that must be 0 or 1. */
enum tfs_err tfs__bool(struct tfs__rd *r, bool *v, const char *field);
enum tfs_err tfs__u32(struct tfs__rd *r, uint32_t *v, const char *field);
enum tfs_err tfs__u64(struct tfs__rd *r, uint64_t *v, const char *field);
/* Borrows n bytes (n untrusted: checked against what is left). */
enum tfs_err tfs__take(struct tfs__rd *r, uint64_t n, const uint8_t **p,
		       const char *field);
/* Copies n bytes into a new NUL-terminated string; embedded NUL bytes are
 * corrupt (names are C strings in TileDB's API). */
enum tfs_err tfs__str(struct tfs__rd *r, uint64_t n, char **out,
		      const char *field);
/* Parses a FilterList (format/filters.md §1) through the filter module,
 * rewording its failure as "<what>: <field>: <reason>". */
enum tfs_err tfs__pipeline(struct tfs__rd *r, struct tfs_pipeline *p,
			   uint32_t version, const char *field);

/* Parses one Range of a dimension of type `type` (var when `var`): fixed
 * `[lo, hi]` of 2 × size bytes, or `u64 total, u64 lo_len, bytes`. The
 * range points into the reader's bytes. */
enum tfs_err tfs__range(struct tfs__rd *r, uint8_t type, bool var,
			struct tfs_range *out, const char *field);
/* Appends a Range in the same encoding. */
enum tfs_err tfs__range_write(struct tfs_buf *b, bool var,
			      const struct tfs_range *rg) TFS_WUR;
/* Copies the bytes [from, to) of the reader's buffer and moves every range
 * of rg[n] (views into that span) onto the copy, which *out owns. */
enum tfs_err tfs__ranges_own(struct tfs__rd *r, size_t from, size_t to,
			     struct tfs_range *rg, uint64_t n, uint8_t **out);

/* Appends a u32 length and the bytes of a string (NULL = empty). */
enum tfs_err tfs__put_str32(struct tfs_buf *b, const char *s) TFS_WUR;
enum tfs_err tfs__put_str64(struct tfs_buf *b, const char *s) TFS_WUR;

#endif
