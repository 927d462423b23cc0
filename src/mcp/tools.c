/* The adapter: every call the MCP door makes into the engine and the
 * session library is in this file (DESIGN.md wants doors to go through
 * the engine only; the engine has no session lifecycle yet, so a later
 * change points these functions at it).
 *
 * Sessions live in a small table keyed by random ids.  The warm pool is
 * made by a thread of its own at start, so `initialize` is answered at
 * once; the first tool that needs a session waits for it.
 *
 * Workspace files are the engine's (engine/files.h: every path resolved
 * beneath the workspace, changes made as its owner, a write renamed
 * over its target); this file translates the tools to them. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/audit.h"
#include "engine/engine.h"
#include "engine/files.h"
#include "engine/policy.h"
#include "engine/tool.h"
#include "mcp/internal.h"
#include "session/session.h"
#include "session/workspace.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"


struct entry {
	char id[MCP_ID_LEN + 1];
	struct session *s;
	const char *language; /* static */
	bool holds_slot; /* the policy's session slot, given back at close */
	uint64_t executions;
	uint64_t last_used_ns;
};

struct mcp_tools {
	struct mcp_config cfg;
	struct engine_verdict verdict; /* the last call's (calls come one at a time) */
	char *preload; /* owned copy of cfg.preload */
	struct entry *sessions;
	unsigned n;
	/* the warm pool, made by pool_thread */
	pthread_t pool_thread;
	bool pool_started, pool_joined;
	struct session_pool *pool;
	int pool_err;
	char *pool_msg;
};

