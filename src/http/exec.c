/* Running code for a request: one-shot or in a session, answered with the
 * result object or streamed as NDJSON events.
 *
 * A session's execution answered with one JSON object runs on the
 * connection's own thread, and the session watches the client's socket
 * while the cell runs (session_exec_opts.hangup_fd).  A stream, and a
 * one-shot run, go on a thread of their own (a job) while the
 * connection's thread feeds the stream and watches the socket.  Either
 * way a client that goes away interrupts its execution.
 *
 * Stopping an execution from another thread goes through the stop fd
 * session_exec() polls (a pipe carrying struct signalfd_siginfo records),
 * so the session itself is only ever touched by the thread that holds
 * its lock. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "http/door.h"
#include "http/exec.h"
#include "http/http.h"
#include "http/metrics.h"
#include "http/policy.h"
#include "http/internal.h"
#include "http/text.h"
#include "engine/sessions.h"
#include "engine/engine.h"
#include "util/buf.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/banned.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6))
#define STREAM_MAX (512u << 20) /* NDJSON bytes waiting for a slow client */
#define LIVE_PIPE_SIZE (1 << 20)
#define LIVE_RESULTS_MAX (64u << 20) /* results waiting for the connection's thread */

struct exec_job {
	struct api_server *srv;
	struct engine_session *entry; /* a reference; NULL: one-shot */
	struct api_request req;	      /* owned */
	bool stream;
	/* events in the shape of the door that took the call over (E2B's,
	 * Jupyter's: its stream hooks) and their state, or NULL: /v1's */
	const struct http_stream_shape *shape;
	void *shape_st;
	struct http_emitter out; /* emit() on this job, for the shape */
	int live[2][2];		 /* stdout, stderr pipes: [0] read, [1] write */
	int done_fd;		 /* eventfd: the thread is done */
	int stop[2];		 /* one-shot: engine_run's stop fd */
	int client_fd;		 /* watched for a hang-up; not owned */
	pthread_t thread;
	bool started;
	bool inline_run; /* on the connection's thread: no thread, no done_fd */
	/* claim/cancel handshake, under lock */
	pthread_mutex_t lock;
	bool running, cancelled;
	/* written by the thread before done_fd fires */
	struct egress_log egress; /* the allowlist proxy's connections, for the audit log */
	struct run_result res;
	bool has_res;
	struct api_error err;
	bool has_err;
	/* the connection's side */
	bool done, client_gone;
	/* streaming */
	struct buf pending;
	size_t pending_off;
	char carry[2][4];
	size_t carry_len[2];
	bool eof[2], ended;
	/* results as the kernel sends them: lines queued by the job's thread
	 * (on_result) under lock, taken by the connection's; res_fd says
	 * there are some.  Past LIVE_RESULTS_MAX, live results stop and the
	 * end event brings the rest. */
	int res_fd;
	struct buf live_res;
	bool live_res_off;
	size_t n_streamed; /* results already sent as events */
	/* the end, one event per call once the buffer is empty (never the
	 * results, the error and the end object in memory at once) */
	bool ending, error_sent;
	size_t end_next;	      /* the next result to send */
	struct exec_job *prev, *next; /* srv->jobs */
	/* the policy's execution slot, and the audit record's fields */
	struct engine_client *client;
	bool slot_back; /* job_run() gave the slot back */
	char request_id[AUDIT_ID_LEN + 1];
	char approval_id[AUDIT_ID_LEN + 1];
	uint64_t t0;
};

static bool emit_cb(void *cls, json_t *ev);

/* ---- the job list (shutdown stops them all) ---- */

/* Every execution in flight of a server, to stop at shutdown. */
struct api_jobs {
	pthread_mutex_t lock;
	struct exec_job *head;
	bool stopping; /* api_jobs_stop_all was called: no new job */
};

int api_jobs_new(struct api_jobs **ret)
{
	struct api_jobs *js = calloc(1, sizeof(*js));

	if (!js)
		return -ENOMEM;
	pthread_mutex_init(&js->lock, NULL);
	*ret = js;
	return 0;
}

