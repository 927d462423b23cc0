/* The server's side of the engine's pipeline: who the client is, the
 * policy check of each call, a rejection's answer, audit records.  The
 * rules themselves are the engine's (engine/policy.c). */
#include <errno.h>
#include <string.h>

#include "http/log.h"
#include "http/door.h"
#include "http/http.h"
#include "http/policy.h"
#include "http/internal.h"
#include "engine/sessions.h"
#include "engine/approval.h"
#include "engine/call.h"
#include "engine/tool.h"
#include "util/json.h"
#include "util/sha256.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* The engine's caller for a call whose api_call is gone (a job's
 * thread, a command's end): its client, log and request id. */
static void caller_of(struct api_server *srv, struct engine_client *client, const char *id,
		      struct engine_caller *cl)
{
	memset(cl, 0, sizeof(*cl));
	cl->client = client;
	cl->door = DOOR_API;
	cl->audit = srv->cfg.audit;
	cl->request_id = id;
}

static void audit_failed(struct api_server *srv, const struct engine_caller *cl)
{
	if (cl->audit_err < 0)
		api_log(srv, "warning", "cannot append to the audit log: %s",
			strerror(-cl->audit_err));
}

static void audit_as(struct api_server *srv, struct engine_client *client, const char *id,
		     struct engine_audit_record *r)
{
	struct engine_caller cl;

	caller_of(srv, client, id, &cl);
	engine_call_record(&cl, r);
	audit_failed(srv, &cl);
}

void api_audit(struct api_call *c, struct engine_audit_record *r)
{
	audit_as(c->srv, c->client, c->request_id, r);
}

enum MHD_Result api_refuse(struct api_call *c, const struct engine_verdict *v)
{
	struct run_result res;
	json_t *j;

	/* a door's SDK may know its own error shapes only (E2B's) */
	if (c->door && c->door->refuse)
		return c->door->refuse(c, v);
	engine_verdict_result(v, &res);
	j = run_result_to_json(&res);
	run_result_release(&res);
	return api_respond_json(c, (unsigned)v->http, j);
}

/* ---- approvals ---- */

/* The call's exact arguments, for the person and for the comparison when
 * the call comes again: the JSON body with the code as its digest, and
 * the route's session and path. */
static json_t *held_args(struct api_call *c)
{
	json_t *o = NULL, *code;

	/* the body's handler refuses what this cannot read */
	if (json_body_read(c->body, c->body_len, JSON_BODY_EMPTY_OBJECT, &o, NULL) < 0)
		o = json_object();
	code = json_object_get(o, "code");
	if (json_is_string(code)) {
		char d[2 * SHA256_LEN + 1];

		sha256_hex(json_string_value(code), json_string_length(code), d);
		json_object_set_new(o, "code_sha256", json_string(d));
		json_object_del(o, "code");
	}
	/* env values may be secrets: the person sees the names, and a digest
	 * that still tells one value from another */
	if (json_is_object(json_object_get(o, "env"))) {
		json_t *env = json_object_get(o, "env"), *val;
		const char *k;

		json_object_foreach (env, k, val) {
			char d[2 * SHA256_LEN + 1], shown[32];
			const char *sv = json_is_string(val) ? json_string_value(val) : "";

			sha256_hex(sv, strlen(sv), d);
			snprintf(shown, sizeof(shown), "sha256:%.16s", d);
			json_object_set_new(env, k, json_string(shown));
		}
	}
	if (c->route.session_id[0])
		json_object_set_new(o, "session", json_string(c->route.session_id));
	if (c->route.path_len)
		json_object_set_new(o, "path", json_string(c->route.path));
	return o;
}

static enum MHD_Result answer_pending(struct api_call *c, const char *id)
{
	json_t *j = json_pack(
		"{s:s, s:s, s:s, s:s, s:{s:s, s:s}}", "status", "pending", "approval_id", id,
		"rule", "approval", "message",
		"held for a person's approval: once it is approved (POST /v1/approvals/ID, "
		"codecell approvals approve ID), send the same call again with the header "
		"'X-Approval-Id: ID'",
		"approval", "id", id, "state", "pending");

	return api_respond_json(c, 202, j);
}

static int approval_quota(struct api_call *c, struct engine_verdict *v)
{
	unsigned most = engine_approvals_per_client(c->srv->approvals);

	v->http = 429;
	snprintf(
		v->message, sizeof(v->message),
		"rejected by policy '%.32s', rule 'approval': client '%.32s' has %u calls held "
		"already, the most one client may (--max-pending-approvals %u): retry once some are "
		"decided",
		c->client->policy->name, c->client->name, most, most);
	return -EPERM;
}

