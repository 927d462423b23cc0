/* codecell agent: ask a model behind an OpenAI-compatible endpoint a
 * question; the code it writes runs in one sandboxed session, step after
 * step, until it answers (agent/loop.c).  Prints the answer, or with
 * --json the whole transcript.  SIGINT, SIGTERM and SIGHUP stop the
 * request or the cell in progress, close the session and exit 128+N. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "engine/audit.h"
#include "engine/policy.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/banned.h"

const char agent_usage[] =
	"usage: codecell agent [OPTIONS] QUESTION...\n"
	"\n"
	"Ask a model a question; the code it writes runs in a sandboxed session, and\n"
	"what the code printed (or its error) goes back to the model, step after step,\n"
	"until it answers without code or the step budget is spent.  Every step runs\n"
	"in the same session: variables, imports and files persist.  QUESTION may be\n"
	"several words, or - to read it from standard input.\n"
	"\n"
	"The model: any OpenAI-compatible chat-completions endpoint.\n"
	"  OPENAI_BASE_URL      the API's base URL, such as http://127.0.0.1:8080/v1\n"
	"                       (llama.cpp's server) or http://127.0.0.1:11434/v1\n"
	"                       (Ollama); default https://api.openai.com/v1 when\n"
	"                       OPENAI_API_KEY is set\n"
	"  OPENAI_API_KEY       sent as a bearer token (none when unset)\n"
	"  CODECELL_MODEL       the model, when --model is not given\n"
	"\n"
	"options:\n"
	"  --model M            the model to ask (default $CODECELL_MODEL)\n"
	"  --max-steps N        run code at most N times (default 10, at most 100); a\n"
	"                       reply with code after that ends with status 2\n"
	"  --lang L             python (default), javascript or bash\n"
	"  --preload LIST       Python modules the session imports first, such as\n"
	"                       pandas,numpy\n"
	"  --file PATH          copy a host file into the session's working directory\n"
	"                       (repeatable); the model is told its name\n"
	"  --timeout DUR        limit per step (default 30s)\n"
	"  --llm-timeout DUR    limit per request to the model (default 120s)\n"
	"  --retries N          attempts after a 429 or 5xx reply (default 3; backoff\n"
	"                       1 s, doubled, or the server's Retry-After up to 30 s)\n"
	"  --tools MODE         auto (default): offer the model an execute_python tool,\n"
	"                       and drop it if the endpoint refuses it (HTTP 400); on;\n"
	"                       off: code only in tags or fences\n"
	"  --policy FILE        the rules every step must pass (docs/policy.md), and the\n"
	"                       tools besides code its [default] policy enables (tools =\n"
	"                       sql, http): offered to the model as function tools beside\n"
	"                       execute_python (needs --tools auto or on)\n"
	"  --audit FILE         append one JSON line per step and tool call to FILE\n"
	"  -v, --verbose        show each step (code, observation) on stderr\n"
	"  --json               print the whole transcript and the answer as JSON\n"
	"  --memory SIZE, --pids N, --cpu-time SECONDS, --file-size SIZE,\n"
	"  --open-files N, --tmp-size SIZE, --workspace-size SIZE,\n"
	"  --output-limit SIZE, --net MODE, --env KEY=VALUE, --strict\n"
	"                       limits of the session, as for 'codecell shell'\n"
	"  -h, --help           show this help\n"
	"\n"
	"exit status: 0 answered, 2 step budget spent without an answer, 3 the model\n"
	"endpoint failed (unreachable, bad key, unknown model, timeout, malformed\n"
	"reply; 429 and 5xx after the retries), 125 usage or sandbox error, 128+N\n"
	"stopped by signal N (130 for Ctrl-C).\n";

struct agent_opts {
	struct run_opts run; /* the session's options, parsed by run_opts.c */
	struct agent_config cfg;
	bool verbose, json, help;
	const char *question; /* "-" for stdin */
	char *joined;	      /* the words joined, owned */
};

