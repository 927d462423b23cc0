/* sandbox/egress_head.c: the proxy's request-head parser and the head it
 * forwards; the proxy's record of the connections it decided.  (The proxy
 * itself: tests/e2e/test_egress.py.) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/egress.h"
#include "util/buf.h"

static int parse(const char *head, struct egress_req *rq, const char **why)
{
	*why = NULL;
	return egress_parse_head(head, strlen(head), rq, why);
}

static void accepted_heads(void **state)
{
	struct egress_req rq;
	const char *why;
	const char *h1 = "CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\nTLS...";
	const char *h2 = "GET http://[::1]:8080/a/b?c=d HTTP/1.0\r\nAccept: */*\r\n\r\n";
	const char *h3 = "HEAD http://example.com HTTP/1.1\r\n\r\n";

	(void)state;
	assert_int_equal(parse(h1, &rq, &why), (int)(strstr(h1, "TLS") - h1));
	assert_true(rq.connect);
	assert_string_equal(rq.host, "pypi.org");
	assert_int_equal(rq.port, 443);

	assert_int_equal(parse(h2, &rq, &why), (int)strlen(h2));
	assert_false(rq.connect);
	assert_string_equal(rq.method, "GET");
	assert_string_equal(rq.host, "::1");
	assert_int_equal(rq.port, 8080);
	assert_int_equal(rq.path_len, strlen("/a/b?c=d"));
	assert_memory_equal(h2 + rq.path_off, "/a/b?c=d", rq.path_len);

	assert_int_equal(parse(h3, &rq, &why), (int)strlen(h3));
	assert_int_equal(rq.port, 80);
	assert_int_equal(rq.path_len, 0);
}

static void incomplete_and_too_long(void **state)
{
	static char big[EGRESS_HEAD_MAX + 10];
	struct egress_req rq;
	const char *why;

	(void)state;
	assert_int_equal(parse("CONNECT a:1 HTTP/1.1\r\n", &rq, &why), -EAGAIN);
	assert_int_equal(parse("CONNECT a:1 HTTP/1.1\r\n\r", &rq, &why), -EAGAIN);
	memcpy(big, "GET http://a/ HTTP/1.1\r\nX: ", 27);
	memset(big + 27, 'x', sizeof(big) - 28);
	assert_int_equal(egress_parse_head(big, sizeof(big) - 1, &rq, &why), -E2BIG);
	assert_non_null(why);
}

static void refused_heads(void **state)
{
	static const struct {
		const char *head, *why;
	} bad[] = {
		{ "CONNECT a.b HTTP/1.1\r\n\r\n", "CONNECT needs host:port" },
		{ "CONNECT a.b:0 HTTP/1.1\r\n\r\n", "a bad port" },
		{ "CONNECT a.b:65536 HTTP/1.1\r\n\r\n", "a bad port" },
		{ "CONNECT a b:1 HTTP/1.1\r\n\r\n", "a bad request line" },
		{ "GET https://a.b/ HTTP/1.1\r\n\r\n", "https:// goes through CONNECT" },
		{ "GET /relative HTTP/1.1\r\n\r\n", "absolute http:// URI" },
		{ "GET http://u:p@a.b/ HTTP/1.1\r\n\r\n", "user info" },
		{ "GET http://a.b/#f HTTP/1.1\r\n\r\n", "a fragment" },
		{ "GET http://a%2eb/ HTTP/1.1\r\n\r\n", "letters, digits" },
		{ "GET http://a.b/ HTTP/2\r\n\r\n", "a bad request line" },
		{ "GET http://a.b/ HTTP/1.1\nHost: a\n\n", "bare CR or LF" },
		{ "GET http://a.b/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", "folded" },
		{ "GET http://a.b/ HTTP/1.1\r\n: v\r\n\r\n", "without a name" },
		{ "GET http://a.b/ HTTP/1.1\r\nX Y: v\r\n\r\n", "a bad header name" },
		{ "POST http://a.b/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		  "two body lengths" },
		{ "POST http://a.b/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
		  "two body lengths" },
		{ "CONNECT [::1:1 HTTP/1.1\r\n\r\n", "without its ']'" },
		{ "CONNECT [::g]:1 HTTP/1.1\r\n\r\n", "a bad IPv6 address" },
	};
	struct egress_req rq;
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].head, &rq, &why), -EINVAL);
		if (!why || !strstr(why, bad[i].why))
			fail_msg("'%s': reason '%s', expected '%s'", bad[i].head,
				 why ? why : "(none)", bad[i].why);
	}
}

