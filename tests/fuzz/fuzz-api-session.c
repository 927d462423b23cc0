/* libFuzzer target: the body of POST /v1/sessions.  What comes out must
 * be within the server's ceilings, with module names and environment
 * names that are safe to hand to the kernel. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/request.h"
#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct api_request r;
	struct api_error e;
	char msg[256];

	if (api_request_parse(API_BODY_SESSION_CREATE, (const char *)data, size, &r, &e) < 0) {
		if (e.http < 400 || e.http > 599 || !e.code || !*e.message)
			abort();
		return 0;
	}
	for (unsigned i = 0; i < _LIMIT_MAX; i++)
		if ((r.limits_set & (1u << i)) && i != LIMIT_TIMEOUT && i != LIMIT_IDLE_TIMEOUT &&
		    (r.lv.v[i] < engine_limits[i].floor || r.lv.v[i] > engine_limits[i].ceiling))
			abort();
	if (r.code || r.timeout_s > engine_limits[LIMIT_TIMEOUT].ceiling ||
	    r.idle_timeout_s > engine_limits[LIMIT_IDLE_TIMEOUT].ceiling ||
	    r.n_env > SESSION_MAX_ENV || (r.set & API_SET_LANG && r.lang == LANG_SQL))
		abort();
	/* module paths, "as", names, commas and blanks: nothing else reaches
	 * the kernel's argv */
	for (const char *p = r.preload; p && *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == ',' ||
		      *p == ' ' || *p == '\t'))
			abort();
	if (r.preload && engine_preload_check(r.preload, msg, sizeof(msg)) < 0)
		abort();
	for (size_t i = 0; i < r.n_env; i++)
		if (!r.env[i] || r.env[i][0] == '=' || !strchr(r.env[i], '='))
			abort();
	api_request_release(&r);
	return 0;
}
