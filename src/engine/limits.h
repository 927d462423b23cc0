/* engine/limits: the one table of limits every door reads (CLI flags, the
 * API's "limits" object, MCP's options, --help, the policy file).  Each
 * has a floor (below it the sandbox cannot start), a default, a ceiling
 * (the most any door or policy may grant) and a unit. */
#ifndef CODECELL_ENGINE_LIMITS_H
#define CODECELL_ENGINE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sandbox/sandbox.h"
#include "util/envname.h"

/* The timeout's bounds, as constants for tables that need them (MCP's
 * argument schema); the table below holds the same. */
#define ENGINE_TIMEOUT_FLOOR_S 0.001
#define ENGINE_TIMEOUT_CEILING_S 3600.0

enum engine_limit_id {
	LIMIT_TIMEOUT,
	LIMIT_MEMORY,
	LIMIT_PIDS,
	LIMIT_CPUS,
	LIMIT_CPU_TIME,
	LIMIT_FILE_SIZE,
	LIMIT_OPEN_FILES,
	LIMIT_TMP_SIZE,
	LIMIT_WORKSPACE_SIZE,
	LIMIT_OUTPUT,
	LIMIT_RESULT,
	LIMIT_IDLE_TIMEOUT,
	_LIMIT_MAX
};

enum engine_unit { UNIT_SECONDS, UNIT_BYTES, UNIT_COUNT, UNIT_CORES };

struct engine_limit {
	const char *name; /* the API's and the policy's key: "memory" */
	const char *flag; /* the CLI's option: "--memory"; NULL: API only */
	enum engine_unit unit;
	double floor, def, ceiling;
	const char *metavar, *help; /* for --help: "SIZE", "memory limit, swap 0" */
};

extern const struct engine_limit engine_limits[_LIMIT_MAX];

/* By API name ("memory") or CLI flag ("--memory"); NULL if unknown. */
const struct engine_limit *engine_limit_find(const char *name);
/* "memory, pids, ..." for messages. */
const char *engine_limit_names(void);
/* A value as a person writes it: "16M", "1.5s", "128", "0.5". */
void engine_limit_format(enum engine_unit u, double v, char *out, size_t n);

/* --help lines for the limits whose bits are in which (1 << id): flag,
 * what it is, default, floor and ceiling, from the table.  Appended to
 * out; 0 or -E2BIG. */
struct buf;
int engine_limits_usage(unsigned which, struct buf *out);

/* Parse text the way every door does ("256M", "1500ms", "64", "0.5") and
 * check it against the floor and ceiling.  what names the value in
 * messages ("--memory", "limits.memory").  0, or -EINVAL with a message
 * in err (n bytes) that names the floor or ceiling. */
int engine_limit_parse(enum engine_limit_id id, const char *what, const char *text, double *ret,
		       char *err, size_t n);
/* The same for a JSON value: a number (bytes, seconds, a count, cores)
 * or a string as above. */
int engine_limit_parse_json(enum engine_limit_id id, const char *what, const json_t *v, double *ret,
			    char *err, size_t n);
/* Floor and ceiling only. */
int engine_limit_check(enum engine_limit_id id, const char *what, double v, char *err, size_t n);

/* The request's limits as one array, indexed by enum engine_limit_id. */
struct engine_limit_values {
	double v[_LIMIT_MAX];
};
/* Every value its table default. */
void engine_limit_defaults(struct engine_limit_values *lv);
/* Into the structs the sandbox and sessions take. */
void engine_limit_to_sandbox(const struct engine_limit_values *lv, struct sandbox_limits *l);
void engine_limit_from_sandbox(const struct sandbox_limits *l, struct engine_limit_values *lv);

/* An environment variable for the sandbox, "KEY=VALUE" or just the KEY
 * (key_len: the key's length): util/envname.h's ENV_NAME_IDENTIFIER (a
 * letter or _, then letters, digits, _, at most 128 bytes).  0 or -EINVAL
 * with a message. */
#define ENGINE_ENV_KEY_MAX ENV_NAME_MAX
int engine_env_key_check(const char *key, size_t key_len, char *err, size_t n);

#endif
