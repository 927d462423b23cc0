/* `codecell run` options: a table of names and handlers. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/audit.h"
#include "engine/policy.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/banned.h"

const char run_usage[] =
	"usage: codecell run [OPTIONS] FILE|- [ARGS...]\n"
	"\n"
	"Run FILE (or code read from standard input, with -) in a sealed sandbox.\n"
	"The program's stdout and stderr pass through; the exit status is the\n"
	"program's, 128+N for signal N, or 124 timeout, 137 memory limit,\n"
	"141 output limit, 125 codecell could not run it.\n"
	"A Python or JavaScript script runs from the workspace as /home/user/NAME\n"
	"(main.py or main.js for code from standard input), as python3 NAME would.\n"
	"\n"
	"options:\n"
	"  --lang LANG          python (default), javascript, bash, sql; guessed\n"
	"                       from FILE's extension when not given\n"
	"  --json               print one result object on stdout instead\n"
	"%s" /* the limits, from the engine's table */
	"  --net MODE           loopback (default): own network, lo only;\n"
	"                       none: own network, no interface up;\n"
	"                       allowlist: lo, and an HTTP proxy (HTTP_PROXY, HTTPS_PROXY\n"
	"                       set inside) to the hosts of the policy's egress list\n"
	"  --file PATH          copy PATH into the workspace (repeatable)\n"
	"  --workspace DIR      start from DIR's contents and copy the workspace\n"
	"                       back to DIR afterwards (created if missing)\n"
	"  --db PATH            sql: a SQLite database to copy in and open\n"
	"  --project DIR        the workspace is DIR seen through an overlay: the\n"
	"                       program reads DIR, and what it writes or deletes\n"
	"                       goes to a layer of its own; DIR is never written.\n"
	"                       Changes are kept in a directory (printed at the end)\n"
	"                       for 'codecell diff', 'apply' and 'discard'\n"
	"  --changes DIR        keep them in DIR, which must not exist (default: a\n"
	"                       new directory under $XDG_STATE_HOME/codecell/changes\n"
	"                       or ~/.local/state/codecell/changes)\n"
	"  --env KEY=VALUE      set a variable for the program (repeatable)\n"
	"  --seed N             start random, numpy.random, Math.random, $RANDOM and\n"
	"                       Python's hashes from N (0 to 4294967295): the same\n"
	"                       code and seed give the same output (not time, urandom)\n"
	"  --policy FILE        the rules a call must pass (docs/policy.md; default:\n"
	"                       every language, the ceilings above, no approvals)\n"
	"  --audit FILE         append one JSON line about the call to FILE\n"
	"  --strict             refuse to run if any limit cannot be enforced\n"
	"  -h, --help           show this help\n";

const char shell_usage[] =
	"usage: codecell shell [OPTIONS]\n"
	"\n"
	"A Python, JavaScript or bash session in a sealed sandbox: variables, imports,\n"
	"files (and for bash the working directory and environment) persist from one\n"
	"statement to the next.  On a terminal it prompts;\n"
	"with input from a pipe it runs each complete statement as it arrives.\n"
	"A statement that runs past --timeout is interrupted (KeyboardInterrupt)\n"
	"and the session is kept.\n"
	"\n"
	"options:\n"
	"  --lang LANG          python (default), javascript or bash\n"
	"  --preload LIST       modules to import before the first statement,\n"
	"                       e.g. numpy,pandas,matplotlib\n"
	"  --json               print one result object per statement (a line each)\n"
	"%s" /* --timeout and --idle-timeout, from the engine's table */
	"  --file PATH          copy PATH into the workspace at start (repeatable)\n"
	"  --workspace DIR      start from DIR's contents; when the session ends, copy\n"
	"                       the workspace back into DIR\n"
	"  --project DIR        the workspace is DIR through an overlay (DIR is never\n"
	"                       written); on a terminal or from a pipe, these lines\n"
	"                       act on the changes: ':diff' shows them, ':apply'\n"
	"                       copies them into DIR (after asking on a terminal),\n"
	"                       ':discard' drops them.  Changes not applied are\n"
	"                       dropped when the session ends\n"
	"  --memory SIZE, --pids N, --cpus N, --cpu-time SECONDS, --file-size SIZE,\n"
	"  --open-files N, --tmp-size SIZE, --workspace-size SIZE,\n"
	"  --output-limit SIZE, --net MODE, --env KEY=VALUE, --seed N,\n"
	"  --policy FILE, --audit FILE, --strict\n"
	"                       as for 'codecell run' (see codecell run --help)\n"
	"  -h, --help           show this help\n";

