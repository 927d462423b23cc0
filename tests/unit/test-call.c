/* engine/call: the one pipeline and the one approval loop, driven with a
 * fake approve callback (how a person decides is a door's) and a fake
 * operation that leaves a mark in the audit file, so that the order of
 * the operation and its record shows. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/audit.h"
#include "engine/call.h"
#include "engine/policy.h"
#include "engine/tool.h"

#define APPROVAL "00112233445566ff"
#define APPROVED_AS "\"approval\":{\"id\":\"" APPROVAL "\""
#define MARK "{\"operation\": \"ran\"}\n"

enum decision { APPROVED, DENIED, PENDING };

/* A door's person, as the engine sees it. */
struct person {
	enum decision says;
	unsigned asked;
	enum engine_action action;
	char facts[256];
};

static int person_decides(void *cls, enum engine_action a, json_t *facts, struct engine_verdict *v,
			  char ret_id[AUDIT_ID_LEN + 1], const char **ret_state)
{
	struct person *p = cls;
	char *text = facts ? json_dumps(facts, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	p->asked++;
	p->action = a;
	snprintf(p->facts, sizeof(p->facts), "%s", text ? text : "");
	free(text);
	snprintf(ret_id, AUDIT_ID_LEN + 1, "%s", APPROVAL);
	if (p->says == APPROVED) {
		*ret_state = "approved";
		return 0;
	}
	if (p->says == PENDING) {
		*ret_state = "pending";
		return -EINPROGRESS;
	}
	*ret_state = "denied";
	snprintf(v->message, sizeof(v->message), "a person denied approval '%s'", APPROVAL);
	return -EPERM;
}

struct fixture {
	char dir[32], path[64];
	struct engine_policies *ps;
	struct engine_audit *audit;
	struct engine_caller cl;
	struct person person;
	unsigned ran;
};

static struct fixture *fixture_new(const char *policy)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/cc-call-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/audit.log", f->dir);
	assert_int_equal(engine_policies_parse(policy, strlen(policy), &f->ps, err, sizeof(err)),
			 0);
	assert_int_equal(engine_audit_open(f->path, 0, &f->audit, err, sizeof(err)), 0);
	f->cl.client = &f->ps->clients[0];
	f->cl.door = DOOR_API;
	f->cl.audit = f->audit;
	f->cl.approve = person_decides;
	f->cl.approve_cls = &f->person;
	return f;
}

static void fixture_free(struct fixture *f)
{
	engine_audit_close(f->audit);
	engine_policies_free(f->ps);
	(void)unlink(f->path);
	(void)rmdir(f->dir);
	free(f);
}

/* The audit file as text (its records, and the operation's mark). */
static const char *audit_text(const struct fixture *f)
{
	static char text[32768];
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	assert_true(n >= 0);
	text[n] = '\0';
	return text;
}

/* The operation: a mark appended to the audit file, and a result. */
static int fake_run(void *cls, struct run_request *rq, struct run_result *ret)
{
	struct fixture *f = cls;
	int fd = open(f->path, O_WRONLY | O_APPEND | O_CLOEXEC);

	(void)rq;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, MARK, strlen(MARK)), (ssize_t)strlen(MARK));
	close(fd);
	f->ran++;
	memset(ret, 0, sizeof(*ret));
	ret->status = RESULT_OK;
	return 0;
}

static int call_run(struct fixture *f, struct run_result *res, struct engine_session_error *err)
{
	struct run_request rq;

	run_request_init(&rq);
	rq.code = "print(1)";
	rq.code_len = strlen(rq.code);
	return engine_call_run(&f->cl, &rq, 0, false, fake_run, f, res, err);
}

/* A run the policy holds for a person who says says (ask false: no
 * callback at all), returning want; run only when approved. */
static struct fixture *held_run(enum decision says, bool ask, int want, struct run_result *res,
				struct engine_session_error *err)
{
	struct fixture *f = fixture_new("[default]\nlanguages = python\napproval = run\n");

	f->person.says = says;
	if (!ask)
		f->cl.approve = NULL;
	memset(res, 0, sizeof(*res));
	assert_int_equal(call_run(f, res, err), want);
	assert_int_equal(f->person.asked, ask ? 1 : 0);
	assert_int_equal(f->ran, ask && says == APPROVED ? 1 : 0);
	return f;
}

static void approved_runs_and_its_record_names_the_approval(void **state)
{
	struct engine_session_error err;
	struct run_result res;
	struct fixture *f = held_run(APPROVED, true, 0, &res, &err);
	const char *text, *mark, *rec;

	(void)state;
	assert_int_equal(f->person.action, ACTION_RUN);
	assert_int_equal(res.status, RESULT_OK);
	assert_true(err.verdict.approved);
	/* one record, after the operation, naming the approval */
	text = audit_text(f);
	mark = strstr(text, MARK);
	rec = strstr(text, APPROVED_AS);
	assert_non_null(mark);
	assert_non_null(rec);
	assert_true(mark < rec);
	assert_non_null(strstr(rec, "\"approved\""));
	assert_null(strstr(rec + 1, "\"approval\":{"));
	assert_null(strstr(text, "\"pending\""));
	run_result_release(&res);
	fixture_free(f);
}

