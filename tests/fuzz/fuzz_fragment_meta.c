/* Fuzz target: fragment metadata (format/fragment.md) against a schema
 * carried in the input: footers of versions 3-23, the per-slot generic
 * tiles they point to (u64 lists, R-tree, processed conditions), legacy
 * v1-2 metadata, and consolidated `.meta` files (consolidated.md §1).
 *
 * Input: u32 n, n bytes of schema payload, u8 mode, u8 name version, then
 * the file. mode & 3: 0 = __fragment_metadata.tdb (footer located as
 * fragment_load.c does: fixed size for name versions < 10 without var
 * dimensions, else the trailing u64 footer length), 1 = legacy v1-2
 * metadata (one generic tile; mode & 4 = dense), 2 = consolidated .meta
 * file. What parses must serialize, re-parse equal and serialize to the
 * same bytes again. */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_format.h"

/* Per-slot tiles decoded per input: plenty for the corpus, bounded. */
#define MAX_SLOT_TILES 48
#define MAX_META_ENTRIES 32

static bool range_eq(const struct tfs_range *a, const struct tfs_range *b)
{
	return a->lo_len == b->lo_len && a->hi_len == b->hi_len &&
	       memcmp(a->lo, b->lo, a->lo_len) == 0 &&
	       memcmp(a->hi, b->hi, a->hi_len) == 0;
}

static bool list_eq(const uint64_t *a, const uint64_t *b, uint32_t n)
{
	if (!a || !b)
		return a == b;
	return memcmp(a, b, n * sizeof(uint64_t)) == 0;
}

static void footer_touch(const struct tfs_footer *f)
{
	const uint64_t *lists[] = {
		f->file_sizes, f->file_var_sizes, f->file_validity_sizes,
		f->tile_offsets_off, f->tile_var_offsets_off,
		f->tile_var_sizes_off, f->tile_validity_offsets_off,
		f->tile_mins_off, f->tile_maxes_off, f->tile_sums_off,
		f->tile_null_counts_off,
	};

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (lists[i])
			fuzz_touch(lists[i], f->slot_num * sizeof(uint64_t));
	for (uint32_t i = 0; f->ned && i < f->dim_num; i++) {
		fuzz_touch(f->ned[i].lo, f->ned[i].lo_len);
		fuzz_touch(f->ned[i].hi, f->ned[i].hi_len);
	}
	if (f->has_gobounds) {
		fuzz_touch(f->gobounds_mins_off, f->dim_num * sizeof(uint64_t));
		fuzz_touch(f->gobounds_maxes_off, f->dim_num * sizeof(uint64_t));
	}
}

static bool footer_eq(const struct tfs_footer *a, const struct tfs_footer *b)
{
	uint32_t n = a->slot_num;

	if (a->version != b->version || a->dense != b->dense ||
	    a->empty != b->empty || a->dim_num != b->dim_num ||
	    a->sparse_tile_num != b->sparse_tile_num ||
	    a->last_tile_cell_num != b->last_tile_cell_num ||
	    a->has_timestamps != b->has_timestamps ||
	    a->has_delete_meta != b->has_delete_meta || n != b->slot_num ||
	    a->rtree_off != b->rtree_off || a->summary_off != b->summary_off ||
	    a->processed_conditions_off != b->processed_conditions_off ||
	    a->has_gobounds != b->has_gobounds)
		return false;
	if (!a->schema_name != !b->schema_name ||
	    (a->schema_name && strcmp(a->schema_name, b->schema_name)))
		return false;
	for (uint32_t i = 0; a->ned && i < a->dim_num; i++)
		if (!range_eq(&a->ned[i], &b->ned[i]))
			return false;
	return list_eq(a->file_sizes, b->file_sizes, n) &&
	       list_eq(a->file_var_sizes, b->file_var_sizes, n) &&
	       list_eq(a->file_validity_sizes, b->file_validity_sizes, n) &&
	       list_eq(a->tile_offsets_off, b->tile_offsets_off, n) &&
	       list_eq(a->tile_var_offsets_off, b->tile_var_offsets_off, n) &&
	       list_eq(a->tile_var_sizes_off, b->tile_var_sizes_off, n) &&
	       list_eq(a->tile_validity_offsets_off,
		       b->tile_validity_offsets_off, n) &&
	       list_eq(a->tile_mins_off, b->tile_mins_off, n) &&
	       list_eq(a->tile_maxes_off, b->tile_maxes_off, n) &&
	       list_eq(a->tile_sums_off, b->tile_sums_off, n) &&
	       list_eq(a->tile_null_counts_off, b->tile_null_counts_off, n) &&
	       (!a->has_gobounds ||
		(list_eq(a->gobounds_mins_off, b->gobounds_mins_off,
			 a->dim_num) &&
		 list_eq(a->gobounds_maxes_off, b->gobounds_maxes_off,
			 a->dim_num)));
}

