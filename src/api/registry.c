/* The sessions a server holds: a fixed table of --max-sessions slots,
 * reference-counted entries, and the stop pipe through which executions
 * are interrupted from other threads. */
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

#include "api/internal.h"
#include "util/macro.h"
#include "util/banned.h"

int api_registry_init(struct api_registry *reg, unsigned max)
{
	memset(reg, 0, sizeof(*reg));
	reg->slots = calloc(max, sizeof(*reg->slots));
	if (!reg->slots)
		return -ENOMEM;
	reg->max = max;
	pthread_mutex_init(&reg->lock, NULL);
	return 0;
}

void api_registry_release(struct api_registry *reg)
{
	free(reg->slots);
	pthread_mutex_destroy(&reg->lock);
}

int api_registry_reserve(struct api_registry *reg)
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

void api_registry_unreserve(struct api_registry *reg)
{
	pthread_mutex_lock(&reg->lock);
	reg->reserved--;
	pthread_mutex_unlock(&reg->lock);
}

void api_registry_add(struct api_registry *reg, struct api_session *e)
{
	api_session_ref(e);
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

struct api_session *api_registry_get(struct api_registry *reg, const char *id)
{
	struct api_session *found = NULL;

	pthread_mutex_lock(&reg->lock);
	for (unsigned i = 0; i < reg->max && !found; i++)
		if (reg->slots[i] && !strcmp(reg->slots[i]->id, id)) {
			found = reg->slots[i];
			api_session_ref(found);
		}
	pthread_mutex_unlock(&reg->lock);
	return found;
}

/* Once per session: whoever takes the client first gives its slot back. */
static void release_slot(struct api_session *e)
{
	struct engine_client *c = __atomic_exchange_n(&e->client, NULL, __ATOMIC_ACQ_REL);

	if (c)
		engine_release(c, ACTION_SESSION_CREATE);
}

bool api_registry_remove(struct api_registry *reg, struct api_session *e)
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

int api_registry_list(struct api_registry *reg, struct api_session ***ret, unsigned *ret_n)
{
	struct api_session **list;
	unsigned n = 0;

	pthread_mutex_lock(&reg->lock);
	list = calloc(reg->count + 1, sizeof(*list));
	for (unsigned i = 0; list && i < reg->max; i++)
		if (reg->slots[i]) {
			list[n++] = reg->slots[i];
			api_session_ref(reg->slots[i]);
		}
	pthread_mutex_unlock(&reg->lock);
	if (!list)
		return -ENOMEM;
	*ret = list;
	*ret_n = n;
	return 0;
}

unsigned api_registry_count(struct api_registry *reg)
{
	unsigned n;

	pthread_mutex_lock(&reg->lock);
	n = reg->count;
	pthread_mutex_unlock(&reg->lock);
	return n;
}

/* ---- entries ---- */

static uint64_t epoch_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "2024-05-01T12:00:00.123Z" */
static void iso_time(uint64_t ms, char *out, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	size_t len;

	gmtime_r(&t, &tm);
	len = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + len, n - len, ".%03uZ", (unsigned)(ms % 1000));
}

struct api_session *api_session_entry_new(void)
{
	struct api_session *e = calloc(1, sizeof(*e));
	unsigned char rnd[API_ID_LEN / 2];
	int p[2];

	if (!e)
		return NULL;
	/* ids are capabilities of a sort: unguessable, from the kernel's
	 * CSPRNG */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd) ||
	    pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(e);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(rnd); i++) {
		e->id[2 * i] = "0123456789abcdef"[rnd[i] >> 4];
		e->id[2 * i + 1] = "0123456789abcdef"[rnd[i] & 15];
	}
	e->stop_r = p[0];
	e->stop_w = p[1];
	e->refs = 1;
	e->last_used_ms = epoch_ms();
	iso_time(e->last_used_ms, e->created, sizeof(e->created));
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->info, NULL);
	return e;
}

void api_session_ref(struct api_session *e)
{
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
}

void api_session_unref(struct api_session *e)
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
	free(e->preloaded);
	free(e->preload_failed);
	free(e);
}

void api_session_signal(struct api_session *e, int sig)
{
	struct signalfd_siginfo si = { .ssi_signo = (uint32_t)sig };

	/* one record is 128 bytes < PIPE_BUF: written whole or not at all
	 * (a full pipe already holds enough to stop the cell) */
	if (write(e->stop_w, &si, sizeof(si)) < 0) {
		/* nothing to do */
	}
}

void api_session_drain(struct api_session *e)
{
	char junk[4096];

	while (read(e->stop_r, junk, sizeof(junk)) > 0)
		;
}

void api_session_note_preload(struct api_session *e)
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

void api_session_touch(struct api_session *e)
{
	__atomic_store_n(&e->last_used_ms, epoch_ms(), __ATOMIC_RELAXED);
	__atomic_add_fetch(&e->executions, 1, __ATOMIC_RELAXED);
}

void api_session_end(struct api_session *e)
{
	session_free(e->s);
	e->s = NULL;
}

static const char *lang_name(enum session_lang l)
{
	return engine_lang_name(engine_lang_of_session(l));
}

static json_t *limits_json(const struct api_session *e)
{
	json_t *o = json_pack("{s:f, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "timeout",
			 e->limits.timeout_s, "memory", (json_int_t)e->limits.memory_bytes, "pids",
			 (json_int_t)e->limits.pids, "cpus", e->limits.cpus, "cpu_time", (json_int_t)e->limits.cpu_seconds,
			 "file_size", (json_int_t)e->limits.file_size, "open_files",
			 (json_int_t)e->limits.open_files, "tmp_size", (json_int_t)e->limits.tmp_bytes,
			 "workspace_size", (json_int_t)e->limits.workspace_bytes, "output_limit",
			 (json_int_t)e->output_limit);

	json_object_set_new(o, "result_limit", json_integer((json_int_t)e->result_limit));
	return o;
}

json_t *api_session_json(struct api_session *e)
{
	char used[32];
	json_t *j;

	iso_time(__atomic_load_n(&e->last_used_ms, __ATOMIC_RELAXED), used, sizeof(used));
	j = json_pack("{s:s, s:s, s:s, s:s, s:I, s:b, s:f, s:s, s:o, s:b}", "id", e->id,
			      "language", lang_name(e->lang), "created_at", e->created, "last_used_at",
			      used, "executions",
			      (json_int_t)__atomic_load_n(&e->executions, __ATOMIC_RELAXED), "busy",
			      __atomic_load_n(&e->busy, __ATOMIC_RELAXED) != 0, "idle_timeout",
			      e->idle_timeout_s, "network",
			      sandbox_net_name(e->net), "limits",
			      limits_json(e), "pooled", e->pooled);

	if (!j)
		return NULL;
	json_object_set_new(j, "startup_ms",
			    json_real((double)__atomic_load_n(&e->startup_ns, __ATOMIC_RELAXED) / 1e6));
	json_object_set_new(j, "preload", json_string(e->preload ? e->preload : ""));
	json_object_set_new(j, "project", e->project ? json_string(e->project) : json_null());
	pthread_mutex_lock(&e->info);
	json_object_set_new(j, "preloaded", json_string(e->preloaded ? e->preloaded : ""));
	json_object_set_new(j, "preload_failed",
			    json_string(e->preload_failed ? e->preload_failed : ""));
	pthread_mutex_unlock(&e->info);
	return j;
}
