/* Schema JSON: every corpus array's schema rendered as schema.json shows
 * it (render/array_json.c) parses back to an equal schema, enumerations
 * and their values included; bad documents are refused naming the JSON
 * path. Schema inference from CSV files. */
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
		cr_assert_eq(!x->enumeration, !y->enumeration, "%s.%s", name, x->name);
		if (x->enumeration)
			cr_assert_str_eq(x->enumeration, y->enumeration, "%s.%s", name,
					 x->name);
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

/* The enumerations of s (from JSON, with their values) are the array's. */
static void same_enumerations(struct tfs_array *a, const struct tfs_schema *s,
			      const char *name)
{
	cr_assert_eq(s->enum_num, tfs_array_enumeration_count(a), "%s", name);
	for (size_t k = 0; k < tfs_array_enumeration_count(a); k++) {
		const struct tfs_enumeration *x = tfs_array_enumeration(a, k), *y = NULL;

		for (uint32_t i = 0; i < s->enum_num; i++)
			if (!strcmp(s->enums[i].name, x->name))
				y = s->enums[i].def;
		cr_assert(y, "%s: enumeration %s", name, x->name);
		cr_assert_null(s->enums[k].file, "%s: named at creation", name);
		cr_assert(x->type == y->type && x->cell_val_num == y->cell_val_num &&
				  x->ordered == y->ordered && x->value_num == y->value_num &&
				  x->data_size == y->data_size &&
				  !memcmp(x->data, y->data, (size_t)x->data_size),
			  "%s: enumeration %s", name, x->name);
		if (x->offsets)
			cr_assert(!memcmp(x->offsets, y->offsets, (size_t)x->value_num * 8),
				  "%s: enumeration %s offsets", name, x->name);
	}
}

Test(schema_json, corpus_round_trip)
{
	DIR *dir = opendir(TFS_CORPUS_DIR);
	struct dirent *de;
	unsigned same = 0, refused = 0, enumerated = 0;

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
		if (tfs_array_label_count(a)) {
			cr_assert_eq(e, TFS_E_INVALID, "%s", de->d_name);
			cr_assert(strstr(d.msg, "not supported in schema JSON"), "%s", d.msg);
			refused++;
		} else {
			cr_assert_eq(e, TFS_E_OK, "%s: %s\n%.*s", de->d_name, tfs_diag_msg(&d),
				     (int)json.len, json.data);
			same_schema(tfs_array_schema(a), &s, de->d_name);
			same_enumerations(a, &s, de->d_name);
			enumerated += s.enum_num > 0;
			tfs_schema_release(&s);
			same++;
		}
		tfs_buf_release(&json);
		tfs_array_close(a);
	}
	closedir(dir);
	cr_assert_geq(same, 50, "%u schemas compared", same);
	cr_assert_geq(enumerated, 1);
	cr_log_info("%u schemas compared (%u with enumerations), %u with dimension "
		    "labels refused", same, enumerated, refused);
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
	    "schema JSON: $.attrs[0].enumeration: no enumeration 'e' in enumerations");
	bad("{\"schema\":{\"array_type\":\"dense\"," DIMS ",\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\","
	    "\"nullable\":1}]}}",
	    "schema JSON: $.schema.attrs[0].nullable: true or false expected");
}

#define ENUM_ATTRS(type) \
	",\"attrs\":[{\"name\":\"c\",\"type\":\"" type "\",\"enumeration\":\"colors\"}]"
#define COLORS "{\"name\":\"colors\",\"type\":\"STRING_UTF8\",\"cell_val_num\":\"var\"," \
	       "\"ordered\":false,\"values\":[\"red\",\"\",\"grün\"]}"

