/* Arrays from .npy files: a .npy at a folder makes a new dense array of
 * its shape and dtype, a .npy into an array appends along its first
 * dimension. */
#include "write_commit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_bytes.h"

/* Removes what a refused .npy made: the folder at path and all below. */
static void remove_tree(struct tfs_vfs *v, const char *path)
{
	struct tfs_dirlist l = {0};
	struct tfs_stat st;

	if (tfs_vfs_lstat(v, path, &st, NULL) || !st.exists)
		return;
	if (st.is_dir && !tfs_vfs_list(v, path, &l, NULL)) {
		for (size_t i = 0; i < l.count; i++) {
			char *child = tfs_path_join(path, l.names[i]);

			if (child)
				remove_tree(v, child);
			tfs_free(child);
		}
		tfs_dirlist_release(&l);
	}
	(void)tfs_vfs_remove(v, path, NULL);
}

/* The datatype (and its size) of a .npy dtype, byte-order mark aside. */
static const char *npy_type_name(const char *descr, uint64_t *size)
{
	static const struct {
		const char *descr, *type;
		uint64_t size;
	} types[] = {
		{"i1", "INT8", 1},    {"i2", "INT16", 2},  {"i4", "INT32", 4},
		{"i8", "INT64", 8},   {"u1", "UINT8", 1},  {"u2", "UINT16", 2},
		{"u4", "UINT32", 4},  {"u8", "UINT64", 8}, {"f4", "FLOAT32", 4},
		{"f8", "FLOAT64", 8}, {"b1", "BOOL", 1},
	};
	const char *g = descr;

	if (*g == '\'')
		g++;
	if (*g == '<' || *g == '|' || *g == '=')
		g++;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strncmp(g, types[i].descr, 2) == 0 &&
		    (g[2] == '\0' || g[2] == '\'')) {
			*size = types[i].size;
			return types[i].type;
		}
	}
	return NULL;
}

#define NPY_MAX_DIMS 32

/* The numbers of a .npy shape text ("3, 4" or "5,"): *dims of them into
 * shape, their product in *elems. False when one is no positive number,
 * there are more than NPY_MAX_DIMS, or the product overflows. */
static bool npy_shape_parse(const char *text, uint64_t shape[NPY_MAX_DIMS],
			    size_t *dims, uint64_t *elems)
{
	const char *p = text;

	*dims = 0;
	*elems = 1;
	while (*p) {
		char *end;
		unsigned long long n;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		errno = 0;
		n = strtoull(p, &end, 10);
		if (end == p || errno || n == 0 || *dims == NPY_MAX_DIMS ||
		    __builtin_mul_overflow(*elems, (uint64_t)n, elems))
			return false;
		shape[(*dims)++] = n;
		p = end;
	}
	return true;
}

/* The header of the staged .npy file: its dtype and shape text. */
static enum tfs_err npy_staged_head(const char *staged, const char *name,
				    char descr[128], char shape_text[512],
				    uint64_t *data_off, uint64_t *size,
				    struct tfs_diag *d)
{
	struct stat fst;
	enum tfs_err e;
	int fd = open(staged, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &fst) != 0) {
		e = tfs_fail(d, TFS_E_IO, "staged file: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return e;
	}
	*size = (uint64_t)fst.st_size;
	e = tfsd__npy_head(fd, name, descr, shape_text, data_off, d);
	close(fd);
	return e;
}

/* The attribute a .npy copied into array A writes: the one its name
 * stem names, or the array's only one. */
static enum tfs_err npy_attr(const struct tfs_schema *s, const char *name,
			     struct tfs_field_info *at, struct tfs_diag *d)
{
	size_t stem = strlen(name) - 4;

	for (uint32_t i = 0; i < tfs_schema_attr_count(s); i++) {
		tfs_schema_attr(s, i, at);
		if (strlen(at->name) == stem && strncmp(at->name, name, stem) == 0)
			return TFS_E_OK;
	}
	if (tfs_schema_attr_count(s) == 1) {
		tfs_schema_attr(s, 0, at);
		return TFS_E_OK;
	}
	return tfs_fail(d, TFS_E_INVALID,
			"'%s': the array has %" PRIu32 " attributes: name the "
			".npy file after one (ATTR.npy)",
			name, tfs_schema_attr_count(s));
}

/* One dimension's part of the selection a .npy appends to: the first
 * from start for n indices, the others their whole domain, which the
 * file's shape must match. */
