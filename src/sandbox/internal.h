/* Internal to src/sandbox: the child context prepared by the supervisor
 * before clone, the setup steps, and the messages the child sends back. */
#ifndef CODECELL_SANDBOX_INTERNAL_H
#define CODECELL_SANDBOX_INTERNAL_H

#include <linux/filter.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "sandbox/cgroup.h"
#include "sandbox/sandbox.h"

/* Every setup step has a name the user sees in "cannot ...: errno". */
enum step {
	STEP_CLONE,
	STEP_UID_MAP,
	STEP_CGROUP,
	STEP_SYNC,
	STEP_CGROUP_NS,
	STEP_MOUNT_PRIVATE,
	STEP_ROOTFS,
	STEP_LOOPBACK,
	STEP_EGRESS,
	STEP_HOSTNAME,
	STEP_PIVOT_ROOT,
	STEP_TIME_NS,
	STEP_WORKSPACE,
	STEP_SCRIPT,
	STEP_FORK,
	STEP_SIGNALS,
	STEP_SETSID,
	STEP_FDS,
	STEP_IDS,
	STEP_RLIMITS,
	STEP_CHDIR,
	STEP_CAPS,
	STEP_NO_NEW_PRIVS,
	STEP_LANDLOCK,
	STEP_SECCOMP,
	STEP_EXEC,
	STEP_PROJECT,
	STEP_NET_NS,
	STEP_NET_JOIN,
	_STEP_MAX,
};
const char *sandbox_step_name(int step);

enum msg_kind {
	MSG_READY = 1,	 /* init built the root; carries the workspace fd */
	MSG_SETUP_ERROR, /* a step failed: step, err */
	MSG_EXITED,	 /* the program ended: wstatus */
	MSG_HELLO,	 /* a cell's init: carries a pidfd of itself */
	MSG_UPPER,	 /* before READY, with a project: the upper layer's fd */
	MSG_EGRESS,	 /* before READY, allowlist network: the proxy's listening socket */
};

/* How the child ends up (see cell.c for the template and its cells). */
enum child_mode {
	CHILD_EXEC,	/* the worker drops everything and execs the program */
	CHILD_TEMPLATE, /* the worker execs the program keeping the capabilities
			   a template needs to build cells; no Landlock, no
			   seccomp; the init reaps until no child is left */
	CHILD_CELL,	/* forked from a template: the worker drops everything
			   and returns into the template's code instead of
			   exec */
};

/* What a template is sent to make a cell: this, with the fds (report
 * socket, stdout, stderr, then pass_fds, then n_join "tasks" files of
 * the cell's v1 cgroups and n_join of the template's own) as SCM_RIGHTS.
 * The template's forking thread writes "0" into the cell's before fork()
 * and into its own after, so that everything the fork allocates (page
 * tables, namespaces, the cell's init) is charged to the cell's cgroup,
 * not the template's; the join fds are the template's, never the cell's.
 * Both ends are the same build (cell.so is embedded in the binary). */
#define CELL_SPEC_MAGIC 0x6c6c6563u
struct cell_spec {
	uint32_t magic;
	uint32_t size; /* sizeof(struct cell_spec) */
	struct sandbox_limits limits;
	uint32_t net;
	uint32_t set_groups;
	uint32_t n_pass_fds;
	uint32_t unenforced;
	uint32_t n_join;	 /* 0 (v2, no cgroup) to _CGROUP_CTRL_MAX */
	uint32_t cgroup_version; /* struct rootfs_host, for the cell's root */
	uint32_t cgroup_ctrls;
	uint32_t n_cpus;
	cpu_set_t cpus;
};

struct msg {
	int32_t kind;
	int32_t step;
	int32_t err;
	int32_t wstatus;
};

/* One operation building the new root (bubblewrap's SetupOp).  Paths
 * are relative to the new root unless said otherwise. */
