/* The request bodies: one table of fields, each with the bodies it belongs
 * to and a parser for its value. */
#include "http/request.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/banned.h"

int api_error_set(struct api_error *e, int http, const char *code, const char *fmt, ...)
{
	va_list ap;

	e->http = http;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int api_error_json(struct api_error *e, const struct json_body_error *je)
{
	switch (je->problem) {
	case JSON_BODY_UTF8:
		return api_error_set(e, 400, "invalid_utf8", "%s", je->message);
	case JSON_BODY_NUL:
		return api_error_set(e, 400, "invalid_value", "%s", je->message);
	case JSON_BODY_NOMEM:
		return api_error_set(e, 500, "internal", "%s", je->message);
	default:
		return api_error_set(e, 400, "bad_json", "%s", je->message);
	}
}

static int bad_type(struct api_error *e, const char *name, const char *want)
{
	return api_error_set(e, 400, "invalid_type", "'%s' must be %s", name, want);
}

/* ---- the limits object: the engine's table ---- */

/* A limit from the engine's table, floor and ceiling checked there: the
 * same rules and messages as the CLI's flags. */
static int limit_value(enum engine_limit_id id, const char *name, json_t *v, double *ret,
		       struct api_error *e)
{
	if (engine_limit_parse_json(id, name, v, ret, e->message, sizeof(e->message)) < 0) {
		e->http = 400;
		e->code = json_is_string(v) || json_is_number(v) ? "invalid_value" : "invalid_type";
		return -EINVAL;
	}
	return 0;
}

static int limits_field(json_t *v, struct api_request *r, struct api_error *e)
{
	const char *key;
	json_t *val;

	if (!json_is_object(v))
		return bad_type(e, "limits", "an object");
	json_object_foreach (v, key, val) {
		const struct engine_limit *f = engine_limit_find(key);
		enum engine_limit_id id;
		char name[96];
		double d;

		snprintf(name, sizeof(name), "'limits.%.64s'", key);
		/* the timeouts are fields of their own */
		if (!f || key[0] == '-' || !strcmp(key, "timeout") || !strcmp(key, "idle_timeout"))
			return api_error_set(
				e, 400, "unknown_field",
				"unknown field %s (known: memory, pids, cpus, cpu_time, file_size, open_files, tmp_size, workspace_size, output_limit, result_limit; the timeout is 'timeout')",
				name);
		id = (enum engine_limit_id)(f - engine_limits);
		if (limit_value(id, name, val, &d, e) < 0)
			return -EINVAL;
		r->lv.v[id] = d;
		r->limits_set |= 1u << id;
	}
	return 0;
}

/* ---- the other fields ---- */

static int code_field(json_t *v, struct api_request *r, struct api_error *e)
{
	size_t len;

	if (!json_is_string(v))
		return bad_type(e, "code", "a string");
	len = json_string_length(v);
	if (len > ENGINE_CODE_MAX)
		return api_error_set(e, 413, "code_too_large",
				     "'code' is %zu bytes: the limit is %u", len, ENGINE_CODE_MAX);
	if (len == 0)
		return api_error_set(e, 400, "invalid_value", "'code' is empty");
	r->code = malloc(len + 1);
	if (!r->code)
		return api_error_set(e, 500, "internal", "out of memory");
	memcpy(r->code, json_string_value(v), len + 1);
	r->code_len = len;
	return 0;
}

static int lang_field(json_t *v, struct api_request *r, struct api_error *e)
{
	if (!json_is_string(v))
		return bad_type(e, "language", "a string");
	if (engine_lang_parse(json_string_value(v), &r->lang) < 0)
		return api_error_set(e, 400, "invalid_value",
				     "unknown language \"%.64s\" (known: %s)", json_string_value(v),
				     engine_lang_list());
	r->set |= API_SET_LANG;
	return 0;
}

static int timeout_field(json_t *v, struct api_request *r, struct api_error *e)
{
	r->set |= API_SET_TIMEOUT;
	r->limits_set |= 1u << LIMIT_TIMEOUT;
	return limit_value(LIMIT_TIMEOUT, "'timeout'", v, &r->timeout_s, e);
}

static int idle_field(json_t *v, struct api_request *r, struct api_error *e)
{
	r->set |= API_SET_IDLE;
	r->limits_set |= 1u << LIMIT_IDLE_TIMEOUT;
	return limit_value(LIMIT_IDLE_TIMEOUT, "'idle_timeout'", v, &r->idle_timeout_s, e);
}

static int net_field(json_t *v, struct api_request *r, struct api_error *e)
{
	const char *s = json_string_value(v);

	if (!s)
		return bad_type(e, "network", "a string");
	if (!strcmp(s, "loopback"))
		r->net = SANDBOX_NET_LOOPBACK;
	else if (!strcmp(s, "none"))
		r->net = SANDBOX_NET_NONE;
	else if (!strcmp(s, "allowlist"))
		r->net = SANDBOX_NET_ALLOWLIST;
	else
		return api_error_set(
			e, 400, "invalid_value",
			"'network' must be \"loopback\", \"none\" or \"allowlist\", not \"%.64s\"",
			s);
	r->set |= API_SET_NET;
	return 0;
}

static int env_field(json_t *v, struct api_request *r, struct api_error *e)
{
	const char *key;
	json_t *val;

	if (!json_is_object(v))
		return bad_type(e, "env", "an object of strings");
	if (json_object_size(v) > SESSION_MAX_ENV)
		return api_error_set(e, 400, "invalid_value",
				     "'env' has %zu variables: the limit is %d",
				     json_object_size(v), SESSION_MAX_ENV);
	json_object_foreach (v, key, val) {
		char why[200];

		if (engine_env_key_check(key, strlen(key), why, sizeof(why)) < 0)
			return api_error_set(e, 400, "invalid_value", "'env': %s", why);
		if (!json_is_string(val))
			return api_error_set(e, 400, "invalid_type", "'env.%.64s' must be a string",
					     key);
		if (json_string_length(val) > API_ENV_VALUE_MAX)
			return api_error_set(e, 400, "invalid_value",
					     "'env.%.64s' is over %u bytes", key,
					     API_ENV_VALUE_MAX);
		if (asprintf(&r->env[r->n_env], "%s=%s", key, json_string_value(val)) < 0) {
			r->env[r->n_env] = NULL;
			return api_error_set(e, 500, "internal", "out of memory");
		}
		r->n_env++;
	}
	return 0;
}

/* "numpy,pandas" or ["numpy", "pandas"]. */
static int preload_field(json_t *v, struct api_request *r, struct api_error *e)
{
	struct buf b;
	json_t *item;
	size_t i;

	buf_init(&b, API_PRELOAD_MAX);
	if (json_is_string(v)) {
		if (buf_puts(&b, json_string_value(v)) < 0)
			goto too_long;
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, item) {
			if (!json_is_string(item)) {
				buf_release(&b);
				return bad_type(e, "preload", "a string or an array of strings");
			}
			if (buf_printf(&b, "%s%s", i ? "," : "", json_string_value(item)) < 0)
				goto too_long;
		}
	} else {
		return bad_type(e, "preload", "a string or an array of strings");
	}
	/* each item must be a module path (as a name): nothing else reaches
	 * the kernel */
	if (b.len && engine_preload_check(buf_str(&b), e->message, sizeof(e->message)) < 0) {
		buf_release(&b);
		e->http = 400;
		e->code = "invalid_value";
		return -EINVAL;
	}
	r->preload = buf_detach(&b, NULL);
	if (!r->preload)
		r->preload = strdup("");
	r->set |= API_SET_PRELOAD;
	return r->preload ? 0 : api_error_set(e, 500, "internal", "out of memory");
too_long:
	buf_release(&b);
	return api_error_set(e, 400, "invalid_value", "'preload' is over %u bytes",
			     API_PRELOAD_MAX);
}

