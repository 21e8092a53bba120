/* The filter grammar: the COND of `where[COND]/` and `--where COND`,
 * parsed against an array's schema into a condition of the core
 * (tilefs/tfs_where.h), values converted to the bytes of their field's
 * type.
 *
 *   COND  := OR
 *   OR    := AND (("or" | "||") AND)*
 *   AND   := UNARY (("and" | "&&") UNARY)*
 *   UNARY := ("not" | "!") UNARY | "(" COND ")" | PRED
 *   PRED  := FIELD CMP VALUE | VALUE CMP FIELD
 *          | FIELD ["not"] "in" "(" [VALUE ("," VALUE)*] ")"
 *          | FIELD "is" ["not"] "null"
 *          | "startswith" "(" FIELD "," VALUE ")"
 *          | "true" | "false"
 *   CMP   := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
 *   FIELD := a dimension or attribute name: letters, digits, '_', '.',
 *            '-', '$', or any name in backquotes (`my field`, `` for `)
 *   VALUE := "string" (\" and \\ inside) | bare text up to a space, ',',
 *            ')' or an operator
 *
 * Keywords are case-insensitive; spaces are optional where nothing is
 * ambiguous. Values are written as the CSV text of SPEC §4 writes them:
 * integers and floats (inf, -inf), true/false for BOOL, ISO-8601 UTC for
 * datetimes (2021-03-04, 2021-03-04T05:06:07.5Z; a raw count of units too)
 * and times of day, hex for blobs, the labels of an enumerated attribute,
 * several values of a cell in one quoted string separated by spaces. A
 * value outside its type's range, more precise than its datetime unit, or
 * a label the enumeration lacks is an error. */
#ifndef TFSR_WHERE_H
#define TFSR_WHERE_H

#include <stddef.h>

#include <tilefs/tilefs.h>

/* Longest filter text accepted. */
#define TFSR_WHERE_MAX_TEXT 65536

/* Parses text (len bytes, not NUL-terminated) for schema s into *out
 * (free with tfs_where_free). a gives the enumerations of enumerated
 * attributes (NULL: they take their stored index values). On failure
 * *out is NULL, the code is TFS_E_INVALID (or TFS_E_NOMEM), d says
 * "at N: reason" with N the 1-based byte position of the fault, and
 * *err_pos (if not NULL) receives N - 1. */
enum tfs_err tfsr_where_parse(const struct tfs_schema *s,
			      const struct tfs_array *a, const char *text,
			      size_t len, struct tfs_where **out,
			      size_t *err_pos, struct tfs_diag *d) TFS_WUR;

/* The field names a condition refers to, each once, appended to names
 * (up to cap; returns how many there are). Views into c. */
size_t tfsr_where_fields(const struct tfs_where *c, const char **names,
			 size_t cap);

#endif
