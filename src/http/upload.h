/* http/upload.h: a files route's body streamed into the workspace, a
 * file sent, the workspace's errors (upload.c). */
#ifndef CODECELL_HTTP_UPLOAD_H
#define CODECELL_HTTP_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include <microhttpd.h>

#include "http/http.h"
#include "engine/files.h"
#include "engine/sessions.h"

/* A chunk of a files route's body (files.c): a PUT's is written to the
 * workspace, any other's dropped.  An error is kept for the answer
 * (api_handle_files) and the rest of the body is read and dropped. */
void api_upload_data(struct api_call *c, const char *data, size_t len);
/* The request is over, answered or not (the client went away): a
 * temporary file not renamed into place is removed. */
void api_upload_release(struct api_call *c);

/* Under e->lock: e's workspace (engine/files.h) now; 0, -ESRCH (the
 * session was deleted) or -ENOENT (no workspace yet). */
int api_ws_of(struct engine_session *e, struct engine_ws *w);
/* A workspace operation's error in /v1's shape (or, e2b, envd's
 * status): the engine's one table (engine_files_error). */
enum MHD_Result api_files_error(struct api_call *c, int err, const char *what, const char *path,
				bool e2b);
/* Answer with the regular file fd (taken) as application/octet-stream. */
enum MHD_Result api_send_file(struct api_call *c, int fd, const struct stat *st);
/* The upload in c->upload (for c->route.path) into place in e's
 * workspace, as a PUT does.  0 or -errno (-E2BIG, -ESTALE, ...). */
int api_upload_finish(struct api_call *c, struct engine_session *e, bool *ret_replaced);
/* The same under e->lock, with its workspace w (api_ws_of). */
int api_upload_finish_ws(struct api_call *c, const struct engine_ws *w, bool *ret_replaced);

#endif
