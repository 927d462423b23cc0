/* /mcp: the MCP server of `codecell mcp` over Streamable HTTP
 * (basic/transports.mdx, 2025-03-26 and later).  The protocol is
 * src/mcp/protocol.c's, not a second implementation: each POST body is
 * handed to mcp_conn_handle() and its reply is the response body
 * (application/json; no SSE: every request gets one response).
 *
 * - initialize makes a connection with an Mcp-Session-Id (32 random hex
 *   digits) that later requests must send; an unknown id is 404 (the
 *   client then initializes again), DELETE ends one.
 * - Without Mcp-Session-Id (the stateless 2026-07-28 revision, whose
 *   requests carry their version in params._meta), each request is
 *   served on a connection of its own.  Its headers are checked:
 *   MCP-Protocol-Version known, Mcp-Method equal to the body's method,
 *   and for tools/call Mcp-Name equal to params.name (400 otherwise).
 * - GET (the server-to-client event stream) is 405: the server sends
 *   nothing unasked.
 * - The server's token, Host and Origin rules apply as for /v1 (admit()
 *   in server.c), before anything here runs.
 *
 * One mcp_server per client of the server (the policy file's client
 * whose key the request carries, or the default client), made at that
 * client's first request: its calls run under that client's policy, and
 * its Mcp-Session-Ids are its own (another client's id is a 404).  Its
 * sessions are in the server's table (srv->reg, door "mcp"), so they
 * count against --max-sessions and the client's max_sessions and show in
 * GET /v1/sessions and /metrics; the MCP tools see only the sessions
 * their client made through MCP.
 *
 * A client's requests run side by side, on one Mcp-Session-Id or
 * several (basic/transports.mdx lets a client send a POST while another
 * is open): a long run_code holds up nothing but itself.  The core's
 * calls each have their own state (mcp.h); the lock here guards only
 * the table of connections, and a connection in use is held by a
 * reference, so a DELETE or an eviction during a call frees it when
 * the call ends. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "http/log.h"
#include "http/door.h"
#include "http/http.h"
#include "http/internal.h"
#include "http/text.h"
#include "mcp/mcp.h"
#include "version.h"
#include "util/macro.h"
#include "util/banned.h"

#define MCP_HTTP_CONNS_MAX 256 /* Mcp-Session-Ids at once; the oldest unused goes */
#define MCP_HTTP_ID_LEN 32
#define MCP_HTTP_BODY_MAX (16u << 20) /* as MCP_MESSAGE_MAX */

/* An Mcp-Session-Id's connection: held by the table and by each call
 * on it (refs, under api_mcp.lock). */
struct mcp_http_conn {
	char id[MCP_HTTP_ID_LEN + 1];
	struct mcp_conn *c;
	uint64_t last_ms;
	unsigned refs;
};

struct api_mcp {
	pthread_mutex_t lock; /* around conns and n: not held during a call */
	int stop[2];	      /* mcp_config.stop_fd: SIGTERM records at shutdown */
	struct mcp_server *srv;
	struct mcp_http_conn *conns[MCP_HTTP_CONNS_MAX];
	unsigned n;
	const struct engine_client *client; /* whose core this is */
	struct api_mcp *next;		    /* the server's list */
};

/* The door's state in a server: one core per client, made at its first
 * request. */
struct mcp_http {
	pthread_mutex_t lock; /* around the list */
	struct api_mcp *head;
};

/* The cores' warnings (an audit record that could not be written) go
 * to the server's log; their notes (a session expired) do not. */
static void mcp_log(void *cls, const char *level, const char *msg)
{
	if (strcmp(level, "info") != 0)
		api_log(cls, level, "mcp: %s", msg);
}

