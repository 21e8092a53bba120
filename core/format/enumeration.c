/* Enumeration files (format/schema.md §8 "Enumeration file"): the value
 * list an enumerated attribute indexes into. Parsing checks that fixed-size
 * data is a whole number of cells and that var-size offsets are
 * non-decreasing and inside the data; serialization writes enumeration
 * format version 0. For writers: the checks TileDB applies to an
 * enumeration it creates (distinct values, an attribute type that can
 * index them), and a hash index from a value's bytes to its index. */
#include <string.h>

#include "format_internal.h"
#include "tfs_alloc.h"

#define ENUMERATION_VERSION 0u

/* Version, names, type, cell_val_num, ordered flag and data size. */
static enum tfs_err parse_header(struct tfs__rd *r, struct tfs_enumeration *en)
{
	uint32_t version, n;
	enum tfs_err e;

	if ((e = tfs__u32(r, &version, "enumeration version")))
		return e;
	if (version > ENUMERATION_VERSION)
		return tfs__fail(r, TFS_E_UNSUPPORTED,
				 "unsupported enumeration version %u",
				 (unsigned)version);
	if ((e = tfs__u32(r, &n, "name length")) ||
	    (e = tfs__str(r, n, &en->name, "name")) ||
	    (e = tfs__u32(r, &n, "path name length")) ||
	    (e = tfs__str(r, n, &en->path_name, "path name")) ||
	    (e = tfs__u8(r, &en->type, "datatype")) ||
	    (e = tfs__u32(r, &en->cell_val_num, "cell_val_num")) ||
	    (e = tfs__bool(r, &en->ordered, "ordered flag")) ||
	    (e = tfs__u64(r, &en->data_size, "data size")))
		return e;
	if (!tfs_datatype_valid(en->type) || en->cell_val_num == 0)
		return tfs__bad(r, "invalid datatype %u or cell_val_num %u",
				en->type, (unsigned)en->cell_val_num);
	return TFS_E_OK;
}

/* Fixed-size values: the count follows from the data size. */
static enum tfs_err count_fixed(struct tfs__rd *r, struct tfs_enumeration *en)
{
	uint64_t cell =
		(uint64_t)tfs_datatype_size(en->type) * en->cell_val_num;

	if (en->data_size % cell)
		return tfs__bad(r,
				"data size %llu is not a multiple of "
				"the cell size %llu",
				(unsigned long long)en->data_size,
				(unsigned long long)cell);
	en->value_num = en->data_size / cell;
	return TFS_E_OK;
}

/* Var-size values: offsets in order, from 0, within the data. */
static enum tfs_err parse_offsets(struct tfs__rd *r,
				  struct tfs_enumeration *en)
{
	uint64_t offsets_size;
	const uint8_t *p;
	enum tfs_err e;

	if ((e = tfs__u64(r, &offsets_size, "offsets size")))
		return e;
	if (offsets_size % 8)
		return tfs__bad(r, "offsets size %llu is not a multiple of 8",
				(unsigned long long)offsets_size);
	if ((e = tfs__take(r, offsets_size, &p, "offsets")))
		return e;
	en->value_num = offsets_size / 8;
	en->offsets = tfs_mallocn((size_t)en->value_num, sizeof(uint64_t));
	if (!en->offsets)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < en->value_num; i++) {
		en->offsets[i] = tfs_get_u64(p + 8 * i);
		if (en->offsets[i] > en->data_size ||
		    (i && en->offsets[i] < en->offsets[i - 1]))
			return tfs__bad(r,
					"offset %llu of value %llu is out of "
					"order or past the data (%llu bytes)",
					(unsigned long long)en->offsets[i],
					(unsigned long long)i,
					(unsigned long long)en->data_size);
	}
	if (en->value_num && en->offsets[0] != 0)
		return tfs__bad(r, "first offset is %llu, expected 0",
				(unsigned long long)en->offsets[0]);
	if (!en->value_num && en->data_size)
		return tfs__bad(r, "%llu data bytes but no values",
				(unsigned long long)en->data_size);
	return TFS_E_OK;
}

static enum tfs_err parse_body(struct tfs__rd *r, struct tfs_enumeration *en)
{
	const uint8_t *p;
	enum tfs_err e;

	if ((e = parse_header(r, en)))
		return e;
	if ((e = tfs__take(r, en->data_size, &p, "data")))
		return e;
	en->data = tfs_memdup(p, (size_t)en->data_size);
	if (!en->data)
		return tfs__fail(r, TFS_E_NOMEM, "out of memory");
	if (en->cell_val_num != TFS_VAR_NUM)
		e = count_fixed(r, en);
	else
		e = parse_offsets(r, en);
	if (e)
		return e;
	if (tfs_cur_left(&r->c))
		return tfs__bad(r, "%zu trailing bytes", tfs_cur_left(&r->c));
	return TFS_E_OK;
}

