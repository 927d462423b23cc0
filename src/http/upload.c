/* A session's workspace as the HTTP doors share it: a body streamed
 * into a file as it arrives (PUT .../files, E2B's uploads), a file sent,
 * the engine's file errors in a door's shape (upload.h).  The operations
 * are the engine's (engine/files.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/upload.h"
#include "http/http.h"
#include "engine/sessions.h"
#include "engine/files.h"
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
		snprintf(extra, sizeof(extra),
			 " or create the session with a larger limits.workspace_size");
	else if (err == -E2BIG)
		snprintf(extra, sizeof(extra), " (%u bytes)", API_FILE_MAX);
	snprintf(e.message, sizeof(e.message), "%s%s", fe.message, extra);
	return api_respond_error(c, &e);
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
int api_upload_finish_ws(struct api_call *c, const struct engine_ws *w, bool *ret_replaced)
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
		r = api_upload_finish_ws(c, &w, ret_replaced);
	pthread_mutex_unlock(&e->lock);
	return r;
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
