/* mcp: what its files share.  Not a public interface.
 *
 *   protocol.c  JSON-RPC framing, the lifecycle, version negotiation,
 *               methods (initialize, ping, server/discover, tools/list,
 *               tools/call)
 *   catalog.c   the tools: argument tables (which give the inputSchema
 *               too), output schemas, results as MCP content
 *   tools.c     the one adapter into the engine and session library:
 *               runs, sessions, workspace files.  A later change points
 *               it at the engine's session lifecycle. */
#ifndef CODECELL_MCP_INTERNAL_H
#define CODECELL_MCP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/policy.h"
#include "mcp/mcp.h"
#include "util/buf.h"

#define MCP_MSG_MAX 16384 /* a tool error's message (it may quote a path) */

/* ---- tools.c: the adapter ----
 *
 * Each call returns 0 with a JSON object in *ret (a new reference), or
 * -errno with a message for the model in msg (a tool error: isError). */

struct mcp_tools_shared; /* what every call shares: the sessions, the pool */

/* One call's tools: what the shared state holds that never changes
 * (copied: the config, the session table, the preload), and the call's
 * own (its verdict, whether the engine wrote its audit record).  Calls
 * of one core may run at once, each on its own struct: /mcp serves one
 * client's requests side by side. */
struct mcp_tools {
	struct mcp_tools_shared *sh;
	struct mcp_config cfg;
	const char *preload;
	struct engine_sessions *reg;
	struct engine_verdict verdict;
	bool recorded; /* the engine wrote this call's audit record */
};

int mcp_tools_new(const struct mcp_config *cfg, struct mcp_tools_shared **ret, char **ret_error);
void mcp_tools_free(struct mcp_tools_shared *sh);
/* Before a call, t on the caller's stack: nothing to release.  The
 * call's verdict starts as allowed. */
void mcp_tools_begin(struct mcp_tools_shared *sh, struct mcp_tools *t);
/* After a call other than run_code (which writes its own, with the
 * result): its audit record (session: the id it named or made, or
 * NULL). */
void mcp_tools_audit(struct mcp_tools *t, const char *tool, const char *session, bool ok);
unsigned mcp_tools_count(struct mcp_tools_shared *sh);
/* Close sessions idle past the idle timeout. */
void mcp_tools_expire(struct mcp_tools *t);

struct mcp_run_args {
	const char *language; /* NULL: python, or the session's */
	const char *code;     /* NUL-free UTF-8 (checked again by the engine) */
	size_t code_len;
	const char *session_id; /* NULL: one-shot */
	double timeout_s;	/* 0: the default */
	bool has_seed;		/* one-shot runs only */
	uint64_t seed;
};

/* The result object (docs/API.md), plus "session_id" for a session.  A
 * program that failed is still 0: the result's status says so. */
int mcp_tools_run(struct mcp_tools *t, const struct mcp_run_args *a, json_t **ret, struct buf *msg);
/* {"session_id", "language", "pooled", "preload", "preloaded", "preload_failed",
 * "project"}; project: a host directory under the policy's `projects`, or NULL */
int mcp_tools_create_session(struct mcp_tools *t, const char *language, const char *preload,
			     const char *project, json_t **ret, struct buf *msg);
/* {"session_id", "closed": true} */
int mcp_tools_close_session(struct mcp_tools *t, const char *id, json_t **ret, struct buf *msg);
/* {"sessions": [{"session_id", "language", "executions", "idle_s"}], "count", "max_sessions"} */
int mcp_tools_list_sessions(struct mcp_tools *t, json_t **ret, struct buf *msg);
/* {"session_id", "path", "entries": [{"name", "type", "size"}], "truncated"} */
int mcp_tools_list_files(struct mcp_tools *t, const char *id, const char *path, json_t **ret,
			 struct buf *msg);
/* The file's bytes into data (capped at MCP_FILE_MAX) and
 * {"session_id", "path", "size"} in *ret. */
int mcp_tools_read_file(struct mcp_tools *t, const char *id, const char *path, struct buf *data,
			json_t **ret, struct buf *msg);
/* {"session_id", "path", "size", "replaced"} */
int mcp_tools_write_file(struct mcp_tools *t, const char *id, const char *path, const char *data,
			 size_t len, json_t **ret, struct buf *msg);

/* The tools besides code (engine/tool.h) the policy enables, as
 * tools/list entries; and a call of one through engine_tool_call (a
 * "session_id" argument names the session whose workspace it uses).
 * mcp_tools_engine_call: 0 with the tool's result in *ret, or -errno
 * with msg (a tool error: isError). */
json_t *mcp_tools_engine_list(struct mcp_tools *t);
int mcp_tools_engine_call(struct mcp_tools *t, const char *name, json_t *args, json_t **ret,
			  struct buf *msg);

/* ---- catalog.c: the tools as the protocol sees them ---- */

/* The array of tool definitions for tools/list.  structured: the
 * negotiated version has outputSchema/structuredContent (2025-06-18 and
 * later).  New reference. */
json_t *mcp_catalog_list(struct mcp_tools *t, bool structured);

/* JSON-RPC error codes. */
enum {
	MCP_PARSE_ERROR = -32700,
	MCP_INVALID_REQUEST = -32600,
	MCP_METHOD_NOT_FOUND = -32601,
	MCP_INVALID_PARAMS = -32602,
	MCP_INTERNAL_ERROR = -32603,
	MCP_UNSUPPORTED_VERSION = -32022, /* 2026-07-28 */
};

/* tools/call: run the tool and return the CallToolResult (new
 * reference); or NULL with *ret_code and a message in msg for a JSON-RPC
 * error (unknown tool, arguments that do not fit the inputSchema). */
json_t *mcp_catalog_call(struct mcp_tools *t, const char *name, json_t *arguments, bool structured,
			 int *ret_code, struct buf *msg);

#endif
