/* engine/policy and engine/audit: the file's parser (errors name the
 * line), every rule of engine_check, the audit record; engine/sessions'
 * pipeline around them. */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/approval.h"
#include "engine/audit.h"
#include "engine/policy.h"
#include "engine/sessions.h"
#include "engine/tool.h"
#include "sandbox/egress.h"
#include "util/sha256.h"

static struct engine_policies *parse_ok(const char *text)
{
	struct engine_policies *ps = NULL;
	char err[512];

	if (engine_policies_parse(text, strlen(text), &ps, err, sizeof(err)) < 0)
		fail_msg("'%s': %s", text, err);
	return ps;
}

static void parse_errors_name_the_line(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "[default]\nlanguages = python\nlimit.memory = 1K\n",
		  "line 3: invalid limit.memory '1K': must be at least 16M" },
		{ "[default]\nlimit.memory = 99G\n",
		  "line 2: invalid limit.memory '99G': must be at most 16G" },
		{ "# c\n\nlanguages = python\n", "line 3: 'languages' comes before any section" },
		{ "[default]\nlanguages = ruby\n", "line 2: languages: unknown language 'ruby'" },
		{ "[default]\nnetwork = maybe\n", "line 2: network: expected on or off" },
		{ "[default]\nbogus = 1\n", "line 2: unknown key 'bogus'" },
		{ "[default]\nlimit.bogus = 1\n", "line 2: unknown limit 'limit.bogus'" },
		{ "[default]\napproval = launch\n", "line 2: approval: unknown action 'launch'" },
		/* the list decides each proxied connection; nobody is asked */
		{ "[default]\napproval = egress\n", "line 2: approval: unknown action 'egress'" },
		{ "[default]\nrate = fast\n", "line 2: rate: expected calls per second" },
		{ "[default]\nnetwork = on\nnetwork = off\n", "line 3: 'network' is set twice" },
		{ "[default]\n[default]\n", "line 2: [default] is given twice" },
		{ "[policy a b]\n", "line 1: '[policy a b]'" },
		{ "[zone x]\n", "line 1: unknown section" },
		{ "[default]\nmax_sessions = -1\n",
		  "line 2: max_sessions: expected a whole number" },
		{ "[client c]\npolicy = nope\nkey_sha256 = 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n",
		  "client 'c': no policy 'nope'" },
		{ "[client c]\nkey_sha256 = 12\n", "line 2: key_sha256: expected 64 hex digits" },
		{ "[client c]\n", "client 'c' has no key_sha256" },
		{ "[default\n", "line 1: a section is" },
		{ "[default]\njust words\n", "line 2: expected 'key = value'" },
		{ "[default]\nprojects = srv/repos\n",
		  "line 2: projects: 'srv/repos' is not an absolute path" },
		{ "[default]\nprojects = /srv/../etc\n",
		  "line 2: projects: '/srv/../etc' is not an absolute path" },
	};
	struct engine_policies *ps;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (engine_policies_parse(cases[i].text, strlen(cases[i].text), &ps, err,
					  sizeof(err)) != -EINVAL)
			fail_msg("'%s' was accepted", cases[i].text);
		if (!strstr(err, cases[i].want))
			fail_msg("'%s': message '%s' lacks '%s'", cases[i].text, err,
				 cases[i].want);
	}
}

static void the_sample_parses(void **state)
{
	struct engine_policies *ps = NULL;
	char err[512];
	struct engine_client *c;

	(void)state;
	assert_int_equal(engine_policies_load("examples/policy.sample.ini", &ps, err, sizeof(err)),
			 0);
	assert_true(engine_policies_has_clients(ps));
	c = engine_policies_client(ps, "test", 4); /* sha256("test") is the sample's */
	assert_non_null(c);
	assert_string_equal(c->policy->name, "untrusted");
	assert_false(c->policy->network);
	assert_true(c->policy->languages[LANG_PYTHON] && !c->policy->languages[LANG_BASH]);
	assert_null(engine_policies_client(ps, "tesT", 4));
	engine_policies_free(ps);
	assert_int_equal(engine_policies_load("/nonexistent/p.ini", &ps, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "cannot open '/nonexistent/p.ini'"));
}

static int check_run(struct engine_client *c, struct run_request *rq, unsigned asked,
		     bool net_asked, struct engine_verdict *v)
{
	int k = engine_check_run(c, DOOR_API, rq, asked, net_asked, v);

	if (k == 0)
		engine_release(c, ACTION_RUN);
	return k;
}

