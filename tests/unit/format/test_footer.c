/* Fragment metadata footers (format/fragment.md §3–§4): the worked example
 * of §10, footers of every version 3..23 built and read back, v23
 * optional sections, the fixed-size rule of versions < 10, and broken
 * input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_examples.h"
#include "fmt_test_util.h"
#include "tfs_alloc.h"

static const char schema_name62[] =
	"__1700000000000_1700000000000_00000002fced2fb1f6ac08863552dc86";

static void example_schema(struct tfs_schema *s)
{
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_parse(s, fx_schema_v22, FX_SCHEMA_V22_LEN,
				      schema_name62, &d),
		     TFS_E_OK, "%s", d.msg);
}

/* fragment.md §10, byte by byte (generic tile offsets are not given by
 * the document; we use 1000, 1100, ...). */
static size_t example_footer(uint8_t *out)
{
	struct tfs_buf b;
	uint64_t next = 1000;
	enum tfs_err e = TFS_E_OK;
	size_t n;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	e |= tfs_buf_append_u32(&b, 22);
	e |= tfs_buf_append_u64(&b, 62);
	e |= tfs_buf_append(&b, schema_name62, 62);
	e |= tfs_buf_append_u8(&b, 1); /* dense */
	e |= tfs_buf_append_u8(&b, 0); /* non-empty domain present */
	e |= tfs_buf_append_u32(&b, 1);
	e |= tfs_buf_append_u32(&b, 10);
	e |= tfs_buf_append_u64(&b, 0); /* sparse tile num */
	e |= tfs_buf_append_u64(&b, 5); /* last tile cell num */
	e |= tfs_buf_append_u8(&b, 0);
	e |= tfs_buf_append_u8(&b, 0);
	e |= tfs_buf_append_u64(&b, 80); /* file sizes: a0 80, coords 0, d 0 */
	for (int i = 0; i < 2 + 3 + 3; i++)
		e |= tfs_buf_append_u64(&b, 0); /* + var sizes + validity */
	e |= tfs_buf_append_u64(&b, next); /* R-tree */
	for (int i = 0; i < 8 * 3 + 2; i++) {
		next += 100;
		e |= tfs_buf_append_u64(&b, next);
	}
	cr_assert_eq(e, TFS_E_OK);
	n = b.len;
	memcpy(out, b.data, n);
	tfs_buf_release(&b);
	return n;
}

Test(footer, worked_example)
{
	uint8_t file[2048];
	size_t flen, len;
	struct tfs_schema s;
	struct tfs_footer f;
	struct tfs_diag d;
	struct tfs_buf b;
	uint32_t version;
	char *name;

	example_schema(&s);
	/* The footer sits at the end of the file, followed by footer_len. */
	memset(file, 0xab, 1000);
	len = example_footer(file + 1000);
	cr_assert_eq(len, 390);
	tfs_put_u64(file + 1000 + len, len);
	flen = 1000 + len + 8;
	cr_assert_eq(tfs_get_u64(file + flen - 8), 390);

	tfs_diag_init(&d);
	cr_assert_eq(tfs_footer_schema_name(file + 1000, len, &version, &name,
					    &d),
		     TFS_E_OK);
	cr_expect_eq(version, 22);
	cr_expect_str_eq(name, schema_name62);
	tfs_free(name);

	cr_assert_eq(tfs_footer_parse(&f, file + 1000, len, &s, &d), TFS_E_OK,
		     "%s", d.msg);
	cr_expect_eq(f.version, 22);
	cr_expect_str_eq(f.schema_name, schema_name62);
	cr_expect(f.dense);
	cr_expect_not(f.empty);
	cr_assert_eq(f.dim_num, 1);
	cr_expect_eq(tfs_get_u32(f.ned[0].lo), 1);
	cr_expect_eq(tfs_get_u32(f.ned[0].hi), 10);
	cr_expect_eq(f.sparse_tile_num, 0);
	cr_expect_eq(f.last_tile_cell_num, 5);
	cr_expect_not(f.has_timestamps);
	cr_expect_not(f.has_delete_meta);
	cr_assert_eq(f.slot_num, 3);
	cr_expect_eq(tfs_slot_count(22, 1, 1, false, false), 3);
	cr_expect_eq(f.file_sizes[0], 80);
	cr_expect_eq(f.file_sizes[1], 0);
	cr_expect_eq(f.rtree_off, 1000);
	cr_expect_eq(f.tile_offsets_off[0], 1100);
	cr_expect_eq(f.tile_offsets_off[2], 1300);
	cr_expect_eq(f.tile_var_offsets_off[0], 1400);
	cr_expect_eq(f.tile_validity_offsets_off[2], 2200);
	cr_expect_eq(f.tile_mins_off[0], 2300);
	cr_expect_eq(f.tile_null_counts_off[2], 3400);
	cr_expect_eq(f.summary_off, 3500);
	cr_expect_eq(f.processed_conditions_off, 3600);
	cr_expect_not(f.has_gobounds);
	cr_expect_eq(f.size, 390);
	cr_expect_eq(tfs_footer_fixed_size(22, &s), 0);

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_footer_serialize(&b, &f, &s), TFS_E_OK);
	cr_expect_eq(b.len, len);
	cr_expect_arr_eq(b.data, file + 1000, len);
	tfs_buf_release(&b);
	tfs_footer_release(&f);

	for (size_t k = 0; k < len; k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_footer_parse(&f, file + 1000, k, &s, &d),
			     TFS_E_CORRUPT, "prefix %zu", k);
		cr_expect_null(f.file_sizes);
	}
	tfs_schema_release(&s);
}

