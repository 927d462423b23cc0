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
	char **env;	/* owned copy of opts.env */
	char **files;	/* owned copy of opts.files */
	char *workspace_dir; /* owned copy */
	char *egress;	/* owned copy of opts.egress */
	/* with opts.project_dir: the project (opts.project_dir points into
	 * it) and, while a restart makes the new sandbox, the old one's
	 * upper layer, whose changes the new one gets */
	struct changes_base *project;
	int carry_upper;
	/* connections decided in sandboxes gone since (a restart), until a
	 * cell or the session's end takes them for the audit log */
	struct egress_log egress_kept;
	char *preload;	/* owned copy of opts.preload */
	char *preloaded; /* what the kernel said it imported */
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
	int want_id;	/* the request we wait on; 0: the ready event */
	bool finished;	/* its answer came */
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
	json_t *error;	 /* the error event, if any */
	json_t *answer;	 /* done / complete / ready event */
	int stop_fd;
	int hangup_fd;
	void (*on_result)(void *userdata, const json_t *bundle);
	void (*on_hangup)(void *userdata);
	void *userdata;
};

/* session.c: the object.  swap_sb: put sb in s->sb and return the old
 * one, which no other thread can reach any more; what its proxy decided
 * is kept for the audit log.  tpl_sandbox, tpl_fd: the sandbox a cell is
 * forked in and the socket its request goes to. */
struct sandbox *session_swap_sb(struct session *s, struct sandbox *sb);
const struct sandbox *session_tpl_sandbox(const struct pool_tpl *t);
int session_tpl_fd(const struct pool_tpl *t);

/* spawn.c: the kernel's sandbox for s->kind, its workspace filled from
 * from_ws (a restart's previous sandbox) or the caller's inputs, started;
 * s->sb after.  fill_workspace: that filling alone.  await_ready: its
 * ready event (the preloads imported).  *ret_error: a message, or NULL. */
int session_fill_workspace(struct session *s, int from_ws, char **ret_error);
int session_spawn_kernel(struct session *s, int from_ws, char **ret_error);
int session_await_ready(struct session *s, char **ret_error);

/* exchange.c: one exchange with the kernel.  init and release around
 * it (want_id 0: the ready event; live_out, live_err: the caller's fds
 * for output as it comes, or -1); for_cell: a cell's, whose results
 * count against result_limit.  pump: until the answer or the sandbox's
 * end (0 with ret->end saying which); on_deadline gets the exchange as
 * its argument, interrupt_cell is a cell's.  send_request: one request
 * line; send_json: the same of one built for it (NULL: -ENOMEM), which it
 * steals.  request: send one and wait up to timeout_s for its answer
 * (*ret_answer, a new reference); simple_op: one answered by "done". */
int session_exchange_init(struct exchange *x, struct session *s, int want_id,
			  int live_out, int live_err);
void session_exchange_for_cell(struct exchange *x);
void session_exchange_release(struct exchange *x);
int session_pump(struct session *s, struct exchange *x, double deadline,
		 double (*on_deadline)(void *), struct sandbox_exit *ret);
double session_interrupt_cell(void *ud);
int session_send_request(struct session *s, json_t *req);
int session_send_json(struct session *s, json_t *req);
int session_request(struct session *s, int id, json_t *req, double timeout_s,
		    json_t **ret_answer);
int session_simple_op(struct session *s, const char *op);

#endif
