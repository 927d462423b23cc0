/* The supervisor side: prepare, clone, map ids, place in the cgroup,
 * hand over, then watch (epoll over the report socket, the init's pidfd,
 * a timerfd, the OOM eventfd and the caller's output channels). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/egress.h"
#include "sandbox/ids.h"
#include "sandbox/internal.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

struct sandbox {
	pid_t pid;
	int pidfd;
	int sock;
	int ws_fd;
	int upper_fd; /* a project's upper layer, or -1 */
	/* SANDBOX_NET_ALLOWLIST: the proxy's listening socket, made by the
	 * init in the sandbox's network namespace; -1 once the proxy has it
	 * (or for a pooled cell, whose proxy comes with its session) */
	int egress_fd;
	struct cgroup cg;
	unsigned unenforced;
	double timeout_s;
	uint64_t cpu_limit_s;
	int timer_fd; /* the deadline of sandbox_wait(), kept from call to call */
	/* sandbox_wait()'s epoll set, kept while it holds the same fds: a
	 * session waits thousands of times on the same sandbox, and building
	 * the set each time cost a dozen system calls per execution */
	int ep;
	bool ep_ok;
	bool stop_watched, hangup_watched; /* this call's, in ep */
	struct sandbox_usage last_usage; /* sandbox_usage_cheap() */
	size_t ep_nch;
	int ep_ch[SANDBOX_MAX_CHANNELS];
	dev_t ep_dev[SANDBOX_MAX_CHANNELS];
	ino_t ep_ino[SANDBOX_MAX_CHANNELS];
	bool in_grace; /* the deadline passed; the caller asked for grace */
	uid_t ws_uid;
	gid_t ws_gid;
	int id_lock_fd; /* holds ws_uid/ws_gid of the id range (ids.h), or -1 */
	uint64_t start_ns;
	bool started;
	bool autostart; /* the init starts the program itself (sandbox_config) */
	bool reaped;
	bool short_slice; /* sandbox_set_cpu_weight gave the threads the boost's slice */
	bool sock_eof; /* the init closed its end: it is exiting */
	bool template_init; /* CHILD_TEMPLATE: reaps until no child is left */
	bool cell; /* not our child: watched through the pidfd */
	struct egress *egress; /* SANDBOX_NET_ALLOWLIST's proxy, or NULL */
	bool born_in_cgroup; /* v2: cloned into its cgroup (CLONE_INTO_CGROUP) */
	pid_t reaper; /* sandbox_start_reaper()'s process, or 0 */
	/* its wait's other half: it starts on the cgroups only once this
	 * is closed (or we are gone), so that our own end of the run reads
	 * them first; -1 without a reaper */
	int reaper_hold;
	enum sandbox_end kill_cause; /* valid when killed */
	bool killed;
	int kill_reason;
	bool got_exit;
	int wstatus;
	int failed_step;
	int failed_err;
	struct rusage ru;
	cpu_set_t cpus; /* pinned to under a CPU quota (cpus.c) */
	unsigned n_cpus;
	bool lone_pin; /* child_ctx.lone_pin */
};

static const char *const step_names[_STEP_MAX] = {
	[STEP_CLONE] = "create namespaces",
	[STEP_UID_MAP] = "write the uid/gid map",
	[STEP_CGROUP] = "join the cgroup",
	[STEP_SYNC] = "synchronize with the supervisor",
	[STEP_CGROUP_NS] = "create the cgroup namespace",
	[STEP_MOUNT_PRIVATE] = "make mounts private",
	[STEP_ROOTFS] = "build the root filesystem",
	[STEP_LOOPBACK] = "bring up loopback",
	[STEP_EGRESS] = "open the egress proxy's socket",
	[STEP_HOSTNAME] = "set the hostname",
	[STEP_PIVOT_ROOT] = "pivot_root into the new root",
	[STEP_TIME_NS] = "create the time namespace",
	[STEP_WORKSPACE] = "open the workspace",
	[STEP_SCRIPT] = "write the script into the workspace",
	[STEP_FORK] = "fork the program",
	[STEP_SIGNALS] = "reset signals",
	[STEP_SETSID] = "start a new session",
	[STEP_FDS] = "set up file descriptors",
	[STEP_IDS] = "switch to the sandbox user",
	[STEP_RLIMITS] = "set resource limits",
	[STEP_CHDIR] = "change to the working directory",
	[STEP_CAPS] = "drop capabilities",
	[STEP_NO_NEW_PRIVS] = "set no_new_privs",
	[STEP_LANDLOCK] = "apply Landlock",
	[STEP_SECCOMP] = "load the seccomp filter",
	[STEP_EXEC] = "execute the program",
	[STEP_PROJECT] = "mount the project's overlay",
	[STEP_NET_NS] = "create the network namespace",
	[STEP_NET_JOIN] = "join the program's network namespace",
};

const char *sandbox_step_name(int step)
{
	return step >= 0 && step < _STEP_MAX ? step_names[step] : "set up the sandbox";
}

const char *sandbox_limit_name(enum sandbox_limit bit)
{
	switch (bit) {
	case SANDBOX_LIMIT_WALL: return "wall_time";
	case SANDBOX_LIMIT_MEMORY: return "memory";
	case SANDBOX_LIMIT_PIDS: return "pids";
	case SANDBOX_LIMIT_CPU: return "cpu_time";
	case SANDBOX_LIMIT_FILE_SIZE: return "file_size";
	case SANDBOX_LIMIT_OPEN_FILES: return "open_files";
	case SANDBOX_LIMIT_DISK: return "disk";
	case SANDBOX_LIMIT_OUTPUT: return "output";
	case SANDBOX_LIMIT_CPUS: return "cpu";
	case SANDBOX_LIMIT_LANDLOCK: return "landlock";
	}
	return NULL;
}

