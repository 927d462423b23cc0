/* The one pipeline and the one approval loop (engine/call.h). */
#include "engine/call.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/timeutil.h"
#include "util/banned.h"

void engine_call_error_set(struct engine_session_error *err, int http, const char *code,
			   const char *fmt, ...)
{
	va_list ap;

	err->http = http;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

void engine_call_record(struct engine_caller *cl, struct engine_audit_record *rec)
{
	int k;

	if (!cl->audit)
		return;
	if (cl->request_id)
		rec->request_id = cl->request_id;
	rec->client = cl->name ? cl->name : cl->client ? cl->client->name : NULL;
	rec->door = cl->door;
	k = engine_audit_write(cl->audit, rec);
	if (k < 0)
		cl->audit_err = k;
}

int engine_call_check(struct engine_caller *cl, struct engine_audit_record *rec,
		      int (*check)(struct engine_caller *cl, void *arg, struct engine_verdict *v),
		      void *arg, json_t *facts, struct engine_approval_note *an,
		      struct engine_session_error *err)
{
	struct engine_verdict *v = &err->verdict;
	int r;

	memset(v, 0, sizeof(*v));
	an->id[0] = '\0';
	an->state = NULL;
	if (!cl->client) {
		v->allowed = true;
		return 0; /* no policy: nothing to check, no slot held */
	}
	/* an approved call is checked again, with v->approved: the other
	 * rules (rate, counts) still hold, and a slot is taken then */
	while (check(cl, arg, v) < 0) {
		if (!v->needs_approval || !cl->approve)
			r = -EPERM;
		else
			r = cl->approve(cl->approve_cls, rec->action, facts, v, an->id, &an->state);
		rec->approval_id = an->id[0] ? an->id : NULL;
		rec->approval_state = an->state;
		if (r == 0) {
			v->approved = true;
			continue;
		}
		if (r == -EINPROGRESS) {
			memcpy(err->approval_id, an->id, sizeof(err->approval_id));
			engine_call_error_set(err, 202, "pending",
					      "held for a person's approval '%s'", an->id);
			rec->status = "pending";
		} else {
			r = -EPERM;
			engine_call_error_set(err, v->http ? v->http : 403, "rejected", "%s",
					      v->message);
			rec->verdict = v;
		}
		engine_call_record(cl, rec);
		return r;
	}
	return 0;
}

void engine_call_end(struct engine_caller *cl, struct engine_audit_record *rec,
		     const struct engine_approval_note *an, const struct run_result *res,
		     uint64_t t0, const struct egress_log *eg)
{
	char id[AUDIT_ID_LEN + 1];
	int k;

	if (!cl->audit)
		return;
	/* one request id for the call and its proxied connections */
	if (!rec->request_id && !cl->request_id) {
		engine_audit_id(id);
		rec->request_id = id;
	}
	rec->res = res;
	if (!res && !rec->status)
		rec->status = "error";
	rec->duration_ms = (double)(now_ns() - t0) / 1e6;
	if (an && an->id[0]) {
		rec->approval_id = an->id;
		rec->approval_state = an->state ? an->state : "approved";
	}
	engine_call_record(cl, rec);
	if (eg && (eg->n || eg->dropped) &&
	    (k = engine_audit_egress(cl->audit, rec, eg->ev, eg->n, eg->dropped)) < 0)
		cl->audit_err = k;
}

struct run_arg {
	struct run_request *rq;
	unsigned asked;
	bool net_asked;
	struct engine_audit_record *rec;
};

static int check_run(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	struct run_arg *x = arg;
	int r = engine_check_run(cl->client, cl->door, x->rq, x->asked, x->net_asked, v);

	/* the arguments as checked: the limits the policy lowered */
	json_decref(x->rec->args);
	x->rec->args = engine_audit_run_args(x->rq, x->asked);
	return r;
}

int engine_call_run(struct engine_caller *cl, struct run_request *rq, unsigned asked,
		    bool net_asked,
		    int (*run)(void *cls, struct run_request *rq, struct run_result *ret),
		    void *cls, struct run_result *ret, struct engine_session_error *err)
{
	struct engine_audit_record rec = { .action = ACTION_RUN,
					   .has_lang = true,
					   .lang = rq->lang,
					   .code = rq->code,
					   .code_len = rq->code_len };
	struct run_arg x = { rq, asked, net_asked, &rec };
	struct engine_approval_note an;
	struct egress_log eg = { 0 }, *saved = rq->egress_log;
	char id[AUDIT_ID_LEN + 1];
	uint64_t t0 = now_ns();
	int r;

	memset(err, 0, sizeof(*err));
	/* one request id for the run and its proxied connections */
	if (!cl->request_id) {
		engine_audit_id(id);
		rec.request_id = id;
	}
	rec.args = engine_audit_run_args(rq, asked);
	r = engine_call_check(cl, &rec, check_run, &x, NULL, &an, err);
	if (r == -EPERM) {
		/* a refusal is a result too, naming the rule */
		engine_verdict_result(&err->verdict, ret);
		r = 0;
		goto out;
	}
	if (r < 0)
		goto out;
	if (cl->audit && rq->net == SANDBOX_NET_ALLOWLIST && !rq->egress_log)
		rq->egress_log = &eg;
	r = run ? run(cls, rq, ret) : engine_run(rq, ret);
	rq->egress_log = saved;
	if (cl->client)
		engine_release(cl->client, ACTION_RUN);
	if (r < 0)
		engine_call_error_set(err, 500, "internal", "cannot run the code: %s",
				      strerror(-r));
	rec.verdict = &err->verdict;
	engine_call_end(cl, &rec, &an, r == 0 ? ret : NULL, t0, saved ? saved : &eg);
out:
	json_decref(rec.args);
	free(eg.ev);
	return r;
}
