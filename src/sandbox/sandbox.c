/* The supervisor's object and the host: the setup steps' and limits'
 * names, the host's cgroups and id range (probed once per process), a
 * sandbox's allocation, ids, cgroup and CPU weight, its accessors, and
 * what the host enforces (sandbox_host_info).  The rest of the
 * supervisor: spawn.c and spawn_cell.c (clone, ids, cgroup, hand-shake),
 * wait.c (the epoll loop), kill.c, usage.c, teardown.c. */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/egress.h"
#include "sandbox/ids.h"
#include "sandbox/internal.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp.h"
#include "util/buf.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

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
	case SANDBOX_LIMIT_WALL:
		return "wall_time";
	case SANDBOX_LIMIT_MEMORY:
		return "memory";
	case SANDBOX_LIMIT_PIDS:
		return "pids";
	case SANDBOX_LIMIT_CPU:
		return "cpu_time";
	case SANDBOX_LIMIT_FILE_SIZE:
		return "file_size";
	case SANDBOX_LIMIT_OPEN_FILES:
		return "open_files";
	case SANDBOX_LIMIT_DISK:
		return "disk";
	case SANDBOX_LIMIT_OUTPUT:
		return "output";
	case SANDBOX_LIMIT_CPUS:
		return "cpu";
	case SANDBOX_LIMIT_LANDLOCK:
		return "landlock";
	}
	return NULL;
}

/* Process-wide, probed once: the host's cgroups and the id range. */
struct cgroup_host g_cgroups;
static struct id_range g_ids;
static int g_ids_err;
static pthread_once_t g_probed = PTHREAD_ONCE_INIT;
/* sandbox_defer_sweep(): the stale-cgroup sweep waits for
 * sandbox_free_detached()'s child */
bool g_sweep_deferred;

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
int sandbox_global_init(void)
{
	return pthread_once(&g_probed, probe_cgroups) == 0 ? 0 : -EINVAL;
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

/* What a new root shows of the cgroups a sandbox gets (sandbox_make_cgroup). */
void sandbox_rootfs_host_of(struct rootfs_host *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->cgroup_version = g_cgroups.version;
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++)
		if (g_cgroups.parent[c])
			ret->cgroup_ctrls |= 1u << c;
}

int sandbox_make_cgroup(struct sandbox *sb, const struct sandbox_config *cfg)
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
		    : r == -EAGAIN
			    ? "take a host uid from the range (every id is in use)"
			    : "take a host uid from the range (with the lock file " IDS_LOCK_FILE
			      ")";
	return r;
}

/* A sandbox object for cfg, nothing spawned yet.  -EINVAL for a root
 * caller mapping to uid/gid 0, -EOPNOTSUPP under --strict when a limit
 * cannot be enforced, -ENOENT/-EAGAIN when root has no host id to give
 * it (*ret_step says why). */
int sandbox_alloc(const struct sandbox_config *cfg, bool privileged, bool cell,
		  struct sandbox **ret, const char **ret_step)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));
	int r;

	if (!sb)
		return -ENOMEM;
	*sb = (struct sandbox){ .pid = -1,
				.pidfd = -1,
				.sock = -1,
				.ws_fd = -1,
				.upper_fd = -1,
				.egress_fd = -1,
				.reaper_hold = -1,
				.timer_fd = -1,
				.ep = -1,
				.timeout_s = cfg->limits.timeout_s,
				.cpu_limit_s = cfg->limits.cpu_seconds,
				.id_lock_fd = -1,
				.cg = { .oom_efd = -1, .press_fd = -1 } };
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
	return n == SANDBOX_NET_NONE	    ? "none"
	       : n == SANDBOX_NET_ALLOWLIST ? "allowlist"
					    : "loopback";
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

bool sandbox_ended(const struct sandbox *sb)
{
	return sb->reaped;
}

void sandbox_host_info(struct sandbox_host_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	(void)sandbox_global_init();
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
