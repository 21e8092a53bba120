/* Extended attributes (SPEC §2): the essentials of an array, a field or a
 * slice without opening or decoding anything: user.tilefs.shape ("100x50",
 * dense only), user.tilefs.dtype (TileDB type names, "name:TYPE" per
 * attribute on an array folder) and user.tilefs.cells (where known without
 * decoding: dense selections). Pictures (.png slices, preview.png) say
 * what they show: user.tilefs.range ("LO HI", the values of the
 * colormap's ends) and user.tilefs.colormap ("viridis", "gray"), read
 * from the picture itself (rendered once, then from the render cache). */
#include "tfsd.h"

#include <inttypes.h>
#include <string.h>

#include "png_picture.h"
#include "tfs_buf.h"

#define XA_SHAPE "user.tilefs.shape"
#define XA_DTYPE "user.tilefs.dtype"
#define XA_CELLS "user.tilefs.cells"
#define XA_RANGE "user.tilefs.range"
#define XA_CMAP "user.tilefs.colormap"

static bool is_picture(const struct tfsd_node *n)
{
	return n->kind == TFSD_N_FILE &&
	       (n->file == TFSD_F_PREVIEW ||
		(n->file == TFSD_F_SLICE &&
		 (tfsr_renderer_of(n->fmt)->flags & TFSR_R_IMAGE)));
}

/* The range or colormap (want) that the picture at vpath states. */
static enum tfs_err picture_attr(struct tfsd *fs, const struct tfsd_node *n,
				 const char *vpath, const char *want,
				 struct tfs_buf *out)
{
	struct tfsd_file *f;
	struct tfs_buf png, range, cmap;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfsd_file_open(fs, n, vpath, &f, &d);
	if (e)
		return e;
	tfs_buf_init(&png, TFS_BUF_NO_MAX);
	tfs_buf_init(&range, TFS_BUF_NO_MAX);
	tfs_buf_init(&cmap, TFS_BUF_NO_MAX);
	for (;;) {
		size_t got = 0;

		e = tfs_buf_reserve(&png, png.len + 65536);
		if (!e)
			e = tfsd_file_read(fs, f, png.len, png.data + png.len,
					   65536, &got, &d);
		if (e || got == 0)
			break;
		png.len += got;
	}
	tfsd_file_close(fs, f);
	if (!e && !tfsr_png_info(png.data, png.len, &range, &cmap))
		e = TFS_E_NOT_FOUND;
	if (!e && strcmp(want, XA_RANGE) == 0)
		e = tfs_buf_append(out, range.data, range.len);
	else if (!e)
		e = tfs_buf_append(out, cmap.data, cmap.len);
	tfs_buf_release(&png);
	tfs_buf_release(&range);
	tfs_buf_release(&cmap);
	return e;
}

/* Selection facts of a node: the counts per dimension (dense). */
struct facts {
	bool has_shape;
	uint64_t shape[TFSD_MAX_DIMS];
	uint32_t ndim;
	bool has_cells;
	uint64_t cells;
};

static void facts_of(const struct tfsd_node *n, struct facts *out)
{
	const struct tfsd_arr *arr = n->arr;
	struct tfsr_sel *sel = NULL;
	struct tfs_diag d;

	memset(out, 0, sizeof(*out));
	if (!arr || !tfs_schema_is_dense(arr->schema))
		return;
	tfs_diag_init(&d);
	if (tfsr_sel_parse(n->sel ? n->sel : "", n->sel ? n->sel_len : 0,
			   arr->schema, arr->has_ned ? arr->ned : NULL, &sel,
			   &d))
		return;
	out->ndim = tfs_schema_dim_count(arr->schema);
	out->has_shape = true;
	out->has_cells = true;
	out->cells = sel->empty ? 0 : 1;
	for (uint32_t k = 0; k < out->ndim; k++) {
		out->shape[k] = sel->empty ? 0 : sel->dims[k].count;
		if (__builtin_mul_overflow(out->cells, out->shape[k],
					   &out->cells))
			out->has_cells = false;
	}
	tfsr_sel_free(sel);
}