void api_jobs_free(struct api_jobs *js)
{
	if (!js)
		return;
	pthread_mutex_destroy(&js->lock);
	free(js);
}

static int job_register(struct exec_job *j)
{
	struct api_jobs *js = j->srv->jobs;
	int r = 0;

	pthread_mutex_lock(&js->lock);
	if (js->stopping || __atomic_load_n(&j->srv->stopping, __ATOMIC_SEQ_CST)) {
		r = -ESHUTDOWN;
	} else {
		j->next = js->head;
		if (js->head)
			js->head->prev = j;
		js->head = j;
	}
	pthread_mutex_unlock(&js->lock);
	return r;
}

static void job_unregister(struct exec_job *j)
{
	struct api_jobs *js = j->srv->jobs;

	pthread_mutex_lock(&js->lock);
	if (j->prev)
		j->prev->next = j->next;
	else if (js->head == j)
		js->head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	j->prev = j->next = NULL;
	pthread_mutex_unlock(&js->lock);
}

/* A stop record to the job's execution: sig SIGINT interrupts a session's
 * cell, SIGTERM ends the kernel; a one-shot run is killed either way. */
static void job_signal(struct exec_job *j, int sig)
{
	if (j->entry) {
		engine_session_signal(j->entry, sig);
	} else {
		struct signalfd_siginfo si = { .ssi_signo = (uint32_t)sig };

		if (write(j->stop[1], &si, sizeof(si)) < 0) {
			/* full: it is readable, which is all engine_run needs */
		}
	}
}

void api_jobs_stop_all(struct api_jobs *js)
{
	if (!js)
		return;
	pthread_mutex_lock(&js->lock);
	js->stopping = true;
	for (struct exec_job *j = js->head; j; j = j->next)
		job_signal(j, SIGTERM);
	pthread_mutex_unlock(&js->lock);
}

/* ---- the job's thread ---- */

/* The execution may start: nobody cancelled it and the server is not
 * stopping.  Checked after the stop pipe was drained, so a stop record
 * sent after this point reaches the execution, and one sent before it
 * is seen here (the flags are set before the record is written). */
static bool job_claim(struct exec_job *j)
{
	bool ok;

	pthread_mutex_lock(&j->lock);
	ok = !j->cancelled && !__atomic_load_n(&j->srv->stopping, __ATOMIC_SEQ_CST);
	j->running = ok;
	pthread_mutex_unlock(&j->lock);
	if (!ok)
		api_error_set(&j->err, 503, "cancelled",
			      "the execution was cancelled before it started");
	j->has_err = !ok;
	return ok;
}

/* The job's thread: a result (a figure shown, the main result) came
 * while the cell runs; queue it for the stream. */
static void on_result(void *userdata, const json_t *bundle)
{
	struct exec_job *j = userdata;
	size_t len = 0;
	char *line = api_json_dump(bundle, JSON_FLAGS, &len);

	pthread_mutex_lock(&j->lock);
	if (!line || j->live_res_off || buf_append(&j->live_res, line, len) < 0 ||
	    buf_puts(&j->live_res, "\n") < 0)
		j->live_res_off = true;
	pthread_mutex_unlock(&j->lock);
	free(line);
	(void)eventfd_write(j->res_fd, 1);
}

/* Inline: the session saw the client hang up and interrupted the cell. */
static void on_hangup(void *userdata)
{
	struct exec_job *j = userdata;

	j->client_gone = true;
	api_metrics_add(&j->srv->metrics, &j->srv->metrics.disconnects);
}

static bool claim_cb(void *cls)
{
	return job_claim(cls);
}

