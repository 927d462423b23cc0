/* Sessions: a kernel in a sandbox, spoken to in newline-delimited JSON. */
#include "session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "kernels.h"
#include "sandbox/egress.h"
#include "session/events.h"
#include "session/changes.h"
#include "session/internal.h"
#include "session/workspace.h"
#include "util/buf.h"
#include "util/capture.h"
#include "util/utf8.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* Does "KEY=..." have the key of "KEY=..."? */
static bool same_key(const char *a, const char *b)
{
	size_t ka = strcspn(a, "="), kb = strcspn(b, "=");

	return ka == kb && !strncmp(a, b, ka);
}

void session_envp(const char *const *extra, bool inline_plots, const char **envp)
{
	session_envp_net(extra, inline_plots, SANDBOX_NET_LOOPBACK, envp);
}

void session_envp_net(const char *const *extra, bool inline_plots, enum sandbox_net net,
		      const char **envp)
{
	const char *const base[] = {
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" SANDBOX_HOME,
		"USER=user",
		"LANG=C.UTF-8",
		"TZ=UTC",
		"TMPDIR=/tmp",
		/* no PYTHONUNBUFFERED nor PYTHONDONTWRITEBYTECODE: every
		 * child would inherit them (compileall, importlib's tests);
		 * the drivers set their own behaviour inside */
		inline_plots ? "MPLBACKEND=module://codecell_inline" : "MPLBACKEND=Agg",
		"MPLCONFIGDIR=/tmp/.matplotlib",
		"XDG_CACHE_HOME=/tmp/.cache",
		NULL,
	};
	size_t n = 0;

	for (size_t i = 0; base[i]; i++)
		envp[n++] = base[i];
	/* before extra: a caller may point them elsewhere, or set NO_PROXY */
	for (size_t i = 0; net == SANDBOX_NET_ALLOWLIST && egress_env[i]; i++)
		envp[n++] = egress_env[i];
	for (size_t i = 0; extra && extra[i] && i < SESSION_MAX_ENV; i++) {
		size_t k;

		for (k = 0; k < n && !same_key(envp[k], extra[i]); k++)
			;
		envp[k] = extra[i];
		if (k == n)
			n++;
	}
	envp[n] = NULL;
}

const struct sandbox_limits codecell_default_limits = {
	.timeout_s = CODECELL_DEFAULT_TIMEOUT_S,
	.memory_bytes = CODECELL_DEFAULT_MEMORY,
	.pids = CODECELL_DEFAULT_PIDS,
	.file_size = CODECELL_DEFAULT_FILE_SIZE,
	.open_files = CODECELL_DEFAULT_OPEN_FILES,
	.tmp_bytes = CODECELL_DEFAULT_TMP,
	.workspace_bytes = CODECELL_DEFAULT_WORKSPACE,
	.cpus = CODECELL_DEFAULT_CPUS,
};

void session_opts_init(struct session_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->limits = codecell_default_limits;
	o->output_limit = CODECELL_DEFAULT_OUTPUT_LIMIT;
	o->result_limit = CODECELL_DEFAULT_RESULT_LIMIT;
	o->net = SANDBOX_NET_LOOPBACK;
	o->idle_timeout_s = CODECELL_DEFAULT_IDLE_S;
}

/* ---- starting and stopping the kernel ---- */

void session_close_channels(struct session *s)
{
	close_fd(&s->req_fd);
	close_fd(&s->out_fd);
	close_fd(&s->err_fd);
	close_fd(&s->ev_fd);
	event_reader_reset(&s->events);
}

/* Append n events (and dropped more) to l, at most EGRESS_EVENTS_MAX
 * kept: the rest are counted in l->dropped. */
