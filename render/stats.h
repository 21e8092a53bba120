/* stats.json: count, null_count, min, max, sum and mean of attributes over
 * a selection and a filter (the core's tfs_query_stats), one JSON object
 * per attribute. min and max are written as the JSON rendering writes the
 * attribute's values (labels for an enumeration, ISO text for times),
 * sum exactly for integers, mean as a float; null where undefined
 * (no value, strings and other cells without a sum, enumerations). */
#ifndef TFSR_STATS_H
#define TFSR_STATS_H

#include <stddef.h>

#include "tfs_buf.h"
#include <tilefs/tilefs.h>

/* Appends the statistics of attribute `field` (a field index, dims
 * first; -1: an object with one entry per attribute) over selection SEL
 * (sel_len bytes; "" = the non-empty domain; no steps) and filter where
 * (NULL: none), ending with a newline. Bad selections are
 * TFS_E_INVALID. */
enum tfs_err tfsr_doc_stats(struct tfs_buf *out, struct tfs_array *a, int field,
			    const char *sel, size_t sel_len,
			    const struct tfs_where *where,
			    struct tfs_diag *d) TFS_WUR;

#endif
