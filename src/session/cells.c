/* The warm pool's cells: are they (and their template's init) alive,
 * which sessions they fit, the makers that keep `target` of them ready,
 * the takers, and the reaper of the ones killed on a restart.  The pool
 * itself is pool.c's, its template template.c's; struct session_pool is
 * in internal.h. */
#include "session/internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/timeutil.h"
#include "util/banned.h"

/* Has the process behind this pidfd exited?  (-1: not known, no.) */
static bool pidfd_exited(int pidfd)
{
	struct pollfd f = { pidfd, POLLIN, 0 };

	return pidfd >= 0 && poll(&f, 1, 0) == 1;
}

bool session_tpl_init_alive(const struct pool_tpl *t)
{
	return t->s->sb && !pidfd_exited(sandbox_pidfd(t->s->sb));
}

bool session_tpl_alive(const struct pool_tpl *t)
{
	return session_tpl_init_alive(t) && !pidfd_exited(t->pidfd);
}

/* A ready kernel that can still be handed out: its init, its template's
 * init and its channels are there (a kernel killed while it waited in
 * the pool hangs up its request socket and event pipe). */
bool session_kernel_alive(const struct session *k)
{
	struct pollfd f[2] = { { k->req_fd, POLLRDHUP, 0 }, { k->ev_fd, 0, 0 } };

	if (!k->sb || pidfd_exited(sandbox_pidfd(k->sb)) ||
	    (k->tpl && !session_tpl_init_alive(k->tpl)))
		return false;
	if (poll(f, 2, 0) < 0)
		return false;
	return !((f[0].revents | f[1].revents) & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL));
}

static bool same_limits(const struct sandbox_limits *a, const struct sandbox_limits *b)
{
	return a->memory_bytes == b->memory_bytes && a->pids == b->pids &&
	       a->cpu_seconds == b->cpu_seconds && a->file_size == b->file_size &&
	       a->open_files == b->open_files && a->tmp_bytes == b->tmp_bytes &&
	       a->workspace_bytes == b->workspace_bytes && a->cpus == b->cpus;
}

/* A preload item (n bytes) with its blanks trimmed and each run of them
 * made one space, into out (size m); false if it does not fit. */
static bool item_norm(const char *s, size_t n, char *out, size_t m)
{
	size_t k = 0;
	bool gap = false;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ' || s[i] == '\t') {
			gap = k > 0;
			continue;
		}
		if (k + 2 >= m)
			return false;
		if (gap)
			out[k++] = ' ';
		gap = false;
		out[k++] = s[i];
	}
	out[k] = '\0';
	return true;
}

/* Two preload items ("pandas as pd") equal but for their blanks. */
static bool same_item(const char *a, size_t na, const char *b, size_t nb)
{
	char x[256], y[256];

	if (!item_norm(a, na, x, sizeof(x)) || !item_norm(b, nb, y, sizeof(y)))
		return na == nb && !strncmp(a, b, na);
	return !strcmp(x, y);
}

/* Is the item (len bytes) in the comma list? */
static bool in_list(const char *list, const char *item, size_t len)
{
	while (list && *list) {
		size_t n = strcspn(list, ",");

		if (same_item(list, n, item, len))
			return true;
		list += n + (list[n] == ',');
	}
	return false;
}

/* Every item of want is in have (empty items are skipped). */
static bool preload_subset(const char *want, const char *have)
{
	while (want && *want) {
		size_t n = strcspn(want, ",");
		size_t lead = strspn(want, " \t");

		if (lead < n && !in_list(have, want, n))
			return false;
		want += n + (want[n] == ',');
	}
	return true;
}

/* A pool kernel fits a session that asks for Python, some of the pool's
 * preloads (the others are imported too), the same limits (the timeout
 * is per execution), network and strictness. */
bool session_pool_matches(const struct session_pool *p, const struct session_opts *o)
{
	return o->lang == SESSION_PYTHON && preload_subset(o->preload, p->preload) &&
	       same_limits(&p->opts.limits, &o->limits) &&
	       (o->net == p->opts.net ||
		(o->net == SANDBOX_NET_ALLOWLIST && p->opts.net == SANDBOX_NET_LOOPBACK)) &&
	       o->strict == p->opts.strict;
}

