/* The /v1 door's router: its routes and the playground's, matched
 * against a path the transport decoded (http/route.c). */
#include "api/route.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "http/request.h"
#include "util/macro.h"
#include "util/banned.h"

static const struct {
	const char *name;
	enum api_route_id id;
} session_verbs[] = {
	{ "execute", API_R_SESSION_EXECUTE },
	{ "interrupt", API_R_SESSION_INTERRUPT },
	{ "restart", API_R_SESSION_RESTART },
	{ "fork", API_R_SESSION_FORK },
	{ "changes", API_R_SESSION_CHANGES },
	{ "changes/apply", API_R_SESSION_CHANGES_APPLY },
	{ "changes/discard", API_R_SESSION_CHANGES_DISCARD },
};

/* rest: what follows "/v1/sessions/" */
static int route_session(const char *rest, size_t n, struct api_route *r, struct api_error *e)
{
	size_t idlen = 0;
	const char *tail;

	while (idlen < n && rest[idlen] != '/')
		idlen++;
	if (idlen != API_ID_LEN)
		return api_error_set(e, 404, "session_not_found", "no session '%.*s'",
				     (int)(idlen > 64 ? 64 : idlen), rest);
	memcpy(r->session_id, rest, API_ID_LEN);
	r->session_id[API_ID_LEN] = '\0';
	if (!api_session_id_valid(r->session_id))
		return api_error_set(e, 404, "session_not_found", "no session '%s'", r->session_id);
	tail = rest + idlen;
	n -= idlen;
	if (n == 0 || (n == 1 && *tail == '/')) {
		r->id = API_R_SESSION;
		return 0;
	}
	tail++, n--;
	for (size_t i = 0; i < ARRAY_SIZE(session_verbs); i++) {
		size_t l = strlen(session_verbs[i].name);

		if (n >= l && !memcmp(tail, session_verbs[i].name, l) &&
		    (n == l || (n == l + 1 && tail[l] == '/'))) {
			r->id = session_verbs[i].id;
			return 0;
		}
	}
	if (n >= 5 && !memcmp(tail, "files", 5) && (n == 5 || tail[5] == '/')) {
		r->id = API_R_SESSION_FILES;
		return n <= 6 ? 0 : api_path_check(tail + 6, n - 6, r, e);
	}
	return api_error_set(e, 404, "not_found", "no such route (see docs/API.md)");
}

static const struct {
	const char *path;
	enum api_route_id id;
} fixed[] = {
	{ "/v1/execute", API_R_EXECUTE },     { "/v1/sessions", API_R_SESSIONS },
	{ "/v1/sessions/", API_R_SESSIONS },  { "/v1/agent", API_R_AGENT },
	{ "/v1/approvals", API_R_APPROVALS }, { "/v1/tools", API_R_TOOLS },
};

int api_route_resolve(const char *path, size_t n, struct api_route *ret, struct api_error *e)
{
	static const char prefix[] = "/v1/sessions/";

	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		if (!strcmp(path, fixed[i].path)) {
			ret->id = fixed[i].id;
			return 1;
		}
	if (!strncmp(path, prefix, sizeof(prefix) - 1))
		return route_session(path + sizeof(prefix) - 1, n - (sizeof(prefix) - 1), ret, e) <
				       0
			       ? -EINVAL
			       : 1;
	/* /v1/approvals/ID: 16 lowercase hex digits */
	if (!strncmp(path, "/v1/approvals/", 14) && n == 14 + 16 &&
	    strspn(path + 14, "0123456789abcdef") == 16) {
		ret->id = API_R_APPROVAL;
		memcpy(ret->session_id, path + 14, 17);
		return 1;
	}
	/* /v1/tools/NAME */
	if (!strncmp(path, "/v1/tools/", 10) && n > 10 && n <= 10 + 64 &&
	    strspn(path + 10, "abcdefghijklmnopqrstuvwxyz_") == n - 10) {
		ret->id = API_R_TOOL;
		memcpy(ret->path, path + 10, n - 10 + 1);
		ret->path_len = n - 10;
		return 1;
	}
	if (path[0] == '/' && strncmp(path, "/v1/", 4) != 0 && n < 64 &&
	    strspn(path + 1, "abcdefghijklmnopqrstuvwxyz0123456789-_.") == n - 1 &&
	    !strstr(path, "..")) {
		ret->id = API_R_ASSET;
		memcpy(ret->path, path[1] ? path + 1 : "index.html",
		       path[1] ? n : sizeof("index.html"));
		ret->path_len = strlen(ret->path);
		return 1;
	}
	if (!strncmp(path, "/v1/", 4))
		return api_error_set(e, 404, "not_found", "no such route (see docs/API.md)");
	return 0;
}

int api_route_parse(const char *url, struct api_route *ret, struct api_error *e)
{
	static const struct http_resolver doors[] = { { api_route_resolve } };
	size_t which;

	return http_route_resolve(url, doors, 1, ret, &which, e);
}
