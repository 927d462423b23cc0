/* Fork: the source's kernel serializes its state while a kernel for the
 * copy is taken from the pool, then the copy's restores it once the
 * workspace is copied.  Python sessions only. */
#include "session/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/workspace.h"
#include "util/buf.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* "name (why); ..." of a {"name": "why"} object, appended to b;
 * *first is cleared once something is. */
static void list_skipped(struct buf *b, json_t *skipped, bool *first)
{
	const char *name;
	json_t *why;

	json_object_foreach (skipped, name, why) {
		(void)buf_printf(b, "%s%s (%s)", *first ? "" : "; ", name,
				 json_string_value(why) ? json_string_value(why) : "?");
		*first = false;
	}
}

/* The copy's kernel, new from the pool, restores a sample of the
 * template's into nothing while the source serializes: the pages a
 * restore touches are then copied from the template's (a first restore
 * costs ~1.5 ms more than the next one).  Its answer is not waited for:
 * the restore's exchange skips it (another id).  A kernel the pool
 * warmed ahead (POOL_WARM) has done it already. */
static void warm_child(struct session *child)
{
	int id;

	if (child->kind != KERNEL_CELL || child->warmed)
		return;
	id = ++child->next_id;
	(void)session_send_json(child, json_pack("{s:s, s:i}", "op", "warm", "id", id));
}

/* The source's half of a fork: its kernel serializes the state while
 * this thread takes a kernel for the copy from the pool (its session in
 * *ret_child, at the control weight already: no code of the session has
 * run there, and the weight is set off the restore's path), so that
 * neither waits for the other.  The source stays at the control weight
 * when this succeeds: fork_restore lowers it.  *ret_snap: the
 * kernel's answer.  The message says what failed. */
static int fork_snapshot(struct session *s, const struct session_opts *o, json_t **ret_snap,
			 struct session **ret_child, char **ret_message)
{
	struct session *child = NULL;
	struct sandbox_exit e;
	struct exchange x;
	json_t *snap = NULL;
	char *new_msg = NULL;
	int id = ++s->next_id, r, k = -EIO;

	(void)sandbox_set_cpu_weight(s->sb, CONTROL_CPU_WEIGHT);
	r = session_exchange_init(&x, s, id, -1, -1);
	if (r == 0)
		r = session_send_json(s, json_pack("{s:s, s:i}", "op", "snapshot", "id", id));
	if (r == 0) {
		k = session_start(o, true, &child, &new_msg);
		if (k == 0) {
			(void)sandbox_set_cpu_weight(child->sb, CONTROL_CPU_WEIGHT);
			warm_child(child);
		}
		/* the answer is read whatever became of the take: it must not
		 * be left for the source's next request */
		r = session_pump(s, &x, SESSION_FORK_TIMEOUT_S, NULL, &e);
		if (r == 0 && !x.finished)
			r = -EIO;
	}
	if (r == 0 && !json_is_string(json_object_get(x.answer, "data")))
		r = -EIO; /* the kernel answered with an error */
	if (r == 0)
		snap = json_incref(x.answer);
	session_exchange_release(&x);
	if (r < 0) {
		if (asprintf(ret_message,
			     "cannot fork: the kernel did not hand over its state (%s)",
			     strerror(-r)) < 0)
			*ret_message = NULL;
	} else if (k < 0) {
		r = k;
		*ret_message = TAKE_PTR(new_msg);
		if (!*ret_message && asprintf(ret_message, "cannot fork: %s", strerror(-k)) < 0)
			*ret_message = NULL;
	}
	free(new_msg);
	if (r < 0) {
		(void)sandbox_set_cpu_weight(s->sb, 0);
		session_free(child);
		json_decref(snap);
		return r;
	}
	*ret_snap = snap;
	*ret_child = child;
	return 0;
}

/* The copy's half: the restore is sent first, and the workspace copied
 * while the copy's kernel wakes up to read it; the kernel runs no code of
 * the state (reconstructors, __setstate__, imports of the session's own
 * modules, which may read the workspace) before "go", sent once the copy
 * is complete, which it usually finds waiting.  The source goes back to
 * the default weight first (what the session left running in the
 * background has the control weight only while the kernel works for the
 * fork).  A restore answered with an error (the state refused as a
 * whole; a name it could not take is in "skipped") fails the fork.
 * *ret_done: the kernel's answer. */
