/* `codecell mcp`: the MCP server on stdio (src/mcp/ is the protocol).
 *
 * One JSON-RPC message a line on stdin, one reply a line on stdout,
 * nothing else on stdout; messages for the operator on stderr.  Requests
 * are answered in order, one at a time, while a reader thread keeps
 * reading so a running call can be cancelled.  EOF on stdin lets the
 * calls already sent finish, closes every session and exits 0.  SIGINT, SIGTERM and SIGHUP stop the running
 * execution (a thread turns them into a stop record the engine polls),
 * close every session and exit 128+N. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "engine/audit.h"
#include "engine/policy.h"
#include "mcp/mcp.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"
#include "version.h"
#include "util/banned.h"

#define MCP_DEFAULT_IDLE_S 3600.0
#define MCP_OUTPUT_LIMIT_MAX (16u << 20)

const char mcp_usage[] =
	"usage: codecell mcp [OPTIONS]\n"
	"\n"
	"An MCP (Model Context Protocol) server on stdin and stdout, for MCP clients\n"
	"such as desktop assistants and IDE agents: newline-delimited JSON-RPC 2.0,\n"
	"protocol versions 2024-11-05 to 2025-11-25 (initialize) and 2026-07-28.\n"
	"Tools: run_code, create_session, close_session, list_sessions, list_files,\n"
	"read_file, write_file.  Logs go to stderr; at end of input every session is\n"
	"closed and the server exits 0.  SIGINT, SIGTERM or SIGHUP stop the running\n"
	"call, close every session and exit 128+N.\n"
	"\n"
	"options:\n"
	"  --pool N             keep N Python kernels ready for new sessions (default 0,\n"
	"                       at most 64), forked from a template that has imported\n"
	"                       --preload; it warms in the background\n"
	"  --preload LIST       modules new Python sessions import at start, such as\n"
	"                       numpy,pandas,matplotlib.pyplot (create_session's\n"
	"                       'preload' wins)\n"
	"  --max-sessions N     sessions open at once (default 16, at most 1024)\n"
	"  --idle-timeout DUR   close a session unused for this long (default 1h;\n"
	"                       0: never)\n"
	"  --timeout DUR        default limit per run_code (default 30s; a call's\n"
	"                       'timeout' argument wins, up to 3600 s)\n"
	"  --memory SIZE, --pids N, --cpu-time SECONDS, --file-size SIZE,\n"
	"  --open-files N, --tmp-size SIZE, --workspace-size SIZE,\n"
	"  --output-limit SIZE, --net MODE, --env KEY=VALUE, --strict, --cpus N\n"
	"                       limits of every sandbox, as for 'codecell run'\n"
	"  --policy FILE        the rules every call must pass (docs/policy.md); a\n"
	"                       rejected run_code is a result with status 'rejected'.\n"
	"                       Its [default] policy's 'tools' (sql, http) are listed and\n"
	"                       called beside run_code (none without it)\n"
	"  --audit FILE|off     append one JSON line per run_code and tool call to FILE\n"
	"                       (rotated at 64M). Default: $XDG_STATE_HOME/codecell/\n"
	"                       audit.jsonl (~/.local/state/codecell/audit.jsonl);\n"
	"                       off: none.  --output-limit at most 16M\n"
	"  -h, --help           show this help\n"
	"\n"
	"In an MCP client's configuration:\n"
	"  {\"mcpServers\": {\"codecell\": {\"command\": \"codecell\", \"args\": [\"mcp\", \"--pool\", \"2\"]}}}\n";

struct mcp_opts {
	struct run_opts run; /* the sandbox limits, parsed by run_opts.c */
	unsigned pool;
	unsigned max_sessions;
	bool help;
};

/* Options codecell mcp takes: its own (parsed here), and those of
 * `codecell shell` that make sense here (handed to shell_opts_parse). */
static const struct cli_option known[] = {
	{ "--pool", true, true },	   { "--max-sessions", true, true },
	{ "--help", false, true },	   { "-h", false, true },
	{ "--preload", true, false },	   { "--idle-timeout", true, false },
	{ "--timeout", true, false },	   { "--memory", true, false },
	{ "--pids", true, false },	   { "--cpu-time", true, false },
	{ "--file-size", true, false },	   { "--open-files", true, false },
	{ "--tmp-size", true, false },	   { "--workspace-size", true, false },
	{ "--output-limit", true, false }, { "--net", true, false },
	{ "--env", true, false },	   { "--strict", false, false },
	{ "--cpus", true, false },	   { "--policy", true, false },
	{ "--audit", true, false },
};

