/* Fragment metadata of versions 1 and 2 (format/fragment.md §9 "Versions
 * 1–2: legacy fragment metadata"): one generic tile holding the non-empty
 * domain, the MBRs, the per-attribute tile offsets and the file sizes. It
 * is parsed into the same footer/R-tree structs as later versions so the
 * readers see one shape; see tfs_format.h for how the lists map onto
 * slots. */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

static enum tfs_err read_lists(struct tfs__rd *r, uint32_t n, uint64_t ***lists,
			       uint64_t **counts, const char *field)
{
	enum tfs_err e;

	*lists = tfs_callocn(n, sizeof(uint64_t *));
	*counts = tfs_callocn(n, sizeof(uint64_t));
	if (!*lists || !*counts)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t count;
		const uint8_t *p;

		if ((e = tfs__u64(r, &count, field)))
			return e;
		if (count > tfs_cur_left(&r->c) / 8)
			return tfs__bad(r, "%s %u: count %llu does not fit",
					field, (unsigned)i,
					(unsigned long long)count);
		if ((e = tfs__take(r, count * 8, &p, field)))
			return e;
		(*lists)[i] = tfs_mallocn((size_t)count, sizeof(uint64_t));
		if (!(*lists)[i])
			return tfs__fail(r, TFS_E_NOMEM, "out of memory");
		for (uint64_t k = 0; k < count; k++)
			(*lists)[i][k] = tfs_get_u64(p + 8 * k);
		(*counts)[i] = count;
	}
	return TFS_E_OK;
}

static enum tfs_err read_sizes(struct tfs__rd *r, uint64_t *dst, uint32_t n,
			       const char *field)
{
	enum tfs_err e;

	for (uint32_t i = 0; i < n; i++)
		if ((e = tfs__u64(r, &dst[i], field)))
			return e;
	return TFS_E_OK;
}

/* n ranges of two fixed cs-byte values each, back to back at p. */
static void fixed_ranges(struct tfs_range *ranges, const uint8_t *p,
			 uint64_t n, uint64_t cs)
{
	for (uint64_t k = 0; k < n; k++) {
		ranges[k].lo = p + 2 * cs * k;
		ranges[k].hi = ranges[k].lo + cs;
		ranges[k].lo_len = cs;
		ranges[k].hi_len = cs;
	}
}

static enum tfs_err read_version(struct tfs__rd *r, struct tfs_footer *f)
{
	enum tfs_err e;

	if ((e = tfs__u32(r, &f->version, "version")))
		return e;
	if (f->version > TFS_FORMAT_VERSION_MAX)
		return tfs__unsupported_version(r, f->version);
	if (f->version == 0 || f->version > 2)
		return tfs__bad(r, "version %u is not a legacy (v1–2) version",
				(unsigned)f->version);
	return TFS_E_OK;
}

/* Non-empty domain: absent, or one range per dimension. */
static enum tfs_err read_ned(struct tfs__rd *r, struct tfs_footer *f,
			     uint32_t D, uint64_t cs, uint64_t mbr_bytes)
{
	uint64_t ned_size;
	const uint8_t *p;
	size_t from;
	enum tfs_err e;

	if ((e = tfs__u64(r, &ned_size, "non-empty domain size")))
		return e;
	if (ned_size != 0 && ned_size != mbr_bytes)
		return tfs__bad(r,
				"non-empty domain size %llu, expected 0 or "
				"%llu",
				(unsigned long long)ned_size,
				(unsigned long long)mbr_bytes);
	f->empty = ned_size == 0;
	if (f->empty)
		return TFS_E_OK;
	from = r->c.pos;
	if ((e = tfs__take(r, ned_size, &p, "non-empty domain")))
		return e;
	f->ned = tfs_callocn(D, sizeof(struct tfs_range));
	if (!f->ned)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	fixed_ranges(f->ned, p, D, cs);
	return tfs__ranges_own(r, from, r->c.pos, f->ned, D, &f->ned_bytes);
}

/* MBRs = the R-tree leaves. */
static enum tfs_err read_mbrs(struct tfs__rd *r, struct tfs_rtree *t,
			      uint32_t D, uint64_t cs, uint64_t mbr_bytes)
{
	const uint8_t *p;
	size_t from;
	enum tfs_err e;

	if ((e = tfs__u64(r, &t->leaf_num, "MBR count")))
		return e;
	if (t->leaf_num > tfs_cur_left(&r->c) / mbr_bytes)
		return tfs__bad(r, "MBR count %llu does not fit",
				(unsigned long long)t->leaf_num);
	from = r->c.pos;
	if ((e = tfs__take(r, t->leaf_num * mbr_bytes, &p, "MBRs")))
		return e;
	t->dim_num = D;
	t->leaves = tfs_callocn((size_t)t->leaf_num * D, sizeof(struct tfs_range));
	if (!t->leaves)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	fixed_ranges(t->leaves, p, t->leaf_num * D, cs);
	return tfs__ranges_own(r, from, r->c.pos, t->leaves, t->leaf_num * D,
			       &t->bytes);
}

