/* tfs-fuse-limit: the FUSE limit of this machine, for the benchmark
 * (scripts/bench.sh). A low-level FUSE file system of one file, `data`,
 * whose bytes (SIZE of them, a fixed pattern) are in memory: a read costs
 * the kernel's round trip and one copy, nothing else. It mounts with the
 * options tilefs uses (1 MiB requests, asynchronous reads, the
 * multi-threaded loop), so `cat MOUNT/data` is as fast as any FUSE daemon
 * can serve a file here; --direct serves it with direct I/O, as tilefs
 * serves streams whose size is not known.
 *
 *   tfs-fuse-limit [--direct] SIZE MOUNTPOINT     (runs in the foreground)
 */
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_READ ((size_t)1 << 20)
#define DATA_INO 2

static uint8_t *data;
static uint64_t data_size;
static bool direct;

static void limit_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	conn->max_readahead = (unsigned)MAX_READ;
	conn->max_read = (unsigned)MAX_READ;
	conn->max_write = (unsigned)MAX_READ;
}

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)data_size;
	}
}

static void limit_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, "data") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DATA_INO;
	e.attr_timeout = 3600;
	e.entry_timeout = 3600;
	fill_stat(DATA_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void limit_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != DATA_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void limit_open(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	if (ino != DATA_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = direct;
	fi->keep_cache = !direct;
	fuse_reply_open(req, fi);
}

static void limit_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	uint64_t o = (uint64_t)off;

	(void)ino;
	(void)fi;
	if (o >= data_size)
		size = 0;
	else if (size > data_size - o)
		size = (size_t)(data_size - o);
	fuse_reply_buf(req, (const char *)data + (o < data_size ? o : 0), size);
}

static const struct fuse_lowlevel_ops limit_ops = {
	.init = limit_init,
	.lookup = limit_lookup,
	.getattr = limit_getattr,
	.open = limit_open,
	.read = limit_read,
};

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	struct fuse_loop_config *loop;
	int argi = 1, ret = 1;
	char *end;

	if (argi < argc && strcmp(argv[argi], "--direct") == 0) {
		direct = true;
		argi++;
	}
	if (argc - argi != 2) {
		fprintf(stderr, "usage: tfs-fuse-limit [--direct] SIZE MOUNTPOINT\n");
		return 2;
	}
	errno = 0;
	data_size = strtoull(argv[argi], &end, 10);
	if (errno || *end || data_size == 0 || data_size > ((uint64_t)1 << 34)) {
		fprintf(stderr, "tfs-fuse-limit: bad size '%s'\n", argv[argi]);
		return 2;
	}
	data = malloc((size_t)data_size);
	if (!data) {
		fprintf(stderr, "tfs-fuse-limit: out of memory\n");
		return 1;
	}
	for (uint64_t i = 0; i < data_size; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	if (fuse_opt_add_arg(&args, argv[0]) ||
	    fuse_opt_add_arg(&args, "-omax_read=1048576") ||
	    fuse_opt_add_arg(&args, "-ofsname=tfs-fuse-limit"))
		goto out_free;
	se = fuse_session_new(&args, &limit_ops, sizeof(limit_ops), NULL);
	if (!se)
		goto out_args;
	if (fuse_set_signal_handlers(se) || fuse_session_mount(se, argv[argi + 1]))
		goto out_session;
	loop = fuse_loop_cfg_create();
	if (loop) {
		fuse_loop_cfg_set_max_threads(loop, 16);
		ret = fuse_session_loop_mt(se, loop) ? 1 : 0;
		fuse_loop_cfg_destroy(loop);
	}
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	fuse_opt_free_args(&args);
out_free:
	free(data);
	return ret;
}
