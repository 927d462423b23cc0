/* The warm pool's template: starting one, and the watcher that notices
 * its death at once (pidfds), starts another with backoff, sweeps the
 * ready kernels that died, and keeps the lost templates until their init
 * has exited.  Its cells are cells.c's; the pool's object is pool.c's. */
#include "session/internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* Tell the template to exit (it reads EOF).  A shutdown, not a close:
 * a maker or taker holding a reference may still send on the fd, and a
 * closed number could be reused by another session's socket, which would
 * then receive a cell's fds.  The fd closes with the template's session. */
void session_tpl_close(struct pool_tpl *t)
{
	if (t->s->req_fd >= 0)
		(void)shutdown(t->s->req_fd, SHUT_RDWR);
}

/* The template's first message on its socket: a pidfd of itself. */
static int recv_pidfd(int sock, int *ret)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char data[16];
	struct iovec iov = { data, sizeof(data) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct pollfd f = { sock, POLLIN, 0 };
	struct cmsghdr *cm;
	int fd = -1;

	/* it was sent before "ready", which we have read */
	if (poll(&f, 1, 5000) != 1)
		return -ETIMEDOUT;
	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (fd < 0)
		return -EBADMSG;
	*ret = fd;
	return 0;
}

/* The template's own memory limit: the template alone (its imports and
 * the pages cells share with it), since every cell is charged to its
 * own cgroup from its first page (cell.c, struct cell_spec); at least
 * what a session may use, since it imports what a session would. */
static uint64_t template_memory(const struct sandbox_limits *l)
{
	return l->memory_bytes && l->memory_bytes > POOL_TEMPLATE_MEMORY ? l->memory_bytes
									 : POOL_TEMPLATE_MEMORY;
}

/* Start a template, with one reference (the caller's). */
int session_tpl_start(const struct session_pool *p, struct pool_tpl **ret, char **ret_error)
{
	struct session_opts o = p->opts;
	struct pool_tpl *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	t->refs = 1;
	t->pidfd = -1;
	if (o.limits.memory_bytes)
		o.limits.memory_bytes = template_memory(&o.limits);
	t->s = session_alloc(&o);
	if (!t->s) {
		free(t);
		return -ENOMEM;
	}
	t->s->kind = KERNEL_TEMPLATE;
	t->s->filled = true;
	r = session_start_kernel(t->s, ret_error);
	if (r == 0)
		r = recv_pidfd(t->s->req_fd, &t->pidfd);
	if (r == 0)
		t->pid = pidfd_pid(t->pidfd);
	if (r < 0) {
		if (ret_error && !*ret_error &&
		    asprintf(ret_error, "the template did not start: %s", strerror(-r)) < 0)
			*ret_error = NULL;
		session_tpl_unref(t);
		return r;
	}
	*ret = t;
	return 0;
}

/* Wait for the template t (or its init) to die, p->wake_fd, or the
 * timeout.  True if it died. */
static bool tpl_wait_death(struct session_pool *p, struct pool_tpl *t, int timeout_ms)
{
	struct pollfd f[3] = { { t->pidfd, POLLIN, 0 },
			       { sandbox_pidfd(t->s->sb), POLLIN, 0 },
			       { p->wake_fd, POLLIN, 0 } };
	uint64_t v;

	if (poll(f, 3, timeout_ms) > 0 && (f[2].revents & POLLIN))
		(void)!read(p->wake_fd, &v, sizeof(v));
	return (f[0].revents | f[1].revents) != 0;
}

/* Free the ready kernels that died while they waited: those of a
 * template whose init died (the cells die with it), or killed in the
 * pool.  A take skips them too, but only those it meets: one it does not
 * reach would hold its template's init and cgroups and count as ready,
 * keeping the refill from replacing it. */
static void pool_sweep(struct session_pool *p)
{
	struct session *dead[SESSION_POOL_MAX];
	unsigned n = 0;

	pthread_mutex_lock(&p->lock);
	for (unsigned i = p->n_ready; i-- > 0;)
		if (!session_kernel_alive(p->ready[i])) {
			dead[n++] = session_pool_unready(p, i);
			p->st.discarded++;
		}
	if (n)
		pthread_cond_broadcast(&p->want);
	pthread_mutex_unlock(&p->lock);
	while (n)
		session_free(dead[--n]);
}

/* A template the pool lost (the pool's reference, handed over): the
 * watcher keeps it until its init has exited, then reaps the init and
 * removes its cgroups at once (session_pool_reap_lost), whoever still refers to
 * the template: a session not used since, whose kernel died with the
 * init, a maker in the middle of a cell, a grave.  Without that, the
 * init stayed a zombie of the server, and its cgroups stayed, until the
 * last of them let go.  The watcher's thread only. */
