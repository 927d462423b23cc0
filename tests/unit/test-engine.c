/* engine and cli pieces that need no sandbox: output capture, the result
 * object, languages, `codecell run` option parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "util/capture.h"
#include "engine/engine.h"
#include "http/request.h"
#include "mcp/mcp.h"

static void capture_keeps_everything_under_cap(void **state)
{
	struct capture c;
	size_t len, live;
	char *t;

	(void)state;
	assert_int_equal(capture_init(&c, 10), 0);
	capture_add(&c, "abc", 3, &live);
	assert_int_equal(live, 3);
	capture_add(&c, "defgh", 5, &live);
	assert_int_equal(live, 2); /* head is 5 bytes: "abcde" */
	assert_false(capture_truncated(&c));
	t = capture_text(&c, &len);
	assert_string_equal(t, "abcdefgh");
	free(t);
	t = capture_rest(&c, &len);
	assert_string_equal(t, "fgh"); /* what was not shown live */
	free(t);
	capture_release(&c);
}

static void capture_cuts_the_middle(void **state)
{
	struct capture c;
	size_t len;
	char *t;

	(void)state;
	assert_int_equal(capture_init(&c, 8), 0);
	capture_add(&c, "0123", 4, NULL);
	for (int i = 0; i < 100; i++)
		capture_add(&c, "xxxxxxxxxx", 10, NULL);
	capture_add(&c, "ab", 2, NULL);
	capture_add(&c, "cd", 2, NULL);
	assert_true(capture_truncated(&c));
	assert_int_equal(c.total, 1008);
	t = capture_text(&c, &len);
	assert_string_equal(t, "0123\n[... 1000 bytes cut ...]\nabcd");
	assert_int_equal(len, strlen(t));
	free(t);
	capture_release(&c);
}

static void capture_ring_wraps_in_order(void **state)
{
	struct capture c;
	size_t len;
	char *t;

	(void)state;
	assert_int_equal(capture_init(&c, 6), 0);
	capture_add(&c, "HHH", 3, NULL);
	capture_add(&c, "12", 2, NULL);
	capture_add(&c, "34", 2, NULL);
	capture_add(&c, "5", 1, NULL);
	t = capture_text(&c, &len);
	assert_string_equal(t, "HHH\n[... 2 bytes cut ...]\n345");
	free(t);
	capture_release(&c);
}

/* The head grows as output comes (many reallocations), the tail ring is
 * made when the head is full; what comes out is what went in. */
static void capture_grows_and_keeps_every_byte(void **state)
{
	enum { CAP = 1 << 20, PIECE = 1000 };
	struct capture c;
	char piece[PIECE], *t, *want;
	size_t len, live, n = 0, total = 3 * CAP / 4;

	(void)state;
	assert_int_equal(capture_init(&c, CAP), 0);
	t = capture_text(&c, &len); /* nothing yet: an empty text */
	assert_int_equal(len, 0);
	assert_string_equal(t, "");
	free(t);
	want = malloc(total);
	assert_non_null(want);
	while (n < total) {
		size_t k = total - n < PIECE ? total - n : PIECE;

		for (size_t i = 0; i < k; i++)
			piece[i] = (char)('a' + (n + i) % 23);
		memcpy(want + n, piece, k);
		capture_add(&c, piece, k, &live);
		/* the head is CAP/2: live until it is full */
		assert_int_equal(live, n + k <= CAP / 2 ? k : n >= CAP / 2 ? 0 : CAP / 2 - n);
		n += k;
	}
	assert_false(capture_truncated(&c));
	t = capture_text(&c, &len);
	assert_int_equal(len, total);
	assert_memory_equal(t, want, total);
	free(t);
	t = capture_rest(&c, &len);
	assert_int_equal(len, total - CAP / 2);
	assert_memory_equal(t, want + CAP / 2, len);
	free(t);
	free(want);
	capture_release(&c);
}

static struct run_result sample_result(void)
{
	struct run_result r = { 0 };

