/* engine/tool_http: the http tool called directly, against a server this
 * test runs on 127.0.0.1 (port 0).  Every address the guard must refuse is
 * refused before a connection: the server counts the requests it gets,
 * and no other address is ever contacted. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/tool.h"

extern const struct engine_tool engine_tool_http;

#define SECRET "s3cr3t-t0ken-value-42"
#define API_KEY "key-0123456789abcdef"

static int port;
static int requests; /* atomic: requests the server got */
static int flaky;
static char last_head[8192]; /* the last request's head, under head_lock */
static pthread_mutex_t head_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- names: a resolver that changes its answers ---- */

static int lookups; /* atomic: of the names below */

/* The tool's own getaddrinfo calls (libcodecell.a is linked into this
 * program) come here; libcurl's would go to libc, which knows none of
 * these names.  "rebind.test" is 127.0.0.1 the first time and the
 * metadata address after: DNS rebinding.  "mixed.test" has a public
 * address and a loopback one. */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **res)
{
	int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **) =
		(int (*)(const char *, const char *, const struct addrinfo *,
			 struct addrinfo **))dlsym(RTLD_NEXT, "getaddrinfo");
	struct addrinfo h = { .ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM }, *a, *b;
	int n;

	if (!node || (strcmp(node, "rebind.test") && strcmp(node, "mixed.test")))
		return real(node, service, hints, res);
	n = __atomic_add_fetch(&lookups, 1, __ATOMIC_SEQ_CST);
	if (!strcmp(node, "rebind.test"))
		return real(n == 1 ? "127.0.0.1" : "169.254.169.254", service, &h, res);
	if (real("93.184.216.34", service, &h, &a) || real("127.0.0.1", service, &h, &b))
		return EAI_FAIL;
	a->ai_next = b;
	*res = a;
	return 0;
}

/* ---- the server ---- */

static void reply(int fd, const char *status, const char *type, const char *extra, const char *body,
		  size_t len)
{
	char head[1024];
	int n = snprintf(
		head, sizeof(head),
		"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
		status, type, len, extra ? extra : "");

	/* MSG_NOSIGNAL: a client that hung up (the size cap, a timeout) must
	 * not take this test process down with SIGPIPE */
	if (send(fd, head, (size_t)n, MSG_NOSIGNAL) < 0 ||
	    (len && send(fd, body, len, MSG_NOSIGNAL) < 0))
		return;
}

static void *serve_one(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char req[8192], path[2048], extra[2300];
	size_t got = 0;
	ssize_t k;

	while (got < sizeof(req) - 1 && (k = read(fd, req + got, sizeof(req) - 1 - got)) > 0) {
		got += (size_t)k;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[got] = '\0';
	__atomic_add_fetch(&requests, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&head_lock);
	snprintf(last_head, sizeof(last_head), "%s", req);
	pthread_mutex_unlock(&head_lock);
	if (sscanf(req, "%*s %2047s", path) != 1)
		snprintf(path, sizeof(path), "/");
	if (!strcmp(path, "/json")) {
		reply(fd, "200 OK", "application/json", NULL, "{\"a\": 1, \"b\": [true]}", 21);
	} else if (!strcmp(path, "/text")) {
		reply(fd, "200 OK", "text/plain", NULL, "hello", 5);
	} else if (!strcmp(path, "/bin")) {
		reply(fd, "200 OK", "application/octet-stream", NULL, "\x00\xff\x01", 3);
	} else if (!strcmp(path, "/echo")) {
		/* the request back, and its Authorization in a header */
		const char *a = strstr(req, "Authorization: ");
		int al = a ? (int)strcspn(a + 15, "\r\n") : 0;

		snprintf(extra, sizeof(extra), "X-Echo: %.*s\r\n", al, a ? a + 15 : "");
		reply(fd, "200 OK", "text/plain", extra, req, strlen(req));
	} else if (!strncmp(path, "/r?to=", 6)) {
		snprintf(extra, sizeof(extra), "Location: %s\r\n", path + 6);
		reply(fd, "302 Found", "text/plain", extra, "", 0);
	} else if (!strcmp(path, "/loop")) {
		reply(fd, "302 Found", "text/plain", "Location: /loop\r\n", "", 0);
	} else if (!strcmp(path, "/slow")) {
		sleep(4);
		reply(fd, "200 OK", "text/plain", NULL, "late", 4);
	} else if (!strcmp(path, "/huge")) {
		static char chunk[65536];
		char head[256];
		int n = snprintf(
			head, sizeof(head),
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n",
			64 * 65536);

		memset(chunk, 'x', sizeof(chunk));
		/* the client stops reading at its cap and hangs up */
		if (send(fd, head, (size_t)n, MSG_NOSIGNAL) > 0)
			for (int i = 0; i < 64 && send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) > 0;
			     i++)
				;
	} else if (!strcmp(path, "/flaky")) {
		if (__atomic_add_fetch(&flaky, 1, __ATOMIC_SEQ_CST) <= 2)
			reply(fd, "503 Service Unavailable", "text/plain", "Retry-After: 0\r\n",
			      "busy", 4);
		else
			reply(fd, "200 OK", "text/plain", NULL, "fine", 4);
	} else {
		reply(fd, "404 Not Found", "text/plain", NULL, "no", 2);
	}
	close(fd);
	return NULL;
}

