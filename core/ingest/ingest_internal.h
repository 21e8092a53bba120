/* Shared inside core/ingest: the streaming CSV tokenizer (csv_lexer.c),
 * value parsing by datatype (value_parse.c), the rows-to-batches engine
 * (csv_ingest.c) and schema inference (schema_infer.c). Helpers are named
 * tfs__*; nothing here is public API. */
#ifndef TFS_INGEST_INTERNAL_H
#define TFS_INGEST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tfs_err.h"
#include "tfs_format.h"

/* ---- CSV tokenizer (csv_lexer.c; RFC 4180) ------------------------------ */

/* Bytes read from the file at a time (the default), and the longest
 * record accepted: a record is held whole in the buffer, so a file
 * without line breaks (or with an unterminated quote) cannot make us hold
 * more than this. */
#define TFS__CSV_BLOCK (4u << 20)
#define TFS__CSV_RECORD_MAX ((size_t)256 << 20)

/* One field of the current record: bytes without the surrounding quotes
 * and with "" turned into ", valid until the next tfs__csv_next. */
struct tfs__csv_field {
	const uint8_t *p;
	size_t len;
	bool quoted;
	bool esc;      /* held "" pairs (undone before the record is handed out) */
	uint64_t line; /* line the field starts on, from 1 */
};

struct tfs__csv_lexer {
	int fd;                /* -1: reading from mem */
	const uint8_t *mem;
	size_t mem_len, mem_pos;
	const char *name;      /* the file in messages */
	size_t block;          /* bytes per read */
	uint8_t *buf;
	size_t cap, len, pos;  /* buf[pos..len) not yet tokenized */
	uint64_t buf_offset;   /* file offset of buf[0] */
	uint64_t line;         /* line of buf[pos] */
	uint64_t size;         /* file size (progress), 0 unknown */
	bool eof;              /* nothing more to read */
	bool started;          /* BOM check done */
	struct tfs__csv_field *fields;
	size_t field_num, field_cap;
	/* 0, or the number of leading fields the caller needs: a record's
	 * remaining fields may then be skipped without being split (and
	 * field_num may stop at field_limit). */
	size_t field_limit;
	uint64_t record_line;  /* line the current record starts on */
	/* Column names for messages, once the header is known (borrowed). */
	const char *const *col_names;
	size_t col_num;
};

/* Opens the file at path (POSIX) for tokenizing; name is used in
 * messages. block 0 = TFS__CSV_BLOCK. TFS_E_NOT_FOUND / TFS_E_IO with a
 * message naming the file. */
enum tfs_err tfs__csv_open(struct tfs__csv_lexer *lx, const char *path,
			   const char *name, size_t block,
			   struct tfs_diag *d) TFS_WUR;
/* Tokenizes len bytes in memory (borrowed) the same way, reading them
 * block bytes at a time so tests can cross every block boundary. */
void tfs__csv_open_mem(struct tfs__csv_lexer *lx, const void *mem, size_t len,
		       const char *name, size_t block);
void tfs__csv_close(struct tfs__csv_lexer *lx);
/* Next record into lx->fields / lx->field_num; *got = false at the end.
 * Blank lines are skipped. Malformed quoting is TFS_E_INVALID naming the
 * line and column. */
enum tfs_err tfs__csv_next(struct tfs__csv_lexer *lx, bool *got,
			   struct tfs_diag *d) TFS_WUR;
/* Bytes of the file tokenized so far. */
uint64_t tfs__csv_offset(const struct tfs__csv_lexer *lx);
/* Text of untrusted bytes for a one-line message into out (cap >= 8):
 * control bytes and backslashes as \xHH, cut short with "..." to fit. */
const char *tfs__msg_text(char *out, size_t cap, const void *p, size_t len);
/* Records a failure "NAME: line L, column C ('COL'): why" (column 0: no
 * column part; the name part only when lx->col_names has it). */
