/* engine/tool: tools besides code (sql, http), one table offered by every
 * door (the HTTP API's POST /v1/tools/NAME, MCP's tools/list and
 * tools/call, codecell agent's function tools).  A call passes the same
 * pipeline as code: argument validation -> policy check (the tool enabled,
 * approval) -> the call under its caps -> a JSON result -> an audit record
 * (engine_tool_call, through engine/call.h).
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
#include <sys/socket.h>

#include <jansson.h>

#include "engine/call.h"
#include "engine/policy.h"

#define TOOL_MSG_MAX 512

struct session;

/* What a tool call may use besides its arguments. */
struct engine_tool_ctx {
	struct engine_client *client;		/* its policy: client->policy (the caller's) */
	const struct engine_policies *policies; /* named databases, hosts */
	enum engine_door door;
	/* the workspace a relative SQLite path is under (a session's, host
	 * side), or NULL: no workspace databases */
	const char *workspace;
	/* raised (non-zero, read atomically) by another thread: give up */
	const int *stop_flag;
	/* the workspace as a directory fd (O_PATH is fine; borrowed), used
	 * before workspace when >= 0; -1: none.  Zero is a valid fd, so a
	 * door sets this explicitly (engine_tool_ctx_init). */
	int workspace_fd;
	/* a socket whose peer may go away (an HTTP client's), or -1: when
	 * it hangs up (POLLRDHUP), the call gives up as on stop_flag */
	int hangup_fd;
};

/* Zeroed, workspace_fd and hangup_fd -1 (client and door are the
 * caller's, set by engine_tool_call). */
void engine_tool_ctx_init(struct engine_tool_ctx *ctx);

struct engine_tool {
	const char *name;	   /* "sql", "http": [a-z_]+, unique */
	enum engine_action action; /* ACTION_SQL, ...: the policy's and the audit's name */
	const char *title, *description;
	const char *input_schema; /* JSON Schema text of the arguments object */
	bool read_only, destructive, idempotent, open_world; /* MCP annotations */
	/* 0 with *ret a new JSON object; -errno with msg (n bytes). */
	int (*call)(const struct engine_tool_ctx *ctx, json_t *args, json_t **ret, char *msg,
		    size_t n);
	/* Optional: replace in args (a copy, before it is audited) the
	 * secrets the policy holds for this tool, should a caller send one. */
	void (*redact)(const struct engine_tool_ctx *ctx, json_t *args);
};

/* Every tool codecell has, NULL-terminated. */
const struct engine_tool *const *engine_tools(void);
/* The tool of that name, or NULL. */
const struct engine_tool *engine_tool_find(const char *name);
/* May policy p call t?  (README "Policy": the 'tools' key.) */
bool engine_tool_enabled(const struct engine_policy *p, const struct engine_tool *t);
/* The tools p enables, for GET /v1/tools: [{"name", "title",
 * "description", "input_schema", "annotations": {...}}].  New reference. */
json_t *engine_tools_json(const struct engine_policy *p);

#define TOOL_ARGS_MAX (1u << 20) /* bytes of a call's arguments as JSON */

/* One call through the pipeline, as a door hands it over. */
struct engine_tool_request {
	const char *name;
	json_t *args;	     /* the arguments object; borrowed */
	const char *session; /* the session named, for the record, or NULL */
};

/* The pipeline every door calls (engine/call.h, with the caller's client,
 * door, audit log, request id and approval callback): the tool by name,
 * the arguments checked against its input schema (an object, known
 * keys, required keys, types, at most TOOL_ARGS_MAX bytes), the policy
 * (engine_check_tool: the tool enabled, approval, rate; no cl->client:
 * refused), a person's approval of the arguments through cl->approve,
 * the call (ctx's client and door are cl's), an audit record (door,
 * client, tool, arguments with secrets redacted, decision, approval,
 * duration, status).  0 with *ret the tool's result (new reference; an
 * error the caller can act on, such as SQLError, is a result too); or
 * -errno with err's message, code and http: -ENOENT (404 tool_not_found),
 * -EINVAL (400 invalid_arguments), -EPERM (403 or 429 rejected: the
 * policy, err->verdict), -EINPROGRESS (202 pending: held for a person,
 * err->approval_id), another -errno (500 internal). */
int engine_tool_call(struct engine_caller *cl, const struct engine_tool_ctx *ctx,
		     const struct engine_tool_request *rq, json_t **ret,
		     struct engine_session_error *err);
/* The tool whose policy and audit name is a, or NULL (not a tool's). */
const struct engine_tool *engine_tool_of_action(enum engine_action a);

/* A door that listens tells the engine its address once bound (the port
 * read back; on false, before it closes): the http tool and the egress
 * proxy of --net allowlist never connect to it, whatever the policy's
 * lists say (a wildcard address: to any address of this host on that
 * port).  0, or -ENOSPC / -EAFNOSUPPORT (util/netguard.h). */
int engine_listening(const struct sockaddr *sa, bool on);

#endif
