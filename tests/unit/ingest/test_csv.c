/* Rows to batches against real schemas from the corpus: header matching,
 * values of every kind into the columns, nulls, line-number tags, and
 * every refusal with its exact message. The batches go to a collector
 * sink that renders them as text. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest_internal.h"
#include "tfs_alloc.h"
#include "tilefs/tilefs.h"

struct collect {
	struct tfs_buf text;
	unsigned batches;
	uint64_t cells;
};

static enum tfs_err collect_append(void *ctx, const struct tfs_batch *b,
				   const uint64_t *tags, struct tfs_diag *d)
{
	struct collect *c = ctx;

	(void)d;
	c->batches++;
	for (uint64_t i = 0; i < b->cell_num; i++) {
		cr_assert(!tfs_buf_printf(&c->text, "L%" PRIu64, tags[i]));
		for (size_t k = 0; k < b->column_num; k++) {
			const struct tfs_column *col = &b->columns[k];
			const uint8_t *p;
			uint64_t len;

			cr_assert(!tfs_buf_printf(&c->text, " %s=", col->name));
			if (col->nullable && !col->validity[i]) {
				cr_assert(!tfs_buf_printf(&c->text, "NULL"));
				continue;
			}
			if (col->var) {
				p = col->data + col->offsets[i];
				len = col->offsets[i + 1] - col->offsets[i];
			} else {
				len = tfs_datatype_size(col->type) * col->cell_val_num;
				p = col->data + i * len;
				cr_assert_leq((i + 1) * len, col->data_len);
			}
			for (uint64_t j = 0; j < len; j++)
				cr_assert(!tfs_buf_printf(&c->text, "%02x", p[j]));
		}
		cr_assert(!tfs_buf_append(&c->text, ";", 1));
	}
	c->cells += b->cell_num;
	return TFS_E_OK;
}

static struct tfs_array *open_corpus(const char *name)
{
	char path[1024];
	struct tfs_array *a;
	struct tfs_diag d;

	tfs_diag_init(&d);
	snprintf(path, sizeof(path), "%s/%s", TFS_CORPUS_DIR, name);
	cr_assert_eq(tfs_array_open(path, NULL, &a, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	return a;
}

static char *write_temp(const char *text, size_t len)
{
	char tmpl[64];
	char *path = strdup(tfs_temp_template(tmpl, sizeof(tmpl), "/tmp", "tfs_ingest_"));
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

/* The array's enumerations as the run takes them (copies that borrow
 * the array's values, valid until it is closed). */
static size_t enums_of(struct tfs_array *a, struct tfs_enumeration *out, size_t cap)
{
	size_t n = tfs_array_enumeration_count(a);

	cr_assert_leq(n, cap);
	for (size_t k = 0; k < n; k++)
		out[k] = *tfs_array_enumeration(a, k);
	return n;
}

/* Runs text through the ingest engine against the corpus array's schema
 * (and enumerations) with tiny blocks and batches; returns the code, the
 * message and what the sink saw. */
static enum tfs_err run_csv(const char *array, const char *text, struct collect *c,
			    struct tfs_diag *d, size_t block, uint64_t batch)
{
	struct tfs_array *a = open_corpus(array);
	char *path = write_temp(text, strlen(text));
	struct tfs_enumeration enums[8];
	struct tfs__ingest_run run = {
		.schema = tfs_array_schema(a),
		.enums = enums,
		.enum_num = enums_of(a, enums, 8),
		.csv_path = path,
		.display_name = "in.csv",
		.block = block,
		.batch_rows = batch,
	};
	struct tfs__ingest_sink sink = {.append = collect_append, .ctx = c};
	enum tfs_err e;

	tfs_diag_init(d);
	tfs_buf_init(&c->text, TFS_BUF_NO_MAX);
	c->batches = 0;
	c->cells = 0;
	e = tfs__ingest_run(&run, &sink, d);
	cr_assert_eq(c->cells, run.rows);
	cr_assert(!tfs_buf_append_u8(&c->text, 0));
	unlink(path);
	free(path);
	tfs_array_close(a);
	return e;
}

