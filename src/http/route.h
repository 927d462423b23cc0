/* http/route: a request's URL path to a door's route, a session id
 * and, for files, a workspace path.  Pure (no I/O), fuzzed by
 * tests/fuzz/fuzz-api-route.c.  The transport knows no route: it
 * decodes the path and asks each door's resolver (http/door.h) in turn.
 *
 * The path arrives raw (percent escapes intact: the server installs an
 * identity unescaper), so decoding happens here, once: %00, bad
 * escapes, over-long paths; and the checks of a workspace path a door
 * finds in it: "." and ".." components, empty components (an absolute
 * path after "files/"), over-long names. */
#ifndef CODECELL_HTTP_ROUTE_H
#define CODECELL_HTTP_ROUTE_H

#include <stddef.h>

#include "http/request.h"

#define API_ID_LEN 32	  /* hex characters of a session id (ENGINE_SESSION_ID_LEN) */
#define API_URL_MAX 4096  /* bytes of a request path */
#define API_PATH_MAX 1024 /* bytes of a workspace path */
#define API_NAME_MAX 255  /* bytes of one path component */

/* A request's route: which of its routes the door that resolved it
 * found (the door's own numbering, 1 and up; the transport compares
 * it, never reads it), and what the path named. */
struct api_route {
	int id;
	char session_id[API_ID_LEN + 1];
	char path[API_PATH_MAX + 1]; /* decoded, checked, no leading or trailing '/' */
	size_t path_len;
};

/* A door's resolver: path[0..n) (decoded, NUL-free) to one of its
 * routes.  1 with *r filled; 0, not the door's; -EINVAL with e filled
 * (a path of the door's that is malformed). */
struct http_resolver {
	int (*resolve)(const char *path, size_t n, struct api_route *r, struct api_error *e);
};

/* url's path (the request line's, undecoded; a query, if any, is
 * ignored) percent-decoded into out (room for API_URL_MAX + 1).  0, or
 * -EINVAL with e filled: 400 bad_url (%00, bad escapes), 414
 * url_too_long. */
int http_path_decode(const char *url, char *out, size_t *ret_len, struct api_error *e);

/* Route url: decoded, then res[0], res[1], ... asked in turn.  0 with
 * *ret filled and *ret_which the resolver that took it, or -EINVAL with
 * e filled: a decoding error, a resolver's, or 404 not_found (no
 * resolver took it). */
int http_route_resolve(const char *url, const struct http_resolver *res, size_t n_res,
		       struct api_route *ret, size_t *ret_which, struct api_error *e);

/* Check p[0..n) as a workspace path (relative, no "." or "..", UTF-8;
 * one trailing '/' dropped) into r->path.  0, or -EINVAL with e filled
 * (400 invalid_path). */
int api_path_check(const char *p, size_t n, struct api_route *r, struct api_error *e);

/* Is id 32 lowercase hex digits? */
int api_session_id_valid(const char *id);

#endif
