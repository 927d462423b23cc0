/* http/metrics.h: the server's counters and their Prometheus text
 * (metrics.c). */
#ifndef CODECELL_HTTP_METRICS_H
#define CODECELL_HTTP_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "engine/engine.h" /* the result, session and sandbox types */

/* A latency histogram: counts by upper bound (metrics.c), the last
 * for +Inf. */
#define API_HISTOGRAM_MAX 18
struct api_histogram {
	uint64_t buckets[API_HISTOGRAM_MAX + 1];
	double sum;
	uint64_t count;
};

/* The session lifecycle calls whose wall time /metrics shows. */
enum api_session_op { API_OP_CREATE, API_OP_FORK, API_OP_RESTART, API_OP_COUNT };

struct api_metrics {
	pthread_mutex_t lock;
	uint64_t executions[RESULT_REJECTED + 1]; /* by enum result_status */
	struct api_histogram exec_latency;
	struct api_histogram op_latency[API_OP_COUNT]; /* by enum api_session_op */
	uint64_t limits_hit[16];		       /* by bit of enum sandbox_limit */
	uint64_t sessions_created, sessions_deleted, sessions_expired, session_failures;
	uint64_t disconnects;
	uint64_t http_errors[6]; /* by hundred: [4] 4xx, [5] 5xx */
};
void api_metrics_init(struct api_metrics *m);
void api_metrics_release(struct api_metrics *m);
void api_metrics_execution(struct api_metrics *m, const struct run_result *r, double seconds);
void api_metrics_add(struct api_metrics *m, uint64_t *counter);
/* A create, fork or restart that succeeded, whose engine call started
 * at start_ns (now_ns()) and ended now: from the parsed request to the
 * session (HTTP's and E2B's doors; MCP and the agent run theirs in
 * process, uncounted). */
void api_metrics_session_op(struct api_metrics *m, enum api_session_op op, uint64_t start_ns);
/* The doors whose sessions the server's table holds (an entry's door:
 * "api", "e2b", "mcp"), for codecell_sessions_by_door. */
enum api_door { API_DOOR_V1, API_DOOR_E2B, API_DOOR_MCP, API_DOOR_AGENT, API_DOOR_COUNT };
enum api_door api_door_of(const char *door);

/* The Prometheus text exposition format.  Owned by the caller. */
/* pool: the warm pool's health, or NULL when there is none; by_door:
 * the sessions alive by enum api_door. */
char *api_metrics_text(struct api_metrics *m, unsigned sessions, unsigned max_sessions,
		       unsigned busy, const unsigned by_door[API_DOOR_COUNT],
		       const struct session_pool_health *pool, size_t *ret_len);

#endif