static int seed_field(json_t *v, struct api_request *r, struct api_error *e)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > ENGINE_SEED_MAX)
		return api_error_set(e, 400, "invalid_value",
				     "'seed' must be a whole number from 0 to %llu",
				     ENGINE_SEED_MAX);
	r->seed = (uint64_t)json_integer_value(v);
	r->has_seed = true;
	return 0;
}

/* "project": an absolute host path; whether it may be used is the
 * policy's (engine_check_project) */
static int project_field(json_t *v, struct api_request *r, struct api_error *e)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;

	if (!s)
		return bad_type(e, "project", "a string");
	if (s[0] != '/' || strlen(s) >= 4096 || strlen(s) != json_string_length(v))
		return api_error_set(e, 400, "invalid_value",
				     "'project' must be an absolute host path");
	r->project = strdup(s);
	return r->project ? 0 : api_error_set(e, 500, "internal", "out of memory");
}

#define EXEC_ANY (API_BODY_EXECUTE | API_BODY_SESSION_EXECUTE)
#define SANDBOX_BODIES (API_BODY_EXECUTE | API_BODY_SESSION_CREATE)

static const struct field {
	const char *name;
	unsigned bodies;   /* enum api_body bits: where it is allowed */
	unsigned required; /* enum api_body bits: where it must be */
	int (*parse)(json_t *v, struct api_request *r, struct api_error *e);
} fields[] = {
	{ "code", EXEC_ANY, EXEC_ANY, code_field },
	{ "language", SANDBOX_BODIES, 0, lang_field },
	{ "timeout", EXEC_ANY | API_BODY_SESSION_CREATE, 0, timeout_field },
	{ "limits", SANDBOX_BODIES, 0, limits_field },
	{ "env", SANDBOX_BODIES, 0, env_field },
	{ "network", SANDBOX_BODIES, 0, net_field },
	{ "preload", API_BODY_SESSION_CREATE, 0, preload_field },
	{ "idle_timeout", API_BODY_SESSION_CREATE, 0, idle_field },
	{ "seed", SANDBOX_BODIES, 0, seed_field },
	{ "project", API_BODY_SESSION_CREATE, 0, project_field },
};