static int egress_log_append(struct egress_log *l, const struct egress_event *ev, size_t n,
			     uint64_t dropped)
{
	size_t room = l->n < EGRESS_EVENTS_MAX ? EGRESS_EVENTS_MAX - l->n : 0;
	size_t take = n < room ? n : room;

	if (take) {
		struct egress_event *v = realloc(l->ev, (l->n + take) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memcpy(v + l->n, ev, take * sizeof(*v));
		l->ev = v;
		l->n += take;
	}
	l->dropped += dropped + (n - take);
	return 0;
}

/* A sandbox leaves the session: what its proxy decided stays for the
 * audit log (its proxy goes with it). */
static void keep_egress(struct session *s, struct sandbox *old)
{
	struct egress_log now = { 0 };

	if (old && sandbox_egress_events(old, &now) == 0 &&
	    egress_log_append(&s->egress_kept, now.ev, now.n, now.dropped) < 0)
		s->egress_kept.dropped += now.n + now.dropped;
	free(now.ev);
}

int session_egress_events(struct session *s, struct egress_log *out)
{
	struct egress_log now = { 0 };
	int r = 0;

	*out = s->egress_kept;
	memset(&s->egress_kept, 0, sizeof(s->egress_kept));
	if (s->sb && (r = sandbox_egress_events(s->sb, &now)) == 0)
		r = egress_log_append(out, now.ev, now.n, now.dropped);
	free(now.ev);
	return r;
}

int session_egress_final(struct session *s, struct egress_log *out)
{
	if (s->sb)
		sandbox_kill(s->sb);
	return session_egress_events(s, out);
}

/* Put sb in s->sb; the old one is returned, no other thread can reach
 * it any more. */
struct sandbox *session_swap_sb(struct session *s, struct sandbox *sb)
{
	struct sandbox *old;

	pthread_mutex_lock(&s->sb_lock);
	old = s->sb;
	s->sb = sb;
	s->shared_mem = s->shared_read_ns = s->rss_peak = 0;
	pthread_mutex_unlock(&s->sb_lock);
	keep_egress(s, old);
	return old;
}

static char **copy_env(const char *const *env)
{
	size_t n = 0;
	char **out;

	while (env && env[n])
		n++;
	out = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = strdup(env[i]))) {
			for (size_t k = 0; k < i; k++)
				free(out[k]);
			free(out);
			return NULL;
		}
	return out;
}

/* A session object for o, with owned copies of its strings; no kernel. */
struct session *session_alloc(const struct session_opts *o)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->opts = *o;
	s->req_fd = s->out_fd = s->err_fd = s->ev_fd = s->carry_upper = -1;
	s->opts.project_dir = NULL;
	pthread_mutex_init(&s->sb_lock, NULL);
	event_reader_init(&s->events, SESSION_EVENT_MAX);
	s->env = copy_env(o->env);
	s->files = copy_env(o->files);
	s->preload = o->preload ? strdup(o->preload) : NULL;
	s->workspace_dir = o->workspace_dir ? strdup(o->workspace_dir) : NULL;
	s->egress = o->egress ? strdup(o->egress) : NULL;
	s->opts.egress = NULL;
	s->opts.env = NULL;
	s->opts.files = NULL;
	s->opts.preload = NULL;
	s->opts.workspace_dir = NULL;
	s->opts.pool = NULL;
	if (!s->env || !s->files || (o->preload && !s->preload) ||
	    (o->workspace_dir && !s->workspace_dir) || (o->egress && !s->egress)) {
		session_free(s);
		return NULL;
	}
	return s;
}

bool session_expired(const struct session *s)
{
	return s->opts.idle_timeout_s > 0 &&
	       (double)(now_ns() - s->last_used_ns) / 1e9 > s->opts.idle_timeout_s;
}

struct changes_base *session_project(struct session *s)
{
	return s->project;
}

int session_upper_fd(const struct session *s)
{
	return s->sb ? sandbox_upper_fd(s->sb) : -ESRCH;
}

int session_process_open(const struct session *s, pid_t pid)
{
	return s->sb ? sandbox_process_open(s->sb, pid) : -ESRCH;
}

int session_workspace_fd(const struct session *s)
{
	return s->sb ? sandbox_workspace_fd(s->sb) : -ESRCH;
}

