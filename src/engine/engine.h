/* engine: one request, whatever door it came in by: validate, run in a
 * sandbox, capture and normalize the result (DESIGN.md "Data flow"). */
#ifndef CODECELL_ENGINE_ENGINE_H
#define CODECELL_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sandbox/sandbox.h"
#include "session/result.h"
#include "session/session.h"
#include "engine/limits.h"

/* Named limits on what a caller may hand us. */
#define ENGINE_CODE_MAX (8u << 20)     /* bytes of code */
#define ENGINE_REPORT_MAX (1u << 20)   /* the driver's error record */
#define ENGINE_MAX_FILES 64	       /* --file */
#define ENGINE_MAX_ENV SESSION_MAX_ENV /* --env */
#define ENGINE_MAX_ARGS 256	       /* program arguments */
/* The flood rule (output past 16 times its limit stops the program) is
 * session.h's codecell_flood_cap(), one for runs and sessions. */

enum engine_lang { LANG_PYTHON, LANG_JAVASCRIPT, LANG_BASH, LANG_SQL, _LANG_MAX };

/* "python", "javascript", ... */
const char *engine_lang_name(enum engine_lang l);
/* Accepts names and aliases (py, js, node, sh, sqlite).  0 or -EINVAL. */
int engine_lang_parse(const char *name, enum engine_lang *ret);
/* From a file name's extension.  0 or -ENOENT. */
int engine_lang_from_path(const char *path, enum engine_lang *ret);

/* A list of Python modules to import when a session starts, each with the
 * name to bind it to if any: "numpy as np, pandas as pd, json" (commas,
 * blanks around items).  0, or -EINVAL with a message in err (n bytes)
 * that names the bad item.  Every door checks preloads with this. */
int engine_preload_check(const char *list, char *err, size_t n);
/* The one language table's other columns: a name for people ("Python"),
 * the session kind (-EINVAL for sql, which has none), and back. */
const char *engine_lang_title(enum engine_lang l);
int engine_lang_session(enum engine_lang l, enum session_lang *ret);
enum engine_lang engine_lang_of_session(enum session_lang s);
/* The list of names for messages: "python, javascript, bash, sql". */
const char *engine_lang_list(void);

/* The seed option: a whole number from 0 to ENGINE_SEED_MAX (Python's
 * PYTHONHASHSEED range).  engine_seed_parse: 0 or -EINVAL with a message.
 * engine_seed_env: env (NULL-terminated, or NULL) and the variables that
 * carry the seed to the drivers (CODECELL_SEED, PYTHONHASHSEED, BASH_ENV),
 * as one new NULL-terminated array of new strings (engine_env_free), or
 * NULL on ENOMEM. */
#define ENGINE_SEED_MAX 4294967295ull
int engine_seed_parse(const char *text, uint64_t *ret, char *err, size_t n);
char **engine_seed_env(const char *const *env, uint64_t seed);
void engine_env_free(char **env);

struct run_request {
	enum engine_lang lang;
	const char *code; /* not necessarily NUL-terminated */
	size_t code_len;
	const char *filename;	   /* shown in tracebacks: "script.py", "<stdin>" */
	const char *const *args;   /* program arguments, NULL-terminated or NULL */
	const char *const *env;	   /* extra KEY=VALUE, NULL-terminated or NULL */
	const char *const *files;  /* host files to copy in, or NULL */
	const char *workspace_dir; /* host dir copied in and synced back, or NULL */
	const char *db_path;	   /* sql: database copied in, or NULL */
	struct sandbox_limits limits;
	uint64_t output_limit; /* bytes kept per stream */
	enum sandbox_net net;
	/* SANDBOX_NET_ALLOWLIST: the policy's egress list (engine_check_run
	 * sets it; borrowed) */
	const char *egress;
	bool strict;
	bool has_seed; /* random, numpy.random, Math.random, $RANDOM, hashes */
	uint64_t seed;
	/* Stream the head of the output here as it comes, the rest at the
	 * end; -1 for none. */
	int live_stdout;
	int live_stderr;
	/* Readable = stop now (a signalfd of SIGINT/SIGTERM): the tree is
	 * killed and the result is "killed".  -1 for none. */
	int stop_fd;
	/* The program's stdin, or -1 for /dev/null.  Only a pipe: a file
	 * fd would hand the sandbox a host inode, a socket a host peer. */
	int stdin_fd;
	/* A host directory the workspace shows through an overlay: the
	 * program reads it and changes only an upper layer (not with
	 * workspace_dir).  When it changed anything and changes_dir is set,
	 * the changes are saved there (session/changes.h) and described in
	 * *changes.  NULL: none. */
	const char *project_dir;
	const char *changes_dir;
	struct run_changes *changes;
	/* NULL (the default): engine_run returns once nothing of the
	 * sandbox is left.  Else it returns as soon as the result is final
	 * (the program and everything it started are gone, the workspace
	 * synced), and leaves here the sandbox whose init's exit, namespaces
	 * and cgroups are still to be torn down, for the caller to end with
	 * sandbox_free() or, in a process about to exit,
	 * sandbox_free_detached() (`codecell run`); NULL when nothing is
	 * pending. */
	struct sandbox **teardown;
	/* SANDBOX_NET_ALLOWLIST: where the proxy's connections go, for the
	 * audit log (engine_audit_egress; the caller frees ev).  NULL: not
	 * kept. */
	struct egress_log *egress_log;
};

/* What a run with a project changed. */
struct run_changes {
	size_t count;	 /* entries changed (0: nothing, nothing saved) */
	bool truncated;	 /* more than the list holds */
	bool saved;	 /* in run_request.changes_dir */
	char error[512]; /* why they could not be saved, or "" */
};

/* Defaults for every field a caller does not set. */
void run_request_init(struct run_request *req);

/* Run a request to completion.  Problems with the request or the host
 * come back in *ret (status REJECTED or setup_failed, with a message);
 * the return is -errno only when the supervisor itself failed. */
int engine_run(const struct run_request *req, struct run_result *ret);
/* Run code in a session, through the same checks as a one-shot run
 * (size, UTF-8, NUL bytes): bad code comes back as status REJECTED.
 * Otherwise as session_exec(). */
int engine_session_exec(struct session *s, const char *code, size_t len,
			const struct session_exec_opts *eo, struct run_result *ret);
/* Parse a driver's report ({"error": {"name", "value", "traceback"}},
 * written by code inside the sandbox: untrusted) into r's error fields.
 * Anything else is ignored. */
void engine_parse_report(const char *data, size_t len, struct run_result *r);
/* The CLI's exit status for a result (README "Exit codes"). */
int run_result_exit_status(const struct run_result *r);

/* codecell's own exit statuses. */
#define EXIT_CODECELL_ERROR 125
#define EXIT_TIMEOUT 124
#define EXIT_MEMORY_LIMIT 137
#define EXIT_OUTPUT_LIMIT 141

#endif
