/* The HTTP side: libmicrohttpd, one thread per connection; request
 * bodies, checks that come before any handler (auth, origin, size), the
 * route table, responses, start and shutdown. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "http/conns.h"
#include "http/exec.h"
#include "http/upload.h"
#include "http/framing.h"
#include "http/http.h"
#include "http/metrics.h"
#include "http/internal.h"
#include "http/log.h"
#include "http/mhd.h"
#include "http/reaper.h"
#include "http/status.h"
#include "http/text.h"
#include "engine/sessions.h"
#include "engine/approval.h"
#include "engine/tool.h"
#include "engine/setup.h"
#include "util/buf.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/utf8.h"
#include "util/sha256.h"
#include "util/banned.h"

#define SERVER_DRAIN_S 5    /* at shutdown, for answers to go out */
#define ACCEPT_PAUSE_MS 100 /* accept() out of fds: see mhd_log */

/* ---- listening address ---- */

static int parse_port(const char *s, uint16_t *ret)
{
	uint64_t v;

	if (parse_u64(s, &v) < 0 || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

int api_listen_parse(const char *s, struct api_listen *ret, char *err, size_t n)
{
	char host[256];
	const char *colon, *port_s;
	uint16_t port;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ret->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ret->addr;

	memset(ret, 0, sizeof(*ret));
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = '\0';
		port_s = end + 2;
	} else if ((colon = strrchr(s, ':'))) {
		if ((size_t)(colon - s) >= sizeof(host) || strchr(s, ':') != colon)
			goto bad;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
		port_s = colon + 1;
	} else {
		snprintf(host, sizeof(host), "127.0.0.1");
		port_s = s;
	}
	if (parse_port(port_s, &port) < 0) {
		snprintf(err, n, "--listen '%s': the port must be a number from 0 to 65535", s);
		return -EINVAL;
	}
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		ret->addr_len = sizeof(*v4);
		ret->loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		ret->addr_len = sizeof(*v6);
		ret->loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
		return 0;
	}
bad:
	snprintf(
		err, n,
		"--listen '%s': expected ADDR:PORT, [IPV6]:PORT, localhost:PORT or PORT (an address, not a host name)",
		s);
	return -EINVAL;
}

/* ---- the route table: the transport's routes and the doors' ---- */

static unsigned method_bit(const char *m)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = { { "GET", HTTP_GET },
		      { "POST", HTTP_POST },
		      { "PUT", HTTP_PUT },
		      { "DELETE", HTTP_DELETE },
		      { "HEAD", HTTP_HEAD } };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(m, names[i].name))
			return names[i].bit;
	return 0;
}

/* ---- one request ---- */

struct request_ctx {
	struct api_call call;
	struct api_error err;
	bool failed;		      /* err is the answer */
	int entry;		      /* index in srv->table */
	const struct http_door *door; /* whose route it is; NULL: the transport's */
	struct buf body;
	size_t body_max;
	size_t uri_len; /* strlen of the target before the query was split off */
	bool started;	/* start_request ran */
	bool now;	/* answer at once and close (refuse_now) */
};

/* ":PORT" with 1 to 5 digits, or nothing. */
static bool port_suffix(const char *s)
{
	size_t n;

	if (*s == '\0')
		return true;
	n = strspn(s + 1, "0123456789");
	return s[0] == ':' && n >= 1 && n <= 5 && s[1 + n] == '\0';
}

/* A Host a browser sends only for a page of this loopback server:
 * 127.0.0.1, localhost, [::1], or the address listened on (such as
 * 127.0.0.2), each with an optional port.  Nothing may follow the port:
 * "127.0.0.1:1@evil.com" is not loopback. */
static bool host_is_loopback(const struct api_server *srv, const char *host)
{
	static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		size_t l = strlen(names[i]);

		if (!strncasecmp(host, names[i], l) && port_suffix(host + l))
			return true;
	}
	if (srv->listen_host[0]) {
		size_t l = strlen(srv->listen_host);

		if (!strncasecmp(host, srv->listen_host, l) && port_suffix(host + l))
			return true;
	}
	return false;
}

