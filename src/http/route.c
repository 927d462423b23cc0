/* Routing: decode the path, then match it against a short table. */
#include "http/route.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/macro.h"
#include "util/utf8.h"
#include "util/percent.h"
#include "util/banned.h"

/* Percent-decode src[0..n) into out (room for n + 1).  A %00 or a
 * malformed escape is an error: a NUL would cut the path short. */
static int path_decode(const char *src, size_t n, char *out, size_t *ret_len, struct api_error *e)
{
	int r = percent_decode(src, n, 0, out, n + 1, ret_len);

	if (r == -EILSEQ)
		return api_error_set(e, 400, "bad_url", "%%00 (a NUL byte) is not allowed in a path");
	if (r < 0)
		return api_error_set(e, 400, "bad_url", "a '%%' is not followed by two hex digits");
	return 0;
}

int api_session_id_valid(const char *id)
{
	size_t n = strspn(id, "0123456789abcdef");

	return n == API_ID_LEN && id[n] == '\0';
}

/* A workspace path: components of 1..API_NAME_MAX bytes, none "." or
 * "..", valid UTF-8; one trailing '/' is dropped. */
static int check_path(const char *p, size_t n, struct api_route *r, struct api_error *e)
{
	uint64_t bad;

	if (n && p[n - 1] == '/')
		n--;
	if (n && p[n - 1] == '/')
		return api_error_set(e, 400, "invalid_path", "empty path component ('//' is not allowed)");
	if (n > API_PATH_MAX)
		return api_error_set(e, 400, "invalid_path", "the path is over %d bytes", API_PATH_MAX);
	if (!utf8_valid(p, n, &bad))
		return api_error_set(e, 400, "invalid_path", "the path is not valid UTF-8");
	for (size_t i = 0; i < n;) {
		size_t len = 0;

		while (i + len < n && p[i + len] != '/')
			len++;
		if (len == 0)
			return api_error_set(e, 400, "invalid_path",
					     "empty path component (absolute paths and '//' are not allowed: paths are relative to the workspace)");
		if ((len == 1 && p[i] == '.') || (len == 2 && p[i] == '.' && p[i + 1] == '.'))
			return api_error_set(e, 400, "invalid_path",
					     "'.' and '..' are not allowed in a path: name files relative to the workspace");
		if (len > API_NAME_MAX)
			return api_error_set(e, 400, "invalid_path", "a path component is over %d bytes",
					     API_NAME_MAX);
		i += len + 1;
	}
	memcpy(r->path, p, n);
	r->path[n] = '\0';
	r->path_len = n;
	return 0;
}

int api_path_check(const char *p, size_t n, struct api_route *r, struct api_error *e)
{
	return check_path(p, n, r, e);
}

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
		return n <= 6 ? 0 : check_path(tail + 6, n - 6, r, e);
	}
	return api_error_set(e, 404, "not_found", "no such route (see docs/API.md)");
}

static const struct {
	const char *path;
	enum api_route_id id;
} fixed[] = {
	{ "/healthz", API_R_HEALTHZ },	       { "/metrics", API_R_METRICS },
	{ "/v1/execute", API_R_EXECUTE },      { "/v1/sessions", API_R_SESSIONS },
	{ "/v1/sessions/", API_R_SESSIONS },   { "/v1/agent", API_R_AGENT },
	{ "/mcp", API_R_MCP },                 { "/v1/approvals", API_R_APPROVALS },
	{ "/v1/tools", API_R_TOOLS },
};

int api_route_parse(const char *url, struct api_route *ret, struct api_error *e)
{
	static const char prefix[] = "/v1/sessions/";
	char path[API_URL_MAX + 1];
	size_t raw = strcspn(url, "?"), n = 0;

	memset(ret, 0, sizeof(*ret));
	if (raw > API_URL_MAX)
		return api_error_set(e, 414, "url_too_long", "the path is over %d bytes", API_URL_MAX);
	if (path_decode(url, raw, path, &n, e) < 0)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		if (!strcmp(path, fixed[i].path)) {
			ret->id = fixed[i].id;
			return 0;
		}
	if (!strncmp(path, prefix, sizeof(prefix) - 1))
		return route_session(path + sizeof(prefix) - 1, n - (sizeof(prefix) - 1), ret, e);
	/* /v1/approvals/ID: 16 lowercase hex digits */
	if (!strncmp(path, "/v1/approvals/", 14) && n == 14 + 16 &&
	    strspn(path + 14, "0123456789abcdef") == 16) {
		ret->id = API_R_APPROVAL;
		memcpy(ret->session_id, path + 14, 17);
		return 0;
	}
	/* /v1/tools/NAME */
	if (!strncmp(path, "/v1/tools/", 10) && n > 10 && n <= 10 + 64 &&
	    strspn(path + 10, "abcdefghijklmnopqrstuvwxyz_") == n - 10) {
		ret->id = API_R_TOOL;
		memcpy(ret->path, path + 10, n - 10 + 1);
		ret->path_len = n - 10;
		return 0;
	}
	if (path[0] == '/' && strncmp(path, "/v1/", 4) != 0 && n < 64 &&
	    strspn(path + 1, "abcdefghijklmnopqrstuvwxyz0123456789-_.") == n - 1 &&
	    !strstr(path, "..")) {
		ret->id = API_R_ASSET;
		memcpy(ret->path, path[1] ? path + 1 : "index.html", path[1] ? n : sizeof("index.html"));
		ret->path_len = strlen(ret->path);
		return 0;
	}
	return api_error_set(e, 404, "not_found", "no such route (see docs/API.md)");
}
