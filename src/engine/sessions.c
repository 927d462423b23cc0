/* The sessions a server holds: a fixed table of --max-sessions slots,
 * reference-counted entries, and the stop pipe through which executions
 * are interrupted from other threads; and their lifecycle (sessions.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "engine/sessions.h"
#include "engine/changes.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

int engine_sessions_init(struct engine_sessions *reg, unsigned max)
{
	memset(reg, 0, sizeof(*reg));
	reg->slots = calloc(max, sizeof(*reg->slots));
	if (!reg->slots)
		return -ENOMEM;
	reg->max = max;
	reg->id_len = ENGINE_SESSION_ID_LEN;
	pthread_mutex_init(&reg->lock, NULL);
	return 0;
}

void engine_sessions_release(struct engine_sessions *reg)
{
	free(reg->slots);
	pthread_mutex_destroy(&reg->lock);
}

int engine_sessions_reserve(struct engine_sessions *reg)
{
	int r = -EBUSY;

	pthread_mutex_lock(&reg->lock);
	if (reg->count + reg->reserved < reg->max) {
		reg->reserved++;
		r = 0;
	}
	pthread_mutex_unlock(&reg->lock);
	return r;
}

void engine_sessions_unreserve(struct engine_sessions *reg)
{
	pthread_mutex_lock(&reg->lock);
	reg->reserved--;
	pthread_mutex_unlock(&reg->lock);
}

void engine_sessions_add(struct engine_sessions *reg, struct engine_session *e)
{
	engine_session_ref(e);
	pthread_mutex_lock(&reg->lock);
	for (unsigned i = 0; i < reg->max; i++)
		if (!reg->slots[i]) {
			reg->slots[i] = e;
			break;
		}
	reg->reserved--;
	reg->count++;
	pthread_mutex_unlock(&reg->lock);
}

struct engine_session *engine_sessions_get(struct engine_sessions *reg, const char *id)
{
	struct engine_session *found = NULL;

	pthread_mutex_lock(&reg->lock);
	for (unsigned i = 0; i < reg->max && !found; i++)
		if (reg->slots[i] && !strcmp(reg->slots[i]->id, id)) {
			found = reg->slots[i];
			engine_session_ref(found);
		}
	pthread_mutex_unlock(&reg->lock);
	return found;
}

/* Once per session: whoever takes the client first gives its slot back. */
static void release_slot(struct engine_session *e)
{
	struct engine_client *c = __atomic_exchange_n(&e->client, NULL, __ATOMIC_ACQ_REL);

	if (c)
		engine_release(c, ACTION_SESSION_CREATE);
}

bool engine_sessions_remove(struct engine_sessions *reg, struct engine_session *e)
{
	bool removed = false;

	pthread_mutex_lock(&reg->lock);
	for (unsigned i = 0; i < reg->max && !removed; i++)
		if (reg->slots[i] == e) {
			reg->slots[i] = NULL;
			reg->count--;
			removed = true;
		}
	pthread_mutex_unlock(&reg->lock);
	/* the client's session slot goes back as the session leaves the
	 * registry, not when the last reference (a reaper's scan, a late
	 * execution) goes: a create right after a delete must find it */
	if (removed)
		release_slot(e);
	return removed;
}

int engine_sessions_list(struct engine_sessions *reg, struct engine_session ***ret, unsigned *ret_n)
{
	struct engine_session **list;
	unsigned n = 0;

	pthread_mutex_lock(&reg->lock);
	list = calloc(reg->count + 1, sizeof(*list));
	for (unsigned i = 0; list && i < reg->max; i++)
		if (reg->slots[i]) {
			list[n++] = reg->slots[i];
			engine_session_ref(reg->slots[i]);
		}
	pthread_mutex_unlock(&reg->lock);
	if (!list)
		return -ENOMEM;
	*ret = list;
	*ret_n = n;
	return 0;
}

unsigned engine_sessions_count(struct engine_sessions *reg)
{
	unsigned n;

	pthread_mutex_lock(&reg->lock);
	n = reg->count;
	pthread_mutex_unlock(&reg->lock);
	return n;
}

/* ---- entries ---- */

struct engine_session *engine_session_entry_new(unsigned id_len)
{
	struct engine_session *e = calloc(1, sizeof(*e));
	unsigned char rnd[ENGINE_SESSION_ID_LEN / 2];
	size_t n = id_len && id_len <= ENGINE_SESSION_ID_LEN ? id_len / 2 : sizeof(rnd);
	int p[2];

