/* Spawning a pool's cell: a template (a sandbox of its own, cell.c in
 * it) forks it at our request; we make its cgroups, send the spec and
 * the fds, take its hello and finish the hand-shake as for any sandbox
 * (spawn.c). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/internal.h"
#include "util/fs.h"
#include "util/banned.h"

/* A cell shares its template's user namespace, so its host ids are the
 * template's: read them from the cell's init (it waits for "go", so the
 * pid is still its own; the pidfd check below makes sure). */
static int cell_ids(struct sandbox *sb)
{
	char path[64], text[2048], *u, *g;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)sb->pid);
	if (read_small_fileat(AT_FDCWD, path, text, sizeof(text)) < 0)
		return -ESRCH;
	u = strstr(text, "\nUid:");
	g = strstr(text, "\nGid:");
	if (!u || !g)
		return -EBADMSG;
	sb->ws_uid = (uid_t)strtoul(u + 5, NULL, 10);
	sb->ws_gid = (gid_t)strtoul(g + 5, NULL, 10);
	if (syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) < 0)
		return -ESRCH;
	return sb->ws_uid == 0 || sb->ws_gid == 0 ? -EPERM : 0;
}

/* The cell's first word: HELLO with its pidfd (or a setup error). */
static int await_hello(struct sandbox *sb, int *ret_step)
{
	struct msg m;
	int fd = -1, r = sandbox_recv_msg(sb->sock, &m, &fd);

	*ret_step = STEP_SYNC;
	if (r <= 0)
		return r == 0 ? -EPIPE : r;
	if (m.kind == MSG_SETUP_ERROR) {
		*ret_step = m.step;
		return -m.err;
	}
	if (m.kind != MSG_HELLO || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EBADMSG;
	}
	sb->pidfd = fd;
	sb->pid = pidfd_pid(fd);
	sb->cell = true;
	if (sb->pid <= 0)
		return -ESRCH;
	return geteuid() == 0 ? cell_ids(sb) : 0;
}

/* The "tasks" fds for a cell's fork (struct cell_spec): the cell's
 * cgroups, then the template's own, in fds (2 * _CGROUP_CTRL_MAX).
 * Returns how many of each (0 without v1 cgroups on both), or -errno. */
static int open_fork_joins(const struct sandbox *cell, const struct sandbox *tpl, int *fds)
{
	int n = cgroup_open_join_fds(&cell->cg, fds), m;

	if (n <= 0)
		return n;
	m = cgroup_open_join_fds(&tpl->cg, fds + n);
	if (m != n) {
		/* the template has no cgroup of its own to return to: let it
		 * fork where it is, as before (charged to the template) */
		for (int i = 0; i < n + (m > 0 ? m : 0); i++)
			close(fds[i]);
		return m < 0 ? m : 0;
	}
	return n;
}

/* Ask the template for the cell: the spec, the fds in one message. */
static int request_cell(struct sandbox *sb, const struct sandbox_config *cfg,
			const struct sandbox *tpl, int template_fd, struct cell_spec *spec)
{
	int fds[3 + SANDBOX_MAX_PASS_FDS + 2 * _CGROUP_CTRL_MAX], sv[2], n_join, r;
	size_t n = 3 + cfg->n_pass_fds;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	sb->sock = sv[0];
	fds[0] = sv[1];
	fds[1] = cfg->stdout_fd;
	fds[2] = cfg->stderr_fd;
	memcpy(fds + 3, cfg->pass_fds, sizeof(int) * cfg->n_pass_fds);
	n_join = tpl && sb->cg.version == CGROUP_V1 ? open_fork_joins(sb, tpl, fds + n) : 0;
	if (n_join < 0) {
		close(sv[1]);
		return n_join;
	}
	spec->n_join = (uint32_t)n_join;
	r = send_with_fds(template_fd, spec, sizeof(*spec), fds, n + 2 * (size_t)n_join);
	close(sv[1]);
	for (size_t i = n; i < n + 2 * (size_t)n_join; i++)
		close(fds[i]);
	return r;
}

int sandbox_new_cell(const struct sandbox_config *cfg, const struct sandbox *template_sb,
		     int template_fd, struct sandbox **ret, const char **ret_failed_step)
{
	bool privileged = geteuid() == 0;
	struct timeval tv = { SANDBOX_CELL_TIMEOUT_S, 0 };
	struct cell_spec spec = { .magic = CELL_SPEC_MAGIC, .size = sizeof(spec) };
	const char *alloc_step = NULL;
	struct sandbox *sb = NULL;
	int step = STEP_CGROUP, r;

	if (ret_failed_step)
		*ret_failed_step = NULL;
	if (cfg->project_dir || cfg->stdout_fd < 0 || cfg->stderr_fd < 0 ||
	    cfg->n_pass_fds > SANDBOX_MAX_PASS_FDS || !cfg->limits.tmp_bytes ||
	    !cfg->limits.workspace_bytes)
		return -EINVAL;
	(void)sandbox_global_init();
	r = sandbox_alloc(cfg, privileged, true, &sb, &alloc_step);
	if (r < 0) {
		if (ret_failed_step)
			*ret_failed_step = alloc_step;
		return r;
	}
	spec.limits = cfg->limits;
	spec.net = cfg->net;
	spec.set_groups = privileged;
	spec.n_pass_fds = (uint32_t)cfg->n_pass_fds;
	spec.unenforced = sb->unenforced;
	{
		struct rootfs_host host;

		sandbox_rootfs_host_of(&host);
		spec.cgroup_version = (uint32_t)host.cgroup_version;
		spec.cgroup_ctrls = host.cgroup_ctrls;
		sb->n_cpus = sandbox_cpus_take(cfg->limits.cpus, &sb->cpus, NULL);
		spec.cpus = sb->cpus;
		spec.n_cpus = sb->n_cpus;
	}
	r = sandbox_make_cgroup(sb, cfg);
	if (r == 0) {
		step = STEP_CLONE;
		r = request_cell(sb, cfg, template_sb, template_fd, &spec);
	}
	if (r == 0) {
		/* a template that hangs must not hang us */
		(void)setsockopt(sb->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		r = await_hello(sb, &step);
	}
	if (r == 0)
		r = sandbox_handshake_go(sb, NULL, &step);
	if (r < 0) {
		if (ret_failed_step)
			*ret_failed_step = sandbox_step_name(step);
		sandbox_free(sb);
		return r;
	}
	*ret = sb;
	return 0;
}