static void rules_limits_languages_network(void **state)
{
	struct engine_policies *ps =
		parse_ok("[default]\nlanguages = python, bash\nlimit.memory = 256M\n"
			 "limit.timeout = 10s\nnetwork = off\n");
	struct engine_client *c = &ps->clients[0];
	struct engine_verdict v = { 0 };
	struct run_request rq;

	(void)state;
	/* defaults above a ceiling are lowered; the network is off */
	run_request_init(&rq);
	assert_int_equal(check_run(c, &rq, 0, false, &v), 0);
	assert_true(rq.limits.memory_bytes == 256u << 20);
	assert_true(rq.limits.timeout_s == 10);
	assert_int_equal(rq.net, SANDBOX_NET_NONE);
	/* asked for more: refused, never lowered */
	run_request_init(&rq);
	rq.limits.memory_bytes = 512u << 20;
	assert_int_equal(check_run(c, &rq, 1u << LIMIT_MEMORY, false, &v), -EPERM);
	assert_string_equal(v.rule, "limits.memory");
	assert_int_equal(v.http, 403);
	assert_non_null(strstr(v.message, "asked for memory 512M, the most allowed is 256M"));
	run_request_init(&rq);
	rq.limits.timeout_s = 11;
	assert_int_equal(check_run(c, &rq, 1u << LIMIT_TIMEOUT, false, &v), -EPERM);
	assert_string_equal(v.rule, "limits.timeout");
	run_request_init(&rq);
	rq.limits.memory_bytes = 256u << 20;
	assert_int_equal(check_run(c, &rq, 1u << LIMIT_MEMORY, false, &v), 0);
	/* languages */
	run_request_init(&rq);
	rq.lang = LANG_JAVASCRIPT;
	assert_int_equal(check_run(c, &rq, 0, false, &v), -EPERM);
	assert_string_equal(v.rule, "languages");
	/* the network asked for */
	run_request_init(&rq);
	assert_int_equal(check_run(c, &rq, 0, true, &v), -EPERM);
	assert_string_equal(v.rule, "network");
	run_request_init(&rq);
	rq.net = SANDBOX_NET_NONE;
	assert_int_equal(check_run(c, &rq, 0, true, &v), 0);
	engine_policies_free(ps);
}

static void rules_files_and_approval(void **state)
{
	struct engine_policies *ps = parse_ok("[default]\nmax_file = 1K\napproval = delete_file\n");
	struct engine_client *c = &ps->clients[0];
	struct engine_verdict v = { 0 };

	(void)state;
	assert_int_equal(engine_check_file(c, DOOR_API, ACTION_WRITE_FILE, 1024, &v), 0);
	assert_int_equal(engine_check_file(c, DOOR_API, ACTION_WRITE_FILE, 1025, &v), -EPERM);
	assert_string_equal(v.rule, "max_file");
	assert_int_equal(v.http, 413);
	assert_int_equal(engine_check_file(c, DOOR_API, ACTION_DELETE_FILE, 0, &v), -EPERM);
	assert_string_equal(v.rule, "approval");
	assert_true(v.needs_approval);
	engine_policies_free(ps);
}

static void rules_projects(void **state)
{
	struct engine_policies *ps =
		parse_ok("[default]\n[policy p]\nprojects = /usr/share, /tmp\n"
			 "approval = apply\n[client c]\npolicy = p\nkey_sha256 = "
			 "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n");
	struct engine_client *def = &ps->clients[0], *c = &ps->clients[1];
	struct engine_verdict v = { 0 };
	char real[4096];

	(void)state;
	assert_int_equal(c->policy->n_projects, 2);
	/* the default names none: no project for a server's client, any for the CLI */
	assert_int_equal(engine_check_project(def, DOOR_API, "/usr/share", real, sizeof(real), &v),
			 -EPERM);
	assert_string_equal(v.rule, "projects");
	assert_int_equal(engine_check_project(def, DOOR_CLI, "/usr/share", real, sizeof(real), &v),
			 0);
	assert_int_equal(
		engine_check_project(c, DOOR_API, "/usr/share/doc", real, sizeof(real), &v), 0);
	assert_string_equal(real, "/usr/share/doc");
	/* a prefix that is not a parent, and a missing directory */
	assert_int_equal(engine_check_project(c, DOOR_API, "/usr/sharex", real, sizeof(real), &v),
			 -EPERM);
	assert_int_equal(engine_check_project(c, DOOR_API, "/usr", real, sizeof(real), &v), -EPERM);
	assert_int_equal(engine_check_action(c, DOOR_API, ACTION_APPLY, SESSION_PYTHON, &v),
			 -EPERM);
	assert_string_equal(v.rule, "approval");
	assert_true(v.needs_approval);
	assert_string_equal(engine_action_name(ACTION_APPLY), "apply");
	engine_policies_free(ps);
}

