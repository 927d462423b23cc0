/* engine/setup: what a door sets up besides calls: a session's options,
 * the warm pool, the host's probe and what it offers, the names of
 * limits, a one-shot process's detached end.  Through here engine/ stays the one
 * way in (no door calls session_* or sandbox_*): these are the lower
 * tiers' functions, with the same contracts. */
#ifndef CODECELL_ENGINE_SETUP_H
#define CODECELL_ENGINE_SETUP_H

#include "session/session.h"

struct buf;

/* The defaults of a session (session_opts_init): 10 min idle expiry. */
void engine_session_opts_init(struct session_opts *o);
/* A warm pool of size ready kernels made with o (session_pool_new): 0,
 * or -errno with a message in *ret_error (free()) when ret_error is not
 * NULL. */
int engine_pool_new(const struct session_opts *o, unsigned size, struct session_pool **ret,
		    char **ret_error);
/* Its health now (session_pool_health). */
void engine_pool_health(struct session_pool *p, struct session_pool_health *ret);
/* End it (session_pool_free).  Accepts NULL. */
void engine_pool_free(struct session_pool *p);
/* Probe the host (cgroups, id range) once for the process, before threads
 * need it (sandbox_host_info). */
void engine_host_probe(void);
/* The name of a limit a run can run into (a SANDBOX_LIMIT_* bit), or
 * NULL: not one (Landlock is a wall, never "hit"; an unknown bit). */
const char *engine_limit_hit_name(unsigned bit);
/* What this host offers the sandbox (sandbox_host_info): seccomp,
 * Landlock, cgroups and why not, the id range, the limits it can
 * enforce.  For `codecell check`, and a run's warning when limits are
 * not enforced. */
void engine_host_info(struct sandbox_host_info *ret);
/* The names of the limits among bits (SANDBOX_LIMIT_*: "memory",
 * "pids", ...), in bit order with sep between them, appended to out.
 * 0 or -E2BIG. */
int engine_limit_names_of(unsigned bits, const char *sep, struct buf *out);

/* A process that makes one sandbox and ends it with
 * engine_run_end_detached() (`codecell run`): the sweep of dead
 * supervisors' cgroups waits for that end, instead of delaying the
 * first sandbox (sandbox_defer_sweep).  Before engine_run(). */
void engine_run_defer_sweep(void);
/* End the sandbox run_request.teardown left, in a single-threaded
 * process about to exit: a child of its own tears it down (its init's
 * exit, namespaces, cgroups; sandbox_free_detached), never waited for.
 * The caller has said everything (and put its fds 0-2 on /dev/null, so
 * that a reader of its output is not held).  Accepts NULL. */
void engine_run_end_detached(struct sandbox *sb);

#endif
