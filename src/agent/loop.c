/* The loop: ask the model, run the code it wrote in one session, show it
 * what happened, again, until it answers without code or the budget is
 * spent.  The session is made, run and closed through the engine
 * (engine/sessions.h), as MCP's and the shell's; observations are the text the MCP
 * tools give (engine/result_text.c), with long sections cut. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/internal.h"
#include "engine/engine.h"
#include "engine/audit.h"
#include "engine/sessions.h"
#include "engine/policy.h"
#include "engine/setup.h"
#include "engine/result_text.h"
#include "engine/tool.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define EMPTY_REPLIES_MAX 2 /* replies with neither code nor text, in a row */
#define CODE_ARGS_MAX (8u << 20)

static const char *const outcome_names[] = {
	[AGENT_ANSWERED] = "answered",	 [AGENT_BUDGET_EXHAUSTED] = "budget_exhausted",
	[AGENT_LLM_ERROR] = "llm_error", [AGENT_SETUP_ERROR] = "setup_error",
	[AGENT_STOPPED] = "stopped",
};

const char *agent_outcome_name(enum agent_outcome o)
{
	return (size_t)o < ARRAY_SIZE(outcome_names) && outcome_names[o] ? outcome_names[o] : "?";
}

void agent_config_init(struct agent_config *c)
{
	memset(c, 0, sizeof(*c));
	c->max_steps = AGENT_DEFAULT_MAX_STEPS;
	c->llm_timeout_s = AGENT_DEFAULT_LLM_TIMEOUT_S;
	c->retries = AGENT_DEFAULT_RETRIES;
	c->retry_delay_s = AGENT_RETRY_DELAY_S;
	c->stop_fd = -1;
	c->stop_w = -1;
	c->door = DOOR_CLI;
	engine_session_opts_init(&c->session);
}

int agent_observation(json_t *result, struct buf *b)
{
	return result_text(result, AGENT_SECTION_MAX, true, b);
}

static const char *lang_name(enum session_lang l)
{
	return l == SESSION_JAVASCRIPT ? "javascript" : l == SESSION_BASH ? "bash" : "python";
}

static const char *lang_title(enum session_lang l)
{
	return l == SESSION_JAVASCRIPT ? "JavaScript (Node.js)"
	       : l == SESSION_BASH     ? "bash"
				       : "Python";
}

struct loop {
	const struct agent_config *cfg;
	const char *lang;
	struct llm *llm;
	/* the session, the engine's: in the server's table (cfg->sessions)
	 * or in one of its own (a registry of one, as the shell's); made,
	 * run and closed through engine/sessions.h's pipeline.  Another door
	 * may end it in the server's: e is held by the loop's reference, and
	 * its kernel and workspace are only reached through the engine,
	 * under e's lock. */
	struct engine_sessions own, *reg;
	struct engine_session *e;
	struct engine_caller cl; /* each step: the client, the door, the record */
	json_t *messages, *steps, *transcript;
	bool tools; /* offer the tool in requests */
	unsigned executed, empty;
	struct buf err;
};

/* The caller's stop, or the session ended by another door. */
static bool stopped(const struct loop *L)
{
	return (L->cfg->stop_flag && __atomic_load_n(L->cfg->stop_flag, __ATOMIC_SEQ_CST)) ||
	       (L->e && engine_session_gone(L->e));
}

/* engine_caller.claim: a cell starts only if the run was not stopped
 * (the stop record may have been drained with earlier ones). */
static bool claim(void *cls)
{
	return !stopped(cls);
}

/* Hand an event to the caller; steals ev. */
static void emit(struct loop *L, json_t *ev)
{
	if (ev && L->cfg->on_event)
		L->cfg->on_event(L->cfg->userdata, ev);
	json_decref(ev);
}

static void on_retry(void *userdata, unsigned attempt, long http, double delay_s, const char *why)
{
	emit(userdata,
	     json_pack("{s:s, s:i, s:i, s:f, s:s}", "type", "retry", "attempt", (int)attempt,
		       "http_status", (int)http, "delay_s", delay_s, "why", why));
}

/* ---- the conversation ---- */

