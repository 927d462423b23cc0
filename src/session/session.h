/* session: a sandbox that outlives one call, with a kernel inside that
 * keeps variables, imports and files between executions (DESIGN.md
 * "Sessions").
 *
 * The kernel (kernels/python_kernel.py) reads requests on fd 3 (a
 * socket) and writes events on fd 4 (a pipe), newline-delimited JSON; its
 * stdout and stderr are pipes we read.  A timeout interrupts the running
 * cell (SIGINT, through the sandbox's init) and keeps the session; if the
 * interrupt has not taken after a grace period the kernel is killed and
 * the session restarted (fresh state, same workspace), which the result
 * says.  Python (kernels/python_kernel.py), JavaScript
 * (kernels/node_kernel.js) and bash (kernels/bash_kernel.py, a Python
 * driver of one long-lived bash) speak the same protocol.  Not thread-safe: one
 * caller at a time per session. */
#ifndef CODECELL_SESSION_SESSION_H
#define CODECELL_SESSION_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "sandbox/sandbox.h"
#include "session/result.h"

#define SESSION_GRACE_S 2.0	      /* after SIGINT, before the kill */
#define SESSION_START_TIMEOUT_S 120.0 /* kernel start with its preloads */
/* One event line outside a cell (a fork's snapshot); a longer one kills
 * the kernel.  In a cell the cap is session_event_line_max(). */
#define SESSION_EVENT_MAX (32u << 20)
#define SESSION_EVENT_SLACK (64u << 10) /* an event's own fields, in a cell */
#define SESSION_EVENT_KEEP (64u << 10)	/* line buffer an idle session keeps */

/* The default limits of one-shot runs and sessions (README, "Options"). */
extern const struct sandbox_limits codecell_default_limits;
/* Its values, named once: engine/limits.c's table reads them too. */
#define CODECELL_DEFAULT_TIMEOUT_S 30
#define CODECELL_DEFAULT_MEMORY (512ull << 20)
#define CODECELL_DEFAULT_PIDS 128
#define CODECELL_DEFAULT_FILE_SIZE (128ull << 20)
#define CODECELL_DEFAULT_OPEN_FILES 1024
#define CODECELL_DEFAULT_TMP (64ull << 20)
#define CODECELL_DEFAULT_WORKSPACE (128ull << 20)
#define CODECELL_DEFAULT_CPUS 1
#define CODECELL_DEFAULT_OUTPUT_LIMIT (1u << 20)
#define CODECELL_DEFAULT_RESULT_LIMIT (8u << 20)
#define CODECELL_DEFAULT_IDLE_S 600 /* a session unused this long ends */

/* A program that writes this many times its output limit (and at least
 * the minimum) is stopped, status output_limit; below that its output is
 * only cut.  One rule for one-shot runs and sessions. */
#define CODECELL_FLOOD_FACTOR 16
#define CODECELL_FLOOD_MIN (16u << 20)
static inline uint64_t codecell_flood_cap(uint64_t output_limit)
{
	uint64_t cap = output_limit * CODECELL_FLOOD_FACTOR;

	return cap < CODECELL_FLOOD_MIN ? CODECELL_FLOOD_MIN : cap;
}

#define SESSION_MAX_ENV 64
#define SESSION_POOL_MAX 64	       /* kernels a warm pool keeps ready */
#define SESSION_CONTROL_TIMEOUT_S 10.0 /* a kernel's answer to init, reseed, reap, complete */
#define SESSION_FORK_TIMEOUT_S 60.0    /* to serialize, and to take over, a session's state */
/* The sandboxed program's environment: our defaults, the proxy
 * variables of net (SANDBOX_NET_ALLOWLIST: sandbox/egress.h's
 * egress_env), then extra (KEY=VALUE); a later KEY replaces an earlier
 * one (interpreters disagree on which duplicate they read).  inline_plots
 * selects the kernel's matplotlib backend.  envp needs room for
 * SESSION_MAX_ENV + 24. */
void session_envp_net(const char *const *extra, bool inline_plots, enum sandbox_net net,
		      const char **envp);

enum session_lang { SESSION_PYTHON, SESSION_JAVASCRIPT, SESSION_BASH };

struct session_opts {
	enum session_lang lang;
	struct sandbox_limits limits; /* timeout_s: default per execution */
	uint64_t output_limit;	      /* bytes kept per stream per execution */
	/* bytes of results[] (figures, the main result) kept per execution,
	 * counted as the event lines that carried them; the rest is dropped
	 * with a marker bundle and truncated.results */
	uint64_t result_limit;
	const char *const *env;	   /* extra KEY=VALUE, or NULL */
	const char *preload;	   /* Python: "numpy,pandas", or NULL */
	const char *workspace_dir; /* host dir copied in at start, or NULL */
	const char *const *files;  /* host files copied in at start, or NULL */
	/* a host directory the workspace shows through an overlay
	 * (sandbox_config.project_dir); a restart carries the changes over;
	 * never from a pool, never forked.  NULL: none */
	const char *project_dir;
	enum sandbox_net net;
	/* SANDBOX_NET_ALLOWLIST: the policy's egress list (copied) */
	const char *egress;
	bool strict;
	double idle_timeout_s; /* 0: never expires */
	/* Take the kernel from this warm pool (see session_pool_new), or
	 * NULL to start one cold.  The pool's own options (language,
	 * preload, limits, network) win over these where they differ. */
	struct session_pool *pool;
};

