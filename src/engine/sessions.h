/* engine/sessions: the live sessions of a server, whatever door made
 * them, and their lifecycle (new, interrupt, restart, fork, close) through
 * the engine's pipeline (engine/call.h): validate -> policy check
 * (engine_check_*, with a person's approval when the policy asks for one)
 * -> the operation -> the audit record.  The doors translate requests and answers only. */
#ifndef CODECELL_ENGINE_SESSIONS_H
#define CODECELL_ENGINE_SESSIONS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/audit.h"
#include "engine/call.h"
#include "engine/changes.h"
#include "engine/engine.h"
#include "engine/policy.h"
#include "session/session.h"

#define ENGINE_SESSION_ID_LEN 32 /* hex characters of a session id */

/* A session as the server holds it.  lock is held around every call into
 * the session; s is NULL once the session was deleted or expired.  The
 * stop pipe carries struct signalfd_siginfo records to session_exec()'s
 * stop_fd: SIGINT interrupts the cell, SIGTERM kills the kernel. */
struct engine_session {
	char id[ENGINE_SESSION_ID_LEN + 1];
	pthread_mutex_t lock;
	struct session *s;
	int stop_r, stop_w;
	int refs; /* atomic */
	/* what it was made with, for listings (read-only after creation) */
	enum session_lang lang;
	char *preload;
	struct sandbox_limits limits;
	uint64_t output_limit;
	uint64_t result_limit;
	enum sandbox_net net;
	double idle_timeout_s;
	char created[32]; /* ISO 8601, UTC */
	bool pooled;
	/* how long the current kernel took to be ready (create, restart or
	 * fork); atomic: written by those, read by listings */
	uint64_t startup_ns;
	/* what the kernel imported; under info, which is never held long */
	pthread_mutex_t info;
	char *preloaded, *preload_failed;
	/* atomics: read without lock for listings */
	uint64_t executions;
	uint64_t last_used_ms; /* epoch milliseconds */
	int busy;
	/* set before a SIGTERM record is sent, checked by an execution after
	 * it drained the pipe (see api/exec.c job_claim) */
	int dying; /* deleted, expired */
	/* the client that made it; its session slot is given back when the
	 * last reference goes */
	struct engine_client *client;
	int restarting; /* a restart waits for the lock */
	char *project;	/* the host directory behind its overlay, or NULL */
	/* where its end is recorded (the allowlist proxy's connections no
	 * cell took: a program left running after the last cell), whoever
	 * ends it (a delete, expiry, shutdown); set when it is made */
	struct engine_audit *audit;
	char *audit_client;
	enum engine_door audit_door;
	/* the door that made it, for listings and for the doors that keep
	 * to their own ("api", "e2b", "mcp", "agent"; static) */
	const char *door;
};

/* The registry: a fixed table of max slots. */
struct engine_sessions {
	pthread_mutex_t lock;
	struct engine_session **slots;
	unsigned max, count, reserved;
	unsigned id_len; /* hex digits of its ids: ENGINE_SESSION_ID_LEN, or fewer (even) */
};

int engine_sessions_init(struct engine_sessions *reg, unsigned max);
void engine_sessions_release(struct engine_sessions *reg);
/* A place for one more session: 0, or -EBUSY at the limit. */
int engine_sessions_reserve(struct engine_sessions *reg);
void engine_sessions_unreserve(struct engine_sessions *reg);
/* Add entry (takes the reservation and a reference). */
void engine_sessions_add(struct engine_sessions *reg, struct engine_session *entry);
/* The entry with this id with a new reference, or NULL. */
struct engine_session *engine_sessions_get(struct engine_sessions *reg, const char *id);
/* Remove entry; true if it was there (its reference is the caller's now). */
bool engine_sessions_remove(struct engine_sessions *reg, struct engine_session *entry);
/* Every entry with a new reference each; *ret (free()) and its length. */
int engine_sessions_list(struct engine_sessions *reg, struct engine_session ***ret,
			 unsigned *ret_n);
unsigned engine_sessions_count(struct engine_sessions *reg);

/* A new entry with one reference; the session is not started. */
struct engine_session *engine_session_entry_new(unsigned id_len);
void engine_session_ref(struct engine_session *e);
/* Drop a reference; the last one frees the session and the entry. */
void engine_session_unref(struct engine_session *e);
/* Send a signal record to a running execution (SIGINT: interrupt,
 * SIGTERM: kill the kernel).  Harmless when idle: the next execution
 * drains the pipe first. */
