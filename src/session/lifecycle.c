/* A session's life: a kernel taken from the pool (cold when the pool
 * has none to give), or a new one spawned, the old sandbox's workspace
 * carried over; new, interrupt and restart.  What a kernel is made of is
 * spawn.c's; the object is session.c's. */
#include "session/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/egress.h"
#include "session/workspace.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* Move the kernel (sandbox, channels, what it said at start) of src, a
 * kernel a pool made, into s; src is freed. */
static void kernel_move(struct session *s, struct session *src)
{
	(void)session_swap_sb(s, TAKE_PTR(src->sb));
	s->req_fd = TAKE_FD(src->req_fd);
	s->out_fd = TAKE_FD(src->out_fd);
	s->err_fd = TAKE_FD(src->err_fd);
	s->ev_fd = TAKE_FD(src->ev_fd);
	s->kind = KERNEL_CELL;
	s->warmed = src->warmed;
	s->tpl = TAKE_PTR(src->tpl);
	free(s->preloaded);
	s->preloaded = TAKE_PTR(src->preloaded);
	free(s->preload_failed);
	s->preload_failed = TAKE_PTR(src->preload_failed);
	session_free(src);
}

/* A kernel from the pool gets the session's environment (the template
 * had only the common one). */
static int send_env(struct session *s)
{
	json_t *env;
	int id, r;

	bool proxy = s->opts.net == SANDBOX_NET_ALLOWLIST;

	if ((!s->env || !s->env[0]) && !proxy)
		return 0;
	env = json_object();
	for (size_t i = 0; env && proxy && egress_env[i]; i++) {
		const char *eq = strchr(egress_env[i], '=');
		char *key = strndup(egress_env[i], (size_t)(eq - egress_env[i]));

		if (key)
			json_object_set_new(env, key, json_string(eq + 1));
		free(key);
	}
	for (size_t i = 0; env && s->env && s->env[i]; i++) {
		const char *eq = strchr(s->env[i], '=');
		char *key = eq ? strndup(s->env[i], (size_t)(eq - s->env[i])) : NULL;

		if (key)
			json_object_set_new(env, key, json_string(eq + 1));
		free(key);
	}
	id = ++s->next_id;
	(void)sandbox_set_cpu_weight(s->sb, CONTROL_CPU_WEIGHT);
	r = session_request(s, id, json_pack("{s:s, s:i, s:o}", "op", "init", "id", id, "env", env),
			    SESSION_CONTROL_TIMEOUT_S, NULL);
	(void)sandbox_set_cpu_weight(s->sb, 0);
	return r;
}

/* Take a ready kernel from the pool: the old workspace (a restart) or
 * the caller's inputs (a new session) are copied in.  -EAGAIN: the pool
 * has none to give (closed, or its template is broken). */
static int start_from_pool(struct session *s, char **ret_error)
{
	struct sandbox *old;
	struct pool_tpl *old_tpl;
	struct session *k;
	int r = session_pool_take(s->pool, s->for_fork, &k);

	if (r < 0)
		return r;
	old = session_swap_sb(s, NULL);
	old_tpl = TAKE_PTR(s->tpl);
	session_close_channels(s);
	/* killed, not waited for: tearing down a kernel's address space
	 * took most of a restart (~10 ms); a thread of the pool reaps it
	 * after the workspace is copied (its fd outlives the processes) */
	if (old)
		sandbox_kill(old);
	kernel_move(s, k);
	/* the pool's kernels are made with lo only; the proxy comes with
	 * the session that takes one, before any code of its runs */
	if (s->opts.net == SANDBOX_NET_ALLOWLIST) {
		r = sandbox_egress_start(s->sb, s->egress);
		if (r < 0) {
			if (ret_error &&
			    asprintf(ret_error, "cannot %s: %s", EGRESS_STEP, strerror(-r)) < 0)
				*ret_error = NULL;
			if (old)
				session_pool_bury(s->pool, old, old_tpl);
			else
				session_tpl_unref(old_tpl);
			return r;
		}
	}
	r = session_fill_workspace(s, old ? sandbox_workspace_fd(old) : -1, ret_error);
	if (old)
		session_pool_bury(s->pool, old, old_tpl);
	else
		session_tpl_unref(old_tpl);
	if (r == 0)
		r = send_env(s);
	return r;
}