enum tfs_err tfs_enumeration_parse(struct tfs_enumeration *out,
				   const uint8_t *buf, size_t len,
				   struct tfs_diag *d)
{
	struct tfs__rd r;
	enum tfs_err e;

	memset(out, 0, sizeof(*out));
	tfs__rd_init(&r, buf, len, "enumeration", d);
	e = parse_body(&r, out);
	if (e)
		tfs_enumeration_release(out);
	return e;
}

enum tfs_err tfs_enumeration_serialize(struct tfs_buf *out,
				       const struct tfs_enumeration *en)
{
	size_t start = out->len;
	enum tfs_err e;

	if ((e = tfs_buf_append_u32(out, ENUMERATION_VERSION)) ||
	    (e = tfs__put_str32(out, en->name)) ||
	    (e = tfs__put_str32(out, en->path_name)) ||
	    (e = tfs_buf_append_u8(out, en->type)) ||
	    (e = tfs_buf_append_u32(out, en->cell_val_num)) ||
	    (e = tfs_buf_append_u8(out, en->ordered ? 1 : 0)) ||
	    (e = tfs_buf_append_u64(out, en->data_size)) ||
	    (e = tfs_buf_append(out, en->data, (size_t)en->data_size)))
		goto out_truncate;
	if (en->cell_val_num == TFS_VAR_NUM) {
		if ((e = tfs_buf_append_u64(out, en->value_num * 8)))
			goto out_truncate;
		for (uint64_t i = 0; i < en->value_num; i++)
			if ((e = tfs_buf_append_u64(out, en->offsets[i])))
				goto out_truncate;
	}
	return TFS_E_OK;

out_truncate:
	out->len = start;
	return e;
}

void tfs_enumeration_release(struct tfs_enumeration *en)
{
	if (!en)
		return;
	tfs_free(en->name);
	tfs_free(en->path_name);
	tfs_free(en->data);
	tfs_free(en->offsets);
	memset(en, 0, sizeof(*en));
}

bool tfs_enumeration_value(const struct tfs_enumeration *en, uint64_t i,
			   const uint8_t **p, uint64_t *len)
{
	if (i >= en->value_num)
		return false;
	if (en->cell_val_num == TFS_VAR_NUM) {
		uint64_t start, end;

		if (!en->offsets)
			return false;
		start = en->offsets[i];
		end = i + 1 < en->value_num ? en->offsets[i + 1] : en->data_size;
		if (start > end || end > en->data_size)
			return false;
		*p = en->data + start;
		*len = end - start;
		return true;
	}
	*len = tfs_datatype_size(en->type) * (uint64_t)en->cell_val_num;
	if (*len == 0 || i >= en->data_size / *len)
		return false;
	*p = en->data + i * *len;
	return true;
}

const char *tfs_enumeration_attr_problem(const struct tfs_attr *a,
					 const struct tfs_enumeration *en)
{
	uint64_t max;

	switch (a->type) {
	case TFS_INT8: max = INT8_MAX; break;
	case TFS_UINT8: max = UINT8_MAX; break;
	case TFS_INT16: max = INT16_MAX; break;
	case TFS_UINT16: max = UINT16_MAX; break;
	case TFS_INT32: max = INT32_MAX; break;
	case TFS_UINT32: max = UINT32_MAX; break;
	case TFS_INT64: max = INT64_MAX; break;
	case TFS_UINT64: max = UINT64_MAX; break;
	default:
		return "an attribute with an enumeration needs an integer "
		       "type (INT8 to UINT64)";
	}
	if (a->var || a->cell_val_num != 1)
		return "an attribute with an enumeration holds one value per "
		       "cell";
	/* TileDB's rule: the type's largest value must exceed the count. */
	if (en->value_num >= max)
		return "the attribute's type is too small to index every "
		       "value of the enumeration";
	return NULL;
}

/* ---- The hash index ------------------------------------------------------ */

struct slot {
	uint64_t hash;
	uint64_t index1; /* value index + 1; 0 = empty */
};

struct tfs_enum_index {
	const struct tfs_enumeration *en;
	uint64_t mask; /* slot count - 1, a power of two minus one */
	struct slot *slots;
};

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/* Eight bytes at a time: labels are short, and this stays cheap per CSV
 * field. */
static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)n, w = 0;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = mix(h ^ w);
	}
	w = 0;
	if (n)
		memcpy(&w, p, n);
	return mix(h ^ w);
}