	if (!e)
		return NULL;
	/* ids are capabilities of a sort: unguessable, from the kernel's
	 * CSPRNG */
	if (getrandom(rnd, n, 0) != (ssize_t)n || pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(e);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		e->id[2 * i] = "0123456789abcdef"[rnd[i] >> 4];
		e->id[2 * i + 1] = "0123456789abcdef"[rnd[i] & 15];
	}
	e->stop_r = p[0];
	e->stop_w = p[1];
	e->refs = 1;
	e->last_used_ms = epoch_ms();
	iso8601_ms(e->last_used_ms, e->created, sizeof(e->created));
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->info, NULL);
	return e;
}

void engine_session_ref(struct engine_session *e)
{
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
}

void engine_session_unref(struct engine_session *e)
{
	if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	session_free(e->s);
	release_slot(e);
	close_fd(&e->stop_r);
	close_fd(&e->stop_w);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->info);
	free(e->preload);
	free(e->project);
	free(e->audit_client);
	free(e->preloaded);
	free(e->preload_failed);
	free(e);
}

void engine_session_signal(struct engine_session *e, int sig)
{
	struct signalfd_siginfo si = { .ssi_signo = (uint32_t)sig };

	/* one record is 128 bytes < PIPE_BUF: written whole or not at all
	 * (a full pipe already holds enough to stop the cell) */
	if (write(e->stop_w, &si, sizeof(si)) < 0) {
		/* nothing to do */
	}
}

void engine_session_drain(struct engine_session *e)
{
	char junk[4096];

	while (read(e->stop_r, junk, sizeof(junk)) > 0)
		;
}

void engine_session_note_preload(struct engine_session *e)
{
	char *ok = e->s ? strdup(session_preloaded(e->s)) : NULL;
	char *failed = e->s ? strdup(session_preload_failed(e->s)) : NULL;

	pthread_mutex_lock(&e->info);
	free(e->preloaded);
	free(e->preload_failed);
	e->preloaded = ok;
	e->preload_failed = failed;
	pthread_mutex_unlock(&e->info);
}

int engine_session_process_open(struct engine_session *e, pid_t pid)
{
	int r;

	pthread_mutex_lock(&e->lock);
	r = e->s && !__atomic_load_n(&e->dying, __ATOMIC_SEQ_CST) ? session_process_open(e->s, pid)
								  : -ESRCH;
	pthread_mutex_unlock(&e->lock);
	return r;
}

bool engine_session_gone(const struct engine_session *e)
{
	return __atomic_load_n(&e->dying, __ATOMIC_SEQ_CST) != 0;
}

