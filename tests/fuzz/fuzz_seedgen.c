/* Writes the seed inputs of the fuzz targets: usage
 *   fuzz_seedgen CORPUS OUTDIR
 * fills OUTDIR/<target>/ from the TileDB arrays under CORPUS (whole
 * array folders, schemas,
 * fragment metadata with their schema, per-slot data tiles with their
 * pipeline, array and group metadata, enumerations, commits, delete
 * conditions, names) and from synthetic inputs (every filter with typical
 * options on typical data; condition trees; delicate doubles for the
 * float formatter). Selection seeds come from
 * seeds.sh. Encrypted arrays are read with the corpus key. Exits non-zero
 * when it cannot write or finds nothing. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_fragment.h"
#include "tfs_read.h"
#include "tfs_str.h"

/* Seeds stay small: libFuzzer's default max_len follows the largest. */
#define MAX_SEED ((size_t)256 << 10)
#define MAX_TILES_PER_SLOT 3

static const char *outdir;
static unsigned long written;

static void put_seed(const char *target, const char *id, const void *a,
		     size_t alen, const void *b, size_t blen)
{
	char path[4096];
	FILE *f;

	if (alen + blen > MAX_SEED)
		return;
	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	if (mkdir(path, 0777) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, id);
	for (char *p = path + strlen(outdir) + strlen(target) + 2; *p; p++)
		if (*p == '/')
			*p = '~';
	f = fopen(path, "wb");
	if (!f || (alen && fwrite(a, 1, alen, f) != alen) ||
	    (blen && fwrite(b, 1, blen, f) != blen) || fclose(f)) {
		perror(path);
		exit(1);
	}
	written++;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return NULL;
	}
	buf = malloc(n ? (size_t)n : 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* ---- single files, by where they live ---------------------------------- */

/* Decodes a generic-tile file and writes its payload as a seed of target
 * (and the file itself as a generic tile seed). */
static void tile_file(const char *target, const char *id, const uint8_t *buf,
		      size_t len, uint8_t prefix, bool with_prefix)
{
	uint8_t *payload;
	size_t plen;

	put_seed("fuzz_generic_tile", id, buf, len, NULL, 0);
	if (fuzz_generic_decode(buf, len, &payload, &plen, NULL))
		return;
	if (with_prefix)
		put_seed(target, id, &prefix, 1, payload, plen);
	else
		put_seed(target, id, payload, plen, NULL, 0);
	tfs_free(payload);
}

static void one_file(const char *path, const char *rel, const char *name)
{
	uint8_t *buf, mode;
	size_t len;

	buf = read_file(path, &len);
	if (!buf)
		return;
	if (strstr(rel, "/__enumerations/")) {
		tile_file("fuzz_enumeration", rel, buf, len, 0, false);
	} else if (strstr(rel, "__schema/") ||
		   strcmp(name, "__array_schema.tdb") == 0) {
		tile_file("fuzz_schema", rel, buf, len, 0, false);
	} else if (tfs_str_ends_with(name, ".vac") || tfs_str_ends_with(name, ".ign")) {
		mode = 1;
		put_seed("fuzz_commits", rel, &mode, 1, buf, len);
	} else if (tfs_str_ends_with(name, ".con")) {
		mode = 0;
		put_seed("fuzz_commits", rel, &mode, 1, buf, len);
	} else if (tfs_str_ends_with(name, ".del") || tfs_str_ends_with(name, ".upd")) {
		tile_file("fuzz_condition", rel, buf, len, 0, false);
	} else if (strstr(rel, "__meta/")) {
		tile_file("fuzz_metadata", rel, buf, len, 0, false);
	} else if (strstr(rel, "__group/")) {
		tile_file("fuzz_group_details", rel, buf, len, 0, false);
	} else if (strstr(rel, "__fragment_meta/")) {
		tile_file("fuzz_commits", rel, buf, len, 2, true);
	} else if (strcmp(name, "__fragment_metadata.tdb") == 0) {
		put_seed("fuzz_generic_tile", rel, buf, len, NULL, 0);
	}
	free(buf);
}

/* ---- arrays: fragment metadata with its schema, data tiles ------------- */

static void put_fragment_meta(const char *id, const struct tfs_schema *s,
			      uint8_t mode, uint8_t nv, const uint8_t *file,
			      size_t len)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	if (tfs_buf_append_u32(&b, 0) || tfs_schema_serialize(&b, s) ||
	    tfs_buf_append_u8(&b, mode) || tfs_buf_append_u8(&b, nv)) {
		fprintf(stderr, "%s: cannot serialize its schema\n", id);
		tfs_buf_release(&b);
		return;
	}
	tfs_put_u32(b.data, (uint32_t)(b.len - 6));
	put_seed("fuzz_fragment_meta", id, b.data, b.len, file, len);
	tfs_buf_release(&b);
}

