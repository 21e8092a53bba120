/* The tile loader: reads the persisted bytes of one tile of one slot of a
 * fragment from each of its files (fixed or offsets, var values,
 * validity) and decodes them through the slot's filter pipelines
 * (format/tile.md, format/fragment.md §6). For tiles too big to decode
 * whole it also says what decoding them would need and where their bytes
 * are, for reading them chunk by chunk (tile_chunks.h). */
#include "tfs_read.h"

#include <assert.h>
#include <pthread.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_mem.h"
#include "tfs_reuse.h"
#include "tile_chunks.h"

/* A tile's persisted bytes never exceed this; larger claims are corrupt. */
#define MAX_PERSISTED_TILE (UINT64_C(4) << 30)
/* Reads at least this large are checked against the file's real size
 * before their buffer is allocated: the sizes in the fragment metadata
 * are only claims, and a damaged one must not cost gigabytes. Below it,
 * the read itself finds a short file. */
#define CHECKED_READ_BYTES (UINT64_C(16) << 20)

enum tfs_err tfs_slot_describe(const struct tfs_fragment *f, uint32_t slot,
			       struct tfs_slot_desc *out, struct tfs_diag *d)
{
	const struct tfs_schema *s = f->schema;
	uint32_t a = s->attr_num, dims = f->footer.version >= 5 ? s->dim_num : 0;

	memset(out, 0, sizeof(*out));
	if (slot < a) {
		const struct tfs_attr *at = &s->attrs[slot];

		out->type = at->type;
		out->cell_val_num = at->cell_val_num;
		out->var = at->var;
		out->nullable = at->nullable;
		out->cell_size = at->var ? tfs_datatype_size(at->type)
					 : tfs_attr_cell_size(at);
		out->filters = &at->filters;
		return TFS_E_OK;
	}
	if (slot == a) { /* zipped coordinates of versions < 5 */
		out->type = s->dims[0].type;
		out->cell_val_num = s->dim_num;
		out->cell_size = tfs_datatype_size(out->type) * s->dim_num;
		out->filters = &s->coords_filters;
		return TFS_E_OK;
	}
	if (slot <= a + dims) {
		const struct tfs_dim *dm = &s->dims[slot - a - 1];

		out->type = dm->type;
		out->cell_val_num = dm->cell_val_num;
		out->var = dm->var;
		out->cell_size = tfs_datatype_size(dm->type);
		out->filters = &dm->filters;
		return TFS_E_OK;
	}
	if (slot < f->footer.slot_num) { /* timestamps, delete metadata */
		out->type = TFS_UINT64;
		out->cell_val_num = 1;
		out->cell_size = 8;
		out->filters = &s->coords_filters;
		return TFS_E_OK;
	}
	return tfs_fail(d, TFS_E_CORRUPT, "fragment '%s': no field slot %u",
			f->name, slot);
}

uint64_t tfs_fragment_tile_cells(const struct tfs_fragment *f, uint64_t tile)
{
	if (f->footer.dense)
		return tfs_schema_tile_cells(f->schema);
	if (tile + 1 == f->tile_num && f->footer.last_tile_cell_num)
		return f->footer.last_tile_cell_num;
	return f->schema->capacity;
}

/* The buffers of tiles read and decoded, kept for the next tiles: the
 * persisted bytes live only while their tile decodes, and decoded tiles
 * that leave the cache make room for the next of their size. */
#define SPARE_TILE_BYTES (UINT64_C(24) << 20)

static struct tfs_reuse *spare_tiles;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_init(void)
{
	spare_tiles = tfs_reuse_new(SPARE_TILE_BYTES);
	tfs_reuse_huge(spare_tiles);
}

/* The list (NULL when it could not be made: buffers come and go from the
 * heap then). */
static struct tfs_reuse *spares(void)
{
	pthread_once(&spare_once, spare_init);
	return spare_tiles;
}

static void *take(size_t n)
{
	size_t cap;

	return tfs_reuse_take(spares(), n, &cap);
}

