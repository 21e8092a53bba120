/* Helpers shared by the fuzz targets (fuzz_common.h). */
#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tfs_alloc.h"
#include "tfs_datatype.h"
#include "tfs_filter.h"
#include "tfs_format.h"

/* "public-key-0123456789abcdefghij!" */
const uint8_t fuzz_corpus_key[32] = {
	0x70, 0x75, 0x62, 0x6c, 0x69, 0x63, 0x2d, 0x6b, 0x65, 0x79, 0x2d,
	0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61,
	0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x21,
};

void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line,
		what);
	abort();
}

static void dump(const char *label, const uint8_t *p, size_t len, size_t at)
{
	size_t from = at > 16 ? at - 16 : 0;

	fprintf(stderr, "  %s (%zu bytes) at %zu:", label, len, from);
	for (size_t i = from; i < len && i < at + 16; i++)
		fprintf(stderr, i == at ? " [%02x]" : " %02x", p[i]);
	fputc('\n', stderr);
}

void fuzz_check_same(const void *got, size_t got_len, const void *want,
		     size_t want_len, const char *what)
{
	const uint8_t *g = got, *w = want;
	size_t i = 0;

	while (i < got_len && i < want_len && g[i] == w[i])
		i++;
	if (i == got_len && i == want_len)
		return;
	fprintf(stderr, "%s: differs at offset %zu\n", what, i);
	dump("got", g, got_len, i);
	dump("want", w, want_len, i);
	fuzz_fail(__FILE__, __LINE__, what);
}

enum tfs_err fuzz_generic_decode(const uint8_t *buf, size_t len,
				 uint8_t **payload, size_t *payload_len,
				 size_t *consumed)
{
	struct tfs_generic_header h;
	struct tfs_diag d;
	const uint8_t *key;
	enum tfs_err e;

	tfs_diag_init(&d);
	/* Only the encryption type decides the key; a header that does
	 * not parse fails the same way in the decode below. */
	key = tfs_generic_header_parse(&h, buf, len, &d) == TFS_E_OK &&
			      h.encryption_type == 1
		      ? fuzz_corpus_key
		      : NULL;
	tfs_diag_init(&d);
	e = tfs_generic_tile_decode(buf, len, key, FUZZ_MAX_PAYLOAD, payload,
				    payload_len, consumed, &d);
	if (e) {
		FUZZ_CHECK(*payload == NULL);
		FUZZ_CHECK(d.code != TFS_E_OK);
	}
	return e;
}

bool fuzz_tile_decoded_len(const uint8_t *src, size_t len, size_t max,
			   size_t *out)
{
	struct tfs_cursor c;
	uint64_t n, sum = 0;

	tfs_cur_init(&c, src, len);
	if (!tfs_cur_u64(&c, &n) || n > len)
		return false;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t orig, filtered, md;

		if (!tfs_cur_u32(&c, &orig) || !tfs_cur_u32(&c, &filtered) ||
		    !tfs_cur_u32(&c, &md) || !tfs_cur_skip(&c, md) ||
		    !tfs_cur_skip(&c, filtered))
			return false;
		sum += orig;
		if (sum > max)
			return false;
	}
	*out = (size_t)sum;
	return tfs_cur_left(&c) == 0;
}

void fuzz_alloc_fault(enum tfs_err (*run)(void *arg), void *arg,
		      enum tfs_err expect, long n)
{
	enum tfs_err e;

	tfs_alloc_fail_after(n);
	e = run(arg);
	tfs_alloc_fail_after(-1);
	if (e != expect && e != TFS_E_NOMEM) {
		fprintf(stderr,
			"allocation %ld failing gave '%s', expected '%s' or "
			"'%s'\n",
			n, tfs_strerror(e), tfs_strerror(expect),
			tfs_strerror(TFS_E_NOMEM));
		FUZZ_CHECK(e == expect || e == TFS_E_NOMEM);
	}
}

uint32_t fuzz_hash(const uint8_t *data, size_t size)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 16777619u;
	return h;
}

void fuzz_touch(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	uint8_t x = 0;

	for (size_t i = 0; i < n; i++)
		x ^= b[i];
	(void)x;
}

static bool is_compression(unsigned type)
{
	switch (type) {
	case TFS_FILTER_GZIP:
	case TFS_FILTER_ZSTD:
	case TFS_FILTER_LZ4:
	case TFS_FILTER_RLE:
	case TFS_FILTER_BZIP2:
	case TFS_FILTER_DOUBLE_DELTA:
	case TFS_FILTER_DICTIONARY:
	case TFS_FILTER_DELTA:
		return true;
	default:
		return false;
	}
}

static uint8_t own_compressor(unsigned type)
{
	static const uint8_t by_type[] = {
		[TFS_FILTER_GZIP] = TFS_COMP_GZIP,
		[TFS_FILTER_ZSTD] = TFS_COMP_ZSTD,
		[TFS_FILTER_LZ4] = TFS_COMP_LZ4,
		[TFS_FILTER_RLE] = TFS_COMP_RLE,
		[TFS_FILTER_BZIP2] = TFS_COMP_BZIP2,
		[TFS_FILTER_DOUBLE_DELTA] = TFS_COMP_DOUBLE_DELTA,
		[TFS_FILTER_DICTIONARY] = TFS_COMP_DICTIONARY,
		[TFS_FILTER_DELTA] = TFS_COMP_DELTA,
	};

	return type < sizeof(by_type) ? by_type[type] : 0;
}

enum tfs_err fuzz_filter_spec_put(struct tfs_buf *b, const uint8_t *spec)
{
	unsigned type = spec[0] % 20;
	uint8_t opts[24];
	uint32_t n = 0;
	enum tfs_err e;

	if (is_compression(type)) {
		opts[0] = spec[1] < 9 ? spec[1] : own_compressor(type);
		memcpy(opts + 1, spec + 2, 4);
		n = 5;
		if ((opts[0] == TFS_COMP_DELTA ||
		     opts[0] == TFS_COMP_DOUBLE_DELTA) &&
		    spec[6] <= TFS_DATATYPE_MAX)
			opts[n++] = spec[6];
	} else if (type == TFS_FILTER_BIT_WIDTH_REDUCTION ||
		   type == TFS_FILTER_POSITIVE_DELTA) {
		memcpy(opts, spec + 7, 4);
		n = 4;
	} else if (type == TFS_FILTER_SCALE_FLOAT) {
		static const uint8_t widths[] = {1, 2, 4, 8};

		memcpy(opts, spec + 11, 16);
		tfs_put_u64(opts + 16, widths[spec[27] % 4]);
		n = 24;
	} else if (type == TFS_FILTER_WEBP) {
		memcpy(opts, spec + 11, 4);
		opts[4] = spec[15] % 5;
		opts[5] = spec[16] & 1;
		memcpy(opts + 6, spec + 17, 4);
		opts[10] = opts[11] = 0;
		n = 12;
	}
	if ((e = tfs_buf_append_u8(b, (uint8_t)type)) ||
	    (e = tfs_buf_append_u32(b, n)) || (e = tfs_buf_append(b, opts, n)))
		return e;
	return TFS_E_OK;
}


void fuzz_note(const char *fmt, ...)
{
	static int verbose = -1;
	va_list ap;

	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	if (!verbose)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
