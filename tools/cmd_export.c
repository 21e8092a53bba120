/* `tfs export`: a selection of an array as a file, exactly the bytes the
 * mount serves for `A/[FIELD/]slice[SEL].EXT`: both plan the slice and
 * stream it through the render library (render/slice.h), so they never
 * disagree. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "slice.h"
#include "where.h"
#include "tfs_alloc.h"
#include "tfs_pool.h"

static const char export_usage[] =
	"usage: tfs export PATH [SEL] [--field NAME] [--format FMT] [-o FILE]\n"
	"                  [--where COND] [--key HEX] [--timestamp T]\n"
	"                  [--threads N]\n"
	"\n"
	"Writes the cells of selection SEL of the array at PATH to stdout (or\n"
	"FILE), exactly as the mount shows A/[FIELD/]slice[SEL].FMT.\n"
	"\n"
	"  SEL            one range per dimension, in the array's coordinates,\n"
	"                 half-open: lo:hi, lo:, :hi, :, a single value, or\n"
	"                 lo:hi:step on dense arrays; \"a\":\"c\" for strings;\n"
	"                 missing ranges are ':' (default: the whole array)\n"
	"  --field NAME   one attribute or dimension (default: every field)\n"
	"  --format FMT   raw, txt, csv, json, npy, offsets, validity, png or\n"
	"                 gray.png for one field (png: a 2-D selection of a\n"
	"                 numeric field); csv, json or npy for every field\n"
	"                 (default csv)\n"
	"  --where COND   only the cells that match COND, as A/where[COND]/\n"
	"                 shows them (README, \"Filters\")\n"
	"  -o FILE        write to FILE instead of stdout\n"
	"  --key HEX      AES-256 key (64 hex digits) of an encrypted array\n"
	"  --timestamp T  the array as of T (ms since the epoch or ISO-8601)\n"
	"  --threads N    decode threads (default: one per CPU)\n"
	"\n"
	"exit status: 0 ok, 2 usage, 3 no such array or field, 4 bad selection,\n"
	"5 I/O or corrupt data, 6 key\n";

struct export_opts {
	const char *path, *sel, *field, *out, *where;
	const struct tfsr_renderer *r;
	struct cli_common c;
};

/* Opens the array with a tile cache and a decode pool (as the mount
 * does), through a storage rooted at it (*vfs: no symbolic link inside
 * the array is followed); *field: the field's index, -1 for every
 * field. The caller frees all of them, after the array. */
static enum tfs_err export_open(const struct export_opts *o,
				struct tfs_tile_cache **tiles,
				struct tfs_pool **pool, struct tfs_vfs **vfs,
				struct tfs_array **a, int *field,
				struct tfs_diag *d)
{
	char *path = NULL;
	unsigned threads = o->c.threads ? o->c.threads : tfs_cpu_count();
	struct tfs_open_opts oo = {.key = o->c.has_key ? o->c.key : NULL,
				   .timestamp = o->c.timestamp,
				   .threads = threads};
	enum tfs_err e;

	*a = NULL;
	*tiles = NULL;
	*pool = NULL;
	*vfs = NULL;
	if (tfs_tile_cache_new((uint64_t)64 << 20, tiles) ||
	    tfs_pool_new(threads - 1, pool) ||
	    !cli_rooted(o->path, false, vfs, &path))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	oo.cache = *tiles;
	oo.pool = *pool;
	oo.vfs = *vfs;
	e = tfs_array_open(path, &oo, a, d);
	tfs_free(path);
	if (e)
		return e;
	*field = -1;
	if (o->field) {
		*field = tfs_schema_field_index(tfs_array_schema(*a), o->field);
		if (*field < 0)
			return tfs_fail(d, TFS_E_NOT_FOUND,
					"array '%s' has no field '%s'", o->path,
					o->field);
	}
	return TFS_E_OK;
}

/* Streams the slice to out. */
static enum tfs_err export_write(struct tfsr_slice *sl, struct tfs_array *a,
				 FILE *out, struct tfs_diag *d)
{
	struct tfsr_stream st;
	enum tfs_err e = TFS_E_OK;

	tfsr_stream_init(&st, sl, a);
	while (!e && !st.done) {
		e = tfsr_stream_step(&st, d);
		if (!e && st.out.len &&
		    fwrite(st.out.data, 1, st.out.len, out) != st.out.len)
			e = tfs_fail(d, TFS_E_IO, "cannot write the output: %s",
				     strerror(errno));
		st.out.len = 0;
	}
	tfsr_stream_release(&st);
	return e;
}