	r.status = RESULT_ERROR;
	r.out = strdup("hi\n");
	r.out_len = 3;
	r.err = strdup("bad \xff byte");
	r.err_len = strlen(r.err);
	r.has_error = true;
	r.error_name = strdup("ZeroDivisionError");
	r.error_value = strdup("division by zero");
	r.error_traceback = strdup("Traceback ...");
	r.has_exit_code = true;
	r.exit_code = 1;
	r.limits_unenforced = SANDBOX_LIMIT_MEMORY | SANDBOX_LIMIT_PIDS;
	r.limits_hit = SANDBOX_LIMIT_DISK;
	return r;
}

static void result_json_shape(void **state)
{
	struct run_result r = sample_result();
	json_t *j = run_result_to_json(&r);
	const char *keys[] = { "status",    "logs",	 "results",	      "error",
			       "exit_code", "signal",	 "execution_count",   "duration_ms",
			       "usage",	    "truncated", "limits_unenforced", "limits_hit" };

	(void)state;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(json_object_get(j, keys[i]));
	assert_string_equal(json_string_value(json_object_get(j, "status")), "error");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "name")),
			    "ZeroDivisionError");
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 1);
	assert_true(json_is_null(json_object_get(j, "signal")));
	/* invalid UTF-8 in output becomes U+FFFD, never a broken object */
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j, "logs"), "stderr")),
		"bad \xef\xbf\xbd byte");
	assert_int_equal(json_array_size(json_object_get(j, "limits_unenforced")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "limits_hit"), 0)),
			    "disk");
	json_decref(j);
	run_result_release(&r);
}

static void result_exit_statuses(void **state)
{
	struct run_result r = { 0 };

	(void)state;
	r.status = RESULT_OK;
	r.has_exit_code = true;
	assert_int_equal(run_result_exit_status(&r), 0);
	r.status = RESULT_ERROR;
	r.exit_code = 3;
	assert_int_equal(run_result_exit_status(&r), 3);
	r.status = RESULT_KILLED;
	r.has_exit_code = false;
	r.signal = 15;
	assert_int_equal(run_result_exit_status(&r), 143);
	r.status = RESULT_TIMEOUT;
	assert_int_equal(run_result_exit_status(&r), 124);
	r.status = RESULT_MEMORY_LIMIT;
	assert_int_equal(run_result_exit_status(&r), 137);
	r.status = RESULT_OUTPUT_LIMIT;
	assert_int_equal(run_result_exit_status(&r), 141);
	r.status = RESULT_REJECTED;
	assert_int_equal(run_result_exit_status(&r), 125);
	r.status = RESULT_ERROR;
	r.setup_failed = true;
	assert_int_equal(run_result_exit_status(&r), 125);
}

static void languages(void **state)
{
	enum engine_lang l;

	(void)state;
	assert_int_equal(engine_lang_parse("js", &l), 0);
	assert_int_equal(l, LANG_JAVASCRIPT);
	assert_int_equal(engine_lang_parse("Python", &l), 0);
	assert_int_equal(l, LANG_PYTHON);
	assert_int_equal(engine_lang_parse("sqlite", &l), 0);
	assert_int_equal(l, LANG_SQL);
	assert_int_equal(engine_lang_parse("ruby", &l), -EINVAL);
	assert_int_equal(engine_lang_from_path("dir.d/job.sh", &l), 0);
	assert_int_equal(l, LANG_BASH);
	assert_int_equal(engine_lang_from_path("app.mjs", &l), 0);
	assert_int_equal(l, LANG_JAVASCRIPT);
	assert_int_equal(engine_lang_from_path("dir.d/noext", &l), -ENOENT);
	assert_int_equal(engine_lang_from_path("notes.txt", &l), -ENOENT);
}

