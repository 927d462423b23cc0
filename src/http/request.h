/* http/request: the JSON bodies of `codecell serve`, parsed into plain
 * structs.  Pure functions (no I/O, no global state) so they can be unit
 * tested and fuzzed (tests/fuzz/fuzz-api-*.c).
 *
 * Every field of every body is in one table (request.c) that says which
 * bodies accept it; anything else is an unknown field.  Errors carry the
 * HTTP status and the stable code of the API's error object
 * ({"error": {"code", "message"}}, docs/API.md). */
#ifndef CODECELL_HTTP_REQUEST_H
#define CODECELL_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

/* Named limits on what a client may send. */
#define API_BODY_MAX (2 * ENGINE_CODE_MAX + (64u << 10)) /* a JSON body */
#define API_FILE_MAX (64u << 20)			 /* one uploaded file */
#define API_ENV_VALUE_MAX (32u << 10)			 /* one env value */
#define API_PRELOAD_MAX 1024				 /* "numpy,pandas,..." */
#define API_MESSAGE_MAX 512				 /* an error message */

/* The ceilings a client may ask for are the engine's limits table's
 * (engine/limits.h), lowered by the client's policy. */

/* An error for the client.  code is a static string. */
struct api_error {
	int http;
	const char *code;
	char message[API_MESSAGE_MAX];
};

/* Fill e; returns -EINVAL for convenience. */
int api_error_set(struct api_error *e, int http, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

struct json_body_error;
/* A body util/json.h refused, as e with its message: 400 invalid_utf8,
 * invalid_value (a NUL) or bad_json (malformed, a duplicate key, empty,
 * not an object), 500 internal for ENOMEM.  Returns -EINVAL. */
int api_error_json(struct api_error *e, const struct json_body_error *je);

/* Which body is being parsed; a field lists the bodies it belongs to. */
enum api_body {
	API_BODY_EXECUTE = 1 << 0,	   /* POST /v1/execute (one-shot) */
	API_BODY_SESSION_CREATE = 1 << 1,  /* POST /v1/sessions */
	API_BODY_SESSION_EXECUTE = 1 << 2, /* POST /v1/sessions/{id}/execute */
};

/* Which optional fields were given (bits). */
enum api_set {
	API_SET_LANG = 1 << 0,
	API_SET_TIMEOUT = 1 << 1,
	API_SET_NET = 1 << 2,
	API_SET_IDLE = 1 << 4,
	API_SET_PRELOAD = 1 << 5,
};

/* A parsed body: the union of what the three bodies can hold.  Limits
 * that were not given are 0 (the caller's defaults apply).  Strings are
 * owned; release with api_request_release(). */
struct api_request {
	unsigned set; /* enum api_set bits */
	char *code;   /* NUL-terminated; code_len excludes the NUL */
	size_t code_len;
	enum engine_lang lang;
	double timeout_s;
	/* every limit given, the timeouts too: a bit of limits_set each
	 * (enum engine_limit_id); result_limit is for sessions */
	struct engine_limit_values lv;
	unsigned limits_set;
	enum sandbox_net net;
	const char *egress;		/* the policy's, for SANDBOX_NET_ALLOWLIST (borrowed) */
	char *env[SESSION_MAX_ENV + 1]; /* "KEY=VALUE", NULL-terminated */
	size_t n_env;
	char *preload; /* "numpy,pandas" (validated module names) */
	bool has_seed; /* "seed": engine_seed_env */
	uint64_t seed;
	double idle_timeout_s;
	char *project; /* a host directory (absolute), checked by the policy */
};

/* Parse body[0..len) as the given kind.  0, or -EINVAL with e filled
 * (400 bad_json, invalid_utf8, unknown_field, invalid_type, missing_field,
 * invalid_value; 413 body_too_large).  On failure *ret holds nothing. */
int api_request_parse(enum api_body kind, const char *body, size_t len, struct api_request *ret,
		      struct api_error *e);
void api_request_release(struct api_request *r);
/* Override *limits, *output_limit and *net with what r gives (limits not
 * given keep the defaults already there). */
void api_request_apply(const struct api_request *r, struct sandbox_limits *limits,
		       uint64_t *output_limit, enum sandbox_net *net);

#endif
