/* The result of running code, one shape for one-shot runs and session
 * executions (DESIGN.md "The result"), and its JSON form. */
#ifndef CODECELL_SESSION_RESULT_H
#define CODECELL_SESSION_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/outorder.h"

enum result_status {
	RESULT_OK,
	RESULT_ERROR,
	RESULT_TIMEOUT,
	RESULT_MEMORY_LIMIT,
	RESULT_OUTPUT_LIMIT,
	RESULT_KILLED,
	RESULT_REJECTED,
};
const char *result_status_name(enum result_status s);

struct run_result {
	enum result_status status;
	char *out; /* stdout as kept (head, marker, tail); owned */
	size_t out_len;
	bool out_truncated;
	char *err; /* stderr, same */
	size_t err_len;
	bool err_truncated;
	/* stdout and stderr in the order they came: ranges of out and err
	 * (outorder_chunk.stream 0: out, 1: err); owned */
	struct outorder_chunk *outputs;
	size_t n_outputs;
	bool results_truncated; /* results[] ends with a marker bundle */
	bool has_error;		/* the error object */
	char *error_name, *error_value, *error_traceback;
	bool has_exit_code;
	int exit_code;
	int signal; /* 0: none */
	double duration_ms;
	double cpu_ms;
	uint64_t max_rss_kb;
	unsigned limits_unenforced; /* enum sandbox_limit bits */
	unsigned limits_hit;
	bool setup_failed; /* the sandbox could not be built */
	char *message;	   /* REJECTED / setup failure: for the user */
	const char *rule;  /* REJECTED by a policy: the rule ("limits.memory"); static */
	char *warning;	   /* something the user should know (copy-out) */
	bool stopped;	   /* ended by stop_fd (SIGTERM/SIGHUP to a shell, say) */
	/* sessions */
	json_t *results;     /* array of MIME bundles, owned; NULL: [] */
	bool from_session;   /* a session execution (adds "restarted") */
	int execution_count; /* 0: unknown (the kernel died), or not a session */
	bool restarted;	     /* the kernel had to be restarted */
};

void run_result_release(struct run_result *r);
/* Set out, err and outputs from the two streams' captures and the order
 * their bytes came in.  Returns 0 or -ENOMEM (then nothing is set). */
int run_result_set_logs(struct run_result *r, const struct capture *out, const struct capture *err,
			const struct outorder *order);
struct sandbox_exit;
/* Status, signal, exit code, limits hit and usage from how the sandbox
 * ended (one-shot runs and sessions alike).  A setup failure or a
 * still-running sandbox leaves the status to the caller. */
void run_result_set_exit(struct run_result *r, const struct sandbox_exit *x);
/* ["memory", "pids"] for enum sandbox_limit bits.  New reference. */
json_t *run_result_limits_json(unsigned bits);
/* The result object of DESIGN.md.  New reference. */
json_t *run_result_to_json(const struct run_result *r);

#endif
