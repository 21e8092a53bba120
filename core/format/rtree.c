/* The R-tree generic tile of fragment metadata (format/fragment.md §5
 * "R-tree generic tile"), v5+ and v3–4 layouts. Readers need only the
 * leaves (one MBR per data tile), so parsing keeps a copy of the leaf
 * level's bytes and ranges pointing into it. Serialization rebuilds the
 * upper levels from the leaves the way TileDB does (groups of `fanout`,
 * ties resolved as TileDB's std::min/std::max resolve them) so the bytes
 * match what TileDB writes. */
#include <math.h>
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

#define RTREE_DEFAULT_FANOUT 10u

/* Bytes of the smallest MBR of the schema: fixed dims 2 × size, var dims
 * two u64 lengths. */
static uint64_t min_mbr_bytes(const struct tfs_schema *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->dim_num; i++)
		n += s->dims[i].var ? 16 : 2 * tfs_datatype_size(s->dims[i].type);
	return n ? n : 1;
}

static enum tfs_err parse_body(struct tfs__rd *r, struct tfs_rtree *t,
			       uint32_t version, const struct tfs_schema *s)
{
	uint32_t level_num, ignored32;
	uint8_t ignored8;
	uint64_t min_bytes = min_mbr_bytes(s), leaf_from = 0;
	enum tfs_err e;

	t->dim_num = s->dim_num;
	if (version < 5) {
		for (uint32_t i = 0; i < s->dim_num; i++)
			if (s->dims[i].var ||
			    s->dims[i].type != s->dims[0].type)
				return tfs__bad(r,
						"version %u R-tree needs "
						"dimensions of one fixed type",
						(unsigned)version);
		if ((e = tfs__u32(r, &ignored32, "dimension count")) ||
		    (e = tfs__u32(r, &t->fanout, "fanout")) ||
		    (e = tfs__u8(r, &ignored8, "datatype")))
			return e;
	} else if ((e = tfs__u32(r, &t->fanout, "fanout"))) {
		return e;
	}
	if ((e = tfs__u32(r, &level_num, "level count")))
		return e;
	if (level_num > tfs_cur_left(&r->c) / 8)
		return tfs__bad(r, "level count %u does not fit",
				(unsigned)level_num);

	for (uint32_t l = 0; l < level_num; l++) {
		uint64_t mbr_num;
		bool leaf = l + 1 == level_num;

		if ((e = tfs__u64(r, &mbr_num, "MBR count")))
			return e;
		if (mbr_num > tfs_cur_left(&r->c) / min_bytes)
			return tfs__bad(r,
					"level %u: %llu MBRs do not fit in %zu "
					"bytes",
					(unsigned)l, (unsigned long long)mbr_num,
					tfs_cur_left(&r->c));
		if (leaf) {
			t->leaves = tfs_callocn((size_t)mbr_num * s->dim_num,
						sizeof(struct tfs_range));
			if (!t->leaves)
				return tfs__fail(r, TFS_E_NOMEM,
						 "out of memory for %llu MBRs",
						 (unsigned long long)mbr_num);
			leaf_from = r->c.pos;
		}
		for (uint64_t m = 0; m < mbr_num; m++) {
			for (uint32_t i = 0; i < s->dim_num; i++) {
				struct tfs_range rg;

				e = tfs__range(r, s->dims[i].type,
					       version >= 5 && s->dims[i].var,
					       &rg, "MBR");
				if (e)
					return e;
				if (leaf)
					t->leaves[m * s->dim_num + i] = rg;
			}
		}
		if (leaf)
			t->leaf_num = mbr_num;
	}
	if (tfs_cur_left(&r->c))
		return tfs__bad(r, "%zu trailing bytes", tfs_cur_left(&r->c));
	if (!t->leaves)
		return TFS_E_OK;
	t->bytes_len = r->c.pos - (size_t)leaf_from;
	return tfs__ranges_own(r, (size_t)leaf_from, r->c.pos, t->leaves,
			       t->leaf_num * s->dim_num, &t->bytes);
}

enum tfs_err tfs_rtree_parse(struct tfs_rtree *out, const uint8_t *buf,
			     size_t len, uint32_t version,
			     const struct tfs_schema *schema,
			     struct tfs_diag *d)
{
	struct tfs__rd r;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "R-tree", d);
	if (!schema || schema->dim_num == 0)
		return tfs__fail(&r, TFS_E_INVALID, "no schema to parse with");
	if (version < 3 || version > TFS_FORMAT_VERSION_MAX)
		return tfs__unsupported_version(&r, version);
	e = parse_body(&r, out, version, schema);
	if (e)
		tfs_rtree_release(out);
	return e;
}

void tfs_rtree_release(struct tfs_rtree *t)
{
	if (!t)
		return;
	tfs_free(t->leaves);
	tfs_free(t->bytes);
	memset(t, 0, sizeof(*t));
}

/* Compares a bound of two ranges of dimension dim (hi = compare the high
 * bounds). */
static int bound_cmp(const struct tfs_dim *dim, const struct tfs_range *a,
		     const struct tfs_range *b, bool hi)
{
	if (dim->var)
		return hi ? tfs_bytes_cmp(a->hi, (size_t)a->hi_len, b->hi,
					  (size_t)b->hi_len)
			  : tfs_bytes_cmp(a->lo, (size_t)a->lo_len, b->lo,
					  (size_t)b->lo_len);
	return tfs_value_cmp(dim->type, hi ? a->hi : a->lo, hi ? b->hi : b->lo);
}

/* acc := union(acc, child), the way TileDB's Dimension::expand_range
 * breaks ties: numeric bounds take the child's value unless the
 * accumulated one is strictly better; string lows keep the accumulated
 * value unless the child's is strictly smaller. */
