/* http/door.h: how a door of `codecell serve` (/v1 and its playground,
 * E2B, MCP over HTTP) registers with the transport: a small table of
 * hooks.  The transport walks the doors the server was given
 * (api_config.doors) and knows none of them by name; a door calls the
 * transport and the engine, never another door. */
#ifndef CODECELL_HTTP_DOOR_H
#define CODECELL_HTTP_DOOR_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

#include "http/route.h"

struct api_call;
struct api_error;
struct api_server;
struct engine_client;
struct engine_verdict;
struct run_result;

enum http_method { HTTP_GET = 1, HTTP_POST = 2, HTTP_PUT = 4, HTTP_DELETE = 8, HTTP_HEAD = 16 };

/* Where a door's stream hooks send an event: emit() takes ev (NULL is
 * dropped) and returns false when the client was too far behind for it. */
struct http_emitter {
	bool (*emit)(void *cls, json_t *ev);
	void *cls;
};

/* An execution's NDJSON events in the shape of the door that took the
 * call over (E2B's: Jupyter's), in place of /v1's.  The transport reads
 * the output and the results and hands them over in order; the door
 * makes the events. */
struct http_stream_shape {
	/* The call's state; NULL: out of memory (the call fails). */
	void *(*begin)(const struct api_call *c);
	/* Stream i's text (0 stdout, 1 stderr; whole UTF-8 characters). */
	void (*output)(void *st, int i, const char *text, size_t n, const struct http_emitter *out);
	/* What it holds back of the output, now: before a result, at the
	 * end of a stream, and when hold_ms() ran out with nothing new. */
	void (*flush)(void *st, const struct http_emitter *out);
	/* How long what it holds back may wait for more (ms); -1: none held. */
	int (*hold_ms)(const void *st);
	/* A result bundle as an event (a new reference). */
	json_t *(*result)(void *st, const json_t *bundle);
	/* The last events, after the results: err when the call failed
	 * (res is then NULL), else res's error and status. */
	void (*end)(void *st, const struct api_error *err, const struct run_result *res,
		    const struct http_emitter *out);
	void (*free)(void *st);
};

/* One route of a door: a route id (the door's own numbering, as its
 * resolve hook fills struct api_route.id) and the methods it answers. */
struct http_route {
	int route;
	unsigned method; /* enum http_method bits */
	enum MHD_Result (*fn)(struct api_call *c);
	bool public;	 /* no token needed */
	size_t body_max; /* 0: no body */
	bool any_type;	 /* a body of any Content-Type (files, E2B's forms) */
	/* A chunk of the body: true if the route took it (an upload),
	 * false to have it buffered as the body.  NULL: buffered. */
	bool (*data)(struct api_call *c, const char *data, size_t len);
	/* The most body bytes this request may send, once routed; NULL:
	 * body_max. */
	size_t (*body_max_of)(const struct api_call *c);
};

struct http_door {
	const char *name;
	const struct http_route *routes;
	size_t n_routes;
	/* Its routes by path: path[0..n) decoded by the transport, to one of
	 * routes[] (struct http_resolver's contract, http/route.h).  The
	 * doors are asked in the order the server was given them, after
	 * the transport's own routes (/healthz, /metrics): a door that
	 * takes every path left (the playground's files) comes last. */
	int (*resolve)(const char *path, size_t n, struct api_route *r, struct api_error *e);
	/* A door that routes by itself, before the route table: whether
	 * the request is its, and then start() routes it (c->route.id, and
	 * c->door when the door answers in its own shapes): 0, or -errno
	 * with e set. */
	bool (*claims)(struct MHD_Connection *conn, const char *url);
	int (*start)(struct api_call *c, const char *url, struct api_error *e);
	/* Its own auth, used when the server has a token or client keys:
	 * 0 and the client, or -EINVAL with e set (401). */
	int (*auth)(struct api_server *srv, struct MHD_Connection *conn,
		    struct engine_client **ret_client, struct api_error *e);
	/* The request is over, answered or not: free what start() made
	 * (c->door_call, NULL if start() made nothing).  Called for every
	 * request this door took, whether start() ran or not. */
	void (*release)(struct api_call *c);

	/* A call the door took over (c->door): its shapes.  An error; a
	 * refusal by the policy (recorded already); an execution's NDJSON
	 * events (NULL: /v1's). */
	enum MHD_Result (*respond_error)(struct api_call *c, const struct api_error *e);
	enum MHD_Result (*refuse)(struct api_call *c, const struct engine_verdict *v);
	const struct http_stream_shape *stream;
	/* Its calls wait for a person's decision: no "pending" answer. */
	bool no_pending;
	/* A call may run code of another language than its session's
	 * (E2B's contexts): the language checked is the call's. */
	bool lang_per_call;

	/* The server's life: the door's state (0 or -errno), shutdown's
	 * first step (stop what runs), once a second (the reaper), the
	 * end.  Each may be NULL. */
	int (*init)(struct api_server *srv, void **ret_state);
	void (*stop)(struct api_server *srv, void *state);
	void (*tick)(struct api_server *srv, void *state);
	void (*free)(void *state);
};

/* The state the init() of the door of this name made in srv, or NULL:
 * what a door finds its own by (a door names no other). */
void *http_door_state(const struct api_server *srv, const char *name);

#endif
