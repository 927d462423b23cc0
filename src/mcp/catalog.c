/* The tools: one table of arguments per tool gives both the inputSchema
 * that tools/list shows and the checks tools/call makes, so the two never
 * disagree.  Arguments that do not fit the schema are a JSON-RPC error
 * (-32602: the request is malformed); everything that goes wrong after
 * that (an unknown session, a path that leads out, a program that fails)
 * is a tool result with isError, which the model reads and acts on
 * (tools.mdx, "Error Handling"). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/result_text.h"
#include "engine/engine.h"
#include "engine/tool.h"
#include "mcp/internal.h"
#include "util/base64.h"
#include "util/macro.h"
#include "util/utf8.h"
#include "util/json.h"
#include "util/banned.h"

#define CODE_MAX (8u << 20) /* the engine's limit on code (ENGINE_CODE_MAX) */
#define ID_ARG_MAX 64
#define PATH_ARG_MAX 4096
#define PRELOAD_ARG_MAX 1024
/* base64 of MCP_FILE_MAX bytes */
#define CONTENT_ARG_MAX (((MCP_FILE_MAX + 2) / 3) * 4)

enum arg_type { ARG_STRING, ARG_NUMBER, ARG_INTEGER /* from 0 */ };

struct arg {
	const char *name;
	enum arg_type type;
	bool required;
	const char *description;
	const char *const *choices; /* NULL-terminated, or NULL */
	double min, max;	    /* numbers */
	size_t max_len;		    /* strings, in bytes */
};

/* The checked arguments of one call: borrowed from the request. */
struct args {
	const char *s[8];
	size_t len[8];
	double n[8];
	bool set[8];
};

struct tool {
	const char *name, *title, *description;
	const struct arg *args;
	bool read_only, destructive, idempotent;
	const char *output_schema; /* JSON text */
	/* 0 with *ret set, or -errno with msg (a tool error) */
	int (*call)(struct mcp_tools *t, const struct args *a, json_t **ret, struct buf *msg);
	/* the result as content blocks */
	json_t *(*content)(json_t *result, const struct args *a);
	bool (*is_error)(json_t *result);
};

static const char *const run_langs[] = { "python", "javascript", "bash", "sql", NULL };
static const char *const session_langs[] = { "python", "javascript", "bash", NULL };
static const char *const encodings[] = { "text", "base64", NULL };

#define A_SESSION(req, what)                                                \
	{                                                                   \
		"session_id", ARG_STRING, req, what, NULL, 0, 0, ID_ARG_MAX \
	}

static const struct arg run_args[] = {
	{ "code", ARG_STRING, true, "The program to run.", NULL, 0, 0, CODE_MAX },
	{ "language", ARG_STRING, false,
	  "python (the default), javascript, bash or sql (one-shot only). With a session_id, the session's language, which this may only repeat.",
	  run_langs, 0, 0, 16 },
	A_SESSION(
		false,
		"Run in this session (from create_session): variables, imports and files persist. Without it, a fresh sandbox runs the code once."),
	{ "timeout", ARG_NUMBER, false,
	  "Seconds before the program is stopped (a session's cell is interrupted and the session kept). Default: the server's --timeout.",
	  NULL, ENGINE_TIMEOUT_FLOOR_S, MCP_TIMEOUT_MAX_S, 0 },
	{ "seed", ARG_INTEGER, false,
	  "One-shot runs: start random, numpy.random, Math.random, $RANDOM and Python's hashes from this number, so the same code gives the same output (time and os.urandom stay random). Sessions are seeded when created.",
	  NULL, 0, ENGINE_SEED_MAX, 0 },
	{ NULL },
};

static const struct arg create_args[] = {
	{ "language", ARG_STRING, false, "python (the default), javascript or bash.", session_langs,
	  0, 0, 16 },
	{ "preload", ARG_STRING, false,
	  "Python: modules to import at start, comma-separated (\"numpy,pandas\"). Default: the server's --preload.",
	  NULL, 0, 0, PRELOAD_ARG_MAX },
	{ "project", ARG_STRING, false,
	  "A host directory the session sees as its workspace, through an overlay: what the code writes or deletes lands in an upper layer and the directory stays untouched. It must be inside one of the policy's projects.",
	  NULL, 0, 0, PATH_ARG_MAX },
	{ NULL },
};

