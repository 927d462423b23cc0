/* http/log.h: the server's log, through cfg.log, with repeats held back
 * (struct api_log_limiter) (log.c). */
#ifndef CODECELL_HTTP_LOG_H
#define CODECELL_HTTP_LOG_H

#include <stdint.h>

struct api_server;

void api_log(struct api_server *srv, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The line msg of format fmt (the key: a literal): printed with the
 * count of the ones held back before it, or held back itself. */
void api_log_limited(struct api_server *srv, const char *level, const char *fmt, const char *msg);
/* Print the counts of lines held back for over a second; _all: every
 * count (at shutdown). */
void api_log_flush(struct api_server *srv);
void api_log_flush_all(struct api_server *srv);
uint64_t api_now_ms(void); /* CLOCK_MONOTONIC */

#endif
