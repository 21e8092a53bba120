/* The filter grammar (render/where.c) against corpus schemas, and the
 * translation of its trees into TileDB's stored condition encoding. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "render_fixture.h"
#include "tfs_bytes.h"
#include "tfs_format.h"
#include "where.h"

static struct tfs_diag diag;
static size_t err_pos;

static enum tfs_err parse(const char *text, struct tfs_where **out)
{
	tfs_diag_init(&diag);
	err_pos = 0;
	return tfsr_where_parse(tfs_array_schema(arr), arr, text, strlen(text),
				out, &err_pos, &diag);
}

static struct tfs_where *ok(const char *text)
{
	struct tfs_where *w = NULL;
	enum tfs_err e = parse(text, &w);

	cr_assert_eq(e, TFS_E_OK, "'%s': %s", text, diag.msg);
	cr_assert_not_null(w);
	return w;
}

/* Asserts text fails at byte pos (0-based) with msg in the message. */
static void fails(const char *text, size_t pos, const char *msg)
{
	struct tfs_where *w = (struct tfs_where *)1;
	enum tfs_err e = parse(text, &w);

	cr_assert_eq(e, TFS_E_INVALID, "'%s' parsed", text);
	cr_assert_null(w);
	cr_assert_eq(err_pos, pos, "'%s': position %zu, not %zu (%s)", text,
		     err_pos, pos, diag.msg);
	cr_assert(strstr(diag.msg, msg), "'%s': message '%s' lacks '%s'",
		  text, diag.msg, msg);
}

Test(where, comparisons_and_precedence, .fini = close_array)
{
	struct tfs_where *w;

	open_array("sparse_dtypes");
	/* a or b and c: or at the top, and below it. */
	w = ok("i8 > 3 or u16<=7 and not(f64 = 1.5)");
	cr_assert_eq(w->op, TFS_WHERE_OR);
	cr_assert_eq(w->child_num, 2);
	cr_assert_eq(w->children[0].op, TFS_WHERE_GT);
	cr_assert_str_eq(w->children[0].field, "i8");
	cr_assert_eq(w->children[0].value_len, 1);
	cr_assert_eq(w->children[0].value[0], 3);
	cr_assert_eq(w->children[1].op, TFS_WHERE_AND);
	cr_assert_eq(w->children[1].children[0].op, TFS_WHERE_LE);
	cr_assert_eq(tfs_get_u16(w->children[1].children[0].value), 7);
	cr_assert_eq(w->children[1].children[1].op, TFS_WHERE_NOT);
	cr_assert_eq(w->children[1].children[1].children[0].op, TFS_WHERE_EQ);
	tfs_where_free(w);

	/* A value on the left mirrors the operator. */
	w = ok("5 < u64");
	cr_assert_eq(w->op, TFS_WHERE_GT);
	cr_assert_eq(tfs_get_u64(w->value), 5);
	tfs_where_free(w);

	w = ok("ascii in (\"a\", \"bc\",\"\") AND ch is not null");
	cr_assert_eq(w->op, TFS_WHERE_AND);
	cr_assert_eq(w->children[0].op, TFS_WHERE_IN);
	cr_assert_eq(w->children[0].value_num, 3);
	cr_assert_eq(w->children[0].value_len, 3);
	cr_assert_eq(w->children[0].offsets[1], 1);
	cr_assert_eq(w->children[0].offsets[2], 3);
	cr_assert_eq(w->children[1].op, TFS_WHERE_IS_NOT_NULL);
	tfs_where_free(w);

	w = ok("startswith(utf8, \"ab\\\"c\") || flag = true");
	cr_assert_eq(w->op, TFS_WHERE_OR);
	cr_assert_eq(w->children[0].op, TFS_WHERE_STARTSWITH);
	cr_assert_eq(w->children[0].value_len, 4);
	cr_assert_eq(memcmp(w->children[0].value, "ab\"c", 4), 0);
	cr_assert_eq(w->children[1].value[0], 1);
	tfs_where_free(w);

	w = ok("dt >= 1970-01-01T00:00:01.5Z and xyz = \"1 2 3.5\" and "
	       "blob = 00ff and id not in (1,2)");
	cr_assert_eq(tfs_get_u64(w->children[0].value), 1500000000u);
	cr_assert_eq(w->children[1].value_len, 24);
	cr_assert_eq(w->children[2].value_len, 2);
	cr_assert_eq(w->children[2].value[1], 0xff);
	cr_assert_eq(w->children[3].op, TFS_WHERE_NOT_IN);
	tfs_where_free(w);

	/* u16 is not nullable: its null test is constant. */
	w = ok("u16 is null");
	cr_assert_eq(w->op, TFS_WHERE_FALSE);
	tfs_where_free(w);
}

