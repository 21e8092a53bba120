/* tilefs: the daemon's start-up. Parses the command line (tilefs options
 * and libfuse's), builds the daemon's state (struct tfsd_ll, handed to
 * every request as the session's userdata), mounts, runs the FUSE loop
 * (fuse_ll.c, fuse_ll_write.c) and takes everything down again. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <syslog.h>
#include <time.h>

#include "fuse_ll.h"
#include "tfs_alloc.h"
#include "tfs_log.h"
#include "tfs_mem.h"
#include "tfs_s3.h"

struct cli {
	char *source;
	char *key;
	char *keyfile;
	char *cache;
	char *threads;
	char *timestamp;
	char *whole_max;
	char *staging;
	char *cleanup_grace;
	char *max_cells;
	char *max_memory;
	int keyfile_insecure;
	int list_history;
	char *s3_endpoint;
	char *s3_region;
	char *s3_addressing;
	char *s3_verify_tls;
	char *s3_credentials;
	int read_only;
	int allow_other;
	int default_permissions;
	int show_help;
	int show_version;
};

#define CLI_OPT(t, p) {t, offsetof(struct cli, p), 1}
static const struct fuse_opt cli_opts[] = {
	CLI_OPT("key=%s", key),
	CLI_OPT("keyfile=%s", keyfile),
	CLI_OPT("cache=%s", cache),
	CLI_OPT("threads=%s", threads),
	CLI_OPT("timestamp=%s", timestamp),
	CLI_OPT("whole_max=%s", whole_max),
	CLI_OPT("staging=%s", staging),
	CLI_OPT("cleanup_grace=%s", cleanup_grace),
	CLI_OPT("max_cells=%s", max_cells),
	CLI_OPT("max_memory=%s", max_memory),
	{"keyfile_insecure", offsetof(struct cli, keyfile_insecure), 1},
	{"list_history", offsetof(struct cli, list_history), 1},
	CLI_OPT("s3_endpoint=%s", s3_endpoint),
	CLI_OPT("s3_region=%s", s3_region),
	CLI_OPT("s3_addressing=%s", s3_addressing),
	CLI_OPT("s3_verify_tls=%s", s3_verify_tls),
	CLI_OPT("s3_credentials=%s", s3_credentials),
	FUSE_OPT_END,
};

enum { KEY_RO };

static int cli_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct cli *c = data;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT && !c->source) {
		c->source = strdup(arg);
		return c->source ? 0 : -1;
	}
	if (key == FUSE_OPT_KEY_OPT && strcmp(arg, "ro") == 0)
		c->read_only = 1;
	if (key == FUSE_OPT_KEY_OPT && strcmp(arg, "allow_other") == 0)
		c->allow_other = 1;
	if (key == FUSE_OPT_KEY_OPT && strcmp(arg, "default_permissions") == 0)
		c->default_permissions = 1;
	return 1; /* keep: libfuse and the kernel see it too */
}

static void usage(const char *prog)
{
	tfsd_options_print_help(stdout, prog);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* Overwrites key=... in the process's own argument strings so that ps and
 * /proc/PID/cmdline no longer show it. */
static void scrub_keys(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		char *p = argv[i];

		while ((p = strstr(p, "key=")) != NULL) {
			p += 4;
			while (*p && *p != ',')
				*p++ = 'x';
		}
	}
}

/* Log lines go to stderr in the foreground, else to syslog. */
static void log_stderr(enum tfs_log_level level, const char *line)
{
	(void)level;
	fprintf(stderr, "tilefs: %s\n", line);
}

static void log_syslog(enum tfs_log_level level, const char *line)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

	syslog(prio[level], "%s", line);
}

/* cache=, threads=, whole_max=, max_cells=, max_memory=: 0, or the exit
 * status after a line on stderr. */
