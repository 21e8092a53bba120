/* The daemon's option values: sizes and keys as users type them (SPEC
 * §1; times are render/time_text.c's), and the table of the options
 * --help prints. Pure functions plus the keyfile reader; the command line
 * itself is parsed in main.c with fuse_opt. */
#include "tfsd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tfs_alloc.h"
#include "tfs_log.h"

void tfsd_config_release(struct tfsd_config *c)
{
	tfs_free(c->source);
	tfs_vfs_free(c->vfs);
	tfs_free(c->mountpoint);
	for (size_t i = 0; i < c->key_num; i++) {
		memset(c->keys[i].key, 0, sizeof(c->keys[i].key));
		tfs_free(c->keys[i].path);
	}
	tfs_free(c->keys);
	memset(c->default_key, 0, sizeof(c->default_key));
	memset(c, 0, sizeof(*c));
}

enum tfs_err tfsd_config_set_source(struct tfsd_config *c, const char *source,
				    struct tfs_diag *d)
{
	char *real = realpath(source, NULL);
	enum tfs_err e;

	if (!real)
		return tfs_fail(d, errno == ENOMEM ? TFS_E_NOMEM : TFS_E_NOT_FOUND,
				"source '%s': %s", source, strerror(errno));
	tfs_free(c->source);
	tfs_vfs_free(c->vfs);
	c->vfs = NULL;
	c->source = tfs_strdup(real);
	free(real);
	if (!c->source)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = tfs_vfs_posix_new_rooted(c->source, &c->vfs, d);
	if (e) {
		tfs_free(c->source);
		c->source = NULL;
	}
	return e;
}

enum tfs_err tfsd_parse_size(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!isdigit((unsigned char)text[0]))
		return TFS_E_INVALID;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno)
		return TFS_E_RANGE;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: return TFS_E_INVALID;
	}
	if (*end == 'B' || *end == 'b' || (shift && (*end == 'i')))
		end += *end == 'i' ? (end[1] == 'B' ? 2 : 1) : 1;
	if (*end)
		return TFS_E_INVALID;
	if (shift && v > (UINT64_MAX >> shift))
		return TFS_E_RANGE;
	*out = (uint64_t)v << shift;
	return TFS_E_OK;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tfsd_key *)a)->path,
		      ((const struct tfsd_key *)b)->path);
}

/* Strips leading and trailing '/' so "a/b/", "/a/b" and "a/b" agree. */
static char *norm_path(const char *s, size_t n)
{
	while (n && *s == '/') {
		s++;
		n--;
	}
	while (n && s[n - 1] == '/')
		n--;
	return tfs_strndup(s, n);
}

/* As ssh with private keys: keys others may read or change are not
 * secret, unless the mount says so (keyfile_insecure). */
static enum tfs_err keyfile_check_owner(const struct tfsd_config *c,
					const char *path,
					const struct stat *st,
					struct tfs_diag *d)
{
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		if (!c->keyfile_insecure)
			return tfs_fail(d, TFS_E_PERM,
					"keyfile '%s': owned by uid %u, not by "
					"uid %u or root (-o keyfile_insecure "
					"allows it)",
					path, (unsigned)st->st_uid,
					(unsigned)geteuid());
		tfs_log(TFS_LOG_WARN, "keyfile '%s': owned by uid %u "
				      "(allowed by keyfile_insecure)",
			path, (unsigned)st->st_uid);
	}
	if (st->st_mode & 0066) {
		if (!c->keyfile_insecure)
			return tfs_fail(d, TFS_E_PERM,
					"keyfile '%s': mode %04o lets group or "
					"others read or write it; chmod 600 it "
					"(-o keyfile_insecure allows it)",
					path, (unsigned)(st->st_mode & 07777));
		tfs_log(TFS_LOG_WARN, "keyfile '%s': mode %04o lets group or "
				      "others read or write it (allowed by "
				      "keyfile_insecure)",
			path, (unsigned)(st->st_mode & 07777));
	}
	return TFS_E_OK;
}

