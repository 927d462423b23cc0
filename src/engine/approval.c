/* Held calls, their decisions and deadlines. */
#include "engine/approval.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/audit.h"
#include "util/timeutil.h"
#include "util/banned.h"

struct held {
	char id[APPROVAL_ID_LEN + 1];
	char client[POLICY_NAME_MAX];
	enum engine_action action;
	char description[256];
	json_t *args;
	char created[32];
	uint64_t deadline_ns, decided_ns;
	enum approval_state state;
	char by[64];
	bool used;
};

struct engine_approvals {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct held list[APPROVAL_MAX];
	size_t n;
	unsigned per_client; /* pending calls of one client at once (atomic) */
	bool closing;
};

const char *approval_state_name(enum approval_state s)
{
	static const char *const n[] = { "pending", "approved", "denied", "expired", "used" };

	return s <= APPROVAL_USED ? n[s] : "unknown";
}

struct engine_approvals *engine_approvals_new(void)
{
	struct engine_approvals *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;

	if (!a)
		return NULL;
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->changed, &ca);
	pthread_condattr_destroy(&ca);
	a->per_client = APPROVAL_PER_CLIENT_DEFAULT;
	return a;
}

/* per_client is atomic: read by hold under the lock, and by the doors'
 * refusals without it */
void engine_approvals_set_per_client(struct engine_approvals *a, unsigned max)
{
	__atomic_store_n(&a->per_client,
			 max < 1	      ? 1
			 : max > APPROVAL_MAX ? APPROVAL_MAX
					      : max,
			 __ATOMIC_RELAXED);
}

unsigned engine_approvals_per_client(struct engine_approvals *a)
{
	return __atomic_load_n(&a->per_client, __ATOMIC_RELAXED);
}

/* Under lock, after tidy: the calls of client held now. */
static unsigned pending_of(const struct engine_approvals *a, const char *client)
{
	unsigned n = 0;

	for (size_t i = 0; i < a->n; i++)
		n += a->list[i].state == APPROVAL_PENDING && !strcmp(a->list[i].client, client);
	return n;
}

void engine_approvals_close(struct engine_approvals *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->closing = true;
	pthread_cond_broadcast(&a->changed);
	pthread_mutex_unlock(&a->lock);
}

void engine_approvals_free(struct engine_approvals *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		json_decref(a->list[i].args);
	pthread_cond_destroy(&a->changed);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* Under lock: deadlines passed become expired; long-decided ones go. */
static void tidy(struct engine_approvals *a)
{
	uint64_t now = now_ns();
	size_t k = 0;

	for (size_t i = 0; i < a->n; i++) {
		struct held *h = &a->list[i];

		if (h->state == APPROVAL_PENDING && now >= h->deadline_ns) {
			h->state = APPROVAL_EXPIRED;
			h->decided_ns = now;
		}
		if (h->state != APPROVAL_PENDING && now - h->decided_ns > APPROVAL_KEEP_S * 1e9) {
			json_decref(h->args);
			continue;
		}
		a->list[k++] = *h;
	}
	a->n = k;
}

static struct held *find(struct engine_approvals *a, const char *id)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->list[i].id, id))
			return &a->list[i];
	return NULL;
}

