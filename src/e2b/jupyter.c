/* The code interpreter's routes (E2b-Sandbox-Port 49999): POST /execute,
 * streamed as E2B's NDJSON through exec.c, and /contexts.
 *
 * The default Python context is the sandbox's kernel itself: its code
 * goes to the session as it is.  Other contexts run through the helper
 * in that kernel (e2b_helper.py): Python ones in a namespace of their
 * own, JavaScript ones in a node process each, bash ones as a bash run
 * per call; all in the same sandbox, seeing the same files. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "e2b/internal.h"
#include "http/exec.h"
#include "http/metrics.h"
#include "http/policy.h"
#include "util/envname.h"
#include "util/timeutil.h"
#include "util/banned.h"

static int lang_parse(const char *s, enum e2b_lang *ret)
{
	if (!strcmp(s, "python") || !strcmp(s, "py") || !strcmp(s, "python3"))
		*ret = E2B_PYTHON;
	else if (!strcmp(s, "javascript") || !strcmp(s, "js") || !strcmp(s, "node"))
		*ret = E2B_JAVASCRIPT;
	else if (!strcmp(s, "bash") || !strcmp(s, "sh"))
		*ret = E2B_BASH;
	else
		return -EINVAL;
	return 0;
}

static const char *lang_name(enum e2b_lang l)
{
	return l == E2B_PYTHON ? "python" : l == E2B_JAVASCRIPT ? "javascript" : "bash";
}

static json_t *ctx_json(const struct e2b_ctx *x)
{
	return json_pack("{s:s, s:s, s:s}", "id", x->id, "language", lang_name(x->lang), "cwd",
			 x->cwd);
}

/* Under the state lock: a new context in sb. */
static struct e2b_ctx *ctx_add(struct e2b_sandbox *sb, enum e2b_lang lang, const char *cwd,
			       struct api_error *e)
{
	struct e2b_ctx *x;
	unsigned char rnd[E2B_CTX_ID_LEN / 2];

	if (sb->n_ctx == E2B_CTX_MAX) {
		api_error_set(e, 429, "too_many_contexts",
			      "the sandbox has %d contexts, the most it may: delete one first",
			      E2B_CTX_MAX);
		return NULL;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		api_error_set(e, 500, "internal", "no random bytes for the context's id");
		return NULL;
	}
	x = &sb->ctx[sb->n_ctx++];
	memset(x, 0, sizeof(*x));
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(x->id + 2 * i, 3, "%02x", rnd[i]);
	x->lang = lang;
	snprintf(x->cwd, sizeof(x->cwd), "%s", cwd);
	return x;
}

static struct e2b_ctx *ctx_find(struct e2b_sandbox *sb, const char *id)
{
	for (unsigned i = 0; i < sb->n_ctx; i++)
		if (!strcmp(sb->ctx[i].id, id))
			return &sb->ctx[i];
	return NULL;
}

/* The first context of a language, made if there is none (E2B runs
 * runCode(code, {language}) in that language's default context). */
static struct e2b_ctx *ctx_of_lang(struct e2b_sandbox *sb, enum e2b_lang lang, struct api_error *e)
{
	for (unsigned i = 0; i < sb->n_ctx; i++)
		if (sb->ctx[i].lang == lang)
			return &sb->ctx[i];
	return ctx_add(sb, lang, SANDBOX_HOME, e);
}

static int opt_string(json_t *body, const char *name, const char **ret, struct api_error *e)
{
	json_t *v = json_object_get(body, name);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return api_error_set(e, 400, "invalid_type", "'%s' must be a string (without NUL)",
				     name);
	*ret = json_string_value(v);
	return 0;
}

/* The cell for code in context x: the code itself in the main context,
 * else a call of the helper. */
static char *cell_code(const struct e2b_ctx *x, const char *code, json_t *env)
{
	static const char *const fn[] = { "py", "js", "sh" };
	json_t *jcode = json_string(code), *jcwd = json_string(x->cwd), *jctx = json_string(x->id);
	char *lc = e2b_py_literal(jcode), *lcwd = e2b_py_literal(jcwd),
	     *lctx = e2b_py_literal(jctx);
	char *le = env ? e2b_py_literal(env) : strdup("None");
	char *call = NULL, *cell = NULL;

	if (x->main && !env) {
		cell = strdup(code);
	} else if (lc && lcwd && lctx && le) {
		int k = x->lang == E2B_BASH ? asprintf(&call, "sh(%s, %s, %s)", lc, le, lcwd)
					    : asprintf(&call, "%s(%s, %s, %s, %s)", fn[x->lang],
						       x->main ? "None" : lctx, lc, le, lcwd);

		if (k < 0)
			call = NULL;
		cell = call ? e2b_helper_cell(call) : NULL;
	}
	free(call);
	free(lc);
	free(lcwd);
	free(lctx);
	free(le);
	json_decref(jcode);
	json_decref(jcwd);
	json_decref(jctx);
	return cell;
}

