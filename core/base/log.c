/* Log sink dispatch. */
#include "tfs_log.h"

#include <stdarg.h>
#include <stdio.h>

static tfs_log_sink log_sink;
static enum tfs_log_level log_max = TFS_LOG_WARN;

void tfs_log_configure(tfs_log_sink sink, enum tfs_log_level max_level)
{
	log_sink = sink;
	log_max = max_level;
}

void tfs_log(enum tfs_log_level level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_sink)
		log_sink(level, line);
	else
		fprintf(stderr, "tilefs: %s\n", line);
}
