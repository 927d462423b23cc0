/* cgroup: one cgroup per sandbox, on v2 (unified) or v1 (memory, pids,
 * cpuacct, cpu hierarchies; cpu and cpuacct may be one co-mounted
 * hierarchy) hosts.
 *
 * Where the cgroup goes: nested under the cgroup codecell itself runs in,
 * so a sandbox can never escape limits set on codecell (nsjail PR #219);
 * on v2 as root, under <root>/codecell; CODECELL_CGROUP names a delegated
 * v2 directory explicitly (the way for an ordinary user on v2). */
#ifndef CODECELL_SANDBOX_CGROUP_H
#define CODECELL_SANDBOX_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum cgroup_version { CGROUP_NONE = 0, CGROUP_V1 = 1, CGROUP_V2 = 2 };

enum cgroup_ctrl {
	CGROUP_CTRL_MEMORY,
	CGROUP_CTRL_PIDS,
	CGROUP_CTRL_CPUACCT, /* usage; on v2 cpu.stat, there in every cgroup */
	CGROUP_CTRL_CPU,     /* the CPU quota: v1 cfs_quota_us, v2 cpu.max */
	_CGROUP_CTRL_MAX
};
/* The period of the CPU quota, in microseconds (the kernel's default);
 * the quota is cpus times this, at least 1000 (the kernel's minimum). */
#define CGROUP_CPU_PERIOD_US 100000

/* What the host offers: the version and, per controller, the parent
 * directory new cgroups are made in (NULL if unusable). */
struct cgroup_host {
	enum cgroup_version version;
	char *parent[_CGROUP_CTRL_MAX]; /* v2: all equal; v1: equal where
					   co-mounted (cpu,cpuacct) */
	const char *why;		/* static: why a controller is missing */
};

#define CGROUP_STAT_FILES 5

struct cgroup {
	enum cgroup_version version;
	char *path[_CGROUP_CTRL_MAX]; /* owned; NULL where not created */
	int oom_efd;		      /* v1 OOM notification, or -1 */
	/* Memory pressure at the limit, or -1: v1, an eventfd of
	 * memory.pressure_level "critical" (reclaim that frees next to
	 * nothing), readable; v2, memory.events, which gets EPOLLPRI when
	 * its counters change ("max": a charge failed and reclaim ran). */
	int press_fd;
	uint64_t memory_limit; /* bytes, 0 if none */
	/* the files cgroup_read_stats() reads, kept open once opened: the
	 * fd + 1, so that a zeroed struct has none (0) */
	int stat_fd1[CGROUP_STAT_FILES];
};

struct cgroup_stats {
	uint64_t peak_memory; /* bytes, 0 if unknown */
	uint64_t cpu_ns;      /* 0 if unknown */
	uint64_t oom_kills;
	uint64_t pids_max_hits;
	uint64_t cpu_throttled; /* periods the CPU quota held the tree back */
};

/* Pure path logic (unit-tested): the cgroup path of controller ctrl in
 * the text of /proc/self/cgroup.  v1 looks for the controller in the
 * comma list of the second field, v2 for the "0::" line.  Writes into
 * out (size n).  Returns 0, -ENOENT if absent, -ENAMETOOLONG. */
int cgroup_self_path(enum cgroup_version v, const char *proc_self_cgroup, enum cgroup_ctrl ctrl,
		     char *out, size_t n);
/* Name of the v1 hierarchy directory of ctrl ("memory", ...). */
const char *cgroup_ctrl_name(enum cgroup_ctrl ctrl);

/* Probe the host.  root is normally "/sys/fs/cgroup", self the text of
 * /proc/self/cgroup, env_override the value of $CODECELL_CGROUP (or NULL).
 * Creates the shared "codecell" parent directories where needed.
 * Never fails: a host without usable cgroups gets CGROUP_NONE. */
void cgroup_host_probe(const char *root, const char *self, const char *env_override,
		       struct cgroup_host *ret);
void cgroup_host_release(struct cgroup_host *h);
/* A supervisor killed with SIGKILL cannot remove its cgroups: remove the
 * sb-<pid>-<n> directories of supervisors that are gone (rmdir fails
 * while a cgroup still has tasks, so this never disturbs a live one).
 * Not part of the probe: a process does it once, when it can afford to
 * (sandbox.c). */
void cgroup_host_sweep(const struct cgroup_host *h);
/* Bits of enum sandbox_limit the host can enforce (memory, pids, cpus). */
unsigned cgroup_host_enforceable(const struct cgroup_host *h);

/* Make a cgroup called name under each parent and write the limits (0 =
 * unset; cpus in cores, e.g. 0.5).  Returns 0 or -errno; on failure
 * nothing is left behind. */
int cgroup_create(const struct cgroup_host *h, const char *name, uint64_t memory, uint64_t pids,
		  double cpus, struct cgroup *ret);

/* The CPU weight of the cgroup against its siblings, in cgroup v2's units
 * (1 to 10000; 100 is the default): cpu.weight on v2, cpu.shares (the
 * weight x 1024 / 100) on v1.  0, -ENOENT without a cpu controller, or
 * -errno. */