void engine_session_signal(struct engine_session *e, int sig);
/* Under e->lock: drop records meant for an earlier execution. */
void engine_session_drain(struct engine_session *e);
/* Under e->lock: end the session now (delete, expiry, shutdown); the
 * connections its proxy decided since the last cell are recorded (one
 * request id for them all). */
void engine_session_end(struct engine_session *e);
/* Under e->lock: note what the kernel imported (after start, restart). */
void engine_session_note_preload(struct engine_session *e);
/* Under e->lock: an execution is over. */
void engine_session_touch(struct engine_session *e);
/* Whether e was deleted or expired (another door, the reaper, a
 * shutdown): nothing more will run in it.  Without e->lock. */
bool engine_session_gone(const struct engine_session *e);
/* e's workspace directory as a fd of the caller's (O_CLOEXEC), taken
 * under e->lock so that a close by another door cannot free it
 * meanwhile: -ESRCH when e is gone, -ENOENT when it has no sandbox now,
 * -errno. */
int engine_session_workspace_fd(struct engine_session *e);
/* A pidfd (the caller's) of the process pid in e's sandbox, seen from
 * outside it (session_process_open), taking e->lock: -ESRCH when the
 * session or the process is gone, -errno. */
int engine_session_process_open(struct engine_session *e, pid_t pid);
/* Such a process's wait status once it has exited (0; -EAGAIN while it
 * runs), and its kill (its process group): sandbox_process_status(),
 * sandbox_process_kill(). */
int engine_process_status(int pidfd, int *ret_wstatus);
int engine_process_kill(int pidfd);
/* The JSON description of a session (GET /v1/sessions/{id}). */
json_t *engine_session_json(struct engine_session *e);

/* ---- the lifecycle, through the pipeline ---- */

/* Who asks (struct engine_caller) and why a call failed (struct
 * engine_session_error): engine/call.h. */

/* What a new session is made with: the door's options (defaults filled
 * in; the policy may lower those not asked for), what was asked. */
struct engine_session_spec {
	struct session_opts so;
	unsigned asked; /* bits of enum engine_limit_id given by the caller */
	bool net_asked;
	const char *project; /* a host directory asked for, or NULL */
	const char *door;    /* the entry's door (static), NULL: the caller's door's name */
	bool has_seed;
	uint64_t seed;
	/* The caller checked the session itself and holds what a create
	 * takes: a place in reg (engine_sessions_reserve) and, with
	 * cl->client, the client's session slot (engine_check_session).  No
	 * second check or reservation; both go with the new entry, and are
	 * given back when it cannot be made.  Nothing is recorded (the
	 * caller recorded its check). */
	bool held;
	/* The caller's stop pipe (both ends, dup'd) as the entry's, so that
	 * the caller's own stop records and another door's interrupt or
	 * delete (engine_session_signal) reach the same cells; false: a
	 * pipe of its own. */
	bool has_stop;
	int stop_r, stop_w;
};

/* The errors of the calls below: 0, or -EPERM (the policy, verdict
 * set; recorded), -EINPROGRESS (held for a person, approval_id set;
 * recorded), -EBUSY (reg is full), -ESRCH (the session is gone),
 * -EINVAL (bad options), -EOPNOTSUPP (fork), another -errno (failed). */

/* Reserve a place, check, start the kernel, register it: *ret a new
 * reference.  The client's session slot goes back when it leaves reg. */
int engine_session_new(struct engine_sessions *reg, struct engine_caller *cl,
		       struct engine_session_spec *spec, struct engine_session **ret,
		       struct engine_session_error *err);
/* Give back what a spec->held create would have taken, when the caller
 * makes no session after all: reg's place, client's session slot (client
 * NULL: none). */
void engine_session_unhold(struct engine_sessions *reg, struct engine_client *client);
/* The policy check and record of action a on e alone (E2B's process
 * signals, a project's apply): 0, -EPERM or -EINPROGRESS. */
int engine_session_check(struct engine_caller *cl, struct engine_session *e, enum engine_action a,
			 struct engine_session_error *err);
/* Apply e's project changes (engine/changes.h) through the pipeline:
 * they are read (their digest, count and bytes are the arguments a
 * person approves: the approval names them), want (the caller's
 * changes_sha256, or NULL) must be theirs, the policy's check of
 * ACTION_APPLY (an approval through cl), then under e's lock the
 * changes applied if they are still the ones checked, and the record.
 * 0 with *ret_n the entries applied; -EPERM, -EINPROGRESS as above;
 * -ECANCELED (409 changes_moved), -ESTALE (409 project_changed),
 * -E2BIG (413), -ESRCH, -ENOTDIR (400 no_project), -ENOENT (409
 * no_workspace), another -errno (500): err says so. */
