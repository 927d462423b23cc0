/* Cells of the E2B door's helper (kernels/e2b_helper.py), run in a
 * sandbox's own kernel: other contexts and commands go through them, so
 * they run in the same sandbox, under the same limits, and see the same
 * files as the sandbox's main context. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/internal.h"
#include "engine/engine.h"
#include "kernels.h"
#include "util/banned.h"

/* Not ENSURE_ASCII: a character beyond the BMP would become a pair of
 * \u escapes, which Python reads as two lone surrogates. */
#define LITERAL_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY)

/* JSON's strings, numbers, arrays and objects of them are Python
 * literals as they stand (true, false and null are not: callers pass
 * none). */
char *e2b_py_literal(const json_t *v)
{
	return json_dumps(v, LITERAL_FLAGS);
}

char *e2b_helper_cell(const char *call)
{
	json_t *src = json_stringn(kernel_e2b_helper_py, kernel_e2b_helper_py_len);
	char *lit = src ? json_dumps(src, LITERAL_FLAGS) : NULL, *code = NULL;

	json_decref(src);
	if (!lit)
		return NULL;
	if (asprintf(
		    &code,
		    "if not hasattr(__import__('builtins'), '_codecell_e2b'):\n"
		    "    exec(compile(%s, '<codecell-e2b>', 'exec'), {'__name__': '_codecell_e2b'})\n"
		    "__import__('builtins')._codecell_e2b.%s",
		    lit, call) < 0)
		code = NULL;
	free(lit);
	return code;
}

int e2b_cell(struct engine_session *e, const char *code, double timeout_s, struct run_result *res)
{
	struct session_exec_opts eo = {
		.timeout_s = timeout_s,
		.live_stdout = -1,
		.live_stderr = -1,
		.stop_fd = e->stop_r,
		.hangup_fd = -1,
	};
	int r;

	memset(res, 0, sizeof(*res));
	pthread_mutex_lock(&e->lock);
	engine_session_drain(e);
	if (!e->s || __atomic_load_n(&e->dying, __ATOMIC_SEQ_CST)) {
		pthread_mutex_unlock(&e->lock);
		return -ESRCH;
	}
	__atomic_store_n(&e->busy, 1, __ATOMIC_RELAXED);
	r = engine_session_exec(e->s, code, strlen(code), &eo, res);
	__atomic_store_n(&e->busy, 0, __ATOMIC_RELAXED);
	engine_session_touch(e);
	if (r == 0 && res->restarted)
		engine_session_note_preload(e);
	pthread_mutex_unlock(&e->lock);
	return r;
}

const char *e2b_cell_text(const struct run_result *res)
{
	for (size_t i = 0; i < json_array_size(res->results); i++) {
		const json_t *b = json_array_get(res->results, i);

		if (json_is_true(json_object_get(b, "is_main_result")))
			return json_string_value(json_object_get(b, "text/plain"));
	}
	return NULL;
}