static void expect_rows(const char *array, const char *text, const char *want)
{
	static const size_t blocks[] = {1, 3, 0};
	static const uint64_t batches[] = {1, 2, 0};

	for (size_t i = 0; i < 3; i++) {
		struct collect c;
		struct tfs_diag d;

		cr_assert_eq(run_csv(array, text, &c, &d, blocks[i], batches[i]), TFS_E_OK,
			     "%s", tfs_diag_msg(&d));
		cr_assert_str_eq((const char *)c.text.data, want);
		tfs_buf_release(&c.text);
	}
}

static void expect_refused(const char *array, const char *text, enum tfs_err code,
			   const char *msg)
{
	struct collect c;
	struct tfs_diag d;

	cr_assert_eq(run_csv(array, text, &c, &d, 2, 1), code, "%s: %s", text,
		     tfs_diag_msg(&d));
	cr_assert_str_eq(d.msg, msg);
	tfs_buf_release(&c.text);
}

Test(csv, columns_in_any_order)
{
	/* x, y INT32 dims; a INT32; s UTF-8. */
	expect_rows("sparse_2d_int", "s,a,y,x\nhi,1,2,3\n\"a,\"\"b\",-1,0,99\n",
		    "L2 x=03000000 y=02000000 a=01000000 s=6869;"
		    "L3 x=63000000 y=00000000 a=ffffffff s=612c2262;");
	expect_rows("sparse_2d_int", "x,y,a,s\r\n1,2,3,\r\n4,5,6,\"\"\r\n",
		    "L2 x=01000000 y=02000000 a=03000000 s=;"
		    "L3 x=04000000 y=05000000 a=06000000 s=;");
	/* Header only: no rows, nothing appended. */
	expect_rows("sparse_2d_int", "x,y,a,s\n", "");
	/* Empty file. */
	expect_rows("sparse_2d_int", "", "");
}

Test(csv, multiline_field_tags_its_first_line)
{
	expect_rows("sparse_2d_int", "x,y,a,s\n1,1,1,\"two\nlines\"\n2,2,2,z\n",
		    "L2 x=01000000 y=01000000 a=01000000 s=74776f0a6c696e6573;"
		    "L4 x=02000000 y=02000000 a=02000000 s=7a;");
}

Test(csv, nullable_columns)
{
	/* Only the dimension and the attributes that are not nullable. */
	expect_rows("sparse_dtypes", "id,u16,u64,f64,ascii,dt\n"
		    "7,65535,1,0.5,abc,1970-01-01T00:00:00.000000001Z\n",
		    "L2 id=0700000000000000 u16=ffff u64=0100000000000000 "
		    "f64=000000000000e03f ascii=616263 dt=0100000000000000;");
	/* Empty fields of nullable attributes are null; "" is an empty
	 * string, not null. */
	expect_rows("sparse_dtypes",
		    "id,u16,u64,f64,ascii,dt,i8,ch,utf8,flag,blob,xyz\n"
		    "7,1,1,1,a,1970-01-01,,,\"\",,,\n"
		    "8,1,1,1,a,1970-01-01,-5,x,\xc3\xa9,true,00ff,1 2 nan\n",
		    "L2 id=0700000000000000 i8=NULL u16=0100 u64=0100000000000000 "
		    "f64=000000000000f03f ch=NULL ascii=61 utf8= dt=0000000000000000 "
		    "flag=NULL blob=NULL xyz=NULL;"
		    "L3 id=0800000000000000 i8=fb u16=0100 u64=0100000000000000 "
		    "f64=000000000000f03f ch=78 ascii=61 utf8=c3a9 dt=0000000000000000 "
		    "flag=01 blob=00ff "
		    "xyz=000000000000f03f0000000000000040000000000000f87f;");
}