/* Opens the keyfile for reading once it is a regular file kept private. */
static enum tfs_err keyfile_open(const struct tfsd_config *c,
				 const char *path, FILE **out,
				 struct tfs_diag *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	enum tfs_err e;

	*out = NULL;
	if (fd < 0) {
		int err = errno;

		if (err == ENOENT)
			return tfs_fail(d, TFS_E_NOT_FOUND,
					"keyfile '%s': no such file", path);
		return tfs_fail(d, err == EACCES ? TFS_E_PERM : TFS_E_IO,
				"keyfile '%s': cannot be read by uid %u: %s",
				path, (unsigned)geteuid(), strerror(err));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return tfs_fail(d, TFS_E_INVALID,
				"keyfile '%s': not a regular file", path);
	}
	if ((e = keyfile_check_owner(c, path, &st, d))) {
		close(fd);
		return e;
	}
	*out = fdopen(fd, "r");
	if (!*out) {
		close(fd);
		return tfs_fail(d, TFS_E_NOMEM, "keyfile '%s': out of memory",
				path);
	}
	return TFS_E_OK;
}

/* Stores key for the array path p (plen bytes), or as the default for
 * "*". */
static enum tfs_err keyfile_add(struct tfsd_config *c, const char *p,
				size_t plen, const uint8_t *key,
				const char *path, struct tfs_diag *d)
{
	struct tfsd_key *k;

	if (plen == 1 && *p == '*') {
		memcpy(c->default_key, key, 32);
		c->has_default_key = true;
		return TFS_E_OK;
	}
	k = tfs_reallocn(c->keys, c->key_num + 1, sizeof(*k));
	if (!k)
		return tfs_fail(d, TFS_E_NOMEM, "keyfile '%s': out of memory", path);
	c->keys = k;
	k[c->key_num].path = norm_path(p, plen);
	if (!k[c->key_num].path)
		return tfs_fail(d, TFS_E_NOMEM, "keyfile '%s': out of memory", path);
	memcpy(k[c->key_num].key, key, 32);
	c->key_num++;
	return TFS_E_OK;
}

/* One line: blank, a '#' comment, or "PATH HEXKEY". The key digits are
 * wiped from line once read. */
static enum tfs_err keyfile_line(struct tfsd_config *c, char *line,
				 const char *path, unsigned lineno,
				 struct tfs_diag *d)
{
	char *p = line, *sep, *hex;
	size_t plen, hlen;
	uint8_t key[32];
	enum tfs_err e;

	while (isspace((unsigned char)*p))
		p++;
	if (!*p || *p == '#')
		return TFS_E_OK;
	sep = p + strcspn(p, " \t");
	plen = (size_t)(sep - p);
	hex = sep + strspn(sep, " \t");
	hlen = strcspn(hex, " \t\r\n");
	if (!*sep || hlen != 64 || hex[hlen + strspn(hex + hlen, " \t\r\n")])
		return tfs_fail(d, TFS_E_INVALID,
				"keyfile '%s' line %u: expected 'PATH "
				"HEXKEY' with a 64-digit key",
				path, lineno);
	hex[hlen] = '\0';
	if (tfs_key_from_hex(key, hex))
		return tfs_fail(d, TFS_E_INVALID,
				"keyfile '%s' line %u: key is not 64 hex "
				"digits",
				path, lineno);
	memset(hex, 0, hlen);
	e = keyfile_add(c, p, plen, key, path, d);
	memset(key, 0, sizeof(key));
	return e;
}

enum tfs_err tfsd_keyfile_load(struct tfsd_config *c, const char *path,
			       struct tfs_diag *d)
{
	char line[4096];
	unsigned lineno = 0;
	enum tfs_err e;
	FILE *f;

	if ((e = keyfile_open(c, path, &f, d)))
		return e;
	while (!e && fgets(line, sizeof(line), f))
		e = keyfile_line(c, line, path, ++lineno, d);
	memset(line, 0, sizeof(line));
	fclose(f);
	/* A keyfile of only a default has no list (qsort takes no NULL). */
	if (!e && c->key_num)
		qsort(c->keys, c->key_num, sizeof(*c->keys), key_cmp);
	return e;
}

