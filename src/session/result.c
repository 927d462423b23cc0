/* The result object of DESIGN.md, as JSON. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "session/result.h"
#include "sandbox/sandbox.h"
#include "util/utf8.h"
#include "util/banned.h"

/* Program output is bytes; JSON wants UTF-8.  Invalid sequences become
 * U+FFFD so nothing is dropped silently and the object stays valid. */
static json_t *json_text(const char *s, size_t n)
{
	char *t;
	size_t len;
	json_t *j;

	if (!s)
		return json_string("");
	if (utf8_valid(s, n, NULL))
		return json_stringn(s, n);
	t = utf8_repair(s, n, &len);
	j = t ? json_stringn(t, len) : NULL;
	free(t);
	return j;
}

json_t *run_result_limits_json(unsigned bits)
{
	json_t *a = json_array();

	for (unsigned bit = 1; bit <= SANDBOX_LIMIT_LANDLOCK; bit <<= 1)
		if (bits & bit)
			json_array_append_new(a, json_string(sandbox_limit_name(bit)));
	return a;
}

static json_t *signal_json(int sig)
{
	const char *abbrev;
	char name[32];

	if (!sig)
		return json_null();
	abbrev = sigabbrev_np(sig);
	if (!abbrev)
		return json_integer(sig);
	snprintf(name, sizeof(name), "SIG%s", abbrev);
	return json_string(name);
}

static json_t *error_json(const struct run_result *r)
{
	if (r->has_error)
		return json_pack("{s:o, s:o, s:o}", "name",
				 json_text(r->error_name, strlen(r->error_name)), "value",
				 json_text(r->error_value, strlen(r->error_value)), "traceback",
				 json_text(r->error_traceback, strlen(r->error_traceback)));
	if (r->message)
		return json_pack("{s:s, s:o, s:s}", "name",
				 r->setup_failed ? "SandboxError"
				 : r->rule	 ? "PolicyRejected"
						 : "InvalidRequest",
				 "value", json_text(r->message, strlen(r->message)), "traceback",
				 "");
	return json_null();
}

/* [{"stream": "stderr", "text": "A\n"}, {"stream": "stdout", ...}, ...]:
 * the logs' own bytes, in order */
static json_t *outputs_json(const struct run_result *r)
{
	json_t *a = json_array();

	for (size_t i = 0; i < r->n_outputs; i++) {
		const struct outorder_chunk *c = &r->outputs[i];
		const char *text = c->stream ? r->err : r->out;
		size_t len = c->stream ? r->err_len : r->out_len;

		if (!text || c->off > len || c->len > len - c->off)
			continue; /* the logs were taken (see api/exec.c) */
		json_array_append_new(a, json_pack("{s:s, s:o}", "stream",
						   c->stream ? "stderr" : "stdout", "text",
						   json_text(text + c->off, c->len)));
	}
	return a;
}

json_t *run_result_to_json(const struct run_result *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "status", json_string(result_status_name(r->status)));
	json_object_set_new(o, "logs",
			    json_pack("{s:o, s:o}", "stdout", json_text(r->out, r->out_len),
				      "stderr", json_text(r->err, r->err_len)));
	json_object_set_new(o, "outputs", outputs_json(r));
	json_object_set_new(o, "results", r->results ? json_incref(r->results) : json_array());
	json_object_set_new(o, "error", error_json(r));
	json_object_set_new(o, "exit_code",
			    r->has_exit_code ? json_integer(r->exit_code) : json_null());
	json_object_set_new(o, "signal", signal_json(r->signal));
	json_object_set_new(o, "execution_count",
			    r->execution_count ? json_integer(r->execution_count) : json_null());
	if (r->from_session)
		json_object_set_new(o, "restarted", json_boolean(r->restarted));
	json_object_set_new(o, "duration_ms", json_real(r->duration_ms));
	json_object_set_new(o, "usage",
			    json_pack("{s:f, s:I}", "cpu_ms", r->cpu_ms, "max_rss_kb",
				      (json_int_t)r->max_rss_kb));
	json_object_set_new(
		o, "truncated",
		json_pack("{s:b, s:b}", "stdout", r->out_truncated, "stderr", r->err_truncated));
	/* sessions' results[] can be cut (result_limit); one-shot runs have none */
	if (r->from_session)
		json_object_set_new(json_object_get(o, "truncated"), "results",
				    json_boolean(r->results_truncated));
	json_object_set_new(o, "limits_unenforced", run_result_limits_json(r->limits_unenforced));
	json_object_set_new(o, "limits_hit", run_result_limits_json(r->limits_hit));
	if (r->warning)
		json_object_set_new(o, "warning", json_text(r->warning, strlen(r->warning)));
	/* a policy's rejection names the rule it broke */
	if (r->rule)
		json_object_set_new(o, "rule", json_string(r->rule));
	return o;
}

