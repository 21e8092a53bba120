/* `tfs dump`: the corpus JSON of one array, built on the public API only.
 * The document is written to a buffer that is flushed to stdout whenever it
 * grows past FLUSH_BYTES, so a read of any size streams in bounded memory;
 * "cell_count" follows "cells" because a sparse read's count is known only
 * at the end. */
#include "dump.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_json.h"
#include "cell_json.h"
#include "json_out.h"
#include "tfs_alloc.h"
#include <tilefs/tilefs.h>

#define FLUSH_BYTES ((size_t)1 << 20)

struct dump {
	const struct dump_opts *o;
	struct tfs_array *array;
	const struct tfs_schema *schema;
	struct tfs_buf out;
	struct json_out j;
	bool write_failed;
};

static void errorf(const char *fmt, ...) TFS_PRINTF(1, 2);

static void errorf(const char *fmt, ...)
{
	va_list ap;

	fputs("tfs dump: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Writes the buffered text to stdout; false after any failure (writer or
 * stdout), which has then been reported. */
static bool flush(struct dump *dp)
{
	enum tfs_err e = json_out_error(&dp->j);

	if (e) {
		errorf("cannot render the JSON: %s", tfs_strerror(e));
		return false;
	}
	if (dp->out.len && !dp->write_failed &&
	    fwrite(dp->out.data, 1, dp->out.len, stdout) != dp->out.len) {
		errorf("cannot write the output: %s", strerror(errno));
		dp->write_failed = true;
	}
	dp->out.len = 0;
	return !dp->write_failed;
}

static bool maybe_flush(struct dump *dp)
{
	if (dp->out.len < FLUSH_BYTES && !json_out_error(&dp->j))
		return true;
	return flush(dp);
}

/* ---- Reads --------------------------------------------------------------- */

/* Renders cell i of the batch as one object. Duplicates of a sparse
 * array come from the reader already in the corpus order. */
static void render_cell(struct json_out *j, const struct tfs_batch *b,
			uint64_t i)
{
	json_out_begin_object(j);
	for (size_t c = 0; c < b->column_num; c++) {
		json_out_key(j, b->columns[c].name);
		cell_json_column(j, &b->columns[c], i);
	}
	json_out_end_object(j);
}

/* Writes "cells":[...] and "cell_count" of a query. */
static bool put_cells(struct dump *dp, struct tfs_query *q)
{
	struct json_out *j = &dp->j;
	uint64_t count = 0;

	json_out_key(j, "cells");
	json_out_begin_array(j);
	for (;;) {
		const struct tfs_batch *b;
		struct tfs_diag d;

		tfs_diag_init(&d);
		if (tfs_query_next(q, &b, &d)) {
			errorf("%s", tfs_diag_msg(&d));
			return false;
		}
		if (!b)
			break;
		for (uint64_t i = 0; i < b->cell_num; i++) {
			json_out_space(j, "\n");
			render_cell(j, b, i);
			if (!maybe_flush(dp))
				return false;
		}
		count += b->cell_num;
	}
	json_out_space(j, "\n ");
	json_out_end_array(j);
	json_out_key(j, "cell_count");
	json_out_u64(j, count);
	return true;
}

/* One read: the subarray `sub` (NULL: the whole non-empty domain, shown as
 * `shown`, or null when the array is empty). */
static bool put_read(struct dump *dp, const struct tfs_range *sub,
		     const struct tfs_range *shown)
{
	struct json_out *j = &dp->j;
	struct tfs_query_opts qo = {.subarray = sub};
	struct tfs_query *q = NULL;
	struct tfs_diag d;
	bool ok;

	json_out_space(j, "\n");
	json_out_begin_object(j);
	json_out_key(j, "timestamp");
	if (dp->o->has_timestamp)
		json_out_u64(j, dp->o->timestamp);
	else
		json_out_null(j);
	json_out_key(j, "subarray");
	if (shown)
		array_json_ranges(j, dp->schema, shown);
	else
		json_out_null(j);
	json_out_key(j, "layout");
	json_out_cstr(j, "row-major");
	if (!shown) {
		json_out_key(j, "cells");
		json_out_begin_array(j);
		json_out_end_array(j);
		json_out_key(j, "cell_count");
		json_out_u64(j, 0);
		json_out_end_object(j);
		return true;
	}
	tfs_diag_init(&d);
	if (tfs_query_open(dp->array, &qo, &q, &d)) {
		errorf("%s", tfs_diag_msg(&d));
		return false;
	}
	ok = put_cells(dp, q);
	tfs_query_close(q);
	json_out_end_object(j);
	return ok;
}

/* Parsed "--subarray" text: one range per dimension, the bytes of string
 * bounds pointing into the copy of the text. */
struct subarray {
	struct tfs_range *ranges;
	uint8_t (*values)[2][8];
	char *text;
};

static void subarray_release(struct subarray *s)
{
	tfs_free(s->ranges);
	tfs_free(s->values);
	tfs_free(s->text);
}

/* Splits "lo:hi,lo:hi" by the dimensions of the schema (one range each;
 * string bounds are taken as they are and cannot hold ','); false
 * (reported) on a malformed text. */
static bool subarray_parse(struct subarray *out, const struct tfs_schema *s,
			   const char *text)
{
	char *p;
	uint32_t k, commas;

	out->ranges = tfs_callocn(s->dim_num, sizeof(*out->ranges));
	out->values = tfs_callocn(s->dim_num, sizeof(*out->values));
	out->text = tfs_strdup(text);
	if (!out->ranges || !out->values || !out->text) {
		errorf("out of memory");
		return false;
	}
	commas = 0;
	for (p = out->text; (p = strchr(p, ',')) != NULL; p++)
		commas++;
	if (commas + 1 != s->dim_num) {
		errorf("subarray '%s': %" PRIu32 " ranges lo:hi needed, one per "
		       "dimension",
		       text, s->dim_num);
		return false;
	}
	p = out->text;
	for (k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];
		char *comma = strchr(p, ',');
		char *colon;

		if (comma)
			*comma = '\0';
		colon = strchr(p, ':');
		if (!colon) {
			errorf("subarray '%s': range '%s' of dimension '%s' is "
			       "not lo:hi",
			       text, p, dim->name);
			return false;
		}
		*colon = '\0';
		if (dim->var) {
			out->ranges[k].lo = (const uint8_t *)p;
			out->ranges[k].lo_len = strlen(p);
			out->ranges[k].hi = (const uint8_t *)(colon + 1);
			out->ranges[k].hi_len = strlen(colon + 1);
		} else {
			size_t size = tfs_datatype_size(dim->type);

			if (!cell_json_parse_value(dim->type, p,
						   out->values[k][0]) ||
			    !cell_json_parse_value(dim->type, colon + 1,
						   out->values[k][1])) {
				errorf("subarray '%s': '%s:%s' is not a range "
				       "of %s values for dimension '%s'",
				       text, p, colon + 1,
				       tfs_datatype_name(dim->type), dim->name);
				return false;
			}
			out->ranges[k].lo = out->values[k][0];
			out->ranges[k].hi = out->values[k][1];
			out->ranges[k].lo_len = size;
			out->ranges[k].hi_len = size;
		}
		p = comma ? comma + 1 : NULL;
	}
	return true;
}

