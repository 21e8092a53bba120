/* Fragment metadata footers of versions 3 to 23 (format/fragment.md §4
 * "Footer", §1 "Field slots", §3 "Locating the footer"), parsed field by
 * field against the fragment's own schema, and written back the same way.
 *
 * Slot mapping. From v5 every per-slot list has `num` entries (attributes,
 * `__coords`, dimensions, then the timestamp and delete slots). Versions 3
 * and 4 store n₁ = A+1 entries (attributes, `__coords`) for the fixed-file
 * lists and n₂ = A entries (attributes only) for the var lists; we expose
 * them on the same slot numbering with slot_num = A+1: the n₁ lists fill
 * every slot, the n₂ lists fill slots 0…A−1 and leave the `__coords` slot A
 * at 0. Lists a version does not have (validity before v7) are all zeros;
 * the v11+ statistics lists are NULL before v11. */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

#define FOOTER_MAX_SCHEMA_NAME 4096u
#define OPTIONAL_SECTION_GOBOUNDS 0u

uint32_t tfs_slot_count(uint32_t version, uint32_t attr_num, uint32_t dim_num,
			bool timestamps, bool delete_meta)
{
	return attr_num + 1 + (version >= 5 ? dim_num : 0) +
	       (timestamps ? 1u : 0u) + (delete_meta ? 2u : 0u);
}

/* n₁ and n₂ of the version (see the file comment). */
static void list_lengths(uint32_t version, uint32_t attr_num, uint32_t num,
			 uint32_t *n1, uint32_t *n2)
{
	if (version < 5) {
		*n1 = attr_num + 1;
		*n2 = attr_num;
	} else {
		*n1 = num;
		*n2 = num;
	}
}

static bool has_var_dim(const struct tfs_schema *s)
{
	for (uint32_t i = 0; i < s->dim_num; i++)
		if (s->dims[i].var)
			return true;
	return false;
}

uint64_t tfs_footer_fixed_size(uint32_t version, const struct tfs_schema *s)
{
	uint64_t A = s->attr_num, D = s->dim_num, cs0, dom = 0, num;

	if (version < 3 || version >= 10 || has_var_dim(s) || D == 0)
		return 0;
	cs0 = tfs_datatype_size(s->dims[0].type);
	if (version <= 4)
		return 4 + 1 + 1 + 2 * D * cs0 + 8 + 8 + (A + 1) * 8 + A * 8 +
		       8 + (A + 1) * 8 + A * 8 + A * 8;
	for (uint32_t i = 0; i < s->dim_num; i++)
		dom += 2 * (uint64_t)tfs_datatype_size(s->dims[i].type);
	num = A + 1 + D;
	if (version <= 6)
		return 4 + 1 + 1 + dom + 8 + 8 + 5 * num * 8 + 8;
	return 4 + 1 + 1 + dom + 8 + 8 + 7 * num * 8 + 8;
}

static enum tfs_err read_version(struct tfs__rd *r, uint32_t *version)
{
	enum tfs_err e = tfs__u32(r, version, "version");

	if (e)
		return e;
	if (*version > TFS_FORMAT_VERSION_MAX)
		return tfs__unsupported_version(r, *version);
	if (*version < 3)
		return tfs__bad(r,
				"version %u has no footer (legacy fragment "
				"metadata)",
				(unsigned)*version);
	return TFS_E_OK;
}

static enum tfs_err read_schema_name(struct tfs__rd *r, char **name)
{
	uint64_t n;
	enum tfs_err e;

	if ((e = tfs__u64(r, &n, "schema name length")))
		return e;
	if (n == 0 || n > FOOTER_MAX_SCHEMA_NAME)
		return tfs__bad(r, "invalid schema name length %llu",
				(unsigned long long)n);
	return tfs__str(r, n, name, "schema name");
}

enum tfs_err tfs_footer_schema_name(const uint8_t *buf, size_t len,
				    uint32_t *version, char **name,
				    struct tfs_diag *d)
{
	struct tfs__rd r;
	enum tfs_err e;

	*name = NULL;
	tfs__rd_init(&r, buf, len, "footer", d);
	e = read_version(&r, version);
	if (e)
		return e;
	if (*version < 10)
		return TFS_E_OK;
	return read_schema_name(&r, name);
}

/* Reads n u64 values into a new zeroed array of `alloc` entries. */
static enum tfs_err read_list(struct tfs__rd *r, uint64_t **dst, uint32_t n,
			      uint32_t alloc, const char *field)
{
	const uint8_t *p;
	enum tfs_err e;

	if ((e = tfs__take(r, (uint64_t)n * 8, &p, field)))
		return e;
	*dst = tfs_callocn(alloc, sizeof(uint64_t));
	if (!*dst)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory for %s", field);
	for (uint32_t i = 0; i < n; i++)
		(*dst)[i] = tfs_get_u64(p + 8 * (size_t)i);
	return TFS_E_OK;
}

