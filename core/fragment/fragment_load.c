/* One fragment: its footer (from a consolidated .meta file or from the end
 * of its own __fragment_metadata.tdb, format/fragment.md §3–4 and
 * consolidated.md §1), its schema (schema.md §9), its tile and cell counts
 * (fragment.md §7), the lazily loaded per-slot tile lists, R-tree and
 * processed delete conditions (fragment.md §5–6), and the names of its data
 * files (fragment.md §1–2).
 *
 * Lazy loads run at most once per item under the mutex of what the
 * fragment shares with the other open versions of its array
 * (frag_shared.c), held across the reads of that item: this is the one
 * place the engine holds a lock during I/O, so that concurrent first
 * readers of a fragment wait for one load instead of each reading the same
 * bytes. */
#include "fragment_load_internal.h"

/* ---- tile and cell numbers ---------------------------------------------- */

/* Unsigned value of an integer of `size` bytes (little-endian). */
static uint64_t load_uint(const uint8_t *p, size_t size)
{
	uint64_t v = 0;

	for (size_t i = size; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t type_mask(size_t size)
{
	return size >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1;
}

static bool dim_has_int_tiles(const struct tfs_dim *dim)
{
	return !dim->var && dim->has_domain && dim->has_extent &&
	       tfs_datatype_is_integer(dim->type);
}

uint64_t tfs_schema_tile_cells(const struct tfs_schema *s)
{
	uint64_t cells = 1;

	for (uint32_t i = 0; i < s->dim_num; i++) {
		const struct tfs_dim *dim = &s->dims[i];
		size_t size = tfs_datatype_size(dim->type);
		uint64_t ext;

		if (!dim_has_int_tiles(dim) || size == 0 || size > 8)
			return 0;
		ext = load_uint(dim->extent, size) & type_mask(size);
		if (ext == 0 || cells > UINT64_MAX / ext)
			return 0;
		cells *= ext;
	}
	return cells;
}

/* Dense: tiles of the NED expanded to tile boundaries (read.md §2). */
static enum tfs_err dense_tile_num(struct tfs_fragment *f, uint64_t *out,
				   struct tfs_diag *d)
{
	const struct tfs_schema *s = f->schema;
	uint64_t tiles = 1;

	for (uint32_t k = 0; k < s->dim_num; k++) {
		const struct tfs_dim *dim = &s->dims[k];
		const struct tfs_range *r = &f->footer.ned[k];
		size_t size = tfs_datatype_size(dim->type);
		uint64_t mask, lo, ext, ilo, ihi, n;

		if (!dim_has_int_tiles(dim) || size == 0 || size > 8)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': dense, but dimension '%s' has no integer tiles",
					f->name, dim->name);
		if (tfs_value_cmp(dim->type, r->lo, dim->domain[0]) < 0 ||
		    tfs_value_cmp(dim->type, r->hi, dim->domain[1]) > 0 ||
		    tfs_value_cmp(dim->type, r->lo, r->hi) > 0)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': non-empty domain of dimension '%s' is outside the array domain",
					f->name, dim->name);
		mask = type_mask(size);
		lo = load_uint(dim->domain[0], size);
		ext = load_uint(dim->extent, size) & mask;
		if (ext == 0)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': dimension '%s' has a zero tile extent",
					f->name, dim->name);
		ilo = ((load_uint(r->lo, size) - lo) & mask) / ext;
		ihi = ((load_uint(r->hi, size) - lo) & mask) / ext;
		n = ihi - ilo + 1;
		if (n == 0 || tiles > UINT64_MAX / n)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': too many tiles", f->name);
		tiles *= n;
	}
	*out = tiles;
	return TFS_E_OK;
}

static enum tfs_err compute_counts(struct tfs_fragment *f, struct tfs_diag *d)
{
	const struct tfs_footer *ft = &f->footer;
	enum tfs_err err;