static json_t *system_prompt(const struct loop *L)
{
	const struct session_opts *so = &L->cfg->session;
	struct buf b;
	json_t *m;

	buf_init(&b, 1u << 20);
	(void)buf_printf(
		&b,
		"You answer questions by writing and running %s code. To run code, put it "
		"between <execute_%s> and </execute_%s> tags%s. You will get back what it "
		"printed, the value of its last expression, and any error with its "
		"traceback; then continue. Every step runs in the same session: variables, "
		"imports and files persist between steps. Print what you need to see. "
		"When you know the answer, reply with the final answer in plain text, "
		"without any code tags.",
		lang_title(so->lang), L->lang, L->lang,
		L->tools ? " (or call the tool of that name)" : "");
	if (so->preload && *so->preload)
		(void)buf_printf(&b, " Already imported: %s.", so->preload);
	for (const struct engine_tool *const *t = engine_tools(); L->tools && *t; t++)
		if (L->cfg->client && engine_tool_enabled(L->cfg->client->policy, *t))
			(void)buf_printf(&b, " You may also call the %s tool: %s", (*t)->name,
					 (*t)->description);
	for (size_t i = 0; so->files && so->files[i]; i++) {
		const char *base = strrchr(so->files[i], '/');

		(void)buf_printf(&b, "%s%s", i ? ", " : " Files in the working directory: ",
				 base ? base + 1 : so->files[i]);
		if (!so->files[i + 1])
			(void)buf_puts(&b, ".");
	}
	m = json_pack("{s:s, s:s}", "role", "system", "content", buf_str(&b));
	buf_release(&b);
	return m;
}

static json_t *tool_def(const struct loop *L)
{
	char name[64], desc[256];

	snprintf(name, sizeof(name), "execute_%s", L->lang);
	snprintf(desc, sizeof(desc),
		 "Run %s code in a persistent sandboxed session; returns its output, the value of "
		 "the last expression, and any error with its traceback.",
		 lang_title(L->cfg->session.lang));
	json_t *list = json_pack("[{s:s, s:{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:[s]}}}]", "type",
				 "function", "function", "name", name, "description", desc,
				 "parameters", "type", "object", "properties", "code", "type",
				 "string", "description", "the code to run", "required", "code");

	/* the tools besides code the policy enables, with their schemas (the
	 * workspace is this session's: no session_id to give) */
	for (const struct engine_tool *const *t = engine_tools(); L->cfg->client && *t; t++) {
		json_t *schema;

		if (!engine_tool_enabled(L->cfg->client->policy, *t))
			continue;
		schema = json_loads((*t)->input_schema, 0, NULL);
		json_object_del(json_object_get(schema, "properties"), "session_id");
		json_array_append_new(list,
				      json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function",
						"function", "name", (*t)->name, "description",
						(*t)->description, "parameters", schema));
	}
	return list;
}

static json_t *request_body(const struct loop *L)
{
	json_t *body = json_pack("{s:s, s:O, s:b}", "model", L->cfg->model ? L->cfg->model : "",
				 "messages", L->messages, "stream", 0);

	if (body && L->tools)
		json_object_set_new(body, "tools", tool_def(L));
	return body;
}

/* ---- one step's code ---- */

struct call {
	const char *id;			/* tool_call_id, or NULL for code in the text */
	char *code;			/* owned; NULL: see problem (or tool) */
	const struct engine_tool *tool; /* a tool besides code, with args (owned) */
	json_t *args;
	const char *source;
	char problem[256]; /* why there is no code to run */
};

/* The code of a tool call: {"code": "..."} as a JSON string.  A call of
 * another function, or arguments that do not parse, is a problem the
 * model is told about. */