/* The usage with its limits filled in from the engine's table. */
void run_opts_usage(bool shell, FILE *f)
{
	unsigned run = ~0u & ~(1u << LIMIT_IDLE_TIMEOUT);
	unsigned sh = 1u << LIMIT_TIMEOUT | 1u << LIMIT_IDLE_TIMEOUT;
	struct buf b;

	buf_init(&b, 8192);
	(void)engine_limits_usage(shell ? sh : run, &b);
	fprintf(f, shell ? shell_usage : run_usage, buf_str(&b));
	buf_release(&b);
}

struct opt {
	const char *name;
	bool has_arg;
	int (*handle)(struct run_opts *o, const char *name, const char *arg, struct buf *err);
};

static int bad(struct buf *err, const char *name, const char *arg, const char *expect)
{
	(void)buf_printf(err, "invalid %s '%s': expected %s", name, arg, expect);
	return -EINVAL;
}

static int o_lang(struct run_opts *o, const char *name, const char *arg, struct buf *err)
{
	(void)name;
	if (engine_lang_parse(arg, &o->req.lang) < 0) {
		(void)buf_printf(err, "unknown language '%s': choose one of %s", arg,
				 engine_lang_list());
		return -EINVAL;
	}
	o->lang_set = true;
	return 0;
}

static int o_json(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)a, (void)e;
	o->json = true;
	return 0;
}

static int o_strict(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)a, (void)e;
	o->req.strict = true;
	return 0;
}

static int o_help(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)a, (void)e;
	o->help = true;
	return 0;
}

/* Every limit: the engine's table parses it and checks floor and ceiling,
 * the same table the API and MCP use. */
static int limit_into(struct run_opts *o, enum engine_limit_id id, const char *name,
		      const char *arg, struct buf *err)
{
	struct engine_limit_values lv;
	char msg[256];
	double v;

	if (engine_limit_parse(id, name, arg, &v, msg, sizeof(msg)) < 0)
		return buf_puts(err, msg), -EINVAL;
	engine_limit_from_sandbox(&o->req.limits, &lv);
	lv.v[id] = v;
	engine_limit_to_sandbox(&lv, &o->req.limits);
	if (id == LIMIT_OUTPUT)
		o->req.output_limit = (uint64_t)v;
	o->limits_set |= 1u << id;
	return 0;
}

#define LIMIT_OPT(fn, id)                                                              \
	static int fn(struct run_opts *o, const char *n, const char *a, struct buf *e) \
	{                                                                              \
		return limit_into(o, id, n, a, e);                                     \
	}
LIMIT_OPT(o_timeout, LIMIT_TIMEOUT)
LIMIT_OPT(o_memory, LIMIT_MEMORY)
LIMIT_OPT(o_file_size, LIMIT_FILE_SIZE)
LIMIT_OPT(o_tmp_size, LIMIT_TMP_SIZE)
LIMIT_OPT(o_ws_size, LIMIT_WORKSPACE_SIZE)
LIMIT_OPT(o_output, LIMIT_OUTPUT)
LIMIT_OPT(o_pids, LIMIT_PIDS)
LIMIT_OPT(o_open_files, LIMIT_OPEN_FILES)
LIMIT_OPT(o_cpu, LIMIT_CPU_TIME)
LIMIT_OPT(o_cpus, LIMIT_CPUS)
#undef LIMIT_OPT

