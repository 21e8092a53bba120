#include "ingest_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tfs_buf.h"
#include "tilefs/tilefs.h"
#include "tfs_format.h"

static char tmp[64];

void fx_tmp_make(void)
{
	cr_assert(tfs_temp_template(tmp, sizeof(tmp), "/tmp", "tfs_ingest_"));
	cr_assert(mkdtemp(tmp));
}

void fx_tmp_drop(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

char *fx_path(const char *name)
{
	char *p = malloc(strlen(tmp) + strlen(name) + 2);

	cr_assert(p);
	sprintf(p, "%s/%s", tmp, name);
	return p;
}

char *fx_write(const char *name, const void *data, size_t len)
{
	char *p = fx_path(name);
	FILE *f = fopen(p, "wb");

	cr_assert(f, "%s", p);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	return p;
}

char *fx_write_str(const char *name, const char *text)
{
	return fx_write(name, text, strlen(text));
}

char *fx_copy_corpus(const char *name)
{
	char cmd[2048];
	char *dst = fx_path(name);

	snprintf(cmd, sizeof(cmd), "cp -r '%s/%s' '%s' && chmod -R u+w '%s'",
		 TFS_CORPUS_DIR, name, dst, dst);
	cr_assert_eq(system(cmd), 0);
	return dst;
}

const struct tfs_enumeration *fx_column_enum(struct tfs_array *a,
					     const struct tfs_column *c)
{
	const struct tfs_schema *s = tfs_array_schema(a);
	int i = tfs_schema_attr_index(s, c->name);

	if (c->is_dim || i < 0 || !s->attrs[i].enumeration)
		return NULL;
	return tfs_array_enumeration_named(a, s->attrs[i].enumeration);
}
