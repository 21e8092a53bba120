/* Log sink dispatch. */
#include "tfs_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static tfs_log_sink log_sink;
static enum tfs_log_level log_max = TFS_LOG_WARN;

void tfs_log_configure(tfs_log_sink sink, enum tfs_log_level max_level)
{
	log_sink = sink;
	log_max = max_level;
}

size_t tfs_escape_ctrl(char *dst, size_t cap, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (; *src; src++) {
		unsigned char c = (unsigned char)*src;
		char esc[5];
		size_t k;

		if (c >= 0x20 && c != 0x7f) {
			esc[0] = (char)c;
			k = 1;
		} else if (c == '\n' || c == '\r' || c == '\t') {
			esc[0] = '\\';
			esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
			k = 2;
		} else {
			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hex[c >> 4];
			esc[3] = hex[c & 15];
			k = 4;
		}
		if (n + k >= cap)
			break;
		memcpy(dst + n, esc, k);
		n += k;
	}
	dst[n] = '\0';
	return n;
}

void tfs_log(enum tfs_log_level level, const char *fmt, ...)
{
	char raw[512], line[1024];
	va_list ap;

	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	tfs_escape_ctrl(line, sizeof(line), raw);
	if (log_sink)
		log_sink(level, line);
	else
		fprintf(stderr, "tilefs: %s\n", line);
}
