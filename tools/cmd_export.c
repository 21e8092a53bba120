/* `tfs export`: a selection of an array as a file, exactly the bytes the
 * mount serves for `A/[FIELD/]slice[SEL].EXT`. The array is the root of an
 * unmounted virtual tree of the daemon (fs/: selection grammar, renderers,
 * .npy), so both read the same code and never disagree. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tfs_alloc.h"
#include "tfsd.h"

static const char export_usage[] =
	"usage: tfs export PATH [SEL] [--field NAME] [--format FMT] [-o FILE]\n"
	"                  [--key HEX] [--timestamp T] [--threads N]\n"
	"\n"
	"Writes the cells of selection SEL of the array at PATH to stdout (or\n"
	"FILE), exactly as the mount shows A/[FIELD/]slice[SEL].FMT.\n"
	"\n"
	"  SEL            one range per dimension, in the array's coordinates,\n"
	"                 half-open: lo:hi, lo:, :hi, :, a single value, or\n"
	"                 lo:hi:step on dense arrays; \"a\":\"c\" for strings;\n"
	"                 missing ranges are ':' (default: the whole array)\n"
	"  --field NAME   one attribute or dimension (default: every field)\n"
	"  --format FMT   raw, txt, csv, json, npy, offsets or validity for one\n"
	"                 field; csv, json or npy for every field (default csv)\n"
	"  -o FILE        write to FILE instead of stdout\n"
	"  --key HEX      AES-256 key (64 hex digits) of an encrypted array\n"
	"  --timestamp T  the array as of T (ms since the epoch or ISO-8601)\n"
	"  --threads N    decode threads (default: one per CPU)\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 no such array or field, 4 bad selection,\n"
	"5 I/O or corrupt data, 6 key\n";

static const struct {
	const char *name, *ext;
} formats[] = {
	{"raw", ""},       {"txt", ".txt"},         {"csv", ".csv"},
	{"json", ".json"}, {"npy", ".npy"},         {"offsets", ".offsets"},
	{"validity", ".validity"},
};

struct export_opts {
	const char *path, *sel, *field, *ext, *out;
	struct cli_common c;
};

static void fs_release(struct tfsd *fs)
{
	tfsd_renders_free(fs->renders);
	tfsd_arrays_free(fs->arrays);
	tfs_pool_free(fs->pool);
	tfs_tile_cache_free(fs->tiles);
	memset(fs->cfg.default_key, 0, sizeof(fs->cfg.default_key));
	tfsd_config_release(&fs->cfg);
}

static enum tfs_err fs_init(struct tfsd *fs, const struct export_opts *o,
			    struct tfs_diag *d)
{
	unsigned threads = o->c.threads ? o->c.threads : tfs_cpu_count();
	enum tfs_err e;

	memset(fs, 0, sizeof(*fs));
	if ((e = tfsd_config_set_source(&fs->cfg, o->path, d)))
		return e;
	fs->cfg.cache_bytes = (uint64_t)64 << 20;
	fs->cfg.threads = threads;
	fs->cfg.timestamp = o->c.timestamp;
	fs->cfg.whole_max_cells = 65536;
	if (o->c.has_key) {
		memcpy(fs->cfg.default_key, o->c.key, 32);
		fs->cfg.has_default_key = true;
	}
	if (!fs->cfg.source ||
	    tfs_tile_cache_new(fs->cfg.cache_bytes, &fs->tiles) ||
	    tfs_pool_new(threads - 1, &fs->pool) ||
	    tfsd_arrays_new(&fs->cfg, fs->tiles, fs->pool, &fs->arrays) ||
	    tfsd_renders_new((uint64_t)8 << 20, &fs->renders)) {
		fs_release(fs);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	return TFS_E_OK;
}

/* Copies the file's bytes to out. */
static enum tfs_err copy_out(struct tfsd *fs, struct tfsd_file *f, FILE *out,
			     struct tfs_diag *d)
{
	const size_t chunk = (size_t)1 << 20;
	uint8_t *buf = tfs_malloc(chunk);
	uint64_t off = 0;
	enum tfs_err e = TFS_E_OK;

	if (!buf)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (;;) {
		size_t got = 0;

		e = tfsd_file_read(fs, f, off, buf, chunk, &got, d);
		if (e)
			break;
		if (got && fwrite(buf, 1, got, out) != got) {
			e = tfs_fail(d, TFS_E_IO, "cannot write the output: %s",
				     strerror(errno));
			break;
		}
		off += got;
		if (got < chunk)
			break;
	}
	tfs_free(buf);
	return e;
}

