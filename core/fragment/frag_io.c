/* The bottom of the fragment module, used by the other files: array paths,
 * listing array folders with TileDB's rules (layout.md §4), reading and
 * decoding generic-tile files with the array's key, and finding a loaded
 * schema by name. Calls nothing else in the module. */
#include "fragment_internal.h"

#include <inttypes.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_bytes.h"

static const char *const reserved_names[] = {
	"__schema", "__meta", "__fragment_meta", "__fragments", "__commits",
	"__labels",
};

bool tfs__is_reserved_name(const char *name)
{
	for (size_t i = 0; i < sizeof(reserved_names) / sizeof(*reserved_names);
	     i++)
		if (!strcmp(name, reserved_names[i]))
			return true;
	return false;
}

char *tfs__array_path(const struct tfs_arraydir *a, const char *rel)
{
	if (!rel[0])
		return tfs_strdup(a->path);
	return tfs_path_join(a->path, rel);
}

static const char *last_component(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* An entry named like its folder or like a reserved name: an empty file of
 * the folder's own name is a marker to drop (*drop); one of a reserved name
 * may be masking a folder, which is corrupt. */
static enum tfs_err check_marker(const struct tfs_arraydir *a,
				 const char *dir, const char *name,
				 bool named_self, bool named_reserved,
				 bool *drop, struct tfs_diag *d)
{
	struct tfs_stat st;
	char *p = tfs_path_join(dir, name);
	enum tfs_err err;

	*drop = false;
	if (!p)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	err = tfs_vfs_stat(a->vfs, p, &st, d);
	if (!err && st.exists && !st.is_dir && st.size == 0) {
		if (named_reserved && !named_self)
			err = tfs_fail(d, TFS_E_CORRUPT,
				       "'%s': empty file may be masking a folder",
				       p);
		else
			*drop = true;
	}
	tfs_free(p);
	return err;
}

enum tfs_err tfs__list(const struct tfs_arraydir *a, const char *rel,
		       bool optional, bool rules, struct tfs_dirlist *out,
		       struct tfs_diag *d)
{
	struct tfs_diag ld;
	struct tfs_dirlist l;
	const char *self;
	char *dir;
	enum tfs_err err;
	size_t keep = 0;

	out->names = NULL;
	out->count = 0;
	dir = tfs__array_path(a, rel);
	if (!dir)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	tfs_diag_init(&ld);
	err = tfs_vfs_list(a->vfs, dir, &l, &ld);
	if (err == TFS_E_NOT_FOUND && optional) {
		tfs_free(dir);
		return TFS_E_OK;
	}
	if (err) {
		tfs_fail(d, err, "%s", tfs_diag_msg(&ld));
		tfs_free(dir);
		return err;
	}
	self = last_component(dir);
	for (size_t i = 0; i < l.count; i++) {
		const char *name = l.names[i];
		bool named_self = rules && !strcmp(name, self);
		bool named_reserved = rules && tfs__is_reserved_name(name);
		bool drop = false;

		if (named_self || named_reserved) {
			err = check_marker(a, dir, name, named_self,
					   named_reserved, &drop, d);
			if (err)
				goto out_release;
		}
		if (drop) {
			tfs_free(l.names[i]);
			l.names[i] = NULL;
			continue;
		}
		l.names[keep] = l.names[i];
		if (keep != i)
			l.names[i] = NULL;
		keep++;
	}
	l.count = keep;
	tfs_free(dir);
	*out = l;
	return TFS_E_OK;

out_release:
	/* Kept entries were moved to l.names[0..keep); every other slot holds
	 * an entry not yet looked at, or NULL. */
	for (size_t i = keep; i < l.count; i++)
		tfs_free(l.names[i]);
	l.count = keep;
	tfs_dirlist_release(&l);
	tfs_free(dir);
	return err;
}

/* Decodes with key (32 bytes or NULL); noun names the object ("array",
 * "group") in key messages. */
static enum tfs_err decode_with_key(const uint8_t *key, const char *noun,
				    const char *what, const uint8_t *buf,
				    size_t len, size_t max_payload,
				    uint8_t **payload, size_t *payload_len,
				    size_t *consumed, struct tfs_diag *d)
{
	struct tfs_diag ld;
	size_t used;
	enum tfs_err err;
	int enc = len >= TFS_GENERIC_HEADER_FIXED ? buf[29] : -1;

	*payload = NULL;
	*payload_len = 0;
	tfs_diag_init(&ld);
	err = tfs_generic_tile_decode(buf, len, key, max_payload, payload,
				      payload_len, &used, &ld);
	if (!err) {
		if (consumed)
			*consumed = used;
		return TFS_E_OK;
	}
	/* The format module says TFS_E_KEY for a tile whose encryption does
	 * not match the key, and for AES-GCM authentication failures. */
	if (err == TFS_E_KEY && enc == 1 && !key)
		return tfs_fail(d, TFS_E_KEY,
				"'%s': the %s is encrypted and no key was given",
				what, noun);
	if (err == TFS_E_KEY && enc == 0 && key)
		return tfs_fail(d, TFS_E_KEY,
				"'%s': a key was given but the %s is not encrypted",
				what, noun);
	if (err == TFS_E_KEY)
		return tfs_fail(d, TFS_E_KEY, "'%s': wrong encryption key (%s)",
				what, tfs_diag_msg(&ld));
	return tfs_fail(d, err, "'%s': %s", what, tfs_diag_msg(&ld));
}

enum tfs_err tfs__decode_tile(const struct tfs_arraydir *a, const char *what,
			      const uint8_t *buf, size_t len, size_t max_payload,
			      uint8_t **payload, size_t *payload_len,
			      size_t *consumed, struct tfs_diag *d)
{
	return decode_with_key(a->has_key ? a->key : NULL, "array", what, buf,
			       len, max_payload, payload, payload_len, consumed,
			       d);
}

enum tfs_err tfs_tile_file_read(struct tfs_vfs *vfs, const char *path,
				const uint8_t *key, const char *noun,
				uint8_t **payload, size_t *payload_len,
				struct tfs_diag *d)
{
	uint8_t *buf;
	size_t len;
	enum tfs_err err;

	*payload = NULL;
	*payload_len = 0;
	err = tfs_vfs_read_all(vfs, path, TFS__FILE_MAX, &buf, &len, d);
	if (err)
		return err;
	err = decode_with_key(key, noun, path, buf, len, TFS__FILE_MAX,
			      payload, payload_len, NULL, d);
	tfs_free(buf);
	return err;
}

enum tfs_err tfs__read_tile_file(const struct tfs_arraydir *a, const char *rel,
				 uint8_t **payload, size_t *payload_len,
				 struct tfs_diag *d)
{
	enum tfs_err err;
	char *path = tfs__array_path(a, rel);

	*payload = NULL;
	*payload_len = 0;
	if (!path)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	err = tfs_tile_file_read(a->vfs, path, a->has_key ? a->key : NULL,
				 "array", payload, payload_len, d);
	tfs_free(path);
	return err;
}

/* The total size of the generic tile at off of a file of file_size bytes,
 * from its fixed header head, checked against the file. */
static enum tfs_err tile_span(const char *path, uint64_t file_size,
			      uint64_t off, const uint8_t *head, uint64_t *total,
			      struct tfs_diag *d)
{
	uint64_t t = tfs_get_u64(head + 4);
	uint64_t room = file_size - off - TFS_GENERIC_HEADER_FIXED;

	/* Total size = header + filter list + persisted bytes
	 * (generic_tile.md §1). */
	if (t > room || tfs_get_u32(head + 30) > room - t)
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': generic tile at offset %" PRIu64
				" runs past the end of the file",
				path, off);
	t += TFS_GENERIC_HEADER_FIXED + tfs_get_u32(head + 30);
	if (t > TFS__FILE_MAX)
		return tfs_fail(d, TFS_E_TOO_BIG,
				"'%s': generic tile at offset %" PRIu64
				" is too large (%" PRIu64 " bytes)",
				path, off, t);
	*total = t;
	return TFS_E_OK;
}

