/* Filtered tiles: the chunked container of format/tile.md §1, the chunking
 * rules a writer follows (tile.md §2), and the pipeline driver that runs
 * every chunk backwards (read) or forwards (write) through the filter list
 * with the metadata/data part mechanics of format/filters.md §2. On read
 * the first filter of the list writes straight into the caller's buffer;
 * the others alternate between two scratch buffers whose size is capped by
 * the chunk's declared length, so a lying header cannot make us allocate
 * without bound. */
#include "tfs_filter.h"

#include <inttypes.h>
#include <string.h>

#include "filter_internal.h"
#include "tfs_alloc.h"
#include "tfs_datatype.h"

/* Fixed slack plus a multiple of the chunk's original length bounds every
 * intermediate buffer of one chunk (RLE at most triples a chunk, string
 * codecs add at most 16 bytes per cell). */
#define SCRATCH_SLACK ((size_t)64 << 20)
#define SCRATCH_FACTOR 16u

/* ---- the pipeline of one call ---- */

struct job {
	const struct tfs_filter *filters[TFS_MAX_FILTERS + 1];
	struct tfs__fctx fc[TFS_MAX_FILTERS + 1];
	unsigned n;
	struct tfs_filter aes;
	struct tfs__session session;
	struct tfs_buf dscratch[2];
	struct tfs_buf mscratch[2];
	bool chunking_off;
};

static void job_release(struct job *j)
{
	for (int k = 0; k < 2; k++) {
		tfs_buf_release(&j->dscratch[k]);
		tfs_buf_release(&j->mscratch[k]);
	}
	tfs__session_release(&j->session);
}

static const char *filter_label(const struct tfs_filter *f)
{
	const char *name = tfs_filter_name(f->type);

	return name ? name : "INVALID";
}

static enum tfs_err job_init(struct job *j, const struct tfs_pipeline *p,
			     const struct tfs_tile_ctx *ctx,
			     struct tfs_diag *d)
{
	unsigned type = ctx->type;
	uint64_t cell_size = ctx->cell_size;

	memset(j, 0, sizeof(*j));
	for (int k = 0; k < 2; k++) {
		tfs_buf_init(&j->dscratch[k], 0);
		tfs_buf_init(&j->mscratch[k], 0);
	}
	if (p->count > TFS_MAX_FILTERS)
		return tfs_fail(d, TFS_E_INVALID, "filter list of %" PRIu32
				" filters", p->count);
	if (!tfs_datatype_valid(ctx->type))
		return tfs_fail(d, TFS_E_INVALID, "bad element type %u",
				ctx->type);
	for (uint32_t i = 0; i < p->count; i++)
		j->filters[j->n++] = &p->filters[i];
	if (ctx->key && ctx->implicit_aes) {
		tfs_filter_init(&j->aes, TFS_FILTER_AES256GCM);
		j->filters[j->n++] = &j->aes;
	}
	if (!cell_size)
		cell_size = tfs_datatype_size(ctx->type);
	j->chunking_off = p->max_chunk_size == 0 || ctx->string_mode;
	for (unsigned i = 0; i < j->n; i++) {
		struct tfs__fctx *fc = &j->fc[i];

		fc->f = j->filters[i];
		fc->algo = tfs__filter_algo(fc->f);
		if (fc->algo == TFS__INVALID)
			return tfs_fail(d, TFS_E_CORRUPT,
					"filter %u '%s': invalid filter", i,
					filter_label(fc->f));
		if (fc->algo == TFS__WEBP)
			j->chunking_off = true;
		fc->type = type;
		fc->cell_size = cell_size;
		fc->fragment_version = ctx->fragment_version;
		fc->key = ctx->key;
		fc->string_mode = ctx->string_mode && i == 0 &&
				  (fc->algo == TFS__RLE ||
				   fc->algo == TFS__DICTIONARY);
		fc->session = &j->session;
		type = tfs__filter_out_type(fc->f, type);
	}
	if (ctx->string_mode && (j->n == 0 || !j->fc[0].string_mode))
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"string offsets not stored but the first filter "
				"is not RLE or dictionary");
	return TFS_E_OK;
}