static int run_export(const struct export_opts *o)
{
	struct tfs_tile_cache *tiles;
	struct tfs_pool *pool;
	struct tfs_vfs *vfs;
	struct tfs_array *a;
	struct tfs_range ned[TFSR_MAX_DIMS];
	struct tfsr_slice *sl = NULL;
	struct tfsr_slice_opts so = {.fmt = o->r->fmt, .sel = o->sel,
				     .sel_len = strlen(o->sel)};
	struct tfs_where *where = NULL;
	struct tfs_diag d;
	FILE *out = stdout;
	enum tfs_err e;
	int st;

	tfs_diag_init(&d);
	e = export_open(o, &tiles, &pool, &vfs, &a, &so.field, &d);
	if (e) {
		st = cli_fail("export", &d, e);
		goto out_array;
	}
	if (o->where) {
		e = tfsr_where_parse(tfs_array_schema(a), a, o->where,
				     strlen(o->where), &where, NULL, &d);
		if (e) {
			st = cli_fail("export", &d, e);
			goto out_array;
		}
		so.where = where;
	}
	if (!tfsr_renderer_takes(o->r, tfs_array_schema(a), so.field, &d)) {
		st = cli_fail("export", &d, TFS_E_INVALID);
		goto out_array;
	}
	if (tfs_schema_dim_count(tfs_array_schema(a)) <= TFSR_MAX_DIMS &&
	    tfs_array_non_empty_domain(a, ned))
		so.ned = ned;
	e = tfsr_slice_open(a, &so, &sl, &d);
	if (e) {
		st = cli_fail("export", &d, e);
		goto out_array;
	}
	if (o->out) {
		out = fopen(o->out, "wb");
		if (!out) {
			cli_errorf("export", "cannot create '%s': %s", o->out,
				   strerror(errno));
			st = CLI_IO;
			goto out_slice;
		}
	}
	e = export_write(sl, a, out, &d);
	if (!e && fflush(out) != 0)
		e = tfs_fail(&d, TFS_E_IO, "cannot write the output: %s",
			     strerror(errno));
	if (o->out && fclose(out) != 0 && !e)
		e = tfs_fail(&d, TFS_E_IO, "cannot write '%s': %s", o->out,
			     strerror(errno));
	if (e && o->out)
		unlink(o->out);
	st = e ? cli_fail("export", &d, e) : CLI_OK;
out_slice:
	tfsr_slice_free(sl);
out_array:
	tfs_where_free(where);
	tfs_array_close(a);
	tfs_vfs_free(vfs);
	tfs_pool_free(pool);
	tfs_tile_cache_free(tiles);
	return st;
}

int cmd_export(int argc, char **argv)
{
	enum { OPT_FIELD = CLI_OPT_OWN, OPT_FORMAT, OPT_WHERE };
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{"field", required_argument, NULL, OPT_FIELD},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"where", required_argument, NULL, OPT_WHERE},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct export_opts o = {.sel = ":", .r = tfsr_renderer_named("csv")};
	char selbuf[4096];
	int opt, st;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		int common = cli_common_opt("export", &o.c, opt, optarg);

		if (common < 0)
			return CLI_USAGE;
		if (common > 0)
			continue;
		switch (opt) {
		case OPT_FIELD:
			if (!optarg[0] || strchr(optarg, '/'))
				return cli_usage("export", "bad --field name");
			o.field = optarg;
			break;
		case OPT_FORMAT:
			o.r = tfsr_renderer_named(optarg);
			if (!o.r)
				return cli_usage("export", "unknown --format");
			break;
		case OPT_WHERE:
			o.where = optarg;
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
	if (!o.field && !(o.r->flags & TFSR_R_ALL_FIELDS)) {
		cli_common_release(&o.c);
		return cli_usage("export", "every field together is csv, json "
					   "or npy (or give --field)");
	}
	st = run_export(&o);
	cli_common_release(&o.c);
	return st;
}
