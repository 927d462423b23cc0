/* The answers every door sends through (http.h): JSON, errors in the
 * shape of the door that took the call over or /v1's, the headers every
 * answer carries. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/door.h"
#include "http/http.h"
#include "http/internal.h"
#include "http/metrics.h"
#include "http/text.h"
#include "util/utf8.h"
#include "util/banned.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6))

void api_response_headers(struct MHD_Response *r, const char *type)
{
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
}

static void count_status(struct api_call *c, unsigned status)
{
	if (status >= 400 && status < 600)
		api_metrics_add(&c->srv->metrics, &c->srv->metrics.http_errors[status / 100]);
}

enum MHD_Result api_respond_json(struct api_call *c, unsigned status, json_t *body)
{
	size_t len = 0;
	char *s = api_json_dump(body, JSON_FLAGS, &len);
	struct MHD_Response *r;
	enum MHD_Result ret;

	json_decref(body);
	if (!s)
		return MHD_NO;
	r = MHD_create_response_from_buffer(len, s, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(s);
		return MHD_NO;
	}
	api_response_headers(r, "application/json");
	if (status == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	if (c->close)
		MHD_add_response_header(r, "Connection", "close");
	count_status(c, status);
	ret = MHD_queue_response(c->conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result api_respond_owned(struct api_call *c, const char *type, char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	api_response_headers(r, type);
	ret = MHD_queue_response(c->conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result api_respond_stream(struct api_call *c, const char *type,
				   MHD_ContentReaderCallback read, void *cls,
				   MHD_ContentReaderFreeCallback done)
{
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, read, cls, done);
	enum MHD_Result ret;

	if (!r) {
		done(cls);
		return MHD_NO;
	}
	api_response_headers(r, type);
	/* no buffering proxies between the events and the client */
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	ret = MHD_queue_response(c->conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result api_respond_error(struct api_call *c, const struct api_error *e)
{
	size_t len;
	char *msg;
	json_t *j;

	if (c->door && c->door->respond_error)
		return c->door->respond_error(c, e);
	/* messages quote what the client sent, which may be any bytes */
	msg = utf8_repair(e->message, strlen(e->message), &len);
	j = json_pack("{s:{s:s, s:s}}", "error", "code", e->code, "message", msg ? msg : "");

	free(msg);
	return api_respond_json(c, (unsigned)e->http, j);
}

enum MHD_Result api_respond_errorf(struct api_call *c, int http, const char *code, const char *fmt,
				   ...)
{
	struct api_error e = { .http = http, .code = code };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.message, sizeof(e.message), fmt, ap);
	va_end(ap);
	return api_respond_error(c, &e);
}
