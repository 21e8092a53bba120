/* tilefs core: CSV files into arrays, and schemas from JSON
 * (docs/INGEST.md), library tfs_ingest. Writes go through the fragment
 * writer of tfs_write.h, one fragment per ingest, committed last. */
#ifndef TFS_INGEST_H
#define TFS_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"
#include "tfs_schema.h"
#include "tfs_write.h"

/* ---- CSV ingest and schema JSON (core/ingest) --------------------------- */

struct tfs_ingest_progress {
	uint64_t bytes_done, bytes_total; /* of the CSV file, in this pass */
	uint64_t rows;                    /* rows read in this pass */
	/* Pass 1 of 2 of tfs_ingest_csv_new reads the file to infer the
	 * schema; the last pass (1 of 1 for tfs_ingest_csv) writes. */
	unsigned pass, passes;
};

struct tfs_ingest_opts {
	struct tfs_write_opts write;
	/* Name the file has in messages ("readings.csv"); NULL = its path. */
	const char *display_name;
	/* Called now and then while parsing (may be NULL). */
	void (*progress)(const struct tfs_ingest_progress *p, void *arg);
	void *progress_arg;
};

struct tfs_ingest_result {
	struct tfs_write_result write;
	uint64_t rows;
	bool created; /* a new array was made (tfs_ingest_csv_new) */
	/* Values the file added to the array's enumerations (the array's
	 * schema evolved: format/schema.md §9). */
	uint64_t enum_values_added;
};

/* Parses the CSV file at csv_path (RFC 4180: quotes, escaped quotes, CRLF,
 * BOM, newlines inside quotes; POSIX path) and writes it as one fragment
 * of the array at array_path (format/write.md; SPEC §6). The header names
 * the columns: every dimension and every attribute except nullable ones,
 * in any order. Values in the text forms of SPEC §4 (ISO-8601 dates and
 * times at the type's unit, or a count of the unit where the text is no
 * ISO-8601 form; blobs as hex; several values of a cell separated by one
 * space); an unquoted empty field is null in a nullable
 * attribute, "" is an empty string. Blank lines are skipped; lines are
 * counted from 1 (the header). Any bad row refuses the whole file with
 * TFS_E_INVALID (or TFS_E_RANGE) and a message "FILE: line L, column C
 * ('NAME'): why" (FILE = opts->display_name); nothing is written then.
 * Refusals of the writer (duplicate coordinates) are its message after
 * "FILE: ". Memory stays bounded for any file size: one record, two
 * batches and the writer's opts.write.memory. An empty file (no bytes),
 * or one with a header only, writes nothing and succeeds. */
enum tfs_err tfs_ingest_csv(const char *array_path, const char *csv_path,
			    const struct tfs_ingest_opts *opts,
			    struct tfs_ingest_result *result,
			    struct tfs_diag *d) TFS_WUR;

/* Creates the array at array_path with a schema inferred from the CSV
 * (SPEC §6) by a first pass over the whole file: each column the
 * narrowest of BOOL (true/false), INT64, FLOAT64, DATETIME_DAY / _SEC /
 * _MS / _US / _NS (the finest precision seen) and STRING_UTF8 (CHAR when
 * not UTF-8), nullable where a field is empty; a dense 1-D UINT64
 * dimension `row` over [0, rows - 1] (`row_1`, ... when a column has that
 * name); ZSTD on attributes. Then it ingests the file as one dense
 * fragment. Header names must be unique, non-empty and not start with
 * "__". On failure the new array is removed. */
enum tfs_err tfs_ingest_csv_new(const char *array_path, const char *csv_path,
				const struct tfs_ingest_opts *opts,
				struct tfs_ingest_result *result,
				struct tfs_diag *d) TFS_WUR;

/* Parses a schema in the JSON shape tilefs shows as schema.json (and
 * `tfs dump` prints) into out (tfs_schema_release): the whole document
 * ({"array_type", "format_version", "schema": {...}}) or the schema
 * object alone with "array_type" among its keys. Missing optional parts
 * get TileDB's defaults (format version TFS_FORMAT_VERSION_WRITE,
 * capacity 10000, row-major orders, ZSTD coordinates and offsets, RLE
 * validity, no attribute filters, default fill values, 64 KiB chunks);
 * keys it does not know are ignored. Enumerations ("enumerations":
 * name, type, cell_val_num, ordered, values; attributes name one in
 * "enumeration") come with their values in the map entries
 * (tfs_enum_ref.def, file names NULL: tfs_array_create chooses them),
 * checked as tfs_array_create checks them. Dimension labels are refused.
 * TFS_E_INVALID with a message "schema JSON: $.PATH: why" naming the
 * JSON path of the first problem; the result meets every rule of
 * tfs_schema_parse once its enumeration files are named. */
enum tfs_err tfs_schema_from_json(struct tfs_schema *out, const char *json,
				  size_t len, struct tfs_diag *d) TFS_WUR;
/* The same into a new schema, for callers that see struct tfs_schema as
 * opaque: *out (NULL on failure) is freed with tfs_schema_free. */
enum tfs_err tfs_schema_from_json_new(const char *json, size_t len,
				      struct tfs_schema **out,
				      struct tfs_diag *d) TFS_WUR;

/* ---- Values from text ------------------------------------------------------ */

/* The value of one cell of a fixed-size numeric, bool, date/time or time
 * type from its text, as CSV ingest reads it (SPEC §4): ISO-8601 for
 * date/times (a zone offset applied; a plain number is a count of the
 * type's unit), [-]H[:MM[:SS[.f]]] for times. dst takes
 * tfs_datatype_size(type) bytes, little-endian. TFS_E_INVALID: not a
 * value of the type; TFS_E_RANGE: out of its range or not a whole number
 * of its unit. *why (when why is not NULL) is a static reason. */
enum tfs_err tfs_value_from_text(uint8_t type, const char *text, size_t len,
				 void *dst, const char **why) TFS_WUR;

#endif
