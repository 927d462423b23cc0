/* codecell: the engine as a C library (libcodecell.a, built by make).
 *
 * The same engine the CLI uses.  Two ways to run code:
 *
 *   one-shot   struct run_request req; run_request_init(&req); set
 *              req.lang, req.code, req.code_len, limits...; then
 *              engine_run(&req, &res).
 *   sessions   struct session_opts o; session_opts_init(&o);
 *              session_new(&o, &s, &err); engine_session_exec(s, code,
 *              len, NULL, &res) as often as needed; session_free(s).
 *
 * Either way the outcome is a struct run_result: run_result_to_json()
 * gives the result object of the README; run_result_release() frees it.
 * Link with libcodecell.a, -ljansson and -lm; see bench/bench_session.c
 * for a complete program.  Not thread-safe: one thread per session, and
 * the process-wide cgroup probe happens on first use.
 *
 * Stability: this is the first version; names may still change until a
 * release says otherwise.  What is not built yet (the warm pool, session
 * fork, JavaScript and bash sessions) is listed in README.md. */
#ifndef CODECELL_H
#define CODECELL_H

#include "engine/engine.h"   /* engine_run, engine_session_exec, run_request */
#include "session/result.h"  /* struct run_result, run_result_to_json */
#include "session/session.h" /* session_new, session_exec, session_restart, ... */

#endif
