/* http/exec.h: running code for a request, and the executions in flight
 * (exec.c). */
#ifndef CODECELL_HTTP_EXEC_H
#define CODECELL_HTTP_EXEC_H

#include <microhttpd.h>

#include "http/http.h"
#include "http/request.h"
#include "engine/sessions.h"

struct api_jobs;

/* Run code (exec.c): in the entry's session, or one-shot when entry is
 * NULL; answers with the result object or an NDJSON stream. */
enum MHD_Result api_exec(struct api_call *c, struct engine_session *entry, struct api_request *req);
/* A server's executions in flight (its jobs): made with the server;
 * stopped all at once at shutdown (no new one starts after).  0 or
 * -ENOMEM.  stop_all and free accept NULL. */
int api_jobs_new(struct api_jobs **ret);
void api_jobs_stop_all(struct api_jobs *js);
void api_jobs_free(struct api_jobs *js);

#endif
