/* The corpus expectation files (corpus/README.md "The JSON") as a tree
 * that tests walk: parsed by json-c, numbers kept as their text so that
 * 64-bit integers compare exactly. Test support only. */
#ifndef TFS_TEST_JSON_H
#define TFS_TEST_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jtype t;
	bool b;
	char *text;  /* number text, or the string in UTF-8 */
	size_t len;  /* string byte length */
	/* The string with U+0080..U+00FF as single bytes: how the corpus
	 * writes bytes that are not valid UTF-8 (compare with both). */
	char *raw;
	size_t raw_len;
	struct jv *items;
	char **keys; /* objects */
	size_t n;
};

/* NULL on a syntax error. */
struct jv *json_parse(const char *text, size_t len);
/* Reads a file and parses it; NULL on failure. */
struct jv *json_load(const char *path);
void json_free(struct jv *v);
/* NULL when absent or not an object/array. */
const struct jv *json_get(const struct jv *obj, const char *key);
const struct jv *json_at(const struct jv *arr, size_t i);
bool json_is_null(const struct jv *v);
int64_t json_i64(const struct jv *v);
uint64_t json_u64(const struct jv *v);
/* Numbers, and the strings "NaN", "Infinity", "-Infinity". */
double json_f64(const struct jv *v);
const char *json_str(const struct jv *v);
/* True when bytes[n] equal the string either as UTF-8 or as raw bytes. */
bool json_str_eq(const struct jv *v, const void *bytes, size_t n);

#endif
