/* sandbox/egress: the allowlist network mode (SANDBOX_NET_ALLOWLIST).
 *
 * The sandbox keeps its own network namespace with only `lo`; there is
 * no route out of it, so a direct connect fails at once with "Network is
 * unreachable".  The one way out is an HTTP proxy in codecell:
 *   - its listening socket is made INSIDE the sandbox's network namespace
 *     (a helper thread setns()es into it through the init's pidfd, then
 *     socket + bind 127.0.0.1:EGRESS_PORT + listen; a socket stays in the
 *     namespace it was made in), so code reaches it at 127.0.0.1:3128;
 *   - the connections it makes go out from codecell's own namespace,
 *     after the guard (egress_guard.h): the host must be on the policy's
 *     list, and the address actually connected to must not be loopback,
 *     private, link-local, ... unless the list names it.
 * HTTP CONNECT (https and anything tunnelled) and plain HTTP with an
 * absolute URI (forwarded in origin form, Connection: close) are served;
 * a refusal is a 403 (or 400, 502, 504) with a one-line reason.
 *
 * Bounds: EGRESS_MAX_CONNS connections at once per sandbox (more get a
 * 503), a request head of at most EGRESS_HEAD_MAX bytes read within
 * EGRESS_HEAD_TIMEOUT_S, EGRESS_BUF bytes buffered per direction,
 * a connection idle for EGRESS_IDLE_S in both directions is closed. */
#ifndef CODECELL_SANDBOX_EGRESS_H
#define CODECELL_SANDBOX_EGRESS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_PORT 3128
#define EGRESS_PROXY_URL "http://127.0.0.1:3128"
#define EGRESS_HEAD_MAX 16384
#define EGRESS_HEAD_TIMEOUT_S 30
#define EGRESS_CONNECT_TIMEOUT_S 10
#define EGRESS_IDLE_S 120
#define EGRESS_MAX_CONNS 32
#define EGRESS_BUF 16384
#define EGRESS_HOST_MAX 253
/* What a caller says after "cannot ". */
#define EGRESS_STEP "open the egress proxy inside the sandbox"

/* ---- the request head (pure; fuzzed by tests/fuzz/fuzz-egress.c) ---- */

struct egress_req {
	bool connect;			/* CONNECT host:port */
	char method[16];		/* plain HTTP: GET, POST, ... */
	char host[EGRESS_HOST_MAX + 1]; /* lower-case; an IPv6 literal without brackets */
	uint16_t port;
	/* plain HTTP: the origin form ("/path?query") in the head */
	size_t path_off, path_len;
	size_t hdr_off;	 /* the first header line */
	size_t head_len; /* through the blank line */
};

/* Parse the head of a proxy request in buf[0..len).  Returns the head's
 * length (> 0) and fills *ret; -EAGAIN: no blank line yet and len is
 * under EGRESS_HEAD_MAX; -EINVAL (or -E2BIG: too long) with a one-line
 * reason in *ret_why (static).  Only CRLF line ends, a request line of
 * METHOD SP TARGET SP HTTP/1.x, header lines "name: value" (no folding,
 * no NUL, no bare CR or LF); CONNECT's target is host:port, every other
 * method's http://host[:port][/path] (no user info; https:// must use
 * CONNECT). */
int egress_parse_head(const char *buf, size_t len, struct egress_req *ret, const char **ret_why);

/* The head sent upstream for a plain HTTP request: the request line in
 * origin form, the client's headers without Host, Connection,
 * Keep-Alive, Proxy-* and Upgrade ones, then Host: (from the URI, so
 * the name checked is the name the server sees) and Connection: close.
 * Appends to out (a buf capped by its owner): 0 or -E2BIG/-ENOMEM. */
struct buf;
int egress_rewrite(const char *head, const struct egress_req *rq, struct buf *out);

/* ---- the proxy ---- */

struct egress;
/* Start the proxy of a sandbox for the egress list `allow` (the
 * policy's "host, host:port, *.example.com" text; copied), on listen_fd
 * (taken; made by the sandbox's init with egress_listen_here()), or when
 * it is -1 on a socket made in the network namespace of the process
 * netns_pidfd (lo up), which takes root: a pooled cell's, made before
 * its session asked for the allowlist.  -EINVAL for an empty or bad
 * list, -EPERM when codecell may not enter the namespace, -errno
 * otherwise. */
int egress_start(int netns_pidfd, int listen_fd, const char *allow, struct egress **ret);
/* The proxy's socket, 127.0.0.1:EGRESS_PORT listening, in the caller's
 * network namespace: the fd (O_CLOEXEC) or -errno.  System calls only
 * (the sandbox's init calls it). */
int egress_listen_here(void);
/* Stop accepting, cut every connection, free.  Threads still resolving
 * a name finish on their own (their connect is refused).  NULL is a
 * no-op. */
void egress_stop(struct egress *e);

/* A connection the proxy decided on: what the program asked for and
 * what came of it, for the audit log.  Kept from the moment of the
 * decision (not the end of the connection), so a sandbox torn down with
 * connections open loses none. */
#define EGRESS_EVENTS_MAX 256 /* kept between two egress_take_events() */
#define EGRESS_EVENT_WHY_MAX 256
struct egress_event {
	uint64_t time_ms;		/* epoch milliseconds */
	char method[16];		/* "CONNECT", "GET", ...; "" if the head was bad */
	char host[EGRESS_HOST_MAX + 1]; /* "" if the head was bad */
	uint16_t port;
	char address[48];		/* the address connected to, or "" */
	int status;			/* 200: connected; else the proxy's answer */
	char why[EGRESS_EVENT_WHY_MAX]; /* a refusal's reason, or "" */
};
/* The connections decided since the last call, oldest first: *ret
 * (free(); NULL when none) and *ret_n; *ret_dropped: how many more there
 * were than EGRESS_EVENTS_MAX (not kept).  0 or -ENOMEM.  e NULL: none. */
int egress_take_events(struct egress *e, struct egress_event **ret, size_t *ret_n,
		       uint64_t *ret_dropped);

/* The variables set inside a sandbox with the allowlist network
 * (NULL-terminated, static): HTTP_PROXY, HTTPS_PROXY, http_proxy,
 * https_proxy, ALL_PROXY, all_proxy, NO_PROXY, no_proxy. */
extern const char *const egress_env[];

#endif
