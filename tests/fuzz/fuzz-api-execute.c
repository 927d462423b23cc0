/* libFuzzer target: the bodies of POST /v1/execute and POST
 * /v1/sessions/{id}/execute, as a client sends them.  The first byte picks
 * the body; the rest is the body.  A parse either fails with an error the
 * API can send (an HTTP status, a code, a message) or gives a request
 * whose strings are what the engine accepts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum api_body kind;
	struct api_request r;
	struct api_error e;

	if (size < 1)
		return 0;
	kind = data[0] & 1 ? API_BODY_SESSION_EXECUTE : API_BODY_EXECUTE;
	if (api_request_parse(kind, (const char *)data + 1, size - 1, &r, &e) < 0) {
		if (e.http < 400 || e.http > 599 || !e.code || !*e.message)
			abort();
		return 0;
	}
	if (!r.code || strlen(r.code) != r.code_len || r.code_len == 0 ||
	    r.code_len > ENGINE_CODE_MAX)
		abort(); /* code is NUL-free text of a length the engine takes */
	if (kind == API_BODY_SESSION_EXECUTE && (r.n_env || r.preload || (r.set & API_SET_LANG)))
		abort(); /* fields of other bodies never slip through */
	for (size_t i = 0; i < r.n_env; i++)
		if (!strchr(r.env[i], '='))
			abort();
	api_request_release(&r);
	return 0;
}