	f->tile_num = 0;
	f->cell_num = 0;
	if (ft->empty)
		return TFS_E_OK;
	if (ft->dense) {
		uint64_t cells = tfs_schema_tile_cells(f->schema);

		err = dense_tile_num(f, &f->tile_num, d);
		if (err)
			return err;
		if (cells == 0 || f->tile_num > UINT64_MAX / cells)
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': too many cells", f->name);
		f->cell_num = f->tile_num * cells;
		return TFS_E_OK;
	}
	f->tile_num = ft->sparse_tile_num;
	if (f->tile_num) {
		uint64_t cap = f->schema->capacity;
		uint64_t full = f->tile_num - 1;

		if (ft->last_tile_cell_num > cap ||
		    (cap && full > (UINT64_MAX - ft->last_tile_cell_num) / cap))
			return tfs_fail(d, TFS_E_CORRUPT,
					"fragment '%s': last tile holds %" PRIu64
					" cells, capacity is %" PRIu64,
					f->name, ft->last_tile_cell_num, cap);
		f->cell_num = full * cap + ft->last_tile_cell_num;
	}
	return TFS_E_OK;
}

/* ---- creating and freeing ----------------------------------------------- */

void tfs__fragment_free(struct tfs_fragment *f)
{
	if (!f)
		return;
	tfs__frag_shared_put(f->shared);
	tfs_footer_release(&f->footer);
	if (f->legacy) {
		tfs_legacy_meta_release(f->legacy);
		tfs_free(f->legacy);
	}
	tfs_free(f->name);
	tfs_free(f->dir);
	tfs_free(f);
}

enum tfs_err tfs__fragment_new(const struct tfs_arraydir *a, const char *rel,
			       const struct tfs__meta_index *idx,
			       struct tfs_fragment **out, struct tfs_diag *d)
{
	const struct meta_key *k;
	struct tfs_fragment *f;
	uint8_t *meta_bytes = NULL;
	const char *slash = strrchr(rel, '/');
	enum tfs_err err;

	*out = NULL;
	f = tfs_callocn(1, sizeof(*f));
	if (!f)
		return tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
				a->path);
	f->name = tfs_strdup(slash ? slash + 1 : rel);
	f->dir = tfs__array_path(a, rel);
	if (!f->name || !f->dir) {
		err = tfs_fail(d, TFS_E_NOMEM, "array '%s': out of memory",
			       a->path);
		goto out_free;
	}
	if (tfs_name_parse(f->name, &f->name_info) != TFS_E_OK) {
		err = tfs_fail(d, TFS_E_CORRUPT,
			       "fragment '%s': not a timestamped name", f->dir);
		goto out_free;
	}
	if (f->name_info.version <= 2) {
		/* Footers of versions 1–2 are never consolidated. */
		err = tfs__legacy_from_file(a, f, d);
	} else {
		k = tfs__meta_find(idx, f->name);
		err = k ? tfs__footer_from_meta(a, f, idx, k, d)
			: tfs__footer_from_file(a, f, &meta_bytes, d);
	}
	if (!err)
		err = compute_counts(f, d);
	if (err) {
		tfs_free(meta_bytes);
		goto out_free;
	}
	err = tfs__frag_share(a, f, meta_bytes, d);
	if (err)
		goto out_free;
	if (f->legacy) {
		err = tfs__take_legacy_lists(f, d);
		if (err)
			goto out_free;
	}
	*out = f;
	return TFS_E_OK;

out_free:
	tfs__fragment_free(f);
	return err;
}

/* ---- data file names (fragment.md §2) ----------------------------------- */

uint32_t tfs_fragment_dim_slot(const struct tfs_fragment *f, uint32_t dim)
{
	if (f->footer.version < 5)
		return f->schema->attr_num; /* zipped __coords */
	return f->schema->attr_num + 1 + dim;
}

uint32_t tfs_fragment_timestamps_slot(const struct tfs_fragment *f)
{
	return f->schema->attr_num + 1 +
	       (f->footer.version >= 5 ? f->schema->dim_num : 0);
}