enum tfs_err tfs__csv_fail(const struct tfs__csv_lexer *lx,
			   struct tfs_diag *d, enum tfs_err code,
			   uint64_t line, size_t col, const char *fmt, ...)
	TFS_PRINTF(6, 7);

/* ---- Values (value_parse.c; SPEC §4 text forms) ------------------------- */

/* Parses the text of one value of a numeric, bool or date/time type into
 * dst (tfs_datatype_size(type) bytes, little-endian). Returns TFS_E_OK,
 * TFS_E_INVALID (not a value of the type) or TFS_E_RANGE (a value, but
 * out of the type's range or not a whole number of its unit), with *why
 * a static reason. */
enum tfs_err tfs__value_parse(uint8_t type, const uint8_t *p, size_t len,
			      void *dst, const char **why) TFS_WUR;
/* The fast path of integer types: [+-]digits with |value| <= max_mag
 * (negative values only when is_signed, down to -(max_mag + 1)), as the
 * two's complement 64-bit pattern. */
enum tfs_err tfs__int_parse(const uint8_t *p, size_t len, bool is_signed,
			    uint64_t max_mag, uint64_t *out,
			    const char **why) TFS_WUR;
/* One whole cell appended to out: strings as their bytes (checked
 * against STRING_ASCII / STRING_UTF8), blobs and other byte types as hex,
 * numbers separated by single spaces. cell_val_num TFS_VAR_NUM = any
 * count; else exactly that many values. *values = values appended. */
enum tfs_err tfs__cell_parse(uint8_t type, uint32_t cell_val_num,
			     const uint8_t *p, size_t len, struct tfs_buf *out,
			     const char **why) TFS_WUR;
/* Well-formed UTF-8 (no overlong forms, surrogates or values past
 * U+10FFFF). */
bool tfs__utf8_valid(const uint8_t *p, size_t len);
/* Date/time helper, exposed for schema inference: the fraction digits a
 * date/time text carries: -1 not a date/time, 0 a date only, else 1 + the
 * number of fraction digits of its seconds. */
int tfs__datetime_precision(const uint8_t *p, size_t len);

/* ---- Rows to batches (csv_ingest.c) ------------------------------------- */

struct tfs_batch;

/* Where parsed batches go: the writer, or a test's collector. */
struct tfs__ingest_sink {
	enum tfs_err (*append)(void *ctx, const struct tfs_batch *b,
			       const uint64_t *tags, struct tfs_diag *d);
	void *ctx;
};

struct tfs_ingest_progress;
struct tfs__enum_growth;

struct tfs__ingest_run {
	const struct tfs_schema *schema;
	/* The enumerations of the schema (tfs_writer_enumerations), found by
	 * name: a column of an attribute that names one holds its values as
	 * the reader shows them, stored as their indices. */
	const struct tfs_enumeration *enums;
	size_t enum_num;
	const char *csv_path;
	/* Or the CSV bytes in memory (borrowed), when csv_path is NULL. */
	const void *csv_mem;
	size_t csv_mem_len;
	const char *display_name;
	size_t block;          /* tokenizer block, 0 = default */
	uint64_t batch_rows;   /* rows per batch, 0 = default */
	/* Attributes only, dims generated (inferred schemas): no dimension
	 * column is expected. */
	bool no_dims;
	/* Dimension columns are expected but not parsed nor passed on (a
	 * box write: tfs__box_detect has read them). */
	bool skip_dims;
	void (*progress)(const struct tfs_ingest_progress *p, void *arg);
	void *progress_arg;
	unsigned pass, passes; /* reported as is; 0 = 1 of 1 */
	/* A collecting run (enum_grow.c): NULL, or enum_num growths, one per
	 * enumeration of enums. Only enumerated columns are parsed and
	 * nothing goes to a sink: the values an enumeration lacks are added
	 * to its growth, refused (the file's first problem) where the
	 * enumeration is ordered or its attributes' type could not index
	 * them. */
	struct tfs__enum_growth *grow;
	/* Out: data rows parsed. */
	uint64_t rows;
};

