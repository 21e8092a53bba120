/* String predicates (tfs_str.h). */
#include "tfs_str.h"

#include <string.h>
#include <strings.h>

bool tfs_str_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !memcmp(s + n - m, suffix, m);
}

bool tfs_str_ends_with_nocase(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}
