/* A session's kernel in a new sandbox: its program and environment, the
 * sandbox (cold, a pool's template, or a cell forked from one), the
 * workspace filled, and the wait for its ready event.  lifecycle.c
 * decides when; the pool's makers (cells.c) call it for their cells. */
#include "session/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernels.h"
#include "sandbox/egress.h"
#include "session/workspace.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/banned.h"

static int kernel_argv(const struct session *s, const char **argv)
{
	/* a cell's program is its template's, forked: no argv */
	int n = 0;

	if (s->opts.lang == SESSION_JAVASCRIPT) {
		argv[n++] = "/usr/bin/node";
		argv[n++] = "-e";
		argv[n++] = kernel_node_kernel_js;
		argv[n] = NULL;
		return n;
	}
	argv[n++] = "/usr/bin/python3";
	if (s->opts.lang == SESSION_BASH) {
		/* the bash kernel's driver imports nothing of site's */
		argv[n++] = "-S";
		argv[n++] = "-s";
		argv[n++] = "-u";
	} else {
		/* the Python kernel runs user code: a plain interpreter, as
		 * `python3` on the host, whose flags its children inherit
		 * (multiprocessing passes -S -s on); site and the user site
		 * directory (pip install --user) work.  -u: stdout and stderr
		 * unbuffered, as the cells' output streams; no child inherits
		 * it */
		argv[n++] = "-u";
	}
	argv[n++] = "-c";
	argv[n++] = s->opts.lang == SESSION_BASH ? kernel_bash_kernel_py : kernel_python_kernel_py;
	if (s->preload && *s->preload) {
		argv[n++] = "--preload";
		argv[n++] = s->preload;
	}
	if (s->kind == KERNEL_TEMPLATE)
		argv[n++] = "--template";
	argv[n] = NULL;
	return n;
}

/* The sandbox for s->kind, not started, as s->sb. */
static int make_sandbox(struct session *s, struct sandbox_config *cfg, const char **ret_step)
{
	struct sandbox *sb = NULL;
	int r = s->kind == KERNEL_CELL ? sandbox_new_cell(cfg, session_tpl_sandbox(s->tpl),
							  session_tpl_fd(s->tpl), &sb, ret_step)
				       : sandbox_new(cfg, &sb, ret_step);

	if (r == 0)
		(void)session_swap_sb(s, sb);
	return r;
}

/* The new kernel's workspace: from_ws's files (a restart: the previous
 * sandbox's workspace), or else the caller's inputs, once. */
int session_fill_workspace(struct session *s, int from_ws, char **ret_error)
{
	struct ws_owner o = { .chown = geteuid() == 0 };
	char *msg = NULL;
	int r;

	sandbox_workspace_owner(s->sb, &o.uid, &o.gid);
	if (from_ws >= 0 && s->project) {
		/* the new overlay shows the project: only the changes go over */
		struct change_list l;
		char why[256];

		if (s->carry_upper >= 0 && changes_list(s->carry_upper, s->project, &l) == 0) {
			(void)changes_copy(s->carry_upper, sandbox_workspace_fd(s->sb), &l, &o, why,
					   sizeof(why));
			change_list_release(&l);
		}
		return 0;
	}
	if (from_ws >= 0) {
		/* a restart goes on with what could be carried over */
		(void)ws_copy_between(from_ws, sandbox_workspace_fd(s->sb), &o);
		return 0;
	}
	if (s->filled)
		return 0;
	r = ws_fill(sandbox_workspace_fd(s->sb), &o, s->workspace_dir,
		    (const char *const *)s->files, NULL, &msg);
	if (r < 0) {
		if (ret_error)
			*ret_error = msg;
		else
			free(msg);
		return r;
	}
	s->filled = true;
	return 0;
}

/* Make the sandbox with the kernel, copy from_ws (a previous sandbox's
 * workspace) in if given, start it.  The sandbox is s->sb after. */