static void pool_keep_lost(struct session_pool *p, struct pool_tpl *t)
{
	if (p->n_lost == POOL_LOST_MAX)
		session_tpl_unref(p->lost[--p->n_lost]); /* the oldest goes as before */
	memmove(p->lost + 1, p->lost, p->n_lost * sizeof(*p->lost));
	p->lost[0] = t;
	p->n_lost++;
}

/* Reap the lost templates whose init has exited, and let them go once
 * their cgroups are gone too (all of them once the pool stops). */
void session_pool_reap_lost(struct session_pool *p, bool all)
{
	for (unsigned i = p->n_lost; i-- > 0;) {
		struct pool_tpl *t = p->lost[i];
		bool done = t->s->sb && sandbox_reap_exited(t->s->sb);

		if (!done && !all)
			continue;
		/* newest first: keep the order (the oldest goes on overflow) */
		memmove(p->lost + i, p->lost + i + 1, (--p->n_lost - i) * sizeof(*p->lost));
		session_tpl_unref(t);
	}
}

/* The template died: the pool is down until the watcher starts another. */
static void pool_lost_template(struct session_pool *p, struct pool_tpl *t)
{
	bool init_dead = !session_tpl_init_alive(t);

	pthread_mutex_lock(&p->lock);
	if (p->tpl == t) {
		p->tpl = NULL;
		p->st.template_deaths++;
		snprintf(p->why, sizeof(p->why), "the template%s died; starting a new one",
			 init_dead ? "'s init" : "");
	} else {
		t = NULL; /* not ours any more (the pool is closing) */
	}
	pthread_mutex_unlock(&p->lock);
	if (t) {
		session_tpl_close(t); /* a live template (its init died first) exits */
		pool_keep_lost(p, t);
	}
	pool_sweep(p);
}

/* Start a template again, after `wait` seconds (backoff); true once up. */
static bool pool_restart_template(struct session_pool *p, double wait)
{
	struct pool_tpl *t = NULL;
	int r;

	/* in slices of a second: lost templates are reaped meanwhile */
	for (uint64_t until = now_ns() + (uint64_t)(wait * 1e9); wait > 0;) {
		struct pollfd f = { p->wake_fd, POLLIN, 0 };
		uint64_t now = now_ns();

		if (now >= until)
			break;
		(void)poll(&f, 1,
			   until - now > 1000000000ull ? 1000 : (int)((until - now) / 1000000) + 1);
		if (__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE))
			return false;
		if (f.revents)
			break; /* woken: the pool closes (checked above) */
		session_pool_reap_lost(p, false);
	}
	r = session_tpl_start(p, &t, NULL);
	pthread_mutex_lock(&p->lock);
	if (r == 0 && !p->stopping) {
		p->tpl = TAKE_PTR(t);
		p->st.template_restarts++;
		p->failures = 0;
		p->retry_ns = 0;
		p->why[0] = '\0';
		pthread_cond_broadcast(&p->want);
	} else if (r < 0) {
		/* no text from the template (its stderr): /healthz is public */
		snprintf(p->why, sizeof(p->why), "cannot start a new template: %s; retrying",
			 strerror(-r));
	}
	pthread_mutex_unlock(&p->lock);
	if (t) {
		session_tpl_close(t);
		session_tpl_unref(t);
	}
	return r == 0;
}

/* The watcher: notices a template's death at once (pidfds), starts a new
 * one with backoff (a template that keeps dying young waits longer), and
 * lets a target raised by misses sink back to the size. */
void *session_pool_watcher_main(void *arg)
{
	struct session_pool *p = arg;
	uint64_t born = now_ns();
	unsigned attempts = 0;

	while (!__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE)) {
		struct pool_tpl *t;

		pthread_mutex_lock(&p->lock);
		t = p->tpl;
		if (t)
			session_tpl_ref(t);
		if (p->target > p->size &&
		    now_ns() - p->last_miss_ns > (uint64_t)(POOL_TARGET_DECAY_S * 1e9)) {
			p->target--;
			p->last_miss_ns = now_ns();
		}
		pthread_mutex_unlock(&p->lock);
		if (t) {
			bool died = tpl_wait_death(p, t, 1000);

			if (died && !__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE)) {
				pool_lost_template(p, t);
				if (now_ns() - born > (uint64_t)(POOL_STABLE_S * 1e9))
					attempts = 0;
			} else {
				pool_sweep(p); /* once a second */
			}
			session_tpl_unref(t);
			session_pool_reap_lost(p, false);
			continue;
		}
		/* down: the first attempt at once, unless templates die young */
		pool_sweep(p);
		session_pool_reap_lost(p, false);
		if (pool_restart_template(p, attempts ? session_backoff_s(attempts) : 0)) {
			born = now_ns();
			attempts++;
		} else {
			attempts++;
		}
	}
	return NULL;
}
