/* tilefs core: consolidation and vacuum (format/consolidated.md,
 * docs/CONSOLIDATION.md), library tfs_maintain, on the reader and the
 * fragment writer (tfs_write.h). */
#ifndef TFS_MAINTAIN_H
#define TFS_MAINTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"
#include "tfs_schema.h"
#include "tfs_write.h"

/* ---- Consolidation and vacuum (core/maintain) --------------------------- */

enum tfs_consolidate_mode {
	TFS_CONSOLIDATE_FRAGMENTS,     /* cells: one fragment over [t1, t2] */
	TFS_CONSOLIDATE_FRAGMENT_META, /* __fragment_meta/ files (.meta) */
	TFS_CONSOLIDATE_COMMITS,       /* __commits/ consolidated commits (.con) */
	TFS_CONSOLIDATE_ARRAY_META,    /* __meta/ into one file + .vac */
};

struct tfs_consolidate_opts {
	struct tfs_write_opts write;
	/* Only fragments with t2 <= end and t1 >= start (0, 0 = all). */
	uint64_t start, end;
};

/* Consolidates as format/consolidated.md describes, so that TileDB and
 * tilefs read the array identically before and after, at every time;
 * readers that have the array open keep working (files are written whole
 * under hidden names and renamed into place; nothing is removed). *made
 * (may be NULL) names what was written, "" when there was nothing to do
 * (fewer than two fragments or metadata files, commits already in one
 * .con). FRAGMENTS: dense arrays get one dense fragment over the bounding
 * box of the range's fragments, read as of the range's end and named
 * [t1min, t2max]; sparse arrays of format 15 or later one sparse fragment
 * of every version of every cell with its write time (t.tdb, named
 * [t1min, t2max], as TileDB does); when a fragment of the range has
 * timestamps of its own (or before format 15), one fragment of the
 * range's merged cells without timestamps, stamped [t2max, t2max] from
 * format 15 on so that windows ending inside the range still read the
 * originals. A range that another
 * fragment overlaps in time is TFS_E_INVALID. FRAGMENT_META and COMMITS
 * need format 12 or later (TFS_E_UNSUPPORTED). On failure the array reads
 * as before. */
enum tfs_err tfs_array_consolidate(const char *path,
				   enum tfs_consolidate_mode mode,
				   const struct tfs_consolidate_opts *opts,
				   char *made, size_t made_cap,
				   struct tfs_diag *d) TFS_WUR;
/* Removes what consolidation of this mode made obsolete (fragments named
 * by .vac files, their commits, consolidated metadata files) and nothing
 * else. *removed (may be NULL) counts the removed objects. FRAGMENTS:
 * only .vac files of committed consolidated fragments count; a listed
 * fragment's commit goes first (an .ign file first when a .con names
 * it), then its folder, then the .vac. FRAGMENT_META keeps the newest
 * .meta; COMMITS removes what the newest .con holds; ARRAY_META the files
 * .vac files list, then the .vac files. Every mode also removes temporary
 * files of consolidations that died an hour ago or more. */
enum tfs_err tfs_array_vacuum(const char *path, enum tfs_consolidate_mode mode,
			      const struct tfs_write_opts *opts,
			      unsigned *removed, struct tfs_diag *d) TFS_WUR;

#endif
