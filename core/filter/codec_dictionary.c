/* Dictionary filter codec (format/filters.md §4.5): only for var-size
 * string tiles whose offsets are not stored. The metadata carries the
 * distinct strings in order of first appearance; the data one big-endian
 * id per cell, sized by the number of cells. */
#include <string.h>

#include "filter_internal.h"
#include "tfs_alloc.h"

struct entry {
	size_t off; /* in the dictionary bytes (read) or the values (write) */
	size_t len;
};

/* Splits the serialized dictionary into entries; *out is owned by the
 * caller. */
static enum tfs_err parse_dict(const uint8_t *dict, size_t size, unsigned sl,
			       struct entry **out, size_t *count)
{
	struct entry *v;
	size_t n = 0, cap = size / sl;

	*out = NULL;
	*count = 0;
	v = tfs_mallocn(cap ? cap : 1, sizeof(*v));
	if (!v)
		return TFS_E_NOMEM;
	for (size_t pos = 0; pos < size;) {
		uint64_t len;

		if (size - pos < sl || n == cap)
			goto out_corrupt;
		len = tfs_get_be(dict + pos, sl);
		pos += sl;
		if (len > size - pos)
			goto out_corrupt;
		v[n].off = pos;
		v[n].len = (size_t)len;
		n++;
		pos += (size_t)len;
	}
	*out = v;
	*count = n;
	return TFS_E_OK;

out_corrupt:
	tfs_free(v);
	return TFS_E_CORRUPT;
}

enum tfs_err tfs__dict_reverse(struct tfs__stage *st,
			       const struct tfs__fctx *fc)
{
	struct tfs__str_header sh;
	uint32_t in_size, out_size, dict_size;
	uint8_t idb, sl;
	const uint8_t *dict;
	struct entry *ent = NULL;
	size_t count, o = 0;
	uint64_t cells;
	uint8_t *values;
	enum tfs_err e;

	(void)fc;
	if (!tfs__str_header_get(&st->md, &sh) ||
	    !tfs_cur_u32(&st->md, &dict_size) ||
	    !tfs_cur_take(&st->md, dict_size, &dict))
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "dictionary header truncated");
	in_size = sh.in_size;
	out_size = sh.out_size;
	idb = sh.width[0];
	sl = sh.width[1];
	if (!tfs__width_ok(idb) || !tfs__width_ok(sl))
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "dictionary integer width not 1, 2, 4 "
				       "or 8");
	if (sh.off_size % 8 != 0 || sh.off_size / 8 > st->offsets_left)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "dictionary cell count does not match "
				       "the tile");
	cells = sh.off_size / 8;
	if (out_size > st->in_len || cells * idb != out_size)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "dictionary ids do not match the cell "
				       "count");
	e = parse_dict(dict, dict_size, sl, &ent, &count);
	if (e == TFS_E_CORRUPT)
		return tfs__stage_fail(st, e, "dictionary entries truncated");
	if (e)
		return e;
	e = tfs__stage_alloc(st, in_size, &values);
	if (e)
		goto out_free;
	for (uint64_t c = 0; c < cells; c++) {
		uint64_t id = tfs_get_be(st->in + c * idb, idb);
		size_t len;

		if (id >= count) {
			e = tfs__stage_fail(st, TFS_E_CORRUPT,
					    "dictionary id out of range");
			goto out_free;
		}
		len = ent[id].len;
		if (len > in_size - o) {
			e = tfs__stage_fail(st, TFS_E_CORRUPT,
					    "dictionary strings exceed the "
					    "tile");
			goto out_free;
		}
		if (st->offsets)
			st->offsets[c] = st->offsets_base + o;
		if (len)
			memcpy(values + o, dict + ent[id].off, len);
		o += len;
	}
	if (o != in_size) {
		e = tfs__stage_fail(st, TFS_E_CORRUPT,
				    "dictionary strings do not add up to the "
				    "declared size");
		goto out_free;
	}
	st->cells = cells;

out_free:
	tfs_free(ent);
	return e;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Distinct strings of the tile in order of first appearance, and the id of
 * every cell (an open-addressing hash table of entry indexes). */
struct dict_build {
	struct entry *ent;
	size_t count;
	size_t *slots; /* entry index + 1, 0 = empty */
	size_t mask;
	uint64_t *ids;
};

static void build_release(struct dict_build *b)
{
	tfs_free(b->ent);
	tfs_free(b->slots);
	tfs_free(b->ids);
}