static const struct cli_option known[] = {
	{ "--model", true, true },
	{ "--max-steps", true, true },
	{ "--llm-timeout", true, true },
	{ "--retries", true, true },
	{ "--tools", true, true },
	{ "--verbose", false, true },
	{ "-v", false, true },
	{ "--json", false, true },
	{ "--help", false, true },
	{ "-h", false, true },
	{ "--lang", true, false },
	{ "--preload", true, false },
	{ "--file", true, false },
	{ "--timeout", true, false },
	{ "--memory", true, false },
	{ "--pids", true, false },
	{ "--cpu-time", true, false },
	{ "--file-size", true, false },
	{ "--open-files", true, false },
	{ "--tmp-size", true, false },
	{ "--workspace-size", true, false },
	{ "--output-limit", true, false },
	{ "--net", true, false },
	{ "--env", true, false },
	{ "--strict", false, false },
	{ "--policy", true, false },
	{ "--audit", true, false },
};

static int own_option(void *ud, const char *name, const char *val, struct buf *err)
{
	struct agent_opts *o = ud;
	uint64_t n;
	double d;

	if (!strcmp(name, "--help") || !strcmp(name, "-h"))
		return o->help = true, 0;
	if (!strcmp(name, "--verbose") || !strcmp(name, "-v"))
		return o->verbose = true, 0;
	if (!strcmp(name, "--json"))
		return o->json = true, 0;
	if (!strcmp(name, "--model"))
		return o->cfg.model = val, 0;
	if (!strcmp(name, "--tools")) {
		if (!strcmp(val, "auto") || !strcmp(val, "on") || !strcmp(val, "off"))
			return o->cfg.tools = !strcmp(val, "on")    ? AGENT_TOOLS_ON
					      : !strcmp(val, "off") ? AGENT_TOOLS_OFF
								    : AGENT_TOOLS_AUTO,
			       0;
		return buf_printf(err, "invalid --tools '%s': expected auto, on or off", val),
		       -EINVAL;
	}
	if (!strcmp(name, "--llm-timeout")) {
		if (parse_duration(val, &d) < 0 || d <= 0 || d > 86400)
			return buf_printf(err,
					  "invalid --llm-timeout '%s': expected a duration such as "
					  "90s or 5m, up to 24h",
					  val),
			       -EINVAL;
		return o->cfg.llm_timeout_s = d, 0;
	}
	if (parse_u64(val, &n) < 0 || n > (!strcmp(name, "--retries") ? 10 : AGENT_MAX_STEPS_MAX) ||
	    (n == 0 && strcmp(name, "--retries")))
		return buf_printf(err, "invalid %s '%s': expected a whole number from %d to %d",
				  name, val, strcmp(name, "--retries") ? 1 : 0,
				  strcmp(name, "--retries") ? AGENT_MAX_STEPS_MAX : 10),
		       -EINVAL;
	if (!strcmp(name, "--retries"))
		o->cfg.retries = (unsigned)n;
	else
		o->cfg.max_steps = (unsigned)n;
	return 0;
}

static int join_words(struct agent_opts *o, char **words, int n, struct buf *err)
{
	struct buf q;

	if (n == 1 && !strcmp(words[0], "-"))
		return o->question = "-", 0;
	buf_init(&q, AGENT_QUESTION_MAX);
	for (int i = 0; i < n; i++)
		if ((i && buf_puts(&q, " ") < 0) || buf_puts(&q, words[i]) < 0) {
			buf_release(&q);
			return buf_printf(err, "the question is longer than %u KiB",
					  AGENT_QUESTION_MAX >> 10),
			       -EINVAL;
		}
	o->joined = buf_detach(&q, NULL);
	o->question = o->joined;
	return 0;
}

/* Pure: no I/O.  shared (argc + 1 entries) receives the options for
 * shell_opts_parse.  0, or -EINVAL with a message in err. */
static int agent_opts_parse(int argc, char **argv, struct agent_opts *o, char **shared,
			    struct buf *err)
{
	int n, i;

	if (cli_split_options(argc, argv, known, ARRAY_SIZE(known), "agent", own_option, o, shared,
			      &n, &i, err) < 0)
		return -EINVAL;
	if (shell_opts_parse(n, shared, &o->run, err) < 0)
		return -EINVAL;
	if (o->help)
		return 0;
	if (i >= argc)
		return buf_puts(err, "no question: codecell agent [OPTIONS] \"QUESTION\" (or - to "
				     "read it from standard input)"),
		       -EINVAL;
	return join_words(o, argv + i, argc - i, err);
}