static void rules_counts_and_rate(void **state)
{
	struct engine_policies *ps =
		parse_ok("[default]\nmax_sessions = 2\nmax_executions = 1\n"
			 "[policy slow]\nrate = 1/h\nburst = 2\n"
			 "[client a]\npolicy = slow\nkey_sha256 = "
			 "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n");
	struct engine_client *c = &ps->clients[0], *a = engine_policies_client(ps, "test", 4);
	struct engine_verdict v = { 0 };
	struct session_opts so;
	struct run_request rq;

	(void)state;
	session_opts_init(&so);
	assert_int_equal(engine_check_session(c, DOOR_API, &so, 0, false, &v), 0);
	assert_int_equal(engine_check_session(c, DOOR_API, &so, 0, false, &v), 0);
	assert_int_equal(engine_check_session(c, DOOR_API, &so, 0, false, &v), -EPERM);
	assert_string_equal(v.rule, "max_sessions");
	assert_int_equal(v.http, 429);
	engine_release(c, ACTION_SESSION_CREATE);
	assert_int_equal(engine_check_session(c, DOOR_API, &so, 0, false, &v), 0);

	run_request_init(&rq);
	assert_int_equal(engine_check_run(c, DOOR_API, &rq, 0, false, &v), 0);
	assert_int_equal(engine_check_exec(c, DOOR_API, SESSION_PYTHON, 0, &v), -EPERM);
	assert_string_equal(v.rule, "max_executions");
	engine_release(c, ACTION_RUN);
	assert_int_equal(engine_check_exec(c, DOOR_API, SESSION_PYTHON, 0, &v), 0);
	engine_release(c, ACTION_SESSION_EXEC);

	/* a burst of 2, then one an hour */
	assert_non_null(a);
	assert_int_equal(engine_check_file(a, DOOR_API, ACTION_READ_FILE, 0, &v), 0);
	assert_int_equal(engine_check_file(a, DOOR_API, ACTION_READ_FILE, 0, &v), 0);
	assert_int_equal(engine_check_file(a, DOOR_API, ACTION_READ_FILE, 0, &v), -EPERM);
	assert_string_equal(v.rule, "rate");
	assert_int_equal(v.http, 429);
	/* the default client has its own bucket (none) */
	assert_int_equal(engine_check_file(c, DOOR_API, ACTION_READ_FILE, 0, &v), 0);
	engine_policies_free(ps);
}

static void audit_record_fields(void **state)
{
	static const char *const env[] = { "API_KEY=hunter2", NULL };
	struct run_request rq;
	struct run_result res = { .status = RESULT_OK,
				  .has_exit_code = true,
				  .exit_code = 3,
				  .out_len = 5,
				  .err_len = 2 };
	struct engine_verdict v = { .allowed = true };
	json_t *args, *o;
	char *s;

	(void)state;
	run_request_init(&rq);
	rq.env = env;
	args = engine_audit_run_args(&rq, 0);
	struct engine_audit_record rec = {
		.client = "c",
		.door = DOOR_MCP,
		.action = ACTION_RUN,
		.has_lang = true,
		.lang = LANG_BASH,
		.code = "abc",
		.code_len = 3,
		.args = args,
		.verdict = &v,
		.duration_ms = 1.5,
		.res = &res,
	};
	o = engine_audit_json(&rec);
	s = json_dumps(o, JSON_COMPACT);
	assert_null(strstr(s, "hunter2"));
	assert_non_null(strstr(s, "\"API_KEY\":\"[redacted]\""));
	/* sha256("abc") */
	assert_string_equal(json_string_value(json_object_get(o, "code_sha256")),
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_string_equal(json_string_value(json_object_get(o, "door")), "mcp");
	assert_string_equal(json_string_value(json_object_get(o, "decision")), "allowed");
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 3);
	assert_int_equal(json_integer_value(json_object_get(o, "output_bytes")), 7);
	assert_true(json_is_null(json_object_get(o, "approval")));
	free(s);
	json_decref(o);
	json_decref(args);
}