static enum tfs_err npy_sel_dim(struct tfs_buf *sel, const struct tfs_field_info *dim,
				uint32_t k, uint64_t n, const uint8_t *start,
				const char *name, struct tfs_diag *d)
{
	bool is_signed = tfs_datatype_class(dim->type) == TFS_CLASS_SIGNED;
	const uint8_t *lo = k == 0 ? start : dim->domain_lo;
	int64_t slo = tfs_value_as_i64(dim->type, lo);
	int64_t shi = tfs_value_as_i64(dim->type, dim->domain_hi);
	uint64_t ulo = tfs_value_as_u64(dim->type, lo);
	uint64_t uhi = tfs_value_as_u64(dim->type, dim->domain_hi);
	uint64_t room = is_signed ? (uint64_t)shi - (uint64_t)slo : uhi - ulo;

	if (k > 0 && room != n - 1)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': dimension '%s' holds %" PRIu64 " indices, "
				"the .npy %" PRIu64 " (only the first dimension "
				"grows)",
				name, dim->name, room + 1, n);
	if (room < n - 1)
		return tfs_fail(d, TFS_E_RANGE,
				"'%s': %" PRIu64 " indices to append after the "
				"last one leave the domain of '%s'",
				name, n, dim->name);
	if (is_signed)
		return tfs_buf_printf(sel, "%s%" PRId64 ":%" PRId64, k ? "," : "",
				      slo, slo + (int64_t)(n - 1) + 1)
			       ? tfs_fail(d, TFS_E_NOMEM, "out of memory")
			       : TFS_E_OK;
	return tfs_buf_printf(sel, "%s%" PRIu64 ":%" PRIu64, k ? "," : "", ulo,
			      ulo + n)
		       ? tfs_fail(d, TFS_E_NOMEM, "out of memory")
		       : TFS_E_OK;
}

/* Where a .npy copied into the dense array at t goes: the attribute and
 * the selection (after the last written index of the first dimension,
 * the whole domain of the others), from the array as it is now (every
 * fragment, also those whose timestamps run ahead of the clock). */
static enum tfs_err npy_append_target(struct tfsd *fs, const struct tfsd_wtarget *t,
				      const char *staged, char field[256],
				      struct tfs_buf *sel, struct tfs_diag *d)
{
	struct tfs_open_opts oo = {.vfs = fs->cfg.vfs, .key = tfsd__write_key(fs, t),
				   .timestamp = UINT64_MAX - 1, .threads = 1};
	char descr[128], shape_text[512];
	uint64_t shape[NPY_MAX_DIMS], data_off, size, elems;
	struct tfs_field_info at, dim;
	struct tfs_array *a = NULL;
	const struct tfs_schema *s;
	struct tfs_range ned[128];
	uint8_t start[8];
	size_t dims;
	uint32_t D;
	enum tfs_err e;

	if ((e = npy_staged_head(staged, t->name, descr, shape_text, &data_off,
				 &size, d)))
		return e;
	if ((e = tfs_array_open(t->path, &oo, &a, d)))
		return e;
	s = tfs_array_schema(a);
	D = tfs_schema_dim_count(s);
	if (!tfs_schema_is_dense(s) || D > 128) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "'%s': a .npy is appended to dense arrays only "
			     "(write cells of a sparse array as CSV)",
			     t->name);
		goto out;
	}
	if ((e = npy_attr(s, t->name, &at, d)))
		goto out;
	if (!npy_shape_parse(shape_text, shape, &dims, &elems) || dims < D) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "'%s': .npy shape (%s): the array has %" PRIu32
			     " dimensions",
			     t->name, shape_text, D);
		goto out;
	}
	tfs_schema_dim(s, 0, &dim);
	if (!dim.has_domain || !tfs_datatype_is_integer(dim.type) ||
	    tfs_datatype_is_datetime(dim.type)) {
		e = tfs_fail(d, TFS_E_INVALID,
			     "'%s': a .npy is appended along an integer first "
			     "dimension ('%s' is not one)",
			     t->name, dim.name);
		goto out;
	}
	memcpy(start, dim.domain_lo, tfs_datatype_size(dim.type));
	if (tfs_array_non_empty_domain(a, ned)) {
		uint64_t last = tfs_value_as_u64(dim.type, ned[0].hi);

		if (memcmp(ned[0].hi, dim.domain_hi, tfs_datatype_size(dim.type)) == 0) {
			e = tfs_fail(d, TFS_E_RANGE,
				     "'%s': the array is full along '%s'",
				     t->name, dim.name);
			goto out;
		}
		tfs_put_uint(start, tfs_datatype_size(dim.type), last + 1);
	}
	for (uint32_t k = 0; k < D && !e; k++) {
		tfs_schema_dim(s, k, &dim);
		if (!dim.has_domain || !tfs_datatype_is_integer(dim.type))
			e = tfs_fail(d, TFS_E_INVALID,
				     "'%s': dimension '%s' is no integer one",
				     t->name, dim.name);
		else
			e = npy_sel_dim(sel, &dim, k, shape[k], start, t->name, d);
	}
	if (!e)
		snprintf(field, 256, "%s", at.name);
