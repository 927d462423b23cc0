/* api: what the server's files share.  Not a public interface. */
#ifndef CODECELL_API_INTERNAL_H
#define CODECELL_API_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <jansson.h>
#include <microhttpd.h>

#include "api/api.h"
#include "api/request.h"
#include "api/route.h"
#include "engine/audit.h"
#include "engine/files.h"
#include "engine/policy.h"
#include "session/result.h"
#include "session/session.h"
#include "session/workspace.h"
#include "api/e2b.h"
#include "engine/sessions.h"

/* ---- text (text.c) ---- */

/* Length of the longest prefix of s[0..n) that does not end inside a
 * UTF-8 sequence that could still be completed by more bytes. */
size_t api_utf8_complete_len(const char *s, size_t n);
/* A valid UTF-8 copy of s[0..n): each invalid byte becomes U+FFFD.
 * Owned by the caller; NULL on ENOMEM. */
char *api_utf8_repair(const char *s, size_t n, size_t *ret_len);
/* j as JSON text (json_dumpb flags) in one allocation of its exact size,
 * NUL-terminated; *ret_len (may be NULL) its length.  Owned by the
 * caller; NULL on ENOMEM or an unserializable j. */
char *api_json_dump(const json_t *j, size_t flags, size_t *ret_len);

/* ---- metrics (metrics.c) ---- */

#define API_LATENCY_BUCKETS 14
struct api_metrics {
	pthread_mutex_t lock;
	uint64_t executions[RESULT_REJECTED + 1]; /* by enum result_status */
	uint64_t latency_buckets[API_LATENCY_BUCKETS + 1]; /* the last: +Inf */
	double latency_sum;
	uint64_t latency_count;
	uint64_t limits_hit[16]; /* by bit of enum sandbox_limit */
	uint64_t sessions_created, sessions_deleted, sessions_expired, session_failures;
	uint64_t disconnects;
	uint64_t http_errors[6]; /* by hundred: [4] 4xx, [5] 5xx */
};
void api_metrics_init(struct api_metrics *m);
void api_metrics_release(struct api_metrics *m);
void api_metrics_execution(struct api_metrics *m, const struct run_result *r, double seconds);
void api_metrics_add(struct api_metrics *m, uint64_t *counter);
/* The Prometheus text exposition format.  Owned by the caller. */
/* pool: the warm pool's health, or NULL when there is none. */
char *api_metrics_text(struct api_metrics *m, unsigned sessions, unsigned max_sessions,
		       unsigned busy, const struct session_pool_health *pool, size_t *ret_len);

/* ---- logging (server.c) ---- */

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

/* ---- connections (conns.c) ---- */

/* Every TCP connection from accept to close, with the deadline of the
 * request it is receiving.  A watchdog thread shuts down the socket of a
 * connection whose request (headers and body) has not arrived by its
 * deadline, whatever trickles in meanwhile; once a request is whole the
 * deadline is off until its answer is sent (an execution or a stream
 * may take as long as it takes). */
struct api_conn;
struct api_conns {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct api_conn *head;
	unsigned count;
	uint64_t timeout_ms; /* 0: no deadline */
	bool stop, started;
	pthread_t watchdog;
};

/* Start the watchdog.  0 or -errno. */
int api_conns_start(struct api_server *srv);
/* Stop it; every connection must be gone (after MHD_stop_daemon). */
void api_conns_stop(struct api_server *srv);
/* MHD_OPTION_NOTIFY_CONNECTION: cls is the server. */
void api_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe);
/* The connection's request is whole: no deadline until its answer is
 * sent.  false if the watchdog already cut the connection (then do not
 * start the work). */
bool api_conn_request_received(struct api_server *srv, struct MHD_Connection *conn);
/* A request line arrived (for the log: an idle keep-alive connection
 * cut at its deadline is not worth a warning). */
void api_conn_request_begun(struct api_server *srv, struct MHD_Connection *conn);
/* The answer was sent: the next request's deadline starts now. */
void api_conn_request_done(struct api_server *srv, struct MHD_Connection *conn);

/* ---- framing and proxies (framing.c) ---- */

/* Before any body is read: refuse (400, then close) what two parsers
 * could frame differently: two Content-Length or Transfer-Encoding
 * headers, both at once, a transfer coding other than "chunked", white
 * space or other non-token bytes in a header name (which is how
 * libmicrohttpd 0.9.75 keeps "Content-Length : 5" and an obs-folded
 * header).  0, or -EINVAL with e set. */
int api_check_framing(struct MHD_Connection *conn, struct api_error *e);
/* The first header that says a proxy forwarded the request (Forwarded,
 * X-Forwarded-*, X-Real-IP, ...), or NULL. */
const char *api_forwarded_header(struct MHD_Connection *conn);

