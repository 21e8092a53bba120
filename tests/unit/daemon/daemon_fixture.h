/* The daemon without a mount, for the daemon's unit tests: the parts a
 * request needs over one source folder, and temporary folders to hold
 * arrays the tests write. */
#ifndef DAEMON_FIXTURE_H
#define DAEMON_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "tfsd.h"

/* Fills fs over `source` (copied): 2 threads, one worker in the pool, a
 * tile cache of cache_bytes (0 keeps no decoded tiles), renders of
 * render_bytes, files of up to whole_max_cells rendered whole. */
void dfx_start(struct tfsd *fs, const char *source, uint64_t whole_max_cells,
	       size_t cache_bytes, size_t render_bytes);
/* Frees all dfx_start made, and the staging table and ingest logs when a
 * test added them. */
void dfx_stop(struct tfsd *fs);

/* Runs a shell command; the test fails unless it exits 0. */
void dfx_run(const char *cmd);
/* Makes a new folder /tmp/PREFIX<random> into root[size]. */
void dfx_temp_dir(char *root, size_t size, const char *prefix);
/* Removes a folder made by dfx_temp_dir, with what it holds. */
void dfx_remove(const char *root);

#endif
