/* The egress proxy of a sandbox with the allowlist network (egress.h).
 *
 * Threads: one acceptor per sandbox (poll on the listening socket and a
 * stop eventfd), one detached thread per connection (at most
 * EGRESS_MAX_CONNS).  A connection thread may wait for a name lookup (up to
 * EGRESS_CONNECT_TIMEOUT_S, util/resolve), which cannot be cancelled: so
 * egress_stop() does not wait for connection threads; it shuts their sockets down and the last thread to leave frees
 * the shared state (a reference count). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/egress.h"
#include "util/buf.h"
#include "util/macro.h"
#include "util/netguard.h"
#include "util/resolve.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define EGRESS_WHY_MAX 256
#define EGRESS_MAX_ADDRS 8 /* addresses of one name tried, in order */

const char *const egress_env[] = {
	"HTTP_PROXY=" EGRESS_PROXY_URL,
	"HTTPS_PROXY=" EGRESS_PROXY_URL,
	"http_proxy=" EGRESS_PROXY_URL,
	"https_proxy=" EGRESS_PROXY_URL,
	"ALL_PROXY=" EGRESS_PROXY_URL,
	"all_proxy=" EGRESS_PROXY_URL,
	"NO_PROXY=localhost,127.0.0.1,::1",
	"no_proxy=localhost,127.0.0.1,::1",
	NULL,
};

struct egress {
	pthread_mutex_t lock;
	unsigned refs; /* the owner's, and one per connection thread */
	bool stopping;
	int listen_fd;
	int stop_fd;
	pthread_t acceptor;
	struct netguard_list list;
	/* each live connection's sockets, so that a stop can cut them */
	int fds[EGRESS_MAX_CONNS][2];
	bool used[EGRESS_MAX_CONNS];
	/* decided since the last egress_take_events(); under lock */
	struct egress_event *events;
	size_t n_events;
	uint64_t dropped;
};

struct conn {
	struct egress *e;
	unsigned slot;
	int client, upstream;
	char head[EGRESS_HEAD_MAX + 1];
	size_t have;
	char why[EGRESS_WHY_MAX];
};

static void unref(struct egress *e)
{
	bool last;

	pthread_mutex_lock(&e->lock);
	last = --e->refs == 0;
	pthread_mutex_unlock(&e->lock);
	if (!last)
		return;
	netguard_list_release(&e->list);
	free(e->events);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

/* ---- the listening socket, made in the sandbox's namespace ---- */

struct listen_job {
	int pidfd;
	int fd; /* out; -errno */
};

/* On a thread of its own: setns() changes the calling thread's network
 * namespace only, and the thread ends there, so no thread of codecell
 * ever goes on in the sandbox's namespace. */
static void *listen_in_netns(void *arg)
{
	struct listen_job *j = arg;

	j->fd = setns(j->pidfd, CLONE_NEWNET) < 0 ? -errno : egress_listen_here();
	return NULL;
}

static int listen_socket(int pidfd)
{
	struct listen_job j = { .pidfd = pidfd, .fd = -EIO };
	pthread_t t;
	int r = pthread_create(&t, NULL, listen_in_netns, &j);

	if (r)
		return -r;
	pthread_join(t, NULL);
	return j.fd;
}

/* ---- answers ---- */

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		p += k;
		n -= (size_t)k;
	}
}

/* A refusal: the reason both as the status line's phrase (what clients
 * show for a failed CONNECT) and as the body. */
static void refuse(int fd, int code, const char *why)
{
	char out[EGRESS_WHY_MAX + 256];
	int n = snprintf(out, sizeof(out),
			 "HTTP/1.1 %d codecell egress: %s\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\ncodecell egress: %s\n",
			 code, why, strlen(why) + 18, why);

	if (n > 0)
		send_all(fd, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
}

/* ---- one connection ---- */

static int read_head(struct conn *c, struct egress_req *rq)
{
	uint64_t deadline = now_ns() + (uint64_t)EGRESS_HEAD_TIMEOUT_S * 1000000000ull;
	const char *why = "?";

	for (;;) {
		int r = egress_parse_head(c->head, c->have, rq, &why);
		struct pollfd p = { .fd = c->client, .events = POLLIN };
		uint64_t now = now_ns();
		ssize_t k;

		if (r > 0)
			return 0;
		if (r != -EAGAIN) {
			snprintf(c->why, sizeof(c->why), "%s", why);
			return r == -E2BIG ? 431 : 400;
		}
		if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) == 0)
			return 408;
		k = recv(c->client, c->head + c->have, EGRESS_HEAD_MAX - c->have, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1; /* gone: nobody to answer */
		c->have += (size_t)k;
		c->head[c->have] = '\0';
	}
}