struct session;
struct session_pool;

/* The longest event line a cell's exchange takes: result_limit +
 * 2 * output_limit + SESSION_EVENT_SLACK.  A longer line is skipped as it
 * comes (never buffered) and counted as a dropped result. */
uint64_t session_event_line_max(const struct session_opts *o);

/* A warm pool of `size` ready Python kernels, forked from a template
 * process that has imported o->preload inside its own sandbox; each fork
 * is a sandbox of its own (mount, PID, IPC, UTS and network namespaces,
 * cgroup, charged to it from its first page) and is reseeded.  Refills in
 * the background as sessions take kernels (several at once, and more
 * than `size` for a while after takes found none ready); a take that finds
 * none has the template fork one at once.  A template that dies is
 * started again (with backoff); meanwhile sessions start cold and
 * session_pool_health() says degraded.  Thread-safe.  On failure -errno and, if ret_error is not
 * NULL, a message in *ret_error (free()). */
int session_pool_new(const struct session_opts *o, unsigned size, struct session_pool **ret,
		     char **ret_error);
/* Kernels ready to be taken now. */
unsigned session_pool_ready(const struct session_pool *p);
/* What the pool has done so far (counters only grow). */
struct session_pool_stats {
	uint64_t template_restarts; /* templates started again after a death */
	uint64_t template_deaths;   /* templates (or their inits) seen dead */
	uint64_t made;		    /* kernels the refill made ready */
	uint64_t taken_ready;	    /* takes served by a ready kernel */
	uint64_t taken_warmed;	    /* of those, kernels warmed ahead for a fork */
	uint64_t taken_direct;	    /* takes that found none ready and had the
				       template fork one on the spot */
	uint64_t cold;		    /* takes the pool could not serve (down) */
	uint64_t discarded;	    /* ready kernels found dead, not handed out */
	uint64_t cell_failures;	    /* cells the template could not make */
};
/* The pool's health.  degraded: no live template (it died and a new one
 * is not up yet, or cannot start), or cells keep failing; why says which
 * ("" when healthy).  Sessions still start meanwhile, cold.  The pids are
 * the host's (0 while down), for watching and tests. */
struct session_pool_health {
	unsigned ready, size;
	unsigned target; /* what the refill aims at: size, raised for a while by misses */
	unsigned making;
	unsigned warmed; /* of the ready ones, warmed ahead for a fork */
	bool template_alive;
	bool degraded;
	char why[256];
	pid_t template_pid, template_init_pid;
	struct session_pool_stats stats;
};
void session_pool_health(struct session_pool *p, struct session_pool_health *ret);
/* Host pids of the inits of up to max ready kernels, in ret; the count. */
unsigned session_pool_ready_pids(struct session_pool *p, pid_t *ret, unsigned max);
/* What the template imported ("numpy,pandas").  Owned by the pool. */
const char *session_pool_preloaded(const struct session_pool *p);
/* End the template and every kernel not taken.  Accepts NULL. */
void session_pool_free(struct session_pool *p);

/* The defaults of a one-shot run, 10 min idle expiry. */
void session_opts_init(struct session_opts *o);
/* Start a kernel.  On failure returns -errno and, if ret_error is not
 * NULL, a message for the user in *ret_error (free()). */
int session_new(const struct session_opts *o, struct session **ret, char **ret_error);
struct session_exec_opts {
	double timeout_s; /* 0: the session's default */
	int live_stdout;  /* stream the head of the output here, or -1 */
	int live_stderr;
	/* A signalfd, or any fd that delivers struct signalfd_siginfo
	 * records (a pipe, say), or 0/-1 for none: SIGINT on it interrupts
	 * the cell and keeps the session; any other signal kills the kernel,
	 * and the result says "killed" with stopped set.  The workspace is
	 * kept: the next execution starts a fresh kernel with it. */
	int stop_fd;
	/* Called in the calling thread for each result as the kernel sends
	 * it (a figure shown mid-cell, the main result), before
	 * session_exec() returns them all in results[]; bundle is borrowed.
	 * NULL: none. */
	void (*on_result)(void *userdata, const json_t *bundle);
	/* A socket whose peer may go away (an HTTP client's), or 0/-1: when
	 * it hangs up, the cell is interrupted as by SIGINT on stop_fd, and
	 * on_hangup (if set) is called in the calling thread. */
	int hangup_fd;
	void (*on_hangup)(void *userdata);
	void *userdata;
	/* The allowlist network: the connections its proxy decided since the
	 * last cell, for the audit log (sandbox.h; the caller frees ev).
	 * NULL: not taken (kept for the next cell that asks, up to the
	 * proxy's cap). */
	struct egress_log *egress_log;
};