static void tool_call_code(const struct loop *L, json_t *tc, struct call *c)
{
	json_t *fn = json_object_get(tc, "function"), *args;
	const char *name = json_string_value(json_object_get(fn, "name"));
	const char *text = json_string_value(json_object_get(fn, "arguments"));
	char want[64];

	c->id = json_string_value(json_object_get(tc, "id"));
	c->source = "tool";
	snprintf(want, sizeof(want), "execute_%s", L->lang);
	if (name && L->cfg->client && engine_tool_find(name) &&
	    engine_tool_enabled(L->cfg->client->policy, engine_tool_find(name))) {
		c->tool = engine_tool_find(name);
		c->args = text && strlen(text) <= TOOL_ARGS_MAX ? json_loads(text, 0, NULL) : NULL;
		if (!json_is_object(c->args)) {
			json_decref(c->args);
			c->args = NULL;
			snprintf(c->problem, sizeof(c->problem),
				 "the arguments of %s must be a JSON object (see its parameters)",
				 name);
		}
		return;
	}
	if (!name || strcmp(name, want)) {
		snprintf(c->problem, sizeof(c->problem), "there is no tool '%.64s': call %s",
			 name ? name : "", want);
		return;
	}
	args = text && strlen(text) <= CODE_ARGS_MAX
		       ? json_loads(text, 0, NULL)
		       : json_incref(json_object_get(fn, "arguments"));
	if (json_is_string(json_object_get(args, "code")))
		c->code = strdup(json_string_value(json_object_get(args, "code")));
	else
		snprintf(c->problem, sizeof(c->problem),
			 "the arguments of %s must be a JSON object {\"code\": \"...\"}", want);
	json_decref(args);
}

/* The reply, as the assistant message sent back next time: content and
 * the tool calls, nothing else the endpoint put in it. */
static json_t *assistant_message(json_t *msg)
{
	json_t *m = json_pack("{s:s, s:O}", "role", "assistant", "content",
			      json_object_get(msg, "content") ? json_object_get(msg, "content")
							      : json_null());
	json_t *calls = json_object_get(msg, "tool_calls");

	if (json_array_size(calls))
		json_object_set(m, "tool_calls", calls);
	return m;
}

/* ---- running it ---- */

static json_t *execute(struct loop *L, const char *code, double *ret_exec_ms)
{
	struct session_exec_opts eo = { .timeout_s = L->cfg->exec_timeout_s,
					.live_stdout = -1,
					.live_stderr = -1,
					.stop_fd = L->cfg->stop_fd,
					.hangup_fd = -1 };
	struct engine_session_error err;
	struct run_result res;
	uint64_t t0 = now_ns();
	json_t *args = json_pack("{s:s, s:f}", "agent", "step", "timeout", L->cfg->exec_timeout_s);
	json_t *j;
	int k;

	/* the engine's pipeline, as a cell of a session: the policy (a
	 * refusal is a result naming the rule; no person is asked mid-run),
	 * the cell, the record */
	k = engine_session_run(&L->cl, L->e, code, strlen(code), &eo, args, &res, &err);
	json_decref(args);
	*ret_exec_ms = res.status == RESULT_REJECTED ? 0 : (double)(now_ns() - t0) / 1e6;
	if (k < 0) {
		bool ended = k == -ECANCELED || k == -ESRCH;

		run_result_release(&res);
		return json_pack(
			"{s:s, s:{s:s, s:s, s:s}}", "status", "error", "error", "name",
			"SessionError", "value",
			k == -ECANCELED	 ? "the run was stopped"
			: err.message[0] ? err.message
					 : strerror(-k),
			"traceback",
			ended ? "the run was stopped, or its session closed"
			      : "the session cannot go on: its kernel could not be restarted");
	}
	j = run_result_to_json(&res);
	run_result_release(&res);
	return j;
}

/* A call of a tool besides code, through the engine's pipeline (the
 * policy, the audit log), on this session's workspace.  A refusal is a
 * result the model reads, like an SQLError. */
static json_t *run_tool(struct loop *L, const struct call *c, double *ret_ms)
{
	struct engine_tool_request rq = { .name = c->tool->name, .args = c->args };
	struct engine_session_error err;
	struct engine_tool_ctx ctx;
	char *msg = err.message;
	uint64_t t0 = now_ns();
	json_t *res = NULL;
	int k, ws;

	engine_tool_ctx_init(&ctx);
	ctx.policies = L->cfg->policies;
	ctx.stop_flag = L->cfg->stop_flag;
	/* a fd of our own: the session's lock is not held while the tool
	 * runs, and another door may end the session meanwhile */
	ws = engine_session_workspace_fd(L->e);
	ctx.workspace_fd = ws < 0 ? -1 : ws;
	/* the loop's caller: its client, door, log and request id; no
	 * person to ask, so a call the policy holds is refused */
	k = ws < 0 ? (snprintf(msg, sizeof(err.message), "the session has no workspace now: %s",
			       ws == -ESRCH ? "it was closed" : "run code in it first"),
		      ws)
		   : engine_tool_call(&L->cl, &ctx, &rq, &res, &err);
	if (ws >= 0)
		close(ws);
	*ret_ms = (double)(now_ns() - t0) / 1e6;
	if (k < 0)
		res = json_pack("{s:{s:s, s:s}}", "error", "name", "ToolError", "value", msg);
	return res;
}

