/* A small streaming JSON writer appending to a struct tfs_buf: objects,
 * arrays, keys and scalars with commas placed automatically, numbers that
 * parse back to the same binary value, and byte strings written as JSON
 * strings whatever they hold (bytes that are not valid UTF-8 become
 * \u00XY, so the output is always ASCII and always valid JSON).
 *
 * Errors are sticky, as with stdio: a failed append (the buffer's hard
 * maximum, out of memory) is remembered in j->err and later calls do
 * nothing; check json_out_error() once at the end or before flushing.
 * The caller owns the buffer and may empty it between values (b->len = 0)
 * to stream large documents. Not thread-safe; one writer per thread. */
#ifndef TFS_JSON_OUT_H
#define TFS_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_err.h"

#define JSON_OUT_MAX_DEPTH 32

struct json_out {
	struct tfs_buf *buf;
	enum tfs_err err;
	unsigned depth;
	bool after_key;
	const char *space; /* whitespace to write before the next token */
	bool has_items[JSON_OUT_MAX_DEPTH + 1]; /* per level: a value written */
};

void json_out_init(struct json_out *j, struct tfs_buf *buf);
/* TFS_E_OK or the first append failure. */
enum tfs_err json_out_error(const struct json_out *j);

void json_out_begin_object(struct json_out *j);
void json_out_end_object(struct json_out *j);
void json_out_begin_array(struct json_out *j);
void json_out_end_array(struct json_out *j);
/* An object key (NUL-terminated); the next call writes its value. */
void json_out_key(struct json_out *j, const char *key);
void json_out_key_len(struct json_out *j, const void *key, size_t len);

void json_out_null(struct json_out *j);
void json_out_bool(struct json_out *j, bool v);
void json_out_i64(struct json_out *j, int64_t v);
void json_out_u64(struct json_out *j, uint64_t v);
/* Shortest text that reads back as v; integral values as plain digits,
 * -0 as "-0", NaN and infinities as the strings "NaN", "Infinity",
 * "-Infinity". The float32 variant round-trips through float. */
void json_out_f64(struct json_out *j, double v);
void json_out_f32(struct json_out *j, float v);
/* A JSON string of len bytes (see the file comment for invalid UTF-8). */
void json_out_str(struct json_out *j, const void *s, size_t len);
void json_out_cstr(struct json_out *j, const char *s);
/* A JSON string of the bytes in lower-case hex. */
void json_out_hex(struct json_out *j, const void *p, size_t len);
/* A complete JSON value already rendered elsewhere (by another writer). */
void json_out_value_text(struct json_out *j, const char *text, size_t len);
/* Whitespace before the next token (after its comma), or before the
 * closing bracket; for readability only. ws must stay valid until then. */
void json_out_space(struct json_out *j, const char *ws);

/* Writes into out (cap ≥ 32) the shortest decimal text that reads back as
 * the finite value v, as the corpus JSON writes it: tfs_fmt_f64/f32
 * (tfs_fmt_float.h) with plain digits for integral values below 1e16;
 * returns its length. */
size_t json_fmt_f64(char *out, size_t cap, double v);
size_t json_fmt_f32(char *out, size_t cap, float v);

#endif
