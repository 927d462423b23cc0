/* Routing: decode the path once, then ask each door's resolver. */
#include "http/route.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/macro.h"
#include "util/utf8.h"
#include "util/percent.h"
#include "util/banned.h"

int http_path_decode(const char *url, char *out, size_t *ret_len, struct api_error *e)
{
	size_t raw = strcspn(url, "?");
	int r;

	if (raw > API_URL_MAX)
		return api_error_set(e, 414, "url_too_long", "the path is over %d bytes",
				     API_URL_MAX);
	r = percent_decode(url, raw, 0, out, raw + 1, ret_len);
	if (r == -EILSEQ)
		return api_error_set(e, 400, "bad_url",
				     "%%00 (a NUL byte) is not allowed in a path");
	if (r < 0)
		return api_error_set(e, 400, "bad_url", "a '%%' is not followed by two hex digits");
	return 0;
}

int http_route_resolve(const char *url, const struct http_resolver *res, size_t n_res,
		       struct api_route *ret, size_t *ret_which, struct api_error *e)
{
	char path[API_URL_MAX + 1];
	size_t n = 0;

	memset(ret, 0, sizeof(*ret));
	if (http_path_decode(url, path, &n, e) < 0)
		return -EINVAL;
	for (size_t i = 0; i < n_res; i++) {
		int r = res[i].resolve(path, n, ret, e);

		if (r < 0)
			return -EINVAL;
		if (r > 0) {
			*ret_which = i;
			return 0;
		}
		memset(ret, 0, sizeof(*ret));
	}
	return api_error_set(e, 404, "not_found", "no such route (see docs/API.md)");
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
		return api_error_set(e, 400, "invalid_path",
				     "empty path component ('//' is not allowed)");
	if (n > API_PATH_MAX)
		return api_error_set(e, 400, "invalid_path", "the path is over %d bytes",
				     API_PATH_MAX);
	if (!utf8_valid(p, n, &bad))
		return api_error_set(e, 400, "invalid_path", "the path is not valid UTF-8");
	for (size_t i = 0; i < n;) {
		size_t len = 0;

		while (i + len < n && p[i + len] != '/')
			len++;
		if (len == 0)
			return api_error_set(
				e, 400, "invalid_path",
				"empty path component (absolute paths and '//' are not allowed: paths are relative to the workspace)");
		if ((len == 1 && p[i] == '.') || (len == 2 && p[i] == '.' && p[i + 1] == '.'))
			return api_error_set(
				e, 400, "invalid_path",
				"'.' and '..' are not allowed in a path: name files relative to the workspace");
		if (len > API_NAME_MAX)
			return api_error_set(e, 400, "invalid_path",
					     "a path component is over %d bytes", API_NAME_MAX);
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