/* Parse a NULL-terminated list of words as `codecell run ...`. */
static int parse(struct run_opts *o, struct buf *err, ...)
{
	char *argv[32] = { "run" };
	int argc = 1;
	va_list ap;

	va_start(ap, err);
	for (char *a; (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	buf_reset(err);
	return run_opts_parse(argc, argv, o, err);
}

static void run_options(void **state)
{
	struct run_opts o;
	struct buf err;

	(void)state;
	buf_init(&err, 4096);
	assert_int_equal(parse(&o, &err, "--timeout", "2", "--memory=256M", "--pids", "64",
			       "--output-limit", "1M", "--net", "none", "--json", "s.py", "a",
			       "--b", NULL),
			 0);
	assert_true(o.req.limits.timeout_s == 2.0);
	assert_int_equal(o.req.limits.memory_bytes, 256u << 20);
	assert_int_equal(o.req.limits.pids, 64);
	assert_int_equal(o.req.output_limit, 1u << 20);
	assert_int_equal(o.req.net, SANDBOX_NET_NONE);
	assert_true(o.json);
	assert_string_equal(o.path, "s.py");
	/* after FILE, everything is the program's, options included */
	assert_string_equal(o.req.args[0], "a");
	assert_string_equal(o.req.args[1], "--b");
	assert_int_equal(o.req.lang, LANG_PYTHON);
	assert_true(o.req.limits.cpus == 1.0); /* the default: one core */
	assert_int_equal(parse(&o, &err, "--cpus", "1.5", "s.py", NULL), 0);
	assert_true(o.req.limits.cpus == 1.5);
	assert_int_equal(parse(&o, &err, "--cpus=0.01", "s.py", NULL), 0);
	assert_true(o.req.limits.cpus == 0.01);

	assert_int_equal(parse(&o, &err, "--file", "a.csv", "--file", "b.csv", "--env", "K=V",
			       "job.sh", NULL),
			 0);
	assert_int_equal(o.n_files, 2);
	assert_string_equal(o.req.files[1], "b.csv");
	assert_string_equal(o.req.env[0], "K=V");
	assert_int_equal(o.req.lang, LANG_BASH); /* from the extension */

	assert_int_equal(parse(&o, &err, "--lang", "sql", "--db", "d.sqlite", "-", NULL), 0);
	assert_string_equal(o.path, "-");
	assert_int_equal(parse(&o, &err, "--help", NULL), 0);
	assert_true(o.help);
	buf_release(&err);
}

static void run_option_errors(void **state)
{
	static const struct {
		const char *a, *b, *want;
	} cases[] = {
		{ "--timeout", "abc", "invalid --timeout 'abc'" },
		{ "--memory", "12Q", "invalid --memory '12Q'" },
		{ "--memory", "1K", "at least" },
		{ "--pids", "-1", "invalid --pids '-1'" },
		{ "--pids", "0", "invalid --pids '0'" },
		{ "--net", "host", "none, loopback or allowlist" },
		{ "--cpus", "0", "a number of cores from 0.01 to 64" },
		{ "--cpus", "0.001", "the floor of 'cpus'" },
		{ "--cpus", "2000", "the ceiling of 'cpus'" },
		{ "--cpus", "-1", "a number of cores" },
		{ "--cpus", ".5", "a number of cores" },
		{ "--cpus", "1.", "a number of cores" },
		{ "--cpus", "1e2", "a number of cores" },
		{ "--cpus", "nan", "a number of cores" },
		{ "--lang", "ruby", "unknown language 'ruby'" },
		{ "--env", "NOEQUALS", "KEY=VALUE" },
		{ "--bogus", "x.py", "unknown option '--bogus'" },
		{ "--db", "d.sqlite", "--db goes with --lang sql" },
	};
	struct run_opts o;
	struct buf err;

	(void)state;
	buf_init(&err, 4096);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(&o, &err, cases[i].a, cases[i].b, "x.py", NULL), -EINVAL);
		if (!strstr(buf_str(&err), cases[i].want))
			fail_msg("'%s %s': message '%s' lacks '%s'", cases[i].a, cases[i].b,
				 buf_str(&err), cases[i].want);
	}
	assert_int_equal(parse(&o, &err, "--timeout", NULL), -EINVAL);
	assert_non_null(strstr(buf_str(&err), "needs a value"));
	assert_int_equal(parse(&o, &err, "--json", NULL), -EINVAL);
	assert_non_null(strstr(buf_str(&err), "no code given"));
	assert_int_equal(parse(&o, &err, "--json=1", "x.py", NULL), -EINVAL);
	assert_non_null(strstr(buf_str(&err), "takes no value"));
	buf_release(&err);
}

