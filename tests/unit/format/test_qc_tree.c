/* Delete/update condition trees (format/consolidated.md §6): the worked
 * example, the corpus .del file, built trees round-tripped, depth and size
 * bombs, broken sets and ops. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_test_util.h"
#include "tfs_alloc.h"

static const uint8_t example[] = {0x01, 0x03, 0x01, 0x00, 0x00, 0x00, 0x61,
				  0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
				  0x00, 0x05, 0x00, 0x00, 0x00};

Test(condition, worked_example)
{
	struct tfs_qc_node n;
	struct tfs_diag d;
	struct tfs_buf b;
	size_t consumed;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_condition_parse(&n, example, sizeof(example), NULL, &d),
		     TFS_E_OK, "%s", d.msg);
	cr_expect(n.is_value);
	cr_expect_eq(n.op, TFS_QC_GE);
	cr_expect_str_eq(n.field, "a");
	cr_expect_eq(n.value_len, 4);
	cr_expect_eq(tfs_get_u32(n.value), 5);
	cr_expect_eq(n.set_num, 0);
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_condition_serialize(&b, &n), TFS_E_OK);
	cr_expect_eq(b.len, sizeof(example));
	cr_expect_arr_eq(b.data, example, sizeof(example));
	tfs_condition_release(&n);
	tfs_condition_release(&n);

	/* .upd: update values follow the tree */
	cr_assert_eq(tfs_buf_append_u64(&b, 0), TFS_E_OK);
	cr_expect_eq(tfs_condition_parse(&n, b.data, b.len, NULL, &d),
		     TFS_E_CORRUPT);
	cr_assert_eq(tfs_condition_parse(&n, b.data, b.len, &consumed, &d),
		     TFS_E_OK);
	cr_expect_eq(consumed, sizeof(example));
	tfs_condition_release(&n);
	tfs_buf_release(&b);

	for (size_t k = 0; k < sizeof(example); k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_condition_parse(&n, example, k, &consumed, &d),
			     TFS_E_CORRUPT, "prefix %zu", k);
	}
}

Test(condition, corpus_delete)
{
	char *dir = tu_path(CORPUS, "delete_condition/__commits");
	size_t n, found = 0;
	char **names = tu_list(dir, &n);

	for (size_t i = 0; i < n; i++) {
		char *path;
		size_t len, plen;
		uint8_t *file, *payload;
		struct tfs_qc_node q;
		struct tfs_diag d;
		struct tfs_buf b;
		struct tfs_name_info ni;

		if (!strstr(names[i], ".del"))
			continue;
		path = tu_path(dir, names[i]);
		file = tu_read(path, &len);
		payload = tu_decode(file, len, NULL, &plen);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_condition_parse(&q, payload, plen, NULL, &d),
			     TFS_E_OK, "%s", d.msg);
		/* the stored (negated) condition of "a > 60": a <= 60 */
		cr_expect(q.is_value);
		cr_expect_eq(q.op, TFS_QC_LE);
		cr_expect_str_eq(q.field, "a");
		cr_expect_eq(tfs_get_u32(q.value), 60);
		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		cr_assert_eq(tfs_condition_serialize(&b, &q), TFS_E_OK);
		cr_expect_eq(b.len, plen);
		cr_expect_arr_eq(b.data, payload, plen);
		cr_assert_eq(tfs_name_parse(names[i], &ni), TFS_E_OK);
		cr_expect_eq(ni.t1, ni.t2);
		cr_expect_eq(ni.version, 22);
		tfs_buf_release(&b);
		tfs_condition_release(&q);
		tfs_free(payload);
		free(file);
		free(path);
		found++;
	}
	cr_expect_eq(found, 1);
	tu_free_list(names, n);
	free(dir);
}

