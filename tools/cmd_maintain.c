/* `tfs consolidate` and `tfs vacuum` (format/consolidated.md): merge the
 * fragments, fragment metadata, commits or array metadata of an array,
 * then remove what that made obsolete. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tfs_alloc.h"

static const char consolidate_usage[] =
	"usage: tfs consolidate PATH [--mode MODE] [--start T] [--end T]\n"
	"                       [--key HEX] [--threads N]\n"
	"\n"
	"Consolidates the array at PATH as TileDB does; readers see the same\n"
	"cells before and after, at every time (but cells that a delete\n"
	"removed: those are dropped, and time travel to before the delete no\n"
	"longer sees them), and readers that have the array open keep\n"
	"working. Nothing is removed: see `tfs vacuum`.\n"
	"\n"
	"  --mode fragments       (default) the cells of the fragments whose\n"
	"                         time range lies in [start, end] become one\n"
	"                         fragment named with their whole time range,\n"
	"                         plus a .vac file listing them\n"
	"  --mode fragment-meta   the footers of every fragment in one\n"
	"                         __fragment_meta/*.meta file (faster opening)\n"
	"  --mode commits         the commit files in one __commits/*.con file\n"
	"  --mode array-meta      the __meta/ files in one, plus a .vac file\n"
	"  --start T, --end T     fragments mode: the time range (ms since the\n"
	"                         epoch or ISO-8601; default: every fragment)\n"
	"  --key HEX              AES-256 key of an encrypted array\n"
	"  --threads N            encoding threads (default: one per CPU)\n"
	"\n"
	"Prints the name of what was written (nothing when there was nothing\n"
	"to consolidate).\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 not an array, 4 refused (the range\n"
	"interleaves with other fragments), 5 I/O or corrupt, 6 key,\n"
	"7 unsupported (a filter without an encoder, an old format version)\n";

static const char vacuum_usage[] =
	"usage: tfs vacuum PATH [--mode MODE] [--key HEX]\n"
	"\n"
	"Removes what consolidation of MODE made obsolete, and nothing else:\n"
	"\n"
	"  --mode fragments       (default) the fragments listed in .vac files,\n"
	"                         their commits, then the .vac files\n"
	"  --mode fragment-meta   every __fragment_meta/*.meta file but the\n"
	"                         newest\n"
	"  --mode commits         the commit files that a .con file lists (and\n"
	"                         older .con files that a newer one contains)\n"
	"  --mode array-meta      the __meta/ files listed in .vac files, then\n"
	"                         the .vac files\n"
	"\n"
	"Time travel to before the consolidated range is lost with the removed\n"
	"fragments. Prints the number of objects removed.\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 not an array, 5 I/O, 6 key\n";

static bool parse_mode(const char *text, enum tfs_consolidate_mode *out)
{
	static const struct {
		const char *name;
		enum tfs_consolidate_mode mode;
	} modes[] = {
		{"fragments", TFS_CONSOLIDATE_FRAGMENTS},
		{"fragment-meta", TFS_CONSOLIDATE_FRAGMENT_META},
		{"fragment_meta", TFS_CONSOLIDATE_FRAGMENT_META},
		{"commits", TFS_CONSOLIDATE_COMMITS},
		{"array-meta", TFS_CONSOLIDATE_ARRAY_META},
		{"array_meta", TFS_CONSOLIDATE_ARRAY_META},
	};

	for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++) {
		if (!strcmp(text, modes[i].name)) {
			*out = modes[i].mode;
			return true;
		}
	}
	return false;
}

/* Parses the options into c, co and *mode; returns -1 to go on, else the
 * exit status. */
static int run_options(bool vacuum, int argc, char **argv,
		       struct cli_common *c, struct tfs_consolidate_opts *co,
		       enum tfs_consolidate_mode *mode)
{
	const char *cmd = vacuum ? "vacuum" : "consolidate";
	enum { OPT_KEY = 256, OPT_THREADS, OPT_MODE, OPT_START, OPT_END };
	static const struct option longopts[] = {
		{"key", required_argument, NULL, OPT_KEY},
		{"threads", required_argument, NULL, OPT_THREADS},
		{"mode", required_argument, NULL, OPT_MODE},
		{"start", required_argument, NULL, OPT_START},
		{"end", required_argument, NULL, OPT_END},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_KEY:
			if (!cli_parse_key(cmd, c, optarg))
				return CLI_USAGE;
			break;
		case OPT_THREADS:
			if (vacuum)
				return cli_usage(cmd, "unknown option");
			if (!cli_parse_threads(cmd, c, optarg))
				return CLI_USAGE;
			break;
		case OPT_MODE:
			if (!parse_mode(optarg, mode))
				return cli_usage(cmd, "--mode is fragments, "
						      "fragment-meta, commits "
						      "or array-meta");
			break;
		case OPT_START:
		case OPT_END:
			if (vacuum)
				return cli_usage(cmd, "unknown option");
			if (!cli_parse_timestamp(cmd, c, optarg))
				return CLI_USAGE;
			*(opt == OPT_START ? &co->start : &co->end) = c->timestamp;
			c->timestamp = 0;
			break;
		case 'h':
			fputs(vacuum ? vacuum_usage : consolidate_usage, stdout);
			return CLI_OK;
		default:
			return cli_usage(cmd, "unknown option");
		}
	}
	return -1;
}

/* The one PATH and a consistent time range; NULL when fine, else why. */
static const char *run_args_problem(int argc,
				    const struct tfs_consolidate_opts *co,
				    enum tfs_consolidate_mode mode)
{
	if (optind + 1 != argc)
		return "takes one PATH";
	if ((co->start || co->end) && mode != TFS_CONSOLIDATE_FRAGMENTS)
		return "--start and --end are for fragments";
	if (co->end && co->start > co->end)
		return "--start is after --end";
	return NULL;
}

static int run(bool vacuum, int argc, char **argv)
{
	const char *cmd = vacuum ? "vacuum" : "consolidate";
	enum tfs_consolidate_mode mode = TFS_CONSOLIDATE_FRAGMENTS;
	struct tfs_consolidate_opts co = {0};
	char *path = NULL;
	struct cli_common c = {0};
	char made[256] = "";
	unsigned removed = 0;
	const char *why;
	struct tfs_diag d;
	enum tfs_err e;
	int st;

	st = run_options(vacuum, argc, argv, &c, &co, &mode);
	if (st >= 0)
		return st;
	if ((why = run_args_problem(argc, &co, mode))) {
		cli_common_release(&c);
		return cli_usage(cmd, why);
	}
	co.write.key = c.has_key ? c.key : NULL;
	co.write.threads = c.threads;
	tfs_diag_init(&d);
	/* No symbolic link inside the array is followed. */
	if (!cli_rooted(argv[optind], false, &co.write.vfs, &path))
		e = tfs_fail(&d, TFS_E_NOMEM, "out of memory");
	else if (vacuum)
		e = tfs_array_vacuum(path, mode, &co.write, &removed, &d);
	else
		e = tfs_array_consolidate(path, mode, &co, made, sizeof(made),
					  &d);
	tfs_vfs_free(co.write.vfs);
	tfs_free(path);
	cli_common_release(&c);
	if (e)
		return cli_fail(cmd, &d, e);
	if (vacuum)
		printf("%u\n", removed);
	else if (made[0])
		printf("%s\n", made);
	return CLI_OK;
}

int cmd_consolidate(int argc, char **argv)
{
	return run(false, argc, argv);
}

int cmd_vacuum(int argc, char **argv)
{
	return run(true, argc, argv);
}
