/* Fuzz target: every filter and codec of core/filter (format/filters.md),
 * one to three of them in a list, through the whole tile encoder and
 * decoder (tile.md §1-2), in fixed, var-size and string mode, with and
 * without the implicit AES filter.
 *
 * Input: a 10-byte header, 28 bytes per filter, then the data.
 *   header: filter count (1 + b % 3), datatype, cell_val_num (0 = var),
 *           flags, fragment version, cell separator, u32 max_chunk_size
 *   flags:  1 string mode, 2 key, 4 implicit AES, 8 raw decode (the data
 *           is a tile to decode, not values to encode), 16 cell offsets
 *           given for var data; the separator splits the data into
 *           cells (var and string mode), or is the cell count of a raw
 *           string-mode decode
 *   filter: type, compressor byte (>= 9: the type's own), i32 level,
 *           reinterpret (> 43: none stored), u32 max window, f64 scale,
 *           f64 offset, byte width index; WebP reuses the scale and
 *           offset bytes (f32 quality, format, lossless, u16 y/x extent).
 * Encode then decode must give back the data (lossy filters: the same
 * length); an encoder may refuse data only with a diagnostic. A raw
 * decode outside string mode is done chunk by chunk too, with the same
 * outcome. */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_datatype.h"
#include "tfs_filter.h"

#define HEADER 10
#define SPEC FUZZ_FILTER_SPEC
#define MAX_DECODED ((size_t)1 << 22)

enum {
	F_STRING = 1,
	F_KEY = 2,
	F_IMPLICIT_AES = 4,
	F_RAW = 8,
	F_OFFSETS = 16,
};

static bool lossy_filter(const struct tfs_filter *f)
{
	return f->type == TFS_FILTER_SCALE_FLOAT ||
	       (f->type == TFS_FILTER_WEBP && !f->webp_lossless);
}

static bool lossy(const struct tfs_pipeline *p)
{
	for (uint32_t i = 0; i < p->count; i++)
		if (lossy_filter(&p->filters[i]))
			return true;
	return false;
}

/* A lossy filter after another one changes the bytes that filter wrote
 * (a checksum, a compressed stream, run lengths), so that filter's
 * decoder may refuse them: a decoding error is then the right outcome,
 * as long as it says why. */
static bool lossy_after_another(const struct tfs_pipeline *p)
{
	for (uint32_t i = 1; i < p->count; i++)
		if (lossy_filter(&p->filters[i]))
			return true;
	return false;
}

/* Splits data at sep into values (without the separators) and the cells'
 * start offsets. */
static uint64_t split_cells(const uint8_t *data, size_t size, uint8_t sep,
			    uint8_t *values, size_t *values_len,
			    uint64_t *offsets)
{
	uint64_t cells = 0;
	size_t n = 0;

	offsets[cells++] = 0;
	for (size_t i = 0; i < size; i++) {
		if (data[i] == sep)
			offsets[cells++] = n;
		else
			values[n++] = data[i];
	}
	*values_len = n;
	return cells;
}

/* Cell start offsets: from 0, never decreasing, within the values. */
static void check_offsets_valid(const uint64_t *offsets, uint64_t cells,
				size_t values_len)
{
	for (uint64_t i = 0; i < cells; i++)
		FUZZ_CHECK((i ? offsets[i] >= offsets[i - 1] : offsets[i] == 0) &&
			   offsets[i] <= values_len);
}

static void roundtrip(const struct tfs_pipeline *p,
		      const struct tfs_tile_ctx *ctx, bool var, bool give_offsets,
		      uint8_t sep, const uint8_t *data, size_t size)
{
	uint8_t *values = tfs_malloc(size), *back = NULL;
	uint64_t *offsets = tfs_mallocn(size + 1, sizeof(uint64_t));
	uint64_t *back_offsets = NULL, cells = 0;
	const uint64_t *cell_offsets = NULL;
	size_t vlen = size;
	struct tfs_diag d;
	struct tfs_buf out;
	enum tfs_err e;

	FUZZ_CHECK(values && offsets);
	if (ctx->string_mode || var) {
		cells = split_cells(data, size, sep, values, &vlen, offsets);
		if (ctx->string_mode || give_offsets)
			cell_offsets = offsets;
	} else {
		memcpy(values, data, size);
	}
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	e = tfs_tile_encode(&out, p, ctx, values, vlen, cell_offsets,
			    cell_offsets ? cells : 0, &d);
	if (e) {
		/* Refused: said why, wrote nothing. */
		FUZZ_CHECK(d.code == e && out.len == 0);
		goto out_free;
	}
	back = tfs_malloc(vlen);
	back_offsets = tfs_mallocn(cells + 1, sizeof(uint64_t));
	FUZZ_CHECK(back && back_offsets);
	tfs_diag_init(&d);
	if (ctx->string_mode)
		e = tfs_tile_decode_strings(p, ctx, back, vlen, back_offsets,
					    cells, out.data, out.len, &d);
	else
		e = tfs_tile_decode(p, ctx, back, vlen, out.data, out.len, &d);
	if ((e == TFS_E_CHECKSUM || e == TFS_E_CORRUPT) &&
	    lossy_after_another(p)) {
		FUZZ_CHECK(d.code == e && d.msg[0]);
		goto out_free;
	}
	if (e)
		fuzz_fail(__FILE__, __LINE__, d.msg);
	/* A lossy filter after the string-mode filter changes the strings it
	 * wrote: the cells come back other, but still well formed. */
	if (ctx->string_mode && lossy(p))
		check_offsets_valid(back_offsets, cells, vlen);
	else if (ctx->string_mode)
		FUZZ_CHECK(memcmp(back_offsets, offsets, cells * 8) == 0);
	if (!lossy(p))
		FUZZ_CHECK(vlen == 0 || memcmp(back, values, vlen) == 0);

out_free:
	tfs_buf_release(&out);
	tfs_free(back);
	tfs_free(back_offsets);
	tfs_free(values);
	tfs_free(offsets);
}

