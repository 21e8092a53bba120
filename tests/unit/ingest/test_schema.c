/* Schema JSON: every corpus array's schema rendered as schema.json shows
 * it (tools/array_json.c) parses back to an equal schema; bad documents
 * are refused naming the JSON path. Schema inference from CSV files. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array_json.h"
#include "ingest_internal.h"
#include "tfs_alloc.h"
#include "tilefs/tilefs.h"

static void render(struct tfs_buf *out, struct tfs_array *a)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	struct json_out j;

	json_out_init(&j, out);
	json_out_begin_object(&j);
	json_out_key(&j, "array_type");
	json_out_cstr(&j, s->array_type == TFS_SPARSE ? "sparse" : "dense");
	json_out_key(&j, "format_version");
	json_out_u64(&j, s->version);
	json_out_key(&j, "schema");
	cr_assert_eq(array_json_schema(&j, a), TFS_E_OK);
	json_out_key(&j, "fragment_count");
	json_out_u64(&j, 0);
	json_out_end_object(&j);
	cr_assert_eq(json_out_error(&j), TFS_E_OK);
}

static void same_pipeline(const struct tfs_pipeline *a, const struct tfs_pipeline *b,
			  const char *what)
{
	struct tfs_buf x, y;

	cr_assert_eq(a->count, b->count, "%s: filter count", what);
	cr_assert_eq(a->max_chunk_size, b->max_chunk_size, "%s: chunk", what);
	tfs_buf_init(&x, TFS_BUF_NO_MAX);
	tfs_buf_init(&y, TFS_BUF_NO_MAX);
	for (uint32_t i = 0; i < a->count; i++) {
		x.len = y.len = 0;
		cr_assert_eq(tfs_filter_describe(&x, &a->filters[i]), TFS_E_OK);
		cr_assert_eq(tfs_filter_describe(&y, &b->filters[i]), TFS_E_OK);
		cr_assert(x.len == y.len && memcmp(x.data, y.data, x.len) == 0,
			  "%s: filter %u: %.*s != %.*s", what, i, (int)x.len, x.data,
			  (int)y.len, y.data);
	}
	tfs_buf_release(&x);
	tfs_buf_release(&y);
}

static void same_schema(const struct tfs_schema *a, const struct tfs_schema *b,
			const char *name)
{
	cr_assert_eq(a->array_type, b->array_type, "%s", name);
	cr_assert_eq(a->version, b->version, "%s", name);
	cr_assert_eq(a->cell_order, b->cell_order, "%s", name);
	cr_assert_eq(a->tile_order, b->tile_order, "%s", name);
	cr_assert_eq(a->capacity, b->capacity, "%s", name);
	cr_assert_eq(a->allows_dups, b->allows_dups, "%s", name);
	cr_assert_eq(a->t1, b->t1, "%s", name);
	cr_assert_eq(a->t2, b->t2, "%s", name);
	same_pipeline(&a->coords_filters, &b->coords_filters, name);
	same_pipeline(&a->offsets_filters, &b->offsets_filters, name);
	same_pipeline(&a->validity_filters, &b->validity_filters, name);
	cr_assert_eq(a->dim_num, b->dim_num, "%s", name);
	for (uint32_t i = 0; i < a->dim_num; i++) {
		const struct tfs_dim *x = &a->dims[i], *y = &b->dims[i];
		size_t size = tfs_datatype_size(x->type);

		cr_assert_str_eq(x->name, y->name, "%s", name);
		cr_assert_eq(x->type, y->type, "%s.%s", name, x->name);
		cr_assert_eq(x->var, y->var, "%s.%s", name, x->name);
		cr_assert_eq(x->cell_val_num, y->cell_val_num, "%s.%s", name, x->name);
		cr_assert_eq(x->has_domain, y->has_domain, "%s.%s", name, x->name);
		if (x->has_domain)
			cr_assert(!memcmp(x->domain[0], y->domain[0], size) &&
					  !memcmp(x->domain[1], y->domain[1], size),
				  "%s.%s domain", name, x->name);
		cr_assert_eq(x->has_extent, y->has_extent, "%s.%s", name, x->name);
		if (x->has_extent)
			cr_assert(!memcmp(x->extent, y->extent, size), "%s.%s extent", name,
				  x->name);
		same_pipeline(&x->filters, &y->filters, x->name);
	}
	cr_assert_eq(a->attr_num, b->attr_num, "%s", name);
	for (uint32_t i = 0; i < a->attr_num; i++) {
		const struct tfs_attr *x = &a->attrs[i], *y = &b->attrs[i];

		cr_assert_str_eq(x->name, y->name, "%s", name);
		cr_assert_eq(x->type, y->type, "%s.%s", name, x->name);
		cr_assert_eq(x->var, y->var, "%s.%s", name, x->name);
		cr_assert_eq(x->cell_val_num, y->cell_val_num, "%s.%s", name, x->name);
		cr_assert_eq(x->nullable, y->nullable, "%s.%s", name, x->name);
		if (x->nullable)
			cr_assert_eq(x->fill_valid, y->fill_valid, "%s.%s", name, x->name);
		cr_assert_eq(x->fill_size, y->fill_size, "%s.%s fill size", name, x->name);
		cr_assert(!memcmp(x->fill, y->fill, x->fill_size), "%s.%s fill", name,
			  x->name);
		same_pipeline(&x->filters, &y->filters, x->name);
	}
	cr_assert_eq(a->has_current_domain, b->has_current_domain, "%s", name);
	for (uint32_t i = 0; a->has_current_domain && i < a->dim_num; i++) {
		const struct tfs_range *x = &a->current_domain[i], *y = &b->current_domain[i];

		cr_assert(x->lo_len == y->lo_len && x->hi_len == y->hi_len &&
				  !memcmp(x->lo, y->lo, x->lo_len) &&
				  !memcmp(x->hi, y->hi, x->hi_len),
			  "%s: current domain %u", name, i);
	}
}

Test(schema_json, corpus_round_trip)
{
	DIR *dir = opendir(TFS_CORPUS_DIR);
	struct dirent *de;
	unsigned same = 0, refused = 0;

	cr_assert(dir);
	while ((de = readdir(dir))) {
		char path[1024];
		struct tfs_array *a;
		struct tfs_diag d;
		struct tfs_buf json;
		struct tfs_schema s;
		enum tfs_err e;

		if (de->d_name[0] == '.' || strchr(de->d_name, '.'))
			continue;
		snprintf(path, sizeof(path), "%s/%s", TFS_CORPUS_DIR, de->d_name);
		tfs_diag_init(&d);
		if (tfs_array_open(path, NULL, &a, &d))
			continue; /* groups, the encrypted array */
		tfs_buf_init(&json, TFS_BUF_NO_MAX);
		render(&json, a);
		tfs_diag_init(&d);
		e = tfs_schema_from_json(&s, (const char *)json.data, json.len, &d);
		if (tfs_array_enumeration_count(a) || tfs_array_label_count(a)) {
			cr_assert_eq(e, TFS_E_INVALID, "%s", de->d_name);
			cr_assert(strstr(d.msg, "not supported in schema JSON"), "%s", d.msg);
			refused++;
		} else {
			cr_assert_eq(e, TFS_E_OK, "%s: %s\n%.*s", de->d_name, tfs_diag_msg(&d),
				     (int)json.len, json.data);
			same_schema(tfs_array_schema(a), &s, de->d_name);
			tfs_schema_release(&s);
			same++;
		}
		tfs_buf_release(&json);
		tfs_array_close(a);
	}
	closedir(dir);
	cr_assert_geq(same, 50, "%u schemas compared", same);
	cr_assert_geq(refused, 1);
}