static bool put_reads(struct dump *dp)
{
	struct json_out *j = &dp->j;
	struct tfs_range *ned;
	bool ok = true;

	ned = tfs_callocn(dp->schema->dim_num, sizeof(*ned));
	if (!ned) {
		errorf("out of memory");
		return false;
	}
	json_out_space(j, "\n");
	json_out_key(j, "reads");
	json_out_begin_array(j);
	if (dp->o->full) {
		bool has = tfs_array_non_empty_domain(dp->array, ned);

		ok = put_read(dp, NULL, has ? ned : NULL);
	}
	for (size_t i = 0; ok && i < dp->o->subarray_num; i++) {
		struct subarray sub = {0};

		ok = subarray_parse(&sub, dp->schema, dp->o->subarrays[i]) &&
		     put_read(dp, sub.ranges, sub.ranges);
		subarray_release(&sub);
	}
	json_out_space(j, "\n");
	json_out_end_array(j);
	tfs_free(ned);
	return ok;
}

/* ---- The document -------------------------------------------------------- */

static bool put_array(struct dump *dp, const char *name)
{
	struct json_out *j = &dp->j;
	const struct tfs_schema *s = dp->schema;
	struct tfs_range *ned;
	enum tfs_err e;
	bool ok;

	json_out_begin_object(j);
	json_out_space(j, "\n");
	json_out_key(j, "name");
	json_out_cstr(j, name);
	json_out_space(j, "\n");
	json_out_key(j, "array_type");
	json_out_cstr(j, s->array_type == TFS_SPARSE ? "sparse" : "dense");
	json_out_space(j, "\n");
	json_out_key(j, "key_hex");
	if (dp->o->key_hex)
		json_out_cstr(j, dp->o->key_hex);
	else
		json_out_null(j);
	json_out_space(j, "\n");
	json_out_key(j, "format_version");
	json_out_u64(j, s->version);
	json_out_space(j, "\n");
	json_out_key(j, "opened_at");
	if (dp->o->has_timestamp)
		json_out_u64(j, dp->o->timestamp);
	else
		json_out_null(j);
	json_out_space(j, "\n");
	json_out_key(j, "schema");
	e = array_json_schema(j, dp->array);
	if (e) {
		errorf("cannot describe the schema: %s", tfs_strerror(e));
		return false;
	}
	json_out_space(j, "\n");
	json_out_key(j, "non_empty_domain");
	ned = tfs_callocn(s->dim_num, sizeof(*ned));
	if (!ned) {
		errorf("out of memory");
		return false;
	}
	if (tfs_array_non_empty_domain(dp->array, ned))
		array_json_ranges(j, s, ned);
	else
		json_out_null(j);
	tfs_free(ned);
	json_out_space(j, "\n");
	json_out_key(j, "metadata");
	array_json_metadata(j, dp->array);
	json_out_space(j, "\n");
	json_out_key(j, "fragments");
	array_json_fragments(j, dp->array);
	json_out_space(j, "\n");
	json_out_key(j, "fragments_to_vacuum");
	json_out_begin_array(j);
	for (size_t i = 0; i < tfs_array_vacuum_count(dp->array); i++)
		json_out_cstr(j, tfs_array_vacuum_name(dp->array, i));
	json_out_end_array(j);
	ok = flush(dp) && put_reads(dp);
	json_out_space(j, "\n");
	json_out_end_object(j);
	if (tfs_buf_append_u8(&dp->out, '\n'))
		ok = false;
	return ok && flush(dp);
}

