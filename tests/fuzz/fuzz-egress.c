/* libFuzzer target: the egress proxy's request-head parser and rewriter
 * (src/sandbox/egress_head.c), which read what code in a sandbox sends to
 * the proxy.  A head it accepts lies inside the input, names a host of
 * allowed characters and a port, and a plain request's path lies inside
 * the head; the head rewritten for the server is CRLF-framed, ends with
 * one blank line, carries exactly one Host and Connection: close, and no
 * Proxy- header.  A head it refuses says why. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sandbox/egress.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rewrite(const char *head, const struct egress_req *rq)
{
	struct buf out;
	size_t hosts = 0;
	const char *p;

	buf_init(&out, EGRESS_HEAD_MAX + 512);
	if (egress_rewrite(head, rq, &out) < 0) {
		buf_release(&out);
		return;
	}
	if (out.len < 4 || memcmp(out.data + out.len - 4, "\r\n\r\n", 4) ||
	    memmem(out.data, out.len, "\r\n\r\n", 4) != out.data + out.len - 4)
		abort();
	for (p = out.data; (p = strstr(p, "\r\n")) && p + 2 < out.data + out.len; p += 2) {
		if (!strncasecmp(p + 2, "host:", 5))
			hosts++;
		if (!strncasecmp(p + 2, "proxy-", 6))
			abort();
	}
	for (size_t i = 0; i < out.len; i++)
		if (out.data[i] == '\0' ||
		    (out.data[i] == '\n' && (i == 0 || out.data[i - 1] != '\r')))
			abort();
	if (hosts != 1 || !strstr(out.data, "\r\nConnection: close\r\n\r\n"))
		abort();
	buf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *head = malloc(size + 1);
	struct egress_req rq;
	const char *why = NULL;
	int r;

	if (!head)
		return 0;
	memcpy(head, data, size);
	head[size] = '\0';
	memset(&rq, 0xa5, sizeof(rq));
	r = egress_parse_head(head, size, &rq, &why);
	if (r == -EAGAIN) {
		if (size >= EGRESS_HEAD_MAX)
			abort();
	} else if (r < 0) {
		if (!why)
			abort();
	} else {
		if ((size_t)r != rq.head_len || rq.head_len > size ||
		    rq.head_len > EGRESS_HEAD_MAX || !rq.host[0] ||
		    strlen(rq.host) > EGRESS_HOST_MAX || !rq.port ||
		    strspn(rq.host, "abcdefghijklmnopqrstuvwxyz0123456789.-_:") != strlen(rq.host))
			abort();
		if (!rq.connect) {
			if (rq.path_off + rq.path_len > rq.head_len || rq.hdr_off > rq.head_len)
				abort();
			check_rewrite(head, &rq);
		}
	}
	free(head);
	return 0;
}
