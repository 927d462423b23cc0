/* http/internal.h: the server as its files and its doors share it:
 * its state.  Not a public interface. */
#ifndef CODECELL_HTTP_INTERNAL_H
#define CODECELL_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "http/server.h"
#include "http/door.h"
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
	const char *fmt;  /* the key: a format string literal */
	uint64_t last_ms; /* monotonic; when it was last printed */
	uint64_t suppressed;
	char last[256]; /* the last suppressed line, for the flush */
};
struct api_log_limiter {
	pthread_mutex_t lock;
	struct api_log_slot slot[API_LOG_SLOTS];
};

struct api_jobs;
struct http_door;
struct http_route;
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
	struct engine_policies *policies;   /* cfg's, or own_policies */
	struct engine_approvals *approvals; /* calls held for a person */
	struct engine_policies *own_policies;
	/* every execution in flight, to stop at shutdown (exec.c) */
	struct api_jobs *jobs;
	unsigned in_flight; /* requests begun, not completed; under lock */
	/* the doors (cfg.doors), what each one's init made, and the route
	 * table: every door's routes, each with its door */
	const struct http_door *door[HTTP_DOORS_MAX];
	void *door_state[HTTP_DOORS_MAX];
	size_t n_doors;
	struct http_entry {
		const struct http_route *r;
		const struct http_door *door;
	} * table;
	size_t n_table;
	/* who resolves a path, in order: the transport's own routes (door
	 * NULL), then each door with a resolve hook */
	struct http_resolver resolver[HTTP_DOORS_MAX + 1];
	const struct http_door *resolver_door[HTTP_DOORS_MAX + 1];
	size_t n_resolvers;
};

#endif