static void denied_is_not_run_and_the_refusal_is_recorded(void **state)
{
	struct engine_session_error err;
	struct run_result res;
	/* a refusal is a result, naming the rule */
	struct fixture *f = held_run(DENIED, true, 0, &res, &err);
	const char *text;

	(void)state;
	assert_int_equal(res.status, RESULT_REJECTED);
	assert_string_equal(err.verdict.rule, "approval");
	assert_string_equal(err.code, "rejected");
	assert_int_equal(err.http, 403);
	assert_non_null(strstr(err.message, "a person denied approval"));
	text = audit_text(f);
	assert_null(strstr(text, MARK));
	assert_non_null(strstr(text, "\"rejected\""));
	assert_non_null(strstr(text, "\"denied\""));
	assert_non_null(strstr(text, APPROVED_AS));
	run_result_release(&res);
	fixture_free(f);
}

static void pending_runs_nothing(void **state)
{
	struct engine_session_error err;
	struct run_result res;
	struct fixture *f = held_run(PENDING, true, -EINPROGRESS, &res, &err);
	const char *text;

	(void)state;
	assert_string_equal(err.approval_id, APPROVAL);
	assert_string_equal(err.code, "pending");
	assert_int_equal(err.http, 202);
	text = audit_text(f);
	assert_null(strstr(text, MARK));
	assert_non_null(strstr(text, "\"pending\""));
	/* and again: nothing was kept from the first */
	assert_int_equal(call_run(f, &res, &err), -EINPROGRESS);
	fixture_free(f);
}

static void no_callback_is_refused(void **state)
{
	struct engine_session_error err;
	struct run_result res;
	/* the CLI, MCP: nobody to ask */
	struct fixture *f = held_run(APPROVED, false, 0, &res, &err);

	(void)state;
	assert_int_equal(res.status, RESULT_REJECTED);
	assert_string_equal(err.verdict.rule, "approval");
	assert_non_null(strstr(audit_text(f), "\"rejected\""));
	assert_null(strstr(audit_text(f), MARK));
	run_result_release(&res);
	fixture_free(f);
}

/* engine_call_check alone: the loop checks an approved call again (the
 * other rules still hold), records nothing for an allowed call, and
 * engine_call_end's record comes after the operation. */
static int counting_check(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	unsigned *calls = arg;

	(*calls)++;
	return engine_check_action(cl->client, cl->door, ACTION_SESSION_RESTART, SESSION_PYTHON, v);
}

static void check_then_end(void **state)
{
	struct fixture *f = fixture_new("[default]\napproval = session_restart\n");
	struct engine_audit_record rec = { .action = ACTION_SESSION_RESTART, .session = "s1" };
	struct engine_approval_note an;
	struct engine_session_error err;
	struct run_result res = { .status = RESULT_OK };
	unsigned calls = 0;
	const char *text;

	(void)state;
	f->person.says = APPROVED;
	assert_int_equal(engine_call_check(&f->cl, &rec, counting_check, &calls, NULL, &an, &err),
			 0);
	assert_int_equal(calls, 2);
	assert_string_equal(an.id, APPROVAL);
	assert_string_equal(audit_text(f), "");
	assert_int_equal(fake_run(f, NULL, &res), 0);
	engine_call_end(&f->cl, &rec, &an, &res, 0, NULL);
	text = audit_text(f);
	assert_true(strstr(text, MARK) < strstr(text, APPROVED_AS));
	/* no policy: nothing checked, nobody asked */
	f->cl.client = NULL;
	f->person.asked = 0;
	calls = 0;
	assert_int_equal(engine_call_check(&f->cl, &rec, counting_check, &calls, NULL, &an, &err),
			 0);
	assert_int_equal(calls, 0);
	assert_int_equal(f->person.asked, 0);
	fixture_free(f);
}

/* Tools take the same loop: what the person approves is the tool's
 * arguments. */
static void tools_take_the_same_loop(void **state)
{
	struct fixture *f = fixture_new("[default]\ntools = sql\napproval = sql\n");
	json_t *args = json_pack("{s:s, s:s}", "database", "app.db", "query", "select 1");
	struct engine_tool_request rq = { .name = "sql", .args = args };
	struct engine_session_error err;
	struct engine_tool_ctx ctx;
	json_t *res = NULL;

	(void)state;
	engine_tool_ctx_init(&ctx);
	f->person.says = PENDING;
	assert_int_equal(engine_tool_call(&f->cl, &ctx, &rq, &res, &err), -EINPROGRESS);
	assert_int_equal(f->person.action, ACTION_SQL);
	assert_string_equal(f->person.facts, "{\"database\":\"app.db\",\"query\":\"select 1\"}");
	assert_string_equal(err.approval_id, APPROVAL);
	assert_int_equal(err.http, 202);
	assert_non_null(strstr(audit_text(f), "\"pending\""));
	f->person.says = DENIED;
	assert_int_equal(engine_tool_call(&f->cl, &ctx, &rq, &res, &err), -EPERM);
	assert_int_equal(err.http, 403);
	assert_non_null(strstr(err.message, "a person denied"));
	f->cl.approve = NULL;
	assert_int_equal(engine_tool_call(&f->cl, &ctx, &rq, &res, &err), -EPERM);
	assert_string_equal(err.verdict.rule, "approval");
	assert_null(res);
	json_decref(args);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(approved_runs_and_its_record_names_the_approval),
		cmocka_unit_test(denied_is_not_run_and_the_refusal_is_recorded),
		cmocka_unit_test(pending_runs_nothing),
		cmocka_unit_test(no_callback_is_refused),
		cmocka_unit_test(check_then_end),
		cmocka_unit_test(tools_take_the_same_loop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