static enum tfs_err zero_list(struct tfs__rd *r, uint64_t **dst,
			      uint32_t alloc)
{
	*dst = tfs_callocn(alloc, sizeof(uint64_t));
	if (!*dst)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	return TFS_E_OK;
}

static enum tfs_err read_ned(struct tfs__rd *r, struct tfs_footer *f,
			     const struct tfs_schema *s)
{
	size_t from = r->c.pos;
	enum tfs_err e;

	f->ned = tfs_callocn(s->dim_num, sizeof(struct tfs_range));
	if (!f->ned)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	if (f->version < 5) {
		size_t cs0 = tfs_datatype_size(s->dims[0].type);
		const uint8_t *p;

		for (uint32_t i = 0; i < s->dim_num; i++)
			if (s->dims[i].var ||
			    tfs_datatype_size(s->dims[i].type) != cs0)
				return tfs__bad(r,
						"version %u footer needs "
						"dimensions of one fixed size",
						(unsigned)f->version);
		e = tfs__take(r, 2 * (uint64_t)s->dim_num * cs0, &p,
			      "non-empty domain");
		if (e)
			return e;
		for (uint32_t i = 0; i < s->dim_num; i++) {
			f->ned[i].lo = p + 2 * cs0 * i;
			f->ned[i].hi = f->ned[i].lo + cs0;
			f->ned[i].lo_len = cs0;
			f->ned[i].hi_len = cs0;
		}
	} else {
		for (uint32_t i = 0; i < s->dim_num; i++) {
			e = tfs__range(r, s->dims[i].type, s->dims[i].var,
				       &f->ned[i], "non-empty domain");
			if (e)
				return e;
		}
	}
	e = tfs__ranges_own(r, from, r->c.pos, f->ned, s->dim_num,
			    &f->ned_bytes);
	if (e)
		return e;
	/* TileDB writes only inside the domain: a box reaching outside it
	 * is damage, and left in place it would make every read of the
	 * array's non-empty domain an invalid query instead of EIO. */
	for (uint32_t i = 0; i < s->dim_num; i++) {
		const struct tfs_dim *dim = &s->dims[i];

		if (dim->var || !dim->has_domain)
			continue;
		if (tfs_value_cmp(dim->type, f->ned[i].lo, f->ned[i].hi) > 0 ||
		    tfs_value_cmp(dim->type, f->ned[i].lo, dim->domain[0]) < 0 ||
		    tfs_value_cmp(dim->type, f->ned[i].hi, dim->domain[1]) > 0)
			return tfs__bad(r,
					"non-empty domain of dimension '%s' "
					"is not inside its domain",
					dim->name);
	}
	return TFS_E_OK;
}

static enum tfs_err read_optional_sections(struct tfs__rd *r,
					   struct tfs_footer *f)
{
	uint32_t count;
	enum tfs_err e;

	if ((e = tfs__u32(r, &count, "optional section count")))
		return e;
	if (count > tfs_cur_left(&r->c) / 12)
		return tfs__bad(r, "optional section count %u does not fit",
				(unsigned)count);
	for (uint32_t k = 0; k < count; k++) {
		uint64_t id;
		uint32_t data_len;
		const uint8_t *p;

		if ((e = tfs__u64(r, &id, "optional section id")) ||
		    (e = tfs__u32(r, &data_len, "optional section length")) ||
		    (e = tfs__take(r, data_len, &p, "optional section")))
			return e;
		if (id != OPTIONAL_SECTION_GOBOUNDS)
			continue; /* unknown sections are skipped */
		if (f->has_gobounds)
			return tfs__bad(r,
					"optional section 0 (global order "
					"bounds) appears twice");
		if (data_len != 16 * (uint64_t)f->dim_num)
			return tfs__bad(r,
					"global order bounds section of %u "
					"bytes, expected %llu",
					(unsigned)data_len,
					(unsigned long long)(16 *
							     (uint64_t)f->dim_num));
		f->gobounds_mins_off = tfs_callocn(f->dim_num, 8);
		f->gobounds_maxes_off = tfs_callocn(f->dim_num, 8);
		if (!f->gobounds_mins_off || !f->gobounds_maxes_off)
			return tfs__fail(r, TFS_E_NOMEM, "out of memory");
		for (uint32_t i = 0; i < f->dim_num; i++) {
			f->gobounds_mins_off[i] = tfs_get_u64(p + 8 * i);
			f->gobounds_maxes_off[i] =
				tfs_get_u64(p + 8 * ((size_t)f->dim_num + i));
		}
		f->has_gobounds = true;
	}
	return TFS_E_OK;
}