/* env_vars: an object of strings. */
static int opt_env(json_t *body, json_t **ret, struct api_error *e)
{
	json_t *o = json_object_get(body, "env_vars"), *v;
	const char *k;

	*ret = NULL;
	if (!o || json_is_null(o) || (json_is_object(o) && json_object_size(o) == 0))
		return 0;
	if (!json_is_object(o))
		return api_error_set(e, 400, "invalid_type",
				     "'env_vars' must be an object of strings");
	json_object_foreach (o, k, v)
		if (!json_is_string(v) || env_name_check(k, strlen(k), ENV_NAME_ANY) < 0)
			return api_error_set(
				e, 400, "invalid_value",
				"env_vars '%.64s': names without '=' of 1 to %d bytes, values strings",
				k, ENV_NAME_MAX);
	*ret = o;
	return 0;
}

enum MHD_Result e2b_handle_execute(struct api_call *c)
{
	struct e2b_state *st = e2b_state_of(c->srv);
	const char *code, *ctx_id, *lang_s;
	enum e2b_lang lang = E2B_PYTHON;
	struct api_request req;
	struct api_error e;
	struct engine_session *entry = NULL;
	struct e2b_sandbox *sb;
	struct e2b_ctx *x = NULL;
	enum MHD_Result ret;
	json_t *body = e2b_body(c, &e), *env = NULL;
	char *cell = NULL;

	if (!body)
		return api_respond_error(c, &e);
	if (opt_string(body, "code", &code, &e) < 0 ||
	    opt_string(body, "context_id", &ctx_id, &e) < 0 ||
	    opt_string(body, "language", &lang_s, &e) < 0 || opt_env(body, &env, &e) < 0)
		goto fail;
	if (!code) {
		api_error_set(&e, 400, "missing_field", "'code' is required");
		goto fail;
	}
	if (lang_s && lang_parse(lang_s, &lang) < 0) {
		api_error_set(&e, 400, "invalid_value",
			      "language '%.64s' is not served: python, javascript or bash", lang_s);
		goto fail;
	}
	pthread_mutex_lock(&st->lock);
	sb = e2b_find_seen(c, e2b_of(c)->id);
	if (!sb)
		api_error_set(
			&e, 502, "sandbox_not_found",
			"the sandbox '%s' was not found: it was killed or its timeout ran out",
			e2b_of(c)->id);
	else if (ctx_id && !(x = ctx_find(sb, ctx_id)))
		api_error_set(&e, 404, "context_not_found", "context '%.64s' not found", ctx_id);
	else if (!ctx_id)
		x = ctx_of_lang(sb, lang, &e);
	if (x) {
		lang = x->lang;
		entry = sb->entry;
		engine_session_ref(entry);
		e2b_of(c)->count = ++sb->executions;
		cell = cell_code(x, code, env);
	}
	pthread_mutex_unlock(&st->lock);
	if (!x)
		goto fail;
	json_decref(body);
	if (!cell) {
		engine_session_unref(entry);
		return api_respond_errorf(c, 500, "internal", "out of memory");
	}
	memset(&req, 0, sizeof(req));
	req.code = cell;
	req.code_len = strlen(cell);
	/* the policy checks the context's language, not the kernel's */
	req.set |= API_SET_LANG;
	req.lang = lang == E2B_PYTHON	    ? LANG_PYTHON
		   : lang == E2B_JAVASCRIPT ? LANG_JAVASCRIPT
					    : LANG_BASH;
	c->wants_ndjson = true;
	ret = api_exec(c, entry, &req); /* takes req */
	api_request_release(&req);
	engine_session_unref(entry);
	return ret;
fail:
	json_decref(body);
	return api_respond_error(c, &e);
}

/* ---- /contexts ---- */

static enum MHD_Result ctx_create(struct api_call *c)
{
	struct e2b_state *st = e2b_state_of(c->srv);
	const char *lang_s, *cwd;
	enum e2b_lang lang = E2B_PYTHON;
	struct api_route r;
	struct api_error e;
	struct e2b_sandbox *sb;
	struct e2b_ctx *x = NULL;
	json_t *body = e2b_body(c, &e), *j = NULL;