/* A new kernel; the old sandbox's workspace, if any, carried over. */
int session_start_kernel(struct session *s, char **ret_error)
{
	struct sandbox *old;
	int r;

	if (s->pool && s->kind != KERNEL_TEMPLATE) {
		r = start_from_pool(s, ret_error);
		if (r != -EAGAIN)
			goto done;
		s->kind = KERNEL_COLD; /* no pool to give one: start cold */
	}
	old = session_swap_sb(s, NULL);
	session_close_channels(s);
	if (old)
		sandbox_stop(old);
	s->carry_upper = old ? sandbox_upper_fd(old) : -1;
	r = session_spawn_kernel(s, old ? sandbox_workspace_fd(old) : -1, ret_error);
	s->carry_upper = -1;
	sandbox_free(old);
	session_tpl_unref(TAKE_PTR(s->tpl)); /* a cold kernel hangs on no template */
	if (r == 0)
		r = session_await_ready(s, ret_error);
done:
	if (r < 0) {
		sandbox_free(session_swap_sb(s, NULL));
		session_close_channels(s);
	}
	return r;
}

/* for_fork: the copy's kernel of a fork, which takes a warmed one from
 * the pool when there is one. */
int session_start(const struct session_opts *o, bool for_fork, struct session **ret,
		  char **ret_error)
{
	struct session *s;
	int r;

	if (ret_error)
		*ret_error = NULL;
	if (o->lang != SESSION_PYTHON && o->preload && *o->preload) {
		if (ret_error)
			*ret_error = strdup("--preload is for Python sessions");
		return -EINVAL;
	}
	s = session_alloc(o);
	if (!s)
		return -ENOMEM;
	if (o->project_dir) {
		s->project = calloc(1, sizeof(*s->project));
		r = s->project ? changes_base_init(s->project, o->project_dir) : -ENOMEM;
		if (r < 0) {
			if (ret_error && asprintf(ret_error, "cannot use the project '%s': %s",
						  o->project_dir, strerror(-r)) < 0)
				*ret_error = NULL;
			session_free(s);
			return r;
		}
		s->opts.project_dir = s->project->project;
	}
	r = ws_prepare_dir(s->workspace_dir, ret_error);
	if (r < 0) {
		session_free(s);
		return r;
	}
	/* A project's overlay is made as the sandbox is: cold only.  So is
	 * an ordinary user's allowlist network: a pooled kernel is made with
	 * lo only and gets its proxy's socket later from a thread that
	 * enters its network namespace, which takes root; a cold start's
	 * init makes the socket itself (egress.h). */
	if (o->pool && !o->project_dir && session_pool_matches(o->pool, o) &&
	    (o->net != SANDBOX_NET_ALLOWLIST || geteuid() == 0)) {
		s->pool = o->pool;
		session_pool_ref(s->pool);
	}
	s->for_fork = for_fork;
	r = session_start_kernel(s, ret_error);
	s->for_fork = false; /* its restarts are not forks */
	if (r < 0) {
		session_free(s);
		return r;
	}
	s->last_used_ns = now_ns();
	*ret = s;
	return 0;
}

int session_new(const struct session_opts *o, struct session **ret, char **ret_error)
{
	return session_start(o, false, ret, ret_error);
}

int session_interrupt(struct session *s)
{
	int r;

	pthread_mutex_lock(&s->sb_lock);
	r = s->sb ? sandbox_interrupt(s->sb) : -ESRCH;
	pthread_mutex_unlock(&s->sb_lock);
	return r;
}

int session_restart(struct session *s)
{
	return session_start_kernel(s, NULL);
}
