/* The delete condition evaluator (format/read.md §7 step 3): comparisons
 * per type, strings, IN / NOT_IN sets, NULL semantics, AND/OR/NOT, the
 * negated forms TileDB stores, and malformed trees refused cleanly. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../../core/read/tfs_sparse.h"

/* Hand-built trees: nodes live in static-duration test storage. */
static struct tfs_qc_node leaf(uint8_t op, const char *field,
			       const void *value, uint64_t len)
{
	struct tfs_qc_node n;

	memset(&n, 0, sizeof(n));
	n.is_value = true;
	n.op = op;
	n.field = (char *)field;
	n.value = (uint8_t *)value;
	n.value_len = len;
	return n;
}

static struct tfs_qc_node inner(uint8_t combine, struct tfs_qc_node *kids,
				uint64_t n)
{
	struct tfs_qc_node e;

	memset(&e, 0, sizeof(e));
	e.combine = combine;
	e.children = kids;
	e.child_num = n;
	return e;
}

static struct tfs_cond *compile_ok(const struct tfs_qc_node *root)
{
	struct tfs_cond *c;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_cond_compile(root, &c, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	return c;
}

static const struct tfs_cond_field int32_field = {TFS_INT32, 1, false, false};
static const struct tfs_cond_field int32_null = {TFS_INT32, 1, false, true};
static const struct tfs_cond_field str_field = {TFS_STRING_ASCII,
						TFS_VAR_NUM, true, true};

static bool eval1(const struct tfs_cond *c, const struct tfs_cond_field *f,
		  const void *p, uint64_t len, bool valid)
{
	struct tfs_cond_value v = {p, len, valid};
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_cond_check(c, f, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	return tfs_cond_eval(c, f, &v);
}

static bool eval_i32(uint8_t op, int32_t value, int32_t cell)
{
	struct tfs_qc_node n = leaf(op, "a", &value, 4);
	struct tfs_cond *c = compile_ok(&n);
	bool r = eval1(c, &int32_field, &cell, 4, true);

	tfs_cond_free(c);
	return r;
}

Test(condition, int32_comparisons)
{
	static const struct {
		uint8_t op;
		int32_t value, cell;
		bool expect;
	} cases[] = {
		{TFS_QC_LT, 5, 4, true},   {TFS_QC_LT, 5, 5, false},
		{TFS_QC_LE, 5, 5, true},   {TFS_QC_LE, 5, 6, false},
		{TFS_QC_GT, 5, 6, true},   {TFS_QC_GT, 5, 5, false},
		{TFS_QC_GE, 5, 5, true},   {TFS_QC_GE, 5, 4, false},
		{TFS_QC_EQ, -7, -7, true}, {TFS_QC_EQ, -7, 7, false},
		{TFS_QC_NE, -7, 7, true},  {TFS_QC_NE, -7, -7, false},
		{TFS_QC_LT, 0, INT32_MIN, true},
		{TFS_QC_GT, 0, INT32_MAX, true},
		{TFS_QC_ALWAYS_TRUE, 0, 1, true},
		{TFS_QC_ALWAYS_FALSE, 0, 1, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(eval_i32(cases[i].op, cases[i].value, cases[i].cell),
			     cases[i].expect, "case %zu", i);
}

Test(condition, unsigned_and_small_types)
{
	uint64_t big = UINT64_MAX - 1, cell = UINT64_MAX;
	int8_t neg = -3, ncell = -100;
	struct tfs_qc_node n = leaf(TFS_QC_GT, "u", &big, 8);
	struct tfs_qc_node m = leaf(TFS_QC_LT, "i", &neg, 1);
	const struct tfs_cond_field uf = {TFS_UINT64, 1, false, false};
	const struct tfs_cond_field i8 = {TFS_INT8, 1, false, false};
	struct tfs_cond *c = compile_ok(&n);

	cr_assert(eval1(c, &uf, &cell, 8, true));
	tfs_cond_free(c);
	c = compile_ok(&m);
	cr_assert(eval1(c, &i8, &ncell, 1, true));
	tfs_cond_free(c);
}

Test(condition, floats_and_nan)
{
	double v = 1.5, nan = NAN, cell = 1.25;
	const struct tfs_cond_field ff = {TFS_FLOAT64, 1, false, false};
	struct tfs_qc_node lt = leaf(TFS_QC_LT, "f", &v, 8);
	struct tfs_qc_node ne = leaf(TFS_QC_NE, "f", &v, 8);
	struct tfs_qc_node eq = leaf(TFS_QC_EQ, "f", &v, 8);
	struct tfs_cond *c;

	c = compile_ok(&lt);
	cr_assert(eval1(c, &ff, &cell, 8, true));
	cr_assert_not(eval1(c, &ff, &nan, 8, true));
	tfs_cond_free(c);
	c = compile_ok(&ne);
	cr_assert(eval1(c, &ff, &nan, 8, true), "NaN != 1.5");
	tfs_cond_free(c);
	c = compile_ok(&eq);
	cr_assert_not(eval1(c, &ff, &nan, 8, true));
	tfs_cond_free(c);
	{
		float fv = 2.5f, fc = 2.5f;
		const struct tfs_cond_field f32 = {TFS_FLOAT32, 1, false, false};
		struct tfs_qc_node e32 = leaf(TFS_QC_EQ, "g", &fv, 4);

		c = compile_ok(&e32);
		cr_assert(eval1(c, &f32, &fc, 4, true));
		tfs_cond_free(c);
	}
}

Test(condition, null_semantics)
{
	int32_t five = 5, cell = 9;
	struct tfs_qc_node ge = leaf(TFS_QC_GE, "a", &five, 4);
	struct tfs_qc_node lt = leaf(TFS_QC_LT, "a", &five, 4);
	struct tfs_qc_node ne = leaf(TFS_QC_NE, "a", &five, 4);
	struct tfs_qc_node eq_null = leaf(TFS_QC_EQ, "a", NULL, 0);
	struct tfs_qc_node ne_null = leaf(TFS_QC_NE, "a", NULL, 0);
	struct tfs_qc_node always = leaf(TFS_QC_ALWAYS_TRUE, "a", NULL, 0);
	struct tfs_cond *c;

	/* A NULL cell fails every comparison... */
	c = compile_ok(&ge);
	cr_assert_not(eval1(c, &int32_null, &cell, 4, false));
	cr_assert(eval1(c, &int32_null, &cell, 4, true));
	tfs_cond_free(c);
	c = compile_ok(&lt);
	cr_assert_not(eval1(c, &int32_null, &cell, 4, false));
	tfs_cond_free(c);
	c = compile_ok(&ne);
	cr_assert_not(eval1(c, &int32_null, &cell, 4, false));
	tfs_cond_free(c);
	/* ...except EQ against the NULL value. */
	c = compile_ok(&eq_null);
	cr_assert(eval1(c, &int32_null, &cell, 4, false));
	cr_assert_not(eval1(c, &int32_null, &cell, 4, true));
	tfs_cond_free(c);
	c = compile_ok(&ne_null);
	cr_assert_not(eval1(c, &int32_null, &cell, 4, false));
	cr_assert(eval1(c, &int32_null, &cell, 4, true));
	tfs_cond_free(c);
	c = compile_ok(&always);
	cr_assert(eval1(c, &int32_null, &cell, 4, false));
	tfs_cond_free(c);
	/* A non-nullable field ignores the validity flag. */
	c = compile_ok(&ge);
	cr_assert(eval1(c, &int32_field, &cell, 4, false));
	tfs_cond_free(c);
}

Test(condition, delete_where_lt_also_deletes_nulls)
{
	/* DELETE WHERE a < 5 is stored as a >= 5: cells survive iff true. */
	int32_t five = 5, three = 3, seven = 7;
	struct tfs_qc_node stored = leaf(TFS_QC_GE, "a", &five, 4);
	struct tfs_cond *c = compile_ok(&stored);

	cr_assert_not(eval1(c, &int32_null, &three, 4, true));
	cr_assert(eval1(c, &int32_null, &seven, 4, true));
	cr_assert_not(eval1(c, &int32_null, &seven, 4, false), "NULL deleted");
	tfs_cond_free(c);
}

static bool eval_str(uint8_t op, const char *value, const char *cell)
{
	struct tfs_qc_node n = leaf(op, "s", value, strlen(value));
	struct tfs_cond *c = compile_ok(&n);
	bool r = eval1(c, &str_field, cell, strlen(cell), true);

	tfs_cond_free(c);
	return r;
}

Test(condition, strings_bytewise_prefix_first)
{
	cr_assert(eval_str(TFS_QC_LT, "b", "a"));
	cr_assert(eval_str(TFS_QC_LT, "b", "ab"));
	cr_assert_not(eval_str(TFS_QC_LT, "b", "b"));
	cr_assert_not(eval_str(TFS_QC_LT, "b", "ba"));
	cr_assert(eval_str(TFS_QC_LT, "ba", "b"), "prefix sorts first");
	cr_assert(eval_str(TFS_QC_GT, "a", "\xc3\xa9"), "unsigned bytes");
	cr_assert(eval_str(TFS_QC_EQ, "alpha", "alpha"));
	cr_assert_not(eval_str(TFS_QC_EQ, "alpha", "alph"));
	cr_assert(eval_str(TFS_QC_NE, "alpha", "alphas"));
	/* An empty value is the NULL value: only NE holds on a cell. */
	cr_assert_not(eval_str(TFS_QC_GE, "", "x"));
	cr_assert(eval_str(TFS_QC_NE, "", "x"));
	cr_assert(eval_str(TFS_QC_LE, "k", "k"));
}

Test(condition, in_and_not_in)
{
	int32_t set[3] = {1, 3, 5};
	uint64_t offs[3] = {0, 4, 8};
	const char words[] = "xyyzzz";
	uint64_t woffs[3] = {0, 1, 3};
	struct tfs_qc_node in = leaf(TFS_QC_IN, "a", set, 12);
	struct tfs_qc_node not_in = leaf(TFS_QC_NOT_IN, "a", set, 12);
	struct tfs_qc_node sin = leaf(TFS_QC_IN, "s", words, 6);
	struct tfs_cond *c;

	in.set_offsets = not_in.set_offsets = offs;
	in.set_num = not_in.set_num = 3;
	sin.set_offsets = woffs;
	sin.set_num = 3;
	c = compile_ok(&in);
	for (int32_t v = 0; v < 7; v++)
		cr_assert_eq(eval1(c, &int32_null, &v, 4, true), v & 1 && v < 6,
			     "%d IN {1,3,5}", v);
	cr_assert_not(eval1(c, &int32_null, &set[0], 4, false));
	tfs_cond_free(c);
	c = compile_ok(&not_in);
	for (int32_t v = 0; v < 7; v++)
		cr_assert_eq(eval1(c, &int32_null, &v, 4, true), !(v & 1 && v < 6));
	cr_assert_not(eval1(c, &int32_null, &set[0], 4, false),
		      "NULL NOT IN fails too");
	tfs_cond_free(c);
	c = compile_ok(&sin);
	cr_assert(eval1(c, &str_field, "yy", 2, true));
	cr_assert(eval1(c, &str_field, "zzz", 3, true));
	cr_assert(eval1(c, &str_field, "x", 1, true));
	cr_assert_not(eval1(c, &str_field, "y", 1, true));
	cr_assert_not(eval1(c, &str_field, "zz", 2, true));
	tfs_cond_free(c);
}

/* The user's condition, for the De Morgan check below. */
static bool user_cond(int32_t a, const char *s)
{
	return a < 5 && strcmp(s, "x") == 0;
}

Test(condition, de_morgan_negated_forms)
{
	/* User: a < 5 AND s = "x"; stored: a >= 5 OR s != "x". */
	int32_t five = 5;
	struct tfs_qc_node kids[2];
	struct tfs_qc_node root;
	const struct tfs_cond_field fields[2] = {
		{TFS_INT32, 1, false, false},
		{TFS_STRING_ASCII, TFS_VAR_NUM, true, false},
	};
	static const char *const strs[] = {"x", "y", "", "xx"};
	struct tfs_cond *c;
	struct tfs_diag d;

	kids[0] = leaf(TFS_QC_GE, "a", &five, 4);
	kids[1] = leaf(TFS_QC_NE, "s", "x", 1);
	root = inner(TFS_QC_OR, kids, 2);
	c = compile_ok(&root);
	cr_assert_eq(tfs_cond_field_count(c), 2);
	cr_assert_str_eq(tfs_cond_field_name(c, 0), "a");
	cr_assert_str_eq(tfs_cond_field_name(c, 1), "s");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_cond_check(c, fields, &d), TFS_E_OK);
	for (int32_t a = 0; a < 10; a++) {
		for (size_t i = 0; i < 4; i++) {
			struct tfs_cond_value v[2] = {
				{(const uint8_t *)&a, 4, true},
				{(const uint8_t *)strs[i], strlen(strs[i]), true},
			};

			cr_assert_eq(tfs_cond_eval(c, fields, v),
				     !user_cond(a, strs[i]), "a=%d s=%s", a,
				     strs[i]);
		}
	}
	tfs_cond_free(c);
}

Test(condition, not_and_empty_combinations)
{
	int32_t five = 5, cell = 3;
	struct tfs_qc_node kid = leaf(TFS_QC_LT, "a", &five, 4);
	struct tfs_qc_node not_node = inner(TFS_QC_NOT, &kid, 1);
	struct tfs_qc_node and_empty = inner(TFS_QC_AND, NULL, 0);
	struct tfs_qc_node or_empty = inner(TFS_QC_OR, NULL, 0);
	struct tfs_qc_node nested[2];
	struct tfs_qc_node and_node;
	struct tfs_cond *c;
	struct tfs_cond_value v = {(const uint8_t *)&cell, 4, true};

	c = compile_ok(&not_node);
	cr_assert_not(eval1(c, &int32_field, &cell, 4, true));
	tfs_cond_free(c);
	c = compile_ok(&and_empty);
	cr_assert(tfs_cond_eval(c, &int32_field, &v));
	tfs_cond_free(c);
	c = compile_ok(&or_empty);
	cr_assert_not(tfs_cond_eval(c, &int32_field, &v));
	tfs_cond_free(c);
	/* AND(NOT(a < 5), a < 5) is false; the same field is numbered once. */
	nested[0] = not_node;
	nested[1] = kid;
	and_node = inner(TFS_QC_AND, nested, 2);
	c = compile_ok(&and_node);
	cr_assert_eq(tfs_cond_field_count(c), 1);
	cr_assert_not(eval1(c, &int32_field, &cell, 4, true));
	tfs_cond_free(c);
}

Test(condition, malformed_trees_fail_cleanly)
{
	int32_t five = 5;
	struct tfs_qc_node kids[2];
	struct tfs_qc_node bad_not, bad_op, bad_combine, bad_set;
	uint64_t offs[2] = {0, 9};
	struct tfs_cond *c = (struct tfs_cond *)&five;
	struct tfs_diag d;

	kids[0] = leaf(TFS_QC_LT, "a", &five, 4);
	kids[1] = kids[0];
	bad_not = inner(TFS_QC_NOT, kids, 2);
	bad_op = leaf(99, "a", &five, 4);
	bad_combine = inner(7, kids, 1);
	bad_set = leaf(TFS_QC_IN, "a", &five, 4);
	bad_set.set_offsets = offs;
	bad_set.set_num = 2;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_cond_compile(&bad_not, &c, &d), TFS_E_CORRUPT);
	cr_assert_null(c);
	cr_assert_neq(strlen(tfs_diag_msg(&d)), 0);
	cr_assert_eq(tfs_cond_compile(&bad_op, &c, &d), TFS_E_CORRUPT);
	cr_assert_eq(tfs_cond_compile(&bad_combine, &c, &d), TFS_E_CORRUPT);
	cr_assert_eq(tfs_cond_compile(&bad_set, &c, &d), TFS_E_CORRUPT);
}

Test(condition, value_sizes_checked_against_types)
{
	int64_t wide = 5;
	int32_t set[2] = {1, 2};
	uint64_t offs[2] = {0, 3};
	struct tfs_qc_node n = leaf(TFS_QC_LT, "a", &wide, 8);
	struct tfs_qc_node s = leaf(TFS_QC_IN, "a", set, 8);
	struct tfs_cond *c;
	struct tfs_diag d;

	s.set_offsets = offs;
	s.set_num = 2;
	tfs_diag_init(&d);
	c = compile_ok(&n);
	cr_assert_eq(tfs_cond_check(c, &int32_field, &d), TFS_E_CORRUPT);
	tfs_cond_free(c);
	c = compile_ok(&s);
	cr_assert_eq(tfs_cond_check(c, &int32_field, &d), TFS_E_CORRUPT);
	tfs_cond_free(c);
}

Test(condition, deep_trees_refused)
{
	enum { DEPTH = 300 };
	static struct tfs_qc_node chain[DEPTH + 1];
	int32_t five = 5;
	struct tfs_cond *c;
	struct tfs_diag d;

	chain[DEPTH] = leaf(TFS_QC_LT, "a", &five, 4);
	for (int i = DEPTH; i-- > 0;)
		chain[i] = inner(TFS_QC_NOT, &chain[i + 1], 1);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_cond_compile(&chain[0], &c, &d), TFS_E_CORRUPT);
	c = compile_ok(&chain[DEPTH - 100]);
	tfs_cond_free(c);
}