/* Before any handler: the token; the browser's Origin (a web page on
 * another site must not drive the API: CSRF); without a token, the Host
 * header (DNS rebinding: a name of the attacker's that resolves to
 * 127.0.0.1); a JSON content type for JSON bodies. */
/* With a policy file that names clients, a request must carry one of
 * their keys (or the --token-file token, the default policy's); the key
 * says which client it is. */
static int client_of(struct api_server *srv, const char *auth, struct engine_client **ret,
		     struct api_error *e)
{
	struct engine_client *c;

	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
		return api_error_set(e, 401, "unauthorized",
				     "this server needs a key: send 'Authorization: Bearer KEY'");
	c = engine_policies_client(srv->policies, auth + 7, strlen(auth + 7));
	if (!c && srv->token &&
	    secret_equal(auth + 7, strlen(auth + 7), srv->token, srv->cfg.token_len))
		c = &srv->policies->clients[0];
	if (!c)
		return api_error_set(e, 401, "unauthorized",
				     "the key is not one of this server's clients");
	*ret = c;
	return 0;
}

static int admit(struct api_server *srv, struct MHD_Connection *conn, int entry,
		 struct engine_client **ret_client, struct api_error *e)
{
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
	const char *fwd;

	const struct http_route *rt = srv->table[entry].r;
	const struct http_door *door = srv->table[entry].door;

	*ret_client = &srv->policies->clients[0];
	if (rt->public)
		return 0;
	if (door && door->auth && (srv->token || engine_policies_has_clients(srv->policies))) {
		/* a door with keys of its own (E2B's SDK sends X-API-Key) */
		if (door->auth(srv, conn, ret_client, e) < 0)
			return -EINVAL;
	} else if (engine_policies_has_clients(srv->policies)) {
		if (client_of(srv, auth, ret_client, e) < 0)
			return -EINVAL;
	} else if (srv->token) {
		if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
			return api_error_set(
				e, 401, "unauthorized",
				"this server needs a token: send 'Authorization: Bearer TOKEN'");
		if (!secret_equal(auth + 7, strlen(auth + 7), srv->token, srv->cfg.token_len))
			return api_error_set(e, 401, "unauthorized", "the bearer token is wrong");
	} else if (!host || !host_is_loopback(srv, host)) {
		return api_error_set(
			e, 403, "forbidden_host",
			"without a token only loopback host names are served (Host: 127.0.0.1:PORT or localhost:PORT)");
	} else if ((fwd = api_forwarded_header(conn))) {
		/* a proxy in front may have rewritten Host: the loopback
		 * check proves nothing about who sent this */
		return api_error_set(
			e, 403, "forwarded_without_token",
			"this request came through a proxy ('%.64s'), and this server has no token: start it with --token-file FILE and have clients send 'Authorization: Bearer TOKEN'",
			fwd);
	}
	if (origin) {
		char want[300];

		/* without Host there is nothing the page's origin could match */
		snprintf(want, sizeof(want), "http://%s", host ? host : "");
		if (!host || strcmp(origin, want) != 0)
			return api_error_set(
				e, 403, "forbidden_origin",
				"requests from web pages of other origins are refused (Origin: %.100s)",
				origin);
	}
	if (!rt->any_type && rt->body_max && type && strncasecmp(type, "application/json", 16) != 0)
		return api_error_set(e, 415, "unsupported_media_type",
				     "send the body as 'Content-Type: application/json'");
	return 0;
}

/* The route of url: the transport's own, or a door's (x->door). */
static int route(struct api_server *srv, struct request_ctx *x, const char *url)
{
	size_t which = 0;

	if (http_route_resolve(url, srv->resolver, srv->n_resolvers, &x->call.route, &which,
			       &x->err) < 0)
		return -EINVAL;
	x->door = srv->resolver_door[which];
	return 0;
}

/* Find the table entry for door's route and the method; 404/405
 * otherwise. */