/* The folder's base name: the last non-empty component of path. */
static char *base_name(const char *path)
{
	size_t end = strlen(path), start;

	while (end > 1 && path[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	return tfs_strndup(path + start, end - start);
}

static enum dump_status open_array(const struct dump_opts *o,
				   struct tfs_array **out)
{
	struct tfs_open_opts oo = {.timestamp = o->timestamp,
				   .threads = o->threads};
	uint8_t key[32];
	enum tfs_object kind;
	struct tfs_diag d;
	enum tfs_err e;

	*out = NULL;
	if (o->key_hex) {
		if (tfs_key_from_hex(key, o->key_hex)) {
			errorf("key must be 64 hex digits");
			return DUMP_USAGE;
		}
		oo.key = key;
	}
	tfs_diag_init(&d);
	e = tfs_object_type(NULL, o->path, &kind, &d);
	if (e == TFS_E_NOT_FOUND || e == TFS_E_NOT_ARRAY ||
	    (!e && kind == TFS_OBJECT_NONE)) {
		errorf("'%s' is not a TileDB array or group", o->path);
		return DUMP_NOT_ARRAY;
	}
	if (e) {
		errorf("%s", tfs_diag_msg(&d));
		return DUMP_ERROR;
	}
	if (kind == TFS_OBJECT_GROUP) {
		errorf("'%s' is a TileDB group; tfs dump prints arrays",
		       o->path);
		return DUMP_ERROR;
	}
	e = tfs_array_open(o->path, &oo, out, &d);
	memset(key, 0, sizeof(key));
	if (e) {
		errorf("%s", tfs_diag_msg(&d));
		return DUMP_ERROR;
	}
	return DUMP_OK;
}

enum dump_status dump_run(const struct dump_opts *o)
{
	struct dump dp = {.o = o};
	enum dump_status st;
	char *name;

	st = open_array(o, &dp.array);
	if (st)
		return st;
	name = o->name ? tfs_strdup(o->name) : base_name(o->path);
	if (!name) {
		errorf("out of memory");
		tfs_array_close(dp.array);
		return DUMP_ERROR;
	}
	dp.schema = tfs_array_schema(dp.array);
	tfs_buf_init(&dp.out, TFS_BUF_NO_MAX);
	json_out_init(&dp.j, &dp.out);
	st = put_array(&dp, name) ? DUMP_OK : DUMP_ERROR;
	if (fflush(stdout) != 0 && st == DUMP_OK) {
		errorf("cannot write the output: %s", strerror(errno));
		st = DUMP_ERROR;
	}
	tfs_buf_release(&dp.out);
	tfs_free(name);
	tfs_array_close(dp.array);
	return st;
}
