/* engine/call: the one pipeline every call of every door takes, and the
 * one approval loop: the policy's check -> a person's approval when the
 * policy wants one (through the caller's approve callback: how a person
 * decides is the door's business, the loop is the engine's) -> the
 * operation -> the audit record, written after the operation.
 *
 * Sessions (engine/sessions.c) and tools (engine/tool.c) call
 * engine_call_check() and engine_call_record() around their operations;
 * one-shot runs call engine_call_run(), or, when the check must be
 * answered before the run starts elsewhere (the server's stream, the
 * run on a thread of its own), engine_call_check() then
 * engine_call_end(). */
#ifndef CODECELL_ENGINE_CALL_H
#define CODECELL_ENGINE_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/audit.h"
#include "engine/engine.h"
#include "engine/policy.h"

/* Who asks, and how a person's approval is had.  A door fills it per
 * call. */
struct engine_caller {
	struct engine_client *client; /* NULL: no policy (nothing checked or held) */
	const char *name;	      /* the records' client name (NULL: client's) */
	enum engine_door door;
	struct engine_audit *audit; /* NULL: no records */
	const char *request_id;	    /* NULL: one is made per record */
	/* How a person decides, when the policy holds the action for one
	 * (NULL: such a call is refused; the CLI and MCP have none, the
	 * server holds the call in its table and waits, or answers
	 * "pending").  0 approved (its id into ret_id), -EINPROGRESS held
	 * and not decided (its id into ret_id), -EPERM not (v->message says
	 * why).  *ret_state: the approval's state for the record (static)
	 * or NULL.  facts (borrowed, or NULL): what the engine knows of the
	 * call that an approval must name besides the door's arguments, and
	 * match exactly when it is used (an apply: the session and the
	 * changes' changes_sha256, count and bytes); they win over the
	 * door's.  For a tool call (engine_tool_of_action(a) not NULL) the
	 * facts are the tool's arguments, the whole of what is approved. */
	int (*approve)(void *cls, enum engine_action a, json_t *facts, struct engine_verdict *v,
		       char ret_id[AUDIT_ID_LEN + 1], const char **ret_state);
	void *approve_cls;
	/* Whether the caller still wants a cell to start, asked under the
	 * session's lock after earlier stop records were drained (a stop
	 * raised just before is not lost with them): NULL, or false and
	 * engine_session_run() returns -ECANCELED, nothing run. */
	bool (*claim)(void *cls);
	void *claim_cls;
	int audit_err; /* out: the last record that could not be written, -errno */
};

/* Why a call failed, for the door to answer (the sessions' lifecycle,
 * tools and runs alike; the name is from when sessions had it alone). */
struct engine_session_error {
	int http;	  /* what an HTTP door answers: 202, 400, 403, 404, 429, 500 ... */
	const char *code; /* "pending", "rejected", "session_not_found", ... (static) */
	char message[512];
	struct engine_verdict verdict;	    /* -EPERM: the rule */
	char approval_id[AUDIT_ID_LEN + 1]; /* -EINPROGRESS: the held call */
	bool start_failed;		    /* a kernel did not start (a door's metrics) */
};

/* err's status, code (static) and message. */
void engine_call_error_set(struct engine_session_error *err, int http, const char *code,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The approval an allowed call used, for its record. */
struct engine_approval_note {
	char id[AUDIT_ID_LEN + 1];
	const char *state; /* static, or NULL */
};

/* The policy's word on a call (check: one engine_check_* on arg, v
 * zeroed but for v->approved), with the one approval
 * loop: when the check wants a person, cl->approve decides (facts as
 * above) and an approved call is checked again.  rec is the call's
 * record (action, session, language, code, arguments: the caller's);
 * its approval fields are set here.  A refusal and a held call are
 * recorded here; an allowed call's record is the caller's, after the
 * operation (engine_call_record, engine_call_end).  No cl->client: no
 * policy, allowed.
 * 0 (err->verdict the allowed verdict, *an the approval used);
 * -EPERM (err: verdict, http 403/413/429, code "rejected", message);
 * -EINPROGRESS (err: http 202, code "pending", approval_id). */
int engine_call_check(struct engine_caller *cl, struct engine_audit_record *rec,
		      int (*check)(struct engine_caller *cl, void *arg, struct engine_verdict *v),
		      void *arg, json_t *facts, struct engine_approval_note *an,
		      struct engine_session_error *err);

/* Write rec as cl's (its request id, client name, door); a failure goes
 * into cl->audit_err.  Nothing without cl->audit. */
void engine_call_record(struct engine_caller *cl, struct engine_audit_record *rec);

/* The record of an allowed call once its operation is over: res (NULL:
 * none, status "error"), the duration since t0 (now_ns()), the approval
 * an names (NULL or "": none), and the connections eg (NULL: none) the
 * egress proxy decided, under rec's request id (one is made if neither
 * rec nor cl has one). */
void engine_call_end(struct engine_caller *cl, struct engine_audit_record *rec,
		     const struct engine_approval_note *an, const struct run_result *res,
		     uint64_t t0, const struct egress_log *eg);

/* A one-shot run through the pipeline: engine_check_run (it may lower
 * rq's defaults; asked: bits of enum engine_limit_id the caller gave,
 * net_asked: the network too), a person's approval through cl, the run
 * (run(cls, rq, ret): the door's way of running, such as one that turns
 * signals into a stop; NULL: engine_run), the client's slot given back,
 * the record with the result and the approval, the proxy's connections
 * (rq->egress_log is set here when cl records and rq's network is the
 * allowlist).  0 with *ret the result, a refusal by the policy included
 * (status rejected, naming the rule, err->verdict); -EINPROGRESS (held:
 * err->approval_id, nothing run); another -errno from run (err says so,
 * recorded as an error; *ret untouched). */
int engine_call_run(struct engine_caller *cl, struct run_request *rq, unsigned asked,
		    bool net_asked,
		    int (*run)(void *cls, struct run_request *rq, struct run_result *ret),
		    void *cls, struct run_result *ret, struct engine_session_error *err);

#endif