static int find_entry(const struct api_server *srv, const struct http_door *door,
		      const struct api_route *rt, const char *method, struct api_error *e)
{
	unsigned m = method_bit(method);
	bool route_known = false;

	for (size_t i = 0; i < srv->n_table; i++) {
		if (srv->table[i].door != door || srv->table[i].r->route != rt->id)
			continue;
		route_known = true;
		if (srv->table[i].r->method & m)
			return (int)i;
	}
	if (!route_known)
		return api_error_set(e, 404, "not_found", "no such route (see docs/API.md)");
	return api_error_set(e, 405, "method_not_allowed", "%s is not allowed here", method);
}

/* Seen by the URI log callback before libmicrohttpd splits the query
 * off: the request's context is born there. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct request_ctx *x = calloc(1, sizeof(*x));

	api_conn_request_begun(cls, conn);
	if (x)
		x->uri_len = uri ? strlen(uri) : 0;
	return x;
}

/* A NUL byte in the request line cut the path short, and the router saw
 * "/v1/sessions" for "/v1/sessions\0/../x".  libmicrohttpd 0.9.75 puts the
 * version right after the target in the line it parsed in place: a target
 * whose length (seen by on_uri, before the query was split off) does not
 * reach the version had a NUL in it. */
static bool nul_in_target(const struct request_ctx *x, const char *url, const char *version)
{
	if (!url || !version || !*version)
		return false;
	return version != url + x->uri_len + 1;
}

/* Refusals that must not wait for the body, and close the connection:
 * the framing is in doubt, so whatever follows cannot be trusted to be a
 * body or a next request. */
static int refuse_now(struct request_ctx *x, struct MHD_Connection *conn, const char *url,
		      const char *version)
{
	if (nul_in_target(x, url, version))
		return api_error_set(
			&x->err, 400, "bad_url",
			"a NUL byte in the request line: send the path percent-encoded");
	return api_check_framing(conn, &x->err);
}