int engine_session_workspace_fd(struct engine_session *e)
{
	int fd = -ESRCH;

	pthread_mutex_lock(&e->lock);
	if (e->s && !engine_session_gone(e)) {
		fd = session_workspace_fd(e->s);
		if (fd < 0)
			fd = -ENOENT;
		else if ((fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
			fd = -errno;
	}
	pthread_mutex_unlock(&e->lock);
	return fd;
}

int engine_process_status(int pidfd, int *ret_wstatus)
{
	return sandbox_process_status(pidfd, ret_wstatus);
}

int engine_process_kill(int pidfd)
{
	return sandbox_process_kill(pidfd);
}

void engine_session_touch(struct engine_session *e)
{
	__atomic_store_n(&e->last_used_ms, epoch_ms(), __ATOMIC_RELAXED);
	__atomic_add_fetch(&e->executions, 1, __ATOMIC_RELAXED);
}

void engine_session_end(struct engine_session *e)
{
	struct egress_log eg = { 0 };

	if (e->s && e->audit && e->net == SANDBOX_NET_ALLOWLIST &&
	    session_egress_final(e->s, &eg) == 0 && (eg.n || eg.dropped)) {
		struct engine_audit_record base = { .client = e->audit_client,
						    .session = e->id,
						    .door = e->audit_door };
		char id[AUDIT_ID_LEN + 1];

		engine_audit_id(id);
		base.request_id = id;
		(void)engine_audit_egress(e->audit, &base, eg.ev, eg.n, eg.dropped);
	}
	free(eg.ev);
	session_free(e->s);
	e->s = NULL;
}

/* Where e's end is recorded: cl's log, as cl's client. */
static void note_audit(struct engine_session *e, const struct engine_caller *cl)
{
	const char *name = cl->name ? cl->name : cl->client ? cl->client->name : NULL;

	e->audit = cl->audit;
	e->audit_door = cl->door;
	e->audit_client = name ? strdup(name) : NULL;
}

static const char *lang_name(enum session_lang l)
{
	return engine_lang_name(engine_lang_of_session(l));
}

static json_t *limits_json(const struct engine_session *e)
{
	json_t *o = json_pack(
		"{s:f, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "timeout",
		e->limits.timeout_s, "memory", (json_int_t)e->limits.memory_bytes, "pids",
		(json_int_t)e->limits.pids, "cpus", e->limits.cpus, "cpu_time",
		(json_int_t)e->limits.cpu_seconds, "file_size", (json_int_t)e->limits.file_size,
		"open_files", (json_int_t)e->limits.open_files, "tmp_size",
		(json_int_t)e->limits.tmp_bytes, "workspace_size",
		(json_int_t)e->limits.workspace_bytes, "output_limit", (json_int_t)e->output_limit);

	json_object_set_new(o, "result_limit", json_integer((json_int_t)e->result_limit));
	return o;
}

json_t *engine_session_json(struct engine_session *e)
{
	char used[32];
	json_t *j;

	iso8601_ms(__atomic_load_n(&e->last_used_ms, __ATOMIC_RELAXED), used, sizeof(used));
	j = json_pack("{s:s, s:s, s:s, s:s, s:I, s:b, s:f, s:s, s:o, s:b}", "id", e->id, "language",
		      lang_name(e->lang), "created_at", e->created, "last_used_at", used,
		      "executions", (json_int_t)__atomic_load_n(&e->executions, __ATOMIC_RELAXED),
		      "busy", __atomic_load_n(&e->busy, __ATOMIC_RELAXED) != 0, "idle_timeout",
		      e->idle_timeout_s, "network", sandbox_net_name(e->net), "limits",
		      limits_json(e), "pooled", e->pooled);

	if (!j)
		return NULL;
	json_object_set_new(
		j, "startup_ms",
		json_real((double)__atomic_load_n(&e->startup_ns, __ATOMIC_RELAXED) / 1e6));
	json_object_set_new(j, "preload", json_string(e->preload ? e->preload : ""));
	json_object_set_new(j, "project", e->project ? json_string(e->project) : json_null());
	json_object_set_new(j, "door", json_string(e->door ? e->door : "api"));
	pthread_mutex_lock(&e->info);
	json_object_set_new(j, "preloaded", json_string(e->preloaded ? e->preloaded : ""));
	json_object_set_new(j, "preload_failed",
			    json_string(e->preload_failed ? e->preload_failed : ""));
	pthread_mutex_unlock(&e->info);
	return j;
}

/* ---- the lifecycle ---- */

/* The client's session slot, taken by the check, goes back. */
static void give_back(struct engine_caller *cl)
{
	if (cl->client)
		engine_release(cl->client, ACTION_SESSION_CREATE);
}

static int check_session(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	struct engine_session_spec *spec = arg;

	return engine_check_session(cl->client, cl->door, &spec->so, spec->asked, spec->net_asked,
				    v);
}

struct action_arg {
	enum engine_action a;
	enum session_lang lang;
};

static int check_action(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	struct action_arg *x = arg;

	return engine_check_action(cl->client, cl->door, x->a, x->lang, v);
}

static void describe_entry(struct engine_session *e, const struct session_opts *so)
{
	e->lang = so->lang;
	e->preload = so->preload ? strdup(so->preload) : NULL;
	e->limits = so->limits;
	e->output_limit = so->output_limit;
	e->result_limit = so->result_limit;
	e->net = so->net;
	e->idle_timeout_s = so->idle_timeout_s;
	e->project = so->project_dir ? strdup(so->project_dir) : NULL;
}

/* The caller's stop pipe as e's (spec->has_stop). */
static int use_stop_pipe(struct engine_session *e, const struct engine_session_spec *spec)
{
	int r = fcntl(spec->stop_r, F_DUPFD_CLOEXEC, 3), w;

	if (r < 0)
		return -errno;
	w = fcntl(spec->stop_w, F_DUPFD_CLOEXEC, 3);
	if (w < 0) {
		int k = -errno;

		close(r);
		return k;
	}
	close_fd(&e->stop_r);
	close_fd(&e->stop_w);
	e->stop_r = r;
	e->stop_w = w;
	return 0;
}

/* The kernel started: note how fast and what it imported; register it. */
static void started(struct engine_sessions *reg, struct engine_session *e, uint64_t t0)
{
	e->pooled = session_pooled(e->s);
	__atomic_store_n(&e->startup_ns, now_ns() - t0, __ATOMIC_RELAXED);
	engine_session_note_preload(e);
	engine_sessions_add(reg, e);
}

/* After the policy's check (the client's session slot is held): the
 * project, the seed, the kernel. */
static int start_session(struct engine_sessions *reg, struct engine_caller *cl,
			 struct engine_session_spec *spec, struct engine_session **ret,
			 struct engine_session_error *err)
{
	struct engine_session *e;
	struct session_opts so = spec->so;
	char **seeded = NULL, project[4096], *msg = NULL;
	uint64_t t0 = now_ns();
	int r;

	/* a project: inside the policy's `projects`, symlinks resolved */
	if (spec->project) {
		struct engine_audit_record rec = { .action = ACTION_SESSION_CREATE };

		memset(&err->verdict, 0, sizeof(err->verdict));
		if (engine_check_project(cl->client, cl->door, spec->project, project,
					 sizeof(project), &err->verdict) < 0) {
			engine_call_error_set(err, err->verdict.http ? err->verdict.http : 403,
					      "rejected", "%s", err->verdict.message);
			rec.verdict = &err->verdict;
			engine_call_record(cl, &rec);
			return -EPERM;
		}
		so.project_dir = project;
	}
	/* the seed travels as variables the kernel reads (a pooled kernel
	 * gets them at init: random and numpy, not the hash seed) */
	if (spec->has_seed && !(seeded = engine_seed_env(so.env, spec->seed))) {
		engine_call_error_set(err, 500, "internal", "out of memory");
		return -ENOMEM;
	}
	if (seeded)
		so.env = (const char *const *)seeded;
	e = engine_session_entry_new(reg->id_len);
	if (!e) {
		r = -errno;
		engine_env_free(seeded);
		engine_call_error_set(err, 500, "internal", "cannot make a session: %s",
				      strerror(errno));
		return r;
	}
	describe_entry(e, &so);
	r = spec->has_stop ? use_stop_pipe(e, spec) : 0;
	if (r < 0) {
		engine_env_free(seeded);
		engine_session_unref(e);
		engine_call_error_set(err, 500, "internal", "cannot make a session: %s",
				      strerror(-r));
		return r;
	}
	r = session_new(&so, &e->s, &msg);
	engine_env_free(seeded);
	if (r < 0) {
		engine_session_unref(e);
		err->start_failed = true;
		engine_call_error_set(err, r == -EINVAL ? 400 : 500,
				      r == -EINVAL ? "invalid_value" : "session_failed",
				      "cannot start the session: %s", msg ? msg : strerror(-r));
		free(msg);
		return r;
	}
	e->client = cl->client; /* its slot goes back with the entry */
	note_audit(e, cl);
	e->door = spec->door ? spec->door : engine_door_name(cl->door);
	started(reg, e, t0);
	*ret = e;
	return 0;
}

int engine_session_new(struct engine_sessions *reg, struct engine_caller *cl,
		       struct engine_session_spec *spec, struct engine_session **ret,
		       struct engine_session_error *err)
{
	struct engine_audit_record rec = { .action = ACTION_SESSION_CREATE,
					   .has_lang = true,
					   .lang = engine_lang_of_session(spec->so.lang) };
	struct engine_approval_note an;
	uint64_t t0 = now_ns();
	int r;

	memset(err, 0, sizeof(*err));
	if (spec->held) {
		struct engine_caller quiet = *cl;

		/* checked and recorded by the caller; what it holds goes with
		 * the entry, or back */
		quiet.audit = NULL;
		r = start_session(reg, &quiet, spec, ret, err);
		if (r < 0)
			engine_session_unhold(reg, cl->client);
		return r;
	}
	if (engine_sessions_reserve(reg) < 0) {
		engine_call_error_set(
			err, 429, "too_many_sessions",
			"%u sessions are open, the most this server allows (--max-sessions): delete one first",
			reg->max);
		return -EBUSY;
	}
	/* the engine's policy check (it may lower defaults in spec->so) */
	r = engine_call_check(cl, &rec, check_session, spec, NULL, &an, err);
	if (r == 0) {
		r = start_session(reg, cl, spec, ret, err);
		if (r < 0)
			give_back(cl);
		if (r != -EPERM) {
			rec.lang = engine_lang_of_session(spec->so.lang);
			rec.session = r < 0 ? NULL : (*ret)->id;
			rec.status = r < 0 ? "error" : "ok";
			rec.duration_ms = (double)(now_ns() - t0) / 1e6;
			engine_call_record(cl, &rec);
		}
	}
	if (r < 0)
		engine_sessions_unreserve(reg);
	return r;
}

void engine_session_unhold(struct engine_sessions *reg, struct engine_client *client)
{
	engine_sessions_unreserve(reg);
	if (client)
		engine_release(client, ACTION_SESSION_CREATE);
}

int engine_session_check(struct engine_caller *cl, struct engine_session *e, enum engine_action a,
			 struct engine_session_error *err)
{
	struct engine_audit_record rec = { .action = a,
					   .session = e->id,
					   .has_lang = true,
					   .lang = engine_lang_of_session(e->lang) };
	struct action_arg x = { a, e->lang };
	struct engine_approval_note an;
	int r;

	memset(err, 0, sizeof(*err));
	r = engine_call_check(cl, &rec, check_action, &x, NULL, &an, err);
	if (r < 0)
		return r;
	rec.verdict = &err->verdict;
	rec.status = "ok";
	engine_call_record(cl, &rec);
	return 0;
}

int engine_session_project(struct engine_session *e, struct changes_base **ret_b, int *ret_up,
			   struct engine_session_error *err)
{
	if (!e->s || engine_session_gone(e)) {
		engine_call_error_set(err, 404, "session_not_found", "the session '%s' was deleted",
				      e->id);
		return -ESRCH;
	}
	if (!session_project(e->s)) {
		engine_call_error_set(err, 400, "no_project",
				      "the session has no project: create it with \"project\"");
		return -ENOTDIR;
	}
	if (session_upper_fd(e->s) < 0) {
		engine_call_error_set(err, 409, "no_workspace",
				      "the session has no sandbox now: restart it first");
		return -ENOENT;
	}
	*ret_b = session_project(e->s);
	*ret_up = session_upper_fd(e->s);
	return 0;
}

/* Under e->lock: what engine_session_discard says. */
static int discard_locked(struct engine_session *e, struct engine_discarded *ret,
			  struct engine_session_error *err)
{
	struct ws_owner o = { .chown = geteuid() == 0 };
	struct changes_base *b;
	struct change_list l;
	char msg[sizeof(err->message)];
	int up, r = engine_session_project(e, &b, &up, err);

	if (r < 0)
		return r;
	r = changes_list(up, b, &l);
	if (r < 0) {
		engine_call_error_set(err, 500, "changes_failed", "cannot read the changes: %s",
				      strerror(-r));
		return r;
	}
	session_workspace_owner(e->s, &o.uid, &o.gid);
	r = changes_revert(session_workspace_fd(e->s), b, &l, &o, msg, sizeof(msg));
	if (r < 0) {
		engine_call_error_set(err, 500, "discard_failed", "%s", msg);
	} else {
		ret->discarded = l.n - (size_t)r;
		ret->kept = (size_t)r;
		snprintf(ret->project, sizeof(ret->project), "%s", b->project);
		r = 0;
	}
	change_list_release(&l);
	return r;
}

int engine_session_discard(struct engine_session *e, struct engine_discarded *ret,
			   struct engine_session_error *err)
{
	int r;

	memset(err, 0, sizeof(*err));
	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&e->lock);
	r = discard_locked(e, ret, err);
	pthread_mutex_unlock(&e->lock);
	return r;
}

/* Under e->lock: the changes now, as the facts an approval names. */
static int apply_facts(struct engine_session *e, const char *want, json_t **ret,
		       struct engine_session_error *err)
{
	struct engine_changes c;
	struct changes_base *b;
	int up, r = engine_session_project(e, &b, &up, err);

	if (r < 0)
		return r;
	r = engine_changes_read(up, b, &c);
	if (r == -ECANCELED) {
		engine_call_error_set(
			err, 409, "changes_moved",
			"the changes moved while they were read (code in the session still writes): "
			"look at them again once it stops");
		return r;
	}
	if (r < 0) {
		engine_call_error_set(err, 500, "changes_failed", "cannot read the changes: %s",
				      strerror(-r));
		return r;
	}
	if (c.l.truncated) {
		engine_call_error_set(err, 413, "too_many_changes",
				      "more than %u changes: too many to apply at once",
				      CHANGES_MAX_ENTRIES);
		r = -E2BIG;
	} else if (want && strcmp(want, c.sha256)) {
		engine_call_error_set(
			err, 409, "changes_moved",
			"the changes are not the ones named by 'changes_sha256' any more: look at "
			"them again (GET .../changes)");
		r = -ECANCELED;
	} else {
		*ret = json_pack("{s:s, s:s, s:I, s:I}", "session", e->id, "changes_sha256",
				 c.sha256, "changes", (json_int_t)c.l.n, "bytes",
				 (json_int_t)c.bytes);
		r = *ret ? 0 : -ENOMEM;
		if (r < 0)
			engine_call_error_set(err, 500, "internal", "out of memory");
	}
	engine_changes_release(&c);
	return r;
}

int engine_session_apply(struct engine_caller *cl, struct engine_session *e, const char *want,
			 size_t *ret_n, struct engine_session_error *err)
{
	struct engine_audit_record rec = { .action = ACTION_APPLY,
					   .session = e->id,
					   .has_lang = true,
					   .lang = engine_lang_of_session(e->lang) };
	struct action_arg x = { ACTION_APPLY, e->lang };
	struct engine_approval_note an;
	struct changes_base *b;
	json_t *facts = NULL;
	uint64_t t0 = now_ns();
	char msg[1024];
	int up, r;

	memset(err, 0, sizeof(*err));
	*ret_n = 0;
	pthread_mutex_lock(&e->lock);
	r = apply_facts(e, want, &facts, err);
	pthread_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	/* the person decides on these facts; an approval given for others
	 * does not fit (engine_approval_use compares them) */
	rec.args = facts;
	r = engine_call_check(cl, &rec, check_action, &x, facts, &an, err);
	if (r < 0) {
		json_decref(facts);
		return r;
	}
	pthread_mutex_lock(&e->lock);
	r = engine_session_project(e, &b, &up, err);
	if (r == 0) {
		r = engine_changes_apply(
			up, b, json_string_value(json_object_get(facts, "changes_sha256")), ret_n,
			msg, sizeof(msg));
		if (r == -ECANCELED)
			engine_call_error_set(err, 409, "changes_moved", "%s", msg);
		else if (r == -ESTALE)
			engine_call_error_set(err, 409, "project_changed", "%s", msg);
		else if (r == -E2BIG)
			engine_call_error_set(err, 413, "too_many_changes", "%s", msg);
		else if (r < 0)
			engine_call_error_set(err, 500, "apply_failed", "applying to '%s': %s",
					      b->project, msg);
	}
	pthread_mutex_unlock(&e->lock);
	/* recorded once done: a refused or failed copy is no "ok" */
	rec.verdict = &err->verdict;
	rec.status = r == 0 ? "ok" : "error";
	rec.bytes = r == 0 ? (uint64_t)json_integer_value(json_object_get(facts, "bytes")) : 0;
	rec.duration_ms = (double)(now_ns() - t0) / 1e6;
	engine_call_record(cl, &rec);
	json_decref(facts);
	return r;
}

struct exec_arg {
	enum session_lang lang;
	double timeout_s;
};

static int check_exec(struct engine_caller *cl, void *arg, struct engine_verdict *v)
{
	struct exec_arg *x = arg;

	return engine_check_exec(cl->client, cl->door, x->lang, x->timeout_s, v);
}

int engine_session_cell(struct engine_session *e, const char *code, size_t len,
			const struct session_exec_opts *eo, bool (*claim)(void *cls), void *cls,
			struct run_result *ret, struct engine_session_error *err)
{
	int k = 0;

	pthread_mutex_lock(&e->lock);
	engine_session_drain(e);
	if (!e->s || engine_session_gone(e)) {
		engine_call_error_set(err, 404, "session_not_found", "the session '%s' was deleted",
				      e->id);
		k = -ESRCH;
	} else if (__atomic_load_n(&e->restarting, __ATOMIC_SEQ_CST)) {
		engine_call_error_set(err, 409, "session_restarting",
				      "the session is being restarted: run the code again");
		k = -EBUSY;
	} else if (claim && !claim(cls)) {
		k = -ECANCELED;
	}
	if (k < 0) {
		pthread_mutex_unlock(&e->lock);
		return k;
	}
	__atomic_store_n(&e->busy, 1, __ATOMIC_RELAXED);
	k = engine_session_exec(e->s, code, len, eo, ret);
	__atomic_store_n(&e->busy, 0, __ATOMIC_RELAXED);
	engine_session_touch(e);
	if (k == 0 && ret->restarted)
		engine_session_note_preload(e);
	pthread_mutex_unlock(&e->lock);
	if (k < 0) {
		run_result_release(ret);
		engine_call_error_set(
			err, 500, "session_failed",
			"the session '%s' cannot go on (%s): close it and create a new one", e->id,
			strerror(-k));
	}
	return k;
}

int engine_session_run(struct engine_caller *cl, struct engine_session *e, const char *code,
		       size_t len, const struct session_exec_opts *eo, json_t *args,
		       struct run_result *ret, struct engine_session_error *err)
{
	struct engine_audit_record rec = { .action = ACTION_SESSION_EXEC,
					   .session = e->id,
					   .has_lang = true,
					   .lang = engine_lang_of_session(e->lang),
					   .code = code,
					   .code_len = len,
					   .args = args };
	struct exec_arg x = { e->lang, eo->timeout_s };
	struct engine_approval_note an;
	struct session_exec_opts o = *eo;
	struct egress_log eg = { 0 };
	char id[AUDIT_ID_LEN + 1];
	uint64_t t0 = now_ns();
	int r;

	memset(err, 0, sizeof(*err));
	memset(ret, 0, sizeof(*ret));
	/* one request id for the cell and its proxied connections */
	engine_audit_id(id);
	rec.request_id = id;
	if (cl->audit && e->net == SANDBOX_NET_ALLOWLIST)
		o.egress_log = &eg;
	r = engine_call_check(cl, &rec, check_exec, &x, NULL, &an, err);
	if (r == -EPERM) {
		/* a refusal is a result too, naming the rule */
		engine_verdict_result(&err->verdict, ret);
		return 0;
	}
	if (r < 0)
		return r;
	r = engine_session_cell(e, code, len, &o, cl->claim, cl->claim_cls, ret, err);
	if (cl->client)
		engine_release(cl->client, ACTION_SESSION_EXEC);
	if (r == -ECANCELED)
		return r;
	engine_call_end(cl, &rec, &an, r == 0 ? ret : NULL, t0, &eg);
	free(eg.ev);
	return r;
}

int engine_session_interrupt(struct engine_caller *cl, struct engine_session *e, bool *ret_busy,
			     struct engine_session_error *err)
{
	int r = engine_session_check(cl, e, ACTION_SESSION_INTERRUPT, err);

	if (r < 0)
		return r;
	*ret_busy = __atomic_load_n(&e->busy, __ATOMIC_RELAXED) != 0;
	if (*ret_busy)
		engine_session_signal(e, SIGINT);
	return 0;
}

/* Take the session's lock for a restart: interrupt what runs; if it has
 * not stopped after the grace period, kill the kernel (the session_exec
 * stop record; that sandbox's workspace goes with it). */
static void lock_for_restart(struct engine_session *e)
{
	struct timespec until;

	engine_session_signal(e, SIGINT);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)SESSION_GRACE_S;
	if (pthread_mutex_timedlock(&e->lock, &until) == 0)
		return;
	engine_session_signal(e, SIGTERM);
	pthread_mutex_lock(&e->lock);
}

