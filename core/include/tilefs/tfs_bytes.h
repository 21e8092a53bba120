/* Little-endian load/store helpers and a bounds-checked cursor for parsing
 * untrusted bytes. Every on-disk integer of the format is little-endian
 * (format/README.md, "Conventions"); the few big-endian fields have their
 * own helpers here. */
#ifndef TFS_BYTES_H
#define TFS_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t tfs_get_u16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | (b[1] << 8));
}

static inline uint32_t tfs_get_u32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
	       ((uint32_t)b[3] << 24);
}

static inline uint64_t tfs_get_u64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)tfs_get_u32(b) | ((uint64_t)tfs_get_u32(b + 4) << 32);
}

static inline void tfs_put_u16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static inline void tfs_put_u32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static inline void tfs_put_u64(void *p, uint64_t v)
{
	tfs_put_u32(p, (uint32_t)v);
	tfs_put_u32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/* Little-endian unsigned integer of `width` bytes (1, 2, 4 or 8). */
static inline uint64_t tfs_get_uint(const void *p, size_t width)
{
	switch (width) {
	case 1:
		return *(const uint8_t *)p;
	case 2:
		return tfs_get_u16(p);
	case 4:
		return tfs_get_u32(p);
	default:
		return tfs_get_u64(p);
	}
}

/* Stores the low `width` bytes (1, 2, 4 or 8) of v, little-endian. */
static inline void tfs_put_uint(void *p, size_t width, uint64_t v)
{
	switch (width) {
	case 1:
		*(uint8_t *)p = (uint8_t)v;
		break;
	case 2:
		tfs_put_u16(p, (uint16_t)v);
		break;
	case 4:
		tfs_put_u32(p, (uint32_t)v);
		break;
	default:
		tfs_put_u64(p, v);
		break;
	}
}

/* Big-endian unsigned integer of `width` (1..8) bytes. */
static inline uint64_t tfs_get_be(const void *p, unsigned width)
{
	const uint8_t *b = p;
	uint64_t v = 0;
	for (unsigned i = 0; i < width; i++)
		v = (v << 8) | b[i];
	return v;
}

static inline void tfs_put_be(void *p, unsigned width, uint64_t v)
{
	uint8_t *b = p;
	for (unsigned i = width; i-- > 0;) {
		b[i] = (uint8_t)v;
		v >>= 8;
	}
}

/* A read cursor over untrusted bytes. Reads past the end fail (return
 * false) and leave the cursor unchanged. */
struct tfs_cursor {
	const uint8_t *p;
	size_t len;
	size_t pos;
};

static inline void tfs_cur_init(struct tfs_cursor *c, const void *p, size_t len)
{
	c->p = p;
	c->len = len;
	c->pos = 0;
}

static inline size_t tfs_cur_left(const struct tfs_cursor *c)
{
	return c->len - c->pos;
}

/* Borrows n bytes at the cursor (valid as long as the underlying bytes). */
static inline bool tfs_cur_take(struct tfs_cursor *c, size_t n,
				const uint8_t **out)
{
	if (n > c->len - c->pos)
		return false;
	*out = c->p + c->pos;
	c->pos += n;
	return true;
}

static inline bool tfs_cur_skip(struct tfs_cursor *c, size_t n)
{
	const uint8_t *ignored;
	return tfs_cur_take(c, n, &ignored);
}

static inline bool tfs_cur_copy(struct tfs_cursor *c, void *dst, size_t n)
{
	const uint8_t *src;
	if (!tfs_cur_take(c, n, &src))
		return false;
	if (n)
		memcpy(dst, src, n);
	return true;
}

static inline bool tfs_cur_u8(struct tfs_cursor *c, uint8_t *v)
{
	const uint8_t *b;
	if (!tfs_cur_take(c, 1, &b))
		return false;
	*v = b[0];
	return true;
}

static inline bool tfs_cur_u32(struct tfs_cursor *c, uint32_t *v)
{
	const uint8_t *b;
	if (!tfs_cur_take(c, 4, &b))
		return false;
	*v = tfs_get_u32(b);
	return true;
}

static inline bool tfs_cur_u64(struct tfs_cursor *c, uint64_t *v)
{
	const uint8_t *b;
	if (!tfs_cur_take(c, 8, &b))
		return false;
	*v = tfs_get_u64(b);
	return true;
}

static inline bool tfs_cur_i32(struct tfs_cursor *c, int32_t *v)
{
	uint32_t u;
	if (!tfs_cur_u32(c, &u))
		return false;
	memcpy(v, &u, sizeof(*v));
	return true;
}

static inline bool tfs_cur_f64(struct tfs_cursor *c, double *v)
{
	uint64_t u;
	if (!tfs_cur_u64(c, &u))
		return false;
	memcpy(v, &u, sizeof(*v));
	return true;
}

#endif