static void expand(const struct tfs_dim *dim, struct tfs_range *acc,
		   const struct tfs_range *child)
{
	if (dim->var) {
		if (bound_cmp(dim, child, acc, false) < 0) {
			acc->lo = child->lo;
			acc->lo_len = child->lo_len;
		}
		if (!(bound_cmp(dim, child, acc, true) < 0)) {
			acc->hi = child->hi;
			acc->hi_len = child->hi_len;
		}
		return;
	}
	if (!(bound_cmp(dim, acc, child, false) < 0)) {
		acc->lo = child->lo;
		acc->lo_len = child->lo_len;
	}
	if (!(bound_cmp(dim, child, acc, true) < 0)) {
		acc->hi = child->hi;
		acc->hi_len = child->hi_len;
	}
}

static enum tfs_err put_level(struct tfs_buf *b, const struct tfs_range *mbrs,
			      uint64_t n, const struct tfs_schema *s,
			      bool v5)
{
	enum tfs_err e = tfs_buf_append_u64(b, n);

	for (uint64_t m = 0; !e && m < n; m++)
		for (uint32_t i = 0; !e && i < s->dim_num; i++)
			e = tfs__range_write(b, v5 && s->dims[i].var,
					     &mbrs[m * s->dim_num + i]);
	return e;
}

/* Before version 5: dimension count, fanout and the one coordinate type;
 * from version 5 on the fanout alone. */
static enum tfs_err put_header(struct tfs_buf *b, uint32_t version,
			       uint32_t fanout, const struct tfs_schema *s)
{
	uint32_t D = s->dim_num;
	enum tfs_err e;

	if (version >= 5)
		return tfs_buf_append_u32(b, fanout);
	for (uint32_t i = 0; i < D; i++)
		if (s->dims[i].var || s->dims[i].type != s->dims[0].type)
			return TFS_E_INVALID;
	if ((e = tfs_buf_append_u32(b, D)) ||
	    (e = tfs_buf_append_u32(b, fanout)) ||
	    (e = tfs_buf_append_u8(b, s->dims[0].type)))
		return e;
	return TFS_E_OK;
}

/* Height as TileDB computes it, in double precision. */
static uint32_t tree_height(uint64_t leaf_num, uint32_t fanout)
{
	if (leaf_num == 1)
		return 1;
	return (uint32_t)ceil(log((double)leaf_num) / log((double)fanout)) + 1;
}

/* One level up: each group of fanout MBRs of src (below of them) merged
 * into one. Returns NULL when out of memory. */
static struct tfs_range *level_up(const struct tfs_range *src, uint64_t below,
				  uint64_t n, uint32_t fanout,
				  const struct tfs_schema *s)
{
	uint32_t D = s->dim_num;
	struct tfs_range *up;

	up = tfs_mallocn((size_t)n * D, sizeof(struct tfs_range));
	if (!up)
		return NULL;
	for (uint64_t g = 0; g < n; g++) {
		uint64_t first = g * fanout;
		uint64_t last = first + fanout < below ? first + fanout : below;

		for (uint32_t i = 0; i < D; i++) {
			struct tfs_range acc = src[first * D + i];

			for (uint64_t c = first + 1; c < last; c++)
				expand(&s->dims[i], &acc, &src[c * D + i]);
			up[g * D + i] = acc;
		}
	}
	return up;
}

static enum tfs_err put_body(struct tfs_buf *b, const struct tfs_rtree *t,
			     uint32_t version, const struct tfs_schema *s)
{
	uint32_t fanout = t->fanout ? t->fanout : RTREE_DEFAULT_FANOUT;
	uint32_t D = s->dim_num, height = 0;
	struct tfs_range **levels = NULL;
	uint64_t *counts = NULL;
	enum tfs_err e = TFS_E_OK;

	if (fanout < 2 || D == 0 || t->dim_num != D ||
	    version > TFS_FORMAT_VERSION_MAX || version < 3)
		return TFS_E_INVALID;
	if ((e = put_header(b, version, fanout, s)))
		return e;
	if (t->leaf_num == 0)
		return tfs_buf_append_u32(b, 0);

	height = tree_height(t->leaf_num, fanout);
	levels = tfs_callocn(height, sizeof(*levels));
	counts = tfs_callocn(height, sizeof(*counts));
	if (!levels || !counts) {
		e = TFS_E_NOMEM;
		goto out_free;
	}
	/* levels[0] = leaves; levels[k] built from levels[k-1]. */
	counts[0] = t->leaf_num;
	for (uint32_t k = 1; k < height; k++) {
		counts[k] = (counts[k - 1] + fanout - 1) / fanout;
		levels[k] = level_up(k == 1 ? t->leaves : levels[k - 1],
				     counts[k - 1], counts[k], fanout, s);
		if (!levels[k]) {
			e = TFS_E_NOMEM;
			goto out_free;
		}
	}
	if ((e = tfs_buf_append_u32(b, height)))
		goto out_free;
	for (uint32_t k = height; k-- > 0;) {
		e = put_level(b, k == 0 ? t->leaves : levels[k], counts[k], s,
			      version >= 5);
		if (e)
			goto out_free;
	}

out_free:
	for (uint32_t k = 1; levels && k < height; k++)
		tfs_free(levels[k]);
	tfs_free(levels);
	tfs_free(counts);
	return e;
}

enum tfs_err tfs_rtree_serialize(struct tfs_buf *out, const struct tfs_rtree *t,
				 uint32_t version,
				 const struct tfs_schema *schema)
{
	size_t start = out->len;
	enum tfs_err e = put_body(out, t, version, schema);

	if (e)
		out->len = start;
	return e;
}
