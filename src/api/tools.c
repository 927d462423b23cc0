/* GET /v1/tools and POST /v1/tools/{name}: the tools besides code
 * (engine/tool.h).  Thin: the body is taken apart, a session's
 * workspace found, and engine_tool_call does the rest (arguments, the
 * policy, approval through the server's api_approve, the call, the audit
 * record). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "http/upload.h"
#include "api/handlers.h"
#include "http/http.h"
#include "http/policy.h"
#include "http/internal.h"
#include "engine/sessions.h"
#include "engine/tool.h"
#include "util/json.h"
#include "util/banned.h"

enum MHD_Result api_handle_tools_list(struct api_call *c)
{
	return api_respond_json(c, 200,
				json_pack("{s:o}", "tools", engine_tools_json(c->client->policy)));
}

/* The workspace of the body's session_id (or the arguments'), as a fd
 * of our own (the session's lock is not held while the tool runs).  -1
 * and no answer without session_id; -2 with the answer in *ret. */
static int session_ws(struct api_call *c, json_t *body, char *sid, enum MHD_Result *ret)
{
	json_t *id = json_object_get(body, "session_id");

	/* or among the arguments, where MCP clients put it */
	if (!id || json_is_null(id))
		id = json_object_get(json_object_get(body, "arguments"), "session_id");
	struct engine_session *e;
	struct engine_ws w;
	int fd = -1;

	if (!id || json_is_null(id))
		return -1;
	if (!json_is_string(id) || !api_session_id_valid(json_string_value(id))) {
		*ret = api_respond_errorf(c, 400, "invalid_value",
					  "'session_id' must be a session's id");
		return -2;
	}
	snprintf(sid, API_ID_LEN + 1, "%s", json_string_value(id));
	e = api_session_get(c, sid);
	if (!e) {
		*ret = api_respond_errorf(c, 404, "session_not_found", "no session '%s'", sid);
		return -2;
	}
	pthread_mutex_lock(&e->lock);
	if (api_ws_of(e, &w) == 0)
		fd = fcntl(w.fd, F_DUPFD_CLOEXEC, 3);
	pthread_mutex_unlock(&e->lock);
	engine_session_unref(e);
	if (fd < 0) {
		*ret = api_respond_errorf(c, 409, "no_workspace",
					  "session '%s' has no workspace now: run code in it first",
					  sid);
		return -2;
	}
	return fd;
}

enum MHD_Result api_handle_tool_call(struct api_call *c)
{
	json_t *body = NULL, *args, *res = NULL;
	struct json_body_error je;
	struct engine_tool_ctx ctx;
	struct engine_tool_request rq = { .name = c->route.path };
	struct engine_session_error err;
	struct engine_caller cl;
	char sid[API_ID_LEN + 1] = "";
	enum MHD_Result ret = MHD_NO;
	int k;

	if (json_body_read(c->body, c->body_len, 0, &body, &je) < 0 &&
	    je.problem != JSON_BODY_EMPTY && je.problem != JSON_BODY_NOT_OBJECT) {
		struct api_error e;

		api_error_json(&e, &je);
		return api_respond_error(c, &e);
	}
	args = json_object_get(body, "arguments");
	if (!json_is_object(body) || (args && !json_is_object(args))) {
		json_decref(body);
		return api_respond_errorf(
			c, 400, "invalid_json",
			"the body must be {\"arguments\": {...}, \"session_id\": optional}");
	}
	engine_tool_ctx_init(&ctx);
	ctx.policies = c->srv->policies;
	ctx.stop_flag = &c->srv->stopping;
	{
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		/* a client that hangs up stops its query */
		if (ci)
			ctx.hangup_fd = ci->connect_fd;
	}
	ctx.workspace_fd = session_ws(c, body, sid, &ret);
	if (ctx.workspace_fd == -2) {
		json_decref(body);
		return ret;
	}
	rq.session = sid[0] ? sid : NULL;
	rq.args = args ? args : json_object_get(body, "arguments");
	if (!rq.args) {
		rq.args = json_object();
		json_object_set_new(body, "arguments", rq.args);
	}
	/* the engine's pipeline, with the server's approvals */
	api_caller(c, &cl);
	k = engine_tool_call(&cl, &ctx, &rq, &res, &err);
	if (ctx.workspace_fd >= 0)
		close(ctx.workspace_fd);
	json_decref(body);
	if (k == 0)
		return api_respond_json(c, 200, res);
	if (k == -EINPROGRESS)
		return api_session_refused(c, &cl, k, &err);
	return api_respond_errorf(c, err.http, err.code, "%s", err.message);
}