static void start_request(struct api_server *srv, struct request_ctx *x,
			  struct MHD_Connection *conn, const char *url, const char *method,
			  const char *version)
{
	const struct http_route *rt;
	bool claimed = false;
	const char *len_s;
	uint64_t len;

	pthread_mutex_lock(&srv->lock);
	srv->in_flight++;
	pthread_mutex_unlock(&srv->lock);
	x->started = true;
	x->call.srv = srv;
	x->call.conn = conn;
	x->call.method = method;
	x->call.client = &srv->policies->clients[0];
	engine_audit_id(x->call.request_id);
	x->entry = -1;
	if (refuse_now(x, conn, url, version) < 0) {
		x->failed = x->now = true;
		x->call.close = true;
		return;
	}
	/* a door that routes by itself, first */
	for (size_t i = 0; i < srv->n_doors && !claimed; i++) {
		const struct http_door *d = srv->door[i];

		if (!d->claims || !d->claims(conn, url))
			continue;
		claimed = true;
		x->door = d;
		if (d->start(&x->call, url, &x->err) < 0) {
			x->failed = true;
			return;
		}
	}
	if ((!claimed && route(srv, x, url) < 0) ||
	    (x->entry = find_entry(srv, x->door, &x->call.route, method, &x->err)) < 0 ||
	    admit(srv, conn, x->entry, &x->call.client, &x->err) < 0) {
		x->failed = true;
		return;
	}
	rt = srv->table[x->entry].r;
	x->body_max = rt->body_max_of ? rt->body_max_of(&x->call) : rt->body_max;
	buf_init(&x->body, x->body_max);
	len_s = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
	if (len_s && parse_u64(len_s, &len) == 0 && len > x->body_max) {
		x->failed = true;
		if (x->body_max == 0)
			api_error_set(&x->err, 400, "unexpected_body", "%s %s takes no body",
				      method, url);
		else
			api_error_set(&x->err, 413, "body_too_large",
				      "the body is %llu bytes: the limit here is %zu",
				      (unsigned long long)len, x->body_max);
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct api_server *srv = cls;
	struct request_ctx *x = *con_cls;
	const char *accept;

	if (!x)
		return MHD_NO; /* on_uri found no memory */
	if (!x->started) {
		start_request(srv, x, conn, url, method, version);
		if (x->now)
			return api_respond_error(&x->call, &x->err);
		return MHD_YES;
	}
	if (*upload_size) {
		const struct http_route *rt = x->failed ? NULL : srv->table[x->entry].r;

		/* a file goes to the workspace as it arrives (upload.c) */
		if (rt && rt->data && rt->data(&x->call, upload, *upload_size))
			;
		/* past the cap: keep reading (and dropping) to answer 413
		 * with the connection in a known state */
		else if (!x->failed && buf_append(&x->body, upload, *upload_size) < 0) {
			x->failed = true;
			if (x->body_max == 0)
				api_error_set(&x->err, 400, "unexpected_body",
					      "%s %s takes no body", method, url);
			else
				api_error_set(&x->err, 413, "body_too_large",
					      "the body is over the limit of %zu bytes here",
					      x->body_max);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	/* the request is whole: from here on it may take as long as it
	 * takes, unless the watchdog cut it a moment ago */
	if (!api_conn_request_received(srv, conn))
		return MHD_NO;
	if (x->failed)
		return api_respond_error(&x->call, &x->err);
	if (__atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE))
		return api_respond_errorf(&x->call, 503, "shutting_down",
					  "the server is shutting down");
	x->call.body = buf_str(&x->body);
	x->call.body_len = x->body.len;
	accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
	x->call.wants_ndjson = accept && strstr(accept, "application/x-ndjson");
	return srv->table[x->entry].r->fn(&x->call);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct api_server *srv = cls;
	struct request_ctx *x = *con_cls;
	bool started;

	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		api_conn_request_done(srv, conn);
	if (!x)
		return;
	api_upload_release(&x->call);
	/* c->door_call is the state of the door that took the request */
	if (x->door && x->door->release)
		x->door->release(&x->call);
	started = x->started;
	buf_release(&x->body);
	free(x);
	*con_cls = NULL;
	if (!started)
		return;
	pthread_mutex_lock(&srv->lock);
	/* only shutdown waits for this (wait_in_flight); the reaper waits
	 * on the same condition and must not be woken by every request */
	if (--srv->in_flight == 0 && __atomic_load_n(&srv->stopping, __ATOMIC_SEQ_CST))
		pthread_cond_broadcast(&srv->wake);
	pthread_mutex_unlock(&srv->lock);
}

/* The path reaches the router undecoded: route.c decodes and checks it
 * once, and can refuse %00 (the default unescaper would cut the path
 * short at the NUL). */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls, (void)c;
	return strlen(s);
}

/* libmicrohttpd's messages, rate-limited like ours.  When accept() finds
 * no fd and no connection is open, 0.9.75 retries at once, for ever,
 * logging each time ("Hit process or system resource limit at FIRST
 * connection", daemon.c): 9.8 GB of stderr in one run.  This callback
 * runs on the listening thread, so a pause here paces that loop. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct api_server *srv = cls;
	char msg[512];
	size_t n;

	if (strstr(fmt, "resource limit")) {
		static const char out_of_fds[] =
			"out of file descriptors: new connections wait until some close (raise ulimit -n, or lower --max-sessions or --max-connections)";
		struct timespec pause = { 0, ACCEPT_PAUSE_MS * 1000000L };

		nanosleep(&pause, NULL);
		api_log_limited(srv, "warning", out_of_fds, out_of_fds);
		return;
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	api_log_limited(srv, "warning", fmt, msg);
}

/* ---- start and stop ---- */

static int start_pool(struct api_server *srv)
{
	struct session_opts so;
	char *msg = NULL;
	int r;

	if (!srv->cfg.pool_size)
		return 0;
	engine_session_opts_init(&so);
	so.preload = srv->preload;
	r = engine_pool_new(&so, srv->cfg.pool_size, &srv->pool, &msg);
	if (r < 0) {
		api_log(srv, "warning", "--pool %u: no warm pool (%s); sessions start cold",
			srv->cfg.pool_size, msg ? msg : strerror(-r));
		srv->pool = NULL;
	}
	free(msg);
	return 0;
}

uint64_t api_fd_budget(const struct api_config *c, unsigned connections)
{
	uint64_t kernels = (uint64_t)c->max_sessions + c->pool_size + (c->pool_size ? 1 : 0);

	return API_BASE_FDS + kernels * API_SESSION_FDS +
	       (uint64_t)connections * API_CONNECTION_FDS;
}

/* The connection limit, and whether the fds carry it with every session
 * open: sessions that took the fds once left accept() failing in a loop
 * (and creation failed at about 83 sessions with 1,024 fds).  Without
 * --max-connections, as many as fit up to API_MAX_CONNECTIONS. */
static int fit_fds(struct api_server *srv, char **ret_error)
{
	struct api_config *c = &srv->cfg;
	struct rlimit rl;
	uint64_t base = api_fd_budget(c, 0), fit;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY) {
		if (!c->max_connections)
			c->max_connections = API_MAX_CONNECTIONS;
		return 0;
	}
	if (!c->max_connections) {
		fit = rl.rlim_cur > base ? (rl.rlim_cur - base) / API_CONNECTION_FDS : 0;
		c->max_connections = fit > API_MAX_CONNECTIONS	 ? API_MAX_CONNECTIONS
				     : fit < API_CONNECTIONS_MIN ? API_CONNECTIONS_MIN
								 : (unsigned)fit;
	}
	if (api_fd_budget(c, c->max_connections) <= rl.rlim_cur)
		return 0;
	if (asprintf(
		    ret_error,
		    "not enough file descriptors: %u sessions and %u pooled kernels (%u fds each) and %u connections (%u each) need up to %llu fds with the margin of %u, and RLIMIT_NOFILE is %llu: lower --max-sessions or --max-connections, or raise the limit (ulimit -n)",
		    c->max_sessions, c->pool_size ? c->pool_size + 1 : 0, API_SESSION_FDS,
		    c->max_connections, API_CONNECTION_FDS,
		    (unsigned long long)api_fd_budget(c, c->max_connections), API_BASE_FDS,
		    (unsigned long long)rl.rlim_cur) < 0)
		*ret_error = NULL;
	return -EMFILE;
}