void tfs__tile_free_buffers(struct tfs_tile *t)
{
	assert(!t->shared);
	tfs_mem_uncharge(tfs_mem_global(), t->charged);
	tfs_reuse_give(spares(), t->fixed, (size_t)t->fixed_len);
	tfs_reuse_give(spares(), t->offsets, t->offsets ?
		       (size_t)(t->cell_num + 1) * sizeof(uint64_t) : 0);
	tfs_reuse_give(spares(), t->var, (size_t)t->var_len);
	tfs_reuse_give(spares(), t->validity, (size_t)t->cell_num);
	memset(t, 0, sizeof(*t));
}

/* Fails with TFS_E_NOMEM when `bytes` of one tile are over the array's
 * max_tile_bytes. */
static enum tfs_err check_tile_limit(const struct tfs_arraydir *a,
				     const struct tfs_fragment *f,
				     uint32_t slot, uint64_t tile,
				     uint64_t bytes, struct tfs_diag *d)
{
	if (a->max_tile_bytes && bytes > a->max_tile_bytes)
		return tfs_fail(d, TFS_E_NOMEM,
				"fragment '%s': slot %u tile %" PRIu64
				" needs %" PRIu64 " bytes, over the limit of %" PRIu64,
				f->name, slot, tile, bytes, a->max_tile_bytes);
	return TFS_E_OK;
}

/* Counts n bytes of one tile's decoding in the memory accountant: waits
 * for room (bounded), else TFS_E_NOMEM with the reason. The number of
 * tiles decoded at once follows the budget this way. */
static enum tfs_err mem_charge(const struct tfs_fragment *f, uint32_t slot,
			       uint64_t tile, uint64_t n, struct tfs_diag *d)
{
	return tfs_mem_charge_for(tfs_mem_global(), n, d,
				  "fragment '%s': slot %u tile %" PRIu64,
				  f->name, slot, tile);
}

/* Frees persisted bytes that read_persisted gave (and their charge). */
static void persisted_free(uint8_t **src, size_t *len)
{
	tfs_reuse_give(spares(), *src, *len);
	tfs_mem_uncharge(tfs_mem_global(), *len);
	*src = NULL;
	*len = 0;
}

/* What decoding a tile of `want` bytes through p needs beside its input
 * and output: the pipeline's two scratch buffers of one chunk when more
 * than one filter runs. */
static uint64_t scratch_bytes(const struct tfs_pipeline *p, uint64_t want)
{
	uint64_t chunk = p->max_chunk_size ? p->max_chunk_size : want;

	if (p->count < 2)
		return 0;
	return 2 * (chunk < want ? chunk : want);
}

/* Fails unless the file at path holds at least `end` bytes. */
static enum tfs_err check_real_size(struct tfs_arraydir *a,
				    const struct tfs_fragment *f,
				    const char *path, uint64_t end,
				    struct tfs_diag *d)
{
	struct tfs_stat st;
	enum tfs_err e;

	if ((e = tfs_vfs_stat(a->vfs, path, &st, d)))
		return e;
	if (!st.exists || st.is_dir || st.size < end)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': file '%s' holds %" PRIu64
				" bytes, its metadata claims %" PRIu64,
				f->name, path, st.exists ? st.size : 0, end);
	return TFS_E_OK;
}

/* The persisted bytes of tile `tile` of one file: from offsets[tile] to
 * the next tile's offset or the file's size, within bounds. */
static enum tfs_err span_of(const struct tfs_fragment *f, uint32_t slot,
			      const uint64_t *offsets, uint64_t file_size,
			      uint64_t tile, uint64_t *start, uint64_t *end,
			      struct tfs_diag *d)
{
	if (!offsets)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u has no tile offsets",
				f->name, slot);
	*start = offsets[tile];
	*end = tile + 1 < f->tile_num ? offsets[tile + 1] : file_size;
	if (*end < *start || *end - *start > MAX_PERSISTED_TILE ||
	    *end > file_size)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u tile %" PRIu64
				" spans bad range [%" PRIu64 ", %" PRIu64 ")",
				f->name, slot, tile, *start, *end);
	return TFS_E_OK;
}

/* span_of, within the array's max_tile_bytes: for tiles read whole. */
static enum tfs_err tile_span(const struct tfs_arraydir *a,
			      const struct tfs_fragment *f, uint32_t slot,
			      const uint64_t *offsets, uint64_t file_size,
			      uint64_t tile, uint64_t *start, uint64_t *end,
			      struct tfs_diag *d)
{
	enum tfs_err e = span_of(f, slot, offsets, file_size, tile, start, end,
				 d);

