/* Group details files (format/groups.md §2 "Group details file"): a
 * version, a u64 member count and the members, each with its own version;
 * version-2 members end with a deleted flag. Parsing only: which files
 * count and how they merge is the group module's job (groups.md §3). */
#include <inttypes.h>
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

/* Smallest member on disk: version, type, relative, uri_len, name_set. */
#define MEMBER_MIN_BYTES (4 + 1 + 1 + 8 + 1)

static void entries_free(struct tfs_group_details *g)
{
	for (size_t i = 0; g->entries && i < g->count; i++) {
		tfs_free(g->entries[i].uri);
		tfs_free(g->entries[i].name);
	}
	tfs_free(g->entries);
	g->entries = NULL;
	g->count = 0;
}

static enum tfs_err parse_member(struct tfs__rd *r, struct tfs_group_entry *m)
{
	uint64_t n;
	enum tfs_err e;

	if ((e = tfs__u32(r, &m->member_version, "member version")))
		return e;
	if (m->member_version != 1 && m->member_version != 2)
		return tfs__fail(r, TFS_E_UNSUPPORTED,
				 "unsupported group member version %u",
				 m->member_version);
	if ((e = tfs__u8(r, &m->object_type, "member object type")))
		return e;
	if (m->object_type != TFS_GROUP_MEMBER_GROUP &&
	    m->object_type != TFS_GROUP_MEMBER_ARRAY)
		return tfs__bad(r, "invalid member object type %u",
				m->object_type);
	if ((e = tfs__bool(r, &m->relative, "member relative flag")) ||
	    (e = tfs__u64(r, &n, "member uri length")) ||
	    (e = tfs__str(r, n, &m->uri, "member uri")))
		return e;
	if ((e = tfs__bool(r, &m->name_set, "member name flag")))
		return e;
	if (m->name_set &&
	    ((e = tfs__u64(r, &n, "member name length")) ||
	     (e = tfs__str(r, n, &m->name, "member name"))))
		return e;
	if (m->member_version == 2)
		return tfs__bool(r, &m->deleted, "member deleted flag");
	return TFS_E_OK;
}

enum tfs_err tfs_group_details_parse(struct tfs_group_details *out,
				     const uint8_t *buf, size_t len,
				     struct tfs_diag *d)
{
	struct tfs__rd r;
	uint64_t count;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "group details", d);
	if ((e = tfs__u32(&r, &out->version, "version")))
		return e;
	if (out->version != 1 && out->version != 2)
		return tfs__fail(&r, TFS_E_UNSUPPORTED,
				 "unsupported group details version %u",
				 out->version);
	/* u64, although the public spec says u32 (groups.md §2). */
	if ((e = tfs__u64(&r, &count, "member count")))
		return e;
	/* The count is untrusted: it must fit in what is left of the payload
	 * before we allocate for it. */
	if (count > tfs_cur_left(&r.c) / MEMBER_MIN_BYTES)
		return tfs__bad(&r, "member count %" PRIu64
				" does not fit in %zu bytes",
				count, tfs_cur_left(&r.c));
	out->entries = tfs_callocn(count ? (size_t)count : 1,
				   sizeof(*out->entries));
	if (!out->entries)
		return tfs__fail(&r, TFS_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < count; i++) {
		out->count++;
		e = parse_member(&r, &out->entries[i]);
		if (e)
			goto out_free;
	}
	/* Bytes after the last member are ignored, as TileDB does. */
	return TFS_E_OK;

out_free:
	entries_free(out);
	return e;
}

void tfs_group_details_release(struct tfs_group_details *g)
{
	if (g)
		entries_free(g);
}

static enum tfs_err put_str64(struct tfs_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	enum tfs_err e = tfs_buf_append_u64(b, n);

	return e ? e : tfs_buf_append(b, s, n);
}

enum tfs_err tfs_group_details_serialize(struct tfs_buf *out,
					 const struct tfs_group_details *g)
{
	size_t start = out->len;
	enum tfs_err e;

	if (g->version != 1 && g->version != 2)
		return TFS_E_INVALID;
	if ((e = tfs_buf_append_u32(out, g->version)) ||
	    (e = tfs_buf_append_u64(out, g->count)))
		goto out_undo;
	for (size_t i = 0; i < g->count; i++) {
		const struct tfs_group_entry *m = &g->entries[i];

		if ((m->member_version != 1 && m->member_version != 2) ||
		    !m->uri || (m->name_set && !m->name)) {
			e = TFS_E_INVALID;
			goto out_undo;
		}
		if ((e = tfs_buf_append_u32(out, m->member_version)) ||
		    (e = tfs_buf_append_u8(out, m->object_type)) ||
		    (e = tfs_buf_append_u8(out, m->relative ? 1 : 0)) ||
		    (e = put_str64(out, m->uri)) ||
		    (e = tfs_buf_append_u8(out, m->name_set ? 1 : 0)) ||
		    (m->name_set && (e = put_str64(out, m->name))) ||
		    (m->member_version == 2 &&
		     (e = tfs_buf_append_u8(out, m->deleted ? 1 : 0))))
			goto out_undo;
	}
	return TFS_E_OK;

out_undo:
	out->len = start;
	return e;
}