static int o_preload(struct run_opts *o, const char *name, const char *arg, struct buf *err)
{
	char msg[256];

	(void)name;
	if (engine_preload_check(arg, msg, sizeof(msg)) < 0)
		return buf_printf(err, "--%s", msg), -EINVAL;
	o->preload = arg;
	return 0;
}

static int o_idle(struct run_opts *o, const char *name, const char *arg, struct buf *err)
{
	char msg[256];

	/* 0: never; the table's floor is for the API, where a client may
	 * not hold a session forever */
	if (!strcmp(arg, "0"))
		o->idle_timeout_s = 0;
	else if (engine_limit_parse(LIMIT_IDLE_TIMEOUT, name, arg, &o->idle_timeout_s, msg,
				    sizeof(msg)) < 0)
		return buf_printf(err, "%s, or 0 for never", msg), -EINVAL;
	o->limits_set |= 1u << LIMIT_IDLE_TIMEOUT;
	return 0;
}

static int o_seed(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	char msg[160];

	(void)n;
	if (engine_seed_parse(a, &o->req.seed, msg, sizeof(msg)) < 0)
		return buf_printf(e, "--%s", msg), -EINVAL;
	o->req.has_seed = true;
	return 0;
}

static int o_policy(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)e;
	o->policy_path = a;
	return 0;
}

static int o_audit(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)e;
	o->audit_path = a;
	return 0;
}

int cli_policy_open(const struct run_opts *o, bool audit_by_default, struct engine_policies **ret_p,
		    struct engine_audit **ret_a)
{
	char msg[600];
	int r;

	*ret_a = NULL;
	if (o->policy_path)
		r = engine_policies_load(o->policy_path, ret_p, msg, sizeof(msg));
	else
		r = (*ret_p = engine_policies_new())
			    ? 0
			    : (snprintf(msg, sizeof(msg), "out of memory"), -ENOMEM);
	if (r < 0)
		return log_error("--policy: %s", msg), r;
	if ((r = cli_audit_open(o->audit_path, audit_by_default, ret_a)) < 0) {
		engine_policies_free(*ret_p);
		return r;
	}
	return 0;
}

static int o_net(struct run_opts *o, const char *name, const char *arg, struct buf *err)
{
	o->net_set = true;
	if (!strcmp(arg, "none"))
		o->req.net = SANDBOX_NET_NONE;
	else if (!strcmp(arg, "loopback"))
		o->req.net = SANDBOX_NET_LOOPBACK;
	else if (!strcmp(arg, "allowlist"))
		o->req.net = SANDBOX_NET_ALLOWLIST;
	else
		return bad(err, name, arg,
			   "none, loopback or allowlist (the hosts of --policy's egress list)");
	return 0;
}

static int o_file(struct run_opts *o, const char *name, const char *arg, struct buf *err)
{
	(void)name;
	if (o->n_files >= ENGINE_MAX_FILES) {
		(void)buf_printf(err, "too many --file options: at most %d; use --workspace DIR",
				 ENGINE_MAX_FILES);
		return -EINVAL;
	}
	o->files[o->n_files++] = arg;
	o->req.files = o->files;
	return 0;
}

static int o_workspace(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)e;
	o->req.workspace_dir = a;
	return 0;
}

static int o_project(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)e;
	o->req.project_dir = a;
	return 0;
}

static int o_changes(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)e;
	o->changes_dir = a;
	return 0;
}

static int o_db(struct run_opts *o, const char *n, const char *a, struct buf *e)
{
	(void)n, (void)e;
	o->req.db_path = a;
	return 0;
}