static enum tfs_err none_reverse(struct tfs__stage *st,
				 const struct tfs__fctx *fc)
{
	(void)fc;
	return tfs__stage_pass(st, st->in, st->in_len);
}

static enum tfs_err none_forward(struct tfs__fwd *w, const struct tfs__fctx *fc)
{
	(void)w;
	(void)fc;
	return TFS_E_OK;
}

/* Both directions of every filter, by algorithm; the compression family
 * shares one wrapper that picks the codec. */
static const struct {
	enum tfs_err (*reverse)(struct tfs__stage *st,
				const struct tfs__fctx *fc);
	enum tfs_err (*forward)(struct tfs__fwd *w, const struct tfs__fctx *fc);
} filter_fns[TFS__INVALID] = {
	[TFS__NONE] = {none_reverse, none_forward},
	[TFS__GZIP] = {tfs__compression_reverse, tfs__compression_forward},
	[TFS__ZSTD] = {tfs__compression_reverse, tfs__compression_forward},
	[TFS__LZ4] = {tfs__compression_reverse, tfs__compression_forward},
	[TFS__RLE] = {tfs__compression_reverse, tfs__compression_forward},
	[TFS__BZIP2] = {tfs__compression_reverse, tfs__compression_forward},
	[TFS__DOUBLE_DELTA] = {tfs__compression_reverse,
			       tfs__compression_forward},
	[TFS__DICTIONARY] = {tfs__compression_reverse,
			     tfs__compression_forward},
	[TFS__DELTA] = {tfs__compression_reverse, tfs__compression_forward},
	[TFS__AES] = {tfs__aes_reverse, tfs__aes_forward},
	[TFS__BIT_WIDTH] = {tfs__bitwidth_reverse, tfs__bitwidth_forward},
	[TFS__BITSHUFFLE] = {tfs__bitshuffle_reverse, tfs__bitshuffle_forward},
	[TFS__BYTESHUFFLE] = {tfs__byteshuffle_reverse,
			      tfs__byteshuffle_forward},
	[TFS__POSITIVE_DELTA] = {tfs__posdelta_reverse, tfs__posdelta_forward},
	[TFS__MD5] = {tfs__checksum_reverse, tfs__checksum_forward},
	[TFS__SHA256] = {tfs__checksum_reverse, tfs__checksum_forward},
	[TFS__SCALE_FLOAT] = {tfs__scale_float_reverse,
			      tfs__scale_float_forward},
	[TFS__XOR] = {tfs__xor_reverse, tfs__xor_forward},
	[TFS__WEBP] = {tfs__webp_reverse, tfs__webp_forward},
};

static enum tfs_err reverse_one(struct tfs__stage *st,
				const struct tfs__fctx *fc)
{
	if (fc->algo >= TFS__INVALID || !filter_fns[fc->algo].reverse)
		return tfs__stage_fail(st, TFS_E_CORRUPT, "invalid filter");
	return filter_fns[fc->algo].reverse(st, fc);
}

static enum tfs_err forward_one(struct tfs__fwd *w, const struct tfs__fctx *fc)
{
	if (fc->algo >= TFS__INVALID || !filter_fns[fc->algo].forward)
		return tfs__fwd_fail(w, TFS_E_INVALID, "invalid filter");
	return filter_fns[fc->algo].forward(w, fc);
}

/* Where string-mode offsets of the current chunk go. */
struct offsets_sink {
	uint64_t *next; /* NULL: count only */
	uint64_t left;
	uint64_t cells; /* out */
};

static size_t scratch_cap(uint32_t orig, const struct offsets_sink *os)
{
	size_t cap = SCRATCH_SLACK + (size_t)orig * SCRATCH_FACTOR;

	/* String codecs: up to 16 bytes per cell; with an unknown cell
	 * count, allow a larger multiple of the values instead. */
	if (os && os->left <= UINT32_MAX)
		cap += (size_t)os->left * SCRATCH_FACTOR;
	else if (os)
		cap += (size_t)orig * 4 * SCRATCH_FACTOR;
	return cap;
}

