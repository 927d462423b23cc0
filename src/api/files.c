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

#include "http/upload.h"
#include "api/handlers.h"
#include "http/http.h"
#include "http/policy.h"
#include "http/internal.h"
#include "engine/sessions.h"
#include "engine/files.h"
#include "util/macro.h"
#include "util/banned.h"

static enum MHD_Result fs_error(struct api_call *c, int err, const char *what)
{
	return api_files_error(c, err, what, c->route.path, false);
}

static enum MHD_Result files_put(struct api_call *c, const struct engine_ws *w, int *ret_r)
{
	struct api_upload *u = &c->upload;
	bool replaced = false;
	int r;

	if (!c->route.path_len) {
		*ret_r = -EISDIR;
		return api_respond_errorf(c, 400, "invalid_path",
					  "PUT needs a file name: /v1/sessions/{id}/files/{path}");
	}
	r = *ret_r = api_upload_finish_ws(c, w, &replaced);
	if (r == -E2BIG)
		return api_respond_errorf(c, 413, "body_too_large",
					  "the body is over the limit of %u bytes here",
					  API_FILE_MAX);
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
						    (json_int_t)st->st_mtime)) < 0
		       ? -ENOMEM
		       : 0;
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
				json_pack("{s:s, s:s, s:o, s:b, s:i}", "path", c->route.path,
					  "type", "directory", "entries", entries, "truncated",
					  l.truncated, "skipped_non_utf8", (int)l.skipped));
}

/* ---- DELETE ---- */

static enum MHD_Result files_delete(struct api_call *c, const struct engine_ws *w, int *ret_r)
{
	int r;

	if (!c->route.path_len) {
		*ret_r = -EBUSY;
		return api_respond_errorf(c, 400, "invalid_path",
					  "the workspace root cannot be deleted");
	}
	r = *ret_r = engine_files_remove(w, c->route.path);
	if (r < 0)
		return fs_error(c, r, "delete");
	return api_respond_json(c, 200,
				json_pack("{s:s, s:b}", "path", c->route.path, "deleted", 1));
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
		ret = api_respond_errorf(c, 404, "session_not_found",
					 "the session '%s' was deleted", e->id);
	else if (r < 0)
		ret = api_respond_errorf(
			c, 409, "no_workspace",
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