/* Remember the upstream socket so a stop can cut it; false when the
 * proxy is stopping. */
static bool track_upstream(struct conn *c, int fd)
{
	bool ok;

	pthread_mutex_lock(&c->e->lock);
	ok = !c->e->stopping;
	c->e->fds[c->slot][1] = fd;
	pthread_mutex_unlock(&c->e->lock);
	return ok;
}

static int connect_timed(struct conn *c, const struct sockaddr *sa, socklen_t len)
{
	struct pollfd p;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
	socklen_t el = sizeof(err);

	if (fd < 0)
		return -errno;
	if (!track_upstream(c, fd)) {
		close(fd);
		return -ECANCELED;
	}
	c->upstream = fd;
	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, EGRESS_CONNECT_TIMEOUT_S * 1000) <= 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		return -errno;
	return -err;
}

/* The addresses of host, the checked ones only, connected to in order.
 * Returns 0 (connected), or an HTTP status with c->why set. */
static int dial(struct conn *c, const struct egress_req *rq)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl;
	char addr[NETGUARD_ADDR_STRLEN], why[EGRESS_WHY_MAX];
	int r, tried = 0, status = 403;

	if (netguard_check(&c->e->list, rq->host, rq->port, NULL, why, sizeof(why)) < 0)
		return snprintf(c->why, sizeof(c->why), "%s", why), 403;
	r = netguard_parse_ip(rq->host, &ss, &sl);
	if (r == -ERANGE)
		return snprintf(c->why, sizeof(c->why), "'%.100s' is a malformed address",
				rq->host),
		       400;
	/* within the connect timeout: the resolver's own can be far longer */
	if (r < 0 &&
	    (r = resolve_bounded(rq->host, &hints, EGRESS_CONNECT_TIMEOUT_S * 1000, &res)) != 0)
		return snprintf(c->why, sizeof(c->why), "cannot resolve '%.100s': %s", rq->host,
				resolve_strerror(r)),
		       r == RESOLVE_TIMEOUT ? 504 : 502;
	snprintf(c->why, sizeof(c->why), "'%.100s' has no IPv4 or IPv6 address", rq->host);
	for (struct addrinfo *ai = res; tried < EGRESS_MAX_ADDRS; ai = ai->ai_next) {
		struct sockaddr_storage one;
		socklen_t ol = sl;

		if (res && !ai)
			break;
		if (res) {
			if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
				continue;
			memcpy(&one, ai->ai_addr, ai->ai_addrlen);
			ol = ai->ai_addrlen;
		} else {
			one = ss;
		}
		tried++;
		((struct sockaddr_in *)&one)->sin_port = htons(rq->port); /* same offset in sin6 */
		/* the address checked is the address connected to: no second
		 * lookup between the two (DNS rebinding) */
		if (netguard_check(&c->e->list, rq->host, rq->port, (struct sockaddr *)&one, why,
				   sizeof(why)) < 0) {
			snprintf(c->why, sizeof(c->why), "%s", why);
			if (!res)
				break;
			continue;
		}
		if (c->upstream >= 0) {
			track_upstream(c, -1);
			close_fd(&c->upstream);
		}
		r = connect_timed(c, (struct sockaddr *)&one, ol);
		if (r == 0)
			break;
		status = r == -ETIMEDOUT ? 504 : 502;
		snprintf(c->why, sizeof(c->why), "cannot connect to '%.100s' (%s port %u): %s",
			 rq->host, netguard_format((struct sockaddr *)&one, addr, sizeof(addr)),
			 rq->port, strerror(-r));
		if (!res || r == -ECANCELED)
			break;
	}
	if (res)
		freeaddrinfo(res);
	if (r == 0 && c->upstream >= 0)
		return 0;
	return tried ? status : 502;
}

/* Copy both ways until both sides are done or idle for EGRESS_IDLE_S.
 * pre (pre_len bytes, the caller's) goes to b first.  Sockets are used
 * with MSG_DONTWAIT only: a peer that stops reading stalls its own
 * direction, never the thread. */