/* Bounding coordinates: not needed. */
static enum tfs_err skip_bounds(struct tfs__rd *r, uint64_t mbr_bytes)
{
	uint64_t bound_num;
	const uint8_t *p;
	enum tfs_err e;

	if ((e = tfs__u64(r, &bound_num, "bounding coords count")))
		return e;
	if (bound_num > tfs_cur_left(&r->c) / mbr_bytes)
		return tfs__bad(r, "bounding coords count %llu does not fit",
				(unsigned long long)bound_num);
	return tfs__take(r, bound_num * mbr_bytes, &p, "bounding coords");
}

/* The per-slot arrays of the footer, all zero. */
static enum tfs_err alloc_slots(struct tfs__rd *r, struct tfs_footer *f,
				uint32_t A)
{
	f->file_sizes = tfs_callocn(A + 1, sizeof(uint64_t));
	f->file_var_sizes = tfs_callocn(A + 1, sizeof(uint64_t));
	f->file_validity_sizes = tfs_callocn(A + 1, sizeof(uint64_t));
	f->tile_offsets_off = tfs_callocn(A + 1, sizeof(uint64_t));
	f->tile_var_offsets_off = tfs_callocn(A + 1, sizeof(uint64_t));
	f->tile_var_sizes_off = tfs_callocn(A + 1, sizeof(uint64_t));
	f->tile_validity_offsets_off = tfs_callocn(A + 1, sizeof(uint64_t));
	if (!f->file_sizes || !f->file_var_sizes || !f->file_validity_sizes ||
	    !f->tile_offsets_off || !f->tile_var_offsets_off ||
	    !f->tile_var_sizes_off || !f->tile_validity_offsets_off)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

static enum tfs_err parse_body(struct tfs__rd *r, struct tfs_legacy_meta *m,
			       const struct tfs_schema *s, bool dense)
{
	struct tfs_footer *f = &m->footer;
	struct tfs_rtree *t = &m->rtree;
	uint32_t A = s->attr_num, D = s->dim_num;
	uint64_t mbr_bytes, cs;
	enum tfs_err e;

	for (uint32_t i = 0; i < D; i++)
		if (s->dims[i].var || s->dims[i].type != s->dims[0].type)
			return tfs__bad(r,
					"legacy metadata needs dimensions of "
					"one fixed type");
	m->attr_num = A;
	cs = tfs_datatype_size(s->dims[0].type);
	mbr_bytes = 2 * (uint64_t)D * cs;

	if ((e = read_version(r, f)))
		return e;
	f->dense = dense;
	f->dim_num = D;
	f->slot_num = A + 1;
	if ((e = read_ned(r, f, D, cs, mbr_bytes)) ||
	    (e = read_mbrs(r, t, D, cs, mbr_bytes)))
		return e;
	f->sparse_tile_num = dense ? 0 : t->leaf_num;
	if ((e = skip_bounds(r, mbr_bytes)))
		return e;
	if ((e = read_lists(r, A + 1, &m->tile_offsets, &m->tile_counts,
			    "tile offsets")) ||
	    (e = read_lists(r, A, &m->tile_var_offsets, &m->tile_var_counts,
			    "tile var offsets")) ||
	    (e = read_lists(r, A, &m->tile_var_sizes,
			    &m->tile_var_size_counts, "tile var sizes")))
		return e;
	if ((e = tfs__u64(r, &f->last_tile_cell_num, "last tile cell number")))
		return e;
	if ((e = alloc_slots(r, f, A)))
		return e;
	if ((e = read_sizes(r, f->file_sizes, A + 1, "file sizes")) ||
	    (e = read_sizes(r, f->file_var_sizes, A, "file var sizes")))
		return e;
	if (tfs_cur_left(&r->c))
		return tfs__bad(r, "%zu trailing bytes", tfs_cur_left(&r->c));
	f->size = r->c.pos;
	return TFS_E_OK;
}

enum tfs_err tfs_legacy_meta_parse(struct tfs_legacy_meta *out,
				   const uint8_t *buf, size_t len,
				   const struct tfs_schema *schema, bool dense,
				   struct tfs_diag *d)
{
	struct tfs__rd r;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "legacy fragment metadata", d);
	if (!schema || schema->dim_num == 0)
		return tfs__fail(&r, TFS_E_INVALID, "no schema to parse with");
	e = parse_body(&r, out, schema, dense);
	if (e)
		tfs_legacy_meta_release(out);
	return e;
}

static void free_lists(uint64_t **lists, uint32_t n)
{
	for (uint32_t i = 0; lists && i < n; i++)
		tfs_free(lists[i]);
	tfs_free(lists);
}

void tfs_legacy_meta_release(struct tfs_legacy_meta *m)
{
	uint32_t attr_num;

	if (!m)
		return;
	attr_num = m->attr_num;
	tfs_footer_release(&m->footer);
	tfs_rtree_release(&m->rtree);
	free_lists(m->tile_offsets, attr_num + 1);
	free_lists(m->tile_var_offsets, attr_num);
	free_lists(m->tile_var_sizes, attr_num);
	tfs_free(m->tile_counts);
	tfs_free(m->tile_var_counts);
	tfs_free(m->tile_var_size_counts);
	memset(m, 0, sizeof(*m));
}