/* Runs one chunk backwards through the pipeline into dst[0..orig). */
static enum tfs_err decode_chunk(struct job *j, uint8_t *dst, uint32_t orig,
				 const uint8_t *md, size_t md_len,
				 const uint8_t *data, size_t data_len,
				 uint64_t chunk_base, struct offsets_sink *os,
				 unsigned *failed, const char **why)
{
	int data_holder = -1, md_holder = -1;
	size_t cap = scratch_cap(orig, os);

	if (j->n == 0) {
		if (data_len != orig) {
			*why = "unfiltered chunk length differs from its "
			       "original length";
			return TFS_E_CORRUPT;
		}
		if (orig)
			memcpy(dst, data, orig);
		return TFS_E_OK;
	}
	for (int k = 0; k < 2; k++) {
		j->dscratch[k].max = cap;
		j->mscratch[k].max = cap;
	}
	for (unsigned i = j->n; i-- > 0;) {
		struct tfs__stage st;
		enum tfs_err e;

		memset(&st, 0, sizeof(st));
		st.in = data;
		st.in_len = data_len;
		st.in_holder = data_holder;
		tfs_cur_init(&st.md, md, md_len);
		st.md_holder = md_holder;
		if (i == 0) {
			st.dst = dst;
			st.dst_len = orig;
		}
		st.dscratch = j->dscratch;
		st.mscratch = j->mscratch;
		if (os) {
			st.offsets = os->next;
			st.offsets_left = os->left;
			st.offsets_base = chunk_base;
		}
		e = reverse_one(&st, &j->fc[i]);
		if (e) {
			*failed = i;
			*why = st.why;
			return e;
		}
		data = st.out;
		data_len = st.out_len;
		data_holder = st.out_holder;
		if (st.md_set) {
			md = st.md_out;
			md_len = st.md_out_len;
			md_holder = st.md_out_holder;
		} else {
			md = st.md.p + st.md.pos;
			md_len = st.md.len - st.md.pos;
		}
		if (i == 0 && os)
			os->cells = st.cells;
	}
	return TFS_E_OK;
}

/* One chunk of a filtered tile (tile.md §1): its unfiltered length, its
 * metadata and its filtered bytes. */
struct chunk {
	uint32_t orig;
	uint32_t md_len, filtered;
	const uint8_t *md, *data;
};

/* Takes the next chunk from c; false when the tile ends inside it. */
static bool take_chunk(struct tfs_cursor *c, struct chunk *ch)
{
	return tfs_cur_u32(c, &ch->orig) && tfs_cur_u32(c, &ch->filtered) &&
	       tfs_cur_u32(c, &ch->md_len) &&
	       tfs_cur_take(c, ch->md_len, &ch->md) &&
	       tfs_cur_take(c, ch->filtered, &ch->data);
}

/* The decoder behind both public entry points. `os` is NULL unless the
 * tile is in string mode. */
/* Where a tile decodes to, and how far decoding got. */
struct tile_out {
	uint8_t *dst;
	size_t dst_len;
	uint64_t *offsets;   /* string mode: one start per cell, or NULL */
	uint64_t cell_count;
	bool check_cells;
	uint64_t produced;   /* bytes written to dst */
	uint64_t cells;      /* string cells found */
};

static enum tfs_err chunk_fail(const struct job *j, enum tfs_err e,
			       uint64_t i, unsigned failed, const char *why,
			       struct tfs_diag *d)
{
	if (j->n == 0)
		return tfs_fail(d, e, "tile chunk %" PRIu64 ": %s", i,
				why ? why : tfs_strerror(e));
	return tfs_fail(d, e, "tile chunk %" PRIu64 ": filter %u '%s': %s", i,
			failed, filter_label(j->filters[failed]),
			why ? why : tfs_strerror(e));
}

/* Takes chunk i from c and decodes it to the end of out. */
static enum tfs_err decode_next_chunk(struct job *j,
				      const struct tfs_tile_ctx *ctx,
				      struct tfs_cursor *c, uint64_t i,
				      struct tile_out *out, struct tfs_diag *d)
{
	struct chunk ch;
	struct offsets_sink os = {NULL, 0, 0};
	unsigned failed = 0;
	const char *why = NULL;
	enum tfs_err e;

