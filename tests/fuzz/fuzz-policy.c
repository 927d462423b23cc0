/* libFuzzer target: the policy file parser.  Whatever it accepts must be
 * a policy engine_check can use: ceilings within the limits table, every
 * client with a key and a policy of the file; whatever it refuses gets a
 * message that names a line or a client. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_policy(const struct engine_policy *p)
{
	for (int i = 0; i < _LIMIT_MAX; i++)
		if (!(p->ceiling[i] >= engine_limits[i].floor &&
		      p->ceiling[i] <= engine_limits[i].ceiling))
			abort();
	if (p->rate < 0 || (p->rate > 0 && p->burst < 1))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engine_policies *ps = NULL;
	struct engine_verdict v = { 0 };
	char err[512];

	if (engine_policies_parse((const char *)data, size, &ps, err, sizeof(err)) < 0) {
		if (!err[0] || ps)
			abort();
		return 0;
	}
	check_policy(&ps->def);
	for (size_t i = 0; i < ps->n_named; i++)
		check_policy(&ps->named[i]);
	for (size_t i = 0; i < ps->n_clients; i++) {
		const struct engine_policy *p = ps->clients[i].policy;

		if (!p || (i && !ps->clients[i].has_key))
			abort();
		if (engine_check_file(&ps->clients[i], DOOR_API, ACTION_WRITE_FILE, 1, &v) < 0 &&
		    (!v.rule || !v.message[0]))
			abort();
	}
	engine_policies_free(ps);
	return 0;
}