static const struct arg session_only_args[] = {
	A_SESSION(true, "The session, from create_session."),
	{ NULL },
};

static const struct arg no_args[] = { { NULL } };

static const struct arg list_files_args[] = {
	A_SESSION(true, "The session, from create_session."),
	{ "path", ARG_STRING, false,
	  "A directory relative to the workspace (default: the workspace itself).", NULL, 0, 0,
	  PATH_ARG_MAX },
	{ NULL },
};

static const struct arg read_args[] = {
	A_SESSION(true, "The session, from create_session."),
	{ "path", ARG_STRING, true, "A file relative to the workspace.", NULL, 0, 0, PATH_ARG_MAX },
	{ "encoding", ARG_STRING, false,
	  "text or base64. Default: text when the file is UTF-8, base64 otherwise.", encodings, 0,
	  0, 16 },
	{ NULL },
};

static const struct arg write_args[] = {
	A_SESSION(true, "The session, from create_session."),
	{ "path", ARG_STRING, true,
	  "A file relative to the workspace; missing directories are made, an existing file is replaced.",
	  NULL, 0, 0, PATH_ARG_MAX },
	{ "content", ARG_STRING, true, "What the file holds (at most 16 MiB).", NULL, 0, 0,
	  CONTENT_ARG_MAX },
	{ "encoding", ARG_STRING, false, "text (the default) or base64.", encodings, 0, 0, 16 },
	{ NULL },
};

/* ---- output schemas ---- */

static const char result_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"error\",\"timeout\",\"memory_limit\","
	"\"output_limit\",\"killed\",\"rejected\"]},"
	"\"logs\":{\"type\":\"object\",\"properties\":{\"stdout\":{\"type\":\"string\"},"
	"\"stderr\":{\"type\":\"string\"}}},"
	"\"outputs\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	"\"stream\":{\"type\":\"string\",\"enum\":[\"stdout\",\"stderr\"]},"
	"\"text\":{\"type\":\"string\"}}}},"
	"\"results\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
	"\"error\":{\"type\":[\"object\",\"null\"]},"
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},"
	"\"signal\":{\"type\":[\"integer\",\"string\",\"null\"]},"
	"\"execution_count\":{\"type\":[\"integer\",\"null\"]},"
	"\"restarted\":{\"type\":\"boolean\"},"
	"\"duration_ms\":{\"type\":\"number\"},"
	"\"usage\":{\"type\":\"object\"},"
	"\"truncated\":{\"type\":\"object\"},"
	"\"limits_unenforced\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"\"limits_hit\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"\"warning\":{\"type\":\"string\"},"
	"\"session_id\":{\"type\":\"string\"}},"
	"\"required\":[\"status\",\"logs\",\"results\",\"error\"]}";

static const char session_schema[] =
	"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"language\":{\"type\":\"string\"},\"pooled\":{\"type\":\"boolean\"},"
	"\"preload\":{\"type\":[\"string\",\"null\"]},\"preloaded\":{\"type\":\"string\"},"
	"\"preload_failed\":{\"type\":\"string\"},\"project\":{\"type\":[\"string\",\"null\"]}},"
	"\"required\":[\"session_id\",\"language\"]}";

static const char closed_schema[] =
	"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"closed\":{\"type\":\"boolean\"}},\"required\":[\"session_id\",\"closed\"]}";

static const char sessions_schema[] =
	"{\"type\":\"object\",\"properties\":{\"sessions\":{\"type\":\"array\",\"items\":"
	"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"language\":{\"type\":\"string\"},\"executions\":{\"type\":\"integer\"},"
	"\"idle_s\":{\"type\":\"number\"}}}},\"count\":{\"type\":\"integer\"},"
	"\"max_sessions\":{\"type\":\"integer\"}},\"required\":[\"sessions\",\"count\"]}";

static const char files_schema[] =
	"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"path\":{\"type\":\"string\"},\"entries\":{\"type\":\"array\",\"items\":"
	"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
	"\"type\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}}}},"
	"\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"path\",\"entries\"]}";

static const char read_schema[] =
	"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
	"\"encoding\":{\"type\":\"string\",\"enum\":[\"text\",\"base64\"]},"
	"\"content\":{\"type\":\"string\"}},\"required\":[\"path\",\"size\",\"encoding\",\"content\"]}";

static const char write_schema[] =
	"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
	"\"replaced\":{\"type\":\"boolean\"}},\"required\":[\"path\",\"size\"]}";