/* Run code (eo may be NULL for the defaults).  The result is filled as
 * for a one-shot run, plus results[] (the main result of a trailing
 * expression, figures), execution_count and restarted.  Returns -errno
 * only when the session cannot go on (it could not restart). */
int session_exec(struct session *s, const char *code, size_t len,
		 const struct session_exec_opts *eo, struct run_result *ret);
/* Is code a complete statement?  1 complete, 0 incomplete, -EINVAL
 * invalid, other -errno on failure. */
int session_complete(struct session *s, const char *code);
/* Tab completion: what text (a name or a dotted name, as typed) can
 * become, from the kernel's namespace (Python: rlcompleter's matches;
 * other kernels have none: -EOPNOTSUPP).  The kernel is untrusted: at
 * most SESSION_NAMES_MAX names are kept, each at most SESSION_NAME_MAX
 * bytes of printable UTF-8 that starts with text; others are dropped.
 * *ret is a heap array of heap strings (session_names_free()), *ret_n
 * its length (0: no names, *ret NULL).  0 or -errno. */
#define SESSION_NAMES_MAX 200
#define SESSION_NAME_MAX 256
int session_names(struct session *s, const char *text, char ***ret, size_t *ret_n);
void session_names_free(char **names, size_t n);
/* A fresh kernel, the same workspace.  0 or -errno. */
int session_restart(struct session *s);
/* A new session with a copy of s (Python): its workspace, and the
 * variables the kernel can serialize (with dill, which the sandbox has:
 * functions, classes and lambdas defined in cells too; modules are
 * imported again).  Same options and environment, from the same pool if
 * s has one; no --workspace directory of its own.  From then on the two
 * are independent.  Returns 0 or -errno; *ret_message (free()) is then
 * what was not copied and why (NULL: everything was), or on failure a
 * message for the user. */
int session_fork(struct session *s, struct session **ret, char **ret_message);
/* Interrupt the running cell (SIGINT to the kernel, as a timeout does);
 * the session_exec() in progress returns its result with the cell's
 * KeyboardInterrupt.  Harmless when idle.  The one call that may be made
 * from another thread while session_exec() runs.  0, or -ESRCH when the
 * kernel is not running. */
int session_interrupt(struct session *s);
/* True once idle longer than the idle timeout (then free it). */
bool session_expired(const struct session *s);
/* Whether the running kernel came from a warm pool. */
bool session_pooled(const struct session *s);
/* The preload modules that imported, as the kernel said ("numpy,...");
 * and those that did not, with why ("nosuch: ModuleNotFoundError: ...",
 * "" for none).  Owned by the session. */
const char *session_preloaded(const struct session *s);
const char *session_preload_failed(const struct session *s);
/* An O_PATH fd on the workspace root, owned by the session, for
 * openat_beneath() (util/fs.h) only; valid until the kernel is replaced
 * (restart, session_free).  -ESRCH when no kernel was started.  Use it
 * from the thread that uses the session. */
int session_workspace_fd(const struct session *s);
/* A pidfd of the process pid of the kernel's sandbox (its PID
 * namespace): sandbox_process_open(). */
int session_process_open(const struct session *s, pid_t pid);
/* With a project: the project and the start the changes are checked
 * against (session/changes.h; the caller may move since_ns after an
 * apply), and the upper layer's fd (owned by the session, valid until
 * the next restart; -ESRCH without a sandbox).  NULL / -1 without. */
struct changes_base;
struct changes_base *session_project(struct session *s);
int session_upper_fd(const struct session *s);
/* The allowlist network: the connections s's proxies decided and no
 * cell took yet (those of a sandbox a restart replaced included), into
 * *out (the caller frees out->ev).  0 or -ENOMEM. */
int session_egress_events(struct session *s, struct egress_log *out);
/* The same at the session's end: its processes are killed first, so a
 * program left running decides nothing after the events are taken. */
int session_egress_final(struct session *s, struct egress_log *out);
/* The host uid/gid files in the workspace must have for the sandboxed
 * program to own them. */
void session_workspace_owner(const struct session *s, uid_t *ret_uid, gid_t *ret_gid);
/* Copy the workspace out to opts.workspace_dir (if set).  0 or -errno;
 * *ret_warning (free()) names what could not be copied. */
int session_sync_workspace(struct session *s, char **ret_warning);
/* Kill the kernel, remove the sandbox.  Accepts NULL. */
void session_free(struct session *s);

#endif
