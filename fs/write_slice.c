/* A/<attr>/slice[SEL] (raw or .npy): the staged values become a dense
 * fragment over SEL, the other attributes keeping their values there.
 * Also the .npy header reader the new arrays from .npy files share. */
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

/* Cells per append of a slice write without other attributes. */
#define SLICE_CHUNK_CELLS ((uint64_t)1 << 20)

/* The value of 'key': in a .npy header dict, NUL-terminated in out. */
static bool npy_dict_value(const char *dict, const char *key, char *out,
			   size_t cap)
{
	const char *p = strstr(dict, key);
	size_t n = 0;
	char close;

	if (!p)
		return false;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	close = *p == '\'' ? '\'' : *p == '(' ? ')' : ',';
	if (*p == '\'' || *p == '(')
		p++;
	while (p[n] && p[n] != close && p[n] != '}')
		n++;
	if (n >= cap)
		return false;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

/* Reads the header of the .npy file open at fd: its dtype (descr),
 * shape text and where the values start; a C-order file only. */
enum tfs_err tfsd__npy_head(int fd, const char *name, char descr[128],
			    char shape[512], uint64_t *data_off,
			    struct tfs_diag *d)
{
	uint8_t head[12];
	char dict[4096], fortran[16];
	uint64_t hlen;
	size_t pre;

	if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    memcmp(head, "\x93NUMPY", 6) != 0)
		return tfs_fail(d, TFS_E_INVALID, "'%s': not a .npy file", name);
	if (head[6] == 1) {
		hlen = tfs_get_u16(head + 8);
		pre = 10;
	} else if (head[6] == 2 || head[6] == 3) {
		hlen = tfs_get_u32(head + 8);
		pre = 12;
	} else {
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy version %u is not known", name,
				head[6]);
	}
	if (hlen >= sizeof(dict) ||
	    pread(fd, dict, (size_t)hlen, (off_t)pre) != (ssize_t)hlen)
		return tfs_fail(d, TFS_E_INVALID, "'%s': bad .npy header", name);
	dict[hlen] = '\0';
	if (!npy_dict_value(dict, "'descr'", descr, 128) ||
	    !npy_dict_value(dict, "'shape'", shape, 512) ||
	    !npy_dict_value(dict, "'fortran_order'", fortran, sizeof(fortran)))
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy header without descr, shape or "
				"fortran_order",
				name);
	if (strncmp(fortran, "False", 5) != 0)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': Fortran-order .npy: write a C-order array",
				name);
	*data_off = pre + hlen;
	return TFS_E_OK;
}

/* Checks a .npy file's header against the cells expected: the dtype of
 * the attribute, C order, as many values as the selection's cells.
 * *data_off receives where the values start. */
static enum tfs_err npy_check(int fd, const struct tfs_field_info *at,
			      uint64_t cells, const char *name,
			      uint64_t *data_off, struct tfs_diag *d)
{
	char descr[128], shape[512];
	struct tfs_buf want;
	uint64_t elems = 1, per_cell;
	const char *p;
	enum tfs_err e = TFS_E_OK;

	if ((e = tfsd__npy_head(fd, name, descr, shape, data_off, d)))
		return e;
	for (p = shape; *p;) {
		char *end;
		unsigned long long v;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (end == p || errno ||
		    __builtin_mul_overflow(elems, (uint64_t)v, &elems))
			return tfs_fail(d, TFS_E_INVALID,
					"'%s': bad .npy shape (%s)", name,
					shape);
		p = end;
	}
	tfs_buf_init(&want, 256);
	if (tfsr_npy_descr(&want, at->type, at->cell_val_num, 0) ||
	    tfs_buf_append_u8(&want, 0)) {
		tfs_buf_release(&want);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	{
		/* Ours is "'<i4'" or "'<f4', (3,)": compare the dtype
		 * alone, byte-order marks aside (numpy writes '|' for one
		 * byte and may write '=' ). */
		const char *w = (const char *)want.data + 1;
		size_t wl = strcspn(w, "'");
		const char *g = descr;

		if (*g == '<' || *g == '|' || *g == '=')
			g++;
		if (*w == '<' || *w == '|' || *w == '=') {
			w++;
			wl--;
		}
		if (strlen(g) != wl || strncmp(g, w, wl) != 0)
			e = tfs_fail(d, TFS_E_INVALID,
				     "'%s': .npy dtype '%s', the attribute "
				     "'%s' needs %s",
				     name, descr, at->name,
				     (const char *)want.data);
	}
	tfs_buf_release(&want);
	if (e)
		return e;
	per_cell = tfsr_npy_is_subarray(at->type, at->cell_val_num)
			   ? at->cell_val_num
			   : 1;
	if (elems / per_cell != cells || elems % per_cell)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': .npy shape (%s) holds %" PRIu64
				" values, the selection has %" PRIu64 " cells",
				name, shape, elems, cells);
	return TFS_E_OK;
}