/* What the model is told after a tool call: its result as JSON, cut. */
static void tool_feedback(const struct loop *L, const struct call *c, json_t *result,
			  struct buf *obs, struct buf *b)
{
	char *text = json_dumps(result, JSON_COMPACT);

	(void)text_head_tail(text ? text : "{}", text ? strlen(text) : 2, 2 * AGENT_SECTION_MAX,
			     obs);
	free(text);
	(void)buf_printf(b, "Result of the %s tool (step %u of %u):\n%s\n", c->tool->name,
			 L->executed, L->cfg->max_steps, buf_str(obs));
	if (L->executed >= L->cfg->max_steps)
		(void)buf_puts(b, "That was your last step: give your final answer now, in plain "
				  "text, without code.");
}

/* What the model is told after a step: the observation, and on an error
 * the reflection request with the code it wrote. */
static void feedback(const struct loop *L, const struct call *c, json_t *result, const char *obs,
		     struct buf *b)
{
	const char *code = c->code;
	const char *status = json_string_value(json_object_get(result, "status"));
	unsigned left = L->cfg->max_steps - L->executed;

	if (status && !strcmp(status, "ok")) {
		(void)buf_printf(b, "Observation (step %u of %u):\n%s\n", L->executed,
				 L->cfg->max_steps, obs);
	} else {
		(void)buf_printf(b,
				 "The code failed (step %u of %u):\n%s\n\nThe code was:\n```%s\n",
				 L->executed, L->cfg->max_steps, obs, L->lang);
		(void)text_head_tail(code, strlen(code), AGENT_SECTION_MAX, b);
		/* a model that called the tool is asked to call it again */
		(void)buf_printf(b,
				 "\n```\nFix the error and run the corrected code %s%s%s. "
				 "Variables from earlier steps that succeeded are still "
				 "defined.\n",
				 c->id ? "with the execute_" : "in <execute_", L->lang,
				 c->id ? " tool" : "> tags");
	}
	if (left == 0)
		(void)buf_puts(b, "That was your last step: give your final answer now, in plain "
				  "text, without code.");
	else if (status && !strcmp(status, "ok"))
		(void)buf_printf(b, "Run more code, or give the final answer without code tags.");
}

static void add_feedback_message(struct loop *L, const struct call *c, const char *text)
{
	json_t *m = c->id ? json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id", c->id,
				      "content", text)
			  : json_pack("{s:s, s:s}", "role", "user", "content", text);

	json_array_append_new(L->messages, m);
}