static int configure_sizes(struct tfsd_config *cfg, const struct cli *c)
{
	cfg->cache_bytes = (uint64_t)256 << 20;
	if (c->cache && tfsd_parse_size(c->cache, &cfg->cache_bytes)) {
		fprintf(stderr, "tilefs: cache='%s': not a size (e.g. 256M)\n",
			c->cache);
		return 2;
	}
	if (c->threads) {
		char *end;
		unsigned long v = strtoul(c->threads, &end, 10);

		if (*end || v == 0 || v > 1024) {
			fprintf(stderr, "tilefs: threads='%s': not 1..1024\n",
				c->threads);
			return 2;
		}
		cfg->threads = (unsigned)v;
	}
	cfg->whole_max_cells = 65536;
	if (c->whole_max && tfsd_parse_size(c->whole_max, &cfg->whole_max_cells)) {
		fprintf(stderr, "tilefs: whole_max='%s': not a number\n",
			c->whole_max);
		return 2;
	}
	if (c->max_cells && (tfsd_parse_size(c->max_cells, &cfg->max_cells) ||
			     cfg->max_cells == 0)) {
		fprintf(stderr, "tilefs: max_cells='%s': not a positive number\n",
			c->max_cells);
		return 2;
	}
	if (c->max_memory &&
	    (tfsd_parse_size(c->max_memory, &cfg->max_memory) ||
	     cfg->max_memory < ((uint64_t)1 << 20))) {
		fprintf(stderr, "tilefs: max_memory='%s': not a size of 1M or "
				"more\n",
			c->max_memory);
		return 2;
	}
	if (cfg->max_memory && cfg->cache_bytes > cfg->max_memory / 2)
		cfg->cache_bytes = cfg->max_memory / 2;
	return 0;
}

/* timestamp=, key=, staging=, cleanup_grace=, keyfile=. */
static int configure_access(struct tfsd_config *cfg, struct cli *c)
{
	struct tfs_diag d;

	tfs_diag_init(&d);
	if (c->timestamp && (tfsr_parse_time(c->timestamp, &cfg->timestamp) ||
			     cfg->timestamp == 0)) {
		fprintf(stderr, "tilefs: timestamp='%s': not ms since the epoch "
				"or ISO-8601\n",
			c->timestamp);
		return 2;
	}
	/* A mount of the past cannot take writes. */
	if (cfg->timestamp)
		cfg->read_only = true;
	if (c->key) {
		if (tfs_key_from_hex(cfg->default_key, c->key)) {
			fprintf(stderr, "tilefs: key must be 64 hex digits\n");
			return 2;
		}
		cfg->has_default_key = true;
		memset(c->key, 0, strlen(c->key));
	}
	if (c->staging && !(cfg->staging = tfs_strdup(c->staging)))
		return 1;
	/* Staged bytes never wait inside SOURCE (where a half-written file
	 * would sit among the arrays). */
	if (c->staging) {
		char *real = realpath(c->staging, NULL);
		size_t n = strlen(cfg->source);
		bool inside = real && strncmp(real, cfg->source, n) == 0 &&
			      (real[n] == '\0' || real[n] == '/' ||
			       !strcmp(cfg->source, "/"));

		free(real);
		if (inside) {
			fprintf(stderr, "tilefs: staging='%s': inside SOURCE; "
					"staged files must live elsewhere\n",
				c->staging);
			return 2;
		}
	}
	if (c->cleanup_grace) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(c->cleanup_grace, &end, 10);
		if (errno || end == c->cleanup_grace || *end ||
		    v > UINT64_MAX / 1000) {
			fprintf(stderr, "tilefs: cleanup_grace='%s': not a number "
					"of seconds\n",
				c->cleanup_grace);
			return 2;
		}
		cfg->cleanup_grace_ms = (uint64_t)v * 1000;
		cfg->cleanup_grace_set = true;
	}
	cfg->keyfile_insecure = c->keyfile_insecure != 0;
	if (c->keyfile && tfsd_keyfile_load(cfg, c->keyfile, &d)) {
		fprintf(stderr, "tilefs: %s\n", tfs_diag_msg(&d));
		return 2;
	}
	/* Keys live in many places (options, each opened array, cipher
	 * contexts): no core file may hold them, and no process of the same
	 * user may read them with ptrace or /proc/PID/mem (as ssh-agent). */
	if ((cfg->has_default_key || cfg->key_num) &&
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		fprintf(stderr, "tilefs: cannot protect the keys: %s\n",
			strerror(errno));
		return 1;
	}
	return 0;
}

