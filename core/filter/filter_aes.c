/* AES-256-GCM encryption filter (format/filters.md §5.9): a consuming
 * filter; every metadata and data part is encrypted separately with a
 * random 12-byte IV, no additional data, and a 16-byte tag that is checked
 * on decryption. A missing key, a wrong key or a forged tag is TFS_E_KEY.
 * OpenSSL contexts are created per call. */
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "filter_internal.h"

#define ENTRY_SIZE (8 + TFS__AES_IV_BYTES + TFS__AES_TAG_BYTES)

static enum tfs_err decrypt_part(EVP_CIPHER_CTX *cx, const uint8_t *key,
				 const uint8_t *iv, const uint8_t *tag,
				 uint8_t *dst, const uint8_t *src, size_t len)
{
	int outl = 0, finl = 0;

	if (len > INT_MAX)
		return TFS_E_CORRUPT;
	if (EVP_DecryptInit_ex(cx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_SET_IVLEN,
				(int)TFS__AES_IV_BYTES, NULL) != 1 ||
	    EVP_DecryptInit_ex(cx, NULL, NULL, key, iv) != 1)
		return TFS_E_INTERNAL;
	if (len && EVP_DecryptUpdate(cx, dst, &outl, src, (int)len) != 1)
		return TFS_E_KEY;
	if (EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_SET_TAG,
				(int)TFS__AES_TAG_BYTES,
				(void *)(uintptr_t)tag) != 1)
		return TFS_E_INTERNAL;
	if (EVP_DecryptFinal_ex(cx, dst + outl, &finl) != 1)
		return TFS_E_KEY;
	return (size_t)outl + (size_t)finl == len ? TFS_E_OK : TFS_E_KEY;
}

enum tfs_err tfs__aes_reverse(struct tfs__stage *st, const struct tfs__fctx *fc)
{
	struct tfs__part_table t;
	struct tfs__split_out out;
	uint64_t md_total = 0, data_total = 0;
	size_t src = 0;
	EVP_CIPHER_CTX *cx;
	enum tfs_err e;

	if (!fc->key)
		return tfs__stage_fail(st, TFS_E_KEY,
				       "tile is encrypted and no key was given");
	e = tfs__stage_part_table(st, ENTRY_SIZE, "encryption header truncated",
				  "encryption part table truncated", &t);
	if (e)
		return e;
	for (uint64_t i = 0; i < t.n; i++) {
		const uint8_t *row = t.rows + ENTRY_SIZE * i;
		uint32_t plain = tfs_get_u32(row);

		if (tfs_get_u32(row + 4) != plain)
			return tfs__stage_fail(st, TFS_E_CORRUPT,
					       "ciphertext length differs from "
					       "plaintext length");
		if (i < t.n_md)
			md_total += plain;
		else
			data_total += plain;
	}
	if (md_total + data_total > st->in_len)
		return tfs__stage_fail(st, TFS_E_CORRUPT,
				       "encrypted parts exceed the chunk");
	e = tfs__stage_alloc_split(st, t.n_md, (size_t)md_total,
				   (size_t)data_total, &out);
	if (e)
		return e;
	cx = EVP_CIPHER_CTX_new();
	if (!cx)
		return TFS_E_NOMEM;
	for (uint64_t i = 0; i < t.n; i++) {
		const uint8_t *row = t.rows + ENTRY_SIZE * i;
		uint32_t len = tfs_get_u32(row);

		e = decrypt_part(cx, fc->key, row + 8,
				 row + 8 + TFS__AES_IV_BYTES,
				 tfs__split_next(&out, i, len), st->in + src,
				 len);
		if (e) {
			tfs__stage_fail(st, e,
					e == TFS_E_KEY
						? "authentication failed: wrong "
						  "key or altered data"
						: "decryption failed");
			break;
		}
		src += len;
	}
	EVP_CIPHER_CTX_free(cx);
	return e;
}

static enum tfs_err encrypt_parts(EVP_CIPHER_CTX *cx, const uint8_t *key,
				  const struct tfs__parts *ps,
				  struct tfs_buf *out, uint8_t **row)
{
	for (size_t i = 0; i < ps->n; i++) {
		const struct tfs_buf *p = &ps->v[i];
		uint8_t *iv = *row + 8, *tag = iv + TFS__AES_IV_BYTES;
		int outl = 0, finl = 0;
		enum tfs_err e;

		if (p->len > INT_MAX || p->len > UINT32_MAX)
			return TFS_E_TOO_BIG;
		e = tfs_buf_reserve(out, p->len + 16);
		if (e)
			return e;
		if (RAND_bytes(iv, (int)TFS__AES_IV_BYTES) != 1 ||
		    EVP_EncryptInit_ex(cx, EVP_aes_256_gcm(), NULL, NULL,
				       NULL) != 1 ||
		    EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_SET_IVLEN,
					(int)TFS__AES_IV_BYTES, NULL) != 1 ||
		    EVP_EncryptInit_ex(cx, NULL, NULL, key, iv) != 1)
			return TFS_E_INTERNAL;
		if (p->len && EVP_EncryptUpdate(cx, out->data + out->len, &outl,
						p->data, (int)p->len) != 1)
			return TFS_E_INTERNAL;
		if (EVP_EncryptFinal_ex(cx, out->data + out->len + outl,
					&finl) != 1 ||
		    EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_GET_TAG,
					(int)TFS__AES_TAG_BYTES, tag) != 1)
			return TFS_E_INTERNAL;
		if ((size_t)outl + (size_t)finl != p->len)
			return TFS_E_INTERNAL;
		out->len += p->len;
		tfs_put_u32(*row, (uint32_t)p->len);
		tfs_put_u32(*row + 4, (uint32_t)p->len);
		*row += ENTRY_SIZE;
	}
	return TFS_E_OK;
}

enum tfs_err tfs__aes_forward(struct tfs__fwd *w, const struct tfs__fctx *fc)
{
	struct tfs_buf hdr, out;
	uint8_t *h, *row;
	EVP_CIPHER_CTX *cx = NULL;
	enum tfs_err e;

	if (!fc->key)
		return tfs__fwd_fail(w, TFS_E_KEY,
				     "encryption needs a key");
	if (w->md.n > UINT32_MAX || w->data.n > UINT32_MAX)
		return tfs__fwd_fail(w, TFS_E_TOO_BIG, "too many parts");
	tfs_buf_init(&out, TFS_BUF_NO_MAX);
	e = tfs__buf_sized(&hdr, 8 + ENTRY_SIZE * (w->md.n + w->data.n), &h);
	if (!e)
		e = tfs_buf_reserve(&out, 1);
	if (e)
		goto out_release;
	tfs_put_u32(h, (uint32_t)w->md.n);
	tfs_put_u32(h + 4, (uint32_t)w->data.n);
	row = h + 8;
	cx = EVP_CIPHER_CTX_new();
	if (!cx) {
		e = TFS_E_NOMEM;
		goto out_release;
	}
	e = encrypt_parts(cx, fc->key, &w->md, &out, &row);
	if (!e)
		e = encrypt_parts(cx, fc->key, &w->data, &out, &row);
	if (e) {
		tfs__fwd_fail(w, e, "encryption failed");
		goto out_release;
	}
	e = tfs__parts_replace(&w->md, &hdr);
	if (!e)
		e = tfs__parts_replace(&w->data, &out);

out_release:
	EVP_CIPHER_CTX_free(cx);
	tfs_buf_release(&hdr);
	tfs_buf_release(&out);
	return e;
}