	if (!body)
		return api_respond_error(c, &e);
	if (opt_string(body, "language", &lang_s, &e) < 0 || opt_string(body, "cwd", &cwd, &e) < 0)
		goto fail;
	if (lang_s && lang_parse(lang_s, &lang) < 0) {
		api_error_set(&e, 400, "invalid_value",
			      "language '%.64s' is not served: python, javascript or bash", lang_s);
		goto fail;
	}
	/* the cwd must be in the workspace, as every path here */
	if (cwd && e2b_path(cwd, &r, &e) < 0)
		goto fail;
	pthread_mutex_lock(&st->lock);
	sb = e2b_find_seen(c, e2b_of(c)->id);
	if (!sb)
		api_error_set(&e, 502, "sandbox_not_found", "the sandbox '%s' was not found",
			      e2b_of(c)->id);
	else if ((x = ctx_add(sb, lang, SANDBOX_HOME, &e)))
		e2b_abs_path(cwd ? r.path : "", x->cwd, sizeof(x->cwd));
	if (x)
		j = ctx_json(x);
	pthread_mutex_unlock(&st->lock);
	if (!x)
		goto fail;
	json_decref(body);
	return api_respond_json(c, 200, j);
fail:
	json_decref(body);
	return api_respond_error(c, &e);
}

/* Drop another context's state in the helper (its namespace, its node
 * process). */
static int forget_ctx(struct engine_session *e, const char *id)
{
	json_t *jid = json_string(id);
	char *lit = e2b_py_literal(jid), *call = NULL, *cell = NULL;
	struct run_result res;
	int r = -ENOMEM;

	json_decref(jid);
	if (lit && asprintf(&call, "restart(%s)", lit) >= 0 && (cell = e2b_helper_cell(call))) {
		r = e2b_cell(e, cell, 30, &res);
		if (r == 0)
			run_result_release(&res);
	}
	free(lit);
	free(call);
	free(cell);
	return r;
}

enum MHD_Result e2b_handle_contexts(struct api_call *c)
{
	struct e2b_state *st = e2b_state_of(c->srv);
	enum e2b_route route = e2b_of(c)->route;
	struct engine_session *entry = NULL;
	struct e2b_sandbox *sb;
	struct e2b_ctx *x = NULL;
	bool main = false;
	json_t *arr = NULL;
	int r;

	if (route == E2B_R_CTX_CREATE)
		return ctx_create(c);
	pthread_mutex_lock(&st->lock);
	sb = e2b_find_seen(c, e2b_of(c)->id);
	if (sb && route == E2B_R_CTX_LIST) {
		arr = json_array();
		for (unsigned i = 0; i < sb->n_ctx; i++)
			json_array_append_new(arr, ctx_json(&sb->ctx[i]));
	} else if (sb && (x = ctx_find(sb, e2b_of(c)->ctx))) {
		main = x->main;
		entry = sb->entry;
		engine_session_ref(entry);
		if (route == E2B_R_CTX_DELETE && !main) {
			*x = sb->ctx[--sb->n_ctx];
			memset(&sb->ctx[sb->n_ctx], 0, sizeof(sb->ctx[0]));
		}
	}
	pthread_mutex_unlock(&st->lock);
	if (!sb)
		return api_respond_errorf(
			c, 502, "sandbox_not_found",
			"the sandbox '%s' was not found: it was killed or its timeout ran out",
			e2b_of(c)->id);
	if (arr)
		return api_respond_json(c, 200, arr);
	if (!x)
		return api_respond_errorf(c, 404, "context_not_found", "context '%s' not found",
					  e2b_of(c)->ctx);
	if (route == E2B_R_CTX_DELETE && main) {
		engine_session_unref(entry);
		return api_respond_errorf(
			c, 400, "invalid_value",
			"the default Python context cannot be deleted (kill the sandbox, or restart the context)");
	}
	/* restarting the default context restarts the kernel: POST
	 * /v1/sessions/{id}/restart's pipeline */
	if (main) {
		struct engine_session_error err;
		struct engine_caller cl;
		uint64_t t0;

		api_caller(c, &cl);
		t0 = now_ns();
		r = engine_session_restart(&cl, entry, &err);
		if (r == 0)
			api_metrics_session_op(&c->srv->metrics, API_OP_RESTART, t0);
		engine_session_unref(entry);
		if (r == -EPERM || r == -EINPROGRESS)
			return api_session_refused(c, &cl, r, &err);
	} else {
		r = forget_ctx(entry, e2b_of(c)->ctx);
		engine_session_unref(entry);
	}
	if (r == -ESRCH)
		return api_respond_errorf(c, 502, "sandbox_not_found",
					  "the sandbox '%s' was killed", e2b_of(c)->id);
	if (r < 0)
		return api_respond_errorf(c, 500, "restart_failed",
					  "cannot restart the context: %s", strerror(-r));
	return e2b_respond_empty(c, 204);
}
