/* engine/tool: tools besides code (sql, http), one table offered by every
 * door (the HTTP API's POST /v1/tools/NAME, MCP's tools/list and
 * tools/call, codecell agent's function tools).  A call passes the same
 * pipeline as code: argument validation -> policy check (the tool enabled,
 * approval) -> the call under its caps -> a JSON result -> an audit record
 * (engine_tool_call).
 *
 * Contract between the tools and the doors:
 * - a tool's input_schema is JSON Schema text; its call checks the
 *   arguments again itself (the schema is for clients, not a guard);
 * - a tool's call never logs or exits; it fills *ret with a JSON object
 *   that goes back to the caller as is (for sql: {"columns", "rows",
 *   "truncated", ...}; errors a caller can act on are results too:
 *   {"error": {"name": "SQLError", "value": "...", "sqlstate": "42601"}});
 * - it returns -errno with a message only when the call itself is bad
 *   (-EINVAL: arguments; -EPERM: refused by the policy's tool settings,
 *   e.g. a database or host not named); the door answers 400/403 then;
 * - secrets (connection passwords, per-host headers) come from the policy
 *   and never appear in a result, a message or the audit log. */
#ifndef CODECELL_ENGINE_TOOL_H
#define CODECELL_ENGINE_TOOL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/policy.h"

#define TOOL_MSG_MAX 512

struct session;

/* What a tool call may use besides its arguments. */
struct engine_tool_ctx {
	struct engine_client *client;		/* its policy: client->policy */
	const struct engine_policies *policies; /* named databases, hosts */
	enum engine_door door;
	/* the workspace a relative SQLite path is under (a session's, host
	 * side), or NULL: no workspace databases */
	const char *workspace;
	/* raised (non-zero, read atomically) by another thread: give up */
	const int *stop_flag;
};

struct engine_tool {
	const char *name; /* "sql", "http": [a-z_]+, unique */
	const char *title, *description;
	const char *input_schema; /* JSON Schema text of the arguments object */
	bool read_only, destructive, idempotent, open_world; /* MCP annotations */
	/* 0 with *ret a new JSON object; -errno with msg (n bytes). */
	int (*call)(const struct engine_tool_ctx *ctx, json_t *args, json_t **ret, char *msg,
		    size_t n);
};

/* Every tool codecell has, NULL-terminated. */
const struct engine_tool *const *engine_tools(void);
/* The tool of that name, or NULL. */
const struct engine_tool *engine_tool_find(const char *name);
/* May policy p call t?  (README "Policy": the 'tools' key.) */
bool engine_tool_enabled(const struct engine_policy *p, const struct engine_tool *t);

#endif