Test(csv, refusals)
{
	expect_refused("sparse_2d_int", "x,y,a,s,zz\n", TFS_E_INVALID,
		       "in.csv: line 1, column 5 ('zz'): no dimension or attribute of that name");
	expect_refused("sparse_2d_int", "x,y,a,x,s\n", TFS_E_INVALID,
		       "in.csv: line 1, column 4 ('x'): duplicate column");
	expect_refused("sparse_2d_int", "x,y,s,s,a\n", TFS_E_INVALID,
		       "in.csv: line 1, column 4 ('s'): duplicate column");
	expect_refused("sparse_2d_int", "x,a,s\n", TFS_E_INVALID,
		       "in.csv: line 1: missing column 'y' (a dimension)");
	expect_refused("sparse_2d_int", "x,y,s\n", TFS_E_INVALID,
		       "in.csv: line 1: missing column 'a' (an attribute that is not nullable)");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,2,3,x\n1,2,3\n", TFS_E_INVALID,
		       "in.csv: line 3, column 4 ('s'): row has 3 fields, the header 4");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,2,3,x,5\n", TFS_E_INVALID,
		       "in.csv: line 2, column 5: row has 5 fields, the header 4");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,2,3,x\n\n1,2,zz,x\n", TFS_E_INVALID,
		       "in.csv: line 4, column 3 ('a'): not an integer");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,2,3000000000,x\n", TFS_E_RANGE,
		       "in.csv: line 2, column 3 ('a'): integer out of the type's range");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,100,3,x\n", TFS_E_RANGE,
		       "in.csv: line 2, column 2 ('y'): coordinate outside the domain [0, 99]");
	expect_refused("sparse_2d_int", "x,y,a,s\n-1,1,3,x\n", TFS_E_RANGE,
		       "in.csv: line 2, column 1 ('x'): coordinate outside the domain [0, 99]");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,,3,x\n", TFS_E_INVALID,
		       "in.csv: line 2, column 2 ('y'): empty value");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,2,3,\"x\n", TFS_E_INVALID,
		       "in.csv: line 2, column 4 ('s'): quoted field not closed before the end of the file");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,2,3,\xff\n", TFS_E_INVALID,
		       "in.csv: line 2, column 4 ('s'): not valid UTF-8");
	expect_refused("sparse_2d_int", "x,y,a,s\n1,2,3,\"a\nb\"\n4,5,6,7,8\n",
		       TFS_E_INVALID, "in.csv: line 4, column 5: row has 5 fields, the header 4");
	expect_refused("sparse_dtypes", "id,u16,u64,f64,ascii,dt,xyz\n1,1,1,1,a,1970-01-01,1 2\n",
		       TFS_E_INVALID,
		       "in.csv: line 2, column 7 ('xyz'): wrong number of values for the attribute's cell_val_num");
	expect_refused("sparse_dtypes", "id,u16,u64,f64,ascii,dt\n1,1,1,1,a,1970-01-01T00:00:00.5+01:00x\n",
		       TFS_E_INVALID,
		       "in.csv: line 2, column 6 ('dt'): not an ISO-8601 date/time");
	expect_refused("sparse_dtypes", "id,u16,u64,f64,ascii,dt\n1,1,1,1e999,a,1970\n",
		       TFS_E_RANGE,
		       "in.csv: line 2, column 4 ('f64'): number out of the range of FLOAT64");
}

/* The corpus `enumeration` array: d INT32 [1, 20]; color UINT8 on
 * colors = red, green, blue, alpha (STRING_ASCII); level UINT16 on
 * levels = 10, 20, 30 (INT32); plain INT32. Fields hold the values as
 * the reader shows them, cells their indices. */