/* One pipeline seed: header, filter list, tile bytes. */
static void put_tile(const char *id, const struct tfs_pipeline *p,
		     uint32_t schema_version, uint8_t flags, uint8_t type,
		     uint8_t version, uint64_t cell_size, uint64_t cells,
		     const uint8_t *tile, size_t len)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	if (tfs_buf_append_u8(&b, flags) || tfs_buf_append_u8(&b, type) ||
	    tfs_buf_append_u8(&b, version) ||
	    tfs_buf_append_u8(&b, (uint8_t)cell_size) ||
	    tfs_buf_append_u8(&b, (uint8_t)(cell_size >> 8)) ||
	    tfs_buf_append_u32(&b, (uint32_t)cells) ||
	    tfs_buf_append_u32(&b, 0) ||
	    tfs_pipeline_serialize(&b, p, schema_version)) {
		tfs_buf_release(&b);
		return;
	}
	tfs_put_u32(b.data + 9, (uint32_t)(b.len - 13));
	put_seed("fuzz_pipeline", id, b.data, b.len, tile, len);
	tfs_buf_release(&b);
}

static uint8_t *read_range(const char *path, uint64_t from, uint64_t to)
{
	FILE *f;
	uint8_t *buf;

	if (to < from || to - from > MAX_SEED)
		return NULL;
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	buf = malloc(to - from ? (size_t)(to - from) : 1);
	if (buf && (fseek(f, (long)from, SEEK_SET) ||
		    fread(buf, 1, (size_t)(to - from), f) != to - from)) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* The persisted bytes of tile t of one file of a slot. */
static uint8_t *slot_tile_bytes(const struct tfs_fragment *f, uint32_t slot,
				enum tfs_file_kind kind, const uint64_t *offs,
				uint64_t file_size, uint64_t t, size_t *len)
{
	uint64_t end = t + 1 < f->tile_num ? offs[t + 1] : file_size;
	char *path = tfs_fragment_file_path(f, slot, kind);
	uint8_t *buf;

	if (!path)
		return NULL;
	buf = read_range(path, offs[t], end);
	tfs_free(path);
	*len = (size_t)(end - offs[t]);
	return buf;
}

static void fragment_tiles(struct tfs_arraydir *a, struct tfs_fragment *f,
			   const char *rel)
{
	const struct tfs_schema *s = f->schema;
	uint8_t flags = a->has_key ? 2 | 4 : 0;
	uint8_t v = (uint8_t)f->footer.version;

	for (uint32_t slot = 0; slot < f->footer.slot_num; slot++) {
		const struct tfs_slot_tiles *st;
		struct tfs_slot_desc desc;
		struct tfs_diag d;

		tfs_diag_init(&d);
		if (tfs_slot_describe(f, slot, &desc, &d) ||
		    tfs_fragment_slot_tiles(a, f, slot, &st, &d))
			continue;
		for (uint64_t t = 0; t < f->tile_num && t < MAX_TILES_PER_SLOT;
		     t++) {
			uint64_t cells = tfs_fragment_tile_cells(f, t);
			char id[4096 + 128];
			uint8_t *fixed, *var;
			size_t flen, vlen;

			fixed = slot_tile_bytes(f, slot, TFS_FILE_FIXED,
						st->offsets,
						f->footer.file_sizes[slot], t,
						&flen);
			if (!fixed)
				continue;
			snprintf(id, sizeof(id), "%s~s%u~t%llu", rel, slot,
				 (unsigned long long)t);
			if (!desc.var) {
				put_tile(id, desc.filters, s->version, flags,
					 desc.type, v, desc.cell_size, cells,
					 fixed, flen);
			} else {
				put_tile(id, &s->offsets_filters, s->version,
					 flags, TFS_UINT64, v, 8, cells, fixed,
					 flen);
				var = st->var_offsets
					      ? slot_tile_bytes(
							f, slot, TFS_FILE_VAR,
							st->var_offsets,
							f->footer
								.file_var_sizes[slot],
							t, &vlen)
					      : NULL;
				/* Offsets of zero chunks: embedded in the
				 * values tile (tile.md §4). */
				bool embedded = flen == 8 &&
						tfs_get_u64(fixed) == 0;

				snprintf(id, sizeof(id), "%s~s%u~t%llu~var", rel,
					 slot, (unsigned long long)t);
				if (var)
					put_tile(id, desc.filters, s->version,
						 flags | (embedded ? 1 : 0),
						 desc.type, v,
						 tfs_datatype_size(desc.type),
						 cells, var, vlen);
				free(var);
			}
			free(fixed);
			if (desc.nullable && st->validity_offsets) {
				uint8_t *val = slot_tile_bytes(
					f, slot, TFS_FILE_VALIDITY,
					st->validity_offsets,
					f->footer.file_validity_sizes[slot], t,
					&vlen);

				snprintf(id, sizeof(id), "%s~s%u~t%llu~validity",
					 rel, slot, (unsigned long long)t);
				if (val)
					put_tile(id, &s->validity_filters,
						 s->version, flags, TFS_UINT8, v,
						 1, cells, val, vlen);
				free(val);
			}
		}
	}
}

/* Appends every file under dir as fuzz_array's entries (path relative
 * to the array folder). False when the array is too big for a seed. */
static bool pack_files(struct tfs_buf *b, const char *dir, const char *rel)
{
	struct dirent *de;
	struct stat st;
	bool ok = true;
	DIR *dh = opendir(dir);

	if (!dh)
		return false;
	while (ok && (de = readdir(dh))) {
		char child[4096], crel[512];
		uint8_t *buf;
		size_t len;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(child, sizeof(child), "%s/%s", dir, de->d_name);
		snprintf(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "",
			 de->d_name);
		if (stat(child, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			ok = pack_files(b, child, crel);
			continue;
		}
		if (strlen(crel) > 255 || b->len + st.st_size > MAX_SEED)
			ok = false;
		buf = ok ? read_file(child, &len) : NULL;
		if (buf && (tfs_buf_append_u8(b, (uint8_t)strlen(crel)) ||
			    tfs_buf_append(b, crel, strlen(crel)) ||
			    tfs_buf_append_u32(b, (uint32_t)len) ||
			    tfs_buf_append(b, buf, len)))
			ok = false;
		free(buf);
	}
	closedir(dh);
	return ok;
}

/* The whole folder as a fuzz_array seed, opened now and, when it has
 * several fragments, at the time of its first one. */
static void put_array(const char *path, const char *rel, bool key,
		      uint64_t first_t)
{
	struct tfs_buf b;

	tfs_buf_init(&b, TFS_BUF_NO_MAX);
	if (tfs_buf_append_u8(&b, key ? 1 : 0) || !pack_files(&b, path, "")) {
		tfs_buf_release(&b);
		return;
	}
	put_seed("fuzz_array", rel, b.data, b.len, NULL, 0);
	if (first_t) {
		struct tfs_buf tb;
		char id[4096];

		tfs_buf_init(&tb, TFS_BUF_NO_MAX);
		if (!tfs_buf_append_u8(&tb, (key ? 1 : 0) | 2) &&
		    !tfs_buf_append_u64(&tb, first_t) &&
		    !tfs_buf_append(&tb, b.data + 1, b.len - 1)) {
			snprintf(id, sizeof(id), "%.4000s@t", rel);
			put_seed("fuzz_array", id, tb.data, tb.len, NULL, 0);
		}
		tfs_buf_release(&tb);
	}
	tfs_buf_release(&b);
}

static void one_array(const char *path, const char *rel)
{
	struct tfs_arraydir_opts opts = {.key = NULL, .t0 = 0, .t1 = UINT64_MAX};
	struct tfs_arraydir *a = NULL;
	struct tfs_vfs *vfs;
	struct tfs_diag d;
	enum tfs_err e;

	if (tfs_vfs_posix_new(&vfs))
		exit(1);
	tfs_diag_init(&d);
	e = tfs_arraydir_open(vfs, path, &opts, &a, &d);
	if (e == TFS_E_KEY) {
		opts.key = fuzz_corpus_key;
		tfs_diag_init(&d);
		e = tfs_arraydir_open(vfs, path, &opts, &a, &d);
	}
	if (e) {
		fprintf(stderr, "seedgen: skipping %s: %s\n", rel, d.msg);
		tfs_vfs_free(vfs);
		return;
	}
	for (size_t i = 0; i < a->frag_pool_num; i++) {
		struct tfs_fragment *f = a->frag_pool[i];
		uint32_t nv = f->name_info.version;
		char *meta = tfs_path_join(f->dir, "__fragment_metadata.tdb");
		char id[4000];
		uint8_t *buf;
		size_t len;

		if (!meta || !f->schema)
			goto next;
		buf = read_file(meta, &len);
		snprintf(id, sizeof(id), "%.2000s/%.1000s", rel, f->name);
		if (buf)
			put_fragment_meta(id, f->schema,
					  nv <= 2 ? 1 | (f->footer.dense ? 4 : 0)
						  : 0,
					  (uint8_t)nv, buf, len);
		free(buf);
		fragment_tiles(a, f, id);
next:
		tfs_free(meta);
	}

	/* Consolidated fragment metadata, with the current schema. */
	char dir[4096];
	DIR *dh;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%s/__fragment_meta", path);
	dh = opendir(dir);
	while (dh && (de = readdir(dh))) {
		char file[8192], id[8192];
		uint8_t *buf;
		size_t len;

		if (!tfs_str_ends_with(de->d_name, ".meta"))
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
		snprintf(id, sizeof(id), "%s/__fragment_meta/%s", rel,
			 de->d_name);
		buf = read_file(file, &len);
		if (buf)
			put_fragment_meta(id, a->schema, 2, 22, buf, len);
		free(buf);
	}
	if (dh)
		closedir(dh);
	put_array(path, rel, opts.key != NULL,
		  a->listed_num > 1 ? a->listed[0]->name_info.t2 : 0);
	tfs_arraydir_close(a);
	tfs_vfs_free(vfs);
}

/* Walks the corpus: every file by its place, every name, every array. */
static void walk(const char *path, const char *rel)
{
	struct dirent *de;
	struct stat st;
	DIR *dh;

	dh = opendir(path);
	if (!dh)
		return;
	{
		char schema[4096], legacy[4096];

		snprintf(schema, sizeof(schema), "%s/__schema", path);
		snprintf(legacy, sizeof(legacy), "%s/__array_schema.tdb",
			 path);
		if (stat(schema, &st) == 0 || stat(legacy, &st) == 0)
			one_array(path, rel);
	}
	while ((de = readdir(dh))) {
		char child[4096], crel[4096];

		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
					     strcmp(de->d_name, "..") == 0))
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		snprintf(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "",
			 de->d_name);
		if (stat(child, &st))
			continue;
		put_seed("fuzz_names", crel, de->d_name, strlen(de->d_name),
			 NULL, 0);
		if (S_ISDIR(st.st_mode))
			walk(child, crel);
		else
			one_file(child, crel, de->d_name);
	}
	closedir(dh);
}

