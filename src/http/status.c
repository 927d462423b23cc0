/* The transport's own routes: GET /healthz (the server and its pool)
 * and GET /metrics (Prometheus text). */
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "http/internal.h"
#include "http/metrics.h"
#include "http/status.h"
#include "engine/sessions.h"
#include "engine/setup.h"
#include "util/banned.h"

/* The pool's part of /healthz: {"ready", "template_alive", "restarts", ...}. */
static json_t *pool_json(const struct session_pool_health *h)
{
	json_t *j = json_pack("{s:i, s:i, s:i, s:i, s:b, s:I, s:I}", "ready", (int)h->ready,
			      "warmed", (int)h->warmed, "size", (int)h->size, "target",
			      (int)h->target, "template_alive", h->template_alive,
			      "template_restarts", (json_int_t)h->stats.template_restarts,
			      "discarded", (json_int_t)h->stats.discarded);

	if (j && h->degraded)
		json_object_set_new(j, "why", json_string(h->why));
	return j;
}

/* 200 in both states: "degraded" means sessions start cold (slower) while
 * the pool heals itself, not that the server should be restarted or
 * taken out of rotation; the body says which (README, "Pool health"). */
static enum MHD_Result handle_healthz(struct api_call *c)
{
	struct api_server *srv = c->srv;
	struct session_pool_health h;
	json_t *j;

	if (srv->pool)
		engine_pool_health(srv->pool, &h);
	j = json_pack("{s:s, s:i, s:i, s:i}", "status", srv->pool && h.degraded ? "degraded" : "ok",
		      "sessions", (int)engine_sessions_count(&srv->reg), "max_sessions",
		      (int)srv->cfg.max_sessions, "pool_ready", srv->pool ? (int)h.ready : -1);
	if (j && srv->pool)
		json_object_set_new(j, "pool", pool_json(&h));
	/* POST /v1/agent works: the playground shows its "ask" box */
	if (j)
		json_object_set_new(j, "agent",
				    json_boolean(srv->cfg.agent_model && srv->cfg.agent_base_url));
	return api_respond_json(c, 200, j);
}

static enum MHD_Result handle_metrics(struct api_call *c)
{
	struct api_server *srv = c->srv;
	struct engine_session **list = NULL;
	unsigned n = 0, busy = 0, by_door[API_DOOR_COUNT] = { 0 };
	size_t len = 0;
	char *text;

	if (engine_sessions_list(&srv->reg, &list, &n) == 0)
		for (unsigned i = 0; i < n; i++) {
			busy += __atomic_load_n(&list[i]->busy, __ATOMIC_RELAXED) != 0;
			by_door[api_door_of(list[i]->door)]++;
			engine_session_unref(list[i]);
		}
	free(list);
	{
		struct session_pool_health h;

		if (srv->pool)
			engine_pool_health(srv->pool, &h);
		text = api_metrics_text(&srv->metrics, n, srv->cfg.max_sessions, busy, by_door,
					srv->pool ? &h : NULL, &len);
	}
	if (!text)
		return api_respond_errorf(c, 500, "internal", "out of memory");
	return api_respond_owned(c, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

enum { STATUS_R_HEALTHZ = 1, STATUS_R_METRICS };

const struct http_route http_status_routes[2] = {
	{ STATUS_R_HEALTHZ, HTTP_GET | HTTP_HEAD, handle_healthz, true, 0, false, NULL, NULL },
	{ STATUS_R_METRICS, HTTP_GET, handle_metrics, false, 0, false, NULL, NULL },
};

int http_status_resolve(const char *path, size_t n, struct api_route *r, struct api_error *e)
{
	(void)n, (void)e;
	if (!strcmp(path, "/healthz"))
		r->id = STATUS_R_HEALTHZ;
	else if (!strcmp(path, "/metrics"))
		r->id = STATUS_R_METRICS;
	return r->id != 0;
}