/* Run one piece of code and record the step. */
static void run_call(struct loop *L, struct call *c, const char *reply, double llm_ms,
		     uint64_t t_extract_ns)
{
	double exec_ms = 0;
	uint64_t t0 = now_ns();
	json_t *result = NULL, *step;
	const char *status = "no_code";
	struct buf obs, fb;

	buf_init(&obs, 1u << 20);
	buf_init(&fb, 2u << 20);
	if (c->code) {
		emit(L, json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "code", "step",
				  (int)L->executed, "language", L->lang, "source", c->source,
				  "code", c->code));
		result = execute(L, c->code, &exec_ms);
		(void)agent_observation(result, &obs);
		feedback(L, c, result, buf_str(&obs), &fb);
		status = json_string_value(json_object_get(result, "status"));
	} else if (c->tool && c->args) {
		emit(L, json_pack("{s:s, s:i, s:s, s:O}", "type", "tool_call", "step",
				  (int)L->executed, "tool", c->tool->name, "arguments", c->args));
		result = run_tool(L, c, &exec_ms);
		tool_feedback(L, c, result, &obs, &fb);
		status = json_object_get(result, "error") ? "error" : "ok";
	} else {
		(void)buf_puts(&obs, c->problem);
		(void)buf_printf(&fb, "%s\n", c->problem);
	}
	add_feedback_message(L, c, buf_str(&fb));
	step = json_pack("{s:i, s:s?, s:s?, s:s, s:s, s:s, s:o, s:{s:f, s:f, s:f}}", "step",
			 (int)L->executed, "reply", reply, "code", c->code, "language", L->lang,
			 "source", c->source, "status", status ? status : "error", "observation",
			 json_string(buf_str(&obs)), "timing", "llm_ms", llm_ms, "exec_ms", exec_ms,
			 "codecell_ms", (double)(now_ns() - t0 + t_extract_ns) / 1e6);
	if (step && c->tool)
		json_object_set_new(step, "tool", json_string(c->tool->name));
	if (step) {
		json_array_append(L->steps, step);
		json_object_set_new(step, "type", json_string("observation"));
		json_object_set(step, "result", result ? result : json_null());
		emit(L, step);
	}
	json_decref(result);
	buf_release(&obs);
	buf_release(&fb);
}

/* A call past the budget: the model is told it did not run (a tool call
 * must have its tool message), and the client sees a notice. */
static void skip_call(struct loop *L, const struct call *c)
{
	char text[256];

	snprintf(text, sizeof(text),
		 "Not run: the step budget is spent (--max-steps %u). Give your final answer now, "
		 "in plain text, without code.",
		 L->cfg->max_steps);
	add_feedback_message(L, c, text);
	emit(L, json_pack("{s:s, s:s}", "type", "notice", "text",
			  "a call past the step budget was not run"));
}

/* ---- a turn ---- */

enum turn { TURN_AGAIN, TURN_DONE };

static enum turn finish(struct loop *L, enum agent_outcome o, const char *answer, int *ret)
{
	if (o == AGENT_STOPPED && L->e && engine_session_gone(L->e) && !L->err.len)
		(void)buf_printf(&L->err,
				 "the session '%s' was closed by another client or door "
				 "(DELETE /v1/sessions/ID): the run cannot go on",
				 L->e->id);
	json_object_set_new(L->transcript, "outcome", json_string(agent_outcome_name(o)));
	if (answer)
		json_object_set_new(L->transcript, "answer", json_string(answer));
	if (L->err.len)
		json_object_set_new(L->transcript, "error", json_string(buf_str(&L->err)));
	*ret = o;
	return TURN_DONE;
}

