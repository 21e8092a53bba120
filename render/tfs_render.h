/* The render library: what a selection of an array looks like as a file
 * (SPEC §3, §4), shared by the daemon (fs/) and the `tfs` tool (tools/),
 * on the core's public API only.
 *
 * One table, tfsr_renderers, has a row per output format: its name, its
 * file name extension, its MIME type, which fields it takes, whether its
 * size is known without rendering, and the callbacks that produce it.
 * Everything else (the mount's listings and checks, `tfs export
 * --format`, the slice engine of slice.h) reads that table, so a new
 * format is one file with its callbacks plus one row.
 *
 * Also here: the fields of a schema as one list (dimensions first, then
 * attributes) and the ISO-8601 times users type and read. */
#ifndef TFSR_RENDER_H
#define TFSR_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include <tilefs/tilefs.h>

/* Dimensions of a schema at most (format/schema.md). */
#define TFSR_MAX_DIMS 128

/* ---- Fields ------------------------------------------------------------- */

/* Fields (dimensions, then attributes) are described by the core:
 * tfs_schema_field_count, tfs_schema_field, tfs_schema_field_index
 * (tilefs/tfs_schema.h). */

/* ---- Times (time_text.c) ----------------------------------------------- */

/* Milliseconds since the epoch, or ISO-8601 UTC ("2023-11-14",
 * "2023-11-14T22:13:20", "...20.5Z", "...20.000Z"). */
enum tfs_err tfsr_parse_time(const char *text, uint64_t *out) TFS_WUR;
/* "2023-11-14T22:13:20.000Z" for ms since the epoch (cap >= 32). */
void tfsr_format_time(char *out, size_t cap, uint64_t ms);

/* ---- The renderer table (renderers.c) ---------------------------------- */

enum tfsr_format {
	TFSR_FMT_RAW,
	TFSR_FMT_TXT,
	TFSR_FMT_CSV,
	TFSR_FMT_JSON,
	TFSR_FMT_NPY,
	TFSR_FMT_OFFSETS,
	TFSR_FMT_VALIDITY,
	TFSR_FMT_PNG,
	TFSR_FMT_GRAY_PNG,
	TFSR_FMT_NUM,
};

/* Flags of a renderer. */
enum {
	/* Renders every field of an array together (array-level slices). */
	TFSR_R_ALL_FIELDS = 1u << 0,
	/* Of one attribute: each row also carries the coordinates (on
	 * sparse arrays only, with TFSR_R_SPARSE_COORDS). */
	TFSR_R_COORDS = 1u << 1,
	TFSR_R_SPARSE_COORDS = 1u << 2,
	/* Values as text: attributes with an enumeration show its values. */
	TFSR_R_TEXT = 1u << 3,
	/* Only for fields of var-size cells / nullable fields. */
	TFSR_R_VAR_ONLY = 1u << 4,
	TFSR_R_NULLABLE_ONLY = 1u << 5,
	/* Only for fields of one number per cell (integers, floats, times). */
	TFSR_R_NUMERIC_ONLY = 1u << 6,
	/* A picture: selections of two dimensions of more than one cell
	 * (png.h, tfsr_png_sel_check). */
	TFSR_R_IMAGE = 1u << 7,
	/* An attribute's slice in this format can be written: its bytes
	 * become a dense fragment over the selection (fs/). */
	TFSR_R_WRITABLE = 1u << 8,
};

/* Whether the size of a dense rendering is known without rendering. */
enum tfsr_size_kind {
	TFSR_SIZE_RENDERED, /* only by rendering it */
	/* header + cells × record bytes, every cell at its own offset, so any
	 * part renders alone (random access); record 0: the bytes of the
	 * fields' cells, when all are fixed-size (else rendered) */
	TFSR_SIZE_RECORDS,
	/* cells × record bytes, produced front to back */
	TFSR_SIZE_COUNTED,
};

struct tfsr_emit;
struct tfsr_stream;
struct tfsr_slice;

struct tfsr_renderer {
	enum tfsr_format fmt;
	const char *name; /* `tfs export --format NAME` */
	const char *ext;  /* slice[SEL]EXT */
	const char *mime;
	unsigned flags;
	enum tfsr_size_kind size_kind;
	uint32_t record;
	int text_style; /* TFSR_R_TEXT: an enum tfsr_text_style */
	/* Opens the rendering of st (its state in st->em.state) and appends
	 * what comes before the cells to st->out; NULL: nothing. */
	enum tfs_err (*begin)(struct tfsr_stream *st, struct tfs_diag *d);
	/* Appends cells first .. first+n-1 of batch b (its first columns are
	 * the output fields) to em->out; em->measure: counts only. */
	enum tfs_err (*cells)(struct tfsr_emit *em, const struct tfs_batch *b,
			      uint64_t first, uint64_t n);
	/* Builds sl->header, what precedes the cells, for a slice whose
	 * size is known without rendering (widths NULL, sparse_count 0);
	 * NULL: the renderer has no such header. */
	enum tfs_err (*header)(struct tfsr_slice *sl, const uint64_t *widths,
			       uint64_t sparse_count);
	/* Appends what follows the cells; NULL: nothing. */
	enum tfs_err (*end)(struct tfsr_stream *st);
	/* Frees em->state; NULL: there is none. */
	void (*release)(struct tfsr_emit *em);
};

extern const struct tfsr_renderer tfsr_renderers[TFSR_FMT_NUM];

const struct tfsr_renderer *tfsr_renderer_of(enum tfsr_format fmt);
/* The renderer called name (`--format`), or NULL. */
const struct tfsr_renderer *tfsr_renderer_named(const char *name);
/* Whether renderer r can show field i of s (i < 0: every field); false
 * with a message in d when not. */
bool tfsr_renderer_takes(const struct tfsr_renderer *r,
			 const struct tfs_schema *s, int field,
			 struct tfs_diag *d);

/* Splits a file name "slice[SEL]EXT" into the SEL (a view into name) and
 * the format of EXT; false when the name is not of that form. */
bool tfsr_slice_name_parse(const char *name, const char **sel, size_t *sel_len,
			   enum tfsr_format *fmt);

#endif