static int o_env(struct run_opts *o, const char *name, const char *arg, struct buf *err)
{
	const char *eq = strchr(arg, '=');
	char msg[200];

	if (!eq)
		return bad(err, name, arg, "KEY=VALUE");
	if (engine_env_key_check(arg, (size_t)(eq - arg), msg, sizeof(msg)) < 0)
		return buf_printf(err, "invalid %s '%s': expected KEY=VALUE: %s", name, arg, msg),
		       -EINVAL;
	if (o->n_env >= ENGINE_MAX_ENV) {
		(void)buf_printf(err, "too many --env options: at most %d", ENGINE_MAX_ENV);
		return -EINVAL;
	}
	o->env[o->n_env++] = arg;
	o->req.env = o->env;
	return 0;
}

static const struct opt opts[] = {
	{ "--lang", true, o_lang },
	{ "--json", false, o_json },
	{ "--timeout", true, o_timeout },
	{ "--memory", true, o_memory },
	{ "--pids", true, o_pids },
	{ "--cpu-time", true, o_cpu },
	{ "--file-size", true, o_file_size },
	{ "--open-files", true, o_open_files },
	{ "--tmp-size", true, o_tmp_size },
	{ "--workspace-size", true, o_ws_size },
	{ "--output-limit", true, o_output },
	{ "--net", true, o_net },
	{ "--file", true, o_file },
	{ "--workspace", true, o_workspace },
	{ "--db", true, o_db },
	{ "--env", true, o_env },
	{ "--strict", false, o_strict },
	{ "--help", false, o_help },
	{ "-h", false, o_help },
	{ "--preload", true, o_preload },
	{ "--idle-timeout", true, o_idle },
	{ "--cpus", true, o_cpus },
	{ "--policy", true, o_policy },
	{ "--audit", true, o_audit },
	{ "--seed", true, o_seed },
	{ "--project", true, o_project },
	{ "--changes", true, o_changes },
};

static const struct opt *find(const char *arg, size_t *ret_namelen)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strlen(opts[i].name) == len && !strncmp(arg, opts[i].name, len)) {
			*ret_namelen = len;
			return &opts[i];
		}
	return NULL;
}

static int project_workspace(const struct run_opts *o, struct buf *err)
{
	if (o->req.project_dir && o->req.workspace_dir) {
		(void)buf_puts(err,
			       "--project and --workspace cannot be combined: the project is the "
			       "workspace");
		return -EINVAL;
	}
	return 0;
}

/* What `codecell shell` does not take (yet). */
static int finish_shell(struct run_opts *o, struct buf *err)
{
	if (o->path) {
		(void)buf_printf(err,
				 "'codecell shell' takes no FILE ('%s'); use 'codecell run FILE'",
				 o->path);
		return -EINVAL;
	}
	if (o->req.lang == LANG_SQL) {
		(void)buf_printf(
			err,
			"sessions are Python, JavaScript or bash: '--lang %s' is not supported by 'codecell shell'",
			engine_lang_name(o->req.lang));
		return -EINVAL;
	}
	if (o->req.lang != LANG_PYTHON && o->preload) {
		(void)buf_puts(err, "--preload is for Python sessions");
		return -EINVAL;
	}
	if (o->req.db_path) {
		(void)buf_puts(err, "--db goes with 'codecell run --lang sql'");
		return -EINVAL;
	}
	if (o->changes_dir) {
		(void)buf_puts(err, "--changes goes with 'codecell run --project'; in a shell, "
				    "':apply' and ':discard' act on the changes");
		return -EINVAL;
	}
	return project_workspace(o, err);
}

static int finish(struct run_opts *o, struct buf *err)
{
	if (o->help)
		return 0;
	if (o->shell)
		return finish_shell(o, err);
	if (o->preload || (o->limits_set & (1u << LIMIT_IDLE_TIMEOUT))) {
		(void)buf_puts(err, "--preload and --idle-timeout go with 'codecell shell'");
		return -EINVAL;
	}
	if (!o->path) {
		(void)buf_puts(err,
			       "no code given: name a FILE, or - to read code from standard input");
		return -EINVAL;
	}
	if (!o->lang_set && strcmp(o->path, "-") != 0)
		(void)engine_lang_from_path(o->path, &o->req.lang);
	if (o->req.db_path && o->req.lang != LANG_SQL) {
		(void)buf_puts(err, "--db goes with --lang sql");
		return -EINVAL;
	}
	if (o->changes_dir && !o->req.project_dir) {
		(void)buf_puts(err, "--changes goes with --project");
		return -EINVAL;
	}
	return project_workspace(o, err);
}

