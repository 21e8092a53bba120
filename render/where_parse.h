/* What the two files of the filter grammar share, inside render/ only:
 * where.c (the scanner and the parser of the tree) takes from
 * where_value.c (value text into the bytes of a field's type, and the
 * parse's error reports), never the other way. */
#ifndef TFSR_WHERE_PARSE_H
#define TFSR_WHERE_PARSE_H

#include "where.h"

#include <stdbool.h>
#include <stddef.h>

#include "tfs_buf.h"

/* Longest value text (a string value, a set member). */
#define MAX_VALUE_TEXT 4096
/* Most values in one in (...) list. */
#define MAX_SET 65536

/* The parser's state over the filter text. */
struct wp {
	const struct tfs_schema *s;
	const struct tfs_array *a;
	const char *text;
	size_t len, pos;
	size_t err_pos;
	unsigned depth;
	struct tfs_diag *d;
};

/* A value token: text decoded (quotes removed), where it started. */
struct token {
	bool quoted;
	size_t at;
	size_t len;
	char text[MAX_VALUE_TEXT + 1];
};

/* Fails the parse at byte at of the text: "filter at N: ..." into p->d
 * (where_value.c, as the next two). */
enum tfs_err tfsr__where_bad(struct wp *p, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
enum tfs_err tfsr__where_nomem(struct wp *p);

/* Appends the bytes of value t for field f to out (where_value.c). */
enum tfs_err tfsr__where_put_value(struct wp *p, const struct tfs_field_info *f,
				   const struct token *t, struct tfs_buf *out);

#endif