	return e ? e : check_tile_limit(a, f, slot, tile, *end - *start, d);
}

/* Reads len bytes at `at` of the file at path (a file of the fragment). */
static enum tfs_err read_at(struct tfs_arraydir *a,
			    const struct tfs_fragment *f, const char *path,
			    uint64_t at, uint8_t *buf, size_t len,
			    struct tfs_diag *d)
{
	enum tfs_err e = tfs_vfs_read(a->vfs, path, at, buf, len, d);

	if (e == TFS_E_NOT_FOUND && d && d->code == TFS_E_NOT_FOUND) {
		/* The fragment is committed and its metadata lists this file:
		 * a missing file is a damaged array (EIO), not a missing
		 * object (ENOENT, which the daemon would show as a file that
		 * vanished). */
		tfs_diag_init(d);
		e = tfs_fail(d, TFS_E_CORRUPT,
			     "fragment '%s': file '%s' is missing", f->name,
			     path);
	}
	return e;
}

/* Reads the persisted bytes of tile `tile` of one file (tile_span).
 * Before allocating, they are charged to the memory accountant together
 * with `extra` bytes (what decoding them takes: output and scratch), in
 * one charge so that a decode never holds part of its memory while
 * waiting for the rest; on success the caller owns the charge of `extra`
 * (persisted_free gives back the persisted bytes'), on failure nothing
 * stays charged. */
static enum tfs_err read_persisted(struct tfs_arraydir *a,
				   const struct tfs_fragment *f, uint32_t slot,
				   enum tfs_file_kind kind,
				   const uint64_t *offsets, uint64_t file_size,
				   uint64_t tile, uint64_t extra, uint8_t **out,
				   size_t *len, struct tfs_diag *d)
{
	uint64_t start, end;
	char *path;
	uint8_t *bytes;
	enum tfs_err e;

	*out = NULL;
	*len = 0;
	if ((e = tile_span(a, f, slot, offsets, file_size, tile, &start, &end,
			   d)))
		return e;
	path = tfs_fragment_file_path(f, slot, kind);
	if (!path)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if (end - start >= CHECKED_READ_BYTES &&
	    (e = check_real_size(a, f, path, end, d))) {
		tfs_free(path);
		return e;
	}
	if ((e = mem_charge(f, slot, tile, end - start + extra, d))) {
		tfs_free(path);
		return e;
	}
	bytes = take((size_t)(end - start));
	if (!bytes) {
		tfs_free(path);
		tfs_mem_uncharge(tfs_mem_global(), end - start + extra);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	e = read_at(a, f, path, start, bytes, (size_t)(end - start), d);
	tfs_free(path);
	if (e) {
		tfs_reuse_give(spares(), bytes, (size_t)(end - start));
		tfs_mem_uncharge(tfs_mem_global(), end - start + extra);
		return e;
	}
	*out = bytes;
	*len = (size_t)(end - start);
	return TFS_E_OK;
}

/* The `__coords` tile of fragments before v5 is stored dimension by
 * dimension, except in version 1 without a compressor, where it is stored
 * cell by cell (tile.md §7; TileDB 1.5 "always split coordinate tiles"). */
static bool coords_unzipped(const struct tfs_fragment *f)
{
	const struct tfs_pipeline *p = &f->schema->coords_filters;

	if (f->footer.version > 1)
		return true;
	for (uint32_t i = 0; i < p->count; i++)
		if (tfs_filter_is_compression(p->filters[i].type))
			return true;
	return false;
}

/* Rewrites an unzipped coordinates tile (all of dimension 0, then all of
 * dimension 1, ...) cell by cell, the one layout the readers know. */
static enum tfs_err zip_coords(const struct tfs_fragment *f,
			       struct tfs_tile *t, struct tfs_diag *d)
{
	uint32_t dims = f->schema->dim_num;
	size_t size = tfs_datatype_size(f->schema->dims[0].type);
	uint64_t cells = t->cell_num;
	uint8_t *zipped;

	if (dims < 2)
		return TFS_E_OK;
	zipped = take((size_t)t->fixed_len);
	if (!zipped)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint64_t c = 0; c < cells; c++)
		for (uint32_t k = 0; k < dims; k++)
			memcpy(zipped + (c * dims + k) * size,
			       t->fixed + (k * cells + c) * size, size);
	tfs_reuse_give(spares(), t->fixed, (size_t)t->fixed_len);
	t->fixed = zipped;
	return TFS_E_OK;
}