/* One cell, forked from t, that has said ready; warmed ahead for a
 * fork if warm. */
static int pool_make_kernel(struct session_pool *p, struct pool_tpl *t, bool warm,
			    struct session **ret)
{
	struct session *k = session_alloc(&p->opts);
	int r;

	if (!k)
		return -ENOMEM;
	k->kind = KERNEL_CELL;
	session_tpl_ref(t);
	k->tpl = t;
	k->filled = true;
	r = session_spawn_kernel(k, -1, NULL);
	if (r == 0)
		r = session_await_ready(k, NULL);
	if (r == 0 && warm) {
		/* an extra: a kernel that could not warm (its answer an error,
		 * or late: the next exchange skips it by id) is kept unwarmed */
		json_t *answer = NULL;
		int id = ++k->next_id;
		int w = session_request(k, id, json_pack("{s:s, s:i}", "op", "warm", "id", id),
					SESSION_CONTROL_TIMEOUT_S, &answer);
		const char *status = json_string_value(json_object_get(answer, "status"));

		k->warmed = w == 0 && status && !strcmp(status, "ok");
		json_decref(answer);
		if (w < 0 && !session_kernel_alive(k))
			r = w;
	}
	if (r < 0) {
		session_free(k);
		return r;
	}
	/* ready: from here on it is a session's, weighed as any other */
	(void)sandbox_set_cpu_weight(k->sb, 0);
	*ret = k;
	return 0;
}

double session_backoff_s(unsigned failures)
{
	double b = POOL_BACKOFF_MIN_S;

	while (failures-- > 1 && b < POOL_BACKOFF_MAX_S)
		b *= 2;
	return b < POOL_BACKOFF_MAX_S ? b : POOL_BACKOFF_MAX_S;
}

/* Should a refill thread make a cell now?  Under p->lock. */
static bool pool_wants(const struct session_pool *p)
{
	return p->tpl && p->n_ready + p->making < p->target &&
	       p->n_ready + p->making < SESSION_POOL_MAX && now_ns() >= p->retry_ns;
}

/* Should the next one be warmed for a fork?  Under p->lock. */
static bool pool_wants_warm(const struct session_pool *p)
{
	unsigned want = p->size > POOL_WARM ? POOL_WARM : p->size ? p->size - 1 : 0;

	return p->n_warmed + p->warming < want;
}

/* Remove ready[i] (the last one moves there); the kernel.  Under p->lock. */
struct session *session_pool_unready(struct session_pool *p, unsigned i)
{
	struct session *k = p->ready[i];

	p->ready[i] = p->ready[--p->n_ready];
	if (k->warmed)
		p->n_warmed--;
	return k;
}

static void cond_wait_s(pthread_cond_t *c, pthread_mutex_t *m, double seconds)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)seconds;
	until.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	(void)pthread_cond_timedwait(c, m, &until);
}

/* A refill thread: keep `target` kernels ready, POOL_MAKERS at a time.
 * Cells that fail three times in a row (a full disk, no cgroups left)
 * pause the refill with backoff instead of spinning; the pool reports
 * it as degraded meanwhile. */