static void log_msg(const struct mcp_tools *t, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void log_msg(const struct mcp_tools *t, const char *level, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	if (!t->cfg.log)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	t->cfg.log(level, text);
}

static void base_opts(const struct mcp_tools *t, struct session_opts *so)
{
	session_opts_init(so);
	so->limits = t->cfg.limits;
	so->output_limit = t->cfg.output_limit;
	so->net = t->cfg.net;
	so->strict = t->cfg.strict;
	so->env = t->cfg.env;
	so->preload = t->preload;
	so->idle_timeout_s = t->cfg.idle_timeout_s;
}

static void *pool_main(void *arg)
{
	struct mcp_tools *t = arg;
	struct session_opts so;

	base_opts(t, &so);
	t->pool_err = session_pool_new(&so, t->cfg.pool_size, &t->pool, &t->pool_msg);
	return NULL;
}

/* The pool, once it is made; NULL when there is none. */
static struct session_pool *pool_wait(struct mcp_tools *t)
{
	if (t->pool_started && !t->pool_joined) {
		pthread_join(t->pool_thread, NULL);
		t->pool_joined = true;
		if (t->pool_err < 0) {
			log_msg(t, "warning", "--pool %u: no warm pool (%s); sessions start cold",
				t->cfg.pool_size, t->pool_msg ? t->pool_msg : strerror(-t->pool_err));
			t->pool = NULL;
		}
	}
	return t->pool;
}

int mcp_tools_new(const struct mcp_config *cfg, struct mcp_tools **ret, char **ret_error)
{
	struct mcp_tools *t = calloc(1, sizeof(*t));

	if (!t || !(t->sessions = calloc(cfg->max_sessions ? cfg->max_sessions : 1, sizeof(*t->sessions)))) {
		free(t);
		if (ret_error)
			*ret_error = strdup("out of memory");
		return -ENOMEM;
	}
	t->cfg = *cfg;
	t->preload = cfg->preload && *cfg->preload ? strdup(cfg->preload) : NULL;
	if (cfg->pool_size) {
		int r = pthread_create(&t->pool_thread, NULL, pool_main, t);

		t->pool_started = r == 0;
		if (r != 0)
			log_msg(t, "warning", "--pool: cannot start the pool's thread: %s", strerror(r));
	}
	*ret = t;
	return 0;
}

void mcp_tools_begin(struct mcp_tools *t)
{
	memset(&t->verdict, 0, sizeof(t->verdict));
	t->verdict.allowed = true;
}

/* The client an audit record names: the policy's client this core
 * serves (on the server, the key's), or "mcp" without a policy. */
static const char *audit_client(const struct mcp_tools *t)
{
	return t->cfg.client ? t->cfg.client->name : "mcp";
}

void mcp_tools_audit(struct mcp_tools *t, const char *tool, const char *session, bool ok)
{
	static const struct {
		const char *name;
		enum engine_action action;
	} map[] = {
		{ "create_session", ACTION_SESSION_CREATE }, { "close_session", ACTION_SESSION_CLOSE },
		{ "list_files", ACTION_READ_FILE },	     { "read_file", ACTION_READ_FILE },
		{ "write_file", ACTION_WRITE_FILE },
	};
	struct engine_audit_record rec = { .client = audit_client(t), .door = DOOR_MCP, .session = session,
					   .verdict = &t->verdict, .status = ok ? "ok" : "error" };
	size_t i;

	if (!t->cfg.audit)
		return;
	for (i = 0; i < ARRAY_SIZE(map) && strcmp(map[i].name, tool); i++)
		;
	if (i == ARRAY_SIZE(map))
		return; /* list_sessions: nothing to record */
	rec.action = map[i].action;
	if (engine_audit_write(t->cfg.audit, &rec) < 0)
		log_msg(t, "warning", "cannot append to the audit log");
}

static void remove_at(struct mcp_tools *t, unsigned i)
{
	session_free(t->sessions[i].s);
	if (t->sessions[i].holds_slot)
		engine_release(t->cfg.client, ACTION_SESSION_CREATE);
	t->sessions[i] = t->sessions[--t->n];
	memset(&t->sessions[t->n], 0, sizeof(t->sessions[t->n]));
}

void mcp_tools_free(struct mcp_tools *t)
{
	if (!t)
		return;
	while (t->n)
		remove_at(t, t->n - 1);
	pool_wait(t);
	session_pool_free(t->pool);
	free(t->pool_msg);
	free(t->preload);
	free(t->sessions);
	free(t);
}

unsigned mcp_tools_count(const struct mcp_tools *t)
{
	return t->n;
}

void mcp_tools_expire(struct mcp_tools *t)
{
	for (unsigned i = t->n; i-- > 0;)
		if (session_expired(t->sessions[i].s)) {
			log_msg(t, "info", "session '%s' expired after %g s without use (--idle-timeout)",
				t->sessions[i].id, t->cfg.idle_timeout_s);
			remove_at(t, i);
		}
}

static struct entry *find(struct mcp_tools *t, const char *id, struct buf *msg)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->sessions[i].id, id))
			return &t->sessions[i];
	(void)buf_printf(msg, "no session '%s': it was closed, expired after being idle, or never "
			 "existed; create_session makes a new one (list_sessions shows those open)", id);
	return NULL;
}

/* ---- runs ---- */

static int run_oneshot(struct mcp_tools *t, const struct mcp_run_args *a, struct run_result *res,
		       struct buf *msg)
{
	struct run_request rq;
	int k;

	run_request_init(&rq);
	if (a->language && engine_lang_parse(a->language, &rq.lang) < 0)
		return buf_printf(msg, "unknown language '%s'", a->language), -EINVAL;
	rq.code = a->code;
	rq.code_len = a->code_len;
	rq.filename = "<code>";
	rq.limits = t->cfg.limits;
	if (a->timeout_s > 0)
		rq.limits.timeout_s = a->timeout_s;
	rq.output_limit = t->cfg.output_limit;
	rq.net = t->cfg.net;
	rq.strict = t->cfg.strict;
	rq.env = t->cfg.env;
	rq.stop_fd = t->cfg.stop_fd;
	rq.has_seed = a->has_seed;
	rq.seed = a->seed;
	/* the engine's policy check: a rejection is a result */
	if (t->cfg.client && engine_check_run(t->cfg.client, DOOR_MCP, &rq,
					      t->cfg.limits_asked | (a->timeout_s > 0 ? 1u << LIMIT_TIMEOUT : 0),
					      t->cfg.net_asked, &t->verdict) < 0) {
		engine_verdict_result(&t->verdict, res);
		return 0;
	}
	k = engine_run(&rq, res);
	if (t->cfg.client)
		engine_release(t->cfg.client, ACTION_RUN);
	if (k < 0)
		return buf_printf(msg, "cannot run the code: %s", strerror(-k)), k;
	return 0;
}