int cgroup_set_cpu_weight(const struct cgroup *cg, unsigned weight);
/* The scheduler's slice (EEVDF, Linux 6.12+: sched_setattr's
 * sched_runtime, 0.1 to 100 ms; 0 = the default) of every thread in the
 * cgroup now.  A thread with a shorter slice than the one running
 * preempts it on wake-up instead of waiting for the next tick; code in a
 * sandbox may set its own (seccomp allows sched_setattr), so this gives
 * nothing it could not take.  Threads that start later inherit it from
 * their parent.  0 or -errno (the threads' own failures are ignored:
 * older kernels have no custom slice). */
int cgroup_set_cpu_slice(const struct cgroup *cg, uint64_t slice_ns);
/* The quota for cpus cores per CGROUP_CPU_PERIOD_US, in microseconds
 * (pure; unit-tested). */
uint64_t cgroup_cpu_quota_us(double cpus);
int cgroup_attach(const struct cgroup *cg, pid_t pid);
/* Joining without the global lock.  cgroup_attach() moves a whole
 * process by pid, which takes the kernel's cgroup_threadgroup_rwsem for
 * writing: one RCU grace period, about 13 ms on a 2-core host, on the
 * critical path of every sandbox.  Instead:
 *  - v1: open each controller's "tasks" file here (as the supervisor:
 *    the kernel checks the opener's credentials) and let the new,
 *    single-threaded child write "0" into each, which moves only the
 *    calling thread and skips that lock.  Returns the number of fds put
 *    in fds (0 on v2 or with no cgroup), or -errno.
 *  - v2: clone straight into the cgroup (clone3 CLONE_INTO_CGROUP) with
 *    the directory fd this returns (-EOPNOTSUPP on v1). */
int cgroup_open_join_fds(const struct cgroup *cg, int fds[_CGROUP_CTRL_MAX]);
int cgroup_open_dir(const struct cgroup *cg);
/* v2 only: cgroup.kill.  0, -EOPNOTSUPP on v1, -errno. */
int cgroup_kill(const struct cgroup *cg);
/* Open the files cgroup_read_stats() reads, ahead of the first read
 * (whatever cannot be opened is tried again then). */
void cgroup_open_stats(struct cgroup *cg);
/* with_oom false: oom_kills stays 0 and one read is saved (for a caller
 * that learns of OOM kills otherwise, from the notification). */
void cgroup_read_stats(struct cgroup *cg, bool with_oom, struct cgroup_stats *ret);
/* How long the tree has waited for a CPU so far, in ns: the time its
 * threads spent runnable on a run queue (each thread's schedstat
 * run_delay; a thread that has exited no longer counts) plus the time
 * its CPU quota held it back (cpu.stat throttled_time).  0 if unknown. */
uint64_t cgroup_read_cpu_wait(struct cgroup *cg);
/* Only the CPU time (ns, 0 if unknown): one read. */
uint64_t cgroup_read_cpu(struct cgroup *cg);
/* Memory that cannot be given back, at the limit.  Without swap, what
 * reclaim can free is the page cache of files; the rest (anonymous
 * memory, tmpfs files, kernel memory) stays.  Once that rest is within
 * CGROUP_FULL_MARGIN of the limit, every allocation evicts the program's
 * own code and data files: the kernel's OOM killer comes only after
 * rounds of such reclaim, each of which yields the CPU, and on a loaded
 * host that took seconds to tens of seconds. */
#define CGROUP_FULL_MARGIN(limit) ((limit) / 32 > (1u << 20) ? (limit) / 32 : (1u << 20))
/* Pure (unit-tested): is usage, less the file pages that memory.stat's
 * text (v1: total_active_file, total_inactive_file; v2: active_file,
 * inactive_file, and the kernel caches of slab_reclaimable) lists, within
 * the margin of limit? */
bool cgroup_stat_full(enum cgroup_version v, uint64_t usage, const char *stat, uint64_t limit);
/* The cgroup's memory now: CGROUP_MEM_FULL when cgroup_stat_full() says
 * so, CGROUP_MEM_AT_LIMIT when only the usage with the page cache is
 * within the margin (reclaim can still free some), CGROUP_MEM_BELOW
 * otherwise, without a memory limit, or when a file cannot be read. */
enum cgroup_mem_state { CGROUP_MEM_BELOW, CGROUP_MEM_AT_LIMIT, CGROUP_MEM_FULL };
enum cgroup_mem_state cgroup_memory_state(const struct cgroup *cg);
/* Take the notification that made press_fd ready (v1: the eventfd's
 * count; v2: memory.events is read again, which re-arms EPOLLPRI). */
void cgroup_pressure_ack(const struct cgroup *cg);
/* Remove the cgroup directories, waiting briefly for dying tasks. */
void cgroup_destroy(struct cgroup *cg);
/* Try once to remove the directories, leaving the paths and fds as they
 * are (readers of cg may run at the same time); cgroup_destroy() later
 * finds them gone, or removes what was still busy.  True if none is
 * left. */
bool cgroup_remove_dirs(const struct cgroup *cg);
/* Free the paths and close the fds, leaving the directories (another
 * process removes them: sandbox_free_detached). */
void cgroup_forget(struct cgroup *cg);

#endif
