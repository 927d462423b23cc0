/* engine/tool_http: the http tool.  One request through libcurl to a host
 * the policy's http.hosts allows, with an SSRF guard on the address
 * actually connected to (util/netguard.h has the rule):
 *
 * - the host of every hop (the URL, then each redirect, followed here with
 *   curl's FOLLOWLOCATION off) is checked against the list; a name is
 *   resolved here (getaddrinfo) and every address it has is checked;
 * - curl is given exactly the checked addresses (CURLOPT_RESOLVE), and
 *   its open-socket callback refuses any other address, so a DNS answer
 *   that changes between the check and the connect (rebinding) cannot
 *   move the connection, and no proxy from the environment is used;
 * - the [host NAME] headers of the policy are added for that host only,
 *   after the caller's (which cannot replace them), and every secret
 *   value is redacted from the result and the messages: the raw body
 *   before it is decoded, then the whole result as JSON text.
 *
 * Everything the server sends is untrusted: the body is capped at the
 * policy's http.max_response (the rest dropped, "truncated": true), the
 * headers at HTTP_RESP_HEADERS_MAX, the redirects at HTTP_REDIRECTS_MAX.
 * The cap is applied after redaction, not before: the body is read up to
 * the longest secret's length past it, a secret across the cut is
 * redacted whole, so no cut leaves the beginning of one.  Nothing is
 * redacted for being like the beginning of a secret: that test would
 * answer a caller's guesses one byte at a time.  A URL quoted in a
 * message is redacted first and cut at 200 bytes after (quoted()). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "engine/tool.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/curl.h"
#include "util/macro.h"
#include "util/netguard.h"
#include "util/resolve.h"
#include "util/utf8.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define HTTP_URL_MAX 8192
#define HTTP_HEADERS_MAX 64	 /* headers a caller may send */
#define HTTP_HEADER_MAX 8192	 /* bytes of one of them */
#define HTTP_BODY_MAX (8u << 20) /* bytes of a request body */
#define HTTP_RESP_HEADERS_MAX (64u << 10)
#define HTTP_REDIRECTS_MAX 5
#define HTTP_RETRIES 2		/* more attempts of an idempotent request */
#define HTTP_RETRY_DELAY_S 0.25 /* doubled each attempt */
#define HTTP_RETRY_AFTER_MAX_S 10.0
#define HTTP_TIMEOUT_DEFAULT_S 30.0
#define HTTP_TIMEOUT_MAX_S 300.0
#define HTTP_CONNECT_TIMEOUT_MAX_MS 10000L
#define HTTP_ADDRS_MAX 16 /* addresses of one name */
#define HTTP_SECRETS_MAX 256
#define REDACTED "[REDACTED]"

static const struct curl_fns *cc;

/* ---- secrets ---- */

struct secrets {
	const char *v[HTTP_SECRETS_MAX];
	size_t len[HTTP_SECRETS_MAX];
	size_t n;
};

static void secret_add(struct secrets *s, const char *v, size_t len)
{
	if (s->n < HTTP_SECRETS_MAX) {
		s->v[s->n] = v;
		s->len[s->n++] = len;
	}
}

/* Every [host NAME] header's value (4 bytes or more), and each word of it
 * of 8 bytes or more ("Bearer TOKEN": the token alone too), whatever the
 * host: a server may echo another host's secret it got by a redirect. */
static void secrets_collect(const struct engine_policies *ps, struct secrets *s)
{
	s->n = 0;
	for (size_t i = 0; ps && i < ps->n_hosts; i++)
		for (size_t j = 0; j < ps->hosts[i].n_headers; j++) {
			const char *v = strchr(ps->hosts[i].headers[j], ':') + 1;
			size_t len;

			v += strspn(v, " \t");
			len = strlen(v);
			while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
				len--;
			if (len >= 4)
				secret_add(s, v, len);
			for (size_t k = 0; k < len;) {
				size_t w = strcspn(v + k, " \t");

				if (w > len - k)
					w = len - k;
				if (w >= 8 && w < len)
					secret_add(s, v + k, w);
				k += w + 1;
			}
		}
}

/* Replace every secret in b.  Returns 0 or -ENOMEM/-E2BIG. */
static int redact(const struct secrets *s, struct buf *b)
{
	for (size_t i = 0; i < s->n; i++) {
		const char *p = b->data, *end = b->data + b->len, *hit;
		struct buf out;
		int r = 0;

		if (!b->len || !memmem(p, b->len, s->v[i], s->len[i]))
			continue;
		buf_init(&out, b->len * 2 + sizeof(REDACTED));
		while (r == 0 && (hit = memmem(p, (size_t)(end - p), s->v[i], s->len[i]))) {
			r = buf_append(&out, p, (size_t)(hit - p));
			if (r == 0)
				r = buf_puts(&out, REDACTED);
			p = hit + s->len[i];
		}
		if (r == 0)
			r = buf_append(&out, p, (size_t)(end - p));
		if (r < 0) {
			buf_release(&out);
			return r;
		}
		buf_release(b);
		b->data = out.data;
		b->len = out.len;
		b->alloc = out.alloc;
		b->max = out.max > b->max ? out.max : b->max;
	}
	return 0;
}

/* The longest secret's length. */
static size_t secrets_longest(const struct secrets *s)
{
	size_t m = 0;

	for (size_t i = 0; i < s->n; i++)
		m = s->len[i] > m ? s->len[i] : m;
	return m;
}

