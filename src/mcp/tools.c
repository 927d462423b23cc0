/* The adapter: every call the MCP door makes into the engine is in this
 * file.
 *
 * Sessions are the engine's (engine/sessions.h): a registry of this
 * core's own (`codecell mcp`, its ids 16 hex digits), or the server's
 * (/mcp: cfg.sessions, shared with every door, so that one cap, one
 * listing and one reaper cover them all; this core sees only the
 * sessions its client made through MCP).  Create and close go through
 * the engine's pipeline (policy, audit record).  Another door or the
 * server's reaper may end a session of the shared registry at any time,
 * so a session found is held by a reference of ours until the call
 * ends, and its workspace is used under its lock.  The warm pool is
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/audit.h"
#include "engine/call.h"
#include "engine/engine.h"
#include "engine/files.h"
#include "engine/policy.h"
#include "engine/setup.h"
#include "engine/sessions.h"
#include "engine/tool.h"
#include "mcp/internal.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"


/* What the calls share: made once, by mcp_tools_new.  Calls of one core
 * may run at once (/mcp serves a client's requests side by side), so
 * what a call changes is in its own struct mcp_tools (internal.h), and
 * the pool, made by a thread, is waited for under pool_lock. */
struct mcp_tools_shared {
	struct mcp_config cfg;
	char *preload;		     /* owned copy of cfg.preload */
	struct engine_sessions own;  /* without cfg.sessions */
	struct engine_sessions *reg; /* &own, or cfg.sessions */
	/* the warm pool, made by pool_thread */
	pthread_mutex_t pool_lock;
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
	t->cfg.log(t->cfg.log_cls, level, text);
}

static void base_opts(const struct mcp_tools *t, struct session_opts *so)
{
	engine_session_opts_init(so);
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
	struct mcp_tools_shared *sh = arg;
	struct mcp_tools t;
	struct session_opts so;

	mcp_tools_begin(sh, &t);
	base_opts(&t, &so);
	sh->pool_err = engine_pool_new(&so, sh->cfg.pool_size, &sh->pool, &sh->pool_msg);
	return NULL;
}

/* The pool, once it is made; NULL when there is none.  The first call
 * that needs it joins the thread; the others wait for that one. */
static struct session_pool *pool_wait(struct mcp_tools *t)
{
	struct mcp_tools_shared *sh = t->sh;
	struct session_pool *pool;

	pthread_mutex_lock(&sh->pool_lock);
	if (sh->pool_started && !sh->pool_joined) {
		pthread_join(sh->pool_thread, NULL);
		sh->pool_joined = true;
		if (sh->pool_err < 0) {
			log_msg(t, "warning", "--pool %u: no warm pool (%s); sessions start cold",
				sh->cfg.pool_size,
				sh->pool_msg ? sh->pool_msg : strerror(-sh->pool_err));
			sh->pool = NULL;
		}
	}
	pool = sh->pool;
	pthread_mutex_unlock(&sh->pool_lock);
	return pool;
}

int mcp_tools_new(const struct mcp_config *cfg, struct mcp_tools_shared **ret, char **ret_error)
{
	struct mcp_tools_shared *sh = calloc(1, sizeof(*sh));
	struct mcp_tools t;

	if (!sh ||
	    (!cfg->sessions &&
	     engine_sessions_init(&sh->own, cfg->max_sessions ? cfg->max_sessions : 1) < 0)) {
		free(sh);
		if (ret_error)
			*ret_error = strdup("out of memory");
		return -ENOMEM;
	}
	sh->own.id_len = MCP_ID_LEN;
	sh->reg = cfg->sessions ? cfg->sessions : &sh->own;
	sh->cfg = *cfg;
	sh->preload = cfg->preload && *cfg->preload ? strdup(cfg->preload) : NULL;
	pthread_mutex_init(&sh->pool_lock, NULL);
	if (cfg->pool_size) {
		int r = pthread_create(&sh->pool_thread, NULL, pool_main, sh);

		sh->pool_started = r == 0;
		mcp_tools_begin(sh, &t);
		if (r != 0)
			log_msg(&t, "warning", "--pool: cannot start the pool's thread: %s",
				strerror(r));
	}
	*ret = sh;
	return 0;
}