static void *serve(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		pthread_t t;

		if (fd < 0)
			continue;
		if (pthread_create(&t, NULL, serve_one, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
	return NULL;
}

static int start_server(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pthread_t t;

	(void)state;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 64) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	port = ntohs(a.sin_port);
	if (pthread_create(&t, NULL, serve, (void *)(intptr_t)lfd))
		return -1;
	pthread_detach(t);
	return 0;
}

/* ---- calling the tool ---- */

struct outcome {
	int r;
	json_t *res;
	char msg[TOOL_MSG_MAX];
	char *text; /* the result as JSON text, or "" */
};

/* The policy text with %d replaced by the server's port (every one). */
static struct engine_policies *policy(const char *fmt)
{
	char text[4096], err[512];
	struct engine_policies *ps = NULL;
	size_t o = 0;

	for (const char *p = fmt; *p && o < sizeof(text) - 8; p++) {
		if (p[0] == '%' && p[1] == 'd') {
			o += (size_t)snprintf(text + o, sizeof(text) - o, "%d", port);
			p++;
		} else {
			text[o++] = *p;
		}
	}
	text[o] = '\0';
	if (engine_policies_parse(text, strlen(text), &ps, err, sizeof(err)) < 0)
		fail_msg("policy: %s", err);
	return ps;
}

static void call(const char *pol, const char *args_fmt, struct outcome *o, ...)
{
	struct engine_policies *ps = policy(pol);
	struct engine_tool_ctx ctx = { .client = &ps->clients[0],
				       .policies = ps,
				       .door = DOOR_API };
	char args[4096];
	json_error_t je;
	json_t *args_j;
	va_list ap;

	va_start(ap, o);
	vsnprintf(args, sizeof(args), args_fmt, ap);
	va_end(ap);
	args_j = json_loads(args, 0, &je);
	if (!args_j)
		fail_msg("args '%s': %s", args, je.text);
	memset(o, 0, sizeof(*o));
	o->r = engine_tool_http.call(&ctx, args_j, &o->res, o->msg, sizeof(o->msg));
	o->text = o->res ? json_dumps(o->res, JSON_COMPACT) : strdup("");
	json_decref(args_j);
	engine_policies_free(ps);
}

static void done(struct outcome *o)
{
	json_decref(o->res);
	free(o->text);
}

static const char *error_name(const struct outcome *o)
{
	return json_string_value(json_object_get(json_object_get(o->res, "error"), "name"));
}

#define ONLY_SERVER "[default]\nhttp.hosts = 127.0.0.1:%d\n"

static void get_json_text_and_binary(void **state)
{
	struct outcome o;

	(void)state;
	call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/json\"}", &o, port);
	assert_int_equal(o.r, 0);
	assert_int_equal(json_integer_value(json_object_get(o.res, "status")), 200);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o.res, "json"), "a")),
			 1);
	assert_string_equal(json_string_value(json_object_get(o.res, "address")), "127.0.0.1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(o.res, "headers"),
							      "content-type")),
			    "application/json");
	done(&o);
	call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/text\"}", &o, port);
	assert_string_equal(json_string_value(json_object_get(o.res, "text")), "hello");
	done(&o);
	call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/bin\"}", &o, port);
	assert_string_equal(json_string_value(json_object_get(o.res, "base64")), "AP8B");
	done(&o);
	call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/nothing\", \"method\": \"HEAD\"}", &o,
	     port);
	assert_int_equal(json_integer_value(json_object_get(o.res, "status")), 404);
	done(&o);
}

