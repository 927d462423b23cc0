/* `codecell serve`: the HTTP/JSON API and the playground (docs/API.md).
 * Options, the token file, signals; the server itself is src/api/. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/server.h"
#include "api/api.h"
#include "e2b/e2b.h"
#include "mcp/mcp.h"
#include "cli/cli.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/macro.h"
#include "engine/approval.h"
#include "engine/audit.h"
#include "engine/policy.h"
#include "util/parse.h"
#include "util/banned.h"

const char serve_usage[] =
	"usage: codecell serve [OPTIONS]\n"
	"\n"
	"Serve the HTTP/JSON API (docs/API.md) and the web playground at /.  The same port\n"
	"answers E2B's SDKs (E2B_API_URL and E2B_SANDBOX_URL set to its URL; with a token,\n"
	"E2B_API_KEY=e2b_TOKEN for a hex token, else e2b_ and the token's bytes in hex):\n"
	"docs/API.md, \"The E2B door\".\n"
	"\n"
	"options:\n"
	"  --listen ADDR:PORT   where to listen (default 127.0.0.1:8080); [::1]:PORT for IPv6,\n"
	"                       PORT alone for 127.0.0.1:PORT, port 0 for any free port.\n"
	"                       Beyond loopback a token is required\n"
	"  --token-file FILE    clients must send 'Authorization: Bearer TOKEN', TOKEN being\n"
	"                       the file's first line (at least 16 characters, no spaces)\n"
	"  --max-sessions N     sessions open at once, made by any door: /v1, E2B, /mcp,\n"
	"                       POST /v1/agent (default 64, at most 4096)\n"
	"  --pool N             keep N Python kernels ready for new sessions (default 2,\n"
	"                       0 turns the pool off, at most 64), forked from a template\n"
	"                       that has imported --preload: a new session is ready in\n"
	"                       well under 1 ms\n"
	"  --preload LIST       modules new Python sessions import at start, such as\n"
	"                       numpy,pandas,matplotlib.pyplot (a request's 'preload' wins)\n"
	"  --max-connections N  connections at once (default: 512, or fewer if the fds\n"
	"                       allow fewer; at most 16384); one more is closed at once\n"
	"  --max-client-connections N\n"
	"                       connections at once from one client address (default\n"
	"                       128, 0 for no limit); every local client is 127.0.0.1\n"
	"  --request-timeout DURATION\n"
	"                       a client must send a whole request, headers and body,\n"
	"                       within this (default 60s; 0 for none); trickling bytes\n"
	"                       does not extend it.  Counted from the connection's start\n"
	"                       or the previous answer, so it also ends idle keep-alive\n"
	"                       connections; running code and streams are not cut\n"
	"  --policy FILE        the rules every call must pass, and the clients' API keys\n"
	"                       each mapped to a policy (docs/policy.md); with clients,\n"
	"                       every request needs a key.  Default: every language, the\n"
	"                       limits table's ceilings, no approvals, no rate limit.\n"
	"                       Calls its 'approval' names wait for the operator:\n"
	"                       codecell approvals (GET/POST /v1/approvals).  Tools\n"
	"                       besides code (GET /v1/tools, POST /v1/tools/NAME) are\n"
	"                       off unless the policy's 'tools' key names them\n"
	"  --max-pending-approvals N\n"
	"                       calls one client may have held for approval at once\n"
	"                       (default 32, at most 256, the server's whole table); one\n"
	"                       more is refused with 429 until the operator decides\n"
	"  --audit FILE|off     append one JSON line per call to FILE (rotated at 64M,\n"
	"                       FILE.1 to FILE.5); read it with 'codecell audit'.\n"
	"                       Default: $XDG_STATE_HOME/codecell/audit.jsonl\n"
	"                       (~/.local/state/codecell/audit.jsonl); off: none\n"
	"  -h, --help           this text\n"
	"\n"
	"The first line on stdout is 'codecell serve: listening on URL'.  SIGINT or\n"
	"SIGTERM stops every execution and ends every session, then exits 0.\n"
	"At start the soft RLIMIT_NOFILE is raised to the hard limit; a server the\n"
	"fds cannot carry (64, and 16 per session and pooled kernel, 24 per\n"
	"connection) refuses to start.\n"
	"A connection without any traffic for 300 s is closed.\n";

/* A small warm pool by default: the fast path (a session in well under
 * 1 ms) without asking.  Two kernels and the template cost little while
 * idle (forked, their pages shared). */