static enum tfs_err parse_body(struct tfs__rd *r, struct tfs_footer *f,
			       const struct tfs_schema *s)
{
	uint32_t v, num, n1, n2;
	enum tfs_err e;

	if ((e = read_version(r, &f->version)))
		return e;
	v = f->version;
	f->dim_num = s->dim_num;
	if (v >= 10 && (e = read_schema_name(r, &f->schema_name)))
		return e;
	if ((e = tfs__bool(r, &f->dense, "dense flag")) ||
	    (e = tfs__bool(r, &f->empty, "null non-empty domain flag")))
		return e;
	/* An empty fragment's writer emits zero bytes here, but TileDB's
	 * reader reads nothing: follow the reader (fragment.md §4). */
	if (!f->empty && (e = read_ned(r, f, s)))
		return e;
	if ((e = tfs__u64(r, &f->sparse_tile_num, "sparse tile number")) ||
	    (e = tfs__u64(r, &f->last_tile_cell_num, "last tile cell number")))
		return e;
	if (v >= 14 &&
	    (e = tfs__bool(r, &f->has_timestamps, "includes timestamps")))
		return e;
	if (v >= 15 && (e = tfs__bool(r, &f->has_delete_meta,
				      "includes delete metadata")))
		return e;

	num = tfs_slot_count(v, s->attr_num, s->dim_num, f->has_timestamps,
			     f->has_delete_meta);
	f->slot_num = num;
	list_lengths(v, s->attr_num, num, &n1, &n2);

	if ((e = read_list(r, &f->file_sizes, n1, num, "file sizes")) ||
	    (e = read_list(r, &f->file_var_sizes, n2, num, "file var sizes")))
		return e;
	e = v >= 7 ? read_list(r, &f->file_validity_sizes, num, num,
			       "file validity sizes")
		   : zero_list(r, &f->file_validity_sizes, num);
	if (e)
		return e;
	if ((e = tfs__u64(r, &f->rtree_off, "R-tree offset")) ||
	    (e = read_list(r, &f->tile_offsets_off, n1, num,
			   "tile offsets offsets")) ||
	    (e = read_list(r, &f->tile_var_offsets_off, n2, num,
			   "tile var offsets offsets")) ||
	    (e = read_list(r, &f->tile_var_sizes_off, n2, num,
			   "tile var sizes offsets")))
		return e;
	e = v >= 7 ? read_list(r, &f->tile_validity_offsets_off, num, num,
			       "tile validity offsets offsets")
		   : zero_list(r, &f->tile_validity_offsets_off, num);
	if (e)
		return e;
	if (v >= 11 &&
	    ((e = read_list(r, &f->tile_mins_off, num, num,
			    "tile mins offsets")) ||
	     (e = read_list(r, &f->tile_maxes_off, num, num,
			    "tile maxes offsets")) ||
	     (e = read_list(r, &f->tile_sums_off, num, num,
			    "tile sums offsets")) ||
	     (e = read_list(r, &f->tile_null_counts_off, num, num,
			    "tile null counts offsets"))))
		return e;
	if (v >= 12 &&
	    (e = tfs__u64(r, &f->summary_off, "fragment summary offset")))
		return e;
	if (v >= 16 && (e = tfs__u64(r, &f->processed_conditions_off,
				     "processed conditions offset")))
		return e;
	if (v >= 23 && (e = read_optional_sections(r, f)))
		return e;
	f->size = r->c.pos;
	return TFS_E_OK;
}

enum tfs_err tfs_footer_parse(struct tfs_footer *out, const uint8_t *buf,
			      size_t len, const struct tfs_schema *schema,
			      struct tfs_diag *d)
{
	struct tfs__rd r;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "footer", d);
	if (!schema || schema->dim_num == 0)
		return tfs__fail(&r, TFS_E_INVALID, "no schema to parse with");
	e = parse_body(&r, out, schema);
	if (e)
		tfs_footer_release(out);
	return e;
}

static enum tfs_err put_list(struct tfs_buf *b, const uint64_t *list,
			     uint32_t n)
{
	enum tfs_err e;

	for (uint32_t i = 0; i < n; i++)
		if ((e = tfs_buf_append_u64(b, list ? list[i] : 0)))
			return e;
	return TFS_E_OK;
}

