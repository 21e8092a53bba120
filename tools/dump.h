/* `tfs dump`: prints an array as the corpus JSON (corpus/README.md, "The
 * JSON"): schema, non-empty domain, metadata, fragments and reads, the
 * cells streamed batch by batch to stdout; or a group: its metadata and
 * members, each member's array or group JSON nested in it. */
#ifndef TFS_DUMP_H
#define TFS_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit statuses of the tool. */
enum dump_status {
	DUMP_OK = 0,
	DUMP_ERROR = 1,     /* message on stderr */
	DUMP_USAGE = 2,
	DUMP_NOT_ARRAY = 3, /* not an array or group */
};

struct dump_opts {
	const char *path;
	const char *name;        /* NULL: the folder's base name */
	const char *key_hex;     /* NULL: no key */
	uint64_t timestamp;      /* open at this time; 0 = now */
	bool has_timestamp;
	const char *const *subarrays; /* "lo:hi,lo:hi" texts, one read each */
	size_t subarray_num;
	bool full;               /* start with a read of the non-empty domain */
	unsigned threads;        /* decode threads; 0 = one per CPU */
};

/* Runs the dump; returns the exit status. Errors go to stderr as one line
 * prefixed "tfs dump: ". */
enum dump_status dump_run(const struct dump_opts *o);

#endif
