/* Fuzz target: a stored filter list (format/filters.md §1) and a filtered
 * tile decoded through it (tile.md §1), the way data tiles are read.
 *
 * Input: u8 flags (1 string mode, 2 key, 4 implicit AES), u8 datatype,
 * u8 fragment version, u16 cell size, u32 cell count (string mode), u32
 * n, n bytes of filter list, then the tile. The decoded size is what the
 * chunks declare. A list that parses serializes and re-parses to the same
 * filters, and every filter of it describes itself. */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_datatype.h"
#include "tfs_filter.h"

#define MAX_DECODED ((size_t)1 << 22)
#define MAX_CELLS (1u << 16)

static unsigned reinterpret_of(const struct tfs_filter *f)
{
	return f->has_reinterpret && tfs_datatype_valid(f->reinterpret)
		       ? f->reinterpret
		       : TFS_NO_REINTERPRET;
}

/* Equal as far as the stored options go (serialization drops nothing a
 * filter of that type uses). */
static bool filter_eq(const struct tfs_filter *a, const struct tfs_filter *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case TFS_FILTER_GZIP:
	case TFS_FILTER_ZSTD:
	case TFS_FILTER_LZ4:
	case TFS_FILTER_RLE:
	case TFS_FILTER_BZIP2:
	case TFS_FILTER_DOUBLE_DELTA:
	case TFS_FILTER_DICTIONARY:
	case TFS_FILTER_DELTA:
		return a->compressor == b->compressor && a->level == b->level &&
		       reinterpret_of(a) == reinterpret_of(b);
	case TFS_FILTER_BIT_WIDTH_REDUCTION:
	case TFS_FILTER_POSITIVE_DELTA:
		return a->max_window == b->max_window;
	case TFS_FILTER_SCALE_FLOAT:
		return memcmp(&a->scale, &b->scale, sizeof(a->scale)) == 0 &&
		       memcmp(&a->offset, &b->offset, sizeof(a->offset)) == 0 &&
		       a->byte_width == b->byte_width;
	case TFS_FILTER_WEBP:
		return memcmp(&a->webp_quality, &b->webp_quality,
			      sizeof(a->webp_quality)) == 0 &&
		       a->webp_format == b->webp_format &&
		       a->webp_lossless == b->webp_lossless &&
		       a->webp_y_extent == b->webp_y_extent &&
		       a->webp_x_extent == b->webp_x_extent;
	default:
		return true;
	}
}

static void check_list(const struct tfs_pipeline *p)
{
	struct tfs_pipeline back;
	struct tfs_cursor c;
	struct tfs_diag d;
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfs_pipeline_serialize(&b, p, 23 /* TFS_FORMAT_VERSION_MAX */) ==
		   TFS_E_OK);
	tfs_cur_init(&c, b.data, b.len);
	tfs_diag_init(&d);
	FUZZ_CHECK(tfs_pipeline_parse(&back, &c, 23 /* TFS_FORMAT_VERSION_MAX */, &d) ==
		   TFS_E_OK);
	FUZZ_CHECK(c.pos == b.len);
	FUZZ_CHECK(back.max_chunk_size == p->max_chunk_size &&
		   back.count == p->count);
	for (uint32_t i = 0; i < p->count; i++) {
		FUZZ_CHECK(filter_eq(&p->filters[i], &back.filters[i]));
		b.len = 0;
		FUZZ_CHECK(tfs_filter_describe(&b, &p->filters[i]) ==
			   TFS_E_OK);
		FUZZ_CHECK(b.len > 0 && memchr(b.data, 0, b.len) == NULL);
	}
	for (unsigned t = 0; t <= TFS_FILTER_DELTA; t++)
		(void)tfs_pipeline_has(p, (enum tfs_filter_type)t);
	tfs_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_pipeline p;
	struct tfs_tile_ctx ctx;
	struct tfs_cursor c, lc;
	struct tfs_diag d;
	const uint8_t *fl;
	uint8_t flags, type, version, *dst;
	uint16_t cell_size;
	uint32_t cells, n;
	uint64_t *offsets;
	size_t len;
	enum tfs_err e;

	tfs_cur_init(&c, data, size);
	if (!tfs_cur_u8(&c, &flags) || !tfs_cur_u8(&c, &type) ||
	    !tfs_cur_u8(&c, &version) || !tfs_cur_take(&c, 2, &fl))
		return 0;
	cell_size = tfs_get_u16(fl);
	if (!tfs_cur_u32(&c, &cells) || !tfs_cur_u32(&c, &n) ||
	    !tfs_cur_take(&c, n, &fl))
		return 0;

	tfs_cur_init(&lc, fl, n);
	tfs_diag_init(&d);
	e = tfs_pipeline_parse(&p, &lc, version, &d);
	if (e) {
		FUZZ_CHECK(d.code == e && lc.pos == 0 && p.count == 0);
		return 0;
	}
	check_list(&p);

	memset(&ctx, 0, sizeof(ctx));
	ctx.type = type;
	ctx.cell_size = cell_size;
	ctx.fragment_version = version;
	ctx.string_mode = flags & 1;
	ctx.key = flags & 2 ? fuzz_corpus_key : NULL;
	ctx.implicit_aes = flags & 4;
	if (!fuzz_tile_decoded_len(data + c.pos, tfs_cur_left(&c), MAX_DECODED,
				   &len))
		return 0;
	cells %= MAX_CELLS;
	dst = tfs_malloc(len);
	offsets = tfs_mallocn(cells + 1, sizeof(uint64_t));
	FUZZ_CHECK(dst && offsets);
	tfs_diag_init(&d);
	if (ctx.string_mode)
		e = tfs_tile_decode_strings(&p, &ctx, dst, len, offsets, cells,
					    data + c.pos, tfs_cur_left(&c), &d);
	else
		e = tfs_tile_decode(&p, &ctx, dst, len, data + c.pos,
				    tfs_cur_left(&c), &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
	} else {
		fuzz_touch(dst, len);
		/* String mode: each cell starts inside the values, in order. */
		for (uint32_t i = 0; ctx.string_mode && i < cells; i++)
			FUZZ_CHECK(offsets[i] <= len &&
				   (i == 0 || offsets[i] >= offsets[i - 1]));
	}
	tfs_free(dst);
	tfs_free(offsets);
	return 0;
}
