/* Spawning a sandbox: prepare the child's context, clone into the new
 * namespaces (and, on v2, the cgroup), map the ids, then the hand-shake
 * with the init up to READY (sandbox.c has the object, spawn_cell.c a
 * pool's cells). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/internal.h"
#include "sandbox/seccomp.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/banned.h"

static int write_maps(pid_t pid, uid_t host_uid, gid_t host_gid, bool privileged)
{
	char path[64], line[64];
	int r;

	snprintf(line, sizeof(line), "%d %u 1\n", SANDBOX_UID, (unsigned)host_uid);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	r = write_string_file(path, line);
	if (r < 0)
		return r;
	/* An ordinary user must give up setgroups() before mapping gids
	 * (user_namespaces(7)); root keeps it so the child can drop its
	 * supplementary groups. */
	if (!privileged) {
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		r = write_string_file(path, "deny");
		if (r < 0)
			return r;
	}
	snprintf(line, sizeof(line), "%d %u 1\n", SANDBOX_GID, (unsigned)host_gid);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	return write_string_file(path, line);
}


/* One heap block holding a copy of a NULL-terminated string vector:
 * pointers first, then the strings.  free() once. */
static char **copy_strv(const char *const *v)
{
	size_t n = 0, bytes = 0;
	char **out, *p;

	for (; v[n]; n++)
		bytes += strlen(v[n]) + 1;
	out = malloc((n + 1) * sizeof(char *) + bytes);
	if (!out)
		return NULL;
	p = (char *)(out + n + 1);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]) + 1;

		memcpy(p, v[i], l);
		out[i] = p;
		p += l;
	}
	out[n] = NULL;
	return out;
}

static int validate(const struct sandbox_config *cfg)
{
	if (!cfg->argv || !cfg->argv[0] || cfg->argv[0][0] != '/' || !cfg->envp)
		return -EINVAL;
	if (cfg->stdout_fd < 0 || cfg->stderr_fd < 0 || cfg->n_pass_fds > SANDBOX_MAX_PASS_FDS)
		return -EINVAL;
	if (!cfg->limits.tmp_bytes || !cfg->limits.workspace_bytes)
		return -EINVAL;
	if (cfg->project_dir && (cfg->project_dir[0] != '/' || cfg->template))
		return -EINVAL;
	return 0;
}

#define SANDBOX_CLONE_FLAGS \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD)

/* fork semantics (no new stack); the cgroup namespace comes later, once
 * the child is in its cgroup.  With cgroup_fd (v2), clone3 starts the
 * child inside that cgroup: no migration, none of its cost (cgroup.h).
 * The network namespace is made here for a template; a program's early
 * worker makes it on another CPU, and the init joins it (child.c,
 * worker_prepare): a third of a millisecond less in this call, which the
 * supervisor waits for. */
static pid_t clone_child(int cgroup_fd, bool net_later, int *ret_pidfd)
{
	unsigned long flags = SANDBOX_CLONE_FLAGS | (net_later ? 0 : CLONE_NEWNET);
	int pidfd = -1;
	long pid;

	if (cgroup_fd >= 0) {
		struct clone_args args = { .flags = flags | CLONE_INTO_CGROUP,
					   .pidfd = (uintptr_t)&pidfd,
					   .exit_signal = SIGCHLD,
					   .cgroup = (uint64_t)cgroup_fd };

		pid = syscall(SYS_clone3, &args, sizeof(args));
	} else {
		pid = syscall(SYS_clone, flags | SIGCHLD, NULL, &pidfd, NULL, NULL);
	}
	if (pid > 0)
		*ret_pidfd = pidfd;
	return (pid_t)pid;
}

/* v1, after "G": make and limit the cgroups while the init builds the
 * root on another CPU, then hand it their "tasks" files; it joins them
 * before the root's cgroup mounts and so before the program (child.c,
 * join_late).  A cgroup that cannot be made fails the run here, with
 * the init still waiting for them. */
static int late_cgroups(struct sandbox *sb, const struct sandbox_config *cfg, int *ret_step)
{
	int join[_CGROUP_CTRL_MAX], n_join, r;

	*ret_step = STEP_CGROUP;
	r = sandbox_make_cgroup(sb, cfg);
	if (r < 0)
		return r;
	n_join = cgroup_open_join_fds(&sb->cg, join);
	if (n_join < 0)
		return n_join;
	*ret_step = STEP_SYNC;
	r = send_with_fds(sb->sock, "c", 1, join, (size_t)n_join);
	for (int i = 0; i < n_join; i++)
		close(join[i]);
	return r;
}

/* cgroup, go, then READY with the workspace fd.  late_cfg: the v1
 * cgroups are not made yet (late_cgroups). */
