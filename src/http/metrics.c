/* Counters for GET /metrics, in the Prometheus text exposition format
 * (version 0.0.4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/metrics.h"
#include "engine/setup.h"
#include "util/buf.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* Upper bounds of the latency buckets, in seconds: executions' span
 * a minute; the lifecycle calls' are finer where their target is
 * (README, "Soak": under 5 ms). */
static const double exec_bounds[] = { 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05,
				      0.1,    0.25,  0.5,   1,	   2.5,	 10,	60 };
static const double op_bounds[] = { 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.004,
				    0.005,   0.0075, 0.01,  0.025, 0.05,  0.1,
				    0.25,    0.5,    1,	    2.5,   10,	  60 };
#define N_EXEC_BOUNDS (sizeof(exec_bounds) / sizeof(exec_bounds[0]))
#define N_OP_BOUNDS (sizeof(op_bounds) / sizeof(op_bounds[0]))
_Static_assert(N_EXEC_BOUNDS <= API_HISTOGRAM_MAX && N_OP_BOUNDS <= API_HISTOGRAM_MAX,
	       "api_histogram holds every bucket");
static const char *const op_names[API_OP_COUNT] = { "create", "fork", "restart" };

void api_metrics_init(struct api_metrics *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
}

void api_metrics_release(struct api_metrics *m)
{
	pthread_mutex_destroy(&m->lock);
}

void api_metrics_add(struct api_metrics *m, uint64_t *counter)
{
	pthread_mutex_lock(&m->lock);
	(*counter)++;
	pthread_mutex_unlock(&m->lock);
}

/* Called with m->lock held. */
static void observe(struct api_histogram *h, const double *bounds, size_t n, double seconds)
{
	size_t b = 0;

	while (b < n && seconds > bounds[b])
		b++;
	h->buckets[b]++;
	h->sum += seconds;
	h->count++;
}

void api_metrics_session_op(struct api_metrics *m, enum api_session_op op, uint64_t start_ns)
{
	double seconds = (double)(now_ns() - start_ns) / 1e9;

	pthread_mutex_lock(&m->lock);
	observe(&m->op_latency[op], op_bounds, N_OP_BOUNDS, seconds);
	pthread_mutex_unlock(&m->lock);
}

void api_metrics_execution(struct api_metrics *m, const struct run_result *r, double seconds)
{
	pthread_mutex_lock(&m->lock);
	if (r->status <= RESULT_REJECTED)
		m->executions[r->status]++;
	observe(&m->exec_latency, exec_bounds, N_EXEC_BOUNDS, seconds);
	for (unsigned bit = 0; bit < 16; bit++)
		if (r->limits_hit & (1u << bit))
			m->limits_hit[bit]++;
	pthread_mutex_unlock(&m->lock);
}

/* One histogram's series.  label: "" or one label pair (op="fork"),
 * shown in every series with le after it. */
static void histogram(struct buf *b, const char *name, const char *label,
		      const struct api_histogram *h, const double *bounds, size_t n)
{
	const char *comma = *label ? "," : "";
	uint64_t cum = 0;
	char sel[48] = "";

	if (*label)
		(void)snprintf(sel, sizeof(sel), "{%s}", label);
	for (size_t i = 0; i < n; i++) {
		cum += h->buckets[i];
		(void)buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, label, comma,
				 bounds[i], (unsigned long long)cum);
	}
	cum += h->buckets[n];
	(void)buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n%s_sum%s %.6f\n%s_count%s %llu\n",
			 name, label, comma, (unsigned long long)cum, name, sel, h->sum, name, sel,
			 (unsigned long long)h->count);
}

static void histograms(struct buf *b, const struct api_metrics *m)
{
	char label[32];

	(void)buf_puts(
		b,
		"# HELP codecell_execution_duration_seconds Wall time of executions, as the server saw them.\n"
		"# TYPE codecell_execution_duration_seconds histogram\n");
	histogram(b, "codecell_execution_duration_seconds", "", &m->exec_latency, exec_bounds,
		  N_EXEC_BOUNDS);
	(void)buf_puts(
		b,
		"# HELP codecell_session_operation_duration_seconds Wall time of session creates, forks and restarts that succeeded, as the server saw them.\n"
		"# TYPE codecell_session_operation_duration_seconds histogram\n");
	for (int op = 0; op < API_OP_COUNT; op++) {
		(void)snprintf(label, sizeof(label), "op=\"%s\"", op_names[op]);
		histogram(b, "codecell_session_operation_duration_seconds", label,
			  &m->op_latency[op], op_bounds, N_OP_BOUNDS);
	}
}

static void counter(struct buf *b, const char *name, const char *help, uint64_t v)
{
	(void)buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
			 (unsigned long long)v);
}

static void gauge(struct buf *b, const char *name, const char *help, long long v)
{
	(void)buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name, v);
}

