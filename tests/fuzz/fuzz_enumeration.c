/* Fuzz target: enumeration files (format/schema.md §8) on a decoded
 * payload. What parses serializes back to exactly the input, and its
 * values lie inside its data. */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_buf.h"
#include "tfs_datatype.h"
#include "tfs_format.h"

struct input {
	const uint8_t *data;
	size_t size;
};

static enum tfs_err parse_once(void *arg)
{
	const struct input *in = arg;
	struct tfs_enumeration en;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_enumeration_parse(&en, in->data, in->size, &d);
	if (!e)
		tfs_enumeration_release(&en);
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct tfs_enumeration en;
	struct tfs_diag d;
	struct tfs_buf b;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_enumeration_parse(&en, data, size, &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
	} else {
		FUZZ_CHECK(en.name && en.path_name);
		fuzz_touch(en.data, (size_t)en.data_size);
		if (en.cell_val_num == TFS_VAR_NUM) {
			for (uint64_t i = 0; i < en.value_num; i++)
				FUZZ_CHECK(en.offsets[i] <= en.data_size);
		} else {
			FUZZ_CHECK(en.value_num * en.cell_val_num *
					   tfs_datatype_size(en.type) ==
				   en.data_size);
		}
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		FUZZ_CHECK(tfs_enumeration_serialize(&b, &en) == TFS_E_OK);
		fuzz_check_same(b.data, b.len, data, size,
				"enumeration serialized back");
		tfs_buf_release(&b);
		tfs_enumeration_release(&en);
	}
	fuzz_alloc_fault(parse_once, &in, e, (long)(fuzz_hash(data, size) % 8));
	return 0;
}
