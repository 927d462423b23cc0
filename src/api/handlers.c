/* The routes other than execution (exec.c), files (files.c) and the
 * playground (web.c); and the reaper of idle sessions. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/exec.h"
#include "api/handlers.h"
#include "http/http.h"
#include "http/metrics.h"
#include "http/policy.h"
#include "http/internal.h"
#include "engine/sessions.h"
#include "engine/setup.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"


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
	struct engine_session *entry;
	enum MHD_Result ret;

	if (api_request_parse(API_BODY_SESSION_EXECUTE, c->body, c->body_len, &req, &e) < 0)
		return api_respond_error(c, &e);
	entry = api_call_session(c, &ret);
	if (entry) {
		ret = api_exec(c, entry, &req);
		engine_session_unref(entry);
	}
	api_request_release(&req);
	return ret;
}

enum MHD_Result api_handle_sessions_list(struct api_call *c)
{
	struct engine_session **list = NULL;
	unsigned n = 0;
	json_t *arr = json_array();

	if (engine_sessions_list(&c->srv->reg, &list, &n) < 0 || !arr) {
		json_decref(arr);
		return api_respond_errorf(c, 500, "internal", "out of memory");
	}
	for (unsigned i = 0; i < n; i++) {
		/* another client's sessions are not listed (api_sees) */
		if (api_sees(c, list[i]))
			json_array_append_new(arr, engine_session_json(list[i]));
		engine_session_unref(list[i]);
	}
	free(list);
	return api_respond_json(c, 200,
				json_pack("{s:o, s:i, s:i}", "sessions", arr, "count",
					  (int)json_array_size(arr), "max_sessions",
					  (int)c->srv->cfg.max_sessions));
}

enum MHD_Result api_handle_session_get(struct api_call *c)
{
	enum MHD_Result ret;
	struct engine_session *e = api_call_session(c, &ret);

	if (!e)
		return ret;
	ret = api_respond_json(c, 200, engine_session_json(e));
	engine_session_unref(e);
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
	engine_session_opts_init(so);
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

/* The engine's answer to a lifecycle call that failed, and the
 * metrics' count of kernels that did not start. */
static enum MHD_Result refused(struct api_call *c, struct engine_caller *cl, int r,
			       const struct engine_session_error *err)
{
	if (err->start_failed)
		api_metrics_add(&c->srv->metrics, &c->srv->metrics.session_failures);
	return api_session_refused(c, cl, r, err);
}

enum MHD_Result api_handle_session_create(struct api_call *c)
{
	struct engine_session_spec spec = { 0 };
	struct engine_session_error err;
	struct engine_session *entry;
	struct engine_caller cl;
	struct api_request req;
	struct api_error e;
	enum MHD_Result ret;
	uint64_t t0;
	json_t *j;
	int r;

	/* an empty body is a session with every default */
	if (c->body_len == 0)
		memset(&req, 0, sizeof(req));
	else if (api_request_parse(API_BODY_SESSION_CREATE, c->body, c->body_len, &req, &e) < 0)
		return api_respond_error(c, &e);
	if (session_options(c->srv, &req, &spec.so, &e) < 0) {
		api_request_release(&req);
		return api_respond_error(c, &e);
	}
	spec.asked = req.limits_set;
	spec.net_asked = req.set & API_SET_NET;
	spec.project = req.project;
	spec.has_seed = req.has_seed;
	spec.seed = req.seed;
	api_caller(c, &cl);
	t0 = now_ns();
	r = engine_session_new(&c->srv->reg, &cl, &spec, &entry, &err);
	if (r < 0) {
		ret = refused(c, &cl, r, &err);
	} else {
		api_metrics_session_op(&c->srv->metrics, API_OP_CREATE, t0);
		api_metrics_add(&c->srv->metrics, &c->srv->metrics.sessions_created);
		j = engine_session_json(entry);
		engine_session_unref(entry);
		ret = api_respond_json(c, 201, j);
	}
	api_request_release(&req);
	return ret;
}

/* ---- delete, interrupt, restart, fork ---- */

enum MHD_Result api_handle_session_delete(struct api_call *c)
{
	enum MHD_Result ret;
	struct engine_session *e = api_call_session(c, &ret);
	struct engine_caller cl;

	if (!e)
		return ret;
	api_caller(c, &cl);
	if (!engine_session_close(&c->srv->reg, &cl, e)) {
		engine_session_unref(e);
		return api_respond_errorf(c, 404, "session_not_found", "no session '%s'",
					  c->route.session_id);
	}
	api_metrics_add(&c->srv->metrics, &c->srv->metrics.sessions_deleted);
	ret = api_respond_json(c, 200, json_pack("{s:s, s:b}", "id", e->id, "deleted", 1));
	engine_session_unref(e);
	return ret;
}

enum MHD_Result api_handle_session_interrupt(struct api_call *c)
{
	enum MHD_Result ret;
	struct engine_session *e = api_call_session(c, &ret);
	struct engine_session_error err;
	struct engine_caller cl;
	bool busy = false;
	int r;

	if (!e)
		return ret;
	api_caller(c, &cl);
	r = engine_session_interrupt(&cl, e, &busy, &err);
	ret = r < 0 ? refused(c, &cl, r, &err)
		    : api_respond_json(c, 200,
				       json_pack("{s:s, s:b}", "id", e->id, "interrupted", busy));
	engine_session_unref(e);
	return ret;
}

enum MHD_Result api_handle_session_restart(struct api_call *c)
{
	enum MHD_Result ret;
	struct engine_session *e = api_call_session(c, &ret);
	struct engine_session_error err;
	struct engine_caller cl;
	uint64_t t0;
	int r;

	if (!e)
		return ret;
	api_caller(c, &cl);
	t0 = now_ns();
	r = engine_session_restart(&cl, e, &err);
	if (r == 0)
		api_metrics_session_op(&c->srv->metrics, API_OP_RESTART, t0);
	ret = r < 0 ? refused(c, &cl, r, &err) : api_respond_json(c, 200, engine_session_json(e));
	engine_session_unref(e);
	return ret;
}

enum MHD_Result api_handle_session_fork(struct api_call *c)
{
	struct engine_session *src, *e = NULL;
	struct engine_session_error err;
	struct engine_caller cl;
	enum MHD_Result ret;
	char *msg = NULL;
	uint64_t t0;
	json_t *j;
	int r;

	src = api_call_session(c, &ret);
	if (!src)
		return ret;
	api_caller(c, &cl);
	t0 = now_ns();
	r = engine_session_fork(&c->srv->reg, &cl, src, &e, &msg, &err);
	if (r < 0) {
		ret = refused(c, &cl, r, &err);
	} else {
		api_metrics_session_op(&c->srv->metrics, API_OP_FORK, t0);
		api_metrics_add(&c->srv->metrics, &c->srv->metrics.sessions_created);
		j = engine_session_json(e);
		json_object_set_new(j, "forked_from", json_string(src->id));
		json_object_set_new(j, "not_copied", msg ? json_string(msg) : json_null());
		ret = api_respond_json(c, 201, j);
		engine_session_unref(e);
	}
	free(msg);
	engine_session_unref(src);
	return ret;
}