int sandbox_handshake_go(struct sandbox *sb, const struct sandbox_config *late_cfg, int *ret_step)
{
	struct msg m;
	int fd = -1, r;
	/* zeroed: with late cgroups none are sent (n_join 0), which gcc
	 * -O1 (the sanitized build) cannot see */
	int join[_CGROUP_CTRL_MAX] = { 0 }, n_join = 0;

	*ret_step = STEP_CGROUP;
	if (late_cfg) {
		/* late_cgroups(), after "G" */
	} else if (sb->cg.version == CGROUP_V1) {
		/* the child joins itself, with these (cgroup.h) */
		n_join = cgroup_open_join_fds(&sb->cg, join);
		if (n_join < 0)
			return n_join;
	} else if (sb->cg.version == CGROUP_V2 && !sb->born_in_cgroup) {
		r = cgroup_attach(&sb->cg, sb->pid);
		if (r < 0)
			return r;
	}
	/* Pin the init to its CPUs now, while it waits for "go": a sleeping
	 * task takes the new mask at once, where the init pinning itself
	 * (child.c, which stays for cells) waited for the kernel to migrate
	 * it, mostly on a busy host.  Its own call is then a no-op.  A hint
	 * like that one: a failure is no reason to stop. */
	if (sb->n_cpus && !sb->lone_pin)
		(void)sched_setaffinity(sb->pid, sizeof(sb->cpus), &sb->cpus);
	*ret_step = STEP_SYNC;
	r = send_with_fds(sb->sock, late_cfg ? "G" : "g", 1, join, (size_t)n_join);
	for (int i = 0; i < n_join; i++)
		close(join[i]);
	if (r < 0)
		return r;
	/* EPIPE: the init failed in its set-up; its report names the step */
	if (late_cfg && (r = late_cgroups(sb, late_cfg, ret_step)) < 0 && r != -EPIPE)
		return r;
	/* while the init builds the root: the first read of the usage (at
	 * the end of a one-shot run, on its way out) then opens nothing */
	cgroup_open_stats(&sb->cg);
	r = sandbox_recv_msg(sb->sock, &m, &fd);
	if (r > 0 && m.kind == MSG_EGRESS && fd >= 0 && sb->egress_fd < 0) {
		sb->egress_fd = fd;
		fd = -1;
		r = sandbox_recv_msg(sb->sock, &m, &fd);
	}
	if (r > 0 && m.kind == MSG_UPPER && fd >= 0 && sb->upper_fd < 0) {
		sb->upper_fd = fd;
		fd = -1;
		r = sandbox_recv_msg(sb->sock, &m, &fd);
	}
	if (r <= 0)
		return r == 0 ? -EPIPE : r;
	if (m.kind == MSG_SETUP_ERROR) {
		*ret_step = m.step;
		return -m.err;
	}
	if (m.kind != MSG_READY || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EBADMSG;
	}
	sb->ws_fd = fd;
	/* autostart: the init forks the program right after READY */
	sb->start_ns = now_ns();
	return 0;
}

/* The parent's half of the hand-shake: maps, cgroup, go, then READY. */
static int handshake(struct sandbox *sb, const struct sandbox_config *late_cfg, bool privileged,
		     int *ret_step)
{
	int r;

	*ret_step = STEP_UID_MAP;
	r = write_maps(sb->pid, sb->ws_uid, sb->ws_gid, privileged);
	if (r < 0)
		return r;
	return sandbox_handshake_go(sb, late_cfg, ret_step);
}

/* What the child gets: its own copies of the strings (freed by the
 * caller with child_ctx_release()), the op list, fds and rlimits. */
static int child_ctx_init(struct child_ctx *c, const struct sandbox_config *cfg,
			  const struct rootfs *fs, unsigned unenforced, bool privileged)
{
	*c = (struct child_ctx){ .cfg = cfg,
				 .fs = fs,
				 .seccomp = sandbox_seccomp_programs,
				 .set_groups = privileged,
				 .keep_group_leaders = cfg->keep_group_leaders,
				 .fd_stdin = cfg->stdin_fd,
				 .fd_stdout = cfg->stdout_fd,
				 .fd_stderr = cfg->stderr_fd,
				 .sock = -1,
				 .parent_sock = -1,
				 .fd_lower = -1,
				 .fd_host_root = -1,
				 .fd_script = cfg->script_name ? cfg->script_fd : -1,
				 .mode = cfg->template ? CHILD_TEMPLATE : CHILD_EXEC };
	for (size_t i = 0; i < cfg->n_pass_fds; i++)
		c->fd_pass[i] = cfg->pass_fds[i];
	c->argv = copy_strv(cfg->argv);
	c->envp = copy_strv(cfg->envp);
	c->cwd = cfg->cwd ? strdup(cfg->cwd) : NULL;
	if (sched_getaffinity(0, sizeof(c->cpus_allowed), &c->cpus_allowed) < 0)
		CPU_ZERO(&c->cpus_allowed); /* the early worker then keeps the pin */
	child_ctx_set_rlimits(c, &cfg->limits, unenforced);
	return !c->argv || !c->envp || (cfg->cwd && !c->cwd) ? -ENOMEM : 0;
}

