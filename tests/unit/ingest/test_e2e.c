/* CSV ingest end to end: files written into copies of corpus arrays and
 * into new arrays of every datatype, read back through tfs_array_open /
 * tfs_query cell by cell; refusals leave the array as it was; a large
 * file with a tiny writer memory spills sorted runs; CSV files into
 * plain folders create arrays with inferred schemas. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingest_fixture.h"
#include "ingest_internal.h"
#include "tfs_mem.h"
#include "tilefs/tilefs.h"

TestSuite(e2e, .init = fx_tmp_make, .fini = fx_tmp_drop);

/* Every cell of the array's non-empty domain as text, fields as hex,
 * "NULL" for nulls, one ';' per cell. */
static void read_all(const char *path, struct tfs_buf *out, size_t *fragments)
{
	struct tfs_array *a;
	struct tfs_query *q;
	struct tfs_diag d;
	const struct tfs_batch *b;

	tfs_diag_init(&d);
	tfs_buf_init(out, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_array_open(path, NULL, &a, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	if (fragments)
		*fragments = tfs_array_fragment_count(a);
	cr_assert_eq(tfs_query_open(a, NULL, &q, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
		if (!b)
			break;
		for (uint64_t i = 0; i < b->cell_num; i++) {
			for (size_t k = 0; k < b->column_num; k++) {
				const struct tfs_column *c = &b->columns[k];
				const uint8_t *p;
				uint64_t len;

				cr_assert(!tfs_buf_printf(out, "%s%s=", k ? " " : "", c->name));
				if (c->nullable && c->validity && !c->validity[i]) {
					cr_assert(!tfs_buf_printf(out, "NULL"));
					continue;
				}
				if (c->var) {
					p = c->data + c->offsets[i];
					len = c->offsets[i + 1] - c->offsets[i];
				} else {
					len = tfs_datatype_size(c->type) * c->cell_val_num;
					p = c->data + i * len;
				}
				for (uint64_t j = 0; j < len; j++)
					cr_assert(!tfs_buf_printf(out, "%02x", p[j]));
			}
			cr_assert(!tfs_buf_append(out, ";", 1));
		}
	}
	cr_assert(!tfs_buf_append_u8(out, 0));
	tfs_query_close(q);
	tfs_array_close(a);
}

static enum tfs_err ingest(const char *array, const char *csv, struct tfs_diag *d,
			   struct tfs_ingest_result *r)
{
	struct tfs_ingest_opts o = {.display_name = "in.csv"};

	tfs_diag_init(d);
	return tfs_ingest_csv(array, csv, &o, r, d);
}

Test(e2e, into_a_corpus_sparse_array)
{
	char *arr = fx_copy_corpus("sparse_2d_int");
	char *csv = fx_write_str("a.csv", "s,a,y,x\nhello,5,98,99\n\"x,\"\"y\"\"\",-7,99,99\n");
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_buf all;
	size_t before, after;

	read_all(arr, &all, &before);
	tfs_buf_release(&all);
	cr_assert_eq(ingest(arr, csv, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(r.rows, 2);
	cr_assert_eq(r.write.cell_num, 2);
	cr_assert(!r.write.dense);
	read_all(arr, &all, &after);
	cr_assert_eq(after, before + 1);
	/* The last two cells in row-major order are ours. */
	cr_assert(strstr((const char *)all.data,
			 "x=63000000 y=62000000 a=05000000 s=68656c6c6f;"
			 "x=63000000 y=63000000 a=f9ffffff s=782c22792200;") == NULL);
	cr_assert(strstr((const char *)all.data,
			 "x=63000000 y=62000000 a=05000000 s=68656c6c6f;"
			 "x=63000000 y=63000000 a=f9ffffff s=782c227922;"),
		  "%s", (const char *)all.data);
	tfs_buf_release(&all);
	free(arr);
	free(csv);
}

/* The parser's buffers (the lexer's block, both batch sets) are counted
 * in the memory accountant while a file is ingested, and given back. */
Test(e2e, parser_buffers_are_counted)
{
	char *arr = fx_copy_corpus("sparse_2d_int");
	char *csv = fx_write_str("a.csv", "x,y,a,s\n1,2,3,abc\n4,5,6,de\n");
	struct tfs_ingest_result r;
	struct tfs_mem_stats st;
	struct tfs_diag d;

	tfs_mem_configure(tfs_mem_global(), (uint64_t)1 << 30, 0);
	cr_assert_eq(ingest(arr, csv, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_mem_get_stats(tfs_mem_global(), &st);
	/* At least the lexer's block and the batch sets' columns. */
	cr_expect_geq(st.high, (uint64_t)64 << 10, "high-water %" PRIu64,
		      st.high);
	cr_expect_eq(st.used, 0, "%" PRIu64 " bytes still counted", st.used);
	free(arr);
	free(csv);
}

Test(e2e, refused_file_leaves_the_array_as_it_was)
{
	char *arr = fx_copy_corpus("sparse_2d_int");
	char *bad_row = fx_write_str("b.csv", "x,y,a,s\n1,1,1,a\n2,2,zz,b\n");
	char *dups = fx_write_str("c.csv", "x,y,a,s\n1,1,1,a\n5,5,5,e\n1,1,2,b\n");
	char *domain = fx_write_str("d.csv", "x,y,a,s\n1,1,1,a\n1,100,2,b\n");
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_buf before, after;
	size_t nb, na;

	read_all(arr, &before, &nb);
	cr_assert_eq(ingest(arr, bad_row, &d, &r), TFS_E_INVALID);
	cr_assert_str_eq(d.msg, "in.csv: line 3, column 3 ('a'): not an integer");
	cr_assert_eq(ingest(arr, domain, &d, &r), TFS_E_RANGE);
	cr_assert_str_eq(d.msg, "in.csv: line 3, column 2 ('y'): coordinate outside the domain [0, 99]");
	cr_assert_eq(ingest(arr, dups, &d, &r), TFS_E_INVALID);
	cr_assert(strncmp(d.msg, "in.csv: ", 8) == 0, "%s", d.msg);
	cr_assert(strstr(d.msg, "line 2") && strstr(d.msg, "line 4"), "%s", d.msg);
	read_all(arr, &after, &na);
	cr_assert_eq(na, nb);
	cr_assert_str_eq((const char *)after.data, (const char *)before.data);
	tfs_buf_release(&before);
	tfs_buf_release(&after);
	free(arr);
	free(bad_row);
	free(dups);
	free(domain);
}

Test(e2e, empty_file_and_header_only)
{
	char *arr = fx_copy_corpus("sparse_2d_int");
	char *empty = fx_write_str("e.csv", "");
	char *header = fx_write_str("h.csv", "x,y,a,s\n");
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_buf all;
	size_t nb, na;

	read_all(arr, &all, &nb);
	tfs_buf_release(&all);
	cr_assert_eq(ingest(arr, empty, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(r.rows, 0);
	cr_assert_eq(ingest(arr, header, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(r.write.cell_num, 0);
	read_all(arr, &all, &na);
	cr_assert_eq(na, nb);
	tfs_buf_release(&all);
	free(arr);
	free(empty);
	free(header);
}

Test(e2e, dense_box_becomes_a_dense_fragment)
{
	char *arr = fx_copy_corpus("dense_cellvalnum");
	/* d in [1, 15]; rgb FLOAT32 x3, pair INT16 x2, code CHAR x4, bytes5
	 * UINT8 x5, vi INT32 var, vf FLOAT64 var. */
	char *csv = fx_write_str("a.csv",
			      "d,rgb,pair,code,bytes5,vi,vf\n"
			      "3,0.5 1 -2,1 -1,abcd,1 2 3 4 5,7,0.25 inf\n"
			      "2,0 0 0,0 0,wxyz,0 0 0 0 255,,nan\n");
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_buf all;

	cr_assert_eq(ingest(arr, csv, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(r.write.dense);
	read_all(arr, &all, NULL);
	cr_assert(strstr((const char *)all.data,
			 "d=02000000 rgb=000000000000000000000000 pair=00000000 code=7778797a "
			 "bytes5=00000000ff vi= vf=000000000000f87f;"
			 "d=03000000 rgb=0000003f0000803f000000c0 pair=0100ffff code=61626364 "
			 "bytes5=0102030405 vi=07000000 vf=000000000000d03f000000000000f07f;"),
		  "%s", (const char *)all.data);
	tfs_buf_release(&all);
	free(arr);
	free(csv);
}

static void create_from_json(const char *path, const char *json)
{
	struct tfs_schema s;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, json, strlen(json), &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_array_create(path, &s, NULL, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_schema_release(&s);
}

Test(e2e, every_datatype)
{
	static const struct {
		const char *type, *cvn, *text, *hex;
	} t[] = {
		{"INT8", "1", "-128", "80"},
		{"UINT8", "1", "255", "ff"},
		{"INT16", "1", "-2", "feff"},
		{"UINT16", "1", "65535", "ffff"},
		{"INT32", "1", "-2147483648", "00000080"},
		{"UINT32", "1", "4294967295", "ffffffff"},
		{"INT64", "1", "-1", "ffffffffffffffff"},
		{"UINT64", "1", "18446744073709551615", "ffffffffffffffff"},
		{"FLOAT32", "1", "0.1", "cdcccc3d"},
		{"FLOAT64", "1", "-0.1", "9a9999999999b9bf"},
		{"CHAR", "\"var\"", "\"a,b\"", "612c62"},
		{"STRING_ASCII", "\"var\"", "plain", "706c61696e"},
		{"STRING_UTF8", "\"var\"", "\xc3\xa9", "c3a9"},
		{"STRING_UTF16", "\"var\"", "ab", "6162"},
		{"STRING_UTF32", "\"var\"", "abcd", "61626364"},
		{"STRING_UCS2", "\"var\"", "ab", "6162"},
		{"STRING_UCS4", "\"var\"", "abcd", "61626364"},
		{"ANY", "\"var\"", "0a0b", "0a0b"},
		{"DATETIME_YEAR", "1", "1971", "0100000000000000"},
		{"DATETIME_MONTH", "1", "1970-02", "0100000000000000"},
		{"DATETIME_WEEK", "1", "1970-01-08", "0100000000000000"},
		{"DATETIME_DAY", "1", "1970-01-02", "0100000000000000"},
		{"DATETIME_HR", "1", "1970-01-01T01Z", "0100000000000000"},
		{"DATETIME_MIN", "1", "1970-01-01T00:01Z", "0100000000000000"},
		{"DATETIME_SEC", "1", "1970-01-01T00:00:01Z", "0100000000000000"},
		{"DATETIME_MS", "1", "1970-01-01T00:00:00.001Z", "0100000000000000"},
		{"DATETIME_US", "1", "1970-01-01T00:00:00.000001Z", "0100000000000000"},
		{"DATETIME_NS", "1", "1970-01-01T00:00:00.000000001Z", "0100000000000000"},
		{"DATETIME_PS", "1", "1970-01-01T00:00:00.000000000001Z", "0100000000000000"},
		{"DATETIME_FS", "1", "1970-01-01T00:00:00.000000000000001Z", "0100000000000000"},
		{"DATETIME_AS", "1", "1970-01-01T00:00:00.000000000000000001Z", "0100000000000000"},
		{"TIME_HR", "1", "01", "0100000000000000"},
		{"TIME_MIN", "1", "00:01", "0100000000000000"},
		{"TIME_SEC", "1", "00:00:01", "0100000000000000"},
		{"TIME_MS", "1", "00:00:00.001", "0100000000000000"},
		{"TIME_US", "1", "00:00:00.000001", "0100000000000000"},
		{"TIME_NS", "1", "00:00:00.000000001", "0100000000000000"},
		{"TIME_PS", "1", "00:00:00.000000000001", "0100000000000000"},
		{"TIME_FS", "1", "00:00:00.000000000000001", "0100000000000000"},
		{"TIME_AS", "1", "00:00:00.000000000000000001", "0100000000000000"},
		{"BLOB", "\"var\"", "00ff", "00ff"},
		{"BOOL", "1", "true", "01"},
		{"GEOM_WKB", "\"var\"", "0101", "0101"},
		{"GEOM_WKT", "\"var\"", "0102", "0102"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char name[32], json[1024], csv_text[512], want[512];
		char *arr, *csv;
		struct tfs_ingest_result r;
		struct tfs_diag d;
		struct tfs_buf all;

		snprintf(name, sizeof(name), "t%zu", i);
		arr = fx_path(name);
		snprintf(json, sizeof(json),
			 "{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"d\",\"type\":\"INT64\","
			 "\"domain\":[0,100],\"tile\":10}],\"attrs\":[{\"name\":\"v\",\"type\":\"%s\","
			 "\"cell_val_num\":%s},{\"name\":\"n\",\"type\":\"%s\",\"cell_val_num\":%s,"
			 "\"nullable\":true}]}",
			 t[i].type, t[i].cvn, t[i].type, t[i].cvn);
		create_from_json(arr, json);
		snprintf(csv_text, sizeof(csv_text), "d,v,n\n1,%s,\n2,%s,%s\n", t[i].text,
			 t[i].text, t[i].text);
		snprintf(name, sizeof(name), "t%zu.csv", i);
		csv = fx_write_str(name, csv_text);
		cr_assert_eq(ingest(arr, csv, &d, &r), TFS_E_OK, "%s: %s", t[i].type,
			     tfs_diag_msg(&d));
		read_all(arr, &all, NULL);
		snprintf(want, sizeof(want),
			 "d=0100000000000000 v=%s n=NULL;d=0200000000000000 v=%s n=%s;",
			 t[i].hex, t[i].hex, t[i].hex);
		cr_assert_str_eq((const char *)all.data, want, "%s", t[i].type);
		tfs_buf_release(&all);
		free(arr);
		free(csv);
	}
}

Test(e2e, large_file_spills)
{
	char *arr = fx_path("big");
	char *csv = fx_path("big.csv");
	FILE *f = fopen(csv, "w");
	struct tfs_ingest_opts o = {.display_name = "big.csv"};
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_array *a;
	struct tfs_query *q;
	const struct tfs_batch *b;
	uint64_t n = 200000, seen = 0;

	create_from_json(arr, "{\"array_type\":\"sparse\",\"dims\":["
			      "{\"name\":\"x\",\"type\":\"INT32\",\"domain\":[0,999],\"tile\":100},"
			      "{\"name\":\"y\",\"type\":\"INT32\",\"domain\":[0,999],\"tile\":100}],"
			      "\"attrs\":[{\"name\":\"v\",\"type\":\"FLOAT64\"}]}");
	cr_assert(f);
	fprintf(f, "x,y,v\n");
	/* Rows in a scrambled order, so the writer has to sort. */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = (i * 7919) % n;

		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ".5\n", k % 1000, k / 1000, k);
	}
	fclose(f);
	o.write.memory = 64 << 10;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv(arr, csv, &o, &r, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(r.rows, n);
	cr_assert_eq(r.write.cell_num, n);
	cr_assert_eq(tfs_array_open(arr, NULL, &a, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_query_open(a, NULL, &q, &d), TFS_E_OK);
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
		if (!b)
			break;
		for (uint64_t i = 0; i < b->cell_num; i++, seen++) {
			int32_t x, y;
			double v;

			memcpy(&x, b->columns[0].data + 4 * i, 4);
			memcpy(&y, b->columns[1].data + 4 * i, 4);
			memcpy(&v, b->columns[2].data + 8 * i, 8);
			/* Row-major: x slowest. */
			cr_assert_eq((uint64_t)x, seen / 200);
			cr_assert_eq((uint64_t)y, seen % 200);
			cr_assert_eq(v, (double)((uint64_t)y * 1000 + (uint64_t)x) + 0.5);
		}
	}
	cr_assert_eq(seen, n);
	tfs_query_close(q);
	tfs_array_close(a);
	free(arr);
	free(csv);
}

static void on_progress(const struct tfs_ingest_progress *p, void *arg)
{
	struct tfs_ingest_progress *last = arg;

	/* Passes in order; bytes only grow within a pass. */
	cr_assert_eq(p->passes, 2);
	cr_assert(p->pass == last->pass || p->pass == last->pass + 1);
	if (p->pass == last->pass)
		cr_assert_geq(p->bytes_done, last->bytes_done);
	cr_assert_leq(p->bytes_done, p->bytes_total);
	*last = *p;
}

Test(e2e, new_array_from_a_plain_csv)
{
	char *arr = fx_path("sales");
	char *csv = fx_write_str("sales.csv",
			      "item,qty,price,day,ok,note\n"
			      "apple,3,1.25,2024-01-02,true,\n"
			      "pear,,0.5,2024-01-03,false,\"ripe, soft\"\n");
	struct tfs_ingest_progress last = {0};
	struct tfs_ingest_opts o = {.display_name = "sales.csv", .progress = on_progress,
				    .progress_arg = &last};
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_buf all;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv_new(arr, csv, &o, &r, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert(r.created);
	cr_assert_eq(r.rows, 2);
	cr_assert(r.write.dense);
	cr_assert_eq(last.pass, 2);
	cr_assert_eq(last.rows, 2);
	cr_assert_eq(last.bytes_done, last.bytes_total);
	read_all(arr, &all, NULL);
	cr_assert_str_eq((const char *)all.data,
			 "row=0000000000000000 item=6170706c65 qty=0300000000000000 "
			 "price=000000000000f43f day=0c4d000000000000 ok=01 note=NULL;"
			 "row=0100000000000000 item=70656172 qty=NULL "
			 "price=000000000000e03f day=0d4d000000000000 ok=00 "
			 "note=726970652c20736f6674;");
	tfs_buf_release(&all);
	/* An existing array is not replaced. */
	memset(&last, 0, sizeof(last));
	cr_assert_eq(tfs_ingest_csv_new(arr, csv, &o, &r, &d), TFS_E_EXISTS);
	cr_assert(!r.created);
	read_all(arr, &all, NULL);
	cr_assert(strstr((const char *)all.data, "item=70656172"));
	tfs_buf_release(&all);
	free(arr);
	free(csv);
}

/* Files without the dimension's column append after the last row; a
 * header alone writes nothing; a file whose columns do not match, or
 * that would leave the domain, is refused and changes nothing. */
Test(e2e, csv_without_dimension_appends)
{
	char *arr = fx_path("grow");
	char *first = fx_write_str("first.csv", "k,v\n1,a\n2,b\n");
	char *more = fx_write_str("more.csv", "v,k\nc,3\n");
	char *none = fx_write_str("none.csv", "k,v\n");
	char *bad = fx_write_str("bad.csv", "k,w\n4,d\n");
	char *full_arr = fx_copy_corpus("dense_1d");
	char *full_csv = fx_write_str("full.csv", "a,b\n1,2.5\n");
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_buf all;
	size_t frags;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv_new(arr, first, NULL, &r, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(ingest(arr, more, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(r.rows, 1);
	cr_assert(r.write.dense);
	cr_assert_eq(ingest(arr, more, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(ingest(arr, none, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(r.rows, 0);
	cr_assert_eq(ingest(arr, bad, &d, &r), TFS_E_INVALID);
	cr_assert_str_eq(d.msg, "in.csv: line 1: the columns 'k,w' are not the "
				"array's 'k,v' (in any order; rows without "
				"'row' are appended)");
	read_all(arr, &all, &frags);
	cr_assert_eq(frags, 3);
	cr_assert_str_eq((const char *)all.data,
			 "row=0000000000000000 k=0100000000000000 v=61;"
			 "row=0100000000000000 k=0200000000000000 v=62;"
			 "row=0200000000000000 k=0300000000000000 v=63;"
			 "row=0300000000000000 k=0300000000000000 v=63;");
	tfs_buf_release(&all);
	/* dense_1d is written up to the end of its domain [1, 100]. */
	cr_assert_eq(ingest(full_arr, full_csv, &d, &r), TFS_E_RANGE);
	cr_assert_str_eq(d.msg, "in.csv: 1 rows to append after the last one "
				"leave the domain of 'd'");
	free(arr);
	free(first);
	free(more);
	free(none);
	free(bad);
	free(full_arr);
	free(full_csv);
}

Test(e2e, new_array_removed_when_the_ingest_fails)
{
	char *arr = fx_path("t");
	/* A ragged row: refused by the inference pass already. */
	char *csv = fx_write_str("t.csv", "a,b\n1,2\n3\n");
	struct tfs_ingest_result r;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv_new(arr, csv, NULL, &r, &d), TFS_E_INVALID);
	cr_assert(strstr(d.msg, "line 3"), "%s", d.msg);
	cr_assert_neq(access(arr, F_OK), 0);
	free(arr);
	free(csv);
}

/* A storage failure at every call of tfs_ingest_csv_new in turn: it
 * either succeeds with the whole array or leaves no folder behind. */
Test(e2e, new_array_removed_at_every_storage_failure)
{
	char *csv = fx_write_str("f.csv", "a,b\n1,x\n2,y\n3,\n");
	struct tfs_vfs *posix, *faulty;
	unsigned long total;
	unsigned failed = 0, ok = 0;

	cr_assert_eq(tfs_vfs_posix_new(&posix), TFS_E_OK);
	cr_assert_eq(tfs_vfs_faulty_new(posix, &faulty), TFS_E_OK);
	{
		char *arr = fx_path("probe");
		struct tfs_ingest_opts o = {.write.vfs = faulty, .write.threads = 1};
		struct tfs_ingest_result r;
		struct tfs_diag d;

		tfs_diag_init(&d);
		cr_assert_eq(tfs_ingest_csv_new(arr, csv, &o, &r, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		total = tfs_vfs_faulty_calls(faulty);
		free(arr);
	}
	cr_assert_gt(total, 5);
	for (unsigned long n = 0; n < total; n++) {
		char name[32];
		char *arr;
		struct tfs_vfs *fv;
		struct tfs_ingest_opts o = {.write.threads = 1};
		struct tfs_ingest_result r;
		struct tfs_diag d;
		enum tfs_err e;

		snprintf(name, sizeof(name), "n%lu", n);
		arr = fx_path(name);
		cr_assert_eq(tfs_vfs_faulty_new(posix, &fv), TFS_E_OK);
		tfs_vfs_faulty_arm(fv, TFS_FAULT_EIO, n, true);
		o.write.vfs = fv;
		tfs_diag_init(&d);
		e = tfs_ingest_csv_new(arr, csv, &o, &r, &d);
		if (e) {
			cr_assert_neq(access(arr, F_OK), 0, "call %lu: %s left behind (%s)", n,
				      arr, tfs_diag_msg(&d));
			cr_assert(!r.created);
			failed++;
		} else {
			struct tfs_buf all;

			read_all(arr, &all, NULL);
			cr_assert_str_eq((const char *)all.data,
					 "row=0000000000000000 a=0100000000000000 b=78;"
					 "row=0100000000000000 a=0200000000000000 b=79;"
					 "row=0200000000000000 a=0300000000000000 b=NULL;");
			tfs_buf_release(&all);
			ok++;
		}
		tfs_vfs_free(fv);
		free(arr);
	}
	cr_assert_gt(failed, 0);
	tfs_vfs_free(faulty);
	tfs_vfs_free(posix);
	free(csv);
}

Test(e2e, dense_rows_that_are_no_box_become_a_sparse_fragment)
{
	char *arr = fx_copy_corpus("dense_1d");
	char *csv = fx_write_str("a.csv", "d,a\n5,1\n");
	struct tfs_array *a;
	struct tfs_diag d;
	struct tfs_ingest_result r;
	const struct tfs_schema *s;
	char header[256] = "";
	FILE *f;

	/* Columns of dense_1d: the dimension and every attribute. */
	cr_assert_eq(tfs_array_open(arr, NULL, &a, &d), TFS_E_OK);
	s = tfs_array_schema(a);
	snprintf(header, sizeof(header), "%s", s->dims[0].name);
	for (uint32_t i = 0; i < s->attr_num; i++) {
		cr_assert(tfs_datatype_is_integer(s->attrs[i].type) ||
			  tfs_datatype_class(s->attrs[i].type) == TFS_CLASS_FLOAT);
		strncat(header, ",", sizeof(header) - strlen(header) - 1);
		strncat(header, s->attrs[i].name, sizeof(header) - strlen(header) - 1);
	}
	f = fopen(csv, "w");
	cr_assert(f);
	fprintf(f, "%s\n", header);
	for (int row = 0; row < 2; row++) {
		fprintf(f, "%d", row ? 7 : 3);
		for (uint32_t i = 0; i < s->attr_num; i++)
			fprintf(f, ",%d", 40 + row);
		fprintf(f, "\n");
	}
	fclose(f);
	tfs_array_close(a);
	/* Cells 3 and 7: no box, so a sparse fragment in the dense array. */
	cr_assert_eq(ingest(arr, csv, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(!r.write.dense);
	cr_assert_eq(r.write.cell_num, 2);
	/* Both cells read back with their values, from the new fragment. */
	cr_assert_eq(tfs_array_open(arr, NULL, &a, &d), TFS_E_OK);
	for (int row = 0; row < 2; row++) {
		uint8_t at[8] = {0};
		struct tfs_range r1;
		struct tfs_query_opts qo = {.subarray = &r1};
		struct tfs_query *q;
		const struct tfs_batch *b;
		uint8_t type = tfs_array_schema(a)->dims[0].type;
		int64_t v = row ? 7 : 3;

		cr_assert(tfs_datatype_class(type) == TFS_CLASS_SIGNED);
		memcpy(at, &v, tfs_datatype_size(type));
		r1 = (struct tfs_range){.lo = at, .hi = at,
					.lo_len = tfs_datatype_size(type),
					.hi_len = tfs_datatype_size(type)};
		cr_assert_eq(tfs_query_open(a, &qo, &q, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK);
		cr_assert(b && b->cell_num == 1);
		for (size_t k = 0; k < b->column_num; k++) {
			const struct tfs_column *c = &b->columns[k];
			double got = tfs_datatype_class(c->type) == TFS_CLASS_FLOAT
					     ? tfs_value_as_f64(c->type, c->data)
					     : (double)tfs_value_as_i64(c->type, c->data);

			cr_assert_eq(got, c->is_dim ? (double)v : 40.0 + row, "%s", c->name);
		}
		tfs_query_close(q);
	}
	tfs_array_close(a);
	free(arr);
	free(csv);
}

Test(e2e, new_array_in_an_existing_folder)
{
	char *dir = fx_path("empty");
	char *full = fx_path("full");
	char *keep = fx_path("full/keep.txt");
	char *csv = fx_write_str("g.csv", "v\n1\n2\n");
	struct tfs_ingest_result r;
	struct tfs_diag d;
	FILE *f;

	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(mkdir(full, 0755), 0);
	f = fopen(keep, "w");
	cr_assert(f);
	fclose(f);
	/* An empty folder becomes the array. */
	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv_new(dir, csv, NULL, &r, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(r.rows, 2);
	/* A folder with something in it is left alone. */
	tfs_diag_init(&d);
	cr_assert_eq(tfs_ingest_csv_new(full, csv, NULL, &r, &d), TFS_E_EXISTS);
	cr_assert(strstr(d.msg, "exists and is not an empty folder"), "%s", d.msg);
	cr_assert_eq(access(keep, F_OK), 0);
	free(dir);
	free(full);
	free(keep);
	free(csv);
}

/* ---- Schema evolution and deletes ---------------------------------------- */

static enum tfs_err evolve_json(const char *path, const char *json, bool *changed,
				struct tfs_diag *d)
{
	struct tfs_schema s;
	enum tfs_err e;

	tfs_diag_init(d);
	cr_assert_eq(tfs_schema_from_json(&s, json, strlen(json), d), TFS_E_OK, "%s",
		     tfs_diag_msg(d));
	e = tfs_array_evolve(path, &s, NULL, changed, d);
	tfs_schema_release(&s);
	return e;
}

/* The names of the array's __schema/ files, joined by ' '. */
static size_t schema_files(const char *arr)
{
	char cmd[512];
	FILE *p;
	size_t n = 0;
	char line[256];

	snprintf(cmd, sizeof(cmd), "ls '%s/__schema' | grep -c '^__[0-9]'", arr);
	p = popen(cmd, "r");
	cr_assert(p);
	if (fgets(line, sizeof(line), p))
		n = (size_t)strtoul(line, NULL, 10);
	pclose(p);
	return n;
}

#define EV_DIMS "\"dims\":[{\"name\":\"d\",\"type\":\"INT64\",\"domain\":[0,100],\"tile\":10}]"

/* Attributes added and dropped: a new schema file; old cells read the
 * new attribute as its fill; changes that are no evolution are refused
 * and write nothing. */
Test(e2e, schema_evolution)
{
	char *arr = fx_path("ev");
	char *csv = fx_write_str("ev.csv", "d,a\n1,10\n");
	char *csv2 = fx_write_str("ev2.csv", "d,b\n2,2.5\n");
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_buf all;
	bool changed;

	create_from_json(arr, "{\"array_type\":\"sparse\"," EV_DIMS ",\"attrs\":["
			      "{\"name\":\"a\",\"type\":\"INT32\"}]}");
	cr_assert_eq(ingest(arr, csv, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(evolve_json(arr, "{\"array_type\":\"sparse\"," EV_DIMS ",\"attrs\":["
				      "{\"name\":\"a\",\"type\":\"INT32\"},"
				      "{\"name\":\"b\",\"type\":\"FLOAT64\",\"nullable\":true}]}",
				 &changed, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(changed);
	cr_assert_eq(schema_files(arr), 2);
	/* The same again: nothing written. */
	cr_assert_eq(evolve_json(arr, "{\"array_type\":\"sparse\"," EV_DIMS ",\"attrs\":["
				      "{\"name\":\"a\",\"type\":\"INT32\"},"
				      "{\"name\":\"b\",\"type\":\"FLOAT64\",\"nullable\":true}]}",
				 &changed, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert(!changed);
	cr_assert_eq(schema_files(arr), 2);
	read_all(arr, &all, NULL);
	cr_assert_str_eq((const char *)all.data,
			 "d=0100000000000000 a=0a000000 b=NULL;");
	tfs_buf_release(&all);
	/* Refused: a dimension, a kept attribute's type, no attribute. */
	cr_assert_eq(evolve_json(arr, "{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"d\","
				      "\"type\":\"INT64\",\"domain\":[0,200],\"tile\":10}],"
				      "\"attrs\":[{\"name\":\"a\",\"type\":\"INT32\"}]}",
				 &changed, &d),
		     TFS_E_INVALID);
	cr_assert(strstr(d.msg, "dimension 'd' differs"), "%s", d.msg);
	cr_assert_eq(evolve_json(arr, "{\"array_type\":\"sparse\"," EV_DIMS ",\"attrs\":["
				      "{\"name\":\"a\",\"type\":\"INT64\"}]}",
				 &changed, &d),
		     TFS_E_INVALID);
	cr_assert(strstr(d.msg, "attribute 'a' changes"), "%s", d.msg);
	cr_assert_eq(evolve_json(arr, "{\"array_type\":\"dense\"," EV_DIMS ",\"attrs\":["
				      "{\"name\":\"a\",\"type\":\"INT32\"}]}",
				 &changed, &d),
		     TFS_E_INVALID);
	cr_assert_eq(schema_files(arr), 2);
	/* a dropped: b alone, written and read. */
	cr_assert_eq(evolve_json(arr, "{\"array_type\":\"sparse\"," EV_DIMS ",\"attrs\":["
				      "{\"name\":\"b\",\"type\":\"FLOAT64\",\"nullable\":true}]}",
				 &changed, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(ingest(arr, csv2, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	read_all(arr, &all, NULL);
	cr_assert_str_eq((const char *)all.data,
			 "d=0100000000000000 b=NULL;d=0200000000000000 b=0000000000000440;");
	tfs_buf_release(&all);
	free(arr);
	free(csv);
	free(csv2);
}

/* A delete commit: the cells the condition matches are gone, the others
 * stay; dense arrays are refused. */
Test(e2e, delete_by_condition)
{
	char *arr = fx_path("del");
	char *dense = fx_path("dense");
	char *csv = fx_write_str("del.csv", "d,a\n1,10\n2,20\n3,30\n");
	struct tfs_where cond = {.op = TFS_WHERE_GE, .field = (char *)"a",
				 .value_num = 1};
	int32_t twenty = 20;
	struct tfs_ingest_result r;
	struct tfs_diag d;
	struct tfs_buf all;
	char name[96];

	cond.value = (uint8_t *)&twenty;
	cond.value_len = 4;
	create_from_json(arr, "{\"array_type\":\"sparse\"," EV_DIMS ",\"attrs\":["
			      "{\"name\":\"a\",\"type\":\"INT32\"}]}");
	create_from_json(dense, "{\"array_type\":\"dense\"," EV_DIMS ",\"attrs\":["
				"{\"name\":\"a\",\"type\":\"INT32\"}]}");
	cr_assert_eq(ingest(arr, csv, &d, &r), TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_delete(arr, &cond, NULL, name, sizeof(name), &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	cr_assert(strstr(name, ".del"), "%s", name);
	read_all(arr, &all, NULL);
	cr_assert_str_eq((const char *)all.data, "d=0100000000000000 a=0a000000;");
	tfs_buf_release(&all);
	cond.field = (char *)"nosuch";
	cr_assert_eq(tfs_array_delete(arr, &cond, NULL, NULL, 0, &d), TFS_E_INVALID);
	cond.field = (char *)"a";
	tfs_diag_init(&d);
	cr_assert_eq(tfs_array_delete(dense, &cond, NULL, NULL, 0, &d), TFS_E_UNSUPPORTED);
	free(arr);
	free(dense);
	free(csv);
}