/* The call's secrets, for quoted() (set by http_call for its thread). */
static __thread const struct secrets *t_secrets;

#define QUOTE_MAX 200 /* bytes of a URL or a host name quoted in a message */

/* text as a message quotes it: whole secrets redacted first, then cut
 * at QUOTE_MAX bytes (at a character's start).  Redacting before the cut
 * leaves no beginning of a secret at it, whatever the text: a URL may be
 * the caller's, or a redirect's that a server chose.  Returns out. */
static const char *quoted(const char *text, char *out, size_t n)
{
	struct buf b;
	size_t k;

	buf_init(&b, strlen(text) + 1 + (t_secrets ? t_secrets->n : 0) * sizeof(REDACTED));
	if (buf_puts(&b, text) < 0 || (t_secrets && redact(t_secrets, &b) < 0)) {
		buf_release(&b);
		snprintf(out, n, "(a URL that could not be redacted)");
		return out;
	}
	k = b.len < QUOTE_MAX ? b.len : QUOTE_MAX;
	while (k < b.len && k && ((unsigned char)b.data[k] & 0xc0) == 0x80)
		k--;
	snprintf(out, n, "%.*s", (int)k, b.data ? b.data : "");
	buf_release(&b);
	return out;
}

/* The body as the result gets it: cut at cap (it holds up to the
 * longest secret's length more, so a secret across the cut is there
 * whole), the cut moved past any secret across it, then redacted. */
static int redact_body(const struct secrets *s, struct buf *b, size_t cap, bool *truncated)
{
	size_t cut = cap;

	if (b->len > cap) {
		*truncated = true;
		for (bool grew = true; grew;) {
			grew = false;
			for (size_t i = 0; i < s->n; i++) {
				size_t from = cut >= s->len[i] ? cut - s->len[i] + 1 : 0;
				const char *hit;

				if (from >= b->len || !(hit = memmem(b->data + from, b->len - from,
								     s->v[i], s->len[i])))
					continue;
				if ((size_t)(hit - b->data) < cut &&
				    (size_t)(hit - b->data) + s->len[i] > cut) {
					cut = (size_t)(hit - b->data) + s->len[i];
					grew = true;
				}
			}
		}
		b->len = cut;
	}
	return redact(s, b);
}

