/* The limits table, its parsers and its messages: one copy for every
 * door (CLI, API, MCP, policy files). */
#include "engine/limits.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session.h"
#include "util/buf.h"
#include "util/envname.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/banned.h"

#define K 1024.0
#define M (1024.0 * 1024.0)
#define G (1024.0 * 1024.0 * 1024.0)

/* Floors: below them the sandbox cannot start (the memory floor holds the
 * supervisor's handshake and an interpreter; a smaller cgroup kills the
 * child before it reports, which the API used to return as "cannot
 * synchronize with the supervisor").  Ceilings: the most any door grants;
 * a policy may only lower them. */
const struct engine_limit engine_limits[_LIMIT_MAX] = {
	[LIMIT_TIMEOUT] = { "timeout", "--timeout", UNIT_SECONDS, ENGINE_TIMEOUT_FLOOR_S,
			    CODECELL_DEFAULT_TIMEOUT_S, ENGINE_TIMEOUT_CEILING_S, "DUR",
			    "wall-clock limit, e.g. 2, 500ms, 1m" },
	[LIMIT_MEMORY] = { "memory", "--memory", UNIT_BYTES, 16 * M, CODECELL_DEFAULT_MEMORY,
			   16 * G, "SIZE", "memory limit, swap 0, e.g. 256M" },
	[LIMIT_PIDS] = { "pids", "--pids", UNIT_COUNT, 1, CODECELL_DEFAULT_PIDS, 4096, "N",
			 "processes and threads" },
	/* 0.01: the kernel's smallest quota, 1 ms of every 100 ms period */
	[LIMIT_CPUS] = { "cpus", "--cpus", UNIT_CORES, 0.01, CODECELL_DEFAULT_CPUS, 64, "N",
			 "CPU quota of the whole process tree in cores, e.g. 0.5;\n"
			 "the tree is pinned to ceil(N) of the host's CPUs\n(all of them when N is that many or more)" },
	/* default 0: no RLIMIT_CPU (the timeout and the quota bound it) */
	[LIMIT_CPU_TIME] = { "cpu_time", "--cpu-time", UNIT_COUNT, 1, 0, 86400, "SECONDS",
			     "CPU seconds per process" },
	[LIMIT_FILE_SIZE] = { "file_size", "--file-size", UNIT_BYTES, 1, CODECELL_DEFAULT_FILE_SIZE,
			      4 * G, "SIZE", "largest file the program may write" },
	/* interpreters open a dozen files before the first line runs */
	[LIMIT_OPEN_FILES] = { "open_files", "--open-files", UNIT_COUNT, 16,
			       CODECELL_DEFAULT_OPEN_FILES, 65536, "N", "open file descriptors" },
	[LIMIT_TMP_SIZE] = { "tmp_size", "--tmp-size", UNIT_BYTES, 64 * K, CODECELL_DEFAULT_TMP,
			     4 * G, "SIZE", "size of /tmp" },
	[LIMIT_WORKSPACE_SIZE] = { "workspace_size", "--workspace-size", UNIT_BYTES, 64 * K,
				   CODECELL_DEFAULT_WORKSPACE, 4 * G, "SIZE",
				   "size of the workspace" },
	[LIMIT_OUTPUT] = { "output_limit", "--output-limit", UNIT_BYTES, 64,
			   CODECELL_DEFAULT_OUTPUT_LIMIT, 64 * M, "SIZE",
			   "stdout and stderr kept, each (head and tail)" },
	[LIMIT_RESULT] = { "result_limit", NULL, UNIT_BYTES, 1 * K, CODECELL_DEFAULT_RESULT_LIMIT,
			   64 * M, "SIZE", "results (figures, the value) kept per execution" },
	[LIMIT_IDLE_TIMEOUT] = { "idle_timeout", "--idle-timeout", UNIT_SECONDS, 1,
				 CODECELL_DEFAULT_IDLE_S, 86400, "DUR",
				 "end the session after this long without input (0: never)" },
};

const struct engine_limit *engine_limit_find(const char *name)
{
	for (size_t i = 0; i < _LIMIT_MAX; i++)
		if (!strcmp(name, engine_limits[i].name) ||
		    (engine_limits[i].flag && !strcmp(name, engine_limits[i].flag)))
			return &engine_limits[i];
	return NULL;
}

const char *engine_limit_names(void)
{
	return "timeout, memory, pids, cpus, cpu_time, file_size, open_files, tmp_size, "
	       "workspace_size, output_limit, result_limit, idle_timeout";
}

