/* api/route.h: the /v1 door's routes and the playground's, and its
 * router: the door's resolve hook (http/door.h).  Pure (no I/O), fuzzed
 * by tests/fuzz/fuzz-api-route.c. */
#ifndef CODECELL_API_ROUTE_H
#define CODECELL_API_ROUTE_H

#include <stddef.h>

#include "http/route.h"

/* The door's route ids (struct api_route.id), its own numbering. */
enum api_route_id {
	API_R_ASSET = 1, /* the playground: path holds the asset's name */
	API_R_EXECUTE,
	API_R_SESSIONS,
	API_R_SESSION,
	API_R_SESSION_EXECUTE,
	API_R_SESSION_INTERRUPT,
	API_R_SESSION_RESTART,
	API_R_SESSION_FORK,
	API_R_SESSION_FILES, /* path: "" for the workspace root */
	API_R_AGENT,
	API_R_APPROVALS,
	API_R_APPROVAL,	       /* session_id holds the approval's id (16 hex) */
	API_R_TOOLS,	       /* GET /v1/tools */
	API_R_TOOL,	       /* /v1/tools/NAME: path holds NAME ([a-z_], 1 to 64) */
	API_R_SESSION_CHANGES, /* a project's changes (changes.c) */
	API_R_SESSION_CHANGES_APPLY,
	API_R_SESSION_CHANGES_DISCARD,
};

/* The door's resolve hook: path[0..n), decoded (http_path_decode), to
 * a route.  1 with *r filled; 0, not the door's; -EINVAL with e filled:
 * 404 not_found (under /v1/, no such route), 404 session_not_found (a
 * malformed id), 400 invalid_path.  Every path outside /v1/ that could
 * name a file is the playground's: the transport asks this door last. */
int api_route_resolve(const char *path, size_t n, struct api_route *r, struct api_error *e);

/* The whole way for one URL, as the server takes it: decoded, then
 * resolved (for the tests and the fuzzer).  0, or -EINVAL with e
 * filled (404 not_found for a path of no route). */
int api_route_parse(const char *url, struct api_route *ret, struct api_error *e);

#endif
