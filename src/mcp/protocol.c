/* JSON-RPC 2.0 framing and the MCP lifecycle.
 *
 * Legacy revisions (2024-11-05 to 2025-11-25) open with `initialize`;
 * the server answers with the client's version when it knows it, else
 * the latest it has (lifecycle, "Version Negotiation"), and refuses
 * everything but `ping` before that.  Batches exist only in 2025-03-26
 * (added there, removed in 2025-06-18).  The stateless 2026-07-28
 * revision has no handshake: a request whose params._meta names a
 * protocol version is served on its own, and an unknown version gets
 * UnsupportedProtocolVersionError (-32022) with the list we support
 * (basic/versioning.mdx).  A dual-era server picks the era by how the
 * client opens, so both work on one connection. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/utf8.h"
#include "util/banned.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6))
#define MODERN_VERSION "2026-07-28"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER "io.modelcontextprotocol/serverInfo"

struct mcp_server {
	struct mcp_config cfg;
	struct mcp_tools_shared *tools;
};

/* The handshake revisions, oldest first: the last is what an unknown
 * version is answered with. */
static const struct legacy_version {
	const char *name;
	bool batches;	 /* JSON-RPC batches (2025-03-26 only) */
	bool structured; /* outputSchema, structuredContent */
} legacy_versions[] = {
	{ "2024-11-05", false, false },
	{ "2025-03-26", true, false },
	{ "2025-06-18", false, true },
	{ "2025-11-25", false, true },
};

struct mcp_conn {
	struct mcp_server *srv;
	const struct legacy_version *version; /* NULL: not initialized */
	bool initialized;		      /* notifications/initialized came */
};

/* What one request is answered with: a result or an error. */
struct reply {
	json_t *result;
	int code;
	struct buf msg;
	json_t *data;
};

static int fail(struct reply *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct reply *r, int code, const char *fmt, ...)
{
	va_list ap;
	char text[MCP_MSG_MAX];

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	r->code = code;
	buf_reset(&r->msg);
	(void)buf_puts(&r->msg, text);
	return -EINVAL;
}

/* ---- the server ---- */

int mcp_server_new(const struct mcp_config *cfg, struct mcp_server **ret, char **ret_error)
{
	struct mcp_server *srv = calloc(1, sizeof(*srv));
	int r;

	if (!srv)
		return -ENOMEM;
	srv->cfg = *cfg;
	r = mcp_tools_new(cfg, &srv->tools, ret_error);
	if (r < 0) {
		free(srv);
		return r;
	}
	*ret = srv;
	return 0;
}

void mcp_server_free(struct mcp_server *srv)
{
	if (!srv)
		return;
	mcp_tools_free(srv->tools);
	free(srv);
}

unsigned mcp_server_sessions(const struct mcp_server *srv)
{
	return mcp_tools_count(srv->tools);
}

struct mcp_conn *mcp_conn_new(struct mcp_server *srv)
{
	struct mcp_conn *c = calloc(1, sizeof(*c));

	if (c)
		c->srv = srv;
	return c;
}

void mcp_conn_free(struct mcp_conn *c)
{
	free(c);
}

/* ---- methods ---- */

static json_t *server_info(const struct mcp_server *srv)
{
	return json_pack("{s:s, s:s, s:s}", "name", "codecell", "title", "codecell sandbox",
			 "version", srv->cfg.server_version ? srv->cfg.server_version : "0");
}

static const char instructions[] =
	"codecell runs code in a sealed Linux sandbox (no network beyond loopback, "
	"limits on time, memory and processes). run_code without session_id runs a "
	"fresh one-shot program; create_session gives a session_id whose variables, "
	"imports and files persist across run_code calls (like a notebook kernel). "
	"A failing program comes back with isError and its traceback: fix the code "
	"and run it again. Figures (matplotlib) come back as images. Files live in "
	"the session's workspace (the working directory): list_files, read_file, "
	"write_file. close_session when done.";

static json_t *capabilities(void)
{
	return json_pack("{s:{s:b}}", "tools", "listChanged", 0);
}

static const struct legacy_version *find_legacy(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(legacy_versions); i++)
		if (!strcmp(legacy_versions[i].name, name))
			return &legacy_versions[i];
	return NULL;
}

