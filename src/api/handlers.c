/* The routes other than execution (exec.c), files (files.c) and the
 * playground (web.c); and the reaper of idle sessions. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

struct api_session *api_call_session(struct api_call *c, enum MHD_Result *ret)
{
	struct api_session *e = api_registry_get(&c->srv->reg, c->route.session_id);

	if (!e)
		*ret = api_respond_errorf(c, 404, "session_not_found",
					  "no session '%s' (sessions end when deleted or after their idle_timeout)",
					  c->route.session_id);
	return e;
}

/* The pool's part of /healthz: {"ready", "template_alive", "restarts", ...}. */
static json_t *pool_json(const struct session_pool_health *h)
{
	json_t *j = json_pack("{s:i, s:i, s:i, s:b, s:I, s:I}", "ready", (int)h->ready, "size",
			      (int)h->size, "target", (int)h->target, "template_alive",
			      h->template_alive, "template_restarts",
			      (json_int_t)h->stats.template_restarts, "discarded",
			      (json_int_t)h->stats.discarded);

	if (j && h->degraded)
		json_object_set_new(j, "why", json_string(h->why));
	return j;
}

/* 200 in both states: "degraded" means sessions start cold (slower) while
 * the pool heals itself, not that the server should be restarted or
 * taken out of rotation; the body says which (README, "Pool health"). */
enum MHD_Result api_handle_healthz(struct api_call *c)
{
	struct api_server *srv = c->srv;
	struct session_pool_health h;
	json_t *j;

	if (srv->pool)
		session_pool_health(srv->pool, &h);
	j = json_pack("{s:s, s:i, s:i, s:i}", "status",
		      srv->pool && h.degraded ? "degraded" : "ok", "sessions",
		      (int)api_registry_count(&srv->reg), "max_sessions", (int)srv->cfg.max_sessions,
		      "pool_ready", srv->pool ? (int)h.ready : -1);
	if (j && srv->pool)
		json_object_set_new(j, "pool", pool_json(&h));
	/* POST /v1/agent works: the playground shows its "ask" box */
	if (j)
		json_object_set_new(j, "agent",
				    json_boolean(srv->cfg.agent_model && srv->cfg.agent_base_url));
	return api_respond_json(c, 200, j);
}

enum MHD_Result api_handle_metrics(struct api_call *c)
{
	struct api_server *srv = c->srv;
	struct api_session **list = NULL;
	unsigned n = 0, busy = 0;
	size_t len = 0;
	char *text;