/* ---- calls ---- */

enum { RUN_CODE, RUN_LANG, RUN_SESSION, RUN_TIMEOUT, RUN_SEED };

static int call_run(struct mcp_tools *t, const struct args *a, json_t **ret, struct buf *msg)
{
	struct mcp_run_args r = {
		.code = a->s[RUN_CODE],
		.code_len = a->len[RUN_CODE],
		.language = a->set[RUN_LANG] ? a->s[RUN_LANG] : NULL,
		.session_id = a->set[RUN_SESSION] ? a->s[RUN_SESSION] : NULL,
		.timeout_s = a->set[RUN_TIMEOUT] ? a->n[RUN_TIMEOUT] : 0,
		.has_seed = a->set[RUN_SEED],
		.seed = a->set[RUN_SEED] ? (uint64_t)a->n[RUN_SEED] : 0,
	};

	return mcp_tools_run(t, &r, ret, msg);
}

static int call_create(struct mcp_tools *t, const struct args *a, json_t **ret, struct buf *msg)
{
	return mcp_tools_create_session(t, a->set[0] ? a->s[0] : NULL, a->set[1] ? a->s[1] : NULL,
					a->set[2] ? a->s[2] : NULL, ret, msg);
}

static int call_close(struct mcp_tools *t, const struct args *a, json_t **ret, struct buf *msg)
{
	return mcp_tools_close_session(t, a->s[0], ret, msg);
}

static int call_list_sessions(struct mcp_tools *t, const struct args *a, json_t **ret,
			      struct buf *msg)
{
	(void)a;
	return mcp_tools_list_sessions(t, ret, msg);
}

static int call_list_files(struct mcp_tools *t, const struct args *a, json_t **ret, struct buf *msg)
{
	return mcp_tools_list_files(t, a->s[0], a->set[1] ? a->s[1] : ".", ret, msg);
}

static int call_read(struct mcp_tools *t, const struct args *a, json_t **ret, struct buf *msg)
{
	struct buf data;
	uint64_t bad;
	bool text;
	int r;

	buf_init(&data, MCP_FILE_MAX);
	r = mcp_tools_read_file(t, a->s[0], a->s[1], &data, ret, msg);
	if (r < 0) {
		buf_release(&data);
		return r;
	}
	text = utf8_valid(buf_str(&data), data.len, &bad) && !memchr(buf_str(&data), 0, data.len);
	if (a->set[2] && !strcmp(a->s[2], "text") && !text) {
		json_decref(*ret);
		buf_release(&data);
		(void)buf_printf(
			msg,
			"'%.200s' is not UTF-8 text (byte %llu): read it with encoding \"base64\"",
			a->s[1], (unsigned long long)bad);
		return -EINVAL;
	}
	if (a->set[2] && !strcmp(a->s[2], "base64"))
		text = false;
	if (text) {
		json_object_set_new(*ret, "encoding", json_string("text"));
		json_object_set_new(*ret, "content", json_stringn(buf_str(&data), data.len));
	} else {
		char *enc = base64_encode(buf_str(&data), data.len);

		json_object_set_new(*ret, "encoding", json_string("base64"));
		json_object_set_new(*ret, "content", enc ? json_string(enc) : json_string(""));
		free(enc);
	}
	buf_release(&data);
	return 0;
}

static int call_write(struct mcp_tools *t, const struct args *a, json_t **ret, struct buf *msg)
{
	struct buf data;
	int r;

	if (!(a->set[3] && !strcmp(a->s[3], "base64")))
		return mcp_tools_write_file(t, a->s[0], a->s[1], a->s[2], a->len[2], ret, msg);
	buf_init(&data, MCP_FILE_MAX);
	r = base64_decode(a->s[2], a->len[2], &data);
	if (r < 0) {
		(void)buf_puts(
			msg,
			r == -E2BIG ? "content is over the 16 MiB limit of write_file"
			: r == -ENOMEM
				? "out of memory: try again, or write a smaller file"
				: "content is not valid base64 (RFC 4648 alphabet, padded, no whitespace)");
	} else {
		r = mcp_tools_write_file(t, a->s[0], a->s[1], buf_str(&data), data.len, ret, msg);
	}
	buf_release(&data);
	return r;
}

/* ---- content ---- */

