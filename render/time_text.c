/* Times as users type and read them: ISO-8601 UTC text and milliseconds
 * since the epoch, on the proleptic Gregorian calendar (tfs_render.h). */
#include "tfs_render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_civil.h"

/* Milliseconds since the epoch: a plain number as it is, else ISO-8601
 * text as core reads date/times (tfs_value_from_text), a fraction finer
 * than a millisecond cut off; nothing before 1970. */
enum tfs_err tfsr_parse_time(const char *text, uint64_t *out)
{
	enum { DATETIME_MS = TFS_DATETIME_YEAR + 7,
	       DATETIME_NS = TFS_DATETIME_YEAR + 9 };
	size_t len = strlen(text);
	int64_t v, ns;
	enum tfs_err e;

	if (!len)
		return TFS_E_INVALID;
	if (strspn(text, "0123456789") == len) {
		char *end;

		errno = 0;
		*out = strtoull(text, &end, 10);
		return errno ? TFS_E_RANGE : TFS_E_OK;
	}
	e = tfs_value_from_text(DATETIME_MS, text, len, &v, NULL);
	if (e == TFS_E_RANGE &&
	    tfs_value_from_text(DATETIME_NS, text, len, &ns, NULL) ==
		    TFS_E_OK) {
		v = ns / 1000000 - (ns % 1000000 < 0);
		e = TFS_E_OK;
	}
	if (e)
		return e;
	if (v < 0)
		return TFS_E_RANGE;
	*out = (uint64_t)v;
	return TFS_E_OK;
}

void tfsr_format_time(char *out, size_t cap, uint64_t ms)
{
	uint64_t secs = ms / 1000;
	int64_t y;
	unsigned m, d;

	tfs_civil_from_days((int64_t)(secs / 86400), &y, &m, &d);
	snprintf(out, cap, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u.%03uZ", y,
		 m, d, (unsigned)(secs % 86400 / 3600),
		 (unsigned)(secs % 3600 / 60), (unsigned)(secs % 60),
		 (unsigned)(ms % 1000));
}