Test(csv, enumerations)
{
	expect_rows("enumeration", "d,color,level,plain\n1,green,20,7\n2,alpha,10,-1\n",
		    "L2 d=01000000 color=01 level=0100 plain=07000000;"
		    "L3 d=02000000 color=03 level=0000 plain=ffffffff;");
	/* Any column order; quoted labels. */
	expect_rows("enumeration", "level,plain,color,d\n30,0,\"red\",20\n",
		    "L2 d=14000000 color=00 level=0200 plain=00000000;");
	/* The fill values are no index: cells nobody wrote show them as
	 * numbers, which stand for themselves. */
	expect_rows("enumeration", "d,color,level,plain\n3,255,65535,1\n",
		    "L2 d=03000000 color=ff level=ffff plain=01000000;");
	expect_refused("enumeration", "d,color,level,plain\n1,green,20,7\n2,purple,20,7\n",
		       TFS_E_INVALID,
		       "in.csv: line 3, column 2 ('color'): 'purple' is not a value of the "
		       "enumeration 'colors'");
	expect_refused("enumeration", "d,color,level,plain\n1,Green,20,7\n", TFS_E_INVALID,
		       "in.csv: line 2, column 2 ('color'): 'Green' is not a value of the "
		       "enumeration 'colors'");
	expect_refused("enumeration", "d,color,level,plain\n1,,20,7\n", TFS_E_INVALID,
		       "in.csv: line 2, column 2 ('color'): '' is not a value of the "
		       "enumeration 'colors'");
	expect_refused("enumeration", "d,color,level,plain\n1,0,20,7\n", TFS_E_INVALID,
		       "in.csv: line 2, column 2 ('color'): '0' is not a value of the "
		       "enumeration 'colors'");
	expect_refused("enumeration", "d,color,level,plain\n1,254,20,7\n", TFS_E_INVALID,
		       "in.csv: line 2, column 2 ('color'): '254' is not a value of the "
		       "enumeration 'colors'");
	expect_refused("enumeration", "d,color,level,plain\n1,red,25,7\n", TFS_E_INVALID,
		       "in.csv: line 2, column 3 ('level'): '25' is not a value of the "
		       "enumeration 'levels'");
	expect_refused("enumeration", "d,color,level,plain\n1,red,2,7\n", TFS_E_INVALID,
		       "in.csv: line 2, column 3 ('level'): '2' is not a value of the "
		       "enumeration 'levels'");
	expect_refused("enumeration", "d,color,level,plain\n1,red,20.0,7\n", TFS_E_INVALID,
		       "in.csv: line 2, column 3 ('level'): '20.0' is not a value of the "
		       "enumeration 'levels'");
	expect_refused("enumeration", "d,color,level,plain\n1,red,\"a\nb\",7\n", TFS_E_INVALID,
		       "in.csv: line 2, column 3 ('level'): 'a\\x0ab' is not a value of the "
		       "enumeration 'levels'");
}