/* ---- the server (server.c) ---- */

struct exec_job;
struct e2b_state;

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
	/* every execution in flight, to stop at shutdown */
	struct exec_job *jobs;
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

/* The body of a PUT .../files/{path} on its way into the workspace
 * (files.c): written to a temporary file beside the target as it
 * arrives, through libmicrohttpd's connection buffer, and renamed into
 * place when it is complete; never held whole in memory.  Zeroed:
 * nothing begun. */
struct api_upload {
	bool begun;	/* the first chunk came */
	int err;	/* the first error (-errno), answered at the end */
	struct engine_upload u; /* once begun, when u.fd >= 0 */
};

/* A request as the handlers see it. */
struct api_call {
	struct api_server *srv;
	struct MHD_Connection *conn;
	const char *method;
	struct api_route route;
	const char *body; /* NUL-terminated; body_len without the NUL */
	size_t body_len;
	bool wants_ndjson;
	struct api_upload upload; /* files routes: the body, not in body */
	bool close; /* answer with "Connection: close" */
	/* the E2B door (e2b.c): its request state, and the shape of its
	 * errors and NDJSON events */
	struct e2b_call *e2b;
	enum { API_STYLE_V1, API_STYLE_E2B, API_STYLE_CONNECT } style;
	/* who: the policy's client the key (or the server's token, or
	 * loopback) maps to; never NULL in a handler */
	struct engine_client *client;
	char request_id[AUDIT_ID_LEN + 1];
	char approval_id[AUDIT_ID_LEN + 1]; /* the approval this call used, if any */
};

