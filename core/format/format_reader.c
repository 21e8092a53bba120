/* The bounds-checked reader shared by every parser of the format module,
 * and the Range encoding (format/schema.md §7: "Range") used by the current
 * domain, the fragment non-empty domain and R-tree MBRs. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

void tfs__rd_init(struct tfs__rd *r, const uint8_t *buf, size_t len,
		  const char *what, struct tfs_diag *d)
{
	tfs_cur_init(&r->c, buf, len);
	r->d = d;
	r->what = what;
}

static enum tfs_err vfail(struct tfs__rd *r, enum tfs_err code,
			  const char *fmt, va_list ap) TFS_PRINTF(3, 0);

static enum tfs_err vfail(struct tfs__rd *r, enum tfs_err code,
			  const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	return tfs_fail(r->d, code, "%s: %s", r->what, msg);
}

enum tfs_err tfs__bad(struct tfs__rd *r, const char *fmt, ...)
{
	va_list ap;
	enum tfs_err e;

	va_start(ap, fmt);
	e = vfail(r, TFS_E_CORRUPT, fmt, ap);
	va_end(ap);
	return e;
}

enum tfs_err tfs__fail(struct tfs__rd *r, enum tfs_err code, const char *fmt,
		       ...)
{
	va_list ap;
	enum tfs_err e;

	va_start(ap, fmt);
	e = vfail(r, code, fmt, ap);
	va_end(ap);
	return e;
}

enum tfs_err tfs__trunc(struct tfs__rd *r, const char *field)
{
	return tfs__bad(r, "truncated at offset %zu reading %s", r->c.pos,
			field);
}

enum tfs_err tfs__unsupported_version(struct tfs__rd *r, uint32_t version)
{
	return tfs__fail(r, TFS_E_UNSUPPORTED,
			 "unsupported format version %u", (unsigned)version);
}

enum tfs_err tfs__u8(struct tfs__rd *r, uint8_t *v, const char *field)
{
	return tfs_cur_u8(&r->c, v) ? TFS_E_OK : tfs__trunc(r, field);
}

enum tfs_err tfs__bool(struct tfs__rd *r, bool *v, const char *field)
{
	uint8_t b;

	if (!tfs_cur_u8(&r->c, &b))
		return tfs__trunc(r, field);
	if (b > 1)
		return tfs__bad(r, "%s is %u at offset %zu, expected 0 or 1",
				field, b, r->c.pos - 1);
	*v = b;
	return TFS_E_OK;
}

enum tfs_err tfs__u32(struct tfs__rd *r, uint32_t *v, const char *field)
{
	return tfs_cur_u32(&r->c, v) ? TFS_E_OK : tfs__trunc(r, field);
}

enum tfs_err tfs__u64(struct tfs__rd *r, uint64_t *v, const char *field)
{
	return tfs_cur_u64(&r->c, v) ? TFS_E_OK : tfs__trunc(r, field);
}

enum tfs_err tfs__take(struct tfs__rd *r, uint64_t n, const uint8_t **p,
		       const char *field)
{
	if (n > tfs_cur_left(&r->c))
		return tfs__bad(r,
				"%s of %llu bytes at offset %zu runs past the "
				"end (%zu bytes left)",
				field, (unsigned long long)n, r->c.pos,
				tfs_cur_left(&r->c));
	if (!tfs_cur_take(&r->c, (size_t)n, p))
		return tfs__trunc(r, field);
	return TFS_E_OK;
}

enum tfs_err tfs__str(struct tfs__rd *r, uint64_t n, char **out,
		      const char *field)
{
	const uint8_t *p;
	enum tfs_err e;

	*out = NULL;
	e = tfs__take(r, n, &p, field);
	if (e)
		return e;
	if (n && memchr(p, 0, (size_t)n))
		return tfs__bad(r, "%s at offset %zu contains a NUL byte",
				field, r->c.pos - (size_t)n);
	*out = tfs_memdup(p, (size_t)n);
	if (!*out)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory reading %s",
				 field);
	return TFS_E_OK;
}

enum tfs_err tfs__pipeline(struct tfs__rd *r, struct tfs_pipeline *p,
			   uint32_t version, const char *field)
{
	struct tfs_diag local;
	size_t at = r->c.pos;
	enum tfs_err e;

	tfs_diag_init(&local);
	memset(p, 0, sizeof(*p));
	e = tfs_pipeline_parse(p, &r->c, version, &local);
	if (e) {
		r->c.pos = at;
		return tfs__fail(r, e, "%s at offset %zu: %s", field, at,
				 tfs_diag_msg(&local));
	}
	return TFS_E_OK;
}

enum tfs_err tfs__range(struct tfs__rd *r, uint8_t type, bool var,
			struct tfs_range *out, const char *field)
{
	const uint8_t *p;
	enum tfs_err e;

	if (!var) {
		size_t sz = tfs_datatype_size(type);

		if (!sz)
			return tfs__bad(r, "%s: invalid datatype %u", field,
					type);
		e = tfs__take(r, 2 * (uint64_t)sz, &p, field);
		if (e)
			return e;
		out->lo = p;
		out->hi = p + sz;
		out->lo_len = sz;
		out->hi_len = sz;
		return TFS_E_OK;
	}

	uint64_t total, lo_len;

	e = tfs__u64(r, &total, field);
	if (e)
		return e;
	e = tfs__u64(r, &lo_len, field);
	if (e)
		return e;
	if (lo_len > total)
		return tfs__bad(r,
				"%s: start size %llu exceeds range size %llu "
				"at offset %zu",
				field, (unsigned long long)lo_len,
				(unsigned long long)total, r->c.pos - 8);
	e = tfs__take(r, total, &p, field);
	if (e)
		return e;
	out->lo = p;
	out->lo_len = lo_len;
	out->hi = p + lo_len;
	out->hi_len = total - lo_len;
	return TFS_E_OK;
}

enum tfs_err tfs__range_write(struct tfs_buf *b, bool var,
			      const struct tfs_range *rg)
{
	enum tfs_err e;

	if (var) {
		e = tfs_buf_append_u64(b, rg->lo_len + rg->hi_len);
		if (!e)
			e = tfs_buf_append_u64(b, rg->lo_len);
		if (e)
			return e;
	}
	e = tfs_buf_append(b, rg->lo, (size_t)rg->lo_len);
	if (e)
		return e;
	return tfs_buf_append(b, rg->hi, (size_t)rg->hi_len);
}

enum tfs_err tfs__ranges_own(struct tfs__rd *r, size_t from, size_t to,
			     struct tfs_range *rg, uint64_t n, uint8_t **out)
{
	const uint8_t *base = r->c.p + from;
	uint8_t *copy;

	copy = tfs_memdup(base, to - from);
	if (!copy)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory copying ranges");
	for (uint64_t i = 0; i < n; i++) {
		rg[i].lo = copy + (rg[i].lo - base);
		rg[i].hi = copy + (rg[i].hi - base);
	}
	*out = copy;
	return TFS_E_OK;
}

enum tfs_err tfs__put_str32(struct tfs_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	enum tfs_err e;

	if (n > UINT32_MAX)
		return TFS_E_INVALID;
	e = tfs_buf_append_u32(b, (uint32_t)n);
	if (e)
		return e;
	return tfs_buf_append(b, s, n);
}

enum tfs_err tfs__put_str64(struct tfs_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	enum tfs_err e;

	e = tfs_buf_append_u64(b, n);
	if (e)
		return e;
	return tfs_buf_append(b, s, n);
}
