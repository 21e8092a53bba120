/* Compatibility with TileDB without TileDB: for every corpus array that
 * holds one fragment written by TileDB 2.29, read its cells through the
 * public API, write the same cells with the same schema through the writer
 * into a copy of the array that lacks the original fragment (in memory),
 * and compare the new fragment's files with TileDB's byte for byte. Only
 * the folder name (uuid) may differ: the timestamps are taken over from
 * the original (opts.t1), and nothing inside the files names the fragment.
 *
 * Generic tiles are GZIP level 1 through the system zlib, as TileDB's are;
 * where the codec libraries of this machine reproduce TileDB's bytes, whole
 * files compare equal. Encrypted arrays cannot compare equal: every AES-GCM
 * tile carries a fresh random IV (and so different ciphertext and tag), so
 * there every data tile and every generic tile is compared after
 * decryption (see compare_encrypted). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_fragment.h"
#include "tilefs/tilefs.h"
#include "write_test_util.h"

#define CORPUS TFS_CORPUS_DIR

static const char *const ARR = "/arr";

/* Copies the corpus array into the memory backend without the fragment
 * (and its commit). */
static void copy_tree(struct tfs_vfs *from, const char *src, struct tfs_vfs *to,
		      const char *dst, const char *skip)
{
	struct tfs_dirlist l;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(to->ops->mkdir(to, dst, &d), TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_vfs_list(from, src, &l, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (size_t i = 0; i < l.count; i++) {
		char *s = tfs_path_join(src, l.names[i]);
		char *t = tfs_path_join(dst, l.names[i]);
		struct tfs_stat st;

		if (strstr(l.names[i], skip)) {
			free(s);
			free(t);
			continue;
		}
		cr_assert_eq(tfs_vfs_stat(from, s, &st, &d), TFS_E_OK);
		if (st.is_dir) {
			copy_tree(from, s, to, t, skip);
		} else {
			uint8_t *buf;
			size_t len;

			cr_assert_eq(tfs_vfs_read_all(from, s, 1 << 30, &buf, &len,
						      &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			cr_assert_eq(to->ops->write(to, t, buf, len, &d), TFS_E_OK);
			free(buf);
		}
		free(s);
		free(t);
	}
	tfs_dirlist_release(&l);
}

static void hexdump(const char *what, const uint8_t *p, size_t n)
{
	char line[3 * 64 + 1];
	size_t at = 0;

	for (size_t i = 0; i < n && i < 64; i++)
		at += (size_t)snprintf(line + at, sizeof(line) - at, "%02x ", p[i]);
	line[at] = '\0';
	cr_log_error("%s (%zu bytes): %s%s", what, n, line, n > 64 ? "..." : "");
}

/* On a metadata mismatch: which generic tile differs (payloads decoded). */
static void explain_meta(const uint8_t *a, size_t alen, const uint8_t *b,
			 size_t blen, const struct tfs_schema *s,
			 const uint8_t *key)
{
	struct tfs_footer fa, fb;
	struct tfs_diag d;
	uint64_t la, lb;

	tfs_diag_init(&d);
	if (alen < 8 || blen < 8)
		return;
	la = tfs_get_u64(a + alen - 8);
	lb = tfs_get_u64(b + blen - 8);
	if (la > alen - 8 || lb > blen - 8)
		return;
	if (tfs_footer_parse(&fa, a + alen - 8 - la, la, s, &d) ||
	    tfs_footer_parse(&fb, b + blen - 8 - lb, lb, s, &d)) {
		cr_log_error("footer parse: %s", tfs_diag_msg(&d));
		return;
	}
	if (la != lb || memcmp(a + alen - 8 - la, b + blen - 8 - lb, la)) {
		hexdump("TileDB footer", a + alen - 8 - la, la);
		hexdump("our footer", b + blen - 8 - lb, lb);
	}
	struct {
		const char *name;
		uint64_t *oa, *ob;
		uint32_t n;
	} lists[] = {
		{ "rtree", &fa.rtree_off, &fb.rtree_off, 1 },
		{ "tile offsets", fa.tile_offsets_off, fb.tile_offsets_off, fa.slot_num },
		{ "var offsets", fa.tile_var_offsets_off, fb.tile_var_offsets_off, fa.slot_num },
		{ "var sizes", fa.tile_var_sizes_off, fb.tile_var_sizes_off, fa.slot_num },
		{ "validity offsets", fa.tile_validity_offsets_off, fb.tile_validity_offsets_off, fa.slot_num },
		{ "mins", fa.tile_mins_off, fb.tile_mins_off, fa.slot_num },
		{ "maxes", fa.tile_maxes_off, fb.tile_maxes_off, fa.slot_num },
		{ "sums", fa.tile_sums_off, fb.tile_sums_off, fa.slot_num },
		{ "null counts", fa.tile_null_counts_off, fb.tile_null_counts_off, fa.slot_num },
		{ "summary", &fa.summary_off, &fb.summary_off, 1 },
		{ "processed", &fa.processed_conditions_off, &fb.processed_conditions_off, 1 },
	};
	for (size_t k = 0; k < sizeof(lists) / sizeof(*lists); k++) {
		for (uint32_t i = 0; lists[k].oa && i < lists[k].n; i++) {
			uint64_t oa = lists[k].oa[i], ob = lists[k].ob[i];
			uint8_t *pa = NULL, *pb = NULL;
			size_t na = 0, nb = 0;

			if (oa >= alen || ob >= blen)
				continue;
			if (tfs_generic_tile_decode(a + oa, alen - oa, key, 1 << 30,
						    &pa, &na, NULL, &d) ||
			    tfs_generic_tile_decode(b + ob, blen - ob, key, 1 << 30,
						    &pb, &nb, NULL, &d)) {
				cr_log_error("%s slot %u: %s", lists[k].name, i,
					     tfs_diag_msg(&d));
			} else if (na != nb || memcmp(pa, pb, na)) {
				cr_log_error("%s slot %u differs", lists[k].name, i);
				hexdump("  TileDB", pa, na);
				hexdump("  ours  ", pb, nb);
			}
			free(pa);
			free(pb);
		}
	}
	tfs_footer_release(&fa);
	tfs_footer_release(&fb);
}

/* Encrypted arrays: the files have the same layout and sizes (same
 * chunking, same IV and tag sizes); each data tile decrypts to the same
 * bytes and each generic tile of the metadata to the same payload. The
 * ciphertext differs by design: AES-GCM IVs are random per tile. */
static void compare_encrypted(const char *name, const uint8_t *a, size_t alen,
			      const uint8_t *b, size_t blen, const uint8_t *key)
{
	cr_expect_eq(alen, blen, "%s: %zu bytes, TileDB wrote %zu", name, blen,
		     alen);
	if (alen != blen)
		return;
	if (!strcmp(name, "__fragment_metadata.tdb")) {
		/* Walk the generic tiles in file order up to the footer. */
		size_t oa = 0, ob = 0;
		uint64_t fl = tfs_get_u64(a + alen - 8);

		while (oa < alen - 8 - fl) {
			uint8_t *pa = NULL, *pb = NULL;
			size_t na, nb, ca, cb;
			struct tfs_diag d;

			tfs_diag_init(&d);
			cr_assert_eq(tfs_generic_tile_decode(a + oa, alen - oa, key,
							     1 << 30, &pa, &na,
							     &ca, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			cr_assert_eq(tfs_generic_tile_decode(b + ob, blen - ob, key,
							     1 << 30, &pb, &nb,
							     &cb, &d),
				     TFS_E_OK, "%s", tfs_diag_msg(&d));
			cr_expect(na == nb && !memcmp(pa, pb, na),
				  "generic tile at %zu differs", oa);
			oa += ca;
			ob += cb;
			free(pa);
			free(pb);
		}
		cr_expect(!memcmp(a + oa, b + ob, alen - oa),
			  "footers differ");
		return;
	}
	/* A data file: chunk headers and the AES metadata lengths agree; the
	 * plain bytes are compared by decoding both with the same pipeline
	 * (AES alone: the array's filters run before it, so equal plaintext
	 * after AES means equal files without encryption). */
	size_t at = 0;
	struct tfs_pipeline aes;
	struct tfs_tile_ctx ctx;

	memset(&aes, 0, sizeof(aes));
	aes.max_chunk_size = 65536;
	memset(&ctx, 0, sizeof(ctx));
	ctx.type = TFS_UINT8;
	ctx.cell_size = 1;
	ctx.key = key;
	ctx.implicit_aes = true;
	ctx.fragment_version = 22;
	while (at + 8 <= alen) {
		uint64_t chunks = tfs_get_u64(a + at), end = at + 8;

		cr_assert_eq(chunks, tfs_get_u64(b + at), "%s: tile at %zu", name, at);
		for (uint64_t c = 0; c < chunks; c++) {
			uint32_t ol = tfs_get_u32(a + end), fl = tfs_get_u32(a + end + 4),
				 ml = tfs_get_u32(a + end + 8);

			cr_assert_eq(memcmp(a + end, b + end, 12), 0,
				     "%s: chunk header at %" PRIu64, name, end);
			end += 12 + ml + fl;
			(void)ol;
		}
		cr_assert_leq(end, alen);
		/* Decode the AES layer of both tiles: each chunk's plaintext
		 * is the array pipeline's output, so compare those. */
		size_t total = 0;
		for (uint64_t c = 0, p = at + 8; c < chunks; c++) {
			total += tfs_get_u32(a + p);
			p += 12 + tfs_get_u32(a + p + 8) + tfs_get_u32(a + p + 4);
		}
		uint8_t *da = malloc(total + 1), *db = malloc(total + 1);
		struct tfs_diag d;

		tfs_diag_init(&d);
		cr_assert_eq(tfs_tile_decode(&aes, &ctx, da, total, a + at, end - at,
					     &d),
			     TFS_E_OK, "%s: %s", name, tfs_diag_msg(&d));
		cr_assert_eq(tfs_tile_decode(&aes, &ctx, db, total, b + at, end - at,
					     &d),
			     TFS_E_OK, "%s: %s", name, tfs_diag_msg(&d));
		cr_expect(!memcmp(da, db, total), "%s: tile at %zu differs", name, at);
		free(da);
		free(db);
		at = end;
	}
	cr_expect_eq(at, alen);
}

static void compat(const char *array, const char *key_hex)
{
	char src[512], frag_dir[600];
	struct tfs_vfs *posix, *mem;
	struct tfs_array *orig;
	struct tfs_open_opts oo;
	struct tfs_fragment_info fi;
	struct tfs_diag d;
	uint8_t key[32];
	const struct tfs_schema *s;
	struct tfs_write_opts wo;
	struct tfs_writer *w;
	struct tfs_write_result res;
	struct tfs_query *q;
	struct tfs_query_opts qo;
	const struct tfs_batch *b;
	const char *fields[64];
	size_t field_num = 0;

	tfs_diag_init(&d);
	snprintf(src, sizeof(src), "%s/%s", CORPUS, array);
	cr_assert_eq(tfs_vfs_posix_new(&posix), TFS_E_OK);
	cr_assert_eq(tfs_vfs_mem_new(&mem), TFS_E_OK);
	if (key_hex)
		cr_assert_eq(tfs_key_from_hex(key, key_hex), TFS_E_OK);
	memset(&oo, 0, sizeof(oo));
	oo.vfs = posix;
	oo.key = key_hex ? key : NULL;
	oo.threads = 1;
	cr_assert_eq(tfs_array_open(src, &oo, &orig, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(tfs_array_fragment_count(orig), 1);
	tfs_array_fragment(orig, 0, &fi);
	cr_assert_eq(fi.t1, fi.t2, "a consolidated fragment");
	s = tfs_array_schema(orig);

	/* The copy without the fragment and its commit. */
	copy_tree(posix, src, mem, ARR, fi.name);

	memset(&wo, 0, sizeof(wo));
	wo.vfs = mem;
	wo.key = key_hex ? key : NULL;
	wo.t1 = wo.t2 = fi.t1;
	wo.threads = 2;
	cr_assert_eq(tfs_writer_open(ARR, &wo,
				     fi.dense ? TFS_WRITE_DENSE_BOX
					      : TFS_WRITE_UNORDERED,
				     fi.dense ? fi.non_empty_domain : NULL, &w,
				     &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	/* Dense: the attributes over the fragment's box, row-major. */
	for (uint32_t k = 0; !fi.dense && k < s->dim_num; k++)
		fields[field_num++] = s->dims[k].name;
	for (uint32_t i = 0; i < s->attr_num; i++)
		fields[field_num++] = s->attrs[i].name;
	memset(&qo, 0, sizeof(qo));
	qo.subarray = fi.non_empty_domain;
	qo.fields = fields;
	qo.field_num = field_num;
	cr_assert_eq(tfs_query_open(orig, &qo, &q, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	for (;;) {
		cr_assert_eq(tfs_query_next(q, &b, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		if (!b)
			break;
		cr_assert_eq(tfs_writer_append(w, b, NULL, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
	}
	tfs_query_close(q);
	cr_assert_eq(tfs_writer_commit(w, &res, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_writer_free(w);
	cr_assert_eq(res.dense, fi.dense);
	cr_assert_eq(res.t1, fi.t1);

	/* Same files, same bytes. */
	struct tfs_dirlist la, lb;
	char new_dir[600];

	snprintf(frag_dir, sizeof(frag_dir), "%s/__fragments/%s", src, fi.name);
	snprintf(new_dir, sizeof(new_dir), "%s/__fragments/%s", ARR, res.name);
	cr_assert_eq(tfs_vfs_list(posix, frag_dir, &la, &d), TFS_E_OK);
	cr_assert_eq(tfs_vfs_list(mem, new_dir, &lb, &d), TFS_E_OK);
	for (size_t i = 0; i < la.count; i++) {
		bool found = false;

		for (size_t j = 0; j < lb.count; j++)
			found |= !strcmp(la.names[i], lb.names[j]);
		cr_expect(found, "%s: we wrote no '%s'", array, la.names[i]);
	}
	for (size_t j = 0; j < lb.count; j++) {
		bool found = false;

		for (size_t i = 0; i < la.count; i++)
			found |= !strcmp(la.names[i], lb.names[j]);
		cr_expect(found, "%s: we wrote '%s', TileDB did not", array,
			  lb.names[j]);
	}
	for (size_t i = 0; i < la.count; i++) {
		char *pa = tfs_path_join(frag_dir, la.names[i]);
		char *pb = tfs_path_join(new_dir, la.names[i]);
		uint8_t *a = NULL, *bb = NULL;
		size_t alen, blen;

		cr_assert_eq(tfs_vfs_read_all(posix, pa, 1 << 30, &a, &alen, &d),
			     TFS_E_OK);
		if (tfs_vfs_read_all(mem, pb, 1 << 30, &bb, &blen, &d)) {
			free(pa);
			free(pb);
			free(a);
			continue;
		}
		if (key_hex) {
			compare_encrypted(la.names[i], a, alen, bb, blen, key);
		} else {
			bool same = alen == blen && !memcmp(a, bb, alen);

			cr_expect(same, "%s: '%s' differs (%zu bytes, TileDB %zu)",
				  array, la.names[i], blen, alen);
			if (!same && !strcmp(la.names[i], "__fragment_metadata.tdb"))
				explain_meta(a, alen, bb, blen, s, NULL);
			else if (!same) {
				size_t k = 0;

				while (k < alen && k < blen && a[k] == bb[k])
					k++;
				cr_log_error("first difference at byte %zu", k);
				hexdump("  TileDB", a + (k > 16 ? k - 16 : 0),
					alen - (k > 16 ? k - 16 : 0));
				hexdump("  ours  ", bb + (k > 16 ? k - 16 : 0),
					blen - (k > 16 ? k - 16 : 0));
			}
		}
		free(a);
		free(bb);
		free(pa);
		free(pb);
	}
	tfs_dirlist_release(&la);
	tfs_dirlist_release(&lb);

	/* And the copy reads as the original. */
	struct tfs_array *copy;
	oo.vfs = mem;
	cr_assert_eq(tfs_array_open(ARR, &oo, &copy, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	wt_expect_same_cells(orig, copy);
	tfs_array_close(copy);
	tfs_array_close(orig);
	tfs_vfs_free(mem);
	tfs_vfs_free(posix);
}

#define COMPAT(name) \
	Test(compat, name) { compat(#name, NULL); }

COMPAT(current_domain)
COMPAT(dense_1d)
COMPAT(dense_2d_cell_col_tile_row)
COMPAT(dense_2d_cell_row_tile_col)
COMPAT(dense_2d_colmajor)
COMPAT(dense_2d_rowmajor)
COMPAT(dense_3d)
COMPAT(dense_big_tile)
COMPAT(dense_cellvalnum)
COMPAT(dense_datetime_dim)
COMPAT(dense_dtypes)
COMPAT(dense_extreme_domains)
COMPAT(dense_nullable)
COMPAT(dense_uint_dims)
COMPAT(enumeration)
COMPAT(filter_bit_width_reduction)
COMPAT(filter_bitshuffle)
COMPAT(filter_byteshuffle)
COMPAT(filter_bzip2)
COMPAT(filter_checksum_md5)
COMPAT(filter_checksum_sha256)
COMPAT(filter_delta)
COMPAT(filter_dictionary)
COMPAT(filter_double_delta)
COMPAT(filter_gzip)
COMPAT(filter_lz4)
COMPAT(filter_positive_delta)
COMPAT(filter_rle)
COMPAT(filter_scale_float)
COMPAT(filter_webp)
COMPAT(filter_webp_lossy)
COMPAT(filter_xor)
COMPAT(filter_zstd)
COMPAT(filters_pipelines)
COMPAT(metadata)
COMPAT(metadata_consolidated)
COMPAT(sparse_2d_float)
COMPAT(sparse_2d_int)
COMPAT(sparse_coords_filters)
COMPAT(sparse_dtypes)
COMPAT(sparse_hilbert)
COMPAT(sparse_mixed_dims)
COMPAT(sparse_string_dim)

Test(compat, encrypted)
{
	compat("encrypted",
	       "7075626c69632d6b65792d303132333435363738396162636465666768696a21");
}