/* Responses; each returns what the access handler returns. */
enum MHD_Result api_respond_json(struct api_call *c, unsigned status, json_t *body /* stolen */);
enum MHD_Result api_respond_error(struct api_call *c, const struct api_error *e);
enum MHD_Result api_respond_errorf(struct api_call *c, int http, const char *code,
				   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void api_response_headers(struct MHD_Response *r, const char *type);

/* ---- handlers (handlers.c, exec.c, files.c, web.c) ---- */

enum MHD_Result api_handle_healthz(struct api_call *c);
enum MHD_Result api_handle_metrics(struct api_call *c);
enum MHD_Result api_handle_execute(struct api_call *c);
enum MHD_Result api_handle_sessions_list(struct api_call *c);
enum MHD_Result api_handle_session_create(struct api_call *c);
enum MHD_Result api_handle_session_get(struct api_call *c);
enum MHD_Result api_handle_session_delete(struct api_call *c);
enum MHD_Result api_handle_session_execute(struct api_call *c);
enum MHD_Result api_handle_session_interrupt(struct api_call *c);
enum MHD_Result api_handle_session_restart(struct api_call *c);
enum MHD_Result api_handle_session_fork(struct api_call *c);
enum MHD_Result api_handle_files(struct api_call *c);
enum MHD_Result api_handle_asset(struct api_call *c);
/* POST and DELETE /mcp (mcp_http.c): MCP over Streamable HTTP */
#define API_MCP_BODY_MAX (16u << 20) /* as MCP_MESSAGE_MAX */
struct api_mcp;
enum MHD_Result api_handle_mcp(struct api_call *c);
/* Shutdown: stop the MCP call in progress (its run or cell is killed). */
void api_mcp_stop(struct api_server *srv);
/* Close every MCP connection and session.  Accepts NULL. */
void api_mcp_free(struct api_mcp *m);
/* POST /v1/agent (agent.c) */
enum MHD_Result api_handle_agent(struct api_call *c);
enum MHD_Result api_handle_approvals_list(struct api_call *c);
enum MHD_Result api_handle_approval_get(struct api_call *c);
enum MHD_Result api_handle_approval_decide(struct api_call *c);
/* GET /v1/tools, POST /v1/tools/{name} (tools.c): engine/tool.h's tools */
enum MHD_Result api_handle_tools_list(struct api_call *c);
enum MHD_Result api_handle_tool_call(struct api_call *c);
/* A project session's changes (changes.c): GET .../changes, POST
 * .../changes/apply (the policy's action "apply"), .../changes/discard */
enum MHD_Result api_handle_changes(struct api_call *c);
enum MHD_Result api_handle_changes_apply(struct api_call *c);
enum MHD_Result api_handle_changes_discard(struct api_call *c);

/* A chunk of a files route's body (files.c): a PUT's is written to the
 * workspace, any other's dropped.  An error is kept for the answer
 * (api_handle_files) and the rest of the body is read and dropped. */
void api_upload_data(struct api_call *c, const char *data, size_t len);
/* The request is over, answered or not (the client went away): a
 * temporary file not renamed into place is removed. */
void api_upload_release(struct api_call *c);

/* Under e->lock: e's workspace (engine/files.h) now; 0, -ESRCH (the
 * session was deleted) or -ENOENT (no workspace yet). */
int api_ws_of(struct engine_session *e, struct engine_ws *w);
/* A workspace operation's error in /v1's shape (or, e2b, envd's
 * status): the engine's one table (engine_files_error). */
enum MHD_Result api_files_error(struct api_call *c, int err, const char *what, const char *path,
				bool e2b);
/* Answer with the regular file fd (taken) as application/octet-stream. */
enum MHD_Result api_send_file(struct api_call *c, int fd, const struct stat *st);
/* The upload in c->upload (for c->route.path) into place in e's
 * workspace, as a PUT does.  0 or -errno (-E2BIG, -ESTALE, ...). */
int api_upload_finish(struct api_call *c, struct engine_session *e, bool *ret_replaced);

/* Look up the route's session (a new reference) or respond 404. */
struct engine_session *api_call_session(struct api_call *c, enum MHD_Result *ret);

/* Run code (exec.c): in the entry's session, or one-shot when entry is
 * NULL; answers with the result object or an NDJSON stream. */
enum MHD_Result api_exec(struct api_call *c, struct engine_session *entry, struct api_request *req);
/* Stop every execution in flight (shutdown). */
void api_exec_stop_all(struct api_server *srv);

/* The policy and the audit log (policy.c).  The checks answer a
 * rejection themselves (*ret) and return -EPERM. */
void api_audit(struct api_call *c, struct engine_audit_record *r);
enum MHD_Result api_reject(struct api_call *c, const struct engine_verdict *v,
			   struct engine_audit_record *rec);
/* The answer to a rejection recorded already (the engine's pipeline). */
enum MHD_Result api_refuse(struct api_call *c, const struct engine_verdict *v);
/* engine_caller.approve for the API: the X-Approval-Id header's approval,
 * or the call held until a person decides (E2B's calls wait; /v1's with
 * "Prefer: respond-async" do not).  cls: the api_call. */
int api_approve(void *cls, enum engine_action a, struct engine_verdict *v,
		char ret_id[AUDIT_ID_LEN + 1], const char **ret_state);
/* The engine's caller for this call: its client, door, audit log,
 * request id and approval. */
void api_caller(struct api_call *c, struct engine_caller *cl);
/* The answer to a lifecycle call that failed (engine/sessions.h): a
 * rejection, a held call (202), or err's status and message. */
enum MHD_Result api_session_refused(struct api_call *c, struct engine_caller *cl, int r,
				    const struct engine_session_error *err);
int api_check_exec(struct api_call *c, struct engine_session *entry, struct api_request *req,
		   struct engine_verdict *v, enum MHD_Result *ret);
/* The audit record of a session made (id NULL when it failed). */
void api_audit_session_create(struct api_call *c, const char *id, const struct session_opts *so,
			      const char *status, uint64_t t0);
int api_check_session(struct api_call *c, struct session_opts *so, const struct api_request *req,
		      struct engine_verdict *v, enum MHD_Result *ret);
int api_check_file(struct api_call *c, struct engine_session *e, enum engine_action a,
		   uint64_t bytes, enum MHD_Result *ret);
/* engine_tool_request.approve for the API: the X-Approval-Id header's
 * approval, or the call held until a person decides.  cls: the api_call. */
struct engine_tool;
int api_tool_approve(void *cls, const struct engine_tool *t, json_t *args,
		     struct engine_verdict *v, char ret_id[17], const char **ret_state);
/* The same, its record's arguments naming a destination too (a move). */
int api_check_file_to(struct api_call *c, struct engine_session *e, enum engine_action a,
		      uint64_t bytes, const char *to, enum MHD_Result *ret);
/* A command (E2B's process Start): bash code in e's sandbox, with the
 * client's execution slot (engine_release() it when the command ends)
 * and rate; its record comes at its end (api_audit_command). */
int api_check_command(struct api_call *c, struct engine_session *e, const char *cmd, size_t len,
		      double timeout_s, struct engine_verdict *v, enum MHD_Result *ret);
void api_audit_command(struct api_server *srv, struct engine_client *client, const char *request_id,
		       const char *approval_id, struct engine_session *e, const char *cmd, size_t len,
		       const struct run_result *res, uint64_t t0, const char *status);
void api_audit_exec(struct api_server *srv, struct engine_client *client, const char *request_id,
		    const char *approval_id, struct engine_session *entry, const struct api_request *req,
		    const struct run_result *res, uint64_t t0);

/* The reaper (handlers.c). */
void *api_reaper_main(void *arg);

/* Load libmicrohttpd (mhd.c), once, before any MHD call.  0, or -errno
 * and a message in *ret_error (free()). */
int api_mhd_load(char **ret_error);

#endif