static void bad(const char *json, const char *msg)
{
	struct tfs_schema s;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, json, strlen(json), &d), TFS_E_INVALID,
		     "%s", json);
	cr_assert_str_eq(d.msg, msg);
}

#define DIMS "\"dims\":[{\"name\":\"d\",\"type\":\"INT32\",\"domain\":[0,9],\"tile\":5}]"

Test(schema_json, minimal_gets_defaults)
{
	static const char json[] = "{\"array_type\":\"dense\"," DIMS
				   ",\"attrs\":[{\"name\":\"a\",\"type\":\"FLOAT64\"},"
				   "{\"name\":\"s\",\"type\":\"STRING_UTF8\",\"cell_val_num\":\"var\","
				   "\"nullable\":true}]}";
	struct tfs_schema s;
	struct tfs_diag d;
	double fill;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, json, strlen(json), &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(s.array_type, TFS_DENSE);
	cr_assert_eq(s.version, TFS_FORMAT_VERSION_WRITE);
	cr_assert_eq(s.capacity, 10000);
	cr_assert_eq(s.cell_order, TFS_ROW_MAJOR);
	cr_assert_eq(s.coords_filters.count, 1);
	cr_assert_eq(s.coords_filters.filters[0].type, TFS_FILTER_ZSTD);
	cr_assert_eq(s.offsets_filters.filters[0].type, TFS_FILTER_ZSTD);
	cr_assert_eq(s.validity_filters.filters[0].type, TFS_FILTER_RLE);
	cr_assert(s.dims[0].filters_inherited);
	cr_assert_eq(s.attrs[0].filters.count, 0);
	cr_assert_eq(s.attrs[0].fill_size, 8);
	memcpy(&fill, s.attrs[0].fill, 8);
	cr_assert(fill != fill, "default fill of FLOAT64 is NaN");
	cr_assert(s.attrs[1].var && s.attrs[1].nullable);
	tfs_schema_release(&s);
}