void mcp_tools_begin(struct mcp_tools_shared *sh, struct mcp_tools *t)
{
	memset(t, 0, sizeof(*t));
	t->sh = sh;
	t->cfg = sh->cfg;
	t->preload = sh->preload;
	t->reg = sh->reg;
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
		{ "create_session", ACTION_SESSION_CREATE },
		{ "close_session", ACTION_SESSION_CLOSE },
		{ "list_files", ACTION_READ_FILE },
		{ "read_file", ACTION_READ_FILE },
		{ "write_file", ACTION_WRITE_FILE },
	};
	struct engine_audit_record rec = { .client = audit_client(t),
					   .door = DOOR_MCP,
					   .session = session,
					   .verdict = &t->verdict,
					   .status = ok ? "ok" : "error" };
	size_t i;

	if (!t->cfg.audit || t->recorded)
		return;
	for (i = 0; i < ARRAY_SIZE(map) && strcmp(map[i].name, tool); i++)
		;
	if (i == ARRAY_SIZE(map))
		return; /* list_sessions: nothing to record */
	rec.action = map[i].action;
	if (engine_audit_write(t->cfg.audit, &rec) < 0)
		log_msg(t, "warning", "cannot append to the audit log");
}

/* The engine's caller for this core's calls. */
static void caller(const struct mcp_tools *t, struct engine_caller *cl)
{
	memset(cl, 0, sizeof(*cl));
	cl->client = t->cfg.client;
	cl->name = audit_client(t);
	cl->door = DOOR_MCP;
	cl->audit = t->cfg.audit;
}

void mcp_tools_free(struct mcp_tools_shared *sh)
{
	struct mcp_tools t;

	if (!sh)
		return;
	mcp_tools_begin(sh, &t);
	/* the server's table is the server's to close */
	if (sh->reg == &sh->own) {
		engine_sessions_close_all(&sh->own);
		engine_sessions_release(&sh->own);
	}
	pool_wait(&t);
	engine_pool_free(sh->pool);
	pthread_mutex_destroy(&sh->pool_lock);
	free(sh->pool_msg);
	free(sh->preload);
	free(sh);
}

/* Whether e is this core's: in a table of its own, all are; in the
 * server's, those its client made through MCP (e->client is cleared as
 * the session leaves the table). */
static bool mine(const struct mcp_tools *t, const struct engine_session *e)
{
	if (t->reg == &t->sh->own)
		return true;
	return e->door && !strcmp(e->door, engine_door_name(DOOR_MCP)) &&
	       __atomic_load_n(&e->client, __ATOMIC_ACQUIRE) == t->cfg.client;
}

/* This core's sessions, each with a reference: *ret (free()), *ret_n. */
static int my_sessions(struct mcp_tools *t, struct engine_session ***ret, unsigned *ret_n)
{
	struct engine_session **all = NULL;
	unsigned n = 0, k = 0;

	if (engine_sessions_list(t->reg, &all, &n) < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		if (mine(t, all[i]))
			all[k++] = all[i];
		else
			engine_session_unref(all[i]);
	}
	*ret = all;
	*ret_n = k;
	return 0;
}

static void unref_all(struct engine_session **list, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		engine_session_unref(list[i]);
	free(list);
}

unsigned mcp_tools_count(struct mcp_tools_shared *sh)
{
	struct engine_session **list;
	struct mcp_tools t;
	unsigned n;

	mcp_tools_begin(sh, &t);
	if (my_sessions(&t, &list, &n) < 0)
		return 0;
	unref_all(list, n);
	return n;
}

static void on_expired(void *cls, const struct engine_session *e)
{
	struct mcp_tools *t = cls;

	log_msg(t, "info", "session '%s' expired after %g s without use (--idle-timeout)", e->id,
		t->cfg.idle_timeout_s);
}

void mcp_tools_expire(struct mcp_tools *t)
{
	/* the server's reaper ends the sessions of its table */
	if (t->reg == &t->sh->own)
		(void)engine_sessions_reap(&t->sh->own, on_expired, t);
}

/* The session of that id with a new reference (engine_session_unref()
 * it), if it is this core's (another client's or door's is as unknown). */
static struct engine_session *find(struct mcp_tools *t, const char *id, struct buf *msg)
{
	struct engine_session *e = engine_sessions_get(t->reg, id);

