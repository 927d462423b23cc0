/* http/policy.h: the server's side of the engine's pipeline: the checks, a
 * rejection's answer, the audit records (policy.c). */
#ifndef CODECELL_HTTP_POLICY_H
#define CODECELL_HTTP_POLICY_H

#include <stdint.h>

#include <jansson.h>
#include <microhttpd.h>

#include "http/http.h"
#include "http/request.h"
#include "engine/audit.h"
#include "engine/policy.h"
#include "engine/sessions.h"
#include "engine/engine.h" /* the result, session and sandbox types */

struct api_server;

/* The policy and the audit log (policy.c): thin over the engine's
 * pipeline (engine/call.h).  The checks answer a rejection (-EPERM) or a
 * held call (-EINPROGRESS, 202) themselves in *ret. */
void api_audit(struct api_call *c, struct engine_audit_record *r);
/* The answer to a rejection recorded already (the engine's pipeline). */
enum MHD_Result api_refuse(struct api_call *c, const struct engine_verdict *v);
/* engine_caller.approve for the API, every call's and tool's: the
 * X-Approval-Id header's approval, or the call held until a person
 * decides (E2B's calls wait; /v1's with "Prefer: respond-async" do not).
 * What is held: a tool's arguments, or the body with code and env as
 * digests (and facts over it).  cls: the api_call. */
int api_approve(void *cls, enum engine_action a, json_t *facts, struct engine_verdict *v,
		char ret_id[AUDIT_ID_LEN + 1], const char **ret_state);
/* The engine's caller for this call: its client, door, audit log,
 * request id and approval. */
void api_caller(struct api_call *c, struct engine_caller *cl);
/* The answer to a lifecycle call that failed (engine/sessions.h): a
 * rejection, a held call (202), or err's status and message. */
enum MHD_Result api_session_refused(struct api_call *c, struct engine_caller *cl, int r,
				    const struct engine_session_error *err);
int api_check_exec(struct api_call *c, struct engine_session *entry, struct api_request *req,
		   struct engine_verdict *v, enum MHD_Result *ret);
/* The audit record of a session made (id NULL when it failed). */
void api_audit_session_create(struct api_call *c, const char *id, const struct session_opts *so,
			      const char *status, uint64_t t0);
int api_check_session(struct api_call *c, struct session_opts *so, const struct api_request *req,
		      struct engine_verdict *v, enum MHD_Result *ret);
/* The policy's check of a file call (size, rate, approvals): 0, or
 * -EPERM answered in *ret and recorded. */
int api_check_file(struct api_call *c, struct engine_session *e, enum engine_action a,
		   uint64_t bytes, enum MHD_Result *ret);
/* The same, its record's arguments naming a destination too (a move). */
int api_check_file_to(struct api_call *c, struct engine_session *e, enum engine_action a,
		      uint64_t bytes, const char *to, enum MHD_Result *ret);
/* A refused or held file call is recorded by the check; an allowed one
 * here, once it ran: status "ok", or "error" with arguments.error the
 * reason (result, -errno), so a write that failed is never "ok". */
void api_audit_file(struct api_call *c, struct engine_session *e, enum engine_action a,
		    uint64_t bytes, const char *to, int result);
/* A command (E2B's process Start): bash code in e's sandbox, with the
 * client's execution slot (engine_release() it when the command ends)
 * and rate; its record comes at its end (api_audit_command).
 * *timeout_s: asked (0: none); on success what the command runs with
 * (engine_check_command: never 0). */
int api_check_command(struct api_call *c, struct engine_session *e, const char *cmd, size_t len,
		      double *timeout_s, struct engine_verdict *v, enum MHD_Result *ret);
void api_audit_command(struct api_server *srv, struct engine_client *client, const char *request_id,
		       const char *approval_id, struct engine_session *e, const char *cmd,
		       size_t len, const struct run_result *res, uint64_t t0, const char *status);
void api_audit_exec(struct api_server *srv, struct engine_client *client, const char *request_id,
		    const char *approval_id, struct engine_session *entry,
		    const struct api_request *req, const struct run_result *res, uint64_t t0,
		    const struct egress_log *eg);

#endif
