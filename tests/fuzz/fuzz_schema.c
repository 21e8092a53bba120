/* Fuzz target: the array schema parser (format/schema.md) on a decoded
 * schema payload. A schema that parses must serialize back to exactly
 * its input (tfs_schema_serialize's contract), name its fields uniquely
 * and parse the same way when allocations fail. */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_buf.h"
#include "tfs_format.h"

#define NAME "__1700000000000_1700000000001_30dac931b5af9d06bcc29ad6006cb541"

struct input {
	const uint8_t *data;
	size_t size;
};

static enum tfs_err parse_once(void *arg)
{
	const struct input *in = arg;
	struct tfs_schema s;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_schema_parse(&s, in->data, in->size, NAME, &d);
	if (!e)
		tfs_schema_release(&s);
	return e;
}

static void check_schema(const struct tfs_schema *s, const uint8_t *data,
			 size_t size)
{
	struct tfs_buf b;

	FUZZ_CHECK(s->t1 == 1700000000000 && s->t2 == 1700000000001);
	FUZZ_CHECK(s->dim_num >= 1 && s->dims);
	for (uint32_t i = 0; i < s->dim_num; i++) {
		FUZZ_CHECK(s->dims[i].name);
		FUZZ_CHECK(tfs_schema_dim_index(s, s->dims[i].name) == (int)i);
	}
	for (uint32_t i = 0; i < s->attr_num; i++) {
		const struct tfs_attr *a = &s->attrs[i];

		FUZZ_CHECK(a->name);
		FUZZ_CHECK(tfs_schema_attr_index(s, a->name) == (int)i);
		FUZZ_CHECK(tfs_attr_cell_size(a) > 0);
		(void)tfs_offsets_embedded(a->type, &a->filters, s->version);
		/* Fill bytes are readable to their end (ASan). */
		if (a->fill_size)
			fuzz_touch(a->fill, a->fill_size);
	}
	for (uint32_t i = 0; s->has_current_domain && i < s->dim_num; i++)
		FUZZ_CHECK(s->current_domain[i].lo && s->current_domain[i].hi);

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfs_schema_serialize(&b, s) == TFS_E_OK);
	FUZZ_CHECK(b.len == size && memcmp(b.data, data, size) == 0);
	tfs_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct tfs_schema s;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_schema_parse(&s, data, size, NAME, &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
	} else {
		check_schema(&s, data, size);
		tfs_schema_release(&s);
	}
	fuzz_alloc_fault(parse_once, &in, e, (long)(fuzz_hash(data, size) % 48));
	return 0;
}
