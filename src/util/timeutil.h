#ifndef CODECELL_UTIL_TIMEUTIL_H
#define CODECELL_UTIL_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME in milliseconds since the epoch. */
static inline uint64_t epoch_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ms (epoch milliseconds) as ISO 8601 in UTC: "2026-11-24T12:00:00.123Z"
 * (out: at least 32 bytes). */
static inline void iso8601_ms(uint64_t ms, char *out, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	size_t len;

	if (!n)
		return;
	gmtime_r(&t, &tm);
	len = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!len)
		out[0] = '\0';
	else
		snprintf(out + len, n - len, ".%03uZ", (unsigned)(ms % 1000));
}

#endif
