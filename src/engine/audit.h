/* engine/audit: one JSON line per call, allowed or not (README "Audit
 * log").  A line is written with one write(2) to a file opened O_APPEND,
 * so lines from threads and processes never interleave and a killed
 * writer leaves whole lines only (a regular file's append is not split
 * by a signal).  The file rotates by size: FILE.1 ... FILE.N. */
#ifndef CODECELL_ENGINE_AUDIT_H
#define CODECELL_ENGINE_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/policy.h"
#include "session/result.h"

/* A longer record keeps the head of its arguments' JSON text:
 * {"truncated": true, "length": N, "head": "..."} */
#define AUDIT_LINE_MAX (64u << 10)
#define AUDIT_ROTATE_DEFAULT (64ull << 20) /* bytes before FILE becomes FILE.1 */
#define AUDIT_KEEP 5			   /* FILE.1 to FILE.5 */
#define AUDIT_ID_LEN 16			   /* hex digits of a request id */

struct engine_audit;

/* Open (create, mode 0600) FILE for appending.  rotate_bytes 0: the
 * default.  0, or -errno with a message. */
int engine_audit_open(const char *path, uint64_t rotate_bytes, struct engine_audit **ret, char *err,
		      size_t n);
void engine_audit_close(struct engine_audit *a);

struct engine_audit_record {
	const char *request_id; /* NULL: one is made */
	const char *client;
	const char *session; /* NULL: none */
	enum engine_door door;
	enum engine_action action;
	bool has_lang;
	enum engine_lang lang;
	const char *code; /* hashed, never written; NULL: none */
	size_t code_len;
	json_t *args; /* the call's arguments, borrowed; values of secret keys
		       * (env, key, token, password, authorization) are redacted */
	const struct engine_verdict *verdict; /* NULL: allowed */
	double duration_ms;
	const struct run_result *res; /* NULL: the call ran no code */
	const char *status;	      /* without res: "ok", "error", ... */
	const char *approval_id;      /* the call was held for approval: its id */
	const char *approval_state;   /* "pending", "approved", "denied", ... */
	uint64_t bytes;		      /* without res: bytes written or read */
};

/* The arguments of a one-shot run for a record: the limits asked for
 * (bits of enum engine_limit_id), the network, the env (values redacted
 * when written), the file name.  New reference. */
json_t *engine_audit_run_args(const struct run_request *req, unsigned asked);
/* A fresh request id: AUDIT_ID_LEN hex digits. */
void engine_audit_id(char out[AUDIT_ID_LEN + 1]);
/* The line for r, without its newline (pure, for tests and the bench).
 * New reference, or NULL on ENOMEM. */
json_t *engine_audit_json(const struct engine_audit_record *r);
/* Append r.  0 or -errno.  a NULL: nothing (the log is off). */
int engine_audit_write(struct engine_audit *a, const struct engine_audit_record *r);

/* One record per connection the egress proxy decided (tool "egress";
 * decision "allowed", or "rejected" with rule "egress"; arguments: method,
 * host, port, address, proxy_status, why, at), and one more (status
 * "dropped", arguments.count) for those it did not keep.  base gives the
 * request id, client, session and door.  0 or the last -errno. */
struct egress_event;
int engine_audit_egress(struct engine_audit *a, const struct engine_audit_record *base,
			const struct egress_event *ev, size_t n, uint64_t dropped);

#endif
