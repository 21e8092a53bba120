/* Fuzz target: the selection grammar (render/selection.h, SPEC §3):
 * the SEL of `slice[SEL].EXT` parsed against real schemas and non-empty
 * domains of the public corpus, opened once at startup (the corpus path
 * is compiled in; TFS_FUZZ_CORPUS overrides it).
 *
 * Input: u8 array choice (low 7 bits, modulo the arrays; bit 7: as if the
 * array were empty, no non-empty domain), then the SEL text. What parses
 * selects inside the domain, lo <= hi, with a cell count for integer
 * dimensions; a slice name built around the text splits back to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "selection.h"
#include "tfs_render.h"
#include "tfs_format.h"

static const char *const array_names[] = {
	"dense_2d_rowmajor",   "sparse_string_dim", "dense_datetime_dim",
	"sparse_2d_float",     "sparse_mixed_dims", "dense_extreme_domains",
	"dense_uint_dims",     "sparse_dtypes",     "dense_3d",
	"sparse_hilbert",      "current_domain",    "empty_sparse",
};
#define ARRAY_NUM (sizeof(array_names) / sizeof(array_names[0]))

static struct {
	struct tfs_array *a;
	const struct tfs_schema *s;
	struct tfs_range *ned; /* NULL when empty */
} arrays[ARRAY_NUM];

static void check_sel(const struct tfsr_sel *sel, const struct tfs_schema *s)
{
	FUZZ_CHECK(sel->dim_num == s->dim_num);
	for (uint32_t k = 0; k < sel->dim_num; k++) {
		const struct tfsr_dim_sel *ds = &sel->dims[k];
		const struct tfs_dim *dim = &s->dims[k];

		FUZZ_CHECK(ds->stride >= 1);
		if (sel->empty) {
			FUZZ_CHECK(ds->count == 0);
			continue;
		}
		if (dim->var) {
			FUZZ_CHECK(ds->range.lo && ds->range.hi);
			fuzz_touch(ds->range.lo, ds->range.lo_len);
			fuzz_touch(ds->range.hi, ds->range.hi_len);
			FUZZ_CHECK(tfs_bytes_cmp(ds->range.lo, ds->range.lo_len,
						 ds->range.hi,
						 ds->range.hi_len) <= 0);
			continue;
		}
		FUZZ_CHECK(ds->range.lo == ds->lo_val &&
			   ds->range.hi == ds->hi_val);
		FUZZ_CHECK(tfs_value_cmp(dim->type, ds->lo_val, ds->hi_val) <= 0);
		if (dim->has_domain) {
			FUZZ_CHECK(tfs_value_cmp(dim->type, ds->lo_val,
						 dim->domain[0]) >= 0);
			FUZZ_CHECK(tfs_value_cmp(dim->type, ds->hi_val,
						 dim->domain[1]) <= 0);
		}
		if (tfs_datatype_class(dim->type) != TFS_CLASS_FLOAT)
			FUZZ_CHECK(ds->count >= 1);
	}
}

/* The SEL that selects the non-empty domain parses back to it. */
static void check_format_ned(const struct tfs_schema *s,
			     const struct tfs_range *ned)
{
	struct tfsr_sel *sel;
	struct tfs_diag d;
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfsr_sel_format_ned(&b, s, ned) == TFS_E_OK);
	tfs_diag_init(&d);
	if (tfsr_sel_parse((const char *)b.data, b.len, s, ned, &sel, &d)) {
		fprintf(stderr, "'%.*s': %s\n", (int)b.len, (char *)b.data,
			d.msg);
		fuzz_fail(__FILE__, __LINE__,
			  "the non-empty domain's SEL parses");
	}
	FUZZ_CHECK(!sel->empty);
	for (uint32_t k = 0; k < s->dim_num; k++) {
		size_t w = tfs_datatype_size(s->dims[k].type);

		if (s->dims[k].var)
			continue;
		FUZZ_CHECK(memcmp(sel->dims[k].lo_val, ned[k].lo, w) == 0);
		FUZZ_CHECK(memcmp(sel->dims[k].hi_val, ned[k].hi, w) == 0);
	}
	tfsr_sel_free(sel);
	tfs_buf_release(&b);
}

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
		struct tfs_range ned[TFSR_MAX_DIMS];
		struct tfs_diag d;

		snprintf(path, sizeof(path), "%s/%s", corpus, array_names[i]);
		tfs_diag_init(&d);
		if (tfs_array_open(path, &opts, &arrays[i].a, &d)) {
			fprintf(stderr, "fuzz_selection: %s: %s\n", path, d.msg);
			exit(1);
		}
		arrays[i].s = tfs_array_schema(arrays[i].a);
		if (tfs_array_non_empty_domain(arrays[i].a, ned)) {
			arrays[i].ned = calloc(arrays[i].s->dim_num,
					       sizeof(*ned));
			FUZZ_CHECK(arrays[i].ned);
			memcpy(arrays[i].ned, ned,
			       arrays[i].s->dim_num * sizeof(*ned));
			check_format_ned(arrays[i].s, arrays[i].ned);
		}
	}
	return 0;
}

static void check_slice_name(const uint8_t *text, size_t len)
{
	static const char *const exts[] = {"", ".txt", ".csv", ".json",
					   ".npy", ".offsets", ".validity"};
	const char *sel;
	enum tfsr_format fmt;
	size_t sel_len;
	char *name;

	if (memchr(text, 0, len))
		return;
	name = malloc(len + 32);
	FUZZ_CHECK(name);
	/* The text itself as a file name. */
	memcpy(name, text, len);
	name[len] = '\0';
	if (tfsr_slice_name_parse(name, &sel, &sel_len, &fmt))
		FUZZ_CHECK(sel == name + 6 && sel_len <= len - 6);
	/* Wrapped: the SEL comes back whole. */
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		snprintf(name, len + 32, "slice[%.*s]%s", (int)len,
			 (const char *)text, exts[i]);
		FUZZ_CHECK(tfsr_slice_name_parse(name, &sel, &sel_len, &fmt));
		FUZZ_CHECK(sel == name + 6 && sel_len == len &&
			   (unsigned)fmt == i);
	}
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct tfs_schema *s;
	const struct tfs_range *ned;
	struct tfsr_sel *sel;
	struct tfs_diag d;
	char *text;
	enum tfs_err e;

	if (!arrays[0].a)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size < 1)
		return 0;
	s = arrays[(data[0] & 0x7f) % ARRAY_NUM].s;
	ned = data[0] & 0x80 ? NULL : arrays[(data[0] & 0x7f) % ARRAY_NUM].ned;
	/* An exact-size copy: ASan sees any read past the text. */
	text = malloc(size - 1 ? size - 1 : 1);
	FUZZ_CHECK(text);
	memcpy(text, data + 1, size - 1);
	tfs_diag_init(&d);
	e = tfsr_sel_parse(text, size - 1, s, ned, &sel, &d);
	if (e) {
		FUZZ_CHECK(sel == NULL && d.code == e);
		FUZZ_CHECK(e == TFS_E_INVALID || e == TFS_E_NOMEM);
	} else {
		check_sel(sel, s);
		tfsr_sel_free(sel);
	}
	check_slice_name(data + 1, size - 1);
	free(text);
	return 0;
}