int engine_approval_hold(struct engine_approvals *a, const char *client, enum engine_action action,
			 const char *description, json_t *args, double timeout_s,
			 char ret_id[APPROVAL_ID_LEN + 1])
{
	struct held *h;
	struct tm tm;
	time_t t = time(NULL);

	pthread_mutex_lock(&a->lock);
	tidy(a);
	if (a->n >= APPROVAL_MAX || a->closing) {
		pthread_mutex_unlock(&a->lock);
		return -EBUSY;
	}
	if (pending_of(a, client ? client : "") >= engine_approvals_per_client(a)) {
		pthread_mutex_unlock(&a->lock);
		return -EDQUOT;
	}
	h = &a->list[a->n];
	memset(h, 0, sizeof(*h));
	h->args = args ? json_deep_copy(args) : json_object();
	if (!h->args) {
		pthread_mutex_unlock(&a->lock);
		return -ENOMEM;
	}
	engine_audit_id(h->id);
	snprintf(h->client, sizeof(h->client), "%s", client ? client : "");
	h->action = action;
	snprintf(h->description, sizeof(h->description), "%s", description);
	gmtime_r(&t, &tm);
	strftime(h->created, sizeof(h->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	h->deadline_ns = now_ns() + (uint64_t)(timeout_s * 1e9);
	h->state = APPROVAL_PENDING;
	a->n++;
	memcpy(ret_id, h->id, APPROVAL_ID_LEN + 1);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

int engine_approval_wait(struct engine_approvals *a, const char *id)
{
	struct held *h;
	int r;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct timespec until;

		tidy(a);
		h = find(a, id);
		if (!h || a->closing) {
			r = h ? APPROVAL_DENIED : -ENOENT;
			break;
		}
		if (h->state != APPROVAL_PENDING) {
			r = (int)h->state;
			if (h->state == APPROVAL_APPROVED)
				h->state = APPROVAL_USED;
			break;
		}
		until.tv_sec = (time_t)(h->deadline_ns / 1000000000u);
		until.tv_nsec = (long)(h->deadline_ns % 1000000000u);
		pthread_cond_timedwait(&a->changed, &a->lock, &until);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

int engine_approval_use(struct engine_approvals *a, const char *id, const char *client,
			enum engine_action action, json_t *args)
{
	struct held *h;
	int r;

	pthread_mutex_lock(&a->lock);
	tidy(a);
	h = find(a, id);
	if (!h || strcmp(h->client, client ? client : "") || h->action != action) {
		pthread_mutex_unlock(&a->lock);
		return -ENOENT;
	}
	/* the caller's own approval, for something else (an apply whose
	 * changes moved since): it stays as it is, for the call it names */
	if (args ? !json_equal(h->args, args) : json_object_size(h->args) != 0) {
		pthread_mutex_unlock(&a->lock);
		return -ESTALE;
	}
	r = (int)h->state;
	if (h->state == APPROVAL_APPROVED)
		h->state = APPROVAL_USED;
	pthread_mutex_unlock(&a->lock);
	return r;
}

int engine_approval_decide(struct engine_approvals *a, const char *id, bool approve, const char *by)
{
	struct held *h;
	int r = 0;

	pthread_mutex_lock(&a->lock);
	tidy(a);
	h = find(a, id);
	if (!h)
		r = -ENOENT;
	else if (h->state != APPROVAL_PENDING)
		r = -EALREADY;
	else {
		h->state = approve ? APPROVAL_APPROVED : APPROVAL_DENIED;
		h->decided_ns = now_ns();
		snprintf(h->by, sizeof(h->by), "%s", by ? by : "");
		pthread_cond_broadcast(&a->changed);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

static json_t *held_json(const struct held *h)
{
	uint64_t now = now_ns();
	double left = h->state == APPROVAL_PENDING && h->deadline_ns > now
			      ? (double)(h->deadline_ns - now) / 1e9
			      : 0;

	return json_pack("{s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:f, s:s?}", "id", h->id, "client",
			 h->client, "action", engine_action_name(h->action), "description",
			 h->description, "arguments", h->args, "created_at", h->created, "state",
			 approval_state_name(h->state), "expires_in_s", left, "decided_by",
			 h->by[0] ? h->by : NULL);
}

json_t *engine_approvals_json(struct engine_approvals *a, bool pending_only)
{
	json_t *list = json_array();

	pthread_mutex_lock(&a->lock);
	tidy(a);
	for (size_t i = 0; i < a->n; i++)
		if (!pending_only || a->list[i].state == APPROVAL_PENDING)
			json_array_append_new(list, held_json(&a->list[i]));
	pthread_mutex_unlock(&a->lock);
	return json_pack("{s:o}", "approvals", list);
}

json_t *engine_approval_json(struct engine_approvals *a, const char *id)
{
	struct held *h;
	json_t *o = NULL;

	pthread_mutex_lock(&a->lock);
	tidy(a);
	h = find(a, id);
	if (h)
		o = held_json(h);
	pthread_mutex_unlock(&a->lock);
	return o;
}