/* A value as text both doors take: plain numbers, no suffix. */
static void plain(enum engine_unit u, double v, char *out, size_t n)
{
	if (u == UNIT_BYTES || u == UNIT_COUNT)
		snprintf(out, n, "%.0f", v);
	else
		snprintf(out, n, "%.6g", v);
}

/* One limit through the CLI (run, or shell for the idle timeout) and the
 * API (execute, or session create): both accept or both refuse, and a
 * refusal names the same floor or ceiling. */
static int through_doors(enum engine_limit_id id, double v, char *cli_msg, char *api_msg)
{
	const struct engine_limit *l = &engine_limits[id];
	enum api_body kind = id == LIMIT_IDLE_TIMEOUT || id == LIMIT_RESULT
				     ? API_BODY_SESSION_CREATE
				     : API_BODY_EXECUTE;
	char text[64], body[256], flag[96];
	struct api_request r;
	struct api_error e;
	struct run_opts o;
	struct buf err;
	int c = 0, a;

	plain(l->unit, v, text, sizeof(text));
	cli_msg[0] = api_msg[0] = '\0';
	if (l->flag) {
		char *argv[] = { "run", flag, id == LIMIT_IDLE_TIMEOUT ? NULL : "x.py", NULL };

		snprintf(flag, sizeof(flag), "%s=%s", l->flag, text);
		buf_init(&err, 4096);
		c = id == LIMIT_IDLE_TIMEOUT ? shell_opts_parse(2, argv, &o, &err)
					     : run_opts_parse(3, argv, &o, &err);
		snprintf(cli_msg, 512, "%s", buf_str(&err));
		buf_release(&err);
	}
	if (id == LIMIT_TIMEOUT || id == LIMIT_IDLE_TIMEOUT)
		snprintf(body, sizeof(body), "{%s\"%s\": %s}",
			 kind == API_BODY_EXECUTE ? "\"code\": \"1\", " : "", l->name, text);
	else
		snprintf(body, sizeof(body), "{%s\"limits\": {\"%s\": %s}}",
			 kind == API_BODY_EXECUTE ? "\"code\": \"1\", " : "", l->name, text);
	a = api_request_parse(kind, body, strlen(body), &r, &e);
	if (a == 0)
		api_request_release(&r);
	else
		snprintf(api_msg, 600, "%.500s (%d)", e.message, e.http);
	if (l->flag && (c < 0) != (a < 0))
		fail_msg("'%s' = %s: the CLI says '%s', the API '%s'", l->name, text, cli_msg,
			 api_msg);
	return a;
}

static void limits_agree_across_doors(void **state)
{
	(void)state;
	/* MCP's startup options are the CLI's parser; its run_code timeout
	 * argument is bounded by the table's constants */
	assert_true(MCP_TIMEOUT_MAX_S == engine_limits[LIMIT_TIMEOUT].ceiling);
	assert_true(ENGINE_TIMEOUT_FLOOR_S == engine_limits[LIMIT_TIMEOUT].floor);
	for (int id = 0; id < _LIMIT_MAX; id++) {
		const struct engine_limit *l = &engine_limits[id];
		double below = l->unit == UNIT_COUNT ? l->floor - 1 : l->floor / 2;
		double above = l->unit == UNIT_COUNT ? l->ceiling + 1 : l->ceiling * 2;
		char cli[600], api[600], want[128], bound[32];

		if (through_doors(id, l->floor, cli, api) ||
		    through_doors(id, l->ceiling, cli, api))
			fail_msg("'%s' at its floor or ceiling: '%s' / '%s'", l->name, cli, api);
		assert_true(l->floor <= l->def || l->def == 0);
		assert_true(l->def <= l->ceiling);

		assert_int_equal(through_doors(id, below, cli, api), -EINVAL);
		engine_limit_format(l->unit, l->floor, bound, sizeof(bound));
		snprintf(want, sizeof(want), "must be at least %s (the floor of '%s'", bound,
			 l->name);
		if (!strstr(api, want) || !strstr(api, "(400)") || (l->flag && !strstr(cli, want)))
			fail_msg("'%s' below its floor: '%s' / '%s' lack \"%s\"", l->name, cli, api,
				 want);

		assert_int_equal(through_doors(id, above, cli, api), -EINVAL);
		engine_limit_format(l->unit, l->ceiling, bound, sizeof(bound));
		snprintf(want, sizeof(want), "must be at most %s (the ceiling of '%s')", bound,
			 l->name);
		if (!strstr(api, want) || (l->flag && !strstr(cli, want)))
			fail_msg("'%s' over its ceiling: '%s' / '%s' lack \"%s\"", l->name, cli,
				 api, want);
	}
}

