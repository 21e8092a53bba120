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

/* What the parser tolerates and the serializer normalizes (filters.md
 * §1), so a list holding it cannot come back byte for byte: a delta /
 * double-delta reinterpret byte is read whenever the options are 6 bytes
 * long and 5 are accepted at any version, while the serializer follows
 * the version rule; WebP padding bytes are ignored, written as zeros. */
static bool pipeline_lenient(const struct tfs_pipeline *p, uint32_t version)
{
	for (uint32_t i = 0; i < p->count; i++) {
		const struct tfs_filter *f = &p->filters[i];
		bool rule = (f->compressor == TFS_COMP_DELTA && version >= 19) ||
			    (f->compressor == TFS_COMP_DOUBLE_DELTA &&
			     version >= 20);

		if (f->type == TFS_FILTER_WEBP)
			return true;
		if ((f->compressor == TFS_COMP_DELTA ||
		     f->compressor == TFS_COMP_DOUBLE_DELTA) &&
		    f->has_reinterpret != rule)
			return true;
	}
	return false;
}

static bool schema_lenient(const struct tfs_schema *s)
{
	bool l = pipeline_lenient(&s->coords_filters, s->version) ||
		 pipeline_lenient(&s->offsets_filters, s->version) ||
		 pipeline_lenient(&s->validity_filters, s->version);

	/* An inherited (empty) dimension list stored with chunk size 0 is
	 * written with 65536 (tfs_dim.stored_max_chunk). */
	for (uint32_t i = 0; !l && i < s->dim_num; i++)
		l = s->dims[i].filters_inherited
			    ? s->version >= 5 && s->dims[i].stored_max_chunk == 0
			    : pipeline_lenient(&s->dims[i].filters, s->version);
	for (uint32_t i = 0; !l && i < s->attr_num; i++)
		l = pipeline_lenient(&s->attrs[i].filters, s->version);
	return l;
}

static void check_schema(const struct tfs_schema *s, const uint8_t *data,
			 size_t size)
{
	struct tfs_buf b;

	FUZZ_CHECK(s->t1 == 1700000000000 && s->t2 == 1700000000001);
	FUZZ_CHECK(s->dim_num >= 1 && s->dims);
	for (uint32_t i = 0; i < s->dim_num; i++) {
		FUZZ_CHECK(s->dims[i].name);
		/* Empty names (anonymous fields of very old arrays) may
		 * repeat; the parser refuses any other name used twice. */
		FUZZ_CHECK(!s->dims[i].name[0] ||
			   tfs_schema_dim_index(s, s->dims[i].name) == (int)i);
	}
	for (uint32_t i = 0; i < s->attr_num; i++) {
		const struct tfs_attr *a = &s->attrs[i];

		FUZZ_CHECK(a->name);
		FUZZ_CHECK(!a->name[0] ||
			   tfs_schema_attr_index(s, a->name) == (int)i);
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
	if (!schema_lenient(s)) {
		fuzz_check_same(b.data, b.len, data, size,
				"schema serialized back");
	} else {
		/* At least stable: what we write reads back the same. */
		struct tfs_schema back;
		struct tfs_buf b2;
		struct tfs_diag d;

		tfs_diag_init(&d);
		FUZZ_CHECK(tfs_schema_parse(&back, b.data, b.len, NAME, &d) ==
			   TFS_E_OK);
		tfs_buf_init(&b2, TFS_BUF_NO_MAX);
		FUZZ_CHECK(tfs_schema_serialize(&b2, &back) == TFS_E_OK);
		fuzz_check_same(b2.data, b2.len, b.data, b.len,
				"schema serialized twice");
		tfs_buf_release(&b2);
		tfs_schema_release(&back);
	}
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