static struct tfs_qc_node leaf(uint8_t op, const char *field, const void *v,
			       uint64_t len)
{
	struct tfs_qc_node n;

	memset(&n, 0, sizeof(n));
	n.is_value = true;
	n.op = op;
	n.field = (char *)field;
	n.value = (uint8_t *)v;
	n.value_len = len;
	return n;
}

Test(condition, tree_round_trip)
{
	int32_t five = 5;
	uint64_t set_offsets[3] = {0, 1, 1};
	struct tfs_qc_node kids[3], or_kids[2], not_kid, root, p;
	struct tfs_buf b, b2;
	struct tfs_diag d;

	or_kids[0] = leaf(TFS_QC_LT, "a", &five, 4);
	or_kids[1] = leaf(TFS_QC_IN, "s", "xyy", 3);
	or_kids[1].set_offsets = set_offsets;
	or_kids[1].set_num = 3; /* "x", "", "yy" */
	memset(&kids[0], 0, sizeof(kids[0]));
	kids[0].combine = TFS_QC_OR;
	kids[0].children = or_kids;
	kids[0].child_num = 2;
	not_kid = leaf(TFS_QC_EQ, "n", NULL, 0); /* null test */
	memset(&kids[1], 0, sizeof(kids[1]));
	kids[1].combine = TFS_QC_NOT;
	kids[1].children = &not_kid;
	kids[1].child_num = 1;
	kids[2] = leaf(TFS_QC_ALWAYS_FALSE, "", NULL, 0);
	memset(&root, 0, sizeof(root));
	root.combine = TFS_QC_AND;
	root.children = kids;
	root.child_num = 3;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	tfs_buf_init(&b2, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_condition_serialize(&b, &root), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_condition_parse(&p, b.data, b.len, NULL, &d), TFS_E_OK,
		     "%s", d.msg);
	cr_expect_not(p.is_value);
	cr_assert_eq(p.child_num, 3);
	cr_expect_eq(p.children[0].combine, TFS_QC_OR);
	cr_expect_eq(p.children[0].children[1].op, TFS_QC_IN);
	cr_expect_eq(p.children[0].children[1].set_num, 3);
	cr_expect_eq(p.children[0].children[1].set_offsets[2], 1);
	cr_expect_eq(p.children[1].combine, TFS_QC_NOT);
	cr_expect_eq(p.children[1].children[0].value_len, 0);
	cr_expect_eq(p.children[2].op, TFS_QC_ALWAYS_FALSE);
	cr_assert_eq(tfs_condition_serialize(&b2, &p), TFS_E_OK);
	cr_expect_eq(b.len, b2.len);
	cr_expect_arr_eq(b.data, b2.data, b.len);
	tfs_condition_release(&p);

	for (size_t k = 0; k < b.len; k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_condition_parse(&p, b.data, k, NULL, &d),
			     TFS_E_CORRUPT, "prefix %zu", k);
		for (int bit = 0; bit < 8; bit++) {
			b.data[k] ^= (uint8_t)(1u << bit);
			if (tfs_condition_parse(&p, b.data, b.len, NULL, &d) ==
			    TFS_E_OK)
				tfs_condition_release(&p);
			b.data[k] ^= (uint8_t)(1u << bit);
		}
	}

	/* broken sets: out of order, past the value, odd length */
	set_offsets[1] = 2;
	set_offsets[2] = 1;
	b.len = 0;
	cr_assert_eq(tfs_condition_serialize(&b, &root), TFS_E_OK);
	cr_expect_eq(tfs_condition_parse(&p, b.data, b.len, NULL, &d),
		     TFS_E_CORRUPT);
	set_offsets[1] = 1;
	set_offsets[2] = 4;
	b.len = 0;
	cr_assert_eq(tfs_condition_serialize(&b, &root), TFS_E_OK);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_condition_parse(&p, b.data, b.len, NULL, &d),
		     TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "set member 2 of 's'"), "%s", d.msg);
	set_offsets[2] = 1;
	/* NOT with two children, AND with none */
	kids[1].child_num = 2;
	kids[1].children = or_kids;
	b.len = 0;
	cr_assert_eq(tfs_condition_serialize(&b, &root), TFS_E_OK);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_condition_parse(&p, b.data, b.len, NULL, &d),
		     TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "NOT node with 2 children"), "%s", d.msg);
	root.child_num = 0;
	b.len = 0;
	cr_assert_eq(tfs_condition_serialize(&b, &root), TFS_E_OK);
	cr_expect_eq(tfs_condition_parse(&p, b.data, b.len, NULL, &d),
		     TFS_E_CORRUPT);
	tfs_buf_release(&b);
	tfs_buf_release(&b2);
}