static void run_in_session(struct exec_job *j)
{
	struct engine_session *e = j->entry;
	struct session_exec_opts eo = {
		.timeout_s = j->req.timeout_s,
		.live_stdout = j->stream ? j->live[0][1] : -1,
		.live_stderr = j->stream ? j->live[1][1] : -1,
		.stop_fd = e->stop_r,
		.on_result = j->stream ? on_result : NULL,
		.hangup_fd = j->inline_run ? j->client_fd : -1,
		.on_hangup = on_hangup,
		.userdata = j,
		.egress_log =
			j->srv->cfg.audit && e->net == SANDBOX_NET_ALLOWLIST ? &j->egress : NULL,
	};
	struct engine_session_error err;
	int k = engine_session_cell(e, j->req.code, j->req.code_len, &eo, claim_cb, j, &j->res,
				    &err);

	if (k == 0) {
		j->has_res = true;
		return;
	}
	if (k == -ECANCELED)
		return; /* job_claim said why */
	if (k == -ESRCH || k == -EBUSY) {
		api_error_set(&j->err, err.http, err.code, "%s", err.message);
	} else {
		api_error_set(&j->err, 500, "session_failed",
			      "the session cannot go on (%s): delete it and create a new one",
			      strerror(-k));
		api_metrics_add(&j->srv->metrics, &j->srv->metrics.session_failures);
	}
	j->has_err = true;
}

static void run_oneshot(struct exec_job *j)
{
	const struct api_request *q = &j->req;
	struct run_request rq;
	int k;

	run_request_init(&rq);
	if (q->set & API_SET_LANG)
		rq.lang = q->lang;
	rq.code = q->code;
	rq.code_len = q->code_len;
	rq.filename = "<code>"; /* a real file, main.py (see engine/run.c) */
	api_request_apply(q, &rq.limits, &rq.output_limit, &rq.net);
	rq.egress = q->egress;
	rq.env = q->n_env ? (const char *const *)q->env : NULL;
	rq.has_seed = q->has_seed;
	rq.seed = q->seed;
	rq.stop_fd = j->stop[0];
	rq.live_stdout = j->stream ? j->live[0][1] : -1;
	rq.live_stderr = j->stream ? j->live[1][1] : -1;
	if (j->srv->cfg.audit && rq.net == SANDBOX_NET_ALLOWLIST)
		rq.egress_log = &j->egress;
	if (!job_claim(j))
		return;
	k = engine_run(&rq, &j->res);
	if (k < 0) {
		api_error_set(&j->err, 500, "internal", "cannot run the code: %s", strerror(-k));
		j->has_err = true;
	} else {
		j->has_res = true;
	}
}

static void job_run(struct exec_job *j)
{
	uint64_t t0 = now_ns();

	if (j->entry)
		run_in_session(j);
	else
		run_oneshot(j);
	/* EOF on the live pipes tells the reader the output is complete */
	close_fd(&j->live[0][1]);
	close_fd(&j->live[1][1]);
	if (j->has_res)
		api_metrics_execution(&j->srv->metrics, &j->res, (double)(now_ns() - t0) / 1e9);
	/* the audit record before any answer: a client that has its result
	 * finds the call in the log, even if the server dies next */
	if (j->client)
		api_audit_exec(j->srv, j->client, j->request_id, j->approval_id, j->entry, &j->req,
			       j->has_res ? &j->res : NULL, j->t0, &j->egress);
	/* the execution is over: its slot is free before the client can
	 * read its end (a client that runs one execution after another
	 * under max_executions = 1 must not be refused the next) */
	if (j->client) {
		engine_release(j->client, j->entry ? ACTION_SESSION_EXEC : ACTION_RUN);
		j->slot_back = true;
	}
}

static void *job_main(void *arg)
{
	struct exec_job *j = arg;

	job_run(j);
	(void)eventfd_write(j->done_fd, 1);
	return NULL;
}

/* ---- making and ending a job ---- */

static void job_free(struct exec_job *j)
{
	if (!j)
		return;
	if (j->started)
		pthread_join(j->thread, NULL);
	job_unregister(j);
	if (j->client && !j->slot_back)
		engine_release(j->client, j->entry ? ACTION_SESSION_EXEC : ACTION_RUN);
	for (int i = 0; i < 2; i++) {
		close_fd(&j->live[i][0]);
		close_fd(&j->live[i][1]);
		close_fd(&j->stop[i]);
	}
	close_fd(&j->done_fd);
	close_fd(&j->res_fd);
	buf_release(&j->live_res);
	if (j->shape)
		j->shape->free(j->shape_st);
	if (j->has_res)
		run_result_release(&j->res);
	api_request_release(&j->req);
	engine_session_unref(j->entry);
	buf_release(&j->pending);
	pthread_mutex_destroy(&j->lock);
	free(j->egress.ev);
	free(j);
}

