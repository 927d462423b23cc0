/* The egress proxy's request-head parser and rewriter (pure: no I/O).
 * Everything here comes from code in a sandbox: each field is capped, and
 * anything ambiguous is refused rather than guessed at (a proxy and the
 * server behind it must not read one request two ways). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sandbox/egress.h"
#include "util/buf.h"
#include "util/banned.h"

#define WHY(s) (*ret_why = (s), -EINVAL)

static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Where the head ends (past CRLF CRLF), 0 if not yet; -EINVAL for a NUL,
 * a bare CR or a bare LF anywhere before it. */
static long head_end(const char *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (b[i] == '\0')
			return -EINVAL;
		if (b[i] == '\n')
			return -EINVAL; /* bare LF: a CRLF's LF is skipped below */
		if (b[i] != '\r')
			continue;
		if (i + 1 >= len)
			return 0;
		if (b[i + 1] != '\n')
			return -EINVAL;
		if (i + 3 < len && b[i + 2] == '\r' && b[i + 3] == '\n')
			return (long)(i + 4);
		if (i + 2 < len && b[i + 2] == '\r' && i + 3 >= len)
			return 0;
		i++;
	}
	return 0;
}

/* host[:port] or [v6][:port] in s[0..n); def_port 0: the port is
 * required. */
static int parse_authority(const char *s, size_t n, uint16_t def_port, struct egress_req *rq,
			   const char **ret_why)
{
	const char *host = s, *colon = NULL;
	size_t hlen;
	unsigned long port = def_port;

	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close)
			return WHY("an IPv6 address without its ']'");
		host = s + 1;
		hlen = (size_t)(close - host);
		if (close + 1 < s + n) {
			if (close[1] != ':')
				return WHY("junk after an IPv6 address");
			colon = close + 1;
		}
		for (size_t i = 0; i < hlen; i++)
			if (!strchr("0123456789abcdefABCDEF:.", host[i]))
				return WHY("a bad IPv6 address");
	} else {
		colon = memrchr(s, ':', n);
		hlen = colon ? (size_t)(colon - s) : n;
		for (size_t i = 0; i < hlen; i++)
			if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
			      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '-' ||
			      s[i] == '_'))
				return WHY(
					"a host name may hold only letters, digits, '.', '-' and '_'");
	}
	if (hlen == 0 || hlen > EGRESS_HOST_MAX)
		return WHY("no host, or a host name over 253 characters");
	if (colon) {
		const char *p = colon + 1, *end = s + n;

		if (p == end || end - p > 5)
			return WHY("a bad port");
		port = 0;
		for (; p < end; p++) {
			if (*p < '0' || *p > '9')
				return WHY("a bad port");
			port = port * 10 + (unsigned long)(*p - '0');
		}
	}
	if (!colon && !def_port)
		return WHY("CONNECT needs host:port");
	if (port == 0 || port > 65535)
		return WHY("a bad port");
	for (size_t i = 0; i < hlen; i++)
		rq->host[i] = (char)((host[i] >= 'A' && host[i] <= 'Z') ? host[i] + 32 : host[i]);
	rq->host[hlen] = '\0';
	rq->port = (uint16_t)port;
	return 0;
}

/* http://authority[/path...] */
static int parse_absolute(const char *t, size_t n, size_t t_off, struct egress_req *rq,
			  const char **ret_why)
{
	size_t a;

	if (n >= 8 && !strncasecmp(t, "https://", 8))
		return WHY("https:// goes through CONNECT: set HTTPS_PROXY, not HTTP_PROXY only");
	if (n < 7 || strncasecmp(t, "http://", 7))
		return WHY("a proxy request needs an absolute http:// URI");
	t += 7;
	n -= 7;
	a = strcspn(t, "/?#");
	if (a > n)
		a = n;
	if (memchr(t, '@', a))
		return WHY("user info in the URI is not forwarded");
	if (parse_authority(t, a, 80, rq, ret_why) < 0)
		return -EINVAL;
	rq->path_off = t_off + 7 + a;
	rq->path_len = n - a;
	for (size_t i = a; i < n; i++)
		if (t[i] == '#')
			return WHY("a fragment in the URI");
	return 0;
}