static bool has_facts(const struct tfsd_node *n)
{
	return n->kind == TFSD_N_ARRAY || n->kind == TFSD_N_FIELD ||
	       (n->kind == TFSD_N_FILE && n->file == TFSD_F_SLICE);
}

enum tfs_err tfsd_xattr_get(struct tfsd *fs, const struct tfsd_node *n,
			    const char *vpath, const char *name,
			    struct tfs_buf *out)
{
	struct tfsd_arr *arr = n->arr;
	struct facts f;
	enum tfs_err e = TFS_E_OK;

	if (is_picture(n) &&
	    (strcmp(name, XA_RANGE) == 0 || strcmp(name, XA_CMAP) == 0))
		return picture_attr(fs, n, vpath, name, out);
	if (!has_facts(n))
		return TFS_E_NOT_FOUND;
	if (!arr && n->kind == TFSD_N_ARRAY &&
	    tfsd_arrays_get(fs->arrays, n->rel, n->timestamp, &arr, &(struct tfs_diag){0}))
		return TFS_E_NOT_FOUND;
	if (arr != n->arr) {
		struct tfsd_node tmp = *n;

		tmp.arr = arr;
		e = tfsd_xattr_get(fs, &tmp, vpath, name, out);
		tfsd_arr_put(fs->arrays, arr);
		return e;
	}
	facts_of(n, &f);
	if (strcmp(name, XA_SHAPE) == 0 && f.has_shape) {
		for (uint32_t k = 0; !e && k < f.ndim; k++)
			e = tfs_buf_printf(out, "%s%" PRIu64, k ? "x" : "",
					   f.shape[k]);
	} else if (strcmp(name, XA_CELLS) == 0 && f.has_cells) {
		e = tfs_buf_printf(out, "%" PRIu64, f.cells);
	} else if (strcmp(name, XA_DTYPE) == 0) {
		const struct tfs_schema *s = arr->schema;

		if (n->field >= 0) {
			struct tfs_field_info fd;

			tfs_schema_field(s, n->field, &fd);
			e = tfs_buf_printf(out, "%s", tfs_datatype_name(fd.type));
		} else {
			for (uint32_t i = 0; !e && i < tfs_schema_attr_count(s); i++) {
				struct tfs_field_info at;

				tfs_schema_attr(s, i, &at);
				e = tfs_buf_printf(out, "%s%s:%s", i ? "," : "",
						   at.name,
						   tfs_datatype_name(at.type));
			}
		}
	} else {
		return TFS_E_NOT_FOUND;
	}
	return e;
}

enum tfs_err tfsd_xattr_list(struct tfsd *fs, const struct tfsd_node *n,
			     const char *vpath, struct tfs_buf *out)
{
	static const char *const names[] = {XA_SHAPE, XA_DTYPE, XA_CELLS};
	struct tfs_buf val;
	enum tfs_err e = TFS_E_OK;

	/* A picture's own are listed without rendering it. */
	if (is_picture(n)) {
		e = tfs_buf_append(out, XA_RANGE, strlen(XA_RANGE) + 1);
		if (!e)
			e = tfs_buf_append(out, XA_CMAP, strlen(XA_CMAP) + 1);
	}
	if (e || !has_facts(n))
		return e;
	tfs_buf_init(&val, TFS_BUF_NO_MAX);
	for (size_t i = 0; !e && i < sizeof(names) / sizeof(names[0]); i++) {
		val.len = 0;
		if (tfsd_xattr_get(fs, n, vpath, names[i], &val) == TFS_E_OK)
			e = tfs_buf_append(out, names[i], strlen(names[i]) + 1);
	}
	tfs_buf_release(&val);
	return e;
}