static void child_ctx_release(struct child_ctx *c)
{
	if (c->fd_lower >= 0)
		close(c->fd_lower);
	free((void *)c->argv);
	free((void *)c->envp);
	free((void *)c->cwd);
}

/* cgroup, socketpair, clone, hand-shake.  On failure *ret_step names the
 * step. */
static int spawn(struct sandbox *sb, struct child_ctx *c, bool privileged, int *ret_step)
{
	/* v1: the cgroups are made while the init builds the root
	 * (late_cgroups); v2 clones into its cgroup, made first */
	bool late = g_cgroups.version == CGROUP_V1 && c->cfg->late_cgroups;
	bool net_later = c->mode == CHILD_EXEC;
	int sv[2], r;

	*ret_step = STEP_CGROUP;
	if (!late && (r = sandbox_make_cgroup(sb, c->cfg)) < 0)
		return r;
	*ret_step = STEP_CLONE;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	sb->sock = sv[0];
	c->sock = sv[1];
	c->parent_sock = sv[0];
	{
		/* a child that hangs in its set-up must not hang us */
		struct timeval tv = { SANDBOX_SETUP_TIMEOUT_S, 0 };

		(void)setsockopt(sb->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	{
		int cgfd = cgroup_open_dir(&sb->cg);

		sb->pid = cgfd >= 0 ? clone_child(cgfd, net_later, &sb->pidfd) : -1;
		if (sb->pid == 0)
			sandbox_child_main(c);
		sb->born_in_cgroup = sb->pid > 0;
		if (cgfd >= 0)
			close(cgfd);
		/* no v2 cgroup, or a kernel without clone3 (5.7): clone, and
		 * the child is moved in the hand-shake */
		if (sb->pid < 0)
			sb->pid = clone_child(-1, net_later, &sb->pidfd);
		if (sb->pid == 0)
			sandbox_child_main(c);
	}
	close(sv[1]);
	/* ENOSPC: user.max_user_namespaces (or another namespace count) is
	 * exhausted or 0; EPERM/EACCES: this user may not create them
	 * (sysctl or AppArmor).  The caller words it. */
	if (sb->pid < 0)
		return -errno;
	return handshake(sb, late ? c->cfg : NULL, privileged, ret_step);
}

int sandbox_new(const struct sandbox_config *cfg, struct sandbox **ret,
		const char **ret_failed_step)
{
	bool privileged = geteuid() == 0;
	const char *alloc_step = NULL;
	struct sandbox *sb = NULL;
	struct child_ctx c;
	struct rootfs fs;
	struct rootfs_host host;
	int step = STEP_CLONE, r;

	if (ret_failed_step)
		*ret_failed_step = NULL;
	r = validate(cfg);
	if (r < 0)
		return r;
	(void)sandbox_global_init();
	r = sandbox_alloc(cfg, privileged, false, &sb, &alloc_step);
	if (r < 0) {
		if (ret_failed_step)
			*ret_failed_step = alloc_step;
		return r;
	}
	sandbox_rootfs_host_of(&host);
	/* a template keeps every CPU: its cells inherit its affinity and
	 * are pinned each to their own */
	if (!cfg->template)
		sb->n_cpus = sandbox_cpus_take(cfg->limits.cpus, &sb->cpus, &sb->lone_pin);
	host.cpus = sb->cpus;
	host.n_cpus = sb->n_cpus;
	r = rootfs_build(&fs, &cfg->limits, &host);
	if (r < 0) {
		sandbox_free(sb);
		return r;
	}
	sb->autostart = cfg->autostart;
	r = child_ctx_init(&c, cfg, &fs, sb->unenforced, privileged);
	c.lone_pin = sb->lone_pin;
	if (r == 0 && cfg->project_dir) {
		step = STEP_PROJECT;
		r = project_lower_open(cfg->project_dir, privileged, sb->ws_uid, sb->ws_gid,
				       &c.fd_lower, &c.lower_is_mount);
		c.has_lower = r == 0;
	}
	if (r == 0)
		r = spawn(sb, &c, privileged, &step);
	child_ctx_release(&c);
	rootfs_release(&fs);
	if (r < 0) {
		if (ret_failed_step)
			*ret_failed_step = sandbox_step_name(step);
		sandbox_free(sb);
		return r;
	}
	*ret = sb;
	return 0;
}