/* A message, redacted, into msg. */
static int say(const struct secrets *s, char *msg, size_t n, int r, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int say(const struct secrets *s, char *msg, size_t n, int r, const char *fmt, ...)
{
	struct buf b;
	va_list ap;
	char tmp[TOOL_MSG_MAX];

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	buf_init(&b, sizeof(tmp) * 4);
	if (buf_puts(&b, tmp) < 0 || redact(s, &b) < 0)
		snprintf(msg, n, "the message could not be redacted");
	else
		snprintf(msg, n, "%s", buf_str(&b));
	buf_release(&b);
	return r;
}

/* ---- the arguments ---- */

struct request {
	const char *method;
	char *url;	 /* the current hop's, owned */
	json_t *headers; /* the caller's, borrowed; NULL: none */
	char *body;	 /* owned; NULL: none */
	size_t body_len;
	bool body_json;
	double timeout_s;
	uint64_t deadline_ns;
	bool drop_credentials; /* a redirect changed the origin */
};

static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" };

/* RFC 9110's idempotent methods: sent again after a failure */
static bool idempotent(const char *m)
{
	return strcmp(m, "POST") && strcmp(m, "PATCH");
}

/* Headers curl or the guard own: a caller's Host would send one host's
 * secrets to a name the check never saw; the framing ones would let a
 * caller smuggle a second request. */
static bool header_reserved(const char *name)
{
	static const char *const r[] = { "host",
					 "content-length",
					 "transfer-encoding",
					 "connection",
					 "upgrade",
					 "expect",
					 "te",
					 "keep-alive",
					 "proxy-authorization",
					 "proxy-connection",
					 "trailer" };

	for (size_t i = 0; i < ARRAY_SIZE(r); i++)
		if (!strcasecmp(name, r[i]))
			return true;
	return false;
}

static bool token_ok(const char *s)
{
	size_t n = strspn(
		s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~");

	return n > 0 && !s[n];
}

static int check_headers(json_t *h, char *msg, size_t n)
{
	const char *k;
	json_t *v;

	if (!json_is_object(h))
		return snprintf(msg, n, "'headers' must be an object of strings"), -EINVAL;
	if (json_object_size(h) > HTTP_HEADERS_MAX)
		return snprintf(msg, n, "at most %d headers", HTTP_HEADERS_MAX), -EINVAL;
	json_object_foreach (h, k, v) {
		const char *s = json_string_value(v);

		if (!token_ok(k) || strlen(k) > 256)
			return snprintf(msg, n, "header '%.64s': not a header name", k), -EINVAL;
		if (header_reserved(k))
			return snprintf(msg, n, "header '%s' is set by the tool, not the caller",
					k),
			       -EINVAL;
		if (!s || strlen(s) > HTTP_HEADER_MAX || strpbrk(s, "\r\n") ||
		    json_string_length(v) != strlen(s))
			return snprintf(msg, n,
					"header '%.64s': the value must be a string of at most %d "
					"bytes without line breaks",
					k, HTTP_HEADER_MAX),
			       -EINVAL;
	}
	return 0;
}

static int parse_body(json_t *b, struct request *req, char *msg, size_t n)
{
	if (!b || json_is_null(b))
		return 0;
	if (json_is_string(b)) {
		req->body_len = json_string_length(b);
		req->body = malloc(req->body_len + 1);
		if (req->body)
			memcpy(req->body, json_string_value(b), req->body_len + 1);
	} else {
		req->body = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
		req->body_len = req->body ? strlen(req->body) : 0;
		req->body_json = true;
	}
	if (!req->body)
		return snprintf(msg, n, "out of memory"), -ENOMEM;
	if (req->body_len > HTTP_BODY_MAX)
		return snprintf(msg, n, "the body is over %u MiB", HTTP_BODY_MAX >> 20), -EINVAL;
	return 0;
}

static int parse_args(json_t *args, struct request *req, char *msg, size_t n)
{
	static const char *const keys[] = { "method", "url", "headers", "body", "timeout" };
	json_t *m = json_object_get(args, "method"), *u = json_object_get(args, "url"),
	       *t = json_object_get(args, "timeout");
	const char *k;
	json_t *v;
	int r;

	if (!json_is_object(args))
		return snprintf(msg, n, "the arguments must be an object"), -EINVAL;
	json_object_foreach (args, k, v) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(keys) && strcmp(k, keys[i]); i++)
			;
		if (i == ARRAY_SIZE(keys))
			return snprintf(msg, n,
					"unknown argument '%.64s' (known: method, url, headers, "
					"body, timeout)",
					k),
			       -EINVAL;
	}
	req->method = "GET";
	if (m) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(methods); i++)
			if (json_is_string(m) && !strcmp(json_string_value(m), methods[i]))
				break;
		if (i == ARRAY_SIZE(methods))
			return snprintf(
				       msg, n,
				       "'method' must be one of GET, HEAD, POST, PUT, PATCH, DELETE, "
				       "OPTIONS"),
			       -EINVAL;
		req->method = methods[i];
	}
	if (!json_is_string(u) || !json_string_length(u) || json_string_length(u) > HTTP_URL_MAX ||
	    strlen(json_string_value(u)) != json_string_length(u))
		return snprintf(msg, n,
				"'url' must be an http:// or https:// URL of at most %d bytes",
				HTTP_URL_MAX),
		       -EINVAL;
	if (!(req->url = strdup(json_string_value(u))))
		return snprintf(msg, n, "out of memory"), -ENOMEM;
	req->timeout_s = HTTP_TIMEOUT_DEFAULT_S;
	if (t) {
		double d = json_number_value(t);

		if (!json_is_number(t) || !(d > 0) || d > HTTP_TIMEOUT_MAX_S)
			return snprintf(msg, n,
					"'timeout' must be a number of seconds above 0 and at most "
					"%g",
					HTTP_TIMEOUT_MAX_S),
			       -EINVAL;
		req->timeout_s = d;
	}
	req->headers = json_object_get(args, "headers");
	if (req->headers && (r = check_headers(req->headers, msg, n)) < 0)
		return r;
	if (!strcmp(req->method, "HEAD") && json_object_get(args, "body") &&
	    !json_is_null(json_object_get(args, "body")))
		return snprintf(msg, n, "a HEAD request has no body"), -EINVAL;
	return parse_body(json_object_get(args, "body"), req, msg, n);
}

/* ---- one hop's target: parsed, allowed, resolved, checked ---- */

struct target {
	char *scheme, *host; /* curl's, curl_free them */
	unsigned port;
	struct sockaddr_storage addrs[HTTP_ADDRS_MAX];
	size_t n_addrs;
	char resolve[HTTP_ADDRS_MAX * (NETGUARD_ADDR_STRLEN + 3) + NETGUARD_HOST_MAX + 16];
	bool literal;
	struct sockaddr_storage lit; /* literal: the address, parsed here */
	bool refused_socket;	     /* curl asked for an address not checked */
};

static void target_release(struct target *t)
{
	if (t->scheme)
		cc->free(t->scheme);
	if (t->host)
		cc->free(t->host);
	t->scheme = t->host = NULL;
}

/* The URL's parts, with an IP literal host rewritten in its one canonical
 * form so that curl connects to what was checked. */
