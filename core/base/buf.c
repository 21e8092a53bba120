/* Growable byte buffer with a hard maximum. */
#include "tfs_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"

void tfs_buf_init(struct tfs_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void tfs_buf_release(struct tfs_buf *b)
{
	tfs_free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

enum tfs_err tfs_buf_reserve(struct tfs_buf *b, size_t extra)
{
	size_t need, cap;
	uint8_t *p;

	if (extra > b->max || b->len > b->max - extra)
		return TFS_E_TOO_BIG;
	need = b->len + extra;
	if (need <= b->cap)
		return TFS_E_OK;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (cap > b->max)
		cap = b->max;
	p = tfs_realloc(b->data, cap);
	if (!p)
		return TFS_E_NOMEM;
	b->data = p;
	b->cap = cap;
	return TFS_E_OK;
}

enum tfs_err tfs_buf_resize(struct tfs_buf *b, size_t n)
{
	if (n > b->len) {
		enum tfs_err e = tfs_buf_reserve(b, n - b->len);

		if (e)
			return e;
		memset(b->data + b->len, 0, n - b->len);
	}
	b->len = n;
	return TFS_E_OK;
}

enum tfs_err tfs_buf_setlen(struct tfs_buf *b, size_t n)
{
	if (n > b->len) {
		enum tfs_err e = tfs_buf_reserve(b, n - b->len);

		if (e)
			return e;
	}
	b->len = n;
	return TFS_E_OK;
}

enum tfs_err tfs_buf_append(struct tfs_buf *b, const void *src, size_t n)
{
	enum tfs_err e = tfs_buf_reserve(b, n);

	if (e)
		return e;
	if (n)
		memcpy(b->data + b->len, src, n);
	b->len += n;
	return TFS_E_OK;
}

enum tfs_err tfs_buf_append_u8(struct tfs_buf *b, uint8_t v)
{
	return tfs_buf_append(b, &v, 1);
}

enum tfs_err tfs_buf_append_u32(struct tfs_buf *b, uint32_t v)
{
	uint8_t le[4];

	tfs_put_u32(le, v);
	return tfs_buf_append(b, le, sizeof(le));
}

enum tfs_err tfs_buf_append_u64(struct tfs_buf *b, uint64_t v)
{
	uint8_t le[8];

	tfs_put_u64(le, v);
	return tfs_buf_append(b, le, sizeof(le));
}

enum tfs_err tfs_buf_printf(struct tfs_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	enum tfs_err e;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return TFS_E_INVALID;
	e = tfs_buf_reserve(b, (size_t)n + 1);
	if (e)
		return e;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return TFS_E_OK;
}

uint8_t *tfs_buf_detach(struct tfs_buf *b, size_t *len)
{
	uint8_t *p = b->data;

	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

char *tfs_temp_template(char *out, size_t cap, const char *dir,
			const char *prefix)
{
	int n = snprintf(out, cap, "%s/%s", dir, prefix);

	if (n < 0 || (size_t)n + 7 > cap)
		return NULL;
	memset(out + n, 'X', 6);
	out[n + 6] = '\0';
	return out;
}