/* The listening socket is ours, not libmicrohttpd's: it set SO_REUSEPORT
 * (MHD_OPTION_LISTENING_ADDRESS_REUSE), so a second server on the same
 * port started too and the kernel split the connections between the two;
 * and a port in use gave "Failed to bind to port 0".  SO_REUSEADDR only:
 * a restart may bind while old connections are in TIME_WAIT, and Linux
 * still refuses a second listener. */
static int open_listener(struct api_server *srv, char **ret_error)
{
	const struct api_listen *l = &srv->cfg.listen;
	socklen_t len;
	int one = 1, fd, r;

	fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l->addr.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&l->addr, l->addr_len) < 0 ||
	    listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		close(fd);
		goto fail;
	}
	srv->listen_fd = fd;
	/* the tools (the http tool, an allowlist sandbox's proxy) must not
	 * reach this server: through them the model would call the API,
	 * approvals included, as a keyless server's loopback client */
	len = sizeof(srv->bound);
	r = getsockname(fd, (struct sockaddr *)&srv->bound, &len) < 0
		    ? -errno
		    : engine_listening((const struct sockaddr *)&srv->bound, true);
	if (r < 0) {
		srv->listen_fd = -1;
		close(fd);
		goto fail;
	}
	srv->bound_told = true;
	return 0;
fail:
	if (asprintf(
		    ret_error, "%s",
		    r == -EADDRINUSE
			    ? "address already in use: another program listens on this port (another 'codecell serve'?); stop it or choose another --listen port"
		    : r == -EADDRNOTAVAIL
			    ? "cannot assign requested address: it is not an address of this host"
			    : strerror(-r)) < 0)
		*ret_error = NULL;
	return r;
}

static int start_mhd(struct api_server *srv, char **ret_error)
{
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD |
			 MHD_USE_ERROR_LOG | MHD_USE_ITC;

	if (srv->cfg.listen.addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	srv->mhd = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
		MHD_OPTION_LISTEN_SOCKET, srv->listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
		srv, MHD_OPTION_NOTIFY_CONNECTION, api_conns_notify, srv,
		MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_UNESCAPE_CALLBACK,
		keep_escapes, NULL, MHD_OPTION_CONNECTION_LIMIT, srv->cfg.max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->cfg.max_client_connections,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)API_IDLE_CONNECTION_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128u << 10), MHD_OPTION_END);
	if (!srv->mhd) {
		if (asprintf(ret_error, "cannot start the HTTP server (libmicrohttpd): %s",
			     strerror(errno ? errno : EINVAL)) < 0)
			*ret_error = NULL;
		return -EIO;
	}
	info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = info ? info->port : 0;
	return 0;
}