/* The warm pool's gauges and counters (README, "Pool health"). */
static void pool_metrics(struct buf *b, const struct session_pool_health *h)
{
	const struct session_pool_stats *st = &h->stats;

	gauge(b, "codecell_pool_target",
	      "Kernels the pool aims to keep ready (--pool, raised for a while when takes find none).",
	      h->target);
	gauge(b, "codecell_pool_template_up",
	      "1 while the pool's template is alive, 0 while it is being started again.",
	      h->template_alive);
	gauge(b, "codecell_pool_degraded",
	      "1 while the pool cannot serve sessions warm (see /healthz for why).", h->degraded);
	counter(b, "codecell_pool_template_restarts_total",
		"Templates started again after one died.", st->template_restarts);
	counter(b, "codecell_pool_template_deaths_total", "Templates (or their inits) seen dead.",
		st->template_deaths);
	(void)buf_puts(
		b,
		"# HELP codecell_pool_takes_total Kernels asked of the pool, by how they were served.\n"
		"# TYPE codecell_pool_takes_total counter\n");
	(void)buf_printf(b,
			 "codecell_pool_takes_total{served=\"ready\"} %llu\n"
			 "codecell_pool_takes_total{served=\"direct\"} %llu\n"
			 "codecell_pool_takes_total{served=\"cold\"} %llu\n",
			 (unsigned long long)st->taken_ready, (unsigned long long)st->taken_direct,
			 (unsigned long long)st->cold);
	counter(b, "codecell_pool_warmed_takes_total",
		"Takes served by a ready kernel warmed ahead for a fork (part of served=\"ready\").",
		st->taken_warmed);
	counter(b, "codecell_pool_kernels_discarded_total",
		"Ready kernels found dead and not handed out.", st->discarded);
	counter(b, "codecell_pool_cell_failures_total", "Kernels the template could not make.",
		st->cell_failures);
}

static const char *const door_names[API_DOOR_COUNT] = { "api", "e2b", "mcp", "agent" };

enum api_door api_door_of(const char *door)
{
	for (int d = 0; d < API_DOOR_COUNT; d++)
		if (door && !strcmp(door, door_names[d]))
			return (enum api_door)d;
	return API_DOOR_V1;
}

char *api_metrics_text(struct api_metrics *m, unsigned sessions, unsigned max_sessions,
		       unsigned busy, const unsigned by_door[API_DOOR_COUNT],
		       const struct session_pool_health *pool, size_t *ret_len)
{
	struct buf b;

	buf_init(&b, 1u << 20);
	gauge(&b, "codecell_sessions", "Sessions alive.", sessions);
	(void)buf_puts(
		&b,
		"# HELP codecell_sessions_by_door Sessions alive, by the door that made them (all count against --max-sessions).\n"
		"# TYPE codecell_sessions_by_door gauge\n");
	for (int d = 0; d < API_DOOR_COUNT; d++)
		(void)buf_printf(&b, "codecell_sessions_by_door{door=\"%s\"} %u\n", door_names[d],
				 by_door[d]);
	gauge(&b, "codecell_sessions_max", "The --max-sessions limit.", max_sessions);
	gauge(&b, "codecell_sessions_busy", "Sessions running code now.", busy);
	gauge(&b, "codecell_pool_ready", "Warm kernels ready in the pool (-1: no pool).",
	      pool ? (long long)pool->ready : -1);
	if (pool)
		pool_metrics(&b, pool);
	pthread_mutex_lock(&m->lock);
	counter(&b, "codecell_sessions_created_total", "Sessions created.", m->sessions_created);
	counter(&b, "codecell_sessions_deleted_total", "Sessions deleted by a client.",
		m->sessions_deleted);
	counter(&b, "codecell_sessions_expired_total", "Sessions ended by the idle timeout.",
		m->sessions_expired);
	counter(&b, "codecell_session_failures_total",
		"Sessions that could not be created or could not go on.", m->session_failures);
	counter(&b, "codecell_client_disconnects_total",
		"Executions interrupted because the client went away.", m->disconnects);
	(void)buf_puts(&b, "# HELP codecell_executions_total Executions by final status.\n"
			   "# TYPE codecell_executions_total counter\n");
	for (int s = 0; s <= RESULT_REJECTED; s++)
		(void)buf_printf(&b, "codecell_executions_total{status=\"%s\"} %llu\n",
				 result_status_name(s), (unsigned long long)m->executions[s]);
	(void)buf_puts(
		&b, "# HELP codecell_limits_hit_total Executions that ran into a limit, by limit.\n"
		    "# TYPE codecell_limits_hit_total counter\n");
	for (unsigned bit = 0; bit < 16; bit++) {
		const char *name = engine_limit_hit_name(1u << bit);

		if (name)
			(void)buf_printf(&b, "codecell_limits_hit_total{limit=\"%s\"} %llu\n", name,
					 (unsigned long long)m->limits_hit[bit]);
	}
	(void)buf_puts(&b, "# HELP codecell_http_errors_total Error responses by class.\n"
			   "# TYPE codecell_http_errors_total counter\n");
	(void)buf_printf(&b,
			 "codecell_http_errors_total{class=\"4xx\"} %llu\n"
			 "codecell_http_errors_total{class=\"5xx\"} %llu\n",
			 (unsigned long long)m->http_errors[4],
			 (unsigned long long)m->http_errors[5]);
	histograms(&b, m);
	pthread_mutex_unlock(&m->lock);
	return buf_detach(&b, ret_len);
}
