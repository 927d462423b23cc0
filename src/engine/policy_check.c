/* engine_check(): the one policy check every door calls before it
 * executes (the rules, the client's rate and counts, a project's
 * directory), and the doors' structs put through it. */
#include "engine/policy.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/timeutil.h"
#include "util/banned.h"

/* ---- the check ---- */

static int deny(struct engine_verdict *v, const struct engine_policy *p, const char *rule, int http,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int deny(struct engine_verdict *v, const struct engine_policy *p, const char *rule, int http,
		const char *fmt, ...)
{
	int k = snprintf(v->message, sizeof(v->message),
			 "rejected by policy '%s', rule '%s': ", p->name, rule);
	va_list ap;

	v->allowed = false;
	v->rule = rule;
	v->http = http;
	if (k > 0 && (size_t)k < sizeof(v->message)) {
		va_start(ap, fmt);
		vsnprintf(v->message + k, sizeof(v->message) - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -EPERM;
}

/* "limits.memory": static strings for v->rule */
static const char *const limit_rules[_LIMIT_MAX] = {
	[LIMIT_TIMEOUT] = "limits.timeout",
	[LIMIT_MEMORY] = "limits.memory",
	[LIMIT_PIDS] = "limits.pids",
	[LIMIT_CPUS] = "limits.cpus",
	[LIMIT_CPU_TIME] = "limits.cpu_time",
	[LIMIT_FILE_SIZE] = "limits.file_size",
	[LIMIT_OPEN_FILES] = "limits.open_files",
	[LIMIT_TMP_SIZE] = "limits.tmp_size",
	[LIMIT_WORKSPACE_SIZE] = "limits.workspace_size",
	[LIMIT_OUTPUT] = "limits.output_limit",
	[LIMIT_RESULT] = "limits.result_limit",
	[LIMIT_IDLE_TIMEOUT] = "limits.idle_timeout",
};

static int check_limits(const struct engine_policy *p, struct engine_call *call,
			struct engine_verdict *v)
{
	for (int i = 0; i < _LIMIT_MAX && call->limits; i++) {
		double *x = &call->limits->v[i];
		char asked[32], most[32];

		if (*x <= p->ceiling[i])
			continue;
		/* a default over the policy's ceiling is lowered; a value the
		 * caller asked for never is: it is refused */
		if (!(call->asked & (1u << i))) {
			*x = p->ceiling[i];
			continue;
		}
		engine_limit_format(engine_limits[i].unit, *x, asked, sizeof(asked));
		engine_limit_format(engine_limits[i].unit, p->ceiling[i], most, sizeof(most));
		return deny(v, p, limit_rules[i], 403, "asked for %s %s, the most allowed is %s",
			    engine_limits[i].name, asked, most);
	}
	return 0;
}

static int check_static(const struct engine_policy *p, struct engine_call *call,
			struct engine_verdict *v)
{
	bool net_on = call->net && *call->net != SANDBOX_NET_NONE;

	if ((call->action == ACTION_SQL || call->action == ACTION_HTTP) &&
	    !(p->tools & (1u << call->action)))
		return deny(v, p, "tools", 403,
			    "the %s tool is not enabled here (the policy's 'tools' key)",
			    engine_action_name(call->action));
	if (call->has_lang && call->lang < _LANG_MAX && !p->languages[call->lang])
		return deny(v, p, "languages", 403, "%s is not allowed here",
			    engine_lang_name(call->lang));
	if (check_limits(p, call, v) < 0)
		return -EPERM;
	if (net_on && !p->network) {
		if (call->net_asked)
			return deny(v, p, "network", 403,
				    "sandboxes have no network here: ask for \"none\"");
		*call->net = SANDBOX_NET_NONE;
		net_on = false;
	}
	if (net_on && *call->net == SANDBOX_NET_ALLOWLIST) {
		if (!p->egress[0])
			return deny(
				v, p, "egress", 403,
				"the allowlist network reaches only the hosts of the "
				"policy's 'egress' list, and it has none: add egress = HOST, HOST:PORT, ...");
		if (call->egress)
			*call->egress = p->egress;
	}
	if (call->action == ACTION_WRITE_FILE && call->bytes > p->max_file) {
		char most[32];

		engine_limit_format(UNIT_BYTES, (double)p->max_file, most, sizeof(most));
		return deny(v, p, "max_file", 413, "the file is %llu bytes, the most allowed is %s",
			    (unsigned long long)call->bytes, most);
	}
	if (!v->approved &&
	    ((p->approval & (1u << call->action)) ||
	     (net_on && call->net_asked && (p->approval & (1u << ACTION_NETWORK))))) {
		v->needs_approval = true;
		v->approval_timeout_s = p->approval_timeout_s;
		return deny(v, p, "approval", 403, "'%s' needs a person's approval%s",
			    net_on && !(p->approval & (1u << call->action))
				    ? "network"
				    : engine_action_name(call->action),
			    call->door == DOOR_API
				    ? ""
				    : ", and only the server can hold a call for one");
	}
	return 0;
}

/* The token bucket: every call takes a token, whatever comes of it (a
 * client that keeps sending refused calls is slowed down too). */
static int check_rate(struct engine_client *c, const struct engine_policy *p,
		      struct engine_verdict *v)
{
	uint64_t now;
	int r = 0;

	if (p->rate <= 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	now = now_ns();
	c->tokens += p->rate * (double)(now - c->refill_ns) / 1e9;
	if (c->tokens > p->burst)
		c->tokens = p->burst;
	c->refill_ns = now;
	if (c->tokens < 1)
		r = deny(v, p, "rate", 429, "over %g calls per second (burst %g): wait %.1f s",
			 p->rate, p->burst, (1 - c->tokens) / p->rate);
	else
		c->tokens -= 1;
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* The counts of what runs and what is open, under the client's lock. */
static int check_counts(struct engine_client *c, const struct engine_policy *p,
			struct engine_call *call, struct engine_verdict *v)
{
	bool exec = call->action == ACTION_RUN || call->action == ACTION_SESSION_EXEC;
	bool sess = call->action == ACTION_SESSION_CREATE || call->action == ACTION_SESSION_FORK;
	int r = 0;

	pthread_mutex_lock(&c->lock);
	if (exec && p->max_executions && c->executions >= p->max_executions)
		r = deny(v, p, "max_executions", 429, "%u executions are running for client '%s'",
			 c->executions, c->name);
	if (!r && sess && p->max_sessions && c->sessions >= p->max_sessions)
		r = deny(v, p, "max_sessions", 429, "client '%s' has %u sessions open: close one",
			 c->name, c->sessions);
	if (!r && exec) {
		c->executions++;
		v->holds_execution = true;
	}
	if (!r && sess) {
		c->sessions++;
		v->holds_session = true;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

int engine_check(struct engine_client *c, struct engine_call *call, struct engine_verdict *v)
{
	const struct engine_policy *p = c->policy;
	bool approved = v->approved;

	memset(v, 0, sizeof(*v));
	v->approved = approved;
	if (check_rate(c, p, v) < 0 || check_static(p, call, v) < 0 ||
	    check_counts(c, p, call, v) < 0)
		return -EPERM;
	v->allowed = true;
	v->rule = NULL;
	v->http = 200;
	return 0;
}

/* Is real (resolved) root itself or below it? */
static bool inside(const char *real, const char *root)
{
	char r[PATH_MAX];
	size_t n;

	if (!realpath(root, r))
		return false;
	n = strlen(r);
	if (n == 1)
		return true; /* "/" */
	return !strncmp(real, r, n) && (real[n] == '\0' || real[n] == '/');
}

int engine_check_project(struct engine_client *c, enum engine_door door, const char *dir,
			 char *real, size_t n, struct engine_verdict *v)
{
	const struct engine_policy *p = c->policy;
	char buf[PATH_MAX];

	memset(v, 0, sizeof(*v));
	if (!realpath(dir, buf))
		return deny(v, p, "projects", 403, "cannot use the project '%.200s': %s", dir,
			    strerror(errno));
	if (strlen(buf) >= n)
		return deny(v, p, "projects", 403, "the project's path is too long");
	if (door != DOOR_CLI) {
		unsigned i;

		for (i = 0; i < p->n_projects; i++)
			if (inside(buf, p->projects[i]))
				break;
		if (i == p->n_projects)
			return deny(v, p, "projects", 403,
				    p->n_projects
					    ? "the project '%.200s' is not inside a directory the "
					      "policy's 'projects' names"
					    : "no project directory is allowed here (the policy's "
					      "'projects' names none): '%.200s'",
				    dir);
	}
	snprintf(real, n, "%s", buf);
	v->allowed = true;
	v->http = 200;
	return 0;
}

void engine_release(struct engine_client *c, enum engine_action a)
{
	pthread_mutex_lock(&c->lock);
	if ((a == ACTION_RUN || a == ACTION_SESSION_EXEC) && c->executions)
		c->executions--;
	if (a == ACTION_SESSION_CREATE && c->sessions)
		c->sessions--;
	pthread_mutex_unlock(&c->lock);
}

void engine_verdict_result(const struct engine_verdict *v, struct run_result *r)
{
	memset(r, 0, sizeof(*r));
	r->status = RESULT_REJECTED;
	r->message = strdup(v->message);
	r->rule = v->rule;
}

/* ---- the doors' structs ---- */

int engine_check_run(struct engine_client *c, enum engine_door door, struct run_request *req,
		     unsigned asked, bool net_asked, struct engine_verdict *v)
{
	struct engine_limit_values lv;
	struct engine_call call = {
		.door = door,
		.action = ACTION_RUN,
		.lang = req->lang,
		.has_lang = true,
		.limits = &lv,
		.asked = asked,
		.net = &req->net,
		.net_asked = net_asked,
		.egress = &req->egress,
	};

	engine_limit_defaults(&lv);
	engine_limit_from_sandbox(&req->limits, &lv);
	lv.v[LIMIT_OUTPUT] = (double)req->output_limit;
	/* one-shot runs have no idle time nor results[] */
	lv.v[LIMIT_IDLE_TIMEOUT] = lv.v[LIMIT_RESULT] = 0;
	if (engine_check(c, &call, v) < 0)
		return -EPERM;
	engine_limit_to_sandbox(&lv, &req->limits);
	req->output_limit = (uint64_t)lv.v[LIMIT_OUTPUT];
	return 0;
}

int engine_check_session(struct engine_client *c, enum engine_door door, struct session_opts *so,
			 unsigned asked, bool net_asked, struct engine_verdict *v)
{
	struct engine_limit_values lv;
	struct engine_call call = {
		.door = door,
		.action = ACTION_SESSION_CREATE,
		.lang = engine_lang_of_session(so->lang),
		.has_lang = true,
		.limits = &lv,
		.asked = asked,
		.net = &so->net,
		.net_asked = net_asked,
		.egress = &so->egress,
	};

	engine_limit_from_sandbox(&so->limits, &lv);
	lv.v[LIMIT_OUTPUT] = (double)so->output_limit;
	lv.v[LIMIT_RESULT] = (double)so->result_limit;
	lv.v[LIMIT_IDLE_TIMEOUT] = so->idle_timeout_s;
	/* 0: never expires, which only a ceiling of the table's allows */
	if (so->idle_timeout_s == 0 &&
	    c->policy->ceiling[LIMIT_IDLE_TIMEOUT] < engine_limits[LIMIT_IDLE_TIMEOUT].ceiling)
		lv.v[LIMIT_IDLE_TIMEOUT] = c->policy->ceiling[LIMIT_IDLE_TIMEOUT];
	if (engine_check(c, &call, v) < 0)
		return -EPERM;
	engine_limit_to_sandbox(&lv, &so->limits);
	so->output_limit = (uint64_t)lv.v[LIMIT_OUTPUT];
	so->result_limit = (uint64_t)lv.v[LIMIT_RESULT];
	so->idle_timeout_s = lv.v[LIMIT_IDLE_TIMEOUT];
	return 0;
}

int engine_check_exec(struct engine_client *c, enum engine_door door, enum session_lang lang,
		      double timeout_s, struct engine_verdict *v)
{
	struct engine_limit_values lv;
	struct engine_call call = {
		.door = door,
		.action = ACTION_SESSION_EXEC,
		.lang = engine_lang_of_session(lang),
		.has_lang = true,
		.limits = &lv,
		.asked = timeout_s > 0 ? 1u << LIMIT_TIMEOUT : 0,
	};

	/* only the timeout is the cell's own; the rest was checked when the
	 * session was made */
	memset(&lv, 0, sizeof(lv));
	lv.v[LIMIT_TIMEOUT] = timeout_s;
	return engine_check(c, &call, v);
}

int engine_check_command(struct engine_client *c, enum engine_door door, double *timeout_s,
			 struct engine_verdict *v)
{
	struct engine_limit_values lv;
	struct engine_call call = {
		.door = door,
		.action = ACTION_SESSION_EXEC,
		.lang = LANG_BASH,
		.has_lang = true,
		.limits = &lv,
		.asked = *timeout_s > 0 ? 1u << LIMIT_TIMEOUT : 0,
	};

	/* a command has no cell timeout of its session's to fall back on:
	 * none asked is the table's ceiling, which check_limits lowers to
	 * the policy's (0 is never "no limit") */
	memset(&lv, 0, sizeof(lv));
	lv.v[LIMIT_TIMEOUT] = *timeout_s > 0 ? *timeout_s : engine_limits[LIMIT_TIMEOUT].ceiling;
	if (engine_check(c, &call, v) < 0)
		return -EPERM;
	*timeout_s = lv.v[LIMIT_TIMEOUT];
	return 0;
}

int engine_check_file(struct engine_client *c, enum engine_door door, enum engine_action a,
		      uint64_t bytes, struct engine_verdict *v)
{
	struct engine_call call = { .door = door, .action = a, .bytes = bytes };

	return engine_check(c, &call, v);
}

int engine_check_tool(struct engine_client *c, enum engine_door door, enum engine_action a,
		      struct engine_verdict *v)
{
	struct engine_call call = { .door = door, .action = a };

	return engine_check(c, &call, v);
}

int engine_check_action(struct engine_client *c, enum engine_door door, enum engine_action a,
			enum session_lang lang, struct engine_verdict *v)
{
	struct engine_call call = {
		.door = door, .action = a, .has_lang = true, .lang = engine_lang_of_session(lang)
	};

	return engine_check(c, &call, v);
}