/* The records of the log at path and its rotations, each a whole JSON
 * line; the files are removed.  How many there were. */
static int audit_lines_removed(const char *path)
{
	char rotated[80], line[4096];
	int lines = 0;
	FILE *f;

	for (int k = 0; k <= AUDIT_KEEP; k++) {
		if (k)
			snprintf(rotated, sizeof(rotated), "%s.%d", path, k);
		f = fopen(k ? rotated : path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			json_t *j = json_loads(line, 0, NULL);

			assert_non_null(j);
			assert_non_null(strchr(line, '\n'));
			json_decref(j);
			lines++;
		}
		fclose(f);
		(void)unlink(k ? rotated : path);
	}
	return lines;
}

static void audit_appends_whole_lines_and_rotates(void **state)
{
	char dir[] = "/tmp/cc-audit-XXXXXX", path[64];
	struct engine_audit *a = NULL;
	struct engine_audit_record rec = { .client = "c", .action = ACTION_READ_FILE };
	char err[256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.log", dir);
	assert_int_equal(engine_audit_open(path, 1000, &a, err, sizeof(err)), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(engine_audit_write(a, &rec), 0);
	engine_audit_close(a);
	/* none lost: 8 records, 4 files at most */
	assert_int_equal(audit_lines_removed(path), 8);
	assert_int_equal(rmdir(dir), 0);
}

/* Two writers of one log (two servers, or a server and `mcp`, on the
 * default log): once one rotated it, the other's records go to the new
 * file too, not on into FILE.1; the newest record is always the last
 * line of FILE, and none is lost. */
static void audit_writers_follow_each_others_rotation(void **state)
{
	char dir[] = "/tmp/cc-audit-XXXXXX", path[64], line[4096], last[4096];
	struct engine_audit *a = NULL, *b = NULL;
	struct engine_audit_record rec = { .client = "a", .action = ACTION_READ_FILE };
	char err[256];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.log", dir);
	assert_int_equal(engine_audit_open(path, 1000, &a, err, sizeof(err)), 0);
	assert_int_equal(engine_audit_open(path, 1000, &b, err, sizeof(err)), 0);
	for (int i = 0; i < 12; i++) {
		rec.client = i % 2 ? "b" : "a";
		assert_int_equal(engine_audit_write(i % 2 ? b : a, &rec), 0);
		f = fopen(path, "r");
		assert_non_null(f);
		last[0] = '\0';
		while (fgets(line, sizeof(line), f))
			snprintf(last, sizeof(last), "%s", line);
		fclose(f);
		assert_non_null(strstr(last, i % 2 ? "\"client\":\"b\"" : "\"client\":\"a\""));
	}
	engine_audit_close(a);
	engine_audit_close(b);
	assert_int_equal(audit_lines_removed(path), 12);
	assert_int_equal(rmdir(dir), 0);
}

/* Arguments that make a record over AUDIT_LINE_MAX: the line keeps the
 * head of their JSON text (cut at a character), a marker and the full
 * length, where it used to drop them. */
static void audit_keeps_the_head_of_long_arguments(void **state)
{
	char dir[] = "/tmp/cc-audit-XXXXXX", path[64], err[256];
	static char big[100000], line[AUDIT_LINE_MAX + 64];
	struct engine_audit *a = NULL;
	struct engine_audit_record rec = { .client = "c", .action = ACTION_HTTP };
	json_t *args, *j, *x;
	char *full;
	const char *head;
	FILE *f;

	(void)state;
	/* quotes are escaped twice over in the head (it must still fit),
	 * and an e-acute cut in half would not be UTF-8 */
	for (size_t i = 0; i < sizeof(big) - 1; i++)
		big[i] = i % 3 == 0 ? '"' : i % 3 == 1 ? (char)0xc3 : (char)0xa9;
	big[sizeof(big) - 1] = '\0';
	args = json_pack("{s:s, s:s}", "url", "http://example.com/", "body", big);
	assert_non_null(args);
	full = json_dumps(args, JSON_COMPACT);
	rec.args = args;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.log", dir);
	assert_int_equal(engine_audit_open(path, 0, &a, err, sizeof(err)), 0);
	assert_int_equal(engine_audit_write(a, &rec), 0);
	engine_audit_close(a);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_true(strlen(line) <= AUDIT_LINE_MAX);
	j = json_loads(line, 0, NULL);
	assert_non_null(j);
	x = json_object_get(j, "arguments");
	assert_true(json_is_true(json_object_get(x, "truncated")));
	assert_int_equal(json_integer_value(json_object_get(x, "length")), strlen(full));
	head = json_string_value(json_object_get(x, "head"));
	assert_non_null(head);
	assert_true(strlen(head) > 16384);
	assert_memory_equal(head, full, strlen(head));
	json_decref(j);
	json_decref(args);
	free(full);
	(void)unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* Each connection of the egress proxy is a record of its own under the
 * call that made the sandbox; the ones not kept are counted. */
static void audit_egress_connections(void **state)
{
	char dir[] = "/tmp/cc-audit-XXXXXX", path[64], line[4096], err[256];
	struct engine_audit *a = NULL;
	struct engine_audit_record base = { .request_id = "00112233445566aa",
					    .client = "c",
					    .session = "s1",
					    .action = ACTION_SESSION_EXEC };
	struct egress_event ev[2] = {
		{ .time_ms = 1764000000123ull,
		  .method = "CONNECT",
		  .host = "pypi.org",
		  .port = 443,
		  .address = "151.101.0.223",
		  .status = 200 },
		{ .time_ms = 1764000000456ull,
		  .method = "GET",
		  .host = "evil.example",
		  .port = 80,
		  .status = 403,
		  .why = "'evil.example' (port 80) is not one of the allowed hosts" },
	};
	json_t *j[3];
	FILE *f;
	int n = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.log", dir);
	assert_int_equal(engine_audit_open(path, 0, &a, err, sizeof(err)), 0);
	assert_int_equal(engine_audit_egress(a, &base, ev, 2, 7), 0);
	engine_audit_close(a);
	f = fopen(path, "r");
	assert_non_null(f);
	while (n < 3 && fgets(line, sizeof(line), f))
		assert_non_null(j[n++] = json_loads(line, 0, NULL));
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(json_string_value(json_object_get(j[i], "tool")), "egress");
		assert_string_equal(json_string_value(json_object_get(j[i], "request_id")),
				    "00112233445566aa");
		assert_string_equal(json_string_value(json_object_get(j[i], "session")), "s1");
	}
	assert_string_equal(json_string_value(json_object_get(j[0], "decision")), "allowed");
	assert_string_equal(json_string_value(json_object_get(j[0], "status")), "ok");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j[0], "arguments"), "host")),
		"pypi.org");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j[0], "arguments"), "address")),
		"151.101.0.223");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j[0], "arguments"), "at")),
		"2025-11-24T16:00:00.123Z");
	assert_string_equal(json_string_value(json_object_get(j[1], "decision")), "rejected");
	assert_string_equal(json_string_value(json_object_get(j[1], "rule")), "egress");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j[1], "arguments"),
							    "proxy_status")),
			 403);
	assert_string_equal(json_string_value(json_object_get(j[2], "status")), "dropped");
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(j[2], "arguments"), "count")),
		7);
	for (int i = 0; i < 3; i++)
		json_decref(j[i]);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void regression_one_client_cannot_fill_the_approval_table(void **state)
{
	struct engine_approvals *a = engine_approvals_new();
	json_t *args = json_object();
	char id[APPROVAL_ID_LEN + 1], first[APPROVAL_ID_LEN + 1];

	(void)state;
	assert_int_equal(engine_approvals_per_client(a), APPROVAL_MAX / 8);
	engine_approvals_set_per_client(a, 2);
	assert_int_equal(engine_approval_hold(a, "m", ACTION_RUN, "run", args, 60, first), 0);
	assert_int_equal(engine_approval_hold(a, "m", ACTION_RUN, "run", args, 60, id), 0);
	assert_int_equal(engine_approval_hold(a, "m", ACTION_RUN, "run", args, 60, id), -EDQUOT);
	/* another client is not held up */
	assert_int_equal(engine_approval_hold(a, "c", ACTION_RUN, "run", args, 60, id), 0);
	/* a decided call is no longer pending: room for one more */
	assert_int_equal(engine_approval_decide(a, first, false, "op"), 0);
	assert_int_equal(engine_approval_hold(a, "m", ACTION_RUN, "run", args, 60, id), 0);
	assert_int_equal(engine_approval_hold(a, "m", ACTION_RUN, "run", args, 60, id), -EDQUOT);
	engine_approvals_close(a);
	engine_approvals_free(a);
	json_decref(args);
}

