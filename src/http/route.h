/* http/route: a request's URL path to a route, a session id and, for
 * files, a workspace path.  Pure (no I/O), fuzzed by
 * tests/fuzz/fuzz-api-route.c.
 *
 * The path arrives raw (percent escapes intact: the server installs an
 * identity unescaper), so decoding and every check happen here, once:
 * %00, bad escapes, "." and ".." components, empty components (an
 * absolute path after "files/"), over-long names. */
#ifndef CODECELL_HTTP_ROUTE_H
#define CODECELL_HTTP_ROUTE_H

#include <stddef.h>

#include "http/request.h"

#define API_ID_LEN 32	    /* hex characters of a session id (ENGINE_SESSION_ID_LEN) */
#define API_URL_MAX 4096    /* bytes of a request path */
#define API_PATH_MAX 1024   /* bytes of a workspace path */
#define API_NAME_MAX 255    /* bytes of one path component */

enum api_route_id {
	API_R_NOT_FOUND = 0,
	API_R_ASSET, /* the playground: path holds the asset's name */
	API_R_HEALTHZ,
	API_R_METRICS,
	API_R_EXECUTE,
	API_R_SESSIONS,
	API_R_SESSION,
	API_R_SESSION_EXECUTE,
	API_R_SESSION_INTERRUPT,
	API_R_SESSION_RESTART,
	API_R_SESSION_FORK,
	API_R_SESSION_FILES, /* path: "" for the workspace root */
	API_R_AGENT,
	API_R_MCP,
	API_R_E2B, /* the E2B door (e2b.c), which routes by itself */
	API_R_APPROVALS,
	API_R_APPROVAL, /* session_id holds the approval's id (16 hex) */
	API_R_TOOLS,	/* GET /v1/tools */
	API_R_TOOL,	/* /v1/tools/NAME: path holds NAME ([a-z_], 1 to 64) */
	API_R_SESSION_CHANGES, /* a project's changes (changes.c) */
	API_R_SESSION_CHANGES_APPLY,
	API_R_SESSION_CHANGES_DISCARD,
};

struct api_route {
	enum api_route_id id;
	char session_id[API_ID_LEN + 1];
	char path[API_PATH_MAX + 1]; /* decoded, checked, no leading or trailing '/' */
	size_t path_len;
};

/* Route url (the path of the request line, undecoded; a query, if any,
 * is ignored).  0 with *ret filled, or -EINVAL with e filled: 404
 * not_found (no such route), 404 session_not_found (a malformed id),
 * 400 bad_url (escapes), 400 invalid_path (a workspace path that could
 * leave the workspace or is malformed), 414 url_too_long. */
int api_route_parse(const char *url, struct api_route *ret, struct api_error *e);

/* Check p[0..n) as a workspace path (relative, no "." or "..", UTF-8;
 * one trailing '/' dropped) into r->path.  0, or -EINVAL with e filled
 * (400 invalid_path). */
int api_path_check(const char *p, size_t n, struct api_route *r, struct api_error *e);

/* Is id 32 lowercase hex digits? */
int api_session_id_valid(const char *id);

#endif
