/* Generic tiles (format/generic_tile.md §1 "Layout", §2 "What TileDB
 * writes"): the self-describing container of every metadata file. The
 * header names its own filter list; the tile data is a chunked filtered
 * tile decoded by the filter module. */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

#define GT_DEFAULT_CHUNK 65536u

enum tfs_err tfs_generic_header_parse(struct tfs_generic_header *out,
				      const uint8_t *buf, size_t len,
				      struct tfs_diag *d)
{
	struct tfs__rd r;
	uint32_t fl_size;
	size_t fl_start;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "generic tile", d);
	e = tfs__u32(&r, &out->version, "header version");
	if (e)
		return e;
	if (out->version > TFS_FORMAT_VERSION_MAX)
		return tfs__unsupported_version(&r, out->version);
	if ((e = tfs__u64(&r, &out->persisted_size, "persisted size")) ||
	    (e = tfs__u64(&r, &out->tile_size, "tile size")) ||
	    (e = tfs__u8(&r, &out->datatype, "datatype")) ||
	    (e = tfs__u64(&r, &out->cell_size, "cell size")) ||
	    (e = tfs__u8(&r, &out->encryption_type, "encryption type")) ||
	    (e = tfs__u32(&r, &fl_size, "filter list size")))
		return e;
	if (!tfs_datatype_valid(out->datatype))
		return tfs__bad(&r, "invalid datatype %u in header",
				out->datatype);
	if (out->cell_size == 0)
		return tfs__bad(&r, "cell size 0 in header");
	if (out->encryption_type > 1)
		return tfs__bad(&r, "invalid encryption type %u in header",
				out->encryption_type);
	if (fl_size > tfs_cur_left(&r.c))
		return tfs__bad(&r,
				"filter list of %u bytes runs past the end "
				"(%zu bytes left)",
				(unsigned)fl_size, tfs_cur_left(&r.c));

	/* The filter list must use exactly fl_size bytes. */
	struct tfs__rd fl;

	fl_start = r.c.pos;
	tfs__rd_init(&fl, buf + fl_start, fl_size, "generic tile", d);
	e = tfs__pipeline(&fl, &out->filters, out->version, "filter list");
	if (e)
		return e;
	if (fl.c.pos != fl_size)
		return tfs__bad(&r,
				"filter list uses %zu of its %u bytes",
				fl.c.pos, (unsigned)fl_size);
	out->header_size = TFS_GENERIC_HEADER_FIXED + (size_t)fl_size;
	if (out->persisted_size > len - out->header_size)
		return tfs__bad(&r,
				"tile data of %llu bytes runs past the end "
				"(%zu bytes left after the header)",
				(unsigned long long)out->persisted_size,
				len - out->header_size);
	return TFS_E_OK;
}

/* The bytes a filtered tile decodes to: the sum of its chunks' original
 * lengths (tile.md §1). False when the chunk headers run past len. */
static bool chunks_total(const uint8_t *p, size_t len, uint64_t *total)
{
	struct tfs_cursor c;
	uint64_t n, sum = 0;

	tfs_cur_init(&c, p, len);
	if (!tfs_cur_u64(&c, &n) || n > tfs_cur_left(&c) / 12)
		return false;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t orig, filtered, md_len;

		if (!tfs_cur_u32(&c, &orig) || !tfs_cur_u32(&c, &filtered) ||
		    !tfs_cur_u32(&c, &md_len) || !tfs_cur_skip(&c, md_len) ||
		    !tfs_cur_skip(&c, filtered))
			return false;
		sum += orig; /* n < len / 12: cannot wrap */
	}
	*total = sum;
	return true;
}