	if (e && mine(t, e))
		return e;
	engine_session_unref(e);
	(void)buf_printf(msg,
			 "no session '%s': it was closed, expired after being idle, or never "
			 "existed; create_session makes a new one (list_sessions shows those open)",
			 id);
	return NULL;
}

static const char *lang_name(const struct engine_session *e)
{
	return engine_lang_name(engine_lang_of_session(e->lang));
}

/* ---- runs ---- */

static int run_oneshot(struct mcp_tools *t, const struct mcp_run_args *a, struct run_result *res,
		       struct buf *msg)
{
	struct engine_session_error err;
	struct engine_caller cl;
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
	/* the engine's pipeline: the policy (a rejection is a result), the
	 * run, the record */
	caller(t, &cl);
	k = engine_call_run(&cl, &rq,
			    t->cfg.limits_asked | (a->timeout_s > 0 ? 1u << LIMIT_TIMEOUT : 0),
			    t->cfg.net_asked, NULL, NULL, res, &err);
	if (cl.audit_err < 0)
		log_msg(t, "warning", "cannot append to the audit log");
	t->verdict = err.verdict;
	if (!t->cfg.client)
		t->verdict.allowed = true;
	if (k < 0)
		return buf_puts(msg, err.message), k;
	return 0;
}

static int run_in_session(struct engine_session *e, struct mcp_tools *t,
			  const struct mcp_run_args *a, struct run_result *res, struct buf *msg)
{
	struct session_exec_opts eo = { .timeout_s = a->timeout_s,
					.live_stdout = -1,
					.live_stderr = -1,
					.stop_fd = t->cfg.stop_fd,
					.hangup_fd = -1 };
	struct engine_session_error err;
	struct engine_caller cl;
	json_t *args;
	int k;

	if (a->has_seed)
		return buf_puts(msg, "seed goes with one-shot runs (no session_id): a session's "
				     "random state is its own from one call to the next"),
		       -EINVAL;
	if (a->language && strcmp(a->language, lang_name(e)) != 0)
		return buf_printf(
			       msg,
			       "session '%s' runs %s, not %s: leave out language, or create a %s session",
			       e->id, lang_name(e), a->language, a->language),
		       -EINVAL;
	/* the engine's pipeline: the policy, the cell, the record */
	caller(t, &cl);
	args = json_pack("{s:f}", "timeout", a->timeout_s);
	k = engine_session_run(&cl, e, a->code, a->code_len, &eo, args, res, &err);
	json_decref(args);
	if (cl.audit_err < 0)
		log_msg(t, "warning", "cannot append to the audit log");
	t->verdict = err.verdict;
	if (!t->cfg.client)
		t->verdict.allowed = true;
	if (k < 0)
		return buf_puts(msg, err.message), k;
	return 0;
}

int mcp_tools_run(struct mcp_tools *t, const struct mcp_run_args *a, json_t **ret, struct buf *msg)
{
	struct run_result res;
	struct engine_session *e = NULL;
	int r;

	memset(&res, 0, sizeof(res));
	memset(&t->verdict, 0, sizeof(t->verdict));
	t->verdict.allowed = true;
	if (a->session_id && !(e = find(t, a->session_id, msg)))
		return -ENOENT;
	r = e ? run_in_session(e, t, a, &res, msg) : run_oneshot(t, a, &res, msg);
	if (r < 0) {
		engine_session_unref(e);
		return r;
	}
	*ret = run_result_to_json(&res);
	if (e)
		json_object_set_new(*ret, "session_id", json_string(e->id));
	engine_session_unref(e);
	run_result_release(&res);
	return 0;
}

/* ---- sessions ---- */

/* The engine's language table: sessions are those with a session kind. */
static int parse_session_lang(const char *name, enum session_lang *ret, const char **ret_name)
{
	enum engine_lang l;

	if (engine_lang_parse(name ? name : "python", &l) < 0 || engine_lang_session(l, ret) < 0)
		return -EINVAL;
	*ret_name = engine_lang_name(l);
	return 0;
}

/* Under e->lock: what the kernel imported is the entry's note of it
 * (engine_session_note_preload, under e->info). */
