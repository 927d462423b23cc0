/* e2b/e2b.h: the E2B-compatible door of `codecell serve` (docs/API.md,
 * "The E2B door").  E2B's SDKs, pointed at this server with E2B_API_URL
 * and E2B_SANDBOX_URL, send their control plane (POST /sandboxes, ...)
 * and, with E2b-Sandbox-Id and E2b-Sandbox-Port headers, what they would
 * send to a sandbox's envd (49983) or code interpreter (49999) to the
 * same port.  An E2B sandbox is one codecell session (a Python kernel)
 * whose workspace is /home/user; its other contexts and its commands run
 * inside that same sandbox (e2b/kernel.c), so they see the same files.
 *
 * The hooks server.c, handlers.c and exec.c call; the rest is in
 * e2b.c (control plane, auth, state), e2b/jupyter.c (/execute,
 * /contexts), e2b/envd.c (/files, Connect RPCs). */
#ifndef CODECELL_E2B_E2B_H
#define CODECELL_E2B_E2B_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

struct api_server;
struct api_call;
struct api_error;
struct engine_client;
struct engine_verdict;

/* The E2B door's state in the server (sandboxes, their contexts and
 * commands).  0 or -ENOMEM. */
int api_e2b_init(struct api_server *srv);
void api_e2b_free(struct api_server *srv);
/* Whether this request is the E2B door's: E2b-Sandbox-Id is set, or the
 * path is one of its control plane's (/sandboxes..., /v2/sandboxes...). */
bool api_e2b_claims(struct MHD_Connection *conn, const char *url);
/* Route it (c->e2b, c->style): 0, or -EINVAL with e set (404 unknown
 * route or sandbox, 400 bad path). */
int api_e2b_start(struct api_call *c, const char *url, struct api_error *e);
/* With a server token or a policy file's client keys: the API key
 * (X-API-Key: a client's key, with or without "e2b_" before it; or e2b_ +
 * the token, or its bytes in hex) on the control plane; the sandbox's
 * access token (X-Access-Token or E2B-Traffic-Access-Token) or the API
 * key on a sandbox's routes.  0 and the client (a sandbox's access
 * token: the client that made it), or -EINVAL with e set (401). */
int api_e2b_auth(struct api_server *srv, struct MHD_Connection *conn,
		 struct engine_client **ret_client, struct api_error *e);
/* A call the policy refused, in the door's shape: {"code": 403,
 * "message": "rejected by policy ..."} (REST), Connect's
 * permission_denied / resource_exhausted (unary calls, or the end of a
 * process stream).  The audit record is written already. */
enum MHD_Result api_e2b_refuse(struct api_call *c, const struct engine_verdict *v);
/* The most body bytes this request may send. */
size_t api_e2b_body_max(const struct api_call *c);
/* A chunk of the body: true if the door took it (an upload), false to
 * have it buffered in c->body as JSON. */
bool api_e2b_data(struct api_call *c, const char *data, size_t len);
/* The request is over: free c->e2b. */
void api_e2b_release(struct api_call *c);
/* The route's handler. */
enum MHD_Result api_handle_e2b(struct api_call *c);
/* An error in the door's shape: {"code": HTTP, "message"} (REST), or
 * Connect's {"code": "not_found", "message"} with its HTTP status. */
enum MHD_Result api_e2b_respond_error(struct api_call *c, const struct api_error *e);
/* Once a second (the reaper): end the sandboxes whose time is up. */
void api_e2b_sweep(struct api_server *srv);

/* exec.c, for a stream in E2B's shape: a result event from a codecell
 * bundle ({"text/plain": ..., "image/png": ..., "is_main_result"}), and
 * the number the execution gets (number_of_executions). */
json_t *api_e2b_result_event(const json_t *bundle);
unsigned api_e2b_exec_count(const struct api_call *c);

#endif