void session_workspace_owner(const struct session *s, uid_t *ret_uid, gid_t *ret_gid)
{
	if (s->sb) {
		sandbox_workspace_owner(s->sb, ret_uid, ret_gid);
	} else {
		/* no sandbox, no owner: -1 leaves a chown(2) a no-op */
		*ret_uid = geteuid() == 0 ? (uid_t)-1 : geteuid();
		*ret_gid = geteuid() == 0 ? (gid_t)-1 : getegid();
	}
}

int session_sync_workspace(struct session *s, char **ret_warning)
{
	*ret_warning = NULL;
	if (!s->sb)
		return -ESRCH;
	return ws_sync_out(sandbox_workspace_fd(s->sb), s->workspace_dir, ret_warning);
}

bool session_pooled(const struct session *s)
{
	return s->kind == KERNEL_CELL;
}

const char *session_preloaded(const struct session *s)
{
	return s->preloaded ? s->preloaded : "";
}

const char *session_preload_failed(const struct session *s)
{
	return s->preload_failed ? s->preload_failed : "";
}

void session_free(struct session *s)
{
	if (!s)
		return;
	session_close_channels(s);
	sandbox_free(session_swap_sb(s, NULL));
	free(s->egress_kept.ev);
	session_tpl_unref(s->tpl);
	pthread_mutex_destroy(&s->sb_lock);
	event_reader_release(&s->events);
	for (size_t i = 0; s->env && s->env[i]; i++)
		free(s->env[i]);
	free(s->env);
	for (size_t i = 0; s->files && s->files[i]; i++)
		free(s->files[i]);
	free(s->files);
	free(s->workspace_dir);
	free(s->egress);
	free(s->project);
	free(s->preload);
	free(s->preloaded);
	free(s->preload_failed);
	if (s->pool)
		session_pool_unref(s->pool);
	free(s);
}

/* ---- executing ---- */

/* A string of the error event, capped at limit as stdout is (head,
 * marker, tail): the cell can forge that event too. */
static char *error_str(json_t *o, const char *key, uint64_t limit)
{
	const char *v = json_string_value(json_object_get(o, key));
	size_t len = json_string_length(json_object_get(o, key)), n;
	struct capture c;
	char *t;

	if (!v)
		return strdup("");
	if (len <= limit)
		return strndup(v, len);
	capture_init(&c, limit);
	capture_add(&c, v, len, NULL);
	t = capture_text(&c, &n);
	capture_release(&c);
	return t ? t : strdup("");
}

/* The exchange finished: the cell ran (ok, error, or interrupted). */
static void fill_done(struct exchange *x, struct run_result *r)
{
	const char *st = json_string_value(json_object_get(x->answer, "status"));
	uint64_t lim = x->s->opts.output_limit;

	r->execution_count = (int)json_integer_value(json_object_get(x->answer, "execution_count"));
	r->status = st && !strcmp(st, "ok") ? RESULT_OK : RESULT_ERROR;
	if (x->error) {
		r->has_error = true;
		r->error_name = error_str(x->error, "name", lim);
		r->error_value = error_str(x->error, "value", lim);
		r->error_traceback = error_str(x->error, "traceback", lim);
	}
	/* our SIGINT at the deadline turned into a KeyboardInterrupt */
	if (x->interrupted) {
		r->status = RESULT_TIMEOUT;
		r->limits_hit |= SANDBOX_LIMIT_WALL;
	}
}

/* The workspace has no free block left: one-shot runs report "disk" from
 * the same test at exit (usage.c, sandbox_fill_exit). */
static bool workspace_full(struct session *s)
{
	struct statfs sf;
	int fd = s->sb ? sandbox_workspace_fd(s->sb) : -1;

	return fd >= 0 && fstatfs(fd, &sf) == 0 && sf.f_bavail == 0;
}

/* Does the cell's error say it hit a limit?  A session's kernel lives on
 * where a one-shot program would have died of SIGXFSZ or reported an
 * errno, and the kernels spell the errno as their language does: Python
 * "[Errno 27] File too large", node "EFBIG: file too large", bash "exit
 * status 153 (SIGXFSZ)".  (The cell can fake these: it only misleads
 * itself.) */