enum rootfs_op_type {
	OP_DIR,	     /* mkdir dst */
	OP_TMPFS,    /* mount a tmpfs on dst (mkdir first) */
	OP_BIND_RO,  /* bind host src onto dst read-only, nosuid, nodev */
	OP_BIND_DEV, /* bind host device node src onto dst (file) */
	OP_SYMLINK,  /* dst -> src */
	OP_FILE,     /* write data to a new file dst */
	OP_COPY,     /* copy host file src into a new file dst */
	OP_MASK,     /* bind our empty file (or directory) src over dst,
			read-only; done by rootfs_apply_late(), after
			pivot_root, when the root is read-only and so is a
			bind of it: one mount call */
	OP_PROC,     /* mount a fresh proc on dst */
	OP_RO,	     /* remount dst read-only */
	OP_VIRT,     /* write data to a new file src, bind it over dst
			read-only, unlink src (the mount keeps the file) */
	OP_MOUNT,    /* mkdir dst, mount a filesystem of type src on it
			with options data (devpts, cgroup); is_dir: a
			failure is ignored (the directory stays empty) */
	OP_TREE,     /* make the directories and read-only files packed in
			data (len bytes): records "d<path>\0" and
			"f<path>\0<content>\0" (rootfs.c, /sys/devices/
			system/cpu) */
};

struct rootfs_op {
	enum rootfs_op_type type;
	const char *src;
	const char *dst;
	const char *data; /* OP_FILE content, OP_TMPFS mount options */
	unsigned long flags;
	bool is_dir; /* OP_BIND_RO: the source is a directory */
	size_t len;  /* OP_FILE: data is len bytes (0: a string) */
};

/* The sandbox's sitecustomize.py, and the same compiled by the build's
 * python3.N (N: _minor) as a .pyc; _len 0 when there was none (build's
 * gen/site_py.c, scripts/embed-site.sh). */
extern const char sandbox_site_py[];
extern const unsigned char sandbox_site_pyc[];
extern const unsigned long sandbox_site_pyc_len;
extern const int sandbox_site_pyc_minor;

#define ROOTFS_MAX_OPS 128

struct rootfs {
	struct rootfs_op ops[ROOTFS_MAX_OPS];
	size_t n;
	char *strings[ROOTFS_MAX_OPS]; /* owned strings the ops point to */
	size_t n_strings;
	/* the ops before the cgroup mounts: on v1 the init applies them
	 * before it has joined its cgroups (child.c, init_build) */
	size_t n_early;
	/* under a CPU quota: the ceil(cpus) CPUs the init pins the tree to
	 * (and /proc/stat lists), so that nproc and sched_getaffinity say
	 * how many the quota is worth; n_cpus 0: no change (from struct
	 * rootfs_host) */
	cpu_set_t cpus;
	unsigned n_cpus;
};

/* What the root shows of the host's cgroups: the version and the
 * controllers (bits 1 << enum cgroup_ctrl) the sandbox has a cgroup of
 * its own in, which are mounted read-only at /sys/fs/cgroup (the
 * sandbox's cgroup namespace makes that cgroup their root). */
struct rootfs_host {
	int cgroup_version;
	unsigned cgroup_ctrls;
	/* the CPUs to pin the tree to (struct rootfs), n_cpus 0: none */
	cpu_set_t cpus;
	unsigned n_cpus;
	/* built inside a template's sandbox (a pool cell): what the
	 * template bound under /usr comes along with the recursive bind of
	 * /usr, and is not bound a second time */
	bool in_template;
};

/* CPUs for a sandbox under a quota of cpus cores (cpus.c): ceil(cpus)
 * of the caller's, the least used by this process's sandboxes, into
 * ret; returns how many (0: no pinning, without a quota or when it is
 * worth every CPU).  *ret_alone (if not NULL): one CPU, the caller's,
 * because none of this process's sandboxes holds one.  Give them back
 * with sandbox_cpus_release(). */
unsigned sandbox_cpus_take(double cpus, cpu_set_t *ret, bool *ret_alone);
void sandbox_cpus_release(const cpu_set_t *set);

