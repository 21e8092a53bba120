/* A tile read chunk by chunk (tile_chunks.h; format/tile.md §1).
 *
 * The chunk headers form a chain: chunk i starts where chunk i-1 ends, so
 * the table of where each chunk is in the persisted tile and in the
 * decoded tile is built front to back, 12 bytes read per header, and only
 * as far as the bytes asked for so far. A filtered chunk is read whole
 * with the header of the next chunk (one read per chunk when a walk goes
 * on), decoded into a buffer of its own size and handed over; an
 * unfiltered chunk's data are the decoded bytes, so only the part asked
 * for is read. Each chunk's bytes are charged to the memory accountant
 * while held; the table is charged as it grows. */
#include "tile_chunks.h"

#include <assert.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_mem.h"

struct tfs_chunked_tile {
	struct tfs_arraydir *a;
	struct tfs_fragment *f;
	uint32_t slot;
	uint64_t tile;
	struct tfs_tile_source src;
	uint64_t count;               /* chunks the tile claims */
	struct tfs_tile_chunk *table; /* headers read: [0, known) */
	uint64_t known;
	size_t cap;
	uint64_t charged; /* bytes of the table in the accountant */
};

/* Charges n bytes of this tile's reading. */
static enum tfs_err charge(const struct tfs_chunked_tile *ct, uint64_t chunk,
			   uint64_t n, struct tfs_diag *d)
{
	return tfs_mem_charge_for(tfs_mem_global(), n, d,
				  "fragment '%s': slot %u tile %" PRIu64
				  " chunk %" PRIu64,
				  ct->f->name, ct->slot, ct->tile, chunk);
}

/* Passes the failure in ld on to d, the tile named in front unless the
 * message names its fragment already. */
static enum tfs_err tile_fail(const struct tfs_chunked_tile *ct, enum tfs_err e,
			      const struct tfs_diag *ld, struct tfs_diag *d)
{
	const char *msg = tfs_diag_msg(ld);

	if (!e)
		return e;
	if (strncmp(msg, "fragment '", 10) == 0)
		return tfs_fail(d, e, "%s", msg);
	return tfs_fail(d, e, "fragment '%s': slot %u tile %" PRIu64 ": %s",
			ct->f->name, ct->slot, ct->tile, msg);
}

void tfs_chunked_tile_close(struct tfs_chunked_tile *ct)
{
	if (!ct)
		return;
	tfs_mem_uncharge(tfs_mem_global(), ct->charged);
	tfs_free(ct->table);
	tfs__tile_source_release(&ct->src);
	tfs_free(ct);
}

/* After the last chunk's header: the chunks fill the persisted tile
 * exactly and decode to the size the tile must have. */
static enum tfs_err check_end(const struct tfs_chunked_tile *ct,
			      struct tfs_diag *d)
{
	uint64_t at = 8, out_at = 0;

	if (ct->known) {
		const struct tfs_tile_chunk *last = &ct->table[ct->known - 1];

		at = last->at + tfs_tile_chunk_size(last);
		out_at = last->out_at + last->orig;
	}
	if (at != ct->src.len)
		return tfs_fail(d, TFS_E_CORRUPT,
				"%" PRIu64 " bytes after the last tile chunk",
				ct->src.len - at);
	if (out_at != ct->src.want)
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile decodes to %" PRIu64
				" bytes, expected %" PRIu64,
				out_at, ct->src.want);
	return TFS_E_OK;
}

/* Room for one more header in the table, charged. */
static enum tfs_err grow_table(struct tfs_chunked_tile *ct, struct tfs_diag *d)
{
	size_t cap = ct->cap ? ct->cap * 2 : 64;
	struct tfs_tile_chunk *nt;
	uint64_t add;
	enum tfs_err e;