static void tile_ctx(struct tfs_tile_ctx *ctx, const struct tfs_arraydir *a,
		     const struct tfs_fragment *f, uint8_t type,
		     uint64_t cell_size)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->type = type;
	ctx->cell_size = cell_size;
	ctx->fragment_version = f->footer.version;
	ctx->key = a->has_key ? a->key : NULL;
	ctx->implicit_aes = a->has_key;
}

/* Offsets must start inside the values and never go backwards. */
static enum tfs_err check_offsets(const struct tfs_fragment *f, uint32_t slot,
				  uint64_t tile, const uint64_t *offsets,
				  uint64_t cells, uint64_t var_len,
				  struct tfs_diag *d)
{
	for (uint64_t i = 0; i < cells; i++) {
		uint64_t next = i + 1 < cells ? offsets[i + 1] : var_len;

		if (offsets[i] > next || next > var_len)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': slot %u tile %" PRIu64
					" has bad offset %" PRIu64
					" for cell %" PRIu64,
					f->name, slot, tile, offsets[i], i);
	}
	return TFS_E_OK;
}

/* Fails unless the persisted tile src decodes to `want` bytes, within
 * the array's max_tile_bytes, checked on its chunk headers before the
 * output is allocated. */
static enum tfs_err expect_decoded(const struct tfs_arraydir *a,
				   const struct tfs_fragment *f,
				   uint32_t slot, uint64_t tile,
				   const uint8_t *src, size_t len,
				   uint64_t want, struct tfs_diag *d)
{
	uint64_t size;
	enum tfs_err e = tfs_tile_decoded_size(src, len, &size, d);

	if (e)
		return e;
	if ((e = check_tile_limit(a, f, slot, tile, want, d)))
		return e;
	if (size != want)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u tile %" PRIu64
				" decodes to %" PRIu64 " bytes, expected %" PRIu64,
				f->name, slot, tile, size, want);
	return TFS_E_OK;
}

/* The values' size a var tile claims, within bounds and the array's
 * max_tile_bytes (its offsets' size too). */
static enum tfs_err var_claim(const struct tfs_arraydir *a,
			      const struct tfs_fragment *f, uint32_t slot,
			      uint64_t tile, const struct tfs_slot_tiles *st,
			      uint64_t cells, uint64_t *var_len,
			      struct tfs_diag *d)
{
	enum tfs_err e;

	if (!st->var_sizes)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u has no var sizes",
				f->name, slot);
	*var_len = st->var_sizes[tile];
	if (*var_len > MAX_PERSISTED_TILE * 4)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': slot %u tile %" PRIu64
				" claims %" PRIu64 " value bytes",
				f->name, slot, tile, *var_len);
	if ((e = check_tile_limit(a, f, slot, tile, *var_len, d)) ||
	    (e = check_tile_limit(a, f, slot, tile, (cells + 1) * 8, d)))
		return e;
	return TFS_E_OK;
}

/* The persisted bytes of a var tile: its offsets (or the embedded
 * marker) and its values. */
struct var_src {
	uint8_t *off;
	size_t off_len;
	uint8_t *var;
	size_t var_len;
	bool embedded;
};

/* Decodes a var tile's persisted bytes into out's offsets and values
 * (var_len bytes), its offsets checked. */
static enum tfs_err var_decode(const struct tfs_arraydir *a,
			       const struct tfs_fragment *f, uint32_t slot,
			       uint64_t tile, const struct tfs_slot_desc *desc,
			       const struct var_src *src, uint64_t var_len,
			       struct tfs_tile *out, struct tfs_diag *d)
{
	uint64_t cells = out->cell_num;
	struct tfs_tile_ctx ctx;
	enum tfs_err e;

