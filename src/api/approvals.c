/* GET /v1/approvals, GET and POST /v1/approvals/{id}: the calls a policy
 * holds for a person (engine/approval.h).  Deciding is the operator's:
 * the server's default client (the --token-file token, or loopback when
 * the policy file names no clients), never a client of the policy file,
 * so an agent cannot approve its own calls. */
#include <errno.h>
#include <string.h>

#include "api/handlers.h"
#include "http/http.h"
#include "http/internal.h"
#include "engine/approval.h"
#include "util/json.h"
#include "util/banned.h"

static bool is_operator(const struct api_call *c)
{
	return c->client == &c->srv->policies->clients[0];
}

enum MHD_Result api_handle_approvals_list(struct api_call *c)
{
	json_t *all = engine_approvals_json(c->srv->approvals, false), *mine, *a;
	size_t i;

	if (!all)
		return api_respond_errorf(c, 500, "internal", "out of memory");
	if (is_operator(c))
		return api_respond_json(c, 200, all);
	/* a client sees its own held calls only */
	mine = json_array();
	json_array_foreach (json_object_get(all, "approvals"), i, a)
		if (!strcmp(json_string_value(json_object_get(a, "client")), c->client->name))
			json_array_append(mine, a);
	json_decref(all);
	return api_respond_json(c, 200, json_pack("{s:o}", "approvals", mine));
}

enum MHD_Result api_handle_approval_get(struct api_call *c)
{
	json_t *a = engine_approval_json(c->srv->approvals, c->route.session_id);

	if (!a || (!is_operator(c) &&
		   strcmp(json_string_value(json_object_get(a, "client")), c->client->name))) {
		json_decref(a);
		return api_respond_errorf(c, 404, "approval_not_found", "no approval '%s'",
					  c->route.session_id);
	}
	return api_respond_json(c, 200, a);
}

enum MHD_Result api_handle_approval_decide(struct api_call *c)
{
	struct json_body_error je;
	json_t *body = NULL;
	const char *d;
	bool approve;
	int r;

	if (json_body_read(c->body, c->body_len, 0, &body, &je) < 0 &&
	    je.problem == JSON_BODY_DUPLICATE)
		return api_respond_errorf(c, 400, "bad_json", "%s", je.message);
	d = json_string_value(json_object_get(body, "decision"));
	approve = d && !strcmp(d, "approve");
	if (!d || (!approve && strcmp(d, "deny")) || json_object_size(body) != 1) {
		json_decref(body);
		return api_respond_errorf(
			c, 400, "invalid_value",
			"send {\"decision\": \"approve\"} or {\"decision\": \"deny\"}");
	}
	json_decref(body);
	if (!is_operator(c))
		return api_respond_errorf(
			c, 403, "forbidden",
			"only the operator decides approvals (the --token-file token, "
			"or loopback without client keys); a client cannot approve calls");
	r = engine_approval_decide(c->srv->approvals, c->route.session_id, approve, "operator");
	if (r == -ENOENT)
		return api_respond_errorf(c, 404, "approval_not_found", "no approval '%s'",
					  c->route.session_id);
	if (r == -EALREADY)
		return api_respond_errorf(c, 409, "already_decided",
					  "approval '%s' was decided already, or expired",
					  c->route.session_id);
	return api_respond_json(c, 200,
				engine_approval_json(c->srv->approvals, c->route.session_id));
}
