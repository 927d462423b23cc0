/* sandbox: run one process tree sealed off from the host.
 *
 * Knows nothing of languages, JSON or HTTP.  The caller describes the
 * program, its fds and its limits in a struct sandbox_config; the sandbox
 * builds a user/mount/PID/IPC/UTS/net/cgroup namespace set with a fresh
 * root, an init that reaps, seccomp, Landlock, capabilities dropped,
 * rlimits and a cgroup, runs the program, and reports how it ended.
 *
 * Lifecycle:
 *   sandbox_new()      build everything up to the exec; the program has not
 *                      started; the workspace can be filled through
 *                      sandbox_workspace_fd()
 *   sandbox_start()    let the program exec; the wall clock starts
 *   sandbox_wait()     pump output, enforce the timeout and limits, reap
 *   sandbox_free()     kill whatever is left, reap, remove the cgroup
 * Nothing is left behind once sandbox_free() returns: no process, mount,
 * cgroup or temporary directory. */
#ifndef CODECELL_SANDBOX_SANDBOX_H
#define CODECELL_SANDBOX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SANDBOX_MAX_PASS_FDS 8
#define SANDBOX_MAX_CHANNELS 8
/* Inside the sandbox the program runs as this uid/gid, home is the
 * workspace. */
#define SANDBOX_UID 1000
#define SANDBOX_GID 1000
#define SANDBOX_HOME "/home/user"
#define SANDBOX_HOSTNAME "codecell"
/* How long a template may take to answer for a cell, and a new sandbox's
 * init to build the root and report. */
#define SANDBOX_CELL_TIMEOUT_S 10
#define SANDBOX_SETUP_TIMEOUT_S 30

enum sandbox_net {
	SANDBOX_NET_LOOPBACK, /* own network namespace, lo up (default) */
	SANDBOX_NET_NONE,     /* own network namespace, no interface up */
	/* as LOOPBACK, and sandbox_egress_start() opens codecell's proxy
	 * (sandbox/egress.h) at 127.0.0.1:3128 inside: the only way out */
	SANDBOX_NET_ALLOWLIST,
};
/* "loopback", "none", "allowlist" */
const char *sandbox_net_name(enum sandbox_net n);

/* A limit of 0 means "not set" for every field. */
struct sandbox_limits {
	double timeout_s;	  /* wall clock from sandbox_start() */
	uint64_t memory_bytes;	  /* cgroup memory, swap 0 */
	uint64_t pids;		  /* cgroup pids */
	uint64_t cpu_seconds;	  /* RLIMIT_CPU per process */
	uint64_t file_size;	  /* RLIMIT_FSIZE */
	uint64_t open_files;	  /* RLIMIT_NOFILE */
	uint64_t tmp_bytes;	  /* size of the /tmp tmpfs */
	uint64_t workspace_bytes; /* size of the workspace tmpfs */
	/* CPU quota of the whole tree in cores (0.5: half of one core over
	 * every 100 ms period), cgroup cpu.max / cpu.cfs_quota_us.  It
	 * bounds whatever the tree forks, for as long as it lives. */
	double cpus;
};