/* The API took {"limits": {"memory": 1}} and the sandbox then died
 * before its handshake ("cannot synchronize with the supervisor"). */
static void api_memory_below_floor_is_refused(void **state)
{
	static const char body[] = "{\"code\": \"print(1)\", \"limits\": {\"memory\": 1}}";
	struct api_request r;
	struct api_error e;

	(void)state;
	assert_int_equal(api_request_parse(API_BODY_EXECUTE, body, strlen(body), &r, &e), -EINVAL);
	assert_int_equal(e.http, 400);
	assert_non_null(strstr(e.message, "must be at least 16M (the floor of 'memory'"));
}

/* `codecell run --idle-timeout 10m` was taken and ignored: 600 s was the
 * "not given" mark. */
static void run_refuses_idle_timeout_of_ten_minutes(void **state)
{
	struct run_opts o;
	struct buf err;

	(void)state;
	buf_init(&err, 4096);
	assert_int_equal(parse(&o, &err, "--idle-timeout", "10m", "x.py", NULL), -EINVAL);
	assert_non_null(strstr(buf_str(&err), "--idle-timeout go with 'codecell shell'"));
	buf_release(&err);
}

static void env_keys_one_rule(void **state)
{
	static const char *const bad_keys[] = { "1A", "A-B", "", "A B", "É" };
	char msg[256], body[128];
	struct api_request r;
	struct api_error e;
	struct run_opts o;
	struct buf err;

	(void)state;
	buf_init(&err, 4096);
	for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
		char kv[64];

		snprintf(kv, sizeof(kv), "%s=1", bad_keys[i]);
		assert_int_equal(
			engine_env_key_check(bad_keys[i], strlen(bad_keys[i]), msg, sizeof(msg)),
			-EINVAL);
		assert_int_equal(parse(&o, &err, "--env", kv, "x.py", NULL), -EINVAL);
		snprintf(body, sizeof(body), "{\"code\": \"1\", \"env\": {\"%s\": \"1\"}}",
			 bad_keys[i]);
		assert_int_equal(api_request_parse(API_BODY_EXECUTE, body, strlen(body), &r, &e),
				 -EINVAL);
	}
	assert_int_equal(parse(&o, &err, "--env", "_A1=x", "x.py", NULL), 0);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(capture_keeps_everything_under_cap),
		cmocka_unit_test(capture_cuts_the_middle),
		cmocka_unit_test(capture_ring_wraps_in_order),
		cmocka_unit_test(capture_grows_and_keeps_every_byte),
		cmocka_unit_test(result_json_shape),
		cmocka_unit_test(result_exit_statuses),
		cmocka_unit_test(languages),
		cmocka_unit_test(run_options),
		cmocka_unit_test(run_option_errors),
		cmocka_unit_test(limits_agree_across_doors),
		cmocka_unit_test(api_memory_below_floor_is_refused),
		cmocka_unit_test(run_refuses_idle_timeout_of_ten_minutes),
		cmocka_unit_test(env_keys_one_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
