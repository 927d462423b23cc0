/* The tools besides code: the registry and the one pipeline every door
 * calls (engine/tool.h).  The doors stay thin: they build a caller, a ctx
 * and a request, call engine_tool_call and shape the answer. */
#include "engine/tool.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine/audit.h"
#include "engine/call.h"
#include "util/macro.h"
#include "util/netguard.h"
#include "util/timeutil.h"
#include "util/banned.h"

extern const struct engine_tool engine_tool_sql, engine_tool_http;

/* Every tool, NULL-terminated. */
static const struct engine_tool *const tools[] = {
	&engine_tool_sql,
	&engine_tool_http,
	NULL,
};

const struct engine_tool *const *engine_tools(void)
{
	return tools;
}

const struct engine_tool *engine_tool_find(const char *name)
{
	for (size_t i = 0; name && tools[i]; i++)
		if (!strcmp(tools[i]->name, name))
			return tools[i];
	return NULL;
}

bool engine_tool_enabled(const struct engine_policy *p, const struct engine_tool *t)
{
	return p && t && (p->tools & (1u << t->action));
}

void engine_tool_ctx_init(struct engine_tool_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->workspace_fd = -1;
	ctx->hangup_fd = -1;
}

json_t *engine_tools_json(const struct engine_policy *p)
{
	json_t *list = json_array();

	for (size_t i = 0; tools[i]; i++) {
		const struct engine_tool *t = tools[i];

		if (!engine_tool_enabled(p, t))
			continue;
		json_array_append_new(
			list,
			json_pack("{s:s, s:s, s:s, s:o, s:{s:b, s:b, s:b, s:b}}", "name", t->name,
				  "title", t->title, "description", t->description, "input_schema",
				  json_loads(t->input_schema, 0, NULL), "annotations", "read_only",
				  t->read_only, "destructive", t->destructive, "idempotent",
				  t->idempotent, "open_world", t->open_world));
	}
	return list;
}

/* ---- the arguments against the schema ---- */

static bool type_is(json_t *v, const char *type)
{
	return !strcmp(type, "string")	  ? json_is_string(v)
	       : !strcmp(type, "integer") ? json_is_integer(v)
	       : !strcmp(type, "number")  ? json_is_number(v)
	       : !strcmp(type, "boolean") ? json_is_boolean(v)
	       : !strcmp(type, "object")  ? json_is_object(v)
	       : !strcmp(type, "array")	  ? json_is_array(v)
	       : !strcmp(type, "null")	  ? json_is_null(v)
					  : false;
}

/* The schema's "type" of one property: a name or a list of names. */
static bool type_fits(json_t *v, json_t *type)
{
	size_t i;
	json_t *t;

	if (!type)
		return true;
	if (json_is_string(type))
		return type_is(v, json_string_value(type));
	json_array_foreach (type, i, t)
		if (json_is_string(t) && type_is(v, json_string_value(t)))
			return true;
	return false;
}

/* The top level of a tool's schema: an object, its properties' types,
 * the required ones, no others.  The tool checks the values again. */
static int check_args(const struct engine_tool *t, json_t *args, char *msg, size_t n)
{
	json_t *schema = json_loads(t->input_schema, 0, NULL), *props, *v;
	size_t size = json_dumpb(args, NULL, 0, JSON_COMPACT), i;
	const char *k;
	int r = -EINVAL;

	props = json_object_get(schema, "properties");
	if (!json_is_object(args))
		snprintf(msg, n, "the arguments of '%s' must be a JSON object", t->name);
	else if (size > TOOL_ARGS_MAX)
		snprintf(msg, n, "the arguments of '%s' are %zu bytes of JSON, at most %u", t->name,
			 size, TOOL_ARGS_MAX);
	else
		r = 0;
	json_object_foreach (r == 0 ? args : NULL, k, v) {
		json_t *p = json_object_get(props, k);

		if (!p) {
			snprintf(msg, n, "unknown argument '%.64s' of '%s' (see its input schema)",
				 k, t->name);
			r = -EINVAL;
			break;
		}
		if (!type_fits(v, json_object_get(p, "type"))) {
			snprintf(
				msg, n,
				"argument '%.64s' of '%s' has the wrong type (see its input schema)",
				k, t->name);
			r = -EINVAL;
			break;
		}
	}
	json_array_foreach (r == 0 ? json_object_get(schema, "required") : NULL, i, v)
		if (json_is_string(v) && !json_object_get(args, json_string_value(v))) {
			snprintf(msg, n, "'%s' needs the argument '%s'", t->name,
				 json_string_value(v));
			r = -EINVAL;
			break;
		}
	json_decref(schema);
	return r;
}

