/* Fuzz target: group details files (format/groups.md §2) on a decoded
 * payload. What parses serializes back to the bytes it used (trailing
 * bytes are ignored, as TileDB does). */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_buf.h"
#include "tfs_format.h"

struct input {
	const uint8_t *data;
	size_t size;
};

static enum tfs_err parse_once(void *arg)
{
	const struct input *in = arg;
	struct tfs_group_details g;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_group_details_parse(&g, in->data, in->size, &d);
	if (!e)
		tfs_group_details_release(&g);
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct tfs_group_details g;
	struct tfs_diag d;
	struct tfs_buf b;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_group_details_parse(&g, data, size, &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
	} else {
		FUZZ_CHECK(g.version == 1 || g.version == 2);
		for (size_t i = 0; i < g.count; i++) {
			const struct tfs_group_entry *m = &g.entries[i];

			FUZZ_CHECK(m->uri);
			FUZZ_CHECK(m->name_set == (m->name != NULL));
			FUZZ_CHECK(m->object_type == TFS_GROUP_MEMBER_GROUP ||
				   m->object_type == TFS_GROUP_MEMBER_ARRAY);
		}
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		FUZZ_CHECK(tfs_group_details_serialize(&b, &g) == TFS_E_OK);
		fuzz_check_same(b.data, b.len, data,
				b.len <= size ? b.len : size,
				"group details serialized back");
		tfs_buf_release(&b);
		tfs_group_details_release(&g);
	}
	fuzz_alloc_fault(parse_once, &in, e, (long)(fuzz_hash(data, size) % 16));
	return 0;
}
