/* Shared parts of the `tfs` subcommands: exit statuses, messages and the
 * options most of them take (cli.h). */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_render.h"

enum cli_status cli_status_of(enum tfs_err e)
{
	switch (e) {
	case TFS_E_OK:
		return CLI_OK;
	case TFS_E_NOT_FOUND:
	case TFS_E_NOT_ARRAY:
		return CLI_NOT_FOUND;
	case TFS_E_INVALID:
	case TFS_E_RANGE:
	case TFS_E_TOO_BIG:
	case TFS_E_NAME_TOO_LONG:
		return CLI_REFUSED;
	case TFS_E_IO:
	case TFS_E_CORRUPT:
	case TFS_E_CHECKSUM:
	case TFS_E_NOSPC:
	case TFS_E_READONLY:
	case TFS_E_PERM:
		return CLI_IO;
	case TFS_E_KEY:
		return CLI_KEY;
	case TFS_E_UNSUPPORTED:
		return CLI_UNSUPPORTED;
	case TFS_E_EXISTS:
		return CLI_EXISTS;
	case TFS_E_NOMEM:
	case TFS_E_BUSY:
	case TFS_E_INTERNAL:
	/* The daemon's own: the tool meets none of them. */
	case TFS_E_NOT_DIR:
	case TFS_E_IS_DIR:
	case TFS_E_BAD_HANDLE:
	case TFS_E_NO_ATTR:
	case TFS_E_INTR:
	case TFS_E__COUNT:
		break;
	}
	return CLI_ERROR;
}

void cli_errorf(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tfs %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

enum cli_status cli_fail(const char *cmd, const struct tfs_diag *d,
			 enum tfs_err e)
{
	cli_errorf(cmd, "%s", d && d->code ? tfs_diag_msg(d) : tfs_strerror(e));
	return cli_status_of(e);
}

enum cli_status cli_usage(const char *cmd, const char *why)
{
	if (why)
		cli_errorf(cmd, "%s (see tfs %s --help)", why, cmd);
	return CLI_USAGE;
}

bool cli_parse_u64(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!text[0] || strchr(text, '-') || strchr(text, ' '))
		return false;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool cli_parse_key(const char *cmd, struct cli_common *c, const char *hex)
{
	if (tfs_key_from_hex(c->key, hex)) {
		cli_usage(cmd, "--key takes 64 hex digits");
		return false;
	}
	c->key_hex = hex;
	c->has_key = true;
	return true;
}

bool cli_parse_timestamp(const char *cmd, struct cli_common *c,
			 const char *text)
{
	if (tfsr_parse_time(text, &c->timestamp) || c->timestamp == 0) {
		cli_usage(cmd, "--timestamp takes milliseconds since the epoch "
			       "or ISO-8601 UTC");
		return false;
	}
	return true;
}

bool cli_parse_threads(const char *cmd, struct cli_common *c,
		       const char *text)
{
	uint64_t v;

	if (!cli_parse_u64(text, &v) || v > 1024) {
		cli_usage(cmd, "--threads takes 0..1024 (0 = one per CPU)");
		return false;
	}
	c->threads = (unsigned)v;
	return true;
}

int cli_common_opt(const char *cmd, struct cli_common *c, int opt,
		   const char *arg)
{
	bool ok;

	switch (opt) {
	case CLI_OPT_KEY:
		ok = cli_parse_key(cmd, c, arg);
		break;
	case CLI_OPT_TIMESTAMP:
		ok = cli_parse_timestamp(cmd, c, arg);
		break;
	case CLI_OPT_THREADS:
		ok = cli_parse_threads(cmd, c, arg);
		break;
	default:
		return 0;
	}
	return ok ? 1 : -1;
}

void cli_common_release(struct cli_common *c)
{
	memset(c->key, 0, sizeof(c->key));
	c->has_key = false;
}

bool cli_rooted(const char *path, bool at_parent, struct tfs_vfs **vfs,
		char **use)
{
	size_t len = strlen(path), cut;
	struct tfs_diag d;
	char *root;

	*vfs = NULL;
	*use = NULL;
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (!at_parent) {
		root = tfs_strndup(path, len);
		*use = tfs_strndup(path, len);
	} else {
		cut = len;
		while (cut > 0 && path[cut - 1] != '/')
			cut--;
		if (cut == 0) {
			/* "arr": the current folder holds it, spelled "./arr"
			 * so that the storage sees it below ".". */
			root = tfs_strdup(".");
			*use = tfs_malloc(len + 3);
			if (*use) {
				memcpy(*use, "./", 2);
				memcpy(*use + 2, path, len);
				(*use)[len + 2] = '\0';
			}
		} else {
			root = tfs_strndup(path, cut > 1 ? cut - 1 : 1);
			*use = tfs_strndup(path, len);
		}
	}
	if (!root || !*use) {
		tfs_free(root);
		tfs_free(*use);
		*use = NULL;
		return false;
	}
	tfs_diag_init(&d);
	if (tfs_vfs_posix_new_rooted(root, vfs, &d) != TFS_E_OK)
		*vfs = NULL;
	tfs_free(root);
	return true;
}