bool mcp_version_known(const char *name)
{
	return name && (find_legacy(name) || !strcmp(name, MODERN_VERSION));
}

static json_t *supported_versions(void)
{
	json_t *a = json_array();

	json_array_append_new(a, json_string(MODERN_VERSION));
	for (size_t i = ARRAY_SIZE(legacy_versions); i-- > 0;)
		json_array_append_new(a, json_string(legacy_versions[i].name));
	return a;
}

static int m_initialize(struct mcp_conn *c, json_t *params, struct reply *r)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const struct legacy_version *v;

	if (c->version)
		return fail(r, MCP_INVALID_REQUEST,
			    "already initialized (protocol version %s): "
			    "'initialize' comes once per connection",
			    c->version->name);
	if (!asked)
		return fail(r, MCP_INVALID_PARAMS,
			    "'initialize' needs params.protocolVersion, a string "
			    "such as \"2025-11-25\"");
	v = find_legacy(asked);
	c->version = v ? v : &legacy_versions[ARRAY_SIZE(legacy_versions) - 1];
	r->result = json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", c->version->name,
			      "capabilities", capabilities(), "serverInfo", server_info(c->srv),
			      "instructions", instructions);
	return 0;
}

static int m_discover(struct mcp_conn *c, json_t *params, struct reply *r)
{
	(void)params;
	r->result = json_pack("{s:o, s:o, s:s, s:i, s:s}", "supportedVersions",
			      supported_versions(), "capabilities", capabilities(), "instructions",
			      instructions, "ttlMs", 3600000, "cacheScope", "public");
	(void)c;
	return 0;
}

static int m_ping(struct mcp_conn *c, json_t *params, struct reply *r)
{
	(void)c, (void)params;
	r->result = json_object();
	return 0;
}

/* The modern revision has outputSchema and structuredContent too. */
static bool wants_structured(const struct mcp_conn *c)
{
	return !c->version || c->version->structured;
}

static int m_tools_list(struct mcp_conn *c, json_t *params, struct reply *r)
{
	json_t *cursor = json_object_get(params, "cursor");
	struct mcp_tools t;

	/* one page: a cursor we never gave out is invalid */
	if (cursor && !json_is_null(cursor))
		return fail(r, MCP_INVALID_PARAMS, "unknown cursor: tools/list has a single page");
	mcp_tools_begin(c->srv->tools, &t);
	r->result = json_pack("{s:o}", "tools", mcp_catalog_list(&t, wants_structured(c)));
	if (!c->version) {
		json_object_set_new(r->result, "ttlMs", json_integer(3600000));
		json_object_set_new(r->result, "cacheScope", json_string("public"));
	}
	return 0;
}

static int m_tools_call(struct mcp_conn *c, json_t *params, struct reply *r)
{
	json_t *name = json_object_get(params, "name");
	json_t *args = json_object_get(params, "arguments");
	struct mcp_tools t;

	if (!json_is_string(name))
		return fail(r, MCP_INVALID_PARAMS,
			    "tools/call needs params.name, the tool's name (see tools/list)");
	if (args && !json_is_object(args) && !json_is_null(args))
		return fail(r, MCP_INVALID_PARAMS, "params.arguments must be an object");
	/* the call's own verdict and record: calls may run at once */
	mcp_tools_begin(c->srv->tools, &t);
	mcp_tools_expire(&t);
	r->result =
		mcp_catalog_call(&t, json_string_value(name), json_is_object(args) ? args : NULL,
				 wants_structured(c), &r->code, &r->msg);
	return r->result ? 0 : -EINVAL;
}

enum era { ERA_ANY, ERA_LEGACY, ERA_MODERN };

static const struct method {
	const char *name;
	enum era era;
	bool before_init; /* legacy: allowed before initialize */
	int (*fn)(struct mcp_conn *c, json_t *params, struct reply *r);
} methods[] = {
	{ "initialize", ERA_LEGACY, true, m_initialize },
	{ "ping", ERA_ANY, true, m_ping },
	{ "server/discover", ERA_ANY, true, m_discover },
	{ "tools/list", ERA_ANY, false, m_tools_list },
	{ "tools/call", ERA_ANY, false, m_tools_call },
};