/* Pipes for the live output: the write ends non-blocking, so a client
 * that reads slowly costs output in the stream (the result keeps it),
 * never a blocked supervisor loop that could miss a deadline. */
static int live_pipes(struct exec_job *j)
{
	for (int i = 0; i < 2; i++) {
		if (pipe2(j->live[i], O_CLOEXEC | O_NONBLOCK) < 0)
			return -errno;
		(void)fcntl(j->live[i][1], F_SETPIPE_SZ, LIVE_PIPE_SIZE);
	}
	return 0;
}

/* A job for the request; with inline_run, for job_run() on the calling
 * thread (a session's execution answered with one JSON object), else
 * running on its own thread. */
static struct exec_job *job_new(struct api_call *c, struct engine_session *entry,
				struct api_request *req, bool inline_run, int *ret_err)
{
	struct exec_job *j = calloc(1, sizeof(*j));
	const union MHD_ConnectionInfo *ci;
	int r = 0;

	if (!j) {
		engine_release(c->client, entry ? ACTION_SESSION_EXEC : ACTION_RUN);
		*ret_err = -ENOMEM;
		return NULL;
	}
	j->srv = c->srv;
	j->stream = c->wants_ndjson;
	j->shape = c->door ? c->door->stream : NULL;
	j->shape_st = j->shape ? j->shape->begin(c) : NULL;
	if (j->shape && !j->shape_st)
		r = -ENOMEM;
	j->out = (struct http_emitter){ emit_cb, j };
	j->inline_run = inline_run;
	j->req = *req;
	memset(req, 0, sizeof(*req));
	/* before the thread starts: it writes the audit record */
	j->client = c->client;
	j->t0 = now_ns();
	memcpy(j->request_id, c->request_id, sizeof(j->request_id));
	memcpy(j->approval_id, c->approval_id, sizeof(j->approval_id));
	j->live[0][0] = j->live[0][1] = j->live[1][0] = j->live[1][1] = -1;
	j->stop[0] = j->stop[1] = -1;
	j->client_fd = -1;
	pthread_mutex_init(&j->lock, NULL);
	buf_init(&j->pending, STREAM_MAX);
	buf_init(&j->live_res, LIVE_RESULTS_MAX);
	j->res_fd = j->stream ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
	if (j->stream && j->res_fd < 0)
		r = -errno;
	ci = MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		j->client_fd = ci->connect_fd;
	j->done_fd = inline_run ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!inline_run && j->done_fd < 0 && r == 0)
		r = -errno;
	if (r == 0 && j->stream)
		r = live_pipes(j);
	if (r == 0 && !entry && pipe2(j->stop, O_CLOEXEC | O_NONBLOCK) < 0)
		r = -errno;
	if (r == 0)
		r = job_register(j);
	if (r == 0) {
		if (entry)
			engine_session_ref(entry);
		j->entry = entry;
		if (!inline_run) {
			r = -pthread_create(&j->thread, NULL, job_main, j);
			j->started = r == 0;
		}
	}
	if (r < 0) {
		job_free(j);
		*ret_err = r;
		return NULL;
	}
	return j;
}

/* The client went away: a session's cell is interrupted (a cell that
 * ignores SIGINT runs to its own timeout, where the session's grace and
 * kill apply and the workspace is kept); a one-shot run is killed. */
static void job_client_gone(struct exec_job *j)
{
	if (j->client_gone)
		return;
	j->client_gone = true;
	api_metrics_add(&j->srv->metrics, &j->srv->metrics.disconnects);
	pthread_mutex_lock(&j->lock);
	if (j->running)
		job_signal(j, SIGINT);
	else
		j->cancelled = true;
	pthread_mutex_unlock(&j->lock);
}

/* Wait for something on the job: the live pipes (when streaming and
 * open), the end of the thread, the client hanging up.  Returns after
 * one batch of events; true when timeout_ms (-1: none) ran out first. */
