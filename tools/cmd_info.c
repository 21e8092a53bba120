/* `tfs info`: what an array is, at a glance (text) or as JSON (the corpus
 * JSON of `tfs dump` without reads): schema, non-empty domain, fragments
 * with their time ranges, what vacuum would remove, and metadata. Groups
 * show their members and metadata. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "dump.h"
#include "tfs_alloc.h"
#include "tfs_datatype.h"
#include "tfs_render.h"
#include "value_text.h"

static const char info_usage[] =
	"usage: tfs info PATH [--json] [--key HEX] [--timestamp T]\n"
	"\n"
	"Describes the array (or group) at PATH: type, dimensions and\n"
	"attributes, non-empty domain, fragments (time range, cells, dense or\n"
	"sparse; '*' marks the ones visible at the opening time), fragments\n"
	"that vacuum would remove, and metadata.\n"
	"\n"
	"  --json         the corpus JSON of `tfs dump` without any read\n"
	"  --key HEX      AES-256 key (64 hex digits) of an encrypted array\n"
	"  --timestamp T  open as of T (ms since the epoch or ISO-8601 UTC)\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 not found, 5 I/O or corrupt, 6 key\n";

static const char *order_name(uint8_t o)
{
	switch (o) {
	case TFS_ROW_MAJOR:
		return "row-major";
	case TFS_COL_MAJOR:
		return "col-major";
	case TFS_HILBERT:
		return "hilbert";
	default:
		return "unordered";
	}
}

/* Values of one type as text ("1 2 3", a string, ISO times), through the
 * mount's own value renderer. */
static void put_values(struct tfs_buf *b, uint8_t type, const void *p,
		       uint64_t len, uint32_t num)
{
	struct tfs_column c = {.name = "", .type = type, .cell_val_num = num,
			       .data = p, .data_len = len};

	if (num == 0) {
		if (tfs_buf_append(b, "(none)", 6))
			return;
		return;
	}
	if (tfsr_cell_text(b, &c, 0, TFSR_TEXT_TXT, NULL))
		b->len = 0;
}

static void print_range(const struct tfs_schema *s, uint32_t k,
			const struct tfs_range *r)
{
	struct tfs_field_info info;
	const struct tfs_field_info *dim = &info;
	struct tfs_buf b;

	tfs_schema_dim(s, k, &info);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	if (dim->var) {
		printf("[\"%.*s\", \"%.*s\"]", (int)r->lo_len,
		       (const char *)r->lo, (int)r->hi_len,
		       (const char *)r->hi);
		return;
	}
	put_values(&b, dim->type, r->lo, tfs_datatype_size(dim->type), 1);
	printf("[%.*s, ", (int)b.len, b.data ? (const char *)b.data : "");
	b.len = 0;
	put_values(&b, dim->type, r->hi, tfs_datatype_size(dim->type), 1);
	printf("%.*s]", (int)b.len, b.data ? (const char *)b.data : "");
	tfs_buf_release(&b);
}

static void print_box(const struct tfs_schema *s, const struct tfs_range *r)
{
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		if (k)
			fputs(" × ", stdout);
		print_range(s, k, &r[k]);
	}
}

/* ", filters ZSTD(level=3) BYTESHUFFLE" as the corpus JSON names them. */
static void print_pipeline_len(const struct tfs_schema *s, uint32_t field)
{
	uint32_t n = tfs_schema_filter_count(s, TFS_FILTERS_OF_FIELD, field);
	struct tfs_buf b;

	if (!n)
		return;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	fputs(", filters", stdout);
	for (uint32_t i = 0; i < n; i++) {
		b.len = 0;
		if (tfs_schema_filter_describe(s, TFS_FILTERS_OF_FIELD, field,
					       i, &b) == TFS_E_OK)
			printf(" %.*s", (int)b.len, (const char *)b.data);
		else
			fputs(" ?", stdout);
	}
	tfs_buf_release(&b);
}

static void print_meta(const struct tfs_meta_kv *kv)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	put_values(&b, kv->type, kv->value,
		   (uint64_t)kv->value_num * tfs_datatype_size(kv->type),
		   kv->value_num);
	printf("  %.*s = %.*s  (%s)\n", (int)kv->key_len, kv->key, (int)b.len,
	       b.data ? (const char *)b.data : "", tfs_datatype_name(kv->type));
	tfs_buf_release(&b);
}

static void print_dim(const struct tfs_schema *s, uint32_t k)
{
	struct tfs_field_info info;
	const struct tfs_field_info *dim = &info;

	tfs_schema_dim(s, k, &info);
	printf("dimension  %s %s", dim->name, tfs_datatype_name(dim->type));
	if (dim->has_domain) {
		struct tfs_range r = {.lo = dim->domain_lo,
				      .hi = dim->domain_hi};

		fputs(" domain ", stdout);
		print_range(s, k, &r);
	}
	if (dim->has_extent) {
		struct tfs_buf b;

		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		put_values(&b, dim->type, dim->extent,
			   tfs_datatype_size(dim->type), 1);
		printf(" tile %.*s", (int)b.len,
		       b.data ? (const char *)b.data : "");
		tfs_buf_release(&b);
	}
	print_pipeline_len(s, k);
	putchar('\n');
}

