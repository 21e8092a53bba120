/* `tfs create`, `tfs ingest` and `tfs delete`: new arrays from a schema
 * JSON file, CSV files into arrays (SPEC §6) through the core's writer,
 * and cells deleted by condition. Ingest shows
 * a progress bar with rate and ETA when stderr is a terminal and says
 * nothing otherwise; a refused file leaves the array as it was and exits
 * non-zero with the file, line, column and reason. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tfs_alloc.h"
#include "where.h"

static const char create_usage[] =
	"usage: tfs create PATH SCHEMA.json [--key HEX]\n"
	"\n"
	"Creates an array at PATH (a new or empty folder) with the schema in\n"
	"SCHEMA.json: the shape `tfs info --json` and the mount's schema.json\n"
	"show (\"schema\" of the dump, or the object itself); missing optional\n"
	"parts get TileDB's defaults. Format version 22. Its enumerations are\n"
	"written with the array.\n"
	"\n"
	"  --key HEX   AES-256 key (64 hex digits): the array is encrypted\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 SCHEMA.json not found, 4 schema refused\n"
	"(the message names the JSON path of the problem), 5 I/O, 8 PATH exists\n";

static const char ingest_usage[] =
	"usage: tfs ingest PATH FILE.csv [--new] [--key HEX] [--dedup]\n"
	"                  [--threads N] [--memory SIZE_MB] [--quiet]\n"
	"\n"
	"Writes the rows of FILE.csv into the array at PATH as one new fragment\n"
	"(committed last: a refused file leaves the array as it was). The\n"
	"header names the columns: every dimension and every attribute except\n"
	"nullable ones, in any order. An attribute with an enumeration takes\n"
	"the enumeration's values as `tfs export` shows them; a value it lacks\n"
	"refuses the file.\n"
	"\n"
	"  --new          create PATH with a schema inferred from the file:\n"
	"                 columns int64, float64, string, datetime or bool\n"
	"                 (nullable where a value is empty), a dense uint64\n"
	"                 dimension `row` from 0, ZSTD\n"
	"  --key HEX      AES-256 key (64 hex digits) of an encrypted array\n"
	"  --dedup        arrays without duplicates: keep the last of equal\n"
	"                 coordinates instead of refusing the file\n"
	"  --threads N    encoding threads (default: one per CPU)\n"
	"  --memory MB    memory for sorting before spilling to disk\n"
	"  --quiet        no progress bar even on a terminal\n"
	"\n"
	"A progress bar (bytes, rows, rate, ETA) is drawn on stderr when it is\n"
	"a terminal.\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 PATH or FILE not found, 4 the file was\n"
	"refused (message: FILE: line L, column C ('NAME'): why), 5 I/O,\n"
	"6 key, 7 a filter of the schema cannot be written, 8 --new and PATH\n"
	"exists\n";

/* ---- create ------------------------------------------------------------- */

int cmd_create(int argc, char **argv)
{
	enum { OPT_KEY = 256 };
	static const struct option longopts[] = {
		{"key", required_argument, NULL, OPT_KEY},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_common c = {0};
	struct tfs_write_opts wo = {0};
	struct tfs_schema *schema;
	struct tfs_diag d;
	enum tfs_err e;
	uint8_t *json;
	size_t len;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_KEY:
			if (!cli_parse_key("create", &c, optarg))
				return CLI_USAGE;
			break;
		case 'h':
			fputs(create_usage, stdout);
			return CLI_OK;
		default:
			return cli_usage("create", "unknown option");
		}
	}
	if (optind + 2 != argc) {
		cli_common_release(&c);
		return cli_usage("create", "create takes PATH and SCHEMA.json");
	}
	tfs_diag_init(&d);
	{
		struct tfs_vfs *vfs;

		e = tfs_vfs_posix_new(&vfs);
		if (!e) {
			e = tfs_vfs_read_all(vfs, argv[optind + 1],
					     (size_t)64 << 20, &json, &len,
					     &d);
			tfs_vfs_free(vfs);
		}
	}
	if (e) {
		cli_common_release(&c);
		return cli_fail("create", &d, e);
	}
	e = tfs_schema_from_json_new((const char *)json, len, &schema, &d);
	tfs_free(json);
	if (e) {
		cli_common_release(&c);
		return cli_fail("create", &d, e);
	}
	wo.key = c.has_key ? c.key : NULL;
	{
		char *path;

		/* No symbolic link below the folder that holds it. */
		if (!cli_rooted(argv[optind], true, &wo.vfs, &path)) {
			e = tfs_fail(&d, TFS_E_NOMEM, "out of memory");
		} else {
			e = tfs_array_create(path, schema, &wo, &d);
			tfs_vfs_free(wo.vfs);
			tfs_free(path);
		}
	}
	tfs_schema_free(schema);
	cli_common_release(&c);
	if (e)
		return cli_fail("create", &d, e);
	return CLI_OK;
}

/* ---- ingest ------------------------------------------------------------- */

