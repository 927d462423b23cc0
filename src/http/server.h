/* http/server.h: the HTTP/JSON server behind `codecell serve` (docs/API.md).
 *
 * libmicrohttpd with a thread per connection: a request that runs code
 * blocks only its own connection.  Sessions live in the process; each has
 * a mutex held around every session_*() call (sessions are not
 * thread-safe), and interrupts reach a running execution through its
 * stop fd, never by touching the session from another thread.
 *
 * The server never exits the process and never prints except through the
 * log callback in its config (the CLI tier decides). */
#ifndef CODECELL_HTTP_SERVER_H
#define CODECELL_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define API_DEFAULT_PORT 8080
#define API_DEFAULT_MAX_SESSIONS 64
#define API_MAX_SESSIONS_MAX 4096
#define API_MAX_CONNECTIONS 512 /* default global cap (--max-connections) */
#define API_MAX_CONNECTIONS_MAX 16384
#define API_MAX_CLIENT_CONNECTIONS 128 /* default per client address */
#define API_REQUEST_TIMEOUT_S 60.0     /* default: a whole request arrives within */
#define API_REQUEST_TIMEOUT_MAX_S 3600.0
#define API_IDLE_CONNECTION_TIMEOUT_S 300 /* no traffic at all (libmicrohttpd's) */
#define API_TOKEN_MIN 16		  /* bytes of a bearer token */
#define API_TOKEN_MAX 4096

/* Where to listen: parsed from "ADDR:PORT", "[V6]:PORT", "HOST:PORT"
 * (localhost only: no name lookups) or "PORT". */
struct api_listen {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	bool loopback; /* 127.0.0.0/8 or ::1 */
};

/* Pure.  0, or -EINVAL with a message in err (size n). */
int api_listen_parse(const char *s, struct api_listen *ret, char *err, size_t n);

struct api_config {
	struct api_listen listen;
	const char *token; /* NULL: no auth (loopback only); borrowed */
	size_t token_len;
	unsigned max_sessions;
	/* Calls one client may have held for approval at once (0: the
	 * engine's default, APPROVAL_PER_CLIENT_DEFAULT). */
	unsigned max_pending_approvals;
	unsigned pool_size;  /* 0: no warm pool */
	const char *preload; /* default preload of Python sessions, or NULL */
	/* Connections at once (0: API_MAX_CONNECTIONS); at start it must fit
	 * the fds (api_fd_budget) or the server refuses to start. */
	unsigned max_connections;
	/* Connections at once from one client address (0: no limit). */
	unsigned max_client_connections;
	/* Seconds a client has to send a whole request, headers and body,
	 * counted from the connection's start or the end of its previous
	 * request; activity does not extend it (0: no deadline). */
	double request_timeout_s;
	/* POST /v1/agent's model endpoint (borrowed); the route answers 404
	 * agent_not_configured unless base URL and model are both set. */
	const char *agent_base_url, *agent_api_key, *agent_model;
	/* The policy file's policies and clients (each with its API key), and
	 * the audit log: borrowed, outlive the server.  policies NULL: the
	 * built-in default; audit NULL: no audit log. */
	struct engine_policies *policies;
	struct engine_audit *audit;
	/* The doors served (http/door.h), NULL-terminated, in the order
	 * they may claim a request before the route table (borrowed; at
	 * most HTTP_DOORS_MAX). */
	const struct http_door *const *doors;
	/* Where the server's own messages go ("warning: ..."); NULL: none. */
	void (*log)(const char *level, const char *msg);
};

struct api_server;
struct http_door;
#define HTTP_DOORS_MAX 8

/* The fds a server of this config needs at most (RLIMIT_NOFILE): a margin
 * for the process, API_SESSION_FDS per session and per pooled kernel (a
 * session holds 12 to 14), API_CONNECTION_FDS per connection (its socket,
 * and a one-shot run's or an upload's fds while it runs).  connections:
 * the connection limit to count with.  Pure arithmetic. */
#define API_BASE_FDS 64
#define API_SESSION_FDS 16
#define API_CONNECTION_FDS 24
#define API_CONNECTIONS_MIN 32 /* below this the server refuses to start */
uint64_t api_fd_budget(const struct api_config *c, unsigned connections);

/* Start listening and serving.  0, or -errno with a message in *ret_error
 * (free()).  Refuses (-EPERM) to listen beyond loopback without a token,
 * (-EADDRINUSE) an address another socket listens on, (-EMFILE) a config
 * the RLIMIT_NOFILE cannot carry (api_fd_budget). */
int api_server_new(const struct api_config *c, struct api_server **ret, char **ret_error);
/* The port actually bound (when 0 was asked for). */
unsigned api_server_port(const struct api_server *srv);
/* Stop accepting, stop every execution, free every session (no process,
 * mount or cgroup left), free the server.  Accepts NULL. */
void api_server_free(struct api_server *srv);

#endif
