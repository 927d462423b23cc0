/* Between the session module's files (session.c and those beside it;
 * docs/ARCHITECTURE.md lists them): the session object, one exchange with
 * its kernel, and the helpers one file lends another.  Nothing outside
 * src/session includes it: session.h is the module's API. */
#ifndef CODECELL_SESSION_INTERNAL_H
#define CODECELL_SESSION_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sandbox/sandbox.h"
#include "session/changes.h"
#include "session/events.h"
#include "session/session.h"
#include "util/capture.h"
#include "util/outorder.h"

/* What runs the kernel: a sandbox of its own (cold), a warm pool's
 * template, or a cell forked from one. */
enum kernel_kind { KERNEL_COLD, KERNEL_TEMPLATE, KERNEL_CELL };

/* The CPU weight (cgroup v2 units; 100 is everyone else's) of a pool's
 * template, and of a cell until its kernel is ready: neither runs code of
 * a session, and sessions wait for them. */
#define POOL_CPU_WEIGHT 10000

/* The CPU weight of a session's kernel while the caller waits on it for
 * a control operation of a millisecond or two (a fork's snapshot and
 * restore, a pooled kernel's environment).  At the default weight it
 * waits for its fair share behind every busy session at each wake-up:
 * 16-25 ms at the median, seconds at worst, with 64 busy clients on 2
 * cores.  A preference, not a limit: the CPU quota still holds, and the
 * weight goes back to the default as soon as the answer comes. */
#define CONTROL_CPU_WEIGHT 10000

struct pool_tpl;

struct session {
	struct session_opts opts;
	enum kernel_kind kind;
	/* the pool this session's kernels come from (a reference), or NULL */
	struct session_pool *pool;
	/* KERNEL_CELL: the template whose PID namespace holds the kernel (a
	 * reference: its init must outlive the cell) */
	struct pool_tpl *tpl;
	char **env;	     /* owned copy of opts.env */
	char **files;	     /* owned copy of opts.files */
	char *workspace_dir; /* owned copy */
	char *egress;	     /* owned copy of opts.egress */
	/* with opts.project_dir: the project (opts.project_dir points into
	 * it) and, while a restart makes the new sandbox, the old one's
	 * upper layer, whose changes the new one gets */
	struct changes_base *project;
	int carry_upper;
	/* connections decided in sandboxes gone since (a restart), until a
	 * cell or the session's end takes them for the audit log */
	struct egress_log egress_kept;
	char *preload;	      /* owned copy of opts.preload */
	char *preloaded;      /* what the kernel said it imported */
	char *preload_failed; /* and what it could not */
	/* replaced only under sb_lock, which session_interrupt() takes: it
	 * may come from another thread while a restart swaps the sandbox */
	struct sandbox *sb;
	pthread_mutex_t sb_lock;
	int req_fd; /* our end of the kernel's fd 3 */
	int out_fd, err_fd, ev_fd;
	struct event_reader events; /* fd 4: untrusted, the cell can write to it */
	int next_id;
	uint64_t last_used_ns;
	bool filled; /* the caller's files are in */
	/* a pool's kernel that has run the template's sample restore (see
	 * warm_child); for_fork: the session asks the pool for one */
	bool warmed, for_fork;
	/* usage.max_rss_kb of a pooled kernel (see memory_peak()) */
	uint64_t shared_mem, shared_read_ns, rss_peak;
};

/* What one exchange with the kernel collects. */
struct exchange {
	struct session *s;
	int want_id;	  /* the request we wait on; 0: the ready event */
	bool finished;	  /* its answer came */
	bool interrupted; /* we sent SIGINT at the deadline */
	struct capture out, err;
	struct outorder order; /* the order out and err came in */
	/* stdout, stderr: the last read filled the buffer, so more may wait */
	bool more[2];
	int live_out, live_err;
	uint64_t total, flood;
	bool is_exec; /* a cell: its results count against result_limit */
	/* Every kernel says "started" when a cell's code begins.  A
	 * SIGINT sent before that (the cell still in the socket, or being
	 * parsed) finds the kernel idle and is ignored, and the cell runs on
	 * to its timeout: an interrupt asked for then waits for "started". */
	bool says_started, started, interrupt_wanted;
	struct result_budget budget;
	struct event_reader counts; /* the reader's counts when the cell ended */
	json_t *results;
	json_t *error;	/* the error event, if any */
	json_t *answer; /* done / complete / ready event */
	int stop_fd;
	int hangup_fd;
	void (*on_result)(void *userdata, const json_t *bundle);
	void (*on_hangup)(void *userdata);
	void *userdata;
};

