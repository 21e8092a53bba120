/* Fuzz target: schema JSON (core/ingest, tfs_schema_from_json). A schema
 * it accepts must serialize and parse back with the format module (its
 * enumerations, named when an array is created, given names first) and
 * carry enumerations that pass TileDB's creation checks; a refusal is
 * TFS_E_INVALID (or TFS_E_TOO_BIG) with one line saying where. Seeds: the
 * corpus's *.json documents. */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_alloc.h"
#include "tilefs/tilefs.h"
#include "tfs_format.h"

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
	for (uint32_t i = 0; i < s.enum_num; i++) {
		FUZZ_CHECK(s.enums[i].def && !s.enums[i].file);
		tfs_diag_init(&d);
		FUZZ_CHECK(tfs_enumeration_check(s.enums[i].def, &d) == TFS_E_OK);
		s.enums[i].file = tfs_strdup("__0123456789abcdef0123456789abcdef_0");
		FUZZ_CHECK(s.enums[i].file);
	}
	for (uint32_t i = 0; i < s.attr_num; i++) {
		const struct tfs_enumeration *en = NULL;

		for (uint32_t k = 0; s.attrs[i].enumeration && k < s.enum_num; k++)
			if (!strcmp(s.enums[k].name, s.attrs[i].enumeration))
				en = s.enums[k].def;
		FUZZ_CHECK(!s.attrs[i].enumeration ||
			   (en && !tfs_enumeration_attr_problem(&s.attrs[i], en)));
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