Test(footer, version_and_flags)
{
	uint8_t buf[1024];
	size_t len = example_footer(buf);
	struct tfs_schema s;
	struct tfs_footer f;
	struct tfs_diag d;
	uint32_t version;
	char *name;

	example_schema(&s);
	tfs_put_u32(buf, 0xffffffffu);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&f, buf, len, &s, &d), TFS_E_UNSUPPORTED);
	cr_expect_str_eq(d.msg, "footer: unsupported format version 4294967295");
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_schema_name(buf, len, &version, &name, &d),
		     TFS_E_UNSUPPORTED);
	cr_expect_null(name);
	tfs_put_u32(buf, 2);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&f, buf, len, &s, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "legacy"), "%s", d.msg);
	tfs_put_u32(buf, 22);
	tfs_put_u64(buf + 4, 0); /* empty schema name */
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&f, buf, len, &s, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "schema name length 0"), "%s", d.msg);
	tfs_put_u64(buf + 4, 62);
	buf[74] = 2; /* dense flag */
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&f, buf, len, &s, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "dense flag"), "%s", d.msg);
	buf[74] = 1;
	/* null non-empty domain: TileDB's reader reads nothing for it */
	buf[75] = 1;
	memmove(buf + 76, buf + 84, len - 84);
	len -= 8;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&f, buf, len, &s, &d), TFS_E_OK);
	cr_expect(f.empty);
	cr_expect_null(f.ned);
	cr_expect_eq(f.size, len);
	cr_expect_eq(f.last_tile_cell_num, 5);
	{
		struct tfs_buf b;

		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		cr_expect_eq(tfs_footer_serialize(&b, &f, &s), TFS_E_INVALID);
		cr_expect_eq(b.len, 0);
		tfs_buf_release(&b);
	}
	tfs_footer_release(&f);
	tfs_schema_release(&s);
}

/* ---- every version, built through the struct --------------------------- */

/* Sparse schema: d0 INT64, d1 INT64, attrs a (INT32) and v (CHAR var). */
static void two_dim_schema(struct tfs_schema *s, uint32_t version)
{
	static uint8_t fills[2][4];
	int64_t lo = -100, hi = 100, ext = 10;

	memset(s, 0, sizeof(*s));
	s->version = version;
	s->array_type = TFS_SPARSE;
	s->capacity = 4;
	s->dim_num = 2;
	s->dims = calloc(2, sizeof(*s->dims));
	s->attr_num = 2;
	s->attrs = calloc(2, sizeof(*s->attrs));
	for (int i = 0; i < 2; i++) {
		s->dims[i].name = i ? "d1" : "d0";
		s->dims[i].type = TFS_INT64;
		s->dims[i].cell_val_num = 1;
		s->dims[i].has_domain = true;
		memcpy(s->dims[i].domain[0], &lo, 8);
		memcpy(s->dims[i].domain[1], &hi, 8);
		s->dims[i].has_extent = true;
		memcpy(s->dims[i].extent, &ext, 8);
	}
	s->attrs[0].name = "a";
	s->attrs[0].type = TFS_INT32;
	s->attrs[0].cell_val_num = 1;
	s->attrs[0].fill = fills[0];
	s->attrs[0].fill_size = 4;
	s->attrs[1].name = "v";
	s->attrs[1].type = TFS_CHAR;
	s->attrs[1].cell_val_num = TFS_VAR_NUM;
	s->attrs[1].var = true;
	s->attrs[1].fill = fills[1];
	s->attrs[1].fill_size = 1;
}

static void free_schema(struct tfs_schema *s)
{
	free(s->dims);
	free(s->attrs);
}

