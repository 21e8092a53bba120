/* Fuzz target: array and group metadata files (format/metadata.md §1) on
 * a decoded payload. What parses serializes back to exactly the input. */
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
	struct tfs_meta_file m;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_meta_file_parse(&m, in->data, in->size, &d);
	if (!e)
		tfs_meta_file_release(&m);
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct tfs_meta_file m;
	struct tfs_diag d;
	struct tfs_buf b;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_meta_file_parse(&m, data, size, &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
	} else {
		for (size_t i = 0; i < m.count; i++) {
			const struct tfs_meta_kv *kv = &m.entries[i];

			/* Keys are NUL-terminated copies of key_len bytes. */
			FUZZ_CHECK(kv->key && kv->key[kv->key_len] == '\0');
			if (!kv->deleted)
				fuzz_touch(kv->value,
					   (size_t)kv->value_num *
						   tfs_datatype_size(kv->type));
		}
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		FUZZ_CHECK(tfs_meta_file_serialize(&b, &m) == TFS_E_OK);
		fuzz_check_same(b.data, b.len, data, size,
				"metadata serialized back");
		tfs_buf_release(&b);
		tfs_meta_file_release(&m);
	}
	fuzz_alloc_fault(parse_once, &in, e, (long)(fuzz_hash(data, size) % 32));
	return 0;
}
