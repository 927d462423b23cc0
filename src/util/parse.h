/* Strict parsers for numbers a user types: limits, sizes, durations.
 * Each rejects trailing garbage, signs where none belong, and overflow. */
#ifndef CODECELL_UTIL_PARSE_H
#define CODECELL_UTIL_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Decimal unsigned integer.  Returns 0, -EINVAL, -ERANGE. */
int parse_u64(const char *s, uint64_t *ret);
/* A byte size: "512", "64K", "256M", "1G", "1.5G", "100MiB", "2GB".
 * Suffixes are binary (K = 1024).  Returns 0, -EINVAL, -ERANGE. */
int parse_size(const char *s, uint64_t *ret);
/* Seconds, with optional fraction and unit: "2", "0.5", "1500ms", "2s",
 * "1m".  Must be > 0.  Returns 0, -EINVAL, -ERANGE. */
int parse_duration(const char *s, double *ret_seconds);

#endif