static int own_option(void *ud, const char *name, const char *val, struct buf *err)
{
	struct mcp_opts *o = ud;
	uint64_t n;

	if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
		o->help = true;
		return 0;
	}
	if (!strcmp(name, "--pool")) {
		if (parse_u64(val, &n) < 0 || n > SESSION_POOL_MAX)
			return buf_printf(
				       err,
				       "invalid --pool '%s': expected a whole number from 0 to %d",
				       val, SESSION_POOL_MAX),
			       -EINVAL;
		o->pool = (unsigned)n;
		return 0;
	}
	if (parse_u64(val, &n) < 0 || n < 1 || n > MCP_MAX_SESSIONS_MAX)
		return buf_printf(
			       err,
			       "invalid --max-sessions '%s': expected a whole number from 1 to %d",
			       val, MCP_MAX_SESSIONS_MAX),
		       -EINVAL;
	o->max_sessions = (unsigned)n;
	return 0;
}

/* Pure: no I/O.  shared (argc + 1 entries) receives the options for
 * shell_opts_parse.  0, or -EINVAL with a message in err. */
static int mcp_opts_parse(int argc, char **argv, struct mcp_opts *o, char **shared, struct buf *err)
{
	int n, next;

	memset(o, 0, sizeof(*o));
	o->max_sessions = MCP_DEFAULT_MAX_SESSIONS;
	if (cli_split_options(argc, argv, known, ARRAY_SIZE(known), "mcp", own_option, o, shared,
			      &n, &next, err) < 0)
		return -EINVAL;
	if (next < argc)
		return buf_printf(err,
				  "'codecell mcp' takes no arguments ('%s'): it talks on stdin and "
				  "stdout",
				  argv[next]),
		       -EINVAL;
	if (shell_opts_parse(n, shared, &o->run, err) < 0)
		return -EINVAL;
	/* the parser says whether it was given (not a scan of the
	 * arguments, where "--env --idle-timeout" would look like it) */
	if (!(o->run.limits_set & (1u << LIMIT_IDLE_TIMEOUT)))
		o->run.idle_timeout_s = MCP_DEFAULT_IDLE_S;
	/* a reply holds both streams twice (text and structuredContent),
	 * JSON-escaped: keep it well under MCP_REPLY_MAX */
	if (o->run.req.output_limit > MCP_OUTPUT_LIMIT_MAX)
		return buf_printf(err, "invalid --output-limit: at most %uM for codecell mcp",
				  MCP_OUTPUT_LIMIT_MAX >> 20),
		       -EINVAL;
	return 0;
}

/* ---- signals ---- */

/* The signal thread: SIGINT, SIGTERM and SIGHUP (blocked everywhere) are
 * read here, noted, and turned into a SIGTERM record on the stop pipe,
 * which a running execution polls (it kills a one-shot run and a
 * session's kernel) and the input loop polls between messages. */
/* ---- the loop ---- */

/* Empty the stop pipe (non-blocking). */
static void drain(int fd)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) > 0)
		;
}

/* ---- input: a reader thread ----
 *
 * Lines are read by a thread of their own and queued, so that while a
 * call runs the client can still cancel it (notifications/cancelled):
 * the reader writes a SIGINT record on the stop pipe, which interrupts a
 * session's cell (the session is kept) or ends a one-shot run, and the
 * call's reply is not sent (cancellation.mdx).  Everything else is
 * handled in order by the main thread. */

#define INBOX_MAX (64u << 20) /* bytes of lines waiting; the reader waits past it */

struct item {
	struct item *next;
	bool oversize; /* a line over MCP_MESSAGE_MAX, dropped */
	size_t len;
	char data[];
};

struct inbox {
	pthread_mutex_t lock;
	pthread_cond_t room;
	int ready_fd; /* eventfd: something was queued, or the input ended */
	int stop_w;   /* the stop pipe's write end (SIGINT records cancel) */
	struct item *head, *tail;
	size_t bytes;
	bool eof;
	int err;	  /* a read error, -errno */
	json_t *inflight; /* the id of the request being handled, or NULL */
	bool cancelled;
	/* the reader's line */
	char blk[65536];
	size_t pos, len;
	bool in_eof;
};

