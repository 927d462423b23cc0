/* engine/approval: calls a policy holds for a person's decision (the
 * policy's `approval` actions).  A held call has an id, a description and
 * the exact arguments; a person approves or denies it (GET and POST
 * /v1/approvals, `codecell approvals`); one not decided in time is
 * denied.  The caller waits for the decision, or gets "pending" at once
 * and sends the same call again with the id once it is approved: an
 * approval is good for one call, of the same client, action and
 * arguments.  Thread-safe. */
#ifndef CODECELL_ENGINE_APPROVAL_H
#define CODECELL_ENGINE_APPROVAL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/policy.h"

#define APPROVAL_ID_LEN 16     /* hex digits */
#define APPROVAL_MAX 256       /* held or decided, kept at once */
#define APPROVAL_KEEP_S 3600.0 /* a decided one is forgotten after this */
/* Pending calls one client may have at once, by default: an eighth of
 * the table, so one client cannot fill it and hold up the others. */
#define APPROVAL_PER_CLIENT_DEFAULT (APPROVAL_MAX / 8)

enum approval_state {
	APPROVAL_PENDING,
	APPROVAL_APPROVED,
	APPROVAL_DENIED,
	APPROVAL_EXPIRED,
	APPROVAL_USED
};
const char *approval_state_name(enum approval_state s);

struct engine_approvals;

struct engine_approvals *engine_approvals_new(void);
/* Shutting down: every waiter wakes, denied, and no call is held any
 * more.  NULL is fine. */
void engine_approvals_close(struct engine_approvals *a);
/* After close, once no thread waits.  NULL is fine. */
void engine_approvals_free(struct engine_approvals *a);

/* The most calls one client may have pending at once (1 to APPROVAL_MAX;
 * APPROVAL_PER_CLIENT_DEFAULT until set). */
void engine_approvals_set_per_client(struct engine_approvals *a, unsigned max);
unsigned engine_approvals_per_client(struct engine_approvals *a);

/* Hold a call: client, action, description (for the person), args (the
 * exact arguments, borrowed and copied; compared on use).  0 with the id
 * in ret_id, -EDQUOT when the client has its most pending already
 * (engine_approvals_set_per_client), -EBUSY when APPROVAL_MAX are held,
 * -ENOMEM. */
int engine_approval_hold(struct engine_approvals *a, const char *client, enum engine_action action,
			 const char *description, json_t *args, double timeout_s,
			 char ret_id[APPROVAL_ID_LEN + 1]);
/* Wait for id's decision (or its deadline): APPROVAL_APPROVED (the
 * approval is then used up), APPROVAL_DENIED or APPROVAL_EXPIRED; -ENOENT. */
int engine_approval_wait(struct engine_approvals *a, const char *id);
/* The call came again with its approval id: APPROVAL_APPROVED if id was
 * approved for this client, action and args (used up now),
 * APPROVAL_PENDING if not decided yet, else the state that refuses it;
 * -ENOENT (unknown, or another client's or action's), -ESTALE (this
 * client's for this action, but for other arguments: left as it is). */
int engine_approval_use(struct engine_approvals *a, const char *id, const char *client,
			enum engine_action action, json_t *args);
/* A person's decision.  0, -ENOENT, or -EALREADY (decided, expired). */
int engine_approval_decide(struct engine_approvals *a, const char *id, bool approve,
			   const char *by);
/* {"approvals": [...]} (pending_only: only those held now), or one
 * approval's object (NULL if unknown).  New references. */
json_t *engine_approvals_json(struct engine_approvals *a, bool pending_only);
json_t *engine_approval_json(struct engine_approvals *a, const char *id);

#endif
