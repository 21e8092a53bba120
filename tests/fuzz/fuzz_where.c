/* Fuzz target: the filter grammar (render/where.h): the COND of
 * `where[COND]/` parsed against real schemas of the public corpus (with
 * their enumerations), opened once at startup (the corpus path is
 * compiled in; TFS_FUZZ_CORPUS overrides it).
 *
 * Input: u8 array choice (modulo the arrays), then the COND text. A
 * failure is TFS_E_INVALID (or NOMEM) with a position inside the text
 * and its code in the diagnostic; what parses names real fields, copies
 * to an equal tree, turns into TileDB's stored condition encoding and
 * parses back from it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tfs_format.h"
#include "where.h"

static const char *const array_names[] = {
	"sparse_dtypes",     "enumeration",      "dense_datetime_dim",
	"sparse_string_dim", "dense_nullable",   "dense_2d_rowmajor",
	"sparse_2d_float",   "dense_cellvalnum",
};
#define ARRAY_NUM (sizeof(array_names) / sizeof(array_names[0]))

static struct tfs_array *arrays[ARRAY_NUM];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *corpus = getenv("TFS_FUZZ_CORPUS");
	struct tfs_open_opts opts;

	(void)argc;
	(void)argv;
	if (!corpus)
		corpus = TFS_FUZZ_CORPUS;
	memset(&opts, 0, sizeof(opts));
	opts.threads = 1;
	for (size_t i = 0; i < ARRAY_NUM; i++) {
		char path[4096];
		struct tfs_diag d;

		snprintf(path, sizeof(path), "%s/%s", corpus, array_names[i]);
		tfs_diag_init(&d);
		if (tfs_array_open(path, &opts, &arrays[i], &d)) {
			fprintf(stderr, "fuzz_where: %s: %s\n", path, d.msg);
			exit(1);
		}
	}
	return 0;
}

/* Two trees are the same. */
static void check_equal(const struct tfs_where *a, const struct tfs_where *b)
{
	FUZZ_CHECK(a->op == b->op && a->value_len == b->value_len &&
		   a->value_num == b->value_num &&
		   a->child_num == b->child_num);
	FUZZ_CHECK(!a->field == !b->field);
	if (a->field)
		FUZZ_CHECK(strcmp(a->field, b->field) == 0);
	if (a->value_len)
		FUZZ_CHECK(memcmp(a->value, b->value, a->value_len) == 0);
	for (size_t i = 0; i < a->child_num; i++)
		check_equal(&a->children[i], &b->children[i]);
}

static void check_tree(const struct tfs_where *w, const struct tfs_schema *s,
		       unsigned depth)
{
	FUZZ_CHECK(depth <= TFS_WHERE_MAX_DEPTH + 1);
	if (!tfs_where_is_leaf(w->op)) {
		FUZZ_CHECK(w->child_num >= 1 && w->children);
		FUZZ_CHECK(w->op != TFS_WHERE_NOT || w->child_num == 1);
		for (size_t i = 0; i < w->child_num; i++)
			check_tree(&w->children[i], s, depth + 1);
		return;
	}
	if (w->op == TFS_WHERE_TRUE || w->op == TFS_WHERE_FALSE)
		return;
	FUZZ_CHECK(w->field && tfs_schema_field_index(s, w->field) >= 0);
	for (uint64_t k = 0; k < w->value_num; k++) {
		uint64_t len;
		const uint8_t *p = tfs_where_value_at(w, k, &len);

		FUZZ_CHECK(len <= w->value_len);
		fuzz_touch(p, len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct tfs_schema *s;
	struct tfs_array *a;
	struct tfs_where *w, *copy;
	struct tfs_qc_node back;
	struct tfs_diag d;
	struct tfs_buf b;
	size_t pos = SIZE_MAX;
	char *text;
	enum tfs_err e;

	if (!arrays[0])
		LLVMFuzzerInitialize(NULL, NULL);
	if (size < 1)
		return 0;
	a = arrays[data[0] % ARRAY_NUM];
	s = tfs_array_schema(a);
	/* An exact-size copy: ASan sees any read past the text. */
	text = malloc(size - 1 ? size - 1 : 1);
	FUZZ_CHECK(text);
	memcpy(text, data + 1, size - 1);
	tfs_diag_init(&d);
	e = tfsr_where_parse(s, a, text, size - 1, &w, &pos, &d);
	if (e) {
		FUZZ_CHECK(w == NULL && d.code == e);
		FUZZ_CHECK(e == TFS_E_INVALID || e == TFS_E_NOMEM);
		FUZZ_CHECK(e == TFS_E_NOMEM || pos <= size - 1);
		free(text);
		return 0;
	}
	check_tree(w, s, 0);
	if (tfs_where_clone(w, &copy) == TFS_E_OK) {
		check_equal(w, copy);
		tfs_where_free(copy);
	}
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	tfs_diag_init(&d);
	e = tfs_where_serialize(&b, w, &d);
	FUZZ_CHECK(e == TFS_E_OK || e == TFS_E_NOMEM);
	if (!e) {
		tfs_diag_init(&d);
		e = tfs_condition_parse(&back, b.data, b.len, NULL, &d);
		FUZZ_CHECK(e == TFS_E_OK || e == TFS_E_NOMEM);
		if (!e)
			tfs_condition_release(&back);
	}
	tfs_buf_release(&b);
	tfs_where_free(w);
	free(text);
	return 0;
}