struct slice_job {
	struct tfs_writer *w;
	int fd;
	uint64_t off;       /* next cell's bytes in the staged file */
	uint64_t cell_size; /* of the written attribute */
	struct tfs_field_info at_info;
	const struct tfs_field_info *at;  /* &at_info */
	const struct tfs_enumeration *en; /* of the written attribute */
	uint64_t data_off;                /* first value in the staged file */
	struct tfs_buf vals;     /* values of one batch */
	struct tfs_buf validity; /* all 1: the written cells are not null */
	struct tfs_column *cols; /* carried-over columns + the written one */
};

/* Raw values of an enumerated attribute are its keys: each must select
 * one of the enumeration's values, or the array would hold cells that
 * have no label. The fill value is taken as it is, as in a CSV: it is what
 * cells nobody wrote show, so a slice read raw writes back unchanged.
 * `first` is the cell number of vals[0] in the file. */
static enum tfs_err check_enum_keys(const struct slice_job *j,
				    const uint8_t *vals, uint64_t n,
				    uint64_t first, const char *name,
				    struct tfs_diag *d)
{
	size_t w = tfs_datatype_size(j->at->type);
	bool has_fill = j->at->fill && j->at->fill_size == w;

	for (uint64_t i = 0; i < n; i++) {
		int64_t key = tfs_value_as_i64(j->at->type, vals + i * w);

		if ((key < 0 || (uint64_t)key >= j->en->value_num) &&
		    !(has_fill && !memcmp(vals + i * w, j->at->fill, w)))
			return tfs_fail(d, TFS_E_INVALID,
					"'%s': cell %" PRIu64 ": %" PRId64
					" is not a key of the enumeration '%s' "
					"(%" PRIu64 " values)",
					name, first + i, key, j->en->name,
					j->en->value_num);
	}
	return TFS_E_OK;
}

/* Appends cells [.., +n) of the written attribute with the carried-over
 * columns of batch b (NULL when there are none). */
static enum tfs_err slice_append(struct slice_job *j, const struct tfs_batch *b,
				 uint64_t n, const char *name,
				 struct tfs_diag *d)
{
	struct tfs_column *c;
	struct tfs_batch out;
	size_t ncols = b ? b->column_num : 0;
	uint64_t bytes;
	ssize_t got;

	if (__builtin_mul_overflow(n, j->cell_size, &bytes) || bytes > SIZE_MAX)
		return tfs_fail(d, TFS_E_TOO_BIG, "slice too large");
	if (tfs_buf_resize(&j->vals, (size_t)bytes) ||
	    (j->at->nullable && tfs_buf_resize(&j->validity, (size_t)n)))
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	got = pread(j->fd, j->vals.data, (size_t)bytes, (off_t)j->off);
	if (got != (ssize_t)bytes)
		return tfs_fail(d, TFS_E_IO, "staged file: short read");
	if (j->en) {
		enum tfs_err e = check_enum_keys(j, j->vals.data, n,
						 (j->off - j->data_off) /
							 j->cell_size,
						 name, d);

		if (e)
			return e;
	}
	j->off += bytes;
	if (j->at->nullable)
		memset(j->validity.data, 1, (size_t)n);
	for (size_t i = 0; i < ncols; i++)
		j->cols[i] = b->columns[i];
	c = &j->cols[ncols];
	memset(c, 0, sizeof(*c));
	c->name = j->at->name;
	c->type = j->at->type;
	c->cell_val_num = j->at->cell_val_num;
	c->nullable = j->at->nullable;
	c->data = j->vals.data;
	c->data_len = bytes;
	c->validity = j->at->nullable ? j->validity.data : NULL;
	out.cell_num = n;
	out.column_num = ncols + 1;
	out.columns = j->cols;
	return tfs_writer_append(j->w, &out, NULL, d);
}