/* Build the op list for the given limits (parent side; allocates). */
int rootfs_build(struct rootfs *fs, const struct sandbox_limits *l, const struct rootfs_host *host);
void rootfs_release(struct rootfs *fs);
/* Run ops [from, to) from the current directory, the new root's top
 * (child side; no allocation).  without_etc_files: leave out the files
 * of /etc, which rootfs_apply_etc_files() writes.  host_root: an fd of
 * the host's root, where the copies (OP_COPY) come from, or -1 (their
 * paths as they are).  On failure returns -errno. */
int rootfs_apply_ops(const struct rootfs *fs, size_t from, size_t to, bool without_etc_files,
		     int host_root);
/* The files of /etc (written or copied, not mounted), from the current
 * directory, their directories made as needed: they need no privilege
 * and no mount, so a program's early worker writes them on another CPU
 * while the init mounts, and the init, done with its mounts, takes
 * what is left (child.c, worker_prepare).  *next, in memory both share:
 * the index of the next op not taken; each caller takes ops one by one
 * and writes those that are files of /etc, until none is left. */
int rootfs_apply_etc_files(const struct rootfs *fs, unsigned *next, int host_root);
/* The OP_MASK ops, in the new root after pivot_root (cwd "/"). */
int rootfs_apply_late(const struct rootfs *fs);

/* Everything the child needs, prepared before clone.  The child works on
 * its own copy (fork semantics) and renumbers the fds below. */
struct child_ctx {
	const struct sandbox_config *cfg;
	/* copies of cfg's argv, envp and cwd in the sandbox's own heap: the
	 * caller's may live in codecell's argument area, which the init
	 * zeroes (scrub_cmdline) */
	char *const *argv;
	char *const *envp;
	const char *cwd;
	/* the fds the worker gets, as the init renumbered them (-1: none) */
	int fd_stdin, fd_stdout, fd_stderr;
	int fd_pass[SANDBOX_MAX_PASS_FDS];
	int fd_script; /* cfg->script_fd, renumbered; -1: none */
	const struct rootfs *fs;
	/* a lone sandbox's pin (sandbox_cpus_take's alone): the worker is
	 * pinned from its fork, the init not at all */
	bool lone_pin;
	/* the CPUs the supervisor's thread may use (sched_getaffinity at
	 * child_ctx_init): the early worker's mask is these minus the pin */
	cpu_set_t cpus_allowed;
	const struct sock_fprog *seccomp;
	int sock;		 /* child end of the socketpair */
	int parent_sock;	 /* to close in the child */
	bool set_groups;	 /* started as root: drop supplementary groups */
	bool keep_group_leaders; /* see sandbox_config */
	enum child_mode mode;
	/* a project (sandbox_config.project_dir): the lower layer, a
	 * detached mount (lower_is_mount), or -1 until the init opens the
	 * directory to bind; has_lower false: none (a cell never has one) */
	bool has_lower, lower_is_mount;
	int fd_lower;
	/* the host's root, opened by the init before the new root's tmpfs:
	 * where the files of /etc are copied from (rootfs.c, copy_file),
	 * which the init's early pivot_root (child.c) takes out of reach by
	 * path.  Closed once they are written. */
	int fd_host_root;
	struct rlimit rl_fsize, rl_nofile, rl_cpu, rl_data, rl_nproc;
	bool has_fsize, has_nofile, has_cpu, has_data, has_nproc;
};

/* The project's lower layer for the init (project.c): as root, a
 * detached read-only mount of dir, idmapped so that dir's owner is the
 * sandbox's host ids (*ret_is_mount true, *ret_fd the caller's);
 * otherwise *ret_fd -1: the init opens dir and binds it.  0 or -errno. */
int project_lower_open(const char *dir, bool privileged, uid_t host_uid, gid_t host_gid,
		       int *ret_fd, bool *ret_is_mount);

/* The init: never returns. */
__attribute__((noreturn)) void sandbox_child_main(struct child_ctx *c);
/* A cell's init, in a process that has just unshared its namespaces:
 * returns 0 in the worker, locked down, with fds 0..2+n_pass_fds only;
 * never returns elsewhere. */