int engine_session_apply(struct engine_caller *cl, struct engine_session *e, const char *want,
			 size_t *ret_n, struct engine_session_error *err);
/* Under e->lock: e's project and its upper layer (the session's fd,
 * valid until e restarts), for engine/changes.h's functions.  0, or
 * -ESRCH (404 session_not_found), -ENOTDIR (400 no_project), -ENOENT
 * (409 no_workspace), with err. */
int engine_session_project(struct engine_session *e, struct changes_base **ret_b, int *ret_up,
			   struct engine_session_error *err);
/* What a discard did. */
struct engine_discarded {
	size_t discarded; /* paths made what the project has again */
	size_t kept;	  /* files the sandbox cannot read in the project: left */
	char project[sizeof(((struct changes_base *)0)->project)]; /* resolved */
};
/* Discard e's changes while it lives, taking e->lock: every path they
 * touch is made what the project has, through the workspace (the
 * overlay), as the sandbox's owner, so the program sees the project
 * again there; the project is not touched.  Files the sandbox cannot
 * read in the project stay as the program left them (ret->kept).  0, or
 * the errors of engine_session_project, 500 changes_failed (cannot read
 * them: the return is its -errno) or 500 discard_failed, with err. */
int engine_session_discard(struct engine_session *e, struct engine_discarded *ret,
			   struct engine_session_error *err);

/* Run code in e through the pipeline: the policy (engine_check_exec:
 * the language, the cell's timeout eo->timeout_s, the client's
 * executions and rate; a person's approval through cl), the cell under
 * e's lock (engine_session_exec: size, UTF-8 and NUL bytes checked
 * first), the record (args: the call's arguments for it, borrowed, or
 * NULL).  0 with *ret the result, a refusal by the policy included
 * (status rejected, naming the rule); -EINPROGRESS (held, no result),
 * -ECANCELED (cl->claim said no; nothing run, nothing recorded),
 * -ESRCH (e was closed), -EBUSY (e is being restarted), another -errno
 * (the session cannot go on): err says so. */
int engine_session_run(struct engine_caller *cl, struct engine_session *e, const char *code,
		       size_t len, const struct session_exec_opts *eo, json_t *args,
		       struct run_result *ret, struct engine_session_error *err);
/* The cell alone, after the door's own check (the server's, which
 * answers before a stream starts): under e's lock, what runs is
 * drained of earlier stop records, e's state checked, then claim(cls)
 * (NULL: none; false: -ECANCELED, err untouched) says whether it may
 * still start.  0 with *ret, or -ESRCH, -EBUSY (restarting) or the
 * session's -errno (err says so; *ret released). */
int engine_session_cell(struct engine_session *e, const char *code, size_t len,
			const struct session_exec_opts *eo, bool (*claim)(void *cls), void *cls,
			struct run_result *ret, struct engine_session_error *err);
/* Interrupt what runs in e; *ret_busy: something ran. */
int engine_session_interrupt(struct engine_caller *cl, struct engine_session *e, bool *ret_busy,
			     struct engine_session_error *err);
/* A fresh kernel, the same workspace: what runs is interrupted, and
 * killed if it has not stopped after SESSION_GRACE_S. */
int engine_session_restart(struct engine_caller *cl, struct engine_session *e,
			   struct engine_session_error *err);
/* A copy of src (its kernel's state, its workspace), registered.
 * *ret_not_copied: what was not (free()), or NULL. */
int engine_session_fork(struct engine_sessions *reg, struct engine_caller *cl,
			struct engine_session *src, struct engine_session **ret,
			char **ret_not_copied, struct engine_session_error *err);
/* Take e out of reg and end it (what runs is killed); false if it was no
 * longer there.  cl NULL: no record (expiry, shutdown).  The caller's
 * reference stays its own. */
bool engine_session_close(struct engine_sessions *reg, struct engine_caller *cl,
			  struct engine_session *e);
/* End the sessions idle past their idle_timeout (a busy one waits for
 * the next round); on_end (or NULL) is told of each.  The number ended. */
unsigned engine_sessions_reap(struct engine_sessions *reg,
			      void (*on_end)(void *cls, const struct engine_session *e), void *cls);
/* End every session (shutdown): what runs is stopped first. */
void engine_sessions_close_all(struct engine_sessions *reg);

#endif
