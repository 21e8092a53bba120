/* The `tfs` command-line tool: subcommands over the public API of the core
 * (SPEC §8). `tfs dump` prints an array or a group as the corpus JSON
 * (corpus/README.md); the others live in cmd_*.c and share cli.h. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dump.h"
#include "tfs_alloc.h"
#include <tilefs/tilefs.h>

static const char usage_text[] =
	"usage: tfs COMMAND [options] ...      (tfs COMMAND --help for each)\n"
	"\n"
	"  info         schema, fragments, metadata, non-empty domain (--json)\n"
	"  dump         the array or group as the corpus JSON, with reads\n"
	"  export       a selection as raw, txt, csv, json or npy\n"
	"  stats        count, nulls, min, max, sum, mean of attributes\n"
	"  create       a new array from a schema JSON file\n"
	"  ingest       a CSV file into an array (--new: into a new array)\n"
	"  delete       delete the cells of a sparse array matching --where COND\n"
	"  consolidate  merge fragments, fragment metadata, commits or metadata\n"
	"  vacuum       remove what consolidation made obsolete\n"
	"  --version    the version\n"
	"\n"
	"exit status: 0 ok, 1 error, 2 usage, 3 not found (no such path, not\n"
	"an array or group), 4 input refused (bad CSV, schema, selection),\n"
	"5 I/O error or corrupt data, 6 missing or wrong key, 7 unsupported\n"
	"format feature, 8 already exists; `tfs dump` uses 0-3 only\n";

static const char dump_usage_text[] =
	"usage: tfs dump PATH [--key HEX] [--timestamp T] "
	"[--subarray lo:hi,...]... [--no-full] [--name NAME] [--threads N]\n"
	"\n"
	"Prints the array at PATH as JSON: schema, non-empty domain,\n"
	"metadata, fragments and reads (the whole non-empty domain, then one\n"
	"read per --subarray, inclusive ranges); a group as its metadata and\n"
	"members, each member dumped in turn.\n"
	"\n"
	"exit status: 0 ok, 1 error, 2 usage, 3 not an array or group\n";

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "tfs: %s\n", why);
	fputs(usage_text, stderr);
	return CLI_USAGE;
}

static int dump_usage(const char *why)
{
	if (why)
		fprintf(stderr, "tfs dump: %s\n", why);
	fputs(dump_usage_text, stderr);
	return DUMP_USAGE;
}

static int cmd_dump(int argc, char **argv)
{
	enum { OPT_KEY = 256, OPT_TIMESTAMP, OPT_SUBARRAY, OPT_NO_FULL,
	       OPT_NAME, OPT_THREADS };
	static const struct option longopts[] = {
		{"key", required_argument, NULL, OPT_KEY},
		{"timestamp", required_argument, NULL, OPT_TIMESTAMP},
		{"subarray", required_argument, NULL, OPT_SUBARRAY},
		{"no-full", no_argument, NULL, OPT_NO_FULL},
		{"name", required_argument, NULL, OPT_NAME},
		{"threads", required_argument, NULL, OPT_THREADS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct dump_opts o = {.full = true};
	const char **subs;
	uint64_t threads;
	int c, status;

	/* Every --subarray fits: at most one per argument. */
	subs = tfs_callocn((size_t)argc, sizeof(*subs));
	if (!subs) {
		fputs("tfs: out of memory\n", stderr);
		return DUMP_ERROR;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_KEY:
			o.key_hex = optarg;
			break;
		case OPT_TIMESTAMP:
			if (!cli_parse_u64(optarg, &o.timestamp)) {
				tfs_free(subs);
				return dump_usage("--timestamp takes milliseconds "
					     "since the epoch");
			}
			o.has_timestamp = true;
			break;
		case OPT_SUBARRAY:
			subs[o.subarray_num++] = optarg;
			break;
		case OPT_NO_FULL:
			o.full = false;
			break;
		case OPT_NAME:
			o.name = optarg;
			break;
		case OPT_THREADS:
			if (!cli_parse_u64(optarg, &threads) || threads > 4096) {
				tfs_free(subs);
				return dump_usage("--threads takes a number of "
					     "threads (0 = one per CPU)");
			}
			o.threads = (unsigned)threads;
			break;
		case 'h':
			tfs_free(subs);
			fputs(dump_usage_text, stdout);
			return DUMP_OK;
		default:
			tfs_free(subs);
			fputs(dump_usage_text, stderr);
			return DUMP_USAGE;
		}
	}
	if (optind + 1 != argc) {
		tfs_free(subs);
		return dump_usage(optind == argc ? "dump needs one PATH"
					    : "dump takes one PATH");
	}
	o.path = argv[optind];
	o.subarrays = subs;
	status = dump_run(&o);
	tfs_free(subs);
	return status;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(NULL);
	if (!strcmp(argv[1], "--version")) {
		printf("tfs %s\n", TILEFS_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage_text, stdout);
		return 0;
	}
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{"dump", cmd_dump},
		{"info", cmd_info},
		{"export", cmd_export},
		{"stats", cmd_stats},
		{"create", cmd_create},
		{"ingest", cmd_ingest},
		{"delete", cmd_delete},
		{"consolidate", cmd_consolidate},
		{"vacuum", cmd_vacuum},
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "tfs: unknown command '%s'\n", argv[1]);
	return usage(NULL);
}