	if (!take_chunk(c, &ch))
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile chunk %" PRIu64 " truncated", i);
	if (ch.orig > out->dst_len - out->produced)
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile chunks decode to more than the "
				"expected %zu bytes",
				out->dst_len);
	if (ctx->string_mode) {
		os.next = out->offsets ? out->offsets + out->cells : NULL;
		os.left = out->check_cells ? out->cell_count - out->cells
					   : UINT64_MAX;
	}
	e = decode_chunk(j, out->dst + out->produced, ch.orig, ch.md,
			 ch.md_len, ch.data, ch.filtered, out->produced,
			 ctx->string_mode ? &os : NULL, &failed, &why);
	if (e)
		return chunk_fail(j, e, i, failed, why, d);
	out->produced += ch.orig;
	out->cells += os.cells;
	return TFS_E_OK;
}

/* After the last chunk: nothing left over, every byte and cell there. */
static enum tfs_err check_tile_end(const struct tfs_tile_ctx *ctx,
				   const struct tfs_cursor *c, uint64_t nchunks,
				   struct tile_out *out, struct tfs_diag *d)
{
	if (tfs_cur_left(c))
		return tfs_fail(d, TFS_E_CORRUPT,
				"%zu bytes after the last tile chunk",
				tfs_cur_left(c));
	if (out->produced != out->dst_len)
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile decodes to %" PRIu64 " bytes, expected %zu",
				out->produced, out->dst_len);
	if (!ctx->string_mode || !out->check_cells)
		return TFS_E_OK;
	if (nchunks == 0 && out->cells == 0 && out->dst_len == 0) {
		/* An empty values tile: every string is empty. */
		for (uint64_t k = 0; k < out->cell_count; k++)
			out->offsets[k] = 0;
		out->cells = out->cell_count;
	}
	if (out->cells != out->cell_count)
		return tfs_fail(d, TFS_E_CORRUPT,
				"string tile holds %" PRIu64
				" cells, expected %" PRIu64,
				out->cells, out->cell_count);
	return TFS_E_OK;
}

static enum tfs_err tile_decode(const struct tfs_pipeline *p,
				const struct tfs_tile_ctx *ctx, uint8_t *dst,
				size_t dst_len, uint64_t *offsets,
				uint64_t cell_count, bool check_cells,
				const uint8_t *src, size_t src_len,
				struct tfs_diag *d)
{
	struct tile_out out = {dst, dst_len, offsets, cell_count, check_cells,
			       0, 0};
	struct job j;
	struct tfs_cursor c;
	uint64_t nchunks;
	uint8_t dummy = 0;
	enum tfs_err e;

	e = job_init(&j, p, ctx, d);
	if (e)
		goto out_release;
	if (!dst) {
		if (dst_len) {
			e = tfs_fail(d, TFS_E_INVALID, "no output buffer");
			goto out_release;
		}
		out.dst = &dummy;
	}
	tfs_cur_init(&c, src, src_len);
	if (!tfs_cur_u64(&c, &nchunks)) {
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "tile of %zu bytes has no chunk count", src_len);
		goto out_release;
	}
	if (nchunks > tfs_cur_left(&c) / 12) {
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "tile claims %" PRIu64 " chunks in %zu bytes",
			     nchunks, tfs_cur_left(&c));
		goto out_release;
	}
	for (uint64_t i = 0; i < nchunks && !e; i++)
		e = decode_next_chunk(&j, ctx, &c, i, &out, d);
	if (!e)
		e = check_tile_end(ctx, &c, nchunks, &out, d);
out_release:
	job_release(&j);
	return e;
}

enum tfs_err tfs_tile_decoded_size(const uint8_t *src, size_t src_len,
				   uint64_t *size, struct tfs_diag *d)
{
	struct tfs_cursor c;
	uint64_t nchunks;

	*size = 0;
	tfs_cur_init(&c, src, src_len);
	if (!tfs_cur_u64(&c, &nchunks))
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile of %zu bytes has no chunk count",
				src_len);
	for (uint64_t i = 0; i < nchunks; i++) {
		struct chunk ch;

		if (!take_chunk(&c, &ch))
			return tfs_fail(d, TFS_E_CORRUPT,
					"tile chunk %" PRIu64 " truncated", i);
		*size += ch.orig;
	}
	if (tfs_cur_left(&c))
		return tfs_fail(d, TFS_E_CORRUPT,
				"%zu bytes after the last tile chunk",
				tfs_cur_left(&c));
	return TFS_E_OK;
}