	/* (cells is at most 2^32: no overflow) */
	out->offsets = take(((size_t)cells + 1) * sizeof(uint64_t));
	out->var = take((size_t)var_len);
	if (!out->offsets || !out->var)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	out->var_len = var_len;
	tile_ctx(&ctx, a, f, desc->type, desc->cell_size);
	if (src->embedded) {
		ctx.string_mode = true;
		e = tfs_tile_decode_strings(desc->filters, &ctx, out->var,
					    (size_t)var_len, out->offsets,
					    cells, src->var, src->var_len, d);
	} else {
		struct tfs_tile_ctx octx;

		tile_ctx(&octx, a, f, TFS_UINT64, 8);
		e = tfs_tile_decode(&f->schema->offsets_filters, &octx,
				    (uint8_t *)out->offsets, (size_t)cells * 8,
				    src->off, src->off_len, d);
		if (!e)
			e = tfs_tile_decode(desc->filters, &ctx, out->var,
					    (size_t)var_len, src->var,
					    src->var_len, d);
	}
	if (!e)
		e = check_offsets(f, slot, tile, out->offsets, cells, var_len,
				  d);
	if (!e)
		out->offsets[cells] = var_len;
	return e;
}

static enum tfs_err read_var(struct tfs_arraydir *a, struct tfs_fragment *f,
			     uint32_t slot, uint64_t tile,
			     const struct tfs_slot_desc *desc,
			     const struct tfs_slot_tiles *st,
			     struct tfs_tile *out, struct tfs_diag *d)
{
	const struct tfs_schema *s = f->schema;
	uint64_t cells = out->cell_num, var_len = 0;
	struct var_src src = { 0 };
	uint64_t scratch = 0, out_bytes;
	enum tfs_err e;

	/* The output and scratch are charged with the offsets' tile. */
	if ((e = var_claim(a, f, slot, tile, st, cells, &var_len, d)))
		return e;
	scratch = scratch_bytes(&s->offsets_filters, cells * 8);
	if (scratch < scratch_bytes(desc->filters, var_len))
		scratch = scratch_bytes(desc->filters, var_len);
	out_bytes = (cells + 1) * 8 + var_len;
	e = read_persisted(a, f, slot, TFS_FILE_FIXED, st->offsets,
			   f->footer.file_sizes[slot], tile, out_bytes + scratch,
			   &src.off, &src.off_len, d);
	if (e)
		return e;
	out->charged = out_bytes;
	e = read_persisted(a, f, slot, TFS_FILE_VAR, st->var_offsets,
			   f->footer.file_var_sizes[slot], tile, 0, &src.var,
			   &src.var_len, d);
	if (e)
		goto out_free_src;
	/* An offsets tile of zero chunks holding cells means the offsets are
	 * embedded in the values tile (tile.md §4). */
	src.embedded = cells && src.off_len == 8 && tfs_get_u64(src.off) == 0;
	if (!src.embedded)
		e = expect_decoded(a, f, slot, tile, src.off, src.off_len,
				   cells * 8, d);
	if (!e)
		e = expect_decoded(a, f, slot, tile, src.var, src.var_len,
				   var_len, d);
	if (!e)
		e = check_tile_limit(a, f, slot, tile, (cells + 1) * 8, d);
	if (!e)
		e = var_decode(a, f, slot, tile, desc, &src, var_len, out, d);
out_free_src:
	tfs_mem_uncharge(tfs_mem_global(), scratch);
	persisted_free(&src.off, &src.off_len);
	persisted_free(&src.var, &src.var_len);
	return e;
}

/* Reads and decodes a fixed-size tile into out->fixed (old coordinates
 * zipped cell by cell). */
static enum tfs_err read_fixed(struct tfs_arraydir *a, struct tfs_fragment *f,
			       uint32_t slot, uint64_t tile,
			       const struct tfs_slot_desc *desc,
			       const struct tfs_slot_tiles *st,
			       struct tfs_tile *out, struct tfs_diag *d)
{
	uint64_t want = out->cell_num * desc->cell_size;
	bool old_coords = f->footer.version < 5 &&
			  slot == f->schema->attr_num && coords_unzipped(f);
	uint8_t *src = NULL;
	size_t src_len = 0;
	struct tfs_tile_ctx ctx;
	uint64_t scratch;
	enum tfs_err e;

