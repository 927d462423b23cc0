/* The E2B door's NDJSON events of an execution (Jupyter's shape, as the
 * code interpreter's SDK reads them): the transport (http/exec.c) reads
 * the output and the results, this file makes the events
 * (struct http_stream_shape, http/door.h).
 *
 * Output events end at a line end, as Jupyter's do (a print() is one
 * event, not "hi" and then "\n"): the rest of a line waits E2B_LINE_WAIT_MS
 * for its end, or a result, or the end of the stream. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "e2b/internal.h"
#include "engine/engine.h"
#include "util/buf.h"
#include "util/macro.h"
#include "util/banned.h"

#define E2B_LINE_WAIT_MS 100
#define E2B_LINE_MAX (64u << 10)

struct e2b_stream {
	unsigned count;	    /* the execution's number (number_of_executions) */
	struct buf line[2]; /* stdout, stderr: the start of a line not ended yet */
};

static void *stream_begin(const struct api_call *c)
{
	struct e2b_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->count = e2b_of(c) ? e2b_of(c)->count : 0;
	buf_init(&st->line[0], E2B_LINE_MAX);
	buf_init(&st->line[1], E2B_LINE_MAX);
	return st;
}

static void stream_free(void *arg)
{
	struct e2b_stream *st = arg;

	if (!st)
		return;
	buf_release(&st->line[0]);
	buf_release(&st->line[1]);
	free(st);
}

static void emit_text(const struct http_emitter *out, int i, const char *text, size_t n)
{
	out->emit(out->cls,
		  json_pack("{s:s, s:s%}", "type", i == 0 ? "stdout" : "stderr", "text", text, n));
}

/* Stream i's text up to its last line end; the rest waits in
 * st->line[i] (stream_flush), unless that grows past E2B_LINE_MAX. */
static void stream_output(void *arg, int i, const char *text, size_t n,
			  const struct http_emitter *out)
{
	struct e2b_stream *st = arg;
	struct buf *l = &st->line[i];
	size_t end = n;

	while (end && text[end - 1] != '\n')
		end--;
	if (end == 0) {
		if (buf_append(l, text, n) == 0)
			return;
		/* too long a line: out it goes as it is */
		emit_text(out, i, l->data ? l->data : "", l->len);
		buf_reset(l);
		emit_text(out, i, text, n);
		return;
	}
	if (l->len && buf_append(l, text, end) == 0) {
		emit_text(out, i, l->data, l->len);
	} else {
		if (l->len)
			emit_text(out, i, l->data, l->len);
		emit_text(out, i, text, end);
	}
	buf_reset(l);
	if (end < n && buf_append(l, text + end, n - end) < 0)
		emit_text(out, i, text + end, n - end);
}

/* What waits of both streams' lines, now. */
static void stream_flush(void *arg, const struct http_emitter *out)
{
	struct e2b_stream *st = arg;

	for (int i = 0; i < 2; i++)
		if (st->line[i].len) {
			emit_text(out, i, st->line[i].data, st->line[i].len);
			buf_reset(&st->line[i]);
		}
}

static int stream_hold_ms(const void *arg)
{
	const struct e2b_stream *st = arg;

	return st->line[0].len || st->line[1].len ? E2B_LINE_WAIT_MS : -1;
}

/* ---- results ---- */

static const struct {
	const char *mime, *key;
} mime_keys[] = {
	{ "text/plain", "text" },	 { "text/html", "html" },
	{ "text/markdown", "markdown" }, { "image/svg+xml", "svg" },
	{ "image/png", "png" },		 { "image/jpeg", "jpeg" },
	{ "application/pdf", "pdf" },	 { "text/latex", "latex" },
	{ "application/json", "json" },	 { "application/javascript", "javascript" },
};

static json_t *result_event(const json_t *bundle)
{
	json_t *ev = json_pack("{s:s}", "type", "result"), *v, *extra = NULL;
	const char *k;

	if (!ev || !json_is_object(bundle))
		return ev;
	json_object_foreach ((json_t *)bundle, k, v) {
		size_t i;

		if (!strcmp(k, "is_main_result")) {
			json_object_set(ev, "is_main_result", v);
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(mime_keys); i++)
			if (!strcmp(k, mime_keys[i].mime))
				break;
		if (i < ARRAY_SIZE(mime_keys)) {
			json_object_set(ev, mime_keys[i].key, v);
		} else {
			if (!extra)
				extra = json_object();
			json_object_set(extra, k, v);
		}
	}
	if (extra)
		json_object_set_new(ev, "extra", extra);
	if (!json_object_get(ev, "is_main_result"))
		json_object_set_new(ev, "is_main_result", json_false());
	return ev;
}

static json_t *stream_result(void *arg, const json_t *bundle)
{
	(void)arg;
	return result_event(bundle);
}

static json_t *error_event(const char *name, const char *value, const char *traceback)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", name, "value", value,
			 "traceback", traceback);
}

/* The end, after the results: the error (or why the run failed),
 * number_of_executions, end_of_execution. */
static void stream_end(void *arg, const struct api_error *err, const struct run_result *res,
		       const struct http_emitter *out)
{
	struct e2b_stream *st = arg;

	if (err) {
		out->emit(out->cls, error_event(err->code, err->message, ""));
		out->emit(out->cls, json_pack("{s:s}", "type", "end_of_execution"));
		return;
	}
	if (res->has_error)
		out->emit(out->cls, error_event(res->error_name ? res->error_name : "",
						res->error_value ? res->error_value : "",
						res->error_traceback ? res->error_traceback : ""));
	else if (res->status != RESULT_OK)
		/* a limit, the timeout, a kill: no exception of the code's */
		out->emit(out->cls,
			  error_event(result_status_name(res->status),
				      res->message ? res->message : result_status_name(res->status),
				      ""));
	out->emit(out->cls, json_pack("{s:s, s:i}", "type", "number_of_executions",
				      "execution_count", (int)st->count));
	out->emit(out->cls, json_pack("{s:s}", "type", "end_of_execution"));
}

const struct http_stream_shape e2b_stream_shape = {
	.begin = stream_begin,
	.output = stream_output,
	.flush = stream_flush,
	.hold_ms = stream_hold_ms,
	.result = stream_result,
	.end = stream_end,
	.free = stream_free,
};