struct progress {
	bool draw;
	double start, last;
	bool drawn;
	unsigned pass; /* the pass being drawn (rate and ETA restart) */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void human_bytes(char *out, size_t cap, double v)
{
	static const char *const unit[] = {"B", "KB", "MB", "GB", "TB"};
	unsigned u = 0;

	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* Draws "[#####.....]  45%  12.0 MB of 26.7 MB  1.2 MB/s  ETA 0:00:12
 * 120000 rows" over itself, at most ten times a second; with --new,
 * "1/2 schema " (inference) or "2/2 write " before it. */
static void on_progress(const struct tfs_ingest_progress *p, void *arg)
{
	struct progress *pr = arg;
	double t = now_s(), el = t - pr->start, rate, frac;
	char done[32], total[32], speed[32], eta[32] = "";
	char bar[31];
	unsigned fill;

	char stage[32] = "";

	if (!pr->draw)
		return;
	if (p->pass != pr->pass) {
		pr->pass = p->pass;
		pr->start = t;
		el = 0;
	} else if (pr->drawn && t - pr->last < 0.1 &&
		   p->bytes_done < p->bytes_total) {
		return;
	}
	if (p->passes > 1)
		snprintf(stage, sizeof(stage), "%u/%u %s ", p->pass, p->passes,
			 p->pass < p->passes ? "schema" : "write");
	pr->last = t;
	pr->drawn = true;
	frac = p->bytes_total ? (double)p->bytes_done / (double)p->bytes_total
			      : 1;
	if (frac > 1)
		frac = 1;
	fill = (unsigned)(frac * 30);
	for (unsigned i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	rate = el > 0 ? (double)p->bytes_done / el : 0;
	human_bytes(done, sizeof(done), (double)p->bytes_done);
	human_bytes(total, sizeof(total), (double)p->bytes_total);
	human_bytes(speed, sizeof(speed), rate);
	if (rate > 0 && p->bytes_done < p->bytes_total) {
		double left = (double)(p->bytes_total - p->bytes_done) / rate;
		unsigned s = (unsigned)left;

		snprintf(eta, sizeof(eta), "  ETA %u:%02u:%02u", s / 3600,
			 s / 60 % 60, s % 60);
	}
	fprintf(stderr,
		"\r%s[%s] %3u%%  %s of %s  %s/s%s  %" PRIu64 " rows\033[K",
		stage, bar, (unsigned)(frac * 100), done, total, speed, eta,
		p->rows);
	fflush(stderr);
}

struct ingest_args {
	struct cli_common c;
	struct tfs_ingest_opts io;
	bool create, quiet;
	uint64_t memory_mb;
};

/* The options of tfs ingest into a; -1 to go on, else the exit status. */
static int ingest_options(int argc, char **argv, struct ingest_args *a)
{
	enum { OPT_KEY = 256, OPT_THREADS, OPT_NEW, OPT_DEDUP, OPT_MEMORY,
	       OPT_QUIET };
	static const struct option longopts[] = {
		{"key", required_argument, NULL, OPT_KEY},
		{"threads", required_argument, NULL, OPT_THREADS},
		{"new", no_argument, NULL, OPT_NEW},
		{"dedup", no_argument, NULL, OPT_DEDUP},
		{"memory", required_argument, NULL, OPT_MEMORY},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "hq", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_KEY:
			if (!cli_parse_key("ingest", &a->c, optarg))
				return CLI_USAGE;
			break;
		case OPT_THREADS:
			if (!cli_parse_threads("ingest", &a->c, optarg))
				return CLI_USAGE;
			break;
		case OPT_NEW:
			a->create = true;
			break;
		case OPT_DEDUP:
			a->io.write.dedup = true;
			break;
		case OPT_MEMORY:
			if (!cli_parse_u64(optarg, &a->memory_mb) || !a->memory_mb ||
			    a->memory_mb > ((uint64_t)1 << 30))
				return cli_usage("ingest", "--memory takes "
							   "megabytes");
			break;
		case OPT_QUIET:
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			fputs(ingest_usage, stdout);
			return CLI_OK;
		default:
			return cli_usage("ingest", "unknown option");
		}
	}
	if (optind + 2 != argc) {
		cli_common_release(&a->c);
		return cli_usage("ingest", "ingest takes PATH and FILE.csv");
	}
	return -1;
}

/* What was written, on stderr when progress is drawn. */
static void ingest_report(const struct tfs_ingest_result *res,
			  const char *array)
{
	if (!res->write.cell_num) {
		fprintf(stderr, "no rows: nothing written\n");
		return;
	}
	fprintf(stderr,
		"%s%" PRIu64 " rows into %s: fragment %s (%" PRIu64 " cells, %s)\n",
		res->created ? "new array, " : "", res->rows, array,
		res->write.name, res->write.cell_num,
		res->write.dense ? "dense" : "sparse");
	if (res->enum_values_added)
		fprintf(stderr, "%" PRIu64 " values added to enumerations "
				"(schema evolved)\n",
			res->enum_values_added);
}

int cmd_ingest(int argc, char **argv)
{
	struct ingest_args a = {0};
	struct tfs_ingest_opts *io = &a.io;
	struct tfs_ingest_result res = {0};
	struct progress pr = {0};
	struct tfs_diag d;
	char *path;
	enum tfs_err e;
	int st;

	if ((st = ingest_options(argc, argv, &a)) >= 0)
		return st;
	io->write.key = a.c.has_key ? a.c.key : NULL;
	io->write.threads = a.c.threads;
	io->write.memory = a.memory_mb << 20;
	io->write.tag_word = "line";
	io->display_name = argv[optind + 1];
	pr.draw = !a.quiet && isatty(STDERR_FILENO);
	pr.start = now_s();
	io->progress = on_progress;
	io->progress_arg = &pr;
	tfs_diag_init(&d);
	/* No symbolic link inside the array (below the folder that will
	 * hold a new one) is followed. */
	if (!cli_rooted(argv[optind], a.create, &io->write.vfs, &path)) {
		e = tfs_fail(&d, TFS_E_NOMEM, "out of memory");
	} else {
		e = a.create ? tfs_ingest_csv_new(path, argv[optind + 1], io, &res, &d)
			     : tfs_ingest_csv(path, argv[optind + 1], io, &res, &d);
		tfs_vfs_free(io->write.vfs);
		tfs_free(path);
	}
	cli_common_release(&a.c);
	if (pr.drawn)
		fputs("\r\033[K", stderr);
	if (e)
		return cli_fail("ingest", &d, e);
	if (pr.draw)
		ingest_report(&res, argv[optind]);
	return CLI_OK;
}

/* ---- delete ------------------------------------------------------------- */

static const char delete_usage[] =
	"usage: tfs delete PATH --where COND [--key HEX]\n"
	"\n"
	"Deletes the cells of the sparse array at PATH that COND matches, as\n"
	"TileDB's delete queries do: one delete commit, which readers apply to\n"
	"everything written before it (time travel to an earlier time still\n"
	"shows the cells) and consolidation applies for good. COND is the\n"
	"filter of where[COND] (README, \"Value filters\"): comparisons of a\n"
	"dimension or attribute with values (= != < <= > >=), in (...), is\n"
	"null, startswith(FIELD, \"text\"), and, or, not, parentheses.\n"
	"\n"
	"  --where COND  which cells to delete (required)\n"
	"  --key HEX     AES-256 key (64 hex digits) of an encrypted array\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 PATH not found, 4 COND refused,\n"
	"5 I/O, 6 key, 7 a dense array or a format before 16\n";

int cmd_delete(int argc, char **argv)
{
	enum { OPT_KEY = 256, OPT_WHERE };
	static const struct option longopts[] = {
		{"key", required_argument, NULL, OPT_KEY},
		{"where", required_argument, NULL, OPT_WHERE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_common c = {0};
	struct tfs_write_opts wo = {0};
	struct tfs_open_opts oo = {0};
	struct tfs_where *cond = NULL;
	struct tfs_array *a = NULL;
	const char *where = NULL;
	struct tfs_diag d;
	char *path = NULL;
	enum tfs_err e;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_KEY:
			if (!cli_parse_key("delete", &c, optarg))
				return CLI_USAGE;
			break;
		case OPT_WHERE:
			where = optarg;
			break;
		case 'h':
			fputs(delete_usage, stdout);
			return CLI_OK;
		default:
			cli_common_release(&c);
			return cli_usage("delete", "unknown option");
		}
	}
	if (optind + 1 != argc || !where) {
		cli_common_release(&c);
		return cli_usage("delete",
				 "delete takes PATH and --where COND");
	}
	tfs_diag_init(&d);
	if (!cli_rooted(argv[optind], false, &wo.vfs, &path)) {
		cli_common_release(&c);
		e = tfs_fail(&d, TFS_E_NOMEM, "out of memory");
		return cli_fail("delete", &d, e);
	}
	wo.key = c.has_key ? c.key : NULL;
	oo.vfs = wo.vfs;
	oo.key = wo.key;
	oo.threads = 1;
	e = tfs_array_open(path, &oo, &a, &d);
	if (!e) {
		struct tfs_diag wd;

		tfs_diag_init(&wd);
		e = tfsr_where_parse(tfs_array_schema(a), a, where,
				     strlen(where), &cond, NULL, &wd);
		if (e)
			e = tfs_fail(&d, e, "--where '%s': %s", where,
				     tfs_diag_msg(&wd));
	}
	tfs_array_close(a);
	if (!e)
		e = tfs_array_delete(path, cond, &wo, NULL, 0, &d);
	tfs_where_free(cond);
	tfs_vfs_free(wo.vfs);
	tfs_free(path);
	cli_common_release(&c);
	if (e)
		return cli_fail("delete", &d, e);
	return CLI_OK;
}