struct sandbox_config {
	const char *const *argv; /* argv[0]: absolute path inside */
	const char *const *envp; /* the complete environment */
	const char *cwd;	 /* inside; NULL: SANDBOX_HOME */
	int stdin_fd;		 /* becomes fd 0; -1: /dev/null */
	int stdout_fd;		 /* becomes fd 1 (required) */
	int stderr_fd;		 /* becomes fd 2 (required) */
	/* pass_fds[i] becomes fd 3+i in the program. */
	int pass_fds[SANDBOX_MAX_PASS_FDS];
	size_t n_pass_fds;
	struct sandbox_limits limits;
	enum sandbox_net net;
	/* Started as root: the host uid/gid the sandbox maps to; 0 and 0
	 * (the default): an id of its own from codecell's range (ids.h).
	 * Ignored by cells (they keep the template's) and when started as an
	 * ordinary user, who can only map to themselves. */
	uid_t host_uid;
	gid_t host_gid;
	/* Refuse (-EOPNOTSUPP) instead of falling back when a cgroup limit
	 * cannot be enforced. */
	/* The CPU weight of the sandbox's cgroup against its siblings (cgroup
	 * v2 units, 1 to 10000); 0: the default (100).  A warm pool starts
	 * its cells with a high one, so that making a kernel is not starved
	 * by busy sessions, and lowers it when the kernel is ready. */
	unsigned cpu_weight;
	bool strict;
	/* The program is a template for cells (sandbox_new_cell): it keeps
	 * CAP_SYS_ADMIN, NET_ADMIN, SETUID, SETGID and SETPCAP in its own
	 * user namespace (nowhere else) and gets neither Landlock nor
	 * seccomp, so it must never run untrusted code.  Its init outlives
	 * it while cells it made live, and the cells die with the init. */
	bool template;
	/* After a fork bomb, the init kills every process but the worker
	 * (sandbox_kill_strays); with this, also not the worker's children
	 * that lead a process group of their own.  A bash session's driver
	 * starts bash so, and bash's own children (a bomb) stay in bash's
	 * group: bash and its state survive the clean-up. */
	bool keep_group_leaders;
	/* One-shot runs whose workspace the caller does not fill: the init
	 * writes script_fd's contents (from its start) into the workspace
	 * as script_name (a plain name, no '/'; NULL: none), and with
	 * autostart runs the program as soon as the root is built, without
	 * waiting for sandbox_start() (which then only marks the start).
	 * That saves a round trip between the supervisor and the init, two
	 * waits for a CPU on a loaded host.  script_fd: only read when
	 * script_name is set. */
	const char *script_name;
	int script_fd;
	bool autostart;
	/* cgroup v1: make and limit the cgroups while the init builds the
	 * root (off the critical path), the init joining them before the
	 * program.  Until it joins, the init's set-up (the root's tmpfs
	 * files, up to 1 MiB) is charged to the caller's cgroups, and stays
	 * there on v1 for the sandbox's life: for one-shot runs, which are
	 * short, not for a server's sessions. */
	bool late_cgroups;
	/* A host directory (absolute) the workspace shows through an
	 * overlay: reads see the directory, writes and deletions land in an
	 * upper layer on the workspace's tmpfs (sandbox_upper_fd()), and the
	 * directory is never written.  NULL: a plain empty workspace.  Not
	 * for cells (sandbox_new_cell() refuses it: -EINVAL). */
	const char *project_dir;
};

/* Limits that were asked for but could not be enforced on this host, and
 * limits that the program ran into.  Bits of enum sandbox_limit. */
enum sandbox_limit {
	SANDBOX_LIMIT_WALL = 1 << 0,
	SANDBOX_LIMIT_MEMORY = 1 << 1,
	SANDBOX_LIMIT_PIDS = 1 << 2,
	SANDBOX_LIMIT_CPU = 1 << 3,
	SANDBOX_LIMIT_FILE_SIZE = 1 << 4,
	SANDBOX_LIMIT_OPEN_FILES = 1 << 5,
	SANDBOX_LIMIT_DISK = 1 << 6,
	SANDBOX_LIMIT_OUTPUT = 1 << 7,
	SANDBOX_LIMIT_CPUS = 1 << 8,	 /* the CPU quota ("cpu"); hit: throttled */
	SANDBOX_LIMIT_LANDLOCK = 1 << 9, /* not a limit: the second wall */
};
/* "wall_time", "memory", ... for one bit; NULL for an unknown bit. */
const char *sandbox_limit_name(enum sandbox_limit bit);

