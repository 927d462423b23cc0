/* http/framing.h: what two HTTP parsers could frame differently, and
 * proxies (framing.c). */
#ifndef CODECELL_HTTP_FRAMING_H
#define CODECELL_HTTP_FRAMING_H

#include <microhttpd.h>

#include "http/request.h"

/* Before any body is read: refuse (400, then close) what two parsers
 * could frame differently: two Content-Length or Transfer-Encoding
 * headers, two Host headers, both at once, a transfer coding other than "chunked", white
 * space or other non-token bytes in a header name (which is how
 * libmicrohttpd 0.9.75 keeps "Content-Length : 5" and an obs-folded
 * header).  0, or -EINVAL with e set. */
int api_check_framing(struct MHD_Connection *conn, struct api_error *e);
/* The first header that says a proxy forwarded the request (Forwarded,
 * X-Forwarded-*, X-Real-IP, ...), or NULL. */
const char *api_forwarded_header(struct MHD_Connection *conn);

#endif
