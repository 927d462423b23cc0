/* libFuzzer target: request paths through the /v1 door's router, and output bytes
 * through the UTF-8 repair the NDJSON stream uses.  A workspace path that
 * comes out must be relative, without "." or ".." components, without
 * NUL, and valid UTF-8; a repaired text must be valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/request.h"
#include "http/route.h"
#include "api/route.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const struct api_route *r)
{
	const char *p = r->path;
	uint64_t bad;

	if (strlen(p) != r->path_len || r->path_len > API_PATH_MAX)
		abort();
	if (!utf8_valid(p, r->path_len, &bad))
		abort();
	if (r->path_len && (p[0] == '/' || p[r->path_len - 1] == '/' || strstr(p, "//")))
		abort();
	for (const char *c = p; *c; c += strcspn(c, "/") + (c[strcspn(c, "/")] == '/')) {
		size_t n = strcspn(c, "/");

		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *url = malloc(size + 1);
	struct api_route r;
	struct api_error e;
	size_t len, keep;
	char *text;
	uint64_t bad;

	if (!url)
		return 0;
	memcpy(url, data, size);
	url[size] = '\0';
	if (api_route_parse(url, &r, &e) == 0) {
		if (r.id == API_R_SESSION_FILES)
			check_path(&r);
		if (r.id >= API_R_SESSION && r.id <= API_R_SESSION_FILES &&
		    !api_session_id_valid(r.session_id))
			abort();
		if (r.id == API_R_ASSET && (strchr(r.path, '/') || strstr(r.path, "..")))
			abort();
	} else if (e.http < 400 || e.http > 599 || !e.code) {
		abort();
	}
	keep = utf8_complete_len((const char *)data, size);
	text = utf8_repair((const char *)data, keep, &len);
	if (keep > size || (text && !utf8_valid(text, len, &bad)))
		abort();
	free(text);
	free(url);
	return 0;
}