	/* A zipped copy of old coordinates needs the size again. */
	scratch = scratch_bytes(desc->filters, want);
	if (old_coords && scratch < want)
		scratch = want;
	e = read_persisted(a, f, slot, TFS_FILE_FIXED, st->offsets,
			   f->footer.file_sizes[slot], tile, want + scratch,
			   &src, &src_len, d);
	if (e)
		return e;
	out->charged = want;
	e = expect_decoded(a, f, slot, tile, src, src_len, want, d);
	if (!e) {
		out->fixed = take((size_t)want);
		if (!out->fixed)
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	if (!e) {
		out->fixed_len = want;
		tile_ctx(&ctx, a, f, desc->type, desc->cell_size);
		e = tfs_tile_decode(desc->filters, &ctx, out->fixed,
				    (size_t)want, src, src_len, d);
	}
	persisted_free(&src, &src_len);
	if (!e && old_coords)
		e = zip_coords(f, out, d);
	tfs_mem_uncharge(tfs_mem_global(), scratch);
	return e;
}

/* Reads and decodes a nullable tile's validity into out->validity. */
static enum tfs_err read_validity(struct tfs_arraydir *a,
				  struct tfs_fragment *f, uint32_t slot,
				  uint64_t tile,
				  const struct tfs_slot_tiles *st,
				  struct tfs_tile *out, struct tfs_diag *d)
{
	uint8_t *src = NULL;
	size_t src_len = 0;
	struct tfs_tile_ctx ctx;
	enum tfs_err e;

	e = read_persisted(a, f, slot, TFS_FILE_VALIDITY, st->validity_offsets,
			   f->footer.file_validity_sizes[slot], tile,
			   out->cell_num, &src, &src_len, d);
	if (e)
		return e;
	out->charged += out->cell_num;
	e = expect_decoded(a, f, slot, tile, src, src_len, out->cell_num, d);
	if (!e) {
		out->validity = take((size_t)out->cell_num);
		if (!out->validity)
			e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	if (!e) {
		tile_ctx(&ctx, a, f, TFS_UINT8, 1);
		e = tfs_tile_decode(&f->schema->validity_filters, &ctx,
				    out->validity, (size_t)out->cell_num, src,
				    src_len, d);
	}
	persisted_free(&src, &src_len);
	return e;
}

/* What every read of one tile starts with: the slot, its tiles' offsets
 * and the tile's cell count, checked. */
static enum tfs_err tile_lookup(struct tfs_arraydir *a, struct tfs_fragment *f,
				uint32_t slot, uint64_t tile,
				struct tfs_slot_desc *desc,
				const struct tfs_slot_tiles **st,
				uint64_t *cells, struct tfs_diag *d)
{
	enum tfs_err e;

	*cells = 0;
	e = tfs_slot_describe(f, slot, desc, d);
	if (e)
		return e;
	if (tile >= f->tile_num)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': tile %" PRIu64
				" past its %" PRIu64 " tiles",
				f->name, tile, f->tile_num);
	e = tfs_fragment_slot_tiles(a, f, slot, st, d);
	if (e)
		return e;
	*cells = tfs_fragment_tile_cells(f, tile);
	if (*cells > (UINT64_C(1) << 32))
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': %" PRIu64 " cells per tile",
				f->name, *cells);
	return TFS_E_OK;
}

enum tfs_err tfs_tile_read(struct tfs_arraydir *a, struct tfs_fragment *f,
			   uint32_t slot, uint64_t tile, struct tfs_tile *out,
			   struct tfs_diag *d)
{
	const struct tfs_slot_tiles *st;
	struct tfs_slot_desc desc;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	e = tile_lookup(a, f, slot, tile, &desc, &st, &out->cell_num, d);
	if (e)
		return e;
	if (desc.var)
		e = read_var(a, f, slot, tile, &desc, st, out, d);
	else
		e = read_fixed(a, f, slot, tile, &desc, st, out, d);
	if (!e && desc.nullable)
		e = read_validity(a, f, slot, tile, st, out, d);
	if (!e)
		return TFS_E_OK;
	tfs__tile_free_buffers(out);
	if (e == TFS_E_CORRUPT || e == TFS_E_CHECKSUM)
		tfs_fail(d, e, "fragment '%s': slot %u tile %" PRIu64
			 " does not decode", f->name, slot, tile);
	return e;
}

/* ---- tiles read chunk by chunk (tile_chunks.h) ---- */