static int parse(int argc, char **argv, struct run_opts *o, struct buf *err);

int run_opts_parse(int argc, char **argv, struct run_opts *o, struct buf *err)
{
	memset(o, 0, sizeof(*o));
	o->idle_timeout_s = CODECELL_DEFAULT_IDLE_S;
	return parse(argc, argv, o, err);
}

int shell_opts_parse(int argc, char **argv, struct run_opts *o, struct buf *err)
{
	memset(o, 0, sizeof(*o));
	o->shell = true;
	o->idle_timeout_s = CODECELL_DEFAULT_IDLE_S;
	return parse(argc, argv, o, err);
}

static int parse(int argc, char **argv, struct run_opts *o, struct buf *err)
{
	int i;

	run_request_init(&o->req);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		const struct opt *op;
		size_t nl;
		int r;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !strcmp(a, "-"))
			break;
		op = find(a, &nl);
		if (!op) {
			(void)buf_printf(err, "unknown option '%s' (see 'codecell %s --help')", a,
					 o->shell ? "shell" : "run");
			return -EINVAL;
		}
		if (op->has_arg) {
			if (a[nl] == '=')
				val = a + nl + 1;
			else if (i + 1 < argc)
				val = argv[++i];
			else {
				(void)buf_printf(err, "option '%s' needs a value", op->name);
				return -EINVAL;
			}
		} else if (a[nl] == '=') {
			(void)buf_printf(err, "option '%s' takes no value", op->name);
			return -EINVAL;
		}
		r = op->handle(o, op->name, val, err);
		if (r < 0)
			return r;
	}
	if (i < argc) {
		o->path = argv[i];
		o->args = argv + i + 1;
		o->req.args = (const char *const *)o->args;
	}
	if (argc - i - 1 > ENGINE_MAX_ARGS) {
		(void)buf_printf(err, "too many program arguments: at most %d", ENGINE_MAX_ARGS);
		return -EINVAL;
	}
	return finish(o, err);
}

int cli_split_options(int argc, char **argv, const struct cli_option *known, size_t n_known,
		      const char *cmd,
		      int (*on_own)(void *ud, const char *name, const char *val, struct buf *err),
		      void *ud, char **shared, int *ret_n, int *ret_next, struct buf *err)
{
	int n = 0, i;

	shared[n++] = argv[0];
	for (i = 1; i < argc && argv[i][0] == '-' && strcmp(argv[i], "-"); i++) {
		const char *a = argv[i], *eq = strchr(a, '='), *val = NULL;
		size_t len = eq ? (size_t)(eq - a) : strlen(a), k;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		for (k = 0; k < n_known; k++)
			if (strlen(known[k].name) == len && !strncmp(a, known[k].name, len))
				break;
		if (k == n_known)
			return buf_printf(err, "unknown option '%s' (see 'codecell %s --help')", a,
					  cmd),
			       -EINVAL;
		if (known[k].has_arg && !eq && i + 1 >= argc)
			return buf_printf(err, "option '%s' needs a value", known[k].name), -EINVAL;
		if (!known[k].has_arg && eq)
			return buf_printf(err, "option '%s' takes no value", known[k].name),
			       -EINVAL;
		if (!known[k].own) {
			shared[n++] = argv[i];
			if (known[k].has_arg && !eq)
				shared[n++] = argv[++i];
			continue;
		}
		if (known[k].has_arg)
			val = eq ? eq + 1 : argv[++i];
		if (on_own(ud, known[k].name, val, err) < 0)
			return -EINVAL;
	}
	shared[n] = NULL;
	*ret_n = n;
	*ret_next = i;
	return 0;
}