/* The endpoint and the model, from the environment where the options
 * do not say. */
static int from_env(struct agent_opts *o, struct buf *err)
{
	const char *key = getenv("OPENAI_API_KEY");

	o->cfg.api_key = key;
	o->cfg.base_url = getenv("OPENAI_BASE_URL");
	if ((!o->cfg.base_url || !*o->cfg.base_url) && key && *key)
		o->cfg.base_url = "https://api.openai.com/v1";
	if (!o->cfg.base_url || !*o->cfg.base_url)
		return buf_puts(err, "no model endpoint: set OPENAI_BASE_URL, such as "
				     "http://127.0.0.1:8080/v1 (llama.cpp's server) or "
				     "http://127.0.0.1:11434/v1 (Ollama)"),
		       -EINVAL;
	if (!o->cfg.model)
		o->cfg.model = getenv("CODECELL_MODEL");
	if (!o->cfg.model || !*o->cfg.model)
		return buf_puts(err, "no model: pass --model NAME or set CODECELL_MODEL"), -EINVAL;
	return 0;
}

static int read_question(struct agent_opts *o, struct buf *err)
{
	struct buf q;
	int r;

	if (strcmp(o->question, "-"))
		return 0;
	buf_init(&q, AGENT_QUESTION_MAX);
	r = buf_read_fd(&q, STDIN_FILENO);
	if (r < 0) {
		buf_release(&q);
		return buf_printf(err, "cannot read the question from standard input: %s",
				  r == -E2BIG ? "longer than 1 MiB" : strerror(-r)),
		       -EINVAL;
	}
	o->joined = buf_detach(&q, NULL);
	o->question = o->joined;
	return 0;
}

/* ---- signals: a thread notes the signal and interrupts the cell ---- */

/* ---- output ---- */

static void show_text(const char *title, const char *text)
{
	fprintf(stderr, "--- %s ---\n%s%s", title, text ? text : "",
		text && *text && text[strlen(text) - 1] == '\n' ? "" : "\n");
}

static void on_event(void *userdata, json_t *ev)
{
	const struct agent_opts *o = userdata;
	const char *type = json_string_value(json_object_get(ev, "type"));
	char title[128];

	if (!o->verbose || !type)
		return;
	if (!strcmp(type, "code")) {
		snprintf(title, sizeof(title), "step %lld: %s code (from %s)",
			 (long long)json_integer_value(json_object_get(ev, "step")),
			 json_string_value(json_object_get(ev, "language")),
			 json_string_value(json_object_get(ev, "source")));
		show_text(title, json_string_value(json_object_get(ev, "code")));
	} else if (!strcmp(type, "tool_call")) {
		char *args = json_dumps(json_object_get(ev, "arguments"), JSON_COMPACT);

		snprintf(title, sizeof(title), "step %lld: the %s tool",
			 (long long)json_integer_value(json_object_get(ev, "step")),
			 json_string_value(json_object_get(ev, "tool")));
		show_text(title, args ? args : "");
		free(args);
	} else if (!strcmp(type, "observation")) {
		snprintf(title, sizeof(title),
			 "step %lld: observation (%s, %.0f ms model, %.1f ms "
			 "codecell)",
			 (long long)json_integer_value(json_object_get(ev, "step")),
			 json_string_value(json_object_get(ev, "status")),
			 json_real_value(json_object_get(json_object_get(ev, "timing"), "llm_ms")),
			 json_real_value(
				 json_object_get(json_object_get(ev, "timing"), "codecell_ms")));
		show_text(title, json_string_value(json_object_get(ev, "observation")));
	} else if (!strcmp(type, "retry")) {
		fprintf(stderr,
			"codecell agent: HTTP %lld from the model endpoint (%s): retry %lld "
			"in %.1f s\n",
			(long long)json_integer_value(json_object_get(ev, "http_status")),
			json_string_value(json_object_get(ev, "why")),
			(long long)json_integer_value(json_object_get(ev, "attempt")),
			json_real_value(json_object_get(ev, "delay_s")));
	} else if (!strcmp(type, "notice")) {
		fprintf(stderr, "codecell agent: %s\n",
			json_string_value(json_object_get(ev, "text")));
	}
}