static int target_parse(struct request *req, struct target *t, char *why, size_t n)
{
	char q[QUOTE_MAX + 8];
	CURLU *u = cc->url();
	char *port = NULL, *user = NULL, *zone = NULL, *url = NULL, *end;
	struct sockaddr_storage *ss = &t->lit;
	unsigned long pn;
	socklen_t len;
	int r = -EINVAL;

	if (!u)
		return snprintf(why, n, "out of memory"), -ENOMEM;
	if (cc->url_set(u, CURLUPART_URL, req->url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    cc->url_get(u, CURLUPART_SCHEME, &t->scheme, 0) != CURLUE_OK ||
	    cc->url_get(u, CURLUPART_HOST, &t->host, 0) != CURLUE_OK ||
	    cc->url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		snprintf(why, n, "'%s' is not a URL: expected http://HOST[:PORT]/PATH",
			 quoted(req->url, q, sizeof(q)));
		goto out;
	}
	if (strcmp(t->scheme, "http") && strcmp(t->scheme, "https")) {
		snprintf(why, n, "'%s': only http and https URLs", quoted(req->url, q, sizeof(q)));
		goto out;
	}
	if (cc->url_get(u, CURLUPART_ZONEID, &zone, 0) == CURLUE_OK) {
		snprintf(why, n, "'%s': a zone id names an interface of this host: refused",
			 quoted(req->url, q, sizeof(q)));
		r = -EPERM;
		goto out;
	}
	if (cc->url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		snprintf(why, n,
			 "'%s': no credentials in the URL (the policy's [host NAME] "
			 "headers hold them)",
			 quoted(req->url, q, sizeof(q)));
		goto out;
	}
	pn = strtoul(port, &end, 10);
	if (*end || pn < 1 || pn > 65535) {
		snprintf(why, n, "'%s': the port is 1 to 65535", quoted(req->url, q, sizeof(q)));
		goto out;
	}
	t->port = (unsigned)pn;
	r = netguard_parse_ip(t->host, ss, &len);
	if (r == -ERANGE) {
		snprintf(why, n, "'%s': a malformed IP address", quoted(req->url, q, sizeof(q)));
		r = -EPERM;
		goto out;
	}
	t->literal = r == 0;
	r = 0;
	if (t->literal) {
		char text[NETGUARD_ADDR_STRLEN + 2], canon[NETGUARD_ADDR_STRLEN];

		netguard_format((struct sockaddr *)ss, canon, sizeof(canon));
		snprintf(text, sizeof(text), ss->ss_family == AF_INET6 ? "[%s]" : "%s", canon);
		if (cc->url_set(u, CURLUPART_HOST, text, 0) != CURLUE_OK ||
		    cc->url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
			snprintf(why, n, "out of memory");
			r = -ENOMEM;
			goto out;
		}
		free(req->url);
		req->url = strdup(url);
		if (!req->url)
			r = -ENOMEM;
	}
out:
	if (port)
		cc->free(port);
	if (user)
		cc->free(user);
	if (zone)
		cc->free(zone);
	if (url)
		cc->free(url);
	cc->url_cleanup(u);
	return r;
}

/* The host as netguard and getaddrinfo take it: no IPv6 brackets. */
static void bare_host(const char *host, char *out, size_t n)
{
	size_t len = strlen(host);

	if (host[0] == '[' && len >= 2 && host[len - 1] == ']')
		snprintf(out, n, "%.*s", (int)(len - 2), host + 1);
	else
		snprintf(out, n, "%s", host);
}

/* Looked up within what is left of the call's timeout (deadline_ns,
 * CLOCK_MONOTONIC): the resolver's own timeouts can be far longer. */
static int target_resolve(const struct netguard_list *l, struct target *t, uint64_t deadline_ns,
			  char *why, size_t n)
{
	char q[QUOTE_MAX + 8];
	uint64_t now = now_ns();
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	char host[NETGUARD_HOST_MAX + 8], text[NETGUARD_ADDR_STRLEN];
	struct buf rs;
	int r;

	bare_host(t->host, host, sizeof(host));
	/* the name first: a host not listed is never looked up */
	if (netguard_check(l, t->host, t->port, NULL, why, n) < 0)
		return -EPERM;
	if (t->literal) {
		/* the address this file parsed, not glibc's reading of it */
		if (netguard_check(l, t->host, t->port, (struct sockaddr *)&t->lit, why, n) < 0)
			return -EPERM;
		t->addrs[0] = t->lit;
		t->n_addrs = 1;
		return 0;
	}
	r = resolve_bounded(
		host, &hints,
		deadline_ns > now ? (unsigned)((deadline_ns - now + 999999) / 1000000) : 0, &res);
	if (r != 0)
		return snprintf(why, n, "cannot resolve '%s': %s", quoted(host, q, sizeof(q)),
				resolve_strerror(r)),
		       -EHOSTUNREACH;
	t->n_addrs = 0;
	buf_init(&rs, sizeof(t->resolve) - 1);
	(void)buf_printf(&rs, "%s:%u:", t->host, t->port);
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    a->ai_addrlen > sizeof(t->addrs[0]))
			continue;
		/* every address, not the first: the one curl connects to is
		 * any of them */
		if (netguard_check(l, t->host, t->port, a->ai_addr, why, n) < 0) {
			r = -EPERM;
			break;
		}
		if (t->n_addrs == HTTP_ADDRS_MAX)
			continue;
		memcpy(&t->addrs[t->n_addrs], a->ai_addr, a->ai_addrlen);
		netguard_format(a->ai_addr, text, sizeof(text));
		(void)buf_printf(&rs, strchr(text, ':') ? "%s[%s]" : "%s%s", t->n_addrs ? "," : "",
				 text);
		t->n_addrs++;
	}
	freeaddrinfo(res);
	if (r == 0 && !t->n_addrs)
		r = -EHOSTUNREACH,
		snprintf(why, n, "'%s' has no IPv4 or IPv6 address", quoted(host, q, sizeof(q)));
	snprintf(t->resolve, sizeof(t->resolve), "%s", buf_str(&rs));
	buf_release(&rs);
	return r;
}

/* Is sa one of the checked addresses, on the checked port? */
static bool target_has(const struct target *t, const struct sockaddr *sa)
{
	char a[NETGUARD_ADDR_STRLEN], b[NETGUARD_ADDR_STRLEN];
	unsigned port;

	if (sa->sa_family == AF_INET)
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	else if (sa->sa_family == AF_INET6)
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	else
		return false;
	if (port != t->port)
		return false;
	netguard_format(sa, a, sizeof(a));
	for (size_t i = 0; i < t->n_addrs; i++)
		if (!strcmp(a,
			    netguard_format((const struct sockaddr *)&t->addrs[i], b, sizeof(b))))
			return true;
	return false;
}

