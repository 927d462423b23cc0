/* The E2B door's shared ground (internal.h): its sandboxes' table
 * looked up, a request's sandbox, its paths, body and query, and its
 * answers' shapes.  Below the door's router (e2b.c), jupyter.c and
 * envd.c, which all use it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/internal.h"
#include "http/door.h"
#include "http/policy.h"
#include "util/timeutil.h"
#include "util/json.h"
#include "util/percent.h"
#include "util/utf8.h"
#include "util/banned.h"

struct e2b_state *e2b_state_of(const struct api_server *srv)
{
	return http_door_state(srv, "e2b");
}

bool e2b_sandbox_alive(const struct e2b_sandbox *sb, uint64_t now)
{
	return now < sb->end_ms && !__atomic_load_n(&sb->entry->dying, __ATOMIC_SEQ_CST);
}

struct e2b_sandbox *e2b_find(struct e2b_state *st, const char *id)
{
	for (struct e2b_sandbox *sb = st->head; sb; sb = sb->next)
		if (!strcmp(sb->id, id))
			return e2b_sandbox_alive(sb, epoch_ms()) ? sb : NULL;
	return NULL;
}

/* Under st->lock: take sb out of the table. */
struct e2b_sandbox *e2b_find_seen(struct api_call *c, const char *id)
{
	struct e2b_sandbox *sb = e2b_find(e2b_state_of(c->srv), id);

	return sb && api_sees(c, sb->entry) ? sb : NULL;
}

/* ---- answers ---- */

const char *e2b_connect_code(int http)
{
	switch (http) {
	case 400:
	case 413:
	case 415:
		return "invalid_argument";
	case 401:
		return "unauthenticated";
	case 403:
		return "permission_denied";
	case 404:
		return "not_found";
	case 409:
		return "already_exists";
	case 429:
		return "resource_exhausted";
	case 501:
		return "unimplemented";
	case 502:
	case 503:
		return "unavailable";
	case 504:
		return "deadline_exceeded";
	default:
		return "internal";
	}
}

enum MHD_Result e2b_respond_error(struct api_call *c, const struct api_error *e)
{
	size_t len;
	char *msg = utf8_repair(e->message, strlen(e->message), &len);
	json_t *j;

	if ((e2b_of(c) && e2b_of(c)->connect))
		j = json_pack("{s:s, s:s}", "code", e2b_connect_code(e->http), "message",
			      msg ? msg : "");
	else
		j = json_pack("{s:i, s:s}", "code", e->http, "message", msg ? msg : "");
	free(msg);
	/* api_respond_json answers in the v1 shape only for errors it makes
	 * itself; this body is already the door's */
	return api_respond_json(c, (unsigned)e->http, j);
}

enum MHD_Result e2b_respond_empty(struct api_call *c, unsigned status)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (c->close)
		MHD_add_response_header(r, "Connection", "close");
	ret = MHD_queue_response(c->conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- request helpers ---- */

json_t *e2b_body(struct api_call *c, struct api_error *e)
{
	struct json_body_error je;
	json_t *j;

	if (json_body_read(c->body, c->body_len, JSON_BODY_EMPTY_OBJECT, &j, &je) < 0) {
		api_error_json(e, &je);
		return NULL;
	}
	return j;
}

int e2b_query(struct api_call *c, const char *name, char *out, size_t n, struct api_error *e)
{
	const char *v = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, name);
	int r;

	if (!v)
		return 0;
	/* the server keeps escapes (server.c keep_escapes): decode here */
	r = percent_decode(v, strlen(v), 0, out, n, NULL);
	if (r == -ENOBUFS)
		return api_error_set(e, 400, "invalid_path", "'%s' is too long", name);
	if (r < 0)
		return api_error_set(e, 400, "bad_url", "a bad '%%' escape in '%s'", name);
	return 1;
}

int e2b_path(const char *in, struct api_route *r, struct api_error *e)
{
	size_t hl = strlen(SANDBOX_HOME);

	if (!strncmp(in, SANDBOX_HOME, hl) && (in[hl] == '\0' || in[hl] == '/')) {
		in += hl;
		while (*in == '/')
			in++;
	} else if (in[0] == '~' && (in[1] == '\0' || in[1] == '/')) {
		in += 1 + (in[1] == '/');
	} else if (in[0] == '/') {
		return api_error_set(
			e, 400, "invalid_path",
			"'%.200s' is outside the sandbox's files: codecell serves /home/user (the workspace) only",
			in);
	}
	r->path[0] = '\0';
	r->path_len = 0;
	return *in ? api_path_check(in, strlen(in), r, e) : 0;
}

void e2b_abs_path(const char *rel, char *out, size_t n)
{
	snprintf(out, n, "%s%s%s", SANDBOX_HOME, *rel ? "/" : "", rel);
}

/* ---- the sandbox of a request ---- */

struct engine_session *e2b_sandbox_session(struct api_call *c, enum MHD_Result *ret)
{
	struct e2b_state *st = e2b_state_of(c->srv);
	struct engine_session *e = NULL;
	struct e2b_sandbox *sb;

	pthread_mutex_lock(&st->lock);
	sb = e2b_find_seen(c, e2b_of(c)->id);
	if (sb) {
		e = sb->entry;
		engine_session_ref(e);
	}
	pthread_mutex_unlock(&st->lock);
	if (!e)
		*ret = api_respond_errorf(
			c, 502, "sandbox_not_found",
			"the sandbox '%s' was not found: it was killed or its timeout ran out",
			e2b_of(c)->id);
	return e;
}