int api_approve(void *cls, enum engine_action a, json_t *facts, struct engine_verdict *v,
		char ret_id[AUDIT_ID_LEN + 1], const char **ret_state)
{
	struct api_call *c = cls;
	struct engine_approvals *ap = c->srv->approvals;
	const char *given = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-Approval-Id");
	const char *prefer = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "Prefer");
	const struct engine_tool *tool = engine_tool_of_action(a);
	char what[160];
	json_t *args;
	int st;

	ret_id[0] = '\0';
	*ret_state = NULL;
	if (!ap)
		return -EPERM;
	/* what the person sees and the call again must match: a tool's
	 * arguments, or the body with code and env as digests */
	if (tool) {
		args = facts ? json_deep_copy(facts) : json_object();
	} else {
		args = held_args(c);
		if (facts)
			json_object_update(args, facts);
	}
	if (given) {
		st = engine_approval_use(ap, given, c->client->name, a, args);
		snprintf(ret_id, AUDIT_ID_LEN + 1, "%.16s", given);
	} else {
		if (tool)
			snprintf(what, sizeof(what), "%s tool call by client '%s'", tool->name,
				 c->client->name);
		else
			snprintf(what, sizeof(what), "%s by client '%s'", engine_action_name(a),
				 c->client->name);
		st = engine_approval_hold(ap, c->client->name, a, what, args, v->approval_timeout_s,
					  ret_id);
		/* E2B's SDK has no pending state: its calls wait for the
		 * person's decision */
		if (st == 0 && prefer && strstr(prefer, "respond-async") &&
		    !(c->door && c->door->no_pending)) {
			json_decref(args);
			*ret_state = "pending";
			return -EINPROGRESS;
		}
		if (st == 0)
			st = engine_approval_wait(ap, ret_id);
	}
	json_decref(args);
	*ret_state = st >= 0 ? approval_state_name((enum approval_state)st) : NULL;
	if (st == APPROVAL_APPROVED) {
		snprintf(c->approval_id, sizeof(c->approval_id), "%s", ret_id);
		return 0;
	}
	if (st == APPROVAL_PENDING && !(c->door && c->door->no_pending))
		return -EINPROGRESS;
	if (st == -EDQUOT)
		return approval_quota(c, v);
	{
		const char *why =
			st == -EBUSY ? "too many calls are held for approval; try again later"
			: st == APPROVAL_PENDING
				? "approval '%.16s' is not decided yet: send the call again once it is"
			: st == -ESTALE
				? "approval '%.16s' was given for other arguments than this call's (an apply: other changes than the ones approved); send the call without X-Approval-Id to ask again"
			: st < 0 ? "no approval '%.16s' for this client, action and arguments"
			: st == APPROVAL_EXPIRED
				? "approval '%.16s' was not decided in time: denied"
			: st == APPROVAL_USED ? "approval '%.16s' was used already"
					      : "a person denied approval '%.16s'";
		int n = snprintf(
			v->message, sizeof(v->message),
			"rejected by policy '%s', rule 'approval': ", c->client->policy->name);

		if (n > 0 && (size_t)n < sizeof(v->message))
			snprintf(v->message + n, sizeof(v->message) - (size_t)n, why, ret_id);
	}
	if (st < 0)
		ret_id[0] = '\0';
	return -EPERM;
}

void api_caller(struct api_call *c, struct engine_caller *cl)
{
	caller_of(c->srv, c->client, c->request_id, cl);
	cl->approve = api_approve;
	cl->approve_cls = c;
}

enum MHD_Result api_session_refused(struct api_call *c, struct engine_caller *cl, int r,
				    const struct engine_session_error *err)
{
	audit_failed(c->srv, cl);
	if (r == -EINPROGRESS)
		return answer_pending(c, err->approval_id);
	if (r == -EPERM)
		return api_refuse(c, &err->verdict);
	return api_respond_errorf(c, err->http, err->code, "%s", err->message);
}

/* The limits the run will have, back into the request: the policy may
 * have lowered defaults (never what the client asked for). */