	if (cap > ct->count)
		cap = (size_t)ct->count;
	add = (uint64_t)(cap - ct->cap) * sizeof(*ct->table);
	e = charge(ct, ct->known, add, d);
	if (e)
		return e;
	nt = tfs_reallocn(ct->table, cap, sizeof(*nt));
	if (!nt) {
		tfs_mem_uncharge(tfs_mem_global(), add);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	ct->table = nt;
	ct->cap = cap;
	ct->charged += add;
	return TFS_E_OK;
}

/* Where the next header to read starts: after the last one known. */
static void next_pos(const struct tfs_chunked_tile *ct, uint64_t *at,
		     uint64_t *out_at)
{
	const struct tfs_tile_chunk *last;

	*at = 8;
	*out_at = 0;
	if (!ct->known)
		return;
	last = &ct->table[ct->known - 1];
	*at = last->at + tfs_tile_chunk_size(last);
	*out_at = last->out_at + last->orig;
}

/* Adds the header of the next chunk (the 12 bytes at head) to the table. */
static enum tfs_err add_header(struct tfs_chunked_tile *ct, const uint8_t *head,
			       size_t len, struct tfs_diag *d)
{
	uint64_t at, out_at;
	enum tfs_err e;

	assert(ct->known < ct->count);
	if (ct->known == ct->cap && (e = grow_table(ct, d)))
		return e;
	next_pos(ct, &at, &out_at);
	e = tfs_tile_chunk_parse(head, len, ct->known, at, out_at, ct->src.len,
				 ct->src.want, &ct->table[ct->known], d);
	if (e)
		return e;
	ct->known++;
	return ct->known == ct->count ? check_end(ct, d) : TFS_E_OK;
}

/* Reads headers until chunk i's is known (i < count). */
static enum tfs_err need_header(struct tfs_chunked_tile *ct, uint64_t i,
				struct tfs_diag *d)
{
	while (ct->known <= i) {
		uint8_t head[TFS_TILE_CHUNK_HEAD];
		uint64_t at, out_at;
		enum tfs_err e;

		next_pos(ct, &at, &out_at);
		if (at > ct->src.len || ct->src.len - at < sizeof(head))
			return tfs_fail(d, TFS_E_CORRUPT,
					"tile chunk %" PRIu64 " truncated",
					ct->known);
		e = tfs__tile_pread(ct->a, ct->f, &ct->src, at, head,
				    sizeof(head), d);
		if (!e)
			e = add_header(ct, head, sizeof(head), d);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

/* The first known chunk that ends after byte `from`, or `known`. */
static uint64_t first_chunk(const struct tfs_chunked_tile *ct, uint64_t from)
{
	uint64_t lo = 0, hi = ct->known;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		const struct tfs_tile_chunk *c = &ct->table[mid];

		if (c->out_at + c->orig <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A filtered chunk: read whole (with the next header when it is not known
 * yet), decoded, handed over whole. */
static enum tfs_err filtered_chunk(struct tfs_chunked_tile *ct,
				   struct tfs_chunk_decoder *dec, uint64_t i,
				   const struct tfs_tile_chunk *ch,
				   tfs_chunk_fn fn, void *arg,
				   struct tfs_diag *d)
{
	uint64_t size = tfs_tile_chunk_size(ch), rd = size, need;
	uint8_t *buf;
	bool next;
	enum tfs_err e;

	next = i + 1 == ct->known && i + 1 < ct->count &&
	       ct->src.len - ch->at - size >= TFS_TILE_CHUNK_HEAD;
	if (next)
		rd += TFS_TILE_CHUNK_HEAD;
	need = rd + ch->orig + tfs_chunk_decoder_scratch(dec, ch->orig);
	if (ct->a->max_tile_bytes &&
	    (rd > ct->a->max_tile_bytes || ch->orig > ct->a->max_tile_bytes))
		return tfs_fail(d, TFS_E_NOMEM,
				"fragment '%s': slot %u tile %" PRIu64
				" chunk %" PRIu64 " needs %" PRIu64
				" bytes, over the limit of %" PRIu64,
				ct->f->name, ct->slot, ct->tile, i,
				rd > ch->orig ? rd : ch->orig,
				ct->a->max_tile_bytes);
	e = charge(ct, i, need, d);
	if (e)
		return e;
	buf = tfs_malloc((size_t)(rd + ch->orig));
	if (!buf) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_uncharge;
	}
	e = tfs__tile_pread(ct->a, ct->f, &ct->src, ch->at, buf, (size_t)rd, d);
	if (!e && next)
		e = add_header(ct, buf + size, TFS_TILE_CHUNK_HEAD, d);
	if (!e)
		e = tfs_chunk_decoder_run(dec, ch, i, buf + rd, ch->orig, buf,
					  (size_t)size, d);
	if (!e)
		fn(arg, ch->out_at, buf + rd, ch->orig);
	tfs_free(buf);
out_uncharge:
	tfs_mem_uncharge(tfs_mem_global(), need);
	return e;
}

/* An unfiltered chunk: its data are the decoded bytes, so only the part
 * in [from, to) is read. */
static enum tfs_err plain_chunk(struct tfs_chunked_tile *ct, uint64_t i,
				const struct tfs_tile_chunk *ch, uint64_t from,
				uint64_t to, tfs_chunk_fn fn, void *arg,
				struct tfs_diag *d)
{
	uint64_t lo = from > ch->out_at ? from : ch->out_at;
	uint64_t end = ch->out_at + ch->orig, hi = to < end ? to : end;
	uint8_t *buf;
	enum tfs_err e;

	if (ch->filtered != ch->orig)
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile chunk %" PRIu64
				": unfiltered chunk length "
				"differs from its original length",
				i);
	e = charge(ct, i, hi - lo, d);
	if (e)
		return e;
	buf = tfs_malloc((size_t)(hi - lo));
	if (!buf) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out_uncharge;
	}
	e = tfs__tile_pread(ct->a, ct->f, &ct->src,
			    ch->at + TFS_TILE_CHUNK_HEAD + ch->md_len +
				    (lo - ch->out_at),
			    buf, (size_t)(hi - lo), d);
	if (!e)
		fn(arg, lo, buf, (size_t)(hi - lo));
	tfs_free(buf);
out_uncharge:
	tfs_mem_uncharge(tfs_mem_global(), hi - lo);
	return e;
}

enum tfs_err tfs_chunked_tile_walk(struct tfs_chunked_tile *ct, uint64_t from,
				   uint64_t to, tfs_chunk_fn fn, void *arg,
				   struct tfs_diag *d)
{
	struct tfs_chunk_decoder *dec = NULL;
	struct tfs_diag ld;
	enum tfs_err e;