/* Process-wide, probed once: the host's cgroups and the id range. */
static struct cgroup_host g_cgroups;
static struct id_range g_ids;
static int g_ids_err;
static pthread_once_t g_probed = PTHREAD_ONCE_INIT;
/* sandbox_defer_sweep(): the stale-cgroup sweep waits for
 * sandbox_free_detached()'s child */
static bool g_sweep_deferred;

static void probe_cgroups(void)
{
	struct buf self;

	g_ids_err = ids_load(&g_ids);
	buf_init(&self, 65536);
	(void)buf_read_file(&self, "/proc/self/cgroup");
	cgroup_host_probe("/sys/fs/cgroup", buf_str(&self), getenv("CODECELL_CGROUP"), &g_cgroups);
	buf_release(&self);
	if (!g_sweep_deferred)
		cgroup_host_sweep(&g_cgroups);
}

void sandbox_defer_sweep(void)
{
	g_sweep_deferred = true;
}

/* Once per process, whatever the thread (a server calls from many). */
static int global_init(void)
{
	return pthread_once(&g_probed, probe_cgroups) == 0 ? 0 : -EINVAL;
}

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

static int recv_msg(int sock, struct msg *m, int *ret_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	if (n != sizeof(*m))
		return -EBADMSG;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && ret_fd)
			memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
	return 1;
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
	if (cfg->stdout_fd < 0 || cfg->stderr_fd < 0 ||
	    cfg->n_pass_fds > SANDBOX_MAX_PASS_FDS)
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

static int make_cgroup(struct sandbox *sb, const struct sandbox_config *cfg);

/* v1, after "G": make and limit the cgroups while the init builds the
 * root on another CPU, then hand it their "tasks" files; it joins them
 * before the root's cgroup mounts and so before the program (child.c,
 * join_late).  A cgroup that cannot be made fails the run here, with
 * the init still waiting for them. */
static int late_cgroups(struct sandbox *sb, const struct sandbox_config *cfg, int *ret_step)
{
	int join[_CGROUP_CTRL_MAX], n_join, r;

	*ret_step = STEP_CGROUP;
	r = make_cgroup(sb, cfg);
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
static int handshake_go(struct sandbox *sb, const struct sandbox_config *late_cfg, int *ret_step)
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
	r = recv_msg(sb->sock, &m, &fd);
	if (r > 0 && m.kind == MSG_EGRESS && fd >= 0 && sb->egress_fd < 0) {
		sb->egress_fd = fd;
		fd = -1;
		r = recv_msg(sb->sock, &m, &fd);
	}
	if (r > 0 && m.kind == MSG_UPPER && fd >= 0 && sb->upper_fd < 0) {
		sb->upper_fd = fd;
		fd = -1;
		r = recv_msg(sb->sock, &m, &fd);
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
	return handshake_go(sb, late_cfg, ret_step);
}

static unsigned compute_unenforced(const struct sandbox_limits *l)
{
	unsigned want = 0, can = cgroup_host_enforceable(&g_cgroups);

	if (l->memory_bytes)
		want |= SANDBOX_LIMIT_MEMORY;
	if (l->pids)
		want |= SANDBOX_LIMIT_PIDS;
	if (l->cpus > 0)
		want |= SANDBOX_LIMIT_CPUS;
	return want & ~can;
}

/* What a new root shows of the cgroups a sandbox gets (make_cgroup). */
static void rootfs_host_of(struct rootfs_host *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->cgroup_version = g_cgroups.version;
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++)
		if (g_cgroups.parent[c])
			ret->cgroup_ctrls |= 1u << c;
}