void *session_pool_maker_main(void *arg)
{
	struct session_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		struct pool_tpl *t;
		struct session *k = NULL;
		bool warm;
		int r;

		if (!pool_wants(p)) {
			cond_wait_s(&p->want, &p->lock, p->failures >= 3 ? 0.25 : 5);
			continue;
		}
		t = p->tpl;
		session_tpl_ref(t);
		p->making++;
		warm = pool_wants_warm(p);
		p->warming += warm;
		pthread_mutex_unlock(&p->lock);
		r = pool_make_kernel(p, t, warm, &k);
		session_tpl_unref(t);
		pthread_mutex_lock(&p->lock);
		p->making--;
		p->warming -= warm;
		if (r == 0 && !session_kernel_alive(k)) {
			/* dead as it was made: its template's init died (after
			 * the sweep), or cells die as they start (a memory
			 * limit below what one touches): a failure, backed off
			 * as any other, never a refill at full speed */
			pthread_mutex_unlock(&p->lock);
			session_free(k);
			pthread_mutex_lock(&p->lock);
			p->st.discarded++;
			r = -ECHILD;
		}
		if (r < 0) {
			p->st.cell_failures++;
			if (++p->failures >= 3)
				p->retry_ns = now_ns() +
					      (uint64_t)(session_backoff_s(p->failures - 2) * 1e9);
			if (p->failures >= 3 && p->tpl == t)
				snprintf(p->why, sizeof(p->why),
					 "the template cannot make cells: %s; retrying",
					 r == -ECHILD ? "they die as they start" : strerror(-r));
			continue;
		}
		p->failures = 0;
		if (p->tpl == t && !strncmp(p->why, "the template cannot", 19))
			p->why[0] = '\0';
		if (p->stopping || p->n_ready >= SESSION_POOL_MAX) {
			pthread_mutex_unlock(&p->lock);
			session_free(k);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		p->ready[p->n_ready++] = k;
		p->n_warmed += k->warmed;
		p->st.made++;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Which ready kernel to take: the newest warmed one if warmed (a
 * fork's), else the newest that is not, else the newest.  Under p->lock,
 * with n_ready > 0. */
static unsigned pool_pick(const struct session_pool *p, bool warmed)
{
	for (unsigned i = p->n_ready; i-- > 0;)
		if (p->ready[i]->warmed == warmed)
			return i;
	return p->n_ready - 1;
}

/* Take a live ready kernel (warmed for a fork, if one is), or ask the
 * template for one now; -EAGAIN when the pool has none to give (down,
 * closing): then start cold. */
int session_pool_take(struct session_pool *p, bool warmed, struct session **ret)
{
	struct pool_tpl *t;
	int r;

	pthread_mutex_lock(&p->lock);
	while (p->n_ready) {
		struct session *k = session_pool_unready(p, pool_pick(p, warmed));

		pthread_cond_signal(&p->want);
		if (session_kernel_alive(k)) {
			p->st.taken_ready++;
			p->st.taken_warmed += k->warmed;
			pthread_mutex_unlock(&p->lock);
			*ret = k;
			return 0;
		}
		p->st.discarded++;
		pthread_mutex_unlock(&p->lock);
		session_free(k);
		pthread_mutex_lock(&p->lock);
	}
	/* a miss: keep more ready for a while */
	p->last_miss_ns = now_ns();
	if (p->target < SESSION_POOL_MAX)
		p->target++;
	pthread_cond_broadcast(&p->want);
	t = p->stopping ? NULL : p->tpl;
	if (!t) {
		p->st.cold++;
		pthread_mutex_unlock(&p->lock);
		return -EAGAIN;
	}
	session_tpl_ref(t);
	pthread_mutex_unlock(&p->lock);
	r = pool_make_kernel(p, t, false, ret);
	session_tpl_unref(t);
	pthread_mutex_lock(&p->lock);
	if (r == 0)
		p->st.taken_direct++;
	else
		p->st.cold++;
	pthread_mutex_unlock(&p->lock);
	return r == 0 ? 0 : -EAGAIN;
}

/* Free a killed kernel's sandbox (and drop its template) in the reaper
 * thread; at once, here, if the pool is closing or out of memory. */
void session_pool_bury(struct session_pool *p, struct sandbox *sb, struct pool_tpl *t)
{
	struct grave *g = malloc(sizeof(*g));

	pthread_mutex_lock(&p->lock);
	if (g && p->reaper_started && !p->stopping) {
		*g = (struct grave){ p->graves, sb, t };
		p->graves = g;
		pthread_cond_signal(&p->buried);
		g = NULL;
		sb = NULL;
		t = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	free(g);
	sandbox_free(sb);
	session_tpl_unref(t);
}

/* The reaper: frees what session_pool_bury() left, until the pool closes and
 * nothing is left. */
void *session_pool_reaper_main(void *arg)
{
	struct session_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct grave *g = p->graves;

		if (!g) {
			if (p->stopping)
				break;
			pthread_cond_wait(&p->buried, &p->lock);
			continue;
		}
		p->graves = g->next;
		pthread_mutex_unlock(&p->lock);
		sandbox_free(g->sb);
		session_tpl_unref(g->tpl);
		free(g);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}