/* ---- the warm pool ----
 *
 * A template session (KERNEL_TEMPLATE) imports the preloads once; refill
 * threads keep `target` cells forked from it ready (each a KERNEL_CELL
 * session that has said ready), and session_new(), session_restart() and
 * session_fork() take one.  A taker that finds none asks the template
 * for a cell itself (the template forks in about a millisecond and
 * queues concurrent requests), and raises the target for a while.
 *
 * A template is a struct pool_tpl with a reference count: the pool's
 * while it is the live one, and each cell's, since the template's init
 * is the parent of every cell and its PID namespace holds them.  A
 * watcher thread polls the template's and its init's pidfds; when either
 * dies the pool is down ("degraded", with a reason) until a new template
 * is up, started again with backoff.  Cells of a dead template whose
 * init lives go on; the init goes when the last of them does. */

#define POOL_MAKERS 3 /* cells in the making at once, by the refill */
/* Ready kernels kept warmed for forks: each has run the template's
 * sample restore (warm_child), ~1.5 ms and ~1.9 MiB of its own pages, so
 * that a fork's copy starts its restore at once instead of after it.
 * Creates take the others first: a pool of size N keeps
 * min(POOL_WARM, N - 1) warmed, so a full pool has one of those. */
#define POOL_WARM 2
#define POOL_BACKOFF_MIN_S 0.25 /* first wait before starting a template again */
#define POOL_BACKOFF_MAX_S 30.0
#define POOL_STABLE_S 10.0	 /* a template that lived this long resets the backoff */
#define POOL_TARGET_DECAY_S 10.0 /* a raised target sinks by one each period without misses */
#define POOL_TEMPLATE_MEMORY (1ull << 30)
#define POOL_LOST_MAX 8 /* lost templates watched for their init's exit */

struct pool_tpl {
	unsigned refs;	   /* atomic */
	struct session *s; /* the template's session */
	int pidfd;	   /* the template program's, from its first message */
	pid_t pid;
};

struct grave {
	struct grave *next;
	struct sandbox *sb;
	struct pool_tpl *tpl; /* the reference the kernel held */
};

struct session_pool {
	pthread_mutex_t lock;
	pthread_cond_t want; /* the refill threads wait on it */
	struct session_opts opts;
	char *preload;
	char *preloaded, *preload_failed; /* as the first template said */
	struct pool_tpl *tpl;		  /* the live template; NULL while down */
	struct session *ready[SESSION_POOL_MAX];
	unsigned n_ready, size, target, making;
	unsigned n_warmed, warming; /* of the ready ones, and in the making */
	unsigned refs;		    /* the caller's, and each session's */
	unsigned failures;	    /* cells that failed in a row */
	uint64_t retry_ns;	    /* after failures: no refill before */
	uint64_t last_miss_ns;
	bool stopping;
	int wake_fd; /* eventfd: wakes the watcher */
	/* killed kernels the reaper thread frees (restarts do not wait) */
	struct grave *graves;
	pthread_cond_t buried;
	pthread_t reaper;
	bool reaper_started;
	char why[256];
	struct session_pool_stats st;
	pthread_t watcher, makers[POOL_MAKERS];
	bool watcher_started;
	unsigned n_makers;
	/* templates lost, kept until their init exits (the watcher's) */
	struct pool_tpl *lost[POOL_LOST_MAX];
	unsigned n_lost;
};

/* session.c: the object.  swap_sb: put sb in s->sb and return the old
 * one, which no other thread can reach any more; what its proxy decided
 * is kept for the audit log.  tpl_sandbox, tpl_fd: the sandbox a cell is
 * forked in and the socket its request goes to. */
struct sandbox *session_swap_sb(struct session *s, struct sandbox *sb);
const struct sandbox *session_tpl_sandbox(const struct pool_tpl *t);
int session_tpl_fd(const struct pool_tpl *t);
/* alloc: a session object for o, owned copies of its strings, no
 * kernel (NULL: out of memory).  tpl_ref, tpl_unref: a template's count;
 * the last unref frees it (its init goes once no cell is left). */
