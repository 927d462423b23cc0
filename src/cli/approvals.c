/* `codecell approvals`: list and decide the calls a server holds for a
 * person (GET /v1/approvals, POST /v1/approvals/{id}), over a plain
 * HTTP/1.1 connection to the server's loopback address. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/banned.h"

#define APPROVALS_REPLY_MAX (4u << 20)

static const char approvals_usage[] =
	"usage: codecell approvals [--url URL] [--token-file FILE] [list | approve ID | deny ID]\n"
	"\n"
	"The calls a 'codecell serve' holds for a person's approval (its --policy's\n"
	"'approval' actions): list them (the default), or approve or deny one.  Only\n"
	"the operator decides: the server's --token-file token, or loopback when its\n"
	"policy names no clients.\n"
	"\n"
	"options:\n"
	"  --url URL          the server (default http://127.0.0.1:8080)\n"
	"  --token-file FILE  send the token in FILE's first line\n"
	"  -h, --help         this text\n";

/* "http://HOST:PORT[/]" into host and port. */
static int parse_url(const char *url, char *host, size_t hn, char *port, size_t pn)
{
	const char *h, *colon, *end;

	if (strncmp(url, "http://", 7) != 0)
		return -EINVAL;
	h = url + 7;
	end = h + strcspn(h, "/");
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));

		if (!rb)
			return -EINVAL;
		snprintf(host, hn, "%.*s", (int)(rb - h - 1), h + 1);
		colon = rb + 1;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		snprintf(host, hn, "%.*s", (int)((colon ? colon : end) - h), h);
	}
	if (colon && *colon == ':')
		snprintf(port, pn, "%.*s", (int)(end - colon - 1), colon + 1);
	else
		snprintf(port, pn, "80");
	return host[0] && port[0] ? 0 : -EINVAL;
}

static int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	int fd = -1;

	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -EHOSTUNREACH;
	for (p = ai; p && fd < 0; p = p->ai_next) {
		fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
		if (fd >= 0 && connect(fd, p->ai_addr, p->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd < 0 ? -ECONNREFUSED : fd;
}

static int read_token_file(const char *path, char *tok, size_t n)
{
	FILE *f = fopen(path, "re");

	if (!f || !fgets(tok, (int)n, f)) {
		if (f)
			fclose(f);
		return -errno ? -errno : -EINVAL;
	}
	fclose(f);
	tok[strcspn(tok, "\r\n")] = '\0';
	return 0;
}

/* One request; the status in *ret_status, the body in reply. */
static int http(const char *url, const char *token, const char *method, const char *path,
		const char *body, int *ret_status, struct buf *reply)
{
	char host[256], port[16], chunk[16384];
	struct buf req;
	const char *p;
	ssize_t n;
	int fd, k = 0;

	if (parse_url(url, host, sizeof(host), port, sizeof(port)) < 0)
		return log_error("invalid --url '%s': expected http://HOST:PORT", url), -EINVAL;
	fd = connect_to(host, port);
	if (fd < 0)
		return log_error("cannot connect to '%s': %s", url, strerror(-fd)), fd;
	buf_init(&req, 16384);
	(void)buf_printf(&req, "%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n", method,
			 path, host, port);
	if (token)
		(void)buf_printf(&req, "Authorization: Bearer %s\r\n", token);
	if (body)
		(void)buf_printf(&req,
				 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
				 strlen(body), body);
	else
		(void)buf_puts(&req, "\r\n");
	if (write(fd, req.data, req.len) != (ssize_t)req.len)
		k = -EIO;
	buf_release(&req);
	while (k == 0 && (n = read(fd, chunk, sizeof(chunk))) > 0)
		if (buf_append(reply, chunk, (size_t)n) < 0)
			k = -E2BIG;
	close(fd);
	if (k < 0 || reply->len < 12 || strncmp(reply->data, "HTTP/1.", 7) != 0)
		return log_error("no HTTP answer from '%s'", url), -EPROTO;
	*ret_status = (int)strtol(reply->data + 9, NULL, 10);
	p = strstr(buf_str(reply), "\r\n\r\n");
	if (p) {
		size_t off = (size_t)(p + 4 - reply->data);

		memmove(reply->data, reply->data + off, reply->len - off);
		reply->len -= off;
		reply->data[reply->len] = '\0';
	}
	return 0;
}

int cli_approvals(int argc, char **argv)
{
	const char *url = "http://127.0.0.1:8080", *token_file = NULL, *verb = "list", *id = NULL;
	char token[512], path[128], body[64];
	struct buf reply;
	int i, status = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return fputs(approvals_usage, stdout), 0;
		if ((!strcmp(argv[i], "--url") || !strcmp(argv[i], "--token-file")) &&
		    i + 1 < argc) {
			if (argv[i][2] == 'u')
				url = argv[++i];
			else
				token_file = argv[++i];
			continue;
		}
		break;
	}
	if (i < argc)
		verb = argv[i++];
	if (i < argc)
		id = argv[i++];
	if (i < argc)
		return log_error("too many arguments (see 'codecell approvals --help')"),
		       EXIT_CODECELL_ERROR;
	if (strcmp(verb, "list") && strcmp(verb, "approve") && strcmp(verb, "deny"))
		return log_error("unknown command '%s': list, approve ID or deny ID", verb),
		       EXIT_CODECELL_ERROR;
	if (strcmp(verb, "list") &&
	    (!id || strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16))
		return log_error(
			       "'%s' needs an approval id: 16 hex digits (codecell approvals list)",
			       verb),
		       EXIT_CODECELL_ERROR;
	if (token_file && read_token_file(token_file, token, sizeof(token)) < 0)
		return log_error("cannot read --token-file '%s': %s", token_file, strerror(errno)),
		       EXIT_CODECELL_ERROR;
	buf_init(&reply, APPROVALS_REPLY_MAX);
	if (!strcmp(verb, "list")) {
		i = http(url, token_file ? token : NULL, "GET", "/v1/approvals", NULL, &status,
			 &reply);
	} else {
		snprintf(path, sizeof(path), "/v1/approvals/%s", id);
		snprintf(body, sizeof(body), "{\"decision\": \"%s\"}",
			 strcmp(verb, "deny") ? "approve" : "deny");
		i = http(url, token_file ? token : NULL, "POST", path, body, &status, &reply);
	}
	if (i == 0)
		printf("%s%s", buf_str(&reply),
		       reply.len && reply.data[reply.len - 1] == '\n' ? "" : "\n");
	buf_release(&reply);
	return i < 0 || status < 200 || status > 299 ? EXIT_CODECELL_ERROR : 0;
}