static enum tfs_err put_body(struct tfs_buf *b, const struct tfs_footer *f,
			     const struct tfs_schema *s)
{
	uint32_t v = f->version, num, n1, n2;
	enum tfs_err e;

	if (v < 3 || v > TFS_FORMAT_VERSION_MAX || f->empty || !f->ned ||
	    s->dim_num == 0 || (v >= 10 && !f->schema_name))
		return TFS_E_INVALID;
	num = tfs_slot_count(v, s->attr_num, s->dim_num, f->has_timestamps,
			     f->has_delete_meta);
	if (f->slot_num != num)
		return TFS_E_INVALID;
	list_lengths(v, s->attr_num, num, &n1, &n2);

	if ((e = tfs_buf_append_u32(b, v)))
		return e;
	if (v >= 10 && (e = tfs__put_str64(b, f->schema_name)))
		return e;
	if ((e = tfs_buf_append_u8(b, f->dense ? 1 : 0)) ||
	    (e = tfs_buf_append_u8(b, 0)))
		return e;
	for (uint32_t i = 0; i < s->dim_num; i++) {
		if (v < 5) {
			if (s->dims[i].var)
				return TFS_E_INVALID;
			e = tfs__range_write(b, false, &f->ned[i]);
		} else {
			e = tfs__range_write(b, s->dims[i].var, &f->ned[i]);
		}
		if (e)
			return e;
	}
	if ((e = tfs_buf_append_u64(b, f->sparse_tile_num)) ||
	    (e = tfs_buf_append_u64(b, f->last_tile_cell_num)))
		return e;
	if (v >= 14 && (e = tfs_buf_append_u8(b, f->has_timestamps ? 1 : 0)))
		return e;
	if (v >= 15 && (e = tfs_buf_append_u8(b, f->has_delete_meta ? 1 : 0)))
		return e;
	if ((e = put_list(b, f->file_sizes, n1)) ||
	    (e = put_list(b, f->file_var_sizes, n2)))
		return e;
	if (v >= 7 && (e = put_list(b, f->file_validity_sizes, num)))
		return e;
	if ((e = tfs_buf_append_u64(b, f->rtree_off)) ||
	    (e = put_list(b, f->tile_offsets_off, n1)) ||
	    (e = put_list(b, f->tile_var_offsets_off, n2)) ||
	    (e = put_list(b, f->tile_var_sizes_off, n2)))
		return e;
	if (v >= 7 && (e = put_list(b, f->tile_validity_offsets_off, num)))
		return e;
	if (v >= 11 && ((e = put_list(b, f->tile_mins_off, num)) ||
			(e = put_list(b, f->tile_maxes_off, num)) ||
			(e = put_list(b, f->tile_sums_off, num)) ||
			(e = put_list(b, f->tile_null_counts_off, num))))
		return e;
	if (v >= 12 && (e = tfs_buf_append_u64(b, f->summary_off)))
		return e;
	if (v >= 16 && (e = tfs_buf_append_u64(b, f->processed_conditions_off)))
		return e;
	if (v >= 23) {
		if ((e = tfs_buf_append_u32(b, f->has_gobounds ? 1 : 0)))
			return e;
		if (f->has_gobounds) {
			if ((e = tfs_buf_append_u64(b, OPTIONAL_SECTION_GOBOUNDS)) ||
			    (e = tfs_buf_append_u32(b, 16 * s->dim_num)) ||
			    (e = put_list(b, f->gobounds_mins_off, s->dim_num)) ||
			    (e = put_list(b, f->gobounds_maxes_off, s->dim_num)))
				return e;
		}
	}
	return TFS_E_OK;
}

enum tfs_err tfs_footer_serialize(struct tfs_buf *out,
				  const struct tfs_footer *f,
				  const struct tfs_schema *schema)
{
	size_t start = out->len;
	enum tfs_err e = put_body(out, f, schema);

	if (e)
		out->len = start;
	return e;
}

void tfs_footer_release(struct tfs_footer *f)
{
	if (!f)
		return;
	tfs_free(f->schema_name);
	tfs_free(f->ned);
	tfs_free(f->ned_bytes);
	tfs_free(f->file_sizes);
	tfs_free(f->file_var_sizes);
	tfs_free(f->file_validity_sizes);
	tfs_free(f->tile_offsets_off);
	tfs_free(f->tile_var_offsets_off);
	tfs_free(f->tile_var_sizes_off);
	tfs_free(f->tile_validity_offsets_off);
	tfs_free(f->tile_mins_off);
	tfs_free(f->tile_maxes_off);
	tfs_free(f->tile_sums_off);
	tfs_free(f->tile_null_counts_off);
	tfs_free(f->gobounds_mins_off);
	tfs_free(f->gobounds_maxes_off);
	memset(f, 0, sizeof(*f));
}