/* every spelling of an address the policy does not name, refused before
 * any connection (the server's count does not move) */
static void bypass_spellings_are_refused(void **state)
{
	static const char *const hosts[] = {
		"2130706433",
		"0177.0.0.1",
		"0x7f.1",
		"127.1",
		"0x7f000001",
		"[::ffff:127.0.0.1]",
		"[::1]",
		"0.0.0.0",
		"0",
		"[::]",
		"169.254.169.254",
		"0xa9fea9fe",
		"[fd00:ec2::254]",
		"[::ffff:169.254.169.254]",
		"localhost",
		"10.0.0.1",
		"[fe80::1]",
		"127.0.0.1.",
		"[64:ff9b::7f00:1]",
	};
	int before = __atomic_load_n(&requests, __ATOMIC_SEQ_CST);
	struct outcome o;

	(void)state;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		call("[default]\nhttp.hosts = *\n", "{\"url\": \"http://%s:%d/json\"}", &o,
		     hosts[i], port);
		if (o.r != -EPERM || !o.msg[0])
			fail_msg("'%s' was not refused: %d %s %s", hosts[i], o.r, o.msg, o.text);
		done(&o);
	}
	/* names the policy lists, resolving to loopback: public only */
	call("[default]\nhttp.hosts = localhost\n", "{\"url\": \"http://localhost:%d/json\"}", &o,
	     port);
	assert_int_equal(o.r, -EPERM);
	assert_non_null(strstr(o.msg, "loopback"));
	done(&o);
	/* [::1] is not 127.0.0.1 */
	call(ONLY_SERVER, "{\"url\": \"http://[::1]:%d/json\"}", &o, port);
	assert_int_equal(o.r, -EPERM);
	done(&o);
	/* a zone id */
	call("[default]\nhttp.hosts = fe80::/10\n", "{\"url\": \"http://[fe80::1%%25lo]:%d/\"}", &o,
	     port);
	assert_int_equal(o.r, -EPERM);
	done(&o);
	assert_int_equal(__atomic_load_n(&requests, __ATOMIC_SEQ_CST), before);
}

/* the spellings of the one address the policy names reach it */
static void named_address_in_any_spelling(void **state)
{
	static const char *const hosts[] = { "2130706433", "0177.0.0.1", "0x7f.1", "127.1",
					     "[::ffff:127.0.0.1]" };
	struct outcome o;

	(void)state;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		call(ONLY_SERVER, "{\"url\": \"http://%s:%d/text\"}", &o, hosts[i], port);
		if (o.r != 0 ||
		    strcmp(json_string_value(json_object_get(o.res, "text")) ?: "", "hello"))
			fail_msg("'%s': %d %s %s", hosts[i], o.r, o.msg, o.text);
		done(&o);
	}
	/* a name marked private */
	call("[default]\nhttp.hosts = localhost:%d private\n",
	     "{\"url\": \"http://LocalHost:%d/text\"}", &o, port);
	assert_int_equal(o.r, 0);
	assert_string_equal(json_string_value(json_object_get(o.res, "text")), "hello");
	done(&o);
}