static void print_attr(const struct tfs_schema *s, uint32_t i)
{
	struct tfs_field_info info;
	const struct tfs_field_info *at = &info;

	tfs_schema_attr(s, i, &info);
	printf("attribute  %s %s", at->name, tfs_datatype_name(at->type));
	if (at->var)
		fputs(" var", stdout);
	else if (at->cell_val_num != 1)
		printf(" ×%" PRIu32, at->cell_val_num);
	if (at->nullable)
		fputs(" nullable", stdout);
	if (at->enumeration)
		printf(" enumeration %s", at->enumeration);
	print_pipeline_len(s, tfs_schema_dim_count(s) + i);
	putchar('\n');
}

static void print_fragments(const struct tfs_array *a,
			    const struct tfs_schema *s)
{
	size_t nfrag = tfs_array_fragment_count(a), visible = 0;
	char t1[48], t2[48];

	for (size_t i = 0; i < nfrag; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		visible += f.visible;
	}
	printf("fragments  %zu (%zu visible)\n", nfrag, visible);
	for (size_t i = 0; i < nfrag; i++) {
		struct tfs_fragment_info f;

		tfs_array_fragment(a, i, &f);
		tfsr_format_time(t1, sizeof(t1), f.t1);
		tfsr_format_time(t2, sizeof(t2), f.t2);
		printf(" %c %s\n     %s .. %s, v%" PRIu32 ", %s, %" PRIu64
		       " cells%s, ",
		       f.visible ? '*' : ' ', f.name, t1, t2, f.version,
		       f.dense ? "dense" : "sparse", f.cell_num,
		       f.consolidated_metadata ? ", consolidated metadata" : "");
		if (f.non_empty_domain)
			print_box(s, f.non_empty_domain);
		putchar('\n');
	}
}

static void print_vacuum_and_metadata(const struct tfs_array *a)
{
	if (tfs_array_vacuum_count(a)) {
		printf("vacuum     %zu fragment%s consolidated away:\n",
		       tfs_array_vacuum_count(a),
		       tfs_array_vacuum_count(a) == 1 ? "" : "s");
		for (size_t i = 0; i < tfs_array_vacuum_count(a); i++)
			printf("   %s\n", tfs_array_vacuum_name(a, i));
	}
	printf("metadata   %zu key%s\n", tfs_array_metadata_count(a),
	       tfs_array_metadata_count(a) == 1 ? "" : "s");
	for (size_t i = 0; i < tfs_array_metadata_count(a); i++)
		print_meta(tfs_array_metadata(a, i));
}

static void print_array(const char *path, const struct tfs_array *a)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	const struct tfs_range *cur = tfs_schema_current_domain(s, 0);
	struct tfs_schema_info si;
	struct tfs_range ned[TFSR_MAX_DIMS];

	tfs_schema_get_info(s, &si);
	printf("array      %s\n", path);
	printf("type       %s, format version %" PRIu32
	       ", cells %s, tiles %s, capacity %" PRIu64 "%s\n",
	       tfs_schema_is_dense(s) ? "dense" : "sparse", si.version,
	       order_name(si.cell_order), order_name(si.tile_order),
	       si.capacity, si.allows_dups ? ", duplicates allowed" : "");
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++)
		print_dim(s, k);
	for (uint32_t i = 0; i < tfs_schema_attr_count(s); i++)
		print_attr(s, i);
	if (cur) {
		fputs("current    ", stdout);
		print_box(s, cur);
		putchar('\n');
	}
	for (size_t i = 0; i < tfs_array_enumeration_count(a); i++) {
		const struct tfs_enumeration *en = tfs_array_enumeration(a, i);

		printf("enumeration %s %s, %" PRIu64 " values%s\n", en->name,
		       tfs_datatype_name(en->type), en->value_num,
		       en->ordered ? ", ordered" : "");
	}
	fputs("non-empty  ", stdout);
	if (tfs_schema_dim_count(s) <= TFSR_MAX_DIMS && tfs_array_non_empty_domain(a, ned))
		print_box(s, ned);
	else
		fputs("(empty)", stdout);
	putchar('\n');
	print_fragments(a, s);
	print_vacuum_and_metadata(a);
}