uint64_t tfsd_mem_budget(const struct tfsd_config *c)
{
	/* The render cache has cache/8; thread stacks, small allocations,
	 * the allocator's slack and what is counted only once allocated
	 * (the growth of windows and of pieces past their estimate: about
	 * 1 MB over the budget at its high-water mark) 3/4 of
	 * TFSD_MEM_SLACK (3/8 of max_memory), as measured by
	 * tests/integration/soak_memory.sh. The FUSE loop's request buffers
	 * are counted in the budget (daemon_start). */
	if (c->max_memory)
		return c->max_memory / 8 * 5 - c->cache_bytes / 8;
	return c->cache_bytes - c->cache_bytes / 8 + TFSD_MEM_SLACK / 4;
}

uint64_t tfsd_data_limit(const struct tfsd_config *c)
{
	/* The options keep cache= at half of max_memory at most. */
	if (c->cache_bytes >= c->max_memory)
		return c->max_memory / 2;
	return c->max_memory - c->cache_bytes;
}

bool tfsd_config_has_own_key(const struct tfsd_config *c, const char *rel)
{
	struct tfsd_key probe = {.path = (char *)rel};

	return c->key_num && bsearch(&probe, c->keys, c->key_num,
				     sizeof(*c->keys), key_cmp);
}

const uint8_t *tfsd_config_key(const struct tfsd_config *c, const char *rel)
{
	struct tfsd_key probe = {.path = (char *)rel};
	const struct tfsd_key *k;

	if (c->key_num) {
		k = bsearch(&probe, c->keys, c->key_num, sizeof(*c->keys),
			    key_cmp);
		if (k)
			return k->key;
	}
	return c->has_default_key ? c->default_key : NULL;
}

/* The one list of the daemon's options: --help prints it, the man page's
 * OPTIONS section documents the same names (tests/docs/options_doc.sh). The
 * command line itself is parsed in main.c with fuse_opt, which needs
 * offsets into its own struct; a name added here must be added there
 * too, and a name added there and not here fails that test. */
