/* The /v1 door's route table: its routes and the playground's, with
 * their methods, auth and body limits (http/door.h). */
#include "api/api.h"
#include "api/handlers.h"
#include "api/route.h"
#include "http/http.h"
#include "http/upload.h"
#include "util/macro.h"
#include "util/banned.h"

bool api_files_data(struct api_call *c, const char *data, size_t len)
{
	api_upload_data(c, data, len);
	return true;
}

#define GET HTTP_GET
#define POST HTTP_POST
static const struct http_route routes[] = {
	{ API_R_ASSET, GET | HTTP_HEAD, api_handle_asset, true, 0, false, NULL, NULL },
	{ API_R_EXECUTE, POST, api_handle_execute, false, API_BODY_MAX, false, NULL, NULL },
	{ API_R_SESSIONS, GET, api_handle_sessions_list, false, 0, false, NULL, NULL },
	{ API_R_SESSIONS, POST, api_handle_session_create, false, API_BODY_MAX, false, NULL, NULL },
	{ API_R_SESSION, GET, api_handle_session_get, false, 0, false, NULL, NULL },
	{ API_R_SESSION, HTTP_DELETE, api_handle_session_delete, false, 0, false, NULL, NULL },
	{ API_R_SESSION_EXECUTE, POST, api_handle_session_execute, false, API_BODY_MAX, false, NULL,
	  NULL },
	{ API_R_SESSION_INTERRUPT, POST, api_handle_session_interrupt, false, 0, false, NULL,
	  NULL },
	{ API_R_SESSION_RESTART, POST, api_handle_session_restart, false, 0, false, NULL, NULL },
	{ API_R_SESSION_FORK, POST, api_handle_session_fork, false, 0, false, NULL, NULL },
	/* a file's body goes to the workspace as it arrives (upload.c) */
	{ API_R_SESSION_FILES, GET | HTTP_HEAD | HTTP_PUT | HTTP_DELETE, api_handle_files, false,
	  API_FILE_MAX, true, api_files_data, NULL },
	{ API_R_AGENT, POST, api_handle_agent, false, API_BODY_MAX, false, NULL, NULL },
	{ API_R_APPROVALS, GET, api_handle_approvals_list, false, 0, false, NULL, NULL },
	{ API_R_APPROVAL, GET, api_handle_approval_get, false, 0, false, NULL, NULL },
	{ API_R_APPROVAL, POST, api_handle_approval_decide, false, 4096, false, NULL, NULL },
	{ API_R_TOOLS, GET, api_handle_tools_list, false, 0, false, NULL, NULL },
	{ API_R_TOOL, POST, api_handle_tool_call, false, API_BODY_MAX, false, NULL, NULL },
	{ API_R_SESSION_CHANGES, GET, api_handle_changes, false, 0, false, NULL, NULL },
	{ API_R_SESSION_CHANGES_APPLY, POST, api_handle_changes_apply, false, 4096, false, NULL,
	  NULL },
	{ API_R_SESSION_CHANGES_DISCARD, POST, api_handle_changes_discard, false, 0, false, NULL,
	  NULL },
};

const struct http_door api_door = {
	.name = "api",
	.routes = routes,
	.n_routes = ARRAY_SIZE(routes),
	.resolve = api_route_resolve,
};
