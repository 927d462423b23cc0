/* libFuzzer target: the MCP door's JSON-RPC framing, lifecycle and
 * dispatch (src/mcp/protocol.c) and the tools' argument checks and
 * result content (src/mcp/catalog.c), without sandboxes.
 *
 * The input is a conversation: one message a line, handled in order on
 * one connection, so later lines reach the states earlier ones made
 * (initialized with some version, batches allowed or not).  The adapter
 * into the engine (src/mcp/tools.c) is replaced by the fakes below,
 * which answer from the arguments alone.  The two files are included
 * rather than linked so that `make fuzz` builds this target as it builds
 * the others.
 *
 * Checked: every reply is one JSON value on one line; a request with a
 * valid id is answered with that id; error codes are JSON-RPC's or MCP's;
 * a successful tools/call has content and a boolean isError. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/mcp/protocol.c"
#include "../../src/mcp/catalog.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- fake adapter ---- */

/* the sessions every call shares: only their count here */
struct mcp_tools_shared {
	unsigned n;
};

int mcp_tools_new(const struct mcp_config *cfg, struct mcp_tools_shared **ret, char **ret_error)
{
	(void)cfg, (void)ret_error;
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void mcp_tools_free(struct mcp_tools_shared *sh)
{
	free(sh);
}

unsigned mcp_tools_count(struct mcp_tools_shared *sh)
{
	return sh->n;
}

void mcp_tools_expire(struct mcp_tools *t)
{
	(void)t;
}

/* one call's state, on the caller's stack */
void mcp_tools_begin(struct mcp_tools_shared *sh, struct mcp_tools *t)
{
	memset(t, 0, sizeof(*t));
	t->sh = sh;
}

void mcp_tools_audit(struct mcp_tools *t, const char *tool, const char *session, bool ok)
{
	(void)t, (void)tool, (void)session, (void)ok;
}

/* the tools besides code: none enabled (the default policy's) */
json_t *mcp_tools_engine_list(struct mcp_tools *t)
{
	(void)t;
	return json_array();
}

int mcp_tools_engine_call(struct mcp_tools *t, const char *name, json_t *args, json_t **ret,
			  struct buf *msg)
{
	(void)t, (void)args, (void)ret;
	return buf_printf(msg, "the %s tool is not enabled here", name), -EPERM;
}

/* A session id of "gone" is unknown; anything else exists. */
static int fake_session(const char *id, struct buf *msg)
{
	if (id && !strcmp(id, "gone"))
		return buf_printf(msg, "no session '%s'", id), -ENOENT;
	return 0;
}

int mcp_tools_run(struct mcp_tools *t, const struct mcp_run_args *a, json_t **ret, struct buf *msg)
{
	bool fail = a->code_len && a->code[0] == '!';

	(void)t;
	if (fake_session(a->session_id, msg) < 0)
		return -ENOENT;
	*ret = json_pack(
		"{s:s, s:{s:s%, s:s}, s:[{s:s, s:b}, {s:s%, s:b}], s:o, s:o}", "status",
		fail ? "error" : "ok", "logs", "stdout", a->code, a->code_len, "stderr",
		fail ? "Traceback\n" : "", "results", "image/png", "iVBORw0KGgo=", "is_main_result",
		0, "text/plain", a->code, a->code_len > 16 ? (size_t)16 : a->code_len,
		"is_main_result", 1, "error",
		fail ? json_pack("{s:s, s:s, s:s}", "name", "E", "value", "v", "traceback", "tb")
		     : json_null(),
		"exit_code", fail ? json_integer(1) : json_integer(0));
	if (a->session_id)
		json_object_set_new(*ret, "session_id", json_string(a->session_id));
	return 0;
}

int mcp_tools_create_session(struct mcp_tools *t, const char *language, const char *preload,
			     const char *project, json_t **ret, struct buf *msg)
{
	(void)project;
	if (preload && language && strcmp(language, "python") != 0)
		return buf_puts(msg, "preload is for Python sessions"), -EINVAL;
	t->sh->n++;
	*ret = json_pack("{s:s, s:s}", "session_id", "0123456789abcdef", "language",
			 language ? language : "python");
	return 0;
}

int mcp_tools_close_session(struct mcp_tools *t, const char *id, json_t **ret, struct buf *msg)
{
	if (fake_session(id, msg) < 0)
		return -ENOENT;
	if (t->sh->n)
		t->sh->n--;
	*ret = json_pack("{s:s, s:b}", "session_id", id, "closed", 1);
	return 0;
}

int mcp_tools_list_sessions(struct mcp_tools *t, json_t **ret, struct buf *msg)
{
	(void)msg;
	*ret = json_pack("{s:[], s:i}", "sessions", "count", (int)t->sh->n);
	return 0;
}

int mcp_tools_list_files(struct mcp_tools *t, const char *id, const char *path, json_t **ret,
			 struct buf *msg)
{
	(void)t;
	if (fake_session(id, msg) < 0)
		return -ENOENT;
	*ret = json_pack("{s:s, s:[], s:b}", "path", path, "entries", "truncated", 0);
	return 0;
}

/* The file holds its own path's bytes. */
int mcp_tools_read_file(struct mcp_tools *t, const char *id, const char *path, struct buf *data,
			json_t **ret, struct buf *msg)
{
	(void)t;
	if (fake_session(id, msg) < 0)
		return -ENOENT;
	(void)buf_puts(data, path);
	*ret = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t)data->len);
	return 0;
}

