/* A cell: a sandbox forked from a template instead of exec'd.
 *
 * A warm pool keeps a template: a sandbox whose program (a Python kernel
 * that has imported numpy, pandas, ...) keeps the capabilities it needs
 * in its own user namespace (CHILD_TEMPLATE).  This file is built into
 * cell.so, which the template loads (ctypes) from a sealed memfd.  For
 * each cell the supervisor sends the template a struct cell_spec and fds
 * (sandbox_new_cell); the template forks and calls codecell_cell_enter()
 * in the child, which
 *   - unshares mount, PID, IPC, UTS and network namespaces (the user
 *     namespace stays the template's: the cells' ids map like any
 *     sandbox's),
 *   - forks the cell's init (PID 1 of the new PID namespace) and exits,
 *   - in the init: sends the supervisor a pidfd of itself, waits to be
 *     moved into the cell's own cgroup, builds a fresh root from the
 *     template's read-only view of /usr and /etc exactly as a sandbox
 *     does, and forks the worker,
 *   - in the worker: drops every capability, sets no_new_privs, Landlock
 *     and seccomp, closes every fd but 0..2+n_pass_fds, and returns 0 to
 *     the template's code, which goes on as the session's kernel.
 * The pages of the preloaded modules stay shared copy-on-write with the
 * template.
 *
 * Nothing of other sessions passes through the template (no code, no
 * environment, no files), since every cell starts as a copy of its
 * memory: only limits and the network mode, in the spec. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "sandbox/seccomp.h"
#include "util/banned.h"

/* Static: the init and worker live on in this memory after the call. */
static struct sandbox_config g_cfg;
static struct rootfs g_fs;
static struct child_ctx g_c;

static void report(int sock, int step, int err)
{
	struct msg m = { MSG_SETUP_ERROR, step, err, 0 };

	(void)!send(sock, &m, sizeof(m), MSG_NOSIGNAL);
}

/* How many cgroup "tasks" fds of the cell, then as many of the
 * template's own, follow the report socket, stdio and pass fds of spec
 * (internal.h, struct cell_spec); -EINVAL for a bad spec.  The template
 * calls this before it forks. */
__attribute__((visibility("default"))) int codecell_cell_joins(const void *spec, size_t len)
{
	const struct cell_spec *sp = spec;

	if (len != sizeof(*sp) || sp->magic != CELL_SPEC_MAGIC || sp->size != sizeof(*sp) ||
	    sp->n_join > _CGROUP_CTRL_MAX)
		return -EINVAL;
	return (int)sp->n_join;
}

/* Called in a freshly forked child of the template (one thread).
 * fds: report socket, stdout, stderr, then spec->n_pass_fds more (the
 * join fds are not passed: the template closes them).
 * Returns 0 in the cell's worker; -errno if the spec is bad (nothing
 * done); exits otherwise. */
__attribute__((visibility("default"))) int codecell_cell_enter(const void *spec, size_t len,
							       const int *fds, int n_fds)
{
	const struct cell_spec *sp = spec;
	pid_t init;
	int r;

	if (len != sizeof(*sp) || sp->magic != CELL_SPEC_MAGIC || sp->size != sizeof(*sp) ||
	    sp->n_pass_fds > SANDBOX_MAX_PASS_FDS || n_fds != 3 + (int)sp->n_pass_fds ||
	    !sp->limits.tmp_bytes || !sp->limits.workspace_bytes)
		return -EINVAL;
	g_cfg.limits = sp->limits;
	g_cfg.net = sp->net == SANDBOX_NET_NONE ? SANDBOX_NET_NONE : SANDBOX_NET_LOOPBACK;
	g_cfg.n_pass_fds = sp->n_pass_fds;
	g_c = (struct child_ctx){ .cfg = &g_cfg,
				  .fs = &g_fs,
				  .seccomp = sandbox_seccomp_programs,
				  .set_groups = sp->set_groups != 0,
				  .mode = CHILD_CELL,
				  .fd_stdin = -1,
				  .fd_stdout = fds[1],
				  .fd_stderr = fds[2],
				  .fd_host_root = -1,
				  .sock = fds[0],
				  .parent_sock = -1,
				  .fd_script = -1 };
	for (unsigned i = 0; i < sp->n_pass_fds; i++)
		g_c.fd_pass[i] = fds[3 + i];
	child_ctx_set_rlimits(&g_c, &sp->limits, sp->unenforced);
	/* the op list allocates: here, before the init, which must not */
	r = rootfs_build(&g_fs, &g_cfg.limits,
			 &(struct rootfs_host){ .cgroup_version = (int)sp->cgroup_version,
						.cgroup_ctrls = sp->cgroup_ctrls,
						.cpus = sp->cpus,
						.n_cpus = sp->n_cpus < CPU_SETSIZE ? sp->n_cpus : 0,
						.in_template = true });
	if (r < 0) {
		report(g_c.sock, STEP_ROOTFS, -r);
		_exit(127);
	}
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET) < 0) {
		report(g_c.sock, STEP_CLONE, errno);
		_exit(127);
	}
	init = fork(); /* the template's child has one thread: atfork handlers may run */
	if (init < 0) {
		report(g_c.sock, STEP_FORK, errno);
		_exit(127);
	}
	if (init > 0)
		_exit(0); /* the init is reparented to the template's init */
	return sandbox_cell_main(&g_c);
}
