/* `codecell run`: read the code, run it, print the output or the result
 * object, exit with the program's status. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cli/changes.h"
#include "cli/cli.h"
#include "engine/audit.h"
#include "engine/call.h"
#include "engine/policy.h"
#include "engine/setup.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

static int read_code(const char *path, struct buf *code)
{
	struct stat st;
	int r;

	if (!strcmp(path, "-"))
		return buf_read_fd(code, STDIN_FILENO);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	r = buf_read_file(code, path);
	return r;
}

/* A pipe on our stdin is handed to the program (like `cmd | python3
 * x.py`); a terminal, file or socket is not: a tty would let the program
 * inject keystrokes, a file fd would hand it a host inode, a socket (a
 * socket-activated service) a path to a host peer. */
static int stdin_for_program(const char *path)
{
	struct statfs sf;
	struct stat st;

	if (!strcmp(path, "-") || fstatfs(STDIN_FILENO, &sf) < 0)
		return -1;
	if (sf.f_type == PIPEFS_MAGIC)
		return STDIN_FILENO;
	if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		log_warn(
			"standard input is a file: the program reads /dev/null; pipe it in (cat FILE | codecell run ...) or copy it with --file");
	return -1;
}

/* A file with no known extension: its #! line names the language.
 * Returns whether it did. */
static bool lang_from_shebang(struct run_opts *o, const char *code, size_t len)
{
	static const struct {
		const char *word;
		enum engine_lang lang;
	} map[] = {
		{ "python", LANG_PYTHON }, { "node", LANG_JAVASCRIPT }, { "bash", LANG_BASH },
		{ "/sh", LANG_BASH },	   { " sh", LANG_BASH },	{ "sqlite", LANG_SQL }
	};
	const char *nl;
	enum engine_lang ext;

	if (o->lang_set || len < 2 || code[0] != '#' || code[1] != '!' ||
	    engine_lang_from_path(o->path, &ext) == 0)
		return false;
	nl = memchr(code, '\n', len);
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		const char *hit = memmem(code, nl ? (size_t)(nl - code) : len, map[i].word,
					 strlen(map[i].word));

		if (hit) {
			o->req.lang = map[i].lang;
			return true;
		}
	}
	return false;
}

/* A file whose extension names no language of ours (script.rb, data.csv)
 * and whose #! line does not either: running it as Python would only
 * give a baffling SyntaxError.  A name without an extension is Python. */
static bool unknown_extension(const struct run_opts *o)
{
	const char *base = strrchr(o->path, '/') ? strrchr(o->path, '/') + 1 : o->path;
	const char *dot = strrchr(base, '.');
	enum engine_lang l;

	return !o->lang_set && strcmp(o->path, "-") != 0 && dot && dot != base && dot[1] &&
	       engine_lang_from_path(o->path, &l) < 0;
}

/* --json promises one object on stdout, also when the arguments are bad.
 * Does the command line ask for it (before FILE)? */
static bool wants_json(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--") || argv[i][0] != '-' || !strcmp(argv[i], "-"))
			return false;
		if (!strcmp(argv[i], "--json"))
			return true;
	}
	return false;
}

/* With --project: what changed and where it is kept, for the result
 * object ("changes") and the closing message. */
static struct run_changes g_changes;
static char g_changes_dir[4096];

static void print_json(const struct run_result *res)
{
	json_t *j = run_result_to_json(res);

	if (g_changes_dir[0] && j)
		json_object_set_new(j, "changes",
				    json_pack("{s:i, s:b, s:s?, s:s?}", "count",
					      (json_int_t)g_changes.count, "truncated",
					      g_changes.truncated, "dir",
					      g_changes.saved ? g_changes_dir : NULL, "error",
					      g_changes.error[0] ? g_changes.error : NULL));
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6));

	if (s) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
	fflush(stdout);
	json_decref(j);
}

static void warn_unenforced(unsigned bits)
{
	struct sandbox_host_info hi;
	struct buf b;

	if (!bits)
		return;
	buf_init(&b, 256);
	(void)engine_limit_names_of(bits, ", ", &b);
	engine_host_info(&hi);
	log_warn(
		"limits not enforced on this host: %s (%s; only per-process rlimits apply; see 'codecell check'; --strict refuses to run)",
		buf_str(&b), hi.cgroup_why ? hi.cgroup_why : "no usable cgroup");
	buf_release(&b);
}

/* Without --json: after the program's own output, say what codecell did
 * to it, so an exit status of 124 or 137 is not a mystery. */
