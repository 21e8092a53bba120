/* Small pure helpers of the S3 backend: which failures to retry and how
 * long to wait (exponential backoff with full jitter, as the AWS SDKs do),
 * percent-encoding of keys and query values (SigV4 canonical form), key
 * normalisation and S3's timestamps. */
#include "s3_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "tfs_alloc.h"

bool tfs__s3_retryable(int curl_code, long status, const char *s3_code)
{
	if (curl_code != CURLE_OK) {
		switch (curl_code) {
		case CURLE_COULDNT_CONNECT:
		case CURLE_OPERATION_TIMEDOUT:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
		case CURLE_GOT_NOTHING:
		case CURLE_PARTIAL_FILE:
		case CURLE_HTTP2:
		case CURLE_HTTP2_STREAM:
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_SSL_CONNECT_ERROR:
		case CURLE_WEIRD_SERVER_REPLY:
		case CURLE_BAD_CONTENT_ENCODING:
			return true;
		default:
			return false;
		}
	}
	if (status == 500 || status == 502 || status == 503 || status == 504 ||
	    status == 429)
		return true;
	if (s3_code && (!strcmp(s3_code, "SlowDown") ||
			!strcmp(s3_code, "RequestTimeout") ||
			!strcmp(s3_code, "InternalError") ||
			!strcmp(s3_code, "ServiceUnavailable")))
		return true;
	return false;
}

unsigned tfs__s3_backoff_ms(unsigned attempt, unsigned base_ms, unsigned cap_ms,
			    uint32_t rnd)
{
	uint64_t ceiling = base_ms;
	uint64_t v;

	if (attempt == 0)
		return 0;
	for (unsigned i = 1; i < attempt && ceiling < cap_ms; i++)
		ceiling *= 2;
	if (ceiling > cap_ms)
		ceiling = cap_ms;
	v = ((uint64_t)rnd * ceiling) >> 32;
	return v ? (unsigned)v : 1;
}

char *tfs__s3_encode(const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = n < SIZE_MAX / 4 ? tfs_malloc(3 * n + 1) : NULL;
	char *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
		    c == '~' || (keep_slash && c == '/')) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

bool tfs__s3_parse_time(const char *s, int64_t *ns)
{
	struct tm tm;
	int y, mo, da, h, mi, se, used = 0;
	int64_t frac = 0;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &da, &h, &mi, &se,
		   &used) != 6 ||
	    used != 19)
		return false;
	s += used;
	if (*s == '.') {
		int64_t scale = 100000000;

		s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9') {
			frac += (*s - '0') * scale;
			scale /= 10;
			s++;
		}
	}
	if (strcmp(s, "Z") && strcmp(s, "+00:00"))
		return false;
	if (mo < 1 || mo > 12 || da < 1 || da > 31 || h > 23 || mi > 59 ||
	    se > 60 || y < 1970)
		return false;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = da;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return false;
	*ns = (int64_t)t * 1000000000 + frac;
	return true;
}

char *tfs__s3_key(const char *path)
{
	size_t n = strlen(path);
	char *out = tfs_malloc(n + 1);
	char *o = out;

	if (!out)
		return NULL;
	for (const char *p = path; *p; p++) {
		if (*p == '/' && (o == out || o[-1] == '/'))
			continue;
		*o++ = *p;
	}
	while (o > out && o[-1] == '/')
		o--;
	*o = '\0';
	return out;
}