/* The attribute a slice write fills: of a dense array, fixed-size, and
 * for an enumerated one its enumeration (keys are checked). */
static enum tfs_err slice_attr(struct slice_job *j, const struct tfsd_arr *arr,
			       const struct tfsd_wtarget *t, int *ai,
			       struct tfs_diag *d)
{
	const struct tfs_schema *s = arr->schema;

	*ai = tfs_schema_attr_index(s, t->field);
	if (!tfs_schema_is_dense(s) || *ai < 0)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': slices are written to dense arrays only",
				t->name);
	tfs_schema_attr(s, (uint32_t)*ai, &j->at_info);
	j->at = &j->at_info;
	if (j->at->var)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': '%s' is var-size: write it as CSV",
				t->name, j->at->name);
	j->cell_size = tfs_field_cell_size(j->at);
	if (!j->at->enumeration)
		return TFS_E_OK;
	j->en = tfs_array_enumeration_named(arr->a, j->at->enumeration);
	if (!j->en || j->at->cell_val_num != 1 ||
	    !tfs_datatype_is_integer(j->at->type))
		return tfs_fail(d, TFS_E_CORRUPT,
				"'%s': the enumeration '%s' of '%s' is "
				"missing or not over integer keys",
				t->name, j->at->enumeration, j->at->name);
	return TFS_E_OK;
}

/* The box SEL selects (no step, not empty) and its cell count. */
static enum tfs_err slice_box(const struct tfsd_arr *arr,
			      const struct tfsd_wtarget *t,
			      struct tfsr_sel **sel, struct tfs_range **box,
			      uint64_t *cells, struct tfs_diag *d)
{
	const struct tfs_schema *s = arr->schema;
	enum tfs_err e;

	*cells = 1;
	e = tfsr_sel_parse(t->sel, t->sel_len, s, arr->has_ned ? arr->ned : NULL,
			   sel, d);
	if (e)
		return tfs_fail(d, TFS_E_INVALID, "'%s': %s", t->name,
				tfs_diag_msg(d));
	if ((*sel)->empty)
		return tfs_fail(d, TFS_E_INVALID, "'%s': the selection is empty",
				t->name);
	*box = tfs_callocn(tfs_schema_dim_count(s), sizeof(**box));
	if (!*box)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	for (uint32_t k = 0; k < tfs_schema_dim_count(s); k++) {
		if ((*sel)->dims[k].stride != 1)
			return tfs_fail(d, TFS_E_INVALID,
					"'%s': a slice with a step cannot be "
					"written",
					t->name);
		(*box)[k] = (*sel)->dims[k].range;
		if (__builtin_mul_overflow(*cells, (*sel)->dims[k].count, cells))
			return tfs_fail(d, TFS_E_TOO_BIG, "'%s': too many cells",
					t->name);
	}
	return TFS_E_OK;
}

/* The staged file holds exactly the values of the box's cells (after a
 * .npy header that matches them): j->off then points at the first. */
static enum tfs_err slice_bytes(struct slice_job *j, const struct tfsd_wtarget *t,
				uint64_t cells, uint64_t size,
				struct tfs_diag *d)
{
	uint64_t expect, data_off = 0;
	enum tfs_err e;

	if (t->npy && (e = npy_check(j->fd, j->at, cells, t->name, &data_off, d)))
		return e;
	if (data_off > size ||
	    __builtin_mul_overflow(cells, j->cell_size, &expect) ||
	    size - data_off != expect)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': %" PRIu64 " bytes of values, the selection "
				"needs %" PRIu64 " (%" PRIu64 " cells of %" PRIu64
				" bytes)",
				t->name, size - (data_off < size ? data_off : size),
				cells * j->cell_size, cells, j->cell_size);
	j->off = j->data_off = data_off;
	return TFS_E_OK;
}

/* Writes the box: the staged values of the attribute ai beside the
 * other attributes' current values (read over the box: fill values where
 * nothing was written), batch by batch, then commits. */