/* SOURCE in a bucket: the -o s3_* overrides go to the engine's S3
 * backends, and the bucket is checked now so that bad credentials, a
 * missing bucket or an unreachable endpoint fail the mount with one
 * message. SOURCE keeps its URI form ("s3://bucket/prefix"). */
static int configure_s3(struct tfsd_config *cfg, const struct cli *c)
{
	struct tfs_s3_opts o = {c->s3_endpoint, c->s3_region, c->s3_addressing,
				-1, c->s3_credentials, NULL};
	char *bucket = NULL, *path = NULL;
	struct tfs_vfs *v;
	struct tfs_diag d;
	size_t n;

	if (c->s3_verify_tls) {
		if (strcmp(c->s3_verify_tls, "0") && strcmp(c->s3_verify_tls, "1")) {
			fprintf(stderr, "tilefs: s3_verify_tls='%s': not 0 or 1\n",
				c->s3_verify_tls);
			return 2;
		}
		o.verify_tls = c->s3_verify_tls[0] == '1';
	}
	tfs_diag_init(&d);
	if (tfs_s3_uri_parse(c->source, &bucket, &path, &d)) {
		fprintf(stderr, "tilefs: %s\n", tfs_diag_msg(&d));
		return 2;
	}
	n = strlen(bucket) + strlen(path) + 8;
	cfg->source = tfs_malloc(n);
	if (cfg->source)
		snprintf(cfg->source, n, "s3://%s%s", bucket,
			 strcmp(path, "/") ? path : "");
	tfs_free(bucket);
	tfs_free(path);
	if (!cfg->source)
		return 1;
	tfs_vfs_default_s3_opts(&o);
	if (tfs_vfs_default_new(cfg->source, &v, &d)) {
		fprintf(stderr, "tilefs: source '%s': %s\n", cfg->source,
			tfs_diag_msg(&d));
		return 1;
	}
	/* The daemon reaches the bucket through this handle. */
	cfg->vfs = v;
	return 0;
}

/* The configuration from the command line: 0, or the exit status after a
 * line on stderr. */
static int configure(struct tfsd_config *cfg, struct cli *c,
		     struct fuse_cmdline_opts *fo)
{
	struct tfs_diag d;
	int ret;

	tfs_diag_init(&d);
	if (!c->source || !fo->mountpoint) {
		fprintf(stderr, "tilefs: usage: tilefs [options] SOURCE MOUNTPOINT "
				"(see --help)\n");
		return 2;
	}
	/* SOURCE: a bucket, or a folder's real path with the storage
	 * rooted there through which the daemon reaches it (no link below
	 * it is followed). */
	if (tfs_s3_is_uri(c->source)) {
		ret = configure_s3(cfg, c);
		if (ret)
			return ret;
	} else if (tfsd_config_set_source(cfg, c->source, &d)) {
		fprintf(stderr, "tilefs: %s\n", tfs_diag_msg(&d));
		return 1;
	}
	cfg->mountpoint = tfs_strdup(fo->mountpoint);
	if (!cfg->mountpoint)
		return 1;
	cfg->read_only = c->read_only;
	cfg->list_history = c->list_history != 0;
	cfg->foreground = fo->foreground;
	cfg->debug = fo->debug;
	ret = configure_sizes(cfg, c);
	return ret ? ret : configure_access(cfg, c);
}

/* The kernel caps a FUSE mount's read-ahead at 128 KiB whatever the
 * daemon asks, so sequential readers get 128 KiB requests. The mount's
 * backing device takes a larger window (root only; others keep 128 KiB).
 * Found through mountinfo: stat of the mountpoint would need this very
 * daemon to answer. */
