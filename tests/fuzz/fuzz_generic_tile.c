/* Fuzz target: generic tiles (format/generic_tile.md), the container of
 * every metadata file: header, filter list and chunked tile, decoded with
 * the key the header asks for. A decoded payload encodes and decodes back
 * to itself; the same bytes decoded as a schema file must not crash
 * either (tfs_schema_decode). */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_format.h"

struct input {
	const uint8_t *data;
	size_t size;
};

static enum tfs_err decode_once(void *arg)
{
	const struct input *in = arg;
	uint8_t *payload;
	size_t len;
	enum tfs_err e;

	e = fuzz_generic_decode(in->data, in->size, &payload, &len, NULL);
	tfs_free(payload);
	return e;
}

static void check_roundtrip(const uint8_t *payload, size_t len,
			    const uint8_t *key)
{
	struct tfs_buf b;
	struct tfs_diag d;
	uint8_t *back;
	size_t back_len, used;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	FUZZ_CHECK(tfs_generic_tile_encode(&b, payload, len, key, &d) ==
		   TFS_E_OK);
	FUZZ_CHECK(tfs_generic_tile_decode(b.data, b.len, key,
					   FUZZ_MAX_PAYLOAD, &back, &back_len,
					   &used, &d) == TFS_E_OK);
	FUZZ_CHECK(used == b.len && back_len == len);
	FUZZ_CHECK(len == 0 || memcmp(back, payload, len) == 0);
	tfs_free(back);
	tfs_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct tfs_generic_header h;
	struct tfs_schema s;
	struct tfs_diag d;
	uint8_t *payload;
	size_t len, used;
	bool encrypted;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_generic_header_parse(&h, data, size, &d);
	if (e)
		FUZZ_CHECK(d.code == e);
	else
		FUZZ_CHECK(h.header_size <= size &&
			   h.persisted_size <= size - h.header_size);
	encrypted = !e && h.encryption_type == 1;

	e = fuzz_generic_decode(data, size, &payload, &len, &used);
	if (!e) {
		FUZZ_CHECK(used <= size && len == h.tile_size);
		fuzz_touch(payload, len);
		/* Round trips stay cheap: small payloads only. */
		if (len <= 1 << 16)
			check_roundtrip(payload, len,
					encrypted ? fuzz_corpus_key : NULL);
		tfs_free(payload);
	}
	fuzz_alloc_fault(decode_once, &in, e, (long)(fuzz_hash(data, size) % 8));

	tfs_diag_init(&d);
	e = tfs_schema_decode(&s, data, size, "__array_schema.tdb",
			      encrypted ? fuzz_corpus_key : NULL, &d);
	if (e)
		FUZZ_CHECK(d.code == e);
	else
		tfs_schema_release(&s);
	return 0;
}