#define SERVE_DEFAULT_POOL 2

struct serve_opts {
	const char *policy, *audit;
	const char *listen;
	const char *token_file;
	unsigned max_sessions;
	unsigned max_pending_approvals;
	unsigned pool;
	const char *preload;
	unsigned max_connections, max_client_connections;
	double request_timeout_s;
	bool help;
};

static int opt_count(const char *v, unsigned min, unsigned max, unsigned *ret)
{
	uint64_t n;

	if (parse_u64(v, &n) < 0 || n < min || n > max)
		return -EINVAL;
	*ret = (unsigned)n;
	return 0;
}

static int set_listen(struct serve_opts *o, const char *v, struct buf *err)
{
	(void)err;
	o->listen = v;
	return 0;
}

static int set_token_file(struct serve_opts *o, const char *v, struct buf *err)
{
	(void)err;
	o->token_file = v;
	return 0;
}

static int set_max_sessions(struct serve_opts *o, const char *v, struct buf *err)
{
	if (opt_count(v, 1, API_MAX_SESSIONS_MAX, &o->max_sessions) < 0)
		return buf_printf(err, "--max-sessions '%s': expected a number from 1 to %d", v,
				  API_MAX_SESSIONS_MAX),
		       -EINVAL;
	return 0;
}

static int set_max_pending_approvals(struct serve_opts *o, const char *v, struct buf *err)
{
	if (opt_count(v, 1, APPROVAL_MAX, &o->max_pending_approvals) < 0)
		return buf_printf(err,
				  "--max-pending-approvals '%s': expected a number from 1 to %d", v,
				  APPROVAL_MAX),
		       -EINVAL;
	return 0;
}

static int set_pool(struct serve_opts *o, const char *v, struct buf *err)
{
	if (opt_count(v, 0, SESSION_POOL_MAX, &o->pool) < 0)
		return buf_printf(err, "--pool '%s': expected a number from 0 to %d", v,
				  SESSION_POOL_MAX),
		       -EINVAL;
	return 0;
}

static int set_max_connections(struct serve_opts *o, const char *v, struct buf *err)
{
	if (opt_count(v, API_CONNECTIONS_MIN, API_MAX_CONNECTIONS_MAX, &o->max_connections) < 0)
		return buf_printf(err, "--max-connections '%s': expected a number from %d to %d", v,
				  API_CONNECTIONS_MIN, API_MAX_CONNECTIONS_MAX),
		       -EINVAL;
	return 0;
}

static int set_max_client_connections(struct serve_opts *o, const char *v, struct buf *err)
{
	if (opt_count(v, 0, API_MAX_CONNECTIONS_MAX, &o->max_client_connections) < 0)
		return buf_printf(err,
				  "--max-client-connections '%s': expected a number from 0 to %d",
				  v, API_MAX_CONNECTIONS_MAX),
		       -EINVAL;
	return 0;
}

static int set_request_timeout(struct serve_opts *o, const char *v, struct buf *err)
{
	double t;

	if (parse_duration(v, &t) < 0 || !(t >= 0 && t <= API_REQUEST_TIMEOUT_MAX_S))
		return buf_printf(
			       err,
			       "--request-timeout '%s': expected a duration from 0 to %gs, such as 30 or 2m",
			       v, API_REQUEST_TIMEOUT_MAX_S),
		       -EINVAL;
	o->request_timeout_s = t;
	return 0;
}

static int set_preload(struct serve_opts *o, const char *v, struct buf *err)
{
	char msg[256];

	if (engine_preload_check(v, msg, sizeof(msg)) < 0)
		return buf_printf(err, "--%s", msg), -EINVAL;
	o->preload = v;
	return 0;
}

static int set_policy(struct serve_opts *o, const char *v, struct buf *err)
{
	(void)err;
	o->policy = v;
	return 0;
}

