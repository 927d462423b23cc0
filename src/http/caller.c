/* Whose call it is: the sessions a caller may reach (http.h). */
#include <stdbool.h>

#include "http/http.h"
#include "http/internal.h"
#include "engine/sessions.h"
#include "util/banned.h"

bool api_sees(const struct api_call *c, const struct engine_session *e)
{
	return !e->client || e->client == c->client || c->client == &c->srv->policies->clients[0];
}

struct engine_session *api_session_get(struct api_call *c, const char *id)
{
	struct engine_session *e = engine_sessions_get(&c->srv->reg, id);

	if (e && !api_sees(c, e)) {
		engine_session_unref(e);
		e = NULL;
	}
	return e;
}

struct engine_session *api_call_session(struct api_call *c, enum MHD_Result *ret)
{
	struct engine_session *e = api_session_get(c, c->route.session_id);

	if (!e)
		*ret = api_respond_errorf(
			c, 404, "session_not_found",
			"no session '%s' (sessions end when deleted or after their idle_timeout)",
			c->route.session_id);
	return e;
}