void engine_limit_format(enum engine_unit u, double v, char *out, size_t n)
{
	static const struct {
		double mult;
		const char *suffix;
	} sizes[] = { { G, "G" }, { M, "M" }, { K, "K" } };

	if (u == UNIT_BYTES) {
		for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
			if (v >= sizes[i].mult && fmod(v, sizes[i].mult) == 0) {
				snprintf(out, n, "%.0f%s", v / sizes[i].mult, sizes[i].suffix);
				return;
			}
		snprintf(out, n, "%.0f byte%s", v, v == 1 ? "" : "s");
	} else if (u == UNIT_SECONDS) {
		if (v < 1)
			snprintf(out, n, "%gms", v * 1000);
		else if (fmod(v, 3600) == 0)
			snprintf(out, n, "%gh", v / 3600);
		else if (fmod(v, 60) == 0)
			snprintf(out, n, "%gm", v / 60);
		else
			snprintf(out, n, "%gs", v);
	} else {
		snprintf(out, n, "%g", v);
	}
}

static const char *expect(enum engine_unit u)
{
	switch (u) {
	case UNIT_SECONDS:
		return "a duration such as 2, 0.5, 1500ms or 1m";
	case UNIT_BYTES:
		return "a size such as 64K, 256M or 1G (a number without a suffix is bytes)";
	case UNIT_COUNT:
		return "a whole number";
	default:
		return "a number of cores, e.g. 0.5 or 2";
	}
}

static const char *kind(enum engine_unit u)
{
	static const char *const k[] = {
		[UNIT_SECONDS] = "a duration",
		[UNIT_BYTES] = "a size (a number without a suffix is bytes)",
		[UNIT_COUNT] = "a whole number",
		[UNIT_CORES] = "a number of cores",
	};

	return k[u];
}

int engine_limit_check(enum engine_limit_id id, const char *what, double v, char *err, size_t n)
{
	const struct engine_limit *l = &engine_limits[id];
	char lo[32], hi[32];
	bool low = !isfinite(v) ? v < 0 || isnan(v) : v < l->floor;

	if (!low && v <= l->ceiling)
		return 0;
	engine_limit_format(l->unit, l->floor, lo, sizeof(lo));
	engine_limit_format(l->unit, l->ceiling, hi, sizeof(hi));
	snprintf(err, n, "invalid %s: must be at %s %s (the %s of '%s'): expected %s from %s to %s",
		 what, low ? "least" : "most", low ? lo : hi, low ? "floor" : "ceiling", l->name,
		 kind(l->unit), lo, hi);
	return -EINVAL;
}

/* Digits with an optional fraction ("0.5", "2"): no sign, exponent, inf
 * or nan, which strtod alone would take. */
static int parse_decimal(const char *s, double *ret)
{
	static const char digits[] = "0123456789";
	const char *p = s + strspn(s, digits);
	char *end;

	if (p == s)
		return -EINVAL;
	if (*p == '.') {
		size_t frac = strspn(p + 1, digits);

		if (!frac)
			return -EINVAL;
		p += 1 + frac;
	}
	if (*p)
		return -EINVAL;
	*ret = strtod(s, &end);
	return *end ? -EINVAL : 0;
}

static int parse_text(enum engine_unit u, const char *text, double *ret)
{
	uint64_t x;
	int r;

	switch (u) {
	case UNIT_SECONDS:
		r = parse_duration(text, ret);
		/* past a year: report it against the ceiling, not as garbage */
		if (r == -ERANGE)
			*ret = INFINITY, r = 0;
		return r;
	case UNIT_BYTES:
		r = parse_size(text, &x);
		break;
	case UNIT_COUNT:
		r = parse_u64(text, &x);
		break;
	default:
		return parse_decimal(text, ret);
	}
	if (r == 0)
		*ret = (double)x;
	return r;
}