static void explain(const struct run_result *res, const struct run_request *req)
{
	switch (res->status) {
	case RESULT_TIMEOUT:
		if (res->limits_hit & SANDBOX_LIMIT_CPU)
			log_error("stopped: CPU time limit of %llu s reached (--cpu-time)",
				  (unsigned long long)req->limits.cpu_seconds);
		else
			log_error("stopped: time limit of %g s reached (--timeout)",
				  req->limits.timeout_s);
		break;
	case RESULT_MEMORY_LIMIT:
		log_error("stopped: memory limit of %llu MiB reached (--memory)",
			  (unsigned long long)(req->limits.memory_bytes >> 20));
		break;
	case RESULT_OUTPUT_LIMIT:
		log_error("stopped: the program wrote far more output than --output-limit allows");
		break;
	case RESULT_KILLED:
		if (res->stopped)
			log_error("interrupted: the sandbox was stopped and removed");
		break;
	default:
		break;
	}
	if (res->limits_hit & SANDBOX_LIMIT_PIDS)
		log_warn("the process limit was reached (--pids %llu)",
			 (unsigned long long)req->limits.pids);
	if (res->limits_hit & SANDBOX_LIMIT_DISK)
		log_warn("the workspace filled up (--workspace-size)");
	if (res->limits_hit & SANDBOX_LIMIT_FILE_SIZE)
		log_warn("a file reached the size limit (--file-size)");
}

/* A request refused before it ran: the message on stderr and, with
 * --json, one "rejected" object on stdout. */
static int refuse(bool json, const char *msg)
{
	log_error("%s", msg);
	if (json) {
		struct run_result rej = { .status = RESULT_REJECTED, .message = (char *)msg };

		print_json(&rej);
	}
	return EXIT_CODECELL_ERROR;
}

/* engine_run with SIGINT/SIGTERM/SIGHUP turned into a clean stop: the
 * sandbox is killed and removed, never left running without its
 * supervisor.  cls: where the signal that stopped it goes, or 0. */
static int run_stoppable(void *cls, struct run_request *req, struct run_result *res)
{
	struct signalfd_siginfo si;
	sigset_t oldmask;
	int *ret_sig = cls, stop, r;

	*ret_sig = 0;
	sigprocmask(SIG_BLOCK, NULL, &oldmask); /* the current mask, whatever follows */
	stop = cli_stop_signals(SFD_NONBLOCK, &oldmask);
	req->stop_fd = stop >= 0 ? stop : -1;
	r = engine_run(req, res);
	if (stop >= 0) {
		/* drain before unblocking, or a late signal kills us unreported */
		if (read(stop, &si, sizeof(si)) == sizeof(si))
			*ret_sig = (int)si.ssi_signo;
		close(stop);
	}
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return r;
}

static int report(const struct run_opts *o, struct run_result *res)
{
	if (res->limits_unenforced && !res->message)
		warn_unenforced(res->limits_unenforced);
	if (o->json) {
		print_json(res);
	} else {
		if (res->message)
			log_error("%s", res->message);
		explain(res, &o->req);
	}
	if (res->warning)
		log_warn("%s", res->warning);
	if (g_changes.error[0])
		log_warn("the changes to '%s' are lost: %s", o->req.project_dir, g_changes.error);
	else if (g_changes.saved)
		fprintf(stderr,
			"codecell: %zu change%s to '%s' kept in '%s': 'codecell diff %s' shows them, "
			"'codecell apply %s' applies them, 'codecell discard %s' drops them\n",
			g_changes.count, g_changes.count == 1 ? "" : "s", o->req.project_dir,
			g_changes_dir, g_changes_dir, g_changes_dir, g_changes_dir);
	return run_result_exit_status(res);
}

/* The engine's pipeline (engine_call_run): the policy check, the run,
 * the audit record after it.  No person to ask here: a run the policy
 * holds for approval is refused. */
static int checked_run(struct run_opts *o, struct run_result *res, int *ret_sig)
{
	struct engine_policies *ps;
	struct engine_session_error err;
	struct engine_caller cl = { .name = "cli", .door = DOOR_CLI };
	int r;

	*ret_sig = 0;
	if (cli_policy_open(o, false, &ps, &cl.audit) < 0)
		return -ECANCELED; /* said why */
	cl.client = &ps->clients[0];
	r = engine_call_run(&cl, &o->req, o->limits_set, o->net_set, run_stoppable, ret_sig, res,
			    &err);
	if (cl.audit_err < 0)
		log_warn("--audit '%s': cannot append the record: %s", o->audit_path,
			 strerror(-cl.audit_err));
	engine_audit_close(cl.audit);
	engine_policies_free(ps);
	return r;
}