static int fork_restore(struct session *s, struct session *child, json_t *snap, json_t **ret_done,
			char **ret_message)
{
	struct ws_owner own = { .chown = geteuid() == 0 };
	struct sandbox_exit e;
	struct exchange x;
	int id = ++child->next_id, r;
	const char *what = "cannot fork", *status;

	*ret_message = NULL;
	/* before the send, which blocks while the kernel reads a large
	 * state: the source's weight must not outlast the fork's work */
	(void)sandbox_set_cpu_weight(s->sb, 0);
	r = session_exchange_init(&x, child, id, -1, -1);
	if (r == 0)
		r = session_send_json(child,
				      json_pack("{s:s, s:i, s:O, s:b}", "op", "restore", "id", id,
						"data", json_object_get(snap, "data"), "wait", 1));
	if (r == 0) {
		child->filled = true;
		sandbox_workspace_owner(child->sb, &own.uid, &own.gid);
		r = ws_copy_between(sandbox_workspace_fd(s->sb), sandbox_workspace_fd(child->sb),
				    &own);
		if (r < 0)
			what = "cannot fork: the workspace was not copied";
	}
	if (r == 0)
		r = session_send_json(child, json_pack("{s:s, s:i}", "op", "go", "id", id));
	if (r == 0)
		r = session_pump(child, &x, SESSION_FORK_TIMEOUT_S, NULL, &e);
	if (r == 0 && !x.finished)
		r = -EIO;
	status = r == 0 ? json_string_value(json_object_get(x.answer, "status")) : NULL;
	if (r == 0 && (!status || strcmp(status, "ok") != 0)) {
		/* the state as a whole was refused (what one name could not
		 * take is in "skipped", with status ok) */
		const char *why = json_string_value(json_object_get(x.error, "value"));

		r = -EIO;
		if (asprintf(ret_message,
			     "cannot fork: the new kernel did not take the state over (%s)",
			     why ? why : "no reason given") < 0)
			*ret_message = NULL;
	}
	if (r == 0 && ret_done)
		*ret_done = json_incref(x.answer);
	session_exchange_release(&x);
	(void)sandbox_set_cpu_weight(child->sb, 0);
	if (r < 0 && !*ret_message && asprintf(ret_message, "%s: %s", what, strerror(-r)) < 0)
		*ret_message = NULL;
	return r;
}

int session_fork(struct session *s, struct session **ret, char **ret_message)
{
	struct session_opts o = s->opts;
	struct session *child = NULL;
	json_t *snap = NULL, *done = NULL;
	struct buf msg;
	int r;

	*ret_message = NULL;
	if (s->project) {
		*ret_message =
			strdup("a session with a project cannot be forked: its changes would "
			       "have two owners; apply or discard them in this one");
		return -EOPNOTSUPP;
	}
	if (s->opts.lang != SESSION_PYTHON) {
		*ret_message = strdup("fork is for Python sessions");
		return -EOPNOTSUPP;
	}
	if (!s->sb)
		return -ESRCH;
	o.env = (const char *const *)s->env;
	o.egress = s->egress;
	o.preload = s->preload;
	o.files = NULL;
	o.workspace_dir = NULL; /* the fork's workspace stays its own */
	o.pool = s->pool;
	r = fork_snapshot(s, &o, &snap, &child, ret_message);
	if (r < 0)
		return r;
	r = fork_restore(s, child, snap, &done, ret_message);
	if (r < 0) {
		session_free(child);
		json_decref(snap);
		json_decref(done);
		return r;
	}
	{
		bool none = true;

		buf_init(&msg, 65536);
		(void)buf_puts(&msg, "not copied to the fork: ");
		list_skipped(&msg, json_object_get(snap, "skipped"), &none);
		list_skipped(&msg, json_object_get(done, "skipped"), &none);
		if (!none)
			*ret_message = buf_detach(&msg, NULL);
		buf_release(&msg);
	}
	json_decref(snap);
	json_decref(done);
	child->last_used_ns = now_ns();
	*ret = child;
	return 0;
}