/* ---- synthetic seeds ---------------------------------------------------- */

struct fspec {
	uint8_t type;
	uint8_t compressor; /* 0xff: the type's own */
	int32_t level;
	uint8_t reinterpret; /* 0xff: none */
	uint32_t window;
	double scale, offset;
	uint8_t width; /* index into 1, 2, 4, 8 */
};

static void spec_bytes(uint8_t out[FUZZ_FILTER_SPEC], const struct fspec *f)
{
	uint64_t bits;

	memset(out, 0, FUZZ_FILTER_SPEC);
	out[0] = f->type;
	out[1] = f->compressor;
	tfs_put_u32(out + 2, (uint32_t)f->level);
	out[6] = f->reinterpret;
	tfs_put_u32(out + 7, f->window);
	memcpy(&bits, &f->scale, 8);
	tfs_put_u64(out + 11, bits);
	memcpy(&bits, &f->offset, 8);
	tfs_put_u64(out + 19, bits);
	out[27] = f->width;
	if (f->type == TFS_FILTER_WEBP) {
		float q = 90.0f;

		memcpy(&bits, &q, 4);
		tfs_put_u32(out + 11, (uint32_t)bits);
		out[15] = (uint8_t)f->window; /* format */
		out[16] = (uint8_t)f->level;  /* lossless */
		tfs_put_u16(out + 17, 4);     /* y extent */
		tfs_put_u16(out + 19, 12);    /* x extent: 4 RGB pixels */
	}
}