enum tfs_err tfs__read_tile_at(const struct tfs_arraydir *a, const char *path,
			       const uint8_t *whole, uint64_t file_size,
			       uint64_t off, size_t max_payload,
			       uint8_t **payload, size_t *payload_len,
			       struct tfs_diag *d)
{
	uint8_t head[TFS_GENERIC_HEADER_FIXED];
	const uint8_t *tile;
	uint64_t total = 0;
	uint8_t *buf = NULL;
	enum tfs_err err;

	*payload = NULL;
	*payload_len = 0;
	if (off > file_size || file_size - off < sizeof(head))
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': generic tile at offset %" PRIu64
				" is past the end of the file (%" PRIu64 " bytes)",
				path, off, file_size);
	if (whole)
		memcpy(head, whole + off, sizeof(head));
	else if ((err = tfs_vfs_read(a->vfs, path, off, head, sizeof(head), d)))
		return err;
	err = tile_span(path, file_size, off, head, &total, d);
	if (err)
		return err;
	if (whole) {
		tile = whole + off;
	} else {
		buf = tfs_malloc((size_t)total);
		if (!buf)
			return tfs_fail(d, TFS_E_NOMEM, "'%s': out of memory",
					path);
		err = tfs_vfs_read(a->vfs, path, off, buf, (size_t)total, d);
		tile = buf;
	}
	if (!err) {
		struct tfs_diag ld;

		tfs_diag_init(&ld);
		err = tfs__decode_tile(a, path, tile, (size_t)total,
				       max_payload, payload, payload_len, NULL,
				       &ld);
		if (err)
			tfs_fail(d, ld.code, "%s (tile at offset %" PRIu64 ")",
				 ld.msg, off);
	}
	tfs_free(buf);
	return err;
}

const struct tfs_schema *tfs__find_schema(const struct tfs_arraydir *a,
					  const char *name)
{
	for (size_t i = 0; i < a->schema_num; i++)
		if (!strcmp(a->schemas[i].name, name))
			return &a->schemas[i];
	return NULL;
}