enum tfs_err tfs_tile_decode(const struct tfs_pipeline *p,
			     const struct tfs_tile_ctx *ctx, uint8_t *dst,
			     size_t dst_len, const uint8_t *src, size_t src_len,
			     struct tfs_diag *d)
{
	return tile_decode(p, ctx, dst, dst_len, NULL, 0, false, src, src_len,
			   d);
}

enum tfs_err tfs_tile_decode_strings(const struct tfs_pipeline *p,
				     const struct tfs_tile_ctx *ctx,
				     uint8_t *values, size_t values_len,
				     uint64_t *offsets, uint64_t cell_count,
				     const uint8_t *src, size_t src_len,
				     struct tfs_diag *d)
{
	if (!ctx->string_mode)
		return tfs_fail(d, TFS_E_INVALID,
				"string decoding of a tile not in string mode");
	if (cell_count && !offsets)
		return tfs_fail(d, TFS_E_INVALID, "no offsets buffer");
	return tile_decode(p, ctx, values, values_len, offsets, cell_count,
			   true, src, src_len, d);
}

/* ---- chunk by chunk ---- */

bool tfs_pipeline_chunked(const struct tfs_pipeline *p)
{
	if (p->max_chunk_size == 0)
		return false;
	for (uint32_t i = 0; i < p->count && i < TFS_MAX_FILTERS; i++)
		if (tfs__filter_algo(&p->filters[i]) == TFS__WEBP)
			return false;
	return true;
}

enum tfs_err tfs_tile_chunk_count(const uint8_t *head, size_t head_len,
				  uint64_t tile_len, uint64_t *count,
				  struct tfs_diag *d)
{
	struct tfs_cursor c;

	*count = 0;
	tfs_cur_init(&c, head, head_len);
	if (tile_len < 8 || !tfs_cur_u64(&c, count)) {
		*count = 0;
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile of %" PRIu64 " bytes has no chunk count",
				tile_len);
	}
	if (*count > (tile_len - 8) / TFS_TILE_CHUNK_HEAD)
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile claims %" PRIu64 " chunks in %" PRIu64
				" bytes",
				*count, tile_len - 8);
	return TFS_E_OK;
}

enum tfs_err tfs_tile_chunk_parse(const uint8_t *head, size_t head_len,
				  uint64_t index, uint64_t at, uint64_t out_at,
				  uint64_t tile_len, uint64_t want,
				  struct tfs_tile_chunk *out,
				  struct tfs_diag *d)
{
	struct tfs_cursor c;

	memset(out, 0, sizeof(*out));
	tfs_cur_init(&c, head, head_len);
	if (at > tile_len || tile_len - at < TFS_TILE_CHUNK_HEAD ||
	    !tfs_cur_u32(&c, &out->orig) || !tfs_cur_u32(&c, &out->filtered) ||
	    !tfs_cur_u32(&c, &out->md_len) ||
	    tfs_tile_chunk_size(out) > tile_len - at)
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile chunk %" PRIu64 " truncated", index);
	if (out_at > want || out->orig > want - out_at)
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile chunks decode to more than the expected "
				"%" PRIu64 " bytes",
				want);
	out->at = at;
	out->out_at = out_at;
	return TFS_E_OK;
}