/* The tile decoded chunk by chunk (tfs_chunk_decoder, as a reader of
 * tiles too big to decode whole does it) gives the bytes of the whole
 * decoding, or fails at a chunk with the code the whole decoding gave. */
static void chunk_decode(const struct tfs_pipeline *p,
			 const struct tfs_tile_ctx *ctx, const uint8_t *data,
			 size_t size, const uint8_t *whole, size_t len,
			 enum tfs_err whole_e)
{
	struct tfs_tile_chunk *table;
	struct tfs_chunk_decoder *dec = NULL;
	uint64_t n, total;
	enum tfs_err e;

	FUZZ_CHECK(tfs_tile_chunks(data, size, &table, &n, &total, NULL) ==
		   TFS_E_OK);
	FUZZ_CHECK(total == len);
	e = tfs_chunk_decoder_new(p, ctx, &dec, NULL);
	for (uint64_t i = 0; !e && i < n; i++) {
		const struct tfs_tile_chunk *ch = &table[i];
		uint8_t *one = tfs_malloc((size_t)ch->orig + 1);

		FUZZ_CHECK(one);
		e = tfs_chunk_decoder_run(dec, ch, i, one, ch->orig,
					  data + ch->at,
					  (size_t)tfs_tile_chunk_size(ch), NULL);
		if (!e && whole_e == TFS_E_OK)
			FUZZ_CHECK(memcmp(one, whole + ch->out_at, ch->orig) ==
				   0);
		tfs_free(one);
	}
	FUZZ_CHECK(e == whole_e);
	tfs_chunk_decoder_free(dec);
	tfs_free(table);
}

static void raw_decode(const struct tfs_pipeline *p,
		       const struct tfs_tile_ctx *ctx, uint8_t cells_hint,
		       const uint8_t *data, size_t size)
{
	struct tfs_diag d;
	uint64_t *offsets;
	uint8_t *dst;
	size_t len;
	enum tfs_err e;

	if (!fuzz_tile_decoded_len(data, size, MAX_DECODED, &len))
		return;
	dst = tfs_malloc(len);
	offsets = tfs_mallocn((size_t)cells_hint + 1, sizeof(uint64_t));
	FUZZ_CHECK(dst && offsets);
	tfs_diag_init(&d);
	if (ctx->string_mode)
		e = tfs_tile_decode_strings(p, ctx, dst, len, offsets,
					    cells_hint, data, size, &d);
	else
		e = tfs_tile_decode(p, ctx, dst, len, data, size, &d);
	if (e)
		FUZZ_CHECK(d.code == e);
	else
		fuzz_touch(dst, len);
	if (!ctx->string_mode)
		chunk_decode(p, ctx, data, size, dst, len, e);
	tfs_free(dst);
	tfs_free(offsets);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_pipeline p;
	struct tfs_tile_ctx ctx;
	struct tfs_cursor c;
	struct tfs_diag d;
	struct tfs_buf list;
	unsigned nf, type, cvn, flags;
	uint8_t sep;
	bool var;

	if (size < HEADER)
		return 0;
	nf = 1 + data[0] % 3;
	type = data[1] % (TFS_DATATYPE_MAX + 1);
	cvn = data[2] % 9;
	flags = data[3];
	sep = data[5]; /* raw decode: the cell count of string mode */
	if (!tfs_datatype_valid(type) || size < HEADER + nf * SPEC)
		return 0;
	var = cvn == 0;

	tfs_buf_init(&list, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfs_buf_append(&list, data + 6, 4) == TFS_E_OK);
	FUZZ_CHECK(tfs_buf_append_u32(&list, nf) == TFS_E_OK);
	for (unsigned i = 0; i < nf; i++)
		FUZZ_CHECK(fuzz_filter_spec_put(&list, data + HEADER + i * SPEC) ==
			   TFS_E_OK);
	tfs_cur_init(&c, list.data, list.len);
	tfs_diag_init(&d);
	if (tfs_pipeline_parse(&p, &c, 23, &d)) {
		tfs_buf_release(&list);
		return 0;
	}
	FUZZ_CHECK(c.pos == list.len && p.count == nf);
	tfs_buf_release(&list);

	memset(&ctx, 0, sizeof(ctx));
	ctx.type = (uint8_t)type;
	ctx.cell_size = tfs_datatype_size(type) * (var ? 1 : cvn);
	ctx.fragment_version = data[4] % 24;
	ctx.string_mode = flags & F_STRING;
	ctx.key = flags & F_KEY ? fuzz_corpus_key : NULL;
	ctx.implicit_aes = flags & F_IMPLICIT_AES;

	data += HEADER + nf * SPEC;
	size -= HEADER + nf * SPEC;
	if (flags & F_RAW)
		raw_decode(&p, &ctx, sep, data, size);
	else
		roundtrip(&p, &ctx, var, flags & F_OFFSETS, sep, data, size);
	return 0;
}
