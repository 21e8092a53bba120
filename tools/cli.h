/* What the subcommands of `tfs` share: exit statuses that scripts can rely
 * on, one mapping from the engine's error codes to them, one-line error
 * messages, and the parsing of the options every subcommand takes. */
#ifndef TFS_CLI_H
#define TFS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include <tilefs/tilefs.h>

/* Exit statuses of every subcommand. 0-3 are also those of `tfs dump`,
 * whose contract (corpus/README.md) predates the others. */
enum cli_status {
	CLI_OK = 0,
	CLI_ERROR = 1,       /* anything else: out of memory, internal */
	CLI_USAGE = 2,       /* bad options or arguments */
	CLI_NOT_FOUND = 3,   /* no such path, not an array or group */
	CLI_REFUSED = 4,     /* input refused: bad CSV, schema, selection */
	CLI_IO = 5,          /* I/O error, corrupt data, checksum, no space */
	CLI_KEY = 6,         /* missing or wrong encryption key */
	CLI_UNSUPPORTED = 7, /* format feature or filter not supported */
	CLI_EXISTS = 8,      /* the target already exists */
};

/* The exit status for an engine error code. */
enum cli_status cli_status_of(enum tfs_err e);

/* "tfs CMD: message\n" on stderr. */
void cli_errorf(const char *cmd, const char *fmt, ...) TFS_PRINTF(2, 3);
/* Reports d's message and returns the status of its code. */
enum cli_status cli_fail(const char *cmd, const struct tfs_diag *d,
			 enum tfs_err e);
/* Reports why and returns CLI_USAGE, pointing at `tfs CMD --help`. */
enum cli_status cli_usage(const char *cmd, const char *why);

/* Options most subcommands take. */
struct cli_common {
	const char *key_hex;
	uint8_t key[32];
	bool has_key;
	uint64_t timestamp; /* 0 = now */
	unsigned threads;   /* 0 = one per CPU */
};

/* Parses --key HEX, --timestamp T (ms or ISO-8601 UTC), --threads N
 * values; false (reported as usage) when the text is bad. */
bool cli_parse_key(const char *cmd, struct cli_common *c, const char *hex);
bool cli_parse_timestamp(const char *cmd, struct cli_common *c,
			 const char *text);
bool cli_parse_threads(const char *cmd, struct cli_common *c,
		       const char *text);
bool cli_parse_u64(const char *text, uint64_t *out);
/* The getopt_long values of --key, --timestamp and --threads, and the
 * first one free for a subcommand's own options. */
enum { CLI_OPT_KEY = 256, CLI_OPT_TIMESTAMP, CLI_OPT_THREADS, CLI_OPT_OWN };
/* Their rows of a subcommand's struct option table (<getopt.h>). */
#define CLI_COMMON_LONGOPTS                                            \
	{"key", required_argument, NULL, CLI_OPT_KEY},                 \
	{"timestamp", required_argument, NULL, CLI_OPT_TIMESTAMP},     \
	{"threads", required_argument, NULL, CLI_OPT_THREADS}
/* Takes opt, a value of getopt_long, when it is one of the common
 * options: 1 taken, 0 not one of them, -1 a bad value (reported). */
int cli_common_opt(const char *cmd, struct cli_common *c, int opt,
		   const char *arg);
/* Wipes the key from memory. */
void cli_common_release(struct cli_common *c);

/* A storage confined to the array at path (at_parent: to the folder that
 * will hold it, for arrays yet to be made), so that no symbolic link
 * inside an array is followed (tfs_vfs_posix_new_rooted). *use is path
 * as that storage takes it (free with tfs_free). When the folder cannot
 * be opened (no such path), *vfs is NULL and *use a copy of path: the
 * engine then reports what is wrong as before. false: out of memory. */
bool cli_rooted(const char *path, bool at_parent, struct tfs_vfs **vfs,
		char **use);

/* The subcommands; argv[0] is the subcommand's name. */
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_ingest(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_consolidate(int argc, char **argv);
int cmd_vacuum(int argc, char **argv);

#endif
