/* Requests whose framing two HTTP parsers could read differently, and
 * requests that came through a proxy.
 *
 * Behind a proxy that frames a request by another rule than
 * libmicrohttpd, the bytes one takes for a body the other takes for the
 * next request: request smuggling.  libmicrohttpd 0.9.75 serves all of
 * these (tests/security/test_serve_front.py): two Content-Length headers
 * (the first counts), Transfer-Encoding with Content-Length (chunked
 * wins), "Content-Length : 5" (kept as a header named "Content-Length "),
 * an obs-folded "Transfer-Encoding:\r\n chunked" (the continuation is
 * glued to the name: "Transfer-Encodingchunked"), and a coding it does not
 * know, whose body it then reads until the connection ends.  RFC 9112
 * sections 5.1 and 6.3 say to refuse them and close. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "http/framing.h"
#include "util/macro.h"
#include "util/banned.h"

struct framing {
	unsigned content_length, transfer_encoding, host;
	const char *coding;
	const char *bad_name; /* the first header name that is not a token */
};

/* RFC 9110 5.6.2: tchar */
static bool is_token(const char *s)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= 'A' && ch <= 'Z') || (ch && strchr(extra, ch))))
			return false;
	}
	return true;
}

static bool starts_with_caseless(const char *s, const char *prefix)
{
	return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct framing *f = cls;

	(void)kind;
	if (!key)
		return MHD_YES;
	if (!is_token(key) && !f->bad_name)
		f->bad_name = key;
	if (!strcasecmp(key, "Content-Length")) {
		f->content_length++;
	} else if (!strcasecmp(key, "Host")) {
		f->host++;
	} else if (!strcasecmp(key, "Transfer-Encoding")) {
		f->transfer_encoding++;
		f->coding = value;
	} else if ((starts_with_caseless(key, "Content-Length") ||
		    starts_with_caseless(key, "Transfer-Encoding")) &&
		   !f->bad_name) {
		/* an obs-fold glued to the name */
		f->bad_name = key;
	}
	return MHD_YES;
}

int api_check_framing(struct MHD_Connection *conn, struct api_error *e)
{
	struct framing f = { 0 };

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &f);
	if (f.bad_name)
		return api_error_set(
			e, 400, "bad_request",
			"the header name '%.64s' is not a token (white space before the colon, or a header folded over lines): send 'Name: value' on one line",
			f.bad_name);
	if (f.content_length > 1)
		return api_error_set(e, 400, "bad_request",
				     "more than one Content-Length header: send one");
	if (f.transfer_encoding > 1)
		return api_error_set(e, 400, "bad_request",
				     "more than one Transfer-Encoding header: send one");
	/* the loopback and origin checks read the first Host, a proxy may
	 * route by the last (RFC 9112 3.2: answer 400) */
	if (f.host > 1)
		return api_error_set(e, 400, "bad_request", "more than one Host header: send one");
	if (f.transfer_encoding && f.content_length)
		return api_error_set(e, 400, "bad_request",
				     "both Transfer-Encoding and Content-Length: send one of them");
	if (f.transfer_encoding && strcasecmp(f.coding ? f.coding : "", "chunked") != 0)
		return api_error_set(
			e, 400, "bad_request",
			"the transfer coding '%.64s' is not supported: send 'Transfer-Encoding: chunked' or a Content-Length",
			f.coding ? f.coding : "");
	return 0;
}

struct forwarded {
	const char *found;
};

static enum MHD_Result find_forwarded(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	static const char *const names[] = { "Forwarded",
					     "X-Real-IP",
					     "X-Client-IP",
					     "True-Client-IP",
					     "CF-Connecting-IP",
					     "X-Cluster-Client-IP",
					     "Fastly-Client-IP",
					     "X-Original-Forwarded-For",
					     "Via" };
	struct forwarded *f = cls;

	(void)kind, (void)value;
	if (!key)
		return MHD_YES;
	if (starts_with_caseless(key, "X-Forwarded-")) {
		f->found = key;
		return MHD_NO;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcasecmp(key, names[i])) {
			f->found = key;
			return MHD_NO;
		}
	return MHD_YES;
}

const char *api_forwarded_header(struct MHD_Connection *conn)
{
	struct forwarded f = { NULL };

	MHD_get_connection_values(conn, MHD_HEADER_KIND, find_forwarded, &f);
	return f.found;
}