static int run_in_session(struct entry *e, struct mcp_tools *t, const struct mcp_run_args *a,
			  struct run_result *res, struct buf *msg)
{
	struct session_exec_opts eo = { .timeout_s = a->timeout_s, .live_stdout = -1,
					 .live_stderr = -1, .stop_fd = t->cfg.stop_fd, .hangup_fd = -1 };
	int k;

	if (a->has_seed)
		return buf_puts(msg, "seed goes with one-shot runs (no session_id): a session's "
			       "random state is its own from one call to the next"), -EINVAL;
	if (a->language && strcmp(a->language, e->language) != 0)
		return buf_printf(msg, "session '%s' runs %s, not %s: leave out language, or create a %s session",
				  e->id, e->language, a->language, a->language), -EINVAL;
	if (t->cfg.client) {
		enum engine_lang l = LANG_PYTHON;
		enum session_lang sl = SESSION_PYTHON;

		(void)engine_lang_parse(e->language, &l);
		(void)engine_lang_session(l, &sl);
		if (engine_check_exec(t->cfg.client, DOOR_MCP, sl, a->timeout_s, &t->verdict) < 0) {
			engine_verdict_result(&t->verdict, res);
			return 0;
		}
	}
	k = engine_session_exec(e->s, a->code, a->code_len, &eo, res);
	if (t->cfg.client)
		engine_release(t->cfg.client, ACTION_SESSION_EXEC);
	e->last_used_ns = now_ns();
	if (k < 0)
		return buf_printf(msg, "the session '%s' cannot go on (%s): close it and create a new one",
				  e->id, strerror(-k)), k;
	e->executions++;
	return 0;
}

int mcp_tools_run(struct mcp_tools *t, const struct mcp_run_args *a, json_t **ret,
		  struct buf *msg)
{
	struct run_result res;
	struct entry *e = NULL;
	uint64_t t0 = now_ns();
	int r;

	memset(&res, 0, sizeof(res));
	memset(&t->verdict, 0, sizeof(t->verdict));
	t->verdict.allowed = true;
	if (a->session_id && !(e = find(t, a->session_id, msg)))
		return -ENOENT;
	r = e ? run_in_session(e, t, a, &res, msg) : run_oneshot(t, a, &res, msg);
	if (r < 0)
		return r;
	if (t->cfg.audit) {
		struct engine_audit_record rec = {
			.client = audit_client(t), .session = e ? e->id : NULL, .door = DOOR_MCP,
			.action = e ? ACTION_SESSION_EXEC : ACTION_RUN, .has_lang = true,
			.code = a->code, .code_len = a->code_len, .verdict = &t->verdict,
			.duration_ms = (double)(now_ns() - t0) / 1e6, .res = &res,
		};
		json_t *args = json_pack("{s:f}", "timeout", a->timeout_s);

		rec.args = args;
		(void)engine_lang_parse(e ? e->language : a->language ? a->language : "python",
					&rec.lang);
		if (engine_audit_write(t->cfg.audit, &rec) < 0)
			log_msg(t, "warning", "cannot append to the audit log");
		json_decref(args);
	}
	*ret = run_result_to_json(&res);
	if (e)
		json_object_set_new(*ret, "session_id", json_string(e->id));
	run_result_release(&res);
	return 0;
}