/* Typical data for a datatype: a ramp, runs, noise, or text lines. */
static size_t make_data(uint8_t *out, size_t cap, unsigned kind, unsigned type)
{
	size_t w = tfs_datatype_size(type), n = 0;
	uint32_t x = 12345;

	if (w == 0)
		w = 1;
	switch (kind) {
	case 0: /* ramp */
		for (uint64_t i = 0; n + w <= cap && i < 300; i++, n += w) {
			if (type == TFS_FLOAT64) {
				double v = (double)i * 0.25;
				memcpy(out + n, &v, 8);
			} else if (type == TFS_FLOAT32) {
				float v = (float)i * 0.25f;
				memcpy(out + n, &v, 4);
			} else {
				tfs_put_uint(out + n, w, i * 3 + 7);
			}
		}
		return n;
	case 1: /* runs */
		for (uint64_t i = 0; n + w <= cap && i < 300; i++, n += w)
			tfs_put_uint(out + n, w, i / 37);
		return n;
	case 2: /* noise */
		for (; n < cap && n < 512; n++) {
			x = x * 1103515245u + 12345u;
			out[n] = (uint8_t)(x >> 16);
		}
		return n - n % w;
	default: { /* text cells separated by '\n' (the separator byte) */
		static const char text[] =
			"red\ngreen\nblue\nred\nred\n\ngreen\nblue\n"
			"a much longer string value\nred\ngreen\n";

		n = sizeof(text) - 1 < cap ? sizeof(text) - 1 : cap;
		memcpy(out, text, n);
		return n;
	}
	}
}