Test(condition, bad_ops)
{
	uint8_t copy[sizeof(example)];
	struct tfs_qc_node n;
	struct tfs_diag d;
	static const uint8_t bad[] = {8, 100, 252, 255};

	for (size_t i = 0; i < sizeof(bad); i++) {
		memcpy(copy, example, sizeof(copy));
		copy[1] = bad[i];
		tfs_diag_init(&d);
		cr_expect_eq(tfs_condition_parse(&n, copy, sizeof(copy), NULL, &d),
			     TFS_E_CORRUPT, "op %u", bad[i]);
		cr_expect(strstr(d.msg, "invalid condition op"), "%s", d.msg);
	}
	memcpy(copy, example, sizeof(copy));
	copy[0] = 2;
	cr_expect_eq(tfs_condition_parse(&n, copy, sizeof(copy), NULL, &d),
		     TFS_E_CORRUPT);
	memcpy(copy, example, sizeof(copy));
	copy[1] = TFS_QC_IN; /* IN needs a set offsets length: truncated */
	cr_expect_eq(tfs_condition_parse(&n, copy, sizeof(copy), NULL, &d),
		     TFS_E_CORRUPT);
}

Test(condition, depth_bomb)
{
	struct tfs_buf b;
	struct tfs_qc_node n;
	struct tfs_diag d;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	for (int depth = 1; depth <= TFS_QC_MAX_DEPTH + 1; depth++) {
		b.len = 0;
		for (int i = 1; i < depth; i++) {
			cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u8(&b, TFS_QC_NOT), TFS_E_OK);
			cr_assert_eq(tfs_buf_append_u64(&b, 1), TFS_E_OK);
		}
		cr_assert_eq(tfs_buf_append(&b, example, sizeof(example)),
			     TFS_E_OK);
		tfs_diag_init(&d);
		if (depth <= TFS_QC_MAX_DEPTH) {
			cr_expect_eq(tfs_condition_parse(&n, b.data, b.len, NULL,
							 &d),
				     TFS_E_OK, "depth %d: %s", depth, d.msg);
			tfs_condition_release(&n);
		} else {
			cr_expect_eq(tfs_condition_parse(&n, b.data, b.len, NULL,
							 &d),
				     TFS_E_CORRUPT);
			cr_expect(strstr(d.msg, "deeper"), "%s", d.msg);
		}
	}
	/* a million nested NOTs: refused without recursing that deep */
	b.len = 0;
	for (int i = 0; i < 1000000; i++) {
		cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
		cr_assert_eq(tfs_buf_append_u8(&b, TFS_QC_NOT), TFS_E_OK);
		cr_assert_eq(tfs_buf_append_u64(&b, 1), TFS_E_OK);
	}
	cr_expect_eq(tfs_condition_parse(&n, b.data, b.len, NULL, &d),
		     TFS_E_CORRUPT);
	tfs_buf_release(&b);
}