static bool job_poll(struct exec_job *j, bool pipes, int timeout_ms)
{
	struct pollfd pf[5];
	int n = 0;
	eventfd_t v;

	pf[n++] = (struct pollfd){ .fd = j->done ? -1 : j->done_fd, .events = POLLIN };
	pf[n++] = (struct pollfd){ .fd = j->client_gone ? -1 : j->client_fd, .events = POLLRDHUP };
	if (pipes) {
		pf[n++] = (struct pollfd){ .fd = j->eof[0] ? -1 : j->live[0][0], .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = j->eof[1] ? -1 : j->live[1][0], .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = j->res_fd, .events = POLLIN };
	}
	n = poll(pf, (nfds_t)n, timeout_ms);
	if (n <= 0)
		return n == 0;
	if (pipes && pf[4].revents)
		(void)eventfd_read(j->res_fd, &v);
	if (pf[0].revents && eventfd_read(j->done_fd, &v) == 0)
		j->done = true;
	if (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
		job_client_gone(j);
	return false;
}

/* ---- the plain JSON answer ---- */

/* The result object; the logs' text, now copied into it, is freed (up to
 * twice the output limit less to hold while it is serialized). */
static json_t *result_json(struct run_result *r)
{
	json_t *o = run_result_to_json(r);

	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
	r->out_len = r->err_len = 0;
	return o;
}

static enum MHD_Result answer(struct api_call *c, struct exec_job *j)
{
	if (j->has_err)
		return api_respond_error(c, &j->err);
	if (j->res.status == RESULT_REJECTED && !j->res.setup_failed)
		return api_respond_errorf(c, 400, "rejected", "%s",
					  j->res.message ? j->res.message
							 : "the code was rejected");
	return api_respond_json(c, 200, result_json(&j->res));
}

/* ---- the NDJSON stream ---- */

/* false: the event was dropped (too large, or no memory) */
/* ev serialized straight into the empty stream buffer (the end event,
 * tens of megabytes, is then never copied); false when it would not fit
 * or without memory. */
static bool emit_into_empty(struct exec_job *j, json_t *ev)
{
	size_t n = json_dumpb(ev, NULL, 0, JSON_FLAGS);
	char *p;

	if (!n || n + 1 > j->pending.max || !(p = malloc(n + 2)))
		return false;
	if (json_dumpb(ev, p, n, JSON_FLAGS) != n) {
		free(p);
		return false;
	}
	p[n] = '\n';
	p[n + 1] = '\0';
	buf_release(&j->pending);
	j->pending.data = p;
	j->pending.len = n + 1;
	j->pending.alloc = n + 2;
	j->pending_off = 0;
	return true;
}

static bool emit(struct exec_job *j, json_t *ev)
{
	size_t len = 0;
	char *line;
	bool ok;

	if (!ev)
		return false;
	if (!j->pending.len) {
		ok = emit_into_empty(j, ev);
		json_decref(ev);
		return ok;
	}
	line = api_json_dump(ev, JSON_FLAGS, &len);
	ok = line != NULL;
	json_decref(ev);
	if (!line)
		return false;
	if (buf_append(&j->pending, line, len) < 0 || buf_puts(&j->pending, "\n") < 0) {
		/* a client this far behind gets the end of the stream only */
		buf_reset(&j->pending);
		j->pending_off = 0;
		ok = false;
	}
	free(line);
	return ok;
}

static bool emit_cb(void *cls, json_t *ev)
{
	return emit(cls, ev);
}

/* What the door's shape holds back of the output, now. */
static void shape_flush(struct exec_job *j)
{
	if (j->shape)
		j->shape->flush(j->shape_st, &j->out);
}

/* Output bytes of stream i as an event; a character split across reads
 * waits in carry for its last bytes. */
static void emit_output(struct exec_job *j, int i, const char *data, size_t n, bool last)
{
	char *joined = malloc(j->carry_len[i] + n + 1), *text;
	size_t len, done, tlen;

	if (!joined)
		return;
	memcpy(joined, j->carry[i], j->carry_len[i]);
	memcpy(joined + j->carry_len[i], data, n);
	len = j->carry_len[i] + n;
	done = last ? len : utf8_complete_len(joined, len);
	j->carry_len[i] = len - done;
	memcpy(j->carry[i], joined + done, j->carry_len[i]);
	text = done ? utf8_repair(joined, done, &tlen) : NULL;
	if (text && j->shape)
		j->shape->output(j->shape_st, i, text, tlen, &j->out);
	else if (text)
		emit(j, json_pack("{s:s, s:s%}", "type", i == 0 ? "stdout" : "stderr", "text", text,
				  tlen));
	free(text);
	free(joined);
}

static void read_live(struct exec_job *j, int i)
{
	char chunk[65536];
	ssize_t n = read(j->live[i][0], chunk, sizeof(chunk));

	if (n > 0) {
		emit_output(j, i, chunk, (size_t)n, false);
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		j->eof[i] = true;
		if (j->carry_len[i])
			emit_output(j, i, "", 0, true);
		shape_flush(j);
	}
}

/* pre, data, post, to the stream as one event; false (the event
 * dropped, the stream's buffer reset) when the client is that far behind. */
static bool emit_raw(struct exec_job *j, const char *pre, const char *data, size_t n,
		     const char *post)
{
	size_t mark = j->pending.len;

	if (buf_puts(&j->pending, pre) == 0 && buf_append(&j->pending, data, n) == 0 &&
	    buf_puts(&j->pending, post) == 0)
		return true;
	j->pending.len = mark;
	if (j->pending.data)
		j->pending.data[mark] = '\0';
	return false;
}

/* The results queued so far, as result events. */
static void emit_live_results(struct exec_job *j)
{
	struct buf q;
	char *line, *nl;

	buf_init(&q, LIVE_RESULTS_MAX);
	pthread_mutex_lock(&j->lock);
	/* take the queue whole: swap it for the empty one */
	{
		struct buf t = j->live_res;

		j->live_res = q;
		q = t;
	}
	pthread_mutex_unlock(&j->lock);
	/* the output so far comes before the results */
	if (q.len)
		shape_flush(j);
	/* each line is a bundle as json_dumps made it: wrapped as it is,
	 * not parsed and serialized again */
	for (line = q.data; line && (nl = memchr(line, '\n', q.len - (size_t)(line - q.data)));
	     line = nl + 1) {
		if (j->shape) {
			json_t *b = json_loadb(line, (size_t)(nl - line), 0, NULL);

			/* emit() drops what does not fit: the end sends no
			 * results again in a door's shape (n_streamed counts them) */
			emit(j, b ? j->shape->result(j->shape_st, b) : NULL);
			json_decref(b);
			j->n_streamed++;
			continue;
		}
		if (!emit_raw(j, "{\"type\":\"result\",\"data\":", line, (size_t)(nl - line),
			      "}\n")) {
			/* the end event sends what was not sent: the ones
			 * streamed must stay a prefix */
			pthread_mutex_lock(&j->lock);
			j->live_res_off = true;
			pthread_mutex_unlock(&j->lock);
			break;
		}
		j->n_streamed++;
	}
	buf_release(&q);
}

/* One step of the end: a result not sent while the cell ran, the error,
 * then the end event; true when the stream is complete. */
/* The end in a door's shape: what it holds back, the results not
 * streamed, then its last events. */
static bool emit_end_step_shaped(struct exec_job *j)
{
	shape_flush(j);
	if (!j->has_err) {
		if (!j->ending) {
			j->ending = true;
			j->end_next = j->n_streamed;
		}
		if (j->end_next < json_array_size(j->res.results)) {
			emit(j, j->shape->result(j->shape_st,
						 json_array_get(j->res.results, j->end_next++)));
			return false;
		}
	}
	j->shape->end(j->shape_st, j->has_err ? &j->err : NULL, j->has_err ? NULL : &j->res,
		      &j->out);
	return true;
}

static bool emit_end_step(struct exec_job *j)
{
	if (j->shape)
		return emit_end_step_shaped(j);
	if (j->has_err) {
		emit(j, json_pack("{s:s, s:s, s:{s:s, s:s}}", "type", "end", "status", "failed",
				  "error", "code", j->err.code, "message", j->err.message));
		return true;
	}
	if (!j->ending) {
		j->ending = true;
		j->end_next = j->n_streamed;
	}
	if (j->end_next < json_array_size(j->res.results)) {
		emit(j, json_pack("{s:s, s:O}", "type", "result", "data",
				  json_array_get(j->res.results, j->end_next++)));
		return false;
	}
	if (!j->error_sent) {
		j->error_sent = true;
		if (j->res.has_error) {
			emit(j, json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name",
					  j->res.error_name ? j->res.error_name : "", "value",
					  j->res.error_value ? j->res.error_value : "", "traceback",
					  j->res.error_traceback ? j->res.error_traceback : ""));
			return false;
		}
	}
	/* The result object of a cell that printed up to twice the output
	 * limit of control bytes (each 6 in JSON) can outgrow STREAM_MAX: the
	 * stream still ends with its status, never without an end event. */
	if (!emit(j, json_pack("{s:s, s:s, s:o}", "type", "end", "status",
			       result_status_name(j->res.status), "result", result_json(&j->res))))
		emit(j,
		     json_pack(
			     "{s:s, s:s, s:n, s:{s:s, s:s}}", "type", "end", "status",
			     result_status_name(j->res.status), "result", "error", "code",
			     "result_too_large", "message",
			     "the result object is too large to stream: ask for a smaller limits.output_limit, or run without streaming"));
	return true;
}