static json_t *text_block(const char *text, size_t len)
{
	return json_pack("{s:s, s:o}", "type", "text", "text", json_utf8_prefix(text, len));
}

static const char *str_at(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);

	return json_string_value(b ? json_object_get(v, b) : v);
}

/* A result the model reads: output, the value, the traceback, then one
 * line of status; figures as image blocks after it. */
static json_t *run_content(json_t *res, const struct args *a)
{
	json_t *content = json_array(), *bundle;
	struct buf b;
	size_t i;

	(void)a;
	buf_init(&b, MCP_REPLY_MAX);
	(void)result_text(res, 0, false, &b);
	json_array_append_new(content, text_block(buf_str(&b), b.len));
	buf_release(&b);
	json_array_foreach (json_object_get(res, "results"), i, bundle) {
		static const char *const types[] = { "image/png", "image/jpeg" };

		for (size_t k = 0; k < ARRAY_SIZE(types); k++)
			if (json_is_string(json_object_get(bundle, types[k])))
				json_array_append_new(content,
						      json_pack("{s:s, s:O, s:s}", "type", "image",
								"data",
								json_object_get(bundle, types[k]),
								"mimeType", types[k]));
	}
	return content;
}

static bool run_failed(json_t *res)
{
	const char *status = str_at(res, "status", NULL);

	return !status || strcmp(status, "ok") != 0;
}

/* Other tools: the object as JSON text (what clients without
 * structuredContent see, and what the spec asks to send beside it). */
static json_t *json_content(json_t *res, const struct args *a)
{
	char *text = json_dumps(res, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_t *c = json_array();

	(void)a;
	json_array_append_new(c, text_block(text ? text : "{}", text ? strlen(text) : 2));
	free(text);
	return c;
}

/* read_file: the contents themselves, and an image block for a PNG or
 * JPEG (so a model can look at a figure a program saved). */
static json_t *read_content(json_t *res, const struct args *a)
{
	const char *content = str_at(res, "content", NULL), *enc = str_at(res, "encoding", NULL);
	json_t *c = json_array();

	(void)a;
	json_array_append_new(c, text_block(content ? content : "", content ? strlen(content) : 0));
	if (enc && !strcmp(enc, "base64") && content) {
		const char *mime = !strncmp(content, "iVBORw0KGgo", 11) ? "image/png"
				   : !strncmp(content, "/9j/", 4)	? "image/jpeg"
									: NULL;

		if (mime)
			json_array_append_new(c, json_pack("{s:s, s:s, s:s}", "type", "image",
							   "data", content, "mimeType", mime));
	}
	return c;
}

static bool never(json_t *res)
{
	(void)res;
	return false;
}

static const struct tool tools[] = {
	{ "run_code", "Run code",
	  "Run Python, JavaScript, bash or SQL in a sealed sandbox and get its output, the value of a "
	  "trailing expression, figures (as images) and, if it failed, the traceback (isError). "
	  "With session_id, state persists between calls.",
	  run_args, false, false, false, result_schema, call_run, run_content, run_failed },
	{ "create_session", "Create a session",
	  "Start a session: a sandboxed Python, JavaScript or bash kernel whose variables, imports and "
	  "files persist across run_code calls that pass its session_id.",
	  create_args, false, false, false, session_schema, call_create, json_content, never },
	{ "close_session", "Close a session", "End a session and everything in it, files included.",
	  session_only_args, false, true, true, closed_schema, call_close, json_content, never },
	{ "list_sessions", "List sessions", "The sessions open now.", no_args, true, false, true,
	  sessions_schema, call_list_sessions, json_content, never },
	{ "list_files", "List files", "The entries of a directory in a session's workspace.",
	  list_files_args, true, false, true, files_schema, call_list_files, json_content, never },
	{ "read_file", "Read a file",
	  "Read a file from a session's workspace (at most 16 MiB): text, or base64 for binary files; "
	  "PNG and JPEG files also come back as images.",
	  read_args, true, false, true, read_schema, call_read, read_content, never },
	{ "write_file", "Write a file",
	  "Write a file into a session's workspace (at most 16 MiB), as text or base64.",
	  write_args, false, true, true, write_schema, call_write, json_content, never },
};

/* ---- schemas and checks from the tables ---- */

static json_t *input_schema(const struct arg *args)
{
	json_t *props = json_object(), *req = json_array();

	for (const struct arg *a = args; a->name; a++) {
		json_t *p = json_pack("{s:s, s:s}", "type",
				      a->type == ARG_STRING    ? "string"
				      : a->type == ARG_INTEGER ? "integer"
							       : "number",
				      "description", a->description);

		if (a->choices) {
			json_t *e = json_array();

			for (const char *const *c = a->choices; *c; c++)
				json_array_append_new(e, json_string(*c));
			json_object_set_new(p, "enum", e);
		}
		if (a->type == ARG_NUMBER) {
			json_object_set_new(p, "exclusiveMinimum", json_real(0));
			json_object_set_new(p, "maximum", json_real(a->max));
		}
		if (a->type == ARG_INTEGER) {
			json_object_set_new(p, "minimum", json_integer(0));
			json_object_set_new(p, "maximum", json_integer((json_int_t)a->max));
		}
		json_object_set_new(props, a->name, p);
		if (a->required)
			json_array_append_new(req, json_string(a->name));
	}
	return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required",
			 req, "additionalProperties", 0);
}

