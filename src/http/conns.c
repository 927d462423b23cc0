/* Connections and the deadline of their requests.
 *
 * libmicrohttpd's own timeout counts from the last byte received: a
 * client that trickled a byte every 20 s held its connection, and its
 * thread, for ever, and 512 such clients locked everyone out.  Here a
 * request must be whole by a deadline that activity does not move; a
 * watchdog shuts down the socket of a connection that is late, which
 * libmicrohttpd then sees as the client's hang-up.
 *
 * The fd is shut down under the lock that api_conns_notify() takes
 * before the connection is freed, and libmicrohttpd closes the socket
 * only after that notification (daemon.c, MHD_cleanup_connections): the
 * fd the watchdog shuts down is never one that was reused meanwhile. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "http/log.h"
#include "http/conns.h"
#include "http/internal.h"
#include "util/banned.h"

#define WATCHDOG_TICK_MS 250

struct api_conn {
	struct api_conn *prev, *next;
	int fd;
	uint64_t deadline_ms; /* monotonic; 0: none (a request is being answered) */
	bool cut;	      /* shut down by the watchdog */
	bool begun;	      /* a request line came since the last answer */
	bool served;	      /* an answer went out: idle now is keep-alive */
};


static uint64_t deadline(const struct api_conns *cs)
{
	return cs->timeout_ms ? api_now_ms() + cs->timeout_ms : 0;
}

static void conn_link(struct api_conns *cs, struct api_conn *c)
{
	c->next = cs->head;
	if (cs->head)
		cs->head->prev = c;
	cs->head = c;
	cs->count++;
}

static void conn_unlink(struct api_conns *cs, struct api_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		cs->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	cs->count--;
}

void api_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe)
{
	struct api_server *srv = cls;
	struct api_conns *cs = &srv->conns;
	struct api_conn *c = *socket_context;
	const union MHD_ConnectionInfo *info;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		c = calloc(1, sizeof(*c));
		if (!c || !info) {
			/* untracked, it would escape the deadline: refuse it */
			free(c);
			if (info)
				shutdown(info->connect_fd, SHUT_RDWR);
			return;
		}
		c->fd = info->connect_fd;
		pthread_mutex_lock(&cs->lock);
		c->deadline_ms = deadline(cs);
		conn_link(cs, c);
		pthread_mutex_unlock(&cs->lock);
		*socket_context = c;
		return;
	}
	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	conn_unlink(cs, c);
	pthread_mutex_unlock(&cs->lock);
	free(c);
	*socket_context = NULL;
}

static struct api_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info ? info->socket_context : NULL;
}

bool api_conn_request_received(struct api_server *srv, struct MHD_Connection *conn)
{
	struct api_conn *c = conn_of(conn);
	bool alive;

	if (!c)
		return false;
	pthread_mutex_lock(&srv->conns.lock);
	c->deadline_ms = 0;
	alive = !c->cut;
	pthread_mutex_unlock(&srv->conns.lock);
	return alive;
}

void api_conn_request_begun(struct api_server *srv, struct MHD_Connection *conn)
{
	struct api_conn *c = conn_of(conn);

	if (!c)
		return;
	pthread_mutex_lock(&srv->conns.lock);
	c->begun = true;
	pthread_mutex_unlock(&srv->conns.lock);
}

void api_conn_request_done(struct api_server *srv, struct MHD_Connection *conn)
{
	struct api_conn *c = conn_of(conn);

	if (!c)
		return;
	pthread_mutex_lock(&srv->conns.lock);
	c->begun = false;
	c->served = true;
	if (!c->cut)
		c->deadline_ms = deadline(&srv->conns);
	pthread_mutex_unlock(&srv->conns.lock);
}

/* Under cs->lock: shut down the late ones.  How many, idle keep-alive
 * connections (which are no one's fault) aside. */
static unsigned cut_late(struct api_conns *cs, uint64_t now)
{
	unsigned n = 0;

	for (struct api_conn *c = cs->head; c; c = c->next) {
		if (!c->deadline_ms || now < c->deadline_ms)
			continue;
		shutdown(c->fd, SHUT_RDWR);
		c->deadline_ms = 0;
		c->cut = true;
		n += c->begun || !c->served;
	}
	return n;
}

static void *watchdog_main(void *arg)
{
	struct api_server *srv = arg;
	struct api_conns *cs = &srv->conns;
	struct timespec until;
	unsigned n;

	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		n = cut_late(cs, api_now_ms());
		pthread_mutex_unlock(&cs->lock);
		if (n)
			api_log(srv, "warning",
				"closed %u connection(s) whose request was not whole within %.3g s (--request-timeout)",
				n, (double)cs->timeout_ms / 1000);
		api_log_flush(srv);
		pthread_mutex_lock(&cs->lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += WATCHDOG_TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (!cs->stop)
			pthread_cond_timedwait(&cs->wake, &cs->lock, &until);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

int api_conns_start(struct api_server *srv)
{
	struct api_conns *cs = &srv->conns;
	pthread_condattr_t ca;
	int r;

	pthread_mutex_init(&cs->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->wake, &ca);
	pthread_condattr_destroy(&ca);
	cs->timeout_ms = (uint64_t)(srv->cfg.request_timeout_s * 1000);
	r = pthread_create(&cs->watchdog, NULL, watchdog_main, srv);
	if (r != 0)
		return -r;
	cs->started = true;
	return 0;
}

void api_conns_stop(struct api_server *srv)
{
	struct api_conns *cs = &srv->conns;

	if (!cs->started)
		return;
	pthread_mutex_lock(&cs->lock);
	cs->stop = true;
	pthread_cond_broadcast(&cs->wake);
	pthread_mutex_unlock(&cs->lock);
	pthread_join(cs->watchdog, NULL);
	cs->started = false;
	pthread_cond_destroy(&cs->wake);
	pthread_mutex_destroy(&cs->lock);
}
