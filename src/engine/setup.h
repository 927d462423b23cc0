/* engine/setup: what a door sets up besides calls: a session's options,
 * the warm pool, the host's probe.  Through here engine/ stays the one
 * way in (no door calls session_* or sandbox_*): these are the lower
 * tiers' functions, with the same contracts. */
#ifndef CODECELL_ENGINE_SETUP_H
#define CODECELL_ENGINE_SETUP_H

#include "session/session.h"

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

#endif
