/* Shared helpers of the format unit tests: reading corpus files with plain
 * stdio, listing folders, loading the expectation JSON, decoding generic
 * tiles, and the list of corpus arrays. Corpus files are only read. */
#ifndef TFS_FMT_TEST_UTIL_H
#define TFS_FMT_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json_test.h"
#include "tfs_format.h"

#define CORPUS TFS_CORPUS_DIR

/* Whole file (malloc'd, NUL-terminated beyond len) or NULL. */
uint8_t *tu_read(const char *path, size_t *len);
/* Sorted entry names of a folder (no "." / ".."); NULL, n = 0 if absent. */
char **tu_list(const char *dir, size_t *n);
void tu_free_list(char **names, size_t n);
/* malloc'd "a/b" (and "a/b/c"). */
char *tu_path(const char *a, const char *b);
char *tu_path3(const char *a, const char *b, const char *c);
bool tu_is_dir(const char *path);
/* NAME.json of a corpus array (relative to the corpus root) or NULL. */
struct jv *tu_json(const char *array);
/* key_hex of the JSON decoded into key[32]; false when null. */
bool tu_key(const struct jv *json, uint8_t key[32]);
/* Decodes a whole-file generic tile; asserts success. */
uint8_t *tu_decode(const uint8_t *file, size_t len, const uint8_t *key,
		   size_t *payload_len);
/* Arrays of the corpus root (folders with a NAME.json), sorted. */
char **tu_arrays(size_t *n);
/* Calls fn for every array of the corpus root and every array member of
 * its groups (recursively), with the path relative to the corpus and the
 * array's JSON object. Returns the number of calls. */
size_t tu_each_array(void (*fn)(const char *rel, const struct jv *json,
				void *ctx),
		     void *ctx);
/* The datatype called name (TileDB's spelling). */
uint8_t tu_type_of(const char *name);

/* Every schema of an array folder (legacy __array_schema.tdb first, then
 * __schema/ entries), decoded with key; asserts success. */
struct tfs_schema *tu_schemas(const char *array_dir, const uint8_t *key,
			      size_t *n);
void tu_free_schemas(struct tfs_schema *s, size_t n);
const struct tfs_schema *tu_schema_named(const struct tfs_schema *s, size_t n,
					 const char *name);
/* Fragment folders of an array (paths), root ones then __fragments/. */
char **tu_fragment_dirs(const char *array_dir, size_t *n);

#endif