/* One line into line.  1 a line, 0 EOF, -E2BIG a line over the cap (read
 * to its end and dropped), -errno. */
static int read_line(struct inbox *in, struct buf *line)
{
	bool overflow = false;

	buf_reset(line);
	for (;;) {
		char *nl;
		size_t take;

		if (in->pos == in->len) {
			ssize_t n;

			if (in->in_eof)
				return overflow ? -E2BIG : line->len ? 1 : 0;
			n = read(STDIN_FILENO, in->blk, sizeof(in->blk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			in->in_eof = n == 0;
			in->pos = 0;
			in->len = (size_t)n;
			continue;
		}
		nl = memchr(in->blk + in->pos, '\n', in->len - in->pos);
		take = nl ? (size_t)(nl - in->blk) - in->pos : in->len - in->pos;
		if (!overflow && buf_append(line, in->blk + in->pos, take) < 0) {
			overflow = true;
			buf_reset(line);
		}
		in->pos += take + (nl != NULL);
		if (nl)
			return overflow ? -E2BIG : 1;
	}
}

/* A notifications/cancelled for the request being handled: stop it.
 * Under in->lock. */
static void check_cancel(struct inbox *in, const struct buf *line)
{
	static const char needle[] = "notifications/cancelled";
	json_t *m, *id;
	struct signalfd_siginfo si = { .ssi_signo = SIGINT };

	if (!in->inflight || in->cancelled ||
	    !memmem(line->data, line->len, needle, sizeof(needle) - 1))
		return;
	m = NULL;
	(void)json_body_read(line->data, line->len, MCP_JSON_FLAGS, &m, NULL);
	id = json_object_get(json_object_get(m, "params"), "requestId");
	if (json_is_string(json_object_get(m, "method")) &&
	    !strcmp(json_string_value(json_object_get(m, "method")), needle) && id &&
	    json_equal(id, in->inflight)) {
		in->cancelled = true;
		if (write(in->stop_w, &si, sizeof(si)) < 0) {
			/* full: readable all the same */
		}
	}
	json_decref(m);
}

static void push(struct inbox *in, const struct buf *line, bool oversize)
{
	size_t len = oversize ? 0 : line->len;
	struct item *it = malloc(sizeof(*it) + len + 1);

	if (!it) {
		oversize = true; /* answered as a message that could not be read */
		it = malloc(sizeof(*it) + 1);
		if (!it)
			return;
		len = 0;
	}
	it->next = NULL;
	it->oversize = oversize;
	it->len = len;
	memcpy(it->data, line->data ? line->data : "", len);
	it->data[len] = '\0';
	pthread_mutex_lock(&in->lock);
	while (in->bytes > INBOX_MAX)
		pthread_cond_wait(&in->room, &in->lock);
	if (!oversize)
		check_cancel(in, line);
	if (in->tail)
		in->tail->next = it;
	else
		in->head = it;
	in->tail = it;
	in->bytes += len;
	pthread_mutex_unlock(&in->lock);
	(void)eventfd_write(in->ready_fd, 1);
}

static void *reader_main(void *arg)
{
	struct inbox *in = arg;
	struct buf line;
	int r;

	buf_init(&line, MCP_MESSAGE_MAX);
	while ((r = read_line(in, &line)) != 0) {
		if (r == 1 || r == -E2BIG)
			push(in, &line, r == -E2BIG);
		else
			break;
	}
	pthread_mutex_lock(&in->lock);
	in->eof = true;
	in->err = r < 0 ? r : 0;
	pthread_mutex_unlock(&in->lock);
	(void)eventfd_write(in->ready_fd, 1);
	buf_release(&line);
	return NULL;
}

/* The next item (free()), or NULL: *ret_r 0 at the end of input, -EINTR
 * on a signal, -errno. */
static struct item *next_item(struct inbox *in, struct cli_stopper *st, int *ret_r)
{
	for (;;) {
		struct pollfd pf[2] = { { in->ready_fd, POLLIN, 0 }, { st->pipe[0], POLLIN, 0 } };
		struct item *it;
		eventfd_t n;

		if (__atomic_load_n(&st->signal, __ATOMIC_SEQ_CST))
			return *ret_r = -EINTR, NULL;
		pthread_mutex_lock(&in->lock);
		it = in->head;
		if (it) {
			in->head = it->next;
			if (!in->head)
				in->tail = NULL;
			in->bytes -= it->len;
			pthread_cond_signal(&in->room);
		}
		*ret_r = in->err;
		if (!it && in->eof) {
			pthread_mutex_unlock(&in->lock);
			return NULL;
		}
		pthread_mutex_unlock(&in->lock);
		if (it)
			return it;
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return *ret_r = -errno, NULL;
		if (pf[0].revents & POLLIN)
			(void)eventfd_read(in->ready_fd, &n);
		if ((pf[1].revents & POLLIN) && !__atomic_load_n(&st->signal, __ATOMIC_SEQ_CST))
			drain(st->pipe[0]); /* a cancel that came after its call ended */
	}
}

static int send_line(char *text, size_t len)
{
	int r;

	if (!text)
		return 0;
	r = write_all(STDOUT_FILENO, text, len);
	if (r == 0)
		r = write_all(STDOUT_FILENO, "\n", 1);
	free(text);
	return r;
}

static bool blank(const struct item *it)
{
	for (size_t i = 0; i < it->len; i++)
		if (!strchr(" \t\r", it->data[i]))
			return false;
	return true;
}

/* The id a request asks to be answered with (a batch: none). */
static json_t *request_id(const struct item *it)
{
	json_t *m = NULL, *id;

	/* refused as the core refuses it: no id to answer with */
	(void)json_body_read(it->data, it->len, MCP_JSON_FLAGS, &m, NULL);
	id = json_is_object(m) ? json_incref(json_object_get(m, "id")) : NULL;

	json_decref(m);
	return id;
}

/* Handle one line with its id marked in flight, so the reader can cancel
 * it.  The reply, or NULL (none due, or cancelled). */
static char *handle(struct mcp_conn *conn, struct inbox *in, struct cli_stopper *st,
		    const struct item *it, size_t *ret_len)
{
	json_t *id = request_id(it);
	bool cancelled;
	char *reply;

	pthread_mutex_lock(&in->lock);
	/* records for an earlier call go; a signal's comes back (the flag is
	 * set before its record is written, so none is lost) */
	drain(st->pipe[0]);
	if (__atomic_load_n(&st->signal, __ATOMIC_SEQ_CST)) {
		struct signalfd_siginfo si = { .ssi_signo = SIGTERM };

		if (write(st->pipe[1], &si, sizeof(si)) < 0) {
			/* full: readable all the same */
		}
	}
	in->inflight = id;
	in->cancelled = false;
	pthread_mutex_unlock(&in->lock);
	reply = mcp_conn_handle(conn, it->data, it->len, ret_len);
	pthread_mutex_lock(&in->lock);
	cancelled = in->cancelled;
	in->inflight = NULL;
	pthread_mutex_unlock(&in->lock);
	json_decref(id);
	if (cancelled && reply) {
		fprintf(stderr,
			"codecell mcp: a request was cancelled by the client; no reply sent\n");
		free(reply);
		reply = NULL;
		errno = 0;
	}
	return reply;
}

/* At the end of input the reader has ended: join it and free what it
 * left.  Otherwise (a signal, stdout gone) it may be blocked in read():
 * it goes with the process, and so does the inbox it holds. */
static void inbox_end(struct inbox *in, pthread_t reader)
{
	bool eof;

	pthread_mutex_lock(&in->lock);
	eof = in->eof;
	pthread_mutex_unlock(&in->lock);
	if (!eof) {
		pthread_detach(reader);
		return;
	}
	pthread_join(reader, NULL);
	while (in->head) {
		struct item *it = in->head;

		in->head = it->next;
		free(it);
	}
	close(in->ready_fd);
	pthread_mutex_destroy(&in->lock);
	pthread_cond_destroy(&in->room);
	free(in);
}

static int serve(struct mcp_conn *conn, struct cli_stopper *st)
{
	struct inbox *in = calloc(1, sizeof(*in));
	pthread_t reader;
	int r = 0;

	if (!in)
		return -ENOMEM;
	pthread_mutex_init(&in->lock, NULL);
	pthread_cond_init(&in->room, NULL);
	in->stop_w = st->pipe[1];
	in->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (in->ready_fd < 0 || (errno = pthread_create(&reader, NULL, reader_main, in)) != 0) {
		r = -errno;
		free(in);
		return r;
	}
	for (;;) {
		struct item *it = next_item(in, st, &r);
		size_t len = 0;
		char *reply;

		if (!it)
			break;
		if (it->oversize) {
			char why[128];

			snprintf(why, sizeof(why),
				 "parse error: a message over %u bytes (the limit) was dropped",
				 MCP_MESSAGE_MAX);
			reply = mcp_parse_error_reply(why, &len);
		} else if (blank(it)) {
			reply = NULL;
			errno = 0;
		} else {
			reply = handle(conn, in, st, it, &len);
		}
		free(it);
		if (!reply && errno == ENOMEM)
			log_error("out of memory answering a message");
		r = send_line(reply, len);
		if (r < 0) {
			log_error("cannot write to stdout: %s", strerror(-r));
			break;
		}
	}
	inbox_end(in, reader);
	return r;
}

static void log_cb(void *cls, const char *level, const char *msg)
{
	(void)cls;
	if (!strcmp(level, "error"))
		log_error("%s", msg);
	else if (!strcmp(level, "warning"))
		log_warn("%s", msg);
	else
		fprintf(stderr, "codecell: %s\n", msg);
}

int cli_mcp(int argc, char **argv)
{
	struct mcp_opts o;
	struct mcp_config cfg = { 0 };
	struct cli_stopper st = { .sfd = -1, .pipe = { -1, -1 } };
	struct mcp_server *srv = NULL;
	struct mcp_conn *conn;
	char **shared = calloc((size_t)argc + 1, sizeof(*shared)), *msg = NULL;
	pthread_t thread;
	struct engine_policies *policies = NULL;
	struct engine_audit *audit = NULL;
	struct buf err;
	int r, sig;

	buf_init(&err, 4096);
	if (!shared || mcp_opts_parse(argc, argv, &o, shared, &err) < 0) {
		log_error("%s", shared ? buf_str(&err) : "out of memory");
		buf_release(&err);
		free(shared);
		return EXIT_CODECELL_ERROR;
	}
	buf_release(&err);
	if (o.help) {
		fputs(mcp_usage, stdout);
		free(shared);
		return 0;
	}
	r = cli_stopper_start(&st, SIGTERM, &thread);
	if (r < 0) {
		log_error("cannot set up signals: %s", strerror(-r));
		free(shared);
		return EXIT_CODECELL_ERROR;
	}
	if (cli_policy_open(&o.run, true, &policies, &audit) < 0) {
		free(shared);
		return EXIT_CODECELL_ERROR;
	}
	cfg.client = &policies->clients[0];
	cfg.policies = policies;
	cfg.audit = audit;
	cfg.limits_asked = o.run.limits_set;
	cfg.net_asked = o.run.net_set;
	cfg.limits = o.run.req.limits;
	cfg.output_limit = o.run.req.output_limit;
	cfg.net = o.run.req.net;
	cfg.strict = o.run.req.strict;
	cfg.env = o.run.req.env;
	cfg.max_sessions = o.max_sessions;
	cfg.idle_timeout_s = o.run.idle_timeout_s;
	cfg.pool_size = o.pool;
	cfg.preload = o.run.preload;
	cfg.stop_fd = st.pipe[0];
	cfg.server_version = CODECELL_VERSION;
	cfg.log = log_cb;
	r = mcp_server_new(&cfg, &srv, &msg);
	if (r < 0) {
		log_error("cannot start the MCP server: %s", msg ? msg : strerror(-r));
		free(msg);
		engine_audit_close(audit);
		engine_policies_free(policies);
		free(shared);
		return EXIT_CODECELL_ERROR;
	}
	conn = mcp_conn_new(srv);
	r = conn ? serve(conn, &st) : -ENOMEM;
	sig = __atomic_load_n(&st.signal, __ATOMIC_SEQ_CST);
	if (sig)
		fprintf(stderr, "codecell mcp: %s: closing %u session%s\n", strsignal(sig),
			mcp_server_sessions(srv), mcp_server_sessions(srv) == 1 ? "" : "s");
	mcp_conn_free(conn);
	mcp_server_free(srv);
	engine_audit_close(audit);
	engine_policies_free(policies);
	free(shared);
	/* the signal thread still waits: leave it to the exit */
	if (sig)
		return 128 + sig;
	return r < 0 ? EXIT_CODECELL_ERROR : 0;
}