static void raise_readahead(const char *mountpoint)
{
	char *real = realpath(mountpoint, NULL);
	FILE *mi = fopen("/proc/self/mountinfo", "r");
	char line[4096], dev[32] = "";

	while (real && mi && fgets(line, sizeof(line), mi)) {
		unsigned id, parent, major, minor;
		char root[2048], mnt[2048];

		if (sscanf(line, "%u %u %u:%u %2047s %2047s", &id, &parent,
			   &major, &minor, root, mnt) == 6 &&
		    strcmp(mnt, real) == 0)
			snprintf(dev, sizeof(dev), "%u:%u", major, minor);
	}
	if (mi)
		fclose(mi);
	free(real);
	if (dev[0]) {
		char path[96];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb",
			 dev);
		f = fopen(path, "w");
		if (f) {
			fprintf(f, "%zu\n", TFSD_MAX_READ >> 10);
			if (fclose(f) != 0)
				tfs_log(TFS_LOG_DEBUG, "read-ahead not raised");
		}
	}
}


/* The last reclaimer: what the allocator keeps of memory freed inside its
 * heaps (chunks of tiles of a few cells, cells of pieces, lists freed in
 * between others still held) goes back to the system, at most once a
 * second. M_TRIM_THRESHOLD gives back only the top of a heap, and a
 * long mixed load left tens of MB of such free pages resident. */
static uint64_t trim_heaps(void *ctx, uint64_t want)
{
	static _Atomic int64_t last_s;
	struct timespec now;
	int64_t last;

	(void)ctx;
	(void)want;
	clock_gettime(CLOCK_MONOTONIC, &now);
	last = atomic_load(&last_s);
	if (now.tv_sec > last &&
	    atomic_compare_exchange_strong(&last_s, &last, (int64_t)now.tv_sec))
		malloc_trim(0);
	return 0;
}

/* Threads of the FUSE loop at most, and what a request buffer holds
 * besides the request's data (libfuse: a page). */
#define LOOP_THREADS 16
#define LOOP_HEADER_BYTES 4096

static unsigned loop_threads(const struct fuse_cmdline_opts *fo)
{
	return fo->max_threads ? fo->max_threads : LOOP_THREADS;
}

/* The parts of the daemon that run threads, started after daemonizing
 * (fork keeps only the caller). cache= bounds the daemon's data: 3/4 for
 * decoded tiles, 1/8 for rendered files, 1/8 for the tiles and windows
 * of reads in flight (an evicted tile lives on while a reader holds it);
 * max_memory: what the caches leave, for renderings in flight. */
static enum tfs_err daemon_start(struct tfsd *fs,
				 const struct fuse_cmdline_opts *fo)
{
	unsigned threads = fs->cfg.threads ? fs->cfg.threads : tfs_cpu_count();

	fs->render_limit = tfsd_data_limit(&fs->cfg);
	tfs_mem_configure(tfs_mem_global(), tfsd_mem_budget(&fs->cfg),
			  TFSD_MEM_WAIT_MS);
	/* Each thread of the FUSE loop keeps a buffer of the largest
	 * request (libfuse's, never freed while the thread lives): counted
	 * for as many threads as the loop may run, unless that is more than
	 * a quarter of the budget (a cache= or max_memory= of a few MB
	 * cannot hold them, and still serves small reads). */
	fs->loop_bytes = (uint64_t)(fo->singlethread ? 1 : loop_threads(fo)) *
			 (TFSD_MAX_READ + LOOP_HEADER_BYTES);
	if (fs->loop_bytes > tfs_mem_budget(tfs_mem_global()) / 4)
		fs->loop_bytes = 0;
	tfs_mem_force_charge(tfs_mem_global(), fs->loop_bytes);
	if (tfs_tile_cache_new(fs->cfg.cache_bytes / 4 * 3, &fs->tiles) ||
	    tfs_pool_new(threads - 1, &fs->pool) ||
	    tfsd_arrays_new(&fs->cfg, fs->tiles, fs->pool, &fs->arrays) ||
	    tfsd_renders_new(fs->cfg.cache_bytes / 8, &fs->renders) ||
	    tfsd_prefetch_new(fs->arrays, &fs->prefetch) ||
	    (!fs->cfg.read_only && tfsd_ilog_new(&fs->ilog)) ||
	    tfs_mem_reclaimer_add(tfs_mem_global(), trim_heaps, NULL))
		return TFS_E_NOMEM;
	return TFS_E_OK;
}