enum sandbox_end {
	SANDBOX_END_EXITED,	  /* the program exited; see exit_code */
	SANDBOX_END_SIGNALED,	  /* the program died of a signal */
	SANDBOX_END_TIMEOUT,	  /* wall clock ran out; tree killed */
	SANDBOX_END_MEMORY,	  /* memory limit hit; tree killed */
	SANDBOX_END_KILLED,	  /* killed on the caller's request */
	SANDBOX_END_SETUP_FAILED, /* never ran: see failed_step, error */
	SANDBOX_END_RUNNING,	  /* wait returned early (until()); still running */
};

struct sandbox_exit {
	enum sandbox_end end;
	int exit_code;		 /* EXITED: the status */
	int signal;		 /* SIGNALED: the signal; also set on kills */
	int kill_reason;	 /* KILLED: what the output callback returned */
	const char *failed_step; /* SETUP_FAILED: static string */
	int error;		 /* SETUP_FAILED: positive errno */
	uint64_t duration_ns;	 /* start to exit */
	uint64_t cpu_ns;	 /* user+system of the whole tree */
	uint64_t peak_memory;	 /* bytes; 0 if unknown */
	unsigned limits_hit;	 /* enum sandbox_limit bits */
};

struct sandbox;

/* The most one read of a channel gives on_output: a callback with fewer
 * bytes found the channel empty at that moment. */
#define SANDBOX_READ_CHUNK 65536

/* Called with output read from a channel.  Return 0 to go on, or a
 * positive number to have the tree killed; sandbox_wait() then reports
 * SANDBOX_END_KILLED with that number as kill_reason. */
typedef int (*sandbox_output_fn)(void *userdata, int channel, const char *data, size_t n);

struct sandbox_wait_opts {
	/* Read ends the caller wants pumped until EOF (the sandbox does not
	 * close them). */
	int channel_fds[SANDBOX_MAX_CHANNELS];
	size_t n_channels;
	sandbox_output_fn on_output;
	void *userdata;
	/* When this fd becomes readable (a signalfd, say) the tree is
	 * killed and the end is SANDBOX_END_KILLED with kill_reason
	 * SANDBOX_KILL_STOP.  0 or -1 for none, so a zero-initialized struct
	 * has none (stdin is never a stop fd).  Not read by the sandbox. */
	int stop_fd;
	/* Called when stop_fd is readable, if set; it must read stop_fd.
	 * Return true to kill the tree (as without it), false to go on (the
	 * caller interrupted the program instead, say). */
	bool (*on_stop)(void *userdata);
	/* A socket whose peer may hang up (an HTTP client), or 0/-1: when it
	 * does (POLLRDHUP, POLLHUP or POLLERR), on_hangup is called once and
	 * the fd is no longer watched.  Not read by the sandbox. */
	int hangup_fd;
	void (*on_hangup)(void *userdata);
	/* Sessions: return as soon as until(userdata) is true, checked after
	 * each batch of events; the sandbox keeps running and the end is
	 * SANDBOX_END_RUNNING.  NULL: wait for the end. */
	bool (*until)(void *userdata);
	/* Deadline of this call in seconds from now; 0: the config's
	 * timeout_s. */
	double deadline_s;
	/* Called at the deadline instead of killing; returns the seconds of
	 * grace to give (after, say, sandbox_interrupt()) before the kill; 0
	 * kills at once.  NULL: kill at the deadline. */
	double (*on_deadline)(void *userdata);
	/* One-shot runs: return as soon as the result is final, when the
	 * init has reported the program's end (it kills and reaps everything
	 * else first) and closed its files, without waiting for the init's
	 * exit and the namespaces' teardown; sandbox_ended() is then still
	 * false, and the caller ends the sandbox with sandbox_free() or
	 * sandbox_free_detached().  Ignored (the wait goes on to the reap)
	 * for a kill, a setup failure, a cell or template, or without the
	 * cpuacct and memory cgroups the usage is read from. */
	bool return_at_report;
};
#define SANDBOX_KILL_STOP (-1)

