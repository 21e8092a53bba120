/* Shared by the robustness tests: corpus arrays held in memory as a list of
 * files, copied into a fresh in-memory storage backend for each attempt,
 * and a canonical read of an array (metadata, fragments and every cell of
 * a full query, column by column) so that two reads compare with memcmp
 * whatever their batch boundaries. */
#ifndef ROBUST_UTIL_H
#define ROBUST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_buf.h"
#include "tilefs/tilefs.h"

/* Where arrays are put in the in-memory backend. */
#define RB_ROOT "/A"

struct rb_file {
	char *rel; /* relative to the array folder */
	uint8_t *data;
	size_t len;
};

struct rb_array {
	char *name; /* corpus name, e.g. "dense_1d" */
	struct rb_file *files;
	size_t file_num;
};

/* Reads every file under dir (recursively, through the POSIX backend)
 * into a; false with a message on stderr on failure. */
bool rb_array_load(struct rb_array *a, const char *dir, const char *name);
void rb_array_release(struct rb_array *a);

/* Replaces the content of files[index] in rb_array_to_mem. */
struct rb_subst {
	size_t index;
	const uint8_t *data;
	size_t len;
};

/* A new in-memory backend holding the files of a under RB_ROOT, with the
 * substitutions given (none: subst_num = 0). NULL on failure. */
struct tfs_vfs *rb_array_to_mem(const struct rb_array *a,
				const struct rb_subst *subst, size_t subst_num);

/* Limits of one canonical read, so that a mutated header claiming an
 * enormous domain costs a bounded time. */
struct rb_limits {
	uint64_t max_cells;   /* stop (TFS_E_TOO_BIG) beyond this many cells */
	unsigned threads;
	struct tfs_tile_cache *cache; /* or NULL */
};

/* Opens RB_ROOT of v with key (or NULL) and appends a canonical form of
 * what a reader sees to out: metadata, fragments, then every column of a
 * query over the non-empty domain. Returns the first error (d says why),
 * TFS_E_TOO_BIG when the limits stop it. */
enum tfs_err rb_read(struct tfs_vfs *v, const uint8_t *key,
		     const struct rb_limits *lim, struct tfs_buf *out,
		     struct tfs_diag *d);

/* The corpus folder (TFS_CORPUS_DIR, or $TFS_CORPUS). */
const char *rb_corpus_dir(void);
/* The key of corpus/encrypted (its JSON's key_hex); false if unreadable. */
bool rb_corpus_key(uint8_t key[32]);

/* splitmix64: a deterministic stream from a seed. */
static inline uint64_t rb_rand(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0. */
static inline uint64_t rb_below(uint64_t *state, uint64_t n)
{
	return rb_rand(state) % n;
}

/* Seconds on a monotonic clock. */
double rb_now(void);
/* An unsigned number from the environment, or def. */
unsigned long rb_env_ulong(const char *name, unsigned long def);

#endif