const struct tfsd_option tfsd_options[] = {
	{"ro", NULL, NULL,
	 "read-only mount: every write fails with EROFS (otherwise the mount "
	 "takes writes)"},
	{"key", "HEX", NULL,
	 "AES-256 key (64 hex digits) for encrypted arrays; arrays that are "
	 "not encrypted still open; wiped from the process's command line at "
	 "start-up and never logged"},
	{"keyfile", "PATH", NULL,
	 "keys per array: one 'relative/array/path HEXKEY' per line, '*' as "
	 "the path of a default key, '#' starts a comment; as ssh does with "
	 "private keys, refused at mount, saying why, when group or others "
	 "may read or write it or another user than the daemon's (or root) "
	 "owns it"},
	{"keyfile_insecure", NULL, NULL,
	 "take such a keyfile anyway, with a log line"},
	{"cache", "SIZE", "256M",
	 "byte budget of decoded tiles, shared by all arrays; a number of "
	 "bytes with k, M, G or T as a suffix"},
	{"threads", "N", "one per CPU", "decode threads, 1 to 1024"},
	{"timestamp", "T", NULL,
	 "show every array as of T: milliseconds since the epoch or ISO-8601 "
	 "UTC (2023-11-14T22:13:22Z); such a mount is read-only"},
	{"whole_max", "N", "65536",
	 "text renderings of selections of up to N cells (times fields) are "
	 "rendered whole at the first stat and listed; larger ones are not "
	 "listed, open by name, and stream (their exact size counted at the "
	 "first stat)"},
	{"staging", "DIR", "a new tilefs-staging.PID.XXXXXX in $TMPDIR or /tmp",
	 "folder for the bytes of files being written, until their commit; "
	 "never inside SOURCE (refused at mount); the default one is removed "
	 "at unmount, and the folders of daemons that died are removed by the "
	 "next mount"},
	{"cleanup_grace", "S", "900",
	 "uncommitted fragment folders older than S seconds are a crashed "
	 "write's and are removed, at mount time and every 10 minutes"},
	{"list_history", NULL, NULL,
	 "list versions/, each field's tiles/ and a version's fragments/ "
	 "(by default they are reachable by name but not listed, like "
	 "ZFS's .zfs, so that find, cp -r, rsync and tar of an array do not "
	 "walk its history)"},
	{"max_cells", "N", "no limit",
	 "cells of one file at most (dense: checked at stat and open; sparse: "
	 "while reading); more fail with EFBIG and a log line"},
	{"max_memory", "SIZE", "no limit",
	 "the daemon's data at most, caches included, 1M or more; cache= "
	 "shrinks to half of it if larger; an open or read whose rendering "
	 "(files rendered whole count while open) or tile would go over fails "
	 "with ENOMEM and a log line"},
	{"s3_endpoint", "URL", "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, ~/.aws/config or AWS",
	 "S3 endpoint when SOURCE is s3://bucket/prefix; a custom endpoint "
	 "means path-style addressing"},
	{"s3_region", "NAME", "AWS_REGION, AWS_DEFAULT_REGION, ~/.aws/config or us-east-1",
	 "S3 region, for request signing"},
	{"s3_addressing", "path|virtual", NULL,
	 "S3 bucket in the path or in the host name"},
	{"s3_verify_tls", "0|1", "1",
	 "check the S3 server's TLS certificate"},
	{"s3_credentials", "FILE", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws/credentials",
	 "AWS credentials file (profile AWS_PROFILE or default) for S3; keys "
	 "never appear in logs or the command line"},
	{"-f", NULL, NULL,
	 "stay in the foreground and log to stderr (otherwise to syslog as "
	 "tilefs[PID])"},
	{"-d", NULL, NULL, "debug log of every request (implies -f)"},
	{"-s", NULL, NULL, "single-threaded request loop"},
	{"-h, --help", NULL, NULL, "print this help and exit"},
	{"-V, --version", NULL, NULL,
	 "print the version of tilefs and of the FUSE library, and exit"},
	{NULL, NULL, NULL, NULL},
};

/* Column of the descriptions, and the width they wrap to. */
#define HELP_COL 27
#define HELP_WIDTH 80

/* Prints text word by word from column col, wrapping at HELP_WIDTH to
 * HELP_COL; returns the column after the last word. */
static size_t help_words(FILE *f, const char *text, size_t col)
{
	const char *p = text;

	while (*p) {
		size_t n;

		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (!n)
			break;
		if (col > HELP_COL && col + 1 + n > HELP_WIDTH) {
			fprintf(f, "\n%*s", HELP_COL, "");
			col = HELP_COL;
		} else if (col > HELP_COL) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, n, f);
		col += n;
		p += n;
	}
	return col;
}

void tfsd_options_print_help(FILE *f, const char *prog)
{
	fprintf(f, "usage: %s [options] SOURCE MOUNTPOINT\n\n"
		   "Shows every TileDB array under SOURCE as files and "
		   "folders.\n\n"
		   "tilefs options:\n",
		prog);
	for (const struct tfsd_option *o = tfsd_options; o->name; o++) {
		int len;
		size_t col;

		if (o->name[0] == '-')
			len = fprintf(f, "    %s", o->name);
		else
			len = fprintf(f, "    -o %s%s%s", o->name,
				      o->arg ? "=" : "", o->arg ? o->arg : "");
		if (len < 0)
			return;
		if ((size_t)len + 2 > HELP_COL) /* two spaces before the text */
			fprintf(f, "\n%*s", HELP_COL, "");
		else
			fprintf(f, "%*s", HELP_COL - len, "");
		col = help_words(f, o->help, HELP_COL);
		if (o->def) {
			char def[128];

			snprintf(def, sizeof(def), "(default: %s)", o->def);
			help_words(f, def, col);
		}
		fputc('\n', f);
	}
	fputs("\nFUSE options:\n", f);
}
