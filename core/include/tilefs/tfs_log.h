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
/* Emits one line: control characters in it (a newline in a file name)
 * are escaped as by tfs_escape_ctrl, so no line can be forged. */
void tfs_log(enum tfs_log_level level, const char *fmt, ...) TFS_PRINTF(2, 3);

/* Copies src to dst (cap > 0; always NUL-terminated, cut at a whole
 * escape), with \n, \r, \t for those and \xHH for the other bytes
 * below 0x20 and 0x7f. Returns the length written. */
size_t tfs_escape_ctrl(char *dst, size_t cap, const char *src);

#endif