int mcp_tools_write_file(struct mcp_tools *t, const char *id, const char *path, const char *data,
			 size_t len, json_t **ret, struct buf *msg)
{
	(void)t, (void)data;
	if (fake_session(id, msg) < 0)
		return -ENOENT;
	*ret = json_pack("{s:s, s:I, s:b}", "path", path, "size", (json_int_t)len, "replaced", 0);
	return 0;
}

/* ---- checks ---- */

static bool known_code(json_int_t c)
{
	return c == MCP_PARSE_ERROR || c == MCP_INVALID_REQUEST || c == MCP_METHOD_NOT_FOUND ||
	       c == MCP_INVALID_PARAMS || c == MCP_INTERNAL_ERROR || c == MCP_UNSUPPORTED_VERSION;
}

static void check_response(json_t *r)
{
	json_t *err = json_object_get(r, "error"), *res = json_object_get(r, "result");

	if (!json_is_object(r) || !json_is_string(json_object_get(r, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(r, "jsonrpc")), "2.0") != 0)
		abort();
	if (!!err == !!res)
		abort(); /* exactly one of them */
	if (err && (!known_code(json_integer_value(json_object_get(err, "code"))) ||
		    !json_is_string(json_object_get(err, "message"))))
		abort();
	if (res && !json_is_object(res))
		abort();
	if (res && json_object_get(res, "content") &&
	    (!json_is_array(json_object_get(res, "content")) ||
	     !json_is_boolean(json_object_get(res, "isError"))))
		abort();
}

/* The id a message asks to be answered with, or NULL. */
static json_t *asked_id(const char *line, size_t len)
{
	json_t *m = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
			       NULL);
	json_t *id = json_is_object(m) ? json_object_get(m, "id") : NULL;

	id = (json_is_string(id) || json_is_integer(id)) &&
			     json_is_string(json_object_get(m, "method"))
		     ? json_incref(id)
		     : NULL;
	json_decref(m);
	return id;
}

static void one(struct mcp_conn *c, const char *line, size_t len)
{
	size_t rlen = 0;
	char *reply = mcp_conn_handle(c, line, len, &rlen);
	json_t *want = asked_id(line, len), *r;

	if (!reply) {
		if (want)
			abort(); /* a request without an answer */
		return;
	}
	if (strlen(reply) != rlen || memchr(reply, '\n', rlen))
		abort();
	r = json_loadb(reply, rlen, JSON_DECODE_ANY, NULL);
	if (!r)
		abort();
	if (json_is_array(r)) {
		size_t i;
		json_t *x;

		json_array_foreach (r, i, x)
			check_response(x);
	} else {
		check_response(r);
		if (want && !json_equal(want, json_object_get(r, "id")))
			abort();
	}
	json_decref(r);
	json_decref(want);
	free(reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const inits[] = {
		NULL,
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2024-11-05\"}}",
	};
	struct mcp_config cfg = { .max_sessions = 4, .stop_fd = -1 };
	struct mcp_server *srv = NULL;
	struct mcp_conn *c;
	const char *p, *end;

	if (size < 1 || mcp_server_new(&cfg, &srv, NULL) < 0)
		return 0;
	c = mcp_conn_new(srv);
	if (inits[data[0] & 3])
		one(c, inits[data[0] & 3], strlen(inits[data[0] & 3]));
	for (p = (const char *)data + 1, end = (const char *)data + size; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		one(c, p, n);
		p += n + 1;
	}
	mcp_conn_free(c);
	mcp_server_free(srv);
	return 0;
}
