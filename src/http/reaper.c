/* The reaper: once a second, the idle sessions ended, each door's tick
 * (http/door.h), the warm pool's news logged. */
#include <pthread.h>
#include <time.h>

#include "http/internal.h"
#include "http/log.h"
#include "http/metrics.h"
#include "http/reaper.h"
#include "engine/sessions.h"
#include "engine/setup.h"
#include "util/banned.h"

/* The library does not log: say here what the pool went through since
 * the last look (once a second). */
static void log_pool(struct api_server *srv)
{
	struct session_pool_health h;

	if (!srv->pool)
		return;
	engine_pool_health(srv->pool, &h);
	if (h.stats.template_deaths != srv->pool_deaths_logged) {
		api_log(srv, "warning",
			"the warm pool's template died (%llu so far): %s; sessions start cold until a new one is up",
			(unsigned long long)h.stats.template_deaths,
			h.why[0] ? h.why : "now up again");
		srv->pool_deaths_logged = h.stats.template_deaths;
	}
	if (h.stats.template_restarts != srv->pool_restarts_logged) {
		api_log(srv, "info",
			"the warm pool's template was started again (%llu restarts so far)",
			(unsigned long long)h.stats.template_restarts);
		srv->pool_restarts_logged = h.stats.template_restarts;
	}
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
		{
			unsigned n = engine_sessions_reap(&srv->reg, NULL, NULL);

			for (unsigned i = 0; i < n; i++)
				api_metrics_add(&srv->metrics, &srv->metrics.sessions_expired);
		}
		for (size_t i = 0; i < srv->n_doors; i++)
			if (srv->door[i]->tick)
				srv->door[i]->tick(srv, srv->door_state[i]);
		log_pool(srv);
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}