static void filter_seeds(void)
{
	static const struct fspec specs[] = {
		{TFS_FILTER_NONE, 0xff, 0, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_GZIP, 0xff, 6, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_ZSTD, 0xff, -1, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_ZSTD, 0xff, 19, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_LZ4, 0xff, 0, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_RLE, 0xff, -1, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_BZIP2, 0xff, 9, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_DOUBLE_DELTA, 0xff, -1, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_DOUBLE_DELTA, 0xff, -1, TFS_INT64, 0, 1, 0, 0},
		{TFS_FILTER_BIT_WIDTH_REDUCTION, 0xff, 0, 0xff, 256, 1, 0, 0},
		{TFS_FILTER_BITSHUFFLE, 0xff, 0, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_BYTESHUFFLE, 0xff, 0, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_POSITIVE_DELTA, 0xff, 0, 0xff, 1024, 1, 0, 0},
		{TFS_FILTER_AES256GCM, 0xff, 0, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_CHECKSUM_MD5, 0xff, 0, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_CHECKSUM_SHA256, 0xff, 0, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_DICTIONARY, 0xff, -1, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_SCALE_FLOAT, 0xff, 0, 0xff, 0, 0.25, 1.5, 1},
		{TFS_FILTER_SCALE_FLOAT, 0xff, 0, 0xff, 0, 1e-3, 0, 3},
		{TFS_FILTER_XOR, 0xff, 0, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_WEBP, 0xff, 1, 0xff, 1, 1, 0, 0},
		{TFS_FILTER_WEBP, 0xff, 0, 0xff, 3, 1, 0, 0},
		{TFS_FILTER_DELTA, 0xff, -1, 0xff, 0, 1, 0, 0},
		{TFS_FILTER_DELTA, 0xff, -1, TFS_INT32, 0, 1, 0, 0},
	};
	static const uint8_t types[] = {TFS_INT32, TFS_UINT8, TFS_INT64,
					TFS_FLOAT64, TFS_FLOAT32, TFS_STRING_ASCII};
	static const struct fspec zstd = {TFS_FILTER_ZSTD, 0xff, 3, 0xff, 0,
					  1, 0, 0};
	uint8_t buf[4096], data[2048];

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
			unsigned type = types[k];
			bool str = type == TFS_STRING_ASCII;
			bool string_mode = str &&
					   (specs[i].type == TFS_FILTER_RLE ||
					    specs[i].type ==
						    TFS_FILTER_DICTIONARY);
			/* Alone, and followed by ZSTD (a typical list). */
			for (unsigned nf = 1; nf <= 2; nf++) {
				size_t n = 10 + nf * FUZZ_FILTER_SPEC, dl;
				char id[64];
				uint8_t key = specs[i].type ==
					      TFS_FILTER_AES256GCM;

				buf[0] = (uint8_t)(nf - 1);
				buf[1] = (uint8_t)type;
				buf[2] = str ? 0 : 1;
				buf[3] = (uint8_t)((string_mode ? 1 : 0) |
						   (key ? 2 : 0) |
						   (str ? 16 : 0));
				buf[4] = 22;
				buf[5] = '\n';
				tfs_put_u32(buf + 6, 65536);
				spec_bytes(buf + 10, &specs[i]);
				if (nf == 2)
					spec_bytes(buf + 10 + FUZZ_FILTER_SPEC,
						   &zstd);
				dl = make_data(data, sizeof(data),
					       str ? 3 : (unsigned)(i + k) % 3,
					       type);
				memcpy(buf + n, data, dl);
				snprintf(id, sizeof(id), "spec%02zu-type%u-n%u",
					 i, type, nf);
				put_seed("fuzz_filters", id, buf, n + dl, NULL,
					 0);
				/* Raw decode seed: the encoded tile. */
				struct tfs_buf list, tile;
				struct tfs_pipeline p;
				struct tfs_tile_ctx ctx;
				struct tfs_cursor c;
				struct tfs_diag d;

				tfs_buf_init(&list, TFS_BUF_NO_MAX);
				tfs_buf_init(&tile, TFS_BUF_NO_MAX);
				tfs_diag_init(&d);
				if (tfs_buf_append(&list, buf + 6, 4) ||
				    tfs_buf_append_u32(&list, nf) ||
				    fuzz_filter_spec_put(&list, buf + 10) ||
				    (nf == 2 &&
				     fuzz_filter_spec_put(
					     &list,
					     buf + 10 + FUZZ_FILTER_SPEC)))
					goto next;
				tfs_cur_init(&c, list.data, list.len);
				if (tfs_pipeline_parse(&p, &c, 23, &d))
					goto next;
				memset(&ctx, 0, sizeof(ctx));
				ctx.type = (uint8_t)type;
				ctx.cell_size = tfs_datatype_size(type);
				ctx.fragment_version = 22;
				ctx.key = key ? fuzz_corpus_key : NULL;
				/* String mode: the seed above is enough. */
				if (string_mode)
					goto next;
				if (tfs_tile_encode(&tile, &p, &ctx, data, dl,
						    NULL, 0, &d) == TFS_E_OK) {
					buf[3] = (uint8_t)((key ? 2 : 0) | 8);
					snprintf(id, sizeof(id),
						 "raw-spec%02zu-type%u-n%u", i,
						 type, nf);
					put_seed("fuzz_filters", id, buf, n,
						 tile.data, tile.len);
				}
next:
				tfs_buf_release(&list);
				tfs_buf_release(&tile);
			}
		}
	}
}