/* The literal of the loopback address listened on, as a Host names it. */
static void set_listen_host(struct api_server *srv)
{
	const struct api_listen *l = &srv->cfg.listen;
	char a[INET6_ADDRSTRLEN];

	if (!l->loopback)
		return;
	if (l->addr.ss_family == AF_INET6) {
		if (inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&l->addr)->sin6_addr, a,
			      sizeof(a)))
			snprintf(srv->listen_host, sizeof(srv->listen_host), "[%s]", a);
	} else if (inet_ntop(AF_INET, &((const struct sockaddr_in *)&l->addr)->sin_addr, a,
			     sizeof(a))) {
		snprintf(srv->listen_host, sizeof(srv->listen_host), "%s", a);
	}
}

/* The route table (the transport's routes, then each door's) and each
 * door's state. */
static int init_doors(struct api_server *srv)
{
	size_t n = ARRAY_SIZE(http_status_routes);
	int r;

	for (srv->n_doors = 0; srv->cfg.doors && srv->cfg.doors[srv->n_doors]; srv->n_doors++) {
		if (srv->n_doors == HTTP_DOORS_MAX)
			return -E2BIG;
		srv->door[srv->n_doors] = srv->cfg.doors[srv->n_doors];
		n += srv->door[srv->n_doors]->n_routes;
	}
	srv->table = calloc(n, sizeof(*srv->table));
	if (!srv->table)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(http_status_routes); i++)
		srv->table[srv->n_table++] = (struct http_entry){ &http_status_routes[i], NULL };
	for (size_t d = 0; d < srv->n_doors; d++)
		for (size_t i = 0; i < srv->door[d]->n_routes; i++)
			srv->table[srv->n_table++] =
				(struct http_entry){ &srv->door[d]->routes[i], srv->door[d] };
	srv->resolver[srv->n_resolvers++] = (struct http_resolver){ http_status_resolve };
	for (size_t d = 0; d < srv->n_doors; d++)
		if (srv->door[d]->resolve) {
			srv->resolver_door[srv->n_resolvers] = srv->door[d];
			srv->resolver[srv->n_resolvers++] =
				(struct http_resolver){ srv->door[d]->resolve };
		}
	for (size_t d = 0; d < srv->n_doors; d++)
		if (srv->door[d]->init && (r = srv->door[d]->init(srv, &srv->door_state[d])) < 0)
			return r;
	return 0;
}

void *http_door_state(const struct api_server *srv, const char *name)
{
	for (size_t i = 0; i < srv->n_doors; i++)
		if (!strcmp(srv->door[i]->name, name))
			return srv->door_state[i];
	return NULL;
}