enum tfs_err tfs__tile_plan(struct tfs_arraydir *a, struct tfs_fragment *f,
			    uint32_t slot, uint64_t tile,
			    struct tfs_tile_plan *out, struct tfs_diag *d)
{
	const struct tfs_slot_tiles *st;
	struct tfs_slot_desc desc;
	uint64_t cells, want, start, end;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	e = tile_lookup(a, f, slot, tile, &desc, &st, &cells, d);
	if (e)
		return e;
	/* Var-size tiles, and the old coordinates rewritten whole, are read
	 * whole: nothing to plan. */
	if (desc.var || (f->footer.version < 5 && slot == f->schema->attr_num))
		return TFS_E_OK;
	want = cells * desc.cell_size;
	e = span_of(f, slot, st->offsets, f->footer.file_sizes[slot], tile,
		    &start, &end, d);
	if (e)
		return e;
	out->need = end - start + want + scratch_bytes(desc.filters, want);
	out->largest = end - start > want ? end - start : want;
	out->chunkable = tfs_pipeline_chunked(desc.filters);
	if (desc.nullable) {
		e = span_of(f, slot, st->validity_offsets,
			    f->footer.file_validity_sizes[slot], tile, &start,
			    &end, d);
		if (e)
			return e;
		out->need += end - start + cells;
		if (end - start > out->largest)
			out->largest = end - start;
		out->chunkable =
			out->chunkable &&
			tfs_pipeline_chunked(&f->schema->validity_filters);
	}
	return TFS_E_OK;
}

enum tfs_err tfs__tile_source(struct tfs_arraydir *a, struct tfs_fragment *f,
			      uint32_t slot, uint64_t tile,
			      enum tfs_file_kind kind,
			      struct tfs_tile_source *out, struct tfs_diag *d)
{
	const struct tfs_slot_tiles *st;
	struct tfs_slot_desc desc;
	const uint64_t *offsets;
	uint64_t cells, file_size, end;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	e = tile_lookup(a, f, slot, tile, &desc, &st, &cells, d);
	if (e)
		return e;
	if (kind == TFS_FILE_FIXED && !desc.var &&
	    !(f->footer.version < 5 && slot == f->schema->attr_num)) {
		offsets = st->offsets;
		file_size = f->footer.file_sizes[slot];
		out->filters = desc.filters;
		tile_ctx(&out->ctx, a, f, desc.type, desc.cell_size);
		out->want = cells * desc.cell_size;
	} else if (kind == TFS_FILE_VALIDITY && desc.nullable) {
		offsets = st->validity_offsets;
		file_size = f->footer.file_validity_sizes[slot];
		out->filters = &f->schema->validity_filters;
		tile_ctx(&out->ctx, a, f, TFS_UINT8, 1);
		out->want = cells;
	} else {
		return tfs_fail(d, TFS_E_INVALID,
				"fragment '%s': slot %u has no fixed-size "
				"file of that kind",
				f->name, slot);
	}
	/* Read a chunk at a time: max_tile_bytes, the most a tile read
	 * whole may take, does not apply. */
	e = span_of(f, slot, offsets, file_size, tile, &out->start, &end, d);
	if (e)
		return e;
	out->len = end - out->start;
	out->path = tfs_fragment_file_path(f, slot, kind);
	if (!out->path)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if (out->len >= CHECKED_READ_BYTES &&
	    (e = check_real_size(a, f, out->path, end, d))) {
		tfs__tile_source_release(out);
		return e;
	}
	return TFS_E_OK;
}

void tfs__tile_source_release(struct tfs_tile_source *src)
{
	tfs_free(src->path);
	memset(src, 0, sizeof(*src));
}

enum tfs_err tfs__tile_pread(struct tfs_arraydir *a,
			     const struct tfs_fragment *f,
			     const struct tfs_tile_source *src, uint64_t off,
			     uint8_t *buf, size_t len, struct tfs_diag *d)
{
	if (off > src->len || len > src->len - off)
		return tfs_fail(d, TFS_E_CORRUPT,
				"fragment '%s': read of %zu bytes at %" PRIu64
				" past a tile of %" PRIu64 " bytes",
				f->name, len, off, src->len);
	return read_at(a, f, src->path, src->start + off, buf, len, d);
}