/* Build the sandbox up to the program's exec.  On success *ret owns the
 * sandbox (free with sandbox_free()).  Returns -errno; on a setup failure
 * inside the child, -errno of the failed step, and if ret_failed_step is
 * not NULL it is set to the step's name (a static string).  The caller's
 * fds in cfg are duplicated into the child and stay the caller's. */
int sandbox_new(const struct sandbox_config *cfg, struct sandbox **ret,
		const char **ret_failed_step);
/* A cell: a sandbox made by forking a running template (a sandbox with
 * cfg.template whose program passes what it reads on template_fd, a
 * SOCK_SEQPACKET socket, to codecell_cell_enter() in a fresh child; see
 * cell.c).  Its own mount, PID, IPC, UTS and network namespaces, fresh
 * root and cgroup, the template's user namespace; everything of cfg but
 * argv, envp, cwd and stdin (/dev/null), and the program is the
 * template's code, which goes on after the fork with fds 0..2+n_pass_fds.
 * Then as sandbox_new(): not started, the workspace can be filled.  Not
 * reaped by us (the template's init is its parent): sandbox_wait() and
 * sandbox_free() watch its pidfd instead.  template_sb (the template's
 * sandbox, or NULL) lets the template fork from inside the cell's cgroup
 * (v1), so the fork's kernel memory is charged to the cell; safe to call
 * from several threads at once on one template. */
int sandbox_new_cell(const struct sandbox_config *cfg, const struct sandbox *template_sb,
		     int template_fd, struct sandbox **ret, const char **ret_failed_step);
/* The host pid of the sandbox's init, and a pidfd of it (owned by the
 * sandbox; readable once the init has exited).  For watching only. */
pid_t sandbox_pid(const struct sandbox *sb);
int sandbox_pidfd(const struct sandbox *sb);
/* Open the egress proxy inside sb's network namespace for the egress
 * list `allow` (sandbox/egress.h: egress_start); it lives until
 * sandbox_free().  Before the program runs code it was not built with: a
 * new sandbox before sandbox_start(), a pool's kernel when it is taken.
 * -EEXIST if it has one already. */
int sandbox_egress_start(struct sandbox *sb, const char *allow);
/* The connections the egress proxy decided since the last call, for the
 * audit log (egress.h, egress_take_events; the caller frees ev); none
 * without a proxy.  0 or -ENOMEM. */
struct egress_event;
struct egress_log {
	struct egress_event *ev;
	size_t n;
	uint64_t dropped; /* more than the proxy keeps */
};
int sandbox_egress_events(struct sandbox *sb, struct egress_log *out);
/* Whether sb was made by sandbox_new_cell(). */
bool sandbox_is_cell(const struct sandbox *sb);
/* A cell's program (its init's first child: a pooled session's kernel)
 * maps the template's anonymous pages copy-on-write.  They are charged to
 * the template's cgroup, not the cell's, so the cell's peak memory leaves
 * them out (a pooled Python kernel "used" 3 MB).  This is how many bytes
 * of them it maps now: Anonymous less Private_Dirty, from its
 * /proc/PID/smaps_rollup (a page the program wrote is private, and
 * charged to the cell).  0 for a sandbox that is not a cell.  Returns 0
 * or -errno (the process is gone, or /proc may not be read: a supervisor
 * without CAP_SYS_PTRACE over the cell's user namespace).  Walks every
 * mapping: ~1 ms with numpy and pandas loaded. */
int sandbox_cell_shared_memory(const struct sandbox *sb, uint64_t *ret);
/* An O_PATH directory fd on the workspace root, owned by the sandbox;
 * use it with openat_beneath() only.  Valid until sandbox_free(). */
int sandbox_workspace_fd(const struct sandbox *sb);
/* With a project_dir: an O_PATH fd of the overlay's upper layer (what
 * the program wrote, overlayfs whiteouts and opaque directories for what
 * it deleted), owned by the sandbox, valid until sandbox_free() (after
 * the tree ended too).  The program can change it at any time: what is
 * read through it is untrusted.  -1 without a project. */