static json_t *session_json(struct engine_session *e)
{
	json_t *j;

	if (!e->s)
		return json_pack("{s:s, s:s, s:b, s:n, s:s, s:s, s:n}", "session_id", e->id,
				 "language", lang_name(e), "pooled", e->pooled, "preload",
				 "preloaded", "", "preload_failed", "", "project");
	pthread_mutex_lock(&e->info);
	j = json_pack("{s:s, s:s, s:b, s:o, s:s, s:s, s:o}", "session_id", e->id, "language",
		      lang_name(e), "pooled", e->pooled, "preload",
		      e->preload ? json_string(e->preload) : json_null(), "preloaded",
		      e->preloaded ? e->preloaded : "", "preload_failed",
		      e->preload_failed ? e->preload_failed : "", "project",
		      e->project ? json_string(e->project) : json_null());
	pthread_mutex_unlock(&e->info);
	return j;
}

int mcp_tools_create_session(struct mcp_tools *t, const char *language, const char *preload,
			     const char *project, json_t **ret, struct buf *msg)
{
	struct engine_session_spec spec = { .asked = t->cfg.limits_asked,
					    .net_asked = t->cfg.net_asked };
	struct engine_session_error err;
	struct engine_session *e;
	struct engine_caller cl;
	enum session_lang lang;
	const char *name;
	char why[256];
	int r;

	if (parse_session_lang(language, &lang, &name) < 0)
		return buf_printf(msg, "sessions are python, javascript or bash, not '%s'",
				  language),
		       -EINVAL;
	if (preload && engine_preload_check(preload, why, sizeof(why)) < 0)
		return buf_puts(msg, why), -EINVAL;
	if (preload && *preload && lang != SESSION_PYTHON)
		return buf_puts(msg, "preload is for Python sessions"), -EINVAL;
	if (t->reg == &t->sh->own && !t->cfg.max_sessions)
		return buf_puts(msg, "too many sessions: 0 are open (--max-sessions 0)"), -EBUSY;
	base_opts(t, &spec.so);
	spec.so.lang = lang;
	if (preload)
		spec.so.preload = *preload ? preload : NULL;
	else if (lang != SESSION_PYTHON)
		spec.so.preload = NULL;
	spec.so.pool = pool_wait(t);
	/* a project: under the policy's `projects`, as POST /v1/sessions */
	if (project && !t->cfg.client)
		return buf_puts(msg, "project needs a policy with 'projects' (--policy)"), -EPERM;
	spec.project = project;
	caller(t, &cl);
	r = engine_session_new(t->reg, &cl, &spec, &e, &err);
	t->recorded = r != -EBUSY;
	if (cl.audit_err < 0)
		log_msg(t, "warning", "cannot append to the audit log");
	if (r == -EPERM)
		t->verdict = err.verdict;
	if (r == -EBUSY)
		return buf_printf(msg,
				  "too many sessions: %u are open, the most this %s allows "
				  "(--max-sessions %u): close_session one you no longer need",
				  engine_sessions_count(t->reg),
				  t->reg == &t->sh->own ? "MCP server" : "server", t->reg->max),
		       -EBUSY;
	if (r < 0)
		return buf_puts(msg, r == -EPERM ? err.verdict.message : err.message), r;
	/* another door may end it from now on */
	pthread_mutex_lock(&e->lock);
	*ret = session_json(e);
	pthread_mutex_unlock(&e->lock);
	engine_session_unref(e);
	return 0;
}

int mcp_tools_close_session(struct mcp_tools *t, const char *id, json_t **ret, struct buf *msg)
{
	struct engine_session *e = find(t, id, msg);
	struct engine_caller cl;

	if (!e)
		return -ENOENT;
	*ret = json_pack("{s:s, s:b}", "session_id", e->id, "closed", 1);
	caller(t, &cl);
	t->recorded = engine_session_close(t->reg, &cl, e);
	engine_session_unref(e);
	if (cl.audit_err < 0)
		log_msg(t, "warning", "cannot append to the audit log");
	return 0;
}

