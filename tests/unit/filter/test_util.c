/* Helpers shared by the filter unit tests (see test_util.h). */
#include "test_util.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"

static bool parse_type(const char *s, size_t n, uint8_t *out)
{
	for (unsigned t = 0; t <= TFS_DATATYPE_MAX; t++) {
		const char *name = tfs_datatype_name(t);

		if (strlen(name) == n && memcmp(name, s, n) == 0) {
			*out = (uint8_t)t;
			return true;
		}
	}
	return false;
}

static bool set_option(struct tfs_filter *f, const char *k, size_t kn,
		       const char *v, size_t vn)
{
	char val[64];
	char *end;

	if (vn >= sizeof(val))
		return false;
	memcpy(val, v, vn);
	val[vn] = '\0';
#define KEY(s) (kn == strlen(s) && memcmp(k, s, kn) == 0)
	if (KEY("level")) {
		f->level = (int32_t)strtol(val, &end, 10);
	} else if (KEY("reinterpret")) {
		f->has_reinterpret = true;
		return parse_type(v, vn, &f->reinterpret);
	} else if (KEY("max_window")) {
		f->max_window = (uint32_t)strtoul(val, &end, 10);
	} else if (KEY("bytewidth")) {
		f->byte_width = strtoull(val, &end, 10);
	} else if (KEY("factor")) {
		f->scale = strtod(val, &end);
	} else if (KEY("offset")) {
		f->offset = strtod(val, &end);
	} else if (KEY("quality")) {
		f->webp_quality = strtof(val, &end);
	} else if (KEY("lossless")) {
		f->webp_lossless = (uint8_t)strtoul(val, &end, 10);
	} else if (KEY("format")) {
		static const char *const fmts[] = {"NONE", "RGB", "BGR",
						   "RGBA", "BGRA"};

		for (uint8_t i = 0; i < 5; i++)
			if (strcmp(val, fmts[i]) == 0) {
				f->webp_format = i;
				return true;
			}
		return false;
	} else {
		return false;
	}
#undef KEY
	return *end == '\0';
}

bool tu_parse_filter(const char *desc, struct tfs_filter *f)
{
	const char *open = strchr(desc, '(');
	size_t n = open ? (size_t)(open - desc) : strlen(desc);
	const char *p;

	for (unsigned t = 0; t < 20; t++) {
		const char *name = tfs_filter_name(t);

		if (name && strlen(name) == n && memcmp(name, desc, n) == 0) {
			tfs_filter_init(f, (enum tfs_filter_type)t);
			goto found;
		}
	}
	return false;
found:
	if (!open)
		return true;
	p = open + 1;
	while (*p && *p != ')') {
		const char *eq = strchr(p, '='), *end;

		if (!eq)
			return false;
		end = eq + strcspn(eq, ",)");
		if (!set_option(f, p, (size_t)(eq - p), eq + 1,
				(size_t)(end - eq - 1)))
			return false;
		p = *end == ',' ? end + 1 : end;
	}
	return *p == ')' && p[1] == '\0';
}

struct tfs_pipeline tu_pipe_v(const char *const *descs)
{
	struct tfs_pipeline p;

	tfs_pipeline_init(&p);
	for (; *descs; descs++) {
		struct tfs_filter f;

		cr_assert(tu_parse_filter(*descs, &f), "bad filter '%s'",
			  *descs);
		cr_assert_eq(tfs_pipeline_add(&p, &f), TFS_E_OK);
	}
	return p;
}

struct tfs_pipeline tu_pipe(const char *first, ...)
{
	const char *v[TFS_MAX_FILTERS + 1];
	size_t n = 0;
	va_list ap;

	va_start(ap, first);
	for (const char *s = first; s; s = va_arg(ap, const char *)) {
		cr_assert_lt(n, (size_t)TFS_MAX_FILTERS);
		v[n++] = s;
	}
	va_end(ap);
	v[n] = NULL;
	return tu_pipe_v(v);
}

struct tfs_tile_ctx tu_ctx(unsigned type, uint64_t cell_size)
{
	struct tfs_tile_ctx c;

	memset(&c, 0, sizeof(c));
	c.type = (uint8_t)type;
	c.cell_size = cell_size ? cell_size : tfs_datatype_size(type);
	c.fragment_version = 22;
	return c;
}

void tu_tile_begin(struct tfs_buf *b, uint64_t nchunks)
{
	tfs_buf_init(b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append_u64(b, nchunks), TFS_E_OK);
}

void tu_tile_chunk(struct tfs_buf *b, uint32_t orig, const void *md,
		   size_t md_len, const void *data, size_t data_len)
{
	cr_assert_eq(tfs_buf_append_u32(b, orig), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u32(b, (uint32_t)data_len), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u32(b, (uint32_t)md_len), TFS_E_OK);
	cr_assert_eq(tfs_buf_append(b, md, md_len), TFS_E_OK);
	cr_assert_eq(tfs_buf_append(b, data, data_len), TFS_E_OK);
}

uint8_t *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	long n;

	cr_assert(f, "cannot open '%s'", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	cr_assert_geq(n, 0);
	cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
	p = tfs_malloc((size_t)n + 1);
	cr_assert(p);
	cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return p;
}

bool tu_tile_span(const uint8_t *p, size_t len, size_t pos, size_t *tile_len,
		  uint64_t *orig_total)
{
	struct tfs_cursor c;
	uint64_t n;

	if (pos > len)
		return false;
	tfs_cur_init(&c, p + pos, len - pos);
	*orig_total = 0;
	if (!tfs_cur_u64(&c, &n))
		return false;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t orig, filtered, md;

		if (!tfs_cur_u32(&c, &orig) || !tfs_cur_u32(&c, &filtered) ||
		    !tfs_cur_u32(&c, &md) ||
		    !tfs_cur_skip(&c, (size_t)filtered + md))
			return false;
		*orig_total += orig;
	}
	*tile_len = c.pos;
	return true;
}

struct tfs_buf tu_roundtrip(const struct tfs_pipeline *p,
			    const struct tfs_tile_ctx *ctx, const void *src,
			    size_t len)
{
	struct tfs_buf enc;
	struct tfs_diag d;
	uint8_t *back = tfs_malloc(len + 1);
	enum tfs_err e;

	cr_assert(back);
	tfs_diag_init(&d);
	tfs_buf_init(&enc, TFS_BUF_NO_MAX);
	e = tfs_tile_encode(&enc, p, ctx, src, len, NULL, 0, &d);
	cr_assert_eq(e, TFS_E_OK, "encode: %s", tfs_diag_msg(&d));
	e = tfs_tile_decode(p, ctx, back, len, enc.data, enc.len, &d);
	cr_assert_eq(e, TFS_E_OK, "decode: %s", tfs_diag_msg(&d));
	cr_assert(len == 0 || memcmp(back, src, len) == 0,
		  "round trip differs (%zu bytes)", len);
	tfs_free(back);
	return enc;
}

uint64_t tu_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}