/* The last line of the guard: whatever curl resolved or was told, it
 * gets a socket only for an address this file checked. */
static curl_socket_t open_socket(void *userdata, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct target *t = userdata;

	if (purpose != CURLSOCKTYPE_IPCXN || !target_has(t, &a->addr)) {
		t->refused_socket = true;
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* ---- one attempt ---- */

struct response {
	long status;
	struct buf body, headers;
	bool truncated;
	char *location; /* owned */
	double retry_after;
	char *primary_ip; /* the address connected to (curl's), owned */
};

struct attempt_ctx {
	struct response *resp;
	const int *stop_flag;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *userdata)
{
	struct response *r = userdata;
	size_t len = size * nmemb, room = r->body.max - r->body.len;

	if (len <= room)
		return buf_append(&r->body, p, len) < 0 ? 0 : len;
	/* keep what fits; the short count stops the transfer */
	(void)buf_append(&r->body, p, room);
	r->truncated = true;
	return 0;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *userdata)
{
	struct response *r = userdata;
	size_t len = size * nmemb;

	/* a new status line: an interim (1xx) response's headers go */
	if (len >= 5 && !memcmp(p, "HTTP/", 5))
		buf_reset(&r->headers);
	(void)buf_append(&r->headers, p, len); /* past the cap: dropped */
	if (len > 12 && len < 40 && !strncasecmp(p, "retry-after:", 12)) {
		char num[32], *end;
		double v;

		memcpy(num, p + 12, len - 12);
		num[len - 12] = '\0';
		v = strtod(num, &end);
		if (end != num && v >= 0 && isfinite(v))
			r->retry_after = v;
	}
	return len;
}

static int on_progress(void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const int *stop = userdata;

	(void)dt, (void)dn, (void)ut, (void)un;
	return stop && __atomic_load_n(stop, __ATOMIC_SEQ_CST) ? 1 : 0;
}

static bool has_header(json_t *h, const char *name)
{
	const char *k;
	json_t *v;

	json_object_foreach (h, k, v)
		if (!strcasecmp(k, name))
			return true;
	return false;
}

static bool secret_header(const struct engine_host *host, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; host && i < host->n_headers; i++)
		if (!strncasecmp(host->headers[i], name, len) && host->headers[i][len] == ':')
			return true;
	return false;
}

/* The caller's headers (less those a [host] section sets, and after a
 * redirect to another origin its credentials), then the host's. */
static struct curl_slist *build_headers(const struct request *req, const struct engine_host *host)
{
	struct curl_slist *l = cc->slist_append(NULL, "Expect:"), *n;
	const char *k;
	json_t *v;

	json_object_foreach (req->headers, k, v) {
		char *line;

		if (!l || secret_header(host, k))
			continue;
		if (req->drop_credentials &&
		    (!strcasecmp(k, "authorization") || !strcasecmp(k, "cookie")))
			continue;
		if (asprintf(&line, *json_string_value(v) ? "%s: %s" : "%s;", k,
			     json_string_value(v)) < 0)
			goto fail;
		n = cc->slist_append(l, line);
		free(line);
		if (!n)
			goto fail;
		l = n;
	}
	if (l && req->body_json && !has_header(req->headers, "content-type") &&
	    !(l = cc->slist_append(l, "Content-Type: application/json")))
		return NULL;
	for (size_t i = 0; l && host && i < host->n_headers; i++)
		if (!(n = cc->slist_append(l, host->headers[i])))
			goto fail;
		else
			l = n;
	return l;
fail:
	cc->slist_free_all(l);
	return NULL;
}

static void set_method(CURL *h, const struct request *req)
{
	if (!strcmp(req->method, "HEAD")) {
		cc->easy_setopt(h, CURLOPT_NOBODY, 1L);
		return;
	}
	if (!strcmp(req->method, "GET") && !req->body) {
		cc->easy_setopt(h, CURLOPT_HTTPGET, 1L);
		return;
	}
	if (strcmp(req->method, "POST"))
		cc->easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->body || strcmp(req->method, "GET")) {
		cc->easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		cc->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
}

static long remaining_ms(const struct request *req)
{
	uint64_t now = now_ns();

	return now >= req->deadline_ns ? 0 : (long)((req->deadline_ns - now) / 1000000) + 1;
}

/* One request to the checked target.  CURLE_OK or curl's error. */
static CURLcode perform(const struct request *req, struct target *t, const struct engine_host *host,
			struct response *resp, const int *stop)
{
	struct curl_slist *resolve = NULL, *headers = NULL;
	long ms = remaining_ms(req);
	char *loc = NULL;
	CURLcode c = CURLE_OUT_OF_MEMORY;
	CURL *h = cc->easy_init();

	buf_reset(&resp->body);
	buf_reset(&resp->headers);
	resp->truncated = false;
	resp->retry_after = -1;
	resp->status = 0;
	free(resp->location);
	resp->location = NULL;
	free(resp->primary_ip);
	resp->primary_ip = NULL;
	if (!h || !(headers = build_headers(req, host)))
		goto out;
	if (!t->literal && !(resolve = cc->slist_append(NULL, t->resolve)))
		goto out;
	cc->easy_setopt(h, CURLOPT_URL, req->url);
	cc->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	cc->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	cc->easy_setopt(h, CURLOPT_PROXY, ""); /* never http_proxy from the environment */
	cc->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (resolve)
		cc->easy_setopt(h, CURLOPT_RESOLVE, resolve);
	cc->easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	cc->easy_setopt(h, CURLOPT_OPENSOCKETDATA, t);
	cc->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	cc->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* the cap counts decoded bytes */
	set_method(h, req);
	cc->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	cc->easy_setopt(h, CURLOPT_WRITEDATA, resp);
	cc->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	cc->easy_setopt(h, CURLOPT_HEADERDATA, resp);
	cc->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	cc->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	cc->easy_setopt(h, CURLOPT_XFERINFODATA, stop);
	cc->easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
	cc->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			ms < HTTP_CONNECT_TIMEOUT_MAX_MS ? ms : HTTP_CONNECT_TIMEOUT_MAX_MS);
	c = cc->easy_perform(h);
	if (c == CURLE_WRITE_ERROR && resp->truncated)
		c = CURLE_OK;
	if (c == CURLE_OK) {
		char *ip = NULL;

		if (cc->easy_getinfo(h, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip)
			resp->primary_ip = strdup(ip);
		cc->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
		if (cc->easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK && loc)
			resp->location = strdup(loc);
	}
out:
	if (h)
		cc->easy_cleanup(h);
	if (resolve)
		cc->slist_free_all(resolve);
	if (headers)
		cc->slist_free_all(headers);
	return c;
}

/* ---- the result ---- */

static json_t *error_result(const char *name, const char *value)
{
	return json_pack("{s:{s:s,s:s}}", "error", "name", name, "value", value);
}

static json_t *headers_json(const struct buf *raw)
{
	json_t *o = json_object();
	const char *s = buf_str(raw);

	while (o && *s) {
		size_t len = strcspn(s, "\r\n"), nl;
		const char *colon = memchr(s, ':', len);

		if (colon && colon > s && memcmp(s, "HTTP/", 5)) {
			char name[128];
			size_t nlen = (size_t)(colon - s), vstart = nlen + 1, vend = len;
			json_t *old;
			char *val;

			while (vstart < len && (s[vstart] == ' ' || s[vstart] == '\t'))
				vstart++;
			while (vend > vstart && (s[vend - 1] == ' ' || s[vend - 1] == '\t'))
				vend--;
			if (nlen < sizeof(name)) {
				for (size_t i = 0; i < nlen; i++)
					name[i] = (char)tolower((unsigned char)s[i]);
				name[nlen] = '\0';
				old = json_object_get(o, name);
				if (asprintf(&val, "%s%s%.*s", old ? json_string_value(old) : "",
					     old ? ", " : "", (int)(vend - vstart),
					     s + vstart) >= 0) {
					/* NULL (not UTF-8): the header is left out */
					json_object_set_new(o, name, json_string(val));
					free(val);
				}
			}
		}
		s += len;
		nl = strspn(s, "\r\n");
		s += nl;
	}
	return o;
}

static bool is_json_type(json_t *headers)
{
	const char *ct = json_string_value(json_object_get(headers, "content-type"));
	size_t n;

	if (!ct)
		return false;
	n = strcspn(ct, ";");
	while (n && ct[n - 1] == ' ')
		n--;
	return (n == 16 && !strncasecmp(ct, "application/json", 16)) ||
	       (n == 9 && !strncasecmp(ct, "text/json", 9)) ||
	       (n > 5 && !strncasecmp(ct + n - 5, "+json", 5));
}

/* The body as JSON (a JSON content type that parses), text (UTF-8
 * without NUL) or base64. */
static int body_json(json_t *res, json_t *headers, const struct buf *b)
{
	const char *p = b->data ? b->data : "";
	uint64_t bad;
	char *enc;

	if (is_json_type(headers)) {
		json_t *j = json_loadb(p, b->len, JSON_DECODE_ANY, NULL);

		if (j)
			return json_object_set_new(res, "json", j);
	}
	if (!memchr(p, '\0', b->len) && utf8_valid(p, b->len, &bad))
		return json_object_set_new(res, "text", json_stringn(p, b->len));
	if (!(enc = base64_encode(p, b->len)))
		return -ENOMEM;
	json_object_set_new(res, "base64", json_string(enc));
	free(enc);
	return 0;
}

static json_t *response_json(const struct request *req, const struct response *resp, unsigned hops,
			     unsigned attempts)
{
	json_t *res = json_object(), *h = headers_json(&resp->headers);

	if (!res || !h || body_json(res, h, &resp->body) < 0) {
		json_decref(res);
		json_decref(h);
		return NULL;
	}
	json_object_set_new(res, "status", json_integer(resp->status));
	json_object_set_new(res, "url", json_string(req->url));
	json_object_set_new(res, "headers", h);
	json_object_set_new(res, "bytes", json_integer((json_int_t)resp->body.len));
	json_object_set_new(res, "truncated", json_boolean(resp->truncated));
	json_object_set_new(res, "redirects", json_integer(hops));
	json_object_set_new(res, "attempts", json_integer(attempts));
	if (resp->primary_ip)
		json_object_set_new(res, "address", json_string(resp->primary_ip));
	return res;
}

/* The whole result once more as text, every secret replaced. */
static int redact_json(const struct secrets *s, json_t **res)
{
	char *text = json_dumps(*res, JSON_COMPACT | JSON_ENCODE_ANY);
	struct buf b;
	json_t *j;

	if (!text)
		return -ENOMEM;
	buf_init(&b, SIZE_MAX >> 1);
	b.data = text;
	b.len = strlen(text);
	b.alloc = b.len + 1;
	if (redact(s, &b) < 0) {
		buf_release(&b);
		return -ENOMEM;
	}
	j = json_loadb(b.data, b.len, JSON_DECODE_ANY, NULL);
	buf_release(&b);
	if (!j)
		return -EIO; /* a secret that spans JSON syntax: refuse to answer */
	json_decref(*res);
	*res = j;
	return 0;
}

/* ---- the call ---- */

static bool retryable(CURLcode c, long status)
{
	if (c != CURLE_OK)
		return c == CURLE_COULDNT_CONNECT || c == CURLE_GOT_NOTHING ||
		       c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR;
	return status == 429 || status == 502 || status == 503 || status == 504;
}

static bool pause_for(double delay_s, const struct request *req, const int *stop)
{
	while (delay_s > 0) {
		double d = delay_s < 0.05 ? delay_s : 0.05;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(d * 1e9) };

		if ((stop && __atomic_load_n(stop, __ATOMIC_SEQ_CST)) || !remaining_ms(req))
			return false;
		nanosleep(&ts, NULL);
		delay_s -= d;
	}
	return true;
}