/* client's MCP core, made on first use. */
static struct api_mcp *get_mcp(struct api_server *srv, struct engine_client *client,
			       char **ret_error)
{
	struct mcp_http *st = http_door_state(srv, "mcp");
	struct api_mcp *m;
	struct mcp_config cfg = { 0 };
	struct run_request defaults;
	int r;

	if (!client)
		client = &srv->policies->clients[0];
	pthread_mutex_lock(&st->lock);
	for (m = st->head; m; m = m->next)
		if (m->client == client)
			goto out;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	if (pipe2(m->stop, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(m);
		m = NULL;
		goto out;
	}
	run_request_init(&defaults);
	cfg.limits = defaults.limits;
	cfg.output_limit = defaults.output_limit;
	cfg.net = defaults.net;
	/* the server's table: --max-sessions, the listings, /metrics and
	 * the reaper cover MCP's sessions as every other door's */
	cfg.sessions = &srv->reg;
	cfg.max_sessions = srv->cfg.max_sessions;
	cfg.idle_timeout_s = 3600;
	cfg.preload = srv->preload;
	cfg.stop_fd = m->stop[0];
	cfg.server_version = CODECELL_VERSION;
	/* this client's policy and name, the server's audit log */
	cfg.client = client;
	cfg.audit = srv->cfg.audit;
	cfg.policies = srv->policies;
	cfg.stop_flag = &srv->stopping;
	cfg.log = mcp_log;
	cfg.log_cls = srv;
	r = mcp_server_new(&cfg, &m->srv, ret_error);
	if (r < 0) {
		close(m->stop[0]);
		close(m->stop[1]);
		free(m);
		m = NULL;
		goto out;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->client = client;
	m->next = st->head;
	st->head = m;
out:
	pthread_mutex_unlock(&st->lock);
	return m;
}

static int mcp_http_init(struct api_server *srv, void **ret_state)
{
	struct mcp_http *st = calloc(1, sizeof(*st));

	(void)srv;
	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lock, NULL);
	*ret_state = st;
	return 0;
}

/* Shutdown: stop the MCP calls in progress (their runs and cells are
 * killed).  A session's cell takes one record off the pipe as it stops
 * (session/exchange.c), so the pipe is filled: a record for every call
 * in flight, and the pipe stays readable for a call that starts late. */
static void mcp_http_stop(struct api_server *srv, void *state)
{
	struct signalfd_siginfo si = { .ssi_signo = SIGTERM };
	struct mcp_http *st = state;

	(void)srv;
	pthread_mutex_lock(&st->lock);
	for (struct api_mcp *m = st->head; m; m = m->next)
		while (write(m->stop[1], &si, sizeof(si)) == sizeof(si))
			; /* until EAGAIN: O_NONBLOCK */
	pthread_mutex_unlock(&st->lock);
}

static void mcp_free(struct api_mcp *m)
{
	if (!m)
		return;
	mcp_free(m->next);
	close(m->stop[0]);
	close(m->stop[1]);
	for (unsigned i = 0; i < m->n; i++) {
		mcp_conn_free(m->conns[i]->c);
		free(m->conns[i]);
	}
	mcp_server_free(m->srv);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* Close every MCP connection and session. */
static void mcp_http_free(void *state)
{
	struct mcp_http *st = state;

	if (!st)
		return;
	mcp_free(st->head);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

/* Under m->lock: a reference the caller drops with put_conn(). */
static struct mcp_http_conn *get_conn(struct api_mcp *m, const char *id)
{
	for (unsigned i = 0; i < m->n; i++)
		if (!strcmp(m->conns[i]->id, id)) {
			m->conns[i]->refs++;
			m->conns[i]->last_ms = api_now_ms();
			return m->conns[i];
		}
	return NULL;
}

/* Under m->lock. */
static void unref_conn(struct mcp_http_conn *hc)
{
	if (--hc->refs)
		return;
	mcp_conn_free(hc->c);
	free(hc);
}

static void put_conn(struct api_mcp *m, struct mcp_http_conn *hc)
{
	pthread_mutex_lock(&m->lock);
	unref_conn(hc);
	pthread_mutex_unlock(&m->lock);
}

/* Under m->lock: out of the table (its calls still hold it). */
static void drop_conn(struct api_mcp *m, unsigned i)
{
	struct mcp_http_conn *hc = m->conns[i];

	m->conns[i] = m->conns[--m->n];
	unref_conn(hc);
}

/* Under m->lock: keep c under a new id, or NULL (c is then the
 * caller's still).  When the table is full the least recently used
 * goes, one without a call in flight if there is one. */
static const char *add_conn(struct api_mcp *m, struct mcp_conn *c)
{
	unsigned char raw[MCP_HTTP_ID_LEN / 2];
	struct mcp_http_conn *hc;

	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw) || !(hc = calloc(1, sizeof(*hc))))
		return NULL;
	if (m->n == MCP_HTTP_CONNS_MAX) {
		unsigned oldest = 0;

		for (unsigned i = 1; i < m->n; i++) {
			bool idle = m->conns[i]->refs == 1,
			     oldest_idle = m->conns[oldest]->refs == 1;

			if (idle > oldest_idle ||
			    (idle == oldest_idle &&
			     m->conns[i]->last_ms < m->conns[oldest]->last_ms))
				oldest = i;
		}
		drop_conn(m, oldest);
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hc->id + 2 * i, 3, "%02x", raw[i]);
	hc->c = c;
	hc->last_ms = api_now_ms();
	hc->refs = 1; /* the table's */
	m->conns[m->n++] = hc;
	return hc->id;
}

/* ---- responses ---- */

static enum MHD_Result respond(struct api_call *c, unsigned status, char *body, size_t len,
			       const char *session_id)
{
	struct MHD_Response *r =
		body ? MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
		     : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	api_response_headers(r, "application/json");
	if (session_id)
		MHD_add_response_header(r, "Mcp-Session-Id", session_id);
	ret = MHD_queue_response(c->conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A JSON-RPC error as an HTTP error's body (what the SDKs show). */
static enum MHD_Result rpc_error(struct api_call *c, unsigned status, json_t *id, int code,
				 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static enum MHD_Result rpc_error(struct api_call *c, unsigned status, json_t *id, int code,
				 const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *j;
	size_t len = 0;
	char *s;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	j = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
		      "error", "code", code, "message", msg);
	s = j ? api_json_dump(j, JSON_COMPACT | JSON_ENSURE_ASCII, &len) : NULL;
	json_decref(j);
	return respond(c, status, s, len, NULL);
}

static const char *header(struct api_call *c, const char *name)
{
	return MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, name);
}

/* The 2026-07-28 headers must say what the body says. */
static bool modern_headers_ok(struct api_call *c, json_t *msg, char *why, size_t n)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *hm = header(c, "Mcp-Method"), *hn = header(c, "Mcp-Name");
	const char *name =
		json_string_value(json_object_get(json_object_get(msg, "params"), "name"));

	if (!json_is_object(msg) || !method)
		return true; /* a response or a malformed message: the core answers it */
	if (!hm || strcmp(hm, method)) {
		snprintf(why, n,
			 "the Mcp-Method header ('%.64s') must be the body's method ('%.64s')",
			 hm ? hm : "", method);
		return false;
	}
	if (!strcmp(method, "tools/call") && (!hn || !name || strcmp(hn, name))) {
		snprintf(why, n, "the Mcp-Name header ('%.64s') must be the tool's name ('%.64s')",
			 hn ? hn : "", name ? name : "");
		return false;
	}
	return true;
}

/* ---- the route ---- */

static enum MHD_Result handle_delete(struct api_call *c, struct api_mcp *m, const char *sid)
{
	bool found = false;

	if (!sid)
		return rpc_error(c, 400, NULL, -32600,
				 "DELETE /mcp needs the Mcp-Session-Id to end");
	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < m->n && !found; i++)
		if (!strcmp(m->conns[i]->id, sid)) {
			drop_conn(m, i);
			found = true;
		}
	pthread_mutex_unlock(&m->lock);
	if (!found)
		return rpc_error(c, 404, NULL, -32600, "no MCP session '%.40s'", sid);
	return respond(c, 200, NULL, 0, NULL);
}