enum tfs_err tfs_tile_chunks(const uint8_t *src, size_t src_len,
			     struct tfs_tile_chunk **out, uint64_t *n,
			     uint64_t *size, struct tfs_diag *d)
{
	struct tfs_tile_chunk *table = NULL;
	uint64_t count, at = 8, out_at = 0;
	enum tfs_err e;

	*out = NULL;
	*n = 0;
	*size = 0;
	e = tfs_tile_chunk_count(src, src_len, src_len, &count, d);
	if (e)
		return e;
	if (count) {
		table = tfs_mallocn((size_t)count, sizeof(*table));
		if (!table)
			return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	for (uint64_t i = 0; i < count; i++) {
		e = tfs_tile_chunk_parse(src + at, src_len - (size_t)at, i, at,
					 out_at, src_len, UINT64_MAX, &table[i],
					 d);
		if (e)
			goto out_free_table;
		at += tfs_tile_chunk_size(&table[i]);
		out_at += table[i].orig;
	}
	if (at != src_len) {
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "%" PRIu64 " bytes after the last tile chunk",
			     src_len - at);
		goto out_free_table;
	}
	*out = table;
	*n = count;
	*size = out_at;
	return TFS_E_OK;

out_free_table:
	tfs_free(table);
	return e;
}

struct tfs_chunk_decoder {
	struct job j;
};

enum tfs_err tfs_chunk_decoder_new(const struct tfs_pipeline *p,
				   const struct tfs_tile_ctx *ctx,
				   struct tfs_chunk_decoder **out,
				   struct tfs_diag *d)
{
	struct tfs_chunk_decoder *dec;
	enum tfs_err e;

	*out = NULL;
	if (ctx->string_mode)
		return tfs_fail(d, TFS_E_UNSUPPORTED,
				"string tiles are decoded whole");
	dec = tfs_callocn(1, sizeof(*dec));
	if (!dec)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	e = job_init(&dec->j, p, ctx, d);
	if (e) {
		tfs_chunk_decoder_free(dec);
		return e;
	}
	*out = dec;
	return TFS_E_OK;
}

void tfs_chunk_decoder_free(struct tfs_chunk_decoder *dec)
{
	if (!dec)
		return;
	job_release(&dec->j);
	tfs_free(dec);
}

bool tfs_chunk_decoder_filters(const struct tfs_chunk_decoder *dec)
{
	return dec->j.n > 0;
}

uint64_t tfs_chunk_decoder_scratch(const struct tfs_chunk_decoder *dec,
				   uint32_t orig)
{
	return dec->j.n < 2 ? 0 : 2 * (uint64_t)orig;
}

enum tfs_err tfs_chunk_decoder_run(struct tfs_chunk_decoder *dec,
				   const struct tfs_tile_chunk *ch,
				   uint64_t index, uint8_t *dst, size_t dst_len,
				   const uint8_t *src, size_t src_len,
				   struct tfs_diag *d)
{
	struct tfs_cursor c;
	struct chunk now;
	unsigned failed = 0;
	const char *why = NULL;
	uint8_t dummy = 0;
	enum tfs_err e;

	if (dst_len != ch->orig || src_len != tfs_tile_chunk_size(ch) ||
	    (!dst && dst_len))
		return tfs_fail(d, TFS_E_INVALID,
				"tile chunk %" PRIu64
				": %zu bytes into %zu for "
				"a chunk of %" PRIu64 " into %" PRIu32,
				index, src_len, dst_len,
				tfs_tile_chunk_size(ch), ch->orig);
	tfs_cur_init(&c, src, src_len);
	if (!take_chunk(&c, &now) || now.orig != ch->orig ||
	    now.filtered != ch->filtered || now.md_len != ch->md_len)
		return tfs_fail(d, TFS_E_CORRUPT,
				"tile chunk %" PRIu64
				" changed since its header was read",
				index);
	e = decode_chunk(&dec->j, dst ? dst : &dummy, now.orig, now.md,
			 now.md_len, now.data, now.filtered, ch->out_at, NULL,
			 &failed, &why);
	if (e)
		return chunk_fail(&dec->j, e, index, failed, why, d);
	return TFS_E_OK;
}

enum tfs_err tfs_tile_decode_chunks(const struct tfs_pipeline *p,
				    const struct tfs_tile_ctx *ctx,
				    uint8_t *dst, size_t dst_len,
				    const uint8_t *src, size_t src_len,
				    uint64_t first, uint64_t count,
				    struct tfs_diag *d)
{
	struct tfs_tile_chunk *table;
	struct tfs_chunk_decoder *dec = NULL;
	uint64_t n, size, total = 0, base;
	enum tfs_err e;