Test(schema_json, enumerations)
{
	static const char json[] =
		"{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8")
		",\"enumerations\":[" COLORS ",{\"name\":\"levels\",\"type\":\"FLOAT64\","
		"\"values\":[0.5,\"NaN\",-1e300]},{\"name\":\"pairs\",\"type\":\"INT16\","
		"\"cell_val_num\":2,\"ordered\":true,\"values\":[[1,2],[2,1]]}]}";
	struct tfs_schema s;
	struct tfs_diag d;
	const struct tfs_enumeration *e;
	double f;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, json, strlen(json), &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(s.enum_num, 3);
	cr_assert_str_eq(s.attrs[0].enumeration, "colors");
	e = s.enums[0].def;
	cr_assert_str_eq(s.enums[0].name, "colors");
	cr_assert_null(s.enums[0].file);
	cr_assert(e && e->type == TFS_STRING_UTF8 && e->cell_val_num == TFS_VAR_NUM);
	cr_assert_eq(e->value_num, 3);
	cr_assert_eq(e->data_size, 8);
	cr_assert(!memcmp(e->data, "redgr\xc3\xbcn", 8));
	cr_assert(e->offsets[0] == 0 && e->offsets[1] == 3 && e->offsets[2] == 3);
	e = s.enums[1].def;
	cr_assert(e->type == TFS_FLOAT64 && e->cell_val_num == 1 && !e->ordered);
	cr_assert_eq(e->value_num, 3);
	cr_assert_null(e->offsets);
	memcpy(&f, e->data + 8, 8);
	cr_assert(f != f);
	e = s.enums[2].def;
	cr_assert(e->cell_val_num == 2 && e->ordered && e->value_num == 2 && e->data_size == 8);
	tfs_schema_release(&s);

	/* No enumerations, or an empty list. */
	static const char none[] = "{\"array_type\":\"dense\"," DIMS
				   ",\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\","
				   "\"enumeration\":null}],\"enumerations\":[]}";

	cr_assert_eq(tfs_schema_from_json(&s, none, strlen(none), &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert(s.enum_num == 0 && !s.attrs[0].enumeration);
	tfs_schema_release(&s);
}

Test(schema_json, enumeration_refusals)
{
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("FLOAT32") ",\"enumerations\":[" COLORS "]}",
	    "schema JSON: $.attrs[0].enumeration: an attribute with an enumeration needs an "
	    "integer type (INT8 to UINT64) ('c' is FLOAT32, 3 values)");
	bad("{\"array_type\":\"dense\"," DIMS
	    ",\"attrs\":[{\"name\":\"c\",\"type\":\"INT32\",\"cell_val_num\":2,"
	    "\"enumeration\":\"colors\"}],\"enumerations\":[" COLORS "]}",
	    "schema JSON: $.attrs[0].enumeration: an attribute with an enumeration holds one "
	    "value per cell ('c' is INT32, 3 values)");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("INT8") ",\"enumerations\":[{"
	    "\"name\":\"colors\",\"type\":\"INT8\",\"values\":[" /* 127 values */
	    "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,"
	    "30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,"
	    "57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,"
	    "84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100,101,102,103,104,105,106,107,"
	    "108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126]}]}",
	    "schema JSON: $.attrs[0].enumeration: the attribute's type is too small to index "
	    "every value of the enumeration ('c' is INT8, 127 values)");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8")
	    ",\"enumerations\":[{\"name\":\"colors\",\"type\":\"STRING_ASCII\","
	    "\"values\":[\"a\",\"b\",\"a\"]}]}",
	    "schema JSON: $.enumerations[0].values[2]: the same value as values[0]");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8")
	    ",\"enumerations\":[{\"name\":\"colors\",\"type\":\"INT32\","
	    "\"values\":[1,2,1]}]}",
	    "schema JSON: $.enumerations[0].values[2]: the same value as values[0]");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8")
	    ",\"enumerations\":[" COLORS "," COLORS "]}",
	    "schema JSON: $.enumerations[1].name: enumerations[0] has that name too");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8")
	    ",\"enumerations\":[{\"name\":\"a/b\",\"type\":\"INT32\",\"values\":[]}]}",
	    "schema JSON: $.enumerations[0].name: an enumeration name must not be empty or hold '/'");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8")
	    ",\"enumerations\":[{\"name\":\"colors\",\"type\":\"INT32\",\"values\":[1,\"x\"]}]}",
	    "schema JSON: $.enumerations[0].values[1]: a number expected");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8")
	    ",\"enumerations\":[{\"name\":\"colors\",\"type\":\"INT32\",\"values\":[1,null]}]}",
	    "schema JSON: $.enumerations[0].values[1]: a value expected, not null");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8")
	    ",\"enumerations\":[{\"name\":\"colors\",\"type\":\"INT32\"}]}",
	    "schema JSON: $.enumerations[0].values: a list of values expected");
	bad("{\"array_type\":\"dense\"," DIMS ENUM_ATTRS("UINT8") ",\"enumerations\":{}}",
	    "schema JSON: $.enumerations: a list of enumerations expected");
	bad("{\"array_type\":\"dense\",\"format_version\":19," DIMS ENUM_ATTRS("UINT8")
	    ",\"enumerations\":[" COLORS "]}",
	    "schema JSON: $.enumerations: enumerations need format version 20 or later");
	bad("{\"array_type\":\"dense\"," DIMS
	    ",\"attrs\":[{\"name\":\"c\",\"type\":\"UINT8\",\"enumeration\":7}]}",
	    "schema JSON: $.attrs[0].enumeration: the name of an enumeration or null expected");
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
	/* Room to grow: the whole type in whole tiles of 10000 rows. */
	memcpy(&hi, s.dims[0].domain[1], 8);
	cr_assert_eq(hi, UINT64_C(18446744073709549999));
	memcpy(&hi, s.dims[0].extent, 8);
	cr_assert_eq(hi, 10000);
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
		"\"cell_val_num\":\"var\",\"nullable\":true},{\"name\":\"c\",\"type\":\"UINT8\","
		"\"enumeration\":\"e\"}],\"current_domain\":[[0,5],[\"a\",\"z\"]],"
		"\"enumerations\":[{\"name\":\"e\",\"type\":\"STRING_ASCII\",\"values\":[\"x\",\"y\"]},"
		"{\"name\":\"f\",\"type\":\"INT32\",\"values\":[1,2,3]}]}";
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
			cr_assert_eq(s.attr_num, 3);
			cr_assert_eq(s.enum_num, 2);
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