int engine_session_restart(struct engine_caller *cl, struct engine_session *e,
			   struct engine_session_error *err)
{
	uint64_t t0;
	int r = engine_session_check(cl, e, ACTION_SESSION_RESTART, err);

	if (r < 0)
		return r;
	r = -ESRCH;
	__atomic_add_fetch(&e->restarting, 1, __ATOMIC_SEQ_CST);
	lock_for_restart(e);
	engine_session_drain(e);
	__atomic_sub_fetch(&e->restarting, 1, __ATOMIC_SEQ_CST);
	t0 = now_ns();
	if (e->s && !engine_session_gone(e))
		r = session_restart(e->s);
	if (r == 0) {
		__atomic_store_n(&e->startup_ns, now_ns() - t0, __ATOMIC_RELAXED);
		engine_session_note_preload(e);
	}
	pthread_mutex_unlock(&e->lock);
	if (r == -ESRCH)
		engine_call_error_set(err, 404, "session_not_found", "the session '%s' was deleted",
				      e->id);
	else if (r < 0)
		engine_call_error_set(
			err, 500, "session_failed",
			"cannot restart the session (%s): delete it and create a new one",
			strerror(-r));
	return r;
}

/* Under src->lock: the copy, registered.  *ret_msg: what was not copied. */
static int fork_entry(struct engine_sessions *reg, const struct engine_caller *cl,
		      struct engine_session *src, struct engine_session **ret, char **ret_msg)
{
	struct engine_session *e = engine_session_entry_new(reg->id_len);
	uint64_t t0 = now_ns();
	int r;