/* Serialize, re-parse, compare, serialize again. */
static void footer_roundtrip(const struct tfs_footer *f,
			     const struct tfs_schema *s)
{
	struct tfs_footer back;
	struct tfs_buf b1, b2;
	struct tfs_diag d;

	if (f->empty)
		return; /* not serializable (tfs_footer_serialize) */
	tfs_buf_init(&b1, TFS_BUF_NO_MAX);
	tfs_buf_init(&b2, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	FUZZ_CHECK(tfs_footer_serialize(&b1, f, s) == TFS_E_OK);
	FUZZ_CHECK(tfs_footer_parse(&back, b1.data, b1.len, s, &d) ==
		   TFS_E_OK);
	FUZZ_CHECK(back.size == b1.len);
	FUZZ_CHECK(footer_eq(f, &back));
	FUZZ_CHECK(tfs_footer_serialize(&b2, &back, s) == TFS_E_OK);
	fuzz_check_same(b2.data, b2.len, b1.data, b1.len,
			"footer serialized twice");
	tfs_footer_release(&back);
	tfs_buf_release(&b1);
	tfs_buf_release(&b2);
}

static void check_u64_list(const uint8_t *p, size_t len)
{
	struct tfs_diag d;
	struct tfs_buf b;
	uint64_t *list, count;

	tfs_diag_init(&d);
	if (tfs_u64_list_parse(p, len, &list, &count, &d))
		return;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfs_u64_list_serialize(&b, list, count) == TFS_E_OK);
	fuzz_check_same(b.data, b.len, p, len, "u64 list serialized back");
	tfs_buf_release(&b);
	tfs_free(list);
}

static void check_rtree(const uint8_t *p, size_t len, uint32_t version,
			const struct tfs_schema *s)
{
	struct tfs_rtree t, back;
	struct tfs_buf b1, b2;
	struct tfs_diag d;

	tfs_diag_init(&d);
	if (tfs_rtree_parse(&t, p, len, version, s, &d))
		return;
	FUZZ_CHECK(t.dim_num == s->dim_num);
	tfs_buf_init(&b1, TFS_BUF_NO_MAX);
	tfs_buf_init(&b2, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfs_rtree_serialize(&b1, &t, version, s) == TFS_E_OK);
	FUZZ_CHECK(tfs_rtree_parse(&back, b1.data, b1.len, version, s, &d) ==
		   TFS_E_OK);
	FUZZ_CHECK(back.leaf_num == t.leaf_num);
	for (uint64_t i = 0; i < t.leaf_num * t.dim_num; i++)
		FUZZ_CHECK(range_eq(&t.leaves[i], &back.leaves[i]));
	FUZZ_CHECK(tfs_rtree_serialize(&b2, &back, version, s) == TFS_E_OK);
	fuzz_check_same(b2.data, b2.len, b1.data, b1.len,
			"R-tree serialized twice");
	tfs_rtree_release(&back);
	tfs_rtree_release(&t);
	tfs_buf_release(&b1);
	tfs_buf_release(&b2);
}

