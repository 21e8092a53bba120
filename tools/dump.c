/* `tfs dump`: the corpus JSON of one array or group (members nested,
 * each array member with one full read), built on the public API only.
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
#include "cli.h"
#include "json_out.h"
#include "tfs_alloc.h"
#include <tilefs/tilefs.h>

#define FLUSH_BYTES ((size_t)1 << 20)

struct dump {
	const struct dump_opts *o;
	const uint8_t *key; /* parsed --key, or NULL */
	struct tfs_array *array;
	/* The storage array was opened with (rooted at it: no symbolic
	 * link inside it is followed) and its path, for close_array. */
	struct tfs_vfs *array_vfs;
	char *array_path;
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

	out->ranges = tfs_callocn(tfs_schema_dim_count(s), sizeof(*out->ranges));
	out->values = tfs_callocn(tfs_schema_dim_count(s), sizeof(*out->values));
	out->text = tfs_strdup(text);
	if (!out->ranges || !out->values || !out->text) {
		errorf("out of memory");
		return false;
	}
	commas = 0;
	for (p = out->text; (p = strchr(p, ',')) != NULL; p++)
		commas++;
	if (commas + 1 != tfs_schema_dim_count(s)) {
		errorf("subarray '%s': %" PRIu32 " ranges lo:hi needed, one per "
		       "dimension",
		       text, tfs_schema_dim_count(s));
		return false;
	}
	p = out->text;
	for (k = 0; k < tfs_schema_dim_count(s); k++) {
		struct tfs_field_info info;
		const struct tfs_field_info *dim = &info;
		char *comma = strchr(p, ',');
		char *colon;

		tfs_schema_dim(s, k, &info);

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

	ned = tfs_callocn(tfs_schema_dim_count(dp->schema), sizeof(*ned));
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
	struct tfs_schema_info si;
	struct tfs_range *ned;
	enum tfs_err e;
	bool ok;

	json_out_begin_object(j);
	json_out_space(j, "\n");
	json_out_key(j, "name");
	json_out_cstr(j, name);
	json_out_space(j, "\n");
	json_out_key(j, "array_type");
	json_out_cstr(j, tfs_schema_is_dense(s) ? "dense" : "sparse");
	json_out_space(j, "\n");
	json_out_key(j, "key_hex");
	if (dp->o->key_hex)
		json_out_cstr(j, dp->o->key_hex);
	else
		json_out_null(j);
	json_out_space(j, "\n");
	json_out_key(j, "format_version");
	tfs_schema_get_info(s, &si);
	json_out_u64(j, si.version);
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
	ned = tfs_callocn(tfs_schema_dim_count(s), sizeof(*ned));
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

/* Closes dp->array and what open_array_at made for it. */
static void close_array(struct dump *dp)
{
	tfs_array_close(dp->array);
	tfs_vfs_free(dp->array_vfs);
	tfs_free(dp->array_path);
	dp->array = NULL;
	dp->array_vfs = NULL;
	dp->array_path = NULL;
}

/* Opens the array at path with the dump's key and time; false (reported)
 * on failure. */
static bool open_array_at(struct dump *dp, const char *path,
			  struct tfs_array **out)
{
	struct tfs_open_opts oo = {.key = dp->key,
				   .timestamp = dp->o->timestamp,
				   .threads = dp->o->threads};
	struct tfs_diag d;

	tfs_diag_init(&d);
	if (!cli_rooted(path, false, &dp->array_vfs, &dp->array_path)) {
		errorf("out of memory");
		return false;
	}
	oo.vfs = dp->array_vfs;
	if (tfs_array_open(dp->array_path, &oo, out, &d)) {
		errorf("%s", tfs_diag_msg(&d));
		tfs_vfs_free(dp->array_vfs);
		tfs_free(dp->array_path);
		dp->array_vfs = NULL;
		dp->array_path = NULL;
		return false;
	}
	return true;
}

/* ---- Groups --------------------------------------------------------------- */

/* Groups nest at most this deep (a group naming itself or an ancestor would
 * recurse forever; the JSON writer's depth is bounded too). */
#define GROUP_DEPTH_MAX 6

static bool put_group(struct dump *dp, const char *path, const char *name,
		      unsigned depth);

/* The content of a member: its array or group JSON, or null (with a
 * warning) when its folder cannot be reached or holds no TileDB object. */
static bool put_member_content(struct dump *dp, const char *group_path,
			       const struct tfs_group_member *m, unsigned depth)
{
	const char *name = m->name ? m->name : m->uri;
	enum tfs_object kind = TFS_OBJECT_NONE;
	struct tfs_diag d;
	enum tfs_err e;
	bool ok;

	/* An unnamed member shows as the last part of its uri. */
	if (!m->name && strrchr(m->uri, '/') && strrchr(m->uri, '/')[1])
		name = strrchr(m->uri, '/') + 1;
	tfs_diag_init(&d);
	e = m->path ? tfs_object_type(NULL, m->path, &kind, &d)
		    : TFS_E_NOT_FOUND;
	if (e && e != TFS_E_NOT_FOUND) {
		errorf("%s", tfs_diag_msg(&d));
		return false;
	}
	if (kind == TFS_OBJECT_NONE) {
		errorf("warning: group '%s': member '%s' (%s) is not an array "
		       "or group here; content is null",
		       group_path, m->key, m->uri);
		json_out_null(&dp->j);
		return true;
	}
	if (kind == TFS_OBJECT_GROUP) {
		if (depth + 1 > GROUP_DEPTH_MAX) {
			errorf("group '%s': member '%s': groups nested deeper "
			       "than %d (does a member name an enclosing "
			       "group?)",
			       group_path, m->key, GROUP_DEPTH_MAX);
			return false;
		}
		return put_group(dp, m->path, name, depth + 1);
	}
	if (!open_array_at(dp, m->path, &dp->array))
		return false;
	dp->schema = tfs_array_schema(dp->array);
	ok = put_array(dp, name);
	close_array(dp);
	dp->schema = NULL;
	return ok;
}

/* {"name", "object": "group", "metadata", "members": [{"name", "type",
 * "relative", "path" (the uri as stored), "content"}]}, members in key
 * order (the name when set). */
static bool put_group(struct dump *dp, const char *path, const char *name,
		      unsigned depth)
{
	struct tfs_group_opts go = {.key = dp->key,
				    .timestamp = dp->o->timestamp};
	struct json_out *j = &dp->j;
	struct tfs_group *g;
	struct tfs_diag d;
	bool ok = true;

	tfs_diag_init(&d);
	if (tfs_group_open(path, &go, &g, &d)) {
		errorf("%s", tfs_diag_msg(&d));
		return false;
	}
	json_out_begin_object(j);
	json_out_space(j, "\n");
	json_out_key(j, "name");
	json_out_cstr(j, name);
	json_out_key(j, "object");
	json_out_cstr(j, "group");
	json_out_space(j, "\n");
	json_out_key(j, "metadata");
	json_out_begin_object(j);
	for (size_t i = 0; i < tfs_group_metadata_count(g); i++)
		array_json_meta_entry(j, tfs_group_metadata(g, i));
	json_out_end_object(j);
	json_out_space(j, "\n");
	json_out_key(j, "members");
	json_out_begin_array(j);
	for (size_t i = 0; ok && i < tfs_group_member_count(g); i++) {
		const struct tfs_group_member *m = tfs_group_member(g, i);

		json_out_space(j, "\n");
		json_out_begin_object(j);
		json_out_key(j, "name");
		if (m->name)
			json_out_cstr(j, m->name);
		else
			json_out_null(j);
		json_out_key(j, "type");
		json_out_cstr(j, m->type == TFS_OBJECT_GROUP ? "group"
							     : "array");
		json_out_key(j, "relative");
		json_out_bool(j, m->relative);
		json_out_key(j, "path");
		json_out_cstr(j, m->uri);
		json_out_key(j, "content");
		ok = put_member_content(dp, tfs_group_path(g), m, depth) &&
		     maybe_flush(dp);
		json_out_end_object(j);
	}
	json_out_space(j, "\n");
	json_out_end_array(j);
	json_out_end_object(j);
	tfs_group_close(g);
	return ok && flush(dp);
}

/* ---- The run -------------------------------------------------------------- */

enum dump_status dump_run(const struct dump_opts *o)
{
	struct dump dp = {.o = o};
	/* Members of a group get one full read each (none with --no-full). */
	struct dump_opts member_opts = *o;
	uint8_t key[32];
	enum tfs_object kind;
	enum dump_status st;
	struct tfs_diag d;
	enum tfs_err e;
	char *name;

	if (o->key_hex) {
		if (tfs_key_from_hex(key, o->key_hex)) {
			errorf("key must be 64 hex digits");
			return DUMP_USAGE;
		}
		dp.key = key;
	}
	tfs_diag_init(&d);
	e = tfs_object_type(NULL, o->path, &kind, &d);
	if (e == TFS_E_NOT_FOUND || e == TFS_E_NOT_ARRAY ||
	    (!e && kind == TFS_OBJECT_NONE)) {
		errorf("'%s' is not a TileDB array or group", o->path);
		st = DUMP_NOT_ARRAY;
		goto out_key;
	}
	if (e) {
		errorf("%s", tfs_diag_msg(&d));
		st = DUMP_ERROR;
		goto out_key;
	}
	if (kind == TFS_OBJECT_GROUP && o->subarray_num) {
		errorf("'%s' is a group: --subarray reads arrays only",
		       o->path);
		st = DUMP_USAGE;
		goto out_key;
	}
	if (kind == TFS_OBJECT_ARRAY &&
	    !open_array_at(&dp, o->path, &dp.array)) {
		st = DUMP_ERROR;
		goto out_key;
	}
	name = o->name ? tfs_strdup(o->name) : base_name(o->path);
	if (!name) {
		errorf("out of memory");
		close_array(&dp);
		st = DUMP_ERROR;
		goto out_key;
	}
	tfs_buf_init(&dp.out, TFS_BUF_NO_MAX);
	json_out_init(&dp.j, &dp.out);
	if (kind == TFS_OBJECT_GROUP) {
		member_opts.subarrays = NULL;
		member_opts.subarray_num = 0;
		dp.o = &member_opts;
		st = put_group(&dp, o->path, name, 0) ? DUMP_OK : DUMP_ERROR;
	} else {
		dp.schema = tfs_array_schema(dp.array);
		st = put_array(&dp, name) ? DUMP_OK : DUMP_ERROR;
	}
	if (st == DUMP_OK &&
	    (tfs_buf_append_u8(&dp.out, '\n') || !flush(&dp)))
		st = DUMP_ERROR;
	if (fflush(stdout) != 0 && st == DUMP_OK) {
		errorf("cannot write the output: %s", strerror(errno));
		st = DUMP_ERROR;
	}
	tfs_buf_release(&dp.out);
	tfs_free(name);
	close_array(&dp);
out_key:
	memset(key, 0, sizeof(key));
	return st;
}
