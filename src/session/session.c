/* Sessions: a kernel in a sandbox, spoken to in newline-delimited JSON.
 * This file holds the object: options and the kernel's environment, the
 * egress log kept across sandboxes, allocation and free, accessors, and
 * the pool's and template's reference counts a session holds.  Beside it
 * (docs/ARCHITECTURE.md): exchange.c, spawn.c, lifecycle.c, exec.c,
 * fork.c, and the warm pool's cells.c, template.c and pool.c; what they
 * share is in internal.h. */
#include "session/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/egress.h"
#include "session/internal.h"
#include "session/workspace.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* Does "KEY=..." have the key of "KEY=..."? */
static bool same_key(const char *a, const char *b)
{
	size_t ka = strcspn(a, "="), kb = strcspn(b, "=");

	return ka == kb && !strncmp(a, b, ka);
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
