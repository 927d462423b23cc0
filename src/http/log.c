/* The server's log, with repeats held back (log.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http/internal.h"
#include "http/log.h"
#include "util/macro.h"
#include "util/banned.h"

uint64_t api_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#define LOG_INTERVAL_MS 1000

/* Under l->lock: the slot of this format, a free or the stalest one
 * otherwise (its count is lost: rare, and only a count). */
static struct api_log_slot *log_slot(struct api_log_limiter *l, const char *fmt)
{
	struct api_log_slot *pick = &l->slot[0];

	for (size_t i = 0; i < ARRAY_SIZE(l->slot); i++) {
		struct api_log_slot *sl = &l->slot[i];

		if (sl->fmt && (sl->fmt == fmt || !strcmp(sl->fmt, fmt)))
			return sl;
		if (!sl->fmt || (pick->fmt && sl->last_ms < pick->last_ms))
			pick = sl;
	}
	memset(pick, 0, sizeof(*pick));
	pick->fmt = fmt;
	return pick;
}

static void log_out(struct api_server *srv, const char *level, const char *msg, uint64_t more)
{
	char line[1100];

	if (!srv->cfg.log)
		return;
	if (more)
		snprintf(line, sizeof(line), "%s (%llu more like this suppressed)", msg,
			 (unsigned long long)more);
	else
		snprintf(line, sizeof(line), "%s", msg);
	srv->cfg.log(level, line);
}

/* The line msg of format fmt: printed with the count of the ones held
 * back before it, or held back itself. */
void api_log_limited(struct api_server *srv, const char *level, const char *fmt, const char *msg)
{
	struct api_log_limiter *l = &srv->logs;
	struct api_log_slot *sl;
	uint64_t now = api_now_ms(), more = 0;
	bool print = false;

	pthread_mutex_lock(&l->lock);
	sl = log_slot(l, fmt);
	if (!sl->last_ms || now - sl->last_ms >= LOG_INTERVAL_MS) {
		print = true;
		more = sl->suppressed;
		sl->suppressed = 0;
		sl->last_ms = now;
	} else {
		sl->suppressed++;
		snprintf(sl->last, sizeof(sl->last), "%s", msg);
	}
	pthread_mutex_unlock(&l->lock);
	if (print)
		log_out(srv, level, msg, more);
}

void api_log(struct api_server *srv, const char *level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!srv->cfg.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	api_log_limited(srv, level, fmt, msg);
}

/* The counts held back for over a second, or all of them (at exit). */
static void log_flush(struct api_server *srv, bool all)
{
	struct api_log_limiter *l = &srv->logs;
	uint64_t now = api_now_ms();

	for (size_t i = 0; i < ARRAY_SIZE(l->slot); i++) {
		struct api_log_slot *sl = &l->slot[i];
		char msg[sizeof(sl->last)];
		uint64_t more = 0;

		pthread_mutex_lock(&l->lock);
		if (sl->suppressed && (all || now - sl->last_ms >= LOG_INTERVAL_MS)) {
			/* the last line held back stands for them all */
			more = sl->suppressed;
			snprintf(msg, sizeof(msg), "%s", sl->last);
			sl->suppressed = 0;
			sl->last_ms = now;
		}
		pthread_mutex_unlock(&l->lock);
		if (more)
			log_out(srv, "warning", msg, more - 1);
	}
}

void api_log_flush(struct api_server *srv)
{
	log_flush(srv, false);
}

void api_log_flush_all(struct api_server *srv)
{
	log_flush(srv, true);
}
