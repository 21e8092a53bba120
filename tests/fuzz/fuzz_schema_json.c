/* Fuzz target: schema JSON (core/ingest, tfs_schema_from_json). A schema
 * it accepts must serialize and parse back with the format module; a
 * refusal is TFS_E_INVALID (or TFS_E_TOO_BIG) with one line saying
 * where. Seeds: the corpus's *.json documents. */
#include <string.h>

#include "fuzz_common.h"
#include "tilefs/tilefs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_schema s, back;
	struct tfs_diag d;
	struct tfs_buf b;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_schema_from_json(&s, (const char *)data, size, &d);
	if (e) {
		FUZZ_CHECK(e == TFS_E_INVALID || e == TFS_E_TOO_BIG || e == TFS_E_NOMEM);
		FUZZ_CHECK(strncmp(d.msg, "schema JSON: ", 13) == 0);
		FUZZ_CHECK(!strchr(d.msg, '\n'));
		return 0;
	}
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	FUZZ_CHECK(tfs_schema_serialize(&b, &s) == TFS_E_OK);
	tfs_diag_init(&d);
	FUZZ_CHECK(tfs_schema_parse(&back, b.data, b.len, NULL, &d) == TFS_E_OK);
	tfs_schema_release(&back);
	tfs_buf_release(&b);
	tfs_schema_release(&s);
	return 0;
}
