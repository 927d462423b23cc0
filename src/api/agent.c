/* POST /v1/agent: the agent loop (agent/loop.c) over HTTP, its events
 * streamed as NDJSON as they happen.  Only when the server was started
 * with a model endpoint (OPENAI_BASE_URL and CODECELL_MODEL in its
 * environment, see cli/serve.c); otherwise 404 agent_not_configured.
 *
 * The loop runs on a thread of its own; its events are queued (capped)
 * and the connection's thread sends them.  A client that goes away
 * raises the loop's stop flag: the model request or the cell in progress
 * stops and the session is closed.  The loop's session is one of the
 * server's (door "agent"): it counts against --max-sessions, is listed
 * by GET /v1/sessions and /metrics, and a DELETE of it ends the run. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "api/handlers.h"
#include "http/http.h"
#include "http/policy.h"
#include "http/internal.h"
#include "http/text.h"
#include "engine/sessions.h"
#include "engine/audit.h"
#include "engine/engine.h"
#include "engine/policy.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define AGENT_STREAM_MAX (64u << 20)	  /* NDJSON waiting for a slow client */
#define AGENT_EVENT_RESULT_MAX (8u << 20) /* an event's result object kept up to this */

struct agent_job {
	struct api_server *srv;
	struct agent_config cfg;
	char *question, *preload, *model;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct buf queue; /* NDJSON lines; under lock */
	size_t sent;	  /* bytes of queue handed to the client */
	bool done;	  /* under lock */
	int stop_flag;	  /* atomic */
	int stop[2];	  /* the loop's stop pipe */
	int client_fd;
	bool reserved;
	/* the client's session slot the policy check took (given back at
	 * the end) */
	struct engine_client *client;
	bool holds_session;
	char request_id[AUDIT_ID_LEN + 1];
};

/* The server's session reservation and the client's session slot. */
static void job_give_back(struct agent_job *j)
{
	if (j->reserved)
		engine_sessions_unreserve(&j->srv->reg);
	if (j->holds_session)
		engine_release(j->client, ACTION_SESSION_CREATE);
	j->reserved = false;
	j->holds_session = false;
}

static void on_event(void *userdata, json_t *ev)
{
	struct agent_job *j = userdata;
	char *line;
	size_t n;

	/* figures make result objects large: past the cap the step goes
	 * without it (the observation describes them) */
	line = api_json_dump(ev, JSON_COMPACT | JSON_ENSURE_ASCII, &n);
	if (line && n > AGENT_EVENT_RESULT_MAX && json_object_get(ev, "result")) {
		free(line);
		json_object_set_new(ev, "result", json_null());
		line = api_json_dump(ev, JSON_COMPACT | JSON_ENSURE_ASCII, &n);
	}
	if (!line)
		return;
	pthread_mutex_lock(&j->lock);
	if (buf_append(&j->queue, line, n) == 0 && buf_append(&j->queue, "\n", 1) < 0)
		j->queue.len -= n;
	pthread_cond_signal(&j->more);
	pthread_mutex_unlock(&j->lock);
	free(line);
}

static void *job_main(void *arg)
{
	struct agent_job *j = arg;
	json_t *tr = NULL;

	agent_run(&j->cfg, j->question, &tr);
	json_decref(tr);
	pthread_mutex_lock(&j->lock);
	j->done = true;
	pthread_cond_signal(&j->more);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

static void job_stop(struct agent_job *j)
{
	struct signalfd_siginfo si = { .ssi_signo = SIGINT };

	if (__atomic_exchange_n(&j->stop_flag, 1, __ATOMIC_SEQ_CST))
		return;
	if (write(j->stop[1], &si, sizeof(si)) < 0) {
		/* full: readable all the same */
	}
}

static void job_free(struct agent_job *j)
{
	job_give_back(j);
	if (j->stop[0] >= 0)
		close(j->stop[0]);
	if (j->stop[1] >= 0)
		close(j->stop[1]);
	buf_release(&j->queue);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->more);
	free(j->question);
	free(j->preload);
	free(j->model);
	free(j);
}