static enum tfs_err build_dict(struct dict_build *b, const uint8_t *v,
			       size_t size, const uint64_t *offs,
			       uint64_t cells)
{
	size_t nslots = 16;

	memset(b, 0, sizeof(*b));
	while (nslots < cells * 2)
		nslots *= 2;
	b->mask = nslots - 1;
	b->slots = tfs_callocn(nslots, sizeof(*b->slots));
	b->ent = tfs_mallocn(cells ? cells : 1, sizeof(*b->ent));
	b->ids = tfs_mallocn(cells ? cells : 1, sizeof(*b->ids));
	if (!b->slots || !b->ent || !b->ids)
		return TFS_E_NOMEM;
	for (uint64_t c = 0; c < cells; c++) {
		size_t off = (size_t)offs[c];
		size_t len = (c + 1 < cells ? (size_t)offs[c + 1] : size) - off;
		size_t k = (size_t)hash_bytes(v + off, len) & b->mask;

		for (;; k = (k + 1) & b->mask) {
			size_t s = b->slots[k];

			if (s == 0) {
				b->ent[b->count].off = off;
				b->ent[b->count].len = len;
				b->slots[k] = ++b->count;
				b->ids[c] = b->count - 1;
				break;
			}
			if (b->ent[s - 1].len == len &&
			    (len == 0 ||
			     memcmp(v + b->ent[s - 1].off, v + off, len) == 0)) {
				b->ids[c] = s - 1;
				break;
			}
		}
	}
	return TFS_E_OK;
}

enum tfs_err tfs__dict_forward(struct tfs__fwd *w, const struct tfs__fctx *fc)
{
	struct dict_build b;
	const uint8_t *v;
	size_t size, longest = 0, dict_size = 0, out_size;
	unsigned idb, sl;
	struct tfs_buf hdr, data;
	uint8_t *h, *o;
	enum tfs_err e;

	if (w->data.n != 1 || w->md.n != 0)
		return tfs__fwd_fail(w, TFS_E_INVALID,
				     "dictionary must be the first filter");
	v = w->data.v[0].data;
	size = w->data.v[0].len;
	tfs_buf_init(&hdr, TFS_BUF_NO_MAX);
	tfs_buf_init(&data, TFS_BUF_NO_MAX);
	e = build_dict(&b, v, size, fc->cell_offsets, fc->cell_count);
	if (e)
		goto out_release;
	for (uint64_t c = 0; c < fc->cell_count; c++) {
		size_t len = b.ent[b.ids[c]].len;

		if (len > longest)
			longest = len;
	}
	idb = tfs__bw(fc->cell_count);
	sl = tfs__bw(longest);
	for (size_t i = 0; i < b.count; i++)
		dict_size += sl + b.ent[i].len;
	out_size = (size_t)fc->cell_count * idb;
	if (size > UINT32_MAX || out_size > UINT32_MAX ||
	    dict_size > UINT32_MAX || fc->cell_count > UINT32_MAX / 8) {
		e = tfs__fwd_fail(w, TFS_E_TOO_BIG,
				  "string tile too large for a dictionary");
		goto out_release;
	}
	e = tfs__buf_sized(&hdr, TFS__STR_HEADER_SIZE + 4 + dict_size, &h);
	if (e)
		goto out_release;
	tfs__str_header_put(h, &(struct tfs__str_header){
		.in_size = (uint32_t)size, .out_size = (uint32_t)out_size,
		.off_size = (uint32_t)(fc->cell_count * 8),
		.width = {(uint8_t)idb, (uint8_t)sl}});
	tfs_put_u32(h + TFS__STR_HEADER_SIZE, (uint32_t)dict_size);
	h += TFS__STR_HEADER_SIZE + 4;
	for (size_t i = 0; i < b.count; i++) {
		tfs_put_be(h, sl, b.ent[i].len);
		h += sl;
		if (b.ent[i].len)
			memcpy(h, v + b.ent[i].off, b.ent[i].len);
		h += b.ent[i].len;
	}
	e = tfs__buf_sized(&data, out_size, &o);
	if (e)
		goto out_release;
	for (uint64_t c = 0; c < fc->cell_count; c++)
		tfs_put_be(o + c * idb, idb, b.ids[c]);
	e = tfs__parts_prepend(&w->md, &hdr);
	if (!e)
		e = tfs__parts_replace(&w->data, &data);

out_release:
	build_release(&b);
	tfs_buf_release(&hdr);
	tfs_buf_release(&data);
	return e;
}