	e = tfs_tile_chunks(src, src_len, &table, &n, &size, d);
	if (e)
		return e;
	if (first > n || count > n - first) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "chunks %" PRIu64 " to %" PRIu64
			     " of a tile of %" PRIu64 " chunks",
			     first, first + count, n);
		goto out_free_table;
	}
	for (uint64_t i = first; i < first + count; i++)
		total += table[i].orig;
	if (total != dst_len) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "chunks decode to %" PRIu64 " bytes, not %zu",
			     total, dst_len);
		goto out_free_table;
	}
	e = tfs_chunk_decoder_new(p, ctx, &dec, d);
	base = count ? table[first].out_at : 0;
	for (uint64_t i = first; !e && i < first + count; i++)
		e = tfs_chunk_decoder_run(
			dec, &table[i], i,
			dst ? dst + (table[i].out_at - base) : NULL,
			table[i].orig, src + table[i].at,
			(size_t)tfs_tile_chunk_size(&table[i]), d);
	tfs_chunk_decoder_free(dec);
out_free_table:
	tfs_free(table);
	return e;
}

/* ---- writing ---- */

/* Chunk boundaries of tile.md §2; bounds[k] is where chunk k starts, the
 * last chunk ends at the end of the buffer. */
struct bounds {
	size_t *v;
	size_t n;
	size_t cap;
};

static enum tfs_err bounds_add(struct bounds *b, size_t at)
{
	if (tfs_grow(&b->v, &b->cap, b->n + 1, sizeof(*b->v)))
		return TFS_E_NOMEM;
	b->v[b->n++] = at;
	return TFS_E_OK;
}

static size_t chunk_size_for(size_t size, size_t unit)
{
	size_t m = size < TFS__CHUNK_SIZE ? size : TFS__CHUNK_SIZE;
	size_t cs = m / unit * unit;

	return cs > unit ? cs : unit;
}

static enum tfs_err compute_bounds(struct bounds *b, const struct job *j,
				   const struct tfs_tile_ctx *ctx,
				   size_t size, const uint64_t *offs,
				   uint64_t cells)
{
	enum tfs_err e = TFS_E_OK;

	if (j->chunking_off) {
		if (size == 0 && !(ctx->string_mode && cells > 0))
			return TFS_E_OK;
		return bounds_add(b, 0);
	}
	if (offs) {
		size_t tsz = tfs_datatype_size(ctx->type);
		size_t cs = chunk_size_for(size, tsz ? tsz : 1);
		size_t half = cs / 2, limit = cs + cs / 2, cur = 0;

		e = bounds_add(b, 0);
		if (e || size == cs)
			return e;
		for (uint64_t c = 0; !e && c < cells; c++) {
			size_t start = (size_t)offs[c];
			size_t end = c + 1 < cells ? (size_t)offs[c + 1] : size;
			size_t len = end - start, nw = cur + len;

			if (nw <= cs) {
				cur = nw;
			} else if (cur <= half || nw <= limit) {
				e = bounds_add(b, end);
				cur = 0;
			} else {
				e = bounds_add(b, start);
				if (!e && len > cs) {
					if (c + 1 < cells)
						e = bounds_add(b, end);
					cur = 0;
				} else {
					cur = len;
				}
			}
		}
		return e;
	} else {
		size_t unit = ctx->cell_size ? (size_t)ctx->cell_size
					     : tfs_datatype_size(ctx->type);
		size_t cs = chunk_size_for(size, unit ? unit : 1);

		if (size == cs)
			return bounds_add(b, 0);
		for (size_t at = 0; !e && at < size; at += cs)
			e = bounds_add(b, at);
		return e;
	}
}

static enum tfs_err check_offsets(const uint64_t *offs, uint64_t cells,
				  size_t size)
{
	uint64_t prev = 0;

	if (cells && offs[0] != 0)
		return TFS_E_INVALID;
	for (uint64_t c = 0; c < cells; c++) {
		if (offs[c] < prev || offs[c] > size)
			return TFS_E_INVALID;
		prev = offs[c];
	}
	return TFS_E_OK;
}

static enum tfs_err append_parts(struct tfs_buf *out,
				 const struct tfs__parts *ps)
{
	enum tfs_err e = TFS_E_OK;

	for (size_t i = 0; !e && i < ps->n; i++)
		e = tfs_buf_append(out, ps->v[i].data, ps->v[i].len);
	return e;
}

