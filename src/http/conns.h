/* http/conns.h: every TCP connection and its request deadline (conns.c). */
#ifndef CODECELL_HTTP_CONNS_H
#define CODECELL_HTTP_CONNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

struct api_server;

/* Every TCP connection from accept to close, with the deadline of the
 * request it is receiving.  A watchdog thread shuts down the socket of a
 * connection whose request (headers and body) has not arrived by its
 * deadline, whatever trickles in meanwhile; once a request is whole the
 * deadline is off until its answer is sent (an execution or a stream
 * may take as long as it takes). */
struct api_conn;
struct api_conns {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct api_conn *head;
	unsigned count;
	uint64_t timeout_ms; /* 0: no deadline */
	bool stop, started;
	pthread_t watchdog;
};

/* Start the watchdog.  0 or -errno. */
int api_conns_start(struct api_server *srv);
/* Stop it; every connection must be gone (after MHD_stop_daemon). */
void api_conns_stop(struct api_server *srv);
/* MHD_OPTION_NOTIFY_CONNECTION: cls is the server. */
void api_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe);
/* The connection's request is whole: no deadline until its answer is
 * sent.  false if the watchdog already cut the connection (then do not
 * start the work). */
bool api_conn_request_received(struct api_server *srv, struct MHD_Connection *conn);
/* A request line arrived (for the log: an idle keep-alive connection
 * cut at its deadline is not worth a warning). */
void api_conn_request_begun(struct api_server *srv, struct MHD_Connection *conn);
/* The answer was sent: the next request's deadline starts now. */
void api_conn_request_done(struct api_server *srv, struct MHD_Connection *conn);

#endif