/* A client that hung up, seen while the loop has nothing to send. */
static bool client_gone(const struct agent_job *j)
{
	struct pollfd p = { .fd = j->client_fd, .events = POLLRDHUP };

	return j->client_fd >= 0 && poll(&p, 1, 0) > 0 &&
	       (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct agent_job *j = cls;
	ssize_t r;

	(void)pos;
	pthread_mutex_lock(&j->lock);
	while (j->sent == j->queue.len && !j->done) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&j->more, &j->lock, &ts);
		if (j->sent == j->queue.len && !j->done &&
		    (client_gone(j) || __atomic_load_n(&j->srv->stopping, __ATOMIC_ACQUIRE))) {
			pthread_mutex_unlock(&j->lock);
			job_stop(j);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
	if (j->sent < j->queue.len) {
		size_t n = j->queue.len - j->sent < max ? j->queue.len - j->sent : max;

		memcpy(out, j->queue.data + j->sent, n);
		j->sent += n;
		if (j->sent == j->queue.len) {
			buf_reset(&j->queue);
			j->sent = 0;
		}
		r = (ssize_t)n;
	} else {
		r = MHD_CONTENT_READER_END_OF_STREAM;
	}
	pthread_mutex_unlock(&j->lock);
	return r;
}

static void stream_free(void *cls)
{
	struct agent_job *j = cls;

	job_stop(j);
	pthread_join(j->thread, NULL);
	job_free(j);
}

/* ---- the request ---- */

static int parse_body(struct api_call *c, struct agent_job *j, struct api_error *e)
{
	struct json_body_error je;
	const char *key, *lang = "python";
	json_t *b, *v;
	char why[256];
	int r = 0;

	if (json_body_read(c->body, c->body_len, 0, &b, &je) < 0)
		return je.problem == JSON_BODY_EMPTY || je.problem == JSON_BODY_NOT_OBJECT
			       ? api_error_set(e, 400, "bad_json",
					       "the body must be a JSON object with a 'question'")
			       : api_error_json(e, &je);
	json_object_foreach (b, key, v) {
		if (!strcmp(key, "question") && json_is_string(v) && json_string_length(v))
			j->question = strdup(json_string_value(v));
		else if (!strcmp(key, "max_steps") && json_is_integer(v) &&
			 json_integer_value(v) >= 1 && json_integer_value(v) <= AGENT_MAX_STEPS_MAX)
			j->cfg.max_steps = (unsigned)json_integer_value(v);
		else if (!strcmp(key, "language") && json_is_string(v))
			lang = json_string_value(v);
		else if (!strcmp(key, "preload") && json_is_string(v))
			j->preload = strdup(json_string_value(v));
		else if (!strcmp(key, "timeout") && json_is_number(v) && json_number_value(v) > 0 &&
			 json_number_value(v) <= 3600)
			j->cfg.exec_timeout_s = json_number_value(v);
		else
			r = api_error_set(
				e, 400, "invalid_value",
				"'%.64s' is not one of question (a non-empty string), max_steps "
				"(1 to %d), language, preload, timeout (seconds)",
				key, AGENT_MAX_STEPS_MAX);
		if (r < 0)
			break;
	}
	if (r == 0 && !j->question)
		r = api_error_set(e, 400, "missing_field", "'question' is required");
	if (r == 0 && strlen(j->question) > AGENT_QUESTION_MAX)
		r = api_error_set(e, 413, "body_too_large", "the question is over %u bytes",
				  AGENT_QUESTION_MAX);
	if (r == 0 && strcmp(lang, "python") && strcmp(lang, "javascript") && strcmp(lang, "bash"))
		r = api_error_set(e, 400, "invalid_value", "language: python, javascript or bash");
	if (r == 0 && j->preload && engine_preload_check(j->preload, why, sizeof(why)) < 0)
		r = api_error_set(e, 400, "invalid_value", "preload: %s", why);
	if (r == 0)
		j->cfg.session.lang = !strcmp(lang, "javascript") ? SESSION_JAVASCRIPT
				      : !strcmp(lang, "bash")	  ? SESSION_BASH
								  : SESSION_PYTHON;
	json_decref(b);
	return r;
}

static void configure(struct api_call *c, struct agent_job *j)
{
	const struct api_config *sc = &c->srv->cfg;
	struct session_opts *so = &j->cfg.session;

	j->cfg.base_url = sc->agent_base_url;
	j->cfg.api_key = sc->agent_api_key;
	j->cfg.model = sc->agent_model;
	j->cfg.stop_flag = &j->stop_flag;
	j->cfg.stop_fd = j->stop[0];
	j->cfg.on_event = on_event;
	j->cfg.userdata = j;
	so->preload =
		j->preload ? j->preload : (so->lang == SESSION_PYTHON ? c->srv->preload : NULL);
	/* the warm pool's kernels have the server's preload */
	if (so->lang == SESSION_PYTHON && !j->preload)
		so->pool = c->srv->pool;
}

/* The loop's session passes the client's policy as POST /v1/sessions
 * does (a rejection, or a person's approval, answered here), and every
 * step and tool call after it is checked and audited as this client's,
 * at the API's door. */
static int check_policy(struct api_call *c, struct agent_job *j, enum MHD_Result *ret)
{
	struct api_request req;
	struct engine_verdict v = { 0 };
	uint64_t t0 = now_ns();

	memset(&req, 0, sizeof(req));
	/* a step's timeout is the cell's: checked against limit.timeout */
	if (j->cfg.exec_timeout_s > 0) {
		j->cfg.session.limits.timeout_s = j->cfg.exec_timeout_s;
		req.limits_set |= 1u << LIMIT_TIMEOUT;
	}
	if (api_check_session(c, &j->cfg.session, &req, &v, ret) < 0)
		return -EPERM;
	j->client = c->client;
	j->holds_session = v.holds_session;
	snprintf(j->request_id, sizeof(j->request_id), "%s", c->request_id);
	api_audit_session_create(c, NULL, &j->cfg.session, "ok", t0);
	j->cfg.client = c->client;
	j->cfg.policies = c->srv->policies;
	j->cfg.audit = c->srv->cfg.audit;
	j->cfg.door = DOOR_API;
	j->cfg.request_id = j->request_id;
	j->cfg.session_checked = true;
	return 0;
}

static struct agent_job *job_new(void)
{
	struct agent_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->stop[0] = j->stop[1] = j->client_fd = -1;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->more, NULL);
	buf_init(&j->queue, AGENT_STREAM_MAX);
	agent_config_init(&j->cfg);
	if (pipe2(j->stop, O_CLOEXEC | O_NONBLOCK) < 0) {
		job_free(j);
		return NULL;
	}
	return j;
}

