/* Consolidation and vacuum (format/consolidated.md, layout.md §6,
 * metadata.md §2): the four kinds TileDB makes, written so that every
 * read, at every time, is the same before and after.
 *
 * New files are written under a hidden name in the array folder (which no
 * reader lists as anything), made durable, then renamed into place, so a
 * reader never sees half a file; nothing is removed or changed by
 * consolidation, so readers that have the array open keep working. Only
 * vacuum removes, and only what a consolidation listed.
 *
 * Fragments (consolidated.md §5):
 * - dense arrays: the cells of the bounding box of the fragments of the
 *   range, read as of the range's end (older fragments and fill values
 *   where the range wrote nothing, so the box reads the same), written
 *   as one dense fragment named with the range [t1min, t2max]. Its .vac
 *   and the fragment itself apply only to windows that contain the whole
 *   range, so time travel into the range still sees the originals.
 * - sparse arrays of format 15 or later (TileDB's consolidation with
 *   timestamps): every cell of every fragment of the range, each fragment
 *   read alone in the window of its own time range, with the fragment's
 *   t1 stored as the cell's timestamp (t.tdb) and every version of a
 *   coordinate kept; named [t1min, t2max]. Such a fragment and its .vac
 *   apply to every window that overlaps the range, and the reader keeps
 *   only the cells whose timestamp is inside the window, so time travel
 *   into the range reads what it read before, except for cells that a
 *   delete commit removes: consolidation reads every fragment with all
 *   delete commits up to now applied, so deleted cells are not written
 *   (TileDB's purge of deleted cells); the delete commits stay in force
 *   for the fragments outside the range.
 * - other sparse ranges (format < 15, or a fragment of the range that
 *   has timestamps of its own, whose older versions cannot be read back
 *   one by one): the cells of the range's fragments alone (the window
 *   [t1min, t2max]) without timestamps, stamped [t2max, t2max] from
 *   format 15 on (where fragments and .vac files apply to every window
 *   that overlaps them) and [t1min, t2max] before, so that windows ending
 *   inside the range read the originals and later ones the merged cells.
 * Either way the range must not interleave in time with a fragment left
 * out of it (its place in the newest-wins order would change). */
#include "maintain_internal.h"

/* ---- Entry points --------------------------------------------------------- */

enum tfs_err tfs_array_consolidate(const char *path,
				   enum tfs_consolidate_mode mode,
				   const struct tfs_consolidate_opts *opts,
				   char *made, size_t made_cap,
				   struct tfs_diag *d)
{
	struct mt m;
	enum tfs_err e;

	tfs__mt_set_made(made, made_cap, NULL);
	e = tfs__mt_init(&m, path, opts ? &opts->write : NULL, d);
	if (e)
		return e;
	switch (mode) {
	case TFS_CONSOLIDATE_FRAGMENTS:
		e = tfs__consolidate_fragments(&m, opts, made, made_cap, d);
		break;
	case TFS_CONSOLIDATE_FRAGMENT_META:
		e = tfs__consolidate_fragment_meta(&m, made, made_cap, d);
		break;
	case TFS_CONSOLIDATE_COMMITS:
		e = tfs__consolidate_commits(&m, made, made_cap, d);
		break;
	case TFS_CONSOLIDATE_ARRAY_META:
		e = tfs__consolidate_array_meta(&m, made, made_cap, d);
		break;
	default:
		e = tfs_fail(d, TFS_E_INVALID, "unknown consolidation mode");
		break;
	}
	tfs__mt_release(&m);
	return e;
}

enum tfs_err tfs_array_vacuum(const char *path, enum tfs_consolidate_mode mode,
			      const struct tfs_write_opts *opts,
			      unsigned *removed, struct tfs_diag *d)
{
	unsigned count = 0;
	struct mt m;
	enum tfs_err e;

	if (removed)
		*removed = 0;
	e = tfs__mt_init(&m, path, opts, d);
	if (e)
		return e;
	switch (mode) {
	case TFS_CONSOLIDATE_FRAGMENTS:
		e = tfs__vacuum_fragments(&m, &count, d);
		break;
	case TFS_CONSOLIDATE_FRAGMENT_META:
		e = tfs__vacuum_fragment_meta(&m, &count, d);
		break;
	case TFS_CONSOLIDATE_COMMITS:
		e = tfs__vacuum_commits(&m, &count, d);
		break;
	case TFS_CONSOLIDATE_ARRAY_META:
		e = tfs__vacuum_array_meta(&m, &count, d);
		break;
	default:
		e = tfs_fail(d, TFS_E_INVALID, "unknown consolidation mode");
		break;
	}
	if (!e)
		e = tfs__remove_stale_tmp(&m, d);
	if (removed)
		*removed = count;
	tfs__mt_release(&m);
	return e;
}
