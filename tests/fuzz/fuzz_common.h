/* What every fuzz target shares: the libFuzzer entry points, a check that
 * aborts (so libFuzzer and the replay runner both report it), the key of
 * the corpus's encrypted array, and small helpers to cut a structured
 * input into fields. Targets are built twice: with libFuzzer (TFS_FUZZ=ON,
 * clang) and with replay_main.c, which runs them over the regression
 * inputs and the seeds in every ordinary build. */
#ifndef TFS_FUZZ_COMMON_H
#define TFS_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfs_bytes.h"
#include "tfs_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional one-time setup; replay_main.c calls it when a target has it. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Aborts with the failed condition: a broken invariant is a finding. */
#define FUZZ_CHECK(cond)                                                  \
	do {                                                              \
		if (!(cond))                                              \
			fuzz_fail(__FILE__, __LINE__, #cond);             \
	} while (0)

_Noreturn void fuzz_fail(const char *file, int line, const char *what);

/* Decoded payloads and tiles are capped far below the engine's limits so
 * a lying header costs a failed parse, not seconds of allocation. */
#define FUZZ_MAX_PAYLOAD ((size_t)16 << 20)

/* The 32-byte key of corpus/public/encrypted (its JSON's key_hex). */
extern const uint8_t fuzz_corpus_key[32];

/* Decodes the generic tile at buf with the key its header asks for (none,
 * or the corpus key), payload capped at FUZZ_MAX_PAYLOAD. */
enum tfs_err fuzz_generic_decode(const uint8_t *buf, size_t len,
				 uint8_t **payload, size_t *payload_len,
				 size_t *consumed);

/* The decoded size a filtered tile (tile.md §1) claims: the sum of its
 * chunks' original lengths. False when the chunk headers do not walk to
 * the end of src or the sum exceeds max. */
bool fuzz_tile_decoded_len(const uint8_t *src, size_t len, size_t max,
			   size_t *out);

/* Runs run(arg) once more with the engine's allocator failing from the
 * nth allocation on: the result must be expect (what the run gave without
 * faults) or TFS_E_NOMEM, and run must have freed everything either way
 * (LeakSanitizer checks). Callers derive n from the input so a finding
 * reproduces. */
void fuzz_alloc_fault(enum tfs_err (*run)(void *arg), void *arg,
		      enum tfs_err expect, long n);

/* One filter of fuzz_filters as 28 bytes: type (mod 20), compressor
 * byte (>= 9: the type's own), i32 level, reinterpret (> 43: none
 * stored), u32 max window, f64 scale, f64 offset, byte width index; WebP
 * reuses bytes 11-20 (f32 quality, format, lossless, u16 y/x extent).
 * Appends its stored form (filters.md §1) so it goes through the real
 * parser. */
#define FUZZ_FILTER_SPEC 28
struct tfs_buf;
enum tfs_err fuzz_filter_spec_put(struct tfs_buf *b, const uint8_t *spec);

/* Fails with where got and want first differ when they are not equal. */
void fuzz_check_same(const void *got, size_t got_len, const void *want,
		     size_t want_len, const char *what);

/* Reads every byte of p[0..n) so ASan checks the whole buffer exists. */
void fuzz_touch(const void *p, size_t n);

/* Prints a line to stderr when FUZZ_VERBOSE is set (seed checks). */
void fuzz_note(const char *fmt, ...) TFS_PRINTF(1, 2);

/* A small deterministic number from the input, for such choices. */
uint32_t fuzz_hash(const uint8_t *data, size_t size);

#endif