static void relay(int a, int b, const char *pre, size_t pre_len)
{
	char buf[2][EGRESS_BUF];
	const char *data[2] = { pre, buf[1] };
	size_t len[2] = { pre_len, 0 }, off[2] = { 0, 0 };
	bool eof[2] = { false, false }, shut[2] = { false, false };
	int fd[2] = { a, b }; /* direction i: fd[i] -> fd[!i] */

	while (!(shut[0] && shut[1])) {
		struct pollfd p[2] = { { .fd = a }, { .fd = b } };
		bool moved = false;
		int k;

		for (int i = 0; i < 2; i++) {
			if (!eof[i] && len[i] == off[i])
				p[i].events |= POLLIN;
			if (len[i] > off[i])
				p[!i].events |= POLLOUT;
		}
		k = poll(p, 2, EGRESS_IDLE_S * 1000);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL)))
			return;
		for (int i = 0; i < 2; i++) {
			if ((p[i].revents & (POLLIN | POLLHUP)) && !eof[i] && len[i] == off[i]) {
				ssize_t n = recv(fd[i], buf[i], sizeof(buf[i]), MSG_DONTWAIT);

				if (n > 0) {
					data[i] = buf[i];
					len[i] = (size_t)n;
					off[i] = 0;
					moved = true;
				} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
					eof[i] = moved = true;
				}
			}
			if (len[i] > off[i] && (p[!i].revents & (POLLOUT | POLLHUP))) {
				ssize_t n = send(fd[!i], data[i] + off[i], len[i] - off[i],
						 MSG_NOSIGNAL | MSG_DONTWAIT);

				if (n < 0 && errno != EAGAIN && errno != EINTR)
					return;
				if (n > 0) {
					off[i] += (size_t)n;
					moved = true;
				}
				if (off[i] == len[i])
					len[i] = off[i] = 0;
			}
			if (eof[i] && len[i] == off[i] && !shut[i]) {
				(void)shutdown(fd[!i], SHUT_WR);
				shut[i] = moved = true;
			}
		}
		/* a hang-up that moves nothing would wake poll at once forever */
		if (!moved && ((p[0].revents | p[1].revents) & POLLHUP))
			return;
	}
}

/* Keep what was decided for c (status 200: connected). */
static void note_event(struct conn *c, const struct egress_req *rq, int status)
{
	struct egress *e = c->e;
	struct egress_event *ev;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct timespec ts;

	pthread_mutex_lock(&e->lock);
	if (e->n_events == EGRESS_EVENTS_MAX) {
		e->dropped++;
		pthread_mutex_unlock(&e->lock);
		return;
	}
	if (!e->events && !(e->events = calloc(EGRESS_EVENTS_MAX, sizeof(*e->events)))) {
		e->dropped++;
		pthread_mutex_unlock(&e->lock);
		return;
	}
	ev = &e->events[e->n_events++];
	memset(ev, 0, sizeof(*ev));
	clock_gettime(CLOCK_REALTIME, &ts);
	ev->time_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (rq) {
		snprintf(ev->method, sizeof(ev->method), "%s",
			 rq->connect ? "CONNECT" : rq->method);
		snprintf(ev->host, sizeof(ev->host), "%s", rq->host);
		ev->port = rq->port;
	}
	ev->status = status ? status : 200;
	if (status)
		snprintf(ev->why, sizeof(ev->why), "%s", c->why);
	else if (c->upstream >= 0 && getpeername(c->upstream, (struct sockaddr *)&ss, &sl) == 0)
		netguard_format((struct sockaddr *)&ss, ev->address, sizeof(ev->address));
	pthread_mutex_unlock(&e->lock);
}

int egress_take_events(struct egress *e, struct egress_event **ret, size_t *ret_n,
		       uint64_t *ret_dropped)
{
	struct egress_event *copy = NULL;

	*ret = NULL;
	*ret_n = 0;
	*ret_dropped = 0;
	if (!e)
		return 0;
	pthread_mutex_lock(&e->lock);
	if (e->n_events && !(copy = malloc(e->n_events * sizeof(*copy)))) {
		pthread_mutex_unlock(&e->lock);
		return -ENOMEM;
	}
	if (copy)
		memcpy(copy, e->events, e->n_events * sizeof(*copy));
	*ret = copy;
	*ret_n = e->n_events;
	*ret_dropped = e->dropped;
	e->n_events = 0;
	e->dropped = 0;
	pthread_mutex_unlock(&e->lock);
	return 0;
}

static void serve(struct conn *c)
{
	struct egress_req rq;
	int status = read_head(c, &rq);
	bool parsed = status == 0; /* rq is whole only then */
	struct buf up;

	if (status < 0)
		return;
	if (status == 0)
		status = dial(c, &rq);
	note_event(c, parsed ? &rq : NULL, status);
	if (status) {
		refuse(c->client, status, c->why);
		return;
	}
	if (rq.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		send_all(c->client, ok, sizeof(ok) - 1);
		relay(c->client, c->upstream, c->head + rq.head_len, c->have - rq.head_len);
		return;
	}
	/* the rewritten head, then what came after the client's head */
	buf_init(&up, EGRESS_HEAD_MAX + 512 + EGRESS_HEAD_MAX);
	if (egress_rewrite(c->head, &rq, &up) < 0 ||
	    buf_append(&up, c->head + rq.head_len, c->have - rq.head_len) < 0) {
		buf_release(&up);
		refuse(c->client, 431, "the request head is too long to forward");
		return;
	}
	relay(c->client, c->upstream, up.data, up.len);
	buf_release(&up);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct egress *e = c->e;

	(void)pthread_setname_np(pthread_self(),
				 "egress-conn"); /* seen in /proc: tests count them */
	serve(c);
	pthread_mutex_lock(&e->lock);
	e->used[c->slot] = false;
	e->fds[c->slot][0] = e->fds[c->slot][1] = -1;
	pthread_mutex_unlock(&e->lock);
	close_fd(&c->client);
	close_fd(&c->upstream);
	free(c);
	unref(e);
	return NULL;
}

