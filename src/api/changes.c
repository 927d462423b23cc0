/* A project session's changes: GET /v1/sessions/{id}/changes, POST
 * .../changes/apply and .../changes/discard (engine/changes.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/handlers.h"
#include "http/http.h"
#include "http/policy.h"
#include "engine/changes.h"
#include "engine/sessions.h"
#include "engine/policy.h"
#include "util/macro.h"
#include "util/json.h"
#include "util/parse.h"
#include "util/sha256.h"
#include "util/banned.h"

/* The session, locked, with a project: 0; else answered in *ret. */
static int locked_project(struct api_call *c, struct engine_session **ret_e,
			  struct changes_base **ret_b, int *ret_up, enum MHD_Result *ret)
{
	struct engine_session *e = api_call_session(c, ret);
	struct engine_session_error err = { 0 };

	if (!e)
		return -ENOENT;
	pthread_mutex_lock(&e->lock);
	if (engine_session_project(e, ret_b, ret_up, &err) == 0) {
		*ret_e = e;
		return 0;
	}
	*ret = api_respond_errorf(c, err.http, err.code, "%s", err.message);
	pthread_mutex_unlock(&e->lock);
	engine_session_unref(e);
	return -EPERM;
}

static void unlock_project(struct engine_session *e)
{
	pthread_mutex_unlock(&e->lock);
	engine_session_unref(e);
}

/* engine_changes_read() failed with r. */
static enum MHD_Result list_failed(struct api_call *c, int r)
{
	return api_respond_errorf(c, 500, "changes_failed", "cannot read the changes: %s",
				  strerror(-r));
}

enum MHD_Result api_handle_changes(struct api_call *c)
{
	const char *q = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "max_bytes");
	uint64_t max = CHANGES_DIFF_MAX;
	struct engine_session *e;
	struct changes_base *b;
	struct engine_changes ch;
	struct buf diff;
	enum MHD_Result ret;
	bool cut = false;
	json_t *j;
	int up, r;

	if (q && (parse_size(q, &max) < 0 || max < 1024 || max > (16u << 20)))
		return api_respond_errorf(c, 400, "invalid_value",
					  "'max_bytes' must be a size from 1K to 16M, not '%.32s'",
					  q);
	if (locked_project(c, &e, &b, &up, &ret) < 0)
		return ret;
	/* the digest an apply's approval names: of the bytes, not only of
	 * the diff's text (which says "Binary files ... differ") */
	r = engine_changes_read(up, b, &ch);
	if (r == -ECANCELED) {
		unlock_project(e);
		return api_respond_errorf(
			c, 409, "changes_moved",
			"the changes moved while they were read (code in the session "
			"still writes): look at them again once it stops");
	}
	if (r < 0) {
		unlock_project(e);
		return list_failed(c, r);
	}
	buf_init(&diff, (size_t)max);
	r = engine_changes_diff(up, b, &ch, &diff, &cut);
	if (r < 0) {
		ret = api_respond_errorf(c, 500, "changes_failed", "cannot diff the changes: %s",
					 strerror(-r));
	} else {
		j = engine_changes_json(b, &ch, &diff, cut);
		ret = j ? api_respond_json(c, 200, j)
			: api_respond_errorf(c, 500, "internal", "out of memory");
	}
	buf_release(&diff);
	engine_changes_release(&ch);
	unlock_project(e);
	return ret;
}

/* The body's "changes_sha256", if any: the changes the caller (and the
 * person who approved) saw. */
static int expected_digest(struct api_call *c, char out[2 * SHA256_LEN + 1],
			   struct json_body_error *je)
{
	json_t *o = NULL, *v;
	int r = 0;

	out[0] = '\0';
	if (!c->body_len)
		return 0;
	if (json_body_read(c->body, c->body_len, 0, &o, je) < 0)
		return -EINVAL;
	v = json_object_get(o, "changes_sha256");
	if (!json_is_object(o) || json_object_size(o) != (v ? 1u : 0u) ||
	    (v && (!json_is_string(v) || json_string_length(v) != 2 * SHA256_LEN)))
		r = -EINVAL;
	else if (v)
		snprintf(out, 2 * SHA256_LEN + 1, "%s", json_string_value(v));
	json_decref(o);
	return r;
}

enum MHD_Result api_handle_changes_apply(struct api_call *c)
{
	struct engine_session_error err;
	struct json_body_error je = { 0 };
	struct engine_session *e;
	struct engine_caller cl;
	char want[2 * SHA256_LEN + 1];
	enum MHD_Result ret;
	size_t n = 0;
	int r;

	r = expected_digest(c, want, &je);
	if (r < 0 && je.problem == JSON_BODY_DUPLICATE)
		return api_respond_errorf(c, 400, "bad_json", "%s", je.message);
	if (r < 0)
		return api_respond_errorf(
			c, 400, "invalid_value",
			"the body is {} or {\"changes_sha256\": \"<64 hex digits from GET "
			".../changes>\"}");
	e = api_call_session(c, &ret);
	if (!e)
		return ret;
	/* the engine reads the changes, has the policy (and a person) pass
	 * them, and applies exactly those */
	api_caller(c, &cl);
	r = engine_session_apply(&cl, e, *want ? want : NULL, &n, &err);
	if (r == 0)
		ret = api_respond_json(c, 200,
				       json_pack("{s:s, s:i}", "project",
						 e->project ? e->project : "", "applied",
						 (json_int_t)n));
	else
		ret = api_session_refused(c, &cl, r, &err);
	engine_session_unref(e);
	return ret;
}

enum MHD_Result api_handle_changes_discard(struct api_call *c)
{
	struct engine_session_error err;
	struct engine_discarded d;
	struct engine_session *e;
	enum MHD_Result ret;

	e = api_call_session(c, &ret);
	if (!e)
		return ret;
	/* every path the changes touch made what the project has, through
	 * the overlay: the program sees the project again there */
	if (engine_session_discard(e, &d, &err) < 0)
		ret = api_respond_errorf(c, err.http, err.code, "%s", err.message);
	else
		ret = api_respond_json(c, 200,
				       json_pack("{s:s, s:i, s:i}", "project", d.project,
						 "discarded", (json_int_t)d.discarded,
						 "kept_unreadable", (json_int_t)d.kept));
	engine_session_unref(e);
	return ret;
}