static bool error_says(const struct run_result *r, int err, const char *code, const char *sig)
{
	char py[32];
	const char *v = r->error_value;

	if (!r->has_error || !v)
		return false;
	snprintf(py, sizeof(py), "[Errno %d]", err);
	return !strncmp(v, py, strlen(py)) ||
	       (!strncmp(v, code, strlen(code)) && v[strlen(code)] == ':') ||
	       (sig && strstr(v, sig));
}

/* file_size and disk in limits_hit, as one-shot runs report them; disk
 * only when this cell filled the workspace (or was refused space), not
 * for every cell after it while the files stay. */
static void fill_disk_limits(struct session *s, bool full_before, struct run_result *r)
{
	bool enospc = error_says(r, ENOSPC, "ENOSPC", NULL);

	if (error_says(r, EFBIG, "EFBIG", "(SIGXFSZ)"))
		r->limits_hit |= SANDBOX_LIMIT_FILE_SIZE;
	if (workspace_full(s) && (!full_before || enospc))
		r->limits_hit |= SANDBOX_LIMIT_DISK;
}

/* The sandbox ended under the cell: say why, then restart. */
static void fill_ended(struct session *s, const struct sandbox_exit *e, struct run_result *r)
{
	run_result_set_exit(r, e);
	if (r->stopped)
		return; /* the caller ended it (SIGTERM to a shell): no restart */
	if (e->end == SANDBOX_END_EXITED)
		r->status = RESULT_ERROR; /* a kernel never exits on its own */
	if (!r->has_error) {
		r->has_error = true;
		r->error_name = strdup("KernelDied");
		if (asprintf(&r->error_value,
			     "the kernel %s; the session was restarted (variables are gone, files in the workspace are kept)",
			     r->status == RESULT_TIMEOUT	? "did not stop at the interrupt and was killed"
			     : r->status == RESULT_MEMORY_LIMIT ? "ran out of memory"
			     : r->status == RESULT_OUTPUT_LIMIT ? "wrote far too much output"
			     : r->has_exit_code		? "exited"
							: "was killed") < 0)
			r->error_value = NULL;
		r->error_traceback = strdup("");
	}
	r->restarted = true;
	(void)s;
}

/* results[], with the marker bundle when some were dropped; what the
 * event stream could not parse, as a warning; "output" in limits_hit when
 * anything (stdout, stderr, results) was cut. */
static void fill_results(struct exchange *x, struct run_result *r)
{
	const struct event_reader *ev = &x->counts;
	json_t *marker;

	result_budget_drop(&x->budget, ev->long_lines, ev->long_bytes);
	marker = result_budget_marker(&x->budget);
	if (marker) {
		if (!x->results)
			x->results = json_array();
		json_array_append_new(x->results, marker);
		r->results_truncated = true;
	}
	r->results = TAKE_PTR(x->results);
	if (ev->bad_lines && asprintf(&r->warning,
				      "%u event line%s from the kernel %s not JSON objects and %s dropped (did the code write to fd 4?)",
				      ev->bad_lines, ev->bad_lines == 1 ? "" : "s",
				      ev->bad_lines == 1 ? "was" : "were",
				      ev->bad_lines == 1 ? "was" : "were") < 0)
		r->warning = NULL;
	if (r->out_truncated || r->err_truncated || r->results_truncated)
		r->limits_hit |= SANDBOX_LIMIT_OUTPUT;
}

/* The session's peak memory so far, in bytes.  A cold kernel's is its
 * cgroup's peak.  A pooled kernel's cgroup holds only what the kernel
 * wrote since the fork (~3 MB): the template's pages it maps copy-on-write
 * are charged to the template.  They are the session's too (a cold kernel
 * would have them), so they are added, as mapped now: the cgroup's peak +
 * the pages still shared, the highest such sum so far.  Shared pages only
 * become the cell's (once written), so the sum can be high by what was
 * unshared since the peak, never low.  smaps_rollup costs ~1 ms with big
 * preloads: read at most once a second. */