static int info_group(const char *path, const struct cli_common *c)
{
	struct tfs_group_opts go = {.key = c->has_key ? c->key : NULL,
				    .timestamp = c->timestamp};
	struct tfs_group *g;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_group_open(path, &go, &g, &d);
	if (e)
		return cli_fail("info", &d, e);
	printf("group      %s\n", path);
	printf("members    %zu\n", tfs_group_member_count(g));
	for (size_t i = 0; i < tfs_group_member_count(g); i++) {
		const struct tfs_group_member *m = tfs_group_member(g, i);

		printf("  %-5s %s -> %s%s\n",
		       m->type == TFS_OBJECT_GROUP ? "group" : "array", m->key,
		       m->uri, m->relative ? " (relative)" : "");
	}
	printf("metadata   %zu key%s\n", tfs_group_metadata_count(g),
	       tfs_group_metadata_count(g) == 1 ? "" : "s");
	for (size_t i = 0; i < tfs_group_metadata_count(g); i++)
		print_meta(tfs_group_metadata(g, i));
	tfs_group_close(g);
	return CLI_OK;
}

/* Parses the options into c and *json; returns -1 to go on, else the exit
 * status. */
static int info_options(int argc, char **argv, struct cli_common *c,
			bool *json)
{
	enum { OPT_KEY = 256, OPT_TIMESTAMP, OPT_JSON };
	static const struct option longopts[] = {
		{"key", required_argument, NULL, OPT_KEY},
		{"timestamp", required_argument, NULL, OPT_TIMESTAMP},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_KEY:
			if (!cli_parse_key("info", c, optarg))
				return CLI_USAGE;
			break;
		case OPT_TIMESTAMP:
			if (!cli_parse_timestamp("info", c, optarg))
				return CLI_USAGE;
			break;
		case OPT_JSON:
			*json = true;
			break;
		case 'h':
			fputs(info_usage, stdout);
			return CLI_OK;
		default:
			return cli_usage("info", "unknown option");
		}
	}
	if (optind + 1 != argc)
		return cli_usage("info", "info takes one PATH");
	return -1;
}

/* --json: the dump of the object. An array is opened first so that
 * failures get this tool's statuses (dump says 1 for every error). */
static int info_json(const char *path, const struct cli_common *c,
		     enum tfs_object kind)
{
	struct dump_opts o = {.path = path, .key_hex = c->key_hex,
			      .timestamp = c->timestamp,
			      .has_timestamp = c->timestamp != 0};
	struct tfs_open_opts oo = {.key = c->has_key ? c->key : NULL,
				   .timestamp = c->timestamp, .threads = 1};
	struct tfs_array *a;
	struct tfs_diag d;
	enum tfs_err e;

	if (kind == TFS_OBJECT_ARRAY) {
		tfs_diag_init(&d);
		e = tfs_array_open(path, &oo, &a, &d);
		if (e)
			return cli_fail("info", &d, e);
		tfs_array_close(a);
	}
	return dump_run(&o);
}

/* The summary of an array, opened without following any symbolic link
 * inside it. */
static int info_array(const char *arg, const struct cli_common *c)
{
	struct tfs_open_opts oo = {.key = c->has_key ? c->key : NULL,
				   .timestamp = c->timestamp, .threads = 1};
	struct tfs_array *a = NULL;
	struct tfs_vfs *vfs = NULL;
	char *path = NULL;
	struct tfs_diag d;
	enum tfs_err e = TFS_E_OK;

	tfs_diag_init(&d);
	if (!cli_rooted(arg, false, &vfs, &path))
		e = tfs_fail(&d, TFS_E_NOMEM, "out of memory");
	oo.vfs = vfs;
	if (!e)
		e = tfs_array_open(path, &oo, &a, &d);
	if (e) {
		tfs_vfs_free(vfs);
		tfs_free(path);
		return cli_fail("info", &d, e);
	}
	print_array(arg, a);
	tfs_array_close(a);
	tfs_vfs_free(vfs);
	tfs_free(path);
	if (fflush(stdout) != 0) {
		cli_errorf("info", "cannot write the output");
		return CLI_IO;
	}
	return CLI_OK;
}

int cmd_info(int argc, char **argv)
{
	struct cli_common c = {0};
	bool json = false;
	enum tfs_object kind;
	struct tfs_diag d;
	enum tfs_err e;
	int st;

	st = info_options(argc, argv, &c, &json);
	if (st >= 0)
		return st;
	tfs_diag_init(&d);
	e = tfs_object_type(NULL, argv[optind], &kind, &d);
	if (!e && kind == TFS_OBJECT_NONE)
		e = tfs_fail(&d, TFS_E_NOT_ARRAY,
			     "'%s' is not a TileDB array or group",
			     argv[optind]);
	if (e) {
		cli_common_release(&c);
		return cli_fail("info", &d, e);
	}
	if (json)
		st = info_json(argv[optind], &c, kind);
	else if (kind == TFS_OBJECT_GROUP)
		st = info_group(argv[optind], &c);
	else
		st = info_array(argv[optind], &c);
	cli_common_release(&c);
	return st;
}