static void check_strlist(const uint8_t *p, size_t len)
{
	struct tfs_strlist l;
	struct tfs_diag d;
	struct tfs_buf b;

	tfs_diag_init(&d);
	if (tfs_strlist_parse(&l, p, len, &d))
		return;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfs_strlist_serialize(&b, &l) == TFS_E_OK);
	fuzz_check_same(b.data, b.len, p, len, "string list serialized back");
	tfs_buf_release(&b);
	tfs_strlist_release(&l);
}

enum tile_kind { TILE_LIST, TILE_RTREE, TILE_STRLIST };

/* Decodes the generic tile at file offset off (before the footer, at
 * `end`) and parses it as `kind`. */
static void slot_tile(const uint8_t *file, size_t end, uint64_t off,
		      enum tile_kind kind, uint32_t version,
		      const struct tfs_schema *s, unsigned *budget)
{
	uint8_t *payload;
	size_t len;

	if (off >= end || *budget == 0)
		return;
	--*budget;
	if (fuzz_generic_decode(file + off, end - (size_t)off, &payload, &len,
				NULL))
		return;
	if (kind == TILE_LIST)
		check_u64_list(payload, len);
	else if (kind == TILE_RTREE)
		check_rtree(payload, len, version, s);
	else
		check_strlist(payload, len);
	tfs_free(payload);
}

static void slot_tiles(const uint8_t *file, size_t end,
		       const struct tfs_footer *f, const struct tfs_schema *s)
{
	const uint64_t *lists[] = {
		f->tile_offsets_off, f->tile_var_offsets_off,
		f->tile_var_sizes_off, f->tile_validity_offsets_off,
		f->tile_null_counts_off,
	};
	unsigned budget = MAX_SLOT_TILES;

	slot_tile(file, end, f->rtree_off, TILE_RTREE, f->version, s, &budget);
	if (f->version >= 16)
		slot_tile(file, end, f->processed_conditions_off, TILE_STRLIST,
			  f->version, s, &budget);
	for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		for (uint32_t i = 0; lists[k] && i < f->slot_num; i++)
			if (lists[k][i])
				slot_tile(file, end, lists[k][i], TILE_LIST,
					  f->version, s, &budget);
}

/* Parses the footer at buf the way fragment_load.c does. */
static bool footer_at(const uint8_t *buf, size_t len,
		      const struct tfs_schema *s, struct tfs_footer *f)
{
	struct tfs_diag d;
	uint32_t version;
	char *name;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_footer_schema_name(buf, len, &version, &name, &d);
	if (e) {
		FUZZ_CHECK(d.code == e && name == NULL);
		return false;
	}
	FUZZ_CHECK(version >= 3 && version <= TFS_FORMAT_VERSION_MAX);
	FUZZ_CHECK((version >= 10) == (name != NULL));
	tfs_free(name);
	e = tfs_footer_parse(f, buf, len, s, &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
		return false;
	}
	FUZZ_CHECK(f->size <= len && f->version == version);
	FUZZ_CHECK(f->dim_num == s->dim_num);
	FUZZ_CHECK(f->slot_num == tfs_slot_count(f->version, s->attr_num,
						 s->dim_num, f->has_timestamps,
						 f->has_delete_meta));
	FUZZ_CHECK(f->empty == (f->ned == NULL));
	footer_touch(f);
	footer_roundtrip(f, s);
	return true;
}

static bool has_var_dim(const struct tfs_schema *s)
{
	for (uint32_t i = 0; i < s->dim_num; i++)
		if (s->dims[i].var)
			return true;
	return false;
}