int api_server_new(const struct api_config *c, struct api_server **ret, char **ret_error)
{
	struct api_server *srv;
	int r;

	*ret_error = NULL;
	r = api_mhd_load(ret_error);
	if (r < 0)
		return r;
	if (!c->listen.loopback && !c->token &&
	    !(c->policies && engine_policies_has_clients(c->policies))) {
		*ret_error = strdup(
			"refusing to listen beyond loopback without a token: give --token-file FILE (clients send 'Authorization: Bearer TOKEN')");
		return -EPERM;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->cfg = *c;
	srv->token = c->token ? strndup(c->token, c->token_len) : NULL;
	srv->preload = c->preload ? strdup(c->preload) : NULL;
	srv->cfg.token = srv->token;
	srv->cfg.preload = srv->preload;
	srv->listen_fd = -1;
	srv->policies = c->policies;
	if (!srv->policies)
		srv->policies = srv->own_policies = engine_policies_new();
	srv->approvals = engine_approvals_new();
	if (srv->approvals && c->max_pending_approvals)
		engine_approvals_set_per_client(srv->approvals, c->max_pending_approvals);
	if (!srv->policies || !srv->approvals) {
		engine_policies_free(srv->own_policies);
		engine_approvals_free(srv->approvals);
		free(srv->token);
		free(srv->preload);
		free(srv);
		return -ENOMEM;
	}
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->wake, NULL);
	pthread_mutex_init(&srv->logs.lock, NULL);
	api_metrics_init(&srv->metrics);
	set_listen_host(srv);
	r = engine_sessions_init(&srv->reg, c->max_sessions);
	if (r == 0)
		r = api_jobs_new(&srv->jobs);
	if (r < 0 || (c->token && !srv->token) || (c->preload && !srv->preload)) {
		api_server_free(srv);
		return -ENOMEM;
	}
	/* refusals first: nothing is started for a server that cannot run */
	r = fit_fds(srv, ret_error);
	if (r >= 0)
		r = open_listener(srv, ret_error);
	if (r >= 0)
		r = init_doors(srv);
	if (r < 0) {
		api_server_free(srv);
		return r;
	}
	/* the process-wide cgroup probe, once, before any thread needs it */
	engine_host_probe();
	start_pool(srv);
	r = pthread_create(&srv->reaper, NULL, api_reaper_main, srv);
	if (r != 0) {
		api_server_free(srv);
		return -r;
	}
	srv->reaper_started = true;
	r = api_conns_start(srv);
	if (r >= 0)
		r = start_mhd(srv, ret_error);
	if (r < 0) {
		api_server_free(srv);
		return r;
	}
	*ret = srv;
	return 0;
}

unsigned api_server_port(const struct api_server *srv)
{
	return srv->port;
}

/* Give the requests whose executions were just stopped the time to send
 * their answers ("killed") before the daemon closes every connection. */
static void wait_in_flight(struct api_server *srv, double seconds)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)seconds;
	pthread_mutex_lock(&srv->lock);
	while (srv->in_flight > 0 && pthread_cond_timedwait(&srv->wake, &srv->lock, &until) == 0)
		;
	pthread_mutex_unlock(&srv->lock);
}

void api_server_free(struct api_server *srv)
{
	if (!srv)
		return;
	/* no new work from here; what runs is stopped, then the
	 * connection threads are joined */
	__atomic_store_n(&srv->stopping, 1, __ATOMIC_SEQ_CST);
	/* calls waiting for a person's approval are denied now */
	engine_approvals_close(srv->approvals);
	/* after quiescing, closing the listening socket is ours */
	if (srv->mhd && MHD_quiesce_daemon(srv->mhd) < 0)
		srv->listen_fd = -1;
	api_jobs_stop_all(srv->jobs);
	for (size_t i = 0; i < srv->n_doors; i++)
		if (srv->door[i]->stop)
			srv->door[i]->stop(srv, srv->door_state[i]);
	engine_sessions_close_all(&srv->reg);
	wait_in_flight(srv, SERVER_DRAIN_S);
	if (srv->mhd)
		MHD_stop_daemon(srv->mhd);
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->bound_told)
		engine_listening((const struct sockaddr *)&srv->bound, false);
	api_conns_stop(srv);
	api_log_flush_all(srv);
	pthread_mutex_lock(&srv->lock);
	pthread_cond_broadcast(&srv->wake);
	pthread_mutex_unlock(&srv->lock);
	if (srv->reaper_started)
		pthread_join(srv->reaper, NULL);
	engine_sessions_close_all(&srv->reg); /* any made while the daemon stopped */
	for (size_t i = 0; i < srv->n_doors; i++)
		if (srv->door[i]->free)
			srv->door[i]->free(srv->door_state[i]);
	free(srv->table);
	engine_pool_free(srv->pool);
	engine_sessions_release(&srv->reg);
	api_jobs_free(srv->jobs);
	api_metrics_release(&srv->metrics);
	pthread_cond_destroy(&srv->wake);
	pthread_mutex_destroy(&srv->lock);
	pthread_mutex_destroy(&srv->logs.lock);
	engine_policies_free(srv->own_policies);
	engine_approvals_free(srv->approvals);
	free(srv->token);
	free(srv->preload);
	free(srv);
}
