/* Fuzz target: CSV ingest (core/ingest) from the bytes to the batches the
 * writer would get. The first byte picks one of a few schemas covering
 * every kind of column (integer and float dimensions, nullable, var-size,
 * multi-value, strings, blobs, dates and times, enumerations of strings
 * and of numbers); the rest is the CSV,
 * tokenized with a block size from the second byte so records straddle
 * block boundaries. Every refusal must be TFS_E_INVALID or TFS_E_RANGE
 * with a message naming the file; every batch must be consistent. For the
 * dense schema, a file the box check takes for one box must parse to
 * exactly that box's number of cells. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "ingest_internal.h"
#include "tilefs/tilefs.h"

static const char *const schemas[] = {
	("{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"x\",\"type\":\"INT32\",\"domain\":[-100,100],\"tile\":10},"
	"{\"name\":\"y\",\"type\":\"FLOAT64\",\"domain\":[-1e9,1e9],\"tile\":1000}],\"attrs\":["
	"{\"name\":\"a\",\"type\":\"UINT8\"},{\"name\":\"s\",\"type\":\"STRING_UTF8\",\"cell_val_num\":\"var\",\"nullable\":true},"
	"{\"name\":\"v\",\"type\":\"FLOAT32\",\"cell_val_num\":3},{\"name\":\"w\",\"type\":\"INT64\",\"cell_val_num\":\"var\"}]}"),
	("{\"array_type\":\"dense\",\"dims\":[{\"name\":\"d\",\"type\":\"UINT64\",\"domain\":[0,1000],\"tile\":100}],\"attrs\":["
	"{\"name\":\"t\",\"type\":\"DATETIME_MS\"},{\"name\":\"h\",\"type\":\"TIME_NS\",\"nullable\":true},"
	"{\"name\":\"b\",\"type\":\"BLOB\",\"cell_val_num\":\"var\"},{\"name\":\"c\",\"type\":\"CHAR\",\"cell_val_num\":2},"
	"{\"name\":\"f\",\"type\":\"BOOL\",\"nullable\":true},{\"name\":\"e\",\"type\":\"DATETIME_WEEK\"}]}"),
	("{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"k\",\"type\":\"STRING_ASCII\",\"var\":true}],\"attrs\":["
	"{\"name\":\"a\",\"type\":\"STRING_ASCII\",\"cell_val_num\":\"var\"},{\"name\":\"n\",\"type\":\"INT16\",\"nullable\":true}]}"),
	("{\"array_type\":\"sparse\",\"dims\":[{\"name\":\"x\",\"type\":\"INT32\",\"domain\":[-100,100],\"tile\":10}],\"attrs\":["
	"{\"name\":\"c\",\"type\":\"UINT8\",\"enumeration\":\"colors\"},"
	"{\"name\":\"l\",\"type\":\"INT16\",\"nullable\":true,\"enumeration\":\"levels\"},"
	"{\"name\":\"p\",\"type\":\"INT32\",\"enumeration\":\"pairs\"}],\"enumerations\":["
	"{\"name\":\"colors\",\"type\":\"STRING_UTF8\",\"values\":[\"red\",\"\",\"a,b\",\"\\\"q\\\"\"]},"
	"{\"name\":\"levels\",\"type\":\"FLOAT32\",\"values\":[0.5,\"NaN\",-1,1e30]},"
	"{\"name\":\"pairs\",\"type\":\"UINT16\",\"cell_val_num\":2,\"values\":[[1,2],[2,1],[0,0]]}]}"),
};
#define SCHEMA_NUM (sizeof(schemas) / sizeof(schemas[0]))

static struct tfs_schema parsed[SCHEMA_NUM];
/* The enumerations of each schema as the ingest takes them. */
static struct tfs_enumeration enums[SCHEMA_NUM][4];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (size_t i = 0; i < SCHEMA_NUM; i++) {
		struct tfs_diag d;

		tfs_diag_init(&d);
		if (tfs_schema_from_json(&parsed[i], schemas[i], strlen(schemas[i]), &d)) {
			fprintf(stderr, "fuzz_csv: schema %zu: %s\n", i, tfs_diag_msg(&d));
			abort();
		}
		if (parsed[i].enum_num > 4)
			abort();
		for (uint32_t k = 0; k < parsed[i].enum_num; k++)
			enums[i][k] = *parsed[i].enums[k].def;
	}
	return 0;
}

static enum tfs_err check_batch(void *ctx, const struct tfs_batch *b,
				const uint64_t *tags, struct tfs_diag *d)
{
	uint64_t *last = ctx;

	(void)d;
	FUZZ_CHECK(b->cell_num > 0);
	for (uint64_t i = 0; i < b->cell_num; i++) {
		FUZZ_CHECK(tags[i] > *last);
		*last = tags[i];
	}
	for (size_t k = 0; k < b->column_num; k++) {
		const struct tfs_column *c = &b->columns[k];

		if (c->var) {
			FUZZ_CHECK(c->offsets[0] == 0);
			for (uint64_t i = 0; i < b->cell_num; i++)
				FUZZ_CHECK(c->offsets[i] <= c->offsets[i + 1]);
			FUZZ_CHECK(c->offsets[b->cell_num] == c->data_len);
		} else {
			FUZZ_CHECK(c->data_len == b->cell_num * tfs_datatype_size(c->type) *
							  c->cell_val_num);
		}
		for (uint64_t i = 0; c->nullable && i < b->cell_num; i++)
			FUZZ_CHECK(c->validity[i] <= 1);
	}
	return TFS_E_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t last = 1; /* the header is line 1 at least */
	struct tfs__ingest_run run = {0};
	struct tfs__ingest_sink sink = {.append = check_batch, .ctx = &last};
	struct tfs_diag d;
	enum tfs_err e;

	if (size < 2)
		return 0;
	if (!parsed[0].dims)
		LLVMFuzzerInitialize(NULL, NULL);
	run.schema = &parsed[data[0] % SCHEMA_NUM];
	run.enums = enums[data[0] % SCHEMA_NUM];
	run.enum_num = run.schema->enum_num;
	run.block = 1 + data[1] % 64;
	run.batch_rows = 1 + data[1] % 5;
	run.csv_mem = data + 2;
	run.csv_mem_len = size - 2;
	run.display_name = "f.csv";
	tfs_diag_init(&d);
	e = tfs__ingest_run(&run, &sink, &d);
	if (e) {
		FUZZ_CHECK(e == TFS_E_INVALID || e == TFS_E_RANGE);
		FUZZ_CHECK(strncmp(d.msg, "f.csv: line ", 12) == 0);
		FUZZ_CHECK(!strchr(d.msg, '\n'));
	}
	if (run.schema->array_type == TFS_DENSE) {
		static uint8_t box[2][128][8];
		bool is_box;

		tfs_diag_init(&d);
		FUZZ_CHECK(tfs__box_detect(run.schema, NULL, run.csv_mem, run.csv_mem_len,
					   "f.csv", run.block, &is_box, box, &d) == TFS_E_OK);
		if (is_box && !e) {
			/* The dense schema has one UINT64 dimension. */
			uint64_t lo, hi;

			memcpy(&lo, box[0][0], 8);
			memcpy(&hi, box[1][0], 8);
			FUZZ_CHECK(lo <= hi && run.rows == hi - lo + 1);
		}
	}
	return 0;
}