static void take_limits(struct api_request *req, const struct run_request *rq)
{
	engine_limit_from_sandbox(&rq->limits, &req->lv);
	req->lv.v[LIMIT_OUTPUT] = (double)rq->output_limit;
	req->limits_set |= (1u << LIMIT_OUTPUT) | (1u << LIMIT_MEMORY) | (1u << LIMIT_PIDS) |
			   (1u << LIMIT_CPUS) | (1u << LIMIT_CPU_TIME) | (1u << LIMIT_FILE_SIZE) |
			   (1u << LIMIT_OPEN_FILES) | (1u << LIMIT_TMP_SIZE) |
			   (1u << LIMIT_WORKSPACE_SIZE);
	if (!rq->limits.cpu_seconds)
		req->limits_set &= ~(1u << LIMIT_CPU_TIME);
	req->timeout_s = rq->limits.timeout_s;
	req->set |= API_SET_TIMEOUT | API_SET_NET;
	req->net = rq->net;
	req->egress = rq->egress;
}

/* The engine's pipeline for an HTTP call: its check (with the approval
 * loop) through the caller; a refusal or a held call answered in *ret. */
static int check_call(struct api_call *c, struct engine_audit_record *rec,
		      int (*check)(struct engine_caller *, void *, struct engine_verdict *),
		      void *arg, struct engine_verdict *v, enum MHD_Result *ret)
{
	struct engine_session_error err;
	struct engine_approval_note an;
	struct engine_caller cl;
	int k;

	api_caller(c, &cl);
	k = engine_call_check(&cl, rec, check, arg, NULL, &an, &err);
	if (v)
		*v = err.verdict;
	if (k < 0)
		*ret = api_session_refused(c, &cl, k, &err);
	return k;
}

struct exec_check {
	struct api_call *c;
	struct engine_session *entry;
	struct api_request *req;
	struct engine_audit_record *rec;
	unsigned asked;
};

static int check_exec(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	struct exec_check *x = arg;
	struct api_request *req = x->req;
	struct run_request rq;
	int k;

	if (x->entry) {
		enum session_lang sl = x->entry->lang;

		/* an E2B context of another language runs in the session's
		 * sandbox (e2b/jupyter.c): the language checked is its own */
		if (x->c->door && x->c->door->lang_per_call && (req->set & API_SET_LANG))
			(void)engine_lang_session(req->lang, &sl);
		x->rec->lang = engine_lang_of_session(sl);
		return engine_check_exec(cl->client, cl->door, sl,
					 req->set & API_SET_TIMEOUT ? req->timeout_s : 0, v);
	}
	run_request_init(&rq);
	if (req->set & API_SET_LANG)
		rq.lang = req->lang;
	api_request_apply(req, &rq.limits, &rq.output_limit, &rq.net);
	x->rec->lang = rq.lang;
	k = engine_check_run(cl->client, cl->door, &rq, x->asked, req->set & API_SET_NET, v);
	if (k == 0)
		take_limits(req, &rq);
	json_decref(x->rec->args);
	x->rec->args = engine_audit_run_args(&rq, x->asked);
	return k;
}

int api_check_exec(struct api_call *c, struct engine_session *entry, struct api_request *req,
		   struct engine_verdict *v, enum MHD_Result *ret)
{
	struct engine_audit_record rec = { .action = entry ? ACTION_SESSION_EXEC : ACTION_RUN,
					   .session = entry ? entry->id : NULL,
					   .has_lang = true,
					   .code = req->code,
					   .code_len = req->code_len };
	struct exec_check x = { c, entry, req, &rec, req->limits_set };
	int k = check_call(c, &rec, check_exec, &x, v, ret);

	json_decref(rec.args);
	return k;
}

struct session_check {
	struct session_opts *so;
	const struct api_request *req;
};

static int check_session(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	struct session_check *x = arg;

	return engine_check_session(cl->client, cl->door, x->so, x->req->limits_set,
				    x->req->set & API_SET_NET, v);
}

int api_check_session(struct api_call *c, struct session_opts *so, const struct api_request *req,
		      struct engine_verdict *v, enum MHD_Result *ret)
{
	struct engine_audit_record rec = { .action = ACTION_SESSION_CREATE,
					   .has_lang = true,
					   .lang = engine_lang_of_session(so->lang) };
	struct session_check x = { so, req };

	return check_call(c, &rec, check_session, &x, v, ret);
}

int api_check_file(struct api_call *c, struct engine_session *e, enum engine_action a,
		   uint64_t bytes, enum MHD_Result *ret)
{
	return api_check_file_to(c, e, a, bytes, NULL, ret);
}

/* A file call's record arguments: the route's path, a move's
 * destination, a failure's reason. */
static json_t *file_args(struct api_call *c, const char *to, int result)
{
	json_t *args = json_pack("{s:s%}", "path", c->route.path, c->route.path_len);

	if (args && to)
		json_object_set_new(args, "to", json_string(to));
	if (args && result < 0)
		json_object_set_new(args, "error", json_string(strerror(-result)));
	return args;
}