json_t *mcp_catalog_list(struct mcp_tools *mt, bool structured)
{
	json_t *list = json_array();

	for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
		const struct tool *t = &tools[i];
		json_t *d = json_pack("{s:s, s:s, s:s, s:o}", "name", t->name, "title", t->title,
				      "description", t->description, "inputSchema",
				      input_schema(t->args));

		json_object_set_new(d, "annotations",
				    json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", t->title,
					      "readOnlyHint", t->read_only, "destructiveHint",
					      t->destructive, "idempotentHint", t->idempotent,
					      "openWorldHint", 0));
		if (structured)
			json_object_set_new(d, "outputSchema",
					    json_loads(t->output_schema, 0, NULL));
		json_array_append_new(list, d);
	}
	{
		json_t *more = mcp_tools_engine_list(mt);

		json_array_extend(list, more);
		json_decref(more);
	}
	return list;
}

static json_t *tool_error(const char *text);

/* A tool besides code (engine/tool.h): its result as JSON text, and as
 * structuredContent; an SQLError and the like is isError. */
static json_t *engine_call(struct mcp_tools *mt, const char *name, json_t *arguments,
			   bool structured, struct buf *msg)
{
	json_t *res = NULL, *out, *none = arguments ? NULL : json_object();
	char *text;
	int k = mcp_tools_engine_call(mt, name, arguments ? arguments : none, &res, msg);

	json_decref(none);
	if (k < 0)
		return tool_error(msg->len ? buf_str(msg) : "the tool failed");
	text = json_dumps(res, JSON_COMPACT | JSON_ENSURE_ASCII);
	out = json_pack("{s:[o], s:b}", "content",
			text_block(text ? text : "{}", text ? strlen(text) : 2), "isError",
			json_object_get(res, "error") != NULL);
	free(text);
	if (structured)
		json_object_set(out, "structuredContent", res);
	json_decref(res);
	return out;
}

static const char *type_name(json_t *v)
{
	return json_is_string(v)    ? "a string"
	       : json_is_number(v)  ? "a number"
	       : json_is_boolean(v) ? "a boolean"
	       : json_is_null(v)    ? "null"
	       : json_is_array(v)   ? "an array"
				    : "an object";
}

static int check_string(const struct tool *t, const struct arg *a, json_t *v, struct buf *msg)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	if (strlen(s) != n)
		return buf_printf(msg, "argument '%s' of '%s' holds a NUL character", a->name,
				  t->name),
		       -EINVAL;
	if (n > a->max_len)
		return buf_printf(msg, "argument '%s' of '%s' is too long (%zu bytes, at most %zu)",
				  a->name, t->name, n, a->max_len),
		       -EINVAL;
	if (a->choices) {
		for (const char *const *c = a->choices; *c; c++)
			if (!strcmp(*c, s))
				return 0;
		(void)buf_printf(msg, "argument '%s' of '%s' is '%.40s': it must be one of",
				 a->name, t->name, s);
		for (const char *const *c = a->choices; *c; c++)
			(void)buf_printf(msg, "%s %s", c == a->choices ? "" : ",", *c);
		return -EINVAL;
	}
	return 0;
}

