/* cli: the subcommands.  Each returns the process exit status. */
#ifndef CODECELL_CLI_CLI_H
#define CODECELL_CLI_CLI_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "engine/engine.h"
#include "util/buf.h"

int cli_run(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_shell(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_mcp(int argc, char **argv);
int cli_agent(int argc, char **argv);
int cli_audit(int argc, char **argv);
int cli_approvals(int argc, char **argv);
/* codecell diff|apply|discard CHANGES (argv[0] says which) */
int cli_changes(int argc, char **argv);

/* SIGINT, SIGTERM and SIGHUP blocked, and delivered on the signalfd this
 * returns (close-on-exec; flags may add SFD_NONBLOCK).  *ret_old gets the
 * mask before, if not NULL.  -errno on failure. */
int cli_stop_signals(int flags, sigset_t *ret_old);
/* SIGPIPE ignored: a write to a peer that went away fails with EPIPE. */
void cli_ignore_sigpipe(void);

/* A thread that waits for the first stop signal (cli_stop_signals), keeps
 * its number in signal, and writes one signalfd_siginfo record naming
 * forward_as on pipe[1]: pipe[0] is the stop fd the session library and
 * the MCP core watch.  SIGPIPE is ignored too. */
struct cli_stopper {
	int sfd, pipe[2];
	int forward_as;
	int signal; /* atomic: the signal that came, or 0 */
};
/* Start it: 0, or -errno.  ret_thread NULL: the thread is detached. */
int cli_stopper_start(struct cli_stopper *st, int forward_as, pthread_t *ret_thread);

struct run_opts {
	struct run_request req;
	bool json;
	bool help;
	bool lang_set;
	const char *path; /* FILE or "-" */
	const char *files[ENGINE_MAX_FILES + 1];
	size_t n_files;
	const char *env[ENGINE_MAX_ENV + 1];
	size_t n_env;
	char **args; /* points into argv: the program's arguments */
	/* codecell shell */
	bool shell;
	const char *preload;
	double idle_timeout_s;
	unsigned limits_set; /* bits of enum engine_limit_id given */
	bool net_set;
	const char *policy_path; /* --policy FILE, or NULL: the built-in default */
	const char *audit_path;	 /* --audit FILE|off, or NULL: the command's default */
	const char *changes_dir; /* --changes DIR (with --project) */
};

/* Parse `codecell run` arguments (argv[0] is "run").  Pure: no I/O.
 * Returns 0, or -EINVAL with a message for the user in err. */
int run_opts_parse(int argc, char **argv, struct run_opts *o, struct buf *err);
/* The same for `codecell shell` (no FILE; --preload, --idle-timeout). */
int shell_opts_parse(int argc, char **argv, struct run_opts *o, struct buf *err);
extern const char run_usage[];
struct engine_audit;
/* $XDG_STATE_HOME/codecell/LEAF (or ~/.local/state/codecell/LEAF) into
 * out; make_parent: that codecell directory is made (0700) if missing.
 * 0, -ENOENT (neither variable is an absolute path), -ENAMETOOLONG, or
 * mkdir's -errno. */
int cli_state_path(const char *leaf, bool make_parent, char *out, size_t n);
/* The audit log `serve` and `mcp` write when --audit is not given. */
#define CLI_AUDIT_DEFAULT "audit.jsonl"
/* The audit log a command writes: given (--audit FILE; "off": none),
 * else the default (cli_state_path's CLI_AUDIT_DEFAULT) when by_default,
 * else none.  A log given that cannot be opened is an error (logged,
 * -errno); a default one that cannot is said on stderr and the command
 * goes on without (0, *ret NULL). */
int cli_audit_open(const char *given, bool by_default, struct engine_audit **ret);
/* The policy (--policy, or the default) and the audit log (--audit, as
 * cli_audit_open) of a CLI command; on failure a message is logged and
 * -errno returned. */
struct engine_policies;
struct engine_audit;
int cli_policy_open(const struct run_opts *o, bool audit_by_default, struct engine_policies **ret_p,
		    struct engine_audit **ret_a);
/* An option of a command built on `codecell shell`'s (agent, mcp): its
 * own, or one of shell's, passed on to shell_opts_parse. */
struct cli_option {
	const char *name;
	bool has_arg, own;
};
/* Sort the options of argv (from argv[1], up to the first argument that
 * is not one, "-", or past "--") by known: each own one is handed to
 * on_own(ud, name, value or NULL, err), the others are copied with their
 * values into shared (argc + 1 entries: argv[0], them, NULL) for
 * shell_opts_parse.  *ret_n: the entries of shared; *ret_next: the first
 * argument after the options.  cmd names the command in messages ("agent").
 * Pure.  0, or -EINVAL with a message in err. */
int cli_split_options(int argc, char **argv, const struct cli_option *known, size_t n_known,
		      const char *cmd,
		      int (*on_own)(void *ud, const char *name, const char *val, struct buf *err),
		      void *ud, char **shared, int *ret_n, int *ret_next, struct buf *err);
/* run_usage or shell_usage with the limits table's lines in */
void run_opts_usage(bool shell, FILE *f);
extern const char shell_usage[];

#endif