static uint64_t *seq(uint32_t n, uint64_t base)
{
	uint64_t *v = tfs_callocn(n ? n : 1, 8);

	for (uint32_t i = 0; i < n; i++)
		v[i] = base + i;
	return v;
}

static void build_footer(struct tfs_footer *f, const struct tfs_schema *s,
			 uint32_t v, bool ts, bool del, bool gob)
{
	static int64_t ned[4] = {-3, 7, 0, 99};
	uint32_t num = tfs_slot_count(v, s->attr_num, s->dim_num, ts, del);
	bool pre5 = v < 5;

	memset(f, 0, sizeof(*f));
	f->version = v;
	f->schema_name = v >= 10 ? tfs_strdup("__1_1_x") : NULL;
	f->dim_num = s->dim_num;
	f->ned = tfs_callocn(2, sizeof(struct tfs_range));
	for (int i = 0; i < 2; i++) {
		f->ned[i].lo = (const uint8_t *)&ned[2 * i];
		f->ned[i].hi = (const uint8_t *)&ned[2 * i + 1];
		f->ned[i].lo_len = f->ned[i].hi_len = 8;
	}
	f->sparse_tile_num = 3;
	f->last_tile_cell_num = 2;
	f->has_timestamps = ts;
	f->has_delete_meta = del;
	f->slot_num = num;
	f->file_sizes = seq(num, 100);
	/* pre-v5 var lists have no `__coords` entry: keep it 0 */
	f->file_var_sizes = seq(num, 200);
	if (pre5)
		f->file_var_sizes[s->attr_num] = 0;
	f->file_validity_sizes = v >= 7 ? seq(num, 300) : tfs_callocn(num, 8);
	f->rtree_off = 4000;
	f->tile_offsets_off = seq(num, 400);
	f->tile_var_offsets_off = seq(num, 500);
	f->tile_var_sizes_off = seq(num, 600);
	if (pre5) {
		f->tile_var_offsets_off[s->attr_num] = 0;
		f->tile_var_sizes_off[s->attr_num] = 0;
	}
	f->tile_validity_offsets_off =
		v >= 7 ? seq(num, 700) : tfs_callocn(num, 8);
	if (v >= 11) {
		f->tile_mins_off = seq(num, 800);
		f->tile_maxes_off = seq(num, 900);
		f->tile_sums_off = seq(num, 1000);
		f->tile_null_counts_off = seq(num, 1100);
	}
	f->summary_off = v >= 12 ? 5000 : 0;
	f->processed_conditions_off = v >= 16 ? 6000 : 0;
	if (gob) {
		f->has_gobounds = true;
		f->gobounds_mins_off = seq(2, 7000);
		f->gobounds_maxes_off = seq(2, 8000);
	}
}

