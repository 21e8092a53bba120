/* Consolidation artifacts (format/consolidated.md): the consolidated
 * fragment metadata directory of `.meta` files (§1), the consolidated
 * commits stream of `.con` files (§2, parsed as in format/layout.md §6
 * step 2), the line lists of `.ign` and `.vac` files (§3, §4) and the
 * normalisation of vacuum lines (layout.md §6 step 6). */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"
#include "tfs_str.h"

#define DEL_SUFFIX ".del"

static void meta_free_entries(struct tfs_consolidated_meta *m)
{
	for (uint32_t i = 0; m->entries && i < m->count; i++)
		tfs_free(m->entries[i].name);
	tfs_free(m->entries);
	m->entries = NULL;
	m->count = 0;
}

static enum tfs_err meta_parse_body(struct tfs__rd *r,
				    struct tfs_consolidated_meta *m)
{
	uint32_t count;
	enum tfs_err e;

	if ((e = tfs__u32(r, &count, "fragment count")))
		return e;
	if (count > tfs_cur_left(&r->c) / 16)
		return tfs__bad(r, "fragment count %u does not fit",
				(unsigned)count);
	m->entries = tfs_callocn(count, sizeof(*m->entries));
	if (!m->entries)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < count; i++) {
		uint64_t n;

		if ((e = tfs__u64(r, &n, "fragment name length")) ||
		    (e = tfs__str(r, n, &m->entries[i].name, "fragment name")))
			return e;
		m->count++;
		if ((e = tfs__u64(r, &m->entries[i].footer_offset,
				  "footer offset")))
			return e;
		if (n == 0)
			return tfs__bad(r, "entry %u has an empty name",
					(unsigned)i);
	}
	/* Every footer lies after the directory. */
	for (uint32_t i = 0; i < count; i++) {
		uint64_t off = m->entries[i].footer_offset;

		if (off < r->c.pos || off >= r->c.len)
			return tfs__bad(r,
					"footer offset %llu of '%s' is outside "
					"the footers (%zu..%zu)",
					(unsigned long long)off,
					m->entries[i].name, r->c.pos, r->c.len);
	}
	return TFS_E_OK;
}

enum tfs_err tfs_consolidated_meta_parse(struct tfs_consolidated_meta *out,
					 uint8_t *payload, size_t len,
					 struct tfs_diag *d)
{
	struct tfs__rd r;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, payload, len, "consolidated fragment metadata", d);
	e = meta_parse_body(&r, out);
	if (e) {
		meta_free_entries(out);
		tfs_free(payload);
		return e;
	}
	out->payload = payload;
	out->payload_len = len;
	return TFS_E_OK;
}

void tfs_consolidated_meta_release(struct tfs_consolidated_meta *m)
{
	if (!m)
		return;
	meta_free_entries(m);
	tfs_free(m->payload);
	memset(m, 0, sizeof(*m));
}

/* A new copy of the n bytes at p as a string; embedded NUL is refused. */
static enum tfs_err dup_line(const uint8_t *p, size_t n, char **out)
{
	*out = NULL;
	if (n && memchr(p, 0, n))
		return TFS_E_CORRUPT;
	*out = tfs_memdup(p, n);
	return *out ? TFS_E_OK : TFS_E_NOMEM;
}

enum tfs_err tfs_con_parse(struct tfs_con_file *out, const uint8_t *buf,
			   size_t len, struct tfs_diag *d)
{
	struct tfs__rd r;
	size_t cap = 0;
	enum tfs_err e = TFS_E_OK;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "consolidated commits", d);
	while (tfs_cur_left(&r.c)) {
		const uint8_t *line = buf + r.c.pos, *nl;
		size_t n, at = r.c.pos;
		struct tfs_con_entry *ent;

		nl = memchr(line, '\n', tfs_cur_left(&r.c));
		n = nl ? (size_t)(nl - line) : tfs_cur_left(&r.c);
		r.c.pos += n + (nl ? 1 : 0);
		if (n == 0)
			continue;
		if (tfs_grow(&out->entries, &cap, out->count + 1,
			     sizeof(*out->entries))) {
			e = tfs__fail(&r, TFS_E_NOMEM, "out of memory");
			goto out_release;
		}
		ent = &out->entries[out->count];
		memset(ent, 0, sizeof(*ent));
		e = dup_line(line, n, &ent->marker);
		if (e) {
			e = e == TFS_E_NOMEM
				    ? tfs__fail(&r, e, "out of memory")
				    : tfs__bad(&r,
					       "entry at offset %zu contains a "
					       "NUL byte",
					       at);
			goto out_release;
		}
		out->count++;
		if (!tfs_str_ends_with(ent->marker, DEL_SUFFIX))
			continue;
		/* A delete: u64 size, then the embedded .del generic tile. */
		if ((e = tfs__u64(&r, &ent->del_size, "delete tile size")))
			goto out_release;
		ent->del_offset = r.c.pos;
		if (ent->del_size > tfs_cur_left(&r.c)) {
			e = tfs__bad(&r,
				     "delete tile of '%s' (%llu bytes) runs "
				     "past the end",
				     ent->marker,
				     (unsigned long long)ent->del_size);
			goto out_release;
		}
		r.c.pos += (size_t)ent->del_size;
	}
	return TFS_E_OK;

out_release:
	tfs_con_release(out);
	return e;
}

void tfs_con_release(struct tfs_con_file *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->entries && i < c->count; i++)
		tfs_free(c->entries[i].marker);
	tfs_free(c->entries);
	c->entries = NULL;
	c->count = 0;
}

enum tfs_err tfs_lines_parse(struct tfs_strlist *out, const uint8_t *buf,
			     size_t len)
{
	size_t pos = 0, cap = 0;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	while (pos < len) {
		const uint8_t *line = buf + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;

		pos += n + (nl ? 1 : 0);
		if (n == 0)
			continue;
		if (tfs_grow(&out->items, &cap, out->count + 1,
			     sizeof(*out->items))) {
			e = TFS_E_NOMEM;
			goto out_release;
		}
		e = dup_line(line, n, &out->items[out->count]);
		if (e)
			goto out_release;
		out->count++;
	}
	return TFS_E_OK;

out_release:
	tfs_strlist_release(out);
	return e;
}

char *tfs_vac_line_normalize(const char *line)
{
	const char *p = strstr(line, "__fragments");

	if (!p)
		p = strstr(line, "__meta");
	if (!p) {
		p = strrchr(line, '/');
		p = p ? p + 1 : line;
	}
	return tfs_strdup(p);
}
