/* Small string predicates shared by every module. Pure; thread-safe. */
#ifndef TFS_STR_H
#define TFS_STR_H

#include <stdbool.h>

/* Whether the NUL-terminated s ends with suffix (byte for byte; every s
 * ends with ""). */
bool tfs_str_ends_with(const char *s, const char *suffix);
/* The same, ASCII letters compared without case ("x.CSV" ends with
 * ".csv"). */
bool tfs_str_ends_with_nocase(const char *s, const char *suffix);

#endif