static void compare_lists(const uint64_t *a, const uint64_t *b, uint32_t n,
			  const char *what, uint32_t v)
{
	if (!a || !b) {
		cr_expect(!a && !b, "v%u %s: presence differs", v, what);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		cr_expect_eq(a[i], b[i], "v%u %s[%u]", v, what, i);
}

static void footer_free_built(struct tfs_footer *f)
{
	/* ned points at static storage: detach before release */
	f->ned_bytes = NULL;
	tfs_footer_release(f);
}

Test(footer, every_version)
{
	for (uint32_t v = 3; v <= TFS_FORMAT_VERSION_MAX; v++) {
		for (int variant = 0; variant < 4; variant++) {
			bool ts = v >= 14 && (variant & 1);
			bool del = v >= 15 && (variant & 2);
			bool gob = v >= 23 && variant == 3;
			struct tfs_schema s;
			struct tfs_footer f, g;
			struct tfs_buf b, b2;
			struct tfs_diag d;
			uint64_t fixed;

			two_dim_schema(&s, v);
			build_footer(&f, &s, v, ts, del, gob);
			tfs_buf_init(&b, TFS_BUF_NO_MAX);
			tfs_buf_init(&b2, TFS_BUF_NO_MAX);
			cr_assert_eq(tfs_footer_serialize(&b, &f, &s), TFS_E_OK,
				     "v%u", v);
			fixed = tfs_footer_fixed_size(v, &s);
			if (v < 10)
				cr_expect_eq(fixed, b.len, "v%u fixed size", v);
			else
				cr_expect_eq(fixed, 0);
			tfs_diag_init(&d);
			cr_assert_eq(tfs_footer_parse(&g, b.data, b.len, &s, &d),
				     TFS_E_OK, "v%u: %s", v, d.msg);
			cr_expect_eq(g.size, b.len);
			cr_expect_eq(g.slot_num, f.slot_num, "v%u", v);
			cr_expect_eq(g.has_timestamps, ts);
			cr_expect_eq(g.has_delete_meta, del);
			cr_expect_eq(g.has_gobounds, gob);
			cr_expect_eq(g.sparse_tile_num, 3);
			cr_expect_eq((int64_t)tfs_get_u64(g.ned[0].lo), -3);
			cr_expect_eq((int64_t)tfs_get_u64(g.ned[1].hi), 99);
			cr_expect_eq(g.rtree_off, 4000);
			compare_lists(g.file_sizes, f.file_sizes, f.slot_num,
				      "file sizes", v);
			compare_lists(g.file_var_sizes, f.file_var_sizes,
				      f.slot_num, "var sizes", v);
			compare_lists(g.file_validity_sizes,
				      f.file_validity_sizes, f.slot_num,
				      "validity sizes", v);
			compare_lists(g.tile_offsets_off, f.tile_offsets_off,
				      f.slot_num, "offsets", v);
			compare_lists(g.tile_var_offsets_off,
				      f.tile_var_offsets_off, f.slot_num,
				      "var offsets", v);
			compare_lists(g.tile_var_sizes_off, f.tile_var_sizes_off,
				      f.slot_num, "var sizes off", v);
			compare_lists(g.tile_validity_offsets_off,
				      f.tile_validity_offsets_off, f.slot_num,
				      "validity off", v);
			compare_lists(g.tile_mins_off, f.tile_mins_off,
				      f.slot_num, "mins", v);
			compare_lists(g.tile_null_counts_off,
				      f.tile_null_counts_off, f.slot_num,
				      "null counts", v);
			compare_lists(g.gobounds_maxes_off, f.gobounds_maxes_off,
				      2, "gobounds", v);
			cr_expect_eq(g.summary_off, f.summary_off);
			cr_expect_eq(g.processed_conditions_off,
				     f.processed_conditions_off);
			cr_expect_eq(g.schema_name != NULL, v >= 10);
			cr_assert_eq(tfs_footer_serialize(&b2, &g, &s), TFS_E_OK);
			cr_expect_eq(b.len, b2.len);
			cr_expect_arr_eq(b.data, b2.data, b.len, "v%u", v);
			for (size_t k = 0; k < b.len; k++) {
				struct tfs_footer h;

				tfs_diag_init(&d);
				cr_expect_eq(tfs_footer_parse(&h, b.data, k, &s,
							      &d),
					     TFS_E_CORRUPT, "v%u prefix %zu", v,
					     k);
			}
			tfs_footer_release(&g);
			footer_free_built(&f);
			tfs_buf_release(&b);
			tfs_buf_release(&b2);
			free_schema(&s);
		}
	}
}

Test(footer, fixed_size_rules)
{
	struct tfs_schema s;

	two_dim_schema(&s, 9);
	/* A = 2, D = 2, 8-byte dims: fragment.md §3 formulas */
	cr_expect_eq(tfs_footer_fixed_size(3, &s),
		     4 + 1 + 1 + 2 * 2 * 8 + 8 + 8 + 3 * 8 + 2 * 8 + 8 + 3 * 8 +
			     2 * 8 + 2 * 8);
	cr_expect_eq(tfs_footer_fixed_size(6, &s),
		     4 + 1 + 1 + 32 + 8 + 8 + 5 * 5 * 8 + 8);
	cr_expect_eq(tfs_footer_fixed_size(9, &s),
		     4 + 1 + 1 + 32 + 8 + 8 + 7 * 5 * 8 + 8);
	cr_expect_eq(tfs_footer_fixed_size(10, &s), 0);
	cr_expect_eq(tfs_footer_fixed_size(2, &s), 0);
	s.dims[1].var = true;
	s.dims[1].type = TFS_STRING_ASCII;
	s.dims[1].cell_val_num = TFS_VAR_NUM;
	cr_expect_eq(tfs_footer_fixed_size(9, &s), 0);
	free_schema(&s);
}

/* v23: unknown optional sections are skipped, a repeated or mis-sized
 * section 0 is corrupt. */
Test(footer, optional_sections)
{
	struct tfs_schema s;
	struct tfs_footer f, g;
	struct tfs_buf b;
	struct tfs_diag d;
	size_t count_at;

	two_dim_schema(&s, 23);
	build_footer(&f, &s, 23, false, false, false);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_footer_serialize(&b, &f, &s), TFS_E_OK);
	count_at = b.len - 4;
	/* three sections: unknown id 7, section 0, unknown id 2^40 */
	tfs_put_u32(b.data + count_at, 3);
	cr_assert_eq(tfs_buf_append_u64(&b, 7), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u32(&b, 3), TFS_E_OK);
	cr_assert_eq(tfs_buf_append(&b, "xyz", 3), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u64(&b, 0), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u32(&b, 32), TFS_E_OK);
	for (uint64_t i = 0; i < 4; i++)
		cr_assert_eq(tfs_buf_append_u64(&b, 90 + i), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u64(&b, (uint64_t)1 << 40), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u32(&b, 0), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_footer_parse(&g, b.data, b.len, &s, &d), TFS_E_OK,
		     "%s", d.msg);
	cr_expect(g.has_gobounds);
	cr_expect_eq(g.gobounds_mins_off[0], 90);
	cr_expect_eq(g.gobounds_mins_off[1], 91);
	cr_expect_eq(g.gobounds_maxes_off[0], 92);
	cr_expect_eq(g.gobounds_maxes_off[1], 93);
	cr_expect_eq(g.size, b.len);
	tfs_footer_release(&g);

	/* section 0 with the wrong size */
	b.data[count_at + 4 + 8 + 4 + 3 + 8] = 31;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&g, b.data, b.len, &s, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "global order bounds"), "%s", d.msg);
	/* a section length past the end */
	b.data[count_at + 4 + 8 + 4 + 3 + 8] = 32;
	tfs_put_u32(b.data + count_at + 4 + 8, 0xfffffff0u);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&g, b.data, b.len, &s, &d), TFS_E_CORRUPT);
	/* a count that cannot fit */
	tfs_put_u32(b.data + count_at + 4 + 8, 3);
	tfs_put_u32(b.data + count_at, 0x10000000u);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&g, b.data, b.len, &s, &d), TFS_E_CORRUPT);
	tfs_buf_release(&b);
	footer_free_built(&f);
	free_schema(&s);
}