	if (api_registry_list(&srv->reg, &list, &n) == 0)
		for (unsigned i = 0; i < n; i++) {
			busy += __atomic_load_n(&list[i]->busy, __ATOMIC_RELAXED) != 0;
			api_session_unref(list[i]);
		}
	free(list);
	{
		struct session_pool_health h;

		if (srv->pool)
			session_pool_health(srv->pool, &h);
		text = api_metrics_text(&srv->metrics, n, srv->cfg.max_sessions, busy,
					srv->pool ? &h : NULL, &len);
	}
	if (!text)
		return api_respond_errorf(c, 500, "internal", "out of memory");
	{
		struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		enum MHD_Result ret;

		if (!r) {
			free(text);
			return MHD_NO;
		}
		api_response_headers(r, "text/plain; version=0.0.4; charset=utf-8");
		ret = MHD_queue_response(c->conn, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
}

enum MHD_Result api_handle_execute(struct api_call *c)
{
	struct api_request req;
	struct api_error e;
	enum MHD_Result ret;

	if (api_request_parse(API_BODY_EXECUTE, c->body, c->body_len, &req, &e) < 0)
		return api_respond_error(c, &e);
	ret = api_exec(c, NULL, &req);
	api_request_release(&req);
	return ret;
}

enum MHD_Result api_handle_session_execute(struct api_call *c)
{
	struct api_request req;
	struct api_error e;
	struct api_session *entry;
	enum MHD_Result ret;

	if (api_request_parse(API_BODY_SESSION_EXECUTE, c->body, c->body_len, &req, &e) < 0)
		return api_respond_error(c, &e);
	entry = api_call_session(c, &ret);
	if (entry) {
		ret = api_exec(c, entry, &req);
		api_session_unref(entry);
	}
	api_request_release(&req);
	return ret;
}

enum MHD_Result api_handle_sessions_list(struct api_call *c)
{
	struct api_session **list = NULL;
	unsigned n = 0;
	json_t *arr = json_array();

	if (api_registry_list(&c->srv->reg, &list, &n) < 0 || !arr) {
		json_decref(arr);
		return api_respond_errorf(c, 500, "internal", "out of memory");
	}
	for (unsigned i = 0; i < n; i++) {
		json_array_append_new(arr, api_session_json(list[i]));
		api_session_unref(list[i]);
	}
	free(list);
	return api_respond_json(c, 200,
				json_pack("{s:o, s:i, s:i}", "sessions", arr, "count", (int)n,
					  "max_sessions", (int)c->srv->cfg.max_sessions));
}

enum MHD_Result api_handle_session_get(struct api_call *c)
{
	enum MHD_Result ret;
	struct api_session *e = api_call_session(c, &ret);

	if (!e)
		return ret;
	ret = api_respond_json(c, 200, api_session_json(e));
	api_session_unref(e);
	return ret;
}

/* ---- create ---- */

/* The options of the new session: defaults, the server's preload, what
 * the client gave.  The warm pool is offered always: the library takes a
 * kernel from it only when the options match its kernels (language,
 * preload, limits but the timeout, network), and starts cold otherwise. */
static int session_options(struct api_server *srv, const struct api_request *req,
			   struct session_opts *so, struct api_error *e)
{
	session_opts_init(so);
	/* the parser refused languages without sessions */
	if (req->set & API_SET_LANG)
		(void)engine_lang_session(req->lang, &so->lang);
	api_request_apply(req, &so->limits, &so->output_limit, &so->net);
	if (req->limits_set & (1u << LIMIT_RESULT))
		so->result_limit = (uint64_t)req->lv.v[LIMIT_RESULT];
	so->env = req->n_env ? (const char *const *)req->env : NULL;
	if (req->set & API_SET_IDLE)
		so->idle_timeout_s = req->idle_timeout_s;
	if (req->set & API_SET_PRELOAD)
		so->preload = *req->preload ? req->preload : NULL;
	else if (so->lang == SESSION_PYTHON)
		so->preload = srv->preload;
	if (so->lang != SESSION_PYTHON && so->preload)
		return api_error_set(e, 400, "invalid_value", "'preload' is for Python sessions");
	so->pool = srv->pool;
	return 0;
}

static void describe_entry(struct api_session *entry, const struct session_opts *so)
{
	entry->lang = so->lang;
	entry->preload = so->preload ? strdup(so->preload) : NULL;
	entry->limits = so->limits;
	entry->output_limit = so->output_limit;
	entry->result_limit = so->result_limit;
	entry->net = so->net;
	entry->idle_timeout_s = so->idle_timeout_s;
	entry->project = so->project_dir ? strdup(so->project_dir) : NULL;
}

void api_audit_session_create(struct api_call *c, const char *id, const struct session_opts *so,
			      const char *status, uint64_t t0)
{
	struct engine_audit_record rec = {
		.action = ACTION_SESSION_CREATE, .session = id, .has_lang = true,
		.lang = engine_lang_of_session(so->lang), .status = status,
		.duration_ms = (double)(now_ns() - t0) / 1e6,
	};

	api_audit(c, &rec);
}

int api_session_create(struct api_server *srv, const struct session_opts *so,
		       struct engine_client *client, struct api_session **ret, struct api_error *e)
{
	struct api_session *entry;
	char *msg = NULL;
	uint64_t t0 = now_ns();
	int r;

	entry = api_session_entry_new();
	if (!entry) {
		if (client)
			engine_release(client, ACTION_SESSION_CREATE);
		return api_error_set(e, 500, "internal", "cannot make a session: %s", strerror(errno));
	}
	entry->client = client; /* its slot goes back with the entry */
	describe_entry(entry, so);
	r = session_new(so, &entry->s, &msg);
	if (r < 0) {
		api_metrics_add(&srv->metrics, &srv->metrics.session_failures);
		api_session_unref(entry);
		api_error_set(e, r == -EINVAL ? 400 : 500, r == -EINVAL ? "invalid_value" : "session_failed",
			      "cannot start the session: %s", msg ? msg : strerror(-r));
		free(msg);
		return r;
	}
	entry->pooled = session_pooled(entry->s);
	__atomic_store_n(&entry->startup_ns, now_ns() - t0, __ATOMIC_RELAXED);
	api_session_note_preload(entry);
	api_registry_add(&srv->reg, entry);
	api_metrics_add(&srv->metrics, &srv->metrics.sessions_created);
	*ret = entry;
	return 0;
}

/* *ret_added: the session went into the registry (with the reservation). */
static enum MHD_Result create(struct api_call *c, struct api_request *req, bool *ret_added)
{
	struct api_session *entry;
	struct session_opts so;
	struct api_error e;
	struct engine_verdict v = { 0 };
	enum MHD_Result ret;
	char **seeded = NULL, project[4096];
	uint64_t t0 = now_ns();
	json_t *j;
	int r;

	if (session_options(c->srv, req, &so, &e) < 0)
		return api_respond_error(c, &e);
	/* the engine's policy check (it may lower defaults in so) */
	if (api_check_session(c, &so, req, &v, &ret) < 0)
		return ret;
	/* a project: inside the policy's `projects`, symlinks resolved */
	if (req->project) {
		struct engine_verdict pv = { 0 };
		struct engine_audit_record rec = { .action = ACTION_SESSION_CREATE };

		if (engine_check_project(c->client, DOOR_API, req->project, project,
					 sizeof(project), &pv) < 0) {
			engine_release(c->client, ACTION_SESSION_CREATE);
			return api_reject(c, &pv, &rec);
		}
		so.project_dir = project;
	}
	/* the seed travels as variables the kernel reads (a pooled kernel
	 * gets them at init: random and numpy, not the hash seed) */
	if (req->has_seed && !(seeded = engine_seed_env(so.env, req->seed))) {
		engine_release(c->client, ACTION_SESSION_CREATE);
		return api_respond_errorf(c, 500, "internal", "out of memory");
	}
	if (seeded)
		so.env = (const char *const *)seeded;
	r = api_session_create(c->srv, &so, c->client, &entry, &e);
	engine_env_free(seeded);
	api_audit_session_create(c, r < 0 ? NULL : entry->id, &so, r < 0 ? "error" : "ok", t0);
	if (r < 0)
		return api_respond_error(c, &e);
	*ret_added = true;
	j = api_session_json(entry);
	api_session_unref(entry);
	return api_respond_json(c, 201, j);
}

enum MHD_Result api_handle_session_create(struct api_call *c)
{
	struct api_request req;
	struct api_error e;
	enum MHD_Result ret;
	bool added = false;

	/* an empty body is a session with every default */
	if (c->body_len == 0)
		memset(&req, 0, sizeof(req));
	else if (api_request_parse(API_BODY_SESSION_CREATE, c->body, c->body_len, &req, &e) < 0)
		return api_respond_error(c, &e);
	if (api_registry_reserve(&c->srv->reg) < 0) {
		api_request_release(&req);
		return api_respond_errorf(c, 429, "too_many_sessions",
					  "%u sessions are open, the most this server allows (--max-sessions): delete one first",
					  c->srv->cfg.max_sessions);
	}
	ret = create(c, &req, &added);
	if (!added)
		api_registry_unreserve(&c->srv->reg);
	api_request_release(&req);
	return ret;
}

/* ---- delete, interrupt, restart, fork ---- */

bool api_session_delete(struct api_server *srv, struct api_session *e)
{
	if (!api_registry_remove(&srv->reg, e))
		return false;
	/* stop what runs (the flag first: see exec.c job_claim) */
	__atomic_store_n(&e->dying, 1, __ATOMIC_SEQ_CST);
	api_session_signal(e, SIGTERM);
	pthread_mutex_lock(&e->lock);
	api_session_end(e);
	pthread_mutex_unlock(&e->lock);
	api_metrics_add(&srv->metrics, &srv->metrics.sessions_deleted);
	api_session_unref(e); /* the registry's */
	return true;
}

enum MHD_Result api_handle_session_delete(struct api_call *c)
{
	enum MHD_Result ret;
	struct api_session *e = api_call_session(c, &ret);

	if (!e)
		return ret;
	if (!api_session_delete(c->srv, e)) {
		api_session_unref(e);
		return api_respond_errorf(c, 404, "session_not_found", "no session '%s'",
					  c->route.session_id);
	}
	{
		struct engine_audit_record rec = { .action = ACTION_SESSION_CLOSE, .session = e->id };

		api_audit(c, &rec);
	}
	ret = api_respond_json(c, 200, json_pack("{s:s, s:b}", "id", e->id, "deleted", 1));
	api_session_unref(e);
	return ret;
}

enum MHD_Result api_handle_session_interrupt(struct api_call *c)
{
	enum MHD_Result ret;
	struct api_session *e = api_call_session(c, &ret);
	bool busy;

	if (!e)
		return ret;
	if (api_check_action(c, e, ACTION_SESSION_INTERRUPT, &ret) < 0) {
		api_session_unref(e);
		return ret;
	}
	busy = __atomic_load_n(&e->busy, __ATOMIC_RELAXED) != 0;
	if (busy)
		api_session_signal(e, SIGINT);
	ret = api_respond_json(c, 200, json_pack("{s:s, s:b}", "id", e->id, "interrupted", busy));
	api_session_unref(e);
	return ret;
}

/* Take the session's lock for a restart: interrupt what runs; if it has
 * not stopped after the grace period, kill the kernel (the session_exec
 * stop record; that sandbox's workspace goes with it). */
static void lock_for_restart(struct api_session *e)
{
	struct timespec until;

	api_session_signal(e, SIGINT);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)SESSION_GRACE_S;
	if (pthread_mutex_timedlock(&e->lock, &until) == 0)
		return;
	api_session_signal(e, SIGTERM);
	pthread_mutex_lock(&e->lock);
}

enum MHD_Result api_handle_session_restart(struct api_call *c)
{
	enum MHD_Result ret;
	struct api_session *e = api_call_session(c, &ret);
	uint64_t t0;
	int r = -ESRCH;

