/* CSV files into arrays with enumerations, end to end (SPEC §6, format/
 * schema.md §5, §8): the values of an enumeration as the reader shows them
 * become their indices; a value the enumeration lacks refuses the whole
 * file and leaves the array as it was; nullable enumerated attributes;
 * arrays created from schema JSON with enumerations of several types and
 * sizes, then written and read back as the daemon renders them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest_fixture.h"
#include "tfs_alloc.h"
#include "tilefs/tilefs.h"
#include "value_text.h"
#include "tfs_format.h"

TestSuite(enum_ingest, .init = fx_tmp_make, .fini = fx_tmp_drop);

static char *create_from_json(const char *name, const char *json)
{
	char *path = fx_path(name);
	struct tfs_schema s;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, json, strlen(json), &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_array_create(path, &s, NULL, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	tfs_schema_release(&s);
	return path;
}

static enum tfs_err ingest(const char *array, const char *csv, struct tfs_diag *d)
{
	struct tfs_ingest_opts o = {.display_name = "in.csv"};
	struct tfs_ingest_result r;

	tfs_diag_init(d);
	return tfs_ingest_csv(array, csv, &o, &r, d);
}

/* The array as data.csv shows it (enum = true: values of enumerations, as
 * the daemon renders them) or with the stored integers (enum = false). */
static void render(const char *path, bool labels, struct tfs_buf *out,
		   size_t *fragments)
{
	struct tfs_array *a;
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	bool header = false;

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
		for (size_t k = 0; !header && k < b->column_num; k++)
			cr_assert(!tfs_buf_printf(out, "%s%s", k ? "," : "", b->columns[k].name));
		if (!header)
			cr_assert(!tfs_buf_append_u8(out, '\n'));
		header = true;
		for (uint64_t i = 0; i < b->cell_num; i++) {
			for (size_t k = 0; k < b->column_num; k++) {
				if (k)
					cr_assert(!tfs_buf_append_u8(out, ','));
				cr_assert(!tfsr_cell_text(out, &b->columns[k], i, TFSR_TEXT_CSV,
							  labels ? fx_column_enum(a, &b->columns[k])
								 : NULL));
			}
			cr_assert(!tfs_buf_append_u8(out, '\n'));
		}
	}
	cr_assert(!tfs_buf_append_u8(out, 0));
	out->len--;
	tfs_query_close(q);
	tfs_array_close(a);
}

/* Into a copy of the corpus array, values become indices; a file with
 * a value the ordered enumeration lacks anywhere, or a new value and a
 * bad field, is refused whole, the array unchanged; a new value of the
 * unordered one extends it. */
