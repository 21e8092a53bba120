/* The lower half of the schema JSON parser, schema_json_values.c (JSON
 * paths for messages, typed members, values, filters), and what
 * schema_json.c (the schema's parts and the whole) takes from it. */
#ifndef TFS_SCHEMA_JSON_VALUES_H
#define TFS_SCHEMA_JSON_VALUES_H

#include "ingest_internal.h"

#include <assert.h>
#include <json-c/json.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"
#include "tilefs/tilefs.h"

#define DEFAULT_CAPACITY 10000
#define DEFAULT_CHUNK 65536
#define MAX_CELL_SIZE ((uint64_t)1 << 24)

/* A JSON path for messages, "$.attrs[2].fill". */
struct jpath {
	char text[160];
};

#define FAIL(d, jp, ...) tfs__json_fail(d, jp, __VA_ARGS__)

/* Fails with TFS_E_INVALID: "schema JSON: <path>: <why>". */
enum tfs_err tfs__json_fail(struct tfs_diag *d, const struct jpath *jp,
			    const char *fmt, ...) TFS_PRINTF(3, 4);

/* schema_json_values.c */
void tfs__json_jpath_key(struct jpath *out, const struct jpath *in, const char *key);
void tfs__json_jpath_index(struct jpath *out, const struct jpath *in, size_t i);
json_object *tfs__json_member(json_object *obj, const char *key);
enum tfs_err tfs__json_get_string(json_object *obj, const char *key, bool required,
				  const struct jpath *jp, const char **out,
				  struct tfs_diag *d);
enum tfs_err tfs__json_get_bool(json_object *obj, const char *key, bool dflt,
				const struct jpath *jp, bool *out, struct tfs_diag *d);
enum tfs_err tfs__json_get_u64(json_object *v, const struct jpath *jp, uint64_t max,
			       uint64_t *out, struct tfs_diag *d);
enum tfs_err tfs__json_get_type(json_object *obj, const struct jpath *jp, uint8_t *out,
				struct tfs_diag *d);
enum tfs_err tfs__json_get_value(json_object *v, uint8_t type, const struct jpath *jp,
				 uint8_t *dst, struct tfs_diag *d);
enum tfs_err tfs__json_get_cell(json_object *v, uint8_t type, bool var,
				uint32_t cell_val_num, const struct jpath *jp,
				struct tfs_buf *out, struct tfs_diag *d);
enum tfs_err tfs__json_get_filters(json_object *obj, const char *key,
				   const struct tfs_pipeline *dflt,
				   const struct jpath *jp, struct tfs_pipeline *out,
				   bool *given, struct tfs_diag *d);
enum tfs_err tfs__json_get_chunk(json_object *obj, const char *key,
				 const struct jpath *jp, struct tfs_pipeline *p,
				 struct tfs_diag *d);

#endif