static void approvals_decide_use_and_expire(void **state)
{
	struct engine_approvals *a = engine_approvals_new();
	json_t *args = json_pack("{s:s}", "path", "x"), *other = json_pack("{s:s}", "path", "y");
	char id[APPROVAL_ID_LEN + 1], id2[APPROVAL_ID_LEN + 1];
	json_t *list;

	(void)state;
	assert_int_equal(engine_approval_hold(a, "c", ACTION_DELETE_FILE, "delete x", args, 60, id),
			 0);
	assert_int_equal(engine_approval_use(a, id, "c", ACTION_DELETE_FILE, args),
			 APPROVAL_PENDING);
	/* another client or action: not this approval; other arguments:
	 * this client's, but not for them */
	assert_int_equal(engine_approval_use(a, id, "d", ACTION_DELETE_FILE, args), -ENOENT);
	assert_int_equal(engine_approval_use(a, id, "c", ACTION_WRITE_FILE, args), -ENOENT);
	assert_int_equal(engine_approval_use(a, id, "c", ACTION_DELETE_FILE, other), -ESTALE);
	assert_int_equal(engine_approval_decide(a, id, true, "op"), 0);
	/* approved, then asked for with other arguments: refused, and still
	 * good for the ones it names */
	assert_int_equal(engine_approval_use(a, id, "c", ACTION_DELETE_FILE, other), -ESTALE);
	assert_int_equal(engine_approval_use(a, id, "c", ACTION_DELETE_FILE, NULL), -ESTALE);
	assert_int_equal(engine_approval_decide(a, id, false, "op"), -EALREADY);
	assert_int_equal(engine_approval_use(a, id, "c", ACTION_DELETE_FILE, args),
			 APPROVAL_APPROVED);
	assert_int_equal(engine_approval_use(a, id, "c", ACTION_DELETE_FILE, args), APPROVAL_USED);
	/* a deadline passed: expired, and waiting says so */
	assert_int_equal(
		engine_approval_hold(a, "c", ACTION_DELETE_FILE, "delete x", args, 0.01, id2), 0);
	assert_int_equal(engine_approval_wait(a, id2), APPROVAL_EXPIRED);
	assert_int_equal(engine_approval_decide(a, id2, true, "op"), -EALREADY);
	assert_int_equal(engine_approval_decide(a, "0123456789abcdef", true, "op"), -ENOENT);
	list = engine_approvals_json(a, true);
	assert_int_equal(json_array_size(json_object_get(list, "approvals")), 0);
	json_decref(list);
	engine_approvals_close(a);
	engine_approvals_free(a);
	json_decref(args);
	json_decref(other);
}