/* Make more NDJSON: wait for output or the end. */
static void stream_pump(struct exec_job *j)
{
	if (j->done && j->eof[0] && j->eof[1]) {
		j->ended = emit_end_step(j);
		return;
	}
	bool waited = job_poll(j, true, j->shape ? j->shape->hold_ms(j->shape_st) : -1);

	/* drain what is there before looking at done: the thread closed the
	 * pipes before it signalled */
	for (int i = 0; i < 2; i++)
		if (!j->eof[i])
			read_live(j, i);
	emit_live_results(j);
	if (waited)
		shape_flush(j);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct exec_job *j = cls;

	(void)pos;
	for (;;) {
		size_t avail = j->pending.len - j->pending_off;

		if (avail) {
			size_t n = avail < max ? avail : max;

			memcpy(out, j->pending.data + j->pending_off, n);
			j->pending_off += n;
			if (j->pending_off == j->pending.len) {
				buf_reset(&j->pending);
				j->pending_off = 0;
			}
			return (ssize_t)n;
		}
		if (j->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (j->client_gone)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		stream_pump(j);
	}
}

/* The response is done with (sent, or the client went away): stop the
 * execution if it still runs, wait for its thread. */
static void stream_free(void *cls)
{
	struct exec_job *j = cls;

	while (!j->done) {
		if (!j->client_gone && !j->ended)
			job_client_gone(j);
		job_poll(j, false, -1);
	}
	job_free(j);
}

static enum MHD_Result start_stream(struct api_call *c, struct exec_job *j)
{
	return api_respond_stream(c, "application/x-ndjson", stream_read, j, stream_free);
}

enum MHD_Result api_exec(struct api_call *c, struct engine_session *entry, struct api_request *req)
{
	struct exec_job *j;
	enum MHD_Result ret;
	int err = 0;

	/* a session's plain answer: on this thread (no thread to make and
	 * join per execution, one hand-off less each way) */
	bool inline_run = entry && !c->wants_ndjson;
	struct engine_verdict v = { 0 };

	/* the engine's policy check: a rejection is answered there */
	if (api_check_exec(c, entry, req, &v, &ret) < 0)
		return ret;
	/* from here the job holds the policy's slot (job_free gives it back) */
	j = job_new(c, entry, req, inline_run, &err);
	if (!j)
		return err == -ESHUTDOWN ? api_respond_errorf(c, 503, "shutting_down",
							      "the server is shutting down")
					 : api_respond_errorf(c, 500, "internal",
							      "cannot start the execution: %s",
							      strerror(-err));
	if (j->stream)
		return start_stream(c, j);
	if (inline_run)
		job_run(j);
	else
		while (!j->done)
			job_poll(j, false, -1);
	ret = answer(c, j);
	job_free(j);
	return ret;
}