struct session *session_alloc(const struct session_opts *o);
void session_tpl_ref(struct pool_tpl *t);
void session_tpl_unref(struct pool_tpl *t);
/* close_channels: our ends of the kernel's fds.  pool_ref, pool_unref:
 * a pool's count (the caller's, and each session's); the last unref
 * frees it. */
void session_close_channels(struct session *s);
void session_pool_ref(struct session_pool *p);
void session_pool_unref(struct session_pool *p);

/* lifecycle.c: a new kernel for s, from the pool or spawned, the old
 * sandbox's workspace carried over.  start: a session for o (for_fork:
 * the copy's of a fork, which takes a warmed kernel from the pool when
 * there is one); *ret_error: a message, or NULL. */
int session_start_kernel(struct session *s, char **ret_error);
int session_start(const struct session_opts *o, bool for_fork, struct session **ret,
		  char **ret_error);

/* spawn.c: the kernel's sandbox for s->kind, its workspace filled from
 * from_ws (a restart's previous sandbox) or the caller's inputs, started;
 * s->sb after.  fill_workspace: that filling alone.  await_ready: its
 * ready event (the preloads imported).  *ret_error: a message, or NULL. */
int session_fill_workspace(struct session *s, int from_ws, char **ret_error);
int session_spawn_kernel(struct session *s, int from_ws, char **ret_error);
int session_await_ready(struct session *s, char **ret_error);

/* template.c: tell the template to exit (it reads EOF); start one, with
 * one reference (the caller's); the watcher's thread; reap the lost
 * templates whose init has exited (all of them once the pool stops). */
void session_tpl_close(struct pool_tpl *t);
int session_tpl_start(const struct session_pool *p, struct pool_tpl **ret, char **ret_error);
void *session_pool_watcher_main(void *arg);
void session_pool_reap_lost(struct session_pool *p, bool all);

/* cells.c: is a template's init, a template, a ready kernel alive;
 * does a pool's kernel fit o; the makers' backoff after `failures` in a
 * row; ready[i] out of the ready list (under p->lock); the makers' and
 * the reaper's threads.  take: a live ready kernel (warmed for a fork,
 * if one is) or one asked of the template now, -EAGAIN when the pool has
 * none to give; bury: free a killed kernel's sandbox and drop its
 * template in the reaper's thread. */
bool session_tpl_init_alive(const struct pool_tpl *t);
bool session_tpl_alive(const struct pool_tpl *t);
bool session_kernel_alive(const struct session *k);
bool session_pool_matches(const struct session_pool *p, const struct session_opts *o);
double session_backoff_s(unsigned failures);
struct session *session_pool_unready(struct session_pool *p, unsigned i);
void *session_pool_maker_main(void *arg);
void *session_pool_reaper_main(void *arg);
int session_pool_take(struct session_pool *p, bool warmed, struct session **ret);
void session_pool_bury(struct session_pool *p, struct sandbox *sb, struct pool_tpl *t);

/* exchange.c: one exchange with the kernel.  init and release around
 * it (want_id 0: the ready event; live_out, live_err: the caller's fds
 * for output as it comes, or -1); for_cell: a cell's, whose results
 * count against result_limit.  pump: until the answer or the sandbox's
 * end (0 with ret->end saying which); on_deadline gets the exchange as
 * its argument, interrupt_cell is a cell's.  send_request: one request
 * line; send_json: the same of one built for it (NULL: -ENOMEM), which it
 * steals.  request: send one and wait up to timeout_s for its answer
 * (*ret_answer, a new reference); simple_op: one answered by "done". */
int session_exchange_init(struct exchange *x, struct session *s, int want_id, int live_out,
			  int live_err);
void session_exchange_for_cell(struct exchange *x);
void session_exchange_release(struct exchange *x);
int session_pump(struct session *s, struct exchange *x, double deadline,
		 double (*on_deadline)(void *), struct sandbox_exit *ret);
double session_interrupt_cell(void *ud);
int session_send_request(struct session *s, json_t *req);
int session_send_json(struct session *s, json_t *req);
int session_request(struct session *s, int id, json_t *req, double timeout_s, json_t **ret_answer);
int session_simple_op(struct session *s, const char *op);

#endif
