/* http/status.h: the transport's own routes, /healthz and /metrics
 * (status.c). */
#ifndef CODECELL_HTTP_STATUS_H
#define CODECELL_HTTP_STATUS_H

#include "http/door.h"

extern const struct http_route http_status_routes[2];
/* Their resolver (struct http_resolver's contract). */
int http_status_resolve(const char *path, size_t n, struct api_route *r, struct api_error *e);

#endif
