/* Calendar arithmetic on the proleptic Gregorian calendar, shared by the
 * parsers of dates (core/ingest) and whoever prints or reads them, so the
 * tree keeps one copy. Pure functions, thread-safe. */
#ifndef TFS_CIVIL_H
#define TFS_CIVIL_H

#include <stdint.h>

/* Days from 1970-01-01 to y-m-d (m in 1..12, d in 1..31, not checked
 * against the month), negative before it. Any int64 year is accepted:
 * years past about 2.5e16 give day counts beyond int64, so the result is
 * 128 bits wide; callers that know their years are small may narrow it. */
__extension__ __int128 tfs_days_from_civil(int64_t y, unsigned m, unsigned d);

/* The date of day z (0 = 1970-01-01, negative before it): the inverse of
 * tfs_days_from_civil for every int64 day. */
void tfs_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

#endif