/* The sandbox of the run, when its result was final before its end
 * (engine.h, teardown): its init's exit, namespaces and cgroups. */
static struct sandbox *g_teardown;

/* Everything is said: hand the rest of the sandbox's end to a process
 * of its own (engine_run_end_detached) and exit without waiting for it,
 * as bwrap does once its pid 1 reports.  Our fds 0-2 become /dev/null
 * first: a caller reading our output to its end (a shell's $(...)) gets
 * it when we exit, not when that process has closed its copies. */
static void end_sandbox(struct sandbox *sb)
{
	if (!sb)
		return;
	fflush(stdout);
	fflush(stderr);
	stdio_to_devnull();
	engine_run_end_detached(sb);
}

int cli_run(int argc, char **argv)
{
	struct run_opts o;
	struct run_result res;
	struct buf err, code;
	int r, status, stopsig;
	char msg[512];

	buf_init(&err, 4096);
	r = run_opts_parse(argc, argv, &o, &err);
	if (r < 0) {
		status = refuse(wants_json(argc, argv), buf_str(&err));
		buf_release(&err);
		return status;
	}
	buf_release(&err);
	if (o.help) {
		run_opts_usage(false, stdout);
		return 0;
	}
	buf_init(&code, ENGINE_CODE_MAX);
	r = read_code(o.path, &code);
	if (r < 0) {
		if (r == -E2BIG)
			snprintf(msg, sizeof(msg), "'%s' is too large: the limit is %u bytes",
				 o.path, ENGINE_CODE_MAX);
		else
			snprintf(msg, sizeof(msg), "cannot read '%s': %s", o.path, strerror(-r));
		buf_release(&code);
		return refuse(o.json, msg);
	}
	o.req.code = buf_str(&code);
	o.req.code_len = code.len;
	if (!lang_from_shebang(&o, o.req.code, o.req.code_len) && unknown_extension(&o)) {
		snprintf(
			msg, sizeof(msg),
			"cannot tell the language of '%s' from its extension: codecell runs python (.py), "
			"javascript (.js), bash (.sh) and sql (.sql); give --lang, or a #! line",
			o.path);
		buf_release(&code);
		return refuse(o.json, msg);
	}
	/* tracebacks name the file as the program sees it: no host path */
	if (strcmp(o.path, "-") != 0)
		o.req.filename = strrchr(o.path, '/') ? strrchr(o.path, '/') + 1 : o.path;
	o.req.stdin_fd = stdin_for_program(o.path);
	if (!o.json) {
		o.req.live_stdout = STDOUT_FILENO;
		o.req.live_stderr = STDERR_FILENO;
	}
	if (o.changes_dir && access(o.changes_dir, F_OK) == 0) {
		snprintf(msg, sizeof(msg),
			 "--changes '%s' exists: name a new directory (the changes go into it)",
			 o.changes_dir);
		buf_release(&code);
		return refuse(o.json, msg);
	}
	if (o.req.project_dir) {
		r = o.changes_dir
			    ? (snprintf(g_changes_dir, sizeof(g_changes_dir), "%s", o.changes_dir),
			       0)
			    : cli_changes_default_dir(o.req.project_dir, g_changes_dir,
						      sizeof(g_changes_dir));
		if (r < 0) {
			snprintf(
				msg, sizeof(msg),
				"cannot make a directory for the changes to '%s': %s; name one with "
				"--changes DIR",
				o.req.project_dir, strerror(-r));
			buf_release(&code);
			return refuse(o.json, msg);
		}
		o.req.changes_dir = g_changes_dir;
		o.req.changes = &g_changes;
	}
	o.req.teardown = &g_teardown;
	engine_run_defer_sweep();
	r = checked_run(&o, &res, &stopsig);
	buf_release(&code);
	if (r == -ECANCELED)
		return EXIT_CODECELL_ERROR;
	if (r < 0) {
		log_error("cannot run '%s': %s", o.path, strerror(-r));
		return EXIT_CODECELL_ERROR;
	}
	status = report(&o, &res);
	run_result_release(&res);
	end_sandbox(g_teardown);
	return stopsig ? 128 + stopsig : status;
}
