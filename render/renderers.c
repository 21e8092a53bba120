/* The renderer table and the facts every renderer shares (tfs_render.h):
 * one row per format; the callbacks live with their format (text_render.c
 * for .txt/.csv/.json, npy.c, slice.c for the byte formats). */
#include "tfs_render.h"

#include <stdio.h>
#include <string.h>

#include "npy.h"
#include "png_picture.h"
#include "slice.h"
#include "text_render.h"

const struct tfsr_renderer tfsr_renderers[TFSR_FMT_NUM] = {
	[TFSR_FMT_RAW] = {
		.fmt = TFSR_FMT_RAW, .name = "raw", .ext = "",
		.mime = "application/octet-stream", .flags = TFSR_R_WRITABLE,
		.size_kind = TFSR_SIZE_RECORDS,
		.cells = tfsr_raw_cells,
	},
	[TFSR_FMT_TXT] = {
		.fmt = TFSR_FMT_TXT, .name = "txt", .ext = ".txt",
		.mime = "text/plain", .flags = TFSR_R_TEXT,
		.text_style = TFSR_TEXT_TXT,
		.begin = tfsr_text_begin, .cells = tfsr_text_cells,
		.end = tfsr_text_end, .release = tfsr_text_release,
	},
	[TFSR_FMT_CSV] = {
		.fmt = TFSR_FMT_CSV, .name = "csv", .ext = ".csv",
		.mime = "text/csv",
		.flags = TFSR_R_ALL_FIELDS | TFSR_R_COORDS | TFSR_R_TEXT,
		.text_style = TFSR_TEXT_CSV,
		.begin = tfsr_text_begin, .cells = tfsr_text_cells,
		.end = tfsr_text_end, .release = tfsr_text_release,
	},
	[TFSR_FMT_JSON] = {
		.fmt = TFSR_FMT_JSON, .name = "json", .ext = ".json",
		.mime = "application/json",
		.flags = TFSR_R_ALL_FIELDS | TFSR_R_SPARSE_COORDS | TFSR_R_TEXT,
		.text_style = TFSR_TEXT_JSON,
		.begin = tfsr_text_begin, .cells = tfsr_text_cells,
		.end = tfsr_text_end, .release = tfsr_text_release,
	},
	[TFSR_FMT_NPY] = {
		.fmt = TFSR_FMT_NPY, .name = "npy", .ext = ".npy",
		.mime = "application/x-npy",
		.flags = TFSR_R_ALL_FIELDS | TFSR_R_WRITABLE,
		.size_kind = TFSR_SIZE_RECORDS,
		.begin = tfsr_npy_begin, .cells = tfsr_npy_cells,
		.header = tfsr_npy_slice_header,
	},
	[TFSR_FMT_OFFSETS] = {
		.fmt = TFSR_FMT_OFFSETS, .name = "offsets", .ext = ".offsets",
		.mime = "application/octet-stream", .flags = TFSR_R_VAR_ONLY,
		.size_kind = TFSR_SIZE_COUNTED, .record = 8,
		.cells = tfsr_offsets_cells,
	},
	[TFSR_FMT_VALIDITY] = {
		.fmt = TFSR_FMT_VALIDITY, .name = "validity",
		.ext = ".validity", .mime = "application/octet-stream",
		.flags = TFSR_R_NULLABLE_ONLY,
		.size_kind = TFSR_SIZE_RECORDS, .record = 1,
		.cells = tfsr_validity_cells,
	},
	[TFSR_FMT_PNG] = {
		.fmt = TFSR_FMT_PNG, .name = "png", .ext = ".png",
		.mime = "image/png",
		.flags = TFSR_R_SPARSE_COORDS | TFSR_R_NUMERIC_ONLY |
			 TFSR_R_IMAGE,
		.begin = tfsr_png_begin, .cells = tfsr_png_cells,
		.end = tfsr_png_end, .release = tfsr_png_release,
	},
	[TFSR_FMT_GRAY_PNG] = {
		.fmt = TFSR_FMT_GRAY_PNG, .name = "gray.png",
		.ext = ".gray.png", .mime = "image/png",
		.flags = TFSR_R_SPARSE_COORDS | TFSR_R_NUMERIC_ONLY |
			 TFSR_R_IMAGE,
		.begin = tfsr_png_begin, .cells = tfsr_png_cells,
		.end = tfsr_png_end, .release = tfsr_png_release,
	},
};

const struct tfsr_renderer *tfsr_renderer_of(enum tfsr_format fmt)
{
	return (unsigned)fmt < TFSR_FMT_NUM ? &tfsr_renderers[fmt] : NULL;
}

const struct tfsr_renderer *tfsr_renderer_named(const char *name)
{
	for (size_t i = 0; i < TFSR_FMT_NUM; i++)
		if (strcmp(tfsr_renderers[i].name, name) == 0)
			return &tfsr_renderers[i];
	return NULL;
}

bool tfsr_renderer_takes(const struct tfsr_renderer *r,
			 const struct tfs_schema *s, int field,
			 struct tfs_diag *d)
{
	struct tfs_field_info f;
	char list[128] = "";
	size_t n = 0, k = 0;

	if (field >= 0) {
		tfs_schema_field(s, field, &f);
		if ((r->flags & TFSR_R_VAR_ONLY) && !f.var) {
			tfs_fail(d, TFS_E_NOT_FOUND,
				 "'%s' is not var-size, it has no %s", f.name,
				 r->name);
			return false;
		}
		if ((r->flags & TFSR_R_NUMERIC_ONLY) &&
		    (f.var || f.cell_val_num != 1 ||
		     tfs_datatype_class(f.type) > TFS_CLASS_FLOAT)) {
			tfs_fail(d, TFS_E_NOT_FOUND,
				 "'%s' is not one number per cell, it has no "
				 "%s", f.name, r->ext);
			return false;
		}
		if ((r->flags & TFSR_R_NULLABLE_ONLY) && !f.nullable) {
			tfs_fail(d, TFS_E_NOT_FOUND,
				 "'%s' is not nullable, it has no %s", f.name,
				 r->name);
			return false;
		}
		return true;
	}
	if (r->flags & TFSR_R_ALL_FIELDS)
		return true;
	for (size_t i = 0; i < TFSR_FMT_NUM; i++)
		n += (tfsr_renderers[i].flags & TFSR_R_ALL_FIELDS) != 0;
	for (size_t i = 0, len = 0; i < TFSR_FMT_NUM; i++) {
		if (!(tfsr_renderers[i].flags & TFSR_R_ALL_FIELDS))
			continue;
		k++;
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					k == 1 ? "" : k == n ? " or " : ", ",
					tfsr_renderers[i].ext);
		if (len >= sizeof(list))
			break;
	}
	tfs_fail(d, TFS_E_NOT_FOUND, "array-level slices are %s", list);
	return false;
}

bool tfsr_slice_name_parse(const char *name, const char **sel, size_t *sel_len,
			   enum tfsr_format *fmt)
{
	const char *close;

	if (strncmp(name, "slice[", 6) != 0)
		return false;
	close = strrchr(name, ']');
	if (!close || close < name + 6)
		return false;
	for (size_t i = 0; i < TFSR_FMT_NUM; i++) {
		if (strcmp(close + 1, tfsr_renderers[i].ext) == 0) {
			*sel = name + 6;
			*sel_len = (size_t)(close - (name + 6));
			*fmt = tfsr_renderers[i].fmt;
			return true;
		}
	}
	return false;
}