Test(where, enumeration_labels_and_times, .fini = close_array)
{
	struct tfs_where *w;

	open_array("enumeration");
	w = ok("color = \"blue\" or color in (red, alpha)");
	cr_assert_eq(w->children[0].value_len, 1);
	cr_assert_eq(w->children[0].value[0], 2);
	cr_assert_eq(w->children[1].value[0], 0);
	cr_assert_eq(w->children[1].value[1], 3);
	tfs_where_free(w);
	/* levels is ordered: < works on its order; colors is not. */
	w = ok("level < 30");
	cr_assert_eq(tfs_get_u16(w->value), 2);
	tfs_where_free(w);
	fails("color < red", 8, "unordered enumeration");
	fails("color = purple", 8, "not a value of the enumeration");
	close_array();

	open_array("dense_datetime_dim");
	w = ok("t = 2020-01-02 and dur < 00:00:01.25 and when > 1970-01-01T00:00:00.001");
	cr_assert_eq(tfs_get_u64(w->children[0].value), 18263);
	cr_assert_eq(tfs_get_u64(w->children[1].value), 1250000000u);
	cr_assert_eq(tfs_get_u64(w->children[2].value), 1);
	tfs_where_free(w);
	fails("t = 2020-01-02T12:00", 4, "is not a value of 't'");
}

Test(where, bad_filters_say_where, .fini = close_array)
{
	open_array("sparse_dtypes");
	fails("", 0, "empty filter");
	fails("nope = 1", 0, "no field 'nope'");
	fails("i8 > 300", 5, "is not a value of 'i8'");
	fails("i8 >", 4, "expected a value");
	fails("i8 3", 3, "expected an operator");
	fails("(i8 = 1", 7, "expected ')'");
	fails("i8 = 1)", 6, "without its '('");
	fails("ascii = \"abc", 8, "closing");
	fails("i8 in (1 2)", 9, "expected ','");
	fails("u64 = -1", 6, "is not a value");
	fails("xyz = \"1 2\"", 6, "holds 2 values");
	fails("startswith(i8, \"a\")", 11, "needs a string field");
	fails("i8 = 1 garbage", 7, "expected and, or");
	cr_assert(strstr(diag.msg, "at 8:"), "message: %s", diag.msg);
}

Test(where, deep_nesting_is_refused, .fini = close_array)
{
	char text[512];
	size_t n = 0;

	open_array("sparse_dtypes");
	for (int i = 0; i < 100; i++)
		text[n++] = '(';
	snprintf(text + n, sizeof(text) - n, "i8 = 1");
	fails(text, 64, "nested deeper");
}

/* The stored form: NOT pushed into flipped operators, IS NULL as = NULL,
 * startswith as a range; it parses back. */
Test(where, stored_encoding, .fini = close_array)
{
	struct tfs_where *w;
	struct tfs_qc_node n, back;
	struct tfs_buf b;

	open_array("sparse_dtypes");
	w = ok("not (i8 > 3 and i32n is null) or startswith(ascii, \"a\xff\")");
	tfs_diag_init(&diag);
	cr_assert_eq(tfs_where_to_qc(&n, w, &diag), TFS_E_OK, "%s", diag.msg);
	cr_assert_eq(n.combine, TFS_QC_OR);
	cr_assert_eq(n.children[0].combine, TFS_QC_OR);
	cr_assert_eq(n.children[0].children[0].op, TFS_QC_LE);
	cr_assert_eq(n.children[0].children[1].op, TFS_QC_NE);
	cr_assert_eq(n.children[0].children[1].value_len, 0);
	cr_assert_eq(n.children[1].combine, TFS_QC_AND);
	cr_assert_eq(n.children[1].children[0].op, TFS_QC_GE);
	cr_assert_eq(n.children[1].children[1].op, TFS_QC_LT);
	cr_assert_eq(n.children[1].children[1].value_len, 1);
	cr_assert_eq(n.children[1].children[1].value[0], 'b');
	tfs_buf_init(&b, SIZE_MAX);
	cr_assert_eq(tfs_where_serialize(&b, w, &diag), TFS_E_OK);
	cr_assert_eq(tfs_condition_parse(&back, b.data, b.len, NULL, &diag),
		     TFS_E_OK, "%s", diag.msg);
	cr_assert_eq(back.children[1].children[1].value_len, 1);
	tfs_condition_release(&back);
	tfs_buf_release(&b);
	tfs_condition_release(&n);
	tfs_where_free(w);
}
