/* Orders of the sparse reader: a stable index sort with the comparisons it
 * uses (tile bounds, coordinates, newest first), and the JSON text of a
 * cell's values that orders duplicates as TileDB prints them. */
#include "sparse_reader.h"

/* ---- Sorting ----------------------------------------------------------- */

static void insertion_sort(uint32_t *v, size_t n, sp_cmp_fn cmp,
			   const void *ctx)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t x = v[i];
		size_t j = i;

		while (j > 0 && cmp(ctx, v[j - 1], x) > 0) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

/* Stable merge sort of an index array. */
enum tfs_err tfs__sp_sort_index(uint32_t *v, size_t n, sp_cmp_fn cmp,
				const void *ctx)
{
	const size_t run = 16;
	uint32_t *tmp, *src = v, *dst;

	for (size_t i = 0; i < n; i += run)
		insertion_sort(v + i, n - i < run ? n - i : run, cmp, ctx);
	if (n <= run)
		return TFS_E_OK;
	tmp = tfs_mallocn(n, sizeof(*tmp));
	if (!tmp)
		return TFS_E_NOMEM;
	dst = tmp;
	for (size_t w = run; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t a = lo, b = mid, o = lo;

			while (a < mid && b < hi)
				dst[o++] = cmp(ctx, src[b], src[a]) < 0 ? src[b++]
									: src[a++];
			while (a < mid)
				dst[o++] = src[a++];
			while (b < hi)
				dst[o++] = src[b++];
		}
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	tfs_free(tmp);
	return TFS_E_OK;
}

/* Bits that hold every value of [0, x]. */
static unsigned bits_of(uint64_t x)
{
	return x ? 64u - (unsigned)__builtin_clzll(x) : 0u;
}

#define RADIX_BITS 11
#define RADIX_SIZE ((size_t)1 << RADIX_BITS)

/* One stable counting pass of keys (and their cells) on the digit at
 * `shift`, from (k, v) into (k2, v2). */
static void radix_pass(const uint32_t *k, const uint32_t *v, uint32_t *k2,
		       uint32_t *v2, size_t n, unsigned shift, size_t *count)
{
	size_t sum = 0;

	memset(count, 0, RADIX_SIZE * sizeof(*count));
	for (size_t i = 0; i < n; i++)
		count[(k[i] >> shift) & (RADIX_SIZE - 1)]++;
	for (size_t d = 0; d < RADIX_SIZE; d++) {
		size_t c = count[d];

		count[d] = sum;
		sum += c;
	}
	for (size_t i = 0; i < n; i++) {
		size_t at = count[(k[i] >> shift) & (RADIX_SIZE - 1)]++;

		k2[at] = k[i];
		v2[at] = v[i];
	}
}

/* The bits each dimension's keys span over the cells of order[], dimension
 * 0 highest: shift[k] and lo[k]; false when they need more than 32 bits
 * together (the sort then compares, using less memory). */
static bool key_layout(const struct sp_reader *r, const uint32_t *order,
		       uint32_t n, uint64_t *lo, unsigned *shift,
		       unsigned *total)
{
	uint32_t dims = r->dim_num;
	uint64_t hi[TFS_RADIX_MAX_DIMS];
	unsigned sum = 0;

	if (dims > TFS_RADIX_MAX_DIMS || n == 0)
		return false;
	for (uint32_t k = 0; k < dims; k++) {
		if (r->dims[k].var)
			return false;
		lo[k] = UINT64_MAX;
		hi[k] = 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		const uint64_t *ck = cell_keys(r, order[i]);

		for (uint32_t k = 0; k < dims; k++) {
			lo[k] = ck[k] < lo[k] ? ck[k] : lo[k];
			hi[k] = ck[k] > hi[k] ? ck[k] : hi[k];
		}
	}
	for (uint32_t k = dims; k-- > 0;) {
		shift[k] = sum;
		sum += bits_of(hi[k] - lo[k]);
		if (sum > 32)
			return false;
	}
	*total = sum;
	return true;
}

