/* engine_run: one-shot execution of a request in a fresh sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/capture.h"
#include "engine/engine.h"
#include "engine/script.h"
#include "sandbox/egress.h"
#include "session/session.h"
#include "session/changes.h"
#include "session/workspace.h"
#include "kernels.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/utf8.h"
#include "util/banned.h"

#define MAX_ARGV (ENGINE_MAX_ARGS + 16)
#define MAX_ENVP (ENGINE_MAX_ENV + 24)

void run_request_init(struct run_request *req)
{
	memset(req, 0, sizeof(*req));
	req->lang = LANG_PYTHON;
	req->filename = "<stdin>";
	req->limits = codecell_default_limits;
	req->output_limit = CODECELL_DEFAULT_OUTPUT_LIMIT;
	req->net = SANDBOX_NET_LOOPBACK;
	req->live_stdout = -1;
	req->live_stderr = -1;
	req->stdin_fd = -1;
	req->stop_fd = -1;
}

/* A result that never ran: bad request, or a sandbox that failed. */
static void reject(struct run_result *r, bool setup, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reject(struct run_result *r, bool setup, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&r->message, fmt, ap) < 0)
		r->message = NULL;
	va_end(ap);
	r->setup_failed = setup;
	r->status = setup ? RESULT_ERROR : RESULT_REJECTED;
}


/* What a file that is not text is, by its first bytes, or NULL: code
 * sent by mistake gets a message that names it. */