/* tools, sql.databases, sql.workspace, sql.writes and [database NAME]:
 * parsed, errors named by line, the connection string never quoted, the
 * 'tools' rule of engine_check. */
static void tool_keys_and_databases(void **state)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "[default]\ntools = shell\n", "line 2: tools: unknown tool 'shell'" },
		{ "[default]\nsql.databases = pg\n", "line 2: sql.databases: no database 'pg'" },
		{ "[default]\nsql.writes = maybe\n", "line 2: sql.writes: expected on or off" },
		{ "[database d]\ndriver = oracle\n",
		  "line 2: driver: expected postgresql or sqlite" },
		{ "[database d]\nconnection = a\ntimeout = 2h\n",
		  "line 3: timeout: expected a duration" },
		{ "[database d]\nconnection = a\nmax_rows = 0\n", "line 3: max_rows: expected" },
		{ "[database d]\nconnection = a\nmax_bytes = 1G\n", "line 3: max_bytes: expected" },
		{ "[database d]\nport = 1\n", "line 2: unknown key 'port' in a database" },
		{ "[database d]\ndriver = sqlite\n", "database 'd' has no 'connection'" },
		{ "[database d]\nconnection = a\n[database d]\n",
		  "line 3: database 'd' is given twice" },
		{ "[database d]\nconnection = password=hunter2\nconnection = password=hunter2\n",
		  "line 3: 'connection' is set twice" },
	};
	static const char good[] = "[default]\n"
				   "tools = sql\n"
				   "sql.databases = pg, lite\n"
				   "approval = sql\n"
				   "[policy none]\n"
				   "sql.writes = on\n"
				   "sql.workspace = off\n"
				   "[database pg]\n"
				   "driver = postgresql\n"
				   "connection = host=/tmp dbname=x password=p#;w  \n"
				   "timeout = 2s\n"
				   "max_rows = 10\n"
				   "max_bytes = 4K\n"
				   "[database lite]\n"
				   "driver = sqlite\n"
				   "writes = on\n"
				   "connection = /var/lib/x.db\n";
	const struct engine_database *pg, *lite;
	struct engine_verdict v = { 0 };
	struct engine_policies *ps;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (engine_policies_parse(bad[i].text, strlen(bad[i].text), &ps, err,
					  sizeof(err)) != -EINVAL)
			fail_msg("'%s' was accepted", bad[i].text);
		if (!strstr(err, bad[i].want))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].text, err, bad[i].want);
		if (strstr(err, "hunter2"))
			fail_msg("'%s': the message quotes the connection string: '%s'",
				 bad[i].text, err);
	}
	ps = parse_ok(good);
	pg = engine_policies_database(ps, "pg");
	lite = engine_policies_database(ps, "lite");
	assert_non_null(pg);
	assert_non_null(lite);
	assert_null(engine_policies_database(ps, "nope"));
	/* '#' and ';' belong to a connection string, not a comment */
	assert_string_equal(pg->conninfo, "host=/tmp dbname=x password=p#;w");
	assert_int_equal(pg->driver, DB_POSTGRESQL);
	assert_false(pg->writes);
	assert_true(pg->timeout_s == 2.0);
	assert_int_equal(pg->max_rows, 10);
	assert_int_equal(pg->max_bytes, 4096);
	assert_int_equal(lite->driver, DB_SQLITE);
	assert_true(lite->writes);
	assert_true(lite->timeout_s == DB_TIMEOUT_DEFAULT_S);
	assert_int_equal(lite->max_rows, DB_MAX_ROWS_DEFAULT);
	assert_int_equal(ps->def.tools, 1u << ACTION_SQL);
	assert_int_equal(ps->def.sql_databases, 3);
	assert_true(ps->def.sql_workspace);
	assert_false(ps->def.sql_writes);
	assert_true(ps->def.approval & (1u << ACTION_SQL));
	assert_true(engine_tool_enabled(&ps->def, engine_tool_find("sql")));
	/* a policy without 'tools' has none, whatever else it sets */
	assert_int_equal(ps->named[0].tools, 0);
	assert_false(engine_tool_enabled(&ps->named[0], engine_tool_find("sql")));
	assert_true(ps->named[0].sql_writes);
	assert_false(ps->named[0].sql_workspace);
	assert_int_equal(ps->named[0].sql_databases, 0);
	/* the rule: approval for [default] (from MCP, where no one can
	 * give it), 'tools' for a policy without the tool */
	assert_int_equal(engine_check_tool(&ps->clients[0], DOOR_MCP, ACTION_SQL, &v), -EPERM);
	assert_string_equal(v.rule, "approval");
	ps->clients[0].policy = &ps->named[0];
	memset(&v, 0, sizeof(v));
	assert_int_equal(engine_check_tool(&ps->clients[0], DOOR_API, ACTION_SQL, &v), -EPERM);
	assert_string_equal(v.rule, "tools");
	assert_non_null(strstr(v.message, "sql tool is not enabled"));
	engine_policies_free(ps);
	/* the built-in default enables no tool */
	ps = engine_policies_new();
	assert_int_equal(ps->def.tools, 0);
	memset(&v, 0, sizeof(v));
	assert_int_equal(engine_check_tool(&ps->clients[0], DOOR_CLI, ACTION_HTTP, &v), -EPERM);
	assert_string_equal(v.rule, "tools");
	engine_policies_free(ps);
}

