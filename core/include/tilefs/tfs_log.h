/* Logging: the engine reports through one sink the embedding program sets
 * (stderr by default); the daemon routes it to syslog. */
#ifndef TFS_LOG_H
#define TFS_LOG_H

#include "tfs_err.h"

enum tfs_log_level { TFS_LOG_ERROR, TFS_LOG_WARN, TFS_LOG_INFO, TFS_LOG_DEBUG };

typedef void (*tfs_log_sink)(enum tfs_log_level level, const char *line);

/* Sets the sink (NULL = stderr) and the most verbose level emitted. Call
 * before starting threads. */
void tfs_log_configure(tfs_log_sink sink, enum tfs_log_level max_level);
void tfs_log(enum tfs_log_level level, const char *fmt, ...) TFS_PRINTF(2, 3);

#endif