static int report(const struct agent_opts *o, enum agent_outcome out, json_t *tr, int sig)
{
	const char *answer = json_string_value(json_object_get(tr, "answer"));
	const char *error = json_string_value(json_object_get(tr, "error"));

	if (o->json) {
		json_dumpf(tr, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
		fputc('\n', stdout);
	} else if (answer) {
		printf("%s\n", answer);
	}
	if (sig) {
		fprintf(stderr, "codecell agent: %s: stopped; the session is closed\n",
			strsignal(sig));
		return 128 + sig;
	}
	if (out == AGENT_BUDGET_EXHAUSTED)
		fprintf(stderr,
			"codecell agent: no answer: %s; raise --max-steps, or ask a "
			"narrower question\n",
			error ? error : "budget exhausted");
	else if (out != AGENT_ANSWERED)
		log_error("%s", error ? error : agent_outcome_name(out));
	return out == AGENT_STOPPED ? 130 : (int)out;
}

static void session_from(struct agent_config *c, const struct run_opts *r)
{
	struct session_opts *so = &c->session;

	so->lang = r->req.lang == LANG_JAVASCRIPT ? SESSION_JAVASCRIPT
		   : r->req.lang == LANG_BASH	  ? SESSION_BASH
						  : SESSION_PYTHON;
	so->limits = r->req.limits;
	so->output_limit = r->req.output_limit;
	so->env = r->req.env;
	so->preload = r->preload;
	so->files = r->req.files;
	so->net = r->req.net;
	so->strict = r->req.strict;
}

/* --policy and --audit: the loop's session is made through the engine's
 * pipeline (checked and, refused, recorded) before the model is asked;
 * each step and tool call is checked later. */
static int policy_start(struct agent_opts *o, struct engine_policies **ret_p,
			struct engine_audit **ret_a)
{
	if (!o->run.policy_path && !o->run.audit_path)
		return 0;
	if (cli_policy_open(&o->run, false, ret_p, ret_a) < 0)
		return -EINVAL;
	o->cfg.client = &(*ret_p)->clients[0];
	o->cfg.policies = *ret_p;
	o->cfg.audit = *ret_a;
	return 0;
}

int cli_agent(int argc, char **argv)
{
	struct agent_opts o = { .help = false };
	struct cli_stopper st = { .sfd = -1, .pipe = { -1, -1 } };
	char **shared = calloc((size_t)argc + 1, sizeof(*shared));
	struct engine_policies *policies = NULL;
	struct engine_audit *audit = NULL;
	enum agent_outcome out;
	json_t *tr = NULL;
	struct buf err;
	int r, sig;

	agent_config_init(&o.cfg);
	buf_init(&err, 4096);
	r = shared ? agent_opts_parse(argc, argv, &o, shared, &err) : -ENOMEM;
	if (r >= 0 && !o.help)
		r = from_env(&o, &err);
	if (r >= 0 && !o.help)
		r = read_question(&o, &err);
	free(shared);
	if (r < 0 || o.help) {
		if (r < 0)
			log_error("%s", err.len ? buf_str(&err) : strerror(-r));
		else
			fputs(agent_usage, stdout);
		buf_release(&err);
		free(o.joined);
		return r < 0 ? EXIT_CODECELL_ERROR : 0;
	}
	buf_release(&err);
	session_from(&o.cfg, &o.run);
	/* SIGINT interrupts the cell and keeps the kernel: the loop sees
	 * st.signal next and closes the session itself */
	r = cli_stopper_start(&st, SIGINT, NULL);
	if (r < 0) {
		log_error("cannot set up signals: %s", strerror(-r));
		free(o.joined);
		return EXIT_CODECELL_ERROR;
	}
	o.cfg.stop_flag = &st.signal;
	o.cfg.stop_fd = st.pipe[0];
	o.cfg.on_event = on_event;
	o.cfg.userdata = &o;
	if (policy_start(&o, &policies, &audit) < 0) {
		free(o.joined);
		return EXIT_CODECELL_ERROR;
	}
	out = agent_run(&o.cfg, o.question, &tr);
	engine_audit_close(audit);
	engine_policies_free(policies);
	sig = __atomic_load_n(&st.signal, __ATOMIC_SEQ_CST);
	r = report(&o, out, tr, sig);
	json_decref(tr);
	free(o.joined);
	fflush(stdout);
	return r;
}
