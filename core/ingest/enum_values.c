/* The values a CSV holds that an enumeration lacks, in the order first
 * seen: a small hash set filled by the collecting pass of csv_ingest.c
 * and read by the evolution of enum_grow.c. */
#include "ingest_internal.h"

#include <stdint.h>
#include <string.h>

#include "tfs_alloc.h"

void tfs__enum_growth_init(struct tfs__enum_growth *g,
			   const struct tfs_enumeration *en)
{
	memset(g, 0, sizeof(*g));
	g->en = en;
	tfs_buf_init(&g->data, TFS_BUF_NO_MAX);
	tfs_buf_init(&g->offsets, TFS_BUF_NO_MAX);
}

void tfs__enum_growth_release(struct tfs__enum_growth *g)
{
	tfs_buf_release(&g->data);
	tfs_buf_release(&g->offsets);
	tfs_free(g->slots);
	g->slots = NULL;
}

static uint64_t fnv(const uint8_t *p, size_t len)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h ^ (h >> 29);
}

static void value_at(const struct tfs__enum_growth *g, uint64_t k,
		     const uint8_t **p, size_t *len)
{
	uint64_t lo, hi;

	memcpy(&lo, g->offsets.data + k * 8, 8);
	if (k + 1 < g->num)
		memcpy(&hi, g->offsets.data + (k + 1) * 8, 8);
	else
		hi = g->data.len;
	*p = g->data.data + lo;
	*len = (size_t)(hi - lo);
}

/* The slot holding p, or the empty one where it would go. */
static uint64_t slot_of(const struct tfs__enum_growth *g, const uint8_t *p,
			size_t len)
{
	uint64_t at = fnv(p, len) & (g->slot_cap - 1);

	for (;;) {
		const uint8_t *q;
		size_t qlen;

		if (!g->slots[at])
			return at;
		value_at(g, g->slots[at] - 1, &q, &qlen);
		if (qlen == len && (len == 0 || memcmp(q, p, len) == 0))
			return at;
		at = (at + 1) & (g->slot_cap - 1);
	}
}

bool tfs__enum_growth_find(const struct tfs__enum_growth *g, const uint8_t *p,
			   size_t len, uint64_t *k)
{
	uint64_t at;

	if (!g->num)
		return false;
	at = slot_of(g, p, len);
	if (!g->slots[at])
		return false;
	*k = g->slots[at] - 1;
	return true;
}

static enum tfs_err rehash(struct tfs__enum_growth *g)
{
	uint64_t cap = g->slot_cap ? 2 * g->slot_cap : 64;
	uint64_t *old = g->slots, old_cap = g->slot_cap;

	if (cap > SIZE_MAX / sizeof(uint64_t))
		return TFS_E_NOMEM;
	g->slots = tfs_callocn((size_t)cap, sizeof(uint64_t));
	if (!g->slots) {
		g->slots = old;
		return TFS_E_NOMEM;
	}
	g->slot_cap = cap;
	for (uint64_t i = 0; i < old_cap; i++) {
		const uint8_t *p;
		size_t len;

		if (!old[i])
			continue;
		value_at(g, old[i] - 1, &p, &len);
		g->slots[slot_of(g, p, len)] = old[i];
	}
	tfs_free(old);
	return TFS_E_OK;
}

enum tfs_err tfs__enum_growth_add(struct tfs__enum_growth *g, const uint8_t *p,
				  size_t len)
{
	uint64_t off = g->data.len;
	enum tfs_err e;

	if (2 * (g->num + 1) > g->slot_cap && (e = rehash(g)))
		return e;
	if (tfs_buf_append(&g->offsets, &off, 8) ||
	    (len && tfs_buf_append(&g->data, p, len)))
		return TFS_E_NOMEM;
	g->num++;
	g->slots[slot_of(g, p, len)] = g->num;
	return TFS_E_OK;
}
