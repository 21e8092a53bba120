/* Fuzz target: delete and update conditions (format/consolidated.md §6)
 * on a decoded .del/.upd payload: whole-buffer parse (delete) and prefix
 * parse (update, *consumed). What parses serializes back to exactly the
 * bytes it used. */
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
	struct tfs_qc_node n;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_condition_parse(&n, in->data, in->size, NULL, &d);
	if (!e)
		tfs_condition_release(&n);
	return e;
}

static uint64_t check_tree(const struct tfs_qc_node *n, unsigned depth)
{
	uint64_t nodes = 1;

	FUZZ_CHECK(depth <= TFS_QC_MAX_DEPTH);
	if (n->is_value) {
		FUZZ_CHECK(n->field && n->child_num == 0);
		fuzz_touch(n->value, (size_t)n->value_len);
		for (uint64_t i = 0; i < n->set_num; i++)
			FUZZ_CHECK(n->set_offsets[i] <= n->value_len &&
				   (i == 0 ||
				    n->set_offsets[i] >= n->set_offsets[i - 1]));
		return nodes;
	}
	FUZZ_CHECK(n->child_num >= 1 &&
		   (n->combine != TFS_QC_NOT || n->child_num == 1));
	for (uint64_t i = 0; i < n->child_num; i++)
		nodes += check_tree(&n->children[i], depth + 1);
	return nodes;
}

static void check_roundtrip(const struct tfs_qc_node *n, const uint8_t *data,
			    size_t used)
{
	struct tfs_buf b;

	FUZZ_CHECK(check_tree(n, 1) <= TFS_QC_MAX_NODES);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfs_condition_serialize(&b, n) == TFS_E_OK);
	fuzz_check_same(b.data, b.len, data, used,
			"condition serialized back");
	tfs_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct tfs_qc_node n;
	struct tfs_diag d;
	size_t used;
	enum tfs_err e, whole;

	tfs_diag_init(&d);
	whole = tfs_condition_parse(&n, data, size, NULL, &d);
	if (whole) {
		FUZZ_CHECK(d.code == whole);
	} else {
		check_roundtrip(&n, data, size);
		tfs_condition_release(&n);
	}

	tfs_diag_init(&d);
	e = tfs_condition_parse(&n, data, size, &used, &d);
	if (e) {
		FUZZ_CHECK(d.code == e && used == 0);
	} else {
		FUZZ_CHECK(used <= size);
		FUZZ_CHECK(!whole == (used == size));
		check_roundtrip(&n, data, used);
		tfs_condition_release(&n);
	}
	fuzz_alloc_fault(parse_once, &in, whole,
			 (long)(fuzz_hash(data, size) % 32));
	return 0;
}
