/* mcp: the MCP door (Model Context Protocol over JSON-RPC 2.0).
 *
 * The core takes one message and gives back one reply, whatever carries
 * them: `codecell mcp` reads lines on stdin (src/cli/mcp.c), and the
 * Streamable HTTP route of `codecell serve` can hand it a POST body and
 * send back what it returns.
 *
 * Two objects: a server (the tools and the sessions they made, shared)
 * and a connection (one client's lifecycle: the protocol version it
 * negotiated with `initialize`, or none for the stateless 2026-07-28
 * revision, whose requests carry their version in params._meta).
 *
 * Threads: calls into one server may run at once, each on a connection
 * (each tools/call has its own state: mcp/internal.h, struct mcp_tools),
 * and so may calls on one connection once its `initialize` is answered
 * (the Streamable HTTP route serves one Mcp-Session-Id's POSTs side by
 * side); `initialize` itself comes alone, before any other.
 * The core never prints and never exits; messages for the operator go
 * through the log callback of its config. */
#ifndef CODECELL_MCP_MCP_H
#define CODECELL_MCP_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/limits.h"
#include "engine/engine.h" /* the result, session and sandbox types */
#include "util/json.h"

/* Named limits on what a client may send. */
#define MCP_MESSAGE_MAX (16u << 20) /* one JSON-RPC message (a stdio line) */
/* how util/json.h reads a message: a batch is an array, a string may hold
 * NUL (write_file's text); whoever peeks at one reads it the same way */
#define MCP_JSON_FLAGS (JSON_BODY_ANY_VALUE | JSON_BODY_ALLOW_NUL)
#define MCP_BATCH_MAX 256			   /* messages in one batch (2025-03-26) */
#define MCP_REPLY_MAX (96u << 20)		   /* one reply; over it, a tool error */
#define MCP_FILE_MAX (16u << 20)		   /* read_file / write_file contents */
#define MCP_LIST_MAX 10000			   /* entries of one list_files */
#define MCP_TIMEOUT_MAX_S ENGINE_TIMEOUT_CEILING_S /* run_code's timeout: the limits table's */
#define MCP_DEFAULT_MAX_SESSIONS 16
#define MCP_MAX_SESSIONS_MAX 1024
#define MCP_ID_LEN 16 /* hex characters of a session id */

struct engine_policies;
struct engine_sessions;

struct mcp_config {
	struct sandbox_limits limits; /* timeout_s: the default per run_code */
	uint64_t output_limit;	      /* bytes kept per stream per execution */
	enum sandbox_net net;
	bool strict;
	const char *const *env; /* extra KEY=VALUE for every program, or NULL */
	unsigned max_sessions;
	double idle_timeout_s; /* a session unused this long is closed; 0: never */
	unsigned pool_size;    /* warm Python kernels; 0: none */
	const char *preload;   /* what the pool and new Python sessions import */
	/* Readable: stop the running execution now (a pipe carrying struct
	 * signalfd_siginfo records, SIGTERM); -1 for none. */
	int stop_fd;
	const char *server_version; /* serverInfo.version */
	/* Messages for the operator ("warning", "..."), with log_cls; NULL:
	 * none. */
	void (*log)(void *cls, const char *level, const char *msg);
	void *log_cls;
	/* The engine's policy check for every call (NULL: none) and the
	 * audit log (NULL: off); borrowed.  limits_asked: bits of enum
	 * engine_limit_id the operator's flags set (held to the policy's
	 * ceilings like a call's own); net_asked: --net was given. */
	struct engine_client *client;
	struct engine_audit *audit;
	unsigned limits_asked;
	bool net_asked;
	/* The policy file (named databases, hosts) for the tools besides
	 * code (engine/tool.h) that client's policy enables; NULL: none.
	 * stop_flag: raised (read atomically) to give up such a call. */
	const struct engine_policies *policies;
	const int *stop_flag;
	/* The server's session table (borrowed; NULL: a table of the core's
	 * own, of max_sessions).  In the server's, the sessions this core
	 * makes count against the server's --max-sessions and show in its
	 * listings and metrics, and the server's reaper ends them; the core
	 * sees and uses only those its client made through MCP. */
	struct engine_sessions *sessions;
};

struct mcp_server;
struct mcp_conn;

/* Make a server.  Sandboxes start lazily: the warm pool (if any) warms
 * in the background, sessions start when a tool asks for one.  0, or
 * -errno with a message in *ret_error (free()). */
int mcp_server_new(const struct mcp_config *cfg, struct mcp_server **ret, char **ret_error);
/* Close every session and the pool: no process or cgroup is left.
 * Accepts NULL. */
void mcp_server_free(struct mcp_server *srv);
/* Sessions open now. */
unsigned mcp_server_sessions(const struct mcp_server *srv);

/* One client.  NULL on ENOMEM. */
struct mcp_conn *mcp_conn_new(struct mcp_server *srv);
void mcp_conn_free(struct mcp_conn *c);

/* Handle one message: msg[0..len) is a JSON-RPC request, notification,
 * response or (when the negotiated version allows) batch.  Returns the
 * reply, a JSON text without a newline (free()), with its length in
 * *ret_len; or NULL when none is due (notifications, responses, a batch
 * of notifications).  Never fails for bad input: that gets a JSON-RPC
 * error reply.  NULL with errno ENOMEM when memory ran out. */
char *mcp_conn_handle(struct mcp_conn *c, const char *msg, size_t len, size_t *ret_len);

/* A protocol version this server speaks ("2025-06-18", "2026-07-28"):
 * what the Streamable HTTP transport checks MCP-Protocol-Version with. */
bool mcp_version_known(const char *name);

/* The reply to a message that could not be read at all (over
 * MCP_MESSAGE_MAX, say): a parse error with id null saying why.
 * Heap string (free()), or NULL on ENOMEM. */
char *mcp_parse_error_reply(const char *why, size_t *ret_len);

/* MCP over Streamable HTTP (streamable.c): POST and DELETE /mcp of `codecell
 * serve`, a door that registers with the transport (http/door.h). */
struct http_door;
extern const struct http_door mcp_http_door;

#endif