bool tfs__sp_radix_order(const struct sp_reader *r, uint32_t *order,
			 uint32_t n)
{
	uint64_t lo[TFS_RADIX_MAX_DIMS];
	unsigned shift[TFS_RADIX_MAX_DIMS], total = 0;
	uint32_t *key = NULL, *key2 = NULL, *order2 = NULL;
	uint32_t *ks, *kd, *vs = order, *vd;
	size_t *count = NULL;
	bool done = false;

	if (!key_layout(r, order, n, lo, shift, &total))
		return false;
	key = tfs_mallocn(n, sizeof(*key));
	key2 = tfs_mallocn(n, sizeof(*key2));
	order2 = tfs_mallocn(n, sizeof(*order2));
	count = tfs_mallocn(RADIX_SIZE, sizeof(*count));
	if (!key || !key2 || !order2 || !count)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		const uint64_t *ck = cell_keys(r, order[i]);
		uint32_t v = 0;

		for (uint32_t k = 0; k < r->dim_num; k++)
			v |= (uint32_t)(ck[k] - lo[k]) << shift[k];
		key[i] = v;
	}
	ks = key;
	kd = key2;
	vd = order2;
	for (unsigned sh = 0; sh < total; sh += RADIX_BITS) {
		uint32_t *kt = ks, *vt = vs;

		radix_pass(ks, vs, kd, vd, n, sh, count);
		ks = kd;
		vs = vd;
		kd = kt;
		vd = vt;
	}
	if (vs != order)
		memcpy(order, vs, (size_t)n * sizeof(*order));
	done = true;
out:
	tfs_free(key);
	tfs_free(key2);
	tfs_free(order2);
	tfs_free(count);
	return done;
}

int tfs__sp_tile_lo_cmp(const void *ctx, uint32_t a, uint32_t b)
{
	const struct sp_reader *r = ctx;
	const struct sp_dim *dm = &r->dims[0];
	struct sp_val lo = tile_lo(dm, &r->tiles[b]);

	return tile_lo_cmp(dm, &r->tiles[a], &lo);
}

int tfs__sp_coords_cmp(const struct sp_reader *r, uint32_t a, uint32_t b)
{
	const uint64_t *ka = cell_keys(r, a), *kb = cell_keys(r, b);

	for (uint32_t k = 0; k < r->dim_num; k++) {
		if (!r->dims[k].var) {
			if (ka[k] != kb[k])
				return ka[k] < kb[k] ? -1 : 1;
		} else {
			uint64_t la, lb;
			const uint8_t *pa = cells_coord(&r->cells, &r->dims[k],
							k, a, &la);
			const uint8_t *pb = cells_coord(&r->cells, &r->dims[k],
							k, b, &lb);
			int c = tfs_bytes_cmp(pa, (size_t)la, pb, (size_t)lb);

			if (c)
				return c;
		}
	}
	return 0;
}

int tfs__sp_coords_only_cmp(const void *ctx, uint32_t a, uint32_t b)
{
	return tfs__sp_coords_cmp(ctx, a, b);
}

/* Coordinates, then newest first: cell timestamp, fragment index, then
 * the later cell. */
int tfs__sp_newest_cmp(const void *ctx, uint32_t a, uint32_t b)
{
	const struct sp_reader *r = ctx;
	int c = tfs__sp_coords_cmp(r, a, b);
	uint64_t ta, tb;
	uint32_t fa, fb, pa, pb;

	if (c)
		return c;
	ta = cell_u64(&r->cells.ts, a);
	tb = cell_u64(&r->cells.ts, b);
	if (ta != tb)
		return ta > tb ? -1 : 1;
	pa = cell_u32(&r->cells.tile, a);
	pb = cell_u32(&r->cells.tile, b);
	fa = r->frags[r->tiles[r->ptiles[pa]].frag].index;
	fb = r->frags[r->tiles[r->ptiles[pb]].frag].index;
	if (fa != fb)
		return fa > fb ? -1 : 1;
	if (pa != pb)
		return pa > pb ? -1 : 1;
	pa = cell_u32(&r->cells.pos, a);
	pb = cell_u32(&r->cells.pos, b);
	return pa > pb ? -1 : pa < pb;
}

/* ---- JSON text of a cell (order of duplicates) --------------------------
 *
 * The corpus sorts equal coordinates by the JSON text of the cell object
 * (corpus/README.md, "The JSON"): values as the corpus writes them, so
 * 1 < 100 < 17 and a string sorts by its escaped UTF-8 bytes. Field names
 * and separators are the same in both texts and drop out, except the
 * character after the last value ('}') versus after the others (','). */