static const char *known_fields(enum api_body kind, char *out, size_t n)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (fields[i].bodies & kind) {
			int w = snprintf(out + len, n - len, "%s%s", len ? ", " : "",
					 fields[i].name);

			if (w < 0 || (size_t)w >= n - len)
				break;
			len += (size_t)w;
		}
	return out;
}

static int parse_object(enum api_body kind, json_t *root, struct api_request *r,
			struct api_error *e)
{
	char known[256];
	const char *key;
	json_t *v;

	json_object_foreach (root, key, v) {
		const struct field *f = NULL;

		for (size_t i = 0; i < ARRAY_SIZE(fields) && !f; i++)
			if (!strcmp(key, fields[i].name) && (fields[i].bodies & kind))
				f = &fields[i];
		if (!f)
			return api_error_set(e, 400, "unknown_field",
					     "unknown field '%.64s' (known: %s)", key,
					     known_fields(kind, known, sizeof(known)));
		if (f->parse(v, r, e) < 0)
			return -EINVAL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if ((fields[i].required & kind) && !json_object_get(root, fields[i].name))
			return api_error_set(e, 400, "missing_field", "'%s' is required",
					     fields[i].name);
	if (kind == API_BODY_SESSION_CREATE && (r->set & API_SET_LANG) && r->lang == LANG_SQL)
		return api_error_set(
			e, 400, "invalid_value",
			"sql has no sessions (python, javascript, bash do); run SQL with POST /v1/execute");
	return 0;
}

int api_request_parse(enum api_body kind, const char *body, size_t len, struct api_request *ret,
		      struct api_error *e)
{
	struct api_request r = { 0 };
	struct json_body_error je;
	json_t *root;
	int k;

	if (len > API_BODY_MAX)
		return api_error_set(e, 413, "body_too_large",
				     "the body is %zu bytes: the limit is %u", len, API_BODY_MAX);
	if (json_body_read(body, len, 0, &root, &je) < 0) {
		if (je.problem == JSON_BODY_UTF8)
			return api_error_set(
				e, 400, "invalid_utf8",
				"the body is not valid UTF-8 (at byte %d): send text as UTF-8, files with PUT .../files/{path}",
				je.position);
		return api_error_json(e, &je);
	}
	k = parse_object(kind, root, &r, e);
	json_decref(root);
	if (k < 0) {
		api_request_release(&r);
		return k;
	}
	*ret = r;
	return 0;
}

void api_request_release(struct api_request *r)
{
	free(r->code);
	for (size_t i = 0; i < r->n_env; i++)
		free(r->env[i]);
	free(r->preload);
	free(r->project);
	memset(r, 0, sizeof(*r));
}

void api_request_apply(const struct api_request *r, struct sandbox_limits *limits,
		       uint64_t *output_limit, enum sandbox_net *net)
{
	struct engine_limit_values lv;

	engine_limit_from_sandbox(limits, &lv);
	for (unsigned i = 0; i < _LIMIT_MAX; i++)
		if (r->limits_set & (1u << i))
			lv.v[i] = r->lv.v[i];
	if (r->set & API_SET_TIMEOUT)
		lv.v[LIMIT_TIMEOUT] = r->timeout_s;
	engine_limit_to_sandbox(&lv, limits);
	if (r->limits_set & (1u << LIMIT_OUTPUT))
		*output_limit = (uint64_t)r->lv.v[LIMIT_OUTPUT];
	if (r->set & API_SET_NET)
		*net = r->net;
}
