/* agent: the generate -> execute -> fix loop (`codecell agent`,
 * `POST /v1/agent`).  A model behind an OpenAI-compatible
 * chat-completions endpoint writes code; one session runs every step, so
 * state persists; each result goes back as a normalized observation; on
 * an error the next turn asks the model to fix the code.  The loop ends
 * at a reply without code (the answer) or at the step budget.
 *
 * Every byte from the model endpoint is untrusted: replies are capped
 * (AGENT_REPLY_MAX), parsed with jansson, and code from them runs only in
 * the sandbox.  The library never prints and never exits: what happens
 * is reported through the event callback and the transcript. */
#ifndef CODECELL_AGENT_AGENT_H
#define CODECELL_AGENT_AGENT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/sessions.h"
#include "util/buf.h"

/* Named limits. */
#define AGENT_REPLY_MAX (4u << 20)    /* bytes of one HTTP reply body */
#define AGENT_ERROR_QUOTE_MAX 300     /* bytes of an endpoint's error text quoted */
#define AGENT_SECTION_MAX 4000	      /* bytes per observation section (head + tail) */
#define AGENT_QUESTION_MAX (1u << 20) /* bytes of the question */
#define AGENT_DEFAULT_MAX_STEPS 10
#define AGENT_MAX_STEPS_MAX 100
#define AGENT_DEFAULT_LLM_TIMEOUT_S 120.0 /* one chat-completions request */
#define AGENT_DEFAULT_RETRIES 3		  /* more attempts after a 429 or 5xx */
#define AGENT_RETRY_DELAY_S 1.0		  /* first backoff; doubled each time */
#define AGENT_RETRY_DELAY_MAX_S 30.0	  /* a Retry-After is honoured up to this */

/* How the loop ended: also the CLI's exit status for each (README). */
enum agent_outcome {
	AGENT_ANSWERED = 0,	    /* a reply without code: the answer */
	AGENT_BUDGET_EXHAUSTED = 2, /* --max-steps executions, and still code */
	AGENT_LLM_ERROR = 3,	    /* the endpoint failed (after retries) */
	AGENT_STOPPED = 130,	    /* the stop flag was raised (Ctrl-C) */
	AGENT_SETUP_ERROR = 125,    /* the session or the HTTP client could not start */
};
const char *agent_outcome_name(enum agent_outcome o);

enum agent_tools { AGENT_TOOLS_AUTO, AGENT_TOOLS_ON, AGENT_TOOLS_OFF };

struct engine_client;
struct engine_policies;
struct engine_audit;

struct agent_config {
	const char *base_url; /* ".../v1"; "/chat/completions" is appended */
	const char *api_key;  /* NULL or "": no Authorization header */
	const char *model;
	unsigned max_steps;   /* code executions at most */
	double llm_timeout_s; /* per request */
	unsigned retries;
	double retry_delay_s;
	/* AUTO: offer the execute_<lang> tool; an endpoint that answers 400
	 * to a request with tools is asked again without, and no more. */
	enum agent_tools tools;
	/* The session every step runs in (language, limits, preload, files
	 * copied into the workspace). */
	struct session_opts session;
	double exec_timeout_s; /* per step; 0: the session's default */
	/* Raised (non-zero, read atomically) by another thread: stop the
	 * request or the execution in progress and end with AGENT_STOPPED.
	 * stop_fd delivers struct signalfd_siginfo records to the running
	 * execution (a SIGINT record interrupts the cell); -1 for none. */
	const int *stop_flag;
	int stop_fd;
	/* A policy (codecell agent --policy; borrowed): each step passes
	 * engine_check_exec for client, and the tools besides code its
	 * policy enables (engine/tool.h: sql, ...) are offered as function
	 * tools beside execute_<lang>, their calls audited to audit (NULL:
	 * none).  client NULL: no policy, no such tools. */
	struct engine_client *client;
	const struct engine_policies *policies;
	struct engine_audit *audit;
	/* the door the calls are checked and audited as (DOOR_CLI by
	 * default; POST /v1/agent: DOOR_API), and the request id its audit
	 * records carry (NULL: one each) */
	int door; /* enum engine_door */
	const char *request_id;
	/* the door checked the session already (POST /v1/agent, which
	 * answers a refusal or a held call before its stream starts, and
	 * records it; codecell agent --policy, before the model is asked):
	 * the loop makes it without a second check; its steps are checked */
	bool session_checked;
	/* The server's table of sessions (POST /v1/agent; borrowed), or
	 * NULL: one of the run's own (codecell agent).  In the server's, the
	 * run's session is one of every door's (door "agent"): listed,
	 * counted against its cap, and open to another door of the same
	 * client, whose cells wait for the session's lock as any two
	 * clients' do; a delete ends the run (AGENT_STOPPED).  The caller
	 * has reserved a place in it and, with session_checked, holds
	 * client's session slot: the run takes both over (the session's, or
	 * given back when it makes none).  stop_w, the write end of
	 * stop_fd's pipe, becomes the session's stop pipe with it, so that
	 * another door's interrupt or delete reaches the running cell. */
	struct engine_sessions *sessions;
	int stop_w;
	/* Each event as it happens (see agent_run); borrowed.  NULL: none. */
	void (*on_event)(void *userdata, json_t *event);
	void *userdata;
};

void agent_config_init(struct agent_config *c);

/* Run the loop for question.  Events, in order:
 *   {"type":"start", "model", "language", "max_steps"}
 *   {"type":"code", "step", "language", "source": "tag"|"fence"|"tool", "code"}
 *   {"type":"observation", "step", "status", "observation", "result",
 *    "timing": {"llm_ms", "codecell_ms", "exec_ms"}}
 *   {"type":"retry", "attempt", "http_status", "delay_s", "why"}
 *   {"type":"done", "outcome", "answer" | "error", "steps"}
 * *ret_transcript (new reference) gets {"question", "model", "outcome",
 * "answer", "error", "steps": [...], "messages": [...]} whatever the
 * outcome.  Returns the outcome. */
enum agent_outcome agent_run(const struct agent_config *cfg, const char *question,
			     json_t **ret_transcript);

/* ---- the parts, for tests and the benchmark ---- */

/* Code found in a model's reply. */
struct agent_code {
	char *code;	    /* owned; NULL when the reply holds no code */
	const char *source; /* "tag", "fence" (static) */
	bool cut;	    /* an opening tag without its closing one */
};
/* Find the code for language lang ("python", ...) in a reply's text:
 * every <execute_LANG>...</execute_LANG>, else every ```LANG fenced
 * block, joined by blank lines.  0, -E2BIG (more than the engine's
 * 8 MiB of code), or -ENOMEM. */
int agent_extract(const char *text, size_t len, const char *lang, struct agent_code *ret);
void agent_code_release(struct agent_code *c);

/* The observation the model is shown for a result object: sections cut
 * head and tail, figures described.  Appends to b. */
int agent_observation(json_t *result, struct buf *b);

#endif