static int make_cgroup(struct sandbox *sb, const struct sandbox_config *cfg)
{
	static unsigned counter; /* atomic: a server makes sandboxes from many threads */
	const struct sandbox_limits *l = &cfg->limits;
	char name[64];
	int r;

	if (g_cgroups.version == CGROUP_NONE)
		return 0;
	snprintf(name, sizeof(name), "sb-%d-%u", (int)getpid(),
		 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
	r = cgroup_create(&g_cgroups, name, l->memory_bytes, l->pids, l->cpus, &sb->cg);
	/* a weight is a preference, not a limit: a host without the knob
	 * runs the sandbox all the same */
	if (r == 0 && cfg->cpu_weight)
		(void)cgroup_set_cpu_weight(&sb->cg, cfg->cpu_weight);
	return r;
}

/* The scheduler slice of a sandbox's threads while its weight is raised
 * (0.1 ms, the shortest there is; the default is 0.7 ms times 1 + log2 of
 * the CPUs).  A woken thread with a shorter slice than the one running
 * preempts it at once; otherwise it waits for the running one's slice to
 * end, checked at the next tick (4 ms at HZ=250).  Under the soak (64
 * clients on 2 cores) it halved a fork's restore's wait for a CPU (1.2 to
 * 0.6 ms at the median) and took 0.4 ms off the snapshot's (2.7 to 2.3). */
#define SANDBOX_BOOST_SLICE_NS 100000

int sandbox_set_cpu_weight(struct sandbox *sb, unsigned weight)
{
	int r = cgroup_set_cpu_weight(&sb->cg, weight ? weight : 100);
	bool want_short = r == 0 && weight > 100;

	/* a short slice only with the weight it belongs to; back to the
	 * default whatever became of the weight, and only when it was
	 * changed (a pool's kernel comes down from its starting weight
	 * without one: no read of the cgroup's threads for that) */
	if (want_short || sb->short_slice) {
		(void)cgroup_set_cpu_slice(&sb->cg, want_short ? SANDBOX_BOOST_SLICE_NS : 0);
		sb->short_slice = want_short;
	}
	return r;
}

/* The host ids of a new sandbox.  Root maps each cold sandbox to an id
 * of its own from the range (ids.h), unless the caller names one; a
 * cell's are the template's, read once it says hello; an ordinary user
 * can only map to themselves. */
static int take_ids(struct sandbox *sb, const struct sandbox_config *cfg, bool privileged,
		    bool cell, const char **ret_step)
{
	int r;

	if (!privileged || cell) {
		sb->ws_uid = geteuid();
		sb->ws_gid = getegid();
		return 0;
	}
	if (cfg->host_uid || cfg->host_gid) {
		sb->ws_uid = cfg->host_uid;
		sb->ws_gid = cfg->host_gid;
		return sb->ws_uid == 0 || sb->ws_gid == 0 ? -EINVAL : 0;
	}
	*ret_step = "find the host id range for sandboxes (a 'codecell' entry in /etc/subuid and "
		    "/etc/subgid, which scripts/setup.sh adds, or CODECELL_ID_RANGE=BASE:COUNT)";
	if (g_ids_err < 0)
		return g_ids_err;
	r = ids_take(&g_ids, &sb->ws_uid, &sb->ws_gid, &sb->id_lock_fd);
	*ret_step = r == 0 ? NULL
		    : r == -EAGAIN ? "take a host uid from the range (every id is in use)"
				   : "take a host uid from the range (with the lock file " IDS_LOCK_FILE ")";
	return r;
}

/* A sandbox object for cfg, nothing spawned yet.  -EINVAL for a root
 * caller mapping to uid/gid 0, -EOPNOTSUPP under --strict when a limit
 * cannot be enforced, -ENOENT/-EAGAIN when root has no host id to give
 * it (*ret_step says why). */
static int sandbox_alloc(const struct sandbox_config *cfg, bool privileged, bool cell,
			 struct sandbox **ret, const char **ret_step)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));
	int r;

	if (!sb)
		return -ENOMEM;
	*sb = (struct sandbox){ .pid = -1, .pidfd = -1, .sock = -1, .ws_fd = -1, .upper_fd = -1,
				 .egress_fd = -1, .reaper_hold = -1,
				.timer_fd = -1, .ep = -1, .timeout_s = cfg->limits.timeout_s,
				.cpu_limit_s = cfg->limits.cpu_seconds, .id_lock_fd = -1,
				.cg = { .oom_efd = -1 } };
	sb->unenforced = compute_unenforced(&cfg->limits);
	sb->template_init = cfg->template;
	if (cfg->strict && sb->unenforced) {
		*ret_step = "enforce every limit (--strict)";
		free(sb);
		return -EOPNOTSUPP;
	}
	r = take_ids(sb, cfg, privileged, cell, ret_step);
	if (r < 0) {
		free(sb);
		return r;
	}
	*ret = sb;
	return 0;
}

/* What the child gets: its own copies of the strings (freed by the
 * caller with child_ctx_release()), the op list, fds and rlimits. */
static int child_ctx_init(struct child_ctx *c, const struct sandbox_config *cfg,
			  const struct rootfs *fs, unsigned unenforced, bool privileged)
{
	*c = (struct child_ctx){ .cfg = cfg, .fs = fs, .seccomp = sandbox_seccomp_programs,
				 .set_groups = privileged, .keep_group_leaders = cfg->keep_group_leaders,
				 .fd_stdin = cfg->stdin_fd,
				 .fd_stdout = cfg->stdout_fd, .fd_stderr = cfg->stderr_fd,
				 .sock = -1, .parent_sock = -1, .fd_lower = -1, .fd_host_root = -1,
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
	if (!late && (r = make_cgroup(sb, c->cfg)) < 0)
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
	(void)global_init();
	r = sandbox_alloc(cfg, privileged, false, &sb, &alloc_step);
	if (r < 0) {
		if (ret_failed_step)
			*ret_failed_step = alloc_step;
		return r;
	}
	rootfs_host_of(&host);
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
	int fd = -1, r = recv_msg(sb->sock, &m, &fd);

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
	    cfg->n_pass_fds > SANDBOX_MAX_PASS_FDS ||
	    !cfg->limits.tmp_bytes || !cfg->limits.workspace_bytes)
		return -EINVAL;
	(void)global_init();
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

		rootfs_host_of(&host);
		spec.cgroup_version = (uint32_t)host.cgroup_version;
		spec.cgroup_ctrls = host.cgroup_ctrls;
		sb->n_cpus = sandbox_cpus_take(cfg->limits.cpus, &sb->cpus, NULL);
		spec.cpus = sb->cpus;
		spec.n_cpus = sb->n_cpus;
	}
	r = make_cgroup(sb, cfg);
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
		r = handshake_go(sb, NULL, &step);
	if (r < 0) {
		if (ret_failed_step)
			*ret_failed_step = sandbox_step_name(step);
		sandbox_free(sb);
		return r;
	}
	*ret = sb;
	return 0;
}

pid_t sandbox_pid(const struct sandbox *sb)
{
	return sb->pid;
}

int sandbox_pidfd(const struct sandbox *sb)
{
	return sb->pidfd;
}

const char *sandbox_net_name(enum sandbox_net n)
{
	return n == SANDBOX_NET_NONE ? "none" : n == SANDBOX_NET_ALLOWLIST ? "allowlist" : "loopback";
}

int sandbox_egress_start(struct sandbox *sb, const char *allow)
{
	if (sb->egress)
		return -EEXIST;
	if (sb->reaped || sb->pidfd < 0)
		return -ESRCH;
	return egress_start(sb->pidfd, TAKE_FD(sb->egress_fd), allow, &sb->egress);
}

int sandbox_egress_events(struct sandbox *sb, struct egress_log *out)
{
	return egress_take_events(sb->egress, &out->ev, &out->n, &out->dropped);
}