static enum tfs_err slice_write(struct tfsd *fs, struct slice_job *j,
				const struct tfsd_arr *arr, int ai,
				const struct tfsd_wtarget *t,
				const struct tfs_range *box, uint64_t cells,
				uint64_t size, struct tfs_write_result *wr,
				struct tfs_diag *d)
{
	const struct tfs_schema *s = arr->schema;
	uint32_t attr_num = tfs_schema_attr_count(s);
	const char **others = tfs_callocn(attr_num, sizeof(*others));
	struct tfs_query *q = NULL;
	struct tfs_write_opts wo;
	size_t other_num = 0;
	enum tfs_err e;

	j->cols = tfs_callocn(attr_num + 1, sizeof(*j->cols));
	if (!others || !j->cols) {
		e = tfs_fail(d, TFS_E_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < attr_num; i++) {
		struct tfs_field_info other;

		tfs_schema_attr(s, i, &other);
		if ((int)i != ai)
			others[other_num++] = other.name;
	}
	tfsd__write_opts_init(fs, t, &wo);
	if ((e = tfs_writer_open(t->path, &wo, TFS_WRITE_DENSE_BOX, box, &j->w, d)))
		goto out;
	if (other_num) {
		struct tfs_query_opts qo = {.subarray = box,
					    .fields = others,
					    .field_num = other_num};
		const struct tfs_batch *b;

		e = tfs_query_open(arr->a, &qo, &q, d);
		while (!e && !(e = tfs_query_next(q, &b, d)) && b)
			e = slice_append(j, b, b->cell_num, t->name, d);
	} else {
		for (uint64_t done = 0; !e && done < cells;) {
			uint64_t n = cells - done < SLICE_CHUNK_CELLS
					     ? cells - done
					     : SLICE_CHUNK_CELLS;

			e = slice_append(j, NULL, n, t->name, d);
			done += n;
		}
	}
	if (!e && j->off != size)
		e = tfs_fail(d, TFS_E_INTERNAL,
			     "'%s': the read gave other cells than the "
			     "selection",
			     t->name);
	if (!e)
		e = tfs_writer_commit(j->w, wr, d);
out:
	tfs_query_close(q);
	tfs_free(others);
	return e;
}

/* A/<attr>/slice[SEL] (raw or .npy): the staged values become a dense
 * fragment over SEL, the other attributes keeping their values there. */
enum tfs_err tfsd__commit_slice(struct tfsd *fs, const struct tfsd_wtarget *t,
				const char *staged, struct tfsd_wresult *res,
				struct tfs_diag *d)
{
	struct slice_job j;
	struct tfsd_arr *arr = NULL;
	struct tfsr_sel *sel = NULL;
	struct tfs_range *box = NULL;
	struct tfs_write_result wr;
	uint64_t cells = 0, size;
	struct stat st;
	enum tfs_err e;
	int ai;

	memset(&j, 0, sizeof(j));
	j.fd = open(staged, O_RDONLY | O_CLOEXEC);
	tfs_buf_init(&j.vals, TFS_BUF_NO_MAX);
	tfs_buf_init(&j.validity, TFS_BUF_NO_MAX);
	if (j.fd < 0 || fstat(j.fd, &st) != 0) {
		e = tfs_fail(d, TFS_E_IO, "staged file: %s", strerror(errno));
		goto out;
	}
	size = (uint64_t)st.st_size;
	if ((e = tfsd_arrays_get(fs->arrays, t->rel, 0, &arr, d)) ||
	    (e = slice_attr(&j, arr, t, &ai, d)) ||
	    (e = slice_box(arr, t, &sel, &box, &cells, d)) ||
	    (e = slice_bytes(&j, t, cells, size, d)) ||
	    (e = slice_write(fs, &j, arr, ai, t, box, cells, size, &wr, d)))
		goto out;
	res->wrote = true;
	snprintf(res->what, sizeof(res->what),
		 "%" PRIu64 " cells, dense fragment %s", wr.cell_num, wr.name);
out:
	tfs_writer_free(j.w);
	tfs_free(j.cols);
	tfs_free(box);
	tfsr_sel_free(sel);
	tfsd_arr_put(fs->arrays, arr);
	tfs_buf_release(&j.vals);
	tfs_buf_release(&j.validity);
	if (j.fd >= 0)
		close(j.fd);
	return e;
}