/* Frees what daemon_start and main made of the daemon; NULL parts are
 * fine. */
static void daemon_release(struct tfsd_ll *ll)
{
	struct tfsd *fs = &ll->fs;

	tfs_mem_reclaimer_remove(tfs_mem_global(), trim_heaps, NULL);
	tfs_mem_uncharge(tfs_mem_global(), fs->loop_bytes);
	fs->loop_bytes = 0;
	tfsd__fh_free_all(ll);
	tfsd_staging_free(fs->staging);
	tfsd_ilog_free(fs->ilog);
	tfs_free(fs->cfg.staging);
	fs->cfg.staging = NULL;
	tfsd_prefetch_free(fs->prefetch);
	tfsd_renders_free(fs->renders);
	tfsd_arrays_free(fs->arrays);
	tfs_pool_free(fs->pool);
	tfs_tile_cache_free(fs->tiles);
	tfsd_config_release(&fs->cfg);
	tfsd_itable_free(ll->itab);
}

/* Serves requests until unmounted: 0, or 1 when the loop failed. */
static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *fo)
{
	struct fuse_loop_config *loop = fuse_loop_cfg_create();
	int ret;

	if (!loop)
		return 1;
	fuse_loop_cfg_set_clone_fd(loop, (unsigned)fo->clone_fd);
	fuse_loop_cfg_set_max_threads(loop, loop_threads(fo));
	fuse_loop_cfg_set_idle_threads(loop, fo->max_idle_threads != UINT_MAX
						     ? fo->max_idle_threads
						     : 8);
	ret = fo->singlethread ? fuse_session_loop(se)
			       : fuse_session_loop_mt(se, loop);
	fuse_loop_cfg_destroy(loop);
	return ret < 0 ? 1 : 0;
}

/* Mounts, serves and unmounts; the exit status. */
static int run(struct tfsd_ll *ll, struct fuse_args *args,
	       const struct fuse_cmdline_opts *fo)
{
	struct tfsd *fs = &ll->fs;
	struct tfsd_cleaner *cleaner = NULL;
	struct fuse_session *se;
	int ret = 1;

	se = fuse_session_new(args, &tfsd_ll_ops, sizeof(tfsd_ll_ops), ll);
	if (!se)
		return 1;
	ll->se = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, fo->mountpoint) != 0)
		goto out_signals;
	tfs_log(TFS_LOG_INFO, "mounted '%s' on '%s'%s", fs->cfg.source,
		fs->cfg.mountpoint, fs->cfg.read_only ? " (read-only)" : "");
	raise_readahead(fo->mountpoint);
	if (fuse_daemonize(fo->foreground) != 0)
		goto out_unmount;
	if (daemon_start(fs, fo)) {
		tfs_log(TFS_LOG_ERROR, "cannot start: out of memory");
		goto out_unmount;
	}
	if (!fs->cfg.read_only && tfsd_cleaner_start(fs, &cleaner))
		tfs_log(TFS_LOG_ERROR, "leftovers of crashed writes will not be "
				       "cleaned up: cannot start a thread");
	ret = serve(se, fo);
	{
		struct tfs_mem_stats ms;

		tfs_mem_get_stats(tfs_mem_global(), &ms);
		tfs_log(TFS_LOG_INFO, "memory: at most %" PRIu64 " bytes counted "
			"of a budget of %" PRIu64 ", %" PRIu64 " waits for room, %"
			PRIu64 " refused", ms.high, ms.budget, ms.waits,
			ms.refusals);
	}
