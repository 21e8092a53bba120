/* tilefs core: TileDB groups (format/groups.md), read-only.
 *
 * A group is a folder that names other TileDB objects (arrays or groups) as
 * its members, with key/value metadata like an array's. Opening a group
 * at a point in time merges its group details files (groups.md §3) into
 * one member list and its __meta/ files into one metadata list; both are
 * then fixed. An opened struct tfs_group is immutable and may be shared by
 * threads; everything the accessors return is valid until tfs_group_close.
 *
 * Three layouts are read:
 *  - version 2 (what TileDB writes today): __group/ holds one details file
 *    per write session; all of them are replayed in time order, and
 *    entries flagged deleted remove members;
 *  - version 1 (older TileDB): the newest details file alone is the member
 *    list;
 *  - legacy (before format 12: only __tiledb_group.tdb, no __group/):
 *    there is no member list on disk; the members are the child folders
 *    that are arrays or groups themselves, unnamed and relative. (Today's
 *    TileDB shows such a group as empty; tilefs shows what is in it.) */
#ifndef TFS_GROUP_H
#define TFS_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_err.h"
#include "tfs_schema.h"
#include "tfs_vfs.h"
#include "tilefs.h"

struct tfs_group;

struct tfs_group_opts {
	struct tfs_vfs *vfs; /* NULL: the POSIX file system */
	const uint8_t *key;  /* 32-byte AES-256-GCM key of an encrypted group,
				or NULL */
	uint64_t timestamp;  /* open at this time (ms); 0 = now */
};

enum tfs_group_format {
	TFS_GROUP_FORMAT_LEGACY, /* only __tiledb_group.tdb, no __group/ */
	TFS_GROUP_FORMAT_V1,     /* newest details file has version 1 */
	TFS_GROUP_FORMAT_V2,     /* __group/ with version-2 files, or none */
};

struct tfs_group_member {
	/* What TileDB keys members by: the name if set, else the uri. Unique
	 * in a group; members are sorted by key bytes. */
	const char *key;
	const char *name;     /* NULL when the member has no name */
	const char *uri;      /* as stored: "arr1", "file:///data/arr1" */
	bool relative;        /* uri is relative to the group folder */
	/* The member's folder as a path for the group's vfs: the group path
	 * joined with a relative uri ("." and empty components dropped), or
	 * the path of a file:// or '/' uri; NULL for other schemes (s3://,
	 * tiledb://...), which tilefs cannot reach. The folder may be
	 * missing or hold something else than `type` says: the group file
	 * is not checked against it. */
	const char *path;
	/* True when uri is relative and names a folder strictly below the
	 * group folder (no ".." component, not the group itself), so the
	 * member can be presented at its own sub-path. */
	bool inside;
	enum tfs_object type; /* as recorded: TFS_OBJECT_ARRAY or _GROUP */
};

/* Opens the group folder at path as of opts->timestamp: the details files
 * and metadata files whose [t1, t2] lie entirely in [0, timestamp], minus
 * those hidden by vacuum lists (groups.md §3, metadata.md §2). A missing
 * folder is TFS_E_NOT_FOUND, a folder that is no group (an array, a plain
 * folder) TFS_E_NOT_ARRAY, bad files TFS_E_CORRUPT or TFS_E_UNSUPPORTED
 * (versions other than 1 and 2), a key mismatch TFS_E_KEY; d says which
 * file and why. opts may be NULL. *out is NULL on failure. */
enum tfs_err tfs_group_open(const char *path, const struct tfs_group_opts *opts,
			    struct tfs_group **out, struct tfs_diag *d) TFS_WUR;
void tfs_group_close(struct tfs_group *g);

/* The group's path (trailing slashes removed) and layout. */
const char *tfs_group_path(const struct tfs_group *g);
enum tfs_group_format tfs_group_format(const struct tfs_group *g);

/* Members at the opening time, sorted by key. */
size_t tfs_group_member_count(const struct tfs_group *g);
const struct tfs_group_member *tfs_group_member(const struct tfs_group *g,
						size_t i);

/* Group metadata at the opening time, sorted by key (no deleted keys). */
size_t tfs_group_metadata_count(const struct tfs_group *g);
const struct tfs_meta_kv *tfs_group_metadata(const struct tfs_group *g,
					     size_t i);

#endif