/* Handle the body on conn; the reply (or 202 for none). */
static enum MHD_Result answer(struct api_call *c, struct mcp_conn *conn, const char *new_id)
{
	size_t len = 0;
	char *reply = mcp_conn_handle(conn, c->body, c->body_len, &len);

	if (!reply)
		return respond(c, 202, NULL, 0, new_id);
	return respond(c, 200, reply, len, new_id);
}

static enum MHD_Result handle_post(struct api_call *c, struct api_mcp *m, const char *sid)
{
	const char *version = header(c, "MCP-Protocol-Version"), *method;
	struct json_body_error je;
	struct mcp_http_conn *hc;
	struct mcp_conn *conn;
	enum MHD_Result ret;
	json_t *msg = NULL;
	char why[256];

	/* a key twice is refused here, before anything reads one of them
	 * (the method, the headers' check); other malformed bodies are the
	 * core's to answer, as on stdio */
	if (json_body_read(c->body, c->body_len, MCP_JSON_FLAGS, &msg, &je) < 0 &&
	    je.problem == JSON_BODY_DUPLICATE)
		return rpc_error(c, 400, NULL, -32700, "parse error: %s", je.message);
	method = json_string_value(json_object_get(msg, "method"));
	if (version && !mcp_version_known(version)) {
		ret = rpc_error(c, 400, json_object_get(msg, "id"), -32600,
				"unsupported MCP-Protocol-Version '%.40s'", version);
		goto out;
	}
	if (version && !strcmp(version, "2026-07-28") &&
	    !modern_headers_ok(c, msg, why, sizeof(why))) {
		ret = rpc_error(c, 400, json_object_get(msg, "id"), -32600, "%s", why);
		goto out;
	}
	if (sid) {
		pthread_mutex_lock(&m->lock);
		hc = get_conn(m, sid);
		pthread_mutex_unlock(&m->lock);
		if (!hc) {
			ret = rpc_error(
				c, 404, json_object_get(msg, "id"), -32600,
				"no MCP session '%.40s': it ended, or the server restarted; "
				"initialize again",
				sid);
			goto out;
		}
		/* without the lock: another call on this id may run meanwhile */
		ret = answer(c, hc->c, NULL);
		put_conn(m, hc);
	} else if (method && !strcmp(method, "initialize")) {
		/* a session for the connection the handshake opens; kept only
		 * if the handshake succeeded */
		size_t len = 0;
		char *reply;
		json_t *rj;

		conn = mcp_conn_new(m->srv);
		reply = conn ? mcp_conn_handle(conn, c->body, c->body_len, &len) : NULL;
		rj = NULL;
		if (reply)
			(void)json_body_read(reply, len, MCP_JSON_FLAGS, &rj, NULL);
		if (json_object_get(rj, "result")) {
			char id[MCP_HTTP_ID_LEN + 1] = "";
			const char *kept;

			/* the id copied under the lock: the entry may go as
			 * soon as it is released */
			pthread_mutex_lock(&m->lock);
			kept = add_conn(m, conn);
			if (kept)
				memcpy(id, kept, sizeof(id));
			pthread_mutex_unlock(&m->lock);
			if (!kept)
				mcp_conn_free(conn);
			ret = respond(c, 200, reply, len, kept ? id : NULL);
		} else {
			mcp_conn_free(conn);
			ret = reply ? respond(c, 200, reply, len, NULL)
				    : respond(c, 500, NULL, 0, NULL);
		}
		json_decref(rj);
	} else {
		conn = mcp_conn_new(m->srv);
		ret = conn ? answer(c, conn, NULL) : respond(c, 500, NULL, 0, NULL);
		mcp_conn_free(conn);
	}
out:
	json_decref(msg);
	return ret;
}

