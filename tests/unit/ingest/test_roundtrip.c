/* data.csv round trip over the corpus: each array's cells rendered as
 * the daemon renders data.csv (render/value_text.c, SPEC §4; enumerated
 * attributes as their enumeration's values), ingested into a copy of the
 * array, and rendered again must give the same text. Arrays it cannot
 * apply to are skipped: encrypted (no key here), duplicates allowed (the
 * cells would be there twice), WebP (lossy, and no encoder). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest_fixture.h"
#include "tilefs/tilefs.h"
#include "value_text.h"
#include "tfs_format.h"

static void render(const char *path, struct tfs_buf *out)
{
	struct tfs_array *a;
	struct tfs_query *q;
	const struct tfs_batch *b;
	struct tfs_diag d;
	bool header = false;

	tfs_diag_init(&d);
	tfs_buf_init(out, TFS_BUF_NO_MAX);
	cr_assert_eq(tfs_array_open(path, NULL, &a, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_query_open(a, NULL, &q, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s: %s", path,
			     tfs_diag_msg(&d));
		if (!b)
			break;
		if (!header) {
			for (size_t k = 0; k < b->column_num; k++) {
				if (k)
					cr_assert(!tfs_buf_append_u8(out, ','));
				cr_assert(!tfsr_name_text(out, b->columns[k].name, TFSR_TEXT_CSV));
			}
			cr_assert(!tfs_buf_append_u8(out, '\n'));
			header = true;
		}
		for (uint64_t i = 0; i < b->cell_num; i++) {
			for (size_t k = 0; k < b->column_num; k++) {
				if (k)
					cr_assert(!tfs_buf_append_u8(out, ','));
				cr_assert(!tfsr_cell_text(out, &b->columns[k], i, TFSR_TEXT_CSV,
							  fx_column_enum(a, &b->columns[k])));
			}
			cr_assert(!tfs_buf_append_u8(out, '\n'));
		}
	}
	tfs_query_close(q);
	tfs_array_close(a);
}

static bool applies(struct tfs_array *a)
{
	const struct tfs_schema *s = tfs_array_schema(a);

	if (s->allows_dups)
		return false;
	for (uint32_t i = 0; i < s->attr_num; i++)
		if (tfs_pipeline_has(&s->attrs[i].filters, TFS_FILTER_WEBP))
			return false;
	return true;
}

Test(roundtrip, corpus_data_csv)
{
	DIR *dir = opendir(TFS_CORPUS_DIR);
	struct dirent *de;
	char tmp[64];
	unsigned done = 0, enumerated = 0;

	cr_assert(dir);
	cr_assert(mkdtemp(tfs_temp_template(tmp, sizeof(tmp), "/tmp", "tfs_rt_")));
	while ((de = readdir(dir))) {
		char src[1024], dst[1024], csv[1024], cmd[4096];
		struct tfs_array *a;
		struct tfs_diag d;
		struct tfs_buf before, after;
		struct tfs_ingest_opts o = {.display_name = "data.csv"};
		struct tfs_ingest_result r;
		bool ok;
		FILE *f;

		if (de->d_name[0] == '.' || strchr(de->d_name, '.'))
			continue;
		snprintf(src, sizeof(src), "%s/%s", TFS_CORPUS_DIR, de->d_name);
		tfs_diag_init(&d);
		if (tfs_array_open(src, NULL, &a, &d))
			continue; /* groups, the encrypted array */
		struct tfs_range ned[128];
		bool dense = tfs_array_schema(a)->array_type == TFS_DENSE;

		ok = applies(a) && tfs_array_non_empty_domain(a, ned);
		enumerated += ok && tfs_array_enumeration_count(a) > 0;
		tfs_array_close(a);
		if (!ok)
			continue;
		snprintf(dst, sizeof(dst), "%s/%s", tmp, de->d_name);
		snprintf(csv, sizeof(csv), "%s/%s.csv", tmp, de->d_name);
		snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", src, dst);
		cr_assert_eq(system(cmd), 0);
		render(src, &before);
		f = fopen(csv, "wb");
		cr_assert(f);
		cr_assert_eq(fwrite(before.data, 1, before.len, f), before.len);
		fclose(f);
		tfs_diag_init(&d);
		cr_assert_eq(tfs_ingest_csv(dst, csv, &o, &r, &d), TFS_E_OK, "%s: %s",
			     de->d_name, tfs_diag_msg(&d));
		/* data.csv of a dense array is its non-empty domain, a box. */
		cr_assert_eq(r.write.dense, dense, "%s", de->d_name);
		render(dst, &after);
		cr_assert(before.len == after.len &&
				  memcmp(before.data, after.data, before.len) == 0,
			  "%s: data.csv changed", de->d_name);
		tfs_buf_release(&before);
		tfs_buf_release(&after);
		done++;
	}
	closedir(dir);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		cr_assert_eq(system(cmd), 0);
	}
	cr_assert_geq(done, 30, "%u arrays", done);
	cr_assert_geq(enumerated, 1);
}