int session_spawn_kernel(struct session *s, int from_ws, char **ret_error)
{
	const char *argv[10], *envp[SESSION_MAX_ENV + 24], *step = NULL;
	struct sandbox_config cfg = { 0 };
	int req[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, ev[2] = { -1, -1 };
	int cell_so = -1;
	int r;

	/* a template reads spawn messages with fds: datagrams, not a stream */
	if (socketpair(AF_UNIX,
		       (s->kind == KERNEL_TEMPLATE ? SOCK_SEQPACKET : SOCK_STREAM) | SOCK_CLOEXEC,
		       0, req) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(ev, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	if (s->kind == KERNEL_TEMPLATE) {
		cell_so = sealed_memfd("codecell-cell", kernel_cell_so, kernel_cell_so_len);
		if (cell_so < 0) {
			r = cell_so;
			goto out;
		}
	}
	kernel_argv(s, argv);
	session_envp_net((const char *const *)s->env, s->opts.lang == SESSION_PYTHON,
			 s->kind == KERNEL_TEMPLATE ? SANDBOX_NET_LOOPBACK : s->opts.net, envp);
	cfg.argv = argv;
	cfg.envp = envp;
	cfg.stdin_fd = -1;
	cfg.stdout_fd = out[1];
	cfg.stderr_fd = err[1];
	cfg.pass_fds[0] = req[1];
	cfg.pass_fds[1] = ev[1];
	cfg.n_pass_fds = 2;
	if (cell_so >= 0)
		cfg.pass_fds[cfg.n_pass_fds++] = cell_so;
	cfg.limits = s->opts.limits;
	cfg.limits.timeout_s = 0; /* per exchange, not per sandbox */
	cfg.net = s->opts.net;
	cfg.strict = s->opts.strict;
	cfg.project_dir = s->project ? s->project->project : NULL;
	cfg.template = s->kind == KERNEL_TEMPLATE;
	/* bash survives a fork bomb's clean-up (the driver starts it as a
	 * process group leader; the bomb's copies are in its group) */
	cfg.keep_group_leaders = s->opts.lang == SESSION_BASH;
	/* the pool's own work first: a template, and a cell until it is
	 * ready (pool_make_kernel lowers it then), must not wait behind
	 * the busy sessions they are made for */
	if (s->kind != KERNEL_COLD)
		cfg.cpu_weight = POOL_CPU_WEIGHT;
	r = make_sandbox(s, &cfg, &step);
	if (r == 0 && s->kind != KERNEL_TEMPLATE && s->opts.net == SANDBOX_NET_ALLOWLIST &&
	    (r = sandbox_egress_start(s->sb, s->egress)) < 0)
		step = EGRESS_STEP;
	if (r < 0) {
		if (ret_error && asprintf(ret_error, "cannot %s: %s",
					  step ? step : "create the sandbox", strerror(-r)) < 0)
			*ret_error = NULL;
		goto out;
	}
	r = session_fill_workspace(s, from_ws, ret_error);
	if (r < 0)
		goto out;
	r = sandbox_start(s->sb);
	if (r < 0)
		goto out;
	s->req_fd = TAKE_FD(req[0]);
	s->out_fd = TAKE_FD(out[0]);
	s->err_fd = TAKE_FD(err[0]);
	s->ev_fd = TAKE_FD(ev[0]);
out:
	for (int i = 0; i < 2; i++) {
		close_fd(&req[i]);
		close_fd(&out[i]);
		close_fd(&err[i]);
		close_fd(&ev[i]);
	}
	close_fd(&cell_so);
	return r;
}

/* Wait for the kernel's ready event (its preloads imported). */
int session_await_ready(struct session *s, char **ret_error)
{
	struct exchange x;
	struct sandbox_exit e;
	json_t *pre;
	int r = session_exchange_init(&x, s, 0, -1, -1);

	if (r == 0)
		r = session_pump(s, &x, SESSION_START_TIMEOUT_S, NULL, &e);
	if (r == 0 && !x.finished) {
		size_t len;
		char *err = capture_text(&x.err, &len);

		r = -ECHILD;
		if (ret_error && asprintf(ret_error, "the kernel did not start%s%s",
					  err && *err ? ": " : "", err ? err : "") < 0)
			*ret_error = NULL;
		free(err);
	}
	if (r == 0) {
		struct buf b;
		size_t i;
		json_t *v;

		buf_init(&b, 4096);
		pre = json_object_get(x.answer, "preloaded");
		json_array_foreach (pre, i, v)
			(void)buf_printf(&b, "%s%s", b.len ? "," : "", json_string_value(v));
		free(s->preloaded);
		s->preloaded = buf_detach(&b, NULL);
		{
			const char *key;

			json_object_foreach (json_object_get(x.answer, "failed"), key, v)
				(void)buf_printf(&b, "%s%s: %s", b.len ? "; " : "", key,
						 json_string_value(v) ? json_string_value(v) : "?");
			free(s->preload_failed);
			s->preload_failed = buf_detach(&b, NULL);
		}
	}
	session_exchange_release(&x);
	return r;
}