out_unmount:
	tfsd_cleaner_stop(cleaner);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	ll->se = NULL;
	fuse_session_destroy(se);
	return ret;
}

/* What must exist before the session: the mount options libfuse adds,
 * the staging folder and the inode table. 0 or the exit status. */
static int prepare(struct tfsd_ll *ll, struct fuse_args *args,
		   const struct cli *c)
{
	struct tfsd *fs = &ll->fs;

	/* Files are at most TFSD_MAX_READ per request; the kernel caps it
	 * too. */
	if (fuse_opt_add_arg(args, "-omax_read=1048576") != 0)
		return 1;
	if (!fs->cfg.read_only) {
		struct tfs_diag d;

		tfs_diag_init(&d);
		if (tfsd_staging_new(fs->cfg.staging, &fs->staging, &d)) {
			fprintf(stderr, "tilefs: %s\n", tfs_diag_msg(&d));
			return 1;
		}
	}
	/* Other users see the mount only under the modes of SOURCE: the
	 * daemon does no permission checks of its own. */
	if (c->allow_other && !c->default_permissions &&
	    fuse_opt_add_arg(args, "-odefault_permissions") != 0)
		return 1;
	if (tfsd_itable_new(16, &ll->itab))
		return 1;
	return 0;
}

static void cli_release(struct cli *c)
{
	free(c->source);
	free(c->key);
	free(c->keyfile);
	free(c->cache);
	free(c->threads);
	free(c->timestamp);
	free(c->whole_max);
	free(c->staging);
	free(c->cleanup_grace);
	free(c->max_cells);
	free(c->max_memory);
	free(c->s3_endpoint);
	free(c->s3_region);
	free(c->s3_addressing);
	free(c->s3_verify_tls);
	free(c->s3_credentials);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts fo = {0};
	struct tfsd_ll ll = {.fh_lock = PTHREAD_MUTEX_INITIALIZER};
	struct cli c = {0};
	int ret = 2;

	/* Memory stays near cache=: few malloc arenas for the many request
	 * threads (each arena keeps what it freed); buffers of tiles and
	 * renderings (256 KiB and more) mapped on their own and given back
	 * to the system when freed (a fixed threshold: glibc would raise
	 * it to the largest buffer freed, and keep those in the heap). */
	mallopt(M_ARENA_MAX, 2);
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	mallopt(M_TRIM_THRESHOLD, 1 << 20);
	if (fuse_opt_parse(&args, &c, cli_opts, cli_proc) != 0)
		return 2;
	scrub_keys(argc, argv);
	if (fuse_parse_cmdline(&args, &fo) != 0)
		goto out_args;
	ret = 0;
	if (fo.show_help) {
		usage(argv[0]);
		goto out_args;
	}
	if (fo.show_version) {
		printf("tilefs %s\n", TILEFS_VERSION);
		printf("FUSE library version %s\n", fuse_pkgversion());
		goto out_args;
	}
	ret = configure(&ll.fs.cfg, &c, &fo);
	if (ret)
		goto out_daemon;
	if (!fo.foreground)
		openlog("tilefs", LOG_PID, LOG_DAEMON);
	tfs_log_configure(fo.foreground ? log_stderr : log_syslog,
			  fo.debug ? TFS_LOG_DEBUG : TFS_LOG_INFO);
	ret = prepare(&ll, &args, &c);
	if (!ret)
		ret = run(&ll, &args, &fo);
out_daemon:
	daemon_release(&ll);
	{
		/* Everything is closed: what stays counted past the spare
		 * buffers is a charge never given back. */
		struct tfs_mem_stats ms;

		tfs_mem_reclaim_all(tfs_mem_global());
		tfs_mem_get_stats(tfs_mem_global(), &ms);
		if (ms.used)
			tfs_log(TFS_LOG_ERROR, "memory: %" PRIu64 " bytes still "
				"counted after every file, array and cache "
				"was closed", ms.used);
	}
out_args:
	free(fo.mountpoint);
	cli_release(&c);
	fuse_opt_free_args(&args);
	return ret;
}
