/* The tools besides code: the registry and the one pipeline every door
 * calls (engine/tool.h).  The doors stay thin: they build a ctx and a
 * request, call engine_tool_call and shape the answer. */
#include "engine/tool.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine/audit.h"
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

void engine_tool_ctx_init(struct engine_tool_ctx *ctx, enum engine_door door)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->door = door;
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
			list, json_pack("{s:s, s:s, s:s, s:o, s:{s:b, s:b, s:b, s:b}}", "name", t->name,
					"title", t->title, "description", t->description, "input_schema",
					json_loads(t->input_schema, 0, NULL), "annotations",
					"read_only", t->read_only, "destructive", t->destructive,
					"idempotent", t->idempotent, "open_world", t->open_world));
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
	json_array_foreach(type, i, t)
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
		snprintf(msg, n, "the arguments of '%s' are %zu bytes of JSON, at most %u", t->name, size,
			 TOOL_ARGS_MAX);
	else
		r = 0;
	json_object_foreach(r == 0 ? args : NULL, k, v) {
		json_t *p = json_object_get(props, k);

		if (!p) {
			snprintf(msg, n, "unknown argument '%.64s' of '%s' (see its input schema)", k,
				 t->name);
			r = -EINVAL;
			break;
		}
		if (!type_fits(v, json_object_get(p, "type"))) {
			snprintf(msg, n, "argument '%.64s' of '%s' has the wrong type (see its input schema)",
				 k, t->name);
			r = -EINVAL;
			break;
		}
	}
	json_array_foreach(r == 0 ? json_object_get(schema, "required") : NULL, i, v)
		if (json_is_string(v) && !json_object_get(args, json_string_value(v))) {
			snprintf(msg, n, "'%s' needs the argument '%s'", t->name, json_string_value(v));
			r = -EINVAL;
			break;
		}
	json_decref(schema);
	return r;
}

/* ---- the pipeline ---- */

static void audit(const struct engine_tool_ctx *ctx, const struct engine_tool_request *rq,
		  const struct engine_tool *t, const struct engine_verdict *v, const char *status,
		  const char *approval_id, const char *approval_state, uint64_t t0, json_t *res)
{
	struct engine_audit_record rec = {
		.request_id = rq->request_id,
		.client = ctx->client ? ctx->client->name : NULL,
		.session = rq->session,
		.door = ctx->door,
		.action = t->action,
		.args = rq->args,
		.verdict = v,
		.duration_ms = (double)(now_ns() - t0) / 1e6,
		.status = status,
		.approval_id = approval_id && *approval_id ? approval_id : NULL,
		.approval_state = approval_id && *approval_id ? approval_state : NULL,
		.bytes = res ? json_dumpb(res, NULL, 0, JSON_COMPACT) : 0,
	};

	if (!rq->audit)
		return;
	if (t->redact && rq->args && (rec.args = json_deep_copy(rq->args)))
		t->redact(ctx, rec.args);
	(void)engine_audit_write(rq->audit, &rec);
	if (rec.args != rq->args)
		json_decref(rec.args);
}

/* The policy, and a person's approval where it wants one.  0; -EPERM
 * with v set; -EINPROGRESS: held, approval_id says which. */
static int policy_step(const struct engine_tool_ctx *ctx, const struct engine_tool_request *rq,
		       const struct engine_tool *t, struct engine_verdict *v, char approval_id[17],
		       const char **state)
{
	int r;

	memset(v, 0, sizeof(*v));
	if (!ctx->client) {
		snprintf(v->message, sizeof(v->message), "no client: tools need a policy");
		v->rule = "tools";
		v->http = 403;
		return -EPERM;
	}
	if (engine_check_tool(ctx->client, ctx->door, t->action, v) == 0)
		return 0;
	if (!v->needs_approval || !rq->approve)
		return -EPERM;
	r = rq->approve(rq->approve_cls, t, rq->args, v, approval_id, state);
	if (r < 0)
		return r == -EINPROGRESS ? r : -EPERM;
	v->approved = true;
	return engine_check_tool(ctx->client, ctx->door, t->action, v);
}

int engine_tool_call(const struct engine_tool_ctx *ctx, const struct engine_tool_request *rq,
		     json_t **ret, int *ret_http, char *msg, size_t n)
{
	const struct engine_tool *t = engine_tool_find(rq->name);
	struct engine_verdict v;
	char approval_id[17] = "";
	const char *state = NULL;
	uint64_t t0 = now_ns();
	json_t *res = NULL;
	int r;

	if (!t) {
		*ret_http = 404;
		snprintf(msg, n, "no tool '%.64s' (GET /v1/tools lists those this client may call)",
			 rq->name ? rq->name : "");
		return -ENOENT;
	}
	r = check_args(t, rq->args, msg, n);
	if (r < 0) {
		*ret_http = 400;
		memset(&v, 0, sizeof(v));
		v.allowed = true;
		audit(ctx, rq, t, &v, "invalid", NULL, NULL, t0, NULL);
		return r;
	}
	r = policy_step(ctx, rq, t, &v, approval_id, &state);
	if (r == -EINPROGRESS) {
		*ret_http = 202;
		snprintf(msg, n, "held for a person's approval '%s'", approval_id);
		audit(ctx, rq, t, &v, "pending", approval_id, state, t0, NULL);
		return r;
	}
	if (r < 0) {
		*ret_http = v.http ? v.http : 403;
		snprintf(msg, n, "%s", v.message);
		audit(ctx, rq, t, &v, "rejected", approval_id, state, t0, NULL);
		return -EPERM;
	}
	msg[0] = '\0';
	r = t->call(ctx, rq->args, &res, msg, n);
	if (r < 0) {
		*ret_http = r == -EINVAL ? 400 : r == -EPERM ? 403 : 500;
		if (!msg[0])
			snprintf(msg, n, "the %s tool failed: %s", t->name, strerror(-r));
		if (r == -EPERM) {
			/* refused by the tool's own settings in the policy (a
			 * database or a host it does not name) */
			v.allowed = false;
			v.rule = "tools";
		}
		audit(ctx, rq, t, &v, r == -EINVAL ? "invalid" : r == -EPERM ? "refused" : "error",
		      approval_id, state, t0, NULL);
		return r;
	}
	*ret_http = 200;
	audit(ctx, rq, t, &v, json_object_get(res, "error") ? "error" : "ok", approval_id, state, t0, res);
	*ret = res;
	return 0;
}

int engine_listening(const struct sockaddr *sa, bool on)
{
	if (!on) {
		netguard_self_remove(sa);
		return 0;
	}
	return netguard_self_add(sa);
}
