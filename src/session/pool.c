/* The warm pool's object: its threads started and stopped, new, what
 * it reports (ready kernels, health, preloads), free.  Its template and
 * watcher are template.c's, its cells cells.c's. */
#include "session/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/macro.h"
#include "util/banned.h"

static void pool_wake_watcher(struct session_pool *p)
{
	uint64_t one = 1;

	(void)!write(p->wake_fd, &one, sizeof(one));
}

static void pool_stop_threads(struct session_pool *p)
{
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->stopping, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->want);
	pthread_cond_broadcast(&p->buried);
	pthread_mutex_unlock(&p->lock);
	if (p->wake_fd >= 0)
		pool_wake_watcher(p);
	if (p->reaper_started)
		pthread_join(p->reaper, NULL); /* after it freed every grave */
	if (p->watcher_started)
		pthread_join(p->watcher, NULL);
	for (unsigned i = 0; i < p->n_makers; i++)
		pthread_join(p->makers[i], NULL);
	p->watcher_started = false;
	p->n_makers = 0;
	session_pool_reap_lost(p, true); /* the watcher's, now that it has stopped */
}

static int pool_start_threads(struct session_pool *p)
{
	int r = -pthread_create(&p->watcher, NULL, session_pool_watcher_main, p);

	p->watcher_started = r == 0;
	if (r == 0) {
		r = -pthread_create(&p->reaper, NULL, session_pool_reaper_main, p);
		p->reaper_started = r == 0;
	}
	for (unsigned i = 0; r == 0 && i < POOL_MAKERS; i++) {
		r = -pthread_create(&p->makers[i], NULL, session_pool_maker_main, p);
		if (r == 0)
			p->n_makers++;
	}
	return r;
}

int session_pool_new(const struct session_opts *o, unsigned size, struct session_pool **ret,
		     char **ret_error)
{
	struct session_pool *p;
	int r;

	if (ret_error)
		*ret_error = NULL;
	if (o->lang != SESSION_PYTHON || size == 0 || size > SESSION_POOL_MAX) {
		if (ret_error &&
		    (o->lang != SESSION_PYTHON
			     ? asprintf(ret_error, "the warm pool is for Python sessions")
			     : asprintf(ret_error, "a pool holds 1 to %d kernels",
					SESSION_POOL_MAX)) < 0)
			*ret_error = NULL;
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->want, NULL);
	pthread_cond_init(&p->buried, NULL);
	p->refs = 1;
	p->size = p->target = size;
	p->opts = *o;
	p->opts.env = NULL;
	p->opts.files = NULL;
	p->opts.workspace_dir = NULL;
	p->opts.pool = NULL;
	/* its kernels have lo only: an allowlist session that takes one
	 * gets its own proxy then (start_from_pool) */
	p->opts.egress = NULL;
	if (p->opts.net == SANDBOX_NET_ALLOWLIST)
		p->opts.net = SANDBOX_NET_LOOPBACK;
	p->preload = o->preload ? strdup(o->preload) : NULL;
	p->opts.preload = p->preload;
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if ((o->preload && !p->preload) || p->wake_fd < 0) {
		session_pool_free(p);
		return -ENOMEM;
	}
	r = session_tpl_start(p, &p->tpl, ret_error);
	if (r == 0) {
		p->preloaded = strdup(session_preloaded(p->tpl->s));
		p->preload_failed = strdup(session_preload_failed(p->tpl->s));
		r = p->preloaded && p->preload_failed ? pool_start_threads(p) : -ENOMEM;
	}
	if (r < 0) {
		session_pool_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

unsigned session_pool_ready(const struct session_pool *p)
{
	unsigned n;

	pthread_mutex_lock((pthread_mutex_t *)&p->lock);
	n = p->n_ready;
	pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
	return n;
}

void session_pool_health(struct session_pool *p, struct session_pool_health *ret)
{
	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&p->lock);
	ret->ready = p->n_ready;
	ret->size = p->size;
	ret->target = p->target;
	ret->making = p->making;
	ret->warmed = p->n_warmed;
	ret->template_alive = p->tpl && session_tpl_alive(p->tpl);
	if (p->tpl) {
		ret->template_pid = p->tpl->pid;
		ret->template_init_pid = sandbox_pid(p->tpl->s->sb);
	}
	ret->degraded = !ret->template_alive || p->why[0];
	snprintf(ret->why, sizeof(ret->why), "%s",
		 p->why[0]		? p->why
		 : !ret->template_alive ? "the template died"
					: "");
	ret->stats = p->st;
	pthread_mutex_unlock(&p->lock);
}

unsigned session_pool_ready_pids(struct session_pool *p, pid_t *ret, unsigned max)
{
	unsigned n = 0;

	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < p->n_ready && n < max; i++)
		if (p->ready[i]->sb)
			ret[n++] = sandbox_pid(p->ready[i]->sb);
	pthread_mutex_unlock(&p->lock);
	return n;
}

const char *session_pool_preloaded(const struct session_pool *p)
{
	return p->preloaded;
}

void session_pool_free(struct session_pool *p)
{
	struct pool_tpl *t;

	if (!p)
		return;
	pool_stop_threads(p);
	while (p->n_ready)
		session_free(session_pool_unready(p, p->n_ready - 1));
	pthread_mutex_lock(&p->lock);
	t = TAKE_PTR(p->tpl);
	pthread_mutex_unlock(&p->lock);
	/* the template reads EOF and exits; its init stays while cells
	 * taken from it live */
	if (t) {
		session_tpl_close(t);
		session_tpl_unref(t);
	}
	session_pool_unref(p);
}