/* ---- sessions ---- */

static void new_id(char *id)
{
	unsigned char rnd[MCP_ID_LEN / 2];
	static const char hex[] = "0123456789abcdef";

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		abort(); /* the kernel's CSPRNG cannot fail once seeded */
	for (size_t i = 0; i < sizeof(rnd); i++) {
		id[2 * i] = hex[rnd[i] >> 4];
		id[2 * i + 1] = hex[rnd[i] & 15];
	}
	id[MCP_ID_LEN] = '\0';
}

/* The engine's language table: sessions are those with a session kind. */
static int parse_session_lang(const char *name, enum session_lang *ret, const char **ret_name)
{
	enum engine_lang l;

	if (engine_lang_parse(name ? name : "python", &l) < 0 || engine_lang_session(l, ret) < 0)
		return -EINVAL;
	*ret_name = engine_lang_name(l);
	return 0;
}

static json_t *session_json(const struct entry *e, const char *preload)
{
	return json_pack("{s:s, s:s, s:b, s:o, s:s, s:s}", "session_id", e->id, "language",
			 e->language, "pooled", session_pooled(e->s), "preload",
			 preload ? json_string(preload) : json_null(), "preloaded",
			 session_preloaded(e->s), "preload_failed", session_preload_failed(e->s));
}

int mcp_tools_create_session(struct mcp_tools *t, const char *language, const char *preload,
			     json_t **ret, struct buf *msg)
{
	struct session_opts so;
	struct entry e = { .executions = 0 };
	enum session_lang lang;
	char why[256];
	char *err = NULL;
	int r;

	if (parse_session_lang(language, &lang, &e.language) < 0)
		return buf_printf(msg, "sessions are python, javascript or bash, not '%s'", language), -EINVAL;
	if (preload && engine_preload_check(preload, why, sizeof(why)) < 0)
		return buf_puts(msg, why), -EINVAL;
	if (preload && *preload && lang != SESSION_PYTHON)
		return buf_puts(msg, "preload is for Python sessions"), -EINVAL;
	if (t->n >= t->cfg.max_sessions)
		return buf_printf(msg, "too many sessions: %u are open (--max-sessions): close_session one "
				  "you no longer need", t->n), -EBUSY;
	base_opts(t, &so);
	so.lang = lang;
	if (preload)
		so.preload = *preload ? preload : NULL;
	else if (lang != SESSION_PYTHON)
		so.preload = NULL;
	if (t->cfg.client) {
		if (engine_check_session(t->cfg.client, DOOR_MCP, &so, t->cfg.limits_asked,
					 t->cfg.net_asked, &t->verdict) < 0)
			return buf_puts(msg, t->verdict.message), -EPERM;
		e.holds_slot = true;
	}
	so.pool = pool_wait(t);
	r = session_new(&so, &e.s, &err);
	if (r < 0) {
		(void)buf_printf(msg, "cannot start the session: %s", err ? err : strerror(-r));
		free(err);
		if (e.holds_slot)
			engine_release(t->cfg.client, ACTION_SESSION_CREATE);
		return r;
	}
	new_id(e.id);
	e.last_used_ns = now_ns();
	t->sessions[t->n++] = e;
	*ret = session_json(&e, so.preload);
	return 0;
}

int mcp_tools_close_session(struct mcp_tools *t, const char *id, json_t **ret, struct buf *msg)
{
	struct entry *e = find(t, id, msg);

	if (!e)
		return -ENOENT;
	*ret = json_pack("{s:s, s:b}", "session_id", e->id, "closed", 1);
	remove_at(t, (unsigned)(e - t->sessions));
	return 0;
}

