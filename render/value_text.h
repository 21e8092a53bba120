/* Cell values as text (SPEC §4): integers in decimal, floats in the
 * shortest form that reads back to the same bits (nan, inf, -inf), strings
 * as UTF-8, bool as true/false, datetimes as ISO-8601 UTC at the type's
 * precision, blobs as hex, several values of a cell separated by one
 * space; null as NULL (.txt), an empty field (.csv) or null (.json).
 * Attributes with an enumeration show the enumeration's value. */
#ifndef TFSR_VALUE_TEXT_H
#define TFSR_VALUE_TEXT_H

#include <stdint.h>

#include "tfs_buf.h"
#include <tilefs/tilefs.h>

enum tfsr_text_style {
	TFSR_TEXT_TXT,  /* newlines escaped as \n, backslash as \\ */
	TFSR_TEXT_CSV,  /* RFC 4180 quoting where needed */
	TFSR_TEXT_JSON, /* one JSON value */
};

/* Appends cell i of column c; en is the attribute's enumeration or NULL. */
enum tfs_err tfsr_cell_text(struct tfs_buf *out, const struct tfs_column *c,
			    uint64_t i, enum tfsr_text_style style,
			    const struct tfs_enumeration *en) TFS_WUR;

/* Appends a name (a CSV header field, a JSON key) quoted for style. */
enum tfs_err tfsr_name_text(struct tfs_buf *out, const char *name,
			    enum tfsr_text_style style) TFS_WUR;

/* Writes a datetime (DATETIME_*) or time of day (TIME_*) value of type
 * as ISO-8601 text into out (cap >= 48). */
void tfsr_datetime_text(char *out, size_t cap, uint8_t type, int64_t v);

#endif