/* A slot for a new connection, or -1 when EGRESS_MAX_CONNS are open. */
static int take_slot(struct egress *e, int fd)
{
	int slot = -1;

	pthread_mutex_lock(&e->lock);
	for (int i = 0; i < EGRESS_MAX_CONNS && slot < 0; i++)
		if (!e->used[i]) {
			slot = i;
			e->used[i] = true;
			e->fds[i][0] = fd;
			e->fds[i][1] = -1;
			e->refs++;
		}
	pthread_mutex_unlock(&e->lock);
	return slot;
}

static void start_conn(struct egress *e, int fd)
{
	int slot = take_slot(e, fd);
	struct conn *c = slot < 0 ? NULL : malloc(sizeof(*c));
	pthread_attr_t attr;
	pthread_t t;

	if (slot < 0) {
		refuse(fd, 503, "too many connections at once from this sandbox");
		close(fd);
		return;
	}
	if (c) {
		c->e = e;
		c->slot = (unsigned)slot;
		c->client = fd;
		c->upstream = -1;
		c->have = 0;
		c->head[0] = '\0';
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr,
				  512u << 10); /* getaddrinfo, two relay buffers, sanitizers */
	if (!c || pthread_create(&t, &attr, conn_main, c) != 0) {
		free(c);
		pthread_mutex_lock(&e->lock);
		e->used[slot] = false;
		pthread_mutex_unlock(&e->lock);
		refuse(fd, 503, "the proxy is out of memory");
		close(fd);
		unref(e);
	}
	pthread_attr_destroy(&attr);
}

static void *accept_main(void *arg)
{
	struct egress *e = arg;

	(void)pthread_setname_np(pthread_self(), "egress-accept");
	for (;;) {
		struct pollfd p[2] = { { .fd = e->listen_fd, .events = POLLIN },
				       { .fd = e->stop_fd, .events = POLLIN } };
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return NULL;
		if (p[1].revents)
			return NULL;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(e->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			start_conn(e, fd);
		else if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
			(void)poll(NULL, 0, 100); /* do not spin while out of fds */
	}
}

int egress_start(int netns_pidfd, int listen_fd, const char *allow, struct egress **ret)
{
	struct egress *e = calloc(1, sizeof(*e));
	char err[256];
	int r;

	if (!e) {
		if (listen_fd >= 0)
			close(listen_fd);
		return -ENOMEM;
	}
	e->listen_fd = e->stop_fd = -1;
	e->refs = 1;
	pthread_mutex_init(&e->lock, NULL);
	if (!allow || netguard_list_parse(allow, &e->list, err, sizeof(err)) < 0 || !e->list.n) {
		r = -EINVAL;
		goto fail;
	}
	r = listen_fd >= 0 ? TAKE_FD(listen_fd) : listen_socket(netns_pidfd);
	if (r < 0)
		goto fail;
	e->listen_fd = r;
	e->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (e->stop_fd < 0) {
		r = -errno;
		goto fail;
	}
	r = -pthread_create(&e->acceptor, NULL, accept_main, e);
	if (r < 0)
		goto fail;
	*ret = e;
	return 0;
fail:
	close_fd(&listen_fd);
	close_fd(&e->listen_fd);
	close_fd(&e->stop_fd);
	unref(e);
	return r;
}

void egress_stop(struct egress *e)
{
	uint64_t one = 1;

	if (!e)
		return;
	(void)!write(e->stop_fd, &one, sizeof(one));
	pthread_join(e->acceptor, NULL);
	close_fd(&e->listen_fd);
	close_fd(&e->stop_fd);
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	for (int i = 0; i < EGRESS_MAX_CONNS; i++)
		for (int k = 0; k < 2 && e->used[i]; k++)
			if (e->fds[i][k] >= 0)
				(void)shutdown(e->fds[i][k], SHUT_RDWR);
	pthread_mutex_unlock(&e->lock);
	unref(e);
}