int mcp_tools_list_sessions(struct mcp_tools *t, json_t **ret, struct buf *msg)
{
	json_t *list = json_array();
	uint64_t now = now_ns();

	(void)msg;
	for (unsigned i = 0; i < t->n; i++) {
		const struct entry *e = &t->sessions[i];

		json_array_append_new(list, json_pack("{s:s, s:s, s:I, s:f}", "session_id", e->id,
						      "language", e->language, "executions",
						      (json_int_t)e->executions, "idle_s",
						      (double)(now - e->last_used_ns) / 1e9));
	}
	*ret = json_pack("{s:o, s:i, s:i}", "sessions", list, "count", (int)t->n, "max_sessions",
			 (int)t->cfg.max_sessions);
	return 0;
}

/* ---- workspace files ---- */

/* What a failed file operation says (the engine's table), with what
 * to do here. */
static int fs_fail(struct buf *msg, int err, const char *what, const char *path)
{
	struct engine_files_error fe;

	if (err == -E2BIG || err == -EFBIG)
		return buf_printf(msg, "'%s' is over the 16 MiB limit of %s", path, what), err;
	engine_files_error(err, what, path, &fe);
	buf_puts(msg, fe.message);
	if (err == -ENOENT)
		buf_puts(msg, " (list_files shows what is there)");
	else if (err == -ENOSPC || err == -EDQUOT)
		buf_puts(msg, ", or start codecell mcp with a larger --workspace-size");
	return err;
}

/* A path as the model may write it: relative to the workspace, or
 * absolute under the workspace's path inside the sandbox. */
static const char *rel_path(const char *path)
{
	size_t n = strlen(SANDBOX_HOME);

	if (!strncmp(path, SANDBOX_HOME, n) && (path[n] == '/' || !path[n]))
		path += n + (path[n] == '/');
	return *path ? path : ".";
}

/* The session's workspace. */
static int workspace(struct mcp_tools *t, const char *id, struct entry **ret_e, struct engine_ws *w,
		     struct buf *msg)
{
	struct entry *e = find(t, id, msg);
	int r;

	if (!e)
		return -ENOENT;
	r = engine_ws_of_session(e->s, w);
	if (r < 0)
		return buf_printf(msg, "session '%s' has no workspace now (its kernel is not running): run code in it first", id), r;
	*ret_e = e;
	return 0;
}

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" : "other";
}

static int list_entry(void *arg, int dir, const char *name, const char *rel, const struct stat *st)
{
	(void)dir;
	(void)rel;
	return json_array_append_new(arg, json_pack("{s:s, s:s, s:I}", "name", name, "type",
						    type_name(st->st_mode), "size",
						    (json_int_t)st->st_size)) < 0 ? -ENOMEM : 0;
}

int mcp_tools_list_files(struct mcp_tools *t, const char *id, const char *path, json_t **ret,
			 struct buf *msg)
{
	struct engine_files_listing l = { .depth = 1, .uploads = true };
	struct engine_ws w;
	struct entry *e;
	json_t *entries;
	int r = workspace(t, id, &e, &w, msg);

	if (r < 0)
		return r;
	path = rel_path(path);
	entries = json_array();
	r = engine_files_list(&w, path, &l, list_entry, entries);
	if (r < 0) {
		json_decref(entries);
		return fs_fail(msg, r, "list", path);
	}
	*ret = json_pack("{s:s, s:s, s:o, s:b}", "session_id", e->id, "path", path, "entries", entries,
			 "truncated", l.truncated);
	return 0;
}

int mcp_tools_read_file(struct mcp_tools *t, const char *id, const char *path, struct buf *data,
			json_t **ret, struct buf *msg)
{
	struct engine_ws w;
	struct entry *e;
	struct stat st;
	_cleanup_close_ int fd = -1;
	int r = workspace(t, id, &e, &w, msg);

	if (r < 0)
		return r;
	path = rel_path(path);
	fd = engine_files_open(&w, path, &st);
	if (fd < 0)
		return fs_fail(msg, fd, "read", path);
	if (S_ISDIR(st.st_mode))
		return buf_printf(msg, "'%s' is a directory: list_files lists it", path), -EISDIR;
	if ((uint64_t)st.st_size > MCP_FILE_MAX)
		return buf_printf(msg, "'%s' is %lld bytes, over the 16 MiB limit of read_file: read parts "
				  "of it with run_code", path, (long long)st.st_size), -EFBIG;
	r = buf_read_fd(data, fd);
	if (r < 0)
		return fs_fail(msg, r, "read", path);
	*ret = json_pack("{s:s, s:s, s:I}", "session_id", e->id, "path", path, "size",
			 (json_int_t)data->len);
	return 0;
}