/* A modern request: params._meta names a protocol version.  0 not
 * modern, 1 modern and fine, -EINVAL with r set. */
static int modern_check(json_t *params, struct reply *r)
{
	json_t *meta = json_object_get(params, "_meta");
	json_t *ver = json_object_get(meta, META_VERSION);

	if (!ver)
		return 0;
	if (!json_is_string(ver))
		return fail(r, MCP_INVALID_PARAMS, "_meta[\"%s\"] must be a string", META_VERSION);
	if (strcmp(json_string_value(ver), MODERN_VERSION) != 0) {
		/* a handshake version named per request: legacy rules */
		if (find_legacy(json_string_value(ver)))
			return 0;
		r->data = json_pack("{s:o, s:O}", "supported", supported_versions(), "requested",
				    ver);
		return fail(r, MCP_UNSUPPORTED_VERSION, "Unsupported protocol version");
	}
	if (!json_is_object(json_object_get(meta, META_CAPS)))
		return fail(
			r, MCP_INVALID_PARAMS,
			"_meta[\"%s\"] must be an object (the client's capabilities, {} for none)",
			META_CAPS);
	return 1;
}

static const struct method *find_method(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (!strcmp(methods[i].name, name))
			return &methods[i];
	return NULL;
}

static int dispatch(struct mcp_conn *c, const char *name, json_t *params, struct reply *r)
{
	const struct method *m = find_method(name);
	int modern = modern_check(params, r);

	if (modern < 0)
		return modern;
	if (!m)
		return fail(r, MCP_METHOD_NOT_FOUND,
			    "method not found: '%.100s' (this server has tools only: "
			    "tools/list, tools/call)",
			    name);
	if (modern && m->era == ERA_LEGACY)
		return fail(r, MCP_INVALID_REQUEST,
			    "'%.100s' is not part of protocol %s: send requests with "
			    "_meta alone, or name a version from %s in 'initialize'",
			    name, MODERN_VERSION, "2024-11-05 to 2025-11-25");
	if (!modern && !c->version && !m->before_init)
		return fail(r, MCP_INVALID_REQUEST,
			    "the server is not initialized: send 'initialize' first "
			    "(or, for protocol %s, params._meta with \"%s\")",
			    MODERN_VERSION, META_VERSION);
	if (m->fn(c, params, r) < 0)
		return -EINVAL;
	if (modern) {
		json_object_set_new(r->result, "resultType", json_string("complete"));
		json_object_set_new(r->result, "_meta",
				    json_pack("{s:o}", META_SERVER, server_info(c->srv)));
	}
	return 0;
}

/* ---- messages ---- */


static json_t *error_reply(json_t *id, int code, const char *msg, json_t *data)
{
	json_t *err = json_pack("{s:i, s:o}", "code", code, "message",
				json_utf8_prefix(msg, strlen(msg)));

	if (data)
		json_object_set(err, "data", data);
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
			 err);
}

static bool valid_id(json_t *id)
{
	/* MCP: a string or an integer, never null */
	return json_is_string(id) || json_is_integer(id);
}