void api_audit_file(struct api_call *c, struct engine_session *e, enum engine_action a,
		    uint64_t bytes, const char *to, int result)
{
	struct engine_audit_record rec = {
		.action = a,
		.session = e->id,
		.bytes = result < 0 ? 0 : bytes,
		.status = result < 0 ? "error" : "ok",
		.approval_id = c->approval_id[0] ? c->approval_id : NULL,
		.approval_state = c->approval_id[0] ? "approved" : NULL,
	};

	rec.args = file_args(c, to, result);
	api_audit(c, &rec);
	json_decref(rec.args);
}

struct file_check {
	enum engine_action a;
	uint64_t bytes;
};

static int check_file(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	struct file_check *x = arg;

	return engine_check_file(cl->client, cl->door, x->a, x->bytes, v);
}

int api_check_file_to(struct api_call *c, struct engine_session *e, enum engine_action a,
		      uint64_t bytes, const char *to, enum MHD_Result *ret)
{
	struct engine_audit_record rec = { .action = a, .session = e->id, .bytes = bytes };
	struct file_check x = { a, bytes };
	int k;

	rec.args = file_args(c, to, 0);
	/* allowed: recorded once it ran (api_audit_file), with its outcome */
	k = check_call(c, &rec, check_file, &x, NULL, ret);
	json_decref(rec.args);
	return k;
}

struct command_check {
	double *timeout_s, asked;
};

static int check_command(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	struct command_check *x = arg;

	*x->timeout_s = x->asked;
	return engine_check_command(cl->client, cl->door, x->timeout_s, v);
}

int api_check_command(struct api_call *c, struct engine_session *e, const char *cmd, size_t len,
		      double *timeout_s, struct engine_verdict *v, enum MHD_Result *ret)
{
	struct engine_audit_record rec = { .action = ACTION_SESSION_EXEC,
					   .session = e->id,
					   .has_lang = true,
					   .lang = LANG_BASH,
					   .code = cmd,
					   .code_len = len };
	struct command_check x = { timeout_s, *timeout_s };

	return check_call(c, &rec, check_command, &x, v, ret);
}

/* An allowed call's record after it ran (engine_call_end): its approval,
 * result or status, duration and the proxy's connections. */
static void audit_end(struct api_server *srv, struct engine_client *client, const char *request_id,
		      const char *approval_id, struct engine_audit_record *rec,
		      const struct run_result *res, uint64_t t0, const struct egress_log *eg)
{
	struct engine_approval_note an = { .state = "approved" };
	struct engine_caller cl;

	caller_of(srv, client, request_id, &cl);
	snprintf(an.id, sizeof(an.id), "%s", approval_id ? approval_id : "");
	engine_call_end(&cl, rec, &an, res, t0, eg);
	audit_failed(srv, &cl);
}

void api_audit_command(struct api_server *srv, struct engine_client *client, const char *request_id,
		       const char *approval_id, struct engine_session *e, const char *cmd,
		       size_t len, const struct run_result *res, uint64_t t0, const char *status)
{
	struct engine_audit_record rec = {
		.action = ACTION_SESSION_EXEC,
		.session = e->id,
		.has_lang = true,
		.lang = LANG_BASH,
		.code = cmd,
		.code_len = len,
		.status = res ? NULL : status,
	};

	audit_end(srv, client, request_id, approval_id, &rec, res, t0, NULL);
}

void api_audit_exec(struct api_server *srv, struct engine_client *client, const char *request_id,
		    const char *approval_id, struct engine_session *entry,
		    const struct api_request *req, const struct run_result *res, uint64_t t0,
		    const struct egress_log *eg)
{
	struct engine_audit_record rec = {
		.action = entry ? ACTION_SESSION_EXEC : ACTION_RUN,
		.session = entry ? entry->id : NULL,
		.has_lang = true,
		.code = req->code,
		.code_len = req->code_len,
	};

	rec.lang = req->set & API_SET_LANG ? req->lang
		   : entry		   ? engine_lang_of_session(entry->lang)
					   : LANG_PYTHON;
	audit_end(srv, client, request_id, approval_id, &rec, res, t0, eg);
}

void api_audit_session_create(struct api_call *c, const char *id, const struct session_opts *so,
			      const char *status, uint64_t t0)
{
	struct engine_audit_record rec = {
		.action = ACTION_SESSION_CREATE,
		.session = id,
		.has_lang = true,
		.lang = engine_lang_of_session(so->lang),
		.status = status,
		.duration_ms = (double)(now_ns() - t0) / 1e6,
	};

	api_audit(c, &rec);
}