out:
	tfs_array_close(a);
	return e;
}

/* A/NAME.npy: appended to the dense array A as a CSV without the
 * dimension's column is (SPEC §6): a slice of the attribute NAME (or of
 * the only attribute) after the last written index of the first
 * dimension, as wide as the domain in the others, written with the
 * array locked so that appends at once take places of their own.
 * Anything else is refused with the reason. */
enum tfs_err tfsd__commit_npy_array(struct tfsd *fs,
				    const struct tfsd_wtarget *t,
				    const char *staged, struct tfsd_wresult *res,
				    struct tfs_diag *d)
{
	struct tfsd_wtarget slice = *t;
	struct tfs_buf sel;
	char field[256];
	int lock = tfs_array_lock(t->path, fs->cfg.vfs);
	enum tfs_err e;

	tfs_buf_init(&sel, TFSD_DOC_MAX);
	e = npy_append_target(fs, t, staged, field, &sel, d);
	if (!e) {
		slice.kind = TFSD_W_SLICE;
		slice.field = field;
		slice.sel = (char *)sel.data;
		slice.sel_len = sel.len;
		slice.npy = true;
		/* The cache may hold the array as it was before the last
		 * append. */
		tfsd_arrays_invalidate(fs->arrays, t->rel);
		e = tfsd__commit_slice(fs, &slice, staged, res, d);
	}
	if (!e) {
		size_t n = strlen(res->what);

		snprintf(res->what + n, sizeof(res->what) - n,
			 ", appended as '%s' slice[%.*s]", field, (int)sel.len,
			 (const char *)sel.data);
	}
	tfs_array_unlock(lock);
	tfs_buf_release(&sel);
	return e;
}

/* The schema JSON of a new array of a .npy's shape and type (dimensions
 * d0, d1, ... UINT64 from 0, tiles of at most 2^20 cells: the largest
 * extent halves until they fit; attribute v; ZSTD) and the selection of
 * all of it. */
static enum tfs_err npy_new_schema_json(const uint64_t *shape, size_t dims,
					const char *type, struct tfs_buf *json,
					struct tfs_buf *sel)
{
	uint64_t extent[NPY_MAX_DIMS], cells_per_tile;
	enum tfs_err e;

	memcpy(extent, shape, dims * sizeof(*shape));
	for (;;) {
		size_t big = 0;

		cells_per_tile = 1;
		for (size_t k = 0; k < dims; k++) {
			if (extent[k] > extent[big])
				big = k;
			if (__builtin_mul_overflow(cells_per_tile, extent[k],
						   &cells_per_tile))
				cells_per_tile = UINT64_MAX;
		}
		if (cells_per_tile <= (UINT64_C(1) << 20))
			break;
		extent[big] = (extent[big] + 1) / 2;
	}
	e = tfs_buf_printf(json, "{\"array_type\":\"dense\",\"cell_order\":"
				 "\"row-major\",\"tile_order\":\"row-major\","
				 "\"dims\":[");
	for (size_t k = 0; !e && k < dims; k++) {
		e = tfs_buf_printf(json,
				   "%s{\"name\":\"d%zu\",\"type\":\"UINT64\","
				   "\"domain\":[0,%" PRIu64
				   "],\"tile\":%" PRIu64
				   ",\"filters\":[\"ZSTD(level=-1)\"]}",
				   k ? "," : "", k, shape[k] - 1, extent[k]);
		if (!e)
			e = tfs_buf_printf(sel, "%s0:%" PRIu64, k ? "," : "",
					   shape[k]);
	}
	if (!e)
		e = tfs_buf_printf(json,
				   "],\"attrs\":[{\"name\":\"v\",\"type\":"
				   "\"%s\",\"filters\":[\"ZSTD(level=-1)\"]}]}",
				   type);
	return e;
}

/* DIR/NAME.npy: a new dense array DIR/NAME of the file's shape and dtype
 * (dimensions d0, d1, ... UINT64 from 0, one attribute v, ZSTD), then the
 * values written as the slice of the whole array; undone when refused. */
/* A staged .npy that makes a new array: its dtype, shape and size. */
struct npy_new {
	char descr[128], shape_text[512];
	uint64_t shape[NPY_MAX_DIMS];
	size_t dims;
	uint64_t elems, type_size;
	const char *type;
};

