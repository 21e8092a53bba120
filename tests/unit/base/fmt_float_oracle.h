/* The float formatters that core/base/fmt_float.c replaced, kept as the
 * oracle of its tests, the sweep, the fuzz target and the benchmark:
 * printf at increasing precision until strtod (strtof) reads the text
 * back. Same notation rules, same results, a hundred times slower. */
#ifndef FMT_FLOAT_ORACLE_H
#define FMT_FLOAT_ORACLE_H

#include <stdbool.h>
#include <stddef.h>

/* render/json_out.c json_fmt_f64/json_fmt_f32 (plain digits below 1e16,
 * the search from precision 15 (6) for normal non-integers). cap >= 32. */
size_t fmt_oracle_json_f64(char *out, size_t cap, double v);
size_t fmt_oracle_json_f32(char *out, size_t cap, float v);
/* core/filter/pipeline.c format_number for finite v (plain below 1e15,
 * the search from precision 1). */
void fmt_oracle_pipeline(char *out, size_t cap, double v);
/* core/read/sparse.c json_float's digits for a finite non-integer v: the
 * search with %.*e; writes the digits without trailing zeros (NUL-ended,
 * cap >= 24) and returns the decimal exponent. */
int fmt_oracle_digits(char *digits, size_t cap, double v, bool f32);

#endif