int mcp_tools_list_sessions(struct mcp_tools *t, json_t **ret, struct buf *msg)
{
	struct engine_session **all = NULL;
	json_t *list = json_array();
	struct timespec now;
	uint64_t now_ms;
	unsigned n = 0;

	(void)msg;
	clock_gettime(CLOCK_REALTIME, &now);
	now_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	if (my_sessions(t, &all, &n) < 0) {
		json_decref(list);
		return buf_puts(msg, "out of memory"), -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct engine_session *e = all[i];
		uint64_t used = __atomic_load_n(&e->last_used_ms, __ATOMIC_RELAXED);

		json_array_append_new(
			list,
			json_pack("{s:s, s:s, s:I, s:f}", "session_id", e->id, "language",
				  lang_name(e), "executions",
				  (json_int_t)__atomic_load_n(&e->executions, __ATOMIC_RELAXED),
				  "idle_s", now_ms > used ? (double)(now_ms - used) / 1e3 : 0.0));
		engine_session_unref(all[i]);
	}
	free(all);
	*ret = json_pack("{s:o, s:i, s:i}", "sessions", list, "count", (int)n, "max_sessions",
			 (int)t->reg->max);
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

/* The session's workspace: *ret_e held (a reference, its lock) until
 * workspace_done(). */
static int workspace(struct mcp_tools *t, const char *id, struct engine_session **ret_e,
		     struct engine_ws *w, struct buf *msg)
{
	struct engine_session *e = find(t, id, msg);
	int r;

	if (!e)
		return -ENOENT;
	pthread_mutex_lock(&e->lock);
	r = engine_ws_of_session(e->s, w);
	if (r < 0) {
		pthread_mutex_unlock(&e->lock);
		engine_session_unref(e);
		if (r == -ESRCH)
			return buf_printf(msg, "session '%s' was closed", id), -ENOENT;
		return buf_printf(
			       msg,
			       "session '%s' has no workspace now (its kernel is not running): run code in it first",
			       id),
		       r;
	}
	*ret_e = e;
	return 0;
}

static int workspace_done(struct engine_session *e, int r)
{
	pthread_mutex_unlock(&e->lock);
	engine_session_unref(e);
	return r;
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
						    (json_int_t)st->st_size)) < 0
		       ? -ENOMEM
		       : 0;
}

static int list_files(struct engine_session *e, struct engine_ws *w, const char *path, json_t **ret,
		      struct buf *msg)
{
	struct engine_files_listing l = { .depth = 1, .uploads = true };
	json_t *entries = json_array();
	int r;

	path = rel_path(path);
	r = engine_files_list(w, path, &l, list_entry, entries);
	if (r < 0) {
		json_decref(entries);
		return fs_fail(msg, r, "list", path);
	}
	*ret = json_pack("{s:s, s:s, s:o, s:b}", "session_id", e->id, "path", path, "entries",
			 entries, "truncated", l.truncated);
	return 0;
}

int mcp_tools_list_files(struct mcp_tools *t, const char *id, const char *path, json_t **ret,
			 struct buf *msg)
{
	struct engine_ws w;
	struct engine_session *e;
	int r = workspace(t, id, &e, &w, msg);

	if (r < 0)
		return r;
	return workspace_done(e, list_files(e, &w, path, ret, msg));
}

static int read_file(struct engine_session *e, struct engine_ws *w, const char *path,
		     struct buf *data, json_t **ret, struct buf *msg)
{
	struct stat st;
	_cleanup_close_ int fd = -1;
	int r;

	path = rel_path(path);
	fd = engine_files_open(w, path, &st);
	if (fd < 0)
		return fs_fail(msg, fd, "read", path);
	if (S_ISDIR(st.st_mode))
		return buf_printf(msg, "'%s' is a directory: list_files lists it", path), -EISDIR;
	if ((uint64_t)st.st_size > MCP_FILE_MAX)
		return buf_printf(
			       msg,
			       "'%s' is %lld bytes, over the 16 MiB limit of read_file: read parts "
			       "of it with run_code",
			       path, (long long)st.st_size),
		       -EFBIG;
	r = buf_read_fd(data, fd);
	if (r < 0)
		return fs_fail(msg, r, "read", path);
	*ret = json_pack("{s:s, s:s, s:I}", "session_id", e->id, "path", path, "size",
			 (json_int_t)data->len);
	return 0;
}

int mcp_tools_read_file(struct mcp_tools *t, const char *id, const char *path, struct buf *data,
			json_t **ret, struct buf *msg)
{
	struct engine_ws w;
	struct engine_session *e;
	int r = workspace(t, id, &e, &w, msg);

	if (r < 0)
		return r;
	return workspace_done(e, read_file(e, &w, path, data, ret, msg));
}

