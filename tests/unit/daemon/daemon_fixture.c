#include "daemon_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_buf.h"
#include "tfsd_write.h"

void dfx_start(struct tfsd *fs, const char *source, uint64_t whole_max_cells,
	       size_t cache_bytes, size_t render_bytes)
{
	memset(fs, 0, sizeof(*fs));
	{
		struct tfs_diag d;

		tfs_diag_init(&d);
		cr_assert_eq(tfsd_config_set_source(&fs->cfg, source, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
	}
	fs->cfg.threads = 2;
	fs->cfg.whole_max_cells = whole_max_cells;
	cr_assert_eq(tfs_tile_cache_new(cache_bytes, &fs->tiles), TFS_E_OK);
	cr_assert_eq(tfs_pool_new(1, &fs->pool), TFS_E_OK);
	cr_assert_eq(tfsd_arrays_new(&fs->cfg, fs->tiles, fs->pool,
				     &fs->arrays),
		     TFS_E_OK);
	cr_assert_eq(tfsd_renders_new(render_bytes, &fs->renders), TFS_E_OK);
}

void dfx_stop(struct tfsd *fs)
{
	tfsd_staging_free(fs->staging);
	tfsd_ilog_free(fs->ilog);
	tfsd_renders_free(fs->renders);
	tfsd_arrays_free(fs->arrays);
	tfs_pool_free(fs->pool);
	tfs_tile_cache_free(fs->tiles);
	tfsd_config_release(&fs->cfg);
	memset(fs, 0, sizeof(*fs));
}

void dfx_run(const char *cmd)
{
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

void dfx_temp_dir(char *root, size_t size, const char *prefix)
{
	cr_assert(tfs_temp_template(root, size, "/tmp", prefix));
	cr_assert(mkdtemp(root));
}

void dfx_remove(const char *root)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	dfx_run(cmd);
}
