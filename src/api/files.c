/* Files in a session's workspace: PUT uploads, GET downloads or lists,
 * DELETE removes.  The operations are the engine's (engine/files.h: the
 * paths resolved beneath the workspace root, uploads renamed into
 * place); route.c has already refused "." and ".." components.  This
 * file translates HTTP to them and their errors back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/files.h"
#include "api/handlers.h"
#include "http/http.h"
#include "http/policy.h"
#include "http/internal.h"
#include "engine/sessions.h"
#include "engine/files.h"
#include "util/macro.h"
#include "util/banned.h"

enum MHD_Result api_files_error(struct api_call *c, int err, const char *what, const char *path,
				bool e2b)
{
	struct engine_files_error fe;
	struct api_error e = { 0 };
	char extra[96] = "";

	engine_files_error(err, what, path, &fe);
	e.http = e2b ? fe.e2b_http : fe.http;
	e.code = fe.code;
	if (!e2b && (err == -ENOSPC || err == -EDQUOT))
		snprintf(extra, sizeof(extra), " or create the session with a larger limits.workspace_size");
	else if (err == -E2BIG)
		snprintf(extra, sizeof(extra), " (%u bytes)", API_FILE_MAX);
	snprintf(e.message, sizeof(e.message), "%s%s", fe.message, extra);
	return api_respond_error(c, &e);
}

static enum MHD_Result fs_error(struct api_call *c, int err, const char *what)
{
	return api_files_error(c, err, what, c->route.path, false);
}

int api_ws_of(struct engine_session *e, struct engine_ws *w)
{
	return engine_ws_of_session(e->s, w);
}

/* ---- PUT ----
 *
 * The body is written as it arrives: libmicrohttpd hands each chunk from
 * its connection buffer (MHD_OPTION_CONNECTION_MEMORY_LIMIT) to
 * api_upload_data(), which writes it to a temporary file beside the
 * target; api_handle_files() renames it into place once the body is
 * complete.  Eight 63 MiB uploads held whole added 480 MiB to the
 * server's RSS.  The session lock is held to open the file and to rename
 * it, not in between: a slow client must not hold up the session's
 * executions.  A restart in between gives the session a new workspace,
 * which the rename checks for (ws_dev, ws_ino). */

static void upload_fail(struct api_upload *u, int err)
{
	if (!u->err)
		u->err = err;
	engine_upload_drop(&u->u); /* at once: a full workspace gets its space back */
}

/* The first chunk: open the temporary file under the session lock.
 * Whatever stands in the way (no session, no workspace, no file name)
 * is answered by api_handle_files() once the body is read. */
static void upload_begin(struct api_call *c, struct api_upload *u)
{
	struct engine_session *e;
	struct engine_ws w;
	int r;

	u->begun = true;
	u->u.dir = u->u.fd = -1;
	if (strcmp(c->method, "PUT") != 0 || !c->route.path_len)
		return;
	e = api_session_get(c, c->route.session_id);
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	if (api_ws_of(e, &w) == 0) {
		r = engine_upload_open(&u->u, &w, c->route.path);
		if (r < 0)
			u->err = r;
	}
	pthread_mutex_unlock(&e->lock);
	engine_session_unref(e);
}

void api_upload_data(struct api_call *c, const char *data, size_t len)
{
	struct api_upload *u = &c->upload;
	int r;

	if (!u->begun)
		upload_begin(c, u);
	if (u->u.fd < 0)
		return; /* dropped */
	r = engine_upload_write(&u->u, data, len, API_FILE_MAX);
	if (r < 0)
		upload_fail(u, r);
}

void api_upload_release(struct api_call *c)
{
	if (c->upload.begun)
		engine_upload_drop(&c->upload.u);
}

/* The body is complete: into place (an empty body makes an empty file).
 * 0 or -errno (-E2BIG: over API_FILE_MAX; -ESTALE: the session
 * restarted meanwhile). */
static int upload_finish(struct api_call *c, const struct engine_ws *w, bool *ret_replaced)
{
	struct api_upload *u = &c->upload;
	int r;

	if (!u->begun) { /* an empty body */
		u->begun = true;
		u->err = engine_upload_open(&u->u, w, c->route.path);
	}
	r = u->err;
	if (r == 0)
		r = engine_upload_commit(&u->u, w, c->route.path, ret_replaced);
	engine_upload_drop(&u->u);
	return r;
}

int api_upload_finish(struct api_call *c, struct engine_session *e, bool *ret_replaced)
{
	struct engine_ws w;
	int r;

	pthread_mutex_lock(&e->lock);
	r = api_ws_of(e, &w);
	if (r == 0)
		r = upload_finish(c, &w, ret_replaced);
	pthread_mutex_unlock(&e->lock);
	return r;
}

static enum MHD_Result files_put(struct api_call *c, const struct engine_ws *w, int *ret_r)
{
	struct api_upload *u = &c->upload;
	bool replaced = false;
	int r;