enum tfs_err tfs_enum_index_new(const struct tfs_enumeration *en, uint64_t *dup,
				struct tfs_enum_index **out)
{
	struct tfs_enum_index *x;
	uint64_t cap = 8;

	*out = NULL;
	if (dup)
		*dup = UINT64_MAX;
	while (cap < 2 * en->value_num) {
		if (cap > SIZE_MAX / sizeof(struct slot) / 2)
			return TFS_E_NOMEM;
		cap *= 2;
	}
	x = tfs_callocn(1, sizeof(*x));
	if (!x)
		return TFS_E_NOMEM;
	x->slots = tfs_callocn((size_t)cap, sizeof(*x->slots));
	if (!x->slots) {
		tfs_free(x);
		return TFS_E_NOMEM;
	}
	x->en = en;
	x->mask = cap - 1;
	for (uint64_t i = 0; i < en->value_num; i++) {
		const uint8_t *p;
		uint64_t len, h, at;

		if (!tfs_enumeration_value(en, i, &p, &len)) {
			tfs_enum_index_free(x);
			return TFS_E_INVALID;
		}
		h = hash_bytes(p, (size_t)len);
		at = tfs_enum_index_find(x, p, (size_t)len);
		if (at != UINT64_MAX) {
			if (dup && *dup == UINT64_MAX)
				*dup = i;
			continue;
		}
		for (at = h & x->mask; x->slots[at].index1; at = (at + 1) & x->mask)
			;
		x->slots[at].hash = h;
		x->slots[at].index1 = i + 1;
	}
	*out = x;
	return TFS_E_OK;
}

uint64_t tfs_enum_index_find(const struct tfs_enum_index *x, const void *p,
			     size_t len)
{
	uint64_t h = hash_bytes(p, len);

	for (uint64_t at = h & x->mask; x->slots[at].index1;
	     at = (at + 1) & x->mask) {
		const struct slot *s = &x->slots[at];
		const uint8_t *v;
		uint64_t vlen;

		if (s->hash != h ||
		    !tfs_enumeration_value(x->en, s->index1 - 1, &v, &vlen))
			continue;
		if (vlen == len && (len == 0 || memcmp(v, p, len) == 0))
			return s->index1 - 1;
	}
	return UINT64_MAX;
}

void tfs_enum_index_free(struct tfs_enum_index *x)
{
	if (!x)
		return;
	tfs_free(x->slots);
	tfs_free(x);
}

enum tfs_err tfs_enumeration_check(const struct tfs_enumeration *en,
				   struct tfs_diag *d)
{
	const char *name = en->name ? en->name : "";
	struct tfs_enum_index *x;
	uint64_t dup;
	enum tfs_err e;

	if (!name[0] || strchr(name, '/'))
		return tfs_fail(d, TFS_E_INVALID,
				"enumeration '%s': names must not be empty or "
				"hold '/'",
				name);
	if (!tfs_datatype_valid(en->type) || en->cell_val_num == 0)
		return tfs_fail(d, TFS_E_INVALID,
				"enumeration '%s': invalid datatype %u or "
				"cell_val_num 0",
				name, (unsigned)en->type);
	if (en->cell_val_num == TFS_VAR_NUM) {
		if (en->value_num ? !en->offsets || en->offsets[0] != 0
				  : en->data_size != 0)
			return tfs_fail(d, TFS_E_INVALID,
					"enumeration '%s': offsets do not "
					"start at 0",
					name);
	} else {
		uint64_t cell = tfs_datatype_size(en->type) *
				(uint64_t)en->cell_val_num;

		if (en->offsets || en->data_size != en->value_num * cell ||
		    en->data_size / cell != en->value_num)
			return tfs_fail(d, TFS_E_INVALID,
					"enumeration '%s': %llu data bytes "
					"are not %llu values of %llu bytes",
					name, (unsigned long long)en->data_size,
					(unsigned long long)en->value_num,
					(unsigned long long)cell);
	}
	e = tfs_enum_index_new(en, &dup, &x);
	if (e == TFS_E_NOMEM)
		return tfs_fail(d, e, "enumeration '%s': out of memory", name);
	if (e)
		return tfs_fail(d, e,
				"enumeration '%s': offsets out of order or "
				"past the data",
				name);
	tfs_enum_index_free(x);
	if (dup != UINT64_MAX)
		return tfs_fail(d, TFS_E_INVALID,
				"enumeration '%s': value %llu repeats an "
				"earlier value",
				name, (unsigned long long)dup);
	return TFS_E_OK;
}