Test(csv, batches_and_progress)
{
	struct collect c;
	struct tfs_diag d;
	struct tfs_buf text;

	tfs_buf_init(&text, TFS_BUF_NO_MAX);
	cr_assert(!tfs_buf_printf(&text, "x,y,a,s\n"));
	for (int i = 0; i < 1000; i++)
		cr_assert(!tfs_buf_printf(&text, "%d,%d,%d,s%d\n", i % 100, i / 100, i, i));
	cr_assert(!tfs_buf_append_u8(&text, 0));
	cr_assert_eq(run_csv("sparse_2d_int", (const char *)text.data, &c, &d, 100, 64),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(c.cells, 1000);
	cr_assert_eq(c.batches, 16);
	cr_assert(strstr((const char *)c.text.data,
			 "L1001 x=63000000 y=09000000 a=e7030000 s=73393939;"));
	tfs_buf_release(&c.text);
	tfs_buf_release(&text);
}

Test(csv, long_strings_end_batches_early)
{
	struct collect c;
	struct tfs_diag d;
	struct tfs_buf text;
	size_t n = (size_t)1 << 20;
	char *s = malloc(n + 1);

	cr_assert(s);
	memset(s, 'q', n);
	s[n] = '\0';
	tfs_buf_init(&text, TFS_BUF_NO_MAX);
	cr_assert(!tfs_buf_printf(&text, "x,y,a,s\n"));
	for (int i = 0; i < 40; i++)
		cr_assert(!tfs_buf_printf(&text, "%d,0,%d,%s\n", i, i, s));
	cr_assert(!tfs_buf_append_u8(&text, 0));
	cr_assert_eq(run_csv("sparse_2d_int", (const char *)text.data, &c, &d, 0, 0),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(c.cells, 40);
	/* 32 MiB of strings per batch: two batches, not one of 40 MiB. */
	cr_assert_eq(c.batches, 2);
	tfs_buf_release(&c.text);
	tfs_buf_release(&text);
	free(s);
}

/* Counts cells without allocating (the allocator is failing). */
static enum tfs_err count_append(void *ctx, const struct tfs_batch *b,
				 const uint64_t *tags, struct tfs_diag *d)
{
	(void)tags;
	(void)d;
	*(uint64_t *)ctx += b->cell_num;
	return TFS_E_OK;
}

/* Every allocation of a run failing in turn: out of memory, nothing
 * leaked (the sanitizer build checks), never a crash. */
Test(csv, every_allocation_failing)
{
	static const char text[] = "s,a,y,x\n\"q\"\"r\",1,2,3\nz,4,5,6\n";
	unsigned failures = 0;

	for (long n = 0;; n++) {
		uint64_t cells = 0;
		struct tfs_diag d;
		enum tfs_err e;
		struct tfs_array *a = open_corpus("sparse_2d_int");
		char *path = write_temp(text, strlen(text));
		struct tfs__ingest_run run = {
			.schema = tfs_array_schema(a), .csv_path = path,
			.display_name = "in.csv", .block = 3, .batch_rows = 1,
		};
		struct tfs__ingest_sink sink = {.append = count_append, .ctx = &cells};

		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs__ingest_run(&run, &sink, &d);
		tfs_alloc_fail_after(-1);
		unlink(path);
		free(path);
		tfs_array_close(a);
		if (e == TFS_E_OK) {
			cr_assert_eq(run.rows, 2);
			cr_assert_eq(cells, 2);
			break;
		}
		cr_assert_eq(e, TFS_E_NOMEM, "allocation %ld: %s", n, tfs_diag_msg(&d));
		cr_assert(strstr(d.msg, "out of memory"), "%s", d.msg);
		failures++;
		cr_assert_lt(n, 10000);
	}
	cr_assert_gt(failures, 5);
}

Test(csv, every_allocation_failing_enumerations)
{
	static const char text[] = "d,color,level,plain\n1,green,20,7\n2,alpha,65535,-1\n";
	unsigned failures = 0;

	for (long n = 0;; n++) {
		uint64_t cells = 0;
		struct tfs_diag d;
		enum tfs_err e;
		struct tfs_array *a = open_corpus("enumeration");
		char *path = write_temp(text, strlen(text));
		struct tfs_enumeration enums[8];
		struct tfs__ingest_run run = {
			.schema = tfs_array_schema(a), .csv_path = path,
			.enums = enums, .enum_num = enums_of(a, enums, 8),
			.display_name = "in.csv", .block = 3, .batch_rows = 1,
		};
		struct tfs__ingest_sink sink = {.append = count_append, .ctx = &cells};

		tfs_diag_init(&d);
		tfs_alloc_fail_after(n);
		e = tfs__ingest_run(&run, &sink, &d);
		tfs_alloc_fail_after(-1);
		unlink(path);
		free(path);
		tfs_array_close(a);
		if (e == TFS_E_OK) {
			cr_assert_eq(run.rows, 2);
			break;
		}
		cr_assert_eq(e, TFS_E_NOMEM, "allocation %ld: %s", n, tfs_diag_msg(&d));
		cr_assert(strstr(d.msg, "out of memory"), "%s", d.msg);
		failures++;
		cr_assert_lt(n, 10000);
	}
	cr_assert_gt(failures, 5);
}
