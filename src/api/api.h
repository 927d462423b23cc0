/* api: the HTTP/JSON server behind `codecell serve` (docs/API.md).
 *
 * libmicrohttpd with a thread per connection: a request that runs code
 * blocks only its own connection.  Sessions live in the process; each has
 * a mutex held around every session_*() call (sessions are not
 * thread-safe), and interrupts reach a running execution through its
 * stop fd, never by touching the session from another thread.
 *
 * The server never exits the process and never prints except through the
 * log callback in its config (the CLI tier decides). */
#ifndef CODECELL_API_API_H
#define CODECELL_API_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define API_DEFAULT_PORT 8080
#define API_DEFAULT_MAX_SESSIONS 64
#define API_MAX_SESSIONS_MAX 4096
#define API_MAX_CONNECTIONS 512
#define API_TOKEN_MIN 16 /* bytes of a bearer token */
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
	unsigned pool_size; /* 0: no warm pool */
	const char *preload; /* default preload of Python sessions, or NULL */
	/* Where the server's own messages go ("warning: ..."); NULL: none. */
	void (*log)(const char *level, const char *msg);
};

struct api_server;

/* Start listening and serving.  0, or -errno with a message in *ret_error
 * (free()).  Refuses (-EPERM) to listen beyond loopback without a token. */
int api_server_new(const struct api_config *c, struct api_server **ret, char **ret_error);
/* The port actually bound (when 0 was asked for). */
unsigned api_server_port(const struct api_server *srv);
/* Stop accepting, stop every execution, free every session (no process,
 * mount or cgroup left), free the server.  Accepts NULL. */
void api_server_free(struct api_server *srv);

#endif