static void redirects_are_checked_again(void **state)
{
	static const char *const to[] = { "http://169.254.169.254/latest/meta-data/",
					  "http://[::1]:%d/json",
					  "http://0x7f.1:1/",
					  "file:///etc/passwd",
					  "http://localhost:%d/json",
					  "gopher://127.0.0.1:%d/" };
	struct outcome o;
	char url[256];

	(void)state;
	for (size_t i = 0; i < sizeof(to) / sizeof(to[0]); i++) {
		int before;

		snprintf(url, sizeof(url), to[i], port);
		before = __atomic_load_n(&requests, __ATOMIC_SEQ_CST);
		call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/r?to=%s\"}", &o, port, url);
		if (o.r != -EPERM || !strstr(o.msg, "redirect"))
			fail_msg("redirect to '%s': %d %s %s", url, o.r, o.msg, o.text);
		/* the first hop only */
		assert_int_equal(__atomic_load_n(&requests, __ATOMIC_SEQ_CST), before + 1);
		done(&o);
	}
	call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/r?to=/json\"}", &o, port);
	assert_int_equal(o.r, 0);
	assert_int_equal(json_integer_value(json_object_get(o.res, "redirects")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o.res, "json"), "a")),
			 1);
	done(&o);
	call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/loop\"}", &o, port);
	assert_int_equal(o.r, 0);
	assert_string_equal(error_name(&o), "TooManyRedirects");
	done(&o);
}

#define WITH_SECRETS                                                                     \
	"[default]\nhttp.hosts = 127.0.0.1:%d, localhost:%d private\n[host 127.0.0.1]\n" \
	"header = Authorization: Bearer " SECRET "\nheader = X-Api-Key: " API_KEY "\n"

static void secrets_are_sent_and_never_shown(void **state)
{
	struct outcome o;

	(void)state;
	/* the caller's Authorization is replaced by the policy's */
	call(WITH_SECRETS,
	     "{\"url\": \"http://127.0.0.1:%d/echo\", \"headers\": "
	     "{\"Authorization\": \"Bearer mine\", \"X-Other\": \"1\"}}",
	     &o, port);
	assert_int_equal(o.r, 0);
	pthread_mutex_lock(&head_lock);
	assert_non_null(strstr(last_head, "Authorization: Bearer " SECRET "\r\n"));
	assert_non_null(strstr(last_head, "X-Api-Key: " API_KEY "\r\n"));
	assert_null(strstr(last_head, "Bearer mine"));
	assert_non_null(strstr(last_head, "X-Other: 1"));
	pthread_mutex_unlock(&head_lock);
	/* echoed in the body and a header: redacted */
	assert_null(strstr(o.text, SECRET));
	assert_null(strstr(o.text, API_KEY));
	assert_non_null(strstr(o.text, "[REDACTED]"));
	assert_non_null(strstr(
		json_string_value(json_object_get(json_object_get(o.res, "headers"), "x-echo")),
		"[REDACTED]"));
	done(&o);
	/* another host gets none of them, even by a redirect */
	call(WITH_SECRETS, "{\"url\": \"http://127.0.0.1:%d/r?to=http://localhost:%d/echo\"}", &o,
	     port, port);
	assert_int_equal(o.r, 0);
	pthread_mutex_lock(&head_lock);
	assert_null(strstr(last_head, SECRET));
	assert_null(strstr(last_head, API_KEY));
	pthread_mutex_unlock(&head_lock);
	done(&o);
	/* nor do messages show them */
	call(WITH_SECRETS,
	     "{\"url\": \"http://127.0.0.1:%d/r?to=http://169.254.169.254/" SECRET "\"}", &o, port);
	assert_int_equal(o.r, -EPERM);
	assert_null(strstr(o.msg, SECRET));
	done(&o);
}

