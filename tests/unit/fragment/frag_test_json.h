/* A minimal JSON reader for the fragment tests (test-only code): parses
 * the corpus expectation files into a tree. Numbers keep their text so
 * 64-bit integers compare exactly; strings are decoded to bytes. */
#ifndef FRAG_TEST_JSON_H
#define FRAG_TEST_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	bool b;
	char *text;   /* J_NUM: the number as written; J_STR: decoded bytes */
	size_t len;   /* J_STR: byte length */
	struct jval *items; /* J_ARR elements, J_OBJ values */
	char **keys;        /* J_OBJ keys */
	size_t n;
};

/* Parses a whole document; NULL on a syntax error. */
struct jval *json_parse(const char *text, size_t len);
void json_free(struct jval *v);
/* Object member (NULL if absent or not an object). */
const struct jval *json_get(const struct jval *obj, const char *key);
/* Reads a file and parses it; NULL on failure. */
struct jval *json_load(const char *path);

#endif