static int set_audit(struct serve_opts *o, const char *v, struct buf *err)
{
	(void)err;
	o->audit = v;
	return 0;
}

static const struct {
	const char *name;
	int (*set)(struct serve_opts *o, const char *v, struct buf *err);
} options[] = {
	{ "--listen", set_listen },
	{ "--token-file", set_token_file },
	{ "--max-sessions", set_max_sessions },
	{ "--pool", set_pool },
	{ "--preload", set_preload },
	{ "--max-connections", set_max_connections },
	{ "--max-client-connections", set_max_client_connections },
	{ "--request-timeout", set_request_timeout },
	{ "--max-pending-approvals", set_max_pending_approvals },
	{ "--policy", set_policy },
	{ "--audit", set_audit },
};

/* Pure: no I/O.  0, or -EINVAL with a message in err. */
static int serve_opts_parse(int argc, char **argv, struct serve_opts *o, struct buf *err)
{
	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1:8080";
	o->max_sessions = API_DEFAULT_MAX_SESSIONS;
	o->max_pending_approvals = APPROVAL_PER_CLIENT_DEFAULT;
	o->pool = SERVE_DEFAULT_POOL;
	o->max_client_connections = API_MAX_CLIENT_CONNECTIONS;
	o->request_timeout_s = API_REQUEST_TIMEOUT_S;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '='), *val;
		size_t k, len = eq ? (size_t)(eq - arg) : strlen(arg);

		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			o->help = true;
			continue;
		}
		for (k = 0; k < ARRAY_SIZE(options); k++)
			if (strlen(options[k].name) == len && !strncmp(arg, options[k].name, len))
				break;
		if (k == ARRAY_SIZE(options))
			return buf_printf(err, "unknown option '%s' (see 'codecell serve --help')",
					  arg),
			       -EINVAL;
		val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
		if (!val)
			return buf_printf(err, "%s needs a value", options[k].name), -EINVAL;
		if (options[k].set(o, val, err) < 0)
			return -EINVAL;
	}
	return 0;
}

/* The token: the file's first line, trimmed.  Header-safe characters only
 * (it is compared with what follows "Bearer "). */
static int read_token(const char *path, struct buf *tok)
{
	struct stat st;
	int r = buf_read_file(tok, path);

	if (r < 0)
		return log_error("cannot read --token-file '%s': %s", path,
				 r == -E2BIG ? "it is too large" : strerror(-r));
	tok->len = strcspn(buf_str(tok), "\r\n");
	while (tok->len && isspace((unsigned char)tok->data[tok->len - 1]))
		tok->len--;
	if (tok->data)
		tok->data[tok->len] = '\0';
	if (tok->len < API_TOKEN_MIN)
		return log_error("--token-file '%s': the token must be at least %d characters",
				 path, API_TOKEN_MIN);
	for (size_t i = 0; i < tok->len; i++)
		if (!isgraph((unsigned char)tok->data[i]))
			return log_error(
				"--token-file '%s': the token must be printable ASCII without spaces",
				path);
	if (stat(path, &st) == 0 && (st.st_mode & 077))
		log_warn("--token-file '%s' is readable by other users (chmod 600 it)", path);
	return 0;
}

static void log_cb(const char *level, const char *msg)
{
	if (!strcmp(level, "error"))
		log_error("%s", msg);
	else
		log_warn("%s", msg);
}

/* SIGINT, SIGTERM and SIGHUP are blocked in every thread (set before any
 * is made) and read here from a signalfd; SIGPIPE is ignored, since a
 * client may go away while we write to it. */
/* "127.0.0.1" or "[::1]": the address part of the URL we print. */
static void listen_host(const struct api_listen *l, char *out, size_t n)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (l->addr.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&l->addr)->sin6_addr, a,
			  sizeof(a));
		snprintf(out, n, "[%s]", a);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)&l->addr)->sin_addr, a, sizeof(a));
		snprintf(out, n, "%s", a);
	}
}