/* Parses the whole CSV against run->schema, appending batches to sink
 * with tags = line numbers. Any bad row stops it with the message
 * "FILE: line L, column C ('NAME'): why". */
enum tfs_err tfs__ingest_run(struct tfs__ingest_run *run,
			     const struct tfs__ingest_sink *sink,
			     struct tfs_diag *d) TFS_WUR;

/* ---- Enumerations that grow (enum_grow.c) -------------------------------- */

/* The values one enumeration lacks, in the order first seen. */
struct tfs__enum_growth {
	const struct tfs_enumeration *en;
	struct tfs_buf data;    /* the values' bytes, packed */
	struct tfs_buf offsets; /* uint64 start of each in data */
	uint64_t num;
	uint64_t *slots;        /* hash set: 1 + value number, 0 empty */
	uint64_t slot_cap;
};

void tfs__enum_growth_init(struct tfs__enum_growth *g,
			   const struct tfs_enumeration *en);
void tfs__enum_growth_release(struct tfs__enum_growth *g);
/* Whether p is a value found already; *k its number among them. */
bool tfs__enum_growth_find(const struct tfs__enum_growth *g, const uint8_t *p,
			   size_t len, uint64_t *k);
enum tfs_err tfs__enum_growth_add(struct tfs__enum_growth *g, const uint8_t *p,
				  size_t len) TFS_WUR;

struct schema_files;
struct tfs_write_opts;

struct tfs__enum_grow {
	bool evolved;     /* the array has a new schema of ours */
	uint64_t values;  /* values added to enumerations */
	struct schema_files *files; /* what to remove to undo it */
};

/* Reads the CSV of tmpl (a run as it will be made, enums those of the
 * schema in force) once for the values its enumerations lack and, when
 * there are any, evolves the array at path with them added after each
 * enumeration's own (tfs_array_evolve). Refusals (an ordered or full
 * enumeration) name the file, line and column; nothing is written then.
 * Release eg with tfs__enum_grow_release; tfs__enum_grow_undo first
 * removes the evolution again (when the write that follows fails). */
enum tfs_err tfs__enum_grow(struct tfs__enum_grow *eg, const char *path,
			    const struct tfs__ingest_run *tmpl,
			    const struct tfs_write_opts *wo,
			    struct tfs_diag *d) TFS_WUR;
void tfs__enum_grow_undo(struct tfs__enum_grow *eg);
void tfs__enum_grow_release(struct tfs__enum_grow *eg);

/* ---- Box detection (box_detect.c) --------------------------------------- */

/* *is_box = whether the CSV's rows are exactly the cells of one box of the
 * dense array in row-major order; box receives its lo and hi per
 * dimension (values of the dimension type). The CSV is the file at
 * csv_path, or when that is NULL the mem_len bytes at mem. Only I/O and
 * memory failures are errors. */
enum tfs_err tfs__box_detect(const struct tfs_schema *s, const char *csv_path,
			     const void *mem, size_t mem_len,
			     const char *display_name, size_t block, bool *is_box,
			     uint8_t box[2][128][8], struct tfs_diag *d) TFS_WUR;

/* ---- Schema inference (schema_infer.c) ---------------------------------- */

/* Reads the whole CSV once (bounded memory) and builds the schema SPEC §6
 * gives a CSV dropped into a plain folder; *rows = data rows. progress
 * (may be NULL) hears of it as pass 1 of 2. */
enum tfs_err tfs__schema_infer(struct tfs_schema *out, uint64_t *rows,
			       const char *csv_path, const char *display_name,
			       size_t block,
			       void (*progress)(const struct tfs_ingest_progress *p,
						void *arg),
			       void *progress_arg, struct tfs_diag *d) TFS_WUR;

#endif