/* Pre-v5 footers need dimensions of one size. */
Test(footer, v4_mixed_dims_refused)
{
	struct tfs_schema s;
	struct tfs_footer f, g;
	struct tfs_buf b;
	struct tfs_diag d;

	two_dim_schema(&s, 4);
	build_footer(&f, &s, 4, false, false, false);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_footer_serialize(&b, &f, &s), TFS_E_OK);
	s.dims[1].type = TFS_INT32;
	tfs_diag_init(&d);
	cr_expect_eq(tfs_footer_parse(&g, b.data, b.len, &s, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "one fixed size"), "%s", d.msg);
	tfs_buf_release(&b);
	footer_free_built(&f);
	free_schema(&s);
}

/* A non-empty domain that leaves the schema's domain (or has lo > hi) is
 * damage: left in, every read of the array's non-empty domain became an
 * invalid query (ERANGE) instead of EIO (found by the corrupt-array
 * test). */
Test(footer, non_empty_domain_outside_domain)
{
	static const struct {
		uint32_t lo, hi;
		bool ok;
	} cases[] = {
		{1, 10, true}, {1, 1, true}, {0, 10, false}, {5, 4, false},
		{1, 0x7fffffff, false}, {0x80000000u, 3, false},
	};
	uint8_t file[2048];
	struct tfs_schema s;
	struct tfs_diag d;
	size_t len;

	example_schema(&s);
	cr_assert_eq(tfs_datatype_size(s.dims[0].type), 4);
	cr_assert_leq(tfs_value_as_i64(s.dims[0].type, s.dims[0].domain[0]), 1);
	cr_assert_geq(tfs_value_as_i64(s.dims[0].type, s.dims[0].domain[1]), 10);
	cr_assert_lt(tfs_value_as_i64(s.dims[0].type, s.dims[0].domain[1]),
		     0x7fffffff);
	len = example_footer(file);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tfs_footer f;
		enum tfs_err e;

		/* version, schema name length and name, two flags */
		tfs_put_u32(file + 4 + 8 + 62 + 2, cases[i].lo);
		tfs_put_u32(file + 4 + 8 + 62 + 2 + 4, cases[i].hi);
		tfs_diag_init(&d);
		e = tfs_footer_parse(&f, file, len, &s, &d);
		if (cases[i].ok) {
			cr_expect_eq(e, TFS_E_OK, "case %zu: %s", i, d.msg);
			if (!e)
				tfs_footer_release(&f);
		} else {
			cr_expect_eq(e, TFS_E_CORRUPT, "case %zu", i);
			cr_expect(strstr(d.msg, "not inside its domain"),
				  "case %zu: %s", i, d.msg);
		}
	}
	tfs_schema_release(&s);
}
