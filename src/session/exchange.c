/* One exchange with a session's kernel: a request on fd 3, then its
 * events (fd 4, untrusted: the cell can write there too), stdout and
 * stderr pumped until the answer comes or the sandbox ends; the deadline's
 * interrupt, the caller's signals and hang-up.  exec.c and fork.c build on
 * it; the kernel itself is started by spawn.c. */
#include "session/internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/capture.h"
#include "util/fs.h"
#include "util/banned.h"

uint64_t session_event_line_max(const struct session_opts *o)
{
	return o->result_limit + 2 * o->output_limit + SESSION_EVENT_SLACK;
}

/* A display or result event: kept if it fits the execution's result
 * budget (counted by its line, the bytes the kernel wrote, and its JSON
 * values). */
static void add_result(struct exchange *x, json_t *ev, size_t cost, bool main)
{
	json_t *bundle;

	if (!result_budget_take(&x->budget, cost))
		return;
	bundle = event_bundle(ev, main);
	if (!bundle)
		return;
	if (x->on_result)
		x->on_result(x->userdata, bundle);
	if (!x->results)
		x->results = json_array();
	json_array_append_new(x->results, bundle);
}

static void dispatch(void *ud, json_t *ev, size_t cost)
{
	struct exchange *x = ud;
	const char *type = json_string_value(json_object_get(ev, "type"));
	int id = (int)json_integer_value(json_object_get(ev, "id"));

	if (!type)
		return;
	if (!strcmp(type, "ready")) {
		if (x->want_id == 0 && !x->finished) {
			x->answer = json_incref(ev);
			x->finished = true;
		}
		return;
	}
	if (id != x->want_id)
		return; /* a late event of an interrupted exchange */
	if (!strcmp(type, "result") || !strcmp(type, "display")) {
		add_result(x, ev, cost, !strcmp(type, "result"));
	} else if (!strcmp(type, "started")) {
		x->started = true;
		if (x->interrupt_wanted) {
			x->interrupt_wanted = false;
			(void)sandbox_interrupt(x->s->sb);
		}
	} else if (!strcmp(type, "error")) {
		json_decref(x->error);
		x->error = json_incref(ev);
	} else if (!strcmp(type, "done") || !strcmp(type, "complete") ||
		   !strcmp(type, "snapshot") || !strcmp(type, "names")) {
		if (!x->answer)
			x->answer = json_incref(ev);
		x->finished = true;
	}
}

/* Event bytes.  A line over the cap is skipped (a cell's forged flood
 * costs nothing but its count); outside a cell, where only the kernel
 * speaks and a snapshot may be large, it means the kernel is not
 * behaving: 1, kill. */
static int take_events(struct exchange *x, const char *data, size_t n)
{
	struct event_reader *r = &x->s->events;

	event_reader_feed(r, data, n, dispatch, x);
	return !x->is_exec && r->long_lines ? 1 : 0;
}

static int on_output(void *ud, int ch, const char *data, size_t n)
{
	struct exchange *x = ud;
	size_t live = 0;

	if (ch == 2)
		return take_events(x, data, n);
	x->more[ch] = n == SANDBOX_READ_CHUNK;
	capture_add(ch == 0 ? &x->out : &x->err, data, n, &live);
	outorder_add(&x->order, (unsigned)ch, n);
	if (live) {
		int fd = ch == 0 ? x->live_out : x->live_err;

		if (fd >= 0)
			(void)write_all(fd, data, live);
	}
	x->total += n;
	return x->total > x->flood ? 1 : 0;
}

/* The caller's signalfd fired: SIGINT interrupts the cell, the rest
 * (SIGTERM, SIGHUP) kill the kernel. */
/* SIGINT for the running cell, now, or when it has started (see
 * struct exchange). */
static int interrupt_exchange(struct exchange *x)
{
	if (x->says_started && !x->started && !x->finished) {
		x->interrupt_wanted = true;
		return 0;
	}
	return sandbox_interrupt(x->s->sb);
}

static bool on_stop(void *ud)
{
	struct exchange *x = ud;
	struct signalfd_siginfo si;

	if (read(x->stop_fd, &si, sizeof(si)) != sizeof(si))
		return false;
	if (si.ssi_signo == SIGINT) {
		(void)interrupt_exchange(x);
		return false;
	}
	return true; /* kill: the result says stopped */
}

/* The client went away: interrupt the cell, as SIGINT on stop_fd does. */
static void on_hangup(void *ud)
{
	struct exchange *x = ud;

	(void)interrupt_exchange(x);
	if (x->on_hangup)
		x->on_hangup(x->userdata);
}

static bool finished(void *ud)
{
	return ((struct exchange *)ud)->finished;
}

double session_interrupt_cell(void *ud)
{
	struct exchange *x = ud;

	x->interrupted = true;
	return interrupt_exchange(x) == 0 ? SESSION_GRACE_S : 0;
}