/* ---- engine/sessions: the lifecycle's pipeline (no kernel needed) ---- */

static int held_cb(void *cls, enum engine_action a, json_t *facts, struct engine_verdict *v,
		   char ret_id[AUDIT_ID_LEN + 1], const char **ret_state)
{
	int *mode = cls;

	(void)a;
	(void)facts;
	(void)v;
	snprintf(ret_id, AUDIT_ID_LEN + 1, "%s", "00112233445566ff");
	*ret_state = *mode == 0 ? "approved" : "pending";
	return *mode == 0 ? 0 : -EINPROGRESS;
}

/* The audit log's lines, one string. */
static char *slurp(const char *path)
{
	static char text[16384];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void sessions_pipeline_refuses_records_and_gives_back(void **state)
{
	struct engine_policies *ps =
		parse_ok("[default]\nlanguages = python\napproval = session_restart\n");
	char dir[] = "/tmp/cc-sess-XXXXXX", path[64], err[256];
	struct engine_session_spec spec = { 0 };
	struct engine_session_error e;
	struct engine_session *s = NULL, *entry;
	struct engine_sessions reg;
	struct engine_audit *a = NULL;
	struct engine_caller cl = { .client = &ps->clients[0], .door = DOOR_API };
	int mode = 1;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.log", dir);
	assert_int_equal(engine_audit_open(path, 0, &a, err, sizeof(err)), 0);
	cl.audit = a;
	assert_int_equal(engine_sessions_init(&reg, 1), 0);
	/* a language the policy does not allow: refused, recorded, and the
	 * reservation and the client's slot given back */
	session_opts_init(&spec.so);
	spec.so.lang = SESSION_BASH;
	assert_int_equal(engine_session_new(&reg, &cl, &spec, &s, &e), -EPERM);
	assert_string_equal(e.verdict.rule, "languages");
	assert_int_equal(e.http, 403);
	assert_null(s);
	assert_int_equal(reg.count + reg.reserved, 0);
	assert_int_equal(ps->clients[0].sessions, 0);
	assert_non_null(strstr(slurp(path), "\"session_create\""));
	/* the registry full: -EBUSY, 429, nothing checked */
	assert_int_equal(engine_sessions_reserve(&reg), 0);
	spec.so.lang = SESSION_PYTHON;
	assert_int_equal(engine_session_new(&reg, &cl, &spec, &s, &e), -EBUSY);
	assert_int_equal(e.http, 429);
	engine_sessions_unreserve(&reg);
	/* an action held for a person: no callback, refused; the callback's
	 * pending and approved answers */
	entry = engine_session_entry_new(0);
	assert_non_null(entry);
	assert_int_equal(strlen(entry->id), ENGINE_SESSION_ID_LEN);
	assert_int_equal(engine_session_check(&cl, entry, ACTION_SESSION_RESTART, &e), -EPERM);
	assert_string_equal(e.verdict.rule, "approval");
	cl.approve = held_cb;
	cl.approve_cls = &mode;
	assert_int_equal(engine_session_check(&cl, entry, ACTION_SESSION_RESTART, &e),
			 -EINPROGRESS);
	assert_string_equal(e.approval_id, "00112233445566ff");
	assert_non_null(strstr(slurp(path), "\"pending\""));
	mode = 0;
	assert_int_equal(engine_session_check(&cl, entry, ACTION_SESSION_RESTART, &e), 0);
	assert_true(e.verdict.approved);
	/* an interrupt is not held: allowed, nothing running */
	{
		bool busy = true;

		assert_int_equal(engine_session_interrupt(&cl, entry, &busy, &e), 0);
		assert_false(busy);
	}
	/* no longer in the registry: close says so */
	assert_false(engine_session_close(&reg, &cl, entry));
	engine_session_unref(entry);
	entry = engine_session_entry_new(16);
	assert_int_equal(strlen(entry->id), 16);
	engine_session_unref(entry);
	engine_sessions_release(&reg);
	engine_audit_close(a);
	(void)unlink(path);
	(void)rmdir(dir);
	engine_policies_free(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_errors_name_the_line),
		cmocka_unit_test(the_sample_parses),
		cmocka_unit_test(rules_limits_languages_network),
		cmocka_unit_test(rules_files_and_approval),
		cmocka_unit_test(rules_projects),
		cmocka_unit_test(rules_counts_and_rate),
		cmocka_unit_test(audit_record_fields),
		cmocka_unit_test(audit_appends_whole_lines_and_rotates),
		cmocka_unit_test(audit_writers_follow_each_others_rotation),
		cmocka_unit_test(audit_keeps_the_head_of_long_arguments),
		cmocka_unit_test(audit_egress_connections),
		cmocka_unit_test(approvals_decide_use_and_expire),
		cmocka_unit_test(regression_one_client_cannot_fill_the_approval_table),
		cmocka_unit_test(tool_keys_and_databases),
		cmocka_unit_test(sessions_pipeline_refuses_records_and_gives_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