bool sandbox_is_cell(const struct sandbox *sb)
{
	return sb->cell;
}

int sandbox_workspace_fd(const struct sandbox *sb)
{
	return sb->ws_fd;
}

int sandbox_upper_fd(const struct sandbox *sb)
{
	return sb->upper_fd;
}

void sandbox_workspace_owner(const struct sandbox *sb, uid_t *ret_uid, gid_t *ret_gid)
{
	*ret_uid = sb->ws_uid;
	*ret_gid = sb->ws_gid;
}

unsigned sandbox_limits_unenforced(const struct sandbox *sb)
{
	return sb->unenforced;
}

int sandbox_start(struct sandbox *sb)
{
	if (sb->started)
		return -EALREADY;
	sb->started = true;
	if (sb->autostart)
		return 0; /* the init did not wait for it; the start was READY */
	sb->start_ns = now_ns();
	if (send(sb->sock, "s", 1, MSG_NOSIGNAL) != 1)
		return -errno;
	return 0;
}

static void kill_tree(struct sandbox *sb, enum sandbox_end cause, int reason)
{
	if (!sb->killed) {
		sb->killed = true;
		sb->kill_cause = cause;
		sb->kill_reason = reason;
	}
	if (sb->reaped)
		return;
	/* SIGKILL to the namespace's init takes every process in it
	 * (pid_namespaces(7)); cgroup.kill also catches any process that
	 * could be in the cgroup outside the namespace. */
	(void)cgroup_kill(&sb->cg);
	if (sb->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
}

void sandbox_kill(struct sandbox *sb)
{
	kill_tree(sb, SANDBOX_END_KILLED, 0);
}

void sandbox_kill_for(struct sandbox *sb, int reason)
{
	kill_tree(sb, SANDBOX_END_KILLED, reason);
}

static void reap(struct sandbox *sb);

void sandbox_stop(struct sandbox *sb)
{
	kill_tree(sb, SANDBOX_END_KILLED, 0);
	reap(sb);
}

int sandbox_interrupt(struct sandbox *sb)
{
	if (sb->reaped || sb->pidfd < 0)
		return -ESRCH;
	if (syscall(SYS_pidfd_send_signal, sb->pidfd, SIGINT, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* The children of pid, appended to q (bounded).  -1 if unreadable. */
static int children_of(pid_t pid, pid_t *q, size_t *n, size_t max)
{
	char path[64], text[16384], *save = NULL;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (read_small_fileat(AT_FDCWD, path, text, sizeof(text)) < 0)
		return -1;
	for (char *t = strtok_r(text, " \n", &save); t && *n < max; t = strtok_r(NULL, " \n", &save))
		q[(*n)++] = (pid_t)strtol(t, NULL, 10);
	return 0;
}

static bool is_zombie(pid_t pid)
{
	char path[64], st[512], *rp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small_fileat(AT_FDCWD, path, st, sizeof(st)) < 0)
		return true; /* gone */
	rp = strrchr(st, ')');
	return rp && rp[1] == ' ' && rp[2] == 'Z';
}

/* Is every process in the sandbox but the init and the worker dead?
 * The worker is the init's first child: /proc lists children in the
 * order they joined, and the worker is never reparented.  The others are
 * the worker's children and the orphans the init adopted; their own
 * children are killed with them by the init's sweep. */
static bool strays_dead(const struct sandbox *sb)
{
	pid_t q[4096];
	size_t n = 0;

	if (children_of(sb->pid, q, &n, ARRAY_SIZE(q)) < 0 || n == 0)
		return true;
	/* the init's other children must be gone, not only dead: it reaps
	 * them itself, and a zombie it has not reaped yet still shows in the
	 * next cell's /proc (the CPU quota can hold the init back for a
	 * period after a fork bomb used it up) */
	if (n > 1)
		return false;
	/* then the worker's (q[0] is the worker) */
	if (children_of(q[0], q, &n, ARRAY_SIZE(q)) < 0)
		return true;
	for (size_t i = 1; i < n; i++) {
		if (!is_zombie(q[i]))
			return false;
	}
	return true;
}

int sandbox_kill_strays(struct sandbox *sb)
{
	if (sb->reaped || sb->pidfd < 0)
		return -ESRCH;
	if (syscall(SYS_pidfd_send_signal, sb->pidfd, SIGUSR1, NULL, 0) < 0)
		return -errno;
	/* return once they are dead (up to 2 s): the next cell must not
	 * see them run.  Dead children of the worker stay zombies until the
	 * worker reaps them; that is the caller's business. */
	for (int i = 0; i < 2000; i++) {
		struct timespec ts = { 0, 1000000 };

		if (strays_dead(sb))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

void sandbox_usage_so_far(struct sandbox *sb, struct sandbox_usage *ret)
{
	/* an OOM kill ends a sandbox through the notification (v1) or shows
	 * in fill_exit(): a running sandbox has none to report */
	struct cgroup_stats cs;

	cgroup_read_stats(&sb->cg, false, &cs);
	ret->cpu_ns = cs.cpu_ns;
	ret->peak_memory = cs.peak_memory;
	ret->limits_hit = cs.pids_max_hits ? SANDBOX_LIMIT_PIDS : 0;
	ret->pids_max_hits = cs.pids_max_hits;
	ret->cpu_throttled = cs.cpu_throttled;
	if (cs.cpu_throttled)
		ret->limits_hit |= SANDBOX_LIMIT_CPUS;
	sb->last_usage = *ret;
}

void sandbox_usage_cheap(struct sandbox *sb, struct sandbox_usage *ret)
{
	*ret = sb->last_usage;
	ret->cpu_ns = cgroup_read_cpu(&sb->cg);
}

bool sandbox_ended(const struct sandbox *sb)
{
	return sb->reaped;
}

static void reap(struct sandbox *sb)
{
	int st;

	if (sb->reaped || sb->pid <= 0)
		return;
	if (sb->cell) {
		/* the template's init reaps it: wait until it has exited */
		struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };

		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		sb->reaped = true;
		return;
	}
	while (wait4(sb->pid, &st, __WALL, &sb->ru) < 0 && errno == EINTR)
		;
	sb->reaped = true;
}

/* Take the init's reports.  True once the socket is at EOF: the init
 * closed its files on the way out (its namespaces go next, then the
 * pidfd fires). */
static bool drain_reports(struct sandbox *sb)
{
	struct msg m;
	int r;

	if (sb->sock_eof)
		return true;
	while ((r = recv_msg(sb->sock, &m, NULL)) > 0) {
		if (m.kind == MSG_EXITED) {
			sb->got_exit = true;
			sb->wstatus = m.wstatus;
		} else if (m.kind == MSG_SETUP_ERROR && !sb->failed_err) {
			sb->failed_step = m.step;
			sb->failed_err = m.err;
		}
	}
	if (r == 0)
		sb->sock_eof = true;
	return r == 0;
}

/* sandbox_wait_opts.return_at_report: is the result final already?
 * The init (CHILD_EXEC) reports the program's end only once it has
 * killed and reaped everything else in the namespace, then exits: with
 * its report in, its end of the socket and every channel closed, no
 * process of the sandbox runs or can write.  What is left, the init's
 * own exit, the namespaces' teardown and the cgroups, changes nothing
 * the result holds; the usage is read from the cgroup, so without the
 * cpuacct and memory cgroups (whose figures the init's rusage would
 * otherwise replace) the wait goes on to the reap. */
static bool final_at_report(const struct sandbox *sb)
{
	return sb->got_exit && sb->sock_eof && !sb->killed && !sb->cell && !sb->template_init &&
	       !sb->failed_err &&
	       sb->cg.path[CGROUP_CTRL_CPUACCT] && sb->cg.path[CGROUP_CTRL_MEMORY];
}

enum { EV_SOCK = 100, EV_PIDFD, EV_TIMER, EV_OOM, EV_STOP, EV_HANGUP };

static int ep_add(int ep, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* Arm the sandbox's timer to fire in t seconds (made on first use).  It
 * stays armed between calls: an expiry nobody waited for is harmless, and
 * re-arming drops it (timerfd_settime zeroes the expiry count). */
static int arm_timer(struct sandbox *sb, double t)
{
	struct itimerspec its = { 0 };

	if (sb->timer_fd < 0) {
		sb->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (sb->timer_fd < 0)
			return -errno;
	}
	its.it_value.tv_sec = (time_t)t;
	its.it_value.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	return timerfd_settime(sb->timer_fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* Read one chunk from a channel.  Returns bytes read, 0 at EOF. */
static ssize_t pump(struct sandbox *sb, const struct sandbox_wait_opts *o, size_t i)
{
	char chunk[SANDBOX_READ_CHUNK];
	ssize_t n = read(o->channel_fds[i], chunk, sizeof(chunk));

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : 0;
	if (n > 0 && o->on_output) {
		int k = o->on_output(o->userdata, (int)i, chunk, (size_t)n);

		if (k > 0)
			kill_tree(sb, SANDBOX_END_KILLED, k);
	}
	return n;
}

static void fill_exit(struct sandbox *sb, struct sandbox_exit *e)
{
	struct cgroup_stats cs = { 0 };
	struct statfs sf;
	uint64_t ru_ns = (uint64_t)(sb->ru.ru_utime.tv_sec + sb->ru.ru_stime.tv_sec) * 1000000000ull +
			 (uint64_t)(sb->ru.ru_utime.tv_usec + sb->ru.ru_stime.tv_usec) * 1000ull;

	memset(e, 0, sizeof(*e));
	e->duration_ns = now_ns() - sb->start_ns;
	cgroup_read_stats(&sb->cg, true, &cs);
	/* the larger: the cgroup also counts processes nobody waited for,
	 * and the init's rusage (its reaped children included) can be ahead
	 * of the cgroup's counter by the last slices of a killed program
	 * (a run stopped by --cpu-time 1 read 0.89 s from cpuacct) */
	e->cpu_ns = cs.cpu_ns > ru_ns ? cs.cpu_ns : ru_ns;
	e->peak_memory = cs.peak_memory ? cs.peak_memory : (uint64_t)sb->ru.ru_maxrss * 1024;
	if (cs.oom_kills)
		e->limits_hit |= SANDBOX_LIMIT_MEMORY;
	if (cs.pids_max_hits)
		e->limits_hit |= SANDBOX_LIMIT_PIDS;
	/* the quota held the tree back at least once */
	if (cs.cpu_throttled)
		e->limits_hit |= SANDBOX_LIMIT_CPUS;
	if (sb->ws_fd >= 0 && fstatfs(sb->ws_fd, &sf) == 0 && sf.f_bavail == 0)
		e->limits_hit |= SANDBOX_LIMIT_DISK;
	/* a step after the fork failed: the worker reported it, then exited
	 * 127 (so an EXITED report follows; the failure is what counts) */
	if (sb->failed_err) {
		e->end = SANDBOX_END_SETUP_FAILED;
		e->failed_step = sandbox_step_name(sb->failed_step);
		e->error = sb->failed_err;
		return;
	}
	if (sb->got_exit && WIFSIGNALED(sb->wstatus)) {
		e->signal = WTERMSIG(sb->wstatus);
		/* RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard */
		if (e->signal == SIGXCPU ||
		    (e->signal == SIGKILL && sb->cpu_limit_s &&
		     e->cpu_ns >= sb->cpu_limit_s * 1000000000ull))
			e->limits_hit |= SANDBOX_LIMIT_CPU;
		if (e->signal == SIGXFSZ)
			e->limits_hit |= SANDBOX_LIMIT_FILE_SIZE;
	}
	if (sb->killed) {
		e->end = sb->kill_cause;
		e->kill_reason = sb->kill_reason;
		e->signal = SIGKILL;
		if (sb->kill_cause == SANDBOX_END_TIMEOUT)
			e->limits_hit |= SANDBOX_LIMIT_WALL;
		if (sb->kill_cause == SANDBOX_END_MEMORY)
			e->limits_hit |= SANDBOX_LIMIT_MEMORY;
		return;
	}
	if (!sb->got_exit) {
		/* init died without a report: only an outside kill does that */
		e->end = SANDBOX_END_SIGNALED;
		e->signal = SIGKILL;
		return;
	}
	if (WIFSIGNALED(sb->wstatus)) {
		/* the OOM killer's SIGKILL under a memory limit */
		if (e->signal == SIGKILL && cs.oom_kills)
			e->end = SANDBOX_END_MEMORY;
		else
			e->end = SANDBOX_END_SIGNALED;
		return;
	}
	e->end = SANDBOX_END_EXITED;
	e->exit_code = WEXITSTATUS(sb->wstatus);
}

/* The deadline passed: kill, or (sessions) let the caller interrupt and
 * re-arm for the grace it asks for; the second expiry kills. */
static void on_timer(struct sandbox *sb, const struct sandbox_wait_opts *o, int ep)
{
	double grace = 0;
	uint64_t v;

	(void)ep;
	if (read(sb->timer_fd, &v, sizeof(v)) != sizeof(v))
		return; /* not expired after all (re-armed meanwhile) */
	if (o->on_deadline && !sb->in_grace)
		grace = o->on_deadline(o->userdata);
	if (grace > 0) {
		sb->in_grace = true;
		if (arm_timer(sb, grace) == 0)
			return;
	}
	kill_tree(sb, SANDBOX_END_TIMEOUT, 0);
}

static int wait_loop(struct sandbox *sb, const struct sandbox_wait_opts *o, int ep)
{
	bool open_ch[SANDBOX_MAX_CHANNELS];
	size_t n_open = o->n_channels;
	uint64_t drain_deadline = 0;

	for (size_t i = 0; i < o->n_channels; i++)
		open_ch[i] = true;
	while (!sb->reaped || n_open > 0) {
		struct epoll_event evs[16];
		int timeout = -1, n;

		if (o->return_at_report && n_open == 0 && final_at_report(sb))
			break;

		/* a kill asked for (an output flood, say) wins over the awaited
		 * event that came in the same batch: the caller must see this
		 * call end in the kill, or the next call is blamed for it */
		if (o->until && !sb->reaped && !sb->killed && o->until(o->userdata))
			return 1;
		if (sb->reaped) {
			/* every process is gone; the pipes are at EOF or about
			 * to be: never hang on one */
			if (!drain_deadline)
				drain_deadline = now_ns() + 2000000000ull;
			if (now_ns() >= drain_deadline)
				break;
			timeout = 100;
		}
		n = epoll_wait(ep, evs, (int)ARRAY_SIZE(evs), timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (int k = 0; k < n; k++) {
			uint64_t tag = evs[k].data.u64;
			uint64_t v;

			if (tag < SANDBOX_MAX_CHANNELS) {
				ssize_t got = pump(sb, o, tag);

				if (got == 0 && open_ch[tag]) {
					open_ch[tag] = false;
					n_open--;
					(void)epoll_ctl(ep, EPOLL_CTL_DEL, o->channel_fds[tag], NULL);
					sb->ep_ok = false;
				}
			} else if (tag == EV_SOCK) {
				/* at EOF the socket stays readable: stop watching
				 * it, or this loop spins while the init's namespaces
				 * are torn down */
				if (drain_reports(sb)) {
					(void)epoll_ctl(ep, EPOLL_CTL_DEL, sb->sock, NULL);
					sb->ep_ok = false;
				}
			} else if (tag == EV_PIDFD) {
				drain_reports(sb);
				reap(sb);
				(void)epoll_ctl(ep, EPOLL_CTL_DEL, sb->pidfd, NULL);
				sb->ep_ok = false;
			} else if (tag == EV_TIMER) {
				on_timer(sb, o, ep);
			} else if (tag == EV_STOP) {
				if (o->on_stop && !o->on_stop(o->userdata))
					continue;
				kill_tree(sb, SANDBOX_END_KILLED, SANDBOX_KILL_STOP);
				(void)epoll_ctl(ep, EPOLL_CTL_DEL, o->stop_fd, NULL);
				sb->stop_watched = false;
			} else if (tag == EV_HANGUP) {
				(void)epoll_ctl(ep, EPOLL_CTL_DEL, o->hangup_fd, NULL);
				sb->hangup_watched = false;
				if (o->on_hangup)
					o->on_hangup(o->userdata);
			} else if (tag == EV_OOM) {
				if (read(sb->cg.oom_efd, &v, sizeof(v)) == sizeof(v))
					kill_tree(sb, SANDBOX_END_MEMORY, 0);
			}
		}
	}
	return 0;
}

/* Is ep still watching these channels?  The same numbers must also be
 * the same files: a number closed and reused would have left the set. */
static bool ep_current(struct sandbox *sb, const struct sandbox_wait_opts *o)
{
	struct stat st;

	if (!sb->ep_ok || sb->ep < 0 || sb->ep_nch != o->n_channels)
		return false;
	for (size_t i = 0; i < o->n_channels; i++)
		if (sb->ep_ch[i] != o->channel_fds[i] || fstat(o->channel_fds[i], &st) < 0 ||
		    st.st_dev != sb->ep_dev[i] || st.st_ino != sb->ep_ino[i])
			return false;
	return true;
}

/* (Re)build the epoll set: the channels (made non-blocking), the report
 * socket, the pidfd, the timer and the OOM notification. */
static int ep_build(struct sandbox *sb, const struct sandbox_wait_opts *o)
{
	struct stat st;
	int r;

	close_fd(&sb->ep);
	sb->ep_ok = false;
	sb->ep = epoll_create1(EPOLL_CLOEXEC);
	if (sb->ep < 0)
		return -errno;
	for (size_t i = 0; i < o->n_channels; i++) {
		int fd = o->channel_fds[i], fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fstat(fd, &st) < 0)
			return -errno;
		if ((r = ep_add(sb->ep, fd, i)) < 0)
			return r;
		sb->ep_ch[i] = fd;
		sb->ep_dev[i] = st.st_dev;
		sb->ep_ino[i] = st.st_ino;
	}
	sb->ep_nch = o->n_channels;
	if (fcntl(sb->sock, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	if ((r = ep_add(sb->ep, sb->sock, EV_SOCK)) < 0)
		return r;
	if (!sb->reaped && (r = ep_add(sb->ep, sb->pidfd, EV_PIDFD)) < 0)
		return r;
	if ((r = arm_timer(sb, 3600)) < 0 || (r = ep_add(sb->ep, sb->timer_fd, EV_TIMER)) < 0)
		return r;
	if (sb->cg.oom_efd >= 0 && (r = ep_add(sb->ep, sb->cg.oom_efd, EV_OOM)) < 0)
		return r;
	sb->ep_ok = true;
	return 0;
}

int sandbox_wait(struct sandbox *sb, const struct sandbox_wait_opts *o,
		 struct sandbox_exit *ret)
{
	int r;

	if (!sb->started)
		return -EINVAL;
	if (!ep_current(sb, o) && (r = ep_build(sb, o)) < 0)
		return r;
	r = arm_timer(sb, o->deadline_s > 0 ? o->deadline_s : sb->timeout_s > 0 ? sb->timeout_s
										 : 1e9);
	if (r < 0)
		return r;
	sb->stop_watched = o->stop_fd > 0;
	if (sb->stop_watched && (r = ep_add(sb->ep, o->stop_fd, EV_STOP)) < 0) {
		sb->stop_watched = false;
		goto out;
	}
	sb->hangup_watched = o->hangup_fd > 0;
	if (sb->hangup_watched) {
		struct epoll_event ev = { .events = EPOLLRDHUP, .data.u64 = EV_HANGUP };

		if (epoll_ctl(sb->ep, EPOLL_CTL_ADD, o->hangup_fd, &ev) < 0) {
			r = -errno;
			sb->hangup_watched = false;
			goto out;
		}
	}
	r = wait_loop(sb, o, sb->ep);
out:
	if (sb->stop_watched)
		(void)epoll_ctl(sb->ep, EPOLL_CTL_DEL, o->stop_fd, NULL);
	if (sb->hangup_watched)
		(void)epoll_ctl(sb->ep, EPOLL_CTL_DEL, o->hangup_fd, NULL);
	sb->in_grace = false;
	if (r < 0) {
		sb->ep_ok = false;
		return r;
	}
	if (r == 1) {
		memset(ret, 0, sizeof(*ret));
		ret->end = SANDBOX_END_RUNNING;
		return 0;
	}
	drain_reports(sb);
	fill_exit(sb, ret);
	return 0;
}

void sandbox_free(struct sandbox *sb)
{
	if (!sb)
		return;
	if (sb->pid > 0 && !sb->reaped) {
		kill_tree(sb, SANDBOX_END_KILLED, 0);
		reap(sb);
	}
	egress_stop(TAKE_PTR(sb->egress));
	close_fd(&sb->ws_fd);
	close_fd(&sb->upper_fd);
	close_fd(&sb->egress_fd);
	close_fd(&sb->timer_fd);
	close_fd(&sb->ep);
	close_fd(&sb->sock);
	close_fd(&sb->pidfd);
	cgroup_destroy(&sb->cg);
	/* a reaper finds the cgroups gone (ENOENT) */
	close_fd(&sb->reaper_hold);
	if (sb->n_cpus)
		sandbox_cpus_release(&sb->cpus);
	/* last: the id is free once nothing of the tree is left */
	close_fd(&sb->id_lock_fd);
	free(sb);
}

bool sandbox_reap_exited(struct sandbox *sb)
{
	int st;

	if (sb->pid <= 0 || sb->cell)
		return false;
	if (!sb->reaped) {
		/* WNOHANG: an init that has not exited yet is left running.
		 * ECHILD: reaped by the kernel already (SIGCHLD ignored, or
		 * SA_NOCLDWAIT, in a program that embeds the library) */
		pid_t r = wait4(sb->pid, &st, WNOHANG | __WALL, &sb->ru);

		if (r == 0 || (r < 0 && errno != ECHILD))
			return false;
		sb->reaped = true;
	}
	return cgroup_remove_dirs(&sb->cg);
}

/* Close every fd from 3 up but the n in keep (sorted here). */
static void close_all_but(int *keep, size_t n)
{
	unsigned lo = 3;

	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			(void)close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	(void)close_range(lo, ~0U, 0);
}

/* sandbox_free_detached()'s child, made then or while the program runs
 * (sandbox_start_reaper; hold: the read end of the caller's hold, or
 * -1): out of the caller's session and files, wait (bounded, by max_s)
 * for the init to be gone and the caller to let go, then what
 * sandbox_free() does after the reap.  The init is not our child: the
 * pidfd says when it has exited, after it left its cgroups. */
__attribute__((noreturn)) static void teardown_child(struct sandbox *sb, int hold, double max_s)
{
	struct pollfd p[2] = { { .fd = sb->pidfd, .events = POLLIN }, { .fd = hold, .events = POLLIN } };
	int keep[3] = { sb->pidfd, sb->id_lock_fd, hold };
	uint64_t deadline = now_ns() + (uint64_t)(max_s * 1e9);
	sigset_t none;

	(void)setsid();
	/* as the caller had them: not the blocked SIGINT/SIGTERM/SIGHUP of a
	 * run in progress (cli/run.c), nor its handlers */
	{
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		(void)sigaction(SIGINT, &dfl, NULL);
		(void)sigaction(SIGTERM, &dfl, NULL);
		(void)sigaction(SIGHUP, &dfl, NULL);
	}
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	stdio_to_devnull();
	/* fds 0-2 stay (/dev/null): nothing may open a file as them */
	close_all_but(keep, ARRAY_SIZE(keep));
	/* the init's exit, and the hold's end-of-file (the caller closed it
	 * or died); each fd is set to -1 (which poll ignores) once it has
	 * said so, and a hold of -1 has nothing to say */
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		uint64_t now = now_ns();

		if (now >= deadline)
			break;
		if (poll(p, 2, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			p[0].fd = -1;
		if (p[1].revents)
			p[1].fd = -1;
	}
	for (int i = 0; i < CGROUP_STAT_FILES; i++)
		sb->cg.stat_fd1[i] = 0; /* closed above */
	sb->cg.oom_efd = -1;
	if (sb->pidfd >= 0 && p[0].fd < 0 && p[1].fd < 0)
		cgroup_destroy(&sb->cg);
	if (g_sweep_deferred)
		cgroup_host_sweep(&g_cgroups);
	/* the id lock goes with us, last */
	_exit(0);
}

void sandbox_start_reaper(struct sandbox *sb)
{
	int hold[2];
	pid_t p;

	/* what sandbox_free_detached() will hand over, and a proxy's thread
	 * makes a fork unsafe (see there) */
	if (sb->reaper > 0 || sb->pid <= 0 || sb->cell || sb->template_init || sb->egress ||
	    !sb->started)
		return;
	if (pipe2(hold, O_CLOEXEC) < 0)
		return;
	p = fork();
	if (p == 0) {
		close(hold[1]);
		teardown_child(sb, hold[0],
			       (sb->timeout_s > 0 ? sb->timeout_s : 3600) + SANDBOX_TEARDOWN_MAX_S);
	}
	close(hold[0]);
	if (p < 0) {
		close(hold[1]);
		return;
	}
	sb->reaper = p;
	sb->reaper_hold = hold[1];
}

void sandbox_free_detached(struct sandbox *sb)
{
	pid_t p;

	if (!sb)
		return;
	if (sb->reaped || sb->pid <= 0 || sb->egress || !final_at_report(sb)) {
		/* a reaper made early finds the init gone and the cgroups
		 * removed by then (ENOENT), and exits */
		sandbox_free(sb);
		return;
	}
	/* one that gave up waiting, or is gone, is no reaper */
	if (sb->reaper > 0 && waitpid(sb->reaper, NULL, WNOHANG) != 0) {
		sb->reaper = 0;
		close_fd(&sb->reaper_hold);
	}
	if (sb->reaper <= 0) {
		p = fork();
		if (p < 0) {
			sandbox_free(sb);
			return;
		}
		if (p == 0)
			teardown_child(sb, -1, SANDBOX_TEARDOWN_MAX_S);
	}
	/* the reaper's turn (it holds the pidfd, the cgroups and the id) */
	close_fd(&sb->reaper_hold);
	/* The child holds the pidfd, the cgroups and the id lock (an open
	 * file description's lock lives while any fd to it is open). */
	close_fd(&sb->ws_fd);
	close_fd(&sb->upper_fd);
	close_fd(&sb->timer_fd);
	close_fd(&sb->ep);
	close_fd(&sb->sock);
	close_fd(&sb->pidfd);
	cgroup_forget(&sb->cg);
	if (sb->n_cpus)
		sandbox_cpus_release(&sb->cpus);
	close_fd(&sb->id_lock_fd);
	free(sb);
}

void sandbox_host_info(struct sandbox_host_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	(void)global_init();
	for (int w = 0; w < SANDBOX_SECCOMP_N && w < 2; w++)
		ret->seccomp_insns[w] = sandbox_seccomp_programs[w].len;
	ret->seccomp_built_with = sandbox_seccomp_built_with;
	ret->cgroup_version = g_cgroups.version;
	ret->cgroup_why = g_cgroups.why;
	for (int c = 0; c < _CGROUP_CTRL_MAX && !ret->cgroup_parent; c++)
		ret->cgroup_parent = g_cgroups.parent[c];
	/* always: wall clock, rlimits, tmpfs sizes, output */
	ret->enforceable = SANDBOX_LIMIT_WALL | SANDBOX_LIMIT_CPU | SANDBOX_LIMIT_FILE_SIZE |
			   SANDBOX_LIMIT_OPEN_FILES | SANDBOX_LIMIT_DISK | SANDBOX_LIMIT_OUTPUT |
			   cgroup_host_enforceable(&g_cgroups);
	ret->landlock_abi = sandbox_landlock_abi();
	ret->ids_error = g_ids_err;
	if (g_ids_err == 0) {
		ret->ids_source = g_ids.source;
		ret->ids_uid_base = g_ids.uid_base;
		ret->ids_gid_base = g_ids.gid_base;
		ret->ids_count = g_ids.count;
	}
}