static void meta_file(const uint8_t *file, size_t size, uint32_t nv,
		      const struct tfs_schema *s)
{
	struct tfs_footer f;
	uint64_t len = 0;
	size_t start;

	if (nv < 10 && !has_var_dim(s))
		len = tfs_footer_fixed_size(nv, s);
	if (len == 0) {
		if (size < 8)
			return;
		len = tfs_get_u64(file + size - 8);
		if (len == 0 || len > size - 8)
			return;
		start = size - 8 - (size_t)len;
	} else {
		if (len > size)
			return;
		start = size - (size_t)len;
	}
	if (!footer_at(file + start, (size_t)len, s, &f))
		return;
	slot_tiles(file, start, &f, s);
	tfs_footer_release(&f);
}

static void legacy_file(const uint8_t *file, size_t size, bool dense,
			const struct tfs_schema *s)
{
	struct tfs_legacy_meta m;
	struct tfs_diag d;
	uint8_t *payload;
	size_t len;
	enum tfs_err e;

	if (fuzz_generic_decode(file, size, &payload, &len, NULL))
		return;
	tfs_diag_init(&d);
	e = tfs_legacy_meta_parse(&m, payload, len, s, dense, &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
	} else {
		FUZZ_CHECK(m.attr_num == s->attr_num);
		FUZZ_CHECK(m.footer.slot_num == s->attr_num + 1);
		footer_touch(&m.footer);
		for (uint32_t i = 0; i <= m.attr_num; i++)
			fuzz_touch(m.tile_offsets[i],
				   m.tile_counts[i] * sizeof(uint64_t));
		for (uint32_t i = 0; i < m.attr_num; i++) {
			fuzz_touch(m.tile_var_offsets[i],
				   m.tile_var_counts[i] * sizeof(uint64_t));
			fuzz_touch(m.tile_var_sizes[i],
				   m.tile_var_size_counts[i] * sizeof(uint64_t));
		}
		for (uint64_t i = 0; i < m.rtree.leaf_num * m.rtree.dim_num; i++)
			fuzz_touch(m.rtree.leaves[i].lo, m.rtree.leaves[i].lo_len);
		tfs_legacy_meta_release(&m);
	}
	tfs_free(payload);
}

static void consolidated_file(const uint8_t *file, size_t size,
			      const struct tfs_schema *s)
{
	struct tfs_consolidated_meta m;
	struct tfs_diag d;
	uint8_t *payload;
	size_t len;
	enum tfs_err e;

	if (fuzz_generic_decode(file, size, &payload, &len, NULL))
		return;
	tfs_diag_init(&d);
	e = tfs_consolidated_meta_parse(&m, payload, len, &d); /* owns it */
	if (e) {
		FUZZ_CHECK(d.code == e);
		return;
	}
	for (uint32_t i = 0; i < m.count && i < MAX_META_ENTRIES; i++) {
		uint64_t off = m.entries[i].footer_offset;
		struct tfs_footer f;

		FUZZ_CHECK(m.entries[i].name && off < m.payload_len);
		if (footer_at(m.payload + off, m.payload_len - (size_t)off, s,
			      &f))
			tfs_footer_release(&f);
	}
	tfs_consolidated_meta_release(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_cursor c;
	struct tfs_schema s;
	struct tfs_diag d;
	const uint8_t *schema;
	uint32_t n;
	uint8_t mode, nv;

	tfs_cur_init(&c, data, size);
	if (!tfs_cur_u32(&c, &n) || !tfs_cur_take(&c, n, &schema) ||
	    !tfs_cur_u8(&c, &mode) || !tfs_cur_u8(&c, &nv))
		return 0;
	tfs_diag_init(&d);
	if (tfs_schema_parse(&s, schema, n, "__array_schema.tdb", &d))
		return 0;
	switch (mode & 3) {
	case 0:
		meta_file(data + c.pos, tfs_cur_left(&c), nv, &s);
		break;
	case 1:
		legacy_file(data + c.pos, tfs_cur_left(&c), mode & 4, &s);
		break;
	default:
		consolidated_file(data + c.pos, tfs_cur_left(&c), &s);
		break;
	}
	tfs_schema_release(&s);
	return 0;
}