	if (from > to || to > ct->src.want)
		return tfs_fail(d, TFS_E_INVALID,
				"bytes [%" PRIu64 ", %" PRIu64
				") of a tile of %" PRIu64,
				from, to, ct->src.want);
	if (from == to)
		return TFS_E_OK;
	tfs_diag_init(&ld);
	e = tfs_chunk_decoder_new(ct->src.filters, &ct->src.ctx, &dec, &ld);
	for (uint64_t i = first_chunk(ct, from); !e && i < ct->count; i++) {
		struct tfs_tile_chunk ch;

		e = need_header(ct, i, &ld);
		if (e)
			break;
		ch = ct->table[i]; /* a copy: the table may move */
		if (ch.out_at >= to)
			break;
		if (ch.out_at + ch.orig <= from || ch.orig == 0)
			continue;
		if (tfs_chunk_decoder_filters(dec))
			e = filtered_chunk(ct, dec, i, &ch, fn, arg, &ld);
		else
			e = plain_chunk(ct, i, &ch, from, to, fn, arg, &ld);
	}
	tfs_chunk_decoder_free(dec);
	return tile_fail(ct, e, &ld, d);
}

enum tfs_err tfs_chunked_tile_open(struct tfs_arraydir *a,
				   struct tfs_fragment *f, uint32_t slot,
				   uint64_t tile, enum tfs_file_kind kind,
				   struct tfs_chunked_tile **out,
				   struct tfs_diag *d)
{
	struct tfs_chunked_tile *ct;
	uint8_t head[8];
	struct tfs_diag ld;
	enum tfs_err e;

	*out = NULL;
	tfs_diag_init(&ld);
	ct = tfs_callocn(1, sizeof(*ct));
	if (!ct)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	ct->a = a;
	ct->f = f;
	ct->slot = slot;
	ct->tile = tile;
	e = tfs__tile_source(a, f, slot, tile, kind, &ct->src, &ld);
	if (!e && ct->src.len < sizeof(head))
		e = tfs_tile_chunk_count(NULL, 0, ct->src.len, &ct->count, &ld);
	else if (!e && !(e = tfs__tile_pread(a, f, &ct->src, 0, head,
					     sizeof(head), &ld)))
		e = tfs_tile_chunk_count(head, sizeof(head), ct->src.len,
					 &ct->count, &ld);
	if (!e && ct->count == 0)
		e = check_end(ct, &ld);
	if (e) {
		tile_fail(ct, e, &ld, d);
		goto out_close;
	}
	*out = ct;
	return TFS_E_OK;

out_close:
	tfs_chunked_tile_close(ct);
	return e;
}