int sandbox_upper_fd(const struct sandbox *sb);
/* Host uid/gid that files in the workspace must belong to for the
 * sandboxed program to own them. */
void sandbox_workspace_owner(const struct sandbox *sb, uid_t *ret_uid, gid_t *ret_gid);
/* Limits the config asked for that this host cannot enforce. */
unsigned sandbox_limits_unenforced(const struct sandbox *sb);
/* Let the program exec.  0 or -errno. */
int sandbox_start(struct sandbox *sb);
/* Run until the program ends (see sandbox_exit); pumps the channels.
 * 0 or -errno for a failure of the supervisor itself. */
int sandbox_wait(struct sandbox *sb, const struct sandbox_wait_opts *opts,
		 struct sandbox_exit *ret);
/* Change the CPU weight of the sandbox's cgroup (see
 * sandbox_config.cpu_weight); above the default (100), the threads in it
 * also get the shortest scheduler slice until the weight goes back (0 or
 * 100), so that they preempt on wake-up (cgroup_set_cpu_slice).  0, or
 * -errno (-ENOENT: no cpu cgroup). */
int sandbox_set_cpu_weight(struct sandbox *sb, unsigned weight);
/* Kill the whole tree now (idempotent). */
void sandbox_kill(struct sandbox *sb);
/* The same, as if on_output had returned reason (> 0): for output the
 * caller read itself after a wait.  The next wait reports
 * SANDBOX_END_KILLED with that kill_reason. */
void sandbox_kill_for(struct sandbox *sb, int reason);
/* Kill the tree and reap it; the workspace fd stays valid (to copy the
 * workspace out or into another sandbox).  Idempotent. */
void sandbox_stop(struct sandbox *sb);
/* Kill every process in the sandbox but the program itself (its
 * children, daemons, a fork bomb's copies), through the init.  0 or
 * -errno. */
int sandbox_kill_strays(struct sandbox *sb);
/* For callers that stay attached (sessions): the whole tree's CPU so
 * far, its peak memory, the pids limit's hits so far (as a count and as
 * the SANDBOX_LIMIT_PIDS bit) and the CPU quota's throttled periods, from
 * the cgroup (0 where unknown).  An
 * OOM kill is not here: it ends the sandbox, and sandbox_wait() says so.
 * The cgroup's files stay open for the next call (three reads). */
struct sandbox_usage {
	uint64_t cpu_ns;
	uint64_t peak_memory;
	unsigned limits_hit;
	/* how often so far: compare two readings to see a limit hit again */
	uint64_t pids_max_hits;
	uint64_t cpu_throttled; /* periods the CPU quota held the tree back */
};
void sandbox_usage_so_far(struct sandbox *sb, struct sandbox_usage *ret);
/* The same with one read instead of three: CPU time now, peak memory and
 * limits as the last sandbox_usage_so_far() saw them (0 before any).
 * For the start of an interval whose end gets the full read. */
void sandbox_usage_cheap(struct sandbox *sb, struct sandbox_usage *ret);
/* A process of the sandbox seen from outside it (sandbox/process.c).
 * sandbox_process_open: a pidfd (CLOEXEC, the caller's) of the process
 * that is pid in the sandbox's PID namespace; -EINVAL for the init,
 * -ESRCH when there is none, -ENOTTY on a kernel before 6.11, -errno.
 * sandbox_process_status: 0 and its wait status (as waitpid's) once it
 * has exited, whoever reaps it; -EAGAIN while it runs; -ENOTTY/-EINVAL
 * on a kernel before 6.15.  sandbox_process_kill: SIGKILL to its
 * process group (or to it alone when it leads none); 0 or -errno. */
