/* sandbox/egress_head.c: the proxy's request-head parser and the head it
 * forwards.  (The proxy itself: tests/e2e/test_egress.py.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
			fail_msg("'%s': reason '%s', expected '%s'", bad[i].head, why ? why : "(none)",
				 bad[i].why);
	}
}

static void forwarded_head(void **state)
{
	const char *h = "GET http://Example.com:8080?q=1 HTTP/1.1\r\nHost: evil.example\r\n"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(accepted_heads),
		cmocka_unit_test(incomplete_and_too_long),
		cmocka_unit_test(refused_heads),
		cmocka_unit_test(forwarded_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