static uint64_t memory_peak(struct session *s, const struct sandbox_usage *u)
{
	uint64_t now = now_ns(), shared, sum;

	if (!sandbox_is_cell(s->sb))
		return u->peak_memory;
	if (!s->shared_read_ns || now - s->shared_read_ns >= 1000000000ull) {
		if (sandbox_cell_shared_memory(s->sb, &shared) == 0)
			s->shared_mem = shared;
		s->shared_read_ns = now;
	}
	sum = u->peak_memory + s->shared_mem;
	if (sum > s->rss_peak)
		s->rss_peak = sum;
	return s->rss_peak;
}

int session_exec(struct session *s, const char *code, size_t len,
		 const struct session_exec_opts *eo, struct run_result *r)
{
	double timeout_s = eo && eo->timeout_s > 0 ? eo->timeout_s : s->opts.limits.timeout_s;
	struct exchange x;
	struct sandbox_exit e;
	json_t *req;
	uint64_t t0 = now_ns();
	struct sandbox_usage before, after;
	bool full_before;
	int id, k;

	memset(r, 0, sizeof(*r));
	if (!s->sb || sandbox_ended(s->sb)) {
		k = session_start_kernel(s, NULL);
		if (k < 0)
			return k;
	}
	full_before = workspace_full(s);
	id = ++s->next_id;
	/* limits hit before: as the last cell's end saw them */
	sandbox_usage_cheap(s->sb, &before);
	k = session_exchange_init(&x, s, id, eo ? eo->live_stdout : -1, eo ? eo->live_stderr : -1);
	if (k < 0)
		return k;
	x.stop_fd = eo ? eo->stop_fd : -1;
	x.on_result = eo ? eo->on_result : NULL;
	x.hangup_fd = eo ? eo->hangup_fd : -1;
	x.on_hangup = eo ? eo->on_hangup : NULL;
	x.userdata = eo ? eo->userdata : NULL;
	session_exchange_for_cell(&x);
	req = json_pack("{s:s, s:i, s:s%}", "op", "execute", "id", id, "code", code, len);
	k = req ? session_send_request(s, req) : -ENOMEM;
	json_decref(req);
	/* a kernel that died while idle (killed from outside): the pump
	 * below sees the sandbox end and the result says so */
	if (k == -EPIPE || k == -ECONNRESET)
		k = 0;
	if (k == 0)
		k = session_pump(s, &x, timeout_s, session_interrupt_cell, &e);
	/* before a "reap" request's exchange clears them */
	x.counts = s->events;
	if (k == 0) {
		r->from_session = true;
		if (e.end == SANDBOX_END_RUNNING) {
			/* counters only grow: what grew during this cell; CPU
			 * and memory: the cell's, the session's peak so far */
			sandbox_usage_so_far(s->sb, &after);
			r->cpu_ms = (double)(after.cpu_ns - before.cpu_ns) / 1e6;
			r->max_rss_kb = memory_peak(s, &after) / 1024;
			fill_done(&x, r);
			fill_disk_limits(s, full_before, r);
			if (after.cpu_throttled > before.cpu_throttled)
				r->limits_hit |= SANDBOX_LIMIT_CPUS;
			/* the count, not the bit: a session can hit it twice */
			if (after.pids_max_hits > before.pids_max_hits) {
				r->limits_hit |= SANDBOX_LIMIT_PIDS;
				/* a fork bomb's copies outlive the interrupt: kill
				 * them, and have the kernel reap its dead children
				 * (zombies still count against the pids limit) */
				if (sandbox_kill_strays(s->sb) == 0)
					(void)session_simple_op(s, "reap");
			}
		} else {
			fill_ended(s, &e, r);
		}
		capture_write_rest(&x.out, x.live_out);
		capture_write_rest(&x.err, x.live_err);
		(void)run_result_set_logs(r, &x.out, &x.err, &x.order);
		fill_results(&x, r);
		r->duration_ms = (double)(now_ns() - t0) / 1e6;
		r->limits_unenforced = sandbox_limits_unenforced(s->sb);
	}
	session_exchange_release(&x);
	/* before a restart takes the sandbox, and its proxy, away */
	if (eo && eo->egress_log)
		(void)session_egress_events(s, eo->egress_log);
	if (k == 0 && r->restarted)
		k = session_start_kernel(s, NULL);
	if (k == 0 && r->stopped) {
		/* the next exec, if any, starts a fresh kernel; the ended
		 * sandbox's workspace is kept for it (and for a sync) */
		session_close_channels(s);
		sandbox_stop(s->sb);
	}
	s->last_used_ns = now_ns();
	return k;
}