static int run_export(const struct export_opts *o)
{
	struct tfsd fs;
	struct tfsd_node dir, file;
	struct tfsd_file *f = NULL;
	struct tfs_buf name;
	struct tfs_diag d;
	FILE *out = stdout;
	enum tfs_err e;
	int st;

	tfs_diag_init(&d);
	e = fs_init(&fs, o, &d);
	if (e)
		return cli_fail("export", &d, e);
	/* The array (or its field's folder) first: failing here is "not
	 * found"; failing on the slice name is a refused selection. */
	e = tfsd_resolve(&fs, o->field ? o->field : "", &dir, &d);
	if (!e && dir.kind != TFSD_N_ARRAY && dir.kind != TFSD_N_FIELD) {
		tfsd_node_release(&fs, &dir);
		e = tfs_fail(&d, TFS_E_NOT_ARRAY,
			     o->field ? "'%s' has no field '%s'"
				      : "'%s' is not a TileDB array",
			     o->path, o->field);
	}
	if (e == TFS_E_NOT_FOUND && o->field) {
		/* The array resolved, so the field is what is missing. */
		struct tfsd_node root;

		if (!tfsd_resolve(&fs, "", &root, &d)) {
			tfsd_node_release(&fs, &root);
			tfs_diag_init(&d);
			e = tfs_fail(&d, TFS_E_NOT_FOUND,
				     "array '%s' has no field '%s'", o->path,
				     o->field);
		}
	}
	if (e) {
		st = cli_fail("export", &d, e);
		goto out_fs;
	}
	tfs_buf_init(&name, 1 << 20);
	if (tfs_buf_printf(&name, "slice[%s]%s", o->sel, o->ext) ||
	    tfs_buf_append_u8(&name, 0)) {
		st = cli_fail("export", NULL, TFS_E_NOMEM);
		goto out_name;
	}
	e = tfsd_resolve_child(&fs, &dir, (const char *)name.data, &file, &d);
	if (!e && file.kind != TFSD_N_FILE) {
		tfsd_node_release(&fs, &file);
		e = tfs_fail(&d, TFS_E_INVALID, "'%s' is no file",
			     (const char *)name.data);
	}
	if (e) {
		/* The vtree says "not found" for a bad selection, as the
		 * mount must; here it is refused input. */
		if (e == TFS_E_NOT_FOUND)
			e = d.code = TFS_E_INVALID;
		st = cli_fail("export", &d, e);
		goto out_name;
	}
	e = tfsd_file_open(&fs, &file, (const char *)name.data, &f, &d);
	if (e) {
		st = cli_fail("export", &d, e);
		goto out_file;
	}
	if (o->out) {
		out = fopen(o->out, "wb");
		if (!out) {
			cli_errorf("export", "cannot create '%s': %s", o->out,
				   strerror(errno));
			st = CLI_IO;
			goto out_close;
		}
	}
	e = copy_out(&fs, f, out, &d);
	if (!e && fflush(out) != 0)
		e = tfs_fail(&d, TFS_E_IO, "cannot write the output: %s",
			     strerror(errno));
	if (o->out && fclose(out) != 0 && !e)
		e = tfs_fail(&d, TFS_E_IO, "cannot write '%s': %s", o->out,
			     strerror(errno));
	if (e && o->out)
		unlink(o->out);
	st = e ? cli_fail("export", &d, e) : CLI_OK;
out_close:
	tfsd_file_close(&fs, f);
out_file:
	tfsd_node_release(&fs, &file);
out_name:
	tfs_buf_release(&name);
	tfsd_node_release(&fs, &dir);
out_fs:
	fs_release(&fs);
	return st;
}

int cmd_export(int argc, char **argv)
{
	enum { OPT_KEY = 256, OPT_TIMESTAMP, OPT_THREADS, OPT_FIELD,
	       OPT_FORMAT };
	static const struct option longopts[] = {
		{"key", required_argument, NULL, OPT_KEY},
		{"timestamp", required_argument, NULL, OPT_TIMESTAMP},
		{"threads", required_argument, NULL, OPT_THREADS},
		{"field", required_argument, NULL, OPT_FIELD},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct export_opts o = {.sel = ":", .ext = ".csv"};
	const char *fmt = "csv";
	char selbuf[4096];
	int opt, st;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_KEY:
			if (!cli_parse_key("export", &o.c, optarg))
				return CLI_USAGE;
			break;
		case OPT_TIMESTAMP:
			if (!cli_parse_timestamp("export", &o.c, optarg))
				return CLI_USAGE;
			break;
		case OPT_THREADS:
			if (!cli_parse_threads("export", &o.c, optarg))
				return CLI_USAGE;
			break;
		case OPT_FIELD:
			if (!optarg[0] || strchr(optarg, '/'))
				return cli_usage("export", "bad --field name");
			o.field = optarg;
			break;
		case OPT_FORMAT:
			fmt = optarg;
			o.ext = NULL;
			for (size_t i = 0; i < sizeof(formats) / sizeof(*formats);
			     i++)
				if (!strcmp(optarg, formats[i].name))
					o.ext = formats[i].ext;
			if (!o.ext)
				return cli_usage("export", "unknown --format");
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'h':
			fputs(export_usage, stdout);
			return CLI_OK;
		default:
			return cli_usage("export", "unknown option");
		}
	}
	if (optind >= argc || argc - optind > 2)
		return cli_usage("export", "export takes PATH and maybe SEL");
	o.path = argv[optind];
	if (optind + 1 < argc) {
		o.sel = argv[optind + 1];
		/* "slice[SEL]" as the mount names it is fine too */
		if (!strncmp(o.sel, "slice[", 6) &&
		    o.sel[strlen(o.sel) - 1] == ']') {
			snprintf(selbuf, sizeof(selbuf), "%.*s",
				 (int)(strlen(o.sel) - 7), o.sel + 6);
			o.sel = selbuf;
		}
	}
	if (!o.field && strcmp(fmt, "csv") && strcmp(fmt, "json") &&
	    strcmp(fmt, "npy")) {
		cli_common_release(&o.c);
		return cli_usage("export", "every field together is csv, json "
					   "or npy (or give --field)");
	}
	st = run_export(&o);
	cli_common_release(&o.c);
	return st;
}