static const char *binary_kind(const char *code, size_t len)
{
	static const struct {
		const char *magic;
		size_t n;
		const char *what;
	} kinds[] = {
		{ "\x7f"
		  "ELF",
		  4, "an ELF executable (a compiled program)" },
		{ "PK\x03\x04", 4, "a zip archive (or a file made of one: .xlsx, .docx, .jar)" },
		{ "\x1f\x8b", 2, "gzip-compressed data" },
		{ "\x89PNG", 4, "a PNG image" },
		{ "\xff\xd8\xff", 3, "a JPEG image" },
		{ "%PDF-", 5, "a PDF document" },
		{ "SQLite format 3", 16,
		  "an SQLite database (for SQL, give it with --db and the query as code)" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (len >= kinds[i].n && !memcmp(code, kinds[i].magic, kinds[i].n))
			return kinds[i].what;
	return NULL;
}

/* Checks every door applies to code, whether it runs one-shot or in a
 * session. */
static bool validate_code(const char *code, size_t len, const char *filename, struct run_result *r)
{
	uint64_t bad;

	if (len > ENGINE_CODE_MAX) {
		reject(r, false, "'%s' is too large: %zu bytes, the limit is %u", filename, len,
		       ENGINE_CODE_MAX);
		return false;
	}
	if (binary_kind(code, len)) {
		reject(r, false,
		       "'%s' is %s, not source code: codecell runs Python, JavaScript, bash and SQL "
		       "source; to work on such a file, copy it into the workspace (--file, or an upload) "
		       "and open it from code",
		       filename, binary_kind(code, len));
		return false;
	}
	if (!utf8_valid(code, len, &bad)) {
		reject(r, false,
		       "'%s' is not valid UTF-8 (bad byte at offset %llu); save it as UTF-8",
		       filename, (unsigned long long)bad);
		return false;
	}
	if (memchr(code, '\0', len)) {
		reject(r, false, "'%s' contains a NUL byte; is it a binary file?", filename);
		return false;
	}
	return true;
}

int engine_session_exec(struct session *s, const char *code, size_t len,
			const struct session_exec_opts *eo, struct run_result *r)
{
	memset(r, 0, sizeof(*r));
	if (!validate_code(code, len, "<cell>", r))
		return 0;
	return session_exec(s, code, len, eo, r);
}

static bool prepare_workspace_dir(const struct run_request *req, struct run_result *r)
{
	char *msg = NULL;

	if (ws_prepare_dir(req->workspace_dir, &msg) == 0)
		return true;
	reject(r, false, "%s", msg ? msg : "cannot prepare the workspace directory");
	free(msg);
	return false;
}

static bool validate(const struct run_request *req, struct run_result *r)
{
	size_t i;

	for (i = 0; i < req->code_len; i++)
		if (!strchr(" \t\r\n\f\v", req->code[i]))
			break;
	if (i == req->code_len) {
		reject(r, false, "no code to run: '%s' is empty", req->filename);
		return false;
	}
	if (!validate_code(req->code, req->code_len, req->filename, r))
		return false;
	if (req->lang >= _LANG_MAX) {
		reject(r, false, "unknown language");
		return false;
	}
	if (req->project_dir && req->workspace_dir) {
		reject(r, false,
		       "--project and --workspace cannot be combined: the project is the "
		       "workspace");
		return false;
	}
	return prepare_workspace_dir(req, r);
}

/* The code as a sealed memfd: the program reads it, cannot change it. */
static int code_memfd(const struct run_request *req)
{
	return sealed_memfd("codecell-code", req->code, req->code_len);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Where the program finds its code.  Python and JavaScript run the script
 * from a real file in the workspace, at the path __file__ reports, as
 * `python3 x.py` and `node x.js` do: spawn/forkserver children,
 * child_process.fork(__filename), workers, inspect.getsource and the
 * source lines of tracebacks read it from there.  Code without a name
 * ("<stdin>", "<code>": stdin, the API, MCP) is main.py / main.js; when
 * the workspace brings a main.py of its own, Python reads the code as
 * `python3 -` does (no file; __file__ "<stdin>") and node from fd 3. */
enum code_via {
	VIA_FD3,   /* the driver reads fd 3 (node's "<stdin>"; bash) */
	VIA_FILE,  /* script_name in the workspace */
	VIA_STDIN, /* python3 - */
};

struct script {
	enum code_via via;
	char name[256];
	char path[260]; /* name as an argument: "./-x.py" for "-x.py" */
	bool created;
};

/* Is name in the workspace the request brings (its files, its dir)? */
static bool brought(const struct run_request *req, const char *name)
{
	char path[4096];
	struct stat st;

	for (size_t i = 0; req->files && req->files[i]; i++)
		if (!strcmp(base_name(req->files[i]), name))
			return true;
	if (req->db_path && !strcmp(base_name(req->db_path), name))
		return true;
	if (req->project_dir) {
		snprintf(path, sizeof(path), "%s/%s", req->project_dir, name);
		if (lstat(path, &st) == 0)
			return true;
	}
	if (!req->workspace_dir)
		return false;
	snprintf(path, sizeof(path), "%s/%s", req->workspace_dir, name);
	/* what ws_copy_in_dir copies: files and directories, no symlinks */
	return lstat(path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
}

static void choose_script(const struct run_request *req, struct script *sc)
{
	const char *fn = req->filename ? req->filename : "<stdin>";
	bool py = req->lang == LANG_PYTHON;

	memset(sc, 0, sizeof(*sc));
	sc->via = VIA_FD3;
	if (!py && req->lang != LANG_JAVASCRIPT)
		return;
	if (fn[0] != '<') {
		snprintf(sc->name, sizeof(sc->name), "%s", base_name(fn));
		if (sc->name[0] && strcmp(sc->name, ".") && strcmp(sc->name, ".."))
			sc->via = VIA_FILE;
	} else {
		snprintf(sc->name, sizeof(sc->name), "%s", py ? "main.py" : "main.js");
		/* the workspace's own main.py stays the user's */
		if (!brought(req, sc->name))
			sc->via = VIA_FILE;
	}
	if (sc->via != VIA_FILE && py)
		sc->via = VIA_STDIN;
	/* a name that looks like an option is a path */
	snprintf(sc->path, sizeof(sc->path), "%s%s", sc->name[0] == '-' ? "./" : "", sc->name);
}

/* argv for the language; returns the count.  The code is in the
 * workspace (sc), on fd 3 or on stdin. */
static size_t build_argv(const struct run_request *req, const struct script *sc, const char **argv)
{
	size_t n = 0;

	switch (req->lang) {
	case LANG_PYTHON:
		/* a plain interpreter, as `python3 x.py` on the host: site,
		 * the user site directory, flags its children inherit; -u
		 * (unbuffered, inherited by no one) keeps stdout and stderr
		 * in order */
		argv[n++] = "/usr/bin/python3";
		argv[n++] = "-u";
		argv[n++] = sc->via == VIA_FILE ? sc->path : "-";
		break;
	case LANG_JAVASCRIPT:
		argv[n++] = "/usr/bin/node";
		argv[n++] = "-e";
		argv[n++] = kernel_node_run_js;
		argv[n++] = "--";
		argv[n++] = sc->via == VIA_FILE ? sc->path : req->filename;
		break;
	case LANG_BASH:
		argv[n++] = "/bin/bash";
		argv[n++] = "/dev/fd/3";
		break;
	case LANG_SQL:
		argv[n++] = "/usr/bin/sqlite3";
		argv[n++] = "-bail";
		argv[n++] = "-batch";
		argv[n++] = "-box";
		argv[n++] = req->db_path ? base_name(req->db_path) : ":memory:";
		break;
	default:
		break;
	}
	if (req->lang != LANG_SQL)
		for (size_t i = 0; req->args && req->args[i] && i < ENGINE_MAX_ARGS; i++)
			argv[n++] = req->args[i];
	argv[n] = NULL;
	return n;
}

struct pump_ctx {
	const struct run_request *req;
	struct capture out, err;
	struct outorder order; /* the order out and err came in */
	struct buf report;
	uint64_t flood;
	uint64_t total;
};

static int on_output(void *ud, int ch, const char *data, size_t n)
{
	struct pump_ctx *p = ud;
	size_t live = 0;

	if (ch == 2) {
		(void)buf_append(&p->report, data, n); /* past the cap: dropped */
		return 0;
	}
	capture_add(ch == 0 ? &p->out : &p->err, data, n, &live);
	outorder_add(&p->order, (unsigned)ch, n);
	if (live) {
		int fd = ch == 0 ? p->req->live_stdout : p->req->live_stderr;

		if (fd >= 0)
			(void)write_all(fd, data, live);
	}
	p->total += n;
	return p->total > p->flood ? 1 : 0;
}

void engine_parse_report(const char *data, size_t len, struct run_result *r)
{
	json_t *root, *e;
	const char *name, *value, *tb;

	if (!len || r->has_error)
		return;
	root = json_loadb(data, len, JSON_DECODE_ANY, NULL);
	e = root ? json_object_get(root, "error") : NULL;
	if (json_is_object(e)) {
		const char *code = json_string_value(json_object_get(e, "code"));

		/* EFBIG is the file-size limit: say so, the program only saw
		 * an error */
		if (json_integer_value(json_object_get(e, "errno")) == EFBIG ||
		    (code && !strcmp(code, "EFBIG")))
			r->limits_hit |= SANDBOX_LIMIT_FILE_SIZE;
		name = json_string_value(json_object_get(e, "name"));
		value = json_string_value(json_object_get(e, "value"));
		tb = json_string_value(json_object_get(e, "traceback"));
		r->has_error = true;
		r->error_name = strdup(name ? name : "Error");
		r->error_value = strdup(value ? value : "");
		r->error_traceback = strdup(tb ? tb : "");
	}
	json_decref(root);
}

/* sqlite3 has no error channel: its first stderr line is the error. */
static void sql_error(struct run_result *r)
{
	const char *nl;

	if (r->has_error || !r->err || !r->err_len)
		return;
	nl = memchr(r->err, '\n', r->err_len);
	r->has_error = true;
	r->error_name = strdup("SQLError");
	r->error_value = strndup(r->err, nl ? (size_t)(nl - r->err) : r->err_len);
	r->error_traceback = strdup(r->err);
}

static void clear_error(struct run_result *r)
{
	free(r->error_name);
	free(r->error_value);
	free(r->error_traceback);
	r->error_name = r->error_value = r->error_traceback = NULL;
	r->has_error = false;
}

/* The error's text obeys the output limit like stdout and stderr. */
static char *cap_text(char *s, uint64_t limit)
{
	struct capture c;
	size_t len;
	char *t;

	if (!s || strlen(s) <= limit || capture_init(&c, limit) < 0)
		return s;
	capture_add(&c, s, strlen(s), NULL);
	t = capture_text(&c, &len);
	capture_release(&c);
	if (!t)
		return s;
	free(s);
	return t;
}

static void classify(const struct sandbox_exit *x, struct run_result *r)
{
	run_result_set_exit(r, x);
	/* The report channel is writable by the program itself: a program
	 * that exits 0 did not fail, whatever it wrote there. */
	if (x->end == SANDBOX_END_EXITED && x->exit_code == 0)
		clear_error(r);
	if (x->end == SANDBOX_END_SETUP_FAILED)
		reject(r, true, "cannot %s: %s", x->failed_step, strerror(x->error));
}


struct run_fds {
	int code, out[2], err[2], rep[2];
};

static void close_run_fds(struct run_fds *f)
{
	close_fd(&f->code);
	for (int i = 0; i < 2; i++) {
		close_fd(&f->out[i]);
		close_fd(&f->err[i]);
		close_fd(&f->rep[i]);
	}
}

static int open_run_fds(const struct run_request *req, struct run_fds *f)
{
	*f = (struct run_fds){ -1, { -1, -1 }, { -1, -1 }, { -1, -1 } };
	f->code = code_memfd(req);
	if (f->code < 0)
		return f->code;
	if (pipe2(f->out, O_CLOEXEC) < 0 || pipe2(f->err, O_CLOEXEC) < 0 ||
	    pipe2(f->rep, O_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/* clone() failing says little by its errno alone. */
static const char *namespace_hint(const char *step, int k)
{
	if (!step || strcmp(step, "create namespaces") != 0)
		return "";
	if (k == -ENOSPC || k == -EUSERS)
		return " (no user namespace can be created: the sysctl user.max_user_namespaces is 0 "
		       "or its limit is reached; codecell needs user namespaces, see 'codecell check')";
	if (k == -EPERM || k == -EACCES)
		return " (this user may not create user namespaces: see kernel.unprivileged_userns_clone, "
		       "or AppArmor's apparmor_restrict_unprivileged_userns on Ubuntu 24.04+; "
		       "'codecell check' says more)";
	return "";
}

/* The cgroup limits req asks for that this host cannot enforce. */
static unsigned strict_unenforced(const struct sandbox_limits *l)
{
	struct sandbox_host_info hi;
	unsigned want = (l->memory_bytes ? SANDBOX_LIMIT_MEMORY : 0) |
			(l->pids ? SANDBOX_LIMIT_PIDS : 0) | (l->cpus > 0 ? SANDBOX_LIMIT_CPUS : 0);

	sandbox_host_info(&hi);
	return want & ~hi.enforceable;
}

static void reject_strict(struct run_result *r)
{
	struct sandbox_host_info hi;
	char names[128] = "";
	size_t n = 0, k = 0;

	sandbox_host_info(&hi);
	for (unsigned bit = 1; bit < SANDBOX_LIMIT_LANDLOCK; bit <<= 1)
		n += (r->limits_unenforced & bit) != 0;
	for (unsigned bit = 1; bit < SANDBOX_LIMIT_LANDLOCK; bit <<= 1) {
		size_t len = strlen(names);

		if (!(r->limits_unenforced & bit))
			continue;
		snprintf(names + len, sizeof(names) - len, "%s%s",
			 k == 0	      ? ""
			 : k + 1 == n ? " and "
				      : ", ",
			 sandbox_limit_name(bit));
		k++;
	}
	reject(r, false,
	       "--strict: this host cannot enforce the %s limit%s (%s); see 'codecell check'",
	       names, n > 1 ? "s" : "", hi.cgroup_why ? hi.cgroup_why : "no usable cgroup");
}

/* A project's changes, once the program has ended: saved into
 * req->changes_dir if there are any. */
static void keep_changes(const struct run_request *req, struct sandbox *sb,
			 const struct changes_base *base)
{
	struct run_changes none, *out = req->changes ? req->changes : &none;
	struct change_list l;
	int k = changes_list(sandbox_upper_fd(sb), base, &l);

	memset(out, 0, sizeof(*out));
	if (k < 0) {
		snprintf(out->error, sizeof(out->error), "cannot read the changes: %s",
			 strerror(-k));
		return;
	}
	out->count = l.n;
	out->truncated = l.truncated;
	if (l.n && req->changes_dir)
		out->saved = changes_save(sandbox_upper_fd(sb), base, req->changes_dir, out->error,
					  sizeof(out->error)) == 0;
	change_list_release(&l);
}

static int execute(const struct run_request *req, struct run_fds *f, struct pump_ctx *p,
		   struct run_result *r)
{
	const char *argv[MAX_ARGV], *envp[MAX_ENVP], *step = NULL;
	struct sandbox_config cfg = { 0 };
	struct changes_base base;
	struct sandbox_exit x;
	struct sandbox *sb = NULL;
	struct script sc;
	bool fill;
	int k;

	choose_script(req, &sc);
	/* Nothing from the host to copy in: the init writes the script
	 * itself and starts the program without waiting for us (sandbox.h,
	 * autostart) */
	/* a project's script is placed through its overlay after the start
	 * (and removed before the changes are read): no autostart */
	fill = req->workspace_dir || (req->files && req->files[0]) || req->db_path ||
	       req->project_dir;
	build_argv(req, &sc, argv);
	session_envp_net(req->env, false, req->net, envp);
	cfg.argv = argv;
	cfg.envp = envp;
	cfg.stdin_fd = req->lang == LANG_SQL || sc.via == VIA_STDIN ? f->code : req->stdin_fd;
	cfg.stdout_fd = f->out[1];
	cfg.stderr_fd = f->err[1];
	/* Python's interpreter runs the script itself: it gets fds 0-2
	 * only, as on the host, and says its error on stderr */
	if (req->lang != LANG_PYTHON) {
		cfg.pass_fds[0] = f->code;
		cfg.pass_fds[1] = f->rep[1];
		cfg.n_pass_fds = 2;
	}
	cfg.limits = req->limits;
	cfg.net = req->net;
	cfg.strict = req->strict;
	cfg.autostart = !fill;
	cfg.late_cgroups = true; /* short-lived: see sandbox.h */
	if (!fill && sc.via == VIA_FILE) {
		cfg.script_name = sc.name;
		cfg.script_fd = f->code;
		sc.created = true;
	}
	if (req->project_dir) {
		k = changes_base_init(&base, req->project_dir);
		if (k < 0) {
			reject(r, false, "cannot use the project '%s': %s", req->project_dir,
			       strerror(-k));
			return 0;
		}
		cfg.project_dir = base.project;
	}
	k = sandbox_new(&cfg, &sb, &step);
	if (k == 0 && req->net == SANDBOX_NET_ALLOWLIST) {
		k = sandbox_egress_start(sb, req->egress);
		if (k < 0) {
			sandbox_free(sb);
			step = EGRESS_STEP;
		}
	}
	close_fd(&f->out[1]);
	close_fd(&f->err[1]);
	close_fd(&f->rep[1]);
	if (k == -EOPNOTSUPP && req->strict) {
		r->limits_unenforced = strict_unenforced(&req->limits);
		reject_strict(r);
		return 0;
	}
	if (k < 0 && step && !strcmp(step, "write the script into the workspace")) {
		/* the init wrote it (autostart): the request's fault, as when
		 * script_place() below fails */
		reject(r, false, "cannot write '%s' into the workspace: %s%s", sc.name,
		       strerror(-k), k == -ENOSPC ? " (raise --workspace-size)" : "");
		return 0;
	}
	if (k < 0) {
		reject(r, true, "cannot %s: %s%s", step ? step : "create the sandbox", strerror(-k),
		       namespace_hint(step, k));
		return 0;
	}
	r->limits_unenforced = sandbox_limits_unenforced(sb);
	if (fill) {
		struct ws_owner o = { .chown = geteuid() == 0 };
		char *msg = NULL;

		sandbox_workspace_owner(sb, &o.uid, &o.gid);
		if (ws_fill(sandbox_workspace_fd(sb), &o, req->workspace_dir, req->files,
			    req->db_path, &msg) < 0) {
			reject(r, false, "%s", msg ? msg : "cannot fill the workspace");
			free(msg);
			sandbox_free(sb);
			return 0;
		}
		if (sc.via == VIA_FILE) {
			k = script_place(sandbox_workspace_fd(sb), sc.name, req->code,
					 req->code_len, &o, &sc.created);
			if (k < 0) {
				if (k == -EEXIST)
					reject(r, false,
					       "'%s' is also in the workspace, with other contents: the "
					       "script runs as that file; rename one of them",
					       sc.name);
				else
					reject(r, false,
					       "cannot write '%s' into the workspace: %s%s",
					       sc.name, strerror(-k),
					       k == -ENOSPC ? " (raise --workspace-size)" : "");
				sandbox_free(sb);
				return 0;
			}
		}
	}
	k = sandbox_start(sb);
	/* `codecell run`: the end's process now, while the program runs */
	if (k == 0 && req->teardown)
		sandbox_start_reaper(sb);
	if (k == 0) {
		struct sandbox_wait_opts o = {
			.channel_fds = { f->out[0], f->err[0], f->rep[0] },
			.n_channels = 3,
			.on_output = on_output,
			.userdata = p,
			.stop_fd = req->stop_fd,
			.return_at_report = req->teardown != NULL,
		};

		k = sandbox_wait(sb, &o, &x);
	}
	if (k == 0) {
		/* the script was the request's, not the program's output */
		if (sc.created)
			script_remove(sandbox_workspace_fd(sb), sc.name);
		(void)ws_sync_out(sandbox_workspace_fd(sb), req->workspace_dir, &r->warning);
		engine_parse_report(p->report.data, p->report.len, r);
		if (r->has_error) {
			r->error_value = cap_text(r->error_value, req->output_limit);
			r->error_traceback = cap_text(r->error_traceback, req->output_limit);
		}
		classify(&x, r);
		if (req->project_dir)
			keep_changes(req, sb, &base);
	}
	/* every connection is kept as it is decided: the program is gone,
	 * nothing more comes */
	if (req->egress_log)
		(void)sandbox_egress_events(sb, req->egress_log);
	if (k == 0 && req->teardown)
		*req->teardown = sb; /* the caller ends it */
	else
		sandbox_free(sb);
	return k;
}

int engine_run(const struct run_request *req, struct run_result *r)
{
	struct pump_ctx p = { .req = req };
	struct run_fds f;
	char **env = NULL;
	int k;

	memset(r, 0, sizeof(*r));
	if (req->teardown)
		*req->teardown = NULL;
	if (!validate(req, r))
		return 0;
	p.flood = codecell_flood_cap(req->output_limit);
	buf_init(&p.report, ENGINE_REPORT_MAX);
	outorder_init(&p.order);
	if (capture_init(&p.out, req->output_limit) < 0 ||
	    capture_init(&p.err, req->output_limit) < 0) {
		k = -ENOMEM;
		goto out;
	}
	k = open_run_fds(req, &f);
	if (k == 0 && req->has_seed) {
		/* the seed travels as variables the drivers read */
		struct run_request seeded = *req;

		env = engine_seed_env(req->env, req->seed);
		seeded.env = (const char *const *)env;
		k = env ? execute(&seeded, &f, &p, r) : -ENOMEM;
	} else if (k == 0) {
		k = execute(req, &f, &p, r);
	}
	close_run_fds(&f);
	if (k == 0 && !r->message) {
		capture_write_rest(&p.out, req->live_stdout);
		capture_write_rest(&p.err, req->live_stderr);
		(void)run_result_set_logs(r, &p.out, &p.err, &p.order);
		/* cut output is a limit hit, as in sessions */
		if (r->out_truncated || r->err_truncated)
			r->limits_hit |= SANDBOX_LIMIT_OUTPUT;
		if (req->lang == LANG_SQL && r->status == RESULT_ERROR)
			sql_error(r);
		/* an uncaught exception: the interpreter printed it and exited
		 * 1 (KeyboardInterrupt: killed itself by SIGINT, as on a host) */
		if (req->lang == LANG_PYTHON &&
		    ((r->has_exit_code && r->exit_code == 1) ||
		     (r->status == RESULT_KILLED && r->signal == SIGINT))) {
			script_python_error(r->err, r->err_len, r);
			if (script_python_efbig(r))
				r->limits_hit |= SANDBOX_LIMIT_FILE_SIZE;
		}
	}
out:
	engine_env_free(env);
	capture_release(&p.out);
	capture_release(&p.err);
	outorder_release(&p.order);
	buf_release(&p.report);
	return k;
}


int run_result_exit_status(const struct run_result *r)
{
	if (r->status == RESULT_REJECTED || r->setup_failed)
		return EXIT_CODECELL_ERROR;
	switch (r->status) {
	case RESULT_TIMEOUT:
		return EXIT_TIMEOUT;
	case RESULT_MEMORY_LIMIT:
		return EXIT_MEMORY_LIMIT;
	case RESULT_OUTPUT_LIMIT:
		return EXIT_OUTPUT_LIMIT;
	case RESULT_KILLED:
		return 128 + r->signal;
	default:
		return r->has_exit_code ? r->exit_code : 1;
	}
}