Test(schema_json, refusals)
{
	bad("{\"array_type\":", "schema JSON: line 1 (byte 14): unexpected end or trailing text");
	bad("{\"array_type\":\"dense\"} x",
	    "schema JSON: line 1 (byte 23): unexpected end or trailing text");
	bad("[1]", "schema JSON: $: an object expected");
	bad("{" DIMS ",\"attrs\":[]}", "schema JSON: $.array_type: missing");
	bad("{\"array_type\":\"ragged\"}",
	    "schema JSON: $.array_type: \"dense\" or \"sparse\" expected");
	bad("{\"array_type\":\"sparse\",\"attrs\":[]}",
	    "schema JSON: $.dims: a list of dimensions expected");
	bad("{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"d\",\"type\":\"INT33\"}],\"attrs\":[]}",
	    "schema JSON: $.dims[0].type: unknown datatype 'INT33'");
	bad("{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"d\",\"type\":\"INT8\",\"domain\":[0,300]}],\"attrs\":[]}",
	    "schema JSON: $.dims[0].domain[1]: '300': integer out of the type's range for INT8");
	bad("{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"d\",\"type\":\"INT8\"}],\"attrs\":[]}",
	    "schema JSON: $.dims[0].domain: missing");
	bad("{\"array_type\":\"dense\"," DIMS ",\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\","
	    "\"filters\":[\"ZSTD(level=x)\"]}]}",
	    "schema JSON: $.attrs[0].filters[0]: bad filter 'ZSTD(level=x)'");
	bad("{\"array_type\":\"dense\"," DIMS ",\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\","
	    "\"filters\":[\"SNAPPY\"]}]}",
	    "schema JSON: $.attrs[0].filters[0]: unknown filter 'SNAPPY'");
	bad("{\"array_type\":\"dense\"," DIMS ",\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\","
	    "\"cell_val_num\":2,\"fill\":[1]}]}",
	    "schema JSON: $.attrs[0].fill: 4 bytes do not make a cell of cell_val_num values");
	bad("{\"array_type\":\"dense\"," DIMS ",\"attrs\":[{\"name\":\"a\",\"type\":\"INT64\","
	    "\"cell_val_num\":2147483648}]}",
	    "schema JSON: $.attrs[0].cell_val_num: a cell of 2147483648 values of INT64 is too large");
	bad("{\"array_type\":\"dense\"," DIMS ",\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\","
	    "\"enumeration\":\"e\"}]}",
	    "schema JSON: $.attrs[0].enumeration: enumerations are not supported in schema JSON");
	bad("{\"schema\":{\"array_type\":\"dense\"," DIMS ",\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\","
	    "\"nullable\":1}]}}",
	    "schema JSON: $.schema.attrs[0].nullable: true or false expected");
}