static void slow_huge_and_flaky(void **state)
{
	struct outcome o;

	(void)state;
	call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/slow\", \"timeout\": 1}", &o, port);
	assert_int_equal(o.r, 0);
	assert_string_equal(error_name(&o), "Timeout");
	done(&o);
	call(ONLY_SERVER "http.max_response = 100K\n", "{\"url\": \"http://127.0.0.1:%d/huge\"}",
	     &o, port);
	assert_int_equal(o.r, 0);
	assert_true(json_is_true(json_object_get(o.res, "truncated")));
	assert_int_equal(json_integer_value(json_object_get(o.res, "bytes")), 100 * 1024);
	done(&o);
	/* GET is tried again after a 503; POST is not */
	__atomic_store_n(&flaky, 0, __ATOMIC_SEQ_CST);
	call(ONLY_SERVER,
	     "{\"url\": \"http://127.0.0.1:%d/flaky\", \"method\": \"POST\", \"body\": {\"x\": 1}}",
	     &o, port);
	assert_int_equal(json_integer_value(json_object_get(o.res, "status")), 503);
	assert_int_equal(json_integer_value(json_object_get(o.res, "attempts")), 1);
	done(&o);
	__atomic_store_n(&flaky, 0, __ATOMIC_SEQ_CST);
	call(ONLY_SERVER, "{\"url\": \"http://127.0.0.1:%d/flaky\"}", &o, port);
	assert_int_equal(json_integer_value(json_object_get(o.res, "status")), 200);
	assert_int_equal(json_integer_value(json_object_get(o.res, "attempts")), 3);
	done(&o);
}

static void bad_calls(void **state)
{
	static const char *const bad[] = {
		"{}",
		"{\"url\": 1}",
		"{\"url\": \"http://127.0.0.1:%d/\", \"method\": \"TRACE\"}",
		"{\"url\": \"http://127.0.0.1:%d/\", \"headers\": {\"X\": \"a\\r\\nB: c\"}}",
		"{\"url\": \"http://127.0.0.1:%d/\", \"headers\": {\"Host\": \"example.com\"}}",
		"{\"url\": \"http://127.0.0.1:%d/\", \"timeout\": 0}",
		"{\"url\": \"http://127.0.0.1:%d/\", \"extra\": 1}",
		"{\"url\": \"not a url\"}",
	};
	struct outcome o;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		call(ONLY_SERVER, bad[i], &o, port);
		if (o.r != -EINVAL || !o.msg[0])
			fail_msg("'%s': %d %s", bad[i], o.r, o.msg);
		done(&o);
	}
	call(ONLY_SERVER, "{\"url\": \"ftp://127.0.0.1:%d/\"}", &o, port);
	assert_true(o.r == -EINVAL || o.r == -EPERM);
	done(&o);
	call("[default]\n", "{\"url\": \"http://127.0.0.1:%d/\"}", &o, port);
	assert_int_equal(o.r, -EPERM);
	assert_non_null(strstr(o.msg, "http.hosts"));
	done(&o);
	call(ONLY_SERVER, "{\"url\": \"http://user:pw@127.0.0.1:%d/\"}", &o, port);
	assert_true(o.r < 0);
	done(&o);
}

/* the address checked is the address connected to: the name is looked
 * up once, by the tool, and curl connects to that answer */
static void no_dns_rebinding(void **state)
{
	struct outcome o;

	(void)state;
	__atomic_store_n(&lookups, 0, __ATOMIC_SEQ_CST);
	call("[default]\nhttp.hosts = rebind.test:%d private\n",
	     "{\"url\": \"http://rebind.test:%d/text\"}", &o, port);
	if (o.r != 0 || strcmp(json_string_value(json_object_get(o.res, "text")) ?: "", "hello"))
		fail_msg("%d %s %s", o.r, o.msg, o.text);
	assert_string_equal(json_string_value(json_object_get(o.res, "address")), "127.0.0.1");
	assert_int_equal(__atomic_load_n(&lookups, __ATOMIC_SEQ_CST), 1);
	done(&o);
	/* every address of a name is checked, not only the first */
	call("[default]\nhttp.hosts = mixed.test\n", "{\"url\": \"http://mixed.test:%d/text\"}", &o,
	     port);
	assert_int_equal(o.r, -EPERM);
	assert_non_null(strstr(o.msg, "127.0.0.1"));
	done(&o);
}