	if (!e)
		return ret;
	if (api_check_action(c, e, ACTION_SESSION_RESTART, &ret) < 0) {
		api_session_unref(e);
		return ret;
	}
	__atomic_add_fetch(&e->restarting, 1, __ATOMIC_SEQ_CST);
	lock_for_restart(e);
	api_session_drain(e);
	__atomic_sub_fetch(&e->restarting, 1, __ATOMIC_SEQ_CST);
	t0 = now_ns();
	if (e->s && !__atomic_load_n(&e->dying, __ATOMIC_SEQ_CST))
		r = session_restart(e->s);
	if (r == 0) {
		__atomic_store_n(&e->startup_ns, now_ns() - t0, __ATOMIC_RELAXED);
		api_session_note_preload(e);
	}
	pthread_mutex_unlock(&e->lock);
	if (r == -ESRCH)
		ret = api_respond_errorf(c, 404, "session_not_found", "the session '%s' was deleted", e->id);
	else if (r < 0)
		ret = api_respond_errorf(c, 500, "session_failed",
					 "cannot restart the session (%s): delete it and create a new one",
					 strerror(-r));
	else
		ret = api_respond_json(c, 200, api_session_json(e));
	api_session_unref(e);
	return ret;
}

/* Under src->lock: the copy, registered.  *ret_msg: what was not copied. */
static int fork_entry(struct api_server *srv, struct api_session *src, struct api_session **ret,
		      char **ret_msg)
{
	struct api_session *e = api_session_entry_new();
	uint64_t t0 = now_ns();
	int r;

	if (!e)
		return -ENOMEM;
	e->lang = src->lang;
	e->preload = src->preload ? strdup(src->preload) : NULL;
	e->limits = src->limits;
	e->output_limit = src->output_limit;
	e->result_limit = src->result_limit;
	e->net = src->net;
	e->idle_timeout_s = src->idle_timeout_s;
	r = session_fork(src->s, &e->s, ret_msg);
	if (r < 0) {
		api_session_unref(e);
		return r;
	}
	e->pooled = session_pooled(e->s);
	__atomic_store_n(&e->startup_ns, now_ns() - t0, __ATOMIC_RELAXED);
	api_session_note_preload(e);
	api_registry_add(&srv->reg, e);
	*ret = e;
	return 0;
}

enum MHD_Result api_handle_session_fork(struct api_call *c)
{
	struct api_server *srv = c->srv;
	struct api_session *src, *e = NULL;
	enum MHD_Result ret;
	char *msg = NULL;
	json_t *j;
	int r;