int sandbox_process_open(const struct sandbox *sb, pid_t pid);
int sandbox_process_status(int pidfd, int *ret_wstatus);
int sandbox_process_kill(int pidfd);
/* Send SIGINT to the program (the init forwards it).  0 or -errno. */
int sandbox_interrupt(struct sandbox *sb);
/* Whether the program's tree is gone (the init was reaped). */
bool sandbox_ended(const struct sandbox *sb);
/* Kill, reap, remove the cgroup, close everything.  Accepts NULL. */
void sandbox_free(struct sandbox *sb);
/* For a template: if its init has exited, reap it and remove its empty
 * cgroups now, not when the last reference to the template goes
 * (sandbox_free() then finds that work done); an init still running is
 * left as it is.  Nothing else of sb changes, so other threads may go
 * on reading it (its pidfd, its cgroups' paths); only one thread may
 * call this, and none may free sb meanwhile.  True once the init is
 * reaped and its cgroup directories are gone; call again while false
 * (a directory still busy is tried again). */
bool sandbox_reap_exited(struct sandbox *sb);
/* The same, for a process about to exit: when the tree's end is still
 * pending (sandbox_wait's return_at_report), a child process of ours
 * waits for the init's exit, removes the cgroups and frees the id, and
 * this returns at once; otherwise (or if that process cannot be made)
 * it is sandbox_free().  The caller must be single-threaded (a fork),
 * exit soon after and reap nothing it did not start: the init becomes
 * the host's init's (or the caller's subreaper's) to reap.  The child
 * gets /dev/null for fds 0-2, closes every other fd but the ones it
 * needs, and gives up after SANDBOX_TEARDOWN_MAX_S (the stale-cgroup
 * sweep of the next codecell process removes what is left).  Accepts
 * NULL. */
void sandbox_free_detached(struct sandbox *sb);
#define SANDBOX_TEARDOWN_MAX_S 30
/* For a caller that will end sb with sandbox_free_detached(): make that
 * child now, after sandbox_start(), while the program runs, so that the
 * end of the run has no fork on its way (about 0.07 ms).  It waits for
 * the init's end (at most the run's timeout and SANDBOX_TEARDOWN_MAX_S
 * more) and does the same; where the end is not detached after all
 * (sandbox_free()), it finds the work done.  The same conditions as
 * sandbox_free_detached(): single-threaded caller, nothing else reaped
 * (the child is the caller's; it is never waited for).  Not for cells,
 * templates or a sandbox with an egress proxy; a failed fork is no
 * error (the end forks then, as without this). */
void sandbox_start_reaper(struct sandbox *sb);
/* Before the first sandbox: the sweep of other, dead supervisors' cgroup
 * directories (cgroup_host_sweep) is done by sandbox_free_detached()'s
 * child, after the result, instead of before the first sandbox (a few
 * hundred system calls on a host with many sandboxes).  For a process
 * that makes one sandbox and ends it with sandbox_free_detached(). */
void sandbox_defer_sweep(void);

#endif

#ifndef CODECELL_SANDBOX_HOST_INFO
#define CODECELL_SANDBOX_HOST_INFO
/* What this host offers, for `codecell check`. */
struct sandbox_host_info {
	int cgroup_version;		/* 0 none, 1, 2 */
	const char *cgroup_why;		/* static; why a controller is missing */
	const char *cgroup_parent;	/* where sandboxes' cgroups go; static until exit */
	unsigned enforceable;		/* enum sandbox_limit bits */
	int landlock_abi;		/* 0: unavailable */
	unsigned seccomp_insns[2];	/* the two filters' lengths */
	const char *seccomp_built_with; /* "libseccomp X.Y.Z" */
	/* root's host id range for sandboxes (ids.h); ids_error -errno if
	 * none could be loaded */
	int ids_error;
	const char *ids_source; /* static */
	unsigned ids_uid_base, ids_gid_base, ids_count;
};
void sandbox_host_info(struct sandbox_host_info *ret);
#endif