/* A transport error as a result the caller can act on. */
static json_t *transport_result(CURLcode c, const struct request *req, const struct target *t)
{
	char q[QUOTE_MAX + 8];
	char m[TOOL_MSG_MAX];

	switch (c) {
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(m, sizeof(m),
			 "no complete response from '%s' within %g s: raise 'timeout'",
			 quoted(req->url, q, sizeof(q)), req->timeout_s);
		return error_result("Timeout", m);
	case CURLE_ABORTED_BY_CALLBACK:
		return error_result("Stopped", "the call was stopped");
	case CURLE_COULDNT_CONNECT:
		if (t->refused_socket) {
			snprintf(m, sizeof(m),
				 "'%s': curl asked for an address that was not checked: "
				 "refused",
				 quoted(req->url, q, sizeof(q)));
			return error_result("Refused", m);
		}
		snprintf(m, sizeof(m), "cannot connect to '%s': %s", quoted(req->url, q, sizeof(q)),
			 cc->easy_strerror(c));
		return error_result("ConnectionError", m);
	default:
		snprintf(m, sizeof(m), "'%s': %s", quoted(req->url, q, sizeof(q)),
			 cc->easy_strerror(c));
		return error_result(c == CURLE_PEER_FAILED_VERIFICATION ||
						    c == CURLE_SSL_CONNECT_ERROR
					    ? "TLSError"
					    : "ConnectionError",
				    m);
	}
}