int mcp_tools_write_file(struct mcp_tools *t, const char *id, const char *path, const char *data,
			 size_t len, json_t **ret, struct buf *msg)
{
	struct engine_ws w;
	struct entry *e;
	bool replaced = false;
	int r = workspace(t, id, &e, &w, msg);

	if (r < 0)
		return r;
	if (len > MCP_FILE_MAX)
		return fs_fail(msg, -EFBIG, "write_file", path);
	if (t->cfg.client &&
	    engine_check_file(t->cfg.client, DOOR_MCP, ACTION_WRITE_FILE, len, &t->verdict) < 0)
		return buf_puts(msg, t->verdict.message), -EPERM;
	path = rel_path(path);
	if (path[0] == '/')
		return fs_fail(msg, -EXDEV, "write", path);
	r = engine_files_write(&w, path, data, len, &replaced);
	if (r < 0)
		return fs_fail(msg, r, "write", path);
	*ret = json_pack("{s:s, s:s, s:I, s:b}", "session_id", e->id, "path", path, "size",
			 (json_int_t)len, "replaced", replaced);
	return 0;
}

/* ---- the tools besides code (engine/tool.h) ---- */

json_t *mcp_tools_engine_list(struct mcp_tools *t)
{
	json_t *list = json_array(), *all, *x;
	size_t i;

	if (!t->cfg.client)
		return list;
	all = engine_tools_json(t->cfg.client->policy);
	json_array_foreach(all, i, x) {
		json_t *a = json_object_get(x, "annotations");

		json_array_append_new(
			list, json_pack("{s:O, s:O, s:O, s:O, s:{s:O, s:O, s:O, s:O, s:O}}", "name",
					json_object_get(x, "name"), "title", json_object_get(x, "title"),
					"description", json_object_get(x, "description"), "inputSchema",
					json_object_get(x, "input_schema"), "annotations", "title",
					json_object_get(x, "title"), "readOnlyHint",
					json_object_get(a, "read_only"), "destructiveHint",
					json_object_get(a, "destructive"), "idempotentHint",
					json_object_get(a, "idempotent"), "openWorldHint",
					json_object_get(a, "open_world")));
	}
	json_decref(all);
	return list;
}

int mcp_tools_engine_call(struct mcp_tools *t, const char *name, json_t *args, json_t **ret,
			  struct buf *msg)
{
	const char *sid = json_string_value(json_object_get(args, "session_id"));
	struct engine_tool_ctx ctx;
	struct engine_tool_request rq = { .name = name, .args = args, .audit = t->cfg.audit,
					  .session = sid };
	char m[TOOL_MSG_MAX];
	int http, k;

	engine_tool_ctx_init(&ctx, DOOR_MCP);
	ctx.client = t->cfg.client;
	ctx.policies = t->cfg.policies;
	ctx.stop_flag = t->cfg.stop_flag;
	if (sid) {
		struct entry *e = find(t, sid, msg);

		if (!e)
			return -ENOENT;
		ctx.workspace_fd = session_workspace_fd(e->s);
		if (ctx.workspace_fd < 0)
			return buf_printf(msg, "session '%s' has no workspace now (its kernel is not "
					  "running): run code in it first", sid), -ENOENT;
	}
	k = engine_tool_call(&ctx, &rq, ret, &http, m, sizeof(m));
	if (k < 0)
		(void)buf_puts(msg, m);
	return k;
}