	if (!e)
		return -ENOMEM;
	e->lang = src->lang;
	e->preload = src->preload ? strdup(src->preload) : NULL;
	e->limits = src->limits;
	e->output_limit = src->output_limit;
	e->result_limit = src->result_limit;
	e->net = src->net;
	e->idle_timeout_s = src->idle_timeout_s;
	e->door = engine_door_name(cl->door);
	r = session_fork(src->s, &e->s, ret_msg);
	if (r < 0) {
		engine_session_unref(e);
		return r;
	}
	note_audit(e, cl);
	started(reg, e, t0);
	*ret = e;
	return 0;
}

int engine_session_fork(struct engine_sessions *reg, struct engine_caller *cl,
			struct engine_session *src, struct engine_session **ret,
			char **ret_not_copied, struct engine_session_error *err)
{
	char *msg = NULL;
	int r;

	*ret_not_copied = NULL;
	/* the policy: a fork is a session made, and takes a slot */
	r = engine_session_check(cl, src, ACTION_SESSION_FORK, err);
	if (r < 0)
		return r;
	if (engine_sessions_reserve(reg) < 0) {
		give_back(cl);
		engine_call_error_set(
			err, 429, "too_many_sessions",
			"%u sessions are open, the most this server allows (--max-sessions): delete one first",
			reg->max);
		return -EBUSY;
	}
	/* the source's kernel hands over its state: nothing may run there */
	pthread_mutex_lock(&src->lock);
	r = src->s ? fork_entry(reg, cl, src, ret, &msg) : -ESRCH;
	pthread_mutex_unlock(&src->lock);
	if (r < 0) {
		give_back(cl);
		engine_sessions_unreserve(reg);
		err->start_failed = r != -ESRCH;
		if (r == -ESRCH)
			engine_call_error_set(err, 404, "session_not_found",
					      "the session '%s' was deleted", src->id);
		else if (r == -EOPNOTSUPP)
			engine_call_error_set(err, 400, "not_supported", "%s",
					      msg ? msg : "this session cannot be forked");
		else
			engine_call_error_set(err, 500, "session_failed", "%s",
					      msg ? msg : strerror(-r));
		free(msg);
		return r;
	}
	(*ret)->client = cl->client; /* its slot goes back with the entry */
	*ret_not_copied = msg;
	return 0;
}