Test(enum_ingest, corpus_copy_labels_and_refusal)
{
	char *arr = fx_copy_corpus("enumeration");
	char *good = fx_write_str("good.csv", "d,color,level,plain\n1,green,20,7\n"
					   "2,blue,10,8\n");
	char *bad = fx_write_str("bad.csv", "d,color,level,plain\n3,red,30,9\n"
					 "4,purple,20,7\n5,red,30,x\n");
	char *bad2 = fx_write_str("bad2.csv", "d,color,level,plain\n3,red,30,9\n"
					   "4,red,40,7\n");
	struct tfs_buf before, after, raw;
	size_t nb, na;
	struct tfs_diag d;

	cr_assert_eq(ingest(arr, good, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	render(arr, false, &raw, NULL);
	cr_assert(!strncmp((const char *)raw.data,
			   "d,color,level,plain\n1,1,1,7\n2,2,0,8\n3,3,2,2\n", 44),
		  "%s", raw.data);
	render(arr, true, &before, &nb);
	cr_assert(!strncmp((const char *)before.data,
			   "d,color,level,plain\n1,green,20,7\n2,blue,10,8\n3,alpha,30,2\n", 58),
		  "%s", before.data);
	cr_assert_eq(ingest(arr, bad, &d), TFS_E_INVALID);
	cr_assert_str_eq(d.msg, "in.csv: line 4, column 4 ('plain'): not an integer");
	cr_assert_eq(ingest(arr, bad2, &d), TFS_E_INVALID);
	cr_assert_str_eq(d.msg, "in.csv: line 3, column 3 ('level'): '40' is not a "
				"value of the enumeration 'levels', which is ordered: new "
				"values are not added to it");
	render(arr, true, &after, &na);
	cr_assert_eq(na, nb);
	cr_assert_str_eq((const char *)after.data, (const char *)before.data);
	{
		/* Nothing staged is left behind either. */
		char cmd[1200];

		snprintf(cmd, sizeof(cmd), "test $(ls '%s/__fragments' | wc -l) -eq 2", arr);
		cr_assert_eq(system(cmd), 0);
		snprintf(cmd, sizeof(cmd), "test $(ls '%s/__schema/__enumerations' | wc -l) -eq 2", arr);
		cr_assert_eq(system(cmd), 0);
	}
	{
		/* purple extends colors: key 4, shown as its value. */
		char *ext = fx_write_str("ext.csv", "d,color,level,plain\n3,purple,30,9\n");

		cr_assert_eq(ingest(arr, ext, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
		tfs_buf_release(&raw);
		tfs_buf_release(&after);
		render(arr, false, &raw, NULL);
		cr_assert(!strncmp((const char *)raw.data + 20, "1,1,1,7\n2,2,0,8\n3,4,2,9\n", 24),
			  "%s", raw.data);
		render(arr, true, &after, NULL);
		cr_assert(!strncmp((const char *)after.data + 20, "1,green,20,7\n2,blue,10,8\n"
				   "3,purple,30,9\n", 39), "%s", after.data);
		free(ext);
	}
	tfs_buf_release(&raw);
	tfs_buf_release(&before);
	tfs_buf_release(&after);
	free(arr);
	free(good);
	free(bad);
	free(bad2);
}

/* Empty fields of a nullable enumerated attribute are null, a missing
 * column is null everywhere, and "" is the enumeration's empty value. */
Test(enum_ingest, nullable)
{
	static const char json[] =
		"{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"k\",\"type\":\"INT64\","
		"\"domain\":[0,99],\"tile\":10}],\"attrs\":["
		"{\"name\":\"tag\",\"type\":\"INT32\",\"nullable\":true,\"enumeration\":\"tags\"},"
		"{\"name\":\"n\",\"type\":\"INT8\",\"nullable\":true,\"enumeration\":\"nums\"}],"
		"\"enumerations\":[{\"name\":\"tags\",\"type\":\"STRING_UTF8\","
		"\"values\":[\"x\",\"\",\"a,b\",\"say \\\"hi\\\"\"]},"
		"{\"name\":\"nums\",\"type\":\"UINT64\",\"values\":[18446744073709551615,0]}]}";
	static const char text[] =
		"k,tag,n\n1,x,0\n2,,\n3,\"\",18446744073709551615\n4,\"a,b\",\n"
		"5,\"say \"\"hi\"\"\",0\n";
	char *arr = create_from_json("nullable", json);
	char *csv = fx_write("n.csv", text, strlen(text));
	char *only_k = fx_write_str("k.csv", "k\n6\n");
	struct tfs_buf shown, raw;
	struct tfs_diag d;

	cr_assert_eq(ingest(arr, csv, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(ingest(arr, only_k, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	render(arr, true, &shown, NULL);
	cr_assert_str_eq((const char *)shown.data,
			 "k,tag,n\n1,x,0\n2,,\n3,\"\",18446744073709551615\n4,\"a,b\",\n"
			 "5,\"say \"\"hi\"\"\",0\n6,,\n");
	render(arr, false, &raw, NULL);
	cr_assert_str_eq((const char *)raw.data,
			 "k,tag,n\n1,0,1\n2,,\n3,1,0\n4,2,\n5,3,1\n6,,\n");
	tfs_buf_release(&shown);
	tfs_buf_release(&raw);
	free(arr);
	free(csv);
	free(only_k);
}

/* Created from schema JSON, written, read back: what the reader shows of
 * a file that holds the values is that file; a large enumeration (the
 * hash index), floats, dates and fixed-size strings. */
Test(enum_ingest, create_ingest_read)
{
	enum { N = 5000 };
	struct tfs_buf json, text, shown, again;
	char *arr, *csv, *arr2, *csv2;
	struct tfs_diag d;

	tfs_buf_init(&json, TFS_BUF_NO_MAX);
	tfs_buf_init(&text, TFS_BUF_NO_MAX);
	cr_assert(!tfs_buf_printf(&json,
		"{\"array_type\":\"dense\",\"dims\":[{\"name\":\"i\",\"type\":\"UINT32\","
		"\"domain\":[0,%d],\"tile\":1000}],\"attrs\":["
		"{\"name\":\"word\",\"type\":\"UINT16\",\"enumeration\":\"words\"},"
		"{\"name\":\"x\",\"type\":\"INT64\",\"enumeration\":\"floats\"},"
		"{\"name\":\"day\",\"type\":\"UINT8\",\"enumeration\":\"days\"},"
		"{\"name\":\"code\",\"type\":\"INT32\",\"enumeration\":\"codes\"},"
		"{\"name\":\"raw\",\"type\":\"INT32\"}],\"enumerations\":["
		"{\"name\":\"floats\",\"type\":\"FLOAT64\",\"ordered\":true,"
		"\"values\":[0.1,-2.5,1e300,\"NaN\",\"-Infinity\"]},"
		"{\"name\":\"days\",\"type\":\"DATETIME_DAY\",\"values\":[0,19000,-1]},"
		"{\"name\":\"codes\",\"type\":\"CHAR\",\"cell_val_num\":2,"
		"\"values\":[\"ab\",\"cd\",\"a,\"]},"
		"{\"name\":\"words\",\"type\":\"STRING_ASCII\",\"values\":[",
		N - 1));
	for (unsigned w = 0; w < 3000; w++)
		cr_assert(!tfs_buf_printf(&json, "%s\"w%05u\"", w ? "," : "", w * 7));
	cr_assert(!tfs_buf_printf(&json, "]}]}"));
	cr_assert(!tfs_buf_append_u8(&json, 0));
	arr = create_from_json("made", (const char *)json.data);

	static const char *const floats[] = {"0.1", "-2.5", "1e+300", "nan", "-inf"};
	static const char *const days[] = {"1970-01-01", "2022-01-08", "1969-12-31"};
	static const char *const codes[] = {"ab", "cd", "\"a,\""};

	cr_assert(!tfs_buf_printf(&text, "i,word,x,day,code,raw\n"));
	for (unsigned i = 0; i < N; i++)
		cr_assert(!tfs_buf_printf(&text, "%u,w%05u,%s,%s,%s,%u\n", i,
					  (i * 31 % 3000) * 7, floats[i % 5], days[i % 3],
					  codes[i % 3], i));
	csv = fx_write("made.csv", (const char *)text.data, text.len);
	cr_assert_eq(ingest(arr, csv, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	render(arr, true, &shown, NULL);
	cr_assert_eq(shown.len, text.len);
	cr_assert(!memcmp(shown.data, text.data, text.len), "%.300s", shown.data);

	/* What was read back writes back: ingest it into a second array made
	 * from the same JSON, which then reads the same. */
	arr2 = create_from_json("made2", (const char *)json.data);
	csv2 = fx_write("again.csv", (const char *)shown.data, shown.len);
	cr_assert_eq(ingest(arr2, csv2, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	render(arr2, true, &again, NULL);
	cr_assert_str_eq((const char *)again.data, (const char *)shown.data);

	/* A float the ordered floats lack is refused; a word that is no value
	 * of the 3000 and a code of two new characters extend theirs. */
	{
		char *bad = fx_write_str("bad.csv", "i,word,x,day,code,raw\n0,w00001,0.2,"
						 "1970-01-01,ab,1\n");
		char *ext = fx_write_str("ext.csv", "i,word,x,day,code,raw\n0,w00001,0.1,"
						 "1970-01-01,zz,1\n1,w00002,0.1,1970-01-01,zz,2\n");

		cr_assert_eq(ingest(arr, bad, &d), TFS_E_INVALID);
		cr_assert_str_eq(d.msg, "in.csv: line 2, column 3 ('x'): '0.2' is not "
					"a value of the enumeration 'floats', which is ordered: "
					"new values are not added to it");
		cr_assert_eq(ingest(arr, ext, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
		static const char want[] = "i,word,x,day,code,raw\n0,w00001,0.1,1970-01-01,zz,1\n"
					   "1,w00002,0.1,1970-01-01,zz,2\n2,w00434,";

		tfs_buf_release(&again);
		render(arr, true, &again, NULL);
		cr_assert(!strncmp((const char *)again.data, want, sizeof(want) - 1),
			  "%.200s", again.data);
		free(bad);
		free(ext);
	}
	tfs_buf_release(&json);
	tfs_buf_release(&text);
	tfs_buf_release(&shown);
	tfs_buf_release(&again);
	free(arr);
	free(arr2);
	free(csv);
	free(csv2);
}