/* The request line: METHOD SP TARGET SP HTTP/1.x */
static int parse_line(const char *b, size_t n, struct egress_req *rq, const char **ret_why)
{
	const char *sp1 = memchr(b, ' ', n), *sp2;
	size_t m;

	if (!sp1 || sp1 == b || (size_t)(sp1 - b) >= sizeof(rq->method))
		return WHY("a bad request line");
	m = (size_t)(sp1 - b);
	for (size_t i = 0; i < m; i++)
		if (!is_tchar((unsigned char)b[i]))
			return WHY("a bad method");
	memcpy(rq->method, b, m);
	rq->method[m] = '\0';
	sp2 = memchr(sp1 + 1, ' ', n - m - 1);
	if (!sp2 || sp2 == sp1 + 1 || (size_t)(b + n - sp2 - 1) != 8 ||
	    (memcmp(sp2 + 1, "HTTP/1.1", 8) && memcmp(sp2 + 1, "HTTP/1.0", 8)))
		return WHY("a bad request line (METHOD TARGET HTTP/1.1)");
	for (const char *p = sp1 + 1; p < sp2; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return WHY("a bad request target");
	rq->connect = !strcmp(rq->method, "CONNECT");
	if (rq->connect)
		return parse_authority(sp1 + 1, (size_t)(sp2 - sp1 - 1), 0, rq, ret_why);
	return parse_absolute(sp1 + 1, (size_t)(sp2 - sp1 - 1), (size_t)(sp1 + 1 - b), rq, ret_why);
}

static int check_header(const char *h, size_t n, const char **ret_why)
{
	const char *colon = memchr(h, ':', n);

	if (n && (h[0] == ' ' || h[0] == '\t'))
		return WHY("a folded header line");
	if (!colon || colon == h)
		return WHY("a header line without a name");
	for (const char *p = h; p < colon; p++)
		if (!is_tchar((unsigned char)*p))
			return WHY("a bad header name");
	return 0;
}

int egress_parse_head(const char *buf, size_t len, struct egress_req *ret, const char **ret_why)
{
	struct egress_req rq = { 0 };
	long end = head_end(buf, len < EGRESS_HEAD_MAX ? len : EGRESS_HEAD_MAX);
	const char *line, *eol;
	size_t cl = 0, te = 0;

	if (end < 0)
		return WHY("a NUL, or a bare CR or LF, in the request head");
	if (end == 0) {
		if (len < EGRESS_HEAD_MAX)
			return -EAGAIN;
		*ret_why = "the request head is over 16 KiB";
		return -E2BIG;
	}
	rq.head_len = (size_t)end;
	eol = strstr(buf, "\r\n"); /* before end: head_end saw no NUL */
	if (parse_line(buf, (size_t)(eol - buf), &rq, ret_why) < 0)
		return -EINVAL;
	rq.hdr_off = (size_t)(eol + 2 - buf);
	for (line = eol + 2; line < buf + end - 2; line = eol + 2) {
		eol = strstr(line, "\r\n");
		if (check_header(line, (size_t)(eol - line), ret_why) < 0)
			return -EINVAL;
		cl += !strncasecmp(line, "content-length:", 15);
		te += !strncasecmp(line, "transfer-encoding:", 18);
	}
	/* two lengths, or a length and chunks: the server might frame the
	 * body differently from what the client meant (smuggling) */
	if (cl > 1 || (cl && te))
		return WHY("a request with two body lengths");
	*ret = rq;
	return (int)end;
}

/* Headers the proxy sets itself, or that are for the proxy only. */
static bool dropped(const char *h, size_t n)
{
	static const char *const names[] = { "host:",	 "connection:", "keep-alive:", "proxy-",
					     "upgrade:", "te:",		"trailer:" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t k = strlen(names[i]);

		if (n >= k && !strncasecmp(h, names[i], k))
			return true;
	}
	return false;
}

int egress_rewrite(const char *head, const struct egress_req *rq, struct buf *out)
{
	bool v6 = strchr(rq->host, ':') != NULL;
	const char *line, *eol, *end = head + rq->head_len - 2;
	int r;

	/* "http://h" or "http://h?q": the origin form starts with '/' */
	bool slash = rq->path_len && head[rq->path_off] == '/';

	r = buf_printf(out, "%s %s%.*s HTTP/1.1\r\n", rq->method, slash ? "" : "/",
		       (int)rq->path_len, head + rq->path_off);
	for (line = head + rq->hdr_off; r == 0 && line < end; line = eol + 2) {
		eol = strstr(line, "\r\n");
		if (!dropped(line, (size_t)(eol - line)))
			r = buf_append(out, line, (size_t)(eol - line + 2));
	}
	if (r == 0)
		r = buf_printf(out, "Host: %s%s%s", v6 ? "[" : "", rq->host, v6 ? "]" : "");
	if (r == 0 && rq->port != 80)
		r = buf_printf(out, ":%u", rq->port);
	if (r == 0)
		r = buf_puts(out, "\r\nConnection: close\r\n\r\n");
	return r;
}