static void forwarded_head(void **state)
{
	const char *h =
		"GET http://Example.com:8080?q=1 HTTP/1.1\r\nHost: evil.example\r\n"
		"Proxy-Authorization: secret\r\nProxy-Connection: keep-alive\r\n"
		"Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nAccept: */*\r\n\r\n";
	struct egress_req rq;
	const char *why;
	struct buf out;

	(void)state;
	assert_true(parse(h, &rq, &why) > 0);
	buf_init(&out, 4096);
	assert_int_equal(egress_rewrite(h, &rq, &out), 0);
	assert_string_equal(buf_str(&out), "GET /?q=1 HTTP/1.1\r\nAccept: */*\r\n"
					   "Host: example.com:8080\r\nConnection: close\r\n\r\n");
	buf_release(&out);
	/* a cap too small for it: refused, not cut */
	buf_init(&out, 16);
	assert_int_equal(egress_rewrite(h, &rq, &out), -E2BIG);
	buf_release(&out);
}

/* A loopback listener on a port of the kernel's choosing. */
static int listener(uint16_t *ret_port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	*ret_port = ntohs(sin.sin_port);
	return fd;
}

/* Send head to the proxy on port, return the status of its answer. */
static int ask(uint16_t port, const char *head)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char got[512] = "";
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), status = -1;
	ssize_t n;

	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(send(fd, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
	n = recv(fd, got, sizeof(got) - 1, 0);
	assert_true(n > 12);
	assert_int_equal(sscanf(got, "HTTP/1.1 %d", &status), 1);
	close(fd);
	return status;
}

/* Every connection decided (allowed, refused by the list, a bad head) is
 * kept until taken, with what the audit log writes. */
static void decided_connections_are_kept_for_the_audit(void **state)
{
	struct egress *e = NULL;
	struct egress_event *ev = NULL;
	uint16_t proxy_port, origin_port;
	int origin = listener(&origin_port), proxy = listener(&proxy_port);
	char allow[64], head[128];
	uint64_t dropped = 1;
	size_t n = 0;

	(void)state;
	snprintf(allow, sizeof(allow), "127.0.0.1:%u", origin_port);
	assert_int_equal(egress_start(-1, proxy, allow, &e), 0);
	snprintf(head, sizeof(head), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", origin_port);
	assert_int_equal(ask(proxy_port, head), 200);
	assert_int_equal(ask(proxy_port, "CONNECT evil.example:443 HTTP/1.1\r\n\r\n"), 403);
	assert_int_equal(ask(proxy_port, "CONNECT x HTTP/1.1\r\nA\n\r\n"), 400);
	/* each is kept before its answer is sent */
	assert_int_equal(egress_take_events(e, &ev, &n, &dropped), 0);
	assert_int_equal(dropped, 0);
	assert_int_equal(n, 3);
	assert_string_equal(ev[0].method, "CONNECT");
	assert_string_equal(ev[0].host, "127.0.0.1");
	assert_int_equal(ev[0].port, origin_port);
	assert_int_equal(ev[0].status, 200);
	assert_string_equal(ev[0].address, "127.0.0.1");
	assert_true(ev[0].time_ms > 0);
	assert_string_equal(ev[1].host, "evil.example");
	assert_int_equal(ev[1].status, 403);
	assert_non_null(strstr(ev[1].why, "evil.example"));
	assert_string_equal(ev[1].address, "");
	assert_string_equal(ev[2].host, "");
	assert_int_equal(ev[2].status, 400);
	/* taken: none left */
	free(ev);
	assert_int_equal(egress_take_events(e, &ev, &n, &dropped), 0);
	assert_int_equal(n, 0);
	assert_null(ev);
	egress_stop(e);
	close(origin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(accepted_heads),
		cmocka_unit_test(incomplete_and_too_long),
		cmocka_unit_test(refused_heads),
		cmocka_unit_test(forwarded_head),
		cmocka_unit_test(decided_connections_are_kept_for_the_audit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