enum tfs_err tfs_generic_tile_decode(const uint8_t *buf, size_t len,
				     const uint8_t *key, size_t max_payload,
				     uint8_t **payload, size_t *payload_len,
				     size_t *consumed, struct tfs_diag *d)
{
	struct tfs_generic_header h;
	struct tfs_tile_ctx ctx;
	uint64_t total;
	uint8_t *out;
	enum tfs_err e;

	*payload = NULL;
	*payload_len = 0;
	if (consumed)
		*consumed = 0;
	e = tfs_generic_header_parse(&h, buf, len, d);
	if (e)
		return e;
	if (h.encryption_type == 1 && !key)
		return tfs_fail(d, TFS_E_KEY,
				"generic tile: encrypted with AES-256-GCM but "
				"no key was given");
	if (h.encryption_type == 0 && key)
		return tfs_fail(d, TFS_E_KEY,
				"generic tile: not encrypted but a key was "
				"given");
	/* The chunks must add up to the header's size before we allocate
	 * it: a lying header costs a failed parse, not up to max_payload
	 * bytes of memory. Checked before the limit, so that a damaged size
	 * is EIO, and only a tile that really holds more is "too big". */
	if (!chunks_total(buf + h.header_size, (size_t)h.persisted_size,
			  &total))
		return tfs_fail(d, TFS_E_CORRUPT,
				"generic tile: chunk headers run past the "
				"%llu bytes of tile data",
				(unsigned long long)h.persisted_size);
	if (total != h.tile_size)
		return tfs_fail(d, TFS_E_CORRUPT,
				"generic tile: chunks decode to %llu bytes, "
				"the header says %llu",
				(unsigned long long)total,
				(unsigned long long)h.tile_size);
	if (h.tile_size > max_payload)
		return tfs_fail(d, TFS_E_TOO_BIG,
				"generic tile: payload of %llu bytes exceeds "
				"the limit of %zu",
				(unsigned long long)h.tile_size, max_payload);
	out = tfs_malloc((size_t)h.tile_size);
	if (!out)
		return tfs_fail(d, TFS_E_NOMEM,
				"generic tile: out of memory for %llu bytes",
				(unsigned long long)h.tile_size);
	memset(&ctx, 0, sizeof(ctx));
	ctx.type = h.datatype;
	ctx.cell_size = h.cell_size;
	ctx.fragment_version = h.version;
	ctx.key = key;
	ctx.implicit_aes = false;
	e = tfs_tile_decode(&h.filters, &ctx, out, (size_t)h.tile_size,
			    buf + h.header_size, (size_t)h.persisted_size, d);
	if (e) {
		tfs_free(out);
		return e;
	}
	*payload = out;
	*payload_len = (size_t)h.tile_size;
	if (consumed)
		*consumed = h.header_size + (size_t)h.persisted_size;
	return TFS_E_OK;
}

enum tfs_err tfs_generic_tile_encode(struct tfs_buf *out, const uint8_t *payload,
				     size_t len, const uint8_t *key,
				     struct tfs_diag *d)
{
	struct tfs_pipeline p;
	struct tfs_tile_ctx ctx;
	size_t start = out->len, fl_at, data_at;
	enum tfs_err e;

	memset(&p, 0, sizeof(p));
	p.max_chunk_size = GT_DEFAULT_CHUNK;
	p.count = 1;
	p.filters[0].type = TFS_FILTER_GZIP;
	p.filters[0].compressor = TFS_COMP_GZIP;
	p.filters[0].level = 1;
	p.filters[0].reinterpret = TFS_NO_REINTERPRET;
	if (key) {
		p.count = 2;
		p.filters[1].type = TFS_FILTER_AES256GCM;
		p.filters[1].reinterpret = TFS_NO_REINTERPRET;
	}

	/* Fixed header; sizes are patched once known. */
	if ((e = tfs_buf_append_u32(out, TFS_FORMAT_VERSION_WRITE)) ||
	    (e = tfs_buf_append_u64(out, 0)) ||
	    (e = tfs_buf_append_u64(out, len)) ||
	    (e = tfs_buf_append_u8(out, TFS_CHAR)) ||
	    (e = tfs_buf_append_u64(out, 1)) ||
	    (e = tfs_buf_append_u8(out, key ? 1 : 0)) ||
	    (e = tfs_buf_append_u32(out, 0)))
		goto out_truncate;
	fl_at = out->len;
	e = tfs_pipeline_serialize(out, &p, TFS_FORMAT_VERSION_WRITE);
	if (e)
		goto out_truncate;
	if (out->len - fl_at > UINT32_MAX) {
		e = TFS_E_INTERNAL;
		goto out_truncate;
	}
	tfs_put_u32(out->data + fl_at - 4, (uint32_t)(out->len - fl_at));

	data_at = out->len;
	memset(&ctx, 0, sizeof(ctx));
	ctx.type = TFS_CHAR;
	ctx.cell_size = 1;
	ctx.fragment_version = TFS_FORMAT_VERSION_WRITE;
	ctx.key = key;
	ctx.implicit_aes = false;
	e = tfs_tile_encode(out, &p, &ctx, payload, len, NULL, 0, d);
	if (e) {
		out->len = start;
		return e;
	}
	tfs_put_u64(out->data + start + 4, (uint64_t)(out->len - data_at));
	return TFS_E_OK;

out_truncate:
	out->len = start;
	return tfs_fail(d, e, "generic tile: cannot encode header: %s",
			tfs_strerror(e));
}