int session_exchange_init(struct exchange *x, struct session *s, int want_id, int live_out,
			  int live_err)
{
	memset(x, 0, sizeof(*x));
	x->s = s;
	x->want_id = want_id;
	x->live_out = live_out;
	x->live_err = live_err;
	outorder_init(&x->order);
	x->flood = codecell_flood_cap(s->opts.output_limit);
	event_reader_set_max(&s->events, SESSION_EVENT_MAX);
	event_reader_clear_counts(&s->events);
	if (capture_init(&x->out, s->opts.output_limit) < 0 ||
	    capture_init(&x->err, s->opts.output_limit) < 0)
		return -ENOMEM;
	return 0;
}

/* A cell's exchange: its results count against result_limit, and no
 * event line can be longer than what the result could hold (the results
 * and an error event's text, which fill_done caps at output_limit). */
void session_exchange_for_cell(struct exchange *x)
{
	const struct session_opts *o = &x->s->opts;

	x->is_exec = true;
	x->says_started = true;
	result_budget_init(&x->budget, o->result_limit);
	event_reader_set_max(&x->s->events, session_event_line_max(o));
}

void session_exchange_release(struct exchange *x)
{
	capture_release(&x->out);
	capture_release(&x->err);
	outorder_release(&x->order);
	/* an idle session keeps no megabytes of line buffer */
	event_reader_trim(&x->s->events, SESSION_EVENT_KEEP);
	json_decref(x->results);
	json_decref(x->error);
	json_decref(x->answer);
}

/* Pump until the exchange finishes or the sandbox ends. */
int session_pump(struct session *s, struct exchange *x, double deadline,
		 double (*on_deadline)(void *), struct sandbox_exit *ret)
{
	struct sandbox_wait_opts o = {
		.channel_fds = { s->out_fd, s->err_fd, s->ev_fd },
		.n_channels = 3,
		.on_output = on_output,
		.userdata = x,
		.until = finished,
		.deadline_s = deadline,
		.on_deadline = on_deadline,
		.stop_fd = x->stop_fd,
		.on_stop = x->stop_fd > 0 ? on_stop : NULL,
		.hangup_fd = x->hangup_fd,
		.on_hangup = on_hangup,
	};
	int r = sandbox_wait(s->sb, &o, ret);

	if (r == 0 && ret->end == SANDBOX_END_RUNNING) {
		/* The kernel flushed its stdout and stderr before "done": what
		 * it printed is in the pipes.  Read what they hold now (FIONREAD),
		 * not more: without relying on which channels the last batch of
		 * events happened to read, and leaving what a background process
		 * writes later to the next cell. */
		char chunk[SANDBOX_READ_CHUNK];
		int fds[2] = { s->out_fd, s->err_fd };

		int kill = 0;

		for (int i = 0; i < 2 && !kill; i++) {
			int avail = 0;
			ssize_t n;

			if (ioctl(fds[i], FIONREAD, &avail) < 0)
				avail = x->more[i] ? (int)sizeof(chunk) : 0;
			while (!kill && avail > 0 &&
			       (n = read(fds[i], chunk,
					 (size_t)avail < sizeof(chunk) ? (size_t)avail
								       : sizeof(chunk))) > 0) {
				avail -= (int)n;
				kill = on_output(x, i, chunk, (size_t)n);
			}
		}
		/* a flood that ended with the cell is this cell's: it ends in
		 * the kill (wait for it), not the next one */
		if (kill > 0) {
			sandbox_kill_for(s->sb, kill);
			o.until = NULL;
			r = sandbox_wait(s->sb, &o, ret);
		}
	}
	return r;
}

int session_send_request(struct session *s, json_t *req)
{
	char *line = json_dumps(req, JSON_COMPACT);
	size_t len, off = 0;
	int r = 0;

	if (!line)
		return -ENOMEM;
	len = strlen(line);
	line[len] = '\n'; /* overwrites the NUL; length tracked */
	while (off < len + 1) {
		ssize_t n = send(s->req_fd, line + off, len + 1 - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		off += (size_t)n;
	}
	free(line);
	return r;
}

/* session_send_request() of a request built for it (NULL: out of memory). */
int session_send_json(struct session *s, json_t *req)
{
	int r = req ? session_send_request(s, req) : -ENOMEM;

	json_decref(req);
	return r;
}

/* Send req (stolen) and wait up to timeout_s for its answer event;
 * *ret_answer gets a new reference to it.  For the requests that are not
 * cells (complete, reap, init, snapshot, restore). */
int session_request(struct session *s, int id, json_t *req, double timeout_s, json_t **ret_answer)
{
	struct exchange x;
	struct sandbox_exit e;
	int k;

	if (!req)
		return -ENOMEM;
	k = session_exchange_init(&x, s, id, -1, -1);
	if (k == 0)
		k = session_send_request(s, req);
	json_decref(req);
	if (k == 0)
		k = session_pump(s, &x, timeout_s, NULL, &e);
	if (k == 0 && !x.finished)
		k = -EIO;
	if (k == 0 && ret_answer)
		*ret_answer = json_incref(x.answer);
	session_exchange_release(&x);
	return k;
}

/* A request answered by "done" and nothing else. */
int session_simple_op(struct session *s, const char *op)
{
	int id = ++s->next_id;

	return session_request(s, id, json_pack("{s:s, s:i}", "op", op, "id", id),
			       SESSION_CONTROL_TIMEOUT_S, NULL);
}
