/* `tfs stats`: count, null count, min, max, sum and mean of attributes
 * over a selection and a filter, exactly the stats.json the mount shows
 * (render/stats.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "stats.h"
#include "tfs_alloc.h"
#include "where.h"

static const char stats_usage[] =
	"usage: tfs stats PATH [SEL] [--field NAME] [--where COND] [--key HEX]\n"
	"                 [--timestamp T] [--threads N]\n"
	"\n"
	"Prints count, null_count, min, max, sum and mean of the attribute\n"
	"NAME (default: an object with every attribute) over selection SEL\n"
	"(as for export, without steps) and the cells matching COND, as the\n"
	"mount shows A/[where[COND]/]NAME/[slice[SEL].]stats.json.\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 no such array or attribute, 4 bad\n"
	"selection or filter, 5 I/O or corrupt data, 6 key\n";

struct stats_opts {
	const char *path, *sel, *field, *where;
	struct cli_common c;
};

static int run_stats(const struct stats_opts *o)
{
	unsigned threads = o->c.threads ? o->c.threads : tfs_cpu_count();
	struct tfs_open_opts oo = {.key = o->c.has_key ? o->c.key : NULL,
				   .timestamp = o->c.timestamp,
				   .threads = threads};
	struct tfs_where *where = NULL;
	struct tfs_vfs *vfs = NULL;
	struct tfs_array *a = NULL;
	struct tfs_buf out;
	struct tfs_diag d;
	char *path = NULL;
	enum tfs_err e;
	int field = -1, st;

	tfs_diag_init(&d);
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	if (!cli_rooted(o->path, false, &vfs, &path)) {
		st = cli_fail("stats", &d,
			      tfs_fail(&d, TFS_E_NOMEM, "out of memory"));
		goto out;
	}
	oo.vfs = vfs;
	e = tfs_array_open(path, &oo, &a, &d);
	if (!e && o->field) {
		const struct tfs_schema *s = tfs_array_schema(a);

		field = tfs_schema_field_index(s, o->field);
		if (field < (int)tfs_schema_dim_count(s))
			e = tfs_fail(&d, TFS_E_NOT_FOUND,
				     "array '%s' has no attribute '%s'",
				     o->path, o->field);
	}
	if (!e && o->where)
		e = tfsr_where_parse(tfs_array_schema(a), a, o->where,
				     strlen(o->where), &where, NULL, &d);
	if (!e)
		e = tfsr_doc_stats(&out, a, field, o->sel, strlen(o->sel),
				   where, &d);
	if (!e && fwrite(out.data, 1, out.len, stdout) != out.len)
		e = tfs_fail(&d, TFS_E_IO, "cannot write the output");
	st = e ? cli_fail("stats", &d, e) : CLI_OK;
out:
	tfs_where_free(where);
	tfs_array_close(a);
	tfs_vfs_free(vfs);
	tfs_free(path);
	tfs_buf_release(&out);
	return st;
}

int cmd_stats(int argc, char **argv)
{
	enum { OPT_FIELD = CLI_OPT_OWN, OPT_WHERE };
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{"field", required_argument, NULL, OPT_FIELD},
		{"where", required_argument, NULL, OPT_WHERE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct stats_opts o = {.sel = ""};
	int opt, st;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		int common = cli_common_opt("stats", &o.c, opt, optarg);

		if (common < 0)
			return CLI_USAGE;
		if (common > 0)
			continue;
		switch (opt) {
		case OPT_FIELD:
			o.field = optarg;
			break;
		case OPT_WHERE:
			o.where = optarg;
			break;
		case 'h':
			fputs(stats_usage, stdout);
			return CLI_OK;
		default:
			return cli_usage("stats", "unknown option");
		}
	}
	if (optind >= argc || argc - optind > 2) {
		cli_common_release(&o.c);
		return cli_usage("stats", "stats takes PATH and maybe SEL");
	}
	o.path = argv[optind];
	if (optind + 1 < argc)
		o.sel = argv[optind + 1];
	st = run_stats(&o);
	cli_common_release(&o.c);
	return st;
}