int session_complete(struct session *s, const char *code)
{
	json_t *answer = NULL;
	const char *st;
	int id, k;

	if (!s->sb)
		return -ESRCH;
	id = ++s->next_id;
	k = session_request(s, id,
			    json_pack("{s:s, s:i, s:s}", "op", "complete", "id", id, "code", code),
			    SESSION_CONTROL_TIMEOUT_S, &answer);
	if (k < 0)
		return k;
	st = json_string_value(json_object_get(answer, "status"));
	k = st && !strcmp(st, "complete") ? 1 : st && !strcmp(st, "incomplete") ? 0 : -EINVAL;
	json_decref(answer);
	return k;
}

void session_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

/* A name from the kernel fit for a terminal: printable UTF-8 (no escape
 * sequences), not too long, and a completion of text. */
static bool name_ok(const char *name, size_t len, const char *text)
{
	if (len > SESSION_NAME_MAX || strncmp(name, text, strlen(text)) != 0 ||
	    !utf8_valid(name, len, NULL))
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	return true;
}

int session_names(struct session *s, const char *text, char ***ret, size_t *ret_n)
{
	json_t *answer = NULL, *names, *v;
	char **out;
	size_t i, n = 0;
	int id, k;

	*ret = NULL;
	*ret_n = 0;
	if (s->opts.lang != SESSION_PYTHON)
		return -EOPNOTSUPP;
	if (!s->sb)
		return -ESRCH;
	id = ++s->next_id;
	k = session_request(s, id,
			    json_pack("{s:s, s:i, s:s}", "op", "names", "id", id, "text", text), 5,
			    &answer);
	if (k < 0)
		return k;
	names = json_object_get(answer, "names");
	out = calloc(SESSION_NAMES_MAX, sizeof(*out));
	if (!out) {
		json_decref(answer);
		return -ENOMEM;
	}
	json_array_foreach(names, i, v) {
		if (n == SESSION_NAMES_MAX)
			break;
		if (json_is_string(v) &&
		    name_ok(json_string_value(v), json_string_length(v), text) &&
		    !(out[n++] = strdup(json_string_value(v))))
			n--;
	}
	json_decref(answer);
	if (!n) {
		free(out);
		return 0;
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

void session_tpl_ref(struct pool_tpl *t)
{
	__atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
}

void session_tpl_unref(struct pool_tpl *t)
{
	if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL))
		return;
	/* no cell is left in its namespace: the init goes too */
	session_free(t->s);
	close_fd(&t->pidfd);
	free(t);
}

const struct sandbox *session_tpl_sandbox(const struct pool_tpl *t)
{
	return t->s->sb;
}

int session_tpl_fd(const struct pool_tpl *t)
{
	return t->s->req_fd;
}

void session_pool_ref(struct session_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->refs++;
	pthread_mutex_unlock(&p->lock);
}

void session_pool_unref(struct session_pool *p)
{
	unsigned left;

	pthread_mutex_lock(&p->lock);
	left = --p->refs;
	pthread_mutex_unlock(&p->lock);
	if (left)
		return;
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->want);
	pthread_cond_destroy(&p->buried);
	close_fd(&p->wake_fd);
	free(p->preload);
	free(p->preloaded);
	free(p->preload_failed);
	free(p);
}
