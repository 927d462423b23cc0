/* http/internal.h: the server as its files share it: its state, its log
 * (server.c), the reaper (handlers.c), libmicrohttpd (mhd.c).  Not a
 * public interface. */
#ifndef CODECELL_HTTP_INTERNAL_H
#define CODECELL_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "http/serve.h"
#include "http/conns.h"
#include "http/metrics.h"
#include "engine/policy.h"
#include "engine/sessions.h"

/* Repeated lines are held back: a line whose format was printed in the
 * last second is counted, not printed, and the count goes out with the
 * next line of that format ("(N more like this suppressed)"), or by
 * itself once the second is over (api_log_flush).  A flood of identical
 * warnings once wrote gigabytes to stderr. */
#define API_LOG_SLOTS 16
struct api_log_slot {
	const char *fmt; /* the key: a format string literal */
	uint64_t last_ms; /* monotonic; when it was last printed */
	uint64_t suppressed;
	char last[256];	 /* the last suppressed line, for the flush */
};
struct api_log_limiter {
	pthread_mutex_t lock;
	struct api_log_slot slot[API_LOG_SLOTS];
};

struct api_jobs;
struct api_mcp;
struct e2b_state;
struct engine_approvals;

struct api_server {
	struct api_config cfg;
	char *token; /* owned copy */
	char *preload;
	struct MHD_Daemon *mhd;
	unsigned port;
	struct engine_sessions reg;
	struct api_metrics metrics;
	struct api_log_limiter logs;
	struct api_conns conns;
	int listen_fd; /* ours: bound and listening before libmicrohttpd starts */
	/* the address bound (the port read back), told to the engine: no
	 * tool connects to it (engine_listening) */
	struct sockaddr_storage bound;
	bool bound_told;
	char listen_host[64]; /* "127.0.0.2", "[::1]": the loopback address listened on */
	struct session_pool *pool;
	/* the pool's deaths and restarts the reaper has logged */
	uint64_t pool_deaths_logged, pool_restarts_logged;
	int stopping; /* atomic */
	/* the reaper of idle sessions */
	pthread_t reaper;
	bool reaper_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct engine_policies *policies; /* cfg's, or own_policies */
	struct engine_approvals *approvals; /* calls held for a person */
	struct engine_policies *own_policies;
	/* every execution in flight, to stop at shutdown (exec.c) */
	struct api_jobs *jobs;
	unsigned in_flight; /* requests begun, not completed; under lock */
	struct api_mcp *mcp; /* /mcp's core, made at its first request */
	struct e2b_state *e2b; /* the E2B door's sandboxes (e2b.c) */
};

/* Through cfg.log, rate-limited (struct api_log_limiter). */
void api_log(struct api_server *srv, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print the counts of lines held back for over a second. */
void api_log_flush(struct api_server *srv);
uint64_t api_now_ms(void); /* CLOCK_MONOTONIC */

/* The reaper (handlers.c). */
void *api_reaper_main(void *arg);

/* Load libmicrohttpd (mhd.c), once, before any MHD call.  0, or -errno
 * and a message in *ret_error (free()). */
int api_mhd_load(char **ret_error);

#endif