int engine_limit_parse(enum engine_limit_id id, const char *what, const char *text, double *ret,
		       char *err, size_t n)
{
	char w[160];
	double v;

	snprintf(w, sizeof(w), "%s '%.64s'", what, text);
	if (parse_text(engine_limits[id].unit, text, &v) < 0) {
		snprintf(err, n, "invalid %s: expected %s", w, expect(engine_limits[id].unit));
		return -EINVAL;
	}
	if (v > engine_limits[id].ceiling && isinf(v))
		v = engine_limits[id].ceiling * 2;
	if (engine_limit_check(id, w, v, err, n) < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

int engine_limit_parse_json(enum engine_limit_id id, const char *what, const json_t *v, double *ret,
			    char *err, size_t n)
{
	enum engine_unit u = engine_limits[id].unit;
	char w[160];
	double d;

	if (json_is_string(v))
		return engine_limit_parse(id, what, json_string_value(v), ret, err, n);
	if (json_is_integer(v))
		d = (double)json_integer_value(v);
	else if (json_is_real(v) && (u == UNIT_SECONDS || u == UNIT_CORES))
		d = json_real_value(v);
	else {
		snprintf(err, n, "invalid %s: expected %s", what, expect(u));
		return -EINVAL;
	}
	snprintf(w, sizeof(w), "%s %g", what, d);
	if (engine_limit_check(id, w, d, err, n) < 0)
		return -EINVAL;
	*ret = d;
	return 0;
}

void engine_limit_defaults(struct engine_limit_values *lv)
{
	for (size_t i = 0; i < _LIMIT_MAX; i++)
		lv->v[i] = engine_limits[i].def;
}

void engine_limit_to_sandbox(const struct engine_limit_values *lv, struct sandbox_limits *l)
{
	l->timeout_s = lv->v[LIMIT_TIMEOUT];
	l->memory_bytes = (uint64_t)lv->v[LIMIT_MEMORY];
	l->pids = (uint64_t)lv->v[LIMIT_PIDS];
	l->cpus = lv->v[LIMIT_CPUS];
	l->cpu_seconds = (uint64_t)lv->v[LIMIT_CPU_TIME];
	l->file_size = (uint64_t)lv->v[LIMIT_FILE_SIZE];
	l->open_files = (uint64_t)lv->v[LIMIT_OPEN_FILES];
	l->tmp_bytes = (uint64_t)lv->v[LIMIT_TMP_SIZE];
	l->workspace_bytes = (uint64_t)lv->v[LIMIT_WORKSPACE_SIZE];
}

void engine_limit_from_sandbox(const struct sandbox_limits *l, struct engine_limit_values *lv)
{
	lv->v[LIMIT_TIMEOUT] = l->timeout_s;
	lv->v[LIMIT_MEMORY] = (double)l->memory_bytes;
	lv->v[LIMIT_PIDS] = (double)l->pids;
	lv->v[LIMIT_CPUS] = l->cpus;
	lv->v[LIMIT_CPU_TIME] = (double)l->cpu_seconds;
	lv->v[LIMIT_FILE_SIZE] = (double)l->file_size;
	lv->v[LIMIT_OPEN_FILES] = (double)l->open_files;
	lv->v[LIMIT_TMP_SIZE] = (double)l->tmp_bytes;
	lv->v[LIMIT_WORKSPACE_SIZE] = (double)l->workspace_bytes;
}

int engine_env_key_check(const char *key, size_t len, char *err, size_t n)
{
	if (env_name_check(key, len, ENV_NAME_IDENTIFIER) == 0)
		return 0;
	snprintf(err, n,
		 "\"%.*s\" is not a variable name: a letter or _, then letters, digits and _, "
		 "at most %d bytes",
		 (int)(len > 64 ? 64 : len), key, ENGINE_ENV_KEY_MAX);
	return -EINVAL;
}

/* A help of several lines ("\n"): each indented under the first. */
static int put_help(struct buf *out, const char *help)
{
	for (const char *h = help; *h;) {
		size_t n = strcspn(h, "\n");

		if (buf_printf(out, "%*s%.*s\n", h == help ? 0 : 23, "", (int)n, h) < 0)
			return -E2BIG;
		h += n + (h[n] == '\n');
	}
	return 0;
}

int engine_limits_usage(unsigned which, struct buf *out)
{
	for (size_t i = 0; i < _LIMIT_MAX; i++) {
		const struct engine_limit *l = &engine_limits[i];
		char lead[48], def[32], lo[32], hi[32];

		if (!(which & (1u << i)) || !l->flag)
			continue;
		snprintf(lead, sizeof(lead), "%s %s", l->flag, l->metavar);
		engine_limit_format(l->unit, l->def, def, sizeof(def));
		engine_limit_format(l->unit, l->floor, lo, sizeof(lo));
		engine_limit_format(l->unit, l->ceiling, hi, sizeof(hi));
		if (buf_printf(out, "  %-20s %s", lead, strlen(lead) > 20 ? " " : "") < 0)
			return -E2BIG;
		if (put_help(out, l->help) < 0)
			return -E2BIG;
		if (buf_printf(out, "%23s(default %s; %s to %s)\n", "", l->def ? def : "none", lo,
			       hi) < 0)
			return -E2BIG;
	}
	return 0;
}