Test(schema_json, rules_of_the_format)
{
	struct tfs_schema s;
	struct tfs_diag d;
	static const char dense_float[] =
		"{\"array_type\":\"dense\",\"dims\":[{\"name\":\"d\",\"type\":\"FLOAT64\","
		"\"domain\":[0,1],\"tile\":0.5}],\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\"}]}";
	static const char dup[] =
		"{\"array_type\":\"sparse\"," DIMS ",\"attrs\":[{\"name\":\"d\",\"type\":\"INT32\"}]}";

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, dense_float, strlen(dense_float), &d),
		     TFS_E_INVALID);
	cr_assert(strncmp(d.msg, "schema JSON: ", 13) == 0, "%s", d.msg);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, dup, strlen(dup), &d), TFS_E_INVALID);
	cr_assert(strncmp(d.msg, "schema JSON: ", 13) == 0, "%s", d.msg);
}

/* ---- Inference ---------------------------------------------------------- */

static char *temp_csv(const char *text)
{
	char tmpl[64];
	char *path = strdup(tfs_temp_template(tmpl, sizeof(tmpl), "/tmp", "tfs_infer_"));
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

Test(infer, column_types)
{
	char *path = temp_csv("i,f,b,dt,ts,ms,s,n,e,q,row\n"
			      "1,1.5,true,2020-01-01,2020-01-01T10:00:00Z,2020-01-01T10:00:00.5Z,x,,,\"\",7\n"
			      "-2,nan,FALSE,2021-12-31,2020-01-01,2020-01-01,y z,3,,q,8\n"
			      "99999999999,1,true,2020-02-29,2020-01-01 00:00:01,2020-01-01T00:00:00.123456Z,\xc3\xa9,4,,,9\n");
	struct tfs_schema s;
	struct tfs_diag d;
	uint64_t rows, hi;
	static const struct {
		const char *name;
		uint8_t type;
		bool nullable;
	} want[] = {
		{"i", TFS_INT64, false},
		{"f", TFS_FLOAT64, false},
		{"b", TFS_BOOL, false},
		{"dt", TFS_DATETIME_YEAR + 3, false},
		{"ts", TFS_DATETIME_YEAR + 6, false},
		{"ms", TFS_DATETIME_YEAR + 8, false},
		{"s", TFS_STRING_UTF8, false},
		{"n", TFS_INT64, true},
		{"e", TFS_STRING_UTF8, true},
		{"q", TFS_STRING_UTF8, true},
		{"row", TFS_INT64, false},
	};

	tfs_diag_init(&d);
	cr_assert_eq(tfs__schema_infer(&s, &rows, path, "t.csv", 5, NULL, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(rows, 3);
	cr_assert_eq(s.array_type, TFS_DENSE);
	cr_assert_eq(s.dim_num, 1);
	cr_assert_str_eq(s.dims[0].name, "row_1");
	cr_assert_eq(s.dims[0].type, TFS_UINT64);
	memcpy(&hi, s.dims[0].domain[1], 8);
	cr_assert_eq(hi, 2);
	cr_assert_eq(s.attr_num, 11);
	for (size_t i = 0; i < 11; i++) {
		cr_assert_str_eq(s.attrs[i].name, want[i].name);
		cr_assert_eq(s.attrs[i].type, want[i].type, "%s: %s", want[i].name,
			     tfs_datatype_name(s.attrs[i].type));
		cr_assert_eq(s.attrs[i].nullable, want[i].nullable, "%s", want[i].name);
		cr_assert_eq(s.attrs[i].filters.count, 1);
		cr_assert_eq(s.attrs[i].filters.filters[0].type, TFS_FILTER_ZSTD);
	}
	cr_assert(s.attrs[6].var);
	/* It is a schema the format accepts. */
	struct tfs_buf b;
	struct tfs_schema back;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_schema_serialize(&b, &s), TFS_E_OK);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_parse(&back, b.data, b.len, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_schema_release(&back);
	tfs_buf_release(&b);
	tfs_schema_release(&s);
	unlink(path);
	free(path);
}

Test(infer, refusals)
{
	static const struct {
		const char *csv, *msg;
	} t[] = {
		{"", "t.csv: line 1: no header line to name the columns"},
		{"a,,b\n", "t.csv: line 1, column 2 (''): a column needs a name (without NUL bytes)"},
		{"a,__b\n", "t.csv: line 1, column 2 ('__b'): names starting with '__' are reserved"},
		{"a,b,a\n", "t.csv: line 1, column 3 ('a'): duplicate column"},
		{"a,b\n1,2\n3\n", "t.csv: line 3, column 2 ('b'): row has 1 fields, the header 2"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *path = temp_csv(t[i].csv);
		struct tfs_schema s;
		struct tfs_diag d;
		uint64_t rows;

		tfs_diag_init(&d);
		cr_assert_eq(tfs__schema_infer(&s, &rows, path, "t.csv", 0, NULL, NULL, &d),
			     TFS_E_INVALID);
		cr_assert_str_eq(d.msg, t[i].msg);
		unlink(path);
		free(path);
	}
}

/* Every allocation failing in turn, for both parsers: out of memory or
 * success, nothing leaked, never a crash. */
Test(schema_json, every_allocation_failing)
{
	static const char json[] =
		"{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"d\",\"type\":\"INT64\","
		"\"domain\":[0,9],\"tile\":2},{\"name\":\"s\",\"type\":\"STRING_ASCII\"}],"
		"\"attrs\":[{\"name\":\"a\",\"type\":\"FLOAT32\",\"cell_val_num\":2,\"fill\":[1,2],"
		"\"filters\":[\"ZSTD(level=3)\"]},{\"name\":\"b\",\"type\":\"BLOB\","
		"\"cell_val_num\":\"var\",\"nullable\":true}],\"current_domain\":[[0,5],[\"a\",\"z\"]]}";
	unsigned failures = 0;

	for (long n = 0;; n++) {
		struct tfs_schema s;
		struct tfs_diag d;
		enum tfs_err e;

		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs_schema_from_json(&s, json, strlen(json), &d);
		tfs_alloc_fail_after(-1);
		if (e == TFS_E_OK) {
			cr_assert_eq(s.attr_num, 2);
			cr_assert(s.has_current_domain);
			tfs_schema_release(&s);
			break;
		}
		cr_assert_eq(e, TFS_E_NOMEM, "%ld: %s", n, tfs_diag_msg(&d));
		failures++;
		cr_assert_lt(n, 10000);
	}
	cr_assert_gt(failures, 3);
}

Test(infer, every_allocation_failing)
{
	char *path = temp_csv("a,b,c\n1,x,2020-01-01\n,y,\n");
	unsigned failures = 0;

	for (long n = 0;; n++) {
		struct tfs_schema s;
		struct tfs_diag d;
		uint64_t rows;
		enum tfs_err e;

		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs__schema_infer(&s, &rows, path, "t.csv", 2, NULL, NULL, &d);
		tfs_alloc_fail_after(-1);
		if (e == TFS_E_OK) {
			cr_assert_eq(rows, 2);
			cr_assert_eq(s.attr_num, 3);
			tfs_schema_release(&s);
			break;
		}
		cr_assert_eq(e, TFS_E_NOMEM, "%s", tfs_diag_msg(&d));
		failures++;
		cr_assert_lt(n, 10000);
	}
	cr_assert_gt(failures, 3);
	unlink(path);
	free(path);
}