/* The staged file's header, checked: a little-endian number type, 1 to
 * NPY_MAX_DIMS dimensions none empty, and exactly the values' bytes. */
static enum tfs_err npy_new_head(const struct tfsd_wtarget *t,
				 const char *staged, struct npy_new *nn,
				 struct tfs_diag *d)
{
	uint64_t data_off, file_size_, bytes;
	enum tfs_err e;

	nn->dims = 0;
	nn->elems = 1;
	if ((e = npy_staged_head(staged, t->name, nn->descr, nn->shape_text,
				 &data_off, &file_size_, d)))
		return e;
	nn->type = npy_type_name(nn->descr, &nn->type_size);
	if (!nn->type)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy dtype %s: a new array takes "
				"little-endian integers, floats or bools",
				t->name, nn->descr);
	if (!npy_shape_parse(nn->shape_text, nn->shape, &nn->dims, &nn->elems))
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy shape (%s): a new array "
				"needs 1 to %d dimensions, none empty",
				t->name, nn->shape_text, NPY_MAX_DIMS);
	if (nn->dims == 0)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': a .npy scalar makes no array", t->name);
	if (__builtin_mul_overflow(nn->elems, nn->type_size, &bytes) ||
	    file_size_ < data_off || file_size_ - data_off != bytes)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy of shape (%s) %s needs %" PRIu64
				" bytes of values",
				t->name, nn->shape_text, nn->descr,
				nn->elems <= UINT64_MAX / nn->type_size
					? nn->elems * nn->type_size
					: UINT64_MAX);
	return TFS_E_OK;
}

/* The values of the new array, written as a slice of all of it. */
static enum tfs_err npy_new_values(struct tfsd *fs, const struct tfsd_wtarget *t,
				   const char *staged, const struct tfs_buf *sel,
				   struct tfsd_wresult *res, struct tfs_diag *d)
{
	struct tfsd_wtarget slice;

	memset(&slice, 0, sizeof(slice));
	slice.kind = TFSD_W_SLICE;
	slice.rel = t->rel;
	slice.path = t->path;
	slice.name = t->name;
	slice.log_dir = t->log_dir;
	slice.field = (char *)"v";
	slice.sel = (char *)sel->data;
	slice.sel_len = sel->len;
	slice.npy = true;
	return tfsd__commit_slice(fs, &slice, staged, res, d);
}

enum tfs_err tfsd__commit_npy_new(struct tfsd *fs,
				  const struct tfsd_wtarget *t,
				  const char *staged, struct tfsd_wresult *res,
				  struct tfs_diag *d)
{
	struct tfs_vfs *v = tfsd_arrays_vfs(fs->arrays);
	struct npy_new nn;
	struct tfs_buf json, sel;
	struct tfs_write_opts wo;
	struct tfs_schema *schema = NULL;
	struct tfs_stat st;
	enum tfs_err e;

	tfs_buf_init(&json, TFSD_DOC_MAX);
	tfs_buf_init(&sel, TFSD_DOC_MAX);
	if (!tfs_vfs_lstat(v, t->path, &st, NULL) && st.exists)
		return tfs_fail(d, TFS_E_EXISTS,
				"'%s': '%.*s' exists (a .npy file here makes a "
				"new array of its name)",
				t->name, (int)(strlen(t->name) - 4), t->name);
	if ((e = npy_new_head(t, staged, &nn, d)))
		return e;
	if ((e = npy_new_schema_json(nn.shape, nn.dims, nn.type, &json, &sel))) {
		e = tfs_fail(d, e, "out of memory");
		goto out;
	}
	e = tfs_schema_from_json_new((const char *)json.data, json.len, &schema,
				     d);
	if (e) {
		e = tfs_fail(d, e, "'%s': %s", t->name, tfs_diag_msg(d));
		goto out;
	}
	tfsd__write_opts_init(fs, t, &wo);
	e = tfs_array_create(t->path, schema, &wo, d);
	if (e)
		goto out_undo;
	tfsd_arrays_invalidate(fs->arrays, t->rel);
	e = npy_new_values(fs, t, staged, &sel, res, d);
	if (!e) {
		snprintf(res->what, sizeof(res->what),
			 "new array, %s, %" PRIu64 " cells", nn.type, nn.elems);
		goto out;
	}
out_undo:
	remove_tree(v, t->path);
	tfsd_arrays_invalidate(fs->arrays, t->rel);
out:
	tfs_schema_free(schema);
	tfs_buf_release(&json);
	tfs_buf_release(&sel);
	return e;
}
