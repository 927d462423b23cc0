/* `codecell shell`: a Python, JavaScript or bash session on a terminal or
 * a pipe.
 *
 * Input is cut into statements the way the interactive interpreter does
 * (the kernel answers "complete?" with codeop's rules), with one addition
 * for piped input: a line that starts a new top-level statement ends a
 * compound one without needing a blank line, so a script piped in runs
 * statement by statement as it arrives. */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/changes.h"
#include "cli/cli.h"
#include "engine/audit.h"
#include "engine/policy.h"
#include "engine/sessions.h"
#include "engine/setup.h"
#include "engine/shell.h"
#include "util/macro.h"
#include "cli/lineedit.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/banned.h"

struct line_reader {
	int fd;
	char blk[65536];
	size_t pos, len;
	bool eof;
};

/* One line (without its newline) into line.  1 a line, 0 EOF, -E2BIG
 * for a line over the code limit, -EINTR when a signal came on sig_fd
 * (*ret_sig says which), -ETIMEDOUT when deadline_ns (0: none) passed
 * with no line, -errno. */
static int read_line(struct line_reader *lr, struct buf *line, int sig_fd, uint64_t deadline_ns,
		     int *ret_sig)
{
	buf_reset(line);
	for (;;) {
		char *nl;

		if (lr->pos == lr->len) {
			struct pollfd pf[2] = { { lr->fd, POLLIN, 0 }, { sig_fd, POLLIN, 0 } };
			int timeout = -1;
			ssize_t n;

			if (lr->eof)
				return line->len ? 1 : 0;
			if (deadline_ns) {
				uint64_t now = now_ns();

				if (now >= deadline_ns)
					return -ETIMEDOUT;
				timeout = (int)((deadline_ns - now) / 1000000) + 1;
			}
			if (poll(pf, sig_fd >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR)
				return -errno;
			if (sig_fd >= 0 && (pf[1].revents & POLLIN)) {
				struct signalfd_siginfo si;

				if (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
					*ret_sig = (int)si.ssi_signo;
					return -EINTR;
				}
			}
			if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(lr->fd, lr->blk, sizeof(lr->blk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			if (n == 0) {
				lr->eof = true;
				continue;
			}
			lr->pos = 0;
			lr->len = (size_t)n;
		}
		nl = memchr(lr->blk + lr->pos, '\n', lr->len - lr->pos);
		if (nl) {
			int r = buf_append(line, lr->blk + lr->pos,
					   (size_t)(nl - lr->blk - lr->pos));

			lr->pos = (size_t)(nl - lr->blk) + 1;
			return r < 0 ? r : 1;
		}
		if (buf_append(line, lr->blk + lr->pos, lr->len - lr->pos) < 0)
			return -E2BIG;
		lr->pos = lr->len;
	}
}

struct shell {
	struct engine_sessions reg; /* the shell's one session, the engine's */
	struct engine_session *e;
	struct engine_caller cl; /* who runs: the CLI's client, --audit */
	const struct run_opts *o;
	bool tty;
	struct lineedit *ed;		  /* line editing on a terminal, or NULL */
	int status;			  /* exit status: the last statement's */
	int sig_fd;			  /* signalfd: SIGINT interrupts, SIGTERM/SIGHUP end */
	bool exiting;			  /* exit() or quit() ran */
	struct engine_policies *policies; /* --policy, or the default */
	struct engine_audit *audit;	  /* --audit, or NULL */
	int end_sig;			  /* the signal that ended the shell, or 0 */
};

static int complete_name(void *userdata, const char *word, char ***ret, size_t *ret_n)
{
	struct shell *sh = userdata;

	return engine_session_names(sh->e, word, ret, ret_n);
}

static bool is_error(const struct run_result *r, const char *name)
{
	return r->has_error && r->error_name && !strcmp(r->error_name, name);
}

/* The status a session's own way of ending asked for, or -1: exit() or
 * quit() in Python (SystemExit), process.exit() in JavaScript (the same),
 * exit N in bash (BashExited, "bash exited with status N ..."). */
static int exit_request(const struct run_result *r)
{
	const char *v = r->error_value ? r->error_value : "";
	char *end = NULL;
	long n;

	if (is_error(r, "SystemExit")) {
		n = strtol(v, &end, 10);
		return !*v || v[0] == 'N' ? 0 : end && !*end ? (int)(n & 255) : 1;
	}
	if (is_error(r, "BashExited") && !strncmp(v, "bash exited with status ", 24))
		return (int)(strtol(v + 24, NULL, 10) & 255);
	return -1;
}

static void print_result_plain(const struct run_result *r, bool bash)
{
	size_t i;
	json_t *b;

	json_array_foreach (r->results, i, b) {
		const char *text = json_string_value(json_object_get(b, "text/plain"));
		const char *png = json_string_value(json_object_get(b, "image/png"));

		if (png)
			printf("[figure: image/png, %zu bytes of base64; --json returns it]\n",
			       strlen(png));
		else if (text && json_is_true(json_object_get(b, "is_main_result")))
			printf("%s\n", text);
	}
	fflush(stdout);
	/* bash said what failed on stderr already, as in a terminal */
	if (bash && is_error(r, "ExitStatus"))
		;
	else if (r->has_error && r->error_traceback && *r->error_traceback)
		fputs(r->error_traceback, stderr);
	else if (r->has_error)
		fprintf(stderr, "%s: %s\n", r->error_name, r->error_value ? r->error_value : "");
	if (r->status == RESULT_TIMEOUT && !r->restarted)
		log_error(
			"interrupted: the time limit was reached (--timeout); the session is kept");
}

static void engine_env_freep(char ***p)
{
	engine_env_free(*p);
}


static void run_statement(struct shell *sh, const char *code, size_t len)
{
	struct session_exec_opts eo = { .live_stdout = sh->o->json ? -1 : STDOUT_FILENO,
					.live_stderr = sh->o->json ? -1 : STDERR_FILENO,
					.stop_fd = sh->sig_fd };
	struct engine_session_error err;
	struct run_result r;
	int k;

	/* the engine's pipeline: policy check, the cell, an audit record */
	sh->cl.audit_err = 0;
	k = engine_session_run(&sh->cl, sh->e, code, len, &eo, NULL, &r, &err);
	if (sh->cl.audit_err < 0)
		log_warn("--audit: cannot append the record");
	if (k < 0) {
		log_error("the session cannot go on: %s", strerror(-k));
		sh->status = EXIT_CODECELL_ERROR;
		return;
	}
	if (sh->o->json) {
		json_t *j = run_result_to_json(&r);
		char *line =
			json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6));

		if (line)
			printf("%s\n", line);
		free(line);
		json_decref(j);
		fflush(stdout);
	} else if (r.status == RESULT_REJECTED) {
		log_error("%s", r.message);
	} else if (exit_request(&r) < 0) {
		print_result_plain(&r, sh->o->req.lang == LANG_BASH);
		if (r.restarted)
			log_warn("%s", r.error_value ? r.error_value : "the session was restarted");
	}
	sh->status = r.status == RESULT_OK ? 0 : run_result_exit_status(&r);
	if (r.stopped)
		sh->end_sig = SIGTERM;
	/* exit() in python3, process.exit() in node, exit in bash: the
	 * shell ends with that status (with --json too, after the result) */
	if (exit_request(&r) >= 0) {
		sh->exiting = true;
		sh->status = exit_request(&r);
	}
	run_result_release(&r);
}

/* A line that cannot continue the statement before it. */
static bool starts_statement(const char *line)
{
	static const char *const cont[] = { "else", "elif", "except", "finally", "case", NULL };

	if (!*line || *line == ' ' || *line == '\t' || *line == '#' || *line == ')' ||
	    *line == ']' || *line == '}')
		return false;
	for (const char *const *c = cont; *c; c++) {
		size_t l = strlen(*c);

		if (!strncmp(line, *c, l) && (line[l] == ':' || line[l] == ' ' || line[l] == '\0'))
			return false;
	}
	return true;
}

static bool blank(const char *line)
{
	return line[strspn(line, " \t\r")] == '\0';
}

/* The prompts of python3, node and bash. */
static const char *prompt_text(const struct shell *sh, bool more)
{
	enum engine_lang l = sh->o->req.lang;

	return l == LANG_BASH	      ? (more ? "> " : "$ ")
	       : l == LANG_JAVASCRIPT ? (more ? "... " : "> ")
				      : (more ? "... " : ">>> ");
}

/* The next line, from the line editor on a terminal, else from the
 * reader (with a plain prompt on a terminal without libedit).  The idle
 * timeout counts while the prompt waits. */
static int next_line(struct shell *sh, struct line_reader *lr, struct buf *line, bool more,
		     int *ret_sig)
{
	uint64_t deadline =
		sh->o->idle_timeout_s > 0 ? now_ns() + (uint64_t)(sh->o->idle_timeout_s * 1e9) : 0;
	int r;

	if (sh->ed) {
		r = lineedit_read(sh->ed, prompt_text(sh, more), line, sh->sig_fd, deadline,
				  ret_sig);
		if (r == 1)
			lineedit_remember(sh->ed, buf_str(line));
		return r;
	}
	if (sh->tty) {
		fputs(prompt_text(sh, more), stdout);
		fflush(stdout);
	}
	return read_line(lr, line, sh->sig_fd, deadline, ret_sig);
}

/* :discard in a live session: every path the changes touch is made
 * what the project has, through the workspace (the overlay), so the
 * program sees the project again there. */
static int discard_live(struct shell *sh, const struct changes_base *b)
{
	struct engine_session_error err;
	struct engine_discarded d;
	int r = engine_session_discard(sh->e, &d, &err);

	if (r < 0 && !strcmp(err.code, "changes_failed"))
		log_error("cannot read the changes to '%s': %s", b->project, strerror(-r));
	else if (r < 0)
		log_error("discarding: %s", err.message);
	if (r < 0)
		return r;
	fprintf(stderr, "codecell: discarded %zu change%s to '%s'\n", d.discarded,
		d.discarded == 1 ? "" : "s", d.project);
	if (d.kept)
		log_warn(
			"%zu file%s the sandbox cannot read in the project stay%s as the program left "
			"%s (see ':diff')",
			d.kept, d.kept == 1 ? "" : "s", d.kept == 1 ? "s" : "",
			d.kept == 1 ? "it" : "them");
	return 0;
}

/* ':diff', ':apply', ':discard' with --project.  Returns whether line was
 * one. */
static bool project_command(struct shell *sh, const char *line)
{
	struct engine_session_error err = { 0 };
	struct changes_base *b = NULL;
	char word[16] = "";
	int up = -1, r;

	if (!sh->o->req.project_dir || sscanf(line, " %15s", word) != 1 || word[0] != ':')
		return false;
	if (strcmp(word, ":diff") && strcmp(word, ":apply") && strcmp(word, ":discard"))
		return false;
	/* the shell's one session: nothing else uses it between here and
	 * the command below */
	pthread_mutex_lock(&sh->e->lock);
	r = engine_session_project(sh->e, &b, &up, &err);
	pthread_mutex_unlock(&sh->e->lock);
	if (r == -ENOTDIR)
		return false;
	if (r < 0) {
		log_error("the session has no sandbox now: its changes are gone");
		return true;
	}
	if (!strcmp(word, ":diff")) {
		(void)cli_changes_show(up, b, CHANGES_DIFF_MAX, sh->o->json, stdout);
	} else if (!strcmp(word, ":discard")) {
		(void)discard_live(sh, b);
	} else {
		const struct engine_policy *p = sh->policies->clients[0].policy;

		/* typing ':apply' is the decision; a policy that wants a
		 * person's approval for it gets the question on a terminal
		 * (after an apply, what the project holds is the new start) */
		if ((p->approval & (1u << ACTION_APPLY)) && !sh->tty) {
			log_error(
				"rejected by policy '%s', rule 'approval': 'apply' needs a person's "
				"approval, and there is no terminal to ask on",
				p->name);
			return true;
		}
		(void)cli_changes_apply(up, b, !sh->tty);
	}
	return true;
}

/* Feed one line; runs what became complete. */
static void feed(struct shell *sh, struct buf *stmt, const char *line)
{
	int c;

	if (!stmt->len && blank(line))
		return;
	if (!stmt->len && project_command(sh, line))
		return;
	/* Python: a new top-level statement closes a compound one (piped
	 * scripts have no blank line after a def).  JavaScript and bash
	 * statements are complete as soon as the kernel says so. */
	if (stmt->len && sh->o->req.lang == LANG_PYTHON && starts_statement(line)) {
		(void)buf_puts(stmt, "\n");
		if (engine_session_complete(sh->e, buf_str(stmt)) == 1) {
			run_statement(sh, stmt->data, stmt->len);
			buf_reset(stmt);
		} else {
			stmt->len--;
			stmt->data[stmt->len] = '\0';
		}
	}
	if (buf_puts(stmt, line) < 0 || buf_puts(stmt, "\n") < 0) {
		log_error("statement too long: the limit is %u bytes", ENGINE_CODE_MAX);
		buf_reset(stmt);
		return;
	}
	c = engine_session_complete(sh->e, buf_str(stmt));
	if (c != 0) {
		/* complete; or invalid: running it shows the SyntaxError; or
		 * the kernel could not answer: running it reports why and
		 * restarts the session */
		run_statement(sh, stmt->data, stmt->len);
		buf_reset(stmt);
	}
}

static int loop(struct shell *sh)
{
	struct line_reader lr = { .fd = STDIN_FILENO };
	struct buf line, stmt;
	int r;

	buf_init(&line, ENGINE_CODE_MAX);
	buf_init(&stmt, ENGINE_CODE_MAX);
	for (;;) {
		int sig = 0;

		r = next_line(sh, &lr, &line, stmt.len > 0, &sig);
		if (r == -EINTR && sig == SIGINT) {
			/* like python3: drop the statement being typed */
			if (sh->tty)
				fputs("\nKeyboardInterrupt\n", stdout);
			buf_reset(&stmt);
			continue;
		}
		if (r == -EINTR) {
			sh->end_sig = sig;
			r = 0;
			buf_reset(&stmt);
			break;
		}
		if (r == -ETIMEDOUT) {
			if (sh->tty)
				putchar('\n'); /* off the prompt's line */
			log_error("the session expired after %g s without input (--idle-timeout)",
				  sh->o->idle_timeout_s);
			sh->status = EXIT_CODECELL_ERROR;
			r = 0;
			buf_reset(&stmt);
			break;
		}
		if (r <= 0)
			break;
		if (engine_session_expired(sh->e)) {
			log_error("the session expired after %g s without input (--idle-timeout)",
				  sh->o->idle_timeout_s);
			sh->status = EXIT_CODECELL_ERROR;
			break;
		}
		feed(sh, &stmt, buf_str(&line));
		if (sh->end_sig || sh->exiting)
			break;
	}
	if (r == -E2BIG)
		log_error("a line is too long: the limit is %u bytes", ENGINE_CODE_MAX);
	if (r >= 0 && stmt.len && !sh->end_sig && !sh->exiting)
		run_statement(sh, stmt.data, stmt.len);
	if (sh->tty)
		putchar('\n');
	buf_release(&line);
	buf_release(&stmt);
	if (sh->end_sig)
		return 128 + sh->end_sig;
	return r < 0 ? EXIT_CODECELL_ERROR : sh->status;
}

int cli_shell(int argc, char **argv)
{
	struct engine_session_spec spec = { 0 };
	struct session_opts *so = &spec.so;
	struct engine_session_error fail = { 0 };
	struct engine_caller cl;
	struct run_opts o;
	struct shell sh = { 0 };
	_cleanup_(engine_env_freep) char **seeded = NULL;
	const char *preloaded;
	struct buf err;
	uint64_t t0;
	int r;

	buf_init(&err, 4096);
	r = shell_opts_parse(argc, argv, &o, &err);
	if (r < 0) {
		log_error("%s", buf_str(&err));
		buf_release(&err);
		return EXIT_CODECELL_ERROR;
	}
	buf_release(&err);
	if (o.help) {
		run_opts_usage(true, stdout);
		return 0;
	}
	engine_session_opts_init(so);
	/* finish_shell() refused languages without sessions */
	(void)engine_lang_session(o.req.lang, &so->lang);
	so->limits = o.req.limits;
	so->output_limit = o.req.output_limit;
	so->env = o.req.env;
	so->preload = o.preload;
	so->files = o.req.files;
	so->workspace_dir = o.req.workspace_dir;
	so->project_dir = o.req.project_dir;
	so->net = o.req.net;
	so->strict = o.req.strict;
	so->idle_timeout_s = o.idle_timeout_s;
	sh.o = &o;
	sh.tty = isatty(STDIN_FILENO) && !o.json;
	/* SIGINT interrupts a cell or drops a line; SIGTERM, SIGHUP end */
	sh.sig_fd = cli_stop_signals(SFD_NONBLOCK, NULL);
	if (sh.tty) {
		const char *why;

		sh.ed = lineedit_new("codecell", &why);
		if (why)
			log_warn("%s", why);
	}
	if (o.req.has_seed) {
		/* cold kernels only read PYTHONHASHSEED: the shell has no pool */
		seeded = engine_seed_env(o.req.env, o.req.seed);
		if (!seeded)
			return log_error("out of memory"), EXIT_CODECELL_ERROR;
		so->env = (const char *const *)seeded;
	}
	if (cli_policy_open(&o, false, &sh.policies, &sh.audit) < 0)
		return EXIT_CODECELL_ERROR;
	/* the engine's pipeline: the policy check, the kernel, a record */
	memset(&cl, 0, sizeof(cl));
	cl.client = &sh.policies->clients[0];
	cl.name = "cli";
	cl.door = DOOR_CLI;
	cl.audit = sh.audit;
	sh.cl = cl;
	spec.asked = o.limits_set;
	spec.net_asked = o.net_set;
	t0 = now_ns();
	r = engine_sessions_init(&sh.reg, 1);
	if (r == 0)
		r = engine_session_new(&sh.reg, &cl, &spec, &sh.e, &fail);
	if (cl.audit_err < 0)
		log_warn("--audit: cannot append the record");
	if (r < 0) {
		log_error("%s", r == -ENOMEM && !fail.message[0] ? "out of memory"
				: r == -EPERM			 ? fail.verdict.message
								 : fail.message);
		engine_sessions_release(&sh.reg);
		engine_audit_close(sh.audit);
		engine_policies_free(sh.policies);
		return EXIT_CODECELL_ERROR;
	}
	/* Tab completes names from the kernel's namespace (Python only) */
	if (sh.ed && so->lang == SESSION_PYTHON)
		lineedit_set_completer(sh.ed, complete_name, engine_session_names_free, &sh);
	/* what the kernel imported, as the engine noted it at the start */
	preloaded = sh.e->preloaded ? sh.e->preloaded : "";
	if (sh.e->preload_failed && *sh.e->preload_failed)
		log_warn("--preload: not imported: %s", sh.e->preload_failed);
	if (sh.tty)
		printf("codecell shell: %s session ready in %.0f ms%s%s; Ctrl-D ends it\n",
		       engine_lang_title(o.req.lang), (double)(now_ns() - t0) / 1e6,
		       *preloaded ? ", preloaded " : "", preloaded);
	r = loop(&sh);
	if (o.req.workspace_dir) {
		char *warning = NULL;

		if (engine_session_sync_workspace(sh.e, &warning) < 0 && r == 0)
			r = EXIT_CODECELL_ERROR;
		if (warning)
			log_warn("%s", warning);
		free(warning);
	}
	lineedit_free(sh.ed);
	cl.audit_err = 0;
	engine_session_close(&sh.reg, &cl, sh.e);
	if (cl.audit_err < 0)
		log_warn("--audit: cannot append the record");
	engine_session_unref(sh.e);
	engine_sessions_release(&sh.reg);
	engine_audit_close(sh.audit);
	engine_policies_free(sh.policies);
	if (sh.sig_fd >= 0)
		close(sh.sig_fd);
	return r;
}