/* the policy's keys: http.hosts, http.max_response, [host NAME] */
static void policy_keys(void **state)
{
	static const char *const bad[] = {
		"[default]\nhttp.hosts = 0.0.0.0\n",
		"[default]\nhttp.hosts = a.com\nhttp.hosts = b.com\n",
		"[default]\nhttp.hosts = * private\n",
		"[default]\nhttp.max_response = 0\n",
		"[default]\nhttp.max_response = 65M\n",
		"[default]\nhttp.nope = 1\n",
		"[host a.com]\nheader = no colon here\n",
		"[host a.com]\nheader = X-Key:\n",
		"[host a.com]\nnope = 1\n",
		"[host a.com]\n[host A.COM.]\n",
		"[host a_b%c]\n",
	};
	struct engine_policies *ps;
	const struct engine_host *h;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ps = NULL;
		err[0] = '\0';
		if (engine_policies_parse(bad[i], strlen(bad[i]), &ps, err, sizeof(err)) !=
			    -EINVAL ||
		    !err[0] || ps)
			fail_msg("'%s' was accepted", bad[i]);
	}
	/* a header's value is a secret: not quoted in a message */
	{
		const char *t = "[host a.com]\nheader = Bad Name: SECRETVALUE\n";

		assert_int_equal(engine_policies_parse(t, strlen(t), &ps, err, sizeof(err)),
				 -EINVAL);
	}
	assert_null(strstr(err, "SECRETVALUE"));
	ps = policy("[default]\nhttp.hosts = a.com, 10.0.0.0/8\nhttp.max_response = 2M\n"
		    "[policy p]\n[host API.Example.com]\nheader = A: b-long-enough\n"
		    "[host 0x7f.1]\nheader = B: c\n");
	assert_int_equal(ps->def.http_hosts.n, 2);
	assert_int_equal(ps->def.http_max_response, 2u << 20);
	assert_int_equal(ps->named[0].http_hosts.n, 0);
	assert_int_equal(ps->named[0].http_max_response, 1u << 20);
	h = engine_policies_host(ps, "api.example.COM.");
	assert_non_null(h);
	assert_int_equal(h->n_headers, 1);
	assert_string_equal(h->headers[0], "A: b-long-enough");
	assert_non_null(engine_policies_host(ps, "127.0.0.1"));
	assert_non_null(engine_policies_host(ps, "[::ffff:127.0.0.1]"));
	assert_null(engine_policies_host(ps, "example.com"));
	engine_policies_free(ps);
}

/* A network namespace of our own with loopback up, when we may make one
 * (root): then not even a broken guard could reach another host. */
static void own_netns(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd;

	if (unshare(CLONE_NEWNET) < 0)
		return;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		abort();
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		abort();
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(get_json_text_and_binary),
		cmocka_unit_test(bypass_spellings_are_refused),
		cmocka_unit_test(named_address_in_any_spelling),
		cmocka_unit_test(redirects_are_checked_again),
		cmocka_unit_test(secrets_are_sent_and_never_shown),
		cmocka_unit_test(slow_huge_and_flaky),
		cmocka_unit_test(bad_calls),
		cmocka_unit_test(policy_keys),
		cmocka_unit_test(no_dns_rebinding),
	};

	/* a proxy in the environment must not matter: the tool ignores it */
	setenv("http_proxy", "http://127.0.0.1:9/", 1);
	own_netns();
	return cmocka_run_group_tests(tests, start_server, NULL);
}