static enum tfs_err encode_chunk(struct job *j, struct tfs_buf *out,
				 const uint8_t *src, size_t len,
				 unsigned *failed, const char **why)
{
	struct tfs__fwd w;
	struct tfs_buf first;
	uint8_t *p;
	size_t md_len, data_len;
	enum tfs_err e;

	tfs__parts_init(&w.md);
	tfs__parts_init(&w.data);
	w.why = NULL;
	e = tfs__buf_sized(&first, len, &p);
	if (!e) {
		if (len)
			memcpy(p, src, len);
		e = tfs__parts_push(&w.data, &first);
	}
	if (e)
		goto out_release;
	for (unsigned i = 0; i < j->n; i++) {
		e = forward_one(&w, &j->fc[i]);
		if (e) {
			*failed = i;
			*why = w.why;
			goto out_release;
		}
	}
	md_len = tfs__parts_total(&w.md);
	data_len = tfs__parts_total(&w.data);
	if (len > UINT32_MAX || md_len > UINT32_MAX || data_len > UINT32_MAX) {
		*failed = j->n ? j->n - 1 : 0;
		*why = "filtered chunk exceeds 4 GiB";
		e = TFS_E_TOO_BIG;
		goto out_release;
	}
	e = tfs_buf_append_u32(out, (uint32_t)len);
	if (!e)
		e = tfs_buf_append_u32(out, (uint32_t)data_len);
	if (!e)
		e = tfs_buf_append_u32(out, (uint32_t)md_len);
	if (!e)
		e = append_parts(out, &w.md);
	if (!e)
		e = append_parts(out, &w.data);

out_release:
	tfs_buf_release(&first);
	tfs__parts_release(&w.md);
	tfs__parts_release(&w.data);
	return e;
}

enum tfs_err tfs_tile_encode(struct tfs_buf *out, const struct tfs_pipeline *p,
			     const struct tfs_tile_ctx *ctx, const uint8_t *src,
			     size_t src_len, const uint64_t *cell_offsets,
			     uint64_t cell_count, struct tfs_diag *d)
{
	struct job j;
	struct bounds b = {NULL, 0, 0};
	size_t start_len = out->len;
	static const uint8_t empty[1];
	enum tfs_err e;

	if (!src) {
		if (src_len)
			return tfs_fail(d, TFS_E_INVALID, "no input bytes");
		src = empty;
	}

	e = job_init(&j, p, ctx, d);
	if (e)
		goto out_release;
	if (ctx->string_mode && cell_count && !cell_offsets) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "string mode needs the cell offsets");
		goto out_release;
	}
	if (cell_offsets && check_offsets(cell_offsets, cell_count, src_len)) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "cell offsets not increasing from 0 within %zu "
			     "bytes",
			     src_len);
		goto out_release;
	}
	if (j.n && j.fc[0].string_mode) {
		j.fc[0].cell_offsets = cell_offsets;
		j.fc[0].cell_count = cell_count;
	}
	e = compute_bounds(&b, &j, ctx, src_len, cell_offsets, cell_count);
	if (e) {
		e = tfs_fail(d, e, "cannot cut tile into chunks");
		goto out_release;
	}
	e = tfs_buf_append_u64(out, b.n);
	for (size_t k = 0; !e && k < b.n; k++) {
		size_t from = b.v[k];
		size_t to = k + 1 < b.n ? b.v[k + 1] : src_len;
		unsigned failed = 0;
		const char *why = NULL;

		e = encode_chunk(&j, out, src + from, to - from, &failed, &why);
		if (e)
			e = tfs_fail(d, e, "encoding chunk %zu: filter %u '%s': %s",
				     k, failed,
				     j.n ? filter_label(j.filters[failed])
					 : "NONE",
				     why ? why : tfs_strerror(e));
	}
	if (e) {
		tfs_fail(d, e, "encoding tile: %s", tfs_strerror(e));
		out->len = start_len;
	}

out_release:
	tfs_free(b.v);
	job_release(&j);
	return e;
}
