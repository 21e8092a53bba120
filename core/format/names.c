/* Timestamped names of fragments, schemas, metadata and commit files,
 * parsed the way TileDB's FragmentID does (format/layout.md §2, "Parsing a
 * name"): extension stripped at the last '.', name version chosen by the
 * count of '_' and the length of the last component.
 *
 * Where TileDB's sscanf would silently leave a timestamp at 0, we refuse
 * the name instead: a component that must be a decimal number and is not
 * makes the name "not a timestamped name" (TFS_E_INVALID).
 *
 * New names are made here too, so that the writer and consolidation make
 * them one way; their uuid is the one thing in this module that is not a
 * function of its input (random bytes from the kernel). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "tfs_format.h"

#define UUID_LEN 32

/* Parses exactly n decimal digits as a u64; false on overflow, on an empty
 * string or on a non-digit. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned dig;

		if (s[i] < '0' || s[i] > '9')
			return false;
		dig = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - dig) / 10)
			return false;
		v = v * 10 + dig;
	}
	*out = v;
	return true;
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

static void set_uuid(struct tfs_name_info *out, const char *s, size_t n)
{
	if (n == UUID_LEN && is_hex(s, n)) {
		memcpy(out->uuid, s, UUID_LEN);
		out->uuid[UUID_LEN] = '\0';
	}
}

/* "__<t1>_<t2>" at the start of name (len bytes). */
static bool scan_t1_t2(const char *name, size_t len, uint64_t *t1,
		       uint64_t *t2)
{
	const char *p = name + 2, *end = name + len, *us;

	if (len < 2 || name[0] != '_' || name[1] != '_')
		return false;
	us = memchr(p, '_', (size_t)(end - p));
	if (!us || !parse_u64(p, (size_t)(us - p), t1))
		return false;
	p = us + 1;
	us = memchr(p, '_', (size_t)(end - p));
	if (!us)
		us = end;
	return parse_u64(p, (size_t)(us - p), t2);
}

enum tfs_err tfs_name_parse(const char *name, struct tfs_name_info *out)
{
	const char *start, *last_us, *dot;
	size_t len, underscores = 0, last_len;

	memset(out, 0, sizeof(*out));
	if (!name)
		return TFS_E_INVALID;
	/* Last path component, trailing slashes removed. */
	len = strlen(name);
	while (len > 0 && name[len - 1] == '/')
		len--;
	start = name;
	for (size_t i = 0; i < len; i++)
		if (name[i] == '/')
			start = name + i + 1;
	len -= (size_t)(start - name);

	/* Extension: everything from the last '.'. */
	dot = NULL;
	for (size_t i = 0; i < len; i++)
		if (start[i] == '.')
			dot = start + i;
	if (dot)
		len = (size_t)(dot - start);

	last_us = NULL;
	for (size_t i = 0; i < len; i++) {
		if (start[i] == '_') {
			underscores++;
			last_us = start + i;
		}
	}
	if (!last_us)
		return TFS_E_INVALID;
	last_len = len - (size_t)(last_us + 1 - start);

	if (underscores == 5) {
		uint64_t v;

		/* __t1_t2_uuid_v */
		if (!parse_u64(last_us + 1, last_len, &v) || v > UINT32_MAX)
			return TFS_E_INVALID;
		out->version = (uint32_t)v;
		if (!scan_t1_t2(start, len, &out->t1, &out->t2))
			return TFS_E_INVALID;
		if ((size_t)(last_us - start) >= UUID_LEN)
			set_uuid(out, last_us - UUID_LEN, UUID_LEN);
	} else if (last_len == UUID_LEN) {
		/* __t1_t2_uuid */
		out->version = 4;
		if (!scan_t1_t2(start, len, &out->t1, &out->t2))
			return TFS_E_INVALID;
		set_uuid(out, last_us + 1, UUID_LEN);
	} else {
		/* __uuid_t (and consolidated __uuid_tnow_t) */
		out->version = 2;
		if (!parse_u64(last_us + 1, last_len, &out->t1))
			return TFS_E_INVALID;
		out->t2 = out->t1;
		if (len >= 2 + UUID_LEN && start[0] == '_' && start[1] == '_')
			set_uuid(out, start + 2, UUID_LEN);
	}
	if (out->t1 > out->t2)
		return TFS_E_INVALID;
	return TFS_E_OK;
}

enum tfs_err tfs_uuid_new(char buf[33])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t raw[UUID_LEN / 2];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return TFS_E_INTERNAL;
	for (size_t i = 0; i < sizeof(raw); i++) {
		buf[2 * i] = hex[raw[i] >> 4];
		buf[2 * i + 1] = hex[raw[i] & 15];
	}
	buf[UUID_LEN] = '\0';
	return TFS_E_OK;
}

enum tfs_err tfs_name_new(char *dst, size_t cap, uint64_t t1, uint64_t t2,
			  uint32_t version, const char *ext)
{
	char uuid[UUID_LEN + 1];
	enum tfs_err e = tfs_uuid_new(uuid);
	int n;

	if (e)
		return e;
	if (version)
		n = snprintf(dst, cap,
			     "__%" PRIu64 "_%" PRIu64 "_%s_%" PRIu32 "%s", t1,
			     t2, uuid, version, ext);
	else
		n = snprintf(dst, cap, "__%" PRIu64 "_%" PRIu64 "_%s%s", t1, t2,
			     uuid, ext);
	return n >= 0 && (size_t)n < cap ? TFS_E_OK : TFS_E_TOO_BIG;
}