Test(condition, node_count_bomb)
{
	struct tfs_buf b;
	struct tfs_qc_node n;
	struct tfs_diag d;
	uint64_t kids = TFS_QC_MAX_NODES; /* + the root = one too many */

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u8(&b, TFS_QC_OR), TFS_E_OK);
	cr_assert_eq(tfs_buf_append_u64(&b, kids), TFS_E_OK);
	for (uint64_t i = 0; i < kids; i++)
		cr_assert_eq(tfs_buf_append(&b, example, sizeof(example)),
			     TFS_E_OK);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_condition_parse(&n, b.data, b.len, NULL, &d),
		     TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "too large") || strstr(d.msg, "more than"),
		  "%s", d.msg);
	/* one fewer fits */
	tfs_put_u64(b.data + 2, kids - 1);
	b.len -= sizeof(example);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_condition_parse(&n, b.data, b.len, NULL, &d), TFS_E_OK,
		     "%s", d.msg);
	tfs_condition_release(&n);
	/* a child count larger than the bytes can hold */
	tfs_put_u64(b.data + 2, UINT64_MAX);
	cr_expect_eq(tfs_condition_parse(&n, b.data, b.len, NULL, &d),
		     TFS_E_CORRUPT);
	tfs_buf_release(&b);
}

/* Update commits: the tree, then `u64 n` and n (name, value) pairs
 * (consolidated.md §6), exactly to the end. */
Test(condition, update_values)
{
	struct tfs_update u, v;
	struct tfs_update_value vals[2];
	struct tfs_diag d;
	struct tfs_buf b, c;
	uint8_t seven[4] = {7, 0, 0, 0};

	memset(&u, 0, sizeof(u));
	tfs_diag_init(&d);
	cr_assert_eq(tfs_condition_parse(&u.cond, example, sizeof(example), NULL,
					 &d),
		     TFS_E_OK);
	vals[0].field = "a";
	vals[0].value = seven;
	vals[0].value_len = 4;
	vals[1].field = "s";
	vals[1].value = (uint8_t *)"";
	vals[1].value_len = 0;
	u.values = vals;
	u.value_num = 2;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	tfs_buf_init(&c, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_update_serialize(&b, &u), TFS_E_OK);
	cr_assert_eq(b.len, sizeof(example) + 8 + (8 + 1 + 8 + 4) + (8 + 1 + 8));
	cr_assert_eq(tfs_update_parse(&v, b.data, b.len, &d), TFS_E_OK, "%s",
		     d.msg);
	cr_expect_eq(v.cond.op, TFS_QC_GE);
	cr_assert_eq(v.value_num, 2);
	cr_expect_str_eq(v.values[0].field, "a");
	cr_expect_eq(v.values[0].value_len, 4);
	cr_expect_eq(tfs_get_u32(v.values[0].value), 7);
	cr_expect_str_eq(v.values[1].field, "s");
	cr_expect_eq(v.values[1].value_len, 0);
	cr_assert_eq(tfs_update_serialize(&c, &v), TFS_E_OK);
	cr_expect_eq(c.len, b.len);
	cr_expect_arr_eq(c.data, b.data, b.len);
	tfs_update_release(&v);
	tfs_update_release(&v);
	for (size_t k = 0; k < b.len; k++) {
		tfs_diag_init(&d);
		cr_expect_eq(tfs_update_parse(&v, b.data, k, &d), TFS_E_CORRUPT,
			     "prefix %zu", k);
	}
	/* nothing may follow; a lying count is caught before allocating */
	cr_assert_eq(tfs_buf_append_u8(&b, 0), TFS_E_OK);
	cr_expect_eq(tfs_update_parse(&v, b.data, b.len, &d), TFS_E_CORRUPT);
	tfs_put_u64(b.data + sizeof(example), UINT64_MAX / 2);
	tfs_diag_init(&d);
	cr_expect_eq(tfs_update_parse(&v, b.data, b.len, &d), TFS_E_CORRUPT);
	cr_expect(strstr(d.msg, "update value count"), "%s", d.msg);
	tfs_condition_release(&u.cond);
	tfs_buf_release(&b);
	tfs_buf_release(&c);
}