/* Attempts at one hop: again after a failure or 429/5xx when the method
 * is idempotent, with backoff, within the deadline. */
static CURLcode attempts(const struct request *req, struct target *t,
			 const struct engine_host *host, struct response *resp, const int *stop,
			 unsigned *ret_n)
{
	CURLcode c;

	for (unsigned a = 1;; a++) {
		double delay = HTTP_RETRY_DELAY_S * pow(2.0, a - 1);

		*ret_n = a;
		c = perform(req, t, host, resp, stop);
		if (a > HTTP_RETRIES || !idempotent(req->method) || !retryable(c, resp->status) ||
		    t->refused_socket)
			return c;
		if (resp->retry_after >= 0)
			delay = resp->retry_after;
		if (delay > HTTP_RETRY_AFTER_MAX_S || delay * 1000 >= remaining_ms(req))
			return c;
		if (!pause_for(delay, req, stop))
			return c;
	}
}

/* The next hop of a 3xx response, or false: this one is the answer. */
static bool redirect(struct request *req, struct response *resp)
{
	long s = resp->status;

	if (!resp->location || (s != 301 && s != 302 && s != 303 && s != 307 && s != 308))
		return false;
	free(req->url);
	req->url = resp->location;
	resp->location = NULL;
	/* what browsers and curl do: 303 and a POST's 301/302 become GET */
	if ((s == 303 && strcmp(req->method, "HEAD")) ||
	    ((s == 301 || s == 302) && !strcmp(req->method, "POST"))) {
		req->method = "GET";
		free(req->body);
		req->body = NULL;
		req->body_len = 0;
	}
	return true;
}

static bool same_origin(const struct target *a, const struct target *b)
{
	return !strcmp(a->scheme, b->scheme) && !strcasecmp(a->host, b->host) && a->port == b->port;
}