static const char *trimmed(const char *s, char **ret_copy)
{
	size_t n;

	while (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t'))
		n--;
	*ret_copy = strndup(s, n);
	return *ret_copy ? *ret_copy : "";
}

/* The model's calls in this reply: its tool calls, or the code in its
 * text.  Returns how many (0: none, the reply is an answer). */
static size_t collect(struct loop *L, json_t *msg, const char *text, struct call *calls, size_t max)
{
	json_t *tcs = json_object_get(msg, "tool_calls"), *tc;
	struct agent_code ac;
	size_t i, n = 0;
	int r;

	json_array_foreach (tcs, i, tc) {
		if (n == max)
			break;
		tool_call_code(L, tc, &calls[n++]);
	}
	if (n)
		return n;
	r = agent_extract(text, strlen(text), L->lang, &ac);
	if (r == -E2BIG) {
		calls[0].source = "text";
		snprintf(calls[0].problem, sizeof(calls[0].problem),
			 "your code is longer than %u MiB: run it in smaller parts",
			 ENGINE_CODE_MAX >> 20);
		return 1;
	}
	if (r < 0 || (!ac.code && !ac.cut))
		return 0;
	calls[0].source = ac.code ? ac.source : "tag";
	calls[0].code = ac.code;
	ac.code = NULL;
	if (!calls[0].code)
		snprintf(calls[0].problem, sizeof(calls[0].problem),
			 "your reply was cut off before </execute_%s>: write shorter code, or "
			 "split it over several steps",
			 L->lang);
	return 1;
}

static enum turn turn(struct loop *L, int *ret)
{
	json_t *body = request_body(L), *choice = NULL, *msg;
	struct call calls[16];
	uint64_t t0 = now_ns(), t1;
	const char *text;
	char *answer = NULL;
	double llm_ms;
	size_t n;
	int r, http = 0;

	buf_reset(&L->err);
	r = body ? llm_chat(L->llm, body, &choice, &http, &L->err, on_retry, L) : -ENOMEM;
	json_decref(body);
	llm_ms = (double)(now_ns() - t0) / 1e6;
	if (r == -EINTR || stopped(L)) {
		json_decref(choice);
		buf_reset(&L->err);
		return finish(L, AGENT_STOPPED, NULL, ret);
	}
	if (r < 0 && http == 400 && L->tools && L->cfg->tools == AGENT_TOOLS_AUTO) {
		/* Ollama and others refuse tools for models without them */
		L->tools = false;
		json_array_set_new(L->messages, 0, system_prompt(L));
		emit(L, json_pack("{s:s, s:s}", "type", "notice", "text",
				  "the endpoint refused the tool definition (HTTP 400): asking "
				  "again without it"));
		return TURN_AGAIN;
	}
	if (r < 0)
		return finish(L, AGENT_LLM_ERROR, NULL, ret);
	t1 = now_ns();
	msg = json_object_get(choice, "message");
	text = json_string_value(json_object_get(msg, "content"));
	text = text ? text : "";
	memset(calls, 0, sizeof(calls));
	n = collect(L, msg, text, calls, ARRAY_SIZE(calls));
	t1 = now_ns() - t1;
	json_array_append_new(L->messages, assistant_message(msg));
	if (n == 0) {
		const char *a = trimmed(text, &answer);

		if (*a || ++L->empty > EMPTY_REPLIES_MAX) {
			enum turn t;

			if (!*a)
				(void)buf_puts(
					&L->err,
					"the model sent empty replies: no code and no answer");
			t = finish(L, *a ? AGENT_ANSWERED : AGENT_LLM_ERROR, *a ? a : NULL, ret);
			free(answer);
			json_decref(choice);
			return t;
		}
		free(answer);
		json_array_append_new(
			L->messages,
			json_pack("{s:s, s:s}", "role", "user", "content",
				  "Your reply was empty. Run code in tags, or give the "
				  "final answer."));
		json_decref(choice);
		return TURN_AGAIN;
	}
	L->empty = 0;
	if (L->executed >= L->cfg->max_steps) {
		for (size_t i = 0; i < n; i++) {
			free(calls[i].code);
			json_decref(calls[i].args);
		}
		json_decref(choice);
		(void)buf_printf(&L->err,
				 "the step budget is spent (--max-steps %u) and the model "
				 "still sent code",
				 L->cfg->max_steps);
		return finish(L, AGENT_BUDGET_EXHAUSTED, NULL, ret);
	}
	/* the budget counts calls run, not replies: one reply may carry
	 * many tool calls; each past the budget is answered, not run */
	for (size_t i = 0; i < n && !stopped(L); i++) {
		if (L->executed >= L->cfg->max_steps) {
			skip_call(L, &calls[i]);
			continue;
		}
		L->executed++;
		run_call(L, &calls[i], i == 0 ? text : NULL, i == 0 ? llm_ms : 0, i == 0 ? t1 : 0);
	}
	for (size_t i = 0; i < n; i++) {
		free(calls[i].code);
		json_decref(calls[i].args);
	}
	json_decref(choice);
	if (stopped(L))
		return finish(L, AGENT_STOPPED, NULL, ret);
	return TURN_AGAIN;
}

/* ---- the whole run ---- */

static int start(struct loop *L, const char *question)
{
	struct engine_session_spec spec = { .so = L->cfg->session, .door = "agent" };
	struct engine_session_error err;
	int r;

	r = llm_new(L->cfg, &L->llm, &L->err);
	if (r < 0) {
		/* what the caller held for the session goes back */
		if (L->cfg->sessions)
			engine_session_unhold(L->reg,
					      L->cfg->session_checked ? L->cfg->client : NULL);
		return r;
	}
	if (L->cfg->sessions) {
		/* the caller reserved its place (and with session_checked,
		 * took the client's slot); the run ends it, not the reaper
		 * while the model thinks */
		spec.held = true;
		spec.so.idle_timeout_s = 0;
		spec.has_stop = L->cfg->stop_w >= 0;
		spec.stop_r = L->cfg->stop_fd;
		spec.stop_w = L->cfg->stop_w;
	}
	/* the door checked the session (agent.h, session_checked): made
	 * here without a second check, which would count it twice */
	if (L->cfg->session_checked) {
		struct engine_caller door = { .door = (enum engine_door)L->cfg->door };

		if (L->cfg->sessions)
			door.client = L->cfg->client; /* its slot goes with the entry */
		r = engine_session_new(L->reg, &door, &spec, &L->e, &err);
	} else {
		r = engine_session_new(L->reg, &L->cl, &spec, &L->e, &err);
	}
	if (r < 0) {
		(void)buf_printf(&L->err, "cannot start the %s session: %s", L->lang,
				 r == -EPERM	  ? err.verdict.message
				 : err.message[0] ? err.message
						  : strerror(-r));
		return r;
	}
	json_array_append_new(L->messages, system_prompt(L));
	json_array_append_new(L->messages,
			      json_pack("{s:s, s:s}", "role", "user", "content", question));
	return 0;
}

enum agent_outcome agent_run(const struct agent_config *cfg, const char *question,
			     json_t **ret_transcript)
{
	struct loop L = { .cfg = cfg,
			  .lang = lang_name(cfg->session.lang),
			  .tools = cfg->tools != AGENT_TOOLS_OFF };
	int outcome = AGENT_SETUP_ERROR;

	buf_init(&L.err, 64u << 10);
	L.cl.client = cfg->client;
	L.cl.name = cfg->client ? NULL : "cli";
	L.cl.door = (enum engine_door)cfg->door;
	L.cl.audit = cfg->audit;
	L.cl.request_id = cfg->request_id;
	L.cl.claim = claim;
	L.cl.claim_cls = &L;
	/* a failure shows at the session's start */
	(void)engine_sessions_init(&L.own, 1);
	L.reg = cfg->sessions ? cfg->sessions : &L.own;
	L.messages = json_array();
	L.steps = json_array();
	L.transcript = json_pack("{s:s, s:s, s:s, s:i, s:O, s:O}", "question", question, "model",
				 cfg->model ? cfg->model : "", "language", L.lang, "max_steps",
				 (int)cfg->max_steps, "steps", L.steps, "messages", L.messages);
	emit(&L, json_pack("{s:s, s:s, s:s, s:i}", "type", "start", "model",
			   cfg->model ? cfg->model : "", "language", L.lang, "max_steps",
			   (int)cfg->max_steps));
	if (start(&L, question) < 0)
		finish(&L, AGENT_SETUP_ERROR, NULL, &outcome);
	else
		while (turn(&L, &outcome) == TURN_AGAIN)
			if (stopped(&L)) {
				finish(&L, AGENT_STOPPED, NULL, &outcome);
				break;
			}
	json_object_set_new(L.transcript, "steps_run", json_integer(L.executed));
	/* the session is gone before "done" says so: a caller that starts
	 * another run on reading it finds the session slot free */
	if (L.e) {
		/* its close recorded where its start was checked here */
		engine_session_close(L.reg, cfg->session_checked ? NULL : &L.cl, L.e);
		engine_session_unref(TAKE_PTR(L.e));
	}
	emit(&L, json_pack("{s:s, s:O, s:O, s:O, s:i}", "type", "done", "outcome",
			   json_object_get(L.transcript, "outcome"), "answer",
			   json_object_get(L.transcript, "answer")
				   ? json_object_get(L.transcript, "answer")
				   : json_null(),
			   "error",
			   json_object_get(L.transcript, "error")
				   ? json_object_get(L.transcript, "error")
				   : json_null(),
			   "steps", (int)L.executed));
	engine_sessions_release(&L.own);
	llm_free(L.llm);
	buf_release(&L.err);
	json_decref(L.messages);
	json_decref(L.steps);
	*ret_transcript = L.transcript;
	return (enum agent_outcome)outcome;
}
