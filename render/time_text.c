/* Times as users type and read them: ISO-8601 UTC text and milliseconds
 * since the epoch, on the proleptic Gregorian calendar (tfs_render.h). */
#include "tfs_render.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_civil.h"

/* Reads exactly n digits at *p. */
static bool digits(const char **p, unsigned n, unsigned *out)
{
	unsigned v = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return false;
		v = v * 10 + (unsigned)((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return true;
}

enum tfs_err tfsr_parse_time(const char *text, uint64_t *out)
{
	const char *p = text;
	unsigned y, mo, d, h = 0, mi = 0, s = 0, ms = 0;
	int64_t days, total;

	if (!*text)
		return TFS_E_INVALID;
	if (strspn(text, "0123456789") == strlen(text)) {
		char *end;

		errno = 0;
		*out = strtoull(text, &end, 10);
		return errno ? TFS_E_RANGE : TFS_E_OK;
	}
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) ||
	    *p++ != '-' || !digits(&p, 2, &d))
		return TFS_E_INVALID;
	if (*p == 'T' || *p == ' ') {
		p++;
		if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
			return TFS_E_INVALID;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &s))
				return TFS_E_INVALID;
			if (*p == '.') {
				unsigned scale = 100;

				p++;
				if (!isdigit((unsigned char)*p))
					return TFS_E_INVALID;
				for (; isdigit((unsigned char)*p); p++) {
					ms += (unsigned)(*p - '0') * scale;
					scale /= 10;
				}
			}
		}
	}
	if (*p == 'Z')
		p++;
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    s > 60)
		return TFS_E_INVALID;
	days = (int64_t)tfs_days_from_civil(y, mo, d);
	if (days < 0)
		return TFS_E_RANGE;
	total = ((days * 24 + h) * 60 + mi) * 60 + s;
	*out = (uint64_t)total * 1000 + ms;
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
