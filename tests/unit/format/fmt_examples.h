/* Worked examples of the format documents, as bytes. */
#ifndef TFS_FMT_EXAMPLES_H
#define TFS_FMT_EXAMPLES_H

#include <stdint.h>

#define FX_SCHEMA_V22_LEN 167
/* format/schema.md §10: dense 1-D, d INT32 [1,10] extent 5, a INT32. */
extern const uint8_t fx_schema_v22[FX_SCHEMA_V22_LEN];

#endif
