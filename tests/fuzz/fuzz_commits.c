/* Fuzz target: the commit and consolidation lists of an array folder
 * (format/consolidated.md §1-4, layout.md §6): consolidated commits
 * (.con, with the generic tiles of the deletes they embed), ignore and
 * vacuum line lists (.ign, .vac, with vacuum line normalisation) and the
 * directory of consolidated fragment metadata (.meta payload). Every name
 * found goes through the timestamped-name parser too.
 *
 * Input: u8 mode (0 .con, 1 line list, 2 .meta payload), then the file. */
#include <string.h>

#include "fuzz_common.h"
#include "tfs_alloc.h"
#include "tfs_format.h"

struct input {
	uint8_t mode;
	const uint8_t *data;
	size_t size;
};

static void check_name(const char *name)
{
	struct tfs_name_info ni;

	if (tfs_name_parse(name, &ni) == TFS_E_OK)
		FUZZ_CHECK(ni.t1 <= ni.t2 && strlen(ni.uuid) <= 32);
}

static void check_delete(const uint8_t *tile, size_t len)
{
	struct tfs_qc_node n;
	struct tfs_diag d;
	uint8_t *payload;
	size_t plen;

	if (fuzz_generic_decode(tile, len, &payload, &plen, NULL))
		return;
	tfs_diag_init(&d);
	if (tfs_condition_parse(&n, payload, plen, NULL, &d) == TFS_E_OK)
		tfs_condition_release(&n);
	tfs_free(payload);
}

static enum tfs_err parse_once(void *arg)
{
	const struct input *in = arg;
	struct tfs_consolidated_meta m;
	struct tfs_con_file con;
	struct tfs_strlist l;
	struct tfs_diag d;
	uint8_t *copy;
	enum tfs_err e;

	tfs_diag_init(&d);
	switch (in->mode) {
	case 0:
		e = tfs_con_parse(&con, in->data, in->size, &d);
		if (!e)
			tfs_con_release(&con);
		return e;
	case 1:
		e = tfs_lines_parse(&l, in->data, in->size);
		if (!e)
			tfs_strlist_release(&l);
		return e;
	default:
		copy = tfs_memdup(in->data, in->size);
		if (!copy)
			return TFS_E_NOMEM;
		e = tfs_consolidated_meta_parse(&m, copy, in->size, &d);
		if (!e)
			tfs_consolidated_meta_release(&m);
		return e;
	}
}

static enum tfs_err con_file(const uint8_t *data, size_t size)
{
	struct tfs_con_file con;
	struct tfs_diag d;
	enum tfs_err e;

	tfs_diag_init(&d);
	e = tfs_con_parse(&con, data, size, &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
		return e;
	}
	for (size_t i = 0; i < con.count; i++) {
		const struct tfs_con_entry *c = &con.entries[i];

		FUZZ_CHECK(c->marker && c->marker[0] &&
			   !strchr(c->marker, '\n'));
		check_name(c->marker);
		if (!c->del_size)
			continue;
		FUZZ_CHECK(c->del_offset <= size &&
			   c->del_size <= size - c->del_offset);
		check_delete(data + c->del_offset, (size_t)c->del_size);
	}
	tfs_con_release(&con);
	return TFS_E_OK;
}

static enum tfs_err line_file(const uint8_t *data, size_t size)
{
	struct tfs_strlist l;
	enum tfs_err e;

	e = tfs_lines_parse(&l, data, size);
	if (e)
		return e;
	for (size_t i = 0; i < l.count; i++) {
		char *norm;

		FUZZ_CHECK(l.items[i] && l.items[i][0] &&
			   !strchr(l.items[i], '\n'));
		norm = tfs_vac_line_normalize(l.items[i]);
		FUZZ_CHECK(norm);
		/* A suffix of the line. */
		FUZZ_CHECK(strlen(norm) <= strlen(l.items[i]) &&
			   strcmp(l.items[i] + strlen(l.items[i]) -
					  strlen(norm),
				  norm) == 0);
		check_name(norm);
		tfs_free(norm);
	}
	tfs_strlist_release(&l);
	return TFS_E_OK;
}

static enum tfs_err meta_dir(const uint8_t *data, size_t size)
{
	struct tfs_consolidated_meta m;
	struct tfs_diag d;
	uint8_t *copy = tfs_memdup(data, size);
	enum tfs_err e;

	FUZZ_CHECK(copy);
	tfs_diag_init(&d);
	e = tfs_consolidated_meta_parse(&m, copy, size, &d);
	if (e) {
		FUZZ_CHECK(d.code == e);
		return e;
	}
	FUZZ_CHECK(m.payload == copy && m.payload_len == size);
	for (uint32_t i = 0; i < m.count; i++) {
		FUZZ_CHECK(m.entries[i].name && m.entries[i].name[0]);
		FUZZ_CHECK(m.entries[i].footer_offset < size);
		check_name(m.entries[i].name);
	}
	tfs_consolidated_meta_release(&m);
	return TFS_E_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in;
	enum tfs_err e;

	if (size < 1)
		return 0;
	in.mode = data[0] % 3;
	in.data = data + 1;
	in.size = size - 1;
	if (in.mode == 0)
		e = con_file(in.data, in.size);
	else if (in.mode == 1)
		e = line_file(in.data, in.size);
	else
		e = meta_dir(in.data, in.size);
	fuzz_alloc_fault(parse_once, &in, e, (long)(fuzz_hash(data, size) % 32));
	return 0;
}