	src = api_call_session(c, &ret);
	if (!src)
		return ret;
	/* the policy: a fork is a session made, and takes a slot */
	if (api_check_action(c, src, ACTION_SESSION_FORK, &ret) < 0) {
		api_session_unref(src);
		return ret;
	}
	if (api_registry_reserve(&srv->reg) < 0) {
		engine_release(c->client, ACTION_SESSION_CREATE);
		api_session_unref(src);
		return api_respond_errorf(c, 429, "too_many_sessions",
					  "%u sessions are open, the most this server allows (--max-sessions): delete one first",
					  srv->cfg.max_sessions);
	}
	/* the source's kernel hands over its state: nothing may run there */
	pthread_mutex_lock(&src->lock);
	r = src->s ? fork_entry(srv, src, &e, &msg) : -ENOENT;
	pthread_mutex_unlock(&src->lock);
	if (r < 0) {
		engine_release(c->client, ACTION_SESSION_CREATE);
		api_registry_unreserve(&srv->reg);
		api_metrics_add(&srv->metrics, &srv->metrics.session_failures);
		ret = r == -ENOENT ? api_respond_errorf(c, 404, "session_not_found", "the session '%s' was deleted", src->id)
		      : r == -EOPNOTSUPP
			      ? api_respond_errorf(c, 400, "not_supported", "%s", msg ? msg : "this session cannot be forked")
			      : api_respond_errorf(c, 500, "session_failed", "%s", msg ? msg : strerror(-r));
	} else {
		api_metrics_add(&srv->metrics, &srv->metrics.sessions_created);
		e->client = c->client; /* its slot goes back with the entry */
		j = api_session_json(e);
		json_object_set_new(j, "forked_from", json_string(src->id));
		json_object_set_new(j, "not_copied", msg ? json_string(msg) : json_null());
		ret = api_respond_json(c, 201, j);
		api_session_unref(e);
	}
	free(msg);
	api_session_unref(src);
	return ret;
}

/* ---- the reaper ---- */

/* The library does not log: say here what the pool went through since
 * the last look (once a second). */
static void log_pool(struct api_server *srv)
{
	struct session_pool_health h;

	if (!srv->pool)
		return;
	session_pool_health(srv->pool, &h);
	if (h.stats.template_deaths != srv->pool_deaths_logged) {
		api_log(srv, "warning",
			"the warm pool's template died (%llu so far): %s; sessions start cold until a new one is up",
			(unsigned long long)h.stats.template_deaths, h.why[0] ? h.why : "now up again");
		srv->pool_deaths_logged = h.stats.template_deaths;
	}
	if (h.stats.template_restarts != srv->pool_restarts_logged) {
		api_log(srv, "info", "the warm pool's template was started again (%llu restarts so far)",
			(unsigned long long)h.stats.template_restarts);
		srv->pool_restarts_logged = h.stats.template_restarts;
	}
}

static void reap_expired(struct api_server *srv)
{
	struct api_session **list = NULL;
	unsigned n = 0;

	if (api_registry_list(&srv->reg, &list, &n) < 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		struct api_session *e = list[i];

		/* a session that is busy is not idle: skip it this round */
		if (pthread_mutex_trylock(&e->lock) == 0) {
			if (e->s && session_expired(e->s) && api_registry_remove(&srv->reg, e)) {
				__atomic_store_n(&e->dying, 1, __ATOMIC_SEQ_CST);
				api_session_end(e);
				api_session_unref(e); /* the registry's */
				api_metrics_add(&srv->metrics, &srv->metrics.sessions_expired);
			}
			pthread_mutex_unlock(&e->lock);
		}
		api_session_unref(e);
	}
	free(list);
}

void *api_reaper_main(void *arg)
{
	struct api_server *srv = arg;

	pthread_mutex_lock(&srv->lock);
	while (!__atomic_load_n(&srv->stopping, __ATOMIC_SEQ_CST)) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&srv->wake, &srv->lock, &until);
		if (__atomic_load_n(&srv->stopping, __ATOMIC_SEQ_CST))
			break;
		pthread_mutex_unlock(&srv->lock);
		reap_expired(srv);
		api_e2b_sweep(srv);
		log_pool(srv);
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}