/* Integral floats below this are plain digits in the corpus JSON; the
 * text is core/base's tfs_fmt_f64/f32, the one float formatter every
 * writer calls, so nothing here copies a renderer's layout. */
#define JSON_PLAIN_BELOW 1e16

static enum tfs_err json_float(struct tfs_buf *b, double v, bool f32)
{
	char t[TFS_FMT_FLOAT_MAX];
	size_t n;

	if (v != v)
		return tfs_buf_append(b, "\"NaN\"", 5);
	if (v > DBL_MAX)
		return tfs_buf_append(b, "\"Infinity\"", 10);
	if (v < -DBL_MAX)
		return tfs_buf_append(b, "\"-Infinity\"", 11);
	n = f32 ? tfs_fmt_f32(t, sizeof(t), (float)v, JSON_PLAIN_BELOW)
		: tfs_fmt_f64(t, sizeof(t), v, JSON_PLAIN_BELOW);
	return tfs_buf_append(b, t, n);
}

/* Length of the valid UTF-8 sequence at p (0 if invalid). */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	uint32_t cp;
	size_t len;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1fu;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		cp = p[0] & 0x0fu;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07u;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3fu);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static enum tfs_err json_string(struct tfs_buf *b, const uint8_t *p,
				uint64_t len)
{
	enum tfs_err e = tfs_buf_append_u8(b, '"');

	for (size_t i = 0; !e && i < len;) {
		uint8_t c = p[i];
		size_t n;

		if (c == '"' || c == '\\') {
			e = tfs_buf_append_u8(b, '\\');
			if (!e)
				e = tfs_buf_append_u8(b, c);
			i++;
			continue;
		}
		if (c < 0x20) {
			static const char esc[] = "btnvfr";

			if (c >= 8 && c <= 13 && c != 11)
				e = tfs_buf_printf(b, "\\%c", esc[c - 8]);
			else
				e = tfs_buf_printf(b, "\\u%04x", c);
			i++;
			continue;
		}
		n = utf8_len(p + i, (size_t)(len - i));
		if (n == 0) {
			e = tfs_buf_printf(b, "\\u%04x", c);
			i++;
		} else {
			e = tfs_buf_append(b, p + i, n);
			i += n;
		}
	}
	return e ? e : tfs_buf_append_u8(b, '"');
}

static enum tfs_err json_number(struct tfs_buf *b, uint8_t type,
				const uint8_t *p)
{
	switch (tfs_datatype_class(type)) {
	case TFS_CLASS_SIGNED:
		return tfs_buf_printf(b, "%" PRId64, tfs_value_as_i64(type, p));
	case TFS_CLASS_UNSIGNED:
		return tfs_buf_printf(b, "%" PRIu64, tfs_value_as_u64(type, p));
	default:
		return json_float(b, tfs_value_as_f64(type, p),
				  type == TFS_FLOAT32);
	}
}

enum tfs_err tfs__sp_json_value(struct tfs_buf *b,
				const struct tfs_out_field *f,
				const uint8_t *p, uint64_t len, uint8_t valid)
{
	enum tfs_type_class k = tfs_datatype_class(f->type);
	size_t size = tfs_datatype_size(f->type);
	enum tfs_err e;

	if (f->nullable && !valid)
		return tfs_buf_append(b, "null", 4);
	if (k == TFS_CLASS_STRING)
		return json_string(b, p, len);
	if (k == TFS_CLASS_BYTES) {
		e = tfs_buf_append_u8(b, '"');
		for (uint64_t i = 0; !e && i < len; i++)
			e = tfs_buf_printf(b, "%02x", p[i]);
		return e ? e : tfs_buf_append_u8(b, '"');
	}
	if (!size)
		return TFS_E_OK;
	if (!f->var && f->cell_val_num == 1)
		return len >= size ? json_number(b, f->type, p) : TFS_E_OK;
	e = tfs_buf_append_u8(b, '[');
	for (uint64_t i = 0; !e && i + size <= len; i += size) {
		if (i)
			e = tfs_buf_append_u8(b, ',');
		if (!e)
			e = json_number(b, f->type, p + i);
	}
	return e ? e : tfs_buf_append_u8(b, ']');
}
