/* e2b/e2b.h: the E2B-compatible door of `codecell serve` (docs/API.md,
 * "The E2B door").  E2B's SDKs, pointed at this server with E2B_API_URL
 * and E2B_SANDBOX_URL, send their control plane (POST /sandboxes, ...)
 * and, with E2b-Sandbox-Id and E2b-Sandbox-Port headers, what they would
 * send to a sandbox's envd (49983) or code interpreter (49999) to the
 * same port.  An E2B sandbox is one codecell session (a Python kernel)
 * whose workspace is /home/user; its other contexts and its commands run
 * inside that same sandbox (e2b/kernel.c), so they see the same files.
 *
 * The door registers with the transport (http/door.h) through e2b_door:
 * e2b.c routes, authenticates and answers (control plane, auth, the
 * hooks), jupyter.c (/execute, /contexts), envd.c (/files, Connect RPCs);
 * sandbox.c is the ground they share. */
#ifndef CODECELL_E2B_E2B_H
#define CODECELL_E2B_E2B_H

#include "http/door.h"

/* Claims a request when E2b-Sandbox-Id is set, or when the path is one
 * of its control plane's (/sandboxes..., /v2/sandboxes...).  With a
 * server token or a policy file's client keys, its own auth: the API key
 * (X-API-Key: a client's key, with or without "e2b_" before it; or e2b_
 * + the token, or its bytes in hex) on the control plane; the sandbox's
 * access token (X-Access-Token or E2B-Traffic-Access-Token) or the API
 * key on a sandbox's routes (a sandbox's access token: the client that
 * made it).  A call the policy refused is answered in the door's shape:
 * {"code": 403, "message": "rejected by policy ..."} (REST), Connect's
 * permission_denied / resource_exhausted (unary calls, or the end of a
 * process stream).  Once a second the sandboxes whose time is up end. */
extern const struct http_door e2b_door;

#endif