static enum MHD_Result handle_mcp(struct api_call *c)
{
	const char *sid = header(c, "Mcp-Session-Id");
	char *err = NULL;
	struct api_mcp *m = get_mcp(c->srv, c->client, &err);

	if (!m) {
		enum MHD_Result r =
			rpc_error(c, 500, NULL, -32603, "cannot start the MCP server: %s",
				  err ? err : "out of memory");

		free(err);
		return r;
	}
	if (!strcmp(c->method, "DELETE"))
		return handle_delete(c, m, sid);
	return handle_post(c, m, sid);
}

enum { MCP_R_MCP = 1 }; /* the door's one route */

static int mcp_resolve(const char *path, size_t n, struct api_route *r, struct api_error *e)
{
	(void)n, (void)e;
	if (strcmp(path, "/mcp") != 0)
		return 0;
	r->id = MCP_R_MCP;
	return 1;
}

/* POST and DELETE /mcp */
static const struct http_route routes[] = {
	{ MCP_R_MCP, HTTP_POST | HTTP_DELETE, handle_mcp, false, MCP_HTTP_BODY_MAX, false, NULL,
	  NULL },
};

const struct http_door mcp_http_door = {
	.name = "mcp",
	.routes = routes,
	.n_routes = ARRAY_SIZE(routes),
	.resolve = mcp_resolve,
	.init = mcp_http_init,
	.stop = mcp_http_stop,
	.free = mcp_http_free,
};