static int http_call(const struct engine_tool_ctx *ctx, json_t *args, json_t **ret, char *msg,
		     size_t n)
{
	char q[QUOTE_MAX + 8];
	const struct engine_policy *pol = ctx && ctx->client ? ctx->client->policy : NULL;
	struct request req = { 0 };
	struct response resp = { 0 };
	struct target t = { 0 }, prev = { 0 };
	struct secrets s;
	json_t *res = NULL;
	unsigned hops = 0, tries = 0;
	char why[TOOL_MSG_MAX];
	int r;

	secrets_collect(ctx ? ctx->policies : NULL, &s);
	t_secrets = &s;
	if ((r = parse_args(args, &req, why, sizeof(why))) < 0) {
		say(&s, msg, n, r, "%s", why);
		goto out;
	}
	if (!pol || !pol->http_hosts.n) {
		r = say(&s, msg, n, -EPERM,
			"the policy allows the http tool no host: add "
			"'http.hosts = HOST, ...' to it");
		goto out;
	}
	if ((r = curl_fns_load(&cc, why, sizeof(why))) < 0) {
		say(&s, msg, n, r, "%s", why);
		goto out;
	}
	req.deadline_ns = now_ns() + (uint64_t)(req.timeout_s * 1e9);
	/* past the cap by the longest secret: one across the cut is seen
	 * whole (redact_body) */
	buf_init(&resp.body, pol->http_max_response + secrets_longest(&s));
	buf_init(&resp.headers, HTTP_RESP_HEADERS_MAX);
	for (;;) {
		CURLcode c;

		if ((r = target_parse(&req, &t, why, sizeof(why))) < 0 ||
		    (r = target_resolve(&pol->http_hosts, &t, req.deadline_ns, why, sizeof(why))) <
			    0) {
			if (r == -EHOSTUNREACH) {
				res = error_result("ConnectionError", why);
				r = 0;
				break;
			}
			r = say(&s, msg, n, r == -EINVAL && !hops ? -EINVAL : -EPERM, "%s%s%s",
				hops ? "a redirect: " : "", why,
				r == -EPERM ? " (the policy's http.hosts)" : "");
			goto out;
		}
		/* the [host] headers would go out in clear text */
		if (hops && prev.scheme && !strcmp(prev.scheme, "https") &&
		    !strcmp(t.scheme, "http")) {
			r = say(&s, msg, n, -EPERM, "a redirect from https to http ('%s'): refused",
				quoted(req.url, q, sizeof(q)));
			goto out;
		}
		if (hops && prev.scheme && !same_origin(&prev, &t))
			req.drop_credentials = true;
		c = attempts(&req, &t,
			     ctx->policies ? engine_policies_host(ctx->policies, t.host) : NULL,
			     &resp, ctx->stop_flag, &tries);
		if (c != CURLE_OK) {
			res = transport_result(c, &req, &t);
			break;
		}
		if (!redirect(&req, &resp)) {
			if ((r = redact_body(&s, &resp.body, pol->http_max_response,
					     &resp.truncated)) < 0)
				break;
			res = response_json(&req, &resp, hops, tries);
			break;
		}
		if (++hops > HTTP_REDIRECTS_MAX) {
			snprintf(why, sizeof(why), "more than %d redirects, the last to '%s'",
				 HTTP_REDIRECTS_MAX, quoted(req.url, q, sizeof(q)));
			res = error_result("TooManyRedirects", why);
			break;
		}
		target_release(&prev);
		prev = t;
		memset(&t, 0, sizeof(t));
	}
	if (r == 0 && !res)
		r = -ENOMEM;
	if (r == 0)
		r = redact_json(&s, &res);
	if (r < 0) {
		json_decref(res);
		say(&s, msg, n, r, "cannot make the result: %s", strerror(-r));
		goto out;
	}
	*ret = res;
out:
	t_secrets = NULL; /* s is this frame's */
	target_release(&t);
	target_release(&prev);
	buf_release(&resp.body);
	buf_release(&resp.headers);
	free(resp.location);
	free(resp.primary_ip);
	free(req.url);
	free(req.body);
	return r;
}

/* Secrets in the arguments' strings (a caller should not know one; if
 * it does, the audit log does not keep it). */
static void redact_strings(const struct secrets *s, json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;

	if (json_is_string(v)) {
		struct buf b;

		buf_init(&b, SIZE_MAX >> 1);
		if (buf_append(&b, json_string_value(v), json_string_length(v)) == 0 &&
		    redact(s, &b) == 0)
			json_string_setn(v, b.data ? b.data : "", b.len);
		buf_release(&b);
	} else if (json_is_object(v)) {
		json_object_foreach (v, k, x)
			redact_strings(s, x);
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, x)
			redact_strings(s, x);
	}
}

static void http_redact(const struct engine_tool_ctx *ctx, json_t *args)
{
	struct secrets s;

	secrets_collect(ctx ? ctx->policies : NULL, &s);
	redact_strings(&s, args);
}

const struct engine_tool engine_tool_http = {
	.name = "http",
	.action = ACTION_HTTP,
	.title = "HTTP request",
	.description =
		"Send one HTTP request to a host the policy allows (http.hosts) and get the "
		"response: status, headers, and the body as JSON (a JSON response), text, or base64 "
		"(binary), up to the policy's http.max_response bytes.  Redirects are followed (up to 5), "
		"each checked again; requests to loopback, private, link-local and cloud-metadata "
		"addresses are refused unless the policy names them.  Credentials for a host come from "
		"the policy and are added by the tool: do not put them in the request.",
	.input_schema =
		"{\"type\":\"object\",\"properties\":{"
		"\"method\":{\"type\":\"string\",\"enum\":[\"GET\",\"HEAD\",\"POST\",\"PUT\",\"PATCH\","
		"\"DELETE\",\"OPTIONS\"],\"default\":\"GET\"},"
		"\"url\":{\"type\":\"string\",\"description\":\"an http:// or https:// URL\"},"
		"\"headers\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
		"\"body\":{\"description\":\"a string, sent as is, or JSON, sent as application/json\"},"
		"\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":300,\"default\":30,"
		"\"description\":\"seconds for the whole call, retries and redirects included\"}},"
		"\"required\":[\"url\"],\"additionalProperties\":false}",
	.read_only = false,
	.destructive = true,
	.idempotent = false,
	.open_world = true,
	.call = http_call,
	.redact = http_redact,
};
