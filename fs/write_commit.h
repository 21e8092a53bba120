/* What the files that commit written paths share, inside fs/ only:
 * write_target.c gives each commit its write options, write_slice.c the
 * slice commit and the .npy header reader, write_npy.c the commits of
 * .npy files; write_ops.c dispatches on the target's kind. Calls point
 * one way: write_ops -> write_npy -> write_slice -> write_target. */
#ifndef TFSD_WRITE_COMMIT_H
#define TFSD_WRITE_COMMIT_H

#include "tfsd_write.h"

/* Documents read whole (schema.json, metadata values) at most. */
#define TFSD_DOC_MAX ((size_t)16 << 20)

/* The key a write to t uses (NULL: none); write_target.c. */
const uint8_t *tfsd__write_key(struct tfsd *fs, const struct tfsd_wtarget *t);
/* The write options of a commit to t: the mount's storage, key, threads,
 * spill folder and memory; write_target.c. */
void tfsd__write_opts_init(struct tfsd *fs, const struct tfsd_wtarget *t,
			   struct tfs_write_opts *wo);

/* Reads the header of the .npy file open at fd: its dtype (descr), shape
 * text and where the values start; a C-order file only. write_slice.c. */
enum tfs_err tfsd__npy_head(int fd, const char *name, char descr[128],
			    char shape[512], uint64_t *data_off,
			    struct tfs_diag *d);
/* A/<attr>/slice[SEL] (raw or .npy) from the staged file; write_slice.c. */
enum tfs_err tfsd__commit_slice(struct tfsd *fs, const struct tfsd_wtarget *t,
				const char *staged, struct tfsd_wresult *res,
				struct tfs_diag *d);

/* A .npy appended to an array; write_npy.c. */
enum tfs_err tfsd__commit_npy_array(struct tfsd *fs,
				    const struct tfsd_wtarget *t,
				    const char *staged, struct tfsd_wresult *res,
				    struct tfs_diag *d);
/* A .npy that makes a new array; write_npy.c. */
enum tfs_err tfsd__commit_npy_new(struct tfsd *fs, const struct tfsd_wtarget *t,
				  const char *staged, struct tfsd_wresult *res,
				  struct tfs_diag *d);

#endif