/* Every connection and session holds fds, and the server uses poll(),
 * never select(): the soft limit goes up to the hard one.  The hard
 * limit is the administrator's cap and stays; the server refuses to
 * start if it cannot carry the config (api_server_new, api_fd_budget).
 * Sandboxes set their own limit. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int serve(const struct serve_opts *o, struct api_config *cfg)
{
	struct signalfd_siginfo si;
	struct api_server *srv = NULL;
	char *msg = NULL, host[64];
	int sfd, r;

	cli_ignore_sigpipe();
	sfd = cli_stop_signals(0, NULL);

	if (sfd < 0)
		return log_error("cannot set up signals: %s", strerror(-sfd)), EXIT_CODECELL_ERROR;
	cfg->log = log_cb;
	raise_nofile();
	r = api_server_new(cfg, &srv, &msg);
	if (r < 0) {
		log_error("cannot serve on '%s': %s", o->listen, msg ? msg : strerror(-r));
		free(msg);
		close(sfd);
		return EXIT_CODECELL_ERROR;
	}
	listen_host(&cfg->listen, host, sizeof(host));
	printf("codecell serve: listening on http://%s:%u/ (%s)\n", host, api_server_port(srv),
	       cfg->policies && engine_policies_has_clients(cfg->policies)
		       ? "a client's key required (--policy)"
	       : cfg->token ? "bearer token required"
			    : "loopback only, no token");
	fflush(stdout);
	while (read(sfd, &si, sizeof(si)) != sizeof(si) && errno == EINTR)
		;
	fprintf(stderr, "codecell serve: %s: stopping every execution and session\n",
		strsignal((int)si.ssi_signo));
	api_server_free(srv);
	close(sfd);
	return 0;
}

/* The doors of `codecell serve`.  E2B's first: it claims its requests
 * (by header or path) before the route table sees them.  /v1's last:
 * the playground's files take every path no door took before. */
static const struct http_door *const serve_doors[] = { &e2b_door, &mcp_http_door, &api_door, NULL };

int cli_serve(int argc, char **argv)
{
	struct serve_opts o;
	struct api_config cfg = { 0 };
	struct buf err, tok;
	char msg[512];
	int r;

	buf_init(&err, 4096);
	if (serve_opts_parse(argc, argv, &o, &err) < 0) {
		log_error("%s", buf_str(&err));
		buf_release(&err);
		return EXIT_CODECELL_ERROR;
	}
	buf_release(&err);
	if (o.help) {
		fputs(serve_usage, stdout);
		return 0;
	}
	cfg.doors = serve_doors;
	if (api_listen_parse(o.listen, &cfg.listen, msg, sizeof(msg)) < 0)
		return log_error("%s", msg), EXIT_CODECELL_ERROR;
	buf_init(&tok, API_TOKEN_MAX);
	if (o.token_file && read_token(o.token_file, &tok) < 0) {
		buf_release(&tok);
		return EXIT_CODECELL_ERROR;
	}
	cfg.token = o.token_file ? buf_str(&tok) : NULL;
	cfg.token_len = tok.len;
	cfg.max_sessions = o.max_sessions;
	cfg.max_pending_approvals = o.max_pending_approvals;
	cfg.pool_size = o.pool;
	cfg.preload = o.preload;
	cfg.max_connections = o.max_connections;
	cfg.max_client_connections = o.max_client_connections;
	cfg.request_timeout_s = o.request_timeout_s;
	/* POST /v1/agent, as `codecell agent` finds its model */
	cfg.agent_base_url = getenv("OPENAI_BASE_URL");
	cfg.agent_api_key = getenv("OPENAI_API_KEY");
	cfg.agent_model = getenv("CODECELL_MODEL");
	if (o.policy && engine_policies_load(o.policy, &cfg.policies, msg, sizeof(msg)) < 0) {
		buf_release(&tok);
		return log_error("--policy: %s", msg), EXIT_CODECELL_ERROR;
	}
	if (cli_audit_open(o.audit, true, &cfg.audit) < 0) {
		engine_policies_free(cfg.policies);
		buf_release(&tok);
		return EXIT_CODECELL_ERROR;
	}
	r = serve(&o, &cfg);
	engine_audit_close(cfg.audit);
	engine_policies_free(cfg.policies);
	buf_release(&tok);
	return r;
}