uint32_t tfs_fragment_delete_ts_slot(const struct tfs_fragment *f)
{
	return tfs_fragment_timestamps_slot(f) +
	       (f->footer.has_timestamps ? 1 : 0);
}

/* Version 8 file-name encoding: these exact replacement strings (some are
 * not the real percent codes). */
static const char *v8_escape(unsigned char c)
{
	switch (c) {
	case '!': return "%21";
	case '#': return "%23";
	case '$': return "%24";
	case '%': return "%25";
	case '&': return "%26";
	case '\'': return "%27";
	case '(': return "%28";
	case ')': return "%29";
	case '*': return "%2A";
	case '+': return "%2B";
	case ',': return "%2C";
	case '/': return "%2F";
	case ':': return "%3A";
	case ';': return "%3B";
	case '=': return "%3D";
	case '?': return "%3F";
	case '@': return "%40";
	case '[': return "%5B";
	case ']': return "%5D";
	case '"': return "%22";
	case '<': return "%20";
	case '>': return "%2D";
	case '\\': return "%30";
	case '|': return "%3C";
	default: return NULL;
	}
}

/* Appends the file stem of field `name` for a fragment of version v. */
static enum tfs_err append_field_name(struct tfs_buf *b, const char *name,
				      uint32_t v)
{
	enum tfs_err err = TFS_E_OK;

	if (v != 8)
		return tfs_buf_append(b, name, strlen(name));
	for (const char *p = name; *p && !err; p++) {
		const char *esc = v8_escape((unsigned char)*p);

		err = esc ? tfs_buf_append(b, esc, 3)
			  : tfs_buf_append_u8(b, (uint8_t)*p);
	}
	return err;
}

char *tfs_fragment_file_path(const struct tfs_fragment *f, uint32_t slot,
			     enum tfs_file_kind kind)
{
	const struct tfs_schema *s = f->schema;
	uint32_t v = f->footer.version;
	uint32_t a_num = s->attr_num;
	uint32_t dims = v >= 5 ? s->dim_num : 0;
	uint32_t ts = tfs_fragment_timestamps_slot(f);
	static const char *const suffix[] = {".tdb", "_var.tdb",
					     "_validity.tdb"};
	struct tfs_buf b;
	enum tfs_err err;
	uint8_t *bytes;
	size_t len;

	if ((unsigned)kind > TFS_FILE_VALIDITY || slot >= f->footer.slot_num)
		return NULL;
	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	err = tfs_buf_append(&b, f->dir, strlen(f->dir));
	if (!err)
		err = tfs_buf_append_u8(&b, '/');
	if (err)
		goto out_fail;
	if (slot < a_num) {
		if (v >= 9)
			err = tfs_buf_printf(&b, "a%u", slot);
		else
			err = append_field_name(&b, s->attrs[slot].name, v);
	} else if (slot == a_num) {
		err = tfs_buf_append(&b, "__coords", 8);
	} else if (slot <= a_num + dims) {
		if (v >= 9)
			err = tfs_buf_printf(&b, "d%u", slot - a_num - 1);
		else
			err = append_field_name(&b, s->dims[slot - a_num - 1].name,
						v);
	} else {
		/* Special fields of consolidated fragments (v14+/v15+). */
		uint32_t extra = slot - ts;

		if (!f->footer.has_timestamps)
			extra++;
		err = tfs_buf_printf(&b, "%s",
				     extra == 0 ? "t" : extra == 1 ? "dt" : "dci");
	}
	if (!err)
		err = tfs_buf_append(&b, suffix[kind], strlen(suffix[kind]));
	if (!err)
		err = tfs_buf_append_u8(&b, 0);
	if (err)
		goto out_fail;
	bytes = tfs_buf_detach(&b, &len);
	return (char *)bytes;

out_fail:
	tfs_buf_release(&b);
	return NULL;
}