int sandbox_cell_main(struct child_ctx *c);
/* cell.so's entry point (cell.c), called by a template in a fresh child. */
int codecell_cell_enter(const void *spec, size_t len, const int *fds, int n_fds);
int codecell_cell_joins(const void *spec, size_t len);
/* The rlimits the worker sets, from the limits and what no cgroup
 * enforces. */
void child_ctx_set_rlimits(struct child_ctx *c, const struct sandbox_limits *l,
			   unsigned unenforced);

/* The supervisor's side of a sandbox, shared by the supervisor's files
 * (sandbox.c and those beside it that spawn, wait, kill and tear down;
 * docs/ARCHITECTURE.md lists them).  The child's code never uses it. */
struct egress;

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
	struct sandbox_usage last_usage;   /* sandbox_usage_cheap() */
	size_t ep_nch;
	int ep_ch[SANDBOX_MAX_CHANNELS];
	dev_t ep_dev[SANDBOX_MAX_CHANNELS];
	ino_t ep_ino[SANDBOX_MAX_CHANNELS];
	bool in_grace;		 /* the deadline passed; the caller asked for grace */
	double grace_s;		 /* the grace asked for */
	uint64_t grace_start_ns; /* when it began */
	uint64_t grace_cpu_ns;	 /* the tree's CPU time at the last expiry */
	uint64_t grace_wait_ns;	 /* its wait for a CPU then (cgroup_read_cpu_wait) */
	uint64_t pressure_ns;	 /* the last memory-pressure notification */
	uid_t ws_uid;
	gid_t ws_gid;
	int id_lock_fd; /* holds ws_uid/ws_gid of the id range (ids.h), or -1 */
	uint64_t start_ns;
	bool started;
	bool autostart; /* the init starts the program itself (sandbox_config) */
	bool reaped;
	bool short_slice;      /* sandbox_set_cpu_weight gave the threads the boost's slice */
	bool sock_eof;	       /* the init closed its end: it is exiting */
	bool template_init;    /* CHILD_TEMPLATE: reaps until no child is left */
	bool cell;	       /* not our child: watched through the pidfd */
	struct egress *egress; /* SANDBOX_NET_ALLOWLIST's proxy, or NULL */
	bool born_in_cgroup;   /* v2: cloned into its cgroup (CLONE_INTO_CGROUP) */
	pid_t reaper;	       /* sandbox_start_reaper()'s process, or 0 */
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

/* Between the supervisor's files.  sandbox.c: the host's cgroups, probed
 * once (sandbox_global_init); what a new root shows of them; a sandbox's cgroup;
 * the object, nothing spawned yet. */
extern struct cgroup_host g_cgroups;
extern bool g_sweep_deferred; /* sandbox_defer_sweep() */
int sandbox_global_init(void);
void sandbox_rootfs_host_of(struct rootfs_host *ret);
int sandbox_make_cgroup(struct sandbox *sb, const struct sandbox_config *cfg);
int sandbox_alloc(const struct sandbox_config *cfg, bool privileged, bool cell,
		  struct sandbox **ret, const char **ret_step);
/* report.c: one report from the init (1, 0 at EOF, or -errno); every
 * report waiting (true once the socket is at EOF). */
int sandbox_recv_msg(int sock, struct msg *m, int *ret_fd);
bool sandbox_drain_reports(struct sandbox *sb);
/* spawn.c: the hand-shake from "go" to READY (late_cfg: v1 cgroups made
 * after "G"). */
int sandbox_handshake_go(struct sandbox *sb, const struct sandbox_config *late_cfg, int *ret_step);

/* Kill the tree (once: the first cause is the one reported); wait for
 * the init to be gone. */
void sandbox_kill_tree(struct sandbox *sb, enum sandbox_end cause, int reason);
void sandbox_reap(struct sandbox *sb);
/* sandbox_wait_opts.return_at_report: is the result final already? */
bool sandbox_final_at_report(const struct sandbox *sb);

/* The end of a sandbox that was waited for, as sandbox_wait() reports it. */
void sandbox_fill_exit(struct sandbox *sb, struct sandbox_exit *e);

#endif