static const char *const status_names[] = {
	[RESULT_OK] = "ok",
	[RESULT_ERROR] = "error",
	[RESULT_TIMEOUT] = "timeout",
	[RESULT_MEMORY_LIMIT] = "memory_limit",
	[RESULT_OUTPUT_LIMIT] = "output_limit",
	[RESULT_KILLED] = "killed",
	[RESULT_REJECTED] = "rejected",
};

const char *result_status_name(enum result_status s)
{
	return s <= RESULT_REJECTED ? status_names[s] : "error";
}

void run_result_release(struct run_result *r)
{
	free(r->out);
	free(r->err);
	free(r->outputs);
	free(r->error_name);
	free(r->error_value);
	free(r->error_traceback);
	free(r->message);
	free(r->warning);
	json_decref(r->results);
	memset(r, 0, sizeof(*r));
}

int run_result_set_logs(struct run_result *r, const struct capture *out, const struct capture *err,
			const struct outorder *order)
{
	const struct capture *caps[2] = { out, err };
	struct outorder_chunk *chunks = NULL;
	size_t n = 0, out_len, err_len;
	char *o = capture_text(out, &out_len), *e = capture_text(err, &err_len);

	if (!o || !e || outorder_chunks(order, caps, &chunks, &n) < 0) {
		free(o);
		free(e);
		return -ENOMEM;
	}
	r->out = o;
	r->out_len = out_len;
	r->out_truncated = capture_truncated(out);
	r->err = e;
	r->err_len = err_len;
	r->err_truncated = capture_truncated(err);
	r->outputs = chunks;
	r->n_outputs = n;
	return 0;
}

void run_result_set_exit(struct run_result *r, const struct sandbox_exit *x)
{
	r->limits_hit |= x->limits_hit;
	r->signal = x->signal;
	switch (x->end) {
	case SANDBOX_END_EXITED:
		r->has_exit_code = true;
		r->exit_code = x->exit_code;
		r->signal = 0;
		r->status = x->exit_code == 0 ? RESULT_OK : RESULT_ERROR;
		break;
	case SANDBOX_END_SIGNALED:
		r->status = (x->limits_hit & SANDBOX_LIMIT_CPU) ? RESULT_TIMEOUT : RESULT_KILLED;
		break;
	case SANDBOX_END_TIMEOUT:
		r->status = RESULT_TIMEOUT;
		break;
	case SANDBOX_END_MEMORY:
		r->status = RESULT_MEMORY_LIMIT;
		r->limits_hit |= SANDBOX_LIMIT_MEMORY;
		break;
	case SANDBOX_END_KILLED:
		if (x->kill_reason == SANDBOX_KILL_STOP) {
			r->status = RESULT_KILLED;
			r->stopped = true;
		} else {
			r->status = RESULT_OUTPUT_LIMIT;
			r->limits_hit |= SANDBOX_LIMIT_OUTPUT;
		}
		break;
	case SANDBOX_END_SETUP_FAILED:
	case SANDBOX_END_RUNNING:
		break;
	}
	r->duration_ms = (double)x->duration_ns / 1e6;
	r->cpu_ms = (double)x->cpu_ns / 1e6;
	r->max_rss_kb = x->peak_memory / 1024;
}