static int check_arg(const struct tool *t, const struct arg *a, json_t *v, struct buf *msg)
{
	if (a->type == ARG_STRING && !json_is_string(v))
		return buf_printf(msg, "argument '%s' of '%s' must be a string, not %s", a->name,
				  t->name, type_name(v)),
		       -EINVAL;
	if (a->type == ARG_INTEGER) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    (double)json_integer_value(v) > a->max)
			return buf_printf(
				       msg,
				       "argument '%s' of '%s' must be a whole number from 0 to %.0f",
				       a->name, t->name, a->max),
			       -EINVAL;
		return 0;
	}
	if (a->type == ARG_NUMBER) {
		double d = json_number_value(v);

		if (!json_is_number(v))
			return buf_printf(msg, "argument '%s' of '%s' must be a number, not %s",
					  a->name, t->name, type_name(v)),
			       -EINVAL;
		if (!(d > 0) || d > a->max || !isfinite(d))
			return buf_printf(msg,
					  "argument '%s' of '%s' must be above 0 and at most %g",
					  a->name, t->name, a->max),
			       -EINVAL;
		return 0;
	}
	return check_string(t, a, v, msg);
}

static int check_args(const struct tool *t, json_t *given, struct args *out, struct buf *msg)
{
	const char *key;
	json_t *v;
	size_t i;

	memset(out, 0, sizeof(*out));
	json_object_foreach (given, key, v) {
		for (i = 0; t->args[i].name; i++)
			if (!strcmp(t->args[i].name, key))
				break;
		if (!t->args[i].name) {
			(void)buf_printf(msg, "unknown argument '%.100s' for '%s': it takes", key,
					 t->name);
			for (i = 0; t->args[i].name; i++)
				(void)buf_printf(msg, "%s %s", i ? "," : "", t->args[i].name);
			if (i == 0)
				(void)buf_puts(msg, " none");
			return -EINVAL;
		}
		if (check_arg(t, &t->args[i], v, msg) < 0)
			return -EINVAL;
		out->set[i] = true;
		out->s[i] = json_string_value(v);
		out->len[i] = json_string_length(v);
		out->n[i] = json_number_value(v);
	}
	for (i = 0; t->args[i].name; i++)
		if (t->args[i].required && !out->set[i])
			return buf_printf(msg, "'%s' needs the argument '%s'", t->name,
					  t->args[i].name),
			       -EINVAL;
	return 0;
}

static json_t *tool_error(const char *text)
{
	return json_pack("{s:[o], s:b}", "content", text_block(text, strlen(text)), "isError", 1);
}

json_t *mcp_catalog_call(struct mcp_tools *mt, const char *name, json_t *arguments, bool structured,
			 int *ret_code, struct buf *msg)
{
	const struct tool *t = NULL;
	json_t *res = NULL, *out;
	struct args a;
	size_t size;
	int k;

	for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
		if (!strcmp(tools[i].name, name))
			t = &tools[i];
	if (!t && engine_tool_find(name))
		return engine_call(mt, name, arguments, structured, msg);
	if (!t) {
		*ret_code = MCP_INVALID_PARAMS;
		(void)buf_printf(msg, "unknown tool '%.100s': the tools are", name);
		for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
			(void)buf_printf(msg, "%s %s", i ? "," : "", tools[i].name);
		return NULL;
	}
	if (check_args(t, arguments, &a, msg) < 0) {
		*ret_code = MCP_INVALID_PARAMS;
		return NULL;
	}
	k = t->call(mt, &a, &res, msg);
	if (strcmp(t->name, "run_code") != 0) {
		const char *sid = json_string_value(json_object_get(res, "session_id"));

		if (!sid && a.set[0] && !strcmp(t->args[0].name, "session_id"))
			sid = a.s[0];
		mcp_tools_audit(mt, t->name, sid, k >= 0);
	}
	if (k < 0)
		return tool_error(msg->len ? buf_str(msg) : "the tool failed");
	out = json_pack("{s:o, s:b}", "content", t->content(res, &a), "isError", t->is_error(res));
	if (structured)
		json_object_set(out, "structuredContent", res);
	json_decref(res);
	/* a reply the client could not take: say so, as a result the model reads */
	size = json_dumpb(out, NULL, 0, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (size > MCP_REPLY_MAX - 4096) {
		char text[256];

		json_decref(out);
		snprintf(text, sizeof(text),
			 "the result is too large to send (%zu bytes of JSON, the limit is %u): "
			 "print less, or write the output to a file and read parts of it",
			 size, MCP_REPLY_MAX);
		return tool_error(text);
	}
	return out;
}