	if (!c->route.path_len) {
		*ret_r = -EISDIR;
		return api_respond_errorf(c, 400, "invalid_path", "PUT needs a file name: /v1/sessions/{id}/files/{path}");
	}
	r = *ret_r = upload_finish(c, w, &replaced);
	if (r == -E2BIG)
		return api_respond_errorf(c, 413, "body_too_large",
					  "the body is over the limit of %u bytes here", API_FILE_MAX);
	if (r < 0)
		return fs_error(c, r, "write");
	return api_respond_json(c, replaced ? 200 : 201,
				json_pack("{s:s, s:I, s:b}", "path", c->route.path, "size",
					  (json_int_t)u->u.size, "replaced", replaced));
}

/* ---- GET ---- */

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" : "other";
}

static int list_entry(void *arg, int dir, const char *name, const char *rel, const struct stat *st)
{
	(void)dir;
	(void)rel;
	return json_array_append_new(arg, json_pack("{s:s, s:s, s:I, s:I}", "name", name, "type",
						    type_name(st->st_mode), "size",
						    (json_int_t)st->st_size, "mtime",
						    (json_int_t)st->st_mtime)) < 0 ? -ENOMEM : 0;
}

/* The file is read here rather than by libmicrohttpd's sendfile(): the
 * sandboxed code may truncate it while it is sent, and a short sendfile()
 * made libmicrohttpd retry forever at full CPU on an open connection.  A
 * short read now ends the response (the connection is closed). */
static ssize_t file_read(void *cls, uint64_t pos, char *out, size_t max)
{
	ssize_t n = pread((int)(intptr_t)cls, out, max, (off_t)pos);

	return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void file_close(void *cls)
{
	close((int)(intptr_t)cls);
}

enum MHD_Result api_send_file(struct api_call *c, int fd, const struct stat *st)
{
	struct MHD_Response *r = MHD_create_response_from_callback(
		(uint64_t)st->st_size, 64 * 1024, file_read, (void *)(intptr_t)fd, file_close);
	enum MHD_Result ret;

	if (!r) {
		close(fd);
		return MHD_NO;
	}
	api_response_headers(r, "application/octet-stream");
	ret = MHD_queue_response(c->conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result files_get(struct api_call *c, const struct engine_ws *w)
{
	/* uploads in progress too: what a client sees of its own */
	struct engine_files_listing l = { .depth = 1, .uploads = true };
	struct stat st;
	json_t *entries;
	int fd = engine_files_open(w, c->route.path, &st), r;

	if (fd < 0)
		return fs_error(c, fd, "open");
	if (S_ISREG(st.st_mode))
		return api_send_file(c, fd, &st);
	close(fd);
	entries = json_array();
	r = engine_files_list(w, c->route.path, &l, list_entry, entries);
	if (r < 0) {
		json_decref(entries);
		return fs_error(c, r, "list");
	}
	return api_respond_json(c, 200,
				json_pack("{s:s, s:s, s:o, s:b, s:i}", "path", c->route.path, "type",
					  "directory", "entries", entries, "truncated", l.truncated,
					  "skipped_non_utf8", (int)l.skipped));
}

/* ---- DELETE ---- */

static enum MHD_Result files_delete(struct api_call *c, const struct engine_ws *w, int *ret_r)
{
	int r;

	if (!c->route.path_len) {
		*ret_r = -EBUSY;
		return api_respond_errorf(c, 400, "invalid_path", "the workspace root cannot be deleted");
	}
	r = *ret_r = engine_files_remove(w, c->route.path);
	if (r < 0)
		return fs_error(c, r, "delete");
	return api_respond_json(c, 200, json_pack("{s:s, s:b}", "path", c->route.path, "deleted", 1));
}

enum MHD_Result api_handle_files(struct api_call *c)
{
	bool put = !strcmp(c->method, "PUT"), del = !strcmp(c->method, "DELETE");
	enum engine_action a = put ? ACTION_WRITE_FILE : ACTION_DELETE_FILE;
	uint64_t bytes = put ? c->upload.u.size : 0;
	struct engine_session *e;
	struct engine_ws w;
	enum MHD_Result ret;
	int r;

	e = api_call_session(c, &ret);
	if (!e)
		return ret;
	/* the engine's policy: file size cap, approvals */
	if ((put || del) && api_check_file(c, e, a, bytes, &ret) < 0) {
		engine_session_unref(e);
		return ret;
	}
	pthread_mutex_lock(&e->lock);
	r = api_ws_of(e, &w);
	if (r == -ESRCH)
		ret = api_respond_errorf(c, 404, "session_not_found", "the session '%s' was deleted", e->id);
	else if (r < 0)
		ret = api_respond_errorf(c, 409, "no_workspace",
					 "the session has no workspace yet: run code or restart it first");
	else if (put)
		ret = files_put(c, &w, &r);
	else if (del)
		ret = files_delete(c, &w, &r);
	else
		ret = files_get(c, &w);
	pthread_mutex_unlock(&e->lock);
	if (put || del)
		api_audit_file(c, e, a, bytes, NULL, r);
	engine_session_unref(e);
	return ret;
}
