/* Executing: a cell sent and pumped, its result filled (status, the
 * error event's strings capped, disk and file-size limits, the usage and
 * the session's peak memory, the kernel's death and restart, results and
 * their cuts); completion and names, the other requests a caller makes. */
#include "session/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "util/capture.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/banned.h"

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
		if (asprintf(
			    &r->error_value,
			    "the kernel %s; the session was restarted (variables are gone, files in the workspace are kept)",
			    r->status == RESULT_TIMEOUT
				    ? "did not stop at the interrupt and was killed"
			    : r->status == RESULT_MEMORY_LIMIT ? "ran out of memory"
			    : r->status == RESULT_OUTPUT_LIMIT ? "wrote far too much output"
			    : r->has_exit_code		       ? "exited"
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
	if (ev->bad_lines &&
	    asprintf(
		    &r->warning,
		    "%u event line%s from the kernel %s not JSON objects and %s dropped (did the code write to fd 4?)",
		    ev->bad_lines, ev->bad_lines == 1 ? "" : "s",
		    ev->bad_lines == 1 ? "was" : "were", ev->bad_lines == 1 ? "was" : "were") < 0)
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
	json_array_foreach (names, i, v) {
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
