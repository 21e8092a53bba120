/* Strided selections of dense arrays against a model: random shapes of 1
 * to 4 dimensions, every combination of tile and cell order, random tile
 * extents, random ranges and steps on every dimension. The attribute holds
 * each cell's row-major index over the domain, so the expected bytes of a
 * selection follow from its ranges alone. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_fixture.h"
#include "tfs_buf.h"
#include "tfs_format.h"

#define MAX_DIMS 4

struct shape {
	unsigned dims;
	int64_t lo[MAX_DIMS];
	uint64_t ext[MAX_DIMS], tile[MAX_DIMS];
	bool cell_col, tile_col;
};

struct sel {
	uint64_t lo[MAX_DIMS], count[MAX_DIMS], step[MAX_DIMS];
};

static uint64_t rnd(uint64_t *state, uint64_t n)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return (*state >> 33) % n;
}

/* Creates the array `name` in root with the shape and writes every cell
 * (value: its row-major index over the domain) through CSV ingest. */
static void make_array(const char *root, const char *name,
		       const struct shape *sh)
{
	char path[512], json[2048], csv[512];
	size_t n = 0;
	struct tfs_schema s;
	struct tfs_diag d;
	struct tfs_ingest_result res;
	struct tfs_ingest_opts io = {0};
	uint64_t total = 1, idx[MAX_DIMS] = {0};
	FILE *f;

	n += (size_t)snprintf(json + n, sizeof(json) - n,
			      "{\"array_type\":\"dense\",\"schema\":{"
			      "\"cell_order\":\"%s\",\"tile_order\":\"%s\","
			      "\"dims\":[",
			      sh->cell_col ? "col-major" : "row-major",
			      sh->tile_col ? "col-major" : "row-major");
	for (unsigned k = 0; k < sh->dims; k++) {
		n += (size_t)snprintf(json + n, sizeof(json) - n,
				      "%s{\"name\":\"d%u\",\"type\":\"INT32\","
				      "\"domain\":[%" PRId64 ",%" PRId64 "],"
				      "\"tile\":%" PRIu64 "}",
				      k ? "," : "", k, sh->lo[k],
				      sh->lo[k] + (int64_t)sh->ext[k] - 1,
				      sh->tile[k]);
		total *= sh->ext[k];
	}
	snprintf(json + n, sizeof(json) - n,
		 "],\"attrs\":[{\"name\":\"v\",\"type\":\"UINT64\","
		 "\"cell_val_num\":1,\"nullable\":false}]}}");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_schema_from_json(&s, json, strlen(json), &d),
		     TFS_E_OK, "%s: %s", json, tfs_diag_msg(&d));
	snprintf(path, sizeof(path), "%s/%s", root, name);
	cr_assert_eq(tfs_array_create(path, &s, NULL, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_schema_release(&s);

	snprintf(csv, sizeof(csv), "%s/%s.csv", root, name);
	f = fopen(csv, "w");
	cr_assert(f);
	for (unsigned k = 0; k < sh->dims; k++)
		fprintf(f, "d%u,", k);
	fprintf(f, "v\n");
	for (uint64_t c = 0; c < total; c++) {
		for (unsigned k = 0; k < sh->dims; k++)
			fprintf(f, "%" PRId64 ",", sh->lo[k] + (int64_t)idx[k]);
		fprintf(f, "%" PRIu64 "\n", c);
		for (unsigned k = sh->dims; k-- > 0;) {
			if (++idx[k] < sh->ext[k])
				break;
			idx[k] = 0;
		}
	}
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(tfs_ingest_csv(path, csv, &io, &res, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(res.rows, total);
	cr_assert_eq(remove(csv), 0);
}

/* The selection's cells, row-major: the expected UINT64 values. */
static uint64_t *model(const struct shape *sh, const struct sel *se,
		       uint64_t *count)
{
	uint64_t n = 1, idx[MAX_DIMS] = {0}, *out;

	for (unsigned k = 0; k < sh->dims; k++)
		n *= se->count[k];
	out = calloc(n ? n : 1, sizeof(*out));
	cr_assert(out);
	for (uint64_t c = 0; c < n; c++) {
		uint64_t v = 0;

		for (unsigned k = 0; k < sh->dims; k++)
			v = v * sh->ext[k] + se->lo[k] + idx[k] * se->step[k];
		out[c] = v;
		for (unsigned k = sh->dims; k-- > 0;) {
			if (++idx[k] < se->count[k])
				break;
			idx[k] = 0;
		}
	}
	*count = n;
	return out;
}

/* Reads a virtual file whole, in pieces of step bytes. */
static uint8_t *read_vfile(struct tfsd *fs, const char *vpath, size_t step,
			   uint64_t *len)
{
	struct tfsd_node node;
	struct tfsd_file *f;
	struct tfs_diag d;
	struct tfs_buf out;
	uint64_t off = 0;

	tfs_diag_init(&d);
	cr_assert_eq(tfsd_resolve(fs, vpath, &node, &d), TFS_E_OK, "%s: %s",
		     vpath, tfs_diag_msg(&d));
	cr_assert_eq(tfsd_file_open(fs, &node, vpath, &f, &d), TFS_E_OK,
		     "%s: %s", vpath, tfs_diag_msg(&d));
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	for (;;) {
		size_t got = 0;

		cr_assert_eq(tfs_buf_reserve(&out, step), TFS_E_OK);
		cr_assert_eq(tfsd_file_read(fs, f, off, out.data + out.len,
					    step, &got, &d),
			     TFS_E_OK, "%s: %s", vpath, tfs_diag_msg(&d));
		if (!got)
			break;
		out.len += got;
		off += got;
	}
	tfsd_file_close(fs, f);
	tfsd_node_release(fs, &node);
	*len = out.len;
	return out.data;
}

Test(strides, random_shapes_against_model, .timeout = 120)
{
	char root[256];
	uint64_t state = 20261127;
	struct tfsd fs;
	struct shape shapes[16];
	unsigned nshapes = sizeof(shapes) / sizeof(shapes[0]);

	dfx_temp_dir(root, sizeof(root), "tfs-strides-");
	for (unsigned a = 0; a < nshapes; a++) {
		struct shape *sh = &shapes[a];
		char name[32];

		memset(sh, 0, sizeof(*sh));
		sh->dims = 1 + a % MAX_DIMS;
		sh->cell_col = a / MAX_DIMS % 2;
		sh->tile_col = a / MAX_DIMS / 2 % 2;
		for (unsigned k = 0; k < sh->dims; k++) {
			uint64_t cap = sh->dims == 1 ? 40 : sh->dims == 4 ? 6 : 12;

			sh->lo[k] = (int64_t)rnd(&state, 21) - 10;
			sh->ext[k] = 1 + rnd(&state, cap);
			sh->tile[k] = 1 + rnd(&state, sh->ext[k]);
		}
		snprintf(name, sizeof(name), "arr%u", a);
		make_array(root, name, sh);
	}

	/* A small whole-render limit, so larger selections stream. */
	dfx_start(&fs, root, 64, 1 << 20, 16 << 20);
	for (unsigned a = 0; a < nshapes; a++) {
		const struct shape *sh = &shapes[a];

		for (unsigned t = 0; t < 40; t++) {
			struct sel se;
			char vpath[512];
			size_t n;
			uint64_t want_n, got_len, *want;
			uint8_t *got;

			n = (size_t)snprintf(vpath, sizeof(vpath),
					     "arr%u/v/slice[", a);
			for (unsigned k = 0; k < sh->dims; k++) {
				uint64_t lo = rnd(&state, sh->ext[k]);
				uint64_t hi = lo + 1 + rnd(&state, sh->ext[k] - lo);

				se.lo[k] = lo;
				/* Step 1 often on some dimensions, so that
				 * unit and larger steps mix in every way. */
				se.step[k] = rnd(&state, 3) ? 1 + rnd(&state, 4)
							    : 1;
				se.count[k] = (hi - lo - 1) / se.step[k] + 1;
				n += (size_t)snprintf(
					vpath + n, sizeof(vpath) - n,
					"%s%" PRId64 ":%" PRId64 ":%" PRIu64,
					k ? "," : "", sh->lo[k] + (int64_t)lo,
					sh->lo[k] + (int64_t)hi, se.step[k]);
			}
			snprintf(vpath + n, sizeof(vpath) - n, "]");
			want = model(sh, &se, &want_n);
			got = read_vfile(&fs, vpath, 1 + rnd(&state, 200),
					 &got_len);
			cr_assert_eq(got_len, want_n * sizeof(uint64_t),
				     "%s: %" PRIu64 " bytes", vpath, got_len);
			for (uint64_t c = 0; c < want_n; c++) {
				uint64_t v;

				memcpy(&v, got + c * sizeof(v), sizeof(v));
				cr_assert_eq(v, want[c],
					     "%s (cell order %s, tile order "
					     "%s): cell %" PRIu64 " is %" PRIu64
					     ", want %" PRIu64,
					     vpath,
					     sh->cell_col ? "col" : "row",
					     sh->tile_col ? "col" : "row", c, v,
					     want[c]);
			}
			free(want);
			free(got);
		}
	}
	dfx_stop(&fs);
	dfx_remove(root);
}
