/* Small string predicates shared across the tree, so each module does not
 * keep its own copy. Pure functions on NUL-terminated strings. */
#ifndef TFS_STR_H
#define TFS_STR_H

#include <stdbool.h>

/* Whether s ends with suffix (every string ends with ""). */
bool tfs_str_ends_with(const char *s, const char *suffix);
/* The same, ASCII letters compared without case ("x.CSV" ends with
 * ".csv"). */
bool tfs_str_ends_with_nocase(const char *s, const char *suffix);

#endif