/* One message object.  The reply, or NULL when none is due. */
static json_t *handle_one(struct mcp_conn *c, json_t *m, bool in_batch)
{
	json_t *id = json_object_get(m, "id"), *method = json_object_get(m, "method");
	json_t *params = json_object_get(m, "params"), *reply;
	struct reply r = { .code = 0 };

	if (!json_is_object(m))
		return error_reply(NULL, MCP_INVALID_REQUEST, "a message must be a JSON object",
				   NULL);
	if (!method && (json_object_get(m, "result") || json_object_get(m, "error")))
		return NULL; /* a response: we send no requests, so nothing awaits it */
	if (!json_is_string(json_object_get(m, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0") != 0)
		return error_reply(valid_id(id) ? id : NULL, MCP_INVALID_REQUEST,
				   "\"jsonrpc\" must be \"2.0\"", NULL);
	if (id && !valid_id(id))
		return error_reply(NULL, MCP_INVALID_REQUEST,
				   "\"id\" must be a string or an integer", NULL);
	if (!json_is_string(method))
		return error_reply(id, MCP_INVALID_REQUEST, "\"method\" must be a string", NULL);
	if (!id) {
		/* notifications: initialized; the rest need nothing (stdio
		 * answers one request at a time; over HTTP a call in flight is
		 * not cancelled: its timeout or close_session ends it) */
		if (!strcmp(json_string_value(method), "notifications/initialized") && c->version)
			__atomic_store_n(&c->initialized, true, __ATOMIC_RELAXED);
		return NULL;
	}
	if (params && !json_is_object(params))
		return error_reply(id, MCP_INVALID_PARAMS, "\"params\" must be an object", NULL);
	if (in_batch && !strcmp(json_string_value(method), "initialize"))
		return error_reply(id, MCP_INVALID_REQUEST,
				   "'initialize' must not be part of a batch", NULL);
	buf_init(&r.msg, MCP_MSG_MAX);
	if (dispatch(c, json_string_value(method), params, &r) < 0) {
		reply = error_reply(id, r.code ? r.code : MCP_INTERNAL_ERROR,
				    r.msg.len ? buf_str(&r.msg) : "out of memory", r.data);
		json_decref(r.result);
	} else {
		reply = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
				  r.result);
	}
	json_decref(r.data);
	buf_release(&r.msg);
	return reply;
}

static json_t *handle_batch(struct mcp_conn *c, json_t *batch)
{
	json_t *replies, *m;
	size_t i;

	if (!c->version || !c->version->batches)
		return error_reply(
			NULL, MCP_INVALID_REQUEST,
			c->version
				? "batches are not part of this protocol version (only 2025-03-26 has them): send one message a line"
				: "batches are not allowed before 'initialize' (and only protocol 2025-03-26 has them)",
			NULL);
	if (json_array_size(batch) == 0)
		return error_reply(NULL, MCP_INVALID_REQUEST, "an empty batch", NULL);
	if (json_array_size(batch) > MCP_BATCH_MAX)
		return error_reply(NULL, MCP_INVALID_REQUEST, "too many messages in one batch",
				   NULL);
	replies = json_array();
	json_array_foreach (batch, i, m) {
		json_t *one = handle_one(c, m, true);

		if (one)
			json_array_append_new(replies, one);
	}
	if (json_array_size(replies) == 0) {
		json_decref(replies);
		return NULL;
	}
	return replies;
}

static char *dump(json_t *reply, size_t *ret_len)
{
	char *text = json_dumps(reply, JSON_FLAGS);

	if (text)
		*ret_len = strlen(text);
	else
		errno = ENOMEM;
	return text;
}

char *mcp_parse_error_reply(const char *why, size_t *ret_len)
{
	json_t *reply = error_reply(NULL, MCP_PARSE_ERROR, why, NULL);
	char *text = reply ? dump(reply, ret_len) : NULL;

	json_decref(reply);
	return text;
}

/* The whole reply over MCP_REPLY_MAX: an error in its place. */
static char *too_large(json_t *reply, size_t len, size_t *ret_len)
{
	json_t *id = json_is_object(reply) ? json_object_get(reply, "id") : NULL;
	char msg[256];
	json_t *err;
	char *text;

	snprintf(msg, sizeof(msg),
		 "the reply is too large (%zu bytes, the limit is %u): ask for less "
		 "output, or write it to a file and read parts of it",
		 len, MCP_REPLY_MAX);
	err = error_reply(id, MCP_INTERNAL_ERROR, msg, NULL);
	text = err ? dump(err, ret_len) : NULL;
	json_decref(err);
	return text;
}

char *mcp_conn_handle(struct mcp_conn *c, const char *msg, size_t len, size_t *ret_len)
{
	struct json_body_error jerr;
	json_t *m, *reply;
	char *text;

	errno = 0;
	if (json_body_read(msg, len, MCP_JSON_FLAGS, &m, &jerr) < 0) {
		char why[300];

		snprintf(why, sizeof(why), "parse error: %s", jerr.message);
		return mcp_parse_error_reply(why, ret_len);
	}
	reply = json_is_array(m) ? handle_batch(c, m) : handle_one(c, m, false);
	json_decref(m);
	if (!reply)
		return NULL;
	text = dump(reply, ret_len);
	if (text && *ret_len > MCP_REPLY_MAX) {
		size_t big = *ret_len;

		free(text);
		text = too_large(reply, big, ret_len);
	}
	json_decref(reply);
	return text;
}
