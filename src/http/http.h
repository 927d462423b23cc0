/* http/http.h: a request as the handlers see it, and the answers
 * (server.c). */
#ifndef CODECELL_HTTP_HTTP_H
#define CODECELL_HTTP_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

#include "http/request.h"
#include "http/route.h"
#include "engine/audit.h"
#include "engine/files.h"
#include "engine/sessions.h"

struct api_server;
struct http_door;

/* The body of a PUT .../files/{path} on its way into the workspace
 * (files.c): written to a temporary file beside the target as it
 * arrives, through libmicrohttpd's connection buffer, and renamed into
 * place when it is complete; never held whole in memory.  Zeroed:
 * nothing begun. */
struct api_upload {
	bool begun;		/* the first chunk came */
	int err;		/* the first error (-errno), answered at the end */
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
	bool close;		  /* answer with "Connection: close" */
	/* a door that took the call over (http/door.h: its start hook):
	 * the shapes of its errors, refusals and NDJSON events; NULL: the
	 * transport's own, /v1's.  door_call: its request state. */
	const struct http_door *door;
	void *door_call;
	/* who: the policy's client the key (or the server's token, or
	 * loopback) maps to; never NULL in a handler */
	struct engine_client *client;
	char request_id[AUDIT_ID_LEN + 1];
	char approval_id[AUDIT_ID_LEN + 1]; /* the approval this call used, if any */
};

/* Responses; each returns what the access handler returns. */
enum MHD_Result api_respond_json(struct api_call *c, unsigned status, json_t *body /* stolen */);
enum MHD_Result api_respond_error(struct api_call *c, const struct api_error *e);
enum MHD_Result api_respond_errorf(struct api_call *c, int http, const char *code, const char *fmt,
				   ...) __attribute__((format(printf, 4, 5)));
void api_response_headers(struct MHD_Response *r, const char *type);
/* A 200 answer of len bytes of body (malloc'd; taken, and freed whatever
 * happens) with the common headers and Content-Type type. */
enum MHD_Result api_respond_owned(struct api_call *c, const char *type, char *body, size_t len);
/* A 200 streamed as read(cls, ...) makes it, of type type, through no
 * buffering proxy; done(cls) frees cls once the stream ends, or at once
 * if the response cannot be made. */
enum MHD_Result api_respond_stream(struct api_call *c, const char *type,
				   MHD_ContentReaderCallback read, void *cls,
				   MHD_ContentReaderFreeCallback done);

/* Look up the route's session (a new reference) or respond 404. */
struct engine_session *api_call_session(struct api_call *c, enum MHD_Result *ret);
/* Whether the caller may reach e: the client that made it, or the
 * operator (the default policy's client: the server's token, or
 * loopback without one), who sees every session as it sees every
 * approval.  Another client's session is answered as one that does not
 * exist (404): its id is not a capability. */
bool api_sees(const struct api_call *c, const struct engine_session *e);
/* engine_sessions_get() of id, NULL also when the caller may not see it. */
struct engine_session *api_session_get(struct api_call *c, const char *id);

#endif