/* A few condition trees: comparisons, IN sets, NOT, nested AND/OR. */
static void condition_seeds(void)
{
	static uint8_t v5[4] = {5, 0, 0, 0}, set[] = "redgreenblue";
	static uint64_t set_offs[] = {0, 3, 8};
	struct tfs_qc_node leaves[3], not_node, and_node, or_node;
	const struct tfs_qc_node *trees[] = {&leaves[0], &not_node, &or_node};
	struct tfs_buf b;

	memset(leaves, 0, sizeof(leaves));
	leaves[0] = (struct tfs_qc_node){.is_value = true, .op = TFS_QC_GE,
					 .field = "a", .value = v5,
					 .value_len = 4};
	leaves[1] = (struct tfs_qc_node){.is_value = true, .op = TFS_QC_IN,
					 .field = "s", .value = set,
					 .value_len = 12,
					 .set_offsets = set_offs, .set_num = 3};
	leaves[2] = (struct tfs_qc_node){.is_value = true, .op = TFS_QC_EQ,
					 .field = "d", .value = NULL,
					 .value_len = 0};
	not_node = (struct tfs_qc_node){.combine = TFS_QC_NOT,
					.children = &leaves[1], .child_num = 1};
	and_node = (struct tfs_qc_node){.combine = TFS_QC_AND,
					.children = leaves, .child_num = 3};
	or_node = (struct tfs_qc_node){.combine = TFS_QC_OR,
				       .children = &and_node, .child_num = 1};
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		char id[32];

		tfs_buf_init(&b, TFS_BUF_NO_MAX);
		if (tfs_condition_serialize(&b, trees[i]) == TFS_E_OK) {
			snprintf(id, sizeof(id), "synthetic-%zu", i);
			put_seed("fuzz_condition", id, b.data, b.len, NULL, 0);
		}
		tfs_buf_release(&b);
	}
}