bool engine_session_close(struct engine_sessions *reg, struct engine_caller *cl,
			  struct engine_session *e)
{
	if (!engine_sessions_remove(reg, e))
		return false;
	/* stop what runs (the flag first: see api/exec.c job_claim) */
	__atomic_store_n(&e->dying, 1, __ATOMIC_SEQ_CST);
	engine_session_signal(e, SIGTERM);
	pthread_mutex_lock(&e->lock);
	engine_session_end(e);
	pthread_mutex_unlock(&e->lock);
	engine_session_unref(e); /* the registry's */
	if (cl) {
		struct engine_audit_record rec = { .action = ACTION_SESSION_CLOSE,
						   .session = e->id };

		engine_call_record(cl, &rec);
	}
	return true;
}

unsigned engine_sessions_reap(struct engine_sessions *reg,
			      void (*on_end)(void *cls, const struct engine_session *e), void *cls)
{
	struct engine_session **list = NULL;
	unsigned n = 0, ended = 0;

	if (engine_sessions_list(reg, &list, &n) < 0)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		struct engine_session *e = list[i];

		/* a session that is busy is not idle: skip it this round */
		if (pthread_mutex_trylock(&e->lock) == 0) {
			if (e->s && session_expired(e->s) && engine_sessions_remove(reg, e)) {
				__atomic_store_n(&e->dying, 1, __ATOMIC_SEQ_CST);
				engine_session_end(e);
				engine_session_unref(e); /* the registry's */
				ended++;
				if (on_end)
					on_end(cls, e);
			}
			pthread_mutex_unlock(&e->lock);
		}
		engine_session_unref(e);
	}
	free(list);
	return ended;
}

void engine_sessions_close_all(struct engine_sessions *reg)
{
	struct engine_session **list = NULL;
	unsigned n = 0;

	if (engine_sessions_list(reg, &list, &n) < 0)
		return;
	for (unsigned i = 0; i < n; i++)
		engine_session_signal(list[i], SIGTERM);
	for (unsigned i = 0; i < n; i++) {
		if (engine_sessions_remove(reg, list[i]))
			engine_session_unref(list[i]);
		pthread_mutex_lock(&list[i]->lock);
		engine_session_end(list[i]);
		pthread_mutex_unlock(&list[i]->lock);
		engine_session_unref(list[i]);
	}
	free(list);
}
