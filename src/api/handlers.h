/* api/handlers.h: the /v1 door's handlers, one per route (the route
 * table in door.c). */
#ifndef CODECELL_API_HANDLERS_H
#define CODECELL_API_HANDLERS_H

#include <microhttpd.h>

#include "http/http.h"

enum MHD_Result api_handle_execute(struct api_call *c);
enum MHD_Result api_handle_sessions_list(struct api_call *c);
enum MHD_Result api_handle_session_create(struct api_call *c);
enum MHD_Result api_handle_session_get(struct api_call *c);
enum MHD_Result api_handle_session_delete(struct api_call *c);
enum MHD_Result api_handle_session_execute(struct api_call *c);
enum MHD_Result api_handle_session_interrupt(struct api_call *c);
enum MHD_Result api_handle_session_restart(struct api_call *c);
enum MHD_Result api_handle_session_fork(struct api_call *c);
enum MHD_Result api_handle_files(struct api_call *c);
enum MHD_Result api_handle_asset(struct api_call *c);
/* POST /v1/agent (agent.c) */
enum MHD_Result api_handle_agent(struct api_call *c);
enum MHD_Result api_handle_approvals_list(struct api_call *c);
enum MHD_Result api_handle_approval_get(struct api_call *c);
enum MHD_Result api_handle_approval_decide(struct api_call *c);
/* GET /v1/tools, POST /v1/tools/{name} (tools.c): engine/tool.h's tools */
enum MHD_Result api_handle_tools_list(struct api_call *c);
enum MHD_Result api_handle_tool_call(struct api_call *c);
/* A project session's changes (changes.c): GET .../changes, POST
 * .../changes/apply (the policy's action "apply"), .../changes/discard */
enum MHD_Result api_handle_changes(struct api_call *c);
enum MHD_Result api_handle_changes_apply(struct api_call *c);
enum MHD_Result api_handle_changes_discard(struct api_call *c);

/* A chunk of a files route's body (upload.c): true, taken. */
bool api_files_data(struct api_call *c, const char *data, size_t len);

#endif