/* ---- the pipeline ---- */

const struct engine_tool *engine_tool_of_action(enum engine_action a)
{
	for (size_t i = 0; tools[i]; i++)
		if (tools[i]->action == a)
			return tools[i];
	return NULL;
}

static void tool_err(struct engine_session_error *err, int http, const char *code)
{
	err->http = http;
	err->code = code;
}

static int check_tool(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	const struct engine_tool *t = arg;

	return engine_check_tool(cl->client, cl->door, t->action, v);
}

/* The call itself, after the policy: 0 with *ret; -errno with err set. */
static int call_tool(const struct engine_tool *t, struct engine_caller *cl,
		     const struct engine_tool_ctx *ctx, json_t *args, json_t **ret,
		     struct engine_session_error *err)
{
	struct engine_tool_ctx c = *ctx;
	int r;

	/* the tool reads the caller's policy (databases, hosts) */
	c.client = cl->client;
	c.door = cl->door;
	err->message[0] = '\0';
	r = t->call(&c, args, ret, err->message, sizeof(err->message));
	if (r == 0)
		return 0;
	tool_err(err,
		 r == -EINVAL  ? 400
		 : r == -EPERM ? 403
			       : 500,
		 r == -EINVAL  ? "invalid_arguments"
		 : r == -EPERM ? "rejected"
			       : "internal");
	if (!err->message[0])
		snprintf(err->message, sizeof(err->message), "the %s tool failed: %s", t->name,
			 strerror(-r));
	if (r == -EPERM) {
		/* refused by the tool's own settings in the policy (a database
		 * or a host it does not name) */
		err->verdict.allowed = false;
		err->verdict.rule = "tools";
	}
	return r;
}

int engine_tool_call(struct engine_caller *cl, const struct engine_tool_ctx *ctx,
		     const struct engine_tool_request *rq, json_t **ret,
		     struct engine_session_error *err)
{
	const struct engine_tool *t = engine_tool_find(rq->name);
	struct engine_audit_record rec = { .session = rq->session, .args = rq->args };
	struct engine_approval_note an;
	struct engine_tool_ctx redact_ctx = *ctx;
	uint64_t t0 = now_ns();
	json_t *res = NULL;
	int r;

	memset(err, 0, sizeof(*err));
	if (!t) {
		tool_err(err, 404, "tool_not_found");
		snprintf(err->message, sizeof(err->message),
			 "no tool '%.64s' (GET /v1/tools lists those this client may call)",
			 rq->name ? rq->name : "");
		return -ENOENT;
	}
	rec.action = t->action;
	/* the record's arguments without the secrets the policy holds */
	redact_ctx.client = cl->client;
	redact_ctx.door = cl->door;
	if (cl->audit && t->redact && rq->args && (rec.args = json_deep_copy(rq->args)))
		t->redact(&redact_ctx, rec.args);
	r = check_args(t, rq->args, err->message, sizeof(err->message));
	if (r < 0) {
		tool_err(err, 400, "invalid_arguments");
		rec.status = "invalid";
		goto record;
	}
	if (!cl->client) {
		struct engine_verdict *v = &err->verdict;

		snprintf(v->message, sizeof(v->message), "no client: tools need a policy");
		v->rule = "tools";
		v->http = 403;
		tool_err(err, 403, "rejected");
		snprintf(err->message, sizeof(err->message), "%s", v->message);
		rec.verdict = v;
		r = -EPERM;
		goto record;
	}
	/* what a person approves is the tool's arguments */
	r = engine_call_check(cl, &rec, check_tool, (void *)t, rq->args, &an, err);
	if (r < 0)
		goto out; /* recorded there */
	r = call_tool(t, cl, ctx, rq->args, &res, err);
	rec.verdict = &err->verdict;
	rec.status = r == 0	    ? (json_object_get(res, "error") ? "error" : "ok")
		     : r == -EINVAL ? "invalid"
		     : r == -EPERM  ? "refused"
				    : "error";
	/* the result's size, for the record only */
	rec.bytes = res && cl->audit ? json_dumpb(res, NULL, 0, JSON_COMPACT) : 0;
	if (r == 0) {
		err->http = 200;
		*ret = res;
	}
record:
	rec.duration_ms = (double)(now_ns() - t0) / 1e6;
	engine_call_record(cl, &rec);
out:
	if (rec.args != rq->args)
		json_decref(rec.args);
	return r;
}

int engine_listening(const struct sockaddr *sa, bool on)
{
	if (!on) {
		netguard_self_remove(sa);
		return 0;
	}
	return netguard_self_add(sa);
}