/* Doubles (8 bytes, little-endian; the first 4 are also a float) where
 * the shortest text is delicate: powers of two and ten, the extremes,
 * the plain-digit limits, two shortest candidates. */
static void float_fmt_seeds(void)
{
	static const double values[] = {
		0.1, 1.0 / 3, 1e23, 0x1p-24, 0x1p-1022, 0x1p-1074, 0x1p63,
		1.7976931348623157e308, 1e16, 1e16 + 2, 1e15 + 0.5, 9e15 + 1,
		5e-324, 2.2250738585072009e-308, 1e-5, 123456.789,
		-0.0, -2.5};

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint8_t buf[8];
		uint64_t bits;
		char id[32];

		memcpy(&bits, &values[i], sizeof(bits));
		tfs_put_u64(buf, bits);
		snprintf(id, sizeof(id), "synthetic-%zu", i);
		put_seed("fuzz_float_fmt", id, buf, sizeof(buf), NULL, 0);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s CORPUS OUTDIR\n", argv[0]);
		return 2;
	}
	outdir = argv[2];
	if (mkdir(outdir, 0777) && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	walk(argv[1], "");
	filter_seeds();
	condition_seeds();
	float_fmt_seeds();
	printf("fuzz_seedgen: %lu seeds in %s\n", written, outdir);
	return written ? 0 : 1;
}