enum MHD_Result api_handle_agent(struct api_call *c)
{
	const union MHD_ConnectionInfo *ci;
	struct agent_job *j;
	struct api_error e;
	enum MHD_Result ret;
	bool held;

	if (!c->srv->cfg.agent_model || !c->srv->cfg.agent_base_url)
		return api_respond_errorf(c, 404, "agent_not_configured",
					  "this server has no model endpoint: start it with "
					  "OPENAI_BASE_URL and CODECELL_MODEL set");
	j = job_new();
	if (!j)
		return api_respond_errorf(c, 500, "internal", "out of memory");
	j->srv = c->srv;
	if (parse_body(c, j, &e) < 0) {
		job_free(j);
		return api_respond_error(c, &e);
	}
	if (engine_sessions_reserve(&c->srv->reg) < 0) {
		job_free(j);
		return api_respond_errorf(c, 429, "too_many_sessions",
					  "the server runs --max-sessions sessions already: try "
					  "again when one is closed");
	}
	j->reserved = true;
	configure(c, j);
	if (check_policy(c, j, &ret) < 0) {
		job_free(j);
		return ret;
	}
	ci = MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		j->client_fd = ci->connect_fd;
	/* the run takes over the place and the client's slot (agent.h):
	 * they go with its session, which it closes before its "done" */
	j->cfg.sessions = &c->srv->reg;
	j->cfg.stop_w = j->stop[1];
	held = j->holds_session;
	j->reserved = j->holds_session = false;
	errno = pthread_create(&j->thread, NULL, job_main, j);
	if (errno) {
		int err = errno;

		j->reserved = true;
		j->holds_session = held;
		job_free(j);
		return api_respond_errorf(c, 500, "internal", "cannot start the agent: %s",
					  strerror(err));
	}
	return api_respond_stream(c, "application/x-ndjson", stream_read, j, stream_free);
}