static int check_write(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	return engine_check_file(cl->client, cl->door, ACTION_WRITE_FILE, *(size_t *)arg, v);
}

/* Through the engine's pipeline: the policy's file check (MCP has no
 * approval callback: a held write is refused), the write, then its
 * record with the outcome (a refusal is recorded by the check). */
static int write_file(struct mcp_tools *t, struct engine_session *e, struct engine_ws *w,
		      const char *path, const char *data, size_t len, json_t **ret, struct buf *msg)
{
	struct engine_audit_record rec = { .action = ACTION_WRITE_FILE,
					   .session = e->id,
					   .bytes = len };
	struct engine_approval_note an;
	struct engine_session_error err;
	struct engine_caller cl;
	bool replaced = false;
	int r;

	if (len > MCP_FILE_MAX)
		return fs_fail(msg, -EFBIG, "write_file", path);
	path = rel_path(path);
	caller(t, &cl);
	rec.args = json_pack("{s:s}", "path", path);
	r = engine_call_check(&cl, &rec, check_write, &len, NULL, &an, &err);
	t->verdict = err.verdict;
	if (r < 0) {
		t->recorded = true;
		json_decref(rec.args);
		return buf_puts(msg, err.verdict.message), -EPERM;
	}
	r = path[0] == '/' ? -EXDEV : engine_files_write(w, path, data, len, &replaced);
	rec.status = r < 0 ? "error" : "ok";
	if (r < 0) {
		rec.bytes = 0;
		json_object_set_new(rec.args, "error", json_string(strerror(-r)));
	}
	engine_call_record(&cl, &rec);
	t->recorded = true;
	json_decref(rec.args);
	if (cl.audit_err < 0)
		log_msg(t, "warning", "cannot append to the audit log");
	if (r < 0)
		return fs_fail(msg, r, "write", path);
	*ret = json_pack("{s:s, s:s, s:I, s:b}", "session_id", e->id, "path", path, "size",
			 (json_int_t)len, "replaced", replaced);
	return 0;
}

int mcp_tools_write_file(struct mcp_tools *t, const char *id, const char *path, const char *data,
			 size_t len, json_t **ret, struct buf *msg)
{
	struct engine_ws w;
	struct engine_session *e;
	int r = workspace(t, id, &e, &w, msg);

	if (r < 0)
		return r;
	return workspace_done(e, write_file(t, e, &w, path, data, len, ret, msg));
}

/* ---- the tools besides code (engine/tool.h) ---- */

json_t *mcp_tools_engine_list(struct mcp_tools *t)
{
	json_t *list = json_array(), *all, *x;
	size_t i;

	if (!t->cfg.client)
		return list;
	all = engine_tools_json(t->cfg.client->policy);
	json_array_foreach (all, i, x) {
		json_t *a = json_object_get(x, "annotations");

		json_array_append_new(
			list,
			json_pack("{s:O, s:O, s:O, s:O, s:{s:O, s:O, s:O, s:O, s:O}}", "name",
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
	struct engine_tool_request rq = { .name = name, .args = args, .session = sid };
	struct engine_session_error err;
	struct engine_caller cl;
	_cleanup_close_ int fd = -1;
	int k;

	engine_tool_ctx_init(&ctx);
	ctx.policies = t->cfg.policies;
	ctx.stop_flag = t->cfg.stop_flag;
	if (sid) {
		struct engine_session *e = find(t, sid, msg);

		if (!e)
			return -ENOENT;
		/* a fd of our own: the session's lock is not held while the
		 * tool runs, and another door may end the session meanwhile */
		fd = engine_session_workspace_fd(e);
		fd = fd < 0 ? -1 : fd;
		engine_session_unref(e);
		if (fd < 0)
			return buf_printf(msg,
					  "session '%s' has no workspace now (its kernel is not "
					  "running): run code in it first",
					  sid),
			       -ENOENT;
		ctx.workspace_fd = fd;
	}
	/* no person to ask here: a call the policy holds is refused */
	caller(t, &cl);
	k = engine_tool_call(&cl, &ctx, &rq, ret, &err);
	if (k < 0)
		(void)buf_puts(msg, err.message);
	return k;
}
