/* util/resolve: a name lookup with a deadline.
 *
 * getaddrinfo() cannot be cancelled, and glibc's resolver takes as long as
 * resolv.conf allows (timeout x attempts x servers: 30 s by default, much
 * more when configured) when a server does not answer.  A caller with a
 * deadline of its own (the http tool's `timeout`, the egress proxy's
 * connect timeout) runs the lookup on a detached thread and stops waiting
 * at the deadline; the thread finishes on its own and frees what it
 * found.  Threads left behind that way are bounded by the resolver's own
 * timeouts. */
#ifndef CODECELL_UTIL_RESOLVE_H
#define CODECELL_UTIL_RESOLVE_H

#include <netdb.h>

/* Not a getaddrinfo() code: the deadline passed first. */
#define RESOLVE_TIMEOUT (-1000)

/* getaddrinfo(host, NULL, hints, ret), waiting at most timeout_ms.
 * Returns 0 with *ret (freeaddrinfo()), a getaddrinfo() code (EAI_*),
 * or RESOLVE_TIMEOUT.  When no thread can be started the lookup runs in
 * the caller, unbounded. */
int resolve_bounded(const char *host, const struct addrinfo *hints, unsigned timeout_ms,
		    struct addrinfo **ret);
/* gai_strerror(), and "timed out" for RESOLVE_TIMEOUT. */
const char *resolve_strerror(int r);

#endif
